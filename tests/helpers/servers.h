/* servers.h - extra servers a test starts itself, a PKI for TLS, the log captured.
 *
 * For tests whose masters must be configured unlike the cluster's (TLS,
 * client certificates, unix sockets): each server is a redis-server (or
 * $REDLOCK_TEST_SERVER) of the test's own, on a port of the test's block
 * (with-cluster.sh's base port + 1..9, so clusters never collide) or a unix
 * socket, started with persistence off and stopped by tc_redis_stop().
 * Helpers that cannot do their job fail the running test (cr_fatal).
 */
#ifndef TC_SERVERS_H
#define TC_SERVERS_H

#include <stdbool.h>

typedef struct tc_redis tc_redis;

/* Port @k (1..9) of this test's block. */
int tc_block_port(int k);

/* A directory of this test process's own (made on first use). */
const char *tc_scratch_dir(void);

/*
 * tc_pki() - Certificates for TLS tests, made once per cluster with openssl
 *
 * In the returned directory (EC P-256 keys, valid for a day):
 *   ca.crt                   the test CA
 *   server.crt, server.key   signed by it, for 127.0.0.1 and localhost
 *   client.crt, client.key   signed by it, for client authentication
 *   other-ca.crt             an unrelated CA (a "wrong CA")
 *   other.crt, other.key     signed by the test CA, for other.example only
 *   expired.crt, expired.key as server.crt, but it expired a day before it was made
 */
const char *tc_pki(void);

/* "DIR/NAME" for a file of the PKI. Static storage, one of 8 in turn. */
const char *tc_pki_file(const char *name);

/*
 * tc_redis_start() - Start a server with @args and return once it is ready
 * @args: NULL-terminated; after "--bind 127.0.0.1 --save '' --appendonly no"
 *        and a dir of its own. Give "--port", "--tls-port", "--unixsocket"...
 *
 * Ready means it logged that it is ready to accept connections: the test awaits that
 * line on a pipe, not a timer. The server dies with the test process.
 * Ownership: stop it with tc_redis_stop().
 */
tc_redis *tc_redis_start(const char *const *args);

/* tc_redis_start() of the server binary @bin (a path, or a name looked up
 * in PATH) instead of the cluster's: a fleet of mixed versions (e.g. Debian
 * 12's redis-server beside $REDLOCK_SERVER's Valkey 9). */
tc_redis *tc_redis_start_with(const char *bin, const char *const *args);

/* Kill the server and wait for it. NULL is a no-op. */
void tc_redis_stop(tc_redis *s);

/* ------------------------------------------------------------------------ */
/* The library's log, captured (any thread)                                 */
/* ------------------------------------------------------------------------ */

/* A redlock_log_fn that appends each line to this process's capture. */
void tc_log(int level, const char *msg, void *arg);

/* Is there a captured line holding both @a and @b? */
bool tc_log_has(const char *a, const char *b);

/* Does any captured line hold @s? */
bool tc_log_contains(const char *s);

/* The capture so far, for failure messages. Static storage. */
const char *tc_log_text(void);

#endif
