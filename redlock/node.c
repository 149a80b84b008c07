/* node.c - one master: its connection, handshake, reconnects and in-flight bound.
 *
 * A node is a long-lived handle (libuv's sense): connected when the client
 * starts, reconnected with capped exponential backoff when lost. While it is
 * down, commands fail at once instead of waiting: a refused connection costs
 * an acquire nothing. While it is up but silent (SIGSTOP, a partition) the
 * op's own timer decides; here we only bound how many commands may pile up
 * behind the silence, so memory stays bounded until the master comes back
 * and answers them all, in order.
 *
 * hiredis 0.14.1 rules we code against: a failed connect calls onConnect
 * with REDIS_ERR and then frees the context itself; onDisconnect fires only
 * for contexts that had connected; pending callbacks always run (with NULL)
 * before the context is freed. After hiredis frees a context, we never touch
 * it again: n->ac is cleared in those two callbacks.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static void node_schedule_reconnect(rl_node *n);
static void node_connect(rl_node *n);

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

/* Why did this context fail? hiredis keeps errno-ish text in ac->errstr. */
static void node_record_ctx_error(rl_node *n, const redisAsyncContext *ac)
{
    int code = REDLOCK_ECONNECT;
    const char *what = ac->errstr[0] ? ac->errstr : "connection lost";
    if (ac->err == REDIS_ERR_OOM && n->refused) {
        /* Our reply guard said no; hiredis can only call that OOM. */
        node_set_down(n, REDLOCK_EPROTO, "master sent %s (is this a Redis server?)", n->refused);
        return;
    }
    if (ac->err == REDIS_ERR_PROTOCOL) {
        node_set_down(n, REDLOCK_EPROTO, "%.80s", what);   /* hiredis says "Protocol error, ..." */
        return;
    }
    if (ac->err == REDIS_ERR_EOF) {
        node_set_down(n, code, "connection closed by master");
        return;
    }
    if (strstr(what, "refused")) {
        node_set_down(n, code, "connection refused (is redis-server running?)");
        return;
    }
    node_set_down(n, code, "%.80s", what);
}

static void node_on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    rl_node *n = arg;
    if (!n->ac) {
        node_connect(n);
        return;
    }
    /* A context is still there past its deadline: the handshake did not
     * finish (black hole, paused master), or we asked it to disconnect
     * after an AUTH/handshake error and the master never answered what was
     * queued. Drop it (pending commands get NULL replies and fail now) and
     * back off. */
    redisAsyncContext *ac = n->ac;
    if (n->state != RL_NODE_DOWN)
        node_set_down(n, REDLOCK_ETIMEOUT, "no answer to connect within %u ms",
                      n->c->cfg.connect_timeout_ms);
    n->state = RL_NODE_DOWN;
    n->ac = NULL;
    n->inflight = 0;   /* all of them get their NULL reply right now */
    redisAsyncFree(ac);
    node_schedule_reconnect(n);
}

static void node_arm_deadline(rl_node *n)
{
    uint32_t ms = n->c->cfg.connect_timeout_ms;
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    evtimer_add(n->timer, &tv);
}

static void node_schedule_reconnect(rl_node *n)
{
    if (n->c->freeing)
        return;
    uint32_t ms = n->backoff_ms;
    uint32_t max = n->c->cfg.reconnect_max_ms;
    n->backoff_ms = ms >= max / 2 ? max : ms * 2;
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    evtimer_add(n->timer, &tv);
    rl_log(n->c, REDLOCK_LOG_DEBUG, "master %s: reconnect in %u ms (%s)", n->addr, ms, n->errstr);
}

static void node_on_connect(const redisAsyncContext *ac, int status)
{
    rl_node *n = ac->data;
    if (status == REDIS_OK)
        return;   /* the handshake's PING reply marks the node up */
    /* hiredis frees this context right after we return. */
    node_record_ctx_error(n, ac);
    n->ac = NULL;
    n->inflight = 0;   /* hiredis flushes them next, with NULL replies */
    evtimer_del(n->timer);
    rl_log(n->c, REDLOCK_LOG_INFO, "master %s: %s", n->addr, n->errstr);
    node_schedule_reconnect(n);
}

static void node_on_disconnect(const redisAsyncContext *ac, int status)
{
    rl_node *n = ac->data;
    if (n->ac != ac)
        return;   /* we dropped it ourselves and already moved on */
    if (status != REDIS_OK || n->state != RL_NODE_DOWN)
        node_record_ctx_error(n, ac);
    n->ac = NULL;
    n->inflight = 0;
    n->state = RL_NODE_DOWN;
    evtimer_del(n->timer);
    rl_log(n->c, REDLOCK_LOG_WARN, "master %s: disconnected: %s", n->addr, n->errstr);
    node_schedule_reconnect(n);
}

static void node_on_auth(redisAsyncContext *ac, void *reply, void *privdata)
{
    rl_node *n = privdata;
    const redisReply *r = reply;
    rl_node_reply_seen(n, ac, r);
    if (!r || r->type != REDIS_REPLY_ERROR || n->ac != ac)
        return;
    /* No advice here: outcome.c adds it once, to the whole message. */
    node_set_down(n, REDLOCK_EAUTH, "AUTH failed: %.60s", r->str);
    rl_log(n->c, REDLOCK_LOG_ERROR, "master %s: %s", n->addr, n->errstr);
    /* Commands queued behind AUTH get NOAUTH errors from the master and are
     * classified as EAUTH; then the connection goes and we back off. The
     * deadline covers a master that stops answering in between. */
    redisAsyncDisconnect(ac);
    node_arm_deadline(n);
}

static void node_on_ready(redisAsyncContext *ac, void *reply, void *privdata)
{
    rl_node *n = privdata;
    const redisReply *r = reply;
    rl_node_reply_seen(n, ac, r);
    if (!r || n->ac != ac || n->state != RL_NODE_CONNECTING)
        return;
    if (r->type == REDIS_REPLY_ERROR) {
        int code = rl_classify_error_reply(r->str, r->len);
        if (code == REDLOCK_EAUTH && r->len >= 6 && memcmp(r->str, "NOAUTH", 6) == 0)
            node_set_down(n, code, "the master requires a password (none was given: set one)");
        else
            node_set_down(n, code, "handshake failed: %.60s", r->str);
        redisAsyncDisconnect(ac);
        node_arm_deadline(n);
        return;
    }
    n->state = RL_NODE_UP;
    n->err = 0;
    n->errstr[0] = '\0';
    n->backoff_ms = n->c->cfg.reconnect_min_ms;
    n->connects++;
    evtimer_del(n->timer);
    rl_log(n->c, REDLOCK_LOG_INFO, "master %s: connected", n->addr);
}

static void node_on_script_loaded(redisAsyncContext *ac, void *reply, void *privdata)
{
    /* Nothing to do: EVALSHA falls back to EVAL if the load did not take. */
    rl_node_reply_seen(privdata, ac, reply);
}

static void node_event(rl_node *n, int event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clock and restart events: a log line (WARN) and the event hook. */
static void node_event(rl_node *n, int event, const char *fmt, ...)
{
    redlock_client *c = n->c;
    if (!c->cfg.event_fn && !(c->cfg.log_fn && REDLOCK_LOG_WARN >= c->cfg.log_level))
        return;
    char msg[256];
    int len = snprintf(msg, sizeof(msg), "master %s: ", n->addr);
    va_list ap;
    va_start(ap, fmt);
    if (len > 0 && (size_t)len < sizeof(msg))
        vsnprintf(msg + len, sizeof(msg) - (size_t)len, fmt, ap);
    va_end(ap);
    rl_log(c, REDLOCK_LOG_WARN, "%s", msg);
    if (c->cfg.event_fn)
        c->cfg.event_fn((int)n->idx, event, msg, c->cfg.event_arg);
}

/* "name:value\r\n" inside an INFO reply. */
static bool info_field(const char *info, const char *name, char *out, size_t len)
{
    size_t nl = strlen(name);
    for (const char *p = info; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, name, nl) == 0 && p[nl] == ':') {
            p += nl + 1;
            size_t i = 0;
            while (p[i] && p[i] != '\r' && p[i] != '\n' && i + 1 < len) {
                out[i] = p[i];
                i++;
            }
            out[i] = '\0';
            return true;
        }
    }
    return false;
}

static void node_on_info(redisAsyncContext *ac, void *reply, void *privdata)
{
    rl_node *n = privdata;
    const redisReply *r = reply;
    rl_node_reply_seen(n, ac, r);
    if (!r || r->type != REDIS_REPLY_STRING || n->ac != ac)
        return;   /* no INFO (ACL): the guard treats the master as unknown */
    char run_id[41] = "", up[32] = "", aof[8] = "";
    info_field(r->str, "run_id", run_id, sizeof(run_id));
    info_field(r->str, "uptime_in_seconds", up, sizeof(up));
    info_field(r->str, "aof_enabled", aof, sizeof(aof));
    n->uptime_s = strtoll(up, NULL, 10);
    /* uptime_in_seconds is the difference of two whole-second clock
     * readings, so it may exceed the real uptime by up to a second (seen:
     * "1" at 0.23 s). The latest possible start is therefore
     * now - (uptime - 1 s); the guard measures from it, which protects
     * longest. */
    rl_monotime now = rl_now_us();
    uint64_t up_us = (uint64_t)(n->uptime_s > 1 ? n->uptime_s - 1 : 0) * 1000000u;
    n->started_us = now > up_us ? now - up_us : 1;
    if (n->run_id[0] && run_id[0] && strcmp(n->run_id, run_id) != 0) {
        n->restart_seen = true;
        drift_monitor_reset(&n->clock);   /* a new process: a new clock history */
        node_event(n, REDLOCK_EVENT_RESTART, "restarted (run_id %.8s -> %.8s, up %llds)",
                   n->run_id, run_id, (long long)n->uptime_s);
    }
    if (run_id[0])
        memcpy(n->run_id, run_id, sizeof(n->run_id));
    n->aof_always = aof[0] == '1';   /* confirmed by the CONFIG GET reply next */
}

static void node_on_fsync(redisAsyncContext *ac, void *reply, void *privdata)
{
    rl_node *n = privdata;
    const redisReply *r = reply;
    rl_node_reply_seen(n, ac, r);
    if (!r || n->ac != ac)
        return;
    bool always = r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                  r->element[1]->type == REDIS_REPLY_STRING &&
                  strcmp(r->element[1]->str, "always") == 0;
    /* CONFIG may be denied (ACL, renamed): then we cannot know, and a
     * master we cannot vouch for is guarded like one without AOF. */
    n->aof_always = n->aof_always && always;
}

/* Handshake: AUTH (if configured), SCRIPT LOAD of our scripts (so EVALSHA
 * hits at once), then PING, whose reply marks the node up. All of it is
 * queued before the TCP connect completes; commands from ops queue behind
 * it on the same connection, so they always run after AUTH. */
static void node_connect(rl_node *n)
{
    redlock_client *c = n->c;
    redisAsyncContext *ac = redisAsyncConnect(n->ip, n->port);
    if (!ac) {
        node_set_down(n, REDLOCK_ENOMEM, "out of memory connecting");
        node_schedule_reconnect(n);
        return;
    }
    if (ac->err) {
        node_record_ctx_error(n, ac);
        redisAsyncFree(ac);
        node_schedule_reconnect(n);
        return;
    }
    /* hiredis 0.14 opens sockets without close-on-exec: a program that
     * forks and execs (redlock-cli run) would leak our connections into
     * its children, keeping them open after we close them. */
    int fdflags = fcntl(ac->c.fd, F_GETFD);
    if (fdflags >= 0)
        fcntl(ac->c.fd, F_SETFD, fdflags | FD_CLOEXEC);
    int rc = rl_ev_attach(ac, c->base);
    if (rc != 0) {
        node_set_down(n, rc, "cannot attach to event loop");
        redisAsyncFree(ac);
        node_schedule_reconnect(n);
        return;
    }
    ac->data = n;
    n->refused = NULL;
    rl_node_guard_replies(ac);
    redisAsyncSetConnectCallback(ac, node_on_connect);
    redisAsyncSetDisconnectCallback(ac, node_on_disconnect);
    n->ac = ac;
    n->state = RL_NODE_CONNECTING;

    if (c->password) {
        const char *argv[3] = { "AUTH", c->username ? c->username : c->password, c->password };
        size_t lens[3] = { 4, strlen(argv[1]), strlen(argv[2]) };
        int argc = c->username ? 3 : 2;
        if (redisAsyncCommandArgv(ac, node_on_auth, n, argc, argv, lens) == REDIS_OK)
            n->inflight++;
    }
    for (int i = 0; i < RL_SCRIPT_COUNT; i++) {
        const char *argv[3] = { "SCRIPT", "LOAD", rl_script_body(i) };
        size_t lens[3] = { 6, 4, strlen(argv[2]) };
        if (redisAsyncCommandArgv(ac, node_on_script_loaded, n, 3, argv, lens) == REDIS_OK)
            n->inflight++;
    }
    /* Restart guard: who is this master, since when, and does it keep its
     * keys across restarts? The replies arrive before any op's votes queued
     * behind them, so the guard decides on fresh facts. */
    const char *info[1] = { "INFO" };
    size_t ilen[1] = { 4 };
    if (redisAsyncCommandArgv(ac, node_on_info, n, 1, info, ilen) == REDIS_OK)
        n->inflight++;
    const char *cfgget[3] = { "CONFIG", "GET", "appendfsync" };
    size_t clen[3] = { 6, 3, 11 };
    if (redisAsyncCommandArgv(ac, node_on_fsync, n, 3, cfgget, clen) == REDIS_OK)
        n->inflight++;
    const char *ping[1] = { "PING" };
    size_t plen[1] = { 4 };
    if (redisAsyncCommandArgv(ac, node_on_ready, n, 1, ping, plen) == REDIS_OK)
        n->inflight++;

    node_arm_deadline(n);
}

void rl_node_reply_seen(rl_node *n, const redisAsyncContext *ac, const redisReply *r)
{
    if (n->ac == ac && n->inflight > 0)
        n->inflight--;
    if (r || n->ac != ac)
        return;
    /* A NULL reply: the connection failed (hiredis is flushing its callbacks
     * before freeing the context). Mark the node down now, so commands sent
     * from inside these callbacks fail at once instead of being queued on a
     * dying context; the disconnect/connect callback does the rest. */
    if (n->state != RL_NODE_DOWN)
        node_record_ctx_error(n, ac);
    n->state = RL_NODE_DOWN;
}

int rl_node_send(rl_node *n, redisCallbackFn *fn, void *privdata, int argc,
                 const char **argv, const size_t *argvlen, bool priority)
{
    if (n->state == RL_NODE_DOWN || !n->ac)
        return n->err ? n->err : REDLOCK_ECONNECT;
    uint32_t limit = n->c->cfg.max_inflight;
    if (n->inflight >= (priority ? 2 * limit : limit)) {
        snprintf(n->errstr, sizeof(n->errstr),
                 "%u commands waiting for an answer (master paused or partitioned?)",
                 n->inflight);
        return REDLOCK_EBUSY;
    }
    if (redisAsyncCommandArgv(n->ac, fn, privdata, argc, argv, argvlen) != REDIS_OK) {
        /* Only a context that is disconnecting or being freed refuses. */
        if (!n->errstr[0])
            snprintf(n->errstr, sizeof(n->errstr), "connection closing");
        return REDLOCK_ECONNECT;
    }
    n->inflight++;
    return 0;
}

int rl_node_init(rl_node *n, redlock_client *c, uint32_t idx)
{
    n->c = c;
    n->idx = idx;
    n->state = RL_NODE_DOWN;
    n->err = REDLOCK_ECONNECT;
    snprintf(n->errstr, sizeof(n->errstr), "not connected yet");
    n->backoff_ms = c->cfg.reconnect_min_ms;
    drift_monitor_init(&n->clock, c->cfg.drift_factor, c->cfg.clock_jump_ms,
                       c->cfg.clock_window_ms, c->cfg.clock_readmit_ms);
    n->timer = evtimer_new(c->base, node_on_timer, n);
    return n->timer ? 0 : REDLOCK_ENOMEM;
}

void rl_node_start(rl_node *n)
{
    node_connect(n);
}

/* Called with c->freeing set: no reconnect is scheduled from here on. The
 * NULL replies that redisAsyncFree delivers land in fanouts whose owners
 * have already been completed and detached. */
void rl_node_close(rl_node *n)
{
    if (n->timer) {
        event_free(n->timer);
        n->timer = NULL;
    }
    if (n->ac) {
        redisAsyncContext *ac = n->ac;
        node_set_down(n, REDLOCK_ESHUTDOWN, "client shutting down");
        n->ac = NULL;
        n->inflight = 0;
        redisAsyncFree(ac);
    }
}

/* ---- clock probes ---------------------------------------------------------- */

static int64_t realtime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void node_on_time(redisAsyncContext *ac, void *reply, void *privdata)
{
    rl_node *n = privdata;
    const redisReply *r = reply;
    rl_node_reply_seen(n, ac, r);
    n->probe_out = false;
    drift_sample s;
    if (!rl_time_reply(r, &s.server_us))
        return;
    s.recv_us = rl_now_us();
    s.send_us = n->probe_send_us;
    s.real_mid_us = realtime_us() - (int64_t)(s.recv_us - s.send_us) / 2;
    int ev = drift_monitor_add(&n->clock, &s);
    if (ev == DRIFT_EV_JUMP)
        node_event(n, REDLOCK_EVENT_CLOCK_JUMP, "clock jumped %+lld ms%s",
                   (long long)(n->clock.last_jump_us / 1000),
                   n->c->cfg.clock_policy == REDLOCK_CLOCK_EXCLUDE ? "; excluded from quorums" : "");
    else if (ev == DRIFT_EV_RATE)
        node_event(n, REDLOCK_EVENT_CLOCK_RATE,
                   "clock runs at %.4f..%.4f of ours, beyond drift factor %g%s",
                   n->clock.rate_lo, n->clock.rate_hi, n->c->cfg.drift_factor,
                   n->c->cfg.clock_policy == REDLOCK_CLOCK_EXCLUDE ? "; excluded from quorums" : "");
}

void rl_node_probe(rl_node *n)
{
    if (n->probe_out || n->state != RL_NODE_UP)
        return;
    const char *argv[1] = { "TIME" };
    size_t lens[1] = { 4 };
    n->probe_send_us = rl_now_us();
    if (rl_node_send(n, node_on_time, n, 1, argv, lens, false) == 0)
        n->probe_out = true;
}

bool rl_node_excluded(const rl_node *n, uint32_t ttl_ms, char *why, size_t len)
{
    const redlock_client *c = n->c;
    rl_monotime now = rl_now_us();
    if (c->cfg.clock_policy == REDLOCK_CLOCK_EXCLUDE && !drift_monitor_trusted(&n->clock, now)) {
        snprintf(why, len, "excluded: clock %s; trusted again %.1f s after it behaves",
                 n->clock.rate_bad ? "runs at the wrong rate" : "jumped",
                 c->cfg.clock_readmit_ms / 1000.0);
        return true;
    }
    if (!c->cfg.restart_guard || n->aof_always || !n->started_us)
        return false;
    uint64_t window_ms = c->cfg.restart_guard_ms;
    if (n->restart_seen) {
        uint32_t longest = c->max_ttl_ms > ttl_ms ? c->max_ttl_ms : ttl_ms;
        if (longest > window_ms)
            window_ms = longest;
    }
    uint64_t until = n->started_us + window_ms * 1000;
    if (now < until) {
        snprintf(why, len, "excluded: %s %.1f s ago without AOF always; counts again in "
                 "%.1f s (restart guard)", n->restart_seen ? "restarted" : "started",
                 (double)(now - n->started_us) / 1e6, (double)(until - now) / 1e6);
        return true;
    }
    return false;
}

bool rl_time_reply(const redisReply *r, int64_t *ret_us)
{
    int64_t part[2];
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
        return false;
    for (int i = 0; i < 2; i++) {
        const redisReply *e = r->element[i];
        int64_t v = 0;
        if (e->type != REDIS_REPLY_STRING || e->len == 0 || e->len > 13)
            return false;
        for (size_t k = 0; k < e->len; k++) {
            if (e->str[k] < '0' || e->str[k] > '9')
                return false;
            v = v * 10 + (e->str[k] - '0');
        }
        part[i] = v;
    }
    if (part[0] > ((int64_t)1 << 40) || part[1] > 999999)
        return false;
    *ret_us = part[0] * 1000000 + part[1];
    return true;
}

/* ---- reply guard ------------------------------------------------------------ */

/* hiredis 0.14.1 trusts the server in three places where a master that is
 * not a well-behaved Redis (another service on the port, a proxy gone
 * wrong, anyone on the path) can take the whole process down: a reply no
 * command asked for fails an assert() (async.c, redisProcessCallbacks); on
 * a subscribed connection an array without two strings fails another, and
 * an "unsubscribe" of two elements is read past its end
 * (__redisGetSubscribeCallback); and "*N" makes the reader calloc N
 * pointers before one element arrived. The reader builds replies through a
 * table of functions, one object at a time, before hiredis looks at them:
 * ours refuses those replies there. A refusal (NULL) fails the reader,
 * which hiredis reports as out of memory and answers by dropping the
 * connection: the node goes down with EPROTO (node_record_ctx_error). */

#define RL_REPLY_ARRAY_MAX 1024     /* we never ask for more than 2 */

static redisReplyObjectFunctions *hiredis_fns;   /* the reader's own */
static redisReplyObjectFunctions guard_fns;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

static bool guard_refuse(const redisReadTask *t, const char *what)
{
    const redisAsyncContext *ac = t->privdata;
    rl_node *n = ac->data;
    n->refused = what;
    return true;
}

/* Does the top-level reply that @t belongs to go to pub/sub handling? */
static bool guard_is_pubsub(const redisReadTask *t)
{
    const redisAsyncContext *ac = t->privdata;
    const rl_node *n = ac->data;
    return ac == n->sub && ac->replies.head == NULL;
}

/* Checks common to every object; @type is what it will be. */
static bool guard_check(const redisReadTask *t, int type, long long elements)
{
    const redisAsyncContext *ac = t->privdata;
    const rl_node *n = ac->data;
    if (type == REDIS_REPLY_ARRAY && (elements < 0 || elements > RL_REPLY_ARRAY_MAX))
        return !guard_refuse(t, "an array too large to be ours");
    if (!t->parent) {
        /* Errors are hiredis' business: it drops the connection, keeping
         * their text (a full server says so this way). */
        if (type != REDIS_REPLY_ERROR && ac->replies.head == NULL && ac != n->sub)
            return !guard_refuse(t, "a reply nothing asked for");
        if (guard_is_pubsub(t) && type == REDIS_REPLY_ARRAY && elements < 3)
            return !guard_refuse(t, "a malformed pub/sub message");
        return true;
    }
    if (t->parent->parent || !guard_is_pubsub(t))
        return true;
    /* Elements of a pub/sub message: kind and channel are strings; the
     * count that ends an (p)unsubscribe is an integer. */
    if (t->idx < 2)
        return type == REDIS_REPLY_STRING || !guard_refuse(t, "a malformed pub/sub message");
    if (t->idx == 2) {
        const redisReply *msg = t->parent->obj;
        const char *kind = msg->element[0]->str;
        if (kind[0] == 'p' || kind[0] == 'P')
            kind++;
        if (strcasecmp(kind, "unsubscribe") == 0 && type != REDIS_REPLY_INTEGER)
            return !guard_refuse(t, "a malformed pub/sub message");
    }
    return true;
}

static void *guard_string(const redisReadTask *t, char *s, size_t len)
{
    return guard_check(t, t->type, 0) ? hiredis_fns->createString(t, s, len) : NULL;
}

static void *guard_array(const redisReadTask *t, int elements)
{
    return guard_check(t, REDIS_REPLY_ARRAY, elements) ? hiredis_fns->createArray(t, elements)
                                                       : NULL;
}

static void *guard_integer(const redisReadTask *t, long long v)
{
    return guard_check(t, REDIS_REPLY_INTEGER, 0) ? hiredis_fns->createInteger(t, v) : NULL;
}

static void *guard_nil(const redisReadTask *t)
{
    return guard_check(t, REDIS_REPLY_NIL, 0) ? hiredis_fns->createNil(t) : NULL;
}

static void guard_free(void *obj)
{
    hiredis_fns->freeObject(obj);
}

static void guard_init(void)
{
    /* hiredis keeps its functions static: take them from a reader. */
    redisReader *r = redisReaderCreate();
    if (!r)
        return;
    hiredis_fns = r->fn;
    redisReaderFree(r);
    guard_fns = (redisReplyObjectFunctions){ guard_string, guard_array, guard_integer,
                                             guard_nil, guard_free };
}

void rl_node_guard_replies(redisAsyncContext *ac)
{
    pthread_once(&guard_once, guard_init);
    if (!hiredis_fns || ac->c.reader->fn != hiredis_fns)
        return;     /* out of memory at init, or not hiredis' default table */
    ac->c.reader->fn = &guard_fns;
    ac->c.reader->privdata = ac;
}
