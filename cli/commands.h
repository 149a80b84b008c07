/* commands.h - the commands redlock-cli runs, one function each: main()
 * (redlock-cli.c) picks one. Each prints its result and messages and
 * returns the exit status. `run` is in run.h.
 */
#ifndef REDLOCK_CLI_COMMANDS_H
#define REDLOCK_CLI_COMMANDS_H

#include <redlock.h>

#include "opts.h"

int cli_cmd_lock(const struct cli_opts *o, redlock_client *c);     /* cmd-lock.c */
int cli_cmd_token_op(const struct cli_opts *o, redlock_client *c); /* unlock, extend */
int cli_cmd_status(const struct cli_opts *o, redlock_client *c);   /* inspect.c */
int cli_cmd_ping(const struct cli_opts *o, redlock_client *c);
int cli_cmd_declare_empty(const struct cli_opts *o, redlock_client *c); /* cmd-declare.c */
int cli_cmd_readmit(const struct cli_opts *o, redlock_client *c);
int cli_cmd_metrics(const struct cli_opts *o, redlock_client *c); /* inspect.c */

#endif
