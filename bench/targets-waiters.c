/* targets-waiters.c - issue 31's targets: waiters in one process, the
 * local hand-off's mixed row, and the library at its guard's floor, each
 * against a row of this same run (targets.c prints the others).
 */
#include "bench.h"
#include "targets.h"

#include <string.h>

/* "1.23 x (456 / 789 us)": one figure of this run against another, in
 * the decimals its unit wants; "(not run: @rows)" when either is missing
 * (its row not run or failed, or the figure not read: <= 0). Returns the
 * ratio, or -1 when a figure is missing. */
static double ratio_got(char *got, size_t len, double num, double den, const char *unit,
                        const char *rows)
{
    int prec = strcmp(unit, "us") == 0;

    if (num <= 0 || den <= 0) {
        snprintf(got, len, "(not run: %s)", rows);
        return -1;
    }
    snprintf(got, len, "%.2f x (%.*f / %.*f %s)", num / den, prec, num, prec, den, unit);
    return num / den;
}

enum { AT_LEAST, AT_MOST };

/* Issue 31's targets: @num / @den at least or at most @limit; n/a when a
 * figure is missing. */
static void ratio_target(const char *what, const char *rows, double num, double den,
                         const char *unit, double limit, int bound)
{
    char got[200];
    double x = ratio_got(got, sizeof(got), num, den, unit, rows);

    target(what, got, bound == AT_MOST ? x <= limit : x >= limit, x >= 0);
}

/* A row's figure for ratio_got(): 0 when the row was not run or failed. */
static double masters_cpu(const struct result *r)
{
    return r && row_ok(r) ? r->masters_cpu_us_per_cycle : 0;
}

static double rate(const struct result *r)
{
    return r && row_ok(r) ? r->cycles_per_s : 0;
}

/* contention-mixed: processes of several waiters, each process on one
 * client; fairness across processes, and no run of grants to one process
 * longer than the library's bound B. */
static void mixed_targets(const struct result *m, const struct result *h, const struct result *ip,
                          const struct result *u)
{
    const char *what = "mixed: Jain across processes >= 0.95, 0 failed";
    uint32_t bound = bench_local_run_max();
    char got[240];
    size_t n;

    if (!m || !row_ok(m) || m->fairness_jain < 0) {
        target(what, "(not run: contention-mixed)", 0, 0);
        target("mixed: longest run of grants to one process <= B", "(not run: contention-mixed)", 0,
               0);
        target("mixed: grants in a row ahead of another process's older waiter <= B - 1",
               "(not run: contention-mixed)", 0, 0);
        return;
    }
    snprintf(got, sizeof(got), "%.3f (%.3f across its %d x %d waiters), %llu failed, %.0f grants/s",
             m->fairness_jain, m->fairness_jain_waiters, m->n_owners, m->waiters_each,
             (unsigned long long)m->failed, m->cycles_per_s);
    target(what, got, m->fairness_jain >= 0.95 && m->failed == 0, 1);
    snprintf(got, sizeof(got), "%lld in a row at most (B = %u, local_run_max%s)",
             (long long)m->longest_run, bound, bound < 2 ? ": no local hand-off" : "");
    target("mixed: longest run of grants to one process <= B", got,
           m->longest_run >= 1 && (uint64_t)m->longest_run <= bound, bound >= 2);
    /* What B bounds (docs/waiting.md): a run of grants ahead of the queue's
     * order. The run above can be longer by the queue's own order. */
    snprintf(got, sizeof(got), "%lld in a row at most (B - 1 = %u)", (long long)m->longest_jumps,
             bound ? bound - 1 : 0);
    target("mixed: grants in a row ahead of another process's older waiter <= B - 1", got,
           m->longest_jumps >= 0 && (uint64_t)m->longest_jumps + 1 <= bound,
           bound >= 2 && m->longest_jumps >= 0);
    if (ratio_got(got, sizeof(got), rate(m), rate(h), "grants/s", "") >= 0) {
        n = strlen(got);
        if (rate(ip) > 0)
            snprintf(got + n, sizeof(got) - n, "; %.2f x contention-inproc's", rate(m) / rate(ip));
        info("mixed: grants/s against contention-hold's", got);
    }
    if (ratio_got(got, sizeof(got), masters_cpu(m), masters_cpu(u), "us", "") >= 0)
        info("mixed: masters' CPU per grant against one uncontended cycle's", got);
}

/* Issue 31: waiters in one process, and the library at its guard's floor,
 * each against a row of this same run. The dead-waiter row's target is
 * issue 18's, above, as it is defined there; "every existing contention
 * row no worse" compares runs, so bench/RESULTS.md holds it, not one run. */
void waiter_targets(void)
{
    const struct result *u = result_find("uncontended"), *t = result_find("throughput"),
                        *g = result_find("raw-guard"), *h = result_find("contention-hold"),
                        *ip = result_find("contention-inproc"),
                        *m = result_find("contention-mixed");
    const char *what = "inproc: >= 1.6 x contention-hold, Jain >= 0.95, 0 failed";
    char got[200], tput[100];
    double x;
    size_t n;

    ratio_target("uncontended: masters' CPU per cycle <= 1.1 x raw-guard's",
                 "uncontended and raw-guard", masters_cpu(u), masters_cpu(g), "us", 1.1, AT_MOST);
    snprintf(tput, sizeof(tput), "throughput, %d in flight: >= 0.8 x raw-guard's", config.inflight);
    ratio_target(tput, "throughput and raw-guard", rate(t),
                 guard_fig.valid ? guard_fig.cycles_per_s : 0, "cycles/s", 0.8, AT_LEAST);
    x = ratio_got(got, sizeof(got), rate(ip), rate(h), "grants/s",
                  "contention-inproc and contention-hold");
    if (x >= 0) {
        n = strlen(got);
        snprintf(got + n, sizeof(got) - n, ", %llu failed, fairness %.3f",
                 (unsigned long long)ip->failed, ip->fairness_jain);
    }
    target(what, got, x >= 1.6 && ip->fairness_jain >= 0.95 && ip->failed == 0, x >= 0);
    ratio_target("inproc: masters' CPU per grant <= one uncontended cycle's",
                 "contention-inproc and uncontended", masters_cpu(ip), masters_cpu(u), "us", 1.0,
                 AT_MOST);
    /* The same at the same pace: a master's request costs more when it
     * wakes it from idle, so the row above compares a paced grant with a
     * cycle in a stream. uncontended-hold holds as contention-inproc does. */
    ratio_target("inproc: masters' CPU per grant <= one uncontended cycle's, both held",
                 "contention-inproc and uncontended-hold", masters_cpu(ip),
                 masters_cpu(result_find("uncontended-hold")), "us", 1.0, AT_MOST);
    mixed_targets(m, h, ip, u);
}
