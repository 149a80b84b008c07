/* util.c - clocks, sleeping, signals, the children we must kill on the way
 * out, a seeded random source, and the progress line: the small helpers
 * every scenario uses. Calls nothing in redlock-bench but state.c.
 */
#include "bench.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_flag;
static volatile sig_atomic_t n_children;
static volatile pid_t children[256];
static uint64_t rand_state;
static int progress_shown;
static uint64_t progress_last;

uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t cpu_us(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

void sleep_us(uint64_t us)
{
    struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000 };

    while (nanosleep(&ts, &ts) == -1 && errno == EINTR && !stop_flag)
        ;
}

int stop_requested(void)
{
    return stop_flag != 0;
}

void bench_seed(uint64_t seed)
{
    rand_state = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
}

uint64_t bench_rand(void)
{
    /* xorshift64*: reproducible fault targets for a given --seed */
    rand_state ^= rand_state >> 12;
    rand_state ^= rand_state << 25;
    rand_state ^= rand_state >> 27;
    return rand_state * 2685821657736338717ull;
}

int mkdir_p(const char *dir)
{
    char buf[512];
    char *p;

    snprintf(buf, sizeof(buf), "%s", dir);
    for (p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    if (mkdir(buf, 0755) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Children and signals                                                     */
/* ------------------------------------------------------------------------ */

void register_child(int pid)
{
    if (n_children < (int)(sizeof(children) / sizeof(children[0])))
        children[n_children++] = pid;
}

void unregister_child(int pid)
{
    int i;

    for (i = 0; i < n_children; i++)
        if (children[i] == pid)
            children[i] = 0;
}

void bench_in_child(void)
{
    n_children = 0;
    signal(SIGALRM, SIG_DFL);
}

static void kill_children(void)
{
    int i;

    for (i = 0; i < n_children; i++)
        if (children[i] > 0)
            kill(children[i], SIGKILL);
}

static void on_stop_signal(int sig)
{
    (void)sig;
    if (stop_flag) {
        /* second ^C: no more patience */
        kill_children();
        _exit(130);
    }
    stop_flag = 1;
}

static void on_watchdog(int sig)
{
    static const char msg[] = "\nredlock-bench: --max-time reached, giving up "
                              "(masters may still be paused or down: heal them)\n";
    (void)sig;
    kill_children();
    if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
        /* nothing left to do */
    }
    _exit(3);
}

void bench_signals_install(unsigned max_time_s)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_watchdog;
    sigaction(SIGALRM, &sa, NULL);
    /* A killed master makes writes on its socket fail; that is data, not a
     * reason to die. */
    signal(SIGPIPE, SIG_IGN);
    alarm(max_time_s);
}

/* ------------------------------------------------------------------------ */
/* Progress line (terminal only)                                            */
/* ------------------------------------------------------------------------ */

void progress(const char *label, double elapsed_s, double total_s, uint64_t ok, uint64_t failed)
{
    uint64_t t = now_us();

    if (!config.tty || t - progress_last < 200000u)
        return;
    progress_last = t;
    if (elapsed_s > total_s)
        elapsed_s = total_s;
    printf("\r\033[K  [%d/%d] %-20s %5.1f / %.1f s   ok %llu", config.step, config.n_steps, label,
           elapsed_s, total_s, (unsigned long long)ok);
    if (failed)
        printf("   failed %llu", (unsigned long long)failed);
    fflush(stdout);
    progress_shown = 1;
}

void progress_clear(void)
{
    if (progress_shown) {
        printf("\r\033[K");
        fflush(stdout);
        progress_shown = 0;
    }
}
