/* client.c - configuration, master addresses, client lifecycle, ops and locks.
 *
 * The client is the owner of everything long-lived: N nodes (one connection
 * each) and the list of ops not yet completed. Ops are short-lived requests
 * (libuv's sense). This file also holds the op plumbing every operation
 * shares: allocation, the single event each op uses for its timeouts and
 * retry delays, and completion, which is always delivered from the loop and
 * never from inside the call that started the op (libuv's contract).
 */
#include "internal.h"
#include "drift.h"

#include <arpa/inet.h>
#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

void redlock_config_init(redlock_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->node_timeout_ms = 50;
    cfg->connect_timeout_ms = 1000;
    cfg->retry_count = 3;
    cfg->retry_delay_ms = 200;
    cfg->retry_jitter_ms = 100;
    cfg->drift_factor = 0.01;
    cfg->release_retry_count = 2;
    cfg->release_retry_delay_ms = 20;
    cfg->reconnect_min_ms = 10;
    cfg->reconnect_max_ms = 1000;
    cfg->max_inflight = 1024;
    cfg->log_level = REDLOCK_LOG_WARN;
    cfg->clock_policy = REDLOCK_CLOCK_WARN;
    cfg->clock_probe_ms = 1000;
    cfg->clock_jump_ms = 25;
    cfg->clock_window_ms = 10000;
    cfg->clock_readmit_ms = 10000;
    cfg->restart_guard = 1;
    cfg->restart_guard_ms = 0;
    cfg->watchdog_divisor = 3;
    cfg->watchdog_max_extends = 1000;
    cfg->watchdog_max_lease_ms = 3600000;
    cfg->pubsub_wait = 1;
}

const char *redlock_version(void)
{
    return REDLOCK_VERSION_STRING;
}

/* ---- master list --------------------------------------------------------- */

/* Parse "host:port,[v6]:port,..." and resolve each host once. Host names are
 * resolved here and never again: a lock's safety argument counts on N fixed,
 * independent masters, and re-resolving could silently swap one. */
static int parse_masters(redlock_client *c, const char *list, redlock_error *e)
{
    size_t count = 0;
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t')) { p++; len--; }
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
        if (len == 0) {
            rl_seterr(e, REDLOCK_EINVAL, -1,
                      "masters: empty entry in \"%.80s\" (use host:port,host:port,...)", list);
            return REDLOCK_EINVAL;
        }
        if (count == REDLOCK_MAX_MASTERS) {
            rl_seterr(e, REDLOCK_EINVAL, -1, "masters: more than %d entries (use 3, 5 or 7 masters)",
                      REDLOCK_MAX_MASTERS);
            return REDLOCK_EINVAL;
        }
        rl_node *n = &c->nodes[count];
        char entry[272];
        if (len >= sizeof(entry) - 1) {
            rl_seterr(e, REDLOCK_EINVAL, -1, "masters: entry %zu is too long", count + 1);
            return REDLOCK_EINVAL;
        }
        memcpy(entry, p, len);
        entry[len] = '\0';
        snprintf(n->addr, sizeof(n->addr), "%s", entry);

        char host[272];
        const char *portstr;
        if (entry[0] == '[') {
            char *close = strchr(entry, ']');
            if (!close || close[1] != ':') {
                rl_seterr(e, REDLOCK_EINVAL, -1,
                          "masters: bad entry \"%.60s\" (IPv6 is written [addr]:port)", entry);
                return REDLOCK_EINVAL;
            }
            *close = '\0';
            snprintf(host, sizeof(host), "%s", entry + 1);
            portstr = close + 2;
        } else {
            char *colon = strrchr(entry, ':');
            if (!colon || colon == entry || strchr(entry, ':') != colon) {
                rl_seterr(e, REDLOCK_EINVAL, -1,
                          "masters: bad entry \"%.60s\" (expected host:port)", entry);
                return REDLOCK_EINVAL;
            }
            *colon = '\0';
            snprintf(host, sizeof(host), "%s", entry);
            portstr = colon + 1;
        }
        char *pend = NULL;
        long port = *portstr >= '0' && *portstr <= '9' ? strtol(portstr, &pend, 10) : -1;
        if (port < 1 || port > 65535 || !pend || *pend) {
            rl_seterr(e, REDLOCK_EINVAL, -1,
                      "masters: bad port in \"%.60s\" (expected 1..65535)", n->addr);
            return REDLOCK_EINVAL;
        }
        if (!host[0]) {
            rl_seterr(e, REDLOCK_EINVAL, -1, "masters: empty host in \"%.60s\"", n->addr);
            return REDLOCK_EINVAL;
        }

        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
        struct addrinfo *res = NULL;
        int gai = getaddrinfo(host, NULL, &hints, &res);
        if (gai != 0 || !res) {
            rl_seterr(e, REDLOCK_ERESOLVE, (int)count,
                      "master %.80s: cannot resolve \"%.60s\": %s (check the host name)",
                      n->addr, host, gai_strerror(gai));
            return REDLOCK_ERESOLVE;
        }
        /* Prefer IPv4: hiredis 0.14 tries AF_INET first for names too. */
        struct addrinfo *pick = res;
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
            if (ai->ai_family == AF_INET) { pick = ai; break; }
        const struct in6_addr *a6 = &((struct sockaddr_in6 *)pick->ai_addr)->sin6_addr;
        if (pick->ai_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)pick->ai_addr)->sin_addr, n->ip,
                      sizeof(n->ip));
        else if (IN6_IS_ADDR_V4MAPPED(a6))
            /* ::ffff:a.b.c.d is the IPv4 master a.b.c.d: name it so, or the
             * duplicate check below would count one master twice. */
            inet_ntop(AF_INET, &a6->s6_addr[12], n->ip, sizeof(n->ip));
        else
            inet_ntop(AF_INET6, a6, n->ip, sizeof(n->ip));
        freeaddrinfo(res);
        n->port = (int)port;

        for (size_t j = 0; j < count; j++) {
            if (c->nodes[j].port == n->port && strcmp(c->nodes[j].ip, n->ip) == 0) {
                rl_seterr(e, REDLOCK_EINVAL, (int)count,
                          "masters: %.60s and %.60s are the same master (%s:%d); "
                          "each master must be independent", c->nodes[j].addr, n->addr,
                          n->ip, n->port);
                return REDLOCK_EINVAL;
            }
        }
        count++;
        p += len;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == ',') {
            p++;
            if (!*p) {
                rl_seterr(e, REDLOCK_EINVAL, -1, "masters: trailing comma in \"%.80s\"", list);
                return REDLOCK_EINVAL;
            }
        }
    }
    if (count == 0) {
        rl_seterr(e, REDLOCK_EINVAL, -1, "masters: no master given (use host:port,host:port,...)");
        return REDLOCK_EINVAL;
    }
    c->n = (uint32_t)count;
    c->quorum = (uint32_t)(count / 2 + 1);
    return 0;
}

static int check_config(const redlock_config *cfg, redlock_error *e)
{
#define BAD(...) do { rl_seterr(e, REDLOCK_EINVAL, -1, __VA_ARGS__); return REDLOCK_EINVAL; } while (0)
    if (!cfg->masters || !cfg->masters[0])
        BAD("config.masters is empty (use \"host:port,host:port,...\")");
    if (cfg->node_timeout_ms == 0 || cfg->node_timeout_ms > 600000)
        BAD("config.node_timeout_ms is %u (use 1..600000; default 50)", cfg->node_timeout_ms);
    if (cfg->connect_timeout_ms == 0 || cfg->connect_timeout_ms > 600000)
        BAD("config.connect_timeout_ms is %u (use 1..600000)", cfg->connect_timeout_ms);
    if (!(cfg->drift_factor >= 0.0 && cfg->drift_factor < 1.0))
        BAD("config.drift_factor is %g (use 0 <= factor < 1; default 0.01)", cfg->drift_factor);
    if (cfg->retry_delay_ms > 600000 || cfg->retry_jitter_ms > 600000)
        BAD("config.retry_delay_ms/retry_jitter_ms too large (max 600000)");
    if (cfg->release_retry_delay_ms > 600000)
        BAD("config.release_retry_delay_ms too large (max 600000)");
    if (cfg->reconnect_min_ms == 0 || cfg->reconnect_min_ms > cfg->reconnect_max_ms ||
        cfg->reconnect_max_ms > 3600000)
        BAD("config.reconnect_min_ms/reconnect_max_ms must satisfy 1 <= min <= max <= 3600000");
    if (cfg->max_inflight == 0 || cfg->max_inflight > (1u << 20))
        BAD("config.max_inflight is %u (use 1..1048576)", cfg->max_inflight);
    if (cfg->key_prefix && strlen(cfg->key_prefix) > REDLOCK_PREFIX_MAX)
        BAD("config.key_prefix is longer than %d bytes", REDLOCK_PREFIX_MAX);
    if (cfg->username && !cfg->password)
        BAD("config.username is set without a password (ACL AUTH needs both)");
    if (cfg->password && !cfg->password[0])
        BAD("config.password is empty (use NULL for no AUTH)");
    if (cfg->clock_policy < REDLOCK_CLOCK_WARN || cfg->clock_policy > REDLOCK_CLOCK_OFF)
        BAD("config.clock_policy is %d (use REDLOCK_CLOCK_WARN, _EXCLUDE or _OFF)",
            cfg->clock_policy);
    if (cfg->clock_policy != REDLOCK_CLOCK_OFF &&
        (cfg->clock_probe_ms == 0 || cfg->clock_probe_ms > 3600000 ||
         cfg->clock_window_ms < cfg->clock_probe_ms || cfg->clock_window_ms > 86400000 ||
         cfg->clock_readmit_ms > 86400000 || cfg->clock_jump_ms > 3600000))
        BAD("config.clock_*: need 1 <= probe_ms <= window_ms <= 86400000, jump_ms and "
            "readmit_ms <= 86400000");
    if (cfg->watchdog_divisor < 2 || cfg->watchdog_divisor > 100)
        BAD("config.watchdog_divisor is %u (use 2..100; default 3)", cfg->watchdog_divisor);
    if (cfg->restart_guard_ms > REDLOCK_TTL_MAX_MS)
        BAD("config.restart_guard_ms is %u (max %u)", cfg->restart_guard_ms, REDLOCK_TTL_MAX_MS);
    return 0;
#undef BAD
}

static char *dup_or_null(const char *s, bool *oom)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = true;
    return d;
}

/* ---- lifecycle ----------------------------------------------------------- */

static void client_destroy(redlock_client *c);

/* The clock monitor's heartbeat: one TIME per master per interval, skipped
 * for masters still answering the previous one. */
static void client_on_probe(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    redlock_client *c = arg;
    for (uint32_t i = 0; i < c->n; i++)
        rl_node_probe(&c->nodes[i]);
}

int redlock_client_new(const redlock_config *cfg, struct event_base *base,
                       redlock_client **ret, redlock_error *reterr)
{
    if (!cfg || !ret) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "redlock_client_new: cfg and ret must not be NULL");
        return REDLOCK_EINVAL;
    }
    int rc = check_config(cfg, reterr);
    if (rc)
        return rc;
    if (rl_scripts_init() != 0) {
        rl_seterr(reterr, REDLOCK_ESYS, -1, "cannot initialise script digests");
        return REDLOCK_ESYS;
    }
    redlock_client *c = calloc(1, sizeof(*c));
    if (!c)
        goto oom;
    c->cfg = *cfg;
    bool oom = false;
    c->masters = dup_or_null(cfg->masters, &oom);
    c->prefix = dup_or_null(cfg->key_prefix ? cfg->key_prefix : "", &oom);
    c->username = dup_or_null(cfg->username, &oom);
    c->password = dup_or_null(cfg->password, &oom);
    if (oom)
        goto oom;
    c->cfg.masters = c->masters;
    c->cfg.key_prefix = c->prefix;
    c->cfg.username = c->username;
    c->cfg.password = c->password;
    c->prefix_len = strlen(c->prefix);
    c->rng = rl_random_u64();

    rc = parse_masters(c, c->masters, reterr);
    if (rc)
        goto fail;

    if (base) {
        c->base = base;
    } else {
        c->base = event_base_new();
        if (!c->base)
            goto oom;
        c->owns_base = true;
    }
    for (uint32_t i = 0; i < c->n; i++) {
        if (rl_node_init(&c->nodes[i], c, i) != 0)
            goto oom;
    }
    if (c->cfg.clock_policy != REDLOCK_CLOCK_OFF) {
        c->probe_ev = event_new(c->base, -1, EV_PERSIST, client_on_probe, c);
        if (!c->probe_ev)
            goto oom;
        uint32_t ms = c->cfg.clock_probe_ms;
        struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
        evtimer_add(c->probe_ev, &tv);
    }
    /* Start connecting before the I/O thread exists: the base is not shared
     * with another thread yet, so this needs no locking. */
    for (uint32_t i = 0; i < c->n; i++)
        rl_node_start(&c->nodes[i]);
    if (c->owns_base) {
        rc = rl_blocking_start(c, reterr);
        if (rc)
            goto fail;
    }
    *ret = c;
    return 0;

oom:
    rc = REDLOCK_ENOMEM;
    rl_seterr(reterr, rc, -1, "out of memory creating client");
fail:
    if (c)
        client_destroy(c);
    return rc;
}

static void op_deliver(rl_op *op);

/* Every op gets its callback exactly once: those already decided with their
 * real status, the rest with ESHUTDOWN. On the loop's thread. */
void rl_client_cancel_ops(redlock_client *c)
{
    c->freeing = true;
    rl_watchdog_stop_all(c);
    while (c->ops) {
        rl_op *op = c->ops;
        if (op->phase != RL_PHASE_DONE) {
            op->status = REDLOCK_ESHUTDOWN;
            rl_seterr(&op->err, REDLOCK_ESHUTDOWN, -1,
                      "client freed while the operation was in flight");
            rl_op_fill_outcome(op);
        }
        op_deliver(op);
    }
}

/* Tear down on the loop's thread (or after the I/O thread has exited). */
static void client_destroy(redlock_client *c)
{
    rl_client_cancel_ops(c);
    rl_pubsub_close(c);
    if (c->probe_ev)
        event_free(c->probe_ev);
    for (uint32_t i = 0; i < c->n; i++)
        rl_node_close(&c->nodes[i]);
    if (c->owns_base && c->base)
        event_base_free(c->base);
    free(c->masters);
    free(c->prefix);
    free(c->username);
    free(c->password);
    free(c);
}

void redlock_client_free(redlock_client *c)
{
    if (!c || c->freeing)
        return;   /* NULL, or called again from a callback run by this free */
    if (c->blk)
        rl_blocking_stop(c);
    client_destroy(c);
}

size_t redlock_client_masters(const redlock_client *c)
{
    return c ? c->n : 0;
}

size_t redlock_client_quorum(const redlock_client *c)
{
    return c ? c->quorum : 0;
}

const char *redlock_client_master_addr(const redlock_client *c, size_t i)
{
    return c && i < c->n ? c->nodes[i].addr : NULL;
}

/* ---- argument checks shared by the operations ---------------------------- */

int rl_check_async(redlock_client *c, redlock_error *reterr)
{
    if (!c) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "client is NULL");
        return REDLOCK_EINVAL;
    }
    if (c->blk) {
        rl_seterr(reterr, REDLOCK_EASYNC, -1,
                  "this client runs its own I/O thread (made with base == NULL): "
                  "use the blocking calls, or make it with your event_base");
        return REDLOCK_EASYNC;
    }
    if (c->freeing) {
        rl_seterr(reterr, REDLOCK_ESHUTDOWN, -1, "client is being freed");
        return REDLOCK_ESHUTDOWN;
    }
    return 0;
}

int rl_check_resource(const void *resource, size_t len, redlock_error *reterr)
{
    if (!resource || len == 0) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "resource name is empty (give 1..%d bytes)",
                  REDLOCK_RESOURCE_MAX);
        return REDLOCK_EINVAL;
    }
    if (len > REDLOCK_RESOURCE_MAX) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1,
                  "resource name is %zu bytes, longer than %d (hash long names first)",
                  len, REDLOCK_RESOURCE_MAX);
        return REDLOCK_EINVAL;
    }
    const void *nul = memchr(resource, '\0', len);
    if (nul) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1,
                  "resource name has a NUL byte at offset %zu (any byte but NUL is allowed)",
                  (size_t)((const char *)nul - (const char *)resource));
        return REDLOCK_EINVAL;
    }
    return 0;
}

int rl_check_ttl(const redlock_client *c, uint32_t ttl_ms, redlock_error *reterr)
{
    if (ttl_ms == 0 || ttl_ms > REDLOCK_TTL_MAX_MS) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "ttl %u ms is out of range (use 1..%u)",
                  ttl_ms, REDLOCK_TTL_MAX_MS);
        return REDLOCK_EINVAL;
    }
    /* A ttl no longer than the drift margin can never leave validity > 0:
     * refuse it up front instead of failing every attempt with EEXPIRED. */
    if (drift_validity_ms(ttl_ms, 0, c->cfg.drift_factor) <= 0) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1,
                  "ttl %u ms leaves no validity after the %llu ms drift margin "
                  "(use a ttl well above the margin plus a round trip)",
                  ttl_ms, (unsigned long long)drift_margin_ms(ttl_ms, c->cfg.drift_factor));
        return REDLOCK_EINVAL;
    }
    return 0;
}

/* ---- ops ----------------------------------------------------------------- */

static void op_on_event(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    rl_op *op = arg;
    if (op->phase == RL_PHASE_DONE) {
        op_deliver(op);
        return;
    }
    switch (op->kind) {
    case RL_OP_ACQUIRE: rl_acquire_on_timer(op); break;
    case RL_OP_RELEASE: rl_release_on_timer(op); break;
    case RL_OP_EXTEND:  rl_extend_on_timer(op); break;
    default:            rl_inspect_on_timer(op); break;
    }
}

/* Keys of a set, in one allocation: the lock keys (prefix + resource) and,
 * for fenced ops, each one's counter (the same key followed by "\0fence":
 * resource names cannot contain NUL, so no resource's lock key can ever be
 * another's counter). */
static char *build_keys(const redlock_client *c, const redlock_resource *set, size_t count,
                        bool fence, rl_keyset *keys, rl_keyset *fences)
{
    static const char suffix[] = "\0fence";   /* 6 bytes, NUL first */
    size_t nk = fence ? 2 * count : count;
    size_t bytes = nk * (sizeof(char *) + sizeof(size_t));
    for (size_t i = 0; i < count; i++)
        bytes += (c->prefix_len + set[i].len) * (fence ? 2 : 1) + (fence ? 6 : 0) + nk;
    char *mem = malloc(bytes ? bytes : 1);
    if (!mem)
        return NULL;
    const char **v = (const char **)(void *)mem;
    size_t *len = (size_t *)(void *)(mem + nk * sizeof(char *));
    char *p = mem + nk * (sizeof(char *) + sizeof(size_t));
    for (size_t k = 0; k < nk; k++) {
        size_t i = k % count;
        bool counter = k >= count;
        v[k] = p;
        memcpy(p, c->prefix, c->prefix_len);
        if (set[i].len)
            memcpy(p + c->prefix_len, set[i].name, set[i].len);
        len[k] = c->prefix_len + set[i].len;
        if (counter) {
            memcpy(p + len[k], suffix, 6);
            len[k] += 6;
        }
        p += len[k] + 1;
    }
    keys->n = (uint32_t)count;
    keys->v = v;
    keys->len = len;
    fences->n = fence ? (uint32_t)count : 0;
    fences->v = fence ? v + count : NULL;
    fences->len = fence ? len + count : NULL;
    return mem;
}

rl_op *rl_op_new(redlock_client *c, int kind, const redlock_resource *set, size_t count,
                 bool fence, redlock_error *reterr)
{
    rl_op *op = calloc(1, sizeof(*op));
    if (!op)
        goto oom;
    op->kind = kind;
    op->c = c;
    op->nres = (uint32_t)count;
    op->keymem = build_keys(c, set, count, fence, &op->keys, &op->fences);
    op->ev = event_new(c->base, -1, 0, op_on_event, op);
    if (!op->keymem || !op->ev)
        goto oom;
    op->out.n_masters = c->n;
    op->out.quorum = c->quorum;
    op->next = c->ops;
    if (c->ops)
        c->ops->prev = op;
    c->ops = op;
    return op;
oom:
    if (op) {
        free(op->keymem);
        if (op->ev)
            event_free(op->ev);
        free(op);
    }
    rl_seterr(reterr, REDLOCK_ENOMEM, -1, "out of memory starting an operation");
    return NULL;
}

void rl_op_free(rl_op *op)
{
    rl_fanout_detach(op->f);
    rl_fanout_detach(op->cleanup);
    rl_fanout_detach(op->fencing);
    if (op->ev)
        event_free(op->ev);
    free(op->keymem);
    free(op);
}

void rl_op_arm(rl_op *op, uint32_t ms)
{
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    evtimer_add(op->ev, &tv);
}

void rl_op_disarm(rl_op *op)
{
    evtimer_del(op->ev);
}

void rl_op_fill_outcome(rl_op *op)
{
    op->out.status = op->status;
    op->out.attempts = op->attempt;
    if (op->status != 0 && op->out.validity_ms > 0)
        op->out.validity_ms = 0;
    if (op->status != 0)
        op->err.code = op->status;
}

void rl_op_complete(rl_op *op, int status)
{
    op->status = status;
    op->phase = RL_PHASE_DONE;
    if (status == 0) {
        op->err.code = 0;
        op->err.master = -1;
        op->err.msg[0] = '\0';
    }
    rl_op_fill_outcome(op);
    /* Nothing more will be counted: let go of the votes now, so that late
     * replies are dropped by their fanouts from here on. */
    rl_fanout_detach(op->f);
    op->f = NULL;
    rl_fanout_detach(op->cleanup);
    op->cleanup = NULL;
    rl_fanout_detach(op->fencing);
    op->fencing = NULL;
    /* Deliver from the loop, never from here: we may be inside the _async
     * call that started the op, or inside a hiredis callback, where a user
     * callback that frees the client would pull the context out from under
     * hiredis.
     * Decided inside the _async call itself (every master down: no I/O was
     * needed), delivery waits for the next loop iteration through a zero
     * timer. event_active would run it in the same pass, and a caller that
     * retries from its failure callback would then spin in that pass for
     * ever: no socket or timer would run, and nodes would never reconnect. */
    evtimer_del(op->ev);
    if (op->c->in_start) {
        static const struct timeval zero = { 0, 0 };
        evtimer_add(op->ev, &zero);
    } else {
        event_active(op->ev, EV_TIMEOUT, 1);
    }
}

static void op_deliver(rl_op *op)
{
    redlock_client *c = op->c;
    if (op->prev)
        op->prev->next = op->next;
    else
        c->ops = op->next;
    if (op->next)
        op->next->prev = op->prev;
    op->prev = op->next = NULL;
    rl_fanout_detach(op->f);
    op->f = NULL;
    rl_fanout_detach(op->cleanup);
    op->cleanup = NULL;
    rl_fanout_detach(op->fencing);
    op->fencing = NULL;
    /* Before the callback, which may free the client. */
    if (op->watching) {
        rl_pubsub_unwatch(c, &op->keys);
        op->watching = false;
    }

    const redlock_error *err = op->status ? &op->err : NULL;
    switch (op->kind) {
    case RL_OP_ACQUIRE: {
        redlock_lock *lock = op->status == 0 ? op->lock : NULL;
        if (op->status != 0 && op->lock) {
            redlock_lock_free(op->lock);
            op->lock = NULL;
        }
        op->acq_cb(c, op->status, lock, &op->out, err, op->arg);
        break;
    }
    case RL_OP_RELEASE:
    case RL_OP_EXTEND:
        op->op_cb(c, op->status, op->lock, &op->out, err, op->arg);
        break;
    default:
        op->st_cb(c, op->status, op->st, err, op->arg);
        break;
    }
    /* The callback may have freed the client: touch only the op. */
    rl_op_free(op);
}

void rl_op_vote_failed(rl_op *op, uint32_t idx, int err, const char *errstr)
{
    int kind = err == REDLOCK_ETIMEOUT ? REDLOCK_VOTE_TIMEOUT
             : (err == REDLOCK_ECONNECT || err == REDLOCK_EBUSY || err == REDLOCK_ESHUTDOWN)
                 ? REDLOCK_VOTE_DOWN
                 : REDLOCK_VOTE_ERROR;
    rl_slot *s = op->f ? &op->f->slots[idx] : NULL;
    rl_vote_set(&op->out.votes[idx], kind, err, errstr,
                s && s->state != RL_SLOT_IDLE ? s->sent_us : rl_now_us());
    op->n_fail++;
}

/* The vote slot for a reply to @f from master @idx, or NULL when the reply
 * is late (after the node timeout, or after the op decided) and must not be
 * counted: every operation's reply handler starts here. */
redlock_vote *rl_op_take_vote(rl_op *op, const rl_fanout *f, uint32_t idx)
{
    redlock_vote *v = &op->out.votes[idx];
    if (op->phase != RL_PHASE_VOTING || f != op->f || v->kind != REDLOCK_VOTE_PENDING)
        return NULL;
    op->n_pending--;
    return v;
}

/* Send op->f to every master in @mask. Each becomes a pending vote, or fails
 * at once (down, saturated) through @fail (default rl_op_vote_failed): a
 * master that cannot be asked costs the operation nothing. */
void rl_op_send(rl_op *op, uint32_t mask, bool priority, rl_fail_fn *fail)
{
    redlock_client *c = op->c;
    for (uint32_t i = 0; i < c->n; i++) {
        if (!(mask & (1u << i)))
            continue;
        int rc = rl_fanout_send(op->f, i, priority);
        if (rc == 0) {
            memset(&op->out.votes[i], 0, sizeof(op->out.votes[i]));
            op->out.votes[i].kind = REDLOCK_VOTE_PENDING;
            op->n_pending++;
        } else {
            (fail ? fail : rl_op_vote_failed)(op, i, rc, c->nodes[i].errstr);
        }
    }
}

/* The node timeout: every master still pending fails now. */
void rl_op_timeout_pending(rl_op *op, rl_fail_fn *fail)
{
    char d[64];
    snprintf(d, sizeof(d), "no answer within %u ms", op->c->cfg.node_timeout_ms);
    for (uint32_t i = 0; i < op->c->n; i++) {
        if (op->out.votes[i].kind == REDLOCK_VOTE_PENDING) {
            op->n_pending--;
            (fail ? fail : rl_op_vote_failed)(op, i, REDLOCK_ETIMEOUT, d);
        }
    }
}

/* ---- locks --------------------------------------------------------------- */

redlock_lock *rl_lock_new(const redlock_resource *set, size_t count, const char *token)
{
    redlock_lock *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    size_t bytes = count * (sizeof(char *) + sizeof(size_t));
    for (size_t i = 0; i < count; i++)
        bytes += set[i].len + 1;
    l->mem = malloc(bytes);
    if (!l->mem) {
        free(l);
        return NULL;
    }
    l->n = (uint32_t)count;
    l->res = (const char **)(void *)l->mem;
    l->len = (size_t *)(void *)(l->mem + count * sizeof(char *));
    char *p = l->mem + count * (sizeof(char *) + sizeof(size_t));
    for (size_t i = 0; i < count; i++) {
        memcpy(p, set[i].name, set[i].len);
        p[set[i].len] = '\0';
        l->res[i] = p;
        l->len[i] = set[i].len;
        p += set[i].len + 1;
    }
    snprintf(l->token, sizeof(l->token), "%s", token);
    return l;
}

int rl_lock_resources(const redlock_lock *lock, redlock_resource *out)
{
    for (uint32_t i = 0; i < lock->n; i++) {
        out[i].name = lock->res[i];
        out[i].len = lock->len[i];
    }
    return (int)lock->n;
}

int rl_check_set(const redlock_resource *set, size_t count, redlock_error *reterr)
{
    if (!set || count == 0 || count > REDLOCK_SET_MAX) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "a lock covers 1..%d resources (got %zu)",
                  REDLOCK_SET_MAX, set ? count : 0);
        return REDLOCK_EINVAL;
    }
    for (size_t i = 0; i < count; i++) {
        int rc = rl_check_resource(set[i].name, set[i].len, reterr);
        if (rc)
            return rc;
        for (size_t j = 0; j < i; j++) {
            if (set[j].len == set[i].len && memcmp(set[j].name, set[i].name, set[i].len) == 0) {
                rl_seterr(reterr, REDLOCK_EINVAL, -1,
                          "resource %zu repeats resource %zu: list each resource once", i + 1,
                          j + 1);
                return REDLOCK_EINVAL;
            }
        }
    }
    return 0;
}

static int check_token(const char *token, redlock_error *reterr)
{
    size_t tlen = token ? strlen(token) : 0;
    if (tlen == 0 || tlen > REDLOCK_TOKEN_MAX) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "token must be 1..%d bytes (got %zu)",
                  REDLOCK_TOKEN_MAX, tlen);
        return REDLOCK_EINVAL;
    }
    for (size_t i = 0; i < tlen; i++) {
        unsigned char ch = (unsigned char)token[i];
        if (ch <= ' ' || ch >= 127) {
            rl_seterr(reterr, REDLOCK_EINVAL, -1,
                      "token has a space or non-printable byte 0x%02x at offset %zu "
                      "(tokens are printed by redlock-cli lock)", ch, i);
            return REDLOCK_EINVAL;
        }
    }
    return 0;
}

int redlock_lock_new_set(const redlock_resource *set, size_t count, const char *token,
                         redlock_lock **ret, redlock_error *reterr)
{
    if (!ret) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "ret must not be NULL");
        return REDLOCK_EINVAL;
    }
    int rc = rl_check_set(set, count, reterr);
    if (!rc)
        rc = check_token(token, reterr);
    if (rc)
        return rc;
    redlock_lock *l = rl_lock_new(set, count, token);
    if (!l) {
        rl_seterr(reterr, REDLOCK_ENOMEM, -1, "out of memory");
        return REDLOCK_ENOMEM;
    }
    *ret = l;
    return 0;
}

int redlock_lock_new(const void *resource, size_t len, const char *token,
                     redlock_lock **ret, redlock_error *reterr)
{
    redlock_resource one = { resource, len };
    return redlock_lock_new_set(&one, 1, token, ret, reterr);
}

void redlock_lock_free(redlock_lock *lock)
{
    if (!lock)
        return;
    free(lock->mem);
    free(lock);
}

const char *redlock_lock_token(const redlock_lock *lock)
{
    return lock ? lock->token : NULL;
}

const void *redlock_lock_resource(const redlock_lock *lock, size_t *len)
{
    if (!lock) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = lock->len[0];
    return lock->res[0];
}

size_t redlock_lock_count(const redlock_lock *lock)
{
    return lock ? lock->n : 0;
}

const void *redlock_lock_resource_at(const redlock_lock *lock, size_t i, size_t *len)
{
    if (!lock || i >= lock->n) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = lock->len[i];
    return lock->res[i];
}

uint64_t redlock_lock_fence(const redlock_lock *lock)
{
    return lock ? lock->fence : 0;
}

int64_t redlock_lock_validity_ms(const redlock_lock *lock)
{
    rl_monotime until = lock ? rl_lock_valid_until(lock) : 0;
    if (until == 0)
        return 0;
    rl_monotime now = rl_now_us();
    if (now >= until)
        return -(int64_t)((now - until + 999) / 1000);
    return (int64_t)((until - now) / 1000);
}

uint32_t redlock_lock_ttl_ms(const redlock_lock *lock)
{
    return lock ? __atomic_load_n(&lock->ttl_ms, __ATOMIC_RELAXED) : 0;
}
