/* transport.c - connections to masters over hiredis (0.14.1 or 1.x), on the client's loop.
 *
 * A connection takes commands in and hands replies out in order; its loop
 * glue writes every command of one loop pass in one write(). Replies and
 * their guard live in transport-reply.c, TLS in transport-tls.c, the RESP
 * of a command in transport-format.c; version differences are marked with
 * HIREDIS_MAJOR. The promises: docs/transport.md.
 */
#include "transport/transport.h"
#include "transport/transport-private.h"
#include "transport/transport-format.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void conn_free(rl_conn *c)
{
    rl_guard_free(c);
    free(c->q);
    free(c);
}

/* Record why the connection failed, from what hiredis says, in words a user
 * can act on. Runs before the first NULL reply and at cleanup; the first
 * reason recorded wins (an explicit close says its own). */
static void conn_note_error(rl_conn *c)
{
    if (c->err || !c->ac)
        return;
    const redisAsyncContext *ac = c->ac;
    const char *what = ac->errstr && ac->errstr[0] ? ac->errstr : "connection lost";
    c->err = REDLOCK_ECONNECT;
#if RL_HAVE_TLS
    int tls_code = c->tls && !c->refused ? rl_tls_reason(c, c->why, sizeof(c->why)) : 0;
    if (tls_code) {
        c->err = tls_code;
        return;
    }
#endif
    if (ac->err == REDIS_ERR_OOM && c->refused) {
        c->err = REDLOCK_EPROTO;
        snprintf(c->why, sizeof(c->why), "master sent %s (is this a Redis server?)", c->refused);
    } else if (ac->err == REDIS_ERR_PROTOCOL) {
        c->err = REDLOCK_EPROTO;
        bool tls_bytes = strstr(what, "\\x15") || strstr(what, "\\x16");
        snprintf(c->why, sizeof(c->why), "%.90s%s", what,
                 tls_bytes ? " (a TLS port? write the master as rediss://...)" : "");
    } else if (ac->err == REDIS_ERR_EOF || (ac->err == REDIS_ERR_IO && strstr(what, "reset"))) {
        /* A TLS port closes (or resets) a connection that does not speak
         * TLS, and a master that wants TLS is the common cause of a close
         * before any answer. */
        snprintf(c->why, sizeof(c->why), "connection %s by master%s",
                 ac->err == REDIS_ERR_EOF ? "closed" : "reset",
                 c->answered ? ""
                 : c->tls    ? " before it answered (is this its TLS port?)"
                             : " before it answered (a TLS port? write rediss://)");
    } else if (ac->err == REDIS_ERR_OTHER && rl_error_reply_transient(what, strlen(what))) {
        /* hiredis closes a connection that got an error it did not ask for:
         * a master still loading its data says so this way. */
        c->err = REDLOCK_EUNAVAIL;
        snprintf(c->why, sizeof(c->why), "%.120s", what);
    } else if (strstr(what, "refused")) {
        snprintf(c->why, sizeof(c->why), "connection refused (is redis-server running?)");
    } else if (c->tls && !c->answered) {
        snprintf(c->why, sizeof(c->why), "TLS handshake failed: %.100s (is this a TLS port?)",
                 what);
    } else {
        snprintf(c->why, sizeof(c->why), "%.120s", what);
    }
}

static void conn_on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    (void)ac;
    rl_conn *c = privdata;
    if (c->qlen == 0)
        return; /* cannot happen: one entry per command sent */
    rl_cb cb = c->q[c->qhead];
    c->qhead = (c->qhead + 1) % c->qcap;
    c->qlen--;
    c->qparts -= cb.part;
    if (reply) {
        c->answered = true;
        cb.fn(cb.arg, (const rl_reply *)reply, 0, NULL);
        return;
    }
    /* hiredis is flushing its callbacks before it frees the context: no
     * command may be queued on it any more. */
    conn_note_error(c);
    c->closing = true;
    cb.fn(cb.arg, NULL, c->err, c->why);
}

static void conn_on_message(redisAsyncContext *ac, void *reply, void *privdata)
{
    (void)ac;
    rl_conn *c = privdata;
    const redisReply *r = reply;
    /* The guard made sure a message is an array of three: kind, channel,
     * and a string payload for "message". */
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[2]->type != REDIS_REPLY_STRING || strcmp(r->element[0]->str, "message") != 0 ||
        !c->hooks->on_message)
        return;
    c->answered = true;
    c->hooks->on_message(c, r->element[1]->str, r->element[1]->len, r->element[2]->str,
                         r->element[2]->len, c->arg);
}

static int queue_reserve(rl_conn *c)
{
    if (c->qlen < c->qcap)
        return 0;
    uint32_t cap = c->qcap ? 2 * c->qcap : 16;
    rl_cb *q = malloc((size_t)cap * sizeof(*q));
    if (!q)
        return REDLOCK_ENOMEM;
    for (uint32_t i = 0; i < c->qlen; i++)
        q[i] = c->q[(c->qhead + i) % c->qcap];
    free(c->q);
    c->q = q;
    c->qhead = 0;
    c->qcap = cap;
    return 0;
}

static int conn_send(rl_conn *c, rl_reply_fn *fn, void *arg, int argc, const char **argv,
                     const size_t *argvlen, bool part)
{
    if (c->closing || !c->ac)
        return REDLOCK_ECONNECT;
    if (queue_reserve(c) != 0)
        return REDLOCK_ENOMEM;
    char buf[1024], *heap;
    size_t len;
    const char *cmd = rl_resp_format(argc, argv, argvlen, buf, sizeof(buf), &len, &heap);
    if (!cmd)
        return REDLOCK_ENOMEM;
    /* hiredis only copies the command into its buffer here: no callback
     * runs inside this call, so the entry can be queued after it. */
    int rc = redisAsyncFormattedCommand(c->ac, conn_on_reply, c, cmd, len);
    free(heap);
    if (rc != REDIS_OK)
        return REDLOCK_ECONNECT;
    c->q[(c->qhead + c->qlen) % c->qcap] = (rl_cb){ fn, arg, part };
    c->qlen++;
    c->qparts += part;
    return 0;
}

int rl_conn_send(rl_conn *c, rl_reply_fn *fn, void *arg, int argc, const char **argv,
                 const size_t *argvlen)
{
    return conn_send(c, fn, arg, argc, argv, argvlen, false);
}

int rl_conn_send_part(rl_conn *c, rl_reply_fn *fn, void *arg, int argc, const char **argv,
                      const size_t *argvlen)
{
    return conn_send(c, fn, arg, argc, argv, argvlen, true);
}

int rl_conn_subscribe(rl_conn *c, const char *channel, size_t len, bool on)
{
    if (c->closing || !c->ac || !c->subscriber)
        return REDLOCK_ECONNECT;
    const char *argv[2] = { on ? "SUBSCRIBE" : "UNSUBSCRIBE", channel };
    size_t lens[2] = { on ? 9u : 11u, len };
    /* The guard's mirror of hiredis' table first: if there is no memory
     * for it, nothing was sent. */
    if (on && rl_guard_subscribed(c, channel, len) != 0)
        return REDLOCK_ENOMEM;
    /* Both versions refuse UNSUBSCRIBE on a connection that is not
     * subscribed: then there is nothing to undo. */
    return redisAsyncCommandArgv(c->ac, conn_on_message, c, 2, argv, lens) == REDIS_OK
               ? 0
               : REDLOCK_ECONNECT;
}

uint32_t rl_conn_pending(const rl_conn *c)
{
    return c ? c->qlen - c->qparts : 0;
}

bool rl_conn_is_tls(const rl_conn *c)
{
    return c && c->tls;
}

bool rl_conn_tls_unfinished(const rl_conn *c)
{
#if RL_HAVE_TLS
    return c && c->tls && !rl_tls_handshake_done(c);
#else
    (void)c;
    return false;
#endif
}

/* The client is being freed: commands queued and not yet written (a
 * release, a waiter's leave, the cleanup of an acquire cut short) go out now
 * if the socket takes them at once. Nothing waits for them; without this a
 * leave queued just before redlock_client_free() would be lost, and the next
 * release would hand the lock to a waiter that is gone. On the loop's thread
 * (a blocking client's I/O thread, whose signals are blocked: a peer that
 * closed gives EPIPE, not SIGPIPE in the host). */
void rl_conn_flush(rl_conn *c)
{
    if (!c || c->closing || c->doomed || !c->ac)
        return;
    int done = 0;
    redisContext *rc = &c->ac->c;
    if ((rc->flags & REDIS_CONNECTED) && !rc->err &&
#if RL_HAVE_TLS
        (!c->tls || rl_tls_handshake_done(c)) &&
#endif
        rc->obuf && sdslen(rc->obuf) > 0)
        (void)redisBufferWrite(rc, &done);
}

void rl_conn_close(rl_conn *c, int err, const char *why)
{
    if (!c || c->closing || !c->ac)
        return; /* already going: its reason stands */
    c->closing = true;
    if (!c->err) {
        c->err = err;
        const char *more = "";
#if RL_HAVE_TLS
        /* A TLS client on a plain port can wait forever: the master reads
         * the ClientHello as the start of a command line. */
        if (err == REDLOCK_ETIMEOUT && rl_conn_tls_unfinished(c))
            more = RL_TLS_UNFINISHED_HINT;
#endif
        snprintf(c->why, sizeof(c->why), "%.120s%s", why, more);
    }
    /* Inside a hiredis callback this only marks the context; hiredis frees
     * it (and runs every pending callback with NULL) once it unwinds. */
    redisAsyncFree(c->ac);
}

/* ---- the end of a connection ---------------------------------------------- *
 *
 * on_close must run after the last reply function. HIREDIS_MAJOR 0 asks
 * the event glue to clean up (ev.cleanup) only after it ran every pending
 * callback with NULL, so the end can be there. 1.x asks for the cleanup
 * first when the connection fails (__redisAsyncDisconnect) and runs the
 * callbacks after; its dataCleanup hook runs last in every path, so on 1.x
 * the end is there. */

static void conn_end(rl_conn *c)
{
    if (c->ended)
        return;
    c->ended = true;
    conn_note_error(c);
    c->ac = NULL;
    c->closing = true;
    if (c->hooks->on_close)
        c->hooks->on_close(c, c->err ? c->err : REDLOCK_ECONNECT,
                           c->why[0] ? c->why : "connection closed", c->arg);
    if (c->busy)
        c->free_pending = true; /* one of our handlers is on the stack */
    else
        conn_free(c);
}

#if HIREDIS_MAJOR >= 1
static void conn_data_cleanup(void *privdata)
{
    conn_end(privdata);
}
#endif

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
        conn_free(c);
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
    conn_note_error(c);
    c->closing = true;
#if HIREDIS_MAJOR < 1
    conn_end(c);
#endif
}

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
            conn_free(c);
        return rc;
    }
#if HIREDIS_MAJOR >= 1
    ac->dataCleanup = conn_data_cleanup;
#endif
    *ret = c;
    return 0;
}
