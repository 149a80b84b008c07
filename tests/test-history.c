/* test-history.c - the history checker (tests/history/check.py) can fail.
 *
 * A checker that never reports anything proves nothing, so every kind of
 * violation it looks for is planted here in a small synthetic history and
 * must be found, with the history around it printed; the same history
 * without the fault must pass. The histories are written with the
 * recorder itself (helpers/history.c), which is also shown to keep lines
 * whole when threads and processes append to one file at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "history.h"

/* ---- scaffolding ---------------------------------------------------------- */

static char dir[256];
static int seq;

static void make_dir(void)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(dir, sizeof(dir), "%s/redlock-history.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
}

static void remove_dir(void)
{
    char cmd[300];

    if (!dir[0])
        return;
    snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir);
    if (system(cmd) != 0)
        cr_log_warn("could not remove %s", dir);
}

TestSuite(history, .init = make_dir, .fini = remove_dir, .timeout = 60);

/* A new history file in the test's dir. */
static hist *new_hist(char *path, size_t size)
{
    hist *h;

    snprintf(path, size, "%s/h%d.jsonl", dir, seq++);
    h = hist_open(path);
    cr_assert(h != NULL, "hist_open %s: %s", path, strerror(errno));
    return h;
}

/* Times in the synthetic histories are ms since 1 s (any origin works). */
#define MS(x) (1000000u + (uint64_t)(x) * 1000u)

static void put_rec(hist *h, const hist_rec *r)
{
    int rc = hist_write(h, r);

    cr_assert(eq(int, rc, 0), "hist_write: %s", strerror(-rc));
}

static void grant(hist *h, const char *client, const char *tok, unsigned inv, unsigned comp,
                  unsigned vend, uint32_t oks)
{
    hist_rec r = { .client = client, .op = HIST_ACQUIRE, .res = "r", .res_len = 1,
                   .invoke_us = MS(inv), .complete_us = MS(comp), .token = tok,
                   .vend_us = MS(vend), .has_vend = 1, .ttl_ms = 1000, .oks = oks,
                   .n_ok = (uint32_t)__builtin_popcount(oks), .master = -1 };
    put_rec(h, &r);
}

static void refused(hist *h, const char *client, unsigned inv, unsigned comp)
{
    hist_rec r = { .client = client, .op = HIST_ACQUIRE, .res = "r", .res_len = 1,
                   .invoke_us = MS(inv), .complete_us = MS(comp), .rc = REDLOCK_ECONFLICT,
                   .ttl_ms = 1000, .master = -1 };
    put_rec(h, &r);
}

static void release(hist *h, const char *client, const char *tok, unsigned inv, unsigned comp,
                    int rc)
{
    hist_rec r = { .client = client, .op = HIST_RELEASE, .res = "r", .res_len = 1,
                   .invoke_us = MS(inv), .complete_us = MS(comp), .token = tok, .rc = rc,
                   .master = -1 };
    put_rec(h, &r);
}

static void extend(hist *h, const char *client, const char *tok, unsigned inv, unsigned comp,
                   int rc, unsigned vend)
{
    hist_rec r = { .client = client, .op = HIST_EXTEND, .res = "r", .res_len = 1,
                   .invoke_us = MS(inv), .complete_us = MS(comp), .token = tok, .rc = rc,
                   .vend_us = MS(vend), .has_vend = 1, .ttl_ms = 1000, .master = -1 };
    put_rec(h, &r);
}

static void use(hist *h, const char *client, const char *tok, unsigned inv, unsigned comp,
                int late)
{
    hist_rec r = { .client = client, .op = HIST_USE, .res = "r", .res_len = 1,
                   .invoke_us = MS(inv), .complete_us = MS(comp), .token = tok, .late = late,
                   .master = -1 };
    put_rec(h, &r);
}

static void fault(hist *h, const char *what, int master, int lost, unsigned inv, unsigned comp)
{
    hist_rec r = { .client = "test", .op = HIST_FAULT, .invoke_us = MS(inv),
                   .complete_us = MS(comp), .master = master, .lost = lost, .what = what };
    put_rec(h, &r);
}

static void key(hist *h, int master, const char *tok, unsigned at, int64_t pttl)
{
    hist_rec r = { .client = "snapshot", .op = HIST_KEY, .res = "r", .res_len = 1,
                   .invoke_us = MS(at), .complete_us = MS(at), .token = tok, .master = master,
                   .pttl_ms = pttl };
    put_rec(h, &r);
}

static char out[65536];

/* Run the checker; returns its exit status, output in `out`. */
static int check(const char *path, const char *snapshot, const char *const *args)
{
    int rc = hist_check(path, snapshot, args, out, sizeof(out));

    cr_assert(rc >= 0, "the checker did not run: %s", out);
    return rc;
}

static void expect_clean(const char *path, const char *snapshot, const char *const *args)
{
    int rc = check(path, snapshot, args);

    cr_expect(eq(int, rc, 0), "checker exit %d on a clean history:\n%s", rc, out);
    cr_expect(strstr(out, " 0 violations") != NULL, "no summary line:\n%s", out);
}

static void expect_violation(const char *path, const char *snapshot, const char *const *args,
                             const char *kind)
{
    char want[64];
    int rc = check(path, snapshot, args);

    snprintf(want, sizeof(want), "VIOLATION 1 (%s)", kind);
    cr_expect(eq(int, rc, 1), "checker exit %d, wanted 1:\n%s", rc, out);
    cr_expect(strstr(out, want) != NULL, "no \"%s\" in:\n%s", want, out);
    cr_expect(strstr(out, ">>") != NULL, "the lines involved are not marked:\n%s", out);
}

/* ---- a clean history passes ---------------------------------------------- */

Test(history, a_clean_history_passes)
{
    char p[512];
    hist *h = new_hist(p, sizeof(p));

    /* a, then b, then c; refusals in between; an extend; one release late
     * but refused (ENOTHELD), as the library answers a lapsed holder. */
    grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    refused(h, "b", 10, 12);
    extend(h, "a", "aaaa", 50, 52, 0, 150);
    release(h, "a", "aaaa", 120, 121, 0);
    grant(h, "b", "bbbb", 119, 122, 400, 0x1f);
    refused(h, "c", 130, 140);
    release(h, "b", "bbbb", 300, 302, 0);
    grant(h, "c", "cccc", 301, 305, 600, 0x07);
    release(h, "a", "aaaa", 400, 402, REDLOCK_ENOTHELD);
    hist_close(h);
    expect_clean(p, NULL, NULL);
    cr_expect(strstr(out, "checked 9 ops, 3 holders, 0 violations") != NULL, "%s", out);
}

Test(history, an_empty_history_passes)
{
    char p[512];

    hist_close(new_hist(p, sizeof(p)));
    expect_clean(p, NULL, NULL);
    cr_expect(strstr(out, "checked 0 ops, 0 holders, 0 violations") != NULL, "%s", out);
}

/* ---- (a) overlapping holders ----------------------------------------------- */

Test(history, two_holders_at_once_are_found)
{
    char p[512];
    hist *h = new_hist(p, sizeof(p));

    grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    grant(h, "b", "bbbb", 90, 95, 300, 0x1f);   /* a still valid until 100 */
    hist_close(h);
    expect_violation(p, NULL, NULL, "overlap");
    cr_expect(strstr(out, "overlap for 5.000 ms") != NULL, "%s", out);
}

Test(history, a_release_before_the_next_grant_is_no_overlap)
{
    char p[512];
    hist *h = new_hist(p, sizeof(p));

    grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    release(h, "a", "aaaa", 50, 60, 0);          /* released at 50 ... */
    grant(h, "b", "bbbb", 40, 55, 300, 0x1f);    /* ... b granted at 55 */
    hist_close(h);
    expect_clean(p, NULL, NULL);
}

Test(history, a_release_after_the_next_grant_is_an_overlap)
{
    char p[512];
    hist *h = new_hist(p, sizeof(p));

    grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    grant(h, "b", "bbbb", 40, 55, 300, 0x1f);
    release(h, "a", "aaaa", 56, 60, 0);          /* a let go only after b got it */
    hist_close(h);
    expect_violation(p, NULL, NULL, "overlap");
}

Test(history, an_extend_moves_the_window_end)
{
    char p[512], q[512], s[512];
    hist *h = new_hist(p, sizeof(p));

    /* a's acquire alone ends at 100; its extend at 90 runs it to 300, so b
     * at 200 overlaps */
    grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    extend(h, "a", "aaaa", 89, 90, 0, 300);
    grant(h, "b", "bbbb", 199, 200, 400, 0x1f);
    hist_close(h);
    expect_violation(p, NULL, NULL, "overlap");

    /* the same without the extend: clean */
    h = new_hist(q, sizeof(q));
    grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    grant(h, "b", "bbbb", 199, 200, 400, 0x1f);
    hist_close(h);
    expect_clean(q, NULL, NULL);

    /* a failed extend caps the window (the library caps the validity) */
    h = new_hist(s, sizeof(s));
    grant(h, "a", "aaaa", 0, 2, 300, 0x1f);
    extend(h, "a", "aaaa", 50, 60, REDLOCK_ENOQUORUM, 150);
    grant(h, "b", "bbbb", 199, 200, 400, 0x1f);
    hist_close(h);
    expect_clean(s, NULL, NULL);
}

Test(history, a_token_granted_twice_is_found)
{
    char p[512];
    hist *h = new_hist(p, sizeof(p));

    grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    release(h, "a", "aaaa", 50, 60, 0);
    grant(h, "b", "aaaa", 200, 201, 300, 0x1f);
    hist_close(h);
    expect_violation(p, NULL, NULL, "token");
}

/* Resource names are bytes: names differing in one high byte are two
 * resources; the same odd bytes twice are one. */
Test(history, resource_names_are_compared_byte_for_byte)
{
    static const char n1[] = "q\"\\\n\x01\xff";
    static const char n2[] = "q\"\\\n\x01\xfe";
    char p[512], q[512];
    hist *h = new_hist(p, sizeof(p));
    hist_rec a = { .client = "a", .op = HIST_ACQUIRE, .res = n1, .res_len = sizeof(n1),
                   .invoke_us = MS(0), .complete_us = MS(1), .token = "aaaa",
                   .vend_us = MS(100), .has_vend = 1, .ttl_ms = 1000, .master = -1 };
    hist_rec b = a;

    b.client = "b";
    b.token = "bbbb";
    b.invoke_us = MS(10);
    b.complete_us = MS(11);
    put_rec(h, &a);
    put_rec(h, &b);
    hist_close(h);
    expect_violation(p, NULL, NULL, "overlap");

    h = new_hist(q, sizeof(q));
    b.res = n2;
    put_rec(h, &a);
    put_rec(h, &b);
    hist_close(h);
    expect_clean(q, NULL, NULL);
}

/* ---- (b) fencing tokens ------------------------------------------------------ */

Test(history, fences_must_increase_in_grant_order)
{
    char p[512], q[512];
    hist *h = new_hist(p, sizeof(p));
    hist_rec r = { .client = "a", .op = HIST_ACQUIRE, .res = "r", .res_len = 1,
                   .ttl_ms = 1000, .has_vend = 1, .master = -1 };
    static const char *const toks[] = { "t1", "t2", "t3" };
    const uint64_t fences[] = { 5, 7, 7 };

    for (int i = 0; i < 3; i++) {
        r.token = toks[i];
        r.invoke_us = MS(100 * i);
        r.complete_us = MS(100 * i + 1);
        r.vend_us = MS(100 * i + 50);
        r.fence = fences[i];
        put_rec(h, &r);
    }
    hist_close(h);
    expect_violation(p, NULL, NULL, "fence");

    /* grants whose calls overlap in time are not ordered (NOTES.md claims
     * order only for a grant invoked after the other completed) */
    char o[512];
    h = new_hist(o, sizeof(o));
    r.token = "t1", r.invoke_us = MS(0), r.complete_us = MS(50), r.vend_us = MS(60), r.fence = 9;
    put_rec(h, &r);
    r.token = "t2", r.invoke_us = MS(10), r.complete_us = MS(70), r.vend_us = MS(90), r.fence = 8;
    put_rec(h, &r);
    hist_close(h);
    expect_clean(o, NULL, NULL);

    h = new_hist(q, sizeof(q));
    for (int i = 0; i < 3; i++) {
        r.token = toks[i];
        r.invoke_us = MS(100 * i);
        r.complete_us = MS(100 * i + 1);
        r.vend_us = MS(100 * i + 50);
        r.fence = 0;
        put_rec(h, &r);
    }
    hist_close(h);
    expect_clean(q, NULL, NULL);
    cr_expect(strstr(out, "fences all 0: not checked") != NULL, "%s", out);
}

/* ---- (c) releases of someone else's lock --------------------------------------- */

Test(history, a_late_release_returning_0_while_another_holds_is_flagged)
{
    char p[512], q[512];
    hist *h = new_hist(p, sizeof(p));

    grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    grant(h, "b", "bbbb", 140, 150, 400, 0x1f);
    release(h, "a", "aaaa", 200, 205, 0);        /* a's window ended at 100 */
    hist_close(h);
    expect_violation(p, NULL, NULL, "release");
    cr_expect(strstr(out, "review") != NULL, "%s", out);

    /* what the library must answer instead: not held */
    h = new_hist(q, sizeof(q));
    grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    grant(h, "b", "bbbb", 140, 150, 400, 0x1f);
    release(h, "a", "aaaa", 200, 205, REDLOCK_ENOTHELD);
    hist_close(h);
    expect_clean(q, NULL, NULL);
}

/* ---- late operations of a holder that lost the lock -------------------------------- */

Test(history, a_late_use_is_flagged_unless_its_client_marked_it)
{
    char p[512], q[512];
    hist *h = new_hist(p, sizeof(p));

    grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    grant(h, "b", "bbbb", 140, 150, 400, 0x1f);
    use(h, "a", "aaaa", 50, 200, 0);             /* a paused mid-use, acting after 100 */
    hist_close(h);
    expect_violation(p, NULL, NULL, "use");

    h = new_hist(q, sizeof(q));
    grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    grant(h, "b", "bbbb", 140, 150, 400, 0x1f);
    use(h, "a", "aaaa", 10, 20, 0);              /* inside a's own window */
    use(h, "a", "aaaa", 50, 200, 1);             /* a checked its validity: knows */
    hist_close(h);
    expect_clean(q, NULL, NULL);
    cr_expect(strstr(out, "1 op marked late by their clients") != NULL, "%s", out);
    cr_expect(strstr(out, "NOTE: late") != NULL, "%s", out);
}

/* ---- (d) keys left on masters ------------------------------------------------------ */

Test(history, keys_left_behind_are_found)
{
    char p[512], s1[512], s2[512], s3[512], s4[512], s5[512];
    hist *h = new_hist(p, sizeof(p)), *s;

    grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    release(h, "a", "aaaa", 50, 60, 0);
    refused(h, "b", 100, 110);                   /* a failed acquire, ttl 1000 */
    hist_close(h);

    /* a key of a failed acquire, expiring within its ttl: fine; a lock's
     * own key on a master its release missed: fine */
    s = new_hist(s1, sizeof(s1));
    key(s, 0, "ffff", 200, 900);                 /* expires at 1100 <= 110 + 1000 + 50 */
    key(s, 1, "aaaa", 200, 500);
    hist_close(s);
    expect_clean(p, s1, NULL);
    cr_expect(strstr(out, "2 keys in the snapshot") != NULL, "%s", out);

    /* no ttl: never frees */
    s = new_hist(s2, sizeof(s2));
    key(s, 2, "aaaa", 200, -1);
    hist_close(s);
    expect_violation(p, s2, NULL, "key");
    cr_expect(strstr(out, "no ttl") != NULL, "%s", out);

    /* a failed acquire's key living past its ttl */
    s = new_hist(s3, sizeof(s3));
    key(s, 3, "ffff", 1000, 900);                /* expires at 1900 > 1160 */
    hist_close(s);
    expect_violation(p, s3, NULL, "key");
    cr_expect(strstr(out, "left by a failed acquire") != NULL, "%s", out);

    /* a ttl above any ttl used */
    s = new_hist(s4, sizeof(s4));
    key(s, 4, "aaaa", 200, 5000);
    hist_close(s);
    expect_violation(p, s4, NULL, "key");

    /* a token nobody was granted, and no failed acquire to blame */
    char q[512];
    h = new_hist(q, sizeof(q));
    grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    hist_close(h);
    s = new_hist(s5, sizeof(s5));
    key(s, 0, "zzzz", 50, 500);
    hist_close(s);
    expect_violation(q, s5, NULL, "key");
}

/* ---- overlaps a recorded loss of keys explains ------------------------------------------ */

Test(history, lost_keys_explain_an_overlap_only_when_the_majority_is_gone)
{
    static const char *const explain[] = { "--explain-lost-keys", NULL };
    char p[512], q[512];
    hist *h = new_hist(p, sizeof(p));

    /* a counted masters 0,1,2; master 2 is flushed; b gets 2,3,4 */
    grant(h, "a", "aaaa", 0, 2, 500, 0x07);
    fault(h, "flushall", 2, 1, 100, 101);
    grant(h, "b", "bbbb", 150, 160, 600, 0x1c);
    hist_close(h);
    expect_violation(p, NULL, NULL, "overlap");
    expect_clean(p, NULL, explain);
    cr_expect(strstr(out, "EXPLAINED (overlap)") != NULL, "%s", out);
    cr_expect(strstr(out, "1 overlap explained by lost keys") != NULL, "%s", out);

    /* a counted 0,1,2,3: losing 2 leaves it a majority, so the loss does
     * not explain a second holder: still a violation */
    h = new_hist(q, sizeof(q));
    grant(h, "a", "aaaa", 0, 2, 500, 0x0f);
    fault(h, "flushall", 2, 1, 100, 101);
    grant(h, "b", "bbbb", 150, 160, 600, 0x1c);
    hist_close(h);
    expect_violation(q, NULL, explain, "overlap");
}

/* ---- what a violation prints ------------------------------------------------------------ */

Test(history, a_violation_prints_ten_lines_either_side)
{
    char p[512];
    hist *h = new_hist(p, sizeof(p));
    char line[64];

    /* 40 lines: refusals around an overlap on lines 20 and 21 */
    for (int i = 1; i <= 19; i++)
        refused(h, "x", (unsigned)i, (unsigned)i + 1);
    grant(h, "a", "aaaa", 100, 102, 300, 0x1f);
    grant(h, "b", "bbbb", 150, 160, 600, 0x1f);
    for (int i = 22; i <= 40; i++)
        refused(h, "x", 700 + (unsigned)i, 701 + (unsigned)i);
    hist_close(h);
    expect_violation(p, NULL, NULL, "overlap");
    cr_expect(strstr(out, "lines 10..31:") != NULL, "%s", out);
    snprintf(line, sizeof(line), ">>%6d  ", 20);
    cr_expect(strstr(out, line) != NULL, "line 20 not marked:\n%s", out);
    snprintf(line, sizeof(line), ">>%6d  ", 21);
    cr_expect(strstr(out, line) != NULL, "line 21 not marked:\n%s", out);
    snprintf(line, sizeof(line), "  %6d  ", 9);
    cr_expect(strstr(out, line) == NULL, "line 9 is outside the window:\n%s", out);
    snprintf(line, sizeof(line), "  %6d  ", 32);
    cr_expect(strstr(out, line) == NULL, "line 32 is outside the window:\n%s", out);
    cr_expect(strstr(out, "checked 40 ops, 2 holders, 1 violation;") != NULL, "%s", out);
}

Test(history, unreadable_input_exits_2_naming_the_line)
{
    char p[512];
    FILE *f;

    snprintf(p, sizeof(p), "%s/bad.jsonl", dir);
    f = fopen(p, "w");
    cr_assert(f != NULL);
    fprintf(f, "{\"op\":\"acquire\",\"client\":\"a\",\"res\":\"r\",\"invoke\":1,\"complete\":2,"
               "\"rc\":-3}\n{\"op\":\"acq");
    fclose(f);
    cr_expect(eq(int, check(p, NULL, NULL), 2), "%s", out);
    cr_expect(strstr(out, "bad.jsonl:2: not JSON") != NULL, "%s", out);
}

/* ---- the recorder ------------------------------------------------------------------------- */

/* Records made from real lock objects carry the lock's token, resource and
 * validity window, and the checker accepts them. */
Test(history, records_from_redlock_objects_are_accepted)
{
    char p[512];
    hist *h = new_hist(p, sizeof(p));
    redlock_lock *l = NULL;
    redlock_outcome o;
    FILE *f;
    char line[4096];

    cr_assert(eq(int, redlock_lock_new("res", 3, "0123456789abcdef0123456789abcdef", &l, NULL), 0));
    memset(&o, 0, sizeof(o));
    o.n_masters = 5;
    o.n_ok = 3;
    o.votes[0].kind = o.votes[2].kind = o.votes[4].kind = REDLOCK_VOTE_OK;
    cr_expect(eq(u32, hist_oks(&o), 0x15u));
    uint64_t t = hist_now_us();
    cr_assert(eq(int, hist_acquire(h, "a", "res", 3, 1000, t, 0, l, &o), 0));
    cr_assert(eq(int, hist_extend(h, "a", 1000, t, REDLOCK_ENOTHELD, l, &o), 0));
    cr_assert(eq(int, hist_use(h, "a", t, l, 1), 0));
    cr_assert(eq(int, hist_release(h, "a", t, 0, l, &o), 0));
    cr_assert(eq(int, hist_acquire(h, "b", "res", 3, 1000, t, REDLOCK_ECONFLICT, NULL, NULL), 0));
    cr_assert(eq(int, hist_fault(h, "sigstop", 3, 0, t), 0));
    cr_assert(eq(int, hist_key(h, 1, "res", 3, "0123456789abcdef0123456789abcdef", 500), 0));
    hist_close(h);
    redlock_lock_free(l);

    f = fopen(p, "r");
    cr_assert(f != NULL);
    cr_assert(fgets(line, sizeof(line), f) != NULL);
    fclose(f);
    cr_expect(strstr(line, "\"op\":\"acquire\",\"client\":\"a\",\"res\":\"res\"") != NULL, "%s", line);
    cr_expect(strstr(line, "\"token\":\"0123456789abcdef0123456789abcdef\"") != NULL, "%s", line);
    cr_expect(strstr(line, "\"oks\":21,\"n_ok\":3") != NULL, "%s", line);
    cr_expect(strstr(line, "\"fence\":0") != NULL, "%s", line);
    cr_expect(strstr(line, "\"vend\":") != NULL, "%s", line);
    expect_clean(p, NULL, NULL);
    cr_expect(strstr(out, "checked 5 ops, 1 holder, 0 violations") != NULL, "%s", out);
}

#define WRITERS 4
#define LINES 300

typedef struct writer {
    hist *h;
    int id;
    int failed;
} writer;

/* Long lines (a 1000-byte resource of odd bytes) make torn writes likely if
 * the recorder ever split one. */
static void *write_lines(void *arg)
{
    writer *w = arg;
    char res[1000], client[32];

    for (size_t i = 0; i < sizeof(res); i++)
        res[i] = (char)(i * 7 + (size_t)w->id);
    snprintf(client, sizeof(client), "p%d-w%d", (int)getpid(), w->id);
    for (int i = 0; i < LINES; i++) {
        hist_rec r = { .client = client, .op = HIST_ACQUIRE, .res = res, .res_len = sizeof(res),
                       .invoke_us = hist_now_us(), .rc = REDLOCK_ECONFLICT, .ttl_ms = 1000,
                       .master = -1 };
        if (hist_write(w->h, &r) != 0)
            w->failed++;
    }
    return NULL;
}

static int write_from_threads(hist *h)
{
    pthread_t th[WRITERS];
    writer w[WRITERS];
    int failed = 0;

    for (int i = 0; i < WRITERS; i++) {
        w[i] = (writer){ .h = h, .id = i };
        pthread_create(&th[i], NULL, write_lines, &w[i]);
    }
    for (int i = 0; i < WRITERS; i++) {
        pthread_join(th[i], NULL);
        failed += w[i].failed;
    }
    return failed;
}

Test(history, lines_stay_whole_across_threads_and_processes)
{
    char p[512], want[128];
    hist *h = new_hist(p, sizeof(p));
    pid_t kids[2];

    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        cr_assert(kids[k] >= 0, "fork: %s", strerror(errno));
        if (kids[k] == 0) {
            /* the child shares the parent's O_APPEND descriptor */
            _exit(write_from_threads(h) ? 1 : 0);
        }
    }
    cr_expect(eq(int, write_from_threads(h), 0));
    for (int k = 0; k < 2; k++) {
        int st;

        cr_assert(waitpid(kids[k], &st, 0) == kids[k]);
        int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;

        cr_expect(ok, "writer process %d failed", k);
    }
    hist_close(h);
    expect_clean(p, NULL, NULL);
    snprintf(want, sizeof(want), "checked %d ops, 0 holders, 0 violations", 3 * WRITERS * LINES);
    cr_expect(strstr(out, want) != NULL, "wanted \"%s\":\n%.2000s", want, out);
}
