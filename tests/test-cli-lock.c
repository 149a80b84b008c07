/* test-cli-lock.c - redlock-cli lock, unlock and extend: the token, exit
 * codes 0, 75 (or -E), sets taken all or none, fencing tokens, durations
 * with units, and waiting (--wait) with and without pub/sub.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "cli.h"
#include "cluster.h"
#include "fake.h"
#include "jsonread.h"

TestSuite(lock, .init = tcli_setup, .fini = tcli_teardown, .timeout = 60);

Test(lock, lock_prints_only_the_token_and_holds_every_master)
{
    struct tcli_proc p;
    char res[128], token[64];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--ttl", "30000ms"), 0), "stderr: %s", p.err);
    cr_assert(tcli_is_token(p.out), "stdout is not just a token: '%s'", p.out);
    cr_assert(eq(str, p.err, ""));
    memcpy(token, p.out, 32);
    token[32] = '\0';
    /* lock exits at quorum: the other masters' SETs may still be running. */
    cr_assert(TC_AWAIT(tcli_holders(res, token) == tc_n(), 5000), "held on %d of %d masters",
              tcli_holders(res, token), tc_n());
    tcli_free(&p);

    /* Held: a second lock fails with 75, one line naming the cause. */
    cr_assert(eq(int, tcli_run(&p, "lock", res), 75));
    cr_assert(eq(str, p.out, ""));
    cr_assert(strstr(p.err, "held by another client") != NULL, "stderr: %s", p.err);
    tcli_free(&p);

    cr_assert(eq(int, tcli_run(&p, "unlock", res, token), 0), "stderr: %s", p.err);
    cr_assert(eq(str, p.out, ""));
    tcli_await_key_gone(res, 5000); /* unlock exits at quorum */
    tcli_free(&p);

    /* Free again. */
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--ttl", "5000ms"), 0), "stderr: %s", p.err);
    tcli_free(&p);
}

Test(lock, unlock_and_extend_with_a_wrong_token_exit_75)
{
    struct tcli_proc p;
    char res[128], token[64];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--ttl", "30000ms"), 0));
    memcpy(token, p.out, 32);
    token[32] = '\0';
    tcli_free(&p);
    /* lock exits at quorum: held everywhere before the strangers try. */
    cr_assert(TC_AWAIT(tcli_holders(res, token) == tc_n(), 5000), "held on %d masters",
              tcli_holders(res, token));

    cr_assert(eq(int, tcli_run(&p, "unlock", res, "0123456789abcdef0123456789abcdef"), 75),
              "stderr: %s", p.err);
    cr_assert(eq(int, tcli_count_lines(p.err) >= 1, 1));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "extend", res, "not-the-token", "--ttl", "60000ms"), 75));
    tcli_free(&p);
    /* Neither touched the real holder. */
    cr_assert(eq(int, tcli_holders(res, token), tc_n()));
    /* Nor does unlocking a resource nobody holds count as success for a
     * stranger's token? It does not matter here: only the holder's token
     * is released below. */
    cr_assert(eq(int, tcli_run(&p, "unlock", res, token), 0));
    tcli_free(&p);
}

Test(lock, extend_raises_the_ttl_on_the_masters)
{
    struct tcli_proc p;
    char res[128], token[64];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--ttl", "5000ms"), 0));
    memcpy(token, p.out, 32);
    token[32] = '\0';
    tcli_free(&p);

    cr_assert(eq(int, tcli_run(&p, "extend", res, token, "--ttl", "120000ms", "--json"), 0),
              "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jint(p.out, "validity_ms") > 100000);
    cr_assert(tcli_jint(p.out, "extended_on") >= 3);
    cr_assert(eq(int, tcli_jint(p.out, "ttl_ms"), 120000));
    tcli_free(&p);
    /* extend exits at quorum: master 0 may not have run it yet. */
    cr_assert(TC_AWAIT(tcli_master_pttl(0, res) > 100000, 5000), "PTTL %lld after extend",
              tcli_master_pttl(0, res));
}

Test(lock, wait_gets_the_lock_once_the_holder_expires)
{
    struct tcli_proc p;
    char res[128];
    uint64_t t0;

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--ttl", "800ms"), 0));
    tcli_free(&p);
    t0 = tc_now_us();
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--wait", "10000ms", "--retry-delay", "50ms"), 0),
              "stderr: %s", p.err);
    cr_assert(tcli_is_token(p.out));
    cr_assert(tc_ms_since(t0) < 5000);
    tcli_free(&p);
}

Test(lock, wait_runs_out_with_75_when_the_lock_stays_held)
{
    struct tcli_proc p;
    char res[128];
    uint64_t t0;

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--ttl", "30000ms"), 0));
    tcli_free(&p);
    t0 = tc_now_us();
    cr_assert(eq(
        int, tcli_run(&p, "lock", res, "--wait", "600ms", "--retry-delay", "50ms", "--json"), 75));
    cr_assert(tc_ms_since(t0) >= 600, "gave up after %llu ms", (unsigned long long)tc_ms_since(t0));
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jint(p.out, "attempts") >= 3);
    cr_assert(tcli_jint(p.out, "waited_ms") >= 600);
    tcli_free(&p);
}

Test(lock, quiet_prints_nothing_on_failure)
{
    struct tcli_proc p;
    char res[128];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", res), 0));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "-q", "lock", res), 75));
    cr_assert(eq(str, p.err, ""));
    cr_assert(eq(str, p.out, ""));
    tcli_free(&p);
}

Test(lock, lock_of_a_set_is_all_or_none)
{
    struct tcli_proc p;
    char a[128], b[128], c[128], x[128], tb[40], t[40], buf[160];

    tc_resource(a, sizeof(a), NULL);
    tc_resource(b, sizeof(b), NULL);
    tc_resource(c, sizeof(c), NULL);
    tc_resource(x, sizeof(x), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", b, "--ttl", "30000ms"), 0), "stderr: %s", p.err);
    tcli_take_token(p.out, tb);
    tcli_free(&p);
    /* lock exits at quorum: b is held everywhere before the set is tried. */
    cr_assert(TC_AWAIT(tcli_holders(b, tb) == tc_n(), 5000), "b held on %d masters",
              tcli_holders(b, tb));

    /* One member is held elsewhere: the set is refused as a whole (75),
     * and no other member is taken, on any master. */
    cr_assert(eq(int, tcli_run(&p, "lock", a, b, c), 75), "stderr: %s", p.err);
    cr_assert(eq(str, p.out, ""));
    cr_assert(strstr(p.err, "held by another client") != NULL, "stderr: %s", p.err);
    cr_assert(strstr(p.err, a) != NULL, "the message names the set: %s", p.err);
    /* ... and which member is held, by which token (and no other). */
    {
        char held[256];

        snprintf(held, sizeof(held), "held now: '%s' (token %s, on ", b, tb);
        cr_assert(strstr(p.err, held) != NULL, "the held member and its token: %s", p.err);
    }
    cr_assert(strstr(strstr(p.err, "held now:"), a) == NULL, "a free member named held: %s", p.err);
    tcli_free(&p);
    cr_assert(eq(int, tc_key_count(a, strlen(a)), 0), "a member was taken");
    cr_assert(eq(int, tc_key_count(c, strlen(c)), 0), "a member was taken");
    cr_assert(eq(int, tcli_holders(b, tb), tc_n()));

    cr_assert(eq(int, tcli_run(&p, "lock", a, b, c, "--json"), 75));
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(str, tcli_jstr(tcli_jreq(p.out, "error"), "code", buf, sizeof(buf)), "ECONFLICT"));
    cr_assert(eq(str, tcli_jstr(p.out, "resource", buf, sizeof(buf)), a));
    cr_assert(eq(str, tcli_jelem_str(tcli_jreq(p.out, "resources"), 0, buf, sizeof(buf)), a));
    cr_assert(eq(str, tcli_jelem_str(tcli_jreq(p.out, "resources"), 1, buf, sizeof(buf)), b));
    cr_assert(eq(str, tcli_jelem_str(tcli_jreq(p.out, "resources"), 2, buf, sizeof(buf)), c));
    cr_assert(tcli_jindex(tcli_jreq(p.out, "resources"), 3) == NULL);
    cr_assert(tcli_jnull(p.out, "token"));
    tcli_free(&p);
    cr_assert(eq(int, tc_key_count(a, strlen(a)), 0));
    cr_assert(eq(int, tc_key_count(c, strlen(c)), 0));

    /* Once b is free, the set is taken: every member, one token. */
    cr_assert(eq(int, tcli_run(&p, "unlock", b, tb), 0), "stderr: %s", p.err);
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "lock", a, b, c, "--ttl", "5000ms"), 0), "stderr: %s", p.err);
    cr_assert(tcli_is_token(p.out), "stdout: '%s'", p.out);
    tcli_take_token(p.out, t);
    tcli_free(&p);
    /* lock exits at quorum: the other masters' writes may still be running. */
    cr_assert(TC_AWAIT(tcli_holders(a, t) == tc_n() && tcli_holders(b, t) == tc_n() &&
                           tcli_holders(c, t) == tc_n(),
                       5000),
              "held on %d, %d, %d masters", tcli_holders(a, t), tcli_holders(b, t),
              tcli_holders(c, t));

    /* An overlapping set is refused, and takes nothing either. */
    cr_assert(eq(int, tcli_run(&p, "lock", x, c), 75), "stderr: %s", p.err);
    tcli_free(&p);
    cr_assert(eq(int, tc_key_count(x, strlen(x)), 0));

    /* extend and unlock take the same list, in any order, the token last. */
    cr_assert(eq(int, tcli_run(&p, "extend", c, a, b, t, "--ttl", "60000ms", "--json"), 0),
              "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jint(p.out, "extended_on") >= 3);
    cr_assert(eq(str, tcli_jelem_str(tcli_jreq(p.out, "resources"), 0, buf, sizeof(buf)), c));
    tcli_free(&p);
    /* extend exits at quorum: master 0 may not have run it yet. */
    cr_assert(TC_AWAIT(tcli_master_pttl(0, a) > 50000 && tcli_master_pttl(0, c) > 50000, 5000),
              "PTTL %lld, %lld", tcli_master_pttl(0, a), tcli_master_pttl(0, c));
    cr_assert(eq(int, tcli_run(&p, "unlock", a, b, c, "0123456789abcdef0123456789abcdef"), 75),
              "stderr: %s", p.err);
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "extend", a, b, c, "not-the-token", "--ttl", "1000ms"), 75));
    tcli_free(&p);
    /* The token forgotten: the last resource is taken for it, and the
     * failure says where the token goes. */
    cr_assert(eq(int, tcli_run(&p, "unlock", a, b, c), 75), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "the token is the last word") != NULL, "stderr: %s", p.err);
    tcli_free(&p);
    cr_assert(eq(int, tcli_holders(a, t), tc_n()));
    cr_assert(eq(int, tcli_holders(c, t), tc_n()));
    cr_assert(eq(int, tcli_run(&p, "unlock", b, c, a, t), 0), "stderr: %s", p.err);
    cr_assert(eq(str, p.out, ""));
    tcli_free(&p);
    /* unlock exits at quorum. */
    tcli_await_key_gone(a, 5000);
    tcli_await_key_gone(b, 5000);
    tcli_await_key_gone(c, 5000);
}

Test(lock, fence_increases_between_successive_locks)
{
    struct tcli_proc p;
    char res[128], t[40];
    unsigned long long f1, f2, f3;

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--fence", "--ttl", "30000ms"), 0), "stderr: %s",
              p.err);
    f1 = tcli_take_token_and_fence(p.out, t);
    cr_assert(f1 > 0);
    cr_assert(eq(str, p.err, ""));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "unlock", res, t), 0));
    tcli_free(&p);

    cr_assert(eq(int, tcli_run(&p, "lock", res, "--fence", "--json"), 0), "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    f2 = (unsigned long long)tcli_jint(p.out, "fence");
    tcli_jstr(p.out, "token", t, sizeof(t));
    cr_assert(f2 > f1, "fence %llu after %llu", f2, f1);
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "unlock", res, t), 0));
    tcli_free(&p);

    /* A holder that never released: the next one, after expiry, is later
     * still. */
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--fence", "--ttl", "300ms"), 0));
    f3 = tcli_take_token_and_fence(p.out, t);
    cr_assert(f3 > f2, "fence %llu after %llu", f3, f2);
    tcli_free(&p);
    cr_assert(eq(int,
                 tcli_run(&p, "lock", res, "--fence", "--wait", "5000ms", "--retry-delay", "50ms"),
                 0),
              "stderr: %s", p.err);
    cr_assert(tcli_take_token_and_fence(p.out, t) > f3);
    tcli_free(&p);

    /* Without --fence: one line, and "fence": null. */
    cr_assert(eq(int, tcli_run(&p, "unlock", res, t), 0));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--json"), 0));
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jnull(p.out, "fence"));
    tcli_free(&p);
}

Test(lock, wait_wakes_on_release_instead_of_sleeping_out_the_retry_delay)
{
    struct tcli_proc holder, p;
    char res[128], t[40];
    const char *waiter[] = { "lock",          NULL,     "--wait", "10000ms",
                             "--retry-delay", "5000ms", "--json", NULL };
    const char *poller[] = { "lock",   NULL,          "--wait", "10000ms", "--retry-delay",
                             "1000ms", "--no-pubsub", "--json", NULL };
    struct tcli_monitor *mon;
    char set_cmd[200];
    uint64_t t0, t_rel;

    tc_resource(res, sizeof(res), NULL);
    waiter[1] = poller[1] = res;
    cr_assert(eq(int, tcli_run(&holder, "lock", res, "--ttl", "30000ms"), 0));
    tcli_take_token(holder.out, t);
    tcli_free(&holder);

    /* The waiter finds it held and joins the queue on every master; then
     * the holder unlocks, which hands the lock to the queue's head. With a
     * 5 s retry delay, only the release's message can wake it. */
    t0 = tc_now_us();
    tcli_start(&p, waiter, NULL);
    tcli_await_waiting(res, 5000);
    cr_assert(eq(int, tcli_run(&holder, "unlock", res, t), 0));
    t_rel = tc_now_us();
    tcli_free(&holder);
    cr_assert(eq(int, tcli_wait(&p), 0), "stderr: %s", p.err);
    cr_assert(tc_ms_since(t_rel) < 1500, "got the lock %llu ms after the release",
              (unsigned long long)tc_ms_since(t_rel));
    cr_assert(tc_ms_since(t0) < 4000, "took %llu ms", (unsigned long long)tc_ms_since(t0));
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jint(p.out, "attempts") >= 2, "the waiter never waited: %s", p.out);
    tcli_jstr(p.out, "token", t, sizeof(t));
    tcli_free(&p);

    /* With --no-pubsub the same waiter, once its first attempt has failed,
     * sleeps out its retry delay: the release does not wake it. */
    mon = tcli_monitor_start(0);
    /* Its first attempt (the acquire script, with the key among its keys). */
    snprintf(set_cmd, sizeof(set_cmd), "\"%s\"", res);
    tcli_start(&p, poller, NULL);
    tcli_monitor_await(mon, set_cmd, 5000);
    tcli_monitor_stop(mon);
    t0 = tc_now_us();
    cr_assert(eq(int, tcli_run(&holder, "unlock", res, t), 0));
    tcli_free(&holder);
    cr_assert(eq(int, tcli_wait(&p), 0), "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jint(p.out, "attempts") >= 2, "the poller never waited: %s", p.out);
    cr_assert(tcli_jint(p.out, "waited_ms") >= 950, "a poller got the lock after %lld ms: %s",
              tcli_jint(p.out, "waited_ms"), p.out);
    cr_assert(tc_ms_since(t0) >= 500, "the poller got the lock %llu ms after the release",
              (unsigned long long)tc_ms_since(t0));
    tcli_free(&p);
}

Test(lock, flock_short_options_n_and_w)
{
    struct tcli_proc p;
    char res[128];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--ttl", "800ms"), 0));
    tcli_free(&p);
    /* flock -n: one attempt, a conflict exits at once, 75 or -E's. */
    cr_assert(eq(int, tcli_run(&p, "lock", res, "-n", "--json"), 75), "stderr: %s", p.err);
    cr_assert(eq(int, tcli_jint(p.out, "attempts"), 1), "%s", p.out);
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "-nE", "3"), 3), "stderr: %s", p.err);
    cr_assert(eq(str, p.err, ""));
    tcli_free(&p);
    /* flock -w SECONDS: waits, and gets it once the ttl lapses. */
    cr_assert(eq(int, tcli_run(&p, "lock", res, "-w", "5", "--retry-delay", "50ms", "--json"), 0),
              "stderr: %s", p.err);
    cr_assert(tcli_jint(p.out, "attempts") >= 1);
    tcli_free(&p);
}

Test(lock, durations_take_units)
{
    struct tcli_proc p;
    char res[128], token[40];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--ttl", "30s", "--json"), 0), "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(int, tcli_jint(p.out, "ttl_ms"), 30000));
    tcli_jstr(p.out, "token", token, sizeof(token));
    tcli_free(&p);
    /* lock and extend exit at quorum: await master 0's write. */
    cr_assert(TC_AWAIT(tcli_master_pttl(0, res) > 25000 && tcli_master_pttl(0, res) <= 30000, 5000),
              "PTTL %lld", tcli_master_pttl(0, res));
    cr_assert(eq(int, tcli_run(&p, "extend", res, token, "--ttl", "2m", "--json"), 0), "stderr: %s",
              p.err);
    cr_assert(eq(int, tcli_jint(p.out, "ttl_ms"), 120000));
    tcli_free(&p);
    cr_assert(TC_AWAIT(tcli_master_pttl(0, res) > 110000, 5000), "PTTL %lld",
              tcli_master_pttl(0, res));
    cr_assert(eq(int, tcli_run(&p, "extend", res, token, "--ttl", "1h", "--json"), 0));
    cr_assert(eq(int, tcli_jint(p.out, "ttl_ms"), 3600000));
    tcli_free(&p);
    /* A bare number is seconds, as flock -w and timeout read it; decimals
     * with or without a unit. */
    cr_assert(eq(int, tcli_run(&p, "extend", res, token, "--ttl", "60", "--json"), 0));
    cr_assert(eq(int, tcli_jint(p.out, "ttl_ms"), 60000));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "extend", res, token, "--ttl", "1.5", "--json"), 0));
    cr_assert(eq(int, tcli_jint(p.out, "ttl_ms"), 1500));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "extend", res, token, "--ttl", "0.5m", "--json"), 0));
    cr_assert(eq(int, tcli_jint(p.out, "ttl_ms"), 30000));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "extend", res, token, "--ttl", "1.5h", "--json"), 0));
    cr_assert(eq(int, tcli_jint(p.out, "ttl_ms"), 5400000));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "extend", res, token, "--ttl", "0.4s", "--json"), 0));
    cr_assert(eq(int, tcli_jint(p.out, "ttl_ms"), 400));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "extend", res, token, "--ttl", "400ms", "--json"), 0));
    cr_assert(eq(int, tcli_jint(p.out, "ttl_ms"), 400));
    tcli_free(&p);
    cr_assert(tcli_master_pttl(0, res) <= 400, "PTTL %lld", tcli_master_pttl(0, res));
    /* --wait and --retry-delay take units too: the lock lapses, the
     * waiter gets it. */
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--wait", "5s", "--retry-delay", "50ms", "--json"),
                 0),
              "stderr: %s", p.err);
    cr_assert(tcli_jint(p.out, "attempts") >= 1);
    tcli_free(&p);
}

Test(lock, conflict_exit_code_replaces_75_for_a_held_lock_only)
{
    struct tcli_proc p;
    char res[128], buf[64], dead[256], masters[512];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", res), 0));
    tcli_free(&p);
    /* flock -n -E: silent on a conflict; -v says who holds it. */
    cr_assert(eq(int, tcli_run(&p, "lock", res, "-E", "3"), 3), "stderr: %s", p.err);
    cr_assert(eq(str, p.err, ""));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "-E", "3", "-v"), 3), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "held by another client") != NULL, "stderr: %s", p.err);
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--conflict-exit-code=42", "--json"), 42));
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(int, tcli_jint(p.out, "exit"), 42));
    cr_assert(eq(str, tcli_jstr(tcli_jreq(p.out, "error"), "code", buf, sizeof(buf)), "ECONFLICT"));
    tcli_free(&p);
    /* Masters down are not a conflict: still 69. */
    tcli_dead_masters(dead, sizeof(dead), 3);
    snprintf(masters, sizeof(masters), "%s,%s,%s", tc_addr(0), tc_addr(1), dead);
    cr_assert(eq(int, tcli_run(&p, "lock", "other", "-E3", "--masters", masters), 69), "stderr: %s",
              p.err);
    tcli_free(&p);
}

Test(lock, wait_forever_gets_the_lock_once_it_is_released)
{
    struct tcli_proc holder, p;
    char res[128], t[40], buf[40];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&holder, "lock", res, "--ttl", "30s"), 0));
    tcli_take_token(holder.out, t);
    tcli_free(&holder);
    tcli_bg(&p, "lock", res, "--wait", "forever", "--json");
    tcli_await_waiting(res, 5000);
    cr_assert(eq(int, tcli_run(&holder, "unlock", res, t), 0));
    tcli_free(&holder);
    cr_assert(eq(int, tcli_wait(&p), 0), "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    tcli_jstr(p.out, "token", buf, sizeof(buf));
    /* Held on a majority (a master the release reached last may still have
     * had the old key when the waiter's attempt got there). */
    cr_assert(tcli_holders(res, buf) >= tc_n() / 2 + 1, "held on %d masters",
              tcli_holders(res, buf));
    tcli_free(&p);
}

Test(lock, wait_0_makes_one_attempt)
{
    struct tcli_proc p;
    char res[128];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", res), 0));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--wait", "0ms", "--retry-delay", "10ms", "--json"),
                 75));
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(int, tcli_jint(p.out, "attempts"), 1), "%s", p.out);
    tcli_free(&p);
}

Test(lock, a_signal_while_waiting_cancels_the_wait_and_exits_128_plus_n)
{
    static const int sigs[] = { SIGINT, SIGTERM };
    struct tcli_proc holder, p;
    char res[128], t[40], buf[64];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&holder, "lock", res, "--ttl", "30s"), 0));
    tcli_take_token(holder.out, t);
    tcli_free(&holder);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        uint64_t t0;

        /* A poll every 10 minutes: only the cancel can end this wait soon. */
        tcli_bg(&p, "lock", res, "--wait", "forever", "--retry-delay", "10m", "--json");
        tcli_await_waiting(res, 5000);
        t0 = tc_now_us();
        cr_assert(kill(p.pid, sigs[i]) == 0);
        cr_assert(eq(int, tcli_wait(&p), 128 + sigs[i]), "stderr: %s", p.err);
        cr_assert(tc_ms_since(t0) < 5000, "took %llu ms", (unsigned long long)tc_ms_since(t0));
        cr_assert(strstr(p.err, "interrupted by SIG") != NULL, "stderr: %s", p.err);
        tcli_assert_one_json_object(p.out);
        cr_assert(eq(int, tcli_jint(p.out, "exit"), 128 + sigs[i]));
        cr_assert(eq(str, tcli_jstr(tcli_jreq(p.out, "error"), "code", buf, sizeof(buf)),
                     "ECANCELED"));
        cr_assert(tcli_jnull(p.out, "token"));
        tcli_free(&p);
    }
    /* The holder's lock was not touched. */
    cr_assert(eq(int, tcli_holders(res, t), tc_n()));
}

Test(lock, a_cancel_releases_the_attempt_in_flight_on_every_master)
{
    struct tcli_proc p;
    char res[128], priv[128];

    /* Two of three masters paused: the attempt's SET is granted by the
     * third, and waits for the others until a node timeout (2 s). */
    tc_resource(res, sizeof(res), NULL);
    tcli_private_start(3, 5, tc_password(), priv, sizeof(priv));
    tcli_private_pause(1);
    tcli_private_pause(2);
    tcli_bg(&p, "lock", res, "--masters", priv, "--timeout-ms", "2s");
    tcli_await_private_key(0, res, 1, 5000);
    /* ^C now: the release follows on every master the SET went to. */
    cr_assert(kill(p.pid, SIGINT) == 0);
    cr_assert(eq(int, tcli_wait(&p), 128 + SIGINT), "stderr: %s", p.err);
    cr_assert(eq(str, p.out, ""));
    tcli_free(&p);
    cr_assert(eq(int, tcli_private_pttl(0, res), -2), "the granted key was left behind");
    /* The paused ones run the SET, then the release queued behind it. */
    tcli_private_resume(1);
    tcli_private_resume(2);
    tcli_await_private_key(1, res, 0, 5000);
    tcli_await_private_key(2, res, 0, 5000);
}

Test(lock, masters_loading_their_data_are_waited_for_then_69)
{
    static const char loading[] = "-LOADING Redis is loading the dataset in memory\r\n";
    tc_fake *f[3];
    struct tcli_proc p;
    char res[128], masters[512], buf[64];
    uint64_t t0;
    int unavail = 0;

    tc_resource(res, sizeof(res), NULL);
    for (int i = 0; i < 3; i++)
        f[i] = tc_fake_start(loading, sizeof(loading) - 1, NULL);
    snprintf(masters, sizeof(masters), "%s,%s,%s,%s,%s", tc_addr(0), tc_addr(1), tc_fake_addr(f[0]),
             tc_fake_addr(f[1]), tc_fake_addr(f[2]));
    /* Loading passes: a wait goes on trying (it used to give up at once,
     * as for a broken setup), and what is left is "no quorum", 69. */
    t0 = tc_now_us();
    cr_assert(eq(int,
                 tcli_run(&p, "lock", res, "--masters", masters, "--wait", "1s", "--retry-delay",
                          "100ms", "--json"),
                 69),
              "stderr: %s", p.err);
    cr_assert(tc_ms_since(t0) >= 1000, "gave up after %llu ms",
              (unsigned long long)tc_ms_since(t0));
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jint(p.out, "attempts") >= 2, "%s", p.out);
    for (int i = 2; i < 5; i++) {
        const char *m = tcli_jindex(tcli_jreq(p.out, "masters"), i);

        if (!tcli_jnull(m, "error") &&
            strcmp(tcli_jstr(m, "error", buf, sizeof(buf)), "EUNAVAIL") == 0)
            unavail++;
    }
    cr_assert(eq(int, unavail, 3), "%s", p.out);
    cr_assert(strstr(p.err, "LOADING") != NULL, "stderr: %s", p.err);
    tcli_free(&p);
    for (int i = 0; i < 3; i++)
        tc_fake_stop(f[i]);
    cr_assert(eq(int, tc_key_count(res, strlen(res)), 0), "a key was left behind");
}

/* Masters at their maxmemory under noeviction (Redis' default policy)
 * refuse the acquire with OOM: full for now, like masters loading their
 * data, so 69 (no quorum), not 78 (a setup to fix); the line says what to
 * do. Two of three: the error replies alone deny the quorum. */
Test(lock, masters_out_of_memory_are_unavailable_69_not_a_setup_error)
{
    struct tcli_proc p;
    char res[128], priv[128], masters[256], buf[64];

    tc_resource(res, sizeof(res), NULL);
    tcli_private_start(2, 8, NULL, priv, sizeof(priv));
    for (int i = 0; i < 2; i++)
        freeReplyObject(tcli_private_cmd(i, "CONFIG SET maxmemory 1"));
    snprintf(masters, sizeof(masters), "%s,%s", priv, tc_addr(0));
    cr_assert(eq(int,
                 tcli_run(&p, "lock", res, "--masters", masters, "--no-restart-guard", "--json"),
                 69),
              "stderr: %s", p.err);
    tcli_take_guard_warning(&p);
    cr_assert(eq(sz, tcli_count_lines(p.err), 1), "%s", p.err);
    cr_assert(strstr(p.err, "OOM command not allowed") != NULL, "stderr: %s", p.err);
    cr_assert(strstr(p.err, "free memory or raise maxmemory; 2 of 3 masters fail this way)") !=
                  NULL,
              "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(int, tcli_jint(p.out, "exit"), 69), "%s", p.out);
    cr_assert(eq(str, tcli_jstr(tcli_jreq(p.out, "error"), "code", buf, sizeof(buf)), "EREPLY"));
    tcli_free(&p);
    cr_assert(eq(int, tc_key_count(res, strlen(res)), 0), "a key was left behind");
}

/* An ACL user for the tests below, on every master: @rules after
 * "ACL SETUSER NAME on >PASSWORD". */
#define ACL_PASSWORD "acl-test-password"
static void acl_user(const char *user, const char *rules)
{
    char words[256], pass[64], *save = NULL;
    const char *argv[32] = { "ACL", "SETUSER", user, "on", pass };
    size_t lens[32];
    int argc = 5;

    snprintf(pass, sizeof(pass), ">%s", ACL_PASSWORD);
    snprintf(words, sizeof(words), "%s", rules);
    for (char *w = strtok_r(words, " ", &save); w && argc < 32; w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    for (int k = 0; k < argc; k++)
        lens[k] = strlen(argv[k]);
    for (int i = 0; i < tc_n(); i++) {
        redisReply *r = tc_cmd_argv(i, argc, argv, lens);

        cr_assert(r && r->type == REDIS_REPLY_STATUS, "ACL SETUSER %s: %s", rules,
                  r ? r->str : "no reply");
        freeReplyObject(r);
    }
}

static void acl_user_gone(const char *user)
{
    for (int i = 0; i < tc_n(); i++)
        freeReplyObject(tc_cmd(i, "ACL DELUSER %s", user));
}

/* ACL refusals are credentials to fix (77, EX_NOPERM), not "masters down,
 * it may pass" (69): a command refused in the votes, and the memory
 * guard's check refused (the master then sits out). */
Test(lock, an_acl_refusal_exits_77)
{
    static const char *const rules[] = {
        "~* &* +@all -evalsha -eval",      /* the acquire script and the memory check */
        "~* &* +@all -hmget -hget -multi", /* the memory check and the fast path */
    };
    const char *env[] = { "REDLOCK_PASSWORD=" ACL_PASSWORD, NULL };
    struct tcli_proc p;
    char user[64], res[128];

    tc_resource(res, sizeof(res), NULL);
    snprintf(user, sizeof(user), "rl-cli-noperm-%ld", (long)getpid());
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
        acl_user(user, rules[i]);
        cr_expect(eq(int, tcli_run_env(&p, env, "lock", res, "--user", user, (const char *)NULL),
                     77),
                  "%s: stderr: %s", rules[i], p.err);
        cr_expect(strstr(p.err, "ACL") != NULL, "%s: stderr: %s", rules[i], p.err);
        tcli_free(&p);
        acl_user_gone(user);
    }
    cr_assert(eq(int, tc_key_count(res, strlen(res)), 0), "a key was written");
}

/* A user without the wake-up channel: the waiter says so once, without -v,
 * naming the ACL rule to add; the holder's release hands the lock over all
 * the same and says nothing (no "publish" error, no "expires by itself"),
 * and the waiter takes it at its next poll. */
Test(lock, an_acl_without_the_wake_up_channel_is_said_once_and_hands_over)
{
    const char *env[] = { "REDLOCK_PASSWORD=" ACL_PASSWORD, NULL };
    struct tcli_proc holder, w;
    char user[64], res[128], t[40], rule[128];
    const char *waiter[] = { "lock",          NULL,    "--user", NULL, "--wait", "10s",
                             "--retry-delay", "300ms", NULL };
    int said = 0;

    tc_resource(res, sizeof(res), NULL);
    snprintf(user, sizeof(user), "rl-cli-nochan-%ld", (long)getpid());
    acl_user(user, "~* resetchannels +@all");
    cr_assert(eq(int, tcli_run_env(&holder, env, "lock", res, "--user", user, (const char *)NULL),
                 0),
              "stderr: %s", holder.err);
    tcli_take_token(holder.out, t);
    tcli_free(&holder);
    waiter[1] = res;
    waiter[3] = user;
    tcli_start(&w, waiter, env);
    tcli_await_waiting(res, 5000);
    cr_assert(eq(int,
                 tcli_run_env(&holder, env, "unlock", res, t, "--user", user, (const char *)NULL),
                 0),
              "stderr: %s", holder.err);
    cr_assert(eq(str, holder.err, ""), "the release with a waiter: %s", holder.err);
    tcli_free(&holder);
    cr_assert(eq(int, tcli_wait(&w), 0), "stderr: %s", w.err);
    cr_assert(tcli_is_token(w.out), "stdout: '%s'", w.out);
    for (const char *s = w.err; (s = strstr(s, "refuses the wake-up channel")) != NULL; s++)
        said++;
    cr_assert(eq(int, said, 1), "said %d times: %s", said, w.err);
    snprintf(rule, sizeof(rule), "ACL SETUSER %s '&redlock:wake:*'", user);
    cr_assert(strstr(w.err, rule) != NULL, "the rule to add: %s", w.err);
    tcli_take_token(w.out, t);
    tcli_free(&w);
    cr_assert(eq(int,
                 tcli_run_env(&holder, env, "unlock", res, t, "--user", user, (const char *)NULL),
                 0),
              "stderr: %s", holder.err);
    tcli_free(&holder);
    acl_user_gone(user);
}
