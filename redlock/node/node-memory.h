/* node-memory.h - what a master remembers, and who it is (node-memory.c):
 * the questions the handshake and every probe ask, and what the answers
 * make of its votes (may they count; what it has natively; its clock and
 * restart events). Part of the node's face
 * (node.h includes it).
 */
#ifndef REDLOCK_NODE_MEMORY_H
#define REDLOCK_NODE_MEMORY_H

#include "node/node-types.h"

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

/* What the fast path's HMGET marker served maxttl says of a vote that
 * needs a bound (wire/acquire.c reads it): RL_SERVED (it counts),
 * RL_UNSERVED (gone, or its window not over), RL_SHORT (served, but the
 * bound is shorter: an operator lowered it since this client looked). */
enum { RL_SERVED, RL_UNSERVED, RL_SHORT };
/* @n answered RL_UNSERVED or RL_SHORT (its marker's bound @bound_ms): no
 * fast path there until CHECK, asked again now, says more; a shorter bound
 * is learnt, so the next attempt takes the script, which raises it. Other
 * values: nothing to learn. */
void rl_node_not_served(rl_node *n, int served, uint32_t bound_ms);

/* Should @n not be asked now (clock, eviction, a failed CHECK, refused as a
 * twin)? Writes why. Return: 0 (ask it), or the code its vote carries:
 * REDLOCK_EINVAL (a twin), REDLOCK_EAUTH (the ACL refused the CHECK),
 * REDLOCK_EUNTRUSTED (the rest). */
int rl_node_excluded(const rl_node *n, char *why, size_t len);
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

/* A clock or restart event: a log line (WARN) and the env's on_event (the
 * config's event hook). @status: REDLOCK_EUNTRUSTED when it takes the master
 * out of quorums now, else 0. */
void rl_node_event(rl_node *n, int status, int event, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
