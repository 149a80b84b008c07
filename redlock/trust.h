/* trust.h - may a master's vote count now? The facts, and the rule.
 *
 * Pure code, no I/O: node.c and probe.c record what masters said (INFO,
 * CONFIG, TIME, the memory marker), the kinds ask before they count an OK.
 * Reasons to exclude a master here: its clock misbehaves (clock_policy
 * EXCLUDE), or it may evict lock keys (maxmemory with an evicting policy).
 * Whether it remembers its grants is checked by every acquire itself, in
 * the script that takes the lock (script.c): the marker facts kept here
 * are what ping shows and what the next acquire asks for.
 */
#ifndef REDLOCK_TRUST_H
#define REDLOCK_TRUST_H

#include "common.h"
#include "monitor.h"

typedef struct rl_trust {
    /* clock monitor (drift/monitor.h), fed by probe.c */
    drift_monitor clock;
    bool probe_out;               /* a TIME probe is in flight */
    rl_monotime probe_send_us;

    /* who the master is (INFO at the handshake): restart events, ping */
    char run_id[41];              /* "" until the first INFO reply */
    int64_t uptime_s;
    bool aof_always;              /* appendonly yes and appendfsync always */

    /* memory: the marker as last read (handshake, probes, acquires) */
    bool marker_known;            /* read at least once */
    bool marker_absent;           /* none: the master lost its data (or is new) */
    rl_monotime born_us;          /* monotonic estimate of the marker's birth */
    uint32_t window_ms;           /* it counts once this old */
    uint32_t maxttl_ms;           /* the longest ttl any client told it */

    /* eviction: CONFIG GET maxmemory* */
    int64_t maxmemory;            /* bytes; -1 unknown (CONFIG refused) */
    char policy[32];              /* maxmemory-policy; "" unknown */
} rl_trust;

void rl_trust_init(rl_trust *t, const redlock_config *cfg);

/* An INFO reply's text: records run_id, uptime and AOF. Returns true when
 * the run_id changed (the master restarted), with the old one in @old_run_id. */
bool rl_trust_info(rl_trust *t, const char *info, char old_run_id[41]);

/* A CONFIG GET reply's pairs, @n strings: maxmemory, maxmemory-policy,
 * appendfsync (any of them; the others are left alone). NULL: refused. */
void rl_trust_config(rl_trust *t, const char *const *pairs, size_t n);

/* The marker as a master reported it at @now: @age_ms (< 0: none),
 * @window_ms, @maxttl_ms. */
void rl_trust_marker(rl_trust *t, int64_t age_ms, uint32_t window_ms, uint32_t maxttl_ms,
                     rl_monotime now);

/* Should the master's vote not count now (clock, eviction)? Writes why. */
bool rl_trust_excluded(const rl_trust *t, const redlock_config *cfg, rl_monotime now, char *why,
                       size_t len);

/* The marker's state in words, for ping ("" if it counts). */
bool rl_trust_memory_young(const rl_trust *t, rl_monotime now, char *why, size_t len);

#endif
