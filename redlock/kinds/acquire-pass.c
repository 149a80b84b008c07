/* acquire-pass.c - the acquire's side of the local hand-off: a waiter that
 * parks behind a holder of its own client, and what a pass attempt's
 * outcome does to its run and to the release that passed.
 *
 * The release's side (which waiter it passes to): handoff.c; why mutual
 * exclusion, fences and fairness hold: docs/waiting.md, "The local hand-off".
 */
#include "kinds/acquire-private.h"
#include "kinds/lock.h"

/* Parked: a waiter that may wait, for one key that a holder of this client
 * holds with validity left. Its first attempt would only meet that holder
 * and cost every master a script; the holder's release comes to it first
 * (it is this client's). The poll stays the net: a holder that never
 * releases (it lets the lease run out) costs the waiter one poll. */
bool rl_acq_park(rl_acquire *a)
{
    rl_op *op = &a->op;
    const char *token;
    int64_t left_ms;
    if (op->c->cfg.local_run_max < 2 || !a->waiter.joined || op->nres != 1 ||
        rl_mine_find(op->c, &op->k.locks, &token, &left_ms) < 0 || left_ms <= 0)
        return false;
    a->phase = ACQ_WAITING;
    a->parked = true;
    rl_acq_tell_mine(a); /* at once, as the attempt it saves would have */
    rl_acq_next_poll(a);
    return true;
}

/* The pass is decided: the acquire lets go of the release first, since
 * the hook may finish it (its op and memory are gone after). */
static void pass_end(rl_acquire *a, bool won)
{
    rl_op *rel = a->pass_from;
    a->pass_from = NULL;
    rl_met_inc(won ? &a->op.c->metrics.handoffs : &a->op.c->metrics.handoffs_failed);
    a->pass_end(rel, a->att.took_mask, won);
}

void rl_acq_pass_won(rl_acquire *a, redlock_lock *lock)
{
    if (!a->pass_from)
        return;
    /* The run counts only while another client waits: with nobody else
     * queued, passing on costs no one a turn. */
    lock->run = a->att.others ? a->pass_run + 1 : 1;
    pass_end(a, true);
}

void rl_acq_pass_lost(rl_acquire *a)
{
    if (a->pass_from)
        pass_end(a, false);
}
