/* run.h - `redlock-cli run`: hold a lock while a command runs. */
#ifndef REDLOCK_CLI_RUN_H
#define REDLOCK_CLI_RUN_H

#include <redlock.h>

#include "opts.h"

/* Remember which file descriptors the caller gave us (call before the
 * client opens its sockets): CMD inherits those, and no others. */
void cli_run_note_inherited_fds(void);

/* What run adds to the client's configuration (before the client is
 * made): the hook that tells it of the watchdog's extensions. Return: 0,
 * or -1 with errno. */
int cli_run_config(redlock_config *cfg);

/* Acquire, run o->run_argv with the lock held and extended, release.
 * Return: the exit code (CMD's status, 124, 126, 127, or ours). */
int cli_run(const struct cli_opts *o, redlock_client *c);

#endif
