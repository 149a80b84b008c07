/* holders.h - the two clients of the memory guard's attack tests (issue 29),
 * and the record they leave.
 *
 * Every attack has one shape: client A holds a resource on exactly three of
 * five masters (3 and 4 were down during its acquire and came back as new,
 * empty ones), something happens to master 2, and a fresh client B asks a
 * moment later. B must be refused while A's lease runs, and once A has
 * released, B's fence must be above A's. A and B are redlock-cli calls, as
 * a script makes them (one-shot clients: everything they know of the
 * masters, they learn in the call); B may also be a long-lived library
 * client (the test records it with history.h itself). Every call goes into
 * a history of the test's own, and tests/history/check.py reads it at the
 * end: no two holders at once, fences that increase. Helpers fail the
 * running test (criterion) when they cannot do their job; what the library
 * is expected to do is checked with cr_expect, so that a test that fails
 * still runs to its checker, whose report says what happened.
 */
#ifndef TCLI_HOLDERS_H
#define TCLI_HOLDERS_H

#include <stddef.h>
#include <stdint.h>

#include <redlock.h>

#include "history.h"

#define TCLI_X 2          /* the master the attacks hit: one of A's three */
#define TCLI_A_TTL "10s"  /* A's lease outlives every attack below */
#define TCLI_B_TTL "2s"   /* B's: short, so that a wrong grant ends soon */
#define TCLI_B_WAIT "15s" /* B's wait once A has released: windows end */

/* A redlock-cli lock or unlock, as its --json said. */
struct tcli_call {
    int status;                          /* exit status */
    int rc;                              /* its JSON error's code (REDLOCK_E*), or 0 */
    char token[33];                      /* the lock's token, "" if none */
    uint64_t fence;                      /* its fence, 0 if none */
    int64_t validity_ms;                 /* validity when it was decided, 0 if none */
    uint64_t invoke_us, complete_us;     /* tc_now_us() around the call */
    char votes[REDLOCK_MAX_MASTERS + 1]; /* one letter per master, as tc_hist_votes() */
    char msg[512];                       /* its error message, or "" */
};

/* For .init: tcli_setup(), then a history in the test's scratch dir. */
void tcli_hold_setup(void);
/* For .fini: the history closed, then tcli_teardown(). */
void tcli_hold_teardown(void);
/* The attack suites' fixture: tcli_hold_setup() on new, declared-empty
 * masters (tc_fresh(-1)), so that no test inherits a ttl or a window of
 * another; and tcli_hold_teardown(), then tc_heal(). */
void tcli_hold_init(void);
void tcli_hold_fini(void);
tc_hist *tcli_hold_hist(void);

/* Skip the test unless its cluster was started with --aof (@aof 1) or
 * without (0): meson gives each attack file the cluster it needs. */
void tcli_hold_need_aof(int aof);

/* A "fault" line: @what happened to master @m (-1: none) since @t0_us. */
void tcli_hold_fault(const char *what, int m, int lost, uint64_t t0_us);

/*
 * tcli_hold_lock() - redlock-cli lock @res --ttl @ttl --json [--fence]
 * [--wait @wait] (@wait NULL: one attempt), as client @who, recorded
 * Return: its exit status (also @c->status).
 */
int tcli_hold_lock(struct tcli_call *c, const char *who, const char *res, const char *ttl,
                   int fence, const char *wait);

/* redlock-cli unlock @res @lock->token, as @who, recorded. Return: its status. */
int tcli_hold_unlock(const char *who, const char *res, const struct tcli_call *lock);

/* redlock-cli @args (NULL-terminated), for commands that are not locks
 * (ping, readmit, declare-empty). Return: its status; its stderr is logged. */
int tcli_hold_run(const char *const *args);

/* redlock-cli ping --samples 1: a client that meets every master, as any
 * does at its handshake (it finds the restarted ones and settles them,
 * reads CONFIG, vouches for AOF-always masters or withdraws the vouch). */
void tcli_hold_ping(void);

/* A's lease surely runs at @at_us: its validity counted from its invoke
 * (the decision came later), so this never says live when it was not. */
int tcli_hold_live(const struct tcli_call *a, uint64_t at_us);

/*
 * tcli_hold_a_on_012() - A takes @res (TCLI_A_TTL, fenced if @fence)
 * while masters 3 and 4 are down, so it counts exactly 0, 1 and 2; then 3
 * and 4 come back empty (their persistence files removed) and declared
 * empty: new masters with nothing to forget, which count at once.
 */
void tcli_hold_a_on_012(struct tcli_call *a, const char *res, int fence);
/* Its two halves, for attacks that come between: A's lock with 3 and 4
 * down, and their return. */
void tcli_hold_a_while_34_down(struct tcli_call *a, const char *res, int fence);
void tcli_hold_34_back(void);
/* Masters 3 and 4 killed; then A's lock, which must count 0, 1 and 2. */
void tcli_hold_34_down(void);
void tcli_hold_a_locks(struct tcli_call *a, const char *res, int fence);

/* Master @m killed, its persistence files removed, started again: a new
 * master that lost everything (declared empty if @declare). */
void tcli_hold_restart_empty(int m, int declare);

/* Master TCLI_X's machine crashes (SIGKILL, its AOF cut to @size, the
 * size it had at @since_us) and restarts: every write since @since_us is
 * lost. Asserts that the crash came within the second an appendfsync
 * everysec AOF may lose. */
void tcli_hold_crash_losing_since(uint64_t since_us, long long size);

/*
 * tcli_hold_b_refused() - B's one attempt (a redlock-cli call), 1.5 s
 * after the attack: refused (exit 75, held, or with @no_quorum_too also
 * 69) while A's lease runs. A wrong grant is released at once, so that
 * what follows does not wait for it.
 */
void tcli_hold_b_refused(const struct tcli_call *a, const char *res, int no_quorum_too);

/* The "1-2 s later": time is the subject (a window the attack
 * opened on the master runs on, or ends). */
void tcli_hold_later(void);

/* The expectation that B was refused (@refused), said as the issue says
 * it: B's @answer ("exit 0", "OK"), its fence against A's, its @votes, and
 * how long A's lease still ran when B's answer came (@b_done_us). */
void tcli_hold_expect_refused(const char *who, int refused, const char *answer, uint64_t fence,
                              const char *votes, const struct tcli_call *a, uint64_t b_done_us);

/* Master @m's memory marker, logged (cr_log_info) with @when: what the
 * guard made of it, for the report; nothing is asserted on it. */
void tcli_hold_log_marker(int m, const char *when);

/*
 * tcli_hold_b_after() - A releases; then B asks, waiting up to
 * TCLI_B_WAIT for masters that sit out: it must get the lock, with a fence
 * above A's (where A is fenced); it releases it.
 */
void tcli_hold_b_after(const struct tcli_call *a, const char *res);

/* What must hold, in order: tcli_hold_b_refused(), tcli_hold_b_after(),
 * tcli_hold_check(). */
void tcli_hold_b_asks(const struct tcli_call *a, const char *res, int no_quorum_too);

/* A releases (recorded; what the unlock says is logged, not asserted). */
void tcli_hold_a_releases(const struct tcli_call *a, const char *res);

/* The checker over the history: it must find nothing (its report in the
 * failure message). */
void tcli_hold_check(void);

#endif
