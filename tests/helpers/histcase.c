/* histcase.c - small synthetic histories for the checker's tests (see
 * histcase.h).
 */
#include "histcase.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>

#include <redlock.h>

char tc_hc_dir[256];
static int seq;

void tc_hc_init(void)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(tc_hc_dir, sizeof(tc_hc_dir), "%s/redlock-history.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert(mkdtemp(tc_hc_dir) != NULL, "mkdtemp %s: %s", tc_hc_dir, strerror(errno));
}

void tc_hc_fini(void)
{
    char cmd[300];

    if (!tc_hc_dir[0])
        return;
    snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", tc_hc_dir);
    if (system(cmd) != 0) /* said, not warned: in criterion 2.4.1 a warning fails the run */
        cr_log_info("could not remove %s", tc_hc_dir);
}

/* A new history file in the test's dir. */
tc_hist *tc_hc_new(char *path, size_t size)
{
    tc_hist *h;

    snprintf(path, size, "%s/h%d.jsonl", tc_hc_dir, seq++);
    h = tc_hist_open(path);
    cr_assert(h != NULL, "tc_hist_open %s: %s", path, strerror(errno));
    return h;
}

void tc_hc_put(tc_hist *h, const tc_hist_rec *r)
{
    int rc = tc_hist_write(h, r);

    cr_assert(eq(int, rc, 0), "tc_hist_write: %s", strerror(-rc));
}

/* A line about resource "r" by @client over [@inv, @comp], as every lock
 * line of these cases starts; the caller adds what its op says. */
static tc_hist_rec lock_line(const char *client, int op, unsigned inv, unsigned comp)
{
    return (tc_hist_rec){ .client = client,
                          .op = op,
                          .res = "r",
                          .res_len = 1,
                          .invoke_us = TC_HC_MS(inv),
                          .complete_us = TC_HC_MS(comp),
                          .master = -1 };
}

void tc_hc_grant(tc_hist *h, const char *client, const char *tok, unsigned inv, unsigned comp,
                 unsigned vend, uint32_t oks)
{
    tc_hist_rec r = lock_line(client, TC_HIST_ACQUIRE, inv, comp);
    r.token = tok;
    r.vend_us = TC_HC_MS(vend);
    r.has_vend = 1;
    r.ttl_ms = 1000;
    r.oks = oks;
    r.n_ok = (uint32_t)__builtin_popcount(oks);
    tc_hc_put(h, &r);
}

void tc_hc_refused(tc_hist *h, const char *client, unsigned inv, unsigned comp)
{
    tc_hist_rec r = lock_line(client, TC_HIST_ACQUIRE, inv, comp);
    r.rc = REDLOCK_ECONFLICT;
    r.ttl_ms = 1000;
    tc_hc_put(h, &r);
}

void tc_hc_release(tc_hist *h, const char *client, const char *tok, unsigned inv, unsigned comp,
                   int rc)
{
    tc_hist_rec r = lock_line(client, TC_HIST_RELEASE, inv, comp);
    r.token = tok;
    r.rc = rc;
    tc_hc_put(h, &r);
}

void tc_hc_extend(tc_hist *h, const char *client, const char *tok, unsigned inv, unsigned comp,
                  int rc, unsigned vend)
{
    tc_hist_rec r = lock_line(client, TC_HIST_EXTEND, inv, comp);
    r.token = tok;
    r.rc = rc;
    r.vend_us = TC_HC_MS(vend);
    r.has_vend = 1;
    r.ttl_ms = 1000;
    tc_hc_put(h, &r);
}

void tc_hc_use(tc_hist *h, const char *client, const char *tok, unsigned inv, unsigned comp,
               int late)
{
    tc_hist_rec r = lock_line(client, TC_HIST_USE, inv, comp);
    r.token = tok;
    r.late = late;
    tc_hc_put(h, &r);
}

void tc_hc_fault(tc_hist *h, const char *what, int master, int lost, unsigned inv, unsigned comp)
{
    tc_hist_rec r = { .client = "test",
                      .op = TC_HIST_FAULT,
                      .invoke_us = TC_HC_MS(inv),
                      .complete_us = TC_HC_MS(comp),
                      .master = master,
                      .lost = lost,
                      .what = what };
    tc_hc_put(h, &r);
}

void tc_hc_key(tc_hist *h, int master, const char *tok, unsigned at, int64_t pttl)
{
    tc_hist_rec r = { .client = "snapshot",
                      .op = TC_HIST_KEY,
                      .res = "r",
                      .res_len = 1,
                      .invoke_us = TC_HC_MS(at),
                      .complete_us = TC_HC_MS(at),
                      .token = tok,
                      .master = master,
                      .pttl_ms = pttl };
    tc_hc_put(h, &r);
}

char tc_hc_out[65536];

int tc_hc_check(const char *path, const char *snapshot, const char *const *args)
{
    int rc = tc_hist_check(path, snapshot, args, tc_hc_out, sizeof(tc_hc_out));

    cr_assert(rc >= 0, "the checker did not run: %s", tc_hc_out);
    return rc;
}

void tc_hc_expect_clean(const char *path, const char *snapshot, const char *const *args)
{
    int rc = tc_hc_check(path, snapshot, args);

    cr_expect(eq(int, rc, 0), "checker exit %d on a clean history:\n%s", rc, tc_hc_out);
    cr_expect(strstr(tc_hc_out, " 0 violations") != NULL, "no summary line:\n%s", tc_hc_out);
}

void tc_hc_expect_violation(const char *path, const char *snapshot, const char *const *args,
                            const char *kind)
{
    char want[64];
    int rc = tc_hc_check(path, snapshot, args);

    snprintf(want, sizeof(want), "VIOLATION 1 (%s)", kind);
    cr_expect(eq(int, rc, 1), "checker exit %d, wanted 1:\n%s", rc, tc_hc_out);
    cr_expect(strstr(tc_hc_out, want) != NULL, "no \"%s\" in:\n%s", want, tc_hc_out);
    cr_expect(strstr(tc_hc_out, ">>") != NULL, "the lines involved are not marked:\n%s", tc_hc_out);
}
