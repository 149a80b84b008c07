/* test-memory.c - the memory guard: a master counts only once it can show
 * that it remembered its grants for the longest ttl in use.
 *
 * The scenario that makes lost memory dangerous, built on purpose: client
 * A holds the lock on exactly masters 0, 1 and 2 (3 and 4 were down during
 * its acquire, and came back as new, declared-empty masters). Master 2
 * then loses what it knew - a restart without persistence, FLUSHALL, its
 * AOF files wiped before a restart, its marker evicted with the lock key -
 * and a fresh client B, made after the fault as every redlock-cli call is,
 * asks for the lock: 2, 3 and 4 are a majority that knows nothing of A.
 * With the guard, master 2 votes for nobody until its window has passed
 * and B is refused; with restart_guard = 0 the same scenario gives B the
 * lock while A still holds it, so the test can fail. Then what the guard
 * must not cost: AOF-always masters keep their marker and count at once,
 * declared-empty masters count at once, and the window is the longest ttl
 * any client used. Eviction policies that can drop lock keys exclude a
 * master, named in the vote and in ping. A settle comes RL_QUORUM_MAX_MS
 * after the rebirth it settles, gives a measured window its drift
 * allowances, and raises the reborn master's fence counter to the fleet's.
 *
 * Suite memory runs on a plain cluster, memory_aof on one started with
 * --aof: meson runs this file twice, with a filter each. Run alone
 * (faults). Every test starts from new, declared-empty masters, so the
 * fleet remembers no ttl of an earlier test. A master that lies in its
 * report of leases refuses the operator's word.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>
#include <hiredis/hiredis.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"
#include "fake.h"

#define TTL_MS 10000u /* A's lease outlives every fault below */
#define LOSER 2       /* the master of A's majority that loses its memory */

static const char marker[] = "\0redlock:marker";

/* Eviction settings back to none on every master that answers. */
static void no_eviction(void)
{
    for (int m = 0; m < tc_n(); m++) {
        freeReplyObject(tc_cmd(m, "CONFIG SET maxmemory 0"));
        freeReplyObject(tc_cmd(m, "CONFIG SET maxmemory-policy noeviction"));
    }
}

static void fresh_all(void)
{
    tc_fresh(-1);
}

static void fini(void)
{
    tc_heal();
    no_eviction();
}

TestSuite(memory, .init = fresh_all, .fini = fini, .timeout = 60);
TestSuite(memory_aof, .init = fresh_all, .fini = fini, .timeout = 60);

/* The suite's config: @guard as restart_guard, one attempt per acquire,
 * quick reconnects. @probes 0: no clock probe while the test runs (a probe
 * that finds a master pending would settle it: with nothing held, it may
 * count in ms, and a master that counts is left alone by declare-empty). */
static void config(redlock_config *cfg, int guard, int probes)
{
    tc_config(cfg);
    cfg->retry_count = 0;
    cfg->restart_guard = guard;
    cfg->reconnect_min_ms = 10;
    cfg->reconnect_max_ms = 100;
    if (!probes)
        cfg->clock_probe_ms = cfg->clock_window_ms = 3600000;
}

/* A blocking client of config(@guard, probes on).
 * @want_up: masters to await (-1 all); 0: none, used at once like a
 * redlock-cli call, knowing nothing of the masters but what its first
 * replies tell it. */
static redlock_client *client(int guard, int want_up)
{
    redlock_config cfg;

    config(&cfg, guard, 1);
    return tc_client(&cfg, want_up);
}

static void need_aof(int aof)
{
    if (tc_aof() != aof)
        cr_skip_test("needs a cluster %s --aof (meson runs both)", aof ? "with" : "without");
}

/* ---- losing memory ------------------------------------------------------- */

enum fault {
    RESTART,       /* kill, restart without persistence */
    FLUSH,         /* FLUSHALL */
    EVICTED,       /* the marker and the lock key gone, as an allkeys-* policy may do */
    WIPED_AOF,     /* kill, AOF files removed, restart (an --aof cluster) */
    AOF_RESTART,   /* kill, restart with appendfsync always: nothing lost */
    SNAPSHOT,      /* kill, restart from an RDB snapshot older than A's lock */
    AOF_TAIL_LOST, /* appendfsync everysec; kill, the AOF's tail (A's key) lost, restart */
};

static const char *const fault_name[] = { "a restart without persistence",
                                          "FLUSHALL",
                                          "an eviction",
                                          "wiped AOF files",
                                          "an AOF restart",
                                          "a restart from an older snapshot",
                                          "an AOF everysec restart that lost its tail" };

/* Master @m's AOF loses its tail from the first command that carries
 * @token on (what a crash of the machine does to appendfsync everysec or
 * no): the file is cut at the start of that command. */
static void lose_aof_tail(int m, const char *token)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/appendonlydir/appendonly.aof.1.incr.aof", tc_master_dir(m));
    FILE *f = fopen(path, "r+b");
    cr_assert(f != NULL, "no AOF at %s", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf), f);
    char *hit = memmem(buf, n, token, strlen(token));
    cr_assert(hit != NULL, "A's token is not in master %d's AOF", m);
    char *cmd = hit;
    while (cmd > buf && !(cmd[0] == '*' && (cmd == buf || cmd[-1] == '\n')))
        cmd--;
    cr_assert(eq(int, ftruncate(fileno(f), cmd - buf), 0));
    fclose(f);
}

static void lose_memory(int m, enum fault f, const char *res, redlock_lock *la)
{
    redisReply *r;

    switch (f) {
    case SNAPSHOT:
        tc_kill(m);
        tc_restart(m);
        tc_master_rm(m, "dump.rdb"); /* loaded: later restarts start empty */
        break;
    case AOF_TAIL_LOST:
        tc_kill(m);
        lose_aof_tail(m, redlock_lock_token(la));
        tc_restart(m);
        break;
    case RESTART:
    case AOF_RESTART:
        tc_kill(m);
        tc_restart(m);
        break;
    case FLUSH:
        r = tc_cmd(m, "FLUSHALL");
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "FLUSHALL on master %d failed", m);
        freeReplyObject(r);
        break;
    case EVICTED:
        r = tc_cmd(m, "DEL %b %s", marker, sizeof(marker) - 1, res);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 2,
                  "master %d did not hold both the marker and the lock key", m);
        freeReplyObject(r);
        break;
    case WIPED_AOF:
        tc_kill(m);
        tc_master_rm(m, "appendonlydir");
        tc_master_rm(m, "dump.rdb");
        tc_restart(m);
        break;
    }
}

/* ---- the scenario ------------------------------------------------------- */

/* A (a connected client with the guard on) takes @res on exactly masters
 * 0, 1 and 2: 3 and 4 are down during its acquire, then come back as new
 * masters an operator declared empty. */
static redlock_lock *a_holds(redlock_client *a, const char *res)
{
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;

    tc_kill(3);
    tc_kill(4);
    int rc = redlock_acquire(a, res, strlen(res), TTL_MS, &l, out, &e);
    cr_assert(eq(int, rc, 0), "A: %s: %s", redlock_err_name(rc), e.msg);
    for (int m = 0; m < 3; m++)
        cr_assert(eq(int, redlock_outcome_vote(out, m)->kind, REDLOCK_VOTE_OK),
                  "A: master %d voted %s (%s)", m,
                  redlock_vote_kind_name(redlock_outcome_vote(out, m)->kind),
                  redlock_outcome_vote(out, m)->detail);
    tc_restart(3);
    tc_restart(4);
    tc_declare_empty(3);
    tc_declare_empty(4);
    return l;
}

/* Master @m lost A's key (or, with AOF, kept it): the scenario's premise. */
static void expect_premise(int m, enum fault f, const char *res, redlock_lock *la)
{
    char val[64] = "";
    int held = tc_get(m, res, strlen(res), val, sizeof(val), NULL);
    int kept = held == 1 && tc_value_is_token(val, redlock_lock_token(la));

    cr_assert(eq(int, kept, f == AOF_RESTART), "master %d %s A's key across %s", m,
              kept ? "kept" : "lost", fault_name[f]);
    cr_assert(gt(i64, redlock_lock_validity_ms(la), 0),
              "the fault took longer than A's lease: the scenario tests nothing");
}

/* B was refused because master @m, which lost its memory (or cannot prove
 * it kept it), votes for nobody; what it holds under @res is A's (@la) or
 * nothing. */
static void expect_refused(int rc, const redlock_outcome *out, const redlock_error *e, int m,
                           const char *res, redlock_lock *la)
{
    cr_assert(eq(int, rc, REDLOCK_ECONFLICT), "B was not refused: %s: %s", redlock_err_name(rc),
              e->msg);
    cr_expect(eq(int, redlock_outcome_vote(out, m)->kind, REDLOCK_VOTE_EXCLUDED),
              "master %d voted %s (%s)", m,
              redlock_vote_kind_name(redlock_outcome_vote(out, m)->kind),
              redlock_outcome_vote(out, m)->detail);
    cr_expect(eq(int, redlock_outcome_vote(out, m)->err, REDLOCK_EUNTRUSTED));
    cr_expect(strstr(redlock_outcome_vote(out, m)->detail, "memory marker") != NULL,
              "the vote says why: %s", redlock_outcome_vote(out, m)->detail);
    cr_log_info("B refused: %s; master %d: %s", e->msg, m, redlock_outcome_vote(out, m)->detail);
    char val[64] = "";
    int held = tc_get(m, res, strlen(res), val, sizeof(val), NULL);
    cr_expect(held == 0 || tc_value_is_token(val, redlock_lock_token(la)),
              "master %d wrote B's key although it does not vote", m);
}

/*
 * A holds @res on 0,1,2; master LOSER suffers @f; then B asks, with
 * restart_guard @guard. @b_before: B was made and connected before the
 * fault (and saw the restart) instead of after it.
 *
 * Guard on and memory lost: B is refused, LOSER's vote excluded with the
 * marker named. Guard off and memory lost: B gets 2,3,4 while A holds its
 * lease - two holders, which is what the guard is for. AOF always kept A's
 * key, but nothing the data carries proves who wrote it: the restart sits
 * out like any other (docs/safety.md, "Failure modes, master by master").
 */
static void scenario(enum fault f, int guard, int b_before)
{
    char res[128];
    redlock_client *a = client(1, -1), *b = NULL;
    redlock_lock *la, *lb = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    TC_STATUS(st);

    tc_resource(res, sizeof(res), guard ? "guard-on" : "guard-off");
    if (f == SNAPSHOT) {
        /* The snapshot: the marker as this process served it, no lock. */
        redisReply *r = tc_cmd(LOSER, "SAVE");
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "SAVE on master %d failed", LOSER);
        freeReplyObject(r);
    }
    if (f == AOF_TAIL_LOST) /* the process stops fsyncing every write */
        freeReplyObject(tc_cmd(LOSER, "CONFIG SET appendfsync everysec"));
    la = a_holds(a, res);
    if (b_before) {
        b = client(guard, -1);
        redlock_ping(b, st, NULL);
    }
    char old_id[41] = "";
    if (b)
        memcpy(old_id, redlock_status_master(st, LOSER)->run_id, sizeof(old_id));
    lose_memory(LOSER, f, res, la);
    expect_premise(LOSER, f, res, la);
    if (b_before && (f == RESTART || f == WIPED_AOF || f == AOF_RESTART || f == SNAPSHOT))
        cr_assert(TC_AWAIT((redlock_ping(b, st, NULL),
                            redlock_status_master(st, LOSER)->err == 0 &&
                                strcmp(redlock_status_master(st, LOSER)->run_id, old_id) != 0),
                           4000),
                  "B never met the restarted master");
    if (!b)
        b = client(guard, 0); /* fresh: made after the fault, used at once */

    long long execs = tc_info_num(LOSER, "commandstats", "cmdstat_exec");
    int rc = redlock_acquire(b, res, strlen(res), TTL_MS, &lb, out, &e);
    if (guard && b_before && f == FLUSH) /* what a warm client sends: acquire.c */
        cr_expect(gt(i64, tc_info_num(LOSER, "commandstats", "cmdstat_exec"), execs),
                  "B did not take the fast path on master %d", LOSER);
    if (guard) {
        expect_refused(rc, out, &e, LOSER, res, la);
        if (b_before) {
            redlock_ping(b, st, NULL);
            cr_expect(redlock_status_master(st, LOSER)->excluded, "ping shows master %d excluded",
                      LOSER);
            cr_expect(not(redlock_status_master(st, 0)->excluded), "master 0 lost nothing: %s",
                      redlock_status_master(st, 0)->excluded_why);
        }
    } else {
        cr_assert(eq(int, rc, 0), "without the guard B gets 2,3,4: %s: %s", redlock_err_name(rc),
                  e.msg);
        cr_assert(gt(i64, redlock_lock_validity_ms(la), 0), "while A still holds it");
        cr_log_info("guard off, %s: B acquired while A held %lld ms more: two holders",
                    fault_name[f], (long long)redlock_lock_validity_ms(la));
    }
    redlock_lock_free(lb);
    redlock_lock_free(la);
    redlock_client_free(b);
    redlock_client_free(a);
}

/* The guard refuses, and without it the same steps give two holders. */
static void both_ways(enum fault f, int b_before)
{
    scenario(f, 1, b_before);
    fresh_all(); /* master 2 is inside its window now: new masters again */
    scenario(f, 0, b_before);
}

Test(memory, restart_without_persistence_refuses_a_fresh_client)
{
    need_aof(0);
    both_ways(RESTART, 0);
}

Test(memory, restart_without_persistence_refuses_a_client_that_met_the_master_before)
{
    need_aof(0);
    both_ways(RESTART, 1);
}

Test(memory, flushall_refuses_a_fresh_client)
{
    need_aof(0);
    both_ways(FLUSH, 0);
}

/* B met the masters before: its acquire takes the fast path (a transaction
 * that reads `served` with the SET: docs/memory-guard.md, "The fast path"),
 * and may set its key on the flushed master; it must not count there, and
 * must not be left there. */
Test(memory, flushall_refuses_a_client_that_met_the_master_before)
{
    need_aof(0);
    both_ways(FLUSH, 1);
}

Test(memory, an_evicted_marker_refuses_a_fresh_client)
{
    need_aof(0);
    both_ways(EVICTED, 0);
}

Test(memory_aof, wiped_aof_files_refuse_a_fresh_client)
{
    need_aof(1);
    both_ways(WIPED_AOF, 0);
}

/* The bug this guard had: a crash, and a restart that reloads an RDB
 * snapshot taken after the marker was served but before A's lock. The
 * marker came back served; the lock did not. Its run_id is another
 * process's, so the master is reborn. */
Test(memory, restart_from_an_older_snapshot_refuses_a_fresh_client)
{
    need_aof(0);
    both_ways(SNAPSHOT, 0);
}

Test(memory, restart_from_an_older_snapshot_refuses_a_client_that_met_the_master_before)
{
    need_aof(0);
    both_ways(SNAPSHOT, 1);
}

/* appendfsync everysec (or no) loses the last second of writes when the
 * machine crashes, while the marker, written long before, survives. */
Test(memory_aof, aof_everysec_that_lost_its_tail_refuses_a_fresh_client)
{
    need_aof(1);
    scenario(AOF_TAIL_LOST, 1, 0);
    freeReplyObject(tc_cmd(LOSER, "CONFIG SET appendfsync always"));
}

/* AOF always kept A's key and the marker, but the new process cannot tell
 * its data from a copy, a restore or a stale replica's: it sits out. */
Test(memory_aof, an_aof_always_restart_sits_out_like_any_other)
{
    need_aof(1);
    scenario(AOF_RESTART, 1, 0);
}

/* ---- what the guard must not cost, and what it learns ---------------------- */

/* Ping through @c; master @m's view into @ms. */
static void ping_master(redlock_client *c, int m, redlock_master_state *ms)
{
    TC_STATUS(st);

    redlock_ping(c, st, NULL);
    *ms = (*redlock_status_master(st, m));
}

/* Master LOSER's marker window in ms, or -1 without a marker. */
static long long marker_window(void)
{
    redisReply *w = tc_cmd(LOSER, "HGET %b window", marker, sizeof(marker) - 1);
    long long v = w && w->type == REDIS_REPLY_STRING ? atoll(w->str) : -1;

    freeReplyObject(w);
    return v;
}

/* The marker's "tight" flag: its window was measured from every master's
 * live leases (script.c, SETTLE). */
static int marker_tight(void)
{
    redisReply *t = tc_cmd(LOSER, "HGET %b tight", marker, sizeof(marker) - 1);
    int v = t && t->type == REDIS_REPLY_STRING;

    freeReplyObject(t);
    return v;
}

/* Master LOSER restarts without persistence while A holds @res with
 * LONG_TTL_MS on every master; B, whose own ttl is short, meets it. The
 * window LOSER sits out is what is left of A's lease, measured from the
 * other masters, not B's ttl nor the longest ttl ever used.
 * @b_up: B awaits every master first (-1), or is used at once (0). */
static void window_scenario(int b_up)
{
    enum { LONG_TTL_MS = 8000, SHORT_TTL_MS = 1000 };
    char res[128], other[128];
    redlock_client *a = client(1, -1), *b;
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    redlock_master_state ms;

    need_aof(0);
    tc_resource(res, sizeof(res), NULL);
    tc_resource(other, sizeof(other), "other");
    /* A's lease ends no earlier than LONG_TTL_MS after this: the origin of
     * what is left of it (the kill and restart take a while under load). */
    uint64_t t_acquire = tc_now_us();
    redlock_lock *la = tc_must_acquire(a, res, LONG_TTL_MS, NULL);
    tc_kill(LOSER);
    tc_restart(LOSER);

    b = client(1, b_up);
    int rc = redlock_acquire(b, other, strlen(other), SHORT_TTL_MS, &l, out, &e);
    cr_assert(eq(int, rc, 0), "the four others grant it: %s: %s", redlock_err_name(rc), e.msg);
    if (redlock_outcome_vote(out, LOSER)->kind != REDLOCK_VOTE_PENDING)
        cr_expect(eq(int, redlock_outcome_vote(out, LOSER)->kind, REDLOCK_VOTE_EXCLUDED),
                  "master %d voted %s (%s)", LOSER,
                  redlock_vote_kind_name(redlock_outcome_vote(out, LOSER)->kind),
                  redlock_outcome_vote(out, LOSER)->detail);
    tc_must_release(b, l);

    /* Settled on the master itself: measured (tight), about what was left
     * of A's lease then, never B's 1 s nor more than A's ttl and margins. */
    long long window = -1;
    cr_assert(TC_AWAIT(marker_tight() && (window = marker_window()) > 0, 3000),
              "master %d's window was never measured (window %lld)", LOSER, window);
    long long left_ms = LONG_TTL_MS - (long long)(tc_now_us() - t_acquire) / 1000;
    cr_expect(ge(i64, window, left_ms - 200), "window %lld ms, A's lease had %lld ms left", window,
              left_ms);
    cr_expect(le(i64, window, LONG_TTL_MS * 102 / 100 + 10), "window %lld ms > A's ttl", window);

    /* What ping through A (which never sent it an acquire) says of it. */
    cr_expect(TC_AWAIT((ping_master(a, LOSER, &ms), ms.memory_window_ms > SHORT_TTL_MS), 3000),
              "ping never read master %d's window", LOSER);
    cr_expect(ms.excluded, "ping shows master %d excluded", LOSER);
    cr_expect(strstr(ms.excluded_why, "counts at") != NULL, "ping says until when: %s",
              ms.excluded_why);
    cr_log_info("B (ttl %u ms, %s) met the restarted master: it sits out %u ms (%s)", SHORT_TTL_MS,
                b_up ? "connected first" : "used at once", ms.memory_window_ms, ms.excluded_why);
    tc_must_release(a, la);
    redlock_client_free(b);
    redlock_client_free(a);
}

Test(memory, the_window_is_what_is_left_of_the_longest_live_lease)
{
    window_scenario(-1);
}

/* A client used at once (redlock-cli) measures the window the same way:
 * the reports it asks for are the fleet's, not what it knew before. */
Test(memory, a_one_shot_client_measures_the_window_from_the_fleet)
{
    window_scenario(0);
}

/* Master LOSER's marker: pending (its window not measured yet)? */
static int marker_pending(void)
{
    redisReply *t = tc_cmd(LOSER, "HGET %b pending", marker, sizeof(marker) - 1);
    int v = !t || t->type == REDIS_REPLY_STRING;

    freeReplyObject(t);
    return v;
}

/* Master LOSER's last vote in loser_counts(), for messages. */
static char loser_vote[160];

/* An acquire of @res through @c in which master LOSER's OK counted. */
static int loser_counts(redlock_client *c, const char *res)
{
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    int rc = redlock_acquire(c, res, strlen(res), 1000, &l, out, NULL);

    if (rc == 0)
        tc_must_release(c, l);
    snprintf(loser_vote, sizeof(loser_vote), "%s: %s (%s)", redlock_err_name(rc),
             redlock_vote_kind_name(redlock_outcome_vote(out, LOSER)->kind),
             redlock_outcome_vote(out, LOSER)->detail);
    return rc == 0 && redlock_outcome_vote(out, LOSER)->kind == REDLOCK_VOTE_OK;
}

/* A day-long lock taken and released: the fleet holds nothing. A master
 * that restarts then counts again at once (the window is the leases live
 * now, not the longest ttl ever used): within a second, its window
 * measured ("tight") and a few ms long. */
enum { DAY_MS = 86400000 };

/* A day-long lock on @res taken and released through @c; then (with
 * @others_down, masters 0 and 1 killed first) master LOSER restarts. */
static void restart_after_a_day_lock(redlock_client *c, char *res, size_t size, int others_down)
{
    need_aof(0);
    tc_resource(res, size, NULL);
    tc_must_release(c, tc_must_acquire(c, res, DAY_MS, NULL));
    tc_barrier(c); /* the release ran everywhere: no day-long lease survives the kills */
    if (others_down) {
        tc_kill(0);
        tc_kill(1);
    }
    tc_kill(LOSER);
    tc_restart(LOSER);
}

Test(memory, a_released_long_lock_costs_a_later_restart_nothing)
{
    redlock_client *c = client(1, -1);
    char res[128];

    restart_after_a_day_lock(c, res, sizeof(res), 0);
    uint64_t t0 = tc_now_us();
    /* Settled by the client's reconnect (its handshake finds the master
     * pending) before any acquire: an acquire's own lease, live while the
     * fleet is measured, would be a lease to wait for. */
    cr_assert(TC_AWAIT(marker_window() >= 0 && !marker_pending(), 1000),
              "master %d was not settled within 1 s of its restart", LOSER);
    cr_assert(TC_AWAIT(loser_counts(c, res), 1000),
              "master %d did not count within 1 s of its restart: %s; window %lld ms, pending %d",
              LOSER, loser_vote, marker_window(), marker_pending());
    cr_log_info("after a released %d ms lock, the restarted master counted %llu ms later", DAY_MS,
                (unsigned long long)(tc_now_us() - t0) / 1000);
    cr_expect(not(marker_pending()), "master %d is still pending", LOSER);
    cr_expect(marker_tight(), "the window was measured, not the fleet's bound");
    cr_expect(lt(i64, marker_window(), 100), "window %lld ms", marker_window());
    redlock_client_free(c);
}

/* The same with masters 0 and 1 down: a lease may live on them, and
 * nobody can measure it; the restarted master sits out the fleet's bound
 * (the longest ttl in use: the day). */
Test(memory, an_unmeasurable_window_is_the_longest_ttl_in_use)
{
    redlock_client *c = client(1, -1);
    char res[128];

    restart_after_a_day_lock(c, res, sizeof(res), 1);
    cr_expect(not(loser_counts(c, res)), "master %d counted", LOSER);
    cr_assert(TC_AWAIT(!marker_pending(), 3000), "master %d was never settled", LOSER);
    cr_expect(not(marker_tight()), "a window nobody could measure is not tight");
    cr_expect(ge(i64, marker_window(), DAY_MS), "window %lld ms", marker_window());
    redlock_client_free(c);
}

/* A fresh deployment: masters nobody declared sit out the longest ttl in
 * use (here the first acquire's, 1 s: a fleet with no memory cannot be
 * measured); declaring them empty then works, even though that first
 * acquire already marked them, and they count at once. A master that holds
 * a key is not new: declare-empty refuses it, naming it, and declares the
 * others. */
Test(memory, declare_empty_after_a_failed_first_acquire_and_not_where_keys_are)
{
    enum { SHORT_TTL_MS = 1000 };
    redlock_config cfg;
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    size_t declared = 99;
    int excluded = 0;
    char res[128];

    need_aof(0);
    config(&cfg, 1, 0); /* no probe: master 0 must stay pending, keys and all */
    redlock_client *c = tc_client(&cfg, -1);
    tc_resource(res, sizeof(res), NULL);
    for (int m = 0; m < tc_n(); m++)
        freeReplyObject(tc_cmd(m, "FLUSHALL")); /* new masters, nothing said about them */

    int rc = redlock_acquire(c, res, strlen(res), SHORT_TTL_MS, &l, out, &e);
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), e.msg);
    for (int m = 0; m < tc_n(); m++)
        excluded += redlock_outcome_vote(out, m)->kind == REDLOCK_VOTE_EXCLUDED &&
                    strstr(redlock_outcome_vote(out, m)->detail, "memory marker") != NULL;
    cr_expect(ge(int, excluded, 3), "only %d masters excluded for their memory: %s", excluded,
              e.msg);
    cr_assert(eq(int, redlock_declare_empty(c, &declared, &e), 0), "%s", e.msg);
    cr_expect(eq(sz, declared, (size_t)tc_n()), "declared %zu of %d new masters", declared, tc_n());
    rc = redlock_acquire(c, res, strlen(res), SHORT_TTL_MS, &l, out, &e);
    cr_assert(eq(int, rc, 0), "declared masters count at once: %s: %s", redlock_err_name(rc),
              e.msg);
    for (int m = 0; m < tc_n(); m++)
        cr_expect(ne(int, redlock_outcome_vote(out, m)->kind, REDLOCK_VOTE_EXCLUDED),
                  "master %d: %s", m, redlock_outcome_vote(out, m)->detail);
    tc_must_release(c, l);

    /* Master 0 holds a key and lost its marker: not new. */
    freeReplyObject(tc_cmd(0, "FLUSHALL"));
    freeReplyObject(tc_cmd(0, "SET someones-data 1"));
    freeReplyObject(tc_cmd(1, "FLUSHALL"));
    rc = redlock_declare_empty(c, &declared, &e);
    cr_assert(eq(int, rc, REDLOCK_EINVAL), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(strstr(e.msg, "master 0") != NULL && strstr(e.msg, "holds 1 keys") != NULL,
              "the error names the master and why: %s", e.msg);
    cr_expect(eq(sz, declared, 1), "the empty master 1 was declared: %zu", declared);
    freeReplyObject(tc_cmd(0, "DEL someones-data"));
    redlock_client_free(c);
}

/* The operator's way out, with its risk: readmit makes a master that sits
 * out count at once, keys or not, and resets the fleet's bound. While a
 * master that remembers reports a live lease it refuses, naming it; forced,
 * it goes on, and sets the bound no lower than that lease. */
Test(memory, readmit_refuses_a_live_lease_and_forced_lets_a_master_count_at_once)
{
    redlock_client *c = client(1, -1);
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    size_t n = 0;
    char res[128];

    need_aof(0);
    tc_resource(res, sizeof(res), NULL);
    redlock_lock *held = tc_must_acquire(c, res, 30000, NULL);
    tc_kill(0);
    tc_kill(1);
    tc_kill(LOSER);
    tc_restart(LOSER);
    char other[128];
    tc_resource(other, sizeof(other), "other");
    int rc = redlock_acquire(c, other, strlen(other), 1000, &l, out, &e);
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "A's live lease keeps it out: %s: %s",
              redlock_err_name(rc), e.msg);
    rc = redlock_readmit(c, 5000, &n, &e);
    cr_assert(eq(int, rc, REDLOCK_ECONFLICT), "A's lease is live: %s: %s", redlock_err_name(rc),
              e.msg);
    cr_expect(strstr(e.msg, "remembers a live lease") && strstr(e.msg, "s left"),
              "the refusal names the lease and its time left: %s", e.msg);
    uint32_t bound = 0;
    rc = redlock_readmit_with(c, 5000, REDLOCK_DECLARE_FORCE, &n, &bound, &e);
    cr_assert(eq(int, rc, 0), "forced: %s: %s", redlock_err_name(rc), e.msg);
    cr_expect(ge(sz, n, 1), "readmitted %zu", n);
    cr_expect(ge(u32, bound, 25000), "the bound is not set below A's live lease: %u", bound);
    redisReply *r = tc_cmd(3, "HGET %b maxttl", marker, sizeof(marker) - 1);
    cr_expect(r && r->type == REDIS_REPLY_STRING && (uint32_t)atoll(r->str) == bound,
              "the fleet bound is what it said: %s", r && r->str ? r->str : "-");
    freeReplyObject(r);
    rc = redlock_acquire(c, other, strlen(other), 1000, &l, out, &e);
    cr_assert(eq(int, rc, 0), "readmitted: %s: %s", redlock_err_name(rc), e.msg);
    tc_must_release(c, l);
    redlock_lock_free(held);
    redlock_client_free(c);
}

/* ---- the async twins: redlock_declare_empty_async(), redlock_readmit_async() */

/* What one declare-empty's or readmit's callback saw. */
struct word_rec {
    int runs;
    int status;
    size_t n;
    uint32_t bound_ms;
    int has_err;
    redlock_error err;
};

static void on_word(redlock_client *c, int status, size_t n, uint32_t bound_ms,
                    const redlock_error *err, void *arg)
{
    struct word_rec *r = arg;

    (void)c;
    r->runs++;
    r->status = status;
    r->n = n;
    r->bound_ms = bound_ms;
    r->has_err = err != NULL;
    if (err)
        r->err = *err;
}

/* redlock_declare_empty_async() (@readmit 0) or redlock_readmit_async() on
 * @ac, run on @base until its callback ran (never inside the call).
 * Return: its status. */
static int word_async(struct event_base *base, redlock_client *ac, int readmit, uint32_t max_ttl_ms,
                      unsigned flags, struct word_rec *r)
{
    redlock_error e;

    memset(r, 0, sizeof(*r));
    int rc = readmit ? redlock_readmit_async(ac, max_ttl_ms, flags, on_word, r, &e)
                     : redlock_declare_empty_async(ac, flags, on_word, r, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_assert(eq(int, r->runs, 0), "the callback ran inside the call");
    cr_assert(TC_RUN_UNTIL(base, r->runs > 0, 20000), "no callback");
    cr_expect(eq(int, r->runs, 1));
    cr_expect(r->has_err, "err is never NULL");
    cr_expect(eq(int, r->err.code, r->status));
    return r->status;
}

/* @cfg's async twin of a blocking client, on a base of its own, every
 * master connected. */
static redlock_client *async_client(const redlock_config *cfg, struct event_base **base)
{
    *base = event_base_new();
    cr_assert(not(zero(ptr, *base)));
    redlock_client *ac = tc_client_async(cfg, *base);
    cr_assert(tc_async_ready(*base, ac, tc_n(), 5000), "masters not connected");
    return ac;
}

/* The async declare-empty says what the blocking one says: new masters
 * (flushed, nothing said about them) are all declared; while a master that
 * remembers reports a live lease and another sits out, both refuse with
 * ECONFLICT, naming the lease, having declared nothing. */
Test(memory, declare_empty_async_says_what_declare_empty_says)
{
    redlock_config cfg;
    struct event_base *base;
    struct word_rec r;
    redlock_error e;
    size_t declared = 0;
    char res[128];

    need_aof(0);
    config(&cfg, 1, 0); /* no probe: a flushed master must stay for the word */
    redlock_client *c = tc_client(&cfg, -1);
    redlock_client *ac = async_client(&cfg, &base);

    for (int m = 0; m < tc_n(); m++)
        freeReplyObject(tc_cmd(m, "FLUSHALL"));
    cr_assert(eq(int, word_async(base, ac, 0, 0, 0, &r), 0), "%s", r.err.msg);
    cr_expect(eq(sz, r.n, (size_t)tc_n()), "declared %zu of %d new masters", r.n, tc_n());
    cr_expect(eq(u32, r.bound_ms, 0));
    for (int m = 0; m < tc_n(); m++)
        freeReplyObject(tc_cmd(m, "FLUSHALL"));
    cr_assert(eq(int, redlock_declare_empty_with(c, 0, &declared, &e), 0), "%s", e.msg);
    cr_expect(eq(sz, declared, r.n), "blocking declared %zu, async %zu", declared, r.n);

    tc_resource(res, sizeof(res), NULL);
    redlock_lock *held = tc_must_acquire(c, res, 30000, NULL);
    tc_kill(LOSER);
    tc_restart(LOSER);
    cr_assert(eq(int, word_async(base, ac, 0, 0, 0, &r), REDLOCK_ECONFLICT), "%s: %s",
              redlock_err_name(r.status), r.err.msg);
    cr_expect(strstr(r.err.msg, "remembers a live lease") != NULL, "%s", r.err.msg);
    cr_expect(eq(sz, r.n, 0));
    tc_expect_msg(&r.err, "declare_empty_async");
    int rc = redlock_declare_empty_with(c, 0, &declared, &e);
    cr_assert(eq(int, rc, REDLOCK_ECONFLICT), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(strstr(e.msg, "remembers a live lease") != NULL, "%s", e.msg);

    redlock_lock_free(held);
    redlock_client_free(ac);
    event_base_free(base);
    redlock_client_free(c);
}

/* The async readmit says what the blocking one says: refused with ECONFLICT
 * while a master that remembers reports a live lease; forced, it readmits
 * the master that sits out and sets the bound no lower than that lease
 * (the blocking call, on the same master restarted again, readmits as many,
 * with a bound no larger: the lease has less left). */
Test(memory, readmit_async_says_what_readmit_says)
{
    redlock_config cfg;
    struct event_base *base;
    struct word_rec r;
    redlock_error e;
    size_t n = 99;
    uint32_t bound = 99;
    char res[128];

    need_aof(0);
    config(&cfg, 1, 1);
    redlock_client *c = tc_client(&cfg, -1);
    redlock_client *ac = async_client(&cfg, &base);
    tc_resource(res, sizeof(res), NULL);
    redlock_lock *held = tc_must_acquire(c, res, 30000, NULL);
    tc_kill(LOSER);
    tc_restart(LOSER);

    cr_assert(eq(int, word_async(base, ac, 1, 5000, 0, &r), REDLOCK_ECONFLICT), "%s: %s",
              redlock_err_name(r.status), r.err.msg);
    cr_expect(strstr(r.err.msg, "remembers a live lease") != NULL, "%s", r.err.msg);
    cr_expect(eq(sz, r.n, 0));
    cr_expect(eq(u32, r.bound_ms, 0));
    int rc = redlock_readmit_with(c, 5000, 0, &n, &bound, &e);
    cr_assert(eq(int, rc, REDLOCK_ECONFLICT), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(strstr(e.msg, "remembers a live lease") != NULL, "%s", e.msg);
    cr_expect(eq(u32, bound, 0));

    cr_assert(eq(int, word_async(base, ac, 1, 5000, REDLOCK_DECLARE_FORCE, &r), 0), "forced: %s",
              r.err.msg);
    cr_expect(ge(sz, r.n, 1), "readmitted %zu", r.n);
    cr_expect(ge(u32, r.bound_ms, 25000), "the bound is not set below the live lease: %u",
              r.bound_ms);
    redisReply *mt = tc_cmd(LOSER, "HGET %b maxttl", marker, sizeof(marker) - 1);
    cr_expect(mt && mt->type == REDIS_REPLY_STRING && (uint32_t)atoll(mt->str) == r.bound_ms,
              "the fleet bound is what it said: %s", mt && mt->str ? mt->str : "-");
    freeReplyObject(mt);

    tc_kill(LOSER);
    tc_restart(LOSER);
    rc = redlock_readmit_with(c, 5000, REDLOCK_DECLARE_FORCE, &n, &bound, &e);
    cr_assert(eq(int, rc, 0), "forced: %s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(sz, n, r.n), "blocking readmitted %zu, async %zu", n, r.n);
    cr_expect(ge(u32, bound, 25000), "bound %u", bound);
    cr_expect(le(u32, bound, r.bound_ms), "blocking bound %u, async %u", bound, r.bound_ms);

    redlock_lock_free(held);
    redlock_client_free(ac);
    event_base_free(base);
    redlock_client_free(c);
}

/* maxmemory with a policy that evicts keys with a ttl (volatile-*) or any
 * key (allkeys-*) may drop a live lock: such a master is excluded, and the
 * vote and ping name the policy. noeviction refuses writes instead: fine. */
Test(memory, a_master_that_may_evict_lock_keys_is_excluded)
{
    static const char *const evicting[] = { "allkeys-lru", "volatile-ttl" };
    const int m = 1;
    redlock_config cfg;
    redlock_client *c;
    redlock_master_state ms;
    TC_OUTCOME(out);
    redlock_error e;
    redisReply *r;

    need_aof(0);
    tc_config(&cfg);
    cfg.retry_count = 0;
    cfg.clock_probe_ms = 100; /* the probe reads CONFIG: do not wait a second for it */
    c = tc_client(&cfg, -1);
    r = tc_cmd(m, "CONFIG SET maxmemory 1gb");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "CONFIG SET maxmemory failed");
    freeReplyObject(r);
    for (size_t k = 0; k < sizeof(evicting) / sizeof(evicting[0]); k++) {
        const char *p = evicting[k];
        char res[128];
        redlock_lock *l = NULL;

        freeReplyObject(tc_cmd(m, "CONFIG SET maxmemory-policy %s", p));
        cr_assert(TC_AWAIT((ping_master(c, m, &ms), strcmp(ms.eviction_policy, p) == 0), 3000),
                  "the probe never saw policy %s (ping says \"%s\")", p, ms.eviction_policy);
        cr_expect(ms.excluded, "ping: a master with %s is not excluded", p);
        cr_expect(strstr(ms.excluded_why, p) != NULL, "ping names the policy: %s", ms.excluded_why);
        cr_expect(eq(i64, ms.maxmemory, 1ll << 30));

        tc_resource(res, sizeof(res), NULL);
        int rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, out, &e);
        cr_assert(eq(int, rc, 0), "the four others grant it: %s: %s", redlock_err_name(rc), e.msg);
        cr_expect(eq(int, redlock_outcome_vote(out, m)->kind, REDLOCK_VOTE_EXCLUDED),
                  "%s: master %d voted %s", p, m,
                  redlock_vote_kind_name(redlock_outcome_vote(out, m)->kind));
        cr_expect(eq(int, redlock_outcome_vote(out, m)->err, REDLOCK_EUNTRUSTED));
        cr_expect(strstr(redlock_outcome_vote(out, m)->detail, p) != NULL,
                  "the vote names the policy: %s", redlock_outcome_vote(out, m)->detail);
        cr_log_info("%s: vote \"%s\"; ping \"%s\"", p, redlock_outcome_vote(out, m)->detail,
                    ms.excluded_why);
        tc_barrier(c);
        cr_expect(eq(int, tc_get(m, res, strlen(res), NULL, 0, NULL), 0),
                  "the excluded master was sent the lock");
        tc_must_release(c, l);
    }

    /* Refusing writes is safe: with noeviction it counts again. */
    freeReplyObject(tc_cmd(m, "CONFIG SET maxmemory-policy noeviction"));
    cr_assert(TC_AWAIT((ping_master(c, m, &ms), !ms.excluded), 3000), "still excluded: %s",
              ms.excluded_why);
    no_eviction();
    TC_TRY(t);
    cr_assert(eq(int, tc_try_acquire(c, TTL_MS, &t), 0), "%s", t.e.msg);
    cr_expect(ne(int, redlock_outcome_vote(t.out, m)->kind, REDLOCK_VOTE_EXCLUDED), "%s",
              redlock_outcome_vote(t.out, m)->detail);
    tc_must_release(c, t.l);
    redlock_client_free(c);
}

/* ---- the marker is the rule, whatever else is on the master ---------------- */

/* Master @m's marker, written by hand: born now on its own clock, a window,
 * and no "served" flag (as a client older than the flag leaves it, or an
 * operator's HDEL). */
static void young_marker_by_hand(int m, long long window_ms)
{
    redisReply *t = tc_cmd(m, "TIME");
    cr_assert(t && t->type == REDIS_REPLY_ARRAY && t->elements == 2);
    long long now = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
    freeReplyObject(t);
    freeReplyObject(tc_cmd(m, "DEL %b", marker, sizeof(marker) - 1));
    redisReply *r = tc_cmd(m, "HSET %b born %lld window %lld maxttl %lld", marker,
                           sizeof(marker) - 1, now, window_ms, window_ms);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "HSET of the marker failed");
    freeReplyObject(r);
}

/* A marker whose window still runs on the master's clock keeps the master
 * out, with or without the flag a served window leaves; once the window
 * has passed, the master counts again and the flag is set. Two other
 * masters are down, so every quorum needs master LOSER's vote. */
Test(memory, a_marker_without_its_served_flag_is_judged_by_its_window)
{
    enum { WINDOW_MS = 1500 };
    redlock_client *c = client(1, -1);
    TC_OUTCOME(out);
    redlock_error e;
    redlock_lock *l = NULL;
    char res[128];

    need_aof(0);
    tc_resource(res, sizeof(res), NULL);
    tc_kill(0);
    tc_kill(1);
    young_marker_by_hand(LOSER, WINDOW_MS);
    int rc = redlock_acquire(c, res, strlen(res), 1000, &l, out, &e);
    cr_assert(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, redlock_outcome_vote(out, LOSER)->kind, REDLOCK_VOTE_EXCLUDED),
              "master %d voted %s (%s)", LOSER,
              redlock_vote_kind_name(redlock_outcome_vote(out, LOSER)->kind),
              redlock_outcome_vote(out, LOSER)->detail);
    cr_expect(strstr(redlock_outcome_vote(out, LOSER)->detail, "memory marker") != NULL,
              "vote detail: %s", redlock_outcome_vote(out, LOSER)->detail);

    /* The window passes on the master's own clock: it counts again. */
    cr_expect(TC_AWAIT(redlock_acquire(c, res, strlen(res), 1000, &l, out, &e) == 0, 3 * WINDOW_MS),
              "master %d never counted again: %s", LOSER, e.msg);
    if (l)
        tc_must_release(c, l);
    redisReply *s = tc_cmd(LOSER, "HGET %b served", marker, sizeof(marker) - 1);
    cr_expect(s && s->type == REDIS_REPLY_STRING, "the served flag was not set");
    freeReplyObject(s);
    redlock_client_free(c);
}

/* An extension is a ttl in use too: the masters' maxttl hears of it, so a
 * master that loses its data later waits for the extended ttl, not for the
 * ttl the lock was first taken with. */
Test(memory, an_extension_raises_the_fleets_longest_ttl)
{
    enum { SHORT_TTL_MS = 1000, LONG_TTL_MS = 9000 };
    redlock_client *c = client(1, -1);
    redlock_error e;
    char res[128];

    need_aof(0);
    tc_resource(res, sizeof(res), NULL);
    redlock_lock *l = tc_must_acquire(c, res, SHORT_TTL_MS, NULL);
    cr_assert(eq(int, redlock_extend(c, l, LONG_TTL_MS, NULL, &e), 0), "%s", e.msg);
    int raised = 0;
    for (int m = 0; m < tc_n(); m++) {
        redisReply *r = tc_cmd(m, "HGET %b maxttl", marker, sizeof(marker) - 1);
        raised += r && r->type == REDIS_REPLY_STRING && atoll(r->str) >= LONG_TTL_MS;
        freeReplyObject(r);
    }
    cr_expect(ge(int, raised, 3), "only %d masters heard of the %u ms extension", raised,
              LONG_TTL_MS);
    tc_must_release(c, l);
    redlock_client_free(c);
}

/* ---- the settle: when it comes, how long it is, the fence --------------- */

/* Master @m's clock (TIME), in ms. */
static long long master_ms(int m)
{
    redisReply *t = tc_cmd(m, "TIME");
    cr_assert(t && t->type == REDIS_REPLY_ARRAY && t->elements == 2, "TIME on master %d failed", m);
    long long now = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;

    freeReplyObject(t);
    return now;
}

/* Field @f of master @m's marker as a number, or -1 without one. */
static long long marker_num(int m, const char *f)
{
    redisReply *r = tc_cmd(m, "HGET %b %s", marker, sizeof(marker) - 1, f);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

    freeReplyObject(r);
    return v;
}

/* Master @m's marker was settled: it has one, and it is not pending. */
static int settled(int m)
{
    redisReply *r = tc_cmd(m, "HMGET %b born pending", marker, sizeof(marker) - 1);
    int v = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_NIL;

    freeReplyObject(r);
    return v;
}

/* A measured window covers what is left of the longest live lease on
 * another master's clock and then on the reborn one's, either of which may
 * run the drift factor fast: that time and twice its drift (memory.c), not
 * the time left alone. With a drift factor of 0.1 the allowances (a fifth
 * of the lease) dwarf the time the test takes to read the window back. A
 * holds a lease on every master; master LOSER restarts without persistence,
 * and A's reconnect finds it reborn and settles it. */
Test(memory, a_measured_window_has_its_rate_allowances)
{
    enum { TTL = 8000 };
    const double drift = 0.1;
    redlock_config cfg;
    char res[128];

    need_aof(0);
    tc_config(&cfg);
    cfg.retry_count = 0;
    cfg.drift_factor = drift;
    cfg.reconnect_min_ms = 10;
    cfg.reconnect_max_ms = 100;
    redlock_client *a = tc_client(&cfg, -1);
    tc_resource(res, sizeof(res), NULL);
    uint64_t t_acquire = tc_now_us(); /* A's lease ends no earlier than TTL after this */
    redlock_lock *la = tc_must_acquire(a, res, TTL, NULL);
    tc_kill(LOSER);
    tc_restart(LOSER);

    long long window = -1;
    cr_assert(TC_AWAIT(marker_tight() && (window = marker_window()) > 0, 3000),
              "master %d's window was never measured (window %lld)", LOSER, window);
    /* Now, at most what was left when the fleet was measured. */
    long long left = TTL - (long long)tc_ms_since(t_acquire);
    cr_log_info("a lease with %lld ms left gives a window of %lld ms (drift factor %.2f)", left,
                window, drift);
    cr_expect(ge(i64, window, (long long)((double)left * (1 + 2 * drift)) - 200),
              "window %lld ms for a lease with %lld ms left: without its two allowances of %.2f",
              window, left, drift);
    cr_expect(le(i64, window, (long long)(TTL * (1 + 2 * drift)) + 10), "window %lld ms > %d ms",
              window, TTL);
    tc_must_release(a, la);
    redlock_client_free(a);
}

/* A master found reborn is settled no sooner than RL_QUORUM_MAX_MS (500
 * ms) after its rebirth, on its own clock: an attempt that counted its vote
 * from before the rebirth may decide that late (a later quorum is refused,
 * acquire.c), and the lease it writes must be in what the settle measures.
 * Time is the subject. Master LOSER is flushed; a fresh client meets it at
 * once (its handshake's CHECK makes the rebirth, after the flush) and
 * settles it: the settle's stamp on the marker (born, on the master's
 * clock) comes 500 ms or more after the flush. */
Test(memory, a_settle_waits_out_the_attempts_that_may_have_counted_the_master)
{
    need_aof(0);
    freeReplyObject(tc_cmd(LOSER, "FLUSHALL"));
    long long flushed = master_ms(LOSER);
    redlock_client *c = client(1, -1);

    cr_assert(TC_AWAIT(settled(LOSER), 3000), "master %d was never settled", LOSER);
    long long after = marker_num(LOSER, "born") - flushed;
    cr_log_info("master %d settled %lld ms after its rebirth", LOSER, after);
    cr_expect(ge(i64, after, 500), "settled %lld ms after its rebirth, within RL_QUORUM_MAX_MS",
              after);
    redlock_client_free(c);
}

/* A settle raises a reborn master's fence counter to the largest the fleet
 * reported (docs/waiting.md, "Fencing tokens"): a quorum of masters that were
 * all reborn, their counters lost, still fences above every lock before.
 * Fenced locks on fresh masters; 2, 3 and 4 are flushed and a new client
 * settles them while 0 and 1 still answer; then 0 and 1 die, and the next
 * fenced lock comes from 2, 3 and 4 alone, once their window (the ttl in use)
 * passed. */
Test(memory, a_settle_raises_the_fence_counter_to_the_fleets)
{
    enum { TTL = 1000 };
    char res[128];
    redlock_lock *l = NULL;
    redlock_error e;
    uint64_t before = 0;

    need_aof(0);
    tc_resource(res, sizeof(res), NULL);
    redlock_resource r = { res, strlen(res) };
    redlock_client *c = client(1, -1);
    for (int k = 0; k < 3; k++) {
        cr_assert(eq(int, redlock_acquire_set(c, &r, 1, TTL, REDLOCK_FENCE, &l, NULL, &e), 0), "%s",
                  e.msg);
        before = redlock_lock_fence(l);
        tc_must_release(c, l);
    }
    redlock_client_free(c);
    for (int m = 2; m < 5; m++)
        freeReplyObject(tc_cmd(m, "FLUSHALL"));
    c = client(1, -1); /* its handshake finds 2, 3 and 4 reborn: it settles them */
    cr_assert(TC_AWAIT(settled(2) && settled(3) && settled(4), 3000),
              "masters 2, 3 and 4 were never settled");
    tc_kill(0);
    tc_kill(1);
    int rc = -1;
    TC_AWAIT((rc = redlock_acquire_set(c, &r, 1, TTL, REDLOCK_FENCE, &l, NULL, &e)) == 0, 5000);
    cr_assert(eq(int, rc, 0), "no fenced lock from 2, 3 and 4: %s", e.msg);
    cr_log_info("fence %llu from the reborn masters, after %llu",
                (unsigned long long)redlock_lock_fence(l), (unsigned long long)before);
    cr_expect(gt(u64, redlock_lock_fence(l), before), "the fence went back from %llu to %llu",
              (unsigned long long)before, (unsigned long long)redlock_lock_fence(l));
    tc_must_release(c, l);
    redlock_client_free(c);
}

/* A master that passes the handshake and then lies in its report of the
 * leases it holds (a counts flag of 2: no LEASES says that). The
 * operator's word reads every master's leases first, since one that sits
 * out may have granted a lease and forgotten it; a report it cannot read
 * says nothing of what that master remembers, so the word is refused as
 * for a master that did not answer, naming it and what it sent. */
Test(memory, a_lying_report_of_leases_refuses_the_operators_word)
{
    static const tc_fake_rule rules[] = {
        TC_FAKE_HANDSHAKE,
        { "EVALSHA", "*4\r\n:2\r\n:99999\r\n:0\r\n:1\r\n" }, /* LEASES, lying */
        { NULL, NULL },
    };
    tc_fake *f = tc_fake_rules_start(rules, "+OK\r\n", NULL);
    redlock_config cfg;
    redlock_error e = { 0 };

    need_aof(0);
    config(&cfg, 1, 0);
    char *masters = tc_masters_with(4, tc_fake_addr(f));
    cfg.masters = masters;
    redlock_client *c = tc_client(&cfg, 5);
    int rc = redlock_declare_empty(c, NULL, &e);
    cr_expect(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, e.master, 4), "master %d: %s", e.master, e.msg);
    cr_expect(not(zero(ptr, strstr(e.msg, tc_fake_addr(f)))), "%s", e.msg);
    cr_expect(not(zero(ptr, strstr(e.msg, "no Redis sends"))), "%s", e.msg);
    redlock_client_free(c);
    free(masters);
    tc_fake_stop(f);
}
