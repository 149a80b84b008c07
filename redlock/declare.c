/* declare.c - an operator's word on masters: declare-empty and readmit.
 *
 * A master that lost its data, or restarted with data that may lack grants,
 * votes for nobody until the leases it may have granted have ended
 * (script.c, memory.c). A master that is new on purpose has nothing to
 * forget: declare-empty makes its marker count at once, but only where the
 * master holds no key at all (a master that reloaded data is not new, and
 * is refused, named in the error), and leaves a marker that counts alone.
 * readmit is for an operator who checked the fleet (no lock is live that
 * such a master may have granted): every master counts at once, keys or
 * not, and the fleet's bound for unmeasured windows may be reset. Safety
 * rests on the operator's word there, as it does for any new deployment.
 */
#include "kinds.h"
#include "outcome.h"
#include "script.h"

#include <stdio.h>

typedef struct rl_declare {
    rl_op op;
    uint32_t declared; /* markers that count now, by this op */
    uint32_t refused;  /* masters that hold keys (declare-empty) */
    int64_t keys;      /* how many, on the first one refused */
    uint32_t first_refused;
    bool readmit;
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
        rl_declare *d = DEC(op);
        d->declared += rl_reply_integer(r) == 1;
        rl_vote_set(v, REDLOCK_VOTE_OK, 0,
                    rl_reply_integer(r) == 0 ? "counts already: left alone"
                    : d->readmit             ? "readmitted: counts at once"
                                             : "declared empty: counts at once",
                    sent);
        /* What it remembers changed: the next probe reads the new marker. */
        op->c->nodes[idx].trust.marker_known = false;
    } else if (rl_reply_type(r) == RL_REPLY_INTEGER) {
        rl_declare *d = DEC(op);
        char w[REDLOCK_VOTE_DETAIL_LEN];
        snprintf(w, sizeof(w), "holds %lld keys: not new, left as it is", -rl_reply_integer(r));
        rl_vote_set(v, REDLOCK_VOTE_ERROR, REDLOCK_EINVAL, w, sent);
        if (!d->refused++) {
            d->first_refused = idx;
            d->keys = -rl_reply_integer(r);
        }
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
    rl_declare *d = DEC(op);
    if (d->refused) {
        const rl_node *n = &op->c->nodes[d->first_refused];
        rl_seterr(&op->err, REDLOCK_EINVAL, (int)d->first_refused,
                  "declare-empty: master %u (%s) holds %lld keys, so it is not new: it sits out "
                  "until its leases end (%u of %u refused; %u declared)",
                  n->idx, n->addr.name, (long long)d->keys, d->refused, op->c->n, d->declared);
        rl_op_finish(op, REDLOCK_EINVAL);
        return;
    }
    rl_op_finish(op, ok >= op->c->quorum ? 0 : rl_outcome_failure(op, &op->err));
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

static const rl_op_ops readmit_ops = {
    .kind = REDLOCK_OP_DECLARE,
    .name = "readmit",
    .on_vote = dec_on_vote,
    .decide = dec_decide,
    .deliver = dec_deliver,
};

int rl_declare_start(redlock_client *c, bool readmit, uint32_t max_ttl_ms, rl_declare_cb cb,
                     void *arg, redlock_error *e)
{
    rl_op *op;
    int rc = rl_op_new(c, readmit ? &readmit_ops : &declare_ops, sizeof(rl_declare), NULL, 0, 0,
                       &op, e);
    if (rc)
        return rc;
    rl_declare *d = DEC(op);
    d->cb = cb;
    d->arg = arg;
    d->readmit = readmit;
    op->attempts = 1;
    op->attempt_us = rl_now_us();
    rl_cmd cmd;
    rl_cmd_declare(&cmd, readmit, max_ttl_ms);
    rl_round_send(op, &cmd, op->ops->name, RL_ALL, RL_ALL, RL_ROUND_VOTES);
    return 0;
}
