/* verdict.c - one target's line (MET, MISSED or n/a), an "(info)" line,
 * and whether a row ran: what every section of targets (targets.c,
 * targets-waiters.c) prints with.
 */
#include "bench.h"
#include "targets.h"

#include <stdio.h>
#include <string.h>

void target(const char *what, const char *got, int met, int known)
{
    printf("  %-8s %-62s %s\n", !known ? "n/a" : met ? "MET" : "MISSED", what, got);
}

void info(const char *what, const char *got)
{
    printf("  %-8s %-62s %s\n", "(info)", what, got);
}

/* A contention row never counts as met if it could not run properly. */
int row_ok(const struct result *r)
{
    return strncmp(r->note, "error", 5) != 0;
}
