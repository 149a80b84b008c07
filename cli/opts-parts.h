/* opts-parts.h - the pieces of cli_opts_parse(), shared between opts.c
 * (walking argv, checking the command, the merge), opts-table.c (the option
 * table, and putting one value where it says) and opts-layers.c (the
 * sources below the command line); opts.h is the CLI's interface, opts-args.h
 * the commands' positional words. The sources count in this order, highest
 * first: the command line, the environment, the config file; the whole order:
 * docs/errors-cli.md, "How the CLI reads its settings, files and secrets".
 */
#ifndef REDLOCK_CLI_OPTS_PARTS_H
#define REDLOCK_CLI_OPTS_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include "opts-args.h"
#include "opts.h"

#define CMDS_ALL 0u /* opt_def.cmds: every command takes it */
#define N_OPTS 43   /* entries in cli_opt_defs (opts-table.c checks) */

enum opt_kind {
    OPT_FLAG,    /* int field = 1 */
    OPT_COUNT,   /* int field += 1 (-vv) */
    OPT_STRING,  /* const char *field = the value */
    OPT_SECRET,  /* the same, for a value that may hold a password: never echoed */
    OPT_U32,     /* uint32_t field: a whole number of @unit in [min, max] */
    OPT_MS32,    /* uint32_t field: a duration in ms, [min, max] */
    OPT_CUSTOM,  /* custom(o, value) parses and stores it */
    OPT_HELP,    /* print help, exit 0 */
    OPT_VERSION, /* print the version, exit 0 */
    OPT_REFUSED, /* --password: never accepted, say why */
};

struct opt_def {
    const char *name;   /* long name, without the leading "--" */
    char short_name;    /* -x, or 0 */
    unsigned char kind; /* enum opt_kind */
    unsigned cmds;      /* commands that accept it (CMD_BIT); CMDS_ALL = global */
    size_t field;       /* offsetof(struct cli_opts, ...) */
    uint64_t min, max;  /* OPT_U32, OPT_MS32 */
    const char *unit;   /* OPT_U32: what the number counts, for messages */
    int (*custom)(struct cli_opts *o, const char *val);
};

/* The parse as it goes: which options were given (the value, or "" for a
 * flag, for messages), by any source, and the words that are not options.
 * given[] is indexed as cli_opt_defs. */
struct parse_state {
    const char *given[N_OPTS];
    struct cli_positionals pos;
};

/* opts-table.c: the table, and one value into struct cli_opts. */
extern const struct opt_def cli_opt_defs[];
/* The option named @name (long name, no "--"), or NULL. */
const struct opt_def *cli_opt_find(const char *name);
/* It takes a value: not a flag, a count, --help, --version or a refusal. */
int cli_opt_takes_value(const struct opt_def *d);
/* Apply option @d (with @val, or NULL for a flag) to @o and record it in
 * @ps; @help is called for --help. Return: CLI_PARSE_OK, or what parsing
 * should return now (after a one-line message for CLI_PARSE_USAGE). */
int cli_opt_apply(struct cli_opts *o, struct parse_state *ps, const struct opt_def *d,
                  const char *val, void (*help)(void));

/* opts-layers.c: below the command line. Each returns CLI_PARSE_OK, or
 * CLI_PARSE_USAGE after a one-line message naming the source. */
int cli_layer_env(struct cli_opts *o, struct parse_state *ps);
int cli_layer_conf(struct cli_opts *o, struct parse_state *ps);
/* run: what CMD's environment gets, so that a redlock-cli it runs resolves
 * what this one did, wherever each setting came from: o->run_env, entries
 * "REDLOCK_<NAME>=value" to set and "REDLOCK_<NAME>" to drop (inherited
 * values of every name in it are dropped); values as given, but file
 * names absolute, and never REDLOCK_NO_RESTART_GUARD (dropped: a nested
 * redlock-cli runs with the memory guard on) nor REDLOCK_METRICS_FILE
 * (dropped: the file is this run's alone). A password goes in only if it
 * came from there: $REDLOCK_PASSWORD stays as inherited, a password file
 * goes as its path (and $REDLOCK_PASSWORD, which it outweighed, is
 * dropped), a masters list that carries passwords goes as its file
 * ($REDLOCK_MASTERS_FILE) unless it came from $REDLOCK_MASTERS, and not at
 * all when it came from a config file's masters line. Return: 0, or -1
 * after a message (out of memory). */
int cli_layer_export(struct cli_opts *o, const struct parse_state *ps);
/* The password: --password-file (from any source), else $REDLOCK_PASSWORD;
 * never argv. Return: 0, or -1 after a message. */
int cli_load_password(struct cli_opts *o);

#endif
