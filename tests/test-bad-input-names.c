/* test-bad-input-names.c - ttls, resource names and tokens the library must
 * refuse, and the edge values it must take.
 *
 * Refused up front with REDLOCK_EINVAL and a one-line message naming the
 * problem, before anything is sent: ttls without room for a validity,
 * empty, NUL-carrying or oversized resource names, unprintable or too long
 * tokens. Taken: the largest ttl, a resource of the maximum length, and
 * odd bytes in a name, stored byte for byte. Tables are parameterized
 * tests over static arrays (TC_CASE_INDEXES).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

#define TTL_MS 10000u

/* A client of the default config, connected to every master: tc_fx.c. */
TestSuite(bad_input, .init = tc_fx_setup, .fini = tc_fx_fini, .timeout = 60);

ParameterizedTestParameters(bad_input, ttl_without_room_for_validity_is_einval)
{
    /* 2 ms is all margin (2 ms + 1%); 0 is no ttl; past the max the
     * arithmetic could overflow. */
    static uint32_t ttls[] = { 0, 1, 2, 3, REDLOCK_TTL_MAX_MS + 1u, UINT32_MAX };

    return cr_make_param_array(uint32_t, ttls, sizeof(ttls) / sizeof(ttls[0]));
}

ParameterizedTest(uint32_t *ttl, bad_input, ttl_without_room_for_validity_is_einval)
{
    char res[128];
    redlock_lock *l = NULL;
    redlock_error e;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(tc_fx.c, res, strlen(res), *ttl, &l, NULL, &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL), "ttl %u: %s", *ttl, redlock_err_name(rc));
    cr_expect(zero(ptr, l));
    tc_expect_msg(&e, "ttl");
    cr_expect(not(zero(ptr, strstr(e.msg, "ttl"))), "%s", e.msg);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "a refused acquire sent a SET");
}

Test(bad_input, largest_ttl_is_accepted_and_reaches_the_masters)
{
    char res[128];
    redlock_lock *l = NULL;
    redlock_error e;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(tc_fx.c, res, strlen(res), REDLOCK_TTL_MAX_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(gt(i64, redlock_lock_validity_ms(l), (int64_t)REDLOCK_TTL_MAX_MS / 100 * 98));
    tc_barrier(tc_fx.c);
    for (int i = 0; i < tc_n(); i++) {
        long long pttl = 0;

        cr_expect(eq(int, tc_get(i, res, strlen(res), NULL, 0, &pttl), 1));
        cr_expect(gt(i64, pttl, (long long)REDLOCK_TTL_MAX_MS - 60000), "master %d: %lld", i, pttl);
    }
    cr_expect(eq(int, redlock_release(tc_fx.c, l, NULL, NULL), 0));
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
    TC_CASE_INDEXES(bad_resources);
}

ParameterizedTest(size_t *i, bad_input, bad_resource_is_einval)
{
    const struct resource_case *tc = &bad_resources[*i];
    redlock_lock *l = NULL;
    TC_STATUS(st);
    redlock_error e;
    int rc;

    rc = redlock_acquire(tc_fx.c, tc->bytes, tc->len, TTL_MS, &l, NULL, &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL), "%s: %s", tc->why, redlock_err_name(rc));
    cr_expect(zero(ptr, l));
    tc_expect_msg(&e, tc->why);
    cr_expect(not(zero(ptr, strstr(e.msg, "resource"))), "%s", e.msg);

    rc = redlock_lock_new(tc->bytes, tc->len, "token", &l, &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL), "lock_new, %s: %s", tc->why, redlock_err_name(rc));
    cr_expect(zero(ptr, l));
    tc_expect_msg(&e, tc->why);

    rc = redlock_status_get(tc_fx.c, tc->bytes, tc->len, st, &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL), "status, %s: %s", tc->why, redlock_err_name(rc));
    tc_expect_msg(&e, tc->why);
}

Test(bad_input, resource_of_the_maximum_length_works)
{
    static char res[REDLOCK_RESOURCE_MAX];
    redlock_lock *l = NULL;
    redlock_error e;
    char head[64];
    int rc;

    tc_resource(head, sizeof(head), NULL);
    memset(res, 'm', sizeof(res));
    memcpy(res, head, strlen(head));
    rc = redlock_acquire(tc_fx.c, res, sizeof(res), TTL_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_count_token(res, sizeof(res), redlock_lock_token(l), TTL_MS), tc_n()));
    cr_expect(eq(int, redlock_release(tc_fx.c, l, NULL, NULL), 0));
    redlock_lock_free(l);
}

/* An initializer as a macro's body: clang-format 14 reads it as a block and
 * spreads it over four lines, so it is kept out. */
/* clang-format off */
#define BYTES(s, why) { s, sizeof(s) - 1, why }
/* clang-format on */

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
    TC_CASE_INDEXES(odd_resources);
}

ParameterizedTest(size_t *i, bad_input, odd_bytes_in_resource_are_stored_byte_exact)
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

    rc = redlock_acquire(tc_fx.c, res, len, TTL_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s: %s: %s", tc->why, redlock_err_name(rc), e.msg);
    back = redlock_lock_resource(l, &backlen);
    cr_expect(eq(sz, backlen, len));
    cr_expect(zero(int, memcmp(back, res, len)), "%s: lock_resource differs", tc->why);

    tc_barrier(tc_fx.c);
    /* GET %b with the exact bytes: the key is the name, byte for byte. */
    cr_expect(eq(int, tc_count_token(res, len, redlock_lock_token(l), TTL_MS), tc_n()),
              "%s: key not stored under the exact bytes", tc->why);

    cr_expect(eq(int, redlock_release(tc_fx.c, l, NULL, &e), 0), "%s: %s", tc->why, e.msg);
    tc_barrier(tc_fx.c);
    cr_expect(eq(int, tc_key_count(res, len), 0), "%s", tc->why);
    redlock_lock_free(l);
}

/* ------------------------------------------------------------------------ */
/* Tokens                                                                   */
/* ------------------------------------------------------------------------ */

static const char long_token[REDLOCK_TOKEN_MAX + 2] = { [0 ... REDLOCK_TOKEN_MAX] = 'a' };
static const char *const bad_tokens[] = { NULL,        "",     "has space",   "tab\there",
                                          "new\nline", "\x7f", "caf\xc3\xa9", long_token };

ParameterizedTestParameters(bad_input, bad_token_is_einval)
{
    TC_CASE_INDEXES(bad_tokens);
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
    tc_expect_msg(&e, "token");
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
