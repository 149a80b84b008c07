/* test-native.c - servers with native commands: the release without Lua, the extend's script.
 *
 * Suite `native` needs masters that have SET IFEQ (Valkey >= 8.1, Redis >=
 * 8.4; its release tests a native delete, Valkey >= 9.0, Redis >= 8.4): run
 * it with REDLOCK_SERVER at one, e.g.
 *   REDLOCK_SERVER=$(tools/deps.sh --valkey9) meson test -C build --suite native
 * Its cluster (three masters) then runs that server, and each test adds
 * three masters of Debian 12's redis-server 7.0 ($REDLOCK_TEST_OLD_SERVER to
 * choose another) on ports of its block: a fleet of five, masters 0 and 1
 * native, 2..4 not, whose quorum needs both kinds. Without such a server
 * every test of the suite is skipped, and says so on stderr: it cannot pass
 * where nothing native ran.
 *
 * Suite `lying` needs no such server: a fake master claims a version with a
 * native delete and answers it wrongly (docs/memory-guard.md, "The release
 * without Lua"; docs/errors.md, "Master answering garbage").
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <hiredis/hiredis.h>

#include <redlock.h>

#include "await.h"
#include "cluster.h"
#include "core.h"
#include "fake.h"
#include "servers.h"

#define TTL_MS 10000u
#define N_OLD 3

static const char held_key[] = "\0redlock:held";

/* ---- the mixed fleet --------------------------------------------------------- */

static int fleet_port[2 + N_OLD];

/* "valkey_version:9.1.2" or "redis_version:8.4.0" of master @i of the
 * cluster says it has SET IFEQ (the library no longer sends it: the
 * suite checks that such a master gets the extend's script). */
static bool cluster_is_native(char *version, size_t size)
{
    redisReply *r = tc_cmd(0, "INFO server");
    bool native = false;
    const char *v = NULL;
    snprintf(version, size, "unknown");
    if (r && r->type == REDIS_REPLY_STRING) {
        v = strstr(r->str, "valkey_version:");
        bool valkey = v != NULL;
        v = v ? v + 15 : strstr(r->str, "redis_version:");
        v = v && !valkey ? v + 14 : v;
        if (v) {
            int major = 0, minor = 0;
            sscanf(v, "%d.%d", &major, &minor);
            snprintf(version, size, "%s %d.%d", valkey ? "valkey" : "redis", major, minor);
            native = valkey ? major > 8 || (major == 8 && minor >= 1)
                            : major > 8 || (major == 8 && minor >= 4);
        }
    }
    freeReplyObject(r);
    return native;
}

static void need_native(void)
{
    char version[64];
    if (cluster_is_native(version, sizeof(version)))
        return;
    fprintf(stderr,
            "test-native: SKIPPED: the cluster runs %s, which has no SET IFEQ: nothing native "
            "to test (REDLOCK_SERVER=$(tools/deps.sh --valkey9) meson test --suite native)\n",
            version);
    cr_skip_test("the cluster's server (%s) has no SET IFEQ: set REDLOCK_SERVER to Valkey >= 8.1 "
                 "or Redis >= 8.4 (tools/deps.sh --valkey9)",
                 version);
}

/* Masters 0 and 1 of the cluster, then N_OLD servers of the old kind;
 * the new ones declared empty, and tc_fx.c a client of all five that logs. */
static void fleet_up(void)
{
    const char *old = getenv("REDLOCK_TEST_OLD_SERVER");
    char masters[256], port[16];
    int len = snprintf(masters, sizeof(masters), "%s,%s", tc_addr(0), tc_addr(1));
    fleet_port[0] = tc_port(0);
    fleet_port[1] = tc_port(1);
    for (int k = 0; k < N_OLD; k++) {
        fleet_port[2 + k] = tc_block_port(5 + k);
        snprintf(port, sizeof(port), "%d", fleet_port[2 + k]);
        const char *args[] = { "--port", port, NULL };
        tc_redis_start_with(old && *old ? old : "redis-server", args);
        len += snprintf(masters + len, sizeof(masters) - (size_t)len, ",127.0.0.1:%s", port);
    }
    tc_fx.masters = strdup(masters);
    tc_fx.cfg.masters = tc_fx.masters;
    tc_fx.cfg.log_fn = tc_log;
    tc_fx.cfg.log_level = REDLOCK_LOG_INFO;
    redlock_client *d = tc_client(&tc_fx.cfg, -1);
    size_t declared = 0;
    cr_assert(eq(int, redlock_declare_empty(d, &declared, &tc_fx.e), 0), "%s", tc_fx.e.msg);
    redlock_client_free(d);
    tc_fx_client(-1);
}

static void native_init(void)
{
    tc_fx_init();
    need_native();
}

TestSuite(native, .init = native_init, .fini = tc_fx_fini, .timeout = 90);

/* A number of INFO @section's @field on the master at @port ("cmdstat_x":
 * its calls=), 0 if absent. */
static long long stat_of(int port, const char *section, const char *field)
{
    redisContext *r = redisConnect("127.0.0.1", port);
    cr_assert(r && !r->err, "connect to %d", port);
    redisReply *rep = redisCommand(r, "INFO %s", section);
    long long v = 0;
    char name[80];
    snprintf(name, sizeof(name), "\n%s:", field);
    const char *p = rep && rep->type == REDIS_REPLY_STRING ? strstr(rep->str, name) : NULL;
    if (p) {
        p += strlen(name);
        const char *calls = strncmp(p, "calls=", 6) == 0 ? p + 6 : p;
        v = strtoll(calls, NULL, 10);
    }
    freeReplyObject(rep);
    redisFree(r);
    return v;
}

/* ZSCORE of the index entry and PEXPIRETIME of the lock on @port. */
static void index_and_expiry(int port, long long *score, long long *expiry)
{
    redisContext *r = redisConnect("127.0.0.1", port);
    cr_assert(r && !r->err, "connect to %d", port);
    redisReply *z = redisCommand(r, "ZSCORE %b %s", held_key, sizeof(held_key) - 1,
                                 redlock_lock_token(tc_fx.l));
    redisReply *e = redisCommand(r, "PEXPIRETIME %b", tc_fx.res, tc_fx.len);
    *score = z && z->type == REDIS_REPLY_STRING ? strtoll(z->str, NULL, 10) : -1;
    *expiry = e && e->type == REDIS_REPLY_INTEGER ? e->integer : -3;
    freeReplyObject(z);
    freeReplyObject(e);
    redisFree(r);
}

Test(native, a_mixed_fleet_extends_by_script_and_releases_natively)
{
    enum { CYCLES = 5, EXTENDS = 3 };
    long long sha0[5], exec0[5], del0[5];
    const char *del = tc_native_delete(); /* the release too, on Valkey 9 and Redis 8.4 */
    char del_stat[32];
    snprintf(del_stat, sizeof(del_stat), "cmdstat_%s", del ? del : "none");

    fleet_up();
    tc_must_release(tc_fx.c,
                    tc_must_acquire(tc_fx.c, tc_fx.res, TTL_MS, NULL)); /* markers learn the ttl */
    tc_barrier(tc_fx.c);
    for (int m = 0; m < 5; m++) {
        sha0[m] = stat_of(fleet_port[m], "commandstats", "cmdstat_evalsha");
        exec0[m] = stat_of(fleet_port[m], "commandstats", "cmdstat_exec");
        del0[m] = stat_of(fleet_port[m], "commandstats", del_stat);
    }
    for (int i = 0; i < CYCLES; i++) {
        tc_fx.l = tc_must_acquire(tc_fx.c, tc_fx.res, TTL_MS, NULL);
        for (int k = 0; k < EXTENDS; k++) {
            int rc = redlock_extend(tc_fx.c, tc_fx.l, TTL_MS, tc_fx.out, &tc_fx.e);
            cr_assert(eq(int, rc, 0), "extend %d of cycle %d: %s", k, i, tc_fx.e.msg);
            /* OK, or not heard yet when a quorum had answered. */
            for (int m = 0; m < 5; m++)
                cr_expect(redlock_outcome_vote(tc_fx.out, m)->kind == REDLOCK_VOTE_OK ||
                              redlock_outcome_vote(tc_fx.out, m)->kind == REDLOCK_VOTE_PENDING,
                          "master %d: %s (%s)", m,
                          redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, m)->kind),
                          redlock_outcome_vote(tc_fx.out, m)->detail);
        }
        /* The extends returned at quorum: let each run everywhere before
         * reading index and expiry (two reads, not one instant). */
        tc_barrier(tc_fx.c);
        /* The index bounds the lease from above on the native masters too
         * (the script sets it to the key's own expiry). */
        for (int m = 0; m < 2; m++) {
            long long score, expiry;
            index_and_expiry(fleet_port[m], &score, &expiry);
            cr_expect(ge(i64, score, expiry), "master %d: index %lld below the key's end %lld", m,
                      score, expiry);
        }
        tc_must_release(tc_fx.c, tc_fx.l);
        tc_fx.l = NULL;
    }
    tc_barrier(tc_fx.c); /* one status script per master, as each cycle's */
    for (int m = 0; m < 5; m++) {
        long long sha = stat_of(fleet_port[m], "commandstats", "cmdstat_evalsha") - sha0[m];
        long long exec = stat_of(fleet_port[m], "commandstats", "cmdstat_exec") - exec0[m];
        long long dels = stat_of(fleet_port[m], "commandstats", del_stat) - del0[m];
        cr_log_info("master %d: %lld evalsha, %lld exec, %lld %s over %d cycles", m, sha, exec,
                    dels, del ? del : "-", CYCLES);
        /* The releases: by the server's compare-and-delete where it has
         * one (the acquires took the fast path), by script elsewhere. */
        if (del)
            cr_expect(eq(i64, dels, m < 2 ? CYCLES : 0), "master %d: %lld %s", m, dels, del);
        if (m < 2) {
            /* The extends (the script: SET IFEQ is not used), the releases
             * and the barriers; only the acquires are transactions. */
            cr_expect(ge(i64, sha, CYCLES * EXTENDS), "master %d (native): %lld scripts", m, sha);
            cr_expect(le(i64, sha, (3 + EXTENDS) * CYCLES + 1), "master %d (native): %lld scripts",
                      m, sha);
            cr_expect(le(i64, exec, CYCLES), "master %d (native): %lld exec", m, exec);
        } else {
            /* Acquires and extends, and the barriers. */
            cr_expect(ge(i64, sha, CYCLES * (EXTENDS + 2) + 1), "master %d (old): %lld scripts", m,
                      sha);
        }
    }
    if (del)
        cr_expect(tc_log_has(tc_addr(0), "release by DEL"), "%s", tc_log_text());
}

/* A client of master 0 alone (every vote is heard before the extend
 * returns), whose marker knows the ttl; tc_fx.l a lock handle of @token, the
 * key planted with it. */
static void one_native_master(const char *token)
{
    tc_fx.cfg.masters = tc_addr(0);
    tc_fx.c = tc_client(&tc_fx.cfg, -1);
    char warm[128];
    tc_resource(warm, sizeof(warm), "warm");
    tc_must_release(tc_fx.c, tc_must_acquire(tc_fx.c, warm, TTL_MS, NULL));
    tc_barrier(tc_fx.c);
    tc_plant(0, tc_fx.res, tc_fx.len, token, TTL_MS);
    cr_assert(eq(int, redlock_lock_new(tc_fx.res, tc_fx.len, token, &tc_fx.l, &tc_fx.e), 0), "%s",
              tc_fx.e.msg);
}

/* Calls of @cmd on master 0 (none yet: absent from commandstats). */
static long long calls0(const char *cmd)
{
    char field[64];
    snprintf(field, sizeof(field), "cmdstat_%s", cmd);
    long long v = tc_info_num(0, "commandstats", field);
    return v > 0 ? v : 0;
}

/* redlock_extend() of tc_fx.l on master 0, which has SET IFEQ: it goes as
 * the script (no EXEC; where the vote is excluded the client then settles
 * the master, by script too); its vote must be @kind with @err. */
static void extend_by_script(int kind, int err)
{
    long long exec = calls0("exec"), sha = calls0("evalsha");
    int rc = redlock_extend(tc_fx.c, tc_fx.l, TTL_MS, tc_fx.out, &tc_fx.e);
    /* A vote that does not count fails a one-master extend as "no quorum". */
    int want = kind == REDLOCK_VOTE_OK         ? 0
               : kind == REDLOCK_VOTE_EXCLUDED ? REDLOCK_ENOQUORUM
                                               : err;
    cr_expect(eq(int, rc, want), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, 0)->kind, kind), "%s (%s)",
              redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, 0)->kind),
              redlock_outcome_vote(tc_fx.out, 0)->detail);
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, 0)->err, err), "%s",
              redlock_err_name(redlock_outcome_vote(tc_fx.out, 0)->err));
    exec = calls0("exec") - exec;
    sha = calls0("evalsha") - sha;
    cr_expect(eq(i64, exec, 0), "no transaction, not %lld (and %lld scripts)", exec, sha);
    cr_expect(ge(i64, sha, 1), "the script, not %lld", sha);
}

/* Every outcome of an extend on a master that has SET IFEQ, by the script:
 * extended; another's key left alone; gone, nothing resurrected; and, once
 * FLUSHALL took the marker, excluded (the script reads that the master's
 * memory does not count and writes nothing). */
Test(native, an_extend_on_a_native_master_is_the_script_in_every_outcome)
{
    static const char token[] = "00112233445566778899aabbccddeeff";
    one_native_master(token);
    extend_by_script(REDLOCK_VOTE_OK, 0);
    long long pttl;
    cr_expect(eq(int, tc_get(0, tc_fx.res, tc_fx.len, NULL, 0, &pttl), 1));
    cr_expect(gt(i64, pttl, TTL_MS - 1000), "extended: pttl %lld", pttl);

    tc_plant(0, tc_fx.res, tc_fx.len, "someone-else", 2000);
    extend_by_script(REDLOCK_VOTE_HELD, REDLOCK_ENOTHELD);
    char val[64];
    cr_expect(eq(int, tc_get(0, tc_fx.res, tc_fx.len, val, sizeof(val), &pttl), 1));
    cr_expect(eq(str, val, "someone-else"), "the other holder's key is untouched");
    cr_expect(le(i64, pttl, 2000), "and its ttl too: %lld", pttl);

    tc_del_all(tc_fx.res, tc_fx.len);
    extend_by_script(REDLOCK_VOTE_GONE, REDLOCK_ENOTHELD);
    cr_expect(eq(int, tc_get(0, tc_fx.res, tc_fx.len, NULL, 0, NULL), 0), "nothing resurrected");

    tc_plant(0, tc_fx.res, tc_fx.len, token, TTL_MS);
    redisReply *r = tc_cmd(0, "FLUSHALL");
    freeReplyObject(r);
    extend_by_script(REDLOCK_VOTE_EXCLUDED, REDLOCK_EUNTRUSTED);
    cr_expect(eq(int, tc_get(0, tc_fx.res, tc_fx.len, NULL, 0, NULL), 0), "nothing resurrected");
}

/* ---- the release without Lua ------------------------------------------------------ */

static const char *need_native_delete(void)
{
    const char *del = tc_native_delete();
    if (!del)
        cr_skip_test("the cluster's server has no DELIFEQ or DELEX: the release stays a script "
                     "(REDLOCK_SERVER=$(tools/deps.sh --valkey9) or --redis8)");
    return del;
}

/* How many masters hold @token marked for its waiters (@token "\2"), and
 * (*@plain) how many hold it unmarked. A test before may have flushed a
 * master, which then sits out its window: count, and ask for a majority. */
static int marked_on(const char *token, int *plain)
{
    char want[REDLOCK_TOKEN_MAX + 2], val[REDLOCK_TOKEN_MAX + 2];
    snprintf(want, sizeof(want), "%s\2", token);
    int marked = 0;
    *plain = 0;
    for (int m = 0; m < tc_n(); m++) {
        if (tc_get(m, tc_fx.res, tc_fx.len, val, sizeof(val), NULL) != 1)
            continue;
        marked += strcmp(val, want) == 0;
        *plain += strcmp(val, token) == 0;
    }
    return marked;
}

static bool marked_where_held(const char *token)
{
    int plain, marked = marked_on(token, &plain);
    return plain == 0 && marked >= tc_n() / 2 + 1;
}

typedef struct native_waiter {
    redlock_client *c;
    const char *res;
    int rc;
    uint64_t done_us;
    redlock_lock *lock;
} native_waiter;

#define SLOW_POLL_MS 1500u /* the waiter's poll: a grant sooner is the hand-off's */

static void *native_wait(void *arg)
{
    native_waiter *w = arg;
    redlock_acquire_opts o;
    redlock_acquire_opts_init(&o);
    o.ttl_ms = TTL_MS;
    o.wait_ms = 20000;
    o.retry_delay_ms = SLOW_POLL_MS;
    o.retry_jitter_ms = 0;
    redlock_resource r = { w->res, strlen(w->res) };
    w->rc = redlock_acquire_with(w->c, &r, 1, &o, &w->lock, NULL, NULL);
    w->done_us = tc_now_us();
    return NULL;
}

/* The holder took the fast path, so its release goes without Lua; a waiter
 * that queued meanwhile marked the key, so the compare-and-delete fails on
 * every master and the same slot sends the script, which hands the key on:
 * the waiter has it long before its poll; status and extend see the holder's
 * own token through the mark (docs/memory-guard.md,
 * "The release without Lua"). */
Test(native, a_waiter_marks_the_key_and_the_release_hands_it_over)
{
    const char *del = need_native_delete();
    tc_fx_client(-1);
    char warm[128];
    tc_resource(warm, sizeof(warm), "warm");
    tc_must_release(tc_fx.c, tc_must_acquire(tc_fx.c, warm, TTL_MS, NULL));
    tc_barrier(tc_fx.c);
    tc_fx.l = tc_must_acquire(tc_fx.c, tc_fx.res, TTL_MS, NULL);
    char token[REDLOCK_TOKEN_MAX + 1];
    snprintf(token, sizeof(token), "%s", redlock_lock_token(tc_fx.l));

    native_waiter w = { tc_client(&tc_fx.cfg, -1), tc_fx.res, -100, 0, NULL };
    pthread_t t;
    pthread_create(&t, NULL, native_wait, &w);
    cr_assert(TC_AWAIT(marked_where_held(token), 5000), "the waiter's place never marked the key");

    TC_STATUS(st);
    cr_expect(eq(int, redlock_status_get(tc_fx.c, tc_fx.res, tc_fx.len, st, &tc_fx.e), 0), "%s",
              tc_fx.e.msg);
    cr_expect(eq(str, (char *)redlock_status_majority_token(st), token), "the mark is no token");
    cr_expect(eq(int, redlock_extend(tc_fx.c, tc_fx.l, TTL_MS, tc_fx.out, &tc_fx.e), 0),
              "a marked key is still ours to extend: %s", tc_fx.e.msg);
    cr_expect(marked_where_held(token), "the extend kept the mark");

    tc_barrier(tc_fx.c);
    long long del0 = tc_calls(del), sha0 = tc_calls("evalsha");
    uint64_t released = tc_now_us();
    tc_must_release(tc_fx.c, tc_fx.l);
    tc_fx.l = NULL;
    pthread_join(t, NULL);
    cr_assert(eq(int, w.rc, 0), "the waiter got the lock (%s)", redlock_err_name(w.rc));
    long ms = (long)((w.done_us - released) / 1000);
    /* A poll would come 1.5 s after the waiter's last attempt; the hand-off
     * is a few ms (the bound has a loaded machine's slack). */
    cr_expect(lt(i64, ms, 1000), "handed over after %ld ms", ms);
    tc_barrier(w.c);
    /* Where the holder took the fast path (a majority at least), the
     * compare-and-delete first, then the script for the hand-over. */
    long long dels = tc_calls(del) - del0;
    cr_expect(ge(i64, dels, tc_n() / 2 + 1), "%lld %s: a majority tried it first", dels, del);
    cr_expect(ge(i64, tc_calls("evalsha") - sha0, dels), "then the script, for the hand-over");
    tc_must_release(w.c, w.lock);
    redlock_client_free(w.c);
}

/* A lease's index entry is named by its token: the release of a lock that
 * expired, whose key another client took since, removes its own entry and
 * never the new holder's (LEASES must see every live lease:
 * docs/memory-guard.md, "The release without Lua"). Both releases go without
 * Lua where the server can. */
Test(native, a_late_release_leaves_the_next_holders_index_entry)
{
    need_native_delete();
    tc_fx_client(-1);
    char warm[128];
    tc_resource(warm, sizeof(warm), "warm");
    tc_must_release(tc_fx.c, tc_must_acquire(tc_fx.c, warm, 300, NULL));
    tc_barrier(tc_fx.c);
    redlock_lock *old = tc_must_acquire(tc_fx.c, tc_fx.res, 300, NULL);
    char old_token[REDLOCK_TOKEN_MAX + 1];
    snprintf(old_token, sizeof(old_token), "%s", redlock_lock_token(old));
    cr_assert(TC_AWAIT(tc_key_count(tc_fx.res, tc_fx.len) == 0, 3000), "the short lock expired");
    tc_fx.l = tc_must_acquire(tc_fx.c, tc_fx.res, TTL_MS, NULL);
    tc_barrier(tc_fx.c);
    TC_OUTCOME(out);
    cr_expect(eq(int, redlock_release(tc_fx.c, old, out, &tc_fx.e), REDLOCK_ENOTHELD), "%s",
              tc_fx.e.msg);
    redlock_lock_free(old);
    tc_barrier(tc_fx.c);
    /* Wherever the holder's key is (a majority: a test before may have
     * flushed a master), so is its entry, and the old lease's is not. */
    int held = 0;
    for (int m = 0; m < tc_n(); m++) {
        char val[REDLOCK_TOKEN_MAX + 2];
        if (tc_get(m, tc_fx.res, tc_fx.len, val, sizeof(val), NULL) != 1 ||
            strcmp(val, redlock_lock_token(tc_fx.l)) != 0)
            continue;
        held++;
        redisReply *z = tc_cmd(m, "ZSCORE %b %s", held_key, sizeof(held_key) - 1,
                               redlock_lock_token(tc_fx.l));
        cr_expect(z && z->type == REDIS_REPLY_STRING, "master %d: the holder's entry is gone", m);
        freeReplyObject(z);
        z = tc_cmd(m, "ZSCORE %b %s", held_key, sizeof(held_key) - 1, old_token);
        cr_expect(z && z->type == REDIS_REPLY_NIL, "master %d: the old lease's entry stayed", m);
        freeReplyObject(z);
    }
    cr_expect(ge(int, held, tc_n() / 2 + 1), "the holder's key on %d masters", held);
}

/* An ACL written before the release without Lua (README: the ACL line has
 * no +delifeq or +delex): the transaction is refused there (NOPERM), the
 * slot sends the script at once, the release succeeds, a warning says so,
 * and the next release is the script from the start. */
Test(native, an_acl_without_the_delete_costs_one_script_and_a_warning)
{
    const char *del = need_native_delete();
    for (int m = 0; m < tc_n(); m++) {
        redisReply *r = tc_cmd(m, "ACL SETUSER nodel on >nodel-pw ~* &* +@all -%s", del);
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "ACL SETUSER on master %d: %s", m,
                  r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
        freeReplyObject(r);
    }
    tc_fx.cfg.username = "nodel";
    tc_fx.cfg.password = "nodel-pw";
    tc_fx.cfg.log_fn = tc_log;
    tc_fx.cfg.log_level = REDLOCK_LOG_WARN;
    tc_fx_client(-1);
    char warm[128];
    tc_resource(warm, sizeof(warm), "warm");
    tc_must_release(tc_fx.c, tc_must_acquire(tc_fx.c, warm, TTL_MS, NULL));
    tc_barrier(tc_fx.c);
    for (int round = 0; round < 2; round++) {
        tc_fx.l = tc_must_acquire(tc_fx.c, tc_fx.res, TTL_MS, NULL);
        int rc = redlock_release(tc_fx.c, tc_fx.l, tc_fx.out, &tc_fx.e);
        cr_expect(eq(int, rc, 0), "round %d: %s: %s", round, redlock_err_name(rc), tc_fx.e.msg);
        for (int m = 0; m < tc_n(); m++) {
            int k = redlock_outcome_vote(tc_fx.out, m)->kind;
            cr_expect(k == REDLOCK_VOTE_OK || k == REDLOCK_VOTE_PENDING,
                      "round %d master %d: %s (%s)", round, m, redlock_vote_kind_name(k),
                      redlock_outcome_vote(tc_fx.out, m)->detail);
        }
        redlock_lock_free(tc_fx.l);
        tc_fx.l = NULL;
        tc_barrier(tc_fx.c);
        cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 0), "round %d: released everywhere",
                  round);
    }
    cr_expect(tc_log_contains("NOPERM"), "%s", tc_log_text());
}

/* ---- masters still to answer when the acquire decided ---------------------------- */

/* The acquire with the last master paused: decided by the others' grants,
 * the paused master's fast path still queued on its connection. Returns
 * the acquire's code; the master stays paused. */
static int acquire_with_last_paused(void)
{
    tc_pause(tc_n() - 1);
    return redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, NULL, &tc_fx.e);
}

/* A client whose fast path every master takes: a test before may have
 * flushed a master, which would sit out its window (and so not grant by
 * the fast path): the masters start empty, declared so. */
static void guess_client(void)
{
    tc_fx.cfg.node_timeout_ms = 5000; /* the paused master must not time out */
    for (int m = 0; m < tc_n(); m++)
        freeReplyObject(tc_cmd(m, "FLUSHALL"));
    redlock_client *d = tc_client(&tc_fx.cfg, -1);
    size_t declared = 0;
    cr_assert(eq(int, redlock_declare_empty(d, &declared, &tc_fx.e), 0), "%s", tc_fx.e.msg);
    redlock_client_free(d);
    tc_fx_client(-1);
    char warm[128];
    tc_resource(warm, sizeof(warm), "warm");
    tc_must_release(tc_fx.c, tc_must_acquire(tc_fx.c, warm, TTL_MS, NULL));
    tc_barrier(tc_fx.c);
}

/* A caller that releases at once releases before the master that was not
 * needed for the quorum has answered. Every master that answered granted
 * with nobody queued: the release guesses that one did too and sends it
 * the compare-and-delete as well, behind the acquire on its connection
 * (docs/memory-guard.md, "The release without Lua"): no script anywhere. */
Test(native, a_master_still_to_answer_is_released_without_lua_too)
{
    const char *del = need_native_delete();
    guess_client();
    long long del0 = tc_calls(del), sha0 = tc_calls("evalsha");
    int rc = acquire_with_last_paused();
    int rel = rc ? -1 : redlock_release(tc_fx.c, tc_fx.l, NULL, &tc_fx.e);
    tc_resume(tc_n() - 1);
    cr_assert(eq(int, rc, 0), "%s", tc_fx.e.msg);
    cr_assert(eq(int, rel, 0), "%s", tc_fx.e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(i64, tc_calls(del) - del0, tc_n()), "the delete on every master");
    cr_expect(eq(i64, tc_calls("evalsha") - sha0, tc_n()), "no script but the barrier's");
    cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 0), "released everywhere");
}

/* The guess was wrong: the paused master held the key for another client,
 * so its fast path refused, and the delete behind it deleted nothing. Its
 * 0 sends the script on the same slot, which finds the other's key and
 * leaves it. */
Test(native, a_wrong_guess_costs_one_script_and_deletes_nothing_of_another)
{
    const char *del = need_native_delete();
    guess_client();
    int last = tc_n() - 1;
    tc_plant(last, tc_fx.res, tc_fx.len, "someone-else", TTL_MS);
    long long del0 = tc_calls(del), sha0 = tc_calls("evalsha");
    int rc = acquire_with_last_paused();
    int rel = rc ? -1 : redlock_release(tc_fx.c, tc_fx.l, NULL, &tc_fx.e);
    tc_resume(last);
    cr_assert(eq(int, rc, 0), "%s", tc_fx.e.msg);
    cr_assert(eq(int, rel, 0), "%s", tc_fx.e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(i64, tc_calls(del) - del0, tc_n()), "the delete on every master");
    cr_expect(eq(i64, tc_calls("evalsha") - sha0, tc_n() + 1), "one script: the redo");
    char val[64];
    cr_expect(eq(int, tc_get(last, tc_fx.res, tc_fx.len, val, sizeof(val), NULL), 1));
    cr_expect(eq(str, val, "someone-else"), "the other's key stays");
}

/* An answer that comes before the release settles the guess: a grant with
 * somebody queued there (a place left in the queue) gets the script, which
 * hands over; the others still go without Lua. */
Test(native, an_answer_before_the_release_settles_the_guess)
{
    const char *del = need_native_delete();
    guess_client();
    int last = tc_n() - 1;
    char q[160];
    size_t ql = tc_fx.len;
    memcpy(q, tc_fx.res, ql);
    q[ql++] = '\0';
    q[ql++] = 'q';
    freeReplyObject(tc_cmd(last, "ZADD %b 1 %s", q, ql, "garbage-place"));
    long long del0 = tc_calls(del), sha0 = tc_calls("evalsha");
    int rc = acquire_with_last_paused();
    tc_resume(last);
    cr_assert(eq(int, rc, 0), "%s", tc_fx.e.msg);
    tc_barrier(tc_fx.c); /* the late answer: granted, somebody queued */
    cr_assert(eq(int, redlock_release(tc_fx.c, tc_fx.l, NULL, &tc_fx.e), 0), "%s", tc_fx.e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(i64, tc_calls(del) - del0, tc_n() - 1), "the delete where nobody was queued");
    cr_expect(eq(i64, tc_calls("evalsha") - sha0, 2 * tc_n() + 1), "the script where somebody was");
    cr_expect(eq(int, tc_key_count(tc_fx.res, tc_fx.len), 0), "released everywhere");
}

/* ---- a master that claims a native delete and lies --------------------------------- */

TestSuite(lying, .init = tc_fx_init, .fini = tc_fx_fini, .timeout = 60);

/* A transaction's HMGET marker served maxttl on a master whose memory
 * counts for any ttl (cmd.c). */
#define SERVED "*2\r\n$1\r\n1\r\n$7\r\n3600000\r\n"

/* A fake master whose INFO carries @versions ("valkey_version:9.1.2\r\n"
 * and the like), whose memory counts at once, which refuses or garbles SET
 * IFEQ with @set (its reply inside MULTI) and @exec, answers DELIFEQ with
 * @del (NULL: "unknown command") and every script 1; tc_fx.c a client of masters 0 and 1 of the
 * cluster, the fake (2) and two dead ports, so that the fake's vote is needed; tc_fx.l a handle of
 * a lock planted by hand on the two real masters (the fake cannot grant
 * it: it answers an acquire's transaction the same way). */
static tc_fake *liar_fleet(const char *versions, const char *set, const char *exec, const char *del)
{
    static const char token[] = "0123456789abcdef0123456789abcdef";
    char body[256], info[300];
    snprintf(body, sizeof(body),
             "# Server\r\n%srun_id:0123456789abcdef0123456789abcdef01234567\r\n", versions);
    snprintf(info, sizeof(info), "$%zu\r\n%s\r\n", strlen(body), body);
    const tc_fake_rule rules[] = {
        { "SCRIPT", "$40\r\n0000000000000000000000000000000000000000\r\n" },
        { "INFO", info },
        /* CHECK: {age, window, maxttl, counts, no cause, now, no birth} */
        { "EVAL", "*7\r\n:100000\r\n:0\r\n:3600000\r\n:0\r\n:0\r\n:1700000000000\r\n$0\r\n\r\n" },
        { "CONFIG", "*0\r\n" },
        { "PING", "+PONG\r\n" },
        { "TIME", "*2\r\n$10\r\n1700000000\r\n$1\r\n0\r\n" },
        { "MULTI", "+OK\r\n" },
        { "HMGET", "+QUEUED\r\n" },
        { "GET", "+QUEUED\r\n" },
        { "ZADD", "+QUEUED\r\n" },
        { "EXISTS", "+QUEUED\r\n" },
        { "ZREM", "+QUEUED\r\n" },
        { "SET", set },
        { "EXEC", exec },
        { "DELIFEQ", del ? del : "-ERR unknown command 'DELIFEQ'\r\n" },
        { "EVALSHA", ":1\r\n" }, /* the release and extend scripts: done */
        { NULL, NULL },
    };
    tc_fake *f = tc_fake_rules_start(rules, "-ERR unknown command\r\n", NULL);
    int dead1 = tc_dead_port(), dead2 = tc_dead_port();
    while (dead2 == dead1)
        dead2 = tc_dead_port();
    tc_fx.masters = malloc(256);
    snprintf(tc_fx.masters, 256, "%s,%s,%s,127.0.0.1:%d,127.0.0.1:%d", tc_addr(0), tc_addr(1),
             tc_fake_addr(f), dead1, dead2);
    tc_fx.cfg.masters = tc_fx.masters;
    tc_fx.cfg.log_fn = tc_log;
    tc_fx.cfg.log_level = REDLOCK_LOG_WARN;
    tc_fx.c = tc_client(&tc_fx.cfg, 3);
    tc_plant(0, tc_fx.res, tc_fx.len, token, TTL_MS);
    tc_plant(1, tc_fx.res, tc_fx.len, token, TTL_MS);
    cr_assert(eq(int, redlock_lock_new(tc_fx.res, tc_fx.len, token, &tc_fx.l, &tc_fx.e), 0), "%s",
              tc_fx.e.msg);
    return f;
}

/* The liar claims Valkey 9.1.2, grants a lock by the fast path, and does not
 * know DELIFEQ after all, or answers it with what no delete answers: the
 * release's slot sends it the script at once, the release succeeds with the
 * liar's vote, the log names what it said, and its next release is the
 * script from the start. */
static const char *const del_lies[] = { NULL, ":7\r\n", "+OK\r\n", "$1\r\n1\r\n" };

ParameterizedTestParameters(lying, a_master_that_claims_delifeq_and_refuses_it_costs_one_script)
{
    TC_CASE_INDEXES(del_lies);
}

ParameterizedTest(size_t *i, lying, a_master_that_claims_delifeq_and_refuses_it_costs_one_script)
{
    tc_fake *f = liar_fleet("redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n",
                            "+QUEUED\r\n", "*4\r\n" SERVED "$-1\r\n:0\r\n:1\r\n", del_lies[*i]);
    redlock_lock_free(tc_fx.l); /* the planted one: not taken by the fast path */
    tc_fx.l = NULL;
    char res[128];
    tc_resource(res, sizeof(res), "fast");
    for (int round = 0; round < 2; round++) {
        redlock_lock *l = tc_must_acquire(tc_fx.c, res, TTL_MS, tc_fx.out);
        int rc = redlock_release(tc_fx.c, l, tc_fx.out, &tc_fx.e);
        cr_expect(eq(int, rc, 0), "round %d: %s: %s", round, redlock_err_name(rc), tc_fx.e.msg);
        /* Two masters are dead: the liar's vote was needed, so it is in. */
        const redlock_vote *v = redlock_outcome_vote(tc_fx.out, 2);
        cr_expect(eq(int, v->kind, REDLOCK_VOTE_OK), "round %d: the liar: %s (%s)", round,
                  redlock_vote_kind_name(v->kind), v->detail);
        redlock_lock_free(l);
    }
    cr_expect(tc_log_has(tc_fake_addr(f), "answered DELIFEQ with"), "%s", tc_log_text());
    redlock_client_free(tc_fx.c);
    tc_fx.c = NULL;
    tc_fake_stop(f);
}

/* What INFO says decides who gets the native delete: DELIFEQ on Valkey
 * from 9.0 (by valkey_version, whatever redis_version says), DELEX IFEQ on
 * Redis from 8.4, nothing for a server that says neither or garbage. The
 * fake grants by the fast path and refuses both deletes, so the release
 * tells whether it was sent one: a warning names what it answered, and the
 * script follows on the same slot. */
static const struct claim {
    const char *info;
    const char *native; /* the delete's name in the warning, or NULL */
} claims[] = {
    { "redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.2\r\n", NULL },
    { "redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.0\r\n", NULL },
    { "redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.0.0\r\n", "DELIFEQ" },
    { "redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:10.0.0\r\n", "DELIFEQ" },
    { "redis_version:8.2.3\r\n", NULL },
    { "redis_version:8.4.0\r\n", "DELEX IFEQ" },
    { "redis_version:9.0.0\r\n", "DELEX IFEQ" },
    { "redis_version:8.6.3\r\nvalkey_version:7.2.5\r\n", NULL }, /* valkey_version wins */
    { "redis_version:x\r\n", NULL },
    { "", NULL },
};

ParameterizedTestParameters(lying, only_versions_with_a_native_delete_are_sent_it)
{
    TC_CASE_INDEXES(claims);
}

ParameterizedTest(size_t *i, lying, only_versions_with_a_native_delete_are_sent_it)
{
    const struct claim *cl = &claims[*i];
    tc_fake *f = liar_fleet(cl->info, "+QUEUED\r\n", "*4\r\n" SERVED "$-1\r\n:0\r\n:1\r\n", NULL);
    redlock_lock_free(tc_fx.l); /* the planted one: not taken by the fast path */
    tc_fx.l = NULL;
    char res[128];
    tc_resource(res, sizeof(res), "fast");
    redlock_lock *l = tc_must_acquire(tc_fx.c, res, TTL_MS, tc_fx.out);
    int rc = redlock_release(tc_fx.c, l, tc_fx.out, &tc_fx.e);
    cr_expect(eq(int, rc, 0), "[%s]: %s", cl->info, tc_fx.e.msg);
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, 2)->kind, REDLOCK_VOTE_OK), "[%s]: %s (%s)",
              cl->info, redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, 2)->kind),
              redlock_outcome_vote(tc_fx.out, 2)->detail);
    /* One native kind per round, DELIFEQ first: beside masters that have
     * DELIFEQ (a Valkey 9 cluster), a claim of DELEX gets the script. */
    const char *del = tc_native_delete(), *sent = cl->native;
    if (sent && strcmp(sent, "DELEX IFEQ") == 0 && del && strcmp(del, "delifeq") == 0)
        sent = NULL;
    char said[64];
    snprintf(said, sizeof(said), "answered %s with", sent ? sent : "");
    cr_expect(eq(int, tc_log_has(tc_fake_addr(f), sent ? said : "answered "), !!sent), "[%s]: %s",
              cl->info, tc_log_text());
    redlock_lock_free(l);
    redlock_client_free(tc_fx.c);
    tc_fx.c = NULL;
    tc_fake_stop(f);
}
