/* child.c - a lock holder in a forked process (see child.h). */
#include "child.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "core.h"

pid_t tc_child_pid = -1;

int tc_child_start(void (*fn)(void *arg, int fd), void *arg)
{
    int fds[2];

    cr_assert(pipe(fds) == 0, "pipe: %s", strerror(errno));
    tc_child_pid = fork();
    cr_assert(tc_child_pid >= 0, "fork: %s", strerror(errno));
    if (tc_child_pid == 0) {
        close(fds[0]);
        fn(arg, fds[1]);
        _exit(0);
    }
    close(fds[1]);
    return fds[0];
}

static void vtell(int fd, const char *fmt, va_list ap)
{
    char line[512];
    int n = vsnprintf(line, sizeof(line), fmt, ap);

    if (n > 0 && write(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
        _exit(3);
}

void tc_child_tell(int fd, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vtell(fd, fmt, ap);
    va_end(ap);
}

void tc_child_fail(int fd, const char *fmt, ...)
{
    char why[480];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    tc_child_tell(fd, "ERR %s\n", why);
    _exit(1);
}

void tc_child_hear(int fd, char *line, size_t size, int ms)
{
    size_t used = 0;

    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int n = poll(&p, 1, ms);
        char ch;

        cr_assert(n > 0, "the holder process said nothing within %d ms", ms);
        n = (int)read(fd, &ch, 1);
        cr_assert(n == 1, "the holder process went away without a word");
        if (ch == '\n')
            break;
        if (used + 1 < size)
            line[used++] = ch;
    }
    line[used] = '\0';
    cr_assert(strncmp(line, "ERR ", 4) != 0, "holder process: %s", line + 4);
}

void tc_child_reap(void)
{
    if (tc_child_pid > 0) {
        kill(tc_child_pid, SIGKILL);
        waitpid(tc_child_pid, NULL, 0);
        tc_child_pid = -1;
    }
}

redlock_client *tc_child_client(unsigned retries, char *why, size_t size)
{
    redlock_config cfg;

    tc_config(&cfg);
    cfg.node_timeout_ms = 250;
    cfg.retry_count = retries;
    cfg.retry_delay_ms = 20;
    cfg.retry_jitter_ms = 10;
    return tc_client_try(&cfg, -1, why, size);
}

void tc_child_acquire(int fd, const struct tc_child_args *a, uint32_t ttl_ms,
                      struct tc_child_holder *ret)
{
    size_t len = strlen(a->res);
    TC_OUTCOME(out);
    redlock_error e;
    char why[320];
    int rc;

    memset(ret, 0, sizeof(*ret));
    ret->h = tc_hist_open(a->hpath);
    if (!ret->h)
        tc_child_fail(fd, "tc_hist_open: %s", strerror(errno));
    ret->c = tc_child_client(5, why, sizeof(why));
    if (!ret->c)
        tc_child_fail(fd, "%s", why);
    ret->invoke_us = tc_now_us();
    rc = redlock_acquire(ret->c, a->res, len, ttl_ms, &ret->l, out, &e);
    ret->complete_us = tc_now_us();
    tc_hist_acquire(ret->h, "A", a->res, len, ttl_ms, ret->invoke_us, rc, ret->l, out);
    if (rc != 0)
        tc_child_fail(fd, "acquire: %s", e.msg);
}
