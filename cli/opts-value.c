/* opts-value.c - the values redlock-cli's options take: numbers, durations,
 * --wait, signals, the drift factor and the clock policy, and the check
 * that a ttl leaves some validity (the library's).
 *
 * Each parser is strict (no sign, no spaces, no trailing garbage, a range),
 * so that a typo is an error rather than a different lock.
 */
#include "opts.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

/* The number at the start of @s, in decimal; *@end after it. strtoull()
 * accepts leading spaces and a sign (and wraps "-1" to ULLONG_MAX): insist
 * on a digit first so neither gets through. */
static int leading_number(const char *s, unsigned long long *v, char **end)
{
    if (!s || !isdigit((unsigned char)s[0]))
        return -1;
    errno = 0;
    *v = strtoull(s, end, 10);
    return errno != 0 ? -1 : 0;
}

int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
    char *end;
    unsigned long long v;

    if (leading_number(s, &v, &end) < 0 || *end != '\0' || v < min || v > max)
        return -1;
    *ret = v;
    return 0;
}

static const struct {
    const char *unit;
    uint64_t ms;
} duration_units[] = {
    { "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 },
};

/* Decimal digits, at most one '.', with a digit on both sides of it: what
 * strtod() accepts beyond that (hex floats, exponents, inf, nan, spaces,
 * signs) is never what a user meant by a duration or a factor. *@end is
 * after the number. */
static int strict_decimal(const char *s, const char **end)
{
    const char *p = s;

    if (!isdigit((unsigned char)*p))
        return -1;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        while (isdigit((unsigned char)*p))
            p++;
    }
    *end = p;
    return 0;
}

int cli_parse_duration_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *ret)
{
    const char *end, *p;
    uint64_t mul = 0, whole = 0, frac = 0, scale = 1;

    if (!s || strict_decimal(s, &end) < 0)
        return -1;
    for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++)
        if (strcmp(end, duration_units[i].unit) == 0)
            mul = duration_units[i].ms;
    if (mul == 0)
        return -1;
    /* Exact integer arithmetic: 1.5h is 5400000 ms, not a float's guess;
     * more than 12 digits before the point or 9 after it is out of any range we take. */
    for (p = s; isdigit((unsigned char)*p); p++) {
        if (p - s >= 12)
            return -1;
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.') {
        const char *f0 = ++p;

        for (; p < end; p++) {
            if (p - f0 >= 9)
                return -1;
            frac = frac * 10 + (uint64_t)(*p - '0');
            scale *= 10;
        }
    }
    /* A fraction of a millisecond is not a duration we can keep: refused
     * rather than rounded, so 0.5ms never silently becomes 0 or 1. */
    if (frac * mul % scale != 0)
        return -1;
    if (whole > UINT64_MAX / mul / 2)
        return -1;
    *ret = whole * mul + frac * mul / scale;
    if (*ret < min_ms || *ret > max_ms)
        return -1;
    return 0;
}

int cli_parse_wait(const char *val, int64_t *ret)
{
    uint64_t ms;

    if (strcmp(val, "forever") == 0) {
        *ret = CLI_WAIT_FOREVER;
        return 0;
    }
    if (cli_parse_duration_ms(val, 0, (uint64_t)CLI_WAIT_MAX_MS, &ms) < 0) {
        cli_usage_error("--wait '%s': expected forever, or a duration from 0 (one attempt) to a "
                        "year: " CLI_DURATION_FORMS,
                        val);
        return -1;
    }
    *ret = (int64_t)ms;
    return 0;
}

/* Signals whose default action does not end a process: sending one when
 * the lock is lost would leave CMD running (or stopped, to run again
 * later) without the lock. */
static int ends_process(int sig)
{
    switch (sig) {
    case SIGCHLD:
    case SIGCONT:
    case SIGSTOP:
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU:
    case SIGURG:
    case SIGWINCH: return 0;
    default: return 1;
    }
}

int cli_parse_signal(const char *opt, const char *val, int *ret)
{
    uint64_t n;
    int sig = 0;

    if (cli_parse_u64(val, 1, (uint64_t)SIGRTMAX, &n) == 0) {
        sig = (int)n;
    } else {
        const char *name = strncasecmp(val, "SIG", 3) == 0 ? val + 3 : val;

        for (int s = 1; s < SIGRTMIN && name[0] != '\0'; s++) {
            const char *abbrev = sigabbrev_np(s);

            if (abbrev && strcasecmp(abbrev, name) == 0)
                sig = s;
        }
    }
    if (sig == 0) {
        cli_usage_error("%s '%s': not a signal: give a name such as TERM, INT, HUP, KILL or "
                        "USR1, or a number",
                        opt, val);
        return -1;
    }
    if (!ends_process(sig)) {
        cli_usage_error("%s '%s': SIG%s does not end CMD (by default it stops, continues or is "
                        "ignored): give one that does, such as TERM, INT, HUP or KILL",
                        opt, val, sigabbrev_np(sig));
        return -1;
    }
    *ret = sig;
    return 0;
}

int cli_parse_drift(const char *val, double *ret)
{
    const char *dend;
    char *end;
    double f;

    if (strict_decimal(val, &dend) < 0 || *dend != '\0')
        goto bad;
    errno = 0;
    f = strtod(val, &end);
    if (errno != 0 || *end != '\0' || !isfinite(f) || f < 0.0 || f >= 1.0)
        goto bad;
    /* 0 is a well-formed fraction that a user may take for "no drift
     * here": say what it would remove, apart from the syntax. */
    if (f < REDLOCK_DRIFT_FACTOR_MIN) {
        cli_usage_error("--drift-factor '%s': below the floor of %g (0.1 %% of the ttl): the "
                        "margin must cover clocks that NTP slews by up to 0.05 %%",
                        val, REDLOCK_DRIFT_FACTOR_MIN);
        return -1;
    }
    *ret = f;
    return 0;
bad:
    cli_usage_error("--drift-factor '%s': expected a fraction of the ttl in decimals, %g <= F < 1 "
                    "(e.g. 0.01)",
                    val, REDLOCK_DRIFT_FACTOR_MIN);
    return -1;
}

int cli_parse_clock_policy(const char *val, int *ret)
{
    if (strcmp(val, "warn") == 0) {
        *ret = REDLOCK_CLOCK_WARN;
    } else if (strcmp(val, "exclude") == 0) {
        *ret = REDLOCK_CLOCK_EXCLUDE;
    } else if (strcmp(val, "off") == 0) {
        *ret = REDLOCK_CLOCK_OFF;
    } else {
        cli_usage_error("--clock-policy '%s': expected warn (log it), exclude (do not count "
                        "the master toward a quorum) or off (no clock probes)",
                        val);
        return -1;
    }
    return 0;
}

/* The library's check, with the drift factor in force (its default when
 * --drift-factor is not given). A factor that leaves no ttl any validity
 * is the factor's fault, not the ttl's: name the option that is wrong. */
int cli_check_ttl_margin(const struct cli_opts *o)
{
    redlock_config defaults;
    redlock_error err;
    double f;

    redlock_config_init(&defaults);
    f = o->drift_factor >= 0 ? o->drift_factor : defaults.drift_factor;
    memset(&err, 0, sizeof(err));
    if (redlock_ttl_check(o->ttl_ms, f, &err) == 0)
        return 0;
    if (redlock_ttl_check(REDLOCK_TTL_MAX_MS, f, NULL) != 0)
        cli_usage_error("--drift-factor: %s", err.msg);
    else
        cli_usage_error("--ttl: %s", err.msg);
    return -1;
}
