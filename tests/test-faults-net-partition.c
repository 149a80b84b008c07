/* test-faults-net-partition.c - links cut between the client and masters.
 *
 * Each test puts five masters in network namespaces of its own
 * (tests/netns.sh) and cuts links: a cut link drops packets, so the client
 * sees silence (a black hole), never an error; a link cut one way loses
 * either the requests or the replies. Safety is checked through a side
 * door (each master's namespace loopback), which no fault on a link
 * reaches; a second client on the far side of a partition goes through the
 * same side door. Where namespaces cannot be made, every test skips with
 * one line.
 */
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"
#include "net.h"

#define N 5
#define TTL_MS 10000u
#define MARGIN_MS (TTL_MS / 100 + 2) /* drift margin at the default factor */

TestSuite(faults_net, .init = tc_net_init, .fini = tc_net_down, .timeout = 45);

/* A client through the links under test, with @node_timeout_ms. */
static redlock_client *link_client(unsigned node_timeout_ms)
{
    redlock_config cfg;

    tc_net_config(&cfg, NULL, node_timeout_ms);
    return tc_net_client(&cfg);
}

Test(faults_net, cut_from_two_of_five_still_acquires_at_the_early_quorum)
{
    enum { NODE_TIMEOUT = 2000 };
    redlock_client *c = link_client(NODE_TIMEOUT);
    TC_TRY(t);

    tc_net_cut(3);
    tc_net_cut(4);
    for (int k = 0; k < 5; k++) {
        uint64_t t0;
        int rc;

        rc = tc_try_acquire(c, TTL_MS, &t);
        cr_assert(eq(int, rc, 0), "acquire %d: %s: %s", k, redlock_err_name(rc), t.e.msg);
        /* Liveness, and at the third OK: a black hole costs nothing while a
         * quorum answers. */
        cr_expect(lt(u64, t.took_ms, NODE_TIMEOUT / 10), "acquire %d took %llu ms", k,
                  (unsigned long long)t.took_ms);
        cr_expect(eq(u32, redlock_outcome_ok(t.out), 3));
        cr_expect(eq(int, redlock_outcome_vote(t.out, 3)->kind, REDLOCK_VOTE_PENDING));
        cr_expect(eq(int, redlock_outcome_vote(t.out, 4)->kind, REDLOCK_VOTE_PENDING));
        cr_expect(gt(i64, redlock_lock_validity_ms(t.l),
                     (int64_t)(TTL_MS - MARGIN_MS - NODE_TIMEOUT / 10)));
        /* Both directions are cut: the SET never reached masters 3 and 4. */
        cr_expect(eq(int, tc_net_get(3, t.res, strlen(t.res), NULL, 0), 0));
        cr_expect(eq(int, tc_net_get(4, t.res, strlen(t.res), NULL, 0), 0));

        t0 = tc_now_us();
        rc = redlock_release(c, t.l, t.out, &t.e);
        cr_expect(eq(int, rc, 0), "release %d: %s: %s", k, redlock_err_name(rc), t.e.msg);
        cr_expect(lt(u64, tc_ms_since(t0), NODE_TIMEOUT / 10), "release %d took %llu ms", k,
                  (unsigned long long)tc_ms_since(t0));
        cr_expect(eq(int, tc_net_key_count(t.res, strlen(t.res)), 0), "key left behind");
        redlock_lock_free(t.l);
    }
}

Test(faults_net, cut_from_three_of_five_is_enoquorum_after_one_node_timeout)
{
    enum { NODE_TIMEOUT = 300 };
    redlock_client *c = link_client(NODE_TIMEOUT);
    TC_TRY(t);

    tc_net_cut(0);
    tc_net_cut(2);
    tc_net_cut(4);
    for (int k = 0; k < 3; k++) {
        int rc = tc_try_acquire(c, TTL_MS, &t);

        cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "acquire %d: %s: %s", k, redlock_err_name(rc),
                  t.e.msg);
        cr_expect(eq(ptr, t.l, NULL));
        /* One node timeout (libevent's coarse clock may fire a jiffy early),
         * not more: the reachable masters' cleanup is waited for, the cut
         * ones' is not. */
        cr_expect(ge(u64, t.took_ms, NODE_TIMEOUT - 10), "took %llu ms",
                  (unsigned long long)t.took_ms);
        cr_expect(lt(u64, t.took_ms, NODE_TIMEOUT + 700), "took %llu ms",
                  (unsigned long long)t.took_ms);
        for (int m = 0; m < N; m += 2)
            cr_expect(eq(int, redlock_outcome_vote(t.out, m)->kind, REDLOCK_VOTE_TIMEOUT),
                      "cut master %d voted %s", m,
                      redlock_vote_kind_name(redlock_outcome_vote(t.out, m)->kind));
        cr_expect(eq(int, redlock_outcome_vote(t.out, 1)->kind, REDLOCK_VOTE_OK));
        cr_expect(eq(int, redlock_outcome_vote(t.out, 3)->kind, REDLOCK_VOTE_OK));
        /* The SETs that did land were released before the call returned. */
        cr_expect(eq(int, tc_net_get(1, t.res, strlen(t.res), NULL, 0), 0), "key left on master 1");
        cr_expect(eq(int, tc_net_get(3, t.res, strlen(t.res), NULL, 0), 0), "key left on master 3");
    }
}

Test(faults_net, replies_lost_from_two_the_holder_stays_exclusive_and_its_release_runs)
{
    enum { NODE_TIMEOUT = 500 };
    redlock_client *a = link_client(NODE_TIMEOUT), *b = tc_net_side_client(NODE_TIMEOUT);
    redlock_lock *la = NULL, *lb = NULL;
    TC_OUTCOME(out);
    TC_STATUS(st);
    redlock_error e;
    char res[128];
    int rc;

    tc_net_cut_out(0);
    tc_net_cut_out(1);
    tc_resource(res, sizeof(res), NULL);

    rc = redlock_acquire(a, res, strlen(res), TTL_MS, &la, out, &e);
    cr_assert(eq(int, rc, 0), "A: %s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(u32, redlock_outcome_ok(out), 3));
    cr_expect(eq(int, redlock_outcome_vote(out, 0)->kind, REDLOCK_VOTE_PENDING));
    cr_expect(eq(int, redlock_outcome_vote(out, 1)->kind, REDLOCK_VOTE_PENDING));
    /* The requests got through: masters 0 and 1 hold A's key though A never
     * heard them say so (sent with the other three: await them). */
    TC_AWAIT(tc_net_token_count(res, strlen(res), redlock_lock_token(la)) == N, 1000);
    cr_expect(eq(int, tc_net_token_count(res, strlen(res), redlock_lock_token(la)), N));

    /* Safety: B, whose links are fine, gets no majority while A holds. */
    rc = redlock_acquire(b, res, strlen(res), TTL_MS, &lb, out, &e);
    cr_expect(eq(int, rc, REDLOCK_ECONFLICT), "B: %s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(ptr, lb, NULL));
    cr_expect(eq(u32, redlock_outcome_ok(out), 0));
    rc = redlock_status_get(b, res, strlen(res), st, &e);
    cr_expect(eq(int, rc, 0), "status: %s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(str, (char *)redlock_status_majority_token(st), (char *)redlock_lock_token(la)));
    cr_expect(eq(u32, redlock_status_held(st), N));

    /* A's release returns at the third answer; the two it cannot hear from
     * are sent all the same, and run: at once if TCP still sends (within a
     * retransmission timeout of the unanswered SETs, whose ACKs the cut
     * drops too), else when the link heals, in order behind the SET. */
    rc = redlock_release(a, la, out, &e);
    cr_expect(eq(int, rc, 0), "A release: %s: %s", redlock_err_name(rc), e.msg);
    if (!tc_net_await_key_gone(res, strlen(res), 500)) {
        cr_log_info("A's release waits in its socket until the heal");
        tc_net_heal(-1);
    }
    cr_expect(tc_net_await_key_gone(res, strlen(res), 15000),
              "A's key still on %d masters after its release", tc_net_key_count(res, strlen(res)));

    rc = redlock_acquire(b, res, strlen(res), TTL_MS, &lb, out, &e);
    cr_expect(eq(int, rc, 0), "B after A's release: %s: %s", redlock_err_name(rc), e.msg);
    if (lb) {
        cr_expect(eq(int, redlock_release(b, lb, NULL, &e), 0), "%s", e.msg);
        redlock_lock_free(lb);
    }
    redlock_lock_free(la);
}

/* EVALSHA and EVAL calls so far on each of masters 0..2. */
static void script_calls(long long calls[3])
{
    for (int m = 0; m < 3; m++)
        calls[m] = tc_net_cmdstat(m, "evalsha") + tc_net_cmdstat(m, "eval");
}

/* 1 once each of masters 0..2 ran a script since @before. */
static int scripts_ran_since(const long long before[3])
{
    long long now[3];

    script_calls(now);
    return now[0] > before[0] && now[1] > before[1] && now[2] > before[2];
}

Test(faults_net, replies_lost_from_three_is_enoquorum_cleanup_runs_and_spares_the_next_holder)
{
    enum { NODE_TIMEOUT = 300 };
    redlock_client *a = link_client(NODE_TIMEOUT), *b = tc_net_side_client(NODE_TIMEOUT);
    redlock_lock *la = NULL, *lb = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    long long before[3], after[3];
    char res[128];
    int rc;

    for (int m = 0; m < 3; m++)
        tc_net_cut_out(m);
    tc_resource(res, sizeof(res), NULL);

    /* The SETs land on all five; A hears two OKs and fails. Its cleanup
     * releases go out at once, land on all five and run. */
    rc = redlock_acquire(a, res, strlen(res), TTL_MS, &la, out, &e);
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "A: %s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(u32, redlock_outcome_ok(out), 2));
    cr_expect(tc_net_await_key_gone(res, strlen(res), 3000),
              "A's failed attempt left its key on %d masters", tc_net_key_count(res, strlen(res)));

    rc = redlock_acquire(b, res, strlen(res), TTL_MS, &lb, out, &e);
    cr_assert(eq(int, rc, 0), "B: %s: %s", redlock_err_name(rc), e.msg);
    /* B returned at quorum: its SETs ran on all five (its side doors are
     * untouched by the cuts) before the counts below. */
    tc_barrier(b);

    /* A tries again while B holds: it must not get the lock. By now TCP
     * has waited one retransmission timeout for ACKs that the cut drops
     * with the replies, and sends nothing new until one arrives: replies
     * lost is, for TCP, soon a cut both ways. A's SET and cleanup wait in
     * its socket, in order. */
    script_calls(before);
    rc = redlock_acquire(a, res, strlen(res), TTL_MS, &la, out, &e);
    cr_expect(ne(int, rc, 0), "A got the lock B holds");
    cr_expect(eq(ptr, la, NULL));
    cr_expect(eq(int, tc_net_token_count(res, strlen(res), redlock_lock_token(lb)), N));

    /* Healed, they arrive: NX refused, then a release whose token does not
     * match. B's keys stay. */
    tc_net_heal(-1);
    TC_AWAIT(scripts_ran_since(before), 15000);
    script_calls(after);
    for (int m = 0; m < 3; m++)
        cr_expect(gt(i64, after[m], before[m]), "A's cleanup never ran on master %d", m);
    cr_expect(eq(int, tc_net_token_count(res, strlen(res), redlock_lock_token(lb)), N),
              "B's key was removed by A's cleanup");

    rc = redlock_release(b, lb, out, &e);
    cr_expect(eq(int, rc, 0), "B release: %s: %s", redlock_err_name(rc), e.msg);
    redlock_lock_free(lb);
    redlock_lock_free(la);
}

/* 1 once masters 3 and 4 both ran a SET and a script. */
static int late_set_and_release_ran(void)
{
    for (int m = 3; m < N; m++)
        if (tc_net_cmdstat(m, "set") < 1 ||
            tc_net_cmdstat(m, "evalsha") + tc_net_cmdstat(m, "eval") < 1)
            return 0;
    return 1;
}

Test(faults_net, requests_lost_then_healed_arrive_in_order_and_leave_nothing)
{
    enum { NODE_TIMEOUT = 500 };
    redlock_client *c = link_client(NODE_TIMEOUT);
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    char res[128];
    int rc;

    tc_net_cut_in(3);
    tc_net_cut_in(4);
    tc_resource(res, sizeof(res), NULL);

    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    rc = redlock_release(c, l, out, &e);
    cr_expect(eq(int, rc, 0), "release: %s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(i64, tc_net_cmdstat(3, "set"), 0), "a SET got through a cut link");

    /* Healed, TCP retransmits: the late SET runs on 3 and 4, then the
     * release queued behind it on the same connection removes it. */
    tc_net_heal(-1);
    TC_AWAIT(late_set_and_release_ran(), 15000);
    for (int m = 3; m < N; m++)
        cr_expect(ge(i64, tc_net_cmdstat(m, "set"), 1), "SET never reached master %d", m);
    cr_expect(tc_net_await_key_gone(res, strlen(res), 2000),
              "the late SET left a key on %d masters", tc_net_key_count(res, strlen(res)));
    redlock_lock_free(l);
}

/* One acquire and release on a resource of its own: 0, or why not. */
static int acquire_once(redlock_client *c, redlock_error *e)
{
    redlock_lock *l = NULL;
    char res[128];
    int rc;

    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, e);
    if (rc == 0) {
        cr_expect(eq(int, redlock_release(c, l, NULL, e), 0), "%s", e->msg);
        redlock_lock_free(l);
    }
    return rc;
}

/* Keys on all masters together but for each master's memory marker
 * ("\0redlock:marker": no ttl, and there to stay), a master that does not
 * answer counting 1. The first key found goes to @first (bytes outside
 * printable ASCII as '?'), for the failure message. */
static int keys_anywhere(char *first, size_t size)
{
    static const char others[] = "local out = {} for _, k in ipairs(redis.call('keys', '*')) do "
                                 "if k ~= KEYS[1] then out[#out + 1] = k end end return out";
    static const char marker[] = "\0redlock:marker";
    int keys = 0;

    first[0] = '\0';
    for (int m = 0; m < N; m++) {
        redisReply *r = tc_net_cmd(m, "EVAL %s 1 %b", others, marker, sizeof(marker) - 1);

        if (!r || r->type != REDIS_REPLY_ARRAY) {
            keys++;
        } else {
            keys += (int)r->elements;
            if (r->elements && !first[0]) {
                size_t k = 0;

                for (; k + 1 < size && k < r->element[0]->len; k++) {
                    char ch = r->element[0]->str[k];

                    first[k] = ch >= ' ' && ch < 127 ? ch : '?';
                }
                first[k] = '\0';
            }
        }
        freeReplyObject(r);
    }
    return keys;
}

Test(faults_net, heal_restores_acquires_and_inflight_stays_bounded)
{
    enum { NODE_TIMEOUT = 100, MAX_INFLIGHT = 16, TRIES = 40 };
    redlock_config cfg;
    redlock_client *c;
    redlock_error e;
    int slow = 0, busy = 0, rc = -1, keys;
    uint64_t t0;

    tc_net_config(&cfg, NULL, NODE_TIMEOUT);
    cfg.max_inflight = MAX_INFLIGHT;
    /* Only our commands in flight, the same on each cut master: no probes
     * while the test runs (the memory probe runs every second even with
     * the clock monitor off, and would fill one master's queue a command
     * before another's). */
    cfg.clock_probe_ms = 3600000;
    cfg.clock_window_ms = 3600000;
    c = tc_net_client(&cfg);
    for (int m = 0; m < 3; m++)
        tc_net_cut(m);

    for (int k = 0; k < TRIES; k++) {
        TC_TRY(t);

        rc = tc_try_acquire(c, TTL_MS, &t);
        cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "try %d: %s: %s", k, redlock_err_name(rc),
                  t.e.msg);
        if (redlock_outcome_vote(t.out, 0)->err == REDLOCK_EBUSY) {
            busy++;
            /* Refused at once: no timeout to wait for. */
            cr_expect(lt(u64, t.took_ms, NODE_TIMEOUT / 2), "try %d (EBUSY) took %llu ms", k,
                      (unsigned long long)t.took_ms);
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
    tc_net_heal(-1);
    t0 = tc_now_us();
    TC_AWAIT((rc = acquire_once(c, &e)) == 0, 20000);
    cr_assert(eq(int, rc, 0), "no acquire 20 s after the heal: %s: %s", redlock_err_name(rc),
              e.msg);
    cr_log_info("acquires again %llu ms after the heal", (unsigned long long)tc_ms_since(t0));

    /* Every SET that was queued had its release queued right behind it:
     * once the backlog ran, no lock key is left anywhere (the masters'
     * memory markers stay, as they must). */
    char first[64];
    TC_AWAIT((keys = keys_anywhere(first, sizeof(first))) == 0, 10000);
    cr_expect(eq(int, keys, 0), "%d keys left after the backlog ran, e.g. \"%s\"", keys, first);
}
