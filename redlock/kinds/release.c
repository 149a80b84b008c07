/* release.c - give a lock back: compare-token-then-delete on every master.
 *
 * Deletes the key only where it still holds our token (or hands it to the
 * queue's head), counts a key already gone as released, returns at a
 * majority, and retries masters that timed out or were down. What each
 * master is sent, and what its reply means, is the wire's (wire/release.c:
 * the script, or the native compare-and-delete; docs/wire.md).
 */
#include "kinds/handoff.h"
#include "kinds/kinds.h"
#include "kinds/lock.h"
#include "kinds/outcome.h"
#include "kinds/watchdog.h"
#include "wire/release.h"

#include <stdio.h>
#include <string.h>

typedef struct rl_release {
    rl_op op;
    char token[REDLOCK_TOKEN_MAX + 1];
    uint32_t retry_mask; /* masters to ask again after the delay */
    uint32_t quiet_mask; /* masters that granted it by the fast path, nobody queued,
                            or (guess_mask) were still to answer when it was granted */
    rl_op *pass;         /* a local hand-off in flight: the waiter's acquire (handoff.c) */
    char skip[64];       /* a local run that ends: this client's channel, passed over */
} rl_release;

static rl_release *REL(rl_op *op)
{
    return (rl_release *)(void *)op;
}

/* The native delete's answer, read by the wire (wire/release.c): a command
 * the master turned out not to have goes to the node (the scripts from
 * now on), and the answer says whether the slot sends the script. */
static bool rel_redo(rl_node *n, const rl_reply *r)
{
    rl_answer a;
    rl_wire_release_read_native(&a, n, r);
    if (a.refused) {
        char why[REDLOCK_VOTE_DETAIL_LEN];
        rl_node_native_refused(n, a.refused, rl_fit(why, sizeof(why), a.detail));
    }
    return a.redo;
}

/* The script's answer, or the native delete's 1 (rel_redo), which means
 * what the script's 1 does: released. A key already gone counts as
 * released too (gone_err 0). */
static void rel_on_vote(rl_op *op, uint32_t idx, const rl_reply *r, int err, const char *why,
                        rl_monotime sent)
{
    redlock_vote *v = &op->out.votes[idx];
    if (!r) {
        rl_vote_failed(v, err, why, sent);
        return;
    }
    rl_answer a;
    rl_wire_release_read(&a, &op->c->nodes[idx], r);
    rl_vote_answer(v, &a, sent, 0);
}

/* Answers to the acquire that came after it decided tell which masters
 * are quiet for this lease (acquire-votes.c left them on the node, by
 * token). */
static void rel_late_hints(rl_release *r)
{
    redlock_client *c = r->op.c;
    for (uint32_t i = 0; i < c->n; i++) {
        if (strcmp(c->nodes[i].late_token, r->token) != 0)
            continue;
        if (c->nodes[i].late_quiet)
            r->quiet_mask |= 1u << i;
        else
            r->quiet_mask &= ~(1u << i);
    }
}

/* The round, in the forms the wire plans (wire/release.c): one round
 * carries both where some masters get the native delete. */
static void rel_send(rl_release *r, uint32_t mask)
{
    rl_op *op = &r->op;
    redlock_client *c = op->c;
    op->attempts++;
    rel_late_hints(r);
    rl_release_plan p;
    rl_wire_release_plan(&p, c->nodes, c->n,
                         &(rl_release_ask){ &op->k, r->token, r->skip, r->quiet_mask, mask });
    /* Priority: a release pairs with a SET that was admitted, so it may
     * use the headroom above max_inflight. */
    if (!p.kind) {
        rl_round_send(op, &p.script, "release", mask, mask, RL_ROUND_PRIORITY | RL_ROUND_VOTES);
        return;
    }
    rl_fanout *f = rl_fanout_new2(c->nodes, &p.script, &p.native);
    if (!f) {
        rl_seterr(&op->err, REDLOCK_ENOMEM, -1, "out of memory sending release");
        rl_op_finish(op, REDLOCK_ENOMEM);
        return;
    }
    for (uint32_t i = 0; i < c->n; i++)
        if (p.native_mask & (1u << i))
            rl_fanout_use_alt(f, i);
    rl_fanout_set_redo(f, rel_redo);
    rl_round_start(op, f, mask, mask, RL_ROUND_PRIORITY | RL_ROUND_VOTES);
}

static bool vote_is_transient(const redlock_vote *v)
{
    return v->kind == REDLOCK_VOTE_TIMEOUT || v->kind == REDLOCK_VOTE_DOWN;
}

static void rel_decide(rl_op *op)
{
    rl_release *r = REL(op);
    redlock_client *c = op->c;
    uint32_t released = 0, retry = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        const redlock_vote *v = &op->out.votes[i];
        if (v->kind == REDLOCK_VOTE_OK || v->kind == REDLOCK_VOTE_GONE)
            released++;
        else if (vote_is_transient(v))
            retry |= 1u << i;
    }
    op->out.n_ok = released;
    if (released >= c->quorum) {
        rl_op_finish(op, 0);
        return;
    }
    if (op->pending_mask)
        return;
    op->out.elapsed_us = rl_now_us() - op->attempt_us;
    if (retry && op->attempts <= c->cfg.release_retry_count && !c->freeing) {
        rl_round_end(op);
        r->retry_mask = retry;
        rl_op_arm(op, c->cfg.release_retry_delay_ms);
        return;
    }
    rl_op_finish(op, rl_outcome_failure(op, &op->err));
}

static void rel_on_timer(rl_op *op)
{
    rel_send(REL(op), REL(op)->retry_mask);
}

/* The masters where the waiter's pass was granted: the passing token is
 * gone there, which is what a release's OK says. */
static uint32_t rel_taken(rl_op *op, uint32_t taken)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < op->c->n; i++)
        if (taken & (1u << i)) {
            rl_vote_set(&op->out.votes[i], REDLOCK_VOTE_OK, 0, "taken over by a local waiter",
                        op->attempt_us);
            n++;
        }
    return n;
}

/* The local hand-off's outcome (handoff.h, rl_handoff_offer): the pass
 * granted and this release is done, or it lost and the release goes out
 * now to the masters where the pass did not take the keys over. */
static void rel_pass_end(rl_op *op, uint32_t taken, bool won)
{
    rl_release *r = REL(op);
    uint32_t rest = ((1u << op->c->n) - 1) & ~taken;
    r->pass = NULL;
    uint32_t n = rel_taken(op, taken);
    if (won) {
        op->out.n_ok = n;
        rl_op_finish(op, 0);
    } else if (rest)
        rel_send(r, rest);
    else
        rel_decide(op);
}

/* Freed with a pass in flight: the release goes out now, before the
 * sockets close, and the waiter's attempt goes on as an ordinary one. */
static void rel_cancel(rl_op *op, int status)
{
    rl_release *r = REL(op);
    if (!r->pass) {
        rl_op_finish(op, status);
        return;
    }
    rl_handoff_cut(r->pass);
    r->pass = NULL;
    rel_send(r, (1u << op->c->n) - 1);
}

static void rel_destroy(rl_op *op)
{
    if (REL(op)->pass)
        rl_handoff_cut(REL(op)->pass);
}

static const rl_op_ops release_ops = {
    .kind = REDLOCK_OP_RELEASE,
    .name = "release",
    .verdict = RL_VERDICT_GONE_DONE | RL_VERDICT_HELD_LOST,
    .on_vote = rel_on_vote,
    .decide = rel_decide,
    .on_timer = rel_on_timer,
    .cancel = rel_cancel,
    .destroy = rel_destroy,
};

int rl_release_start(redlock_client *c, redlock_lock *lock, redlock_done_cb cb, void *arg,
                     redlock_error *e)
{
    redlock_resource set[REDLOCK_SET_MAX];
    rl_op *op;
    int rc = rl_op_new(c, &release_ops, sizeof(rl_release), set, rl_lock_resources(lock, set),
                       RL_KEYS_QUEUE, &op, e);
    if (rc)
        return rc;
    rl_release *r = REL(op);
    op->lock = lock; /* the caller's, given back in the callback */
    op->cb = cb;
    op->arg = arg;
    snprintf(r->token, sizeof(r->token), "%s", lock->token);
    r->quiet_mask = lock->quiet_mask | lock->guess_mask;
    rl_watchdog_stop(c, lock);
    bool live = rl_lock_valid_until(lock) > rl_now_us();
    /* Whatever the outcome, the caller stops holding the lock now: a
     * release that fails may still run on some masters later. */
    rl_lock_set_valid_until(lock, 1);
    rl_mine_drop(c, lock->token);
    op->attempt_us = rl_now_us();
    /* A waiter of this client takes it over (handoff.c): its attempt is
     * this release's round. Nothing here may touch @r after
     * rl_handoff_start, whose round may decide (and resume this release)
     * at once. */
    r->pass = live ? rl_handoff_offer(c, lock, op, rel_pass_end) : NULL;
    if (r->pass) {
        rl_handoff_start(r->pass);
        return 0;
    }
    const char *skip = rl_handoff_skip(c, op);
    if (skip)
        snprintf(r->skip, sizeof(r->skip), "%s", skip);
    rel_send(r, (1u << c->n) - 1); /* every master */
    rl_handoff_unpark(c, op);
    return 0;
}
