/* test-faults-kill.c - masters that die (SIGKILL) and come back.
 *
 * A killed master closes its sockets and refuses new connections, so its
 * votes fail at once ("down") instead of costing a timeout. Two of five
 * dead: still a quorum. Three dead: no quorum, decided quickly, and the
 * keys the attempt did get on the live masters are gone when it returns.
 * Restarted masters are reconnected (at once when an operation needs them)
 * and vote again; without persistence, only after their memory window.
 * Run alone (is_parallel: false, one criterion worker); every test heals the
 * cluster in .fini, pass or fail.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"
#include "fake.h"

#define TTL_MS 10000u
/* The fixture's: long enough that "quickly" (refused connections) and
 * "after the node timeout" cannot be confused. */
#define NODE_TIMEOUT_MS TC_FAULTS_NODE_TIMEOUT_MS

TestSuite(faults_kill, .init = tc_fx_init_faults, .fini = tc_fx_fini_faults, .timeout = 90);

/* Killed masters 3 and 4 cost the acquire just made nothing (it took
 * @took us). A refused connection is a "down" vote at once; and an
 * operation that needs a master that is down tries to connect at once
 * (node.c), so the vote may still be "pending" (the refusal had not come
 * back when the quorum was reached) - never a wait for it. */
static void expect_dead_cost_nothing(uint64_t took)
{
    cr_expect(lt(u64, took, (uint64_t)NODE_TIMEOUT_MS * 1000 / 4), "took %llu us",
              (unsigned long long)took);
    for (int m = 3; m < 5; m++) {
        const redlock_vote *v = redlock_outcome_vote(tc_fx.out, m);

        cr_expect(v->kind == REDLOCK_VOTE_DOWN || v->kind == REDLOCK_VOTE_PENDING,
                  "killed master %d voted %s (%s)", m, redlock_vote_kind_name(v->kind), v->detail);
        if (v->kind == REDLOCK_VOTE_DOWN) {
            cr_expect(eq(int, v->err, REDLOCK_ECONNECT), "master %d: %s", m,
                      redlock_err_name(v->err));
            cr_expect(gt(sz, strlen(v->detail), 0));
        }
    }
}

Test(faults_kill, acquires_with_two_of_five_killed)
{
    redlock_lock *l2 = NULL;
    char res2[128];
    uint64_t t0;
    int rc;

    tc_fx_client(-1); /* connected to all five first */
    tc_kill(3);
    tc_kill(4);

    t0 = tc_now_us();
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    expect_dead_cost_nothing(tc_now_us() - t0);
    cr_expect(eq(u32, redlock_outcome_ok(tc_fx.out), 3));
    cr_expect(gt(i64, redlock_lock_validity_ms(tc_fx.l), 0));
    cr_expect(eq(int, tc_count_token(tc_fx.res, tc_fx.len, redlock_lock_token(tc_fx.l), TTL_MS),
                 3));

    /* And again, with the dead ones known to be down. */
    tc_resource(res2, sizeof(res2), NULL);
    t0 = tc_now_us();
    rc = redlock_acquire(tc_fx.c, res2, strlen(res2), TTL_MS, &l2, tc_fx.out, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    expect_dead_cost_nothing(tc_now_us() - t0);
    cr_expect(eq(int, redlock_release(tc_fx.c, tc_fx.l, NULL, NULL), 0));
    cr_expect(eq(int, redlock_release(tc_fx.c, l2, NULL, NULL), 0));
    redlock_lock_free(l2);
}

/* Three of five dead: ENOQUORUM fast, and no key on the live two after. */
static void expect_fast_enoquorum(void)
{
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    char res[128];
    uint64_t t0, took;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    t0 = tc_now_us();
    rc = redlock_acquire(tc_fx.c, res, strlen(res), TTL_MS, &l, out, &e);
    took = tc_now_us() - t0;
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(zero(ptr, l));
    cr_expect(eq(int, e.code, REDLOCK_ENOQUORUM));
    tc_expect_msg(&e, "acquire");
    cr_expect(not(zero(ptr, strstr(e.msg, "no quorum"))), "%s", e.msg);
    /* The message names a dead master. */
    cr_expect(strstr(e.msg, tc_addr(2)) || strstr(e.msg, tc_addr(3)) || strstr(e.msg, tc_addr(4)),
              "%s", e.msg);
    /* Refused connections cost nothing: far under the node timeout. */
    cr_expect(lt(u64, took, (uint64_t)NODE_TIMEOUT_MS * 1000 / 4), "took %llu us",
              (unsigned long long)took);
    cr_expect(le(i64, redlock_outcome_validity_ms(out), 0));
    for (int m = 2; m < 5; m++)
        cr_expect(eq(int, redlock_outcome_vote(out, m)->kind, REDLOCK_VOTE_DOWN),
                  "dead master %d voted %s (%s)", m,
                  redlock_vote_kind_name(redlock_outcome_vote(out, m)->kind),
                  redlock_outcome_vote(out, m)->detail);
    /* No barrier: the claim is about the moment acquire returns. */
    cr_expect(eq(int, tc_get(0, res, strlen(res), NULL, 0, NULL), 0), "key left on master 0");
    cr_expect(eq(int, tc_get(1, res, strlen(res), NULL, 0, NULL), 0), "key left on master 1");
}

Test(faults_kill, three_of_five_killed_is_enoquorum_quickly_for_a_new_client)
{
    tc_kill(2);
    tc_kill(3);
    tc_kill(4);
    tc_fx_client(2); /* the live two answer; the rest refuse */
    expect_fast_enoquorum();
}

Test(faults_kill, three_of_five_killed_is_enoquorum_quickly_for_a_connected_client)
{
    tc_fx_client(-1);
    tc_kill(2);
    tc_kill(3);
    tc_kill(4);
    expect_fast_enoquorum();
    expect_fast_enoquorum(); /* and again, with them known to be down */
}

Test(faults_kill, three_of_five_killed_leaves_no_key_even_over_a_slow_link)
{
    enum { RELEASE_LATE_MS = 300 };
    char val[64];
    uint64_t t0, took;
    int rc, held;

    /* The same three dead masters, but the link to live master 0 is slow
     * one way: our SET reaches it and runs at once, the cleanup release
     * sent right behind it arrives 300 ms later (less than the 2 s node
     * timeout). Connections to the dead refuse, so the attempt fails the
     * moment it starts, before master 0 has answered: acquire must still
     * not report the failure while master 0 holds the attempt's key. In
     * the plain kill test SET and release leave in one write and run back
     * to back, which hides this. */
    tc_fx_proxy(0);
    tc_fx_client(-1);
    tc_kill(2);
    tc_kill(3);
    tc_kill(4);
    /* A ping round trip: by its end the client has seen the dead ones go. */
    cr_assert(eq(int, tc_wait_up(tc_fx.c, 2, 5000), 2));
    tc_proxy_hold(tc_fx.proxy, 1, RELEASE_LATE_MS); /* the SET passes, the release waits */
    t0 = tc_now_us();
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, NULL, &tc_fx.e);
    took = tc_now_us() - t0;
    held = tc_get(0, tc_fx.res, tc_fx.len, val, sizeof(val), NULL); /* master 0 itself */
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(eq(int, held, 0),
              "acquire failed after %llu us while live master 0 still holds the attempt's key "
              "(\"%s\"): it did not wait for the cleanup release there",
              (unsigned long long)took, val);
    cr_expect(lt(u64, took, (uint64_t)NODE_TIMEOUT_MS * 1000), "took %llu us",
              (unsigned long long)took);

    tc_barrier_on(tc_fx.c, 1u << 0 | 1u << 1);
    cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 0));
}

Test(faults_kill, three_of_five_killed_with_retries_still_leaves_no_key)
{
    int rc;

    tc_fx.cfg.retry_count = 3;
    tc_fx.cfg.retry_delay_ms = 10;
    tc_fx.cfg.retry_jitter_ms = 10;
    tc_fx_client(-1);
    tc_kill(0);
    tc_kill(2);
    tc_kill(4);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(eq(u32, redlock_outcome_attempts(tc_fx.out), 4));
    cr_expect(eq(int, tc_get(1, tc_fx.res, tc_fx.len, NULL, 0, NULL), 0), "key left on master 1");
    cr_expect(eq(int, tc_get(3, tc_fx.res, tc_fx.len, NULL, 0, NULL), 0), "key left on master 3");
}

/* For tests about reconnecting: a master restarted without AOF would be
 * kept out of quorums for a ttl by the memory guard, which has a test of
 * its own below. */
Test(faults_kill, restarted_masters_reconnect_and_acquires_succeed_again)
{
    int rc;

    tc_fx.cfg.restart_guard = 0;
    tc_fx_client(-1);
    tc_kill(0);
    tc_kill(1);
    tc_kill(2);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);

    tc_restart(0);
    tc_restart(1);
    tc_restart(2);
    /* Reconnects run on the client's backoff (capped at 100 ms here): the
     * client reports all five answering again well within a second. */
    cr_assert(eq(int, tc_wait_up(tc_fx.c, 5, 5000), 5), "restarted masters did not reconnect");

    /* A quorum now needs a restarted master: only masters 3 and 4 lived. */
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_count_token(tc_fx.res, tc_fx.len, redlock_lock_token(tc_fx.l), TTL_MS), 5),
              "every master, restarted or not, holds the new lock");
    /* The restarted masters lost their script cache: release still works
     * (SCRIPT LOAD on reconnect, or the EVAL fallback). */
    cr_expect(eq(int, redlock_release(tc_fx.c, tc_fx.l, tc_fx.out, &tc_fx.e), 0), "%s",
              tc_fx.e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 0));
}

Test(faults_kill, acquire_retries_ride_out_a_restart)
{
    int rc;

    /* Down to two masters, then one comes back: an acquire started after
     * the restart, with retries that span the reconnect backoff, succeeds
     * on its own without the caller polling. */
    tc_fx.cfg.restart_guard = 0;
    tc_fx.cfg.retry_count = 20;
    tc_fx.cfg.retry_delay_ms = 50;
    tc_fx.cfg.retry_jitter_ms = 10;
    tc_fx_client(-1);
    tc_kill(1);
    tc_kill(3);
    tc_kill(4);
    tc_restart(4);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, NULL, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(ge(int, tc_count_token(tc_fx.res, tc_fx.len, redlock_lock_token(tc_fx.l), TTL_MS),
                 3));
    redlock_release(tc_fx.c, tc_fx.l, NULL, NULL);
}

Test(faults_kill, restart_guard_keeps_restarted_masters_out_for_its_window)
{
    enum { SHORT_TTL_MS = 1000, GUARD_MS = 2500 };
    uint64_t t0, took;
    int rc, excluded = 0;
    TC_STATUS(st);

    /* Masters restarted without AOF forgot the locks they granted, and
     * their memory markers with them. The first client to meet each one
     * (its handshake) finds it reborn and settles its window: with three
     * of five reborn, a majority forgot, nobody can measure the leases
     * they held, and the window is the fleet's bound - the longest ttl the
     * client knows, here restart_guard_ms, longer than the ttl asked for:
     * it is the bound's floor. The master votes for nobody until that
     * window has passed on its clock. Acquires fail with no quorum until
     * then, and succeed after, not before. */
    if (tc_aof())
        cr_skip_test("masters run with --aof: they keep their markers across restarts");
    tc_fresh(-1); /* earlier tests' 10 s ttls must not be the fleet's longest here */
    tc_fx.cfg.restart_guard_ms = GUARD_MS;
    tc_fx_client(-1);
    tc_kill(0);
    tc_kill(1);
    tc_kill(2);
    t0 = tc_now_us(); /* the windows start later, when the client met the masters */
    tc_restart(0);
    tc_restart(1);
    tc_restart(2);
    cr_assert(eq(int, tc_wait_up(tc_fx.c, 5, 5000), 5), "restarted masters did not reconnect");

    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, SHORT_TTL_MS, &tc_fx.l, tc_fx.out,
                         &tc_fx.e);
    cr_expect(eq(int, rc, REDLOCK_ENOQUORUM), "inside the window: %s: %s", redlock_err_name(rc),
              tc_fx.e.msg);
    tc_expect_msg(&tc_fx.e, "acquire");
    for (int m = 0; m < 3; m++) {
        const redlock_vote *v = redlock_outcome_vote(tc_fx.out, m);

        if (v->kind != REDLOCK_VOTE_EXCLUDED)
            continue;
        excluded++;
        cr_expect(eq(int, v->err, REDLOCK_EUNTRUSTED));
        cr_expect(strstr(v->detail, "memory marker") &&
                      (strstr(v->detail, "counts at 2.5 s") || strstr(v->detail, "pending")),
                  "master %d: %s", m, v->detail);
    }
    cr_expect(ge(int, excluded, 2),
              "%d of the 3 restarted masters excluded (the third may "
              "still have been pending when the attempt failed)",
              excluded);
    cr_log_info("inside the window: %s", tc_fx.e.msg);
    cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 0), "a failed acquire left a key");
    redlock_ping(tc_fx.c, st, NULL);
    for (int m = 0; m < 5; m++)
        cr_expect(eq(int, redlock_status_master(st, m)->excluded, m < 3),
                  "ping: master %d excluded %d (%s)", m, redlock_status_master(st, m)->excluded,
                  redlock_status_master(st, m)->excluded_why);
    if (tc_fx.l) {
        redlock_release(tc_fx.c, tc_fx.l, NULL, NULL);
        redlock_lock_free(tc_fx.l);
        tc_fx.l = NULL;
    }

    /* A new client, with polls that span the window (40 x 100 ms): the
     * window lives on the masters, so it is not restarted for a client
     * that meets them later; it succeeds once the window ends, not before. */
    redlock_client_free(tc_fx.c);
    tc_fx.cfg.retry_count = 40;
    tc_fx.cfg.retry_delay_ms = 100;
    tc_fx.cfg.retry_jitter_ms = 0;
    tc_fx_client(-1);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, SHORT_TTL_MS, &tc_fx.l, tc_fx.out,
                         &tc_fx.e);
    took = tc_now_us() - t0;
    cr_assert(eq(int, rc, 0), "after the window: %s: %s", redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(ge(u32, redlock_outcome_ok(tc_fx.out), 3));
    /* The windows were settled after t0 and end GUARD_MS later on the
     * masters' clocks (ms granularity). */
    cr_expect(ge(u64, took, (GUARD_MS - 5) * 1000ull),
              "a quorum only %llu us after the "
              "restarts",
              (unsigned long long)took);
    cr_expect(lt(u64, took, (GUARD_MS + 2000) * 1000ull),
              "the window ended %llu us after the "
              "restarts",
              (unsigned long long)took);
    redlock_release(tc_fx.c, tc_fx.l, NULL, NULL);
}
