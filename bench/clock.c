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
    redlock_status *st;
    redlock_error err;
    int rc, m;

    if (!c)
        return;
    if (!(st = redlock_status_new())) {
        snprintf(floor_fig.clock_err, sizeof(floor_fig.clock_err),
                 "redlock_status_new: out of memory");
        redlock_client_free(c);
        return;
    }
    /* at least two samples per master, for a rate: wait for them if the
     * floor was very short */
    while (now_us() - t0 < 3u * CLOCK_PROBE_MS * 1000u && !stop_requested())
        sleep_us(CLOCK_PROBE_MS * 1000u);
    memset(&err, 0, sizeof(err));
    rc = redlock_ping(c, st, &err);
    floor_fig.clock_window_s = (double)(now_us() - t0) / 1e6;
    if (rc != 0 && rc != REDLOCK_ENOQUORUM) {
        snprintf(floor_fig.clock_err, sizeof(floor_fig.clock_err), "redlock_ping: %s: %.100s",
                 redlock_err_name(rc), err.msg);
        redlock_status_free(st);
        redlock_client_free(c);
        return;
    }
    floor_fig.n_clock = config.n_masters;
    json_kv_u64(&r->xj, "clock_probe_ms", CLOCK_PROBE_MS);
    json_kv_double(&r->xj, "clock_sampled_s", floor_fig.clock_window_s, 2);
    json_key(&r->xj, "clock");
    json_arr_begin(&r->xj);
    for (m = 0; m < config.n_masters; m++) {
        const redlock_master_state *ms = redlock_status_master(st, m);
        char addr[80];
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
        snprintf(addr, sizeof(addr), "%s:%d", config.host[m], config.port[m]);
        json_obj_begin(&r->xj);
        json_kv_cstr(&r->xj, "addr", addr);
        json_kv_bool(&r->xj, "reachable", ms->err == 0);
        if (known) {
            json_kv_double(&r->xj, "rate_lo", ms->clock_rate_lo, 6);
            json_kv_double(&r->xj, "rate_hi", ms->clock_rate_hi, 6);
        } else {
            json_kv_null(&r->xj, "rate_lo");
            json_kv_null(&r->xj, "rate_hi");
        }
        json_kv_u64(&r->xj, "samples", ms->clock_samples);
        json_kv_bool(&r->xj, "trusted", ms->clock_trusted);
        json_kv_u64(&r->xj, "jumps", ms->clock_jumps);
        json_kv_u64(&r->xj, "rate_faults", ms->clock_rate_faults);
        json_kv_i64(&r->xj, "offset_us", ms->clock_offset_us);
        json_kv_i64(&r->xj, "uptime_s", ms->uptime_s);
        json_kv_bool(&r->xj, "aof_always", ms->aof_always);
        json_kv_bool(&r->xj, "excluded", ms->excluded);
        json_obj_end(&r->xj);
    }
    json_arr_end(&r->xj);
    redlock_status_free(st);
    redlock_client_free(c);
}
