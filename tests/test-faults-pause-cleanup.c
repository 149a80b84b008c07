/* test-faults-pause-cleanup.c - what a failed attempt leaves behind silent masters.
 *
 * A failed acquire releases what it got before it returns: it waits for
 * the cleanup of every master that answered its SET, however late that
 * master hears the release, and the answers of masters that were silent
 * at the decision are never counted as theirs. Commands pile up behind a
 * paused master only up to max_inflight (twice that for releases); beyond
 * that votes fail at once with EBUSY, and when the master resumes the
 * client carries on. Run alone, one criterion worker; every test heals the
 * cluster in .fini.
 */
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"
#include "fake.h"

#define TTL_MS 10000u

TestSuite(faults_pause, .init = tc_fx_init_faults, .fini = tc_fx_fini_faults, .timeout = 120);

Test(faults_pause, failed_acquire_returns_only_after_masters_that_answered_have_released)
{
    enum { TIMEOUT_MS = 300, WRITES_PAUSED_MS = 400, RELEASE_LATE_MS = 180 };
    char val[64];
    int rc, held;

    /* acquire.c: a failed attempt waits for the cleanup release from the
     * masters that answered its SET, "so when acquire reports failure the
     * keys are gone". The masters here:
     *   0  behind a slow link: runs our SET and answers at once, hears the
     *      cleanup release 180 ms late (it answered: must be waited for);
     *   1, 2  held by another client: answer "held" at once;
     *   3, 4  writes paused for 400 ms: time out at 300 ms, the decision,
     *      then run SET and release and answer both at ~400 ms.
     * The attempt fails at 300 ms. Master 0's release lands at ~480 ms,
     * inside the 300 ms cleanup wait; acquire must not return before. */
    tc_fx_proxy(0);
    tc_plant(1, tc_fx.res, tc_fx.len, "other-client", TTL_MS);
    tc_plant(2, tc_fx.res, tc_fx.len, "other-client", TTL_MS);
    tc_fx.cfg.node_timeout_ms = TIMEOUT_MS;
    tc_fx_client(-1);

    tc_proxy_hold(tc_fx.proxy, 1, RELEASE_LATE_MS); /* the SET passes, the release waits */
    tc_pause_writes(3, WRITES_PAUSED_MS);
    tc_pause_writes(4, WRITES_PAUSED_MS);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    held = tc_get(0, tc_fx.res, tc_fx.len, val, sizeof(val), NULL); /* master 0 itself */
    cr_assert(ne(int, rc, 0), "acquired with two masters held by another client");
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, 0)->kind, REDLOCK_VOTE_OK),
              "master 0 voted %s",
              redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, 0)->kind));
    cr_expect(eq(int, held, 0),
              "acquire returned %s while master 0, which answered the SET, still holds the "
              "attempt's key (\"%s\"): the cleanup wait ended early",
              redlock_err_name(rc), val);

    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_count_token(tc_fx.res, tc_fx.len, "other-client", TTL_MS), 2));
    tc_del_all(tc_fx.res, tc_fx.len);
}

Test(faults_pause, cleanup_replies_from_silent_masters_do_not_hide_a_wrong_type)
{
    enum { TIMEOUT_MS = 300, WRITES_PAUSED_MS = 100, RELEASE_LATE_MS = 200 };
    int rc;

    /* Masters 0, 1, 2 hold a list under the name: SET NX says "nil", and
     * only the cleanup release's WRONGTYPE tells it apart from a lock held
     * by someone else. The three "nil"s decide at once; the cleanup then
     * waits (up to 300 ms) for those three. Master 0 hears its release
     * 200 ms late (slow link); masters 3 and 4, silent at the decision
     * (writes paused), answer SET and release at ~100 ms. Counting their
     * answers as master 0's ends the wait before master 0's WRONGTYPE
     * arrives, and turns EWRONGTYPE into ENOQUORUM. */
    tc_fx_proxy(0);
    for (int i = 0; i < 3; i++)
        freeReplyObject(tc_cmd(i, "RPUSH %b a b c", tc_fx.res, tc_fx.len));
    tc_fx.cfg.node_timeout_ms = TIMEOUT_MS;
    tc_fx_client(-1);

    tc_pause_writes(3, WRITES_PAUSED_MS);
    tc_pause_writes(4, WRITES_PAUSED_MS);
    tc_proxy_hold(tc_fx.proxy, 1, RELEASE_LATE_MS);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_expect(eq(int, rc, REDLOCK_EWRONGTYPE), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, 0)->err, REDLOCK_EWRONGTYPE),
              "master 0 voted %s (%s)",
              redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, 0)->kind),
              redlock_outcome_vote(tc_fx.out, 0)->detail);

    tc_barrier(tc_fx.c);
    tc_del_all(tc_fx.res, tc_fx.len);
}

/* Scripts run by masters 3 and 4: every acquire, release and status is
 * one (EVALSHA, or EVAL after NOSCRIPT), and a script's own calls inside
 * are not (total_commands_processed counts those too). */
static void scripts_run(long long count[5])
{
    for (int m = 3; m < 5; m++) {
        long long sha = tc_info_num(m, "commandstats", "cmdstat_evalsha");
        long long eval = tc_info_num(m, "commandstats", "cmdstat_eval");

        count[m] = (sha > 0 ? sha : 0) + (eval > 0 ? eval : 0);
    }
}

Test(faults_pause, commands_behind_paused_masters_are_bounded_and_recover)
{
    enum { MAX_INFLIGHT = 16, CYCLES = 300 };
    long long before[5], after[5];
    int busy_votes = 0;
    int rc;

    tc_fx.cfg.node_timeout_ms = 50;
    tc_fx.cfg.max_inflight = MAX_INFLIGHT;
    tc_fx_client(-1);
    scripts_run(before);
    tc_pause(3);
    tc_pause(4);

    /* Each cycle queues a SET and a release on each paused master. Without
     * a bound that is 2 * CYCLES commands per master; with it, no more than
     * 2 * MAX_INFLIGHT, and the rest fail at once. */
    for (int i = 0; i < CYCLES; i++) {
        redlock_lock *l = NULL;
        uint64_t t0 = tc_now_us();

        rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &l, tc_fx.out, &tc_fx.e);
        cr_assert(eq(int, rc, 0), "cycle %d: %s: %s", i, redlock_err_name(rc), tc_fx.e.msg);
        cr_assert(lt(u64, tc_now_us() - t0, 500000), "cycle %d took %llu us", i,
                  (unsigned long long)(tc_now_us() - t0));
        for (int m = 3; m < 5; m++) {
            if (redlock_outcome_vote(tc_fx.out, m)->err == REDLOCK_EBUSY) {
                busy_votes++;
                cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, m)->kind, REDLOCK_VOTE_DOWN));
                cr_expect(gt(sz, strlen(redlock_outcome_vote(tc_fx.out, m)->detail), 0));
            }
        }
        rc = redlock_release(tc_fx.c, l, NULL, &tc_fx.e);
        cr_assert(eq(int, rc, 0), "cycle %d: release: %s: %s", i, redlock_err_name(rc),
                  tc_fx.e.msg);
        redlock_lock_free(l);
    }
    /* The bound was hit: most later votes of the paused masters were EBUSY. */
    cr_expect(gt(int, busy_votes, CYCLES), "only %d EBUSY votes in %d cycles", busy_votes, CYCLES);

    tc_resume(3);
    tc_resume(4);
    /* The resumed masters answer through this very client again. */
    cr_assert(eq(int, tc_wait_up(tc_fx.c, 5, 10000), 5), "resumed masters do not answer");
    tc_barrier(tc_fx.c);

    /* What reached each paused master is bounded by the in-flight limit,
     * not by the number of cycles: at most 2 * MAX_INFLIGHT acquires and
     * releases waited there. The slack covers the two scripts that are not
     * ours to bound: the probe's marker read (one at a time) and the
     * barrier's status. */
    scripts_run(after);
    for (int m = 3; m < 5; m++) {
        long long got = after[m] - before[m];

        cr_log_info("master %d ran %lld scripts after resuming (bound %d + 2)", m, got,
                    2 * MAX_INFLIGHT);
        cr_expect(gt(i64, got, 0), "master %d ran nothing after resuming", m);
        cr_expect(le(i64, got, 2 * MAX_INFLIGHT + 2),
                  "master %d ran %lld scripts queued while paused (bound %d)", m, got,
                  2 * MAX_INFLIGHT);
    }
    cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 0), "a key outlived its release");

    /* And the client works normally: all five vote again. */
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_count_token(tc_fx.res, tc_fx.len, redlock_lock_token(tc_fx.l), TTL_MS),
                 5));
    for (int m = 0; m < 5; m++)
        cr_expect(redlock_outcome_vote(tc_fx.out, m)->kind == REDLOCK_VOTE_OK ||
                      redlock_outcome_vote(tc_fx.out, m)->kind == REDLOCK_VOTE_PENDING,
                  "master %d voted %s (%s)", m,
                  redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, m)->kind),
                  redlock_outcome_vote(tc_fx.out, m)->detail);
    cr_expect(eq(int, redlock_release(tc_fx.c, tc_fx.l, NULL, NULL), 0));
}
