/* await.c - the tests' clock, their one poll interval, their one sleep and
 * their wait on a condition variable (see await.h for when each is right).
 */
#include "await.h"

#include <errno.h>
#include <time.h>

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

int tc_poll_pause(uint64_t deadline_us)
{
    uint64_t now = tc_now_us(), step = TC_POLL_MS * 1000u;

    if (now >= deadline_us)
        return 0;
    /* The pause between two looks at a condition that no event reports. */
    sleep_us(deadline_us - now < step ? deadline_us - now : step);
    return 1;
}
