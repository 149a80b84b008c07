/* extend.c - keep a lock: compare-token-then-PEXPIRE on every master.
 *
 * Success needs a majority of masters where the key still holds our token
 * and got the new ttl, and validity recomputed exactly as for acquire,
 * timed from the start of this extend: ttl - elapsed - drift margin.
 *
 * Why mutual exclusion holds: PEXPIRE only runs where our token is still
 * stored, so extend never resurrects a lock somebody else took; a master
 * where the key is gone does not count. Extending on a majority at time t
 * keeps those keys until at least t + ttl on their clocks, so the same
 * majority-intersection argument as for acquire applies from t on.
 * Extend does not retry by itself; the caller (or the watchdog) decides. A
 * failed extend may still have run PEXPIRE on some masters, now or later (a
 * silent master runs it when it wakes), so a shorter ttl can shorten the
 * keys under a lease the caller still holds: on failure the lock's validity
 * becomes min(old, what the new ttl guarantees from the start of this
 * extend), never more.
 */
#include "kinds.h"
#include "drift.h"
#include "identity.h"
#include "lock.h"
#include "outcome.h"

#include <stdio.h>
#include <string.h>

typedef struct rl_extend {
    rl_op op;
    char token[REDLOCK_TOKEN_MAX + 1];
    redlock_lock *lock; /* the caller's; NULL once the watchdog let go of it */
    uint32_t ttl_ms;
    uint32_t n_ok, n_fail;
    redlock_op_cb cb;
    void *arg;
} rl_extend;

static rl_extend *EXT(rl_op *op)
{
    return (rl_extend *)(void *)op;
}

static void ext_on_vote(rl_op *op, uint32_t idx, const rl_reply *r, int err, const char *why,
                        rl_monotime sent)
{
    rl_extend *x = EXT(op);
    redlock_vote *v = &op->out.votes[idx];
    char w[REDLOCK_VOTE_DETAIL_LEN];
    if (!r) {
        rl_vote_failed(v, err, why, sent);
        x->n_fail++;
    } else if (rl_vote_script_reply(v, &op->c->nodes[idx], r, sent, "extend", REDLOCK_ENOTHELD) !=
               REDLOCK_VOTE_OK) {
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

/* Failure: cap the lock's validity by the new ttl (see top of file). */
static void ext_failed(rl_extend *x, int status)
{
    rl_op *op = &x->op;
    int64_t cap_us = drift_validity_us(x->ttl_ms, 0, op->c->cfg.drift_factor);
    rl_monotime cap = cap_us > 0 ? op->attempt_us + (uint64_t)cap_us : op->attempt_us;
    /* 0 means "validity unknown" (redlock_lock_new): it stays unknown. */
    rl_monotime until = x->lock ? rl_lock_valid_until(x->lock) : 0;
    if (until != 0 && cap < until)
        rl_lock_set_valid_until(x->lock, cap > 0 ? cap : 1);
    rl_op_finish(op, status);
}

static void ext_decide(rl_op *op)
{
    rl_extend *x = EXT(op);
    redlock_client *c = op->c;
    op->out.n_ok = x->n_ok;
    if (x->n_ok >= c->quorum) {
        uint64_t elapsed = rl_now_us() - op->attempt_us;
        int64_t validity_ms = drift_validity_ms(x->ttl_ms, elapsed, c->cfg.drift_factor);
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
        if (x->lock) {
            __atomic_store_n(&x->lock->ttl_ms, x->ttl_ms, __ATOMIC_RELAXED);
            rl_lock_set_valid_until(x->lock, op->attempt_us + (uint64_t)validity_ms * 1000);
        }
        rl_op_finish(op, 0);
    } else if (x->n_fail > c->n - c->quorum) {
        op->out.elapsed_us = rl_now_us() - op->attempt_us;
        ext_failed(x, rl_outcome_failure(op, "extend", &op->err));
    }
}

static void ext_deliver(rl_op *op)
{
    rl_extend *x = EXT(op);
    x->cb(op->c, op->status, x->lock, &op->out, op->status ? &op->err : NULL, x->arg);
}

static const rl_op_ops extend_ops = {
    .kind = REDLOCK_OP_EXTEND,
    .name = "extend",
    .on_vote = ext_on_vote,
    .decide = ext_decide,
    .deliver = ext_deliver,
};

void rl_extend_forget_lock(rl_op *op)
{
    EXT(op)->lock = NULL;
}

int rl_extend_start(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms, redlock_op_cb cb,
                    void *arg, rl_op **ret_op, redlock_error *e)
{
    if (c->freeing) {
        rl_seterr(e, REDLOCK_ESHUTDOWN, -1, "client is being freed");
        return REDLOCK_ESHUTDOWN;
    }
    if (!lock || !cb) {
        rl_seterr(e, REDLOCK_EINVAL, -1, "extend: lock and callback must not be NULL");
        return REDLOCK_EINVAL;
    }
    int rc = rl_check_ttl(ttl_ms, c->cfg.drift_factor, e);
    if (rc)
        return rc;
    redlock_resource set[REDLOCK_SET_MAX];
    rl_op *op = rl_op_new(c, &extend_ops, sizeof(rl_extend), set, rl_lock_resources(lock, set), 0,
                          e);
    if (!op)
        return REDLOCK_ENOMEM;
    rl_extend *x = EXT(op);
    x->lock = lock;
    x->ttl_ms = ttl_ms;
    x->cb = cb;
    x->arg = arg;
    if (ttl_ms > c->max_ttl_ms)
        c->max_ttl_ms = ttl_ms;
    snprintf(x->token, sizeof(x->token), "%s", lock->token);
    if (ret_op)
        *ret_op = op;
    op->attempts = 1;
    op->attempt_us = rl_now_us();
    rl_cmd cmd;
    rl_cmd_extend(&cmd, &op->k, x->token, ttl_ms, c->cfg.restart_guard);
    rl_round_send(op, &cmd, "extend", RL_ALL, RL_ALL, true, true);
    return 0;
}

int redlock_extend_async(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms, redlock_op_cb cb,
                         void *arg, redlock_error *reterr)
{
    int rc = rl_check_async(c, reterr);
    return rc ? rc : rl_extend_start(c, lock, ttl_ms, cb, arg, NULL, reterr);
}
