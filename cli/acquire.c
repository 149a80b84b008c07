/* acquire.c - acquire with --wait: a deadline on top of the library's own
 * retries.
 *
 * The waiting itself happens inside the library: with --wait, every call
 * makes at least one retry (retry_count >= 1, retry_delay = --retry-delay),
 * and while it waits between attempts it listens for the holder's release
 * on pub/sub (config.pubsub_wait, on unless --no-pubsub), so a waiter gets
 * the lock about one round trip after the release instead of up to one
 * retry delay later. Sleeping here instead would defeat that: nobody would
 * be listening. This loop only keeps calling until the deadline, so a
 * script can say "wait up to 10 minutes" without computing retry counts;
 * each call lasts at most one retry delay plus jitter (plus the attempts),
 * which bounds how late past the deadline we give up, and how long a signal
 * waits (`run`) before it ends the wait.
 */
#include "acquire.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "report.h"

/* Failures that another attempt may not see: the holder may release, a
 * master may come back. Setup errors (AUTH, WRONGTYPE, bad argument) will
 * not pass by waiting. */
static int retryable(int rc)
{
    switch (rc) {
    case REDLOCK_ECONFLICT:
    case REDLOCK_ENOQUORUM:
    case REDLOCK_EEXPIRED:
    case REDLOCK_ETIMEOUT:
    case REDLOCK_ECONNECT:
    case REDLOCK_EBUSY:
        return 1;
    default:
        return 0;
    }
}

/* Failures the library itself retried, having waited between attempts
 * (acquire.c in the library): calling again at once is not a busy loop. */
static int waited_in_library(int rc)
{
    return rc == REDLOCK_ECONFLICT || rc == REDLOCK_ENOQUORUM || rc == REDLOCK_EEXPIRED;
}

/* Sleep @us, or less if @ab asks us to stop. Return: 1 if it did (the
 * signal in st->signal). */
static int sleep_or_abort(const struct cli_abort *ab, uint64_t us, struct cli_acquire_stats *st)
{
    uint64_t deadline = cli_now_us() + us;

    if (ab == NULL) {
        struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000};

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        return 0;
    }
    for (;;) {
        struct pollfd p = {.fd = ab->fd, .events = POLLIN};
        uint64_t now = cli_now_us();
        int r = poll(&p, 1, now >= deadline ? 0 : (int)((deadline - now + 999) / 1000));

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        st->signal = ab->signal();
        if (st->signal != 0)
            return 1;
        if (cli_now_us() >= deadline)
            return 0;
    }
}

static int acquire_once(const struct cli_opts *o, redlock_client *c, redlock_lock **ret_lock,
                        redlock_outcome *out, redlock_error *err)
{
    if (o->n_resources == 1 && !o->fence)
        return redlock_acquire(c, o->set[0].name, o->set[0].len, o->ttl_ms, ret_lock, out, err);
    return redlock_acquire_set(c, o->set, o->n_resources, o->ttl_ms,
                               o->fence ? REDLOCK_FENCE : 0, ret_lock, out, err);
}

uint32_t cli_acquire_retry_count(const struct cli_opts *o)
{
    if (o->wait_ms == 0)
        return o->retry;
    return o->retry > 0 ? o->retry : 1;
}

uint32_t cli_acquire_retry_delay(const struct cli_opts *o)
{
    /* A wait shorter than the delay: do not overshoot it by a whole delay. */
    if (o->wait_ms > 0 && o->wait_ms < o->retry_delay_ms)
        return (uint32_t)o->wait_ms;
    return o->retry_delay_ms;
}

int cli_acquire(const struct cli_opts *o, redlock_client *c, const struct cli_abort *ab,
                redlock_lock **ret_lock, redlock_outcome *out, redlock_error *err,
                struct cli_acquire_stats *st)
{
    uint64_t start = cli_now_us();
    uint64_t deadline = start + o->wait_ms * 1000u;
    uint32_t delay_ms = cli_acquire_retry_delay(o);
    int rc;

    memset(st, 0, sizeof(*st));
    for (;;) {
        uint64_t now, delay;

        memset(out, 0, sizeof(*out));
        memset(err, 0, sizeof(*err));
        rc = acquire_once(o, c, ret_lock, out, err);
        st->attempts += out->attempts > 0 ? out->attempts : 1;
        now = cli_now_us();
        if (rc == 0 || o->wait_ms == 0 || !retryable(rc) || now >= deadline)
            break;
        if (ab != NULL && sleep_or_abort(ab, 0, st)) {
            st->waited_us = cli_now_us() - start;
            return CLI_ACQUIRE_INTERRUPTED;
        }
        if (waited_in_library(rc)) {
            cli_note("attempt %u: %s; still waiting, %llu ms left", st->attempts,
                     redlock_strerror(rc), (unsigned long long)((deadline - now) / 1000u));
            continue;
        }
        delay = (uint64_t)delay_ms * 1000u + (uint64_t)cli_jitter(delay_ms / 2) * 1000u;
        if (delay > deadline - now)
            delay = deadline - now;
        cli_note("attempt %u: %s; retrying in %llu ms", st->attempts, redlock_strerror(rc),
                 (unsigned long long)(delay / 1000u));
        if (sleep_or_abort(ab, delay, st)) {
            st->waited_us = cli_now_us() - start;
            return CLI_ACQUIRE_INTERRUPTED;
        }
    }
    st->waited_us = cli_now_us() - start;
    return rc;
}

int cli_acquire_exit(const struct cli_opts *o, int rc, const redlock_outcome *out)
{
    /* flock(1)'s -E: a cron job may skip quietly (run -E 0), or tell a
     * conflict from its CMD's own 75. */
    if (rc == REDLOCK_ECONFLICT)
        return (int)o->conflict_exit;
    return report_exit_for(rc, out);
}

void cli_acquire_json(struct json *j, redlock_client *c, const struct cli_opts *o,
                      const redlock_lock *lock, const redlock_outcome *out,
                      const struct cli_acquire_stats *st)
{
    report_json_set(j, o->set, o->n_resources);
    json_key(j, "token");
    json_cstr(j, lock ? redlock_lock_token(lock) : NULL);
    json_key(j, "fence");
    if (lock != NULL && o->fence)
        json_u64(j, redlock_lock_fence(lock));
    else
        json_null(j);
    json_key(j, "ttl_ms");
    json_u64(j, o->ttl_ms);
    json_key(j, "validity_ms");
    json_i64(j, lock ? out->validity_ms : 0);
    json_key(j, "acquired_on");
    json_u64(j, lock ? out->n_ok : 0);
    json_key(j, "attempts");
    json_u64(j, st->attempts);
    json_key(j, "waited_ms");
    json_u64(j, st->waited_us / 1000u);
    report_json_votes(j, c, out);
}
