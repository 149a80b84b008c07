/* test-watchdog.c - automatic extension: a lease outlives many ttls while
 * work runs, blips (masters paused for a while) are ridden out, loss is
 * reported with the safety floor of validity left once a majority stays
 * gone, the limits stop it, and stopping is clean on both APIs.
 *
 * The clients extend at half the ttl (watchdog_divisor 2) and leases are
 * 600 ms: an extension then has 300 ms to land, so a loaded machine does
 * not lose the lease the test is about. "Many ttls" is counted in
 * extensions seen by the op hook, not in time slept.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TTL_MS 600u

#include <redlock.h>

#include "await.h"
#include "cluster.h"
#include "core.h"

TestSuite(watchdog, .fini = tc_heal, .timeout = 60);

typedef struct lost {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    int status;
    int64_t validity_ms; /* the lock's validity when lost_cb ran */
    char msg[REDLOCK_ERRMSG_LEN];
} lost;

/* An initializer as a macro's body: clang-format 14 reads it as a block and
 * spreads it over four lines, so it is kept out. */
/* clang-format off */
#define LOST_INIT { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER }
/* clang-format on */

static void on_lost(redlock_client *c, int status, redlock_lock *lock, const redlock_error *err,
                    void *arg)
{
    (void)c;
    lost *l = arg;
    pthread_mutex_lock(&l->mu);
    l->calls++;
    l->status = status;
    l->validity_ms = redlock_lock_validity_ms(lock);
    snprintf(l->msg, sizeof(l->msg), "%s", err ? err->msg : "");
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

static int wait_lost(lost *l, int timeout_ms)
{
    uint64_t deadline = tc_now_us() + 1000u * (uint64_t)timeout_ms;
    pthread_mutex_lock(&l->mu);
    while (l->calls == 0)
        if (tc_cond_wait_until(&l->cv, &l->mu, deadline) != 0)
            break;
    int calls = l->calls;
    pthread_mutex_unlock(&l->mu);
    return calls;
}

/* Extensions, counted by the op hook (on the client's thread). */
typedef struct extends {
    pthread_mutex_t mu;
    int ok;
    int *flag_at; /* async test: set to 1 ... */
    int flag_n;   /* ... once this many were counted */
    int failed;   /* extensions that failed */
} extends;

/* As LOST_INIT: kept out of clang-format. */
/* clang-format off */
#define EXTENDS_INIT(flag, n) { .mu = PTHREAD_MUTEX_INITIALIZER, .flag_at = (flag), .flag_n = (n) }
/* clang-format on */

static void on_op(redlock_client *c, int status, const redlock_op_info *info,
                  const redlock_error *err, void *arg)
{
    extends *x = arg;
    (void)c;
    (void)status;
    (void)err;

    if (info->kind != REDLOCK_OP_EXTEND)
        return;
    pthread_mutex_lock(&x->mu);
    if (info->status != 0)
        x->failed++;
    else if (++x->ok >= x->flag_n && x->flag_at)
        *x->flag_at = 1;
    pthread_mutex_unlock(&x->mu);
}

static int extensions(extends *x)
{
    pthread_mutex_lock(&x->mu);
    int n = x->ok;
    pthread_mutex_unlock(&x->mu);
    return n;
}

static int failed_extensions(extends *x)
{
    pthread_mutex_lock(&x->mu);
    int n = x->failed;
    pthread_mutex_unlock(&x->mu);
    return n;
}

static int losses(lost *l)
{
    pthread_mutex_lock(&l->mu);
    int n = l->calls;
    pthread_mutex_unlock(&l->mu);
    return n;
}

static void config(redlock_config *cfg, uint32_t max_extends, extends *x)
{
    redlock_config_init(cfg);
    cfg->masters = tc_masters();
    cfg->retry_count = 0;
    cfg->watchdog_divisor = 2;
    if (max_extends)
        cfg->watchdog_max_extends = max_extends;
    cfg->op_fn = x ? on_op : NULL;
    cfg->op_arg = x;
}

static redlock_client *client(uint32_t max_extends, extends *x)
{
    redlock_config cfg;
    config(&cfg, max_extends, x);
    redlock_client *c;
    redlock_error err;
    cr_assert(eq(int, redlock_client_new(&cfg, NULL, &c, &err), 0), "%s", err.msg);
    return c;
}

/* The watchdog keeps a lease for @extensions extensions (at half a ttl
 * each) while the masters in @paused (bit i: master i) are SIGSTOPped:
 * no loss reported, nobody else gets it meanwhile, and a release stops it
 * without a report. */
static void keeps_alive(int want, unsigned paused)
{
    extends x = EXTENDS_INIT(NULL, 0);
    redlock_client *c = client(0, &x);
    char res[128];
    tc_resource(res, sizeof(res), paused ? "paused" : "alive");
    redlock_lock *l = tc_must_acquire(c, res, TTL_MS, NULL), *other;
    lost lo = LOST_INIT;
    redlock_error err;
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, &err), 0), "%s", err.msg);
    for (int m = 0; m < tc_n(); m++)
        if (paused & (1u << m))
            tc_pause(m);
    /* "Work" while the watchdog extends: the lease must hold throughout. */
    TC_AWAIT(extensions(&x) >= want || losses(&lo), 20000);
    cr_assert(eq(int, losses(&lo), 0), "no loss reported (%s: %s)", redlock_err_name(lo.status),
              lo.msg);
    cr_assert(ge(int, extensions(&x), want), "only %d extensions in 20 s", extensions(&x));
    cr_assert(gt(i64, redlock_lock_validity_ms(l), 0), "still valid after %d extensions", want);
    cr_assert(eq(int, redlock_acquire(c, res, strlen(res), TTL_MS, &other, NULL, &err),
                 REDLOCK_ECONFLICT),
              "nobody else got it meanwhile");
    tc_heal();
    tc_must_release(c, l); /* stops it */
    cr_assert(eq(int, losses(&lo), 0), "release stops the watchdog without a loss report");
    redlock_client_free(c);
}

Test(watchdog, keeps_a_lease_alive_for_many_ttls)
{
    keeps_alive(12, 0); /* six ttls */
}

/* Two of five masters paused for many ttls: every extension still has its
 * majority, and the lock is kept throughout. */
Test(watchdog, survives_two_of_five_masters_paused_and_keeps_the_lock)
{
    keeps_alive(8, 1u << 3 | 1u << 4); /* four ttls */
}

Test(watchdog, reports_loss_when_a_majority_is_gone)
{
    redlock_client *c = client(0, NULL);
    char res[128];
    tc_resource(res, sizeof(res), "loss");
    redlock_lock *l;
    redlock_error err;
    cr_assert(eq(int, redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &err), 0), "%s",
              err.msg);
    lost lo = LOST_INIT;
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, &err), 0), "%s", err.msg);
    tc_kill(0);
    tc_kill(1);
    tc_kill(2);
    cr_assert(eq(int, wait_lost(&lo, 2000), 1), "loss reported once");
    cr_assert(eq(int, lo.status, REDLOCK_ENOQUORUM), "as no quorum: %s",
              redlock_err_name(lo.status));
    cr_assert(le(i64, redlock_lock_validity_ms(l), TTL_MS), "validity not extended");
    redlock_watchdog_stop(c, l); /* already stopped: no-op */
    redlock_lock_free(l);
    redlock_client_free(c);
}

Test(watchdog, stops_at_its_extension_limit)
{
    redlock_client *c = client(3, NULL);
    char res[128];
    tc_resource(res, sizeof(res), "limit");
    redlock_lock *l;
    redlock_error err;
    cr_assert(eq(int, redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &err), 0), "%s",
              err.msg);
    lost lo = LOST_INIT;
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, &err), 0), "%s", err.msg);
    cr_assert(eq(int, wait_lost(&lo, 10000), 1));
    cr_assert(eq(int, lo.status, REDLOCK_ELIMIT), "%s", redlock_err_name(lo.status));
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, &err), 0),
              "can be started again while validity is left");
    redlock_watchdog_stop(c, l);
    redlock_release(c, l, NULL, NULL);
    redlock_lock_free(l);
    redlock_client_free(c);
}

Test(watchdog, refuses_a_lock_without_validity)
{
    redlock_client *c = client(0, NULL);
    redlock_lock *l;
    cr_assert(eq(int, redlock_lock_new("r", 1, "tok", &l, NULL), 0));
    lost lo = LOST_INIT;
    redlock_error err;
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, &err), REDLOCK_EINVAL));
    cr_assert(strstr(err.msg, "validity") != NULL, "%s", err.msg);
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* The async API: the watchdog runs on the caller's loop. */
static void on_acq(redlock_client *c, int status, redlock_lock *lock, const redlock_outcome *o,
                   const redlock_error *e, void *arg)
{
    (void)c;
    (void)o;
    (void)e;
    redlock_lock **out = arg;
    cr_assert(eq(int, status, 0));
    *out = lock;
}

Test(watchdog, runs_on_the_callers_event_loop)
{
    enum { EXTENSIONS = 10 }; /* at half a ttl each: five ttls */
    struct event_base *base = event_base_new();
    int extended = 0;
    extends x = EXTENDS_INIT(&extended, EXTENSIONS);
    redlock_config cfg;
    config(&cfg, 0, &x);
    redlock_client *c;
    cr_assert(eq(int, redlock_client_new(&cfg, base, &c, NULL), 0));
    char res[128];
    tc_resource(res, sizeof(res), "async");
    redlock_lock *l = NULL;
    cr_assert(eq(int, redlock_acquire_async(c, res, strlen(res), TTL_MS, on_acq, &l, NULL), 0));
    cr_assert(TC_RUN_UNTIL(base, l, 10000), "the acquire never called back");
    lost lo = LOST_INIT;
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, NULL), 0));
    cr_assert(TC_RUN_UNTIL(base, extended, 20000), "only %d extensions on the loop in 20 s",
              extensions(&x));
    cr_assert(eq(int, lo.calls, 0));
    cr_assert(gt(i64, redlock_lock_validity_ms(l), 0));
    redlock_watchdog_stop(c, l);
    redlock_client_free(c); /* the release is not needed for the test */
    redlock_lock_free(l);
    event_base_free(base);
}

/* ---- blips: masters paused for a while ------------------------------------ */

/* A client for the blip tests: 3 s leases extended at half the ttl, a
 * 100 ms node timeout, so a failed extension is retried every 200 ms and
 * the floor is max(ttl / 10, 4 * node_timeout) = 400 ms. */
enum {
    BLIP_TTL_MS = 3000,
    BLIP_NODE_TIMEOUT_MS = 100,
    BLIP_FLOOR_MS = 400,
    BLIP_GAP_MS = 2 * BLIP_NODE_TIMEOUT_MS
};

static redlock_client *blip_client(extends *x)
{
    redlock_config cfg;
    config(&cfg, 0, x);
    cfg.node_timeout_ms = BLIP_NODE_TIMEOUT_MS;
    redlock_client *c;
    redlock_error err;
    cr_assert(eq(int, redlock_client_new(&cfg, NULL, &c, &err), 0), "%s", err.msg);
    cr_assert(eq(int, tc_wait_up(c, tc_n(), 5000), tc_n()));
    return c;
}

/* Three of five paused for longer than a retry (two extensions fail), then
 * back: the watchdog retries while more than the floor is left, the next
 * extension succeeds, and the lock is kept; lost_cb never runs. */
Test(watchdog, rides_out_three_of_five_paused_for_longer_than_a_retry)
{
    extends x = EXTENDS_INIT(NULL, 0);
    redlock_client *c = blip_client(&x);
    char res[128];
    tc_resource(res, sizeof(res), "blip");
    redlock_lock *l = tc_must_acquire(c, res, BLIP_TTL_MS, NULL);
    lost lo = LOST_INIT;
    redlock_error err;
    for (int m = 0; m < 3; m++)
        tc_pause(m);
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, &err), 0), "%s", err.msg);
    cr_assert(TC_AWAIT(failed_extensions(&x) >= 2 || losses(&lo), 2 * BLIP_TTL_MS),
              "no extension failed while three masters were paused");
    int64_t left = redlock_lock_validity_ms(l);
    for (int m = 0; m < 3; m++)
        tc_resume(m);
    cr_assert(eq(int, losses(&lo), 0), "lost with %lld ms left: %s: %s", (long long)lo.validity_ms,
              redlock_err_name(lo.status), lo.msg);
    cr_assert(gt(i64, left, BLIP_FLOOR_MS), "the blip outlasted the test's premise: %lld ms left",
              (long long)left);
    cr_assert(TC_AWAIT(extensions(&x) >= 1 || losses(&lo), 2 * BLIP_TTL_MS),
              "no extension succeeded after the masters came back");
    cr_assert(eq(int, losses(&lo), 0), "lost: %s: %s", redlock_err_name(lo.status), lo.msg);
    cr_assert(gt(i64, redlock_lock_validity_ms(l), left), "the lease was not extended");
    cr_log_info("%d extensions failed, %lld ms were left; then extended", failed_extensions(&x),
                (long long)left);
    tc_must_release(c, l);
    redlock_client_free(c);
}

/* A majority that stays away: the watchdog retries until only the floor
 * of validity is left, then calls lost_cb once, with about that much time
 * left to stop cleanly (not at the first failed extension, with a third
 * of the lease left; not at the very end). @plant: our token is also
 * replaced by a competitor's on masters 1 and 2, with 3 and 4 paused
 * instead - masters that did not answer may still hold ours, so this is
 * no quorum, not a lost token, and must end the same way. */
static void lost_at_the_floor(int plant)
{
    extends x = EXTENDS_INIT(NULL, 0);
    redlock_client *c = blip_client(&x);
    char res[128];
    tc_resource(res, sizeof(res), plant ? "stale" : "floor");
    redlock_lock *l = tc_must_acquire(c, res, BLIP_TTL_MS, NULL);
    lost lo = LOST_INIT;
    redlock_error err;
    if (plant) {
        tc_barrier(c);
        tc_plant(1, res, strlen(res), "competitor", 3 * BLIP_TTL_MS);
        tc_plant(2, res, strlen(res), "competitor", 3 * BLIP_TTL_MS);
    }
    for (int m = plant ? 3 : 0; m < (plant ? 5 : 3); m++)
        tc_pause(m);
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, &err), 0), "%s", err.msg);
    cr_assert(eq(int, wait_lost(&lo, 2 * BLIP_TTL_MS), 1), "lost_cb did not run");
    cr_expect(eq(int, lo.status, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(lo.status), lo.msg);
    cr_expect(gt(int, failed_extensions(&x), 1), "lost after %d failed extension(s)",
              failed_extensions(&x));
    /* The last retry starts with more than floor + gap left and fails
     * within a node timeout; then lost_cb runs with at most floor + gap
     * left. 100 ms of slack for a loaded machine. */
    cr_expect(gt(i64, lo.validity_ms, 0), "lost_cb ran with no time left to stop: %lld ms",
              (long long)lo.validity_ms);
    cr_expect(le(i64, lo.validity_ms, BLIP_FLOOR_MS + BLIP_GAP_MS + 100),
              "lost_cb ran with %lld ms left, floor %d ms: %s", (long long)lo.validity_ms,
              BLIP_FLOOR_MS, lo.msg);
    cr_log_info("lost_cb with %lld ms left after %d failed extensions: %s",
                (long long)lo.validity_ms, failed_extensions(&x), lo.msg);
    /* The message is whole: the last failure keeps whole clauses, master
     * by master, and counts the ones it leaves out; nothing is cut short
     * (rl_fit's "..."), not even at 256 bytes with five masters. */
    cr_expect(strstr(lo.msg, "\xe2\x80\xa6") == NULL, "cut: %s", lo.msg);
    cr_expect(strstr(lo.msg, "last: extend: no quorum: ") != NULL, "%s", lo.msg);
    if (!plant) {
        /* Each of the three paused masters is named whole, or counted. */
        int named = 0, more = 0;
        for (const char *s = lo.msg; (s = strstr(s, ": no answer within ")) != NULL; s++)
            named++;
        const char *m = strstr(lo.msg, " (+");
        if (m)
            more = atoi(m + 3);
        cr_expect(eq(int, named + more, 3), "%s", lo.msg);
    }
    tc_heal();
    redlock_lock_free(l);
    redlock_client_free(c);
}

Test(watchdog, three_of_five_paused_calls_lost_cb_with_about_the_floor_left)
{
    lost_at_the_floor(0);
}

Test(watchdog, does_not_report_a_lock_lost_that_paused_masters_may_hold)
{
    lost_at_the_floor(1);
}

/* Freeing a lock whose watchdog runs stops the watchdog (the header allows
 * it): no extension after the free (ASan would see one touch freed
 * memory), no loss reported, and the key lapses with its ttl. */
Test(watchdog, freeing_the_lock_stops_its_watchdog)
{
    int extended = 0;
    extends x = EXTENDS_INIT(&extended, 2);
    redlock_client *c = client(0, &x);
    char res[128];
    tc_resource(res, sizeof(res), "freed");
    redlock_lock *l = tc_must_acquire(c, res, TTL_MS, NULL);
    lost lo = LOST_INIT;
    redlock_error err;
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, &err), 0), "%s", err.msg);
    cr_assert(TC_AWAIT(__atomic_load_n(&extended, __ATOMIC_ACQUIRE), 10 * TTL_MS),
              "the watchdog never extended");
    redlock_lock_free(l);
    int at_free = extensions(&x);
    /* The key was extended to a full ttl at most just before the free. */
    cr_expect(TC_AWAIT(tc_key_count(res, strlen(res)) == 0, 3 * TTL_MS),
              "the key outlived its ttl: the watchdog still extends a freed lock");
    cr_expect(le(int, extensions(&x), at_free + 1), "%d extensions after the free",
              extensions(&x) - at_free);
    cr_expect(eq(int, losses(&lo), 0), "a loss reported for a lock the caller freed");
    redlock_client_free(c);
}
