/* node.c - one master: connect, handshake, reconnect, and the in-flight bound.
 *
 * Connects at start, reconnects with capped backoff (at once, rate-limited,
 * when an op needs it), fails commands at once while down, bounds what piles
 * up behind a silent master, queues the handshake before any op's command,
 * looks a host name up again before each reconnect. Why: docs/transport.md;
 * docs/safety.md, "Failure modes, master by master"; docs/memory-guard.md, "Names that move".
 */
#include "node/node.h"
#include "base/cmd.h"
#include "node/resolve.h"
#include "base/script.h"
#include "transport/trace.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void node_schedule_reconnect(rl_node *n);
static void node_connect(rl_node *n);

static const redlock_config *CFG(const rl_node *n)
{
    return n->env->cfg;
}

static void node_set_down(rl_node *n, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void node_set_down(rl_node *n, int err, const char *fmt, ...)
{
    n->state = RL_NODE_DOWN;
    n->err = err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->errstr, sizeof(n->errstr), fmt, ap);
    va_end(ap);
}

static void node_notify(rl_node *n)
{
    if (n->env->on_state)
        n->env->on_state(n, n->env->arg);
}

/* The handshake (or the master) failed in a way worth its own message:
 * record it and drop the connection; every command still queued on it
 * fails with this reason, which is the one the user needs to read. */
static void node_fail(rl_node *n, int err, const char *why)
{
    node_set_down(n, err, "%s", why);
    rl_node_log(n, REDLOCK_LOG_WARN, "%s", why);
    rl_conn_close(n->conn, err, why);
}

static void node_on_timer(void *arg)
{
    rl_node *n = arg;
    if (!n->conn) {
        node_connect(n);
        return;
    }
    /* Still connecting past the deadline: the handshake did not finish
     * (black hole, paused master). Commands queued there fail now. */
    char why[96];
    snprintf(why, sizeof(why), "no answer to connect within %u ms", CFG(n)->connect_timeout_ms);
    node_fail(n, REDLOCK_ETIMEOUT, why);
}

static void arm(rl_node *n, uint32_t ms)
{
    rl_timer_start(&n->timer, ms);
}

static void node_schedule_reconnect(rl_node *n)
{
    if (!rl_node_open(n))
        return; /* closing */
    uint32_t ms = n->backoff_ms;
    uint32_t max = CFG(n)->reconnect_max_ms;
    n->backoff_ms = ms >= max / 2 ? max : ms * 2;
    arm(n, ms);
    rl_node_log(n, REDLOCK_LOG_DEBUG, "reconnect in %u ms (%s)", ms, n->errstr);
}

static void node_on_close(rl_conn *conn, int err, const char *why, void *arg)
{
    rl_node *n = arg;
    if (conn != n->conn)
        return;
    n->conn = NULL;
    n->id_current = false;
    bool was_up = n->state == RL_NODE_UP;
    if (n->state != RL_NODE_DOWN)
        node_set_down(n, err, "%s", why);
    if (!rl_node_open(n))
        return; /* the client is shutting down */
    rl_timer_stop(&n->timer);
    rl_node_log(n, was_up ? REDLOCK_LOG_WARN : REDLOCK_LOG_INFO, "disconnected: %s", n->errstr);
    node_schedule_reconnect(n);
    if (was_up)
        node_notify(n);
}

static const rl_conn_hooks node_hooks = { .on_close = node_on_close };

/* ---- handshake replies ------------------------------------------------------ *
 * Each runs with the reply to one handshake command on n->conn (a new
 * connection is only opened after the old one closed, so they cannot be
 * confused). A NULL reply means the connection failed: node_on_close
 * handles that. */

/* The text of an error reply, or NULL for anything else (an answer the
 * handshake goes on after, or no reply: node_on_close has it). */
static const char *hs_error(const rl_reply *r)
{
    return r && rl_reply_type(r) == RL_REPLY_ERROR ? rl_reply_str(r, NULL) : NULL;
}

static void hs_on_auth(void *arg, const rl_reply *r, int err, const char *why)
{
    (void)err;
    (void)why;
    const char *s = hs_error(r);
    if (!s)
        return;
    char msg[REDLOCK_VOTE_DETAIL_LEN];
    int code = rl_classify_error_reply(s, strlen(s));
    /* No advice here: outcome.c adds it once, to the whole message. */
    snprintf(msg, sizeof(msg), "AUTH failed: %.60s", s);
    node_fail(arg, code == REDLOCK_EUNAVAIL ? code : REDLOCK_EAUTH, msg);
}

static void hs_on_select(void *arg, const rl_reply *r, int err, const char *why)
{
    (void)err;
    (void)why;
    rl_node *n = arg;
    const char *s = hs_error(r);
    if (!s)
        return;
    char msg[REDLOCK_VOTE_DETAIL_LEN];
    snprintf(msg, sizeof(msg), "SELECT %d failed: %.60s", n->addr.db, s);
    node_fail(n, rl_classify_error_reply(s, strlen(s)), msg);
}

static void hs_ignore(void *arg, const rl_reply *r, int err, const char *why)
{
    /* SCRIPT LOAD: EVALSHA falls back to EVAL if the load did not take. */
    (void)arg;
    (void)r;
    (void)err;
    (void)why;
}

static void hs_on_info(void *arg, const rl_reply *r, int err, const char *why)
{
    (void)err;
    (void)why;
    rl_node *n = arg;
    if (!r || rl_reply_type(r) != RL_REPLY_STRING)
        return; /* no INFO (ACL): no restart events, nothing else lost */
    char old[41];
    if (rl_trust_info(&n->trust, rl_reply_str(r, NULL), old)) {
        if (n->moved)
            rl_node_event(n, 0, REDLOCK_EVENT_RESTART,
                          "another server at %s (run_id %.8s -> %.8s): its name moved", n->addr.ip,
                          old, n->trust.run_id);
        else
            rl_node_event(n, 0, REDLOCK_EVENT_RESTART, "restarted (run_id %.8s -> %.8s, up %llds)",
                          old, n->trust.run_id, (long long)n->trust.uptime_s);
    }
    n->id_current = n->trust.run_id[0] != '\0';
    int twin = n->id_current && n->env->on_identity ? n->env->on_identity(n, n->env->arg) : -1;
    if (twin < 0)
        return;
    /* Another entry of the list reaches this very redis-server (another
     * address form, another db): one server's word would count twice. The
     * later of the two is refused. Closing here fails every command queued
     * behind the handshake, votes included, before any of their replies is
     * read: replies come in order, and this is INFO's. It reconnects with
     * the backoff of any failed handshake and is refused again while the
     * other one is up. */
    char msg[REDLOCK_VOTE_DETAIL_LEN];
    snprintf(msg, sizeof(msg),
             "same server as master %d (run_id %.8s): each master must be a "
             "separate redis-server",
             twin, n->trust.run_id);
    n->twin = twin;
    /* A name moved onto another master's server needs no rebirth there:
     * one server, one vote, is what keeps that case safe (identity.c), and
     * a rebirth at every refused reconnect would keep the other master out
     * for as long as the mistake lasts. */
    n->moved = false;
    node_fail(n, REDLOCK_EINVAL, msg);
    node_notify(n);
}

static void hs_on_ready(void *arg, const rl_reply *r, int err, const char *why)
{
    (void)err;
    (void)why;
    rl_node *n = arg;
    if (!r || n->state != RL_NODE_CONNECTING)
        return;
    if (rl_reply_type(r) == RL_REPLY_ERROR) {
        size_t len;
        const char *s = rl_reply_str(r, &len);
        int code = rl_classify_error_reply(s, len);
        char msg[REDLOCK_VOTE_DETAIL_LEN];
        if (code == REDLOCK_EAUTH && len >= 6 && memcmp(s, "NOAUTH", 6) == 0)
            snprintf(msg, sizeof(msg), "the master requires a password (none was given: set one)");
        else if (code == REDLOCK_EUNAVAIL)
            snprintf(msg, sizeof(msg), "not ready: %.70s", s);
        else
            snprintf(msg, sizeof(msg), "handshake failed: %.60s", s);
        node_fail(n, code, msg);
        return;
    }
    n->state = RL_NODE_UP;
    n->twin = -1;
    n->err = 0;
    n->errstr[0] = '\0';
    n->backoff_ms = CFG(n)->reconnect_min_ms;
    n->connects++;
    rl_timer_stop(&n->timer);
    rl_node_log(n, REDLOCK_LOG_INFO, "connected%s%s%s%s%s", rl_conn_is_tls(n->conn) ? " (TLS)" : "",
                n->id_current && n->trust.version[0] ? ": " : "",
                n->id_current ? n->trust.version : "",
                rl_node_native(n, RL_NATIVE_DELIFEQ) ? ", release by DELIFEQ" : "",
                rl_node_native(n, RL_NATIVE_DELEX) ? ", release by DELEX IFEQ" : "");
    node_notify(n);
}

/* Queue the handshake: AUTH, SELECT, the scripts, who this master is
 * (INFO), what it remembers and whether it may evict (the marker, CONFIG),
 * and PING, whose reply marks the node up. */
static int node_handshake(rl_node *n)
{
    rl_conn *conn = n->conn;
    int rc = rl_node_send_auth(n, conn, hs_on_auth);
    char db[16];
    if (!rc && n->addr.db >= 0) {
        const char *argv[2] = { "SELECT", db };
        size_t lens[2] = { 6, (size_t)snprintf(db, sizeof(db), "%d", n->addr.db) };
        rc = rl_conn_send(conn, hs_on_select, n, 2, argv, lens);
    }
    for (int i = 0; !rc && i < RL_SCRIPT_COUNT; i++) {
        const char *argv[3] = { "SCRIPT", "LOAD", rl_script_body(i) };
        size_t lens[3] = { 6, 4, strlen(argv[2]) };
        rc = rl_conn_send(conn, hs_ignore, n, 3, argv, lens);
    }
    static const char *info[1] = { "INFO" };
    static const size_t ilen[1] = { 4 };
    static const char *ping[1] = { "PING" };
    static const size_t plen[1] = { 4 };
    if (!rc)
        rc = rl_conn_send(conn, hs_on_info, n, 1, info, ilen);
    if (!rc)
        rc = rl_node_ask_memory(n, conn);
    if (!rc)
        rc = rl_conn_send(conn, hs_on_ready, n, 1, ping, plen);
    return rc;
}

static void node_open(rl_node *n)
{
    const redlock_config *cfg = CFG(n);
    rl_conn_opts o = rl_node_conn_opts(n, false);
    char why[REDLOCK_VOTE_DETAIL_LEN] = "";
    n->connect_us = rl_now_us();
    n->id_current = false;
    rl_timer_stop(&n->timer);
    int rc = rl_conn_open(&o, &node_hooks, n, &n->conn, why, sizeof(why));
    if (rc) {
        /* Refused at once (a missing unix socket, a refusal on loopback):
         * said once, not at every retry of the backoff. */
        if (n->err != rc || strcmp(n->errstr, why) != 0)
            rl_node_log(n, REDLOCK_LOG_INFO, "connect failed: %s", why);
        n->conn = NULL;
        node_set_down(n, rc, "%s", why);
        node_schedule_reconnect(n);
        return;
    }
    n->state = RL_NODE_CONNECTING;
    /* A new connection may reach another process: who it is is checked
     * again (CHECK) before its votes count. */
    n->trust.checked = false;
    if (RL_TRACING(n->env->trace))
        rl_trace_emit(n->env->trace, rl_now_us(), "CONN", "m=%u", n->idx);
    n->trust.ref_ms = 0; /* and its clock read again (rl_trust_fast) */
    n->trust.check_err[0] = '\0';
    n->trust.check_acl = false;
    rc = node_handshake(n);
    if (rc) {
        node_fail(n, rc, "cannot queue the handshake");
        return;
    }
    arm(n, cfg->connect_timeout_ms);
}

/* A name that resolves to several addresses is several servers, and a master
 * must be one (docs/memory-guard.md, "Names that move"): said once per
 * client, and the pick is rl_addr_resolve()'s. Not refused: a DNS change must
 * not turn into an outage of the master; the operator's rule is what keeps it
 * safe. */
static void node_round_robin(rl_node *n, int naddrs)
{
    if (naddrs <= 1 || n->round_robin)
        return;
    n->round_robin = true;
    rl_node_log(n, REDLOCK_LOG_WARN,
                "\"%s\" resolves to %d addresses (round-robin): unsafe for a master, which must "
                "be one server (docs/memory-guard.md, \"Names that move\"); using %s",
                n->addr.host, naddrs, n->addr.ip);
}

static void node_on_resolved(void *arg, int gai, const char *ip, int naddrs)
{
    rl_node *n = arg;
    n->resolving = NULL;
    if (gai != 0) {
        /* Keep the last good address: a resolver that fails says nothing
         * of where the master is, and the server there is the one whose
         * memory this node's votes were checked against. */
        if (!n->resolve_failed)
            rl_node_log(n, REDLOCK_LOG_WARN, "cannot resolve \"%s\" again: %s; keeping %s",
                        n->addr.host, gai_strerror(gai), n->addr.ip);
        n->resolve_failed = true;
    } else {
        if (n->resolve_failed)
            rl_node_log(n, REDLOCK_LOG_INFO, "\"%s\" resolves again", n->addr.host);
        n->resolve_failed = false;
        if (strcmp(ip, n->addr.ip) != 0) {
            rl_node_log(n, REDLOCK_LOG_INFO, "now at %s (was %s)", ip, n->addr.ip);
            snprintf(n->addr.ip, sizeof(n->addr.ip), "%s", ip);
            n->moved = true;
        }
        node_round_robin(n, naddrs);
    }
    node_open(n);
}

/* Connect: at once to an address, or to where a name points now. */
static void node_connect(rl_node *n)
{
    if (n->resolving)
        return; /* connects when the answer is in */
    bool fresh = n->addr_fresh;
    n->addr_fresh = false;
    if (fresh || !rl_addr_is_name(&n->addr)) {
        node_open(n);
        return;
    }
    n->connect_us = rl_now_us(); /* the on-demand rate limit counts the look-up */
    rl_timer_stop(&n->timer);
    n->resolving = rl_resolve_start(n->env->loop, n->addr.host, node_on_resolved, n);
    if (!n->resolving) {
        rl_node_log(n, REDLOCK_LOG_DEBUG, "cannot look \"%s\" up now; connecting to %s",
                    n->addr.host, n->addr.ip);
        node_open(n);
        return;
    }
    rl_node_log(n, REDLOCK_LOG_DEBUG, "looking \"%s\" up again", n->addr.host);
}

/* May @count more commands be queued on @n now? 0, or why not. */
static int node_admit(rl_node *n, uint32_t count, bool priority)
{
    if (n->state == RL_NODE_DOWN && !n->conn && rl_node_open(n) &&
        rl_now_us() - n->connect_us >= (uint64_t)CFG(n)->reconnect_min_ms * 1000)
        node_connect(n); /* the master may be back: find out now, not after the backoff */
    if (n->state == RL_NODE_DOWN)
        return n->err ? n->err : REDLOCK_ECONNECT;
    uint32_t limit = CFG(n)->max_inflight;
    uint32_t inflight = rl_conn_pending(n->conn);
    if (inflight + count > (priority ? 2 * limit : limit)) {
        snprintf(n->errstr, sizeof(n->errstr),
                 "%u commands waiting for an answer (master paused or partitioned?)", inflight);
        return REDLOCK_EBUSY;
    }
    return 0;
}

static int node_sent(rl_node *n, int rc)
{
    if (rc != 0 && !n->errstr[0])
        snprintf(n->errstr, sizeof(n->errstr), "connection closing");
    return rc;
}

int rl_node_send(rl_node *n, rl_reply_fn *fn, void *arg, int argc, const char **argv,
                 const size_t *argvlen, bool priority)
{
    int rc = node_admit(n, 1, priority);
    if (rc != 0)
        return rc;
    return node_sent(n, rl_conn_send(n->conn, fn, arg, argc, argv, argvlen));
}

int rl_node_send_tx(rl_node *n, const rl_node_tx *tx, void *arg, bool priority, int *ret_sent)
{
    static const char *const multi[1] = { "MULTI" }, *const exec[1] = { "EXEC" };
    static const size_t multi_len[1] = { 5 }, exec_len[1] = { 4 };
    *ret_sent = 0;
    int rc = node_admit(n, 1, priority); /* one request (rl_conn_pending) */
    if (rc != 0)
        return rc;
    int last = tx->nparts - (tx->pipelined ? 1 : 0), off = 0;
    if (!tx->pipelined) {
        rc = rl_conn_send_part(n->conn, tx->queued, arg, 1, (const char **)multi, multi_len);
        if (rc != 0)
            return node_sent(n, rc);
        (*ret_sent)++;
    }
    for (int i = 0; i < last && rc == 0; i++) {
        rc = rl_conn_send_part(n->conn, tx->queued, arg, tx->part_argc[i], tx->argv + off,
                               tx->argvlen + off);
        off += tx->part_argc[i];
        *ret_sent += rc == 0;
    }
    if (rc == 0 && tx->pipelined)
        rc = rl_conn_send(n->conn, tx->done, arg, tx->part_argc[last], tx->argv + off,
                          tx->argvlen + off);
    else if (rc == 0)
        rc = rl_conn_send(n->conn, tx->done, arg, 1, (const char **)exec, exec_len);
    if (rc != 0) {
        /* A MULTI left open would swallow the next command into it, and a
         * pipeline cut short would never answer: the connection goes
         * (every reply function sent runs with NULL). */
        rl_conn_close(n->conn, REDLOCK_ENOMEM, "out of memory queueing a transaction");
        return 0;
    }
    (*ret_sent)++;
    return 0;
}

int rl_node_init(rl_node *n, const rl_node_env *env, uint32_t idx, const rl_addr *addr)
{
    memset(n, 0, sizeof(*n));
    n->env = env;
    n->idx = idx;
    n->addr = *addr;
    n->state = RL_NODE_DOWN;
    n->err = REDLOCK_ECONNECT;
    snprintf(n->errstr, sizeof(n->errstr), "not connected yet");
    n->backoff_ms = env->cfg->reconnect_min_ms;
    n->twin = -1;
    n->addr_fresh = true;
    rl_trust_init(&n->trust, env->cfg);
    return rl_timer_init(&n->timer, env->loop, node_on_timer, n);
}

void rl_node_start(rl_node *n)
{
    node_round_robin(n, n->addr.naddrs);
    node_connect(n);
}

void rl_node_flush(rl_node *n)
{
    rl_conn_flush(n->conn);
}

/* No reconnect is scheduled from here on (the timer is gone). The NULL
 * replies that closing delivers land in fanouts whose owners have already
 * completed and let go. */
void rl_node_close(rl_node *n)
{
    /* A look-up in flight keeps its thread; the answer is dropped. */
    rl_resolve_cancel(n->resolving);
    n->resolving = NULL;
    rl_timer_fini(&n->timer);
    if (n->sub)
        rl_conn_close(n->sub, REDLOCK_ESHUTDOWN, "client shutting down");
    if (n->conn) {
        node_set_down(n, REDLOCK_ESHUTDOWN, "client shutting down");
        rl_conn_close(n->conn, REDLOCK_ESHUTDOWN, "client shutting down");
    }
}
