/* release.c - give a lock back: compare-token-then-DEL on every master.
 *
 * The script deletes the key only where it still holds our token, so a
 * release can never remove a lock another client took after ours expired.
 * A master where the key is already gone counts as released ("gone"):
 * releasing a lapsed lock is not an error. The release returns as soon as a
 * majority has released; masters that have not answered still have the
 * script queued on their connection and run it when they wake. When no
 * majority is reached, masters that failed for transient reasons (timeout,
 * connection) are retried, up to release_retry_count times, which is
 * independent of the acquire retry settings.
 *
 * Mutual exclusion is untouched by release: it only ever deletes our own
 * key, so it can only make the resource free earlier, never give it to two.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

static bool rel_decide(rl_op *op);

static void rel_on_vote(void *owner, rl_fanout *f, uint32_t idx, const redisReply *r,
                        int err, const char *errstr)
{
    rl_op *op = owner;
    redlock_vote *v = rl_op_take_vote(op, f, idx);
    if (!v)
        return;   /* late: after a timeout or a decision */
    rl_monotime sent = f->slots[idx].sent_us;
    if (!r)
        rl_op_vote_failed(op, idx, err, errstr);
    else
        rl_vote_script_reply(v, &op->c->nodes[idx], r, sent, "release", 0);
    rel_decide(op);
}

static bool vote_is_transient(const redlock_vote *v)
{
    return v->kind == REDLOCK_VOTE_TIMEOUT || v->kind == REDLOCK_VOTE_DOWN;
}

static void rel_send(rl_op *op, uint32_t mask)
{
    redlock_client *c = op->c;
    op->attempt++;
    op->phase = RL_PHASE_VOTING;
    rl_fanout_detach(op->f);
    op->f = rl_fanout_new(c, RL_CMD_RELEASE, &op->keys, NULL, op->token, 0, 0, rel_on_vote, op);
    if (!op->f) {
        rl_seterr(&op->err, REDLOCK_ENOMEM, -1, "out of memory sending release");
        rl_op_complete(op, REDLOCK_ENOMEM);
        return;
    }
    /* Priority: a release pairs with a SET that was admitted, so it may
     * use the headroom above max_inflight. */
    rl_op_send(op, mask, true, NULL);
    if (!rel_decide(op))
        rl_op_arm(op, c->cfg.node_timeout_ms);
}

static bool rel_decide(rl_op *op)
{
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
        rl_op_disarm(op);
        op->out.elapsed_us = rl_now_us() - op->start_us;
        rl_op_complete(op, 0);
        return true;
    }
    if (op->n_pending > 0)
        return false;
    rl_op_disarm(op);
    op->out.elapsed_us = rl_now_us() - op->start_us;
    if (retry && op->attempt <= c->cfg.release_retry_count && !c->freeing) {
        op->phase = RL_PHASE_WAITING;
        op->n_cleanup_wait = retry;   /* reused: the masters to retry */
        rl_op_arm(op, c->cfg.release_retry_delay_ms);
        return true;
    }
    rl_op_complete(op, rl_outcome_failure(op, "release", &op->err));
    return true;
}

void rl_release_on_timer(rl_op *op)
{
    if (op->phase == RL_PHASE_WAITING) {
        rel_send(op, op->n_cleanup_wait);
        return;
    }
    if (op->phase != RL_PHASE_VOTING)
        return;
    rl_op_timeout_pending(op, NULL);
    rel_decide(op);
}

int rl_release_start(redlock_client *c, redlock_lock *lock, redlock_op_cb cb, void *arg,
                     redlock_error *reterr)
{
    if (c->freeing) {
        rl_seterr(reterr, REDLOCK_ESHUTDOWN, -1, "client is being freed");
        return REDLOCK_ESHUTDOWN;
    }
    if (!lock || !cb) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "release: lock and callback must not be NULL");
        return REDLOCK_EINVAL;
    }
    redlock_resource set[REDLOCK_SET_MAX];
    rl_op *op = rl_op_new(c, RL_OP_RELEASE, set, (size_t)rl_lock_resources(lock, set), false,
                          reterr);
    if (!op)
        return REDLOCK_ENOMEM;
    op->lock = lock;
    op->op_cb = cb;
    op->arg = arg;
    snprintf(op->token, sizeof(op->token), "%s", lock->token);
    rl_watchdog_stop(c, lock);
    /* Whatever the outcome, the caller stops holding the lock now: a
     * release that fails may still run on some masters later. */
    rl_lock_set_valid_until(lock, 1);
    op->start_us = rl_now_us();
    c->in_start = true;
    rel_send(op, (1u << c->n) - 1);   /* every master */
    c->in_start = false;
    return 0;
}

int redlock_release_async(redlock_client *c, redlock_lock *lock, redlock_op_cb cb, void *arg,
                          redlock_error *reterr)
{
    int rc = rl_check_async(c, reterr);
    return rc ? rc : rl_release_start(c, lock, cb, arg, reterr);
}
