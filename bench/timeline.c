/* timeline.c - the timeline's data: figures per 100 ms bucket and the fault
 * events, written as a TSV file and plotted with gnuplot (when installed).
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char plot_msg[700]; /* printed with the report */

const char *timeline_plot_msg(void)
{
    return plot_msg;
}

/* The load asks before each acquire: 0 while the fault thread holds it
 * off. The count goes up before the gate is read, and the fault thread
 * sets the gate before it reads the count (both sequentially consistent),
 * so once it has seen the count at 0 no acquire is in flight or starts. */
int timeline_begin(struct timeline *tl)
{
    __atomic_add_fetch(&tl->in_flight, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&tl->gated, __ATOMIC_SEQ_CST))
        return 1;
    __atomic_sub_fetch(&tl->in_flight, 1, __ATOMIC_SEQ_CST);
    return 0;
}

/* One acquire that timeline_begin() let start has completed. */
void timeline_record(struct timeline *tl, uint64_t t_us, uint64_t lat_us, int ok)
{
    int b;

    __atomic_sub_fetch(&tl->in_flight, 1, __ATOMIC_SEQ_CST);
    if (t_us < tl->t0)
        return;
    b = (int)((t_us - tl->t0) / TL_BUCKET_US);
    if (b >= tl->n_buckets)
        return;
    if (ok) {
        if (tl->heal_us && t_us > tl->heal_us && !tl->recovered_us)
            tl->recovered_us = t_us;
        tl->ok[b]++;
        hist_add(&tl->acq[b], lat_us);
    } else {
        if (tl->declared_us && t_us > tl->declared_us && !tl->recovered_us)
            tl->failed_before_grant++;
        tl->failed[b]++;
    }
}

/* The load client's log hook, at INFO: "master N (addr): connected" says
 * when it (re)connected to master N, which is what "first grant after
 * heal" depends on. On the client's loop, the load's own thread. */
void timeline_on_log(int level, const char *msg, void *arg)
{
    struct timeline *tl = arg;
    uint64_t t = now_us();
    unsigned m;
    int end = 0;
    char label[48];

    (void)level;
    if (sscanf(msg, "master %u (%*[^)]): connected%n", &m, &end) != 1 || end == 0 ||
        m >= (unsigned)config.n_masters)
        return;
    tl->connected_us[m] = t;
    if (tl->t0 && t >= tl->t0) {
        snprintf(label, sizeof(label), "connect :%d", config.port[m]);
        timeline_event(tl, t, label);
    }
}

/* Mark @label at @t_us; events may come from two threads (the fault
 * schedule and its quorum probe), hence the lock. */
void timeline_event(struct timeline *tl, uint64_t t_us, const char *label)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    int e;

    pthread_mutex_lock(&mu);
    if ((e = tl->n_events) < TL_MAX_EVENTS) {
        tl->ev_t[e] = (double)(t_us - tl->t0) / 1e6;
        snprintf(tl->ev_label[e], sizeof(tl->ev_label[e]), "%s", label);
        tl->n_events = e + 1;
    }
    pthread_mutex_unlock(&mu);
}

static int have_gnuplot(void)
{
    const char *path = getenv("PATH");
    char buf[4096], *save = NULL, *dir, exe[4200];

    if (!path)
        return 0;
    snprintf(buf, sizeof(buf), "%s", path);
    for (dir = strtok_r(buf, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        snprintf(exe, sizeof(exe), "%s/gnuplot", dir);
        if (access(exe, X_OK) == 0)
            return 1;
    }
    return 0;
}

static int run_gnuplot(const char *script)
{
    char *const argv[] = { "gnuplot", (char *)script, NULL };
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status, rc;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    register_child(pid);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    unregister_child(pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void write_data(const struct timeline *tl)
{
    char path[600];
    FILE *f;
    int i;

    snprintf(path, sizeof(path), "%s/timeline.tsv", config.out_dir);
    if (!(f = fopen(path, "w")))
        return;
    fprintf(f, "# t_s\tok_per_s\tfailed_per_s\tp50_ms\tp99_ms\tmax_ms\n");
    for (i = 0; i < tl->n_buckets; i++) {
        const struct hist *h = &tl->acq[i];
        double scale = 1e6 / TL_BUCKET_US;

        fprintf(f, "%.1f\t%.0f\t%.0f", i * (TL_BUCKET_US / 1e6), (double)tl->ok[i] * scale,
                (double)tl->failed[i] * scale);
        if (h->count)
            fprintf(f, "\t%.3f\t%.3f\t%.3f\n", (double)hist_pct(h, 0.5) / 1000.0,
                    (double)hist_pct(h, 0.99) / 1000.0, (double)h->max / 1000.0);
        else
            fprintf(f, "\tNaN\tNaN\tNaN\n");
    }
    fclose(f);
    snprintf(path, sizeof(path), "%s/timeline-events.tsv", config.out_dir);
    if ((f = fopen(path, "w"))) {
        fprintf(f, "# t_s\tevent\n");
        for (i = 0; i < tl->n_events; i++)
            fprintf(f, "%.3f\t%s\n", tl->ev_t[i], tl->ev_label[i]);
        fclose(f);
    }
}

/* One arrow per event, one label per group of events at the same time. */
static void write_events(FILE *f, const struct timeline *tl)
{
    int i, j;

    for (i = 0; i < tl->n_events; i = j) {
        char label[256];
        size_t used = 0;

        used += (size_t)snprintf(label, sizeof(label), "%s", tl->ev_label[i]);
        for (j = i + 1; j < tl->n_events && tl->ev_t[j] - tl->ev_t[i] < 0.25; j++) {
            const char *sp = strchr(tl->ev_label[j], ' ');
            size_t alen = sp ? (size_t)(sp - tl->ev_label[j]) : strlen(tl->ev_label[j]);

            if (sp && sp[1] == ':' && strncmp(tl->ev_label[j], tl->ev_label[i], alen) == 0)
                used += (size_t)snprintf(label + used, sizeof(label) - used, ",%s", sp + 1);
            else
                used += (size_t)snprintf(label + used, sizeof(label) - used, "; %s",
                                         tl->ev_label[j]);
            if (used >= sizeof(label))
                used = sizeof(label) - 1;
        }
        fprintf(f, "set arrow from %.3f, graph 0 to %.3f, graph 1 nohead lc rgb '#c00000' dt 2\n",
                tl->ev_t[i], tl->ev_t[i]);
        fprintf(f,
                "set label \"%s\" at %.3f, graph 0.98 rotate by 90 right offset -0.7,0 "
                "font ',9' textcolor rgb '#c00000'\n",
                label, tl->ev_t[i]);
    }
}

/* The gnuplot script: an SVG, and a PNG where gnuplot has cairo. */
static int write_script(const struct timeline *tl, const char *gp)
{
    double T = tl->n_buckets * (TL_BUCKET_US / 1e6);
    FILE *f;
    int i;

    if (!(f = fopen(gp, "w")))
        return -1;
    fprintf(f,
            "# written by redlock-bench; paths are relative to where it ran\n"
            "set datafile separator '\\t'\n"
            "set xrange [0:%.1f]\nset grid\nset key outside right top\n"
            "set xlabel 'time (s)'\n",
            T);
    write_events(f, tl);
    for (i = 0; i < 2; i++) {
        if (i == 0)
            fprintf(f,
                    "set terminal svg size 1200,760 dynamic font 'sans,11'\n"
                    "set output '%s/timeline.svg'\n",
                    config.out_dir);
        else
            fprintf(f,
                    "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
                    "set terminal pngcairo size 1200,760 font 'sans,10'\n"
                    "set output '%s/timeline.png'\n",
                    config.out_dir);
        fprintf(f,
                "set multiplot layout 2,1 title 'redlock-bench timeline: %d masters, %d cycles "
                "in flight, node timeout %u ms, 100 ms buckets'\n"
                "set ylabel 'acquire latency (ms)'\nset logscale y\n"
                "plot '%s/timeline.tsv' using 1:4 with steps lw 2 title 'p50', "
                "'' using 1:5 with steps lw 2 title 'p99', '' using 1:6 with steps title 'max'\n"
                "unset logscale y\nset ylabel 'acquires per second'\n"
                "plot '%s/timeline.tsv' using 1:2 with steps lw 2 lc rgb '#008000' title 'ok/s', "
                "'' using 1:3 with steps lw 2 lc rgb '#c00000' title 'failed/s'\n"
                "unset multiplot\n",
                config.n_masters, 4, config.node_timeout_ms, config.out_dir, config.out_dir);
        if (i == 1)
            fprintf(f, "}\n");
    }
    fclose(f);
    return 0;
}

void report_timeline(const struct timeline *tl)
{
    char gp[600];

    if (!config.out_dir || mkdir_p(config.out_dir) < 0) {
        fprintf(stderr, "redlock-bench: cannot create --out %s\n", config.out_dir);
        return;
    }
    write_data(tl);
    snprintf(gp, sizeof(gp), "%s/timeline.gp", config.out_dir);
    if (write_script(tl, gp) < 0)
        return;
    if (!have_gnuplot())
        snprintf(plot_msg, sizeof(plot_msg),
                 "plot: gnuplot is not installed, so no picture; "
                 "timeline data in %s/timeline.tsv",
                 config.out_dir);
    else if (run_gnuplot(gp) != 0)
        snprintf(plot_msg, sizeof(plot_msg),
                 "plot: gnuplot %s failed; timeline data in "
                 "%s/timeline.tsv",
                 gp, config.out_dir);
    else
        snprintf(plot_msg, sizeof(plot_msg),
                 "plot: %s/timeline.svg (fault events marked; "
                 "data in %s/timeline.tsv)",
                 config.out_dir, config.out_dir);
}
