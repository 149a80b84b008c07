/* test-acquire.c - a lock taken on healthy masters, as the masters see it.
 *
 * The happy path of redlock_acquire() checked from both ends: what the call
 * returns (token, validity, the outcome's votes) and what the masters hold
 * afterwards, read straight from each master with GET and PTTL. An acquire
 * returns at the quorum-th OK, so claims about every master come after a
 * barrier (tc_barrier) that proves the remaining SETs have run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

#define TTL_MS 10000u
/* ceil(ttl * 0.01) + 2 ms: the least margin the default drift factor takes. */
#define MARGIN_MS (TTL_MS / 100 + 2)

TestSuite(acquire, .init = tc_fx_setup, .fini = tc_fx_fini, .timeout = 60);

Test(acquire, token_is_32_hex_chars_and_differs_between_acquisitions)
{
    char res[128];
    redlock_lock *a, *b;
    char first[64];

    tc_resource(res, sizeof(res), NULL);
    a = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
    cr_assert(tc_is_hex32(redlock_lock_token(a)), "token \"%s\"", redlock_lock_token(a));
    snprintf(first, sizeof(first), "%s", redlock_lock_token(a));
    tc_must_release(tc_fx.c, a);

    /* Same resource again: a fresh token, not a reused one. */
    b = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
    cr_assert(tc_is_hex32(redlock_lock_token(b)), "token \"%s\"", redlock_lock_token(b));
    cr_assert(ne(str, (char *)redlock_lock_token(b), first));
    tc_must_release(tc_fx.c, b);
}

Test(acquire, tokens_of_many_acquisitions_are_all_distinct)
{
    enum { N = 32 };
    static char tokens[N][64];
    char res[128];

    for (int i = 0; i < N; i++) {
        redlock_lock *l;

        tc_resource(res, sizeof(res), NULL);
        l = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
        snprintf(tokens[i], sizeof(tokens[i]), "%s", redlock_lock_token(l));
        cr_assert(tc_is_hex32(tokens[i]), "token \"%s\"", tokens[i]);
        tc_must_release(tc_fx.c, l);
        for (int j = 0; j < i; j++)
            cr_assert(ne(str, tokens[i], tokens[j]), "acquisitions %d and %d share a token", j, i);
    }
}

Test(acquire, validity_is_positive_and_at_most_ttl_minus_margin)
{
    char res[128];
    redlock_outcome out;
    redlock_lock *l;
    int64_t v;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, &out);
    v = redlock_lock_validity_ms(l);
    cr_expect(gt(i64, v, 0));
    cr_expect(le(i64, v, (int64_t)(TTL_MS - MARGIN_MS)));
    /* The outcome's validity was computed at the decision: no more than the
     * ttl less the margin and the time the attempt took. */
    cr_expect(gt(i64, out.validity_ms, 0));
    cr_expect(le(i64, out.validity_ms,
                 (int64_t)(TTL_MS - MARGIN_MS) - (int64_t)(out.elapsed_us / 1000)),
              "validity %lld ms, elapsed %llu us", (long long)out.validity_ms,
              (unsigned long long)out.elapsed_us);
    /* Validity only runs down from there. */
    cr_expect(le(i64, v, out.validity_ms));
    cr_expect(eq(u32, redlock_lock_ttl_ms(l), TTL_MS));
    tc_must_release(tc_fx.c, l);
}

Test(acquire, key_holds_the_token_with_pttl_at_most_ttl_on_a_quorum)
{
    char res[128];
    redlock_lock *l;
    int held;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
    /* Straight after the call: the quorum that said OK holds it now. */
    held = tc_count_token(res, strlen(res), redlock_lock_token(l), TTL_MS);
    cr_expect(ge(int, held, (int)redlock_client_quorum(tc_fx.c)),
              "token on %d masters right after acquire", held);
    /* Once the SETs the early return did not wait for have run: all five. */
    tc_barrier(tc_fx.c);
    held = tc_count_token(res, strlen(res), redlock_lock_token(l), TTL_MS);
    cr_expect(eq(int, held, tc_n()), "token on %d of %d masters", held, tc_n());
    tc_must_release(tc_fx.c, l);
}

Test(acquire, short_ttl_is_the_pttl_the_masters_get)
{
    char res[128];
    redlock_lock *l;

    /* A ttl unlike the other tests' shows the masters got this one. */
    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, 1500, NULL);
    tc_barrier(tc_fx.c);
    for (int i = 0; i < tc_n(); i++) {
        long long pttl = 0;

        cr_assert(eq(int, tc_get(i, res, strlen(res), NULL, 0, &pttl), 1), "master %d", i);
        cr_expect(gt(i64, pttl, 0), "master %d", i);
        cr_expect(le(i64, pttl, 1500), "master %d: PTTL %lld", i, pttl);
    }
    tc_must_release(tc_fx.c, l);
}

Test(acquire, outcome_fills_votes_n_ok_and_quorum)
{
    char res[128];
    redlock_outcome out;
    redlock_lock *l;
    uint32_t ok = 0;

    memset(&out, 0xa5, sizeof(out)); /* nothing left from before the call */
    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, &out);
    cr_expect(eq(int, out.status, 0));
    cr_expect(eq(u32, out.n_masters, (uint32_t)tc_n()));
    cr_expect(eq(u32, out.quorum, (uint32_t)tc_n() / 2 + 1));
    cr_expect(eq(u32, out.quorum, (uint32_t)redlock_client_quorum(tc_fx.c)));
    cr_expect(eq(u32, out.attempts, 1));
    cr_expect(gt(u64, out.elapsed_us, 0));
    for (int i = 0; i < tc_n(); i++) {
        const redlock_vote *v = &out.votes[i];

        /* Decided at the quorum-th OK: the rest may still be on their way,
         * but nothing failed on healthy masters. */
        /* (criterion 2.4.1's any() misreports a true first operand: plain C) */
        cr_expect(v->kind == REDLOCK_VOTE_OK || v->kind == REDLOCK_VOTE_PENDING,
                  "master %d voted %s (%s)", i, redlock_vote_kind_name(v->kind), v->detail);
        if (v->kind == REDLOCK_VOTE_OK) {
            ok++;
            cr_expect(eq(int, v->err, 0));
            cr_expect(le(u64, (uint64_t)v->latency_us, out.elapsed_us + 1000),
                      "master %d latency %u us > elapsed %llu us", i, v->latency_us,
                      (unsigned long long)out.elapsed_us);
        }
    }
    cr_expect(eq(u32, out.n_ok, ok));
    cr_expect(ge(u32, out.n_ok, out.quorum));
    tc_must_release(tc_fx.c, l);
}

Test(acquire, lock_reports_its_resource_byte_for_byte)
{
    char res[128];
    redlock_lock *l;
    const void *p;
    size_t len = 0;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
    p = redlock_lock_resource(l, &len);
    cr_assert(eq(sz, len, strlen(res)));
    cr_assert(zero(int, memcmp(p, res, len)));
    tc_must_release(tc_fx.c, l);
}

Test(acquire, key_prefix_is_prepended_on_the_masters)
{
    redlock_config cfg;
    redlock_client *pc;
    redlock_lock *l = NULL;
    redlock_error e;
    char res[128], key[160];
    int rc;

    tc_config(&cfg);
    cfg.key_prefix = "rl-test-prefix:";
    pc = tc_client(&cfg, -1);
    tc_resource(res, sizeof(res), NULL);
    snprintf(key, sizeof(key), "rl-test-prefix:%s", res);

    rc = redlock_acquire(pc, res, strlen(res), TTL_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s", e.msg);
    tc_barrier(pc);
    cr_expect(eq(int, tc_count_token(key, strlen(key), redlock_lock_token(l), TTL_MS), tc_n()));
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "unprefixed key exists");

    /* The lock's resource is the caller's name, without the prefix. */
    size_t len = 0;
    const void *p = redlock_lock_resource(l, &len);
    cr_expect(eq(sz, len, strlen(res)));
    cr_expect(zero(int, memcmp(p, res, len)));

    rc = redlock_release(pc, l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s", e.msg);
    tc_barrier(pc);
    cr_expect(eq(int, tc_key_count(key, strlen(key)), 0));
    redlock_lock_free(l);
    redlock_client_free(pc);
}

Test(acquire, out_params_untouched_on_failure)
{
    char res[128];
    redlock_lock *sentinel = (redlock_lock *)&res; /* any non-NULL pointer */
    redlock_lock *got = sentinel;
    redlock_error e;
    int rc;

    /* Someone else holds it everywhere: no retries, ECONFLICT, and the
     * caller's lock pointer is left as it was (never clobbered). */
    tc_resource(res, sizeof(res), NULL);
    for (int i = 0; i < tc_n(); i++)
        tc_plant(i, res, strlen(res), "someone-else", TTL_MS);
    redlock_config cfg;
    tc_config(&cfg);
    cfg.retry_count = 0;
    redlock_client *c = tc_client(&cfg, -1);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &got, NULL, &e);
    cr_expect(eq(int, rc, REDLOCK_ECONFLICT), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(ptr, (void *)got, (void *)sentinel));
    cr_expect(eq(int, e.code, rc));
    tc_expect_msg(&e, "acquire");
    redlock_client_free(c);
}
