/* load.c - acquire + release cycles on distinct keys through the library.
 *
 * load_async() keeps D cycles in flight on one libevent loop (D = 1 gives
 * the uncontended latency; D = 64 the async throughput); load_blocking()
 * runs T threads on one blocking client. Keys are distinct, so every
 * acquire should succeed: failures here are the engine's or the masters'.
 * The fault scenarios and the timeline reuse load_async() with D small.
 */
#include "bench.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

struct load;

struct slot {
    struct load *L;
    unsigned id;
    uint64_t n;         /* cycles started by this slot */
    uint64_t t0;        /* start of the current call */
    redlock_lock *held; /* hold_us: the lock until its release */
    size_t keylen;
    char key[96];
};

struct load {
    const struct load_opts *o;
    struct event_base *base;
    redlock_client *c;
    struct result *r;
    uint64_t t_start;
    uint64_t deadline;
    uint64_t cycles; /* acquire + release completed */
    int active;      /* slots still running */
    int stopped;     /* no new operations */
    int stuck;
    struct slot *slots;
};

/* ------------------------------------------------------------------------ */
/* Async load                                                               */
/* ------------------------------------------------------------------------ */

static void slot_next(struct slot *s);

static void slot_deferred(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    slot_next(arg);
}

static void slot_finish(struct slot *s)
{
    struct load *L = s->L;

    if (--L->active == 0)
        event_base_loopbreak(L->base);
}

static void on_release(redlock_client *c, int status, redlock_lock *lock,
                       const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct slot *s = arg;
    struct load *L = s->L;

    (void)c;
    (void)out;
    (void)err;
    hist_add(&L->r->rel, now_us() - s->t0);
    if (status != 0)
        L->r->release_failed++;
    redlock_lock_free(lock);
    L->cycles++;
    slot_next(s);
}

static void slot_release(struct slot *s)
{
    struct load *L = s->L;
    int rc;

    s->t0 = now_us();
    rc = redlock_release_async(L->c, s->held, on_release, s, NULL);
    if (rc != 0) {
        L->r->release_failed++;
        redlock_lock_free(s->held);
        slot_next(s);
    }
}

static void on_acquire(redlock_client *c, int status, redlock_lock *lock,
                       const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct slot *s = arg;
    struct load *L = s->L;
    uint64_t t = now_us(), lat = t - s->t0;

    (void)c;
    (void)out;
    (void)err;
    if (L->o->tl)
        timeline_record(L->o->tl, t, lat, status == 0);
    if (status != 0) {
        L->r->failed++;
        hist_add(&L->r->fail, lat);
        result_err(L->r, status);
        if (L->o->fail_backoff_us) {
            struct timeval tv = { (time_t)(L->o->fail_backoff_us / 1000000u),
                                  (suseconds_t)(L->o->fail_backoff_us % 1000000u) };

            event_base_once(L->base, -1, EV_TIMEOUT, slot_deferred, s, &tv);
        } else {
            slot_next(s);
        }
        return;
    }
    L->r->ok++;
    hist_add(&L->r->acq, lat);
    s->held = lock;
    /* Held as contention-hold's processes hold (contend.c): the loop's
     * timers fire a few ms late here, which would slow the row's pace. */
    if (L->o->hold_us)
        sleep_us(L->o->hold_us);
    slot_release(s);
}

static void slot_next(struct slot *s)
{
    struct load *L = s->L;
    struct timeval tv = { 0, 1000 };
    int rc;

    if (L->stopped || now_us() >= L->deadline || L->r->ops >= L->o->max_ops || stop_requested()) {
        slot_finish(s);
        return;
    }
    if (L->o->tl && !timeline_begin(L->o->tl)) {
        /* the timeline holds the load off while it declares masters */
        event_base_once(L->base, -1, EV_TIMEOUT, slot_deferred, s, &tv);
        return;
    }
    s->keylen = (size_t)snprintf(s->key, sizeof(s->key), "%s:%u:%llu", L->o->label, s->id,
                                 (unsigned long long)s->n++);
    L->r->ops++;
    s->t0 = now_us();
    redlock_resource one = { s->key, s->keylen };
    rc = redlock_acquire_set_async(L->c, &one, 1, config.ttl_ms, L->o->flags, on_acquire, s, NULL);
    if (rc != 0) {
        /* refused at once: the callback will not run. Count it and try again
         * from the loop (never recurse: a refusing client would spin). */
        L->r->failed++;
        hist_add(&L->r->fail, now_us() - s->t0);
        result_err(L->r, rc);
        if (L->o->tl)
            timeline_record(L->o->tl, now_us(), now_us() - s->t0, 0);
        event_base_once(L->base, -1, EV_TIMEOUT, slot_deferred, s, &tv);
    }
}

static void load_tick(evutil_socket_t fd, short what, void *arg)
{
    struct load *L = arg;
    uint64_t t = now_us();

    (void)fd;
    (void)what;
    if (!L->o->sys) /* a progress line's write would be counted */
        progress(L->o->label, (double)(t - L->t_start) / 1e6, L->o->duration_s, L->r->ok,
                 L->r->failed);
    if (stop_requested())
        L->stopped = 1;
    /* Every call is bounded by node timeouts and retries; past the deadline
     * plus a wide grace, something is stuck: stop waiting and say so. */
    if (t > L->deadline + 10000000u + (uint64_t)L->o->retries * 1000000u) {
        L->stuck = L->active;
        L->stopped = 1;
        event_base_loopbreak(L->base);
    }
}

/* A client on @L's loop: warmed up, or (masters known to be broken) just
 * given o->settle_ms to connect to whatever answers. */
static int load_client(struct load *L, struct result *r)
{
    const struct load_opts *o = L->o;
    redlock_config cfg;
    redlock_error err;
    char why[300];
    int rc;

    bench_config_fill(&cfg, o->retries);
    opstats_hook(&r->lib, &cfg);
    if (o->tl) {
        cfg.log_fn = timeline_on_log;
        cfg.log_arg = o->tl;
        cfg.log_level = REDLOCK_LOG_INFO;
    }
    if (!o->settle_ms) {
        if (bench_async_client(L->base, &cfg, &L->c, why, sizeof(why)) == 0)
            return 0;
        result_note(r, "error: %s", why);
        return -1;
    }
    rc = redlock_client_new(&cfg, L->base, &L->c, &err);
    if (rc != 0) {
        result_note(r, "error: redlock_client_new: %s", redlock_err_name(rc));
        return -1;
    }
    {
        struct timeval st = { (time_t)(o->settle_ms / 1000),
                              (suseconds_t)(o->settle_ms % 1000) * 1000 };

        event_base_loopexit(L->base, &st);
        event_base_dispatch(L->base);
    }
    return 0;
}

/* Start every slot and run the loop until they are all done. */
static void load_loop(struct load *L)
{
    const struct load_opts *o = L->o;
    int i;

    L->t_start = now_us();
    if (o->tl && o->tl->t0 == 0)
        o->tl->t0 = L->t_start;
    L->deadline = L->t_start + (uint64_t)(o->duration_s * 1e6);
    L->active = o->inflight;
    opstats_start(&L->r->lib);
    if (o->sys)
        sysc_start(o->sys);
    for (i = 0; i < o->inflight; i++) {
        L->slots[i].L = L;
        L->slots[i].id = (unsigned)i;
        slot_next(&L->slots[i]);
    }
    event_base_dispatch(L->base);
    if (o->sys)
        sysc_stop(o->sys, L->cycles);
}

int load_async(const struct load_opts *o, struct result *r)
{
    struct load L;
    struct timeval tv = { 0, 200000 };
    struct event *tick;
    uint64_t cpu0;
    struct mstat m0 = { 0 };

    memset(&L, 0, sizeof(L));
    L.o = o;
    L.r = r;
    L.base = event_base_new();
    L.slots = calloc((size_t)o->inflight, sizeof(*L.slots));
    if (!L.base || !L.slots)
        result_note(r, "error: out of memory");
    if (!L.base || !L.slots || load_client(&L, r) < 0) {
        if (L.base)
            event_base_free(L.base);
        free(L.slots);
        return -1;
    }
    tick = event_new(L.base, -1, EV_PERSIST, load_tick, &L);
    event_add(tick, &tv);

    if (!o->before && !o->sys) /* broken masters do not answer */
        masters_stat(&m0);
    if (o->before)
        o->before(o->before_arg);
    cpu0 = cpu_us();
    load_loop(&L);
    L.stopped = 1;

    r->duration_s = (double)(now_us() - L.t_start) / 1e6;
    r->cycles_per_s = (double)L.cycles / r->duration_s;
    if (L.cycles)
        r->cpu_us_per_cycle = (double)(cpu_us() - cpu0) / (double)L.cycles;
    masters_delta(r, &m0, L.cycles);
    if (L.stuck)
        result_note(r, "error: %d operations never completed (callback missing?)", L.stuck);
    event_free(tick);
    /* in-flight calls (only when stuck) complete with ESHUTDOWN in here */
    redlock_client_free(L.c);
    event_base_free(L.base);
    free(L.slots);
    return L.stuck ? -1 : 0;
}

/* ------------------------------------------------------------------------ */
/* Blocking load: T threads, one client                                     */
/* ------------------------------------------------------------------------ */

struct bthread {
    pthread_t th;
    redlock_client *c;
    int id;
    uint64_t deadline;
    uint64_t max_ops;
    struct tally t;
    _Atomic uint64_t done; /* read by the progress line */
};

static void *bthread_main(void *arg)
{
    struct bthread *b = arg;
    char key[96];
    uint64_t n = 0;

    while (now_us() < b->deadline && b->t.ops < b->max_ops && !stop_requested()) {
        redlock_lock *lock = NULL;
        uint64_t t0 = now_us(), t1;
        int len = snprintf(key, sizeof(key), "blocking:%d:%llu", b->id, (unsigned long long)n++);
        int rc = redlock_acquire(b->c, key, (size_t)len, config.ttl_ms, &lock, NULL, NULL);

        t1 = now_us();
        b->t.ops++;
        if (rc != 0) {
            tally_fail(&b->t, rc, t1 - t0);
            continue;
        }
        b->t.ok++;
        hist_add(&b->t.acq, t1 - t0);
        rc = redlock_release(b->c, lock, NULL, NULL);
        hist_add(&b->t.rel, now_us() - t1);
        if (rc != 0)
            b->t.rel_failed++;
        redlock_lock_free(lock);
        atomic_fetch_add(&b->done, 1);
    }
    return NULL;
}

/* Start @threads threads, show progress until the deadline, join them;
 * returns how many started. */
static int bthreads_run(struct bthread *b, int threads, uint64_t t0, double duration_s)
{
    int i, started;

    for (started = 0; started < threads; started++)
        if (pthread_create(&b[started].th, NULL, bthread_main, &b[started]) != 0)
            break;
    for (;;) {
        uint64_t done = 0, t = now_us();

        for (i = 0; i < started; i++)
            done += atomic_load(&b[i].done);
        progress("blocking", (double)(t - t0) / 1e6, duration_s, done, 0);
        if (t >= t0 + (uint64_t)(duration_s * 1e6) || stop_requested())
            break;
        sleep_us(200000);
    }
    for (i = 0; i < started; i++)
        pthread_join(b[i].th, NULL);
    return started;
}

/* T threads on one blocking client, each cycling on keys of its own, for
 * @duration_s or @max_ops cycles in all. One thread runs on the caller's,
 * so that @sys (optional) counts the syscalls of exactly the caller and
 * the client's I/O thread, and no progress line is written meanwhile. */
int load_blocking(int threads, double duration_s, uint64_t max_ops, struct sysc *sys,
                  struct result *r)
{
    redlock_config cfg;
    redlock_client *c = NULL;
    struct bthread *b = calloc((size_t)threads, sizeof(*b));
    uint64_t t0, cpu0, cycles = 0;
    struct mstat m0 = { 0 };
    char why[300];
    int i, started = threads;

    bench_config_fill(&cfg, 0);
    opstats_hook(&r->lib, &cfg);
    if (!b || bench_blocking_client(&cfg, &c, why, sizeof(why)) < 0) {
        result_note(r, "error: %s", b ? why : "out of memory");
        free(b);
        return -1;
    }
    if (!sys)
        masters_stat(&m0);
    opstats_start(&r->lib);
    cpu0 = cpu_us();
    t0 = now_us();
    for (i = 0; i < threads; i++) {
        b[i].c = c;
        b[i].id = i;
        b[i].deadline = t0 + (uint64_t)(duration_s * 1e6);
        b[i].max_ops = max_ops / (uint64_t)threads + (threads > 1);
        tally_init(&b[i].t);
    }
    if (sys)
        sysc_start(sys);
    if (threads == 1)
        bthread_main(&b[0]);
    else
        started = bthreads_run(b, threads, t0, duration_s);
    for (i = 0; i < started; i++) {
        result_add_tally(r, &b[i].t);
        cycles += atomic_load(&b[i].done);
    }
    if (sys)
        sysc_stop(sys, cycles);
    r->duration_s = (double)(now_us() - t0) / 1e6;
    r->cycles_per_s = (double)cycles / r->duration_s;
    if (cycles)
        r->cpu_us_per_cycle = (double)(cpu_us() - cpu0) / (double)cycles;
    masters_delta(r, &m0, cycles);
    if (started < threads)
        result_note(r, "only %d of %d threads started", started, threads);
    redlock_client_free(c);
    free(b);
    return 0;
}
