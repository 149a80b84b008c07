/* test-bad-input.c - what the library does with input it must refuse or survive.
 *
 * Refused up front with REDLOCK_EINVAL (or ERESOLVE, EASYNC) and a one-line
 * message naming the problem: bad master lists, bad config fields, ttls
 * without room for a validity, empty, NUL-carrying or oversized resource
 * names, unprintable tokens, the wrong API for the client. Survived: odd
 * bytes in resource names (stored byte for byte), a master that answers
 * garbage, a master address nobody listens on. Tables are parameterized
 * tests over static arrays.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include <redlock.h>

#include "cluster.h"
#include "fake.h"
#include "core.h"

#define TTL_MS 10000u

TestSuite(bad_input, .timeout = 60);

/* Criterion runs each parameterized case in a worker that may be a fresh
 * exec of this binary, so pointers inside a parameter (string literals,
 * functions) would point nowhere there. The parameter is the case's index
 * into a file-scope table instead; plain integers travel fine. */
#define CASE_INDEXES(table)                                                     \
    do {                                                                        \
        static size_t idx_[sizeof(table) / sizeof((table)[0])];                 \
        for (size_t k_ = 0; k_ < sizeof(idx_) / sizeof(idx_[0]); k_++)          \
            idx_[k_] = k_;                                                      \
        return cr_make_param_array(size_t, idx_, sizeof(idx_) / sizeof(idx_[0])); \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Master lists                                                             */
/* ------------------------------------------------------------------------ */

struct masters_case {
    const char *masters;
    int code;
};

#define SEVENTEEN                                                               \
    "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4,127.0.0.1:5,127.0.0.1:6,"  \
    "127.0.0.1:7,127.0.0.1:8,127.0.0.1:9,127.0.0.1:10,127.0.0.1:11,"            \
    "127.0.0.1:12,127.0.0.1:13,127.0.0.1:14,127.0.0.1:15,127.0.0.1:16,"         \
    "127.0.0.1:17"

#define SIXTEEN                                                                 \
    "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4,127.0.0.1:5,127.0.0.1:6,"  \
    "127.0.0.1:7,127.0.0.1:8,127.0.0.1:9,127.0.0.1:10,127.0.0.1:11,"            \
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
    { "127.0.0.1:7000,localhost:7000", REDLOCK_EINVAL },   /* same master, two names */
    { "127.0.0.1:7000,[::ffff:127.0.0.1]:7000", REDLOCK_EINVAL },   /* IPv4-mapped: same master */
    { "[::1", REDLOCK_EINVAL },
    { "[::1]", REDLOCK_EINVAL },
    { "[::1]7000", REDLOCK_EINVAL },
    { "::1:7000", REDLOCK_EINVAL },                         /* IPv6 needs brackets */
    { "127.0.0.1:7000,", REDLOCK_EINVAL },
    { ",127.0.0.1:7000", REDLOCK_EINVAL },
    { "127.0.0.1:7000,,127.0.0.1:7001", REDLOCK_EINVAL },
    { SEVENTEEN, REDLOCK_EINVAL },
    { "nonexistent.invalid:7000", REDLOCK_ERESOLVE },
    { "127.0.0.1:7000,nonexistent.invalid:7000", REDLOCK_ERESOLVE },
};

ParameterizedTestParameters(bad_input, bad_masters_are_refused)
{
    CASE_INDEXES(masters_cases);
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
    cr_expect(eq(int, rc, tc->code), "masters \"%s\": %s (%s)", tc->masters,
              redlock_err_name(rc), e.msg);
    cr_expect(eq(int, e.code, tc->code), "masters \"%s\"", tc->masters);
    cr_expect(eq(ptr, (void *)c, (void *)sentinel), "ret written on failure");
    core_expect_msg(&e, tc->masters);
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
    { "[::1]:1,127.0.0.1:1", 2 },     /* same port, different hosts */
    { "localhost:65535", 1 },
};

ParameterizedTestParameters(bad_input, edge_master_lists_are_accepted)
{
    CASE_INDEXES(good_masters_cases);
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
    const char *field;             /* must appear in the message */
    void (*spoil)(redlock_config *cfg);
};

static void no_masters(redlock_config *cfg) { cfg->masters = NULL; }
static void node_timeout_zero(redlock_config *cfg) { cfg->node_timeout_ms = 0; }
static void connect_timeout_zero(redlock_config *cfg) { cfg->connect_timeout_ms = 0; }
static void drift_one(redlock_config *cfg) { cfg->drift_factor = 1.0; }
static void drift_negative(redlock_config *cfg) { cfg->drift_factor = -0.01; }
static void drift_nan(redlock_config *cfg) { cfg->drift_factor = NAN; }
static void inflight_zero(redlock_config *cfg) { cfg->max_inflight = 0; }
static void reconnect_inverted(redlock_config *cfg)
{
    cfg->reconnect_min_ms = 500;
    cfg->reconnect_max_ms = 100;
}
static void password_empty(redlock_config *cfg) { cfg->password = ""; }
static void username_alone(redlock_config *cfg) { cfg->username = "user"; }
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
    { "max_inflight", inflight_zero },
    { "reconnect", reconnect_inverted },
    { "password", password_empty },
    { "username", username_alone },
    { "key_prefix", prefix_too_long },
};

ParameterizedTestParameters(bad_input, bad_config_fields_are_named)
{
    CASE_INDEXES(config_cases);
}

ParameterizedTest(size_t *i, bad_input, bad_config_fields_are_named)
{
    const struct config_case *tc = &config_cases[*i];
    redlock_config cfg;
    redlock_client *c = NULL;
    redlock_error e;
    int rc;

    core_config(&cfg);
    tc->spoil(&cfg);
    rc = redlock_client_new(&cfg, NULL, &c, &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL), "%s: %s", tc->field, redlock_err_name(rc));
    cr_expect(zero(ptr, c));
    core_expect_msg(&e, tc->field);
    cr_expect(not(zero(ptr, strstr(e.msg, tc->field))), "\"%s\" not in: %s", tc->field, e.msg);
    if (rc == 0)
        redlock_client_free(c);
}

Test(bad_input, null_config_or_ret_is_einval)
{
    redlock_config cfg;
    redlock_client *c = NULL;
    redlock_error e;

    core_config(&cfg);
    cr_expect(eq(int, redlock_client_new(NULL, NULL, &c, &e), REDLOCK_EINVAL));
    core_expect_msg(&e, "NULL cfg");
    cr_expect(eq(int, redlock_client_new(&cfg, NULL, NULL, &e), REDLOCK_EINVAL));
    core_expect_msg(&e, "NULL ret");
    /* reterr is optional everywhere. */
    cr_expect(eq(int, redlock_client_new(NULL, NULL, &c, NULL), REDLOCK_EINVAL));
    cr_expect(zero(ptr, c));
}

/* ------------------------------------------------------------------------ */
/* ttl and resource names                                                   */
/* ------------------------------------------------------------------------ */

static redlock_client *client;

static void client_setup(void)
{
    redlock_config cfg;

    core_config(&cfg);
    cfg.retry_count = 0;
    client = core_client(&cfg, -1);
}

static void client_teardown(void)
{
    redlock_client_free(client);
    client = NULL;
}

ParameterizedTestParameters(bad_input, ttl_without_room_for_validity_is_einval)
{
    /* 2 ms is all margin (2 ms + 1%); 0 is no ttl; past the max the
     * arithmetic could overflow. */
    static uint32_t ttls[] = { 0, 1, 2, 3, REDLOCK_TTL_MAX_MS + 1u, UINT32_MAX };

    return cr_make_param_array(uint32_t, ttls, sizeof(ttls) / sizeof(ttls[0]));
}

ParameterizedTest(uint32_t *ttl, bad_input, ttl_without_room_for_validity_is_einval,
                  .init = client_setup, .fini = client_teardown)
{
    char res[128];
    redlock_lock *l = NULL;
    redlock_error e;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(client, res, strlen(res), *ttl, &l, NULL, &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL), "ttl %u: %s", *ttl, redlock_err_name(rc));
    cr_expect(zero(ptr, l));
    core_expect_msg(&e, "ttl");
    cr_expect(not(zero(ptr, strstr(e.msg, "ttl"))), "%s", e.msg);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "a refused acquire sent a SET");
}

Test(bad_input, largest_ttl_is_accepted_and_reaches_the_masters, .init = client_setup,
     .fini = client_teardown)
{
    char res[128];
    redlock_lock *l = NULL;
    redlock_error e;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(client, res, strlen(res), REDLOCK_TTL_MAX_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(gt(i64, redlock_lock_validity_ms(l), (int64_t)REDLOCK_TTL_MAX_MS / 100 * 98));
    core_barrier(client);
    for (int i = 0; i < tc_n(); i++) {
        long long pttl = 0;

        cr_expect(eq(int, core_get(i, res, strlen(res), NULL, 0, &pttl), 1));
        cr_expect(gt(i64, pttl, (long long)REDLOCK_TTL_MAX_MS - 60000), "master %d: %lld", i,
                  pttl);
    }
    cr_expect(eq(int, redlock_release(client, l, NULL, NULL), 0));
    redlock_lock_free(l);
}

struct resource_case {
    const char *bytes;
    size_t len;
    const char *why;
};

static const char big_resource[REDLOCK_RESOURCE_MAX + 1] = { [0 ... REDLOCK_RESOURCE_MAX] = 'r' };

static const struct resource_case bad_resources[] = {
    { "", 0, "empty" },
    { NULL, 5, "NULL" },
    { "a\0b", 3, "NUL inside" },
    { "\0", 1, "only a NUL" },
    { "abc\0", 4, "NUL at the end" },
    { big_resource, sizeof(big_resource), "1025 bytes" },
};

ParameterizedTestParameters(bad_input, bad_resource_is_einval)
{
    CASE_INDEXES(bad_resources);
}

ParameterizedTest(size_t *i, bad_input, bad_resource_is_einval,
                  .init = client_setup, .fini = client_teardown)
{
    const struct resource_case *tc = &bad_resources[*i];
    redlock_lock *l = NULL;
    redlock_status st;
    redlock_error e;
    int rc;

    rc = redlock_acquire(client, tc->bytes, tc->len, TTL_MS, &l, NULL, &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL), "%s: %s", tc->why, redlock_err_name(rc));
    cr_expect(zero(ptr, l));
    core_expect_msg(&e, tc->why);
    cr_expect(not(zero(ptr, strstr(e.msg, "resource"))), "%s", e.msg);

    rc = redlock_lock_new(tc->bytes, tc->len, "token", &l, &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL), "lock_new, %s: %s", tc->why, redlock_err_name(rc));
    cr_expect(zero(ptr, l));
    core_expect_msg(&e, tc->why);

    rc = redlock_status_get(client, tc->bytes, tc->len, &st, &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL), "status, %s: %s", tc->why, redlock_err_name(rc));
    core_expect_msg(&e, tc->why);
}

Test(bad_input, resource_of_the_maximum_length_works, .init = client_setup,
     .fini = client_teardown)
{
    static char res[REDLOCK_RESOURCE_MAX];
    redlock_lock *l = NULL;
    redlock_error e;
    char head[64];
    int rc;

    tc_resource(head, sizeof(head), NULL);
    memset(res, 'm', sizeof(res));
    memcpy(res, head, strlen(head));
    rc = redlock_acquire(client, res, sizeof(res), TTL_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    core_barrier(client);
    cr_expect(eq(int, core_count_token(res, sizeof(res), redlock_lock_token(l), TTL_MS), tc_n()));
    cr_expect(eq(int, redlock_release(client, l, NULL, NULL), 0));
    redlock_lock_free(l);
}

#define BYTES(s, why) { s, sizeof(s) - 1, why }

static const struct resource_case odd_resources[] = {
    BYTES("\x01\x02\x03", "control bytes"),
    BYTES("\xff\xfe\x80", "high bytes"),
    BYTES("line\nbreak\r\n", "newlines"),
    BYTES("with space\ttab", "space and tab"),
    BYTES("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92", "UTF-8"),
    BYTES("%s%n%b", "printf directives"),
    BYTES("*3\r\n$3\r\nDEL\r\n", "RESP inside"),
    BYTES("\x01\xff\n \xc3\xa9", "all of them"),
};

ParameterizedTestParameters(bad_input, odd_bytes_in_resource_are_stored_byte_exact)
{
    CASE_INDEXES(odd_resources);
}

ParameterizedTest(size_t *i, bad_input, odd_bytes_in_resource_are_stored_byte_exact,
                  .init = client_setup, .fini = client_teardown)
{
    const struct resource_case *tc = &odd_resources[*i];
    char res[128];
    size_t len;
    redlock_lock *l = NULL;
    redlock_error e;
    const void *back;
    size_t backlen = 0;
    int rc;

    /* The odd bytes plus a unique tail, so parallel runs do not meet. */
    memcpy(res, tc->bytes, tc->len);
    tc_resource(res + tc->len, sizeof(res) - tc->len, ":");
    len = tc->len + strlen(res + tc->len);

    rc = redlock_acquire(client, res, len, TTL_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s: %s: %s", tc->why, redlock_err_name(rc), e.msg);
    back = redlock_lock_resource(l, &backlen);
    cr_expect(eq(sz, backlen, len));
    cr_expect(zero(int, memcmp(back, res, len)), "%s: lock_resource differs", tc->why);

    core_barrier(client);
    /* GET %b with the exact bytes: the key is the name, byte for byte. */
    cr_expect(eq(int, core_count_token(res, len, redlock_lock_token(l), TTL_MS), tc_n()),
              "%s: key not stored under the exact bytes", tc->why);

    cr_expect(eq(int, redlock_release(client, l, NULL, &e), 0), "%s: %s", tc->why, e.msg);
    core_barrier(client);
    cr_expect(eq(int, tc_key_count(res, len), 0), "%s", tc->why);
    redlock_lock_free(l);
}

/* ------------------------------------------------------------------------ */
/* Tokens                                                                   */
/* ------------------------------------------------------------------------ */

static const char long_token[REDLOCK_TOKEN_MAX + 2] = { [0 ... REDLOCK_TOKEN_MAX] = 'a' };
static const char *const bad_tokens[] = { NULL, "", "has space", "tab\there", "new\nline",
                                          "\x7f", "caf\xc3\xa9", long_token };

ParameterizedTestParameters(bad_input, bad_token_is_einval)
{
    CASE_INDEXES(bad_tokens);
}

ParameterizedTest(size_t *i, bad_input, bad_token_is_einval)
{
    const char *token = bad_tokens[*i];
    redlock_lock *l = NULL;
    redlock_error e;
    int rc = redlock_lock_new("res", 3, token, &l, &e);

    cr_expect(eq(int, rc, REDLOCK_EINVAL), "token \"%s\": %s", token ? token : "(null)",
              redlock_err_name(rc));
    cr_expect(zero(ptr, l));
    core_expect_msg(&e, "token");
}

Test(bad_input, longest_printable_token_is_accepted)
{
    char token[REDLOCK_TOKEN_MAX + 1];
    redlock_lock *l = NULL;

    memset(token, '~', REDLOCK_TOKEN_MAX);
    token[REDLOCK_TOKEN_MAX] = '\0';
    cr_assert(eq(int, redlock_lock_new("res", 3, token, &l, NULL), 0));
    cr_expect(eq(str, (char *)redlock_lock_token(l), token));
    cr_expect(eq(i64, redlock_lock_validity_ms(l), 0));
    cr_expect(eq(u32, redlock_lock_ttl_ms(l), 0));
    redlock_lock_free(l);
}

/* ------------------------------------------------------------------------ */
/* Masters that are not what they claim                                    */
/* ------------------------------------------------------------------------ */

struct garbage_case {
    const char *reply;
    size_t len;
    int code;              /* what acquire returns when 3 of 5 answer this */
    const char *why;
};

#define GARBAGE(s, code, why) { s, sizeof(s) - 1, code, why }

static const struct garbage_case garbage_cases[] = {
    GARBAGE("+garbage\r\n", REDLOCK_EPROTO, "status that is not OK"),
    GARBAGE(":42\r\n", REDLOCK_EPROTO, "an integer"),
    GARBAGE("*1\r\n:1\r\n", REDLOCK_EPROTO, "an array"),
    GARBAGE("$5\r\nhello\r\n", REDLOCK_EPROTO, "a bulk string"),
    GARBAGE("HTTP/1.1 400 Bad Request\r\n\r\n", REDLOCK_EPROTO, "not RESP at all"),
    GARBAGE("\x00\x01\x02\xff\r\n", REDLOCK_EPROTO, "binary noise"),
    GARBAGE("-ERR unknown command\r\n", REDLOCK_EREPLY, "an error reply"),
};

ParameterizedTestParameters(bad_input, garbage_answering_majority_is_a_clear_error)
{
    CASE_INDEXES(garbage_cases);
}

ParameterizedTest(size_t *i, bad_input, garbage_answering_majority_is_a_clear_error)
{
    const struct garbage_case *tc = &garbage_cases[*i];
    tc_fake *fakes[3];
    char masters[512];
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    int rc;

    /* Three fakes and two real masters: the fakes alone deny a quorum. */
    masters[0] = '\0';
    for (int i = 0; i < 3; i++) {
        fakes[i] = tc_fake_start(tc->reply, tc->len, NULL);
        strcat(masters, tc_fake_addr(fakes[i]));
        strcat(masters, ",");
    }
    strcat(masters, tc_addr(3));
    strcat(masters, ",");
    strcat(masters, tc_addr(4));

    core_config(&cfg);
    cfg.masters = masters;
    cfg.retry_count = 0;
    c = core_client(&cfg, 0);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
    cr_expect(eq(int, rc, tc->code), "%s: %s: %s", tc->why, redlock_err_name(rc), e.msg);
    cr_expect(zero(ptr, l));
    core_expect_msg(&e, tc->why);
    /* The message names a fake master. */
    cr_expect(ge(int, e.master, 0), "%s: %s", tc->why, e.msg);
    cr_expect(le(int, e.master, 2), "%s: %s", tc->why, e.msg);
    if (e.master >= 0 && e.master <= 2)
        cr_expect(not(zero(ptr, strstr(e.msg, tc_fake_addr(fakes[e.master])))), "%s", e.msg);
    for (int i = 0; i < 3; i++)
        cr_expect(eq(int, out.votes[i].kind, REDLOCK_VOTE_ERROR), "%s: fake %d voted %s (%s)",
                  tc->why, i, redlock_vote_kind_name(out.votes[i].kind), out.votes[i].detail);
    /* The real masters got the SET; acquire cleaned up after itself (once
     * its releases have run: whether they have by the time acquire returns
     * is test-faults-kill's business). */
    core_barrier_on(c, 1u << 3 | 1u << 4);
    cr_expect(eq(int, core_get(3, res, strlen(res), NULL, 0, NULL), 0), "%s: key left", tc->why);
    cr_expect(eq(int, core_get(4, res, strlen(res), NULL, 0, NULL), 0), "%s: key left", tc->why);
    redlock_client_free(c);
    for (int i = 0; i < 3; i++)
        tc_fake_stop(fakes[i]);
}

Test(bad_input, one_garbage_master_does_not_stop_a_lock)
{
    static const char garbage[] = "\x00\x01 not redis\r\n";
    tc_fake *fake = tc_fake_start(garbage, sizeof(garbage) - 1, NULL);
    char *masters = tc_masters_with(2, tc_fake_addr(fake));
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    int rc;

    core_config(&cfg);
    cfg.masters = masters;
    c = core_client(&cfg, 4);
    for (int round = 0; round < 5; round++) {
        tc_resource(res, sizeof(res), NULL);
        rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
        cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
        cr_expect(out.votes[2].kind != REDLOCK_VOTE_OK, "the fake voted ok");
        cr_expect(eq(int, redlock_release(c, l, NULL, &e), 0), "%s", e.msg);
        redlock_lock_free(l);
        l = NULL;
    }
    redlock_client_free(c);
    tc_fake_stop(fake);
    free(masters);
}

Test(bad_input, dead_master_address_votes_down_with_connection_refused)
{
    char addr[32];
    char *masters;
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    int rc;

    snprintf(addr, sizeof(addr), "127.0.0.1:%d", tc_dead_port());
    masters = tc_masters_with(4, addr);
    core_config(&cfg);
    cfg.masters = masters;
    c = core_client(&cfg, 4);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, out.votes[4].kind, REDLOCK_VOTE_DOWN), "voted %s (%s)",
              redlock_vote_kind_name(out.votes[4].kind), out.votes[4].detail);
    cr_expect(eq(int, out.votes[4].err, REDLOCK_ECONNECT));
    cr_expect(not(zero(ptr, strstr(out.votes[4].detail, "connection refused"))), "detail: %s",
              out.votes[4].detail);
    cr_expect(eq(int, redlock_release(c, l, NULL, &e), 0), "%s", e.msg);
    redlock_lock_free(l);
    redlock_client_free(c);
    free(masters);
}

/* ------------------------------------------------------------------------ */
/* A key of another type under the resource's name                          */
/* ------------------------------------------------------------------------ */

struct wrongtype_case {
    const char *create;        /* tc_cmd format, one %b for the key */
    const char *type;          /* what TYPE answers */
    const char *size;          /* tc_cmd format giving its element count */
    long long count;
};

static const struct wrongtype_case wrongtype_cases[] = {
    { "RPUSH %b a b c", "list", "LLEN %b", 3 },
    { "HSET %b f1 v1 f2 v2", "hash", "HLEN %b", 2 },
    { "SADD %b m1 m2 m3 m4", "set", "SCARD %b", 4 },
    { "ZADD %b 1 m1", "zset", "ZCARD %b", 1 },
    { "XADD %b * f v", "stream", "XLEN %b", 1 },
};

/* Plant wrongtype_cases[@k] under @key on the masters in [@from, @to). */
static void plant_wrongtype(size_t k, const char *key, int from, int to)
{
    for (int i = from; i < to; i++) {
        redisReply *r = tc_cmd(i, wrongtype_cases[k].create, key, strlen(key));

        cr_assert(not(zero(ptr, r)), "master %d", i);
        cr_assert(ne(int, r->type, REDIS_REPLY_ERROR), "%s on master %d: %s",
                  wrongtype_cases[k].create, i, r->str);
        freeReplyObject(r);
    }
}

/* The value planted on master @i is as it was: same type, same size. */
static void expect_untouched(size_t k, const char *key, int i)
{
    const struct wrongtype_case *w = &wrongtype_cases[k];
    redisReply *r = tc_cmd(i, "TYPE %b", key, strlen(key));

    cr_assert(not(zero(ptr, r)));
    cr_expect(eq(str, r->str, (char *)w->type), "master %d: the %s became a %s", i, w->type,
              r->str);
    freeReplyObject(r);
    r = tc_cmd(i, w->size, key, strlen(key));
    cr_assert(not(zero(ptr, r)));
    cr_expect(eq(i64, r->integer, w->count), "master %d: the %s changed size", i, w->type);
    freeReplyObject(r);
}

ParameterizedTestParameters(bad_input, key_of_another_type_is_ewrongtype_not_a_conflict)
{
    CASE_INDEXES(wrongtype_cases);
}

ParameterizedTest(size_t *k, bad_input, key_of_another_type_is_ewrongtype_not_a_conflict)
{
    const struct wrongtype_case *w = &wrongtype_cases[*k];
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    int rc;

    tc_resource(res, sizeof(res), NULL);
    plant_wrongtype(*k, res, 0, tc_n());
    /* Default retries. A "nil" from SET NX looks like a lock held by
     * someone else until the cleanup release meets the key; the library
     * sends that release to "held" masters on the last attempt only, so
     * the verdict comes then: EWRONGTYPE, never ECONFLICT. */
    c = core_client(NULL, -1);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
    cr_expect(eq(int, rc, REDLOCK_EWRONGTYPE), "%s: %s: %s", w->type, redlock_err_name(rc), e.msg);
    cr_expect(zero(ptr, l));
    core_expect_msg(&e, w->type);
    /* Names the master and says what to do. */
    cr_expect(ge(int, e.master, 0), "%s", e.msg);
    if (e.master >= 0 && e.master < tc_n())
        cr_expect(not(zero(ptr, strstr(e.msg, tc_addr(e.master)))), "%s", e.msg);
    cr_expect(strstr(e.msg, "prefix") || strstr(e.msg, "resource name"),
              "no advice in: %s", e.msg);
    for (int i = 0; i < tc_n(); i++) {
        if (out.votes[i].kind == REDLOCK_VOTE_PENDING)
            continue;
        cr_expect(eq(int, out.votes[i].err, REDLOCK_EWRONGTYPE), "%s: master %d voted %s (%s)",
                  w->type, i, redlock_vote_kind_name(out.votes[i].kind), out.votes[i].detail);
    }
    core_barrier(c);
    for (int i = 0; i < tc_n(); i++)
        expect_untouched(*k, res, i);
    core_del_all(res, strlen(res));
    redlock_client_free(c);
}

Test(bad_input, release_and_extend_over_a_key_of_another_type_are_ewrongtype,
     .init = client_setup, .fini = client_teardown)
{
    redlock_lock *l = NULL;
    redlock_error e;
    char res[128];
    int rc;

    tc_resource(res, sizeof(res), NULL);
    plant_wrongtype(0, res, 0, tc_n());
    cr_assert(eq(int, redlock_lock_new(res, strlen(res), "some-token", &l, NULL), 0));
    rc = redlock_release(client, l, NULL, &e);
    cr_expect(eq(int, rc, REDLOCK_EWRONGTYPE), "release: %s: %s", redlock_err_name(rc), e.msg);
    core_expect_msg(&e, "release");
    rc = redlock_extend(client, l, TTL_MS, NULL, &e);
    cr_expect(eq(int, rc, REDLOCK_EWRONGTYPE), "extend: %s: %s", redlock_err_name(rc), e.msg);
    core_expect_msg(&e, "extend");
    core_barrier(client);
    for (int i = 0; i < tc_n(); i++)
        expect_untouched(0, res, i);
    core_del_all(res, strlen(res));
    redlock_lock_free(l);
}

Test(bad_input, key_of_another_type_on_a_minority_still_acquires, .init = client_setup,
     .fini = client_teardown)
{
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    int rc;

    tc_resource(res, sizeof(res), NULL);
    plant_wrongtype(0, res, 3, 5);
    rc = redlock_acquire(client, res, strlen(res), TTL_MS, &l, &out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, redlock_release(client, l, NULL, &e), 0), "%s", e.msg);
    core_barrier(client);
    cr_expect(eq(int, core_get(0, res, strlen(res), NULL, 0, NULL), 0));
    expect_untouched(0, res, 3);
    expect_untouched(0, res, 4);
    core_del_all(res, strlen(res));
    redlock_lock_free(l);
}

/* ------------------------------------------------------------------------ */
/* The wrong API for the client                                             */
/* ------------------------------------------------------------------------ */

static int cb_runs;

static void acq_cb(redlock_client *c, int status, redlock_lock *lock, const redlock_outcome *out,
                   const redlock_error *err, void *arg)
{
    (void)c; (void)status; (void)out; (void)err; (void)arg;
    cb_runs++;
    redlock_lock_free(lock);
}

static void op_cb(redlock_client *c, int status, redlock_lock *lock, const redlock_outcome *out,
                  const redlock_error *err, void *arg)
{
    (void)c; (void)status; (void)lock; (void)out; (void)err; (void)arg;
    cb_runs++;
}

Test(bad_input, async_calls_on_a_blocking_client_are_easync, .init = client_setup,
     .fini = client_teardown)
{
    redlock_lock *l = NULL;
    redlock_status st;
    redlock_error e;
    char res[128];

    cb_runs = 0;
    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, redlock_lock_new(res, strlen(res), "tok", &l, NULL), 0));
    cr_expect(eq(int, redlock_acquire_async(client, res, strlen(res), TTL_MS, acq_cb, NULL, &e),
                 REDLOCK_EASYNC));
    core_expect_msg(&e, "acquire_async");
    cr_expect(eq(int, redlock_release_async(client, l, op_cb, NULL, &e), REDLOCK_EASYNC));
    core_expect_msg(&e, "release_async");
    cr_expect(eq(int, redlock_extend_async(client, l, TTL_MS, op_cb, NULL, &e), REDLOCK_EASYNC));
    core_expect_msg(&e, "extend_async");
    /* A round trip through the I/O thread: anything queued would have run. */
    cr_expect(eq(int, redlock_status_get(client, res, strlen(res), &st, &e), 0), "%s", e.msg);
    cr_expect(eq(int, cb_runs, 0));
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0));
    redlock_lock_free(l);
}

Test(bad_input, blocking_calls_on_an_async_client_are_easync)
{
    struct event_base *base = event_base_new();
    redlock_client *c;
    redlock_lock *l = NULL, *got = NULL;
    redlock_status st;
    redlock_error e;
    char res[128];

    cr_assert(not(zero(ptr, base)));
    c = core_client_async(NULL, base);
    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, redlock_lock_new(res, strlen(res), "tok", &l, NULL), 0));
    cr_expect(eq(int, redlock_acquire(c, res, strlen(res), TTL_MS, &got, NULL, &e),
                 REDLOCK_EASYNC));
    core_expect_msg(&e, "acquire");
    cr_expect(zero(ptr, got));
    cr_expect(eq(int, redlock_release(c, l, NULL, &e), REDLOCK_EASYNC));
    core_expect_msg(&e, "release");
    cr_expect(eq(int, redlock_extend(c, l, TTL_MS, NULL, &e), REDLOCK_EASYNC));
    core_expect_msg(&e, "extend");
    cr_expect(eq(int, redlock_status_get(c, res, strlen(res), &st, &e), REDLOCK_EASYNC));
    core_expect_msg(&e, "status_get");
    cr_expect(eq(int, redlock_ping(c, &st, &e), REDLOCK_EASYNC));
    core_expect_msg(&e, "ping");
    redlock_lock_free(l);
    redlock_client_free(c);
    event_base_free(base);
}

Test(bad_input, null_client_lock_or_callback_is_einval, .init = client_setup,
     .fini = client_teardown)
{
    redlock_lock *l = NULL;
    redlock_error e;

    cr_expect(eq(int, redlock_acquire(NULL, "r", 1, TTL_MS, &l, NULL, &e), REDLOCK_EINVAL));
    core_expect_msg(&e, "NULL client");
    cr_expect(eq(int, redlock_acquire(client, "r", 1, TTL_MS, NULL, NULL, &e), REDLOCK_EINVAL));
    core_expect_msg(&e, "NULL ret_lock");
    cr_expect(eq(int, redlock_release(client, NULL, NULL, &e), REDLOCK_EINVAL));
    core_expect_msg(&e, "NULL lock");
    cr_expect(eq(int, redlock_extend(client, NULL, TTL_MS, NULL, &e), REDLOCK_EINVAL));
    core_expect_msg(&e, "NULL lock");
    cr_expect(eq(int, redlock_acquire_async(NULL, "r", 1, TTL_MS, acq_cb, NULL, &e),
                 REDLOCK_EINVAL));
    core_expect_msg(&e, "NULL client");
    cr_expect(eq(int, redlock_lock_new("r", 1, "t", NULL, &e), REDLOCK_EINVAL));
    core_expect_msg(&e, "NULL ret");
    /* Destructors take NULL. */
    redlock_lock_free(NULL);
    redlock_client_free(NULL);
}
