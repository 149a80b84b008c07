/* masters.c - reaching the masters: the redlock_config every scenario
 * starts from, clients that are known to be connected (and voting) before
 * a clock starts, declaring masters empty, and a plain-hiredis PING that
 * does not go through the library under test.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>

/* The redlock_config every scenario starts from. Keys carry the run id, so
 * two runs on the same masters never see each other's locks. */
void bench_config_fill(redlock_config *cfg, uint32_t retries)
{
    static char prefix[64];

    snprintf(prefix, sizeof(prefix), "rlbench:%s:", config.run_id);
    redlock_config_init(cfg);
    cfg->masters = config.masters;
    cfg->key_prefix = prefix;
    cfg->node_timeout_ms = config.node_timeout_ms;
    cfg->retry_count = retries;
    if (config.local_run_max >= 0)
        cfg->local_run_max = (uint32_t)config.local_run_max;
}

/* B, the most grants a client passes among its own waiters in a row while
 * another client waits (redlock_config.local_run_max, as the config above
 * leaves it: the library's default). */
uint32_t bench_local_run_max(void)
{
    redlock_config cfg;

    bench_config_fill(&cfg, 0);
    return cfg.local_run_max;
}

/* The hiredis the bench (its floor, its probes) and so the library were
 * built against: transport figures differ between 0.14 and 1.x. */
const char *bench_hiredis_version(void)
{
    static char v[32];

    snprintf(v, sizeof(v), "%d.%d.%d", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
    return v;
}

/* Master @i answers PING within @timeout_us, over plain hiredis. */
int master_answers(int i, uint64_t timeout_us)
{
    struct timeval tv = { (time_t)(timeout_us / 1000000u), (suseconds_t)(timeout_us % 1000000u) };
    redisContext *rc = redisConnectWithTimeout(config.host[i], config.port[i], tv);
    redisReply *rep;
    int up = 0;

    if (!rc || rc->err) {
        redisFree(rc);
        return 0;
    }
    redisSetTimeout(rc, tv);
    rep = redisCommand(rc, "PING");
    if (rep && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "PONG") == 0)
        up = 1;
    if (rep)
        freeReplyObject(rep);
    redisFree(rc);
    return up;
}

/* All N masters answer PING: used after every heal, before the next
 * scenario starts. */
int wait_masters_up(unsigned timeout_ms)
{
    uint64_t deadline = now_us() + (uint64_t)timeout_ms * 1000u;
    int i, up;

    for (;;) {
        for (i = 0, up = 0; i < config.n_masters; i++)
            up += master_answers(i, 300000);
        if (up == config.n_masters)
            return 0;
        if (now_us() > deadline || stop_requested())
            return -1;
        sleep_us(50000);
    }
}

/* redlock_client_new(); 0, or -1 with @why filled. */
static int client_new(const redlock_config *cfg, struct event_base *base, redlock_client **ret,
                      char *why, size_t whylen)
{
    redlock_error err;
    int rc;

    memset(&err, 0, sizeof(err));
    rc = redlock_client_new(cfg, base, ret, &err);
    if (rc == 0)
        return 0;
    snprintf(why, whylen, "redlock_client_new: %s: %.150s", redlock_err_name(rc), err.msg);
    return -1;
}

/* A blocking client connected to every master (connections open in the
 * background; redlock_ready says when all N are past their handshake).
 * 0, or -1 with @why filled. */
int bench_blocking_client(const redlock_config *cfg, redlock_client **ret, char *why, size_t whylen)
{
    redlock_error err;
    int rc;

    if (client_new(cfg, NULL, ret, why, whylen) < 0)
        return -1;
    memset(&err, 0, sizeof(err));
    rc = redlock_ready(*ret, (size_t)config.n_masters, 5000, NULL, &err);
    if (rc == 0)
        return 0;
    snprintf(why, whylen, "not every master connected within 5 s: %s: %.120s", redlock_err_name(rc),
             err.msg);
    redlock_client_free(*ret);
    *ret = NULL;
    return -1;
}

/* Declare the masters that have no memory marker empty, as an operator who
 * puts masters back into service after they lost their data would
 * (redlock_declare_empty): they count at once instead of after the restart
 * guard's window. Safe only for masters that were down longer than any
 * lock's ttl (the caller's to know). 0, or -1 with @why filled. */
int bench_declare_empty(size_t *declared, char *why, size_t whylen)
{
    redlock_config cfg;
    redlock_client *c;
    redlock_error err;
    int rc;

    bench_config_fill(&cfg, 0);
    if (bench_blocking_client(&cfg, &c, why, whylen) < 0)
        return -1;
    memset(&err, 0, sizeof(err));
    rc = redlock_declare_empty(c, declared, &err);
    if (rc != 0)
        snprintf(why, whylen, "redlock_declare_empty: %s: %.120s", redlock_err_name(rc), err.msg);
    redlock_client_free(c);
    return rc == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------------ */
/* Warm-up: connected is not enough, a master must also vote (its memory    */
/* marker old enough, its clock trusted), so cycle until every master took  */
/* part (no vote DOWN/TIMEOUT/ERROR/EXCLUDED) three times in a row, and a   */
/* ping says that every master counts (a vote still pending at the quorum  */
/* may hide one that sits out).                                             */
/* ------------------------------------------------------------------------ */

struct warm {
    struct event_base *base;
    redlock_client *c;
    uint64_t deadline;
    int good; /* consecutive all-healthy cycles */
    int done; /* 1 ok, -1 gave up */
    unsigned seq;
    struct event *retry;
};

static void warm_try(struct warm *w);
static void warm_on_ping(redlock_client *c, int status, const redlock_status *st,
                         const redlock_error *err, void *arg);

static void warm_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    warm_try(arg);
}

static void warm_later(struct warm *w, unsigned ms)
{
    struct timeval tv = { 0, (suseconds_t)ms * 1000 };

    if (now_us() > w->deadline || stop_requested()) {
        w->done = -1;
        event_base_loopbreak(w->base);
        return;
    }
    evtimer_add(w->retry, &tv);
}

static void warm_on_release(redlock_client *c, int status, redlock_lock *lock,
                            const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct warm *w = arg;

    (void)c;
    (void)status;
    (void)out;
    (void)err;
    redlock_lock_free(lock);
    if (w->good >= 3) {
        /* A vote still pending when the quorum decided says nothing: a
         * master restarted by the heal may sit out its window unseen. The
         * ping asks each master whether it counts now. */
        if (redlock_ping_async(w->c, warm_on_ping, w, NULL) != 0) {
            w->good = 0;
            warm_later(w, 20);
        }
        return;
    }
    warm_later(w, w->good ? 0 : 20);
}

static void warm_on_ping(redlock_client *c, int status, const redlock_status *st,
                         const redlock_error *err, void *arg)
{
    struct warm *w = arg;
    int counts = status == 0;

    (void)c;
    (void)err;
    for (size_t i = 0; counts && i < redlock_status_masters(st); i++) {
        const redlock_master_state *m = redlock_status_master(st, i);
        counts = m->err == 0 && !m->excluded;
    }
    if (counts) {
        w->done = 1;
        event_base_loopbreak(w->base);
        return;
    }
    w->good = 0;
    warm_later(w, 20);
}

static void warm_on_acquire(redlock_client *c, int status, redlock_lock *lock,
                            const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct warm *w = arg;
    uint32_t i;
    int healthy = status == 0;

    (void)err;
    for (i = 0; healthy && out && i < redlock_outcome_masters(out); i++)
        if (redlock_outcome_vote(out, i)->kind != REDLOCK_VOTE_OK &&
            redlock_outcome_vote(out, i)->kind != REDLOCK_VOTE_PENDING)
            healthy = 0;
    w->good = healthy ? w->good + 1 : 0;
    if (status != 0) {
        warm_later(w, 20);
        return;
    }
    if (redlock_release_async(c, lock, warm_on_release, w, NULL) != 0) {
        redlock_lock_free(lock);
        warm_later(w, 20);
    }
}

static void warm_try(struct warm *w)
{
    char key[64];
    int n;

    n = snprintf(key, sizeof(key), "warmup:%u", w->seq++);
    if (redlock_acquire_async(w->c, key, (size_t)n, config.ttl_ms, warm_on_acquire, w, NULL) != 0)
        warm_later(w, 20);
}

/* Create an async client on @base and wait until every master answers. */
int bench_async_client(struct event_base *base, const redlock_config *cfg, redlock_client **ret,
                       char *why, size_t whylen)
{
    struct warm w;

    if (client_new(cfg, base, ret, why, whylen) < 0)
        return -1;
    memset(&w, 0, sizeof(w));
    w.base = base;
    w.c = *ret;
    /* a master that lost its data sits out the restart guard's window, at
     * most the longest ttl in use (the bench's) */
    w.deadline = now_us() + 5000000u + (uint64_t)config.ttl_ms * 1000u;
    w.retry = evtimer_new(base, warm_retry_cb, &w);
    warm_try(&w);
    event_base_dispatch(base);
    event_free(w.retry);
    if (w.done != 1) {
        snprintf(why, whylen,
                 "warm-up: not every master took part in an acquire within "
                 "5 s + ttl");
        redlock_client_free(*ret);
        *ret = NULL;
        return -1;
    }
    return 0;
}

/* Every master votes again: a client cycles until all N took part in three
 * acquires in a row. After a heal, masters restarted without their data sit
 * out the restart guard's window first; the next scenario must not start
 * inside it. 0, or -1. */
int wait_masters_vote(void)
{
    struct event_base *base = event_base_new();
    redlock_client *c = NULL;
    redlock_config cfg;
    char why[300];
    int rc;

    if (!base)
        return -1;
    bench_config_fill(&cfg, 0);
    rc = bench_async_client(base, &cfg, &c, why, sizeof(why));
    if (rc != 0)
        fprintf(stderr, "redlock-bench: %s\n", why);
    redlock_client_free(c);
    event_base_free(base);
    return rc;
}
