/* acquire.h - taking a lock for `lock` and `run`, with --wait. */
#ifndef REDLOCK_CLI_ACQUIRE_H
#define REDLOCK_CLI_ACQUIRE_H

#include <redlock.h>

#include "json.h"
#include "opts.h"

/* Returned by cli_acquire() instead of a REDLOCK_E* code when a signal
 * asked us to stop while waiting between attempts (st->signal says which). */
#define CLI_ACQUIRE_INTERRUPTED 1

struct cli_acquire_stats {
    unsigned attempts;     /* acquire attempts, over all of --wait */
    uint64_t waited_us;    /* from the first attempt to the outcome */
    int signal;            /* CLI_ACQUIRE_INTERRUPTED: the signal */
};

/* How `run` tells a wait to stop: @fd becomes readable when a signal came,
 * and signal() says whether one that ends us did (draining @fd: a SIGCONT
 * after a ^Z, say, wakes the wait but does not end it). */
struct cli_abort {
    int fd;
    int (*signal)(void);   /* the terminating signal that came, or 0 */
};

/* Acquire o->set (all or none; fenced with o->fence) for o->ttl_ms. With
 * o->wait_ms > 0, call again while the failure is one that can pass (held
 * elsewhere, no quorum, too slow), until the deadline; the library waits
 * between attempts inside each call (see acquire.c), woken by releases. The
 * last attempt's outcome is what is reported. @ab (or NULL) is checked
 * between calls. Return: 0, a REDLOCK_E* code, or CLI_ACQUIRE_INTERRUPTED. */
int cli_acquire(const struct cli_opts *o, redlock_client *c, const struct cli_abort *ab,
                redlock_lock **ret_lock, redlock_outcome *out, redlock_error *err,
                struct cli_acquire_stats *st);

/* The exit status for cli_acquire()'s @rc: the table (cli.h), with
 * -E/--conflict-exit-code for a lock held elsewhere. */
int cli_acquire_exit(const struct cli_opts *o, int rc, const redlock_outcome *out);

/* The members of a lock's or run's JSON object that say how the lock was
 * taken: token, fence, ttl_ms, validity_ms, acquired_on, attempts,
 * waited_ms, and the votes. @lock is NULL when it was not taken. */
void cli_acquire_json(struct json *j, redlock_client *c, const struct cli_opts *o,
                      const redlock_lock *lock, const redlock_outcome *out,
                      const struct cli_acquire_stats *st);

/* The client's retry_count and retry_delay_ms for these options: --retry and
 * --retry-delay, but with --wait at least one retry per call, and a delay no
 * longer than the wait. */
uint32_t cli_acquire_retry_count(const struct cli_opts *o);
uint32_t cli_acquire_retry_delay(const struct cli_opts *o);

#endif
