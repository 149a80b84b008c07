/* transport-types.h - the types the transport and its users share.
 *
 * transport.h is the transport's face (what node.c and the scripts' callers
 * call); transport-private.h is what its three files share inside. Both
 * need these types, and neither may include the other: the private header
 * sits under the transport's files, the face above them. So the types stand
 * on their own, below both.
 */
#ifndef REDLOCK_TRANSPORT_TYPES_H
#define REDLOCK_TRANSPORT_TYPES_H

#include "base/addr.h"
#include "base/common.h"
#include "base/reactor.h"

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
    const redlock_loop *loop;
    const rl_tls *tls; /* NULL: plain TCP / unix socket */
    uint32_t max_reply_bytes;
    bool subscriber; /* will carry SUBSCRIBE and nothing after it */
} rl_conn_opts;

#endif
