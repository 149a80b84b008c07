/* redlock-cli.c - flock(1) for a fleet: take, release, extend and inspect
 * Redlock locks from shell scripts.
 *
 * main() parses the command line (opts.c), makes one blocking client from
 * the public API, and runs one command. Every command prints its result on
 * stdout (the token, a table, or one JSON object with --json), messages on
 * stderr, and maps the library's error code to a sysexits(3) status.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <redlock.h>

#include "acquire.h"
#include "cli.h"
#include "json.h"
#include "opts.h"
#include "report.h"
#include "run.h"

/* Kept to 24 lines of at most 80 columns: one screen. */
static void help(void)
{
    fputs(
"Usage: redlock-cli [OPTIONS] COMMAND ARGS  (Redlock over N Redis masters)\n"
"  lock RESOURCE [--ttl MS] [--wait MS]     take the lock, print its token\n"
"  unlock RESOURCE TOKEN                    release it (on a majority)\n"
"  extend RESOURCE TOKEN --ttl MS           extend it (on a majority)\n"
"  run RESOURCE [--ttl MS] [--wait MS] [--kill-after MS] -- CMD [ARG...]\n"
"                         hold the lock while CMD runs, extending it\n"
"  status RESOURCE                          holder and PTTL on each master\n"
"  ping                                     reachability, RTT, clock offset\n"
"Options (before or after COMMAND):\n"
"  --masters H:P,...  else $REDLOCK_MASTERS, else 127.0.0.1:7000..7004\n"
"  --ttl MS (30000)   --wait MS (0: one attempt)   --kill-after MS (2000)\n"
"  --timeout-ms N     per-master timeout   --connect-timeout-ms N\n"
"  --retry N (0)      --retry-delay MS (200)       --drift-factor F (0.01)\n"
"  --prefix STR       --user U   --password-file F (else $REDLOCK_PASSWORD)\n"
"  --json   one JSON object on stdout    -q quiet   -v verbose   -h   -V\n"
"Exit status:\n"
"  0 ok   64 bad usage or input   68 unknown master host   70 internal error\n"
"  69 no quorum (too many masters down, slow or failing)\n"
"  75 held by another client (after --wait); unlock/extend: not held by TOKEN\n"
"  run: CMD's status; 124 lock lost while CMD ran (CMD got SIGTERM, then\n"
"       SIGKILL after --kill-after); 126 CMD not executable; 127 not found\n"
"Examples: redlock-cli run nightly --ttl 10000 --wait 60000 -- ./backup.sh\n"
"  t=$(redlock-cli lock job) && do_work; redlock-cli unlock job \"$t\"\n"
"See redlock-cli(1) for JSON fields, environment and details.\n",
          stdout);
}

static void log_to_stderr(int level, const char *msg, void *arg)
{
    static const char *names[] = {"debug", "info", "warn", "error"};

    (void)arg;
    fprintf(stderr, "%s: [%s] %s\n", CLI_NAME,
            level >= 0 && level <= REDLOCK_LOG_ERROR ? names[level] : "log", msg);
}

static int make_client(const struct cli_opts *o, redlock_client **ret)
{
    redlock_config cfg;
    redlock_error err;
    int rc;

    redlock_config_init(&cfg);
    cfg.masters = o->masters;
    if (o->prefix != NULL)
        cfg.key_prefix = o->prefix;
    cfg.username = o->user;
    cfg.password = o->password;
    if (o->timeout_ms > 0)
        cfg.node_timeout_ms = o->timeout_ms;
    if (o->connect_timeout_ms > 0)
        cfg.connect_timeout_ms = o->connect_timeout_ms;
    /* One attempt per call unless --retry: --wait does its own retrying,
     * with its own deadline (acquire.c). */
    cfg.retry_count = o->retry;
    cfg.retry_delay_ms = o->retry_delay_ms;
    cfg.retry_jitter_ms = o->retry_delay_ms / 2;
    if (o->drift_factor >= 0)
        cfg.drift_factor = o->drift_factor;
    /* The library is silent unless asked; -v shows its log. */
    if (o->verbose > 0 && !o->quiet) {
        cfg.log_fn = log_to_stderr;
        cfg.log_level = o->verbose > 1 ? REDLOCK_LOG_DEBUG : REDLOCK_LOG_INFO;
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
    return 0;
}

static int cmd_lock(const struct cli_opts *o, redlock_client *c)
{
    redlock_lock *lock = NULL;
    redlock_outcome out;
    redlock_error err;
    struct cli_acquire_stats st;
    int rc, code;

    rc = cli_acquire(o, c, -1, &lock, &out, &err, &st);
    code = cli_exit_for(rc);
    if (rc == 0) {
        if (!o->json)
            printf("%s\n", redlock_lock_token(lock));
        report_votes(c, &out, 0);
        cli_note("acquired on %u/%u masters (quorum %u) in %llu us, validity %lld ms",
                 (unsigned)out.n_ok, (unsigned)out.n_masters, (unsigned)out.quorum,
                 (unsigned long long)out.elapsed_us, (long long)out.validity_ms);
    } else if (code == CLI_EXIT_USAGE) {
        cli_usage_error("lock: %s", err.msg[0] ? err.msg : redlock_strerror(rc));
    } else {
        report_error("lock", o->resource, o->resource_len, rc, &err, &out);
        report_votes(c, &out, 1);
    }
    if (o->json && code != CLI_EXIT_USAGE) {
        struct json j;

        json_init(&j, stdout);
        json_obj_begin(&j);
        report_json_head(&j, "lock", code, rc, &err);
        report_json_resource(&j, o->resource, o->resource_len);
        json_key(&j, "token");
        json_cstr(&j, lock ? redlock_lock_token(lock) : NULL);
        json_key(&j, "ttl_ms");
        json_u64(&j, o->ttl_ms);
        json_key(&j, "validity_ms");
        json_i64(&j, lock ? out.validity_ms : 0);
        json_key(&j, "acquired_on");
        json_u64(&j, lock ? out.n_ok : 0);
        json_key(&j, "attempts");
        json_u64(&j, st.attempts);
        json_key(&j, "waited_ms");
        json_u64(&j, st.waited_us / 1000u);
        report_json_votes(&j, c, &out);
        json_obj_end(&j);
        json_end(&j);
    }
    /* The lock stays on the masters: `unlock` or its ttl ends it. */
    redlock_lock_free(lock);
    return code;
}

/* unlock and extend: act on a token that another process obtained. */
static int cmd_token_op(const struct cli_opts *o, redlock_client *c)
{
    const int is_extend = (o->cmd == CLI_CMD_EXTEND);
    redlock_lock *lock = NULL;
    redlock_outcome out;
    redlock_error err;
    int rc, code;

    memset(&out, 0, sizeof(out));
    memset(&err, 0, sizeof(err));
    rc = redlock_lock_new(o->resource, o->resource_len, o->token, &lock, &err);
    if (rc == 0) {
        if (is_extend)
            rc = redlock_extend(c, lock, o->ttl_ms, &out, &err);
        else
            rc = redlock_release(c, lock, &out, &err);
    }
    code = cli_exit_for(rc);
    if (rc == 0) {
        report_votes(c, &out, 0);
        if (is_extend)
            cli_note("extended on %u/%u masters, validity %lld ms", (unsigned)out.n_ok,
                     (unsigned)out.n_masters, (long long)out.validity_ms);
        else
            cli_note("released on %u/%u masters", (unsigned)out.n_ok, (unsigned)out.n_masters);
    } else if (code == CLI_EXIT_USAGE) {
        cli_usage_error("%s: %s", o->cmd_name, err.msg[0] ? err.msg : redlock_strerror(rc));
    } else {
        report_error(o->cmd_name, o->resource, o->resource_len, rc, &err, &out);
        report_votes(c, &out, 1);
    }
    if (o->json && code != CLI_EXIT_USAGE) {
        struct json j;

        json_init(&j, stdout);
        json_obj_begin(&j);
        report_json_head(&j, o->cmd_name, code, rc, &err);
        report_json_resource(&j, o->resource, o->resource_len);
        json_key(&j, "token");
        json_cstr(&j, o->token);
        if (is_extend) {
            json_key(&j, "ttl_ms");
            json_u64(&j, o->ttl_ms);
            json_key(&j, "validity_ms");
            json_i64(&j, rc == 0 ? out.validity_ms : 0);
            json_key(&j, "extended_on");
        } else {
            json_key(&j, "released_on");
        }
        json_u64(&j, out.n_ok);
        report_json_votes(&j, c, &out);
        json_obj_end(&j);
        json_end(&j);
    }
    redlock_lock_free(lock);
    return code;
}

static size_t addr_width(redlock_client *c)
{
    size_t w = 6;   /* "MASTER" */

    for (size_t i = 0; i < redlock_client_masters(c); i++) {
        const char *a = redlock_client_master_addr(c, i);

        if (a != NULL && strlen(a) > w)
            w = strlen(a);
    }
    return w;
}

static const char *addr_of(redlock_client *c, size_t i)
{
    const char *a = redlock_client_master_addr(c, i);

    return a != NULL ? a : "?";
}

/* status and ping: one query per master, shown as a table or JSON. */
static int cmd_inspect(const struct cli_opts *o, redlock_client *c)
{
    const int is_status = (o->cmd == CLI_CMD_STATUS);
    redlock_status st;
    redlock_error err;
    size_t n = redlock_client_masters(c), w = addr_width(c);
    unsigned answered = 0;
    int rc, code;

    memset(&st, 0, sizeof(st));
    memset(&err, 0, sizeof(err));
    if (is_status)
        rc = redlock_status_get(c, o->resource, o->resource_len, &st, &err);
    else
        rc = redlock_ping(c, &st, &err);
    code = cli_exit_for(rc);
    if (rc != 0 && rc != REDLOCK_ENOQUORUM) {
        /* Nothing was filled in: there is no table to show. */
        if (code == CLI_EXIT_USAGE)
            cli_usage_error("%s: %s", o->cmd_name, err.msg[0] ? err.msg : redlock_strerror(rc));
        else
            report_error(o->cmd_name, is_status ? o->resource : NULL, o->resource_len, rc, &err,
                         NULL);
        if (o->json && code != CLI_EXIT_USAGE) {
            struct json j;

            json_init(&j, stdout);
            json_obj_begin(&j);
            report_json_head(&j, o->cmd_name, code, rc, &err);
            json_obj_end(&j);
            json_end(&j);
        }
        return code;
    }
    for (size_t i = 0; i < n && i < REDLOCK_MAX_MASTERS; i++)
        if (st.masters[i].err == 0)
            answered++;

    if (o->json) {
        struct json j;

        json_init(&j, stdout);
        json_obj_begin(&j);
        report_json_head(&j, o->cmd_name, code, rc, &err);
        if (is_status)
            report_json_resource(&j, o->resource, o->resource_len);
        json_key(&j, "n_masters");
        json_u64(&j, n);
        json_key(&j, "quorum");
        json_u64(&j, redlock_client_quorum(c));
        json_key(&j, is_status ? "answered" : "reachable");
        json_u64(&j, answered);
        if (is_status) {
            json_key(&j, "held_on");
            json_u64(&j, st.n_held);
            json_key(&j, "held");
            json_bool(&j, st.majority_token[0] != '\0');
            json_key(&j, "majority_token");
            json_cstr(&j, st.majority_token[0] ? st.majority_token : NULL);
        }
        json_key(&j, "masters");
        json_arr_begin(&j);
        for (size_t i = 0; i < n && i < REDLOCK_MAX_MASTERS; i++) {
            const redlock_master_state *m = &st.masters[i];

            json_obj_begin(&j);
            json_key(&j, "addr");
            json_cstr(&j, addr_of(c, i));
            json_key(&j, "reachable");
            json_bool(&j, m->err == 0);
            json_key(&j, "error");
            json_cstr(&j, m->err ? redlock_err_name(m->err) : NULL);
            json_key(&j, "rtt_us");
            json_u64(&j, m->rtt_us);
            if (is_status) {
                json_key(&j, "held");
                json_bool(&j, m->err == 0 && m->held);
                json_key(&j, "pttl_ms");
                if (m->err == 0 && m->held)
                    json_i64(&j, m->pttl_ms);
                else
                    json_null(&j);
                json_key(&j, "token");
                json_cstr(&j, m->err == 0 && m->held ? m->token : NULL);
            } else {
                json_key(&j, "clock_offset_us");
                if (m->err == 0)
                    json_i64(&j, m->clock_offset_us);
                else
                    json_null(&j);
            }
            json_key(&j, "detail");
            json_str(&j, m->detail, strnlen(m->detail, sizeof(m->detail)));
            json_obj_end(&j);
        }
        json_arr_end(&j);
        json_obj_end(&j);
        json_end(&j);
    } else {
        if (is_status)
            printf("%-*s  %-5s  %9s  %s\n", (int)w, "MASTER", "STATE", "PTTL_MS", "TOKEN");
        else
            printf("%-*s  %-5s  %9s  %10s\n", (int)w, "MASTER", "STATE", "RTT_US", "OFFSET_US");
        for (size_t i = 0; i < n && i < REDLOCK_MAX_MASTERS; i++) {
            const redlock_master_state *m = &st.masters[i];

            if (m->err != 0)
                printf("%-*s  %-5s  %9s  %s%s\n", (int)w, addr_of(c, i),
                       is_status ? "error" : "down", "-", is_status ? "" : "         -  ",
                       m->detail[0] ? m->detail : redlock_strerror(m->err));
            else if (is_status && m->held)
                printf("%-*s  %-5s  %9lld  %s\n", (int)w, addr_of(c, i), "held",
                       (long long)m->pttl_ms, m->token);
            else if (is_status)
                printf("%-*s  %-5s  %9s  %s\n", (int)w, addr_of(c, i), "free", "-", "-");
            else
                printf("%-*s  %-5s  %9u  %10lld\n", (int)w, addr_of(c, i), "up",
                       (unsigned)m->rtt_us, (long long)m->clock_offset_us);
        }
        if (!is_status)
            printf("%u/%zu masters reachable (quorum %zu)\n", answered, n,
                   redlock_client_quorum(c));
        else if (st.majority_token[0] != '\0')
            printf("held by %s on a majority (key on %u/%zu masters, quorum %zu)\n",
                   st.majority_token, (unsigned)st.n_held, n, redlock_client_quorum(c));
        else if (st.n_held == 0)
            printf("free (%u/%zu masters answered, quorum %zu)\n", answered, n,
                   redlock_client_quorum(c));
        else
            printf("not held: no token on a majority (key on %u/%zu masters, quorum %zu)\n",
                   (unsigned)st.n_held, n, redlock_client_quorum(c));
        fflush(stdout);
    }
    if (rc != 0) {
        report_error(o->cmd_name, is_status ? o->resource : NULL, o->resource_len, rc, &err,
                     NULL);
        for (size_t i = 0; i < n && i < REDLOCK_MAX_MASTERS; i++)
            if (st.masters[i].err != 0)
                cli_error("%s: %s", addr_of(c, i),
                          st.masters[i].detail[0] ? st.masters[i].detail
                                                  : redlock_strerror(st.masters[i].err));
    }
    return code;
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
    case CLI_PARSE_EXIT_0:
        code = CLI_EXIT_OK;
        goto out;
    case CLI_PARSE_USAGE:
        code = CLI_EXIT_USAGE;
        goto out;
    default:
        break;
    }
    if (o.cmd == CLI_CMD_RUN)
        cli_run_note_inherited_fds();
    code = make_client(&o, &c);
    if (code != 0)
        goto out;

    switch (o.cmd) {
    case CLI_CMD_LOCK:
        code = cmd_lock(&o, c);
        break;
    case CLI_CMD_UNLOCK:
    case CLI_CMD_EXTEND:
        code = cmd_token_op(&o, c);
        break;
    case CLI_CMD_RUN:
        code = cli_run(&o, c);
        break;
    case CLI_CMD_STATUS:
    case CLI_CMD_PING:
        code = cmd_inspect(&o, c);
        break;
    default:
        code = CLI_EXIT_SOFTWARE;
        break;
    }
out:
    redlock_client_free(c);
    cli_opts_done(&o);
    if (fflush(stdout) != 0 && code == 0)
        code = CLI_EXIT_SOFTWARE;
    return code;
}
