/* test-faults-process-forget.c - masters that forget scripts, keys or
 * connections while clients fight over one lock; every operation recorded
 * and checked.
 *
 * A run (helpers/contend.h) is four clients contending on one resource.
 * SCRIPT FLUSH on every master must be invisible (the EVAL fallback takes
 * over); CLIENT KILL drops our connections, and the clients reconnect and
 * vote again; FLUSHALL on one master makes it forget grants, and its lost
 * memory marker keeps it out of quorums for the longest ttl in use: no
 * second holder, for clients kept or one-shot ones. Run alone (faults);
 * .fini heals the cluster.
 */
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

#define SOME_GRANTS 5
#define AWAIT_MS 20000

/* EVAL calls on all masters together. */
static long long eval_calls(void)
{
    long long n = 0;

    for (int m = 0; m < tc_n(); m++) {
        long long v = tc_info_num(m, "commandstats", "cmdstat_eval");

        n += v > 0 ? v : 0;
    }
    return n;
}

/* Every master forgets our scripts mid-run: releases and extends fall back
 * from EVALSHA to EVAL and keep working (none fails), and nothing else
 * changes. */
Test(process, script_flush_on_all_masters_is_transparent)
{
    tc_contend *r = tc_contend_start(1, TC_CONTEND_WORKERS);
    long long eval_before = eval_calls(), eval_after;
    uint64_t t0;

    tc_contend_await_grants(r, 0, 0, SOME_GRANTS, AWAIT_MS);
    r->rel_fail_after = tc_now_us();
    for (int m = 0; m < tc_n(); m++) {
        redisReply *rep;

        t0 = tc_now_us();
        rep = tc_cmd(m, "SCRIPT FLUSH");
        cr_assert(rep && rep->type == REDIS_REPLY_STATUS, "SCRIPT FLUSH on master %d failed", m);
        freeReplyObject(rep);
        tc_contend_fault(r, "script-flush", m, 0, t0);
    }
    t0 = tc_now_us();
    int after = tc_contend_await_grants(r, t0, 0, SOME_GRANTS, AWAIT_MS);

    tc_contend_expect_clean(r, NULL);
    eval_after = eval_calls();
    cr_expect(gt(i64, eval_after, eval_before),
              "no EVAL fallback was used (eval calls %lld -> %lld)", eval_before, eval_after);
    cr_expect(eq(int, r->late_failures, 0),
              "%d releases/extends failed after SCRIPT FLUSH; first: %s", r->late_failures,
              r->late_what);
    cr_expect(ge(int, after, SOME_GRANTS), "only %d grants after SCRIPT FLUSH", after);
    tc_contend_free(r);
}

/* FLUSHALL on master @m, recorded as a fault that lost its keys; returns
 * when it is done. */
static void flush_master(tc_contend *r, int m)
{
    uint64_t t0 = tc_now_us();
    redisReply *rep = tc_cmd(m, "FLUSHALL");

    cr_assert(rep && rep->type == REDIS_REPLY_STATUS, "FLUSHALL on master %d failed", m);
    freeReplyObject(rep);
    tc_contend_fault(r, "flushall", m, 1, t0);
}

/* One master loses every key mid-run, its memory marker with them: the
 * first acquire to reach it afterwards makes a new marker, and it votes
 * for nobody until the longest ttl in use has passed on its clock. A
 * holder it counted keeps the majority it had among the others, so no
 * second holder can form through it: zero violations, nothing excused
 * (before the marker, a holder granted by exactly three that included the
 * flushed master could be joined by a second one, and the checker had to
 * be told which keys were lost). */
Test(process, flushall_on_one_master_no_second_holder)
{
    tc_contend *r = tc_contend_start(1, TC_CONTEND_WORKERS);

    tc_contend_await_grants(r, 0, 0, SOME_GRANTS, AWAIT_MS);
    flush_master(r, 1);
    int after = tc_contend_await_grants(r, tc_now_us(), 0, SOME_GRANTS, AWAIT_MS);

    tc_contend_expect_clean(r, NULL);
    cr_expect(ge(int, after, SOME_GRANTS), "only %d grants after FLUSHALL", after);
    tc_contend_free(r);
}

/* The same with one-shot clients in processes of their own, as every
 * redlock-cli call is (none met the masters before the flush), and each
 * master flushed in turn, each time once a grant has counted it and the
 * master flushed before it (back after its window): every flush hits a
 * master that is part of live locks, one at a time. Zero violations. */
Test(process, one_shot_clients_flushall_on_each_master_in_turn_no_second_holder)
{
    enum { FLUSHES = 6 };
    tc_contend *r = tc_contend_start_kind(1, TC_CONTEND_WORKERS, TC_CONTEND_ONE_SHOT);
    uint64_t last = 0;

    tc_contend_await_grants(r, 0, 0, SOME_GRANTS, AWAIT_MS);
    for (int k = 0; k < FLUSHES; k++) {
        int m = k % tc_n(), prev = (k + tc_n() - 1) % tc_n();
        uint32_t mask = 1u << m | (k ? 1u << prev : 0);

        cr_assert(ge(int, tc_contend_await_grants(r, last, mask, 1, AWAIT_MS), 1),
                  "flush %d: no grant counted masters 0x%x in %d ms", k, mask, AWAIT_MS);
        flush_master(r, m);
        last = tc_now_us();
    }
    int after = tc_contend_await_grants(r, last, 0, SOME_GRANTS, AWAIT_MS);

    tc_contend_expect_clean(r, NULL);
    cr_expect(ge(int, after, SOME_GRANTS), "only %d grants after the last FLUSHALL", after);
    tc_contend_free(r);
}

/* The workers' normal (not pub/sub) connections to master 1: what CLIENT
 * KILL TYPE normal drops besides the test's own. The test's connections
 * are told apart by their last command (CLIENT ..., which the library
 * never sends): the one asking, and the one an earlier call closed, which
 * a loaded master may not have read the end of yet. */
static long long normal_clients_of_master_1(void)
{
    redisReply *rep = tc_cmd(1, "CLIENT LIST TYPE normal");
    long long n = 0;

    if (rep && rep->type == REDIS_REPLY_STRING)
        for (const char *p = rep->str, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
            const char *cmd = strstr(p, " cmd=client");

            n += !cmd || cmd > nl;
        }
    freeReplyObject(rep);
    return n;
}

/* A master drops every client connection (ours included) three times: what
 * was in flight there fails as "down", the clients reconnect on their backoff
 * and the master answers votes again. (It rarely counts in a grant soon
 * after: a release lost with the connection leaves that holder's key there
 * until its ttl, so it answers "held" meanwhile, as docs/safety.md
 * ("Failure modes, master by master") says a minority may.) */
Test(process, client_kill_drops_our_connections_and_they_come_back)
{
    tc_contend *r = tc_contend_start(1, TC_CONTEND_WORKERS);
    uint64_t t0, last = 0;
    long long killed = 0;

    tc_contend_await_grants(r, 0, 0, SOME_GRANTS, AWAIT_MS);
    for (int k = 0; k < 3; k++) {
        redisReply *rep;

        /* Every worker connected to master 1 again, so that each kill
         * drops all four. */
        cr_assert(TC_AWAIT(normal_clients_of_master_1() >= TC_CONTEND_WORKERS, AWAIT_MS),
                  "the workers did not reconnect to master 1 (%lld connections)",
                  normal_clients_of_master_1());
        t0 = tc_now_us();
        rep = tc_cmd(1, "CLIENT KILL TYPE normal");
        cr_assert(rep && rep->type == REDIS_REPLY_INTEGER, "CLIENT KILL failed");
        killed += rep->integer;
        freeReplyObject(rep);
        tc_contend_fault(r, "client-kill", 1, 0, t0);
        last = tc_now_us();
    }
    /* The clients come back: master 1 answers a vote after the last kill. */
    TC_AWAIT(tc_contend_last_answer(r, 1) > last, AWAIT_MS);
    int after = tc_contend_await_grants(r, last, 0, SOME_GRANTS, AWAIT_MS);

    tc_contend_expect_clean(r, NULL);
    cr_expect(ge(i64, killed, 3 * TC_CONTEND_WORKERS), "CLIENT KILL dropped only %lld connections",
              killed);
    cr_expect(gt(u64, tc_contend_last_answer(r, 1), last),
              "master 1 answered no vote after the last "
              "CLIENT KILL: the clients did not reconnect");
    cr_expect(ge(int, after, SOME_GRANTS), "only %d grants after the last CLIENT KILL", after);
    tc_contend_free(r);
}
