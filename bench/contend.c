/* contend.c - K separate client processes fighting over one resource.
 *
 * Each child runs its own client: one blocking caller, or (contention-mixed)
 * several waiters sharing one async client, inproc.c's. It logs, for every
 * lock it gets, its window (windows.c) and when its release returned.
 * Children write into one MAP_SHARED region, one slice each; the parent
 * merges the windows and checks them. The wait (pub/sub or polling, how
 * long) is waiting.c's; attempts and the time waited are the library's (its
 * op hook, ophook.c). Above inproc.c: a child may run its waiters.
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

struct child_out {
    volatile int ready;     /* connected; 1 ok, -1 failed */
    volatile int waiting;   /* blocking: in an acquire call, a waiter, not a holder */
    uint64_t restarts_seen; /* REDLOCK_EVENT_RESTART, from the I/O thread */
    char errmsg[200];
    uint64_t cpu_us;
    struct opstats lib;     /* written by the child's I/O thread */
    struct waiters_out out; /* what its waiters did (one: a blocking caller) */
};

struct shared {
    volatile uint64_t t_start; /* 0 until the parent says go */
    volatile uint64_t t_end;
    size_t slice; /* bytes per child */
    size_t cap;   /* windows per child */
    size_t total; /* bytes mapped */
};

static struct child_out *child_at(struct shared *sh, int i)
{
    return (struct child_out *)((char *)sh + 4096 + (size_t)i * sh->slice);
}

static struct owned_window *child_windows(struct child_out *co)
{
    return (struct owned_window *)((char *)co + ((sizeof(*co) + 63) & ~(size_t)63));
}

/* The library's event hook, on the client's I/O thread: count the master
 * restarts this contender saw (what the restart guard acts on). */
static void child_on_event(redlock_client *c, int status, int event, const redlock_error *err,
                           void *arg)
{
    struct child_out *co = arg;

    (void)c;
    (void)status;
    (void)err;
    if (event == REDLOCK_EVENT_RESTART)
        __atomic_add_fetch(&co->restarts_seen, 1, __ATOMIC_RELAXED);
}

static void child_config(struct child_out *co, const struct contend_opts *o, redlock_config *cfg)
{
    bench_config_fill(cfg, 0);
    wait_config(&o->wait, cfg);
    if (o->reconnect_max_ms)
        cfg->reconnect_max_ms = o->reconnect_max_ms;
    if (o->restart_guard_off)
        cfg->restart_guard = 0;
    cfg->event_fn = child_on_event;
    cfg->event_arg = co;
    opstats_hook(&co->lib, cfg);
}

/* One acquire, hold, release; the window is logged when granted. */
static void child_cycle(redlock_client *c, struct child_out *co, int idx,
                        const struct contend_opts *o, const char *res)
{
    struct waiters_out *out = &co->out;
    struct owned_window w = { .owner = idx };
    redlock_lock *lock = NULL;
    uint64_t t0 = now_us(), t1, t2, vend;
    int64_t v;
    int rc;

    co->waiting = 1;
    rc = wait_acquire(c, &o->wait, res, o->ttl_ms, &lock);
    co->waiting = 0;
    t1 = now_us();
    out->t.ops++;
    if (rc != 0) {
        tally_fail(&out->t, rc, t1 - t0);
        return;
    }
    /* The application may use the lock from now until the validity the
     * library granted runs out, or until it releases: that is the window
     * no other process may overlap. */
    v = redlock_lock_validity_ms(lock);
    vend = t1 + (v > 0 ? (uint64_t)v * 1000u : 0);
    if (o->hold_us)
        sleep_us(o->hold_us);
    t2 = now_us();
    w.start = t1;
    w.asked = t0;
    w.end = t2 < vend ? t2 : vend;
    out->t.ok++;
    out->ok_now = out->t.ok;
    out->grants[0]++;
    hist_add(&out->t.acq, t1 - t0);
    rc = redlock_release(c, lock, NULL, NULL);
    w.rel_done = now_us();
    hist_add(&out->t.rel, w.rel_done - t2);
    if (rc != 0)
        out->t.rel_failed++;
    redlock_lock_free(lock);
    winlog_add(&out->wins, &w); /* the loop leaves room for it */
}

/* Connected: say so, and wait for the parent's go. */
static void child_ready(struct shared *sh, struct child_out *co)
{
    co->ready = 1;
    while (sh->t_start == 0 && !stop_requested())
        sleep_us(1000);
    if (now_us() < sh->t_start)
        sleep_us(sh->t_start - now_us());
}

/* One blocking caller, one acquire after another. */
static void child_blocking(struct shared *sh, struct child_out *co, int idx,
                           const struct contend_opts *o, const redlock_config *cfg, const char *res)
{
    redlock_client *c;
    uint64_t cpu0;

    if (bench_blocking_client(cfg, &c, co->errmsg, sizeof(co->errmsg)) < 0)
        return;
    child_ready(sh, co);
    cpu0 = cpu_us();
    opstats_start(&co->lib);
    while (now_us() < sh->t_end && co->out.wins.n < co->out.wins.cap && !stop_requested())
        child_cycle(c, co, idx, o, res);
    co->cpu_us = cpu_us() - cpu0;
    redlock_client_free(c);
}

/* o->waiters waiters on one async client (inproc.c), until the end. */
static void child_waiters(struct shared *sh, struct child_out *co, int idx,
                          const struct contend_opts *o, const redlock_config *cfg, const char *res)
{
    struct waiters_opts wo = { .k = o->waiters,
                               .owner0 = idx * o->waiters,
                               .ttl_ms = o->ttl_ms,
                               .hold_us = o->hold_us,
                               .wait = &o->wait,
                               .res = res };
    struct inproc *ip;
    uint64_t cpu0;

    if (!(ip = inproc_open(cfg, &wo, &co->out, co->errmsg, sizeof(co->errmsg))))
        return;
    child_ready(sh, co);
    cpu0 = cpu_us();
    opstats_start(&co->lib);
    inproc_serve(ip, sh->t_end);
    co->cpu_us = cpu_us() - cpu0;
    inproc_close(ip);
}

static void child_main(struct shared *sh, int idx, const struct contend_opts *o, const char *res)
{
    struct child_out *co = child_at(sh, idx);
    redlock_config cfg;

    bench_in_child();
    alarm((unsigned)(o->duration_s + 60));
    tally_init(&co->out.t);
    hist_init(&co->lib.attempts_h);
    hist_init(&co->lib.waited);
    co->out.wins = (struct winlog){ .w = child_windows(co), .cap = sh->cap, .fixed = 1 };
    child_config(co, o, &cfg);
    if (o->waiters > 1)
        child_waiters(sh, co, idx, o, &cfg, res);
    else
        child_blocking(sh, co, idx, o, &cfg, res);
    if (co->ready != 1)
        co->ready = -1;
    _exit(co->ready == 1 ? 0 : 1);
}

static struct shared *shared_map(int k, double duration_s)
{
    struct shared *sh;
    /* bounded: at most 256k windows per child, whatever the duration */
    size_t cap = (size_t)(duration_s * 40000.0) + 1024, slice, total;

    if (cap > (1u << 18))
        cap = 1u << 18;
    slice = ((sizeof(struct child_out) + 63) & ~(size_t)63) + cap * sizeof(struct owned_window);
    slice = (slice + 4095) & ~(size_t)4095;
    total = 4096 + (size_t)k * slice;
    sh = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1,
              0);
    if (sh == MAP_FAILED)
        return NULL;
    sh->slice = slice;
    sh->cap = cap;
    sh->total = total;
    return sh;
}

/* Start together, once every child is connected; returns how many could
 * not start. */
static int await_ready(struct shared *sh, int k)
{
    uint64_t t_hard = now_us() + 10000000u;
    int i;

    for (;;) {
        int ready = 0, bad = 0;

        for (i = 0; i < k; i++) {
            ready += child_at(sh, i)->ready == 1;
            bad += child_at(sh, i)->ready == -1;
        }
        if (ready + bad == k || now_us() > t_hard || stop_requested())
            return k - ready;
        sleep_us(5000);
    }
}

static pid_t spawn(struct shared *sh, int idx, const struct contend_opts *o, const char *res)
{
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid == 0)
        child_main(sh, idx, o, res);
    if (pid > 0)
        register_child(pid);
    return pid;
}

/* contention-deadwaiter: SIGKILL one contender that is waiting (inside its
 * acquire call, so queued, not holding), chosen at random, and start a new
 * one in a fresh slot so the number of live contenders stays the same.
 * Returns 1 if one was killed. */
static int kill_a_waiter(struct shared *sh, pid_t *pids, int *k, int k_max,
                         const struct contend_opts *o, const char *res)
{
    int cand[BENCH_MAX_CLIENTS], n = 0, i, v;

    for (i = 0; i < *k; i++)
        if (pids[i] > 0 && child_at(sh, i)->ready == 1 && child_at(sh, i)->waiting)
            cand[n++] = i;
    if (n == 0 || *k >= k_max)
        return 0;
    v = cand[bench_rand() % (uint64_t)n];
    if (kill(pids[v], SIGKILL) != 0)
        return 0;
    pids[*k] = spawn(sh, *k, o, res);
    if (pids[*k] > 0)
        (*k)++;
    return 1;
}

/* Reap the children by pid, never waitpid(-1): the fault thread's
 * cluster-up.sh runs are our children too, and it reaps them itself.
 * With o->kill_waiter_every_s, kill waiters as the run goes (slots up to
 * @k_max; *k grows). */
static void reap(struct shared *sh, pid_t *pids, int *k, int k_max, const struct contend_opts *o,
                 const char *res, struct result *r)
{
    uint64_t t_hard = sh->t_end + 30000000u, every = (uint64_t)(o->kill_waiter_every_s * 1e6);
    uint64_t next_kill = sh->t_start + every;
    int alive = *k, i, status;

    while (alive > 0) {
        uint64_t ok = 0, t = now_us();

        if (every && t >= next_kill && t + 200000u < sh->t_end) {
            int before = *k;

            if (kill_a_waiter(sh, pids, k, k_max, o, res)) {
                r->waiters_killed++;
                alive += *k - before;
                next_kill += every;
            }
        }
        for (i = 0; i < *k; i++) {
            if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
                unregister_child(pids[i]);
                pids[i] = -1;
                alive--;
            }
        }
        if (alive == 0)
            break;
        for (i = 0; i < *k; i++)
            ok += child_at(sh, i)->out.ok_now;
        if (t > sh->t_start)
            progress(o->label, (double)(t - sh->t_start) / 1e6,
                     (double)(sh->t_end - sh->t_start) / 1e6, ok, 0);
        if (t > t_hard) {
            for (i = 0; i < *k; i++)
                if (pids[i] > 0)
                    kill(pids[i], SIGKILL);
            result_note(r, "error: contenders did not finish; killed");
        }
        sleep_us(every ? 10000 : 50000);
    }
}

/* Merge what the children wrote into @r; the windows are checked. With
 * several waiters per child, also their grants and the runs of grants to
 * one process. */
static void collect(struct shared *sh, int k, int per, struct result *r, uint64_t *cpu)
{
    struct owned_window *all;
    uint64_t grants[BENCH_MAX_CLIENTS] = { 0 }, total = 0;
    size_t n = 0;
    int i, j;

    for (i = 0; i < k; i++) {
        struct child_out *co = child_at(sh, i);

        result_add_tally(r, &co->out.t);
        opstats_merge(&r->lib, &co->lib);
        *cpu += co->cpu_us;
        r->restarts_seen += __atomic_load_n(&co->restarts_seen, __ATOMIC_RELAXED);
        if (co->ready == -1 && !r->note[0])
            result_note(r, "error: contender %d: %s", i, co->errmsg);
        grants[i] = co->out.wins.n;
        total += co->out.wins.n;
        for (j = 0; per > 1 && j < per && i * per + j < BENCH_MAX_CLIENTS; j++)
            r->grants_by_waiter[i * per + j] = co->out.grants[j];
    }
    result_fairness(r, grants, k);
    if (per > 1) {
        r->waiters_each = per;
        r->fairness_jain_waiters = jain(r->grants_by_waiter,
                                        k * per < BENCH_MAX_CLIENTS ? k * per : BENCH_MAX_CLIENTS);
    }
    if (!total || !(all = malloc(total * sizeof(*all)))) {
        if (total)
            result_note(r, "error: out of memory for the overlap check");
        return;
    }
    for (i = 0; i < k; i++) {
        struct child_out *co = child_at(sh, i);

        memcpy(all + n, co->out.wins.w, co->out.wins.n * sizeof(*all));
        n += co->out.wins.n;
    }
    windows_check(all, n, sh->t_start, r);
    if (per > 1)
        windows_runs(all, n, per, sh->t_end, r);
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
    /* slots for the contenders started in place of killed waiters */
    int k_max = o->clients + (o->kill_waiter_every_s > 0
                                  ? (int)(o->duration_s / o->kill_waiter_every_s) + 1
                                  : 0);
    struct shared *sh;
    struct during_arg da = { o, 0 };
    pid_t pids[BENCH_MAX_CLIENTS];
    char res[96];
    int k, n_start, failed_start, have_thread = 0;
    uint64_t cpu = 0;
    pthread_t th;
    struct mstat m0 = { 0 };

    if (k_max > BENCH_MAX_CLIENTS)
        k_max = BENCH_MAX_CLIENTS;
    sh = shared_map(k_max, o->duration_s);
    if (!sh) {
        result_note(r, "error: mmap: %s", strerror(errno));
        return -1;
    }
    snprintf(res, sizeof(res), "%s:%llu", o->label, (unsigned long long)bench_rand() % 1000000u);
    for (k = 0; k < o->clients && k < BENCH_MAX_CLIENTS; k++) {
        pid_t pid = spawn(sh, k, o, res);

        if (pid < 0) {
            result_note(r, "error: fork: %s", strerror(errno));
            break;
        }
        pids[k] = pid;
    }
    failed_start = await_ready(sh, k);
    if (!o->during)
        masters_stat(&m0);
    sh->t_end = now_us() + 50000u + (uint64_t)(o->duration_s * 1e6);
    sh->t_start = now_us() + 50000u;
    if (o->during) {
        da.t0 = sh->t_start;
        have_thread = pthread_create(&th, NULL, during_main, &da) == 0;
    }
    n_start = k;
    reap(sh, pids, &k, k_max, o, res, r);
    if (have_thread)
        pthread_join(th, NULL);

    r->duration_s = o->duration_s;
    collect(sh, k, o->waiters > 1 ? o->waiters : 1, r, &cpu);
    r->cycles_per_s = (double)r->ok / o->duration_s;
    if (r->ok)
        r->cpu_us_per_cycle = (double)cpu / (double)r->ok;
    masters_delta(r, &m0, r->ok);
    contention_json(r, n_start, o->hold_us);
    if (o->kill_waiter_every_s > 0) {
        json_kv_double(&r->xj, "kill_waiter_every_s", o->kill_waiter_every_s, 1);
        json_kv_u64(&r->xj, "waiters_killed", r->waiters_killed);
        json_kv_i64(&r->xj, "slots", k);
    }
    wait_json(r, &o->wait);
    if (o->reconnect_max_ms)
        json_kv_u64(&r->xj, "reconnect_max_ms", o->reconnect_max_ms);
    json_kv_bool(&r->xj, "restart_guard", !o->restart_guard_off);
    json_kv_u64(&r->xj, "restarts_seen", r->restarts_seen);
    if (failed_start && !r->note[0])
        result_note(r, "error: %d contenders could not start", failed_start);
    munmap(sh, sh->total);
    return 0;
}
