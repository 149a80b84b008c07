/* waiting.c - how a contender waits for a lock someone else holds.
 *
 * The one place that maps the bench's wait onto the library: a deadline
 * per call (redlock_acquire_with: give up wait_ms after the call), the
 * polling fallback's delay and jitter per call too, and pub/sub wake-ups
 * on the client (pubsub_wait = 0 is the polling baseline every contention
 * row is measured against). The scenarios never set these themselves.
 */
#include "bench.h"

#include <string.h>

struct wait_policy wait_policy_default(int pubsub)
{
    struct wait_policy w = { config.wait_ms, config.retry_delay_ms, config.retry_jitter_ms, pubsub,
                             0 };

    return w;
}

/* Whether the client listens for wake-ups at all is the client's setting;
 * so is the wait of plain redlock_acquire() (by_retries): as many retries
 * of delay + jitter as fill the deadline the other rows use. */
void wait_config(const struct wait_policy *w, redlock_config *cfg)
{
    uint32_t poll = w->retry_delay_ms + w->retry_jitter_ms;

    cfg->pubsub_wait = w->pubsub;
    if (w->by_retries) {
        cfg->retry_count = w->wait_ms / (poll > 0 ? poll : 1);
        cfg->retry_delay_ms = w->retry_delay_ms;
        cfg->retry_jitter_ms = w->retry_jitter_ms;
    }
}

static void wait_opts(const struct wait_policy *w, uint32_t ttl_ms, redlock_acquire_opts *o)
{
    redlock_acquire_opts_init(o);
    o->ttl_ms = ttl_ms;
    if (w->by_retries)
        return; /* the client's wait (wait_config) */
    o->wait_ms = w->wait_ms;
    o->retry_delay_ms = w->retry_delay_ms;
    o->retry_jitter_ms = w->retry_jitter_ms;
}

/* Blocking; the client was made with wait_config(@w). */
int wait_acquire(redlock_client *c, const struct wait_policy *w, const char *res, uint32_t ttl_ms,
                 redlock_lock **lock)
{
    redlock_resource one = { res, strlen(res) };
    redlock_acquire_opts o;

    if (w->by_retries)
        return redlock_acquire(c, res, strlen(res), ttl_ms, lock, NULL, NULL);
    wait_opts(w, ttl_ms, &o);
    return redlock_acquire_with(c, &one, 1, &o, lock, NULL, NULL);
}

int wait_acquire_async(redlock_client *c, const struct wait_policy *w, const char *res,
                       uint32_t ttl_ms, redlock_done_cb cb, void *arg)
{
    redlock_resource one = { res, strlen(res) };
    redlock_acquire_opts o;

    wait_opts(w, ttl_ms, &o);
    return redlock_acquire_with_async(c, &one, 1, &o, cb, arg, NULL);
}

void wait_json(struct result *r, const struct wait_policy *w)
{
    json_kv_cstr(&r->xj, "wait", w->by_retries ? "retries" : "deadline");
    if (w->by_retries) {
        uint32_t poll = w->retry_delay_ms + w->retry_jitter_ms;
        json_kv_u64(&r->xj, "retry_count", w->wait_ms / (poll > 0 ? poll : 1));
    }
    json_kv_u64(&r->xj, "wait_ms", w->wait_ms);
    json_kv_u64(&r->xj, "retry_delay_ms", w->retry_delay_ms);
    json_kv_u64(&r->xj, "retry_jitter_ms", w->retry_jitter_ms);
    json_kv_bool(&r->xj, "pubsub_wait", w->pubsub);
}
