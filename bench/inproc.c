/* inproc.c - K waiters inside one process, sharing one async client, on
 * one resource: does the library serve its own waiters in the order they
 * started waiting, and does any of them give up?
 *
 * Counts inversions (a waiter granted before one that arrived earlier) and
 * logs the windows for the overlap check (windows.c). contention-inproc is
 * one such process; contention-mixed forks several (contend.c). Why
 * arrival order is exact here: bench/RESULTS.md, "How the rows measure"
 * (contention-inproc).
 */
#include "bench.h"

#include <stdlib.h>

#include <event2/event.h>

struct inproc;

struct waiter {
    struct inproc *ip;
    int id;
    int waiting;             /* an acquire is in flight */
    uint64_t seq;            /* arrival number of that acquire */
    uint64_t t0;             /* when it was called */
    struct owned_window win; /* the current hold */
    redlock_lock *lock;
    struct event *hold;
};

struct inproc {
    struct event_base *base;
    redlock_client *c;
    struct waiters_opts o;
    struct waiters_out *out;
    struct waiter ws[BENCH_MAX_CLIENTS];
    int active;
    uint64_t next_seq, deadline, t_start;
};

static void waiter_next(struct waiter *wt);

static void on_released(redlock_client *c, int status, redlock_lock *lock,
                        const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct waiter *wt = arg;
    struct inproc *ip = wt->ip;

    (void)c;
    (void)out;
    (void)err;
    wt->win.rel_done = now_us();
    hist_add(&ip->out->t.rel, wt->win.rel_done - wt->win.end);
    if (status != 0)
        ip->out->t.rel_failed++;
    redlock_lock_free(lock);
    if (winlog_add(&ip->out->wins, &wt->win) < 0) {
        ip->out->full = 1;
        ip->deadline = 0; /* stop: the check would be incomplete */
    }
    waiter_next(wt);
}

static void on_hold_done(evutil_socket_t fd, short what, void *arg)
{
    struct waiter *wt = arg;
    uint64_t t = now_us();

    (void)fd;
    (void)what;
    wt->win.end = t < wt->win.end ? t : wt->win.end;
    if (redlock_release_async(wt->ip->c, wt->lock, on_released, wt, NULL) != 0) {
        wt->ip->out->t.rel_failed++;
        redlock_lock_free(wt->lock);
        waiter_next(wt);
    }
}

/* Every waiter still waiting that arrived before @wt was overtaken. */
static void count_inversions(struct inproc *ip, const struct waiter *wt)
{
    int i;

    for (i = 0; i < ip->o.k; i++)
        if (ip->ws[i].waiting && ip->ws[i].seq < wt->seq)
            ip->out->inversions++;
}

static void on_acquired(redlock_client *c, int status, redlock_lock *lock,
                        const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct waiter *wt = arg;
    struct inproc *ip = wt->ip;
    struct tally *tl = &ip->out->t;
    uint64_t t = now_us();
    struct timeval tv = { (time_t)(ip->o.hold_us / 1000000u),
                          (suseconds_t)(ip->o.hold_us % 1000000u) };
    int64_t v;

    (void)c;
    (void)err;
    (void)out;
    wt->waiting = 0;
    if (status != 0) {
        tally_fail(tl, status, t - wt->t0);
        waiter_next(wt);
        return;
    }
    count_inversions(ip, wt);
    tl->ok++;
    ip->out->ok_now = tl->ok;
    ip->out->grants[wt->id]++;
    hist_add(&tl->acq, t - wt->t0);
    v = redlock_lock_validity_ms(lock);
    wt->lock = lock;
    wt->win = (struct owned_window){ t, t + (v > 0 ? (uint64_t)v * 1000u : 0), 0,
                                     ip->o.owner0 + wt->id, wt->t0 };
    evtimer_add(wt->hold, &tv);
}

static void waiter_next(struct waiter *wt)
{
    struct inproc *ip = wt->ip;
    int rc;

    if (now_us() >= ip->deadline || stop_requested()) {
        if (--ip->active == 0)
            event_base_loopbreak(ip->base);
        return;
    }
    wt->seq = ip->next_seq++;
    wt->t0 = now_us();
    wt->waiting = 1;
    ip->out->t.ops++;
    rc = wait_acquire_async(ip->c, ip->o.wait, ip->o.res, ip->o.ttl_ms, on_acquired, wt);
    if (rc != 0) {
        /* refused at once: the callback will not run; a refusing client
         * would refuse again, so this waiter stops */
        wt->waiting = 0;
        tally_fail(&ip->out->t, rc, 0);
        if (--ip->active == 0)
            event_base_loopbreak(ip->base);
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct inproc *ip = arg;

    (void)fd;
    (void)what;
    progress(ip->o.label, (double)(now_us() - ip->t_start) / 1e6,
             (double)(ip->deadline - ip->t_start) / 1e6, ip->out->t.ok, ip->out->t.failed);
}

/* The waiters' client, on a loop of their own. NULL, with @why filled, if
 * it cannot start. */
struct inproc *inproc_open(const redlock_config *cfg, const struct waiters_opts *o,
                           struct waiters_out *out, char *why, size_t whylen)
{
    struct inproc *ip = calloc(1, sizeof(*ip));
    struct event_config *ecfg = event_config_new();
    int i;

    if (!ip || !ecfg) {
        snprintf(why, whylen, "out of memory");
        goto fail;
    }
    ip->o = *o;
    ip->o.k = o->k < BENCH_MAX_CLIENTS ? o->k : BENCH_MAX_CLIENTS;
    ip->out = out;
    /* A precise timer: on this machine's kernel a plain base's 1 ms timer
     * fires after about 5 ms (epoll_wait's millisecond timeout), which
     * would make the hold five times what the other rows hold. */
    event_config_set_flag(ecfg, EVENT_BASE_FLAG_PRECISE_TIMER);
    if (!(ip->base = event_base_new_with_config(ecfg))) {
        snprintf(why, whylen, "event_base_new_with_config failed");
        goto fail;
    }
    for (i = 0; i < ip->o.k; i++) {
        ip->ws[i] = (struct waiter){ .ip = ip, .id = i };
        if (!(ip->ws[i].hold = evtimer_new(ip->base, on_hold_done, &ip->ws[i]))) {
            snprintf(why, whylen, "out of memory");
            goto fail;
        }
    }
    if (bench_async_client(ip->base, cfg, &ip->c, why, whylen) < 0)
        goto fail;
    event_config_free(ecfg);
    return ip;
fail:
    if (ecfg)
        event_config_free(ecfg);
    inproc_close(ip);
    return NULL;
}

/* All K start waiting at once, in index order, and stop queueing at
 * @t_end (monotonic µs); those still waiting then are served (or give up)
 * after it, and count. */
void inproc_serve(struct inproc *ip, uint64_t t_end)
{
    struct timeval tv = { 0, 200000 };
    struct event *tick = NULL;
    int i;

    if (ip->o.label && (tick = event_new(ip->base, -1, EV_PERSIST, on_tick, ip)))
        event_add(tick, &tv);
    ip->t_start = now_us();
    ip->deadline = t_end;
    ip->active = ip->o.k;
    for (i = 0; i < ip->o.k; i++)
        waiter_next(&ip->ws[i]);
    event_base_dispatch(ip->base);
    if (tick)
        event_free(tick);
}

void inproc_close(struct inproc *ip)
{
    int i;

    if (!ip)
        return;
    redlock_client_free(ip->c);
    for (i = 0; i < ip->o.k; i++)
        if (ip->ws[i].hold)
            event_free(ip->ws[i].hold);
    if (ip->base)
        event_base_free(ip->base);
    free(ip);
}

/* The contention-inproc row: one process of @waiters. */
int inproc_run(int waiters, double duration_s, uint32_t hold_us, const struct wait_policy *w,
               struct result *r)
{
    struct waiters_opts o = { .k = waiters < BENCH_MAX_CLIENTS ? waiters : BENCH_MAX_CLIENTS,
                              .ttl_ms = config.ttl_ms,
                              .hold_us = hold_us,
                              .wait = w,
                              .label = "contention-inproc" };
    struct waiters_out *out = calloc(1, sizeof(*out));
    struct inproc *ip = NULL;
    redlock_config cfg;
    uint64_t cpu0, t0;
    struct mstat m0 = { 0 };
    char why[300], res[96];

    bench_config_fill(&cfg, 0);
    wait_config(w, &cfg);
    opstats_hook(&r->lib, &cfg);
    snprintf(res, sizeof(res), "inproc:%llu", (unsigned long long)bench_rand() % 1000000u);
    o.res = res;
    if (!out) {
        result_note(r, "error: out of memory");
        return -1;
    }
    tally_init(&out->t);
    if (!(ip = inproc_open(&cfg, &o, out, why, sizeof(why)))) {
        result_note(r, "error: %s", why);
        goto out;
    }
    opstats_start(&r->lib);
    masters_stat(&m0); /* the masters' CPU per grant: issue 31's measure */
    cpu0 = cpu_us();
    t0 = now_us();
    /* the rates are over the whole time the lock was wanted, the drain
     * after the deadline included */
    inproc_serve(ip, t0 + (uint64_t)(duration_s * 1e6));
    r->duration_s = (double)(now_us() - t0) / 1e6;
    result_add_tally(r, &out->t);
    r->inversions = out->inversions;
    r->cycles_per_s = (double)r->ok / r->duration_s;
    if (r->ok)
        r->cpu_us_per_cycle = (double)(cpu_us() - cpu0) / (double)r->ok;
    masters_delta(r, &m0, r->ok);
    result_fairness(r, out->grants, o.k);
    windows_check(out->wins.w, out->wins.n, t0, r);
    if (out->full)
        result_note(r, "error: out of memory for the lock windows; stopped early");
out:
    inproc_close(ip);
    free(out->wins.w);
    free(out);
    return r->note[0] ? -1 : 0;
}
