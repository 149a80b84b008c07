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

/* A loopback port that nothing listens on (bound, never listened on, held
 * until the process ends): a master whose address refuses connections. */
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

/* One reply by command name, for tc_fake_rules_start(). */
typedef struct tc_fake_rule {
    const char *cmd;   /* command name, any case; NULL ends a list */
    const char *reply; /* the exact RESP sent back */
} tc_fake_rule;

/*
 * tc_fake_rules_start() - A master that answers by command name
 * @rules:      the commands it knows and their replies (at most 16, ended by
 *              a NULL cmd); copied
 * @otherwise:  the reply to every other command; copied
 *
 * Enough of a Redis to pass a client's handshake and then misbehave on the
 * commands that matter (e.g. every acquire answered -TRYAGAIN).
 */
tc_fake *tc_fake_rules_start(const tc_fake_rule *rules, const char *otherwise, int *ret_port);

/* The rules that take a rules fake through a client's handshake as a Redis
 * whose memory counts at once (the memory check, EVAL, answered {0, 0, 0}):
 * the first entries of a rules array, before the commands it misbehaves on. */
/* clang-format off */
#define TC_FAKE_HANDSHAKE \
    { "SCRIPT", "$40\r\n0000000000000000000000000000000000000000\r\n" }, \
    { "INFO", "$0\r\n\r\n" }, \
    { "EVAL", "*3\r\n:0\r\n:0\r\n:0\r\n" }, \
    { "CONFIG", "*0\r\n" }, \
    { "PING", "+PONG\r\n" }, \
    { "TIME", "*2\r\n$10\r\n1700000000\r\n$1\r\n0\r\n" }
/* clang-format on */

/*
 * tc_fake_stream_start() - A master whose every reply never ends
 * @head: sent first for each command (e.g. "$1000000000\r\n", a 1 GB bulk)
 *
 * After @head it sends filler for as long as the client reads (up to 1 GiB
 * per command): a master streaming a huge reply. The connection closes
 * when the client drops it or stops reading for 2 s.
 */
tc_fake *tc_fake_stream_start(const char *head, int *ret_port);

int tc_fake_port(const tc_fake *f);
const char *tc_fake_addr(const tc_fake *f);     /* "127.0.0.1:port" */
unsigned tc_fake_connections(const tc_fake *f); /* accepted so far; thread-safe */
unsigned tc_fake_commands(const tc_fake *f);    /* received so far; thread-safe */

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

/* For the next @ms, connections accepted are not passed on: the proxy
 * answers every command on them with @reply (e.g. "-LOADING ...\r\n"), for
 * as long as they last: a master that is there but not ready. Connections
 * accepted before or after go through. @reply is copied. */
void tc_proxy_refuse(tc_proxy *p, const char *reply, unsigned ms);

/* Commands the proxy answered itself; connections it accepted. */
unsigned tc_proxy_refused(tc_proxy *p);
unsigned tc_proxy_accepted(tc_proxy *p);

/* Close every connection and the listener, join the thread, free @p.
 * Held commands not yet passed on are dropped. NULL is a no-op. */
void tc_proxy_stop(tc_proxy *p);

#endif
