/* transport-private.h - what the transport's own files share (never included elsewhere).
 *
 * The transport is four files around one struct: transport.c (commands
 * in, replies out, the end), transport-loop.c (opening, the loop glue),
 * transport-reply.c (replies and their guard), transport-tls.c (TLS).
 * Only they include hiredis headers; each 0.14.1/1.x difference is marked
 * HIREDIS_MAJOR (docs/transport.md).
 */
#ifndef REDLOCK_TRANSPORT_PRIVATE_H
#define REDLOCK_TRANSPORT_PRIVATE_H

#include "transport/transport-types.h"

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#ifndef RL_HAVE_TLS
#define RL_HAVE_TLS 0
#endif

#define RL_REPLY_ARRAY_MAX 1024   /* we never ask for more than a few */
#define RL_REPLY_OBJECTS_MAX 4096 /* objects in one reply, nested ones included */

/* Write interest (see the loop glue in transport-loop.c). */
enum { W_IDLE, W_FLUSH, W_ARMED };

typedef struct rl_cb {
    rl_reply_fn *fn;
    void *arg;
    bool part; /* MULTI or a command inside it: the EXEC is the request */
} rl_cb;

/* A channel as hiredis' own subscription table holds it, mirrored so that
 * the guard can refuse what would fail one of hiredis' asserts. */
typedef struct rl_subch {
    struct rl_subch *next;
    int pending; /* SUBSCRIBEs sent and not yet confirmed */
    size_t len;
    char name[];
} rl_subch;

struct rl_conn {
    redisAsyncContext *ac; /* NULL once hiredis let go of it */
    const rl_conn_hooks *hooks;
    void *arg;
    rl_watch watch;    /* the socket; unset once hiredis asked us to clean up */
    rl_timer flush;    /* writes what this pass queued (see the loop glue) */
    bool attached;     /* watch and flush are set up */
    int wstate;        /* W_*: see the loop glue */
    bool in_write;     /* inside our write handler */
    int busy;          /* inside one of our event handlers */
    bool free_pending; /* hiredis let go while busy: free on the way out */
    bool closing;      /* no new commands: closed, or failing */
    bool ended;        /* on_close has run */
    bool subscriber;
    bool answered; /* at least one reply arrived */
    rl_cb *q;      /* reply functions, in send order (a ring) */
    uint32_t qhead, qlen, qcap;
    uint32_t qparts; /* entries that are parts of a transaction */
    uint32_t max_reply_bytes;
    uint32_t objs;       /* objects in the reply being read */
    rl_subch *subs;      /* subscriber connections: hiredis' table, mirrored */
    const char *refused; /* what the guard refused, or NULL */
    int err;             /* why it closed: the first reason wins */
    char why[192];
    bool tls;
    bool cert_asked; /* TLS: the master asked for a client certificate we lack */
    bool doomed;     /* TLS failed while opening: fail on the next loop pass */
    void *ssl;       /* our SSL object (hiredis owns it once attached) */
};

/* transport.c, for transport-loop.c, which stands above it. */
/* Free @c's memory (hiredis has let go of it). */
void rl_conn_free(rl_conn *c);
/* Record why @c failed, from what hiredis says; the first reason wins. */
void rl_conn_note_error(rl_conn *c);
/* The end: on_close, once, then the free (deferred while busy). */
void rl_conn_end(rl_conn *c);

/* transport-reply.c: install the guard on @c's reader. false: no memory. */
bool rl_guard_attach(rl_conn *c);
/* The mirror of hiredis' subscription table: a SUBSCRIBE was sent. */
int rl_guard_subscribed(rl_conn *c, const char *channel, size_t len);
void rl_guard_free(rl_conn *c);

/* transport-tls.c */
#if RL_HAVE_TLS
/* Start TLS on @c's context (connecting) for @a. 0; REDLOCK_ECONNECT,
 * EAUTH or EPROTO with @why when the handshake failed already (it can, on
 * loopback); ENOMEM when TLS could not start at all. */
int rl_tls_attach(rl_conn *c, const rl_tls *t, const rl_addr *a, char *why, size_t len);
/* Why a TLS connection failed, in words a user can act on, and its code
 * (EAUTH: a certificate refused; EPROTO: not TLS; ECONNECT: the master
 * went away, and always once it answered); 0 when TLS has nothing to say
 * (the failure is not TLS's). */
int rl_tls_reason(rl_conn *c, char *out, size_t len); /* REDLOCK_E*, or 0 */
/* Has the TLS handshake finished? */
bool rl_tls_handshake_done(const rl_conn *c);
/* Forget OpenSSL errors of earlier calls on this thread, so that the next
 * failure's reason is this connection's. */
void rl_tls_clear_errors(void);
#endif

#endif
