/* watchdog.c - keep a lock alive while work of unknown length runs.
 *
 * One timer per watched lock on the client's own loop (for blocking clients
 * that is the I/O thread: no thread per lock). It fires when the validity
 * left falls to ttl / watchdog_divisor and extends by the lock's ttl. The
 * moment an extension fails to reach a majority, or validity runs out first,
 * or a limit is reached, it stops and reports through lost_cb, once.
 *
 * Mutual exclusion is unchanged: the watchdog only calls extend, whose
 * argument (extend.c) covers it; a failed extension caps the lock's
 * validity, so the holder sees the loss through redlock_lock_validity_ms()
 * even before lost_cb runs.
 */
#include "internal.h"

#include <stdlib.h>

typedef struct rl_watchdog {
    redlock_client *c;
    redlock_lock *lock;
    struct event *ev;
    redlock_lost_cb cb;
    void *arg;
    uint32_t extends;             /* extensions done */
    rl_monotime started_us;
    bool extending;               /* an extend op is in flight with us as its arg */
    rl_op *ext_op;                /* that op, while extending */
    bool stopped;                 /* stopped while extending: the op frees us */
    struct rl_watchdog *prev, *next;
} rl_watchdog;

static void wd_unlink(rl_watchdog *wd)
{
    redlock_client *c = wd->c;
    if (wd->prev)
        wd->prev->next = wd->next;
    else if (c->wds == wd)
        c->wds = wd->next;
    if (wd->next)
        wd->next->prev = wd->prev;
    wd->prev = wd->next = NULL;
    if (wd->lock && wd->lock->wd == wd)
        wd->lock->wd = NULL;
}

static void wd_free(rl_watchdog *wd)
{
    if (wd->ev)
        event_free(wd->ev);
    free(wd);
}

/* Off the client and the lock. An extend still in flight is cut loose from
 * the lock, which the caller may free or release as soon as we return: it
 * then neither writes into the lock nor revives its validity, and its
 * callback frees us. */
static void wd_detach(rl_watchdog *wd)
{
    wd_unlink(wd);
    evtimer_del(wd->ev);
    if (wd->extending) {
        wd->stopped = true;
        if (wd->ext_op)
            wd->ext_op->lock = NULL;
    } else {
        wd_free(wd);
    }
}

/* Stop and report, once. */
static void wd_lost(rl_watchdog *wd, int status, const redlock_error *err)
{
    redlock_client *c = wd->c;
    redlock_lock *lock = wd->lock;
    redlock_lost_cb cb = wd->cb;
    void *arg = wd->arg;
    wd_detach(wd);
    redlock_error e;
    if (!err) {
        rl_seterr(&e, status, -1, "watchdog stopped: %s", redlock_strerror(status));
        err = &e;
    }
    cb(c, lock, status, err, arg);
}

static void wd_arm(rl_watchdog *wd)
{
    const redlock_client *c = wd->c;
    int64_t left = redlock_lock_validity_ms(wd->lock);
    int64_t at = (int64_t)(wd->lock->ttl_ms / c->cfg.watchdog_divisor);
    int64_t ms = left - at;
    if (ms < 0)
        ms = 0;
    struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000) };
    evtimer_add(wd->ev, &tv);
}

static void wd_on_extended(redlock_client *c, int status, redlock_lock *lock,
                           const redlock_outcome *out, const redlock_error *err, void *arg)
{
    (void)c; (void)lock; (void)out;
    rl_watchdog *wd = arg;
    wd->extending = false;
    wd->ext_op = NULL;
    if (wd->stopped) {
        wd_free(wd);
        return;
    }
    if (status != 0) {
        wd_lost(wd, status, err);
        return;
    }
    wd->extends++;
    wd_arm(wd);
}

static void wd_on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    rl_watchdog *wd = arg;
    redlock_client *c = wd->c;
    redlock_error err;
    if (redlock_lock_validity_ms(wd->lock) <= 0) {
        rl_seterr(&err, REDLOCK_EEXPIRED, -1,
                  "watchdog: validity ran out before an extension succeeded");
        wd_lost(wd, REDLOCK_EEXPIRED, &err);
        return;
    }
    uint64_t ran_ms = (rl_now_us() - wd->started_us) / 1000;
    if (wd->extends >= c->cfg.watchdog_max_extends || ran_ms >= c->cfg.watchdog_max_lease_ms) {
        rl_seterr(&err, REDLOCK_ELIMIT, -1,
                  "watchdog: limit reached after %u extensions and %llu ms (watchdog_max_extends "
                  "%u, watchdog_max_lease_ms %u); the lock lapses in %lld ms", wd->extends,
                  (unsigned long long)ran_ms, c->cfg.watchdog_max_extends,
                  c->cfg.watchdog_max_lease_ms, (long long)redlock_lock_validity_ms(wd->lock));
        wd_lost(wd, REDLOCK_ELIMIT, &err);
        return;
    }
    rl_op *op = NULL;
    int rc = rl_extend_start_op(c, wd->lock, wd->lock->ttl_ms, wd_on_extended, wd, &op, &err);
    if (rc != 0) {
        wd_lost(wd, rc, &err);
        return;
    }
    wd->extending = true;
    wd->ext_op = op;
}

int rl_watchdog_start(redlock_client *c, redlock_lock *lock, redlock_lost_cb cb, void *arg,
                      redlock_error *reterr)
{
    if (c->freeing) {
        rl_seterr(reterr, REDLOCK_ESHUTDOWN, -1, "client is being freed");
        return REDLOCK_ESHUTDOWN;
    }
    if (!lock || !cb) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "watchdog: lock and lost_cb must not be NULL");
        return REDLOCK_EINVAL;
    }
    if (lock->wd) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "watchdog: one already runs for this lock");
        return REDLOCK_EINVAL;
    }
    if (lock->ttl_ms == 0 || redlock_lock_validity_ms(lock) <= 0) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1,
                  "watchdog: the lock has no validity left (acquire or extend it first)");
        return REDLOCK_EINVAL;
    }
    rl_watchdog *wd = calloc(1, sizeof(*wd));
    if (!wd || !(wd->ev = evtimer_new(c->base, wd_on_timer, wd))) {
        free(wd);
        rl_seterr(reterr, REDLOCK_ENOMEM, -1, "out of memory");
        return REDLOCK_ENOMEM;
    }
    wd->c = c;
    wd->lock = lock;
    wd->cb = cb;
    wd->arg = arg;
    wd->started_us = rl_now_us();
    wd->next = c->wds;
    if (c->wds)
        c->wds->prev = wd;
    c->wds = wd;
    lock->wd = wd;
    wd_arm(wd);
    return 0;
}

void rl_watchdog_stop(redlock_client *c, redlock_lock *lock)
{
    (void)c;
    rl_watchdog *wd = lock ? lock->wd : NULL;
    if (wd)
        wd_detach(wd);
}

void rl_watchdog_stop_all(redlock_client *c)
{
    while (c->wds)
        wd_lost(c->wds, REDLOCK_ESHUTDOWN, NULL);
}

int redlock_watchdog_start(redlock_client *c, redlock_lock *lock, redlock_lost_cb lost_cb,
                           void *arg, redlock_error *reterr)
{
    if (!c) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "client is NULL");
        return REDLOCK_EINVAL;
    }
    if (c->blk)
        return rl_blocking_watchdog(c, true, lock, lost_cb, arg, reterr);
    return rl_watchdog_start(c, lock, lost_cb, arg, reterr);
}

void redlock_watchdog_stop(redlock_client *c, redlock_lock *lock)
{
    if (!c || !lock)
        return;
    if (c->blk)
        rl_blocking_watchdog(c, false, lock, NULL, NULL, NULL);
    else
        rl_watchdog_stop(c, lock);
}
