/* acquire.c - take a lock: ask every master at once, decide early.
 *
 * One op covers every attempt of one acquire: a fresh token, one round to
 * every master (acquire-command.c builds it; docs/wire.md), a decision the
 * moment the outcome is known, and on failure a cleanup and a wait. The
 * steps, and why mutual exclusion holds: docs/safety.md, "The algorithm as
 * implemented" and "Why at most one client holds a resource".
 */
#include "kinds/acquire-private.h"
#include "kinds/kinds.h"
#include "drift.h"
#include "kinds/lock.h"
#include "kinds/memory.h"
#include "kinds/outcome.h"
#include "base/script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void acq_attempt_start(rl_acquire *a, bool by_wake);
static void acq_attempt_failed(rl_acquire *a, int status);

/* ---- deciding ----------------------------------------------------------------- */

static bool retryable(int status)
{
    return status == REDLOCK_ECONFLICT || status == REDLOCK_ENOQUORUM ||
           status == REDLOCK_EEXPIRED || status == REDLOCK_EUNAVAIL;
}

/* What the attempt's failure says, now that cleanup had its say. */
static int acq_cleanup_status(rl_acquire *a)
{
    rl_op *op = &a->op;
    int status = op->status;
    /* Classify from the votes now that cleanup had its say (WRONGTYPE),
     * unless the votes were fine and the fence write-back failed: that
     * message (acq_decide_fence) says what happened. */
    if (status == REDLOCK_ENOQUORUM && !a->att.fence_failed)
        status = rl_outcome_failure(op, &op->err);
    if (status == REDLOCK_ECONFLICT)
        rl_acq_found_held(a); /* the next waiter for it queues at once */
    /* Held by this client: said at once (a warning), and the wait goes on
     * as for any holder, since another thread or task of this client may
     * be the holder and release it; if the wait ends, its message says so. */
    if (status == REDLOCK_ECONFLICT)
        rl_acq_tell_mine(a);
    return status;
}

/* Cleanup is over (every master we waited for answered, or one node
 * timeout passed): give up, try again at once, or wait for the next poll. */
static void acq_after_cleanup(rl_acquire *a)
{
    rl_op *op = &a->op;
    redlock_client *c = op->c;
    rl_round_end(op);
    /* A pass that lost: the passing lock's release goes out now, to the
     * masters where neither the pass's answer nor its cleanup's said that
     * the key had been taken over (a pass granted after the decision:
     * its cleanup found our token there). */
    rl_acq_pass_lost(a);
    if (a->cancelled) {
        rl_seterr(&op->err, a->cancelled, -1, "acquire: %s after %u attempt(s) and %llu ms",
                  a->cancelled == REDLOCK_ECANCELED ? "cancelled" : "client freed", op->attempts,
                  (unsigned long long)((rl_now_us() - op->started_us) / 1000));
        rl_op_finish(op, a->cancelled);
        return;
    }
    int status = op->status = acq_cleanup_status(a);
    /* A wait drawn from retry_count budgets its polls, not its attempts:
     * the time this attempt took (paused masters, a node timeout) moves
     * the deadline on, so retry_count retries still happen however slow
     * each one is (the count keeps its meaning). */
    if (a->by_polls && a->deadline_us != UINT64_MAX)
        a->deadline_us += rl_now_us() - op->attempt_us;
    if (!retryable(status) || rl_acq_last(a) || c->freeing) {
        rl_op_finish(op, status);
        return;
    }
    a->phase = ACQ_WAITING;
    /* A woken attempt that found no reservation for us anywhere (a real
     * wake-up is published after the reservation is made, so the master
     * that sent it has one; for a set, some of its keys may still be
     * held): the message was stray or forged. Wake-ups, this one's
     * followers included, wait for the next poll (acq_wake). */
    if (a->att.by_wake && !a->att.found) {
        a->wakes_idle = true;
        a->wake_pending = false;
    }
    if (a->waiter.joined && !a->att.queued_now && op->attempts == 1 &&
        status == REDLOCK_ECONFLICT) {
        /* A waiter's first attempt (no place in the queues, so that an
         * uncontended acquire never writes one) met a holder: take the
         * place now, not a poll later, so that a release in between hands
         * the lock on in order (acquire-command.c). */
        a->wake_pending = false;
        acq_attempt_start(a, a->att.by_wake);
    } else if (a->wake_pending) {
        /* A release woke us while this attempt was in flight: a master may
         * have run it after our SET reached it (two connections, no order
         * between them). Try again now, as if woken now. */
        a->wake_pending = false;
        acq_attempt_start(a, true);
    } else {
        rl_acq_next_poll(a);
    }
}

/* Which masters the failed attempt's cleanup goes to (@send), which of
 * them it waits for (@wait), and where the fast path indexed a lease its
 * refused SET never gave (@phantom). @last: the wait's last attempt.
 *
 * Release on every master the SET may have written to, answered or
 * not: a silent master gets the release queued behind the SET on the
 * same connection, so it runs after the SET whenever the master wakes.
 * Masters never sent the SET cannot hold this attempt's token. Wait for
 * the release from masters that answered the SET and from those still
 * pending when an early failure was decided (their SET may land a
 * moment later); never from masters that timed out. A master that said
 * "held" wrote nothing: its release is only worth sending on the last
 * attempt, where its answer tells a holder from a key of another type.
 *
 * A key we free goes to the queue's head, as a release's does: left
 * free, it would go to whichever attempt comes first, and with masters
 * silent (every split vote then waits out the node timeout) two
 * attempts that each took part of the masters keep blocking each other
 * round after round. A waiter keeps its place on every master its
 * attempt reached (a master that said OK dequeued it), so all masters
 * agree on the head. The hand-over is quiet: no cleanup wakes anyone
 * (the head's poll finds its reservation, which outlives a poll). On
 * the last attempt the waiter leaves the queues in the same script,
 * first: a key it frees then goes to the next waiter, or is deleted,
 * and is never handed back to a waiter that is about to give up (which
 * would leave a reservation behind the acquire's return). */
static void acq_cleanup_targets(const rl_acquire *a, bool last, uint32_t *send, uint32_t *wait,
                                uint32_t *phantom)
{
    const rl_op *op = &a->op;
    *send = *wait = *phantom = 0;
    uint32_t sent = a->phase == ACQ_FENCING ? a->att.set_sent : op->sent_mask;
    for (uint32_t i = 0; i < op->c->n; i++) {
        if (!(sent & (1u << i)))
            continue;
        int kind = op->out.votes[i].kind;
        if (kind == REDLOCK_VOTE_HELD && !last) {
            *phantom |= a->att.fast_mask & (1u << i);
            continue;
        }
        *send |= 1u << i;
        /* An excluded vote on the fast path may have set our key (the
         * transaction cannot refuse to write): waited for like an OK. */
        if (kind == REDLOCK_VOTE_OK || kind == REDLOCK_VOTE_HELD || kind == REDLOCK_VOTE_ERROR ||
            kind == REDLOCK_VOTE_PENDING ||
            (kind == REDLOCK_VOTE_EXCLUDED && (a->att.fast_mask & (1u << i))))
            *wait |= 1u << i;
    }
}

static void acq_attempt_failed(rl_acquire *a, int status)
{
    rl_op *op = &a->op;
    redlock_client *c = op->c;
    rl_op_disarm(op);
    op->status = status;
    op->out.elapsed_us = rl_now_us() - op->attempt_us;
    if (status == REDLOCK_EEXPIRED)
        rl_seterr(&op->err, status, -1,
                  "acquire: quorum reached after %llu us, leaving no validity of a %u ms ttl "
                  "(raise the ttl, or lower node_timeout_ms)",
                  (unsigned long long)op->out.elapsed_us, a->w.ttl_ms);
    /* Did this attempt find the key free or reserved for us anywhere? An
     * OK, a set's key reserved for us, or (for a master whose answer was
     * still pending at the decision) the cleanup removing our token there
     * (acq_on_cleanup) says so. acq_after_cleanup reads it. */
    a->att.found = a->phase == ACQ_FENCING || a->att.n_ok > 0 || a->att.reserved_seen;
    bool last = rl_acq_last(a);
    uint32_t send, wait, phantom;
    acq_cleanup_targets(a, last, &send, &wait, &phantom);
    rl_cmd cmd;
    if (phantom) {
        /* The fast path indexed a lease that its refused SET never gave:
         * gone at once, not reported live for a ttl (LEASES, declare.c). */
        rl_cmd_unindex(&cmd, a->att.token);
        rl_fanout_fire(c->nodes, c->n, &cmd, phantom);
    }
    rl_place stay = { a->waiter.member, last ? 0 : a->waiter.ticket, a->lease_ms };
    rl_cmd_release(&cmd, &op->k, a->att.token, false, a->waiter.joined ? &stay : NULL);
    a->in_queues |= a->waiter.joined && send && !last;
    rl_fanout *f = send ? rl_fanout_new(c->nodes, &cmd) : NULL;
    if (send && !f)
        rl_log(&c->cfg, REDLOCK_LOG_WARN,
               "acquire: out of memory for cleanup; keys expire after %u ms", a->w.ttl_ms);
    a->phase = ACQ_CLEANUP;
    if (f)
        rl_round_start(op, f, send, wait, RL_ROUND_PRIORITY); /* decide runs: acq_decide */
    else
        acq_after_cleanup(a);
}

/* A quorum said OK (and, fenced, a majority stored the fence): validity is
 * measured now, from the start of this attempt. */
static void acq_succeed(rl_acquire *a)
{
    rl_op *op = &a->op;
    redlock_client *c = op->c;
    rl_monotime now = rl_now_us();
    uint64_t elapsed = now - op->attempt_us;
    int64_t validity_ms = drift_validity_ms(a->w.ttl_ms, elapsed, c->cfg.drift_factor);
    op->decided_us = now;
    op->out.elapsed_us = elapsed;
    op->out.validity_ms = validity_ms;
    if (validity_ms <= 0) {
        acq_attempt_failed(a, REDLOCK_EEXPIRED);
        return;
    }
    redlock_lock *lock = rl_lock_from_keys(&op->k.locks, c->prefix_len, a->att.token);
    if (!lock) {
        rl_seterr(&op->err, REDLOCK_ENOMEM, -1, "out of memory creating the lock");
        acq_attempt_failed(a, REDLOCK_ENOMEM);
        return;
    }
    lock->ttl_ms = a->w.ttl_ms;
    lock->fence = (a->w.flags & REDLOCK_FENCE) ? a->att.fence : 0;
    /* The masters that granted by the fast path with nobody queued: their
     * release may go without Lua (a waiter that comes later marks the
     * value, script.c). Those whose answer comes after this decision tell
     * their node (rl_acq_on_late). */
    lock->quiet_mask = a->att.quiet_mask;
    /* Every master that answered granted so: those still to answer most
     * likely will too (nobody queued anywhere: the uncontended case), and
     * their release without Lua goes behind this acquire on the same
     * connection. Where the guess was wrong, the delete's 0 sends the
     * script after it (release.c); an answer that comes before the release
     * is sent settles it (docs/memory-guard.md, "The release without Lua"). */
    uint32_t answered = a->att.fast_mask & ~op->pending_mask;
    if (a->att.fast_mask && answered == a->att.quiet_mask)
        lock->guess_mask = a->att.fast_mask & op->pending_mask;
    /* Validity runs from the start of this attempt, never from before the
     * retries: the keys were set no earlier than that. */
    rl_lock_set_valid_until(lock, op->attempt_us + (uint64_t)validity_ms * 1000);
    rl_mine_add(c, &op->k.locks, a->att.token, rl_lock_valid_until(lock));
    lock->granted_us = rl_now_us();
    lock->run = 1;
    rl_acq_pass_won(a, lock); /* a pass: its run, and the passing release is done */
    op->lock = lock;          /* the callback's owner's, from the delivery on */
    if (a->phase == ACQ_VOTING)
        rl_acq_leave_later(a); /* the round still reads the masters pending */
    rl_op_finish(op, 0);
}

/* After a fenced quorum: counter = max(counter, fence) on every master,
 * then wait for a majority. Cleanup, if this fails, still knows where the
 * acquire went: the vote vector says. */
static void acq_fence(rl_acquire *a)
{
    rl_op *op = &a->op;
    redlock_client *c = op->c;
    rl_cmd cmd;
    rl_cmd_fence(&cmd, &op->k, a->att.fence);
    rl_fanout *f = rl_fanout_new(c->nodes, &cmd);
    if (!f) {
        rl_seterr(&op->err, REDLOCK_ENOMEM, -1, "out of memory sending the fence");
        acq_attempt_failed(a, REDLOCK_ENOMEM);
        return;
    }
    /* The SET round ends here; remember where it went for the cleanup. */
    a->phase = ACQ_FENCING;
    a->att.n_ok = a->att.n_fail = 0;
    a->att.set_sent = op->sent_mask;
    uint32_t all = (1u << c->n) - 1;
    rl_round_start(op, f, all, all, RL_ROUND_PRIORITY);
}

static void acq_decide_votes(rl_acquire *a)
{
    rl_op *op = &a->op;
    redlock_client *c = op->c;
    if (a->att.n_ok >= c->quorum) {
        op->out.n_ok = a->att.n_ok;
        if (rl_quorum_late(op, "acquire")) {
            acq_attempt_failed(a, REDLOCK_ETIMEOUT);
            return;
        }
        if (a->w.flags & REDLOCK_FENCE)
            acq_fence(a);
        else
            acq_succeed(a);
    } else if (a->att.n_fail > c->n - c->quorum && op->pending_mask == 0) {
        op->out.n_ok = a->att.n_ok;
        acq_attempt_failed(a, REDLOCK_ENOQUORUM);
    }
    /* Lost, with masters still to answer: their answers are on the way
     * (or the round's node timeout fails them), and each says whether the
     * SET wrote there. A master that says "held" wrote nothing and needs
     * no cleanup; one that says OK needs it, and so does one that never
     * answers. Under contention that is most of the masters pending at
     * the third "held": a cleanup script each, saved. Waiting costs the
     * attempt nothing: the cleanup would have waited for those masters'
     * answers too, queued behind the SET. */
}

static void acq_decide_fence(rl_acquire *a)
{
    rl_op *op = &a->op;
    redlock_client *c = op->c;
    if (a->att.n_ok >= c->quorum) {
        acq_succeed(a);
    } else if (a->att.n_fail > c->n - c->quorum || op->pending_mask == 0) {
        a->att.fence_failed = true;
        rl_seterr(&op->err, REDLOCK_ENOQUORUM, -1,
                  "acquire: fencing token %llu reached only %u of %u masters, %u needed",
                  (unsigned long long)a->att.fence, a->att.n_ok, c->n, c->quorum);
        acq_attempt_failed(a, REDLOCK_ENOQUORUM);
    }
}

static void acq_decide(rl_op *op)
{
    rl_acquire *a = ACQ(op);
    switch (a->phase) {
    case ACQ_VOTING: acq_decide_votes(a); break;
    case ACQ_FENCING: acq_decide_fence(a); break;
    case ACQ_CLEANUP:
        if (op->pending_mask == 0)
            acq_after_cleanup(a); /* every release we wait for answered */
        break;
    }
}

/* ---- attempts ------------------------------------------------------------------ */

/* A new attempt's state: nothing of the last one carries over. */
static void acq_attempt_reset(rl_acquire *a, bool by_wake)
{
    a->att = (rl_acq_attempt){ .by_wake = by_wake, .rank = UINT32_MAX };
}

/* @by_wake: a wake-up (or one that came during the last attempt) starts it. */
static void acq_attempt_start(rl_acquire *a, bool by_wake)
{
    rl_op *op = &a->op;
    redlock_client *c = op->c;
    op->attempts++;
    a->phase = ACQ_VOTING;
    a->wake_pending = false;
    a->parked = false;
    acq_attempt_reset(a, by_wake);
    op->out.validity_ms = 0;
    memset(op->out.votes, 0, sizeof(op->out.votes));
    /* A fresh token per attempt: a release from a failed attempt that is
     * still queued somewhere can then never delete a later attempt's key. */
    if (rl_token_new(a->att.token) != 0) {
        rl_seterr(&op->err, REDLOCK_ESYS, -1, "RAND_bytes failed: no token");
        rl_op_finish(op, REDLOCK_ESYS);
        return;
    }
    /* Validity runs from here, before any master can see the command; the
     * fast path bounds its leases' ends from here too (acquire-command.c). */
    op->attempt_us = rl_now_us();
    rl_fanout *f = rl_acq_command(a);
    if (!f) {
        rl_seterr(&op->err, REDLOCK_ENOMEM, -1, "out of memory sending SET");
        rl_op_finish(op, REDLOCK_ENOMEM);
        return;
    }
    op->out.elapsed_us = 0;
    /* An excluded master (clock untrusted, or inside its restart guard) is
     * not asked: its OK could not count. N and the quorum stay the same, so
     * exclusion can only make an acquire fail. */
    uint32_t ask = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        char why[REDLOCK_VOTE_DETAIL_LEN];
        int code = rl_node_excluded(&c->nodes[i], why, sizeof(why));
        if (code) {
            /* A twin (identity.c) is wrong input, and an ACL that refuses
             * the memory check a credential to fix, not an untrusted
             * master: the code says which (rl_node_excluded). */
            rl_vote_set(&op->out.votes[i], REDLOCK_VOTE_EXCLUDED, code, why, rl_now_us());
            a->att.n_fail++;
        } else {
            ask |= 1u << i;
        }
    }
    rl_round_start(op, f, ask, ask, RL_ROUND_VOTES);
}

/* A release may have freed the resource: try now instead of at the poll.
 * Anyone who can read the queue (ZRANGE) can publish a waiter's name, so a
 * wake-up is a hint with a budget: once a woken attempt found no
 * reservation, wake-ups are ignored until the poll timer fires, and
 * messages cost at most one attempt per poll interval. A real hand-off's
 * attempt finds its reservation and keeps the budget. A wake-up in the
 * last poll interval does not end the wait: the deadline's own attempt
 * still comes (acq_after_cleanup schedules it again). */
static void acq_wake(rl_waiter *w)
{
    rl_acquire *a = (rl_acquire *)(void *)((char *)w - offsetof(rl_acquire, waiter));
    if (a->op.done || a->wakes_idle)
        return;
    if (a->phase != ACQ_WAITING) {
        a->wake_pending = true; /* voting or cleaning up: retry when this attempt fails */
        return;
    }
    a->final = false;
    rl_op_disarm(&a->op);
    acq_attempt_start(a, true);
}

void rl_acq_attempt_now(rl_acquire *a)
{
    a->final = false; /* as a wake-up's: the deadline's own attempt still comes */
    rl_op_disarm(&a->op);
    acq_attempt_start(a, false);
}

static void acq_on_timer(rl_op *op)
{
    rl_acquire *a = ACQ(op);
    if (a->phase != ACQ_WAITING)
        return;
    rl_monotime now = rl_now_us();
    if (a->final && now < a->deadline_us) {
        /* The loop's timer may fire a little early (a coarse clock): the
         * deadline's attempt starts at the deadline, not before it. */
        rl_op_arm(op, (uint32_t)((a->deadline_us - now + 999) / 1000));
        return;
    }
    if (a->by_polls) {
        /* A loop that ran the poll late (a busy caller, a loaded machine)
         * moves the deadline on by as much, as a slow attempt does: the
         * count of retries keeps its meaning (acq_after_cleanup). */
        if (a->deadline_us != UINT64_MAX && now > a->poll_due_us)
            a->deadline_us += now - a->poll_due_us;
        if (a->polls_left > 0) /* a timer that fires early must not wrap it */
            a->polls_left--;
    }
    if (!a->final && a->parked && rl_acq_park(a))
        return;                  /* the holder is still this client's: its release comes here */
    a->wakes_idle = false;       /* a new poll interval: wake-ups act again */
    acq_attempt_start(a, false); /* the poll (or the deadline's last try) */
}

static void acq_cancel(rl_op *op, int status)
{
    rl_acquire *a = ACQ(op);
    a->cancelled = status;
    switch (a->phase) {
    case ACQ_WAITING:
        rl_seterr(&op->err, status, -1, "acquire: %s while waiting, after %u attempt(s)",
                  status == REDLOCK_ECANCELED ? "cancelled" : "client freed", op->attempts);
        rl_op_finish(op, status);
        break;
    case ACQ_VOTING:
    case ACQ_FENCING:
        /* Undo the attempt in flight like any failed one; finish after. */
        acq_attempt_failed(a, status);
        break;
    case ACQ_CLEANUP: break; /* acq_after_cleanup finishes with the cancel status */
    }
}

static void acq_destroy(rl_op *op)
{
    rl_acquire *a = ACQ(op);
    rl_acq_pass_lost(a); /* never left waiting: finished with a pass in flight */
    if (a->waiter.joined && a->in_queues)
        rl_acq_leave_queues(a);
    rl_wait_leave(op->c, &a->waiter);
    rl_cancel_unregister(&a->creg);
}

static const rl_op_ops acquire_ops = {
    .kind = REDLOCK_OP_ACQUIRE,
    .name = "acquire",
    .verdict = RL_VERDICT_HELD_CONFLICTS,
    .on_vote = rl_acq_on_vote,
    .decide = acq_decide,
    .on_timer = acq_on_timer,
    .cancel = acq_cancel,
    .destroy = acq_destroy,
};

int rl_acquire_start(redlock_client *c, const redlock_resource *set, size_t count,
                     const rl_wait_spec *w, redlock_done_cb cb, void *arg, redlock_error *e)
{
    int rc = rl_check_set(set, count, e);
    if (rc)
        return rc;
    rl_op *op;
    rc = rl_op_new(c, &acquire_ops, sizeof(rl_acquire), set, count,
                   RL_KEYS_QUEUE | (w->flags & REDLOCK_FENCE ? RL_KEYS_FENCE : 0), &op, e);
    if (rc)
        return rc;
    rl_acquire *a = ACQ(op);
    a->w = *w;
    op->cb = cb;
    op->arg = arg;
    a->waiter.wake = acq_wake;
    rl_acq_set_wait(a, w);
    rl_acq_join_queue(a);
    if (w->ttl_ms > c->max_ttl_ms)
        c->max_ttl_ms = w->ttl_ms;
    if (rl_cancel_register(&a->creg, w->cancel, c, op)) {
        rl_seterr(&op->err, REDLOCK_ECANCELED, -1, "acquire: cancelled before it started");
        rl_op_finish(op, REDLOCK_ECANCELED);
        return 0;
    }
    if (!rl_acq_park(a)) /* a holder of this client will pass it on */
        acq_attempt_start(a, false);
    return 0;
}
