/* deliver.c - delivery: finished ops from the client's queue to their callbacks.
 *
 * rl_op_finish (op.c) queues an op and arms the client's delivery timer;
 * here the queue runs, in order: the metrics, the op hook, the completion,
 * then the op goes back to op.c's cache. Above op.c, which never calls in
 * here. The rule for when a callback runs: docs/threads.md, first point.
 */
#include "core/deliver.h"
#include "core/op.h"

static void op_unlink(rl_op *op)
{
    redlock_client *c = op->c;
    if (op->prev)
        op->prev->next = op->next;
    else
        c->ops = op->next;
    if (op->next)
        op->next->prev = op->prev;
    op->prev = op->next = NULL;
}

static rl_op *done_pop(redlock_client *c)
{
    rl_op *op = c->done_head;
    if (op) {
        c->done_head = op->done_next;
        if (!c->done_head)
            c->done_tail = NULL;
    }
    return op;
}

/* What the op adds to the client's metrics (metrics.h): acquires, releases
 * and extends by status, the acquire's wait, the lease's hold, and each
 * master's vote in the deciding attempt. */
static void count_op(rl_op *op, uint64_t waited_us)
{
    rl_metrics *m = &op->c->metrics;
    switch (op->ops->kind) {
    case REDLOCK_OP_ACQUIRE:
        rl_met_status(m->acquires, op->status);
        rl_met_observe(&m->wait, waited_us);
        break;
    case REDLOCK_OP_RELEASE:
        rl_met_status(m->releases, op->status);
        if (op->lock && op->lock->granted_us) {
            rl_monotime now = rl_now_us();
            rl_met_observe(&m->hold, now > op->lock->granted_us ? now - op->lock->granted_us : 0);
        }
        break;
    case REDLOCK_OP_EXTEND: rl_met_status(m->extends, op->status); break;
    case REDLOCK_OP_PING:
        rl_met_votes(m, op->out.votes, op->c->n, false); /* up or not; no votes */
        return;
    default: return; /* status, declare: no votes of a lock */
    }
    rl_met_votes(m, op->out.votes, op->c->n, true);
}

static void deliver_one(rl_op *op)
{
    redlock_client *c = op->c;
    op_unlink(op);
    uint64_t waited_us = rl_now_us() - op->started_us;
    count_op(op, waited_us);
    if (c->cfg.op_fn) {
        redlock_op_info info = {
            .kind = op->ops->kind,
            .status = op->status,
            .attempts = op->attempts,
            .waited_us = waited_us,
            .elapsed_us = op->out.elapsed_us,
            .resource = op->nres ? op->k.locks.v[0] + c->prefix_len : NULL,
            .resource_len = op->nres ? op->k.locks.len[0] - c->prefix_len : 0,
            .outcome = &op->out,
        };
        c->cfg.op_fn(c, op->status, &info, &op->err, c->cfg.op_arg);
    }
    if (op->ops->deliver)
        op->ops->deliver(op);
    else
        op->cb(c, op->status, op->lock, &op->out, &op->err, op->arg);
    rl_op_free(op);
}

/* The delivery event: the ops queued when it fired, in order. Ops that
 * finish inside these callbacks wait for a later pass, so a caller that
 * retries from its failure callback cannot keep the loop from its sockets. */
static void on_deliver(void *arg)
{
    redlock_client *c = arg;
    rl_op *last = c->done_tail;
    rl_client_enter(c);
    rl_deliver_depth++;
    while (c->done_head) {
        rl_op *op = done_pop(c);
        deliver_one(op);
        if (op == last)
            break;
    }
    rl_deliver_depth--;
    if (c->done_head && !rl_timer_armed(&c->deliver))
        rl_timer_start(&c->deliver, RL_DELIVER_LATER_MS);
    rl_client_leave(c);
}

int rl_ops_init(redlock_client *c)
{
    return rl_timer_init(&c->deliver, &c->loop, on_deliver, c);
}

void rl_ops_shutdown(redlock_client *c)
{
    /* First as a cancel: an acquire with SETs in flight queues the release
     * of its token on every master the SET may have reached (the sockets
     * are flushed before they close), instead of leaving a lock nobody
     * holds to expire. What still waits for an answer then ends here. */
    for (rl_op *op = c->ops; op; op = op->next) {
        if (!op->done) {
            rl_seterr(&op->err, REDLOCK_ESHUTDOWN, -1,
                      "client freed while the operation was in flight");
            rl_op_cancel(op, REDLOCK_ESHUTDOWN);
        }
    }
    for (;;) {
        for (rl_op *op = c->ops; op; op = op->next)
            if (!op->done)
                rl_op_finish(op, REDLOCK_ESHUTDOWN); /* its message: the pass above */
        rl_op *op = done_pop(c);
        if (!op)
            break;
        deliver_one(op);
    }
}

void rl_ops_free(redlock_client *c)
{
    rl_timer_fini(&c->deliver);
    rl_op_cache_free(c);
}
