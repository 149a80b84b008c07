/* test-clock.c - clock faults on real masters: offset, fast clocks, jumps,
 * and the exclude policy. (What masters remember across restarts, the
 * memory guard, is test-memory.c's.)
 *
 * A master's clock is made to lie by restarting its redis-server under an
 * LD_PRELOAD. libfaketime is used when it can load into redis-server; on
 * Debian it cannot (redis links jemalloc: libfaketime #130, the process
 * hangs at start), and tests/helpers/clockshim.c, which reads real clocks by
 * system call, takes its place. Both change the clock Redis expires keys by.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

/* ---- clocks ------------------------------------------------------------- */

static bool faked[REDLOCK_MAX_MASTERS];

static const char *shim_path(void)
{
    const char *p = getenv("REDLOCK_CLOCKSHIM");
    cr_assert(p && *p, "REDLOCK_CLOCKSHIM is not set (run this test through meson)");
    return p;
}

/* Write "RATE OFFSET_MS" to master @i's control file. */
static void set_clock(int i, const char *spec)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/clock-%d", getenv("REDLOCK_TEST_DIR"), i);
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL, "cannot write %s", path);
    fprintf(f, "%s\n", spec);
    fclose(f);
}

/* Restart master @i with a lying clock. */
static void fake_clock(int i, const char *spec)
{
    static bool said;
    if (!said) {
        said = true;
        int works = system("timeout 3 env LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/"
                           "libfaketime.so.1 FAKETIME=+1d redis-server --version "
                           ">/dev/null 2>&1") == 0;
        cr_log_info("%s", works ? "libfaketime loads into redis-server, but the test uses "
                                  "clockshim for runtime rate and jump control"
                                : "libfaketime cannot load into redis-server here (jemalloc, "
                                  "libfaketime #130): using tests/helpers/clockshim.c");
    }
    set_clock(i, spec);
    char path[512];
    snprintf(path, sizeof(path), "%s/clock-%d", getenv("REDLOCK_TEST_DIR"), i);
    tc_kill(i);
    setenv("LD_PRELOAD", shim_path(), 1);
    setenv("CLOCKSHIM_FILE", path, 1);
    tc_restart(i);
    unsetenv("LD_PRELOAD");
    unsetenv("CLOCKSHIM_FILE");
    faked[i] = true;
}

/* Every test leaves honest clocks and a whole cluster behind. */
static void restore(void)
{
    for (int i = 0; i < tc_n(); i++) {
        if (faked[i]) {
            tc_kill(i);
            tc_restart(i);
            faked[i] = false;
        }
    }
    tc_heal();
}

TestSuite(clock, .fini = restore, .timeout = 60);

/* ---- events ------------------------------------------------------------- */

typedef struct events {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count[REDLOCK_MAX_MASTERS][4];
    int excluded[REDLOCK_MAX_MASTERS]; /* events whose status is EUNTRUSTED */
    int bad;                           /* events without a client, or whose err is not the status */
} events;

static void on_event(redlock_client *c, int status, int event, const redlock_error *err, void *arg)
{
    int master = err->master;
    events *e = arg;
    pthread_mutex_lock(&e->mu);
    e->count[master][event]++;
    e->excluded[master] += status == REDLOCK_EUNTRUSTED;
    e->bad += !c || err->code != status;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

static int clock_events(events *e, int m)
{
    pthread_mutex_lock(&e->mu);
    int n = e->count[m][REDLOCK_EVENT_CLOCK_JUMP] + e->count[m][REDLOCK_EVENT_CLOCK_RATE];
    pthread_mutex_unlock(&e->mu);
    return n;
}

/* Wait for a clock event on master @m; returns ms waited, or -1. */
static long wait_clock_event(events *e, int m, long timeout_ms)
{
    uint64_t t0 = tc_now_us();
    pthread_mutex_lock(&e->mu);
    int rc = 0;
    while (e->count[m][REDLOCK_EVENT_CLOCK_JUMP] + e->count[m][REDLOCK_EVENT_CLOCK_RATE] == 0 &&
           rc == 0)
        rc = tc_cond_wait_until(&e->cv, &e->mu, t0 + 1000u * (uint64_t)timeout_ms);
    pthread_mutex_unlock(&e->mu);
    if (rc != 0)
        return -1;
    return (long)tc_ms_since(t0);
}

static redlock_client *client(events *e, int policy)
{
    if (e) {
        memset(e, 0, sizeof(*e));
        pthread_mutex_init(&e->mu, NULL);
        pthread_cond_init(&e->cv, NULL);
    }
    redlock_config cfg;
    redlock_config_init(&cfg);
    cfg.masters = tc_masters();
    cfg.retry_count = 0;
    cfg.node_timeout_ms = 500;
    cfg.clock_policy = policy;
    cfg.clock_probe_ms = 50;
    cfg.clock_window_ms = 2000;
    cfg.clock_readmit_ms = 5000;
    /* A master restarted under a lying clock lost its data, and the memory
     * guard would keep it out of quorums for a ttl: these tests are about
     * clocks (test-memory.c is about memory). */
    cfg.restart_guard = 0;
    cfg.event_fn = e ? on_event : NULL;
    cfg.event_arg = e;
    redlock_client *c;
    redlock_error err;
    int rc = redlock_client_new(&cfg, NULL, &c, &err);
    cr_assert(eq(int, rc, 0), "client_new: %s", err.msg);
    return c;
}

/* Ping until master @m has @n clock samples (the probes take one every
 * 50 ms; bounded at 10 s). */
static void ping_until_samples(redlock_client *c, int m, uint64_t n, redlock_status *st)
{
    if (!TC_AWAIT((redlock_ping(c, st, NULL), redlock_status_master(st, m)->clock_samples >= n),
                  10000))
        cr_fatal("master %d: fewer than %llu clock samples after 10 s", m, (unsigned long long)n);
}

/* ---- the monitor on real clocks ----------------------------------------- */

Test(clock, offset_alone_triggers_nothing)
{
    fake_clock(0, "1 -86400000"); /* a day behind, true rate */
    events e;
    redlock_client *c = client(&e, REDLOCK_CLOCK_WARN);
    TC_STATUS(st);
    ping_until_samples(c, 0, 30, st);
    const redlock_master_state *m0 = redlock_status_master(st, 0);
    cr_assert(eq(int, clock_events(&e, 0), 0), "an offset must not be flagged");
    cr_assert(m0->clock_trusted);
    cr_assert(m0->clock_offset_us < -86390LL * 1000000 && m0->clock_offset_us > -86410LL * 1000000,
              "offset %lld us reported", (long long)m0->clock_offset_us);
    cr_assert(m0->clock_rate_lo <= 1.01 && m0->clock_rate_hi >= 0.99, "rate [%f, %f]",
              m0->clock_rate_lo, m0->clock_rate_hi);
    redlock_client_free(c);
}

Test(clock, fast_clocks_are_detected_within_a_second)
{
    fake_clock(1, "1.5 0");
    fake_clock(2, "10 0");
    events e;
    redlock_client *c = client(&e, REDLOCK_CLOCK_WARN);
    /* 50 ms probes: a rate is bounded from the second sample on */
    long t1 = wait_clock_event(&e, 1, 1000);
    long t2 = wait_clock_event(&e, 2, 1000);
    cr_assert(t1 >= 0, "x1.5 clock on master 1 not detected within 1 s");
    cr_assert(t2 >= 0, "x10 clock on master 2 not detected within 1 s");
    cr_log_info("detected x1.5 after %ld ms, x10 after %ld ms (probe every 50 ms)", t1, t2);
    TC_STATUS(st);
    ping_until_samples(c, 1, 10, st);
    const redlock_master_state *m1 = redlock_status_master(st, 1),
                               *m2 = redlock_status_master(st, 2);
    cr_assert(m1->clock_rate_lo > 1.3 && m1->clock_rate_hi < 1.7,
              "master 1 rate [%f, %f], expected about 1.5", m1->clock_rate_lo, m1->clock_rate_hi);
    cr_assert(m2->clock_rate_lo > 8 && m2->clock_rate_hi < 12,
              "master 2 rate [%f, %f], expected about 10", m2->clock_rate_lo, m2->clock_rate_hi);
    for (int i = 0; i < tc_n(); i++)
        if (i != 1 && i != 2)
            cr_assert(eq(int, clock_events(&e, i), 0), "honest master %d flagged", i);
    redlock_client_free(c);
}

Test(clock, jump_mid_run_is_detected_at_the_next_probe)
{
    fake_clock(3, "1 0");
    events e;
    redlock_client *c = client(&e, REDLOCK_CLOCK_WARN);
    TC_STATUS(st);
    ping_until_samples(c, 3, 10, st);
    cr_assert(eq(int, clock_events(&e, 3), 0), "no event before the jump");
    set_clock(3, "1 30000"); /* +30 s, now */
    long t = wait_clock_event(&e, 3, 1000);
    cr_assert(t >= 0, "a +30 s jump was not detected within 1 s");
    cr_log_info("+30 s jump detected after %ld ms", t);
    redlock_ping(c, st, NULL);
    cr_assert(redlock_status_master(st, 3)->clock_jumps >= 1);
    cr_assert(not(redlock_status_master(st, 3)->clock_trusted));
    /* The metrics count the verdict as the event hook heard it (issue 32). */
    static char text[64 * 1024];
    char series[256];
    size_t len;
    cr_assert(eq(int, redlock_metrics_write(c, text, sizeof(text), &len, NULL), 0));
    snprintf(series, sizeof(series),
             "redlock_master_events_total{master=\"%s\",event=\"clock_jump\"}", tc_addr(3));
    cr_assert(ge(dbl, tc_metric(text, series), 1), "%s in:\n%s", series, text);
    snprintf(series, sizeof(series), "redlock_master_clock_excluded_total{master=\"%s\"}",
             tc_addr(3));
    cr_assert(eq(dbl, tc_metric(text, series), 0), "warn excludes nobody");
    redlock_client_free(c);
}

/* Masters among 0, 3 and 4 where @res exists. */
static int keys_on_0_3_4(const char *res, size_t len)
{
    static const int ms[3] = { 0, 3, 4 };
    int left = 0;

    for (int j = 0; j < 3; j++) {
        redisReply *r = tc_cmd(ms[j], "EXISTS %b", res, len);

        left += r && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : 1;
        freeReplyObject(r);
    }
    return left;
}

/* The classic Redlock failure: one master whose clock runs fast is in two
 * majorities at once. Client A (policy warn) holds the lock on masters
 * 0,1,2 (3 and 4 are held by a third party for a moment). Master 0's clock
 * runs ten times fast and expires A's key early; the third party's keys
 * expire too; client B then asks for the lock. Under `warn` B gets it from
 * 0,3,4 while A's validity still runs: two holders. Under `exclude` master 0
 * does not count for B, and B is refused. Same scenario, both policies. */
Test(clock, exclude_prevents_the_overlap_that_warn_allows)
{
    fake_clock(0, "10 0");
    events ea;
    redlock_client *a = client(&ea, REDLOCK_CLOCK_WARN);
    const int policies[2] = { REDLOCK_CLOCK_WARN, REDLOCK_CLOCK_EXCLUDE };
    for (int k = 0; k < 2; k++) {
        events eb;
        redlock_client *b = client(&eb, policies[k]);
        cr_assert(wait_clock_event(&eb, 0, 2000) >= 0, "B did not flag master 0");
        pthread_mutex_lock(&eb.mu);
        cr_expect(eq(int, eb.bad, 0), "an event without its client, or err->code != status");
        if (policies[k] == REDLOCK_CLOCK_EXCLUDE)
            cr_expect(gt(int, eb.excluded[0], 0), "exclude: the event says EUNTRUSTED");
        else
            cr_expect(eq(int, eb.excluded[0], 0), "warn: the event is news only (status 0)");
        pthread_mutex_unlock(&eb.mu);

        char res[128];
        tc_resource(res, sizeof(res), k == 0 ? "overlap-warn" : "overlap-exclude");
        size_t len = strlen(res);
        for (int i = 3; i <= 4; i++) {
            redisReply *r = tc_cmd(i, "SET %b third-party PX 300", res, len);
            freeReplyObject(r);
        }
        redlock_lock *la;
        TC_OUTCOME(out);
        redlock_error err;
        int rc = redlock_acquire(a, res, len, 4000, &la, out, &err);
        cr_assert(eq(int, rc, 0), "A: %s", err.msg);
        cr_assert(eq(int, redlock_outcome_vote(out, 0)->kind, REDLOCK_VOTE_OK),
                  "A counted master 0");

        /* Await the keys that block B lapsing: A's on fast master 0 (4000 ms
         * of its clock = 400 ms real) and the third party's. */
        cr_assert(TC_AWAIT(keys_on_0_3_4(res, len) == 0, 2000),
                  "the keys on masters 0, 3 and 4 did not lapse");
        cr_assert(gt(i64, redlock_lock_validity_ms(la), 1000),
                  "A must still be inside its validity for the scenario to mean anything");

        redlock_lock *lb = NULL;
        rc = redlock_acquire(b, res, len, 4000, &lb, out, &err);
        int64_t a_left = redlock_lock_validity_ms(la);
        if (policies[k] == REDLOCK_CLOCK_WARN) {
            cr_assert(eq(int, rc, 0), "warn: B should get the lock from 0,3,4: %s", err.msg);
            cr_assert(gt(i64, a_left, 0), "warn: A still valid while B holds: the overlap");
            cr_log_info("warn: B acquired while A had %lld ms of validity left: two holders",
                        (long long)a_left);
            redlock_release(b, lb, NULL, NULL);
            redlock_lock_free(lb);
        } else {
            /* A still holds 1 and 2: "held by another client" is the truth */
            cr_assert(eq(int, rc, REDLOCK_ECONFLICT), "exclude: B must be refused (%s: %s)",
                      redlock_err_name(rc), err.msg);
            cr_assert(eq(int, redlock_outcome_vote(out, 0)->kind, REDLOCK_VOTE_EXCLUDED),
                      "master 0 excluded");
            cr_assert(eq(int, redlock_outcome_vote(out, 0)->err, REDLOCK_EUNTRUSTED));
            cr_assert(strstr(redlock_outcome_vote(out, 0)->detail, "clock") != NULL,
                      "vote says why: %s", redlock_outcome_vote(out, 0)->detail);
            /* The metrics say it too (issue 32): the verdict that took
             * master 0 out, and its vote sitting out as untrusted. */
            static char text[64 * 1024];
            char series[256];
            size_t tlen;
            cr_assert(eq(int, redlock_metrics_write(b, text, sizeof(text), &tlen, NULL), 0));
            snprintf(series, sizeof(series), "redlock_master_clock_excluded_total{master=\"%s\"}",
                     tc_addr(0));
            cr_assert(ge(dbl, tc_metric(text, series), 1), "%s in:\n%s", series, text);
            snprintf(series, sizeof(series),
                     "redlock_master_sat_out_total{master=\"%s\",cause=\"untrusted\"}", tc_addr(0));
            cr_assert(eq(dbl, tc_metric(text, series), 1), "%s in:\n%s", series, text);
        }
        redlock_release(a, la, NULL, NULL);
        redlock_lock_free(la);
        redlock_client_free(b);
    }
    redlock_client_free(a);
}
