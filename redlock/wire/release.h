/* release.h - what a release sends each master, and what its reply means (wire/release.c). */
#ifndef REDLOCK_WIRE_RELEASE_H
#define REDLOCK_WIRE_RELEASE_H

#include "base/cmd.h"
#include "wire/wire.h"

/* What one release round is asked to do. */
typedef struct rl_release_ask {
    const rl_keys *k;  /* the lease's keys: one lock, or a set */
    const char *token; /* the lease's token */
    const char *skip;  /* "", or this client's channel: the key goes to another client's waiter */
    uint32_t quiet;    /* masters that granted the lease by the fast path with nobody queued,
                          or (the guess) were still to answer when it was granted */
    uint32_t mask;     /* the masters this round asks */
} rl_release_ask;

/* The forms of one round: the script, but to the masters of @native_mask
 * the native compare-and-delete. One native kind per round, so that a
 * fleet with both (DELIFEQ first) gives the others the script. */
typedef struct rl_release_plan {
    rl_cmd script;        /* (a) the release script (docs/wire.md, "release") */
    rl_cmd native;        /* (b) ZREM and DELIFEQ or DELEX IFEQ; built when @kind is */
    unsigned kind;        /* RL_NATIVE_DELIFEQ or RL_NATIVE_DELEX; 0: the script to all */
    uint32_t native_mask; /* the masters of the round that get @native */
} rl_release_plan;

/* Plan a round from @ask and what each of @nodes (@n) has natively now. */
void rl_wire_release_plan(rl_release_plan *p, const rl_node *nodes, uint32_t n,
                          const rl_release_ask *ask);
/* A master sent @native answered @r: DONE (1), or an answer with @redo set
 * (the slot sends the script instead) and, where the master lacks what it
 * claimed, @refused; or, an error that is not about the command (OOM,
 * LOADING), BAD with no redo: that reply is the master's answer. */
void rl_wire_release_read_native(rl_answer *a, const rl_node *n, const rl_reply *r);
/* The answer a release round delivers for master @n: the script's, or the
 * native delete's that asked for no redo (its 1 means what the script's
 * does: released). */
void rl_wire_release_read(rl_answer *a, const rl_node *n, const rl_reply *r);

#endif
