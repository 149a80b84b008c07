/* pubsub.c - waiting without polling: wake a waiting acquire when a release
 * happens.
 *
 * The release script publishes on the lock key's own channel (channels and
 * keys are separate namespaces in Redis) on every master where it deleted
 * the key. An acquire that found the resource held subscribes to its keys'
 * channels and retries at once when a message arrives; the retry timer
 * stays armed as the fallback, because pub/sub is best effort (a message
 * published before our SUBSCRIBE landed is lost, and expiry publishes
 * nothing). Safety does not depend on any of this: a wake-up only starts
 * an ordinary attempt earlier.
 *
 * Subscriptions live on a second connection per master, opened the first
 * time someone waits, because a connection in subscribe mode can carry no
 * other commands. Channels are refcounted on the client, so a thousand ops
 * waiting for one resource cost one SUBSCRIBE per master.
 */
#include "internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

typedef struct rl_chan {
    struct rl_chan *next;
    int refs;                     /* waiting ops listening on it */
    size_t len;
    char name[];
} rl_chan;

static rl_chan *chan_find(redlock_client *c, const char *name, size_t len)
{
    for (rl_chan *ch = c->chans; ch; ch = ch->next)
        if (ch->len == len && memcmp(ch->name, name, len) == 0)
            return ch;
    return NULL;
}

static void sub_on_message(redisAsyncContext *ac, void *reply, void *privdata)
{
    (void)ac;
    rl_node *n = privdata;
    const redisReply *r = reply;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || strcmp(r->element[0]->str, "message") != 0 ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return;   /* subscribe/unsubscribe confirmations, or the connection died */
    const char *ch = r->element[1]->str;
    size_t len = r->element[1]->len;
    for (rl_op *op = n->c->ops; op; op = op->next) {
        if (op->kind != RL_OP_ACQUIRE || !op->watching || op->phase != RL_PHASE_WAITING)
            continue;
        for (uint32_t i = 0; i < op->keys.n; i++) {
            if (op->keys.len[i] == len && memcmp(op->keys.v[i], ch, len) == 0) {
                rl_acquire_wake(op);
                break;
            }
        }
    }
}

static void sub_send(rl_node *n, const char *verb, const char *name, size_t len)
{
    const char *argv[2] = { verb, name };
    size_t lens[2] = { strlen(verb), len };
    redisAsyncCommandArgv(n->sub, sub_on_message, n, 2, argv, lens);
}

static void sub_on_connect(const redisAsyncContext *ac, int status)
{
    rl_node *n = ac->data;
    if (status != REDIS_OK && n->sub == ac)
        n->sub = NULL;   /* hiredis frees it; waiters fall back to timers */
}

static void sub_on_disconnect(const redisAsyncContext *ac, int status)
{
    (void)status;
    rl_node *n = ac->data;
    if (n->sub == ac)
        n->sub = NULL;   /* reopened by the next waiter */
}

static void sub_on_auth(redisAsyncContext *ac, void *reply, void *privdata)
{
    (void)privdata;
    const redisReply *r = reply;
    if (r && r->type == REDIS_REPLY_ERROR)
        redisAsyncDisconnect(ac);
}

/* Open the pub/sub connection and subscribe to every watched channel. */
static void sub_open(rl_node *n)
{
    redlock_client *c = n->c;
    redisAsyncContext *ac = redisAsyncConnect(n->ip, n->port);
    if (!ac)
        return;
    if (ac->err) {
        redisAsyncFree(ac);
        return;
    }
    int fl = fcntl(ac->c.fd, F_GETFD);
    if (fl >= 0)
        fcntl(ac->c.fd, F_SETFD, fl | FD_CLOEXEC);
    if (rl_ev_attach(ac, c->base) != 0) {
        redisAsyncFree(ac);
        return;
    }
    ac->data = n;
    rl_node_guard_replies(ac);
    redisAsyncSetConnectCallback(ac, sub_on_connect);
    redisAsyncSetDisconnectCallback(ac, sub_on_disconnect);
    n->sub = ac;
    if (c->password) {
        const char *argv[3] = { "AUTH", c->username ? c->username : c->password, c->password };
        size_t lens[3] = { 4, strlen(argv[1]), strlen(argv[2]) };
        redisAsyncCommandArgv(ac, sub_on_auth, n, c->username ? 3 : 2, argv, lens);
    }
    for (rl_chan *ch = c->chans; ch; ch = ch->next)
        sub_send(n, "SUBSCRIBE", ch->name, ch->len);
}

void rl_pubsub_watch(redlock_client *c, const rl_keyset *keys)
{
    for (uint32_t i = 0; i < keys->n; i++) {
        rl_chan *ch = chan_find(c, keys->v[i], keys->len[i]);
        if (!ch) {
            ch = calloc(1, sizeof(*ch) + keys->len[i]);
            if (!ch)
                continue;   /* no wake-ups for it: the timer still retries */
            ch->len = keys->len[i];
            memcpy(ch->name, keys->v[i], ch->len);
            ch->next = c->chans;
            c->chans = ch;
        }
        if (++ch->refs == 1)
            for (uint32_t m = 0; m < c->n; m++)
                if (c->nodes[m].sub)
                    sub_send(&c->nodes[m], "SUBSCRIBE", ch->name, ch->len);
    }
    for (uint32_t m = 0; m < c->n; m++)
        if (!c->nodes[m].sub && c->nodes[m].state == RL_NODE_UP)
            sub_open(&c->nodes[m]);
}

void rl_pubsub_unwatch(redlock_client *c, const rl_keyset *keys)
{
    for (uint32_t i = 0; i < keys->n; i++) {
        rl_chan *ch = chan_find(c, keys->v[i], keys->len[i]);
        if (!ch || --ch->refs > 0)
            continue;
        for (uint32_t m = 0; m < c->n; m++)
            if (c->nodes[m].sub)
                sub_send(&c->nodes[m], "UNSUBSCRIBE", ch->name, ch->len);
        rl_chan **pp = &c->chans;
        while (*pp != ch)
            pp = &(*pp)->next;
        *pp = ch->next;
        free(ch);
    }
}

void rl_pubsub_close(redlock_client *c)
{
    for (uint32_t m = 0; m < c->n; m++) {
        redisAsyncContext *ac = c->nodes[m].sub;
        if (ac) {
            c->nodes[m].sub = NULL;
            redisAsyncFree(ac);
        }
    }
    while (c->chans) {
        rl_chan *ch = c->chans;
        c->chans = ch->next;
        free(ch);
    }
}
