/* inspect.c - read-only views of every master: who holds a key, and TIME.
 *
 * For operators (redlock-cli status / ping) and tests. Nothing here writes:
 * status runs GET + PTTL in one script so both describe the same instant on
 * that master; ping asks TIME and places it at the midpoint of the round
 * trip on the client's real-time clock to estimate the offset, and reports
 * what the clock monitor and the restart guard think of each master.
 */
#include "kinds/kinds.h"
#include "kinds/outcome.h"
#include "node/probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rl_inspect {
    rl_op op;
    bool ping;
    redlock_status st; /* what the callback sees */
    redlock_status_cb cb;
    void *arg;
} rl_inspect;

static rl_inspect *INS(rl_op *op)
{
    return (rl_inspect *)(void *)op;
}

static void master_failed(rl_op *op, uint32_t idx, int err, const char *why, rl_monotime sent)
{
    redlock_master_state *m = &INS(op)->st.masters[idx];
    m->err = err;
    rl_fit(m->detail, sizeof(m->detail), why);
    rl_vote_failed(&op->out.votes[idx], err, why, sent);
}

static void status_reply(redlock_master_state *m, const rl_reply *r)
{
    const rl_reply *val = rl_reply_element(r, 0);
    m->pttl_ms = rl_reply_integer(rl_reply_element(r, 1));
    m->held = rl_reply_type(val) == RL_REPLY_STRING;
    size_t len;
    const char *s = rl_reply_str(val, &len);
    if (m->held && len > 0 && s[0] == '\1') {
        /* A release handed the key to the next waiter (script.c): nobody
         * holds it, nobody else can take it until that waiter does or the
         * reservation lapses. */
        m->held = 0;
        m->reserved = 1;
    }
    if (m->held && len > 1 && s[len - 1] == '\2')
        len--; /* marked for its waiters (script.c): the holder's token is the rest */
    if (m->held) {
        size_t n = len < REDLOCK_TOKEN_MAX ? len : REDLOCK_TOKEN_MAX;
        memcpy(m->token, s, n);
        m->token[n] = '\0';
    }
}

static void insp_on_vote(rl_op *op, uint32_t idx, const rl_reply *r, int err, const char *why,
                         rl_monotime sent)
{
    rl_inspect *in = INS(op);
    redlock_master_state *m = &in->st.masters[idx];
    uint64_t rtt = rl_now_us() - sent;
    m->rtt_us = rtt > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt;
    int64_t server;
    if (!r) {
        master_failed(op, idx, err, why, sent);
    } else if (rl_reply_type(r) == RL_REPLY_ERROR) {
        /* The same wording as votes: a command queued behind a failed AUTH
         * says NOAUTH, but the cause is the node's "AUTH failed: ...". */
        redlock_vote tmp;
        rl_vote_error_reply(&tmp, &op->c->nodes[idx], r, sent);
        master_failed(op, idx, tmp.err, tmp.detail, sent);
    } else if (!in->ping && rl_reply_type(r) == RL_REPLY_ARRAY && rl_reply_elements(r) == 2 &&
               rl_reply_type(rl_reply_element(r, 1)) == RL_REPLY_INTEGER) {
        status_reply(m, r);
        rl_vote_set(&op->out.votes[idx], REDLOCK_VOTE_OK, 0, "", sent);
    } else if (in->ping && rl_time_reply(r, &server)) {
        int64_t mid = rl_realtime_us() - (int64_t)(rtt / 2);
        m->clock_offset_us = server - mid;
        rl_vote_set(&op->out.votes[idx], REDLOCK_VOTE_OK, 0, "", sent);
    } else {
        master_failed(op, idx, REDLOCK_EPROTO, "unexpected reply (is this Redis?)", sent);
    }
}

/* The token held on a majority, if any. */
static void majority_token(redlock_status *st, uint32_t n, uint32_t quorum)
{
    for (uint32_t i = 0; i < n && !st->majority_token[0]; i++) {
        if (st->masters[i].err || !st->masters[i].held)
            continue;
        uint32_t same = 0;
        for (uint32_t j = 0; j < n; j++)
            if (!st->masters[j].err && st->masters[j].held &&
                strcmp(st->masters[i].token, st->masters[j].token) == 0)
                same++;
        if (same >= quorum)
            memcpy(st->majority_token, st->masters[i].token, sizeof(st->majority_token));
    }
}

/* What the clock monitor and the restart guard think of each master. */
static void guard_view(redlock_client *c, redlock_status *st)
{
    rl_monotime now = rl_now_us();
    for (uint32_t i = 0; i < c->n; i++) {
        const rl_node *n = &c->nodes[i];
        const rl_trust *t = &n->trust;
        redlock_master_state *m = &st->masters[i];
        m->clock_rate_lo = t->clock.rate_lo;
        m->clock_rate_hi = t->clock.rate_hi;
        m->clock_samples = t->clock.samples;
        m->clock_jumps = t->clock.jumps;
        m->clock_rate_faults = t->clock.rate_faults;
        m->clock_trusted = drift_monitor_trusted(&t->clock, now);
        memcpy(m->run_id, t->run_id, sizeof(m->run_id));
        m->uptime_s = t->uptime_s;
        m->aof_always = t->aof_always;
        m->tls = rl_conn_is_tls(n->conn);
        /* -1: not known, or reborn and its window not measured yet. */
        m->memory_age_ms = !t->marker_known || t->mem_state == RL_MEM_PENDING
                               ? -1
                               : (int64_t)(now - t->born_us) / 1000;
        m->memory_window_ms = t->window_ms;
        m->maxmemory = t->maxmemory;
        snprintf(m->eviction_policy, sizeof(m->eviction_policy), "%s", t->policy);
        m->excluded = rl_node_excluded(n, m->excluded_why, sizeof(m->excluded_why)) ||
                      (c->cfg.restart_guard &&
                       rl_trust_memory_young(t, now, m->excluded_why, sizeof(m->excluded_why)));
        if (!m->excluded)
            m->excluded_why[0] = '\0';
    }
}

static void insp_decide(rl_op *op)
{
    rl_inspect *in = INS(op);
    redlock_client *c = op->c;
    redlock_status *st = &in->st;
    if (op->pending_mask)
        return;
    st->n_answered = st->n_held = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        if (st->masters[i].err == 0) {
            st->n_answered++;
            st->n_held += st->masters[i].held ? 1 : 0;
        }
    }
    if (in->ping)
        guard_view(c, st);
    else
        majority_token(st, c->n, c->quorum);
    op->out.n_ok = st->n_answered;
    op->out.elapsed_us = rl_now_us() - op->attempt_us;
    if (st->n_answered >= c->quorum)
        rl_op_finish(op, 0);
    else
        rl_op_finish(op, rl_outcome_failure(op, &op->err));
}

static void insp_deliver(rl_op *op)
{
    rl_inspect *in = INS(op);
    in->cb(op->c, op->status, &in->st, &op->err, in->arg);
}

static const rl_op_ops status_ops = {
    .kind = REDLOCK_OP_STATUS,
    .name = "status",
    .on_vote = insp_on_vote,
    .decide = insp_decide,
    .deliver = insp_deliver,
};

static const rl_op_ops ping_ops = {
    .kind = REDLOCK_OP_PING,
    .name = "ping",
    .on_vote = insp_on_vote,
    .decide = insp_decide,
    .deliver = insp_deliver,
};

static int insp_start(redlock_client *c, bool ping, const void *resource, size_t len,
                      redlock_status_cb cb, void *arg, redlock_error *e)
{
    redlock_resource one = { resource, len };
    rl_op *op;
    int rc = rl_op_new(c, ping ? &ping_ops : &status_ops, sizeof(rl_inspect), &one, ping ? 0 : 1, 0,
                       &op, e);
    if (rc)
        return rc;
    rl_inspect *in = INS(op);
    in->ping = ping;
    in->cb = cb;
    in->arg = arg;
    in->st.n_masters = c->n;
    in->st.quorum = c->quorum;
    for (uint32_t i = 0; i < c->n; i++)
        in->st.masters[i].pttl_ms = -2;
    op->attempts = 1;
    op->attempt_us = rl_now_us();
    rl_cmd cmd;
    if (ping)
        rl_cmd_time(&cmd);
    else
        rl_cmd_status(&cmd, &op->k);
    rl_round_send(op, &cmd, ping ? "ping" : "status", RL_ALL, RL_ALL, RL_ROUND_VOTES);
    return 0;
}

int rl_status_start(redlock_client *c, const void *resource, size_t len, redlock_status_cb cb,
                    void *arg, redlock_error *e)
{
    int rc = rl_check_resource(resource, len, e);
    return rc ? rc : insp_start(c, false, resource, len, cb, arg, e);
}

int rl_ping_start(redlock_client *c, redlock_status_cb cb, void *arg, redlock_error *e)
{
    return insp_start(c, true, NULL, 0, cb, arg, e);
}
