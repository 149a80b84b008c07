/* test-release.c - giving a lock back, and what it must never delete.
 *
 * Release is a compare-token-then-DEL script on every master: it removes our
 * key wherever it still is, counts a key that is already gone as released
 * ("gone"), and never touches a key that holds another token. A failed
 * acquire releases too, before it returns. Claims about every master come
 * after tc_barrier(): release returns at the quorum-th answer.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

#define TTL_MS 10000u

TestSuite(release, .init = tc_fx_setup, .fini = tc_fx_fini, .timeout = 60);

Test(release, deletes_the_key_on_every_master_it_was_on)
{
    char res[128];
    TC_OUTCOME(out);
    redlock_error e;
    redlock_lock *l;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
    tc_barrier(tc_fx.c);
    cr_assert(eq(int, tc_count_token(res, strlen(res), redlock_lock_token(l), TTL_MS), tc_n()));

    rc = redlock_release(tc_fx.c, l, out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, redlock_outcome_status(out), 0));
    cr_expect(eq(u32, redlock_outcome_masters(out), (uint32_t)tc_n()));
    cr_expect(eq(u32, redlock_outcome_quorum(out), (uint32_t)tc_n() / 2 + 1));
    cr_expect(ge(u32, redlock_outcome_ok(out), redlock_outcome_quorum(out)));
    for (int i = 0; i < tc_n(); i++)
        cr_expect(redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_OK ||
                      redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_PENDING,
                  "master %d voted %s (%s)", i,
                  redlock_vote_kind_name(redlock_outcome_vote(out, i)->kind),
                  redlock_outcome_vote(out, i)->detail);

    /* The quorum that answered has deleted it already... */
    cr_expect(le(int, tc_key_count(res, strlen(res)), tc_n() - (int)redlock_outcome_ok(out)));
    /* ...and the rest once their queued script has run. */
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0));
    redlock_lock_free(l);
}

Test(release, lock_object_survives_release_and_can_be_freed_after)
{
    char res[128], token[64];
    redlock_lock *l;
    size_t len = 0;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
    snprintf(token, sizeof(token), "%s", redlock_lock_token(l));
    cr_assert(eq(int, redlock_release(tc_fx.c, l, NULL, NULL), 0));
    /* Not freed by the release: still readable. */
    cr_expect(eq(str, (char *)redlock_lock_token(l), token));
    cr_expect(zero(int, memcmp(redlock_lock_resource(l, &len), res, strlen(res))));
    cr_expect(eq(sz, len, strlen(res)));
    /* But no longer held: its validity ended with the release. */
    cr_expect(le(i64, redlock_lock_validity_ms(l), 0));
    redlock_lock_free(l);
}

Test(release, failed_release_ends_the_validity_too)
{
    char res[128];
    redlock_lock *l;
    redlock_error e;

    /* A release that fails may still run on some masters later: the
     * caller holds nothing either way. */
    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
    cr_assert(gt(i64, redlock_lock_validity_ms(l), 0));
    tc_barrier(tc_fx.c);
    for (int i = 0; i < 3; i++)
        tc_plant(i, res, strlen(res), "other-client", TTL_MS);
    cr_expect(eq(int, redlock_release(tc_fx.c, l, NULL, &e), REDLOCK_ENOTHELD), "%s", e.msg);
    cr_expect(le(i64, redlock_lock_validity_ms(l), 0));
    tc_del_all(res, strlen(res));
    redlock_lock_free(l);
}

Test(release, expired_lock_releases_with_votes_gone)
{
    char res[128];
    TC_OUTCOME(out);
    redlock_error e;
    redlock_lock *l;
    uint32_t gone = 0;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
    tc_barrier(tc_fx.c);
    /* What expiry leaves behind, without waiting for it: no key anywhere. */
    tc_del_all(res, strlen(res));

    rc = redlock_release(tc_fx.c, l, out, &e);
    cr_assert(eq(int, rc, 0), "releasing a lapsed lock is not an error: %s: %s",
              redlock_err_name(rc), e.msg);
    for (int i = 0; i < tc_n(); i++) {
        const redlock_vote *v = redlock_outcome_vote(out, i);

        cr_expect(v->kind == REDLOCK_VOTE_GONE || v->kind == REDLOCK_VOTE_PENDING,
                  "master %d voted %s (%s)", i, redlock_vote_kind_name(v->kind), v->detail);
        gone += v->kind == REDLOCK_VOTE_GONE;
    }
    cr_expect(ge(u32, gone, redlock_outcome_quorum(out)));
    cr_expect(eq(u32, redlock_outcome_ok(out), gone),
              "released count includes the already-gone masters");
    redlock_lock_free(l);
}

Test(release, key_expired_by_its_ttl_releases_with_votes_gone)
{
    char res[128];
    TC_OUTCOME(out);
    redlock_error e;
    redlock_lock *l = NULL;
    uint32_t gone = 0;
    int rc;

    /* A real expiry on the masters' clocks: PEXPIRE 1 ms, then read the key
     * until it is gone (a GET of an expired key deletes it on the spot). */
    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
    tc_barrier(tc_fx.c);
    for (int i = 0; i < tc_n(); i++)
        freeReplyObject(tc_cmd(i, "PEXPIRE %b 1", res, strlen(res)));
    cr_assert(TC_AWAIT(tc_key_count(res, strlen(res)) == 0, 2000), "keys did not expire");

    rc = redlock_release(tc_fx.c, l, out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    for (int i = 0; i < tc_n(); i++)
        gone += redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_GONE;
    cr_expect(ge(u32, gone, redlock_outcome_quorum(out)));
    cr_expect(zero(int, strcmp(redlock_vote_kind_name(REDLOCK_VOTE_GONE), "gone")));
    redlock_lock_free(l);
}

Test(release, second_release_of_the_same_lock_finds_it_gone)
{
    char res[128];
    TC_OUTCOME(out);
    redlock_lock *l;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
    cr_assert(eq(int, redlock_release(tc_fx.c, l, NULL, NULL), 0));
    tc_barrier(tc_fx.c);
    cr_assert(eq(int, redlock_release(tc_fx.c, l, out, NULL), 0));
    for (int i = 0; i < tc_n(); i++)
        cr_expect(redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_GONE ||
                      redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_PENDING,
                  "master %d voted %s", i,
                  redlock_vote_kind_name(redlock_outcome_vote(out, i)->kind));
    redlock_lock_free(l);
}

Test(release, wrong_token_is_enotheld_and_deletes_nothing)
{
    char res[128], real[64];
    redlock_lock *l, *fake = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
    snprintf(real, sizeof(real), "%s", redlock_lock_token(l));
    tc_barrier(tc_fx.c);

    rc = redlock_lock_new(res, strlen(res), "0123456789abcdef0123456789abcdef", &fake, &e);
    cr_assert(eq(int, rc, 0), "%s", e.msg);
    cr_assert(eq(i64, redlock_lock_validity_ms(fake), 0), "a made-up lock has no validity");

    memset(&e, 0, sizeof(e));
    rc = redlock_release(tc_fx.c, fake, out, &e);
    cr_expect(eq(int, rc, REDLOCK_ENOTHELD), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, e.code, REDLOCK_ENOTHELD));
    tc_expect_msg(&e, "release");
    cr_expect(eq(int, redlock_outcome_status(out), REDLOCK_ENOTHELD));
    for (int i = 0; i < tc_n(); i++) {
        const redlock_vote *v = redlock_outcome_vote(out, i);

        if (v->kind == REDLOCK_VOTE_PENDING)
            continue;
        cr_expect(eq(int, v->kind, REDLOCK_VOTE_HELD), "master %d voted %s (%s)", i,
                  redlock_vote_kind_name(v->kind), v->detail);
        cr_expect(eq(int, v->err, REDLOCK_ENOTHELD), "master %d", i);
    }

    /* Nothing deleted: the real token still holds every master. */
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_count_token(res, strlen(res), real, TTL_MS), tc_n()));

    /* And the real lock still releases. */
    cr_expect(eq(int, redlock_release(tc_fx.c, l, NULL, NULL), 0));
    redlock_lock_free(fake);
    redlock_lock_free(l);
}

Test(release, token_held_on_a_minority_only_is_still_a_release)
{
    char res[128];
    redlock_lock *l;
    TC_OUTCOME(out);
    redlock_error e;
    int rc;

    /* Our key survives on 3 masters; 2 have another client's key (ours
     * expired there and someone took it). Release deletes ours on the
     * three and leaves the other client's alone. */
    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
    tc_barrier(tc_fx.c);
    tc_plant(3, res, strlen(res), "other-client", TTL_MS);
    tc_plant(4, res, strlen(res), "other-client", TTL_MS);

    rc = redlock_release(tc_fx.c, l, out, &e);
    cr_expect(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_count_token(res, strlen(res), "other-client", TTL_MS), 2));
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 2));
    tc_del_all(res, strlen(res));
    redlock_lock_free(l);
}

Test(release, releases_on_every_master_after_failed_quorum)
{
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    char res[128];
    int rc;

    /* Another client holds masters 0..2. Our SET wins on 3 and 4 only: a
     * failed attempt, which must delete its own keys there before acquire
     * returns, and leave the other client's keys alone. */
    tc_resource(res, sizeof(res), NULL);
    for (int i = 0; i < 3; i++)
        tc_plant(i, res, strlen(res), "other-client", TTL_MS);
    tc_config(&cfg);
    cfg.retry_count = 0;
    c = tc_client(&cfg, -1);

    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, out, &e);
    cr_assert(eq(int, rc, REDLOCK_ECONFLICT), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(zero(ptr, l));
    /* No barrier here: "gone when acquire returns" is the claim. */
    cr_expect(eq(int, tc_get(3, res, strlen(res), NULL, 0, NULL), 0), "key left on master 3");
    cr_expect(eq(int, tc_get(4, res, strlen(res), NULL, 0, NULL), 0), "key left on master 4");
    cr_expect(eq(int, tc_count_token(res, strlen(res), "other-client", TTL_MS), 3));
    for (int i = 0; i < 3; i++)
        cr_expect(eq(int, redlock_outcome_vote(out, i)->kind, REDLOCK_VOTE_HELD),
                  "master %d voted %s", i,
                  redlock_vote_kind_name(redlock_outcome_vote(out, i)->kind));
    tc_del_all(res, strlen(res));
    redlock_client_free(c);
}

Test(release, released_resource_can_be_acquired_at_once)
{
    char res[128];
    redlock_lock *a, *b;

    tc_resource(res, sizeof(res), NULL);
    a = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
    cr_assert(eq(int, redlock_release(tc_fx.c, a, NULL, NULL), 0));
    /* Another tc_fx.c, no retries: only free masters can grant it. */
    redlock_config cfg;
    tc_config(&cfg);
    cfg.retry_count = 0;
    redlock_client *c = tc_client(&cfg, -1);
    redlock_error e;
    b = NULL;
    int rc = redlock_acquire(c, res, strlen(res), TTL_MS, &b, NULL, &e);
    cr_expect(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    if (b)
        redlock_release(c, b, NULL, NULL);
    redlock_lock_free(b);
    redlock_lock_free(a);
    redlock_client_free(c);
}

/* redlock_lock_check(): held with its validity left while a quorum holds
 * the token; not held once a majority lost it (here: deleted by hand, as
 * a master that forgot it and was readmitted would); not held after a
 * release; an expired validity is said as such. */
Test(release, lock_check_says_held_and_how_long_until_a_majority_lost_it)
{
    char res[128];
    redlock_error e;
    int64_t left = -1;
    redlock_lock *l;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, NULL);
    tc_barrier(tc_fx.c);
    cr_assert(eq(int, redlock_lock_check(tc_fx.c, l, &left, &e), 0), "%s", e.msg);
    cr_expect(gt(i64, left, 0));
    cr_expect(le(i64, left, (int64_t)TTL_MS));
    for (int m = 0; m < 2; m++)
        freeReplyObject(tc_cmd(m, "DEL %s", res));
    cr_assert(eq(int, redlock_lock_check(tc_fx.c, l, &left, &e), 0), "3 of 5 still hold it: %s",
              e.msg);
    freeReplyObject(tc_cmd(2, "DEL %s", res));
    cr_assert(eq(int, redlock_lock_check(tc_fx.c, l, &left, &e), REDLOCK_ENOTHELD));
    cr_expect(eq(i64, left, 0));
    cr_expect(strstr(e.msg, "the token is on 2 of 5 masters") != NULL, "%s", e.msg);
    redlock_release(tc_fx.c, l, NULL, NULL);
    cr_expect(eq(int, redlock_lock_check(tc_fx.c, l, &left, &e), REDLOCK_ENOTHELD), "%s", e.msg);
    redlock_lock_free(l);

    l = tc_must_acquire(tc_fx.c, res, 60, NULL);
    cr_expect(TC_AWAIT(redlock_lock_validity_ms(l) <= 0, 1000));
    int rc = redlock_lock_check(tc_fx.c, l, &left, &e);
    cr_expect(rc == REDLOCK_EEXPIRED || rc == REDLOCK_ENOTHELD, "%s: %s", redlock_err_name(rc),
              e.msg);
    redlock_lock_free(l);
}

/* ---- redlock_lock_check_async(): the same check on the caller's loop ---- */

/* What one lock check's callback saw. */
struct check_rec {
    int runs;
    int status;
    int64_t left_ms;
    int has_err;
    redlock_error err;
};

static void on_checked(redlock_client *c, int status, int64_t left_ms, const redlock_error *err,
                       void *arg)
{
    struct check_rec *r = arg;

    (void)c;
    r->runs++;
    r->status = status;
    r->left_ms = left_ms;
    r->has_err = err != NULL;
    if (err)
        r->err = *err;
}

/* An async client on a base of its own, every master connected. */
static redlock_client *async_client(struct event_base **base)
{
    *base = event_base_new();
    cr_assert(not(zero(ptr, *base)));
    redlock_client *ac = tc_client_async(NULL, *base);
    cr_assert(tc_async_ready(*base, ac, tc_n(), 5000), "masters not connected");
    return ac;
}

/* redlock_lock_check_async() of @l on @ac, run on @base until its callback
 * ran (never inside the call). Return: its status. */
static int check_async(struct event_base *base, redlock_client *ac, const redlock_lock *l,
                       struct check_rec *r)
{
    redlock_error e;

    memset(r, 0, sizeof(*r));
    int rc = redlock_lock_check_async(ac, l, on_checked, r, &e);
    cr_assert(eq(int, rc, 0), "lock_check_async: %s: %s", redlock_err_name(rc), e.msg);
    cr_assert(eq(int, r->runs, 0), "the callback ran inside the call");
    cr_assert(TC_RUN_UNTIL(base, r->runs > 0, 10000), "lock_check_async never called back");
    cr_expect(eq(int, r->runs, 1));
    cr_expect(r->has_err, "err is never NULL");
    cr_expect(eq(int, r->err.code, r->status));
    return r->status;
}

/* The async check answers what the blocking one answers: held, with the
 * validity left (no more than the blocking call saw just before); and not
 * held once a majority lost the token, with the same line and no time. */
Test(release, lock_check_async_says_what_lock_check_says)
{
    struct event_base *base;
    redlock_client *ac = async_client(&base);
    struct check_rec r;
    redlock_error e;
    int64_t left = -1;
    redlock_lock *l;

    l = tc_must_acquire(tc_fx.c, tc_fx.res, TTL_MS, NULL);
    tc_barrier(tc_fx.c);
    cr_assert(eq(int, redlock_lock_check(tc_fx.c, l, &left, &e), 0), "%s", e.msg);
    cr_assert(eq(int, check_async(base, ac, l, &r), 0), "%s", r.err.msg);
    cr_expect(gt(i64, r.left_ms, 0));
    cr_expect(le(i64, r.left_ms, left), "async %lld ms left after blocking %lld",
              (long long)r.left_ms, (long long)left);
    cr_expect(eq(str, r.err.msg, ""), "success says nothing: %s", r.err.msg);

    for (int m = 0; m < 3; m++)
        freeReplyObject(tc_cmd(m, "DEL %s", tc_fx.res));
    cr_assert(eq(int, redlock_lock_check(tc_fx.c, l, &left, &e), REDLOCK_ENOTHELD), "%s", e.msg);
    cr_assert(eq(int, check_async(base, ac, l, &r), REDLOCK_ENOTHELD), "%s", r.err.msg);
    cr_expect(eq(i64, r.left_ms, 0));
    cr_expect(eq(str, r.err.msg, e.msg));
    cr_expect(eq(int, r.err.master, e.master));
    tc_expect_msg(&r.err, "lock_check_async");

    redlock_release(tc_fx.c, l, NULL, NULL);
    redlock_lock_free(l);
    redlock_client_free(ac);
    event_base_free(base);
}

/* A set is held only where the token is on every resource: the async
 * check reads them one after another and says so as the blocking one does. */
Test(release, lock_check_async_reads_every_resource_of_a_set)
{
    struct event_base *base;
    redlock_client *ac = async_client(&base);
    char a[128], b[128];
    redlock_resource set[2];
    struct check_rec r;
    redlock_error e;
    redlock_lock *l = NULL;
    int64_t left;

    tc_resource(a, sizeof(a), "a");
    tc_resource(b, sizeof(b), "b");
    set[0] = (redlock_resource){ a, strlen(a) };
    set[1] = (redlock_resource){ b, strlen(b) };
    int rc = redlock_acquire_set(tc_fx.c, set, 2, TTL_MS, 0, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    tc_barrier(tc_fx.c);
    cr_assert(eq(int, check_async(base, ac, l, &r), 0), "%s", r.err.msg);
    cr_expect(gt(i64, r.left_ms, 0));

    /* The second resource lost on a majority: the set is not held. */
    for (int m = 0; m < 3; m++)
        freeReplyObject(tc_cmd(m, "DEL %s", b));
    cr_assert(eq(int, redlock_lock_check(tc_fx.c, l, &left, &e), REDLOCK_ENOTHELD), "%s", e.msg);
    cr_assert(eq(int, check_async(base, ac, l, &r), REDLOCK_ENOTHELD), "%s", r.err.msg);
    cr_expect(eq(str, r.err.msg, e.msg));

    redlock_release(tc_fx.c, l, NULL, NULL);
    redlock_lock_free(l);
    redlock_client_free(ac);
    event_base_free(base);
}
