/* test-noscript.c - release and extend after the masters forgot our scripts.
 *
 * The client sends EVALSHA with digests it computed itself; a master that
 * ran SCRIPT FLUSH (or restarted) answers NOSCRIPT, and the same command
 * must go again as EVAL with the body. The masters' command statistics show
 * that the fallback, not luck, did the work. SCRIPT FLUSH and those counts
 * are per master, shared by every test on the cluster: meson runs this
 * executable with one criterion worker.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

#define SHORT_TTL_MS 5000u
#define LONG_TTL_MS 60000u

TestSuite(noscript, .init = tc_fx_setup, .fini = tc_fx_fini, .timeout = 60);

static void flush_scripts_everywhere(void)
{
    for (int i = 0; i < tc_n(); i++) {
        redisReply *r = tc_cmd(i, "SCRIPT FLUSH");

        cr_assert(not(zero(ptr, r)), "master %d", i);
        cr_assert(eq(int, r->type, REDIS_REPLY_STATUS), "SCRIPT FLUSH on master %d: %s", i, r->str);
        freeReplyObject(r);
    }
}

Test(noscript, release_falls_back_to_eval_after_script_flush)
{
    char res[128];
    TC_OUTCOME(out);
    redlock_error e;
    redlock_lock *l;
    long long eval_before;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, SHORT_TTL_MS, NULL);
    tc_barrier(tc_fx.c);
    flush_scripts_everywhere();
    eval_before = tc_calls("eval");
    long long native_before = tc_calls("delifeq") + tc_calls("delex");

    rc = redlock_release(tc_fx.c, l, out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    for (int i = 0; i < tc_n(); i++)
        cr_expect(redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_OK ||
                      redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_PENDING,
                  "master %d voted %s (%s)", i,
                  redlock_vote_kind_name(redlock_outcome_vote(out, i)->kind),
                  redlock_outcome_vote(out, i)->detail);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "release deleted nothing");
    /* Every master needed the body: n EVALs for the release, n more for
     * the barrier's own status script, flushed too; but a master that
     * released without Lua (a server with a compare-and-delete, release.c)
     * needed no script for it. */
    long long native = tc_calls("delifeq") + tc_calls("delex") - native_before;
    cr_expect(ge(i64, tc_calls("eval") - eval_before, 2 * tc_n() - native),
              "EVAL calls %lld -> %lld", eval_before, tc_calls("eval"));
    redlock_lock_free(l);
}

Test(noscript, extend_falls_back_to_eval_after_script_flush)
{
    char res[128];
    TC_OUTCOME(out);
    redlock_error e;
    redlock_lock *l;
    long long eval_before;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, SHORT_TTL_MS, NULL);
    tc_barrier(tc_fx.c);
    flush_scripts_everywhere();
    eval_before = tc_calls("eval");

    rc = redlock_extend(tc_fx.c, l, LONG_TTL_MS, out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(gt(i64, redlock_lock_validity_ms(l), (int64_t)SHORT_TTL_MS));
    tc_barrier(tc_fx.c);
    for (int i = 0; i < tc_n(); i++) {
        long long pttl = 0;

        cr_expect(eq(int, tc_get(i, res, strlen(res), NULL, 0, &pttl), 1), "master %d", i);
        cr_expect(gt(i64, pttl, (long long)SHORT_TTL_MS), "master %d: PTTL %lld", i, pttl);
    }
    cr_expect(ge(i64, tc_calls("eval") - eval_before, 2 * tc_n())); /* extend + barrier */
    cr_expect(eq(int, redlock_release(tc_fx.c, l, NULL, NULL), 0));
    redlock_lock_free(l);
}

Test(noscript, wrong_token_after_script_flush_is_still_enotheld)
{
    char res[128], real[64];
    redlock_lock *l, *fake = NULL;
    redlock_error e;
    int rc;

    /* The EVAL fallback runs the same compare-token script: a stale token
     * deletes nothing even on that path. */
    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, SHORT_TTL_MS, NULL);
    snprintf(real, sizeof(real), "%s", redlock_lock_token(l));
    tc_barrier(tc_fx.c);
    flush_scripts_everywhere();
    cr_assert(eq(int, redlock_lock_new(res, strlen(res), "stale-token", &fake, NULL), 0));
    rc = redlock_release(tc_fx.c, fake, NULL, &e);
    cr_expect(eq(int, rc, REDLOCK_ENOTHELD), "%s: %s", redlock_err_name(rc), e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_count_token(res, strlen(res), real, SHORT_TTL_MS), tc_n()));
    cr_expect(eq(int, redlock_release(tc_fx.c, l, NULL, NULL), 0));
    redlock_lock_free(fake);
    redlock_lock_free(l);
}

Test(noscript, repeated_flushes_keep_working)
{
    char res[128];

    /* Each flush throws away what the previous fallback cached. */
    for (int round = 0; round < 5; round++) {
        redlock_lock *l;
        redlock_error e;

        tc_resource(res, sizeof(res), NULL);
        l = tc_must_acquire(tc_fx.c, res, SHORT_TTL_MS, NULL);
        flush_scripts_everywhere();
        cr_assert(eq(int, redlock_extend(tc_fx.c, l, LONG_TTL_MS, NULL, &e), 0), "round %d: %s",
                  round, e.msg);
        flush_scripts_everywhere();
        cr_assert(eq(int, redlock_release(tc_fx.c, l, NULL, &e), 0), "round %d: %s", round, e.msg);
        tc_barrier(tc_fx.c);
        cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "round %d", round);
        redlock_lock_free(l);
    }
}
