/* declare.c - an operator's word on masters: declare-empty and readmit.
 *
 * declare-empty makes a new, empty master count at once; readmit makes
 * every master count, keys or not. Either looks at the fleet first (LEASES)
 * and refuses, unless forced, where a master that sits out may have granted
 * a lease still live: docs/memory-guard.md,
 * "The operator's word: declare-empty and readmit".
 */
#include "kinds/kinds.h"
#include "kinds/outcome.h"
#include "base/script.h"
#include "wire/guard.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum dec_phase { DEC_WAIT, DEC_LOOK, DEC_WORD };

typedef struct rl_declare {
    rl_op op;
    enum dec_phase phase;
    bool readmit;
    bool force;
    uint32_t asked_ms; /* readmit: the bound asked for (0: kept) */
    uint32_t bound_ms; /* readmit: the bound it sets (0: kept) */
    /* the look */
    uint32_t answered;
    uint32_t counting;  /* of those, masters whose votes count already */
    uint32_t unread;    /* of the others, masters whose report is not one LEASES sends */
    int64_t longest_ms; /* the longest live lease a master that counts reported */
    uint32_t longest_at;
    char longest_token[RL_TOKEN_LEN + 1];
    uint64_t fence; /* the largest fence counter reported */
    /* the word */
    uint32_t wait_ms;  /* reborn too lately to count yet: look again then */
    uint32_t looks;    /* looks so far */
    uint32_t declared; /* markers that count now, by this op */
    uint32_t refused;  /* masters that hold keys (declare-empty) */
    int64_t keys;      /* how many, on the first one refused */
    uint32_t first_refused;
    redlock_declare_cb cb;
    void *arg;
} rl_declare;

static rl_declare *DEC(rl_op *op)
{
    return (rl_declare *)(void *)op;
}

/* How long ago, on a master's clock, its rebirth must be before the word
 * makes it count: RL_QUORUM_MAX_MS on the clock of whoever started an
 * attempt, then on the master's (each perhaps a drift fast), and a ms. */
static uint32_t dec_min_age_ms(const redlock_client *c)
{
    double d = 1.0 + c->cfg.drift_factor;
    return (uint32_t)ceil(RL_QUORUM_MAX_MS * d * d) + 1;
}

/* One master's LEASES report {counts, left, maxttl, fence[, token[, the
 * age of its rebirth while pending]]}. */
static void dec_on_report(rl_declare *d, uint32_t idx, const rl_reply *r)
{
    rl_leases l;
    if (!rl_wire_leases_read(&l, r)) {
        if (r && rl_reply_type(r) != RL_REPLY_ERROR)
            d->unread |= 1u << idx; /* a lying master: not an answer */
        return;
    }
    d->answered |= 1u << idx;
    if (l.counts)
        d->counting |= 1u << idx;
    /* Reborn too lately for this look to have seen the leases still being
     * taken with its vote from before: look again once it may. */
    uint32_t min_age = dec_min_age_ms(d->op.c);
    if (!l.counts && l.since_ms >= 0 && l.since_ms < min_age &&
        min_age - (uint32_t)l.since_ms > d->wait_ms)
        d->wait_ms = min_age - (uint32_t)l.since_ms;
    if (l.fence > d->fence)
        d->fence = l.fence;
    if (l.counts && l.left_ms > d->longest_ms) {
        d->longest_ms = l.left_ms;
        d->longest_at = idx;
        snprintf(d->longest_token, sizeof(d->longest_token), "%s", l.token);
    }
}

static void dec_on_word(rl_declare *d, uint32_t idx, const rl_reply *r, int err, const char *why,
                        rl_monotime sent)
{
    rl_op *op = &d->op;
    redlock_vote *v = &op->out.votes[idx];
    if (!r) {
        rl_vote_failed(v, err, why, sent);
        return;
    }
    rl_word w;
    rl_wire_declare_read(&w, &op->c->nodes[idx], r);
    switch (w.kind) {
    case RL_WORD_WAIT: /* reborn too lately: the op looks again then */
        if (w.wait_ms > d->wait_ms)
            d->wait_ms = w.wait_ms;
        rl_vote_set(v, REDLOCK_VOTE_PENDING, REDLOCK_EUNTRUSTED,
                    "reborn just now: waits for the locks being taken to decide", sent);
        break;
    case RL_WORD_COUNTS:
        d->declared += w.fresh;
        rl_vote_set(v, REDLOCK_VOTE_OK, 0,
                    !w.fresh     ? "counts already: left alone"
                    : d->readmit ? "readmitted: counts at once"
                                 : "declared empty: counts at once",
                    sent);
        /* What it remembers changed: the next probe reads the new marker. */
        op->c->nodes[idx].trust.marker_known = false;
        break;
    case RL_WORD_HOLDS: {
        char why_not[REDLOCK_VOTE_DETAIL_LEN];
        snprintf(why_not, sizeof(why_not), "holds %lld keys: not new, left as it is", w.keys);
        rl_vote_set(v, REDLOCK_VOTE_ERROR, REDLOCK_EINVAL, why_not, sent);
        if (!d->refused++) {
            d->first_refused = idx;
            d->keys = w.keys;
        }
        break;
    }
    case RL_WORD_BAD: rl_vote_answer(v, &w.bad, sent, 0); break;
    }
}

static void dec_on_vote(rl_op *op, uint32_t idx, const rl_reply *r, int err, const char *why,
                        rl_monotime sent)
{
    rl_declare *d = DEC(op);
    if (d->phase == DEC_LOOK)
        dec_on_report(d, idx, r);
    else
        dec_on_word(d, idx, r, err, why, sent);
}

/* The looks before the word gives up on masters reborn again and again. */
#define DEC_LOOKS 4

/* What the look found that forbids the word, unless forced: said in
 * @op->err. 0 when nothing does. */
static int dec_refusal(rl_declare *d)
{
    rl_op *op = &d->op;
    redlock_client *c = op->c;
    const char *verb = d->readmit ? "readmit" : "declare-empty";
    uint32_t all = (1u << c->n) - 1;
    if (d->counting == all)
        return 0; /* nobody sits out: the word changes no vote */
    if (d->longest_ms > 0) {
        const rl_node *n = &c->nodes[d->longest_at];
        rl_seterr(&op->err, REDLOCK_ECONFLICT, (int)d->longest_at,
                  "%s: master %u (%s) remembers a live lease (token %.12s…) with %.1f s left; a "
                  "master that sits out may have granted it and forgotten: wait until it ends, "
                  "or force it",
                  verb, n->idx, n->addr.name, d->longest_token, d->longest_ms / 1000.0);
        return REDLOCK_ECONFLICT;
    }
    if (d->answered != all) {
        uint32_t i = (uint32_t)__builtin_ctz(all & ~d->answered);
        rl_seterr(&op->err, REDLOCK_ENOQUORUM, (int)i,
                  "%s: master %u (%s) %s: it may remember a live lease; bring it back, or force it",
                  verb, i, c->nodes[i].addr.name,
                  d->unread & (1u << i) ? "sent a report of its leases that no Redis sends"
                                        : "did not answer");
        return REDLOCK_ENOQUORUM;
    }
    return 0;
}

static void dec_look_again(rl_declare *d);

static void dec_word(rl_declare *d)
{
    rl_op *op = &d->op;
    if (d->wait_ms && d->looks + 1 < DEC_LOOKS) {
        dec_look_again(d);
        return;
    }
    int rc = dec_refusal(d);
    if (rc && !d->force) {
        rl_op_finish(op, rc);
        return;
    }
    if (rc) {
        rl_log(&op->c->cfg, REDLOCK_LOG_WARN, "forced: %s", op->err.msg);
        memset(&op->err, 0, sizeof(op->err));
    }
    /* Never below a lease the fleet reports live: the bound is what a
     * master that forgot sits out when nobody can measure its window. */
    if (d->readmit && d->asked_ms) {
        uint64_t live = (uint64_t)d->longest_ms;
        d->bound_ms = d->asked_ms > live ? d->asked_ms : (uint32_t)live;
    }
    d->phase = DEC_WORD;
    d->wait_ms = 0;
    char birth[RL_TOKEN_LEN + 1];
    if (rl_token_new(birth) != 0) {
        rl_seterr(&op->err, REDLOCK_ESYS, -1, "RAND_bytes failed: no name for a rebirth");
        rl_op_finish(op, REDLOCK_ESYS);
        return;
    }
    rl_cmd cmd;
    rl_cmd_declare(&cmd, d->readmit, d->bound_ms, d->fence, dec_min_age_ms(op->c), birth);
    rl_round_send(op, &cmd, op->ops->name, RL_ALL, RL_ALL, RL_ROUND_VOTES);
}

/* Some master was reborn too lately to count yet: look at the fleet again
 * once it may, and then say the word. */
static void dec_look_again(rl_declare *d)
{
    rl_op *op = &d->op;
    d->looks++;
    d->phase = DEC_WAIT;
    d->answered = d->counting = d->unread = 0;
    d->longest_ms = 0;
    d->fence = 0;
    rl_round_end(op);
    rl_op_arm(op, d->wait_ms);
    d->wait_ms = 0;
}

static void dec_decide(rl_op *op)
{
    rl_declare *d = DEC(op);
    if (d->phase == DEC_WAIT || op->pending_mask)
        return;
    if (d->phase == DEC_LOOK) {
        dec_word(d);
        return;
    }
    if (d->wait_ms && d->looks + 1 < DEC_LOOKS) {
        dec_look_again(d);
        return;
    }
    uint32_t ok = 0;
    for (uint32_t i = 0; i < op->c->n; i++)
        ok += op->out.votes[i].kind == REDLOCK_VOTE_OK;
    op->out.n_ok = ok;
    if (d->wait_ms) {
        rl_seterr(&op->err, REDLOCK_EUNTRUSTED, -1,
                  "%s: masters were reborn again while it looked (%u looks): try again when the "
                  "fleet is calm",
                  op->ops->name, DEC_LOOKS);
        rl_op_finish(op, REDLOCK_EUNTRUSTED);
        return;
    }
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

/* Look at the fleet: at once, or when a wait for masters reborn too lately
 * is over (every attempt that may have counted a vote one gave before it
 * forgot has decided by then). */
static void dec_on_timer(rl_op *op)
{
    rl_declare *d = DEC(op);
    d->phase = DEC_LOOK;
    rl_cmd cmd;
    rl_cmd_leases(&cmd);
    rl_round_send(op, &cmd, "leases", RL_ALL, RL_ALL, 0);
}

/* What both APIs report: the masters made to count whatever the status
 * (the blocking calls choose when to say it), the bound only on success. */
static void dec_deliver(rl_op *op)
{
    rl_declare *d = DEC(op);
    d->cb(op->c, op->status, d->declared, op->status ? 0 : d->bound_ms, &op->err, d->arg);
}

static const rl_op_ops declare_ops = {
    .kind = REDLOCK_OP_DECLARE,
    .name = "declare-empty",
    .on_vote = dec_on_vote,
    .decide = dec_decide,
    .on_timer = dec_on_timer,
    .deliver = dec_deliver,
};

static const rl_op_ops readmit_ops = {
    .kind = REDLOCK_OP_DECLARE,
    .name = "readmit",
    .on_vote = dec_on_vote,
    .decide = dec_decide,
    .on_timer = dec_on_timer,
    .deliver = dec_deliver,
};

int rl_declare_check(bool readmit, uint32_t max_ttl_ms, unsigned flags, redlock_error *e)
{
    const char *verb = readmit ? "readmit" : "declare-empty";
    if (readmit && max_ttl_ms > REDLOCK_TTL_MAX_MS) {
        rl_seterr(e, REDLOCK_EINVAL, -1, "%s: max_ttl_ms %u > %u", verb, max_ttl_ms,
                  (unsigned)REDLOCK_TTL_MAX_MS);
        return REDLOCK_EINVAL;
    }
    if (flags & ~REDLOCK_DECLARE_FORCE) {
        rl_seterr(e, REDLOCK_EINVAL, -1, "%s: unknown flags 0x%x", verb, flags);
        return REDLOCK_EINVAL;
    }
    return 0;
}

int rl_declare_start(redlock_client *c, bool readmit, uint32_t max_ttl_ms, unsigned flags,
                     redlock_declare_cb cb, void *arg, redlock_error *e)
{
    rl_op *op;
    int rc = rl_declare_check(readmit, max_ttl_ms, flags, e);
    if (!rc)
        rc = rl_op_new(c, readmit ? &readmit_ops : &declare_ops, sizeof(rl_declare), NULL, 0, 0,
                       &op, e);
    if (rc)
        return rc;
    rl_declare *d = DEC(op);
    d->cb = cb;
    d->arg = arg;
    d->readmit = readmit;
    d->force = flags & REDLOCK_DECLARE_FORCE;
    d->asked_ms = max_ttl_ms;
    op->attempts = 1;
    op->attempt_us = rl_now_us();
    dec_on_timer(op);
    return 0;
}
