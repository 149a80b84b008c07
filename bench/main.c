/* main.c - redlock-bench: what the engine does when masters die, measured
 * against the raw SET NX PX floor of the same masters in the same run.
 *
 * The scenario table and main(). Each scenario fills one struct result
 * (state.c); report.c prints them all at the end, as redis-benchmark does.
 * The top layer: docs/map.md, "`bench/`: redlock-bench".
 */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct scenario {
    const char *name;
    void (*run)(void);
    int faults; /* needs --cluster-script */
};

static const struct scenario scenarios[] = {
    { "floor", scenario_floor, 0 },
    { "raw", scenario_raw, 0 },
    { "raw-guard", scenario_raw_guard, 0 },
    { "uncontended", scenario_uncontended, 0 },
    { "uncontended-blocking", scenario_uncontended_blocking, 0 },
    { "uncontended-hold", scenario_uncontended_hold, 0 },
    { "throughput", scenario_throughput, 0 },
    { "fence-keys", scenario_fence_keys, 0 },
    { "blocking", scenario_blocking, 0 },
    { "contention", scenario_contention, 0 },
    { "contention-poll", scenario_contention_poll, 0 },
    { "contention-hold", scenario_contention_hold, 0 },
    { "contention-hold-poll", scenario_contention_hold_poll, 0 },
    { "contention-hold-default", scenario_contention_hold_default, 0 },
    { "contention-inproc", scenario_contention_inproc, 0 },
    { "contention-mixed", scenario_contention_mixed, 0 },
    { "contention-deadwaiter", scenario_contention_deadwaiter, 0 },
    { "kill1", scenario_kill1, 1 },
    { "kill2", scenario_kill2, 1 },
    { "kill3", scenario_kill3, 1 },
    { "pause2", scenario_pause2, 1 },
    { "restart", scenario_restart, 1 },
    { "restart-guard", scenario_restart_guard, 1 },
    { "restart-delayed", scenario_restart_delayed, 1 },
    { "restart-aof", scenario_restart_aof, 1 },
    { "restart-persist", scenario_restart_persist, 1 },
    { "timeline", scenario_timeline, 1 },
};
#define N_SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

/* The names for --help, wrapped to fit 80 columns under the option. */
static const char *scenario_names(void)
{
    static char names[1024];
    size_t i, used = 0, col = 80;

    for (i = 0; i < N_SCENARIOS && used < sizeof(names); i++) {
        size_t len = strlen(scenarios[i].name) + 1;

        if (col + len > 78) {
            used += (size_t)snprintf(names + used, sizeof(names) - used, "\n%24s", "");
            col = 24;
        }
        used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", scenarios[i].name,
                                 i + 1 < N_SCENARIOS ? "," : "");
        col += len;
    }
    return names;
}

static int scenario_selected(const char *name)
{
    char buf[512], *save = NULL, *tok;

    if (strcmp(name, "floor") == 0 || strcmp(config.scenarios, "all") == 0)
        return 1;
    snprintf(buf, sizeof(buf), "%s", config.scenarios);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (strcmp(tok, name) == 0)
            return 1;
    return 0;
}

static void check_scenario_names(void)
{
    char buf[512], *save = NULL, *tok;
    size_t i;

    if (strcmp(config.scenarios, "all") == 0)
        return;
    snprintf(buf, sizeof(buf), "%s", config.scenarios);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        for (i = 0; i < N_SCENARIOS; i++)
            if (strcmp(tok, scenarios[i].name) == 0)
                break;
        if (i == N_SCENARIOS) {
            fprintf(stderr, "redlock-bench: unknown scenario '%s' (see --help)\n", tok);
            exit(2);
        }
    }
}

/* --trace-dir: a fault scenario's clients trace their protocol steps
 * (REDLOCK_TRACE, read when a client is made) to DIR/<scenario>.trace, for
 * model/trace-check.py; only fault scenarios, so that the speed rows stay
 * untraced. Set between scenarios, when no other thread reads it. */
static void trace_begin(const struct scenario *s)
{
    char path[1024];

    if (!config.trace_dir || !s->faults)
        return;
    if (mkdir(config.trace_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "redlock-bench: --trace-dir %s: %s\n", config.trace_dir, strerror(errno));
        return;
    }
    snprintf(path, sizeof(path), "%s/%s.trace", config.trace_dir, s->name);
    if (truncate(path, 0) != 0 && errno != ENOENT)
        fprintf(stderr, "redlock-bench: %s: %s\n", path, strerror(errno));
    setenv("REDLOCK_TRACE", path, 1);
}

static void trace_end(void)
{
    unsetenv("REDLOCK_TRACE");
}

/* Run every selected scenario; 0, or 2 when the cluster cannot be healed. */
static int run_scenarios(void)
{
    size_t i;

    for (i = 0; i < N_SCENARIOS; i++)
        config.n_steps += scenario_selected(scenarios[i].name);
    for (i = 0; i < N_SCENARIOS && !stop_requested(); i++) {
        if (!scenario_selected(scenarios[i].name))
            continue;
        config.step++;
        if (scenarios[i].faults && !cluster_available()) {
            struct result *r = result_new(scenarios[i].name);

            r->skipped = 1;
            result_note(r, "skipped: needs --cluster-script and --cluster-dir");
            continue;
        }
        trace_begin(&scenarios[i]);
        scenarios[i].run();
        trace_end();
        /* Whatever a scenario did, the next one starts from a whole cluster. */
        if (scenarios[i].faults && cluster_heal() < 0) {
            fprintf(stderr, "redlock-bench: cannot heal the cluster after %s; stopping\n",
                    scenarios[i].name);
            return 2;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct result **res;
    int rc, k, n;

    parse_options(argc, argv, scenario_names());
    check_scenario_names();
    bench_signals_install((unsigned)config.max_time_s);

    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("redlock-bench: libredlock %s (hiredis %s), %d masters (%s), ttl %u ms, node "
           "timeout %u ms, %.1f s per scenario, seed %llu\n",
           redlock_version(), bench_hiredis_version(), config.n_masters, config.masters,
           config.ttl_ms, config.node_timeout_ms, config.duration_s,
           (unsigned long long)config.seed);
    if (wait_masters_up(5000) < 0) {
        fprintf(stderr,
                "redlock-bench: not every master answers PING at %s "
                "(start them: cluster-up.sh start)\n",
                config.masters);
        return 2;
    }
    if (!config.cluster_script)
        printf("redlock-bench: no --cluster-script: fault scenarios are skipped\n");

    rc = run_scenarios();
    progress_clear();
    if (stop_requested())
        printf("redlock-bench: interrupted; partial report\n");
    res = results_all(&n);
    report_all(res, n);

    for (k = 0; k < n; k++) {
        /* restart (no persistence, immediate, restart guard off) is the
         * one case where the algorithm does not claim safety; with the
         * guard on (restart-guard) it does */
        if (res[k]->violations && strcmp(res[k]->scenario, "restart") != 0 && rc == 0)
            rc = 4;
    }
    results_free();
    return rc;
}
