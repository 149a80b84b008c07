/* floor.c - the physical floor every other figure is divided by.
 *
 * Plain hiredis async on a libevent loop in this process, no redlock: one
 * master's round trips, the quorum SET to all N, and the masters' capacity
 * (capacity.c; connections and raw commands: raw.c). What each phase means:
 * bench/RESULTS.md, "How the rows measure" (floor).
 */
#include "floor.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

/* --- single master ------------------------------------------------------ */

static void single_next(struct floor_state *fs);

static void single_on_del(redisAsyncContext *ac, void *reply, void *pd)
{
    struct floor_state *fs = pd;

    (void)ac;
    if (!floor_reply_ok(reply)) {
        fs->broken = 1;
        event_base_loopbreak(fs->base);
        return;
    }
    hist_add(&fs->del, now_us() - fs->t0);
    single_next(fs);
}

static void single_on_set(redisAsyncContext *ac, void *reply, void *pd)
{
    struct floor_state *fs = pd;
    uint64_t t = now_us();

    (void)ac;
    if (!floor_reply_ok(reply)) {
        fs->broken = 1;
        event_base_loopbreak(fs->base);
        return;
    }
    hist_add(&fs->set, t - fs->t0);
    fs->t0 = now_us();
    if (floor_send_del(fs, 0, fs->key, single_on_del, fs) != REDIS_OK) {
        fs->broken = 1;
        event_base_loopbreak(fs->base);
    }
}

static void single_next(struct floor_state *fs)
{
    if (now_us() >= fs->deadline || fs->set.count >= config.max_ops || stop_requested()) {
        event_base_loopbreak(fs->base);
        return;
    }
    snprintf(fs->key, sizeof(fs->key), "rlbench:%s:floor:%llu", config.run_id,
             (unsigned long long)fs->seq++);
    fs->t0 = now_us();
    if (floor_send_set(fs, 0, fs->key, single_on_set, fs) != REDIS_OK) {
        fs->broken = 1;
        event_base_loopbreak(fs->base);
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct floor_state *fs = arg;
    static const char *names[] = { "floor: connect", "floor: 1 master", "floor: quorum",
                                   "floor: capacity", "floor" };
    uint64_t t = now_us();

    (void)fd;
    (void)what;
    progress(names[fs->phase], (double)(t - fs->phase_start) / 1e6,
             (double)(fs->deadline - fs->phase_start) / 1e6,
             fs->phase == PH_SINGLE   ? fs->set.count
             : fs->phase == PH_QUORUM ? fs->quorum.count
                                      : fs->cap_replies,
             0);
    /* a master that stops answering must not hang the floor */
    if (t > fs->deadline + 5000000u) {
        fs->broken = 1;
        event_base_loopbreak(fs->base);
    }
}

/* (1) one master, one command at a time; (2) all masters, majority-th
 * reply. 0, or -1 when a master failed. */
static int floor_latency(struct floor_state *fs, struct result *r, double d, double *quorum_cpu)
{
    uint64_t c0 = cpu_us(), t0 = now_us();
    int m;

    floor_set_phase(fs, PH_SINGLE, 0.75 * d);
    single_next(fs);
    event_base_dispatch(fs->base);
    r->cpu_us_per_cycle = fs->del.count ? (double)(cpu_us() - c0) / (double)fs->del.count : -1;
    r->cycles_per_s = (double)fs->del.count / ((double)(now_us() - t0) / 1e6);
    if (fs->broken)
        return -1;

    for (m = 0; m < fs->n; m++)
        fs->sel[m] = m;
    fs->n_sel = fs->n;
    fs->need = fs->n / 2 + 1;
    floor_set_phase(fs, PH_QUORUM, 0.5 * d);
    c0 = cpu_us();
    floor_quorum_run(fs, &fs->quorum);
    if (fs->quorum.count)
        *quorum_cpu = (double)(cpu_us() - c0) / (double)fs->quorum.count;
    return fs->broken ? -1 : 0;
}

static void floor_record(struct floor_state *fs, struct result *r, double d, double quorum_cpu,
                         const struct capacity *raw, const struct capacity *script)
{
    r->ops = r->ok = fs->set.count;
    hist_merge(&r->acq, &fs->set);
    hist_merge(&r->rel, &fs->del);
    r->duration_s = 2.0 * d;
    floor_fig.valid = 1;
    floor_fig.set_p50 = hist_pct(&fs->set, 0.5);
    floor_fig.set_p99 = hist_pct(&fs->set, 0.99);
    floor_fig.del_p50 = hist_pct(&fs->del, 0.5);
    floor_fig.del_p99 = hist_pct(&fs->del, 0.99);
    floor_fig.quorum_p50 = hist_pct(&fs->quorum, 0.5);
    floor_fig.quorum_p99 = hist_pct(&fs->quorum, 0.99);
    floor_fig.raw_ops_per_s = raw->ops;
    floor_fig.ceiling_cycles_per_s = raw->ops / (2.0 * fs->n);
    floor_fig.script_ceiling_cycles_per_s = script->ops / (2.0 * fs->n);
    json_kv_hist(&r->xj, "quorum_us", &fs->quorum);
    json_kv_double(&r->xj, "quorum_cpu_us_per_cycle", quorum_cpu, 1);
    json_kv_double(&r->xj, "raw_ops_per_s", raw->ops, 0);
    json_kv_double(&r->xj, "ceiling_cycles_per_s", floor_fig.ceiling_cycles_per_s, 0);
    json_kv_i64(&r->xj, "pipeline", config.pipeline);
    json_kv_double(&r->xj, "capacity_client_cpu", raw->cpu, 2);
    json_kv_double(&r->xj, "raw_script_ops_per_s", script->ops, 0);
    json_kv_double(&r->xj, "script_ceiling_cycles_per_s", floor_fig.script_ceiling_cycles_per_s, 0);
    json_kv_double(&r->xj, "script_capacity_client_cpu", script->cpu, 2);
    json_kv_double(&r->xj, "capacity_masters_cores", raw->mcores, 2);
    json_kv_double(&r->xj, "script_capacity_masters_cores", script->mcores, 2);
    result_note(r,
                "one master: SET p50 %llu us, DEL p50 %llu us. SET to all %d, majority-th reply: "
                "p50 %llu us, p99 %llu us; client CPU %.1f us per SET+DEL cycle on all %d. "
                "Capacity, %d in flight per master: SET+DEL %.0f ops/s (client %.2f cores, masters "
                "%.2f) -> ceiling %.0f cycles/s; SET + release script %.0f ops/s (client %.2f, "
                "masters %.2f) -> %.0f cycles/s",
                (unsigned long long)floor_fig.set_p50, (unsigned long long)floor_fig.del_p50, fs->n,
                (unsigned long long)floor_fig.quorum_p50, (unsigned long long)floor_fig.quorum_p99,
                quorum_cpu, fs->n, config.pipeline, raw->ops, raw->cpu, raw->mcores,
                floor_fig.ceiling_cycles_per_s, script->ops, script->cpu, script->mcores,
                floor_fig.script_ceiling_cycles_per_s);
}

void scenario_floor(void)
{
    struct result *r = result_new("floor");
    struct timeval tv = { 0, 200000 };
    /* a few seconds pin the floor down; longer runs only wait longer */
    double d = config.duration_s < 4.0 ? config.duration_s : 4.0, quorum_cpu = -1;
    struct capacity raw = { 0, 0, -1 }, script = { 0, 0, -1 };
    uint64_t clock_t0 = 0;
    redlock_client *clock_c = clock_client_start(&clock_t0);
    struct floor_state *fs;
    char why[200];

    if (!(fs = floor_open(why, sizeof(why)))) {
        result_note(r, "error: %s", why);
        redlock_client_free(clock_c);
        return;
    }
    fs->tick = event_new(fs->base, -1, EV_PERSIST, on_tick, fs);
    event_add(fs->tick, &tv);
    if (floor_latency(fs, r, d, &quorum_cpu) == 0 && floor_capacity(fs, r, d, &raw, &script) == 0)
        floor_record(fs, r, d, quorum_cpu, &raw, &script);
    else if (!r->note[0])
        result_note(r, "error: a master failed or answered oddly during the floor");
    floor_close(fs);
    clock_client_report(clock_c, clock_t0, r);
}
