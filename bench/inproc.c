/* inproc.c - K waiters inside one process, sharing one async client, on
 * one resource: does the library serve its own waiters in the order they
 * started waiting, and does any of them give up?
 *
 * Counts inversions (a waiter granted before one that arrived earlier) and
 * checks the windows for overlap (windows.c). Why arrival order is exact
 * here: bench/RESULTS.md, "How the rows measure" (contention-inproc).
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

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
    const struct wait_policy *w;
    struct result *r;
    struct waiter *ws;
    int k, active;
    uint32_t hold_us;
    char res[96];
    uint64_t next_seq, deadline, t_start;
    uint64_t grants[BENCH_MAX_CLIENTS];
    struct owned_window *wins; /* every hold, for the overlap check */
    size_t n_wins, cap_wins;
    int oom;
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
    hist_add(&ip->r->rel, wt->win.rel_done - wt->win.end);
    if (status != 0)
        ip->r->release_failed++;
    redlock_lock_free(lock);
    if (ip->n_wins == ip->cap_wins) {
        size_t cap = ip->cap_wins ? 2 * ip->cap_wins : 4096;
        struct owned_window *nw = realloc(ip->wins, cap * sizeof(*nw));

        if (!nw) {
            ip->oom = 1;
            ip->deadline = 0; /* stop: the check would be incomplete */
        } else {
            ip->wins = nw;
            ip->cap_wins = cap;
        }
    }
    if (ip->n_wins < ip->cap_wins)
        ip->wins[ip->n_wins++] = wt->win;
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
        wt->ip->r->release_failed++;
        redlock_lock_free(wt->lock);
        waiter_next(wt);
    }
}

/* Every waiter still waiting that arrived before @wt was overtaken. */
static void count_inversions(struct inproc *ip, const struct waiter *wt)
{
    int i;

    for (i = 0; i < ip->k; i++)
        if (ip->ws[i].waiting && ip->ws[i].seq < wt->seq)
            ip->r->inversions++;
}

static void on_acquired(redlock_client *c, int status, redlock_lock *lock,
                        const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct waiter *wt = arg;
    struct inproc *ip = wt->ip;
    uint64_t t = now_us();
    struct timeval tv = { (time_t)(ip->hold_us / 1000000u), (suseconds_t)(ip->hold_us % 1000000u) };
    int64_t v;

    (void)c;
    (void)err;
    (void)out;
    wt->waiting = 0;
    if (status != 0) {
        ip->r->failed++;
        hist_add(&ip->r->fail, t - wt->t0);
        result_err(ip->r, status);
        waiter_next(wt);
        return;
    }
    count_inversions(ip, wt);
    ip->r->ok++;
    ip->grants[wt->id]++;
    hist_add(&ip->r->acq, t - wt->t0);
    v = redlock_lock_validity_ms(lock);
    wt->lock = lock;
    wt->win = (struct owned_window){ t, t + (v > 0 ? (uint64_t)v * 1000u : 0), 0, wt->id };
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
    ip->r->ops++;
    rc = wait_acquire_async(ip->c, ip->w, ip->res, config.ttl_ms, on_acquired, wt);
    if (rc != 0) {
        /* refused at once: the callback will not run; a refusing client
         * would refuse again, so this waiter stops */
        wt->waiting = 0;
        ip->r->failed++;
        result_err(ip->r, rc);
        if (--ip->active == 0)
            event_base_loopbreak(ip->base);
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct inproc *ip = arg;

    (void)fd;
    (void)what;
    progress("contention-inproc", (double)(now_us() - ip->t_start) / 1e6,
             (double)(ip->deadline - ip->t_start) / 1e6, ip->r->ok, ip->r->failed);
}

static void inproc_loop(struct inproc *ip, double duration_s)
{
    struct timeval tv = { 0, 200000 };
    struct event *tick = event_new(ip->base, -1, EV_PERSIST, on_tick, ip);
    int i;

    event_add(tick, &tv);
    ip->t_start = now_us();
    ip->deadline = ip->t_start + (uint64_t)(duration_s * 1e6);
    ip->active = ip->k;
    for (i = 0; i < ip->k; i++) {
        ip->ws[i] = (struct waiter){ .ip = ip, .id = i };
        ip->ws[i].hold = evtimer_new(ip->base, on_hold_done, &ip->ws[i]);
    }
    /* all K start waiting at once, in index order */
    for (i = 0; i < ip->k; i++)
        waiter_next(&ip->ws[i]);
    event_base_dispatch(ip->base);
    for (i = 0; i < ip->k; i++)
        event_free(ip->ws[i].hold);
    event_free(tick);
}

int inproc_run(int waiters, double duration_s, uint32_t hold_us, const struct wait_policy *w,
               struct result *r)
{
    struct inproc ip = { .w = w,
                         .r = r,
                         .k = waiters < BENCH_MAX_CLIENTS ? waiters : BENCH_MAX_CLIENTS,
                         .hold_us = hold_us };
    redlock_config cfg;
    uint64_t cpu0;
    struct mstat m0 = { 0 };
    char why[300];

    bench_config_fill(&cfg, 0);
    wait_config(w, &cfg);
    opstats_hook(&r->lib, &cfg);
    /* A precise timer: on this machine's kernel a plain base's 1 ms timer
     * fires after about 5 ms (epoll_wait's millisecond timeout), which
     * would make the hold five times what the other rows hold. */
    struct event_config *ecfg = event_config_new();
    if (ecfg) {
        event_config_set_flag(ecfg, EVENT_BASE_FLAG_PRECISE_TIMER);
        ip.base = event_base_new_with_config(ecfg);
        event_config_free(ecfg);
    }
    ip.ws = calloc((size_t)ip.k, sizeof(*ip.ws));
    if (!ip.base || !ip.ws || bench_async_client(ip.base, &cfg, &ip.c, why, sizeof(why)) < 0) {
        result_note(r, "error: %s", ip.base && ip.ws ? why : "out of memory");
        goto out;
    }
    snprintf(ip.res, sizeof(ip.res), "inproc:%llu", (unsigned long long)bench_rand() % 1000000u);
    r->inversions = 0;
    opstats_start(&r->lib);
    masters_stat(&m0); /* the masters' CPU per grant: issue 31's measure */
    cpu0 = cpu_us();
    /* waiters stop queueing at the deadline; those still waiting then are
     * served (or give up) after it, and count: the rates are over the
     * whole time the lock was wanted */
    inproc_loop(&ip, duration_s);
    r->duration_s = (double)(now_us() - ip.t_start) / 1e6;
    r->cycles_per_s = (double)r->ok / r->duration_s;
    if (r->ok)
        r->cpu_us_per_cycle = (double)(cpu_us() - cpu0) / (double)r->ok;
    masters_delta(r, &m0, r->ok);
    result_fairness(r, ip.grants, ip.k);
    windows_check(ip.wins, ip.n_wins, ip.t_start, r);
    if (ip.oom)
        result_note(r, "error: out of memory for the lock windows; stopped early");
    redlock_client_free(ip.c);
out:
    if (ip.base)
        event_base_free(ip.base);
    free(ip.ws);
    free(ip.wins);
    return r->note[0] ? -1 : 0;
}
