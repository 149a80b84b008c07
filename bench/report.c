/* report.c - what redlock-bench prints at the end: one table, notes, the
 * targets (targets.c), and one JSON line per scenario, to stdout and to
 * --out/results.jsonl.
 */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* JSON (the one writer, json/)                                             */
/* ------------------------------------------------------------------------ */

/* A figure, or null when it was not measured: whole numbers from 100 up,
 * two decimals below. */
static void json_figure(struct json *j, const char *key, double v, int valid)
{
    if (valid)
        json_kv_double(j, key, v, v >= 100 ? 0 : 2);
    else
        json_kv_null(j, key);
}

/* The deciding attempt's votes, per master: "votes":[{"ok":n,...},...] */
static void json_votes(struct json *j, const struct opstats *s)
{
    json_key(j, "votes");
    json_arr_begin(j);
    for (int m = 0; m < config.n_masters; m++) {
        json_obj_begin(j);
        for (int k = 0; k <= REDLOCK_VOTE_EXCLUDED; k++)
            if (s->votes[m][k])
                json_kv_u64(j, redlock_vote_kind_name(k), s->votes[m][k]);
        json_obj_end(j);
    }
    json_arr_end(j);
}

/* The library's own figures (op hook): "lib":{...}, when it saw acquires. */
static void json_lib(struct json *j, const struct opstats *s)
{
    if (!s->acquires)
        return;
    json_key(j, "lib");
    json_obj_begin(j);
    json_kv_u64(j, "acquires", s->acquires);
    json_kv_u64(j, "ok", s->ok);
    json_kv_double(j, "attempts_per_acquire", (double)s->attempts / (double)s->acquires, 3);
    json_kv_hist(j, "attempts", &s->attempts_h);
    json_kv_hist(j, "waited_us", &s->waited);
    json_votes(j, s);
    json_obj_end(j);
}

/* Issue 21's ratios against the raw row of this run (rawcycle.c), on the
 * rows its targets judge; null where either side was not measured. */
static void json_raw_ratio(struct json *j, const char *key, double lib, double raw)
{
    json_figure(j, key, raw > 0 ? lib / raw : 0, lib >= 0 && raw > 0);
}

static void json_raw_ratios(struct json *j, const struct result *r)
{
    const struct result *raw = result_find("raw");

    if (!raw || !raw_fig.valid)
        return;
    if (strcmp(r->scenario, "uncontended") == 0) {
        json_raw_ratio(j, "ratio_raw_p50", r->acq.count ? (double)hist_pct(&r->acq, 0.5) : -1,
                       raw->acq.count ? (double)hist_pct(&raw->acq, 0.5) : 0);
        json_raw_ratio(j, "ratio_raw_masters_cpu", r->masters_cpu_us_per_cycle,
                       raw->masters_cpu_us_per_cycle);
    } else if (strcmp(r->scenario, "throughput") == 0) {
        json_raw_ratio(j, "ratio_raw_script_cycles", r->cycles_per_s, raw_fig.script_cycles_per_s);
        json_raw_ratio(j, "ratio_raw_masters_cpu", r->masters_cpu_us_per_cycle,
                       raw_fig.masters_cpu_us_per_cycle);
    }
}

void report_json_line(FILE *f, const struct result *r)
{
    int has_floor = floor_fig.valid && floor_fig.set_p50 > 0;
    struct json j;

    json_init(&j, f);
    json_obj_begin(&j);
    json_kv_cstr(&j, "scenario", r->scenario);
    json_kv_cstr(&j, "fault", r->fault[0] ? r->fault : NULL);
    json_kv_i64(&j, "masters", config.n_masters);
    json_kv_u64(&j, "ops", r->ops);
    json_kv_u64(&j, "ok", r->ok);
    json_kv_u64(&j, "failed", r->failed);
    json_kv_u64(&j, "violations", r->violations);
    json_kv_u64(&j, "checked", r->checked);
    json_kv_u64(&j, "release_failed", r->release_failed);
    json_kv_hist(&j, "acquire_us", &r->acq);
    json_kv_hist(&j, "release_us", &r->rel);
    if (r->fail.count)
        json_kv_hist(&j, "time_to_fail_us", &r->fail);
    json_figure(&j, "cycles_per_s", r->cycles_per_s, r->cycles_per_s >= 0);
    json_figure(&j, "client_cpu_us_per_cycle", r->cpu_us_per_cycle, r->cpu_us_per_cycle >= 0);
    json_figure(&j, "masters_cpu_us_per_cycle", r->masters_cpu_us_per_cycle,
                r->masters_cpu_us_per_cycle >= 0);
    json_figure(&j, "masters_cores", r->masters_cores, r->masters_cores >= 0);
    json_figure(&j, "floor_us", (double)floor_fig.set_p50, has_floor);
    json_figure(&j, "ratio_p50",
                has_floor ? (double)hist_pct(&r->acq, 0.5) / (double)floor_fig.set_p50 : 0,
                has_floor && r->acq.count);
    json_figure(&j, "ratio_p99",
                has_floor ? (double)hist_pct(&r->acq, 0.99) / (double)floor_fig.set_p99 : 0,
                has_floor && r->acq.count && floor_fig.set_p99);
    if (floor_fig.valid && floor_fig.ceiling_cycles_per_s > 0 &&
        (strcmp(r->scenario, "throughput") == 0 || strcmp(r->scenario, "blocking") == 0)) {
        json_figure(&j, "ceiling_cycles_per_s", floor_fig.ceiling_cycles_per_s, 1);
        json_figure(&j, "ratio_ceiling", r->cycles_per_s / floor_fig.ceiling_cycles_per_s, 1);
        json_figure(&j, "ratio_script_ceiling",
                    r->cycles_per_s / floor_fig.script_ceiling_cycles_per_s,
                    floor_fig.script_ceiling_cycles_per_s > 0);
    }
    json_raw_ratios(&j, r);
    json_kv_cstr(&j, "hiredis", bench_hiredis_version());
    json_kv_double(&j, "duration_s", r->duration_s, 2);
    json_kv_u64(&j, "ttl_ms", config.ttl_ms);
    json_kv_u64(&j, "node_timeout_ms", config.node_timeout_ms);
    json_key(&j, "errors");
    json_obj_begin(&j);
    for (int i = 1; i < BENCH_NERR; i++)
        if (r->errs[i])
            json_kv_u64(&j, i == BENCH_NERR - 1 ? "other" : redlock_err_name(-i), r->errs[i]);
    json_obj_end(&j);
    json_lib(&j, &r->lib);
    if (r->skipped)
        json_kv_bool(&j, "skipped", 1);
    if (r->note[0])
        json_kv_cstr(&j, "note", r->note);
    /* The members the scenario added (r->xj wrote them, commas and all). */
    json_raw(&j, r->extra);
    json_obj_end(&j);
    json_end(&j);
}

/* ------------------------------------------------------------------------ */
/* Table                                                                    */
/* ------------------------------------------------------------------------ */

static const char *fmt_u(char *buf, size_t len, uint64_t v, int valid)
{
    if (!valid)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%llu", (unsigned long long)v);
    return buf;
}

static const char *fmt_d(char *buf, size_t len, double v, int prec, int valid)
{
    if (!valid)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.*f", prec, v);
    return buf;
}

static void print_table(struct result **res, int n)
{
    char a[8][32];
    int i;

    printf("\n%-20s %9s %9s %7s %5s | %7s %7s %8s | %7s %7s | %11s | %9s %7s\n", "scenario", "ops",
           "ok", "failed", "viol", "acq p50", "p99", "max", "rel p50", "p99", "x floor", "cycles/s",
           "cpu/cyc");
    printf("%-20s %9s %9s %7s %5s | %7s %7s %8s | %7s %7s | %11s | %9s %7s\n", "", "", "", "", "",
           "us", "us", "us", "us", "us", "p50 / p99", "", "us");
    for (i = 0; i < 136; i++)
        putchar('-');
    putchar('\n');
    for (i = 0; i < n; i++) {
        const struct result *r = res[i];
        int hv = r->acq.count > 0, fv = floor_fig.valid && hv && !r->checked;
        char ratio[32];

        if (r->skipped) {
            printf("%-20s %s\n", r->scenario, r->note);
            continue;
        }
        if (fv)
            snprintf(ratio, sizeof(ratio), "%.2f / %.2f",
                     (double)hist_pct(&r->acq, 0.5) /
                         (double)(floor_fig.set_p50 ? floor_fig.set_p50 : 1),
                     (double)hist_pct(&r->acq, 0.99) /
                         (double)(floor_fig.set_p99 ? floor_fig.set_p99 : 1));
        else
            snprintf(ratio, sizeof(ratio), "-");
        printf("%-20s %9llu %9llu %7llu %5s | %7s %7s %8s | %7s %7s | %11s | %9s %7s\n",
               r->scenario, (unsigned long long)r->ops, (unsigned long long)r->ok,
               (unsigned long long)r->failed, r->checked ? fmt_u(a[0], 32, r->violations, 1) : "-",
               fmt_u(a[1], 32, hist_pct(&r->acq, 0.5), hv),
               fmt_u(a[2], 32, hist_pct(&r->acq, 0.99), hv), fmt_u(a[3], 32, r->acq.max, hv),
               fmt_u(a[4], 32, hist_pct(&r->rel, 0.5), r->rel.count > 0),
               fmt_u(a[5], 32, hist_pct(&r->rel, 0.99), r->rel.count > 0), ratio,
               fmt_d(a[6], 32, r->cycles_per_s, 0, r->cycles_per_s >= 0),
               fmt_d(a[7], 32, r->cpu_us_per_cycle, r->cpu_us_per_cycle >= 1000 ? 0 : 1,
                     r->cpu_us_per_cycle >= 0));
    }
}

/* Once, under the floor: what the library's clock monitor made of each
 * master's clock while the floor ran, and what the restart guard knows. */
static void print_clock_notes(void)
{
    int m;

    if (floor_fig.clock_err[0]) {
        printf("  %-20s clock estimates not taken: %s\n", "floor", floor_fig.clock_err);
        return;
    }
    if (!floor_fig.n_clock)
        return;
    printf("  %-20s clock monitor (blocking client, TIME every 100 ms for %.1f s; rate = master "
           "clock / our monotonic clock):\n",
           "floor", floor_fig.clock_window_s);
    for (m = 0; m < floor_fig.n_clock; m++) {
        char rate[64];

        if (!floor_fig.clock[m].reachable) {
            printf("  %-20s   :%d unreachable\n", "", config.port[m]);
            continue;
        }
        if (floor_fig.clock[m].rate_lo > 0 || floor_fig.clock[m].rate_hi > 0)
            snprintf(rate, sizeof(rate), "%.6f..%.6f", floor_fig.clock[m].rate_lo,
                     floor_fig.clock[m].rate_hi);
        else
            snprintf(rate, sizeof(rate), "unknown");
        printf("  %-20s   :%d rate %s (%llu samples), %s, %llu jumps, %llu rate faults, "
               "offset %+lld us, run_id %.8s, up %lld s%s%s\n",
               "", config.port[m], rate, (unsigned long long)floor_fig.clock[m].samples,
               floor_fig.clock[m].trusted ? "trusted" : "UNTRUSTED",
               (unsigned long long)floor_fig.clock[m].jumps,
               (unsigned long long)floor_fig.clock[m].rate_faults,
               (long long)floor_fig.clock[m].offset_us,
               floor_fig.clock[m].run_id[0] ? floor_fig.clock[m].run_id : "?",
               (long long)floor_fig.clock[m].uptime_s,
               floor_fig.clock[m].aof_always ? ", AOF always" : "",
               floor_fig.clock[m].excluded ? ", EXCLUDED" : "");
    }
}

/* A contention row's hand-offs, grants per owner and fairness. */
static void print_contention_notes(const struct result *r)
{
    /* holders are waiters in contention-mixed too; its owners, processes */
    const char *holder = r->inversions >= 0 || r->waiters_each ? "waiter" : "process";
    const char *who = r->inversions >= 0 ? "waiter" : "process";
    int i;

    if (r->handoff.count && r->duration_s > 0)
        printf("  %-20s handoff p50 %llu us, p99 %llu us, max %llu us over %llu changes of "
               "holder (%.0f/s; %llu acquires returned before the release did, counted as "
               "0); the other %llu grants went back to the releasing %s\n",
               r->scenario, (unsigned long long)hist_pct(&r->handoff, 0.5),
               (unsigned long long)hist_pct(&r->handoff, 0.99), (unsigned long long)r->handoff.max,
               (unsigned long long)r->owner_changes, (double)r->owner_changes / r->duration_s,
               (unsigned long long)r->early_handoffs,
               (unsigned long long)(r->ok > r->owner_changes ? r->ok - r->owner_changes : 0),
               holder);
    if (r->n_owners) {
        printf("  %-20s grants per %s:", r->scenario, who);
        for (i = 0; i < r->n_owners; i++)
            printf(" %llu", (unsigned long long)r->grants_by[i]);
        printf("; Jain's fairness %.3f", r->fairness_jain);
        if (r->inversions >= 0)
            printf("; %lld grants overtook an older waiter (inversions)", (long long)r->inversions);
        printf("\n");
    }
    if (r->waiters_each) {
        printf("  %-20s grants per waiter, %d per process:", r->scenario, r->waiters_each);
        for (i = 0; i < r->n_owners * r->waiters_each && i < BENCH_MAX_CLIENTS; i++)
            printf("%s %llu", i && i % r->waiters_each == 0 ? " |" : "",
                   (unsigned long long)r->grants_by_waiter[i]);
        printf("; Jain's fairness %.3f\n", r->fairness_jain_waiters);
        printf("  %-20s while it ran: at most %lld grants in a row to one process; %llu of the "
               "grants went to another process than the last; at most %lld in a row ahead of "
               "another process's older waiter\n",
               r->scenario, (long long)r->longest_run, (unsigned long long)r->process_changes,
               (long long)r->longest_jumps);
    }
}

static void print_row_notes(const struct result *r)
{
    char errs[256] = "", lib[256];
    size_t used = 0;
    int j;

    for (j = 1; j < BENCH_NERR && used < sizeof(errs); j++)
        if (r->errs[j])
            used += (size_t)snprintf(errs + used, sizeof(errs) - used, "%s%s x%llu",
                                     used ? ", " : "",
                                     j == BENCH_NERR - 1 ? "other" : redlock_err_name(-j),
                                     (unsigned long long)r->errs[j]);
    if (r->fault[0])
        printf("  %-20s fault: %s\n", r->scenario, r->fault);
    if (r->fail.count)
        printf("  %-20s failed acquires: %s; time to fail p50 %llu us, p99 %llu us, max %llu us\n",
               r->scenario, errs, (unsigned long long)hist_pct(&r->fail, 0.5),
               (unsigned long long)hist_pct(&r->fail, 0.99), (unsigned long long)r->fail.max);
    if (r->lib.acquires) {
        opstats_line(lib, sizeof(lib), &r->lib);
        printf("  %-20s library (op hook): %s\n", r->scenario, lib);
        opstats_votes_line(lib, sizeof(lib), &r->lib);
        if (lib[0])
            printf("  %-20s masters failing or left out (deciding attempt's votes): %s\n",
                   r->scenario, lib);
    }
    if (r->masters_cores >= 0)
        printf("  %-20s masters: %.2f cores busy, %.1f us CPU per cycle (all %d together)%s%s\n",
               r->scenario, r->masters_cores, r->masters_cpu_us_per_cycle, config.n_masters,
               r->masters_cmds[0] ? "; most time in " : "", r->masters_cmds);
    if (r->masters_calls[0])
        printf("  %-20s masters ran per cycle, each: %s (calls from scripts included)\n",
               r->scenario, r->masters_calls);
    if (r->release_failed)
        printf("  %-20s %llu releases did not return 0\n", r->scenario,
               (unsigned long long)r->release_failed);
    if (r->checked)
        printf("  %-20s %llu lock windows checked, %llu overlapping%s\n", r->scenario,
               (unsigned long long)r->checked, (unsigned long long)r->violations,
               r->violations ? "" : " (none)");
    print_contention_notes(r);
    if (r->violations)
        printf("  %-20s longest overlap %.0f us\n", r->scenario, r->max_overlap_us);
    if (r->note[0])
        printf("  %-20s %s\n", r->scenario, r->note);
}

static void print_notes(struct result **res, int n)
{
    int i;

    printf("\nnotes: acq/rel = one acquire/release call; for contention* and restart* acq is the\n"
           "wait (retries included) and x floor is left out. viol '-' = keys are distinct,\n"
           "nothing can overlap. cpu/cyc = this process's CPU per acquire+release cycle\n"
           "(contention: the K children's). cycles/s for contention* = grants/s, whoever\n"
           "gets the lock next; a handoff's latency runs from a release returning to the\n"
           "next acquire returning in another process or waiter (CLOCK_MONOTONIC).\n");
    for (i = 0; i < n; i++) {
        if (res[i]->skipped)
            continue;
        print_row_notes(res[i]);
        if (strcmp(res[i]->scenario, "floor") == 0)
            print_clock_notes();
    }
}

void report_all(struct result **res, int n)
{
    char path[600];
    FILE *f;
    int i;

    progress_clear();
    print_table(res, n);
    print_notes(res, n);
    report_targets();

    if (config.json_stdout) {
        printf("\nJSON (one line per scenario):\n");
        for (i = 0; i < n; i++)
            report_json_line(stdout, res[i]);
    }
    if (config.out_dir && mkdir_p(config.out_dir) == 0) {
        snprintf(path, sizeof(path), "%s/results.jsonl", config.out_dir);
        if ((f = fopen(path, "w"))) {
            for (i = 0; i < n; i++)
                report_json_line(f, res[i]);
            fclose(f);
            printf("\nwrote %s\n", path);
        }
    }
    if (timeline_plot_msg()[0])
        printf("%s\n", timeline_plot_msg());
    if (config.json_path) {
        if ((f = fopen(config.json_path, "w"))) {
            for (i = 0; i < n; i++)
                report_json_line(f, res[i]);
            fclose(f);
            printf("wrote %s\n", config.json_path);
        } else {
            fprintf(stderr, "redlock-bench: --json %s: %s\n", config.json_path, strerror(errno));
        }
    }
}
