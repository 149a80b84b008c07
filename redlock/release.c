/* release.c - give a lock back: compare-token-then-DEL on every master.
 *
 * The script deletes the key only where it still holds our token, so a
 * release can never remove a lock another client took after ours expired.
 * A master where the key is already gone counts as released ("gone"):
 * releasing a lapsed lock is not an error. The release returns as soon as a
 * majority has released; masters that have not answered still have the
 * script queued on their connection and run it when they wake. When no
 * majority is reached, masters that failed for transient reasons (timeout,
 * connection, loading) are retried, up to release_retry_count times, which
 * is independent of the acquire's waiting.
 *
 * Mutual exclusion is untouched by release: it only ever deletes our own
 * key, so it can only make the resource free earlier, never give it to two.
 */
#include "kinds.h"
#include "lock.h"
#include "outcome.h"
#include "watchdog.h"

#include <stdio.h>
#include <string.h>

typedef struct rl_release {
    rl_op op;
    char token[REDLOCK_TOKEN_MAX + 1];
    uint32_t retry_mask; /* masters to ask again after the delay */
} rl_release;

static rl_release *REL(rl_op *op)
{
    return (rl_release *)(void *)op;
}

static void rel_on_vote(rl_op *op, uint32_t idx, const rl_reply *r, int err, const char *why,
                        rl_monotime sent)
{
    redlock_vote *v = &op->out.votes[idx];
    if (!r)
        rl_vote_failed(v, err, why, sent);
    else
        rl_vote_script_reply(v, &op->c->nodes[idx], r, sent, "release", 0);
}

static void rel_send(rl_release *r, uint32_t mask)
{
    rl_op *op = &r->op;
    op->attempts++;
    rl_cmd cmd;
    rl_cmd_release(&cmd, &op->k, r->token, true, NULL); /* hand over to the next waiter */
    /* Priority: a release pairs with a SET that was admitted, so it may
     * use the headroom above max_inflight. */
    rl_round_send(op, &cmd, "release", mask, mask, RL_ROUND_PRIORITY | RL_ROUND_VOTES);
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

static const rl_op_ops release_ops = {
    .kind = REDLOCK_OP_RELEASE,
    .name = "release",
    .verdict = RL_VERDICT_GONE_DONE | RL_VERDICT_HELD_LOST,
    .on_vote = rel_on_vote,
    .decide = rel_decide,
    .on_timer = rel_on_timer,
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
    rl_watchdog_stop(c, lock);
    /* Whatever the outcome, the caller stops holding the lock now: a
     * release that fails may still run on some masters later. */
    rl_lock_set_valid_until(lock, 1);
    op->attempt_us = rl_now_us();
    rel_send(r, (1u << c->n) - 1); /* every master */
    return 0;
}
