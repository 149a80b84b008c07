/* test-queue.c - queue hygiene: what garbage, forged wake-ups and dead
 * waiters cost the fair hand-off (docs/waiting.md,
 * "Waiting in turn: the fair hand-off").
 *
 * Anyone who can write to a master can put anything under a resource's
 * queue, lease set and fence counter, and anyone who can read the queue
 * can publish a waiter's name. These tests plant each kind of garbage on
 * every master and check what a user relies on: the next waiter is handed
 * the lock at once (well before its poll, which is set long so that only
 * the hand-off can explain a quick grant), errors name the key at fault,
 * wake-ups cannot multiply attempts, a dead waiter is reserved for once,
 * and a wait ends at its deadline. Time is the subject of the bounds: they
 * carry the slack a loaded machine needs, and say so.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <redlock.h>

#include "await.h"
#include "cluster.h"
#include "core.h"

TestSuite(queue, .fini = tc_heal, .timeout = 60);

#define TTL_MS 10000u
#define SLOW_POLL_MS 1500u /* a waiter's poll: a grant sooner is the hand-off's */

static redlock_client *client(uint32_t retry_delay_ms)
{
    redlock_config cfg;
    tc_config(&cfg);
    cfg.retry_delay_ms = retry_delay_ms;
    cfg.retry_jitter_ms = 0;
    cfg.node_timeout_ms = 200;
    return tc_client(&cfg, -1);
}

static redlock_acquire_opts opts(int64_t wait_ms, uint32_t delay_ms, unsigned flags)
{
    redlock_acquire_opts o;
    redlock_acquire_opts_init(&o);
    o.ttl_ms = TTL_MS;
    o.wait_ms = wait_ms;
    o.retry_delay_ms = delay_ms;
    o.retry_jitter_ms = 0;
    o.flags = flags;
    return o;
}

/* @res followed by "\0" @suffix: one of the resource's side keys. */
static size_t side_key(char *key, const char *res, const char *suffix)
{
    size_t len = strlen(res), sl = strlen(suffix);
    memcpy(key, res, len);
    key[len] = '\0';
    memcpy(key + len + 1, suffix, sl);
    return len + 1 + sl;
}

static long zcard(int m, const char *res, const char *suffix)
{
    char key[160];
    size_t len = side_key(key, res, suffix);
    redisReply *r = tc_cmd(m, "ZCARD %b", key, len);
    long n = r && r->type == REDIS_REPLY_INTEGER ? (long)r->integer : -1;
    freeReplyObject(r);
    return n;
}

static bool queued_everywhere(const char *res, long want)
{
    for (int m = 0; m < tc_n(); m++)
        if (zcard(m, res, "q") < want)
            return false;
    return true;
}

/* Is @member in @res's queue on master @m? */
static bool in_queue(int m, const char *res, const char *member)
{
    char key[160];
    size_t len = side_key(key, res, "q");
    redisReply *r = tc_cmd(m, "ZSCORE %b %s", key, len, member);
    bool in = r && r->type == REDIS_REPLY_STRING;
    freeReplyObject(r);
    return in;
}

/* Is a waiter other than @besides in @res's queue on every master? */
static bool waiter_queued_everywhere(const char *res, const char *besides)
{
    for (int m = 0; m < tc_n(); m++)
        if (zcard(m, res, "q") - (in_queue(m, res, besides) ? 1 : 0) < 1)
            return false;
    return true;
}

/* Run "@cmd <res's side key @suffix> @args" on every master. */
static void on_all(const char *cmd, const char *res, const char *suffix, const char *args)
{
    char key[160];
    size_t len = side_key(key, res, suffix);
    for (int m = 0; m < tc_n(); m++) {
        char fmt[64];
        snprintf(fmt, sizeof(fmt), "%s %%b %s", cmd, args);
        freeReplyObject(tc_cmd(m, fmt, key, len));
    }
}

typedef struct waiter {
    redlock_client *c;
    const char *res;
    redlock_acquire_opts o;
    int rc;
    uint64_t done_us;
    redlock_lock *lock;
    uint32_t attempts; /* what the outcome said */
} waiter;

static void *wait_for_it(void *arg)
{
    waiter *w = arg;
    redlock_resource r = { w->res, strlen(w->res) };
    TC_OUTCOME(out);
    w->rc = redlock_acquire_with(w->c, &r, 1, &w->o, &w->lock, out, NULL);
    w->attempts = redlock_outcome_attempts(out);
    w->done_us = tc_now_us();
    return NULL;
}

/* A holder holds @res; a waiter with a slow poll queues; @plant then runs;
 * the holder releases. Returns ms from the release to the waiter's grant. */
static long handoff_after(const char *res, void (*plant)(const char *res))
{
    redlock_client *holder = client(200);
    redlock_lock *l = tc_must_acquire(holder, res, TTL_MS, NULL);
    waiter w = { client(SLOW_POLL_MS), res, opts(20000, SLOW_POLL_MS, 0), -100, 0, NULL, 0 };
    pthread_t t;
    pthread_create(&t, NULL, wait_for_it, &w);
    cr_assert(TC_AWAIT(queued_everywhere(res, 1), 5000), "the waiter never queued");
    if (plant)
        plant(res);
    uint64_t released = tc_now_us();
    tc_must_release(holder, l);
    pthread_join(t, NULL);
    cr_assert(eq(int, w.rc, 0), "the waiter got the lock (%s)", redlock_err_name(w.rc));
    tc_must_release(w.c, w.lock);
    /* A release returns at a majority: let every master run both clients'
     * commands before the caller looks at the queues. */
    tc_barrier(holder);
    tc_barrier(w.c);
    redlock_client_free(w.c);
    redlock_client_free(holder);
    return (long)((w.done_us - released) / 1000);
}

static void plant_garbage_heads(const char *res)
{
    /* Ahead of the real waiter (score 0 and 1): a member that is no
     * waiter's name; a forged name on a channel that is not ours, no lease;
     * the same with a lease far away; a well-formed name with no lease. */
    on_all("ZADD", res, "q",
           "0 garbage 1 3000|redlock:wake:forged|1 "
           "1 2000|redlock:wake:forged|2 1 3000|redlock:wake:abcd|1");
    on_all("ZADD", res, "l",
           "9000000000000000 2000|redlock:wake:forged|2 9000000000000000 garbage");
}

Test(queue, garbage_at_the_head_of_the_queue_is_dropped_by_the_release)
{
    char res[128];
    tc_resource(res, sizeof(res), "garbage-head");
    long ms = handoff_after(res, plant_garbage_heads);
    cr_log_info("hand-off past 4 garbage heads: %ld ms", ms);
    /* Its poll is 1.5 s: sooner is the hand-off; 300 ms of slack. */
    cr_expect(lt(long, ms, 300), "the hand-off stalled %ld ms behind garbage", ms);
    for (int m = 0; m < tc_n(); m++)
        cr_expect(
            eq(int, in_queue(m, res, "garbage") || in_queue(m, res, "3000|redlock:wake:abcd|1"), 0),
            "garbage left in the queue on master %d", m);
    tc_del_all(res, strlen(res));
}

/* A string where @res's side key @suffix ("q" or "l") was, on every master. */
static void plant_wrong_type(const char *res, const char *suffix)
{
    char key[160];
    size_t len = side_key(key, res, suffix);
    for (int m = 0; m < tc_n(); m++) {
        freeReplyObject(tc_cmd(m, "DEL %b", key, len));
        freeReplyObject(tc_cmd(m, "SET %b garbage", key, len));
    }
}

static void plant_wrong_type_queue(const char *res)
{
    plant_wrong_type(res, "q");
}

static void plant_wrong_type_leases(const char *res)
{
    plant_wrong_type(res, "l");
}

Test(queue, a_queue_key_of_another_type_is_dropped_and_the_resource_still_works)
{
    /* Planted after the waiter queued: the release finds a string where the
     * queue was, drops it and frees the key; the waiter's poll takes it. */
    char res[128];
    tc_resource(res, sizeof(res), "wrongtype-queue");
    long ms = handoff_after(res, plant_wrong_type_queue);
    cr_expect(lt(long, ms, (long)SLOW_POLL_MS + 500), "%ld ms with a string as the queue", ms);
    /* The same with a string where the lease set was, the queue intact:
     * the hand-over's first read of the lease set fails (its type is not
     * asked first), both are dropped, the key freed. */
    char res2[128];
    tc_resource(res2, sizeof(res2), "wrongtype-leases");
    ms = handoff_after(res2, plant_wrong_type_leases);
    cr_expect(lt(long, ms, (long)SLOW_POLL_MS + 500), "%ld ms with a string as the lease set", ms);
    for (int m = 0; m < tc_n(); m++)
        cr_expect(eq(long, zcard(m, res2, "l"), 0), "master %d: the lease set was dropped", m);
    tc_del_all(res2, strlen(res2));
    /* Planted before anyone waits: the first waiter's join drops it, queues,
     * and the hand-off works at once. */
    plant_wrong_type_queue(res);
    on_all("HSET", res, "l", "f v");
    ms = handoff_after(res, NULL);
    cr_log_info("hand-off after a string queue and a hash lease set were dropped: %ld ms", ms);
    cr_expect(lt(long, ms, 300), "the hand-off stalled %ld ms", ms);
    tc_del_all(res, strlen(res));
}

static void plant_dead_waiter(const char *res)
{
    /* A well-formed waiter, first in line, with a lease that lasts: it
     * never attempts, as a waiter whose process died. Its hand: 400 ms. */
    on_all("ZADD", res, "q", "1 400|redlock:wake:dead|1");
    on_all("ZADD", res, "l", "9000000000000000 400|redlock:wake:dead|1");
    /* The queue outlives its members' leases by twice the last one's:
     * on a loaded machine the gap before the next waiter joins could
     * expire it, and the dead head with it. Kept until that join. */
    on_all("PERSIST", res, "q", "");
    on_all("PERSIST", res, "l", "");
}

Test(queue, a_dead_waiter_is_skipped_after_one_missed_reservation)
{
    /* The release reserves for the dead head (400 ms), the real waiter
     * polls every 100 ms: it has the lock by 400 + 100 ms (+300 slack).
     * Its own release then finds the dead head's lease cut to that
     * reservation's end: dropped, and the next waiter (polling every
     * 1.5 s) is handed the lock at once. */
    char res[128];
    tc_resource(res, sizeof(res), "dead-head");
    redlock_client *holder = client(200);
    redlock_lock *l = tc_must_acquire(holder, res, TTL_MS, NULL);
    waiter a = { client(100), res, opts(20000, 100, 0), -100, 0, NULL, 0 };
    pthread_t ta, tb;
    pthread_create(&ta, NULL, wait_for_it, &a);
    cr_assert(TC_AWAIT(queued_everywhere(res, 1), 5000), "the waiter never queued");
    plant_dead_waiter(res);
    uint64_t released = tc_now_us();
    tc_must_release(holder, l);
    /* It returned at a majority: every master runs it (and reserves for the
     * dead head) before A's release below, and before the inspection. */
    tc_barrier(holder);
    pthread_join(ta, NULL);
    cr_assert(eq(int, a.rc, 0), "%s", redlock_err_name(a.rc));
    long first = (long)((a.done_us - released) / 1000);
    waiter b = { client(SLOW_POLL_MS), res, opts(20000, SLOW_POLL_MS, 0), -100, 0, NULL, 0 };
    pthread_create(&tb, NULL, wait_for_it, &b);
    /* B is in every queue; the dead head may already be gone from some (a
     * master where B's attempt was granted, then cleaned up, handed the
     * key over and dropped the dead head on the way). */
    cr_assert(TC_AWAIT(waiter_queued_everywhere(res, "400|redlock:wake:dead|1"), 5000),
              "the second waiter never queued");
    released = tc_now_us();
    tc_must_release(a.c, a.lock);
    pthread_join(tb, NULL);
    cr_assert(eq(int, b.rc, 0), "%s", redlock_err_name(b.rc));
    long second = (long)((b.done_us - released) / 1000);
    cr_log_info("behind a dead head: %ld ms, then %ld ms", first, second);
    cr_expect(lt(long, first, 400 + 100 + 300), "first hand-off: %ld ms", first);
    cr_expect(lt(long, second, 300), "the dead head was reserved for again: %ld ms", second);
    tc_barrier(a.c); /* its release returned at a majority: every master ran it now */
    for (int m = 0; m < tc_n(); m++)
        cr_expect(eq(int, in_queue(m, res, "400|redlock:wake:dead|1"), 0),
                  "dead waiter still queued on %d", m);
    tc_must_release(b.c, b.lock);
    redlock_client_free(a.c);
    redlock_client_free(b.c);
    redlock_client_free(holder);
    tc_del_all(res, strlen(res));
}

Test(queue, a_garbage_fence_counter_is_refused_naming_the_key)
{
    char res[128];
    tc_resource(res, sizeof(res), "garbage-fence");
    redlock_client *c = client(100);
    redlock_resource r = { res, strlen(res) };
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    /* On one master: the others are a quorum, and the fence still grows. */
    char key[160];
    size_t len = side_key(key, res, "fence");
    freeReplyObject(tc_cmd(0, "SET %b abc", key, len));
    unsigned long long top = 0; /* the masters' own counters (one per master) */
    for (int m = 1; m < tc_n(); m++) {
        redisReply *g = tc_cmd(m, "GET %b", "\0redlock:fence", (size_t)14);
        if (g && g->type == REDIS_REPLY_STRING && strtoull(g->str, NULL, 10) > top)
            top = strtoull(g->str, NULL, 10);
        freeReplyObject(g);
    }
    redlock_acquire_opts o = opts(0, 100, REDLOCK_FENCE);
    int rc = redlock_acquire_with(c, &r, 1, &o, &l, out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(gt(u64, redlock_lock_fence(l), top), "the fence did not grow");
    tc_must_release(c, l);
    /* On every master, as text and as another type: a fenced acquire fails
     * at once (no retry: waiting cannot fix it), naming the counter. */
    const char *plant[] = { "SET %b abc", "SET %b -3", "SADD %b x" };
    for (size_t k = 0; k < 3; k++) {
        for (int m = 0; m < tc_n(); m++) {
            freeReplyObject(tc_cmd(m, "DEL %b", key, len));
            freeReplyObject(tc_cmd(m, plant[k], key, len));
        }
        o = opts(2000, 100, REDLOCK_FENCE);
        rc = redlock_acquire_with(c, &r, 1, &o, &l, out, &e);
        cr_expect(eq(int, rc, REDLOCK_EWRONGTYPE), "%s: %s", redlock_err_name(rc), e.msg);
        cr_expect(eq(u32, redlock_outcome_attempts(out), 1), "%u attempts",
                  redlock_outcome_attempts(out));
        cr_expect(strstr(e.msg, "fence counter ") && strstr(e.msg, res) &&
                      strstr(e.msg, "\\0fence") && strstr(e.msg, "largest fence"),
                  "the message names the counter: %s", e.msg);
        cr_log_info("%s", e.msg);
        /* Nothing was written: the lock key is free for others. */
        cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "the refused acquire left its key");
    }
    /* Unfenced acquires do not read the counter. */
    l = tc_must_acquire(c, res, TTL_MS, NULL);
    tc_must_release(c, l);
    for (int m = 0; m < tc_n(); m++)
        freeReplyObject(tc_cmd(m, "DEL %b", key, len));
    redlock_client_free(c);
    tc_del_all(res, strlen(res));
}

/* ---- forged wake-ups ---------------------------------------------------------- */

typedef struct flood {
    const char *res;
    volatile int stop;
    long sent;
} flood;

/* About 1 kHz of "<waiter>|x" on the waiter's own channel, read from the
 * queue as an attacker would. Time is the subject: a fixed rate. */
static void *flood_wakes(void *arg)
{
    flood *f = arg;
    char key[160];
    size_t len = side_key(key, f->res, "q");
    char member[200] = "", chan[200] = "";
    while (!f->stop && !member[0]) {
        redisReply *r = tc_cmd(0, "ZRANGE %b 0 0", key, len);
        if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1)
            snprintf(member, sizeof(member), "%s", r->element[0]->str);
        freeReplyObject(r);
    }
    const char *a = strchr(member, '|'), *b = a ? strchr(a + 1, '|') : NULL;
    if (!b)
        return NULL;
    snprintf(chan, sizeof(chan), "%.*s", (int)(b - a - 1), a + 1);
    while (!f->stop) {
        freeReplyObject(tc_cmd(0, "PUBLISH %s %s|x", chan, member));
        f->sent++;
        tc_sleep_us(1000); /* time is the subject: a publish every ms */
    }
    return NULL;
}

/* A waiter (poll @poll_ms) waits @wait_ms for a key held by someone else
 * while its name is published at 1 kHz. */
static waiter flooded_wait(const char *res, uint32_t wait_ms, uint32_t poll_ms, long *sent)
{
    for (int m = 0; m < tc_n(); m++)
        tc_plant(m, res, strlen(res), "someone-else", TTL_MS);
    waiter w = { client(poll_ms), res, opts(wait_ms, poll_ms, 0), -100, 0, NULL, 0 };
    flood f = { res, 0, 0 };
    pthread_t tw, tf;
    uint64_t t0 = tc_now_us();
    pthread_create(&tw, NULL, wait_for_it, &w);
    pthread_create(&tf, NULL, flood_wakes, &f);
    pthread_join(tw, NULL);
    f.stop = 1;
    pthread_join(tf, NULL);
    w.done_us -= t0;
    *sent = f.sent;
    redlock_client_free(w.c);
    tc_del_all(res, strlen(res));
    return w;
}

Test(queue, forged_wake_ups_cost_at_most_one_attempt_per_poll)
{
    char res[128];
    tc_resource(res, sizeof(res), "flood");
    long sent;
    waiter w = flooded_wait(res, 2000, 200, &sent);
    cr_expect(eq(int, w.rc, REDLOCK_ECONFLICT), "%s", redlock_err_name(w.rc));
    /* 2 s of 200 ms polls: the first attempt and its place taken at once
     * (acquire.c), up to 10 polls (11 when the 10th falls just before the
     * deadline, whose own attempt is then one more), each interval with at
     * most one woken attempt: at most 2 x 12. (The bound was 2 x 11 and
     * measured 22; 24 came once under two tests in parallel, 2026-11-27:
     * the 11th interval.) */
    uint32_t polls = 2000 / 200 + 2;
    cr_log_info("%ld forged wake-ups, %u attempts in a 2 s wait", sent, w.attempts);
    cr_expect(gt(long, sent, 300), "the flood sent only %ld messages", sent);
    cr_expect(le(u32, w.attempts, 2 * polls), "%u attempts for %u polls under %ld wake-ups",
              w.attempts, polls, sent);
}

Test(queue, a_wait_ends_at_its_deadline_with_wake_ups_in_its_last_interval)
{
    /* Polls at 0, 300, 600, 900 ms; the deadline's attempt at 1000. Wake-ups
     * arrive all along, so also in the last interval. Time is the subject:
     * the wait ends at 1000 ms plus one attempt (two node timeouts, and
     * 300 ms of slack for a loaded machine). */
    char res[128];
    tc_resource(res, sizeof(res), "flood-deadline");
    for (int run = 0; run < 3; run++) {
        long sent;
        waiter w = flooded_wait(res, 1000, 300, &sent);
        long ms = (long)(w.done_us / 1000);
        cr_expect(eq(int, w.rc, REDLOCK_ECONFLICT), "%s", redlock_err_name(w.rc));
        cr_log_info("a 1000 ms wait under %ld wake-ups ended at %ld ms", sent, ms);
        cr_expect(ge(long, ms, 1000), "ended before its deadline: %ld ms", ms);
        cr_expect(le(long, ms, 1000 + 400 + 300), "ended at %ld ms", ms);
    }
}

typedef struct set_waiter {
    redlock_client *c;
    redlock_resource r[2];
    redlock_acquire_opts o;
    int rc;
    uint64_t done_us;
    redlock_lock *lock;
} set_waiter;

static void *wait_for_set(void *arg)
{
    set_waiter *w = arg;
    w->rc = redlock_acquire_with(w->c, w->r, 2, &w->o, &w->lock, NULL, NULL);
    w->done_us = tc_now_us();
    return NULL;
}

static bool seen_everywhere(const long long *before, long long more)
{
    for (int m = 0; m < tc_n(); m++)
        if (tc_acquires_seen(m) < before[m] + more)
            return false;
    return true;
}

Test(queue, a_set_woken_for_one_key_is_woken_again_for_the_next)
{
    /* A waiter for {x, y}: x is released (reserved for it, woken: its
     * attempt finds y still held, but x reserved for it, so the wake-up
     * was real), then y: the second wake-up acts at once, not at the
     * waiter's 1.5 s poll. */
    char x[128], y[128];
    tc_resource(x, sizeof(x), "set-x");
    tc_resource(y, sizeof(y), "set-y");
    redlock_client *holder = client(200);
    redlock_lock *lx = tc_must_acquire(holder, x, TTL_MS, NULL);
    redlock_lock *ly = tc_must_acquire(holder, y, TTL_MS, NULL);
    set_waiter w = { client(SLOW_POLL_MS),
                     { { x, strlen(x) }, { y, strlen(y) } },
                     opts(20000, SLOW_POLL_MS, 0),
                     -100,
                     0,
                     NULL };
    pthread_t t;
    pthread_create(&t, NULL, wait_for_set, &w);
    cr_assert(TC_AWAIT(queued_everywhere(x, 1) && queued_everywhere(y, 1), 5000),
              "the set waiter never queued");
    long long before[16];
    for (int m = 0; m < tc_n(); m++)
        before[m] = tc_acquires_seen(m);
    tc_must_release(holder, lx);
    /* The release and the woken attempt, on every master. */
    cr_assert(TC_AWAIT(seen_everywhere(before, 2), 3000), "the woken attempt never came");
    uint64_t released = tc_now_us();
    tc_must_release(holder, ly);
    pthread_join(t, NULL);
    cr_assert(eq(int, w.rc, 0), "%s", redlock_err_name(w.rc));
    long ms = (long)((w.done_us - released) / 1000);
    cr_expect(lt(long, ms, 300), "the second wake-up waited for the poll: %ld ms", ms);
    tc_must_release(w.c, w.lock);
    redlock_client_free(w.c);
    redlock_client_free(holder);
    tc_del_all(x, strlen(x));
    tc_del_all(y, strlen(y));
}

Test(queue, a_garbage_master_fence_counter_is_refused_naming_it)
{
    /* The master's own counter (one for every resource) as garbage on every
     * master: a fenced acquire fails at once, naming it; unfenced ones work. */
    char res[128];
    tc_resource(res, sizeof(res), "garbage-master-fence");
    redlock_client *c = client(100);
    redlock_resource r = { res, strlen(res) };
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    char saved[16][32];
    for (int m = 0; m < tc_n(); m++) {
        redisReply *g = tc_cmd(m, "GET %b", "\0redlock:fence", (size_t)14);
        snprintf(saved[m], sizeof(saved[m]), "%s",
                 g && g->type == REDIS_REPLY_STRING ? g->str : "");
        freeReplyObject(g);
        freeReplyObject(tc_cmd(m, "SET %b x17", "\0redlock:fence", (size_t)14));
    }
    redlock_acquire_opts o = opts(2000, 100, REDLOCK_FENCE);
    int rc = redlock_acquire_with(c, &r, 1, &o, &l, out, &e);
    cr_expect(eq(int, rc, REDLOCK_EWRONGTYPE), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(u32, redlock_outcome_attempts(out), 1), "%u attempts",
              redlock_outcome_attempts(out));
    cr_expect(strstr(e.msg, "fence counter \\0redlock:fence is not an integer") != NULL,
              "the message names the counter: %s", e.msg);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "the refused acquire left its key");
    l = tc_must_acquire(c, res, TTL_MS, NULL);
    tc_must_release(c, l);
    for (int m = 0; m < tc_n(); m++) {
        if (saved[m][0])
            freeReplyObject(tc_cmd(m, "SET %b %s", "\0redlock:fence", (size_t)14, saved[m]));
        else
            freeReplyObject(tc_cmd(m, "DEL %b", "\0redlock:fence", (size_t)14));
    }
    redlock_client_free(c);
}

/* ---- what a waiter's attempts cost the masters ----------------------------------- */

/* A resource named after @name in @res, held on every master by a token
 * no client of the test has. */
static void held_by_another(char *res, size_t size, const char *name)
{
    static const char other[] = "0123456789abcdef0123456789abcdef";
    tc_resource(res, size, name);
    for (int m = 0; m < tc_n(); m++)
        tc_plant(m, res, strlen(res), other, TTL_MS);
}

/* A waiter whose polls all meet a holder: an attempt refused everywhere
 * wrote nothing, so it cleans up nowhere (the library waits for every
 * master's answer before it cleans up, and a refusal needs none), however
 * the answers are timed; only the last attempt cleans up everywhere (its
 * answers tell a holder from a key of another type) and the waiter leaves
 * every queue. Counted on the masters: the scripts are the attempts'
 * (the first is the fast path's transaction), that cleanup and that leave. */
Test(queue, attempts_refused_everywhere_send_no_cleanup)
{
    char res[128];
    held_by_another(res, sizeof(res), "refused");
    /* A node timeout far above any answer's time even on a loaded machine:
     * a master timed out would be cleaned up blind (one script more). */
    redlock_config cfg;
    tc_config(&cfg);
    cfg.retry_jitter_ms = 0;
    cfg.node_timeout_ms = 5000;
    redlock_client *c = tc_client(&cfg, -1);
    tc_barrier(c);
    long long sha0 = tc_calls("evalsha");
    redlock_resource r = { res, strlen(res) };
    redlock_acquire_opts o = opts(450, 100, 0);
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    int rc = redlock_acquire_with(c, &r, 1, &o, &l, out, NULL);
    cr_assert(eq(int, rc, REDLOCK_ECONFLICT), "%s", redlock_err_name(rc));
    uint32_t attempts = redlock_outcome_attempts(out);
    cr_assert(ge(u32, attempts, 3), "%u attempts", attempts);
    tc_barrier(c);
    long long n = tc_n(), scripts = tc_calls("evalsha") - sha0;
    /* (attempts - 1) acquire scripts, the last cleanup, the leave, the
     * barrier's status script: each on every master. */
    cr_expect(eq(i64, scripts, ((long long)attempts - 1 + 3) * n),
              "%lld scripts on the masters for %u attempts (%lld expected)", scripts, attempts,
              ((long long)attempts - 1 + 3) * n);
    for (int m = 0; m < tc_n(); m++)
        cr_expect(eq(long, zcard(m, res, "q"), 0), "the waiter is still queued on master %d", m);
    redlock_client_free(c);
    tc_del_all(res, strlen(res));
}

/* A waiter wins before two masters answer (paused), and those masters,
 * when they wake, refuse it (another token holds the key there): its
 * attempt queued it there, so it leaves their queues when their answers
 * come (acquire-queue.c rl_acq_leave_later); the masters that granted it
 * dequeued it. Without that leave its place would stay until some release
 * there dropped it. */
Test(queue, a_waiter_that_won_before_two_masters_answered_leaves_where_they_refused)
{
    char res[128];
    held_by_another(res, sizeof(res), "late-leave");
    waiter w = { client(100), res, opts(20000, 100, 0), -100, 0, NULL, 0 };
    pthread_t t;
    pthread_create(&t, NULL, wait_for_it, &w);
    cr_assert(TC_AWAIT(queued_everywhere(res, 1), 5000), "the waiter never queued");
    tc_pause(3);
    tc_pause(4);
    for (int m = 0; m < 3; m++)
        freeReplyObject(tc_cmd(m, "DEL %b", res, strlen(res)));
    pthread_join(t, NULL); /* its next poll wins on masters 0, 1 and 2 */
    cr_assert(eq(int, w.rc, 0), "%s", redlock_err_name(w.rc));
    tc_resume(3);
    tc_resume(4);
    cr_expect(TC_AWAIT(zcard(3, res, "q") == 0 && zcard(4, res, "q") == 0, 5000),
              "the winner is still queued where it was refused: %ld and %ld entries",
              zcard(3, res, "q"), zcard(4, res, "q"));
    for (int m = 0; m < 3; m++)
        cr_expect(eq(long, zcard(m, res, "q"), 0), "the winner is still queued on master %d", m);
    tc_must_release(w.c, w.lock);
    redlock_client_free(w.c);
    tc_del_all(res, strlen(res));
}
