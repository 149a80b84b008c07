/* acquire-private.h - an acquire's state, shared by the files of the acquire
 * kind (never included elsewhere; the kind's start is in kinds.h).
 *
 * acquire.c runs the attempts and decides; acquire-command.c builds what an
 * attempt sends; acquire-votes.c reads the answers; acquire-queue.c is the
 * waiting. Why the state has a header of its own and which way calls run:
 * docs/map.md, "`redlock/`: the library, in layers".
 */
#ifndef REDLOCK_ACQUIRE_PRIVATE_H
#define REDLOCK_ACQUIRE_PRIVATE_H

#include "core/cancel.h"
#include "base/config.h"
#include "core/op.h"
#include "core/wait.h"

enum acq_phase { ACQ_VOTING, ACQ_FENCING, ACQ_CLEANUP, ACQ_WAITING };

/* A waiter at rank r of a queue (0: the head) polls every min(r, this)
 * retry delays (rl_acq_next_poll). */
#define RL_SLOW_POLLS 8

/* One attempt: what it sent, what the masters said, what it found. Zeroed
 * by one function (acq_attempt_reset) as each attempt starts; nothing in it
 * outlives the attempt but through the lock a win makes. */
typedef struct rl_acq_attempt {
    char token[REDLOCK_TOKEN_MAX + 1]; /* fresh per attempt */
    bool by_wake;                      /* started by a wake-up */
    uint32_t n_ok, n_fail;             /* the current round's answers */
    uint64_t fence;                    /* largest counter seen */
    bool fence_failed;                 /* the fence write-back failed */
    uint32_t set_sent;                 /* fencing: the masters the SET went to (for cleanup) */
    bool reserved_seen;                /* a master said held, but a key of the set is ours */
    bool found;                        /* found a key free or reserved for us */
    bool queued_now;                   /* asks for a place in the queues */
    uint32_t fast_mask;                /* masters sent the fast path's transaction */
    uint32_t window_ms;   /* the memory window it asks for: a fast grant counts where the
                             marker's bound covers it (acquire-votes.c) */
    uint32_t quiet_mask;  /* ... that granted it with nobody queued (release.c) */
    uint32_t rank;        /* the waiter's best place in a queue seen (0 the head;
                             UINT32_MAX none): how soon it polls */
    uint32_t leave_later; /* won: masters whose late answer says if it leaves there */
    uint32_t took_mask;   /* a pass: masters that granted it (the passing token gone there) */
    bool others;          /* a pass: a master said another client's waiter is queued */
} rl_acq_attempt;

/* The acquire: the op, the wait (its spec, deadline, polls, wake-up budget
 * and places in the queues: acquire-queue.c decides when it gives up and
 * when it polls next) and the attempt. */
typedef struct rl_acquire {
    rl_op op;
    int phase;               /* enum acq_phase */
    rl_wait_spec w;          /* ttl, flags, how long and how to wait */
    rl_monotime deadline_us; /* no new attempt after this; UINT64_MAX: forever */
    bool by_polls;           /* redlock_acquire()'s wait: a number of polls too */
    uint32_t polls_left;     /* by_polls: polls still to come */
    rl_monotime poll_due_us; /* by_polls: when the armed poll was due */
    uint32_t lease_ms;       /* a waiter's place lasts this long without news */
    bool final;              /* the deadline came: this attempt is the last */
    int cancelled;           /* 0, or the status to finish with after cleanup */
    bool wake_pending;       /* a wake-up came during an attempt: try again at once */
    bool told_mine;          /* "this client already holds it" was logged */
    bool wakes_idle;         /* a woken attempt found nothing this poll: wake-ups wait */
    bool in_queues;          /* some attempt (or its cleanup) gave the waiter a place */
    bool parked;             /* no attempt yet: a holder of this client passes it on */
    rl_waiter waiter;        /* wake-ups from releases (wait.c) */
    rl_acq_attempt att;      /* the current (finally: deciding) attempt */
    rl_op *pass_from;        /* a local hand-off: the release waiting for this attempt */
    char pass_token[REDLOCK_TOKEN_MAX + 1]; /* ... the token it takes the keys over from */
    uint32_t pass_run;                      /* ... and that lock's run (handoff.c) */
    /* ... and what ends the release when the pass is decided: it finishes
     * (@won) or goes out to every master but @taken (release.c). A hook,
     * so that the acquire never calls up into the release. */
    void (*pass_end)(rl_op *rel, uint32_t taken, bool won);
    rl_cancel_reg creg; /* the caller's cancellation source (cancel.c) */
} rl_acquire;

static inline rl_acquire *ACQ(rl_op *op)
{
    return (rl_acquire *)(void *)op;
}

/* acquire.c: an attempt now, between polls: a local hand-off's pass (with
 * pass_from and pass_token set, handoff.c) or a parked waiter's first. */
void rl_acq_attempt_now(rl_acquire *a);

/* acquire-pass.c, the acquire's side of the local hand-off: a new or
 * polling waiter for keys a holder of this client holds parks (no attempt:
 * it could only meet that holder), its poll armed, and the holder's release
 * passes to it or starts its attempt (handoff.c). True if @a parked. */
bool rl_acq_park(rl_acquire *a);
/* acquire-pass.c: the pass attempt of @a won @lock (its run counts on), or
 * lost; either way the passing release hears it through a->pass_end. */
void rl_acq_pass_won(rl_acquire *a, redlock_lock *lock);
void rl_acq_pass_lost(rl_acquire *a);

/* acquire-mine.c: this client holds the keys: said once, as a warning (redlock
 * is not reentrant; another caller of the client may be the holder). */
void rl_acq_tell_mine(rl_acquire *a);

/* acquire-votes.c: one master's answer to the current round (the core's
 * on_vote hook for the acquire kind). */
void rl_acq_on_vote(rl_op *op, uint32_t idx, const rl_reply *r, int err, const char *why,
                    rl_monotime sent);

/* acquire-command.c: this attempt's command, per master, in a fanout
 * (NULL on OOM). */
rl_fanout *rl_acq_command(rl_acquire *a);

/* acquire-votes.c: a script's answer after the round ended still tells
 * the marker's bound (rl_fanout_set_late). */
void rl_acq_on_late(rl_node *n, int script, const rl_reply *r, const char *last, size_t len);

/* acquire-queue.c: when waiting ends, and the waiter's places. */
void rl_acq_set_wait(rl_acquire *a, const rl_wait_spec *w);
bool rl_acq_last(const rl_acquire *a);
/* Arm the next poll (the op's timer): a retry delay slowed by the rank, and
 * never past the deadline, whose own attempt is then the last. */
void rl_acq_next_poll(rl_acquire *a);
void rl_acq_join_queue(rl_acquire *a);
void rl_acq_leave_queues(rl_acquire *a);
void rl_acq_leave_later(rl_acquire *a);
/* Was the resource found held lately (a waiter then queues at once)? */
bool rl_acq_hot(rl_acquire *a);
void rl_acq_found_held(rl_acquire *a);

#endif
