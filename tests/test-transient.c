/* test-transient.c - masters that say "not now", and outcomes nobody knows.
 *
 * LOADING, BUSY, TRYAGAIN and MASTERDOWN mean a master is there but cannot
 * answer for the moment: its vote is "down" (EUNAVAIL), an acquire that
 * may wait keeps waiting, a handshake that meets one is retried as a
 * reconnect - never a setup error. Shown on real redis-server (a master
 * restarted onto a large dump; a long Lua script) and with fakes for all
 * four replies. Masters that come back are used by the very next acquire,
 * not after the reconnect backoff. And a release or extend whose outcome
 * is unknown (masters that did not answer may still hold the token) is
 * "no quorum", never "not held". Run alone (faults); every test starts from
 * new, declared-empty masters and .fini heals the cluster.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <hiredis/hiredis.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"
#include "fake.h"

#define TTL_MS 10000u

static void init(void)
{
    tc_fresh(-1);
    tc_fx_init_faults();
}

/* Undo what a test may leave: a master's dump (it would load it at every
 * later restart), its keys, a lowered busy threshold. */
static void fini(void)
{
    tc_heal();
    for (int m = 0; m < tc_n(); m++) {
        tc_master_rm(m, "dump.rdb");
        freeReplyObject(tc_cmd(m, "CONFIG SET busy-reply-threshold 5000"));
    }
    tc_fresh(-1);
    tc_fx_fini();
}

TestSuite(transient, .init = init, .fini = fini, .timeout = 90);

/* The error reply master @m gives to PING starts with @word. */
static int answers(int m, const char *word)
{
    redisReply *r = tc_cmd(m, "PING");
    int yes = r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, word, strlen(word)) == 0;

    freeReplyObject(r);
    return yes;
}

/* ---- LOADING, on real masters ------------------------------------------------ */

/* Lines the library logged that name LOADING. */
static atomic_int loading_lines;

static void on_log(int level, const char *msg, void *arg)
{
    (void)level;
    (void)arg;
    if (strstr(msg, "LOADING"))
        atomic_fetch_add(&loading_lines, 1);
}

/* Give master @m a dataset that takes about a second to load here, and
 * save it: a restart then loads it, answering LOADING meanwhile. Each step
 * takes about a second on an idle machine and several on a loaded one
 * (tc_cmd()'s 2 s timeout failed them there): 60 s each. */
static void large_dump(int m)
{
    static const char *const prefixes[] = { "load-a", "load-b" };

    for (int k = 0; k < 2; k++) {
        redisReply *r = tc_cmd_slow(m, 60, "DEBUG POPULATE 350000 %s 16", prefixes[k]);

        cr_assert(r && r->type == REDIS_REPLY_STATUS, "DEBUG POPULATE on master %d: %s", m,
                  r && r->str ? r->str : "no answer");
        freeReplyObject(r);
    }
    redisReply *r = tc_cmd_slow(m, 60, "SAVE");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "SAVE on master %d: %s", m,
              r && r->str ? r->str : "no answer");
    freeReplyObject(r);
}

/* Two of five masters restart onto a large dump while a third is dead: no
 * quorum until one of them has loaded. An acquire that may wait 15 s
 * keeps trying through LOADING and gets the lock once loading ends
 * (before: LOADING was a setup error, and it gave up after one attempt). */
Test(transient, an_acquire_waits_out_masters_loading_a_large_dump)
{
    redlock_resource one = { tc_fx.res, tc_fx.len };
    redlock_acquire_opts opts;
    uint64_t t0, took;

    tc_fx.cfg.log_fn = on_log;
    tc_fx.cfg.log_level = REDLOCK_LOG_INFO;
    tc_fx_client(-1);
    large_dump(1);
    large_dump(2);
    tc_kill(0);
    tc_kill(1);
    tc_kill(2);
    tc_bg *b1 = tc_restart_begin(1), *b2 = tc_restart_begin(2);
    cr_assert(TC_AWAIT(answers(1, "LOADING") && answers(2, "LOADING"), 10000),
              "masters 1 and 2 were never seen loading at once");

    redlock_acquire_opts_init(&opts);
    opts.ttl_ms = TTL_MS;
    opts.wait_ms = 15000;
    opts.retry_delay_ms = 50;
    opts.retry_jitter_ms = 0;
    t0 = tc_now_us();
    int rc = redlock_acquire_with(tc_fx.c, &one, 1, &opts, &tc_fx.l, tc_fx.out, &tc_fx.e);
    took = tc_now_us() - t0;
    tc_restart_end(b1);
    tc_restart_end(b2);
    cr_assert(eq(int, rc, 0), "%s after %llu ms: %s", redlock_err_name(rc),
              (unsigned long long)took / 1000, tc_fx.e.msg);
    cr_expect(gt(u32, redlock_outcome_attempts(tc_fx.out), 1),
              "the lock came at the first attempt: nothing loaded");
    cr_expect(gt(int, atomic_load(&loading_lines), 0), "the client never met LOADING");
    cr_log_info("acquired %llu ms after both masters were seen loading, in %u attempts",
                (unsigned long long)took / 1000, redlock_outcome_attempts(tc_fx.out));
}

/* ---- BUSY, on a real master ---------------------------------------------------- */

static void *busy_script(void *arg)
{
    /* Runs until SCRIPT KILL; tc_cmd gives up on it after 2 s either way. */
    freeReplyObject(tc_cmd(*(int *)arg, "EVAL %s 0", "while true do end"));
    return NULL;
}

/* Scripts run so far by master @m (EVALSHA or EVAL). */
static long long scripts_run(int m)
{
    long long sha = tc_info_num(m, "commandstats", "cmdstat_evalsha");
    long long eval = tc_info_num(m, "commandstats", "cmdstat_eval");

    return (sha > 0 ? sha : 0) + (eval > 0 ? eval : 0);
}

struct waiting_acquire {
    pthread_t thread;
    int rc;
};

static void *acquire_waiting(void *arg)
{
    struct waiting_acquire *w = arg;
    redlock_resource one = { tc_fx.res, tc_fx.len };
    redlock_acquire_opts opts;

    redlock_acquire_opts_init(&opts);
    opts.ttl_ms = TTL_MS;
    opts.wait_ms = 10000;
    opts.retry_delay_ms = 50;
    opts.retry_jitter_ms = 0;
    w->rc = redlock_acquire_with(tc_fx.c, &one, 1, &opts, &tc_fx.l, tc_fx.out, &tc_fx.e);
    return NULL;
}

/* A master running a script past busy-reply-threshold answers BUSY: its
 * vote is "down" (EUNAVAIL) at once, not an error of the setup; an acquire
 * that needs it keeps trying, and gets the lock once the script is killed.
 * Masters 0 and 4 are dead, so every acquire needs master 1's vote. */
Test(transient, a_master_busy_with_a_long_script_votes_unavailable_and_the_acquire_goes_on)
{
    static int busy = 1;
    struct waiting_acquire w;
    pthread_t th;
    redisReply *r;
    uint64_t t0, took;

    tc_fx_client(-1);
    tc_kill(0);
    tc_kill(4);
    r = tc_cmd(busy, "CONFIG SET busy-reply-threshold 100");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "CONFIG SET busy-reply-threshold failed");
    freeReplyObject(r);
    cr_assert(eq(int, pthread_create(&th, NULL, busy_script, &busy), 0));
    cr_assert(TC_AWAIT(answers(busy, "BUSY"), 5000), "master %d never answered BUSY", busy);

    t0 = tc_now_us();
    int rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    took = tc_now_us() - t0;
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), tc_fx.e.msg);
    tc_expect_msg(&tc_fx.e, "acquire");
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, busy)->kind, REDLOCK_VOTE_DOWN),
              "master %d voted %s (%s)", busy,
              redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, busy)->kind),
              redlock_outcome_vote(tc_fx.out, busy)->detail);
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, busy)->err, REDLOCK_EUNAVAIL), "%s",
              redlock_err_name(redlock_outcome_vote(tc_fx.out, busy)->err));
    cr_expect(strstr(redlock_outcome_vote(tc_fx.out, busy)->detail, "BUSY") != NULL, "%s",
              redlock_outcome_vote(tc_fx.out, busy)->detail);
    cr_expect(lt(u64, took, TC_FAULTS_NODE_TIMEOUT_MS * 1000ull / 4), "BUSY is an answer: %llu us",
              (unsigned long long)took);

    /* Now wait: kill the script once an attempt has come and gone (it
     * reached master 2, and so did its cleanup), and the acquire goes on. */
    tc_barrier_on(tc_fx.c, 1u << 2 | 1u << 3);
    long long before = scripts_run(2);
    cr_assert(eq(int, pthread_create(&w.thread, NULL, acquire_waiting, &w), 0));
    cr_expect(TC_AWAIT(scripts_run(2) >= before + 2, 5000), "no attempt reached master 2");
    r = tc_cmd(busy, "SCRIPT KILL");
    cr_expect(r && r->type == REDIS_REPLY_STATUS, "SCRIPT KILL: %s",
              r && r->str ? r->str : "no answer");
    freeReplyObject(r);
    pthread_join(w.thread, NULL);
    pthread_join(th, NULL);
    cr_assert(eq(int, w.rc, 0), "%s: %s", redlock_err_name(w.rc), tc_fx.e.msg);
    cr_expect(gt(u32, redlock_outcome_attempts(tc_fx.out), 1));
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, busy)->kind, REDLOCK_VOTE_OK),
              "master %d voted %s (%s)", busy,
              redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, busy)->kind),
              redlock_outcome_vote(tc_fx.out, busy)->detail);
}

/* ---- all four, from fakes ---------------------------------------------------- */

static const struct transient_reply {
    const char *word;
    const char *reply;
} transient_replies[] = {
    { "LOADING", "-LOADING Redis is loading the dataset in memory\r\n" },
    { "BUSY", "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or "
              "SHUTDOWN NOSAVE.\r\n" },
    { "TRYAGAIN", "-TRYAGAIN Multiple keys request during rehashing of slot\r\n" },
    { "MASTERDOWN", "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set "
                    "to 'no'.\r\n" },
};

/* A one-master client on @addr (the fake or proxy under test). */
static redlock_client *one_master_client(const char *addr)
{
    tc_fx.cfg.masters = addr;
    return tc_fx_client(0);
}

/* The acquire of a one-master client whose master says "not now": no
 * quorum (never a setup error), the vote down with the reply's word. */
static void expect_unavailable(const char *word)
{
    int rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);

    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s: %s", word, redlock_err_name(rc),
              tc_fx.e.msg);
    tc_expect_msg(&tc_fx.e, "acquire");
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, 0)->kind, REDLOCK_VOTE_DOWN),
              "%s: voted %s (%s)", word,
              redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, 0)->kind),
              redlock_outcome_vote(tc_fx.out, 0)->detail);
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, 0)->err, REDLOCK_EUNAVAIL), "%s: %s", word,
              redlock_err_name(redlock_outcome_vote(tc_fx.out, 0)->err));
    cr_expect(strstr(redlock_outcome_vote(tc_fx.out, 0)->detail, word) != NULL, "%s",
              redlock_outcome_vote(tc_fx.out, 0)->detail);
}

ParameterizedTestParameters(transient, a_transient_reply_to_an_acquire_is_a_master_down_for_now)
{
    TC_CASE_INDEXES(transient_replies);
}

/* A fake that passes the handshake, then answers every acquire with the
 * reply: the vote is down, and the connection stays (one, from start to
 * end: the reply is an answer, not a broken link). */
ParameterizedTest(size_t *i, transient, a_transient_reply_to_an_acquire_is_a_master_down_for_now)
{
    static const tc_fake_rule handshake[] = {
        TC_FAKE_HANDSHAKE,
        { NULL, NULL },
    };
    const struct transient_reply *t = &transient_replies[*i];
    tc_fake *f = tc_fake_rules_start(handshake, t->reply, NULL);

    one_master_client(tc_fake_addr(f));
    cr_assert(eq(int, tc_wait_up(tc_fx.c, 1, 5000), 1), "%s: the fake's handshake failed", t->word);
    expect_unavailable(t->word);
    expect_unavailable(t->word);
    cr_expect(eq(u32, tc_fake_connections(f), 1), "%s: %u connections", t->word,
              tc_fake_connections(f));
    redlock_client_free(tc_fx.c);
    tc_fx.c = NULL;
    tc_fake_stop(f);
}

ParameterizedTestParameters(transient, a_handshake_that_meets_a_transient_reply_is_retried)
{
    TC_CASE_INDEXES(transient_replies);
}

/* A master that answers the reply to everything for a while (in front of
 * it, a proxy that answers connections made meanwhile): the handshake
 * fails, the node reconnects on its backoff, and is up once the master is
 * ready. Acquires meanwhile see it down, for now. */
ParameterizedTest(size_t *i, transient, a_handshake_that_meets_a_transient_reply_is_retried)
{
    enum { NOT_READY_MS = 300 };
    const struct transient_reply *t = &transient_replies[*i];
    tc_proxy *p = tc_proxy_start(0);
    size_t up = 0;

    tc_fx.proxy = p;
    tc_proxy_refuse(p, t->reply, NOT_READY_MS);
    uint64_t ready_at = tc_now_us() + NOT_READY_MS * 1000ull;
    one_master_client(tc_proxy_addr(p));
    expect_unavailable(t->word);
    cr_expect(lt(u64, tc_now_us(), ready_at), "%s: the acquire outlasted the window", t->word);

    int rc = redlock_ready(tc_fx.c, 1, NOT_READY_MS + 3000, &up, &tc_fx.e);
    uint64_t now = tc_now_us();
    cr_assert(eq(int, rc, 0), "%s: the node never came up: %s", t->word, tc_fx.e.msg);
    cr_expect(ge(u64, now, ready_at), "%s: up before the master was ready", t->word);
    cr_expect(gt(u32, tc_proxy_accepted(p), 1), "%s: no reconnect", t->word);
    cr_expect(gt(u32, tc_proxy_refused(p), 0), "%s: the proxy answered nothing", t->word);
    cr_log_info("%s: up %.0f ms after the master became ready, after %u connections", t->word,
                (now - ready_at) / 1000.0, tc_proxy_accepted(p));
    rc = redlock_acquire(tc_fx.c, tc_fx.res, tc_fx.len, TTL_MS, &tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_assert(eq(int, rc, 0), "%s: %s: %s", t->word, redlock_err_name(rc), tc_fx.e.msg);
    tc_must_release(tc_fx.c, tc_fx.l);
    tc_fx.l = NULL;
}

/* ---- masters that come back ------------------------------------------------------ */

/* Three of five masters die and stay dead long enough for the reconnect
 * backoff to reach its 1 s cap; they come back. The first acquire after
 * they accept connections - a single attempt - gets the lock: an operation
 * that needs a master that is down connects to it at once instead of
 * waiting for the backoff. The bound below (500 ms) is a sanity bound far
 * under the cap, for a loaded machine; redlock-bench measures the real
 * figure ("first grant after heal"). */
Test(transient, the_first_acquire_after_a_quorum_returns_succeeds_at_once)
{
    redlock_resource one = { tc_fx.res, tc_fx.len };
    redlock_acquire_opts opts;

    tc_fx.cfg.reconnect_max_ms = 1000; /* the default cap */
    tc_fx_client(-1);
    for (int m = 0; m < 3; m++)
        tc_kill(m);
    /* Time is the subject: the backoff doubles from 10 ms to its cap
     * (10 + 20 + ... + 640 ms is about 1.3 s) while they are down. */
    tc_sleep_ms(2500);
    for (int m = 0; m < 3; m++) {
        tc_restart(m);
        tc_declare_empty(m); /* crashed, back as new masters */
    }

    redlock_acquire_opts_init(&opts);
    opts.ttl_ms = TTL_MS;
    opts.wait_ms = 0;
    uint64_t t0 = tc_now_us();
    int rc = redlock_acquire_with(tc_fx.c, &one, 1, &opts, &tc_fx.l, tc_fx.out, &tc_fx.e);
    uint64_t took = tc_now_us() - t0;
    cr_assert(eq(int, rc, 0), "the first attempt after the quorum returned: %s: %s",
              redlock_err_name(rc), tc_fx.e.msg);
    cr_expect(lt(u64, took, 500000), "took %llu us", (unsigned long long)took);
    cr_log_info("first acquire after the quorum returned: %llu us", (unsigned long long)took);
}

/* ---- outcomes nobody knows --------------------------------------------------------- */

/* Our token is on master 0; masters 1 and 2 hold a competitor's (a stale
 * key); masters 3 and 4 are paused and may still hold ours. Nobody can
 * say the lock is lost: release and extend say "no quorum", not "not
 * held" (before, they said ENOTHELD, and redlock-cli run killed its
 * command with seconds of validity left). Once a majority provably holds
 * another token, it is ENOTHELD. */
Test(transient, release_and_extend_are_enoquorum_unless_the_loss_is_provable)
{
    enum { SHORT_TTL_MS = 3000 };

    tc_fx.cfg.node_timeout_ms = 100;
    tc_fx_client(-1);
    tc_fx.l = tc_must_acquire(tc_fx.c, tc_fx.res, SHORT_TTL_MS, NULL);
    tc_barrier(tc_fx.c);
    tc_plant(1, tc_fx.res, tc_fx.len, "competitor", 3 * SHORT_TTL_MS);
    tc_plant(2, tc_fx.res, tc_fx.len, "competitor", 3 * SHORT_TTL_MS);
    tc_pause(3);
    tc_pause(4);

    int rc = redlock_extend(tc_fx.c, tc_fx.l, SHORT_TTL_MS, tc_fx.out, &tc_fx.e);
    cr_expect(eq(int, rc, REDLOCK_ENOQUORUM), "extend: %s: %s", redlock_err_name(rc), tc_fx.e.msg);
    tc_expect_msg(&tc_fx.e, "extend");
    cr_expect(gt(i64, redlock_lock_validity_ms(tc_fx.l), 0), "the lease stands after the extend");
    rc = redlock_release(tc_fx.c, tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_expect(eq(int, rc, REDLOCK_ENOQUORUM), "release: %s: %s", redlock_err_name(rc), tc_fx.e.msg);
    tc_expect_msg(&tc_fx.e, "release");
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, 1)->kind, REDLOCK_VOTE_HELD));
    cr_expect(eq(int, redlock_outcome_vote(tc_fx.out, 3)->kind, REDLOCK_VOTE_TIMEOUT),
              "master 3 voted %s",
              redlock_vote_kind_name(redlock_outcome_vote(tc_fx.out, 3)->kind));

    /* Provable: masters 1, 2 and 3 hold another token. */
    tc_resume(3);
    tc_resume(4);
    tc_barrier(tc_fx.c);
    tc_plant(3, tc_fx.res, tc_fx.len, "competitor", 3 * SHORT_TTL_MS);
    rc = redlock_release(tc_fx.c, tc_fx.l, tc_fx.out, &tc_fx.e);
    cr_expect(eq(int, rc, REDLOCK_ENOTHELD), "release: %s: %s", redlock_err_name(rc), tc_fx.e.msg);
    tc_del_all(tc_fx.res, tc_fx.len);
}
