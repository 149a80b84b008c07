/* test-acquire.c - a lock taken on healthy masters, as the masters see it.
 *
 * The happy path of redlock_acquire() checked from both ends: what the call
 * returns (token, validity, the outcome's votes) and what the masters hold
 * afterwards, read straight from each master with GET and PTTL. An acquire
 * returns at the quorum-th OK, so claims about every master come after a
 * barrier (tc_barrier) that proves the remaining SETs have run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"
#include "history.h"

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
    TC_OUTCOME(out);
    redlock_lock *l;
    int64_t v;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, out);
    v = redlock_lock_validity_ms(l);
    cr_expect(gt(i64, v, 0));
    cr_expect(le(i64, v, (int64_t)(TTL_MS - MARGIN_MS)));
    /* The outcome's validity was computed at the decision: no more than the
     * ttl less the margin and the time the attempt took. */
    cr_expect(gt(i64, redlock_outcome_validity_ms(out), 0));
    cr_expect(le(i64, redlock_outcome_validity_ms(out),
                 (int64_t)(TTL_MS - MARGIN_MS) - (int64_t)(redlock_outcome_elapsed_us(out) / 1000)),
              "validity %lld ms, elapsed %llu us", (long long)redlock_outcome_validity_ms(out),
              (unsigned long long)redlock_outcome_elapsed_us(out));
    /* Validity only runs down from there. */
    cr_expect(le(i64, v, redlock_outcome_validity_ms(out)));
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
    TC_OUTCOME(out);
    redlock_lock *l;
    uint32_t ok = 0;

    /* The outcome of a call that failed first: nothing of it may be left
     * after the next call (an outcome is reused, not cleared). */
    tc_resource(res, sizeof(res), NULL);
    for (int m = 0; m < tc_n(); m++)
        tc_plant(m, res, strlen(res), "someone-else", TTL_MS);
    redlock_acquire_opts o;
    redlock_acquire_opts_init(&o);
    o.wait_ms = 0;
    o.ttl_ms = TTL_MS;
    redlock_resource r = { res, strlen(res) };
    cr_assert(eq(int, redlock_acquire_with(tc_fx.c, &r, 1, &o, &l, out, NULL), REDLOCK_ECONFLICT));
    int held = 0;
    for (int m = 0; m < tc_n(); m++)
        held += redlock_outcome_vote(out, m)->kind == REDLOCK_VOTE_HELD;
    cr_assert(ge(int, held, tc_n() - tc_n() / 2), "a majority out of reach: %d held", held);
    tc_del_all(res, strlen(res));
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, out);
    cr_expect(eq(int, redlock_outcome_status(out), 0));
    cr_expect(eq(u32, redlock_outcome_masters(out), (uint32_t)tc_n()));
    cr_expect(eq(u32, redlock_outcome_quorum(out), (uint32_t)tc_n() / 2 + 1));
    cr_expect(eq(u32, redlock_outcome_quorum(out), (uint32_t)redlock_client_quorum(tc_fx.c)));
    cr_expect(eq(u32, redlock_outcome_attempts(out), 1));
    cr_expect(gt(u64, redlock_outcome_elapsed_us(out), 0));
    for (int i = 0; i < tc_n(); i++) {
        const redlock_vote *v = redlock_outcome_vote(out, i);

        /* Decided at the quorum-th OK: the rest may still be on their way,
         * but nothing failed on healthy masters. */
        /* (criterion 2.4.1's any() misreports a true first operand: plain C) */
        cr_expect(v->kind == REDLOCK_VOTE_OK || v->kind == REDLOCK_VOTE_PENDING,
                  "master %d voted %s (%s)", i, redlock_vote_kind_name(v->kind), v->detail);
        if (v->kind == REDLOCK_VOTE_OK) {
            ok++;
            cr_expect(eq(int, v->err, 0));
            cr_expect(le(u64, (uint64_t)v->latency_us, redlock_outcome_elapsed_us(out) + 1000),
                      "master %d latency %u us > elapsed %llu us", i, v->latency_us,
                      (unsigned long long)redlock_outcome_elapsed_us(out));
        }
    }
    cr_expect(eq(u32, redlock_outcome_ok(out), ok));
    cr_expect(ge(u32, redlock_outcome_ok(out), redlock_outcome_quorum(out)));
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

/* The history recorder (tests/helpers/history.c) takes what the checker
 * reads from a real outcome: the OK votes as a mask, their count and the
 * attempts. */
Test(acquire, a_history_line_carries_the_outcome)
{
    char p[] = "/tmp/redlock-history-XXXXXX", line[4096], want[64], res[128];
    int fd = mkstemp(p);
    cr_assert(ge(int, fd, 0), "mkstemp: %s", strerror(errno));
    close(fd);
    tc_hist *h = tc_hist_open(p);
    cr_assert(not(zero(ptr, h)), "tc_hist_open %s: %s", p, strerror(errno));
    TC_OUTCOME(out);
    uint64_t t = tc_now_us();
    redlock_lock *l;
    FILE *f;

    tc_resource(res, sizeof(res), NULL);
    l = tc_must_acquire(tc_fx.c, res, TTL_MS, out);
    cr_assert(eq(int, tc_hist_acquire(h, "a", res, strlen(res), TTL_MS, t, 0, l, out), 0));
    tc_hist_close(h);
    cr_expect(ge(u32, (uint32_t)__builtin_popcount(tc_hist_oks(out)), redlock_outcome_quorum(out)));
    f = fopen(p, "r");
    cr_assert(not(zero(ptr, f)));
    cr_assert(not(zero(ptr, fgets(line, sizeof(line), f))));
    fclose(f);
    unlink(p);
    snprintf(want, sizeof(want), "\"oks\":%u,\"n_ok\":%zu", tc_hist_oks(out),
             redlock_outcome_ok(out));
    cr_expect(not(zero(ptr, strstr(line, want))), "%s in %s", want, line);
    cr_expect(not(zero(ptr, strstr(line, "\"attempts\":1"))), "%s", line);
    tc_must_release(tc_fx.c, l);
}

/* Warnings of the client of the "mine" tests, and when the first came. */
static char mine_log[2048];
static uint64_t mine_log_us;
static pthread_mutex_t mine_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mine_cv = PTHREAD_COND_INITIALIZER;
static void mine_log_fn(int level, const char *msg, void *arg)
{
    (void)arg;
    size_t used = strlen(mine_log);
    if (level < REDLOCK_LOG_WARN || strstr(msg, "already holds") == NULL)
        return;
    if (used == 0) {
        pthread_mutex_lock(&mine_mu);
        __atomic_store_n(&mine_log_us, tc_now_us(), __ATOMIC_RELEASE);
        pthread_cond_broadcast(&mine_cv);
        pthread_mutex_unlock(&mine_mu);
    }
    if (used + strlen(msg) + 2 < sizeof(mine_log))
        snprintf(mine_log + used, sizeof(mine_log) - used, "%s\n", msg);
}

static redlock_client *mine_client(void)
{
    redlock_config cfg;
    tc_config(&cfg);
    cfg.log_fn = mine_log_fn;
    mine_log[0] = '\0';
    mine_log_us = 0;
    return tc_client(&cfg, -1);
}

/* Redlock is not reentrant: a second acquire by the client that holds the
 * lock is told so at once (a warning from its first attempt, long before
 * its wait ends), and the wait ends with the same words; another client
 * meets an ordinary conflict; a set with a held member is told the same;
 * after the release the same client takes it again. */
Test(acquire, a_second_acquire_by_the_holding_client_is_told_at_once)
{
    char res[128], other[128];
    redlock_lock *l, *again = NULL, *set = NULL;
    redlock_acquire_opts o;
    redlock_error e;
    uint64_t t0;
    redlock_client *c = mine_client();

    tc_resource(res, sizeof(res), NULL);
    tc_resource(other, sizeof(other), NULL);
    l = tc_must_acquire(c, res, TTL_MS, NULL);
    redlock_acquire_opts_init(&o);
    o.ttl_ms = TTL_MS;
    o.wait_ms = 1500;
    redlock_resource r = { res, strlen(res) };
    t0 = tc_now_us();
    int rc = redlock_acquire_with(c, &r, 1, &o, &again, NULL, &e);
    cr_assert(eq(int, rc, REDLOCK_ECONFLICT), "%s: %s", redlock_err_name(rc), e.msg);
    cr_assert(again == NULL);
    /* Told by the first attempt, not when the wait ran out: the time
     * between the two is the subject here. */
    uint64_t told = __atomic_load_n(&mine_log_us, __ATOMIC_ACQUIRE);
    cr_assert(told != 0, "no warning that this client holds it");
    cr_assert(lt(u64, (told - t0) / 1000, 1000), "warned %llu ms after the call",
              (unsigned long long)((told - t0) / 1000));
    cr_assert(strstr(mine_log, "not reentrant") != NULL, "%s", mine_log);
    /* the token's first 12 characters name it; the whole token would let
     * a reader of the log release the lock */
    char tok12[13];
    snprintf(tok12, sizeof(tok12), "%s", redlock_lock_token(l));
    cr_assert(strstr(mine_log, tok12) != NULL, "the token: %s", mine_log);
    cr_assert(strstr(mine_log, redlock_lock_token(l)) == NULL, "the whole token: %s", mine_log);
    cr_assert(strchr(mine_log, '\n') == mine_log + strlen(mine_log) - 1, "said once: %s", mine_log);
    cr_assert(strstr(e.msg, "this client already holds") != NULL, "%s", e.msg);
    cr_assert(strstr(e.msg, "not reentrant") != NULL, "%s", e.msg);
    cr_assert(strstr(e.msg, tok12) != NULL, "the token: %s", e.msg);
    cr_assert(strstr(e.msg, res) != NULL, "the resource: %s", e.msg);

    /* A set with the held resource as a member: the same. */
    redlock_resource both[2] = { { other, strlen(other) }, { res, strlen(res) } };
    o.wait_ms = 0;
    rc = redlock_acquire_with(c, both, 2, &o, &set, NULL, &e);
    cr_assert(eq(int, rc, REDLOCK_ECONFLICT), "%s: %s", redlock_err_name(rc), e.msg);
    cr_assert(strstr(e.msg, "not reentrant") != NULL, "%s", e.msg);
    cr_assert(eq(int, tc_key_count(other, strlen(other)), 0), "the free member was kept");

    /* Another client: the holder is not its own. */
    {
        redlock_client *c2 = tc_client(NULL, -1);

        rc = redlock_acquire_with(c2, &r, 1, &o, &again, NULL, &e);
        cr_assert(eq(int, rc, REDLOCK_ECONFLICT), "%s: %s", redlock_err_name(rc), e.msg);
        cr_assert(strstr(e.msg, "not reentrant") == NULL, "%s", e.msg);
        cr_assert(strstr(e.msg, "held by another client") != NULL, "%s", e.msg);
        redlock_client_free(c2);
    }

    /* Released: this client may take it again. */
    tc_must_release(c, l);
    l = tc_must_acquire(c, res, TTL_MS, NULL);
    tc_must_release(c, l);
    redlock_client_free(c);
}

/* Another thread sharing the client holds it: the warning is said, and the
 * waiter still gets the lock when that thread releases it (a client shared
 * by threads is a supported use: examples/threads.c). */
struct mine_waiter {
    redlock_client *c;
    const char *res;
    int rc;
    redlock_lock *l;
};

static void *mine_wait(void *arg)
{
    struct mine_waiter *w = arg;
    redlock_acquire_opts o;
    redlock_error e;
    redlock_resource r = { w->res, strlen(w->res) };
    redlock_acquire_opts_init(&o);
    o.ttl_ms = TTL_MS;
    o.wait_ms = 10000;
    w->rc = redlock_acquire_with(w->c, &r, 1, &o, &w->l, NULL, &e);
    return NULL;
}

Test(acquire, a_waiter_sharing_the_holders_client_gets_it_at_the_release)
{
    char res[128];
    pthread_t th;
    redlock_client *c = mine_client();
    struct mine_waiter w = { c, res, -1, NULL };

    tc_resource(res, sizeof(res), NULL);
    redlock_lock *l = tc_must_acquire(c, res, TTL_MS, NULL);
    cr_assert(eq(int, pthread_create(&th, NULL, mine_wait, &w), 0));
    /* the waiter's first attempt met this client's key: await its word */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&mine_mu);
    while (__atomic_load_n(&mine_log_us, __ATOMIC_ACQUIRE) == 0 &&
           pthread_cond_timedwait(&mine_cv, &mine_mu, &until) == 0)
        ;
    pthread_mutex_unlock(&mine_mu);
    cr_assert(__atomic_load_n(&mine_log_us, __ATOMIC_ACQUIRE) != 0, "no warning within 5 s");
    tc_must_release(c, l);
    pthread_join(th, NULL);
    cr_assert(eq(int, w.rc, 0), "the waiter of the same client: %s", redlock_err_name(w.rc));
    cr_assert(w.l != NULL);
    tc_must_release(c, w.l);
    redlock_client_free(c);
}
