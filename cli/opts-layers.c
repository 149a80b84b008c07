/* opts-layers.c - what redlock-cli's command line leaves unsaid: every
 * connection and tuning option from $REDLOCK_<NAME>, then from the config
 * file (conf.c reads its lines; here is what a line may set), and the
 * password from --password-file or $REDLOCK_PASSWORD. In one file so that
 * the order of the sources (opts-parts.h) is decided in one place.
 */
#include "opts-parts.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "conf.h"

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

/* Switches that turn a safety off count only on the command line, where
 * whoever runs the command sees them. A variable is inherited by every
 * process below the one that set it (run's CMD, a script's children), and
 * a file is read by every command: either would switch the memory guard
 * off for commands nobody meant, silently. So they are refused there, not
 * ignored: ignoring would leave the user believing the guard is off. */
static int argv_only(const struct opt_def *d)
{
    return strcmp(d->name, "no-restart-guard") == 0 || strcmp(d->name, "force") == 0;
}

/* The refusal of @d from @source ("$NAME" or "FILE:LINE"); @rest says
 * where that is, how to take it out, and whom it would reach. */
static int refuse_argv_only(const struct opt_def *d, const char *source, const char *rest)
{
    cli_msg_source = source;
    cli_usage_error("--%s must be given on the command line, %s", d->name, rest);
    cli_msg_source = NULL;
    return CLI_PARSE_USAGE;
}

static int given(const struct parse_state *ps, const char *name)
{
    const struct opt_def *d = cli_opt_find(name);

    return d && ps->given[d - cli_opt_defs];
}

static int env_set(const char *name)
{
    const char *v = getenv(name);

    return v && v[0] != '\0';
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
        int off = strcmp(val, "no") == 0 || strcmp(val, "false") == 0 || strcmp(val, "off") == 0 ||
                  strcmp(val, "0") == 0;

        if (!on && !off) {
            cli_usage_error("--%s '%s': expected yes or no (true/false, on/off, 1/0)", d->name,
                            val);
            r = CLI_PARSE_USAGE;
        } else {
            /* Given either way: REDLOCK_TLS=no overrides a file's tls = yes. */
            ps->given[d - cli_opt_defs] = val;
            if (on)
                *(int *)(void *)((char *)o + d->field) = 1;
        }
    } else {
        r = cli_opt_apply(o, ps, d, val, NULL);
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

/* REDLOCK_<NAME> of option @d: --cacert is REDLOCK_CACERT, --timeout-ms
 * REDLOCK_TIMEOUT_MS. */
static void env_name(const struct opt_def *d, char *name, size_t size)
{
    snprintf(name, size, "REDLOCK_%s", d->name);
    for (char *q = name; *q; q++)
        *q = *q == '-' ? '_' : (char)toupper((unsigned char)*q);
}

/* Below the command line, above the config file: every option a config
 * file may set, as REDLOCK_<NAME>. REDLOCK_MASTERS and REDLOCK_PASSWORD
 * have their own readers (masters.c, cli_load_password() below). */
int cli_layer_env(struct cli_opts *o, struct parse_state *ps)
{
    for (size_t k = 0; k < N_OPTS; k++) {
        const struct opt_def *d = &cli_opt_defs[k];
        char name[64], source[66];
        int r;

        if (!settable(d) || strcmp(d->name, "masters") == 0)
            continue;
        env_name(d, name, sizeof(name));
        snprintf(source, sizeof(source), "$%s", name);
        if (argv_only(d) && env_set(name))
            return refuse_argv_only(d, source,
                                    "not in the environment: unset the variable (it would turn "
                                    "the memory guard off for every process that inherits it)");
        if (shadowed(ps, d) || !env_set(name))
            continue;
        r = apply_from(o, ps, d, getenv(name), source);
        if (r != CLI_PARSE_OK)
            return r;
    }
    return CLI_PARSE_OK;
}

/* --config FILE, else the default file (if there is one): the lowest
 * source. Lines a higher source already set are skipped. */
int cli_layer_conf(struct cli_opts *o, struct parse_state *ps)
{
    char dflt[4096], source[4200];
    const char *seen[N_OPTS];
    int r = CLI_PARSE_OK;

    o->conf = calloc(1, sizeof(*o->conf));
    if (!o->conf) {
        cli_usage_error("out of memory while reading the config file");
        return CLI_PARSE_USAGE;
    }
    if (cli_conf_load(o->config_file ? o->config_file : cli_conf_default_path(dflt, sizeof(dflt)),
                      o->config_file != NULL, o->conf) < 0)
        return CLI_PARSE_USAGE;
    memset(seen, 0, sizeof(seen));
    for (size_t i = 0; i < o->conf->n && r == CLI_PARSE_OK; i++) {
        const char *key = o->conf->e[i].key, *val = o->conf->e[i].val;
        const struct opt_def *d = cli_opt_find(key);

        snprintf(source, sizeof(source), "%s:%u", o->conf->path, o->conf->e[i].line);
        if (d && argv_only(d))
            return refuse_argv_only(d, source,
                                    "not in a config file: delete the line (it would turn the "
                                    "memory guard off for every command that reads the file)");
        cli_msg_source = source;
        if (!d || !settable(d)) {
            cli_usage_error("'%s': %s: keys are the long names of the connection options "
                            "(masters, user, password-file, tls, cacert, prefix, timeout-ms...)",
                            key, !d ? "unknown key" : "a command's or the output's option");
            r = CLI_PARSE_USAGE;
        } else if (seen[d - cli_opt_defs]) {
            cli_usage_error("%s given twice: give it once", key);
            r = CLI_PARSE_USAGE;
        }
        cli_msg_source = NULL;
        if (r != CLI_PARSE_OK)
            break;
        seen[d - cli_opt_defs] = val;
        if (shadowed(ps, d))
            continue;
        r = apply_from(o, ps, d, val, source);
        if (r == CLI_PARSE_OK && strcmp(d->name, "masters") == 0)
            o->masters_arg_from = o->conf->path; /* a file: passwords allowed */
    }
    return r;
}

/* Password: the file, else the environment. Never argv. */
int cli_load_password(struct cli_opts *o)
{
    const char *env = getenv("REDLOCK_PASSWORD");

    if (o->password_file) {
        int shared = 0;

        if (cli_read_secret_file("--password-file", o->password_file, CLI_PASSWORD_MAX,
                                 &o->password, &shared) < 0)
            return -1;
        if (shared)
            cli_warn_shared_secret("--password-file", o->password_file);
        return 0;
    }
    if (env && env[0] != '\0') {
        o->password = strdup(env);
        if (!o->password) {
            cli_usage_error("out of memory while reading $REDLOCK_PASSWORD");
            return -1;
        }
    }
    return 0;
}

/* One entry of o->run_env: "@name=@val", or "@name" alone (@val NULL). */
static int export_one(char **env, size_t *n, const char *name, const char *val)
{
    size_t len = strlen(name) + (val ? 1 + strlen(val) : 0) + 1;

    env[*n] = malloc(len);
    if (!env[*n])
        return -1;
    snprintf(env[*n], len, val ? "%s=%s" : "%s", name, val ? val : "");
    (*n)++;
    return 0;
}

/* The options that name a file or a directory: CMD gets them absolute, so
 * that a CMD that changes directory still finds them. */
static int names_path(const struct opt_def *d)
{
    static const char *const paths[] = { "masters-file", "password-file", "cacert",
                                         "cacertdir",    "cert",          "key" };

    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        if (strcmp(d->name, paths[i]) == 0)
            return 1;
    return 0;
}

/* "@name=@val", @val made absolute (realpath(3); the working directory in
 * front if it names nothing that exists now). */
static int export_path(char **env, size_t *n, const char *name, const char *val)
{
    char cwd[4096], *abs = NULL;
    int r;

    if (!val || val[0] == '/')
        return export_one(env, n, name, val);
    abs = realpath(val, NULL);
    if (!abs && getcwd(cwd, sizeof(cwd)) && asprintf(&abs, "%s/%s", cwd, val) < 0)
        return -1;
    r = export_one(env, n, name, abs ? abs : val);
    free(abs);
    return r;
}

int cli_layer_export(struct cli_opts *o, const struct parse_state *ps)
{
    /* At most every settable option, REDLOCK_MASTERS and REDLOCK_PASSWORD,
     * and the terminating NULL. */
    char **env = calloc(N_OPTS + 3, sizeof(char *));
    size_t n = 0;
    int secret = 0, err = 0;

    if (!env)
        goto oom;
    o->run_env = env;
    for (size_t k = 0; k < N_OPTS && !err; k++) {
        const struct opt_def *d = &cli_opt_defs[k];
        const char *val = ps->given[k];
        char name[64];

        if (!settable(d) || strcmp(d->name, "masters") == 0 || strcmp(d->name, "masters-file") == 0)
            continue;
        env_name(d, name, sizeof(name));
        /* A flag as a value: said no by the environment, or yes by any source.
         * A switch from argv only is dropped (a nested redlock-cli would
         * refuse it anyway): CMD's redlock-cli runs with the guard on.
         * --metrics-file is this run's file: a nested `run` writing it
         * too would overwrite our metrics with its own. */
        if (argv_only(d) || strcmp(d->name, "metrics-file") == 0)
            val = NULL;
        else if (val && d->kind == OPT_FLAG)
            val = *(const int *)(const void *)((const char *)o + d->field) ? "yes" : "no";
        err = names_path(d) ? export_path(env, &n, name, val) : export_one(env, &n, name, val);
    }
    if (err)
        goto oom;
    /* The masters: the list itself unless it carries a password that did
     * not come from the environment; then the file it came from, if any. */
    if (redlock_masters_check(o->masters, NULL, &secret, NULL) != 0)
        secret = 1; /* cannot happen (cli_load_masters() checked it): keep it out */
    if (!secret || (!o->masters_arg && !o->masters_file))
        err = export_one(env, &n, "REDLOCK_MASTERS", o->masters) < 0 ||
              export_one(env, &n, "REDLOCK_MASTERS_FILE", NULL) < 0;
    else
        err = export_one(env, &n, "REDLOCK_MASTERS", NULL) < 0 ||
              export_path(env, &n, "REDLOCK_MASTERS_FILE", o->masters_file) < 0;
    /* A password file outweighed $REDLOCK_PASSWORD: CMD gets the file's
     * path (above) and not the variable. Else the variable stays as it is. */
    if (!err && o->password_file)
        err = export_one(env, &n, "REDLOCK_PASSWORD", NULL) < 0;
    if (err)
        goto oom;
    return 0;
oom:
    cli_usage_error("out of memory while preparing CMD's environment");
    return -1;
}
