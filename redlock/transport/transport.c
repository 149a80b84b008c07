/* transport.c - connections to masters over hiredis (0.14.1 or 1.x): commands in, replies out.
 *
 * A connection takes commands in and hands replies out in order, then
 * ends once. Opening and the loop glue: transport-loop.c; replies and their
 * guard: transport-reply.c; TLS: transport-tls.c; RESP: transport-format.c.
 * HIREDIS_MAJOR marks each version difference. The promises: docs/transport.md.
 */
#include "transport/transport.h"
#include "transport/transport-private.h"
#include "transport/transport-format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rl_conn_free(rl_conn *c)
{
    rl_guard_free(c);
    free(c->q);
    free(c);
}

/* Record why the connection failed, from what hiredis says, in words a user
 * can act on. Runs before the first NULL reply and at cleanup; the first
 * reason recorded wins (an explicit close says its own). */
void rl_conn_note_error(rl_conn *c)
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
    rl_conn_note_error(c);
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
 * the end is there. Both hooks are in transport-loop.c (ev_cleanup,
 * conn_data_cleanup). */

void rl_conn_end(rl_conn *c)
{
    if (c->ended)
        return;
    c->ended = true;
    rl_conn_note_error(c);
    c->ac = NULL;
    c->closing = true;
    if (c->hooks->on_close)
        c->hooks->on_close(c, c->err ? c->err : REDLOCK_ECONNECT,
                           c->why[0] ? c->why : "connection closed", c->arg);
    if (c->busy)
        c->free_pending = true; /* one of our handlers is on the stack */
    else
        rl_conn_free(c);
}
