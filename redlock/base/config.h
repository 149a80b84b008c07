/* config.h - defaults, checks of the configuration and of every argument.
 *
 * One home for each rule: the library's calls, redlock_config_check() and
 * the exported checks that redlock-cli and redlock-bench use all end here.
 */
#ifndef REDLOCK_CONFIG_H
#define REDLOCK_CONFIG_H

#include "base/common.h"

/* Copy the first cfg->size bytes of @cfg over defaults into @out: fields a
 * program built against an older header does not know take their defaults. */
int rl_config_copy(const redlock_config *cfg, redlock_config *out, redlock_error *e);

/* Everything redlock_config_check() checks (no DNS). @cfg: a full copy. */
int rl_config_validate(const redlock_config *cfg, redlock_error *e);

int rl_check_resource(const void *resource, size_t len, redlock_error *e);
int rl_check_set(const redlock_resource *set, size_t count, redlock_error *e);
int rl_check_ttl(uint32_t ttl_ms, double drift_factor, redlock_error *e);
int rl_check_token(const char *token, redlock_error *e);

/* The acquire options in effect: @opts (any size, NULL: none) over the
 * client's defaults. */
typedef struct rl_wait_spec {
    uint32_t ttl_ms;
    unsigned flags;
    int64_t wait_ms;              /* 0, > 0, or REDLOCK_WAIT_FOREVER */
    bool from_retries;            /* wait drawn from retry_count (redlock_acquire):
                                     wait_ms is retry_count x (delay + jitter) */
    uint32_t max_polls;           /* from_retries: retry_count polls end it too */
    uint32_t delay_ms, jitter_ms; /* polling fallback */
    redlock_cancel *cancel;
} rl_wait_spec;

int rl_opts_resolve(const redlock_config *cfg, const redlock_acquire_opts *opts, rl_wait_spec *ret,
                    redlock_error *e);

/* The options of the calls of 0.1, which take the ttl and the flags as
 * arguments: the client's wait and polling (redlock_acquire_set and its
 * _async twin). */
static inline redlock_acquire_opts rl_opts_of(uint32_t ttl_ms, unsigned flags)
{
    redlock_acquire_opts o;
    redlock_acquire_opts_init(&o);
    o.ttl_ms = ttl_ms;
    o.flags = flags;
    return o;
}

#endif
