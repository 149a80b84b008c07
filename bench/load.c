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
    uint64_t n;                       /* cycles started by this slot */
    uint64_t t0;                      /* start of the current call */
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
    uint64_t cycles;                  /* acquire + release completed */
    int active;                       /* slots still running */
    int stopped;                      /* no new operations */
    int stuck;
    struct slot *slots;
};

/* ------------------------------------------------------------------------ */
/* Warm-up: a fresh client's connections are made in the background, and    */
/* the header offers no "connected" query, so cycle until every master took  */
/* part (no vote DOWN/TIMEOUT/ERROR) three times in a row.                  */
/* ------------------------------------------------------------------------ */

struct warm {
    struct event_base *base;
    redlock_client *c;
    uint64_t deadline;
    int good;                         /* consecutive all-healthy cycles */
    int done;                         /* 1 ok, -1 gave up */
    unsigned seq;
    struct event *retry;
};

static void warm_try(struct warm *w);

static void warm_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    warm_try(arg);
}

static void warm_later(struct warm *w, unsigned ms)
{
    struct timeval tv = { 0, (suseconds_t)ms * 1000 };

    if (now_us() > w->deadline || stop_requested()) {
        w->done = -1;
        event_base_loopbreak(w->base);
        return;
    }
    evtimer_add(w->retry, &tv);
}

static void warm_on_release(redlock_client *c, int status, redlock_lock *lock,
                            const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct warm *w = arg;

    (void)c;
    (void)status;
    (void)out;
    (void)err;
    redlock_lock_free(lock);
    if (w->good >= 3) {
        w->done = 1;
        event_base_loopbreak(w->base);
        return;
    }
    warm_later(w, w->good ? 0 : 20);
}

static void warm_on_acquire(redlock_client *c, int status, redlock_lock *lock,
                            const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct warm *w = arg;
    uint32_t i;
    int healthy = status == 0;

    (void)err;
    for (i = 0; healthy && out && i < out->n_masters; i++)
        if (out->votes[i].kind != REDLOCK_VOTE_OK && out->votes[i].kind != REDLOCK_VOTE_PENDING)
            healthy = 0;
    w->good = healthy ? w->good + 1 : 0;
    if (status != 0) {
        warm_later(w, 20);
        return;
    }
    if (redlock_release_async(c, lock, warm_on_release, w, NULL) != 0) {
        redlock_lock_free(lock);
        warm_later(w, 20);
    }
}

static void warm_try(struct warm *w)
{
    char key[64];
    int n;

    n = snprintf(key, sizeof(key), "warmup:%u", w->seq++);
    if (redlock_acquire_async(w->c, key, (size_t)n, config.ttl_ms, warm_on_acquire, w, NULL) != 0)
        warm_later(w, 20);
}

/* Create an async client on @base and wait until every master answers. */
int bench_async_client(struct event_base *base, uint32_t retries, redlock_client **ret,
                       char *why, size_t whylen)
{
    redlock_config cfg;
    redlock_error err;
    struct warm w;
    int rc;

    bench_config_fill(&cfg, retries);
    memset(&err, 0, sizeof(err));
    rc = redlock_client_new(&cfg, base, ret, &err);
    if (rc != 0) {
        snprintf(why, whylen, "redlock_client_new: %s: %s", redlock_err_name(rc), err.msg);
        return -1;
    }
    memset(&w, 0, sizeof(w));
    w.base = base;
    w.c = *ret;
    w.deadline = now_us() + 5000000u;
    w.retry = evtimer_new(base, warm_retry_cb, &w);
    warm_try(&w);
    event_base_dispatch(base);
    event_free(w.retry);
    if (w.done != 1) {
        snprintf(why, whylen, "warm-up: not every master took part in an acquire within 5 s");
        redlock_client_free(*ret);
        *ret = NULL;
        return -1;
    }
    return 0;
}

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

static void on_acquire(redlock_client *c, int status, redlock_lock *lock,
                       const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct slot *s = arg;
    struct load *L = s->L;
    uint64_t t = now_us(), lat = t - s->t0;
    int rc;

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
    s->t0 = now_us();
    rc = redlock_release_async(c, lock, on_release, s, NULL);
    if (rc != 0) {
        L->r->release_failed++;
        redlock_lock_free(lock);
        slot_next(s);
    }
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
    s->keylen = (size_t)snprintf(s->key, sizeof(s->key), "%s:%u:%llu", L->o->label, s->id,
                                 (unsigned long long)s->n++);
    L->r->ops++;
    s->t0 = now_us();
    rc = redlock_acquire_async(L->c, s->key, s->keylen, config.ttl_ms, on_acquire, s, NULL);
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
    progress(L->o->label, (double)(t - L->t_start) / 1e6, L->o->duration_s,
             L->r->ok, L->r->failed);
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

int load_async(const struct load_opts *o, struct result *r)
{
    struct load L;
    struct timeval tv = { 0, 200000 };
    struct event *tick;
    uint64_t cpu0, elapsed;
    double mcpu0;
    char why[300];
    int i;

    memset(&L, 0, sizeof(L));
    L.o = o;
    L.r = r;
    L.base = event_base_new();
    L.slots = calloc((size_t)o->inflight, sizeof(*L.slots));
    if (!L.base || !L.slots) {
        result_note(r, "error: out of memory");
        goto fail;
    }
    if (o->settle_ms) {
        /* masters are known to be broken: no warm-up, just let the client
         * connect to whatever answers */
        redlock_config cfg;
        redlock_error err;
        struct timeval st = { (time_t)(o->settle_ms / 1000), (suseconds_t)(o->settle_ms % 1000) * 1000 };
        int rc;

        bench_config_fill(&cfg, o->retries);
        rc = redlock_client_new(&cfg, L.base, &L.c, &err);
        if (rc != 0) {
            result_note(r, "error: redlock_client_new: %s", redlock_err_name(rc));
            goto fail;
        }
        event_base_loopexit(L.base, &st);
        event_base_dispatch(L.base);
    } else if (bench_async_client(L.base, o->retries, &L.c, why, sizeof(why)) < 0) {
        result_note(r, "error: %s", why);
        goto fail;
    }
    tick = event_new(L.base, -1, EV_PERSIST, load_tick, &L);
    event_add(tick, &tv);

    mcpu0 = o->before ? -1 : masters_cpu_s();   /* broken masters do not answer */
    if (o->before)
        o->before(o->before_arg);
    cpu0 = cpu_us();
    L.t_start = now_us();
    if (o->tl && o->tl->t0 == 0)
        o->tl->t0 = L.t_start;
    L.deadline = L.t_start + (uint64_t)(o->duration_s * 1e6);
    L.active = o->inflight;
    for (i = 0; i < o->inflight; i++) {
        L.slots[i].L = &L;
        L.slots[i].id = (unsigned)i;
        slot_next(&L.slots[i]);
    }
    event_base_dispatch(L.base);
    elapsed = now_us() - L.t_start;
    L.stopped = 1;

    r->duration_s = (double)elapsed / 1e6;
    r->cycles_per_s = (double)L.cycles / r->duration_s;
    if (L.cycles)
        r->cpu_us_per_cycle = (double)(cpu_us() - cpu0) / (double)L.cycles;
    masters_cpu_delta(r, mcpu0, L.cycles);
    if (L.stuck)
        result_note(r, "error: %d operations never completed "
                 "(callback missing?)", L.stuck);
    event_free(tick);
    /* in-flight calls (only when stuck) complete with ESHUTDOWN in here */
    redlock_client_free(L.c);
    event_base_free(L.base);
    free(L.slots);
    return L.stuck ? -1 : 0;

fail:
    if (L.base)
        event_base_free(L.base);
    free(L.slots);
    return -1;
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
    uint64_t ops, ok, failed, rel_failed;
    _Atomic uint64_t done;            /* read by the progress line */
    uint64_t errs[BENCH_NERR];
    struct hist acq, rel, fail;
};

static void *bthread_main(void *arg)
{
    struct bthread *b = arg;
    char key[96];
    uint64_t n = 0;

    while (now_us() < b->deadline && b->ops < b->max_ops && !stop_requested()) {
        redlock_lock *lock = NULL;
        uint64_t t0 = now_us(), t1;
        int len = snprintf(key, sizeof(key), "blocking:%d:%llu", b->id, (unsigned long long)n++);
        int rc = redlock_acquire(b->c, key, (size_t)len, config.ttl_ms, &lock, NULL, NULL);

        t1 = now_us();
        b->ops++;
        if (rc != 0) {
            b->failed++;
            hist_add(&b->fail, t1 - t0);
            b->errs[-rc > 0 && -rc < BENCH_NERR ? -rc : BENCH_NERR - 1]++;
            continue;
        }
        b->ok++;
        hist_add(&b->acq, t1 - t0);
        rc = redlock_release(b->c, lock, NULL, NULL);
        hist_add(&b->rel, now_us() - t1);
        if (rc != 0)
            b->rel_failed++;
        redlock_lock_free(lock);
        atomic_fetch_add(&b->done, 1);
    }
    return NULL;
}

int load_blocking(int threads, double duration_s, struct result *r)
{
    redlock_config cfg;
    redlock_error err;
    redlock_status st;
    redlock_client *c = NULL;
    struct bthread *b;
    uint64_t t0, cpu0, deadline, cycles = 0;
    double mcpu0;
    int i, j, started = 0, rc;

    b = calloc((size_t)threads, sizeof(*b));
    if (!b) {
        result_note(r, "error: out of memory");
        return -1;
    }
    bench_config_fill(&cfg, 0);
    memset(&err, 0, sizeof(err));
    rc = redlock_client_new(&cfg, NULL, &c, &err);
    if (rc != 0) {
        result_note(r, "error: redlock_client_new: %s: %s",
                 redlock_err_name(rc), err.msg);
        free(b);
        return -1;
    }
    /* wait until every master answers (connections open in the background) */
    deadline = now_us() + 5000000u;
    for (;;) {
        memset(&st, 0, sizeof(st));
        if (redlock_ping(c, &st, NULL) == 0 && st.n_answered == (uint32_t)config.n_masters)
            break;
        if (now_us() > deadline || stop_requested()) {
            result_note(r, "error: blocking client: not every master "
                     "answered PING within 5 s");
            redlock_client_free(c);
            free(b);
            return -1;
        }
        sleep_us(20000);
    }

    mcpu0 = masters_cpu_s();
    cpu0 = cpu_us();
    t0 = now_us();
    for (i = 0; i < threads; i++) {
        b[i].c = c;
        b[i].id = i;
        b[i].deadline = t0 + (uint64_t)(duration_s * 1e6);
        b[i].max_ops = config.max_ops / (uint64_t)threads + 1;
        hist_init(&b[i].acq);
        hist_init(&b[i].rel);
        hist_init(&b[i].fail);
        if (pthread_create(&b[i].th, NULL, bthread_main, &b[i]) != 0)
            break;
        started++;
    }
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
    r->duration_s = (double)(now_us() - t0) / 1e6;
    for (i = 0; i < started; i++) {
        r->ops += b[i].ops;
        r->ok += b[i].ok;
        r->failed += b[i].failed;
        r->release_failed += b[i].rel_failed;
        cycles += atomic_load(&b[i].done);
        hist_merge(&r->acq, &b[i].acq);
        hist_merge(&r->rel, &b[i].rel);
        hist_merge(&r->fail, &b[i].fail);
        for (j = 0; j < BENCH_NERR; j++)
            r->errs[j] += b[i].errs[j];
    }
    r->cycles_per_s = (double)cycles / r->duration_s;
    if (cycles)
        r->cpu_us_per_cycle = (double)(cpu_us() - cpu0) / (double)cycles;
    masters_cpu_delta(r, mcpu0, cycles);
    if (started < threads)
        result_note(r, "only %d of %d threads started", started, threads);
    redlock_client_free(c);
    free(b);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Scenarios                                                                */
/* ------------------------------------------------------------------------ */

void scenario_uncontended(void)
{
    struct result *r = result_new("uncontended");
    struct load_opts o = { .inflight = 1, .duration_s = config.duration_s,
                           .max_ops = config.max_ops, .retries = 0, .label = "uncontended" };

    if (load_async(&o, r) == 0)
        floor_fig.healthy_p99 = hist_pct(&r->acq, 0.99);
    result_extra(r, ",\"inflight\":1");
}

void scenario_throughput(void)
{
    struct result *r = result_new("throughput");
    struct load_opts o = { .inflight = config.inflight, .duration_s = config.duration_s,
                           .max_ops = config.max_ops, .retries = 0, .label = "throughput" };

    load_async(&o, r);
    result_extra(r, ",\"inflight\":%d", config.inflight);
}

void scenario_blocking(void)
{
    struct result *r = result_new("blocking");

    load_blocking(config.threads, config.duration_s, r);
    result_extra(r, ",\"threads\":%d", config.threads);
}
