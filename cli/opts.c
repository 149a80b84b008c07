/* opts.c - redlock-cli's command line parser, and cli_opts_parse(), which
 * merges it with the sources below it.
 *
 * Walks argv once with the option table (opts-table.c); the rest comes from
 * opts-layers.c, values from opts-value.c, masters.c and secret-file.c; ends
 * with a cli_opts checked by the library. Why hand-written: docs/errors-cli.md,
 * "How the CLI reads its settings, files and secrets".
 */
#include "opts.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "conf.h"
#include "opts-args.h"
#include "opts-parts.h"

/* -q, -vv, -E75, -E 75, -c 'CMD': clustered short options, the value of the
 * last one taking the rest of the word or the next word. */
static int parse_short(struct cli_opts *o, struct parse_state *ps, int argc, char **argv, int *i,
                       void (*help)(void))
{
    for (const char *s = argv[*i] + 1; *s; s++) {
        const struct opt_def *d = NULL;
        const char *val = NULL;
        int r;

        for (size_t k = 0; k < N_OPTS && !d; k++)
            if (cli_opt_defs[k].short_name == *s)
                d = &cli_opt_defs[k];
        if (!d) {
            cli_usage_error("unknown option '-%c' (see --help)", *s);
            return CLI_PARSE_USAGE;
        }
        if (cli_opt_takes_value(d)) {
            if (s[1] != '\0') {
                val = s + 1;
            } else if (*i + 1 < argc) {
                val = argv[++*i];
            } else {
                cli_usage_error("-%c (--%s) needs a value (see --help)", *s, d->name);
                return CLI_PARSE_USAGE;
            }
        }
        r = cli_opt_apply(o, ps, d, val, help);
        if (r != CLI_PARSE_OK || val)
            return r;
    }
    return CLI_PARSE_OK;
}

/* --name or --name=value. Only the name is ever echoed back for an unknown
 * option, so a mistyped --pasword=secret does not print the secret. */
static int parse_long(struct cli_opts *o, struct parse_state *ps, int argc, char **argv, int *i,
                      void (*help)(void))
{
    const char *a = argv[*i], *eq = strchr(a + 2, '='), *val = NULL;
    size_t nlen = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
    const struct opt_def *d = NULL;

    for (size_t k = 0; k < N_OPTS && !d; k++)
        if (strlen(cli_opt_defs[k].name) == nlen && strncmp(cli_opt_defs[k].name, a + 2, nlen) == 0)
            d = &cli_opt_defs[k];
    if (!d) {
        if (nlen > 40)
            cli_usage_error("unknown option '--%.20s...' (see --help)", a + 2);
        else
            cli_usage_error("unknown option '--%.*s' (see --help)", (int)nlen, a + 2);
        return CLI_PARSE_USAGE;
    }
    if (d->kind == OPT_REFUSED)
        return cli_opt_apply(o, ps, d, "", help);
    if (cli_opt_takes_value(d)) {
        if (eq) {
            val = eq + 1;
        } else if (*i + 1 < argc) {
            val = argv[++*i];
        } else {
            cli_usage_error("--%s needs a value (see --help)", d->name);
            return CLI_PARSE_USAGE;
        }
    } else if (eq) {
        cli_usage_error("--%s takes no value: drop '=...'", d->name);
        return CLI_PARSE_USAGE;
    }
    return cli_opt_apply(o, ps, d, val, help);
}

/* '--' ends the options: what follows are positional words, so a RESOURCE
 * may begin with '-'. For run, a '--' after at least one resource
 * introduces CMD instead, also after the first '--'. Return: 0, -1 after a
 * message, or 1 when argv is used up. */
static int take_dashdash(struct cli_opts *o, struct parse_state *ps, int argc, char **argv, int *i)
{
    if (o->cmd == CLI_CMD_RUN && ps->pos.n >= 1) {
        o->run_argv = &argv[*i + 1];
        *i = argc;
        return 1;
    }
    if (ps->pos.end_of_opts)
        return cli_args_take(o, &ps->pos, argv[*i]);
    ps->pos.end_of_opts = 1;
    return 0;
}

/* Walk argv once, applying the table and collecting positional words. */
static int parse_args(struct cli_opts *o, struct parse_state *ps, int argc, char **argv,
                      void (*help)(void))
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = CLI_PARSE_OK;

        if (strcmp(a, "--") == 0) {
            r = take_dashdash(o, ps, argc, argv, &i);
            if (r < 0)
                return CLI_PARSE_USAGE;
            continue;
        }
        if (ps->pos.end_of_opts || a[0] != '-' || a[1] == '\0') {
            if (cli_args_take(o, &ps->pos, a) < 0)
                return CLI_PARSE_USAGE;
            continue;
        }
        if (a[1] != '-')
            r = parse_short(o, ps, argc, argv, &i, help);
        else
            r = parse_long(o, ps, argc, argv, &i, help);
        if (r != CLI_PARSE_OK)
            return r;
    }
    return CLI_PARSE_OK;
}

/* What needs the whole command line: the command, the options that apply
 * to it, its positional words (opts-args.c). */
static int check_command(struct cli_opts *o, const struct parse_state *ps)
{
    char b[64];

    if (o->no_restart_guard && o->restart_guard_ms_set) {
        cli_usage_error("--restart-guard-ms and --no-restart-guard contradict each other: "
                        "give one of them");
        return -1;
    }
    if (o->nonblock && (o->wait_set || o->retry > 0)) {
        cli_usage_error("-n (--nonblock) means one attempt, %s says wait: give one of them",
                        o->wait_set ? "--wait" : "--retry");
        return -1;
    }
    if (o->retry > 0 && o->wait_set) {
        cli_usage_error("--retry and --wait both say how long to wait: give --wait alone (a "
                        "duration, or forever)");
        return -1;
    }
    if (o->cmd == CLI_CMD_NONE) {
        cli_usage_error("missing COMMAND: use one of %s (see --help)", cli_cmds_all());
        return -1;
    }
    for (size_t id = 0; id < N_OPTS; id++) {
        const struct opt_def *d = &cli_opt_defs[id];

        if (ps->given[id] && d->cmds != CMDS_ALL && !(d->cmds & CMD_BIT(o->cmd))) {
            cli_usage_error("--%s does not apply to %s (only to %s)", d->name, o->cmd_name,
                            cli_cmds_text(d->cmds, b, sizeof(b)));
            return -1;
        }
    }
    return cli_args_check(o, &ps->pos);
}

int cli_opts_parse(struct cli_opts *o, int argc, char **argv, void (*help)(void))
{
    struct parse_state ps;
    int r;

    memset(o, 0, sizeof(*o));
    memset(&ps, 0, sizeof(ps));
    o->drift_factor = -1.0;
    o->clock_policy = -1;
    o->samples = CLI_DEFAULT_PING_SAMPLES;
    o->ttl_ms = CLI_DEFAULT_TTL_MS;
    o->kill_after_ms = CLI_DEFAULT_KILL_AFTER_MS;
    o->retry_delay_ms = CLI_DEFAULT_RETRY_DELAY_MS;
    o->conflict_exit = CLI_EXIT_TEMPFAIL;
    o->loss_signal = SIGTERM;

    r = parse_args(o, &ps, argc, argv, help);
    if (r != CLI_PARSE_OK)
        return r;
    /* The command line first, then what it left unsaid: the environment,
     * then the config file (opts-parts.h says the whole order). */
    r = cli_layer_env(o, &ps);
    if (r == CLI_PARSE_OK)
        r = cli_layer_conf(o, &ps);
    if (r != CLI_PARSE_OK)
        return r;
    cli_quiet = o->quiet;
    cli_verbose = o->verbose;
    for (size_t id = 0; id < N_OPTS; id++) {
        if (ps.given[id] && strcmp(cli_opt_defs[id].name, "ttl") == 0)
            o->ttl_set = 1;
        if (ps.given[id] && strcmp(cli_opt_defs[id].name, "restart-guard-ms") == 0)
            o->restart_guard_ms_set = 1;
        if (ps.given[id] && strcmp(cli_opt_defs[id].name, "conflict-exit-code") == 0)
            o->conflict_exit_set = 1;
    }
    if (check_command(o, &ps) < 0)
        return CLI_PARSE_USAGE;
    if (o->nonblock) {
        /* flock -n: one attempt, a conflict exits at once (75, or -E). */
        o->wait_set = 1;
        o->wait_ms = 0;
    }
    r = cli_load_masters(o);
    if (r != CLI_PARSE_OK)
        return r;
    if (cli_load_password(o) < 0 || cli_config_check(o) < 0)
        return CLI_PARSE_USAGE;
    if (o->cmd == CLI_CMD_RUN && cli_layer_export(o, &ps) < 0)
        return CLI_PARSE_USAGE;
    /* On every use, not only with -v, and not silenced by -q: the flag
     * comes from argv alone, so whoever typed it (or the script that
     * passes it) reads this. Last, so that a usage error stays the one
     * line it is. */
    if (o->no_restart_guard)
        cli_say(CLI_SAY_USAGE,
                "warning: --no-restart-guard: the memory guard is off: a master that restarted "
                "or lost its data counts at once and may grant a lock that is still held");
    return CLI_PARSE_OK;
}

void cli_opts_done(struct cli_opts *o)
{
    if (o->password) {
        explicit_bzero(o->password, strlen(o->password));
        free(o->password);
        o->password = NULL;
    }
    free(o->masters);
    o->masters = NULL;
    if (o->run_env) {
        for (char **e = o->run_env; *e; e++)
            free(*e);
        free(o->run_env);
        o->run_env = NULL;
    }
    if (o->conf) {
        cli_conf_free(o->conf);
        free(o->conf);
        o->conf = NULL;
    }
}
