/* extend.c - keep a lock: compare-token-then-expire on every master.
 *
 * Success is a majority that still held our token and took the new ttl,
 * validity timed from the start of this extend; a failure caps the lock's
 * validity (docs/safety.md, "What the implementation adds"). What each
 * master is sent, and what its reply means, is the wire's (wire/extend.c:
 * the extend script; docs/wire.md).
 */
#include "kinds/kinds.h"
#include "drift.h"
#include "kinds/identity.h"
#include "kinds/lock.h"
#include "kinds/outcome.h"
#include "wire/extend.h"

#include <stdio.h>

typedef struct rl_extend {
    rl_op op;
    char token[REDLOCK_TOKEN_MAX + 1];
    uint32_t ttl_ms;
    uint32_t n_ok, n_fail;
} rl_extend;

static rl_extend *EXT(rl_op *op)
{
    return (rl_extend *)(void *)op;
}

/* The wire's answer (wire/extend.c) as a vote, a key gone counting as
 * lost (ENOTHELD); an extension counts only where the master's word counts
 * now, once per server. */
static void ext_on_vote(rl_op *op, uint32_t idx, const rl_reply *r, int err, const char *why,
                        rl_monotime sent)
{
    rl_extend *x = EXT(op);
    redlock_vote *v = &op->out.votes[idx];
    char w[REDLOCK_VOTE_DETAIL_LEN];
    if (!r) {
        rl_vote_failed(v, err, why, sent);
        x->n_fail++;
        return;
    }
    rl_answer a;
    rl_wire_extend_read(&a, &op->c->nodes[idx], r);
    if (rl_vote_answer(v, &a, sent, REDLOCK_ENOTHELD) != REDLOCK_VOTE_OK) {
        x->n_fail++;
    } else if (!rl_node_vote_counts(&op->c->nodes[idx], w, sizeof(w))) {
        /* Extended there, but that master's word does not count now. */
        rl_vote_set(v, REDLOCK_VOTE_EXCLUDED, REDLOCK_EUNTRUSTED, w, sent);
        x->n_fail++;
    } else if (rl_round_same_server(op, idx, w, sizeof(w))) {
        /* Another entry's server, already counted this round (identity.c). */
        rl_vote_set(v, REDLOCK_VOTE_EXCLUDED, REDLOCK_EINVAL, w, sent);
        x->n_fail++;
    } else {
        x->n_ok++;
    }
}

/* Failure: cap the lock's validity by what the new ttl guarantees from this
 * extend's start (it may have run on some masters: docs/safety.md,
 * "What the implementation adds"). */
static void ext_failed(rl_extend *x, int status)
{
    rl_op *op = &x->op;
    int64_t cap_us = drift_validity_us(x->ttl_ms, 0, op->c->cfg.drift_factor);
    rl_monotime cap = cap_us > 0 ? op->attempt_us + (uint64_t)cap_us : op->attempt_us;
    /* 0 means "validity unknown" (redlock_lock_new): it stays unknown. */
    rl_monotime until = op->lock ? rl_lock_valid_until(op->lock) : 0;
    if (until != 0 && cap < until) {
        rl_lock_set_valid_until(op->lock, cap > 0 ? cap : 1);
        rl_mine_extend(op->c, op->lock->token, cap > 0 ? cap : 1);
    }
    rl_op_finish(op, status);
}

static void ext_decide(rl_op *op)
{
    rl_extend *x = EXT(op);
    redlock_client *c = op->c;
    op->out.n_ok = x->n_ok;
    if (x->n_ok >= c->quorum && rl_quorum_late(op, "extend")) {
        ext_failed(x, REDLOCK_ETIMEOUT);
    } else if (x->n_ok >= c->quorum) {
        rl_monotime now = rl_now_us();
        uint64_t elapsed = now - op->attempt_us;
        int64_t validity_ms = drift_validity_ms(x->ttl_ms, elapsed, c->cfg.drift_factor);
        op->decided_us = now;
        op->decided_ttl_ms = x->ttl_ms; /* the lock may be gone (watchdog stopped) */
        op->out.elapsed_us = elapsed;
        op->out.validity_ms = validity_ms;
        if (validity_ms <= 0) {
            rl_seterr(&op->err, REDLOCK_EEXPIRED, -1,
                      "extend: majority reached after %llu us, leaving no validity of a "
                      "%u ms ttl (raise the ttl)",
                      (unsigned long long)elapsed, x->ttl_ms);
            ext_failed(x, REDLOCK_EEXPIRED);
            return;
        }
        if (op->lock) {
            __atomic_store_n(&op->lock->ttl_ms, x->ttl_ms, __ATOMIC_RELAXED);
            rl_lock_set_valid_until(op->lock, op->attempt_us + (uint64_t)validity_ms * 1000);
            rl_mine_extend(c, op->lock->token, rl_lock_valid_until(op->lock));
        }
        rl_op_finish(op, 0);
    } else if (x->n_fail > c->n - c->quorum) {
        op->out.elapsed_us = rl_now_us() - op->attempt_us;
        ext_failed(x, rl_outcome_failure(op, &op->err));
    }
}

static const rl_op_ops extend_ops = {
    .kind = REDLOCK_OP_EXTEND,
    .name = "extend",
    .verdict = RL_VERDICT_HELD_LOST | RL_VERDICT_GONE_LOST,
    .on_vote = ext_on_vote,
    .decide = ext_decide,
};

/* The round's command, as the wire plans it (wire/extend.c): one form,
 * the same to every master. */
static rl_fanout *ext_fanout(rl_extend *x)
{
    rl_op *op = &x->op;
    redlock_client *c = op->c;
    rl_cmd script;
    rl_wire_extend_plan(&script, &op->k, x->token, x->ttl_ms, c->cfg.restart_guard);
    return rl_fanout_new(c->nodes, &script);
}

void rl_extend_forget_lock(rl_op *op)
{
    op->lock = NULL;
}

int rl_extend_start(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms, redlock_done_cb cb,
                    void *arg, rl_op **ret_op, redlock_error *e)
{
    int rc = rl_check_ttl(ttl_ms, c->cfg.drift_factor, e);
    if (rc)
        return rc;
    redlock_resource set[REDLOCK_SET_MAX];
    rl_op *op;
    rc = rl_op_new(c, &extend_ops, sizeof(rl_extend), set, rl_lock_resources(lock, set), 0, &op, e);
    if (rc)
        return rc;
    rl_extend *x = EXT(op);
    op->lock = lock; /* the caller's; NULL once the watchdog let go of it */
    x->ttl_ms = ttl_ms;
    op->cb = cb;
    op->arg = arg;
    if (ttl_ms > c->max_ttl_ms)
        c->max_ttl_ms = ttl_ms;
    snprintf(x->token, sizeof(x->token), "%s", lock->token);
    if (ret_op)
        *ret_op = op;
    op->attempts = 1;
    op->attempt_us = rl_now_us();
    rl_fanout *f = ext_fanout(x);
    if (!f) {
        rl_seterr(&op->err, REDLOCK_ENOMEM, -1, "out of memory sending extend");
        rl_op_finish(op, REDLOCK_ENOMEM);
        return 0;
    }
    rl_round_start(op, f, (1u << c->n) - 1, (1u << c->n) - 1, RL_ROUND_PRIORITY | RL_ROUND_VOTES);
    return 0;
}
