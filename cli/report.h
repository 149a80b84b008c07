/* report.h - how redlock-cli shows an operation's outcome: per-master lines
 * on stderr, and the shared parts of the --json objects.
 */
#ifndef REDLOCK_CLI_REPORT_H
#define REDLOCK_CLI_REPORT_H

#include <redlock.h>

#include "json.h"

/* One stderr line per master whose vote was a failure ("ADDR: cause"):
 * as errors after a failed operation (@failed), else as warnings. With -v,
 * every master's vote and latency. */
void report_votes(const redlock_client *c, const redlock_outcome *out, int failed);

/* The one-line error for a failed @op on @resource (may be NULL), with the
 * library's message when it has one. */
void report_error(const char *op, const void *resource, size_t len, int rc,
                  const redlock_error *err, const redlock_outcome *out);

/* The same for a set of @n resources ("lock 'a', 'b' and 3 more: ..."). */
void report_error_set(const char *op, const redlock_resource *set, size_t n, int rc,
                      const redlock_error *err, const redlock_outcome *out);

/* JSON members shared by every command. */
void report_json_head(struct json *j, const char *command, int exit_code, int rc,
                      const redlock_error *err);
void report_json_resource(struct json *j, const void *resource, size_t len);
/* "resource" (the first, as for one) and "resources": [every name], each
 * with its "_hex" twin when a name is not valid UTF-8. */
void report_json_set(struct json *j, const redlock_resource *set, size_t n);
/* "quorum", "n_masters", "elapsed_us" and "masters": [{addr, vote, error,
 * latency_us, detail}] from @out. */
void report_json_votes(struct json *j, const redlock_client *c, const redlock_outcome *out);

/* The exit status for @rc, with the votes in @out (may be NULL) telling a
 * "no quorum" caused by credentials or setup (77, 78) from one caused by
 * masters down or slow (69): cli_exit_for_masters(). */
int report_exit_for(int rc, const redlock_outcome *out);

/* Number of votes of @kind in @out. */
unsigned report_count_votes(const redlock_outcome *out, int kind);

#endif
