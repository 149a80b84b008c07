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
 * Extend does not retry by itself; the caller decides (redlock-cli run stops
 * its child). A failed extend may still have run PEXPIRE on some masters,
 * now or later (a silent master runs it when it wakes), so a shorter ttl can
 * shorten the keys under a lease the caller still holds: on failure the
 * lock's validity becomes min(old, what the new ttl guarantees from the
 * start of this extend), never more.
 */
#include "internal.h"
#include "drift.h"

#include <stdio.h>
#include <string.h>

static bool ext_decide(rl_op *op);

static void ext_on_vote(void *owner, rl_fanout *f, uint32_t idx, const redisReply *r,
                        int err, const char *errstr)
{
    rl_op *op = owner;
    redlock_vote *v = rl_op_take_vote(op, f, idx);
    if (!v)
        return;   /* late: after a timeout or a decision */
    rl_monotime sent = f->slots[idx].sent_us;
    if (!r) {
        rl_op_vote_failed(op, idx, err, errstr);
        ext_decide(op);
        return;
    }
    char why[REDLOCK_VOTE_DETAIL_LEN];
    if (rl_vote_script_reply(v, &op->c->nodes[idx], r, sent, "extend", REDLOCK_ENOTHELD) !=
        REDLOCK_VOTE_OK) {
        op->n_fail++;
    } else if (rl_node_excluded(&op->c->nodes[idx], op->ttl_ms, why, sizeof(why))) {
        /* Extended there, but that master's word does not count now. */
        rl_vote_set(v, REDLOCK_VOTE_EXCLUDED, REDLOCK_EUNTRUSTED, why, sent);
        op->n_fail++;
    } else {
        op->n_ok++;
    }
    ext_decide(op);
}

/* Failure: cap the lock's validity by the new ttl (see top of file). */
static void ext_failed(rl_op *op, int status)
{
    redlock_client *c = op->c;
    int64_t cap_us = drift_validity_us(op->ttl_ms, 0, c->cfg.drift_factor);
    rl_monotime cap = cap_us > 0 ? op->start_us + (uint64_t)cap_us : op->start_us;
    /* 0 means "validity unknown" (redlock_lock_new): it stays unknown. A
     * NULL lock: a watchdog extend whose watchdog stopped meanwhile. */
    rl_monotime until = op->lock ? rl_lock_valid_until(op->lock) : 0;
    if (until != 0 && cap < until)
        rl_lock_set_valid_until(op->lock, cap > 0 ? cap : 1);
    rl_op_complete(op, status);
}

static bool ext_decide(rl_op *op)
{
    redlock_client *c = op->c;
    op->out.n_ok = op->n_ok;
    if (op->n_ok >= c->quorum) {
        uint64_t elapsed = rl_now_us() - op->start_us;
        int64_t validity_ms = drift_validity_ms(op->ttl_ms, elapsed, c->cfg.drift_factor);
        op->out.elapsed_us = elapsed;
        op->out.validity_ms = validity_ms;
        rl_op_disarm(op);
        if (validity_ms <= 0) {
            rl_seterr(&op->err, REDLOCK_EEXPIRED, -1,
                      "extend: majority reached after %llu us, leaving no validity of a "
                      "%u ms ttl (raise the ttl)", (unsigned long long)elapsed, op->ttl_ms);
            ext_failed(op, REDLOCK_EEXPIRED);
            return true;
        }
        if (op->lock) {
            __atomic_store_n(&op->lock->ttl_ms, op->ttl_ms, __ATOMIC_RELAXED);
            rl_lock_set_valid_until(op->lock, op->start_us + (uint64_t)validity_ms * 1000);
        }
        rl_op_complete(op, 0);
        return true;
    }
    if (op->n_fail > c->n - c->quorum) {
        rl_op_disarm(op);
        op->out.elapsed_us = rl_now_us() - op->start_us;
        ext_failed(op, rl_outcome_failure(op, "extend", &op->err));
        return true;
    }
    return false;
}

void rl_extend_on_timer(rl_op *op)
{
    if (op->phase != RL_PHASE_VOTING)
        return;
    rl_op_timeout_pending(op, NULL);
    ext_decide(op);
}

int rl_extend_start(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms,
                    redlock_op_cb cb, void *arg, redlock_error *reterr)
{
    return rl_extend_start_op(c, lock, ttl_ms, cb, arg, NULL, reterr);
}

int rl_extend_start_op(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms,
                       redlock_op_cb cb, void *arg, rl_op **ret_op, redlock_error *reterr)
{
    if (c->freeing) {
        rl_seterr(reterr, REDLOCK_ESHUTDOWN, -1, "client is being freed");
        return REDLOCK_ESHUTDOWN;
    }
    if (!lock || !cb) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "extend: lock and callback must not be NULL");
        return REDLOCK_EINVAL;
    }
    int rc = rl_check_ttl(c, ttl_ms, reterr);
    if (rc)
        return rc;
    redlock_resource set[REDLOCK_SET_MAX];
    rl_op *op = rl_op_new(c, RL_OP_EXTEND, set, (size_t)rl_lock_resources(lock, set), false,
                          reterr);
    if (!op)
        return REDLOCK_ENOMEM;
    op->lock = lock;
    op->ttl_ms = ttl_ms;
    if (ttl_ms > c->max_ttl_ms)
        c->max_ttl_ms = ttl_ms;
    op->op_cb = cb;
    op->arg = arg;
    op->attempt = 1;
    op->phase = RL_PHASE_VOTING;
    snprintf(op->token, sizeof(op->token), "%s", lock->token);
    op->f = rl_fanout_new(c, RL_CMD_EXTEND, &op->keys, NULL, op->token, ttl_ms, 0,
                          ext_on_vote, op);
    if (!op->f) {
        rl_seterr(&op->err, REDLOCK_ENOMEM, -1, "out of memory sending extend");
        rl_op_complete(op, REDLOCK_ENOMEM);
        return 0;
    }
    op->start_us = rl_now_us();
    if (ret_op)
        *ret_op = op;
    c->in_start = true;
    rl_op_send(op, (1u << c->n) - 1, true, NULL);
    if (!ext_decide(op))
        rl_op_arm(op, c->cfg.node_timeout_ms);
    c->in_start = false;
    return 0;
}

int redlock_extend_async(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms,
                         redlock_op_cb cb, void *arg, redlock_error *reterr)
{
    int rc = rl_check_async(c, reterr);
    return rc ? rc : rl_extend_start(c, lock, ttl_ms, cb, arg, reterr);
}
