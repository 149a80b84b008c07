/* loop-cases.c - a redlock_loop adapter on its real loop, written once for every adapter.
 *
 * Suite hooks: the table's hooks alone, on pipes and timers, against the
 * rules in redlock.h ("redlock_loop"). Suites client and client_faults:
 * redlock clients made with the adapter, on the test's masters. Each
 * test-loop-<name>.c links this file and defines tc_loop_driver
 * (loop-cases.h); criterion runs each test in a process of its own, so
 * the globals below are one test's. Every test ends by closing its loop:
 * nothing of the adapter may be left on it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include <redlock.h>

#include "await.h"
#include "cluster.h"
#include "core.h"
#include "loop-cases.h"

#define D (&tc_loop_driver)
#define WAIT_MS 10000

static void *L;        /* the test's loop */
static redlock_loop T; /* the adapter's table on it */
static int in_hook;    /* a hook call of the test's is on the stack */
static int seq;        /* callbacks so far, in order */

/* TC_RUN_UNTIL() on the driver's loop. */
#define LOOP_UNTIL(cond, timeout_ms)                                          \
    __extension__({                                                           \
        uint64_t lu_deadline_ = tc_now_us() + 1000u * (uint64_t)(timeout_ms); \
        int lu_held_;                                                         \
        while (!(lu_held_ = !!(cond)) && tc_now_us() < lu_deadline_)          \
            D->pass(L);                                                       \
        lu_held_;                                                             \
    })

/* Run the loop for @ms whatever happens: time is the subject, to see that
 * nothing more runs. Return: the passes it made. */
static int run_for(int ms)
{
    int passes = 0;

    LOOP_UNTIL(passes++ < 0, ms);
    return passes;
}

static void open_loop(void)
{
    L = D->open();
    cr_assert(eq(int, D->fill(&T, L), 0), "%s: the adapter refused its own loop", D->name);
}

static void close_loop(void)
{
    const char *left = D->close(L);

    L = NULL;
    cr_assert(zero(ptr, (void *)left), "%s: left on the loop after the last free: %s", D->name,
              left ? left : "");
}

/* ------------------------------------------------------------------------ */
/* Hooks alone                                                              */
/* ------------------------------------------------------------------------ */

/* What one watch's or timer's fn saw, and what it does when called. */
struct hit {
    int calls;
    int events; /* the last call's */
    int inside; /* calls made while a hook call of the test was on the stack */
    int order;  /* seq at the first call */
    uint64_t first_us;
    void **free_w[2]; /* watches to free (the slot is cleared) */
    void **free_t[2]; /* timers to free */
    /* a timer: re-arm itself (*self) at 0 ms until it ran this often */
    void **self;
    int rearm_until;
    /* the first call arms *start0 at 0 ms; start0_ran: its hit's calls
     * right after timer_start() returned (must be 0) */
    void **start0;
    struct hit *start0_hit;
    int start0_ran;
    int returned; /* the first call has returned */
    /* a timer started by another fn: that fn had returned when this ran */
    struct hit *starter;
    int starter_had_returned;
    /* the first call sets *set_other to set_other_events */
    void **set_other;
    int set_other_events;
    /* another hit's calls when this one first ran */
    struct hit *watch_of;
    int watch_of_calls;
};

/* Watches, timers and pipes of the test: the teardown frees what is left. */
static void *W[4], *TM[4];
static int P[4][2];
static struct hit H[4], HT[4];

static void act(struct hit *h)
{
    for (int k = 0; k < 2; k++) {
        if (h->free_w[k] && *h->free_w[k]) {
            T.watch_free(*h->free_w[k]);
            *h->free_w[k] = NULL;
        }
        if (h->free_t[k] && *h->free_t[k]) {
            T.timer_free(*h->free_t[k]);
            *h->free_t[k] = NULL;
        }
    }
    if (h->calls == 1 && h->start0) {
        cr_assert(eq(int, T.timer_start(*h->start0, 0), 0));
        h->start0_ran = h->start0_hit->calls;
    }
    if (h->calls == 1 && h->set_other && *h->set_other)
        cr_assert(eq(int, T.watch_set(*h->set_other, h->set_other_events), 0));
    if (h->self && *h->self && h->calls < h->rearm_until)
        cr_assert(eq(int, T.timer_start(*h->self, 0), 0));
}

static void record(struct hit *h)
{
    if (h->calls++ == 0) {
        h->order = ++seq;
        h->first_us = tc_now_us();
        if (h->starter)
            h->starter_had_returned = h->starter->returned;
        if (h->watch_of)
            h->watch_of_calls = h->watch_of->calls;
    }
    h->inside += in_hook;
}

static void on_io(void *arg, int events)
{
    struct hit *h = arg;

    record(h);
    h->events = events;
    act(h);
    h->returned = 1;
}

static void on_timer(void *arg)
{
    struct hit *h = arg;

    record(h);
    act(h);
    h->returned = 1;
}

static void hooks_setup(void)
{
    signal(SIGPIPE, SIG_IGN); /* writes to a pipe whose reader is gone */
    memset(W, 0, sizeof(W));
    memset(TM, 0, sizeof(TM));
    memset(H, 0, sizeof(H));
    memset(HT, 0, sizeof(HT));
    for (int i = 0; i < 4; i++)
        P[i][0] = P[i][1] = -1;
    seq = 0;
    open_loop();
}

static void free_hooks(void)
{
    for (int i = 0; i < 4; i++) {
        if (W[i])
            T.watch_free(W[i]);
        if (TM[i])
            T.timer_free(TM[i]);
        W[i] = TM[i] = NULL;
    }
    /* The fds close after their watches are freed, as the library does. */
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 2; k++)
            if (P[i][k] >= 0)
                close(P[i][k]);
}

/* The end of every test: free what is left, close the loop, nothing of the
 * adapter's may be on it. In the test's body: criterion 2.4.1 prints a
 * failed assertion of a .fini but does not fail the test. */
static void hooks_done(void)
{
    free_hooks();
    close_loop();
}

/* A test that failed before hooks_done(). */
static void hooks_teardown(void)
{
    if (L) {
        free_hooks();
        D->close(L);
    }
}

TestSuite(hooks, .init = hooks_setup, .fini = hooks_teardown, .timeout = 60);

static void make_pipe(int i)
{
    cr_assert(eq(int, pipe(P[i]), 0), "pipe: %s", strerror(errno));
}

static void put_byte(int i)
{
    cr_assert(eq(int, (int)write(P[i][1], "x", 1), 1), "write: %s", strerror(errno));
}

static void *watch(int fd, struct hit *h, int events)
{
    void *w;

    in_hook = 1;
    w = T.watch_new(T.data, fd, on_io, h);
    cr_assert(not(zero(ptr, w)), "watch_new(%d) failed", fd);
    cr_assert(eq(int, T.watch_set(w, events), 0), "watch_set(%d)", events);
    in_hook = 0;
    cr_assert(eq(int, h->calls, 0), "fn ran inside watch_new/watch_set");
    return w;
}

static void *timer(struct hit *h)
{
    void *t;

    in_hook = 1;
    t = T.timer_new(T.data, on_timer, h);
    in_hook = 0;
    cr_assert(not(zero(ptr, t)), "timer_new failed");
    return t;
}

static void start(void *t, uint64_t ms)
{
    in_hook = 1;
    cr_assert(eq(int, T.timer_start(t, ms), 0), "timer_start(%llu)", (unsigned long long)ms);
    in_hook = 0;
}

Test(hooks, a_readable_pipe_calls_fn_with_read_until_it_is_drained)
{
    char c;

    make_pipe(0);
    W[0] = watch(P[0][0], &H[0], REDLOCK_LOOP_READ);
    put_byte(0);
    cr_assert(LOOP_UNTIL(H[0].calls >= 1, WAIT_MS), "a readable pipe: fn never ran");
    cr_expect(eq(int, H[0].events, REDLOCK_LOOP_READ));
    /* Level-triggered: unread, it is ready again at every pass. */
    cr_assert(LOOP_UNTIL(H[0].calls >= 3, WAIT_MS), "fn ran %d times for unread data", H[0].calls);
    cr_assert(eq(int, (int)read(P[0][0], &c, 1), 1));
    int n = H[0].calls;
    run_for(50);
    cr_expect(eq(int, H[0].calls, n), "fn ran with nothing to read");
    cr_expect(eq(int, H[0].inside, 0));
    hooks_done();
}

Test(hooks, watch_set_zero_stops_the_watch_and_setting_it_again_resumes)
{
    make_pipe(0);
    W[0] = watch(P[0][0], &H[0], REDLOCK_LOOP_READ);
    put_byte(0);
    cr_assert(LOOP_UNTIL(H[0].calls >= 1, WAIT_MS));
    cr_assert(eq(int, T.watch_set(W[0], 0), 0));
    int n = H[0].calls;
    run_for(50);
    cr_expect(eq(int, H[0].calls, n), "fn ran %d times watching for nothing", H[0].calls - n);
    cr_assert(eq(int, T.watch_set(W[0], REDLOCK_LOOP_READ), 0));
    cr_assert(LOOP_UNTIL(H[0].calls > n, WAIT_MS), "set again: fn never ran");
    cr_expect(eq(int, H[0].events, REDLOCK_LOOP_READ));
    hooks_done();
}

Test(hooks, a_writable_pipe_reports_write_and_nothing_else)
{
    make_pipe(0);
    W[0] = watch(P[0][1], &H[0], REDLOCK_LOOP_READ | REDLOCK_LOOP_WRITE);
    cr_assert(LOOP_UNTIL(H[0].calls >= 1, WAIT_MS), "a writable pipe: fn never ran");
    cr_expect(eq(int, H[0].events, REDLOCK_LOOP_WRITE));
    hooks_done();
}

Test(hooks, a_hang_up_is_reported_as_the_watched_events)
{
    make_pipe(0);
    make_pipe(1);
    W[0] = watch(P[0][0], &H[0], REDLOCK_LOOP_READ | REDLOCK_LOOP_WRITE);
    W[1] = watch(P[1][0], &H[1], REDLOCK_LOOP_READ);
    close(P[0][1]);
    close(P[1][1]);
    P[0][1] = P[1][1] = -1;
    cr_assert(LOOP_UNTIL(H[0].calls >= 1 && H[1].calls >= 1, WAIT_MS), "hang-up not reported");
    cr_expect(eq(int, H[0].events, REDLOCK_LOOP_READ | REDLOCK_LOOP_WRITE));
    cr_expect(eq(int, H[1].events, REDLOCK_LOOP_READ));
    hooks_done();
}

Test(hooks, an_error_is_reported_as_the_watched_events_at_every_pass)
{
    make_pipe(0);
    /* The write end of a pipe whose reader is gone polls as an error
     * (POLLERR; libuv reports it as a status < 0 and stops the handle). */
    W[0] = watch(P[0][1], &H[0], REDLOCK_LOOP_WRITE);
    close(P[0][0]);
    P[0][0] = -1;
    /* And one freed by its fn at the error. */
    make_pipe(1);
    H[1].free_w[0] = &W[1];
    W[1] = watch(P[1][1], &H[1], REDLOCK_LOOP_WRITE);
    close(P[1][0]);
    P[1][0] = -1;
    cr_assert(LOOP_UNTIL(H[0].calls >= 3, WAIT_MS), "error reported %d times, not at every pass",
              H[0].calls);
    cr_expect(eq(int, H[0].events, REDLOCK_LOOP_WRITE));
    cr_expect(eq(int, H[1].calls, 1), "freed at the error, called %d times", H[1].calls);
    /* Set to nothing, it stays quiet, error or not, and no longer wakes
     * the loop: a pass waits for the driver's tick (TC_POLL_MS), 20 in
     * 100 ms, not thousands. */
    cr_assert(eq(int, T.watch_set(W[0], 0), 0));
    int n = H[0].calls;
    int passes = run_for(100);
    cr_expect(eq(int, H[0].calls, n));
    cr_expect(lt(int, passes, 60), "%d passes in 100 ms: the loop spins on a watch set to nothing",
              passes);
    hooks_done();
}

Test(hooks, a_watch_set_in_an_earlier_fn_of_the_same_pass_takes_effect_at_once)
{
    /* Four readable pipes, ready in the same pass. Of 0 and 1, whichever
     * fn runs first sets the other's watch to nothing; of 2 and 3, to
     * WRITE, which a pipe's read end never is. What the poll saw before
     * must not reach the fn. */
    for (int i = 0; i < 4; i++) {
        make_pipe(i);
        H[i].set_other = &W[i ^ 1];
        H[i].set_other_events = i < 2 ? 0 : REDLOCK_LOOP_WRITE;
        W[i] = watch(P[i][0], &H[i], REDLOCK_LOOP_READ);
        put_byte(i);
    }
    cr_assert(LOOP_UNTIL(H[0].calls + H[1].calls && H[2].calls + H[3].calls, WAIT_MS));
    run_for(50);
    cr_expect(H[0].calls == 0 || H[1].calls == 0, "set to nothing, still called: %d and %d",
              H[0].calls, H[1].calls);
    cr_expect(H[2].calls == 0 || H[3].calls == 0, "set to WRITE, called for READ: %d and %d",
              H[2].calls, H[3].calls);
    hooks_done();
}

Test(hooks, a_zero_ms_timer_runs_after_the_current_callback_never_inside_timer_start)
{
    /* From outside any callback. */
    TM[0] = timer(&HT[0]);
    start(TM[0], 0);
    cr_expect(eq(int, HT[0].calls, 0), "ran inside timer_start");
    cr_assert(LOOP_UNTIL(HT[0].calls == 1, WAIT_MS), "a 0 ms timer never ran");

    /* From a watch's fn: the fn returns first. */
    make_pipe(0);
    TM[1] = timer(&HT[1]);
    H[0].start0 = &TM[1];
    H[0].start0_hit = &HT[1];
    HT[1].starter = &H[0];
    H[0].free_w[0] = &W[0];
    W[0] = watch(P[0][0], &H[0], REDLOCK_LOOP_READ);
    put_byte(0);
    cr_assert(LOOP_UNTIL(HT[1].calls == 1, WAIT_MS), "armed in a watch's fn: never ran");
    cr_expect(eq(int, H[0].start0_ran, 0), "ran inside timer_start, in the fn that armed it");
    cr_expect(eq(int, HT[1].starter_had_returned, 1), "ran before the fn that armed it returned");

    /* From a timer's fn. */
    TM[2] = timer(&HT[2]);
    TM[3] = timer(&HT[3]);
    HT[2].start0 = &TM[3];
    HT[2].start0_hit = &HT[3];
    HT[3].starter = &HT[2];
    start(TM[2], 0);
    cr_assert(LOOP_UNTIL(HT[3].calls == 1, WAIT_MS), "armed in a timer's fn: never ran");
    cr_expect(eq(int, HT[2].start0_ran, 0), "ran inside timer_start, in the fn that armed it");
    cr_expect(eq(int, HT[3].starter_had_returned, 1), "ran before the fn that armed it returned");
    cr_expect(eq(int, HT[0].inside + HT[1].inside + HT[3].inside, 0));
    hooks_done();
}

Test(hooks, a_zero_ms_timer_rearmed_in_its_fn_lets_ready_io_run_first)
{
    /* "After the callbacks ready now": a timer that keeps arming itself
     * for 0 ms must not hold the loop in its timer phase. */
    make_pipe(0);
    W[0] = watch(P[0][0], &H[0], REDLOCK_LOOP_READ);
    put_byte(0);
    TM[0] = timer(&HT[0]);
    HT[0].self = &TM[0];
    HT[0].rearm_until = 1000;
    H[0].watch_of = &HT[0];
    start(TM[0], 0);
    cr_assert(LOOP_UNTIL(H[0].calls >= 1, WAIT_MS), "the readable pipe never got its turn");
    cr_expect(lt(int, H[0].watch_of_calls, 10),
              "the watch ran only after %d runs of a 0 ms timer re-armed in its own fn",
              H[0].watch_of_calls);
    T.timer_stop(TM[0]);
    hooks_done();
}

Test(hooks, timer_start_again_replaces_the_last_arm)
{
    uint64_t t0;

    /* Long, then short: fires at the short one, once. */
    TM[0] = timer(&HT[0]);
    start(TM[0], 60000);
    start(TM[0], 20);
    /* Delay, then 0 ms. */
    TM[1] = timer(&HT[1]);
    start(TM[1], 60000);
    start(TM[1], 0);
    cr_assert(LOOP_UNTIL(HT[0].calls == 1 && HT[1].calls == 1, WAIT_MS),
              "re-armed shorter: ran %d and %d times", HT[0].calls, HT[1].calls);
    run_for(100);
    cr_expect(eq(int, HT[0].calls, 1));
    cr_expect(eq(int, HT[1].calls, 1));

    /* Short, then long; 0 ms, then long: fires at the long one (30 ms of
     * slack: libuv's clock counts whole ms). */
    TM[2] = timer(&HT[2]);
    TM[3] = timer(&HT[3]);
    t0 = tc_now_us();
    start(TM[2], 20);
    start(TM[2], 400);
    start(TM[3], 0);
    start(TM[3], 400);
    cr_assert(LOOP_UNTIL(HT[2].calls == 1 && HT[3].calls == 1, WAIT_MS));
    cr_expect(ge(u64, HT[2].first_us - t0, 370000), "20 ms, then 400: ran after %llu us",
              (unsigned long long)(HT[2].first_us - t0));
    cr_expect(ge(u64, HT[3].first_us - t0, 370000), "0 ms, then 400: ran after %llu us",
              (unsigned long long)(HT[3].first_us - t0));
    run_for(50);
    cr_expect(eq(int, HT[2].calls + HT[3].calls, 2));
    hooks_done();
}

Test(hooks, a_timer_counts_from_timer_start_even_after_a_long_wait_outside_the_loop)
{
    uint64_t t0;

    run_for(20);
    /* The program computes for a while, away from its loop: time is the
     * subject (libuv's idea of now stays where the last pass left it). */
    tc_sleep_ms(300);
    TM[0] = timer(&HT[0]);
    t0 = tc_now_us();
    start(TM[0], 200);
    cr_assert(LOOP_UNTIL(HT[0].calls == 1, WAIT_MS));
    cr_expect(ge(u64, HT[0].first_us - t0, 195000), "200 ms timer ran after %llu us",
              (unsigned long long)(HT[0].first_us - t0));
    hooks_done();
}

Test(hooks, timer_stop_disarms_and_start_arms_again)
{
    TM[0] = timer(&HT[0]);
    TM[1] = timer(&HT[1]);
    TM[2] = timer(&HT[2]);
    start(TM[0], 20);
    start(TM[1], 0);
    T.timer_stop(TM[0]);
    T.timer_stop(TM[1]);
    T.timer_stop(TM[2]); /* never armed: a no-op */
    run_for(150);
    cr_expect(eq(int, HT[0].calls + HT[1].calls + HT[2].calls, 0), "a stopped timer ran");
    start(TM[0], 0);
    cr_assert(LOOP_UNTIL(HT[0].calls == 1, WAIT_MS), "stopped, then armed: never ran");
    hooks_done();
}

Test(hooks, a_watch_or_a_timer_may_free_itself_in_its_fn)
{
    make_pipe(0);
    H[0].free_w[0] = &W[0];
    W[0] = watch(P[0][0], &H[0], REDLOCK_LOOP_READ);
    put_byte(0); /* never read: it would be ready at every pass */
    TM[0] = timer(&HT[0]);
    HT[0].free_t[0] = &TM[0];
    TM[1] = timer(&HT[1]);
    HT[1].free_t[0] = &TM[1];
    start(TM[0], 0);
    start(TM[1], 10);
    cr_assert(LOOP_UNTIL(H[0].calls && HT[0].calls && HT[1].calls, WAIT_MS));
    run_for(50);
    cr_expect(eq(int, H[0].calls, 1), "a watch freed in its fn ran again");
    cr_expect(eq(int, HT[0].calls + HT[1].calls, 2), "a timer freed in its fn ran again");
    cr_expect(zero(ptr, W[0]));
    cr_expect(zero(ptr, TM[0]));
    hooks_done();
}

Test(hooks, fn_never_runs_after_free_even_if_ready_in_the_same_pass)
{
    /* Two readable pipes: whichever fn runs first frees both watches. */
    make_pipe(0);
    make_pipe(1);
    for (int i = 0; i < 2; i++) {
        H[i].free_w[0] = &W[0];
        H[i].free_w[1] = &W[1];
    }
    W[0] = watch(P[0][0], &H[0], REDLOCK_LOOP_READ);
    W[1] = watch(P[1][0], &H[1], REDLOCK_LOOP_READ);
    put_byte(0);
    put_byte(1);
    /* Two 0 ms timers: the same. */
    TM[0] = timer(&HT[0]);
    TM[1] = timer(&HT[1]);
    for (int i = 0; i < 2; i++) {
        HT[i].free_t[0] = &TM[0];
        HT[i].free_t[1] = &TM[1];
    }
    start(TM[0], 0);
    start(TM[1], 0);
    /* Freed outside any fn while ready: never runs. */
    make_pipe(2);
    W[2] = watch(P[2][0], &H[2], REDLOCK_LOOP_READ);
    put_byte(2);
    TM[2] = timer(&HT[2]);
    start(TM[2], 0);
    T.watch_free(W[2]);
    T.timer_free(TM[2]);
    W[2] = TM[2] = NULL;

    cr_assert(LOOP_UNTIL(H[0].calls + H[1].calls && HT[0].calls + HT[1].calls, WAIT_MS));
    run_for(50);
    cr_expect(eq(int, H[0].calls + H[1].calls, 1), "watches: %d and %d calls", H[0].calls,
              H[1].calls);
    cr_expect(eq(int, HT[0].calls + HT[1].calls, 1), "timers: %d and %d calls", HT[0].calls,
              HT[1].calls);
    cr_expect(eq(int, H[2].calls + HT[2].calls, 0), "freed while ready, ran anyway");
    hooks_done();
}

/* H[3]'s fn: what the library does on a reconnect, inside one pass: free
 * the watch, close the fd, open a new socket that gets the same number,
 * watch it. */
static void *reused_watch;
static int reused_fd;
static void on_reconnect(void *arg, int events)
{
    int q[2];

    (void)arg, (void)events;
    if (reused_watch)
        return;
    T.watch_free(W[0]);
    W[0] = NULL;
    close(P[0][0]);
    cr_assert(eq(int, pipe(q), 0));
    if (q[0] != reused_fd) {
        cr_assert(eq(int, dup2(q[0], reused_fd), reused_fd));
        close(q[0]);
    }
    P[0][0] = reused_fd;
    close(P[0][1]);
    P[0][1] = q[1];
    reused_watch = T.watch_new(T.data, reused_fd, on_io, &H[0]);
    cr_assert(not(zero(ptr, reused_watch)), "watch_new on a reused fd failed");
    W[1] = reused_watch;
    cr_assert(eq(int, T.watch_set(reused_watch, REDLOCK_LOOP_READ), 0));
    put_byte(0);
}

Test(hooks, a_reused_fd_gets_a_new_watch_in_the_pass_that_freed_the_old)
{
    make_pipe(0);
    make_pipe(1);
    reused_fd = P[0][0];
    W[0] = watch(P[0][0], &H[1], REDLOCK_LOOP_READ);
    in_hook = 1;
    W[2] = T.watch_new(T.data, P[1][0], on_reconnect, NULL);
    cr_assert(not(zero(ptr, W[2])));
    cr_assert(eq(int, T.watch_set(W[2], REDLOCK_LOOP_READ), 0));
    in_hook = 0;
    put_byte(1);
    cr_assert(LOOP_UNTIL(H[0].calls >= 1, WAIT_MS), "the new watch on fd %d never ran", reused_fd);
    cr_expect(eq(int, H[0].events, REDLOCK_LOOP_READ));
    hooks_done();
}

/* ------------------------------------------------------------------------ */
/* Clients on the loop                                                      */
/* ------------------------------------------------------------------------ */

#define TTL_MS 10000u

static redlock_config CFG;   /* tc_config(); what new_client() makes */
static redlock_client *C[2]; /* freed by the teardown, if the test did not */
static int in_call;          /* an *_async call is on the stack */

/* What one operation's callback saw. */
struct rec {
    int runs;
    int runs_inside_call;
    int done;
    int status;
    redlock_lock *lock;
    redlock_error err;
    size_t ok;
    uint32_t attempts;
    int vote[REDLOCK_MAX_MASTERS]; /* enum redlock_vote_kind per master */
    uint64_t at_us;
    int free_client; /* free the client from this callback */
    int order;       /* seq when it ran */
};

static void on_done(redlock_client *c, int status, redlock_lock *lock, const redlock_outcome *out,
                    const redlock_error *err, void *arg)
{
    struct rec *r = arg;

    r->runs++;
    r->runs_inside_call += in_call;
    r->status = status;
    r->lock = lock;
    r->err = *err;
    r->at_us = tc_now_us();
    r->order = ++seq;
    if (out) {
        r->ok = redlock_outcome_ok(out);
        r->attempts = redlock_outcome_attempts(out);
        for (size_t i = 0; i < redlock_outcome_masters(out) && i < REDLOCK_MAX_MASTERS; i++)
            r->vote[i] = redlock_outcome_vote(out, i)->kind;
    }
    r->done = 1;
    /* Free the client, unless this runs inside its free already. */
    for (int i = 0; i < 2 && r->free_client; i++) {
        if (C[i] == c) {
            C[i] = NULL;
            redlock_client_free(c);
        }
    }
}

static void client_setup(void)
{
    signal(SIGPIPE, SIG_IGN); /* an async client writes on our thread (redlock.h) */
    C[0] = C[1] = NULL;
    tc_config(&CFG);
    seq = 0;
    open_loop();
}

/* The end of every test (in its body, as hooks_done()): free the
 * clients, close the loop, nothing of the adapter's may be on it. */
static void clients_done(void)
{
    for (int i = 0; i < 2; i++) {
        redlock_client_free(C[i]);
        C[i] = NULL;
    }
    close_loop();
}

/* A test that failed before clients_done(). */
static void client_teardown(void)
{
    for (int i = 0; i < 2; i++)
        redlock_client_free(C[i]);
    if (L)
        D->close(L);
}

static void client_faults_teardown(void)
{
    tc_heal();
    client_teardown();
}

TestSuite(client, .init = client_setup, .fini = client_teardown, .timeout = 60);
TestSuite(client_faults, .init = client_setup, .fini = client_faults_teardown, .timeout = 120);

/* A client of CFG on the test's loop, made by the adapter. */
static redlock_client *new_client(void)
{
    redlock_client *c = NULL;
    redlock_error e;
    int rc = D->client_new(&CFG, L, &c, &e);

    cr_assert(eq(int, rc, 0), "redlock_client_new_%s: %s: %s", D->name, redlock_err_name(rc),
              e.msg);
    return c;
}

struct ready {
    int done;
    int status;
    size_t n_up;
};

static void on_ready(redlock_client *c, int status, size_t n_up, const redlock_error *err,
                     void *arg)
{
    struct ready *r = arg;

    (void)c, (void)err;
    r->status = status;
    r->n_up = n_up;
    r->done = 1;
}

/* redlock_ready_async() for @want masters within @ms, run to its end. */
static struct ready ready(redlock_client *c, int want, int ms)
{
    struct ready r = { 0 };
    redlock_error e;
    int rc = redlock_ready_async(c, (size_t)want, (uint32_t)ms, on_ready, &r, &e);

    cr_assert(eq(int, rc, 0), "redlock_ready_async: %s", e.msg);
    cr_assert(LOOP_UNTIL(r.done, ms + WAIT_MS), "redlock_ready_async: no callback");
    return r;
}

static void all_up(redlock_client *c)
{
    struct ready r = ready(c, tc_n(), WAIT_MS);

    cr_assert(eq(int, r.status, 0), "%zu of %d masters up", r.n_up, tc_n());
}

/* Start an op with @start (an *_async call) and run the loop until its
 * callback ran. */
#define RUN_OP(r, call)                                                                  \
    do {                                                                                 \
        redlock_error e_;                                                                \
        int rc_;                                                                         \
        in_call = 1;                                                                     \
        rc_ = (call);                                                                    \
        in_call = 0;                                                                     \
        cr_assert(eq(int, rc_, 0), "%s: %s: %s", #call, redlock_err_name(rc_), e_.msg);  \
        cr_assert(eq(int, (r)->runs, 0), "%s: the callback ran inside the call", #call); \
        cr_assert(LOOP_UNTIL((r)->done, WAIT_MS), "%s: the callback never ran", #call);  \
        cr_expect(eq(int, (r)->runs_inside_call, 0));                                    \
    } while (0)

#define ACQUIRE(c, res, r) \
    RUN_OP(r, redlock_acquire_async(c, res, strlen(res), TTL_MS, on_done, r, &e_))

Test(client, acquire_extend_release_then_extend_fails_each_called_back_once)
{
    struct rec acq = { 0 }, ext = { 0 }, rel = { 0 }, late = { 0 };
    char res[128];
    int64_t before;

    tc_resource(res, sizeof(res), NULL);
    C[0] = new_client();
    ACQUIRE(C[0], res, &acq);
    cr_assert(eq(int, acq.status, 0), "acquire: %s", acq.err.msg);
    cr_assert(not(zero(ptr, acq.lock)));
    const char *tok = redlock_lock_token(acq.lock);
    cr_assert(TC_AWAIT(tc_count_token(res, strlen(res), tok, TTL_MS) == tc_n(), WAIT_MS),
              "the lock is not on every master");

    before = redlock_lock_validity_ms(acq.lock);
    RUN_OP(&ext, redlock_extend_async(C[0], acq.lock, 3 * TTL_MS, on_done, &ext, &e_));
    cr_assert(eq(int, ext.status, 0), "extend: %s", ext.err.msg);
    cr_expect(gt(i64, redlock_lock_validity_ms(acq.lock), before));
    cr_expect(TC_AWAIT(tc_count_token(res, strlen(res), tok, 3 * TTL_MS) -
                               tc_count_token(res, strlen(res), tok, TTL_MS) >=
                           (int)redlock_client_quorum(C[0]),
                       WAIT_MS),
              "no quorum of masters holds the extended ttl");

    RUN_OP(&rel, redlock_release_async(C[0], acq.lock, on_done, &rel, &e_));
    cr_assert(eq(int, rel.status, 0), "release: %s", rel.err.msg);
    cr_expect(TC_AWAIT(tc_key_count(res, strlen(res)) == 0, WAIT_MS), "a key left after release");

    RUN_OP(&late, redlock_extend_async(C[0], acq.lock, TTL_MS, on_done, &late, &e_));
    cr_expect(eq(int, late.status, REDLOCK_ENOTHELD), "extend after release: %s: %s",
              redlock_err_name(late.status), late.err.msg);
    tc_expect_msg(&late.err, "extend after release");
    cr_expect(eq(int, acq.runs + ext.runs + rel.runs + late.runs, 4));
    redlock_lock_free(acq.lock);
    clients_done();
}

Test(client, two_clients_on_one_loop_the_second_waits_and_gets_the_lock_at_the_release)
{
    struct rec a = { 0 }, b = { 0 }, rel = { 0 };
    char res[128];
    long long seen[REDLOCK_MAX_MASTERS];
    int reached;

    tc_resource(res, sizeof(res), NULL);
    C[0] = new_client();
    /* B waits up to 10 s, and its polls are 5 s apart: only the release's
     * wake-up, through B's subscriber connections on this loop, can give
     * it the lock soon. */
    CFG.wait_ms = 10000;
    CFG.retry_delay_ms = 5000;
    CFG.retry_jitter_ms = 0;
    C[1] = new_client();
    all_up(C[1]);

    ACQUIRE(C[0], res, &a);
    cr_assert(eq(int, a.status, 0), "A: %s", a.err.msg);
    cr_assert(TC_AWAIT(
        tc_count_token(res, strlen(res), redlock_lock_token(a.lock), TTL_MS) == tc_n(), WAIT_MS));

    for (int i = 0; i < tc_n(); i++)
        seen[i] = tc_acquires_seen(i);
    in_call = 1;
    cr_assert(eq(int, redlock_acquire_async(C[1], res, strlen(res), TTL_MS, on_done, &b, NULL), 0));
    in_call = 0;
    /* B's first attempt has reached every master (each held by A). */
    reached = LOOP_UNTIL(__extension__({
                             int all_ = 1;
                             for (int i = 0; i < tc_n(); i++)
                                 all_ &= tc_acquires_seen(i) > seen[i];
                             all_;
                         }),
                         WAIT_MS);
    cr_assert(reached, "B's attempt never reached every master");
    cr_assert(eq(int, b.runs, 0), "B done while A holds the lock: %s: %s",
              redlock_err_name(b.status), b.err.msg);

    uint64_t released_at = tc_now_us();
    RUN_OP(&rel, redlock_release_async(C[0], a.lock, on_done, &rel, &e_));
    cr_assert(eq(int, rel.status, 0), "A's release: %s", rel.err.msg);
    cr_assert(LOOP_UNTIL(b.done, WAIT_MS), "B never got the lock");
    cr_assert(eq(int, b.status, 0), "B: %s: %s", redlock_err_name(b.status), b.err.msg);
    cr_expect(ge(u32, b.attempts, 2), "B got it at its first attempt, without waiting");
    cr_expect(lt(u64, b.at_us - released_at, 2500000),
              "B got the lock %llu ms after the release: by a poll, not the wake-up",
              (unsigned long long)((b.at_us - released_at) / 1000));
    cr_expect(eq(int, b.runs, 1));
    redlock_lock_free(a.lock);
    redlock_lock_free(b.lock);
    clients_done();
}

Test(client, a_client_freed_in_its_own_callback_ends_the_rest_and_leaves_the_loop_clean)
{
    struct rec first = { 0 }, second = { 0 };
    char r1[128], r2[128];

    tc_resource(r1, sizeof(r1), NULL);
    tc_resource(r2, sizeof(r2), NULL);
    C[0] = new_client();
    all_up(C[0]);
    cr_assert(gt(int, D->handles(L), 0), "a connected client has nothing on the loop");
    first.free_client = 1;
    second.free_client = 1;
    cr_assert(eq(int, redlock_acquire_async(C[0], r1, strlen(r1), TTL_MS, on_done, &first, NULL),
                 0));
    cr_assert(eq(int, redlock_acquire_async(C[0], r2, strlen(r2), TTL_MS, on_done, &second, NULL),
                 0));
    cr_assert(LOOP_UNTIL(first.done && second.done, WAIT_MS), "callbacks: %d and %d", first.runs,
              second.runs);
    /* Whichever ran first freed the client; the other ran inside that free,
     * with its outcome or ESHUTDOWN. */
    struct rec *a = first.order < second.order ? &first : &second;
    struct rec *b = a == &first ? &second : &first;
    cr_expect(eq(int, a->status, 0), "%s", a->err.msg);
    cr_expect(b->status == 0 || b->status == REDLOCK_ESHUTDOWN, "%s: %s",
              redlock_err_name(b->status), b->err.msg);
    cr_expect(zero(ptr, C[0]));
    run_for(50);
    cr_expect(eq(int, first.runs + second.runs, 2), "a callback ran again");
    cr_expect(eq(int, D->handles(L), 0), "%d watches or timers left after the free", D->handles(L));
    redlock_lock_free(first.lock);
    redlock_lock_free(second.lock);
    clients_done();
}

Test(client, freeing_a_client_with_ops_in_flight_calls_them_back_with_eshutdown)
{
    struct rec r[3] = { { 0 } };
    char res[3][128];

    C[0] = new_client();
    all_up(C[0]);
    for (int i = 0; i < 3; i++) {
        tc_resource(res[i], sizeof(res[i]), NULL);
        cr_assert(eq(
            int, redlock_acquire_async(C[0], res[i], strlen(res[i]), TTL_MS, on_done, &r[i], NULL),
            0));
    }
    cr_assert(gt(int, D->handles(L), 0));
    redlock_client_free(C[0]);
    C[0] = NULL;
    for (int i = 0; i < 3; i++) {
        cr_expect(eq(int, r[i].runs, 1), "op %d: %d callbacks before the free returned", i,
                  r[i].runs);
        cr_expect(eq(int, r[i].status, REDLOCK_ESHUTDOWN), "op %d: %s", i,
                  redlock_err_name(r[i].status));
        tc_expect_msg(&r[i].err, "shut down");
        cr_expect(zero(ptr, r[i].lock));
    }
    /* One more pass: the loop is then as the client found it. */
    D->pass(L);
    cr_expect(eq(int, D->handles(L), 0), "%d watches or timers left", D->handles(L));
    run_for(50);
    for (int i = 0; i < 3; i++)
        cr_expect(eq(int, r[i].runs, 1), "op %d called back again", i);
    clients_done();
}

Test(client_faults, paused_masters_time_out_on_the_loops_timers_and_the_rest_grant)
{
    enum { TIMEOUT_MS = 300 };
    struct rec fail = { 0 }, ok = { 0 };
    char r1[128], r2[128];
    uint64_t t0;

    tc_resource(r1, sizeof(r1), NULL);
    tc_resource(r2, sizeof(r2), NULL);
    CFG.node_timeout_ms = TIMEOUT_MS;
    CFG.wait_ms = 0;
    C[0] = new_client();
    all_up(C[0]);
    tc_pause(2);
    tc_pause(3);
    tc_pause(4);

    /* Three silent masters: only their timers, on this loop, end it. */
    t0 = tc_now_us();
    ACQUIRE(C[0], r1, &fail);
    cr_assert(eq(int, fail.status, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(fail.status),
              fail.err.msg);
    cr_expect(ge(u64, fail.at_us - t0, (uint64_t)(TIMEOUT_MS - 10) * 1000), "ended after %llu us",
              (unsigned long long)(fail.at_us - t0));
    for (int m = 2; m < 5; m++)
        cr_expect(eq(int, fail.vote[m], REDLOCK_VOTE_TIMEOUT), "paused master %d voted %s", m,
                  redlock_vote_kind_name(fail.vote[m]));

    /* One back: three of five answer, the two still paused do not matter. */
    tc_resume(2);
    cr_assert(eq(int, ready(C[0], 3, WAIT_MS).status, 0));
    ACQUIRE(C[0], r2, &ok);
    cr_assert(eq(int, ok.status, 0), "%s: %s", redlock_err_name(ok.status), ok.err.msg);
    for (int m = 0; m < 3; m++)
        cr_expect(eq(int, ok.vote[m], REDLOCK_VOTE_OK), "master %d voted %s", m,
                  redlock_vote_kind_name(ok.vote[m]));
    redlock_lock_free(ok.lock);
    clients_done();
}

Test(client_faults, a_killed_master_is_seen_by_its_watch_and_reconnected_when_back)
{
    struct rec down = { 0 }, back = { 0 };
    char r1[128], r2[128];
    struct ready up;
    uint64_t t0;

    tc_resource(r1, sizeof(r1), NULL);
    tc_resource(r2, sizeof(r2), NULL);
    CFG.node_timeout_ms = TC_FAULTS_NODE_TIMEOUT_MS;
    CFG.wait_ms = 0;
    CFG.reconnect_min_ms = 10;
    CFG.reconnect_max_ms = 100;
    C[0] = new_client();
    all_up(C[0]);
    tc_kill(4);

    /* No operation in flight: only the watch on master 4's socket can
     * tell the client that the connection hung up. */
    cr_assert(LOOP_UNTIL((up = ready(C[0], tc_n(), 50)).n_up == (size_t)tc_n() - 1, WAIT_MS),
              "the hang-up of master 4 was never seen: %zu masters up", up.n_up);

    /* Masters 0 and 1 hold r1 for someone else, so the acquire is decided
     * only by master 4's vote: DOWN, at once, not a node timeout. */
    tc_plant(0, r1, strlen(r1), "someone else", TTL_MS);
    tc_plant(1, r1, strlen(r1), "someone else", TTL_MS);
    t0 = tc_now_us();
    ACQUIRE(C[0], r1, &down);
    cr_expect(not(eq(int, down.status, 0)), "acquired a resource two masters hold for another");
    cr_expect(eq(int, down.vote[4], REDLOCK_VOTE_DOWN), "killed master voted %s",
              redlock_vote_kind_name(down.vote[4]));
    cr_expect(eq(int, down.vote[2], REDLOCK_VOTE_OK));
    cr_expect(eq(int, down.vote[3], REDLOCK_VOTE_OK));
    cr_expect(lt(u64, down.at_us - t0, TC_FAULTS_NODE_TIMEOUT_MS * 1000u / 2), "took %llu us",
              (unsigned long long)(down.at_us - t0));

    tc_restart(4);
    up = ready(C[0], tc_n(), WAIT_MS);
    cr_assert(eq(int, up.status, 0), "master 4 is back but not reconnected: %zu up", up.n_up);
    ACQUIRE(C[0], r2, &back);
    cr_assert(eq(int, back.status, 0), "%s", back.err.msg);
    /* Reached again: it answers (a restarted master may vote EXCLUDED
     * while the memory guard waits; it answers all the same). */
    cr_expect(back.vote[4] != REDLOCK_VOTE_DOWN && back.vote[4] != REDLOCK_VOTE_TIMEOUT,
              "master 4 voted %s after it came back", redlock_vote_kind_name(back.vote[4]));
    redlock_lock_free(down.lock);
    redlock_lock_free(back.lock);
    clients_done();
}

/* Bad tables: each hook left NULL, sizes this library does not know. */
static const char *const bad_cases[] = {
    "watch_new NULL",        "watch_set NULL",          "watch_free NULL", "timer_new NULL",
    "timer_start NULL",      "timer_stop NULL",         "timer_free NULL", "size 0",
    "size of a later table", "size of a shorter table",
};

/* The adapter's table, broken as bad_cases[@k] says. */
static const char *bad_table(size_t k, redlock_loop *l)
{
    D->fill(l, L);
    switch (k) {
    case 0: l->watch_new = NULL; break;
    case 1: l->watch_set = NULL; break;
    case 2: l->watch_free = NULL; break;
    case 3: l->timer_new = NULL; break;
    case 4: l->timer_start = NULL; break;
    case 5: l->timer_stop = NULL; break;
    case 6: l->timer_free = NULL; break;
    case 7: l->size = 0; break;
    case 8: l->size = sizeof(*l) + sizeof(void *); break;
    default: l->size = sizeof(*l) - sizeof(void *);
    }
    return bad_cases[k];
}

ParameterizedTestParameters(client, bad_tables_are_einval_with_one_line)
{
    TC_CASE_INDEXES(bad_cases);
}

ParameterizedTest(size_t *k, client, bad_tables_are_einval_with_one_line)
{
    redlock_loop l;
    redlock_client *c = (redlock_client *)&l; /* must stay as it is */
    redlock_error e;
    const char *what = bad_table(*k, &l);
    int rc = redlock_client_new_loop(&CFG, &l, &c, &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL), "%s: %s", what, redlock_err_name(rc));
    cr_expect(eq(int, e.code, REDLOCK_EINVAL), "%s", what);
    cr_expect(eq(ptr, (void *)c, (void *)&l), "%s: *ret clobbered", what);
    tc_expect_msg(&e, what);
    /* It names what is wrong: the hook, or the size. */
    char word[32];
    sscanf(what, "%31s", word);
    cr_expect(not(zero(ptr, strstr(e.msg, word))), "%s: the message does not say: %s", what, e.msg);
    cr_expect(eq(int, D->handles(L), 0), "%s: left something on the loop", what);
    clients_done();
}

Test(client, a_null_table_is_einval_with_one_line)
{
    redlock_client *c = NULL;
    redlock_error e;

    cr_expect(eq(int, redlock_client_new_loop(&CFG, NULL, &c, &e), REDLOCK_EINVAL));
    cr_expect(zero(ptr, c));
    tc_expect_msg(&e, "NULL loop");
    cr_expect(not(zero(ptr, strstr(e.msg, "redlock_loop"))), "%s", e.msg);
    cr_expect(eq(int, D->fill(NULL, L), REDLOCK_EINVAL), "the adapter filled a NULL table");
    clients_done();
}
