/* guard.h - the memory guard's replies read once for every kind that asks
 * (wire/guard.c): a master's LEASES report, for the settle (memory.c) and
 * the operator's word (declare.c), and its answer to that word (DECLARE).
 * The shapes: docs/wire.md, "memory guard".
 */
#ifndef REDLOCK_WIRE_GUARD_H
#define REDLOCK_WIRE_GUARD_H

#include "wire/wire.h"

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

/* One master's answer to the operator's word (DECLARE: declare-empty or
 * readmit). */
typedef enum rl_word_kind {
    RL_WORD_COUNTS, /* its memory counts: by this word (@fresh), or already */
    RL_WORD_WAIT,   /* reborn too lately to count yet: look again in @wait_ms */
    RL_WORD_HOLDS,  /* holds @keys keys besides its own: not new, left as it is */
    RL_WORD_BAD,    /* an error reply, or what DECLARE never answers: @bad */
} rl_word_kind;

typedef struct rl_word {
    rl_word_kind kind;
    bool fresh;       /* COUNTS: this word made it count (1), not before (0) */
    uint32_t wait_ms; /* WAIT: 0..600 000 */
    long long keys;   /* HOLDS */
    rl_answer bad;    /* BAD */
} rl_word;

/* Read @r, @n's answer to DECLARE, into @w. */
void rl_wire_declare_read(rl_word *w, const rl_node *n, const rl_reply *r);

#endif
