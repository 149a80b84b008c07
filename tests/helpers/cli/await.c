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

#include "cluster.h"

/* Wait until CMD (started by `run`) writes its pid into the FIFO. */
pid_t read_pid_from_fifo(const char *fifo)
{
    char buf[32] = {0};
    int fd = open(fifo, O_RDONLY);   /* blocks until CMD opens it */
    ssize_t n;

    cr_assert(fd >= 0, "open %s: %s", fifo, strerror(errno));
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    cr_assert(n > 0, "nothing read from the FIFO");
    return (pid_t)atol(buf);
}

int process_gone(pid_t pid)
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
void read_line_from_fifo(const char *fifo, char *buf, size_t size)
{
    int fd = open(fifo, O_RDONLY);
    ssize_t n;

    cr_assert(fd >= 0, "open %s: %s", fifo, strerror(errno));
    n = read(fd, buf, size - 1);
    close(fd);
    cr_assert(n > 0, "nothing read from the FIFO");
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}



/* Polling is how these wait: the events are in another process (its
 * output, its state in /proc, what a master saw), with nothing to block
 * on. Each looks every 5 ms until its deadline. */
static void pause_5ms(void)
{
    struct timespec ts = {0, 5000000};

    nanosleep(&ts, NULL);
}

char *await_file_contains(const char *path, const char *needle, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;

    for (;;) {
        char *s = slurp(path);

        if (strstr(s, needle) != NULL)
            return s;
        if (now_ms() >= deadline)
            cr_assert_fail("'%s' did not appear in %s within %d ms: %s", needle, path,
                           timeout_ms, s);
        free(s);
        pause_5ms();
    }
}

char proc_state(pid_t pid)
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

void await_proc_state(pid_t pid, char state, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
    char now;

    while ((now = proc_state(pid)) != state) {
        if (now_ms() >= deadline)
            cr_assert_fail("process %ld is in state '%c', not '%c', after %d ms", (long)pid,
                           now ? now : '-', state, timeout_ms);
        pause_5ms();
    }
}

void await_gone(pid_t pid, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;

    while (!process_gone(pid)) {
        if (now_ms() >= deadline)
            cr_assert_fail("process %ld still runs after %d ms (state '%c')", (long)pid,
                           timeout_ms, proc_state(pid));
        pause_5ms();
    }
}

/* The local ports of @pid's TCP sockets: its socket inodes from
 * /proc/PID/fd, their ports from /proc/PID/net/tcp. */
static int proc_ports(pid_t pid, int *ports, int max)
{
    unsigned long inodes[64];
    int n_inodes = 0, n = 0;
    char path[64], line[512];
    struct dirent *e;
    DIR *d;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
    d = opendir(path);
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL && n_inodes < 64) {
        char link[PATH_MAX], target[64];
        ssize_t len;

        snprintf(link, sizeof(link), "%s/%s", path, e->d_name);
        len = readlink(link, target, sizeof(target) - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        if (sscanf(target, "socket:[%lu]", &inodes[n_inodes]) == 1)
            n_inodes++;
    }
    closedir(d);
    snprintf(path, sizeof(path), "/proc/%ld/net/tcp", (long)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL && n < max) {
        unsigned port;
        unsigned long inode;

        if (sscanf(line, " %*d: %*x:%x %*x:%*x %*x %*x:%*x %*x:%*x %*x %*u %*u %lu", &port,
                   &inode) != 2)
            continue;
        for (int i = 0; i < n_inodes; i++)
            if (inodes[i] == inode)
                ports[n++] = (int)port;
    }
    fclose(f);
    return n;
}

/* Has one of @ports sent @cmd last, in master @master's CLIENT LIST? */
static int sent_last(int master, const int *ports, int n, const char *cmd)
{
    redisReply *r = tc_cmd(master, "CLIENT LIST");
    char want[64];
    int found = 0;

    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        if (r != NULL)
            freeReplyObject(r);
        return 0;
    }
    snprintf(want, sizeof(want), " cmd=%s ", cmd);
    for (char *l = r->str; l != NULL && *l && !found;
         l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        size_t len = strcspn(l, "\n");

        for (int i = 0; i < n && !found; i++) {
            char addr[48];
            char *a;

            snprintf(addr, sizeof(addr), "addr=127.0.0.1:%d ", ports[i]);
            a = strstr(l, addr);
            if (a != NULL && a < l + len) {
                char *c = strstr(l, want);

                found = c != NULL && c < l + len;
            }
        }
    }
    freeReplyObject(r);
    return found;
}

void await_command_sent(pid_t pid, int master, const char *cmd, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;

    for (;;) {
        int ports[64];
        int n = proc_ports(pid, ports, 64);

        if (n > 0 && sent_last(master, ports, n, cmd))
            return;
        if (now_ms() >= deadline)
            cr_assert_fail("process %ld sent no %s to master %d within %d ms", (long)pid, cmd,
                           master, timeout_ms);
        pause_5ms();
    }
}

void await_subscribed(const char *channel, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;

    for (int i = 0; i < tc_n();) {
        redisReply *r = tc_cmd(i, "PUBSUB NUMSUB %s", channel);
        long long subs = 0;

        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == REDIS_REPLY_INTEGER)
            subs = r->element[1]->integer;
        if (r != NULL)
            freeReplyObject(r);
        if (subs > 0) {
            i++;
            continue;
        }
        if (now_ms() >= deadline)
            cr_assert_fail("nobody subscribed to '%s' on master %d within %d ms", channel, i,
                           timeout_ms);
        pause_5ms();
    }
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

/* Members of process group @pgid, and how many of them are stopped. */
static int group_count(pid_t pgid, int *stopped)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;

    *stopped = 0;
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);

        if (*end != '\0' || pid <= 0 || proc_pgrp(pid) != (long)pgid)
            continue;
        /* A zombie has done all it will do: not a member that runs. */
        if (proc_state((pid_t)pid) == 'Z')
            continue;
        n++;
        *stopped += proc_state((pid_t)pid) == 'T';
    }
    closedir(d);
    return n;
}

void await_group_stopped(pid_t pgid, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
    int most = 0, most_stopped = 0;

    for (;;) {
        int stopped, n = group_count(pgid, &stopped);

        if (n > 0 && stopped == n)
            return;
        most = n > most ? n : most;
        most_stopped = stopped > most_stopped ? stopped : most_stopped;
        if (now_ms() >= deadline)
            cr_assert_fail("process group %ld: %d of %d members stopped after %d ms (at most "
                           "%d members, %d stopped at once)", (long)pgid, stopped, n, timeout_ms,
                           most, most_stopped);
        pause_5ms();
    }
}

int group_alive(pid_t pgid)
{
    int stopped;

    return group_count(pgid, &stopped) > 0;
}

void await_key_gone(const char *key, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;

    while (tc_key_count(key, strlen(key)) > 0) {
        if (now_ms() >= deadline)
            cr_assert_fail("'%s' is still on %d masters after %d ms", key,
                           tc_key_count(key, strlen(key)), timeout_ms);
        pause_5ms();
    }
}

long long realtime_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long long last_stamp(const char *path)
{
    char *s = slurp(path), *l, *last = NULL;
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

void await_file_grows(const char *path, long long size, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;

    while (file_size(path) <= size) {
        if (now_ms() >= deadline)
            cr_assert_fail("%s did not grow past %lld bytes within %d ms", path, size,
                           timeout_ms);
        pause_5ms();
    }
}
