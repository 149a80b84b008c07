/* test-faults-client.c - clients that stop or die while holding the lock.
 *
 * The holder is a forked process with its own client, recording into the
 * same history as the test (CLOCK_MONOTONIC is one clock for every process
 * on the machine). What NOTES.md promises a holder, and what these tests
 * hold it to:
 *
 *   - A holder stopped (SIGSTOP: a GC pause, a swapped-out VM) past its
 *     validity loses the lock to the next client once its keys expire.
 *     When it wakes, its lease tells it so: redlock_lock_validity_ms() is
 *     <= 0, and its release cannot delete the new holder's keys (the
 *     release script compares tokens): it answers ENOTHELD, or 0 only when
 *     its keys are merely gone. The operation it was in the middle of when
 *     it stopped did overlap the new holder: the checker reports that as a
 *     violation unless the client marks it late, and the client can mark it
 *     only because validity told it.
 *   - A holder killed (SIGKILL) never releases: the lock frees when its
 *     keys expire, after the ttl and not before. Until ttl - margin after
 *     the holder's acquire began, everyone else gets ECONFLICT.
 *
 * Run alone (faults); .fini kills a holder left behind by a failed test.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <hiredis/hiredis.h>

#include <redlock.h>

#include "cluster.h"
#include "history.h"

#define STOP_TTL_MS 1000u      /* the stopped holder's lease */
#define KILL_TTL_MS 1500u      /* the killed holder's lease */
#define NEXT_TTL_MS 5000u      /* the next holder's: outlives everything after it */
#define OUT_SIZE 24576

static pid_t holder = -1;

static void reap_holder(void)
{
    if (holder > 0) {
        kill(holder, SIGKILL);
        waitpid(holder, NULL, 0);
        holder = -1;
    }
}

TestSuite(client, .fini = reap_holder, .timeout = 50);

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void config(redlock_config *cfg, uint32_t retries)
{
    redlock_config_init(cfg);
    cfg->masters = tc_masters();
    cfg->password = tc_password();
    cfg->node_timeout_ms = 250;
    cfg->retry_count = retries;
    cfg->retry_delay_ms = 20;
    cfg->retry_jitter_ms = 10;
}

/* A blocking client with every master answering, or NULL (@why says). */
static redlock_client *client_up(uint32_t retries, char *why, size_t size)
{
    redlock_config cfg;
    redlock_client *c = NULL;
    redlock_error e;
    int rc;

    config(&cfg, retries);
    rc = redlock_client_new(&cfg, NULL, &c, &e);
    if (rc != 0) {
        snprintf(why, size, "redlock_client_new: %s", e.msg);
        return NULL;
    }
    for (int tries = 0; tries < 400; tries++) {
        redlock_status st;

        memset(&st, 0, sizeof(st));
        redlock_ping(c, &st, NULL);
        if (st.n_answered == (uint32_t)tc_n())
            return c;
        sleep_ms(25);
    }
    snprintf(why, size, "not every master answered a ping within 10 s");
    redlock_client_free(c);
    return NULL;
}

/* ---- talking to the holder process ------------------------------------------------ */

__attribute__((format(printf, 2, 3)))
static void tell(int fd, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > 0 && write(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
        _exit(3);
}

/* One line from the holder (without the newline), waiting at most @ms.
 * A line starting "ERR " fails the test with the holder's words. */
static void hear(int fd, char *line, size_t size, int ms)
{
    size_t used = 0;

    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int n = poll(&p, 1, ms);
        char ch;

        cr_assert(n > 0, "the holder process said nothing within %d ms", ms);
        n = (int)read(fd, &ch, 1);
        cr_assert(n == 1, "the holder process went away without a word");
        if (ch == '\n')
            break;
        if (used + 1 < size)
            line[used++] = ch;
    }
    line[used] = '\0';
    cr_assert(strncmp(line, "ERR ", 4) != 0, "holder process: %s", line + 4);
}

/* ---- the end: snapshot and checker --------------------------------------------------- */

static void snapshot(const char *path, const char *res, size_t len)
{
    hist *s = hist_open(path);

    cr_assert(s != NULL, "hist_open %s: %s", path, strerror(errno));
    for (int m = 0; m < tc_n(); m++) {
        redisReply *v = tc_cmd(m, "GET %b", res, len);
        redisReply *t = tc_cmd(m, "PTTL %b", res, len);

        if (v && t && v->type == REDIS_REPLY_STRING && t->type == REDIS_REPLY_INTEGER)
            cr_assert(eq(int, hist_key(s, m, res, len, v->str, t->integer), 0));
        freeReplyObject(v);
        freeReplyObject(t);
    }
    hist_close(s);
}

/* Masters where @res holds @token, as a bitmask. */
static unsigned holding(const char *res, size_t len, const char *token)
{
    unsigned mask = 0;

    for (int m = 0; m < tc_n(); m++) {
        redisReply *v = tc_cmd(m, "GET %b", res, len);

        if (v && v->type == REDIS_REPLY_STRING && strcmp(v->str, token) == 0)
            mask |= 1u << m;
        freeReplyObject(v);
    }
    return mask;
}

static void paths(char *hpath, char *spath, size_t size)
{
    const char *dir = getenv("REDLOCK_TEST_DIR");

    cr_assert(dir && *dir, "REDLOCK_TEST_DIR is not set (run through meson / with-cluster.sh)");
    snprintf(hpath, size, "%s/history-%d.jsonl", dir, (int)getpid());
    snprintf(spath, size, "%s/snapshot-%d.jsonl", dir, (int)getpid());
    unlink(hpath);
    unlink(spath);
}

static int check(const char *hpath, const char *spath, char *out, size_t size)
{
    static const char *const args[] = { "--masters", "5", NULL };
    int rc;

    cr_assert(eq(int, tc_n(), 5));
    rc = hist_check(hpath, spath, args, out, size);
    cr_assert(rc >= 0, "check.py did not run: %s", out);
    return rc;
}

/* ---- a holder stopped past its validity -------------------------------------------- */

/*
 * The holder: take the lock, then work in 20 ms steps, checking the lease
 * after each step, the way a careful holder does. Each step is a "use"
 * line; the step that finds the lease lapsed is marked late. Then release.
 * Reports on @fd: "acquired TOKEN", then "done VALIDITY RC OK GONE HELD".
 */
static void stopped_holder(const char *hpath, const char *res, int fd)
{
    char why[320], votes[REDLOCK_MAX_MASTERS + 1];
    hist *h = hist_open(hpath);
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    uint64_t t0;
    int rc, late = 0, ok = 0, gone = 0, held = 0;
    int64_t v;

    if (!h) {
        tell(fd, "ERR hist_open: %s\n", strerror(errno));
        _exit(1);
    }
    c = client_up(5, why, sizeof(why));
    if (!c) {
        tell(fd, "ERR %s\n", why);
        _exit(1);
    }
    t0 = hist_now_us();
    rc = redlock_acquire(c, res, strlen(res), STOP_TTL_MS, &l, &out, &e);
    hist_acquire(h, "A", res, strlen(res), STOP_TTL_MS, t0, rc, l, &out);
    if (rc != 0) {
        tell(fd, "ERR acquire: %s\n", e.msg);
        _exit(1);
    }
    tell(fd, "acquired %s\n", redlock_lock_token(l));

    /* Work until the lease says it is over (bounded: the test stops us
     * long before 30 s; if it did not, the validity check still ends it). */
    for (int step = 0; step < 1500 && !late; step++) {
        t0 = hist_now_us();
        sleep_ms(20);
        late = redlock_lock_validity_ms(l) <= 0;
        hist_use(h, "A", t0, l, late);
    }
    v = redlock_lock_validity_ms(l);
    t0 = hist_now_us();
    rc = redlock_release(c, l, &out, &e);
    hist_release(h, "A", t0, rc, l, &out);
    hist_votes(&out, votes);
    for (const char *p = votes; *p; p++) {
        ok += *p == 'O';
        gone += *p == 'G';
        held += *p == 'H';
    }
    tell(fd, "done %lld %d %d %d %d\n", (long long)v, rc, ok, gone, held);
    redlock_lock_free(l);
    redlock_client_free(c);
    hist_close(h);
    _exit(0);
}

Test(client, stopped_holder_learns_from_validity_that_it_lost_the_lock)
{
    static char out[OUT_SIZE];
    char hpath[512], spath[512], lpath[600], res[160], line[512], why[256], tok_a[64] = "";
    redlock_client *b;
    redlock_lock *lb = NULL;
    redlock_outcome ob;
    redlock_error e;
    hist *h;
    int fds[2], st, rc = -1;
    long long v_after;
    int rel_rc, rel_ok, rel_gone, rel_held;
    unsigned before, after;
    uint64_t t0;

    paths(hpath, spath, sizeof(hpath));
    tc_resource(res, sizeof(res), NULL);
    cr_assert(pipe(fds) == 0);
    holder = fork();
    cr_assert(holder >= 0, "fork: %s", strerror(errno));
    if (holder == 0) {
        close(fds[0]);
        stopped_holder(hpath, res, fds[1]);
    }
    close(fds[1]);
    h = hist_open(hpath);
    cr_assert(h != NULL);

    hear(fds[0], line, sizeof(line), 15000);
    cr_assert(sscanf(line, "acquired %63s", tok_a) == 1, "holder said \"%s\"", line);
    sleep_ms(100);                       /* mid-work, ~0.9 s of validity left */
    t0 = hist_now_us();
    cr_assert(kill(holder, SIGSTOP) == 0);
    cr_assert(waitpid(holder, &st, WUNTRACED) == holder && WIFSTOPPED(st));
    hist_fault(h, "sigstop-holder", -1, 0, t0);

    /* B asks until A's keys have expired: about A's ttl after its acquire. */
    b = client_up(0, why, sizeof(why));
    cr_assert(b != NULL, "%s", why);
    for (int tries = 0; tries < 200 && rc != 0; tries++) {
        t0 = hist_now_us();
        rc = redlock_acquire(b, res, strlen(res), NEXT_TTL_MS, &lb, &ob, &e);
        hist_acquire(h, "B", res, strlen(res), NEXT_TTL_MS, t0, rc, lb, &ob);
        if (rc != 0) {
            cr_assert(eq(int, rc, REDLOCK_ECONFLICT), "B: %s", e.msg);
            sleep_ms(20);
        }
    }
    cr_assert(eq(int, rc, 0), "B never got the lock after A stopped");
    before = holding(res, strlen(res), redlock_lock_token(lb));
    cr_assert(ge(int, __builtin_popcount(before), 3), "B's token is on masters 0x%x only", before);

    sleep_ms(100);
    t0 = hist_now_us();
    cr_assert(kill(holder, SIGCONT) == 0);
    hist_fault(h, "sigcont-holder", -1, 0, t0);
    hear(fds[0], line, sizeof(line), 15000);
    cr_assert(sscanf(line, "done %lld %d %d %d %d", &v_after, &rel_rc, &rel_ok, &rel_gone,
                     &rel_held) == 5, "holder said \"%s\"", line);
    cr_assert(waitpid(holder, &st, 0) == holder);
    holder = -1;
    close(fds[0]);
    after = holding(res, strlen(res), redlock_lock_token(lb));

    /* What A learned, and what its release did. */
    cr_expect(le(i64, v_after, 0), "A's validity after waking is %lld ms: it would believe it "
              "still holds the lock", v_after);
    cr_expect(rel_rc == REDLOCK_ENOTHELD || (rel_rc == 0 && rel_gone >= 3),
              "A's late release returned %s (ok %d, gone %d, held %d): wanted ENOTHELD, or 0 "
              "with its keys gone", redlock_err_name(rel_rc), rel_ok, rel_gone, rel_held);
    cr_expect(eq(int, rel_ok, 0), "A's late release deleted a key on %d masters", rel_ok);
    cr_expect(eq(u32, before & ~after, 0u), "B's token was on masters 0x%x before A's release, "
              "on 0x%x after", before, after);
    cr_log_info("A woke with validity %lld ms; its release: %s (ok %d, gone %d, held %d); B's "
                "token on masters 0x%x before and 0x%x after", v_after, redlock_err_name(rel_rc),
                rel_ok, rel_gone, rel_held, before, after);

    t0 = hist_now_us();
    rc = redlock_release(b, lb, &ob, &e);
    hist_release(h, "B", t0, rc, lb, &ob);
    cr_expect(eq(int, rc, 0), "B's release: %s", e.msg);
    redlock_lock_free(lb);
    redlock_client_free(b);
    hist_close(h);
    snapshot(spath, res, strlen(res));

    /* The history as recorded: clean, the step spanning the stop marked late. */
    rc = check(hpath, spath, out, sizeof(out));
    cr_assert(eq(int, rc, 0), "the checker found violations:\n%s", out);
    cr_assert(strstr(out, "1 op marked late") != NULL, "no late op was recorded:\n%s", out);
    cr_assert(strstr(out, "NOTE: late") != NULL, "the late op did not overlap B:\n%s", out);
    cr_log_info("%s", out);

    /* The same history had A not marked it: the checker must object. */
    {
        FILE *in = fopen(hpath, "r"), *o;
        char buf[8192];

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
    }
    rc = check(lpath, spath, out, sizeof(out));
    cr_assert(eq(int, rc, 1), "unmarked, A's late step must be a violation:\n%s", out);
    cr_assert(strstr(out, "VIOLATION 1 (use): A acted as holder") != NULL, "%s", out);
}

/* ---- a holder killed while holding ------------------------------------------------------- */

/* The holder: take the lock, say when, then wait to be killed. Reports
 * "acquired INVOKE COMPLETE TOKEN" (µs, monotonic). */
static void killed_holder(const char *hpath, const char *res, int fd)
{
    char why[320];
    hist *h = hist_open(hpath);
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    uint64_t t0, t1;
    int rc;

    if (!h) {
        tell(fd, "ERR hist_open: %s\n", strerror(errno));
        _exit(1);
    }
    c = client_up(5, why, sizeof(why));
    if (!c) {
        tell(fd, "ERR %s\n", why);
        _exit(1);
    }
    t0 = hist_now_us();
    rc = redlock_acquire(c, res, strlen(res), KILL_TTL_MS, &l, &out, &e);
    t1 = hist_now_us();
    hist_acquire(h, "A", res, strlen(res), KILL_TTL_MS, t0, rc, l, &out);
    if (rc != 0) {
        tell(fd, "ERR acquire: %s\n", e.msg);
        _exit(1);
    }
    tell(fd, "acquired %llu %llu %s\n", (unsigned long long)t0, (unsigned long long)t1,
         redlock_lock_token(l));
    for (;;)
        pause();
}

Test(client, killed_holder_frees_after_its_ttl_and_not_before)
{
    static char out[OUT_SIZE];
    char hpath[512], spath[512], res[160], line[512], why[256], tok_a[64];
    unsigned long long a_invoke, a_complete;
    redlock_client *b;
    redlock_lock *lb = NULL;
    redlock_outcome ob;
    redlock_error e;
    hist *h;
    int fds[2], st, rc = -1, conflicts = 0;
    uint64_t t0, got = 0, got_invoke = 0;

    paths(hpath, spath, sizeof(hpath));
    tc_resource(res, sizeof(res), NULL);
    cr_assert(pipe(fds) == 0);
    holder = fork();
    cr_assert(holder >= 0, "fork: %s", strerror(errno));
    if (holder == 0) {
        close(fds[0]);
        killed_holder(hpath, res, fds[1]);
    }
    close(fds[1]);
    h = hist_open(hpath);
    cr_assert(h != NULL);
    b = client_up(0, why, sizeof(why));
    cr_assert(b != NULL, "%s", why);

    hear(fds[0], line, sizeof(line), 15000);
    cr_assert(sscanf(line, "acquired %llu %llu %63s", &a_invoke, &a_complete, tok_a) == 3,
              "holder said \"%s\"", line);
    t0 = hist_now_us();
    cr_assert(kill(holder, SIGKILL) == 0);
    cr_assert(waitpid(holder, &st, 0) == holder);
    holder = -1;
    close(fds[0]);
    hist_fault(h, "sigkill-holder", -1, 0, t0);

    /* A's keys were written after a_invoke and live a ttl on each master's
     * clock, so up to ttl - margin after a_invoke (on ours) they are all
     * there: every acquire that is over before then must be refused. */
    const double drift = 0.01;
    uint64_t margin_us = (uint64_t)(KILL_TTL_MS * drift * 1000) + 2000;
    uint64_t safe_until = a_invoke + KILL_TTL_MS * 1000ull - margin_us;
    /* ... and at most ttl (+ drift) after a_complete they are gone: B must
     * get the lock soon after; 300 ms of slack for a loaded machine. */
    uint64_t free_by = a_complete + KILL_TTL_MS * 1000ull + margin_us + 300000;

    while (hist_now_us() < free_by + 1000000) {
        t0 = hist_now_us();
        rc = redlock_acquire(b, res, strlen(res), KILL_TTL_MS, &lb, &ob, &e);
        hist_acquire(h, "B", res, strlen(res), KILL_TTL_MS, t0, rc, lb, &ob);
        if (rc == 0) {
            got = hist_now_us();
            got_invoke = t0;
            break;
        }
        cr_assert(eq(int, rc, REDLOCK_ECONFLICT), "B: %s: %s", redlock_err_name(rc), e.msg);
        conflicts++;
        sleep_ms(20);
    }
    cr_assert(eq(int, rc, 0), "the lock did not free within 1 s after A's ttl");
    /* B's SETs reached the masters before B returned: had that been before
     * safe_until, A's keys would all have been there to refuse them. */
    cr_expect(ge(u64, got, safe_until), "B got the lock %.1f ms after A's acquire began: "
              "before ttl - margin (%.1f ms)", (got - a_invoke) / 1000.0,
              (safe_until - a_invoke) / 1000.0);
    cr_expect(le(u64, got, free_by), "B got the lock only %.1f ms after A's acquire returned "
              "(ttl %u ms)", (got - a_complete) / 1000.0, KILL_TTL_MS);
    cr_expect(gt(int, conflicts, 10), "only %d refusals before the ttl", conflicts);
    cr_log_info("A killed holding a %u ms lock; B refused %d times, then granted %.1f ms after "
                "A's acquire began", KILL_TTL_MS, conflicts, (got_invoke - a_invoke) / 1000.0);

    t0 = hist_now_us();
    rc = redlock_release(b, lb, &ob, &e);
    hist_release(h, "B", t0, rc, lb, &ob);
    cr_expect(eq(int, rc, 0), "B's release: %s", e.msg);
    redlock_lock_free(lb);
    redlock_client_free(b);
    hist_close(h);
    snapshot(spath, res, strlen(res));
    rc = check(hpath, spath, out, sizeof(out));
    cr_assert(eq(int, rc, 0), "the checker found violations:\n%s", out);
    cr_log_info("%s", out);
}
