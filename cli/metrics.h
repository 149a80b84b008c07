/* metrics.h - the library's metrics (redlock_metrics_write) for redlock-cli:
 * on stdout (`metrics`) or into a file for node_exporter's textfile
 * collector (`run --metrics-file`).
 */
#ifndef REDLOCK_CLI_METRICS_H
#define REDLOCK_CLI_METRICS_H

#include <stdio.h>

#include <redlock.h>

/* @c's metrics on @f. Return: 0, or -1 after a line on stderr. */
int cli_metrics_print(redlock_client *c, FILE *f);

/* @c's metrics into @path, whole or not at all: written to PATH.tmp, then
 * renamed over @path (the collector never reads half a file). A failure is
 * one warning line the first time (@warned keeps count), then silent, as
 * the lock goes on without its metrics.
 * Return: 0, or -1 when the file was not written. */
int cli_metrics_file(redlock_client *c, const char *path, int *warned);

#endif
