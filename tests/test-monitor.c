/* test-monitor.c - the clock monitor's arithmetic on synthetic TIME samples.
 *
 * Samples are made the way a round trip makes them: the master reads its
 * clock somewhere inside [send, recv]. The properties: offsets never flag;
 * rates beyond the drift factor and jumps beyond the threshold do; network
 * delay widens the bounds but never invents a fault; a master is trusted
 * again only after the readmit window.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "monitor.h"

/* A master whose clock is offset by @off_us and runs at @rate, sampled at
 * client time @t (µs) with a round trip of @rtt_us, read at the midpoint. */
static drift_sample sample(uint64_t t, uint64_t rtt_us, double rate, int64_t off_us)
{
    drift_sample s;
    s.send_us = t;
    s.recv_us = t + rtt_us;
    int64_t mid = (int64_t)(t + rtt_us / 2);
    s.server_us = (int64_t)((double)mid * rate) + off_us;
    s.real_mid_us = mid;
    return s;
}

static void feed(drift_monitor *m, int n, uint64_t start, uint64_t step, uint64_t rtt, double rate,
                 int64_t off, int *events)
{
    for (int i = 0; i < n; i++) {
        drift_sample s = sample(start + (uint64_t)i * step, rtt, rate, off);
        int ev = drift_monitor_add(m, &s);
        if (ev != DRIFT_EV_NONE)
            (*events)++;
    }
}

Test(monitor, offset_alone_never_flags)
{
    drift_monitor m;
    drift_monitor_init(&m, 0.01, 25, 10000, 10000);
    int events = 0;
    /* a day behind, then a day ahead: constant offsets, true rate */
    feed(&m, 40, 1000000, 100000, 300, 1.0, -86400LL * 1000000, &events);
    cr_assert(eq(int, events, 0));
    cr_assert(m.rate_lo <= 1.0 && m.rate_hi >= 1.0, "rate bounds [%f, %f] must hold 1.0", m.rate_lo,
              m.rate_hi);
    cr_assert(m.offset_us < -86399LL * 1000000, "offset %lld reported", (long long)m.offset_us);
    cr_assert(drift_monitor_trusted(&m, 10000000));
}

Test(monitor, fast_clock_beyond_factor_flags_as_rate)
{
    drift_monitor m;
    drift_monitor_init(&m, 0.01, 1000, 10000, 10000); /* large jump threshold: rate only */
    int events = 0;
    feed(&m, 20, 1000000, 100000, 300, 1.5, 0, &events);
    cr_assert(eq(u64, m.rate_faults, 1), "one rate fault, not one per sample");
    cr_assert(eq(u64, m.jumps, 0));
    cr_assert(m.rate_lo > 1.4 && m.rate_hi < 1.6, "rate [%f, %f]", m.rate_lo, m.rate_hi);
    cr_assert(not(drift_monitor_trusted(&m, 1000000 + 19 * 100000)));
}

Test(monitor, rate_within_factor_is_trusted)
{
    drift_monitor m;
    drift_monitor_init(&m, 0.01, 25, 10000, 10000);
    int events = 0;
    feed(&m, 50, 1000000, 100000, 300, 1.005, 0, &events); /* 0.5 % fast: allowed */
    cr_assert(eq(int, events, 0));
}

Test(monitor, slow_clock_beyond_factor_flags)
{
    drift_monitor m;
    drift_monitor_init(&m, 0.01, 1000, 10000, 10000);
    int events = 0;
    feed(&m, 20, 1000000, 100000, 300, 0.5, 0, &events);
    cr_assert(eq(u64, m.rate_faults, 1));
    cr_assert(m.rate_hi < 0.6, "rate_hi %f", m.rate_hi);
}

Test(monitor, huge_round_trips_widen_bounds_but_never_invent_a_fault)
{
    drift_monitor m;
    drift_monitor_init(&m, 0.01, 25, 10000, 10000);
    int events = 0;
    /* every round trip 40 ms on 100 ms spacing: a naive estimate would see
     * errors of tens of percent; the bounds must still contain 1.0 */
    for (int i = 0; i < 60; i++) {
        drift_sample s = sample(1000000 + (uint64_t)i * 100000, 40000, 1.0, 0);
        /* the master read its clock early in one round trip, late in the next */
        s.server_us += (i % 2) ? -19000 : 19000;
        if (drift_monitor_add(&m, &s) != DRIFT_EV_NONE)
            events++;
    }
    cr_assert(eq(int, events, 0));
    cr_assert(m.rate_lo <= 1.0 && m.rate_hi >= 1.0);
}

Test(monitor, jump_forward_is_caught_by_the_next_sample)
{
    drift_monitor m;
    drift_monitor_init(&m, 0.01, 25, 10000, 2000);
    int events = 0;
    feed(&m, 10, 1000000, 100000, 300, 1.0, 0, &events);
    cr_assert(eq(int, events, 0));
    drift_sample s = sample(1000000 + 10 * 100000, 300, 1.0, 30LL * 1000000); /* +30 s */
    cr_assert(eq(int, drift_monitor_add(&m, &s), DRIFT_EV_JUMP));
    cr_assert(eq(u64, m.jumps, 1));
    cr_assert(m.last_jump_us > 29LL * 1000000 && m.last_jump_us < 31LL * 1000000, "jump of %lld us",
              (long long)m.last_jump_us);
    cr_assert(not(drift_monitor_trusted(&m, s.recv_us + 1999000)));
}

Test(monitor, jump_backward_is_caught)
{
    drift_monitor m;
    drift_monitor_init(&m, 0.01, 25, 10000, 2000);
    int events = 0;
    feed(&m, 5, 1000000, 100000, 300, 1.0, 0, &events);
    drift_sample s = sample(1000000 + 5 * 100000, 300, 1.0, -5LL * 1000000);
    cr_assert(eq(int, drift_monitor_add(&m, &s), DRIFT_EV_JUMP));
}

Test(monitor, step_below_threshold_is_not_a_jump)
{
    drift_monitor m;
    drift_monitor_init(&m, 0.01, 25, 10000, 2000);
    int events = 0;
    feed(&m, 5, 1000000, 100000, 300, 1.0, 0, &events);
    drift_sample s = sample(1000000 + 5 * 100000, 300, 1.0, 20000); /* +20 ms < 25 ms */
    /* Not a jump; over a 0.5 s window it is a 4 % rate error, which the
     * rate check may report instead. */
    cr_assert(not(eq(int, drift_monitor_add(&m, &s), DRIFT_EV_JUMP)));
    cr_assert(eq(u64, m.jumps, 0));
}

Test(monitor, trusted_again_after_readmit_window_of_good_behaviour)
{
    drift_monitor m;
    drift_monitor_init(&m, 0.01, 25, 1000, 2000); /* 1 s window, 2 s readmit */
    int events = 0;
    feed(&m, 5, 1000000, 100000, 300, 1.0, 0, &events);
    drift_sample j = sample(1500000, 300, 1.0, 10LL * 1000000);
    cr_assert(eq(int, drift_monitor_add(&m, &j), DRIFT_EV_JUMP));
    /* behaves from here on, at the new offset */
    uint64_t t = 1600000;
    for (; t < 1500000 + 5000000; t += 100000) {
        drift_sample s = sample(t, 300, 1.0, 10LL * 1000000);
        drift_monitor_add(&m, &s);
    }
    cr_assert(drift_monitor_trusted(&m, t),
              "trusted once the jump left the window and "
              "readmit passed (bad until %llu, now %llu)",
              (unsigned long long)m.bad_until_us, (unsigned long long)t);
}

Test(monitor, persistent_fast_clock_still_gets_a_rate_estimate)
{
    drift_monitor m;
    drift_monitor_init(&m, 0.01, 25, 10000, 10000);
    int events = 0;
    feed(&m, 10, 1000000, 50000, 300, 10.0, 0, &events); /* x10: every step is a "jump" */
    cr_assert(m.jumps > 0);
    cr_assert(m.rate_lo > 9.0 && m.rate_hi < 11.0, "rate [%f, %f]", m.rate_lo, m.rate_hi);
}
