/* test-faults-client-killed.c - a holder killed while holding the lock.
 *
 * The holder is a forked process with its own client (helpers/child.h),
 * recording into the same history as the test. Killed (SIGKILL) it never
 * releases: the lock frees when its keys expire, after the ttl and not
 * before. Until ttl - margin after the holder's acquire began, everyone
 * else gets ECONFLICT; soon after the ttl, the next client gets the lock.
 * Run alone (faults); .fini kills a holder left behind by a failed test.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "child.h"
#include "cluster.h"
#include "contend.h"
#include "core.h"

#define KILL_TTL_MS 1500u /* the killed holder's lease */

TestSuite(client, .fini = tc_child_reap, .timeout = 50);

/* The holder: take the lock, say when, then wait to be killed. Says
 * "acquired INVOKE COMPLETE TOKEN" (µs, monotonic). */
static void killed_holder(void *arg, int fd)
{
    struct tc_child_holder a;

    tc_child_acquire(fd, arg, KILL_TTL_MS, &a);
    tc_child_tell(fd, "acquired %llu %llu %s\n", (unsigned long long)a.invoke_us,
                  (unsigned long long)a.complete_us, redlock_lock_token(a.l));
    for (;;)
        pause();
}

/* The lock as B met it. */
struct next {
    int rc;
    int conflicts;       /* ECONFLICT answers before the grant */
    uint64_t got_invoke; /* when the granted acquire began ... */
    uint64_t got;        /* ... and returned */
};

/* B asks until it gets the lock, at most until @until; every other answer
 * must be ECONFLICT. The lock it gets is released and freed. */
static struct next b_waits_out_a(tc_hist *h, redlock_client *b, const char *res, uint64_t until)
{
    struct next n = { .rc = -1 };
    redlock_lock *lb = NULL;
    TC_OUTCOME(ob);
    redlock_error e;
    uint64_t t0;

    /* Time is the subject (A's ttl lapsing): B asks over and over, and
     * each refusal is counted. */
    while (tc_now_us() < until) {
        t0 = tc_now_us();
        n.rc = redlock_acquire(b, res, strlen(res), KILL_TTL_MS, &lb, ob, &e);
        tc_hist_acquire(h, "B", res, strlen(res), KILL_TTL_MS, t0, n.rc, lb, ob);
        if (n.rc == 0) {
            n.got = tc_now_us();
            n.got_invoke = t0;
            break;
        }
        cr_assert(eq(int, n.rc, REDLOCK_ECONFLICT), "B: %s: %s", redlock_err_name(n.rc), e.msg);
        n.conflicts++;
        tc_poll_pause(until);
    }
    cr_assert(eq(int, n.rc, 0), "the lock did not free within 1 s after A's ttl");
    t0 = tc_now_us();
    n.rc = redlock_release(b, lb, ob, &e);
    tc_hist_release(h, "B", t0, n.rc, lb, ob);
    cr_expect(eq(int, n.rc, 0), "B's release: %s", e.msg);
    redlock_lock_free(lb);
    return n;
}

Test(client, killed_holder_frees_after_its_ttl_and_not_before)
{
    static char out[TC_CONTEND_OUT_SIZE];
    char hpath[512], spath[512], res[160], line[512], why[256], tok_a[64];
    struct tc_child_args args = { hpath, res };
    unsigned long long a_invoke, a_complete;
    redlock_client *b;
    struct next n;
    uint64_t t0;
    tc_hist *h;
    int fd, st, rc;

    tc_contend_paths(hpath, spath, sizeof(hpath));
    tc_resource(res, sizeof(res), NULL);
    fd = tc_child_start(killed_holder, &args);
    h = tc_hist_open(hpath);
    cr_assert(h != NULL);
    b = tc_child_client(0, why, sizeof(why));
    cr_assert(b != NULL, "%s", why);

    tc_child_hear(fd, line, sizeof(line), 15000);
    cr_assert(sscanf(line, "acquired %llu %llu %63s", &a_invoke, &a_complete, tok_a) == 3,
              "holder said \"%s\"", line);
    t0 = tc_now_us();
    cr_assert(kill(tc_child_pid, SIGKILL) == 0);
    cr_assert(waitpid(tc_child_pid, &st, 0) == tc_child_pid);
    tc_child_pid = -1;
    close(fd);
    tc_hist_fault(h, "sigkill-holder", -1, 0, t0);

    /* A's keys were written after a_invoke and live a ttl on each master's
     * clock, so up to ttl - margin after a_invoke (on ours) they are all
     * there: every acquire that is over before then must be refused. */
    const double drift = 0.01;
    uint64_t margin_us = (uint64_t)(KILL_TTL_MS * drift * 1000) + 2000;
    uint64_t safe_until = a_invoke + KILL_TTL_MS * 1000ull - margin_us;
    /* ... and at most ttl (+ drift) after a_complete they are gone: B must
     * get the lock soon after; 300 ms of slack for a loaded machine. */
    uint64_t free_by = a_complete + KILL_TTL_MS * 1000ull + margin_us + 300000;

    n = b_waits_out_a(h, b, res, free_by + 1000000);
    /* B's SETs reached the masters before B returned: had that been before
     * safe_until, A's keys would all have been there to refuse them. */
    cr_expect(ge(u64, n.got, safe_until),
              "B got the lock %.1f ms after A's acquire began: "
              "before ttl - margin (%.1f ms)",
              (n.got - a_invoke) / 1000.0, (safe_until - a_invoke) / 1000.0);
    cr_expect(le(u64, n.got, free_by),
              "B got the lock only %.1f ms after A's acquire returned "
              "(ttl %u ms)",
              (n.got - a_complete) / 1000.0, KILL_TTL_MS);
    cr_expect(gt(int, n.conflicts, 10), "only %d refusals before the ttl", n.conflicts);
    cr_log_info("A killed holding a %u ms lock; B refused %d times, then granted %.1f ms after "
                "A's acquire began",
                KILL_TTL_MS, n.conflicts, (n.got_invoke - a_invoke) / 1000.0);

    redlock_client_free(b);
    tc_hist_close(h);
    tc_contend_snapshot(spath, res, strlen(res));
    rc = tc_contend_check(hpath, spath, NULL, out, sizeof(out));
    cr_assert(eq(int, rc, 0), "the checker found violations:\n%s", out);
    cr_log_info("%s", out);
}
