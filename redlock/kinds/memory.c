/* memory.c - the memory guard, the client's side: the window a master that
 * forgot sits out, measured from the fleet (settle), and raised when a
 * longer ttl turns up.
 *
 * Seeing a master pending, asks every master how long its leases can live
 * (LEASES) and gives it that long (SETTLE). Why: docs/memory-guard.md, "How
 * long a reborn master sits out", "The window: measured, or the fleet's bound".
 */
#include "kinds/memory.h"
#include "core/fanout.h"
#include "base/script.h"
#include "core/types.h"
#include "wire/guard.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rl_settle {
    redlock_client *c;
    rl_fanout *f;          /* this round's LEASES, NULL between rounds */
    rl_timer timer;        /* the round's deadline, or the wait before it */
    bool waiting_ripe;     /* the timer is the wait before the round */
    uint32_t targets;      /* pending masters this round settles */
    uint32_t next;         /* seen pending since: the next round's */
    rl_monotime next_ripe; /* the next round may measure from then on */
    char birth[REDLOCK_MAX_MASTERS][RL_TOKEN_LEN + 1]; /* each target's rebirth */
    char next_birth[REDLOCK_MAX_MASTERS][RL_TOKEN_LEN + 1];
    uint32_t pending;   /* masters not answered yet */
    uint32_t answered;  /* with a well-formed report */
    uint32_t counting;  /* of those, masters whose votes count */
    int64_t longest_ms; /* the longest live lease they reported */
    uint32_t maxttl_ms; /* the longest ttl any marker reported */
    uint64_t fence;     /* the largest fence counter any master reported */
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
    s->waiting_ripe = false;
    rl_timer_stop(&s->timer);
}

/* How long after a master was seen pending its fleet may be measured:
 * RL_QUORUM_MAX_MS on the clock of whoever started an attempt, on ours
 * (two rate allowances), and a ms of rounding. */
static uint64_t settle_wait_us(const redlock_client *c)
{
    double d = c->cfg.drift_factor;
    return (uint64_t)ceil(RL_QUORUM_MAX_MS * 1000.0 * (1.0 + d) / (1.0 - d)) + 1000;
}

static void settle_arm(rl_settle *s, uint64_t us)
{
    rl_timer_start_us(&s->timer, us);
}

/* The next round, once it may measure: now, or when the wait ends. */
static void settle_next(redlock_client *c)
{
    rl_settle *s = c->settle;
    if (s->f || s->waiting_ripe || !s->next || c->freeing)
        return;
    rl_monotime now = rl_now_us();
    if (now < s->next_ripe) {
        s->waiting_ripe = true;
        settle_arm(s, s->next_ripe - now);
        return;
    }
    settle_start(c);
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
        rl_cmd_settle(&cmd, s->birth[i], window, tight, s->fence);
        rl_fanout_fire(c->nodes, c->n, &cmd, 1u << i);
        rl_log(&c->cfg, REDLOCK_LOG_INFO, "master %u (%s): sits out %u ms (%s)", i,
               c->nodes[i].addr.name, window,
               tight ? "the longest lease live on the fleet"
                     : "the longest ttl in use: the fleet's leases could not all be measured");
    }
    s->targets = 0;
    settle_next(c);
}

static void settle_on_report(void *owner, rl_fanout *f, uint32_t idx, const rl_reply *r, int err,
                             const char *why)
{
    (void)f;
    (void)err;
    (void)why;
    rl_settle *s = owner;
    s->pending &= ~(1u << idx);
    rl_leases l;
    if (rl_wire_leases_read(&l, r)) {
        s->answered |= 1u << idx;
        if (l.counts)
            s->counting |= 1u << idx;
        if (l.left_ms > s->longest_ms)
            s->longest_ms = l.left_ms;
        s->maxttl_ms = max2(s->maxttl_ms, l.maxttl_ms);
        if (l.fence > s->fence)
            s->fence = l.fence;
    }
    if (!s->pending)
        settle_decide(s);
}

static void settle_on_timer(void *arg)
{
    rl_settle *s = arg;
    if (s->waiting_ripe) {
        /* Through settle_next, which reads the clock again: a loop (as
         * libevent) may schedule from the time it cached when it woke, so
         * the timer may fire a little early (model/trace-check.py saw 1 ms). */
        s->waiting_ripe = false;
        settle_next(s->c);
        return;
    }
    settle_decide(s);
}

static void settle_start(redlock_client *c)
{
    rl_settle *s = c->settle;
    s->targets = s->next;
    memcpy(s->birth, s->next_birth, sizeof(s->birth));
    s->next = 0;
    s->answered = s->counting = 0;
    s->longest_ms = 0;
    s->maxttl_ms = 0;
    s->fence = 0;
    rl_cmd cmd;
    rl_cmd_leases(&cmd);
    s->f = rl_fanout_new(c->nodes, &cmd);
    if (!s->f) {
        s->targets = 0; /* out of memory: the next probe sees them pending again */
        return;
    }
    rl_fanout_set_owner(s->f, settle_on_report, s);
    s->pending = (1u << c->n) - 1;
    /* Two node timeouts: a master slower than that is as good as absent,
     * and the window falls back to the longest ttl in use. */
    settle_arm(s, 2000ull * c->cfg.node_timeout_ms);
    for (uint32_t i = 0; i < c->n && s->f; i++) {
        if (rl_fanout_send(s->f, i, false) != 0) {
            s->pending &= ~(1u << i); /* down: no report */
            if (!s->pending)
                settle_decide(s);
        }
    }
}

/* Master @idx said it is pending, naming its rebirth (n->trust.birth). */
static void settle_pending(redlock_client *c, uint32_t idx)
{
    rl_node *n = &c->nodes[idx];
    if (!c->cfg.restart_guard || c->freeing)
        return;
    if (!n->trust.birth[0]) {
        /* Not named in a form a settle can name back: CHECK names it. */
        rl_node_recheck(n);
        return;
    }
    if (!c->settle) {
        c->settle = calloc(1, sizeof(*c->settle));
        if (!c->settle)
            return;
        c->settle->c = c;
        if (rl_timer_init(&c->settle->timer, &c->loop, settle_on_timer, c->settle) != 0) {
            free(c->settle);
            c->settle = NULL;
            return;
        }
    }
    rl_settle *s = c->settle;
    uint32_t bit = 1u << idx;
    if ((s->next & bit) && strcmp(s->next_birth[idx], n->trust.birth) == 0)
        return; /* seen already: its wait runs */
    if (s->f && (s->targets & bit) && strcmp(s->birth[idx], n->trust.birth) == 0)
        return; /* this round settles it */
    /* The wait runs from the rebirth: what the master says has passed
     * since (its clock, perhaps fast; ours, perhaps slow) counts. A master
     * reborn long ago, by a client that did not stay to settle it, is
     * settled at once. */
    rl_monotime now = rl_now_us();
    double d = c->cfg.drift_factor;
    uint64_t since = now > n->trust.born_us ? now - n->trust.born_us : 0;
    uint64_t credit = (uint64_t)((double)since * (1.0 - d) / (1.0 + d));
    uint64_t wait = settle_wait_us(c);
    rl_monotime ripe = now + (credit < wait ? wait - credit : 0);
    if (!s->next || ripe > s->next_ripe) {
        s->next_ripe = ripe;
        /* One round measures every master seen pending: a wait already
         * running for others must now last until this one's ends too
         * (found by model/trace-check.py: a round began 81 ms early). */
        if (s->waiting_ripe)
            settle_arm(s, ripe - now);
    }
    s->next |= bit;
    memcpy(s->next_birth[idx], n->trust.birth, sizeof(s->next_birth[idx]));
    settle_next(c);
}

void rl_memory_free(redlock_client *c)
{
    rl_settle *s = c->settle;
    if (!s)
        return;
    settle_end_round(s);
    rl_timer_fini(&s->timer);
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
