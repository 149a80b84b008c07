/* test-history-rules.c - the checker's other rules, and how it reports.
 *
 * Besides overlaps (test-history-overlap.c), tests/history/check.py holds
 * a history to: fencing tokens increasing in grant order, no release that
 * removed someone else's lock, and no key left on a master beyond what
 * its ttl allows. Each rule is broken in a history of a few lines
 * (helpers/histcase.h) and must be found; a violation is printed with ten
 * lines of history either side, and input that is not a history exits 2
 * naming the line.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "histcase.h"

TestSuite(history, .init = tc_hc_init, .fini = tc_hc_fini, .timeout = 60);

/* ---- (b) fencing tokens ------------------------------------------------------ */

Test(history, fences_must_increase_in_grant_order)
{
    char p[512], q[512];
    tc_hist *h = tc_hc_new(p, sizeof(p));
    tc_hist_rec r = { .client = "a",
                      .op = TC_HIST_ACQUIRE,
                      .res = "r",
                      .res_len = 1,
                      .ttl_ms = 1000,
                      .has_vend = 1,
                      .master = -1 };
    static const char *const toks[] = { "t1", "t2", "t3" };
    const uint64_t fences[] = { 5, 7, 7 };

    for (int i = 0; i < 3; i++) {
        r.token = toks[i];
        r.invoke_us = TC_HC_MS(100 * i);
        r.complete_us = TC_HC_MS(100 * i + 1);
        r.vend_us = TC_HC_MS(100 * i + 50);
        r.fence = fences[i];
        tc_hc_put(h, &r);
    }
    tc_hist_close(h);
    tc_hc_expect_violation(p, NULL, NULL, "fence");

    /* grants whose calls overlap in time are not ordered (docs/waiting.md,
     * "Fencing tokens", claims order only for a grant invoked after the other
     * completed) */
    char o[512];
    h = tc_hc_new(o, sizeof(o));
    r.token = "t1", r.invoke_us = TC_HC_MS(0), r.complete_us = TC_HC_MS(50),
    r.vend_us = TC_HC_MS(60), r.fence = 9;
    tc_hc_put(h, &r);
    r.token = "t2", r.invoke_us = TC_HC_MS(10), r.complete_us = TC_HC_MS(70),
    r.vend_us = TC_HC_MS(90), r.fence = 8;
    tc_hc_put(h, &r);
    tc_hist_close(h);
    tc_hc_expect_clean(o, NULL, NULL);

    h = tc_hc_new(q, sizeof(q));
    for (int i = 0; i < 3; i++) {
        r.token = toks[i];
        r.invoke_us = TC_HC_MS(100 * i);
        r.complete_us = TC_HC_MS(100 * i + 1);
        r.vend_us = TC_HC_MS(100 * i + 50);
        r.fence = 0;
        tc_hc_put(h, &r);
    }
    tc_hist_close(h);
    tc_hc_expect_clean(q, NULL, NULL);
    cr_expect(strstr(tc_hc_out, "fences all 0: not checked") != NULL, "%s", tc_hc_out);
}

/* ---- (c) releases of someone else's lock --------------------------------------- */

Test(history, a_late_release_returning_0_while_another_holds_is_flagged)
{
    char p[512], q[512];
    tc_hist *h = tc_hc_new(p, sizeof(p));

    tc_hc_grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    tc_hc_grant(h, "b", "bbbb", 140, 150, 400, 0x1f);
    tc_hc_release(h, "a", "aaaa", 200, 205, 0); /* a's window ended at 100 */
    tc_hist_close(h);
    tc_hc_expect_violation(p, NULL, NULL, "release");
    cr_expect(strstr(tc_hc_out, "review") != NULL, "%s", tc_hc_out);

    /* what the library must answer instead: not held */
    h = tc_hc_new(q, sizeof(q));
    tc_hc_grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    tc_hc_grant(h, "b", "bbbb", 140, 150, 400, 0x1f);
    tc_hc_release(h, "a", "aaaa", 200, 205, REDLOCK_ENOTHELD);
    tc_hist_close(h);
    tc_hc_expect_clean(q, NULL, NULL);
}

/* ---- (d) keys left on masters ------------------------------------------------------ */

/* Check @path against a snapshot of one key: @master holds @tok at @at with
 * PTTL @pttl. @says NULL: clean; else one "key" violation saying @says. */
static void one_key(const char *path, int master, const char *tok, unsigned at, int64_t pttl,
                    const char *says)
{
    char sp[512];
    tc_hist *s = tc_hc_new(sp, sizeof(sp));

    tc_hc_key(s, master, tok, at, pttl);
    tc_hist_close(s);
    if (!says) {
        tc_hc_expect_clean(path, sp, NULL);
        return;
    }
    tc_hc_expect_violation(path, sp, NULL, "key");
    cr_expect(strstr(tc_hc_out, says) != NULL, "wanted \"%s\":\n%s", says, tc_hc_out);
}

Test(history, keys_left_behind_are_found)
{
    char p[512], s1[512];
    tc_hist *h = tc_hc_new(p, sizeof(p)), *s;

    tc_hc_grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    tc_hc_release(h, "a", "aaaa", 50, 60, 0);
    tc_hc_refused(h, "b", 100, 110); /* a failed acquire, ttl 1000 */
    tc_hist_close(h);

    /* a key of a failed acquire, expiring within its ttl: fine; a lock's
     * own key on a master its release missed: fine */
    s = tc_hc_new(s1, sizeof(s1));
    tc_hc_key(s, 0, "ffff", 200, 900); /* expires at 1100 <= 110 + 1000 + 50 */
    tc_hc_key(s, 1, "aaaa", 200, 500);
    tc_hist_close(s);
    tc_hc_expect_clean(p, s1, NULL);
    cr_expect(strstr(tc_hc_out, "2 keys in the snapshot") != NULL, "%s", tc_hc_out);

    /* no ttl: never frees */
    one_key(p, 2, "aaaa", 200, -1, "no ttl");
    /* a failed acquire's key living past its ttl */
    one_key(p, 3, "ffff", 1000, 900, "left by a failed acquire"); /* expires at 1900 > 1160 */
    /* a ttl above any ttl used */
    one_key(p, 4, "aaaa", 200, 5000, "above the longest ttl used");

    /* a token nobody was granted, and no failed acquire to blame */
    char q[512];
    h = tc_hc_new(q, sizeof(q));
    tc_hc_grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    tc_hist_close(h);
    one_key(q, 0, "zzzz", 50, 500, "no attempt to acquire this resource failed");
}

/* Tokens are fresh per attempt, and a failed attempt's release can be lost
 * with its connection (CLIENT KILL): the master keeps that key for its ttl.
 * A granted acquire that took more than one attempt may so leave a key no
 * operation returned, lapsing by its completion plus its ttl; one that took
 * a single attempt cannot. */
Test(history, a_granted_acquire_may_leave_a_key_of_a_failed_attempt)
{
    char p[512], q[512];
    tc_hist_rec r = { .client = "a",
                      .op = TC_HIST_ACQUIRE,
                      .res = "r",
                      .res_len = 1,
                      .invoke_us = TC_HC_MS(0),
                      .complete_us = TC_HC_MS(40),
                      .token = "aaaa",
                      .vend_us = TC_HC_MS(900),
                      .has_vend = 1,
                      .ttl_ms = 1000,
                      .oks = 0x1f,
                      .n_ok = 5,
                      .attempts = 2,
                      .master = -1 };
    tc_hist *h = tc_hc_new(p, sizeof(p));

    tc_hc_put(h, &r);
    tc_hc_release(h, "a", "aaaa", 50, 60, 0);
    tc_hist_close(h);
    one_key(p, 1, "ffff", 200, 800, NULL); /* expires at 1000 <= 40 + 1000 + 50 */
    /* past what its failed attempt could have set */
    one_key(p, 1, "ffff", 200, 900, "left by a failed acquire attempt"); /* 1100 > 1090 */

    /* the same grant at its first attempt left no other key */
    h = tc_hc_new(q, sizeof(q));
    r.attempts = 1;
    tc_hc_put(h, &r);
    tc_hist_close(h);
    one_key(q, 1, "ffff", 200, 800, "no attempt to acquire this resource failed");
}

/* A hand-off reservation ("\1" + hand|channel|id) names a waiter, not a
 * holder: one left for a waiter that is gone lapses within its hand
 * window, and only one outliving that window is flagged. */
Test(history, reservations_lapse_within_their_hand_window)
{
    char p[512], s1[512], s2[512];
    tc_hist *h = tc_hc_new(p, sizeof(p)), *s;

    tc_hc_grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    tc_hist_close(h);

    s = tc_hc_new(s1, sizeof(s1));
    tc_hc_key(s, 1, "\001560|redlock:wake:0123|2", 200, 434);
    tc_hist_close(s);
    tc_hc_expect_clean(p, s1, NULL);

    s = tc_hc_new(s2, sizeof(s2));
    tc_hc_key(s, 1, "\001560|redlock:wake:0123|2", 200, 900);
    tc_hist_close(s);
    tc_hc_expect_violation(p, s2, NULL, "key");
    cr_expect(strstr(tc_hc_out, "outliving its hand window (560 ms)") != NULL, "%s", tc_hc_out);
}

/* ---- what a violation prints ------------------------------------------------------------ */

Test(history, a_violation_prints_ten_lines_either_side)
{
    char p[512];
    tc_hist *h = tc_hc_new(p, sizeof(p));
    char line[64];

    /* 40 lines: refusals around an overlap on lines 20 and 21 */
    for (int i = 1; i <= 19; i++)
        tc_hc_refused(h, "x", (unsigned)i, (unsigned)i + 1);
    tc_hc_grant(h, "a", "aaaa", 100, 102, 300, 0x1f);
    tc_hc_grant(h, "b", "bbbb", 150, 160, 600, 0x1f);
    for (int i = 22; i <= 40; i++)
        tc_hc_refused(h, "x", 700 + (unsigned)i, 701 + (unsigned)i);
    tc_hist_close(h);
    tc_hc_expect_violation(p, NULL, NULL, "overlap");
    cr_expect(strstr(tc_hc_out, "lines 10..31:") != NULL, "%s", tc_hc_out);
    snprintf(line, sizeof(line), ">>%6d  ", 20);
    cr_expect(strstr(tc_hc_out, line) != NULL, "line 20 not marked:\n%s", tc_hc_out);
    snprintf(line, sizeof(line), ">>%6d  ", 21);
    cr_expect(strstr(tc_hc_out, line) != NULL, "line 21 not marked:\n%s", tc_hc_out);
    snprintf(line, sizeof(line), "  %6d  ", 9);
    cr_expect(strstr(tc_hc_out, line) == NULL, "line 9 is outside the window:\n%s", tc_hc_out);
    snprintf(line, sizeof(line), "  %6d  ", 32);
    cr_expect(strstr(tc_hc_out, line) == NULL, "line 32 is outside the window:\n%s", tc_hc_out);
    cr_expect(strstr(tc_hc_out, "checked 40 ops, 2 holders, 1 violation;") != NULL, "%s",
              tc_hc_out);
}

Test(history, unreadable_input_exits_2_naming_the_line)
{
    char p[512];
    FILE *f;

    snprintf(p, sizeof(p), "%s/bad.jsonl", tc_hc_dir);
    f = fopen(p, "w");
    cr_assert(f != NULL);
    fprintf(f, "{\"op\":\"acquire\",\"client\":\"a\",\"res\":\"r\",\"invoke\":1,\"complete\":2,"
               "\"rc\":-3}\n{\"op\":\"acq");
    fclose(f);
    cr_expect(eq(int, tc_hc_check(p, NULL, NULL), 2), "%s", tc_hc_out);
    cr_expect(strstr(tc_hc_out, "bad.jsonl:2: not JSON") != NULL, "%s", tc_hc_out);
}
