/* test-faults-process-down.c - two of five masters die, stop or stall while
 * clients fight over one lock; every operation recorded and checked.
 *
 * A run (helpers/contend.h) is four clients contending on one resource.
 * Two of five masters gone in any of three ways still leave a quorum:
 * acquires keep succeeding, and tests/history/check.py finds no two holders
 * at once, no release of someone else's lock and no key left beyond its
 * ttl. Killed masters vote "down" and are never counted; stopped ones run
 * their backlog in order when they wake; stalled ones (DEBUG SLEEP, or a
 * Lua busy loop where DEBUG is disabled) are a pause without a signal.
 * Run alone (faults); .fini heals the cluster.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>
#include <hiredis/hiredis.h>

#include <redlock.h>

#include "cluster.h"
#include "contend.h"

TestSuite(process, .fini = tc_heal, .timeout = 55);

/* Grants a run must show to count as running; each wait for them is
 * bounded by AWAIT_MS, far more than an idle machine needs. */
#define SOME_GRANTS 5
#define AWAIT_MS 20000

/* Two of five masters killed mid-run: their votes are "down" at once, and
 * three masters still make a quorum: acquires keep succeeding, safely. */
Test(process, sigkill_two_masters_acquires_go_on)
{
    tc_contend *r = tc_contend_start(1, TC_CONTEND_WORKERS);
    uint64_t t1, t2;

    tc_contend_await_grants(r, 0, 0, SOME_GRANTS, AWAIT_MS); /* contention runs */
    tc_contend_inject(r, tc_kill, "sigkill", 1, 0);
    tc_contend_inject(r, tc_kill, "sigkill", 3, 0);
    t1 = tc_now_us();
    tc_contend_await_grants(r, t1, 0, SOME_GRANTS, AWAIT_MS);
    t2 = tc_now_us();

    int after = tc_contend_grants_between(r, t1, t2, 0);
    int with_dead = tc_contend_grants_between(r, t1, t2, 1u << 1) +
                    tc_contend_grants_between(r, t1, t2, 1u << 3);
    tc_contend_expect_clean(r, NULL);
    cr_expect(ge(int, after, SOME_GRANTS), "only %d grants in %d s with two masters dead", after,
              AWAIT_MS / 1000);
    cr_expect(eq(int, with_dead, 0), "%d grants counted a dead master", with_dead);
    tc_contend_free(r);
}

/* Two masters stopped (socket open, no answers) while grants go on:
 * acquires decide on the three that answer; when the two wake, they run
 * their backlog in order (each SET before its release), so nothing is
 * left behind beyond its ttl and no second holder appears. */
Test(process, sigstop_two_masters_acquires_go_on_and_backlogs_are_harmless)
{
    tc_contend *r = tc_contend_start(1, TC_CONTEND_WORKERS);
    uint64_t t1, t2;

    tc_contend_await_grants(r, 0, 0, SOME_GRANTS, AWAIT_MS);
    tc_contend_inject(r, tc_pause, "sigstop", 0, 0);
    tc_contend_inject(r, tc_pause, "sigstop", 2, 0);
    t1 = tc_now_us();
    tc_contend_await_grants(r, t1, 0, SOME_GRANTS, AWAIT_MS);
    t2 = tc_now_us();
    tc_resume(0);
    tc_contend_fault(r, "sigcont", 0, 0, t2);
    tc_contend_inject(r, tc_resume, "sigcont", 2, 0);
    /* Grants go on with the backlogs running. */
    int woken = tc_contend_await_grants(r, tc_now_us(), 0, 1, AWAIT_MS);

    int during = tc_contend_grants_between(r, t1, t2, 0);
    tc_contend_expect_clean(r, NULL);
    cr_expect(ge(int, during, SOME_GRANTS), "only %d grants with two masters stopped", during);
    cr_expect(ge(int, woken, 1), "no grant after the stopped masters woke");
    tc_contend_free(r);
}

/* The script run when DEBUG is disabled (redis 7 default, which
 * cluster-up.sh keeps): a busy loop on the server's own clock, which blocks
 * the master exactly as DEBUG SLEEP does. */
static const char busy_lua[] =
    "local t = redis.call('TIME') local s = t[1] * 1000000 + t[2] "
    "repeat local n = redis.call('TIME') until n[1] * 1000000 + n[2] - s >= tonumber(ARGV[1]) "
    "return 1";

static redisContext *connect_master(int m)
{
    struct timeval tv = { 2, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", tc_port(m), tv);

    cr_assert(c && !c->err, "connect to master %d: %s", m, c ? c->errstr : "out of memory");
    redisSetTimeout(c, tv);
    if (tc_password()) {
        redisReply *rep = redisCommand(c, "AUTH %s", tc_password());

        cr_assert(rep && rep->type == REDIS_REPLY_STATUS, "AUTH on master %d failed", m);
        freeReplyObject(rep);
    }
    return c;
}

/* Stall masters @a and @b for @us at the same time; returns when both have
 * answered, i.e. when the stall is over. */
static void stall_two(tc_contend *r, int a, int b, unsigned us, int use_lua)
{
    const int ms[2] = { a, b };
    redisContext *c[2];
    uint64_t t0 = tc_now_us();
    char secs[32], usbuf[32];

    snprintf(secs, sizeof(secs), "%.6f", us / 1e6);
    snprintf(usbuf, sizeof(usbuf), "%u", us);
    for (int i = 0; i < 2; i++) {
        int done = 0;

        c[i] = connect_master(ms[i]);
        if (use_lua)
            redisAppendCommand(c[i], "EVAL %s 0 %s", busy_lua, usbuf);
        else
            redisAppendCommand(c[i], "DEBUG SLEEP %s", secs);
        while (!done)
            cr_assert(eq(int, redisBufferWrite(c[i], &done), REDIS_OK));
    }
    for (int i = 0; i < 2; i++) {
        redisReply *rep = NULL;

        cr_assert(eq(int, redisGetReply(c[i], (void **)&rep), REDIS_OK), "master %d: %s", ms[i],
                  c[i]->errstr);
        cr_assert(rep->type != REDIS_REPLY_ERROR, "master %d: %s", ms[i], rep->str);
        freeReplyObject(rep);
        redisFree(c[i]);
        tc_contend_fault(r, use_lua ? "lua-busy" : "debug-sleep", ms[i], 0, t0);
    }
}

/* Two masters block for 0.3 s, three times or more: like a pause, without
 * a signal. Grants must go on through the stalls: at least two land inside
 * them. On a loaded machine (ASan, suites side by side) a 0.3 s stall may
 * hold none, so the stalls go on, up to ten, until two have landed. */
Test(process, debug_sleep_on_two_masters_acquires_go_on)
{
    redisReply *probe = tc_cmd(0, "DEBUG SLEEP 0");
    int use_lua = !probe || probe->type == REDIS_REPLY_ERROR;
    const char *how = use_lua ? "a 0.3 s Lua busy loop (DEBUG is disabled)" : "DEBUG SLEEP 0.3";
    uint64_t t0, t1;
    int during = 0;

    if (use_lua)
        cr_log_info("DEBUG is not allowed on these masters (%s): stalling them with a Lua busy "
                    "loop instead",
                    probe ? probe->str : "no reply");
    freeReplyObject(probe);

    tc_contend *r = tc_contend_start(1, TC_CONTEND_WORKERS);
    tc_contend_await_grants(r, 0, 0, SOME_GRANTS, AWAIT_MS);
    int k;
    for (k = 0; k < 10 && (k < 3 || during < 2); k++) {
        t0 = tc_now_us();
        stall_two(r, 1, 4, 300000, use_lua);
        t1 = tc_now_us();
        during += tc_contend_grants_between(r, t0, t1, 0);
        tc_contend_await_grants(r, t1, 0, 1, AWAIT_MS); /* a grant between two stalls */
    }
    tc_contend_expect_clean(r, NULL);
    cr_expect(ge(int, during, 2), "only %d grants while two masters were stalled (%s, %d times)",
              during, how, k);
    cr_log_info("stalled with %s %d times: %d grants during the stalls", how, k, during);
    tc_contend_free(r);
}
