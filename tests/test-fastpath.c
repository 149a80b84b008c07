/* test-fastpath.c - an uncontended lock costs the masters a transaction, not a script.
 *
 * A client that knows its masters (CHECK answered on each connection, each
 * marker counts and already knows the ttl) takes one lock without a fence or
 * a place in the queue with one transaction per master - MULTI, HMGET served
 * maxttl, SET NX GET PX, EXISTS of the queue, ZADD GT of the lease's end into
 * the index, EXEC - and no script (docs/memory-guard.md, "The fast path").
 * Checked from the masters' side: their commandstats, and the index entry
 * against the key's own expiry. What the transaction must still do - refuse
 * to count where the memory is gone - is test-memory.c's
 * (flushall_refuses_a_client_that_met_the_master_before).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <hiredis/hiredis.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

#define TTL_MS 10000u

static const char held_key[] = "\0redlock:held";

TestSuite(fastpath, .init = tc_fx_setup, .fini = tc_fx_fini, .timeout = 60);

/* tc_barrier() asks every master for the status script (EVALSHA): one
 * script per master that the counts below must leave out. */
#define BARRIER_SHAS tc_n()

/* One lock taken and released at @ttl_ms: every marker has heard of the
 * ttl (the acquire script raises it) and tc_fx.c has read them since. */
static void warm(uint32_t ttl_ms)
{
    char res[128];

    tc_resource(res, sizeof(res), "warm");
    tc_must_release(tc_fx.c, tc_must_acquire(tc_fx.c, res, ttl_ms, NULL)); /* frees it */
    tc_barrier(tc_fx.c);
}

Test(fastpath, an_uncontended_acquire_is_one_transaction_and_no_script)
{
    warm(TTL_MS);
    long long exec0 = tc_calls("exec"), sha0 = tc_calls("evalsha");
    tc_fx.l = tc_must_acquire(tc_fx.c, tc_fx.res, TTL_MS, tc_fx.out);
    tc_barrier(tc_fx.c);
    cr_expect(eq(i64, tc_calls("exec") - exec0, tc_n()), "one transaction per master");
    cr_expect(eq(i64, tc_calls("evalsha") - sha0, BARRIER_SHAS), "no script for the acquire");
    cr_expect(eq(int, tc_count_token(tc_fx.res, tc_fx.len, redlock_lock_token(tc_fx.l), TTL_MS),
                 tc_n()),
              "every master holds our token");
    /* The release: where the server has a compare-and-delete, that and
     * the index's ZREM, no transaction (nobody waited); else the release
     * script, whose common case runs first. */
    const char *del = tc_native_delete();
    exec0 = tc_calls("exec");
    sha0 = tc_calls("evalsha");
    long long del0 = del ? tc_calls(del) : 0, zrem0 = tc_calls("zrem");
    tc_must_release(tc_fx.c, tc_fx.l);
    tc_fx.l = NULL;
    tc_barrier(tc_fx.c);
    if (del) {
        cr_expect(eq(i64, tc_calls("exec") - exec0, 0), "no transaction");
        cr_expect(eq(i64, tc_calls(del) - del0, tc_n()), "one %s per master", del);
        cr_expect(eq(i64, tc_calls("zrem") - zrem0, tc_n()), "one zrem per master");
        cr_expect(eq(i64, tc_calls("evalsha") - sha0, BARRIER_SHAS), "no release script");
    } else {
        cr_expect(eq(i64, tc_calls("exec") - exec0, 0));
        cr_expect(eq(i64, tc_calls("evalsha") - sha0, tc_n() + BARRIER_SHAS),
                  "one release script per master");
    }
    cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 0), "released everywhere");
}

Test(fastpath, the_index_bounds_the_lease_from_above)
{
    warm(TTL_MS);
    tc_fx.l = tc_must_acquire(tc_fx.c, tc_fx.res, TTL_MS, tc_fx.out);
    tc_barrier(tc_fx.c);
    /* The entry is the lease's, named by its token (script.c). */
    char token[REDLOCK_TOKEN_MAX + 1];
    snprintf(token, sizeof(token), "%s", redlock_lock_token(tc_fx.l));
    for (int m = 0; m < tc_n(); m++) {
        redisReply *s = tc_cmd(m, "ZSCORE %b %s", held_key, sizeof(held_key) - 1, token);
        redisReply *p = tc_cmd(m, "PEXPIRETIME %b", tc_fx.res, tc_fx.len);
        cr_assert(s && s->type == REDIS_REPLY_STRING, "master %d: no index entry for the lease", m);
        cr_assert(p && p->type == REDIS_REPLY_INTEGER && p->integer > 0);
        long long score = atoll(s->str), end = p->integer;
        /* Above the key's end (the holder's belief ends before it), and by
         * no more than the drift allowance: ttl x 1 % plus the clock
         * reference's age x 1 % (at most 10 s) plus a round trip. */
        cr_expect(ge(i64, score, end), "master %d: index %lld before the key's end %lld", m, score,
                  end);
        cr_expect(le(i64, score, end + TTL_MS / 100 + 100 + 50), "master %d: index %lld, key %lld",
                  m, score, end);
        freeReplyObject(s);
        freeReplyObject(p);
    }
    tc_must_release(tc_fx.c, tc_fx.l);
    tc_fx.l = NULL;
    tc_barrier(tc_fx.c);
    for (int m = 0; m < tc_n(); m++) {
        redisReply *s = tc_cmd(m, "ZSCORE %b %s", held_key, sizeof(held_key) - 1, token);
        cr_expect(s && s->type == REDIS_REPLY_NIL, "master %d: the release left the index entry",
                  m);
        freeReplyObject(s);
    }
}

Test(fastpath, a_waiter_that_wins_at_once_takes_no_place_in_the_queue)
{
    warm(TTL_MS);
    long long sha0 = tc_calls("evalsha");
    redlock_resource one = { tc_fx.res, tc_fx.len };
    redlock_acquire_opts o;
    redlock_acquire_opts_init(&o);
    o.ttl_ms = TTL_MS;
    o.wait_ms = 5000;
    int rc = redlock_acquire_with(tc_fx.c, &one, 1, &o, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s", tc_fx.e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(i64, tc_calls("evalsha") - sha0, BARRIER_SHAS),
              "no script: no place taken, none left");
    char q[160];
    memcpy(q, tc_fx.res, tc_fx.len);
    memcpy(q + tc_fx.len, "\0q", 2);
    cr_expect(eq(int, tc_key_count(q, tc_fx.len + 2), 0), "a queue key was written");
}

Test(fastpath, a_longer_ttl_takes_the_script_once_then_the_fast_path)
{
    warm(TTL_MS);
    /* A ttl no marker has heard of: the script, which raises their bound. */
    long long exec0 = tc_calls("exec"), sha0 = tc_calls("evalsha");
    redlock_lock *l = tc_must_acquire(tc_fx.c, tc_fx.res, 2 * TTL_MS, NULL);
    tc_barrier(tc_fx.c);
    cr_expect(eq(i64, tc_calls("exec") - exec0, 0));
    cr_expect(eq(i64, tc_calls("evalsha") - sha0, tc_n() + BARRIER_SHAS),
              "the acquire script on every master");
    tc_must_release(tc_fx.c, l);
    tc_barrier(tc_fx.c);
    /* The script's answers told the client the markers' new bound. */
    exec0 = tc_calls("exec");
    tc_fx.l = tc_must_acquire(tc_fx.c, tc_fx.res, 2 * TTL_MS, NULL);
    tc_barrier(tc_fx.c);
    cr_expect(eq(i64, tc_calls("exec") - exec0, tc_n()), "the fast path, now that they know");
}

Test(fastpath, a_key_of_another_type_says_wrongtype_at_once)
{
    warm(TTL_MS);
    for (int m = 0; m < tc_n(); m++)
        freeReplyObject(tc_cmd(m, "RPUSH %b x", tc_fx.res, tc_fx.len));
    long long exec0 = tc_calls("exec");
    int rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_expect(eq(int, rc, REDLOCK_EWRONGTYPE), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(eq(u32, redlock_outcome_attempts(tc_fx.out), 1),
              "said at the first attempt, not after the polls");
    cr_expect(gt(i64, tc_calls("exec"), exec0), "the fast path was not taken");
    for (int m = 0; m < tc_n(); m++) {
        redisReply *r = tc_cmd(m, "LLEN %b", tc_fx.res, tc_fx.len);
        cr_expect(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1,
                  "master %d: the list was touched", m);
        freeReplyObject(r);
    }
    tc_del_all(tc_fx.res, tc_fx.len);
}
