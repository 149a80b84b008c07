/* test-bad-input-api.c - the wrong call for the client, and NULL where a
 * pointer must be.
 *
 * An async call on a blocking client, or a blocking one on an async
 * client, is EASYNC with a one-line message, and no callback ever runs;
 * a NULL client, lock, output or callback is EINVAL; destructors take
 * NULL.
 */
#include <string.h>

#include <event2/event.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

#define TTL_MS 10000u

/* A client of the default config, connected to every master: tc_fx.c. */
TestSuite(bad_input, .init = tc_fx_setup, .fini = tc_fx_fini, .timeout = 60);

/* ------------------------------------------------------------------------ */
/* The wrong API for the client                                             */
/* ------------------------------------------------------------------------ */

static int cb_runs;

static void acq_cb(redlock_client *c, int status, redlock_lock *lock, const redlock_outcome *out,
                   const redlock_error *err, void *arg)
{
    (void)c;
    (void)status;
    (void)out;
    (void)err;
    (void)arg;
    cb_runs++;
    redlock_lock_free(lock);
}

static void op_cb(redlock_client *c, int status, redlock_lock *lock, const redlock_outcome *out,
                  const redlock_error *err, void *arg)
{
    (void)c;
    (void)status;
    (void)lock;
    (void)out;
    (void)err;
    (void)arg;
    cb_runs++;
}

static void check_cb(redlock_client *c, int status, int64_t left_ms, const redlock_error *err,
                     void *arg)
{
    (void)c;
    (void)status;
    (void)left_ms;
    (void)err;
    (void)arg;
    cb_runs++;
}

static void word_cb(redlock_client *c, int status, size_t n, uint32_t bound_ms,
                    const redlock_error *err, void *arg)
{
    (void)c;
    (void)status;
    (void)n;
    (void)bound_ms;
    (void)err;
    (void)arg;
    cb_runs++;
}

Test(bad_input, async_calls_on_a_blocking_client_are_easync)
{
    redlock_lock *l = NULL;
    TC_STATUS(st);
    redlock_error e;
    char res[128];

    cb_runs = 0;
    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, redlock_lock_new(res, strlen(res), "tok", &l, NULL), 0));
    cr_expect(eq(int, redlock_acquire_async(tc_fx.c, res, strlen(res), TTL_MS, acq_cb, NULL, &e),
                 REDLOCK_EASYNC));
    tc_expect_msg(&e, "acquire_async");
    cr_expect(eq(int, redlock_release_async(tc_fx.c, l, op_cb, NULL, &e), REDLOCK_EASYNC));
    tc_expect_msg(&e, "release_async");
    cr_expect(eq(int, redlock_extend_async(tc_fx.c, l, TTL_MS, op_cb, NULL, &e), REDLOCK_EASYNC));
    tc_expect_msg(&e, "extend_async");
    cr_expect(eq(int, redlock_lock_check_async(tc_fx.c, l, check_cb, NULL, &e), REDLOCK_EASYNC));
    tc_expect_msg(&e, "lock_check_async");
    cr_expect(eq(int, redlock_declare_empty_async(tc_fx.c, 0, word_cb, NULL, &e), REDLOCK_EASYNC));
    tc_expect_msg(&e, "declare_empty_async");
    cr_expect(eq(int, redlock_readmit_async(tc_fx.c, 0, 0, word_cb, NULL, &e), REDLOCK_EASYNC));
    tc_expect_msg(&e, "readmit_async");
    /* A round trip through the I/O thread: anything queued would have run. */
    cr_expect(eq(int, redlock_status_get(tc_fx.c, res, strlen(res), st, &e), 0), "%s", e.msg);
    cr_expect(eq(int, cb_runs, 0));
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0));
    redlock_lock_free(l);
}

Test(bad_input, blocking_calls_on_an_async_client_are_easync)
{
    struct event_base *base = event_base_new();
    redlock_client *c;
    redlock_lock *l = NULL, *got = NULL;
    TC_STATUS(st);
    redlock_error e;
    char res[128];

    cr_assert(not(zero(ptr, base)));
    c = tc_client_async(NULL, base);
    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, redlock_lock_new(res, strlen(res), "tok", &l, NULL), 0));
    cr_expect(eq(int, redlock_acquire(c, res, strlen(res), TTL_MS, &got, NULL, &e),
                 REDLOCK_EASYNC));
    tc_expect_msg(&e, "acquire");
    cr_expect(zero(ptr, got));
    cr_expect(eq(int, redlock_release(c, l, NULL, &e), REDLOCK_EASYNC));
    tc_expect_msg(&e, "release");
    cr_expect(eq(int, redlock_extend(c, l, TTL_MS, NULL, &e), REDLOCK_EASYNC));
    tc_expect_msg(&e, "extend");
    cr_expect(eq(int, redlock_status_get(c, res, strlen(res), st, &e), REDLOCK_EASYNC));
    tc_expect_msg(&e, "status_get");
    cr_expect(eq(int, redlock_ping(c, st, &e), REDLOCK_EASYNC));
    tc_expect_msg(&e, "ping");
    cr_expect(eq(int, redlock_lock_check(c, l, NULL, &e), REDLOCK_EASYNC));
    tc_expect_msg(&e, "lock_check");
    cr_expect(eq(int, redlock_declare_empty_with(c, 0, NULL, &e), REDLOCK_EASYNC));
    tc_expect_msg(&e, "declare_empty_with");
    cr_expect(eq(int, redlock_readmit_with(c, 0, 0, NULL, NULL, &e), REDLOCK_EASYNC));
    tc_expect_msg(&e, "readmit_with");
    redlock_lock_free(l);
    redlock_client_free(c);
    event_base_free(base);
}

Test(bad_input, null_client_lock_or_callback_is_einval)
{
    redlock_lock *l = NULL;
    redlock_error e;

    cr_expect(eq(int, redlock_acquire(NULL, "r", 1, TTL_MS, &l, NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "NULL client");
    cr_expect(eq(int, redlock_acquire(tc_fx.c, "r", 1, TTL_MS, NULL, NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "NULL ret_lock");
    cr_expect(eq(int, redlock_release(tc_fx.c, NULL, NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "NULL lock");
    cr_expect(eq(int, redlock_extend(tc_fx.c, NULL, TTL_MS, NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "NULL lock");
    cr_expect(eq(int, redlock_acquire_async(NULL, "r", 1, TTL_MS, acq_cb, NULL, &e),
                 REDLOCK_EINVAL));
    tc_expect_msg(&e, "NULL client");
    cr_expect(eq(int, redlock_lock_new("r", 1, "t", NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "NULL ret");
    /* Destructors take NULL. */
    redlock_lock_free(NULL);
    redlock_client_free(NULL);
}

static void on_ping(redlock_client *c, int status, const redlock_status *st,
                    const redlock_error *err, void *arg)
{
    (void)c;
    (void)status;
    (void)st;
    (void)err;
    *(int *)arg = 1;
}

/* The async twins of lock_check, declare_empty and readmit (1.1) refuse a
 * NULL client, callback or lock and bad flags or bound at once, with one
 * line, and never call back. */
Test(bad_input, async_check_declare_and_readmit_refuse_null_and_bad_arguments)
{
    struct event_base *base = event_base_new();
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_error e;
    int pinged = 0;

    cr_assert(not(zero(ptr, base)));
    c = tc_client_async(NULL, base);
    cr_assert(tc_async_ready(base, c, tc_n(), 5000), "masters not connected");
    cr_assert(eq(int, redlock_lock_new("r", 1, "tok", &l, NULL), 0));
    cb_runs = 0;

    cr_expect(eq(int, redlock_lock_check_async(NULL, l, check_cb, NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "lock_check_async: NULL client");
    cr_expect(strstr(e.msg, "client is NULL") != NULL, "%s", e.msg);
    cr_expect(eq(int, redlock_lock_check_async(c, l, NULL, NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "lock_check_async: NULL callback");
    cr_expect(strstr(e.msg, "callback is NULL") != NULL, "%s", e.msg);
    cr_expect(eq(int, redlock_lock_check_async(c, NULL, check_cb, NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "lock_check_async: NULL lock");
    cr_expect(strstr(e.msg, "lock is NULL") != NULL, "%s", e.msg);

    cr_expect(eq(int, redlock_declare_empty_async(NULL, 0, word_cb, NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "declare_empty_async: NULL client");
    cr_expect(eq(int, redlock_declare_empty_async(c, 0, NULL, NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "declare_empty_async: NULL callback");
    cr_expect(strstr(e.msg, "callback is NULL") != NULL, "%s", e.msg);
    cr_expect(eq(int, redlock_declare_empty_async(c, 0x80, word_cb, NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "declare_empty_async: unknown flags");
    cr_expect(strstr(e.msg, "unknown flags 0x80") != NULL, "%s", e.msg);

    cr_expect(eq(int, redlock_readmit_async(NULL, 0, 0, word_cb, NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "readmit_async: NULL client");
    cr_expect(eq(int, redlock_readmit_async(c, 0, 0, NULL, NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "readmit_async: NULL callback");
    cr_expect(eq(int, redlock_readmit_async(c, 0, 0x80, word_cb, NULL, &e), REDLOCK_EINVAL));
    tc_expect_msg(&e, "readmit_async: unknown flags");
    cr_expect(eq(int, redlock_readmit_async(c, REDLOCK_TTL_MAX_MS + 1u, 0, word_cb, NULL, &e),
                 REDLOCK_EINVAL));
    tc_expect_msg(&e, "readmit_async: max_ttl_ms too large");
    cr_expect(strstr(e.msg, "max_ttl_ms") != NULL, "%s", e.msg);

    /* A round trip on the loop: a callback queued by any call above would
     * have run before this one. */
    cr_assert(eq(int, redlock_ping_async(c, on_ping, &pinged, &e), 0), "%s", e.msg);
    cr_assert(TC_RUN_UNTIL(base, pinged, 5000), "ping never called back");
    cr_expect(eq(int, cb_runs, 0), "a call that returned an error called back");
    redlock_lock_free(l);
    redlock_client_free(c);
    event_base_free(base);
}

/* Per-call acquire options: every bad value is refused before anything is
 * sent, with one line that names the field. */
struct opts_case {
    const char *name;
    void (*spoil)(redlock_acquire_opts *o);
    const char *field;
};

static void no_ttl(redlock_acquire_opts *o)
{
    o->ttl_ms = 0;
}
static void ttl_too_long(redlock_acquire_opts *o)
{
    o->ttl_ms = REDLOCK_TTL_MAX_MS + 1u;
}
static void bad_flags(redlock_acquire_opts *o)
{
    o->flags = 0x80;
}
static void negative_wait(redlock_acquire_opts *o)
{
    o->wait_ms = -7;
}
static void endless_wait(redlock_acquire_opts *o)
{
    o->wait_ms = REDLOCK_WAIT_MAX_MS + 1;
}
static void long_delay(redlock_acquire_opts *o)
{
    o->retry_delay_ms = 600001;
}
static void long_jitter(redlock_acquire_opts *o)
{
    o->retry_jitter_ms = 600001;
}
static void no_size(redlock_acquire_opts *o)
{
    o->size = 0;
}

static const struct opts_case opts_cases[] = {
    { "no ttl", no_ttl, "ttl" },
    { "ttl too long", ttl_too_long, "ttl" },
    { "unknown flags", bad_flags, "flags" },
    { "negative wait", negative_wait, "wait_ms" },
    { "wait beyond 2^40 ms", endless_wait, "wait_ms" },
    { "retry delay too long", long_delay, "retry_delay_ms" },
    { "retry jitter too long", long_jitter, "retry_jitter_ms" },
    { "size not set by init", no_size, "redlock_acquire_opts_init" },
};

ParameterizedTestParameters(bad_input, bad_acquire_options_are_named)
{
    TC_CASE_INDEXES(opts_cases);
}

ParameterizedTest(size_t *i, bad_input, bad_acquire_options_are_named)
{
    const struct opts_case *k = &opts_cases[*i];
    redlock_acquire_opts o;
    redlock_acquire_opts_init(&o);
    o.ttl_ms = TTL_MS;
    k->spoil(&o);
    redlock_resource r = { "r", 1 };
    redlock_lock *l = NULL;
    redlock_error e;
    int rc = redlock_acquire_with(tc_fx.c, &r, 1, &o, &l, NULL, &e);
    cr_assert(eq(int, rc, REDLOCK_EINVAL), "%s: %s", k->name, redlock_err_name(rc));
    cr_expect(zero(ptr, l));
    cr_expect(strstr(e.msg, k->field) != NULL, "%s: the message does not name %s: %s", k->name,
              k->field, e.msg);
    cr_expect(strchr(e.msg, '\n') == NULL);
    /* NULL options */
    cr_expect(eq(int, redlock_acquire_with(tc_fx.c, &r, 1, NULL, &l, NULL, &e), REDLOCK_EINVAL));
}
