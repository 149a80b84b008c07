/* rawcycle.c - the raw row: the Redlock cycle with no library, what issue
 * 21's fast path is measured against; and the raw-guard row, the same cycle
 * with what the memory guard asks of a master at the least.
 *
 * SET NX PX to all N masters, compare-then-delete (cmpdel.c), over the
 * floor's plain hiredis connections (raw.c). What each row times and why
 * raw-guard is a floor, not a lock: bench/RESULTS.md, "How the rows measure".
 */
#include "floor.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

struct rawrun;

/* raw-guard's marker and index (the library's names start with a NUL). */
static char guard_marker[96], guard_index[96];

struct rslot {
    struct rawrun *R;
    unsigned id;
    uint64_t n; /* cycles started by this slot */
};

/* One cycle's replies. Freed once all are in: the N SET replies, and the
 * N release replies if a quorum was reached. */
struct rcycle {
    struct rslot *s;
    uint64_t t0; /* SETs sent; then the releases sent */
    int set_in, set_ok;
    int rel_in, rel_ok;
    int acquired, released;
    char key[96];
};

struct rawrun {
    struct floor_state *fs;
    struct result *r;
    const char *label;
    int native; /* release natively where a master can */
    int guard;  /* the raw-guard row: the marker read, the index kept */
    int need;   /* quorum: N/2 + 1 */
    uint64_t t_start, deadline;
    uint64_t max_ops;
    uint64_t cycles; /* acquire + release completed */
    int active;      /* slots still starting cycles */
    int open;        /* cycles with replies still to come */
    int dead;        /* given up: late replies only free */
    struct rslot *slots;
};

static void slot_next(struct rslot *s);

static void run_check_done(struct rawrun *R)
{
    if (R->active == 0 && R->open == 0)
        event_base_loopbreak(R->fs->base);
}

/* The cycle's last reply is in: forget it. */
static void cycle_check(struct rcycle *c)
{
    struct rawrun *R = c->s->R;

    if (c->set_in < R->fs->n || (c->acquired && c->rel_in < R->fs->n))
        return;
    free(c);
    R->open--;
    if (!R->dead) {
        run_check_done(R);
    } else if (R->open == 0) {
        /* the last late reply of a run given up on: nothing points here now */
        free(R->slots);
        free(R);
    }
}

static void on_release(redisAsyncContext *ac, void *reply, void *pd)
{
    struct rcycle *c = pd;
    struct rawrun *R = c->s->R;

    (void)ac;
    c->rel_in++;
    if (R->dead) {
        cycle_check(c);
        return;
    }
    if (floor_release_deleted(reply))
        c->rel_ok++;
    else if (!reply || ((const redisReply *)reply)->type == REDIS_REPLY_ERROR)
        R->fs->broken = 1; /* NOSCRIPT, a refused command, a lost master */
    if (!c->released && (c->rel_ok == R->need || c->rel_in == R->fs->n)) {
        c->released = 1;
        if (c->rel_ok == R->need)
            hist_add(&R->r->rel, now_us() - c->t0);
        else
            R->r->release_failed++;
        R->cycles++;
        slot_next(c->s);
    }
    cycle_check(c);
}

/* Quorum: the lock is ours; release it on every master at once, those
 * whose SET has not answered yet too (their connection runs the release
 * after the SET), as a caller of the library releases as soon as its
 * acquire returns. */
static void cycle_release(struct rcycle *c)
{
    struct rawrun *R = c->s->R;
    int m, unsent = 0;

    c->acquired = 1;
    hist_add(&R->r->acq, now_us() - c->t0);
    R->r->ok++;
    c->t0 = now_us();
    for (m = 0; m < R->fs->n; m++)
        if ((R->guard
                 ? floor_send_release_guard(R->fs, m, c->key, guard_index, R->native, on_release, c)
                 : floor_send_release(R->fs, m, c->key, R->native, on_release, c)) != REDIS_OK)
            unsent++;
    /* hiredis refuses only a connection that is going away: such a master
     * answers nothing, which is what a NULL reply says */
    while (unsent--)
        on_release(NULL, NULL, c);
}

static void on_set(redisAsyncContext *ac, void *reply, void *pd)
{
    struct rcycle *c = pd;
    struct rawrun *R = c->s->R;
    const redisReply *rep = reply;

    (void)ac;
    c->set_in++;
    if (R->dead) {
        cycle_check(c);
        return;
    }
    /* keys are distinct: anything but OK is a master failing */
    if (rep && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "OK") == 0)
        c->set_ok++;
    else
        R->fs->broken = 1;
    if (!c->acquired && c->set_ok == R->need) {
        cycle_release(c); /* may be the last reply of all, when N is 1 */
        return;
    }
    if (!c->acquired && c->set_in == R->fs->n) {
        R->r->failed++;
        hist_add(&R->r->fail, now_us() - c->t0);
        slot_next(c->s);
    }
    cycle_check(c);
}

static void slot_finish(struct rslot *s)
{
    s->R->active--;
    run_check_done(s->R);
}

static void slot_next(struct rslot *s)
{
    struct rawrun *R = s->R;
    struct rcycle *c;
    int m, unsent = 0;

    if (R->fs->broken || now_us() >= R->deadline || R->r->ops >= R->max_ops || stop_requested() ||
        !(c = calloc(1, sizeof(*c)))) {
        slot_finish(s);
        return;
    }
    c->s = s;
    snprintf(c->key, sizeof(c->key), "rlbench:%s:raw:%u:%llu", config.run_id, s->id,
             (unsigned long long)s->n++);
    R->open++;
    R->r->ops++;
    c->t0 = now_us();
    for (m = 0; m < R->fs->n; m++) {
        /* raw-guard: the SET's reply comes after the marker's, so a cycle
         * decides, as a guarded vote must, with both in hand */
        if (R->guard)
            redisAsyncCommand(R->fs->ac[m], NULL, NULL, "HMGET %s served maxttl", guard_marker);
        if (floor_send_set(R->fs, m, c->key, on_set, c) != REDIS_OK)
            unsent++;
        else if (R->guard)
            redisAsyncCommand(R->fs->ac[m], NULL, NULL, "ZADD %s GT %llu %s", guard_index,
                              (unsigned long long)(c->t0 / 1000 + 2000), c->key);
    }
    while (unsent--)
        on_set(NULL, NULL, c);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct rawrun *R = arg;
    uint64_t t = now_us();

    (void)fd;
    (void)what;
    progress(R->label, (double)(t - R->t_start) / 1e6, (double)(R->deadline - R->t_start) / 1e6,
             R->r->ok, R->r->failed);
    /* a master that stops answering must not hang the row */
    if (t > R->deadline + 5000000u) {
        R->fs->broken = 1;
        event_base_loopbreak(R->fs->base);
    }
}

/* @inflight cycles in flight on @fs for @seconds (or max_ops cycles),
 * counted into @r: ops, ok, failed, acquire and release latencies, and
 * duration, cycles/s and client CPU per cycle; *@cycles completed. 0, or
 * -1 when a master failed or stopped answering. */
static int raw_run(struct floor_state *fs, int native, int guard, int inflight, double seconds,
                   const char *label, struct result *r, uint64_t *cycles)
{
    struct rawrun *R = calloc(1, sizeof(*R));
    struct timeval tv = { 0, 200000 };
    struct event *tick;
    uint64_t c0;
    int i;

    if (!R || !(R->slots = calloc((size_t)inflight, sizeof(*R->slots))) ||
        !(tick = event_new(fs->base, -1, EV_PERSIST, on_tick, R))) {
        if (R)
            free(R->slots);
        free(R);
        result_note(r, "error: out of memory");
        return -1;
    }
    R->fs = fs;
    R->r = r;
    R->label = label;
    R->native = native;
    R->guard = guard;
    R->need = fs->n / 2 + 1;
    R->max_ops = config.max_ops;
    R->active = inflight;
    event_add(tick, &tv);
    c0 = cpu_us();
    R->t_start = now_us();
    R->deadline = R->t_start + (uint64_t)(seconds * 1e6);
    for (i = 0; i < inflight; i++) {
        R->slots[i].R = R;
        R->slots[i].id = (unsigned)i;
        slot_next(&R->slots[i]);
    }
    event_base_dispatch(fs->base);
    *cycles = R->cycles;
    r->duration_s = (double)(now_us() - R->t_start) / 1e6;
    r->cycles_per_s = (double)R->cycles / r->duration_s;
    if (R->cycles)
        r->cpu_us_per_cycle = (double)(cpu_us() - c0) / (double)R->cycles;
    event_free(tick);
    if (R->open) {
        /* Given up on a master: hiredis still holds callbacks that point
         * at these cycles and will run them when the floor closes. Leave
         * them the run to find, marked dead (they then touch nothing but
         * their cycle and it), rather than freed memory; the last frees it. */
        R->dead = 1;
        return -1;
    }
    free(R->slots);
    free(R);
    return fs->broken ? -1 : 0;
}

/* One measured pass: a short warm-up (new keys, the connections' buffers
 * grown), then @r's figures, the masters' CPU and commands among them.
 * 0, or -1 as raw_run(). */
static int raw_pass(struct floor_state *fs, int native, int guard, int inflight, const char *label,
                    struct result *r)
{
    struct result *warm = calloc(1, sizeof(*warm));
    struct mstat m0;
    uint64_t cycles;
    int rc;

    if (!warm) {
        result_note(r, "error: out of memory");
        return -1;
    }
    snprintf(warm->scenario, sizeof(warm->scenario), "%s", r->scenario);
    result_clear(warm);
    rc = raw_run(fs, native, guard, inflight, 0.2, label, warm, &cycles);
    free(warm);
    if (rc < 0)
        return -1;
    masters_stat(&m0);
    if (raw_run(fs, native, guard, inflight, config.duration_s, label, r, &cycles) < 0)
        return -1;
    masters_delta(r, &m0, cycles);
    return 0;
}

/* "NAME":{...}: a loaded pass's figures inside the raw row's JSON, with the
 * members the pass's own result gathered. */
static void pass_json(struct result *r, const char *name, const struct result *p,
                      const char *release)
{
    struct json *j = &r->xj;

    json_key(j, name);
    json_obj_begin(j);
    json_kv_i64(j, "inflight", config.inflight);
    json_kv_cstr(j, "release", release);
    json_kv_u64(j, "ops", p->ops);
    json_kv_u64(j, "ok", p->ok);
    json_kv_u64(j, "failed", p->failed);
    json_kv_u64(j, "release_failed", p->release_failed);
    json_kv_double(j, "cycles_per_s", p->cycles_per_s, 0);
    json_kv_double(j, "client_cpu_us_per_cycle", p->cpu_us_per_cycle, 2);
    json_kv_hist(j, "acquire_us", &p->acq);
    json_kv_hist(j, "release_us", &p->rel);
    if (p->masters_cpu_us_per_cycle >= 0) {
        json_kv_double(j, "masters_cpu_us_per_cycle", p->masters_cpu_us_per_cycle, 2);
        json_kv_double(j, "masters_cores", p->masters_cores, 2);
    }
    json_raw(j, p->extra);
    json_obj_end(j);
}

/* "64 in flight, EVALSHA on all 5: 61234 cycles/s, acquire p50 900 us, masters 60.1 us CPU
 * per cycle (set 1.00, evalsha 1.00, ...)" */
static size_t pass_note(char *buf, size_t len, const struct result *p, const char *release)
{
    return (size_t)snprintf(buf, len,
                            "%d in flight, %s: %.0f cycles/s, acquire p50 %llu us, "
                            "p99 %llu us, masters %.1f us CPU per cycle (each: %s)",
                            config.inflight, release, p->cycles_per_s,
                            (unsigned long long)hist_pct(&p->acq, 0.5),
                            (unsigned long long)hist_pct(&p->acq, 0.99),
                            p->masters_cpu_us_per_cycle, p->masters_calls);
}

/* The loaded passes: @inflight in flight released as the row is, and by
 * the script as well where that was native, since issue 21 compares the
 * library's throughput with the script's. Into raw_fig, the JSON, the note. */
static int raw_loaded(struct floor_state *fs, int native, struct result *r, const char *how)
{
    struct result *p = calloc(1, sizeof(*p)), *q = calloc(1, sizeof(*q));
    char script[64], note[sizeof(r->note)];
    size_t used;
    int rc = -1;

    if (!p || !q) {
        result_note(r, "error: out of memory");
        goto out;
    }
    snprintf(p->scenario, sizeof(p->scenario), "raw");
    result_clear(p);
    if (raw_pass(fs, native, 0, config.inflight, "raw: loaded", p) < 0)
        goto out;
    raw_fig.inflight = config.inflight;
    raw_fig.cycles_per_s = raw_fig.script_cycles_per_s = p->cycles_per_s;
    raw_fig.masters_cpu_us_per_cycle = raw_fig.script_masters_cpu_us_per_cycle =
        p->masters_cpu_us_per_cycle;
    pass_json(r, "throughput", p, how);
    used = pass_note(note, sizeof(note), p, how);
    if (native) {
        floor_release_describe(fs, 0, script, sizeof(script));
        snprintf(q->scenario, sizeof(q->scenario), "raw");
        result_clear(q);
        if (raw_pass(fs, 0, 0, config.inflight, "raw: loaded, script", q) < 0)
            goto out;
        raw_fig.script_cycles_per_s = q->cycles_per_s;
        raw_fig.script_masters_cpu_us_per_cycle = q->masters_cpu_us_per_cycle;
        pass_json(r, "throughput_script", q, script);
        if (used < sizeof(note))
            snprintf(note + used, sizeof(note) - used, "; %s: %.0f cycles/s, masters %.1f us",
                     script, q->cycles_per_s, q->masters_cpu_us_per_cycle);
    }
    raw_fig.valid = 1;
    result_note(r, "%s", note);
    rc = 0;
out:
    free(p);
    free(q);
    return rc;
}

void scenario_raw(void)
{
    struct result *r = result_new("raw");
    struct floor_state *fs;
    char why[200], how[64];
    int native;

    if (!(fs = floor_open(why, sizeof(why))) || floor_release_prepare(fs, why, sizeof(why)) < 0) {
        result_note(r, "error: %s", why);
        if (fs)
            floor_close(fs);
        return;
    }
    native = floor_release_native(fs);
    floor_release_describe(fs, native, how, sizeof(how));
    snprintf(raw_fig.release, sizeof(raw_fig.release), "%s", how);
    json_kv_u64(&r->xj, "inflight", 1);
    json_kv_cstr(&r->xj, "release", how);
    json_kv_bool(&r->xj, "native_release", native);
    if (raw_pass(fs, native, 0, 1, "raw: 1 in flight", r) < 0 ||
        raw_loaded(fs, native, r, how) < 0) {
        if (strncmp(r->note, "error", 5) != 0)
            result_note(r, "error: a master failed, answered oddly or stopped answering");
        raw_fig.valid = 0;
    }
    floor_close(fs);
}

/* The raw-guard row (above): 1 in flight is the row itself, --inflight
 * its "throughput" member; into guard_fig for the report. */
void scenario_raw_guard(void)
{
    struct result *r = result_new("raw-guard"), *p = NULL;
    struct floor_state *fs;
    char why[200], how[64], note[sizeof(r->note)];
    int native, m;

    if (!(fs = floor_open(why, sizeof(why))) || floor_release_prepare(fs, why, sizeof(why)) < 0) {
        result_note(r, "error: %s", why);
        if (fs)
            floor_close(fs);
        return;
    }
    snprintf(guard_marker, sizeof(guard_marker), "rlbench:%s:raw-guard:marker", config.run_id);
    snprintf(guard_index, sizeof(guard_index), "rlbench:%s:raw-guard:held", config.run_id);
    for (m = 0; m < fs->n; m++) /* a marker that counts: HMGET finds `served` */
        redisAsyncCommand(fs->ac[m], NULL, NULL, "HSET %s served 1 maxttl %d", guard_marker,
                          config.ttl_ms);
    native = floor_release_native(fs);
    floor_release_describe(fs, native, how, sizeof(how));
    json_kv_u64(&r->xj, "inflight", 1);
    json_kv_cstr(&r->xj, "release", how);
    if (raw_pass(fs, native, 1, 1, "raw-guard: 1 in flight", r) < 0 ||
        !(p = calloc(1, sizeof(*p)))) {
        result_note(r, "error: a master failed, answered oddly or stopped answering");
        goto out;
    }
    snprintf(p->scenario, sizeof(p->scenario), "raw-guard");
    result_clear(p);
    if (raw_pass(fs, native, 1, config.inflight, "raw-guard: loaded", p) < 0) {
        result_note(r, "error: a master failed, answered oddly or stopped answering");
        goto out;
    }
    guard_fig.valid = 1;
    guard_fig.cycles_per_s = p->cycles_per_s;
    guard_fig.masters_cpu_us_per_cycle = p->masters_cpu_us_per_cycle;
    pass_json(r, "throughput", p, how);
    pass_note(note, sizeof(note), p, how);
    result_note(r, "HMGET + SET NX PX + ZADD, then %s with ZREM (no library); %s", how, note);
out:
    for (m = 0; m < fs->n; m++)
        redisAsyncCommand(fs->ac[m], NULL, NULL, "DEL %s %s", guard_marker, guard_index);
    free(p);
    floor_close(fs);
}
