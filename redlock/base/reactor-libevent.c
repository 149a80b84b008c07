/* reactor-libevent.c - the redlock_loop table over a libevent event_base.
 *
 * What redlock_client_new() gives an async client on your event_base, and
 * a blocking client on its own. One allocation per watch or timer, with the
 * struct events inside (event_assign). Why a 0 ms timer is made active and a
 * watch is two events: the comments above timer_start() and watch_new().
 */
#include "base/reactor.h"

#include <event2/event.h>
#include <stdlib.h>

typedef struct ev_timer {
    redlock_loop_timer_fn *fn;
    void *arg;
    /* then the struct event, of event_get_struct_event_size() bytes */
} ev_timer;

typedef struct ev_watch {
    redlock_loop_io_fn *fn;
    void *arg;
    int events;
    /* then two struct events: read, write */
} ev_watch;

#define EV_AT(p, hdr, k) \
    ((struct event *)(void *)((char *)(p) + ev_hdr(sizeof(hdr)) + (k)*ev_size()))

static size_t ev_size(void)
{
    size_t s = event_get_struct_event_size();
    return (s + 15) & ~(size_t)15;
}

static size_t ev_hdr(size_t s)
{
    return (s + 15) & ~(size_t)15;
}

static void timer_on(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    ev_timer *t = arg;
    t->fn(t->arg);
}

static void *timer_new(void *data, redlock_loop_timer_fn *fn, void *arg)
{
    ev_timer *t = malloc(ev_hdr(sizeof(*t)) + ev_size());
    if (!t)
        return NULL;
    t->fn = fn;
    t->arg = arg;
    if (event_assign(EV_AT(t, ev_timer, 0), data, -1, 0, timer_on, t) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

/* A 0 ms start makes the timer active in this pass (event_active), as a
 * zero timeout would only after one more trip through epoll_wait. */
static int timer_start(void *h, uint64_t ms)
{
    struct event *ev = EV_AT(h, ev_timer, 0);
    if (event_pending(ev, EV_TIMEOUT, NULL))
        event_del(ev);
    if (ms == 0) {
        event_active(ev, EV_TIMEOUT, 1);
        return 0;
    }
    struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000) };
    return event_add(ev, &tv);
}

static void timer_stop(void *h)
{
    event_del(EV_AT(h, ev_timer, 0));
}

static void timer_free(void *h)
{
    event_del(EV_AT(h, ev_timer, 0));
    free(h);
}

static void watch_on(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    ev_watch *w = arg;
    w->fn(w->arg,
          (what & EV_READ ? REDLOCK_LOOP_READ : 0) | (what & EV_WRITE ? REDLOCK_LOOP_WRITE : 0));
}

/* A watch is two events, read and write, so that the read side stays armed
 * while the write side comes and goes. */
static void *watch_new(void *data, int fd, redlock_loop_io_fn *fn, void *arg)
{
    ev_watch *w = malloc(ev_hdr(sizeof(*w)) + 2 * ev_size());
    if (!w)
        return NULL;
    w->fn = fn;
    w->arg = arg;
    w->events = 0;
    if (event_assign(EV_AT(w, ev_watch, 0), data, fd, EV_READ | EV_PERSIST, watch_on, w) != 0 ||
        event_assign(EV_AT(w, ev_watch, 1), data, fd, EV_WRITE | EV_PERSIST, watch_on, w) != 0) {
        free(w);
        return NULL;
    }
    return w;
}

static int watch_set(void *h, int events)
{
    ev_watch *w = h;
    static const int bit[2] = { REDLOCK_LOOP_READ, REDLOCK_LOOP_WRITE };
    for (int k = 0; k < 2; k++) {
        if ((events ^ w->events) & bit[k]) {
            struct event *ev = EV_AT(w, ev_watch, k);
            if ((events & bit[k] ? event_add(ev, NULL) : event_del(ev)) != 0)
                return -1;
            w->events ^= bit[k];
        }
    }
    return 0;
}

static void watch_free(void *h)
{
    event_del(EV_AT(h, ev_watch, 0));
    event_del(EV_AT(h, ev_watch, 1));
    free(h);
}

void rl_loop_libevent(redlock_loop *l, struct event_base *base)
{
    redlock_loop_init(l);
    l->data = base;
    l->watch_new = watch_new;
    l->watch_set = watch_set;
    l->watch_free = watch_free;
    l->timer_new = timer_new;
    l->timer_start = timer_start;
    l->timer_stop = timer_stop;
    l->timer_free = timer_free;
}
