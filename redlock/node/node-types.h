/* node-types.h - the node's struct and its owner's hooks (node.h has why).
 *
 * node.c and node-memory.c both work on struct rl_node, and node.c calls
 * node-memory.c (the handshake asks about memory). The struct stands on its
 * own, below both, so that node-memory.c does not depend on node.c's header
 * and every call between the two runs down.
 */
#ifndef REDLOCK_NODE_TYPES_H
#define REDLOCK_NODE_TYPES_H

#include "base/addr.h"
#include "base/reactor.h"
#include "transport/transport.h"
#include "node/trust.h"

typedef struct rl_node rl_node;

/* What a node needs from its owner, shared by all nodes of a client. */
typedef struct rl_node_env {
    const redlock_loop *loop; /* the client's: every watch and timer */
    const redlock_config *cfg;
    const rl_tls *tls;      /* NULL: no master uses TLS */
    struct rl_trace *trace; /* NULL: not tracing (trace.h) */
    /* A CHECK (or a vote) reported the master's memory marker. */
    void (*on_marker)(rl_node *n, const rl_marker *m, void *arg);
    /* A node came up (handshake done) or went down. Optional. */
    void (*on_state)(rl_node *n, void *arg);
    /* The handshake read the master's run_id: the index of another master
     * of this client connected to that same server now, or -1. Optional. */
    int (*on_identity)(const rl_node *n, void *arg);
    /* A clock or restart event (rl_node_event), already logged: @status 0
     * or EUNTRUSTED, @msg one line naming the master. Optional. */
    void (*on_event)(rl_node *n, int status, int event, const char *msg, void *arg);
    /* A message on the node's subscriber connection. Optional. */
    void (*on_message)(rl_node *n, const char *channel, size_t clen, const char *msg, size_t mlen,
                       void *arg);
    void *arg;
} rl_node_env;

enum rl_node_state { RL_NODE_DOWN, RL_NODE_CONNECTING, RL_NODE_UP };

struct rl_node {
    const rl_node_env *env;
    uint32_t idx;
    char late_token[RL_TOKEN_LEN + 1]; /* the last fast-path answer that came after
                                          its acquire decided (acquire-votes.c) */
    bool late_quiet;                   /* ... was a grant with nobody queued: its
                                          release may go without Lua here (release.c) */
    rl_addr addr;                      /* addr.name is what messages show */
    rl_conn *conn;                     /* NULL while down */
    int state;                         /* enum rl_node_state */
    uint32_t backoff_ms;               /* next reconnect delay */
    rl_timer timer;                    /* reconnect backoff, or the connect deadline */
    rl_monotime connect_us;            /* when the last connect started (on-demand rate limit) */
    int err;                           /* why it is (or last was) down: REDLOCK_E* */
    char errstr[REDLOCK_VOTE_DETAIL_LEN];
    uint64_t connects;  /* successful handshakes, for logs and tests */
    rl_conn *sub;       /* subscriber connection (waiting), or NULL */
    rl_trust trust;     /* clock and memory facts (trust.h) */
    bool asking_memory; /* a marker/CONFIG probe is in flight */
    bool id_current;    /* trust.run_id was read on this connection */
    int twin;           /* refused as the same server as master twin; -1: not */

    /* A name that moves (docs/memory-guard.md, "Names that move"): a TCP master
     * written as a host name is looked up again before every reconnect. */
    struct rl_resolve *resolving; /* the look-up in flight (resolve.c), or NULL */
    bool addr_fresh;              /* addr.ip was resolved by client creation, not used yet */
    bool moved;          /* addr.ip is a new address: each CHECK says so until one answers */
    bool check_moved;    /* the CHECK in flight said so */
    bool resolve_failed; /* a failure streak was logged (once per streak) */
    bool round_robin;    /* the name had several addresses: said once */
};

/* Log with the master named by index and address. */
#define rl_node_log(n, level, fmt, ...) \
    rl_log((n)->env->cfg, level, "master %u (%s): " fmt, (n)->idx, (n)->addr.name, __VA_ARGS__)

/* Until rl_node_close(): its timer is set up from init to close, and a
 * node without one schedules nothing. */
static inline bool rl_node_open(const rl_node *n)
{
    return n->timer.loop != NULL;
}

#endif
