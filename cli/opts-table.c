/* opts-table.c - redlock-cli's options: one table (cli_opt_defs) says, for
 * every option, its names, what it takes, where the value goes and which
 * commands accept it, and cli_opt_apply() puts a value where the table
 * says, whichever source gave it: the command line (opts.c), the
 * environment or the config file (opts-layers.c). The values' own parsers
 * are in opts-value.c.
 */
#include "opts-parts.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define CMDS_LOCK_RUN (CMD_BIT(CLI_CMD_LOCK) | CMD_BIT(CLI_CMD_RUN))

static int set_drift(struct cli_opts *o, const char *val)
{
    return cli_parse_drift(val, &o->drift_factor);
}

static int set_clock_policy(struct cli_opts *o, const char *val)
{
    return cli_parse_clock_policy(val, &o->clock_policy);
}

static int set_wait(struct cli_opts *o, const char *val)
{
    o->wait_set = 1;
    return cli_parse_wait(val, &o->wait_ms);
}

static int set_signal(struct cli_opts *o, const char *val)
{
    return cli_parse_signal("--signal", val, &o->loss_signal);
}

static int set_prefix(struct cli_opts *o, const char *val)
{
    if (strlen(val) > REDLOCK_PREFIX_MAX) {
        cli_usage_error("--prefix is %zu bytes: keep it to %d", strlen(val), REDLOCK_PREFIX_MAX);
        return -1;
    }
    o->prefix = val;
    return 0;
}

static int set_user(struct cli_opts *o, const char *val)
{
    if (val[0] == '\0') {
        cli_usage_error("--user is empty: give an ACL user name, or drop the option");
        return -1;
    }
    o->user = val;
    return 0;
}

static int set_command(struct cli_opts *o, const char *val)
{
    if (val[0] == '\0') {
        cli_usage_error("--command is empty: give a shell command, e.g. -c 'backup && prune'");
        return -1;
    }
    o->shell_command = val;
    return 0;
}

#define F(field) offsetof(struct cli_opts, field)
/* An initializer as a macro's body: clang-format 14 reads it as a block and
 * spreads it over four lines, so it is kept out. */
/* clang-format off */
#define FLAG(n, s, cmds, f) {n, s, OPT_FLAG, cmds, F(f), 0, 0, NULL, NULL}
#define STRING(n, s, cmds, f) {n, s, OPT_STRING, cmds, F(f), 0, 0, NULL, NULL}
#define U32(n, s, cmds, f, lo, hi, unit) {n, s, OPT_U32, cmds, F(f), lo, hi, unit, NULL}
#define MS32(n, cmds, f, lo, hi) {n, 0, OPT_MS32, cmds, F(f), lo, hi, NULL, NULL}
#define CUSTOM(n, s, cmds, fn) {n, s, OPT_CUSTOM, cmds, 0, 0, 0, NULL, fn}
/* clang-format on */

const struct opt_def cli_opt_defs[] = {
    { "masters", 0, OPT_SECRET, CMDS_ALL, F(masters_arg), 0, 0, NULL, NULL },
    STRING("masters-file", 0, CMDS_ALL, masters_file),
    /* The library's ranges (config.c checks the whole against it too). */
    MS32("timeout-ms", CMDS_ALL, timeout_ms, 1, 600000),
    MS32("connect-timeout-ms", CMDS_ALL, connect_timeout_ms, 1, 600000),
    U32("retry", 0, CMDS_ALL, retry, 0, 1000000, "retries"),
    MS32("retry-delay", CMDS_ALL, retry_delay_ms, 1, 600000),
    CUSTOM("drift-factor", 0, CMDS_ALL, set_drift),
    CUSTOM("prefix", 0, CMDS_ALL, set_prefix),
    CUSTOM("user", 0, CMDS_ALL, set_user),
    STRING("password-file", 0, CMDS_ALL, password_file),
    STRING("config", 0, CMDS_ALL, config_file),
    { "password", 'a', OPT_REFUSED, CMDS_ALL, 0, 0, 0, NULL, NULL },
    { "password", 'p', OPT_REFUSED, CMDS_ALL, 0, 0, 0, NULL, NULL },
    FLAG("tls", 0, CMDS_ALL, tls),
    STRING("cacert", 0, CMDS_ALL, tls_ca_file),
    STRING("cacertdir", 0, CMDS_ALL, tls_ca_dir),
    STRING("cert", 0, CMDS_ALL, tls_cert_file),
    STRING("key", 0, CMDS_ALL, tls_key_file),
    STRING("sni", 0, CMDS_ALL, tls_server_name),
    FLAG("insecure", 0, CMDS_ALL, tls_insecure),
    FLAG("json", 0, CMDS_ALL, json),
    FLAG("quiet", 'q', CMDS_ALL, quiet),
    { "verbose", 'v', OPT_COUNT, CMDS_ALL, F(verbose), 0, 0, NULL, NULL },
    { "help", 'h', OPT_HELP, CMDS_ALL, 0, 0, 0, NULL, NULL },
    { "version", 'V', OPT_VERSION, CMDS_ALL, 0, 0, 0, NULL, NULL },
    MS32("ttl",
         CMD_BIT(CLI_CMD_LOCK) | CMD_BIT(CLI_CMD_EXTEND) | CMD_BIT(CLI_CMD_RUN) |
             CMD_BIT(CLI_CMD_READMIT),
         ttl_ms, 1, REDLOCK_TTL_MAX_MS),
    /* -w, -n, -k as flock(1) and timeout(1) spell them. */
    CUSTOM("wait", 'w', CMDS_LOCK_RUN, set_wait),
    FLAG("nonblock", 'n', CMDS_LOCK_RUN, nonblock),
    { "kill-after", 'k', OPT_MS32, CMD_BIT(CLI_CMD_RUN), F(kill_after_ms), 0, 3600000, NULL, NULL },
    CUSTOM("clock-policy", 0, CMDS_ALL, set_clock_policy),
    MS32("restart-guard-ms", CMDS_ALL, restart_guard_ms, 0, REDLOCK_TTL_MAX_MS),
    FLAG("no-restart-guard", 0, CMDS_ALL, no_restart_guard),
    FLAG("force", 0, CMD_BIT(CLI_CMD_DECLARE_EMPTY) | CMD_BIT(CLI_CMD_READMIT), force),
    U32("samples", 0, CMD_BIT(CLI_CMD_PING) | CMD_BIT(CLI_CMD_METRICS), samples, 1, 1000, "pings"),
    FLAG("fence", 0, CMDS_LOCK_RUN, fence),
    FLAG("no-pubsub", 0, CMDS_LOCK_RUN, no_pubsub),
    U32("conflict-exit-code", 'E', CMDS_LOCK_RUN, conflict_exit, 0, 255, "exit status"),
    U32("max-extends", 0, CMD_BIT(CLI_CMD_RUN), max_extends, 1, UINT32_MAX, "extensions"),
    MS32("max-lease", CMD_BIT(CLI_CMD_RUN), max_lease_ms, 1, UINT32_MAX),
    CUSTOM("command", 'c', CMD_BIT(CLI_CMD_RUN), set_command),
    CUSTOM("signal", 's', CMD_BIT(CLI_CMD_RUN), set_signal),
    FLAG("foreground", 0, CMD_BIT(CLI_CMD_RUN), foreground),
    STRING("metrics-file", 0, CMD_BIT(CLI_CMD_RUN), metrics_file),
};

_Static_assert(sizeof(cli_opt_defs) / sizeof(cli_opt_defs[0]) == N_OPTS,
               "N_OPTS in opts-parts.h must count cli_opt_defs");

const struct opt_def *cli_opt_find(const char *name)
{
    for (size_t k = 0; k < N_OPTS; k++)
        if (strcmp(cli_opt_defs[k].name, name) == 0)
            return &cli_opt_defs[k];
    return NULL;
}

static void print_version(void)
{
    printf("%s %s (library %s, header %s; TLS %s)\n", CLI_NAME, REDLOCK_VERSION_STRING,
           redlock_version(), REDLOCK_VERSION_STRING, redlock_has_tls() ? "yes" : "no");
}

/* A bare number given to an option whose name ends in -ms. */
static int bare_ms_name(const char *name, const char *val)
{
    size_t n = strlen(name), v = strlen(val);

    return n > 3 && strcmp(name + n - 3, "-ms") == 0 && v > 0 && strspn(val, "0123456789.") == v;
}

/* A number or duration option's value into its field. */
static int set_number(struct cli_opts *o, const struct opt_def *d, const char *val)
{
    char *field = (char *)o + d->field;
    uint64_t v;

    if (d->kind == OPT_U32) {
        if (cli_parse_u64(val, d->min, d->max, &v) < 0) {
            cli_usage_error("--%s '%s': expected a whole number of %s from %llu to %llu", d->name,
                            val, d->unit, (unsigned long long)d->min, (unsigned long long)d->max);
            return -1;
        }
    } else if (bare_ms_name(d->name, val)) {
        /* --timeout-ms 50: the name says ms, the rule says seconds; which
         * one the user meant nobody can tell, so neither wins. */
        cli_usage_error("--%s '%s': give a unit, e.g. %sms (a bare number would be seconds)",
                        d->name, val, val);
        return -1;
    } else if (cli_parse_duration_ms(val, d->min, d->max, &v) < 0) {
        cli_usage_error(
            "--%s '%s': expected a duration from %llu ms to %llu ms: " CLI_DURATION_FORMS, d->name,
            val, (unsigned long long)d->min, (unsigned long long)d->max);
        return -1;
    }
    {
        uint32_t w = (uint32_t)v;

        memcpy(field, &w, sizeof(w));
    }
    return 0;
}

int cli_opt_apply(struct cli_opts *o, struct parse_state *ps, const struct opt_def *d,
                  const char *val, void (*help)(void))
{
    size_t id = (size_t)(d - cli_opt_defs);
    char *field = (char *)o + d->field;

    /* A value given twice is a script's mistake (two --ttl: which one did
     * it mean?), not a last-one-wins. Flags may repeat. */
    if (val && ps->given[id]) {
        if (d->kind == OPT_SECRET)
            cli_usage_error("--%s given twice: give it once", d->name);
        else
            cli_usage_error("--%s given twice ('%s', then '%s'): give it once", d->name,
                            ps->given[id], val);
        return CLI_PARSE_USAGE;
    }
    ps->given[id] = val ? val : "";
    switch (d->kind) {
    case OPT_FLAG: *(int *)(void *)field = 1; return CLI_PARSE_OK;
    case OPT_COUNT: (*(int *)(void *)field)++; return CLI_PARSE_OK;
    case OPT_STRING:
    case OPT_SECRET: *(const char **)(void *)field = val; return CLI_PARSE_OK;
    case OPT_HELP: help(); return CLI_PARSE_EXIT_0;
    case OPT_VERSION: print_version(); return CLI_PARSE_EXIT_0;
    case OPT_CUSTOM: return d->custom(o, val) < 0 ? CLI_PARSE_USAGE : CLI_PARSE_OK;
    case OPT_REFUSED:
        /* redis-cli spells the password -a: say why we do not. */
        cli_usage_error("%s: passwords are not accepted on the command line (ps(1) shows "
                        "them): use --password-file FILE or $REDLOCK_PASSWORD",
                        d->short_name && !val ? (char[]){ '-', d->short_name, 0 } : "--password");
        return CLI_PARSE_USAGE;
    default: return set_number(o, d, val) < 0 ? CLI_PARSE_USAGE : CLI_PARSE_OK;
    }
}

int cli_opt_takes_value(const struct opt_def *d)
{
    return d->kind != OPT_FLAG && d->kind != OPT_COUNT && d->kind != OPT_HELP &&
           d->kind != OPT_VERSION && d->kind != OPT_REFUSED;
}
