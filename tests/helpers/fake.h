/* fake.h - stand-ins for masters: fakes that misbehave on purpose, and a
 * slow link in front of a real one.
 *
 * Each listens on an ephemeral loopback port (never one of a cluster's),
 * is served by a thread of its own, and is recognised by its address in a
 * masters list (tc_masters_with()). Commands are told apart with the
 * hiredis reader, so a fake answers per command, and the proxy can hold
 * one command of two sent in a single write. Helpers that cannot start
 * fail the test.
 */
#ifndef TC_FAKE_H
#define TC_FAKE_H

#include <stddef.h>

/* ------------------------------------------------------------------------ */
/* Fake masters                                                             */
/* ------------------------------------------------------------------------ */

/* A loopback port that nothing listens on (bound, then closed): a master
 * whose address refuses connections. */
int tc_dead_port(void);

/* Write all of @p to socket @fd (no SIGPIPE; retries on EINTR): 0 or -1. */
int tc_send_all(int fd, const char *p, size_t len);

typedef struct tc_fake tc_fake;

/*
 * tc_fake_start() - A "master" that answers every command with @reply
 * @reply, @len: the exact bytes sent back per command (any bytes: use them
 *               for malformed RESP); copied
 * @ret_port:    set to the port it listens on (may be NULL)
 *
 * Bytes the reader cannot parse get one reply, then the connection is
 * closed. Any number of connections.
 * Ownership: stop and free it with tc_fake_stop().
 */
tc_fake *tc_fake_start(const void *reply, size_t len, int *ret_port);

/* A black hole: accepts connections, reads and counts commands, never
 * answers and never closes. */
tc_fake *tc_blackhole_start(int *ret_port);

int tc_fake_port(const tc_fake *f);
const char *tc_fake_addr(const tc_fake *f);      /* "127.0.0.1:port" */
unsigned tc_fake_connections(const tc_fake *f);  /* accepted so far; thread-safe */
unsigned tc_fake_commands(const tc_fake *f);     /* received so far; thread-safe */

/* Close every connection and the listener, join the thread, free @f.
 * NULL is a no-op. */
void tc_fake_stop(tc_fake *f);

/* ------------------------------------------------------------------------ */
/* A slow link: a proxy in front of one master of the cluster               */
/* ------------------------------------------------------------------------ */

typedef struct tc_proxy tc_proxy;

/*
 * tc_proxy_start() - A TCP proxy on a loopback port in front of master @i
 *
 * Replies go back at once. Commands go through at once until
 * tc_proxy_hold() says otherwise. A master that is down makes the proxy
 * refuse (accept, then close) too.
 * Ownership: stop it with tc_proxy_stop().
 */
tc_proxy *tc_proxy_start(int i);

/* "127.0.0.1:port" to put in a masters list. */
const char *tc_proxy_addr(const tc_proxy *p);

/* From now on let the next @pass commands through at once and hold every
 * later one for @delay_ms (in order) before passing it on: a master that
 * has run a command and answered, but hears the next one late. */
void tc_proxy_hold(tc_proxy *p, unsigned pass, unsigned delay_ms);

/* Close every connection and the listener, join the thread, free @p.
 * Held commands not yet passed on are dropped. NULL is a no-op. */
void tc_proxy_stop(tc_proxy *p);

#endif
