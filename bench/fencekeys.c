/* fencekeys.c - the keys a master holds do not grow with history.
 *
 * 100 000 distinct fenced resources (or --max-ops), 64 in flight, acquired
 * with REDLOCK_FENCE and released; every master's DBSIZE before and after.
 * Why the growth is at most one key: docs/waiting.md, "One counter per
 * master, not per resource"; the figures: bench/RESULTS.md, "Keys per master".
 */
#include "bench.h"

#include <hiredis/hiredis.h>
#include <redlock.h>

#include <stdio.h>

static long long grown_max = -1; /* for the targets (fence_keys_grown_max) */

long long fence_keys_grown_max(void)
{
    return grown_max;
}

/* DBSIZE of master @m, or -1. */
static long long dbsize(int m)
{
    struct timeval tv = { 2, 0 };
    redisContext *c = redisConnectWithTimeout(config.host[m], config.port[m], tv);
    long long n = -1;

    if (c && !c->err) {
        redisReply *r = redisCommand(c, "DBSIZE");
        if (r && r->type == REDIS_REPLY_INTEGER)
            n = r->integer;
        freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return n;
}

void scenario_fence_keys(void)
{
    struct result *r = result_new("fence-keys");
    uint64_t want = config.max_ops && config.max_ops < 100000 ? config.max_ops : 100000;
    struct load_opts o = { .inflight = config.inflight,
                           .duration_s = 120.0,
                           .max_ops = want,
                           .retries = 0,
                           .label = "fence-keys",
                           .flags = REDLOCK_FENCE };
    long long before[BENCH_MAX_MASTERS], grown = 0, most = 0;
    int m;

    for (m = 0; m < config.n_masters; m++)
        before[m] = dbsize(m);
    load_async(&o, r);
    for (m = 0; m < config.n_masters; m++) {
        long long after = dbsize(m), d = after - before[m];
        if (before[m] < 0 || after < 0)
            continue;
        grown += d;
        if (d > most)
            most = d;
    }
    grown_max = r->ok > 0 ? most : -1;
    result_note(r,
                "%llu distinct fenced resources taken and released: keys per master grew by "
                "at most %lld (%lld over all %d masters; one fence counter per master: <= 1 each)",
                (unsigned long long)r->ok, most, grown, config.n_masters);
    json_kv_u64(&r->xj, "fenced_resources", r->ok);
    json_kv_i64(&r->xj, "keys_grown_max", most);
    json_kv_i64(&r->xj, "keys_grown_total", grown);
}
