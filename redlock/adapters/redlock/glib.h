/* redlock/glib.h - an async redlock client on a GLib main context (header only).
 *
 * redlock_client_new_glib() makes the client; redlock_glib_loop() fills a
 * redlock_loop for redlock_client_new_loop(). Build with
 * $(pkg-config --cflags --libs redlock glib-2.0): you link GLib, not redlock.
 * Sources and lifetime (the context must outlive the client): docs/loops.md,
 * "GLib".
 */
#ifndef REDLOCK_GLIB_H
#define REDLOCK_GLIB_H

#include <glib.h>

#include <redlock.h>

/* One descriptor: a source with one unix fd, its condition set as the mask
 * changes. GLib polls it level-triggered. */
struct redlock_glib_watch {
    GSource source;
    gpointer tag; /* g_source_add_unix_fd()'s; NULL while watching nothing */
    int fd;
    int events; /* REDLOCK_LOOP_READ | _WRITE being watched; 0: none */
    redlock_loop_io_fn *fn;
    void *arg;
};

/* One timer: a source that is ready at a time (g_source_set_ready_time),
 * -1 while not armed; reused by every start. */
struct redlock_glib_timer {
    GSource source;
    redlock_loop_timer_fn *fn;
    void *arg;
};

static inline gboolean redlock_glib_watch_dispatch(GSource *s, GSourceFunc cb, gpointer data)
{
    struct redlock_glib_watch *w = (struct redlock_glib_watch *)s;
    GIOCondition got;
    int events = 0;

    (void)cb, (void)data;
    if (!w->tag)
        return G_SOURCE_CONTINUE;
    got = g_source_query_unix_fd(s, w->tag);
    if (got & G_IO_IN)
        events |= REDLOCK_LOOP_READ;
    if (got & G_IO_OUT)
        events |= REDLOCK_LOOP_WRITE;
    /* An error or a hang-up: what is watched is ready (a read or a write
     * then tells what happened). */
    if (got & (G_IO_ERR | G_IO_HUP | G_IO_NVAL))
        events |= w->events;
    /* Only what is watched now: a callback earlier in this pass may have
     * changed the mask since the poll. */
    events &= w->events;
    if (events)
        w->fn(w->arg, events);
    return G_SOURCE_CONTINUE;
}

static inline gboolean redlock_glib_timer_dispatch(GSource *s, GSourceFunc cb, gpointer data)
{
    struct redlock_glib_timer *t = (struct redlock_glib_timer *)s;

    (void)cb, (void)data;
    g_source_set_ready_time(s, -1); /* one-shot: fn may arm it again */
    t->fn(t->arg);
    return G_SOURCE_CONTINUE;
}

/* No prepare or check: GLib dispatches a source when one of its fds polled
 * ready or its ready time has come. */
static GSourceFuncs redlock_glib_watch_funcs = { NULL, NULL, redlock_glib_watch_dispatch,
                                                 NULL, NULL, NULL };
static GSourceFuncs redlock_glib_timer_funcs = { NULL, NULL, redlock_glib_timer_dispatch,
                                                 NULL, NULL, NULL };

/* g_source_new() aborts rather than return NULL (GLib's g_malloc), so
 * watch_new and timer_new never say out of memory here. */
static inline void *redlock_glib_watch_new(void *data, int fd, redlock_loop_io_fn *fn, void *arg)
{
    GSource *s = g_source_new(&redlock_glib_watch_funcs, sizeof(struct redlock_glib_watch));
    struct redlock_glib_watch *w = (struct redlock_glib_watch *)s;

    w->tag = NULL;
    w->fd = fd;
    w->events = 0;
    w->fn = fn;
    w->arg = arg;
    g_source_set_name(s, "redlock watch");
    g_source_attach(s, (GMainContext *)data);
    return w;
}

static inline int redlock_glib_watch_set(void *watch, int events)
{
    struct redlock_glib_watch *w = (struct redlock_glib_watch *)watch;
    GIOCondition want = (GIOCondition)((events & REDLOCK_LOOP_READ ? G_IO_IN : 0) |
                                       (events & REDLOCK_LOOP_WRITE ? G_IO_OUT : 0));

    w->events = events & (REDLOCK_LOOP_READ | REDLOCK_LOOP_WRITE);
    /* Watching nothing takes the fd out of the poll altogether: poll(2)
     * reports a hang-up even for no events, and would wake the loop at
     * every pass for a descriptor no one reads. */
    if (!want) {
        if (w->tag)
            g_source_remove_unix_fd(&w->source, w->tag);
        w->tag = NULL;
    } else if (w->tag) {
        g_source_modify_unix_fd(&w->source, w->tag, want);
    } else {
        w->tag = g_source_add_unix_fd(&w->source, w->fd, want);
    }
    return 0;
}

static inline void redlock_glib_watch_free(void *watch)
{
    struct redlock_glib_watch *w = (struct redlock_glib_watch *)watch;

    /* A destroyed source is never dispatched again, even if it polled
     * ready; a dispatch running now holds a reference until it returns, so
     * fn may free its own watch. */
    g_source_destroy(&w->source);
    g_source_unref(&w->source);
}

static inline void *redlock_glib_timer_new(void *data, redlock_loop_timer_fn *fn, void *arg)
{
    GSource *s = g_source_new(&redlock_glib_timer_funcs, sizeof(struct redlock_glib_timer));
    struct redlock_glib_timer *t = (struct redlock_glib_timer *)s;

    t->fn = fn;
    t->arg = arg;
    g_source_set_name(s, "redlock timer");
    g_source_attach(s, (GMainContext *)data);
    return t;
}

static inline int redlock_glib_timer_start(void *timer, uint64_t ms)
{
    struct redlock_glib_timer *t = (struct redlock_glib_timer *)timer;
    /* A ready time past any ttl for the absurd: no overflow (the clock
     * counts from boot, far below G_MAXINT64 / 2). */
    gint64 us = ms > (uint64_t)(G_MAXINT64 / 4000) ? G_MAXINT64 / 4 : (gint64)ms * 1000;

    /* 0 ms is "now": ready at the next pass's prepare, never inside the
     * dispatch that armed it (GLib checks ready times before it polls). */
    g_source_set_ready_time(&t->source, g_get_monotonic_time() + us);
    return 0;
}

static inline void redlock_glib_timer_stop(void *timer)
{
    struct redlock_glib_timer *t = (struct redlock_glib_timer *)timer;

    g_source_set_ready_time(&t->source, -1);
}

static inline void redlock_glib_timer_free(void *timer)
{
    struct redlock_glib_timer *t = (struct redlock_glib_timer *)timer;

    g_source_destroy(&t->source);
    g_source_unref(&t->source);
}

/**
 * redlock_glib_loop() - Fill @l with hooks that run on @ctx
 * @l:   the table (redlock_loop_init() is called on it)
 * @ctx: your context, or NULL for the default one (g_main_context_default());
 *       it must outlive every client made with @l
 *
 * Return: 0, or REDLOCK_EINVAL if @l is NULL.
 * Ownership: @l holds @ctx borrowed (no reference taken); the clients copy @l.
 */
static inline int redlock_glib_loop(redlock_loop *l, GMainContext *ctx)
{
    if (!l)
        return REDLOCK_EINVAL;
    redlock_loop_init(l);
    l->data = ctx ? ctx : g_main_context_default();
    l->watch_new = redlock_glib_watch_new;
    l->watch_set = redlock_glib_watch_set;
    l->watch_free = redlock_glib_watch_free;
    l->timer_new = redlock_glib_timer_new;
    l->timer_start = redlock_glib_timer_start;
    l->timer_stop = redlock_glib_timer_stop;
    l->timer_free = redlock_glib_timer_free;
    return 0;
}

/**
 * redlock_client_new_glib() - redlock_client_new() for an async client on @ctx
 * @ctx: your context, or NULL for the default one
 *
 * Call the *_async functions from the thread that runs @ctx (the one that
 * owns it, g_main_context_acquire()); completions arrive there.
 * Return: as redlock_client_new_loop().
 * Ownership: the caller frees *@ret with redlock_client_free().
 */
static inline int redlock_client_new_glib(const redlock_config *cfg, GMainContext *ctx,
                                          redlock_client **ret, redlock_error *reterr)
{
    redlock_loop l;

    redlock_glib_loop(&l, ctx);
    return redlock_client_new_loop(cfg, &l, ret, reterr);
}

#endif
