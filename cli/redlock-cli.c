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
#include "json.h"
#include "opts.h"
#include "report.h"
#include "run.h"

/* Kept to 24 lines of at most 80 columns: one screen. */
static void help(void)
{
    fputs(
"Usage: redlock-cli [OPTIONS] COMMAND ARGS  (Redlock over N Redis masters)\n"
"  lock RES... [--fence]   take every RES or none; print the token (and fence)\n"
"  unlock RES... TOKEN     release them on a majority (TOKEN is the last word)\n"
"  extend RES... TOKEN --ttl MS             extend them on a majority\n"
"  run RES... [--fence] [--kill-after MS] [--max-extends N] [--max-lease MS]\n"
"      -- CMD [ARG...]     hold the lock while CMD runs, extending it\n"
"  status RESOURCE  holder and PTTL per master   ping [--samples N]  RTT, clocks\n"
"Options (before or after COMMAND):\n"
"  --masters H:P,...  else $REDLOCK_MASTERS, else 127.0.0.1:7000..7004\n"
"  --ttl MS (30000)   --wait MS (0: one attempt)   --kill-after MS (2000)\n"
"  --timeout-ms N     per-master timeout   --connect-timeout-ms N\n"
"  --retry N (0)      --retry-delay MS (200)       --drift-factor F (0.01)\n"
"  --no-pubsub (poll)  --max-extends N (1e6)   --max-lease MS (7 days)\n"
"  --clock-policy warn|exclude|off  --restart-guard-ms MS|--no-restart-guard\n"
"  --prefix STR       --user U   --password-file F (else $REDLOCK_PASSWORD)\n"
"  --json   one JSON object on stdout    -q quiet   -v verbose   -h   -V\n"
"Exit status (JSON fields and the rest: see redlock-cli(1)):\n"
"  0 ok   64 bad usage or input   68 unknown master host   70 internal error\n"
"  69 no quorum (too many masters down, slow, failing or excluded)\n"
"  75 held by another client (after --wait); unlock/extend: not held by TOKEN\n"
"  run: CMD's status; 124 lock lost or --max-* reached while CMD ran (CMD got\n"
"       SIGTERM, SIGKILL after --kill-after); 126 not executable; 127 not found\n"
"Examples: redlock-cli run nightly --ttl 10000 --wait 60000 -- ./backup.sh\n"
"  t=$(redlock-cli lock a b) && do_work; redlock-cli unlock a b \"$t\"\n",
          stdout);
}

static void log_to_stderr(int level, const char *msg, void *arg)
{
    static const char *names[] = {"debug", "info", "warn", "error"};

    (void)arg;
    fprintf(stderr, "%s: [%s] %s\n", CLI_NAME,
            level >= 0 && level <= REDLOCK_LOG_ERROR ? names[level] : "log", msg);
}

/* Clock jumps, rate faults and restarts seen while we run (mostly `run`,
 * which lives long enough to see them): one warning line each. */
static void event_to_stderr(int master, int event, const char *msg, void *arg)
{
    (void)master;
    (void)event;
    (void)arg;
    cli_warn("warning: %s", msg);
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
    /* One attempt per call unless --retry or --wait: with --wait the
     * library waits between attempts, listening for the release on pub/sub
     * unless --no-pubsub, and acquire.c keeps calling until the deadline. */
    cfg.retry_count = cli_acquire_retry_count(o);
    cfg.retry_delay_ms = cli_acquire_retry_delay(o);
    cfg.retry_jitter_ms = cfg.retry_delay_ms / 2;
    cfg.pubsub_wait = !o->no_pubsub;
    /* run: the library's watchdog keeps the lock (run.c). */
    if (o->cmd == CLI_CMD_RUN) {
        cfg.watchdog_divisor = CLI_RUN_WATCHDOG_DIVISOR;
        if (o->max_extends > 0)
            cfg.watchdog_max_extends = o->max_extends;
        if (o->max_lease_ms > 0)
            cfg.watchdog_max_lease_ms = o->max_lease_ms;
    }
    if (o->drift_factor >= 0)
        cfg.drift_factor = o->drift_factor;
    if (o->clock_policy >= 0)
        cfg.clock_policy = o->clock_policy;
    if (o->no_restart_guard)
        cfg.restart_guard = 0;
    if (o->restart_guard_ms_set)
        cfg.restart_guard_ms = o->restart_guard_ms;
    /* ping reports clock rates: a rate needs two samples, and a process
     * that lives for one ping would otherwise see none at the default
     * interval (1 s). */
    if (o->cmd == CLI_CMD_PING)
        cfg.clock_probe_ms = CLI_PING_PROBE_MS;
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
        /* The token on the first line; with --fence the fencing token on
         * the second, so `read -r t; read -r f` takes both. */
        if (!o->json && o->fence)
            printf("%s\n%llu\n", redlock_lock_token(lock),
                   (unsigned long long)redlock_lock_fence(lock));
        else if (!o->json)
            printf("%s\n", redlock_lock_token(lock));
        report_votes(c, &out, 0);
        cli_note("acquired on %u/%u masters (quorum %u) in %llu us, validity %lld ms",
                 (unsigned)out.n_ok, (unsigned)out.n_masters, (unsigned)out.quorum,
                 (unsigned long long)out.elapsed_us, (long long)out.validity_ms);
    } else if (code == CLI_EXIT_USAGE) {
        cli_usage_error("lock: %s", err.msg[0] ? err.msg : redlock_strerror(rc));
    } else {
        report_error_set("lock", o->set, o->n_resources, rc, &err, &out);
        report_votes(c, &out, 1);
    }
    if (o->json && code != CLI_EXIT_USAGE) {
        struct json j;

        json_init(&j, stdout);
        json_obj_begin(&j);
        report_json_head(&j, "lock", code, rc, &err);
        report_json_set(&j, o->set, o->n_resources);
        json_key(&j, "token");
        json_cstr(&j, lock ? redlock_lock_token(lock) : NULL);
        json_key(&j, "fence");
        if (lock != NULL && o->fence)
            json_u64(&j, redlock_lock_fence(lock));
        else
            json_null(&j);
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

/* Tokens the library makes are 32 lowercase hex digits. */
static int looks_like_token(const char *t)
{
    if (strlen(t) != 32)
        return 0;
    for (size_t i = 0; i < 32; i++)
        if (!((t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'f')))
            return 0;
    return 1;
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
    /* The same list as given to lock, in any order: release and extend act
     * on every member still holding TOKEN. */
    if (o->n_resources == 1)
        rc = redlock_lock_new(o->resource, o->resource_len, o->token, &lock, &err);
    else
        rc = redlock_lock_new_set(o->set, o->n_resources, o->token, &lock, &err);
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
        report_error_set(o->cmd_name, o->set, o->n_resources, rc, &err, &out);
        report_votes(c, &out, 1);
        /* `unlock a b` without the token reads b as the token: say so. */
        if (rc == REDLOCK_ENOTHELD && !looks_like_token(o->token))
            cli_error("%s: TOKEN '%s' is not the 32 hex digits that lock prints: the token "
                      "is the last word (%s RESOURCE... TOKEN)", o->cmd_name, o->token,
                      o->cmd_name);
    }
    if (o->json && code != CLI_EXIT_USAGE) {
        struct json j;

        json_init(&j, stdout);
        json_obj_begin(&j);
        report_json_head(&j, o->cmd_name, code, rc, &err);
        report_json_set(&j, o->set, o->n_resources);
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

/* status or ping failed before anything was filled in: there is no table
 * to show, only the error (and its JSON object). */
static int inspect_failed(const struct cli_opts *o, int rc, const redlock_error *err)
{
    int code = cli_exit_for(rc);

    if (code == CLI_EXIT_USAGE)
        cli_usage_error("%s: %s", o->cmd_name, err->msg[0] ? err->msg : redlock_strerror(rc));
    else
        report_error(o->cmd_name, o->cmd == CLI_CMD_STATUS ? o->resource : NULL,
                     o->resource_len, rc, err, NULL);
    if (o->json && code != CLI_EXIT_USAGE) {
        struct json j;

        json_init(&j, stdout);
        json_obj_begin(&j);
        report_json_head(&j, o->cmd_name, code, rc, err);
        json_obj_end(&j);
        json_end(&j);
    }
    return code;
}

/* After the table: the masters that did not answer, one error line each. */
static void inspect_report_down(const struct cli_opts *o, redlock_client *c, int rc,
                                const redlock_status *st, const redlock_error *err)
{
    size_t n = redlock_client_masters(c);

    if (rc == 0)
        return;
    report_error(o->cmd_name, o->cmd == CLI_CMD_STATUS ? o->resource : NULL, o->resource_len,
                 rc, err, NULL);
    for (size_t i = 0; i < n && i < REDLOCK_MAX_MASTERS; i++)
        if (st->masters[i].err != 0)
            cli_error("%s: %s", addr_of(c, i),
                      st->masters[i].detail[0] ? st->masters[i].detail
                                               : redlock_strerror(st->masters[i].err));
}

/* status: who holds the resource on each master, as a table or JSON. */
static int cmd_status(const struct cli_opts *o, redlock_client *c)
{
    redlock_status st;
    redlock_error err;
    size_t n = redlock_client_masters(c), w = addr_width(c);
    unsigned answered = 0;
    int rc, code;

    memset(&st, 0, sizeof(st));
    memset(&err, 0, sizeof(err));
    rc = redlock_status_get(c, o->resource, o->resource_len, &st, &err);
    if (rc != 0 && rc != REDLOCK_ENOQUORUM)
        return inspect_failed(o, rc, &err);
    code = cli_exit_for(rc);
    for (size_t i = 0; i < n && i < REDLOCK_MAX_MASTERS; i++)
        if (st.masters[i].err == 0)
            answered++;

    if (o->json) {
        struct json j;

        json_init(&j, stdout);
        json_obj_begin(&j);
        report_json_head(&j, o->cmd_name, code, rc, &err);
        report_json_resource(&j, o->resource, o->resource_len);
        json_key(&j, "n_masters");
        json_u64(&j, n);
        json_key(&j, "quorum");
        json_u64(&j, redlock_client_quorum(c));
        json_key(&j, "answered");
        json_u64(&j, answered);
        json_key(&j, "held_on");
        json_u64(&j, st.n_held);
        json_key(&j, "held");
        json_bool(&j, st.majority_token[0] != '\0');
        json_key(&j, "majority_token");
        json_cstr(&j, st.majority_token[0] ? st.majority_token : NULL);
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
            json_key(&j, "held");
            json_bool(&j, m->err == 0 && m->held);
            json_key(&j, "pttl_ms");
            if (m->err == 0 && m->held)
                json_i64(&j, m->pttl_ms);
            else
                json_null(&j);
            json_key(&j, "token");
            json_cstr(&j, m->err == 0 && m->held ? m->token : NULL);
            json_key(&j, "detail");
            json_str(&j, m->detail, strnlen(m->detail, sizeof(m->detail)));
            json_obj_end(&j);
        }
        json_arr_end(&j);
        json_obj_end(&j);
        json_end(&j);
    } else {
        printf("%-*s  %-5s  %9s  %s\n", (int)w, "MASTER", "STATE", "PTTL_MS", "TOKEN");
        for (size_t i = 0; i < n && i < REDLOCK_MAX_MASTERS; i++) {
            const redlock_master_state *m = &st.masters[i];

            if (m->err != 0)
                printf("%-*s  %-5s  %9s  %s\n", (int)w, addr_of(c, i), "error", "-",
                       m->detail[0] ? m->detail : redlock_strerror(m->err));
            else if (m->held)
                printf("%-*s  %-5s  %9lld  %s\n", (int)w, addr_of(c, i), "held",
                       (long long)m->pttl_ms, m->token);
            else
                printf("%-*s  %-5s  %9s  %s\n", (int)w, addr_of(c, i), "free", "-", "-");
        }
        if (st.majority_token[0] != '\0')
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
    inspect_report_down(o, c, rc, &st, &err);
    return code;
}

static const char *clock_policy_name(int policy)
{
    switch (policy) {
    case REDLOCK_CLOCK_EXCLUDE: return "exclude";
    case REDLOCK_CLOCK_OFF: return "off";
    default: return "warn";
    }
}

/* The clock rate interval is known once the monitor has two samples. */
static int rate_known(const redlock_master_state *m)
{
    return m->clock_rate_lo > 0.0 || m->clock_rate_hi > 0.0;
}

/* "45s", "12m03s", "3h04m", "5d02h". */
static const char *fmt_uptime(char *buf, size_t len, int64_t s)
{
    if (s < 0)
        snprintf(buf, len, "-");
    else if (s < 60)
        snprintf(buf, len, "%llds", (long long)s);
    else if (s < 3600)
        snprintf(buf, len, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
    else if (s < 86400)
        snprintf(buf, len, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else
        snprintf(buf, len, "%lldd%02lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
    return buf;
}

static void sleep_ms(uint64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Ping until the clock monitor has something to say: @want pings,
 * CLI_PING_PROBE_MS apart (the client probes every master's TIME at that
 * interval meanwhile), and up to @want more while a master that answers
 * has fewer than the two samples a rate needs. The last ping's view is
 * what is reported. */
static int ping_sampled(const struct cli_opts *o, redlock_client *c, redlock_status *st,
                        redlock_error *err, unsigned *pings)
{
    uint32_t want = o->clock_policy == REDLOCK_CLOCK_OFF ? 1 : o->samples;
    uint64_t t0 = cli_now_us();
    size_t n = redlock_client_masters(c);
    int rc;

    for (*pings = 0;;) {
        int short_of_samples = 0;
        uint64_t next, now;

        memset(st, 0, sizeof(*st));
        memset(err, 0, sizeof(*err));
        rc = redlock_ping(c, st, err);
        (*pings)++;
        if (rc != 0 && rc != REDLOCK_ENOQUORUM)
            break;
        for (size_t i = 0; i < n && i < REDLOCK_MAX_MASTERS; i++)
            if (st->masters[i].err == 0 && st->masters[i].clock_samples < 2)
                short_of_samples = 1;
        if (*pings >= 2 * want || (*pings >= want && (want < 2 || !short_of_samples)))
            break;
        next = t0 + (uint64_t)*pings * CLI_PING_PROBE_MS * 1000u;
        now = cli_now_us();
        if (next > now)
            sleep_ms((next - now + 999) / 1000);
    }
    cli_note("ping: %u pings over %llu ms", *pings,
             (unsigned long long)((cli_now_us() - t0) / 1000u));
    return rc;
}

static void ping_json_master(struct json *j, redlock_client *c, size_t i,
                             const redlock_master_state *m)
{
    json_obj_begin(j);
    json_key(j, "addr");
    json_cstr(j, addr_of(c, i));
    json_key(j, "reachable");
    json_bool(j, m->err == 0);
    json_key(j, "error");
    json_cstr(j, m->err ? redlock_err_name(m->err) : NULL);
    json_key(j, "rtt_us");
    json_u64(j, m->rtt_us);
    json_key(j, "clock_offset_us");
    if (m->err == 0)
        json_i64(j, m->clock_offset_us);
    else
        json_null(j);
    json_key(j, "clock_rate_lo");
    if (rate_known(m))
        json_double(j, m->clock_rate_lo, 6);
    else
        json_null(j);
    json_key(j, "clock_rate_hi");
    if (rate_known(m))
        json_double(j, m->clock_rate_hi, 6);
    else
        json_null(j);
    json_key(j, "clock_samples");
    json_u64(j, m->clock_samples);
    json_key(j, "clock_jumps");
    json_u64(j, m->clock_jumps);
    json_key(j, "clock_rate_faults");
    json_u64(j, m->clock_rate_faults);
    json_key(j, "clock_trusted");
    json_bool(j, m->clock_trusted);
    json_key(j, "run_id");
    json_cstr(j, m->run_id[0] ? m->run_id : NULL);
    json_key(j, "uptime_s");
    if (m->run_id[0])
        json_i64(j, m->uptime_s);
    else
        json_null(j);
    json_key(j, "aof_always");
    json_bool(j, m->aof_always);
    json_key(j, "excluded");
    json_bool(j, m->excluded);
    json_key(j, "excluded_why");
    if (m->excluded)
        json_str(j, m->excluded_why, strnlen(m->excluded_why, sizeof(m->excluded_why)));
    else
        json_null(j);
    json_key(j, "detail");
    json_str(j, m->detail, strnlen(m->detail, sizeof(m->detail)));
    json_obj_end(j);
}

/* ping: reachability, round trip and clock of every master, and whether
 * its vote would count toward a quorum now (clock monitor, restart guard). */
static int cmd_ping(const struct cli_opts *o, redlock_client *c)
{
    const int policy = o->clock_policy >= 0 ? o->clock_policy : REDLOCK_CLOCK_WARN;
    redlock_status st;
    redlock_error err;
    size_t n = redlock_client_masters(c), w = addr_width(c), q = redlock_client_quorum(c);
    unsigned answered = 0, counting = 0, excluded = 0, pings;
    int rc, code;

    rc = ping_sampled(o, c, &st, &err, &pings);
    if (rc != 0 && rc != REDLOCK_ENOQUORUM)
        return inspect_failed(o, rc, &err);
    code = cli_exit_for(rc);
    for (size_t i = 0; i < n && i < REDLOCK_MAX_MASTERS; i++) {
        const redlock_master_state *m = &st.masters[i];

        if (m->err == 0)
            answered++;
        if (m->excluded)
            excluded++;
        if (m->err == 0 && !m->excluded)
            counting++;
    }

    if (o->json) {
        struct json j;

        json_init(&j, stdout);
        json_obj_begin(&j);
        report_json_head(&j, o->cmd_name, code, rc, &err);
        json_key(&j, "n_masters");
        json_u64(&j, n);
        json_key(&j, "quorum");
        json_u64(&j, q);
        json_key(&j, "reachable");
        json_u64(&j, answered);
        json_key(&j, "counting");
        json_u64(&j, counting);
        json_key(&j, "excluded");
        json_u64(&j, excluded);
        json_key(&j, "pings");
        json_u64(&j, pings);
        json_key(&j, "clock_policy");
        json_cstr(&j, clock_policy_name(policy));
        json_key(&j, "restart_guard");
        json_bool(&j, !o->no_restart_guard);
        json_key(&j, "restart_guard_ms");
        json_u64(&j, o->no_restart_guard ? 0 : o->restart_guard_ms);
        json_key(&j, "masters");
        json_arr_begin(&j);
        for (size_t i = 0; i < n && i < REDLOCK_MAX_MASTERS; i++)
            ping_json_master(&j, c, i, &st.masters[i]);
        json_arr_end(&j);
        json_obj_end(&j);
        json_end(&j);
    } else {
        printf("%-*s  %-5s  %7s  %10s  %-15s  %-9s  %5s  %11s  %-8s  %7s  %-6s  %s\n", (int)w,
               "MASTER", "STATE", "RTT_US", "OFFSET_US", "CLOCK_RATE", "CLOCK", "JUMPS",
               "RATE_FAULTS", "RUN_ID", "UPTIME", "AOF", "QUORUM");
        for (size_t i = 0; i < n && i < REDLOCK_MAX_MASTERS; i++) {
            const redlock_master_state *m = &st.masters[i];
            char rate[48], up[24], run_id[9];

            if (m->err != 0) {
                printf("%-*s  %-5s  %7s  %10s  %-15s  %-9s  %5s  %11s  %-8s  %7s  %-6s  %s\n",
                       (int)w, addr_of(c, i), "down", "-", "-", "-", "-", "-", "-", "-", "-",
                       "-", m->detail[0] ? m->detail : redlock_strerror(m->err));
                continue;
            }
            if (rate_known(m))
                snprintf(rate, sizeof(rate), "%.4f..%.4f", m->clock_rate_lo, m->clock_rate_hi);
            else
                snprintf(rate, sizeof(rate), "-");
            snprintf(run_id, sizeof(run_id), "%.8s", m->run_id[0] ? m->run_id : "-");
            printf("%-*s  %-5s  %7u  %10lld  %-15s  %-9s  %5llu  %11llu  %-8s  %7s  %-6s  %s\n",
                   (int)w, addr_of(c, i), "up", (unsigned)m->rtt_us,
                   (long long)m->clock_offset_us, rate,
                   policy == REDLOCK_CLOCK_OFF ? "off" : m->clock_trusted ? "trusted" : "untrusted",
                   (unsigned long long)m->clock_jumps, (unsigned long long)m->clock_rate_faults,
                   run_id, fmt_uptime(up, sizeof(up), m->run_id[0] ? m->uptime_s : -1),
                   m->aof_always ? "always" : "no",
                   !m->excluded ? "counts"
                   : m->excluded_why[0] ? m->excluded_why : "excluded");
        }
        printf("%u/%zu masters reachable, %u count toward a quorum of %zu (clock policy %s, "
               "restart guard %s)\n", answered, n, counting, q, clock_policy_name(policy),
               o->no_restart_guard ? "off" : "on");
        fflush(stdout);
    }
    inspect_report_down(o, c, rc, &st, &err);
    if (rc == 0 && counting < q)
        cli_warn("warning: ping: only %u of %zu masters count toward a quorum (%zu needed): "
                 "acquires fail until excluded masters count again", counting, n, q);
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
        code = cmd_status(&o, c);
        break;
    case CLI_CMD_PING:
        code = cmd_ping(&o, c);
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
