/* sock.c - loopback sockets and a served thread (see sock.h). */
#include "sock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <hiredis/hiredis.h>

#include "cluster.h"
#include "fake.h"

int tc_send_all(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int tc_feed(int fd, struct redisReader *reader)
{
    char buf[16384];
    ssize_t r = recv(fd, buf, sizeof(buf), 0);

    if (r < 0 && errno == EINTR)
        return 0;
    if (r <= 0 || redisReaderFeed(reader, buf, (size_t)r) != REDIS_OK)
        return -1;
    return 1;
}

/* A TCP socket bound to 127.0.0.1:0; its port in *@port. @reuse:
 * SO_REUSEADDR, for a listener (another bind of the port may then share it
 * while neither listens). */
static int bind_loopback(int *port, int reuse, const char *what)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t salen = sizeof(sa);
    const int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        tc_fail("%s: socket: %s", what, strerror(errno));
    if (reuse)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &salen) < 0)
        tc_fail("%s: bind: %s", what, strerror(errno));
    *port = ntohs(sa.sin_port);
    return fd;
}

int tc_dead_port(void)
{
    int port;

    /* Bound without SO_REUSEADDR and kept open until the process ends,
     * never listened on: connections to it are refused, and no other
     * socket (a fake master of a test running beside this one) can be
     * given the port meanwhile. Closed at once, the port went back to the
     * pool, and a fake that took it made a "dead" master answer. */
    (void)bind_loopback(&port, 0, "tc_dead_port");
    return port;
}

void tc_server_open(tc_server *s, const char *what)
{
    memset(s, 0, sizeof(*s));
    s->wake[0] = s->wake[1] = -1;
    s->listen_fd = bind_loopback(&s->port, 1, what);
    if (listen(s->listen_fd, 64) < 0)
        tc_fail("%s: listen: %s", what, strerror(errno));
    snprintf(s->addr, sizeof(s->addr), "127.0.0.1:%d", s->port);
    if (pipe2(s->wake, O_CLOEXEC) < 0)
        tc_fail("%s: pipe: %s", what, strerror(errno));
}

void tc_server_start(tc_server *s, void *(*fn)(void *), void *arg, const char *what)
{
    int rc = pthread_create(&s->thread, NULL, fn, arg);

    if (rc != 0)
        tc_fail("%s: pthread_create: %s", what, strerror(rc));
    s->running = 1;
}

void tc_server_stop(tc_server *s)
{
    if (s->running) {
        while (write(s->wake[1], "x", 1) < 0 && errno == EINTR)
            ;
        pthread_join(s->thread, NULL);
        s->running = 0;
    }
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    if (s->wake[0] >= 0)
        close(s->wake[0]);
    if (s->wake[1] >= 0)
        close(s->wake[1]);
    s->listen_fd = s->wake[0] = s->wake[1] = -1;
}
