/* redlock/libuv.h - an async redlock client on a libuv loop (header only).
 *
 * redlock_client_new_libuv() makes the client; redlock_libuv_loop() fills a
 * redlock_loop for redlock_client_new_loop(). Build with
 * $(pkg-config --cflags --libs redlock libuv): you link libuv, not redlock.
 * Lifetime (@uv outlives the client; one more uv_run after
 * redlock_client_free(), or UV_EBUSY): docs/loops.md, "libuv".
 */
#ifndef REDLOCK_LIBUV_H
#define REDLOCK_LIBUV_H

#include <stdio.h>
#include <stdlib.h>

#include <uv.h>

#include <redlock.h>

/* One descriptor: one uv_poll_t, started and stopped as the mask changes. */
struct redlock_libuv_watch {
    uv_poll_t poll;
    redlock_loop_io_fn *fn;
    void *arg;
    int events; /* REDLOCK_LOOP_READ | _WRITE being watched; 0: none */
    int freed;  /* watch_free ran: the handle is closing */
};

/*
 * A timer is two handles: a uv_timer_t for a delay, and a uv_idle_t for
 * 0 ms. libuv (1.44, Debian 12's) runs every timer due at the start of a
 * pass, and one a timer callback arms for 0 ms is due too: a callback that
 * keeps re-arming one would never let the loop poll. An idle handle runs
 * once a pass and makes that pass's poll not block: "soon" is then the
 * next pass, after the I/O ready now.
 */
struct redlock_libuv_timer {
    uv_timer_t timer;
    uv_idle_t idle;
    redlock_loop_timer_fn *fn;
    void *arg;
    int open; /* handles not closed yet: the last close callback frees */
};

static inline void redlock_libuv_watch_closed(uv_handle_t *h)
{
    free(h->data);
}

static inline void *redlock_libuv_watch_new(void *data, int fd, redlock_loop_io_fn *fn, void *arg)
{
    struct redlock_libuv_watch *w =
        (struct redlock_libuv_watch *)calloc(1, sizeof(struct redlock_libuv_watch));

    if (!w)
        return NULL;
    if (uv_poll_init((uv_loop_t *)data, &w->poll, fd) != 0) {
        free(w);
        return NULL;
    }
    w->poll.data = w;
    w->fn = fn;
    w->arg = arg;
    return w;
}

static inline void redlock_libuv_on_poll(uv_poll_t *p, int status, int got);

static inline int redlock_libuv_watch_set(void *watch, int events)
{
    struct redlock_libuv_watch *w = (struct redlock_libuv_watch *)watch;
    int want = (events & REDLOCK_LOOP_READ ? UV_READABLE : 0) |
               (events & REDLOCK_LOOP_WRITE ? UV_WRITABLE : 0);

    w->events = events & (REDLOCK_LOOP_READ | REDLOCK_LOOP_WRITE);
    if (!want)
        return uv_poll_stop(&w->poll) == 0 ? 0 : -1;
    return uv_poll_start(&w->poll, want, redlock_libuv_on_poll) == 0 ? 0 : -1;
}

static inline void redlock_libuv_on_poll(uv_poll_t *p, int status, int got)
{
    struct redlock_libuv_watch *w = (struct redlock_libuv_watch *)p->data;
    int events = 0;

    /* An error or a hang-up: what is watched is ready (a read or a write
     * then tells what happened). */
    if (status < 0)
        events = w->events;
    if (got & UV_READABLE)
        events |= REDLOCK_LOOP_READ;
    if (got & UV_WRITABLE)
        events |= REDLOCK_LOOP_WRITE;
    if (events)
        w->fn(w->arg, events);
    /* libuv stops a poll handle once it reports an error. The watch is
     * level-triggered until set again or freed, so it goes on watching
     * (the memory is ours until the close callback, even if fn freed it). */
    if (status < 0 && !w->freed && w->events && !uv_is_active((uv_handle_t *)&w->poll))
        redlock_libuv_watch_set(w, w->events);
}

static inline void redlock_libuv_watch_free(void *watch)
{
    struct redlock_libuv_watch *w = (struct redlock_libuv_watch *)watch;

    w->freed = 1;
    uv_close((uv_handle_t *)&w->poll, redlock_libuv_watch_closed);
}

static inline void redlock_libuv_timer_closed(uv_handle_t *h)
{
    struct redlock_libuv_timer *t = (struct redlock_libuv_timer *)h->data;

    if (--t->open == 0)
        free(t);
}

static inline void redlock_libuv_timer_fire(struct redlock_libuv_timer *t)
{
    uv_timer_stop(&t->timer);
    uv_idle_stop(&t->idle);
    t->fn(t->arg);
}

static inline void redlock_libuv_on_timer(uv_timer_t *h)
{
    redlock_libuv_timer_fire((struct redlock_libuv_timer *)h->data);
}

static inline void redlock_libuv_on_idle(uv_idle_t *h)
{
    redlock_libuv_timer_fire((struct redlock_libuv_timer *)h->data);
}

static inline void *redlock_libuv_timer_new(void *data, redlock_loop_timer_fn *fn, void *arg)
{
    struct redlock_libuv_timer *t =
        (struct redlock_libuv_timer *)calloc(1, sizeof(struct redlock_libuv_timer));

    if (!t)
        return NULL;
    /* Neither can fail (they allocate nothing). */
    (void)uv_timer_init((uv_loop_t *)data, &t->timer);
    (void)uv_idle_init((uv_loop_t *)data, &t->idle);
    t->timer.data = t;
    t->idle.data = t;
    t->open = 2;
    t->fn = fn;
    t->arg = arg;
    return t;
}

static inline int redlock_libuv_timer_start(void *timer, uint64_t ms)
{
    struct redlock_libuv_timer *t = (struct redlock_libuv_timer *)timer;

    uv_timer_stop(&t->timer);
    uv_idle_stop(&t->idle);
    if (ms == 0)
        return uv_idle_start(&t->idle, redlock_libuv_on_idle) == 0 ? 0 : -1;
    /* libuv counts from the time it cached at the start of the pass, which
     * is old when the loop has not run for a while (an *_async call after
     * a long computation): a node timeout would end early. From now. */
    uv_update_time(t->timer.loop);
    return uv_timer_start(&t->timer, redlock_libuv_on_timer, ms, 0) == 0 ? 0 : -1;
}

static inline void redlock_libuv_timer_stop(void *timer)
{
    struct redlock_libuv_timer *t = (struct redlock_libuv_timer *)timer;

    uv_timer_stop(&t->timer);
    uv_idle_stop(&t->idle);
}

static inline void redlock_libuv_timer_free(void *timer)
{
    struct redlock_libuv_timer *t = (struct redlock_libuv_timer *)timer;

    uv_close((uv_handle_t *)&t->timer, redlock_libuv_timer_closed);
    uv_close((uv_handle_t *)&t->idle, redlock_libuv_timer_closed);
}

/**
 * redlock_libuv_loop() - Fill @l with hooks that run on @uv
 * @l:  the table (redlock_loop_init() is called on it)
 * @uv: your loop; it must outlive every client made with @l
 *
 * Return: 0, or REDLOCK_EINVAL if @l or @uv is NULL.
 * Ownership: @l holds @uv borrowed; the clients copy @l.
 */
static inline int redlock_libuv_loop(redlock_loop *l, uv_loop_t *uv)
{
    if (!l || !uv)
        return REDLOCK_EINVAL;
    redlock_loop_init(l);
    l->data = uv;
    l->watch_new = redlock_libuv_watch_new;
    l->watch_set = redlock_libuv_watch_set;
    l->watch_free = redlock_libuv_watch_free;
    l->timer_new = redlock_libuv_timer_new;
    l->timer_start = redlock_libuv_timer_start;
    l->timer_stop = redlock_libuv_timer_stop;
    l->timer_free = redlock_libuv_timer_free;
    return 0;
}

/**
 * redlock_client_new_libuv() - redlock_client_new() for an async client on @uv
 *
 * Call the *_async functions from the thread that runs @uv; completions
 * arrive there. After redlock_client_free(), run @uv once more before
 * uv_loop_close() (see the top of this file).
 * Return: as redlock_client_new_loop(); REDLOCK_EINVAL also for a NULL @uv.
 * Ownership: the caller frees *@ret with redlock_client_free().
 */
static inline int redlock_client_new_libuv(const redlock_config *cfg, uv_loop_t *uv,
                                           redlock_client **ret, redlock_error *reterr)
{
    redlock_loop l;

    if (redlock_libuv_loop(&l, uv) != 0) {
        if (reterr) {
            reterr->code = REDLOCK_EINVAL;
            reterr->master = -1;
            snprintf(reterr->msg, sizeof(reterr->msg),
                     "redlock_client_new_libuv: the uv_loop_t is NULL (pass your loop, "
                     "e.g. uv_default_loop())");
        }
        return REDLOCK_EINVAL;
    }
    return redlock_client_new_loop(cfg, &l, ret, reterr);
}

#endif
