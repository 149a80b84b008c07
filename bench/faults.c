/* faults.c - the reason redlock-bench exists: break masters on purpose and
 * measure what the engine does. kill N / pause N of the masters under a
 * sequential load, and the timeline: a steady load while masters die, are
 * paused and come back on a schedule, down to no quorum and back. Every
 * fault scenario ends with a heal, done by main() even if the scenario
 * failed.
 */
#include "bench.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* kill N / pause N: sequential acquire+release on distinct keys while N     */
/* masters are broken                                                       */
/* ------------------------------------------------------------------------ */

struct fault_arg {
    const char *action; /* "kill" or "pause" */
    int idx[BENCH_MAX_MASTERS];
    int k;
    int errors;
    struct hist raw_all, raw_live; /* raw quorum just before the fault */
    char raw_err[200];             /* why it is missing, or "" */
};

/* Just before the fault, what it will cost a raw quorum: the masters it
 * spares must answer in full where a healthy quorum picks the fastest. */
static void raw_before(struct fault_arg *fa)
{
    int keep[BENCH_MAX_MASTERS], k = 0, m, i, hit;

    hist_init(&fa->raw_all);
    hist_init(&fa->raw_live);
    for (m = 0; m < config.n_masters; m++) {
        for (i = 0, hit = 0; i < fa->k; i++)
            hit |= fa->idx[i] == m;
        if (!hit)
            keep[k++] = m;
    }
    if (k > config.n_masters / 2 && raw_quorum_compare(keep, k, 1.0, &fa->raw_all, &fa->raw_live,
                                                       fa->raw_err, sizeof(fa->raw_err)) != 0)
        hist_init(&fa->raw_live);
}

static void inject(void *arg)
{
    struct fault_arg *fa = arg;
    int i;

    raw_before(fa);
    for (i = 0; i < fa->k; i++)
        if (cluster_run(fa->action, fa->idx[i]) != 0)
            fa->errors++;
}

/* The raw quorum figures of raw_before(), in the row (JSON and note). */
static void raw_report(const struct fault_arg *fa, struct result *r)
{
    if (!fa->raw_live.count) {
        if (fa->raw_err[0] && !r->note[0])
            result_note(r, "raw quorum before the fault not measured: %s", fa->raw_err);
        return;
    }
    r->raw_all_p99 = hist_pct(&fa->raw_all, 0.99);
    r->raw_live_p99 = hist_pct(&fa->raw_live, 0.99);
    json_kv_hist(&r->xj, "raw_quorum_all_us", &fa->raw_all);
    json_kv_hist(&r->xj, "raw_quorum_spared_us", &fa->raw_live);
    if (!r->note[0])
        result_note(r,
                    "raw SET quorum just before the fault (no library, 100 ms slices "
                    "alternating): %d of %d masters p50 %llu us, p99 %llu us; %d of the %d it "
                    "spares p50 %llu us, p99 %llu us (p99 %.2f x)",
                    config.n_masters / 2 + 1, config.n_masters,
                    (unsigned long long)hist_pct(&fa->raw_all, 0.5),
                    (unsigned long long)r->raw_all_p99, config.n_masters / 2 + 1,
                    config.n_masters - fa->k, (unsigned long long)hist_pct(&fa->raw_live, 0.5),
                    (unsigned long long)r->raw_live_p99,
                    (double)r->raw_live_p99 / (double)(r->raw_all_p99 ? r->raw_all_p99 : 1));
}

static void fault_scenario(const char *name, const char *action, int k, double duration_s)
{
    struct result *r = result_new(name);
    struct fault_arg fa = { .action = action, .k = k };
    struct load_opts o = { .inflight = 1,
                           .duration_s = duration_s,
                           .max_ops = config.max_ops,
                           .retries = 0,
                           .label = name,
                           .before = inject,
                           .before_arg = &fa };

    if (k >= config.n_masters) {
        r->skipped = 1;
        result_note(r, "skipped: needs more than %d masters", k);
        return;
    }
    pick_masters(k, fa.idx);
    describe_masters(r->fault, sizeof(r->fault),
                     strcmp(action, "kill") == 0 ? "SIGKILL" : "SIGSTOP", fa.idx, k);
    load_async(&o, r);
    if (fa.errors && !r->note[0])
        result_note(r, "error: cluster-up.sh %s failed %d times", action, fa.errors);
    json_kv_u64(&r->xj, "inflight", 1);
    json_kv_u64(&r->xj, "retries", 0);
    raw_report(&fa, r);
}

void scenario_kill1(void)
{
    fault_scenario("kill1", "kill", 1, config.duration_s);
}

void scenario_kill2(void)
{
    fault_scenario("kill2", "kill", 2, config.duration_s);
}

void scenario_kill3(void)
{
    struct result *r, probe;
    redlock_config def;
    struct load_opts o = {
        .inflight = 1, .duration_s = 5.0, .max_ops = 3, .label = "kill3-probe", .settle_ms = 300
    };

    /* every acquire fails here, quickly: a second is plenty */
    fault_scenario("kill3", "kill", config.n_masters / 2 + 1,
                   config.duration_s < 1.0 ? config.duration_s : 1.0);
    /* The figure above is one attempt (retry_count 0). An application with
     * the library's default retries waits for them too: measure a few. */
    redlock_config_init(&def);
    o.retries = def.retry_count;
    memset(&probe, 0, sizeof(probe));
    hist_init(&probe.acq);
    hist_init(&probe.rel);
    hist_init(&probe.fail);
    r = result_last();
    if (!r || r->skipped || load_async(&o, &probe) != 0 || probe.fail.count == 0)
        return;
    json_key(&r->xj, "time_to_fail_default_retries_us");
    json_obj_begin(&r->xj);
    json_kv_u64(&r->xj, "retry_count", def.retry_count);
    json_kv_u64(&r->xj, "retry_delay_ms", def.retry_delay_ms);
    json_kv_u64(&r->xj, "retry_jitter_ms", def.retry_jitter_ms);
    json_kv_u64(&r->xj, "n", probe.fail.count);
    json_kv_u64(&r->xj, "p50", hist_pct(&probe.fail, 0.5));
    json_kv_u64(&r->xj, "max", probe.fail.max);
    json_obj_end(&r->xj);
    result_note(r,
                "with the default %u retries (delay %u ms + jitter %u ms) an acquire fails after "
                "%.0f ms (p50 of %llu)",
                def.retry_count, def.retry_delay_ms, def.retry_jitter_ms,
                (double)hist_pct(&probe.fail, 0.5) / 1000.0, (unsigned long long)probe.fail.count);
}

void scenario_pause2(void)
{
    fault_scenario("pause2", "pause", 2, config.duration_s);
}

/* ------------------------------------------------------------------------ */
/* Timeline: steady load while masters die and come back on a schedule      */
/* ------------------------------------------------------------------------ */
struct tl_arg {
    struct schedule *s;
    struct timeline *tl;
    pthread_t th;
    int started;
};

static void *tl_thread(void *arg)
{
    sched_run(arg);
    return NULL;
}

/* Called by load_async() once the client is warm: the clock starts now. */
static void tl_start(void *arg)
{
    struct tl_arg *a = arg;

    a->tl->t0 = now_us();
    a->s->t0 = a->tl->t0;
    a->started = pthread_create(&a->th, NULL, tl_thread, a->s) == 0;
}

/* minority down, minority paused, then a majority down, then all back */
static void timeline_schedule(struct schedule *s, struct result *r, double T)
{
    int idx[BENCH_MAX_MASTERS] = { 0 }, q = config.n_masters / 2 + 1, i;
    /* the majority stays down this long: longer than a ttl, and the heal
     * may declare them empty (cluster.c: heal_declared) */
    int declare = T * 1.5 / 12 > (double)config.ttl_ms / 1000.0;

    /* at (in twelfths of T), action, which of the picked masters; the
     * second of each pair only where there are five masters or more */
    static const struct {
        double at;
        const char *action;
        int pick;
    } plan[] = {
        { 1, "kill", 0 },  { 2, "kill", 1 },  { 3, "restart", 0 }, { 4, "restart", 1 },
        { 5, "pause", 2 }, { 6, "pause", 3 }, { 7, "resume", 2 },  { 7, "resume", 3 },
    };

    pick_masters(config.n_masters, idx);
    for (i = 0; i < (int)(sizeof(plan) / sizeof(plan[0])); i++)
        if (plan[i].pick % 2 == 0 || config.n_masters >= 5)
            sched_add(s, T * plan[i].at / 12, plan[i].action, idx[plan[i].pick]);
    for (i = 0; i < q; i++)
        sched_add(s, T * 8 / 12, "kill", idx[i]);
    if (declare)
        sched_add_declared_heal(s, T * 9.5 / 12);
    else
        sched_add(s, T * 9.5 / 12, "heal", -1);
    snprintf(r->fault, sizeof(r->fault),
             "schedule over %.0f s: kill 2, restart, pause 2, "
             "resume, kill %d (no quorum) for %.1f s, heal%s",
             T, q, T * 1.5 / 12,
             declare ? " and declare the healed masters empty"
                     : " (not declared: down for less than a ttl)");
}

/* When the load client connected again to each master it reconnected to
 * after the heal, in ms from @ref (negative: before it, while the load was
 * held off, so its own reconnect timer did it): into the JSON and @buf. */
static void timeline_reconnects(const struct timeline *tl, struct result *r, uint64_t ref,
                                char *buf, size_t len)
{
    size_t used = 0;
    char port[16];
    int m;

    buf[0] = '\0';
    json_key(&r->xj, "reconnect_ms");
    json_obj_begin(&r->xj);
    for (m = 0; m < config.n_masters && used < len; m++) {
        double ms = ((double)tl->connected_us[m] - (double)ref) / 1000.0;

        if (tl->connected_us[m] <= tl->heal_us)
            continue;
        snprintf(port, sizeof(port), "%d", config.port[m]);
        json_kv_double(&r->xj, port, ms, 1);
        used += (size_t)snprintf(buf + used, len - used, "%s:%d %+.1f ms", used ? ", " : "",
                                 config.port[m], ms);
    }
    json_obj_end(&r->xj);
}

/* Issue 13: how fast the client uses masters that came back. From the
 * moment the healed masters could vote again to the first acquire that
 * succeeds: when they were declared empty (the timeline's heal declares
 * them), or else when a quorum answers PING again (the probe in cluster.c;
 * then the restart guard's window is part of the figure). A grant that
 * comes first counts as 0. */
static void timeline_recovery(struct timeline *tl, struct result *r)
{
    uint64_t ref = tl->declared_us ? tl->declared_us : tl->quorum_us;
    char rec[160];

    if (!tl->heal_us)
        return;
    json_kv_u64(&r->xj, "declared_masters", tl->declared);
    if (tl->quorum_us)
        json_kv_double(&r->xj, "quorum_back_after_heal_ms",
                       (double)(tl->quorum_us - tl->heal_us) / 1000.0, 1);
    else
        json_kv_null(&r->xj, "quorum_back_after_heal_ms");
    if (tl->declared_us)
        json_kv_double(&r->xj, "declared_after_heal_ms",
                       (double)(tl->declared_us - tl->heal_us) / 1000.0, 1);
    if (!tl->recovered_us || !ref) {
        json_kv_null(&r->xj, "first_grant_after_heal_ms");
        result_note(r, "%s%s", tl->declare_err[0] ? "error: declare: " : "",
                    tl->declare_err[0] ? tl->declare_err
                    : !tl->recovered_us
                        ? "no acquire succeeded after the final heal"
                        : "the quorum probe never saw a quorum after the final heal");
        return;
    }
    timeline_event(tl, tl->recovered_us, "first grant");
    timeline_reconnects(tl, r, ref, rec, sizeof(rec));
    r->first_grant_ms = tl->recovered_us > ref ? (double)(tl->recovered_us - ref) / 1000.0 : 0.0;
    json_kv_double(&r->xj, "first_grant_after_heal_ms", r->first_grant_ms, 1);
    json_kv_u64(&r->xj, "failed_before_first_grant", tl->failed_before_grant);
    json_kv_double(&r->xj, "recovery_after_heal_ms",
                   (double)(tl->recovered_us - tl->heal_us) / 1000.0, 1);
    if (tl->declared_us)
        result_note(r,
                    "first grant after heal: %.1f ms after the %zu healed masters were declared "
                    "empty (%llu acquires failed in between; the client reconnected %s); the "
                    "load was held off from the heal to the declare, %.0f ms, as an operator "
                    "declares masters before they serve",
                    r->first_grant_ms, tl->declared, (unsigned long long)tl->failed_before_grant,
                    rec[0] ? rec : "to none", (double)(tl->declared_us - tl->heal_us) / 1000.0);
    else
        result_note(r,
                    "%s%s%sfirst grant after heal: %.1f ms after a quorum answered PING "
                    "again, the restart guard's window included (not declared empty); the "
                    "client reconnected %s",
                    tl->declare_err[0] ? "error: declare: " : "", tl->declare_err,
                    tl->declare_err[0] ? "; " : "", r->first_grant_ms, rec[0] ? rec : "to none");
}

void scenario_timeline(void)
{
    struct result *r = result_new("timeline");
    struct timeline *tl = calloc(1, sizeof(*tl));
    struct schedule s;
    struct tl_arg a;
    double T = config.duration_s * 6.0;
    int i;
    struct load_opts o = { .inflight = 4,
                           .max_ops = config.max_ops,
                           .retries = 0,
                           .fail_backoff_us = config.fail_backoff_us,
                           .label = "timeline",
                           .before = tl_start,
                           .before_arg = &a };

    if (T < 10.0)
        T = 10.0;
    if (T > TL_MAX_BUCKETS * (TL_BUCKET_US / 1e6))
        T = TL_MAX_BUCKETS * (TL_BUCKET_US / 1e6);
    if (!tl || !(tl->acq = calloc(TL_MAX_BUCKETS, sizeof(*tl->acq)))) {
        result_note(r, "error: out of memory");
        free(tl);
        return;
    }
    tl->n_buckets = (int)(T * 10.0);
    for (i = 0; i < tl->n_buckets; i++)
        hist_init(&tl->acq[i]);
    memset(&s, 0, sizeof(s));
    memset(&a, 0, sizeof(a));
    s.tl = tl;
    a.s = &s;
    a.tl = tl;
    timeline_schedule(&s, r, T);

    o.duration_s = T;
    o.tl = tl;
    load_async(&o, r);
    if (a.started)
        pthread_join(a.th, NULL);
    if (s.errors && !r->note[0])
        result_note(r, "error: %d cluster-up.sh commands failed", s.errors);
    json_kv_u64(&r->xj, "inflight", 4);
    json_kv_u64(&r->xj, "bucket_ms", TL_BUCKET_US / 1000u);
    json_kv_u64(&r->xj, "fail_backoff_us", config.fail_backoff_us);
    timeline_recovery(tl, r);
    report_timeline(tl);
    free(tl->acq);
    free(tl);
}
