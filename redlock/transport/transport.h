/* transport.h - connections to masters: the only part of libredlock that knows hiredis.
 *
 * rl_conn: open, send, close; replies in send order, each reply function
 * once (the reply, or NULL and the reason); on_close once, last; no
 * timeouts; every reply bounded; one write per loop pass. The promises in
 * full, for hiredis 0.14.1 and 1.x alike: docs/transport.md.
 */
#ifndef REDLOCK_TRANSPORT_H
#define REDLOCK_TRANSPORT_H

#include "transport/transport-reply.h"
#include "transport/transport-tls.h"
#include "transport/transport-types.h"

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

#endif
