/* metrics.h - a client's counters and histograms, for redlock_metrics_write().
 *
 * Written only on the client's loop thread, read by any thread: every cell
 * is a uint64_t touched with relaxed atomics (a blocking client's service
 * thread scrapes while its I/O thread counts). Fixed size, in the client:
 * counting allocates nothing and sends nothing (docs/operators.md).
 */
#ifndef REDLOCK_METRICS_H
#define REDLOCK_METRICS_H

#include "base/common.h"

/* Statuses by -code: 0 (OK) to -REDLOCK_ECANCELED. */
#define RL_MET_STATUSES 22
/* Vote kinds: enum redlock_vote_kind, REDLOCK_VOTE_NONE to _EXCLUDED. */
#define RL_MET_VOTES 9
/* Events: enum redlock_event, 1 to REDLOCK_EVENT_ACL_CHANNEL. */
#define RL_MET_EVENTS 5
/* Histogram buckets, upper bounds in µs (the last is +Inf). */
#define RL_MET_BUCKETS 17

typedef struct rl_hist {
    uint64_t bucket[RL_MET_BUCKETS]; /* not cumulative: the writer adds up */
    uint64_t sum_us;
} rl_hist;

typedef struct rl_met_master {
    uint64_t votes[RL_MET_VOTES];      /* deciding attempts' votes, by kind */
    uint64_t sat_out[RL_MET_STATUSES]; /* EXCLUDED votes, by -code (the cause) */
    uint64_t events[RL_MET_EVENTS];    /* event hook's news, by kind */
    uint64_t excluded_events;          /* of those, with status EUNTRUSTED */
    uint64_t up;                       /* 1 + last vote kind (0: no vote yet) */
} rl_met_master;

typedef struct rl_metrics {
    uint64_t acquires[RL_MET_STATUSES];
    uint64_t releases[RL_MET_STATUSES];
    uint64_t extends[RL_MET_STATUSES];
    uint64_t lost[RL_MET_STATUSES]; /* watchdog losses, by status */
    uint64_t handoffs;              /* local hand-offs that granted */
    uint64_t handoffs_failed;       /* ... whose attempt lost: the release went out */
    rl_hist wait;                   /* acquire: call to decision */
    rl_hist hold;                   /* grant to release's decision */
    rl_hist lost_left;              /* validity left when a lease was lost */
    rl_met_master master[REDLOCK_MAX_MASTERS];
} rl_metrics;

extern const uint64_t rl_met_bounds_us[RL_MET_BUCKETS - 1];

/* Loop thread only: add one. */
void rl_met_inc(uint64_t *cell);
/* Loop thread only: count @code (0 or REDLOCK_E*) in @by_status. */
void rl_met_status(uint64_t *by_status, int code);
/* Loop thread only: one observation of @us into @h. */
void rl_met_observe(rl_hist *h, uint64_t us);
/* Loop thread only: the votes of a deciding attempt (@n masters): each
 * master's last word (up or not), and with @count its vote and sat-out
 * counters (a ping's answers say a master is up, but are no votes). */
void rl_met_votes(rl_metrics *m, const redlock_vote *votes, uint32_t n, bool count);
/* Any thread: read one cell. */
uint64_t rl_met_get(const uint64_t *cell);

#endif
