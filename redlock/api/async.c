/* async.c - the async API: every public _async call, on the caller's event loop.
 *
 * The twin of blocking.c. Each function checks what only the async API
 * has (the client lives on the caller's event_base, a callback to run, the
 * lock), then starts the kind's operation (kinds.h), which checks the rest
 * for both APIs and is delivered from the loop, exactly once, by the op
 * core (op.c). A call that returns an error never calls back.
 */
#include "kinds/kinds.h"
#include "api/ready.h"

/* A live async client (not NULL, not a blocking one: @twin names the call
 * to use there) and a callback to run. A client being freed is refused
 * where every operation starts (rl_client_live). */
static int check_async(redlock_client *c, bool has_cb, const char *what, const char *twin,
                       redlock_error *e)
{
    if (!c) {
        rl_seterr(e, REDLOCK_EINVAL, -1, "client is NULL");
        return REDLOCK_EINVAL;
    }
    if (c->blk) {
        rl_seterr(e, REDLOCK_EASYNC, -1,
                  "this client runs its own I/O thread (made with base == NULL): "
                  "use %s, or make it with your event_base",
                  twin);
        return REDLOCK_EASYNC;
    }
    if (!has_cb) {
        rl_seterr(e, REDLOCK_EINVAL, -1, "%s: callback is NULL", what);
        return REDLOCK_EINVAL;
    }
    return 0;
}

/* Release, extend and check: also a lock. */
static int check_lock(const redlock_lock *lock, const char *what, redlock_error *e)
{
    if (lock)
        return 0;
    rl_seterr(e, REDLOCK_EINVAL, -1, "%s: lock is NULL", what);
    return REDLOCK_EINVAL;
}

int redlock_acquire_with_async(redlock_client *c, const redlock_resource *set, size_t count,
                               const redlock_acquire_opts *opts, redlock_done_cb cb, void *arg,
                               redlock_error *reterr)
{
    int rc = check_async(c, cb != NULL, "acquire", "redlock_acquire_with()", reterr);
    rl_wait_spec w;
    if (!rc && !opts) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1,
                  "acquire: opts is NULL (fill them with "
                  "redlock_acquire_opts_init() and set ttl_ms)");
        rc = REDLOCK_EINVAL;
    }
    if (!rc)
        rc = rl_opts_resolve(&c->cfg, opts, &w, reterr);
    return rc ? rc : rl_acquire_start(c, set, count, &w, cb, arg, reterr);
}

/* The calls of 0.1: the client's wait, ttl and flags as arguments. */
int redlock_acquire_set_async(redlock_client *c, const redlock_resource *set, size_t count,
                              uint32_t ttl_ms, unsigned flags, redlock_done_cb cb, void *arg,
                              redlock_error *reterr)
{
    redlock_acquire_opts o = rl_opts_of(ttl_ms, flags);
    return redlock_acquire_with_async(c, set, count, &o, cb, arg, reterr);
}

int redlock_acquire_async(redlock_client *c, const void *resource, size_t len, uint32_t ttl_ms,
                          redlock_done_cb cb, void *arg, redlock_error *reterr)
{
    redlock_resource one = { resource, len };
    return redlock_acquire_set_async(c, &one, 1, ttl_ms, 0, cb, arg, reterr);
}

int redlock_release_async(redlock_client *c, redlock_lock *lock, redlock_done_cb cb, void *arg,
                          redlock_error *reterr)
{
    int rc = check_async(c, cb != NULL, "release", "redlock_release()", reterr);
    if (!rc)
        rc = check_lock(lock, "release", reterr);
    return rc ? rc : rl_release_start(c, lock, cb, arg, reterr);
}

int redlock_extend_async(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms, redlock_done_cb cb,
                         void *arg, redlock_error *reterr)
{
    int rc = check_async(c, cb != NULL, "extend", "redlock_extend()", reterr);
    if (!rc)
        rc = check_lock(lock, "extend", reterr);
    return rc ? rc : rl_extend_start(c, lock, ttl_ms, cb, arg, NULL, reterr);
}

int redlock_status_get_async(redlock_client *c, const void *resource, size_t len,
                             redlock_status_cb cb, void *arg, redlock_error *reterr)
{
    int rc = check_async(c, cb != NULL, "status", "redlock_status_get()", reterr);
    return rc ? rc : rl_status_start(c, resource, len, cb, arg, reterr);
}

int redlock_ping_async(redlock_client *c, redlock_status_cb cb, void *arg, redlock_error *reterr)
{
    int rc = check_async(c, cb != NULL, "ping", "redlock_ping()", reterr);
    return rc ? rc : rl_ping_start(c, cb, arg, reterr);
}

int redlock_ready_async(redlock_client *c, size_t min_masters, uint32_t timeout_ms,
                        redlock_ready_cb cb, void *arg, redlock_error *reterr)
{
    int rc = check_async(c, cb != NULL, "ready", "redlock_ready()", reterr);
    return rc ? rc : rl_ready_start(c, min_masters, timeout_ms, cb, arg, reterr);
}

int redlock_lock_check_async(redlock_client *c, const redlock_lock *lock, redlock_check_cb cb,
                             void *arg, redlock_error *reterr)
{
    int rc = check_async(c, cb != NULL, "lock_check", "redlock_lock_check()", reterr);
    if (!rc)
        rc = check_lock(lock, "lock_check", reterr);
    return rc ? rc : rl_check_start(c, lock, cb, arg, reterr);
}

int redlock_declare_empty_async(redlock_client *c, unsigned flags, redlock_declare_cb cb, void *arg,
                                redlock_error *reterr)
{
    int rc = check_async(c, cb != NULL, "declare-empty", "redlock_declare_empty_with()", reterr);
    return rc ? rc : rl_declare_start(c, false, 0, flags, cb, arg, reterr);
}

int redlock_readmit_async(redlock_client *c, uint32_t max_ttl_ms, unsigned flags,
                          redlock_declare_cb cb, void *arg, redlock_error *reterr)
{
    int rc = check_async(c, cb != NULL, "readmit", "redlock_readmit_with()", reterr);
    return rc ? rc : rl_declare_start(c, true, max_ttl_ms, flags, cb, arg, reterr);
}
