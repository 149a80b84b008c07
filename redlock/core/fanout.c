/* fanout.c - one command, sent to every master, whose replies may outlive the op.
 *
 * The fanout owns the slots hiredis callbacks point at, counted by
 * reference; late replies find no owner and are dropped. NOSCRIPT (a master
 * restarted or ran SCRIPT FLUSH) re-sends the script as EVAL on the same
 * slot, once; so is an alternative's redo (rl_fanout_set_redo) sent. Why
 * the fanout, not the op, owns them: docs/threads.md, "Who owns what".
 */
#include "core/fanout.h"
#include "base/script.h"
#include "transport/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum rl_slot_state { RL_SLOT_IDLE, RL_SLOT_SENT, RL_SLOT_DONE };

typedef struct rl_slot {
    struct rl_fanout *f;
    uint32_t idx;
    uint8_t state;   /* enum rl_slot_state */
    uint8_t evalled; /* EVAL sent after NOSCRIPT: no second fallback */
    uint8_t redone;  /* the command sent after the alternative's answer */
    uint8_t redo;    /* a queued command's answer asked for the redo */
    uint8_t form;    /* which of the fanout's commands this master gets */
    uint8_t own_len; /* this master's own value of argument node_arg */
    char own[24];
    rl_monotime sent_us;
} rl_slot;

/* One command as sent: its arguments, copied into the fanout's buffer. */
typedef struct rl_form {
    int script;     /* enum rl_script, or -1 for plain commands */
    int nparts;     /* a transaction's commands (0: one command) */
    bool pipelined; /* ... sent without MULTI (rl_cmd.pipelined) */
    int part_argc[RL_CMD_PARTS_MAX];
    int node_arg; /* an argument each master has its own value of (0: none) */
    int argc;
    const char **argv; /* argv[0..1] are EVALSHA sha for a script */
    size_t *argvlen;
} rl_form;

struct rl_fanout {
    rl_node *nodes;
    rl_vote_fn *on_vote; /* NULL once the owner detached */
    void *owner;
    rl_late_fn *on_late;     /* replies after that, for what they teach */
    rl_redo_fn *redo;        /* an alternative's answer that asks for the command */
    rl_fanout *follow;       /* rl_fanout_set_followup: its command, ... */
    uint32_t follow_mask;    /* ... the masters whose answer decides it, ... */
    rl_need_fn *follow_need; /* ... and how */
    int refs;                /* 1 (owner) + 1 per reply function still to run */
    uint32_t trace_op;       /* the op whose round it is (trace.c), 0 none */
    uint32_t trace_fid;      /* this fanout's id in the trace, 0 until sent */
    rl_form forms[2];        /* the command, and the alternative some masters get */
    rl_slot slots[REDLOCK_MAX_MASTERS];
    char buf[]; /* argv arrays and copies of every argument */
};

static size_t form_arrays(const rl_cmd *cmd)
{
    return (size_t)cmd->argc * (sizeof(char *) + sizeof(size_t));
}

static size_t form_strings(const rl_cmd *cmd)
{
    size_t bytes = 0;
    for (int i = 0; i < cmd->argc; i++)
        bytes += cmd->len[i] + 1;
    return bytes;
}

/* @cmd into @fm: its two arrays at @arrays (aligned: every form's arrays
 * come first in the buffer), its strings at @p; returns the next string. */
static char *form_copy(rl_form *fm, const rl_cmd *cmd, char *arrays, char *p)
{
    fm->script = cmd->script;
    fm->nparts = cmd->nparts;
    fm->pipelined = cmd->pipelined;
    memcpy(fm->part_argc, cmd->part_argc, sizeof(fm->part_argc));
    fm->node_arg = cmd->node_arg;
    fm->argc = cmd->argc;
    fm->argv = (const char **)(void *)arrays;
    fm->argvlen = (size_t *)(void *)(arrays + (size_t)cmd->argc * sizeof(char *));
    for (int i = 0; i < cmd->argc; i++) {
        if (cmd->len[i])
            memcpy(p, cmd->argv[i], cmd->len[i]);
        p[cmd->len[i]] = '\0';
        fm->argv[i] = p;
        fm->argvlen[i] = cmd->len[i];
        p += cmd->len[i] + 1;
    }
    return p;
}

/* The commands are copied into one allocation with the fanout: every master
 * gets the same bytes (but its own node argument), and the caller's memory
 * can go. */
rl_fanout *rl_fanout_new2(rl_node *nodes, const rl_cmd *cmd, const rl_cmd *alt)
{
    size_t arrays0 = form_arrays(cmd), arrays1 = alt ? form_arrays(alt) : 0;
    size_t strings = form_strings(cmd) + (alt ? form_strings(alt) : 0);
    rl_fanout *f = calloc(1, sizeof(*f) + arrays0 + arrays1 + strings);
    if (!f)
        return NULL;
    f->nodes = nodes;
    f->refs = 1;
    char *p = form_copy(&f->forms[0], cmd, f->buf, f->buf + arrays0 + arrays1);
    if (alt)
        form_copy(&f->forms[1], alt, f->buf + arrays0, p);
    return f;
}

rl_fanout *rl_fanout_new(rl_node *nodes, const rl_cmd *cmd)
{
    return rl_fanout_new2(nodes, cmd, NULL);
}

static void fanout_unref(rl_fanout *f)
{
    if (--f->refs == 0) {
        rl_fanout_detach(f->follow);
        free(f);
    }
}

static rl_reply_fn fanout_on_reply, fanout_on_queued;

/* How fanout_issue sends: the EVAL fallback (the body, not its sha);
 * with a release's priority (rl_node_send). */
#define ISSUE_EVAL 0x1u
#define ISSUE_PRIORITY 0x2u

/* Queue @s's command on its master, with this master's own value of the
 * node argument swapped in for the call, and for the EVAL fallback
 * argv[0..1] swapped for EVAL and the script body: hiredis formats each
 * command into its own buffer before returning. A transaction (MULTI, its
 * commands, EXEC) has one reply function per command: *@ret_sent says how
 * many will run. */
static int fanout_issue(rl_fanout *f, rl_slot *s, unsigned how, int *ret_sent)
{
    bool eval = how & ISSUE_EVAL, priority = how & ISSUE_PRIORITY;
    rl_node *n = &f->nodes[s->idx];
    rl_form *fm = &f->forms[s->form];
    /* argv[1] only for a script (EVALSHA sha ...): a plain command may
     * have a single argument (TIME). */
    const char *saved[3] = { fm->argv[0], fm->argc > 1 ? fm->argv[1] : NULL,
                             fm->node_arg ? fm->argv[fm->node_arg] : NULL };
    size_t saved_len[3] = { fm->argvlen[0], fm->argc > 1 ? fm->argvlen[1] : 0,
                            fm->node_arg ? fm->argvlen[fm->node_arg] : 0 };
    if (fm->node_arg && s->own_len) {
        fm->argv[fm->node_arg] = s->own;
        fm->argvlen[fm->node_arg] = s->own_len;
    }
    if (eval) {
        fm->argv[0] = "EVAL";
        fm->argvlen[0] = 4;
        fm->argv[1] = rl_script_body(fm->script);
        fm->argvlen[1] = strlen(fm->argv[1]);
    }
    int rc;
    if (fm->nparts) {
        rl_node_tx tx = { fm->pipelined, fm->nparts,       fm->part_argc,  fm->argv,
                          fm->argvlen,   fanout_on_queued, fanout_on_reply };
        rc = rl_node_send_tx(n, &tx, s, priority, ret_sent);
    } else {
        rc = rl_node_send(n, fanout_on_reply, s, fm->argc, fm->argv, fm->argvlen, priority);
        *ret_sent = rc == 0;
    }
    rl_trace *t = n->env->trace;
    if (RL_TRACING(t) && rc == 0 && !eval) {
        if (!f->trace_fid)
            f->trace_fid = rl_trace_id(t);
        rl_trace_request(t, s->idx, f->trace_op, f->trace_fid, fm->script, fm->nparts,
                         fm->pipelined, fm->argc, fm->argv, fm->argvlen);
    }
    if (eval) {
        fm->argv[0] = saved[0];
        fm->argvlen[0] = saved_len[0];
        fm->argv[1] = saved[1];
        fm->argvlen[1] = saved_len[1];
    }
    if (fm->node_arg) {
        fm->argv[fm->node_arg] = saved[2];
        fm->argvlen[fm->node_arg] = saved_len[2];
    }
    return rc;
}

int rl_fanout_send(rl_fanout *f, uint32_t idx, bool priority)
{
    rl_slot *s = &f->slots[idx];
    s->f = f;
    s->idx = idx;
    s->state = RL_SLOT_SENT;
    s->sent_us = rl_now_us();
    /* One reference per reply function, taken before any can run (a
     * connection closed half-way through a transaction runs them at once);
     * those that will not run are given back. */
    int most = f->forms[s->form].nparts + 2, sent = 0;
    f->refs += most;
    int rc = fanout_issue(f, s, priority ? ISSUE_PRIORITY : 0, &sent);
    for (int i = sent; i < most; i++)
        fanout_unref(f);
    if (rc != 0)
        s->state = RL_SLOT_IDLE;
    return rc;
}

void rl_fanout_set_node_arg(rl_fanout *f, uint32_t idx, const char *v, size_t len)
{
    rl_slot *s = &f->slots[idx];
    if (len >= sizeof(s->own))
        len = sizeof(s->own) - 1;
    memcpy(s->own, v, len);
    s->own[len] = '\0';
    s->own_len = (uint8_t)len;
}

void rl_fanout_use_alt(rl_fanout *f, uint32_t idx)
{
    f->slots[idx].form = f->forms[1].argc ? 1 : 0;
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

/* The answer delivered for @s, as the trace records it (trace.c). */
static void trace_reply(rl_fanout *f, rl_slot *s, const rl_reply *r, int err)
{
    rl_trace *t = f->nodes[s->idx].env->trace;
    if (!RL_TRACING(t))
        return;
    const rl_form *fm = &f->forms[s->form];
    const char *kind = rl_trace_kind(fm->script, fm->nparts, fm->pipelined, fm->argc, fm->argv,
                                     fm->argvlen);
    rl_trace_reply(t, s->idx, f->trace_op, f->trace_fid, kind, !f->on_vote, r, err);
}

/* Does @r, the answer of @s's alternative, ask for the command instead? */
static bool wants_redo(rl_fanout *f, rl_slot *s, const rl_reply *r)
{
    if (!f->redo || !r || s->form != 1 || s->redone || !f->forms[1].argc)
        return false;
    return f->redo(&f->nodes[s->idx], r);
}

/* MULTI's and each queued command's reply: an error there (an ACL denial,
 * OOM, a command the master does not know) aborts the EXEC, whose own
 * error ("EXECABORT") says less: the first is the master's answer. In a
 * pipeline (rl_cmd.pipelined) nothing is aborted and the last command's
 * reply is the answer: an error before it only asks for the redo. */
static void fanout_on_queued(void *arg, const rl_reply *r, int err, const char *why)
{
    (void)err;
    (void)why;
    rl_slot *s = arg;
    rl_fanout *f = s->f;
    if (r && rl_reply_type(r) == RL_REPLY_ERROR && s->state == RL_SLOT_SENT && !s->redo) {
        if (wants_redo(f, s, r)) {
            s->redo = 1; /* the last answer (EXECABORT, ...) sends the command */
        } else if (!f->forms[s->form].pipelined) {
            s->state = RL_SLOT_DONE;
            trace_reply(f, s, r, 0);
            if (f->on_vote)
                f->on_vote(f->owner, f, s->idx, r, 0, NULL);
        }
    }
    fanout_unref(f);
}

static void fanout_on_reply(void *arg, const rl_reply *r, int err, const char *why)
{
    rl_slot *s = arg;
    rl_fanout *f = s->f;
    if (s->state == RL_SLOT_DONE) { /* a transaction whose error was its answer */
        fanout_unref(f);
        return;
    }
    size_t len;
    const char *str = r && rl_reply_type(r) == RL_REPLY_ERROR ? rl_reply_str(r, &len) : NULL;
    int sent;
    if (str && f->forms[s->form].script >= 0 && !s->evalled && len >= 8 &&
        memcmp(str, "NOSCRIPT", 8) == 0) {
        /* The master lost its script cache. Same slot, same reference:
         * send the body itself. A release re-sent this way can land after
         * commands queued meanwhile; that is safe because every acquire
         * attempt uses a fresh token (acquire.c). */
        s->evalled = 1;
        if (fanout_issue(f, s, ISSUE_EVAL | ISSUE_PRIORITY, &sent) == 0)
            return;
    }
    if (r && (s->redo || wants_redo(f, s, r))) {
        /* The alternative could not do it here: the command, on the same
         * slot and reference. Commands queued meanwhile may run first; the
         * command's own compare makes that safe (the release's script
         * compares the token, as the transaction did). */
        s->redo = 0;
        s->redone = 1;
        s->form = 0;
        if (fanout_issue(f, s, ISSUE_PRIORITY, &sent) == 0)
            return;
    }
    s->state = RL_SLOT_DONE;
    uint32_t bit = 1u << s->idx;
    if (f->follow_mask & bit) {
        f->follow_mask &= ~bit;
        if (r && f->follow_need(r))
            rl_fanout_send(f->follow, s->idx, true);
    }
    trace_reply(f, s, r, r ? 0 : (err ? err : REDLOCK_ECONNECT));
    if (f->on_vote)
        f->on_vote(f->owner, f, s->idx, r, r ? 0 : (err ? err : REDLOCK_ECONNECT),
                   r ? NULL : (why && why[0] ? why : "connection lost"));
    else if (f->on_late && r) {
        const rl_form *fm = &f->forms[s->form];
        f->on_late(&f->nodes[s->idx], fm->script, r, fm->argv[fm->argc - 1],
                   fm->argvlen[fm->argc - 1]);
    }
    fanout_unref(f);
}

int rl_fanout_set_followup(rl_fanout *f, uint32_t mask, const rl_cmd *cmd, rl_need_fn *need)
{
    rl_fanout *follow = rl_fanout_new(f->nodes, cmd);
    if (!follow)
        return REDLOCK_ENOMEM;
    rl_fanout_detach(f->follow); /* one follow-up per fanout: the last set */
    f->follow = follow;
    f->follow_mask = mask;
    f->follow_need = need;
    return 0;
}

void rl_fanout_set_trace_op(rl_fanout *f, uint32_t op)
{
    f->trace_op = op;
}

void rl_fanout_set_redo(rl_fanout *f, rl_redo_fn *fn)
{
    f->redo = fn;
}

void rl_fanout_set_late(rl_fanout *f, rl_late_fn *fn)
{
    f->on_late = fn;
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
