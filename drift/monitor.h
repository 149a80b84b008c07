/* monitor.h - does a master's clock run at the rate ours does?
 *
 * Each sample is one TIME round trip; from two samples the master's rate
 * lies in a bracket whatever the network did, and a master is flagged only
 * when the whole bracket lies outside [1 - factor, 1 + factor] (or a step
 * jumps). Offsets are reported, never flagged. Pure code, no I/O: node.c
 * feeds it. Why: docs/memory-guard.md, "What the monitor catches".
 */
#ifndef REDLOCK_DRIFT_MONITOR_H
#define REDLOCK_DRIFT_MONITOR_H

#include <stdbool.h>
#include <stdint.h>

#define DRIFT_WINDOW_MAX 64

typedef struct drift_sample {
    uint64_t send_us, recv_us; /* client CLOCK_MONOTONIC around the TIME call */
    int64_t server_us;         /* the master's TIME */
    int64_t real_mid_us;       /* client CLOCK_REALTIME at the round trip's midpoint */
} drift_sample;

enum drift_event { DRIFT_EV_NONE = 0, DRIFT_EV_JUMP, DRIFT_EV_RATE };

typedef struct drift_monitor {
    /* settings */
    double factor;       /* allowed relative rate error */
    uint64_t jump_us;    /* a step beyond this (plus rate allowance) is a jump */
    uint64_t window_us;  /* samples older than this are forgotten */
    uint64_t readmit_us; /* behave this long after the last fault to be trusted */
    /* state */
    drift_sample s[DRIFT_WINDOW_MAX];
    unsigned head, count; /* ring buffer; head = oldest */
    /* estimates */
    uint64_t samples;            /* samples seen in total */
    int64_t offset_us;           /* master minus client real time, last sample */
    double rate_lo, rate_hi;     /* rate interval over the window; 0,0 until known */
    uint64_t jumps, rate_faults; /* counters: events seen */
    bool rate_bad;               /* the current window shows a rate fault */
    uint64_t bad_until_us;       /* monotonic; untrusted before this */
    int64_t last_jump_us;        /* size of the last jump (signed), for messages */
} drift_monitor;

void drift_monitor_init(drift_monitor *m, double factor, uint32_t jump_ms, uint32_t window_ms,
                        uint32_t readmit_ms);

/* Feed one sample (recv_us must not go backwards). Returns the event this
 * sample revealed, if any. */
int drift_monitor_add(drift_monitor *m, const drift_sample *s);

/* Trusted at @now_us: no fault within the last readmit window. */
bool drift_monitor_trusted(const drift_monitor *m, uint64_t now_us);

/* Forget the samples (the master restarted: a new process). Counters and the
 * untrusted deadline stay. */
void drift_monitor_reset(drift_monitor *m);

#endif
