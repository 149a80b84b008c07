/* sock.h - loopback sockets and a served thread, for stand-in masters.
 *
 * The fake masters (fake.c) and the slow-link proxy (proxy.c) each listen
 * on an ephemeral loopback port, never one of a cluster's, and serve their
 * connections from a thread of their own that a byte on a pipe stops.
 * Helpers that cannot do their job fail the test (tc_fail). Internal to
 * the helpers: tests use fake.h.
 */
#ifndef TC_SOCK_H
#define TC_SOCK_H

#include <pthread.h>
#include <stddef.h>

/* tc_send_all() and tc_dead_port() are declared in fake.h. */

struct redisReader;

/* recv() what is waiting on @fd into @reader: 1 when something was fed,
 * 0 on EINTR (try again), -1 on EOF, an error or bytes the reader refuses
 * (close the connection). */
int tc_feed(int fd, struct redisReader *reader);

/* A listener and the thread that serves it. */
typedef struct tc_server {
    int listen_fd;
    int wake[2]; /* a byte on wake[1] tells the thread to return */
    int port;
    char addr[32]; /* "127.0.0.1:port" */
    pthread_t thread;
    int running; /* the thread was started and not yet joined */
} tc_server;

/* Listen on 127.0.0.1:0 (@what names the caller in failure messages). */
void tc_server_open(tc_server *s, const char *what);

/* Serve: @fn(@arg) on a new thread; it polls s->wake[0] with its sockets
 * and returns once that is readable. */
void tc_server_start(tc_server *s, void *(*fn)(void *), void *arg, const char *what);

/* Wake the thread, join it, close the listener and the pipe. Safe on a
 * server that was opened but never started. */
void tc_server_stop(tc_server *s);

#endif
