/* trust.c - facts about a master's clock and memory, and the rule that
 * keeps a master out of quorums when either cannot be trusted.
 *
 * Mutual exclusion rests on every master keeping the keys it granted for
 * their ttl. A master's vote is left out (N and the quorum stay the same, so
 * this can only make an acquire fail, never succeed) when its clock is
 * known to run at the wrong rate or to have jumped (policy EXCLUDE), or
 * when it may have forgotten grants (the restart guard; NOTES.md §4).
 */
#include "trust.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rl_trust_init(rl_trust *t, const redlock_config *cfg)
{
    memset(t, 0, sizeof(*t));
    drift_monitor_init(&t->clock, cfg->drift_factor, cfg->clock_jump_ms, cfg->clock_window_ms,
                       cfg->clock_readmit_ms);
}

/* "name:value\r\n" inside an INFO reply. */
static bool info_field(const char *info, const char *name, char *out, size_t len)
{
    size_t nl = strlen(name);
    for (const char *p = info; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, name, nl) == 0 && p[nl] == ':') {
            p += nl + 1;
            size_t i = 0;
            while (p[i] && p[i] != '\r' && p[i] != '\n' && i + 1 < len) {
                out[i] = p[i];
                i++;
            }
            out[i] = '\0';
            return true;
        }
    }
    return false;
}

bool rl_trust_info(rl_trust *t, const char *info, rl_monotime now, char old_run_id[41])
{
    char run_id[41] = "", up[32] = "", aof[8] = "";
    info_field(info, "run_id", run_id, sizeof(run_id));
    info_field(info, "uptime_in_seconds", up, sizeof(up));
    info_field(info, "aof_enabled", aof, sizeof(aof));
    t->uptime_s = strtoll(up, NULL, 10);
    /* uptime_in_seconds is the difference of two whole-second clock
     * readings, so it may exceed the real uptime by up to a second (seen:
     * "1" at 0.23 s). The latest possible start is therefore
     * now - (uptime - 1 s); the guard measures from it, which protects
     * longest. */
    uint64_t up_us = (uint64_t)(t->uptime_s > 1 ? t->uptime_s - 1 : 0) * 1000000u;
    t->started_us = now > up_us ? now - up_us : 1;
    bool restarted = t->run_id[0] && run_id[0] && strcmp(t->run_id, run_id) != 0;
    if (restarted) {
        memcpy(old_run_id, t->run_id, 41);
        t->restart_seen = true;
        drift_monitor_reset(&t->clock);   /* a new process: a new clock history */
    }
    if (run_id[0])
        memcpy(t->run_id, run_id, sizeof(t->run_id));
    t->aof_always = aof[0] == '1';   /* confirmed by the CONFIG GET reply next */
    return restarted;
}

void rl_trust_fsync(rl_trust *t, const char *appendfsync)
{
    /* CONFIG may be denied (ACL, renamed): then we cannot know, and a
     * master we cannot vouch for is guarded like one without AOF. */
    t->aof_always = t->aof_always && appendfsync && strcmp(appendfsync, "always") == 0;
}

bool rl_trust_excluded(const rl_trust *t, const redlock_config *cfg, uint32_t max_ttl_ms,
                       uint32_t ttl_ms, rl_monotime now, char *why, size_t len)
{
    if (cfg->clock_policy == REDLOCK_CLOCK_EXCLUDE && !drift_monitor_trusted(&t->clock, now)) {
        snprintf(why, len, "excluded: clock %s; trusted again %.1f s after it behaves",
                 t->clock.rate_bad ? "runs at the wrong rate" : "jumped",
                 cfg->clock_readmit_ms / 1000.0);
        return true;
    }
    if (!cfg->restart_guard || t->aof_always || !t->started_us)
        return false;
    uint64_t window_ms = cfg->restart_guard_ms;
    if (t->restart_seen) {
        uint32_t longest = max_ttl_ms > ttl_ms ? max_ttl_ms : ttl_ms;
        if (longest > window_ms)
            window_ms = longest;
    }
    uint64_t until = t->started_us + window_ms * 1000;
    if (now < until) {
        snprintf(why, len, "excluded: %s %.1f s ago without AOF always; counts again in "
                 "%.1f s (restart guard)", t->restart_seen ? "restarted" : "started",
                 (double)(now - t->started_us) / 1e6, (double)(until - now) / 1e6);
        return true;
    }
    return false;
}
