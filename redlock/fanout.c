/* fanout.c - one command, sent to every master, whose replies may outlive the op.
 *
 * An op decides as soon as a majority answered (or can no longer answer),
 * and a silent master may answer seconds later, or never. So the memory a
 * hiredis callback points at (a slot) must not belong to the op: it belongs
 * to this fanout, which counts one reference per command still queued at
 * hiredis plus one for its owner. The owner detaches when it has decided;
 * replies that arrive afterwards find on_vote == NULL and are dropped, and
 * the last one frees the fanout. hiredis always runs every callback exactly
 * once (with NULL when the connection dies), so the count always reaches 0.
 *
 * NOSCRIPT (a master restarted or ran SCRIPT FLUSH) is handled here, below
 * the owner: the same slot re-sends the script as EVAL, once.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

rl_fanout *rl_fanout_new(redlock_client *c, int cmd, const char *key, size_t keylen,
                         const char *token, uint32_t ttl_ms, rl_vote_fn *fn, void *owner)
{
    size_t tokenlen = token ? strlen(token) : 0;
    rl_fanout *f = calloc(1, sizeof(*f) + keylen + tokenlen + 2);
    if (!f)
        return NULL;
    f->c = c;
    f->on_vote = fn;
    f->owner = owner;
    f->refs = 1;
    f->cmd = cmd;
    char *p = f->buf;
    if (keylen)
        memcpy(p, key, keylen);
    f->key = p;
    f->keylen = keylen;
    p += keylen + 1;
    if (tokenlen)
        memcpy(p, token, tokenlen);
    f->token = p;
    f->tokenlen = tokenlen;
    f->ttllen = (size_t)snprintf(f->ttl, sizeof(f->ttl), "%u", ttl_ms);
    return f;
}

static void fanout_unref(rl_fanout *f)
{
    if (--f->refs == 0)
        free(f);
}

static void fanout_on_reply(redisAsyncContext *ac, void *reply, void *privdata);

static bool cmd_is_script(int cmd)
{
    return cmd == RL_CMD_RELEASE || cmd == RL_CMD_EXTEND || cmd == RL_CMD_STATUS;
}

/* Build argv for @s's command and queue it on its master. */
static int fanout_issue(rl_fanout *f, rl_slot *s, bool eval, bool priority)
{
    const char *argv[7];
    size_t lens[7];
    int argc = 0;
#define ARG(str, len) do { argv[argc] = (str); lens[argc] = (len); argc++; } while (0)
    switch (f->cmd) {
    case RL_CMD_SET:
        /* The lock itself. NX: only if nobody holds it; PX: it expires on
         * the master's own clock even if we vanish. */
        ARG("SET", 3);
        ARG(f->key, f->keylen);
        ARG(f->token, f->tokenlen);
        ARG("NX", 2);
        ARG("PX", 2);
        ARG(f->ttl, f->ttllen);
        break;
    case RL_CMD_TIME:
        ARG("TIME", 4);
        break;
    default: {
        int id = f->cmd == RL_CMD_RELEASE ? RL_SCRIPT_RELEASE
               : f->cmd == RL_CMD_EXTEND  ? RL_SCRIPT_EXTEND
                                          : RL_SCRIPT_STATUS;
        const char *body = eval ? rl_script_body(id) : rl_script_sha(id);
        if (eval)
            ARG("EVAL", 4);
        else
            ARG("EVALSHA", 7);
        ARG(body, strlen(body));
        ARG("1", 1);
        ARG(f->key, f->keylen);
        if (f->cmd != RL_CMD_STATUS)
            ARG(f->token, f->tokenlen);
        if (f->cmd == RL_CMD_EXTEND)
            ARG(f->ttl, f->ttllen);
        break;
    }
    }
#undef ARG
    rl_node *n = &f->c->nodes[s->idx];
    return rl_node_send(n, fanout_on_reply, s, argc, argv, lens, priority);
}

int rl_fanout_send(rl_fanout *f, uint32_t idx, bool priority)
{
    rl_slot *s = &f->slots[idx];
    s->f = f;
    s->idx = idx;
    int rc = fanout_issue(f, s, false, priority);
    if (rc != 0)
        return rc;
    s->state = RL_SLOT_SENT;
    s->sent_us = rl_now_us();
    f->refs++;
    return 0;
}

void rl_fanout_detach(rl_fanout *f)
{
    if (!f)
        return;
    f->on_vote = NULL;
    f->owner = NULL;
    fanout_unref(f);
}

static void fanout_on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    rl_slot *s = privdata;
    rl_fanout *f = s->f;
    rl_node *n = &f->c->nodes[s->idx];
    const redisReply *r = reply;

    rl_node_reply_seen(n, ac, r);

    if (r && r->type == REDIS_REPLY_ERROR && cmd_is_script(f->cmd) && !s->evalled &&
        r->len >= 8 && memcmp(r->str, "NOSCRIPT", 8) == 0) {
        /* The master lost its script cache. Same slot, same reference:
         * send the body itself. A release re-sent this way can land after
         * commands queued meanwhile; that is safe because every acquire
         * attempt uses a fresh token (acquire.c). */
        s->evalled = 1;
        if (fanout_issue(f, s, true, true) == 0)
            return;
    }

    s->state = RL_SLOT_DONE;
    if (f->on_vote) {
        if (r)
            f->on_vote(f->owner, f, s->idx, r, 0, NULL);
        else
            f->on_vote(f->owner, f, s->idx, NULL, n->err ? n->err : REDLOCK_ECONNECT,
                       n->errstr[0] ? n->errstr : "connection lost");
    }
    fanout_unref(f);
}
