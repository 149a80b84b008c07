/* watchdog.c - keep a lock alive while work of unknown length runs.
 *
 * One timer per watched lock, on the client's own loop, extends the lock
 * when the validity left falls to ttl / watchdog_divisor, retries what can
 * pass until the floor, then calls lost_cb. The policy, and why it changes
 * nothing for mutual exclusion: docs/waiting.md, "Watchdog".
 */
#include "kinds/watchdog.h"
#include "core/loop.h"
#include "kinds/kinds.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct rl_watchdog {
    redlock_client *c;
    redlock_lock *lock;
    rl_timer timer;
    redlock_lost_cb cb;
    void *arg;
    uint32_t extends;  /* extensions done */
    uint32_t failures; /* failed extensions since the last success */
    rl_monotime started_us;
    rl_op *ext_op;   /* the extend in flight, with us as its arg */
    bool stopped;    /* stopped while extending: the op frees us */
    int last_status; /* the last failed extension's status */
    redlock_error last_err;
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
    if (wd->lock && wd->lock->wd == wd) {
        wd->lock->wd = NULL;
        wd->lock->on_free = NULL;
    }
}

static void wd_free(rl_watchdog *wd)
{
    rl_timer_fini(&wd->timer);
    free(wd);
}

/* Off the client and the lock. An extend still in flight is cut loose from
 * the lock, which the caller may free or release as soon as we return: it
 * then neither writes into the lock nor revives its validity, and its
 * callback frees us. */
static void wd_detach(rl_watchdog *wd)
{
    wd_unlink(wd);
    rl_timer_stop(&wd->timer);
    if (wd->ext_op) {
        wd->stopped = true;
        rl_extend_forget_lock(wd->ext_op);
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
    redlock_error e = err ? *err : (redlock_error){ 0, -1, "" };
    if (status != REDLOCK_ESHUTDOWN) { /* the client's end is no lost lease */
        int64_t left = redlock_lock_validity_ms(lock);
        rl_met_status(c->metrics.lost, status);
        rl_met_observe(&c->metrics.lost_left, left > 0 ? (uint64_t)left * 1000 : 0);
    }
    if (!err)
        rl_seterr(&e, status, -1, "watchdog stopped: %s", redlock_strerror(status));
    wd_detach(wd);
    rl_client_enter(c);
    cb(c, status, lock, &e, arg);
    rl_client_leave(c);
}

static void wd_arm_ms(rl_watchdog *wd, int64_t ms)
{
    if (ms < 0)
        ms = 0;
    rl_timer_start(&wd->timer, (uint64_t)ms);
}

/* The next extension: when a divisor's worth of the ttl is left. */
static void wd_arm(rl_watchdog *wd)
{
    int64_t left = redlock_lock_validity_ms(wd->lock);
    int64_t at = (int64_t)(wd->lock->ttl_ms / wd->c->cfg.watchdog_divisor);
    wd_arm_ms(wd, left - at);
}

/* Validity that must be left when we give up retrying. */
static int64_t wd_floor_ms(const rl_watchdog *wd)
{
    const redlock_config *cfg = &wd->c->cfg;
    if (cfg->watchdog_floor_ms)
        return cfg->watchdog_floor_ms;
    int64_t tenth = wd->lock->ttl_ms / 10;
    int64_t four = 4 * (int64_t)cfg->node_timeout_ms;
    return tenth > four ? tenth : four;
}

static bool passes(int status)
{
    return status == REDLOCK_ENOQUORUM || status == REDLOCK_EUNAVAIL || status == REDLOCK_EBUSY ||
           status == REDLOCK_ETIMEOUT;
}

/* A failed extension that may pass: try again while more than the floor
 * is left; at the floor, report with the time that is left. */
static void wd_retry_or_lose(rl_watchdog *wd, int status, const redlock_error *err)
{
    int64_t left = redlock_lock_validity_ms(wd->lock);
    int64_t floor = wd_floor_ms(wd);
    int64_t gap = 2 * (int64_t)wd->c->cfg.node_timeout_ms;
    if (gap < 10)
        gap = 10;
    wd->failures++;
    wd->last_status = status;
    wd->last_err = *err;
    if (left - gap > floor) {
        wd_arm_ms(wd, gap);
        return;
    }
    /* Whole within the error's 256 bytes: the last failure keeps whole
     * clauses (its head, then master by master), counting those left out,
     * rather than being cut in the middle of a master's address. */
    redlock_error e;
    char head[128], last[REDLOCK_ERRMSG_LEN];
    int hl =
        snprintf(head, sizeof(head),
                 "watchdog: %u extension(s) failed, %lld ms of validity left (floor %lld ms): stop "
                 "using the resource; last: ",
                 wd->failures, (long long)left, (long long)floor);
    size_t room = hl > 0 && (size_t)hl < sizeof(e.msg) ? sizeof(e.msg) - (size_t)hl : 1;
    rl_fit_clauses(last, room < sizeof(last) ? room : sizeof(last), err->msg);
    rl_seterr(&e, status, -1, "%s%s", head, last);
    wd_lost(wd, status, &e);
}

static void wd_on_extended(redlock_client *c, int status, redlock_lock *lock,
                           const redlock_outcome *out, const redlock_error *err, void *arg)
{
    (void)c;
    (void)lock;
    (void)out;
    rl_watchdog *wd = arg;
    wd->ext_op = NULL;
    if (wd->stopped) {
        wd_free(wd);
        return;
    }
    if (status == 0) {
        wd->extends++;
        wd->failures = 0;
        wd_arm(wd);
    } else if (passes(status) && redlock_lock_validity_ms(wd->lock) > 0) {
        wd_retry_or_lose(wd, status, err);
    } else {
        wd_lost(wd, status, err);
    }
}

static void wd_on_timer(void *arg)
{
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
                  "%u, watchdog_max_lease_ms %u); the lock lapses in %lld ms",
                  wd->extends, (unsigned long long)ran_ms, c->cfg.watchdog_max_extends,
                  c->cfg.watchdog_max_lease_ms, (long long)redlock_lock_validity_ms(wd->lock));
        wd_lost(wd, REDLOCK_ELIMIT, &err);
        return;
    }
    rl_op *op = NULL;
    int rc = rl_extend_start(c, wd->lock, wd->lock->ttl_ms, wd_on_extended, wd, &op, &err);
    if (rc == 0)
        wd->ext_op = op;
    else if (passes(rc))
        wd_retry_or_lose(wd, rc, &err);
    else
        wd_lost(wd, rc, &err);
}

/* ---- start and stop, on the loop's thread ------------------------------------ */

typedef struct wd_call {
    redlock_lock *lock;
    redlock_lost_cb cb;
    void *arg;
    redlock_error *err;
    int rc;
} wd_call;

static void wd_lock_freed(redlock_lock *lock);

static void wd_start_on_loop(redlock_client *c, void *arg)
{
    wd_call *k = arg;
    redlock_lock *lock = k->lock;
    k->rc = rl_client_live(c, k->err);
    if (k->rc)
        return;
    k->rc = REDLOCK_EINVAL;
    if (lock->wd) {
        rl_seterr(k->err, k->rc, -1, "watchdog: one already runs for this lock");
        return;
    }
    if (lock->ttl_ms == 0 || redlock_lock_validity_ms(lock) <= 0) {
        rl_seterr(k->err, k->rc, -1,
                  "watchdog: the lock has no validity left (acquire or extend it first)");
        return;
    }
    rl_watchdog *wd = calloc(1, sizeof(*wd));
    if (!wd || rl_timer_init(&wd->timer, &c->loop, wd_on_timer, wd) != 0) {
        free(wd);
        k->rc = REDLOCK_ENOMEM;
        rl_seterr(k->err, k->rc, -1, "out of memory");
        return;
    }
    wd->c = c;
    wd->lock = lock;
    wd->cb = k->cb;
    wd->arg = k->arg;
    wd->started_us = rl_now_us();
    wd->next = c->wds;
    if (c->wds)
        c->wds->prev = wd;
    c->wds = wd;
    lock->wd = wd;
    lock->on_free = wd_lock_freed;
    wd_arm(wd);
    k->rc = 0;
}

static void wd_stop_on_loop(redlock_client *c, void *arg)
{
    (void)c;
    redlock_lock *lock = arg;
    if (lock->wd)
        wd_detach(lock->wd);
}

/* redlock_lock_free() of a watched lock: stop the watchdog first, on its loop. */
static void wd_lock_freed(redlock_lock *lock)
{
    rl_watchdog *wd = lock->wd;
    if (wd)
        rl_loop_call(wd->c, wd_stop_on_loop, lock);
}

void rl_watchdog_stop(redlock_client *c, redlock_lock *lock)
{
    wd_stop_on_loop(c, lock);
}

void rl_watchdog_stop_all(redlock_client *c)
{
    while (c->wds)
        wd_lost(c->wds, REDLOCK_ESHUTDOWN, NULL);
}

int redlock_watchdog_start(redlock_client *c, redlock_lock *lock, redlock_lost_cb lost_cb,
                           void *arg, redlock_error *reterr)
{
    if (!c || !lock || !lost_cb) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1,
                  "watchdog: client, lock and lost_cb must not be NULL");
        return REDLOCK_EINVAL;
    }
    wd_call k = { .lock = lock, .cb = lost_cb, .arg = arg, .err = reterr };
    int rc = rl_loop_call(c, wd_start_on_loop, &k);
    return rc ? rc : k.rc;
}

void redlock_watchdog_stop(redlock_client *c, redlock_lock *lock)
{
    if (c && lock)
        rl_loop_call(c, wd_stop_on_loop, lock);
}
