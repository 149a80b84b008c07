/* targets.h - the targets' sections and what they print with: one line
 * per target (MET, MISSED or n/a), an "(info)" line, and whether a row ran
 * (verdict.c). */
#ifndef BENCH_TARGETS_H
#define BENCH_TARGETS_H

#include "bench.h"

/* verdict.c */
void target(const char *what, const char *got, int met, int known);
void info(const char *what, const char *got);
int row_ok(const struct result *r);
/* Issue 31's section (targets-waiters.c). */
void waiter_targets(void);

#endif
