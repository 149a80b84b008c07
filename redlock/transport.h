/* transport.h - connections to masters: the only part of libredlock that knows hiredis.
 *
 * What the transport promises the rest of the library (NOTES.md §11 has the
 * long form, for hiredis 0.14.1 and 1.x alike):
 *  - Replies on one connection arrive in the order the commands were sent;
 *    each reply function runs exactly once: with the reply, or with NULL and
 *    the reason when the connection fails or is closed first.
 *  - Reply functions run from the event loop, never inside rl_conn_send().
 *    A reply is valid only during its function.
 *  - No timeouts here: callers keep their own timers and close the
 *    connection when they give up on it (every pending reply function then
 *    runs with NULL, at once or as soon as hiredis lets go of the context).
 *  - on_close runs once per connection, after the last reply function, and
 *    the connection is freed right after it returns.
 *  - Every reply is bounded: too many elements, too deep, or more than
 *    max_reply_bytes buffered drops the connection with EPROTO instead of
 *    growing; so does a reply no command asked for.
 *  - Commands queued in one pass of the loop go out in one write, and write
 *    interest is only armed when the socket would block: no epoll_ctl in
 *    the steady state.
 */
#ifndef REDLOCK_TRANSPORT_H
#define REDLOCK_TRANSPORT_H

#include "addr.h"
#include "common.h"

struct event_base;

typedef struct rl_conn rl_conn;
typedef struct rl_reply rl_reply; /* opaque: read it with the accessors below */
typedef struct rl_tls rl_tls;     /* TLS settings shared by a client's connections */

enum rl_reply_type {
    RL_REPLY_STRING = 1,
    RL_REPLY_ARRAY,
    RL_REPLY_INTEGER,
    RL_REPLY_NIL,
    RL_REPLY_STATUS,
    RL_REPLY_ERROR,
    RL_REPLY_OTHER,
};

int rl_reply_type(const rl_reply *r);
long long rl_reply_integer(const rl_reply *r);
/* String, status or error text (NUL-terminated), and its length. */
const char *rl_reply_str(const rl_reply *r, size_t *len);
size_t rl_reply_elements(const rl_reply *r);
const rl_reply *rl_reply_element(const rl_reply *r, size_t i);
/* Is @r the status reply @s (e.g. "OK")? */
bool rl_reply_is_status(const rl_reply *r, const char *s);
/* A type as a word, for messages. */
const char *rl_reply_type_name(int type);

/* One command's reply: @r, or NULL with @err (REDLOCK_E*) and @why. */
typedef void rl_reply_fn(void *arg, const rl_reply *r, int err, const char *why);

typedef struct rl_conn_hooks {
    /* Once, after every pending reply function ran; @conn is freed after. */
    void (*on_close)(rl_conn *conn, int err, const char *why, void *arg);
    /* Subscriber connections: a message published on a subscribed channel. */
    void (*on_message)(rl_conn *conn, const char *channel, size_t clen, const char *msg,
                       size_t mlen, void *arg);
} rl_conn_hooks;

typedef struct rl_conn_opts {
    const rl_addr *addr;
    struct event_base *base;
    const rl_tls *tls; /* NULL: plain TCP / unix socket */
    uint32_t max_reply_bytes;
    bool subscriber; /* will carry SUBSCRIBE and nothing after it */
} rl_conn_opts;

/* Start connecting. Commands may be sent at once; they go out when the
 * connection is up. 0, or REDLOCK_E* with @why (nothing to close then). */
int rl_conn_open(const rl_conn_opts *o, const rl_conn_hooks *h, void *arg, rl_conn **ret, char *why,
                 size_t whylen);

/* Queue a command; @fn runs exactly once. 0, or REDLOCK_ECONNECT when the
 * connection is closing (@fn will not run). */
int rl_conn_send(rl_conn *c, rl_reply_fn *fn, void *arg, int argc, const char **argv,
                 const size_t *argvlen);

/* The same for MULTI and the commands inside a transaction: their replies
 * come like any other, but only the EXEC counts as a request waiting for
 * an answer (rl_conn_pending). */
int rl_conn_send_part(rl_conn *c, rl_reply_fn *fn, void *arg, int argc, const char **argv,
                      const size_t *argvlen);

/* Subscriber connections: (UN)SUBSCRIBE @channel; messages go to on_message. */
int rl_conn_subscribe(rl_conn *c, const char *channel, size_t len, bool on);

/* Requests sent whose replies have not arrived (a transaction is one). */
uint32_t rl_conn_pending(const rl_conn *c);

bool rl_conn_is_tls(const rl_conn *c);

/* A TLS connection (or NULL) whose handshake has not finished: the master
 * may be reading our ClientHello as a command, on its plain port. What a
 * message about it then adds: */
bool rl_conn_tls_unfinished(const rl_conn *c);
#define RL_TLS_UNFINISHED_HINT " (TLS handshake unfinished: a plain port?)"

/* Write what is queued, if the socket takes it at once (the client is
 * being freed; on the loop's thread). */
void rl_conn_flush(rl_conn *c);

/* Close with @err/@why: pending reply functions get NULL with them, then
 * on_close runs. Safe from inside a reply function. */
void rl_conn_close(rl_conn *c, int err, const char *why);

/* TLS settings from the config (CA, client certificate, verification).
 * *ret stays NULL when no master uses TLS. 0, or REDLOCK_EINVAL naming the
 * file that does not load. */
int rl_tls_new(const redlock_config *cfg, const rl_addr *addrs, uint32_t n, rl_tls **ret,
               redlock_error *e);
void rl_tls_free(rl_tls *t);

#endif
