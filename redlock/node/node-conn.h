/* node-conn.h - opening connections to a master (node-conn.c). Part of the
 * node's face (node.h includes it).
 */
#ifndef REDLOCK_NODE_CONN_H
#define REDLOCK_NODE_CONN_H

#include "node/node-types.h"

/* The options of a connection to @n (its address, TLS, the reply bound). */
rl_conn_opts rl_node_conn_opts(const rl_node *n, bool subscriber);

/* Queue AUTH on @conn with @n's credentials, @fn for its reply; 0 and
 * nothing sent when there is no password. */
int rl_node_send_auth(rl_node *n, rl_conn *conn, rl_reply_fn *fn);

/* The subscriber connection, opened (with AUTH) if there is none. NULL when
 * the node is down or it cannot be opened: waiters fall back to polling. */
rl_conn *rl_node_subscriber(rl_node *n);

#endif
