/* contend.c - K separate client processes fighting over one resource.
 *
 * Each child runs its own blocking client and logs, for every lock it gets,
 * the window [acquire returned, min(release called, validity end)) on
 * CLOCK_MONOTONIC, and when its release returned. That clock is system-wide
 * on Linux, so windows from different processes are comparable: the parent
 * merges them and counts every window that starts before another process's
 * window has ended. That count is the safety check; the rest is speed:
 * handoffs/s, wait percentiles, and the handoff latency - from a holder's
 * release returning to the next holder's acquire returning, in another
 * process - which is what waiting without polling (pub/sub) is for.
 * Children write into one MAP_SHARED region, one slice each.
 */
#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct window {
    uint64_t start;                   /* µs, monotonic: acquire returned */
    uint64_t end;                     /* µs: release called, or validity end */
    uint64_t rel_done;                /* µs: release returned */
};

struct child_out {
    volatile int ready;               /* connected; 1 ok, -1 failed */
    volatile uint64_t ok_now;         /* for the progress line */
    uint64_t restarts_seen;           /* REDLOCK_EVENT_RESTART, from the I/O thread */
    char errmsg[200];
    uint64_t ops, ok, failed, rel_failed, cpu_us, n_win;
    uint64_t errs[BENCH_NERR];
    struct hist acq, rel, fail;
};

struct shared {
    volatile uint64_t t_start;        /* 0 until the parent says go */
    volatile uint64_t t_end;
    size_t slice;                     /* bytes per child */
    size_t cap;                       /* windows per child */
};

static struct child_out *child_at(struct shared *sh, int i)
{
    return (struct child_out *)((char *)sh + 4096 + (size_t)i * sh->slice);
}

static struct window *child_windows(struct child_out *co)
{
    return (struct window *)((char *)co + ((sizeof(*co) + 63) & ~(size_t)63));
}

/* The library's event hook, on the client's I/O thread: count the master
 * restarts this contender saw (what the restart guard acts on). */
static void child_on_event(int master, int event, const char *msg, void *arg)
{
    struct child_out *co = arg;

    (void)master;
    (void)msg;
    if (event == REDLOCK_EVENT_RESTART)
        __atomic_add_fetch(&co->restarts_seen, 1, __ATOMIC_RELAXED);
}

static void child_main(struct shared *sh, int idx, const struct contend_opts *o, const char *res)
{
    struct child_out *co = child_at(sh, idx);
    struct window *w = child_windows(co);
    redlock_config cfg;
    redlock_client *c = NULL;
    redlock_error err;
    redlock_status st;
    uint64_t deadline, cpu0, t_end;
    size_t reslen = strlen(res);
    int rc;

    bench_in_child();
    alarm((unsigned)(o->duration_s + 60));
    hist_init(&co->acq);
    hist_init(&co->rel);
    hist_init(&co->fail);
    bench_config_fill(&cfg, o->retry_count);
    cfg.retry_delay_ms = o->retry_delay_ms;
    cfg.retry_jitter_ms = o->retry_jitter_ms;
    if (o->pubsub_off)
        cfg.pubsub_wait = 0;
    if (o->reconnect_max_ms)
        cfg.reconnect_max_ms = o->reconnect_max_ms;
    if (o->restart_guard_off)
        cfg.restart_guard = 0;
    cfg.event_fn = child_on_event;
    cfg.event_arg = co;
    memset(&err, 0, sizeof(err));
    rc = redlock_client_new(&cfg, NULL, &c, &err);
    if (rc != 0) {
        snprintf(co->errmsg, sizeof(co->errmsg), "redlock_client_new: %s: %.150s",
                 redlock_err_name(rc), err.msg);
        co->ready = -1;
        _exit(1);
    }
    deadline = now_us() + 5000000u;
    for (;;) {
        memset(&st, 0, sizeof(st));
        if (redlock_ping(c, &st, NULL) == 0 && st.n_answered == (uint32_t)config.n_masters)
            break;
        if (now_us() > deadline || stop_requested()) {
            snprintf(co->errmsg, sizeof(co->errmsg), "not every master answered PING in 5 s");
            co->ready = -1;
            _exit(1);
        }
        sleep_us(20000);
    }
    co->ready = 1;
    while (sh->t_start == 0 && !stop_requested())
        sleep_us(1000);
    if (now_us() < sh->t_start)
        sleep_us(sh->t_start - now_us());
    t_end = sh->t_end;
    cpu0 = cpu_us();

    while (now_us() < t_end && co->n_win < sh->cap && !stop_requested()) {
        redlock_lock *lock = NULL;
        uint64_t t0 = now_us(), t1, t2, vend;
        int64_t v;

        rc = redlock_acquire(c, res, reslen, o->ttl_ms, &lock, NULL, NULL);
        t1 = now_us();
        co->ops++;
        if (rc != 0) {
            co->failed++;
            hist_add(&co->fail, t1 - t0);
            co->errs[-rc > 0 && -rc < BENCH_NERR ? -rc : BENCH_NERR - 1]++;
            continue;
        }
        /* The application may use the lock from now until the validity the
         * library granted runs out, or until it releases: that is the window
         * no other process may overlap. */
        v = redlock_lock_validity_ms(lock);
        vend = t1 + (v > 0 ? (uint64_t)v * 1000u : 0);
        if (o->hold_us)
            sleep_us(o->hold_us);
        t2 = now_us();
        w[co->n_win].start = t1;
        w[co->n_win].end = t2 < vend ? t2 : vend;
        co->n_win++;
        co->ok++;
        co->ok_now = co->ok;
        hist_add(&co->acq, t1 - t0);
        rc = redlock_release(c, lock, NULL, NULL);
        w[co->n_win - 1].rel_done = now_us();
        hist_add(&co->rel, w[co->n_win - 1].rel_done - t2);
        if (rc != 0)
            co->rel_failed++;
        redlock_lock_free(lock);
    }
    co->cpu_us = cpu_us() - cpu0;
    redlock_client_free(c);
    _exit(0);
}

struct owned_window {
    uint64_t start, end, rel_done;
    int owner;
};

static int cmp_start(const void *a, const void *b)
{
    const struct owned_window *x = a, *y = b;

    return x->start < y->start ? -1 : x->start > y->start;
}

struct gap {
    uint64_t us;                      /* longest time with no window open */
    uint64_t at_us;                   /* when it began, since the start */
};

/* Sweep the merged windows in start order: a window that starts before the
 * latest end seen so far, from another process, overlaps it. A window that
 * starts after it leaves a gap in which nobody held the lock: the longest
 * one is the price of a fault (or of the guard against it). */
static void count_overlaps(struct shared *sh, int k, struct result *r, struct gap *gap)
{
    struct owned_window *all;
    uint64_t total = 0, max_end = sh->t_start, j;
    int i, max_owner = -1;
    size_t n = 0;

    for (i = 0; i < k; i++)
        total += child_at(sh, i)->n_win;
    r->checked = total;
    if (total == 0)
        return;
    all = malloc(total * sizeof(*all));
    if (!all) {
        result_note(r, "error: out of memory for the overlap check");
        return;
    }
    for (i = 0; i < k; i++) {
        struct child_out *co = child_at(sh, i);
        struct window *w = child_windows(co);

        for (j = 0; j < co->n_win; j++) {
            all[n].start = w[j].start;
            all[n].end = w[j].end;
            all[n].rel_done = w[j].rel_done;
            all[n].owner = i;
            n++;
        }
    }
    qsort(all, n, sizeof(*all), cmp_start);
    for (j = 0; j < n; j++) {
        /* A handoff: the grant after another process's. Its latency runs
         * from that release returning to this acquire returning; an
         * acquire can return first (the releaser's reply, or its thread,
         * was late), which counts as 0. */
        if (j > 0 && all[j].owner != all[j - 1].owner && all[j - 1].rel_done) {
            r->owner_changes++;
            if (all[j].start >= all[j - 1].rel_done) {
                hist_add(&r->handoff, all[j].start - all[j - 1].rel_done);
            } else {
                r->early_handoffs++;
                hist_add(&r->handoff, 0);
            }
        }
        if (all[j].start > max_end && all[j].start - max_end > gap->us) {
            gap->us = all[j].start - max_end;
            gap->at_us = max_end - sh->t_start;
        }
        if (all[j].start < max_end && all[j].owner != max_owner) {
            uint64_t until = all[j].end < max_end ? all[j].end : max_end;
            double ov = (double)(until - all[j].start);

            r->violations++;
            if (ov > r->max_overlap_us)
                r->max_overlap_us = ov;
        }
        if (all[j].end > max_end) {
            max_end = all[j].end;
            max_owner = all[j].owner;
        }
    }
    free(all);
}

struct during_arg {
    const struct contend_opts *o;
    uint64_t t0;
};

static void *during_main(void *arg)
{
    struct during_arg *d = arg;

    d->o->during(d->o->arg, d->t0);
    return NULL;
}

int contend_run(const struct contend_opts *o, struct result *r)
{
    struct shared *sh;
    size_t slice, cap, total;
    pid_t pids[64];
    char res[96];
    int k = o->clients, i, j, alive, failed_start = 0;
    uint64_t t_hard, cpu = 0;
    pthread_t th;
    int have_thread = 0;
    double mcpu0;
    struct during_arg da;
    struct gap gap = { 0, 0 };
    uint64_t restarts = 0;

    /* bounded: at most 256k windows per child, whatever the duration */
    cap = (size_t)(o->duration_s * 40000.0) + 1024;
    if (cap > (1u << 18))
        cap = 1u << 18;
    slice = ((sizeof(struct child_out) + 63) & ~(size_t)63) + cap * sizeof(struct window);
    slice = (slice + 4095) & ~(size_t)4095;
    total = 4096 + (size_t)k * slice;
    sh = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (sh == MAP_FAILED) {
        result_note(r, "error: mmap: %s", strerror(errno));
        return -1;
    }
    sh->slice = slice;
    sh->cap = cap;
    snprintf(res, sizeof(res), "%s:%llu", o->label, (unsigned long long)bench_rand() % 1000000u);

    fflush(NULL);
    for (i = 0; i < k; i++) {
        pid_t pid = fork();

        if (pid == 0)
            child_main(sh, i, o, res);
        if (pid < 0) {
            result_note(r, "error: fork: %s", strerror(errno));
            break;
        }
        pids[i] = pid;
        register_child(pid);
    }
    k = i;

    /* start together, once every child is connected */
    t_hard = now_us() + 10000000u;
    for (;;) {
        int ready = 0, bad = 0;

        for (i = 0; i < k; i++) {
            ready += child_at(sh, i)->ready == 1;
            bad += child_at(sh, i)->ready == -1;
        }
        if (ready + bad == k || now_us() > t_hard || stop_requested()) {
            failed_start = k - ready;
            break;
        }
        sleep_us(5000);
    }
    mcpu0 = o->during ? -1 : masters_cpu_s();
    sh->t_end = now_us() + 50000u + (uint64_t)(o->duration_s * 1e6);
    sh->t_start = now_us() + 50000u;
    if (o->during) {
        da.o = o;
        da.t0 = sh->t_start;
        have_thread = pthread_create(&th, NULL, during_main, &da) == 0;
    }

    t_hard = sh->t_end + 30000000u;
    alive = k;
    while (alive > 0) {
        uint64_t ok = 0, t = now_us();
        int status;
        pid_t p;

        /* by pid, never waitpid(-1): the fault thread's cluster-up.sh runs
         * are our children too, and it reaps them itself */
        for (i = 0; i < k; i++) {
            if (pids[i] > 0 && (p = waitpid(pids[i], &status, WNOHANG)) == pids[i]) {
                unregister_child(p);
                pids[i] = -1;
                alive--;
            }
        }
        if (alive == 0)
            break;
        for (i = 0; i < k; i++)
            ok += child_at(sh, i)->ok_now;
        if (t > sh->t_start)
            progress(o->label, (double)(t - sh->t_start) / 1e6, o->duration_s, ok, 0);
        if (t > t_hard) {
            for (i = 0; i < k; i++)
                if (pids[i] > 0)
                    kill(pids[i], SIGKILL);
            result_note(r, "error: contenders did not finish; killed");
        }
        sleep_us(50000);
    }
    if (have_thread)
        pthread_join(th, NULL);

    r->duration_s = o->duration_s;
    for (i = 0; i < k; i++) {
        struct child_out *co = child_at(sh, i);

        r->ops += co->ops;
        r->ok += co->ok;
        r->failed += co->failed;
        r->release_failed += co->rel_failed;
        cpu += co->cpu_us;
        hist_merge(&r->acq, &co->acq);
        hist_merge(&r->rel, &co->rel);
        hist_merge(&r->fail, &co->fail);
        for (j = 0; j < BENCH_NERR; j++)
            r->errs[j] += co->errs[j];
        restarts += __atomic_load_n(&co->restarts_seen, __ATOMIC_RELAXED);
        if (co->ready == -1 && !r->note[0])
            result_note(r, "error: contender %d: %s", i, co->errmsg);
    }
    count_overlaps(sh, k, r, &gap);
    r->cycles_per_s = (double)r->ok / o->duration_s;
    if (r->ok)
        r->cpu_us_per_cycle = (double)cpu / (double)r->ok;
    masters_cpu_delta(r, mcpu0, r->ok);
    result_extra(r, ",\"clients\":%d,\"handoffs_per_s\":%.0f,\"hold_us\":%u,"
                 "\"max_overlap_us\":%.0f,\"retry_count\":%u,\"retry_delay_ms\":%u,"
                 "\"retry_jitter_ms\":%u,\"pubsub_wait\":%s", k, r->cycles_per_s, o->hold_us,
                 r->max_overlap_us, o->retry_count, o->retry_delay_ms, o->retry_jitter_ms,
                 o->pubsub_off ? "false" : "true");
    result_extra(r, ",\"owner_changes\":%llu,\"owner_changes_per_s\":%.0f,"
                 "\"early_handoffs\":%llu,\"handoff_us\":", (unsigned long long)r->owner_changes,
                 (double)r->owner_changes / o->duration_s, (unsigned long long)r->early_handoffs);
    if (r->handoff.count)
        result_extra(r, "{\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,\"p999\":%llu,\"max\":%llu}",
                     (unsigned long long)hist_pct(&r->handoff, 0.5),
                     (unsigned long long)hist_pct(&r->handoff, 0.9),
                     (unsigned long long)hist_pct(&r->handoff, 0.99),
                     (unsigned long long)hist_pct(&r->handoff, 0.999),
                     (unsigned long long)r->handoff.max);
    else
        result_extra(r, "null");
    if (o->reconnect_max_ms)
        result_extra(r, ",\"reconnect_max_ms\":%u", o->reconnect_max_ms);
    result_extra(r, ",\"max_gap_ms\":%.1f,\"max_gap_at_s\":%.2f,\"restart_guard\":%s,"
                 "\"restarts_seen\":%llu", (double)gap.us / 1000.0, (double)gap.at_us / 1e6,
                 o->restart_guard_off ? "false" : "true", (unsigned long long)restarts);
    r->max_gap_ms = (double)gap.us / 1000.0;
    r->max_gap_at_s = (double)gap.at_us / 1e6;
    r->restarts_seen = restarts;
    if (failed_start && !r->note[0])
        result_note(r, "error: %d contenders could not start", failed_start);
    munmap(sh, total);
    return 0;
}

/* The two contention rows differ in one setting only: whether waiters
 * listen for releases (pub/sub, the library's default) or only poll on
 * their retry timer. Both use the same realistic retry settings (--retry-
 * delay, --retry-jitter: 50 ms each by default) and enough retries never to
 * give up within the scenario (each pub/sub wake-up costs one). The old
 * busy configuration (retry at once, no pub/sub) is
 * --scenarios contention-poll --retry-delay 0 --retry-jitter 1. */
static void contention_scenario(const char *name, int pubsub_off)
{
    struct result *r = result_new(name);
    struct contend_opts o = { .clients = config.clients, .duration_s = config.duration_s,
                              .ttl_ms = config.ttl_ms, .hold_us = config.hold_us,
                              .retry_count = config.retry_count,
                              .retry_delay_ms = config.retry_delay_ms,
                              .retry_jitter_ms = config.retry_jitter_ms,
                              .pubsub_off = pubsub_off, .label = name };

    contend_run(&o, r);
}

void scenario_contention(void)
{
    contention_scenario("contention", 0);
}

void scenario_contention_poll(void)
{
    contention_scenario("contention-poll", 1);
}
