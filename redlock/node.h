/* node.h - one master: its connection, handshake, reconnects and in-flight bound.
 *
 * A node is a long-lived handle (libuv's sense). It knows nothing of the
 * client that owns it beyond rl_node_env: the settings it needs and two
 * hooks to report back through, so the client sits above its nodes and no
 * call runs back up.
 */
#ifndef REDLOCK_NODE_H
#define REDLOCK_NODE_H

#include "addr.h"
#include "transport.h"
#include "trust.h"

struct event_base;
struct event;
typedef struct rl_node rl_node;

/* What a node needs from its owner, shared by all nodes of a client. */
typedef struct rl_node_env {
    struct event_base *base;
    const redlock_config *cfg;
    const rl_tls *tls; /* NULL: no master uses TLS */
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
    rl_addr addr;           /* addr.name is what messages show */
    rl_conn *conn;          /* NULL while down */
    int state;              /* enum rl_node_state */
    uint32_t backoff_ms;    /* next reconnect delay */
    struct event *timer;    /* reconnect backoff, or the connect deadline */
    rl_monotime connect_us; /* when the last connect started (on-demand rate limit) */
    int err;                /* why it is (or last was) down: REDLOCK_E* */
    char errstr[REDLOCK_VOTE_DETAIL_LEN];
    uint64_t connects;  /* successful handshakes, for logs and tests */
    rl_conn *sub;       /* subscriber connection (waiting), or NULL */
    rl_trust trust;     /* clock and memory facts (trust.h) */
    bool asking_memory; /* a marker/CONFIG probe is in flight */
    bool id_current;    /* trust.run_id was read on this connection */
    int twin;           /* refused as the same server as master twin; -1: not */

    /* A name that moves (NOTES.md §4, "Names that move"): a TCP master
     * written as a host name is looked up again before every reconnect. */
    struct rl_resolve *resolving; /* the look-up in flight (resolve.c), or NULL */
    bool addr_fresh;              /* addr.ip was resolved by client creation, not used yet */
    bool moved;          /* addr.ip is a new address: each CHECK says so until one answers */
    bool check_moved;    /* the CHECK in flight said so */
    bool resolve_failed; /* a failure streak was logged (once per streak) */
    bool round_robin;    /* the name had several addresses: said once */
};

int rl_node_init(rl_node *n, const rl_node_env *env, uint32_t idx, const rl_addr *addr);
void rl_node_start(rl_node *n);
/* Write the commands queued on the master's connection (client free). */
void rl_node_flush(rl_node *n);
void rl_node_close(rl_node *n);

/* Queue one command. 0: @fn will run exactly once (reply, or NULL and why);
 * else a REDLOCK_E* code with n->errstr saying why (@fn never runs). A node
 * that is down is asked to connect at once (at most every reconnect_min_ms)
 * and the command waits behind the handshake. @priority commands (releases
 * that pair with an admitted SET) may use up to twice max_inflight, so
 * cleanup is never refused where its SET was taken. */
int rl_node_send(rl_node *n, rl_reply_fn *fn, void *arg, int argc, const char **argv,
                 const size_t *argvlen, bool priority);

/* A transaction: MULTI, @nparts commands (their argc in @part_argc, their
 * arguments one after another in @argv), EXEC. @queued runs for MULTI and
 * each command's reply (OK, QUEUED, or an error that will abort the EXEC),
 * @done for EXEC's. */
typedef struct rl_node_tx {
    int nparts;
    const int *part_argc;
    const char **argv;
    const size_t *argvlen;
    rl_reply_fn *queued, *done;
} rl_node_tx;

/* Queue @tx as one unit: admitted whole or not at all (a half-sent MULTI
 * would swallow the next command). 0 with *@ret_sent the reply functions
 * that will run (each once); else as rl_node_send, nothing sent. */
int rl_node_send_tx(rl_node *n, const rl_node_tx *tx, void *arg, bool priority, int *ret_sent);

/* Should @n not be asked now (clock, eviction, a failed CHECK, refused as a
 * twin)? Writes why. */
bool rl_node_excluded(const rl_node *n, char *why, size_t len);
/* May an OK that @n sent now count: not excluded, and who the master is
 * was checked on this connection (CHECK)? Writes why not. */
bool rl_node_vote_counts(const rl_node *n, char *why, size_t len);

/* Has the server on @n's connection @native (RL_NATIVE_*, trust.h), as the
 * INFO of this very connection said? */
bool rl_node_native(const rl_node *n, unsigned native);
/* It claimed @native and answered a native command wrongly (@why): the
 * connection gets the scripts from now on (a lying master is named once,
 * in the vote and in the log; its next connection is asked again). */
void rl_node_native_refused(rl_node *n, unsigned native, const char *why);

/* What a master said of its memory marker (the CHECK and acquire scripts):
 * kept on the node, and passed to the client (the longest ttl, a master
 * whose window must be settled). */
void rl_node_marker(rl_node *n, const rl_marker *m);

/* The handshake's and the probes' questions about memory and eviction:
 * queue them on @conn (EVAL of the CHECK script; CONFIG GET). */
int rl_node_ask_memory(rl_node *n, rl_conn *conn);
/* May an acquire of a @want_ms window take the fast path on @n now
 * (acquire.c, trust.h rl_trust_fast)? Only on the connection that is up. */
bool rl_node_fast(const rl_node *n, uint32_t want_ms, rl_monotime now);
/* Ask them now on the node's connection, unless they are in flight (a
 * vote found the marker not as the last CHECK said). */
void rl_node_recheck(rl_node *n);

/* The subscriber connection, opened (with AUTH) if there is none. NULL when
 * the node is down or it cannot be opened: waiters fall back to polling. */
rl_conn *rl_node_subscriber(rl_node *n);

/* A clock or restart event: a log line (WARN) and the env's on_event (the
 * config's event hook). @status: REDLOCK_EUNTRUSTED when it takes the master
 * out of quorums now, else 0. */
void rl_node_event(rl_node *n, int status, int event, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Log with the master named by index and address. */
#define rl_node_log(n, level, fmt, ...) \
    rl_log((n)->env->cfg, level, "master %u (%s): " fmt, (n)->idx, (n)->addr.name, __VA_ARGS__)

#endif
