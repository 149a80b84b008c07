/* ev.c - attach a hiredis async context to a libevent base.
 *
 * Our own copy of the idea in hiredis' adapters/libevent.h, for two reasons:
 * that adapter does not check its allocation (0.14.1), and it uses one-shot
 * read events, which costs an epoll_ctl pair on every reply. Here the read
 * event is persistent and add/del only touch libevent when the wanted state
 * changes, which matters at tens of thousands of replies per second.
 */
#include "internal.h"

#include <stdlib.h>

typedef struct rl_ev {
    redisAsyncContext *ac;
    struct event *rev, *wev;
    bool reading, writing;
} rl_ev;

static void ev_on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    rl_ev *e = arg;
    redisAsyncHandleRead(e->ac);
}

static void ev_on_write(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    rl_ev *e = arg;
    /* The write event is one-shot: libevent removed it before this call, so
     * record that before hiredis decides whether it wants it again. */
    e->writing = false;
    redisAsyncHandleWrite(e->ac);
}

static void ev_add_read(void *p)
{
    rl_ev *e = p;
    if (!e->reading && event_add(e->rev, NULL) == 0)
        e->reading = true;
}

static void ev_del_read(void *p)
{
    rl_ev *e = p;
    if (e->reading) {
        event_del(e->rev);
        e->reading = false;
    }
}

static void ev_add_write(void *p)
{
    rl_ev *e = p;
    if (!e->writing && event_add(e->wev, NULL) == 0)
        e->writing = true;
}

static void ev_del_write(void *p)
{
    rl_ev *e = p;
    if (e->writing) {
        event_del(e->wev);
        e->writing = false;
    }
}

static void ev_cleanup(void *p)
{
    rl_ev *e = p;
    event_free(e->rev);
    event_free(e->wev);
    free(e);
}

int rl_ev_attach(redisAsyncContext *ac, struct event_base *base)
{
    if (ac->ev.data)
        return REDLOCK_EINVAL;
    rl_ev *e = calloc(1, sizeof(*e));
    if (!e)
        return REDLOCK_ENOMEM;
    e->ac = ac;
    e->rev = event_new(base, ac->c.fd, EV_READ | EV_PERSIST, ev_on_read, e);
    e->wev = event_new(base, ac->c.fd, EV_WRITE, ev_on_write, e);
    if (!e->rev || !e->wev) {
        if (e->rev) event_free(e->rev);
        if (e->wev) event_free(e->wev);
        free(e);
        return REDLOCK_ENOMEM;
    }
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    ac->ev.data = e;
    /* The first write event tells hiredis the non-blocking connect finished. */
    ev_add_read(e);
    ev_add_write(e);
    return 0;
}
