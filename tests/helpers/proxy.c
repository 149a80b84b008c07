/* proxy.c - a slow link in front of one master (see fake.h).
 *
 * Each command the client sends is parsed, stamped with the time it may go
 * upstream and queued; a command never overtakes the one before it, since
 * order is what a connection means. Replies are passed back at once. One
 * thread polls the listener, both sides of every connection, and the
 * queue's next due time. A connection accepted while the proxy refuses
 * (tc_proxy_refuse) never reaches the master: the proxy answers each of
 * its commands itself, so no reply can overtake another.
 */
#include "fake.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <hiredis/hiredis.h>

#include "await.h"
#include "cluster.h"
#include "sock.h"

#define PROXY_MAX_CONNS 8

/* Bytes of one command, waiting for their time to go upstream. */
struct held {
    struct held *next;
    uint64_t due_us;
    size_t len;
    char data[];
};

struct proxy_conn {
    int down, up;             /* client side, master side; -1 when free (up: refused) */
    int refused;              /* answered by the proxy, never passed on */
    redisReader *reader;      /* splits what the client sends into commands */
    struct held *head, *tail; /* commands not yet passed on, in order */
};

struct tc_proxy {
    tc_server srv;
    int upstream_port;
    pthread_mutex_t mu; /* guards pass, delay_ms, holding, the refusal */
    int holding;
    unsigned pass, delay_ms;
    char *refuse_reply;                       /* tc_proxy_refuse: the answer, and ... */
    uint64_t refuse_until_us;                 /* ... until when new connections get it */
    unsigned refused_cmds;                    /* commands answered so far */
    unsigned accepted;                        /* connections accepted */
    struct proxy_conn conns[PROXY_MAX_CONNS]; /* the thread's own */
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
    uint64_t now = tc_now_us();

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

/* A refused connection's command: the proxy's own answer. */
static int proxy_refuse_one(tc_proxy *p, struct proxy_conn *c)
{
    pthread_mutex_lock(&p->mu);
    p->refused_cmds++;
    int rc = tc_send_all(c->down, p->refuse_reply, strlen(p->refuse_reply));
    pthread_mutex_unlock(&p->mu);
    return rc;
}

static void proxy_from_client(tc_proxy *p, struct proxy_conn *c)
{
    int fed = tc_feed(c->down, c->reader);

    if (fed <= 0) {
        if (fed < 0)
            proxy_close(c);
        return;
    }
    for (;;) {
        void *cmd = NULL;
        struct held *h;
        uint64_t due = tc_now_us();

        if (redisReaderGetReply(c->reader, &cmd) != REDIS_OK) {
            proxy_close(c);
            return;
        }
        if (!cmd)
            break;
        if (c->refused) {
            freeReplyObject(cmd);
            if (proxy_refuse_one(p, c) < 0) {
                proxy_close(c);
                return;
            }
            continue;
        }
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

static void proxy_accept(tc_proxy *p)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    int down = accept4(p->srv.listen_fd, NULL, NULL, SOCK_CLOEXEC);
    int up;

    if (down < 0)
        return;
    pthread_mutex_lock(&p->mu);
    p->accepted++;
    int refuse = p->refuse_reply && tc_now_us() < p->refuse_until_us;
    pthread_mutex_unlock(&p->mu);
    if (refuse) {
        up = -1; /* poll() skips a negative fd */
        goto add;
    }
    up = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)p->upstream_port);
    if (up < 0 || connect(up, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        if (up >= 0)
            close(up);
        close(down); /* the master is down: so is its proxy */
        return;
    }
add:
    for (int k = 0; k < PROXY_MAX_CONNS; k++) {
        struct proxy_conn *c = &p->conns[k];

        if (c->down < 0) {
            c->reader = redisReaderCreate();
            if (!c->reader)
                break;
            c->down = down;
            c->up = up;
            c->refused = refuse;
            return;
        }
    }
    if (up >= 0)
        close(up);
    close(down);
}

static void *proxy_main(void *arg)
{
    tc_proxy *p = arg;
    struct pollfd pfd[2 + 2 * PROXY_MAX_CONNS];
    int slot[2 * PROXY_MAX_CONNS];

    for (;;) {
        int n = 0, m = 0, timeout = -1;
        uint64_t now = tc_now_us();

        pfd[n++] = (struct pollfd){ .fd = p->srv.wake[0], .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = p->srv.listen_fd, .events = POLLIN };
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

tc_proxy *tc_proxy_start(int i)
{
    tc_proxy *p = calloc(1, sizeof(*p));

    if (!p)
        tc_fail("tc_proxy_start: out of memory");
    p->upstream_port = tc_port(i);
    for (int k = 0; k < PROXY_MAX_CONNS; k++)
        p->conns[k].down = p->conns[k].up = -1;
    pthread_mutex_init(&p->mu, NULL);
    tc_server_open(&p->srv, "tc_proxy_start");
    tc_server_start(&p->srv, proxy_main, p, "tc_proxy_start");
    return p;
}

const char *tc_proxy_addr(const tc_proxy *p)
{
    return p->srv.addr;
}

void tc_proxy_hold(tc_proxy *p, unsigned pass, unsigned delay_ms)
{
    pthread_mutex_lock(&p->mu);
    p->holding = 1;
    p->pass = pass;
    p->delay_ms = delay_ms;
    pthread_mutex_unlock(&p->mu);
}

void tc_proxy_refuse(tc_proxy *p, const char *reply, unsigned ms)
{
    char *copy = strdup(reply);

    if (!copy)
        tc_fail("tc_proxy_refuse: out of memory");
    pthread_mutex_lock(&p->mu);
    free(p->refuse_reply);
    p->refuse_reply = copy;
    p->refuse_until_us = tc_now_us() + (uint64_t)ms * 1000;
    pthread_mutex_unlock(&p->mu);
}

unsigned tc_proxy_refused(tc_proxy *p)
{
    pthread_mutex_lock(&p->mu);
    unsigned n = p->refused_cmds;
    pthread_mutex_unlock(&p->mu);
    return n;
}

unsigned tc_proxy_accepted(tc_proxy *p)
{
    pthread_mutex_lock(&p->mu);
    unsigned n = p->accepted;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void tc_proxy_stop(tc_proxy *p)
{
    if (!p)
        return;
    tc_server_stop(&p->srv);
    for (int k = 0; k < PROXY_MAX_CONNS; k++)
        if (p->conns[k].down >= 0)
            proxy_close(&p->conns[k]);
    pthread_mutex_destroy(&p->mu);
    free(p->refuse_reply);
    free(p);
}
