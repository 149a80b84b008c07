/* acquire.c - acquire with --wait: one library attempt at a time, our own
 * deadline and jittered sleep between attempts.
 *
 * The library's own retries (--retry) happen inside each attempt; --wait is
 * a deadline on top, so a script can say "wait up to 10 minutes" without
 * computing retry counts. Jitter spreads racing waiters so they do not keep
 * splitting the votes between them.
 */
#include "acquire.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "cli.h"

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

/* Sleep @us, or less if @fd becomes readable. Return: 1 if it did. */
static int sleep_or_fd(int fd, uint64_t us)
{
    if (fd < 0) {
        struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000};

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        return 0;
    }
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, (int)((us + 999) / 1000));

        if (r > 0)
            return 1;
        if (r == 0 || errno != EINTR)
            return 0;
    }
}

int cli_acquire(const struct cli_opts *o, redlock_client *c, int abort_fd,
                redlock_lock **ret_lock, redlock_outcome *out, redlock_error *err,
                struct cli_acquire_stats *st)
{
    uint64_t start = cli_now_us();
    uint64_t deadline = start + o->wait_ms * 1000u;
    int rc;

    memset(st, 0, sizeof(*st));
    for (;;) {
        uint64_t now, delay;

        memset(out, 0, sizeof(*out));
        memset(err, 0, sizeof(*err));
        rc = redlock_acquire(c, o->resource, o->resource_len, o->ttl_ms, ret_lock, out, err);
        st->attempts += out->attempts > 0 ? out->attempts : 1;
        now = cli_now_us();
        if (rc == 0 || o->wait_ms == 0 || !retryable(rc) || now >= deadline)
            break;
        delay = (uint64_t)o->retry_delay_ms * 1000u +
                (uint64_t)cli_jitter(o->retry_delay_ms / 2) * 1000u;
        if (delay > deadline - now)
            delay = deadline - now;
        cli_note("attempt %u: %s; retrying in %llu ms", st->attempts, redlock_strerror(rc),
                 (unsigned long long)(delay / 1000u));
        if (sleep_or_fd(abort_fd, delay)) {
            st->waited_us = cli_now_us() - start;
            return CLI_ACQUIRE_INTERRUPTED;
        }
    }
    st->waited_us = cli_now_us() - start;
    return rc;
}
