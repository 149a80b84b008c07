/* opts-args.h - inside the parser: the commands and their positional words
 * (opts-args.c), shared with the option table (opts.c). Not for the rest of
 * the CLI: cli_opts_parse() is the interface.
 */
#ifndef REDLOCK_CLI_OPTS_ARGS_H
#define REDLOCK_CLI_OPTS_ARGS_H

#include <stddef.h>

#include "opts.h"

#define CMD_BIT(c) (1u << (c))

/* The positional words after the command name, sorted out once all are in:
 * unlock and extend take the last one as TOKEN, as cp(1) takes its last
 * word as the destination, so `unlock R TOKEN` reads as it always did. */
struct cli_positionals {
    const char *w[REDLOCK_SET_MAX + 1];
    int n;
    int end_of_opts; /* after a '--' that ends the options */
};

/* The next word that is not an option: the command name first, then its
 * positional words. Return: 0, or -1 after a message. */
int cli_args_take(struct cli_opts *o, struct cli_positionals *pos, const char *a);

/* Once argv is read: resources, TOKEN, run's CMD (or -c), and the checks
 * that need the whole command. Return: 0, or -1 after a message. */
int cli_args_check(struct cli_opts *o, const struct cli_positionals *pos);

/* "lock, extend and run": the commands in @cmds (CMD_BIT), for messages. */
const char *cli_cmds_text(unsigned cmds, char *buf, size_t size);

/* "lock, unlock, ..., readmit": every command, from the table the parser
 * looks names up in (so a new command cannot be left out), for "use one
 * of" messages. Return: a static string. */
const char *cli_cmds_all(void);

#endif
