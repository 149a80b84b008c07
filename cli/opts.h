/* opts.h - redlock-cli's command line: one struct filled by cli_opts_parse().
 *
 * Strict parsing, the library's own checks for what it has rules for, and
 * one line per failure, then exit 64 (78: no masters configured). Why:
 * docs/errors-cli.md, "How the CLI reads its settings, files and secrets".
 */
#ifndef REDLOCK_CLI_OPTS_H
#define REDLOCK_CLI_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include <redlock.h>

struct cli_conf;

enum cli_cmd {
    CLI_CMD_NONE = 0,
    CLI_CMD_LOCK,
    CLI_CMD_UNLOCK,
    CLI_CMD_EXTEND,
    CLI_CMD_RUN,
    CLI_CMD_STATUS,
    CLI_CMD_PING,
    CLI_CMD_DECLARE_EMPTY,
    CLI_CMD_READMIT,
    CLI_CMD_METRICS,
};

#define CLI_DEFAULT_TTL_MS 30000u
#define CLI_DEFAULT_KILL_AFTER_MS 2000u
#define CLI_DEFAULT_RETRY_DELAY_MS 200u
#define CLI_DEFAULT_PING_SAMPLES 5u
#define CLI_PING_PROBE_MS 100u          /* ping: clock probe interval, and time between pings */
#define CLI_RUN_WATCHDOG_DIVISOR 2u     /* run: extend when half the ttl is left (run.c) */
#define CLI_RUN_MAX_EXTENDS 1000000u    /* run: default --max-extends */
#define CLI_RUN_MAX_LEASE_MS 604800000u /* run: default --max-lease: 7 days */
#define CLI_WAIT_MAX_MS 31536000000ll   /* --wait: a year; longer is `forever` */
#define CLI_WAIT_FOREVER REDLOCK_WAIT_FOREVER /* --wait forever */
#define CLI_SHELL "/bin/sh"                   /* run -c STRING runs CLI_SHELL -c STRING */
#define CLI_PASSWORD_MAX 4096 /* bytes: Redis has no limit, a file this big is a mistake */

struct cli_opts {
    /* command and its arguments (pointers into argv) */
    int cmd;              /* enum cli_cmd */
    const char *cmd_name; /* as typed */
    /* lock, unlock, extend, run: 1..REDLOCK_SET_MAX distinct resources, taken
     * all or none; status: exactly one. Names point into argv (NUL-free). */
    redlock_resource set[REDLOCK_SET_MAX];
    size_t n_resources;
    const char *resource;      /* set[0], for messages about one resource */
    size_t resource_len;       /* bytes */
    const char *token;         /* unlock, extend: the last positional word */
    char **run_argv;           /* run: CMD [ARG...], NULL-terminated */
    const char *shell_command; /* run -c STRING, or NULL */
    char **run_env;            /* run: CMD's settings (cli_layer_export()), owned */
    char *shell_argv[4];       /* run -c: {CLI_SHELL, "-c", STRING, NULL} */

    /* connection */
    const char *masters_arg;      /* --masters as typed, or NULL */
    const char *masters_arg_from; /* NULL: argv; else the config file it came from */
    const char *config_file;      /* --config as typed, or NULL: the default file */
    struct cli_conf *conf;        /* owned: the config file read (values point into it) */
    const char *masters_file;     /* --masters-file as typed, or NULL */
    char *masters;                /* the list used, as the library takes it: owned;
                                     may carry passwords (never from argv) */
    size_t n_masters;
    const char *prefix;          /* key prefix, or NULL */
    const char *user;            /* ACL user, or NULL */
    const char *password_file;   /* --password-file as typed, or NULL */
    char *password;              /* owned; wiped by cli_opts_done(); never printed */
    uint32_t timeout_ms;         /* per-master request timeout; 0 = library default */
    uint32_t connect_timeout_ms; /* 0 = library default */
    uint32_t retry;              /* without --wait: polls after the first attempt */
    uint32_t retry_delay_ms;     /* the polling fallback while waiting, before jitter */
    double drift_factor;         /* < 0: library default */

    /* TLS (redis-cli's spellings); rediss:// masters use it without --tls */
    int tls;                     /* --tls: every host:port master over TLS */
    const char *tls_ca_file;     /* --cacert */
    const char *tls_ca_dir;      /* --cacertdir */
    const char *tls_cert_file;   /* --cert */
    const char *tls_key_file;    /* --key */
    const char *tls_server_name; /* --sni */
    int tls_insecure;            /* --insecure: no certificate check */

    /* clock monitor and restart guard */
    int clock_policy;          /* enum redlock_clock_policy; < 0: library default */
    uint32_t restart_guard_ms; /* 0: library default (the longest ttl used) */
    int restart_guard_ms_set;
    int no_restart_guard; /* --no-restart-guard */
    int force;            /* --force: declare-empty, readmit despite the fleet's look */

    /* command options */
    uint32_t ttl_ms; /* lock, extend, run */
    int ttl_set;
    int64_t wait_ms;        /* lock, run: wait up to this long; 0 = one attempt;
                               CLI_WAIT_FOREVER */
    int wait_set;           /* --wait was given */
    int nonblock;           /* -n: one attempt, as flock -n (same as --wait 0) */
    int fence;              /* lock, run: --fence (REDLOCK_FENCE) */
    int no_pubsub;          /* lock, run: --no-pubsub (config.pubsub_wait = 0) */
    uint32_t conflict_exit; /* lock, run: exit code when held elsewhere (-E) */
    int conflict_exit_set;  /* -E given: a conflict is then silent unless -v */
    uint32_t max_extends;   /* run: --max-extends (watchdog); 0 = library default */
    uint32_t max_lease_ms;  /* run: --max-lease (watchdog); 0 = library default */
    uint32_t kill_after_ms; /* run: loss signal -> SIGKILL grace */
    int loss_signal;        /* run: sent to CMD's group when the lock is lost (-s) */
    int foreground;         /* run: CMD's group takes the terminal (--foreground) */
    uint32_t samples;       /* ping, metrics: pings, CLI_PING_PROBE_MS apart */

    /* run: --metrics-file, node_exporter's textfile collector's (metrics.c) */
    const char *metrics_file;

    /* output */
    int json;
    int quiet;
    int verbose;
};

/* What the caller should do after cli_opts_parse(). */
enum cli_parse_result {
    CLI_PARSE_OK = 0, /* run opts->cmd */
    CLI_PARSE_EXIT_0, /* --help or --version was printed: exit 0 */
    CLI_PARSE_USAGE,  /* a one-line error was printed: exit 64 */
    CLI_PARSE_CONFIG, /* the setup is missing (no masters): a line, exit 78 */
};

/* Parse argv into @o, and fill what it leaves unsaid from the environment,
 * then the config file (the whole order: opts-parts.h). @help is called
 * for --help. On any outcome, call cli_opts_done(). */
int cli_opts_parse(struct cli_opts *o, int argc, char **argv, void (*help)(void));

/* Free what @o owns and wipe the password. */
void cli_opts_done(struct cli_opts *o);

/* The pieces of the parser, one file each (opts-value.c, masters.c,
 * secret-file.c, config.c). Each prints its own one-line error. Return: 0
 * or -1. */

/* Strict unsigned decimal: digits only, no sign, no spaces, in [min, max].
 * Prints nothing. */
int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret);
/* The duration rule, said once for --help's sake and every message: a bare
 * number is seconds (as flock -w, timeout and etcdctl read it), decimals
 * may be given with or without a unit, and a fraction of a millisecond is
 * refused. */
#define CLI_DURATION_FORMS "seconds (30, 0.5), or a number and a unit: 250ms, 1.5s, 2m, 1.5h, 1d"

/* A duration as CLI_DURATION_FORMS says, in whole ms, in [min_ms, max_ms].
 * Prints nothing. */
int cli_parse_duration_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *ret);
/* --wait: a duration up to CLI_WAIT_MAX_MS, or `forever`. */
int cli_parse_wait(const char *val, int64_t *ret);
/* A signal by name (TERM, SIGTERM, any case) or number, that ends a
 * process by default. @opt names the option in the message. */
int cli_parse_signal(const char *opt, const char *val, int *ret);
int cli_parse_drift(const char *val, double *ret);
int cli_parse_clock_policy(const char *val, int *ret);
/* The masters: --masters, --masters-file or $REDLOCK_MASTERS, checked by
 * the library, into o->masters. Return: CLI_PARSE_OK, _USAGE or _CONFIG. */
int cli_load_masters(struct cli_opts *o);
/* The whole of the file or pipe @path (minus one trailing newline), named
 * @opt in messages, at most @max bytes and without NUL, into *@ret (owned:
 * wipe and free it); *@ret_shared: a regular file that others may read.
 * Never blocks for ever; messages never show the content. */
int cli_read_secret_file(const char *opt, const char *path, size_t max, char **ret,
                         int *ret_shared);
/* The warning for a secret file that others may read. */
void cli_warn_shared_secret(const char *opt, const char *path);
/* The ttl leaves some validity after the clock-drift margin (the
 * library's check, with the drift factor in force). */
int cli_check_ttl_margin(const struct cli_opts *o);

/* config.c: the library's configuration for @o (no hooks: main() adds
 * them), and the library's check of it at the end of parsing. */
void cli_config_fill(const struct cli_opts *o, redlock_config *cfg);
int cli_config_check(const struct cli_opts *o);
/* run's floor: the validity left when the watchdog stops retrying failed
 * extensions and CMD is told to stop, a tenth of the ttl and at least four
 * request timeouts (time for an extension to fail and be tried again). */
uint32_t cli_run_floor_ms(const struct cli_opts *o);

#endif
