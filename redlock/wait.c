/* wait.c - waiting without polling: wake a waiting acquire when a release happens.
 *
 * The release script publishes on the lock key's own channel (channels and
 * keys are separate namespaces in Redis) on every master where it deleted
 * the key. An acquire that found the resource held subscribes to its keys'
 * channels and retries at once when a message arrives; its poll timer stays
 * armed as the fallback, because pub/sub is best effort (a message
 * published before our SUBSCRIBE landed is lost, and expiry publishes
 * nothing). Safety does not depend on any of this: a wake-up only starts an
 * ordinary attempt earlier.
 *
 * Subscriptions live on a second connection per master (node.c), opened the
 * first time someone waits, because a connection in subscribe mode can
 * carry no other commands. Channels are refcounted on the client, so a
 * thousand waiters for one resource cost one SUBSCRIBE per master, and
 * waiters are woken oldest first.
 */
#include "wait.h"

#include <stdlib.h>
#include <string.h>

typedef struct rl_chan {
    struct rl_chan *next;
    int refs;                     /* waiters listening on it */
    size_t len;
    char name[];
} rl_chan;

struct rl_wait {
    rl_waiter *head, *tail;       /* oldest first */
    rl_chan *chans;
};

static struct rl_wait *wait_state(redlock_client *c)
{
    if (!c->wait)
        c->wait = calloc(1, sizeof(*c->wait));
    return c->wait;
}

static rl_chan *chan_find(struct rl_wait *ws, const char *name, size_t len)
{
    for (rl_chan *ch = ws->chans; ch; ch = ch->next)
        if (ch->len == len && memcmp(ch->name, name, len) == 0)
            return ch;
    return NULL;
}

static void subscribe_all(redlock_client *c, const rl_chan *ch, bool on)
{
    for (uint32_t m = 0; m < c->n; m++) {
        rl_conn *sub = c->nodes[m].sub;
        if (sub)
            rl_conn_subscribe(sub, ch->name, ch->len, on);
    }
}

void rl_wait_join(redlock_client *c, rl_waiter *w, const rl_keyset *keys)
{
    struct rl_wait *ws = wait_state(c);
    if (!ws || w->joined)
        return;   /* out of memory: no wake-ups; the poll timer still retries */
    w->joined = true;
    w->keys = keys;
    w->next = NULL;
    w->prev = ws->tail;
    if (ws->tail)
        ws->tail->next = w;
    else
        ws->head = w;
    ws->tail = w;
    for (uint32_t i = 0; i < keys->n; i++) {
        rl_chan *ch = chan_find(ws, keys->v[i], keys->len[i]);
        if (!ch) {
            ch = calloc(1, sizeof(*ch) + keys->len[i]);
            if (!ch)
                continue;
            ch->len = keys->len[i];
            memcpy(ch->name, keys->v[i], ch->len);
            ch->next = ws->chans;
            ws->chans = ch;
        }
        if (++ch->refs == 1)
            subscribe_all(c, ch, true);
    }
    /* Masters without a subscriber connection get one, subscribed to every
     * channel anyone waits on. */
    for (uint32_t m = 0; m < c->n; m++) {
        if (c->nodes[m].sub)
            continue;
        rl_conn *sub = rl_node_subscriber(&c->nodes[m]);
        for (rl_chan *ch = ws->chans; sub && ch; ch = ch->next)
            rl_conn_subscribe(sub, ch->name, ch->len, true);
    }
}

void rl_wait_leave(redlock_client *c, rl_waiter *w)
{
    struct rl_wait *ws = c->wait;
    if (!ws || !w->joined)
        return;
    w->joined = false;
    if (w->prev)
        w->prev->next = w->next;
    else
        ws->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        ws->tail = w->prev;
    w->prev = w->next = NULL;
    for (uint32_t i = 0; i < w->keys->n; i++) {
        rl_chan *ch = chan_find(ws, w->keys->v[i], w->keys->len[i]);
        if (!ch || --ch->refs > 0)
            continue;
        subscribe_all(c, ch, false);
        rl_chan **pp = &ws->chans;
        while (*pp != ch)
            pp = &(*pp)->next;
        *pp = ch->next;
        free(ch);
    }
}

static bool waits_on(const rl_waiter *w, const char *ch, size_t len)
{
    for (uint32_t i = 0; i < w->keys->n; i++)
        if (w->keys->len[i] == len && memcmp(w->keys->v[i], ch, len) == 0)
            return true;
    return false;
}

void rl_wait_on_message(rl_node *n, const char *ch, size_t clen, const char *msg, size_t mlen,
                        void *arg)
{
    (void)n; (void)msg; (void)mlen;
    redlock_client *c = arg;
    struct rl_wait *ws = c->wait;
    /* Oldest first. A wake may end a waiter (it leaves the list when its op
     * is delivered, later), so take the next one before waking. */
    for (rl_waiter *w = ws ? ws->head : NULL; w;) {
        rl_waiter *next = w->next;
        if (waits_on(w, ch, clen))
            w->wake(w);
        w = next;
    }
}

void rl_wait_close(redlock_client *c)
{
    struct rl_wait *ws = c->wait;
    if (!ws)
        return;
    while (ws->chans) {
        rl_chan *ch = ws->chans;
        ws->chans = ch->next;
        free(ch);
    }
    free(ws);
    c->wait = NULL;
}
