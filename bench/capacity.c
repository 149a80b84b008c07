/* capacity.c - the floor's capacity phase: every master saturated at once
 * from the floor's one loop, P chains of SET then release per master, with
 * the release as a plain DEL and as the compare-then-delete script any
 * Redlock release runs (cmpdel.c). Gives the throughput ceilings (capacity
 * / 2N).
 */
#include "floor.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

/* One pipelined SET/DEL loop on one master, capacity phase. */
struct chain {
    struct floor_state *fs;
    int master;
    int in_del;
    uint64_t seq;
    char key[96];
};

/* --- capacity: P chains per master, pipelined ----------------------------- */

static void chain_next(struct chain *ch);

static void chain_on_reply(redisAsyncContext *ac, void *reply, void *pd)
{
    struct chain *ch = pd;
    struct floor_state *fs = ch->fs;

    (void)ac;
    if (!floor_reply_ok(reply)) {
        fs->broken = 1;
        if (--fs->active_chains == 0)
            event_base_loopbreak(fs->base);
        return;
    }
    fs->cap_replies++;
    if (!ch->in_del) {
        int rc;

        ch->in_del = 1;
        /* the script ceiling is the script's, even where a native command exists */
        if (fs->use_script)
            rc = floor_send_release(fs, ch->master, ch->key, 0, chain_on_reply, ch);
        else
            rc = floor_send_del(fs, ch->master, ch->key, chain_on_reply, ch);
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
    snprintf(ch->key, sizeof(ch->key), "rlbench:%s:cap:%d:%p:%llu", config.run_id, ch->master,
             (void *)ch, (unsigned long long)ch->seq++);
    if (floor_send_set(fs, ch->master, ch->key, chain_on_reply, ch) != REDIS_OK) {
        fs->broken = 1;
        if (--fs->active_chains == 0)
            event_base_loopbreak(fs->base);
    }
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

/* (3) capacity: every master saturated at once from this one loop, as the
 * library's own client would be; (4) the same with the release as a
 * compare-then-DEL script, which is what a Redlock cycle really costs the
 * masters. Capacity is the best of two rounds each, interleaved: this
 * machine is shared, and a ceiling taken in a bad moment would flatter
 * every ratio against it. */
int floor_capacity(struct floor_state *fs, struct result *r, double d, struct capacity *raw,
                   struct capacity *script)
{
    char why[160];
    int round;

    fs->n_chains = fs->n * config.pipeline;
    fs->chains = calloc((size_t)fs->n_chains, sizeof(*fs->chains));
    if (!fs->chains) {
        result_note(r, "error: out of memory");
        return -1;
    }
    if (floor_release_prepare(fs, why, sizeof(why)) < 0) {
        result_note(r, "error: %s", why);
        return -1;
    }
    for (round = 0; round < 4 && !fs->broken; round++) {
        struct capacity c, *best = (round & 1) ? script : raw;

        fs->use_script = round & 1;
        floor_set_phase(fs, PH_CAPACITY, 0.25 * d);
        c.ops = run_capacity(fs, &c.cpu, &c.mcores);
        if (!fs->broken && c.ops > best->ops)
            *best = c;
    }
    return fs->broken ? -1 : 0;
}
