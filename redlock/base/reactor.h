/* reactor.h - watches and timers on the loop a client runs on.
 *
 * Every file that waits for a socket or for time does it through these, over
 * the hooks of a redlock_loop (redlock.h, "Async on any event loop"): the
 * library's code never names libevent, libuv or GLib. The wrappers live
 * inside their owner's struct, remember whether a timer is armed and skip
 * a watch_set that changes nothing (a syscall on most loops).
 */
#ifndef REDLOCK_REACTOR_H
#define REDLOCK_REACTOR_H

#include "redlock.h"

#include <stdbool.h>
#include <stdint.h>

struct event_base;

typedef void rl_timer_fn(void *arg);
typedef void rl_watch_fn(void *arg, int events);

typedef struct rl_timer {
    const redlock_loop *loop; /* NULL: not set up (rl_timer_fini is a no-op) */
    void *h;                  /* the loop's timer */
    rl_timer_fn *fn;
    void *arg;
    bool armed;
} rl_timer;

typedef struct rl_watch {
    const redlock_loop *loop;
    void *h;
    rl_watch_fn *fn;
    void *arg;
    int events; /* as last set: REDLOCK_LOOP_READ | REDLOCK_LOOP_WRITE */
} rl_watch;

/* 0, or REDLOCK_ENOMEM. @t is not armed. */
int rl_timer_init(rl_timer *t, const redlock_loop *loop, rl_timer_fn *fn, void *arg);
/* Run fn once, @ms from now (0: after the callbacks ready now); re-arming
 * replaces. 0, or REDLOCK_ESYS if the loop refused. */
int rl_timer_start(rl_timer *t, uint64_t ms);
/* The same, in µs rounded up to the next ms: never early. */
int rl_timer_start_us(rl_timer *t, uint64_t us);
void rl_timer_stop(rl_timer *t);
void rl_timer_fini(rl_timer *t);
static inline bool rl_timer_armed(const rl_timer *t)
{
    return t->armed;
}

/* 0, or REDLOCK_ENOMEM. Watches nothing until rl_watch_set(). */
int rl_watch_init(rl_watch *w, const redlock_loop *loop, int fd, rl_watch_fn *fn, void *arg);
/* 0, or REDLOCK_ESYS if the loop refused. */
int rl_watch_set(rl_watch *w, int events);
void rl_watch_fini(rl_watch *w);

/* The library's own table for libevent (reactor-libevent.c): what
 * redlock_client_new() and a blocking client's I/O thread run on. */
void rl_loop_libevent(redlock_loop *l, struct event_base *base);
/* Is @l a table redlock_client_new_loop() can take? 0, or REDLOCK_EINVAL
 * with @why filled. */
int rl_loop_check(const redlock_loop *l, char *why, size_t len);

#endif
