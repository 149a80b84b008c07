/* test-faults-pause-lease.c - extending and releasing a held lock while a
 * majority is silent.
 *
 * With three of five masters paused neither an extend nor a release can
 * reach a majority. An extend that fails must not lengthen the lease it
 * reports, and must shorten it when the live masters did run a shorter
 * ttl. A release retries the silent masters on a budget of its own, and
 * what it queued there runs when they wake. Run alone, one criterion
 * worker; every test heals the cluster in .fini.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

#define TTL_MS 10000u

TestSuite(faults_pause, .init = tc_fx_init_faults, .fini = tc_fx_fini_faults, .timeout = 120);

Test(faults_pause, failed_shorter_extend_caps_the_lease_at_the_new_ttl)
{
    enum { TIMEOUT_MS = 200, LONG_MS = 60000, SHORT_MS = 2000 };
    int rc;

    /* An extend to a shorter ttl fails (three masters silent), but the two
     * live masters did run PEXPIRE 2000, and the silent ones will when they
     * wake: the keys under the lease now expire within 2 s. The lock must
     * not go on claiming its old minute. */
    tc_fx.cfg.node_timeout_ms = TIMEOUT_MS;
    tc_fx_client(-1);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, LONG_MS, &tc_fx.l, NULL, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s", tc_fx.e.msg);
    cr_assert(gt(i64, redlock_lock_validity_ms(tc_fx.l), SHORT_MS));
    tc_pause(0);
    tc_pause(1);
    tc_pause(2);
    rc = redlock_extend(tc_fx.c, tc_fx.l, SHORT_MS, NULL, &tc_fx.e);
    cr_expect(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    /* ceil(2000 * 0.01) + 2 ms of margin */
    cr_expect(le(i64, redlock_lock_validity_ms(tc_fx.l), SHORT_MS - 22), "validity %lld ms",
              (long long)redlock_lock_validity_ms(tc_fx.l));
    /* The extend failed without waiting for every live master: let masters
     * 3 and 4 (the live ones) run it before reading their ttls. */
    tc_barrier_on(tc_fx.c, 1u << 3 | 1u << 4);
    for (int m = 3; m < 5; m++) {
        long long pttl = 0;

        cr_expect(eq(int, tc_get(m, tc_fx.res, tc_fx.len, NULL, 0, &pttl), 1), "master %d", m);
        cr_expect(le(i64, pttl, SHORT_MS), "master %d: PTTL %lld", m, pttl);
    }
    tc_del_all(tc_fx.res, tc_fx.len);
}

Test(faults_pause, release_retries_silent_masters_on_its_own_budget)
{
    enum { TIMEOUT_MS = 150, RETRIES = 2, DELAY_MS = 50 };
    uint64_t t0, took, budget_us;
    int rc;

    tc_fx.cfg.node_timeout_ms = TIMEOUT_MS;
    tc_fx.cfg.retry_count = 0;               /* acquire retries: none */
    tc_fx.cfg.release_retry_count = RETRIES; /* release retries: its own */
    tc_fx.cfg.release_retry_delay_ms = DELAY_MS;
    tc_fx_client(-1);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, NULL, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s", tc_fx.e.msg);
    tc_barrier(tc_fx.c);
    tc_pause(0);
    tc_pause(1);
    tc_pause(2);

    t0 = tc_now_us();
    rc = redlock_release(tc_fx.c, tc_fx.l, tc_fx.out, &tc_fx.e);
    took = tc_now_us() - t0;
    cr_expect(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    tc_expect_msg(&tc_fx.e, "release");
    cr_expect(eq(u32, redlock_outcome_attempts(tc_fx.out), 1 + RETRIES));
    /* Three timeouts and two delays, less libevent's coarse-clock slack. */
    budget_us = (uint64_t)((1 + RETRIES) * TIMEOUT_MS + RETRIES * DELAY_MS) * 1000;
    cr_expect(ge(u64, took, budget_us - 10000), "took %llu us", (unsigned long long)took);
    cr_expect(lt(u64, took, budget_us + 1000000), "took %llu us", (unsigned long long)took);
    for (int m = 0; m < 3; m++)
        cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, m)->kind, REDLOCK_VOTE_TIMEOUT),
                  "master %d voted %s", m,
                  redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, m)->kind));
    /* The live masters released their copy. */
    cr_expect(eq(int, tc_get(3, tc_fx.res, tc_fx.len, NULL, 0, NULL), 0));
    cr_expect(eq(int, tc_get(4, tc_fx.res, tc_fx.len, NULL, 0, NULL), 0));

    /* Awake again, the queued scripts delete the rest. */
    tc_resume(0);
    tc_resume(1);
    tc_resume(2);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 0));
}

Test(faults_pause, extend_with_three_paused_is_enoquorum_and_keeps_the_old_lease)
{
    enum { TIMEOUT_MS = 200 };
    int64_t before;
    int rc;

    tc_fx.cfg.node_timeout_ms = TIMEOUT_MS;
    tc_fx_client(-1);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, NULL, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s", tc_fx.e.msg);
    tc_pause(1);
    tc_pause(2);
    tc_pause(3);
    before = redlock_lock_validity_ms(tc_fx.l);
    rc = redlock_extend(tc_fx.c, tc_fx.l, 6 * TTL_MS, tc_fx.out, &tc_fx.e);
    cr_expect(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    tc_expect_msg(&tc_fx.e, "extend");
    cr_expect(le(i64, redlock_lock_validity_ms(tc_fx.l), before),
              "a failed extend lengthened the lease");
    cr_expect(eq(u32, redlock_lock_ttl_ms(tc_fx.l), TTL_MS));
    cr_expect(le(i64, redlock_outcome_validity_ms(tc_fx.out), 0));
}
