/* test-wait.c - waiting for a lock: the fair hand-off, its deadline, cancel.
 *
 * A waiter is queued on the masters from its first attempt and a release
 * hands the key to the queue's head and wakes only it (docs/waiting.md,
 * "Waiting in turn: the fair hand-off"). These tests check what a user relies
 * on: woken at once by the release, served in the order waiters started, a
 * deadline honoured, a cancel that leaves nothing behind, a dead waiter that
 * stalls the next one only for a bounded time, wake-ups that nobody can
 * forge, cleanups that wake nobody when nobody waits, and a head that stays
 * the head on every master (a waiter keeps its place where its failed attempt
 * got an OK; a key a failed attempt frees goes to the head). Time is the
 * subject of some of them (a deadline, a bound): those compare elapsed times
 * with the figures the library promises, with the slack a loaded machine
 * needs, and say so.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <redlock.h>

#include "await.h"
#include "cluster.h"
#include "core.h"

TestSuite(wait, .fini = tc_heal, .timeout = 60);

#define TTL_MS 10000u

static redlock_client *client(int pubsub, uint32_t retry_delay_ms)
{
    redlock_config cfg;
    tc_config(&cfg);
    cfg.retry_count = 5;
    cfg.retry_delay_ms = retry_delay_ms;
    cfg.retry_jitter_ms = 0;
    cfg.node_timeout_ms = 200;
    cfg.pubsub_wait = pubsub;
    return tc_client(&cfg, -1);
}

static redlock_acquire_opts opts(int64_t wait_ms, uint32_t delay_ms)
{
    redlock_acquire_opts o;
    redlock_acquire_opts_init(&o);
    o.ttl_ms = TTL_MS;
    o.wait_ms = wait_ms;
    o.retry_delay_ms = delay_ms;
    o.retry_jitter_ms = 0;
    return o;
}

/* Waiters queued for @res on master @m (its queue "res\0q"). */
static long queued(int m, const char *res)
{
    char key[160];
    size_t len = strlen(res);
    memcpy(key, res, len);
    memcpy(key + len, "\0q", 2);
    redisReply *r = tc_cmd(m, "ZCARD %b", key, len + 2);
    long n = r && r->type == REDIS_REPLY_INTEGER ? (long)r->integer : -1;
    freeReplyObject(r);
    return n;
}

static bool queued_everywhere(const char *res, long want)
{
    for (int m = 0; m < tc_n(); m++)
        if (queued(m, res) < want)
            return false;
    return true;
}

/* Master @m holds a reservation for a waiter on @res. */
static bool reserved(int m, const char *res, size_t len)
{
    redisReply *r = tc_cmd(m, "GET %b", res, len);
    bool yes = r && r->type == REDIS_REPLY_STRING && r->len > 0 && r->str[0] == '\1';
    freeReplyObject(r);
    return yes;
}

static long long publishes(int m)
{
    long long v = tc_info_num(m, "commandstats", "cmdstat_publish");
    return v > 0 ? v : 0;
}

typedef struct waiter {
    redlock_client *c;
    const char *res;
    redlock_acquire_opts o;
    int rc;
    uint64_t done_us;
    redlock_lock *lock;
} waiter;

static void *wait_for_it(void *arg)
{
    waiter *w = arg;
    redlock_resource r = { w->res, strlen(w->res) };
    w->rc = redlock_acquire_with(w->c, &r, 1, &w->o, &w->lock, NULL, NULL);
    w->done_us = tc_now_us();
    return NULL;
}

/* Holder takes the lock; a waiter starts and is queued (or, polling, has
 * tried once); the holder releases. Returns ms from the release to the
 * waiter's grant. */
static long handoff(int pubsub, uint32_t retry_delay_ms, bool kill_subscribers)
{
    char res[128];
    tc_resource(res, sizeof(res), pubsub ? (kill_subscribers ? "killed" : "pubsub") : "poll");
    redlock_client *holder = client(0, 200);
    redlock_lock *l = tc_must_acquire(holder, res, TTL_MS, NULL);
    tc_barrier(holder); /* the holder's SET ran on master 0: not counted below */
    long long before = tc_acquires_seen(0);
    waiter w = { client(pubsub, retry_delay_ms), res, opts(20000, retry_delay_ms), -100, 0, NULL };
    pthread_t t;
    pthread_create(&t, NULL, wait_for_it, &w);
    /* Await the waiter really waiting: queued on every master (with the
     * hand-off), or its first attempt seen (polling). */
    cr_assert(TC_AWAIT(pubsub ? queued_everywhere(res, 1) : tc_acquires_seen(0) > before + 1, 5000),
              "the waiter never started waiting");
    if (kill_subscribers)
        for (int i = 0; i < tc_n(); i++)
            freeReplyObject(tc_cmd(i, "CLIENT KILL TYPE pubsub"));
    uint64_t released = tc_now_us();
    tc_must_release(holder, l);
    pthread_join(t, NULL);
    cr_assert(eq(int, w.rc, 0), "the waiter got the lock (%s)", redlock_err_name(w.rc));
    tc_must_release(w.c, w.lock);
    redlock_client_free(w.c);
    redlock_client_free(holder);
    return (long)((w.done_us - released) / 1000);
}

Test(wait, release_wakes_the_waiter_long_before_its_retry_timer)
{
    long with = handoff(1, 3000, false);
    cr_log_info("hand-off: waiter had the lock %ld ms after the release (poll 3000 ms)", with);
    cr_assert(lt(long, with, 1500), "woken by the release: %ld ms", with);
}

Test(wait, without_pubsub_the_waiter_polls)
{
    long without = handoff(0, 1500, false);
    cr_log_info("polling: waiter had the lock %ld ms after the release (poll 1500 ms)", without);
    cr_assert(gt(long, without, 300), "without wake-ups only the timer retries: %ld ms", without);
}

Test(wait, killed_subscriber_connections_fall_back_to_the_timer)
{
    /* No wake-up can arrive; the poll finds the reservation the release
     * made for the waiter (it outlasts one poll interval) and takes it. */
    long fallback = handoff(1, 1000, true);
    cr_log_info("subscribers killed: waiter had the lock %ld ms after the release", fallback);
    cr_assert(lt(long, fallback, 5000), "the timer still retries");
}

/* ---- order -------------------------------------------------------------------- */

struct order {
    int next;       /* grants so far */
    int granted[8]; /* grant number of each waiter */
    int failed;
    redlock_client *c;
    const char *res;
};

struct slot {
    struct order *ord;
    int idx;
};

static void on_ordered(redlock_client *c, int status, redlock_lock *lock,
                       const redlock_outcome *out, const redlock_error *err, void *arg)
{
    (void)out;
    (void)err;
    struct slot *s = arg;
    if (status != 0) {
        s->ord->failed++;
        return;
    }
    s->ord->granted[s->idx] = s->ord->next++;
    redlock_error e;
    /* Release at once: the hand-off goes to the next in line. */
    cr_assert(eq(int, redlock_release_async(c, lock, tc_free_lock_cb, NULL, &e), 0), "%s", e.msg);
}

Test(wait, waiters_of_one_client_are_served_oldest_first)
{
    char res[128];
    tc_resource(res, sizeof(res), "order");
    struct event_base *base = event_base_new();
    redlock_client *c = tc_client_async(NULL, base);
    redlock_client *holder = client(0, 200);
    redlock_lock *l = tc_must_acquire(holder, res, TTL_MS, NULL);
    struct order ord = { .c = c, .res = res };
    struct slot slots[8];
    for (int i = 0; i < 8; i++) {
        slots[i] = (struct slot){ &ord, i };
        redlock_acquire_opts o = opts(20000, 5000);
        redlock_resource r = { res, strlen(res) };
        redlock_error e;
        cr_assert(eq(int, redlock_acquire_with_async(c, &r, 1, &o, on_ordered, &slots[i], &e), 0),
                  "%s", e.msg);
        /* Each one queued before the next starts: arrival order is known. */
        cr_assert(TC_RUN_UNTIL(base, queued_everywhere(res, i + 1), 5000), "waiter %d never queued",
                  i);
    }
    tc_must_release(holder, l);
    cr_assert(TC_RUN_UNTIL(base, ord.next + ord.failed == 8, 10000),
              "only %d of 8 waiters were served", ord.next);
    cr_expect(zero(int, ord.failed));
    for (int i = 0; i < 8; i++)
        cr_expect(eq(int, ord.granted[i], i), "waiter %d was served %d-th", i, ord.granted[i]);
    redlock_client_free(holder);
    redlock_client_free(c);
    event_base_free(base);
}

/* ---- deadline and cancel ------------------------------------------------------- */

Test(wait, a_deadline_ends_the_wait_within_one_poll)
{
    /* Time is the subject: the wait ends at its deadline, with at most one
     * poll interval and one attempt's round trips (on this loaded machine,
     * up to 400 ms) after it. */
    char res[128];
    tc_resource(res, sizeof(res), "deadline");
    for (int m = 0; m < tc_n(); m++)
        tc_plant(m, res, strlen(res), "someone-else", TTL_MS);
    redlock_client *c = client(1, 1000);
    redlock_acquire_opts o = opts(600, 200);
    redlock_resource r = { res, strlen(res) };
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    uint64_t t0 = tc_now_us();
    int rc = redlock_acquire_with(c, &r, 1, &o, &l, out, &e);
    uint64_t took_ms = (tc_now_us() - t0) / 1000;
    cr_assert(eq(int, rc, REDLOCK_ECONFLICT), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(ge(u64, took_ms, 600), "gave up before the deadline: %llu ms",
              (unsigned long long)took_ms);
    cr_expect(le(u64, took_ms, 600 + 200 + 400), "%llu ms for a 600 ms wait",
              (unsigned long long)took_ms);
    cr_expect(ge(u32, redlock_outcome_attempts(out), 3), "polled every 200 ms: %u attempts",
              redlock_outcome_attempts(out));
    /* It left the queues when it gave up. */
    cr_expect(TC_AWAIT(queued_everywhere(res, 0) && !queued_everywhere(res, 1), 3000),
              "the waiter's place outlived its wait");
    tc_del_all(res, strlen(res));
    redlock_client_free(c);
}

typedef struct canceller {
    redlock_cancel *cc;
    const char *res;
} canceller;

static void *cancel_when_queued(void *arg)
{
    canceller *k = arg;
    TC_AWAIT(queued_everywhere(k->res, 1), 5000);
    redlock_cancel_fire(k->cc);
    return NULL;
}

Test(wait, a_blocking_wait_is_cancelled_from_another_thread_and_leaves_nothing)
{
    char res[128];
    tc_resource(res, sizeof(res), "cancel");
    redlock_client *holder = client(0, 200);
    redlock_lock *l = tc_must_acquire(holder, res, TTL_MS, NULL);
    tc_barrier(holder); /* the holder's key is on every master before the waiter asks */
    redlock_client *c = client(1, 1000);
    redlock_cancel *cc;
    cr_assert(eq(int, redlock_cancel_new(&cc), 0));
    canceller k = { cc, res };
    pthread_t t;
    pthread_create(&t, NULL, cancel_when_queued, &k);
    redlock_acquire_opts o = opts(REDLOCK_WAIT_FOREVER, 1000);
    o.cancel = cc;
    redlock_resource r = { res, strlen(res) };
    redlock_lock *mine = NULL;
    redlock_error e;
    int rc = redlock_acquire_with(c, &r, 1, &o, &mine, NULL, &e);
    pthread_join(t, NULL);
    cr_assert(eq(int, rc, REDLOCK_ECANCELED), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(zero(ptr, mine));
    cr_expect(redlock_cancel_fired(cc));
    /* Freed the moment the call returned, as the header allows: the op's
     * registration, which the I/O thread drops after the callback, keeps
     * it alive (it was a use-after-free under ASan). */
    redlock_cancel_free(cc);
    /* Nothing of it is left: the holder's key is the only one, and the
     * queues are empty once the leave has run. */
    cr_expect(eq(int, tc_count_token(res, strlen(res), redlock_lock_token(l), TTL_MS), 5));
    cr_expect(TC_AWAIT(!queued_everywhere(res, 1), 3000), "the cancelled waiter stays queued");
    tc_must_release(holder, l);
    tc_barrier(holder); /* the release returned at quorum: let it run everywhere */
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "a key outlived the release");
    redlock_client_free(c);
    redlock_client_free(holder);
}

static void on_cancelled(redlock_client *c, int status, redlock_lock *lock,
                         const redlock_outcome *out, const redlock_error *err, void *arg)
{
    (void)c;
    (void)out;
    (void)err;
    int *got = arg;
    *got = status == 0 ? 1 : status;
    redlock_lock_free(lock);
}

Test(wait, an_async_acquire_in_flight_is_cancelled_and_cleaned_up)
{
    /* Cancelled while its attempt is voting: the callback runs once, with
     * ECANCELED, after the attempt's keys are released everywhere. */
    char res[128];
    tc_resource(res, sizeof(res), "cancel-async");
    struct event_base *base = event_base_new();
    redlock_client *c = tc_client_async(NULL, base);
    cr_assert(tc_async_ready(base, c, 5, 5000), "masters not connected");
    redlock_cancel *cc;
    cr_assert(eq(int, redlock_cancel_new(&cc), 0));
    redlock_acquire_opts o = opts(0, 1000);
    o.cancel = cc;
    redlock_resource r = { res, strlen(res) };
    int got = 0;
    redlock_error e;
    cr_assert(eq(int, redlock_acquire_with_async(c, &r, 1, &o, on_cancelled, &got, &e), 0), "%s",
              e.msg);
    redlock_cancel_fire(cc); /* on the loop's thread, before any reply */
    cr_assert(TC_RUN_UNTIL(base, got != 0, 5000), "no callback");
    cr_expect(eq(int, got, REDLOCK_ECANCELED), "%s", redlock_err_name(got));
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "the cancelled attempt left a key");
    redlock_cancel_free(cc);
    redlock_client_free(c);
    event_base_free(base);
}

/* ---- a dead waiter, forged messages, quiet cleanups ---------------------------- */

Test(wait, a_waiter_killed_in_the_queue_stalls_the_next_one_only_for_one_reservation)
{
    /* The bound docs/waiting.md ("Waiting in turn: the fair hand-off")
     * states: a crashed waiter costs the next one at most one hand-off window
     * (its reservation lapses unclaimed) plus the next one's poll. Here (poll
     * 100 ms, node timeout 200 ms): hand 100+400+20 = 520 ms, + 100 ms. Time
     * is the subject; 500 ms of slack for a loaded machine. */
    char res[128];
    tc_resource(res, sizeof(res), "dead-waiter");
    redlock_client *holder = client(0, 200);
    redlock_lock *l = tc_must_acquire(holder, res, TTL_MS, NULL);
    pid_t pid = fork();
    cr_assert(ge(int, pid, 0));
    if (pid == 0) {
        redlock_client *dead = client(1, 100);
        redlock_acquire_opts o = opts(60000, 100);
        redlock_resource r = { res, strlen(res) };
        redlock_lock *x;
        redlock_acquire_with(dead, &r, 1, &o, &x, NULL, NULL);
        _exit(0);
    }
    cr_assert(TC_AWAIT(queued_everywhere(res, 1), 5000), "the first waiter never queued");
    waiter w = { client(1, 100), res, opts(20000, 100), -100, 0, NULL };
    pthread_t t;
    pthread_create(&t, NULL, wait_for_it, &w);
    cr_assert(TC_AWAIT(queued_everywhere(res, 2), 5000), "the second waiter never queued");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    uint64_t released = tc_now_us();
    tc_must_release(holder, l);
    pthread_join(t, NULL);
    long ms = (long)((w.done_us - released) / 1000);
    cr_assert(eq(int, w.rc, 0), "%s", redlock_err_name(w.rc));
    cr_log_info("the next waiter had the lock %ld ms after the release (dead head)", ms);
    cr_expect(lt(long, ms, 520 + 100 + 500), "stalled %ld ms behind a dead waiter", ms);
    tc_must_release(w.c, w.lock);
    redlock_client_free(w.c);
    redlock_client_free(holder);
}

Test(wait, a_forged_or_stray_message_costs_nothing)
{
    /* PUBLISH on the lock key's channel (what woke waiters in 0.1) and on a
     * client's wake channel naming nobody: the waiter makes no attempt. */
    char res[128];
    tc_resource(res, sizeof(res), "forged");
    for (int m = 0; m < tc_n(); m++)
        tc_plant(m, res, strlen(res), "someone-else", TTL_MS);
    waiter w = { client(1, 1500), res, opts(2000, 1500), -100, 0, NULL };
    pthread_t t;
    pthread_create(&t, NULL, wait_for_it, &w);
    cr_assert(TC_AWAIT(queued_everywhere(res, 1), 5000), "the waiter never queued");
    long long before = tc_acquires_seen(0);
    for (int k = 0; k < 20; k++) {
        freeReplyObject(tc_cmd(0, "PUBLISH %s released", res));
        freeReplyObject(tc_cmd(0, "PUBLISH redlock:wake:00 1|redlock:wake:00|1|x"));
    }
    long long after = tc_acquires_seen(0);
    pthread_join(t, NULL);
    cr_expect(eq(int, w.rc, REDLOCK_ECONFLICT));
    /* Its polls at 1.5 s and 2 s are the only attempts besides the first. */
    cr_expect(le(i64, after - before, 1), "%lld attempts during 20 forged messages",
              after - before);
    tc_del_all(res, strlen(res));
    redlock_client_free(w.c);
}

Test(wait, a_failed_attempts_cleanup_wakes_nobody)
{
    /* Another client's attempt gets OK on two masters and fails, with
     * nobody waiting: its cleanup deletes its own keys there and publishes
     * nothing. */
    char res[128];
    tc_resource(res, sizeof(res), "quiet-cleanup");
    for (int m = 0; m < 3; m++)
        tc_plant(m, res, strlen(res), "someone-else", TTL_MS);
    long long before[5];
    for (int m = 0; m < tc_n(); m++)
        before[m] = publishes(m);
    redlock_client *c = client(0, 200);
    redlock_lock *l = NULL;
    redlock_error e;
    redlock_resource r = { res, strlen(res) };
    redlock_acquire_opts o = opts(0, 200);
    cr_assert(eq(int, redlock_acquire_with(c, &r, 1, &o, &l, NULL, &e), REDLOCK_ECONFLICT), "%s",
              e.msg);
    for (int m = 0; m < tc_n(); m++)
        cr_expect(eq(i64, publishes(m), before[m]), "master %d published", m);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 3), "the cleanup left a key");
    tc_del_all(res, strlen(res));
    redlock_client_free(c);
}

/* ---- the head stays the head on every master ----------------------------------- */

struct seen {
    int status; /* 1 until the callback ran */
    unsigned attempts;
    redlock_lock *lock;
};

static void on_seen(redlock_client *c, int status, redlock_lock *lock, const redlock_outcome *out,
                    const redlock_error *err, void *arg)
{
    (void)c;
    (void)err;
    struct seen *s = arg;
    s->status = status;
    s->attempts = redlock_outcome_attempts(out);
    s->lock = lock;
}

Test(wait, a_waiter_granted_on_some_masters_keeps_its_place_on_them)
{
    /* Masters 3 and 4 are someone else's, so a grant needs 0, 1 and 2.
     * Waiters W1 then W2 queue everywhere; master 0 frees up and W1's next
     * poll gets an OK there but fails. W1 must still be the head on master
     * 0: else the holder's release hands 0 to W2 and 1, 2 to W1, wakes
     * both, and neither can win. */
    char res[128];
    tc_resource(res, sizeof(res), "split-head");
    size_t rlen = strlen(res);
    for (int m = 3; m < 5; m++)
        tc_plant(m, res, rlen, "someone-else", TTL_MS);
    redlock_client *holder = client(0, 200);
    redlock_lock *l = tc_must_acquire(holder, res, TTL_MS, NULL);
    struct event_base *base = event_base_new();
    redlock_client *c = tc_client_async(NULL, base);
    redlock_resource r = { res, rlen };
    redlock_cancel *cc;
    cr_assert(eq(int, redlock_cancel_new(&cc), 0));
    struct seen w1 = { 1, 0, NULL }, w2 = { 1, 0, NULL };
    redlock_acquire_opts o1 = opts(20000, 1000), o2 = opts(20000, 10000);
    o2.cancel = cc;
    redlock_error e;
    cr_assert(eq(int, redlock_acquire_with_async(c, &r, 1, &o1, on_seen, &w1, &e), 0), "%s", e.msg);
    cr_assert(TC_RUN_UNTIL(base, queued_everywhere(res, 1), 5000), "W1 never queued");
    cr_assert(eq(int, redlock_acquire_with_async(c, &r, 1, &o2, on_seen, &w2, &e), 0), "%s", e.msg);
    cr_assert(TC_RUN_UNTIL(base, queued_everywhere(res, 2), 5000), "W2 never queued");
    freeReplyObject(tc_cmd(0, "DEL %b", res, rlen));
    /* W1's next poll (W2's is 10 s away) takes master 0 and fails; its
     * cleanup hands the key quietly to the head, W1 (it kept its place):
     * a reservation on master 0 says both ran. (Counting the master's GETs
     * raced with W2's own cleanup, still in flight after its join.) */
    cr_assert(TC_RUN_UNTIL(base, reserved(0, res, rlen), 5000), "W1 never polled");
    /* The holder's key is back on master 0, so its release hands 0 over too. */
    tc_plant(0, res, rlen, redlock_lock_token(l), TTL_MS);
    redlock_release(holder, l, NULL, NULL);
    redlock_lock_free(l);
    cr_assert(TC_RUN_UNTIL(base, w1.status != 1, 10000), "W1 never got the lock");
    cr_expect(eq(int, w1.status, 0), "W1: %s", redlock_err_name(w1.status));
    redlock_cancel_fire(cc);
    cr_assert(TC_RUN_UNTIL(base, w2.status != 1, 5000), "W2 never ended");
    cr_expect(eq(int, w2.status, REDLOCK_ECANCELED), "W2: %s", redlock_err_name(w2.status));
    /* Its one attempt, which took its place in the queues at once (W1 had
     * found the resource held: a waiter for a hot resource skips the fast
     * path, acquire-queue.c): nothing more, though the release woke W2. */
    cr_expect(eq(u32, w2.attempts, 1), "the release woke W2, which was not the head: %u attempts",
              w2.attempts);
    if (w1.lock)
        redlock_release_async(c, w1.lock, tc_free_lock_cb, NULL, NULL);
    TC_RUN_UNTIL(base, tc_key_count(res, rlen) == 2, 2000);
    tc_del_all(res, rlen);
    redlock_cancel_free(cc);
    redlock_client_free(holder);
    redlock_client_free(c);
    event_base_free(base);
}

Test(wait, a_key_freed_by_a_failed_attempt_goes_to_the_head)
{
    /* Left free, the key would go to whichever attempt comes first: with
     * masters silent, two attempts that each took part of the masters then
     * block each other for a node timeout, round after round. Here another
     * client's one-shot attempt takes masters 0 and 1 and fails: its
     * cleanup reserves them for the waiter at the head, quietly (no cleanup
     * wakes anyone: the head's poll finds its reservation). */
    char res[128];
    tc_resource(res, sizeof(res), "freed-to-head");
    size_t rlen = strlen(res);
    for (int m = 0; m < tc_n(); m++)
        tc_plant(m, res, rlen, "someone-else", TTL_MS);
    redlock_cancel *cc;
    cr_assert(eq(int, redlock_cancel_new(&cc), 0));
    waiter w = { client(1, 5000), res, opts(20000, 5000), -100, 0, NULL };
    w.o.cancel = cc;
    pthread_t t;
    pthread_create(&t, NULL, wait_for_it, &w);
    cr_assert(TC_AWAIT(queued_everywhere(res, 1), 5000), "the waiter never queued");
    for (int m = 0; m < 2; m++)
        freeReplyObject(tc_cmd(m, "DEL %b", res, rlen));
    redlock_client *c = client(0, 200);
    redlock_lock *l = NULL;
    redlock_resource r = { res, rlen };
    redlock_acquire_opts o = opts(0, 200);
    long long published[2] = { publishes(0), publishes(1) };
    cr_assert(eq(int, redlock_acquire_with(c, &r, 1, &o, &l, NULL, NULL), REDLOCK_ECONFLICT));
    for (int m = 0; m < 2; m++) {
        redisReply *v = NULL;
        bool reserved = TC_AWAIT((freeReplyObject(v), v = tc_cmd(m, "GET %b", res, rlen),
                                  v && v->type == REDIS_REPLY_STRING && v->str[0] == '\1'),
                                 3000);
        freeReplyObject(v);
        cr_expect(reserved, "master %d: the freed key went to nobody", m);
        cr_expect(eq(i64, publishes(m), published[m]), "master %d: the cleanup woke the head", m);
    }
    redlock_cancel_fire(cc);
    pthread_join(t, NULL);
    cr_expect(eq(int, w.rc, REDLOCK_ECANCELED), "%s", redlock_err_name(w.rc));
    redlock_cancel_free(cc);
    tc_del_all(res, rlen);
    redlock_client_free(c);
    redlock_client_free(w.c);
}

/* ---- waiters far from the head poll less ------------------------------------- */

/* Queue @n async waiters for @res on @c, in order, each waiting 20 s and
 * polling every @delay_ms until @cc fires. */
static void queue_waiters(struct event_base *base, redlock_client *c, const char *res,
                          redlock_cancel *cc, struct seen *w, int n, uint32_t delay_ms)
{
    redlock_resource r = { res, strlen(res) };
    redlock_error e;
    for (int i = 0; i < n; i++) {
        w[i] = (struct seen){ 1, 0, NULL };
        redlock_acquire_opts o = opts(20000, delay_ms);
        o.cancel = cc;
        cr_assert(eq(int, redlock_acquire_with_async(c, &r, 1, &o, on_seen, &w[i], &e), 0), "%s",
                  e.msg);
        cr_assert(TC_RUN_UNTIL(base, queued_everywhere(res, i + 1), 5000), "W%d never queued", i);
    }
}

Test(wait, waiters_far_from_the_head_poll_less_often)
{
    /* Time is the subject: five waiters queue in order behind a holder and
     * poll (50 ms delay) for 1.5 s. The head and the one behind it poll at
     * the delay; the one at rank r every min(r, 8) delays (acquire.c), so
     * the last, at rank 4, polls about a quarter as often. Counted from the
     * attempts each made; the bound is half, for a loaded machine. */
    enum { W = 5 };
    char res[128];
    tc_resource(res, sizeof(res), "ranks");
    size_t rlen = strlen(res);
    redlock_client *holder = client(0, 200);
    redlock_lock *l = tc_must_acquire(holder, res, TTL_MS, NULL);
    struct event_base *base = event_base_new();
    redlock_client *c = tc_client_async(NULL, base);
    redlock_cancel *cc;
    cr_assert(eq(int, redlock_cancel_new(&cc), 0));
    struct seen w[W];
    queue_waiters(base, c, res, cc, w, W, 50);
    struct timeval tv = { 1, 500000 };
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
    redlock_cancel_fire(cc);
    /* Each ends when its cancel is done: at once, or after the cleanup of
     * an attempt it had in flight. */
    cr_assert(TC_RUN_UNTIL(base,
                           w[0].status != 1 && w[1].status != 1 && w[2].status != 1 &&
                               w[3].status != 1 && w[4].status != 1,
                           5000),
              "the waiters never ended");
    for (int i = 0; i < W; i++) {
        cr_expect(eq(int, w[i].status, REDLOCK_ECANCELED), "W%d: %s", i,
                  redlock_err_name(w[i].status));
        cr_log_info("W%d (rank %d): %u attempts in 1.5 s", i, i, w[i].attempts);
    }
    cr_expect(ge(u32, w[0].attempts, 12u), "the head polls at its delay: %u attempts",
              w[0].attempts);
    cr_expect(le(u32, 2 * w[W - 1].attempts, w[0].attempts),
              "rank %d polled as often as the head: %u against %u attempts", W - 1,
              w[W - 1].attempts, w[0].attempts);
    redlock_release(holder, l, NULL, NULL);
    redlock_lock_free(l);
    tc_del_all(res, rlen);
    redlock_cancel_free(cc);
    redlock_client_free(holder);
    redlock_client_free(c);
    event_base_free(base);
}

/* A client whose default wait (redlock_acquire()) is @count polls of
 * @delay_ms, no jitter: a deadline of count x delay (issue 31). */
static redlock_client *default_wait_client(uint32_t count, uint32_t delay_ms)
{
    redlock_config cfg;
    tc_config(&cfg);
    cfg.retry_count = count;
    cfg.retry_delay_ms = delay_ms;
    cfg.retry_jitter_ms = 0;
    cfg.node_timeout_ms = 200;
    return tc_client(&cfg, -1);
}

Test(wait, the_default_wait_is_a_deadline_and_its_count_still_bounds_the_polls)
{
    /* Time is the subject: held everywhere, alone in the queue (rank 0,
     * polls at the delay), retry_count 3 of 100 ms: the first attempt, the
     * one that takes its place, three polls, the last at the deadline
     * (300 ms); never more, and given up within one attempt after it
     * (up to 400 ms on this loaded machine). */
    char res[128];
    tc_resource(res, sizeof(res), "defwait");
    size_t rlen = strlen(res);
    for (int m = 0; m < tc_n(); m++)
        tc_plant(m, res, rlen, "someone-else", TTL_MS);
    redlock_client *c = default_wait_client(3, 100);
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    uint64_t t0 = tc_now_us();
    int rc = redlock_acquire(c, res, rlen, TTL_MS, &l, out, &e);
    uint64_t took_ms = (tc_now_us() - t0) / 1000;
    cr_assert(eq(int, rc, REDLOCK_ECONFLICT), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(ge(u64, took_ms, 300), "gave up before its deadline: %llu ms",
              (unsigned long long)took_ms);
    cr_expect(le(u64, took_ms, 300 + 400), "%llu ms for a 300 ms wait",
              (unsigned long long)took_ms);
    cr_expect(le(u32, redlock_outcome_attempts(out), 1 + 1 + 3), "%u attempts for 3 retries",
              redlock_outcome_attempts(out));
    cr_expect(ge(u32, redlock_outcome_attempts(out), 1 + 1 + 2), "%u attempts for 3 retries",
              redlock_outcome_attempts(out));
    cr_expect(TC_AWAIT(queued_everywhere(res, 0) && !queued_everywhere(res, 1), 3000),
              "the waiter's place outlived its wait");
    tc_del_all(res, rlen);
    redlock_client_free(c);
}

/* A busy caller: it holds its loop for @arg ms every time the loop runs it. */
static void hog_loop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    usleep((useconds_t)(*(const int *)arg) * 1000);
}

Test(wait, a_late_loop_uses_up_no_retries_of_the_default_wait)
{
    /* Time is the subject: the caller's loop runs a 30 ms chore every
     * 5 ms, so each 10 ms poll of a default wait (retry_count 4) fires up
     * to 30 ms late. The wait still makes its four polls: lateness moves
     * its deadline on, as a slow attempt does (acquire.c). Without that it
     * ran out of deadline after one or two polls (CI, under load). */
    char res[128];
    tc_resource(res, sizeof(res), "latepoll");
    size_t rlen = strlen(res);
    for (int m = 0; m < tc_n(); m++)
        tc_plant(m, res, rlen, "someone-else", TTL_MS);
    redlock_config cfg;
    tc_config(&cfg);
    cfg.retry_count = 4;
    cfg.retry_delay_ms = 10;
    cfg.retry_jitter_ms = 0;
    struct event_base *base = event_base_new();
    redlock_client *c = tc_client_async(&cfg, base);
    /* Connected first: the chore slows the handshake too, and a first
     * attempt past its node timeout would not be the ECONFLICT counted. */
    cr_assert(tc_async_ready(base, c, tc_n(), 10000), "the async client did not connect");
    int hog_ms = 30;
    struct event *hog = event_new(base, -1, EV_PERSIST, hog_loop, &hog_ms);
    event_add(hog, &(struct timeval){ 0, 5000 });
    struct seen s = { 1, 0, NULL };
    redlock_error e;
    cr_assert(eq(int, redlock_acquire_async(c, res, rlen, TTL_MS, on_seen, &s, &e), 0), "%s",
              e.msg);
    cr_assert(TC_RUN_UNTIL(base, s.status != 1, 10000), "the wait never ended");
    cr_expect(eq(int, s.status, REDLOCK_ECONFLICT), "%s", redlock_err_name(s.status));
    cr_expect(eq(u32, s.attempts, 1 + 1 + 4), "%u attempts for 4 retries on a late loop",
              s.attempts);
    event_free(hog);
    tc_del_all(res, rlen);
    redlock_client_free(c);
    event_base_free(base);
}

Test(wait, the_default_wait_far_from_the_head_polls_less_and_ends_at_its_deadline)
{
    /* Time is the subject: four waiters queue ahead, so a default wait of
     * 6 retries of 50 ms (a 300 ms deadline) sits at rank 4 and polls every
     * 200 ms: the first attempt, its place, one poll and the deadline's
     * attempt. Counting polls without slowing them (before issue 31) made
     * 1 + 1 + 6. */
    enum { W = 4 };
    char res[128];
    tc_resource(res, sizeof(res), "defrank");
    size_t rlen = strlen(res);
    redlock_client *holder = client(0, 200);
    redlock_lock *hl = tc_must_acquire(holder, res, TTL_MS, NULL);
    struct event_base *base = event_base_new();
    redlock_client *ahead = tc_client_async(NULL, base);
    redlock_cancel *cc;
    cr_assert(eq(int, redlock_cancel_new(&cc), 0));
    struct seen w[W];
    queue_waiters(base, ahead, res, cc, w, W, 1000);
    redlock_error e;
    redlock_client *c = default_wait_client(6, 50);
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    uint64_t t0 = tc_now_us();
    int rc = redlock_acquire(c, res, rlen, TTL_MS, &l, out, &e);
    uint64_t took_ms = (tc_now_us() - t0) / 1000;
    cr_expect(eq(int, rc, REDLOCK_ECONFLICT), "%s: %s", redlock_err_name(rc), e.msg);
    cr_log_info("rank %d: %u attempts in %llu ms", W, redlock_outcome_attempts(out),
                (unsigned long long)took_ms);
    cr_expect(ge(u64, took_ms, 300), "gave up before its deadline: %llu ms",
              (unsigned long long)took_ms);
    cr_expect(le(u64, took_ms, 300 + 400), "%llu ms for a 300 ms wait",
              (unsigned long long)took_ms);
    cr_expect(le(u32, redlock_outcome_attempts(out), 1 + 1 + 3),
              "rank %d polled at the head's pace: %u attempts", W, redlock_outcome_attempts(out));
    redlock_cancel_fire(cc);
    cr_assert(TC_RUN_UNTIL(base,
                           w[0].status != 1 && w[1].status != 1 && w[2].status != 1 &&
                               w[3].status != 1,
                           5000),
              "the waiters ahead never ended");
    tc_must_release(holder, hl);
    tc_del_all(res, rlen);
    redlock_cancel_free(cc);
    redlock_client_free(c);
    redlock_client_free(holder);
    redlock_client_free(ahead);
    event_base_free(base);
}

typedef struct default_waiter {
    redlock_client *c;
    const char *res;
    int rc;
    uint64_t done_us;
    redlock_lock *lock;
} default_waiter;

static void *wait_by_default(void *arg)
{
    default_waiter *w = arg;
    w->rc = redlock_acquire(w->c, w->res, strlen(w->res), TTL_MS, &w->lock, NULL, NULL);
    w->done_us = tc_now_us();
    return NULL;
}

Test(wait, the_default_wait_is_handed_the_lock_by_a_wake_up)
{
    /* A default wait of 5 retries of 2 s: the release wakes it, long
     * before its next poll. */
    char res[128];
    tc_resource(res, sizeof(res), "defwake");
    redlock_client *holder = client(0, 200);
    redlock_lock *l = tc_must_acquire(holder, res, TTL_MS, NULL);
    default_waiter w = { default_wait_client(5, 2000), res, -100, 0, NULL };
    pthread_t t;
    pthread_create(&t, NULL, wait_by_default, &w);
    cr_assert(TC_AWAIT(queued_everywhere(res, 1), 5000), "the waiter never queued");
    uint64_t released = tc_now_us();
    tc_must_release(holder, l);
    pthread_join(t, NULL);
    cr_assert(eq(int, w.rc, 0), "the waiter got the lock (%s)", redlock_err_name(w.rc));
    long ms = (long)((w.done_us - released) / 1000);
    cr_expect(lt(long, ms, 1000), "handed over after %ld ms: a poll, not a wake-up", ms);
    tc_must_release(w.c, w.lock);
    redlock_client_free(w.c);
    redlock_client_free(holder);
}
