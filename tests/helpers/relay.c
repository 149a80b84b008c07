/* relay.c - a delaying TCP relay on libevent (see relay.h).
 *
 * tc netem is the right tool for delay, but kernels without sch_netem (ours)
 * cannot have it. A relay in user space gives the same thing to a client
 * that speaks TCP: every read is stamped with the time it may go on, and a
 * per-direction queue lets it go no earlier, and never before the chunk
 * ahead of it. The one difference from netem that matters here: the relay
 * delays bytes, not packets, so it cannot lose them (no loss fallback).
 */
#include "relay.h"

#include "await.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

struct relay_conn;

/* Bytes read at one moment, and when they may go on. */
struct relay_chunk {
    struct relay_chunk *next;
    uint64_t due_us;       /* monotonic */
    struct evbuffer *data; /* NULL: end of stream */
};

/* One direction of one connection. */
struct relay_half {
    struct relay_conn *conn;
    struct bufferevent *to; /* where the held bytes go */
    struct relay_chunk *head, *tail;
    uint64_t last_due_us; /* due time of the newest chunk: no overtaking */
    struct event *timer;
    int up; /* 1: client -> target */
};

struct relay_conn {
    tc_relay *r;
    struct bufferevent *client, *target;
    struct relay_half up, down;
    int closing; /* end of stream delivered; free once flushed */
    struct relay_conn *prev, *next;
};

struct tc_relay {
    struct event_base *base;
    struct evconnlistener *listener;
    struct event *wake_ev;
    int wake[2]; /* 'c': cut changed, 'q': quit */
    pthread_t thread;
    struct sockaddr_in target;
    char netns[NAME_MAX + 1]; /* "" for our own namespace */
    int port;
    char addr[32];
    _Atomic unsigned up_ms, down_ms, jitter_ms;
    _Atomic int cut;
    _Atomic unsigned connections;
    _Atomic unsigned held;    /* chunks queued, not passed on yet (both directions) */
    unsigned seed;            /* rand_r state; relay thread only */
    struct relay_conn *conns; /* relay thread only (and stop, after join) */
};

static void relay_seterr(char *err, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void relay_seterr(char *err, size_t size, const char *fmt, ...)
{
    va_list ap;
    if (!err || !size)
        return;
    va_start(ap, fmt);
    vsnprintf(err, size, fmt, ap);
    va_end(ap);
}

int tc_socket_in_netns(const char *netns)
{
    char path[PATH_MAX];
    int self, target, fd, saved;

    if (!netns || !netns[0] || strchr(netns, '/') || !strcmp(netns, ".") || !strcmp(netns, "..")) {
        errno = EINVAL;
        return -1;
    }
    snprintf(path, sizeof(path), "/run/netns/%s", netns);
    self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (self < 0)
        return -1;
    target = open(path, O_RDONLY | O_CLOEXEC);
    if (target < 0) {
        saved = errno;
        close(self);
        errno = saved;
        return -1;
    }
    if (setns(target, CLONE_NEWNET) < 0) {
        saved = errno;
        close(target);
        close(self);
        errno = saved;
        return -1;
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    saved = errno;
    /* A thread left in the wrong namespace would make every later socket
     * of it there: not something to carry on from. */
    if (setns(self, CLONE_NEWNET) < 0)
        abort();
    close(target);
    close(self);
    errno = saved;
    return fd;
}

/* ---- connections ------------------------------------------------------------ */

static void half_clear(struct relay_half *h)
{
    struct relay_chunk *c = h->head;
    while (c) {
        struct relay_chunk *next = c->next;
        atomic_fetch_sub(&h->conn->r->held, 1);
        if (c->data)
            evbuffer_free(c->data);
        free(c);
        c = next;
    }
    h->head = h->tail = NULL;
    if (h->timer) {
        event_free(h->timer);
        h->timer = NULL;
    }
}

static void conn_free(struct relay_conn *conn)
{
    tc_relay *r = conn->r;
    if (conn->prev)
        conn->prev->next = conn->next;
    else
        r->conns = conn->next;
    if (conn->next)
        conn->next->prev = conn->prev;
    half_clear(&conn->up);
    half_clear(&conn->down);
    if (conn->client)
        bufferevent_free(conn->client);
    if (conn->target)
        bufferevent_free(conn->target);
    free(conn);
}

static void conn_on_flushed(struct bufferevent *bev, void *arg)
{
    (void)bev;
    conn_free(arg);
}

static void conn_on_flushed_event(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    conn_on_flushed(bev, arg); /* could not flush (reset): close all the same */
}

/* End of stream reached @h->to: stop reading, let what was written to it
 * drain, then close both sides. */
static int conn_close_after(struct relay_half *h)
{
    struct relay_conn *conn = h->conn;
    struct bufferevent *to = h->to;

    conn->closing = 1;
    bufferevent_disable(conn->client, EV_READ);
    bufferevent_disable(conn->target, EV_READ);
    if (evbuffer_get_length(bufferevent_get_output(to)) == 0) {
        conn_free(conn);
        return -1;
    }
    bufferevent_setcb(to, NULL, conn_on_flushed, conn_on_flushed_event, conn);
    return 0;
}

/* Pass on every chunk that is due, in order; arm the timer for the next.
 * Return: -1 if the connection was closed and freed, else 0. */
static int half_deliver(struct relay_half *h)
{
    tc_relay *r = h->conn->r;
    uint64_t now;

    if (atomic_load(&r->cut) || h->conn->closing)
        return 0; /* lifting the cut calls us again */
    now = tc_now_us();
    while (h->head && h->head->due_us <= now) {
        struct relay_chunk *c = h->head;
        h->head = c->next;
        if (!h->head)
            h->tail = NULL;
        atomic_fetch_sub(&r->held, 1);
        if (!c->data) {
            free(c);
            return conn_close_after(h); /* may free h with its conn */
        }
        bufferevent_write_buffer(h->to, c->data);
        evbuffer_free(c->data);
        free(c);
    }
    if (h->head) {
        uint64_t wait = h->head->due_us - now;
        struct timeval tv = { (time_t)(wait / 1000000u), (suseconds_t)(wait % 1000000u) };
        evtimer_add(h->timer, &tv);
    }
    return 0;
}

static void half_on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)half_deliver(arg);
}

/* Queue what @src has to give (all of it, or end of stream if @data is
 * NULL) with its due time. */
static int half_push(struct relay_half *h, struct evbuffer *data)
{
    tc_relay *r = h->conn->r;
    struct relay_chunk *c = calloc(1, sizeof(*c));
    unsigned delay = atomic_load(h->up ? &r->up_ms : &r->down_ms);
    unsigned jitter = atomic_load(&r->jitter_ms);
    uint64_t due;

    if (!c)
        return -1;
    if (data) {
        c->data = evbuffer_new();
        if (!c->data || evbuffer_add_buffer(c->data, data) < 0) {
            if (c->data)
                evbuffer_free(c->data);
            free(c);
            return -1;
        }
    }
    /* delay +/- jitter, uniform, never below zero: netem's "delay D J". */
    int64_t us = (int64_t)delay * 1000;
    if (jitter)
        us += (int64_t)(rand_r(&r->seed) % (2u * jitter * 1000u + 1u)) - (int64_t)jitter * 1000;
    due = tc_now_us() + (uint64_t)(us > 0 ? us : 0);
    if (due < h->last_due_us)
        due = h->last_due_us; /* bytes of one stream never overtake */
    h->last_due_us = due;
    c->due_us = due;
    if (h->tail)
        h->tail->next = c;
    else
        h->head = c;
    h->tail = c;
    atomic_fetch_add(&r->held, 1);
    if (h->head == c)
        (void)half_deliver(h); /* otherwise the timer of the chunk ahead is armed */
    return 0;
}

static struct relay_half *half_from(struct relay_conn *conn, struct bufferevent *src)
{
    return src == conn->client ? &conn->up : &conn->down;
}

static void conn_on_read(struct bufferevent *bev, void *arg)
{
    struct relay_conn *conn = arg;
    if (half_push(half_from(conn, bev), bufferevent_get_input(bev)) < 0) {
        /* Out of memory in a test helper: drop the connection. */
        conn_free(conn);
    }
}

static void conn_on_event(struct bufferevent *bev, short what, void *arg)
{
    struct relay_conn *conn = arg;
    if (what & BEV_EVENT_CONNECTED)
        return;
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        return;
    if (conn->closing) {
        conn_free(conn);
        return;
    }
    /* The peer went away: the other side hears of it after the same delay
     * as the bytes before it. */
    bufferevent_disable(bev, EV_READ);
    if (half_push(half_from(conn, bev), NULL) < 0)
        conn_free(conn);
}

static void set_nodelay(evutil_socket_t fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void relay_on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
                            int salen, void *arg)
{
    tc_relay *r = arg;
    struct relay_conn *conn;
    evutil_socket_t up = -1;

    (void)lis;
    (void)sa;
    (void)salen;
    atomic_fetch_add(&r->connections, 1);
    set_nodelay(fd);
    conn = calloc(1, sizeof(*conn));
    if (!conn)
        goto fail;
    conn->r = r;
    conn->client = bufferevent_socket_new(r->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!conn->client)
        goto fail;
    fd = -1; /* the bufferevent owns it now */
    up = r->netns[0] ? tc_socket_in_netns(r->netns)
                     : socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (up < 0 || evutil_make_socket_nonblocking(up) < 0)
        goto fail;
    set_nodelay(up);
    conn->target = bufferevent_socket_new(r->base, up, BEV_OPT_CLOSE_ON_FREE);
    if (!conn->target)
        goto fail;
    up = -1;
    conn->up = (struct relay_half){ .conn = conn, .to = conn->target, .up = 1 };
    conn->down = (struct relay_half){ .conn = conn, .to = conn->client, .up = 0 };
    conn->up.timer = evtimer_new(r->base, half_on_timer, &conn->up);
    conn->down.timer = evtimer_new(r->base, half_on_timer, &conn->down);
    if (!conn->up.timer || !conn->down.timer)
        goto fail;
    conn->next = r->conns;
    if (r->conns)
        r->conns->prev = conn;
    r->conns = conn;
    bufferevent_setcb(conn->client, conn_on_read, NULL, conn_on_event, conn);
    bufferevent_setcb(conn->target, conn_on_read, NULL, conn_on_event, conn);
    if (bufferevent_socket_connect(conn->target, (struct sockaddr *)&r->target, sizeof(r->target)) <
        0) {
        conn_free(conn);
        return;
    }
    bufferevent_enable(conn->client, EV_READ);
    bufferevent_enable(conn->target, EV_READ);
    return;

fail:
    if (fd >= 0)
        evutil_closesocket(fd);
    if (up >= 0)
        evutil_closesocket(up);
    if (conn) {
        half_clear(&conn->up);
        half_clear(&conn->down);
        if (conn->client)
            bufferevent_free(conn->client);
        if (conn->target)
            bufferevent_free(conn->target);
        free(conn);
    }
}

/* ---- the thread --------------------------------------------------------------- */

static void relay_on_wake(evutil_socket_t fd, short what, void *arg)
{
    tc_relay *r = arg;
    char buf[64];
    ssize_t n;

    (void)what;
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == 'q') {
                event_base_loopbreak(r->base);
                return;
            }
        }
        /* The cut was lifted: what is due goes now. */
        for (struct relay_conn *c = r->conns, *next; c; c = next) {
            next = c->next;
            if (half_deliver(&c->up) == 0)
                (void)half_deliver(&c->down);
        }
    }
}

static void *relay_main(void *arg)
{
    tc_relay *r = arg;
    event_base_dispatch(r->base);
    return NULL;
}

static void relay_wake(tc_relay *r, char what)
{
    ssize_t n;
    do
        n = write(r->wake[1], &what, 1);
    while (n < 0 && errno == EINTR);
}

static void relay_free(tc_relay *r)
{
    while (r->conns)
        conn_free(r->conns);
    if (r->listener)
        evconnlistener_free(r->listener);
    if (r->wake_ev)
        event_free(r->wake_ev);
    if (r->base)
        event_base_free(r->base);
    if (r->wake[0] >= 0)
        close(r->wake[0]);
    if (r->wake[1] >= 0)
        close(r->wake[1]);
    free(r);
}

tc_relay *tc_relay_start(const char *target, int listen_port, const char *netns, char *err,
                         size_t size)
{
    tc_relay *r;
    struct event_config *ecfg = NULL;
    struct sockaddr_in sin;
    socklen_t slen = sizeof(sin);
    char host[64];
    const char *colon;
    char *end;
    long port;

    colon = target ? strrchr(target, ':') : NULL;
    if (!colon || (size_t)(colon - target) >= sizeof(host)) {
        relay_seterr(err, size, "relay: bad target '%s' (want a.b.c.d:port)",
                     target ? target : "(null)");
        return NULL;
    }
    memcpy(host, target, (size_t)(colon - target));
    host[colon - target] = '\0';
    errno = 0;
    port = strtol(colon + 1, &end, 10);
    if (errno || *end || port < 1 || port > 65535 || listen_port < 0 || listen_port > 65535) {
        relay_seterr(err, size, "relay: bad port in '%s' or listen port %d", target, listen_port);
        return NULL;
    }
    if (netns && strlen(netns) >= NAME_MAX) {
        relay_seterr(err, size, "relay: namespace name too long");
        return NULL;
    }

    r = calloc(1, sizeof(*r));
    if (!r) {
        relay_seterr(err, size, "relay: out of memory");
        return NULL;
    }
    r->wake[0] = r->wake[1] = -1;
    r->target.sin_family = AF_INET;
    r->target.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &r->target.sin_addr) != 1) {
        relay_seterr(err, size, "relay: '%s' is not a numeric IPv4 address", host);
        goto fail;
    }
    if (netns)
        snprintf(r->netns, sizeof(r->netns), "%s", netns);
    r->seed = (unsigned)tc_now_us() ^ (unsigned)getpid();

    /* Timers on the precise monotonic clock (timerfd under epoll): the
     * coarse one would add up to a jiffy (4 ms) to every delay. */
    ecfg = event_config_new();
    if (!ecfg || event_config_set_flag(ecfg, EVENT_BASE_FLAG_PRECISE_TIMER) < 0) {
        relay_seterr(err, size, "relay: event_config: out of memory");
        goto fail;
    }
    r->base = event_base_new_with_config(ecfg);
    event_config_free(ecfg);
    ecfg = NULL;
    if (!r->base) {
        relay_seterr(err, size, "relay: event_base_new failed");
        goto fail;
    }
    if (pipe2(r->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        relay_seterr(err, size, "relay: pipe: %s", strerror(errno));
        goto fail;
    }
    r->wake_ev = event_new(r->base, r->wake[0], EV_READ | EV_PERSIST, relay_on_wake, r);
    if (!r->wake_ev || event_add(r->wake_ev, NULL) < 0) {
        relay_seterr(err, size, "relay: event_new failed");
        goto fail;
    }
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)listen_port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    r->listener = evconnlistener_new_bind(r->base, relay_on_accept, r,
                                          LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                              LEV_OPT_CLOSE_ON_EXEC,
                                          64, (struct sockaddr *)&sin, sizeof(sin));
    if (!r->listener) {
        relay_seterr(err, size, "relay: cannot listen on 127.0.0.1:%d: %s", listen_port,
                     strerror(errno));
        goto fail;
    }
    if (getsockname(evconnlistener_get_fd(r->listener), (struct sockaddr *)&sin, &slen) < 0) {
        relay_seterr(err, size, "relay: getsockname: %s", strerror(errno));
        goto fail;
    }
    r->port = ntohs(sin.sin_port);
    snprintf(r->addr, sizeof(r->addr), "127.0.0.1:%d", r->port);
    if (pthread_create(&r->thread, NULL, relay_main, r) != 0) {
        relay_seterr(err, size, "relay: pthread_create failed");
        goto fail;
    }
    return r;

fail:
    if (ecfg)
        event_config_free(ecfg);
    relay_free(r);
    return NULL;
}

void tc_relay_set_delay(tc_relay *r, unsigned up_ms, unsigned down_ms, unsigned jitter_ms)
{
    atomic_store(&r->up_ms, up_ms);
    atomic_store(&r->down_ms, down_ms);
    atomic_store(&r->jitter_ms, jitter_ms);
}

unsigned tc_relay_held(const tc_relay *r)
{
    return atomic_load(&r->held);
}

void tc_relay_cut(tc_relay *r, int on)
{
    atomic_store(&r->cut, on ? 1 : 0);
    if (!on)
        relay_wake(r, 'c');
}

int tc_relay_port(const tc_relay *r)
{
    return r->port;
}

const char *tc_relay_addr(const tc_relay *r)
{
    return r->addr;
}

unsigned tc_relay_connections(const tc_relay *r)
{
    return atomic_load(&r->connections);
}

void tc_relay_stop(tc_relay *r)
{
    if (!r)
        return;
    relay_wake(r, 'q');
    pthread_join(r->thread, NULL);
    relay_free(r);
}
