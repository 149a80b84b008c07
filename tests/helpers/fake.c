/* fake.c - fake masters: a fixed reply to every command (or per command
 * name), a reply that never ends, or none at all (see fake.h).
 *
 * One thread polls the listener and every connection; the hiredis reader
 * splits what a client sends into commands, so the reply goes once per
 * command however the client batches them.
 */
#include "fake.h"

#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "cluster.h"
#include "sock.h"

#define FAKE_MAX_CONNS 64
#define FAKE_MAX_RULES 16
#define FAKE_STREAM_MAX (1ull << 30) /* a streamed reply ends after 1 GiB */

struct fake_conn {
    int fd;              /* -1 when the slot is free */
    redisReader *reader; /* parses the commands the client sends */
};

struct tc_fake {
    /* set before the thread starts, read-only afterwards */
    tc_server srv;
    char *reply; /* NULL for a black hole */
    size_t reply_len;
    int stream;     /* after each reply, filler until the client stops reading */
    size_t n_rules; /* replies by command name, before @reply */
    char *rule_cmd[FAKE_MAX_RULES];
    char *rule_reply[FAKE_MAX_RULES];

    /* shared */
    atomic_uint connections;
    atomic_uint commands;

    /* the thread's own, until it is joined */
    struct fake_conn conns[FAKE_MAX_CONNS];
};

static void fake_close(struct fake_conn *c)
{
    close(c->fd);
    redisReaderFree(c->reader);
    c->fd = -1;
    c->reader = NULL;
}

static void fake_accept(tc_fake *f)
{
    const struct timeval sndtimeo = { .tv_sec = 2 };
    int fd = accept4(f->srv.listen_fd, NULL, NULL, SOCK_CLOEXEC);

    if (fd < 0)
        return;
    atomic_fetch_add(&f->connections, 1);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sndtimeo, sizeof(sndtimeo));
    for (int k = 0; k < FAKE_MAX_CONNS; k++) {
        if (f->conns[k].fd < 0) {
            f->conns[k].reader = redisReaderCreate();
            if (!f->conns[k].reader)
                break;
            f->conns[k].fd = fd;
            return;
        }
    }
    close(fd);
}

/* The reply to @cmd (an array of strings), its length in @len: its
 * rule's, else the default (NULL for a black hole). */
static const char *fake_reply_for(const tc_fake *f, const redisReply *cmd, size_t *len)
{
    if (cmd->type == REDIS_REPLY_ARRAY && cmd->elements > 0 &&
        cmd->element[0]->type == REDIS_REPLY_STRING) {
        for (size_t k = 0; k < f->n_rules; k++) {
            if (strcasecmp(cmd->element[0]->str, f->rule_cmd[k]) == 0) {
                *len = strlen(f->rule_reply[k]);
                return f->rule_reply[k];
            }
        }
    }
    *len = f->reply_len;
    return f->reply;
}

/* The rest of a huge bulk string: filler for as long as the client reads
 * it. The client dropping the connection (a send error, or the send
 * timeout when it stops reading) ends it: -1, close. */
static int fake_stream(int fd)
{
    static const char filler[65536] = { [0 ... 65535] = 'x' };

    for (unsigned long long sent = 0; sent < FAKE_STREAM_MAX; sent += sizeof(filler))
        if (tc_send_all(fd, filler, sizeof(filler)) < 0)
            return -1;
    return 0;
}

static void fake_serve(tc_fake *f, struct fake_conn *c)
{
    int fed = tc_feed(c->fd, c->reader);

    if (fed <= 0) {
        if (fed < 0)
            fake_close(c);
        return;
    }
    for (;;) {
        void *cmd = NULL;

        if (redisReaderGetReply(c->reader, &cmd) != REDIS_OK) {
            /* Not RESP: a black hole keeps swallowing bytes, a fake answers
             * once and hangs up (it cannot tell where commands end). */
            if (!f->reply) {
                redisReaderFree(c->reader);
                c->reader = redisReaderCreate();
                if (!c->reader)
                    fake_close(c);
                return;
            }
            tc_send_all(c->fd, f->reply, f->reply_len);
            fake_close(c);
            return;
        }
        if (!cmd)
            return;
        size_t len;
        const char *reply = fake_reply_for(f, cmd, &len);
        freeReplyObject(cmd);
        atomic_fetch_add(&f->commands, 1);
        if (reply &&
            (tc_send_all(c->fd, reply, len) < 0 || (f->stream && fake_stream(c->fd) < 0))) {
            fake_close(c);
            return;
        }
    }
}

static void *fake_main(void *arg)
{
    tc_fake *f = arg;
    struct pollfd pfd[2 + FAKE_MAX_CONNS];
    int slot[FAKE_MAX_CONNS];

    for (;;) {
        int n = 0, m = 0;

        pfd[n++] = (struct pollfd){ .fd = f->srv.wake[0], .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = f->srv.listen_fd, .events = POLLIN };
        for (int k = 0; k < FAKE_MAX_CONNS; k++) {
            if (f->conns[k].fd >= 0) {
                slot[m++] = k;
                pfd[n++] = (struct pollfd){ .fd = f->conns[k].fd, .events = POLLIN };
            }
        }
        if (poll(pfd, (nfds_t)n, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pfd[0].revents)
            break;
        for (int j = 0; j < m; j++) {
            if (pfd[2 + j].revents)
                fake_serve(f, &f->conns[slot[j]]);
        }
        if (pfd[1].revents & POLLIN)
            fake_accept(f);
    }
    return NULL;
}

static void fake_free(tc_fake *f)
{
    tc_server_stop(&f->srv);
    for (int k = 0; k < FAKE_MAX_CONNS; k++) {
        if (f->conns[k].fd >= 0)
            fake_close(&f->conns[k]);
    }
    for (size_t k = 0; k < f->n_rules; k++) {
        free(f->rule_cmd[k]);
        free(f->rule_reply[k]);
    }
    free(f->reply);
    free(f);
}

static tc_fake *fake_new(const void *reply, size_t len, const tc_fake_rule *rules, int stream,
                         int *ret_port)
{
    tc_fake *f = calloc(1, sizeof(*f));

    if (!f)
        tc_fail("tc_fake: out of memory");
    f->stream = stream;
    for (size_t k = 0; rules && rules[k].cmd; k++) {
        if (k == FAKE_MAX_RULES)
            tc_fail("tc_fake: more than %d rules", FAKE_MAX_RULES);
        f->rule_cmd[k] = strdup(rules[k].cmd);
        f->rule_reply[k] = strdup(rules[k].reply);
        if (!f->rule_cmd[k] || !f->rule_reply[k])
            tc_fail("tc_fake: out of memory");
        f->n_rules = k + 1;
    }
    for (int k = 0; k < FAKE_MAX_CONNS; k++)
        f->conns[k].fd = -1;
    atomic_init(&f->connections, 0);
    atomic_init(&f->commands, 0);
    if (reply) {
        f->reply = malloc(len ? len : 1);
        if (!f->reply)
            tc_fail("tc_fake: out of memory");
        memcpy(f->reply, reply, len);
        f->reply_len = len;
    }
    tc_server_open(&f->srv, "tc_fake");
    tc_server_start(&f->srv, fake_main, f, "tc_fake");
    if (ret_port)
        *ret_port = f->srv.port;
    return f;
}

tc_fake *tc_fake_start(const void *reply, size_t len, int *ret_port)
{
    if (!reply)
        tc_fail("tc_fake_start: no reply given (use tc_blackhole_start)");
    return fake_new(reply, len, NULL, 0, ret_port);
}

tc_fake *tc_fake_rules_start(const tc_fake_rule *rules, const char *otherwise, int *ret_port)
{
    if (!rules || !otherwise)
        tc_fail("tc_fake_rules_start: rules and a default reply are needed");
    return fake_new(otherwise, strlen(otherwise), rules, 0, ret_port);
}

tc_fake *tc_fake_stream_start(const char *head, int *ret_port)
{
    if (!head)
        tc_fail("tc_fake_stream_start: no head given");
    return fake_new(head, strlen(head), NULL, 1, ret_port);
}

tc_fake *tc_blackhole_start(int *ret_port)
{
    return fake_new(NULL, 0, NULL, 0, ret_port);
}

int tc_fake_port(const tc_fake *f)
{
    return f->srv.port;
}

const char *tc_fake_addr(const tc_fake *f)
{
    return f->srv.addr;
}

unsigned tc_fake_connections(const tc_fake *f)
{
    return atomic_load(&f->connections);
}

unsigned tc_fake_commands(const tc_fake *f)
{
    return atomic_load(&f->commands);
}

void tc_fake_stop(tc_fake *f)
{
    if (f)
        fake_free(f);
}
