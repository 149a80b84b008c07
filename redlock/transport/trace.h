/* trace.h - the library's own protocol trace (trace.c says the format).
 *
 * Off unless REDLOCK_TRACE names a file when a client is created; then
 * every step of the protocol the client takes is one line appended to it,
 * which model/trace-check.py replays against the model's rules. Off, each
 * trace point costs one branch on a NULL pointer (RL_TRACING).
 */
#ifndef REDLOCK_TRACE_H
#define REDLOCK_TRACE_H

#include "base/common.h"
#include "transport/transport-types.h"

#include <stdarg.h>

typedef struct rl_trace rl_trace;

#define RL_TRACING(t) __builtin_expect((t) != NULL, 0)

/* The client's trace, from REDLOCK_TRACE (read here, once per client), or
 * NULL: unset, empty, or a file that cannot be opened (said on stderr). The
 * first line (HELLO) says who the client is: its masters, quorum, drift
 * factor and whether the memory guard is on. */
rl_trace *rl_trace_open(const char *masters, uint32_t n, uint32_t quorum, double drift, bool guard,
                        const char *prefix);
void rl_trace_close(rl_trace *t);

/* A fresh id for an op or a fanout (1, 2, ...; 0 means none). */
uint32_t rl_trace_id(rl_trace *t);

/* One line stamped @at (the client's monotonic clock, µs): @ev, then
 * " key=value" pairs as formatted (values escaped by the caller). */
void rl_trace_emit(rl_trace *t, rl_monotime at, const char *ev, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* @s (@len bytes) escaped for a value: no space, '=', '%' or control byte
 * survives as such (%XX); at most @cap - 1 bytes out, cut at 48 input
 * bytes. Returns @out. */
const char *rl_trace_esc(char *out, size_t cap, const char *s, size_t len);

/* A command @kind sent to master @idx (the fanout's arguments, decoded by
 * kind into named values), and the reply as read (raw=, a compact form). */
void rl_trace_request(rl_trace *t, uint32_t idx, uint32_t op, uint32_t fid, int script, int nparts,
                      bool pipelined, int argc, const char *const *argv, const size_t *len);
void rl_trace_reply(rl_trace *t, uint32_t idx, uint32_t op, uint32_t fid, const char *kind,
                    bool late, const rl_reply *r, int err);

/* The kind name rl_trace_request gives a command (for the reply's line). */
const char *rl_trace_kind(int script, int nparts, bool pipelined, int argc, const char *const *argv,
                          const size_t *len);

#endif
