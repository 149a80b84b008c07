/* acquire.h - what an acquire round sends each master, and what one
 * master's answer means, in each form (wire/acquire.c): plain SET NX PX,
 * the fast path's transaction, the acquire script or PASS. The shapes:
 * docs/wire.md, "acquire".
 */
#ifndef REDLOCK_WIRE_ACQUIRE_H
#define REDLOCK_WIRE_ACQUIRE_H

#include "base/cmd.h"
#include "wire/wire.h"

/* What one attempt asks, beside its arguments (cmd.h). */
typedef struct rl_acquire_ask {
    const rl_keys *k;            /* the keys: one lock, or a set */
    uint32_t nres;               /* how many resources */
    const rl_acquire_args *args; /* the script's arguments */
    rl_monotime start;           /* the attempt's start: each fast master's lease end */
    double drift;                /* the clients' drift factor, for the same */
} rl_acquire_ask;

/* The second form a round may carry beside the script. */
typedef enum rl_acquire_alt {
    RL_ALT_NONE, /* every master gets @main */
    RL_ALT_FAST, /* the fast path's transaction, to the masters of @alt_mask */
    RL_ALT_PASS, /* PASS, to the masters of @alt_mask; {-4}: the script, once */
} rl_acquire_alt;

/* One round's forms. @main is the acquire script, or SET NX PX when the
 * guard is off and nothing else is asked; not built when every master gets
 * the fast path (RL_ALT_FAST, @alt_mask all). Built in place: an rl_cmd's
 * arguments point into it, so a plan is not copied. */
typedef struct rl_acquire_plan {
    rl_cmd main;
    rl_cmd alt; /* built when @kind is not RL_ALT_NONE */
    rl_acquire_alt kind;
    uint32_t alt_mask; /* masters whose memory counts for this window now (rl_node_fast) */
    bool late;         /* the guard is on: a late answer still teaches (rl_acq_on_late) */
    char end[REDLOCK_MAX_MASTERS][24]; /* RL_ALT_FAST: each master's lease end, its node argument */
    size_t end_len[REDLOCK_MAX_MASTERS];
} rl_acquire_plan;

/* Plan a round of @ask to @nodes (@n) from what each of them is now: the
 * fast path, or PASS for a local hand-off, where a master's memory is known
 * to count for the window (docs/memory-guard.md, "The fast path"), the
 * script elsewhere and for everything else (a fence, a set, a queue). */
void rl_wire_acquire_plan(rl_acquire_plan *p, const rl_node *nodes, uint32_t n,
                          const rl_acquire_ask *ask);
/* PASS answered {-4} (the key does not hold the passing token, or the
 * marker is not `served`): the script goes instead, once (fanout's redo). */
bool rl_wire_pass_redo(rl_node *n, const rl_reply *r);

/* The form a master was sent (acquire-command.c chose it). */
typedef enum rl_acquire_form {
    RL_FORM_SET,    /* SET NX PX: the guard off */
    RL_FORM_FAST,   /* the fast path's transaction */
    RL_FORM_SCRIPT, /* the acquire script, or PASS (which answers as it does) */
} rl_acquire_form;

typedef enum rl_grant_kind {
    RL_GRANT_OK,          /* the key is ours now */
    RL_GRANT_HELD,        /* another holds it (SET's nil: or a key of another type) */
    RL_GRANT_YOUNG,       /* the script: the master's memory does not count yet */
    RL_GRANT_UNSERVED,    /* the fast path: marker gone, or its window not over */
    RL_GRANT_SHORT,       /* the fast path: the marker's bound is below this window */
    RL_GRANT_BAD_COUNTER, /* the script: a fence counter holds garbage */
    RL_GRANT_BAD,         /* an error reply, or a shape the form never answers */
} rl_grant_kind;

/* One master's answer, and the side facts it taught. */
typedef struct rl_grant {
    rl_grant_kind kind;
    uint64_t fence;     /* OK (script): the fence handed out, 0 if none */
    bool quiet;         /* OK (fast path): granted with nobody queued */
    bool others;        /* OK (script, 4 elements): another client's waiter is queued */
    bool reserved;      /* HELD (script): a key of the set is reserved for us */
    uint32_t rank;      /* HELD (script): our place in its queue; UINT32_MAX not said */
    uint32_t counter;   /* BAD_COUNTER: the resource (the master's own: >= its keys) */
    bool wrongtype;     /* BAD_COUNTER: not a string (else not an integer) */
    bool pending;       /* YOUNG: reborn, its window not measured yet */
    int64_t age_ms;     /* YOUNG: since its marker's birth (pending: its rebirth) */
    uint32_t window_ms; /* YOUNG: its window */
    const char *birth;  /* YOUNG, pending: the rebirth it names (in the reply), or NULL */
    /* Side facts, whatever the kind: */
    int64_t maxttl_ms; /* the script: the marker's bound now; -1 not said */
    int served;        /* the fast path: RL_SERVED, RL_UNSERVED, RL_SHORT; -1 not read */
    uint32_t bound_ms; /* ... and the bound its marker holds (RL_SHORT) */
    rl_answer bad;     /* BAD: code and detail */
} rl_grant;

/* Read @r, @n's answer to an acquire sent as @form that needs a marker bound
 * of @window_ms (the fast path's), into @g. */
void rl_wire_acquire_read(rl_grant *g, const rl_node *n, const rl_reply *r, rl_acquire_form form,
                          uint32_t window_ms);

/* The fast path's answer with nobody queued and the key set: a grant its
 * lock's release may take without Lua (release.c). Also for a late answer. */
bool rl_wire_fast_quiet(const rl_reply *r);

/* The acquire script's answer after its round ended: the marker's bound it
 * said (its third element), or -1. */
int64_t rl_wire_acquire_late_maxttl(const rl_reply *r);

#endif
