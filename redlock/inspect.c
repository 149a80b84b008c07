/* inspect.c - read-only views of every master: who holds a key, and TIME.
 *
 * For operators (redlock-cli status / ping) and tests. Nothing here writes:
 * status runs GET + PTTL in one script so both describe the same instant on
 * that master; ping asks TIME and places it at the midpoint of the round
 * trip on the client's real-time clock to estimate the offset.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t realtime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void insp_finish(rl_op *op)
{
    redlock_client *c = op->c;
    redlock_status *st = op->st;
    rl_op_disarm(op);
    st->n_answered = st->n_held = 0;
    st->majority_token[0] = '\0';
    for (uint32_t i = 0; i < c->n; i++) {
        if (st->masters[i].err == 0) {
            st->n_answered++;
            st->n_held += st->masters[i].held ? 1 : 0;
        }
    }
    if (op->kind == RL_OP_STATUS) {
        for (uint32_t i = 0; i < c->n && !st->majority_token[0]; i++) {
            if (st->masters[i].err || !st->masters[i].held)
                continue;
            uint32_t same = 0;
            for (uint32_t j = 0; j < c->n; j++)
                if (!st->masters[j].err && st->masters[j].held &&
                    strcmp(st->masters[i].token, st->masters[j].token) == 0)
                    same++;
            if (same >= c->quorum)
                memcpy(st->majority_token, st->masters[i].token, sizeof(st->majority_token));
        }
    }
    if (op->kind == RL_OP_PING) {
        rl_monotime now = rl_now_us();
        for (uint32_t i = 0; i < c->n; i++) {
            const rl_node *n = &c->nodes[i];
            redlock_master_state *m = &st->masters[i];
            m->clock_rate_lo = n->clock.rate_lo;
            m->clock_rate_hi = n->clock.rate_hi;
            m->clock_samples = n->clock.samples;
            m->clock_jumps = n->clock.jumps;
            m->clock_rate_faults = n->clock.rate_faults;
            m->clock_trusted = drift_monitor_trusted(&n->clock, now);
            memcpy(m->run_id, n->run_id, sizeof(m->run_id));
            m->uptime_s = n->uptime_s;
            m->aof_always = n->aof_always;
            m->excluded = rl_node_excluded(n, c->max_ttl_ms, m->excluded_why,
                                           sizeof(m->excluded_why));
            if (!m->excluded)
                m->excluded_why[0] = '\0';
        }
    }
    op->out.n_ok = st->n_answered;
    op->out.elapsed_us = rl_now_us() - op->start_us;
    if (st->n_answered >= c->quorum) {
        rl_op_complete(op, 0);
        return;
    }
    rl_op_complete(op, rl_outcome_failure(op, op->kind == RL_OP_STATUS ? "status" : "ping",
                                          &op->err));
}

static void master_failed(rl_op *op, uint32_t idx, int err, const char *detail)
{
    redlock_master_state *m = &op->st->masters[idx];
    m->err = err;
    snprintf(m->detail, sizeof(m->detail), "%s", detail);
    rl_op_vote_failed(op, idx, err, detail);
}

static void insp_on_vote(void *owner, rl_fanout *f, uint32_t idx, const redisReply *r,
                         int err, const char *errstr)
{
    rl_op *op = owner;
    redlock_vote *v = rl_op_take_vote(op, f, idx);
    if (!v)
        return;   /* late: after a timeout or a decision */
    redlock_master_state *m = &op->st->masters[idx];
    int64_t server;
    rl_monotime now = rl_now_us();
    uint64_t rtt = now - f->slots[idx].sent_us;
    m->rtt_us = rtt > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt;
    if (!r) {
        master_failed(op, idx, err, errstr);
    } else if (r->type == REDIS_REPLY_ERROR) {
        /* The same wording as votes: a command queued behind a failed AUTH
         * says NOAUTH, but the cause is the node's "AUTH failed: ...". */
        redlock_vote tmp;
        rl_vote_error_reply(&tmp, &op->c->nodes[idx], r, f->slots[idx].sent_us);
        master_failed(op, idx, tmp.err, tmp.detail);
    } else if (op->kind == RL_OP_STATUS && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               r->element[1]->type == REDIS_REPLY_INTEGER) {
        const redisReply *val = r->element[0];
        m->pttl_ms = r->element[1]->integer;
        m->held = val->type == REDIS_REPLY_STRING;
        if (m->held) {
            size_t n = val->len < REDLOCK_TOKEN_MAX ? val->len : REDLOCK_TOKEN_MAX;
            memcpy(m->token, val->str, n);
            m->token[n] = '\0';
        }
        rl_vote_set(v, REDLOCK_VOTE_OK, 0, "", f->slots[idx].sent_us);
    } else if (op->kind == RL_OP_PING && rl_time_reply(r, &server)) {
        int64_t mid = realtime_us() - (int64_t)(rtt / 2);
        m->clock_offset_us = server - mid;
        rl_vote_set(v, REDLOCK_VOTE_OK, 0, "", f->slots[idx].sent_us);
    } else {
        master_failed(op, idx, REDLOCK_EPROTO, "unexpected reply (is this Redis?)");
    }
    if (op->n_pending == 0)
        insp_finish(op);
}

void rl_inspect_on_timer(rl_op *op)
{
    if (op->phase != RL_PHASE_VOTING)
        return;
    rl_op_timeout_pending(op, master_failed);
    insp_finish(op);
}

static int insp_start(redlock_client *c, int kind, const void *resource, size_t len,
                      redlock_status *st, rl_status_cb *cb, void *arg, redlock_error *reterr)
{
    if (c->freeing) {
        rl_seterr(reterr, REDLOCK_ESHUTDOWN, -1, "client is being freed");
        return REDLOCK_ESHUTDOWN;
    }
    redlock_resource one = { resource, len };
    rl_op *op = rl_op_new(c, kind, &one, resource ? 1 : 0, false, reterr);
    if (!op)
        return REDLOCK_ENOMEM;
    memset(st, 0, sizeof(*st));
    st->n_masters = c->n;
    st->quorum = c->quorum;
    for (uint32_t i = 0; i < c->n; i++)
        st->masters[i].pttl_ms = -2;
    op->st = st;
    op->st_cb = cb;
    op->arg = arg;
    op->attempt = 1;
    op->phase = RL_PHASE_VOTING;
    op->f = rl_fanout_new(c, kind == RL_OP_STATUS ? RL_CMD_STATUS : RL_CMD_TIME, &op->keys,
                          NULL, NULL, 0, 0, insp_on_vote, op);
    if (!op->f) {
        rl_seterr(&op->err, REDLOCK_ENOMEM, -1, "out of memory");
        rl_op_complete(op, REDLOCK_ENOMEM);
        return 0;
    }
    op->start_us = rl_now_us();
    c->in_start = true;
    rl_op_send(op, (1u << c->n) - 1, false, master_failed);
    if (op->n_pending == 0)
        insp_finish(op);
    else
        rl_op_arm(op, c->cfg.node_timeout_ms);
    c->in_start = false;
    return 0;
}

int rl_status_start(redlock_client *c, const void *resource, size_t len, redlock_status *st,
                    rl_status_cb *cb, void *arg, redlock_error *reterr)
{
    int rc = rl_check_resource(resource, len, reterr);
    return rc ? rc : insp_start(c, RL_OP_STATUS, resource, len, st, cb, arg, reterr);
}

int rl_ping_start(redlock_client *c, redlock_status *st, rl_status_cb *cb, void *arg,
                  redlock_error *reterr)
{
    return insp_start(c, RL_OP_PING, NULL, 0, st, cb, arg, reterr);
}
