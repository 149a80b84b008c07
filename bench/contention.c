/* contention.c - the contention rows: one key, K contenders, each row once
 * with pub/sub waiting (the library's default) and once polling only, in
 * the same run, so a fair hand-off is always measured against its own
 * baseline (issue 10):
 *   contention, contention-poll             K processes, hold 0
 *   contention-hold, contention-hold-poll   K processes, hold --hold-us
 *   contention-inproc                       K waiters on one client, hold --hold-us
 * Every row checks its lock windows for overlap.
 */
#include "bench.h"

static void processes_row(const char *name, uint32_t hold_us, int pubsub)
{
    struct result *r = result_new(name);
    struct contend_opts o = { .clients = config.clients, .duration_s = config.duration_s,
                              .ttl_ms = config.ttl_ms, .hold_us = hold_us,
                              .wait = wait_policy_default(pubsub), .label = name };

    contend_run(&o, r);
}

void scenario_contention(void)
{
    processes_row("contention", 0, 1);
}

void scenario_contention_poll(void)
{
    processes_row("contention-poll", 0, 0);
}

void scenario_contention_hold(void)
{
    processes_row("contention-hold", config.hold_us, 1);
}

void scenario_contention_hold_poll(void)
{
    processes_row("contention-hold-poll", config.hold_us, 0);
}

void scenario_contention_inproc(void)
{
    struct result *r = result_new("contention-inproc");
    struct wait_policy w = wait_policy_default(1);

    inproc_run(config.clients, config.duration_s, config.hold_us, &w, r);
    contention_json(r, config.clients, config.hold_us);
    wait_json(r, &w);
    result_extra(r, ",\"inversions\":%lld", (long long)r->inversions);
}
