/* test-threads.c - one blocking client shared by 16 threads.
 *
 * The blocking API promises that any number of threads may use one client
 * at once, each call blocking for its own outcome only, and calls running
 * side by side rather than one after another. Every thread runs cycles on
 * a resource of its own (all must succeed: nobody else wants it) and on one
 * resource they all share, recording when it held the shared lock:
 * [acquire returned, release called) on CLOCK_MONOTONIC. Those intervals
 * must never overlap. Freeing the client wakes the threads still waiting
 * in it with ESHUTDOWN, also while another thread fires their cancel.
 *
 * A plain program with its own main() printing TAP, not a criterion one:
 * suite "threads" also runs under ThreadSanitizer (tools/run-tests.sh), and
 * criterion 2.4.1's runner cannot start under TSan (Snaipe/Criterion#274).
 * The tc_ and core_ helpers abort on failure outside criterion.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <redlock.h>

#include "await.h"
#include "cluster.h"
#include "core.h"
#include "servers.h"

#define THREADS 16
#define CYCLES 25
#define TTL_MS 30000u /* far longer than any holder keeps it: no expiry */

/* ---- a minimal TAP harness ---------------------------------------------- */

static int failures; /* in the running test */

__attribute__((format(printf, 3, 4))) static void check(int ok, int line, const char *fmt, ...)
{
    va_list ap;

    if (ok)
        return;
    failures++;
    printf("# test-threads.c:%d: ", line);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

#define CHECK(cond, ...) check(!!(cond), __LINE__, __VA_ARGS__)

/* ---- workers -------------------------------------------------------------- */

struct interval {
    uint64_t from_us, to_us; /* acquire returned, release called */
    int thread;
};

struct worker {
    int id;
    redlock_client *c;
    pthread_barrier_t *start;
    const char *shared;
    char own[128];
    /* results, read after join */
    int own_failures;
    char own_error[REDLOCK_ERRMSG_LEN + 32];
    int shared_wins;
    int shared_bad; /* failures other than ECONFLICT */
    char shared_error[REDLOCK_ERRMSG_LEN + 32];
    int release_failures;
    int conflicts, no_quorum; /* lookup_worker's failed tries */
    struct interval held[CYCLES];
};

static void *work(void *arg)
{
    struct worker *w = arg;

    pthread_barrier_wait(w->start);
    for (int i = 0; i < CYCLES; i++) {
        redlock_lock *l = NULL;
        redlock_error e;
        int rc;

        /* Own resource: nobody else asks for it. */
        rc = redlock_acquire(w->c, w->own, strlen(w->own), TTL_MS, &l, NULL, &e);
        if (rc != 0) {
            if (!w->own_failures++)
                snprintf(w->own_error, sizeof(w->own_error), "%s: %s", redlock_err_name(rc), e.msg);
        } else {
            if (redlock_release(w->c, l, NULL, &e) != 0)
                w->release_failures++;
            redlock_lock_free(l);
        }

        /* Shared resource: hold it a moment, then let go. */
        l = NULL;
        rc = redlock_acquire(w->c, w->shared, strlen(w->shared), TTL_MS, &l, NULL, &e);
        if (rc == 0) {
            struct interval *iv = &w->held[w->shared_wins++];

            iv->thread = w->id;
            iv->from_us = tc_now_us();
            /* Hold it a little, as real work would: a longer interval gives
             * an overlap, were there one, room to show. Time is the
             * subject. */
            tc_sleep_us(300);
            iv->to_us = tc_now_us();
            if (redlock_release(w->c, l, NULL, &e) != 0)
                w->release_failures++;
            redlock_lock_free(l);
        } else if (rc != REDLOCK_ECONFLICT) {
            if (!w->shared_bad++)
                snprintf(w->shared_error, sizeof(w->shared_error), "%s: %s", redlock_err_name(rc),
                         e.msg);
        }
    }
    return NULL;
}

static int by_start(const void *a, const void *b)
{
    const struct interval *x = a, *y = b;

    return x->from_us < y->from_us ? -1 : x->from_us > y->from_us;
}

static struct worker workers[THREADS];

static void sixteen_threads_share_one_client_and_never_overlap(void)
{
    static struct interval all[THREADS * CYCLES];
    pthread_t th[THREADS];
    pthread_barrier_t start;
    redlock_config cfg;
    redlock_client *c;
    char shared[128];
    size_t n = 0;

    tc_config(&cfg);
    /* Contenders retry quickly and often: the holder keeps it for a
     * moment. Timeouts are generous for sanitizer builds. */
    cfg.node_timeout_ms = 2000;
    cfg.retry_count = 20;
    cfg.retry_delay_ms = 2;
    cfg.retry_jitter_ms = 8;
    c = tc_client(&cfg, -1);
    tc_resource(shared, sizeof(shared), "threads/shared");
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        memset(&workers[i], 0, sizeof(workers[i]));
        workers[i].id = i;
        workers[i].c = c;
        workers[i].start = &start;
        workers[i].shared = shared;
        tc_resource(workers[i].own, sizeof(workers[i].own), "threads/own");
    }
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&th[i], NULL, work, &workers[i]) != 0)
            abort();
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);

    for (int i = 0; i < THREADS; i++) {
        struct worker *w = &workers[i];

        CHECK(w->own_failures == 0, "thread %d: %d of %d own cycles failed, first: %s", i,
              w->own_failures, CYCLES, w->own_error);
        CHECK(w->shared_bad == 0,
              "thread %d: %d shared acquires failed other than by conflict, first: %s", i,
              w->shared_bad, w->shared_error);
        CHECK(w->release_failures == 0, "thread %d: %d releases failed", i, w->release_failures);
        for (int k = 0; k < w->shared_wins; k++)
            all[n++] = w->held[k];
    }
    printf("# %zu shared acquisitions in %d tries\n", n, THREADS * CYCLES);
    CHECK(n > (size_t)CYCLES, "only %zu shared acquisitions in %d tries", n, THREADS * CYCLES);

    /* No two holders at once: sorted by start, each ends before the next
     * begins. */
    qsort(all, n, sizeof(all[0]), by_start);
    for (size_t k = 1; k < n; k++)
        CHECK(all[k - 1].to_us <= all[k].from_us,
              "thread %d held [%llu, %llu) while thread %d held from %llu", all[k - 1].thread,
              (unsigned long long)all[k - 1].from_us, (unsigned long long)all[k - 1].to_us,
              all[k].thread, (unsigned long long)all[k].from_us);

    /* Nothing left on the masters. */
    tc_barrier(c);
    CHECK(tc_key_count(shared, strlen(shared)) == 0, "the shared key is left");
    for (int i = 0; i < THREADS; i++)
        CHECK(tc_key_count(workers[i].own, strlen(workers[i].own)) == 0,
              "thread %d's own key is left", i);
    redlock_client_free(c);
}

/* One acquire of a resource held by someone else: ECONFLICT after its one
 * retry delay. Anything else is a failure. */
static void *one_conflict(void *arg)
{
    struct worker *w = arg;
    redlock_lock *l = NULL;
    redlock_error e;
    int rc;

    pthread_barrier_wait(w->start);
    rc = redlock_acquire(w->c, w->own, strlen(w->own), TTL_MS, &l, NULL, &e);
    if (rc != REDLOCK_ECONFLICT) {
        w->own_failures++;
        snprintf(w->own_error, sizeof(w->own_error), "%s: %s", redlock_err_name(rc),
                 rc ? e.msg : "");
        redlock_lock_free(l);
    }
    return NULL;
}

static void calls_from_many_threads_proceed_in_parallel(void)
{
    /* Each call below needs two attempts 200 ms apart (a held resource,
     * one retry), so it blocks for at least 200 ms. Sixteen of them from
     * sixteen threads on one client must overlap: serialised behind one
     * caller they would take sixteen times as long. */
    pthread_t th[THREADS];
    pthread_barrier_t start;
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    char res[128];
    uint64_t t0, took, one;
    int rc;

    tc_config(&cfg);
    cfg.retry_count = 1;
    cfg.retry_delay_ms = 200;
    cfg.retry_jitter_ms = 0;
    c = tc_client(&cfg, -1);

    tc_resource(res, sizeof(res), "threads/parallel");
    for (int m = 0; m < tc_n(); m++)
        tc_plant(m, res, strlen(res), "someone-else", TTL_MS);
    t0 = tc_now_us();
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, NULL);
    one = tc_now_us() - t0;
    CHECK(rc == REDLOCK_ECONFLICT, "one call: %s", redlock_err_name(rc));
    CHECK(one >= 190000, "one call took %llu us", (unsigned long long)one);

    pthread_barrier_init(&start, NULL, THREADS + 1);
    for (int i = 0; i < THREADS; i++) {
        memset(&workers[i], 0, sizeof(workers[i]));
        workers[i].c = c;
        workers[i].start = &start;
        tc_resource(workers[i].own, sizeof(workers[i].own), "threads/parallel");
        for (int m = 0; m < tc_n(); m++)
            tc_plant(m, workers[i].own, strlen(workers[i].own), "someone-else", TTL_MS);
    }
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&th[i], NULL, one_conflict, &workers[i]) != 0)
            abort();
    pthread_barrier_wait(&start);
    t0 = tc_now_us();
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    took = tc_now_us() - t0;
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++)
        CHECK(workers[i].own_failures == 0, "thread %d: %s", i, workers[i].own_error);
    CHECK(took < 4 * one, "16 calls took %llu us, one alone %llu us", (unsigned long long)took,
          (unsigned long long)one);
    redlock_client_free(c);
}

/* One acquire that would take seconds (held resource, retries 1 s apart):
 * what it returns once the client is freed under it, and when. */
static void *blocked_acquire(void *arg)
{
    struct worker *w = arg;
    redlock_lock *l = NULL;
    redlock_error e;
    int rc;

    rc = redlock_acquire(w->c, w->own, strlen(w->own), TTL_MS, &l, NULL, &e);
    w->held[0].to_us = tc_now_us(); /* when it returned */
    if (rc != REDLOCK_ESHUTDOWN) {
        w->own_failures++;
        snprintf(w->own_error, sizeof(w->own_error), "%s: %s", redlock_err_name(rc),
                 rc ? e.msg : "");
        redlock_lock_free(l);
    } else if (e.code != REDLOCK_ESHUTDOWN || !e.msg[0] || strchr(e.msg, '\n')) {
        w->own_failures++;
        snprintf(w->own_error, sizeof(w->own_error), "bad error detail: %d \"%s\"", e.code, e.msg);
    }
    return NULL;
}

static void freeing_the_client_returns_eshutdown_to_waiting_threads(void)
{
    pthread_t th[THREADS];
    redlock_config cfg;
    redlock_client *c;
    long long sets_before, sets;
    uint64_t t0;

    /* redlock.h: "calls already waiting in other threads return
     * REDLOCK_ESHUTDOWN". Sixteen threads sit in acquires that would
     * retry for seconds; the free must wake them all, promptly. */
    tc_config(&cfg);
    cfg.retry_count = 5;
    cfg.retry_delay_ms = 1000;
    cfg.retry_jitter_ms = 0;
    c = tc_client(&cfg, -1);
    sets_before = tc_acquires_seen(0);
    for (int i = 0; i < THREADS; i++) {
        memset(&workers[i], 0, sizeof(workers[i]));
        workers[i].c = c;
        tc_resource(workers[i].own, sizeof(workers[i].own), "threads/blocked");
        for (int m = 0; m < tc_n(); m++)
            tc_plant(m, workers[i].own, strlen(workers[i].own), "someone-else", TTL_MS);
    }
    sets_before += THREADS; /* tc_plant's own SETs on master 0 */
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&th[i], NULL, blocked_acquire, &workers[i]) != 0)
            abort();
    /* Every call is inside the client once its first attempt reached a
     * master: wait for master 0 to have seen all sixteen. */
    t0 = tc_now_us();
    do {
        sets = tc_acquires_seen(0);
    } while (sets < sets_before + THREADS && tc_now_us() - t0 < 5000000);
    CHECK(sets >= sets_before + THREADS, "only %lld of %d first attempts seen", sets - sets_before,
          THREADS);

    t0 = tc_now_us();
    /* Returns once every waiting call has left the client (a thread may
     * still be on its way out of redlock_acquire's frame: no timestamp
     * can tell, TSan and ASan can). */
    redlock_client_free(c);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        CHECK(workers[i].own_failures == 0, "thread %d: %s", i, workers[i].own_error);
        CHECK(workers[i].held[0].to_us - t0 < 900000, "thread %d waited %llu us for its retry", i,
              (unsigned long long)(workers[i].held[0].to_us - t0));
    }
    for (int i = 0; i < THREADS; i++)
        tc_del_all(workers[i].own, strlen(workers[i].own));
}

/* A cancel fired from one thread while another frees the client: the
 * source hands the client a request for its I/O thread; the free must
 * neither lose that request's hold on the source (a leak) nor let it reach
 * a client already gone (ASan, TSan). Rounds, because the two race. */
struct canceller {
    redlock_client *c;
    redlock_cancel *cc;
    const char *res;
    pthread_barrier_t *go;
    int rc;
};

static void *waiting_acquire(void *arg)
{
    struct canceller *k = arg;
    redlock_acquire_opts o;
    redlock_resource r = { k->res, strlen(k->res) };
    redlock_lock *l = NULL;

    redlock_acquire_opts_init(&o);
    o.ttl_ms = TTL_MS;
    o.wait_ms = REDLOCK_WAIT_FOREVER;
    o.cancel = k->cc;
    k->rc = redlock_acquire_with(k->c, &r, 1, &o, &l, NULL, NULL);
    redlock_lock_free(l);
    return NULL;
}

static void *fire(void *arg)
{
    struct canceller *k = arg;

    pthread_barrier_wait(k->go);
    redlock_cancel_fire(k->cc);
    return NULL;
}

static void a_cancel_fired_while_the_client_is_freed_ends_the_wait_once(void)
{
    char res[128];
    pthread_barrier_t go;
    long long seen;

    tc_resource(res, sizeof(res), "threads/cancel-free");
    for (int m = 0; m < tc_n(); m++)
        tc_plant(m, res, strlen(res), "someone-else", TTL_MS);
    pthread_barrier_init(&go, NULL, 2);
    for (int round = 0; round < 20; round++) {
        struct canceller k = { .res = res, .go = &go, .rc = 0 };
        pthread_t waiter, firer;

        k.c = tc_client(NULL, -1);
        CHECK(redlock_cancel_new(&k.cc) == 0, "redlock_cancel_new");
        seen = tc_acquires_seen(0);
        if (pthread_create(&waiter, NULL, waiting_acquire, &k) != 0 ||
            pthread_create(&firer, NULL, fire, &k) != 0)
            abort();
        /* The acquire is waiting once its first attempt reached master 0. */
        uint64_t t0 = tc_now_us();
        while (tc_acquires_seen(0) <= seen && tc_now_us() - t0 < 5000000)
            ;
        CHECK(tc_acquires_seen(0) > seen, "round %d: the acquire never reached master 0", round);
        pthread_barrier_wait(&go);
        redlock_client_free(k.c);
        pthread_join(firer, NULL);
        pthread_join(waiter, NULL);
        CHECK(k.rc == REDLOCK_ECANCELED || k.rc == REDLOCK_ESHUTDOWN,
              "round %d: the wait ended with %s", round, redlock_err_name(k.rc));
        redlock_cancel_free(k.cc);
    }
    pthread_barrier_destroy(&go);
    tc_del_all(res, strlen(res));
}

/* Masters written as names are looked up again, on a thread of the
 * look-up's own (resolve.c), before every reconnect: while sixteen threads
 * take and release locks and every master drops the client's connections,
 * and while the client is freed with a look-up in flight. What this adds
 * to the suite is the look-up thread under TSan and ASan ("localhost"
 * resolves without any DNS). */
static atomic_int lookup_done, lookup_wins;

/* A release that a dropped connection cuts short leaves the key until its
 * ttl, and the thread's next acquires meet it (ECONFLICT): a short ttl, and
 * a thread that has not held its lock after CYCLES tries goes on until it
 * has, for up to LOOKUP_DEADLINE_S. With 30 s keys two threads in four
 * once spent all their tries on such a key. */
#define LOOKUP_TTL_MS 3000u
#define LOOKUP_DEADLINE_S 90

static void *lookup_worker(void *arg)
{
    struct worker *w = arg;
    uint64_t deadline = tc_now_us() + LOOKUP_DEADLINE_S * 1000000ull;
    for (int k = 0; k < CYCLES || (w->shared_wins == 0 && tc_now_us() < deadline); k++) {
        redlock_lock *l = NULL;
        redlock_error e;
        int rc = redlock_acquire(w->c, w->own, strlen(w->own), LOOKUP_TTL_MS, &l, NULL, &e);
        if (rc == 0) {
            w->shared_wins++;
            atomic_fetch_add(&lookup_wins, 1);
            redlock_release(w->c, l, NULL, NULL);
            redlock_lock_free(l);
        } else if (rc == REDLOCK_ECONFLICT) {
            w->conflicts++; /* a release cut short: held until its ttl */
        } else if (rc == REDLOCK_ENOQUORUM) {
            w->no_quorum++; /* masters that just dropped us are down for a round trip */
        } else {
            w->shared_bad++;
            snprintf(w->shared_error, sizeof(w->shared_error), "%s", e.msg);
        }
    }
    atomic_fetch_add(&lookup_done, 1);
    return NULL;
}

static void names_are_looked_up_again_beside_the_calls(void)
{
    enum { LOOKUP_THREADS = 4 };
    pthread_t th[LOOKUP_THREADS];
    redlock_config cfg;
    char names[512] = "";
    const char *p = tc_masters();
    redlock_client *c;

    /* "127.0.0.1:P,..." written as "localhost:P,..." */
    for (size_t used = 0; *p;) {
        const char *colon = strchr(p, ':'), *comma = strchr(p, ',');
        size_t port_len = comma ? (size_t)(comma - colon) : strlen(colon);
        used += (size_t)snprintf(names + used, sizeof(names) - used, "%slocalhost%.*s",
                                 used ? "," : "", (int)port_len, colon);
        p = comma ? comma + 1 : colon + port_len;
    }
    tc_config(&cfg);
    cfg.masters = names;
    cfg.log_fn = tc_log; /* the look-ups say so at DEBUG */
    cfg.log_level = REDLOCK_LOG_DEBUG;
    cfg.reconnect_min_ms = 1;
    atomic_store(&lookup_done, 0);
    atomic_store(&lookup_wins, 0);
    c = tc_client(&cfg, -1);
    for (int i = 0; i < LOOKUP_THREADS; i++) {
        memset(&workers[i], 0, sizeof(workers[i]));
        workers[i].c = c;
        tc_resource(workers[i].own, sizeof(workers[i].own), "threads/names");
        if (pthread_create(&th[i], NULL, lookup_worker, &workers[i]) != 0)
            abort();
    }
    /* Drop every connection of the client's after each grant, until the
     * workers are done: each reconnect looks the name up again. */
    int kills = 0;
    while (atomic_load(&lookup_done) < LOOKUP_THREADS) {
        int wins = atomic_load(&lookup_wins);
        for (int m = 0; m < tc_n(); m++)
            freeReplyObject(tc_cmd(m, "CLIENT KILL TYPE normal SKIPME yes"));
        kills++;
        TC_AWAIT(atomic_load(&lookup_wins) > wins || atomic_load(&lookup_done) == LOOKUP_THREADS,
                 30000);
    }
    for (int i = 0; i < LOOKUP_THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < LOOKUP_THREADS; i++) {
        CHECK(workers[i].shared_bad == 0, "thread %d: %s", i, workers[i].shared_error);
        CHECK(workers[i].shared_wins > 0,
              "thread %d never held its lock (%d conflicts, %d without a quorum)", i,
              workers[i].conflicts, workers[i].no_quorum);
    }
    CHECK(tc_log_contains("looking \"localhost\" up again"),
          "no look-up in %d rounds of dropped connections", kills);
    /* Freed with look-ups in flight: drop the connections, then free at
     * once; the look-up threads end by themselves (ASan, TSan). */
    for (int m = 0; m < tc_n(); m++)
        freeReplyObject(tc_cmd(m, "CLIENT KILL TYPE normal SKIPME yes"));
    redlock_client_free(c);
    for (int i = 0; i < LOOKUP_THREADS; i++)
        tc_del_all(workers[i].own, strlen(workers[i].own));
}

int main(void)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {
        { "threads::sixteen_threads_share_one_client_and_never_overlap",
          sixteen_threads_share_one_client_and_never_overlap },
        { "threads::calls_from_many_threads_proceed_in_parallel",
          calls_from_many_threads_proceed_in_parallel },
        { "threads::freeing_the_client_returns_eshutdown_to_waiting_threads",
          freeing_the_client_returns_eshutdown_to_waiting_threads },
        { "threads::a_cancel_fired_while_the_client_is_freed_ends_the_wait_once",
          a_cancel_fired_while_the_client_is_freed_ends_the_wait_once },
        { "threads::names_are_looked_up_again_beside_the_calls",
          names_are_looked_up_again_beside_the_calls },
    };
    const int n = (int)(sizeof(tests) / sizeof(tests[0]));
    int failed = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("TAP version 13\n1..%d\n", n);
    for (int i = 0; i < n; i++) {
        uint64_t t0 = tc_now_us();

        failures = 0;
        tests[i].run();
        printf("%s %d - %s (%.2fs)\n", failures ? "not ok" : "ok", i + 1, tests[i].name,
               (double)(tc_now_us() - t0) / 1e6);
        failed += failures != 0;
    }
    return failed ? 1 : 0;
}
