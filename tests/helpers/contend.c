/* contend.c - workers contending on one lock, recorded and checked (see
 * contend.h).
 *
 * The workers only record; every judgement is check.py's or the test's.
 * The end of a run waits for the masters to have run everything the
 * workers sent before it snapshots them, so a late command can never make
 * the snapshot disagree with the history. A run lives in memory shared
 * with forked workers (one-shot clients in processes of their own), so
 * the grants they note are the test's to see.
 */
#include "contend.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>

#include "await.h"
#include "cluster.h"
#include "core.h"

typedef struct tc_contend_worker {
    tc_contend *run;
    char name[16];
    pthread_t th;      /* TC_CONTEND_THREADS */
    pid_t pid;         /* TC_CONTEND_ONE_SHOT */
    redlock_client *c; /* TC_CONTEND_THREADS: the worker's client */
    int guard;
    unsigned seed;
} tc_contend_worker;

void tc_contend_config(redlock_config *cfg, int guard)
{
    tc_config(cfg);
    cfg->node_timeout_ms = 250;
    cfg->retry_count = 2;
    cfg->retry_delay_ms = 20;
    cfg->retry_jitter_ms = 20;
    cfg->reconnect_min_ms = 10;
    cfg->reconnect_max_ms = 100;
    cfg->restart_guard = guard;
}

redlock_client *tc_contend_client(int guard)
{
    redlock_config cfg;

    tc_contend_config(&cfg, guard);
    return tc_client(&cfg, -1);
}

/* ---- what the workers note ---------------------------------------------- */

static int idx(int rc)
{
    return rc <= 0 && rc > -20 ? -rc : 19;
}

static void note_grant(tc_contend *r, const redlock_outcome *out)
{
    pthread_mutex_lock(&r->mu);
    if (r->n_grants < TC_CONTEND_MAX_GRANTS)
        r->grants[r->n_grants++] = (tc_contend_grant){ tc_now_us(), tc_hist_oks(out) };
    pthread_mutex_unlock(&r->mu);
}

void tc_contend_note_grant(tc_contend *r, const redlock_outcome *out)
{
    note_grant(r, out);
}

static void note(tc_contend *r, int *table, int rc, const char *what, const redlock_error *e)
{
    pthread_mutex_lock(&r->mu);
    table[idx(rc)]++;
    if (rc != 0 && r->rel_fail_after && tc_now_us() > r->rel_fail_after) {
        if (!r->late_failures++)
            snprintf(r->late_what, sizeof(r->late_what), "%s: %s: %s", what, redlock_err_name(rc),
                     e->msg);
    }
    pthread_mutex_unlock(&r->mu);
}

/* Remember when each master last answered (ok, held, gone or an error
 * reply: anything but silence or a dropped connection). */
static void note_votes(tc_contend *r, const redlock_outcome *out)
{
    uint64_t now = tc_now_us();

    pthread_mutex_lock(&r->mu);
    for (uint32_t i = 0; i < redlock_outcome_masters(out) && i < REDLOCK_MAX_MASTERS; i++) {
        int k = redlock_outcome_vote(out, i)->kind;

        if (k == REDLOCK_VOTE_OK || k == REDLOCK_VOTE_HELD || k == REDLOCK_VOTE_GONE ||
            k == REDLOCK_VOTE_ERROR)
            r->last_answer[i] = now;
    }
    pthread_mutex_unlock(&r->mu);
}

/* ---- the workers ----------------------------------------------------------- */

/* Hold the lock a while, sometimes extend it, release it (through @c,
 * the client that took it). */
static void hold_and_release(tc_contend_worker *w, redlock_client *c, redlock_lock *l)
{
    tc_contend *r = w->run;
    TC_OUTCOME(out);
    redlock_error e;
    uint64_t t0;
    int rc;

    /* Time is the subject: a holder works for a few ms, as real ones do,
     * so that faults land while locks are held. */
    tc_sleep_ms(2 + rand_r(&w->seed) % 15);
    if (rand_r(&w->seed) % 2) {
        t0 = tc_now_us();
        rc = redlock_extend(c, l, TC_CONTEND_TTL_MS, out, &e);
        tc_hist_extend(r->h, w->name, TC_CONTEND_TTL_MS, t0, rc, l, out);
        note(r, r->ext, rc, "extend", &e);
        tc_sleep_ms(2 + rand_r(&w->seed) % 10); /* and works on: time is the subject */
    }
    t0 = tc_now_us();
    rc = redlock_release(c, l, out, &e);
    tc_hist_release(r->h, w->name, t0, rc, l, out);
    note_votes(r, out);
    note(r, r->rel, rc, "release", &e);
}

/* The client for the next acquire: the worker's own, or (one-shot) a new
 * one, used at once without waiting for any master, as redlock-cli does:
 * it knows nothing of the masters but what its first replies tell it. */
static redlock_client *worker_client(tc_contend_worker *w)
{
    redlock_config cfg;
    redlock_client *c = NULL;

    if (w->c)
        return w->c;
    tc_contend_config(&cfg, w->guard);
    return redlock_client_new(&cfg, NULL, &c, NULL) == 0 ? c : NULL;
}

static void *work(void *arg)
{
    tc_contend_worker *w = arg;
    tc_contend *r = w->run;

    while (!atomic_load(&r->stop)) {
        redlock_client *c = worker_client(w);
        if (!c) {
            tc_sleep_ms(5); /* out of memory or threads: the load's shape, not a wait */
            continue;
        }
        redlock_lock *l = NULL;
        TC_OUTCOME(out);
        redlock_error e;
        uint64_t t0 = tc_now_us();
        int rc = redlock_acquire(c, r->res, r->len, TC_CONTEND_TTL_MS, &l, out, &e);

        tc_hist_acquire(r->h, w->name, r->res, r->len, TC_CONTEND_TTL_MS, t0, rc, l, out);
        note_votes(r, out);
        pthread_mutex_lock(&r->mu);
        r->acq[idx(rc)]++;
        r->attempts++;
        pthread_mutex_unlock(&r->mu);
        if (rc == 0) {
            note_grant(r, out);
            hold_and_release(w, c, l);
            redlock_lock_free(l);
        }
        if (c != w->c)
            redlock_client_free(c);
        if (rc != 0) {
            /* The load's shape, not a wait for anything: a client that
             * lost thinks a moment before it asks again. */
            tc_sleep_ms(5 + rand_r(&w->seed) % 15);
        }
    }
    return NULL;
}

void tc_contend_paths(char *hpath, char *spath, size_t size)
{
    const char *dir = getenv("REDLOCK_TEST_DIR");

    cr_assert(dir && *dir, "REDLOCK_TEST_DIR is not set (run through meson / with-cluster.sh)");
    snprintf(hpath, size, "%s/history-%d.jsonl", dir, (int)getpid());
    snprintf(spath, size, "%s/snapshot-%d.jsonl", dir, (int)getpid());
    unlink(hpath);
    unlink(spath);
}

/* A run in memory shared with the processes it forks. */
static tc_contend *run_alloc(void)
{
    pthread_mutexattr_t attr;
    tc_contend *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
                         0);

    cr_assert(r != MAP_FAILED, "mmap: %s", strerror(errno));
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&r->mu, &attr);
    pthread_mutexattr_destroy(&attr);
    return r;
}

/* A worker process: works until told to stop, then leaves without running
 * the test runner's exit handlers. */
static void start_process(tc_contend_worker *w)
{
    pid_t parent = getpid();
    w->pid = fork();
    cr_assert(w->pid >= 0, "fork: %s", strerror(errno));
    if (w->pid == 0) {
        /* A worker dies with the test that forked it: a test that fails
         * (an assertion, a timeout's SIGTERM) must not leave clients
         * hammering the ports the next suite's masters will use. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(1);
        work(w);
        _exit(0);
    }
}

tc_contend *tc_contend_start(int guard, int workers)
{
    return tc_contend_start_kind(guard, workers, TC_CONTEND_THREADS);
}

tc_contend *tc_contend_start_kind(int guard, int workers, int kind)
{
    tc_contend *r = run_alloc();

    tc_resource(r->res, sizeof(r->res), NULL);
    r->len = strlen(r->res);
    tc_contend_paths(r->path, r->snap, sizeof(r->path));
    r->h = tc_hist_open(r->path);
    cr_assert(r->h != NULL, "tc_hist_open %s: %s", r->path, strerror(errno));
    r->w = calloc((size_t)(workers ? workers : 1), sizeof(*r->w));
    cr_assert(r->w != NULL);
    r->n_workers = workers;
    for (int i = 0; i < workers; i++) {
        tc_contend_worker *w = &r->w[i];

        w->run = r;
        w->seed = (unsigned)(getpid() * 31 + i);
        snprintf(w->name, sizeof(w->name), "%s%d", kind == TC_CONTEND_ONE_SHOT ? "p" : "w", i);
        w->guard = guard;
        if (kind == TC_CONTEND_THREADS)
            w->c = tc_contend_client(guard);
    }
    r->one_shot = kind == TC_CONTEND_ONE_SHOT;
    for (int i = 0; i < workers; i++) {
        if (r->one_shot)
            start_process(&r->w[i]);
        else
            cr_assert(eq(int, pthread_create(&r->w[i].th, NULL, work, &r->w[i]), 0));
    }
    return r;
}

static void run_stop(tc_contend *r)
{
    atomic_store(&r->stop, 1);
    for (int i = 0; i < r->n_workers; i++) {
        if (r->one_shot) {
            int st = 0;

            if (waitpid(r->w[i].pid, &st, 0) != r->w[i].pid || !WIFEXITED(st) ||
                WEXITSTATUS(st) != 0)
                r->bad_exits++;
            continue;
        }
        pthread_join(r->w[i].th, NULL);
        redlock_client_free(r->w[i].c);
        r->w[i].c = NULL;
    }
    r->n_workers = 0;
    /* Freed here, not in tc_contend_free(): a test whose checker found something
     * stops at that assertion and never gets to tc_contend_free(). */
    free(r->w);
    r->w = NULL;
}

/* ---- what the test asks during a run ------------------------------------------ */

int tc_contend_grants_between(tc_contend *r, uint64_t from, uint64_t to, uint32_t mask)
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

uint64_t tc_contend_first_grant(tc_contend *r, uint64_t from, uint32_t mask)
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

uint64_t tc_contend_last_answer(tc_contend *r, int m)
{
    uint64_t t;

    pthread_mutex_lock(&r->mu);
    t = r->last_answer[m];
    pthread_mutex_unlock(&r->mu);
    return t;
}

int tc_contend_attempts(tc_contend *r)
{
    int n;

    pthread_mutex_lock(&r->mu);
    n = r->attempts;
    pthread_mutex_unlock(&r->mu);
    return n;
}

int tc_contend_await_grants(tc_contend *r, uint64_t from, uint32_t mask, int n, int timeout_ms)
{
    int got = 0;

    TC_AWAIT((got = tc_contend_grants_between(r, from, UINT64_MAX, mask)) >= n, timeout_ms);
    return got;
}

void tc_contend_fault(tc_contend *r, const char *what, int master, int lost, uint64_t t0)
{
    cr_assert(eq(int, tc_hist_fault(r->h, what, master, lost, t0), 0));
}

void tc_contend_inject(tc_contend *r, void (*act)(int), const char *what, int master, int lost)
{
    uint64_t t0 = tc_now_us();

    act(master);
    tc_contend_fault(r, what, master, lost, t0);
}

/* ---- the end of a run: quiet masters, snapshot, checker ------------------------ */

/* Wait until every live master has dropped the workers' connections. A
 * master frees a client when it reads EOF, after running everything that
 * came before it on that connection, so from then on nothing the workers
 * sent can still change what the snapshot sees. */
void tc_contend_quiesce(void)
{
    for (int m = 0; m < tc_n(); m++) {
        long long n = 0;

        /* -1: a dead master; 1: only our own INFO connection */
        TC_AWAIT((n = tc_info_num(m, "clients", "connected_clients")) <= 1, 5000);
        if (n > 1) /* not cr_log_warn(): in criterion 2.4.1 a warning fails the run */
            cr_log_info("master %d still has %lld clients after 5 s", m, n);
    }
}

void tc_contend_snapshot(const char *path, const void *res, size_t len)
{
    tc_hist *s = tc_hist_open(path);

    cr_assert(s != NULL, "tc_hist_open %s: %s", path, strerror(errno));
    for (int m = 0; m < tc_n(); m++) {
        redisReply *v = tc_cmd(m, "GET %b", res, len);
        redisReply *t = tc_cmd(m, "PTTL %b", res, len);

        if (v && t && v->type == REDIS_REPLY_STRING && t->type == REDIS_REPLY_INTEGER)
            cr_assert(eq(int, tc_hist_key(s, m, res, len, v->str, t->integer), 0));
        freeReplyObject(v);
        freeReplyObject(t);
    }
    tc_hist_close(s);
}

int tc_contend_check(const char *hpath, const char *spath, const char *const *args, char *out,
                     size_t size)
{
    const char *argv[8];
    char n[16];
    int k = 0, rc;

    snprintf(n, sizeof(n), "%d", tc_n());
    argv[k++] = "--masters";
    argv[k++] = n;
    for (int i = 0; args && args[i] && k < 7; i++)
        argv[k++] = args[i];
    argv[k] = NULL;
    rc = tc_hist_check(hpath, spath, argv, out, size);
    cr_assert(rc >= 0, "check.py did not run: %s", out);
    return rc;
}

const char *tc_contend_keep(tc_contend *r)
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

static void log_counts(tc_contend *r)
{
    int acq = 0, rel = 0, ext = 0;

    for (int i = 0; i < 20; i++) {
        acq += r->acq[i];
        rel += r->rel[i];
        ext += r->ext[i];
    }
    cr_log_info("%s: %d grants; acquires %d (conflict %d, no quorum %d); releases %d (ok %d, "
                "not held %d); extends %d (ok %d)",
                r->res, r->n_grants, acq, r->acq[idx(REDLOCK_ECONFLICT)],
                r->acq[idx(REDLOCK_ENOQUORUM)], rel, r->rel[0], r->rel[idx(REDLOCK_ENOTHELD)], ext,
                r->ext[0]);
}

int tc_contend_finish(tc_contend *r, const char *const *args, char *out, size_t size)
{
    int workers = r->n_workers, rc;

    run_stop(r);
    cr_assert(eq(int, r->bad_exits, 0), "%d worker processes died", r->bad_exits);
    tc_contend_quiesce();
    tc_contend_snapshot(r->snap, r->res, r->len);
    tc_hist_close(r->h);
    r->h = NULL;
    rc = tc_contend_check(r->path, r->snap, args, out, size);
    if (getenv("REDLOCK_KEEP_HISTORY"))
        cr_log_info("history kept in %s", tc_contend_keep(r));
    if (workers)
        log_counts(r);
    return rc;
}

void tc_contend_expect_clean(tc_contend *r, const char *const *args)
{
    static char out[TC_CONTEND_OUT_SIZE];
    int rc = tc_contend_finish(r, args, out, sizeof(out));

    cr_assert(eq(int, rc, 0), "the checker found violations (history kept in %s):\n%s",
              tc_contend_keep(r), out);
    cr_assert(strstr(out, " 0 violations") != NULL, "%s", out);
    cr_log_info("%s", out);
}

void tc_contend_free(tc_contend *r)
{
    if (!r)
        return;
    run_stop(r);
    tc_hist_close(r->h);
    pthread_mutex_destroy(&r->mu);
    munmap(r, sizeof(*r));
}
