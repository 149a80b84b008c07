/* contend.h - clients fighting over one lock, every operation recorded.
 *
 * A run is a few workers contending on one resource: acquire, hold a few
 * ms, sometimes extend, release. Workers are threads, each with a blocking
 * client of its own, or processes that make a new client for every
 * acquire, as every redlock-cli call does (one-shot clients). Every call goes into a history
 * (history.h) in the cluster's dir. While they run, a test breaks masters; then it stops the
 * workers, snapshots what the masters still hold, and runs tests/history/check.py over it all.
 * Grants are also kept in memory with the masters that voted for them, so a test can await them
 * ("five grants since the fault") and ask which masters they counted. For criterion tests: helpers
 * that cannot do their job fail the test.
 */
#ifndef TC_CONTEND_H
#define TC_CONTEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <redlock.h>

#include "await.h"
#include "history.h"

#define TC_CONTEND_WORKERS 4
/* One ttl for every client: the restart guard's window is the longest ttl
 * the guarding client itself has used, so it covers a holder with a longer
 * ttl for only part of that holder's lease. Long enough for a holder to
 * outlive three master restarts under sanitizers. */
#define TC_CONTEND_TTL_MS 3000u
/* Room for what check.py prints about a run. */
#define TC_CONTEND_OUT_SIZE 24576

#define TC_CONTEND_MAX_GRANTS 8192

typedef struct tc_contend tc_contend;

typedef struct tc_contend_grant {
    uint64_t complete_us;
    uint32_t oks; /* bit i: master i voted OK */
} tc_contend_grant;

struct tc_contend {
    /* for the test */
    tc_hist *h;     /* the history, for the test's own lines */
    char path[512]; /* the history's file */
    char snap[512]; /* the snapshot of keys at the end */
    char res[160];  /* the contended resource */
    size_t len;
    uint64_t rel_fail_after; /* count release/extend failures after this (0: never) */
    int late_failures;       /* releases/extends that failed after rel_fail_after */
    char late_what[400];     /* the first of them */

    /* contend.c's; what is shared with the workers is under mu */
    struct tc_contend_worker *w;
    int n_workers;
    int one_shot;  /* the workers are processes (TC_CONTEND_ONE_SHOT) */
    int bad_exits; /* worker processes that did not exit 0 */
    atomic_int stop;
    pthread_mutex_t mu;
    tc_contend_grant grants[TC_CONTEND_MAX_GRANTS];
    int n_grants;
    int attempts;
    uint64_t last_answer[REDLOCK_MAX_MASTERS]; /* last time master i answered a vote */
    int acq[20], rel[20], ext[20];             /* results by -rc */
};

/* The config of every client in a run: tc_config(), a 250 ms node
 * timeout, two quick retries, reconnects within 100 ms, @guard as
 * restart_guard. */
void tc_contend_config(redlock_config *cfg, int guard);

/* A blocking client on tc_contend_config(), connected to every master. */
redlock_client *tc_contend_client(int guard);

/* How the workers of a run are made. */
enum tc_contend_kind {
    TC_CONTEND_THREADS,  /* threads, one client each for the whole run */
    TC_CONTEND_ONE_SHOT, /* processes, a new client for every acquire (and
                         its extend and release), used at once */
};

/* Start @workers workers (0: a history only) of @kind on a fresh resource;
 * threads start with every client connected. Ownership: tc_contend_free(). The
 * run is shared with worker processes: fork before the test makes clients
 * of its own. */
tc_contend *tc_contend_start_kind(int guard, int workers, int kind);

/* tc_contend_start_kind(@guard, @workers, TC_CONTEND_THREADS) */
tc_contend *tc_contend_start(int guard, int workers);

/* Record a grant the test's own client (not a worker) got. */
void tc_contend_note_grant(tc_contend *r, const redlock_outcome *out);

/* Grants completed in [@from, @to) whose OK votes include all of @mask. */
int tc_contend_grants_between(tc_contend *r, uint64_t from, uint64_t to, uint32_t mask);

/* First grant completed at or after @from whose OK votes include @mask;
 * 0 if none. */
uint64_t tc_contend_first_grant(tc_contend *r, uint64_t from, uint32_t mask);

/* When master @m last answered a worker's vote (0: never). */
uint64_t tc_contend_last_answer(tc_contend *r, int m);

/* Acquires the workers have completed so far, granted or not. */
int tc_contend_attempts(tc_contend *r);

/* Await @n grants completed at or after @from whose OK votes include
 * @mask, for at most @timeout_ms. Return: how many there were. */
int tc_contend_await_grants(tc_contend *r, uint64_t from, uint32_t mask, int n, int timeout_ms);

/* A "fault" line: @what happened to master @master since @t0 (tc_hist_fault). */
void tc_contend_fault(tc_contend *r, const char *what, int master, int lost, uint64_t t0);

/* One fault, timed and recorded: the time is taken before @act(@master)
 * runs, so the checker sees the fault no later than it happened. */
void tc_contend_inject(tc_contend *r, void (*act)(int), const char *what, int master, int lost);

/* Stop the workers, wait until the masters ran all they were sent,
 * snapshot them, run the checker with --masters N and @args; returns its
 * exit status and leaves its output in @out. */
int tc_contend_finish(tc_contend *r, const char *const *args, char *out, size_t size);

/* tc_contend_finish(), and the checker must find nothing. */
void tc_contend_expect_clean(tc_contend *r, const char *const *args);

/* Copy the history and snapshot where they outlive the cluster's temp dir
 * (for failure messages). Return: the copy's path. */
const char *tc_contend_keep(tc_contend *r);

void tc_contend_free(tc_contend *r);

/* ---- for histories written by other means ------------------------------ */

/* "history-PID.jsonl" and "snapshot-PID.jsonl" in the cluster's dir,
 * neither there yet. */
void tc_contend_paths(char *hpath, char *spath, size_t size);

/* Wait until every live master has dropped every client but the test's own
 * INFO connection (at most 5 s each): nothing a client sent can still
 * change what a snapshot then sees. */
void tc_contend_quiesce(void);

/* A snapshot at @path: what every live master holds under @res, with its
 * PTTL ("key" lines). */
void tc_contend_snapshot(const char *path, const void *res, size_t len);

/* check.py over @hpath and @spath with --masters N and @args; fails the
 * test if it did not run. Return: its exit status (0 clean, 1 violations). */
int tc_contend_check(const char *hpath, const char *spath, const char *const *args, char *out,
                     size_t size);

#endif
