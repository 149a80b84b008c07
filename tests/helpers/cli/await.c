/* await.c - waiting for what redlock-cli (or the CMD it runs) does: a
 * line in a FIFO or a file, a process state, a command a master received,
 * a subscriber. Instead of sleeping for a guess, each waits for the event
 * itself, with a deadline that fails the test (see cli.h).
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "cluster.h"

/* Polling is how these wait: the events are in another process (its
 * output, its state in /proc, what a master saw), with nothing to block
 * on. Each looks again every TC_POLL_MS (tc_poll_pause(), TC_AWAIT(): the
 * tests' one waiting helper, await.h) until its deadline. */

/* What CMD writes into @fifo (a line), within FIFO_WAIT_MS. Opened
 * non-blocking and polled, as the awaits below: a blocking open would wait
 * for ever if redlock-cli died before CMD ran, and a test that hangs until
 * criterion kills it leaves its private masters running. */
#define FIFO_WAIT_MS 20000

static ssize_t fifo_read(const char *fifo, char *buf, size_t size)
{
    uint64_t deadline = tc_now_us() + 1000u * FIFO_WAIT_MS;
    int fd = open(fifo, O_RDONLY | O_NONBLOCK);
    ssize_t n;

    cr_assert(fd >= 0, "open %s: %s", fifo, strerror(errno));
    /* No writer yet reads as an end: look again until one has written. */
    while ((n = read(fd, buf, size - 1)) <= 0) {
        cr_assert(n == 0 || errno == EAGAIN, "read %s: %s", fifo, strerror(errno));
        if (!tc_poll_pause(deadline)) {
            close(fd);
            cr_assert_fail("nothing written into %s within %d ms", fifo, FIFO_WAIT_MS);
        }
    }
    close(fd);
    buf[n] = '\0';
    return n;
}

/* Wait until CMD (started by `run`) writes its pid into the FIFO. */
pid_t tcli_read_pid_from_fifo(const char *fifo)
{
    char buf[32] = { 0 };

    fifo_read(fifo, buf, sizeof(buf));
    return (pid_t)atol(buf);
}

int tcli_process_gone(pid_t pid)
{
    char path[64], state = 0;
    FILE *f;

    if (kill(pid, 0) < 0 && errno == ESRCH)
        return 1;
    /* A zombie re-parented to a lazy init is gone for our purposes. */
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 1;
    if (fscanf(f, "%*d %*s %c", &state) != 1)
        state = 0;
    fclose(f);
    return state == 'Z';
}

/* A line CMD (started by `run`) writes into the FIFO. */
void tcli_read_line_from_fifo(const char *fifo, char *buf, size_t size)
{
    fifo_read(fifo, buf, size);
    buf[strcspn(buf, "\n")] = '\0';
}

char *tcli_await_file_contains(const char *path, const char *needle, int timeout_ms)
{
    uint64_t deadline = tc_now_us() + 1000u * (uint64_t)timeout_ms;

    for (;;) {
        char *s = tcli_slurp(path);

        if (strstr(s, needle) != NULL)
            return s;
        if (!tc_poll_pause(deadline))
            cr_assert_fail("'%s' did not appear in %s within %d ms: %s", needle, path, timeout_ms,
                           s);
        free(s);
    }
}

char tcli_proc_state(pid_t pid)
{
    char path[64], state = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    /* "pid (comm) S ...": comm may hold spaces and parentheses. */
    {
        char buf[512];
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        char *rp;

        buf[n] = '\0';
        rp = strrchr(buf, ')');
        if (rp != NULL && rp[1] == ' ')
            state = rp[2];
    }
    fclose(f);
    return state;
}

void tcli_await_proc_state(pid_t pid, char state, int timeout_ms)
{
    char now;

    if (!TC_AWAIT((now = tcli_proc_state(pid)) == state, timeout_ms))
        cr_assert_fail("process %ld is in state '%c', not '%c', after %d ms", (long)pid,
                       now ? now : '-', state, timeout_ms);
}

void tcli_await_gone(pid_t pid, int timeout_ms)
{
    if (!TC_AWAIT(tcli_process_gone(pid), timeout_ms))
        cr_assert_fail("process %ld still runs after %d ms (state '%c')", (long)pid, timeout_ms,
                       tcli_proc_state(pid));
}

struct tcli_monitor {
    redisContext *c;
};

struct tcli_monitor *tcli_monitor_start(int master)
{
    struct timeval tv = { 2, 0 };
    struct tcli_monitor *m = calloc(1, sizeof(*m));
    redisReply *r;

    cr_assert(m != NULL);
    m->c = redisConnectWithTimeout("127.0.0.1", tc_port(master), tv);
    cr_assert(m->c != NULL && m->c->err == 0, "MONITOR: cannot connect to master %d", master);
    if (tc_password() != NULL) {
        r = redisCommand(m->c, "AUTH %s", tc_password());
        cr_assert(r != NULL && r->type != REDIS_REPLY_ERROR, "MONITOR: AUTH failed");
        freeReplyObject(r);
    }
    r = redisCommand(m->c, "MONITOR");
    cr_assert(r != NULL && r->type == REDIS_REPLY_STATUS, "MONITOR refused");
    freeReplyObject(r);
    return m;
}

void tcli_monitor_await(struct tcli_monitor *m, const char *needle, int timeout_ms)
{
    uint64_t deadline = tc_now_us() + 1000u * (uint64_t)timeout_ms;

    for (;;) {
        uint64_t now = tc_now_us();
        struct timeval tv;
        redisReply *r = NULL;
        int found;

        cr_assert(now < deadline, "MONITOR: no '%s' within %d ms", needle, timeout_ms);
        tv.tv_sec = (time_t)((deadline - now) / 1000000u);
        tv.tv_usec = (suseconds_t)((deadline - now) % 1000000u);
        redisSetTimeout(m->c, tv);
        cr_assert(redisGetReply(m->c, (void **)&r) == REDIS_OK && r != NULL,
                  "MONITOR: no '%s' within %d ms (%s)", needle, timeout_ms, m->c->errstr);
        found = r->type == REDIS_REPLY_STATUS && strstr(r->str, needle) != NULL;
        freeReplyObject(r);
        if (found)
            return;
    }
}

void tcli_monitor_stop(struct tcli_monitor *m)
{
    redisFree(m->c);
    free(m);
}

void tcli_await_waiting(const char *res, int timeout_ms)
{
    uint64_t deadline = tc_now_us() + 1000u * (uint64_t)timeout_ms;
    size_t len = strlen(res);
    char *key = malloc(len + 2);

    cr_assert(key != NULL);
    /* The library's queue of waiters for @res: a sorted set "res\0q". */
    memcpy(key, res, len);
    memcpy(key + len, "\0q", 2);
    for (int i = 0; i < tc_n();) {
        redisReply *r = tc_cmd(i, "ZCARD %b", key, len + 2);
        long long n = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;

        if (r != NULL)
            freeReplyObject(r);
        if (n > 0) {
            i++;
            continue;
        }
        if (!tc_poll_pause(deadline)) {
            free(key);
            cr_assert_fail("nobody waits for '%s' on master %d within %d ms", res, i, timeout_ms);
        }
    }
    free(key);
}

/* The process group of @pid (field 5 of /proc/PID/stat), or -1. */
static long proc_pgrp(long pid)
{
    char path[64], buf[512], *rp;
    long pgrp = -1;
    size_t n;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    f = fopen(path, "r");
    if (f == NULL)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    rp = strrchr(buf, ')');
    if (rp == NULL || sscanf(rp + 2, "%*c %*d %ld", &pgrp) != 1)
        return -1;
    return pgrp;
}

/* A shell that forked a command with vfork() (dash does) waits, in state
 * D, until the child execs: if the child is stopped first, so is the
 * parent, in effect. */
static int vfork_waiting(pid_t pid)
{
    char path[64], wchan[64] = "";
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%ld/wchan", (long)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    if (fgets(wchan, sizeof(wchan), f) == NULL)
        wchan[0] = '\0';
    fclose(f);
    /* Where the kernel inlines the wait, it shows as kernel_clone. */
    return strcmp(wchan, "wait_for_vfork_done") == 0 || strcmp(wchan, "kernel_clone") == 0;
}

/* Members of process group @pgid, and how many of them are stopped; a
 * description of them ("pid:state ...") into @desc, if not NULL. */
static int group_count(pid_t pgid, int *stopped, char *desc, size_t size)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    size_t used = 0;
    int n = 0;

    *stopped = 0;
    if (desc != NULL && size > 0)
        desc[0] = '\0';
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        char st;

        if (*end != '\0' || pid <= 0 || proc_pgrp(pid) != (long)pgid)
            continue;
        /* A zombie has done all it will do: not a member that runs. */
        st = tcli_proc_state((pid_t)pid);
        if (st == 'Z' || st == 0)
            continue;
        n++;
        *stopped += st == 'T' || (st == 'D' && vfork_waiting((pid_t)pid));
        if (desc != NULL && used < size)
            used += (size_t)snprintf(desc + used, size - used, "%ld:%c ", pid, st);
    }
    closedir(d);
    return n;
}

void tcli_await_group_stopped(pid_t pgid, int timeout_ms)
{
    uint64_t deadline = tc_now_us() + 1000u * (uint64_t)timeout_ms;
    char seen[256] = "", now[256];

    for (;;) {
        int stopped, n = group_count(pgid, &stopped, now, sizeof(now));

        if (n > 0 && stopped == n)
            return;
        if (n > 0)
            memcpy(seen, now, sizeof(seen));
        if (!tc_poll_pause(deadline))
            cr_assert_fail("process group %ld: %d of %d members stopped after %d ms (last "
                           "seen: %s)",
                           (long)pgid, stopped, n, timeout_ms, seen);
    }
}

int tcli_group_alive(pid_t pgid)
{
    int stopped;

    return group_count(pgid, &stopped, NULL, 0) > 0;
}

int tcli_group_running(pid_t pgid)
{
    int stopped, n = group_count(pgid, &stopped, NULL, 0);

    return n - stopped;
}

void tcli_await_key_gone(const char *key, int timeout_ms)
{
    if (!TC_AWAIT(tc_key_count(key, strlen(key)) == 0, timeout_ms))
        cr_assert_fail("'%s' is still on %d masters after %d ms", key,
                       tc_key_count(key, strlen(key)), timeout_ms);
}

void tcli_await_released(const char *key, int timeout_ms)
{
    enum { MAX_MASTERS = 64 };
    /* Per master, while it has the key: the earliest time (tc_now_us())
     * the key could lapse by itself, its PTTL from before it was asked,
     * less 2 ms for the server's rounding; 0 while it has none. */
    uint64_t lapse_us[MAX_MASTERS] = { 0 };
    uint64_t deadline_us = tc_now_us() + 1000u * (uint64_t)timeout_ms;
    int n = tc_n(), left;

    cr_assert(n <= MAX_MASTERS);
    do {
        left = 0;
        for (int i = 0; i < n; i++) {
            uint64_t asked_us = tc_now_us();
            long long pttl = tcli_master_pttl(i, key);

            if (pttl >= 0) {
                uint64_t at = asked_us + 1000u * (uint64_t)pttl;

                lapse_us[i] = at > 2000u ? at - 2000u : 1;
                left++;
            } else if (pttl == -1) {
                lapse_us[i] = UINT64_MAX; /* no ttl: only a delete ends it */
                left++;
            } else {
                if (lapse_us[i] != 0 && tc_now_us() >= lapse_us[i])
                    cr_assert_fail("'%s' on master %d went when its ttl ran out: no release "
                                   "reached it",
                                   key, i);
                lapse_us[i] = 0;
            }
        }
    } while (left > 0 && tc_poll_pause(deadline_us));
    if (left > 0)
        cr_assert_fail("'%s' is still on %d masters after %d ms", key, left, timeout_ms);
}

void tcli_await_private_key(int i, const char *key, int present, int timeout_ms)
{
    long long pttl;

    if (!TC_AWAIT(present ? (pttl = tcli_private_pttl(i, key)) >= -1
                          : (pttl = tcli_private_pttl(i, key)) == -2,
                  timeout_ms))
        cr_assert_fail("'%s' on private master %d: PTTL %lld after %d ms, expected it %s", key, i,
                       pttl, timeout_ms, present ? "there" : "gone");
}

long long tcli_realtime_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long long tcli_last_stamp(const char *path)
{
    char *s = tcli_slurp(path), *l, *last = NULL;
    long long v;

    for (l = s; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
        if (*l >= '0' && *l <= '9')
            last = l;
    v = last != NULL ? strtoll(last, NULL, 10) : 0;
    free(s);
    return v;
}

static long long file_size(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

void tcli_await_file_grows(const char *path, long long size, int timeout_ms)
{
    if (!TC_AWAIT(file_size(path) > size, timeout_ms))
        cr_assert_fail("%s did not grow past %lld bytes within %d ms", path, size, timeout_ms);
}
