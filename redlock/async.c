/* async.c - the async API: every public _async call, on the caller's event loop.
 *
 * The twin of blocking.c. Each function checks that the client lives on
 * the caller's event_base (a blocking client's calls are in blocking.c),
 * then starts the kind's operation (kinds.h), which delivers its callback
 * from the loop, exactly once, through the op core (op.c). A call that
 * returns an error never calls back.
 */
#include "kinds.h"
#include "ready.h"

/* A live async client: not NULL, not a blocking one. A client being freed
 * is refused where every operation starts (rl_client_live). */
static int check_async(redlock_client *c, const char *blocking_twin, redlock_error *e)
{
    if (!c) {
        rl_seterr(e, REDLOCK_EINVAL, -1, "client is NULL");
        return REDLOCK_EINVAL;
    }
    if (c->blk) {
        rl_seterr(e, REDLOCK_EASYNC, -1,
                  "this client runs its own I/O thread (made with base == NULL): "
                  "use %s, or make it with your event_base",
                  blocking_twin);
        return REDLOCK_EASYNC;
    }
    return 0;
}

int redlock_acquire_with_async(redlock_client *c, const redlock_resource *set, size_t count,
                               const redlock_acquire_opts *opts, redlock_done_cb cb, void *arg,
                               redlock_error *reterr)
{
    int rc = check_async(c, "the blocking calls", reterr);
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
    int rc = check_async(c, "the blocking calls", reterr);
    return rc ? rc : rl_release_start(c, lock, cb, arg, reterr);
}

int redlock_extend_async(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms, redlock_done_cb cb,
                         void *arg, redlock_error *reterr)
{
    int rc = check_async(c, "the blocking calls", reterr);
    return rc ? rc : rl_extend_start(c, lock, ttl_ms, cb, arg, NULL, reterr);
}

int redlock_status_get_async(redlock_client *c, const void *resource, size_t len,
                             redlock_status_cb cb, void *arg, redlock_error *reterr)
{
    int rc = check_async(c, "the blocking calls", reterr);
    return rc ? rc : rl_status_start(c, resource, len, cb, arg, reterr);
}

int redlock_ping_async(redlock_client *c, redlock_status_cb cb, void *arg, redlock_error *reterr)
{
    int rc = check_async(c, "the blocking calls", reterr);
    return rc ? rc : rl_ping_start(c, cb, arg, reterr);
}

int redlock_ready_async(redlock_client *c, size_t min_masters, uint32_t timeout_ms,
                        redlock_ready_cb cb, void *arg, redlock_error *reterr)
{
    int rc = check_async(c, "redlock_ready()", reterr);
    return rc ? rc : rl_ready_start(c, min_masters, timeout_ms, cb, arg, reterr);
}
