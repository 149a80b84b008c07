/* test-faults-process.c - masters that die, stop, restart, forget or stall
 * while clients fight over one lock; every operation recorded and checked.
 *
 * Each test runs four worker threads, each with its own blocking client
 * (four independent clients), contending on one resource: acquire, hold a
 * few ms, sometimes extend, release. Every call goes into a history file
 * (helpers/history.h). While they run, the test breaks masters the way
 * NOTES.md section 3 lists, then stops the workers, snapshots what the
 * masters still hold, and runs tests/history/check.py over it all:
 *
 *   - safety where NOTES.md claims it: no two holders at once, no release
 *     of someone else's lock, no keys left beyond their ttl;
 *   - liveness where it claims it: with two of five masters dead, stopped
 *     or stalled, acquires keep succeeding;
 *   - where a fault breaks an assumption (A2: a master that restarts
 *     without persistence, or is flushed, forgets the locks it granted),
 *     the danger itself: with the restart guard off, the history does show
 *     two holders, so the checker is proven to see it; with the guard on
 *     (the default), it does not;
 *   - the guard's own window, and fencing tokens across restarts (section
 *     5's claim), each in a scenario built to break them if anything can.
 *
 * Suite process runs on a plain cluster, suite process_aof on one started
 * with --aof (appendfsync always): meson runs this file twice, with a
 * filter each. Run alone (faults); .fini heals the cluster.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <hiredis/hiredis.h>

#include <redlock.h>

#include "cluster.h"
#include "history.h"

#define WORKERS 4
/* One ttl for every client: the restart guard's window is the longest ttl
 * the guarding client itself has used, so it covers a holder with a longer
 * ttl for only part of that holder's lease. Long enough for a holder to
 * outlive three master restarts under sanitizers. */
#define TTL_MS 3000u
#define NODE_TIMEOUT_MS 250u
#define MAX_GRANTS 8192
#define OUT_SIZE 24576

static void heal(void)
{
    tc_heal();
}

TestSuite(process, .fini = heal, .timeout = 55);
TestSuite(process_aof, .fini = heal, .timeout = 55);

/* ---- time ------------------------------------------------------------------ */

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* ---- one run: workers contending on one resource ------------------------------ */

typedef struct grant {
    uint64_t complete_us;
    uint32_t oks;
    int worker;            /* -1: the test's own holder */
} grant;

typedef struct run run;

typedef struct worker {
    run *run;
    int id;
    char name[16];
    pthread_t th;
    redlock_client *c;
    unsigned seed;
} worker;

struct run {
    hist *h;
    char path[512];          /* the history */
    char snap[512];          /* the snapshot of keys at the end */
    char res[160];
    size_t len;
    int guard;               /* restart_guard of every client */
    atomic_int stop;
    pthread_mutex_t mu;
    grant grants[MAX_GRANTS];
    int n_grants;
    int acq[20];             /* acquire results by -rc */
    int rel[20];             /* release results by -rc */
    int ext[20];             /* extend results by -rc */
    uint64_t rel_fail_after; /* count release/extend failures after this time (0: never) */
    int late_failures;       /* releases/extends that failed after rel_fail_after */
    char late_what[400];
    uint64_t last_answer[REDLOCK_MAX_MASTERS]; /* last time master i answered a vote */
    worker w[WORKERS];
    int n_workers;
};

static void config(redlock_config *cfg, int guard)
{
    redlock_config_init(cfg);
    cfg->masters = tc_masters();
    cfg->password = tc_password();
    cfg->node_timeout_ms = NODE_TIMEOUT_MS;
    cfg->retry_count = 2;
    cfg->retry_delay_ms = 20;
    cfg->retry_jitter_ms = 20;
    cfg->reconnect_min_ms = 10;
    cfg->reconnect_max_ms = 100;
    cfg->restart_guard = guard;
}

/* A blocking client connected to every master (a ping answered by all). */
static redlock_client *client(int guard)
{
    redlock_config cfg;
    redlock_client *c = NULL;
    redlock_error e;
    int rc;

    config(&cfg, guard);
    rc = redlock_client_new(&cfg, NULL, &c, &e);
    cr_assert(eq(int, rc, 0), "redlock_client_new: %s", e.msg);
    for (int tries = 0; tries < 400; tries++) {
        redlock_status st;

        memset(&st, 0, sizeof(st));
        redlock_ping(c, &st, NULL);
        if (st.n_answered == (uint32_t)tc_n())
            return c;
        sleep_ms(25);
    }
    cr_fatal("a new client did not reach all %d masters in 10 s", tc_n());
    return NULL;
}

static int idx(int rc)
{
    return rc <= 0 && rc > -20 ? -rc : 19;
}

static void note_grant(run *r, int worker, const redlock_outcome *out)
{
    pthread_mutex_lock(&r->mu);
    if (r->n_grants < MAX_GRANTS)
        r->grants[r->n_grants++] = (grant){ hist_now_us(), hist_oks(out), worker };
    pthread_mutex_unlock(&r->mu);
}

static void note(run *r, int *table, int rc, const char *what, const redlock_error *e)
{
    pthread_mutex_lock(&r->mu);
    table[idx(rc)]++;
    if (rc != 0 && r->rel_fail_after && hist_now_us() > r->rel_fail_after) {
        if (!r->late_failures++)
            snprintf(r->late_what, sizeof(r->late_what), "%s: %s: %s", what,
                     redlock_err_name(rc), e->msg);
    }
    pthread_mutex_unlock(&r->mu);
}

/* Remember when each master last answered (ok, held, gone or an error
 * reply: anything but silence or a dropped connection). */
static void note_votes(run *r, const redlock_outcome *out)
{
    uint64_t now = hist_now_us();

    pthread_mutex_lock(&r->mu);
    for (uint32_t i = 0; i < out->n_masters && i < REDLOCK_MAX_MASTERS; i++) {
        int k = out->votes[i].kind;

        if (k == REDLOCK_VOTE_OK || k == REDLOCK_VOTE_HELD || k == REDLOCK_VOTE_GONE ||
            k == REDLOCK_VOTE_ERROR)
            r->last_answer[i] = now;
    }
    pthread_mutex_unlock(&r->mu);
}

static void *work(void *arg)
{
    worker *w = arg;
    run *r = w->run;

    while (!atomic_load(&r->stop)) {
        redlock_lock *l = NULL;
        redlock_outcome out;
        redlock_error e;
        uint64_t t0 = hist_now_us();
        int rc = redlock_acquire(w->c, r->res, r->len, TTL_MS, &l, &out, &e);

        hist_acquire(r->h, w->name, r->res, r->len, TTL_MS, t0, rc, l, &out);
        note_votes(r, &out);
        pthread_mutex_lock(&r->mu);
        r->acq[idx(rc)]++;
        pthread_mutex_unlock(&r->mu);
        if (rc != 0) {
            sleep_ms(5 + rand_r(&w->seed) % 15);
            continue;
        }
        note_grant(r, w->id, &out);
        sleep_ms(2 + rand_r(&w->seed) % 15);
        if (rand_r(&w->seed) % 2) {
            t0 = hist_now_us();
            rc = redlock_extend(w->c, l, TTL_MS, &out, &e);
            hist_extend(r->h, w->name, TTL_MS, t0, rc, l, &out);
            note(r, r->ext, rc, "extend", &e);
            sleep_ms(2 + rand_r(&w->seed) % 10);
        }
        t0 = hist_now_us();
        rc = redlock_release(w->c, l, &out, &e);
        hist_release(r->h, w->name, t0, rc, l, &out);
        note_votes(r, &out);
        note(r, r->rel, rc, "release", &e);
        redlock_lock_free(l);
    }
    return NULL;
}

/* Start @workers workers (0: a history only) on a fresh resource, every
 * client connected first. */
static run *run_start_n(int guard, int workers)
{
    run *r = calloc(1, sizeof(*r));
    const char *dir = getenv("REDLOCK_TEST_DIR");

    cr_assert(r != NULL);
    cr_assert(dir && *dir, "REDLOCK_TEST_DIR is not set (run through meson / with-cluster.sh)");
    r->guard = guard;
    pthread_mutex_init(&r->mu, NULL);
    tc_resource(r->res, sizeof(r->res), NULL);
    r->len = strlen(r->res);
    snprintf(r->path, sizeof(r->path), "%s/history-%d.jsonl", dir, (int)getpid());
    snprintf(r->snap, sizeof(r->snap), "%s/snapshot-%d.jsonl", dir, (int)getpid());
    unlink(r->path);
    unlink(r->snap);
    r->h = hist_open(r->path);
    cr_assert(r->h != NULL, "hist_open %s: %s", r->path, strerror(errno));
    r->n_workers = workers;
    for (int i = 0; i < workers; i++) {
        worker *w = &r->w[i];

        w->run = r;
        w->id = i;
        w->seed = (unsigned)(getpid() * 31 + i);
        snprintf(w->name, sizeof(w->name), "w%d", i);
        w->c = client(guard);
    }
    for (int i = 0; i < workers; i++)
        cr_assert(eq(int, pthread_create(&r->w[i].th, NULL, work, &r->w[i]), 0));
    return r;
}

static run *run_start(int guard)
{
    return run_start_n(guard, WORKERS);
}

static void run_stop(run *r)
{
    atomic_store(&r->stop, 1);
    for (int i = 0; i < r->n_workers; i++) {
        pthread_join(r->w[i].th, NULL);
        redlock_client_free(r->w[i].c);
        r->w[i].c = NULL;
    }
}

/* Grants completed in [from, to) whose OK votes include all of @mask. */
static int grants_between(run *r, uint64_t from, uint64_t to, uint32_t mask)
{
    int n = 0;

    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n_grants; i++)
        if (r->grants[i].complete_us >= from && r->grants[i].complete_us < to &&
            (r->grants[i].oks & mask) == mask)
            n++;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* First grant completed at or after @from whose OK votes include @mask; 0 if none. */
static uint64_t first_grant(run *r, uint64_t from, uint32_t mask)
{
    uint64_t t = 0;

    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n_grants; i++)
        if (r->grants[i].complete_us >= from && (r->grants[i].oks & mask) == mask &&
            (!t || r->grants[i].complete_us < t))
            t = r->grants[i].complete_us;
    pthread_mutex_unlock(&r->mu);
    return t;
}

static void fault(run *r, const char *what, int master, int lost, uint64_t t0)
{
    cr_assert(eq(int, hist_fault(r->h, what, master, lost, t0), 0));
}

/* One fault, timed and recorded in the history: the time is taken before
 * the action, so the checker sees the fault no later than it happened. */
static void inject(run *r, void (*act)(int), const char *what, int master, int lost)
{
    uint64_t t0 = hist_now_us();
    act(master);
    fault(r, what, master, lost, t0);
}

/* ---- the end of a run: quiet masters, snapshot, checker ------------------------ */

static long long info_field(int m, const char *section, const char *field)
{
    redisReply *rep = tc_cmd(m, "INFO %s", section);
    long long v = -1;

    if (rep && rep->type == REDIS_REPLY_STRING) {
        char key[96];
        const char *p;

        snprintf(key, sizeof(key), "\r\n%s:", field);
        p = strstr(rep->str, key);   /* never the first line: that is "# Section" */
        if (p) {
            p += strlen(key);
            if (strncmp(p, "calls=", 6) == 0)
                p += 6;
            v = strtoll(p, NULL, 10);
        }
    }
    freeReplyObject(rep);
    return v;
}

/* Wait until every live master has dropped the workers' connections. A
 * master frees a client when it reads EOF, after running everything that
 * came before it on that connection, so from then on nothing the workers
 * sent can still change what the snapshot sees. */
static void quiesce(void)
{
    for (int m = 0; m < tc_n(); m++) {
        for (int tries = 0; tries < 500; tries++) {
            long long n = info_field(m, "clients", "connected_clients");

            if (n <= 1)   /* -1: dead master; 1: only our own INFO connection */
                break;
            sleep_ms(10);
        }
    }
}

/* What every live master holds under the resource, with its PTTL. */
static void snapshot(run *r)
{
    hist *s = hist_open(r->snap);

    cr_assert(s != NULL, "hist_open %s: %s", r->snap, strerror(errno));
    for (int m = 0; m < tc_n(); m++) {
        redisReply *v = tc_cmd(m, "GET %b", r->res, r->len);
        redisReply *t = tc_cmd(m, "PTTL %b", r->res, r->len);

        if (v && t && v->type == REDIS_REPLY_STRING && t->type == REDIS_REPLY_INTEGER)
            cr_assert(eq(int, hist_key(s, m, r->res, r->len, v->str, t->integer), 0));
        freeReplyObject(v);
        freeReplyObject(t);
    }
    hist_close(s);
}

/* Copy the history and snapshot where they survive the cluster's temp dir. */
static const char *keep(run *r)
{
    static char kept[600];
    const char *tmp = getenv("TMPDIR");
    char cmd[1800];

    snprintf(kept, sizeof(kept), "%s/redlock-history-%d.jsonl", tmp && *tmp ? tmp : "/tmp",
             (int)getpid());
    snprintf(cmd, sizeof(cmd), "cat '%s' '%s' > '%s' 2>/dev/null", r->path, r->snap, kept);
    if (system(cmd) != 0)
        return "(could not keep the history)";
    return kept;
}

/* Stop the workers, snapshot the masters, run the checker; returns its
 * exit status and leaves its output in @out. */
static int finish(run *r, const char *const *args, char *out, size_t size)
{
    static const char *const none[] = { NULL };
    const char *argv[8];
    char n[16];
    int k = 0, rc;

    run_stop(r);
    quiesce();
    snapshot(r);
    hist_close(r->h);
    r->h = NULL;
    snprintf(n, sizeof(n), "%d", tc_n());
    argv[k++] = "--masters";
    argv[k++] = n;
    for (int i = 0; (args ? args : none)[i] && k < 7; i++)
        argv[k++] = args[i];
    argv[k] = NULL;
    rc = hist_check(r->path, r->snap, argv, out, size);
    cr_assert(rc >= 0, "check.py did not run: %s", out);
    if (getenv("REDLOCK_KEEP_HISTORY"))
        cr_log_info("history kept in %s", keep(r));
    int acq_all = 0, rel_all = 0, ext_all = 0;
    for (int i = 0; i < 20; i++) {
        acq_all += r->acq[i];
        rel_all += r->rel[i];
        ext_all += r->ext[i];
    }
    if (r->n_workers)
        cr_log_info("%s: %d grants; acquires %d (conflict %d, no quorum %d); releases %d (ok %d, "
                    "not held %d); extends %d (ok %d)", r->res, r->n_grants, acq_all,
                    r->acq[idx(REDLOCK_ECONFLICT)], r->acq[idx(REDLOCK_ENOQUORUM)], rel_all,
                    r->rel[0], r->rel[idx(REDLOCK_ENOTHELD)], ext_all, r->ext[0]);
    return rc;
}

static void expect_clean(run *r, const char *const *args)
{
    static char out[OUT_SIZE];
    int rc = finish(r, args, out, sizeof(out));

    cr_assert(eq(int, rc, 0), "the checker found violations (history kept in %s):\n%s",
              keep(r), out);
    cr_assert(strstr(out, " 0 violations") != NULL, "%s", out);
    cr_log_info("%s", out);
}

static void run_free(run *r)
{
    hist_close(r->h);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* ---- SIGKILL ----------------------------------------------------------------------- */

/* Two of five masters killed mid-run: their votes are "down" at once, and
 * three masters still make a quorum: acquires keep succeeding, safely. */
Test(process, sigkill_two_masters_acquires_go_on)
{
    run *r = run_start(1);
    uint64_t t1, t2;

    sleep_ms(300);
    inject(r, tc_kill, "sigkill", 1, 0);
    inject(r, tc_kill, "sigkill", 3, 0);
    t1 = hist_now_us();
    sleep_ms(1500);
    t2 = hist_now_us();

    int after = grants_between(r, t1, t2, 0);
    int with_dead = grants_between(r, t1, t2, 1u << 1) + grants_between(r, t1, t2, 1u << 3);
    expect_clean(r, NULL);
    cr_expect(ge(int, after, 5), "only %d grants in the 1.5 s with two masters dead", after);
    cr_expect(eq(int, with_dead, 0), "%d grants counted a dead master", with_dead);
    run_free(r);
}

/* ---- SIGSTOP / SIGCONT ------------------------------------------------------------------ */

/* Two masters stopped (socket open, no answers) for 1.2 s: acquires decide
 * on the three that answer; when the two wake, they run their backlog in
 * order (each SET before its release), so nothing is left behind beyond
 * its ttl and no second holder appears. */
Test(process, sigstop_two_masters_acquires_go_on_and_backlogs_are_harmless)
{
    run *r = run_start(1);
    uint64_t t1, t2;

    sleep_ms(300);
    inject(r, tc_pause, "sigstop", 0, 0);
    inject(r, tc_pause, "sigstop", 2, 0);
    t1 = hist_now_us();
    sleep_ms(1200);
    t2 = hist_now_us();
    tc_resume(0);
    fault(r, "sigcont", 0, 0, t2);
    inject(r, tc_resume, "sigcont", 2, 0);
    sleep_ms(500);

    int during = grants_between(r, t1, t2, 0);
    expect_clean(r, NULL);
    cr_expect(ge(int, during, 4), "only %d grants in the 1.2 s with two masters stopped", during);
    run_free(r);
}

/* ---- restarts ------------------------------------------------------------------------ */

enum restart_mode { WITH_AOF, GUARD_ON, GUARD_OFF };

/*
 * The scenario that makes a restart dangerous, built on purpose (it is the
 * one NOTES.md's A2 rules out): masters 3 and 4 are dead when the test's
 * own client H takes the lock, so H counts exactly masters 0,1,2. Then 3
 * and 4 come back (empty unless AOF) and master 2 is killed and restarted:
 * without persistence it has forgotten H's key, and 2,3,4 are a majority
 * that knows nothing of H while H's validity still runs.
 *
 * WITH_AOF: master 2 keeps H's key (appendfsync always); the guard sees AOF
 *   and does not exclude the restarted masters: once H releases, grants
 *   count them at once. No violation.
 * GUARD_ON: each client saw 2, 3 and 4 restart (run_id changed) and leaves
 *   them out of its quorums for a ttl after their restart: no grant counts
 *   them inside that window, and no violation; after it, grants resume.
 * GUARD_OFF: a worker gets 2,3,4 while H holds 0,1 and its validity: the
 *   checker must report the overlap (and, told which master lost its keys,
 *   explain it by A2).
 */
static void restart_scenario(int mode)
{
    static char out[OUT_SIZE];
    int aof = mode == WITH_AOF;
    run *r = run_start(mode != GUARD_OFF);
    redlock_client *hc = client(mode != GUARD_OFF);
    redlock_lock *hl = NULL;
    redlock_outcome out_h;
    redlock_error e;
    uint64_t t0, restart34, restart2, restart2_done, released;
    int rc = -1;

    cr_assert(eq(int, tc_aof(), aof), "this test needs a cluster %s --aof", aof ? "with" : "without");
    sleep_ms(300);
    inject(r, tc_kill, "sigkill", 3, 0);
    inject(r, tc_kill, "sigkill", 4, 0);

    /* H takes the lock from 0,1,2 (it may have to wait for a worker's turn) */
    for (int tries = 0; tries < 100 && rc != 0; tries++) {
        t0 = hist_now_us();
        rc = redlock_acquire(hc, r->res, r->len, TTL_MS, &hl, &out_h, &e);
        hist_acquire(r->h, "H", r->res, r->len, TTL_MS, t0, rc, hl, &out_h);
    }
    cr_assert(eq(int, rc, 0), "H never got the lock: %s", e.msg);
    note_grant(r, -1, &out_h);
    cr_assert(eq(u32, hist_oks(&out_h), 0x07u), "H counted masters 0,1,2 only (oks 0x%x)",
              hist_oks(&out_h));

    restart34 = hist_now_us();
    tc_restart(3);
    fault(r, "restart", 3, !aof, restart34);
    inject(r, tc_restart, "restart", 4, !aof);
    restart2 = hist_now_us();
    tc_kill(2);
    tc_restart(2);
    fault(r, "kill+restart", 2, !aof, restart2);
    restart2_done = hist_now_us();
    {
        /* the premise: master 2 kept H's key with AOF, and lost it without */
        redisReply *v = tc_cmd(2, "GET %b", r->res, r->len);
        int kept = v && v->type == REDIS_REPLY_STRING && strcmp(v->str, redlock_lock_token(hl)) == 0;

        freeReplyObject(v);
        cr_assert(eq(int, kept, aof), "master 2 %s H's key across its restart", kept ? "kept" : "lost");
    }
    cr_assert(gt(i64, redlock_lock_validity_ms(hl), 0),
              "the restarts took longer than H's validity: the scenario tests nothing");

    if (mode == GUARD_OFF) {
        /* wait (within H's validity) for a worker to be granted by 2,3,4 */
        while (redlock_lock_validity_ms(hl) > 0 && !first_grant(r, restart2_done, 0x1c))
            sleep_ms(10);
    } else {
        sleep_ms(300);
    }
    t0 = hist_now_us();
    rc = redlock_release(hc, hl, &out_h, &e);
    hist_release(r->h, "H", t0, rc, hl, &out_h);
    released = hist_now_us();

    if (mode == GUARD_ON) {
        /* past master 2's guard window, and a second of grants after it */
        uint64_t until = restart2 + TTL_MS * 1000ull;

        sleep_ms((unsigned)(until > released ? (until - released) / 1000 : 0) + 1200);
    } else {
        sleep_ms(1000);
    }
    redlock_lock_free(hl);
    redlock_client_free(hc);

    uint64_t in_window2 = restart2 + TTL_MS * 1000ull, in_window34 = restart34 + TTL_MS * 1000ull;
    int counted2 = grants_between(r, restart2, in_window2, 1u << 2);
    int counted34 = grants_between(r, restart34, in_window34, 1u << 3) +
                    grants_between(r, restart34, in_window34, 1u << 4);
    int after_window = grants_between(r, in_window2, UINT64_MAX, 1u << 2);
    uint64_t overlap_grant = first_grant(r, restart2_done, 0x1c);

    if (mode == GUARD_OFF) {
        static const char *const explain[] = { "--explain-lost-keys", NULL };
        int crc = finish(r, NULL, out, sizeof(out));

        cr_assert(ne(u64, overlap_grant, 0), "no worker was granted by 2,3,4 while H held it");
        cr_assert(eq(int, crc, 1), "the checker missed two holders at once (exit %d, history "
                  "kept in %s):\n%s", crc, keep(r), out);
        cr_assert(strstr(out, "(overlap)") != NULL && strstr(out, "H (token") != NULL,
                  "the overlap reported is not H's:\n%s", out);
        cr_log_info("guard off: a worker was granted by 2,3,4 %.1f ms after master 2 came "
                    "back, while H held it; the checker says:\n%.2000s",
                    (overlap_grant - restart2_done) / 1000.0, out);
        crc = hist_check(r->path, r->snap, (const char *const[]){ "--masters", "5",
                         explain[0], NULL }, out, sizeof(out));
        cr_assert(eq(int, crc, 0), "the overlap is not the one master 2's lost keys explain:\n%s",
                  out);
        cr_assert(strstr(out, "EXPLAINED (overlap)") != NULL, "%s", out);
    } else {
        expect_clean(r, NULL);
        if (mode == GUARD_ON) {
            cr_expect(eq(int, counted2, 0), "%d grants counted master 2 within a ttl of its "
                      "restart without persistence", counted2);
            cr_expect(eq(int, counted34, 0), "%d grants counted master 3 or 4 within a ttl of "
                      "its restart", counted34);
            cr_expect(gt(int, after_window, 0), "no grant counted master 2 again after the "
                      "guard window");
        } else {
            cr_expect(gt(int, counted2, 0), "with AOF always, master 2 should count at once "
                      "after its restart (no guard), but no grant within a ttl counted it");
        }
    }
    cr_log_info("restart %s: grants counting master 2 within a ttl of its restart: %d, "
                "after: %d", mode == WITH_AOF ? "with AOF" : mode == GUARD_ON ? "guard on" :
                "guard off", counted2, after_window);
    run_free(r);
}

Test(process_aof, restart_with_aof_keeps_the_lock_and_counts_at_once)
{
    if (!tc_aof())
        cr_skip_test("needs a cluster with --aof (meson runs it as faults-process-aof)");
    restart_scenario(WITH_AOF);
}

Test(process, restart_without_persistence_guard_on_no_second_holder)
{
    if (tc_aof())
        cr_skip_test("needs a cluster without --aof");
    restart_scenario(GUARD_ON);
}

Test(process, restart_without_persistence_guard_off_shows_two_holders)
{
    if (tc_aof())
        cr_skip_test("needs a cluster without --aof");
    restart_scenario(GUARD_OFF);
}

/* Fencing across restarts. NOTES.md section 5 claims that a grant whose
 * attempt starts after another grant completed gets a larger token "if
 * masters keep their counters (AOF appendfsync always, or a restart delayed
 * past every ttl - the restart guard enforces the latter for this client)".
 * The counters are what must survive: a master restarted without
 * persistence comes back with its counter at 0 however long its votes are
 * kept out. Build the case: tokens climb while 3 and 4 are down, so only
 * 0,1,2 carry the latest; 3, 4 and 2 restart; 0 and 1 die; once the guard
 * lets 2,3,4 vote again, the next grant comes from them alone. With AOF the
 * counters survive and the token is larger; without, the claim as written
 * says it still is. */
static void fence_scenario(int aof)
{
    static char out[OUT_SIZE];
    run *r = run_start_n(1, 0);
    redlock_client *c = client(1);
    redlock_resource res = { r->res, r->len };
    const uint32_t ttl = 500;
    uint64_t t0, t1 = 0, t2 = 0;
    int rc;

    cr_assert(eq(int, tc_aof(), aof), "this test needs a cluster %s --aof", aof ? "with" : "without");
    for (int k = 0; k < 30; k++) {
        redlock_lock *l = NULL;
        redlock_outcome o;
        redlock_error e;

        if (k == 10) {
            inject(r, tc_kill, "sigkill", 3, 0);
            inject(r, tc_kill, "sigkill", 4, 0);
        }
        t0 = hist_now_us();
        rc = redlock_acquire_set(c, &res, 1, ttl, REDLOCK_FENCE, &l, &o, &e);
        hist_acquire(r->h, "c", r->res, r->len, ttl, t0, rc, l, &o);
        cr_assert(eq(int, rc, 0), "fenced acquire %d: %s", k, e.msg);
        t1 = redlock_lock_fence(l);
        t0 = hist_now_us();
        rc = redlock_release(c, l, &o, &e);
        hist_release(r->h, "c", t0, rc, l, &o);
        redlock_lock_free(l);
    }
    for (int m = 2; m <= 4; m++) {
        t0 = hist_now_us();
        if (m == 2)
            tc_kill(2);
        tc_restart(m);
        fault(r, "restart", m, !aof, t0);
    }
    for (int m = 0; m <= 1; m++) {
        inject(r, tc_kill, "sigkill", m, 0);
    }

    /* the next grant, from 2,3,4 once the guard lets them vote */
    t0 = hist_now_us();
    for (rc = -1; rc != 0 && hist_now_us() - t0 < 10000000u;) {
        redlock_lock *l = NULL;
        redlock_outcome o;
        redlock_error e;
        uint64_t t = hist_now_us();

        rc = redlock_acquire_set(c, &res, 1, ttl, REDLOCK_FENCE, &l, &o, &e);
        hist_acquire(r->h, "c", r->res, r->len, ttl, t, rc, l, &o);
        if (rc != 0) {
            sleep_ms(50);
            continue;
        }
        t2 = redlock_lock_fence(l);
        t = hist_now_us();
        rc = redlock_release(c, l, &o, &e);
        hist_release(r->h, "c", t, rc, l, &o);
        redlock_lock_free(l);
        rc = 0;
    }
    redlock_client_free(c);
    cr_assert(ne(u64, t2, 0), "no fenced grant from masters 2,3,4 within 10 s");
    cr_log_info("fence %s: last token while 3,4 were down %llu; first token from 2,3,4 after "
                "their restarts %llu", aof ? "with AOF" : "without persistence",
                (unsigned long long)t1, (unsigned long long)t2);
    rc = finish(r, NULL, out, sizeof(out));
    if (aof) {
        cr_expect(gt(u64, t2, t1), "the token went back from %llu to %llu with AOF",
                  (unsigned long long)t1, (unsigned long long)t2);
        cr_expect(eq(int, rc, 0), "the checker found violations (history kept in %s):\n%s",
                  keep(r), out);
    } else {
        /* NOTES §5: the claim needs masters that keep their counters. A
         * restart without persistence starts them again from 0 and no guard
         * window brings them back: the order breaks, and the checker must
         * see it. */
        cr_expect(le(u64, t2, t1), "without persistence the token went back (%llu after %llu)",
                  (unsigned long long)t2, (unsigned long long)t1);
        cr_expect(ne(int, rc, 0), "the checker reports the fence going backwards");
        cr_expect(strstr(out, "fence") != NULL, "as a fence violation:\n%s", out);
    }
    run_free(r);
}

Test(process_aof, fence_increases_across_restarts_with_aof)
{
    if (!tc_aof())
        cr_skip_test("needs a cluster with --aof (meson runs it as faults-process-aof)");
    fence_scenario(1);
}

Test(process, fence_goes_back_after_restarts_without_persistence)
{
    if (tc_aof())
        cr_skip_test("needs a cluster without --aof");
    fence_scenario(0);
}

/* The guard's window is measured from the master's start, which the client
 * learns from INFO's uptime_in_seconds. Redis computes that as the
 * difference of two whole-second clock readings, so a master started at
 * 10.85 s and asked at 11.05 s says 1 s although it has run for 0.2 s: the
 * real start may lie up to a second after now - uptime, and a window
 * measured from there ends up to a second early. Arrange exactly that (a
 * restart just before a second ends, a client meeting it just after) with
 * an explicit restart_guard_ms, and ask when the master counts again: not
 * before the window has passed since the restart began. */
Test(process, restart_guard_window_is_not_cut_short_by_uptime_rounding)
{
    const uint32_t guard_ms = 2000;

    if (tc_aof())
        cr_skip_test("needs a cluster without --aof");
    for (int attempt = 0; attempt < 3; attempt++) {
        struct timespec now;
        uint64_t t0, sec0, met, admitted = 0;
        redlock_config cfg;
        redlock_client *c = NULL;
        redlock_status st;
        redlock_error e;
        long long up;

        tc_kill(2);
        clock_gettime(CLOCK_REALTIME, &now);
        sleep_ms((unsigned)((1750 - now.tv_nsec / 1000000) % 1000));   /* to x.750 s */
        clock_gettime(CLOCK_REALTIME, &now);
        sec0 = (uint64_t)now.tv_sec;
        t0 = hist_now_us();
        tc_restart(2);
        do {                                  /* into the next wall-clock second */
            sleep_ms(5);
            clock_gettime(CLOCK_REALTIME, &now);
        } while ((uint64_t)now.tv_sec == sec0);

        config(&cfg, 1);
        cfg.restart_guard_ms = guard_ms;
        cr_assert(eq(int, redlock_client_new(&cfg, NULL, &c, &e), 0), "%s", e.msg);
        for (int tries = 0; tries < 400; tries++) {
            memset(&st, 0, sizeof(st));
            redlock_ping(c, &st, NULL);
            if (st.masters[2].err == 0 && st.masters[2].run_id[0])
                break;
            sleep_ms(5);
        }
        up = st.masters[2].uptime_s;
        met = hist_now_us() - t0;
        if ((uint64_t)up * 1000000u <= met) {
            /* no rounding this time (the start slipped past the second) */
            redlock_client_free(c);
            continue;
        }
        cr_assert(st.masters[2].excluded, "a master up for %.2f s is not excluded by a %u ms "
                  "guard", (hist_now_us() - t0) / 1e6, guard_ms);
        while (!admitted && hist_now_us() - t0 < 3000000ull + guard_ms * 1000ull) {
            sleep_ms(10);
            redlock_ping(c, &st, NULL);
            if (!st.masters[2].excluded)
                admitted = hist_now_us();
        }
        redlock_client_free(c);
        cr_assert(ne(u64, admitted, 0), "master 2 was never admitted again");
        cr_expect(ge(u64, admitted - t0, guard_ms * 1000ull),
                  "master 2 counted again %.0f ms after its restart began, inside the %u ms "
                  "guard window (INFO said uptime %lld s after %.0f ms): the window is measured "
                  "from now - uptime, up to 1 s before the real start",
                  (admitted - t0) / 1000.0, guard_ms, up, met / 1000.0);
        cr_log_info("restart at x.75 s, met at the next second: uptime said %lld s; readmitted "
                    "after %.0f ms of a %u ms window", up, (admitted - t0) / 1000.0, guard_ms);
        return;
    }
    cr_skip_test("could not arrange a restart just before a wall-clock second ends in 3 "
                 "attempts (machine too slow?): the rounding was not exercised");
}

/* ---- SCRIPT FLUSH -------------------------------------------------------------------------- */

/* Every master forgets our scripts mid-run: releases and extends fall back
 * from EVALSHA to EVAL and keep working (none fails), and nothing else
 * changes. */
Test(process, script_flush_on_all_masters_is_transparent)
{
    run *r = run_start(1);
    long long eval_before = 0, eval_after = 0;
    uint64_t t0;

    for (int m = 0; m < tc_n(); m++)
        eval_before += info_field(m, "commandstats", "cmdstat_eval") > 0 ?
                       info_field(m, "commandstats", "cmdstat_eval") : 0;
    sleep_ms(300);
    r->rel_fail_after = hist_now_us();
    for (int m = 0; m < tc_n(); m++) {
        redisReply *rep;

        t0 = hist_now_us();
        rep = tc_cmd(m, "SCRIPT FLUSH");
        cr_assert(rep && rep->type == REDIS_REPLY_STATUS, "SCRIPT FLUSH on master %d failed", m);
        freeReplyObject(rep);
        fault(r, "script-flush", m, 0, t0);
    }
    t0 = hist_now_us();
    sleep_ms(1000);

    int after = grants_between(r, t0, UINT64_MAX, 0);
    expect_clean(r, NULL);
    for (int m = 0; m < tc_n(); m++)
        eval_after += info_field(m, "commandstats", "cmdstat_eval") > 0 ?
                      info_field(m, "commandstats", "cmdstat_eval") : 0;
    cr_expect(gt(i64, eval_after, eval_before), "no EVAL fallback was used (eval calls %lld -> %lld)",
              eval_before, eval_after);
    cr_expect(eq(int, r->late_failures, 0), "%d releases/extends failed after SCRIPT FLUSH; first: %s",
              r->late_failures, r->late_what);
    cr_expect(ge(int, after, 5), "only %d grants in the second after SCRIPT FLUSH", after);
    run_free(r);
}

/* ---- FLUSHALL on one master ------------------------------------------------------------------ */

/* One master loses every key mid-run. Four of five masters still hold each
 * holder's key when the holder was granted by four or five (the usual
 * case): no second holder can form. A holder granted by exactly three that
 * include the flushed one is left with two, and a second holder becomes
 * possible: that breaks A2, and the checker is told so (explain mode);
 * any other overlap still fails the test. */
Test(process, flushall_on_one_master_no_unexplained_second_holder)
{
    static const char *const explain[] = { "--explain-lost-keys", NULL };
    static char out[OUT_SIZE];
    run *r = run_start(1);
    uint64_t t0, t1;
    redisReply *rep;
    int rc;

    sleep_ms(400);
    t0 = hist_now_us();
    rep = tc_cmd(1, "FLUSHALL");
    cr_assert(rep && rep->type == REDIS_REPLY_STATUS, "FLUSHALL failed");
    freeReplyObject(rep);
    fault(r, "flushall", 1, 1, t0);
    t1 = hist_now_us();
    sleep_ms(1000);

    int after = grants_between(r, t1, UINT64_MAX, 0);
    rc = finish(r, explain, out, sizeof(out));
    cr_assert(eq(int, rc, 0), "violations not explained by the lost keys (history kept in %s):\n%s",
              keep(r), out);
    cr_log_info("%s", out);
    cr_expect(ge(int, after, 5), "only %d grants in the second after FLUSHALL", after);
    run_free(r);
}

/* ---- CLIENT KILL ---------------------------------------------------------------------------- */

/* A master drops every client connection (ours included) three times: what
 * was in flight there fails as "down", the clients reconnect on their
 * backoff and the master answers votes again. (It rarely counts in a grant
 * soon after: a release lost with the connection leaves that holder's key
 * there until its ttl, so it answers "held" meanwhile, as NOTES.md says a
 * minority may.) */
Test(process, client_kill_drops_our_connections_and_they_come_back)
{
    run *r = run_start(1);
    uint64_t t0, last = 0;
    long long killed = 0;

    sleep_ms(300);
    for (int k = 0; k < 3; k++) {
        redisReply *rep;

        t0 = hist_now_us();
        rep = tc_cmd(1, "CLIENT KILL TYPE normal");
        cr_assert(rep && rep->type == REDIS_REPLY_INTEGER, "CLIENT KILL failed");
        killed += rep->integer;
        freeReplyObject(rep);
        fault(r, "client-kill", 1, 0, t0);
        last = hist_now_us();
        sleep_ms(300);
    }
    sleep_ms(700);

    int after = grants_between(r, last, UINT64_MAX, 0);
    expect_clean(r, NULL);
    cr_expect(ge(i64, killed, 3 * WORKERS), "CLIENT KILL dropped only %lld connections", killed);
    cr_expect(gt(u64, r->last_answer[1], last), "master 1 answered no vote after the last "
              "CLIENT KILL: the clients did not reconnect");
    cr_expect(ge(int, after, 5), "only %d grants in the second after the last CLIENT KILL", after);
    run_free(r);
}

/* ---- DEBUG SLEEP ---------------------------------------------------------------------------- */

/* The script run when DEBUG is disabled (redis 7 default, which
 * cluster-up.sh keeps): a busy loop on the server's own clock, which blocks
 * the master exactly as DEBUG SLEEP does. */
static const char busy_lua[] =
    "local t = redis.call('TIME') local s = t[1] * 1000000 + t[2] "
    "repeat local n = redis.call('TIME') until n[1] * 1000000 + n[2] - s >= tonumber(ARGV[1]) "
    "return 1";

static redisContext *connect_master(int m)
{
    struct timeval tv = { 2, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", tc_port(m), tv);

    cr_assert(c && !c->err, "connect to master %d: %s", m, c ? c->errstr : "out of memory");
    redisSetTimeout(c, tv);
    if (tc_password()) {
        redisReply *rep = redisCommand(c, "AUTH %s", tc_password());

        cr_assert(rep && rep->type == REDIS_REPLY_STATUS, "AUTH on master %d failed", m);
        freeReplyObject(rep);
    }
    return c;
}

/* Stall masters @a and @b for @us at the same time; returns the command used. */
static const char *stall_two(run *r, int a, int b, unsigned us, int use_lua)
{
    const int ms[2] = { a, b };
    redisContext *c[2];
    uint64_t t0 = hist_now_us();
    char secs[32], usbuf[32];

    snprintf(secs, sizeof(secs), "%.6f", us / 1e6);
    snprintf(usbuf, sizeof(usbuf), "%u", us);
    for (int i = 0; i < 2; i++) {
        int done = 0;

        c[i] = connect_master(ms[i]);
        if (use_lua)
            redisAppendCommand(c[i], "EVAL %s 0 %s", busy_lua, usbuf);
        else
            redisAppendCommand(c[i], "DEBUG SLEEP %s", secs);
        while (!done)
            cr_assert(eq(int, redisBufferWrite(c[i], &done), REDIS_OK));
    }
    for (int i = 0; i < 2; i++) {
        redisReply *rep = NULL;

        cr_assert(eq(int, redisGetReply(c[i], (void **)&rep), REDIS_OK), "master %d: %s",
                  ms[i], c[i]->errstr);
        cr_assert(rep->type != REDIS_REPLY_ERROR, "master %d: %s", ms[i], rep->str);
        freeReplyObject(rep);
        redisFree(c[i]);
        fault(r, use_lua ? "lua-busy" : "debug-sleep", ms[i], 0, t0);
    }
    return use_lua ? "a 0.3 s Lua busy loop (DEBUG is disabled)" : "DEBUG SLEEP 0.3";
}

/* Two masters block for 0.3 s, three times: like a pause, without a signal. */
Test(process, debug_sleep_on_two_masters_acquires_go_on)
{
    redisReply *probe = tc_cmd(0, "DEBUG SLEEP 0");
    int use_lua = !probe || probe->type == REDIS_REPLY_ERROR;
    const char *how = "";
    uint64_t t0, t1;
    int during = 0;

    if (use_lua)
        cr_log_info("DEBUG is not allowed on these masters (%s): stalling them with a Lua busy "
                    "loop instead", probe ? probe->str : "no reply");
    freeReplyObject(probe);

    run *r = run_start(1);
    sleep_ms(300);
    for (int k = 0; k < 3; k++) {
        t0 = hist_now_us();
        how = stall_two(r, 1, 4, 300000, use_lua);
        t1 = hist_now_us();
        during += grants_between(r, t0, t1, 0);
        sleep_ms(200);
    }
    sleep_ms(300);
    expect_clean(r, NULL);
    cr_expect(ge(int, during, 2), "only %d grants while two masters were stalled (%s)", during, how);
    cr_log_info("stalled with %s: %d grants during the stalls", how, during);
    run_free(r);
}
