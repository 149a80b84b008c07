/* test-contention.c - clients racing for one resource: one wins, the rest conflict.
 *
 * Each racer is its own client (its own connections and I/O thread) on its
 * own thread, released together from a barrier so their SETs meet at the
 * masters. Exactly one may win, and every loser must hear "held by another
 * client" (ECONFLICT): masters that are healthy and merely busy with
 * somebody else's lock are never "no quorum".
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

#define TTL_MS 30000u
#define MAX_RACERS 8

TestSuite(contention, .timeout = 90);

struct racer {
    redlock_client *c;
    pthread_barrier_t *start;
    const char *res;
    int rc;
    redlock_lock *lock;
    redlock_outcome *out;
    redlock_error err;
};

static void *race(void *arg)
{
    struct racer *r = arg;

    pthread_barrier_wait(r->start);
    r->rc = redlock_acquire(r->c, r->res, strlen(r->res), TTL_MS, &r->lock, r->out, &r->err);
    return NULL;
}

/* @n clients race once for one resource; the winner holds on until all
 * have returned. Checks the outcome and returns the winner's index. */
static int run_race(int n, uint32_t retry_count)
{
    struct racer racers[MAX_RACERS];
    pthread_t th[MAX_RACERS];
    pthread_barrier_t start;
    redlock_config cfg;
    char res[128];
    int winners = 0, winner = -1;

    tc_resource(res, sizeof(res), NULL);
    tc_config(&cfg);
    cfg.retry_count = retry_count;
    cfg.retry_delay_ms = 50;
    cfg.retry_jitter_ms = 100;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        memset(&racers[i], 0, sizeof(racers[i]));
        racers[i].c = tc_client(&cfg, -1);
        racers[i].start = &start;
        racers[i].res = res;
        racers[i].out = tc_outcome_new();
    }
    for (int i = 0; i < n; i++)
        cr_assert(eq(int, pthread_create(&th[i], NULL, race, &racers[i]), 0));
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);

    for (int i = 0; i < n; i++) {
        struct racer *r = &racers[i];

        if (r->rc == 0) {
            winners++;
            winner = i;
            cr_expect(not(zero(ptr, r->lock)));
            continue;
        }
        cr_expect(eq(int, r->rc, REDLOCK_ECONFLICT), "racer %d: %s: %s", i, redlock_err_name(r->rc),
                  r->err.msg);
        cr_expect(zero(ptr, r->lock));
        tc_expect_msg(&r->err, "losing acquire");
        /* The loser's last attempt: nobody failed, somebody else holds it. */
        uint32_t held = 0;
        for (int m = 0; m < tc_n(); m++) {
            int k = redlock_outcome_vote(r->out, m)->kind;

            cr_expect(k == REDLOCK_VOTE_OK || k == REDLOCK_VOTE_HELD || k == REDLOCK_VOTE_PENDING,
                      "racer %d master %d voted %s (%s)", i, m, redlock_vote_kind_name(k),
                      redlock_outcome_vote(r->out, m)->detail);
            held += k == REDLOCK_VOTE_HELD;
        }
        cr_expect(gt(u32, held, 0), "racer %d lost with no master held", i);
    }
    cr_expect(eq(int, winners, 1), "%d of %d racers won", winners, n);

    /* The winner's token holds a majority, and no loser left a key behind
     * once each loser's own connections have run all it sent. */
    for (int i = 0; i < n; i++)
        tc_barrier(racers[i].c);
    if (winner >= 0) {
        struct racer *w = &racers[winner];

        cr_expect(ge(int, tc_count_token(res, strlen(res), redlock_lock_token(w->lock), TTL_MS),
                     (int)redlock_client_quorum(w->c)));
        /* Keys under this name are the winner's or nobody's. */
        for (int m = 0; m < tc_n(); m++) {
            char val[64];

            if (tc_get(m, res, strlen(res), val, sizeof(val), NULL) == 1)
                cr_expect(tc_value_is_token(val, redlock_lock_token(w->lock)),
                          "master %d holds a loser's token (%s)", m, val);
        }
        cr_expect(eq(int, redlock_release(w->c, w->lock, NULL, NULL), 0));
    }
    for (int i = 0; i < n; i++) {
        redlock_lock_free(racers[i].lock);
        redlock_outcome_free(racers[i].out);
        redlock_client_free(racers[i].c);
    }
    return winner;
}

Test(contention, two_clients_one_try_exactly_one_wins)
{
    /* With one attempt each and two clients, every master grants exactly
     * one of them, so one of them always has a majority. */
    for (int round = 0; round < 10; round++)
        run_race(2, 0);
}

Test(contention, eight_clients_exactly_one_wins_the_rest_conflict)
{
    /* Eight can split the masters so that nobody has a majority on one
     * attempt; the retries (with jitter) resolve that, and the winner then
     * holds it, so every loser's last attempt meets the winner's keys. */
    for (int round = 0; round < 3; round++)
        run_race(MAX_RACERS, 5);
}

Test(contention, held_resource_is_econflict_with_every_vote_held)
{
    redlock_config cfg;
    redlock_client *a, *b;
    redlock_lock *la = NULL, *lb = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    char res[128];
    uint64_t t0;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    tc_config(&cfg);
    cfg.retry_count = 0;
    a = tc_client(&cfg, -1);
    b = tc_client(&cfg, -1);
    cr_assert(eq(int, redlock_acquire(a, res, strlen(res), TTL_MS, &la, NULL, &e), 0), "%s", e.msg);
    tc_barrier(a);

    t0 = tc_now_us();
    rc = redlock_acquire(b, res, strlen(res), TTL_MS, &lb, out, &e);
    cr_expect(eq(int, rc, REDLOCK_ECONFLICT), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, e.code, REDLOCK_ECONFLICT));
    cr_expect(eq(int, e.master, -1), "a conflict is about the operation, not one master");
    tc_expect_msg(&e, "acquire");
    cr_expect(not(zero(ptr, strstr(e.msg, "held by another client"))), "%s", e.msg);
    cr_expect(zero(ptr, lb));
    cr_expect(eq(u32, redlock_outcome_ok(out), 0));
    cr_expect(le(i64, redlock_outcome_validity_ms(out), 0));
    cr_expect(eq(u32, redlock_outcome_attempts(out), 1));
    for (int m = 0; m < tc_n(); m++) {
        int k = redlock_outcome_vote(out, m)->kind;

        cr_expect(k == REDLOCK_VOTE_HELD || k == REDLOCK_VOTE_PENDING, "master %d voted %s", m,
                  redlock_vote_kind_name(k));
        if (k == REDLOCK_VOTE_HELD)
            cr_expect(eq(int, redlock_outcome_vote(out, m)->err, REDLOCK_ECONFLICT));
    }
    /* Conflict is decided as soon as a majority says "held": no timeout. */
    cr_expect(lt(u64, tc_now_us() - t0, (uint64_t)cfg.node_timeout_ms * 1000));

    /* The loser left a's keys alone. */
    tc_barrier(b);
    cr_expect(eq(int, tc_count_token(res, strlen(res), redlock_lock_token(la), TTL_MS), tc_n()));

    /* Once a lets go, b gets it. */
    cr_expect(eq(int, redlock_release(a, la, NULL, NULL), 0));
    rc = redlock_acquire(b, res, strlen(res), TTL_MS, &lb, NULL, &e);
    cr_expect(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    if (lb)
        redlock_release(b, lb, NULL, NULL);
    redlock_lock_free(lb);
    redlock_lock_free(la);
    redlock_client_free(a);
    redlock_client_free(b);
}

/* For the tests on one client with no retries: tc_fx.cfg, tc_fx.res. */
static void one_client(void)
{
    tc_fx_init();
    tc_fx.cfg.retry_count = 0;
}

Test(contention, held_on_a_minority_still_acquires, .init = one_client, .fini = tc_fx_fini)
{
    int rc;

    tc_plant(0, tc_fx.res, tc_fx.len, "other-client", TTL_MS);
    tc_plant(1, tc_fx.res, tc_fx.len, "other-client", TTL_MS);
    tc_fx_client(-1);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s", tc_fx.e.msg);
    cr_expect(eq(u32, redlock_outcome_ok(tc_fx.out), 3));
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_count_token(tc_fx.res, tc_fx.len, redlock_lock_token(tc_fx.l), TTL_MS),
                 3));
    cr_expect(eq(int, tc_count_token(tc_fx.res, tc_fx.len, "other-client", TTL_MS), 2));
    cr_expect(eq(int, redlock_release(tc_fx.c, tc_fx.l, NULL, NULL), 0));
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_count_token(tc_fx.res, tc_fx.len, "other-client", TTL_MS), 2));
    tc_del_all(tc_fx.res, tc_fx.len);
}

Test(contention, held_on_a_majority_is_econflict_after_every_retry, .init = one_client,
     .fini = tc_fx_fini)
{
    int rc;

    for (int i = 0; i < 3; i++)
        tc_plant(i, tc_fx.res, tc_fx.len, "other-client", TTL_MS);
    tc_fx.cfg.retry_count = 2;
    tc_fx.cfg.retry_delay_ms = 10;
    tc_fx.cfg.retry_jitter_ms = 10;
    tc_fx_client(-1);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_expect(eq(int, rc, REDLOCK_ECONFLICT), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    /* The first, the one that takes the waiter's place in the queues right
     * after it (an extra attempt, like a wake-up's: acquire.c), the polls. */
    cr_expect(eq(u32, redlock_outcome_attempts(tc_fx.out), 1 + 1 + 2),
              "1 + 1 + retry_count attempts");
    /* Every attempt's keys are gone again: only the other client's remain. */
    cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 3));
    cr_expect(eq(int, tc_count_token(tc_fx.res, tc_fx.len, "other-client", TTL_MS), 3));
    tc_del_all(tc_fx.res, tc_fx.len);
}
