/* test-faults-pause-quorum.c - deciding an acquire while masters are silent.
 *
 * A paused master (SIGSTOP) is the hard case: its socket stays open and
 * nothing tells the client it is gone. With two of five paused an acquire
 * must still return at the third OK, far below the node timeout (early
 * quorum); with three paused it can only fail, at about the node timeout.
 * Masters that grant too slowly for the ttl give no lease at all, and a
 * lease is timed from the attempt that won it; with the memory guard on, a
 * majority later than 500 ms gives none either. Run alone, one criterion
 * worker; every test heals the cluster in .fini.
 */
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

#define TTL_MS 10000u
#define NODE_TIMEOUT_MS TC_FAULTS_NODE_TIMEOUT_MS

TestSuite(faults_pause, .init = tc_fx_init_faults, .fini = tc_fx_fini_faults, .timeout = 120);

Test(faults_pause, two_paused_still_acquires_far_below_the_node_timeout)
{
    uint64_t t0, took;
    int rc;

    tc_fx_client(-1); /* connected to all five before the pause */
    tc_pause(3);
    tc_pause(4);

    t0 = tc_now_us();
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    took = tc_now_us() - t0;
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    /* Decided at the third OK: an order of magnitude below 2000 ms. */
    cr_expect(lt(u64, took, (uint64_t)NODE_TIMEOUT_MS * 1000 / 10), "took %llu us",
              (unsigned long long)took);
    cr_expect(lt(u64, redlock_outcome_elapsed_us(tc_fx.out),
                 (uint64_t)NODE_TIMEOUT_MS * 1000 / 10));
    cr_expect(eq(u32, redlock_outcome_ok(tc_fx.out), 3));
    for (int m = 3; m < 5; m++)
        cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, m)->kind, REDLOCK_VOTE_PENDING),
                  "paused master %d voted %s", m,
                  redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, m)->kind));
    /* Validity is the ttl less margin less the short elapsed time, not
     * less a node timeout. */
    cr_expect(gt(i64, redlock_lock_validity_ms(tc_fx.l),
                 (int64_t)(TTL_MS - 102 - NODE_TIMEOUT_MS / 10)));

    /* Release returns at the third answer too. */
    t0 = tc_now_us();
    rc = redlock_release(tc_fx.c, tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_expect(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(lt(u64, tc_now_us() - t0, (uint64_t)NODE_TIMEOUT_MS * 1000 / 10));
    cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 0), "key left on a live master");

    /* The paused masters run the SET and then its release when they wake:
     * no key behind. */
    tc_resume(3);
    tc_resume(4);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 0));
}

Test(faults_pause, three_paused_is_enoquorum_after_about_the_node_timeout)
{
    enum { TIMEOUT_MS = 300 };
    uint64_t t0, took;
    int rc;

    tc_fx.cfg.node_timeout_ms = TIMEOUT_MS;
    tc_fx_client(-1);
    tc_pause(0);
    tc_pause(2);
    tc_pause(4);

    t0 = tc_now_us();
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    took = tc_now_us() - t0;
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    tc_expect_msg(&tc_fx.e, "acquire");
    /* libevent times its timers on CLOCK_MONOTONIC_COARSE (one jiffy,
     * up to 4 ms at HZ=250), so the timeout may fire that much early. */
    cr_expect(ge(u64, took, (uint64_t)TIMEOUT_MS * 1000 - 10000), "took %llu us",
              (unsigned long long)took);
    cr_expect(lt(u64, took, (uint64_t)TIMEOUT_MS * 1000 + 700000), "took %llu us",
              (unsigned long long)took);
    for (int m = 0; m < 5; m += 2) {
        cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, m)->kind, REDLOCK_VOTE_TIMEOUT),
                  "paused master %d voted %s", m,
                  redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, m)->kind));
        cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, m)->err, REDLOCK_ETIMEOUT));
    }
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, 1)->kind, REDLOCK_VOTE_OK));
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, 3)->kind, REDLOCK_VOTE_OK));
    /* The two live masters answered the SET, so acquire waited for their
     * cleanup: nothing there when it returns. */
    cr_expect(eq(int, tc_get(1, tc_fx.res, tc_fx.len, NULL, 0, NULL), 0), "key left on master 1");
    cr_expect(eq(int, tc_get(3, tc_fx.res, tc_fx.len, NULL, 0, NULL), 0), "key left on master 3");

    /* After the wake-up the SET and its queued release run in order. */
    tc_resume(0);
    tc_resume(2);
    tc_resume(4);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 0));
}

Test(faults_pause, quorum_reached_after_the_ttl_is_eexpired_and_no_lease_is_returned)
{
    int rc;

    /* Three masters take 300 ms to grant a 100 ms lock: the quorum comes
     * when the lease would already have lapsed. */
    tc_fx_client(-1);
    for (int i = 0; i < 3; i++)
        tc_pause_writes(i, 300);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, 100, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_expect(eq(int, rc, REDLOCK_EEXPIRED), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(zero(ptr, tc_fx.l), "a lease with no validity was returned");
    cr_expect(le(i64, redlock_outcome_validity_ms(tc_fx.out), 0));
    cr_expect(ge(u32, redlock_outcome_ok(tc_fx.out), redlock_outcome_quorum(tc_fx.out)),
              "the quorum was reached, just too late");
    tc_expect_msg(&tc_fx.e, "acquire");
    cr_expect(not(zero(ptr, strstr(tc_fx.e.msg, "ttl"))), "%s", tc_fx.e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 0));
}

Test(faults_pause, validity_is_timed_from_the_successful_attempt)
{
    uint64_t t0, took;
    int rc;

    /* First attempt: quorum after 300 ms, too late for a 200 ms ttl. The
     * retry runs on fast masters. Its lease must be nearly the whole ttl:
     * timed from before the retries it would be gone. */
    tc_fx.cfg.retry_count = 1;
    tc_fx.cfg.retry_delay_ms = 10;
    tc_fx.cfg.retry_jitter_ms = 0;
    tc_fx_client(-1);
    for (int i = 0; i < 3; i++)
        tc_pause_writes(i, 300);
    t0 = tc_now_us();
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, 200, &tc_fx.l, tc_fx.out, &tc_fx.e);
    took = tc_now_us() - t0;
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(eq(u32, redlock_outcome_attempts(tc_fx.out), 2));
    cr_expect(ge(u64, took, 200000), "the first attempt did not wait for the paused writes");
    cr_expect(gt(i64, redlock_outcome_validity_ms(tc_fx.out), 150),
              "validity %lld ms of a 200 ms ttl after %llu us",
              (long long)redlock_outcome_validity_ms(tc_fx.out), (unsigned long long)took);
    cr_expect(le(i64, redlock_outcome_validity_ms(tc_fx.out), 200 - 4));
    cr_expect(le(u64, redlock_outcome_elapsed_us(tc_fx.out), took - 200000),
              "elapsed covers only the last attempt");
    redlock_release(tc_fx.c, tc_fx.l, NULL, NULL);
}

/* The lock's own validity runs from the start of the attempt that won it,
 * not from the moment its quorum came: its keys were set no earlier than
 * that start, so they lapse no later than ttl after it. Three masters grant
 * 300 ms late: what the lock says is left is at most the outcome's
 * validity less those 300 ms. */
Test(faults_pause, a_lock_s_validity_runs_from_its_attempt_not_from_its_quorum)
{
    enum { SLOW_MS = 300 };
    int rc;

    tc_fx_client(-1);
    for (int i = 0; i < 3; i++)
        tc_pause_writes(i, SLOW_MS);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    int64_t left = redlock_lock_validity_ms(tc_fx.l);
    int64_t elapsed_ms = (int64_t)(redlock_outcome_elapsed_us(tc_fx.out) / 1000);
    cr_assert(ge(i64, elapsed_ms, SLOW_MS / 3), "the quorum came after %lld ms, not late",
              (long long)elapsed_ms);
    cr_expect(le(i64, left, redlock_outcome_validity_ms(tc_fx.out) - elapsed_ms + 1),
              "the lock has %lld ms left of a validity of %lld ms decided %lld ms into its attempt",
              (long long)left, (long long)redlock_outcome_validity_ms(tc_fx.out),
              (long long)elapsed_ms);
    redlock_release(tc_fx.c, tc_fx.l, NULL, NULL);
}

/* With the memory guard on, a majority must come within RL_QUORUM_MAX_MS
 * (500 ms) of its attempt's start: a master seen reborn is settled that
 * long (and the clocks' drift) after, so that every attempt that counted a
 * vote it gave before it forgot has decided by then (docs/memory-guard.md,
 * "How long a reborn master sits out"). Three masters that grant 800 ms
 * late: no lock, ETIMEOUT saying so, and no key left behind. The same late
 * majority without the guard is a lock. */
Test(faults_pause, a_quorum_later_than_500_ms_is_refused_with_the_guard_on)
{
    enum { SLOW_MS = 800 };
    redlock_config cfg;
    redlock_lock *l = NULL;
    char res[128];
    int rc;

    tc_fx_client(-1);
    for (int i = 0; i < 3; i++)
        tc_pause_writes(i, SLOW_MS);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_expect(eq(int, rc, REDLOCK_ETIMEOUT), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(zero(ptr, tc_fx.l), "a lock was returned");
    cr_expect(ge(u32, redlock_outcome_ok(tc_fx.out), redlock_outcome_quorum(tc_fx.out)),
              "the majority came, late");
    tc_expect_msg(&tc_fx.e, "acquire");
    cr_expect(not(zero(ptr, strstr(tc_fx.e.msg, "500 ms"))), "%s", tc_fx.e.msg);
    tc_barrier(tc_fx.c);
    if (!tc_fx.l)
        cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 0),
                  "the refused attempt left its key");

    /* The same late majority without the guard: a lock. */
    cfg = tc_fx.cfg;
    cfg.restart_guard = 0;
    redlock_client *c = tc_client(&cfg, -1);
    tc_resource(res, sizeof(res), "guard-off");
    for (int i = 0; i < 3; i++)
        tc_pause_writes(i, SLOW_MS);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &tc_fx.e);
    cr_expect(eq(int, rc, 0), "without the guard: %s: %s", redlock_err_name(rc), tc_fx.e.msg);
    if (l) {
        redlock_release(c, l, NULL, NULL);
        redlock_lock_free(l);
    }
    redlock_client_free(c);
}

Test(faults_pause, paused_master_at_connect_times_out_and_is_retried)
{
    int rc;

    /* Paused before the client exists: the TCP connect succeeds (the
     * kernel accepts), the handshake never answers. The connect deadline
     * drops it, the acquire still gets its quorum, and after SIGCONT the
     * master is connected again. */
    tc_pause(1);
    tc_fx.cfg.node_timeout_ms = 200;
    tc_fx.cfg.connect_timeout_ms = 200;
    tc_fx_client(4);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(eq(int, redlock_release(tc_fx.c, tc_fx.l, NULL, NULL), 0));
    redlock_lock_free(tc_fx.l);
    tc_fx.l = NULL;

    tc_resume(1);
    cr_assert(eq(int, tc_wait_up(tc_fx.c, 5, 10000), 5), "master 1 not reconnected after SIGCONT");
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_count_token(tc_fx.res, tc_fx.len, redlock_lock_token(tc_fx.l), TTL_MS),
                 5));
    redlock_release(tc_fx.c, tc_fx.l, NULL, NULL);
}
