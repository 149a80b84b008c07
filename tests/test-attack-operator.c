/* test-attack-operator.c - an operator's word on the fleet must not let a
 * second client in while a lease the masters forgot is live (issue 29,
 * attack 6).
 *
 * redlock-cli readmit (every master counts at once; --ttl T resets the
 * fleet's bound, the window of a master nobody can measure) and
 * redlock-cli declare-empty (masters that hold no key count at once) are
 * the operator's ways out of the memory guard's windows. Used at the wrong
 * moment they grant a live lease twice:
 *
 *   readmit --ttl 1s at a calm moment, while A's lease (10 s) lives; then
 *     a host reboot takes three masters at once (restarted without
 *     persistence): a majority forgot, the window cannot be measured and
 *     is the bound, 1 s, although two masters still report A's lease;
 *   declare-empty, or readmit, after a crash or a FLUSHALL of a master
 *     that held A's live lease: it holds no key, and counts at once.
 *
 * B, a fresh redlock-cli call 1.5 s later, must be refused until A's lease
 * ends; once A has released, it gets the lock (with a fence above A's
 * where fences are kept). What the operator's command says is left to its
 * design: only the outcome is asserted. Each attack has its control (no
 * operator command), where B is refused as well. Both attacks are
 * refused now by the command itself (it looks at the fleet first) and,
 * forced, by the bound it sets. A plain cluster
 * (no persistence); run alone (faults).
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>
#include <hiredis/hiredis.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"
#include "holders.h"

#define X TCLI_X

TestSuite(operator, .init = tcli_hold_init, .fini = tcli_hold_fini, .timeout = 60);

/* redlock-cli @cmd [@arg...]: the operator's command. Its exit status is
 * logged, not asserted: whether it refuses, and how, is its design. */
static void operator_says(const char *const *args)
{
    uint64_t t0 = tc_now_us();
    int st = tcli_hold_run(args);
    char what[96];

    snprintf(what, sizeof(what), "redlock-cli %s %s: exit %d", args[0], args[1] ? args[1] : "", st);
    tcli_hold_fault(what, -1, 0, t0);
}

/* ---- readmit --ttl, then a host reboot -------------------------------------------- */

/* Masters 0, 1 and 2 have a window (their marker says how long they sit
 * out), as @m's ping sees them. */
static int windows_set(redlock_client *m)
{
    TC_STATUS(st);
    int set = 0;

    redlock_ping(m, st, NULL);
    for (int i = 0; i < 3; i++)
        set += redlock_status_master(st, i)->memory_window_ms > 0;
    return set == 3;
}

/* A monitoring client meets the rebooted masters: its handshake finds
 * them reborn and settles their windows. A one-shot call may exit before
 * its settle lands, and B's own would then set the window from B's ttl:
 * this client stays until its ping shows the windows set (not asserted: a
 * fixed guard may leave them pending; B must be refused either way). */
static void monitor_meets_the_fleet(void)
{
    redlock_config cfg;
    redlock_client *m;

    tc_config(&cfg);
    cfg.clock_probe_ms = 100; /* the windows its probe reads back */
    m = tc_client(&cfg, -1);
    int set = TC_AWAIT(windows_set(m), 3000);
    TC_STATUS(st);
    redlock_ping(m, st, NULL);
    cr_log_info("the monitor sees master 0: %s (windows %s)",
                redlock_status_master(st, 0)->excluded_why, set ? "set" : "not set");
    redlock_client_free(m);
}

/*
 * A holds the resource on all five masters. With @readmit, the operator runs
 * readmit --ttl 1s while A's lease lives; then masters 0, 1 and 2 restart
 * together without persistence (one host's reboot), and a client meets them.
 * A majority forgot: only the bound can be their window. Fences are not asked
 * for: a majority that restarted without persistence starts its counters from
 * 0, and no window restores them (docs/waiting.md,
 * "The claim, the argument, and what is not claimed": no order then); the
 * lock is the subject here.
 */
static void reboot_scenario(int readmit)
{
    static const char *const readmit_1s[] = { "readmit", "--ttl", "1s", NULL };
    char res[128];
    struct tcli_call a;

    tcli_hold_need_aof(0);
    tc_resource(res, sizeof(res), NULL);
    tcli_hold_lock(&a, "A", res, TCLI_A_TTL, 0, NULL);
    cr_assert(eq(int, a.status, 0), "A did not get the lock: %s", a.msg);
    /* Decided at the quorum: the other SETs land a moment later. */
    cr_assert(TC_AWAIT(tc_count_token(res, strlen(res), a.token, 10000) == 5, 2000),
              "A's key is not on every master");
    if (readmit)
        operator_says(readmit_1s);
    uint64_t t0 = tc_now_us();
    for (int m = 0; m < 3; m++)
        tc_kill(m);
    for (int m = 0; m < 3; m++)
        tc_restart(m);
    tcli_hold_fault("host reboot: 0, 1 and 2 killed and restarted empty", -1, 1, t0);
    monitor_meets_the_fleet();
    tcli_hold_log_marker(0, "after the reboot");
    tcli_hold_b_asks(&a, res, 1);
}

Test(operator, readmit_ttl_1s_then_a_host_reboot_of_three_refuses_b_while_a_holds)
{
    reboot_scenario(1);
}

Test(operator, control_a_host_reboot_of_three_without_readmit_refuses_b)
{
    reboot_scenario(0);
}

/* ---- declare-empty or readmit after a holder lost A's lease ------------------------ */

enum lost { CRASH, FLUSH };
enum word { NOTHING, DECLARE_EMPTY, READMIT };

/*
 * A holds the resource on 0, 1 and X (3 and 4 came back new); X crashes
 * (a restart without persistence) or is FLUSHALLed, forgetting A's lease;
 * the operator runs @word; B asks.
 */
static void word_scenario(enum lost how, enum word word)
{
    static const char *const declare[] = { "declare-empty", NULL };
    static const char *const readmit[] = { "readmit", NULL };
    char res[128];
    struct tcli_call a;

    tcli_hold_need_aof(0);
    tc_resource(res, sizeof(res), NULL);
    tcli_hold_a_on_012(&a, res, 1);
    uint64_t t0 = tc_now_us();
    if (how == CRASH) {
        tc_kill(X);
        tc_restart(X);
    } else {
        redisReply *r = tc_cmd(X, "FLUSHALL");
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "FLUSHALL on master %d failed", X);
        freeReplyObject(r);
    }
    tcli_hold_fault(how == CRASH ? "sigkill, restart empty" : "flushall", X, 1, t0);
    if (word == DECLARE_EMPTY)
        operator_says(declare);
    else if (word == READMIT)
        operator_says(readmit);
    tcli_hold_log_marker(X, "after the operator's word");
    tcli_hold_b_asks(&a, res, 0);
}

Test(operator, declare_empty_after_a_holder_crashed_refuses_b_while_a_holds)
{
    word_scenario(CRASH, DECLARE_EMPTY);
}

Test(operator, declare_empty_after_a_holder_was_flushed_refuses_b_while_a_holds)
{
    word_scenario(FLUSH, DECLARE_EMPTY);
}

Test(operator, readmit_after_a_holder_crashed_refuses_b_while_a_holds)
{
    word_scenario(CRASH, READMIT);
}

Test(operator, readmit_after_a_holder_was_flushed_refuses_b_while_a_holds)
{
    word_scenario(FLUSH, READMIT);
}

Test(operator, control_a_holder_crashed_and_nobody_spoke_refuses_b)
{
    word_scenario(CRASH, NOTHING);
}

Test(operator, control_a_holder_flushed_and_nobody_spoke_refuses_b)
{
    word_scenario(FLUSH, NOTHING);
}
