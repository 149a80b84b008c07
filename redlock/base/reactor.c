/* reactor.c - the wrappers of reactor.h over a redlock_loop's hooks.
 *
 * The loop calls our trampolines, which keep the armed flag true to the
 * loop's own state before the owner's function runs (it may re-arm, or
 * free its owner). Why a table of hooks and what each must do: redlock.h.
 */
#include "base/reactor.h"

#include <stdio.h>

static void timer_fire(void *arg)
{
    rl_timer *t = arg;
    t->armed = false;
    t->fn(t->arg);
}

int rl_timer_init(rl_timer *t, const redlock_loop *loop, rl_timer_fn *fn, void *arg)
{
    *t = (rl_timer){ .fn = fn, .arg = arg };
    t->h = loop->timer_new(loop->data, timer_fire, t);
    if (!t->h)
        return REDLOCK_ENOMEM;
    t->loop = loop;
    return 0;
}

int rl_timer_start(rl_timer *t, uint64_t ms)
{
    if (t->loop->timer_start(t->h, ms) != 0)
        return REDLOCK_ESYS;
    t->armed = true;
    return 0;
}

int rl_timer_start_us(rl_timer *t, uint64_t us)
{
    return rl_timer_start(t, (us + 999) / 1000);
}

void rl_timer_stop(rl_timer *t)
{
    if (t->armed)
        t->loop->timer_stop(t->h);
    t->armed = false;
}

void rl_timer_fini(rl_timer *t)
{
    if (t->loop)
        t->loop->timer_free(t->h);
    t->loop = NULL;
    t->h = NULL;
    t->armed = false;
}

static void watch_fire(void *arg, int events)
{
    rl_watch *w = arg;
    w->fn(w->arg, events);
}

int rl_watch_init(rl_watch *w, const redlock_loop *loop, int fd, rl_watch_fn *fn, void *arg)
{
    *w = (rl_watch){ .fn = fn, .arg = arg };
    w->h = loop->watch_new(loop->data, fd, watch_fire, w);
    if (!w->h)
        return REDLOCK_ENOMEM;
    w->loop = loop;
    return 0;
}

int rl_watch_set(rl_watch *w, int events)
{
    if (events == w->events)
        return 0;
    if (w->loop->watch_set(w->h, events) != 0)
        return REDLOCK_ESYS;
    w->events = events;
    return 0;
}

void rl_watch_fini(rl_watch *w)
{
    if (w->loop)
        w->loop->watch_free(w->h);
    w->loop = NULL;
    w->h = NULL;
    w->events = 0;
}

int rl_loop_check(const redlock_loop *l, char *why, size_t len)
{
    if (!l) {
        snprintf(why, len, "no loop given (NULL redlock_loop)");
        return REDLOCK_EINVAL;
    }
    if (l->size != sizeof(*l)) {
        snprintf(why, len,
                 "redlock_loop.size is %zu, this library knows %zu: fill it with "
                 "redlock_loop_init()",
                 l->size, sizeof(*l));
        return REDLOCK_EINVAL;
    }
    const char *unset = !l->watch_new     ? "watch_new"
                        : !l->watch_set   ? "watch_set"
                        : !l->watch_free  ? "watch_free"
                        : !l->timer_new   ? "timer_new"
                        : !l->timer_start ? "timer_start"
                        : !l->timer_stop  ? "timer_stop"
                        : !l->timer_free  ? "timer_free"
                                          : NULL;
    if (unset) {
        snprintf(why, len, "redlock_loop.%s is not set: every hook is needed", unset);
        return REDLOCK_EINVAL;
    }
    return 0;
}
