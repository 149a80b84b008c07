/* cluster.c - the criterion tests' side of tests/with-cluster.sh.
 *
 * Reads the cluster's coordinates from REDLOCK_TEST_*, drives cluster-up.sh
 * for faults, talks to masters with the hiredis sync API, and serves fake
 * masters from a thread. Kept out of the library: nothing here is redlock
 * code, and tests of every kind (black-box and white-box) link it.
 */
#include "cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <event2/event.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

extern char **environ;

#define TC_HOST "127.0.0.1"
#define TC_MAX_MASTERS 64         /* cluster-up.sh's limit */
#define TC_CMD_TIMEOUT_S 2        /* connect and command timeout of tc_cmd() */

/* Fail the running test with a message. Inside a criterion test this is
 * cr_fatal(). Outside one (a plain test program, e.g. under ThreadSanitizer,
 * where criterion's runner cannot start) the message goes to stderr and the
 * process aborts, which fails the program all the same. */
__attribute__((noreturn, format(printf, 1, 2)))
static void tc_fail(const char *fmt, ...)
{
    char msg[2560];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (criterion_current_test)
        cr_fatal("%s", msg);
    fprintf(stderr, "tc: %s\n", msg);
    abort();
}

/* ------------------------------------------------------------------------ */
/* Environment                                                              */
/* ------------------------------------------------------------------------ */

static const char *env_required(const char *name)
{
    const char *v = getenv(name);

    if (!v || !*v)
        tc_fail("%s is not set: run this test through tests/with-cluster.sh "
                 "(meson test does)", name);
    return v;
}

static long env_long(const char *name, long min, long max)
{
    const char *v = env_required(name);
    char *end;
    long n;

    errno = 0;
    n = strtol(v, &end, 10);
    if (errno || *end || end == v || n < min || n > max)
        tc_fail("%s=\"%s\" is not a number in %ld..%ld", name, v, min, max);
    return n;
}

const char *tc_masters(void)
{
    return env_required("REDLOCK_TEST_MASTERS");
}

int tc_n(void)
{
    return (int)env_long("REDLOCK_TEST_N", 1, TC_MAX_MASTERS);
}

static int baseport(void)
{
    return (int)env_long("REDLOCK_TEST_BASEPORT", 1, 65535);
}

static void check_index(const char *what, int i)
{
    int n = tc_n();

    if (i < 0 || i >= n)
        tc_fail("%s: master index %d out of range 0..%d", what, i, n - 1);
}

int tc_port(int i)
{
    check_index("tc_port", i);
    return baseport() + i;
}

const char *tc_addr(int i)
{
    /* One slot per master and per thread: the pointer stays valid for the
     * thread's life and no caller can overwrite another's. */
    static __thread char addrs[TC_MAX_MASTERS][32];
    int port = tc_port(i);    /* fails the test unless 0 <= i < N */

    snprintf(addrs[i], sizeof(addrs[i]), TC_HOST ":%d", port);
    return addrs[i];
}

const char *tc_password(void)
{
    const char *v = getenv("REDLOCK_TEST_PASSWORD");

    return v && *v ? v : NULL;
}

int tc_aof(void)
{
    const char *v = getenv("REDLOCK_TEST_AOF");

    return v && strcmp(v, "1") == 0;
}

char *tc_masters_with(int i, const char *addr)
{
    int n = tc_n();
    size_t size = strlen(addr) + 1;
    char *out;

    check_index("tc_masters_with", i);
    for (int k = 0; k < n; k++)
        size += 32;
    out = malloc(size);
    if (!out)
        tc_fail("tc_masters_with: out of memory");
    out[0] = '\0';
    for (int k = 0; k < n; k++) {
        if (k)
            strcat(out, ",");
        strcat(out, k == i ? addr : tc_addr(k));
    }
    return out;
}

/* ------------------------------------------------------------------------ */
/* Faults                                                                   */
/* ------------------------------------------------------------------------ */

/* cluster-up.sh -n N -p P -d DIR @cmd [@i]. Its stdout and stderr are read
 * through a pipe and quoted in the failure message: criterion's TAP mode
 * drops whatever a test worker writes, and the TAP stream on stdout must
 * carry nothing else anyway. */
static void cluster_up(const char *cmd, int i)
{
    char nbuf[16], pbuf[16], ibuf[16] = "", out[2048];
    const char *argv[12];
    posix_spawn_file_actions_t fa;
    size_t used = 0;
    int k = 0, rc, status, pipefd[2];
    pid_t pid;

    snprintf(nbuf, sizeof(nbuf), "%d", tc_n());
    snprintf(pbuf, sizeof(pbuf), "%d", baseport());
    argv[k++] = "bash";
    argv[k++] = env_required("REDLOCK_TEST_CLUSTER");
    argv[k++] = "-n";
    argv[k++] = nbuf;
    argv[k++] = "-p";
    argv[k++] = pbuf;
    argv[k++] = "-d";
    argv[k++] = env_required("REDLOCK_TEST_DIR");
    argv[k++] = cmd;
    if (i >= 0) {
        check_index(cmd, i);
        snprintf(ibuf, sizeof(ibuf), "%d", i);
        argv[k++] = ibuf;
    }
    argv[k] = NULL;

    if (pipe2(pipefd, O_CLOEXEC) < 0)
        tc_fail("cluster-up.sh %s %s: pipe: %s", cmd, ibuf, strerror(errno));
    if (posix_spawn_file_actions_init(&fa) != 0)
        tc_fail("cluster-up.sh %s %s: posix_spawn_file_actions_init failed", cmd, ibuf);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDERR_FILENO);
    rc = posix_spawnp(&pid, "bash", &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    if (rc != 0) {
        close(pipefd[0]);
        tc_fail("cluster-up.sh %s %s: cannot run bash: %s", cmd, ibuf, strerror(rc));
    }

    /* Until EOF: the script's masters get /dev/null, not this pipe, so EOF
     * comes when the script exits. Keep what fits, drain the rest. */
    for (;;) {
        char sink[512];
        char *dst = used + 1 < sizeof(out) ? out + used : sink;
        size_t room = used + 1 < sizeof(out) ? sizeof(out) - 1 - used : sizeof(sink);
        ssize_t r = read(pipefd[0], dst, room);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (dst != sink)
            used += (size_t)r;
    }
    out[used] = '\0';
    close(pipefd[0]);

    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            tc_fail("cluster-up.sh %s %s: waitpid: %s", cmd, ibuf, strerror(errno));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        tc_fail("cluster-up.sh %s %s failed (%s %d): %s", cmd, ibuf,
                 WIFEXITED(status) ? "exit status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                 used ? out : "(no output)");
}

void tc_kill(int i)
{
    cluster_up("kill", i);
}

void tc_pause(int i)
{
    cluster_up("pause", i);
}

void tc_resume(int i)
{
    cluster_up("resume", i);
}

void tc_restart(int i)
{
    cluster_up("restart", i);
}

void tc_heal(void)
{
    cluster_up("heal", -1);
}

/* ------------------------------------------------------------------------ */
/* Direct commands                                                          */
/* ------------------------------------------------------------------------ */

/* Why tc_cmd() returned NULL, on stderr. Not cr_log_warn(): criterion 2.4.1
 * makes the whole run exit 1 after any warning, even when every test
 * passes, and a test may expect tc_cmd() to fail (a killed master). */
__attribute__((format(printf, 1, 2)))
static void tc_note(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("[tc] ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static redisContext *master_connect(int i)
{
    const struct timeval tv = { .tv_sec = TC_CMD_TIMEOUT_S };
    const char *password = tc_password();
    redisContext *c;

    c = redisConnectWithTimeout(TC_HOST, tc_port(i), tv);
    if (!c) {
        tc_note("tc_cmd: master %d: out of memory", i);
        return NULL;
    }
    if (c->err) {
        tc_note("tc_cmd: master %d (%s): %s", i, tc_addr(i), c->errstr);
        goto fail;
    }
    if (redisSetTimeout(c, tv) != REDIS_OK) {
        tc_note("tc_cmd: master %d (%s): cannot set timeout", i, tc_addr(i));
        goto fail;
    }
    if (password) {
        redisReply *r = redisCommand(c, "AUTH %s", password);
        int ok = r && r->type == REDIS_REPLY_STATUS;

        if (!ok)
            tc_note("tc_cmd: master %d (%s): AUTH failed: %s", i, tc_addr(i),
                        r ? r->str : c->errstr);
        freeReplyObject(r);
        if (!ok)
            goto fail;
    }
    return c;
fail:
    redisFree(c);
    return NULL;
}

static redisReply *finish(int i, redisContext *c, void *reply)
{
    if (!reply)
        tc_note("tc_cmd: master %d (%s): %s", i, tc_addr(i),
                    c->err ? c->errstr : "no reply");
    redisFree(c);
    return reply;
}

redisReply *tc_cmd(int i, const char *fmt, ...)
{
    redisContext *c = master_connect(i);
    va_list ap;
    void *reply;

    if (!c)
        return NULL;
    va_start(ap, fmt);
    reply = redisvCommand(c, fmt, ap);
    va_end(ap);
    return finish(i, c, reply);
}

redisReply *tc_cmd_argv(int i, int argc, const char **argv, const size_t *argvlen)
{
    redisContext *c = master_connect(i);

    if (!c)
        return NULL;
    return finish(i, c, redisCommandArgv(c, argc, argv, argvlen));
}

int tc_key_count(const void *key, size_t len)
{
    const char *argv[2] = { "EXISTS", key };
    const size_t argvlen[2] = { 6, len };
    int n = tc_n(), count = 0;

    for (int i = 0; i < n; i++) {
        redisReply *r = tc_cmd_argv(i, 2, argv, argvlen);

        if (r && r->type == REDIS_REPLY_INTEGER && r->integer == 1)
            count++;
        freeReplyObject(r);
    }
    return count;
}

/* ------------------------------------------------------------------------ */
/* Test plumbing                                                            */
/* ------------------------------------------------------------------------ */

const char *tc_resource(char *buf, size_t size, const char *name)
{
    static atomic_uint seq;
    char label[256];
    int len;

    if (!name) {
        const struct criterion_test *t = criterion_current_test;

        snprintf(label, sizeof(label), "%s/%s", t ? t->category : "test",
                 t ? t->name : "unknown");
        name = label;
    }
    len = snprintf(buf, size, "%s:%ld:%u", name, (long)getpid(),
                   atomic_fetch_add(&seq, 1));
    if (len < 0 || (size_t)len >= size)
        tc_fail("tc_resource: %zu bytes are too few for a resource named \"%s\"",
                 size, name);
    return buf;
}

static void on_run_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    *(int *)arg = 1;
}

int tc_run_until(struct event_base *base, volatile int *flag, int timeout_ms)
{
    struct timeval tv = {
        .tv_sec = timeout_ms / 1000,
        .tv_usec = (timeout_ms % 1000) * 1000,
    };
    struct event *timer;
    int fired = 0;

    timer = evtimer_new(base, on_run_timeout, &fired);
    if (!timer || evtimer_add(timer, &tv) != 0)
        tc_fail("tc_run_until: cannot arm a timer on the event base");
    /* EVLOOP_ONCE returns after the callbacks of one wakeup have run, so the
     * flag is seen as soon as the callback that sets it returns. */
    while (!*flag && !fired) {
        if (event_base_loop(base, EVLOOP_ONCE) < 0) {
            event_free(timer);
            tc_fail("tc_run_until: event_base_loop failed");
        }
    }
    event_free(timer);
    return *flag != 0;
}

/* ------------------------------------------------------------------------ */
/* Fake masters                                                             */
/* ------------------------------------------------------------------------ */

#define FAKE_MAX_CONNS 64

struct fake_conn {
    int fd;                     /* -1 when the slot is free */
    redisReader *reader;        /* parses the commands the client sends */
};

struct tc_fake {
    /* set before the thread starts, read-only afterwards */
    int listen_fd;
    int wake[2];                /* a byte on wake[1] stops the thread */
    char *reply;                /* NULL for a black hole */
    size_t reply_len;
    int port;
    char addr[32];
    pthread_t thread;

    /* shared */
    atomic_uint connections;
    atomic_uint commands;

    /* the thread's own, until it is joined */
    struct fake_conn conns[FAKE_MAX_CONNS];
};

static void fake_close(struct fake_conn *c)
{
    close(c->fd);
    redisReaderFree(c->reader);
    c->fd = -1;
    c->reader = NULL;
}

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

static void fake_accept(tc_fake *f)
{
    const struct timeval sndtimeo = { .tv_sec = 2 };
    int fd = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);

    if (fd < 0)
        return;
    atomic_fetch_add(&f->connections, 1);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sndtimeo, sizeof(sndtimeo));
    for (int k = 0; k < FAKE_MAX_CONNS; k++) {
        if (f->conns[k].fd < 0) {
            f->conns[k].reader = redisReaderCreate();
            if (!f->conns[k].reader)
                break;
            f->conns[k].fd = fd;
            return;
        }
    }
    close(fd);
}

static void fake_serve(tc_fake *f, struct fake_conn *c)
{
    char buf[16384];
    ssize_t r = recv(c->fd, buf, sizeof(buf), 0);

    if (r < 0 && errno == EINTR)
        return;
    if (r <= 0) {
        fake_close(c);
        return;
    }
    if (redisReaderFeed(c->reader, buf, (size_t)r) != REDIS_OK) {
        fake_close(c);
        return;
    }
    for (;;) {
        void *cmd = NULL;

        if (redisReaderGetReply(c->reader, &cmd) != REDIS_OK) {
            /* Not RESP: a black hole keeps swallowing bytes, a fake answers
             * once and hangs up (it cannot tell where commands end). */
            if (!f->reply) {
                redisReaderFree(c->reader);
                c->reader = redisReaderCreate();
                if (!c->reader)
                    fake_close(c);
                return;
            }
            tc_send_all(c->fd, f->reply, f->reply_len);
            fake_close(c);
            return;
        }
        if (!cmd)
            return;
        freeReplyObject(cmd);
        atomic_fetch_add(&f->commands, 1);
        if (f->reply && tc_send_all(c->fd, f->reply, f->reply_len) < 0) {
            fake_close(c);
            return;
        }
    }
}

static void *fake_main(void *arg)
{
    tc_fake *f = arg;
    struct pollfd pfd[2 + FAKE_MAX_CONNS];
    int slot[FAKE_MAX_CONNS];

    for (;;) {
        int n = 0, m = 0;

        pfd[n++] = (struct pollfd){ .fd = f->wake[0], .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = f->listen_fd, .events = POLLIN };
        for (int k = 0; k < FAKE_MAX_CONNS; k++) {
            if (f->conns[k].fd >= 0) {
                slot[m++] = k;
                pfd[n++] = (struct pollfd){ .fd = f->conns[k].fd, .events = POLLIN };
            }
        }
        if (poll(pfd, (nfds_t)n, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pfd[0].revents)
            break;
        for (int j = 0; j < m; j++) {
            if (pfd[2 + j].revents)
                fake_serve(f, &f->conns[slot[j]]);
        }
        if (pfd[1].revents & POLLIN)
            fake_accept(f);
    }
    return NULL;
}

static void fake_free(tc_fake *f)
{
    for (int k = 0; k < FAKE_MAX_CONNS; k++) {
        if (f->conns[k].fd >= 0)
            fake_close(&f->conns[k]);
    }
    if (f->listen_fd >= 0)
        close(f->listen_fd);
    if (f->wake[0] >= 0)
        close(f->wake[0]);
    if (f->wake[1] >= 0)
        close(f->wake[1]);
    free(f->reply);
    free(f);
}

static tc_fake *fake_new(const void *reply, size_t len, int *ret_port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t salen = sizeof(sa);
    const int one = 1;
    const char *why;
    tc_fake *f;
    int rc;

    f = calloc(1, sizeof(*f));
    if (!f)
        tc_fail("tc_fake: out of memory");
    f->listen_fd = f->wake[0] = f->wake[1] = -1;
    for (int k = 0; k < FAKE_MAX_CONNS; k++)
        f->conns[k].fd = -1;
    atomic_init(&f->connections, 0);
    atomic_init(&f->commands, 0);
    if (reply) {
        f->reply = malloc(len ? len : 1);
        why = "out of memory";
        if (!f->reply)
            goto fail;
        memcpy(f->reply, reply, len);
        f->reply_len = len;
    }

    why = "socket";
    f->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (f->listen_fd < 0)
        goto fail;
    setsockopt(f->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;    /* an ephemeral port: never one of a cluster's */
    why = "bind";
    if (bind(f->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        goto fail;
    why = "listen";
    if (listen(f->listen_fd, 64) < 0)
        goto fail;
    why = "getsockname";
    if (getsockname(f->listen_fd, (struct sockaddr *)&sa, &salen) < 0)
        goto fail;
    f->port = ntohs(sa.sin_port);
    snprintf(f->addr, sizeof(f->addr), TC_HOST ":%d", f->port);
    why = "pipe";
    if (pipe2(f->wake, O_CLOEXEC) < 0)
        goto fail;
    rc = pthread_create(&f->thread, NULL, fake_main, f);
    if (rc != 0) {
        errno = rc;
        why = "pthread_create";
        goto fail;
    }
    if (ret_port)
        *ret_port = f->port;
    return f;

fail:
    rc = errno;
    fake_free(f);
    tc_fail("tc_fake: %s: %s", why, strerror(rc));
    return NULL;
}

tc_fake *tc_fake_start(const void *reply, size_t len, int *ret_port)
{
    if (!reply)
        tc_fail("tc_fake_start: no reply given (use tc_blackhole_start)");
    return fake_new(reply, len, ret_port);
}

tc_fake *tc_blackhole_start(int *ret_port)
{
    return fake_new(NULL, 0, ret_port);
}

int tc_fake_port(const tc_fake *f)
{
    return f->port;
}

const char *tc_fake_addr(const tc_fake *f)
{
    return f->addr;
}

unsigned tc_fake_connections(const tc_fake *f)
{
    return atomic_load(&f->connections);
}

unsigned tc_fake_commands(const tc_fake *f)
{
    return atomic_load(&f->commands);
}

void tc_fake_stop(tc_fake *f)
{
    if (!f)
        return;
    while (write(f->wake[1], "x", 1) < 0 && errno == EINTR)
        ;
    pthread_join(f->thread, NULL);
    fake_free(f);
}
