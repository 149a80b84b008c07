/* handoff.c - the local hand-off, the release's side: which waiter of this
 * client a release passes its lock to, and the parked waiters it starts.
 *
 * A pass is an ordinary attempt of the waiter that may also take keys over
 * from the passing token (script.c, ACQUIRE's ARGV[9]); why mutual exclusion,
 * fences and fairness hold: docs/waiting.md, "The local hand-off". The
 * acquire's side (parking, the pass's outcome): acquire-pass.c.
 */
#include "kinds/handoff.h"
#include "kinds/acquire-private.h"
#include "kinds/lock.h"

#include <string.h>

static bool same_keys(const rl_keyset *a, const rl_keyset *b)
{
    if (a->n != b->n)
        return false;
    for (uint32_t i = 0; i < a->n; i++)
        if (a->len[i] != b->len[i] || memcmp(a->v[i], b->v[i], a->len[i]) != 0)
            return false;
    return true;
}

/* The acquire a waiter is embedded in (acquire-private.h). */
static rl_acquire *waiter_acq(rl_waiter *w)
{
    return (rl_acquire *)(void *)((char *)w - offsetof(rl_acquire, waiter));
}

/* The waiter a release of @rel's keys passes to: the acquire of this
 * client for the same keys that started waiting first, not cancelled,
 * waiting in the masters' queues (only they tell whether another client
 * waits: with pubsub_wait off there is no bound to keep, so no pass). If
 * that one is in an attempt (which cannot take the keys over), nobody: a
 * younger waiter would overtake it, where the plain release hands the key
 * on in the queue's order (bench: contention-inproc's arrival order). */
static rl_acquire *handoff_waiter(redlock_client *c, const rl_op *rel)
{
    rl_acquire *best = NULL;
    for (rl_waiter *w = rl_wait_first(c); w; w = w->next) {
        rl_acquire *a = waiter_acq(w);
        if (a->op.done || a->cancelled || !same_keys(&a->op.k.locks, &rel->k.locks))
            continue;
        if (!best || a->waiter.ticket < best->waiter.ticket)
            best = a;
    }
    return best && best->phase == ACQ_WAITING && !best->pass_from ? best : NULL;
}

static uint32_t lock_run(const redlock_lock *lock)
{
    return lock->run ? lock->run : 1;
}

rl_op *rl_handoff_offer(redlock_client *c, redlock_lock *lock, rl_op *rel,
                        void (*end)(rl_op *rel, uint32_t taken, bool won))
{
    if (c->freeing || lock_run(lock) >= c->cfg.local_run_max)
        return NULL;
    rl_acquire *a = handoff_waiter(c, rel);
    if (!a)
        return NULL;
    a->pass_from = rel;
    a->pass_run = lock_run(lock);
    a->pass_end = end;
    memcpy(a->pass_token, lock->token, sizeof(a->pass_token));
    return &a->op;
}

void rl_handoff_start(rl_op *acq)
{
    rl_acq_attempt_now(ACQ(acq));
}

void rl_handoff_unpark(redlock_client *c, const rl_op *rel)
{
    for (rl_waiter *w = rl_wait_first(c), *next; w; w = next) {
        next = w->next; /* the attempt may end the acquire (no token, no memory) */
        rl_acquire *a = waiter_acq(w);
        if (!a->op.done && a->parked && a->phase == ACQ_WAITING &&
            same_keys(&a->op.k.locks, &rel->k.locks))
            rl_acq_attempt_now(a);
    }
}

void rl_handoff_cut(rl_op *acq)
{
    ACQ(acq)->pass_from = NULL;
}

/* A release that does not pass, while another acquire of this client
 * wants the same keys, prefers another client's waiter: the queue's head
 * may be that acquire (its ticket is old: it queued while this client
 * held), and handing it the key would stretch this client's run past
 * local_run_max one grant at a time. Without such an acquire the release
 * stays the plain one (its cheap common case, script.c), and with the
 * local hand-off off the queue's order is left alone. */
const char *rl_handoff_skip(redlock_client *c, const rl_op *rel)
{
    if (c->cfg.local_run_max < 2)
        return NULL;
    for (rl_waiter *w = rl_wait_first(c); w; w = w->next)
        if (!waiter_acq(w)->op.done && same_keys(&waiter_acq(w)->op.k.locks, &rel->k.locks))
            return rl_wait_channel(c);
    return NULL;
}
