/* test-cli-metrics.c - redlock-cli's metrics (issue 32): `metrics` prints
 * them after its pings, `run --metrics-file` keeps them in a file for
 * node_exporter's textfile collector (whole, by rename; moved by the
 * watchdog's extensions and the release), and a file that cannot be
 * written is one warning while the run goes on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "cli.h"
#include "cluster.h"
#include "core.h"

TestSuite(cli_metrics, .init = tcli_setup, .fini = tcli_teardown, .timeout = 60);

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

Test(cli_metrics, metrics_shows_every_master_up)
{
    struct tcli_proc p;
    char s[256];

    cr_assert(eq(int, tcli_run(&p, "metrics", "--samples", "2"), 0), "stderr: %s", p.err);
    for (int i = 0; i < tc_n(); i++) {
        snprintf(s, sizeof(s), "redlock_master_up{master=\"%s\"}", tc_addr(i));
        cr_assert(eq(dbl, tc_metric(p.out, s), 1), "%s in:\n%s", s, p.out);
    }
    cr_assert(eq(dbl, tc_metric(p.out, "redlock_masters"), tc_n()));
    cr_assert(strstr(p.out, "# TYPE redlock_acquires_total counter\n") != NULL);
    const char *pt = getenv("REDLOCK_PROMTOOL");
    if (pt && access(pt, X_OK) == 0) {
        char path[TCLI_SCRATCH_MAX + 32], cmd[2 * TCLI_SCRATCH_MAX + 64];
        snprintf(path, sizeof(path), "%s/m.prom", tcli_tmpdir);
        tcli_put_file(path, p.out);
        snprintf(cmd, sizeof(cmd), "'%s' check metrics <'%s'", pt, path);
        cr_assert(eq(int, system(cmd), 0), "promtool check metrics:\n%s", p.out);
    }
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "metrics", "--json"), 64));
    cr_assert(strstr(p.err, "Prometheus text") != NULL, "%s", p.err);
    tcli_free(&p);
}

Test(cli_metrics, run_keeps_the_metrics_file)
{
    struct tcli_proc p;
    char res[128], path[TCLI_SCRATCH_MAX + 32], tmp[TCLI_SCRATCH_MAX + 40];
    struct stat st;

    tc_resource(res, sizeof(res), NULL);
    snprintf(path, sizeof(path), "%s/redlock.prom", tcli_tmpdir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    /* ttl 1 s, CMD 1.6 s: the watchdog extends about every 0.5 s, and CMD
     * sees the file say so while it runs; CMD does not get the option in
     * its environment (a nested run would overwrite the file). */
    cr_assert(eq(int,
                 tcli_run(&p, "run", res, "--ttl", "1000ms", "--metrics-file", path, "--", "sh",
                          "-c",
                          "sleep 1.6; test -z \"$REDLOCK_METRICS_FILE\" && "
                          "grep -q '^redlock_extends_total{status=\"ok\"} [1-9]' \"$1\"",
                          "sh", path),
                 0),
              "stderr: %s", p.err);
    tcli_free(&p);
    char *t = tcli_slurp(path);
    cr_assert(t != NULL);
    cr_assert(eq(dbl, tc_metric(t, "redlock_acquires_total{status=\"ok\"}"), 1), "%s", t);
    cr_assert(ge(dbl, tc_metric(t, "redlock_extends_total{status=\"ok\"}"), 2), "%s", t);
    cr_assert(eq(dbl, tc_metric(t, "redlock_releases_total{status=\"ok\"}"), 1), "%s", t);
    cr_assert(eq(dbl, tc_metric(t, "redlock_lock_hold_seconds_count"), 1), "%s", t);
    cr_assert(ge(dbl, tc_metric(t, "redlock_lock_hold_seconds_sum"), 1.6), "%s", t);
    cr_assert(eq(dbl, tc_metric(t, "redlock_leases_lost_total{status=\"noquorum\"}"), 0), "%s", t);
    free(t);
    cr_assert(stat(tmp, &st) != 0, "no %s left behind", tmp);
}

Test(cli_metrics, an_unwritable_metrics_file_is_one_warning)
{
    struct tcli_proc p;
    char res[128], path[TCLI_SCRATCH_MAX + 32];

    tc_resource(res, sizeof(res), NULL);
    snprintf(path, sizeof(path), "%s/no-such-dir/redlock.prom", tcli_tmpdir);
    cr_assert(eq(int,
                 tcli_run(&p, "run", res, "--ttl", "1000ms", "--metrics-file", path, "--", "sh",
                          "-c", "sleep 1.2; exit 3"),
                 3),
              "CMD ran and its status is the exit status: %s", p.err);
    cr_assert(eq(sz, count(p.err, "--metrics-file"), 1), "one warning: %s", p.err);
    cr_assert(strstr(p.err, "No such file or directory") != NULL, "%s", p.err);
    cr_assert(strstr(p.err, "go on") != NULL, "%s", p.err);
    tcli_free(&p);
}
