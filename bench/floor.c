/* floor.c - the physical floor every other figure is divided by.
 *
 * Plain hiredis async on a libevent loop in this same process, no redlock:
 * (1) one master's SET NX PX + DEL round trips, one at a time; (2) the same
 * SET sent to all N masters at once, timed to the majority-th reply, which
 * is the least any quorum acquire can cost on this machine; (3) the N
 * masters' aggregate capacity with P commands pipelined per master, which
 * gives the throughput ceiling (capacity / 2N cycles per second).
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

enum floor_phase { PH_CONNECT, PH_SINGLE, PH_QUORUM, PH_CAPACITY, PH_DONE };

struct chain;

struct floor_state {
    struct event_base *base;
    redisAsyncContext *ac[BENCH_MAX_MASTERS];
    int n;
    int connected;
    int conn_failed;
    int broken;                       /* a reply was NULL or unexpected */
    enum floor_phase phase;
    uint64_t phase_start;
    uint64_t deadline;                /* current phase, monotonic µs */
    uint64_t t0;                      /* current single/quorum op */
    uint64_t seq;                     /* key counter */
    char key[96];
    int replies;                      /* quorum phase: replies so far */
    struct hist set, del, quorum;
    /* capacity */
    struct chain *chains;
    int n_chains;
    int active_chains;
    int use_script;                   /* capacity: release by EVALSHA, not DEL */
    char sha[48];                     /* of release_lua, from SCRIPT LOAD */
    int loaded;
    uint64_t cap_replies;
    struct event *tick;
};

/* One pipelined SET/DEL loop on one master, capacity phase. */
struct chain {
    struct floor_state *fs;
    int master;
    int in_del;
    uint64_t seq;
    char key[96];
};

static const char token[] = "0123456789abcdef0123456789abcdef";   /* 32 bytes, like a real token */

/* Compare-then-delete, what any Redlock release must run on each master;
 * used for the second capacity figure. */
static const char release_lua[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then\n"
    "  return redis.call('del', KEYS[1])\n"
    "end\n"
    "return 0\n";

static int send_set(struct floor_state *fs, int m, const char *key, redisCallbackFn *cb, void *pd)
{
    char ttl[16];
    const char *argv[6] = { "SET", key, token, "NX", "PX", ttl };
    size_t len[6];
    int i;

    snprintf(ttl, sizeof(ttl), "%u", config.ttl_ms);
    for (i = 0; i < 6; i++)
        len[i] = strlen(argv[i]);
    return redisAsyncCommandArgv(fs->ac[m], cb, pd, 6, argv, len);
}

static int send_del(struct floor_state *fs, int m, const char *key, redisCallbackFn *cb, void *pd)
{
    const char *argv[2] = { "DEL", key };
    size_t len[2] = { 3, strlen(key) };

    return redisAsyncCommandArgv(fs->ac[m], cb, pd, 2, argv, len);
}

static int reply_ok(const redisReply *r)
{
    return r && (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_INTEGER);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct floor_state *fs = ac->data;

    if (status == REDIS_OK)
        fs->connected++;
    else
        fs->conn_failed++;
    if (fs->connected + fs->conn_failed == fs->n)
        event_base_loopbreak(fs->base);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct floor_state *fs = ac->data;
    int i;

    (void)status;
    for (i = 0; i < fs->n; i++)
        if (fs->ac[i] == ac)
            fs->ac[i] = NULL;
}

/* --- single master ------------------------------------------------------ */

static void single_next(struct floor_state *fs);

static void single_on_del(redisAsyncContext *ac, void *reply, void *pd)
{
    struct floor_state *fs = pd;

    (void)ac;
    if (!reply_ok(reply)) {
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
    if (!reply_ok(reply)) {
        fs->broken = 1;
        event_base_loopbreak(fs->base);
        return;
    }
    hist_add(&fs->set, t - fs->t0);
    fs->t0 = now_us();
    if (send_del(fs, 0, fs->key, single_on_del, fs) != REDIS_OK) {
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
    if (send_set(fs, 0, fs->key, single_on_set, fs) != REDIS_OK) {
        fs->broken = 1;
        event_base_loopbreak(fs->base);
    }
}

/* --- all masters, majority-th reply -------------------------------------- */

static void quorum_next(struct floor_state *fs);

static void quorum_on_del(redisAsyncContext *ac, void *reply, void *pd)
{
    struct floor_state *fs = pd;

    (void)ac;
    if (!reply_ok(reply))
        fs->broken = 1;
    if (++fs->replies == fs->n) {
        if (fs->broken)
            event_base_loopbreak(fs->base);
        else
            quorum_next(fs);
    }
}

static void quorum_on_set(redisAsyncContext *ac, void *reply, void *pd)
{
    struct floor_state *fs = pd;
    int m;

    (void)ac;
    if (!reply_ok(reply))
        fs->broken = 1;
    fs->replies++;
    if (fs->replies == fs->n / 2 + 1)
        hist_add(&fs->quorum, now_us() - fs->t0);
    if (fs->replies < fs->n)
        return;
    if (fs->broken) {
        event_base_loopbreak(fs->base);
        return;
    }
    fs->replies = 0;
    for (m = 0; m < fs->n; m++)
        if (send_del(fs, m, fs->key, quorum_on_del, fs) != REDIS_OK)
            fs->broken = 1;
}

static void quorum_next(struct floor_state *fs)
{
    int m;

    if (now_us() >= fs->deadline || fs->quorum.count >= config.max_ops || stop_requested()) {
        event_base_loopbreak(fs->base);
        return;
    }
    snprintf(fs->key, sizeof(fs->key), "rlbench:%s:floorq:%llu", config.run_id,
             (unsigned long long)fs->seq++);
    fs->replies = 0;
    fs->t0 = now_us();
    for (m = 0; m < fs->n; m++)
        if (send_set(fs, m, fs->key, quorum_on_set, fs) != REDIS_OK)
            fs->broken = 1;
}

/* --- capacity: P chains per master, pipelined ----------------------------- */

static void chain_next(struct chain *ch);

static void chain_on_reply(redisAsyncContext *ac, void *reply, void *pd)
{
    struct chain *ch = pd;
    struct floor_state *fs = ch->fs;

    (void)ac;
    if (!reply_ok(reply)) {
        fs->broken = 1;
        if (--fs->active_chains == 0)
            event_base_loopbreak(fs->base);
        return;
    }
    fs->cap_replies++;
    if (!ch->in_del) {
        int rc;

        ch->in_del = 1;
        if (fs->use_script) {
            const char *argv[5] = { "EVALSHA", fs->sha, "1", ch->key, token };
            size_t len[5] = { 7, strlen(fs->sha), 1, strlen(ch->key), sizeof(token) - 1 };

            rc = redisAsyncCommandArgv(fs->ac[ch->master], chain_on_reply, ch, 5, argv, len);
        } else {
            rc = send_del(fs, ch->master, ch->key, chain_on_reply, ch);
        }
        if (rc != REDIS_OK)
            fs->broken = 1;
        return;
    }
    chain_next(ch);
}

static void chain_next(struct chain *ch)
{
    struct floor_state *fs = ch->fs;

    if (now_us() >= fs->deadline || stop_requested() || fs->broken) {
        if (--fs->active_chains == 0)
            event_base_loopbreak(fs->base);
        return;
    }
    ch->in_del = 0;
    snprintf(ch->key, sizeof(ch->key), "rlbench:%s:cap:%d:%p:%llu", config.run_id,
             ch->master, (void *)ch, (unsigned long long)ch->seq++);
    if (send_set(fs, ch->master, ch->key, chain_on_reply, ch) != REDIS_OK) {
        fs->broken = 1;
        if (--fs->active_chains == 0)
            event_base_loopbreak(fs->base);
    }
}

static void on_script_loaded(redisAsyncContext *ac, void *reply, void *pd)
{
    struct floor_state *fs = pd;
    redisReply *r = reply;

    (void)ac;
    if (r && r->type == REDIS_REPLY_STRING)
        snprintf(fs->sha, sizeof(fs->sha), "%s", r->str);
    else
        fs->broken = 1;
    if (++fs->loaded == fs->n)
        event_base_loopbreak(fs->base);
}

/* Saturate every master from this loop for the current phase; returns
 * replies per second and sets *@cpu_frac to the client's share of a core. */
static double run_capacity(struct floor_state *fs, double *cpu_frac, double *masters_cores)
{
    uint64_t c0, t0, t1;
    double m0 = masters_cpu_s(), m1;
    int i;

    fs->active_chains = fs->n_chains;
    fs->cap_replies = 0;
    memset(fs->chains, 0, (size_t)fs->n_chains * sizeof(*fs->chains));
    c0 = cpu_us();
    t0 = now_us();
    for (i = 0; i < fs->n_chains; i++) {
        fs->chains[i].fs = fs;
        fs->chains[i].master = i % fs->n;
        chain_next(&fs->chains[i]);
    }
    event_base_dispatch(fs->base);
    t1 = now_us();
    *cpu_frac = (double)(cpu_us() - c0) / (double)(t1 - t0);
    m1 = masters_cpu_s();
    *masters_cores = m0 >= 0 && m1 >= 0 ? (m1 - m0) / ((double)(t1 - t0) / 1e6) : -1;
    return (double)fs->cap_replies / ((double)(t1 - t0) / 1e6);
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
             fs->phase == PH_SINGLE ? fs->set.count :
             fs->phase == PH_QUORUM ? fs->quorum.count : fs->cap_replies, 0);
    /* a master that stops answering must not hang the floor */
    if (t > fs->deadline + 5000000u) {
        fs->broken = 1;
        event_base_loopbreak(fs->base);
    }
}

static void set_phase(struct floor_state *fs, enum floor_phase ph, double seconds)
{
    fs->phase = ph;
    fs->phase_start = now_us();
    fs->deadline = fs->phase_start + (uint64_t)(seconds * 1e6);
}

/* Connect to every master; 0, or -1 with the row's note set. */
static int floor_connect(struct floor_state *fs, struct result *r)
{
    int m;

    set_phase(fs, PH_CONNECT, 3.0);
    for (m = 0; m < fs->n; m++) {
        fs->ac[m] = redisAsyncConnect(config.host[m], config.port[m]);
        if (!fs->ac[m] || fs->ac[m]->err) {
            result_note(r, "error: connect %s:%d: %s", config.host[m],
                        config.port[m], fs->ac[m] ? fs->ac[m]->errstr : "out of memory");
            return -1;
        }
        fs->ac[m]->data = fs;
        redisLibeventAttach(fs->ac[m], fs->base);
        redisAsyncSetConnectCallback(fs->ac[m], on_connect);
        redisAsyncSetDisconnectCallback(fs->ac[m], on_disconnect);
    }
    event_base_dispatch(fs->base);
    if (fs->connected != fs->n) {
        result_note(r, "error: %d of %d masters did not connect", fs->n - fs->connected, fs->n);
        return -1;
    }
    return 0;
}

/* (1) one master, one command at a time; (2) all masters, majority-th
 * reply. 0, or -1 when a master failed. */
static int floor_latency(struct floor_state *fs, struct result *r, double d, double *quorum_cpu)
{
    uint64_t c0 = cpu_us(), t0 = now_us();

    set_phase(fs, PH_SINGLE, 0.75 * d);
    single_next(fs);
    event_base_dispatch(fs->base);
    r->cpu_us_per_cycle = fs->del.count ? (double)(cpu_us() - c0) / (double)fs->del.count : -1;
    r->cycles_per_s = (double)fs->del.count / ((double)(now_us() - t0) / 1e6);
    if (fs->broken)
        return -1;

    set_phase(fs, PH_QUORUM, 0.5 * d);
    c0 = cpu_us();
    quorum_next(fs);
    event_base_dispatch(fs->base);
    if (fs->quorum.count)
        *quorum_cpu = (double)(cpu_us() - c0) / (double)fs->quorum.count;
    return fs->broken ? -1 : 0;
}

struct capacity {
    double ops, cpu, mcores;          /* replies/s, client cores, masters' cores */
};

/* (3) capacity: every master saturated at once from this one loop, as the
 * library's own client would be; (4) the same with the release as a
 * compare-then-DEL script, which is what a Redlock cycle really costs the
 * masters. Capacity is the best of two rounds each, interleaved: this
 * machine is shared, and a ceiling taken in a bad moment would flatter
 * every ratio against it. */
static int floor_capacity(struct floor_state *fs, struct result *r, double d,
                          struct capacity *raw, struct capacity *script)
{
    int m, round;

    fs->n_chains = fs->n * config.pipeline;
    fs->chains = calloc((size_t)fs->n_chains, sizeof(*fs->chains));
    if (!fs->chains) {
        result_note(r, "error: out of memory");
        return -1;
    }
    for (m = 0; m < fs->n; m++) {
        const char *argv[3] = { "SCRIPT", "LOAD", release_lua };
        size_t len[3] = { 6, 4, sizeof(release_lua) - 1 };

        redisAsyncCommandArgv(fs->ac[m], on_script_loaded, fs, 3, argv, len);
    }
    event_base_dispatch(fs->base);
    for (round = 0; round < 4 && !fs->broken; round++) {
        struct capacity c, *best = (round & 1) ? script : raw;

        fs->use_script = round & 1;
        set_phase(fs, PH_CAPACITY, 0.25 * d);
        c.ops = run_capacity(fs, &c.cpu, &c.mcores);
        if (!fs->broken && c.ops > best->ops)
            *best = c;
    }
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
    result_extra_pcts(r, "quorum_us", &fs->quorum);
    result_extra(r, ",\"quorum_cpu_us_per_cycle\":%.1f,\"raw_ops_per_s\":%.0f,"
                 "\"ceiling_cycles_per_s\":%.0f,\"pipeline\":%d,\"capacity_client_cpu\":%.2f,"
                 "\"raw_script_ops_per_s\":%.0f,\"script_ceiling_cycles_per_s\":%.0f,"
                 "\"script_capacity_client_cpu\":%.2f,\"capacity_masters_cores\":%.2f,"
                 "\"script_capacity_masters_cores\":%.2f",
                 quorum_cpu, raw->ops, floor_fig.ceiling_cycles_per_s, config.pipeline, raw->cpu,
                 script->ops, floor_fig.script_ceiling_cycles_per_s, script->cpu, raw->mcores,
                 script->mcores);
    result_note(r,
                "one master: SET p50 %llu us, DEL p50 %llu us. SET to all %d, majority-th reply: "
                "p50 %llu us, p99 %llu us; client CPU %.1f us per SET+DEL cycle on all %d. "
                "Capacity, %d in flight per master: SET+DEL %.0f ops/s (client %.2f cores, masters "
                "%.2f) -> ceiling %.0f cycles/s; SET + release script %.0f ops/s (client %.2f, "
                "masters %.2f) -> %.0f cycles/s",
                (unsigned long long)floor_fig.set_p50, (unsigned long long)floor_fig.del_p50,
                fs->n, (unsigned long long)floor_fig.quorum_p50,
                (unsigned long long)floor_fig.quorum_p99, quorum_cpu, fs->n, config.pipeline,
                raw->ops, raw->cpu, raw->mcores, floor_fig.ceiling_cycles_per_s,
                script->ops, script->cpu, script->mcores, floor_fig.script_ceiling_cycles_per_s);
}

void scenario_floor(void)
{
    struct result *r = result_new("floor");
    struct floor_state *fs = calloc(1, sizeof(*fs));
    struct timeval tv = { 0, 200000 };
    /* a few seconds pin the floor down; longer runs only wait longer */
    double d = config.duration_s < 4.0 ? config.duration_s : 4.0, quorum_cpu = -1;
    struct capacity raw = { 0, 0, -1 }, script = { 0, 0, -1 };
    uint64_t clock_t0 = 0;
    redlock_client *clock_c = clock_client_start(&clock_t0);
    int m;

    if (!fs || !(fs->base = event_base_new())) {
        result_note(r, "error: cannot create an event loop");
        redlock_client_free(clock_c);
        free(fs);
        return;
    }
    fs->n = config.n_masters;
    hist_init(&fs->set);
    hist_init(&fs->del);
    hist_init(&fs->quorum);
    fs->tick = event_new(fs->base, -1, EV_PERSIST, on_tick, fs);
    event_add(fs->tick, &tv);

    if (floor_connect(fs, r) == 0) {
        if (floor_latency(fs, r, d, &quorum_cpu) == 0 &&
            floor_capacity(fs, r, d, &raw, &script) == 0)
            floor_record(fs, r, d, quorum_cpu, &raw, &script);
        else if (!r->note[0])
            result_note(r, "error: a master failed or answered oddly during the floor");
    }
    for (m = 0; m < fs->n; m++)
        if (fs->ac[m])
            redisAsyncFree(fs->ac[m]);
    /* hiredis frees the contexts' events from its cleanup hook */
    event_free(fs->tick);
    event_base_free(fs->base);
    free(fs->chains);
    free(fs);
    clock_client_report(clock_c, clock_t0, r);
}
