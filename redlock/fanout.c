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
#include "fanout.h"
#include "script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum rl_slot_state { RL_SLOT_IDLE, RL_SLOT_SENT, RL_SLOT_DONE };

typedef struct rl_slot {
    struct rl_fanout *f;
    uint32_t idx;
    uint8_t state;                /* enum rl_slot_state */
    uint8_t evalled;              /* EVAL sent after NOSCRIPT: no second fallback */
    rl_monotime sent_us;
} rl_slot;

struct rl_fanout {
    rl_node *nodes;
    rl_vote_fn *on_vote;          /* NULL once the owner detached */
    void *owner;
    int refs;                     /* 1 (owner) + 1 per SENT slot */
    int script;                   /* enum rl_script, or -1 for plain commands */
    int argc;
    const char **argv;            /* built once; argv[0..1] are EVALSHA sha */
    size_t *argvlen;
    rl_slot slots[REDLOCK_MAX_MASTERS];
    char buf[];                   /* argv arrays and copies of every argument */
};

/* The command is copied into one allocation with the fanout: every master
 * gets the same bytes, and the caller's memory can go. */
rl_fanout *rl_fanout_new(rl_node *nodes, const rl_cmd *cmd)
{
    int argc = cmd->argc, script = cmd->script;
    const char *const *a = cmd->argv;
    const size_t *al = cmd->len;
    size_t bytes = 0;
    for (int i = 0; i < argc; i++)
        bytes += al[i] + 1;
    size_t arrays = (size_t)argc * (sizeof(char *) + sizeof(size_t));
    rl_fanout *f = calloc(1, sizeof(*f) + arrays + bytes);
    if (!f)
        return NULL;
    f->nodes = nodes;
    f->refs = 1;
    f->script = script;
    f->argc = argc;
    f->argv = (const char **)(void *)f->buf;
    f->argvlen = (size_t *)(void *)(f->buf + (size_t)argc * sizeof(char *));
    char *p = f->buf + arrays;
    for (int i = 0; i < argc; i++) {
        if (al[i])
            memcpy(p, a[i], al[i]);
        p[al[i]] = '\0';
        f->argv[i] = p;
        f->argvlen[i] = al[i];
        p += al[i] + 1;
    }
    return f;
}

static void fanout_unref(rl_fanout *f)
{
    if (--f->refs == 0)
        free(f);
}

static rl_reply_fn fanout_on_reply;

/* Queue @s's command on its master. For the EVAL fallback, argv[0..1] are
 * swapped for EVAL and the script body for the duration of the call:
 * hiredis formats the command into its own buffer before returning. */
static int fanout_issue(rl_fanout *f, rl_slot *s, bool eval, bool priority)
{
    rl_node *n = &f->nodes[s->idx];
    if (!eval)
        return rl_node_send(n, fanout_on_reply, s, f->argc, f->argv, f->argvlen, priority);
    const char *a0 = f->argv[0], *a1 = f->argv[1];
    size_t l0 = f->argvlen[0], l1 = f->argvlen[1];
    f->argv[0] = "EVAL";
    f->argvlen[0] = 4;
    f->argv[1] = rl_script_body(f->script);
    f->argvlen[1] = strlen(f->argv[1]);
    int rc = rl_node_send(n, fanout_on_reply, s, f->argc, f->argv, f->argvlen, priority);
    f->argv[0] = a0;
    f->argvlen[0] = l0;
    f->argv[1] = a1;
    f->argvlen[1] = l1;
    return rc;
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

void rl_fanout_fire(rl_node *nodes, uint32_t n, const rl_cmd *cmd, uint32_t mask)
{
    rl_fanout *f = mask ? rl_fanout_new(nodes, cmd) : NULL;
    for (uint32_t i = 0; f && i < n; i++)
        if (mask & (1u << i))
            rl_fanout_send(f, i, true);
    rl_fanout_detach(f);
}

static void fanout_on_reply(void *arg, const rl_reply *r, int err, const char *why)
{
    rl_slot *s = arg;
    rl_fanout *f = s->f;
    size_t len;
    const char *str = r && rl_reply_type(r) == RL_REPLY_ERROR ? rl_reply_str(r, &len) : NULL;
    if (str && f->script >= 0 && !s->evalled && len >= 8 && memcmp(str, "NOSCRIPT", 8) == 0) {
        /* The master lost its script cache. Same slot, same reference:
         * send the body itself. A release re-sent this way can land after
         * commands queued meanwhile; that is safe because every acquire
         * attempt uses a fresh token (acquire.c). */
        s->evalled = 1;
        if (fanout_issue(f, s, true, true) == 0)
            return;
    }
    s->state = RL_SLOT_DONE;
    if (f->on_vote)
        f->on_vote(f->owner, f, s->idx, r, r ? 0 : (err ? err : REDLOCK_ECONNECT),
                   r ? NULL : (why && why[0] ? why : "connection lost"));
    fanout_unref(f);
}

void rl_fanout_set_owner(rl_fanout *f, rl_vote_fn *fn, void *owner)
{
    f->on_vote = fn;
    f->owner = owner;
}

rl_monotime rl_fanout_sent_us(const rl_fanout *f, uint32_t idx)
{
    return f->slots[idx].sent_us;
}

