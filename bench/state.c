/* state.c - the state every part of redlock-bench shares: the one config,
 * the floor's and the raw row's figures, and the results, one per scenario
 * row.
 *
 * Data only, at the bottom of the program: every other file may use it, and
 * it calls none of them, so the scenario files can sit above a common base
 * instead of calling each other in a loop.
 */
#include "bench.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct config config;
struct floor_figures floor_fig;
struct raw_figures raw_fig;
struct guard_figures guard_fig;

static struct result *results[BENCH_MAX_RESULTS];
static int n_results;

struct result *result_new(const char *scenario)
{
    struct result *r;

    if (n_results == BENCH_MAX_RESULTS) {
        fprintf(stderr, "redlock-bench: too many results\n");
        exit(2);
    }
    r = calloc(1, sizeof(*r));
    if (!r) {
        fprintf(stderr, "redlock-bench: out of memory\n");
        exit(2);
    }
    snprintf(r->scenario, sizeof(r->scenario), "%s", scenario);
    result_clear(r);
    results[n_results++] = r;
    return r;
}

/* A result that is not a row (a probe's scratch figures). */
void result_clear(struct result *r)
{
    char name[sizeof(r->scenario)];

    memcpy(name, r->scenario, sizeof(name));
    memset(r, 0, sizeof(*r));
    memcpy(r->scenario, name, sizeof(name));
    /* The members a scenario adds come after the line's own (report.c). */
    json_init_buf(&r->xj, r->extra, sizeof(r->extra));
    r->xj.need_comma = 1;
    hist_init(&r->acq);
    hist_init(&r->rel);
    hist_init(&r->fail);
    hist_init(&r->handoff);
    hist_init(&r->lib.attempts_h);
    hist_init(&r->lib.waited);
    r->cycles_per_s = -1;
    r->cpu_us_per_cycle = -1;
    r->masters_cpu_us_per_cycle = -1;
    r->masters_cores = -1;
    r->fairness_jain = -1;
    r->fairness_jain_waiters = -1;
    r->longest_run = -1;
    r->longest_jumps = -1;
    r->sat_out_ms = -1;
    r->handoff_ratio = -1;
    r->inversions = -1;
    r->syscalls_per_cycle = -1;
    r->epoll_ctl_per_cycle = -1;
    r->first_grant_ms = -1;
}

struct result *result_last(void)
{
    return n_results ? results[n_results - 1] : NULL;
}

struct result **results_all(int *n)
{
    *n = n_results;
    return results;
}

struct result *result_find(const char *scenario)
{
    int i;

    for (i = 0; i < n_results; i++)
        if (strcmp(results[i]->scenario, scenario) == 0 && !results[i]->skipped)
            return results[i];
    return NULL;
}

void results_free(void)
{
    int i;

    for (i = 0; i < n_results; i++)
        free(results[i]);
    n_results = 0;
}

int err_slot(int code)
{
    int i = -code;

    return i <= 0 || i >= BENCH_NERR ? BENCH_NERR - 1 : i;
}

void result_err(struct result *r, int code)
{
    r->errs[err_slot(code)]++;
}

void tally_init(struct tally *t)
{
    memset(t, 0, sizeof(*t));
    hist_init(&t->acq);
    hist_init(&t->rel);
    hist_init(&t->fail);
}

void tally_fail(struct tally *t, int code, uint64_t waited_us)
{
    t->failed++;
    hist_add(&t->fail, waited_us);
    t->errs[err_slot(code)]++;
}

void result_add_tally(struct result *r, const struct tally *t)
{
    int j;

    r->ops += t->ops;
    r->ok += t->ok;
    r->failed += t->failed;
    r->release_failed += t->rel_failed;
    hist_merge(&r->acq, &t->acq);
    hist_merge(&r->rel, &t->rel);
    hist_merge(&r->fail, &t->fail);
    for (j = 0; j < BENCH_NERR; j++)
        r->errs[j] += t->errs[j];
}

void result_note(struct result *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->note, sizeof(r->note), fmt, ap);
    va_end(ap);
}

void json_kv_hist(struct json *j, const char *key, const struct hist *h)
{
    if (!h->count) {
        json_kv_null(j, key);
        return;
    }
    json_key(j, key);
    json_obj_begin(j);
    json_kv_u64(j, "p50", hist_pct(h, 0.5));
    json_kv_u64(j, "p90", hist_pct(h, 0.9));
    json_kv_u64(j, "p99", hist_pct(h, 0.99));
    json_kv_u64(j, "p999", hist_pct(h, 0.999));
    json_kv_u64(j, "max", h->max);
    json_obj_end(j);
}
