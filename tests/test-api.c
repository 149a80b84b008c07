/* test-api.c - the public surface of libredlock.so, as a user sees it.
 *
 * Links against the shared library with only <redlock.h>: the version call,
 * the error table (every code has a distinct message and name), vote names,
 * the documented config defaults, NULL-tolerant destructors, and that
 * internals stay hidden. tests/check-exports.sh checks the symbol table
 * itself. No cluster needed.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

struct code_entry {
    int code;
    const char *name; /* "EINVAL" */
    const char *msg;  /* as in REDLOCK_ERRNO_MAP */
};

static const struct code_entry codes[] = {
#define CODE_ENTRY(name, val, msg) { REDLOCK_##name, #name, msg },
    REDLOCK_ERRNO_MAP(CODE_ENTRY)
#undef CODE_ENTRY
};

#define N_CODES (sizeof(codes) / sizeof(codes[0]))

Test(version, runtime_matches_header)
{
    char want[32];

    snprintf(want, sizeof(want), "%d.%d.%d", REDLOCK_VERSION_MAJOR, REDLOCK_VERSION_MINOR,
             REDLOCK_VERSION_PATCH);
    cr_assert(not(zero(ptr, (void *)redlock_version())));
    cr_assert(eq(str, (char *)redlock_version(), want));
    cr_assert(eq(str, (char *)redlock_version(), REDLOCK_VERSION_STRING));
    cr_assert(eq(int, REDLOCK_VERSION_HEX,
                 (REDLOCK_VERSION_MAJOR << 16) | (REDLOCK_VERSION_MINOR << 8) |
                     REDLOCK_VERSION_PATCH));
}

/* redlock_has_tls() says what the config check does with a TLS config. */
Test(version, has_tls_tells_whether_a_tls_config_is_accepted)
{
    redlock_config cfg;
    redlock_error e;

    redlock_config_init(&cfg);
    cfg.masters = "127.0.0.1:1";
    cfg.tls = 1;
    int rc = redlock_config_check(&cfg, &e);
    cr_assert(eq(int, redlock_has_tls() ? 0 : REDLOCK_EINVAL, rc), "has_tls %d, check: %s",
              redlock_has_tls(), rc ? e.msg : "ok");
}

Test(errors, codes_are_negative_and_distinct)
{
    cr_assert(gt(sz, N_CODES, 10));
    for (size_t i = 0; i < N_CODES; i++) {
        cr_expect(lt(int, codes[i].code, 0), "%s", codes[i].name);
        for (size_t j = i + 1; j < N_CODES; j++)
            cr_expect(ne(int, codes[i].code, codes[j].code), "%s and %s share a value",
                      codes[i].name, codes[j].name);
    }
}

Test(errors, strerror_gives_the_map_message_for_every_code)
{
    for (size_t i = 0; i < N_CODES; i++) {
        const char *s = redlock_strerror(codes[i].code);

        cr_assert(not(zero(ptr, (void *)s)), "strerror(%s) is NULL", codes[i].name);
        cr_expect(eq(str, (char *)s, (char *)codes[i].msg), "strerror(%s)", codes[i].name);
        for (size_t j = 0; j < i; j++)
            cr_expect(ne(str, (char *)s, (char *)redlock_strerror(codes[j].code)),
                      "%s and %s have the same message", codes[i].name, codes[j].name);
    }
}

Test(errors, err_name_gives_the_enum_name_for_every_code)
{
    for (size_t i = 0; i < N_CODES; i++) {
        const char *s = redlock_err_name(codes[i].code);

        cr_assert(not(zero(ptr, (void *)s)), "err_name(%d) is NULL", codes[i].code);
        cr_expect(eq(str, (char *)s, (char *)codes[i].name));
        for (size_t j = 0; j < i; j++)
            cr_expect(ne(str, (char *)s, (char *)redlock_err_name(codes[j].code)));
    }
}

Test(errors, ok_and_unknown_codes_are_never_null)
{
    static const int unknown[] = { 1, 42, -1000, INT_MIN, INT_MAX };

    cr_assert(eq(str, (char *)redlock_err_name(0), "OK"));
    cr_assert(not(zero(ptr, (void *)redlock_strerror(0))));
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        cr_expect(eq(str, (char *)redlock_strerror(unknown[i]), "unknown error"), "strerror(%d)",
                  unknown[i]);
        cr_expect(not(zero(ptr, (void *)redlock_err_name(unknown[i]))), "err_name(%d)", unknown[i]);
    }
}

Test(votes, every_kind_has_a_distinct_name)
{
    static const int kinds[] = {
        REDLOCK_VOTE_NONE, REDLOCK_VOTE_PENDING, REDLOCK_VOTE_OK,   REDLOCK_VOTE_HELD,
        REDLOCK_VOTE_GONE, REDLOCK_VOTE_TIMEOUT, REDLOCK_VOTE_DOWN, REDLOCK_VOTE_ERROR,
    };
    const size_t n = sizeof(kinds) / sizeof(kinds[0]);

    for (size_t i = 0; i < n; i++) {
        const char *s = redlock_vote_kind_name(kinds[i]);

        cr_assert(not(zero(ptr, (void *)s)), "vote_kind_name(%d)", kinds[i]);
        cr_expect(gt(sz, strlen(s), 0));
        for (size_t j = 0; j < i; j++)
            cr_expect(ne(str, (char *)s, (char *)redlock_vote_kind_name(kinds[j])));
    }
    cr_assert(not(zero(ptr, (void *)redlock_vote_kind_name(-1))));
    cr_assert(not(zero(ptr, (void *)redlock_vote_kind_name(1000))));
}

Test(config, init_fills_the_documented_defaults)
{
    redlock_config cfg;

    memset(&cfg, 0xa5, sizeof(cfg));
    redlock_config_init(&cfg);
    cr_expect(zero(ptr, (void *)cfg.masters));
    cr_expect(cfg.key_prefix == NULL || cfg.key_prefix[0] == '\0', "key_prefix defaults to \"\"");
    cr_expect(zero(ptr, (void *)cfg.username));
    cr_expect(zero(ptr, (void *)cfg.password));
    cr_expect(eq(u32, cfg.node_timeout_ms, 50));
    cr_expect(eq(u32, cfg.connect_timeout_ms, 1000));
    cr_expect(eq(u32, cfg.retry_count, 3));
    cr_expect(eq(u32, cfg.retry_delay_ms, 200));
    cr_expect(eq(u32, cfg.retry_jitter_ms, 100));
    cr_expect(eq(dbl, cfg.drift_factor, 0.01));
    cr_expect(eq(u32, cfg.release_retry_count, 2));
    cr_expect(eq(u32, cfg.release_retry_delay_ms, 20));
    cr_expect(eq(u32, cfg.reconnect_min_ms, 10));
    cr_expect(eq(u32, cfg.reconnect_max_ms, 1000));
    cr_expect(eq(u32, cfg.max_inflight, 1024));
    cr_expect(cfg.log_fn == NULL, "log_fn defaults to none");
    cr_expect(zero(ptr, cfg.log_arg));
    cr_expect(eq(int, cfg.log_level, REDLOCK_LOG_WARN));
}

Test(lifecycle, destructors_accept_null)
{
    redlock_client_free(NULL);
    redlock_lock_free(NULL);
}

Test(lifecycle, client_new_rejects_a_missing_config_without_touching_ret)
{
    redlock_client *c = (redlock_client *)&c; /* a sentinel, not NULL */
    redlock_config cfg;
    redlock_error err;

    cr_assert(eq(int, redlock_client_new(NULL, NULL, &c, NULL), REDLOCK_EINVAL));
    cr_assert(eq(ptr, (void *)c, (void *)&c), "ret clobbered on failure");

    redlock_config_init(&cfg); /* masters NULL */
    memset(&err, 0, sizeof(err));
    cr_assert(eq(int, redlock_client_new(&cfg, NULL, &c, &err), REDLOCK_EINVAL));
    cr_assert(eq(ptr, (void *)c, (void *)&c), "ret clobbered on failure");
    cr_assert(eq(int, err.code, REDLOCK_EINVAL));
    cr_assert(gt(sz, strlen(err.msg), 0), "the error says which field is wrong");
}

Test(symbols, internals_are_not_visible)
{
    /* drift_* is linked whole into libredlock; hiredis and libevent are
     * linked, not re-exported. None may be reachable through the library. */
    static const char *hidden[] = { "drift_margin_us", "drift_validity_ms" };

    for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
        cr_expect(zero(ptr, dlsym(RTLD_DEFAULT, hidden[i])), "%s is exported", hidden[i]);
    cr_expect(not(zero(ptr, dlsym(RTLD_DEFAULT, "redlock_acquire"))));
}

/* The test suite's own tool: criterion 2.4.1's gt() accepted equal values;
 * tests/helpers/crfix.h fixes it, and this proves the fix is in force. */
Test(api, the_suites_gt_is_strict)
{
    cr_assert(not(gt(int, 5, 5)), "gt(5, 5) must be false");
    cr_assert(not(gt(u64, 4, 5)));
    cr_assert(gt(u64, 6, 5));
}
