/* acquire-queue.c - waiting: when it ends, when it polls, and the waiter's place in the queues.
 *
 * A wait ends at a deadline (redlock_acquire_with's, or redlock_acquire's
 * drawn from retry_count, which also ends after that many polls); wake-ups
 * never use it up. A waiter takes
 * its place in the masters' queues with its first attempt and leaves them
 * when it is done (docs/waiting.md, "Waiting in turn: the fair hand-off").
 */
#include "kinds/acquire-private.h"

#include <stdio.h>

/* Is the attempt that just failed the last one? */
bool rl_acq_last(const rl_acquire *a)
{
    if (a->cancelled)
        return true;
    if (a->by_polls && a->polls_left == 0)
        return true;
    return a->final || rl_now_us() >= a->deadline_us;
}

/* The next poll: after a retry delay, slowed by the waiter's rank, and
 * never past the deadline, whose own attempt is the last. */
void rl_acq_next_poll(rl_acquire *a)
{
    rl_op *op = &a->op;
    rl_monotime now = rl_now_us();
    uint64_t delay_us = (uint64_t)(a->w.delay_ms + rl_client_jitter(op->c, a->w.jitter_ms)) * 1000;
    /* A waiter at rank r of a queue (0 the head) polls every min(r, 8)
     * delays: releases wake the head, and a waiter's own turn comes with a
     * wake-up; the poll is the safety net for a lost one, or a head that
     * died (acquire-queue.c says what that costs). Polls then grow with
     * log(waiters), not with their number. A wait drawn from retry_count
     * too: its deadline is what its polls would take at their longest, and
     * its count still bounds the polls (acquire-queue.c). */
    if (a->att.rank != UINT32_MAX && a->att.rank > 1)
        delay_us *= a->att.rank < RL_SLOW_POLLS ? a->att.rank : RL_SLOW_POLLS;
    if (now + delay_us >= a->deadline_us) {
        /* The last poll is at the deadline itself; one more attempt then
         * (at once if the deadline passed since rl_acq_last looked). */
        delay_us = a->deadline_us > now ? a->deadline_us - now : 0;
        a->final = true;
    }
    a->poll_due_us = now + delay_us;
    rl_op_arm(op, (uint32_t)((delay_us + 999) / 1000));
}

/* When waiting ends: at the deadline of the wait asked for. redlock_acquire()'s
 * wait drawn from retry_count is a deadline too, retry_count polls at their
 * longest (retry_delay + jitter each), and ends after retry_count polls if
 * those come first: its polls slow down with the waiter's rank like any
 * deadline wait's (rl_acq_next_poll), and a count keeps bounding them. Wake-ups are
 * extra attempts and use none of it up. */
void rl_acq_set_wait(rl_acquire *a, const rl_wait_spec *w)
{
    a->deadline_us = UINT64_MAX;
    a->by_polls = w->from_retries;
    a->polls_left = w->max_polls;
    if (w->wait_ms != REDLOCK_WAIT_FOREVER)
        a->deadline_us = a->op.started_us + (uint64_t)w->wait_ms * 1000;
}

/* An acquire that may wait takes a place in the masters' queues from its
 * second attempt on (the first is the fast path's, acquire.c), with a ticket
 * of the moment it started: waiters are then served in the order they started
 * waiting (docs/waiting.md, "Waiting in turn: the fair hand-off"). How long a
 * reservation may wait for it (hand) and how long its place lasts without
 * news (lease) follow from its polling: the head's poll timer finds a
 * reservation whose wake-up was lost well within the hand-off window, and a
 * waiter refreshes its place well within its lease even at its slowest (rank
 * 8 and beyond: eight delays). A reservation cuts its waiter's lease to the
 * reservation's end (script.c, HAND_OVER), so a waiter that died is reserved
 * for once: it costs the next one at most a hand-off window plus that one's
 * poll, which is one delay for the waiter right behind the head (720 ms with
 * the defaults) and min(r, 8) delays for one that last saw itself at rank r
 * (the queue moved on since its last poll). */
void rl_acq_join_queue(rl_acquire *a)
{
    redlock_client *c = a->op.c;
    bool waits = a->w.wait_ms != 0 && (!a->by_polls || a->polls_left > 0);
    if (!waits || !c->cfg.pubsub_wait)
        return; /* one attempt, or polling only */
    uint64_t poll = (uint64_t)a->w.delay_ms + a->w.jitter_ms;
    uint64_t rtt = 2 * (uint64_t)c->cfg.node_timeout_ms;
    /* The lease outlives three of the slowest polls (a waiter far from
     * the head: acquire.c); the reservation, one of the head's. */
    uint64_t hand = poll + rtt + 20, lease = 3 * RL_SLOW_POLLS * poll + rtt + 100;
    a->lease_ms = (uint32_t)(lease < REDLOCK_TTL_MAX_MS ? lease : REDLOCK_TTL_MAX_MS);
    rl_wait_join(c, &a->waiter, (uint32_t)(hand < REDLOCK_TTL_MAX_MS ? hand : REDLOCK_TTL_MAX_MS));
}

/* A waiter that is done leaves the masters' queues: where it did not get
 * the lock (a success removed it where it did), so no release hands a
 * reservation to a waiter that is gone; a reservation already made for it
 * goes on to the next waiter. Sent and not waited for: at worst its place
 * lapses with its lease. @reserved: RL_WAITER_MAX + 1 bytes, for @cmd. */
static void leave_cmd(rl_acquire *a, rl_cmd *cmd, char *reserved)
{
    snprintf(reserved, RL_WAITER_MAX + 1, "\1%s", a->waiter.member);
    rl_cmd_release(cmd, &a->op.k, reserved, true, &(rl_place){ a->waiter.member, 0, 0 });
}

void rl_acq_leave_queues(rl_acquire *a)
{
    rl_op *op = &a->op;
    redlock_client *c = op->c;
    uint32_t mask = 0;
    for (uint32_t i = 0; i < c->n; i++)
        if (op->status != 0 || op->out.votes[i].kind != REDLOCK_VOTE_OK)
            mask |= 1u << i;
    if (op->status == 0)
        mask &= ~a->att.leave_later;
    char reserved[RL_WAITER_MAX + 1];
    rl_cmd cmd;
    leave_cmd(a, &cmd, reserved);
    /* Also while the client is being freed: the shutdown writes it out. */
    rl_fanout_fire(c->nodes, c->n, &cmd, mask);
}

/* Did a queued attempt's answer leave the waiter in that master's queue?
 * Everything but a grant ({1, ...}: the script dequeued it) may have. */
static bool leave_needed(const rl_reply *r)
{
    const rl_reply *e = rl_reply_type(r) == RL_REPLY_ARRAY && rl_reply_elements(r) > 0
                            ? rl_reply_element(r, 0)
                            : NULL;
    return !e || rl_reply_type(e) != RL_REPLY_INTEGER || rl_reply_integer(e) != 1;
}

/* A waiter that won before every master answered: those masters run its
 * attempt all the same (queued on their connections before anything else),
 * and one that grants it dequeues the waiter there. Under contention they
 * nearly all do (the key was reserved for this waiter everywhere), so the
 * leave goes to one only when its answer, when it comes, is not a grant;
 * a master that never answers has lost the connection, and the place
 * lapses with its lease, as a leave sent there would have been lost. */
void rl_acq_leave_later(rl_acquire *a)
{
    rl_op *op = &a->op;
    redlock_client *c = op->c;
    uint32_t pending = 0;
    for (uint32_t i = 0; i < c->n; i++)
        if (op->out.votes[i].kind == REDLOCK_VOTE_PENDING)
            pending |= 1u << i;
    if (!pending || !a->waiter.joined || !a->in_queues || !op->round)
        return;
    char reserved[RL_WAITER_MAX + 1];
    rl_cmd cmd;
    leave_cmd(a, &cmd, reserved);
    if (rl_fanout_set_followup(op->round, pending, &cmd, leave_needed) == 0)
        a->att.leave_later = pending;
}

/* ---- resources found held lately ---------------------------------------------- */

/* A waiter's first attempt is the fast path (no place in the queues, so
 * that an uncontended lock writes none); when it meets a holder, the next
 * attempt takes the place. Under steady contention that is a round lost
 * per acquire: a resource found held within the last second is "hot", and
 * a waiter for it queues from its first attempt. Remembered per client, by
 * a hash of its first lock key in one of RL_HOT_SLOTS slots: a collision
 * only costs a cold resource one queued attempt. */
static struct rl_hot *hot_slot(redlock_client *c, const rl_keys *k, uint64_t *hash)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < k->locks.len[0]; i++)
        h = (h ^ (unsigned char)k->locks.v[0][i]) * 1099511628211ull;
    *hash = h;
    return &c->hot[h % RL_HOT_SLOTS];
}

bool rl_acq_hot(rl_acquire *a)
{
    uint64_t h;
    struct rl_hot *s = hot_slot(a->op.c, &a->op.k, &h);
    return s->hash == h && rl_now_us() < s->until;
}

void rl_acq_found_held(rl_acquire *a)
{
    uint64_t h;
    struct rl_hot *s = hot_slot(a->op.c, &a->op.k, &h);
    s->hash = h;
    s->until = rl_now_us() + (uint64_t)RL_HOT_MS * 1000;
}
