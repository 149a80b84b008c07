/* windows.c - what the lock windows on one resource say, whoever held them
 * (forked processes or waiters inside one process).
 *
 * Windows on CLOCK_MONOTONIC, sorted by start: overlaps from another owner
 * (the safety check), then grants to another owner, hand-off latency, the
 * longest time nobody held the lock, runs of grants to one process, Jain's
 * index. Why comparable across processes: bench/RESULTS.md, "How the rows
 * measure" (lock windows).
 */
#include "bench.h"

#include <stdbool.h>
#include <stdlib.h>

static int cmp_start(const void *a, const void *b)
{
    const struct owned_window *x = a, *y = b;

    return x->start < y->start ? -1 : x->start > y->start;
}

/* A hand-off: the grant after another owner's. Its latency runs from that
 * release returning to this acquire returning; an acquire can return first
 * (the releaser's reply, or its thread, was late), which counts as 0. */
static void count_handoff(const struct owned_window *prev, const struct owned_window *w,
                          struct result *r)
{
    if (w->owner == prev->owner || !prev->rel_done)
        return;
    r->owner_changes++;
    if (w->start >= prev->rel_done) {
        hist_add(&r->handoff, w->start - prev->rel_done);
    } else {
        r->early_handoffs++;
        hist_add(&r->handoff, 0);
    }
}

/* Sorts @w in place and fills @r's checked, violations, max_overlap_us,
 * owner_changes, early_handoffs, handoff and the longest gap after
 * @t_start in which nobody held the lock (the price of a fault, or of the
 * guard against it). */
void windows_check(struct owned_window *w, size_t n, uint64_t t_start, struct result *r)
{
    uint64_t max_end = t_start, gap = 0, gap_at = 0;
    int max_owner = -1;
    size_t j;

    r->checked = n;
    qsort(w, n, sizeof(*w), cmp_start);
    for (j = 0; j < n; j++) {
        if (j > 0)
            count_handoff(&w[j - 1], &w[j], r);
        if (w[j].start > max_end && w[j].start - max_end > gap) {
            gap = w[j].start - max_end;
            gap_at = max_end - t_start;
        }
        if (w[j].start < max_end && w[j].owner != max_owner) {
            uint64_t until = w[j].end < max_end ? w[j].end : max_end;
            double ov = (double)(until - w[j].start);

            r->violations++;
            if (ov > r->max_overlap_us)
                r->max_overlap_us = ov;
        }
        if (w[j].end > max_end) {
            max_end = w[j].end;
            max_owner = w[j].owner;
        }
    }
    r->max_gap_ms = (double)gap / 1000.0;
    r->max_gap_at_s = (double)gap_at / 1e6;
}

/* Did each grant of @w (sorted by start) go ahead of an older waiter of
 * another process, one that asked before it and was granted after it? A
 * sweep from the last grant keeps each process's oldest later asker.
 * Waiters never granted (still waiting at the end, or failed) are not
 * seen, so this can only undercount. @jumped: n flags. */
static void windows_jumped(const struct owned_window *w, size_t n, int per, char *jumped)
{
    uint64_t oldest[BENCH_MAX_CLIENTS];
    int procs = 0;
    size_t j;

    for (j = 0; j < n; j++)
        if (w[j].owner / per + 1 > procs)
            procs = w[j].owner / per + 1;
    for (int q = 0; q < BENCH_MAX_CLIENTS; q++)
        oldest[q] = UINT64_MAX;
    for (j = n; j-- > 0;) {
        int p = w[j].owner / per;

        jumped[j] = 0;
        for (int q = 0; q < procs && q < BENCH_MAX_CLIENTS; q++)
            if (q != p && oldest[q] < w[j].asked)
                jumped[j] = 1;
        if (p < BENCH_MAX_CLIENTS && w[j].asked < oldest[p])
            oldest[p] = w[j].asked;
    }
}

/* Runs of grants to one process, each process's owners being @per in a
 * row (owner / per), in the order of @w: windows_check() sorted them by
 * start, which is the order of the grants since no two overlap. Only
 * grants before @t_end count: while the row runs every process has
 * waiters queued, so a longer run than the library's bound is one it let
 * happen while others waited; after it, the last waiters drain alone. */
void windows_runs(const struct owned_window *w, size_t n, int per, uint64_t t_end, struct result *r)
{
    int64_t run = 0, jumps = 0;
    char *jumped = malloc(n ? n : 1);
    size_t j;

    r->longest_run = 0;
    r->process_changes = 0;
    r->longest_jumps = jumped ? 0 : -1;
    if (jumped)
        windows_jumped(w, n, per, jumped);
    for (j = 0; j < n && w[j].start < t_end; j++) {
        bool same = j > 0 && w[j].owner / per == w[j - 1].owner / per;

        run = same ? run + 1 : 1;
        r->process_changes += j > 0 && !same;
        if (run > r->longest_run)
            r->longest_run = run;
        /* A run of queue jumps: what local_run_max bounds (B - 1). */
        jumps = same && jumped && jumped[j] ? jumps + 1 : 0;
        if (jumped && jumps > r->longest_jumps)
            r->longest_jumps = jumps;
    }
    free(jumped);
}

/* 0, or -1 when a fixed log is full or the heap is out. */
int winlog_add(struct winlog *l, const struct owned_window *w)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4096;
        struct owned_window *nw;

        if (l->fixed || !(nw = realloc(l->w, cap * sizeof(*nw))))
            return -1;
        l->w = nw;
        l->cap = cap;
    }
    l->w[l->n++] = *w;
    return 0;
}

/* Jain's fairness index (sum x)^2 / (n sum x^2): 1 when every owner got
 * as many grants, 1/n when one got them all. */
double jain(const uint64_t *x, int n)
{
    double sum = 0, sq = 0;
    int i;

    for (i = 0; i < n; i++) {
        sum += (double)x[i];
        sq += (double)x[i] * (double)x[i];
    }
    return sq > 0 ? sum * sum / ((double)n * sq) : -1;
}

void result_fairness(struct result *r, const uint64_t *grants, int n)
{
    int i;

    r->n_owners = n < BENCH_MAX_CLIENTS ? n : BENCH_MAX_CLIENTS;
    for (i = 0; i < r->n_owners; i++)
        r->grants_by[i] = grants[i];
    r->fairness_jain = jain(grants, r->n_owners);
}

/* The JSON members every contention row has. */
void contention_json(struct result *r, int clients, uint32_t hold_us)
{
    double d = r->duration_s > 0 ? r->duration_s : 1;
    int i;

    struct json *j = &r->xj;

    json_kv_i64(j, "clients", clients);
    json_kv_u64(j, "hold_us", hold_us);
    json_kv_double(j, "grants_per_s", (double)r->ok / d, 0);
    json_kv_double(j, "handoffs_per_s", (double)r->ok / d, 0);
    json_kv_u64(j, "owner_changes", r->owner_changes);
    json_kv_double(j, "owner_changes_per_s", (double)r->owner_changes / d, 0);
    json_kv_double(j, "owner_change_share", r->ok ? (double)r->owner_changes / (double)r->ok : 0.0,
                   3);
    json_kv_u64(j, "early_handoffs", r->early_handoffs);
    json_kv_double(j, "max_overlap_us", r->max_overlap_us, 0);
    json_kv_hist(j, "handoff_us", &r->handoff);
    json_key(j, "grants_per_process");
    json_arr_begin(j);
    for (i = 0; i < r->n_owners; i++)
        json_u64(j, r->grants_by[i]);
    json_arr_end(j);
    if (r->fairness_jain >= 0)
        json_kv_double(j, "fairness_jain", r->fairness_jain, 3);
    else
        json_kv_null(j, "fairness_jain");
    json_kv_double(j, "max_gap_ms", r->max_gap_ms, 1);
    json_kv_double(j, "max_gap_at_s", r->max_gap_at_s, 2);
}
