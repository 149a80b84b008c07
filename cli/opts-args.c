/* opts-args.c - redlock-cli's commands and their positional words:
 * RESOURCE..., unlock's and extend's TOKEN, run's CMD (after '--', or -c).
 *
 * The option table (opts.c) hands every word that is not an option here;
 * once argv is read, cli_args_check() turns the words into resources and a
 * token and checks what needs the whole command line.
 */
#include "opts-args.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int cmd;
    int max_pos; /* positional arguments after the command name, at most */
} cmd_defs[] = {
    { "lock", CLI_CMD_LOCK, REDLOCK_SET_MAX },         /* RESOURCE... */
    { "unlock", CLI_CMD_UNLOCK, REDLOCK_SET_MAX + 1 }, /* RESOURCE... TOKEN */
    { "extend", CLI_CMD_EXTEND, REDLOCK_SET_MAX + 1 }, /* RESOURCE... TOKEN */
    { "run", CLI_CMD_RUN, REDLOCK_SET_MAX },           /* RESOURCE... -- CMD */
    { "status", CLI_CMD_STATUS, 1 },                   /* RESOURCE */
    { "ping", CLI_CMD_PING, 0 },
    { "metrics", CLI_CMD_METRICS, 0 },
    { "declare-empty", CLI_CMD_DECLARE_EMPTY, 0 },
    { "readmit", CLI_CMD_READMIT, 0 },
};

#define N_CMDS (sizeof(cmd_defs) / sizeof(cmd_defs[0]))

/* "lock, extend and run": the commands in @cmds, for messages. */
const char *cli_cmds_text(unsigned cmds, char *buf, size_t size)
{
    size_t used = 0, left = (size_t)__builtin_popcount(cmds);

    buf[0] = '\0';
    for (size_t i = 0; i < N_CMDS && used < size; i++) {
        if (!(cmds & CMD_BIT(cmd_defs[i].cmd)))
            continue;
        left--;
        used += (size_t)snprintf(buf + used, size - used, "%s%s", cmd_defs[i].name,
                                 left > 1    ? ", "
                                 : left == 1 ? " and "
                                             : "");
    }
    return buf;
}

const char *cli_cmds_all(void)
{
    static char all[256];
    size_t used = 0;

    if (all[0] != '\0')
        return all;
    for (size_t i = 0; i < N_CMDS && used < sizeof(all); i++)
        used += (size_t)snprintf(all + used, sizeof(all) - used, "%s%s", i ? ", " : "",
                                 cmd_defs[i].name);
    return all;
}

static int lookup_cmd(const char *name)
{
    for (size_t i = 0; i < N_CMDS; i++)
        if (strcmp(cmd_defs[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Accept the next positional word @a for the command being parsed. */
int cli_args_take(struct cli_opts *o, struct cli_positionals *ps, const char *a)
{
    if (o->cmd == CLI_CMD_NONE) {
        int k = lookup_cmd(a);

        if (k < 0) {
            cli_usage_error("unknown command '%s': use one of %s (see --help)", a, cli_cmds_all());
            return -1;
        }
        o->cmd = cmd_defs[k].cmd;
        o->cmd_name = cmd_defs[k].name;
        return 0;
    }
    if (ps->n < cmd_defs[lookup_cmd(o->cmd_name)].max_pos) {
        ps->w[ps->n++] = a;
        return 0;
    }
    switch (o->cmd) {
    case CLI_CMD_RUN:
        cli_usage_error("run: more than %d resources (a set holds at most %d): put the command "
                        "after '--' (run RESOURCE... -- CMD [ARG...])",
                        REDLOCK_SET_MAX, REDLOCK_SET_MAX);
        break;
    case CLI_CMD_LOCK:
        cli_usage_error("lock: more than %d resources: a set holds at most %d", REDLOCK_SET_MAX,
                        REDLOCK_SET_MAX);
        break;
    case CLI_CMD_UNLOCK:
    case CLI_CMD_EXTEND:
        cli_usage_error("%s: more than %d resources before TOKEN: a set holds at most %d",
                        o->cmd_name, REDLOCK_SET_MAX, REDLOCK_SET_MAX);
        break;
    default: cli_usage_error("%s: unexpected argument '%s' (see --help)", o->cmd_name, a); break;
    }
    return -1;
}

/* Member @i of @n_res, @name: not empty, not too long, not seen before. */
static int check_resource(const struct cli_opts *o, const struct cli_positionals *ps, int i,
                          int n_res)
{
    const char *name = ps->w[i];
    size_t len = strlen(name);
    char b[64];

    if (len == 0) {
        if (n_res == 1)
            cli_usage_error("%s: RESOURCE is empty: give a name, e.g. 'nightly-backup'",
                            o->cmd_name);
        else
            cli_usage_error("%s: resource %d of %d is empty: give a name, e.g. "
                            "'nightly-backup'",
                            o->cmd_name, i + 1, n_res);
        return -1;
    }
    if (len > REDLOCK_RESOURCE_MAX) {
        if (n_res == 1)
            cli_usage_error("%s: RESOURCE is %zu bytes: keep it to %d", o->cmd_name, len,
                            REDLOCK_RESOURCE_MAX);
        else
            cli_usage_error("%s: resource %d of %d is %zu bytes: keep it to %d", o->cmd_name, i + 1,
                            n_res, len, REDLOCK_RESOURCE_MAX);
        return -1;
    }
    for (int k = 0; k < i; k++) {
        if (strcmp(ps->w[k], name) == 0) {
            cli_usage_error("%s: resource '%s' is given twice: name each member of a set once",
                            o->cmd_name, cli_printable(name, len, b, sizeof(b)));
            return -1;
        }
    }
    /* CMD gets the set as one name per line: a name with a newline in it
     * could not be told apart there. */
    if (o->cmd == CLI_CMD_RUN && n_res > 1 && strchr(name, '\n')) {
        cli_usage_error("run: resource '%s' contains a newline, which $REDLOCK_RESOURCES (one "
                        "name per line) cannot carry: rename it, or run it alone",
                        cli_printable(name, len, b, sizeof(b)));
        return -1;
    }
    return 0;
}

/* Move the positional words into @o: resources, and for unlock/extend the
 * last word as TOKEN. Return: 0, or -1 after a usage message. */
static int assign_positionals(struct cli_opts *o, const struct cli_positionals *ps)
{
    static const char *const synopsis[] = {
        [CLI_CMD_LOCK] = "lock RESOURCE...",
        [CLI_CMD_STATUS] = "status RESOURCE",
        [CLI_CMD_RUN] = "run RESOURCE... -- CMD [ARG...]",
    };
    int n_res = ps->n;

    if (o->cmd == CLI_CMD_PING || o->cmd == CLI_CMD_DECLARE_EMPTY || o->cmd == CLI_CMD_READMIT ||
        o->cmd == CLI_CMD_METRICS)
        return 0;
    if (o->cmd == CLI_CMD_UNLOCK || o->cmd == CLI_CMD_EXTEND) {
        if (ps->n < 2) {
            cli_usage_error("%s: missing %s (%s RESOURCE... TOKEN%s: the token is the last "
                            "word)",
                            o->cmd_name, ps->n == 0 ? "RESOURCE and TOKEN" : "TOKEN", o->cmd_name,
                            o->cmd == CLI_CMD_EXTEND ? " --ttl MS" : "");
            return -1;
        }
        o->token = ps->w[ps->n - 1];
        n_res = ps->n - 1;
    } else if (n_res == 0) {
        cli_usage_error("%s: missing RESOURCE (%s)", o->cmd_name, synopsis[o->cmd]);
        return -1;
    }
    for (int i = 0; i < n_res; i++) {
        if (check_resource(o, ps, i, n_res) < 0)
            return -1;
        o->set[i].name = ps->w[i];
        o->set[i].len = strlen(ps->w[i]);
    }
    o->n_resources = (size_t)n_res;
    o->resource = ps->w[0];
    o->resource_len = o->set[0].len;
    return 0;
}

static int check_run_command(struct cli_opts *o)
{
    if (o->shell_command) {
        if (o->run_argv) {
            cli_usage_error("run: give CMD after '--' or -c STRING, not both");
            return -1;
        }
        o->shell_argv[0] = (char *)CLI_SHELL;
        o->shell_argv[1] = (char *)"-c";
        o->shell_argv[2] = (char *)o->shell_command;
        o->shell_argv[3] = NULL;
        o->run_argv = o->shell_argv;
        return 0;
    }
    if (!o->run_argv) {
        cli_usage_error("run: missing '--' before CMD (or -c STRING): every word before it "
                        "names a resource (run RESOURCE... -- CMD [ARG...])");
        return -1;
    }
    if (!o->run_argv[0]) {
        cli_usage_error("run: missing CMD after '--' (run RESOURCE... -- CMD [ARG...])");
        return -1;
    }
    if (o->run_argv[0][0] == '\0') {
        cli_usage_error("run: CMD is an empty string: give a program name or path");
        return -1;
    }
    return 0;
}

/* The library's rule for a token (redlock_lock_new() would refuse it
 * otherwise, after the masters were contacted). */
static int check_token(const struct cli_opts *o)
{
    redlock_error err;

    memset(&err, 0, sizeof(err));
    if (redlock_token_check(o->token, &err) == 0)
        return 0;
    cli_usage_error("%s: TOKEN: %s", o->cmd_name, err.msg);
    return -1;
}

/* What needs the whole command: resources and TOKEN, run's CMD, the ttl. */
int cli_args_check(struct cli_opts *o, const struct cli_positionals *ps)
{
    if (assign_positionals(o, ps) < 0)
        return -1;
    if (o->cmd == CLI_CMD_EXTEND && !o->ttl_set) {
        cli_usage_error("extend: missing --ttl MS (the new time to live, from now)");
        return -1;
    }
    if (o->cmd == CLI_CMD_RUN && check_run_command(o) < 0)
        return -1;
    /* `t=$(redlock-cli lock -E 0 r) && work` would work without a lock. */
    if (o->cmd == CLI_CMD_LOCK && o->conflict_exit == 0) {
        cli_usage_error("lock: --conflict-exit-code 0 would make a lock held elsewhere look "
                        "taken: give 1 to 255 (0 is for run, which then skips CMD)");
        return -1;
    }
    if (o->cmd == CLI_CMD_METRICS && o->json) {
        cli_usage_error("metrics: --json: the metrics are Prometheus text; `ping --json` has the "
                        "masters as JSON");
        return -1;
    }
    if (o->token && check_token(o) < 0)
        return -1;
    if (o->ttl_set || o->cmd == CLI_CMD_LOCK || o->cmd == CLI_CMD_RUN)
        return cli_check_ttl_margin(o);
    return 0;
}
