/* sysc.c - system calls per cycle, counted by the kernel.
 *
 * One perf counter per thread and kind on the syscall tracepoints, opened
 * with perf_event_open(2) on this process's own threads; without tracefs or
 * the right to trace the row says why. Why no strace, which threads count:
 * bench/RESULTS.md, "How the rows measure" (system calls per cycle).
 */
#include "bench.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const tracepoints[SYSC_KINDS] = {
    "raw_syscalls/sys_enter",  "syscalls/sys_enter_epoll_ctl",  "syscalls/sys_enter_write",
    "syscalls/sys_enter_read", "syscalls/sys_enter_epoll_wait", "syscalls/sys_enter_futex",
};
static const char *const kind_names[SYSC_KINDS] = {
    "total", "epoll_ctl", "write", "read", "epoll_wait", "futex",
};

static long tracepoint_id(const char *name)
{
    static const char *const roots[] = { "/sys/kernel/tracing/events",
                                         "/sys/kernel/debug/tracing/events" };
    char path[160];
    size_t i;

    for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
        FILE *f;
        long id = -1;

        snprintf(path, sizeof(path), "%s/%s/id", roots[i], name);
        if (!(f = fopen(path, "r")))
            continue;
        if (fscanf(f, "%ld", &id) != 1)
            id = -1;
        fclose(f);
        if (id >= 0)
            return id;
    }
    return -1;
}

static int open_counter(long id, pid_t tid)
{
    struct perf_event_attr a;

    memset(&a, 0, sizeof(a));
    a.type = PERF_TYPE_TRACEPOINT;
    a.size = sizeof(a);
    a.config = (uint64_t)id;
    a.disabled = 1;
    return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, 0);
}

static void sysc_close(struct sysc *s)
{
    int i;

    for (i = 0; i < s->n_fd; i++)
        close(s->fd[i]);
    s->n_fd = 0;
}

/* Open the SYSC_KINDS counters of thread @tid; 0, or -1 with why set. */
static int open_thread(struct sysc *s, const long *ids, pid_t tid)
{
    int k;

    if (s->n_fd + SYSC_KINDS > (int)(sizeof(s->fd) / sizeof(s->fd[0]))) {
        snprintf(s->why, sizeof(s->why), "more than %d threads",
                 (int)(sizeof(s->fd) / sizeof(s->fd[0])) / SYSC_KINDS);
        return -1;
    }
    for (k = 0; k < SYSC_KINDS; k++) {
        int fd = open_counter(ids[k], tid);

        if (fd < 0) {
            snprintf(s->why, sizeof(s->why), "perf_event_open(%s): %s", tracepoints[k],
                     strerror(errno));
            return -1;
        }
        s->fd[s->n_fd++] = fd;
    }
    return 0;
}

void sysc_start(struct sysc *s)
{
    long ids[SYSC_KINDS];
    struct dirent *de;
    DIR *d;
    int k;

    memset(s, 0, sizeof(*s));
    for (k = 0; k < SYSC_KINDS; k++) {
        if ((ids[k] = tracepoint_id(tracepoints[k])) < 0) {
            snprintf(s->why, sizeof(s->why), "tracepoint %s not found (no tracefs?)",
                     tracepoints[k]);
            return;
        }
    }
    if (!(d = opendir("/proc/self/task"))) {
        snprintf(s->why, sizeof(s->why), "/proc/self/task: %s", strerror(errno));
        return;
    }
    while ((de = readdir(d))) {
        if (de->d_name[0] != '.' && open_thread(s, ids, (pid_t)atoi(de->d_name)) < 0) {
            closedir(d);
            sysc_close(s);
            return;
        }
    }
    closedir(d);
    for (k = 0; k < s->n_fd; k++)
        ioctl(s->fd[k], PERF_EVENT_IOC_ENABLE, 0);
    s->ok = 1;
}

void sysc_stop(struct sysc *s, uint64_t cycles)
{
    int i;

    if (!s->ok)
        return;
    for (i = 0; i < s->n_fd; i++)
        ioctl(s->fd[i], PERF_EVENT_IOC_DISABLE, 0);
    for (i = 0; i < s->n_fd; i++) {
        uint64_t v = 0;

        if (read(s->fd[i], &v, sizeof(v)) != (ssize_t)sizeof(v)) {
            snprintf(s->why, sizeof(s->why), "reading a counter: %s", strerror(errno));
            s->ok = 0;
        }
        s->count[i % SYSC_KINDS] += v;
    }
    sysc_close(s);
    s->cycles = cycles;
    if (!cycles) {
        snprintf(s->why, sizeof(s->why), "no cycle completed");
        s->ok = 0;
    }
}

static double per_cycle(const struct sysc *s, int kind)
{
    uint64_t v = s->count[kind];

    if (kind == SYSC_TOTAL) {
        /* "other": the total less every kind named */
        int k;

        for (k = 1; k < SYSC_KINDS; k++)
            v -= s->count[k] < v ? s->count[k] : v;
    }
    return (double)v / (double)s->cycles;
}

/* "syscalls_per_cycle":x,"syscalls":{...}, or the reason there is none */
void sysc_json(struct result *r, const struct sysc *s)
{
    int k;

    if (!s->ok) {
        json_kv_null(&r->xj, "syscalls_per_cycle");
        json_kv_cstr(&r->xj, "syscalls_why", s->why);
        return;
    }
    json_kv_double(&r->xj, "syscalls_per_cycle", (double)s->count[SYSC_TOTAL] / (double)s->cycles,
                   2);
    json_kv_u64(&r->xj, "syscall_cycles", s->cycles);
    json_key(&r->xj, "syscalls");
    json_obj_begin(&r->xj);
    for (k = 1; k < SYSC_KINDS; k++)
        json_kv_double(&r->xj, kind_names[k], per_cycle(s, k), 2);
    json_kv_double(&r->xj, "other", per_cycle(s, SYSC_TOTAL), 2);
    json_obj_end(&r->xj);
}

void sysc_note(char *buf, size_t len, const struct sysc *s)
{
    size_t used;
    int k;

    if (!s->ok) {
        snprintf(buf, len, "syscalls not counted: %s", s->why);
        return;
    }
    used = (size_t)snprintf(buf, len, "%.1f syscalls per cycle over %llu cycles (",
                            (double)s->count[SYSC_TOTAL] / (double)s->cycles,
                            (unsigned long long)s->cycles);
    for (k = 1; k < SYSC_KINDS && used < len; k++)
        used += (size_t)snprintf(buf + used, len - used, "%s %.1f, ", kind_names[k],
                                 per_cycle(s, k));
    if (used < len)
        snprintf(buf + used, len - used, "other %.1f)", per_cycle(s, SYSC_TOTAL));
}
