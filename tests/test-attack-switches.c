/* test-attack-switches.c - a master whose persistence is switched at run
 * time must not count, after a crash, while a lease it lost is live
 * (issue 29, attacks 2 and 3).
 *
 * The memory guard of 1.0 trusted a restarted AOF master whose marker
 * vouched for the process before it (appendfsync always: nothing
 * acknowledged was lost). Clients read the persistence settings at every
 * handshake and probe and withdrew the vouch when they changed; but the
 * withdrawal is a write too, and a crash can lose it with the grants
 * (now no marker vouches: a restart is a rebirth, docs/memory-guard.md,
 * "No shortcut for persistence"):
 *
 *   appendonly no at run time: nothing is written to the AOF any more,
 *     the withdrawal included; the config file still says appendonly
 *     yes, so a restart reloads the AOF written before the switch, vouch
 *     and all, and none of A's lock (attack 2);
 *   appendfsync everysec at run time: a machine crash loses the last
 *     second of writes; A's grant and the withdrawal came after the
 *     switch, within that second (attack 3).
 *
 * Master 2 is hit; A holds the resource on 0, 1 and 2 (3 and 4 were down,
 * and came back empty). B, a fresh redlock-cli call, must be refused while
 * A's lease runs, and once A has released, B's fence must be above A's.
 * Each attack has its control, where B is refused as well. Meson
 * gives this file a cluster started with --aof; run alone (faults).
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>
#include <hiredis/hiredis.h>

#include "aoffile.h"
#include "cluster.h"
#include "core.h"
#include "holders.h"

#define X TCLI_X

/* Settings back as the cluster started them, where a test failed before
 * the crash that resets them. */
static void fini(void)
{
    tcli_hold_fini();
    for (int m = 0; m < tc_n(); m++) {
        freeReplyObject(tc_cmd(m, "CONFIG SET appendonly yes"));
        freeReplyObject(tc_cmd(m, "CONFIG SET appendfsync always"));
    }
}

TestSuite(switches, .init = tcli_hold_init, .fini = fini, .timeout = 60);

static void config_set(int m, const char *name, const char *value)
{
    redisReply *r = tc_cmd(m, "CONFIG SET %s %s", name, value);

    cr_assert(r && r->type == REDIS_REPLY_STATUS, "CONFIG SET %s %s on master %d: %s", name, value,
              m, r && r->str ? r->str : "no answer");
    freeReplyObject(r);
}

/* ---- attack 2: appendonly no at run time ------------------------------------- */

/*
 * With @switched, master X stops writing its AOF at run time (CONFIG SET
 * appendonly no; its redis.conf still says yes) and a client sees it; A
 * takes the lock; X is SIGKILLed and restarted: it reloads the AOF written
 * before the switch. Without (the control), X keeps its AOF and A's key.
 */
static void appendonly_scenario(int switched)
{
    char res[128];
    struct tcli_call a;

    tcli_hold_need_aof(1);
    tc_resource(res, sizeof(res), NULL);
    tcli_hold_ping(); /* the markers vouch for the AOF-always masters */
    if (switched) {
        uint64_t t0 = tc_now_us();

        config_set(X, "appendonly", "no");
        tcli_hold_ping(); /* it sees the switch */
        tcli_hold_fault("CONFIG SET appendonly no", X, 0, t0);
    }
    tcli_hold_log_marker(X, "before A");
    tcli_hold_a_on_012(&a, res, 1);
    uint64_t t0 = tc_now_us();
    tc_kill(X);
    tc_restart(X);
    tcli_hold_fault(switched ? "sigkill, restart from the AOF of before the switch"
                             : "sigkill, restart from its AOF",
                    X, switched, t0);
    tcli_hold_log_marker(X, "after its restart");
    tcli_hold_b_asks(&a, res, 0);
}

Test(switches, appendonly_off_at_run_time_then_a_crash_refuses_b_while_a_holds)
{
    appendonly_scenario(1);
}

Test(switches, control_a_crash_with_appendonly_kept_refuses_b)
{
    appendonly_scenario(0);
}

/* ---- attack 3: appendfsync everysec at run time -------------------------------- */

/*
 * Master X switches to appendfsync everysec at run time; A's grant comes
 * after the switch; X's machine crashes (SIGKILL, and its AOF cut) and X
 * restarts (its redis.conf says always).
 *
 * @whole_second: the crash loses everything written since the switch,
 * which is at most the last second (asserted): A's grant and the
 * withdrawal of the vouch that A's own handshake sent. The control: a
 * client saw the switch first, and the crash loses A's grant only (what
 * the AOF everysec test of test-memory.c does).
 */
static void everysec_scenario(int whole_second)
{
    char res[128];
    struct tcli_call a;
    long long at_switch;

    tcli_hold_need_aof(1);
    tc_resource(res, sizeof(res), NULL);
    tcli_hold_ping();
    tcli_hold_34_down(); /* before the switch: the second after it is A's and the crash's */
    uint64_t t_switch = tc_now_us();
    config_set(X, "appendfsync", "everysec");
    at_switch = tc_aof_incr_size(X);
    tcli_hold_fault("CONFIG SET appendfsync everysec", X, 0, t_switch);
    if (!whole_second)
        tcli_hold_ping(); /* it sees the switch: the vouch withdrawn */
    tcli_hold_a_locks(&a, res, 1);
    if (whole_second) {
        tcli_hold_crash_losing_since(t_switch, at_switch);
    } else {
        uint64_t t0 = tc_now_us();

        tc_kill(X);
        tc_aof_cut_at(X, a.token);
        tc_restart(X);
        tcli_hold_fault("machine crash: A's grant lost", X, 1, t0);
        tcli_hold_log_marker(X, "after its restart");
    }
    tcli_hold_34_back();
    tcli_hold_b_asks(&a, res, 0);
}

Test(switches, everysec_at_run_time_then_a_crash_losing_the_last_second_refuses_b)
{
    everysec_scenario(1);
}

Test(switches, control_everysec_seen_then_a_crash_losing_as_grant_refuses_b)
{
    everysec_scenario(0);
}
