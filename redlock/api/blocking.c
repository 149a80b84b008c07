/* blocking.c - the blocking, thread-safe API: every call an async op on the I/O thread.
 *
 * Each function checks its arguments on the caller's thread (bad input
 * costs no round trip), then hands one call to the client's I/O thread
 * (loop.c) and sleeps until the op's callback ends it. Calls from many
 * threads are in flight together and pipelined over the N connections.
 */
#include "kinds/kinds.h"
#include "core/loop.h"
#include "api/ready.h"

#include <string.h>

/* A call and what its operation needs. */
typedef struct rl_req {
    rl_call call;                /* first: the loop sees only this */
    const redlock_resource *set; /* acquire: borrowed from the caller */
    size_t count;
    rl_wait_spec w;
    const void *resource; /* status: borrowed from the caller */
    size_t len;
    uint32_t ttl_ms;
    redlock_lock *lock; /* in: release/extend; out: acquire */
    redlock_status *st; /* status/ping */
    size_t min_masters; /* ready */
    uint32_t timeout_ms;
    size_t n_up;
    bool readmit;                /* declare: readmit (ttl_ms: the fleet bound) */
    unsigned flags;              /* declare: REDLOCK_DECLARE_* */
    uint32_t bound_ms;           /* declare: the bound readmit set */
    const redlock_lock *checked; /* lock check: borrowed from the caller */
    int64_t left_ms;             /* lock check: the validity left */
} rl_req;

static rl_req *REQ(rl_call *call)
{
    return (rl_req *)(void *)call;
}

/* Acquire, release, extend: the lock comes back (acquire: the new one). */
static void on_done(redlock_client *c, int status, redlock_lock *lock, const redlock_outcome *out,
                    const redlock_error *err, void *arg)
{
    rl_req *req = arg;
    req->lock = lock;
    rl_call_done(c, &req->call, status, out, err);
}

static void on_status_done(redlock_client *c, int status, const redlock_status *st,
                           const redlock_error *err, void *arg)
{
    rl_req *req = arg;
    *req->st = *st;
    rl_call_done(c, &req->call, status, NULL, err);
}

static void on_ready(redlock_client *c, int status, size_t n_up, const redlock_error *err,
                     void *arg)
{
    rl_req *req = arg;
    req->n_up = n_up;
    rl_call_done(c, &req->call, status, NULL, err);
}

static int start_acquire(redlock_client *c, rl_call *call, redlock_error *e)
{
    rl_req *req = REQ(call);
    return rl_acquire_start(c, req->set, req->count, &req->w, on_done, req, e);
}

static int start_release(redlock_client *c, rl_call *call, redlock_error *e)
{
    rl_req *req = REQ(call);
    return rl_release_start(c, req->lock, on_done, req, e);
}

static int start_extend(redlock_client *c, rl_call *call, redlock_error *e)
{
    rl_req *req = REQ(call);
    return rl_extend_start(c, req->lock, req->ttl_ms, on_done, req, NULL, e);
}

static int start_status(redlock_client *c, rl_call *call, redlock_error *e)
{
    rl_req *req = REQ(call);
    return rl_status_start(c, req->resource, req->len, on_status_done, req, e);
}

static int start_ping(redlock_client *c, rl_call *call, redlock_error *e)
{
    rl_req *req = REQ(call);
    return rl_ping_start(c, on_status_done, req, e);
}

static void on_checked(redlock_client *c, int status, int64_t left_ms, const redlock_error *err,
                       void *arg)
{
    rl_req *req = arg;
    req->left_ms = left_ms;
    rl_call_done(c, &req->call, status, NULL, err);
}

static int start_check(redlock_client *c, rl_call *call, redlock_error *e)
{
    rl_req *req = REQ(call);
    return rl_check_start(c, req->checked, on_checked, req, e);
}

static void on_declared(redlock_client *c, int status, size_t n, uint32_t bound_ms,
                        const redlock_error *err, void *arg)
{
    rl_req *req = arg;
    req->n_up = n;
    req->bound_ms = bound_ms;
    rl_call_done(c, &req->call, status, NULL, err);
}

static int start_declare(redlock_client *c, rl_call *call, redlock_error *e)
{
    rl_req *req = REQ(call);
    return rl_declare_start(c, req->readmit, req->ttl_ms, req->flags, on_declared, req, e);
}

static int start_ready(redlock_client *c, rl_call *call, redlock_error *e)
{
    rl_req *req = REQ(call);
    return rl_ready_start(c, req->min_masters, req->timeout_ms, on_ready, req, e);
}

static int check_blocking(redlock_client *c, redlock_error *e)
{
    if (!c) {
        rl_seterr(e, REDLOCK_EINVAL, -1, "client is NULL");
        return REDLOCK_EINVAL;
    }
    if (!c->blk) {
        rl_seterr(e, REDLOCK_EASYNC, -1,
                  "this client lives on your event_base: use the _async calls "
                  "(or make the client with base == NULL)");
        return REDLOCK_EASYNC;
    }
    return 0;
}

int redlock_acquire_with(redlock_client *c, const redlock_resource *set, size_t count,
                         const redlock_acquire_opts *opts, redlock_lock **ret_lock,
                         redlock_outcome *ret_outcome, redlock_error *reterr)
{
    int rc = check_blocking(c, reterr);
    if (rc)
        return rc;
    if (!ret_lock || !opts) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "acquire: %s must not be NULL",
                  !ret_lock ? "ret_lock" : "opts");
        return REDLOCK_EINVAL;
    }
    /* Reject bad input here, on the caller's thread, with no round trip. */
    rl_req req = { .call.start = start_acquire,
                   .set = set,
                   .count = count,
                   .call.out = ret_outcome,
                   .call.err = reterr };
    rc = rl_check_set(set, count, reterr);
    if (!rc)
        rc = rl_opts_resolve(&c->cfg, opts, &req.w, reterr);
    if (!rc)
        rc = rl_loop_submit(c, &req.call);
    if (rc == 0)
        *ret_lock = req.lock;
    return rc;
}

int redlock_acquire_set(redlock_client *c, const redlock_resource *set, size_t count,
                        uint32_t ttl_ms, unsigned flags, redlock_lock **ret_lock,
                        redlock_outcome *ret_outcome, redlock_error *reterr)
{
    redlock_acquire_opts o = rl_opts_of(ttl_ms, flags);
    return redlock_acquire_with(c, set, count, &o, ret_lock, ret_outcome, reterr);
}

int redlock_acquire(redlock_client *c, const void *resource, size_t len, uint32_t ttl_ms,
                    redlock_lock **ret_lock, redlock_outcome *ret_outcome, redlock_error *reterr)
{
    redlock_resource one = { resource, len };
    return redlock_acquire_set(c, &one, 1, ttl_ms, 0, ret_lock, ret_outcome, reterr);
}

int redlock_release(redlock_client *c, redlock_lock *lock, redlock_outcome *ret_outcome,
                    redlock_error *reterr)
{
    int rc = check_blocking(c, reterr);
    if (rc)
        return rc;
    if (!lock) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "release: lock is NULL");
        return REDLOCK_EINVAL;
    }
    rl_req req = {
        .call.start = start_release, .lock = lock, .call.out = ret_outcome, .call.err = reterr
    };
    return rl_loop_submit(c, &req.call);
}

int redlock_extend(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms,
                   redlock_outcome *ret_outcome, redlock_error *reterr)
{
    int rc = check_blocking(c, reterr);
    if (rc)
        return rc;
    if (!lock) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "extend: lock is NULL");
        return REDLOCK_EINVAL;
    }
    rc = rl_check_ttl(ttl_ms, c->cfg.drift_factor, reterr);
    if (rc)
        return rc;
    rl_req req = { .call.start = start_extend,
                   .lock = lock,
                   .ttl_ms = ttl_ms,
                   .call.out = ret_outcome,
                   .call.err = reterr };
    return rl_loop_submit(c, &req.call);
}

int redlock_status_get(redlock_client *c, const void *resource, size_t len, redlock_status *ret,
                       redlock_error *reterr)
{
    int rc = check_blocking(c, reterr);
    if (rc)
        return rc;
    if (!ret) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "status: ret must not be NULL");
        return REDLOCK_EINVAL;
    }
    rc = rl_check_resource(resource, len, reterr);
    if (rc)
        return rc;
    rl_req req = {
        .call.start = start_status, .resource = resource, .len = len, .st = ret, .call.err = reterr
    };
    return rl_loop_submit(c, &req.call);
}

int redlock_lock_check(redlock_client *c, const redlock_lock *lock, int64_t *ret_left_ms,
                       redlock_error *reterr)
{
    if (ret_left_ms)
        *ret_left_ms = 0;
    int rc = check_blocking(c, reterr);
    if (rc)
        return rc;
    if (!lock) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "lock_check: lock is NULL");
        return REDLOCK_EINVAL;
    }
    rl_req req = { .call.start = start_check, .checked = lock, .call.err = reterr };
    rc = rl_loop_submit(c, &req.call);
    if (rc == 0 && ret_left_ms)
        *ret_left_ms = req.left_ms;
    return rc;
}

int redlock_ping(redlock_client *c, redlock_status *ret, redlock_error *reterr)
{
    int rc = check_blocking(c, reterr);
    if (rc)
        return rc;
    if (!ret) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "ping: ret must not be NULL");
        return REDLOCK_EINVAL;
    }
    rl_req req = { .call.start = start_ping, .st = ret, .call.err = reterr };
    return rl_loop_submit(c, &req.call);
}

int redlock_ready(redlock_client *c, size_t min_masters, uint32_t timeout_ms, size_t *ret_n_up,
                  redlock_error *reterr)
{
    int rc = check_blocking(c, reterr);
    if (rc)
        return rc;
    rl_req req = { .call.start = start_ready,
                   .min_masters = min_masters,
                   .timeout_ms = timeout_ms,
                   .call.err = reterr };
    rc = rl_loop_submit(c, &req.call);
    if (ret_n_up)
        *ret_n_up = req.n_up;
    return rc;
}

int redlock_declare_empty_with(redlock_client *c, unsigned flags, size_t *ret_declared,
                               redlock_error *reterr)
{
    int rc = check_blocking(c, reterr);
    if (!rc)
        rc = rl_declare_check(false, 0, flags, reterr);
    if (rc)
        return rc;
    rl_req req = { .call.start = start_declare, .call.err = reterr, .flags = flags };
    rc = rl_loop_submit(c, &req.call);
    if (ret_declared && (rc == 0 || rc == REDLOCK_ENOQUORUM || rc == REDLOCK_EINVAL))
        *ret_declared = req.n_up;
    return rc;
}

int redlock_declare_empty(redlock_client *c, size_t *ret_declared, redlock_error *reterr)
{
    return redlock_declare_empty_with(c, 0, ret_declared, reterr);
}

int redlock_readmit_with(redlock_client *c, uint32_t max_ttl_ms, unsigned flags,
                         size_t *ret_readmitted, uint32_t *ret_bound_ms, redlock_error *reterr)
{
    int rc = check_blocking(c, reterr);
    if (!rc)
        rc = rl_declare_check(true, max_ttl_ms, flags, reterr);
    if (rc)
        return rc;
    rl_req req = { .call.start = start_declare,
                   .call.err = reterr,
                   .readmit = true,
                   .ttl_ms = max_ttl_ms,
                   .flags = flags };
    rc = rl_loop_submit(c, &req.call);
    if (ret_readmitted && (rc == 0 || rc == REDLOCK_ENOQUORUM))
        *ret_readmitted = req.n_up;
    if (ret_bound_ms)
        *ret_bound_ms = req.bound_ms; /* 0 unless it succeeded (declare.c) */
    return rc;
}

int redlock_readmit(redlock_client *c, uint32_t max_ttl_ms, size_t *ret_readmitted,
                    redlock_error *reterr)
{
    return redlock_readmit_with(c, max_ttl_ms, 0, ret_readmitted, NULL, reterr);
}
