/* acquire.h - taking a lock for `lock` and `run`: how long to wait is said
 * per call (--wait), and SIGINT, SIGTERM or SIGHUP cancel the wait. */
#ifndef REDLOCK_CLI_ACQUIRE_H
#define REDLOCK_CLI_ACQUIRE_H

#include <redlock.h>

#include "json.h"
#include "opts.h"

/* Returned by cli_acquire() instead of a REDLOCK_E* code when a signal
 * cancelled the wait (st->signal says which). Nothing is held then. */
#define CLI_ACQUIRE_INTERRUPTED 1

struct cli_acquire_stats {
    unsigned attempts;  /* acquire attempts, over all of --wait */
    uint64_t waited_us; /* from the call to the outcome */
    int signal;         /* CLI_ACQUIRE_INTERRUPTED: the signal */
};

/* Acquire o->set (all or none; fenced with o->fence) for o->ttl_ms, in
 * one call of the library, waiting as --wait says (without it: --retry
 * polls, none by default), polling every --retry-delay plus jitter when no
 * release wakes us. A terminating signal (cli_signals_setup() must have
 * run) cancels the wait: the library releases the attempt in flight on
 * the masters, and so do we if the lock was ours by then.
 * Return: 0, a REDLOCK_E* code, or CLI_ACQUIRE_INTERRUPTED. */
int cli_acquire(const struct cli_opts *o, redlock_client *c, redlock_lock **ret_lock,
                redlock_outcome *out, redlock_error *err, struct cli_acquire_stats *st);

/* Free what cli_acquire() keeps until the client is freed (call after
 * redlock_client_free()). */
void cli_acquire_cleanup(void);

/* The exit status for cli_acquire()'s @rc: the table (cli.h), with
 * -E/--conflict-exit-code for a lock held elsewhere. */
int cli_acquire_exit(const struct cli_opts *o, int rc, const redlock_outcome *out);

/* Nothing to say on stderr for cli_acquire()'s @rc: a conflict with -E
 * given and no -v, as flock -n -E N is silent. JSON still goes to stdout. */
int cli_acquire_quiet(const struct cli_opts *o, int rc);

/* After CLI_ACQUIRE_INTERRUPTED: the message on stderr, and @err as the
 * JSON's error (ECANCELED). Return: the exit status, 128 + the signal, as
 * a shell reports a command a signal ended. */
int cli_acquire_interrupted(const struct cli_opts *o, const struct cli_acquire_stats *st,
                            redlock_error *err);

/* After a failed acquire's message: what the library's line cannot say.
 * Masters with no memory marker that kept the quorum out (new, never
 * declared: name `redlock-cli declare-empty` and when it is safe), and for
 * a set refused as held, which members are held and by which token (a
 * status per member, on this path only). Prints with cli_error(). */
void cli_acquire_explain(const struct cli_opts *o, redlock_client *c, int rc,
                         const redlock_outcome *out);

/* The members of a lock's or run's JSON object that say how the lock was
 * taken: token, fence, ttl_ms, validity_ms, acquired_on, attempts,
 * waited_ms, and the votes. @lock is NULL when it was not taken. */
void cli_acquire_json(struct json *j, redlock_client *c, const struct cli_opts *o,
                      const redlock_lock *lock, const redlock_outcome *out,
                      const struct cli_acquire_stats *st);

#endif
