/* test-handoff.c - the local hand-off (issue 31, lock cohorting) on real
 * masters: a release that passes the lock to a waiter of its own client
 * instead of a round of release, wake-up and attempt.
 *
 * Waiters are threads sharing one blocking client (a cohort), in this
 * process and in a forked one, or async waiters on one client. Every grant
 * goes into memory shared with the child (holder, fence, when it began and
 * when its holder stopped) and into a history for tests/history/check.py.
 * What the tests claim: holds never overlap and fences grow in grant order
 * across local and remote hand-offs; a pass runs no release on the masters
 * and leaves the previous holder nothing; a local holder killed, paused or
 * whose next waiter is cancelled mid-pass costs what a remote one would; a
 * process passes at most local_run_max - 1 times in a row while another waits;
 * passes go on while a master restarts, is flushed or its name moves; and
 * local_run_max 0 or 1 turns passes off. Run alone (faults); .fini kills a
 * child left behind and heals the cluster.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>

#include <redlock.h>

#include "await.h"
#include "cluster.h"
#include "contend.h"
#include "core.h"
#include "history.h"
#include "servers.h"

#define HANDOFFS "redlock_local_handoffs_total"
#define HANDOFFS_FAILED "redlock_local_handoffs_failed_total"

#define MAX_GRANTS 4096
#define MAX_THREADS 8
#define METRICS_CAP (256 * 1024)
#define AWAIT_MS 20000     /* for what takes a few round trips on an idle machine */
#define FOREVER_MS 600000  /* an await only the event ends (or the test's timeout) */
#define LONG_POLL_MS 2000u /* waiters' polls: hand-offs, not polls, move the lock */
#define SLACK_MS 1000u     /* a loaded 2-core machine under ASan, where time is the subject */
#define CONTEND_TTL_MS 3000u

/* Each pass test runs fenced (a pass is the acquire script with the
 * passing token) and unfenced (the lean PASS script, the common case). */
static const bool fence_modes[] = { true, false };

/* ------------------------------------------------------------------------ */
/* The record: every grant of both processes, in memory shared with the     */
/* child. Written without locks (a stopped or killed writer must not hold   */
/* one): a slot is claimed with an atomic add and published by its state.  */
/* ------------------------------------------------------------------------ */

struct grant {
    atomic_int state; /* 0 being filled, 1 held, 2 released */
    int proc;         /* 0: this process, 1: the child */
    int thread;
    int seq;                /* the process's grants, from 1 */
    uint64_t invoke_us;     /* the acquire call began ... */
    uint64_t start_us;      /* ... and returned the lock */
    uint64_t vend_us;       /* start + the validity the library gave */
    uint64_t fence;         /* redlock_lock_fence() */
    char token[64];         /* redlock_lock_token() */
    atomic_ullong end_us;   /* the holder stopped: its release was invoked (0: never) */
    int64_t validity_end;   /* redlock_lock_validity_ms() then, before the release */
    int64_t validity_after; /* ... and once the release returned */
    int rel_rc;             /* what the release returned */
    long long passes;       /* the client's HANDOFFS just after: a pass if it grew */
};

struct proc {
    atomic_int acquire_upto; /* the process's a-th acquire starts once this is >= a */
    atomic_int acquires;
    atomic_int release_upto; /* grant s is held until this is >= s */
    atomic_int stop;
    atomic_int grants;
    atomic_llong handoffs;        /* HANDOFFS of its client, as last read */
    atomic_llong handoffs_failed; /* HANDOFFS_FAILED */
    atomic_int failed;            /* acquires that returned an error */
    atomic_int waits;             /* waiters told the lock is their own client's (on_log) */
    atomic_int errors;
    char err[256]; /* the first error */
    pid_t pid;     /* the child's (proc 1), or 0 */
};

static struct shared {
    atomic_int n;
    struct grant g[MAX_GRANTS];
    struct proc p[2];
    char res[128];
    size_t len;
    char hpath[512], spath[512];
} * sh;

static void note_error(struct proc *p, const char *fmt, ...)
{
    va_list ap;

    if (atomic_fetch_add(&p->errors, 1) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(p->err, sizeof(p->err), fmt, ap);
    va_end(ap);
}

/* @name of @c's metrics, or -1 if the text has no such sample. */
static long long metric(redlock_client *c, const char *name)
{
    char *buf = malloc(METRICS_CAP);
    size_t len = 0;
    long long v = -1;

    if (buf && redlock_metrics_write(c, buf, METRICS_CAP, &len, NULL) == 0)
        v = (long long)tc_metric(buf, name);
    free(buf);
    return v;
}

static void raise_to(atomic_llong *a, long long v)
{
    long long cur = atomic_load(a);

    while (v > cur && !atomic_compare_exchange_weak(a, &cur, v))
        ;
}

static void note_metrics(struct proc *p, redlock_client *c)
{
    raise_to(&p->handoffs, metric(c, HANDOFFS));
    raise_to(&p->handoffs_failed, metric(c, HANDOFFS_FAILED));
}

static long long handoffs(int proc)
{
    return atomic_load(&sh->p[proc].handoffs);
}

/* The log hook of every client here: counts the not-reentrant warning (a
 * waiter that found the lock held by its own client says it once,
 * redlock_acquire()), the sign that a local waiter waits. */
static void on_log(int level, const char *msg, void *arg)
{
    (void)level;
    if (strstr(msg, "(waiting for its release)"))
        atomic_fetch_add(&((struct proc *)arg)->waits, 1);
}

static int waits(int proc)
{
    return atomic_load(&sh->p[proc].waits);
}

/* A grant of @l, invoked at @invoke_us, just returned. NULL if the record
 * is full (the grant still counts). */
static struct grant *grant_note(int proc, int thread, uint64_t invoke_us, const redlock_lock *l)
{
    int seq = atomic_fetch_add(&sh->p[proc].grants, 1) + 1;
    int slot = atomic_fetch_add(&sh->n, 1);
    struct grant *g;

    if (slot >= MAX_GRANTS)
        return NULL;
    g = &sh->g[slot];
    g->proc = proc;
    g->thread = thread;
    g->seq = seq;
    g->invoke_us = invoke_us;
    g->start_us = tc_now_us();
    g->vend_us = g->start_us + 1000u * (uint64_t)redlock_lock_validity_ms(l);
    g->fence = redlock_lock_fence(l);
    snprintf(g->token, sizeof(g->token), "%s", redlock_lock_token(l));
    atomic_store(&g->state, 1);
    return g;
}

/* The holder of @g stops: what it knew then, and when. */
static void grant_end(struct grant *g, const redlock_lock *l)
{
    if (!g)
        return;
    g->validity_end = redlock_lock_validity_ms(l);
    atomic_store(&g->end_us, tc_now_us());
}

static void grant_released(struct grant *g, const redlock_lock *l, int rc)
{
    if (!g)
        return;
    g->validity_after = redlock_lock_validity_ms(l);
    g->rel_rc = rc;
    atomic_store(&g->state, 2);
}

/* The @seq-th grant of @proc, or NULL if there is none yet. */
static struct grant *grant_of(int proc, int seq)
{
    int n = atomic_load(&sh->n);

    for (int i = 0; i < n && i < MAX_GRANTS; i++) {
        struct grant *g = &sh->g[i];

        if (atomic_load(&g->state) && g->proc == proc && g->seq == seq)
            return g;
    }
    return NULL;
}

static bool released(const struct grant *g)
{
    return g && atomic_load(&((struct grant *)g)->state) == 2;
}

static int by_start(const void *a, const void *b)
{
    const struct grant *x = *(const struct grant *const *)a, *y = *(const struct grant *const *)b;

    return x->start_us < y->start_us ? -1 : x->start_us > y->start_us;
}

/* The grants so far into @v, in the order they were made. Return: how many. */
static int grants_sorted(const struct grant **v)
{
    int n = atomic_load(&sh->n), k = 0;

    for (int i = 0; i < n && i < MAX_GRANTS; i++)
        if (atomic_load(&sh->g[i].state))
            v[k++] = &sh->g[i];
    qsort(v, (size_t)k, sizeof(v[0]), by_start);
    return k;
}

/* Grants of @proc that began in (@from, @to). */
static int grants_between(int proc, uint64_t from, uint64_t to)
{
    int n = atomic_load(&sh->n), k = 0;

    for (int i = 0; i < n && i < MAX_GRANTS; i++) {
        const struct grant *g = &sh->g[i];

        k += atomic_load(&sh->g[i].state) && g->proc == proc && g->start_us > from &&
             g->start_us < to;
    }
    return k;
}

/* Was v[@i] (grants_sorted) granted by a pass? Its client's HANDOFFS grew
 * since that process's grant before it. */
static bool by_pass(const struct grant **v, int i)
{
    for (int j = i - 1; j >= 0; j--)
        if (v[j]->proc == v[i]->proc)
            return v[i]->passes > v[j]->passes;
    return false;
}

/* The grants that began in (@from, @to] as "p1.t2#7 (pass) +1.2 ms", for
 * failure messages. Return: @buf. */
static const char *grants_text(uint64_t from, uint64_t to, char *buf, size_t size)
{
    static const struct grant *v[MAX_GRANTS];
    int n = grants_sorted(v);
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < n && used + 64 < size; i++) {
        const struct grant *g = v[i];

        if (g->start_us <= from || g->start_us > to)
            continue;
        used += (size_t)snprintf(buf + used, size - used, " p%d.t%d#%d%s +%.1fms", g->proc,
                                 g->thread, g->seq, by_pass(v, i) ? "(pass)" : "",
                                 (g->start_us - from) / 1000.0);
    }
    return buf;
}

/* The longest run of passes in a row among @proc's grants that began in
 * (@from, @to): grants by a pass, none of them ended by a grant of
 * @proc's that was not one. */
static int passes_in_a_row(int proc, uint64_t from, uint64_t to)
{
    static const struct grant *v[MAX_GRANTS];
    int n = grants_sorted(v), run = 0, worst = 0;

    for (int i = 0; i < n; i++) {
        const struct grant *g = v[i];

        if (g->proc != proc || g->start_us <= from || g->start_us >= to)
            continue;
        run = by_pass(v, i) ? run + 1 : 0;
        worst = run > worst ? run : worst;
    }
    return worst;
}

/* How often the lock went from one process to the other. */
static int switches(void)
{
    static const struct grant *v[MAX_GRANTS];
    int n = grants_sorted(v), k = 0;

    for (int i = 1; i < n; i++)
        k += v[i]->proc != v[i - 1]->proc;
    return k;
}

/* When the holder of @g stopped being entitled to act: its release, or the
 * end of its validity if that came first (a holder killed or paused). */
static uint64_t end_of(const struct grant *g)
{
    uint64_t e = atomic_load(&((struct grant *)g)->end_us);

    return e && e < g->vend_us ? e : g->vend_us;
}

#define WHO "p%d.t%d#%d"
#define WHO_ARGS(g) (g)->proc, (g)->thread, (g)->seq

/*
 * The history checker of this suite, on the shared record: in the order
 * grants were made (when each acquire returned), no grant begins before
 * every earlier holder stopped (released, or its validity ended), and,
 * for @fenced locks, each fence is larger than the one before
 * (docs/waiting.md, "Fencing tokens": a successful attempt that starts
 * after the previous grant completed, which a pass's and a wake-up's are,
 * gets a larger token); unfenced ones have none.
 */
static void expect_exclusive_and_fenced(bool fenced)
{
    static const struct grant *v[MAX_GRANTS];
    static const struct grant nobody;
    int n = grants_sorted(v);
    const struct grant *opener = &nobody;
    uint64_t open_until = 0;

    cr_assert(lt(int, atomic_load(&sh->n), MAX_GRANTS), "the record overflowed");
    for (int i = 0; i < n; i++) {
        const struct grant *g = v[i];

        cr_assert(ge(u64, g->start_us, open_until),
                  WHO " (fence %llu) got the lock %.1f ms before " WHO " stopped holding it",
                  WHO_ARGS(g), (unsigned long long)g->fence, (open_until - g->start_us) / 1000.0,
                  WHO_ARGS(opener));
        if (!fenced)
            cr_assert(eq(u64, g->fence, 0), WHO " (unfenced) got fence %llu", WHO_ARGS(g),
                      (unsigned long long)g->fence);
        else if (i)
            cr_assert(gt(u64, g->fence, v[i - 1]->fence),
                      "fences out of grant order: " WHO " got %llu after " WHO "'s %llu",
                      WHO_ARGS(g), (unsigned long long)g->fence, WHO_ARGS(v[i - 1]),
                      (unsigned long long)v[i - 1]->fence);
        if (end_of(g) > open_until) {
            open_until = end_of(g);
            opener = g;
        }
    }
    cr_assert(gt(int, n, 0), "no grants");
    cr_log_info("%d grants, %d between processes, fences %llu..%llu in grant order, no two "
                "holds overlap; local hand-offs %lld + %lld",
                n, switches(), (unsigned long long)v[0]->fence, (unsigned long long)v[n - 1]->fence,
                handoffs(0), handoffs(1));
}

/* check.py over the history, with a snapshot of what the masters hold
 * once every client is gone: no overlap, no key left behind. */
static void expect_history_clean(void)
{
    static char out[TC_CONTEND_OUT_SIZE];
    int rc;

    tc_contend_quiesce();
    tc_contend_snapshot(sh->spath, sh->res, sh->len);
    rc = tc_contend_check(sh->hpath, sh->spath, NULL, out, sizeof(out));
    cr_assert(eq(int, rc, 0), "the checker found violations:\n%s", out);
    cr_log_info("%s", out);
}

/* ------------------------------------------------------------------------ */
/* The resource's queue on the masters (docs/waiting.md, "Waiting in turn") */
/* ------------------------------------------------------------------------ */

/* "res\0q": the queue of the test's resource. */
static size_t queue_key(char *key, size_t size)
{
    cr_assert(lt(sz, sh->len + 2, size));
    memcpy(key, sh->res, sh->len);
    memcpy(key + sh->len, "\0q", 2);
    return sh->len + 2;
}

static long queued(int m)
{
    char key[160];
    size_t len = queue_key(key, sizeof(key));
    redisReply *r = tc_cmd(m, "ZCARD %b", key, len);
    long n = r && r->type == REDIS_REPLY_INTEGER ? (long)r->integer : -1;

    freeReplyObject(r);
    return n;
}

/* The fewest waiters in the queue on any master. */
static long queued_least(void)
{
    long least = LONG_MAX;

    for (int m = 0; m < tc_n(); m++) {
        long n = queued(m);

        least = n < least ? n : least;
    }
    return least;
}

/* At least @want waiters in the queue on every master. */
static bool queued_everywhere(long want)
{
    for (int m = 0; m < tc_n(); m++)
        if (queued(m) < want)
            return false;
    return true;
}

/* Is a waiter of a client whose channel is not @chan queued on master @m?
 * A waiter is named "hand|channel|id". */
static bool other_queued(int m, const char *chan)
{
    char key[160];
    size_t len = queue_key(key, sizeof(key));
    redisReply *r = tc_cmd(m, "ZRANGE %b 0 -1", key, len);
    bool found = false;

    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements && !found; i++) {
        const char *s = r->element[i]->str, *a = s ? strchr(s, '|') : NULL;
        const char *b = a ? strrchr(s, '|') : NULL;

        if (b && b != a)
            found = strlen(chan) != (size_t)(b - a - 1) || strncmp(a + 1, chan, strlen(chan)) != 0;
    }
    freeReplyObject(r);
    return found;
}

static bool other_queued_everywhere(const char *chan)
{
    for (int m = 0; m < tc_n(); m++)
        if (!other_queued(m, chan))
            return false;
    return true;
}

/* The one wake-up channel subscribed on master 0 (a client subscribes to
 * its own when its first waiter waits), into @chan; false unless exactly
 * one client has one. */
static bool only_channel(char *chan, size_t size)
{
    redisReply *r = tc_cmd(0, "PUBSUB CHANNELS redlock:wake:*");
    bool one = r && r->type == REDIS_REPLY_ARRAY && r->elements == 1;

    if (one)
        snprintf(chan, size, "%s", r->element[0]->str);
    freeReplyObject(r);
    return one;
}

/* Commands a release runs on the masters, all of them together: the
 * script's DEL (nobody queued) or its PUBLISH of the next waiter's wake-up,
 * or the server's own compare-and-delete. A pass runs none of them. */
static long long release_commands(void)
{
    const char *native = tc_native_delete();

    return tc_calls("del") + tc_calls("publish") + (native ? tc_calls(native) : 0);
}

/* ------------------------------------------------------------------------ */
/* A cohort: threads of one process sharing one blocking client, each      */
/* taking the lock (fenced, waiting for as long as it takes), holding it,   */
/* releasing it, recording all of it.                                      */
/* ------------------------------------------------------------------------ */

struct cohort {
    int proc;    /* 0: this process, 1: a forked child */
    int threads; /* waiters sharing the client */
    int rounds;  /* acquires per thread; 0: until stopped */
    uint32_t ttl_ms;
    uint32_t hold_ms;    /* how long a holder works once its grant may be released */
    uint32_t poll_ms;    /* config.retry_delay_ms (jitter a tenth of it) */
    int64_t run_max;     /* config.local_run_max; -1: the library's default */
    int clock_off;       /* no clock probes (they run scripts, which CLIENT PAUSE holds) */
    int unfenced;        /* plain locks: a pass takes the PASS script, not the acquire's */
    const char *masters; /* NULL: the cluster's */
};

static struct cohort cohort_of(int proc, int threads)
{
    return (struct cohort){ .proc = proc,
                            .threads = threads,
                            .ttl_ms = CONTEND_TTL_MS,
                            .poll_ms = LONG_POLL_MS,
                            .run_max = -1 };
}

struct crew;

struct worker {
    struct crew *crew;
    int t;
    pthread_t th;
};

/* A cohort at work in its process. */
struct crew {
    struct cohort co;
    redlock_client *c;
    redlock_cancel *cc; /* fired to end the waits at stop */
    tc_hist *h;
    struct worker w[MAX_THREADS];
    int running;
};

static struct crew here; /* proc 0's, when it is a cohort */

static void hold(const struct cohort *co, struct proc *p, int seq)
{
    TC_AWAIT(atomic_load(&p->release_upto) >= seq || atomic_load(&p->stop), FOREVER_MS);
    if (co->hold_ms)
        tc_sleep_ms(co->hold_ms); /* time is the subject: a holder works */
}

static void take_hold_release(struct worker *w, const char *name, redlock_outcome *out)
{
    const struct cohort *co = &w->crew->co;
    struct proc *p = &sh->p[co->proc];
    redlock_resource r = { sh->res, sh->len };
    redlock_acquire_opts o;
    redlock_lock *l = NULL;
    redlock_error e;
    uint64_t t0;
    int rc;

    redlock_acquire_opts_init(&o);
    o.ttl_ms = co->ttl_ms;
    o.flags = co->unfenced ? 0 : REDLOCK_FENCE;
    o.wait_ms = REDLOCK_WAIT_FOREVER;
    o.cancel = w->crew->cc;
    t0 = tc_now_us();
    rc = redlock_acquire_with(w->crew->c, &r, 1, &o, &l, out, &e);
    tc_hist_acquire(w->crew->h, name, sh->res, sh->len, co->ttl_ms, t0, rc, l, out);
    if (rc == REDLOCK_ECANCELED)
        return;
    if (rc != 0) {
        atomic_fetch_add(&p->failed, 1);
        tc_sleep_ms(10); /* the load's shape, not a wait: it asks again in a moment */
        return;
    }
    struct grant *g = grant_note(co->proc, w->t, t0, l);
    note_metrics(p, w->crew->c);
    if (g) /* no other grant can come before this one's release */
        g->passes = metric(w->crew->c, HANDOFFS);
    hold(co, p, g ? g->seq : 0);
    grant_end(g, l);
    t0 = tc_now_us();
    rc = redlock_release(w->crew->c, l, out, &e);
    tc_hist_release(w->crew->h, name, t0, rc, l, out);
    note_metrics(p, w->crew->c);
    grant_released(g, l, rc);
    redlock_lock_free(l);
}

static void *work(void *arg)
{
    struct worker *w = arg;
    const struct cohort *co = &w->crew->co;
    struct proc *p = &sh->p[co->proc];
    redlock_outcome *out = redlock_outcome_new();
    char name[16];

    snprintf(name, sizeof(name), "p%d.t%d", co->proc, w->t);
    if (!out)
        note_error(p, "%s: out of memory", name);
    for (int k = 0; out && !atomic_load(&p->stop) && (!co->rounds || k < co->rounds); k++) {
        int a = atomic_fetch_add(&p->acquires, 1) + 1;

        TC_AWAIT(atomic_load(&p->acquire_upto) >= a || atomic_load(&p->stop), FOREVER_MS);
        if (!atomic_load(&p->stop))
            take_hold_release(w, name, out);
    }
    redlock_outcome_free(out);
    return NULL;
}

static void cohort_config(const struct cohort *co, redlock_config *cfg)
{
    tc_config(cfg);
    if (co->masters)
        cfg->masters = co->masters;
    cfg->retry_delay_ms = co->poll_ms;
    cfg->retry_jitter_ms = co->poll_ms / 10;
    cfg->reconnect_min_ms = 10;
    cfg->reconnect_max_ms = 100;
    if (co->clock_off)
        cfg->clock_policy = REDLOCK_CLOCK_OFF;
    if (co->run_max >= 0)
        cfg->local_run_max = (uint32_t)co->run_max;
    cfg->log_fn = on_log;
    cfg->log_arg = &sh->p[co->proc];
}

/* Start @co in this process. 0, or -1 with the reason in @why (usable in
 * the child: no criterion). */
static int crew_begin(struct crew *cr, const struct cohort *co, char *why, size_t size)
{
    redlock_config cfg;

    memset(cr, 0, sizeof(*cr));
    cr->co = *co;
    cohort_config(co, &cfg);
    cr->h = tc_hist_open(sh->hpath);
    if (!cr->h) {
        snprintf(why, size, "tc_hist_open: %s", strerror(errno));
        return -1;
    }
    cr->c = tc_client_try(&cfg, -1, why, size);
    if (!cr->c || redlock_cancel_new(&cr->cc) != 0) {
        if (cr->c)
            snprintf(why, size, "redlock_cancel_new failed");
        return -1;
    }
    for (int t = 0; t < co->threads && t < MAX_THREADS; t++) {
        cr->w[t] = (struct worker){ .crew = cr, .t = t };
        if (pthread_create(&cr->w[t].th, NULL, work, &cr->w[t]) != 0) {
            snprintf(why, size, "pthread_create: %s", strerror(errno));
            return -1;
        }
        cr->running = t + 1;
    }
    return 0;
}

/* Stop the crew: end its waits, join its threads, free its client. */
static void crew_end(struct crew *cr)
{
    struct proc *p = &sh->p[cr->co.proc];

    atomic_store(&p->stop, 1);
    if (cr->cc)
        redlock_cancel_fire(cr->cc);
    for (int t = 0; t < cr->running; t++)
        pthread_join(cr->w[t].th, NULL);
    cr->running = 0;
    if (cr->c)
        note_metrics(p, cr->c);
    redlock_client_free(cr->c);
    redlock_cancel_free(cr->cc);
    tc_hist_close(cr->h);
    memset(cr, 0, sizeof(*cr));
}

/* Start @co (proc 1) in a forked child, which works until told to stop.
 * Fork before this process makes clients or threads of its own. */
static void cohort_fork(const struct cohort *co)
{
    pid_t parent = getpid(), pid = fork();

    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        struct proc *p = &sh->p[co->proc];
        struct crew cr;
        char why[320];

        /* The child dies with the test that forked it. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(1);
        if (crew_begin(&cr, co, why, sizeof(why)) != 0) {
            note_error(p, "child: %s", why);
            _exit(1);
        }
        TC_AWAIT(atomic_load(&p->stop), FOREVER_MS);
        crew_end(&cr);
        _exit(0);
    }
    sh->p[co->proc].pid = pid;
}

/* Start @co (proc 0) on threads of this process. */
static void cohort_start(const struct cohort *co)
{
    char why[320];

    cr_assert(eq(int, crew_begin(&here, co, why, sizeof(why)), 0), "%s", why);
}

/* Stop the cohort of @proc and check that it ran without errors. */
static void cohort_stop(int proc)
{
    struct proc *p = &sh->p[proc];

    if (proc == 0) {
        crew_end(&here);
    } else if (p->pid > 0) {
        int st = 0;

        atomic_store(&p->stop, 1);
        cr_assert(eq(int, (int)waitpid(p->pid, &st, 0), (int)p->pid));
        p->pid = 0;
        bool clean = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        cr_assert(clean, "the child cohort ended badly (status %d): %s", st, p->err);
    }
    cr_assert(eq(int, atomic_load(&p->errors), 0), "process %d: %s", proc, p->err);
}

/* SIGKILL or SIGSTOP the child, recorded in the history. */
static void signal_child(int sig, const char *what)
{
    struct proc *p = &sh->p[1];
    uint64_t t0 = tc_now_us();
    tc_hist *h = tc_hist_open(sh->hpath);

    cr_assert(h != NULL);
    cr_assert(eq(int, kill(p->pid, sig), 0));
    if (sig == SIGKILL) {
        cr_assert(eq(int, (int)waitpid(p->pid, NULL, 0), (int)p->pid));
        p->pid = 0;
    }
    cr_assert(eq(int, tc_hist_fault(h, what, -1, 0, t0), 0));
    tc_hist_close(h);
}

/* ------------------------------------------------------------------------ */
/* The fixture                                                              */
/* ------------------------------------------------------------------------ */

static void setup(void)
{
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert(sh != MAP_FAILED, "mmap: %s", strerror(errno));
    tc_resource(sh->res, sizeof(sh->res), NULL);
    sh->len = strlen(sh->res);
    tc_contend_paths(sh->hpath, sh->spath, sizeof(sh->hpath));
    for (int i = 0; i < 2; i++) {
        atomic_store(&sh->p[i].acquire_upto, INT_MAX);
        atomic_store(&sh->p[i].release_upto, INT_MAX);
    }
}

static void teardown(void)
{
    if (here.running || here.c)
        crew_end(&here);
    if (sh && sh->p[1].pid > 0) {
        kill(sh->p[1].pid, SIGKILL);
        waitpid(sh->p[1].pid, NULL, 0);
    }
    tc_heal();
    if (sh)
        munmap(sh, sizeof(*sh));
    sh = NULL;
}

TestSuite(handoff, .init = setup, .fini = teardown, .timeout = 120);

/* ------------------------------------------------------------------------ */
/* A pass, seen up close                                                    */
/* ------------------------------------------------------------------------ */

#define PASS_TTL_MS 10000u
#define WAITERS 4
#define HELD_BEFORE_PASS_MS 300u

static int quorum(void)
{
    return tc_n() / 2 + 1;
}

/* Masters where the key holds @token; the least PTTL among them in @pttl. */
static int holding(const char *token, long long *pttl)
{
    int k = 0;

    *pttl = LLONG_MAX;
    for (int m = 0; m < tc_n(); m++) {
        char v[128];
        long long t = 0;

        if (tc_get(m, sh->res, sh->len, v, sizeof(v), &t) == 1 && tc_value_is_token(v, token)) {
            k++;
            *pttl = t < *pttl ? t : *pttl;
        }
    }
    return k;
}

/* H just passed the lock to W: what the masters and H's lock say. */
static void expect_passed(const struct grant *h, const struct grant *w, bool fenced)
{
    long long pttl, ignored;
    redlock_lock *stale = NULL;
    redlock_error e;
    int rc;

    cr_expect(eq(int, h->rel_rc, 0), "the release that passed the lock returned %s",
              redlock_err_name(h->rel_rc));
    cr_expect(le(i64, h->validity_after, 0),
              "the holder that passed the lock still has %lld ms of validity",
              (long long)h->validity_after);
    if (fenced)
        cr_expect(gt(u64, w->fence, h->fence), "the pass gave fence %llu after %llu",
                  (unsigned long long)w->fence, (unsigned long long)h->fence);
    cr_expect(lt(u64, w->invoke_us, atomic_load(&((struct grant *)h)->end_us)),
              "the next holder was not waiting when the lock was passed");

    /* On the masters: W's token on a majority, its lease (re)set with a
     * full ttl after H's release was called (not H's expiry kept: H held
     * HELD_BEFORE_PASS_MS; 5 ms for rounding and the two clocks), and H's
     * token nowhere. */
    int with_w = holding(w->token, &pttl);
    long long floor = (long long)PASS_TTL_MS - (long long)tc_ms_since(h->end_us) - 5;

    cr_expect(ge(int, with_w, quorum()), "the next holder's token is on %d masters", with_w);
    cr_expect(ge(i64, pttl, floor),
              "the next holder's key lives %lld ms, less than a ttl from the pass (%lld): the "
              "pass kept the previous holder's expiry",
              pttl, floor);
    cr_expect(eq(int, holding(h->token, &ignored), 0),
              "the previous holder's token is still there");

    /* H's token is stale: an extend with it changes nothing. */
    cr_assert(eq(int, redlock_lock_new(sh->res, sh->len, h->token, &stale, &e), 0), "%s", e.msg);
    rc = redlock_extend(here.c, stale, PASS_TTL_MS, NULL, &e);
    redlock_lock_free(stale);
    cr_expect(not(eq(int, rc, 0)), "an extend with the previous holder's token succeeded");
    cr_expect(ge(int, holding(w->token, &ignored), quorum()),
              "an extend with the previous holder's token took the lock from the next");
}

/*
 * Waiters of one client wait for its holder (each said so: the
 * not-reentrant warning); the holder releases, and the next local waiter
 * holds at once: counted by the client as a local hand-off, with no
 * release run on the masters (no DEL, PUBLISH or native delete there), the
 * previous holder left with no validity and a stale token, the next one
 * with a fresh lease and a larger fence. Three passes in a row (no other
 * client waits, so none is cut off), then the last holder's release leaves
 * no key.
 */
ParameterizedTestParameters(
    handoff, a_release_passes_the_lock_to_a_waiter_of_its_client_without_a_release_round)
{
    TC_CASE_INDEXES(fence_modes);
}

ParameterizedTest(size_t *i, handoff,
                  a_release_passes_the_lock_to_a_waiter_of_its_client_without_a_release_round)
{
    struct cohort co = cohort_of(0, WAITERS);
    struct proc *p = &sh->p[0];

    co.unfenced = !fence_modes[*i];
    co.rounds = 1;
    co.ttl_ms = PASS_TTL_MS;
    atomic_store(&p->release_upto, 0);
    cohort_start(&co);
    cr_assert(TC_AWAIT(grant_of(0, 1) && waits(0) >= WAITERS - 1, AWAIT_MS),
              "%d waiters of %d said they wait for their own client's holder", waits(0),
              WAITERS - 1);
    long long m0 = metric(here.c, HANDOFFS);
    cr_assert(eq(i64, m0, 0), "%s is %lld (-1: redlock_metrics_write() has no such line)", HANDOFFS,
              m0);
    cr_assert(eq(i64, metric(here.c, HANDOFFS_FAILED), 0), "%s", HANDOFFS_FAILED);
    long long rel0 = release_commands();

    for (int s = 1; s < WAITERS; s++) {
        struct grant *h = grant_of(0, s), *w;

        /* Time is the subject: the holder uses part of its lease, so that
         * a pass that kept its expiry shows in the next one's PTTL. */
        tc_sleep_ms(HELD_BEFORE_PASS_MS);
        atomic_store(&p->release_upto, s);
        cr_assert(TC_AWAIT((w = grant_of(0, s + 1)) != NULL && released(h), AWAIT_MS),
                  "grant %d: released %d, next holder %p", s, released(h), (void *)w);
        expect_passed(h, w, fence_modes[*i]);
        cr_expect(eq(i64, metric(here.c, HANDOFFS), s), "%d releases, %lld local hand-offs", s,
                  metric(here.c, HANDOFFS));
        cr_expect(eq(i64, release_commands() - rel0, 0),
                  "%lld DEL/PUBLISH on the masters after %d passes: a release ran",
                  release_commands() - rel0, s);
    }
    atomic_store(&p->release_upto, INT_MAX);
    cr_assert(TC_AWAIT(released(grant_of(0, WAITERS)), AWAIT_MS),
              "the last holder did not release");
    cohort_stop(0);
    cr_expect(eq(i64, handoffs(0), WAITERS - 1), "%lld local hand-offs", handoffs(0));
    cr_expect(eq(i64, atomic_load(&p->handoffs_failed), 0), "%lld failed local hand-offs",
              (long long)atomic_load(&p->handoffs_failed));
    cr_expect(TC_AWAIT(tc_key_count(sh->res, sh->len) == 0, AWAIT_MS),
              "the key is left on %d masters", tc_key_count(sh->res, sh->len));
    expect_exclusive_and_fenced(fence_modes[*i]);
    expect_history_clean();
}

/*
 * The same waiters with local_run_max 0 or 1: they wait in the masters'
 * queue, every release goes to the masters (each publishes the head's
 * wake-up on every master with the queue) and no local hand-off is
 * counted.
 */
static const uint32_t off_values[] = { 0, 1 };

ParameterizedTestParameters(handoff, local_run_max_0_or_1_turns_the_local_hand_off_off)
{
    TC_CASE_INDEXES(off_values);
}

ParameterizedTest(size_t *i, handoff, local_run_max_0_or_1_turns_the_local_hand_off_off)
{
    struct cohort co = cohort_of(0, WAITERS);
    struct proc *p = &sh->p[0];

    co.rounds = 1;
    co.ttl_ms = PASS_TTL_MS;
    co.run_max = off_values[*i];
    atomic_store(&p->release_upto, 0);
    cohort_start(&co);
    cr_assert(TC_AWAIT(grant_of(0, 1) && queued_everywhere(WAITERS - 1), AWAIT_MS),
              "%d waiters did not queue behind the holder", WAITERS - 1);
    long long rel0 = release_commands();

    atomic_store(&p->release_upto, INT_MAX);
    cr_assert(TC_AWAIT(released(grant_of(0, WAITERS)), AWAIT_MS),
              "%d waiters did not all get the lock", WAITERS);
    long long rel = release_commands() - rel0;
    cohort_stop(0);
    cr_expect(eq(i64, handoffs(0), 0), "local_run_max %u: %lld local hand-offs", off_values[*i],
              handoffs(0));
    cr_expect(eq(i64, atomic_load(&p->handoffs_failed), 0), "local_run_max %u: %lld failed",
              off_values[*i], (long long)atomic_load(&p->handoffs_failed));
    cr_expect(ge(i64, rel, (WAITERS - 1) * quorum()),
              "local_run_max %u: %lld DEL/PUBLISH for %d releases to a waiter: the releases did "
              "not run on the masters",
              off_values[*i], rel, WAITERS - 1);
    expect_exclusive_and_fenced(true);
    expect_history_clean();
}

/* ------------------------------------------------------------------------ */
/* Two processes                                                            */
/* ------------------------------------------------------------------------ */

/* Both processes' cohorts working: three waiters each, holding a few ms. */
static void two_cohorts(const char *masters, int64_t run_max, bool fenced)
{
    struct cohort a = cohort_of(1, 3), b = cohort_of(0, 3);

    a.unfenced = b.unfenced = !fenced;
    a.hold_ms = b.hold_ms = 3;
    a.masters = b.masters = masters;
    a.run_max = b.run_max = run_max;
    cohort_fork(&a);
    cohort_start(&b);
}

/*
 * Three waiters in each of two processes, free-running: the lock goes
 * from waiter to waiter inside each process and between the processes.
 * In grant order fences strictly increase and no hold begins before the
 * one before it ended; check.py agrees.
 */
Test(handoff, fences_increase_in_grant_order_across_local_and_remote_hand_offs)
{
    two_cohorts(NULL, -1, true);
    cr_assert(TC_AWAIT(atomic_load(&sh->n) >= 100 && switches() >= 10 && handoffs(0) >= 5 &&
                           handoffs(1) >= 5,
                       60000),
              "%d grants, %d between processes, local hand-offs %lld and %lld", atomic_load(&sh->n),
              switches(), handoffs(0), handoffs(1));
    cohort_stop(0);
    cohort_stop(1);
    expect_exclusive_and_fenced(true);
    expect_history_clean();
}

/* ------------------------------------------------------------------------ */
/* A local holder killed, paused, or its next waiter cancelled mid-pass     */
/* ------------------------------------------------------------------------ */

#define FAULT_TTL_MS 2000u
#define B_POLL_MS 100u

/*
 * The child's first holder, with local waiters queued and the test's own
 * waiter B queued behind them, passes the lock after using half its lease;
 * the child's second holder is the local holder the test then acts on.
 * Returns it.
 */
static struct grant *local_holder_with_b_waiting(int child_waiters)
{
    struct cohort a = cohort_of(1, child_waiters), b = cohort_of(0, 1);
    struct grant *w;

    a.rounds = b.rounds = 1;
    a.ttl_ms = b.ttl_ms = FAULT_TTL_MS;
    b.poll_ms = B_POLL_MS;
    atomic_store(&sh->p[1].release_upto, 0);
    atomic_store(&sh->p[0].release_upto, 0);
    atomic_store(&sh->p[0].acquire_upto, 0);
    cohort_fork(&a);
    cr_assert(TC_AWAIT(grant_of(1, 1) && waits(1) >= child_waiters - 1, AWAIT_MS),
              "%d of the child's %d waiters wait for its holder", waits(1), child_waiters - 1);
    long q0 = queued_least();
    cohort_start(&b);
    atomic_store(&sh->p[0].acquire_upto, 1);
    cr_assert(TC_AWAIT(queued_everywhere(q0 + 1), AWAIT_MS), "B did not queue");
    /* Time is the subject: the first holder uses half its lease, so that a
     * pass that kept its expiry would end the next lease early. */
    tc_sleep_ms(FAULT_TTL_MS / 2);
    atomic_store(&sh->p[1].release_upto, 1);
    /* ... and its release is recorded (the history's line is written
     * once the release returned, which may come after the next grant). */
    cr_assert(TC_AWAIT((w = grant_of(1, 2)) != NULL && handoffs(1) >= 1 && released(grant_of(1, 1)),
                       AWAIT_MS),
              "the child's first holder did not pass the lock to its local waiter (next grant "
              "%p, local hand-offs %lld)",
              (void *)w, handoffs(1));
    cr_assert(eq(i64, handoffs(1), 1));
    return w;
}

/* B got the lock from a local holder that stopped acting (killed or
 * paused): not before its validity ended, within about a ttl. */
static struct grant *expect_b_after_the_lease(const struct grant *w)
{
    struct grant *b;

    cr_assert(TC_AWAIT((b = grant_of(0, 1)) != NULL, 3 * FAULT_TTL_MS + SLACK_MS),
              "B never got the lock");
    cr_expect(ge(u64, b->start_us, w->vend_us),
              "B got the lock %.1f ms before the local holder's validity ended",
              (w->vend_us - b->start_us) / 1000.0);
    /* The key was set with a full ttl by the pass; B polls every
     * B_POLL_MS (+ a tenth) once it is free. */
    uint64_t by = w->start_us + 1000ull * (FAULT_TTL_MS + B_POLL_MS + B_POLL_MS / 10 + SLACK_MS);
    cr_expect(le(u64, b->start_us, by), "B got the lock %.1f ms after the local holder's (ttl %u)",
              (b->start_us - w->start_us) / 1000.0, FAULT_TTL_MS);
    cr_expect(gt(u64, b->fence, w->fence), "B's fence %llu, the local holder's %llu",
              (unsigned long long)b->fence, (unsigned long long)w->fence);
    return b;
}

/*
 * The process holding the lock by a local hand-off dies with its other
 * local waiter (SIGKILL): nothing is released, and the other process's
 * waiter gets the lock once the pass's lease ends, and not before.
 */
Test(handoff, a_local_holder_killed_with_its_waiters_frees_the_lock_after_its_lease)
{
    struct grant *w = local_holder_with_b_waiting(3), *b;

    signal_child(SIGKILL, "sigkill-local-holder");
    b = expect_b_after_the_lease(w);
    atomic_store(&sh->p[0].release_upto, INT_MAX);
    cr_assert(TC_AWAIT(released(b), AWAIT_MS), "B did not release");
    cohort_stop(0);
    expect_exclusive_and_fenced(true);
    expect_history_clean();
}

/*
 * The process holding the lock by a local hand-off is stopped (SIGSTOP)
 * past its validity: the other process's waiter gets the lock after the
 * lease, with a larger fence. Resumed, the paused holder's own validity
 * says 0, a store that has seen B's fence refuses its token, and its late
 * release takes nothing from B.
 */
Test(handoff, a_local_holder_paused_past_its_lease_loses_the_lock_and_its_fence_is_stale)
{
    struct grant *w = local_holder_with_b_waiting(2), *b;
    long long ignored;

    signal_child(SIGSTOP, "sigstop-local-holder");
    b = expect_b_after_the_lease(w);
    uint64_t store_newest = b->fence; /* the fenced store has taken B's write */
    signal_child(SIGCONT, "sigcont-local-holder");
    atomic_store(&sh->p[1].release_upto, INT_MAX);
    cr_assert(TC_AWAIT(released(w), AWAIT_MS), "the resumed holder did not release");
    cr_expect(le(i64, w->validity_end, 0), "resumed, the paused holder's validity is %lld ms",
              (long long)w->validity_end);
    cr_expect(lt(u64, w->fence, store_newest),
              "the store would take the paused holder's write: fence %llu, newest seen %llu",
              (unsigned long long)w->fence, (unsigned long long)store_newest);
    cr_expect(not(eq(int, w->rel_rc, 0)), "the paused holder's late release returned 0");
    cr_expect(ge(int, holding(b->token, &ignored), quorum()),
              "the paused holder's late release took B's lock");
    atomic_store(&sh->p[0].release_upto, INT_MAX);
    cr_assert(TC_AWAIT(released(b), AWAIT_MS), "B did not release");
    cohort_stop(0);
    cohort_stop(1);
    expect_exclusive_and_fenced(true);
    expect_history_clean();
}

/* An async operation of the cancel test. */
struct aop {
    const char *name;
    int t; /* its number in the record */
    bool unfenced;
    tc_hist *h;
    uint64_t invoke_us;
    int done;
    int rc;
    redlock_lock *l;
    struct grant *g;
    char votes[REDLOCK_MAX_MASTERS + 1]; /* tc_hist_votes() */
    char msg[REDLOCK_ERRMSG_LEN];
};

static void on_acquired(redlock_client *c, int status, redlock_lock *lock,
                        const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct aop *o = arg;

    (void)c;
    (void)err;
    tc_hist_acquire(o->h, o->name, sh->res, sh->len, PASS_TTL_MS, o->invoke_us, status, lock, out);
    o->rc = status;
    o->l = lock;
    if (status == 0)
        o->g = grant_note(0, o->t, o->invoke_us, lock);
    o->done = 1;
}

static void on_released(redlock_client *c, int status, redlock_lock *lock,
                        const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct aop *o = arg;

    (void)c;
    tc_hist_release(o->h, o->name, o->invoke_us, status, lock, out);
    grant_released(o->g, lock, status);
    tc_hist_votes(out, o->votes);
    snprintf(o->msg, sizeof(o->msg), "%s", err->msg);
    o->rc = status;
    o->done = 1;
}

static void acquire_async(redlock_client *c, struct aop *o, int64_t wait_ms, redlock_cancel *cc)
{
    redlock_resource r = { sh->res, sh->len };
    redlock_acquire_opts opts;
    redlock_error e;

    redlock_acquire_opts_init(&opts);
    opts.ttl_ms = PASS_TTL_MS;
    opts.flags = o->unfenced ? 0 : REDLOCK_FENCE;
    opts.wait_ms = wait_ms;
    opts.cancel = cc;
    o->invoke_us = tc_now_us();
    cr_assert(eq(int, redlock_acquire_with_async(c, &r, 1, &opts, on_acquired, o, &e), 0), "%s",
              e.msg);
}

/* Release @o's lock; @rel is the release's own op. */
static void release_async(redlock_client *c, struct aop *o, struct aop *rel)
{
    redlock_error e;

    *rel = (struct aop){ .name = o->name, .t = o->t, .h = o->h, .g = o->g };
    grant_end(o->g, o->l);
    rel->invoke_us = tc_now_us();
    cr_assert(eq(int, redlock_release_async(c, o->l, on_released, rel, &e), 0), "%s", e.msg);
}

/* A client's script held by CLIENT PAUSE WRITE on every master. */
static bool blocked_everywhere(void)
{
    for (int m = 0; m < tc_n(); m++)
        if (tc_info_num(m, "clients", "blocked_clients") < 1)
            return false;
    return true;
}

static void unpause_all(void)
{
    for (int m = 0; m < tc_n(); m++)
        freeReplyObject(tc_cmd(m, "CLIENT UNPAUSE"));
}

/*
 * Async waiters W1 and W2 of one client queue behind its holder H, and
 * the other process's B behind them. Every master holds writes (CLIENT
 * PAUSE WRITE) while H releases: the pass to W1 is in flight, held there,
 * when W1 is cancelled. W1 ends ECANCELED, the pass counts as failed, H's
 * release still completes with 0, then W2 and B each get the lock in
 * turn, and once they released no key is left on any master.
 */
Test(handoff, a_local_waiter_cancelled_while_its_pass_is_in_flight_leaves_the_release_done)
{
    struct cohort bc = cohort_of(1, 1);
    struct aop H = { .name = "H" }, W1 = { .name = "W1", .t = 1 }, W2 = { .name = "W2", .t = 2 };
    struct aop R, R2;
    redlock_cancel *cc = NULL;
    redlock_config cfg;
    redlock_client *c;
    struct grant *b;

    bc.rounds = 1;
    bc.ttl_ms = PASS_TTL_MS;
    bc.poll_ms = 500;
    bc.clock_off = 1;
    atomic_store(&sh->p[1].acquire_upto, 0);
    cohort_fork(&bc);

    struct event_base *base = event_base_new();
    cr_assert(base != NULL);
    tc_config(&cfg);
    cfg.clock_policy = REDLOCK_CLOCK_OFF;
    cfg.node_timeout_ms = 5000; /* held by the pause, not timed out */
    cfg.retry_delay_ms = LONG_POLL_MS;
    cfg.retry_jitter_ms = LONG_POLL_MS / 10;
    cfg.log_fn = on_log;
    cfg.log_arg = &sh->p[0];
    c = tc_client_async(&cfg, base);
    cr_assert(tc_async_ready(base, c, tc_n(), 10000), "the async client did not connect");
    H.h = W1.h = W2.h = tc_hist_open(sh->hpath);
    cr_assert(H.h != NULL);
    cr_assert(eq(int, redlock_cancel_new(&cc), 0));

    acquire_async(c, &H, 0, NULL);
    cr_assert(TC_RUN_UNTIL(base, H.done, AWAIT_MS) && H.rc == 0, "H: %s", redlock_err_name(H.rc));
    acquire_async(c, &W1, 30000, cc);
    cr_assert(TC_RUN_UNTIL(base, waits(0) >= 1, AWAIT_MS), "W1 does not wait for H");
    acquire_async(c, &W2, 30000, NULL);
    cr_assert(TC_RUN_UNTIL(base, waits(0) >= 2, AWAIT_MS), "W2 does not wait for H");
    long q0 = queued_least();
    atomic_store(&sh->p[1].acquire_upto, 1);
    cr_assert(TC_RUN_UNTIL(base, queued_everywhere(q0 + 1), AWAIT_MS), "B did not queue");

    long long ok0 = metric(c, HANDOFFS), failed0 = metric(c, HANDOFFS_FAILED);
    cr_assert(ge(i64, failed0, 0), "redlock_metrics_write() has no %s", HANDOFFS_FAILED);
    for (int m = 0; m < tc_n(); m++)
        tc_pause_writes(m, 10000);
    release_async(c, &H, &R);
    bool held = TC_RUN_UNTIL(base, blocked_everywhere(), AWAIT_MS);
    redlock_cancel_fire(cc);
    unpause_all();
    cr_assert(held, "no script of ours was held on every master after H's release");

    cr_assert(TC_RUN_UNTIL(base, R.done && W1.done, AWAIT_MS), "H's release %d, W1 %d", R.done,
              W1.done);
    cr_expect(eq(int, R.rc, 0), "H's release: %s (votes %s): %s", redlock_err_name(R.rc), R.votes,
              R.msg);
    cr_expect(le(i64, H.g->validity_after, 0), "H still has %lld ms of validity",
              (long long)H.g->validity_after);
    cr_expect(eq(int, W1.rc, REDLOCK_ECANCELED), "W1: %s", redlock_err_name(W1.rc));
    cr_expect(eq(i64, metric(c, HANDOFFS_FAILED) - failed0, 1),
              "%lld failed local hand-offs: the cancel did not meet the pass in flight",
              metric(c, HANDOFFS_FAILED) - failed0);
    cr_expect(eq(i64, metric(c, HANDOFFS) - ok0, 0), "a cancelled pass counted as granted");
    redlock_lock_free(H.l);
    if (W1.l) {
        release_async(c, &W1, &R2);
        TC_RUN_UNTIL(base, R2.done, AWAIT_MS);
        redlock_lock_free(W1.l);
    }

    /* W2 (the reservation W1's clean-up leaves it, found at its poll) and
     * B (woken by W2's release), each in turn. */
    cr_assert(TC_RUN_UNTIL(base, W2.done || grant_of(1, 1), 3 * LONG_POLL_MS + SLACK_MS),
              "nobody got the lock after the cancelled pass");
    cr_assert(TC_RUN_UNTIL(base, W2.done, AWAIT_MS) && W2.rc == 0, "W2: %s",
              redlock_err_name(W2.rc));
    release_async(c, &W2, &R2);
    cr_assert(TC_RUN_UNTIL(base, R2.done && released(b = grant_of(1, 1)), AWAIT_MS),
              "W2's release %d, B %p", R2.done, (void *)grant_of(1, 1));
    cr_expect(eq(int, R2.rc, 0), "W2's release: %s", redlock_err_name(R2.rc));
    redlock_lock_free(W2.l);
    cr_expect(TC_AWAIT(tc_key_count(sh->res, sh->len) == 0, AWAIT_MS),
              "the key is left on %d masters", tc_key_count(sh->res, sh->len));

    redlock_client_free(c);
    event_base_free(base);
    redlock_cancel_free(cc);
    tc_hist_close(H.h);
    cohort_stop(1);
    expect_exclusive_and_fenced(true);
    expect_history_clean();
}

/*
 * A pass never overtakes an older waiter of its own client. H and W1 start
 * together on one client: H wins, W1 (not parked: H was not yet holding)
 * queues and polls with attempts; W2 starts once H holds, and parks. Every
 * master holds writes (CLIENT PAUSE WRITE) until W1's poll is held there,
 * in flight, and H releases. Passing to W2 would let the younger waiter
 * overtake W1 (bench: contention-inproc's arrival order); W1 gets the lock
 * first, then W2.
 */
Test(handoff, a_pass_never_overtakes_an_older_waiter_whose_attempt_is_in_flight)
{
    struct aop H = { .name = "H" }, W1 = { .name = "W1", .t = 1 }, W2 = { .name = "W2", .t = 2 };
    struct aop R, R1, R2;
    redlock_config cfg;

    struct event_base *base = event_base_new();
    cr_assert(base != NULL);
    tc_config(&cfg);
    cfg.clock_policy = REDLOCK_CLOCK_OFF; /* no probe scripts held by the pause */
    cfg.node_timeout_ms = 5000;           /* held by the pause, not timed out */
    cfg.retry_delay_ms = 50;              /* W1's polls: one is soon in flight */
    cfg.retry_jitter_ms = 5;
    cfg.log_fn = on_log;
    cfg.log_arg = &sh->p[0];
    redlock_client *c = tc_client_async(&cfg, base);
    cr_assert(tc_async_ready(base, c, tc_n(), 10000), "the async client did not connect");
    H.h = W1.h = W2.h = tc_hist_open(sh->hpath);
    cr_assert(H.h != NULL);

    long q0 = queued_least();
    acquire_async(c, &H, 0, NULL);
    acquire_async(c, &W1, 30000, NULL); /* in the same turn: H is not yet a holder */
    cr_assert(TC_RUN_UNTIL(base, H.done, AWAIT_MS) && H.rc == 0, "H: %s", redlock_err_name(H.rc));
    cr_assert(TC_RUN_UNTIL(base, queued_everywhere(q0 + 1), AWAIT_MS), "W1 did not queue");
    acquire_async(c, &W2, 30000, NULL);
    cr_assert(TC_RUN_UNTIL(base, waits(0) >= 1, AWAIT_MS), "W2 did not park behind H");

    for (int m = 0; m < tc_n(); m++)
        tc_pause_writes(m, 10000);
    bool held = TC_RUN_UNTIL(base, blocked_everywhere(), AWAIT_MS);
    if (held)
        release_async(c, &H, &R);
    TC_RUN_UNTIL(base, false, 100); /* time is the subject: the release goes out, held */
    unpause_all();
    cr_assert(held, "W1's poll was not held on every master");

    cr_assert(TC_RUN_UNTIL(base, R.done && (W1.done || W2.done), AWAIT_MS),
              "H's release %d, W1 %d, W2 %d", R.done, W1.done, W2.done);
    cr_expect(eq(int, R.rc, 0), "H's release: %s", redlock_err_name(R.rc));
    cr_expect(W1.done && W1.rc == 0 && !W2.done,
              "W2 (younger, parked) got the lock before W1, whose attempt was in flight");
    redlock_lock_free(H.l);
    struct aop *first = W1.done ? &W1 : &W2, *second = W1.done ? &W2 : &W1;
    if (first->rc == 0) {
        release_async(c, first, &R1);
        cr_assert(TC_RUN_UNTIL(base, R1.done && second->done, AWAIT_MS), "the second waiter");
        redlock_lock_free(first->l);
    }
    if (second->done && second->rc == 0) {
        release_async(c, second, &R2);
        cr_assert(TC_RUN_UNTIL(base, R2.done, AWAIT_MS));
        redlock_lock_free(second->l);
    }
    cr_expect(TC_AWAIT(tc_key_count(sh->res, sh->len) == 0, AWAIT_MS),
              "the key is left on %d masters", tc_key_count(sh->res, sh->len));
    redlock_client_free(c);
    event_base_free(base);
    tc_hist_close(H.h);
    expect_exclusive_and_fenced(true);
    expect_history_clean();
}

/*
 * The pass compares before it takes over: H believes it still holds, but
 * on every master the key holds another client's token (H's lease was
 * lost there and taken). H's release passes to its parked waiter W, whose
 * attempt (PASS unfenced, the acquire script fenced) must find the key
 * held: the other client's key stays on every master, W is not granted
 * and waits on, and H's release, resumed after the lost pass, says that
 * H's token no longer holds.
 */
ParameterizedTestParameters(handoff, a_pass_never_takes_over_another_clients_key)
{
    TC_CASE_INDEXES(fence_modes);
}

ParameterizedTest(size_t *i, handoff, a_pass_never_takes_over_another_clients_key)
{
    static const char other[] = "another-clients-token-0123456789";
    struct aop H = { .name = "H", .unfenced = !fence_modes[*i] };
    struct aop W = { .name = "W", .t = 1, .unfenced = !fence_modes[*i] };
    struct aop R;
    redlock_cancel *cc = NULL;
    redlock_config cfg;

    struct event_base *base = event_base_new();
    cr_assert(base != NULL);
    tc_config(&cfg);
    cfg.retry_delay_ms = LONG_POLL_MS;
    cfg.retry_jitter_ms = LONG_POLL_MS / 10;
    cfg.log_fn = on_log;
    cfg.log_arg = &sh->p[0];
    redlock_client *c = tc_client_async(&cfg, base);
    cr_assert(tc_async_ready(base, c, tc_n(), 10000), "the async client did not connect");
    cr_assert(eq(int, redlock_cancel_new(&cc), 0));

    acquire_async(c, &H, 0, NULL);
    cr_assert(TC_RUN_UNTIL(base, H.done, AWAIT_MS) && H.rc == 0, "H: %s", redlock_err_name(H.rc));
    acquire_async(c, &W, 30000, cc);
    cr_assert(TC_RUN_UNTIL(base, waits(0) >= 1, AWAIT_MS), "W does not wait for H");
    for (int m = 0; m < tc_n(); m++)
        freeReplyObject(tc_cmd(m, "SET %b %s PX 20000", sh->res, sh->len, other));
    long long failed0 = metric(c, HANDOFFS_FAILED);

    release_async(c, &H, &R);
    cr_assert(TC_RUN_UNTIL(base, R.done, AWAIT_MS), "H's release did not end");
    cr_expect(eq(int, R.rc, REDLOCK_ENOTHELD), "H's release: %s (votes %s): %s",
              redlock_err_name(R.rc), R.votes, R.msg);
    cr_expect(W.done == 0, "W was granted (or failed: %s) over another client's key",
              redlock_err_name(W.rc));
    cr_expect(eq(i64, metric(c, HANDOFFS_FAILED) - failed0, 1), "%lld failed local hand-offs",
              metric(c, HANDOFFS_FAILED) - failed0);
    for (int m = 0; m < tc_n(); m++) {
        redisReply *v = tc_cmd(m, "GET %b", sh->res, sh->len);
        cr_expect(v && v->type == REDIS_REPLY_STRING && strcmp(v->str, other) == 0,
                  "master %d holds %s, not the other client's token", m,
                  v && v->type == REDIS_REPLY_STRING ? v->str : "nothing");
        freeReplyObject(v);
    }

    redlock_cancel_fire(cc);
    cr_assert(TC_RUN_UNTIL(base, W.done, AWAIT_MS), "W did not end at its cancel");
    if (W.l)
        redlock_lock_free(W.l);
    redlock_lock_free(H.l);
    for (int m = 0; m < tc_n(); m++)
        freeReplyObject(tc_cmd(m, "DEL %b", sh->res, sh->len));
    redlock_client_free(c);
    event_base_free(base);
    redlock_cancel_free(cc);
}

/* ------------------------------------------------------------------------ */
/* Fairness across processes: the bound B = local_run_max                   */
/* ------------------------------------------------------------------------ */

#define FAIR_ROUNDS 5

static const uint32_t bounds[] = { 2, 3 };

ParameterizedTestParameters(handoff, a_process_that_would_starve_another_is_cut_off_after_b)
{
    TC_CASE_INDEXES(bounds);
}

/*
 * One process's four waiters cycle (each takes the lock again as soon as
 * it released it), which local hand-offs alone would keep inside that
 * process forever. The other process asks, in rounds: from the moment its
 * waiter is queued on every master until it holds, the first process
 * passes at most B - 1 times in a row, and the second gets the lock. The
 * bound is on passes, not on grants (docs/model.md, "the bound is on
 * passes"): when the second process's turn is lost (its attempt fails on
 * a loaded machine), the queue's ticket order may serve the first
 * process's older waiters, each of which may pass again.
 */
ParameterizedTest(size_t *i, handoff, a_process_that_would_starve_another_is_cut_off_after_b)
{
    uint32_t bound = bounds[*i];
    struct cohort a = cohort_of(1, 4), b = cohort_of(0, 1);
    char chan[96] = "";
    int worst = 0;

    a.hold_ms = b.hold_ms = 10;
    a.run_max = b.run_max = bound;
    b.rounds = FAIR_ROUNDS;
    atomic_store(&sh->p[0].acquire_upto, 0);
    cohort_fork(&a);
    cr_assert(TC_AWAIT(handoffs(1) >= 3 && only_channel(chan, sizeof(chan)), AWAIT_MS),
              "the process with four waiters made %lld local hand-offs; channel \"%s\"",
              handoffs(1), chan);
    cohort_start(&b);
    for (int r = 1; r <= FAIR_ROUNDS; r++) {
        struct grant *g;
        uint64_t queued_at;

        atomic_store(&sh->p[0].acquire_upto, r);
        cr_assert(TC_AWAIT(other_queued_everywhere(chan) || grant_of(0, r), AWAIT_MS),
                  "round %d: the second process did not queue", r);
        queued_at = tc_now_us();
        /* Its turn, or (its attempt lost on a loaded machine) a poll of
         * LONG_POLL_MS times its rank later: never the first process's
         * passes for ever. */
        cr_assert(TC_AWAIT((g = grant_of(0, r)) != NULL, 10000),
                  "round %d: the second process waited 10 s (local_run_max %u)", r, bound);
        int run = passes_in_a_row(1, queued_at, g->start_us);
        worst = run > worst ? run : worst;
        char seen[2048];
        cr_expect(le(int, run, (int)bound - 1),
                  "round %d: %d passes in a row by the process with four waiters while the other "
                  "waited (local_run_max %u); since it queued:%s",
                  r, run, bound, grants_text(queued_at, g->start_us, seen, sizeof(seen)));
        cr_log_info("round %d: %d grants of the first process while the second waited", r,
                    grants_between(1, queued_at, g->start_us));
        cr_assert(TC_AWAIT(released(g), AWAIT_MS), "round %d: no release", r);
    }
    cohort_stop(0);
    cohort_stop(1);
    cr_log_info("local_run_max %u: at most %d passes in a row while the other process waited",
                bound, worst);
    expect_exclusive_and_fenced(true);
    expect_history_clean();
}

/* ------------------------------------------------------------------------ */
/* Masters that restart, are flushed, or whose name moves                    */
/* ------------------------------------------------------------------------ */

#define SOME 10

/* Grants and local hand-offs go on: @n more of each than at @g0 and @h0. */
static void expect_going_on(int g0, long long h0, int n, const char *since)
{
    cr_assert(TC_AWAIT(atomic_load(&sh->n) >= g0 + n && handoffs(0) + handoffs(1) >= h0 + n,
                       AWAIT_MS),
              "since %s: %d grants, %lld local hand-offs", since, atomic_load(&sh->n) - g0,
              handoffs(0) + handoffs(1) - h0);
}

static void fault_line(const char *what, int m, int lost, uint64_t t0)
{
    tc_hist *h = tc_hist_open(sh->hpath);

    cr_assert(h != NULL);
    cr_assert(eq(int, tc_hist_fault(h, what, m, lost, t0), 0));
    tc_hist_close(h);
}

/* Both cohorts at work, and under way: what a fault then meets. */
static void under_way(const char *masters, bool fenced)
{
    two_cohorts(masters, -1, fenced);
    expect_going_on(0, 0, SOME, "the start");
}

static void finish(bool fenced)
{
    cohort_stop(0);
    cohort_stop(1);
    expect_exclusive_and_fenced(fenced);
    expect_history_clean();
}

/*
 * Master 1 is killed while the lock moves by local and remote hand-offs,
 * and restarted empty (no persistence): passes and waiting go on while it
 * is down and after it came back (reborn, it sits out its window), and no
 * two holds overlap.
 */
ParameterizedTestParameters(handoff, passes_go_on_while_a_master_restarts)
{
    TC_CASE_INDEXES(fence_modes);
}

ParameterizedTest(size_t *i, handoff, passes_go_on_while_a_master_restarts)
{
    uint64_t t0;

    under_way(NULL, fence_modes[*i]);
    t0 = tc_now_us();
    tc_kill(1);
    fault_line("sigkill", 1, 0, t0);
    expect_going_on(atomic_load(&sh->n), handoffs(0) + handoffs(1), SOME, "master 1 died");
    t0 = tc_now_us();
    tc_restart(1);
    fault_line("restart", 1, 1, t0);
    expect_going_on(atomic_load(&sh->n), handoffs(0) + handoffs(1), SOME, "master 1 restarted");
    finish(fence_modes[*i]);
}

/*
 * FLUSHALL on one master, then on another, while the lock moves by local
 * and remote hand-offs: each forgets the lease it holds (and the queue);
 * passes and waiting go on, and no two holds overlap.
 */
ParameterizedTestParameters(handoff, passes_go_on_while_masters_are_flushed)
{
    TC_CASE_INDEXES(fence_modes);
}

ParameterizedTest(size_t *i, handoff, passes_go_on_while_masters_are_flushed)
{
    under_way(NULL, fence_modes[*i]);
    for (int k = 0; k < 2; k++) {
        int m = 1 + 2 * k;
        uint64_t t0 = tc_now_us();
        redisReply *r = tc_cmd(m, "FLUSHALL");

        cr_assert(r && r->type == REDIS_REPLY_STATUS, "FLUSHALL on master %d failed", m);
        freeReplyObject(r);
        fault_line("flushall", m, 1, t0);
        expect_going_on(atomic_load(&sh->n), handoffs(0) + handoffs(1), SOME, "a FLUSHALL");
    }
    finish(fence_modes[*i]);
}

/*
 * Master 0 written as a host name (tests/private-hosts.sh gives the test
 * an /etc/hosts of its own). The name moves, while the lock moves by local
 * and remote hand-offs, onto a server whose own memory counts (declared
 * empty in advance, the case test-names-move.c is about): the clients
 * follow it and make it reborn; passes and waiting go on, and no two holds
 * overlap.
 */
#define MOVER 0
#define NEW_IP "127.0.0.2"

static tc_redis *standby;
static char names[1024];

static void hosts_write(const char *mover_ip)
{
    const char *path = getenv("REDLOCK_TEST_HOSTS");
    char text[256];
    int fd, len;

    cr_assert(path && *path, "REDLOCK_TEST_HOSTS is not set (run under private-hosts.sh)");
    len = snprintf(text, sizeof(text), "127.0.0.1 localhost\n%s mover\n", mover_ip);
    fd = open(path, O_WRONLY | O_TRUNC); /* in place: the bind mount holds the inode */
    cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
    cr_assert(eq(int, (int)write(fd, text, (size_t)len), len));
    close(fd);
}

static void names_setup(void)
{
    const char *skip = getenv("REDLOCK_TEST_HOSTS_SKIP");
    char name[32];
    char *list;

    if (skip && *skip)
        cr_skip_test("%s", skip);
    setup();
    hosts_write("127.0.0.1");
    snprintf(name, sizeof(name), "mover:%d", tc_port(MOVER));
    list = tc_masters_with(MOVER, name);
    snprintf(names, sizeof(names), "%s", list);
    free(list);
}

static void names_teardown(void)
{
    tc_redis_stop(standby);
    standby = NULL;
    if (sh)
        teardown();
}

TestSuite(handoff_names, .init = names_setup, .fini = names_teardown, .timeout = 120);

/* The standby's marker says it was made reborn for the move. */
static bool standby_reborn_for_the_move(void)
{
    static const char marker[] = "\0redlock:marker";
    redisContext *rc = redisConnect(NEW_IP, tc_port(MOVER));
    redisReply *r = rc && !rc->err ? redisCommand(rc, "HGET %b cause", marker, sizeof(marker) - 1)
                                   : NULL;
    bool moved = r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "moved") == 0;

    freeReplyObject(r);
    redisFree(rc);
    return moved;
}

ParameterizedTestParameters(handoff_names, passes_go_on_while_a_masters_name_moves)
{
    TC_CASE_INDEXES(fence_modes);
}

ParameterizedTest(size_t *i, handoff_names, passes_go_on_while_a_masters_name_moves)
{
    char port[16], one[64];
    const char *args[] = { "--bind", NEW_IP, "--port", port, NULL };
    redlock_config dcfg;
    redlock_client *d;
    redlock_error e;
    uint64_t t0;

    under_way(names, fence_modes[*i]);
    t0 = tc_now_us();
    tc_kill(MOVER);
    snprintf(port, sizeof(port), "%d", tc_port(MOVER));
    standby = tc_redis_start(args);
    tc_config(&dcfg);
    snprintf(one, sizeof(one), "%s:%s", NEW_IP, port);
    dcfg.masters = one;
    d = tc_client(&dcfg, -1);
    cr_assert(eq(int, redlock_declare_empty(d, NULL, &e), 0), "%s", e.msg);
    redlock_client_free(d);
    hosts_write(NEW_IP);
    fault_line("name-moved", MOVER, 1, t0);
    cr_assert(TC_AWAIT(standby_reborn_for_the_move(), AWAIT_MS),
              "no client followed the name to the standby");
    expect_going_on(atomic_load(&sh->n), handoffs(0) + handoffs(1), SOME, "the name moved");
    finish(fence_modes[*i]);
}
