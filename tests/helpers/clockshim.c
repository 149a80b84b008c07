/* clockshim.c - LD_PRELOAD: make one process's real-time clock run fast or jump.
 *
 * For the clock-fault tests. libfaketime is the tool of choice, but it cannot
 * load into Debian's redis-server: redis links jemalloc, whose start-up calls
 * clock_gettime() before libfaketime can initialise (libfaketime #130). This
 * shim avoids the clash by never calling dlsym() or malloc(): real clocks are
 * read with the clock_gettime system call directly.
 *
 * Only the real-time clock is faked (gettimeofday, time, CLOCK_REALTIME*):
 * that is the clock Redis expires keys by and reports in TIME. The file named
 * by $CLOCKSHIM_FILE holds "RATE OFFSET_MS" (e.g. "10 0": ten times as fast;
 * "1 30000": 30 s ahead); it is re-read every 20 ms, and changes apply from
 * that moment, so a test can make a running master's clock jump or speed up.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int spin;
static long long anchor_real = -1, anchor_fake; /* µs */
static double rate = 1.0;
static long long offset_us;
static long long next_read_mono;

static long long sys_us(clockid_t id)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, id, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void read_control(long long real)
{
    const char *path = getenv("CLOCKSHIM_FILE");
    if (!path)
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[64];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    char *end;
    double r = strtod(buf, &end);
    long long off = strtoll(end, NULL, 10) * 1000;
    if (!(r > 0) || r > 1000)
        return;
    /* Re-anchor so the fake clock is continuous across a rate change, and
     * steps by exactly the offset change. */
    anchor_fake = anchor_fake + (long long)((double)(real - anchor_real) * rate) +
                  (off - offset_us);
    anchor_real = real;
    rate = r;
    offset_us = off;
}

static long long fake_us(void)
{
    long long real = sys_us(CLOCK_REALTIME);
    long long mono = sys_us(CLOCK_MONOTONIC);
    while (__atomic_exchange_n(&spin, 1, __ATOMIC_ACQUIRE))
        ;
    if (anchor_real < 0) {
        anchor_real = anchor_fake = real;
    }
    if (mono >= next_read_mono) {
        next_read_mono = mono + 20000;
        read_control(real);
    }
    long long v = anchor_fake + (long long)((double)(real - anchor_real) * rate);
    __atomic_store_n(&spin, 0, __ATOMIC_RELEASE);
    return v;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    if (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE)
        return (int)syscall(SYS_clock_gettime, id, ts);
    long long v = fake_us();
    ts->tv_sec = v / 1000000;
    ts->tv_nsec = (v % 1000000) * 1000;
    return 0;
}

int gettimeofday(struct timeval *tv, void *tz)
{
    (void)tz;
    struct timeval *volatile out = tv; /* NULL is legal in practice */
    if (out) {
        long long v = fake_us();
        out->tv_sec = v / 1000000;
        out->tv_usec = v % 1000000;
    }
    return 0;
}

time_t time(time_t *t)
{
    time_t v = (time_t)(fake_us() / 1000000);
    if (t)
        *t = v;
    return v;
}
