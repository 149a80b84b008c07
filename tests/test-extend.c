/* test-extend.c - keeping a lock: a new ttl where our token still is, only.
 *
 * Extend is a compare-token-then-PEXPIRE script on every master. It succeeds
 * on a majority with validity recomputed from the start of the call, raises
 * the PTTL the masters hold, and never resurrects or lengthens a key that is
 * gone or belongs to another token.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

#define SHORT_TTL_MS 2000u
#define LONG_TTL_MS 60000u

TestSuite(extend, .init = tc_fx_setup, .fini = tc_fx_fini, .timeout = 60);

/* Masters where @res's PTTL is above @above and at most @most. */
static int count_pttl_between(const char *res, long long above, long long most)
{
    int n = 0;

    for (int i = 0; i < tc_n(); i++) {
        long long pttl = 0;

        if (tc_get(i, res, strlen(res), NULL, 0, &pttl) == 1 && pttl > above && pttl <= most)
            n++;
    }
    return n;
}

Test(extend, raises_the_pttl_and_the_validity)
{
    char res[128], token[64];
    TC_OUTCOME(out);
    redlock_error e;
    redlock_lock *l;
    int64_t before;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, SHORT_TTL_MS, NULL);
    snprintf(token, sizeof(token), "%s", redlock_lock_token(l));
    before = redlock_lock_validity_ms(l);
    cr_assert(le(i64, before, (int64_t)SHORT_TTL_MS));

    rc = redlock_extend(tc_fx.c, l, LONG_TTL_MS, out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);

    /* The lease: more than the old ttl could ever give, within the new one
     * less its margin (ceil(60000 * 0.01) + 2 ms). */
    cr_expect(gt(i64, redlock_lock_validity_ms(l), (int64_t)SHORT_TTL_MS));
    cr_expect(le(i64, redlock_lock_validity_ms(l), (int64_t)(LONG_TTL_MS - 602)));
    cr_expect(gt(i64, redlock_outcome_validity_ms(out), (int64_t)SHORT_TTL_MS));
    cr_expect(le(i64, redlock_outcome_validity_ms(out), (int64_t)(LONG_TTL_MS - 602)));
    cr_expect(eq(u32, redlock_lock_ttl_ms(l), LONG_TTL_MS));
    cr_expect(eq(str, (char *)redlock_lock_token(l), token), "extend keeps the token");

    /* The outcome. */
    cr_expect(eq(int, redlock_outcome_status(out), 0));
    cr_expect(eq(u32, redlock_outcome_quorum(out), (uint32_t)tc_n() / 2 + 1));
    cr_expect(ge(u32, redlock_outcome_ok(out), redlock_outcome_quorum(out)));
    for (int i = 0; i < tc_n(); i++)
        cr_expect(redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_OK ||
                      redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_PENDING,
                  "master %d voted %s (%s)", i,
                  redlock_vote_kind_name(redlock_outcome_vote(out, i)->kind),
                  redlock_outcome_vote(out, i)->detail);

    /* The masters: the quorum that answered has the new ttl now... */
    cr_expect(ge(int, count_pttl_between(res, SHORT_TTL_MS, LONG_TTL_MS),
                 (int)redlock_outcome_ok(out)));
    /* ...and every master once the rest have run their script. */
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, count_pttl_between(res, SHORT_TTL_MS, LONG_TTL_MS), tc_n()));
    cr_expect(eq(int, tc_count_token(res, strlen(res), token, LONG_TTL_MS), tc_n()));

    cr_expect(eq(int, redlock_release(tc_fx.c, l, NULL, NULL), 0));
    redlock_lock_free(l);
}

Test(extend, can_shorten_the_ttl_too)
{
    char res[128];
    redlock_lock *l;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, LONG_TTL_MS, NULL);
    cr_assert(eq(int, redlock_extend(tc_fx.c, l, SHORT_TTL_MS, NULL, NULL), 0));
    cr_expect(le(i64, redlock_lock_validity_ms(l), (int64_t)SHORT_TTL_MS));
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, count_pttl_between(res, 0, SHORT_TTL_MS), tc_n()));
    redlock_release(tc_fx.c, l, NULL, NULL);
    redlock_lock_free(l);
}

Test(extend, lapsed_lock_is_enotheld_and_not_resurrected)
{
    char res[128];
    TC_OUTCOME(out);
    redlock_error e;
    redlock_lock *l;
    int64_t before;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, SHORT_TTL_MS, NULL);
    tc_barrier(tc_fx.c);
    tc_del_all(res, strlen(res)); /* what expiry leaves */
    before = redlock_lock_validity_ms(l);

    rc = redlock_extend(tc_fx.c, l, LONG_TTL_MS, out, &e);
    cr_expect(eq(int, rc, REDLOCK_ENOTHELD), "%s: %s", redlock_err_name(rc), e.msg);
    tc_expect_msg(&e, "extend");
    for (int i = 0; i < tc_n(); i++)
        cr_expect(redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_GONE ||
                      redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_PENDING,
                  "master %d voted %s", i,
                  redlock_vote_kind_name(redlock_outcome_vote(out, i)->kind));
    cr_expect(le(i64, redlock_outcome_validity_ms(out), 0));
    /* A failed extend leaves the lock's own view alone (no longer, no new ttl). */
    cr_expect(le(i64, redlock_lock_validity_ms(l), before));
    cr_expect(eq(u32, redlock_lock_ttl_ms(l), SHORT_TTL_MS));
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "extend recreated the key");
    redlock_lock_free(l);
}

Test(extend, wrong_token_is_enotheld_and_leaves_the_holder_alone)
{
    char res[128], real[64];
    redlock_lock *l, *fake = NULL;
    redlock_error e;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, SHORT_TTL_MS, NULL);
    snprintf(real, sizeof(real), "%s", redlock_lock_token(l));
    cr_assert(eq(int, redlock_lock_new(res, strlen(res), "not-the-token", &fake, &e), 0), "%s",
              e.msg);

    rc = redlock_extend(tc_fx.c, fake, LONG_TTL_MS, NULL, &e);
    cr_expect(eq(int, rc, REDLOCK_ENOTHELD), "%s: %s", redlock_err_name(rc), e.msg);
    tc_expect_msg(&e, "extend");
    cr_expect(eq(i64, redlock_lock_validity_ms(fake), 0));
    /* The holder's keys keep their short ttl and its token. */
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_count_token(res, strlen(res), real, SHORT_TTL_MS), tc_n()));
    redlock_release(tc_fx.c, l, NULL, NULL);
    redlock_lock_free(fake);
    redlock_lock_free(l);
}

Test(extend, made_up_lock_with_the_right_token_gets_a_validity)
{
    char res[128];
    redlock_lock *l, *copy = NULL;
    redlock_error e;

    /* redlock-cli's case: the token was printed by another process. */
    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, SHORT_TTL_MS, NULL);
    cr_assert(eq(int, redlock_lock_new(res, strlen(res), redlock_lock_token(l), &copy, &e), 0));
    cr_assert(eq(i64, redlock_lock_validity_ms(copy), 0));
    cr_assert(eq(int, redlock_extend(tc_fx.c, copy, LONG_TTL_MS, NULL, &e), 0), "%s", e.msg);
    cr_expect(gt(i64, redlock_lock_validity_ms(copy), (int64_t)SHORT_TTL_MS));
    cr_expect(eq(u32, redlock_lock_ttl_ms(copy), LONG_TTL_MS));
    cr_expect(eq(int, redlock_release(tc_fx.c, copy, NULL, NULL), 0));
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0));
    redlock_lock_free(copy);
    redlock_lock_free(l);
}

Test(extend, minority_of_lost_keys_still_extends_the_majority)
{
    char res[128], token[64];
    TC_OUTCOME(out);
    redlock_error e;
    redlock_lock *l;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, SHORT_TTL_MS, NULL);
    snprintf(token, sizeof(token), "%s", redlock_lock_token(l));
    tc_barrier(tc_fx.c);
    /* Master 0 lost our key; master 1 gave it to someone else. */
    freeReplyObject(tc_cmd(0, "DEL %b", res, strlen(res)));
    tc_plant(1, res, strlen(res), "other-client", SHORT_TTL_MS);

    rc = redlock_extend(tc_fx.c, l, LONG_TTL_MS, out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, count_pttl_between(res, SHORT_TTL_MS, LONG_TTL_MS), 3));
    cr_expect(eq(int, tc_get(0, res, strlen(res), NULL, 0, NULL), 0), "extend recreated a key");
    cr_expect(eq(int, tc_count_token(res, strlen(res), "other-client", SHORT_TTL_MS), 1),
              "extend touched another client's key");
    tc_del_all(res, strlen(res));
    redlock_lock_free(l);
}

Test(extend, bad_ttl_is_einval_and_changes_nothing)
{
    static const uint32_t bad[] = { 0, 2, REDLOCK_TTL_MAX_MS + 1u, UINT32_MAX };
    char res[128];
    redlock_lock *l;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, SHORT_TTL_MS, NULL);
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        redlock_error e;
        int rc = redlock_extend(tc_fx.c, l, bad[k], NULL, &e);

        cr_expect(eq(int, rc, REDLOCK_EINVAL), "ttl %u: %s", bad[k], redlock_err_name(rc));
        tc_expect_msg(&e, "extend");
        cr_expect(eq(u32, redlock_lock_ttl_ms(l), SHORT_TTL_MS));
    }
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, count_pttl_between(res, 0, SHORT_TTL_MS), tc_n()));
    redlock_release(tc_fx.c, l, NULL, NULL);
    redlock_lock_free(l);
}
