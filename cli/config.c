/* config.c - the library's configuration, made from the command line.
 *
 * One function turns struct cli_opts into a redlock_config, for the client
 * main() makes and for the library's own check at the end of parsing
 * (redlock_config_check()), so that a command line the CLI accepts is one
 * the library accepts, and a bad one is refused before any connection.
 * The hooks (log, events, run's operation hook) are main()'s business.
 */
#include "opts.h"

#include <string.h>

#include "cli.h"

void cli_config_fill(const struct cli_opts *o, redlock_config *cfg)
{
    redlock_config_init(cfg);
    cfg->masters = o->masters;
    if (o->prefix)
        cfg->key_prefix = o->prefix;
    cfg->username = o->user;
    cfg->password = o->password;
    cfg->tls = o->tls;
    cfg->tls_ca_file = o->tls_ca_file;
    cfg->tls_ca_dir = o->tls_ca_dir;
    cfg->tls_cert_file = o->tls_cert_file;
    cfg->tls_key_file = o->tls_key_file;
    cfg->tls_server_name = o->tls_server_name;
    if (o->tls_insecure)
        cfg->tls_verify = 0;
    if (o->timeout_ms > 0)
        cfg->node_timeout_ms = o->timeout_ms;
    if (o->connect_timeout_ms > 0)
        cfg->connect_timeout_ms = o->connect_timeout_ms;
    /* How long an acquire waits is said per call (acquire.c): --wait, or
     * without it the library's default wait, a deadline of --retry polls of
     * --retry-delay x 1.5 that also ends after --retry polls, in the queue
     * with the slower polls far from its head (none by default: one
     * attempt, as flock -n's scripts expect of a lock that is held). */
    cfg->retry_count = o->retry;
    cfg->retry_delay_ms = o->retry_delay_ms;
    cfg->retry_jitter_ms = o->retry_delay_ms / 2;
    cfg->pubsub_wait = !o->no_pubsub;
    if (o->drift_factor >= 0)
        cfg->drift_factor = o->drift_factor;
    if (o->clock_policy >= 0)
        cfg->clock_policy = o->clock_policy;
    if (o->no_restart_guard)
        cfg->restart_guard = 0;
    if (o->restart_guard_ms_set)
        cfg->restart_guard_ms = o->restart_guard_ms;
    /* ping reports clock rates: a rate needs two samples, and a process
     * that lives for one ping would otherwise see none at the default
     * interval (1 s). */
    if (o->cmd == CLI_CMD_PING || o->cmd == CLI_CMD_METRICS)
        cfg->clock_probe_ms = CLI_PING_PROBE_MS;
    /* run: the library's watchdog keeps the lock while CMD runs, within
     * run's caps. Batch jobs (a nightly backup) run for hours: the
     * library's one-hour default would stop them by surprise. Still
     * limited, as the Redlock spec asks, but by a week. */
    if (o->cmd == CLI_CMD_RUN) {
        cfg->watchdog_divisor = CLI_RUN_WATCHDOG_DIVISOR;
        cfg->watchdog_floor_ms = cli_run_floor_ms(o);
        cfg->watchdog_max_extends = o->max_extends ? o->max_extends : CLI_RUN_MAX_EXTENDS;
        cfg->watchdog_max_lease_ms = o->max_lease_ms ? o->max_lease_ms : CLI_RUN_MAX_LEASE_MS;
    }
}

uint32_t cli_run_floor_ms(const struct cli_opts *o)
{
    redlock_config d;
    uint64_t timeout, floor = o->ttl_ms / 10;

    redlock_config_init(&d);
    timeout = o->timeout_ms ? o->timeout_ms : d.node_timeout_ms;
    if (floor < 4 * timeout)
        floor = 4 * timeout;
    return floor > REDLOCK_TTL_MAX_MS ? REDLOCK_TTL_MAX_MS : (uint32_t)floor;
}

int cli_config_check(const struct cli_opts *o)
{
    redlock_config cfg;
    redlock_error err;

    /* In the words of the command line: the library's would name a field. */
    if (o->user && !o->password) {
        cli_usage_error("--user '%s' needs a password: --password-file FILE or "
                        "$REDLOCK_PASSWORD",
                        o->user);
        return -1;
    }
    /* The library checks the TLS files, not the verify flag (its default
     * is on): --insecure alone would pass, where --cacert alone is refused.
     * The same answer for both. */
    if (o->tls_insecure && !o->tls && o->masters && !strcasestr(o->masters, "rediss://")) {
        cli_usage_error("--insecure is given but no master uses TLS (add --tls or write masters "
                        "as rediss://...)");
        return -1;
    }
    /* The library opens the TLS files with OpenSSL, which would block on
     * a FIFO: the kind is checked here, as for the files we read. */
    if (cli_check_input_kind("--cacert", o->tls_ca_file, 0) < 0 ||
        cli_check_input_kind("--cacertdir", o->tls_ca_dir, CLI_INPUT_DIR) < 0 ||
        cli_check_input_kind("--cert", o->tls_cert_file, 0) < 0 ||
        cli_check_input_kind("--key", o->tls_key_file, 0) < 0)
        return -1;
    cli_config_fill(o, &cfg);
    memset(&err, 0, sizeof(err));
    if (redlock_config_check(&cfg, &err) == 0)
        return 0;
    /* Whatever the option ranges above did not catch (TLS without TLS
     * support in this build, say): the library's message as it is. */
    cli_usage_error("%s", err.msg[0] ? err.msg : redlock_strerror(REDLOCK_EINVAL));
    return -1;
}
