/* wait.c - waiting in turn: names, tickets and wake-ups of a client's waiters.
 *
 * Gives each waiting acquire its name ("hand|channel|id") and ticket, keeps
 * the client subscribed to its channel on every master (one SUBSCRIBE per
 * master for the client's life), and routes a message to the waiter it
 * names. The order on the masters, and why a forged wake-up costs at most an
 * attempt: docs/waiting.md, "Waiting in turn: the fair hand-off".
 */
#include "core/wait.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rl_wait {
    rl_waiter *head, *tail;
    char channel[48]; /* "redlock:wake:" + 32 hex, random per client */
    uint64_t next_id;
    uint64_t last_ticket;
    bool active;     /* subscribed (or trying) since the first wait */
    bool acl_warned; /* a master's ACL refused the channel, and we said so */
    const rl_conn *subscribed[REDLOCK_MAX_MASTERS]; /* the connection we subscribed */
};

static struct rl_wait *wait_state(redlock_client *c)
{
    if (c->wait)
        return c->wait;
    struct rl_wait *ws = calloc(1, sizeof(*ws));
    char token[RL_TOKEN_LEN + 1];
    if (!ws || rl_token_new(token) != 0) {
        free(ws);
        return NULL;
    }
    snprintf(ws->channel, sizeof(ws->channel), "redlock:wake:%s", token);
    c->wait = ws;
    return ws;
}

/* The answer to the PUBLISH that follows a SUBSCRIBE on the command
 * connection. A subscriber connection swallows an error to SUBSCRIBE (no
 * reply function waits for it), so the channel right is asked this way:
 * an ACL that refuses PUBLISH on the channel refuses SUBSCRIBE too. Said
 * once per client, as an event (a program's event_fn, redlock-cli's
 * default stderr, hears of it, not only a log at WARN): every master
 * needs the same grant, and waiting still works, by polling. */
static void on_channel_probe(void *arg, const rl_reply *r, int err, const char *why)
{
    (void)err;
    (void)why;
    rl_node *n = arg;
    redlock_client *c = n->env->arg;
    size_t len;
    const char *s = r && rl_reply_type(r) == RL_REPLY_ERROR ? rl_reply_str(r, &len) : NULL;
    if (!s || !rl_reply_is_acl_denial(s, len) || !c->wait || c->wait->acl_warned)
        return;
    c->wait->acl_warned = true;
    const char *user = c->cfg.username && c->cfg.username[0] ? c->cfg.username : "default";
    rl_node_event(n, 0, REDLOCK_EVENT_ACL_CHANNEL,
                  "the ACL refuses the wake-up channel: waiters poll instead of being woken; "
                  "grant it on every master: ACL SETUSER %s '&redlock:wake:*'",
                  user);
}

static void subscribe(redlock_client *c, struct rl_wait *ws, rl_node *n)
{
    rl_conn *sub = rl_node_subscriber(n);
    if (!sub || ws->subscribed[n->idx] == sub ||
        rl_conn_subscribe(sub, ws->channel, strlen(ws->channel), true) != 0)
        return;
    ws->subscribed[n->idx] = sub;
    /* A message that names no waiter is dropped by every client (below). */
    const char *argv[3] = { "PUBLISH", ws->channel, "probe" };
    size_t lens[3] = { 7, strlen(ws->channel), 5 };
    rl_node_send(n, on_channel_probe, n, 3, argv, lens, false);
    (void)c;
}

void rl_wait_join(redlock_client *c, rl_waiter *w, uint32_t hand_ms)
{
    struct rl_wait *ws = wait_state(c);
    if (!ws || w->joined)
        return; /* out of memory: no queue, no wake-ups; the poll timer still retries */
    w->joined = true;
    /* The ticket: real time, so that waiters of different processes on one
     * host line up in the order they started; within a client, strictly
     * increasing, so that two in one microsecond keep their order too. */
    uint64_t now = (uint64_t)rl_realtime_us();
    w->ticket = now > ws->last_ticket ? now : ws->last_ticket + 1;
    ws->last_ticket = w->ticket;
    snprintf(w->member, sizeof(w->member), "%u|%s|%llx", hand_ms, ws->channel,
             (unsigned long long)++ws->next_id);
    w->next = NULL;
    w->prev = ws->tail;
    if (ws->tail)
        ws->tail->next = w;
    else
        ws->head = w;
    ws->tail = w;
    ws->active = true;
    for (uint32_t m = 0; m < c->n; m++)
        subscribe(c, ws, &c->nodes[m]);
}

rl_waiter *rl_wait_first(const redlock_client *c)
{
    return c->wait ? c->wait->head : NULL;
}

const char *rl_wait_channel(const redlock_client *c)
{
    return c->wait ? c->wait->channel : NULL;
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
}

void rl_wait_node_up(redlock_client *c, rl_node *n)
{
    if (c->wait && c->wait->active)
        subscribe(c, c->wait, n);
}

/* "hand|channel|id|by": the waiter is everything before the third '|'. */
static size_t member_len(const char *msg, size_t mlen)
{
    int bars = 0;
    for (size_t i = 0; i < mlen; i++)
        if (msg[i] == '|' && ++bars == 3)
            return i;
    return 0;
}

void rl_wait_on_message(rl_node *n, const char *ch, size_t clen, const char *msg, size_t mlen,
                        void *arg)
{
    (void)n;
    redlock_client *c = arg;
    struct rl_wait *ws = c->wait;
    size_t len = member_len(msg, mlen);
    if (!ws || clen != strlen(ws->channel) || memcmp(ch, ws->channel, clen) != 0 || !len)
        return;
    for (rl_waiter *w = ws->head; w; w = w->next) {
        if (strlen(w->member) == len && memcmp(w->member, msg, len) == 0) {
            w->wake(w);
            return;
        }
    }
}

void rl_wait_close(redlock_client *c)
{
    free(c->wait);
    c->wait = NULL;
}
