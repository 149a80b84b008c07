/* memory.c - the memory guard, the client's side: the window a master that
 * forgot sits out, measured from the fleet (settle), and raised when a
 * longer ttl turns up.
 *
 * A master that lost its data, or whose data came from another process (a
 * restart that reloaded a snapshot, a promoted replica, a restore), is
 * reborn: its marker is pending and it votes for nobody (script.c, CHECK
 * and HEARD). The danger is a lease it granted before and no longer knows;
 * that lease lives on the other masters of its quorum. So any client that
 * sees a master pending asks every master how long the leases it granted
 * while trusted can still live (LEASES), and gives the reborn master that
 * long (SETTLE), measured on its own clock from the moment the settle runs.
 *
 * Why every master, and not a quorum: a live lease is on every master of
 * its last quorum that has not been reborn since (a master reborn since
 * then was kept out, by its own settle, until that lease ended, and an
 * extension cannot reach a master that lost the key). So when fewer than a
 * quorum of masters are reborn-and-not-yet-counting, each live lease is
 * still known to a master that counts; but it may be known to only one of
 * them. The window is "tight" (measured) only when every master answered
 * and fewer than a quorum of them do not count. Otherwise nobody can
 * measure it, and the window is the longest ttl the fleet has heard of
 * (markers' maxttl, this client's own ttls, restart_guard_ms): the bound
 * that held before leases were measured, raised later as clients learn of
 * longer ttls (raise, below). NOTES.md §4 has the argument.
 *
 * A settle round only counts reports that ran after the rebirth it
 * settles: the round starts after the pending state was seen, and a
 * master seen pending during a round waits for the next one. SETTLE names
 * the run_id seen pending, so it cannot settle a later rebirth.
 */
#include "memory.h"
#include "fanout.h"
#include "script.h"
#include "types.h"

#include <event2/event.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rl_settle {
    redlock_client *c;
    rl_fanout *f;                      /* this round's LEASES, NULL between rounds */
    struct event *timer;               /* the round's deadline */
    uint32_t targets;                  /* pending masters this round settles */
    uint32_t next;                     /* seen pending during this round: the next one */
    char run[REDLOCK_MAX_MASTERS][41]; /* each target's run_id when seen pending */
    char next_run[REDLOCK_MAX_MASTERS][41];
    uint32_t waiting;   /* masters not answered yet */
    uint32_t answered;  /* with a well-formed report */
    uint32_t counting;  /* of those, masters whose votes count */
    int64_t longest_ms; /* the longest live lease they reported */
    uint32_t maxttl_ms; /* the longest ttl any marker reported */
};

static uint32_t max2(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

uint32_t rl_memory_window(redlock_client *c, uint32_t ttl_ms)
{
    uint32_t w = max2(max2(ttl_ms, c->max_ttl_ms), max2(c->fleet_ttl_ms, c->cfg.restart_guard_ms));
    w = max2(w, 1);
    c->asked_window_ms = max2(c->asked_window_ms, w);
    return w;
}

/* The raise script to the masters in @mask. Sent after whatever is already
 * queued on each connection, a settle included. */
static void raise_on(redlock_client *c, uint32_t mask, uint32_t window_ms)
{
    rl_cmd cmd;
    rl_cmd_raise(&cmd, window_ms);
    rl_fanout_fire(c->nodes, c->n, &cmd, mask);
}

void rl_memory_learned(redlock_client *c, uint32_t maxttl_ms)
{
    c->fleet_ttl_ms = max2(c->fleet_ttl_ms, maxttl_ms);
    /* Nothing settled from the bound yet, or nothing shorter than this. */
    if (maxttl_ms <= c->asked_window_ms || c->asked_window_ms == 0 || c->freeing)
        return;
    c->asked_window_ms = maxttl_ms;
    /* A raise lengthens only windows set from the bound (not tight ones),
     * still running. A master this cannot reach now tells us its window
     * when it answers again: rl_memory_marker() raises it then. */
    raise_on(c, (1u << c->n) - 1, maxttl_ms);
}

/* ---- settle: a pending master's window, measured from the fleet --------- */

static void settle_start(redlock_client *c);

static void settle_end_round(rl_settle *s)
{
    if (s->f)
        rl_fanout_detach(s->f);
    s->f = NULL;
    evtimer_del(s->timer);
}

/* Every master answered, or the deadline passed: give each target its
 * window, then settle whoever turned pending meanwhile. */
static void settle_decide(rl_settle *s)
{
    redlock_client *c = s->c;
    settle_end_round(s);
    uint32_t all = (1u << c->n) - 1;
    bool tight = s->answered == all && (uint32_t)__builtin_popcount(s->counting) + c->quorum > c->n;
    uint32_t window;
    if (tight) {
        /* Remaining time on another master's clock, then on this one's:
         * two rate allowances, and Redis' ms granularity. */
        double d = c->cfg.drift_factor;
        window = (uint32_t)(s->longest_ms + 2 * (int64_t)ceil((double)s->longest_ms * d) + 2);
    } else if (max2(max2(s->maxttl_ms, c->max_ttl_ms),
                    max2(c->fleet_ttl_ms, c->cfg.restart_guard_ms)) == 0) {
        /* Nobody here knows any ttl (a client that has not asked for a
         * lock yet, a fleet that forgot everything): no bound to give. The
         * masters stay pending until a client that uses a ttl settles them. */
        s->targets = 0;
        window = 0;
    } else {
        rl_memory_learned(c, s->maxttl_ms);
        window = rl_memory_window(c, 0);
    }
    for (uint32_t i = 0; i < c->n; i++) {
        if (!(s->targets & (1u << i)))
            continue;
        rl_cmd cmd;
        rl_cmd_settle(&cmd, s->run[i], window, tight);
        rl_fanout_fire(c->nodes, c->n, &cmd, 1u << i);
        rl_log(&c->cfg, REDLOCK_LOG_INFO, "master %u (%s): sits out %u ms (%s)", i,
               c->nodes[i].addr.name, window,
               tight ? "the longest lease live on the fleet"
                     : "the longest ttl in use: the fleet's leases could not all be measured");
    }
    s->targets = 0;
    if (s->next && !c->freeing)
        settle_start(c);
}

static void settle_on_report(void *owner, rl_fanout *f, uint32_t idx, const rl_reply *r, int err,
                             const char *why)
{
    (void)f;
    (void)err;
    (void)why;
    rl_settle *s = owner;
    s->waiting &= ~(1u << idx);
    long long v[3];
    bool ok = r && rl_reply_type(r) == RL_REPLY_ARRAY && rl_reply_elements(r) == 3;
    for (size_t i = 0; ok && i < 3; i++) {
        const rl_reply *e = rl_reply_element(r, i);
        ok = rl_reply_type(e) == RL_REPLY_INTEGER;
        if (ok)
            v[i] = rl_reply_integer(e);
    }
    if (ok && v[0] >= 0 && v[0] <= 1 && v[1] >= 0 && v[1] <= REDLOCK_TTL_MAX_MS && v[2] >= 0 &&
        v[2] <= REDLOCK_TTL_MAX_MS) {
        s->answered |= 1u << idx;
        if (v[0] == 1)
            s->counting |= 1u << idx;
        if (v[1] > s->longest_ms)
            s->longest_ms = v[1];
        s->maxttl_ms = max2(s->maxttl_ms, (uint32_t)v[2]);
    }
    if (!s->waiting)
        settle_decide(s);
}

static void settle_on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    settle_decide(arg);
}

static void settle_start(redlock_client *c)
{
    rl_settle *s = c->settle;
    s->targets = s->next;
    memcpy(s->run, s->next_run, sizeof(s->run));
    s->next = 0;
    s->answered = s->counting = 0;
    s->longest_ms = 0;
    s->maxttl_ms = 0;
    rl_cmd cmd;
    rl_cmd_leases(&cmd);
    s->f = rl_fanout_new(c->nodes, &cmd);
    if (!s->f) {
        s->targets = 0; /* out of memory: the next probe sees them pending again */
        return;
    }
    rl_fanout_set_owner(s->f, settle_on_report, s);
    s->waiting = (1u << c->n) - 1;
    /* Two node timeouts: a master slower than that is as good as absent,
     * and the window falls back to the longest ttl in use. */
    struct timeval tv = { .tv_sec = 2 * c->cfg.node_timeout_ms / 1000,
                          .tv_usec = 2 * c->cfg.node_timeout_ms % 1000 * 1000 };
    evtimer_add(s->timer, &tv);
    for (uint32_t i = 0; i < c->n && s->f; i++) {
        if (rl_fanout_send(s->f, i, false) != 0) {
            s->waiting &= ~(1u << i); /* down: no report */
            if (!s->waiting)
                settle_decide(s);
        }
    }
}

/* Master @idx said it is pending (its run_id as this connection knows it). */
static void settle_pending(redlock_client *c, uint32_t idx)
{
    const rl_node *n = &c->nodes[idx];
    if (!c->cfg.restart_guard || c->freeing || !n->trust.run_id[0])
        return;
    if (!c->settle) {
        c->settle = calloc(1, sizeof(*c->settle));
        if (!c->settle)
            return;
        c->settle->c = c;
        c->settle->timer = evtimer_new(c->base, settle_on_timer, c->settle);
        if (!c->settle->timer) {
            free(c->settle);
            c->settle = NULL;
            return;
        }
    }
    rl_settle *s = c->settle;
    s->next |= 1u << idx;
    memcpy(s->next_run[idx], n->trust.run_id, sizeof(s->next_run[idx]));
    if (!s->f)
        settle_start(c);
}

void rl_memory_free(redlock_client *c)
{
    rl_settle *s = c->settle;
    if (!s)
        return;
    settle_end_round(s);
    event_free(s->timer);
    free(s);
    c->settle = NULL;
}

void rl_memory_marker(redlock_client *c, uint32_t idx, const rl_marker *m)
{
    rl_memory_learned(c, m->maxttl_ms);
    if (m->state == RL_MEM_PENDING) {
        settle_pending(c, idx);
        return;
    }
    if (!c->cfg.restart_guard || c->freeing || m->state != RL_MEM_YOUNG ||
        m->window_ms >= c->fleet_ttl_ms)
        return;
    raise_on(c, 1u << idx, c->fleet_ttl_ms);
}
