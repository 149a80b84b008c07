/* test-fence.c - fencing tokens: strictly increasing across successive
 * holders, through kills and restarts of masters with persistence, and a
 * fenced store that rejects a paused holder's late write; the largest
 * counter of the masters that granted, whichever answers last.
 *
 * Runs on a cluster started with --aof (appendfsync always): the claim in
 * docs/waiting.md ("Fencing tokens") needs masters that keep their counters
 * across restarts.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <redlock.h>

#include "await.h"
#include "cluster.h"
#include "core.h"

TestSuite(fence, .fini = tc_heal, .timeout = 90);

static redlock_client *client(void)
{
    redlock_config cfg;
    tc_config(&cfg); /* the tests' node timeout: 50 ms is too tight under ASan on busy cores */
    cfg.retry_count = 0;
    cfg.reconnect_max_ms = 50;
    redlock_client *c;
    redlock_error err;
    cr_assert(eq(int, redlock_client_new(&cfg, NULL, &c, &err), 0), "%s", err.msg);
    return c;
}

Test(fence, tokens_are_positive_and_grow_for_one_client)
{
    redlock_client *c = client();
    char res[128];
    tc_resource(res, sizeof(res), "grow");
    redlock_resource r = { res, strlen(res) };
    uint64_t last = 0;
    for (int i = 0; i < 20; i++) {
        redlock_lock *l;
        redlock_error err;
        int rc = redlock_acquire_set(c, &r, 1, 5000, REDLOCK_FENCE, &l, NULL, &err);
        cr_assert(eq(int, rc, 0), "%s", err.msg);
        uint64_t f = redlock_lock_fence(l);
        cr_assert(gt(u64, f, last), "fence %llu after %llu", (unsigned long long)f,
                  (unsigned long long)last);
        last = f;
        cr_assert(eq(int, redlock_release(c, l, NULL, &err), 0), "%s", err.msg);
        redlock_lock_free(l);
    }
    /* an unfenced lock has no token */
    redlock_lock *l;
    cr_assert(eq(int, redlock_acquire(c, res, strlen(res), 5000, &l, NULL, NULL), 0));
    cr_assert(eq(u64, redlock_lock_fence(l), 0));
    redlock_release(c, l, NULL, NULL);
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* ---- many contenders, kills and restarts -------------------------------- */

#define MAXG 20000
static struct grant {
    uint64_t at_us;
    uint64_t fence;
} grants[MAXG];
static int ngrants;
static pthread_mutex_t gmu = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop_flag;
static char shared_res[128];

static void *contender(void *arg)
{
    (void)arg;
    redlock_client *c = client();
    redlock_resource r = { shared_res, strlen(shared_res) };
    while (!__atomic_load_n(&stop_flag, __ATOMIC_ACQUIRE)) {
        redlock_lock *l;
        if (redlock_acquire_set(c, &r, 1, 2000, REDLOCK_FENCE, &l, NULL, NULL) != 0)
            continue;
        /* Holders never overlap (the checker elsewhere proves it), so the
         * order in which acquires return is the order of grants. */
        uint64_t at = tc_now_us();
        pthread_mutex_lock(&gmu);
        if (ngrants < MAXG)
            grants[ngrants++] = (struct grant){ at, redlock_lock_fence(l) };
        pthread_mutex_unlock(&gmu);
        redlock_release(c, l, NULL, NULL);
        redlock_lock_free(l);
    }
    redlock_client_free(c);
    return NULL;
}

static int grant_count(void)
{
    pthread_mutex_lock(&gmu);
    int n = ngrants;
    pthread_mutex_unlock(&gmu);
    return n;
}

/* Await @n grants more than now (bounded at 20 s). */
#define GRANTS_BETWEEN_FAULTS 10
static int await_more_grants(int n)
{
    int want = grant_count() + n;

    return TC_AWAIT(grant_count() >= want, 20000);
}

static int by_time(const void *a, const void *b)
{
    const struct grant *x = a, *y = b;
    return x->at_us < y->at_us ? -1 : x->at_us > y->at_us;
}

Test(fence, strictly_increasing_across_holders_through_kills_and_restarts)
{
    cr_assert(tc_aof(), "this test needs a cluster started with --aof");
    tc_resource(shared_res, sizeof(shared_res), "contended");
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, contender, NULL);
    /* A schedule of faults: each kill, then a restart from the AOF, with
     * contention running between them (some grants each time). */
    int victims[] = { 0, 3, 1, 4, 2 };
    for (int k = 0; k < 5; k++) {
        cr_assert(await_more_grants(GRANTS_BETWEEN_FAULTS), "no grants before killing %d",
                  victims[k]);
        tc_kill(victims[k]);
        cr_assert(await_more_grants(GRANTS_BETWEEN_FAULTS), "no grants with %d dead", victims[k]);
        tc_restart(victims[k]);
    }
    __atomic_store_n(&stop_flag, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    cr_assert(gt(int, ngrants, 50), "only %d grants: contention did not run", ngrants);
    qsort(grants, (size_t)ngrants, sizeof(grants[0]), by_time);
    for (int i = 1; i < ngrants; i++)
        cr_assert(gt(u64, grants[i].fence, grants[i - 1].fence), "grant %d: fence %llu after %llu",
                  i, (unsigned long long)grants[i].fence, (unsigned long long)grants[i - 1].fence);
    cr_log_info("%d grants, fences %llu..%llu, strictly increasing through 5 kill/restarts",
                ngrants, (unsigned long long)grants[0].fence,
                (unsigned long long)grants[ngrants - 1].fence);
}

/* ---- a fenced store ------------------------------------------------------ */

/* The protected resource: accepts a write only with a token at least as new
 * as the newest it has seen. */
static uint64_t store_last;
static bool store_write(uint64_t fence)
{
    if (fence < store_last)
        return false;
    store_last = fence;
    return true;
}

Test(fence, store_rejects_the_late_write_of_a_paused_holder)
{
    char res[128];
    tc_resource(res, sizeof(res), "store");
    int to_parent[2], go[2];
    cr_assert(eq(int, pipe(to_parent), 0));
    cr_assert(eq(int, pipe(go), 0));
    pid_t pid = fork();
    if (pid == 0) {
        /* Holder A: takes the lock, reports its fence, then (after being
         * stopped and resumed) tries to write with it. */
        redlock_config cfg;
        redlock_config_init(&cfg);
        cfg.masters = tc_masters();
        redlock_client *c;
        if (redlock_client_new(&cfg, NULL, &c, NULL) != 0)
            _exit(2);
        redlock_resource r = { res, strlen(res) };
        redlock_lock *l;
        if (redlock_acquire_set(c, &r, 1, 500, REDLOCK_FENCE, &l, NULL, NULL) != 0)
            _exit(3);
        uint64_t f = redlock_lock_fence(l);
        if (write(to_parent[1], &f, sizeof(f)) != sizeof(f))
            _exit(4);
        char b;
        if (read(go[0], &b, 1) != 1) /* resumed: the late write */
            _exit(5);
        int64_t left = redlock_lock_validity_ms(l);
        if (write(to_parent[1], &left, sizeof(left)) != sizeof(left))
            _exit(6);
        if (write(to_parent[1], &f, sizeof(f)) != sizeof(f))
            _exit(7);
        _exit(0);
    }
    uint64_t fa = 0;
    cr_assert(eq(long, (long)read(to_parent[0], &fa, sizeof(fa)), (long)sizeof(fa)));
    cr_assert(store_write(fa), "A's first write is accepted");
    kill(pid, SIGSTOP); /* A pauses: GC, swap, ... */

    /* B waits out A's ttl, takes the lock, writes. */
    redlock_client *c = client();
    redlock_resource r = { res, strlen(res) };
    redlock_lock *lb = NULL;
    redlock_error err;
    int rc = REDLOCK_ECONFLICT;
    TC_AWAIT((rc = redlock_acquire_set(c, &r, 1, 5000, REDLOCK_FENCE, &lb, NULL, &err)) == 0,
             2000); /* A's 500 ms ttl lapsing */
    cr_assert(eq(int, rc, 0), "B: %s", err.msg);
    uint64_t fb = redlock_lock_fence(lb);
    cr_assert(gt(u64, fb, fa), "B's token %llu is newer than A's %llu", (unsigned long long)fb,
              (unsigned long long)fa);
    cr_assert(store_write(fb));

    kill(pid, SIGCONT); /* A wakes up and writes with its old token */
    cr_assert(eq(long, (long)write(go[1], "g", 1), 1L));
    int64_t a_left = 0;
    uint64_t late = 0;
    cr_assert(eq(long, (long)read(to_parent[0], &a_left, sizeof(a_left)), (long)sizeof(a_left)));
    cr_assert(eq(long, (long)read(to_parent[0], &late, sizeof(late)), (long)sizeof(late)));
    cr_assert(le(i64, a_left, 0), "A's own validity tells it the lease is over");
    cr_assert(not(store_write(late)), "the store rejects A's late write (token %llu < %llu)",
              (unsigned long long)late, (unsigned long long)store_last);
    int st;
    waitpid(pid, &st, 0);
    int clean = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    cr_assert(clean, "holder exited with status %d", st);
    redlock_release(c, lb, NULL, NULL);
    redlock_lock_free(lb);
    redlock_client_free(c);
}

/* ---- one counter per master ----------------------------------------------- */

static const char fence_key[] = "\0redlock:fence";

/* Keys named "...\0fence" on master @m (SCAN: the per-resource counters). */
static long per_resource_counters(int m)
{
    long n = 0;
    char cursor[32] = "0";
    do {
        redisReply *r = tc_cmd(m, "SCAN %s MATCH %b COUNT 1000", cursor, "*\0fence", (size_t)7);
        cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2, "SCAN failed");
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        n += (long)r->element[1]->elements;
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return n;
}

Test(fence, distinct_fenced_resources_leave_one_counter_per_master)
{
    /* A fleet that fences per job id must not grow a key per id: the keys a
     * master holds are the live locks, the waiters, and a constant. */
    redlock_client *c = client();
    long before[16];
    for (int m = 0; m < tc_n(); m++)
        before[m] = per_resource_counters(m);
    uint64_t last = 0;
    for (int i = 0; i < 200; i++) {
        char res[128];
        tc_resource(res, sizeof(res), "job");
        redlock_resource r = { res, strlen(res) };
        redlock_lock *l;
        redlock_error err;
        cr_assert(eq(int, redlock_acquire_set(c, &r, 1, 5000, REDLOCK_FENCE, &l, NULL, &err), 0),
                  "%s", err.msg);
        cr_assert(gt(u64, redlock_lock_fence(l), last), "fences grow across resources too");
        last = redlock_lock_fence(l);
        cr_assert(eq(int, redlock_release(c, l, NULL, &err), 0), "%s", err.msg);
        redlock_lock_free(l);
    }
    tc_barrier(c); /* the last acquire and release returned at quorum: let them run everywhere */
    for (int m = 0; m < tc_n(); m++) {
        cr_expect(eq(i64, per_resource_counters(m), before[m]),
                  "master %d: a counter per resource was created", m);
        redisReply *r = tc_cmd(m, "GET %b", fence_key, sizeof(fence_key) - 1);
        cr_expect(r && r->type == REDIS_REPLY_STRING && strtoull(r->str, NULL, 10) >= 200,
                  "master %d: its counter counts every fenced grant", m);
        freeReplyObject(r);
    }
    redlock_client_free(c);
}

Test(fence, a_counter_from_before_the_change_keeps_fences_growing)
{
    /* Upgrade: a resource whose counter (R\0fence) an older client left at
     * 10^6 gets a larger fence, and its counter follows, so that an older
     * client still running counts up from above every fence handed out. */
    redlock_client *c = client();
    char res[128], key[160];
    tc_resource(res, sizeof(res), "upgrade");
    size_t len = strlen(res);
    memcpy(key, res, len);
    memcpy(key + len, "\0fence", 6);
    for (int m = 0; m < tc_n(); m++)
        freeReplyObject(tc_cmd(m, "SET %b 1000000", key, len + 6));
    redlock_resource r = { res, len };
    redlock_lock *l;
    redlock_error err;
    cr_assert(eq(int, redlock_acquire_set(c, &r, 1, 5000, REDLOCK_FENCE, &l, NULL, &err), 0), "%s",
              err.msg);
    uint64_t f = redlock_lock_fence(l);
    cr_expect(gt(u64, f, 1000000u), "fence %llu went below the old counter", (unsigned long long)f);
    cr_assert(eq(int, redlock_release(c, l, NULL, &err), 0), "%s", err.msg);
    redlock_lock_free(l);
    int in_step = 0;
    for (int m = 0; m < tc_n(); m++) {
        redisReply *o = tc_cmd(m, "GET %b", key, len + 6);
        redisReply *g = tc_cmd(m, "GET %b", fence_key, sizeof(fence_key) - 1);
        uint64_t ov = o && o->type == REDIS_REPLY_STRING ? strtoull(o->str, NULL, 10) : 0;
        uint64_t gv = g && g->type == REDIS_REPLY_STRING ? strtoull(g->str, NULL, 10) : 0;
        in_step += ov >= f && gv >= f; /* the write-back reached it (a majority at least) */
        freeReplyObject(o);
        freeReplyObject(g);
        freeReplyObject(tc_cmd(m, "DEL %b", key, len + 6));
    }
    cr_expect(ge(int, in_step, tc_n() / 2 + 1), "only %d masters kept the counters in step",
              in_step);
    redlock_client_free(c);
}

Test(fence, the_fence_is_the_largest_of_the_counters_that_granted)
{
    /* The fence is the largest counter among the masters that granted, in
     * whatever order they answer: a master whose counter is behind (here
     * deleted, as an operator's DEL or a restore of that key alone would)
     * grants last, and the fence still goes above every one before.
     * Masters 3 and 4 are down, so every quorum needs master 0, and its
     * writes are held so that its answer comes last. */
    redlock_client *c = client();
    char res[128];
    tc_resource(res, sizeof(res), "largest");
    redlock_resource r = { res, strlen(res) };
    redlock_lock *l;
    redlock_error err;
    TC_OUTCOME(out);
    uint64_t before = 0;
    for (int i = 0; i < 3; i++) {
        cr_assert(eq(int, redlock_acquire_set(c, &r, 1, 5000, REDLOCK_FENCE, &l, NULL, &err), 0),
                  "%s", err.msg);
        before = redlock_lock_fence(l);
        cr_assert(eq(int, redlock_release(c, l, NULL, &err), 0), "%s", err.msg);
        redlock_lock_free(l);
    }
    freeReplyObject(tc_cmd(0, "DEL %b", fence_key, sizeof(fence_key) - 1));
    tc_kill(3);
    tc_kill(4);
    tc_pause_writes(0, 200);
    cr_assert(eq(int, redlock_acquire_set(c, &r, 1, 5000, REDLOCK_FENCE, &l, out, &err), 0), "%s",
              err.msg);
    cr_expect(eq(int, redlock_outcome_vote(out, 0)->kind, REDLOCK_VOTE_OK), "master 0 voted %s",
              redlock_vote_kind_name(redlock_outcome_vote(out, 0)->kind));
    cr_expect(gt(u64, redlock_lock_fence(l), before), "the fence went back from %llu to %llu",
              (unsigned long long)before, (unsigned long long)redlock_lock_fence(l));
    cr_assert(eq(int, redlock_release(c, l, NULL, &err), 0), "%s", err.msg);
    redlock_lock_free(l);
    redlock_client_free(c);
}
