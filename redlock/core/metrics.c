/* metrics.c - counting into a client's rl_metrics (metrics.h).
 *
 * The points that count are the ones that already report: the delivery of
 * every op (deliver.c deliver_one, where the op hook runs), the event hook
 * (client.c) and the watchdog's loss (watchdog.c). The writer is
 * api/metrics.c.
 */
#include "core/metrics.h"

/* A code, vote kind or event added to redlock.h needs its cell here. */
_Static_assert(RL_MET_STATUSES == 1 - REDLOCK_ECANCELED, "RL_MET_STATUSES: one per REDLOCK_E*");
_Static_assert(RL_MET_VOTES == REDLOCK_VOTE_EXCLUDED + 1, "RL_MET_VOTES: one per vote kind");
_Static_assert(RL_MET_EVENTS == REDLOCK_EVENT_ACL_CHANNEL + 1, "RL_MET_EVENTS: one per event");

/* 1 ms to 30 min: an acquire's wait and a lease's hold share one scale. */
const uint64_t rl_met_bounds_us[RL_MET_BUCKETS - 1] = {
    1000,    5000,    10000,   25000,    50000,    100000,   250000,    500000,
    1000000, 2500000, 5000000, 10000000, 30000000, 60000000, 300000000, 1800000000,
};

void rl_met_inc(uint64_t *cell)
{
    __atomic_fetch_add(cell, 1, __ATOMIC_RELAXED);
}

uint64_t rl_met_get(const uint64_t *cell)
{
    return __atomic_load_n(cell, __ATOMIC_RELAXED);
}

void rl_met_status(uint64_t *by_status, int code)
{
    int i = -code;
    if (i >= 0 && i < RL_MET_STATUSES)
        rl_met_inc(&by_status[i]);
}

void rl_met_observe(rl_hist *h, uint64_t us)
{
    int b = 0;
    while (b < RL_MET_BUCKETS - 1 && us > rl_met_bounds_us[b])
        b++;
    rl_met_inc(&h->bucket[b]);
    __atomic_fetch_add(&h->sum_us, us, __ATOMIC_RELAXED);
}

void rl_met_votes(rl_metrics *m, const redlock_vote *votes, uint32_t n, bool count)
{
    for (uint32_t i = 0; i < n && i < REDLOCK_MAX_MASTERS; i++) {
        const redlock_vote *v = &votes[i];
        rl_met_master *mm = &m->master[i];
        if (v->kind <= REDLOCK_VOTE_PENDING || v->kind >= RL_MET_VOTES)
            continue; /* not asked, or decided without it: says nothing */
        if (count) {
            rl_met_inc(&mm->votes[v->kind]);
            if (v->kind == REDLOCK_VOTE_EXCLUDED)
                rl_met_status(mm->sat_out, v->err);
        }
        __atomic_store_n(&mm->up, (uint64_t)v->kind + 1, __ATOMIC_RELAXED);
    }
}
