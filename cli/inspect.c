/* inspect.c - `status` and `ping`: read-only views of every master, as a
 * table or one JSON object. status shows who holds a resource where; ping
 * shows reachability, round trips, clocks, and whether each master's vote
 * would count toward a quorum now.
 */
#include "commands.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "json.h"
#include "metrics.h"
#include "report.h"

static size_t addr_width(redlock_client *c)
{
    size_t w = 6; /* "MASTER" */

    for (size_t i = 0; i < redlock_client_masters(c); i++) {
        const char *a = redlock_client_master_addr(c, i);

        if (a && strlen(a) > w)
            w = strlen(a);
    }
    return w;
}

static const char *addr_of(redlock_client *c, size_t i)
{
    const char *a = redlock_client_master_addr(c, i);

    return a ? a : "?";
}

/* status or ping failed before anything was filled in: there is no table
 * to show, only the error (and its JSON object). */
static int inspect_failed(const struct cli_opts *o, int rc, const redlock_error *err)
{
    int code = cli_exit_for(rc);

    if (code == CLI_EXIT_USAGE)
        cli_usage_error("%s: %s", o->cmd_name, err->msg[0] ? err->msg : redlock_strerror(rc));
    else
        report_error(o->cmd_name, o->cmd == CLI_CMD_STATUS ? o->resource : NULL, o->resource_len,
                     rc, err, NULL);
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
    if (rc == 0)
        return;
    report_error(o->cmd_name, o->cmd == CLI_CMD_STATUS ? o->resource : NULL, o->resource_len, rc,
                 err, NULL);
    for (size_t i = 0; i < redlock_status_masters(st); i++)
        if (redlock_status_master(st, i)->err != 0)
            cli_error("%s: %s", addr_of(c, i),
                      redlock_status_master(st, i)->detail[0]
                          ? redlock_status_master(st, i)->detail
                          : redlock_strerror(redlock_status_master(st, i)->err));
}

/* The exit status for a status or ping whose master i failed with
 * redlock_status_master(st, i)->err. */
static int inspect_exit(int rc, const redlock_status *st, size_t n)
{
    int errs[REDLOCK_MAX_MASTERS] = { 0 };

    if (n > REDLOCK_MAX_MASTERS)
        n = REDLOCK_MAX_MASTERS;
    for (size_t i = 0; i < n; i++)
        errs[i] = redlock_status_master(st, i)->err;
    return cli_exit_for_masters(rc, errs, n);
}

/* The members every master's JSON object starts with. */
static void master_json_head(struct json *j, redlock_client *c, size_t i,
                             const redlock_master_state *m)
{
    json_key(j, "addr");
    json_cstr(j, addr_of(c, i));
    json_key(j, "reachable");
    json_bool(j, m->err == 0);
    json_key(j, "error");
    json_cstr(j, m->err ? redlock_err_name(m->err) : NULL);
    json_key(j, "rtt_us");
    json_u64(j, m->rtt_us);
}

static void status_json(const struct cli_opts *o, redlock_client *c, int code, int rc,
                        const redlock_status *st, const redlock_error *err, unsigned answered)
{
    size_t n = redlock_client_masters(c);
    struct json j;

    json_init(&j, stdout);
    json_obj_begin(&j);
    report_json_head(&j, o->cmd_name, code, rc, err);
    report_json_resource(&j, o->resource, o->resource_len);
    json_key(&j, "n_masters");
    json_u64(&j, n);
    json_key(&j, "quorum");
    json_u64(&j, redlock_client_quorum(c));
    json_key(&j, "answered");
    json_u64(&j, answered);
    json_key(&j, "held_on");
    json_u64(&j, redlock_status_held(st));
    json_key(&j, "held");
    json_bool(&j, redlock_status_majority_token(st)[0] != '\0');
    json_key(&j, "majority_token");
    json_cstr(&j, redlock_status_majority_token(st)[0] ? redlock_status_majority_token(st) : NULL);
    json_key(&j, "masters");
    json_arr_begin(&j);
    for (size_t i = 0; i < redlock_status_masters(st); i++) {
        const redlock_master_state *m = redlock_status_master(st, i);
        int held = m->err == 0 && m->held;

        json_obj_begin(&j);
        master_json_head(&j, c, i, m);
        json_key(&j, "held");
        json_bool(&j, held);
        json_key(&j, "pttl_ms");
        if (held)
            json_i64(&j, m->pttl_ms);
        else
            json_null(&j);
        json_key(&j, "token");
        json_cstr(&j, held ? m->token : NULL);
        json_key(&j, "detail");
        json_str(&j, m->detail, strnlen(m->detail, sizeof(m->detail)));
        json_obj_end(&j);
    }
    json_arr_end(&j);
    json_obj_end(&j);
    json_end(&j);
}

static void status_table(redlock_client *c, const redlock_status *st, unsigned answered)
{
    size_t n = redlock_client_masters(c), w = addr_width(c);

    printf("%-*s  %-5s  %9s  %s\n", (int)w, "MASTER", "STATE", "PTTL_MS", "TOKEN");
    for (size_t i = 0; i < redlock_status_masters(st); i++) {
        const redlock_master_state *m = redlock_status_master(st, i);

        if (m->err != 0)
            printf("%-*s  %-5s  %9s  %s\n", (int)w, addr_of(c, i), "error", "-",
                   m->detail[0] ? m->detail : redlock_strerror(m->err));
        else if (m->held)
            printf("%-*s  %-5s  %9lld  %s\n", (int)w, addr_of(c, i), "held", (long long)m->pttl_ms,
                   m->token);
        else
            printf("%-*s  %-5s  %9s  %s\n", (int)w, addr_of(c, i), "free", "-", "-");
    }
    if (redlock_status_majority_token(st)[0] != '\0')
        printf("held by %s on a majority (key on %u/%zu masters, quorum %zu)\n",
               redlock_status_majority_token(st), (unsigned)redlock_status_held(st), n,
               redlock_client_quorum(c));
    else if (redlock_status_held(st) == 0)
        printf("free (%u/%zu masters answered, quorum %zu)\n", answered, n,
               redlock_client_quorum(c));
    else
        printf("not held: no token on a majority (key on %u/%zu masters, quorum %zu)\n",
               (unsigned)redlock_status_held(st), n, redlock_client_quorum(c));
    fflush(stdout);
}

/* Run @fn with a status of its own (redlock_status_new()), then free it. */
static int with_status(const struct cli_opts *o, redlock_client *c,
                       int (*fn)(const struct cli_opts *, redlock_client *, redlock_status *))
{
    redlock_status *st = redlock_status_new();
    int code;

    if (!st) {
        cli_error("%s: out of memory", o->cmd_name);
        return CLI_EXIT_SOFTWARE;
    }
    code = fn(o, c, st);
    redlock_status_free(st);
    return code;
}

/* status: who holds the resource on each master, as a table or JSON. */
static int status(const struct cli_opts *o, redlock_client *c, redlock_status *st)
{
    redlock_error err;
    size_t n = redlock_client_masters(c);
    unsigned answered = 0;
    int rc, code;

    memset(&err, 0, sizeof(err));
    rc = redlock_status_get(c, o->resource, o->resource_len, st, &err);
    if (rc != 0 && rc != REDLOCK_ENOQUORUM)
        return inspect_failed(o, rc, &err);
    code = inspect_exit(rc, st, n);
    for (size_t i = 0; i < redlock_status_masters(st); i++)
        if (redlock_status_master(st, i)->err == 0)
            answered++;
    if (o->json)
        status_json(o, c, code, rc, st, &err, answered);
    else
        status_table(c, st, answered);
    inspect_report_down(o, c, rc, st, &err);
    return code;
}

int cli_cmd_status(const struct cli_opts *o, redlock_client *c)
{
    return with_status(o, c, status);
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

/* Time is the subject here: pings are spaced CLI_PING_PROBE_MS apart so
 * that the clock monitor samples in between. */
static void sleep_ms(uint64_t ms)
{
    struct timespec ts = { (time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L };

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
    int rc;

    for (*pings = 0;;) {
        int short_of_samples = 0;
        uint64_t next, now;

        memset(err, 0, sizeof(*err));
        rc = redlock_ping(c, st, err);
        (*pings)++;
        if (rc != 0 && rc != REDLOCK_ENOQUORUM)
            break;
        for (size_t i = 0; i < redlock_status_masters(st); i++)
            if (redlock_status_master(st, i)->err == 0 &&
                redlock_status_master(st, i)->clock_samples < 2)
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

static void json_rate(struct json *j, const char *key, const redlock_master_state *m, double v)
{
    json_key(j, key);
    if (rate_known(m))
        json_double(j, v, 6);
    else
        json_null(j);
}

static void ping_json_master(struct json *j, redlock_client *c, size_t i,
                             const redlock_master_state *m)
{
    json_obj_begin(j);
    master_json_head(j, c, i, m);
    json_key(j, "clock_offset_us");
    if (m->err == 0)
        json_i64(j, m->clock_offset_us);
    else
        json_null(j);
    json_rate(j, "clock_rate_lo", m, m->clock_rate_lo);
    json_rate(j, "clock_rate_hi", m, m->clock_rate_hi);
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

/* What ping counts over the masters. */
struct ping_counts {
    unsigned answered, counting, excluded, pings;
};

static void ping_json(const struct cli_opts *o, redlock_client *c, int code, int rc,
                      const redlock_status *st, const redlock_error *err,
                      const struct ping_counts *k, int policy)
{
    size_t n = redlock_client_masters(c);
    struct json j;

    json_init(&j, stdout);
    json_obj_begin(&j);
    report_json_head(&j, o->cmd_name, code, rc, err);
    json_key(&j, "n_masters");
    json_u64(&j, n);
    json_key(&j, "quorum");
    json_u64(&j, redlock_client_quorum(c));
    json_key(&j, "reachable");
    json_u64(&j, k->answered);
    json_key(&j, "counting");
    json_u64(&j, k->counting);
    json_key(&j, "excluded");
    json_u64(&j, k->excluded);
    json_key(&j, "pings");
    json_u64(&j, k->pings);
    json_key(&j, "clock_policy");
    json_cstr(&j, clock_policy_name(policy));
    json_key(&j, "restart_guard");
    json_bool(&j, !o->no_restart_guard);
    json_key(&j, "restart_guard_ms");
    json_u64(&j, o->no_restart_guard ? 0 : o->restart_guard_ms);
    json_key(&j, "masters");
    json_arr_begin(&j);
    for (size_t i = 0; i < redlock_status_masters(st); i++)
        ping_json_master(&j, c, i, redlock_status_master(st, i));
    json_arr_end(&j);
    json_obj_end(&j);
    json_end(&j);
}

#define PING_ROW "%-*s  %-5s  %7s  %10s  %-15s  %-9s  %5s  %11s  %-8s  %7s  %-6s  %s\n"

/* Masters that sit out for their memory (the memory guard): what would
 * change that, once, after the table. Waiting does, until the time the
 * QUORUM column gives; an operator can act sooner, at a risk. */
static void ping_memory_hint(const redlock_status *st)
{
    for (size_t i = 0; i < redlock_status_masters(st); i++) {
        if (redlock_status_master(st, i)->excluded &&
            strstr(redlock_status_master(st, i)->excluded_why, "memory marker")) {
            printf(
                "masters that sit out count again by themselves when the leases they may have\n"
                "forgotten end; new and empty: `declare-empty`; checked that no lock they forgot\n"
                "is live: `readmit` (its risk: redlock-cli(1))\n");
            return;
        }
    }
}

static void ping_table(const struct cli_opts *o, redlock_client *c, const redlock_status *st,
                       const struct ping_counts *k, int policy)
{
    size_t n = redlock_client_masters(c), w = addr_width(c);

    printf(PING_ROW, (int)w, "MASTER", "STATE", "RTT_US", "OFFSET_US", "CLOCK_RATE", "CLOCK",
           "JUMPS", "RATE_FAULTS", "RUN_ID", "UPTIME", "AOF", "QUORUM");
    for (size_t i = 0; i < redlock_status_masters(st); i++) {
        const redlock_master_state *m = redlock_status_master(st, i);
        char rate[48], up[24], run_id[9];

        if (m->err != 0) {
            printf(PING_ROW, (int)w, addr_of(c, i), "down", "-", "-", "-", "-", "-", "-", "-", "-",
                   "-", m->detail[0] ? m->detail : redlock_strerror(m->err));
            continue;
        }
        if (rate_known(m))
            snprintf(rate, sizeof(rate), "%.4f..%.4f", m->clock_rate_lo, m->clock_rate_hi);
        else
            snprintf(rate, sizeof(rate), "-");
        snprintf(run_id, sizeof(run_id), "%.8s", m->run_id[0] ? m->run_id : "-");
        printf("%-*s  %-5s  %7u  %10lld  %-15s  %-9s  %5llu  %11llu  %-8s  %7s  %-6s  %s\n", (int)w,
               addr_of(c, i), "up", (unsigned)m->rtt_us, (long long)m->clock_offset_us, rate,
               policy == REDLOCK_CLOCK_OFF ? "off"
               : m->clock_trusted          ? "trusted"
                                           : "untrusted",
               (unsigned long long)m->clock_jumps, (unsigned long long)m->clock_rate_faults, run_id,
               fmt_uptime(up, sizeof(up), m->run_id[0] ? m->uptime_s : -1),
               m->aof_always ? "always" : "no",
               !m->excluded         ? "counts"
               : m->excluded_why[0] ? m->excluded_why
                                    : "excluded");
    }
    printf("%u/%zu masters reachable, %u count toward a quorum of %zu (clock policy %s, "
           "memory guard %s)\n",
           k->answered, n, k->counting, redlock_client_quorum(c), clock_policy_name(policy),
           o->no_restart_guard ? "off" : "on");
    ping_memory_hint(st);
    fflush(stdout);
}

/* ping: reachability, round trip and clock of every master, and whether
 * its vote would count toward a quorum now (clock monitor, memory guard). */
static int ping(const struct cli_opts *o, redlock_client *c, redlock_status *st)
{
    const int policy = o->clock_policy >= 0 ? o->clock_policy : REDLOCK_CLOCK_WARN;
    redlock_error err;
    size_t n = redlock_client_masters(c), q = redlock_client_quorum(c);
    struct ping_counts k = { 0, 0, 0, 0 };
    int rc, code;

    rc = ping_sampled(o, c, st, &err, &k.pings);
    if (rc != 0 && rc != REDLOCK_ENOQUORUM)
        return inspect_failed(o, rc, &err);
    code = inspect_exit(rc, st, n);
    for (size_t i = 0; i < redlock_status_masters(st); i++) {
        const redlock_master_state *m = redlock_status_master(st, i);

        k.answered += (m->err == 0);
        k.excluded += (m->excluded != 0);
        k.counting += (m->err == 0 && !m->excluded);
    }
    if (o->json)
        ping_json(o, c, code, rc, st, &err, &k, policy);
    else
        ping_table(o, c, st, &k, policy);
    inspect_report_down(o, c, rc, st, &err);
    if (rc == 0 && k.counting < q)
        cli_warn("warning: ping: only %u of %zu masters count toward a quorum (%zu needed): "
                 "acquires fail until excluded masters count again",
                 k.counting, n, q);
    return code;
}

int cli_cmd_ping(const struct cli_opts *o, redlock_client *c)
{
    return with_status(o, c, ping);
}

/* metrics: ping's pings (--samples, so that the clock monitor has judged
 * each master's clock), then the client's metrics as Prometheus text on
 * stdout: which masters answered, their clock verdicts and the pings'
 * own counts; docs/operators.md. The exit status is ping's. */
static int metrics(const struct cli_opts *o, redlock_client *c, redlock_status *st)
{
    redlock_error err;
    unsigned pings;
    int rc, code;

    rc = ping_sampled(o, c, st, &err, &pings);
    if (rc != 0 && rc != REDLOCK_ENOQUORUM)
        return inspect_failed(o, rc, &err);
    code = inspect_exit(rc, st, redlock_client_masters(c));
    if (cli_metrics_print(c, stdout) < 0)
        return CLI_EXIT_SOFTWARE;
    inspect_report_down(o, c, rc, st, &err);
    return code;
}

int cli_cmd_metrics(const struct cli_opts *o, redlock_client *c)
{
    return with_status(o, c, metrics);
}
