/* test-faults-client-stopped.c - a holder stopped past its validity.
 *
 * The holder is a forked process with its own client (helpers/child.h),
 * recording into the same history as the test (CLOCK_MONOTONIC is one
 * clock for every process on the machine). A holder stopped (SIGSTOP: a GC
 * pause, a swapped-out VM) past its validity loses the lock to the next
 * client once its keys expire. When it wakes, its lease tells it so:
 * redlock_lock_validity_ms() is <= 0, and its release cannot delete the
 * new holder's keys (the release script compares tokens): it answers
 * ENOTHELD, or 0 only when its keys are merely gone. The operation it was
 * in the middle of when it stopped did overlap the new holder: the checker
 * reports that as a violation unless the client marks it late, and the
 * client can mark it only because validity told it.
 * Run alone (faults); .fini kills a holder left behind by a failed test.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>
#include <hiredis/hiredis.h>

#include <redlock.h>

#include "child.h"
#include "cluster.h"
#include "contend.h"
#include "core.h"

#define STOP_TTL_MS 1000u /* the stopped holder's lease */
#define NEXT_TTL_MS 5000u /* the next holder's: outlives everything after it */

TestSuite(client, .fini = tc_child_reap, .timeout = 50);

/* The holder, A: take the lock, then work in 20 ms steps, checking the
 * lease after each step, the way a careful holder does. Each step is a
 * "use" line; the step that finds the lease lapsed is marked late. Then
 * release. Says "acquired TOKEN", "working" after its first step, and at
 * the end "done VALIDITY RC OK GONE HELD". */
static void stopped_holder(void *arg, int fd)
{
    char votes[REDLOCK_MAX_MASTERS + 1];
    struct tc_child_holder a;
    TC_OUTCOME(out);
    redlock_error e;
    uint64_t t0;
    int rc, late = 0, ok = 0, gone = 0, held = 0;
    int64_t v;

    tc_child_acquire(fd, arg, STOP_TTL_MS, &a);
    tc_child_tell(fd, "acquired %s\n", redlock_lock_token(a.l));

    /* Work until the lease says it is over (bounded: the test stops us
     * long before 30 s; if it did not, the validity check still ends it). */
    for (int step = 0; step < 1500 && !late; step++) {
        t0 = tc_now_us();
        tc_sleep_ms(20); /* time is the subject: one step of the holder's work */
        late = redlock_lock_validity_ms(a.l) <= 0;
        tc_hist_use(a.h, "A", t0, a.l, late);
        if (step == 0)
            tc_child_tell(fd, "working\n");
    }
    v = redlock_lock_validity_ms(a.l);
    t0 = tc_now_us();
    rc = redlock_release(a.c, a.l, out, &e);
    tc_hist_release(a.h, "A", t0, rc, a.l, out);
    tc_hist_votes(out, votes);
    for (const char *p = votes; *p; p++) {
        ok += *p == 'O';
        gone += *p == 'G';
        held += *p == 'H';
    }
    tc_child_tell(fd, "done %lld %d %d %d %d\n", (long long)v, rc, ok, gone, held);
    redlock_lock_free(a.l);
    redlock_client_free(a.c);
    tc_hist_close(a.h);
}

/* Masters where @res holds @token, as a bitmask. */
static unsigned holding(const char *res, size_t len, const char *token)
{
    unsigned mask = 0;

    for (int m = 0; m < tc_n(); m++) {
        redisReply *v = tc_cmd(m, "GET %b", res, len);

        if (v && v->type == REDIS_REPLY_STRING && tc_value_is_token(v->str, token))
            mask |= 1u << m;
        freeReplyObject(v);
    }
    return mask;
}

/* What A said when it woke and released. */
struct woke {
    long long validity;
    int rc, ok, gone, held;
};

/* A's history without its late mark must be a violation. */
static void expect_unmarked_history_fails(const char *hpath, const char *spath)
{
    static char out[TC_CONTEND_OUT_SIZE];
    char lpath[600], buf[8192];
    FILE *in = fopen(hpath, "r"), *o;
    int rc;

    snprintf(lpath, sizeof(lpath), "%s.unmarked", hpath);
    o = fopen(lpath, "w");
    cr_assert(in && o);
    while (fgets(buf, sizeof(buf), in)) {
        char *p = strstr(buf, "\"late\":1");

        if (p)
            p[7] = '0';
        fputs(buf, o);
    }
    fclose(in);
    fclose(o);
    rc = tc_contend_check(lpath, spath, NULL, out, sizeof(out));
    cr_assert(eq(int, rc, 1), "unmarked, A's late step must be a violation:\n%s", out);
    cr_assert(strstr(out, "VIOLATION 1 (use): A acted as holder") != NULL, "%s", out);
}

/* B asks until A's keys have expired (about A's ttl after its acquire):
 * until then every answer must be "held by another client". */
static redlock_lock *b_waits_out_a(tc_hist *h, redlock_client *b, const char *res)
{
    redlock_lock *lb = NULL;
    TC_OUTCOME(ob);
    redlock_error e;
    int rc = -1;

    TC_AWAIT(({
                 uint64_t t0 = tc_now_us();

                 rc = redlock_acquire(b, res, strlen(res), NEXT_TTL_MS, &lb, ob, &e);
                 tc_hist_acquire(h, "B", res, strlen(res), NEXT_TTL_MS, t0, rc, lb, ob);
                 rc != REDLOCK_ECONFLICT;
             }),
             10 * STOP_TTL_MS);
    cr_assert(eq(int, rc, 0), "B never got the lock after A stopped: %s: %s", redlock_err_name(rc),
              e.msg);
    return lb;
}

Test(client, stopped_holder_learns_from_validity_that_it_lost_the_lock)
{
    static char out[TC_CONTEND_OUT_SIZE];
    char hpath[512], spath[512], res[160], line[512], why[256], tok_a[64] = "";
    struct tc_child_args args = { hpath, res };
    struct woke w;
    redlock_client *b;
    redlock_lock *lb;
    TC_OUTCOME(ob);
    redlock_error e;
    unsigned before, after;
    uint64_t t0;
    tc_hist *h;
    int fd, st, rc;

    tc_contend_paths(hpath, spath, sizeof(hpath));
    tc_resource(res, sizeof(res), NULL);
    fd = tc_child_start(stopped_holder, &args);
    h = tc_hist_open(hpath);
    cr_assert(h != NULL);

    tc_child_hear(fd, line, sizeof(line), 15000);
    cr_assert(sscanf(line, "acquired %63s", tok_a) == 1, "holder said \"%s\"", line);
    tc_child_hear(fd, line, sizeof(line), 15000); /* mid-work: "working" */
    t0 = tc_now_us();
    cr_assert(kill(tc_child_pid, SIGSTOP) == 0);
    cr_assert(waitpid(tc_child_pid, &st, WUNTRACED) == tc_child_pid && WIFSTOPPED(st));
    tc_hist_fault(h, "sigstop-holder", -1, 0, t0);

    b = tc_child_client(0, why, sizeof(why));
    cr_assert(b != NULL, "%s", why);
    lb = b_waits_out_a(h, b, res);
    before = holding(res, strlen(res), redlock_lock_token(lb));
    cr_assert(ge(int, __builtin_popcount(before), 3), "B's token is on masters 0x%x only", before);

    t0 = tc_now_us();
    cr_assert(kill(tc_child_pid, SIGCONT) == 0);
    tc_hist_fault(h, "sigcont-holder", -1, 0, t0);
    tc_child_hear(fd, line, sizeof(line), 15000);
    cr_assert(sscanf(line, "done %lld %d %d %d %d", &w.validity, &w.rc, &w.ok, &w.gone, &w.held) ==
                  5,
              "holder said \"%s\"", line);
    cr_assert(waitpid(tc_child_pid, &st, 0) == tc_child_pid);
    tc_child_pid = -1;
    close(fd);
    after = holding(res, strlen(res), redlock_lock_token(lb));

    /* What A learned, and what its release did. */
    cr_expect(le(i64, w.validity, 0),
              "A's validity after waking is %lld ms: it would believe "
              "it still holds the lock",
              w.validity);
    cr_expect(w.rc == REDLOCK_ENOTHELD || (w.rc == 0 && w.gone >= 3),
              "A's late release returned %s (ok %d, gone %d, held %d): wanted ENOTHELD, or 0 "
              "with its keys gone",
              redlock_err_name(w.rc), w.ok, w.gone, w.held);
    cr_expect(eq(int, w.ok, 0), "A's late release deleted a key on %d masters", w.ok);
    cr_expect(eq(u32, before & ~after, 0u),
              "B's token was on masters 0x%x before A's release, "
              "on 0x%x after",
              before, after);
    cr_log_info("A woke with validity %lld ms; its release: %s (ok %d, gone %d, held %d); B's "
                "token on masters 0x%x before and 0x%x after",
                w.validity, redlock_err_name(w.rc), w.ok, w.gone, w.held, before, after);

    t0 = tc_now_us();
    rc = redlock_release(b, lb, ob, &e);
    tc_hist_release(h, "B", t0, rc, lb, ob);
    cr_expect(eq(int, rc, 0), "B's release: %s", e.msg);
    redlock_lock_free(lb);
    redlock_client_free(b);
    tc_hist_close(h);
    tc_contend_snapshot(spath, res, strlen(res));

    /* The history as recorded: clean, the step spanning the stop marked late. */
    rc = tc_contend_check(hpath, spath, NULL, out, sizeof(out));
    cr_assert(eq(int, rc, 0), "the checker found violations:\n%s", out);
    cr_assert(strstr(out, "1 op marked late") != NULL, "no late op was recorded:\n%s", out);
    cr_assert(strstr(out, "NOTE: late") != NULL, "the late op did not overlap B:\n%s", out);
    cr_log_info("%s", out);

    /* The same history had A not marked it: the checker must object. */
    expect_unmarked_history_fails(hpath, spath);
}
