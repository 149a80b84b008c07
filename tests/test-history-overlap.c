/* test-history-overlap.c - the checker finds two holders at once, and
 * only what explains or excuses them.
 *
 * tests/history/check.py's first rule: no two clients hold one lock at
 * once. Each case plants an overlap (or a near miss) in a history of a
 * few lines (helpers/histcase.h) and expects it found (or not): windows
 * end at release or validity, an extend moves the end, one token is one
 * grant, resource names are bytes, a holder's late use counts unless it
 * marked it, and a recorded loss of keys explains an overlap only when it
 * took the holder's majority.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "histcase.h"

TestSuite(history, .init = tc_hc_init, .fini = tc_hc_fini, .timeout = 60);

/* ---- a clean history passes ---------------------------------------------- */

Test(history, a_clean_history_passes)
{
    char p[512];
    tc_hist *h = tc_hc_new(p, sizeof(p));

    /* a, then b, then c; refusals in between; an extend; one release late
     * but refused (ENOTHELD), as the library answers a lapsed holder. */
    tc_hc_grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    tc_hc_refused(h, "b", 10, 12);
    tc_hc_extend(h, "a", "aaaa", 50, 52, 0, 150);
    tc_hc_release(h, "a", "aaaa", 120, 121, 0);
    tc_hc_grant(h, "b", "bbbb", 119, 122, 400, 0x1f);
    tc_hc_refused(h, "c", 130, 140);
    tc_hc_release(h, "b", "bbbb", 300, 302, 0);
    tc_hc_grant(h, "c", "cccc", 301, 305, 600, 0x07);
    tc_hc_release(h, "a", "aaaa", 400, 402, REDLOCK_ENOTHELD);
    tc_hist_close(h);
    tc_hc_expect_clean(p, NULL, NULL);
    cr_expect(strstr(tc_hc_out, "checked 9 ops, 3 holders, 0 violations") != NULL, "%s", tc_hc_out);
}

Test(history, an_empty_history_passes)
{
    char p[512];

    tc_hist_close(tc_hc_new(p, sizeof(p)));
    tc_hc_expect_clean(p, NULL, NULL);
    cr_expect(strstr(tc_hc_out, "checked 0 ops, 0 holders, 0 violations") != NULL, "%s", tc_hc_out);
}

/* ---- (a) overlapping holders ----------------------------------------------- */

Test(history, two_holders_at_once_are_found)
{
    char p[512];
    tc_hist *h = tc_hc_new(p, sizeof(p));

    tc_hc_grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    tc_hc_grant(h, "b", "bbbb", 90, 95, 300, 0x1f); /* a still valid until 100 */
    tc_hist_close(h);
    tc_hc_expect_violation(p, NULL, NULL, "overlap");
    cr_expect(strstr(tc_hc_out, "overlap for 5.000 ms") != NULL, "%s", tc_hc_out);
}

Test(history, a_release_before_the_next_grant_is_no_overlap)
{
    char p[512];
    tc_hist *h = tc_hc_new(p, sizeof(p));

    tc_hc_grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    tc_hc_release(h, "a", "aaaa", 50, 60, 0);       /* released at 50 ... */
    tc_hc_grant(h, "b", "bbbb", 40, 55, 300, 0x1f); /* ... b granted at 55 */
    tc_hist_close(h);
    tc_hc_expect_clean(p, NULL, NULL);
}

Test(history, a_release_after_the_next_grant_is_an_overlap)
{
    char p[512];
    tc_hist *h = tc_hc_new(p, sizeof(p));

    tc_hc_grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    tc_hc_grant(h, "b", "bbbb", 40, 55, 300, 0x1f);
    tc_hc_release(h, "a", "aaaa", 56, 60, 0); /* a let go only after b got it */
    tc_hist_close(h);
    tc_hc_expect_violation(p, NULL, NULL, "overlap");
}

Test(history, an_extend_moves_the_window_end)
{
    char p[512], q[512], s[512];
    tc_hist *h = tc_hc_new(p, sizeof(p));

    /* a's acquire alone ends at 100; its extend at 90 runs it to 300, so b
     * at 200 overlaps */
    tc_hc_grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    tc_hc_extend(h, "a", "aaaa", 89, 90, 0, 300);
    tc_hc_grant(h, "b", "bbbb", 199, 200, 400, 0x1f);
    tc_hist_close(h);
    tc_hc_expect_violation(p, NULL, NULL, "overlap");

    /* the same without the extend: clean */
    h = tc_hc_new(q, sizeof(q));
    tc_hc_grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    tc_hc_grant(h, "b", "bbbb", 199, 200, 400, 0x1f);
    tc_hist_close(h);
    tc_hc_expect_clean(q, NULL, NULL);

    /* a failed extend caps the window (the library caps the validity) */
    h = tc_hc_new(s, sizeof(s));
    tc_hc_grant(h, "a", "aaaa", 0, 2, 300, 0x1f);
    tc_hc_extend(h, "a", "aaaa", 50, 60, REDLOCK_ENOQUORUM, 150);
    tc_hc_grant(h, "b", "bbbb", 199, 200, 400, 0x1f);
    tc_hist_close(h);
    tc_hc_expect_clean(s, NULL, NULL);
}

Test(history, a_token_granted_twice_is_found)
{
    char p[512];
    tc_hist *h = tc_hc_new(p, sizeof(p));

    tc_hc_grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    tc_hc_release(h, "a", "aaaa", 50, 60, 0);
    tc_hc_grant(h, "b", "aaaa", 200, 201, 300, 0x1f);
    tc_hist_close(h);
    tc_hc_expect_violation(p, NULL, NULL, "token");
}

/* Resource names are bytes: names differing in one high byte are two
 * resources; the same odd bytes twice are one. */
Test(history, resource_names_are_compared_byte_for_byte)
{
    static const char n1[] = "q\"\\\n\x01\xff";
    static const char n2[] = "q\"\\\n\x01\xfe";
    char p[512], q[512];
    tc_hist *h = tc_hc_new(p, sizeof(p));
    tc_hist_rec a = { .client = "a",
                      .op = TC_HIST_ACQUIRE,
                      .res = n1,
                      .res_len = sizeof(n1),
                      .invoke_us = TC_HC_MS(0),
                      .complete_us = TC_HC_MS(1),
                      .token = "aaaa",
                      .vend_us = TC_HC_MS(100),
                      .has_vend = 1,
                      .ttl_ms = 1000,
                      .master = -1 };
    tc_hist_rec b = a;

    b.client = "b";
    b.token = "bbbb";
    b.invoke_us = TC_HC_MS(10);
    b.complete_us = TC_HC_MS(11);
    tc_hc_put(h, &a);
    tc_hc_put(h, &b);
    tc_hist_close(h);
    tc_hc_expect_violation(p, NULL, NULL, "overlap");

    h = tc_hc_new(q, sizeof(q));
    b.res = n2;
    tc_hc_put(h, &a);
    tc_hc_put(h, &b);
    tc_hist_close(h);
    tc_hc_expect_clean(q, NULL, NULL);
}

/* ---- late operations of a holder that lost the lock -------------------------------- */

Test(history, a_late_use_is_flagged_unless_its_client_marked_it)
{
    char p[512], q[512];
    tc_hist *h = tc_hc_new(p, sizeof(p));

    tc_hc_grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    tc_hc_grant(h, "b", "bbbb", 140, 150, 400, 0x1f);
    tc_hc_use(h, "a", "aaaa", 50, 200, 0); /* a paused mid-use, acting after 100 */
    tc_hist_close(h);
    tc_hc_expect_violation(p, NULL, NULL, "use");

    h = tc_hc_new(q, sizeof(q));
    tc_hc_grant(h, "a", "aaaa", 0, 2, 100, 0x1f);
    tc_hc_grant(h, "b", "bbbb", 140, 150, 400, 0x1f);
    tc_hc_use(h, "a", "aaaa", 10, 20, 0);  /* inside a's own window */
    tc_hc_use(h, "a", "aaaa", 50, 200, 1); /* a checked its validity: knows */
    tc_hist_close(h);
    tc_hc_expect_clean(q, NULL, NULL);
    cr_expect(strstr(tc_hc_out, "1 op marked late by their clients") != NULL, "%s", tc_hc_out);
    cr_expect(strstr(tc_hc_out, "NOTE: late") != NULL, "%s", tc_hc_out);
}

/* ---- overlaps a recorded loss of keys explains ------------------------------------------ */

Test(history, lost_keys_explain_an_overlap_only_when_the_majority_is_gone)
{
    static const char *const explain[] = { "--explain-lost-keys", NULL };
    char p[512], q[512];
    tc_hist *h = tc_hc_new(p, sizeof(p));

    /* a counted masters 0,1,2; master 2 is flushed; b gets 2,3,4 */
    tc_hc_grant(h, "a", "aaaa", 0, 2, 500, 0x07);
    tc_hc_fault(h, "flushall", 2, 1, 100, 101);
    tc_hc_grant(h, "b", "bbbb", 150, 160, 600, 0x1c);
    tc_hist_close(h);
    tc_hc_expect_violation(p, NULL, NULL, "overlap");
    tc_hc_expect_clean(p, NULL, explain);
    cr_expect(strstr(tc_hc_out, "EXPLAINED (overlap)") != NULL, "%s", tc_hc_out);
    cr_expect(strstr(tc_hc_out, "1 overlap explained by lost keys") != NULL, "%s", tc_hc_out);

    /* a counted 0,1,2,3: losing 2 leaves it a majority, so the loss does
     * not explain a second holder: still a violation */
    h = tc_hc_new(q, sizeof(q));
    tc_hc_grant(h, "a", "aaaa", 0, 2, 500, 0x0f);
    tc_hc_fault(h, "flushall", 2, 1, 100, 101);
    tc_hc_grant(h, "b", "bbbb", 150, 160, 600, 0x1c);
    tc_hist_close(h);
    tc_hc_expect_violation(q, NULL, explain, "overlap");
}
