/* test-watchdog.c - automatic extension: a lease outlives many ttls while
 * work runs, loss is reported the moment a majority is gone, the limits
 * stop it, and stopping is clean on both APIs.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <event2/event.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <redlock.h>

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

static redlock_client *client(uint32_t max_extends)
{
    redlock_config cfg;
    redlock_config_init(&cfg);
    cfg.masters = tc_masters();
    cfg.retry_count = 0;
    if (max_extends)
        cfg.watchdog_max_extends = max_extends;
    redlock_client *c;
    redlock_error err;
    cr_assert(eq(int, redlock_client_new(&cfg, NULL, &c, &err), 0), "%s", err.msg);
    return c;
}

Test(watchdog, keeps_a_lease_alive_for_many_ttls)
{
    redlock_client *c = client(0);
    char res[128];
    tc_resource(res, sizeof(res), "alive");
    redlock_lock *l;
    redlock_error err;
    cr_assert(eq(int, redlock_acquire(c, res, strlen(res), 300, &l, NULL, &err), 0), "%s",
              err.msg);
    lost lo = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, &err), 0), "%s", err.msg);
    /* 2 s of "work" = more than six ttls; the lease must hold throughout */
    cr_assert(eq(int, wait_lost(&lo, 2000), 0), "no loss reported (status %d)", lo.status);
    cr_assert(gt(i64, redlock_lock_validity_ms(l), 0), "still valid after 2 s with a 300 ms ttl");
    redlock_lock *other;
    cr_assert(eq(int, redlock_acquire(c, res, strlen(res), 300, &other, NULL, &err),
                 REDLOCK_ECONFLICT), "nobody else got it meanwhile");
    cr_assert(eq(int, redlock_release(c, l, NULL, &err), 0), "%s", err.msg);   /* stops it */
    cr_assert(eq(int, lo.calls, 0), "release stops the watchdog without a loss report");
    redlock_lock_free(l);
    redlock_client_free(c);
}

Test(watchdog, reports_loss_when_a_majority_is_gone)
{
    redlock_client *c = client(0);
    char res[128];
    tc_resource(res, sizeof(res), "loss");
    redlock_lock *l;
    redlock_error err;
    cr_assert(eq(int, redlock_acquire(c, res, strlen(res), 600, &l, NULL, &err), 0), "%s",
              err.msg);
    lost lo = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, &err), 0), "%s", err.msg);
    tc_kill(0);
    tc_kill(1);
    tc_kill(2);
    cr_assert(eq(int, wait_lost(&lo, 2000), 1), "loss reported once");
    cr_assert(eq(int, lo.status, REDLOCK_ENOQUORUM), "as no quorum: %s",
              redlock_err_name(lo.status));
    cr_assert(le(i64, redlock_lock_validity_ms(l), 600), "validity not extended");
    redlock_watchdog_stop(c, l);   /* already stopped: no-op */
    redlock_lock_free(l);
    redlock_client_free(c);
}

Test(watchdog, stops_at_its_extension_limit)
{
    redlock_client *c = client(3);
    char res[128];
    tc_resource(res, sizeof(res), "limit");
    redlock_lock *l;
    redlock_error err;
    cr_assert(eq(int, redlock_acquire(c, res, strlen(res), 200, &l, NULL, &err), 0), "%s",
              err.msg);
    lost lo = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, &err), 0), "%s", err.msg);
    cr_assert(eq(int, wait_lost(&lo, 3000), 1));
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
    redlock_client *c = client(0);
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

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    event_base_loopbreak(arg);
}

Test(watchdog, runs_on_the_callers_event_loop)
{
    struct event_base *base = event_base_new();
    redlock_config cfg;
    redlock_config_init(&cfg);
    cfg.masters = tc_masters();
    redlock_client *c;
    cr_assert(eq(int, redlock_client_new(&cfg, base, &c, NULL), 0));
    char res[128];
    tc_resource(res, sizeof(res), "async");
    redlock_lock *l = NULL;
    cr_assert(eq(int, redlock_acquire_async(c, res, strlen(res), 300, on_acq, &l, NULL), 0));
    while (!l)
        event_base_loop(base, EVLOOP_ONCE);
    lost lo = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, NULL), 0));
    struct event *t = evtimer_new(base, on_timeout, base);
    struct timeval tv = { 1, 500000 };
    evtimer_add(t, &tv);
    event_base_dispatch(base);   /* 1.5 s = five ttls */
    cr_assert(eq(int, lo.calls, 0));
    cr_assert(gt(i64, redlock_lock_validity_ms(l), 0));
    redlock_watchdog_stop(c, l);
    event_free(t);
    redlock_client_free(c);   /* the release is not needed for the test */
    redlock_lock_free(l);
    event_base_free(base);
}
