/* test-bad-input-masters.c - masters that are not what they claim, and keys
 * that are not locks.
 *
 * A majority of fake masters answering garbage is a clear error naming one
 * of them, never "no quorum"; one such master, or an address nobody
 * listens on, does not stop a lock; one whose memory check never answers
 * as a Redis does counts for nothing, whatever it answers. A key of another type under the
 * resource's name is EWRONGTYPE (never a conflict), names the master, says
 * what to do, and is left as it was. Tables are parameterized tests over
 * static arrays (TC_CASE_INDEXES).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"
#include "fake.h"

#define TTL_MS 10000u

TestSuite(bad_input, .timeout = 60);

/* ------------------------------------------------------------------------ */
/* Masters that are not what they claim                                    */
/* ------------------------------------------------------------------------ */

struct garbage_case {
    const char *reply;
    size_t len;
    int code; /* what acquire returns when 3 of 5 answer this */
    const char *why;
};

/* An initializer as a macro's body: clang-format 14 reads it as a block and
 * spreads it over four lines, so it is kept out. */
/* clang-format off */
#define GARBAGE(s, code, why) { s, sizeof(s) - 1, code, why }
/* clang-format on */

static const struct garbage_case garbage_cases[] = {
    GARBAGE("+garbage\r\n", REDLOCK_EPROTO, "status that is not OK"),
    GARBAGE(":42\r\n", REDLOCK_EPROTO, "an integer"),
    GARBAGE("*1\r\n:1\r\n", REDLOCK_EPROTO, "an array"),
    GARBAGE("$5\r\nhello\r\n", REDLOCK_EPROTO, "a bulk string"),
    GARBAGE("HTTP/1.1 400 Bad Request\r\n\r\n", REDLOCK_EPROTO, "not RESP at all"),
    GARBAGE("\x00\x01\x02\xff\r\n", REDLOCK_EPROTO, "binary noise"),
    GARBAGE("-ERR unknown command\r\n", REDLOCK_EREPLY, "an error reply"),
};

ParameterizedTestParameters(bad_input, garbage_answering_majority_is_a_clear_error)
{
    TC_CASE_INDEXES(garbage_cases);
}

/* Three fakes answering @tc's reply, then masters 3 and 4 of the cluster:
 * the fakes alone deny a quorum. */
static void three_fakes_then_two(const struct garbage_case *tc, tc_fake *fakes[3])
{
    char masters[512] = "";

    for (int i = 0; i < 3; i++) {
        fakes[i] = tc_fake_start(tc->reply, tc->len, NULL);
        strcat(masters, tc_fake_addr(fakes[i]));
        strcat(masters, ",");
    }
    strcat(masters, tc_addr(3));
    strcat(masters, ",");
    strcat(masters, tc_addr(4));
    tc_fx.masters = strdup(masters);
    cr_assert(not(zero(ptr, tc_fx.masters)));
    tc_fx.cfg.masters = tc_fx.masters;
}

ParameterizedTest(size_t *i, bad_input, garbage_answering_majority_is_a_clear_error,
                  .init = tc_fx_init, .fini = tc_fx_fini)
{
    const struct garbage_case *tc = &garbage_cases[*i];
    const redlock_error *e = &tc_fx.e;
    tc_fake *fakes[3];
    int rc;

    three_fakes_then_two(tc, fakes);
    tc_fx.cfg.retry_count = 0;
    tc_fx_client(0);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_expect(eq(int, rc, tc->code), "%s: %s: %s", tc->why, redlock_err_name(rc), e->msg);
    cr_expect(zero(ptr, tc_fx.l));
    tc_expect_msg(e, tc->why);
    /* The message names a fake master. */
    cr_expect(ge(int, e->master, 0), "%s: %s", tc->why, e->msg);
    cr_expect(le(int, e->master, 2), "%s: %s", tc->why, e->msg);
    if (e->master >= 0 && e->master <= 2)
        cr_expect(not(zero(ptr, strstr(e->msg, tc_fake_addr(fakes[e->master])))), "%s", e->msg);
    for (int k = 0; k < 3; k++)
        cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, k)->kind, REDLOCK_VOTE_ERROR),
                  "%s: fake %d voted %s (%s)", tc->why, k,
                  redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, k)->kind),
                  redlock_outcome_vote(tc_fx.out, k)->detail);
    /* The real masters got the SET; acquire cleaned up after itself (once
     * its releases have run: whether they have by the time acquire returns
     * is test-faults-kill's business). */
    tc_barrier_on(tc_fx.c, 1u << 3 | 1u << 4);
    cr_expect(eq(int, tc_get(3, tc_fx.res, tc_fx.len, NULL, 0, NULL), 0), "%s: key left", tc->why);
    cr_expect(eq(int, tc_get(4, tc_fx.res, tc_fx.len, NULL, 0, NULL), 0), "%s: key left", tc->why);
    redlock_client_free(tc_fx.c);
    tc_fx.c = NULL;
    for (int k = 0; k < 3; k++)
        tc_fake_stop(fakes[k]);
}

Test(bad_input, one_garbage_master_does_not_stop_a_lock, .init = tc_fx_init, .fini = tc_fx_fini)
{
    static const char garbage[] = "\x00\x01 not redis\r\n";
    tc_fake *fake = tc_fake_start(garbage, sizeof(garbage) - 1, NULL);
    int rc;

    tc_fx_masters_with(2, tc_fake_addr(fake));
    tc_fx_client(4);
    for (int round = 0; round < 5; round++) {
        TC_TRY(t);

        rc = tc_try_acquire(tc_fx.c, TTL_MS, &t);
        cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), t.e.msg);
        cr_expect(redlock_outcome_vote(t.out, 2)->kind != REDLOCK_VOTE_OK, "the fake voted ok");
        cr_expect(eq(int, redlock_release(tc_fx.c, t.l, NULL, &t.e), 0), "%s", t.e.msg);
        redlock_lock_free(t.l);
    }
    redlock_client_free(tc_fx.c);
    tc_fx.c = NULL;
    tc_fake_stop(fake);
}

/* A "master" that answers +OK to every command (a stub, or a proxy that
 * answers for a server it cannot reach) passes the handshake, but the
 * memory check the handshake queues before any vote (CHECK, answered by a
 * Redis with an array) gets no answer it can read: nobody knows who that
 * master is nor what it remembers, and no OK from it counts, whatever the
 * acquire sends it. Three of them and two real masters: no quorum, each
 * fake's vote excluded and saying why, nothing left on the real two. */
Test(bad_input, a_master_whose_check_fails_never_counts, .init = tc_fx_init, .fini = tc_fx_fini)
{
    static const struct garbage_case ok_to_all = GARBAGE("+OK\r\n", REDLOCK_ENOQUORUM,
                                                         "+OK to every command");
    tc_fake *fakes[3];
    int rc;

    three_fakes_then_two(&ok_to_all, fakes);
    tc_fx.cfg.retry_count = 0;
    tc_fx_client(0);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_expect(eq(int, rc, ok_to_all.code), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(zero(ptr, tc_fx.l), "a lock from two real masters and three fakes");
    for (int k = 0; k < 3; k++) {
        const redlock_vote *v = redlock_outcome_vote(tc_fx.out, k);
        cr_expect(eq(int, v->kind, REDLOCK_VOTE_EXCLUDED), "fake %d voted %s (%s)", k,
                  redlock_vote_kind_name(v->kind), v->detail);
        cr_expect(not(zero(ptr, strstr(v->detail, "not checked"))), "fake %d: %s", k, v->detail);
    }
    for (int k = 3; k < 5; k++)
        cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, k)->kind, REDLOCK_VOTE_OK),
                  "master %d voted %s", k,
                  redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, k)->kind));
    tc_barrier_on(tc_fx.c, 1u << 3 | 1u << 4);
    cr_expect(eq(int, tc_get(3, tc_fx.res, tc_fx.len, NULL, 0, NULL), 0), "key left on master 3");
    cr_expect(eq(int, tc_get(4, tc_fx.res, tc_fx.len, NULL, 0, NULL), 0), "key left on master 4");
    redlock_client_free(tc_fx.c);
    tc_fx.c = NULL;
    for (int k = 0; k < 3; k++)
        tc_fake_stop(fakes[k]);
}

Test(bad_input, dead_master_address_votes_down_with_connection_refused, .init = tc_fx_init,
     .fini = tc_fx_fini)
{
    char addr[32];
    TC_STATUS(st);
    int rc;

    snprintf(addr, sizeof(addr), "127.0.0.1:%d", tc_dead_port());
    tc_fx_masters_with(4, addr);
    /* One connection per master, so master 4 stays down with its refusal.
     * On loopback a refusal may come a loop turn after connect(): an
     * acquire that reconnected would queue its SET there, and the other
     * four could make the quorum first (a "pending" vote). */
    tc_fx.cfg.reconnect_min_ms = tc_fx.cfg.reconnect_max_ms = 60000;
    tc_fx_client(4);
    cr_assert(TC_AWAIT((redlock_ping(tc_fx.c, st, NULL),
                        redlock_status_master(st, 4)->err == REDLOCK_ECONNECT),
                       10000),
              "master 4: %s: %s", redlock_err_name(redlock_status_master(st, 4)->err),
              redlock_status_master(st, 4)->detail);
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, 4)->kind, REDLOCK_VOTE_DOWN), "voted %s (%s)",
              redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, 4)->kind),
              redlock_outcome_vote(tc_fx.out, 4)->detail);
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, 4)->err, REDLOCK_ECONNECT));
    cr_expect(not(zero(ptr,
                       strstr(redlock_outcome_vote(tc_fx.out, 4)->detail, "connection refused"))),
              "detail: %s", redlock_outcome_vote(tc_fx.out, 4)->detail);
    cr_expect(eq(int, redlock_release(tc_fx.c, tc_fx.l, NULL, &tc_fx.e), 0), "%s", tc_fx.e.msg);
}

/* ------------------------------------------------------------------------ */
/* A key of another type under the resource's name                          */
/* ------------------------------------------------------------------------ */

struct wrongtype_case {
    const char *create; /* tc_cmd format, one %b for the key */
    const char *type;   /* what TYPE answers */
    const char *size;   /* tc_cmd format giving its element count */
    long long count;
};

static const struct wrongtype_case wrongtype_cases[] = {
    { "RPUSH %b a b c", "list", "LLEN %b", 3 },
    { "HSET %b f1 v1 f2 v2", "hash", "HLEN %b", 2 },
    { "SADD %b m1 m2 m3 m4", "set", "SCARD %b", 4 },
    { "ZADD %b 1 m1", "zset", "ZCARD %b", 1 },
    { "XADD %b * f v", "stream", "XLEN %b", 1 },
};

/* Plant wrongtype_cases[@k] under @key on the masters in [@from, @to). */
static void plant_wrongtype(size_t k, const char *key, int from, int to)
{
    for (int i = from; i < to; i++) {
        redisReply *r = tc_cmd(i, wrongtype_cases[k].create, key, strlen(key));

        cr_assert(not(zero(ptr, r)), "master %d", i);
        cr_assert(ne(int, r->type, REDIS_REPLY_ERROR), "%s on master %d: %s",
                  wrongtype_cases[k].create, i, r->str);
        freeReplyObject(r);
    }
}

/* The value planted on master @i is as it was: same type, same size. */
static void expect_untouched(size_t k, const char *key, int i)
{
    const struct wrongtype_case *w = &wrongtype_cases[k];
    redisReply *r = tc_cmd(i, "TYPE %b", key, strlen(key));

    cr_assert(not(zero(ptr, r)));
    cr_expect(eq(str, r->str, (char *)w->type), "master %d: the %s became a %s", i, w->type,
              r->str);
    freeReplyObject(r);
    r = tc_cmd(i, w->size, key, strlen(key));
    cr_assert(not(zero(ptr, r)));
    cr_expect(eq(i64, r->integer, w->count), "master %d: the %s changed size", i, w->type);
    freeReplyObject(r);
}

ParameterizedTestParameters(bad_input, key_of_another_type_is_ewrongtype_not_a_conflict)
{
    TC_CASE_INDEXES(wrongtype_cases);
}

ParameterizedTest(size_t *k, bad_input, key_of_another_type_is_ewrongtype_not_a_conflict)
{
    const struct wrongtype_case *w = &wrongtype_cases[*k];
    redlock_client *c;
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    char res[128];
    int rc;

    tc_resource(res, sizeof(res), NULL);
    plant_wrongtype(*k, res, 0, tc_n());
    /* Default retries (three polls): a key of another type is said at the
     * first attempt, which reads the key when SET NX refuses it; no poll
     * waits for it to go away. EWRONGTYPE, never ECONFLICT. */
    c = tc_client(NULL, -1);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, out, &e);
    cr_expect(eq(int, rc, REDLOCK_EWRONGTYPE), "%s: %s: %s", w->type, redlock_err_name(rc), e.msg);
    cr_expect(eq(u32, redlock_outcome_attempts(out), 1), "%s: said after %u attempts", w->type,
              redlock_outcome_attempts(out));
    cr_expect(zero(ptr, l));
    tc_expect_msg(&e, w->type);
    /* Names the master and says what to do. */
    cr_expect(ge(int, e.master, 0), "%s", e.msg);
    if (e.master >= 0 && e.master < tc_n())
        cr_expect(not(zero(ptr, strstr(e.msg, tc_addr(e.master)))), "%s", e.msg);
    cr_expect(strstr(e.msg, "prefix") || strstr(e.msg, "resource name"), "no advice in: %s", e.msg);
    for (int i = 0; i < tc_n(); i++) {
        if (redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_PENDING)
            continue;
        cr_expect(eq(int, redlock_outcome_vote(out, i)->err, REDLOCK_EWRONGTYPE),
                  "%s: master %d voted %s (%s)", w->type, i,
                  redlock_vote_kind_name(redlock_outcome_vote(out, i)->kind),
                  redlock_outcome_vote(out, i)->detail);
    }
    tc_barrier(c);
    for (int i = 0; i < tc_n(); i++)
        expect_untouched(*k, res, i);
    tc_del_all(res, strlen(res));
    redlock_client_free(c);
}

Test(bad_input, release_and_extend_over_a_key_of_another_type_are_ewrongtype, .init = tc_fx_setup,
     .fini = tc_fx_fini)
{
    redlock_lock *l = NULL;
    redlock_error e;
    char res[128];
    int rc;

    tc_resource(res, sizeof(res), NULL);
    plant_wrongtype(0, res, 0, tc_n());
    cr_assert(eq(int, redlock_lock_new(res, strlen(res), "some-token", &l, NULL), 0));
    rc = redlock_release(tc_fx.c, l, NULL, &e);
    cr_expect(eq(int, rc, REDLOCK_EWRONGTYPE), "release: %s: %s", redlock_err_name(rc), e.msg);
    tc_expect_msg(&e, "release");
    rc = redlock_extend(tc_fx.c, l, TTL_MS, NULL, &e);
    cr_expect(eq(int, rc, REDLOCK_EWRONGTYPE), "extend: %s: %s", redlock_err_name(rc), e.msg);
    tc_expect_msg(&e, "extend");
    tc_barrier(tc_fx.c);
    for (int i = 0; i < tc_n(); i++)
        expect_untouched(0, res, i);
    tc_del_all(res, strlen(res));
    redlock_lock_free(l);
}

Test(bad_input, key_of_another_type_on_a_minority_still_acquires, .init = tc_fx_setup,
     .fini = tc_fx_fini)
{
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    char res[128];
    int rc;

    tc_resource(res, sizeof(res), NULL);
    plant_wrongtype(0, res, 3, 5);
    rc = redlock_acquire(tc_fx.c, res, strlen(res), TTL_MS, &l, out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    /* The masters holding the list never vote for us: each says WRONGTYPE,
     * or had not answered when the quorum decided. */
    for (int m = 3; m < 5; m++)
        cr_expect(redlock_outcome_vote(out, m)->kind == REDLOCK_VOTE_PENDING ||
                      (redlock_outcome_vote(out, m)->kind == REDLOCK_VOTE_ERROR &&
                       redlock_outcome_vote(out, m)->err == REDLOCK_EWRONGTYPE),
                  "master %d voted %d (err %s)", m, redlock_outcome_vote(out, m)->kind,
                  redlock_err_name(redlock_outcome_vote(out, m)->err));
    cr_expect(eq(int, redlock_release(tc_fx.c, l, NULL, &e), 0), "%s", e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_get(0, res, strlen(res), NULL, 0, NULL), 0));
    expect_untouched(0, res, 3);
    expect_untouched(0, res, 4);
    tc_del_all(res, strlen(res));
    redlock_lock_free(l);
}
