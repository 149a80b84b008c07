/* node-memory.h - what a master remembers, and who it is (node-memory.c):
 * the questions the handshake and every probe ask. Part of the node's face
 * (node.h includes it).
 */
#ifndef REDLOCK_NODE_MEMORY_H
#define REDLOCK_NODE_MEMORY_H

#include "node-types.h"

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

#endif
