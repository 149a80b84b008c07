/* declare.c - an operator declares new masters empty (redlock_declare_empty).
 *
 * A master without a memory marker votes for nobody until the longest ttl
 * in use has passed (script.c): it may have forgotten a lock. A master that
 * is new on purpose has nothing to forget; this gives each master that has
 * no marker one that counts at once, and leaves every existing marker
 * alone, so a master that lost its data on its own keeps its wait. Safety
 * rests on the operator's word here, as it does for any new deployment.
 */
#include "kinds.h"
#include "outcome.h"
#include "script.h"

typedef struct rl_declare {
    rl_op op;
    uint32_t declared;            /* markers created */
    rl_declare_cb cb;
    void *arg;
} rl_declare;

static rl_declare *DEC(rl_op *op)
{
    return (rl_declare *)(void *)op;
}

static void dec_on_vote(rl_op *op, uint32_t idx, const rl_reply *r, int err, const char *why,
                        rl_monotime sent)
{
    redlock_vote *v = &op->out.votes[idx];
    if (!r) {
        rl_vote_failed(v, err, why, sent);
    } else if (rl_reply_type(r) == RL_REPLY_INTEGER && rl_reply_integer(r) >= 0) {
        DEC(op)->declared += rl_reply_integer(r) == 1;
        rl_vote_set(v, REDLOCK_VOTE_OK, 0, rl_reply_integer(r) == 1 ? "declared empty"
                                                                    : "has a marker: left alone",
                    sent);
        /* What it remembers changed: the next probe reads the new marker. */
        op->c->nodes[idx].trust.marker_known = false;
    } else if (rl_reply_type(r) == RL_REPLY_ERROR) {
        rl_vote_error_reply(v, &op->c->nodes[idx], r, sent);
    } else {
        rl_vote_set(v, REDLOCK_VOTE_ERROR, REDLOCK_EPROTO, "unexpected reply", sent);
    }
}

static void dec_decide(rl_op *op)
{
    if (op->pending_mask)
        return;
    uint32_t ok = 0;
    for (uint32_t i = 0; i < op->c->n; i++)
        ok += op->out.votes[i].kind == REDLOCK_VOTE_OK;
    op->out.n_ok = ok;
    rl_op_finish(op, ok >= op->c->quorum ? 0 : rl_outcome_failure(op, "declare-empty", &op->err));
}

static void dec_deliver(rl_op *op)
{
    rl_declare *d = DEC(op);
    d->cb(op->c, op->status, d->declared, &op->out, op->status ? &op->err : NULL, d->arg);
}

static const rl_op_ops declare_ops = {
    .kind = REDLOCK_OP_DECLARE,
    .name = "declare-empty",
    .on_vote = dec_on_vote,
    .decide = dec_decide,
    .deliver = dec_deliver,
};

int rl_declare_start(redlock_client *c, rl_declare_cb cb, void *arg, redlock_error *e)
{
    if (c->freeing) {
        rl_seterr(e, REDLOCK_ESHUTDOWN, -1, "client is being freed");
        return REDLOCK_ESHUTDOWN;
    }
    rl_op *op = rl_op_new(c, &declare_ops, sizeof(rl_declare), NULL, 0, 0, e);
    if (!op)
        return REDLOCK_ENOMEM;
    rl_declare *d = DEC(op);
    d->cb = cb;
    d->arg = arg;
    op->attempts = 1;
    op->attempt_us = rl_now_us();
    rl_cmd cmd;
    rl_cmd_marker(&cmd, RL_SCRIPT_DECLARE);
    rl_round_send(op, &cmd, "declare-empty", RL_ALL, RL_ALL, false, true);
    return 0;
}
