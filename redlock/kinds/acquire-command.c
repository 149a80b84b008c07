/* acquire-command.c - what one acquire attempt asks, and its round's fanout.
 *
 * The attempt's arguments come from the acquire's state (its token, its
 * wait, a pass); the form each master gets is the wire's plan
 * (wire/acquire.c; docs/wire.md lists each form, docs/memory-guard.md "The
 * fast path" says why the transaction keeps the guard); acquire.c starts
 * the round with the fanout built here.
 */
#include "kinds/acquire-private.h"
#include "kinds/memory.h"
#include "wire/acquire.h"

#include <stdio.h>

/* The round's fanout from its plan: only the forms some master needs are
 * copied in; PASS always carries the script, which its redo sends. */
static rl_fanout *acq_fanout(redlock_client *c, const rl_acquire_plan *p)
{
    uint32_t all = (1u << c->n) - 1;
    rl_fanout *f;
    if (p->kind == RL_ALT_NONE || (p->kind == RL_ALT_FAST && !p->alt_mask))
        f = rl_fanout_new(c->nodes, &p->main);
    else if (p->kind == RL_ALT_FAST && p->alt_mask == all)
        f = rl_fanout_new(c->nodes, &p->alt);
    else
        f = rl_fanout_new2(c->nodes, &p->main, &p->alt);
    for (uint32_t i = 0; f && p->kind != RL_ALT_NONE && i < c->n; i++) {
        if (!(p->alt_mask & (1u << i)))
            continue;
        if (p->alt_mask != all || p->kind == RL_ALT_PASS)
            rl_fanout_use_alt(f, i);
        if (p->kind == RL_ALT_FAST)
            rl_fanout_set_node_arg(f, i, p->end[i], p->end_len[i]);
    }
    if (f && p->kind == RL_ALT_PASS)
        rl_fanout_set_redo(f, rl_wire_pass_redo);
    if (f && p->late)
        rl_fanout_set_late(f, rl_acq_on_late); /* a late answer still tells the bound */
    return f;
}

/* This attempt's round. Plain SET NX PX when nothing else is asked (the
 * restart guard off, no wait, one lock, no fence); with the guard on, the
 * fast path where it may be taken and the acquire script elsewhere (the
 * plan, wire/acquire.c). A waiter takes its place in the queues from its
 * second attempt on: an uncontended waiter never does. */
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
    rl_acquire_plan plan;
    rl_wire_acquire_plan(&plan, c->nodes, c->n,
                         &(rl_acquire_ask){ &op->k, op->nres, &args, op->attempt_us,
                                            c->cfg.drift_factor });
    if (plan.kind == RL_ALT_FAST)
        a->att.fast_mask = plan.alt_mask;
    return acq_fanout(c, &plan);
}
