/* relay.h - a TCP relay that adds one-way delay, for when tc netem is missing.
 *
 * Listens on a loopback port and forwards each connection to one target,
 * holding the bytes of each direction for a set delay (plus optional
 * uniform jitter) before passing them on. Order within a connection is
 * kept: a chunk never overtakes the one before it, as on a TCP link whose
 * packets are delayed. A "cut" holds everything until it is lifted: a
 * partition that TCP would heal by retransmitting. The upstream socket can
 * be made inside a network namespace (tests/netns.sh), which gives tests a
 * path to a master that no partition of its veth can touch.
 *
 * Served by a thread of its own; every function here is thread-safe. Does
 * not use criterion: plain programs (sim-regions) use it too.
 */
#ifndef TC_RELAY_H
#define TC_RELAY_H

#include <stddef.h>

typedef struct tc_relay tc_relay;

/*
 * tc_relay_start() - Listen on 127.0.0.1:@listen_port, forward to @target
 * @target:      "a.b.c.d:port" (IPv4, numeric)
 * @listen_port: port on 127.0.0.1, or 0 for any free one
 * @netns:       name of a network namespace (as in /run/netns) in which to
 *               make the upstream sockets, or NULL for the caller's own
 * @err, @size:  on failure, one line saying why (may be NULL)
 *
 * Starts with no delay. Return: the relay, or NULL on failure.
 * Ownership: stop and free it with tc_relay_stop().
 */
tc_relay *tc_relay_start(const char *target, int listen_port, const char *netns, char *err,
                         size_t size);

/*
 * tc_relay_set_delay() - Delay bytes client->target by @up_ms and
 * target->client by @down_ms, each plus or minus a uniform 0..@jitter_ms
 * (never below zero), as netem's "delay D J"
 *
 * Applies to bytes read from now on; bytes already held keep their time.
 * Jitter never reorders: a chunk waits for the one ahead of it, so the
 * spread is skewed late, as on a TCP link with head-of-line blocking.
 */
void tc_relay_set_delay(tc_relay *r, unsigned up_ms, unsigned down_ms, unsigned jitter_ms);

/* Hold (@on = 1) or let through (@on = 0) everything, both directions.
 * Held bytes go on, in order, once the cut is lifted. */
void tc_relay_cut(tc_relay *r, int on);

/* Chunks the relay holds now, both directions: bytes read and not passed
 * on yet (a cut's, or a delay's), an end of stream counting as one. A
 * test awaits it to know that a request it means to hold is held. */
unsigned tc_relay_held(const tc_relay *r);

int tc_relay_port(const tc_relay *r);
const char *tc_relay_addr(const tc_relay *r);     /* "127.0.0.1:port" */
unsigned tc_relay_connections(const tc_relay *r); /* accepted so far */

/* Close every connection and the listener, join the thread, free @r.
 * Bytes still held are dropped. NULL is a no-op. */
void tc_relay_stop(tc_relay *r);

/*
 * tc_socket_in_netns() - socket(AF_INET, SOCK_STREAM) made inside the
 * network namespace @netns (a name under /run/netns)
 *
 * Switches the calling thread into @netns, makes the socket and switches
 * back; the socket stays in @netns for good. Needs CAP_SYS_ADMIN.
 * Return: the fd (close-on-exec, blocking), or -1 with errno set. If the
 * thread cannot switch back, the process aborts (it would be lost).
 */
int tc_socket_in_netns(const char *netns);

#endif
