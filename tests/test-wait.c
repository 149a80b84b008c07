/* test-wait.c - waiting without polling: a waiter retries the moment the
 * holder releases, not when its retry timer fires; without pub/sub it waits
 * for the timer; with its subscriber connections killed it still gets the
 * lock through the timer (the fallback).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <redlock.h>

#include "await.h"
#include "cluster.h"
#include "core.h"

TestSuite(wait, .fini = tc_heal, .timeout = 60);

static redlock_client *client(int pubsub, uint32_t retry_delay_ms)
{
    redlock_config cfg;
    redlock_config_init(&cfg);
    cfg.masters = tc_masters();
    cfg.retry_count = 5;
    cfg.retry_delay_ms = retry_delay_ms;
    cfg.retry_jitter_ms = 0;
    cfg.pubsub_wait = pubsub;
    redlock_client *c;
    redlock_error err;
    cr_assert(eq(int, redlock_client_new(&cfg, NULL, &c, &err), 0), "%s", err.msg);
    return c;
}

typedef struct waiter {
    redlock_client *c;
    const char *res;
    int rc;
    uint64_t done_ms;
} waiter;

static void *wait_for_it(void *arg)
{
    waiter *w = arg;
    redlock_lock *l = NULL;
    w->rc = redlock_acquire(w->c, w->res, strlen(w->res), 10000, &l, NULL, NULL);
    w->done_ms = tc_now_us() / 1000;
    if (l) {
        redlock_release(w->c, l, NULL, NULL);
        redlock_lock_free(l);
    }
    return NULL;
}

/* Calls of SET so far on master @m (-1: none yet). */
static long set_calls(int m)
{
    return (long)core_info_num(m, "commandstats", "cmdstat_set");
}

/* Subscribers of @res's channel on master @m (PUBSUB NUMSUB). */
static long subscribers(int m, const char *res)
{
    redisReply *r = tc_cmd(m, "PUBSUB NUMSUB %b", res, strlen(res));
    long n = r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? (long)r->element[1]->integer : 0;
    freeReplyObject(r);
    return n;
}

/* 1 once the waiter's SET has reached master 0 since @sets_before, and,
 * with @subscribed, it listens on @res's channel on every master. */
static bool waiting(long sets_before, const char *res, bool subscribed)
{
    if (set_calls(0) <= sets_before)
        return false;
    for (int i = 0; subscribed && i < tc_n(); i++)
        if (subscribers(i, res) < 1)
            return false;
    return true;
}

/* Holder takes the lock; a waiter starts; the holder releases after
 * @hold_ms. Returns ms from the release to the waiter's success. */
static long handoff(int pubsub, uint32_t retry_delay_ms, bool kill_subscribers)
{
    char res[128];
    tc_resource(res, sizeof(res), pubsub ? (kill_subscribers ? "killed" : "pubsub") : "poll");
    redlock_client *holder = client(0, 200);
    redlock_lock *l;
    redlock_error err;
    cr_assert(eq(int, redlock_acquire(holder, res, strlen(res), 10000, &l, NULL, &err), 0),
              "%s", err.msg);
    long sets_before = set_calls(0);
    waiter w = { client(pubsub, retry_delay_ms), res, -100, 0 };
    pthread_t t;
    pthread_create(&t, NULL, wait_for_it, &w);
    /* Await the waiter really waiting: its SET reached the masters (and
     * was refused), and with pub/sub, it is subscribed on every master. */
    cr_assert(TC_AWAIT(waiting(sets_before, res, pubsub && !kill_subscribers), 5000),
              "the waiter never started waiting");
    if (kill_subscribers)   /* its subscriptions exist first */
        TC_AWAIT(subscribers(0, res) >= 1, 5000);
    if (kill_subscribers)
        for (int i = 0; i < tc_n(); i++)
            freeReplyObject(tc_cmd(i, "CLIENT KILL TYPE pubsub"));
    uint64_t released = tc_now_us() / 1000;
    cr_assert(eq(int, redlock_release(holder, l, NULL, &err), 0), "%s", err.msg);
    pthread_join(t, NULL);
    cr_assert(eq(int, w.rc, 0), "the waiter got the lock (%s)", redlock_err_name(w.rc));
    redlock_lock_free(l);
    redlock_client_free(w.c);
    redlock_client_free(holder);
    return (long)(w.done_ms - released);
}

Test(wait, release_wakes_the_waiter_long_before_its_retry_timer)
{
    long with = handoff(1, 3000, false);
    cr_log_info("pub/sub: waiter had the lock %ld ms after the release (retry delay 3000 ms)",
                with);
    cr_assert(lt(long, with, 500), "woken by the release: %ld ms", with);
}

Test(wait, without_pubsub_the_waiter_polls)
{
    long without = handoff(0, 1500, false);
    cr_log_info("polling: waiter had the lock %ld ms after the release (retry delay 1500 ms)",
                without);
    cr_assert(gt(long, without, 1000), "without pub/sub only the timer retries: %ld ms", without);
}

Test(wait, killed_subscriber_connections_fall_back_to_the_timer)
{
    long fallback = handoff(1, 1000, true);
    cr_log_info("subscribers killed: waiter had the lock %ld ms after the release", fallback);
    cr_assert(lt(long, fallback, 5000), "the timer still retries");
}
