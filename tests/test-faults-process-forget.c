/* test-faults-process-forget.c - masters that forget scripts, keys or
 * connections while clients fight over one lock; every operation recorded
 * and checked.
 *
 * A run (helpers/contend.h) is four clients contending on one resource.
 * SCRIPT FLUSH on every master must be invisible (the EVAL fallback takes
 * over); CLIENT KILL drops our connections, and the clients reconnect and
 * vote again; FLUSHALL on one master breaks NOTES.md's assumption A2 for
 * the holders it counted, and tests/history/check.py is told which keys
 * were lost so that only overlaps those losses explain are excused. Run
 * alone (faults); .fini heals the cluster.
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
        long long v = core_info_num(m, "commandstats", "cmdstat_eval");

        n += v > 0 ? v : 0;
    }
    return n;
}

/* Every master forgets our scripts mid-run: releases and extends fall back
 * from EVALSHA to EVAL and keep working (none fails), and nothing else
 * changes. */
Test(process, script_flush_on_all_masters_is_transparent)
{
    run *r = run_start(1, CONTEND_WORKERS);
    long long eval_before = eval_calls(), eval_after;
    uint64_t t0;

    run_await_grants(r, 0, 0, SOME_GRANTS, AWAIT_MS);
    r->rel_fail_after = hist_now_us();
    for (int m = 0; m < tc_n(); m++) {
        redisReply *rep;

        t0 = hist_now_us();
        rep = tc_cmd(m, "SCRIPT FLUSH");
        cr_assert(rep && rep->type == REDIS_REPLY_STATUS, "SCRIPT FLUSH on master %d failed", m);
        freeReplyObject(rep);
        run_fault(r, "script-flush", m, 0, t0);
    }
    t0 = hist_now_us();
    int after = run_await_grants(r, t0, 0, SOME_GRANTS, AWAIT_MS);

    run_expect_clean(r, NULL);
    eval_after = eval_calls();
    cr_expect(gt(i64, eval_after, eval_before),
              "no EVAL fallback was used (eval calls %lld -> %lld)", eval_before, eval_after);
    cr_expect(eq(int, r->late_failures, 0),
              "%d releases/extends failed after SCRIPT FLUSH; first: %s", r->late_failures,
              r->late_what);
    cr_expect(ge(int, after, SOME_GRANTS), "only %d grants after SCRIPT FLUSH", after);
    run_free(r);
}

/* One master loses every key mid-run. Four of five masters still hold each
 * holder's key when the holder was granted by four or five (the usual
 * case): no second holder can form. A holder granted by exactly three that
 * include the flushed one is left with two, and a second holder becomes
 * possible: that breaks A2, and the checker is told so (explain mode);
 * any other overlap still fails the test. */
Test(process, flushall_on_one_master_no_unexplained_second_holder)
{
    static const char *const explain[] = { "--explain-lost-keys", NULL };
    static char out[CONTEND_OUT_SIZE];
    run *r = run_start(1, CONTEND_WORKERS);
    uint64_t t0, t1;
    redisReply *rep;
    int rc;

    run_await_grants(r, 0, 0, SOME_GRANTS, AWAIT_MS);
    t0 = hist_now_us();
    rep = tc_cmd(1, "FLUSHALL");
    cr_assert(rep && rep->type == REDIS_REPLY_STATUS, "FLUSHALL failed");
    freeReplyObject(rep);
    run_fault(r, "flushall", 1, 1, t0);
    t1 = hist_now_us();
    int after = run_await_grants(r, t1, 0, SOME_GRANTS, AWAIT_MS);

    rc = run_finish(r, explain, out, sizeof(out));
    cr_assert(eq(int, rc, 0), "violations not explained by the lost keys (history kept in %s):\n%s",
              run_keep(r), out);
    cr_log_info("%s", out);
    cr_expect(ge(int, after, SOME_GRANTS), "only %d grants after FLUSHALL", after);
    run_free(r);
}

/* Normal (not pub/sub) connections master 1 has, besides the asking one:
 * what CLIENT KILL TYPE normal drops. */
static long long normal_clients_of_master_1(void)
{
    redisReply *rep = tc_cmd(1, "CLIENT LIST TYPE normal");
    long long n = -1;

    if (rep && rep->type == REDIS_REPLY_STRING)
        for (const char *p = rep->str; (p = strchr(p, '\n')) != NULL; p++)
            n++;
    freeReplyObject(rep);
    return n;
}

/* A master drops every client connection (ours included) three times: what
 * was in flight there fails as "down", the clients reconnect on their
 * backoff and the master answers votes again. (It rarely counts in a grant
 * soon after: a release lost with the connection leaves that holder's key
 * there until its ttl, so it answers "held" meanwhile, as NOTES.md says a
 * minority may.) */
Test(process, client_kill_drops_our_connections_and_they_come_back)
{
    run *r = run_start(1, CONTEND_WORKERS);
    uint64_t t0, last = 0;
    long long killed = 0;

    run_await_grants(r, 0, 0, SOME_GRANTS, AWAIT_MS);
    for (int k = 0; k < 3; k++) {
        redisReply *rep;

        /* Every worker connected to master 1 again, so that each kill
         * drops all four. */
        cr_assert(TC_AWAIT(normal_clients_of_master_1() >= CONTEND_WORKERS, AWAIT_MS),
                  "the workers did not reconnect to master 1 (%lld connections)",
                  normal_clients_of_master_1());
        t0 = hist_now_us();
        rep = tc_cmd(1, "CLIENT KILL TYPE normal");
        cr_assert(rep && rep->type == REDIS_REPLY_INTEGER, "CLIENT KILL failed");
        killed += rep->integer;
        freeReplyObject(rep);
        run_fault(r, "client-kill", 1, 0, t0);
        last = hist_now_us();
    }
    /* The clients come back: master 1 answers a vote after the last kill. */
    TC_AWAIT(run_last_answer(r, 1) > last, AWAIT_MS);
    int after = run_await_grants(r, last, 0, SOME_GRANTS, AWAIT_MS);

    run_expect_clean(r, NULL);
    cr_expect(ge(i64, killed, 3 * CONTEND_WORKERS), "CLIENT KILL dropped only %lld connections",
              killed);
    cr_expect(gt(u64, run_last_answer(r, 1), last), "master 1 answered no vote after the last "
              "CLIENT KILL: the clients did not reconnect");
    cr_expect(ge(int, after, SOME_GRANTS), "only %d grants after the last CLIENT KILL", after);
    run_free(r);
}
