/* opts.c - redlock-cli's command line parser.
 *
 * One table (opt_defs) says, for every option, its names, what it takes,
 * where the value goes and which commands accept it; the parser walks argv
 * once and applies the table. Hand-written rather than getopt_long() so
 * that every failure can say, in one line, what was wrong and how to fix
 * it, so that options may come before or after the command, as users type
 * them, and so that `run R -- CMD` can tell its two kinds of `--` apart.
 * Nothing here talks to a master: parsing ends with a validated struct
 * cli_opts, and with the library's own check of the configuration made
 * from it (config.c). The values' own parsers are in opts-value.c,
 * masters.c and secret-file.c.
 */
#include "opts.h"

#include <ctype.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "conf.h"
#include "opts-args.h"

#define CMDS_ALL 0u
#define CMDS_LOCK_RUN (CMD_BIT(CLI_CMD_LOCK) | CMD_BIT(CLI_CMD_RUN))

enum opt_kind {
    OPT_FLAG,      /* int field = 1 */
    OPT_COUNT,     /* int field += 1 (-vv) */
    OPT_STRING,    /* const char *field = the value */
    OPT_SECRET,    /* the same, for a value that may hold a password: never echoed */
    OPT_U32,       /* uint32_t field: a whole number of @unit in [min, max] */
    OPT_MS32,      /* uint32_t field: a duration in ms, [min, max] */
    OPT_CUSTOM,    /* custom(o, value) parses and stores it */
    OPT_HELP,      /* print help, exit 0 */
    OPT_VERSION,   /* print the version, exit 0 */
    OPT_REFUSED,   /* --password: never accepted, say why */
};

struct opt_def {
    const char *name;      /* long name, without the leading "--" */
    char short_name;       /* -x, or 0 */
    unsigned char kind;    /* enum opt_kind */
    unsigned cmds;         /* commands that accept it (CMD_BIT); CMDS_ALL = global */
    size_t field;          /* offsetof(struct cli_opts, ...) */
    uint64_t min, max;     /* OPT_U32, OPT_MS32 */
    const char *unit;      /* OPT_U32: what the number counts, for messages */
    int (*custom)(struct cli_opts *o, const char *val);
};

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
#define FLAG(n, s, cmds, f) {n, s, OPT_FLAG, cmds, F(f), 0, 0, NULL, NULL}
#define STRING(n, s, cmds, f) {n, s, OPT_STRING, cmds, F(f), 0, 0, NULL, NULL}
#define U32(n, s, cmds, f, lo, hi, unit) {n, s, OPT_U32, cmds, F(f), lo, hi, unit, NULL}
#define MS32(n, cmds, f, lo, hi) {n, 0, OPT_MS32, cmds, F(f), lo, hi, NULL, NULL}
#define CUSTOM(n, s, cmds, fn) {n, s, OPT_CUSTOM, cmds, 0, 0, 0, NULL, fn}

static const struct opt_def opt_defs[] = {
    {"masters", 0, OPT_SECRET, CMDS_ALL, F(masters_arg), 0, 0, NULL, NULL},
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
    {"password", 'a', OPT_REFUSED, CMDS_ALL, 0, 0, 0, NULL, NULL},
    {"password", 'p', OPT_REFUSED, CMDS_ALL, 0, 0, 0, NULL, NULL},
    FLAG("tls", 0, CMDS_ALL, tls),
    STRING("cacert", 0, CMDS_ALL, tls_ca_file),
    STRING("cacertdir", 0, CMDS_ALL, tls_ca_dir),
    STRING("cert", 0, CMDS_ALL, tls_cert_file),
    STRING("key", 0, CMDS_ALL, tls_key_file),
    STRING("sni", 0, CMDS_ALL, tls_server_name),
    FLAG("insecure", 0, CMDS_ALL, tls_insecure),
    FLAG("json", 0, CMDS_ALL, json),
    FLAG("quiet", 'q', CMDS_ALL, quiet),
    {"verbose", 'v', OPT_COUNT, CMDS_ALL, F(verbose), 0, 0, NULL, NULL},
    {"help", 'h', OPT_HELP, CMDS_ALL, 0, 0, 0, NULL, NULL},
    {"version", 'V', OPT_VERSION, CMDS_ALL, 0, 0, 0, NULL, NULL},
    MS32("ttl", CMD_BIT(CLI_CMD_LOCK) | CMD_BIT(CLI_CMD_EXTEND) | CMD_BIT(CLI_CMD_RUN) |
                    CMD_BIT(CLI_CMD_READMIT), ttl_ms,
         1, REDLOCK_TTL_MAX_MS),
    /* -w, -n, -k as flock(1) and timeout(1) spell them. */
    CUSTOM("wait", 'w', CMDS_LOCK_RUN, set_wait),
    FLAG("nonblock", 'n', CMDS_LOCK_RUN, nonblock),
    {"kill-after", 'k', OPT_MS32, CMD_BIT(CLI_CMD_RUN), F(kill_after_ms), 0, 3600000, NULL, NULL},
    CUSTOM("clock-policy", 0, CMDS_ALL, set_clock_policy),
    MS32("restart-guard-ms", CMDS_ALL, restart_guard_ms, 0, REDLOCK_TTL_MAX_MS),
    FLAG("no-restart-guard", 0, CMDS_ALL, no_restart_guard),
    U32("samples", 0, CMD_BIT(CLI_CMD_PING), samples, 1, 1000, "pings"),
    FLAG("fence", 0, CMDS_LOCK_RUN, fence),
    FLAG("no-pubsub", 0, CMDS_LOCK_RUN, no_pubsub),
    U32("conflict-exit-code", 'E', CMDS_LOCK_RUN, conflict_exit, 0, 255, "exit status"),
    U32("max-extends", 0, CMD_BIT(CLI_CMD_RUN), max_extends, 1, UINT32_MAX, "extensions"),
    MS32("max-lease", CMD_BIT(CLI_CMD_RUN), max_lease_ms, 1, UINT32_MAX),
    CUSTOM("command", 'c', CMD_BIT(CLI_CMD_RUN), set_command),
    CUSTOM("signal", 's', CMD_BIT(CLI_CMD_RUN), set_signal),
    FLAG("foreground", 0, CMD_BIT(CLI_CMD_RUN), foreground),
};

#define N_OPTS (sizeof(opt_defs) / sizeof(opt_defs[0]))

/* The parse as it goes: which options were given (the value, or "" for a
 * flag, for messages), and the words that are not options. */
struct parse_state {
    const char *given[N_OPTS];
    struct cli_positionals pos;
};

static void print_version(void)
{
    printf("%s %s (library %s, header %s; TLS %s)\n", CLI_NAME, REDLOCK_VERSION_STRING,
           redlock_version(), REDLOCK_VERSION_STRING, redlock_has_tls() ? "yes" : "no");
}

/* A bare number given to an option whose name ends in -ms. */
static int bare_ms_name(const char *name, const char *val)
{
    size_t n = strlen(name), v = strlen(val);

    return n > 3 && strcmp(name + n - 3, "-ms") == 0 && v > 0 &&
           strspn(val, "0123456789.") == v;
}

/* A number or duration option's value into its field. */
static int set_number(struct cli_opts *o, const struct opt_def *d, const char *val)
{
    char *field = (char *)o + d->field;
    uint64_t v;

    if (d->kind == OPT_U32) {
        if (cli_parse_u64(val, d->min, d->max, &v) < 0) {
            cli_usage_error("--%s '%s': expected a whole number of %s from %llu to %llu",
                            d->name, val, d->unit, (unsigned long long)d->min,
                            (unsigned long long)d->max);
            return -1;
        }
    } else if (bare_ms_name(d->name, val)) {
        /* --timeout-ms 50: the name says ms, the rule says seconds; which
         * one the user meant nobody can tell, so neither wins. */
        cli_usage_error("--%s '%s': give a unit, e.g. %sms (a bare number would be seconds)",
                        d->name, val, val);
        return -1;
    } else if (cli_parse_duration_ms(val, d->min, d->max, &v) < 0) {
        cli_usage_error("--%s '%s': expected a duration from %llu ms to %llu ms: "
                        CLI_DURATION_FORMS, d->name, val, (unsigned long long)d->min,
                        (unsigned long long)d->max);
        return -1;
    }
    {
        uint32_t w = (uint32_t)v;

        memcpy(field, &w, sizeof(w));
    }
    return 0;
}

/* Apply option @d (with @val, or NULL) to @o. Return: CLI_PARSE_OK, or
 * what parsing should return now. */
static int apply(struct cli_opts *o, struct parse_state *ps, const struct opt_def *d,
                 const char *val, void (*help)(void))
{
    size_t id = (size_t)(d - opt_defs);
    char *field = (char *)o + d->field;

    /* A value given twice is a script's mistake (two --ttl: which one did
     * it mean?), not a last-one-wins. Flags may repeat. */
    if (val != NULL && ps->given[id] != NULL) {
        if (d->kind == OPT_SECRET)
            cli_usage_error("--%s given twice: give it once", d->name);
        else
            cli_usage_error("--%s given twice ('%s', then '%s'): give it once", d->name,
                            ps->given[id], val);
        return CLI_PARSE_USAGE;
    }
    ps->given[id] = val != NULL ? val : "";
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
                        d->short_name && val == NULL ? (char[]){'-', d->short_name, 0} :
                        "--password");
        return CLI_PARSE_USAGE;
    default:
        return set_number(o, d, val) < 0 ? CLI_PARSE_USAGE : CLI_PARSE_OK;
    }
}

static int takes_value(const struct opt_def *d)
{
    return d->kind != OPT_FLAG && d->kind != OPT_COUNT && d->kind != OPT_HELP &&
           d->kind != OPT_VERSION && d->kind != OPT_REFUSED;
}

/* -q, -vv, -E75, -E 75, -c 'CMD': clustered short options, the value of the
 * last one taking the rest of the word or the next word. */
static int parse_short(struct cli_opts *o, struct parse_state *ps, int argc, char **argv,
                       int *i, void (*help)(void))
{
    for (const char *s = argv[*i] + 1; *s; s++) {
        const struct opt_def *d = NULL;
        const char *val = NULL;
        int r;

        for (size_t k = 0; k < N_OPTS && d == NULL; k++)
            if (opt_defs[k].short_name == *s)
                d = &opt_defs[k];
        if (d == NULL) {
            cli_usage_error("unknown option '-%c' (see --help)", *s);
            return CLI_PARSE_USAGE;
        }
        if (takes_value(d)) {
            if (s[1] != '\0') {
                val = s + 1;
            } else if (*i + 1 < argc) {
                val = argv[++*i];
            } else {
                cli_usage_error("-%c (--%s) needs a value (see --help)", *s, d->name);
                return CLI_PARSE_USAGE;
            }
        }
        r = apply(o, ps, d, val, help);
        if (r != CLI_PARSE_OK || val != NULL)
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

    for (size_t k = 0; k < N_OPTS && d == NULL; k++)
        if (strlen(opt_defs[k].name) == nlen && strncmp(opt_defs[k].name, a + 2, nlen) == 0)
            d = &opt_defs[k];
    if (d == NULL) {
        if (nlen > 40)
            cli_usage_error("unknown option '--%.20s...' (see --help)", a + 2);
        else
            cli_usage_error("unknown option '--%.*s' (see --help)", (int)nlen, a + 2);
        return CLI_PARSE_USAGE;
    }
    if (d->kind == OPT_REFUSED)
        return apply(o, ps, d, "", help);
    if (takes_value(d)) {
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
    return apply(o, ps, d, val, help);
}

/* '--' ends the options: what follows are positional words, so a RESOURCE
 * may begin with '-'. For run, a '--' after at least one resource
 * introduces CMD instead, also after the first '--'. Return: 0, -1 after a
 * message, or 1 when argv is used up. */
static int take_dashdash(struct cli_opts *o, struct parse_state *ps, int argc, char **argv,
                         int *i)
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
        cli_usage_error("missing COMMAND: use one of %s (see --help)", CMD_LIST);
        return -1;
    }
    for (size_t id = 0; id < N_OPTS; id++) {
        const struct opt_def *d = &opt_defs[id];

        if (ps->given[id] && d->cmds != CMDS_ALL && !(d->cmds & CMD_BIT(o->cmd))) {
            cli_usage_error("--%s does not apply to %s (only to %s)", d->name, o->cmd_name,
                            cli_cmds_text(d->cmds, b, sizeof(b)));
            return -1;
        }
    }
    return cli_args_check(o, &ps->pos);
}

/* Password: the file, else the environment. Never argv. */
static int load_password(struct cli_opts *o)
{
    const char *env = getenv("REDLOCK_PASSWORD");

    if (o->password_file != NULL) {
        int shared = 0;

        if (cli_read_secret_file("--password-file", o->password_file, CLI_PASSWORD_MAX,
                                 &o->password, &shared) < 0)
            return -1;
        if (shared)
            cli_warn_shared_secret("--password-file", o->password_file);
        return 0;
    }
    if (env != NULL && env[0] != '\0') {
        o->password = strdup(env);
        if (o->password == NULL) {
            cli_usage_error("out of memory while reading $REDLOCK_PASSWORD");
            return -1;
        }
    }
    return 0;
}

/* What a config file may set: the connection and the library's tuning,
 * the same for every command. Not a command's options (a --ttl there would
 * silently change every lock), nor the output (--json there would break
 * the scripts that read it), nor the password itself (give password-file). */
static int settable(const struct opt_def *d)
{
    return d->cmds == CMDS_ALL && d->kind != OPT_HELP && d->kind != OPT_VERSION &&
           d->kind != OPT_REFUSED && d->kind != OPT_COUNT && strcmp(d->name, "json") != 0 &&
           strcmp(d->name, "quiet") != 0 && strcmp(d->name, "config") != 0;
}

static const struct opt_def *find_opt(const char *name)
{
    for (size_t k = 0; k < N_OPTS; k++)
        if (strcmp(opt_defs[k].name, name) == 0)
            return &opt_defs[k];
    return NULL;
}

static int given(const struct parse_state *ps, const char *name)
{
    const struct opt_def *d = find_opt(name);

    return d != NULL && ps->given[d - opt_defs] != NULL;
}

static int env_set(const char *name)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0';
}

/* @val for option @d from @source (named in messages): a flag takes yes
 * or no, as a file and the environment can say either. */
static int apply_from(struct cli_opts *o, struct parse_state *ps, const struct opt_def *d,
                      const char *val, const char *source)
{
    int r = CLI_PARSE_OK;

    cli_msg_source = source;
    if (d->kind == OPT_FLAG) {
        int on = strcmp(val, "yes") == 0 || strcmp(val, "true") == 0 || strcmp(val, "on") == 0 ||
                 strcmp(val, "1") == 0;
        int off = strcmp(val, "no") == 0 || strcmp(val, "false") == 0 ||
                  strcmp(val, "off") == 0 || strcmp(val, "0") == 0;

        if (!on && !off) {
            cli_usage_error("--%s '%s': expected yes or no (true/false, on/off, 1/0)", d->name,
                            val);
            r = CLI_PARSE_USAGE;
        } else {
            /* Given either way: REDLOCK_TLS=no overrides a file's tls = yes. */
            ps->given[d - opt_defs] = val;
            if (on)
                *(int *)(void *)((char *)o + d->field) = 1;
        }
    } else {
        r = apply(o, ps, d, val, NULL);
    }
    cli_msg_source = NULL;
    return r;
}

/* Does a higher source already say what config line @d would? The masters
 * count as one setting whichever way they are given, and so does the
 * password. */
static int shadowed(const struct parse_state *ps, const struct opt_def *d)
{
    if (strcmp(d->name, "masters") == 0 || strcmp(d->name, "masters-file") == 0)
        return given(ps, "masters") || given(ps, "masters-file") || env_set("REDLOCK_MASTERS");
    if (strcmp(d->name, "password-file") == 0)
        return given(ps, "password-file") || env_set("REDLOCK_PASSWORD");
    return given(ps, d->name);
}

/* Below the command line, above the config file: every option a config
 * file may set, as REDLOCK_<NAME> (--cacert: REDLOCK_CACERT, --timeout-ms:
 * REDLOCK_TIMEOUT_MS). REDLOCK_MASTERS and REDLOCK_PASSWORD have their own
 * readers (masters.c, load_password()). */
static int layer_env(struct cli_opts *o, struct parse_state *ps)
{
    for (size_t k = 0; k < N_OPTS; k++) {
        const struct opt_def *d = &opt_defs[k];
        char name[64], source[66], *q;
        int r;

        if (!settable(d) || strcmp(d->name, "masters") == 0)
            continue;
        snprintf(name, sizeof(name), "REDLOCK_%s", d->name);
        for (q = name; *q; q++)
            *q = *q == '-' ? '_' : (char)toupper((unsigned char)*q);
        if (shadowed(ps, d) || !env_set(name))
            continue;
        snprintf(source, sizeof(source), "$%s", name);
        r = apply_from(o, ps, d, getenv(name), source);
        if (r != CLI_PARSE_OK)
            return r;
    }
    return CLI_PARSE_OK;
}

/* --config FILE, else the default file (if there is one): the lowest
 * source. Lines a higher source already set are skipped. */
static int layer_conf(struct cli_opts *o, struct parse_state *ps)
{
    char dflt[4096], source[4200];
    const char *seen[N_OPTS];
    int r = CLI_PARSE_OK;

    o->conf = calloc(1, sizeof(*o->conf));
    if (o->conf == NULL) {
        cli_usage_error("out of memory while reading the config file");
        return CLI_PARSE_USAGE;
    }
    if (cli_conf_load(o->config_file ? o->config_file : cli_conf_default_path(dflt, sizeof(dflt)),
                      o->config_file != NULL, o->conf) < 0)
        return CLI_PARSE_USAGE;
    memset(seen, 0, sizeof(seen));
    for (size_t i = 0; i < o->conf->n && r == CLI_PARSE_OK; i++) {
        const char *key = o->conf->e[i].key, *val = o->conf->e[i].val;
        const struct opt_def *d = find_opt(key);

        snprintf(source, sizeof(source), "%s:%u", o->conf->path, o->conf->e[i].line);
        cli_msg_source = source;
        if (d == NULL || !settable(d)) {
            cli_usage_error("'%s': %s: keys are the long names of the connection options "
                            "(masters, user, password-file, tls, cacert, prefix, timeout-ms...)",
                            key, d == NULL ? "unknown key" : "a command's or the output's option");
            r = CLI_PARSE_USAGE;
        } else if (seen[d - opt_defs] != NULL) {
            cli_usage_error("%s given twice: give it once", key);
            r = CLI_PARSE_USAGE;
        }
        cli_msg_source = NULL;
        if (r != CLI_PARSE_OK)
            break;
        seen[d - opt_defs] = val;
        if (shadowed(ps, d))
            continue;
        r = apply_from(o, ps, d, val, source);
        if (r == CLI_PARSE_OK && strcmp(d->name, "masters") == 0)
            o->masters_arg_from = o->conf->path;   /* a file: passwords allowed */
    }
    return r;
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
     * then the config file. */
    r = layer_env(o, &ps);
    if (r == CLI_PARSE_OK)
        r = layer_conf(o, &ps);
    if (r != CLI_PARSE_OK)
        return r;
    cli_quiet = o->quiet;
    cli_verbose = o->verbose;
    for (size_t id = 0; id < N_OPTS; id++) {
        if (ps.given[id] && strcmp(opt_defs[id].name, "ttl") == 0)
            o->ttl_set = 1;
        if (ps.given[id] && strcmp(opt_defs[id].name, "restart-guard-ms") == 0)
            o->restart_guard_ms_set = 1;
        if (ps.given[id] && strcmp(opt_defs[id].name, "conflict-exit-code") == 0)
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
    if (load_password(o) < 0 || cli_config_check(o) < 0)
        return CLI_PARSE_USAGE;
    return CLI_PARSE_OK;
}

void cli_opts_done(struct cli_opts *o)
{
    if (o->password != NULL) {
        explicit_bzero(o->password, strlen(o->password));
        free(o->password);
        o->password = NULL;
    }
    free(o->masters);
    o->masters = NULL;
    if (o->conf != NULL) {
        cli_conf_free(o->conf);
        free(o->conf);
        o->conf = NULL;
    }
}
