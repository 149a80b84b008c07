/* histcase.h - small synthetic histories, to show that the checker can fail.
 *
 * A checker that never reports anything proves nothing, so the tests plant
 * each kind of violation tests/history/check.py looks for in a history of
 * a few lines and expect it found, and the same history without the fault
 * clean. Lines are written with the recorder itself (history.h). Times are
 * ms on an arbitrary origin (TC_HC_MS). Every history is one resource, "r",
 * on five masters. For criterion tests: the suite's .init/.fini are
 * tc_hc_init/tc_hc_fini (a temp dir of the test's own).
 */
#ifndef TC_HISTCASE_H
#define TC_HISTCASE_H

#include <stddef.h>
#include <stdint.h>

#include "history.h"

/* Times in the synthetic histories are ms since 1 s (any origin works). */
#define TC_HC_MS(x) (1000000u + 1000u * (uint64_t)(x))

/* The checker's output of the last tc_hc_check(). */
extern char tc_hc_out[65536];

/* The test's temp dir, made by tc_hc_init() (for .init) and removed
 * with what is in it by tc_hc_fini() (for .fini). */
extern char tc_hc_dir[256];
void tc_hc_init(void);
void tc_hc_fini(void);

/* A new history file in the test's dir; its path into @path. */
tc_hist *tc_hc_new(char *path, size_t size);

/* One line as given; fails the test if it cannot be written. */
void tc_hc_put(tc_hist *h, const tc_hist_rec *r);

/* @client was granted @tok over [@inv, @comp], valid until @vend, by the
 * masters in @oks (bit i: master i). */
void tc_hc_grant(tc_hist *h, const char *client, const char *tok, unsigned inv, unsigned comp,
                 unsigned vend, uint32_t oks);

/* @client was refused (ECONFLICT) over [@inv, @comp]. */
void tc_hc_refused(tc_hist *h, const char *client, unsigned inv, unsigned comp);

/* @client released @tok over [@inv, @comp], the call returning @rc. */
void tc_hc_release(tc_hist *h, const char *client, const char *tok, unsigned inv, unsigned comp,
                   int rc);

/* @client extended @tok over [@inv, @comp] (@rc), valid until @vend. */
void tc_hc_extend(tc_hist *h, const char *client, const char *tok, unsigned inv, unsigned comp,
                  int rc, unsigned vend);

/* @client acted as @tok's holder over [@inv, @comp]; @late: it knew its
 * lease had lapsed. */
void tc_hc_use(tc_hist *h, const char *client, const char *tok, unsigned inv, unsigned comp,
               int late);

/* @what happened to @master over [@inv, @comp]; @lost: it lost its keys. */
void tc_hc_fault(tc_hist *h, const char *what, int master, int lost, unsigned inv, unsigned comp);

/* Snapshot line: @master holds @tok at @at with PTTL @pttl (-1: none). */
void tc_hc_key(tc_hist *h, int master, const char *tok, unsigned at, int64_t pttl);

/* Run the checker on @path (@snapshot may be NULL; @args NULL-terminated,
 * may be NULL); output in tc_hc_out. Fails the test if it did not run.
 * Return: its exit status. */
int tc_hc_check(const char *path, const char *snapshot, const char *const *args);

/* The checker passes @path: exit 0 and "0 violations". */
void tc_hc_expect_clean(const char *path, const char *snapshot, const char *const *args);

/* The checker finds exactly one violation of @kind ("overlap", "fence",
 * ...), exits 1 and marks the lines involved. */
void tc_hc_expect_violation(const char *path, const char *snapshot, const char *const *args,
                            const char *kind);

#endif
