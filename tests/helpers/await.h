/* await.h - waiting in tests: for an event or a condition, not for a while.
 *
 * A test that sleeps to let something happen fails on a loaded machine and
 * wastes time on an idle one. These helpers wait for the thing itself:
 * TC_AWAIT() re-evaluates a condition until it holds or a deadline passes
 * (for state only a poll can see: a key on a master, a counter in INFO, a
 * process state); TC_RUN_UNTIL() does the same while it runs an event loop
 * (a callback's flag); tc_cond_wait_until() waits for another thread's
 * signal. tc_sleep_ms() is for the few places where time itself is
 * the subject (a ttl lapsing, a holder working, load running for a while);
 * each call says so in a comment. Free of criterion: forked children and
 * plain programs use it too.
 */
#ifndef TC_AWAIT_H
#define TC_AWAIT_H

#include <pthread.h>
#include <stdint.h>

#include <event2/event.h>

/* CLOCK_MONOTONIC in µs: the one clock of the tests (and of histories). */
uint64_t tc_now_us(void);

/* Milliseconds since @t0_us (a tc_now_us() reading). */
uint64_t tc_ms_since(uint64_t t0_us);

/* Sleep @ms (@us), resuming after signals. Only where time is the
 * subject. */
void tc_sleep_ms(unsigned ms);
void tc_sleep_us(unsigned us);

/* Between two evaluations of a TC_AWAIT() condition. Short: a condition
 * costs a round trip or two to a local master. */
#define TC_POLL_MS 5

/* 0 once @deadline_us (tc_now_us()) has passed; else waits one poll
 * interval (less if the deadline comes first) and returns 1. */
int tc_poll_pause(uint64_t deadline_us);

/* For a condition another thread signals: pthread_cond_clockwait() on the
 * tests' clock until @deadline_us (tc_now_us()), @mu held. Return: 0 when
 * woken (check the condition again), ETIMEDOUT once the deadline passed. */
int tc_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline_us);

/*
 * TC_AWAIT() - Evaluate @cond until it holds or @timeout_ms has passed
 *
 * @cond is evaluated at least once, and once more at the deadline.
 * Value: 1 if @cond held, 0 on timeout. A GNU statement expression.
 */
#define TC_AWAIT(cond, timeout_ms)                                            \
    __extension__({                                                           \
        uint64_t tc_deadline_ = tc_now_us() + 1000u * (uint64_t)(timeout_ms); \
        int tc_held_;                                                         \
        while (!(tc_held_ = !!(cond)) && tc_poll_pause(tc_deadline_))         \
            ;                                                                 \
        tc_held_;                                                             \
    })

/* A timer on @base that wakes its loop every TC_POLL_MS (TC_RUN_UNTIL). */
struct event *tc_tick_new(struct event_base *base);

/* One pass of @base's loop (EVLOOP_ONCE); fails the test if the loop fails. */
void tc_loop_once(struct event_base *base);

/*
 * TC_RUN_UNTIL() - Run @base until @cond holds or @timeout_ms passes
 *
 * TC_AWAIT() for a loop the test runs itself: for a flag a callback on
 * @base sets, or state on the masters that a poll sees. @cond is evaluated
 * after each loop wakeup (a tick wakes it at least every TC_POLL_MS). Fails
 * the test if the loop fails. Value: 1 if @cond held, 0 on timeout.
 */
#define TC_RUN_UNTIL(base, cond, timeout_ms)                                   \
    __extension__({                                                            \
        uint64_t cru_deadline_ = tc_now_us() + 1000u * (uint64_t)(timeout_ms); \
        struct event *cru_tick_ = tc_tick_new(base);                           \
        int cru_held_;                                                         \
        while (!(cru_held_ = !!(cond)) && tc_now_us() < cru_deadline_)         \
            tc_loop_once(base);                                                \
        event_free(cru_tick_);                                                 \
        cru_held_;                                                             \
    })

#endif
