/* op.c - the operation core: allocation, rounds of votes, timers, the end.
 *
 * Every kind (acquire.c, release.c, extend.c, inspect.c) is a table of hooks
 * over this core (op.h): a round's command to the masters, timed out at
 * node_timeout_ms, late answers dropped, the rest handed to the kind, then
 * the op's end, queued for delivery (deliver.c). Why late answers never
 * count: docs/safety.md, "What the implementation adds".
 */
#include "core/op.h"
#include "transport/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A cached op is poisoned for ASan, which would otherwise miss a use after
 * its free: the memory is still ours. */
#if defined(__SANITIZE_ADDRESS__)
#define RL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RL_ASAN 1
#endif
#endif
#ifdef RL_ASAN
#include <sanitizer/asan_interface.h>
#define OP_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define OP_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define OP_POISON(p, n) ((void)(p), (void)(n))
#define OP_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* ---- votes ------------------------------------------------------------------ */

void rl_vote_failed(redlock_vote *v, int err, const char *why, rl_monotime sent_us)
{
    int kind = err == REDLOCK_ETIMEOUT ? REDLOCK_VOTE_TIMEOUT
               : (err == REDLOCK_ECONNECT || err == REDLOCK_EBUSY || err == REDLOCK_ESHUTDOWN ||
                  err == REDLOCK_EUNAVAIL)
                   ? REDLOCK_VOTE_DOWN
                   : REDLOCK_VOTE_ERROR;
    rl_vote_set(v, kind, err, why, sent_us);
}

void rl_vote_set(redlock_vote *v, int kind, int err, const char *detail, rl_monotime sent_us)
{
    rl_monotime now = rl_now_us();
    uint64_t lat = now > sent_us ? now - sent_us : 0;
    v->kind = kind;
    v->err = err;
    v->latency_us = lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat;
    /* On one line; what is longer than the public 96 bytes ends in "…". */
    rl_fit(v->detail, sizeof(v->detail), detail ? detail : "");
}

/* ---- rounds ----------------------------------------------------------------- */

static void round_decide(rl_op *op)
{
    if (!op->done)
        op->ops->decide(op);
}

static void round_on_vote(void *owner, rl_fanout *f, uint32_t idx, const rl_reply *r, int err,
                          const char *why)
{
    rl_op *op = owner;
    uint32_t bit = 1u << idx;
    if (op->done || f != op->round || !(op->pending_mask & bit))
        return; /* late: after the round's timeout, a newer round, or the end */
    op->pending_mask &= ~bit;
    op->ops->on_vote(op, idx, r, err, why, rl_fanout_sent_us(f, idx));
    round_decide(op);
}

/* The node timeout: every master still pending fails now, then one decide.
 * A master still in its TLS handshake says so: a rediss:// master on a
 * plain port never answers one, and the connect timeout that would say it
 * (longer than the node timeout) comes after the decision. */
static void round_on_timer(void *arg)
{
    rl_op *op = arg;
    char d[96];
    for (uint32_t i = 0; i < op->c->n; i++) {
        if (op->pending_mask & (1u << i)) {
            op->pending_mask &= ~(1u << i);
            const rl_node *n = &op->c->nodes[i];
            snprintf(d, sizeof(d), "no answer within %u ms%s", op->c->cfg.node_timeout_ms,
                     n->state != RL_NODE_UP && rl_conn_tls_unfinished(n->conn)
                         ? RL_TLS_UNFINISHED_HINT
                         : "");
            op->ops->on_vote(op, i, NULL, REDLOCK_ETIMEOUT, d, rl_fanout_sent_us(op->round, i));
        }
    }
    round_decide(op);
}

/* The masters whose OK counted, "0,2,3" (the trace's ok=). */
static const char *ok_list(const rl_op *op, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < op->c->n && o + 4 < cap; i++)
        if (op->out.votes[i].kind == REDLOCK_VOTE_OK)
            o += (size_t)snprintf(buf + o, cap - o, "%s%u", o ? "," : "", i);
    return buf;
}

bool rl_quorum_late(rl_op *op, const char *what)
{
    redlock_client *c = op->c;
    rl_monotime now = rl_now_us();
    uint64_t elapsed = now - op->attempt_us;
    if (RL_TRACING(c->env.trace)) {
        char ok[64];
        bool late = c->cfg.restart_guard && elapsed > (uint64_t)RL_QUORUM_MAX_MS * 1000;
        rl_trace_emit(c->env.trace, now, "QUORUM", "op=%u late=%d ok=%s", op->trace_id, late,
                      ok_list(op, ok, sizeof(ok)));
    }
    if (!c->cfg.restart_guard || elapsed <= (uint64_t)RL_QUORUM_MAX_MS * 1000)
        return false;
    rl_seterr(&op->err, REDLOCK_ETIMEOUT, -1,
              "%s: the majority came %llu ms after the attempt started, later than the %u ms "
              "a majority may take with the memory guard on (a paused client, or slow masters)",
              what, (unsigned long long)(elapsed / 1000), RL_QUORUM_MAX_MS);
    return true;
}

void rl_round_end(rl_op *op)
{
    rl_fanout_detach(op->round);
    op->round = NULL;
    op->pending_mask = op->counted_mask = op->sent_mask = op->server_mask = 0;
    rl_timer_stop(&op->round_timer);
}

void rl_round_start(rl_op *op, rl_fanout *f, uint32_t send, uint32_t count, unsigned how)
{
    redlock_client *c = op->c;
    rl_round_end(op);
    op->round = f;
    op->round_seq++;
    if (RL_TRACING(c->env.trace)) {
        if ((how & RL_ROUND_VOTES) && op->trace_att != op->attempt_us) {
            char k[160];
            op->trace_att = op->attempt_us;
            op->decided_us = 0;
            rl_trace_emit(c->env.trace, op->attempt_us, "ATT", "op=%u kind=%s key=%s", op->trace_id,
                          op->ops->name,
                          op->nres
                              ? rl_trace_esc(k, sizeof(k), op->k.locks.v[0], op->k.locks.len[0])
                              : "");
        }
        rl_fanout_set_trace_op(f, op->trace_id);
    }
    rl_fanout_set_owner(f, round_on_vote, op);
    op->counted_mask = count;
    uint32_t failed = 0;
    int errs[REDLOCK_MAX_MASTERS];
    for (uint32_t i = 0; i < c->n; i++) {
        uint32_t bit = 1u << i;
        if (!(send & bit))
            continue;
        int rc = rl_fanout_send(f, i, how & RL_ROUND_PRIORITY);
        if (rc == 0)
            op->sent_mask |= bit;
        if (rc == 0 && (count & bit)) {
            op->pending_mask |= bit;
            if (how & RL_ROUND_VOTES) {
                memset(&op->out.votes[i], 0, sizeof(op->out.votes[i]));
                op->out.votes[i].kind = REDLOCK_VOTE_PENDING;
            }
        } else if (rc != 0 && (count & bit)) {
            failed |= bit;
            errs[i] = rc;
        }
    }
    if (op->pending_mask) {
        rl_timer_start(&op->round_timer, c->cfg.node_timeout_ms);
    }
    /* A master that cannot be asked (down, saturated) answers at once: it
     * costs the operation nothing. */
    rl_monotime now = rl_now_us();
    for (uint32_t i = 0; i < c->n; i++)
        if (failed & (1u << i))
            op->ops->on_vote(op, i, NULL, errs[i], c->nodes[i].errstr, now);
    round_decide(op);
}

void rl_round_send(rl_op *op, const rl_cmd *cmd, const char *what, uint32_t send, uint32_t count,
                   unsigned how)
{
    rl_fanout *f = rl_fanout_new(op->c->nodes, cmd);
    if (!f) {
        rl_seterr(&op->err, REDLOCK_ENOMEM, -1, "out of memory sending %s", what);
        rl_op_finish(op, REDLOCK_ENOMEM);
        return;
    }
    uint32_t all = (1u << op->c->n) - 1;
    rl_round_start(op, f, send & all, count & all, how);
}

/* ---- the op's life ---------------------------------------------------------- */

static void op_on_timer(void *arg)
{
    rl_op *op = arg;
    if (!op->done && op->ops->on_timer)
        op->ops->on_timer(op);
}

void rl_op_arm(rl_op *op, uint32_t ms)
{
    rl_timer_start(&op->timer, ms);
}

void rl_op_disarm(rl_op *op)
{
    rl_timer_stop(&op->timer);
}

/* Keys of a set, in one allocation: the lock keys (prefix + resource) and,
 * as asked, each one's fence counter, waiters' queue and lease set: the
 * same key followed by "\0fence", "\0q" or "\0l". Resource names cannot
 * contain NUL, so none of them can ever be another resource's lock key. */
static char *build_keys(const redlock_client *c, const redlock_resource *set, size_t count,
                        unsigned which, rl_keys *k)
{
    static const struct {
        const char *s;
        size_t len;
        unsigned flag;
    } suffix[4] = {
        { "", 0, 0 },
        { "\0fence", 6, RL_KEYS_FENCE },
        { "\0q", 2, RL_KEYS_QUEUE },
        { "\0l", 2, RL_KEYS_QUEUE },
    };
    rl_keyset *sets[4] = { &k->locks, &k->fences, &k->queues, &k->leases };
    size_t nk = 0, bytes = 0;
    for (int s = 0; s < 4; s++) {
        if (s && !(which & suffix[s].flag))
            continue;
        nk += count;
        for (size_t i = 0; i < count; i++)
            bytes += c->prefix_len + set[i].len + suffix[s].len + 1;
    }
    bytes += nk * (sizeof(char *) + sizeof(size_t));
    char *mem = malloc(bytes ? bytes : 1);
    if (!mem)
        return NULL;
    const char **v = (const char **)(void *)mem;
    size_t *len = (size_t *)(void *)(mem + nk * sizeof(char *));
    char *p = mem + nk * (sizeof(char *) + sizeof(size_t));
    memset(k, 0, sizeof(*k));
    for (int s = 0; s < 4; s++) {
        if (s && !(which & suffix[s].flag))
            continue;
        *sets[s] = (rl_keyset){ (uint32_t)count, v, len };
        for (size_t i = 0; i < count; i++) {
            *v = p;
            memcpy(p, c->cfg.key_prefix, c->prefix_len);
            if (set[i].len)
                memcpy(p + c->prefix_len, set[i].name, set[i].len);
            memcpy(p + c->prefix_len + set[i].len, suffix[s].s, suffix[s].len);
            *len = c->prefix_len + set[i].len + suffix[s].len;
            p += *len + 1;
            v++;
            len++;
        }
    }
    return mem;
}

/* An op is a few kB (its outcome's votes), which glibc serves from its
 * large bins, consolidating the small ones on each request: malloc,
 * consolidation and heap trimming were a tenth of the client's CPU at 64
 * ops in flight (perf, the bench's throughput row). So a client keeps a
 * few freed ops for its next ones, on its loop's thread, with their two
 * timers set up (they point into the op's own memory). */
static rl_op *op_alloc(redlock_client *c, size_t size)
{
    for (uint32_t i = c->n_op_cache; i-- > 0;) {
        if (c->op_cache[i].size != size)
            continue;
        rl_op *op = c->op_cache[i].op;
        c->op_cache[i] = c->op_cache[--c->n_op_cache];
        OP_UNPOISON(op, size);
        rl_timer rt = op->round_timer, t = op->timer;
        memset(op, 0, size);
        op->round_timer = rt;
        op->timer = t;
        op->size = size;
        return op;
    }
    rl_op *op = calloc(1, size);
    if (!op)
        return NULL;
    op->size = size;
    if (rl_timer_init(&op->round_timer, &c->loop, round_on_timer, op) != 0 ||
        rl_timer_init(&op->timer, &c->loop, op_on_timer, op) != 0) {
        rl_timer_fini(&op->round_timer);
        free(op);
        return NULL;
    }
    return op;
}

void rl_op_free(rl_op *op)
{
    redlock_client *c = op->c;
    size_t size = op->size;
    if (op->ops->destroy)
        op->ops->destroy(op);
    rl_fanout_detach(op->round);
    free(op->keymem);
    rl_timer_stop(&op->round_timer);
    rl_timer_stop(&op->timer);
    if (!c->freeing && c->n_op_cache < RL_OP_CACHE) {
        c->op_cache[c->n_op_cache++] = (struct rl_op_cached){ op, size };
        OP_POISON(op, size);
        return;
    }
    rl_timer_fini(&op->round_timer);
    rl_timer_fini(&op->timer);
    free(op);
}

void rl_op_cache_free(redlock_client *c)
{
    while (c->n_op_cache) {
        struct rl_op_cached *k = &c->op_cache[--c->n_op_cache];
        rl_op *op = k->op;
        OP_UNPOISON(op, k->size);
        rl_timer_fini(&op->round_timer);
        rl_timer_fini(&op->timer);
        free(op);
    }
}

int rl_op_new(redlock_client *c, const rl_op_ops *ops, size_t size, const redlock_resource *set,
              size_t count, unsigned keys, rl_op **ret, redlock_error *e)
{
    int rc = rl_client_live(c, e);
    if (rc)
        return rc;
    rl_op *op = op_alloc(c, size);
    if (!op)
        goto oom;
    op->ops = ops;
    op->c = c;
    op->nres = (uint32_t)count;
    op->started_us = rl_now_us();
    if (RL_TRACING(c->env.trace))
        op->trace_id = rl_trace_id(c->env.trace);
    if (count)
        op->keymem = build_keys(c, set, count, keys, &op->k);
    if (count && !op->keymem)
        goto oom;
    op->out.n_masters = c->n;
    op->out.quorum = c->quorum;
    /* Appended: the list is in start order, which is the order waiters of
     * one client are served in (wait.c). */
    op->prev = NULL;
    if (!c->ops) {
        c->ops = op;
    } else {
        rl_op *t = c->ops;
        while (t->next)
            t = t->next;
        t->next = op;
        op->prev = t;
    }
    *ret = op;
    return 0;
oom:
    if (op) {
        op->ops = &(rl_op_ops){ 0 };
        rl_op_free(op);
    }
    rl_seterr(e, REDLOCK_ENOMEM, -1, "out of memory starting an operation");
    return REDLOCK_ENOMEM;
}

/* Counted by deliver.c's on_deliver, read by rl_op_finish (op.h). */
_Thread_local int rl_deliver_depth;

/* The op's decision, for the trace: stamped with the time a success
 * measured its validity from, so that model/trace-check.py can redo the
 * arithmetic from the attempt's start. */
static void trace_decision(const rl_op *op)
{
    const redlock_lock *l = op->lock;
    char ok[64], k[160], tok[64];
    uint32_t ttl = op->decided_ttl_ms; /* kept when the lock is gone */
    if (!ttl && l)
        ttl = l->ttl_ms;
    rl_trace_emit(op->c->env.trace, op->decided_us ? op->decided_us : rl_now_us(), "DEC",
                  "op=%u kind=%s status=%d ok=%s validity=%lld fence=%llu tok=%s ttl=%u key=%s",
                  op->trace_id, op->ops->name, op->status, ok_list(op, ok, sizeof(ok)),
                  (long long)op->out.validity_ms, (unsigned long long)(l ? l->fence : 0),
                  l ? rl_trace_esc(tok, sizeof(tok), l->token, strnlen(l->token, 12)) : "", ttl,
                  op->nres ? rl_trace_esc(k, sizeof(k), op->k.locks.v[0], op->k.locks.len[0]) : "");
}

void rl_op_finish(rl_op *op, int status)
{
    if (op->done)
        return;
    redlock_client *c = op->c;
    op->done = true;
    op->status = status;
    rl_round_end(op);
    rl_timer_stop(&op->timer);
    op->out.status = status;
    op->out.attempts = op->attempts;
    if (status != 0) {
        if (op->out.validity_ms > 0)
            op->out.validity_ms = 0;
        op->err.code = status;
    } else {
        op->err = (redlock_error){ 0, -1, "" };
    }
    op->out.elapsed_us = op->out.elapsed_us ? op->out.elapsed_us : rl_now_us() - op->attempt_us;
    if (RL_TRACING(c->env.trace))
        trace_decision(op);
    op->done_next = NULL;
    if (c->done_tail)
        c->done_tail->done_next = op;
    else
        c->done_head = op;
    c->done_tail = op;
    /* Delivered after the callbacks ready now (a 0 ms timer: on libevent,
     * no extra trip through epoll_wait). Inside the delivery itself, in a
     * later pass: see on_deliver (deliver.c). */
    if (rl_timer_armed(&c->deliver))
        return;
    rl_timer_start(&c->deliver, rl_deliver_depth > 0 ? RL_DELIVER_LATER_MS : 0);
}

void rl_op_cancel(rl_op *op, int status)
{
    if (op->done)
        return;
    if (op->ops->cancel)
        op->ops->cancel(op, status);
    else
        rl_op_finish(op, status);
}
