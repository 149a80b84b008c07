/* transport-loop.c - a connection on the client's loop: opening it, and hiredis' event hooks.
 *
 * rl_conn_open connects and attaches the connection to the loop; the glue
 * below turns our watch and flush timer into hiredis' ev hooks, so that a
 * pass's commands leave in one write(). Above transport.c, which never
 * calls in here (hiredis does, through ac->ev). Why: docs/transport.md,
 * "Writes" and "The loop".
 */
#include "transport/transport.h"
#include "transport/transport-private.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the loop glue ---------------------------------------------------------- *
 *
 * hiredis's ev hooks over our watch and flush timer (base/reactor.h), our
 * own copy of the idea in its adapters for two reasons: the 0.14.1 adapters
 * do not check their allocations, and they arm and disarm the poller for
 * every command. Here the read side stays watched, and a command does not
 * watch for writing at all: it starts the flush (a 0 ms timer), so every
 * command queued in this pass of the loop goes out in one write() when the
 * pass reaches it. Only a write that would block (a full socket, a connect
 * in progress, a TLS handshake) watches for the socket to take more. */

static void handler_leave(rl_conn *c)
{
    if (--c->busy == 0 && c->free_pending)
        rl_conn_free(c);
}

static void conn_on_read(rl_conn *c)
{
    redisReader *rd = c->ac->c.reader;
    /* The reader keeps a reply's bytes until it is complete, so a master
     * streaming one huge bulk string would grow it without end: stop here.
     * hiredis reads at most 16 KiB per call, so the cap holds to that. */
    if (rd->len - rd->pos > c->max_reply_bytes) {
        char why[96];
        snprintf(why, sizeof(why),
                 "master sent a reply larger than %u bytes (is this a Redis "
                 "server?)",
                 c->max_reply_bytes);
        rl_conn_close(c, REDLOCK_EPROTO, why);
        return;
    }
#if RL_HAVE_TLS
    if (c->tls)
        rl_tls_clear_errors();
#endif
    redisAsyncHandleRead(c->ac);
}

static void conn_on_write(rl_conn *c)
{
    /* Whether the socket took more or the flush ran: nothing is pending
     * now; hiredis says below (ev_add_write) if it wants to write more. */
    c->wstate = W_IDLE;
    if (c->doomed) {
        /* Nothing was (or may be) sent: the context has no TLS. */
        c->closing = true;
        redisAsyncFree(c->ac);
        return;
    }
    c->in_write = true;
#if RL_HAVE_TLS
    if (c->tls)
        rl_tls_clear_errors();
#endif
    redisAsyncHandleWrite(c->ac);
    c->in_write = false;
    /* All written: stop watching for room (no-op if we were not). */
    if (c->attached && c->wstate != W_ARMED)
        rl_watch_set(&c->watch, REDLOCK_LOOP_READ);
}

static void ev_on_socket(void *arg, int events)
{
    rl_conn *c = arg;
    c->busy++;
    if (events & REDLOCK_LOOP_READ)
        conn_on_read(c);
    /* The read may have ended the connection (hiredis cleaned up). */
    if ((events & REDLOCK_LOOP_WRITE) && c->attached && c->wstate == W_ARMED)
        conn_on_write(c);
    handler_leave(c);
}

static void ev_on_flush(void *arg)
{
    rl_conn *c = arg;
    c->busy++;
    if (c->wstate == W_FLUSH)
        conn_on_write(c);
    handler_leave(c);
}

static void ev_add_read(void *p)
{
    (void)p; /* watched once, at open, and kept watched */
}

static void ev_del_read(void *p)
{
    (void)p; /* hiredis asks only when tearing down: cleanup removes it */
}

static void ev_add_write(void *p)
{
    rl_conn *c = p;
    if (!c->attached)
        return; /* cleaned up already */
    if (c->in_write) {
        /* hiredis could not write it all: now wait for the socket. */
        if (c->wstate != W_ARMED &&
            rl_watch_set(&c->watch, REDLOCK_LOOP_READ | REDLOCK_LOOP_WRITE) == 0)
            c->wstate = W_ARMED;
    } else if (c->wstate == W_IDLE) {
        /* HIREDIS_MAJOR >= 1 with TLS also lands here from its read
         * handler, for a write that had to wait for a read: the same
         * one-pass flush serves it. */
        if (rl_timer_start(&c->flush, 0) == 0)
            c->wstate = W_FLUSH;
    }
}

static void ev_del_write(void *p)
{
    rl_conn *c = p;
    if (c->attached && c->wstate == W_ARMED) {
        rl_watch_set(&c->watch, REDLOCK_LOOP_READ);
        c->wstate = W_IDLE;
    }
}

static void conn_detach_events(rl_conn *c)
{
    rl_watch_fini(&c->watch);
    rl_timer_fini(&c->flush);
    c->attached = false;
}

/* hiredis is done with the socket: the watch goes (before hiredis closes
 * the fd, as loops such as libuv's require). The connection ends here on
 * 0.14 and in conn_data_cleanup on 1.x (see above). */
static void ev_cleanup(void *p)
{
    rl_conn *c = p;
    conn_detach_events(c);
    rl_conn_note_error(c);
    c->closing = true;
#if HIREDIS_MAJOR < 1
    rl_conn_end(c);
#endif
}

/* 1.x: the connection ends here, after every reply function (see
 * rl_conn_end in transport.c). */
#if HIREDIS_MAJOR >= 1
static void conn_data_cleanup(void *privdata)
{
    rl_conn_end(privdata);
}
#endif

/* ---- opening ------------------------------------------------------------------ */

static int conn_attach_events(rl_conn *c, const redlock_loop *loop)
{
    redisAsyncContext *ac = c->ac;
    if (rl_watch_init(&c->watch, loop, ac->c.fd, ev_on_socket, c) != 0)
        return REDLOCK_ENOMEM;
    if (rl_timer_init(&c->flush, loop, ev_on_flush, c) != 0) {
        rl_watch_fini(&c->watch);
        return REDLOCK_ENOMEM;
    }
    c->attached = true;
    if (c->doomed) {
        /* No I/O on a context whose TLS failed: only the failure, on the
         * next pass, the way a failure found later is reported. */
        if (rl_timer_start(&c->flush, 0) != 0)
            return REDLOCK_ESYS;
        c->wstate = W_FLUSH;
    } else {
        /* The first writable event tells hiredis that the non-blocking
         * connect finished; commands queued before it go out with it. */
        if (rl_watch_set(&c->watch, REDLOCK_LOOP_READ | REDLOCK_LOOP_WRITE) != 0)
            return REDLOCK_ESYS;
        c->wstate = W_ARMED;
    }
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    ac->ev.data = c;
    return 0;
}

/* A connect that failed at once, in words a user can act on. */
static void connect_error(const rl_addr *a, const redisAsyncContext *ac, char *why, size_t len)
{
    if (strstr(ac->errstr, "refused"))
        snprintf(why, len, "connection refused (is redis-server running?)");
    else if (a->kind == RL_ADDR_UNIX) /* the master's name holds the path */
        snprintf(why, len,
                 "%.40s (is redis-server running, with unixsocket set to this "
                 "path?)",
                 ac->errstr);
    else
        snprintf(why, len, "%.120s", ac->errstr);
}

/* A new connection's own state over @ac: the reply guard inside hiredis'
 * reader and, for TLS, the handshake. A TLS failure found here is reported
 * like one found later: commands may be queued, then every one fails with
 * it, then on_close. */
static int conn_setup(rl_conn *c, redisAsyncContext *ac, const rl_conn_opts *o,
                      const rl_conn_hooks *h, void *arg, char *why, size_t whylen)
{
    c->ac = ac;
    c->hooks = h;
    c->arg = arg;
    c->subscriber = o->subscriber;
    c->max_reply_bytes = o->max_reply_bytes ? o->max_reply_bytes : (1u << 20);
    ac->data = c;
    if (!rl_guard_attach(c))
        return REDLOCK_ENOMEM;
#if RL_HAVE_TLS
    if (o->tls) {
        int rc = rl_tls_attach(c, o->tls, o->addr, why, whylen);
        if (rc != REDLOCK_ECONNECT && rc != REDLOCK_EAUTH && rc != REDLOCK_EPROTO)
            return rc;
        c->doomed = true;
        c->err = rc;
        snprintf(c->why, sizeof(c->why), "%s", why);
        why[0] = '\0';
    }
#else
    (void)why;
    (void)whylen;
#endif
    return 0;
}

int rl_conn_open(const rl_conn_opts *o, const rl_conn_hooks *h, void *arg, rl_conn **ret, char *why,
                 size_t whylen)
{
    const rl_addr *a = o->addr;
    redisAsyncContext *ac = a->kind == RL_ADDR_UNIX ? redisAsyncConnectUnix(a->host)
                                                    : redisAsyncConnect(a->ip, a->port);
    if (!ac) {
        snprintf(why, whylen, "out of memory connecting");
        return REDLOCK_ENOMEM;
    }
    /* A connect that fails at once (a unix socket that is not there; on
     * loopback, sometimes a refused port) says so here, in both versions.
     * One that fails later does so on the first read or write event:
     * HIREDIS_MAJOR 0 and 1.x alike call onConnect(REDIS_ERR), which we do
     * not use, and then free the context, which ends the connection as a
     * drop does (every queued command gets NULL, then on_close). */
    if (ac->err) {
        connect_error(a, ac, why, whylen);
        redisAsyncFree(ac);
        return REDLOCK_ECONNECT;
    }
    /* hiredis opens sockets without close-on-exec: a program that forks
     * and execs (redlock-cli run) would leak our connections into its
     * children, keeping them open after we close them. */
    int fdflags = fcntl(ac->c.fd, F_GETFD);
    if (fdflags >= 0)
        fcntl(ac->c.fd, F_SETFD, fdflags | FD_CLOEXEC);

    rl_conn *c = calloc(1, sizeof(*c));
    int rc = c ? conn_setup(c, ac, o, h, arg, why, whylen) : REDLOCK_ENOMEM;
    if (!rc)
        rc = conn_attach_events(c, o->loop);
    if (rc) {
        if (!why[0] || rc == REDLOCK_ENOMEM)
            snprintf(why, whylen, "cannot set up the connection (%s)", redlock_strerror(rc));
        if (c && c->attached)
            conn_detach_events(c);
        if (c)
            ac->ev = (__typeof__(ac->ev)){ 0 };
        redisAsyncFree(ac);
        if (c)
            rl_conn_free(c);
        return rc;
    }
#if HIREDIS_MAJOR >= 1
    ac->dataCleanup = conn_data_cleanup;
#endif
    *ret = c;
    return 0;
}
