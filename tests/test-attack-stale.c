/* test-attack-stale.c - a request a long-lived client sent long ago must
 * not make a master count while a lease it lost is live (issue 29,
 * attacks 4 and 5).
 *
 * The memory guard's word on a master travels in requests: SETTLE gives a
 * reborn master its window (measured from the fleet's leases when it was
 * sent); 1.0's VOUCH said its process kept every write. Both named the
 * process (its run_id), and both can arrive late. A SETTLE now names the
 * rebirth it was measured for (the marker's birth), and VOUCH is gone (a
 * handshake with nothing to hold passes attack 5 at once): a client's connection goes
 * through a relay here (tests/helpers/relay.h) that holds them, as a slow
 * network or a paused client would.
 *
 *   attack 4, a stale SETTLE: master 2 restarted empty; client C measures
 *     its window (no lease live: a few ms) and its SETTLE is held; client
 *     D settles it too; A locks; master 2 is FLUSHALLed, the same process,
 *     so its run_id is the same, and D sees it reborn and measures again
 *     (A's lease: seconds), its SETTLE held in turn; C's old SETTLE is let
 *     through first, then D's. C's window was measured before A's lease.
 *   attack 5, a stale VOUCH: C's VOUCH (appendfsync always) is held; the
 *     master switches to appendfsync everysec and a client withdraws the
 *     vouch; C's VOUCH is let through; A locks; the machine crashes,
 *     losing the last second (A's grant with it); the master restarts.
 *
 * A holds the resource on 0, 1 and 2 (3 and 4 were down and came back
 * empty); B, a fresh redlock-cli call, must be refused while A's lease
 * runs, and once A has released, B's fence must be above A's. In each
 * control the held request is dropped (the relay stopped) instead of
 * delivered, and B is refused as well. The moment a request is
 * held is found with the library's log hook: the line that follows it on
 * the client's loop, before the loop writes it to the socket. Meson gives
 * this file a cluster started with --aof; run alone (faults).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>
#include <hiredis/hiredis.h>

#include <redlock.h>

#include "aoffile.h"
#include "cluster.h"
#include "core.h"
#include "holders.h"
#include "relay.h"

#define X TCLI_X

/* A long-lived client whose connection to master X goes through a relay,
 * and the log line on which the relay is cut. */
struct relayed {
    tc_relay *relay;
    redlock_client *c;
    char *masters;
    const char *cut_on; /* the line's text after "master 2 (...): " */
    atomic_int armed;   /* cut at the next such line */
    atomic_int cut;     /* it was */
    char addr[64];      /* the relay's address, as the client names master X */
};

static struct relayed rc_c, rc_d; /* C, the stale one; D, a well-behaved one */

static void relayed_free(struct relayed *r)
{
    redlock_client_free(r->c); /* before the relay: its connection ends first */
    r->c = NULL;
    tc_relay_stop(r->relay);
    r->relay = NULL;
    free(r->masters);
    r->masters = NULL;
}

static void fini(void)
{
    relayed_free(&rc_c);
    relayed_free(&rc_d);
    tcli_hold_fini();
    freeReplyObject(tc_cmd(X, "CONFIG SET appendfsync always"));
}

TestSuite(stale, .init = tcli_hold_init, .fini = fini, .timeout = 60);

/* The log hook (the client's loop thread): cut the relay at the armed
 * line about master X. The request the line follows is queued on the
 * connection and not written yet: the loop writes it when the hook has
 * returned, into a relay that holds it. */
static void on_log(int level, const char *msg, void *arg)
{
    struct relayed *r = arg;
    char head[96];

    (void)level;
    snprintf(head, sizeof(head), "master %d (%s): ", X, r->addr);
    if (strncmp(msg, head, strlen(head)) != 0 || !strstr(msg + strlen(head), r->cut_on))
        return;
    if (atomic_exchange(&r->armed, 0)) {
        tc_relay_cut(r->relay, 1);
        atomic_store(&r->cut, 1);
    }
}

/*
 * A library client whose master X is reached through a relay of its own.
 * @probe_ms: how often it probes the masters; @cut_on: the log line to cut
 * the relay on, at once if @armed, else once the test sets @r->armed;
 * @want_up: masters to await before returning (tc_client()).
 */
static void relayed_start(struct relayed *r, uint32_t probe_ms, const char *cut_on, int armed,
                          int want_up)
{
    redlock_config cfg;
    char err[256];

    r->relay = tc_relay_start(tc_addr(X), 0, NULL, err, sizeof(err));
    cr_assert(r->relay != NULL, "relay: %s", err);
    snprintf(r->addr, sizeof(r->addr), "%s", tc_relay_addr(r->relay));
    r->masters = tc_masters_with(X, r->addr);
    r->cut_on = cut_on;
    atomic_store(&r->armed, armed);
    atomic_store(&r->cut, 0);
    tc_config(&cfg);
    cfg.masters = r->masters;
    cfg.retry_count = 0;
    cfg.clock_probe_ms = probe_ms;
    if (cfg.clock_window_ms < probe_ms)
        cfg.clock_window_ms = probe_ms; /* the monitor's rule: a window holds a probe */
    cfg.log_fn = on_log;
    cfg.log_arg = r;
    cfg.log_level = REDLOCK_LOG_INFO;
    r->c = tc_client(&cfg, want_up);
}

/* The relay was cut on its line; then it holds what the client sent
 * next (@what), if the client sent anything. With @must, it must have:
 * had that gone through before the cut, the attack would not be set up.
 * Return: 1 if something is held. */
static int relayed_await_held(struct relayed *r, const char *what, int must)
{
    cr_assert(TC_AWAIT(atomic_load(&r->cut), 5000), "the line \"%s\" about master %d never came",
              r->cut_on, X);
    int held = TC_AWAIT(tc_relay_held(r->relay) > 0, 1000);
    cr_assert(held || !must, "%s went through before the relay was cut: the attack is not set up",
              what);
    return held;
}

/* Ping through @r's client: does master X answer it (its request came
 * after everything held before it on that connection)? */
static int x_answers(struct relayed *r)
{
    TC_STATUS(st);

    redlock_ping(r->c, st, NULL);
    return redlock_status_master(st, X)->err == 0;
}

/* Is master X excluded, as @r's client sees it? */
static int x_excluded(struct relayed *r)
{
    TC_STATUS(st);

    redlock_ping(r->c, st, NULL);
    return redlock_status_master(st, X)->excluded;
}

/* What was held for @r is let through (and has run on master X: X
 * answered what came after it), or (@drop) dropped with the relay. */
static void relayed_let_through(struct relayed *r, int drop, const char *what)
{
    uint64_t t0 = tc_now_us();

    if (drop) {
        relayed_free(r);
        tcli_hold_fault(what, X, 0, t0);
        return;
    }
    tc_relay_cut(r->relay, 0);
    cr_assert(TC_AWAIT(x_answers(r), 5000), "master %d never answered through the relay", X);
    tcli_hold_fault(what, X, 0, t0);
}

/* ---- attack 4: a stale SETTLE -------------------------------------------------- */

static void stale_settle_scenario(int delivered)
{
    char res[128];
    struct tcli_call a;
    uint64_t t0;

    tcli_hold_need_aof(1);
    tc_resource(res, sizeof(res), NULL);

    /* Master X restarted empty: reborn at the first CHECK, pending. */
    t0 = tc_now_us();
    tcli_hold_restart_empty(X, 0);
    tcli_hold_fault("restart, empty", X, 1, t0);

    /* C meets it first and measures its window: nothing is held on the
     * fleet, a few ms. Its SETTLE is held in the relay. */
    relayed_start(&rc_c, 60000, "sits out", 1, 0);
    relayed_await_held(&rc_c, "C's SETTLE", 1);
    tcli_hold_log_marker(X, "with C's SETTLE held");

    /* D settles it as well (its probe: every 100 ms), and it counts. */
    relayed_start(&rc_d, 100, "sits out", 0, -1);
    cr_assert(TC_AWAIT(!x_excluded(&rc_d), 3000), "master %d never counted again", X);

    tcli_hold_a_on_012(&a, res, 1);

    /* The same process forgets: D's probe finds it reborn and measures
     * again, A's lease live; D's SETTLE is held in its turn. */
    atomic_store(&rc_d.armed, 1);
    t0 = tc_now_us();
    redisReply *r = tc_cmd(X, "FLUSHALL");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "FLUSHALL on master %d failed", X);
    freeReplyObject(r);
    tcli_hold_fault("flushall", X, 1, t0);
    relayed_await_held(&rc_d, "D's SETTLE", 1);
    tcli_hold_log_marker(X, "reborn, both SETTLEs held");

    relayed_let_through(&rc_c, !delivered,
                        delivered ? "C's old SETTLE delivered" : "C's old SETTLE dropped");
    relayed_let_through(&rc_d, 0, "D's SETTLE delivered");
    tcli_hold_log_marker(X, "once both arrived");
    tcli_hold_b_asks(&a, res, 0);
}

Test(stale, a_settle_measured_before_a_and_delivered_late_refuses_b_while_a_holds)
{
    stale_settle_scenario(1);
}

Test(stale, control_a_settle_measured_before_a_and_dropped_refuses_b)
{
    stale_settle_scenario(0);
}

/* ---- attack 5: a stale VOUCH --------------------------------------------------- */

/* Master X's marker vouches for some process: the field VOUCH writes
 * today (absent where a guard has no such field). */
static int x_vouched(void)
{
    static const char key[] = "\0redlock:marker";
    redisReply *r = tc_cmd(X, "HGET %b durable", key, sizeof(key) - 1);
    int v = r && r->type == REDIS_REPLY_STRING;

    freeReplyObject(r);
    return v;
}

static void stale_vouch_scenario(int delivered)
{
    char res[128];
    struct tcli_call a;
    uint64_t t0;

    tcli_hold_need_aof(1);
    tc_resource(res, sizeof(res), NULL);

    /* C meets master X (AOF always, never vouched for since it was made
     * new): its handshake vouches, and the VOUCH is held. C probes once a
     * minute: nothing of C's after that reaches X while the test runs. */
    relayed_start(&rc_c, 60000, "connected", 1, 0);
    if (!relayed_await_held(&rc_c, "C's VOUCH", 0)) {
        /* Nothing after the handshake: a guard without VOUCH (then there
         * is no request to hold, and the outcome below must hold all the
         * same), or a VOUCH that went through before the cut, which the
         * marker would show. */
        cr_assert(not(x_vouched()),
                  "C's VOUCH went through before the relay held it: the attack is not set up");
        cr_log_info("C sent nothing after its handshake: no request to hold");
    }

    /* The fleet as it runs, a switch at run time, and a client that sees it. */
    tcli_hold_ping(); /* vouches for X */
    tcli_hold_34_down();
    t0 = tc_now_us();
    redisReply *r = tc_cmd(X, "CONFIG SET appendfsync everysec");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "CONFIG SET appendfsync everysec failed");
    freeReplyObject(r);
    tcli_hold_fault("CONFIG SET appendfsync everysec", X, 0, t0);
    tcli_hold_ping(); /* the vouch withdrawn */
    tcli_hold_log_marker(X, "after the switch, seen");

    relayed_let_through(&rc_c, !delivered,
                        delivered ? "C's old VOUCH delivered" : "C's old VOUCH dropped");
    tcli_hold_log_marker(X, "after C's VOUCH");

    /* A's grant, and the crash, within the second an everysec AOF may
     * lose: everything from here on. */
    uint64_t t_lost = tc_now_us();
    long long at = tc_aof_incr_size(X);
    tcli_hold_a_locks(&a, res, 1);
    tcli_hold_crash_losing_since(t_lost, at);
    tcli_hold_34_back();
    tcli_hold_b_asks(&a, res, 0);
}

Test(stale, a_vouch_held_past_a_switch_to_everysec_refuses_b_after_a_crash)
{
    stale_vouch_scenario(1);
}

Test(stale, control_a_vouch_held_and_dropped_refuses_b_after_a_crash)
{
    stale_vouch_scenario(0);
}
