/* trust.h - may a master's vote count now? The facts, and the rule.
 *
 * Pure code, no I/O: node.c and probe.c record what masters said (INFO,
 * CONFIG, TIME, the memory marker), the kinds ask before they count an OK.
 * Excluded here: a clock that misbehaves (EXCLUDE) or a master that may
 * evict lock keys; whether it remembers is the acquire script's check. Why:
 * docs/safety.md, "Assumptions (the timing model)"; docs/memory-guard.md.
 */
#ifndef REDLOCK_TRUST_H
#define REDLOCK_TRUST_H

#include "base/common.h"
#include "monitor.h"

/* What a master said of its memory marker (the CHECK and acquire scripts,
 * script.c). */
enum rl_mem_state { RL_MEM_COUNTS, RL_MEM_YOUNG, RL_MEM_PENDING };
/* MOVED: a client reached the master at a new address of its name (the CHECK
 * said so): the server there never saw the old one's grants. */
enum rl_mem_cause {
    RL_MEM_CAUSE_NONE,
    RL_MEM_CAUSE_LOST,
    RL_MEM_CAUSE_RESTART,
    RL_MEM_CAUSE_MOVED
};
typedef struct rl_marker {
    int64_t age_ms;     /* since it was born (or settled) */
    uint32_t window_ms; /* it counts once this old */
    uint32_t maxttl_ms; /* the longest ttl any client told it */
    int state;          /* enum rl_mem_state */
    int cause;          /* enum rl_mem_cause: why it was reborn */
    const char *birth;  /* the rebirth it names (pending: what a settle
                           names back), "" if none, NULL if not said */
} rl_marker;

typedef struct rl_trust {
    /* clock monitor (drift/monitor.h), fed by probe.c */
    drift_monitor clock;
    bool probe_out; /* a TIME probe is in flight */
    rl_monotime probe_send_us;

    /* who the master is (INFO at the handshake): restart events, ping */
    char run_id[41]; /* "" until the first INFO reply */
    int64_t uptime_s;
    bool aof_on;       /* appendonly yes (INFO, CONFIG) */
    bool fsync_always; /* appendfsync always (CONFIG) */
    bool aof_always;   /* both: ping reports it; no restart is trusted on it
                          (a copy of the data carries no proof of who wrote it) */
    /* What the server has natively (RL_NATIVE_*), from its version in the
     * same INFO; cleared when it answers a native command wrongly. */
    unsigned native;
    char version[32]; /* "valkey 9.1.2", "redis 7.0.15"; "" unknown */

    /* Who the master is was checked on this connection (the CHECK script,
     * before any vote on it): until then, and if it failed, no vote counts. */
    bool checked;
    char check_err[REDLOCK_VOTE_DETAIL_LEN];
    bool check_acl; /* check_err is the ACL's refusal: a credential to fix */

    /* memory: the marker as last read (handshake, probes, acquires) */
    bool marker_known;            /* read at least once */
    int mem_state;                /* enum rl_mem_state */
    int mem_cause;                /* enum rl_mem_cause */
    rl_monotime born_us;          /* monotonic estimate of the marker's birth */
    uint32_t window_ms;           /* it counts once this old */
    uint32_t maxttl_ms;           /* the longest ttl any client told it */
    char birth[RL_TOKEN_LEN + 1]; /* the rebirth it names while pending ("" unknown) */

    /* The master's clock as the last CHECK read it (ms), and when that
     * CHECK was sent (our monotonic clock): the master's clock at any later
     * moment is bounded from above from these (rl_trust_lease_end). */
    int64_t ref_ms; /* 0: no CHECK answered on this connection yet */
    rl_monotime ref_sent_us;
    rl_monotime check_sent_us; /* the CHECK in flight */

    /* eviction: CONFIG GET maxmemory* */
    int64_t maxmemory; /* bytes; -1 unknown (CONFIG refused) */
    char policy[32];   /* maxmemory-policy; "" unknown */
} rl_trust;

void rl_trust_init(rl_trust *t, const redlock_config *cfg);

/* Commands a server has besides those every supported server has, told
 * from INFO's version (valkey_version where there is one, else
 * redis_version): DELIFEQ, Valkey 9.0 on; DELEX ... IFEQ, Redis 8.4 on.
 * What a server only claims is checked at its first answer
 * (wire/release.c). */
#define RL_NATIVE_DELIFEQ 2u
#define RL_NATIVE_DELEX 4u
/* "DELIFEQ", "DELEX IFEQ": one RL_NATIVE_* flag's name. */
const char *rl_native_name(unsigned native);

/* An INFO reply's text: records run_id, uptime, AOF, the version and
 * what it has natively (RL_NATIVE_*). Returns true when
 * the run_id changed (the master restarted), with the old one in @old_run_id. */
bool rl_trust_info(rl_trust *t, const char *info, char old_run_id[41]);

/* A CONFIG GET reply's pairs, @n strings: maxmemory, maxmemory-policy,
 * appendfsync (any of them; the others are left alone). NULL: refused. */
void rl_trust_config(rl_trust *t, const char *const *pairs, size_t n);

/* The marker as a master reported it at @now. */
void rl_trust_marker(rl_trust *t, const rl_marker *m, rl_monotime now);

/* Should the master's vote not count now (clock, eviction, who it is not
 * checked)? Writes why. Return: 0 (it counts), or the code its vote carries:
 * REDLOCK_EAUTH when the ACL refused the check (a credential to fix, exit 77
 * in the CLI), else REDLOCK_EUNTRUSTED. */
int rl_trust_excluded(const rl_trust *t, const redlock_config *cfg, rl_monotime now, char *why,
                      size_t len);

/* May an acquire of a @want_ms window (its ttl or longer, memory.c) take
 * the fast path on this master at @now (acquire.c): it was checked, its
 * marker counts and already knows a ttl this long, and its clock was read
 * within the last RL_REF_MAX_MS. */
#define RL_REF_MAX_MS 10000
bool rl_trust_fast(const rl_trust *t, uint32_t want_ms, rl_monotime now);
/* An upper bound, on the master's clock (ms), of when a lease of @ttl_ms
 * whose attempt started at @start (our monotonic clock) ends for its
 * holder: the master's clock at the last CHECK, plus everything since its
 * sending and the ttl, run at the fastest rate the drift factor allows. */
int64_t rl_trust_lease_end(const rl_trust *t, rl_monotime start, uint32_t ttl_ms, double drift);

/* The marker's state in words, for ping and votes: why the master sits
 * out, until when, what would change that. False if it counts. */
bool rl_trust_memory_young(const rl_trust *t, rl_monotime now, char *why, size_t len);

#endif
