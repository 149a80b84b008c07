/* history.h - a record of lock operations, for tests/history/check.py.
 *
 * Jepsen's idea on a small scale: every client writes down what it asked,
 * when (invoke and complete on CLOCK_MONOTONIC, which on Linux is one clock
 * for every process on the machine, forked or not), and what it got back.
 * A checker reads the record afterwards and looks for what must never
 * happen: two holders at once, fencing tokens out of order, a release that
 * removed someone else's lock, keys left behind beyond their ttl.
 *
 * One JSON object per line. Each line is built in memory and appended with
 * a single write(2) on an O_APPEND descriptor, so threads and processes may
 * share one history file without locks and without torn lines. Free of
 * criterion and of the cluster helpers: a forked child can use it as is.
 */
#ifndef TC_HISTORY_H
#define TC_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include <redlock.h>

#include "await.h" /* tc_now_us(): the one clock, the history's too */

typedef struct tc_hist tc_hist;

/* What a line records ("op" in the file). */
enum tc_hist_op {
    TC_HIST_ACQUIRE, /* "acquire" */
    TC_HIST_EXTEND,  /* "extend" */
    TC_HIST_RELEASE, /* "release" */
    TC_HIST_USE,     /* "use": the client acted as the holder over [invoke, complete] */
    TC_HIST_FAULT,   /* "fault": something the test did to a master or a client */
    TC_HIST_KEY,     /* "key": one key seen on one master (a snapshot line) */
};

/*
 * tc_hist_rec - one line. Fields that do not apply stay 0 / NULL and are left
 * out of the line (an omitted "vend" means "no validity").
 * @client:      who did it: a short label (any bytes; escaped)
 * @op:          enum tc_hist_op
 * @res:         resource name (any bytes) and its length
 * @invoke_us:   CLOCK_MONOTONIC µs when the call was made
 * @complete_us: CLOCK_MONOTONIC µs when it returned (0: now)
 * @rc:          0 or a REDLOCK_E* code (also written as its name)
 * @token:       the lock's token, or NULL
 * @vend_us:     validity window end: complete + the lock's validity then
 *               (may lie before complete when the lease has lapsed); 0 none
 * @has_vend:    1 when @vend_us is meaningful (0 is a valid time in theory)
 * @fence:       fencing token (redlock_lock_fence(): 0 for unfenced locks)
 * @ttl_ms:      the ttl asked for (acquire, extend)
 * @oks:         bitmask of masters whose vote was OK (bit i = master i)
 * @n_ok:        number of OK votes the decision counted
 * @attempts:    acquire: attempts made (the outcome's), each with a token
 *               of its own that a failed one may leave on a master it
 *               could not release; 0: not known (left out of the line)
 * @votes:       one letter per master, what it said (tc_hist_votes()), or NULL
 * @late:        use: the client knew its lease had lapsed (not a claim)
 * @master:      fault and key lines: the master's index, or -1
 * @lost:        fault: the master lost its keys (restart without AOF, FLUSHALL)
 * @pttl_ms:     key: PTTL as the master reported it (-1: no ttl)
 * @what:        fault: what happened ("sigkill", "flushall", ...); key: unused
 */
typedef struct tc_hist_rec {
    const char *client;
    int op;
    const void *res;
    size_t res_len;
    uint64_t invoke_us;
    uint64_t complete_us;
    int rc;
    const char *token;
    uint64_t vend_us;
    int has_vend;
    uint64_t fence;
    uint32_t ttl_ms;
    uint32_t oks;
    uint32_t n_ok;
    uint32_t attempts;
    const char *votes;
    int late;
    int master;
    int lost;
    int64_t pttl_ms;
    const char *what;
} tc_hist_rec;

/*
 * tc_hist_open() - Open (create, or append to) the history at @path
 * Return: the handle, or NULL with errno set.
 * Ownership: close it with tc_hist_close(). Thread-safety: one handle may be
 * used by any number of threads at once; a forked child may keep using
 * the parent's handle, or open the path again.
 */
tc_hist *tc_hist_open(const char *path);

/* Close @h (NULL is a no-op). */
void tc_hist_close(tc_hist *h);

/* The path @h was opened with. Borrowed: valid until tc_hist_close(). */
const char *tc_hist_path(const tc_hist *h);

/*
 * tc_hist_write() - Append @r as one line, with one write(2)
 * Return: 0, or a negative errno (-EIO for a short write, -ENOMEM).
 * Thread-safety: safe; lines from concurrent writers never interleave.
 */
int tc_hist_write(tc_hist *h, const tc_hist_rec *r);

/*
 * tc_hist_acquire(), tc_hist_extend(), tc_hist_release() - Record a redlock call
 * that has just returned
 * @invoke_us: tc_now_us() read just before the call
 * @rc:        what the call returned
 * @lock:      acquire: the new lock (NULL on failure); extend/release: the
 *             lock the call was about
 * @out:       the call's outcome (may be NULL): gives oks and n_ok, and
 *             an acquire's attempts
 *
 * The completion time is read here, then the lock's validity, so the
 * window written, [complete, complete + validity), never outlasts the
 * library's own view of the lease. The fence is the lock's own.
 * Return: as tc_hist_write().
 */
int tc_hist_acquire(tc_hist *h, const char *client, const void *res, size_t len, uint32_t ttl_ms,
                    uint64_t invoke_us, int rc, const redlock_lock *lock,
                    const redlock_outcome *out);
int tc_hist_extend(tc_hist *h, const char *client, uint32_t ttl_ms, uint64_t invoke_us, int rc,
                   const redlock_lock *lock, const redlock_outcome *out);
int tc_hist_release(tc_hist *h, const char *client, uint64_t invoke_us, int rc,
                    const redlock_lock *lock, const redlock_outcome *out);

/* A "use" line: @client acted as @lock's holder over [invoke_us, now];
 * @late says it knew the lease had lapsed. */
int tc_hist_use(tc_hist *h, const char *client, uint64_t invoke_us, const redlock_lock *lock,
                int late);

/* A "fault" line: @what happened to master @master (-1: not a master) over
 * [invoke_us, now]; @lost: the master lost the keys it held. */
int tc_hist_fault(tc_hist *h, const char *what, int master, int lost, uint64_t invoke_us);

/* A "key" line (snapshot): master @master holds @token under @res with
 * PTTL @pttl_ms, read at about now. */
int tc_hist_key(tc_hist *h, int master, const void *res, size_t len, const char *token,
                int64_t pttl_ms);

/*
 * tc_hist_check() - Run tests/history/check.py over @history
 * @snapshot: a file of "key" lines, or NULL
 * @args:     more checker options (NULL-terminated), or NULL
 * @out:      receives the checker's stdout and stderr (cut to @size), or NULL
 *
 * The checker is found through $REDLOCK_HISTORY_CHECK, else the path meson
 * compiled in (TC_HIST_CHECK_PY); it runs under $REDLOCK_PYTHON, else python3
 * from PATH.
 * Return: the checker's exit status (0 clean, 1 violations, 2 bad input),
 * or -1 if it could not be run or died (@out says why).
 */
int tc_hist_check(const char *history, const char *snapshot, const char *const *args, char *out,
                  size_t size);

/* OK votes of @out as a bitmask (bit i = master i). The decision is made
 * at the quorum-th OK, so masters still pending then are not in it even if
 * they grant a moment later. */
uint32_t tc_hist_oks(const redlock_outcome *out);

/* @out's votes as one letter per master into @buf (at least
 * REDLOCK_MAX_MASTERS + 1 bytes): O ok, H held, G gone, T timeout, D down,
 * E error, X excluded, P pending, - not asked. Return: @buf. */
char *tc_hist_votes(const redlock_outcome *out, char *buf);

#endif
