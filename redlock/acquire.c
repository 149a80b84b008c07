/* acquire.c - take a lock: SET NX PX on every master at once, decide early.
 *
 * One op covers every attempt of one acquire. Each attempt:
 *   1. a fresh token and a monotonic start time;
 *   2. SET key token NX PX ttl to all N masters (one fanout);
 *   3. decide the moment the outcome is known: success at the quorum-th OK,
 *      failure the moment fewer than a quorum of masters can still say OK,
 *      or at the node timeout for masters that have not answered;
 *   4. success needs validity = ttl - elapsed - margin > 0 (drift/);
 *   5. on failure, release on every master the SET may have written to
 *      (including the silent ones), wait for that release from the masters
 *      that answered or were still pending (never from timed-out ones,
 *      and at most one node timeout), then retry after retry_delay +
 *      jitter.
 *
 * Sets of resources and fencing use one Lua script per master instead of
 * SET (all keys or none; fenced: also INCR each resource's counter and
 * return the largest). A fenced acquire that reached a quorum writes the
 * largest value back to every master (counter = max(counter, value)) and
 * succeeds only once a majority acknowledged it, with validity measured at
 * that moment.
 *
 * Why mutual exclusion holds (NOTES.md has the long form): a key is only
 * written by NX, so at any time at most one token holds each master. Two
 * clients that both count a quorum would need a master that granted both
 * inside one ttl; majorities intersect, so that master must have lost the
 * first key early: a clock running fast beyond the drift factor, or a
 * restart without persistence. Early return does not change this: we
 * only claim the lock on a quorum of OKs, and OKs that arrive later only add
 * keys carrying our token, which can only stop others.
 */
#include "internal.h"
#include "drift.h"

#include <stdio.h>
#include <string.h>

static void acq_attempt_start(rl_op *op);
static bool acq_decide(rl_op *op);

static void acq_on_vote(void *owner, rl_fanout *f, uint32_t idx, const redisReply *r,
                        int err, const char *errstr)
{
    rl_op *op = owner;
    redlock_vote *v = rl_op_take_vote(op, f, idx);
    if (!v)
        return;   /* late: after a timeout or a decision */
    rl_monotime sent = f->slots[idx].sent_us;
    if (!r) {
        rl_op_vote_failed(op, idx, err, errstr);
    } else if ((r->type == REDIS_REPLY_STATUS && r->len == 2 && memcmp(r->str, "OK", 2) == 0) ||
               (r->type == REDIS_REPLY_INTEGER && r->integer >= 0 && f->cmd == RL_CMD_ACQUIRE)) {
        /* Checked again on the OK itself: the handshake that tells us a
         * master restarted is answered just before votes queued behind it. */
        char why[REDLOCK_VOTE_DETAIL_LEN];
        if (rl_node_excluded(&op->c->nodes[idx], op->ttl_ms, why, sizeof(why))) {
            rl_vote_set(v, REDLOCK_VOTE_EXCLUDED, REDLOCK_EUNTRUSTED, why, sent);
            op->n_fail++;
        } else {
            rl_vote_set(v, REDLOCK_VOTE_OK, 0, "", sent);
            op->n_ok++;
            if (r->type == REDIS_REPLY_INTEGER && (uint64_t)r->integer > op->fence)
                op->fence = (uint64_t)r->integer;
        }
    } else if (r->type == REDIS_REPLY_NIL) {
        /* NX refused: the key exists. It could also be a key of another
         * type; the cleanup release below tells the two apart. */
        rl_vote_set(v, REDLOCK_VOTE_HELD, REDLOCK_ECONFLICT, "held by another client", sent);
        op->n_fail++;
    } else if (r->type == REDIS_REPLY_ERROR) {
        rl_vote_error_reply(v, &op->c->nodes[idx], r, sent);
        op->n_fail++;
    } else {
        char d[64];
        snprintf(d, sizeof(d), "unexpected %s reply to the acquire", rl_reply_type_name(r->type));
        rl_vote_set(v, REDLOCK_VOTE_ERROR, REDLOCK_EPROTO, d, sent);
        op->n_fail++;
    }
    acq_decide(op);
}

/* After a failed attempt: a WRONGTYPE from the cleanup release turns a
 * "held" vote into what it really was: a key of another type under our
 * name, which no amount of waiting will free. */
static void acq_on_cleanup(void *owner, rl_fanout *f, uint32_t idx, const redisReply *r,
                           int err, const char *errstr)
{
    (void)err; (void)errstr;
    rl_op *op = owner;
    if (op->phase != RL_PHASE_CLEANUP || f != op->cleanup)
        return;
    redlock_vote *v = &op->out.votes[idx];
    if (r && r->type == REDIS_REPLY_ERROR && v->kind == REDLOCK_VOTE_HELD &&
        rl_classify_error_reply(r->str, r->len) == REDLOCK_EWRONGTYPE) {
        v->kind = REDLOCK_VOTE_ERROR;
        v->err = REDLOCK_EWRONGTYPE;
        snprintf(v->detail, sizeof(v->detail), "key holds a non-string value (WRONGTYPE)");
    }
    /* Count down only the masters we wait for (those that answered the
     * SET); releases from the silent ones may arrive here too. */
    uint32_t bit = 1u << idx;
    if (op->n_cleanup_wait & bit) {
        op->n_cleanup_wait &= ~bit;
        if (op->n_cleanup_wait == 0)
            rl_acquire_on_timer(op);   /* all answered: move on now */
    }
}

static void acq_after_cleanup(rl_op *op)
{
    redlock_client *c = op->c;
    rl_op_disarm(op);
    rl_fanout_detach(op->cleanup);
    op->cleanup = NULL;
    /* Classify from the votes now that cleanup had its say (WRONGTYPE),
     * unless the votes were fine and the fence write-back failed: that
     * message (acq_fence_decide) says what happened. */
    int status = op->status == REDLOCK_ENOQUORUM && !op->fence_failed
                     ? rl_outcome_failure(op, "acquire", &op->err)
                     : op->status;
    op->status = status;
    bool retryable = status == REDLOCK_ECONFLICT || status == REDLOCK_ENOQUORUM ||
                     status == REDLOCK_EEXPIRED;
    if (retryable && op->attempt < op->max_attempts && !c->freeing) {
        op->phase = RL_PHASE_WAITING;
        /* Held by someone: listen for its release instead of only polling.
         * Subscribed from the first conflict on, for the op's lifetime. */
        if (status == REDLOCK_ECONFLICT && c->cfg.pubsub_wait && !op->watching) {
            rl_pubsub_watch(c, &op->keys);
            op->watching = true;
        }
        uint32_t delay = c->cfg.retry_delay_ms;
        if (c->cfg.retry_jitter_ms) {
            /* xorshift64: spreads contending clients apart */
            c->rng ^= c->rng << 13;
            c->rng ^= c->rng >> 7;
            c->rng ^= c->rng << 17;
            delay += (uint32_t)(c->rng % ((uint64_t)c->cfg.retry_jitter_ms + 1));
        }
        rl_op_arm(op, delay);
        return;
    }
    rl_op_complete(op, status);
}

static void acq_attempt_failed(rl_op *op, int status)
{
    redlock_client *c = op->c;
    rl_op_disarm(op);
    op->status = status;
    op->out.elapsed_us = rl_now_us() - op->start_us;
    if (status == REDLOCK_EEXPIRED)
        rl_seterr(&op->err, status, -1,
                  "acquire: quorum reached after %llu us, leaving no validity of a %u ms ttl "
                  "(raise the ttl, or lower node_timeout_ms)",
                  (unsigned long long)op->out.elapsed_us, op->ttl_ms);

    rl_fanout_detach(op->fencing);   /* a fenced attempt that failed late */
    op->fencing = NULL;
    /* Release on every master the SET may have written to, answered or not. A silent
     * master gets the release queued behind the SET on the same connection,
     * so it runs after the SET whenever the master wakes up. Masters we
     * never sent the SET to cannot hold this attempt's token. */
    rl_fanout *set = op->f;
    op->f = NULL;
    op->n_cleanup_wait = 0;
    op->cleanup = rl_fanout_new(c, RL_CMD_RELEASE, &op->keys, NULL, op->token, 0, 0,
                                acq_on_cleanup, op);
    bool last = op->attempt >= op->max_attempts;
    for (uint32_t i = 0; op->cleanup && i < c->n; i++) {
        if (set->slots[i].state == RL_SLOT_IDLE)
            continue;
        int kind = op->out.votes[i].kind;
        /* A master that said "held" wrote nothing: NX refused. Its release
         * is only worth sending on the last attempt, where its answer tells
         * a real holder from a key of another type (WRONGTYPE). Under
         * contention this saves a script per held master per attempt. */
        if (kind == REDLOCK_VOTE_HELD && !last)
            continue;
        /* Wait for the release from masters that answered the SET, and from
         * those still pending when an early failure was decided: they are
         * not known to be silent, and their SET may land a moment later.
         * Never from masters that timed out. */
        if (rl_fanout_send(op->cleanup, i, true) == 0 &&
            (kind == REDLOCK_VOTE_OK || kind == REDLOCK_VOTE_HELD || kind == REDLOCK_VOTE_ERROR ||
             kind == REDLOCK_VOTE_PENDING))
            op->n_cleanup_wait |= 1u << i;
    }
    if (!op->cleanup)
        rl_log(c, REDLOCK_LOG_WARN, "acquire: out of memory for cleanup; keys expire after %u ms",
               op->ttl_ms);
    rl_fanout_detach(set);
    /* Waiting for the release costs one round trip, and buys two things:
     * the next attempt cannot race our own stale keys, and when acquire
     * reports failure the keys are gone from every master that answers. We
     * never wait for masters that already timed out, and the wait itself is
     * bounded by one node timeout. */
    if (op->n_cleanup_wait > 0) {
        op->phase = RL_PHASE_CLEANUP;
        rl_op_arm(op, c->cfg.node_timeout_ms);
    } else {
        acq_after_cleanup(op);
    }
}

/* A quorum said OK (and, fenced, a majority stored the fence): validity is
 * measured now, from the start of this attempt. */
static void acq_succeed(rl_op *op)
{
    redlock_client *c = op->c;
    rl_monotime now = rl_now_us();
    uint64_t elapsed = now - op->start_us;
    int64_t validity_ms = drift_validity_ms(op->ttl_ms, elapsed, c->cfg.drift_factor);
    op->out.elapsed_us = elapsed;
    op->out.validity_ms = validity_ms;
    if (validity_ms <= 0) {
        acq_attempt_failed(op, REDLOCK_EEXPIRED);
        return;
    }
    redlock_resource set[REDLOCK_SET_MAX];
    for (uint32_t i = 0; i < op->nres; i++) {
        set[i].name = op->keys.v[i] + c->prefix_len;
        set[i].len = op->keys.len[i] - c->prefix_len;
    }
    redlock_lock *lock = rl_lock_new(set, op->nres, op->token);
    if (!lock) {
        rl_seterr(&op->err, REDLOCK_ENOMEM, -1, "out of memory creating the lock");
        acq_attempt_failed(op, REDLOCK_ENOMEM);
        return;
    }
    lock->ttl_ms = op->ttl_ms;
    lock->fence = (op->flags & REDLOCK_FENCE) ? op->fence : 0;
    /* Validity runs from the start of this attempt, never from before the
     * retries: the keys were set no earlier than that. */
    rl_lock_set_valid_until(lock, op->start_us + (uint64_t)validity_ms * 1000);
    op->lock = lock;
    rl_op_disarm(op);
    rl_op_complete(op, 0);
}

/* Fence write-back: n_ok/n_fail count acknowledgements now (the vote vector
 * keeps what the acquire itself saw); n_pending is a bitmask of masters
 * still owing one. */
static void acq_fence_decide(rl_op *op)
{
    redlock_client *c = op->c;
    if (op->n_ok >= c->quorum) {
        rl_fanout_detach(op->fencing);
        op->fencing = NULL;
        acq_succeed(op);
    } else if (op->n_fail > c->n - c->quorum) {
        op->fence_failed = true;
        rl_seterr(&op->err, REDLOCK_ENOQUORUM, -1,
                  "acquire: fencing token %llu reached only %u of %u masters, %u needed",
                  (unsigned long long)op->fence, op->n_ok, c->n, c->quorum);
        acq_attempt_failed(op, REDLOCK_ENOQUORUM);
    }
}

static void acq_on_fenced(void *owner, rl_fanout *f, uint32_t idx, const redisReply *r,
                          int err, const char *errstr)
{
    (void)err; (void)errstr;
    rl_op *op = owner;
    if (op->phase != RL_PHASE_FENCING || f != op->fencing || !(op->n_pending & (1u << idx)))
        return;
    op->n_pending &= ~(1u << idx);
    if (r && r->type == REDIS_REPLY_INTEGER && r->integer == 1)
        op->n_ok++;
    else
        op->n_fail++;
    acq_fence_decide(op);
}

/* After a fenced quorum: counter = max(counter, fence) on every master,
 * then wait for a majority. The SET fanout stays attached (its slots tell
 * cleanup where the acquire went if this fails); late votes are ignored
 * because the phase is no longer VOTING. */
static void acq_fence(rl_op *op)
{
    redlock_client *c = op->c;
    op->phase = RL_PHASE_FENCING;
    op->n_ok = op->n_fail = op->n_pending = 0;
    rl_op_disarm(op);
    op->fencing = rl_fanout_new(c, RL_CMD_FENCE, NULL, &op->fences, NULL, 0, op->fence,
                                acq_on_fenced, op);
    if (!op->fencing) {
        rl_seterr(&op->err, REDLOCK_ENOMEM, -1, "out of memory sending the fence");
        acq_attempt_failed(op, REDLOCK_ENOMEM);
        return;
    }
    for (uint32_t i = 0; i < c->n; i++) {
        if (rl_fanout_send(op->fencing, i, true) == 0)
            op->n_pending |= 1u << i;
        else
            op->n_fail++;
    }
    acq_fence_decide(op);
    if (op->phase == RL_PHASE_FENCING)
        rl_op_arm(op, c->cfg.node_timeout_ms);
}

static bool acq_decide(rl_op *op)
{
    redlock_client *c = op->c;
    if (op->n_ok >= c->quorum) {
        op->out.n_ok = op->n_ok;
        if (op->flags & REDLOCK_FENCE)
            acq_fence(op);
        else
            acq_succeed(op);
        return true;
    }
    if (op->n_fail > c->n - c->quorum) {
        op->out.n_ok = op->n_ok;
        acq_attempt_failed(op, REDLOCK_ENOQUORUM);
        return true;
    }
    return false;
}

static void acq_attempt_start(rl_op *op)
{
    redlock_client *c = op->c;
    op->attempt++;
    op->phase = RL_PHASE_VOTING;
    op->n_ok = op->n_fail = op->n_pending = 0;
    op->out.validity_ms = 0;
    memset(op->out.votes, 0, sizeof(op->out.votes));
    /* A fresh token per attempt: a release from a failed attempt that is
     * still queued somewhere can then never delete a later attempt's key. */
    if (rl_token_new(op->token) != 0) {
        rl_seterr(&op->err, REDLOCK_ESYS, -1, "RAND_bytes failed: no token");
        rl_op_complete(op, REDLOCK_ESYS);
        return;
    }
    op->fence = 0;
    op->fence_failed = false;
    bool script = op->nres > 1 || (op->flags & REDLOCK_FENCE);
    op->f = rl_fanout_new(c, script ? RL_CMD_ACQUIRE : RL_CMD_SET, &op->keys,
                          (op->flags & REDLOCK_FENCE) ? &op->fences : NULL, op->token,
                          op->ttl_ms, 0, acq_on_vote, op);
    if (!op->f) {
        rl_seterr(&op->err, REDLOCK_ENOMEM, -1, "out of memory sending SET");
        rl_op_complete(op, REDLOCK_ENOMEM);
        return;
    }
    op->start_us = rl_now_us();
    /* An excluded master (clock untrusted, or inside its restart guard) is
     * not asked: its OK could not count. N and the quorum stay the same, so
     * exclusion can only make an acquire fail. */
    uint32_t ask = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        char why[REDLOCK_VOTE_DETAIL_LEN];
        if (rl_node_excluded(&c->nodes[i], op->ttl_ms, why, sizeof(why))) {
            rl_vote_set(&op->out.votes[i], REDLOCK_VOTE_EXCLUDED, REDLOCK_EUNTRUSTED, why,
                        rl_now_us());
            op->n_fail++;
        } else {
            ask |= 1u << i;
        }
    }
    rl_op_send(op, ask, false, NULL);
    if (!acq_decide(op))
        rl_op_arm(op, c->cfg.node_timeout_ms);
}

void rl_acquire_wake(rl_op *op)
{
    if (op->phase != RL_PHASE_WAITING)
        return;   /* voting or cleaning up: the next wait will listen again */
    rl_op_disarm(op);
    acq_attempt_start(op);
}

void rl_acquire_on_timer(rl_op *op)
{
    switch (op->phase) {
    case RL_PHASE_VOTING: {
        rl_op_timeout_pending(op, NULL);
        acq_decide(op);
        break;
    }
    case RL_PHASE_FENCING:
        /* masters still owing the write-back count as failed */
        for (uint32_t i = 0; i < op->c->n; i++)
            if (op->n_pending & (1u << i))
                op->n_fail++;
        op->n_pending = 0;
        acq_fence_decide(op);
        if (op->phase == RL_PHASE_FENCING)   /* cannot happen: all are counted */
            acq_attempt_failed(op, REDLOCK_ENOQUORUM);
        break;
    case RL_PHASE_CLEANUP:
        acq_after_cleanup(op);
        break;
    case RL_PHASE_WAITING:
        acq_attempt_start(op);
        break;
    default:
        break;
    }
}

int rl_acquire_start(redlock_client *c, const redlock_resource *set, size_t count,
                     uint32_t ttl_ms, unsigned flags, redlock_acquire_cb cb, void *arg,
                     redlock_error *reterr)
{
    if (c->freeing) {
        rl_seterr(reterr, REDLOCK_ESHUTDOWN, -1, "client is being freed");
        return REDLOCK_ESHUTDOWN;
    }
    int rc = rl_check_set(set, count, reterr);
    if (!rc)
        rc = rl_check_ttl(c, ttl_ms, reterr);
    if (rc)
        return rc;
    if (!cb || (flags & ~REDLOCK_FENCE)) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1,
                  cb ? "acquire: unknown flags 0x%x (use 0 or REDLOCK_FENCE)"
                     : "acquire: callback is NULL (flags 0x%x)", flags);
        return REDLOCK_EINVAL;
    }
    rl_op *op = rl_op_new(c, RL_OP_ACQUIRE, set, count, flags & REDLOCK_FENCE, reterr);
    if (!op)
        return REDLOCK_ENOMEM;
    op->ttl_ms = ttl_ms;
    op->flags = flags;
    if (ttl_ms > c->max_ttl_ms)
        c->max_ttl_ms = ttl_ms;
    op->max_attempts = 1 + c->cfg.retry_count;
    op->acq_cb = cb;
    op->arg = arg;
    c->in_start = true;
    acq_attempt_start(op);
    c->in_start = false;
    return 0;
}

int redlock_acquire_set_async(redlock_client *c, const redlock_resource *set, size_t count,
                              uint32_t ttl_ms, unsigned flags, redlock_acquire_cb cb,
                              void *arg, redlock_error *reterr)
{
    int rc = rl_check_async(c, reterr);
    return rc ? rc : rl_acquire_start(c, set, count, ttl_ms, flags, cb, arg, reterr);
}

int redlock_acquire_async(redlock_client *c, const void *resource, size_t len,
                          uint32_t ttl_ms, redlock_acquire_cb cb, void *arg,
                          redlock_error *reterr)
{
    redlock_resource one = { resource, len };
    return redlock_acquire_set_async(c, &one, 1, ttl_ms, 0, cb, arg, reterr);
}
