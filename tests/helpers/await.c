/* await.c - the tests' clock, their one poll interval, their one sleep and
 * their ways to wait: polling, on an event loop, on a condition variable
 * (see await.h for when each is right).
 */
#include "await.h"

#include <errno.h>
#include <time.h>

#include "cluster.h" /* tc_fail() */

uint64_t tc_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t tc_ms_since(uint64_t t0_us)
{
    return (tc_now_us() - t0_us) / 1000u;
}

static void sleep_us(uint64_t us)
{
    struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

void tc_sleep_ms(unsigned ms)
{
    sleep_us((uint64_t)ms * 1000u);
}

void tc_sleep_us(unsigned us)
{
    sleep_us(us);
}

int tc_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline_us)
{
    struct timespec ts = { (time_t)(deadline_us / 1000000u),
                           (long)(deadline_us % 1000000u) * 1000L };

    return pthread_cond_clockwait(cv, mu, CLOCK_MONOTONIC, &ts);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

struct event *tc_tick_new(struct event_base *base)
{
    struct event *ev = event_new(base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval tv = { 0, TC_POLL_MS * 1000 };

    if (!ev || event_add(ev, &tv) != 0)
        tc_fail("tc_tick_new: cannot arm a timer");
    return ev;
}

void tc_loop_once(struct event_base *base)
{
    if (event_base_loop(base, EVLOOP_ONCE) < 0)
        tc_fail("TC_RUN_UNTIL: event_base_loop failed");
}

int tc_poll_pause(uint64_t deadline_us)
{
    uint64_t now = tc_now_us(), step = TC_POLL_MS * 1000u;

    if (now >= deadline_us)
        return 0;
    /* The pause between two looks at a condition that no event reports. */
    sleep_us(deadline_us - now < step ? deadline_us - now : step);
    return 1;
}
