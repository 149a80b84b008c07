/* config.c - defaults, the configuration check, and every argument check.
 *
 * redlock_client_new(), redlock_config_check() and the exported checks
 * (masters, ttl, token) share these functions, so redlock-cli and
 * redlock-bench validate input with the very rules the library applies.
 */
#include "base/config.h"
#include "base/addr.h"
#include "drift.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef RL_HAVE_TLS
#define RL_HAVE_TLS 0
#endif

#define BAD(...)                                       \
    do {                                               \
        rl_seterr(e, REDLOCK_EINVAL, -1, __VA_ARGS__); \
        return REDLOCK_EINVAL;                         \
    } while (0)

static void config_defaults(redlock_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->size = sizeof(*cfg);
    cfg->node_timeout_ms = 50;
    cfg->connect_timeout_ms = 1000;
    cfg->retry_count = 3;
    cfg->retry_delay_ms = 200;
    cfg->retry_jitter_ms = 100;
    cfg->drift_factor = 0.01;
    cfg->release_retry_count = 2;
    cfg->release_retry_delay_ms = 20;
    cfg->reconnect_min_ms = 10;
    cfg->reconnect_max_ms = 1000;
    cfg->max_inflight = 1024;
    cfg->log_level = REDLOCK_LOG_WARN;
    cfg->clock_policy = REDLOCK_CLOCK_WARN;
    cfg->clock_probe_ms = 1000;
    cfg->clock_jump_ms = 25;
    cfg->clock_window_ms = 10000;
    cfg->clock_readmit_ms = 10000;
    cfg->restart_guard = 1;
    cfg->restart_guard_ms = 0;
    cfg->watchdog_divisor = 3;
    cfg->watchdog_max_extends = 1000;
    cfg->watchdog_max_lease_ms = 3600000;
    cfg->pubsub_wait = 1;
    cfg->wait_ms = REDLOCK_WAIT_RETRIES;
    cfg->max_reply_bytes = 1u << 20;
    cfg->tls_verify = 1;
    cfg->local_run_max = 4;
}

void redlock_config_init_sized(redlock_config *cfg, size_t size)
{
    if (!cfg || size < sizeof(size_t))
        return;
    redlock_config d;
    config_defaults(&d);
    if (size > sizeof(d))
        size = sizeof(d); /* a newer program: the fields it added stay as it left them */
    memcpy(cfg, &d, size);
    cfg->size = size;
}

int rl_config_copy(const redlock_config *cfg, redlock_config *out, redlock_error *e)
{
    config_defaults(out);
    if (!cfg)
        BAD("config is NULL");
    /* Every program built against 1.0 or later passes at least the 1.0
     * layout, which ends with op_arg. */
    if (cfg->size < offsetof(redlock_config, op_arg) + sizeof(cfg->op_arg) ||
        cfg->size > (1u << 16))
        BAD("config.size is %zu: fill the config with redlock_config_init()", cfg->size);
    size_t n = cfg->size < sizeof(*out) ? cfg->size : sizeof(*out);
    memcpy(out, cfg, n);
    out->size = sizeof(*out);
    return 0;
}

static bool tls_wanted(const redlock_config *cfg, const rl_addr *addrs, int n)
{
    if (cfg->tls)
        return true;
    for (int i = 0; i < n; i++)
        if (addrs[i].tls)
            return true;
    return false;
}

static int check_tls(const redlock_config *cfg, const rl_addr *addrs, int n, redlock_error *e)
{
    if (cfg->tls < 0 || cfg->tls > 1)
        BAD("config.tls is %d (use 0 or 1)", cfg->tls);
    if (cfg->tls_verify < 0 || cfg->tls_verify > 1)
        BAD("config.tls_verify is %d (use 0 or 1; default 1)", cfg->tls_verify);
    bool files = cfg->tls_ca_file || cfg->tls_ca_dir || cfg->tls_cert_file || cfg->tls_key_file ||
                 cfg->tls_server_name;
    if (!tls_wanted(cfg, addrs, n)) {
        if (files)
            BAD("config.tls_* is set but no master uses TLS (set config.tls = 1 or write "
                "masters as rediss://...)");
        return 0;
    }
    if (!RL_HAVE_TLS)
        BAD("TLS to masters needs libredlock built against hiredis >= 1.0 with hiredis_ssl; "
            "this build has no TLS (meson setup -Dtls=enabled)");
    if (!cfg->tls_cert_file != !cfg->tls_key_file)
        BAD("config.tls_cert_file and config.tls_key_file go together (mutual TLS needs both)");
    for (int i = 0; i < n; i++)
        if (addrs[i].kind == RL_ADDR_UNIX && (addrs[i].tls || cfg->tls))
            BAD("masters: %s: TLS over a unix socket is not supported",
                RL_QUOTE(addrs[i].name, 60));
    return 0;
}

/* A drift factor a config takes, @name for messages. The floor is refused
 * apart from the range, with its reason: 0 is a valid number, and a user
 * who turns the margin off would not think it wrong. */
static int check_drift(double f, const char *name, redlock_error *e)
{
    if (!(f >= 0.0 && f < 1.0))
        BAD("%s is %g (use %g <= factor < 1; default 0.01)", name, f, REDLOCK_DRIFT_FACTOR_MIN);
    if (f < REDLOCK_DRIFT_FACTOR_MIN)
        BAD("%s is %g, below the floor of %g: the margin must cover clocks that NTP slews by "
            "up to 0.05 %% (default 0.01)",
            name, f, REDLOCK_DRIFT_FACTOR_MIN);
    return 0;
}

/* Timeouts, retries, reconnects and the in-flight bound. */
static int check_timing(const redlock_config *cfg, redlock_error *e)
{
    if (cfg->node_timeout_ms == 0 || cfg->node_timeout_ms > 600000)
        BAD("config.node_timeout_ms is %u (use 1..600000; default 50)", cfg->node_timeout_ms);
    if (cfg->connect_timeout_ms == 0 || cfg->connect_timeout_ms > 600000)
        BAD("config.connect_timeout_ms is %u (use 1..600000)", cfg->connect_timeout_ms);
    int rc = check_drift(cfg->drift_factor, "config.drift_factor", e);
    if (rc)
        return rc;
    if (cfg->retry_delay_ms > 600000 || cfg->retry_jitter_ms > 600000)
        BAD("config.retry_delay_ms/retry_jitter_ms too large (max 600000)");
    if (cfg->retry_count > 1000000)
        BAD("config.retry_count is %u (max 1000000)", cfg->retry_count);
    if (cfg->release_retry_delay_ms > 600000)
        BAD("config.release_retry_delay_ms too large (max 600000)");
    if (cfg->reconnect_min_ms == 0 || cfg->reconnect_min_ms > cfg->reconnect_max_ms ||
        cfg->reconnect_max_ms > 3600000)
        BAD("config.reconnect_min_ms/reconnect_max_ms must satisfy 1 <= min <= max <= 3600000");
    if (cfg->max_inflight == 0 || cfg->max_inflight > (1u << 20))
        BAD("config.max_inflight is %u (use 1..1048576)", cfg->max_inflight);
    return 0;
}

/* Who we are to the masters, and what the log says. */
static int check_identity(const redlock_config *cfg, redlock_error *e)
{
    if (cfg->key_prefix && strlen(cfg->key_prefix) > REDLOCK_PREFIX_MAX)
        BAD("config.key_prefix is longer than %d bytes", REDLOCK_PREFIX_MAX);
    if (cfg->username && !cfg->password)
        BAD("config.username is set without a password (ACL AUTH needs both)");
    if (cfg->password && !cfg->password[0])
        BAD("config.password is empty (use NULL for no AUTH)");
    if (cfg->log_level < REDLOCK_LOG_DEBUG || cfg->log_level > REDLOCK_LOG_ERROR)
        BAD("config.log_level is %d (use REDLOCK_LOG_DEBUG..REDLOCK_LOG_ERROR)", cfg->log_level);
    return 0;
}

/* The clock monitor, the restart guard, the watchdog, waiting, replies. */
static int check_guards(const redlock_config *cfg, redlock_error *e)
{
    if (cfg->clock_policy < REDLOCK_CLOCK_WARN || cfg->clock_policy > REDLOCK_CLOCK_OFF)
        BAD("config.clock_policy is %d (use REDLOCK_CLOCK_WARN, _EXCLUDE or _OFF)",
            cfg->clock_policy);
    if (cfg->clock_policy != REDLOCK_CLOCK_OFF &&
        (cfg->clock_probe_ms == 0 || cfg->clock_probe_ms > 3600000 ||
         cfg->clock_window_ms < cfg->clock_probe_ms || cfg->clock_window_ms > 86400000 ||
         cfg->clock_readmit_ms > 86400000 || cfg->clock_jump_ms > 3600000))
        BAD("config.clock_*: need 1 <= probe_ms <= window_ms <= 86400000, jump_ms and "
            "readmit_ms <= 86400000");
    if (cfg->restart_guard < 0 || cfg->restart_guard > 1)
        BAD("config.restart_guard is %d (use 0 or 1; default 1)", cfg->restart_guard);
    if (cfg->restart_guard_ms > REDLOCK_TTL_MAX_MS)
        BAD("config.restart_guard_ms is %u (max %u)", cfg->restart_guard_ms, REDLOCK_TTL_MAX_MS);
    if (cfg->watchdog_divisor < 2 || cfg->watchdog_divisor > 100)
        BAD("config.watchdog_divisor is %u (use 2..100; default 3)", cfg->watchdog_divisor);
    if (cfg->watchdog_max_extends == 0)
        BAD("config.watchdog_max_extends is 0 (use at least 1; default 1000)");
    if (cfg->watchdog_floor_ms > REDLOCK_TTL_MAX_MS)
        BAD("config.watchdog_floor_ms is %u (max %u)", cfg->watchdog_floor_ms, REDLOCK_TTL_MAX_MS);
    if (cfg->local_run_max > 1000)
        BAD("config.local_run_max is %u (max 1000; default 4, 0 or 1 for none)",
            cfg->local_run_max);
    if (cfg->pubsub_wait < 0 || cfg->pubsub_wait > 1)
        BAD("config.pubsub_wait is %d (use 0 or 1; default 1)", cfg->pubsub_wait);
    if (cfg->wait_ms != REDLOCK_WAIT_RETRIES && cfg->wait_ms != REDLOCK_WAIT_FOREVER &&
        (cfg->wait_ms < 0 || cfg->wait_ms > REDLOCK_WAIT_MAX_MS))
        BAD("config.wait_ms is %lld (use 0, a duration up to 2^40 ms, REDLOCK_WAIT_FOREVER "
            "or REDLOCK_WAIT_RETRIES)",
            (long long)cfg->wait_ms);
    if (cfg->max_reply_bytes != 0 && cfg->max_reply_bytes < 4096)
        BAD("config.max_reply_bytes is %u (use at least 4096; default 1 MiB)",
            cfg->max_reply_bytes);
    return 0;
}

int rl_config_validate(const redlock_config *cfg, redlock_error *e)
{
    if (!cfg->masters || !cfg->masters[0])
        BAD("config.masters is empty (use \"host:port,host:port,...\")");
    int rc = check_timing(cfg, e);
    if (!rc)
        rc = check_identity(cfg, e);
    if (!rc)
        rc = check_guards(cfg, e);
    if (rc)
        return rc;
    rl_addr addrs[REDLOCK_MAX_MASTERS];
    int n = rl_addr_parse_list(cfg->masters, addrs, e);
    if (n < 0)
        return n;
    return check_tls(cfg, addrs, n, e);
}

int redlock_config_check(const redlock_config *cfg, redlock_error *reterr)
{
    redlock_config full;
    int rc = rl_config_copy(cfg, &full, reterr);
    return rc ? rc : rl_config_validate(&full, reterr);
}

int redlock_masters_check(const char *masters, size_t *ret_count, int *ret_secret,
                          redlock_error *reterr)
{
    rl_addr addrs[REDLOCK_MAX_MASTERS];
    int n = rl_addr_parse_list(masters, addrs, reterr);
    if (n < 0)
        return n;
    int secret = 0;
    for (int i = 0; i < n; i++)
        secret |= addrs[i].has_password;
    if (ret_count)
        *ret_count = (size_t)n;
    if (ret_secret)
        *ret_secret = secret;
    return 0;
}

/* ---- arguments ------------------------------------------------------------- */

int rl_check_resource(const void *resource, size_t len, redlock_error *e)
{
    if (!resource || len == 0)
        BAD("resource name is empty (give 1..%d bytes)", REDLOCK_RESOURCE_MAX);
    if (len > REDLOCK_RESOURCE_MAX)
        BAD("resource name is %zu bytes, longer than %d (hash long names first)", len,
            REDLOCK_RESOURCE_MAX);
    const void *nul = memchr(resource, '\0', len);
    if (nul)
        BAD("resource name has a NUL byte at offset %zu (any byte but NUL is allowed)",
            (size_t)((const char *)nul - (const char *)resource));
    return 0;
}

int rl_check_set(const redlock_resource *set, size_t count, redlock_error *e)
{
    if (!set || count == 0 || count > REDLOCK_SET_MAX)
        BAD("a lock covers 1..%d resources (got %zu)", REDLOCK_SET_MAX, set ? count : 0);
    for (size_t i = 0; i < count; i++) {
        int rc = rl_check_resource(set[i].name, set[i].len, e);
        if (rc)
            return rc;
        for (size_t j = 0; j < i; j++)
            if (set[j].len == set[i].len && memcmp(set[j].name, set[i].name, set[i].len) == 0)
                BAD("resource %zu repeats resource %zu: list each resource once", i + 1, j + 1);
    }
    return 0;
}

/* The least ttl that leaves validity with @f: t - ceil(t * f) - 2 >= 1 holds
 * from about 3 / (1 - f) on; start just below and step up. 0 if none fits. */
static uint32_t least_ttl(double f)
{
    double guess = floor(3.0 / (1.0 - f)) - 2.0;
    if (guess > (double)REDLOCK_TTL_MAX_MS)
        return 0;
    uint32_t t = guess < 1.0 ? 1u : (uint32_t)guess;
    while (t < REDLOCK_TTL_MAX_MS && drift_validity_ms(t, 0, f) <= 0)
        t++;
    return drift_validity_ms(t, 0, f) > 0 ? t : 0;
}

int rl_check_ttl(uint32_t ttl_ms, double drift_factor, redlock_error *e)
{
    if (ttl_ms == 0 || ttl_ms > REDLOCK_TTL_MAX_MS)
        BAD("ttl %u ms is out of range (use 1..%u)", ttl_ms, REDLOCK_TTL_MAX_MS);
    int rc = check_drift(drift_factor, "drift factor", e);
    if (rc)
        return rc;
    /* A ttl no longer than the drift margin can never leave validity > 0:
     * refuse it up front instead of failing every attempt with EEXPIRED. */
    if (drift_validity_ms(ttl_ms, 0, drift_factor) <= 0) {
        uint32_t least = least_ttl(drift_factor);
        if (!least)
            BAD("drift factor %g leaves no validity for any ttl (use a smaller factor, e.g. "
                "0.01)",
                drift_factor);
        BAD("ttl %u ms leaves no validity after the %llu ms clock-drift margin (use at "
            "least %u)",
            ttl_ms, (unsigned long long)drift_margin_ms(ttl_ms, drift_factor), least);
    }
    return 0;
}

int rl_check_token(const char *token, redlock_error *e)
{
    size_t tlen = token ? strlen(token) : 0;
    if (tlen == 0 || tlen > REDLOCK_TOKEN_MAX)
        BAD("token must be 1..%d bytes (got %zu)", REDLOCK_TOKEN_MAX, tlen);
    for (size_t i = 0; i < tlen; i++) {
        unsigned char ch = (unsigned char)token[i];
        if (ch <= ' ' || ch >= 127)
            BAD("token has a space or non-printable byte 0x%02x at offset %zu (tokens are "
                "printed by redlock-cli lock)",
                ch, i);
    }
    return 0;
}

int redlock_ttl_check(uint32_t ttl_ms, double drift_factor, redlock_error *reterr)
{
    return rl_check_ttl(ttl_ms, drift_factor, reterr);
}

int redlock_token_check(const char *token, redlock_error *reterr)
{
    return rl_check_token(token, reterr);
}

int64_t redlock_validity_ms(uint32_t ttl_ms, uint64_t elapsed_us, double drift_factor)
{
    if (!(drift_factor >= 0.0 && drift_factor < 1.0))
        return 0;
    return drift_validity_ms(ttl_ms, elapsed_us, drift_factor);
}

uint64_t redlock_drift_margin_ms(uint32_t ttl_ms, double drift_factor)
{
    if (!(drift_factor >= 0.0 && drift_factor < 1.0))
        return UINT64_MAX;
    return drift_margin_ms(ttl_ms, drift_factor);
}

/* ---- acquire options ------------------------------------------------------- */

/* Options fields a program knows: those inside the size it was built with. */
#define OPT_KNOWN(o, field) \
    ((o)->size >= offsetof(redlock_acquire_opts, field) + sizeof((o)->field))

int rl_opts_resolve(const redlock_config *cfg, const redlock_acquire_opts *opts, rl_wait_spec *ret,
                    redlock_error *e)
{
    rl_wait_spec w = {
        .wait_ms = cfg->wait_ms,
        .delay_ms = cfg->retry_delay_ms,
        .jitter_ms = cfg->retry_jitter_ms,
    };
    if (opts) {
        if (opts->size < offsetof(redlock_acquire_opts, wait_ms) || opts->size > (1u << 16))
            BAD("acquire options: size is %zu: fill them with redlock_acquire_opts_init()",
                opts->size);
        w.ttl_ms = opts->ttl_ms;
        w.flags = opts->flags;
        if (opts->retry_delay_ms != REDLOCK_OPT_DEFAULT)
            w.delay_ms = opts->retry_delay_ms;
        if (opts->retry_jitter_ms != REDLOCK_OPT_DEFAULT)
            w.jitter_ms = opts->retry_jitter_ms;
        if (OPT_KNOWN(opts, wait_ms) && opts->wait_ms != REDLOCK_WAIT_DEFAULT)
            w.wait_ms = opts->wait_ms;
        if (OPT_KNOWN(opts, cancel))
            w.cancel = opts->cancel;
    }
    if (w.flags & ~REDLOCK_FENCE)
        BAD("acquire options: unknown flags 0x%x (use 0 or REDLOCK_FENCE)", w.flags);
    if (w.delay_ms > 600000 || w.jitter_ms > 600000)
        BAD("acquire options: retry_delay_ms %u / retry_jitter_ms %u too large (max 600000)",
            w.delay_ms, w.jitter_ms);
    if (w.wait_ms == REDLOCK_WAIT_RETRIES) {
        /* A deadline of retry_count polls at their longest, and no more than
         * retry_count polls (docs/waiting.md, "The default wait"). */
        uint64_t poll = (uint64_t)w.delay_ms + w.jitter_ms;
        uint64_t d = (uint64_t)cfg->retry_count * (poll > 0 ? poll : 1);
        w.from_retries = true;
        w.max_polls = cfg->retry_count;
        w.wait_ms = d < (uint64_t)REDLOCK_WAIT_MAX_MS ? (int64_t)d : REDLOCK_WAIT_MAX_MS;
    } else if (w.wait_ms != REDLOCK_WAIT_FOREVER &&
               (w.wait_ms < 0 || w.wait_ms > REDLOCK_WAIT_MAX_MS)) {
        BAD("acquire options: wait_ms is %lld (use 0, 1..2^40 ms or REDLOCK_WAIT_FOREVER)",
            (long long)w.wait_ms);
    }
    int rc = rl_check_ttl(w.ttl_ms, cfg->drift_factor, e);
    if (rc)
        return rc;
    *ret = w;
    return 0;
}
