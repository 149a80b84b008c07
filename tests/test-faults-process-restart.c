/* test-faults-process-restart.c - masters that lose their memory (restart
 * without persistence, FLUSHALL) or keep it (AOF) while clients fight over
 * one lock; every operation recorded and checked.
 *
 * A master that lost its data forgot the locks it granted (docs/safety.md,
 * "Assumptions (the timing model)": A2 broken). The scenario below makes that
 * dangerous on purpose; then: with the memory guard off, the history does
 * show two holders, so the checker is proven to see it; with the guard on
 * (the default), it does not - for workers that keep one client each and for
 * one-shot clients in processes of their own (as every redlock-cli call is),
 * which never saw the master before; with AOF (appendfsync always) nothing is
 * forgotten and the restarted masters count at once. The guard's window is
 * the master's own: a client that meets it later does not restart it. Suite
 * process runs on a plain cluster, suite process_aof on one started with
 * --aof: meson runs this file twice, with a filter each. Run alone (faults);
 * .fini heals the cluster.
 */
#include <stdio.h>
#include <string.h>

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
#define TTL_US (TC_CONTEND_TTL_MS * 1000ull)

enum restart_mode { WITH_AOF, GUARD_ON, GUARD_OFF };
/* How master 2 loses its memory: a restart without persistence, FLUSHALL,
 * or a restart that reloads an RDB snapshot taken before H's lock (its
 * marker comes back as it was served, H's key does not). */
enum lost_by { RESTART, FLUSH, SNAPSHOT };

/* When each fault of the scenario happened (tc_now_us()). */
struct restarts {
    uint64_t of34;     /* masters 3 and 4 started again */
    uint64_t of2;      /* master 2 killed and started again, or flushed ... */
    uint64_t of2_done; /* ... and answering */
};

/* The test's own holder H takes the lock for @ttl_ms while masters 3 and 4
 * are dead, so it counts exactly 0, 1 and 2 (it may have to wait for a
 * worker's turn). */
static redlock_lock *h_acquires(tc_contend *r, redlock_client *hc, uint32_t ttl_ms)
{
    redlock_lock *hl = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    uint64_t t0;
    int rc = -1;

    tc_contend_inject(r, tc_kill, "sigkill", 3, 0);
    tc_contend_inject(r, tc_kill, "sigkill", 4, 0);
    for (int tries = 0; tries < 100 && rc != 0; tries++) {
        t0 = tc_now_us();
        rc = redlock_acquire(hc, r->res, r->len, ttl_ms, &hl, out, &e);
        tc_hist_acquire(r->h, "H", r->res, r->len, ttl_ms, t0, rc, hl, out);
    }
    cr_assert(eq(int, rc, 0), "H never got the lock: %s", e.msg);
    tc_contend_note_grant(r, out);
    cr_assert(eq(u32, tc_hist_oks(out), 0x07u), "H counted masters 0,1,2 only (oks 0x%x)",
              tc_hist_oks(out));
    return hl;
}

/* 3 and 4 come back (empty unless AOF); 2 is killed and comes back, or
 * flushed: H's key there is kept with AOF and lost without. */
static struct restarts restart_under_h(tc_contend *r, int aof, enum lost_by how, redlock_lock *hl)
{
    struct restarts t;
    redisReply *v;
    int kept;

    t.of34 = tc_now_us();
    tc_restart(3);
    tc_contend_fault(r, "restart", 3, !aof, t.of34);
    tc_contend_inject(r, tc_restart, "restart", 4, !aof);
    t.of2 = tc_now_us();
    if (how == FLUSH) {
        v = tc_cmd(2, "FLUSHALL");
        cr_assert(v && v->type == REDIS_REPLY_STATUS, "FLUSHALL on master 2 failed");
        freeReplyObject(v);
        tc_contend_fault(r, "flushall", 2, 1, t.of2);
    } else {
        tc_kill(2);
        tc_restart(2);
        tc_contend_fault(r, "kill+restart", 2, !aof, t.of2);
        if (how == SNAPSHOT)
            tc_master_rm(2, "dump.rdb"); /* loaded: later restarts start empty */
    }
    t.of2_done = tc_now_us();

    /* the premise: master 2 kept H's key with AOF, and lost it without */
    v = tc_cmd(2, "GET %b", r->res, r->len);
    kept = v && v->type == REDIS_REPLY_STRING && tc_value_is_token(v->str, redlock_lock_token(hl));
    freeReplyObject(v);
    cr_assert(eq(int, kept, aof), "master 2 %s H's key across its restart", kept ? "kept" : "lost");
    cr_assert(gt(i64, redlock_lock_validity_ms(hl), 0),
              "the restarts took longer than H's validity: the scenario tests nothing");
    return t;
}

/* Guard off: a worker got 2,3,4 while H held 0,1: the checker must say so,
 * and, told which master lost its keys, explain it by A2. */
static void expect_the_overlap_found(tc_contend *r, const struct restarts *t)
{
    static const char *const explain[] = { "--explain-lost-keys", NULL };
    static char out[TC_CONTEND_OUT_SIZE];
    uint64_t overlap_grant = tc_contend_first_grant(r, t->of2_done, 0x1c);
    int crc = tc_contend_finish(r, NULL, out, sizeof(out));

    cr_assert(ne(u64, overlap_grant, 0), "no worker was granted by 2,3,4 while H held it");
    cr_assert(eq(int, crc, 1),
              "the checker missed two holders at once (exit %d, history "
              "kept in %s):\n%s",
              crc, tc_contend_keep(r), out);
    cr_assert(strstr(out, "(overlap)") != NULL && strstr(out, "H (token") != NULL,
              "the overlap reported is not H's:\n%s", out);
    cr_log_info("guard off: a worker was granted by 2,3,4 %.1f ms after master 2 came "
                "back, while H held it; the checker says:\n%.2000s",
                (overlap_grant - t->of2_done) / 1000.0, out);
    crc = tc_contend_check(r->path, r->snap, explain, out, sizeof(out));
    cr_assert(eq(int, crc, 0), "the overlap is not the one master 2's lost keys explain:\n%s", out);
    cr_assert(strstr(out, "EXPLAINED (overlap)") != NULL, "%s", out);
}

/*
 * The scenario that makes lost memory dangerous, built on purpose (it is
 * the one docs/safety.md's A2 rules out): masters 3 and 4 are dead when the
 * test's own client H takes the lock, so H counts exactly masters 0,1,2.
 * Then 3 and 4 come back (empty unless AOF) and master 2 is killed and
 * restarted, or flushed (@how): without persistence it has forgotten H's
 * key, and 2,3,4 are a majority that knows nothing of H while H's validity
 * still runs. The workers are of @kind (contend.h): threads with a client
 * each, or one-shot clients in processes, which never met a master before
 * their acquire.
 *
 * WITH_AOF: master 2 keeps H's key and its memory marker (appendfsync
 *   always), but its new process cannot tell its data from a copy's: it
 *   sits out as GUARD_ON's do (docs/safety.md,
 *   "Failure modes, master by master"). No violation.
 * GUARD_ON: 2, 3 and 4 lost their markers with their data; the first
 *   acquire to reach each makes a new one, and it votes for nobody until
 *   the longest ttl in use has passed on its clock: no grant counts them
 *   inside that window, and no violation; after it, grants resume.
 * GUARD_OFF: a worker gets 2,3,4 while H holds 0,1 and its validity: the
 *   checker must report the overlap (and, told which master lost its keys,
 *   explain it by A2).
 */
static void restart_scenario(int mode, enum lost_by how, int kind)
{
    int aof = mode == WITH_AOF;
    tc_contend *r = tc_contend_start_kind(mode != GUARD_OFF, TC_CONTEND_WORKERS, kind);
    redlock_client *hc = tc_contend_client(mode != GUARD_OFF);
    TC_OUTCOME(out_h);
    redlock_error e;
    redlock_lock *hl;
    struct restarts t;
    uint64_t t0;
    int rc, tries0;

    cr_assert(eq(int, tc_aof(), aof), "this test needs a cluster %s --aof",
              aof ? "with" : "without");
    tc_contend_await_grants(r, 0, 0, SOME_GRANTS, AWAIT_MS); /* contention runs */
    if (how == SNAPSHOT) {
        redisReply *v = tc_cmd(2, "SAVE");
        cr_assert(v && v->type == REDIS_REPLY_STATUS, "SAVE on master 2 failed");
        freeReplyObject(v);
    }
    /* Guard off, H holds three workers' ttls: the overlap this mode must
     * show needs H still to hold when a worker gets 2,3,4, after three
     * restarts, which a loaded machine made take most of one ttl (the
     * checker once found no overlap: the worker's grant came after H's
     * validity). Guard on and AOF keep H at the workers' ttl: their windows
     * are measured from it. */
    hl = h_acquires(r, hc, mode == GUARD_OFF ? 3 * TC_CONTEND_TTL_MS : TC_CONTEND_TTL_MS);
    t = restart_under_h(r, aof, how, hl);

    tries0 = tc_contend_attempts(r);
    if (mode == GUARD_OFF) /* within H's validity, a worker granted by 2,3,4 */
        TC_AWAIT(redlock_lock_validity_ms(hl) <= 0 || tc_contend_first_grant(r, t.of2_done, 0x1c),
                 3 * TC_CONTEND_TTL_MS);
    else /* every worker tries, twice, while H holds */
        TC_AWAIT(tc_contend_attempts(r) >= tries0 + 2 * TC_CONTEND_WORKERS, AWAIT_MS);
    t0 = tc_now_us();
    rc = redlock_release(hc, hl, out_h, &e);
    tc_hist_release(r->h, "H", t0, rc, hl, out_h);
    redlock_lock_free(hl);
    redlock_client_free(hc);

    uint64_t in_window2 = t.of2 + TTL_US, in_window34 = t.of34 + TTL_US;
    if (mode != GUARD_OFF) /* a grant counting master 2 once its window is over */
        tc_contend_await_grants(r, in_window2, 1u << 2, 1, TC_CONTEND_TTL_MS + AWAIT_MS);

    int counted2 = tc_contend_grants_between(r, t.of2, in_window2, 1u << 2);
    int counted34 = tc_contend_grants_between(r, t.of34, in_window34, 1u << 3) +
                    tc_contend_grants_between(r, t.of34, in_window34, 1u << 4);
    int after_window = tc_contend_grants_between(r, in_window2, UINT64_MAX, 1u << 2);

    if (mode == GUARD_OFF) {
        expect_the_overlap_found(r, &t);
    } else {
        tc_contend_expect_clean(r, NULL);
        cr_expect(eq(int, counted2, 0),
                  "%d grants counted master 2 within a ttl of its restart or "
                  "losing its memory",
                  counted2);
        cr_expect(eq(int, counted34, 0),
                  "%d grants counted master 3 or 4 within a ttl of "
                  "its restart",
                  counted34);
        cr_expect(gt(int, after_window, 0), "no grant counted master 2 again after its "
                                            "memory window");
    }
    cr_log_info("%s %s, %s: grants counting master 2 within a ttl of it: %d, after: %d",
                how == FLUSH      ? "FLUSHALL"
                : how == SNAPSHOT ? "restart from a snapshot"
                                  : "restart",
                mode == WITH_AOF   ? "with AOF"
                : mode == GUARD_ON ? "guard on"
                                   : "guard off",
                kind == TC_CONTEND_ONE_SHOT ? "one-shot clients" : "clients kept", counted2,
                after_window);
    tc_contend_free(r);
}

Test(process_aof, restart_with_aof_always_keeps_the_lock_and_sits_out_its_window)
{
    if (!tc_aof())
        cr_skip_test("needs a cluster with --aof (meson runs it as faults-process-restart-aof)");
    restart_scenario(WITH_AOF, RESTART, TC_CONTEND_THREADS);
}

/* restart_scenario() on the plain cluster meson gives suite process. */
static void plain_scenario(int mode, enum lost_by how, int kind)
{
    if (tc_aof())
        cr_skip_test("needs a cluster without --aof");
    restart_scenario(mode, how, kind);
}

Test(process, restart_without_persistence_guard_on_no_second_holder)
{
    plain_scenario(GUARD_ON, RESTART, TC_CONTEND_THREADS);
}

Test(process, restart_without_persistence_guard_off_shows_two_holders)
{
    plain_scenario(GUARD_OFF, RESTART, TC_CONTEND_THREADS);
}

Test(process, one_shot_clients_restart_without_persistence_no_second_holder)
{
    plain_scenario(GUARD_ON, RESTART, TC_CONTEND_ONE_SHOT);
}

Test(process, one_shot_clients_restart_without_persistence_guard_off_shows_two_holders)
{
    plain_scenario(GUARD_OFF, RESTART, TC_CONTEND_ONE_SHOT);
}

Test(process, one_shot_clients_flushall_no_second_holder)
{
    plain_scenario(GUARD_ON, FLUSH, TC_CONTEND_ONE_SHOT);
}

Test(process, one_shot_clients_flushall_guard_off_shows_two_holders)
{
    plain_scenario(GUARD_OFF, FLUSH, TC_CONTEND_ONE_SHOT);
}

/* A one-shot client (made and used at once, as redlock-cli is) acquiring
 * @res with @ttl_ms and @wait_ms; its outcome into @out. */
static int one_shot_acquire(const char *res, uint32_t ttl_ms, int64_t wait_ms, redlock_outcome *out,
                            redlock_error *e)
{
    redlock_config cfg;
    redlock_client *c = NULL;
    redlock_acquire_opts opts;
    redlock_resource one = { res, strlen(res) };
    redlock_lock *l = NULL;

    tc_contend_config(&cfg, 1);
    cfg.retry_delay_ms = 20;
    cr_assert(eq(int, redlock_client_new(&cfg, NULL, &c, e), 0), "%s", e->msg);
    redlock_acquire_opts_init(&opts);
    opts.ttl_ms = ttl_ms;
    opts.wait_ms = wait_ms;
    int rc = redlock_acquire_with(c, &one, 1, &opts, &l, out, e);
    if (rc == 0)
        redlock_release(c, l, NULL, NULL);
    redlock_lock_free(l);
    redlock_client_free(c);
    return rc;
}

/* How old master @m's marker was when it voted "excluded", in ms (-1 if
 * it did not vote so). */
static long marker_age_ms(const redlock_outcome *out, int m)
{
    const char *p = strstr(redlock_outcome_vote(out, m)->detail, "memory marker ");
    double s;

    if (redlock_outcome_vote(out, m)->kind != REDLOCK_VOTE_EXCLUDED || !p ||
        sscanf(p, "memory marker %lf s old", &s) != 1)
        return -1;
    return (long)(s * 1000);
}

/* The window of a master that lost its memory runs on the master's own
 * clock, from the moment the first acquire found it empty: a client that
 * meets it later (every redlock-cli call is a new client) sees it as old
 * as it is, and cannot make it count before the window is over. (Before
 * the markers, the window was estimated by each client from INFO's
 * uptime, from 0 at first contact.) Masters 3 and 4 stay dead, so every
 * acquire needs master 2's vote and the vote is always seen. */
Test(process, a_lost_masters_window_is_its_own_and_later_clients_do_not_restart_it)
{
    enum { WINDOW_MS = 2000, LATER_MS = 1000 };
    char res[128];
    TC_OUTCOME(out);
    redlock_error e;
    long age;

    if (tc_aof())
        cr_skip_test("needs a cluster without --aof");
    tc_fresh(-1); /* the fleet's longest ttl is this test's */
    tc_resource(res, sizeof(res), NULL);
    tc_kill(3);
    tc_kill(4);
    tc_kill(2);
    tc_restart(2);

    /* The first client to meet it finds it pending and measures its
     * window: with masters 3 and 4 down nobody can, so it is the longest
     * ttl in use (this test's). A one-shot client may exit before its
     * settle lands: the next one settles it. */
    uint64_t t1 = tc_now_us();
    int rc = 0;
    age = -1;
    cr_assert(TC_AWAIT((rc = one_shot_acquire(res, WINDOW_MS, 0, out, &e)) == REDLOCK_ENOQUORUM &&
                           (age = marker_age_ms(out, 2)) >= 0,
                       2000),
              "master 2 voted %s (%s): %s",
              redlock_vote_kind_name(redlock_outcome_vote(out, 2)->kind),
              redlock_outcome_vote(out, 2)->detail, e.msg);
    cr_expect(lt(i64, age, 300), "a marker just settled is %ld ms old", age);

    /* Time is the subject: part of the window passes before a new client
     * comes along. */
    tc_sleep_ms(LATER_MS);
    rc = one_shot_acquire(res, WINDOW_MS, 0, out, &e);
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), e.msg);
    age = marker_age_ms(out, 2);
    cr_expect(ge(i64, age, LATER_MS - 50),
              "the later client saw a marker %ld ms old: the window "
              "began again for it",
              age);

    /* Waiting: it counts once the window has passed since t1, not before. */
    rc = one_shot_acquire(res, WINDOW_MS, 3 * WINDOW_MS, out, &e);
    uint64_t admitted = tc_now_us();
    cr_assert(eq(int, rc, 0), "master 2 was never admitted again: %s: %s", redlock_err_name(rc),
              e.msg);
    cr_expect(eq(int, redlock_outcome_vote(out, 2)->kind, REDLOCK_VOTE_OK));
    cr_expect(ge(u64, admitted - t1, (WINDOW_MS - 5) * 1000ull),
              "master 2 counted again %.0f ms after the first acquire met it, inside its %u ms "
              "window",
              (admitted - t1) / 1000.0, WINDOW_MS);
    cr_log_info("readmitted %.0f ms after the first acquire met it (window %u ms)",
                (admitted - t1) / 1000.0, WINDOW_MS);
}

Test(process, restart_from_an_older_snapshot_no_second_holder)
{
    plain_scenario(GUARD_ON, SNAPSHOT, TC_CONTEND_THREADS);
}

Test(process, one_shot_clients_restart_from_an_older_snapshot_no_second_holder)
{
    plain_scenario(GUARD_ON, SNAPSHOT, TC_CONTEND_ONE_SHOT);
}

Test(process, one_shot_clients_restart_from_an_older_snapshot_guard_off_shows_two_holders)
{
    plain_scenario(GUARD_OFF, SNAPSHOT, TC_CONTEND_ONE_SHOT);
}
