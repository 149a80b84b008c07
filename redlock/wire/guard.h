/* guard.h - the memory guard's replies read once for every kind that asks
 * (wire/guard.c): a master's LEASES report, for the settle (memory.c) and
 * the operator's word (declare.c). The shapes: docs/wire.md, "memory
 * guard: settle".
 */
#ifndef REDLOCK_WIRE_GUARD_H
#define REDLOCK_WIRE_GUARD_H

#include "transport/transport-reply.h"

#include <stdbool.h>
#include <stdint.h>

/* One master's LEASES report: {1, left, maxttl, fence[, token]} when its
 * memory counts, {0, 0, maxttl, fence, "", since} when it does not. */
typedef struct rl_leases {
    bool counts;        /* the master's memory counts now */
    uint32_t left_ms;   /* ms left of the latest live lease end there */
    uint32_t maxttl_ms; /* the longest ttl granted there */
    uint64_t fence;     /* its fence counter */
    const char *token;  /* counts: the latest lease's token, "" if not said (in the reply) */
    int64_t since_ms;   /* does not count: ms since its rebirth; -1 not said */
} rl_leases;

/* Read @r into @l. False for anything else (an error, a shape LEASES
 * never answers, a number out of range): the report is ignored, as one
 * that never came. */
bool rl_wire_leases_read(rl_leases *l, const rl_reply *r);

#endif
