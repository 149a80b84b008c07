/* redlock-cli.c - flock(1) for a fleet: take, release, extend and inspect
 * Redlock locks from shell scripts.
 *
 * main() parses the command line (opts.c), makes one blocking client from
 * the public API, and runs one command. Every command prints its result on
 * stdout (the token, a table, or one JSON object with --json), messages on
 * stderr, and maps the library's error code to a sysexits(3) status.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <redlock.h>

#include "acquire.h"
#include "cli.h"
#include "commands.h"
#include "opts.h"
#include "run.h"

/* Kept to 24 lines of at most 80 columns: one screen. */
static void help(void)
{
    fputs("Usage: redlock-cli [OPTIONS] COMMAND ARGS  (Redlock over N Redis masters)\n"
          "  lock RES... [--fence]   take every RES or none; print the token (and fence)\n"
          "  unlock RES... TOKEN     release them on a majority (TOKEN is the last word)\n"
          "  extend RES... TOKEN --ttl T              extend them on a majority\n"
          "  run RES... [--fence] [-s SIG] [-k|--kill-after T] [--foreground] [--max-*]\n"
          "      -- CMD [ARG...] | -c 'SHELL CMD'  hold the lock while CMD runs; CMD\n"
          "      gets $REDLOCK_TOKEN, _RESOURCE(S), _FENCE, all settings, no file's secret\n"
          "  status RES  holders, PTTLs   ping|metrics [--samples N]  RTT, clocks|metrics\n"
          "Options (before or after COMMAND); durations T: 30 = 30s, 1.5s 250ms 2m 1.5h\n"
          "  --masters H:P|URL,... | --masters-file F | $REDLOCK_MASTERS: required\n"
          "  --ttl T (30s)  -w|--wait T|forever  -n|--nonblock  -E N  exit N if held (75)\n"
          "  --timeout-ms T  --connect-timeout-ms T  --retry N  --retry-delay T (200ms)\n"
          "  --no-pubsub  --drift-factor F (0.01)  --max-extends N (1e6) --max-lease T (7d)\n"
          "  --clock-policy warn|exclude|off --restart-guard-ms T --no-restart-guard (argv)\n"
          "  --prefix STR  --user U  --password-file F ($REDLOCK_PASSWORD)  --json -q -v\n"
          "  --tls --cacert F --cacertdir D --cert F --key F --sni NAME --insecure\n"
          "  Unset options: $REDLOCK_<OPTION>, then --config F|~/.config/redlock/cli.conf\n"
          "Exit status (JSON fields and the rest: see redlock-cli(1)):\n"
          "  0 ok   64 bad usage or input   68 unknown master host   70 internal error\n"
          "  69 no quorum: masters down, slow, loading or excluded  77 AUTH or ACL refused\n"
          "  75 held elsewhere (or -E N), not TOKEN's  78 setup: no masters, wrong key type\n"
          "  128+N signal N (130: ^C) cancelled the wait for the lock: nothing is held\n"
          "  run: CMD's status; 124 lock lost/--max-* (SIG, then KILL: -k); 126/127 not run\n"
          "  declare-empty, readmit: new masters vote (man)  run --metrics-file F: textfile\n",
          stdout);
}

static void log_to_stderr(int level, const char *msg, void *arg)
{
    static const char *names[] = { "debug", "info", "warn", "error" };

    (void)arg;
    fprintf(stderr, "%s: [%s] %s\n", CLI_NAME,
            level >= 0 && level <= REDLOCK_LOG_ERROR ? names[level] : "log", msg);
}

/* Clock jumps, rate faults and restarts seen while we run (mostly `run`,
 * which lives long enough to see them): one warning line each. */
static void event_to_stderr(redlock_client *c, int status, int event, const redlock_error *err,
                            void *arg)
{
    (void)c;
    (void)status;
    (void)event;
    (void)arg;
    cli_warn("warning: %s", err->msg);
}

static int make_client(const struct cli_opts *o, redlock_client **ret)
{
    redlock_config cfg;
    redlock_error err;
    size_t up = 0;
    int rc;

    cli_config_fill(o, &cfg);
    if (o->cmd == CLI_CMD_RUN && cli_run_config(&cfg) < 0) {
        cli_error("run: cannot make a pipe: %s", strerror(errno));
        return CLI_EXIT_SOFTWARE;
    }
    /* The library is silent unless asked; -v shows its log, which has the
     * clock and restart events as warnings; without -v the event hook
     * prints just those. */
    if (o->verbose > 0 && !o->quiet) {
        cfg.log_fn = log_to_stderr;
        cfg.log_level = o->verbose > 1 ? REDLOCK_LOG_DEBUG : REDLOCK_LOG_INFO;
    } else {
        cfg.event_fn = event_to_stderr;
    }

    memset(&err, 0, sizeof(err));
    rc = redlock_client_new(&cfg, NULL, ret, &err);
    if (rc != 0) {
        const char *why = err.msg[0] ? err.msg : redlock_strerror(rc);

        if (rc == REDLOCK_EINVAL)
            cli_usage_error("%s", why);
        else
            cli_error("cannot create client: %s", why);
        return cli_exit_for(rc);
    }
    /* The client connects in the background, and a first request would
     * wait behind the handshakes while its --timeout-ms (50 ms) runs: on a
     * loaded machine the handshake alone may take longer, and a master
     * that is fine would count as slow. So wait for a quorum to be up
     * first, for --connect-timeout-ms at most; what is not up by then the
     * command reports, master by master. */
    memset(&err, 0, sizeof(err));
    rc = redlock_ready(*ret, 0, cfg.connect_timeout_ms, &up, &err);
    /* Two entries that are one redis-server (a socket and a port, two
     * dbs) are wrong input, like two entries with one address: refused
     * here. The library knows once both handshakes read the run_id, and a
     * quorum can be up before the later one did; a ping waits behind every
     * handshake still going, so after it the answer is final. Paid only
     * when a master is not up; its vote would never count anyway. */
    if (rc != REDLOCK_EINVAL && up < redlock_client_masters(*ret)) {
        redlock_status *st = redlock_status_new();

        if (st)
            redlock_ping(*ret, st, NULL);
        redlock_status_free(st);
        rc = redlock_ready(*ret, 0, 1, NULL, &err);
    }
    if (rc == REDLOCK_EINVAL) {
        cli_usage_error("%s", err.msg);
        return cli_exit_for(rc);
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct cli_opts o;
    redlock_client *c = NULL;
    int code;

    /* A master closing its socket must be an error vote, not our death:
     * hiredis writes with write(2), which raises SIGPIPE. CMD gets the
     * default back (run.c). */
    signal(SIGPIPE, SIG_IGN);

    switch (cli_opts_parse(&o, argc, argv, help)) {
    case CLI_PARSE_EXIT_0: code = CLI_EXIT_OK; goto out;
    case CLI_PARSE_USAGE: code = CLI_EXIT_USAGE; goto out;
    case CLI_PARSE_CONFIG: code = CLI_EXIT_CONFIG; goto out;
    default: break;
    }
    if (o.cmd == CLI_CMD_RUN)
        cli_run_note_inherited_fds();
    code = make_client(&o, &c);
    if (code != 0)
        goto out;

    switch (o.cmd) {
    case CLI_CMD_LOCK: code = cli_cmd_lock(&o, c); break;
    case CLI_CMD_UNLOCK:
    case CLI_CMD_EXTEND: code = cli_cmd_token_op(&o, c); break;
    case CLI_CMD_RUN: code = cli_run(&o, c); break;
    case CLI_CMD_STATUS: code = cli_cmd_status(&o, c); break;
    case CLI_CMD_PING: code = cli_cmd_ping(&o, c); break;
    case CLI_CMD_DECLARE_EMPTY: code = cli_cmd_declare_empty(&o, c); break;
    case CLI_CMD_READMIT: code = cli_cmd_readmit(&o, c); break;
    case CLI_CMD_METRICS: code = cli_cmd_metrics(&o, c); break;
    default: code = CLI_EXIT_SOFTWARE; break;
    }
out:
    redlock_client_free(c);
    cli_acquire_cleanup();
    cli_opts_done(&o);
    if (fflush(stdout) != 0 && code == 0)
        code = CLI_EXIT_SOFTWARE;
    return code;
}
