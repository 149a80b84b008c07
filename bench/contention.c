/* contention.c - the contention rows: one key, K contenders, each row once
 * with pub/sub waiting (the library's default) and once polling only, in
 * the same run, so a fair hand-off is always measured against its own
 * baseline (issue 10): contention(-poll), contention-hold(-poll),
 * contention-hold-default, contention-inproc, contention-mixed,
 * contention-deadwaiter. Every row checks its lock windows for overlap.
 * What each row runs: bench/RESULTS.md, "How the rows measure" (contention).
 */
#include "bench.h"

/* K processes (--clients), each one blocking caller, for @name's row. */
static struct contend_opts processes(const char *name, uint32_t hold_us, int pubsub)
{
    struct contend_opts o = { .clients = config.clients,
                              .duration_s = config.duration_s,
                              .ttl_ms = config.ttl_ms,
                              .hold_us = hold_us,
                              .wait = wait_policy_default(pubsub),
                              .label = name };

    return o;
}

static void processes_row(const char *name, uint32_t hold_us, int pubsub)
{
    struct contend_opts o = processes(name, hold_us, pubsub);

    contend_run(&o, result_new(name));
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

void scenario_contention_hold_default(void)
{
    struct contend_opts o = processes("contention-hold-default", config.hold_us, 1);

    o.wait.by_retries = 1;
    contend_run(&o, result_new(o.label));
}

void scenario_contention_inproc(void)
{
    struct result *r = result_new("contention-inproc");
    struct wait_policy w = wait_policy_default(1);

    inproc_run(config.clients, config.duration_s, config.hold_us, &w, r);
    contention_json(r, config.clients, config.hold_us);
    wait_json(r, &w);
    json_kv_i64(&r->xj, "inversions", r->inversions);
}

/* Issue 31: processes of several waiters each, every process's waiters
 * sharing one async client (inproc.c's, in processes forked as for
 * contention-hold), hold --hold-us, pub/sub. Fairness across processes,
 * and the runs of grants to one process: the library's local hand-off
 * passes the lock among a client's own waiters at most B times in a row
 * while another client waits (redlock_config.local_run_max). */
#define MIXED_PROCESSES 4
#define MIXED_WAITERS 4

void scenario_contention_mixed(void)
{
    struct contend_opts o = processes("contention-mixed", config.hold_us, 1);
    struct result *r = result_new(o.label);
    uint32_t b = bench_local_run_max();
    int i;

    o.clients = MIXED_PROCESSES;
    o.waiters = MIXED_WAITERS;
    contend_run(&o, r);
    json_kv_i64(&r->xj, "waiters_per_process", MIXED_WAITERS);
    json_key(&r->xj, "grants_per_waiter");
    json_arr_begin(&r->xj);
    for (i = 0; i < MIXED_PROCESSES * MIXED_WAITERS; i++)
        json_u64(&r->xj, r->grants_by_waiter[i]);
    json_arr_end(&r->xj);
    if (r->fairness_jain_waiters >= 0)
        json_kv_double(&r->xj, "fairness_jain_waiters", r->fairness_jain_waiters, 3);
    else
        json_kv_null(&r->xj, "fairness_jain_waiters");
    json_kv_i64(&r->xj, "longest_run", r->longest_run);
    json_kv_u64(&r->xj, "process_changes", r->process_changes);
    json_kv_i64(&r->xj, "longest_jumps", r->longest_jumps);
    if (b)
        json_kv_u64(&r->xj, "local_run_max", b);
    else
        json_kv_null(&r->xj, "local_run_max");
}

/* Issue 18: a waiter that dies while queued must not stall the hand-offs.
 * The same K processes twice, hold 0, pub/sub: first without kills (the
 * baseline row), then with a waiting process SIGKILLed every 2 s and a new
 * one started in its place; the row reports hand-offs per second (grants
 * to another process) against the baseline's. Target: >= 0.8 x. */
#define DEADWAITER_EVERY_S 2.0

void scenario_contention_deadwaiter(void)
{
    struct result *b = result_new("contention-deadwaiter-base");
    struct result *r;
    struct contend_opts o = processes("contention-deadwaiter-base", 0, 1);
    double base, got;

    /* at least two kills in the run */
    if (o.duration_s < 2.0 * DEADWAITER_EVERY_S + 0.5)
        o.duration_s = 2.0 * DEADWAITER_EVERY_S + 0.5;
    contend_run(&o, b);
    r = result_new("contention-deadwaiter");
    o.label = "contention-deadwaiter";
    o.kill_waiter_every_s = DEADWAITER_EVERY_S;
    contend_run(&o, r);
    base = b->duration_s > 0 ? (double)b->owner_changes / b->duration_s : 0;
    got = r->duration_s > 0 ? (double)r->owner_changes / r->duration_s : 0;
    if (base > 0)
        r->handoff_ratio = got / base;
    json_kv_double(&r->xj, "base_handoffs_per_s", base, 1);
    json_kv_double(&r->xj, "handoff_ratio", r->handoff_ratio, 3);
    json_kv_double(&r->xj, "handoff_ratio_target", 0.8, 1);
    if (!r->note[0])
        result_note(r,
                    "%llu waiters SIGKILLed (one every %.0f s, each replaced): %.0f hand-offs/s "
                    "against %.0f without kills = %.2f x (target >= 0.8); no holder for up to "
                    "%.0f ms",
                    (unsigned long long)r->waiters_killed, DEADWAITER_EVERY_S, got, base,
                    r->handoff_ratio, r->max_gap_ms);
}
