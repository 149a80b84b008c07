/* acquire-command.c - what one acquire attempt sends each master.
 *
 * The fast path's transaction where the master's memory is known to count and
 * nothing else is asked, the acquire script elsewhere, a bare SET NX PX with
 * the guard off (docs/wire.md lists each form; docs/memory-guard.md,
 * "The fast path", says why the transaction keeps the guard); acquire.c
 * starts the round with what this builds.
 */
#include "kinds/acquire-private.h"
#include "kinds/memory.h"

#include <stdio.h>

/* The PASS script's answer {-4}: not the common case there (the key does
 * not hold the passing token, or the marker does not say `served`): the
 * acquire script goes instead, once. */
static bool pass_redo(rl_node *n, const rl_reply *r)
{
    (void)n;
    if (rl_reply_type(r) != RL_REPLY_ARRAY || rl_reply_elements(r) != 1)
        return false;
    const rl_reply *e = rl_reply_element(r, 0);
    return rl_reply_type(e) == RL_REPLY_INTEGER && rl_reply_integer(e) == -4;
}

/* A local hand-off for one lock, no fence: the PASS script where the
 * master's memory is known to count (as for the fast path), the acquire
 * script elsewhere and wherever PASS finds anything but the common case. */
static rl_fanout *acq_pass_command(rl_acquire *a, const rl_cmd *script, const rl_acquire_args *args)
{
    rl_op *op = &a->op;
    redlock_client *c = op->c;
    rl_cmd pass;
    rl_cmd_pass(&pass, &op->k, args);
    rl_fanout *f = rl_fanout_new2(c->nodes, script, &pass);
    if (!f)
        return NULL;
    for (uint32_t i = 0; i < c->n; i++)
        if (rl_node_fast(&c->nodes[i], args->window_ms, op->attempt_us))
            rl_fanout_use_alt(f, i);
    rl_fanout_set_redo(f, pass_redo);
    rl_fanout_set_late(f, rl_acq_on_late);
    return f;
}

/* This attempt's command, per master. Plain SET NX PX when nothing else is
 * asked (the restart guard off, no wait, one lock, no fence). With the guard
 * on (the default), the fast path where it may be taken: one lock, no fence,
 * no place in the queue asked, and a master whose memory is known to count
 * for a ttl this long, whose clock was read lately (rl_trust_fast): the fast
 * path's transaction (cmd.h, docs/wire.md). Every other master, and every
 * other acquire, gets the acquire script (the marker, the queue, the fence, a
 * set). A waiter takes its place in the queues from its second attempt on: an
 * uncontended waiter never does. */
rl_fanout *rl_acq_command(rl_acquire *a)
{
    rl_op *op = &a->op;
    redlock_client *c = op->c;
    rl_acquire_args args = {
        .token = a->att.token,
        .ttl_ms = a->w.ttl_ms,
        .fenced = a->w.flags & REDLOCK_FENCE,
        .queued = a->waiter.joined && (op->attempts > 1 || rl_acq_hot(a) || a->pass_from),
        .marked = c->cfg.restart_guard,
        .waiter = a->waiter.member,
        .ticket = a->waiter.ticket,
        .lease_ms = a->lease_ms,
        .window_ms = c->cfg.restart_guard ? rl_memory_window(c, a->w.ttl_ms) : 0,
        .prev = a->pass_from ? a->pass_token : NULL,
        .placed = a->in_queues,
    };
    a->in_queues |= args.queued;
    a->att.queued_now = args.queued;
    a->att.window_ms = args.window_ms;
    rl_cmd cmd;
    bool plain = !args.fenced && !args.queued && op->nres == 1 && !args.prev;
    if (plain && !args.marked) {
        rl_cmd_set(&cmd, &op->k, a->att.token, a->w.ttl_ms);
        return rl_fanout_new(c->nodes, &cmd);
    }
    rl_cmd_acquire(&cmd, &op->k, &args);
    if (args.prev && args.marked && !args.fenced && op->nres == 1)
        return acq_pass_command(a, &cmd, &args);
    if (!plain || !args.marked) {
        rl_fanout *f = rl_fanout_new(c->nodes, &cmd);
        if (f && args.marked)
            rl_fanout_set_late(f, rl_acq_on_late);
        return f;
    }
    for (uint32_t i = 0; i < c->n; i++)
        if (rl_node_fast(&c->nodes[i], args.window_ms, op->attempt_us))
            a->att.fast_mask |= 1u << i;
    rl_cmd fast;
    rl_cmd_acquire_fast(&fast, &op->k, a->att.token, a->w.ttl_ms);
    /* The script is copied in only if some master needs it: in the common
     * case every master takes the transaction. */
    rl_fanout *f = rl_fanout_trusted(c->nodes, c->n, a->att.fast_mask, &fast, &cmd, op->attempt_us,
                                     a->w.ttl_ms, c->cfg.drift_factor);
    if (f)
        rl_fanout_set_late(f, rl_acq_on_late); /* a late answer still tells the bound */
    return f;
}
