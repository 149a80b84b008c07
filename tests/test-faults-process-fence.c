/* test-faults-process-fence.c - fencing tokens across master restarts,
 * every operation recorded and checked.
 *
 * docs/waiting.md ("The claim, the argument, and what is not claimed") claims
 * that a grant whose attempt starts after another grant completed gets a
 * larger token "if masters keep their counters (AOF appendfsync always, or a
 * restart delayed past every ttl - the restart guard enforces the latter for
 * this client)". The counters are what must survive: a master restarted
 * without persistence comes back with its counter at 0 however long its votes
 * are kept out. The case is built so that the next grant after the restarts
 * comes from restarted masters alone: with AOF the token is larger, without
 * it goes back, and tests/history/check.py must see that. Suite process runs
 * on a plain cluster, suite process_aof on one started with --aof: meson runs
 * this file twice, with a filter each. Run alone (faults); .fini heals the
 * cluster.
 */
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "contend.h"
#include "core.h"

TestSuite(process, .fini = tc_heal, .timeout = 55);
TestSuite(process_aof, .fini = tc_heal, .timeout = 55);

#define FENCE_TTL_MS 500u

/* One fenced acquire and release of @r's resource on @c, both recorded.
 * Return: the acquire's result; *@fence gets the token when granted. */
static int fenced_grant(tc_contend *r, redlock_client *c, uint64_t *fence, redlock_error *e)
{
    redlock_resource res = { r->res, r->len };
    redlock_lock *l = NULL;
    TC_OUTCOME(o);
    uint64_t t0 = tc_now_us();
    int rc = redlock_acquire_set(c, &res, 1, FENCE_TTL_MS, REDLOCK_FENCE, &l, o, e);

    tc_hist_acquire(r->h, "c", r->res, r->len, FENCE_TTL_MS, t0, rc, l, o);
    if (rc != 0)
        return rc;
    *fence = redlock_lock_fence(l);
    t0 = tc_now_us();
    tc_hist_release(r->h, "c", t0, redlock_release(c, l, o, NULL), l, o);
    redlock_lock_free(l);
    return 0;
}

/* Tokens climb while 3 and 4 are down, so only 0,1,2 carry the latest;
 * 3, 4 and 2 restart; 0 and 1 die; once the guard lets 2,3,4 vote again,
 * the next grant comes from them alone. */
static void fence_scenario(int aof)
{
    static char out[TC_CONTEND_OUT_SIZE];
    tc_contend *r = tc_contend_start(1, 0);
    redlock_client *c = tc_contend_client(1);
    redlock_error e;
    uint64_t t0, t1 = 0, t2 = 0;
    int rc;

    cr_assert(eq(int, tc_aof(), aof), "this test needs a cluster %s --aof",
              aof ? "with" : "without");
    for (int k = 0; k < 30; k++) {
        if (k == 10) {
            tc_contend_inject(r, tc_kill, "sigkill", 3, 0);
            tc_contend_inject(r, tc_kill, "sigkill", 4, 0);
        }
        rc = fenced_grant(r, c, &t1, &e);
        cr_assert(eq(int, rc, 0), "fenced acquire %d: %s", k, e.msg);
    }
    for (int m = 2; m <= 4; m++) {
        t0 = tc_now_us();
        if (m == 2)
            tc_kill(2);
        tc_restart(m);
        tc_contend_fault(r, "restart", m, !aof, t0);
    }
    for (int m = 0; m <= 1; m++)
        tc_contend_inject(r, tc_kill, "sigkill", m, 0);

    /* the next grant, from 2,3,4 once the guard lets them vote */
    TC_AWAIT(fenced_grant(r, c, &t2, &e) == 0, 10000);
    redlock_client_free(c);
    cr_assert(ne(u64, t2, 0), "no fenced grant from masters 2,3,4 within 10 s: %s", e.msg);
    cr_log_info("fence %s: last token while 3,4 were down %llu; first token from 2,3,4 after "
                "their restarts %llu",
                aof ? "with AOF" : "without persistence", (unsigned long long)t1,
                (unsigned long long)t2);
    rc = tc_contend_finish(r, NULL, out, sizeof(out));
    if (aof) {
        cr_expect(gt(u64, t2, t1), "the token went back from %llu to %llu with AOF",
                  (unsigned long long)t1, (unsigned long long)t2);
        cr_expect(eq(int, rc, 0), "the checker found violations (history kept in %s):\n%s",
                  tc_contend_keep(r), out);
    } else {
        /* docs/waiting.md, "Fencing tokens": the claim needs masters that
         * keep their counters. A restart without persistence starts them
         * again from 0 and no guard window brings them back: the order
         * breaks, and the checker must see it. */
        cr_expect(le(u64, t2, t1), "without persistence the token went back (%llu after %llu)",
                  (unsigned long long)t2, (unsigned long long)t1);
        cr_expect(ne(int, rc, 0), "the checker reports the fence going backwards");
        cr_expect(strstr(out, "fence") != NULL, "as a fence violation:\n%s", out);
    }
    tc_contend_free(r);
}

Test(process_aof, fence_increases_across_restarts_with_aof)
{
    if (!tc_aof())
        cr_skip_test("needs a cluster with --aof (meson runs it as faults-process-fence-aof)");
    fence_scenario(1);
}

Test(process, fence_goes_back_after_restarts_without_persistence)
{
    if (tc_aof())
        cr_skip_test("needs a cluster without --aof");
    fence_scenario(0);
}
