/* waiting.c - how a contender waits for a lock someone else holds.
 *
 * The one place that maps the bench's wait (give up after about wait_ms,
 * retry delay and jitter, pub/sub wake-ups on or off) onto the library.
 * Today the library takes it per client: a retry count in redlock_config,
 * so the wait becomes a count of attempts. When the library takes a wait
 * per call (a deadline and cancel, issue 10), wait_config() and the two
 * acquire calls below change and the scenarios do not.
 */
#include "bench.h"

#include <string.h>

struct wait_policy wait_policy_default(int pubsub)
{
    struct wait_policy w = { config.wait_ms, config.retry_delay_ms, config.retry_jitter_ms,
                             pubsub };

    return w;
}

/* Attempts that fill the wait if every one waited out its retry delay:
 * the mean spacing is delay + jitter/2. Each pub/sub wake-up also costs
 * one today, so a woken waiter can run out long before wait_ms: that is
 * what the failed column then shows. */
uint32_t wait_retry_count(const struct wait_policy *w)
{
    double spacing = (double)w->retry_delay_ms + (double)w->retry_jitter_ms / 2.0;
    double n = (double)w->wait_ms / (spacing > 0.5 ? spacing : 0.5);

    return n > 1000000.0 ? 1000000u : (uint32_t)n;
}

void wait_config(const struct wait_policy *w, redlock_config *cfg)
{
    cfg->retry_count = wait_retry_count(w);
    cfg->retry_delay_ms = w->retry_delay_ms;
    cfg->retry_jitter_ms = w->retry_jitter_ms;
    cfg->pubsub_wait = w->pubsub;
}

/* Blocking; the client was made with wait_config(@w). @attempts: how many
 * attempts the call made (1 + retries), or 0 if unknown. */
int wait_acquire(redlock_client *c, const struct wait_policy *w, const char *res, uint32_t ttl_ms,
                 redlock_lock **lock, uint32_t *attempts)
{
    redlock_outcome out;
    int rc;

    (void)w;
    memset(&out, 0, sizeof(out));
    rc = redlock_acquire(c, res, strlen(res), ttl_ms, lock, &out, NULL);
    *attempts = out.attempts;
    return rc;
}

int wait_acquire_async(redlock_client *c, const struct wait_policy *w, const char *res,
                       uint32_t ttl_ms, redlock_acquire_cb cb, void *arg)
{
    (void)w;
    return redlock_acquire_async(c, res, strlen(res), ttl_ms, cb, arg, NULL);
}

void wait_json(struct result *r, const struct wait_policy *w)
{
    result_extra(r, ",\"wait_ms\":%u,\"retry_count\":%u,\"retry_delay_ms\":%u,"
                 "\"retry_jitter_ms\":%u,\"pubsub_wait\":%s", w->wait_ms, wait_retry_count(w),
                 w->retry_delay_ms, w->retry_jitter_ms, w->pubsub ? "true" : "false");
}
