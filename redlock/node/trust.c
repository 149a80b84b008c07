/* trust.c - facts about a master's clock and memory, and the rule that
 * keeps a master out of quorums when it cannot be trusted.
 *
 * A vote is left out (N and the quorum stay: an acquire can only fail) for
 * a clock at the wrong rate or that jumped (EXCLUDE), or a policy that could
 * evict a live lock key; a marker that may have forgotten grants is the
 * acquire script's check. Why: docs/memory-guard.md, "The memory guard".
 */
#include "node/trust.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rl_trust_init(rl_trust *t, const redlock_config *cfg)
{
    memset(t, 0, sizeof(*t));
    t->maxmemory = -1;
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

/* "8.1.2" at least @major.@minor? */
static bool version_at_least(const char *v, long major, long minor)
{
    char *end;
    long ma = strtol(v, &end, 10);
    long mi = *end == '.' ? strtol(end + 1, NULL, 10) : 0;
    return ma > major || (ma == major && mi >= minor);
}

/* Valkey keeps redis_version at 7.2.4 for its clients and says its own in
 * valkey_version; Redis says only redis_version. A server that gives
 * neither (a proxy, an ACL'd INFO) gets the scripts. */
static void native_from_info(rl_trust *t, const char *info)
{
    char v[24] = "";
    t->native = 0;
    t->version[0] = '\0';
    if (info_field(info, "valkey_version", v, sizeof(v)) && v[0]) {
        snprintf(t->version, sizeof(t->version), "valkey %s", v);
        if (version_at_least(v, 9, 0))
            t->native |= RL_NATIVE_DELIFEQ;
    } else if (info_field(info, "redis_version", v, sizeof(v)) && v[0]) {
        snprintf(t->version, sizeof(t->version), "redis %s", v);
        if (version_at_least(v, 8, 4))
            t->native |= RL_NATIVE_DELEX;
    }
}

const char *rl_native_name(unsigned native)
{
    return native == RL_NATIVE_DELIFEQ ? "DELIFEQ" : "DELEX IFEQ";
}

bool rl_trust_info(rl_trust *t, const char *info, char old_run_id[41])
{
    char run_id[41] = "", up[32] = "", aof[8] = "";
    info_field(info, "run_id", run_id, sizeof(run_id));
    info_field(info, "uptime_in_seconds", up, sizeof(up));
    info_field(info, "aof_enabled", aof, sizeof(aof));
    t->uptime_s = strtoll(up, NULL, 10);
    bool restarted = t->run_id[0] && run_id[0] && strcmp(t->run_id, run_id) != 0;
    if (restarted) {
        memcpy(old_run_id, t->run_id, 41);
        drift_monitor_reset(&t->clock); /* a new process: a new clock history */
    }
    if (run_id[0])
        memcpy(t->run_id, run_id, sizeof(t->run_id));
    t->aof_on = aof[0] == '1';
    t->aof_always = t->aof_on && t->fsync_always;
    native_from_info(t, info);
    return restarted;
}

void rl_trust_config(rl_trust *t, const char *const *pairs, size_t n)
{
    if (!pairs) {
        /* CONFIG may be denied (ACL, renamed): then we cannot know. */
        t->maxmemory = -1;
        t->policy[0] = '\0';
        return;
    }
    for (size_t i = 0; i + 1 < n; i += 2) {
        if (strcmp(pairs[i], "maxmemory") == 0)
            t->maxmemory = strtoll(pairs[i + 1], NULL, 10);
        else if (strcmp(pairs[i], "maxmemory-policy") == 0)
            snprintf(t->policy, sizeof(t->policy), "%s", pairs[i + 1]);
        else if (strcmp(pairs[i], "appendfsync") == 0)
            t->fsync_always = strcmp(pairs[i + 1], "always") == 0;
        else if (strcmp(pairs[i], "appendonly") == 0)
            t->aof_on = strcmp(pairs[i + 1], "yes") == 0;
    }
    t->aof_always = t->aof_on && t->fsync_always;
}

void rl_trust_marker(rl_trust *t, const rl_marker *m, rl_monotime now)
{
    t->marker_known = true;
    t->mem_state = m->state;
    if (m->cause != RL_MEM_CAUSE_NONE || m->state == RL_MEM_COUNTS)
        t->mem_cause = m->cause;
    uint64_t age_us = m->age_ms > 0 ? (uint64_t)m->age_ms * 1000 : 0;
    t->born_us = now > age_us ? now - age_us : 1;
    t->window_ms = m->window_ms;
    t->maxttl_ms = m->maxttl_ms;
    /* Only a rebirth named as ours could be (rl_token_new's form) can be
     * settled by name; anything else is unknown, and CHECK names it anew. */
    if (m->birth) {
        size_t len = strlen(m->birth);
        bool hex = len == RL_TOKEN_LEN && strspn(m->birth, "0123456789abcdef") == len;
        memcpy(t->birth, hex ? m->birth : "", hex ? len + 1 : 1);
    }
}

bool rl_trust_fast(const rl_trust *t, uint32_t want_ms, rl_monotime now)
{
    return t->checked && t->marker_known && t->mem_state == RL_MEM_COUNTS &&
           t->maxttl_ms >= want_ms && t->ref_ms > 0 && now >= t->ref_sent_us &&
           now - t->ref_sent_us < (uint64_t)RL_REF_MAX_MS * 1000;
}

int64_t rl_trust_lease_end(const rl_trust *t, rl_monotime start, uint32_t ttl_ms, double drift)
{
    /* The CHECK ran after it was sent, so the master's clock read then
     * was at least what it showed at the sending; from there on it runs at
     * most (1 + drift) times as fast as ours. +1: the master's ms are cut. */
    double span_ms = (double)(start - t->ref_sent_us) / 1000.0 + ttl_ms;
    return t->ref_ms + (int64_t)ceil(span_ms * (1.0 + drift)) + 1;
}

/* maxmemory set with a policy that evicts keys with a ttl (volatile-*) or
 * any key (allkeys-*): a live lock key can vanish before its ttl, and that
 * master would grant the resource again. noeviction refuses writes instead
 * (the acquire fails there, safely). */
static bool evicts(const rl_trust *t)
{
    return t->maxmemory > 0 &&
           (strncmp(t->policy, "volatile-", 9) == 0 || strncmp(t->policy, "allkeys-", 8) == 0);
}

int rl_trust_excluded(const rl_trust *t, const redlock_config *cfg, rl_monotime now, char *why,
                      size_t len)
{
    if (cfg->clock_policy == REDLOCK_CLOCK_EXCLUDE && !drift_monitor_trusted(&t->clock, now)) {
        snprintf(why, len, "excluded: clock %s; trusted again %.1f s after it behaves",
                 t->clock.rate_bad ? "runs at the wrong rate" : "jumped",
                 cfg->clock_readmit_ms / 1000.0);
        return REDLOCK_EUNTRUSTED;
    }
    if (cfg->restart_guard && !t->checked && t->check_err[0]) {
        snprintf(why, len, "%s", t->check_err);
        return t->check_acl ? REDLOCK_EAUTH : REDLOCK_EUNTRUSTED;
    }
    if (cfg->restart_guard && evicts(t)) {
        /* Whole within a vote's 96 bytes (ping's column shows it): a limit
         * of 19 digits beside "volatile-random" would not fit, and is left
         * out rather than cut. */
        int n = snprintf(why, len,
                         "maxmemory-policy %s may evict locks (set noeviction; "
                         "maxmemory %lld)",
                         t->policy, (long long)t->maxmemory);
        if (n < 0 || (size_t)n >= len)
            snprintf(why, len, "maxmemory-policy %s may evict locks (set noeviction)", t->policy);
        return REDLOCK_EUNTRUSTED;
    }
    return 0;
}

/* Why a master sits out, in words that fit a vote's detail (96 bytes) with
 * the longest tail below ("...: memory marker pending until ..."). */
static const char *cause_words(int cause)
{
    switch (cause) {
    case RL_MEM_CAUSE_RESTART: return "restarted, data may lack grants";
    case RL_MEM_CAUSE_LOST: return "lost its data (or is new)";
    case RL_MEM_CAUSE_MOVED: return "its name moved to a new server";
    default: return "its memory is new";
    }
}

bool rl_trust_memory_young(const rl_trust *t, rl_monotime now, char *why, size_t len)
{
    if (!t->marker_known || t->mem_state == RL_MEM_COUNTS)
        return false;
    if (t->mem_state == RL_MEM_PENDING) {
        snprintf(why, len, "%s: memory marker pending until the fleet's leases are measured",
                 cause_words(t->mem_cause));
        return true;
    }
    uint64_t age_ms = (now - t->born_us) / 1000;
    if (age_ms >= t->window_ms)
        return false;
    snprintf(why, len, "%s: memory marker %.1f s old, counts at %.1f s", cause_words(t->mem_cause),
             age_ms / 1000.0, t->window_ms / 1000.0);
    return true;
}
