/* opts.c - redlock-cli's command line parser.
 *
 * Hand-written rather than getopt_long() so that every failure can say, in
 * one line, what was wrong and how to fix it, and so that options may come
 * before or after the command, as users type them. Nothing here talks to a
 * master: parsing ends with a validated struct cli_opts.
 */
#include "opts.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define PASSWORD_MAX 4096   /* bytes; Redis has no limit, but a file this big is a mistake */

enum opt_id {
    OPT_MASTERS,
    OPT_TIMEOUT,
    OPT_CONNECT_TIMEOUT,
    OPT_RETRY,
    OPT_RETRY_DELAY,
    OPT_DRIFT,
    OPT_PREFIX,
    OPT_USER,
    OPT_PASSWORD_FILE,
    OPT_PASSWORD,           /* refused: a password in argv is visible to ps(1) */
    OPT_JSON,
    OPT_QUIET,
    OPT_VERBOSE,
    OPT_HELP,
    OPT_VERSION,
    OPT_TTL,
    OPT_WAIT,
    OPT_KILL_AFTER,
    OPT_CLOCK_POLICY,
    OPT_RESTART_GUARD_MS,
    OPT_NO_RESTART_GUARD,
    OPT_SAMPLES,
    OPT_FENCE,
    OPT_NO_PUBSUB,
    OPT_MAX_EXTENDS,
    OPT_MAX_LEASE,
    OPT_COUNT
};

#define CMD_BIT(c) (1u << (c))
#define CMDS_ALL 0u

struct opt_def {
    const char *name;       /* without the leading "--" */
    int has_arg;
    unsigned cmds;          /* commands that accept it; CMDS_ALL = global */
    const char *cmds_text;  /* for the error message */
};

static const struct opt_def opt_defs[OPT_COUNT] = {
    [OPT_MASTERS] = {"masters", 1, CMDS_ALL, NULL},
    [OPT_TIMEOUT] = {"timeout-ms", 1, CMDS_ALL, NULL},
    [OPT_CONNECT_TIMEOUT] = {"connect-timeout-ms", 1, CMDS_ALL, NULL},
    [OPT_RETRY] = {"retry", 1, CMDS_ALL, NULL},
    [OPT_RETRY_DELAY] = {"retry-delay", 1, CMDS_ALL, NULL},
    [OPT_DRIFT] = {"drift-factor", 1, CMDS_ALL, NULL},
    [OPT_PREFIX] = {"prefix", 1, CMDS_ALL, NULL},
    [OPT_USER] = {"user", 1, CMDS_ALL, NULL},
    [OPT_PASSWORD_FILE] = {"password-file", 1, CMDS_ALL, NULL},
    [OPT_PASSWORD] = {"password", 0, CMDS_ALL, NULL},
    [OPT_JSON] = {"json", 0, CMDS_ALL, NULL},
    [OPT_QUIET] = {"quiet", 0, CMDS_ALL, NULL},
    [OPT_VERBOSE] = {"verbose", 0, CMDS_ALL, NULL},
    [OPT_HELP] = {"help", 0, CMDS_ALL, NULL},
    [OPT_VERSION] = {"version", 0, CMDS_ALL, NULL},
    [OPT_TTL] = {"ttl", 1, CMD_BIT(CLI_CMD_LOCK) | CMD_BIT(CLI_CMD_EXTEND) | CMD_BIT(CLI_CMD_RUN),
                 "lock, extend and run"},
    [OPT_WAIT] = {"wait", 1, CMD_BIT(CLI_CMD_LOCK) | CMD_BIT(CLI_CMD_RUN), "lock and run"},
    [OPT_KILL_AFTER] = {"kill-after", 1, CMD_BIT(CLI_CMD_RUN), "run"},
    [OPT_CLOCK_POLICY] = {"clock-policy", 1, CMDS_ALL, NULL},
    [OPT_RESTART_GUARD_MS] = {"restart-guard-ms", 1, CMDS_ALL, NULL},
    [OPT_NO_RESTART_GUARD] = {"no-restart-guard", 0, CMDS_ALL, NULL},
    [OPT_SAMPLES] = {"samples", 1, CMD_BIT(CLI_CMD_PING), "ping"},
    [OPT_FENCE] = {"fence", 0, CMD_BIT(CLI_CMD_LOCK) | CMD_BIT(CLI_CMD_RUN), "lock and run"},
    [OPT_NO_PUBSUB] = {"no-pubsub", 0, CMD_BIT(CLI_CMD_LOCK) | CMD_BIT(CLI_CMD_RUN),
                       "lock and run"},
    [OPT_MAX_EXTENDS] = {"max-extends", 1, CMD_BIT(CLI_CMD_RUN), "run"},
    [OPT_MAX_LEASE] = {"max-lease", 1, CMD_BIT(CLI_CMD_RUN), "run"},
};

static const struct {
    const char *name;
    int cmd;
    int max_pos;            /* positional arguments after the command name, at most */
} cmd_defs[] = {
    {"lock", CLI_CMD_LOCK, REDLOCK_SET_MAX},            /* RESOURCE... */
    {"unlock", CLI_CMD_UNLOCK, REDLOCK_SET_MAX + 1},    /* RESOURCE... TOKEN */
    {"extend", CLI_CMD_EXTEND, REDLOCK_SET_MAX + 1},    /* RESOURCE... TOKEN */
    {"run", CLI_CMD_RUN, REDLOCK_SET_MAX},              /* RESOURCE... -- CMD */
    {"status", CLI_CMD_STATUS, 1},                      /* RESOURCE */
    {"ping", CLI_CMD_PING, 0},
};

/* The positional words after the command name, sorted out once all are in:
 * unlock and extend take the last one as TOKEN, as cp(1) takes its last
 * word as the destination, so `unlock R TOKEN` reads as it always did. */
struct positionals {
    const char *w[REDLOCK_SET_MAX + 1];
    int n;
};

#define CMD_LIST "lock, unlock, extend, run, status, ping"

int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
    char *end;
    unsigned long long v;

    /* strtoull() accepts leading spaces, a sign (and wraps "-1" to
     * ULLONG_MAX): insist on a digit first so neither gets through. */
    if (s == NULL || !isdigit((unsigned char)s[0]))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *ret = v;
    return 0;
}

static int parse_u32_opt(const char *opt, const char *val, uint32_t min, uint32_t max,
                         const char *unit, uint32_t *ret)
{
    uint64_t v;

    if (cli_parse_u64(val, min, max, &v) < 0) {
        cli_usage_error("%s '%s': expected a whole number of %s from %u to %u", opt, val, unit,
                        (unsigned)min, (unsigned)max);
        return -1;
    }
    *ret = (uint32_t)v;
    return 0;
}

static int parse_drift(const char *val, double *ret)
{
    char *end;
    double f;

    if (val[0] == '\0' || isspace((unsigned char)val[0]) || val[0] == '+' || val[0] == '-')
        goto bad;
    errno = 0;
    f = strtod(val, &end);
    if (errno != 0 || *end != '\0' || !isfinite(f) || f < 0.0 || f >= 1.0)
        goto bad;
    *ret = f;
    return 0;
bad:
    cli_usage_error("--drift-factor '%s': expected a fraction of the ttl, 0 <= F < 1 (e.g. 0.01)",
                    val);
    return -1;
}

static int parse_clock_policy(const char *val, int *ret)
{
    if (strcmp(val, "warn") == 0) {
        *ret = REDLOCK_CLOCK_WARN;
    } else if (strcmp(val, "exclude") == 0) {
        *ret = REDLOCK_CLOCK_EXCLUDE;
    } else if (strcmp(val, "off") == 0) {
        *ret = REDLOCK_CLOCK_OFF;
    } else {
        cli_usage_error("--clock-policy '%s': expected warn (log it), exclude (do not count "
                        "the master toward a quorum) or off (no clock probes)", val);
        return -1;
    }
    return 0;
}

/* Append @len bytes of @s to the growing string *@buf. */
static int buf_append(char **buf, size_t *used, size_t *cap, const char *s, size_t len)
{
    if (*used + len + 1 > *cap) {
        size_t ncap = (*cap ? *cap * 2 : 128);
        char *n;

        while (ncap < *used + len + 1)
            ncap *= 2;
        n = realloc(*buf, ncap);
        if (n == NULL)
            return -1;
        *buf = n;
        *cap = ncap;
    }
    memcpy(*buf + *used, s, len);
    *used += len;
    (*buf)[*used] = '\0';
    return 0;
}

struct master_entry {
    const char *host;   /* into the scratch copy */
    size_t host_len;
    int bracketed;      /* IPv6 written as [addr] */
    unsigned port;
};

/* Parse "host:port,[v6]:port,..." from @src (named @from in messages) into
 * a normalised list: spaces around entries dropped, ports in plain decimal.
 * Duplicates are refused here, by name: the library refuses them again after
 * resolving, which also catches 127.0.0.1 vs localhost. */
static int parse_masters(struct cli_opts *o, const char *src, const char *from)
{
    struct master_entry ents[REDLOCK_MAX_MASTERS];
    char *scratch = strdup(src);
    char *norm = NULL, *p, *next;
    size_t n = 0, used = 0, cap = 0;
    char portbuf[16];

    if (scratch == NULL)
        goto oom;
    for (p = scratch; p != NULL; p = next) {
        char *colon, *end = strchr(p, ',');
        uint64_t port;
        struct master_entry *e;

        next = end ? end + 1 : NULL;
        if (end)
            *end = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        end = p + strlen(p);
        while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (*p == '\0') {
            if (n == 0 && next == NULL)
                cli_usage_error("%s is empty: give HOST:PORT[,HOST:PORT...]", from);
            else
                cli_usage_error("%s: empty entry %zu: remove the extra comma", from, n + 1);
            goto fail;
        }
        if (n == REDLOCK_MAX_MASTERS) {
            cli_usage_error("%s: more than %d masters: give at most %d", from,
                            REDLOCK_MAX_MASTERS, REDLOCK_MAX_MASTERS);
            goto fail;
        }
        e = &ents[n];
        if (*p == '[') {
            char *rb = strchr(p, ']');

            if (rb == NULL || rb == p + 1 || rb[1] != ':') {
                cli_usage_error("%s: entry %zu '%s' is not [IPV6]:PORT (e.g. [::1]:7000)", from,
                                n + 1, p);
                goto fail;
            }
            e->host = p + 1;
            e->host_len = (size_t)(rb - p - 1);
            e->bracketed = 1;
            colon = rb + 1;
        } else {
            colon = strrchr(p, ':');
            if (colon == NULL || colon == p) {
                cli_usage_error("%s: entry %zu '%s' is not HOST:PORT (e.g. 127.0.0.1:7000)", from,
                                n + 1, p);
                goto fail;
            }
            if (memchr(p, ':', (size_t)(colon - p)) != NULL) {
                cli_usage_error("%s: entry %zu '%s': write IPv6 addresses as [ADDR]:PORT", from,
                                n + 1, p);
                goto fail;
            }
            e->host = p;
            e->host_len = (size_t)(colon - p);
            e->bracketed = 0;
        }
        for (size_t k = 0; k < e->host_len; k++) {
            if (isspace((unsigned char)e->host[k]) || !isprint((unsigned char)e->host[k])) {
                cli_usage_error("%s: entry %zu '%s': the host name contains a space or control "
                                "character", from, n + 1, p);
                goto fail;
            }
        }
        if (cli_parse_u64(colon + 1, 1, 65535, &port) < 0) {
            cli_usage_error("%s: entry %zu '%s': the port must be a number from 1 to 65535", from,
                            n + 1, p);
            goto fail;
        }
        e->port = (unsigned)port;
        for (size_t k = 0; k < n; k++) {
            if (ents[k].port == e->port && ents[k].host_len == e->host_len &&
                strncasecmp(ents[k].host, e->host, e->host_len) == 0) {
                cli_usage_error("%s: master %s is listed twice (entries %zu and %zu): list each "
                                "master once", from, p, k + 1, n + 1);
                goto fail;
            }
        }
        if (n > 0 && buf_append(&norm, &used, &cap, ",", 1) < 0)
            goto oom;
        if ((e->bracketed && buf_append(&norm, &used, &cap, "[", 1) < 0) ||
            buf_append(&norm, &used, &cap, e->host, e->host_len) < 0 ||
            (e->bracketed && buf_append(&norm, &used, &cap, "]", 1) < 0))
            goto oom;
        snprintf(portbuf, sizeof(portbuf), ":%u", e->port);
        if (buf_append(&norm, &used, &cap, portbuf, strlen(portbuf)) < 0)
            goto oom;
        n++;
    }
    free(scratch);
    free(o->masters);
    o->masters = norm;
    o->n_masters = n;
    o->masters_from = from;
    return 0;
oom:
    cli_usage_error("out of memory while parsing %s", from);
fail:
    free(scratch);
    free(norm);
    return -1;
}

/* Read the password from @path: the whole file, minus one trailing newline.
 * The message never includes the content. */
static int read_password_file(struct cli_opts *o, const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    struct stat st;
    ssize_t r;
    int fd, err;

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        err = errno;
        cli_usage_error("--password-file '%s': %s: give a readable file", path, strerror(err));
        return -1;
    }
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) &&
        !S_ISCHR(st.st_mode)) {
        cli_usage_error("--password-file '%s': not a regular file: give a file holding the "
                        "password", path);
        goto fail;
    }
    buf = malloc(PASSWORD_MAX + 2);
    if (buf == NULL) {
        cli_usage_error("out of memory while reading --password-file");
        goto fail;
    }
    for (;;) {
        r = read(fd, buf + len, PASSWORD_MAX + 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            err = errno;
            cli_usage_error("--password-file '%s': %s: give a readable file", path,
                            strerror(err));
            goto fail;
        }
        if (r == 0)
            break;
        len += (size_t)r;
        if (len > PASSWORD_MAX) {
            cli_usage_error("--password-file '%s': longer than %d bytes: the file should hold "
                            "only the password", path, PASSWORD_MAX);
            goto fail;
        }
    }
    close(fd);
    fd = -1;
    buf[len] = '\0';
    if (len > 0 && buf[len - 1] == '\n')
        buf[--len] = '\0';
    if (len > 0 && buf[len - 1] == '\r')
        buf[--len] = '\0';
    if (len == 0) {
        cli_usage_error("--password-file '%s' is empty: put the password in it, or drop the "
                        "option", path);
        goto fail;
    }
    if (strlen(buf) != len) {
        cli_usage_error("--password-file '%s' contains a NUL byte: the file should hold only "
                        "the password", path);
        goto fail;
    }
    if (S_ISREG(st.st_mode) && (st.st_mode & 0077) != 0)
        cli_warn("warning: password file '%s' is readable by others (chmod 600 '%s')", path,
                 path);
    o->password = buf;
    return 0;
fail:
    if (buf != NULL) {
        explicit_bzero(buf, PASSWORD_MAX + 2);
        free(buf);
    }
    if (fd >= 0)
        close(fd);
    return -1;
}

static int lookup_cmd(const char *name)
{
    for (size_t i = 0; i < sizeof(cmd_defs) / sizeof(cmd_defs[0]); i++)
        if (strcmp(cmd_defs[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Accept the next positional word @a for the command being parsed. */
static int take_positional(struct cli_opts *o, struct positionals *pos, const char *a)
{
    int max;

    if (o->cmd == CLI_CMD_NONE) {
        int k = lookup_cmd(a);

        if (k < 0) {
            cli_usage_error("unknown command '%s': use one of %s (see --help)", a, CMD_LIST);
            return -1;
        }
        o->cmd = cmd_defs[k].cmd;
        o->cmd_name = cmd_defs[k].name;
        return 0;
    }
    max = cmd_defs[lookup_cmd(o->cmd_name)].max_pos;
    if (pos->n >= max) {
        switch (o->cmd) {
        case CLI_CMD_RUN:
            cli_usage_error("run: more than %d resources (a set holds at most %d): put the "
                            "command after '--' (run RESOURCE... -- CMD [ARG...])",
                            REDLOCK_SET_MAX, REDLOCK_SET_MAX);
            break;
        case CLI_CMD_LOCK:
            cli_usage_error("lock: more than %d resources: a set holds at most %d",
                            REDLOCK_SET_MAX, REDLOCK_SET_MAX);
            break;
        case CLI_CMD_UNLOCK:
        case CLI_CMD_EXTEND:
            cli_usage_error("%s: more than %d resources before TOKEN: a set holds at most %d",
                            o->cmd_name, REDLOCK_SET_MAX, REDLOCK_SET_MAX);
            break;
        default:
            cli_usage_error("%s: unexpected argument '%s' (see --help)", o->cmd_name, a);
            break;
        }
        return -1;
    }
    pos->w[pos->n++] = a;
    return 0;
}

/* Move the positional words into @o: resources, and for unlock/extend the
 * last word as TOKEN. Return: 0, or -1 after a usage message. */
static int assign_positionals(struct cli_opts *o, const struct positionals *pos)
{
    const char *syn;
    int n_res = pos->n;

    switch (o->cmd) {
    case CLI_CMD_LOCK:
        syn = "lock RESOURCE...";
        break;
    case CLI_CMD_STATUS:
        syn = "status RESOURCE";
        break;
    case CLI_CMD_UNLOCK:
    case CLI_CMD_EXTEND:
        if (pos->n < 2) {
            cli_usage_error("%s: missing %s (%s RESOURCE... TOKEN%s: the token is the last "
                            "word)", o->cmd_name, pos->n == 0 ? "RESOURCE and TOKEN" : "TOKEN",
                            o->cmd_name, o->cmd == CLI_CMD_EXTEND ? " --ttl MS" : "");
            return -1;
        }
        o->token = pos->w[pos->n - 1];
        n_res = pos->n - 1;
        syn = NULL;
        break;
    case CLI_CMD_RUN:
        syn = "run RESOURCE... -- CMD [ARG...]";
        break;
    default:
        return 0;
    }
    if (n_res == 0) {
        cli_usage_error("%s: missing RESOURCE (%s)", o->cmd_name, syn);
        return -1;
    }
    for (int i = 0; i < n_res; i++) {
        size_t len = strlen(pos->w[i]);
        char b[64];

        if (len == 0) {
            if (n_res == 1)
                cli_usage_error("%s: RESOURCE is empty: give a name, e.g. 'nightly-backup'",
                                o->cmd_name);
            else
                cli_usage_error("%s: resource %d of %d is empty: give a name, e.g. "
                                "'nightly-backup'", o->cmd_name, i + 1, n_res);
            return -1;
        }
        if (len > REDLOCK_RESOURCE_MAX) {
            if (n_res == 1)
                cli_usage_error("%s: RESOURCE is %zu bytes: keep it to %d", o->cmd_name, len,
                                REDLOCK_RESOURCE_MAX);
            else
                cli_usage_error("%s: resource %d of %d is %zu bytes: keep it to %d",
                                o->cmd_name, i + 1, n_res, len, REDLOCK_RESOURCE_MAX);
            return -1;
        }
        for (int k = 0; k < i; k++) {
            if (strcmp(pos->w[k], pos->w[i]) == 0) {
                cli_usage_error("%s: resource '%s' is given twice: name each member of a set "
                                "once", o->cmd_name, cli_printable(pos->w[i], len, b, sizeof(b)));
                return -1;
            }
        }
        /* CMD gets the set as one name per line: a name with a newline
         * in it could not be told apart there. */
        if (o->cmd == CLI_CMD_RUN && n_res > 1 && strchr(pos->w[i], '\n') != NULL) {
            cli_usage_error("run: resource '%s' contains a newline, which $REDLOCK_RESOURCES "
                            "(one name per line) cannot carry: rename it, or run it alone",
                            cli_printable(pos->w[i], len, b, sizeof(b)));
            return -1;
        }
        o->set[i].name = pos->w[i];
        o->set[i].len = len;
    }
    o->n_resources = (size_t)n_res;
    o->resource = pos->w[0];
    o->resource_len = o->set[0].len;
    return 0;
}

static void print_version(void)
{
    printf("%s %s (library %s, header %s)\n", CLI_NAME, REDLOCK_VERSION_STRING,
           redlock_version(), REDLOCK_VERSION_STRING);
}

int cli_opts_parse(struct cli_opts *o, int argc, char **argv, void (*help)(void))
{
    const char *given[OPT_COUNT] = {0};   /* spelling used, for messages */
    const char *password_file = NULL;
    const char *masters_arg = NULL;
    struct positionals pos = {.n = 0};
    int end_of_opts = 0;

    memset(o, 0, sizeof(*o));
    o->drift_factor = -1.0;
    o->clock_policy = -1;
    o->samples = CLI_DEFAULT_PING_SAMPLES;
    o->ttl_ms = CLI_DEFAULT_TTL_MS;
    o->kill_after_ms = CLI_DEFAULT_KILL_AFTER_MS;
    o->retry_delay_ms = CLI_DEFAULT_RETRY_DELAY_MS;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL, *eq;
        char name[64];
        size_t nlen;
        int id;

        if (end_of_opts || a[0] != '-' || a[1] == '\0') {
            if (take_positional(o, &pos, a) < 0)
                return CLI_PARSE_USAGE;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            if (o->cmd == CLI_CMD_RUN && pos.n >= 1) {
                o->run_argv = &argv[i + 1];
                break;
            }
            /* Ends the options: what follows are positional words, so a
             * RESOURCE may begin with '-'. For run, the next '--' after at
             * least one resource still introduces CMD. */
            end_of_opts = 1;
            for (i++; i < argc; i++) {
                if (o->cmd == CLI_CMD_RUN && pos.n >= 1 && strcmp(argv[i], "--") == 0) {
                    o->run_argv = &argv[i + 1];
                    break;
                }
                if (take_positional(o, &pos, argv[i]) < 0)
                    return CLI_PARSE_USAGE;
            }
            break;
        }
        if (a[1] != '-') {
            /* Short options, clustered: -q, -v, -vv, -h, -V. */
            for (const char *s = a + 1; *s; s++) {
                switch (*s) {
                case 'q': o->quiet = 1; break;
                case 'v': o->verbose++; break;
                case 'h': help(); return CLI_PARSE_EXIT_0;
                case 'V': print_version(); return CLI_PARSE_EXIT_0;
                case 'a':
                case 'p':
                    /* redis-cli spells the password -a: say why we do not. */
                    cli_usage_error("-%c: passwords are not accepted on the command line "
                                    "(ps(1) shows them): use --password-file FILE or "
                                    "$REDLOCK_PASSWORD", *s);
                    return CLI_PARSE_USAGE;
                default:
                    cli_usage_error("unknown option '-%c' (see --help)", *s);
                    return CLI_PARSE_USAGE;
                }
            }
            continue;
        }
        /* Long option: --name or --name=value. Only the name is ever echoed
         * back, so a mistyped --pasword=secret does not print the secret. */
        eq = strchr(a + 2, '=');
        nlen = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        if (nlen >= sizeof(name)) {
            cli_usage_error("unknown option '--%.*s...' (see --help)", 20, a + 2);
            return CLI_PARSE_USAGE;
        }
        memcpy(name, a + 2, nlen);
        name[nlen] = '\0';
        for (id = 0; id < OPT_COUNT; id++)
            if (strcmp(opt_defs[id].name, name) == 0)
                break;
        if (id == OPT_COUNT) {
            cli_usage_error("unknown option '--%s' (see --help)", name);
            return CLI_PARSE_USAGE;
        }
        if (id == OPT_PASSWORD) {
            cli_usage_error("--password: passwords are not accepted on the command line "
                            "(ps(1) shows them): use --password-file FILE or $REDLOCK_PASSWORD");
            return CLI_PARSE_USAGE;
        }
        if (opt_defs[id].has_arg) {
            if (eq) {
                val = eq + 1;
            } else if (i + 1 < argc) {
                val = argv[++i];
            } else {
                cli_usage_error("--%s needs a value (see --help)", name);
                return CLI_PARSE_USAGE;
            }
        } else if (eq) {
            cli_usage_error("--%s takes no value: drop '=...'", name);
            return CLI_PARSE_USAGE;
        }
        given[id] = opt_defs[id].name;

        switch (id) {
        case OPT_MASTERS:
            masters_arg = val;
            break;
        case OPT_TIMEOUT:
            if (parse_u32_opt("--timeout-ms", val, 1, 3600000, "ms", &o->timeout_ms) < 0)
                return CLI_PARSE_USAGE;
            break;
        case OPT_CONNECT_TIMEOUT:
            if (parse_u32_opt("--connect-timeout-ms", val, 1, 3600000, "ms",
                              &o->connect_timeout_ms) < 0)
                return CLI_PARSE_USAGE;
            break;
        case OPT_RETRY:
            if (parse_u32_opt("--retry", val, 0, 1000000, "retries", &o->retry) < 0)
                return CLI_PARSE_USAGE;
            break;
        case OPT_RETRY_DELAY:
            if (parse_u32_opt("--retry-delay", val, 1, 3600000, "ms", &o->retry_delay_ms) < 0)
                return CLI_PARSE_USAGE;
            break;
        case OPT_DRIFT:
            if (parse_drift(val, &o->drift_factor) < 0)
                return CLI_PARSE_USAGE;
            break;
        case OPT_PREFIX:
            if (strlen(val) > REDLOCK_PREFIX_MAX) {
                cli_usage_error("--prefix is %zu bytes: keep it to %d", strlen(val),
                                REDLOCK_PREFIX_MAX);
                return CLI_PARSE_USAGE;
            }
            o->prefix = val;
            break;
        case OPT_USER:
            if (val[0] == '\0') {
                cli_usage_error("--user is empty: give an ACL user name, or drop the option");
                return CLI_PARSE_USAGE;
            }
            o->user = val;
            break;
        case OPT_PASSWORD_FILE:
            password_file = val;
            break;
        case OPT_JSON: o->json = 1; break;
        case OPT_QUIET: o->quiet = 1; break;
        case OPT_VERBOSE: o->verbose++; break;
        case OPT_HELP: help(); return CLI_PARSE_EXIT_0;
        case OPT_VERSION: print_version(); return CLI_PARSE_EXIT_0;
        case OPT_TTL:
            if (parse_u32_opt("--ttl", val, 1, REDLOCK_TTL_MAX_MS, "ms", &o->ttl_ms) < 0)
                return CLI_PARSE_USAGE;
            o->ttl_set = 1;
            break;
        case OPT_WAIT: {
            uint64_t w;

            /* A year is plenty, and keeps deadline arithmetic in µs far
             * from overflow. */
            if (cli_parse_u64(val, 0, 31536000000ull, &w) < 0) {
                cli_usage_error("--wait '%s': expected a whole number of ms from 0 (one "
                                "attempt) to 31536000000", val);
                return CLI_PARSE_USAGE;
            }
            o->wait_ms = w;
            break;
        }
        case OPT_KILL_AFTER:
            if (parse_u32_opt("--kill-after", val, 0, 3600000, "ms", &o->kill_after_ms) < 0)
                return CLI_PARSE_USAGE;
            break;
        case OPT_CLOCK_POLICY:
            if (parse_clock_policy(val, &o->clock_policy) < 0)
                return CLI_PARSE_USAGE;
            break;
        case OPT_RESTART_GUARD_MS:
            if (parse_u32_opt("--restart-guard-ms", val, 0, REDLOCK_TTL_MAX_MS, "ms",
                              &o->restart_guard_ms) < 0)
                return CLI_PARSE_USAGE;
            o->restart_guard_ms_set = 1;
            break;
        case OPT_NO_RESTART_GUARD:
            o->no_restart_guard = 1;
            break;
        case OPT_SAMPLES:
            if (parse_u32_opt("--samples", val, 1, 1000, "pings", &o->samples) < 0)
                return CLI_PARSE_USAGE;
            break;
        case OPT_FENCE:
            o->fence = 1;
            break;
        case OPT_NO_PUBSUB:
            o->no_pubsub = 1;
            break;
        case OPT_MAX_EXTENDS:
            if (parse_u32_opt("--max-extends", val, 1, UINT32_MAX, "extensions",
                              &o->max_extends) < 0)
                return CLI_PARSE_USAGE;
            break;
        case OPT_MAX_LEASE:
            if (parse_u32_opt("--max-lease", val, 1, UINT32_MAX, "ms", &o->max_lease_ms) < 0)
                return CLI_PARSE_USAGE;
            break;
        }
    }
    cli_quiet = o->quiet;
    cli_verbose = o->verbose;

    if (o->no_restart_guard && o->restart_guard_ms_set) {
        cli_usage_error("--restart-guard-ms and --no-restart-guard contradict each other: "
                        "give one of them");
        return CLI_PARSE_USAGE;
    }

    /* The command and its positional arguments. */
    if (o->cmd == CLI_CMD_NONE) {
        cli_usage_error("missing COMMAND: use one of %s (see --help)", CMD_LIST);
        return CLI_PARSE_USAGE;
    }
    for (int id = 0; id < OPT_COUNT; id++) {
        if (given[id] && opt_defs[id].cmds != CMDS_ALL &&
            !(opt_defs[id].cmds & CMD_BIT(o->cmd))) {
            cli_usage_error("--%s does not apply to %s (only to %s)", given[id], o->cmd_name,
                            opt_defs[id].cmds_text);
            return CLI_PARSE_USAGE;
        }
    }
    if (assign_positionals(o, &pos) < 0)
        return CLI_PARSE_USAGE;
    switch (o->cmd) {
    case CLI_CMD_EXTEND:
        if (!o->ttl_set) {
            cli_usage_error("extend: missing --ttl MS (the new time to live, from now)");
            return CLI_PARSE_USAGE;
        }
        break;
    case CLI_CMD_RUN:
        if (o->run_argv == NULL) {
            cli_usage_error("run: missing '--' before CMD: every word before it names a "
                            "resource (run RESOURCE... -- CMD [ARG...])");
            return CLI_PARSE_USAGE;
        }
        if (o->run_argv[0] == NULL) {
            cli_usage_error("run: missing CMD after '--' (run RESOURCE... -- CMD [ARG...])");
            return CLI_PARSE_USAGE;
        }
        if (o->run_argv[0][0] == '\0') {
            cli_usage_error("run: CMD is an empty string: give a program name or path");
            return CLI_PARSE_USAGE;
        }
        break;
    default:
        break;
    }
    if (o->token != NULL) {
        size_t tl = strlen(o->token);
        int printable = 1;

        for (size_t k = 0; k < tl; k++)
            if (o->token[k] <= ' ' || o->token[k] > '~')
                printable = 0;
        if (tl == 0 || tl > REDLOCK_TOKEN_MAX || !printable) {
            cli_usage_error("%s: TOKEN must be 1 to %d printable characters without spaces, "
                            "as printed by 'redlock-cli lock'", o->cmd_name, REDLOCK_TOKEN_MAX);
            return CLI_PARSE_USAGE;
        }
    }
    if (o->ttl_set || o->cmd == CLI_CMD_LOCK || o->cmd == CLI_CMD_RUN) {
        /* validity = ttl - elapsed - (ceil(ttl * drift) + 2 ms): refuse a
         * ttl that leaves nothing once the margin is taken, rather than
         * fail every attempt with an expired lease. */
        double f = o->drift_factor >= 0 ? o->drift_factor : 0.01;
        double margin = ceil((double)o->ttl_ms * f) + 2.0;

        if ((double)o->ttl_ms <= margin + 1.0) {
            /* t - ceil(t * f) > 3 holds from about 3 / (1 - f) on. */
            double guess = floor(3.0 / (1.0 - f)) - 2.0;
            uint32_t min;

            if (guess > (double)REDLOCK_TTL_MAX_MS) {
                guess = REDLOCK_TTL_MAX_MS;
            }
            min = guess < 1.0 ? 1u : (uint32_t)guess;
            while (min < REDLOCK_TTL_MAX_MS && (double)min <= ceil((double)min * f) + 3.0)
                min++;
            if (min == REDLOCK_TTL_MAX_MS) {
                cli_usage_error("--drift-factor %g leaves no validity for any ttl: use a "
                                "smaller factor (e.g. 0.01)", f);
                return CLI_PARSE_USAGE;
            }
            cli_usage_error("--ttl %u: too short to leave any validity after the clock-drift "
                            "margin (%.0f ms): use at least %u", (unsigned)o->ttl_ms, margin,
                            (unsigned)min);
            return CLI_PARSE_USAGE;
        }
    }

    /* Masters: --masters, else $REDLOCK_MASTERS, else the cluster-up.sh
     * default. */
    if (masters_arg != NULL) {
        if (parse_masters(o, masters_arg, "--masters") < 0)
            return CLI_PARSE_USAGE;
    } else if (getenv("REDLOCK_MASTERS") != NULL) {
        if (parse_masters(o, getenv("REDLOCK_MASTERS"), "$REDLOCK_MASTERS") < 0)
            return CLI_PARSE_USAGE;
    } else if (parse_masters(o, CLI_DEFAULT_MASTERS, "default masters") < 0) {
        return CLI_PARSE_USAGE;
    }
    if (o->n_masters % 2 == 0)
        cli_warn("warning: %zu masters: an even number tolerates no more failures than %zu "
                 "(quorum %zu of %zu); use an odd number", o->n_masters, o->n_masters - 1,
                 o->n_masters / 2 + 1, o->n_masters);

    /* Password: the file, else the environment. Never argv. */
    if (password_file != NULL) {
        if (read_password_file(o, password_file) < 0)
            return CLI_PARSE_USAGE;
    } else if (getenv("REDLOCK_PASSWORD") != NULL && getenv("REDLOCK_PASSWORD")[0] != '\0') {
        o->password = strdup(getenv("REDLOCK_PASSWORD"));
        if (o->password == NULL) {
            cli_usage_error("out of memory while reading $REDLOCK_PASSWORD");
            return CLI_PARSE_USAGE;
        }
    }
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
}
