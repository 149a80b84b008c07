/* test-metrics.c - redlock_metrics_write() (issue 32): the counters move as
 * operations happen on real masters (an acquire, a conflict, an extend, a
 * release, a lease the watchdog loses, a master stopped or killed), the
 * text is the Prometheus text format (promtool check metrics where
 * tools/deps.sh --promtool fetched it, and a check of our own that always
 * runs), and bad input is refused with the size it needs.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <event2/event.h>

#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <redlock.h>

#include "await.h"
#include "cluster.h"
#include "core.h"
#include "servers.h"

TestSuite(metrics, .init = tc_fx_init_faults, .fini = tc_fx_fini_faults, .timeout = 60);

#define TEXT_MAX (64 * 1024)

static char text[TEXT_MAX];

static const char *scrape(redlock_client *c)
{
    size_t len = 0;
    redlock_error e;
    cr_assert(eq(int, redlock_metrics_write(c, text, sizeof(text), &len, &e), 0), "%s", e.msg);
    cr_assert(eq(sz, strlen(text), len), "ret_len is the text's length");
    return text;
}

static double metric(redlock_client *c, const char *series)
{
    return tc_metric(scrape(c), series);
}

static char *series_of(char *buf, size_t size, const char *fmt, int i)
{
    snprintf(buf, size, fmt, tc_addr(i));
    return buf;
}

/* Our own check of the text format 0.0.4: every line is a HELP, a TYPE or
 * a sample; a sample's name has a TYPE before it (a histogram's by its
 * _bucket/_sum/_count); labels are name="value"; the value is a number;
 * a histogram's buckets rise and end in +Inf equal to _count. */
static void check_format(const char *t)
{
    regex_t sample_re, type_re;
    cr_assert(
        eq(int,
           regcomp(&sample_re,
                   "^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{([a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\]|\\\\.)*\""
                   "(,[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\]|\\\\.)*\")*)?\\})? "
                   "(-?[0-9.]+(e[+-]?[0-9]+)?|\\+Inf|NaN)$",
                   REG_EXTENDED),
           0));
    cr_assert(eq(int,
                 regcomp(&type_re, "^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram)$",
                         REG_EXTENDED),
                 0));
    char typed[64][96];
    int ntyped = 0;
    char last_help[96] = "";
    const char *p = t;
    int lines = 0;
    cr_assert(t[0] && t[strlen(t) - 1] == '\n', "ends in a newline");
    while (*p) {
        const char *nl = strchr(p, '\n');
        cr_assert(nl != NULL, "every line ends in a newline");
        char line[1024];
        size_t n = (size_t)(nl - p);
        cr_assert(lt(sz, n, sizeof(line)));
        memcpy(line, p, n);
        line[n] = '\0';
        regmatch_t m[3];
        if (strncmp(line, "# HELP ", 7) == 0) {
            sscanf(line + 7, "%95s", last_help);
        } else if (strncmp(line, "# TYPE ", 7) == 0) {
            cr_assert(eq(int, regexec(&type_re, line, 3, m, 0), 0), "TYPE line: %s", line);
            char name[96];
            sscanf(line + 7, "%95s", name);
            cr_assert(eq(str, name, last_help), "HELP before TYPE for %s", name);
            for (int i = 0; i < ntyped; i++)
                cr_assert(strcmp(typed[i], name) != 0, "TYPE %s once", name);
            cr_assert(lt(int, ntyped, 64));
            snprintf(typed[ntyped++], sizeof(typed[0]), "%s", name);
        } else {
            cr_assert(eq(int, regexec(&sample_re, line, 3, m, 0), 0), "sample line: %s", line);
            char name[96];
            snprintf(name, sizeof(name), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), line);
            cr_assert(gt(int, ntyped, 0), "TYPE before %s", line);
            const char *fam = typed[ntyped - 1];
            size_t fl = strlen(fam);
            bool ok = strcmp(name, fam) == 0 ||
                      (strncmp(name, fam, fl) == 0 &&
                       (!strcmp(name + fl, "_bucket") || !strcmp(name + fl, "_sum") ||
                        !strcmp(name + fl, "_count")));
            cr_assert(ok, "%s belongs to the family typed last (%s)", name, fam);
        }
        lines++;
        p = nl + 1;
    }
    cr_assert(gt(int, lines, 20));
    regfree(&sample_re);
    regfree(&type_re);
}

/* promtool check metrics on @t: 1 if it passed, 0 if it was not found. */
static int promtool(const char *t)
{
    const char *pt = getenv("REDLOCK_PROMTOOL");
    if (!pt || !*pt || access(pt, X_OK) != 0)
        return 0;
    char path[] = "/tmp/redlock-metrics-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(ge(int, fd, 0));
    cr_assert(eq(sz, (size_t)write(fd, t, strlen(t)), strlen(t)));
    close(fd);
    char cmd[1024], out[4096] = "";
    snprintf(cmd, sizeof(cmd), "'%s' check metrics <'%s' 2>&1", pt, path);
    FILE *f = popen(cmd, "r");
    cr_assert(f != NULL);
    size_t n = fread(out, 1, sizeof(out) - 1, f);
    out[n] = '\0';
    int rc = pclose(f);
    unlink(path);
    cr_assert(eq(int, rc, 0), "promtool check metrics: %s\n%s", out, t);
    return 1;
}

Test(metrics, refuses_bad_input)
{
    redlock_client *c = tc_fx_client(-1);
    size_t len = 99;
    redlock_error e;
    char small[64];
    cr_assert(eq(int, redlock_metrics_write(NULL, small, sizeof(small), &len, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "client");
    cr_assert(eq(int, redlock_metrics_write(c, small, sizeof(small), NULL, &e), REDLOCK_EINVAL));
    cr_assert(eq(int, redlock_metrics_write(c, NULL, 10, &len, &e), REDLOCK_EINVAL));
    /* The length alone. */
    cr_assert(eq(int, redlock_metrics_write(c, NULL, 0, &len, &e), 0), "%s", e.msg);
    size_t need = len;
    cr_assert(gt(sz, need, sizeof(small)));
    /* Too small: refused, the bytes it needs said, nothing half written. */
    cr_assert(eq(int, redlock_metrics_write(c, small, sizeof(small), &len, &e), REDLOCK_EINVAL));
    cr_assert(eq(sz, len, need));
    char want[64];
    snprintf(want, sizeof(want), "%zu bytes needed", need + 1);
    cr_assert(strstr(e.msg, want) != NULL, "says how many bytes it needs: %s", e.msg);
    cr_assert(eq(str, small, ""));
    /* Exactly the text without room for its NUL is too small; with it, enough. */
    char *buf = malloc(need + 1);
    cr_assert(buf != NULL);
    cr_assert(eq(int, redlock_metrics_write(c, buf, need, &len, &e), REDLOCK_EINVAL));
    cr_assert(eq(int, redlock_metrics_write(c, buf, need + 1, &len, &e), 0), "%s", e.msg);
    cr_assert(eq(sz, strlen(buf), need));
    free(buf);
}

Test(metrics, count_acquire_conflict_extend_release)
{
    redlock_client *c = tc_fx_client(-1);
    char s[512];
    cr_assert(eq(dbl, metric(c, "redlock_acquires_total{status=\"ok\"}"), 0));
    cr_assert(eq(dbl, metric(c, "redlock_masters"), tc_n()));
    redlock_lock *l = tc_must_acquire(c, tc_fx.res, 5000, NULL);
    cr_assert(eq(dbl, metric(c, "redlock_acquires_total{status=\"ok\"}"), 1));
    cr_assert(eq(dbl, metric(c, "redlock_acquire_wait_seconds_count"), 1));
    double oks = 0;
    for (int i = 0; i < tc_n(); i++)
        oks += metric(c, series_of(s, sizeof(s),
                                   "redlock_master_votes_total{master=\"%s\",vote=\"ok\"}", i));
    cr_assert(ge(dbl, oks, tc_n() / 2 + 1), "a quorum of votes counted");

    redlock_lock *l2 = NULL;
    cr_assert(eq(int, redlock_acquire(c, tc_fx.res, tc_fx.len, 5000, &l2, NULL, &tc_fx.e),
                 REDLOCK_ECONFLICT));
    cr_assert(eq(dbl, metric(c, "redlock_acquires_total{status=\"conflict\"}"), 1));
    cr_assert(eq(dbl, metric(c, "redlock_acquire_wait_seconds_count"), 2));

    cr_assert(eq(int, redlock_extend(c, l, 5000, NULL, &tc_fx.e), 0), "%s", tc_fx.e.msg);
    cr_assert(eq(dbl, metric(c, "redlock_extends_total{status=\"ok\"}"), 1));

    usleep(20000);
    tc_must_release(c, l);
    cr_assert(eq(dbl, metric(c, "redlock_releases_total{status=\"ok\"}"), 1));
    cr_assert(eq(dbl, metric(c, "redlock_lock_hold_seconds_count"), 1));
    cr_assert(ge(dbl, metric(c, "redlock_lock_hold_seconds_sum"), 0.02), "held >= 20 ms");
    cr_assert(eq(dbl, metric(c, "redlock_lock_hold_seconds_bucket{le=\"0.001\"}"), 0));
    cr_assert(eq(dbl, metric(c, "redlock_lock_hold_seconds_bucket{le=\"+Inf\"}"), 1));
    cr_assert(eq(dbl, metric(c, "redlock_leases_lost_total{status=\"noquorum\"}"), 0));
    check_format(scrape(c));
}

/* promtool's lint (names, units, _total, HELP) on a text with every kind of
 * line: statuses besides ok, a histogram with observations, a master down. */
Test(metrics, promtool_checks_the_text)
{
    const char *pt = getenv("REDLOCK_PROMTOOL");
    if (!pt || !*pt || access(pt, X_OK) != 0)
        cr_skip_test("promtool not found (REDLOCK_PROMTOOL=%s): tools/deps.sh --promtool fetches "
                     "it; the other tests check the format with their own parser",
                     pt ? pt : "unset");
    redlock_client *c = tc_fx_client(-1);
    redlock_lock *l = tc_must_acquire(c, tc_fx.res, 5000, NULL);
    redlock_lock *l2 = NULL;
    cr_assert(eq(int, redlock_acquire(c, tc_fx.res, tc_fx.len, 5000, &l2, NULL, &tc_fx.e),
                 REDLOCK_ECONFLICT));
    tc_must_release(c, l);
    tc_kill(4);
    redlock_status *st = redlock_status_new();
    cr_assert(st != NULL);
    redlock_ping(c, st, &tc_fx.e);
    redlock_status_free(st);
    const char *t = scrape(c);
    check_format(t);
    cr_assert(eq(int, promtool(t), 1));
}

typedef struct lost {
    pthread_mutex_t mu;
    int calls;
    int status;
} lost;

static void on_lost(redlock_client *c, int status, redlock_lock *lock, const redlock_error *err,
                    void *arg)
{
    (void)c;
    (void)lock;
    (void)err;
    lost *lo = arg;
    pthread_mutex_lock(&lo->mu);
    lo->calls++;
    lo->status = status;
    pthread_mutex_unlock(&lo->mu);
}

static int lost_calls(lost *lo)
{
    pthread_mutex_lock(&lo->mu);
    int n = lo->calls;
    pthread_mutex_unlock(&lo->mu);
    return n;
}

Test(metrics, count_a_lease_lost_and_masters_down)
{
    tc_fx.cfg.watchdog_divisor = 2;
    redlock_client *c = tc_fx_client(-1);
    char s[512];
    redlock_lock *l = tc_must_acquire(c, tc_fx.res, 600, NULL);
    lost lo = { .mu = PTHREAD_MUTEX_INITIALIZER };
    cr_assert(eq(int, redlock_watchdog_start(c, l, on_lost, &lo, &tc_fx.e), 0), "%s", tc_fx.e.msg);
    cr_assert(TC_AWAIT(metric(c, "redlock_extends_total{status=\"ok\"}") >= 1, 3000),
              "the watchdog's extensions count");
    tc_kill(0);
    tc_kill(1);
    tc_kill(2);
    cr_assert(TC_AWAIT(lost_calls(&lo) == 1, 3000), "the lease is lost");
    const char *t = scrape(c);
    cr_assert(eq(dbl, tc_metric(t, "redlock_leases_lost_total{status=\"noquorum\"}"), 1), "%s", t);
    cr_assert(eq(dbl, tc_metric(t, "redlock_lease_lost_validity_left_seconds_count"), 1));
    cr_assert(le(dbl, tc_metric(t, "redlock_lease_lost_validity_left_seconds_sum"), 0.6));
    cr_assert(ge(dbl, tc_metric(t, "redlock_extends_total{status=\"noquorum\"}"), 1));
    for (int i = 0; i < 3; i++) {
        cr_assert(eq(dbl,
                     tc_metric(t, series_of(s, sizeof(s), "redlock_master_up{master=\"%s\"}", i)),
                     0),
                  "master %d down: %s", i, t);
        double down =
            tc_metric(t, series_of(s, sizeof(s),
                                   "redlock_master_votes_total{master=\"%s\",vote=\"down\"}", i));
        double late = tc_metric(
            t, series_of(s, sizeof(s), "redlock_master_votes_total{master=\"%s\",vote=\"timeout\"}",
                         i));
        cr_assert(ge(dbl, (down > 0 ? down : 0) + (late > 0 ? late : 0), 1),
                  "master %d's votes say down or timeout", i);
    }
    cr_assert(eq(dbl, tc_metric(t, series_of(s, sizeof(s), "redlock_master_up{master=\"%s\"}", 3)),
                 1));
    check_format(t);
    redlock_lock_free(l);
}

Test(metrics, a_stopped_master_shows_as_down)
{
    tc_fx.cfg.node_timeout_ms = 300;
    redlock_client *c = tc_fx_client(-1);
    char s[512];
    redlock_status *st = redlock_status_new();
    cr_assert(st != NULL);
    cr_assert(eq(int, redlock_ping(c, st, &tc_fx.e), 0), "%s", tc_fx.e.msg);
    cr_assert(eq(dbl, metric(c, series_of(s, sizeof(s), "redlock_master_up{master=\"%s\"}", 1)),
                 1));
    tc_pause(1);
    redlock_ping(c, st, &tc_fx.e);
    cr_assert(eq(dbl, metric(c, series_of(s, sizeof(s), "redlock_master_up{master=\"%s\"}", 1)), 0),
              "%s", text);
    cr_assert(eq(dbl, metric(c, series_of(s, sizeof(s), "redlock_master_up{master=\"%s\"}", 0)),
                 1));
    /* A ping's answers are no votes. */
    cr_assert(eq(dbl,
                 metric(c, series_of(s, sizeof(s),
                                     "redlock_master_votes_total{master=\"%s\",vote=\"ok\"}", 0)),
                 0));
    tc_resume(1);
    redlock_status_free(st);
}

/* A master that sits out shows why: master 4 replaced by a new, empty
 * redis-server that nobody declared empty sits out the memory guard's
 * window (cause "untrusted"). Masters 2 and 3 are killed, so that the
 * acquire waits for its answer (and fails: no quorum). */
Test(metrics, a_master_sitting_out_shows_its_cause)
{
    char port[16], addr[64], s[512];
    snprintf(port, sizeof(port), "%d", tc_block_port(5));
    const char *args[] = { "--port", port, NULL };
    tc_redis *fresh = tc_redis_start(args);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", tc_block_port(5));
    tc_fx_masters_with(4, addr);
    tc_fx.cfg.node_timeout_ms = 500;
    redlock_client *c = tc_fx_client(-1);
    tc_kill(2);
    tc_kill(3);
    TC_OUTCOME(out);
    redlock_lock *l = NULL;
    cr_assert(eq(int, redlock_acquire(c, tc_fx.res, tc_fx.len, 5000, &l, out, &tc_fx.e),
                 REDLOCK_ENOQUORUM),
              "%s", tc_fx.e.msg);
    char votes[1024];
    size_t vo = 0;
    for (size_t i = 0; i < 5; i++)
        vo += (size_t)snprintf(votes + vo, sizeof(votes) - vo, "[%zu %s %s] ", i,
                               redlock_vote_kind_name(redlock_outcome_vote(out, i)->kind),
                               redlock_outcome_vote(out, i)->detail);
    const char *t = scrape(c);
    cr_assert(eq(dbl, tc_metric(t, "redlock_acquires_total{status=\"noquorum\"}"), 1));
    snprintf(s, sizeof(s), "redlock_master_sat_out_total{master=\"%s\",cause=\"untrusted\"}", addr);
    cr_assert(eq(dbl, tc_metric(t, s), 1), "%s; votes %s", s, votes);
    snprintf(s, sizeof(s), "redlock_master_votes_total{master=\"%s\",vote=\"excluded\"}", addr);
    cr_assert(eq(dbl, tc_metric(t, s), 1), "%s", t);
    snprintf(s, sizeof(s), "redlock_master_up{master=\"%s\"}", addr);
    cr_assert(eq(dbl, tc_metric(t, s), 1), "it answers: it is up, and sits out");
    snprintf(s, sizeof(s), "redlock_master_up{master=\"%s\"}", tc_addr(2));
    cr_assert(eq(dbl, tc_metric(t, s), 0), "a killed master is down");
    check_format(t);
    tc_redis_stop(fresh);
}

static void on_async_acquired(redlock_client *c, int status, redlock_lock *lock,
                              const redlock_outcome *out, const redlock_error *err, void *arg)
{
    (void)c;
    (void)out;
    (void)err;
    int *done = arg;
    *done = status == 0 ? 1 : -1;
    redlock_lock_free(lock);
}

/* An async client counts on the program's loop, and the same call reads
 * it (there is no async twin: nothing is asked of the masters). */
Test(metrics, an_async_client_counts_on_its_loop)
{
    struct event_base *base = event_base_new();
    cr_assert(base != NULL);
    redlock_client *c = tc_client_async(&tc_fx.cfg, base);
    cr_assert(tc_async_ready(base, c, tc_n(), 5000));
    int done = 0;
    cr_assert(eq(int,
                 redlock_acquire_async(c, tc_fx.res, tc_fx.len, 5000, on_async_acquired, &done,
                                       &tc_fx.e),
                 0),
              "%s", tc_fx.e.msg);
    cr_assert(TC_RUN_UNTIL(base, done != 0, 5000));
    cr_assert(eq(int, done, 1));
    cr_assert(eq(dbl, metric(c, "redlock_acquires_total{status=\"ok\"}"), 1));
    cr_assert(eq(dbl, metric(c, "redlock_acquire_wait_seconds_count"), 1));
    check_format(text);
    redlock_client_free(c);
    event_base_free(base);
}
