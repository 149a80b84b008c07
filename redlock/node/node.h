/* node.h - one master: its connection, handshake, reconnects and in-flight bound.
 *
 * A node is a long-lived handle (libuv's sense). It knows nothing of the
 * client that owns it beyond rl_node_env: the settings it needs and two
 * hooks to report back through, so the client sits above its nodes and no
 * call runs back up.
 */
#ifndef REDLOCK_NODE_H
#define REDLOCK_NODE_H

#include "node/node-conn.h"
#include "node/node-memory.h"
#include "node/node-types.h"

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
 * @done for EXEC's. Or, @pipelined, the commands alone, one request. */
typedef struct rl_node_tx {
    bool pipelined; /* no MULTI and EXEC: @queued runs for each command
                       but the last, @done for the last */
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

#endif
