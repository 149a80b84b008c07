/* report.c - everything redlock-bench prints: the progress line while it
 * runs (terminal only), then one table, notes, the targets, and one JSON
 * line per scenario; the timeline's data file and gnuplot plot.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int progress_shown;
static char plot_msg[700];            /* printed with the report */
static uint64_t progress_last;

/* ------------------------------------------------------------------------ */
/* Progress line                                                            */
/* ------------------------------------------------------------------------ */

void progress(const char *label, double elapsed_s, double total_s, uint64_t ok, uint64_t failed)
{
    uint64_t t = now_us();

    if (!config.tty || t - progress_last < 200000u)
        return;
    progress_last = t;
    if (elapsed_s > total_s)
        elapsed_s = total_s;
    printf("\r\033[K  [%d/%d] %-18s %5.1f / %.1f s   ok %llu", config.step, config.n_steps,
           label, elapsed_s, total_s, (unsigned long long)ok);
    if (failed)
        printf("   failed %llu", (unsigned long long)failed);
    fflush(stdout);
    progress_shown = 1;
}

void progress_clear(void)
{
    if (progress_shown) {
        printf("\r\033[K");
        fflush(stdout);
        progress_shown = 0;
    }
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                     */
/* ------------------------------------------------------------------------ */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void json_pcts(FILE *f, const char *name, const struct hist *h)
{
    fprintf(f, ",\"%s\":", name);
    if (h->count == 0) {
        fputs("null", f);
        return;
    }
    fprintf(f, "{\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,\"p999\":%llu,\"max\":%llu}",
            (unsigned long long)hist_pct(h, 0.5), (unsigned long long)hist_pct(h, 0.9),
            (unsigned long long)hist_pct(h, 0.99), (unsigned long long)hist_pct(h, 0.999),
            (unsigned long long)h->max);
}

static void json_num(FILE *f, const char *name, double v, int valid)
{
    if (valid)
        fprintf(f, ",\"%s\":%.*f", name, v >= 100 ? 0 : 2, v);
    else
        fprintf(f, ",\"%s\":null", name);
}

void report_json_line(FILE *f, const struct result *r)
{
    int i, first = 1;
    int has_floor = floor_fig.valid && floor_fig.set_p50 > 0;

    fputs("{\"scenario\":", f);
    json_str(f, r->scenario);
    fputs(",\"fault\":", f);
    if (r->fault[0])
        json_str(f, r->fault);
    else
        fputs("null", f);
    fprintf(f, ",\"masters\":%d,\"ops\":%llu,\"ok\":%llu,\"failed\":%llu,\"violations\":%llu,"
            "\"checked\":%llu,\"release_failed\":%llu", config.n_masters,
            (unsigned long long)r->ops, (unsigned long long)r->ok, (unsigned long long)r->failed,
            (unsigned long long)r->violations, (unsigned long long)r->checked,
            (unsigned long long)r->release_failed);
    json_pcts(f, "acquire_us", &r->acq);
    json_pcts(f, "release_us", &r->rel);
    if (r->fail.count)
        json_pcts(f, "time_to_fail_us", &r->fail);
    json_num(f, "cycles_per_s", r->cycles_per_s, r->cycles_per_s >= 0);
    json_num(f, "client_cpu_us_per_cycle", r->cpu_us_per_cycle, r->cpu_us_per_cycle >= 0);
    json_num(f, "masters_cpu_us_per_cycle", r->masters_cpu_us_per_cycle, r->masters_cpu_us_per_cycle >= 0);
    json_num(f, "masters_cores", r->masters_cores, r->masters_cores >= 0);
    json_num(f, "floor_us", (double)floor_fig.set_p50, has_floor);
    json_num(f, "ratio_p50", has_floor ? (double)hist_pct(&r->acq, 0.5) / (double)floor_fig.set_p50 : 0,
             has_floor && r->acq.count);
    json_num(f, "ratio_p99", has_floor ? (double)hist_pct(&r->acq, 0.99) / (double)floor_fig.set_p99 : 0,
             has_floor && r->acq.count && floor_fig.set_p99);
    if (floor_fig.valid && floor_fig.ceiling_cycles_per_s > 0 &&
        (strcmp(r->scenario, "throughput") == 0 || strcmp(r->scenario, "blocking") == 0)) {
        json_num(f, "ceiling_cycles_per_s", floor_fig.ceiling_cycles_per_s, 1);
        json_num(f, "ratio_ceiling", r->cycles_per_s / floor_fig.ceiling_cycles_per_s, 1);
        json_num(f, "ratio_script_ceiling", r->cycles_per_s / floor_fig.script_ceiling_cycles_per_s,
                 floor_fig.script_ceiling_cycles_per_s > 0);
    }
    fprintf(f, ",\"duration_s\":%.2f,\"ttl_ms\":%u,\"node_timeout_ms\":%u,\"errors\":{",
            r->duration_s, config.ttl_ms, config.node_timeout_ms);
    for (i = 1; i < BENCH_NERR; i++) {
        if (!r->errs[i])
            continue;
        fprintf(f, "%s\"%s\":%llu", first ? "" : ",", i == BENCH_NERR - 1 ? "other" :
                redlock_err_name(-i), (unsigned long long)r->errs[i]);
        first = 0;
    }
    fputc('}', f);
    if (r->skipped)
        fputs(",\"skipped\":true", f);
    if (r->note[0]) {
        fputs(",\"note\":", f);
        json_str(f, r->note);
    }
    fputs(r->extra, f);
    fputs("}\n", f);
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

static const struct result *find(struct result **res, int n, const char *name)
{
    int i;

    for (i = 0; i < n; i++)
        if (strcmp(res[i]->scenario, name) == 0 && !res[i]->skipped)
            return res[i];
    return NULL;
}

static void print_table(struct result **res, int n)
{
    char a[8][32];
    int i;

    printf("\n%-16s %9s %9s %7s %5s | %7s %7s %8s | %7s %7s | %11s | %9s %7s\n",
           "scenario", "ops", "ok", "failed", "viol", "acq p50", "p99", "max", "rel p50", "p99",
           "x floor", "cycles/s", "cpu/cyc");
    printf("%-16s %9s %9s %7s %5s | %7s %7s %8s | %7s %7s | %11s | %9s %7s\n",
           "", "", "", "", "", "us", "us", "us", "us", "us", "p50 / p99", "", "us");
    for (i = 0; i < 132; i++)
        putchar('-');
    putchar('\n');
    for (i = 0; i < n; i++) {
        const struct result *r = res[i];
        int hv = r->acq.count > 0, fv = floor_fig.valid && hv && !r->checked;
        char ratio[32];

        if (r->skipped) {
            printf("%-16s %s\n", r->scenario, r->note);
            continue;
        }
        if (fv)
            snprintf(ratio, sizeof(ratio), "%.2f / %.2f",
                     (double)hist_pct(&r->acq, 0.5) / (double)(floor_fig.set_p50 ? floor_fig.set_p50 : 1),
                     (double)hist_pct(&r->acq, 0.99) / (double)(floor_fig.set_p99 ? floor_fig.set_p99 : 1));
        else
            snprintf(ratio, sizeof(ratio), "-");
        printf("%-16s %9llu %9llu %7llu %5s | %7s %7s %8s | %7s %7s | %11s | %9s %7s\n",
               r->scenario, (unsigned long long)r->ops, (unsigned long long)r->ok,
               (unsigned long long)r->failed,
               r->checked ? fmt_u(a[0], 32, r->violations, 1) : "-",
               fmt_u(a[1], 32, hist_pct(&r->acq, 0.5), hv), fmt_u(a[2], 32, hist_pct(&r->acq, 0.99), hv),
               fmt_u(a[3], 32, r->acq.max, hv),
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
        printf("  %-15s clock estimates not taken: %s\n", "floor", floor_fig.clock_err);
        return;
    }
    if (!floor_fig.n_clock)
        return;
    printf("  %-15s clock monitor (blocking client, TIME every 100 ms for %.1f s; rate = master "
           "clock / our monotonic clock):\n", "floor", floor_fig.clock_window_s);
    for (m = 0; m < floor_fig.n_clock; m++) {
        char rate[64];

        if (!floor_fig.clock[m].reachable) {
            printf("  %-15s   :%d unreachable\n", "", config.port[m]);
            continue;
        }
        if (floor_fig.clock[m].rate_lo > 0 || floor_fig.clock[m].rate_hi > 0)
            snprintf(rate, sizeof(rate), "%.6f..%.6f", floor_fig.clock[m].rate_lo,
                     floor_fig.clock[m].rate_hi);
        else
            snprintf(rate, sizeof(rate), "unknown");
        printf("  %-15s   :%d rate %s (%llu samples), %s, %llu jumps, %llu rate faults, "
               "offset %+lld us, run_id %.8s, up %lld s%s%s\n", "", config.port[m], rate,
               (unsigned long long)floor_fig.clock[m].samples,
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

static void print_notes(struct result **res, int n)
{
    int i, j;

    printf("\nnotes: acq/rel = one acquire/release call; for contention* and restart* acq is the\n"
           "wait (retries included) and x floor is left out. viol '-' = keys are distinct,\n"
           "nothing can overlap. cpu/cyc = this process's CPU per acquire+release cycle\n"
           "(contention: the K children's). cycles/s for contention* = grants/s (handoffs/s),\n"
           "whoever gets the lock next; a handoff's latency runs from a release returning to\n"
           "the next acquire returning in another process (CLOCK_MONOTONIC).\n");
    for (i = 0; i < n; i++) {
        const struct result *r = res[i];
        char errs[256] = "";
        size_t used = 0;

        if (r->skipped)
            continue;
        for (j = 1; j < BENCH_NERR && used < sizeof(errs); j++)
            if (r->errs[j])
                used += (size_t)snprintf(errs + used, sizeof(errs) - used, "%s%s x%llu",
                                         used ? ", " : "", j == BENCH_NERR - 1 ? "other" :
                                         redlock_err_name(-j), (unsigned long long)r->errs[j]);
        if (r->fault[0])
            printf("  %-15s fault: %s\n", r->scenario, r->fault);
        if (r->fail.count)
            printf("  %-15s failed acquires: %s; time to fail p50 %llu us, p99 %llu us, max %llu us\n",
                   r->scenario, errs, (unsigned long long)hist_pct(&r->fail, 0.5),
                   (unsigned long long)hist_pct(&r->fail, 0.99), (unsigned long long)r->fail.max);
        if (r->masters_cores >= 0)
            printf("  %-15s masters: %.2f cores busy, %.1f us CPU per cycle (all %d together)\n",
                   r->scenario, r->masters_cores, r->masters_cpu_us_per_cycle, config.n_masters);
        if (r->release_failed)
            printf("  %-15s %llu releases did not return 0\n", r->scenario,
                   (unsigned long long)r->release_failed);
        if (r->checked)
            printf("  %-15s %llu lock windows checked, %llu overlapping%s\n", r->scenario,
                   (unsigned long long)r->checked, (unsigned long long)r->violations,
                   r->violations ? "" : " (none)");
        if (r->handoff.count && r->duration_s > 0)
            printf("  %-15s handoff p50 %llu us, p99 %llu us, max %llu us over %llu changes of "
                   "holder (%.0f/s; %llu acquires returned before the release did, counted as "
                   "0); the other %llu grants went back to the releasing process\n",
                   r->scenario, (unsigned long long)hist_pct(&r->handoff, 0.5),
                   (unsigned long long)hist_pct(&r->handoff, 0.99),
                   (unsigned long long)r->handoff.max, (unsigned long long)r->owner_changes,
                   (double)r->owner_changes / r->duration_s,
                   (unsigned long long)r->early_handoffs,
                   (unsigned long long)(r->ok > r->owner_changes ? r->ok - r->owner_changes : 0));
        if (r->violations)
            printf("  %-15s longest overlap %.0f us\n", r->scenario, r->max_overlap_us);
        if (r->note[0])
            printf("  %-15s %s\n", r->scenario, r->note);
        if (strcmp(r->scenario, "floor") == 0)
            print_clock_notes();
    }
}

static void target(const char *what, const char *got, int met, int known)
{
    printf("  %-8s %-56s %s\n", !known ? "n/a" : met ? "MET" : "MISSED", what, got);
}

static void print_targets(struct result **res, int n)
{
    const struct result *u = find(res, n, "uncontended"), *t = find(res, n, "throughput"),
                        *c = find(res, n, "contention"), *p = find(res, n, "pause2"),
                        *k3 = find(res, n, "kill3"), *k1 = find(res, n, "kill1"),
                        *k2 = find(res, n, "kill2");
    char got[160];
    uint64_t acquisitions = 0, checked = 0, viol = 0;
    int i, fv = floor_fig.valid;

    printf("\ntargets (issue 7):\n");
    if (u && fv) {
        double r50 = (double)hist_pct(&u->acq, 0.5) / (double)floor_fig.set_p50;
        double r99 = (double)hist_pct(&u->acq, 0.99) / (double)floor_fig.set_p99;

        snprintf(got, sizeof(got), "%.2f x (%llu / %llu us; raw quorum floor %llu us)", r50,
                 (unsigned long long)hist_pct(&u->acq, 0.5), (unsigned long long)floor_fig.set_p50,
                 (unsigned long long)floor_fig.quorum_p50);
        target("uncontended acquire p50 <= 1.5 x floor p50", got, r50 <= 1.5, 1);
        snprintf(got, sizeof(got), "%.2f x (%llu / %llu us)", r99,
                 (unsigned long long)hist_pct(&u->acq, 0.99), (unsigned long long)floor_fig.set_p99);
        target("uncontended acquire p99 <= 3 x floor p99", got, r99 <= 3.0, 1);
    } else {
        target("uncontended acquire p50 <= 1.5 x floor p50", "(not run)", 0, 0);
    }
    if (u && u->cpu_us_per_cycle >= 0) {
        snprintf(got, sizeof(got), "%.1f us", u->cpu_us_per_cycle);
        target("client CPU <= 30 us per uncontended cycle", got, u->cpu_us_per_cycle <= 30.0, 1);
    }
    if (t && fv && floor_fig.ceiling_cycles_per_s > 0) {
        double r = t->cycles_per_s / floor_fig.ceiling_cycles_per_s;

        snprintf(got, sizeof(got), "%.0f%% (%.0f of %.0f cycles/s; %.0f%% of the script ceiling)",
                 100.0 * r, t->cycles_per_s, floor_fig.ceiling_cycles_per_s,
                 floor_fig.script_ceiling_cycles_per_s > 0 ?
                 100.0 * t->cycles_per_s / floor_fig.script_ceiling_cycles_per_s : 0.0);
        target("async throughput >= 90% of the ceiling", got, r >= 0.9, 1);
    }
    /* Both contention rows, so the report says which configuration meets
     * it; and how close a handoff comes to one round trip (issue 5). */
    for (i = 0; i < 2; i++) {
        const char *name = i == 0 ? "contention" : "contention-poll";
        char what[80];

        if ((c = find(res, n, name)) == NULL)
            continue;
        snprintf(got, sizeof(got), "%.0f handoffs/s (%.0f/s to another process), %llu failed "
                 "(K=%d)", c->cycles_per_s,
                 c->duration_s > 0 ? (double)c->owner_changes / c->duration_s : 0.0,
                 (unsigned long long)c->failed, config.clients);
        snprintf(what, sizeof(what), "%s: >= 2000 handoffs/s, no failed acquire", name);
        target(what, got, c->cycles_per_s >= 2000.0 && c->failed == 0 && !c->note[0], 1);
    }
    for (i = 0; i < 2; i++) {
        const char *name = i == 0 ? "contention" : "contention-poll";
        char what[80];

        if ((c = find(res, n, name)) == NULL || !c->handoff.count)
            continue;
        snprintf(what, sizeof(what), "%s: handoff latency p50 / p99", name);
        if (fv && floor_fig.quorum_p50)
            snprintf(got, sizeof(got), "%llu / %llu us (%.1f x the quorum round trip, %llu us)",
                     (unsigned long long)hist_pct(&c->handoff, 0.5),
                     (unsigned long long)hist_pct(&c->handoff, 0.99),
                     (double)hist_pct(&c->handoff, 0.5) / (double)floor_fig.quorum_p50,
                     (unsigned long long)floor_fig.quorum_p50);
        else
            snprintf(got, sizeof(got), "%llu / %llu us",
                     (unsigned long long)hist_pct(&c->handoff, 0.5),
                     (unsigned long long)hist_pct(&c->handoff, 0.99));
        printf("  %-8s %-56s %s\n", "(info)", what, got);
    }
    if (k1 || k2) {
        snprintf(got, sizeof(got), "kill1 %llu/%llu, kill2 %llu/%llu ok",
                 (unsigned long long)(k1 ? k1->ok : 0), (unsigned long long)(k1 ? k1->ops : 0),
                 (unsigned long long)(k2 ? k2->ok : 0), (unsigned long long)(k2 ? k2->ops : 0));
        target("kill 1 and kill 2 of 5: every acquire succeeds", got,
               (!k1 || (k1->failed == 0 && k1->ok > 0)) && (!k2 || (k2->failed == 0 && k2->ok > 0)), 1);
    }
    if (p && floor_fig.healthy_p99) {
        double r = (double)hist_pct(&p->acq, 0.99) / (double)floor_fig.healthy_p99;

        snprintf(got, sizeof(got), "%.2f x (%llu / %llu us), %llu failed", r,
                 (unsigned long long)hist_pct(&p->acq, 0.99),
                 (unsigned long long)floor_fig.healthy_p99, (unsigned long long)p->failed);
        target("pause 2 of 5: acquire p99 <= 1.2 x healthy p99", got,
               r <= 1.2 && p->failed == 0 && p->acq.count > 0, 1);
    }
    if (k3) {
        snprintf(got, sizeof(got), "p99 %llu us, max %llu us, %llu acquires succeeded",
                 (unsigned long long)hist_pct(&k3->fail, 0.99), (unsigned long long)k3->fail.max,
                 (unsigned long long)k3->ok);
        target("kill 3 of 5: fails with ENOQUORUM within 1 node timeout", got,
               k3->ok == 0 && k3->fail.count > 0 && k3->fail.max <= config.node_timeout_ms * 1000u &&
               k3->errs[-REDLOCK_ENOQUORUM] == k3->failed, 1);
    }
    for (i = 0; i < n; i++) {
        if (res[i]->skipped || strcmp(res[i]->scenario, "restart") == 0 ||
            strcmp(res[i]->scenario, "floor") == 0)
            continue;
        acquisitions += res[i]->ok;
        checked += res[i]->checked;
        viol += res[i]->violations;
    }
    snprintf(got, sizeof(got), "%llu violations; %llu acquisitions, %llu on a shared resource",
             (unsigned long long)viol, (unsigned long long)acquisitions, (unsigned long long)checked);
    target("no violation where safe, over >= 100000 acquisitions", got,
           viol == 0 && acquisitions >= 100000, 1);
    if ((c = find(res, n, "restart-guard")) != NULL) {
        snprintf(got, sizeof(got), "%llu violations in %llu windows; no holder for %.0f ms",
                 (unsigned long long)c->violations, (unsigned long long)c->checked,
                 c->max_gap_ms);
        target("restart without persistence, guard on: no violation", got,
               c->violations == 0 && c->checked > 0 && strncmp(c->note, "error", 5) != 0, 1);
    }
    if ((c = find(res, n, "restart")) != NULL)
        printf("  %-8s %-56s %llu violations in %llu windows\n", "(info)",
               "restart without persistence, guard off (not claimed safe)",
               (unsigned long long)c->violations, (unsigned long long)c->checked);
}

static int mkdir_p(const char *dir)
{
    char buf[512];
    char *p;

    snprintf(buf, sizeof(buf), "%s", dir);
    for (p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    if (mkdir(buf, 0755) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

void report_all(struct result **res, int n)
{
    char path[600];
    FILE *f;
    int i;

    progress_clear();
    print_table(res, n);
    print_notes(res, n);
    print_targets(res, n);

    if (config.json_stdout) {
        printf("\nJSON (one line per scenario):\n");
        for (i = 0; i < n; i++)
            report_json_line(stdout, res[i]);
    }
    if (config.out_dir && mkdir_p(config.out_dir) == 0) {
        snprintf(path, sizeof(path), "%s/results.jsonl", config.out_dir);
        if ((f = fopen(path, "w")) != NULL) {
            for (i = 0; i < n; i++)
                report_json_line(f, res[i]);
            fclose(f);
            printf("\nwrote %s\n", path);
        }
    }
    if (plot_msg[0])
        printf("%s\n", plot_msg);
    if (config.json_path) {
        if ((f = fopen(config.json_path, "w")) != NULL) {
            for (i = 0; i < n; i++)
                report_json_line(f, res[i]);
            fclose(f);
            printf("wrote %s\n", config.json_path);
        } else {
            fprintf(stderr, "redlock-bench: --json %s: %s\n", config.json_path, strerror(errno));
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Timeline data and plot                                                   */
/* ------------------------------------------------------------------------ */

static int have_gnuplot(void)
{
    const char *path = getenv("PATH");
    char buf[4096], *save = NULL, *dir, exe[4200];

    if (!path)
        return 0;
    snprintf(buf, sizeof(buf), "%s", path);
    for (dir = strtok_r(buf, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        snprintf(exe, sizeof(exe), "%s/gnuplot", dir);
        if (access(exe, X_OK) == 0)
            return 1;
    }
    return 0;
}

static int run_gnuplot(const char *script)
{
    char *const argv[] = { "gnuplot", (char *)script, NULL };
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status, rc;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    register_child(pid);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    unregister_child(pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

void report_timeline(const struct timeline *tl)
{
    char path[600], gp[600];
    FILE *f;
    int i, j;
    double T = tl->n_buckets * (TL_BUCKET_US / 1e6);

    if (!config.out_dir || mkdir_p(config.out_dir) < 0) {
        fprintf(stderr, "redlock-bench: cannot create --out %s\n", config.out_dir);
        return;
    }
    snprintf(path, sizeof(path), "%s/timeline.tsv", config.out_dir);
    if (!(f = fopen(path, "w")))
        return;
    fprintf(f, "# t_s\tok_per_s\tfailed_per_s\tp50_ms\tp99_ms\tmax_ms\n");
    for (i = 0; i < tl->n_buckets; i++) {
        const struct hist *h = &tl->acq[i];
        double scale = 1e6 / TL_BUCKET_US;

        fprintf(f, "%.1f\t%.0f\t%.0f", i * (TL_BUCKET_US / 1e6), (double)tl->ok[i] * scale,
                (double)tl->failed[i] * scale);
        if (h->count)
            fprintf(f, "\t%.3f\t%.3f\t%.3f\n", (double)hist_pct(h, 0.5) / 1000.0,
                    (double)hist_pct(h, 0.99) / 1000.0, (double)h->max / 1000.0);
        else
            fprintf(f, "\tNaN\tNaN\tNaN\n");
    }
    fclose(f);
    snprintf(path, sizeof(path), "%s/timeline-events.tsv", config.out_dir);
    if ((f = fopen(path, "w")) != NULL) {
        fprintf(f, "# t_s\tevent\n");
        for (i = 0; i < tl->n_events; i++)
            fprintf(f, "%.3f\t%s\n", tl->ev_t[i], tl->ev_label[i]);
        fclose(f);
    }

    snprintf(gp, sizeof(gp), "%s/timeline.gp", config.out_dir);
    if (!(f = fopen(gp, "w")))
        return;
    fprintf(f, "# written by redlock-bench; paths are relative to where it ran\n"
               "set datafile separator '\\t'\n"
               "set xrange [0:%.1f]\nset grid\nset key outside right top\n"
               "set xlabel 'time (s)'\n", T);
    /* one arrow per event, one label per group of events at the same time */
    for (i = 0; i < tl->n_events; i = j) {
        char label[256];
        size_t used = 0;

        used += (size_t)snprintf(label, sizeof(label), "%s", tl->ev_label[i]);
        for (j = i + 1; j < tl->n_events && tl->ev_t[j] - tl->ev_t[i] < 0.25; j++) {
            const char *sp = strchr(tl->ev_label[j], ' ');
            size_t alen = sp ? (size_t)(sp - tl->ev_label[j]) : strlen(tl->ev_label[j]);

            if (sp && strncmp(tl->ev_label[j], tl->ev_label[i], alen) == 0)
                used += (size_t)snprintf(label + used, sizeof(label) - used, ",%s", sp + 1);
            else
                used += (size_t)snprintf(label + used, sizeof(label) - used, "; %s", tl->ev_label[j]);
            if (used >= sizeof(label))
                used = sizeof(label) - 1;
        }
        fprintf(f, "set arrow from %.3f, graph 0 to %.3f, graph 1 nohead lc rgb '#c00000' dt 2\n",
                tl->ev_t[i], tl->ev_t[i]);
        fprintf(f, "set label \"%s\" at %.3f, graph 0.98 rotate by 90 right offset -0.7,0 "
                   "font ',9' textcolor rgb '#c00000'\n", label, tl->ev_t[i]);
    }
    for (i = 0; i < 2; i++) {
        if (i == 0)
            fprintf(f, "set terminal svg size 1200,760 dynamic font 'sans,11'\n"
                       "set output '%s/timeline.svg'\n", config.out_dir);
        else
            fprintf(f, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
                       "set terminal pngcairo size 1200,760 font 'sans,10'\n"
                       "set output '%s/timeline.png'\n", config.out_dir);
        fprintf(f, "set multiplot layout 2,1 title 'redlock-bench timeline: %d masters, %d cycles "
                   "in flight, node timeout %u ms, 100 ms buckets'\n"
                   "set ylabel 'acquire latency (ms)'\nset logscale y\n"
                   "plot '%s/timeline.tsv' using 1:4 with steps lw 2 title 'p50', "
                   "'' using 1:5 with steps lw 2 title 'p99', '' using 1:6 with steps title 'max'\n"
                   "unset logscale y\nset ylabel 'acquires per second'\n"
                   "plot '%s/timeline.tsv' using 1:2 with steps lw 2 lc rgb '#008000' title 'ok/s', "
                   "'' using 1:3 with steps lw 2 lc rgb '#c00000' title 'failed/s'\n"
                   "unset multiplot\n",
                config.n_masters, 4, config.node_timeout_ms, config.out_dir, config.out_dir);
        if (i == 1)
            fprintf(f, "}\n");
    }
    fclose(f);
    if (!have_gnuplot())
        snprintf(plot_msg, sizeof(plot_msg), "plot: gnuplot is not installed, so no picture; "
                 "timeline data in %s/timeline.tsv", config.out_dir);
    else if (run_gnuplot(gp) != 0)
        snprintf(plot_msg, sizeof(plot_msg), "plot: gnuplot %s failed; timeline data in "
                 "%s/timeline.tsv", gp, config.out_dir);
    else
        snprintf(plot_msg, sizeof(plot_msg), "plot: %s/timeline.svg (fault events marked; "
                 "data in %s/timeline.tsv)", config.out_dir, config.out_dir);
}
