/* run-guard.c - the guard: a small process that stops CMD's process group
 * when redlock-cli can no longer keep the lock for it.
 *
 * Forked before CMD, in a group of its own, it holds the read end of a pipe
 * only we write to and learns the lease's end at every extension: at our
 * death it signals CMD's group; with RUN_GUARD_MARGIN_MS left and no news it
 * stops it; at the lease's end it kills it. Why: docs/waiting.md, "`run` while CMD runs".
 */
#include "run-parts.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

enum { GUARD_WATCH = 1, GUARD_UNTIL, GUARD_LOSING, GUARD_DONE };

/* One message, far below PIPE_BUF: it arrives whole or not at all. */
struct guard_msg {
    int32_t kind;
    int32_t pgid;      /* GUARD_WATCH */
    uint64_t until_us; /* GUARD_WATCH, GUARD_UNTIL: lease end, monotonic µs */
};

struct guard_plan {
    int fd;     /* read end */
    int signal; /* the loss signal */
    uint64_t kill_after_us;
    uint64_t freeze_us; /* stop CMD's group this long before the lease ends */
    char gone[200];     /* "we died" message */
    char lapsed[200];   /* "the lease ran out" message */
};

static int guard_fd = -1; /* write end: only we hold it */
static pid_t guard_pid;
static int guard_warned;

static uint64_t mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void say(const char *msg)
{
    if (write(2, msg, strlen(msg)) < 0) {
        /* stderr is gone: nothing to tell */
    }
}

/* We are gone: the loss signal to CMD's group (and SIGCONT, in case a ^Z
 * left it stopped, so that it can act on it), then SIGKILL at the end of
 * the lease or after --kill-after, whichever comes first. Polling the
 * group is what waiting for it means here: it is not our child. */
static void __attribute__((noreturn))
stop_group(const struct guard_plan *g, pid_t pg, uint64_t until)
{
    uint64_t kill_at = mono_us() + g->kill_after_us;

    if (until != 0 && until < kill_at)
        kill_at = until;
    say(g->gone);
    kill(-pg, g->signal);
    kill(-pg, SIGCONT);
    while (mono_us() < kill_at) {
        struct timespec ts = { 0, 10000000 }; /* 10 ms */

        if (kill(-pg, 0) < 0 && errno == ESRCH)
            _exit(0);
        nanosleep(&ts, NULL);
    }
    kill(-pg, SIGKILL);
    _exit(0);
}

/* What the guard knows, from our messages. */
struct guard_state {
    pid_t pg;       /* CMD's group, once it runs */
    uint64_t until; /* lease end, monotonic µs; 0: not known */
    int frozen;     /* the guard stopped CMD's group */
    int losing;     /* we are stopping CMD ourselves: no freezing */
};

/* The lease's end came, or only the margin is left without news (see the
 * top of the file). Return: the poll timeout until the next of those, in ms. */
static int guard_deadlines(const struct guard_plan *g, struct guard_state *s)
{
    uint64_t now = mono_us(), next;

    if (s->pg <= 0 || s->until == 0)
        return -1;
    if (now >= s->until) {
        kill(-s->pg, SIGKILL);
        say(g->lapsed);
        _exit(0);
    }
    next = s->until;
    if (!s->frozen && !s->losing && s->until > g->freeze_us) {
        if (now >= s->until - g->freeze_us) {
            kill(-s->pg, SIGSTOP);
            s->frozen = 1;
        } else {
            next = s->until - g->freeze_us;
        }
    }
    return (next - now + 999) / 1000 > 60000 ? 60000 : (int)((next - now + 999) / 1000);
}

static void __attribute__((noreturn)) guard_main(const struct guard_plan *g)
{
    struct guard_state s = { 0, 0, 0, 0 };

    for (;;) {
        struct pollfd p = { .fd = g->fd, .events = POLLIN };
        struct guard_msg m;
        ssize_t n;

        if (poll(&p, 1, guard_deadlines(g, &s)) <= 0)
            continue; /* a deadline (or EINTR): look again */
        n = read(g->fd, &m, sizeof(m));
        if (n < 0 && errno == EINTR)
            continue;
        if (n == (ssize_t)sizeof(m) && m.kind == GUARD_DONE)
            _exit(0);
        if (n != (ssize_t)sizeof(m)) {
            /* End of file: we died without standing the guard down. */
            if (s.pg <= 0)
                _exit(0);
            stop_group(g, s.pg, s.until);
        }
        if (m.kind == GUARD_WATCH)
            s.pg = m.pgid;
        if (m.kind == GUARD_LOSING)
            s.losing = 1;
        if (m.until_us > s.until || m.kind == GUARD_LOSING) {
            /* News: the lease goes on, or we take over stopping CMD. */
            if (m.until_us > s.until)
                s.until = m.until_us;
            if (s.frozen)
                kill(-s.pg, SIGCONT);
            s.frozen = 0;
        }
    }
}

/* In the child: let go of everything but the pipe and stderr, and of our
 * signal handlers. */
static void __attribute__((noreturn)) guard_child(struct guard_plan *g, int wr)
{
    static const int ignored[] = { SIGINT, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE };
    static const int dfl[] = { SIGTERM, SIGCHLD, SIGCONT };
    struct sigaction sa;
    sigset_t none;
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);

    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = SIG_IGN;
    for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
        sigaction(ignored[i], &sa, NULL);
    sa.sa_handler = SIG_DFL;
    for (size_t i = 0; i < sizeof(dfl) / sizeof(dfl[0]); i++)
        sigaction(dfl[i], &sa, NULL);
    setpgid(0, 0);
    close(wr);
    /* Holding stdout open would keep a reader of our output waiting. */
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
    }
    if (g->fd > 3)
        close_range(3, (unsigned)g->fd - 1, 0);
    close_range((unsigned)g->fd + 1, ~0u, 0);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    guard_main(g);
}

int run_guard_start(const struct cli_opts *o)
{
    struct guard_plan g;
    sigset_t all, old;
    int p[2], err;
    pid_t pid;

    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    memset(&g, 0, sizeof(g));
    g.fd = p[0];
    g.signal = o->loss_signal;
    g.kill_after_us = (uint64_t)o->kill_after_ms * 1000u;
    g.freeze_us = (uint64_t)RUN_GUARD_MARGIN_MS(o) * 1000u;
    snprintf(g.gone, sizeof(g.gone),
             "%s: run: redlock-cli is gone and nobody extends the lock: "
             "stopping CMD's process group (SIG%s, SIGKILL within %u ms)\n",
             CLI_NAME, sigabbrev_np(o->loss_signal), (unsigned)o->kill_after_ms);
    snprintf(g.lapsed, sizeof(g.lapsed),
             "%s: run: the lease ran out while redlock-cli was "
             "stopped or stuck: CMD's process group got SIGKILL\n",
             CLI_NAME);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid = fork();
    if (pid == 0)
        guard_child(&g, p[1]);
    err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        errno = err;
        return -1;
    }
    guard_fd = p[1];
    guard_pid = pid;
    return 0;
}

static void guard_send(int kind, pid_t pgid, uint64_t until_us)
{
    struct guard_msg m = { kind, (int32_t)pgid, until_us };

    if (guard_fd < 0)
        return;
    if (write(guard_fd, &m, sizeof(m)) != (ssize_t)sizeof(m) && !guard_warned) {
        guard_warned = 1;
        cli_warn("warning: run: the guard process is gone (%s): if redlock-cli dies, CMD's "
                 "children may outlive the lock",
                 strerror(errno));
    }
}

void run_guard_watch(pid_t pgid, uint64_t until_us)
{
    guard_send(GUARD_WATCH, pgid, until_us);
}

void run_guard_until(uint64_t until_us)
{
    guard_send(GUARD_UNTIL, 0, until_us);
}

void run_guard_losing(void)
{
    guard_send(GUARD_LOSING, 0, 0);
}

void run_guard_done(void)
{
    if (guard_fd < 0)
        return;
    guard_send(GUARD_DONE, 0, 0);
    close(guard_fd);
    guard_fd = -1;
    while (waitpid(guard_pid, NULL, 0) < 0 && errno == EINTR)
        ;
}
