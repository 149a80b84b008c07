/* node-memory.c - what a master remembers, and who it is: the questions the
 * handshake and every probe ask (node.c queues them on the connection).
 *
 * CHECK (script.c) before any vote on the connection, CONFIG GET (eviction,
 * persistence), and what the answers make of the master: whether its vote
 * may count now (rl_node_vote_counts), what it has natively, its events.
 * Why CHECK's success gates the votes: docs/memory-guard.md, "Who the master is".
 */
#include "node/node-memory.h"
#include "base/cmd.h"
#include "base/script.h"
#include "transport/trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void on_config(void *arg, const rl_reply *r, int err, const char *why)
{
    (void)err;
    (void)why;
    rl_node *n = arg;
    if (!r)
        return;
    const char *pairs[16];
    size_t k = rl_reply_type(r) == RL_REPLY_ARRAY ? rl_reply_elements(r) : 0;
    if (k == 0 || k > 16) {
        rl_trust_config(&n->trust, NULL, 0); /* refused (ACL, renamed) or unexpected */
        return;
    }
    for (size_t i = 0; i < k; i++) {
        const rl_reply *e = rl_reply_element(r, i);
        pairs[i] = rl_reply_type(e) == RL_REPLY_STRING ? rl_reply_str(e, NULL) : "";
    }
    rl_trust_config(&n->trust, pairs, k);
}

void rl_node_marker(rl_node *n, const rl_marker *m)
{
    rl_trust_marker(&n->trust, m, rl_now_us());
    rl_trace *t = n->env->trace;
    if (RL_TRACING(t)) {
        static const char *const states[] = { "counts", "young", "pending" };
        char b[64];
        const char *birth = m->birth ? m->birth : "";
        rl_trace_emit(t, rl_now_us(), "MARK",
                      "m=%u state=%s birth=%s age=%lld window=%u maxttl=%u born=%llu", n->idx,
                      m->state >= RL_MEM_COUNTS && m->state <= RL_MEM_PENDING
                          ? states[m->state - RL_MEM_COUNTS]
                          : "?",
                      rl_trace_esc(b, sizeof(b), birth, strlen(birth)), (long long)m->age_ms,
                      m->window_ms, m->maxttl_ms, (unsigned long long)n->trust.born_us);
    }
    n->env->on_marker(n, m, n->env->arg);
}

/* The CHECK script's answer {age, window, maxttl, state, cause, now, birth}. Its
 * success is what lets votes on this connection count (rl_trust_excluded):
 * every vote sent on it runs after it on the master. */
/* The memory check met an error reply. Loading its data, or busy: the
 * handshake's PING meets the same and reconnects; anything else keeps its
 * votes out, named. An ACL that refuses INFO or EVAL keeps the master out,
 * said as such. Any other error (a master that answers garbage, one that
 * is loading) says itself in the votes, which fail the same way; either
 * way no OK from this connection counts (not checked). */
static void marker_refused(rl_node *n, const rl_reply *r)
{
    size_t len;
    const char *s = rl_reply_str(r, &len);
    if (!rl_reply_is_acl_denial(s, len))
        return;
    /* Name what it refused ('hmget', 'eval'...), as a vote does
     * (outcome.c): the fix is that grant, or README's ACL line. */
    const char *q = memchr(s, '\'', len);
    const char *q2 = q ? memchr(q + 1, '\'', len - (size_t)(q + 1 - s)) : NULL;
    if (q && q2 && q2 - q < 40)
        snprintf(n->trust.check_err, sizeof(n->trust.check_err),
                 "ACL refuses the memory check's %.*s: grant README's ACL line", (int)(q2 - q + 1),
                 q);
    else
        snprintf(n->trust.check_err, sizeof(n->trust.check_err),
                 "ACL refuses the memory check (+eval, +info, its keys): grant README's "
                 "ACL line");
    n->trust.check_acl = true;
}

static void on_marker(void *arg, const rl_reply *r, int err, const char *why)
{
    (void)why;
    rl_node *n = arg;
    if (RL_TRACING(n->env->trace))
        rl_trace_reply(n->env->trace, n->idx, 0, 0, "check", false, r, r ? 0 : err);
    if (r && rl_reply_type(r) == RL_REPLY_ERROR) {
        marker_refused(n, r);
        return;
    }
    if (!r || rl_reply_type(r) != RL_REPLY_ARRAY || rl_reply_elements(r) != 7)
        return;
    long long v[6];
    for (size_t i = 0; i < 6; i++) {
        const rl_reply *e = rl_reply_element(r, i);
        if (rl_reply_type(e) != RL_REPLY_INTEGER)
            return;
        v[i] = rl_reply_integer(e);
    }
    const rl_reply *b = rl_reply_element(r, 6);
    if (v[0] < 0 || v[1] < 0 || v[1] > REDLOCK_TTL_MAX_MS || v[2] < 0 ||
        v[2] > REDLOCK_TTL_MAX_MS || v[3] < RL_MEM_COUNTS || v[3] > RL_MEM_PENDING ||
        v[4] < RL_MEM_CAUSE_NONE || v[4] > RL_MEM_CAUSE_MOVED || v[5] <= 0 ||
        rl_reply_type(b) != RL_REPLY_STRING)
        return;
    n->trust.checked = true;
    if (RL_TRACING(n->env->trace))
        rl_trace_emit(n->env->trace, rl_now_us(), "CHECKED", "m=%u", n->idx);
    if (n->check_moved)
        n->moved = false; /* the server at the new address is reborn: said once is enough */
    n->trust.ref_ms = v[5];
    n->trust.ref_sent_us = n->trust.check_sent_us;
    n->trust.check_err[0] = '\0';
    n->trust.check_acl = false;
    rl_marker m = { .age_ms = v[0],
                    .window_ms = (uint32_t)v[1],
                    .maxttl_ms = (uint32_t)v[2],
                    .state = (int)v[3],
                    .cause = (int)v[4],
                    .birth = rl_reply_str(b, NULL) };
    rl_node_marker(n, &m);
}

static void on_config_last(void *arg, const rl_reply *r, int err, const char *why)
{
    on_config(arg, r, err, why);
    rl_node *n = arg;
    n->asking_memory = false;
}

int rl_node_ask_memory(rl_node *n, rl_conn *conn)
{
    rl_cmd cmd;
    /* A connection to a new address of the master's name: the server there
     * never saw what the old one granted as this master, whatever its own
     * marker says, so the CHECK makes it reborn (docs/memory-guard.md,
     * "Names that move"), with the longest ttl the old server had heard of.
     * In the script, before any vote on this connection runs; and for every
     * client, whose acquires read the same marker. */
    n->check_moved = n->moved;
    /* A rebirth made by this CHECK is named by a fresh random value: a
     * settle computed for it names it, and nothing else (script.c SETTLE). */
    char birth[RL_TOKEN_LEN + 1];
    if (rl_token_new(birth) != 0)
        return REDLOCK_ESYS;
    rl_cmd_check(&cmd, n->moved, n->trust.maxttl_ms, birth);
    /* EVAL, not EVALSHA: this must not depend on SCRIPT LOAD (an ACL may
     * refuse it; a master may have just flushed its scripts). */
    cmd.argv[0] = "EVAL";
    cmd.len[0] = 4;
    cmd.argv[1] = rl_script_body(RL_SCRIPT_MARKER);
    cmd.len[1] = strlen(cmd.argv[1]);
    static const char *cfg[3] = { "CONFIG", "GET", "maxmemory*" };
    static const size_t clen[3] = { 6, 3, 10 };
    static const char *fsync[3] = { "CONFIG", "GET", "append*" };
    static const size_t flen[3] = { 6, 3, 7 };
    n->trust.check_sent_us = rl_now_us();
    int rc = rl_conn_send(conn, on_marker, n, cmd.argc, cmd.argv, cmd.len);
    if (RL_TRACING(n->env->trace) && !rc)
        rl_trace_request(n->env->trace, n->idx, 0, 0, RL_SCRIPT_MARKER, 0, false, cmd.argc,
                         cmd.argv, cmd.len);
    if (!rc)
        rc = rl_conn_send(conn, on_config, n, 3, cfg, clen);
    if (!rc)
        rc = rl_conn_send(conn, on_config_last, n, 3, fsync, flen);
    n->asking_memory = rc == 0;
    return rc;
}

void rl_node_recheck(rl_node *n)
{
    if (n->state == RL_NODE_UP && !n->asking_memory)
        rl_node_ask_memory(n, n->conn);
}

void rl_node_not_served(rl_node *n, int served, uint32_t bound_ms)
{
    if (served != RL_UNSERVED && served != RL_SHORT)
        return;
    n->trust.marker_known = false; /* no fast path here until CHECK says more */
    if (served == RL_SHORT)
        n->trust.maxttl_ms = bound_ms; /* lowered: the script raises it */
    rl_node_recheck(n);
}

bool rl_node_fast(const rl_node *n, uint32_t want_ms, rl_monotime now)
{
    /* Up: the connection whose CHECK read the clock is the one the
     * transaction will go on (a node that is down reconnects on demand,
     * perhaps to another process: its clock is read again first). */
    return n->state == RL_NODE_UP && rl_trust_fast(&n->trust, want_ms, now);
}

int rl_node_excluded(const rl_node *n, char *why, size_t len)
{
    if (n->twin >= 0) {
        /* Refused as another name for master twin: never counts (its
         * connection is closed; this guards any reply that outlived it). */
        snprintf(why, len, "same server as master %d: each master must be a separate redis-server",
                 n->twin);
        return REDLOCK_EINVAL;
    }
    return rl_trust_excluded(&n->trust, n->env->cfg, rl_now_us(), why, len);
}

bool rl_node_vote_counts(const rl_node *n, char *why, size_t len)
{
    if (rl_node_excluded(n, why, len))
        return false;
    if (n->env->cfg->restart_guard && !n->trust.checked) {
        /* The CHECK's answer comes before any vote's on one connection:
         * a vote without it ran on a process nobody has checked. */
        snprintf(why, len, "who the master is was not checked on this connection");
        return false;
    }
    return true;
}

bool rl_node_native(const rl_node *n, unsigned native)
{
    return n->state == RL_NODE_UP && n->id_current && (n->trust.native & native) == native;
}

void rl_node_native_refused(rl_node *n, unsigned native, const char *why)
{
    if (!(n->trust.native & native))
        return;
    n->trust.native &= ~native;
    rl_node_log(n, REDLOCK_LOG_WARN, "says it is %s but answered %s with: %s; scripts from now on",
                n->trust.version, rl_native_name(native), why);
}

void rl_node_event(rl_node *n, int status, int event, const char *fmt, ...)
{
    const redlock_config *cfg = n->env->cfg;
    if (!cfg->event_fn && !(cfg->log_fn && REDLOCK_LOG_WARN >= cfg->log_level))
        return;
    char msg[256];
    int len = snprintf(msg, sizeof(msg), "master %u (%s): ", n->idx, n->addr.name);
    va_list ap;
    va_start(ap, fmt);
    if (len > 0 && (size_t)len < sizeof(msg))
        vsnprintf(msg + len, sizeof(msg) - (size_t)len, fmt, ap);
    va_end(ap);
    rl_log(cfg, REDLOCK_LOG_WARN, "%s", msg);
    if (n->env->on_event)
        n->env->on_event(n, status, event, msg, n->env->arg);
}
