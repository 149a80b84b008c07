/* net.c - the criterion tests' side of tests/netns.sh (see net.h).
 *
 * Runs the script for setup and faults, and reaches each master through a
 * socket made inside its namespace (tc_socket_in_netns), so what a test
 * reads from a master never depends on the link under test nor on the
 * library under test.
 */
#include "net.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>

#include "await.h"
#include "core.h"
#include "spawn.h"

#ifndef TC_NETNS_SH
#define TC_NETNS_SH "tests/netns.sh"
#endif

#define TC_NET_MAX 16
#define TC_NET_MAX_RELAYS 32
#define TC_NET_MAX_CLIENTS 8
#define TC_NET_CMD_TIMEOUT_S 2

static struct {
    int n;       /* 0 until tc_net_up() succeeded */
    int started; /* tc_net_up() ran netns.sh up */
    char prefix[32];
    char masters[TC_NET_MAX * 24];
    char addr[TC_NET_MAX][24];
    char ns[TC_NET_MAX][48];
    tc_relay *relays[TC_NET_MAX_RELAYS];
    redlock_client *clients[TC_NET_MAX_CLIENTS];
} net;

static const char *script(void)
{
    const char *s = getenv("REDLOCK_NETNS_SH");
    return s && *s ? s : TC_NETNS_SH;
}

/* bash netns.sh ARGS...; stdout and stderr together into @out. Return:
 * the exit status, or -1 if it did not run to an exit (@out says why). */
static int netns_sh(char *out, size_t size, const char *const *args)
{
    const char *argv[12];
    int k = 0;

    argv[k++] = "bash";
    argv[k++] = script();
    for (; *args && k < 11; args++)
        argv[k++] = *args;
    argv[k] = NULL;
    return tc_spawn(argv, out, size);
}

static void netns_do(const char *cmd, int i)
{
    char ibuf[16], out[2048];
    const char *args[] = { cmd, ibuf, NULL };
    int rc;

    if (i < 0)
        args[1] = NULL;
    else
        snprintf(ibuf, sizeof(ibuf), "%d", i);
    rc = netns_sh(out, sizeof(out), args);
    if (rc != 0)
        cr_fatal("netns.sh %s %s failed (status %d): %s", cmd, i >= 0 ? ibuf : "", rc,
                 out[0] ? out : "(no output)");
}

void tc_net_require(void)
{
    char out[512];
    const char *args[] = { "probe", NULL };
    int rc = netns_sh(out, sizeof(out), args);

    if (rc == 0)
        return;
    if (rc == 4) {
        /* "network namespaces not permitted here: <why>" */
        cr_skip_test("%s", out);
    }
    cr_fatal("netns.sh probe failed (status %d): %s", rc, out[0] ? out : "(no output)");
}

void tc_net_up(int n)
{
    char nbuf[16], out[2048];
    const char *reap[] = { "reap", NULL };
    const char *up[] = { "up", nbuf, NULL };
    char *line, *save = NULL, *last = NULL;
    int rc;

    if (n < 1 || n > TC_NET_MAX)
        cr_fatal("tc_net_up: %d masters (1..%d)", n, TC_NET_MAX);
    snprintf(net.prefix, sizeof(net.prefix), "rlt%dm", (int)getpid());
    setenv("NETNS_PREFIX", net.prefix, 1);
    netns_sh(out, sizeof(out), reap); /* leftovers of runs that died: best effort */
    snprintf(nbuf, sizeof(nbuf), "%d", n);
    net.started = 1;
    rc = netns_sh(out, sizeof(out), up);
    if (rc != 0)
        cr_fatal("netns.sh up %d failed (status %d): %s", n, rc, out[0] ? out : "(no output)");
    /* The masters list is the last line (stderr may have said more before). */
    for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        last = line;
    if (!last || strlen(last) >= sizeof(net.masters))
        cr_fatal("netns.sh up %d: no masters list in its output", n);
    snprintf(net.masters, sizeof(net.masters), "%s", last);

    char tmp[sizeof(net.masters)], *tok, *tsave = NULL;
    int k = 0;
    snprintf(tmp, sizeof(tmp), "%s", net.masters);
    for (tok = strtok_r(tmp, ",", &tsave); tok && k < TC_NET_MAX;
         tok = strtok_r(NULL, ",", &tsave), k++) {
        snprintf(net.addr[k], sizeof(net.addr[k]), "%s", tok);
        snprintf(net.ns[k], sizeof(net.ns[k]), "%s%d", net.prefix, k);
    }
    if (k != n)
        cr_fatal("netns.sh up %d: masters list has %d entries: %s", n, k, net.masters);
    net.n = n;
}

void tc_net_init(void)
{
    tc_net_require();
    tc_net_up(5);
}

void tc_net_down(void)
{
    char out[2048];
    const char *down[] = { "down", NULL };

    for (int k = 0; k < TC_NET_MAX_CLIENTS; k++) {
        redlock_client_free(net.clients[k]);
        net.clients[k] = NULL;
    }
    for (int k = 0; k < TC_NET_MAX_RELAYS; k++) {
        tc_relay_stop(net.relays[k]);
        net.relays[k] = NULL;
    }
    if (!net.started)
        return;
    net.started = 0;
    net.n = 0;
    if (netns_sh(out, sizeof(out), down) != 0)
        cr_log_error("netns.sh down: %s", out);
}

const char *tc_net_masters(void)
{
    return net.masters;
}

int tc_net_n(void)
{
    return net.n;
}

static void check_index(const char *what, int i)
{
    if (i < 0 || i >= net.n)
        cr_fatal("%s: master %d out of range 0..%d", what, i, net.n - 1);
}

const char *tc_net_addr(int i)
{
    check_index("tc_net_addr", i);
    return net.addr[i];
}

const char *tc_net_ns(int i)
{
    check_index("tc_net_ns", i);
    return net.ns[i];
}

void tc_net_cut(int i)
{
    check_index("tc_net_cut", i);
    netns_do("cut", i);
}

void tc_net_cut_in(int i)
{
    check_index("tc_net_cut_in", i);
    netns_do("cut-in", i);
}

void tc_net_cut_out(int i)
{
    check_index("tc_net_cut_out", i);
    netns_do("cut-out", i);
}

void tc_net_heal(int i)
{
    if (i >= 0)
        check_index("tc_net_heal", i);
    netns_do("heal", i);
}

static int netem(const char *cmd, int i, unsigned a, unsigned b, int with_b, char *why, size_t size)
{
    char ibuf[16], abuf[16], bbuf[16], out[1024];
    const char *args[] = { cmd, ibuf, abuf, with_b ? bbuf : NULL, NULL };
    int rc;

    check_index(cmd, i);
    snprintf(ibuf, sizeof(ibuf), "%d", i);
    snprintf(abuf, sizeof(abuf), "%u", a);
    snprintf(bbuf, sizeof(bbuf), "%u", b);
    rc = netns_sh(out, sizeof(out), args);
    if (rc == 3) {
        if (why && size)
            snprintf(why, size, "%s", out);
        return 3;
    }
    if (rc != 0)
        cr_fatal("netns.sh %s %d failed (status %d): %s", cmd, i, rc, out[0] ? out : "(no output)");
    return 0;
}

int tc_net_delay(int i, unsigned ms, unsigned jitter_ms, char *why, size_t size)
{
    return netem("delay", i, ms, jitter_ms, 1, why, size);
}

int tc_net_loss(int i, unsigned pct, char *why, size_t size)
{
    return netem("loss", i, pct, 0, 0, why, size);
}

tc_relay *tc_net_relay(int i, int port, int side)
{
    char err[256];
    tc_relay *r;
    int k;

    check_index("tc_net_relay", i);
    for (k = 0; k < TC_NET_MAX_RELAYS && net.relays[k]; k++)
        ;
    if (k == TC_NET_MAX_RELAYS)
        cr_fatal("tc_net_relay: more than %d relays", TC_NET_MAX_RELAYS);
    r = side ? tc_relay_start("127.0.0.1:6379", port, net.ns[i], err, sizeof(err))
             : tc_relay_start(net.addr[i], port, NULL, err, sizeof(err));
    if (!r)
        cr_fatal("%s", err);
    net.relays[k] = r;
    return r;
}

void tc_net_config(redlock_config *cfg, const char *masters, unsigned node_timeout_ms)
{
    redlock_config_init(cfg);
    cfg->masters = masters ? masters : net.masters;
    cfg->node_timeout_ms = node_timeout_ms;
    cfg->retry_count = 0;
}

/* One ping through @c: 1 once it is as connected as it can get, i.e. every
 * master answered, or (a link slower than the node timeout never answers
 * in time) two rounds in a row in which each master at least timed out,
 * which says the ping went out on a connection. */
static int connected(redlock_client *c, int *slow_rounds, redlock_status *st)
{
    int all_sent = 1;

    redlock_ping(c, st, NULL);
    if (redlock_status_answered(st) == redlock_client_masters(c))
        return 1;
    for (uint32_t i = 0; i < redlock_status_masters(st); i++)
        all_sent &= redlock_status_master(st, i)->err == 0 ||
                    redlock_status_master(st, i)->err == REDLOCK_ETIMEOUT;
    *slow_rounds = all_sent ? *slow_rounds + 1 : 0;
    return *slow_rounds == 2;
}

redlock_client *tc_net_client(const redlock_config *cfg)
{
    redlock_client *c = NULL;
    TC_STATUS(st);
    redlock_error e;
    int rc, k, slow_rounds = 0;

    for (k = 0; k < TC_NET_MAX_CLIENTS && net.clients[k]; k++)
        ;
    if (k == TC_NET_MAX_CLIENTS)
        cr_fatal("tc_net_client: more than %d clients", TC_NET_MAX_CLIENTS);
    rc = redlock_client_new(cfg, NULL, &c, &e);
    if (rc != 0)
        cr_fatal("redlock_client_new(%s): %s: %s", cfg->masters, redlock_err_name(rc), e.msg);
    net.clients[k] = c;
    /* Down masters fail a ping at once and come back on the library's
     * reconnect timer, which nothing public lets us await (yet). */
    if (!TC_AWAIT(connected(c, &slow_rounds, st), 10000))
        cr_fatal("tc_net_client: only %u of %zu masters answered within 10 s",
                 redlock_status_answered(st), redlock_client_masters(c));
    return c;
}

/* "a,b,..." of the relays' addresses into @buf. */
static const char *relay_list(tc_relay *const *relays, char *buf, size_t size)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < net.n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? "," : "",
                                 tc_relay_addr(relays[i]));
    return buf;
}

redlock_client *tc_net_side_client(unsigned node_timeout_ms)
{
    static char masters[TC_NET_MAX * 24];
    tc_relay *relays[TC_NET_MAX];
    redlock_config cfg;

    for (int i = 0; i < net.n; i++)
        relays[i] = tc_net_relay(i, TC_NET_SIDE_PORT + i, 1);
    tc_net_config(&cfg, relay_list(relays, masters, sizeof(masters)), node_timeout_ms);
    return tc_net_client(&cfg);
}

const char *tc_net_delayed_masters(const unsigned *ms, unsigned jitter_ms)
{
    static char masters[TC_NET_MAX * 24];
    tc_relay *relays[TC_NET_MAX];
    char why[256] = "";
    int netem = 1;

    for (int i = 0; i < net.n && netem; i++)
        netem = tc_net_delay(i, ms[i], jitter_ms, why, sizeof(why)) == 0;
    if (netem) {
        cr_log_info("delay: tc netem on the veths");
        return net.masters;
    }
    tc_net_heal(-1);
    cr_log_info("delay: user-space relay (%s)", why);
    for (int i = 0; i < net.n; i++) {
        relays[i] = tc_net_relay(i, TC_NET_DELAY_PORT + i, 0);
        tc_relay_set_delay(relays[i], ms[i], ms[i], jitter_ms);
    }
    return relay_list(relays, masters, sizeof(masters));
}

void tc_net_client_free(redlock_client *c)
{
    for (int k = 0; k < TC_NET_MAX_CLIENTS; k++) {
        if (net.clients[k] == c)
            net.clients[k] = NULL;
    }
    redlock_client_free(c);
}

/* ---- the side door ------------------------------------------------------- */

/* Side-door trouble is logged with cr_log_info(), not cr_log_warn(): in
 * criterion 2.4.1 one warning makes the run exit 1, and meson then fails
 * the executable however its tests went. */
static redisContext *side_connect(int i)
{
    struct sockaddr_in sin;
    struct timeval tv = { TC_NET_CMD_TIMEOUT_S, 0 };
    redisContext *ctx;
    int fd;

    check_index("side door", i);
    fd = tc_socket_in_netns(net.ns[i]);
    if (fd < 0) {
        cr_log_info("side door to master %d: socket in %s: %s", i, net.ns[i], strerror(errno));
        return NULL;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons(6379);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
        cr_log_info("side door to master %d: connect: %s", i, strerror(errno));
        close(fd);
        return NULL;
    }
    ctx = redisConnectFd(fd); /* owns fd from here on */
    if (!ctx || ctx->err) {
        cr_log_info("side door to master %d: %s", i, ctx ? ctx->errstr : "out of memory");
        redisFree(ctx);
        return NULL;
    }
    redisSetTimeout(ctx, tv);
    return ctx;
}

static redisReply *side_vcmd(int i, const char *fmt, va_list ap)
{
    redisContext *ctx = side_connect(i);
    redisReply *r;

    if (!ctx)
        return NULL;
    r = redisvCommand(ctx, fmt, ap);
    if (!r)
        cr_log_info("side door to master %d: %s", i, ctx->errstr);
    redisFree(ctx);
    return r;
}

redisReply *tc_net_cmd(int i, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = side_vcmd(i, fmt, ap);
    va_end(ap);
    return r;
}

int tc_net_get(int i, const void *key, size_t len, char *val, size_t size)
{
    redisReply *r = tc_net_cmd(i, "GET %b", key, len);
    int ret = -1;

    if (!r)
        cr_fatal("master %d (%s) did not answer GET through the side door", i, net.ns[i]);
    if (r->type == REDIS_REPLY_NIL) {
        ret = 0;
        if (val && size)
            val[0] = '\0';
    } else if (r->type == REDIS_REPLY_STRING) {
        ret = 1;
        if (val && size)
            snprintf(val, size, "%.*s", (int)r->len, r->str);
    } else {
        int type = r->type;
        freeReplyObject(r);
        cr_fatal("master %d: GET answered reply type %d", i, type);
    }
    freeReplyObject(r);
    return ret;
}

int tc_net_key_count(const void *key, size_t len)
{
    int count = 0;
    for (int i = 0; i < net.n; i++)
        count += tc_net_get(i, key, len, NULL, 0);
    return count;
}

int tc_net_await_key_gone(const void *key, size_t len, int timeout_ms)
{
    return TC_AWAIT(tc_net_key_count(key, len) == 0, timeout_ms);
}

int tc_net_token_count(const void *key, size_t len, const char *token)
{
    char val[256];
    int count = 0;
    for (int i = 0; i < net.n; i++) {
        if (tc_net_get(i, key, len, val, sizeof(val)) && tc_value_is_token(val, token))
            count++;
    }
    return count;
}

long long tc_net_cmdstat(int i, const char *cmd)
{
    redisReply *r = tc_net_cmd(i, "INFO commandstats");
    char needle[64];
    const char *p;
    long long calls = 0;

    if (!r || r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        cr_fatal("master %d: INFO commandstats failed", i);
    }
    snprintf(needle, sizeof(needle), "cmdstat_%s:calls=", cmd);
    p = strstr(r->str, needle);
    if (p)
        calls = strtoll(p + strlen(needle), NULL, 10);
    freeReplyObject(r);
    return calls;
}
