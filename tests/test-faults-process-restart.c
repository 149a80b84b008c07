/* test-faults-process-restart.c - masters that restart, with and without
 * persistence, while clients fight over one lock; every operation recorded
 * and checked.
 *
 * A master restarted without persistence forgets the locks it granted
 * (NOTES.md's assumption A2 broken). The scenario below makes that
 * dangerous on purpose; then: with the restart guard off, the history does
 * show two holders, so the checker is proven to see it; with the guard on
 * (the default), it does not; with AOF (appendfsync always) nothing is
 * forgotten and the restarted masters count at once. The guard's own
 * window is checked against the one-second rounding of INFO's uptime.
 * Suite process runs on a plain cluster, suite process_aof on one started
 * with --aof: meson runs this file twice, with a filter each. Run alone
 * (faults); .fini heals the cluster.
 */
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>
#include <hiredis/hiredis.h>

#include <redlock.h>

#include "cluster.h"
#include "contend.h"
#include "core.h"

TestSuite(process, .fini = tc_heal, .timeout = 55);
TestSuite(process_aof, .fini = tc_heal, .timeout = 55);

#define SOME_GRANTS 5
#define AWAIT_MS 20000
#define TTL_US (CONTEND_TTL_MS * 1000ull)

enum restart_mode { WITH_AOF, GUARD_ON, GUARD_OFF };

/* When each fault of the scenario happened (hist_now_us()). */
struct restarts {
    uint64_t of34;         /* masters 3 and 4 started again */
    uint64_t of2;          /* master 2 killed and started again ... */
    uint64_t of2_done;     /* ... and answering */
};

/* The test's own holder H takes the lock while masters 3 and 4 are dead,
 * so it counts exactly 0, 1 and 2 (it may have to wait for a worker's
 * turn). */
static redlock_lock *h_acquires(run *r, redlock_client *hc)
{
    redlock_lock *hl = NULL;
    redlock_outcome out;
    redlock_error e;
    uint64_t t0;
    int rc = -1;

    run_inject(r, tc_kill, "sigkill", 3, 0);
    run_inject(r, tc_kill, "sigkill", 4, 0);
    for (int tries = 0; tries < 100 && rc != 0; tries++) {
        t0 = hist_now_us();
        rc = redlock_acquire(hc, r->res, r->len, CONTEND_TTL_MS, &hl, &out, &e);
        hist_acquire(r->h, "H", r->res, r->len, CONTEND_TTL_MS, t0, rc, hl, &out);
    }
    cr_assert(eq(int, rc, 0), "H never got the lock: %s", e.msg);
    run_note_grant(r, &out);
    cr_assert(eq(u32, hist_oks(&out), 0x07u), "H counted masters 0,1,2 only (oks 0x%x)",
              hist_oks(&out));
    return hl;
}

/* 3 and 4 come back (empty unless AOF); 2 is killed and comes back: H's
 * key there is kept with AOF and lost without. */
static struct restarts restart_under_h(run *r, int aof, redlock_lock *hl)
{
    struct restarts t;
    redisReply *v;
    int kept;

    t.of34 = hist_now_us();
    tc_restart(3);
    run_fault(r, "restart", 3, !aof, t.of34);
    run_inject(r, tc_restart, "restart", 4, !aof);
    t.of2 = hist_now_us();
    tc_kill(2);
    tc_restart(2);
    run_fault(r, "kill+restart", 2, !aof, t.of2);
    t.of2_done = hist_now_us();

    /* the premise: master 2 kept H's key with AOF, and lost it without */
    v = tc_cmd(2, "GET %b", r->res, r->len);
    kept = v && v->type == REDIS_REPLY_STRING && strcmp(v->str, redlock_lock_token(hl)) == 0;
    freeReplyObject(v);
    cr_assert(eq(int, kept, aof), "master 2 %s H's key across its restart", kept ? "kept" : "lost");
    cr_assert(gt(i64, redlock_lock_validity_ms(hl), 0),
              "the restarts took longer than H's validity: the scenario tests nothing");
    return t;
}

/* Guard off: a worker got 2,3,4 while H held 0,1: the checker must say so,
 * and, told which master lost its keys, explain it by A2. */
static void expect_the_overlap_found(run *r, const struct restarts *t)
{
    static const char *const explain[] = { "--explain-lost-keys", NULL };
    static char out[CONTEND_OUT_SIZE];
    uint64_t overlap_grant = run_first_grant(r, t->of2_done, 0x1c);
    int crc = run_finish(r, NULL, out, sizeof(out));

    cr_assert(ne(u64, overlap_grant, 0), "no worker was granted by 2,3,4 while H held it");
    cr_assert(eq(int, crc, 1), "the checker missed two holders at once (exit %d, history "
              "kept in %s):\n%s", crc, run_keep(r), out);
    cr_assert(strstr(out, "(overlap)") != NULL && strstr(out, "H (token") != NULL,
              "the overlap reported is not H's:\n%s", out);
    cr_log_info("guard off: a worker was granted by 2,3,4 %.1f ms after master 2 came "
                "back, while H held it; the checker says:\n%.2000s",
                (overlap_grant - t->of2_done) / 1000.0, out);
    crc = contend_check(r->path, r->snap, explain, out, sizeof(out));
    cr_assert(eq(int, crc, 0), "the overlap is not the one master 2's lost keys explain:\n%s", out);
    cr_assert(strstr(out, "EXPLAINED (overlap)") != NULL, "%s", out);
}

/*
 * The scenario that makes a restart dangerous, built on purpose (it is the
 * one NOTES.md's A2 rules out): masters 3 and 4 are dead when the test's
 * own client H takes the lock, so H counts exactly masters 0,1,2. Then 3
 * and 4 come back (empty unless AOF) and master 2 is killed and restarted:
 * without persistence it has forgotten H's key, and 2,3,4 are a majority
 * that knows nothing of H while H's validity still runs.
 *
 * WITH_AOF: master 2 keeps H's key (appendfsync always); the guard sees AOF
 *   and does not exclude the restarted masters: once H releases, grants
 *   count them at once. No violation.
 * GUARD_ON: each client saw 2, 3 and 4 restart (run_id changed) and leaves
 *   them out of its quorums for a ttl after their restart: no grant counts
 *   them inside that window, and no violation; after it, grants resume.
 * GUARD_OFF: a worker gets 2,3,4 while H holds 0,1 and its validity: the
 *   checker must report the overlap (and, told which master lost its keys,
 *   explain it by A2).
 */
static void restart_scenario(int mode)
{
    int aof = mode == WITH_AOF;
    run *r = run_start(mode != GUARD_OFF, CONTEND_WORKERS);
    redlock_client *hc = contend_client(mode != GUARD_OFF);
    redlock_outcome out_h;
    redlock_error e;
    redlock_lock *hl;
    struct restarts t;
    uint64_t t0;
    int rc, tries0;

    cr_assert(eq(int, tc_aof(), aof), "this test needs a cluster %s --aof",
              aof ? "with" : "without");
    run_await_grants(r, 0, 0, SOME_GRANTS, AWAIT_MS);   /* contention runs */
    hl = h_acquires(r, hc);
    t = restart_under_h(r, aof, hl);

    tries0 = run_attempts(r);
    if (mode == GUARD_OFF)   /* within H's validity, a worker granted by 2,3,4 */
        TC_AWAIT(redlock_lock_validity_ms(hl) <= 0 || run_first_grant(r, t.of2_done, 0x1c),
                 CONTEND_TTL_MS);
    else                     /* every worker tries, twice, while H holds */
        TC_AWAIT(run_attempts(r) >= tries0 + 2 * CONTEND_WORKERS, AWAIT_MS);
    t0 = hist_now_us();
    rc = redlock_release(hc, hl, &out_h, &e);
    hist_release(r->h, "H", t0, rc, hl, &out_h);
    redlock_lock_free(hl);
    redlock_client_free(hc);

    uint64_t in_window2 = t.of2 + TTL_US, in_window34 = t.of34 + TTL_US;
    if (mode == GUARD_ON)    /* a grant counting master 2 once its window is over */
        run_await_grants(r, in_window2, 1u << 2, 1, CONTEND_TTL_MS + AWAIT_MS);
    if (mode == WITH_AOF)    /* a grant counting master 2 within a ttl of its restart */
        TC_AWAIT(run_grants_between(r, t.of2, in_window2, 1u << 2) > 0, CONTEND_TTL_MS);

    int counted2 = run_grants_between(r, t.of2, in_window2, 1u << 2);
    int counted34 = run_grants_between(r, t.of34, in_window34, 1u << 3) +
                    run_grants_between(r, t.of34, in_window34, 1u << 4);
    int after_window = run_grants_between(r, in_window2, UINT64_MAX, 1u << 2);

    if (mode == GUARD_OFF) {
        expect_the_overlap_found(r, &t);
    } else {
        run_expect_clean(r, NULL);
        if (mode == GUARD_ON) {
            cr_expect(eq(int, counted2, 0), "%d grants counted master 2 within a ttl of its "
                      "restart without persistence", counted2);
            cr_expect(eq(int, counted34, 0), "%d grants counted master 3 or 4 within a ttl of "
                      "its restart", counted34);
            cr_expect(gt(int, after_window, 0), "no grant counted master 2 again after the "
                      "guard window");
        } else {
            cr_expect(gt(int, counted2, 0), "with AOF always, master 2 should count at once "
                      "after its restart (no guard), but no grant within a ttl counted it");
        }
    }
    cr_log_info("restart %s: grants counting master 2 within a ttl of its restart: %d, "
                "after: %d", mode == WITH_AOF ? "with AOF" : mode == GUARD_ON ? "guard on" :
                "guard off", counted2, after_window);
    run_free(r);
}

Test(process_aof, restart_with_aof_keeps_the_lock_and_counts_at_once)
{
    if (!tc_aof())
        cr_skip_test("needs a cluster with --aof (meson runs it as faults-process-restart-aof)");
    restart_scenario(WITH_AOF);
}

Test(process, restart_without_persistence_guard_on_no_second_holder)
{
    if (tc_aof())
        cr_skip_test("needs a cluster without --aof");
    restart_scenario(GUARD_ON);
}

Test(process, restart_without_persistence_guard_off_shows_two_holders)
{
    if (tc_aof())
        cr_skip_test("needs a cluster without --aof");
    restart_scenario(GUARD_OFF);
}

/* The wall clock now, in s and ms past that second. */
static time_t wall_clock(unsigned *ret_ms)
{
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    *ret_ms = (unsigned)(now.tv_nsec / 1000000);
    return now.tv_sec;
}

/* ms from now until the wall clock next reads x.@at_ms s. */
static unsigned ms_until(unsigned at_ms)
{
    unsigned ms;

    wall_clock(&ms);
    return (1000 + at_ms - ms) % 1000;
}

/* Ping through @c; 1 once master 2 is connected and says who it is. */
static int master_2_met(redlock_client *c, redlock_status *st)
{
    memset(st, 0, sizeof(*st));
    redlock_ping(c, st, NULL);
    return st->masters[2].err == 0 && st->masters[2].run_id[0];
}

/* Ping through @c; 1 once master 2 counts again. */
static int master_2_admitted(redlock_client *c)
{
    redlock_status st;

    memset(&st, 0, sizeof(st));
    redlock_ping(c, &st, NULL);
    return st.masters[2].err == 0 && !st.masters[2].excluded;
}

/* The guard's window is measured from the master's start, which the client
 * learns from INFO's uptime_in_seconds. Redis computes that as the
 * difference of two whole-second clock readings, so a master started at
 * 10.85 s and asked at 11.05 s says 1 s although it has run for 0.2 s: the
 * real start may lie up to a second after now - uptime, and a window
 * measured from there ends up to a second early. Arrange exactly that (a
 * restart just before a second ends, a client meeting it just after) with
 * an explicit restart_guard_ms, and ask when the master counts again: not
 * before the window has passed since the restart began. */
Test(process, restart_guard_window_is_not_cut_short_by_uptime_rounding)
{
    const uint32_t guard_ms = 2000;

    if (tc_aof())
        cr_skip_test("needs a cluster without --aof");
    for (int attempt = 0; attempt < 3; attempt++) {
        uint64_t t0, met, admitted;
        unsigned ms;
        time_t sec0;
        redlock_config cfg;
        redlock_client *c = NULL;
        redlock_status st;
        redlock_error e;
        long long up;

        tc_kill(2);
        /* Time is the subject: the restart must begin at x.750 s of the
         * wall clock, and the client meet it in the next second. */
        tc_sleep_ms(ms_until(750));
        sec0 = wall_clock(&ms);
        t0 = hist_now_us();
        tc_restart(2);
        if (wall_clock(&ms) == sec0)
            tc_sleep_ms(1000 - ms);

        contend_config(&cfg, 1);
        cfg.restart_guard_ms = guard_ms;
        cr_assert(eq(int, redlock_client_new(&cfg, NULL, &c, &e), 0), "%s", e.msg);
        TC_AWAIT(master_2_met(c, &st), 2000);
        up = st.masters[2].uptime_s;
        met = hist_now_us() - t0;
        if ((uint64_t)up * 1000000u <= met) {
            /* no rounding this time (the start slipped past the second) */
            redlock_client_free(c);
            continue;
        }
        cr_assert(st.masters[2].excluded, "a master up for %.2f s is not excluded by a %u ms "
                  "guard", (hist_now_us() - t0) / 1e6, guard_ms);
        admitted = TC_AWAIT(master_2_admitted(c), 3000 + guard_ms) ? hist_now_us() : 0;
        redlock_client_free(c);
        cr_assert(ne(u64, admitted, 0), "master 2 was never admitted again");
        cr_expect(ge(u64, admitted - t0, guard_ms * 1000ull),
                  "master 2 counted again %.0f ms after its restart began, inside the %u ms "
                  "guard window (INFO said uptime %lld s after %.0f ms): the window is measured "
                  "from now - uptime, up to 1 s before the real start",
                  (admitted - t0) / 1000.0, guard_ms, up, met / 1000.0);
        cr_log_info("restart at x.75 s, met at the next second: uptime said %lld s; readmitted "
                    "after %.0f ms of a %u ms window", up, (admitted - t0) / 1000.0, guard_ms);
        return;
    }
    cr_skip_test("could not arrange a restart just before a wall-clock second ends in 3 "
                 "attempts (machine too slow?): the rounding was not exercised");
}
