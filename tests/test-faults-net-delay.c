/* test-faults-net-delay.c - slow, jittery and lossy links between the
 * client and masters.
 *
 * Five masters in network namespaces of the test's own (tests/netns.sh)
 * behind links that delay: tc netem when the kernel has it, else a
 * user-space relay per master (helpers/relay.c); loss needs netem and is
 * skipped without it. An acquire costs the round trip to the quorum-th
 * fastest master, jitter moves it only within the links' bounds, and SETs
 * that land after the client gave up block others only until the cleanup
 * behind them has run. Where namespaces cannot be made, every test skips
 * with one line.
 */
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"
#include "net.h"

#define N 5
#define TTL_MS 10000u
#define MARGIN_MS (TTL_MS / 100 + 2) /* drift margin at the default factor */

TestSuite(faults_net, .init = tc_net_init, .fini = tc_net_down, .timeout = 45);

Test(faults_net, the_third_fastest_master_sets_the_latency)
{
    enum { NODE_TIMEOUT = 400 };
    static const unsigned delay[N] = { 0, 0, 30, 60, 90 }; /* RTT 0, 0, 60, 120, 180 ms */
    redlock_config cfg;
    redlock_client *c;
    TC_TRY(t);

    tc_net_config(&cfg, tc_net_delayed_masters(delay, 0), NODE_TIMEOUT);
    c = tc_net_client(&cfg);
    for (int k = 0; k < 8; k++) {
        int rc = tc_try_acquire(c, TTL_MS, &t);

        cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), t.e.msg);
        /* No faster than the quorum's slowest member (60 ms), well before
         * the fourth (120 ms). */
        cr_expect(ge(u64, t.took_ms, 59), "took %llu ms", (unsigned long long)t.took_ms);
        cr_expect(lt(u64, t.took_ms, 110), "took %llu ms", (unsigned long long)t.took_ms);
        cr_expect(ge(u64, redlock_outcome_elapsed_us(t.out), 59000));
        cr_expect(eq(int, redlock_outcome_vote(t.out, 4)->kind, REDLOCK_VOTE_PENDING));
        /* The validity lost is the elapsed time plus the drift margin. */
        cr_expect(le(i64, redlock_outcome_validity_ms(t.out), (int64_t)(TTL_MS - MARGIN_MS - 59)));
        cr_expect(ge(i64, redlock_outcome_validity_ms(t.out), (int64_t)(TTL_MS - MARGIN_MS - 110)));
        cr_expect(eq(int, redlock_release(c, t.l, NULL, &t.e), 0), "%s", t.e.msg);
        redlock_lock_free(t.l);
    }
}

Test(faults_net, jitter_keeps_latency_between_the_bounds_of_the_links)
{
    enum { NODE_TIMEOUT = 400, ONE_WAY = 20, JITTER = 10 };
    static const unsigned delay[N] = { ONE_WAY, ONE_WAY, ONE_WAY, ONE_WAY, ONE_WAY };
    redlock_config cfg;
    redlock_client *c;
    TC_TRY(t);

    tc_net_config(&cfg, tc_net_delayed_masters(delay, JITTER), NODE_TIMEOUT);
    c = tc_net_client(&cfg);
    for (int k = 0; k < 10; k++) {
        int rc = tc_try_acquire(c, TTL_MS, &t);

        cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), t.e.msg);
        /* Each round trip is 2 x (20 +/- 10) ms. */
        cr_expect(ge(u64, t.took_ms, 2 * (ONE_WAY - JITTER) - 1), "took %llu ms",
                  (unsigned long long)t.took_ms);
        cr_expect(lt(u64, t.took_ms, 2 * (ONE_WAY + JITTER) + 30), "took %llu ms",
                  (unsigned long long)t.took_ms);
        cr_expect(eq(int, redlock_release(c, t.l, NULL, &t.e), 0), "%s", t.e.msg);
        redlock_lock_free(t.l);
    }
}

Test(faults_net, sets_landing_after_the_node_timeout_block_others_until_cleanup_not_longer)
{
    enum { NODE_TIMEOUT = 250, SLOW = 200 };
    static const unsigned delay[N] = { 0, 0, SLOW, SLOW, SLOW };
    redlock_config cfg;
    redlock_client *a, *b;
    redlock_lock *la = NULL, *lb = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    char res[128];
    int rc;

    tc_net_config(&cfg, tc_net_delayed_masters(delay, 0), NODE_TIMEOUT);
    a = tc_net_client(&cfg);
    b = tc_net_side_client(NODE_TIMEOUT);
    tc_resource(res, sizeof(res), NULL);

    /* A's SETs reach 2, 3, 4 after 200 ms, their OKs would take 400 ms: A
     * gives up at 250 ms with two OKs, and its cleanup reaches them at
     * about 450 ms. */
    rc = redlock_acquire(a, res, strlen(res), TTL_MS, &la, out, &e);
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "A: %s: %s", redlock_err_name(rc), e.msg);
    /* Until then a majority holds a key that no one holds the lock for:
     * B is refused (safe), and gets it once the cleanup has run. */
    rc = redlock_acquire(b, res, strlen(res), TTL_MS, &lb, out, &e);
    cr_expect(eq(int, rc, REDLOCK_ECONFLICT), "B during A's late SETs: %s: %s",
              redlock_err_name(rc), e.msg);
    cr_expect(tc_net_await_key_gone(res, strlen(res), 3000),
              "A's late SETs left a key on %d masters", tc_net_key_count(res, strlen(res)));
    rc = redlock_acquire(b, res, strlen(res), TTL_MS, &lb, out, &e);
    cr_expect(eq(int, rc, 0), "B after A's cleanup: %s: %s", redlock_err_name(rc), e.msg);
    if (lb) {
        cr_expect(eq(int, redlock_release(b, lb, NULL, &e), 0), "%s", e.msg);
        redlock_lock_free(lb);
    }
}

Test(faults_net, loss_on_every_link_keeps_acquires_live)
{
    enum { NODE_TIMEOUT = 1000, LOSS = 10, TRIES = 10 };
    redlock_config cfg;
    redlock_client *c;
    redlock_error e;
    char res[128], why[256] = "";
    uint64_t t0;
    int ok = 0, tries = 0;

    for (int m = 0; m < N; m++) {
        if (tc_net_loss(m, LOSS, why, sizeof(why)) == 3)
            cr_skip_test("%s (loss needs tc netem: a relay cannot drop packets)", why);
    }
    tc_net_config(&cfg, NULL, NODE_TIMEOUT);
    cfg.retry_count = 1;
    c = tc_net_client(&cfg);
    /* TCP retransmits what netem drops (200 ms at the soonest): slower
     * answers, well inside a 1 s node timeout. Bounded at 25 s in all. */
    t0 = tc_now_us();
    for (; tries < TRIES && tc_ms_since(t0) < 25000; tries++) {
        redlock_lock *l = NULL;
        int rc;

        tc_resource(res, sizeof(res), NULL);
        rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &e);
        if (rc != 0) { /* one may fail: said, not warned (a warning fails the run) */
            cr_log_info("acquire %d under %d%% loss: %s: %s", tries, LOSS, redlock_err_name(rc),
                        e.msg);
            continue;
        }
        ok++;
        cr_expect(eq(int, redlock_release(c, l, NULL, &e), 0), "%s", e.msg);
        redlock_lock_free(l);
    }
    cr_expect(ge(int, ok, TRIES - 1), "%d of %d acquires under %d%% loss", ok, tries, LOSS);
}
