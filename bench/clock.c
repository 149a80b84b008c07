/* clock.c - clock estimates taken while the floor runs: a blocking client
 * of the library under test probes every master's TIME every 100 ms (50
 * tiny commands a second in all, next to tens of thousands), and one
 * redlock_ping at the end reads what its clock monitor and restart guard
 * concluded. The floor row carries them, in its notes and its JSON.
 */
#include "bench.h"

#include <string.h>

#define CLOCK_PROBE_MS 100u

redlock_client *clock_client_start(uint64_t *t0)
{
    redlock_config cfg;
    redlock_client *c = NULL;
    redlock_error err;
    int rc;

    bench_config_fill(&cfg, 0);
    cfg.clock_probe_ms = CLOCK_PROBE_MS;
    memset(&err, 0, sizeof(err));
    rc = redlock_client_new(&cfg, NULL, &c, &err);
    if (rc != 0) {
        snprintf(floor_fig.clock_err, sizeof(floor_fig.clock_err), "redlock_client_new: %s: %.100s",
                 redlock_err_name(rc), err.msg);
        return NULL;
    }
    *t0 = now_us();
    return c;
}

void clock_client_report(redlock_client *c, uint64_t t0, struct result *r)
{
    redlock_status st;
    redlock_error err;
    int rc, m;

    if (!c)
        return;
    /* at least two samples per master, for a rate: wait for them if the
     * floor was very short */
    while (now_us() - t0 < 3u * CLOCK_PROBE_MS * 1000u && !stop_requested())
        sleep_us(CLOCK_PROBE_MS * 1000u);
    memset(&st, 0, sizeof(st));
    memset(&err, 0, sizeof(err));
    rc = redlock_ping(c, &st, &err);
    floor_fig.clock_window_s = (double)(now_us() - t0) / 1e6;
    if (rc != 0 && rc != REDLOCK_ENOQUORUM) {
        snprintf(floor_fig.clock_err, sizeof(floor_fig.clock_err), "redlock_ping: %s: %.100s",
                 redlock_err_name(rc), err.msg);
        redlock_client_free(c);
        return;
    }
    floor_fig.n_clock = config.n_masters;
    result_extra(r, ",\"clock_probe_ms\":%u,\"clock_sampled_s\":%.2f,\"clock\":[", CLOCK_PROBE_MS,
                 floor_fig.clock_window_s);
    for (m = 0; m < config.n_masters; m++) {
        const redlock_master_state *ms = &st.masters[m];
        int known = ms->clock_rate_lo > 0 || ms->clock_rate_hi > 0;

        floor_fig.clock[m].reachable = ms->err == 0;
        floor_fig.clock[m].rate_lo = ms->clock_rate_lo;
        floor_fig.clock[m].rate_hi = ms->clock_rate_hi;
        floor_fig.clock[m].samples = ms->clock_samples;
        floor_fig.clock[m].jumps = ms->clock_jumps;
        floor_fig.clock[m].rate_faults = ms->clock_rate_faults;
        floor_fig.clock[m].trusted = ms->clock_trusted;
        floor_fig.clock[m].offset_us = ms->clock_offset_us;
        memcpy(floor_fig.clock[m].run_id, ms->run_id, sizeof(floor_fig.clock[m].run_id));
        floor_fig.clock[m].run_id[sizeof(floor_fig.clock[m].run_id) - 1] = '\0';
        floor_fig.clock[m].uptime_s = ms->uptime_s;
        floor_fig.clock[m].aof_always = ms->aof_always;
        floor_fig.clock[m].excluded = ms->excluded;
        result_extra(r, "%s{\"addr\":\"%s:%d\",\"reachable\":%s", m ? "," : "", config.host[m],
                     config.port[m], ms->err == 0 ? "true" : "false");
        if (known)
            result_extra(r, ",\"rate_lo\":%.6f,\"rate_hi\":%.6f", ms->clock_rate_lo,
                         ms->clock_rate_hi);
        else
            result_extra(r, ",\"rate_lo\":null,\"rate_hi\":null");
        result_extra(r,
                     ",\"samples\":%llu,\"trusted\":%s,\"jumps\":%llu,\"rate_faults\":%llu,"
                     "\"offset_us\":%lld,\"uptime_s\":%lld,\"aof_always\":%s,\"excluded\":%s}",
                     (unsigned long long)ms->clock_samples, ms->clock_trusted ? "true" : "false",
                     (unsigned long long)ms->clock_jumps, (unsigned long long)ms->clock_rate_faults,
                     (long long)ms->clock_offset_us, (long long)ms->uptime_s,
                     ms->aof_always ? "true" : "false", ms->excluded ? "true" : "false");
    }
    result_extra(r, "]");
    redlock_client_free(c);
}
