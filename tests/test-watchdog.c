/* test-watchdog.c - automatic extension: a lease outlives many ttls while
 * work runs, loss is reported the moment a majority is gone, the limits
 * stop it, and stopping is clean on both APIs.
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
#include <string.h>
#include <time.h>

#define TTL_MS 600u

#include <redlock.h>

#include "await.h"
#include "cluster.h"

TestSuite(watchdog, .fini = tc_heal, .timeout = 60);

typedef struct lost {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    int status;
} lost;

static void on_lost(redlock_client *c, redlock_lock *lock, int status, const redlock_error *err,
                    void *arg)
{
    (void)c; (void)lock; (void)err;
    lost *l = arg;
    pthread_mutex_lock(&l->mu);
    l->calls++;
    l->status = status;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

static int wait_lost(lost *l, int timeout_ms)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (dl.tv_nsec >= 1000000000) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&l->mu);
    while (l->calls == 0)
        if (pthread_cond_timedwait(&l->cv, &l->mu, &dl) != 0)
            break;
    int calls = l->calls;
    pthread_mutex_unlock(&l->mu);
    return calls;
}

/* Successful extensions, counted by the op hook (on the client's thread). */
typedef struct extends {
    pthread_mutex_t mu;
    int ok;
    int *flag_at;          /* async test: set to 1 ... */
    int flag_n;            /* ... once this many were counted */
} extends;

static void on_op(const redlock_op_info *info, void *arg)
{
    extends *x = arg;

    if (info->kind != REDLOCK_OP_EXTEND || info->status != 0)
        return;
    pthread_mutex_lock(&x->mu);
    if (++x->ok >= x->flag_n && x->flag_at)
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

Test(watchdog, keeps_a_lease_alive_for_many_ttls)
{
    enum { EXTENSIONS = 12 };   /* at half a ttl each: six ttls */
    extends x = { PTHREAD_MUTEX_INITIALIZER, 0, NULL, 0 };
    redlock_client *c = client(0, &x);
    char res[128];
    tc_resource(res, sizeof(res), "alive");
    redlock_lock *l;
    redlock_error err;
    cr_assert(eq(int, redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &err), 0), "%s",
              err.msg);
    lost lo = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, &err), 0), "%s", err.msg);
    /* "Work" while the watchdog extends: the lease must hold throughout. */
    TC_AWAIT(extensions(&x) >= EXTENSIONS || losses(&lo), 20000);
    cr_assert(eq(int, losses(&lo), 0), "no loss reported (status %s)",
              redlock_err_name(lo.status));
    cr_assert(ge(int, extensions(&x), EXTENSIONS), "only %d extensions in 20 s", extensions(&x));
    cr_assert(gt(i64, redlock_lock_validity_ms(l), 0), "still valid after six ttls");
    redlock_lock *other;
    cr_assert(eq(int, redlock_acquire(c, res, strlen(res), TTL_MS, &other, NULL, &err),
                 REDLOCK_ECONFLICT), "nobody else got it meanwhile");
    cr_assert(eq(int, redlock_release(c, l, NULL, &err), 0), "%s", err.msg);   /* stops it */
    cr_assert(eq(int, lo.calls, 0), "release stops the watchdog without a loss report");
    redlock_lock_free(l);
    redlock_client_free(c);
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
    lost lo = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, &err), 0), "%s", err.msg);
    tc_kill(0);
    tc_kill(1);
    tc_kill(2);
    cr_assert(eq(int, wait_lost(&lo, 2000), 1), "loss reported once");
    cr_assert(eq(int, lo.status, REDLOCK_ENOQUORUM), "as no quorum: %s",
              redlock_err_name(lo.status));
    cr_assert(le(i64, redlock_lock_validity_ms(l), TTL_MS), "validity not extended");
    redlock_watchdog_stop(c, l);   /* already stopped: no-op */
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
    lost lo = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
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
    lost lo = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
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
    (void)c; (void)o; (void)e;
    redlock_lock **out = arg;
    cr_assert(eq(int, status, 0));
    *out = lock;
}

Test(watchdog, runs_on_the_callers_event_loop)
{
    enum { EXTENSIONS = 10 };   /* at half a ttl each: five ttls */
    struct event_base *base = event_base_new();
    int extended = 0;
    extends x = { PTHREAD_MUTEX_INITIALIZER, 0, &extended, EXTENSIONS };
    redlock_config cfg;
    config(&cfg, 0, &x);
    redlock_client *c;
    cr_assert(eq(int, redlock_client_new(&cfg, base, &c, NULL), 0));
    char res[128];
    tc_resource(res, sizeof(res), "async");
    redlock_lock *l = NULL;
    cr_assert(eq(int, redlock_acquire_async(c, res, strlen(res), TTL_MS, on_acq, &l, NULL), 0));
    while (!l)
        event_base_loop(base, EVLOOP_ONCE);
    lost lo = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, NULL), 0));
    cr_assert(tc_run_until(base, &extended, 20000), "only %d extensions on the loop in 20 s",
              extensions(&x));
    cr_assert(eq(int, lo.calls, 0));
    cr_assert(gt(i64, redlock_lock_validity_ms(l), 0));
    redlock_watchdog_stop(c, l);
    redlock_client_free(c);   /* the release is not needed for the test */
    redlock_lock_free(l);
    event_base_free(base);
}
