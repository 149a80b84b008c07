/* trust.h - may a master's vote count now? The facts, and the rule.
 *
 * Pure code, no I/O: node.c and probe.c record what masters said (INFO,
 * CONFIG, TIME), the kinds ask before they count an OK. Two reasons to
 * exclude a master: its clock misbehaves (clock_policy EXCLUDE), or its
 * memory cannot be trusted for the longest ttl in use (the restart guard).
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

    /* restart guard: what INFO and CONFIG said at the last handshake */
    char run_id[41];              /* "" until the first INFO reply */
    int64_t uptime_s;
    rl_monotime started_us;       /* monotonic estimate of the master's start
                                     (now - uptime at the INFO reply); 0 unknown */
    bool restart_seen;            /* run_id changed while we knew the master */
    bool aof_always;              /* appendonly yes and appendfsync always */
} rl_trust;

void rl_trust_init(rl_trust *t, const redlock_config *cfg);

/* An INFO reply's text: records run_id and uptime. Returns true when the
 * run_id changed (the master restarted), with the old one in @old_run_id. */
bool rl_trust_info(rl_trust *t, const char *info, rl_monotime now, char old_run_id[41]);

/* CONFIG GET appendfsync's answer ("always", or NULL if refused). */
void rl_trust_fsync(rl_trust *t, const char *appendfsync);

/* Should the master's vote not count now, for an op with @ttl_ms, given the
 * longest ttl this client has used (@max_ttl_ms)? Writes why. */
bool rl_trust_excluded(const rl_trust *t, const redlock_config *cfg, uint32_t max_ttl_ms,
                       uint32_t ttl_ms, rl_monotime now, char *why, size_t len);

#endif
