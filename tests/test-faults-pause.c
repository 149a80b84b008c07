/* test-faults-pause.c - masters that stop answering but keep their sockets (SIGSTOP).
 *
 * A paused master is the hard case: nothing tells the client it is gone.
 * With two of five paused an acquire must still return at the third OK,
 * far below the node timeout (early quorum); with three paused it can only
 * fail, at about the node timeout. Commands pile up behind a paused master
 * only up to max_inflight (twice that for releases); beyond that votes fail
 * at once with EBUSY, and when the master resumes the client carries on.
 * Run alone, one criterion worker; every test heals the cluster in .fini.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "fake.h"
#include "core.h"

#define TTL_MS 10000u
#define NODE_TIMEOUT_MS 2000u

static void heal(void)
{
    tc_heal();
}

TestSuite(faults_pause, .fini = heal, .timeout = 120);

static void fault_config(redlock_config *cfg, uint32_t node_timeout_ms)
{
    core_config(cfg);
    cfg->node_timeout_ms = node_timeout_ms;
    cfg->retry_count = 0;
}

Test(faults_pause, two_paused_still_acquires_far_below_the_node_timeout)
{
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    uint64_t t0, took;
    int rc;

    fault_config(&cfg, NODE_TIMEOUT_MS);
    c = core_client(&cfg, -1);     /* connected to all five before the pause */
    tc_pause(3);
    tc_pause(4);

    tc_resource(res, sizeof(res), NULL);
    t0 = tc_now_us();
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
    took = tc_now_us() - t0;
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    /* Decided at the third OK: an order of magnitude below 2000 ms. */
    cr_expect(lt(u64, took, (uint64_t)NODE_TIMEOUT_MS * 1000 / 10), "took %llu us",
              (unsigned long long)took);
    cr_expect(lt(u64, out.elapsed_us, (uint64_t)NODE_TIMEOUT_MS * 1000 / 10));
    cr_expect(eq(u32, out.n_ok, 3));
    for (int m = 3; m < 5; m++)
        cr_expect(eq(int, out.votes[m].kind, REDLOCK_VOTE_PENDING), "paused master %d voted %s",
                  m, redlock_vote_kind_name(out.votes[m].kind));
    /* Validity is the ttl less margin less the short elapsed time, not
     * less a node timeout. */
    cr_expect(gt(i64, redlock_lock_validity_ms(l), (int64_t)(TTL_MS - 102 - NODE_TIMEOUT_MS / 10)));

    /* Release returns at the third answer too. */
    t0 = tc_now_us();
    rc = redlock_release(c, l, &out, &e);
    cr_expect(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(lt(u64, tc_now_us() - t0, (uint64_t)NODE_TIMEOUT_MS * 1000 / 10));
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "key left on a live master");

    /* The paused masters run the SET and then its release when they wake:
     * no key behind. */
    tc_resume(3);
    tc_resume(4);
    core_barrier(c);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0));
    redlock_lock_free(l);
    redlock_client_free(c);
}

Test(faults_pause, three_paused_is_enoquorum_after_about_the_node_timeout)
{
    enum { TIMEOUT_MS = 300 };
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    uint64_t t0, took;
    int rc;

    fault_config(&cfg, TIMEOUT_MS);
    c = core_client(&cfg, -1);
    tc_pause(0);
    tc_pause(2);
    tc_pause(4);

    tc_resource(res, sizeof(res), NULL);
    t0 = tc_now_us();
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
    took = tc_now_us() - t0;
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), e.msg);
    core_expect_msg(&e, "acquire");
    /* libevent times its timers on CLOCK_MONOTONIC_COARSE (one jiffy,
     * up to 4 ms at HZ=250), so the timeout may fire that much early. */
    cr_expect(ge(u64, took, (uint64_t)TIMEOUT_MS * 1000 - 10000), "took %llu us",
              (unsigned long long)took);
    cr_expect(lt(u64, took, (uint64_t)TIMEOUT_MS * 1000 + 700000), "took %llu us",
              (unsigned long long)took);
    for (int m = 0; m < 5; m += 2) {
        cr_expect(eq(int, out.votes[m].kind, REDLOCK_VOTE_TIMEOUT), "paused master %d voted %s",
                  m, redlock_vote_kind_name(out.votes[m].kind));
        cr_expect(eq(int, out.votes[m].err, REDLOCK_ETIMEOUT));
    }
    cr_expect(eq(int, out.votes[1].kind, REDLOCK_VOTE_OK));
    cr_expect(eq(int, out.votes[3].kind, REDLOCK_VOTE_OK));
    /* The two live masters answered the SET, so acquire waited for their
     * cleanup: nothing there when it returns. */
    cr_expect(eq(int, core_get(1, res, strlen(res), NULL, 0, NULL), 0), "key left on master 1");
    cr_expect(eq(int, core_get(3, res, strlen(res), NULL, 0, NULL), 0), "key left on master 3");

    /* After the wake-up the SET and its queued release run in order. */
    tc_resume(0);
    tc_resume(2);
    tc_resume(4);
    core_barrier(c);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0));
    redlock_client_free(c);
}

Test(faults_pause, commands_behind_paused_masters_are_bounded_and_recover)
{
    enum { MAX_INFLIGHT = 16, CYCLES = 300 };
    redlock_config cfg;
    redlock_client *c;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    long long before[5];
    int busy_votes = 0;
    int rc;

    fault_config(&cfg, 50);
    cfg.max_inflight = MAX_INFLIGHT;
    c = core_client(&cfg, -1);
    tc_resource(res, sizeof(res), NULL);
    for (int m = 3; m < 5; m++) {
        before[m] = core_info_num(m, "stats", "total_commands_processed");
        cr_assert(ge(i64, before[m], 0));
    }
    tc_pause(3);
    tc_pause(4);

    /* Each cycle queues a SET and a release on each paused master. Without
     * a bound that is 2 * CYCLES commands per master; with it, no more than
     * 2 * MAX_INFLIGHT, and the rest fail at once. */
    for (int i = 0; i < CYCLES; i++) {
        redlock_lock *l = NULL;
        uint64_t t0 = tc_now_us();

        rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
        cr_assert(eq(int, rc, 0), "cycle %d: %s: %s", i, redlock_err_name(rc), e.msg);
        cr_assert(lt(u64, tc_now_us() - t0, 500000), "cycle %d took %llu us", i,
                  (unsigned long long)(tc_now_us() - t0));
        for (int m = 3; m < 5; m++) {
            if (out.votes[m].err == REDLOCK_EBUSY) {
                busy_votes++;
                cr_expect(eq(int, out.votes[m].kind, REDLOCK_VOTE_DOWN));
                cr_expect(gt(sz, strlen(out.votes[m].detail), 0));
            }
        }
        rc = redlock_release(c, l, NULL, &e);
        cr_assert(eq(int, rc, 0), "cycle %d: release: %s: %s", i, redlock_err_name(rc), e.msg);
        redlock_lock_free(l);
    }
    /* The bound was hit: most later votes of the paused masters were EBUSY. */
    cr_expect(gt(int, busy_votes, CYCLES), "only %d EBUSY votes in %d cycles", busy_votes,
              CYCLES);

    tc_resume(3);
    tc_resume(4);
    /* The resumed masters answer through this very client again. */
    cr_assert(eq(int, core_wait_up(c, 5, 10000), 5), "resumed masters do not answer");
    core_barrier(c);

    /* What reached each paused master is bounded by the in-flight limit,
     * not by the number of cycles. The slack covers the pings, the
     * barrier and the INFO calls themselves. */
    for (int m = 3; m < 5; m++) {
        long long after = core_info_num(m, "stats", "total_commands_processed");
        long long got = after - before[m];

        cr_expect(gt(i64, got, 0), "master %d ran nothing after resuming", m);
        cr_expect(le(i64, got, 2 * MAX_INFLIGHT + 64),
                  "master %d ran %lld commands queued while paused (bound %d)", m, got,
                  2 * MAX_INFLIGHT);
    }
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "a key outlived its release");

    /* And the client works normally: all five vote again. */
    redlock_lock *l = NULL;
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    core_barrier(c);
    cr_expect(eq(int, core_count_token(res, strlen(res), redlock_lock_token(l), TTL_MS), 5));
    for (int m = 0; m < 5; m++)
        cr_expect(out.votes[m].kind == REDLOCK_VOTE_OK || out.votes[m].kind == REDLOCK_VOTE_PENDING,
                  "master %d voted %s (%s)", m, redlock_vote_kind_name(out.votes[m].kind),
                  out.votes[m].detail);
    cr_expect(eq(int, redlock_release(c, l, NULL, NULL), 0));
    redlock_lock_free(l);
    redlock_client_free(c);
}

Test(faults_pause, failed_shorter_extend_caps_the_lease_at_the_new_ttl)
{
    enum { TIMEOUT_MS = 200, LONG_MS = 60000, SHORT_MS = 2000 };
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_error e;
    char res[128];
    int rc;

    /* An extend to a shorter ttl fails (three masters silent), but the two
     * live masters did run PEXPIRE 2000, and the silent ones will when they
     * wake: the keys under the lease now expire within 2 s. The lock must
     * not go on claiming its old minute. */
    fault_config(&cfg, TIMEOUT_MS);
    c = core_client(&cfg, -1);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), LONG_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s", e.msg);
    cr_assert(gt(i64, redlock_lock_validity_ms(l), SHORT_MS));
    tc_pause(0);
    tc_pause(1);
    tc_pause(2);
    rc = redlock_extend(c, l, SHORT_MS, NULL, &e);
    cr_expect(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), e.msg);
    /* ceil(2000 * 0.01) + 2 ms of margin */
    cr_expect(le(i64, redlock_lock_validity_ms(l), SHORT_MS - 22), "validity %lld ms",
              (long long)redlock_lock_validity_ms(l));
    for (int m = 3; m < 5; m++) {
        long long pttl = 0;

        cr_expect(eq(int, core_get(m, res, strlen(res), NULL, 0, &pttl), 1), "master %d", m);
        cr_expect(le(i64, pttl, SHORT_MS), "master %d: PTTL %lld", m, pttl);
    }
    redlock_lock_free(l);
    redlock_client_free(c);
    core_del_all(res, strlen(res));
}

/* Hold write commands (SET, and scripts) on master @i for @ms: it keeps
 * answering reads, so this is a slow master, not a dead one. */
static void pause_writes(int i, int ms)
{
    redisReply *r = tc_cmd(i, "CLIENT PAUSE %d WRITE", ms);

    cr_assert(not(zero(ptr, r)), "master %d", i);
    cr_assert(eq(int, r->type, REDIS_REPLY_STATUS), "CLIENT PAUSE on master %d: %s", i, r->str);
    freeReplyObject(r);
}

Test(faults_pause, quorum_reached_after_the_ttl_is_eexpired_and_no_lease_is_returned)
{
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    int rc;

    /* Three masters take 300 ms to grant a 100 ms lock: the quorum comes
     * when the lease would already have lapsed. */
    fault_config(&cfg, NODE_TIMEOUT_MS);
    c = core_client(&cfg, -1);
    tc_resource(res, sizeof(res), NULL);
    for (int i = 0; i < 3; i++)
        pause_writes(i, 300);
    rc = redlock_acquire(c, res, strlen(res), 100, &l, &out, &e);
    cr_expect(eq(int, rc, REDLOCK_EEXPIRED), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(zero(ptr, l), "a lease with no validity was returned");
    cr_expect(le(i64, out.validity_ms, 0));
    cr_expect(ge(u32, out.n_ok, out.quorum), "the quorum was reached, just too late");
    core_expect_msg(&e, "acquire");
    cr_expect(not(zero(ptr, strstr(e.msg, "ttl"))), "%s", e.msg);
    core_barrier(c);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0));
    redlock_client_free(c);
}

Test(faults_pause, validity_is_timed_from_the_successful_attempt)
{
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    uint64_t t0, took;
    int rc;

    /* First attempt: quorum after 300 ms, too late for a 200 ms ttl. The
     * retry runs on fast masters. Its lease must be nearly the whole ttl:
     * timed from before the retries it would be gone. */
    fault_config(&cfg, NODE_TIMEOUT_MS);
    cfg.retry_count = 1;
    cfg.retry_delay_ms = 10;
    cfg.retry_jitter_ms = 0;
    c = core_client(&cfg, -1);
    tc_resource(res, sizeof(res), NULL);
    for (int i = 0; i < 3; i++)
        pause_writes(i, 300);
    t0 = tc_now_us();
    rc = redlock_acquire(c, res, strlen(res), 200, &l, &out, &e);
    took = tc_now_us() - t0;
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(u32, out.attempts, 2));
    cr_expect(ge(u64, took, 200000), "the first attempt did not wait for the paused writes");
    cr_expect(gt(i64, out.validity_ms, 150), "validity %lld ms of a 200 ms ttl after %llu us",
              (long long)out.validity_ms, (unsigned long long)took);
    cr_expect(le(i64, out.validity_ms, 200 - 4));
    cr_expect(le(u64, out.elapsed_us, took - 200000), "elapsed covers only the last attempt");
    redlock_release(c, l, NULL, NULL);
    redlock_lock_free(l);
    redlock_client_free(c);
}

Test(faults_pause, release_retries_silent_masters_on_its_own_budget)
{
    enum { TIMEOUT_MS = 150, RETRIES = 2, DELAY_MS = 50 };
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    uint64_t t0, took;
    int rc;

    fault_config(&cfg, TIMEOUT_MS);
    cfg.retry_count = 0;                /* acquire retries: none */
    cfg.release_retry_count = RETRIES;  /* release retries: its own */
    cfg.release_retry_delay_ms = DELAY_MS;
    c = core_client(&cfg, -1);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s", e.msg);
    core_barrier(c);
    tc_pause(0);
    tc_pause(1);
    tc_pause(2);

    t0 = tc_now_us();
    rc = redlock_release(c, l, &out, &e);
    took = tc_now_us() - t0;
    cr_expect(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), e.msg);
    core_expect_msg(&e, "release");
    cr_expect(eq(u32, out.attempts, 1 + RETRIES));
    /* Three timeouts and two delays, less libevent's coarse-clock slack. */
    uint64_t budget_us = (uint64_t)((1 + RETRIES) * TIMEOUT_MS + RETRIES * DELAY_MS) * 1000;
    cr_expect(ge(u64, took, budget_us - 10000), "took %llu us", (unsigned long long)took);
    cr_expect(lt(u64, took, budget_us + 1000000), "took %llu us", (unsigned long long)took);
    for (int m = 0; m < 3; m++)
        cr_expect(eq(int, out.votes[m].kind, REDLOCK_VOTE_TIMEOUT), "master %d voted %s", m,
                  redlock_vote_kind_name(out.votes[m].kind));
    /* The live masters released their copy. */
    cr_expect(eq(int, core_get(3, res, strlen(res), NULL, 0, NULL), 0));
    cr_expect(eq(int, core_get(4, res, strlen(res), NULL, 0, NULL), 0));

    /* Awake again, the queued scripts delete the rest. */
    tc_resume(0);
    tc_resume(1);
    tc_resume(2);
    core_barrier(c);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0));
    redlock_lock_free(l);
    redlock_client_free(c);
}

Test(faults_pause, extend_with_three_paused_is_enoquorum_and_keeps_the_old_lease)
{
    enum { TIMEOUT_MS = 200 };
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    int64_t before;
    int rc;

    fault_config(&cfg, TIMEOUT_MS);
    c = core_client(&cfg, -1);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s", e.msg);
    tc_pause(1);
    tc_pause(2);
    tc_pause(3);
    before = redlock_lock_validity_ms(l);
    rc = redlock_extend(c, l, 6 * TTL_MS, &out, &e);
    cr_expect(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), e.msg);
    core_expect_msg(&e, "extend");
    cr_expect(le(i64, redlock_lock_validity_ms(l), before), "a failed extend lengthened the lease");
    cr_expect(eq(u32, redlock_lock_ttl_ms(l), TTL_MS));
    cr_expect(le(i64, out.validity_ms, 0));
    redlock_lock_free(l);
    redlock_client_free(c);
}

Test(faults_pause, failed_acquire_returns_only_after_masters_that_answered_have_released)
{
    enum { TIMEOUT_MS = 300, WRITES_PAUSED_MS = 400, RELEASE_LATE_MS = 180 };
    tc_proxy *proxy;
    char *masters;
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128], val[64];
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
    proxy = tc_proxy_start(0);
    masters = tc_masters_with(0, tc_proxy_addr(proxy));
    tc_resource(res, sizeof(res), NULL);
    core_plant(1, res, strlen(res), "other-client", TTL_MS);
    core_plant(2, res, strlen(res), "other-client", TTL_MS);
    fault_config(&cfg, TIMEOUT_MS);
    cfg.masters = masters;
    c = core_client(&cfg, -1);

    tc_proxy_hold(proxy, 1, RELEASE_LATE_MS);   /* the SET passes, the release waits */
    pause_writes(3, WRITES_PAUSED_MS);
    pause_writes(4, WRITES_PAUSED_MS);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
    held = core_get(0, res, strlen(res), val, sizeof(val), NULL);   /* master 0 itself */
    cr_assert(ne(int, rc, 0), "acquired with two masters held by another client");
    cr_expect(eq(int, out.votes[0].kind, REDLOCK_VOTE_OK), "master 0 voted %s",
              redlock_vote_kind_name(out.votes[0].kind));
    cr_expect(eq(int, held, 0),
              "acquire returned %s while master 0, which answered the SET, still holds the "
              "attempt's key (\"%s\"): the cleanup wait ended early", redlock_err_name(rc), val);

    core_barrier(c);
    cr_expect(eq(int, core_count_token(res, strlen(res), "other-client", TTL_MS), 2));
    core_del_all(res, strlen(res));
    redlock_client_free(c);
    tc_proxy_stop(proxy);
    free(masters);
}

Test(faults_pause, cleanup_replies_from_silent_masters_do_not_hide_a_wrong_type)
{
    enum { TIMEOUT_MS = 300, WRITES_PAUSED_MS = 100, RELEASE_LATE_MS = 200 };
    tc_proxy *proxy;
    char *masters;
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    int rc;

    /* Masters 0, 1, 2 hold a list under the name: SET NX says "nil", and
     * only the cleanup release's WRONGTYPE tells it apart from a lock held
     * by someone else. The three "nil"s decide at once; the cleanup then
     * waits (up to 300 ms) for those three. Master 0 hears its release
     * 200 ms late (slow link); masters 3 and 4, silent at the decision
     * (writes paused), answer SET and release at ~100 ms. Counting their
     * answers as master 0's ends the wait before master 0's WRONGTYPE
     * arrives, and turns EWRONGTYPE into ENOQUORUM. */
    proxy = tc_proxy_start(0);
    masters = tc_masters_with(0, tc_proxy_addr(proxy));
    tc_resource(res, sizeof(res), NULL);
    for (int i = 0; i < 3; i++)
        freeReplyObject(tc_cmd(i, "RPUSH %b a b c", res, strlen(res)));
    fault_config(&cfg, TIMEOUT_MS);
    cfg.masters = masters;
    c = core_client(&cfg, -1);

    pause_writes(3, WRITES_PAUSED_MS);
    pause_writes(4, WRITES_PAUSED_MS);
    tc_proxy_hold(proxy, 1, RELEASE_LATE_MS);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
    cr_expect(eq(int, rc, REDLOCK_EWRONGTYPE), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, out.votes[0].err, REDLOCK_EWRONGTYPE), "master 0 voted %s (%s)",
              redlock_vote_kind_name(out.votes[0].kind), out.votes[0].detail);

    core_barrier(c);
    core_del_all(res, strlen(res));
    redlock_client_free(c);
    tc_proxy_stop(proxy);
    free(masters);
}

Test(faults_pause, paused_master_at_connect_times_out_and_is_retried)
{
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    int rc;

    /* Paused before the client exists: the TCP connect succeeds (the
     * kernel accepts), the handshake never answers. The connect deadline
     * drops it, the acquire still gets its quorum, and after SIGCONT the
     * master is connected again. */
    tc_pause(1);
    fault_config(&cfg, 200);
    cfg.connect_timeout_ms = 200;
    cfg.reconnect_max_ms = 100;
    c = core_client(&cfg, 4);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, redlock_release(c, l, NULL, NULL), 0));
    redlock_lock_free(l);

    tc_resume(1);
    cr_assert(eq(int, core_wait_up(c, 5, 10000), 5), "master 1 not reconnected after SIGCONT");
    l = NULL;
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    core_barrier(c);
    cr_expect(eq(int, core_count_token(res, strlen(res), redlock_lock_token(l), TTL_MS), 5));
    redlock_release(c, l, NULL, NULL);
    redlock_lock_free(l);
    redlock_client_free(c);
}
