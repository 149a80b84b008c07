/* core.c - shared plumbing of the redlock behaviour tests (see core.h).
 *
 * Everything here talks to the library only through <redlock.h> and to the
 * masters only through cluster.h's tc_cmd(), so a test's claims about what
 * the masters hold never depend on the code under test.
 */
#include "core.h"
#include "cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

/* Fail the running test: cr_fatal() inside a criterion test; in a plain
 * program (test-threads under ThreadSanitizer, where criterion's runner
 * cannot start) print and abort, as cluster.c's helpers do. */
__attribute__((noreturn, format(printf, 1, 2)))
static void core_fail(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (criterion_current_test)
        cr_fatal("%s", msg);
    fprintf(stderr, "core: %s\n", msg);
    abort();
}

/* ------------------------------------------------------------------------ */
/* Clients                                                                  */
/* ------------------------------------------------------------------------ */

void core_config(redlock_config *cfg)
{
    redlock_config_init(cfg);
    cfg->masters = tc_masters();
    cfg->password = tc_password();
    /* 50 ms is the library's default and plenty on an idle machine; the
     * sanitizer builds on two busy cores are not idle. Tests about timing
     * set their own. */
    cfg->node_timeout_ms = 500;
}

int core_wait_up(redlock_client *c, int want, int timeout_ms)
{
    uint64_t deadline = core_now_us() + (uint64_t)timeout_ms * 1000;
    int answered = 0;

    for (;;) {
        redlock_status st;
        redlock_error e;

        memset(&st, 0, sizeof(st));
        redlock_ping(c, &st, &e);
        answered = (int)st.n_answered;
        if (answered >= want || core_now_us() >= deadline)
            return answered;
        /* Masters that are down fail a ping at once and come back on the
         * library's reconnect backoff timer, which no public call lets us
         * wait for: pace the rounds instead of spinning. */
        struct timespec ts = { 0, 5 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

redlock_client *core_client(const redlock_config *cfg, int want_up)
{
    redlock_config def;
    redlock_client *c = NULL;
    redlock_error e;
    int rc;

    if (!cfg) {
        core_config(&def);
        cfg = &def;
    }
    rc = redlock_client_new(cfg, NULL, &c, &e);
    if (rc != 0)
        core_fail("redlock_client_new: %s: %s", redlock_err_name(rc), e.msg);
    if (want_up < 0)
        want_up = (int)redlock_client_masters(c);
    if (want_up > 0) {
        int up = core_wait_up(c, want_up, 10000);

        if (up < want_up)
            core_fail("only %d of the %d masters wanted answer a ping after 10 s", up, want_up);
    }
    return c;
}

redlock_client *core_client_async(const redlock_config *cfg, struct event_base *base)
{
    redlock_config def;
    redlock_client *c = NULL;
    redlock_error e;
    int rc;

    if (!cfg) {
        core_config(&def);
        cfg = &def;
    }
    rc = redlock_client_new(cfg, base, &c, &e);
    if (rc != 0)
        core_fail("redlock_client_new (async): %s: %s", redlock_err_name(rc), e.msg);
    return c;
}

/* ------------------------------------------------------------------------ */
/* What masters hold                                                        */
/* ------------------------------------------------------------------------ */

int core_get(int i, const void *key, size_t len, char *val, size_t size, long long *pttl)
{
    redisReply *r = tc_cmd(i, "GET %b", key, len);
    int held;

    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_STRING) {
        held = 1;
        if (val && size) {
            size_t n = r->len < size - 1 ? r->len : size - 1;

            memcpy(val, r->str, n);
            val[n] = '\0';
        }
    } else if (r->type == REDIS_REPLY_NIL) {
        held = 0;
        if (val && size)
            val[0] = '\0';
    } else {
        held = -1;
    }
    freeReplyObject(r);
    if (pttl) {
        r = tc_cmd(i, "PTTL %b", key, len);
        *pttl = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -3;
        freeReplyObject(r);
    }
    return held;
}

int core_count_token(const void *key, size_t len, const char *token, long long max_pttl_ms)
{
    int count = 0;

    for (int i = 0; i < tc_n(); i++) {
        char val[256];
        long long pttl = 0;

        if (core_get(i, key, len, val, sizeof(val), &pttl) == 1 &&
            strcmp(val, token) == 0 && pttl > 0 && pttl <= max_pttl_ms)
            count++;
    }
    return count;
}

void core_plant(int i, const void *key, size_t len, const char *value, unsigned ttl_ms)
{
    redisReply *r = tc_cmd(i, "SET %b %s PX %u", key, len, value, ttl_ms);

    if (!r || r->type != REDIS_REPLY_STATUS)
        core_fail("core_plant: SET on master %d failed: %s", i,
                 r && r->str ? r->str : "no answer");
    freeReplyObject(r);
}

void core_del_all(const void *key, size_t len)
{
    for (int i = 0; i < tc_n(); i++)
        freeReplyObject(tc_cmd(i, "DEL %b", key, len));
}

void core_barrier_on(redlock_client *c, unsigned mask)
{
    static const char key[] = "core:barrier";
    redlock_status st;
    redlock_error e;
    int rc;

    memset(&st, 0, sizeof(st));
    rc = redlock_status_get(c, key, sizeof(key) - 1, &st, &e);
    for (uint32_t i = 0; i < REDLOCK_MAX_MASTERS; i++) {
        if ((mask & (1u << i)) && (i >= st.n_masters || st.masters[i].err != 0))
            core_fail("core_barrier: master %u did not answer (%s: %s)", i,
                      i < st.n_masters ? redlock_err_name(st.masters[i].err) : "no such master",
                      i < st.n_masters ? st.masters[i].detail : (rc ? e.msg : ""));
    }
}

void core_barrier(redlock_client *c)
{
    core_barrier_on(c, (1u << redlock_client_masters(c)) - 1);
}

long long core_info_num(int i, const char *section, const char *field)
{
    redisReply *r = tc_cmd(i, "INFO %s", section);
    long long v = -1;

    if (r && r->type == REDIS_REPLY_STRING) {
        size_t flen = strlen(field);

        for (const char *p = r->str; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
            if (strncmp(p, field, flen) == 0 && p[flen] == ':') {
                const char *q = p + flen + 1;

                if (strncmp(q, "calls=", 6) == 0)
                    q += 6;
                v = strtoll(q, NULL, 10);
                break;
            }
        }
    }
    freeReplyObject(r);
    return v;
}

/* ------------------------------------------------------------------------ */
/* Time and messages                                                        */
/* ------------------------------------------------------------------------ */

uint64_t core_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void core_expect_msg(const redlock_error *e, const char *what)
{
    size_t len = strnlen(e->msg, sizeof(e->msg));

    cr_expect(lt(sz, len, sizeof(e->msg)), "%s: message is not NUL-terminated", what);
    cr_expect(gt(sz, len, 0), "%s: message is empty", what);
    cr_expect(zero(ptr, memchr(e->msg, '\n', len)), "%s: message has a newline: %s", what,
              e->msg);
    cr_expect(zero(ptr, memchr(e->msg, '\r', len)), "%s: message has a CR: %s", what, e->msg);
}

int core_dead_port(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t salen = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        core_fail("core_dead_port: socket: %s", strerror(errno));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &salen) < 0)
        core_fail("core_dead_port: bind: %s", strerror(errno));
    close(fd);    /* never listened on: connections to it are refused */
    return ntohs(sa.sin_port);
}

int core_is_hex32(const char *token)
{
    if (!token || strlen(token) != 32)
        return 0;
    for (const char *p = token; *p; p++) {
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')))
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* A slow link                                                              */
/* ------------------------------------------------------------------------ */

#define PROXY_MAX_CONNS 8

/* Bytes of one command, waiting for their time to go upstream. */
struct held {
    struct held *next;
    uint64_t due_us;
    size_t len;
    char data[];
};

struct proxy_conn {
    int down, up;                 /* client side, master side; -1 when free */
    redisReader *reader;          /* splits what the client sends into commands */
    struct held *head, *tail;     /* commands not yet passed on, in order */
};

struct core_proxy {
    int listen_fd;
    int wake[2];
    int upstream_port;
    char addr[32];
    pthread_t thread;
    pthread_mutex_t mu;           /* guards pass, delay_ms, holding */
    int holding;
    unsigned pass, delay_ms;
    struct proxy_conn conns[PROXY_MAX_CONNS];   /* the thread's own */
};

static void proxy_close(struct proxy_conn *c)
{
    if (c->down >= 0)
        close(c->down);
    if (c->up >= 0)
        close(c->up);
    redisReaderFree(c->reader);
    while (c->head) {
        struct held *h = c->head;

        c->head = h->next;
        free(h);
    }
    memset(c, 0, sizeof(*c));
    c->down = c->up = -1;
}

/* Re-encode one parsed command (an array of bulk strings) as RESP. */
static struct held *proxy_encode(const redisReply *cmd)
{
    size_t len = 32;
    struct held *h;
    char *p;

    for (size_t k = 0; k < cmd->elements; k++)
        len += cmd->element[k]->len + 32;
    h = calloc(1, sizeof(*h) + len);
    if (!h)
        return NULL;
    p = h->data;
    p += sprintf(p, "*%zu\r\n", cmd->elements);
    for (size_t k = 0; k < cmd->elements; k++) {
        const redisReply *e = cmd->element[k];

        p += sprintf(p, "$%zu\r\n", e->len);
        memcpy(p, e->str, e->len);
        p += e->len;
        memcpy(p, "\r\n", 2);
        p += 2;
    }
    h->len = (size_t)(p - h->data);
    return h;
}

/* Pass on every held command whose time has come. */
static void proxy_flush(struct proxy_conn *c)
{
    uint64_t now = core_now_us();

    while (c->head && c->head->due_us <= now) {
        struct held *h = c->head;

        c->head = h->next;
        if (!c->head)
            c->tail = NULL;
        if (tc_send_all(c->up, h->data, h->len) < 0) {
            free(h);
            proxy_close(c);
            return;
        }
        free(h);
    }
}

static void proxy_from_client(core_proxy *p, struct proxy_conn *c)
{
    char buf[16384];
    ssize_t r = recv(c->down, buf, sizeof(buf), 0);

    if (r < 0 && errno == EINTR)
        return;
    if (r <= 0 || redisReaderFeed(c->reader, buf, (size_t)r) != REDIS_OK) {
        proxy_close(c);
        return;
    }
    for (;;) {
        void *cmd = NULL;
        struct held *h;
        uint64_t due = core_now_us();

        if (redisReaderGetReply(c->reader, &cmd) != REDIS_OK) {
            proxy_close(c);
            return;
        }
        if (!cmd)
            break;
        h = proxy_encode(cmd);
        freeReplyObject(cmd);
        if (!h) {
            proxy_close(c);
            return;
        }
        pthread_mutex_lock(&p->mu);
        if (p->holding) {
            if (p->pass > 0)
                p->pass--;
            else
                due += (uint64_t)p->delay_ms * 1000;
        }
        pthread_mutex_unlock(&p->mu);
        /* Never overtake a held command: order is what a connection means. */
        if (c->tail && c->tail->due_us > due)
            due = c->tail->due_us;
        h->due_us = due;
        if (c->tail)
            c->tail->next = h;
        else
            c->head = h;
        c->tail = h;
    }
    proxy_flush(c);
}

static void proxy_from_master(struct proxy_conn *c)
{
    char buf[16384];
    ssize_t r = recv(c->up, buf, sizeof(buf), 0);

    if (r < 0 && errno == EINTR)
        return;
    if (r <= 0 || tc_send_all(c->down, buf, (size_t)r) < 0)
        proxy_close(c);
}

static void proxy_accept(core_proxy *p)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    int down = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    int up;

    if (down < 0)
        return;
    up = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)p->upstream_port);
    if (up < 0 || connect(up, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        if (up >= 0)
            close(up);
        close(down);    /* the master is down: so is its proxy */
        return;
    }
    for (int k = 0; k < PROXY_MAX_CONNS; k++) {
        struct proxy_conn *c = &p->conns[k];

        if (c->down < 0) {
            c->reader = redisReaderCreate();
            if (!c->reader)
                break;
            c->down = down;
            c->up = up;
            return;
        }
    }
    close(up);
    close(down);
}

static void *proxy_main(void *arg)
{
    core_proxy *p = arg;
    struct pollfd pfd[2 + 2 * PROXY_MAX_CONNS];
    int slot[2 * PROXY_MAX_CONNS];

    for (;;) {
        int n = 0, m = 0, timeout = -1;
        uint64_t now = core_now_us();

        pfd[n++] = (struct pollfd){ .fd = p->wake[0], .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = p->listen_fd, .events = POLLIN };
        for (int k = 0; k < PROXY_MAX_CONNS; k++) {
            struct proxy_conn *c = &p->conns[k];

            if (c->down < 0)
                continue;
            slot[m++] = k;
            pfd[n++] = (struct pollfd){ .fd = c->down, .events = POLLIN };
            slot[m++] = k;
            pfd[n++] = (struct pollfd){ .fd = c->up, .events = POLLIN };
            if (c->head) {
                int ms = c->head->due_us > now ? (int)((c->head->due_us - now + 999) / 1000) : 0;

                if (timeout < 0 || ms < timeout)
                    timeout = ms;
            }
        }
        if (poll(pfd, (nfds_t)n, timeout) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pfd[0].revents)
            break;
        for (int j = 0; j < m; j++) {
            struct proxy_conn *c = &p->conns[slot[j]];

            if (!pfd[2 + j].revents || c->down < 0)
                continue;
            if (j % 2 == 0)
                proxy_from_client(p, c);
            else
                proxy_from_master(c);
        }
        for (int k = 0; k < PROXY_MAX_CONNS; k++)
            if (p->conns[k].down >= 0)
                proxy_flush(&p->conns[k]);
        if (pfd[1].revents & POLLIN)
            proxy_accept(p);
    }
    return NULL;
}

core_proxy *core_proxy_start(int i)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t salen = sizeof(sa);
    const int one = 1;
    core_proxy *p = calloc(1, sizeof(*p));

    if (!p)
        core_fail("core_proxy_start: out of memory");
    p->upstream_port = tc_port(i);
    for (int k = 0; k < PROXY_MAX_CONNS; k++)
        p->conns[k].down = p->conns[k].up = -1;
    pthread_mutex_init(&p->mu, NULL);
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (p->listen_fd < 0)
        core_fail("core_proxy_start: socket: %s", strerror(errno));
    setsockopt(p->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(p->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(p->listen_fd, 16) < 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&sa, &salen) < 0)
        core_fail("core_proxy_start: bind/listen: %s", strerror(errno));
    snprintf(p->addr, sizeof(p->addr), "127.0.0.1:%d", ntohs(sa.sin_port));
    if (pipe2(p->wake, O_CLOEXEC) < 0)
        core_fail("core_proxy_start: pipe: %s", strerror(errno));
    if (pthread_create(&p->thread, NULL, proxy_main, p) != 0)
        core_fail("core_proxy_start: pthread_create failed");
    return p;
}

const char *core_proxy_addr(const core_proxy *p)
{
    return p->addr;
}

void core_proxy_hold(core_proxy *p, unsigned pass, unsigned delay_ms)
{
    pthread_mutex_lock(&p->mu);
    p->holding = 1;
    p->pass = pass;
    p->delay_ms = delay_ms;
    pthread_mutex_unlock(&p->mu);
}

void core_proxy_stop(core_proxy *p)
{
    if (!p)
        return;
    while (write(p->wake[1], "x", 1) < 0 && errno == EINTR)
        ;
    pthread_join(p->thread, NULL);
    for (int k = 0; k < PROXY_MAX_CONNS; k++)
        if (p->conns[k].down >= 0)
            proxy_close(&p->conns[k]);
    close(p->listen_fd);
    close(p->wake[0]);
    close(p->wake[1]);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
