/* test-bad-input-config.c - a client configured wrongly is refused, saying why.
 *
 * redlock_client_new() refuses bad master lists (EINVAL, or ERESOLVE for a
 * host that does not resolve) and bad config fields (EINVAL) with a one-line
 * message naming the field, and writes nothing to its output on failure; edge
 * cases that are valid are accepted. Tables are parameterized tests over
 * static arrays (TC_CASE_INDEXES). docs/errors.md
 * ("Bad input: what the user sees, and the test that proves it") lists each
 * input with what the user sees.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

TestSuite(bad_input, .timeout = 60);

/* ------------------------------------------------------------------------ */
/* Master lists                                                             */
/* ------------------------------------------------------------------------ */

struct masters_case {
    const char *masters;
    int code;
};

#define SEVENTEEN                                                              \
    "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4,127.0.0.1:5,127.0.0.1:6," \
    "127.0.0.1:7,127.0.0.1:8,127.0.0.1:9,127.0.0.1:10,127.0.0.1:11,"           \
    "127.0.0.1:12,127.0.0.1:13,127.0.0.1:14,127.0.0.1:15,127.0.0.1:16,"        \
    "127.0.0.1:17"

#define SIXTEEN                                                                \
    "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4,127.0.0.1:5,127.0.0.1:6," \
    "127.0.0.1:7,127.0.0.1:8,127.0.0.1:9,127.0.0.1:10,127.0.0.1:11,"           \
    "127.0.0.1:12,127.0.0.1:13,127.0.0.1:14,127.0.0.1:15,127.0.0.1:16"

static const struct masters_case masters_cases[] = {
    { "", REDLOCK_EINVAL },
    { "host", REDLOCK_EINVAL },
    { "127.0.0.1", REDLOCK_EINVAL },
    { "h:0", REDLOCK_EINVAL },
    { "h:99999", REDLOCK_EINVAL },
    { "h:65536", REDLOCK_EINVAL },
    { "h:12x", REDLOCK_EINVAL },
    { "h:-1", REDLOCK_EINVAL },
    { "h:+80", REDLOCK_EINVAL },
    { "h:", REDLOCK_EINVAL },
    { ":7000", REDLOCK_EINVAL },
    { "127.0.0.1:7000,127.0.0.1:7000", REDLOCK_EINVAL },
    { "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7000", REDLOCK_EINVAL },
    { "127.0.0.1:7000,localhost:7000", REDLOCK_EINVAL },          /* same master, two names */
    { "127.0.0.1:7000,[::ffff:127.0.0.1]:7000", REDLOCK_EINVAL }, /* IPv4-mapped: same master */
    { "[::1", REDLOCK_EINVAL },
    { "[::1]", REDLOCK_EINVAL },
    { "[::1]7000", REDLOCK_EINVAL },
    { "::1:7000", REDLOCK_EINVAL }, /* IPv6 needs brackets */
    { "127.0.0.1:7000,", REDLOCK_EINVAL },
    { ",127.0.0.1:7000", REDLOCK_EINVAL },
    { "127.0.0.1:7000,,127.0.0.1:7001", REDLOCK_EINVAL },
    { SEVENTEEN, REDLOCK_EINVAL },
    { "0127.0.0.1:7000", REDLOCK_EINVAL }, /* octal to inet_aton: 87.0.0.1, another host */
    { "127.0.0.01:7000", REDLOCK_EINVAL },
    { "0x7f.0.0.1:7000", REDLOCK_EINVAL },
    { "ftp://127.0.0.1:7000", REDLOCK_EINVAL },        /* unknown scheme */
    { "redis://127.0.0.1:7000?db=1", REDLOCK_EINVAL }, /* the db is /N */
    { "redis://127.0.0.1:7000/x", REDLOCK_EINVAL },
    { "redis://127.0.0.1:7000/65536", REDLOCK_EINVAL },
    { "redis://user@127.0.0.1:7000", REDLOCK_EINVAL },  /* user without password */
    { "redis://u:@127.0.0.1:7000", REDLOCK_EINVAL },    /* empty password */
    { "redis://u:%zz@127.0.0.1:7000", REDLOCK_EINVAL }, /* bad %-escape */
    { "unix://", REDLOCK_EINVAL },
    { "unix://relative.sock", REDLOCK_EINVAL },
    { "unix:///tmp/x.sock?db=z", REDLOCK_EINVAL },
    { "unix:///tmp/x.sock,unix:///tmp/x.sock", REDLOCK_EINVAL },
    { "nonexistent.invalid:7000", REDLOCK_ERESOLVE },
    { "127.0.0.1:7000,nonexistent.invalid:7000", REDLOCK_ERESOLVE },
};

ParameterizedTestParameters(bad_input, bad_masters_are_refused)
{
    TC_CASE_INDEXES(masters_cases);
}

ParameterizedTest(size_t *i, bad_input, bad_masters_are_refused)
{
    const struct masters_case *tc = &masters_cases[*i];
    redlock_config cfg;
    redlock_client *sentinel = (redlock_client *)&cfg;
    redlock_client *c = sentinel;
    redlock_error e;
    int rc;

    redlock_config_init(&cfg);
    cfg.masters = tc->masters;
    memset(&e, 0, sizeof(e));
    rc = redlock_client_new(&cfg, NULL, &c, &e);
    cr_expect(eq(int, rc, tc->code), "masters \"%s\": %s (%s)", tc->masters, redlock_err_name(rc),
              e.msg);
    cr_expect(eq(int, e.code, tc->code), "masters \"%s\"", tc->masters);
    cr_expect(eq(ptr, (void *)c, (void *)sentinel), "ret written on failure");
    tc_expect_msg(&e, tc->masters);
    if (tc->code == REDLOCK_EINVAL)
        cr_expect(not(zero(ptr, strstr(e.msg, "masters"))), "message does not name the field: %s",
                  e.msg);
    else
        cr_expect(not(zero(ptr, strstr(e.msg, "nonexistent.invalid"))),
                  "message does not name the host: %s", e.msg);
    if (rc == 0)
        redlock_client_free(c);
}

struct good_masters_case {
    const char *masters;
    size_t n;
};

static const struct good_masters_case good_masters_cases[] = {
    { SIXTEEN, 16 },
    { "127.0.0.1:1", 1 },
    { " 127.0.0.1:1 , 127.0.0.1:2 ", 2 },
    { "[::1]:1,127.0.0.1:1", 2 }, /* same port, different hosts */
    { "localhost:65535", 1 },
};

ParameterizedTestParameters(bad_input, edge_master_lists_are_accepted)
{
    TC_CASE_INDEXES(good_masters_cases);
}

ParameterizedTest(size_t *i, bad_input, edge_master_lists_are_accepted)
{
    const struct good_masters_case *tc = &good_masters_cases[*i];
    redlock_config cfg;
    redlock_client *c = NULL;
    redlock_error e;
    int rc;

    redlock_config_init(&cfg);
    cfg.masters = tc->masters;
    rc = redlock_client_new(&cfg, NULL, &c, &e);
    cr_assert(eq(int, rc, 0), "masters \"%s\": %s: %s", tc->masters, redlock_err_name(rc), e.msg);
    cr_expect(eq(sz, redlock_client_masters(c), tc->n));
    cr_expect(eq(sz, redlock_client_quorum(c), tc->n / 2 + 1));
    cr_expect(zero(ptr, (void *)redlock_client_master_addr(c, tc->n)));
    cr_expect(not(zero(ptr, (void *)redlock_client_master_addr(c, tc->n - 1))));
    redlock_client_free(c);
}

/* ------------------------------------------------------------------------ */
/* Config fields                                                            */
/* ------------------------------------------------------------------------ */

struct config_case {
    const char *field; /* must appear in the message */
    void (*spoil)(redlock_config *cfg);
};

static void no_masters(redlock_config *cfg)
{
    cfg->masters = NULL;
}
static void node_timeout_zero(redlock_config *cfg)
{
    cfg->node_timeout_ms = 0;
}
static void connect_timeout_zero(redlock_config *cfg)
{
    cfg->connect_timeout_ms = 0;
}
static void drift_one(redlock_config *cfg)
{
    cfg->drift_factor = 1.0;
}
static void drift_negative(redlock_config *cfg)
{
    cfg->drift_factor = -0.01;
}
static void drift_nan(redlock_config *cfg)
{
    cfg->drift_factor = NAN;
}
static void drift_zero(redlock_config *cfg)
{
    cfg->drift_factor = 0.0;
}
static void drift_below_floor(redlock_config *cfg)
{
    cfg->drift_factor = 0.0005;
}
static void inflight_zero(redlock_config *cfg)
{
    cfg->max_inflight = 0;
}
static void reconnect_inverted(redlock_config *cfg)
{
    cfg->reconnect_min_ms = 500;
    cfg->reconnect_max_ms = 100;
}
static void password_empty(redlock_config *cfg)
{
    cfg->password = "";
}
static void username_alone(redlock_config *cfg)
{
    cfg->username = "user";
}
static void prefix_too_long(redlock_config *cfg)
{
    static char prefix[REDLOCK_PREFIX_MAX + 2];

    memset(prefix, 'p', REDLOCK_PREFIX_MAX + 1);
    cfg->key_prefix = prefix;
}

static const struct config_case config_cases[] = {
    { "masters", no_masters },
    { "node_timeout_ms", node_timeout_zero },
    { "connect_timeout_ms", connect_timeout_zero },
    { "drift_factor", drift_one },
    { "drift_factor", drift_negative },
    { "drift_factor", drift_nan },
    { "drift_factor", drift_zero },
    { "drift_factor", drift_below_floor },
    { "max_inflight", inflight_zero },
    { "reconnect", reconnect_inverted },
    { "password", password_empty },
    { "username", username_alone },
    { "key_prefix", prefix_too_long },
};

ParameterizedTestParameters(bad_input, bad_config_fields_are_named)
{
    TC_CASE_INDEXES(config_cases);
}

ParameterizedTest(size_t *i, bad_input, bad_config_fields_are_named)
{
    const struct config_case *tc = &config_cases[*i];
    redlock_config cfg;
    redlock_client *c = NULL;
    redlock_error e;
    int rc;

    tc_config(&cfg);
    tc->spoil(&cfg);
    rc = redlock_client_new(&cfg, NULL, &c, &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL), "%s: %s", tc->field, redlock_err_name(rc));
    cr_expect(zero(ptr, c));
    tc_expect_msg(&e, tc->field);
    cr_expect(not(zero(ptr, strstr(e.msg, tc->field))), "\"%s\" not in: %s", tc->field, e.msg);
    if (rc == 0)
        redlock_client_free(c);
}

/* The drift factor's floor: 0 and half the floor are refused saying why,
 * by the config check and by the ttl check (which takes a factor of its
 * own); the floor itself is taken. 0 used to pass and left the margin at
 * its 2 ms constant. */
Test(bad_input, drift_factor_below_the_floor_is_refused_and_the_floor_taken)
{
    const double below[] = { 0.0, REDLOCK_DRIFT_FACTOR_MIN / 2 };
    redlock_config cfg;
    redlock_error e;

    for (size_t i = 0; i < sizeof(below) / sizeof(below[0]); i++) {
        tc_config(&cfg);
        cfg.drift_factor = below[i];
        cr_expect(eq(int, redlock_config_check(&cfg, &e), REDLOCK_EINVAL), "%g", below[i]);
        tc_expect_msg(&e, "config.drift_factor");
        cr_expect(not(zero(ptr, strstr(e.msg, "below the floor of 0.001: the margin must cover "
                                              "clocks that NTP slews by up to 0.05 %"))),
                  "%s", e.msg);
        cr_expect(eq(int, redlock_ttl_check(30000, below[i], &e), REDLOCK_EINVAL), "%g", below[i]);
        tc_expect_msg(&e, "drift factor");
        cr_expect(not(zero(ptr, strstr(e.msg, "below the floor of 0.001"))), "%s", e.msg);
    }
    tc_config(&cfg);
    cfg.drift_factor = REDLOCK_DRIFT_FACTOR_MIN;
    cr_expect(eq(int, redlock_config_check(&cfg, &e), 0), "%s", e.msg);
    cr_expect(eq(int, redlock_ttl_check(30000, REDLOCK_DRIFT_FACTOR_MIN, &e), 0), "%s", e.msg);
}

Test(bad_input, null_config_or_ret_is_einval)
{
    redlock_config cfg;
    redlock_client *c = NULL;
    redlock_error e;

    tc_config(&cfg);
    cr_expect(eq(int, redlock_client_new(NULL, NULL, &c, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "NULL cfg");
    cr_expect(eq(int, redlock_client_new(&cfg, NULL, NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "NULL ret");
    /* reterr is optional everywhere. */
    cr_expect(eq(int, redlock_client_new(NULL, NULL, &c, NULL), REDLOCK_EINVAL));
    cr_expect(zero(ptr, c));
}
