/* test-faults-net.c - partitions, delay, jitter and loss between client and masters.
 *
 * Each test puts five masters in network namespaces of its own
 * (tests/netns.sh) and breaks the links: a cut link drops packets, so the
 * client sees silence (a black hole), never an error. Safety is checked
 * through a side door (each master's namespace loopback), which no fault
 * on a link reaches; a second client on the far side of a partition goes
 * through the same side door. Delay and jitter use tc netem when the kernel
 * has it, else a user-space relay (helpers/relay.c); loss needs netem.
 * Where namespaces cannot be made, every test skips with one line.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "net.h"

/* No gt() below: in Criterion 2.4.1 (Debian 12) gt(T, a, b) tests a >= b
 * (Snaipe/Criterion#473, fixed after 2.4.1). lt() with the operands swapped. */
#define N 5
#define TTL_MS 10000u
#define MARGIN_MS (TTL_MS / 100 + 2)       /* drift margin at the default factor */
#define SIDE_PORT 7670                     /* side-door relays: 7670..7674 */
#define DELAY_PORT 7675                    /* delaying relays: 7675..7679 */

static void setup(void)
{
    net_require();
    net_up(N);
}

TestSuite(faults_net, .fini = net_down, .timeout = 45);

/* A client on the far side of any partition: through the side doors. */
static redlock_client *side_client(unsigned node_timeout_ms)
{
    static char masters[N * 24];
    redlock_config cfg;
    size_t used = 0;

    for (int i = 0; i < N; i++) {
        tc_relay *r = net_relay(i, SIDE_PORT + i, 1);
        used += (size_t)snprintf(masters + used, sizeof(masters) - used, "%s%s", i ? "," : "",
                                 tc_relay_addr(r));
    }
    net_config(&cfg, masters, node_timeout_ms);
    return net_client(&cfg);
}

static uint64_t ms_since(unsigned long long t0_us)
{
    return (tc_now_us() - t0_us) / 1000u;
}

/* Poll (the client cannot tell us when a master it got no answer from has
 * run what it was sent) until @key is on no master, for @limit_ms. */
static int wait_key_gone(const char *key, unsigned limit_ms)
{
    unsigned long long t0 = tc_now_us();
    while (net_key_count(key, strlen(key)) != 0) {
        if (ms_since(t0) > limit_ms)
            return 0;
        tc_sleep_ms(10);
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Partitions                                                               */
/* ------------------------------------------------------------------------ */

Test(faults_net, cut_from_two_of_five_still_acquires_at_the_early_quorum)
{
    enum { NODE_TIMEOUT = 2000 };
    redlock_config cfg;
    redlock_client *c;
    redlock_outcome out;
    redlock_error e;
    char res[128];

    setup();
    net_config(&cfg, NULL, NODE_TIMEOUT);
    c = net_client(&cfg);
    net_cut(3);
    net_cut(4);

    for (int k = 0; k < 5; k++) {
        redlock_lock *l = NULL;
        unsigned long long t0;
        uint64_t took;
        int rc;

        tc_resource(res, sizeof(res), NULL);
        t0 = tc_now_us();
        rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
        took = ms_since(t0);
        cr_assert(eq(int, rc, 0), "acquire %d: %s: %s", k, redlock_err_name(rc), e.msg);
        /* Liveness, and at the third OK: a black hole costs nothing while a
         * quorum answers. */
        cr_expect(lt(u64, took, NODE_TIMEOUT / 10), "acquire %d took %llu ms", k,
                  (unsigned long long)took);
        cr_expect(eq(u32, out.n_ok, 3));
        cr_expect(eq(int, out.votes[3].kind, REDLOCK_VOTE_PENDING));
        cr_expect(eq(int, out.votes[4].kind, REDLOCK_VOTE_PENDING));
        cr_expect(lt(i64, (int64_t)(TTL_MS - MARGIN_MS - NODE_TIMEOUT / 10), redlock_lock_validity_ms(l)));
        /* Both directions are cut: the SET never reached masters 3 and 4. */
        cr_expect(eq(int, net_get(3, res, strlen(res), NULL, 0), 0));
        cr_expect(eq(int, net_get(4, res, strlen(res), NULL, 0), 0));

        t0 = tc_now_us();
        rc = redlock_release(c, l, &out, &e);
        took = ms_since(t0);
        cr_expect(eq(int, rc, 0), "release %d: %s: %s", k, redlock_err_name(rc), e.msg);
        cr_expect(lt(u64, took, NODE_TIMEOUT / 10), "release %d took %llu ms", k,
                  (unsigned long long)took);
        cr_expect(eq(int, net_key_count(res, strlen(res)), 0), "key left behind");
        redlock_lock_free(l);
    }
}

Test(faults_net, cut_from_three_of_five_is_enoquorum_after_one_node_timeout)
{
    enum { NODE_TIMEOUT = 300 };
    redlock_config cfg;
    redlock_client *c;
    redlock_outcome out;
    redlock_error e;
    char res[128];

    setup();
    net_config(&cfg, NULL, NODE_TIMEOUT);
    c = net_client(&cfg);
    net_cut(0);
    net_cut(2);
    net_cut(4);

    for (int k = 0; k < 3; k++) {
        redlock_lock *l = NULL;
        unsigned long long t0;
        uint64_t took;
        int rc;

        tc_resource(res, sizeof(res), NULL);
        t0 = tc_now_us();
        rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
        took = ms_since(t0);
        cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "acquire %d: %s: %s", k, redlock_err_name(rc), e.msg);
        cr_expect(eq(ptr, l, NULL));
        /* One node timeout (libevent's coarse clock may fire a jiffy early),
         * not more: the reachable masters' cleanup is waited for, the cut
         * ones' is not. */
        cr_expect(ge(u64, took, NODE_TIMEOUT - 10), "took %llu ms", (unsigned long long)took);
        cr_expect(lt(u64, took, NODE_TIMEOUT + 700), "took %llu ms", (unsigned long long)took);
        for (int m = 0; m < N; m += 2)
            cr_expect(eq(int, out.votes[m].kind, REDLOCK_VOTE_TIMEOUT), "cut master %d voted %s", m,
                      redlock_vote_kind_name(out.votes[m].kind));
        cr_expect(eq(int, out.votes[1].kind, REDLOCK_VOTE_OK));
        cr_expect(eq(int, out.votes[3].kind, REDLOCK_VOTE_OK));
        /* The SETs that did land were released before the call returned. */
        cr_expect(eq(int, net_get(1, res, strlen(res), NULL, 0), 0), "key left on master 1");
        cr_expect(eq(int, net_get(3, res, strlen(res), NULL, 0), 0), "key left on master 3");
    }
}

Test(faults_net, replies_lost_from_two_the_holder_stays_exclusive_and_its_release_runs)
{
    enum { NODE_TIMEOUT = 500 };
    redlock_config cfg;
    redlock_client *a, *b;
    redlock_lock *la = NULL, *lb = NULL;
    redlock_outcome out;
    redlock_status st;
    redlock_error e;
    char res[128];
    int rc;

    setup();
    net_config(&cfg, NULL, NODE_TIMEOUT);
    a = net_client(&cfg);
    b = side_client(NODE_TIMEOUT);
    net_cut_out(0);
    net_cut_out(1);
    tc_resource(res, sizeof(res), NULL);

    rc = redlock_acquire(a, res, strlen(res), TTL_MS, &la, &out, &e);
    cr_assert(eq(int, rc, 0), "A: %s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(u32, out.n_ok, 3));
    cr_expect(eq(int, out.votes[0].kind, REDLOCK_VOTE_PENDING));
    cr_expect(eq(int, out.votes[1].kind, REDLOCK_VOTE_PENDING));
    /* The requests got through: masters 0 and 1 hold A's key though A never
     * heard them say so (sent with the other three; give them a moment). */
    unsigned long long t0 = tc_now_us();
    while (net_token_count(res, strlen(res), redlock_lock_token(la)) < N && ms_since(t0) < 1000)
        tc_sleep_ms(5);
    cr_expect(eq(int, net_token_count(res, strlen(res), redlock_lock_token(la)), N));

    /* Safety: B, whose links are fine, gets no majority while A holds. */
    rc = redlock_acquire(b, res, strlen(res), TTL_MS, &lb, &out, &e);
    cr_expect(eq(int, rc, REDLOCK_ECONFLICT), "B: %s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(ptr, lb, NULL));
    cr_expect(eq(u32, out.n_ok, 0));
    memset(&st, 0, sizeof(st));
    rc = redlock_status_get(b, res, strlen(res), &st, &e);
    cr_expect(eq(int, rc, 0), "status: %s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(str, st.majority_token, (char *)redlock_lock_token(la)));
    cr_expect(eq(u32, st.n_held, N));

    /* A's release returns at the third answer; the two it cannot hear from
     * are sent all the same, and run: at once if TCP still sends (within a
     * retransmission timeout of the unanswered SETs, whose ACKs the cut
     * drops too), else when the link heals, in order behind the SET. */
    rc = redlock_release(a, la, &out, &e);
    cr_expect(eq(int, rc, 0), "A release: %s: %s", redlock_err_name(rc), e.msg);
    if (!wait_key_gone(res, 500)) {
        cr_log_info("A's release waits in its socket until the heal");
        net_heal(-1);
    }
    cr_expect(wait_key_gone(res, 15000), "A's key still on %d masters after its release",
              net_key_count(res, strlen(res)));

    rc = redlock_acquire(b, res, strlen(res), TTL_MS, &lb, &out, &e);
    cr_expect(eq(int, rc, 0), "B after A's release: %s: %s", redlock_err_name(rc), e.msg);
    if (lb) {
        cr_expect(eq(int, redlock_release(b, lb, NULL, &e), 0), "%s", e.msg);
        redlock_lock_free(lb);
    }
    redlock_lock_free(la);
}

Test(faults_net, replies_lost_from_three_is_enoquorum_cleanup_runs_and_spares_the_next_holder)
{
    enum { NODE_TIMEOUT = 300 };
    redlock_config cfg;
    redlock_client *a, *b;
    redlock_lock *la = NULL, *lb = NULL;
    redlock_outcome out;
    redlock_error e;
    long long before[3];
    char res[128];
    int rc;

    setup();
    net_config(&cfg, NULL, NODE_TIMEOUT);
    a = net_client(&cfg);
    b = side_client(NODE_TIMEOUT);
    for (int m = 0; m < 3; m++)
        net_cut_out(m);
    tc_resource(res, sizeof(res), NULL);

    /* The SETs land on all five; A hears two OKs and fails. Its cleanup
     * releases go out at once, land on all five and run. */
    rc = redlock_acquire(a, res, strlen(res), TTL_MS, &la, &out, &e);
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "A: %s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(u32, out.n_ok, 2));
    cr_expect(wait_key_gone(res, 3000), "A's failed attempt left its key on %d masters",
              net_key_count(res, strlen(res)));

    rc = redlock_acquire(b, res, strlen(res), TTL_MS, &lb, &out, &e);
    cr_assert(eq(int, rc, 0), "B: %s: %s", redlock_err_name(rc), e.msg);

    /* A tries again while B holds: it must not get the lock. By now TCP
     * has waited one retransmission timeout for ACKs that the cut drops
     * with the replies, and sends nothing new until one arrives: replies
     * lost is, for TCP, soon a cut both ways. A's SET and cleanup wait in
     * its socket, in order. */
    for (int m = 0; m < 3; m++)
        before[m] = net_cmdstat(m, "evalsha") + net_cmdstat(m, "eval");
    rc = redlock_acquire(a, res, strlen(res), TTL_MS, &la, &out, &e);
    cr_expect(ne(int, rc, 0), "A got the lock B holds");
    cr_expect(eq(ptr, la, NULL));
    cr_expect(eq(int, net_token_count(res, strlen(res), redlock_lock_token(lb)), N));

    /* Healed, they arrive: NX refused, then a release whose token does not
     * match. B's keys stay. */
    net_heal(-1);
    unsigned long long t0 = tc_now_us();   /* one deadline for all three */
    for (int m = 0; m < 3; m++) {
        while (net_cmdstat(m, "evalsha") + net_cmdstat(m, "eval") <= before[m] && ms_since(t0) < 15000)
            tc_sleep_ms(20);
        cr_expect(lt(i64, before[m], net_cmdstat(m, "evalsha") + net_cmdstat(m, "eval")),
                  "A's cleanup never ran on master %d", m);
    }
    cr_expect(eq(int, net_token_count(res, strlen(res), redlock_lock_token(lb)), N),
              "B's key was removed by A's cleanup");

    rc = redlock_release(b, lb, &out, &e);
    cr_expect(eq(int, rc, 0), "B release: %s: %s", redlock_err_name(rc), e.msg);
    redlock_lock_free(lb);
    redlock_lock_free(la);
}

Test(faults_net, requests_lost_then_healed_arrive_in_order_and_leave_nothing)
{
    enum { NODE_TIMEOUT = 500 };
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    int rc;

    setup();
    net_config(&cfg, NULL, NODE_TIMEOUT);
    c = net_client(&cfg);
    net_cut_in(3);
    net_cut_in(4);
    tc_resource(res, sizeof(res), NULL);

    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    rc = redlock_release(c, l, &out, &e);
    cr_expect(eq(int, rc, 0), "release: %s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(i64, net_cmdstat(3, "set"), 0), "a SET got through a cut link");

    /* Healed, TCP retransmits: the late SET runs on 3 and 4, then the
     * release queued behind it on the same connection removes it. */
    net_heal(-1);
    unsigned long long t0 = tc_now_us();   /* one deadline for both */
    for (int m = 3; m < N; m++) {
        while ((net_cmdstat(m, "set") < 1 ||
                net_cmdstat(m, "evalsha") + net_cmdstat(m, "eval") < 1) && ms_since(t0) < 15000)
            tc_sleep_ms(20);
        cr_expect(ge(i64, net_cmdstat(m, "set"), 1), "SET never reached master %d", m);
    }
    cr_expect(wait_key_gone(res, 2000), "the late SET left a key on %d masters",
              net_key_count(res, strlen(res)));
    redlock_lock_free(l);
}

Test(faults_net, heal_restores_acquires_and_inflight_stays_bounded)
{
    enum { NODE_TIMEOUT = 100, MAX_INFLIGHT = 16, TRIES = 40 };
    redlock_config cfg;
    redlock_client *c;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    int slow = 0, busy = 0, rc = -1;
    unsigned long long t0;

    setup();
    net_config(&cfg, NULL, NODE_TIMEOUT);
    cfg.max_inflight = MAX_INFLIGHT;
    cfg.clock_policy = REDLOCK_CLOCK_OFF;   /* only our commands in flight */
    c = net_client(&cfg);
    for (int m = 0; m < 3; m++)
        net_cut(m);

    for (int k = 0; k < TRIES; k++) {
        redlock_lock *l = NULL;
        uint64_t took;

        tc_resource(res, sizeof(res), NULL);
        t0 = tc_now_us();
        rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
        took = ms_since(t0);
        cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "try %d: %s: %s", k, redlock_err_name(rc), e.msg);
        if (out.votes[0].err == REDLOCK_EBUSY) {
            busy++;
            /* Refused at once: no timeout to wait for. */
            cr_expect(lt(u64, took, NODE_TIMEOUT / 2), "try %d (EBUSY) took %llu ms", k,
                      (unsigned long long)took);
        } else {
            slow++;
        }
    }
    /* Each acquire queues a SET and its cleanup release per silent master;
     * once MAX_INFLIGHT commands wait there, new SETs are refused. */
    cr_log_info("%d acquires queued behind the cut, %d refused at once", slow, busy);
    cr_expect(le(int, slow, MAX_INFLIGHT), "%d acquires queued behind the cut", slow);
    cr_expect(ge(int, busy, TRIES - MAX_INFLIGHT), "only %d refused with EBUSY", busy);

    /* Healed: the backlog drains (TCP retransmits on its backed-off timer)
     * and acquires succeed again. */
    net_heal(-1);
    t0 = tc_now_us();
    for (;;) {
        redlock_lock *l = NULL;
        tc_resource(res, sizeof(res), NULL);
        rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
        if (rc == 0) {
            cr_expect(eq(int, redlock_release(c, l, NULL, &e), 0), "%s", e.msg);
            redlock_lock_free(l);
            break;
        }
        if (ms_since(t0) > 20000)
            break;
        tc_sleep_ms(50);
    }
    cr_assert(eq(int, rc, 0), "no acquire 20 s after the heal: %s: %s", redlock_err_name(rc), e.msg);
    cr_log_info("acquires again %llu ms after the heal", (unsigned long long)ms_since(t0));

    /* Every SET that was queued had its release queued right behind it:
     * once the backlog ran, nothing is left anywhere. */
    t0 = tc_now_us();
    int keys = 0;
    for (;;) {
        keys = 0;
        for (int m = 0; m < N; m++) {
            redisReply *r = net_cmd(m, "DBSIZE");
            keys += r && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : 1;
            freeReplyObject(r);
        }
        if (!keys || ms_since(t0) > 10000)
            break;
        tc_sleep_ms(20);
    }
    cr_expect(eq(int, keys, 0), "%d keys left after the backlog ran", keys);
}

/* ------------------------------------------------------------------------ */
/* Delay, jitter, loss                                                      */
/* ------------------------------------------------------------------------ */

/*
 * One-way delays @ms[i] (+/- @jitter) on master i's link: netem when the
 * kernel has it, else a relay per master on loopback. Return: the masters
 * list to use (static storage).
 */
static const char *delayed_masters(const unsigned ms[N], unsigned jitter)
{
    static char masters[N * 24];
    char why[256] = "";
    size_t used = 0;
    int netem = 1;

    for (int i = 0; i < N && netem; i++)
        netem = net_delay(i, ms[i], jitter, why, sizeof(why)) == 0;
    if (netem) {
        cr_log_info("delay: tc netem on the veths");
        return net_masters();
    }
    net_heal(-1);
    cr_log_info("delay: user-space relay (%s)", why);
    for (int i = 0; i < N; i++) {
        tc_relay *r = net_relay(i, DELAY_PORT + i, 0);
        tc_relay_set_delay(r, ms[i], ms[i], jitter);
        used += (size_t)snprintf(masters + used, sizeof(masters) - used, "%s%s", i ? "," : "",
                                 tc_relay_addr(r));
    }
    return masters;
}

Test(faults_net, the_third_fastest_master_sets_the_latency)
{
    enum { NODE_TIMEOUT = 400 };
    static const unsigned delay[N] = { 0, 0, 30, 60, 90 };   /* RTT 0, 0, 60, 120, 180 ms */
    redlock_config cfg;
    redlock_client *c;
    redlock_outcome out;
    redlock_error e;
    char res[128];

    setup();
    net_config(&cfg, delayed_masters(delay, 0), NODE_TIMEOUT);
    c = net_client(&cfg);
    for (int k = 0; k < 8; k++) {
        redlock_lock *l = NULL;
        unsigned long long t0 = tc_now_us();
        uint64_t took;
        int rc;

        tc_resource(res, sizeof(res), NULL);
        rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
        took = ms_since(t0);
        cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
        /* No faster than the quorum's slowest member (60 ms), well before
         * the fourth (120 ms). */
        cr_expect(ge(u64, took, 59), "took %llu ms", (unsigned long long)took);
        cr_expect(lt(u64, took, 110), "took %llu ms", (unsigned long long)took);
        cr_expect(ge(u64, out.elapsed_us, 59000));
        cr_expect(eq(int, out.votes[4].kind, REDLOCK_VOTE_PENDING));
        /* The validity lost is the elapsed time plus the drift margin. */
        cr_expect(le(i64, out.validity_ms, (int64_t)(TTL_MS - MARGIN_MS - 59)));
        cr_expect(ge(i64, out.validity_ms, (int64_t)(TTL_MS - MARGIN_MS - 110)));
        cr_expect(eq(int, redlock_release(c, l, NULL, &e), 0), "%s", e.msg);
        redlock_lock_free(l);
    }
}

Test(faults_net, jitter_keeps_latency_between_the_bounds_of_the_links)
{
    enum { NODE_TIMEOUT = 400, ONE_WAY = 20, JITTER = 10 };
    static const unsigned delay[N] = { ONE_WAY, ONE_WAY, ONE_WAY, ONE_WAY, ONE_WAY };
    redlock_config cfg;
    redlock_client *c;
    redlock_error e;
    char res[128];

    setup();
    net_config(&cfg, delayed_masters(delay, JITTER), NODE_TIMEOUT);
    c = net_client(&cfg);
    for (int k = 0; k < 10; k++) {
        redlock_lock *l = NULL;
        unsigned long long t0 = tc_now_us();
        uint64_t took;
        int rc;

        tc_resource(res, sizeof(res), NULL);
        rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &e);
        took = ms_since(t0);
        cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
        /* Each round trip is 2 x (20 +/- 10) ms. */
        cr_expect(ge(u64, took, 2 * (ONE_WAY - JITTER) - 1), "took %llu ms", (unsigned long long)took);
        cr_expect(lt(u64, took, 2 * (ONE_WAY + JITTER) + 30), "took %llu ms", (unsigned long long)took);
        cr_expect(eq(int, redlock_release(c, l, NULL, &e), 0), "%s", e.msg);
        redlock_lock_free(l);
    }
}

Test(faults_net, sets_landing_after_the_node_timeout_block_others_until_cleanup_not_longer)
{
    enum { NODE_TIMEOUT = 250, SLOW = 200 };
    static const unsigned delay[N] = { 0, 0, SLOW, SLOW, SLOW };
    redlock_config cfg;
    redlock_client *a, *b;
    redlock_lock *la = NULL, *lb = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    int rc;

    setup();
    net_config(&cfg, delayed_masters(delay, 0), NODE_TIMEOUT);
    a = net_client(&cfg);
    b = side_client(NODE_TIMEOUT);
    tc_resource(res, sizeof(res), NULL);

    /* A's SETs reach 2, 3, 4 after 200 ms, their OKs would take 400 ms: A
     * gives up at 250 ms with two OKs, and its cleanup reaches them at
     * about 450 ms. */
    rc = redlock_acquire(a, res, strlen(res), TTL_MS, &la, &out, &e);
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "A: %s: %s", redlock_err_name(rc), e.msg);
    /* Until then a majority holds a key that no one holds the lock for:
     * B is refused (safe), and gets it once the cleanup has run. */
    rc = redlock_acquire(b, res, strlen(res), TTL_MS, &lb, &out, &e);
    cr_expect(eq(int, rc, REDLOCK_ECONFLICT), "B during A's late SETs: %s: %s",
              redlock_err_name(rc), e.msg);
    cr_expect(wait_key_gone(res, 3000), "A's late SETs left a key on %d masters",
              net_key_count(res, strlen(res)));
    rc = redlock_acquire(b, res, strlen(res), TTL_MS, &lb, &out, &e);
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
    unsigned long long t0;
    int ok = 0, tries = 0;

    setup();
    for (int m = 0; m < N; m++) {
        if (net_loss(m, LOSS, why, sizeof(why)) == 3)
            cr_skip_test("%s (loss needs tc netem: a relay cannot drop packets)", why);
    }
    net_config(&cfg, NULL, NODE_TIMEOUT);
    cfg.retry_count = 1;
    c = net_client(&cfg);
    /* TCP retransmits what netem drops (200 ms at the soonest): slower
     * answers, well inside a 1 s node timeout. Bounded at 25 s in all. */
    t0 = tc_now_us();
    for (; tries < TRIES && ms_since(t0) < 25000; tries++) {
        redlock_lock *l = NULL;
        int rc;

        tc_resource(res, sizeof(res), NULL);
        rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &e);
        if (rc != 0) {
            cr_log_warn("acquire %d under %d%% loss: %s: %s", tries, LOSS, redlock_err_name(rc), e.msg);
            continue;
        }
        ok++;
        cr_expect(eq(int, redlock_release(c, l, NULL, &e), 0), "%s", e.msg);
        redlock_lock_free(l);
    }
    cr_expect(ge(int, ok, TRIES - 1), "%d of %d acquires under %d%% loss", ok, tries, LOSS);
}
