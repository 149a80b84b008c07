/* latency.c - the rows on distinct keys, where nothing contends: the
 * uncontended latency through the async API and through the blocking API
 * from one thread (with the system calls each cycle costs), and the
 * throughput of both APIs.
 */
#include "bench.h"

/* A second pass over a fixed number of cycles, with the kernel counting
 * system calls: the figures per cycle do not depend on how fast this run
 * was, and the timed pass above is not slowed by the counters. */
static void count_syscalls(struct result *r, int blocking)
{
    struct result scratch;
    struct sysc sys;
    char note[300];
    struct load_opts o = { .inflight = 1,
                           .duration_s = 600,
                           .max_ops = config.syscall_cycles,
                           .retries = 0,
                           .sys = &sys,
                           .label = "syscalls" };

    if (!config.syscall_cycles)
        return;
    snprintf(scratch.scenario, sizeof(scratch.scenario), "%s", r->scenario);
    result_clear(&scratch);
    if (blocking)
        load_blocking(1, 600, config.syscall_cycles, &sys, &scratch);
    else
        load_async(&o, &scratch);
    sysc_json(r, &sys);
    if (sys.ok) {
        r->syscalls_per_cycle = (double)sys.count[SYSC_TOTAL] / (double)sys.cycles;
        r->epoll_ctl_per_cycle = (double)sys.count[SYSC_EPOLL_CTL] / (double)sys.cycles;
    }
    if (sys.ok)
        json_kv_double(&r->xj, "syscall_pass_cpu_us_per_cycle", scratch.cpu_us_per_cycle, 1);
    sysc_note(note, sizeof(note), &sys);
    result_note(r, "%s", note);
}

void scenario_uncontended(void)
{
    struct result *r = result_new("uncontended");
    struct load_opts o = { .inflight = 1,
                           .duration_s = config.duration_s,
                           .max_ops = config.max_ops,
                           .retries = 0,
                           .label = "uncontended" };

    if (load_async(&o, r) == 0)
        floor_fig.healthy_p99 = hist_pct(&r->acq, 0.99);
    json_kv_u64(&r->xj, "inflight", 1);
    if (!r->note[0])
        count_syscalls(r, 0);
}

/* The uncontended cycle at contention-hold's pace: one lock at a time,
 * held --hold-us. What a master spends on a request depends on how often
 * requests come (a wake-up from idle costs more than one in a stream), so
 * the contention rows that hold their locks compare with this row. */
void scenario_uncontended_hold(void)
{
    struct result *r = result_new("uncontended-hold");
    struct load_opts o = { .inflight = 1,
                           .duration_s = config.duration_s,
                           .max_ops = config.max_ops,
                           .retries = 0,
                           .hold_us = config.hold_us,
                           .label = "uncontended-hold" };

    load_async(&o, r);
    json_kv_u64(&r->xj, "inflight", 1);
    json_kv_u64(&r->xj, "hold_us", config.hold_us);
}

/* Sequential acquire + release through the blocking API from one thread:
 * what the blocking API's thread hand-off costs over the async one. */
void scenario_uncontended_blocking(void)
{
    struct result *r = result_new("uncontended-blocking");
    const struct result *u = result_find("uncontended");

    load_blocking(1, config.duration_s, config.max_ops, NULL, r);
    json_kv_u64(&r->xj, "threads", 1);
    if (u && u->acq.count && r->acq.count)
        json_kv_double(&r->xj, "ratio_async_p50",
                       (double)hist_pct(&r->acq, 0.5) / (double)hist_pct(&u->acq, 0.5), 2);
    if (!r->note[0])
        count_syscalls(r, 1);
}

void scenario_throughput(void)
{
    struct result *r = result_new("throughput");
    struct load_opts o = { .inflight = config.inflight,
                           .duration_s = config.duration_s,
                           .max_ops = config.max_ops,
                           .retries = 0,
                           .label = "throughput" };

    load_async(&o, r);
    json_kv_i64(&r->xj, "inflight", config.inflight);
}

void scenario_blocking(void)
{
    struct result *r = result_new("blocking");

    load_blocking(config.threads, config.duration_s, config.max_ops, NULL, r);
    json_kv_i64(&r->xj, "threads", config.threads);
}
