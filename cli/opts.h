/* opts.h - redlock-cli's command line: one struct filled by cli_opts_parse().
 *
 * Parsing is strict: every number is checked for garbage and range, every
 * master address for shape and duplicates, and every failure is one line on
 * stderr that names the problem and the fix, then exit 64.
 */
#ifndef REDLOCK_CLI_OPTS_H
#define REDLOCK_CLI_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include <redlock.h>

enum cli_cmd {
    CLI_CMD_NONE = 0,
    CLI_CMD_LOCK,
    CLI_CMD_UNLOCK,
    CLI_CMD_EXTEND,
    CLI_CMD_RUN,
    CLI_CMD_STATUS,
    CLI_CMD_PING,
};

#define CLI_DEFAULT_MASTERS \
    "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003,127.0.0.1:7004"
#define CLI_DEFAULT_TTL_MS 30000u
#define CLI_DEFAULT_KILL_AFTER_MS 2000u
#define CLI_DEFAULT_RETRY_DELAY_MS 200u
#define CLI_DEFAULT_PING_SAMPLES 5u
#define CLI_PING_PROBE_MS 100u     /* ping: clock probe interval, and time between pings */
#define CLI_RUN_WATCHDOG_DIVISOR 2u /* run: extend when half the ttl is left (run.c) */

struct cli_opts {
    /* command and its arguments (pointers into argv) */
    int cmd;                     /* enum cli_cmd */
    const char *cmd_name;        /* as typed */
    /* lock, unlock, extend, run: 1..REDLOCK_SET_MAX distinct resources, taken
     * all or none; status: exactly one. Names point into argv (NUL-free). */
    redlock_resource set[REDLOCK_SET_MAX];
    size_t n_resources;
    const char *resource;        /* set[0], for messages about one resource */
    size_t resource_len;         /* bytes */
    const char *token;           /* unlock, extend: the last positional word */
    char **run_argv;             /* run: CMD [ARG...], NULL-terminated */

    /* connection */
    char *masters;               /* normalised "host:port,...": owned */
    const char *masters_from;    /* "--masters", "$REDLOCK_MASTERS" or "default" */
    size_t n_masters;
    const char *prefix;          /* key prefix, or NULL */
    const char *user;            /* ACL user, or NULL */
    char *password;              /* owned; wiped by cli_opts_done(); never printed */
    uint32_t timeout_ms;         /* per-master request timeout; 0 = library default */
    uint32_t connect_timeout_ms; /* 0 = library default */
    uint32_t retry;              /* library retries per acquire attempt */
    uint32_t retry_delay_ms;     /* between acquire attempts, before jitter */
    double drift_factor;         /* < 0: library default */

    /* clock monitor and restart guard */
    int clock_policy;            /* enum redlock_clock_policy; < 0: library default */
    uint32_t restart_guard_ms;   /* 0: library default (the longest ttl used) */
    int restart_guard_ms_set;
    int no_restart_guard;        /* --no-restart-guard */

    /* command options */
    uint32_t ttl_ms;             /* lock, extend, run */
    int ttl_set;
    uint64_t wait_ms;            /* lock, run: retry until this deadline; 0 = one attempt */
    int fence;                   /* lock, run: --fence (REDLOCK_FENCE) */
    int no_pubsub;               /* lock, run: --no-pubsub (config.pubsub_wait = 0) */
    uint32_t max_extends;        /* run: --max-extends (watchdog); 0 = library default */
    uint32_t max_lease_ms;       /* run: --max-lease (watchdog); 0 = library default */
    uint32_t kill_after_ms;      /* run: SIGTERM -> SIGKILL grace */
    uint32_t samples;            /* ping: pings, CLI_PING_PROBE_MS apart */

    /* output */
    int json;
    int quiet;
    int verbose;
};

/* What the caller should do after cli_opts_parse(). */
enum cli_parse_result {
    CLI_PARSE_OK = 0,      /* run opts->cmd */
    CLI_PARSE_EXIT_0,      /* --help or --version was printed: exit 0 */
    CLI_PARSE_USAGE,       /* a one-line error was printed: exit 64 */
};

/* Parse argv (and $REDLOCK_MASTERS, $REDLOCK_PASSWORD) into @o.
 * @help is called for --help. On any outcome, call cli_opts_done(). */
int cli_opts_parse(struct cli_opts *o, int argc, char **argv, void (*help)(void));

/* Free what @o owns and wipe the password. */
void cli_opts_done(struct cli_opts *o);

/* Strict unsigned decimal: digits only, no sign, no spaces, in [min, max].
 * Return: 0 or -1 (not a number or out of range). Exposed for tests. */
int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

#endif
