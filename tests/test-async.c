/* test-async.c - the async API on the test's own event_base, and its callback contract.
 *
 * The contract (libuv's, stated in redlock.h): if an *_async call returns
 * an error its callback never runs; otherwise it runs exactly once, from
 * the event loop, never inside the *_async call. Freeing the client from a
 * callback is safe; operations still in flight then complete, once each,
 * with REDLOCK_ESHUTDOWN, before the free returns (nested inside the
 * freeing callback when freed from one). Each
 * test gets a fresh event_base and client; sanitizer builds check that no
 * late reply touches freed memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cluster.h"
#include "fake.h"
#include "core.h"

#define TTL_MS 10000u
#define WAIT_MS 10000

static struct event_base *base;
static redlock_client *client;
static int in_call; /* set around every *_async call */

static void setup(void)
{
    base = event_base_new();
    cr_assert(not(zero(ptr, base)));
    client = tc_client_async(NULL, base);
}

static void teardown(void)
{
    redlock_client_free(client);
    client = NULL;
    event_base_free(base);
    base = NULL;
}

TestSuite(async, .init = setup, .fini = teardown, .timeout = 60);

/* What one operation's callback saw. */
struct rec {
    int runs;
    int runs_inside_call;  /* ran while an *_async call was on the stack */
    int runs_inside_other; /* ran while another callback was on the stack */
    int done;              /* for TC_RUN_UNTIL */
    int status;
    redlock_lock *lock;
    int out_status; /* what the outcome said (it is lent during the callback) */
    size_t out_ok, out_quorum;
    int has_err;
    redlock_error err;
    /* for callbacks that act */
    int free_client;    /* free the client from this callback */
    int async_rc_in_cb; /* rc of an acquire_async tried from this callback */
    struct rec *inner;  /* receives that acquire's callback, if any */
};

static int in_callback; /* depth of our callbacks on the stack */

static void record(struct rec *r, int status, redlock_lock *lock, const redlock_outcome *out,
                   const redlock_error *err)
{
    r->runs++;
    r->runs_inside_call += in_call;
    r->runs_inside_other += in_callback > 0;
    r->status = status;
    r->lock = lock;
    if (out) {
        r->out_status = redlock_outcome_status(out);
        r->out_ok = redlock_outcome_ok(out);
        r->out_quorum = redlock_outcome_quorum(out);
    }
    r->has_err = err != NULL;
    if (err)
        r->err = *err;
    r->done = 1;
}

static void on_acquired(redlock_client *c, int status, redlock_lock *lock,
                        const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct rec *r = arg;

    record(r, status, lock, out, err);
    in_callback++;
    if (r->inner) {
        /* The client is shutting down (or not): try to start another op. */
        r->async_rc_in_cb = redlock_acquire_async(c, "late", 4, TTL_MS, on_acquired, r->inner,
                                                  NULL);
    }
    if (r->free_client) {
        redlock_client_free(c);
        client = NULL;
    }
    in_callback--;
}

static void on_op(redlock_client *c, int status, redlock_lock *lock, const redlock_outcome *out,
                  const redlock_error *err, void *arg)
{
    (void)c;
    record(arg, status, lock, out, err);
}

/* Run the loop for @ms whatever happens: time is the subject, to see that
 * nothing more runs. Twice below it also stands in for an event no public
 * call reports yet (an async client cannot ask whether its masters are
 * connected: issue 10 item 5); there the test holds either way and only
 * the state it starts from may differ. */
static void run_for(int ms)
{
    int never = 0;

    TC_RUN_UNTIL(base, never, ms);
}

static void start_acquire(redlock_client *c, const char *res, struct rec *r)
{
    redlock_error e;
    int rc;

    in_call = 1;
    rc = redlock_acquire_async(c, res, strlen(res), TTL_MS, on_acquired, r, &e);
    in_call = 0;
    cr_assert(eq(int, rc, 0), "acquire_async: %s: %s", redlock_err_name(rc), e.msg);
    cr_assert(eq(int, r->runs, 0), "callback ran inside acquire_async");
}

static void wait_done(struct rec *r, const char *what)
{
    cr_assert(TC_RUN_UNTIL(base, r->done, WAIT_MS), "%s: callback never ran", what);
}

Test(async, acquire_extend_release_call_back_once_from_the_loop)
{
    struct rec acq = { 0 }, ext = { 0 }, rel = { 0 };
    redlock_error e;
    char res[128];
    int rc;

    tc_resource(res, sizeof(res), NULL);
    start_acquire(client, res, &acq);
    wait_done(&acq, "acquire");
    cr_assert(eq(int, acq.status, 0), "%s", acq.err.msg);
    cr_assert(not(zero(ptr, acq.lock)));
    cr_expect(eq(int, acq.has_err, 1), "err is never NULL");
    cr_expect(eq(int, acq.err.code, 0), "err's code is the status");
    cr_expect(eq(str, acq.err.msg, ""), "no message on success");
    cr_expect(eq(int, acq.out_status, 0));
    cr_expect(ge(u32, acq.out_ok, acq.out_quorum));
    cr_expect(tc_is_hex32(redlock_lock_token(acq.lock)));
    cr_expect(ge(int, tc_count_token(res, strlen(res), redlock_lock_token(acq.lock), TTL_MS),
                 (int)acq.out_quorum));

    in_call = 1;
    rc = redlock_extend_async(client, acq.lock, 2 * TTL_MS, on_op, &ext, &e);
    in_call = 0;
    cr_assert(eq(int, rc, 0), "%s", e.msg);
    cr_assert(eq(int, ext.runs, 0), "callback ran inside extend_async");
    wait_done(&ext, "extend");
    cr_expect(eq(int, ext.status, 0), "%s", ext.err.msg);
    cr_expect(eq(ptr, ext.lock, acq.lock), "extend hands the lock back");
    cr_expect(gt(i64, redlock_lock_validity_ms(acq.lock), (int64_t)TTL_MS));

    in_call = 1;
    rc = redlock_release_async(client, acq.lock, on_op, &rel, &e);
    in_call = 0;
    cr_assert(eq(int, rc, 0), "%s", e.msg);
    cr_assert(eq(int, rel.runs, 0), "callback ran inside release_async");
    wait_done(&rel, "release");
    cr_expect(eq(int, rel.status, 0), "%s", rel.err.msg);
    cr_expect(eq(ptr, rel.lock, acq.lock));

    /* Exactly once: nothing more arrives however long the loop runs. */
    run_for(300);
    cr_expect(eq(int, acq.runs, 1));
    cr_expect(eq(int, ext.runs, 1));
    cr_expect(eq(int, rel.runs, 1));
    cr_expect(zero(int, acq.runs_inside_call + ext.runs_inside_call + rel.runs_inside_call));
    redlock_lock_free(acq.lock);
}

Test(async, failure_calls_back_once_with_err_and_no_lock)
{
    struct rec r = { 0 };
    redlock_config cfg;
    char res[128];

    /* Held by someone else everywhere, no retries: ECONFLICT. */
    tc_resource(res, sizeof(res), NULL);
    for (int i = 0; i < tc_n(); i++)
        tc_plant(i, res, strlen(res), "someone-else", TTL_MS);
    redlock_client_free(client);
    tc_config(&cfg);
    cfg.retry_count = 0;
    client = tc_client_async(&cfg, base);

    start_acquire(client, res, &r);
    wait_done(&r, "acquire");
    cr_expect(eq(int, r.status, REDLOCK_ECONFLICT), "%s", redlock_err_name(r.status));
    cr_expect(zero(ptr, r.lock));
    cr_assert(eq(int, r.has_err, 1), "err is set on failure");
    cr_expect(eq(int, r.err.code, REDLOCK_ECONFLICT));
    tc_expect_msg(&r.err, "acquire");
    cr_expect(eq(int, r.out_status, REDLOCK_ECONFLICT));
    run_for(200);
    cr_expect(eq(int, r.runs, 1));
    cr_expect(zero(int, r.runs_inside_call));
}

Test(async, decision_inside_the_call_is_still_delivered_from_the_loop)
{
    char masters[128];
    redlock_config cfg;
    struct rec acq = { 0 }, rel = { 0 };
    redlock_lock *l = NULL;
    char res[128];
    int rc;

    /* Every master refuses connections, so the outcome is known before
     * acquire_async even returns. The callback must still wait for the
     * loop. */
    snprintf(masters, sizeof(masters), "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", tc_dead_port(),
             tc_dead_port(), tc_dead_port());
    redlock_client_free(client);
    tc_config(&cfg);
    cfg.masters = masters;
    cfg.retry_count = 0;
    client = tc_client_async(&cfg, base);
    run_for(50); /* let the refusals land (a stand-in: see run_for()) */

    tc_resource(res, sizeof(res), NULL);
    start_acquire(client, res, &acq);
    wait_done(&acq, "acquire");
    cr_expect(eq(int, acq.status, REDLOCK_ENOQUORUM), "%s", redlock_err_name(acq.status));
    cr_expect(zero(int, acq.runs_inside_call));

    cr_assert(eq(int, redlock_lock_new(res, strlen(res), "tok", &l, NULL), 0));
    in_call = 1;
    rc = redlock_release_async(client, l, on_op, &rel, NULL);
    in_call = 0;
    cr_assert(eq(int, rc, 0));
    cr_expect(eq(int, rel.runs, 0), "callback ran inside release_async");
    wait_done(&rel, "release");
    cr_expect(eq(int, rel.status, REDLOCK_ENOQUORUM), "%s", redlock_err_name(rel.status));
    run_for(100);
    cr_expect(eq(int, acq.runs, 1));
    cr_expect(eq(int, rel.runs, 1));
    redlock_lock_free(l);
}

/* A callback that tries again at once, against masters that refuse: each
 * retry is decided inside its call. Its delivery must wait for the loop's
 * next pass, so timers and sockets still get their turn; a delivery in the
 * same pass would spin here forever. */
struct spin {
    const char *res;
    int runs, stop;
    redlock_client *a, *b; /* set: each client's callback retries on the other */
};

static void on_spin(redlock_client *c, int status, redlock_lock *lock, const redlock_outcome *out,
                    const redlock_error *err, void *arg)
{
    struct spin *s = arg;

    (void)status;
    (void)out;
    (void)err;
    redlock_lock_free(lock);
    s->runs++;
    if (s->a)
        c = c == s->a ? s->b : s->a;
    if (!s->stop && redlock_acquire_async(c, s->res, strlen(s->res), TTL_MS, on_spin, s, NULL) != 0)
        s->stop = 1;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    *(int *)arg = 1;
}

/* Masters that refused us and that we will not dial again for a minute:
 * every acquire is answered at once (down), so a callback's retry finishes
 * inside the callback; a reconnect would put a socket wait between two
 * retries and hide a loop that never yields. */
static redlock_client *refused_client(void)
{
    static char masters[128];
    redlock_config cfg;

    snprintf(masters, sizeof(masters), "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", tc_dead_port(),
             tc_dead_port(), tc_dead_port());
    tc_config(&cfg);
    cfg.masters = masters;
    cfg.retry_count = 0;
    cfg.reconnect_min_ms = cfg.reconnect_max_ms = 60000;
    return tc_client_async(&cfg, base);
}

/* Spin @s from @first until a 20 ms timer fires: it fires only if the loop
 * gets past the deliveries. */
static void spin_until_a_timer_fires(struct spin *s, redlock_client *first, int min_runs)
{
    int ticked = 0;
    redlock_error e;
    struct event *tick = evtimer_new(base, on_tick, &ticked);
    struct timeval tv = { 0, 20000 };

    run_for(50); /* let the refusals land, as above */
    cr_assert(not(zero(ptr, tick)));
    evtimer_add(tick, &tv);
    cr_assert(eq(int, redlock_acquire_async(first, s->res, strlen(s->res), TTL_MS, on_spin, s, &e),
                 0),
              "%s", e.msg);
    cr_assert(TC_RUN_UNTIL(base, ticked, WAIT_MS), "the timer never fired");
    cr_expect(ge(int, s->runs, min_runs), "the callbacks ran %d times", s->runs);
    s->stop = 1;
    run_for(50);
    event_free(tick);
}

Test(async, a_callback_that_retries_at_once_cannot_starve_the_loop)
{
    char res[128];

    redlock_client_free(client);
    client = refused_client();
    tc_resource(res, sizeof(res), NULL);
    struct spin s = { .res = res };
    spin_until_a_timer_fires(&s, client, 2);
}

/* The same with two clients on one loop, each callback retrying on the
 * other: neither client is delivering when the other's op finishes, so only
 * a rule that spans clients keeps the pass finite. */
Test(async, two_clients_retrying_into_each_other_cannot_starve_the_loop)
{
    char res[128];

    redlock_client_free(client);
    client = refused_client();
    redlock_client *other = refused_client();
    tc_resource(res, sizeof(res), NULL);
    struct spin s = { .res = res, .a = client, .b = other };
    spin_until_a_timer_fires(&s, client, 3);
    redlock_client_free(other);
}

Test(async, error_return_never_runs_the_callback)
{
    struct rec r[6];
    redlock_lock *l = NULL;
    redlock_error e;
    int rc;

    memset(r, 0, sizeof(r));
    cr_assert(eq(int, redlock_lock_new("res", 3, "tok", &l, NULL), 0));
    in_call = 1;
    rc = redlock_acquire_async(client, "res", 3, 0, on_acquired, &r[0], &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL));
    tc_expect_msg(&e, "ttl 0");
    rc = redlock_acquire_async(client, "res", 0, TTL_MS, on_acquired, &r[1], &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL));
    tc_expect_msg(&e, "empty resource");
    rc = redlock_acquire_async(client, "r\0s", 3, TTL_MS, on_acquired, &r[2], &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL));
    tc_expect_msg(&e, "NUL in resource");
    rc = redlock_acquire_async(client, "res", 3, TTL_MS, NULL, &r[3], &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL));
    tc_expect_msg(&e, "NULL callback");
    rc = redlock_release_async(client, NULL, on_op, &r[4], &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL));
    tc_expect_msg(&e, "NULL lock");
    rc = redlock_extend_async(client, l, 2, on_op, &r[5], &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL));
    tc_expect_msg(&e, "ttl 2");
    in_call = 0;

    run_for(300);
    for (int i = 0; i < 6; i++)
        cr_expect(eq(int, r[i].runs, 0), "call %d returned an error and still called back", i);
    redlock_lock_free(l);
}

static int count_done(const struct rec *r, int n)
{
    int done = 0;

    for (int i = 0; i < n; i++)
        done += r[i].done;
    return done;
}

/* Run the loop until @n records are done or WAIT_MS passes. */
static void wait_all(const struct rec *r, int n)
{
    TC_RUN_UNTIL(base, count_done(r, n) >= n, WAIT_MS);
}

Test(async, many_operations_in_flight_each_call_back_once)
{
    enum { N = 64 };
    static struct rec acq[N], rel[N];
    static char res[N][128];

    for (int i = 0; i < N; i++) {
        tc_resource(res[i], sizeof(res[i]), NULL);
        start_acquire(client, res[i], &acq[i]);
    }
    wait_all(acq, N);
    for (int i = 0; i < N; i++) {
        cr_assert(eq(int, acq[i].status, 0), "acquire %d: %s", i, acq[i].err.msg);
        in_call = 1;
        cr_assert(eq(int, redlock_release_async(client, acq[i].lock, on_op, &rel[i], NULL), 0));
        in_call = 0;
    }
    wait_all(rel, N);
    run_for(200);
    for (int i = 0; i < N; i++) {
        cr_expect(eq(int, acq[i].runs, 1), "acquire %d ran %d times", i, acq[i].runs);
        cr_expect(eq(int, rel[i].runs, 1), "release %d ran %d times", i, rel[i].runs);
        cr_expect(eq(int, rel[i].status, 0), "release %d: %s", i, rel[i].err.msg);
        cr_expect(zero(int, acq[i].runs_inside_call + rel[i].runs_inside_call));
        redlock_lock_free(acq[i].lock);
    }
}

/* Resources held by "someone else" on every master, with retries far
 * apart: acquires of them stay in flight for seconds. */
static redlock_client *client_with_slow_acquires(void)
{
    redlock_config cfg;

    tc_config(&cfg);
    cfg.retry_count = 10;
    cfg.retry_delay_ms = 1000;
    cfg.retry_jitter_ms = 0;
    return tc_client_async(&cfg, base);
}

static void plant_held(char *res, size_t size)
{
    tc_resource(res, size, NULL);
    for (int i = 0; i < tc_n(); i++)
        tc_plant(i, res, strlen(res), "someone-else", 60000);
}

static void expect_shutdown(const struct rec *r, const char *what)
{
    cr_expect(eq(int, r->runs, 1), "%s: ran %d times", what, r->runs);
    cr_expect(eq(int, r->status, REDLOCK_ESHUTDOWN), "%s: %s", what, redlock_err_name(r->status));
    cr_expect(zero(ptr, r->lock), "%s: a lock from a shut-down acquire", what);
    cr_expect(eq(int, r->has_err, 1), "%s", what);
    if (r->has_err) {
        cr_expect(eq(int, r->err.code, REDLOCK_ESHUTDOWN), "%s", what);
        tc_expect_msg(&r->err, what);
    }
    cr_expect(eq(int, r->out_status, REDLOCK_ESHUTDOWN), "%s", what);
}

/* A release fired and the client freed at once, without running the loop
 * again: its callback says ESHUTDOWN (nobody waited for the answer), but
 * the release itself was queued, and the free sends what the sockets take
 * at once. The keys go now, not at the end of their 10 s ttl. */
Test(async, a_release_queued_just_before_the_free_still_reaches_the_masters)
{
    struct rec acq = { 0 }, rel = { 0 };
    char res[128];

    tc_resource(res, sizeof(res), NULL);
    start_acquire(client, res, &acq);
    wait_done(&acq, "acquire");
    cr_assert(eq(int, acq.status, 0), "%s", acq.err.msg);
    /* The acquire called back at quorum: the other masters' SETs may still
     * be on their way, so run the loop until every master has the key. */
    cr_assert(TC_RUN_UNTIL(base, tc_key_count(res, strlen(res)) == tc_n(), 2000),
              "%d of %d masters have the key", tc_key_count(res, strlen(res)), tc_n());
    cr_assert(eq(int, redlock_release_async(client, acq.lock, on_op, &rel, NULL), 0));
    redlock_client_free(client);
    client = NULL;
    cr_expect(eq(int, rel.runs, 1));
    cr_expect(TC_AWAIT(tc_key_count(res, strlen(res)) == 0, 2000),
              "%d keys left: the release was dropped with the client",
              tc_key_count(res, strlen(res)));
    redlock_lock_free(acq.lock);
}

Test(async, free_with_operations_in_flight_calls_each_back_once_with_eshutdown)
{
    struct rec b = { 0 }, c = { 0 }, late = { 0 };
    char held1[128], held2[128];

    redlock_client_free(client);
    client = client_with_slow_acquires();
    plant_held(held1, sizeof(held1));
    plant_held(held2, sizeof(held2));
    start_acquire(client, held1, &b);
    b.inner = &late; /* its callback tries to start another acquire */
    start_acquire(client, held2, &c);
    run_for(100); /* first attempts answered, waiting to retry (a stand-in: see run_for()) */
    cr_assert(eq(int, b.runs + c.runs, 0));

    /* From outside any callback: they complete inside the free. */
    redlock_client_free(client);
    client = NULL;
    expect_shutdown(&b, "acquire b");
    expect_shutdown(&c, "acquire c");
    cr_expect(eq(int, b.async_rc_in_cb, REDLOCK_ESHUTDOWN),
              "acquire_async from a shutdown callback: %s", redlock_err_name(b.async_rc_in_cb));
    run_for(300);
    cr_expect(eq(int, b.runs, 1));
    cr_expect(eq(int, c.runs, 1));
    cr_expect(eq(int, late.runs, 0), "an acquire refused during shutdown called back");
}

Test(async, free_from_a_callback_is_safe_and_the_rest_get_eshutdown_once)
{
    struct rec a = { 0 }, b = { 0 }, c = { 0 }, late = { 0 };
    char free_res[128], held1[128], held2[128];

    redlock_client_free(client);
    client = client_with_slow_acquires();
    plant_held(held1, sizeof(held1));
    plant_held(held2, sizeof(held2));
    tc_resource(free_res, sizeof(free_res), NULL);
    start_acquire(client, held1, &b);
    b.inner = &late;
    start_acquire(client, held2, &c);
    a.free_client = 1;
    start_acquire(client, free_res, &a);

    /* a succeeds at its quorum (with SETs still unanswered) and frees the
     * client from its callback. */
    wait_done(&a, "acquire a");
    cr_expect(eq(int, a.runs, 1));
    cr_expect(eq(int, a.status, 0), "%s", a.err.msg);
    cr_expect(zero(ptr, client), "callback did not free the client");
    expect_shutdown(&b, "acquire b");
    expect_shutdown(&c, "acquire c");
    cr_expect(eq(int, b.async_rc_in_cb, REDLOCK_ESHUTDOWN));

    /* Late replies and timers find nothing freed under them (ASan), and no
     * callback runs again. */
    run_for(500);
    cr_expect(eq(int, a.runs, 1));
    cr_expect(eq(int, b.runs, 1));
    cr_expect(eq(int, c.runs, 1));
    cr_expect(eq(int, late.runs, 0));
    /* The lock outlives the client. */
    cr_expect(tc_is_hex32(redlock_lock_token(a.lock)));
    redlock_lock_free(a.lock);
    tc_del_all(free_res, strlen(free_res));
}

Test(async, free_inside_a_callback_waits_for_it_then_ends_every_op)
{
    struct rec a = { 0 }, b = { 0 };
    char free_res[128], held[128];

    /* redlock.h, redlock_client_free(): called from one of the client's
     * callbacks, the free happens as soon as that callback returns (as
     * hiredis does), and the other callbacks in flight run then, before
     * control is back in the loop: b's ESHUTDOWN runs after a's callback,
     * not inside it, and nothing of the client is left for a later loop
     * iteration to touch. */
    redlock_client_free(client);
    client = client_with_slow_acquires();
    plant_held(held, sizeof(held));
    tc_resource(free_res, sizeof(free_res), NULL);
    start_acquire(client, held, &b);
    a.free_client = 1;
    start_acquire(client, free_res, &a);
    wait_done(&a, "acquire a");
    cr_expect(eq(int, b.runs, 1), "b had not called back when the loop pass ended");
    cr_expect(eq(int, b.status, REDLOCK_ESHUTDOWN));
    cr_expect(zero(int, b.runs_inside_other), "b's callback ran inside a's");
    cr_expect(zero(int, b.runs_inside_call));
    redlock_lock_free(a.lock);
    tc_del_all(free_res, strlen(free_res));
}

/* ---- status, ping and readiness on the caller's loop -------------------------------- */

struct st_rec {
    int runs;
    int status;
    uint32_t answered;
    int held_on;
    char token[REDLOCK_TOKEN_MAX + 1];
    redlock_error err; /* ready: what it said */
};

static void on_status(redlock_client *c, int status, const redlock_status *st,
                      const redlock_error *err, void *arg)
{
    (void)c;
    struct st_rec *r = arg;
    /* the header's promise: never NULL, its code the status */
    cr_expect(not(eq(ptr, (void *)err, NULL)), "a status callback's err is NULL");
    cr_expect(err == NULL || err->code == status, "err->code %d, status %d", err ? err->code : 0,
              status);
    r->runs++;
    r->status = status;
    r->answered = redlock_status_answered(st);
    r->held_on = (int)redlock_status_held(st);
    memcpy(r->token, redlock_status_majority_token(st), sizeof(r->token));
    cr_expect(zero(int, in_call), "called back inside the _async call");
}

static void on_ready(redlock_client *c, int status, size_t n_up, const redlock_error *err,
                     void *arg)
{
    (void)c;
    struct st_rec *r = arg;
    r->runs++;
    r->status = status;
    r->answered = (uint32_t)n_up;
    r->err = *err;
}

/* An acquire whose SETs are written but not answered when the client is
 * freed: its token may be on every master, and nobody will ever hold it.
 * The free releases it (the cleanup of a cancelled attempt, written with the
 * SETs), so the resource is free at once instead of after the ttl. */
Test(async, a_free_releases_an_acquire_in_flight_instead_of_leaving_its_keys)
{
    struct rec acq = { 0 };
    char res[128];
    long long seen[REDLOCK_MAX_MASTERS];

    struct st_rec ready = { 0 };
    cr_assert(eq(int, redlock_ready_async(client, tc_n(), 5000, on_ready, &ready, NULL), 0));
    cr_assert(TC_RUN_UNTIL(base, ready.runs == 1 && ready.status == 0, 6000),
              "the masters never all connected");
    tc_resource(res, sizeof(res), NULL);
    for (int m = 0; m < tc_n(); m++)
        seen[m] = tc_acquires_seen(m);
    start_acquire(client, res, &acq); /* queued on every connection */
    redlock_client_free(client);
    client = NULL;
    cr_expect(eq(int, acq.runs, 1));
    cr_expect(eq(int, acq.status, REDLOCK_ESHUTDOWN), "%s", redlock_err_name(acq.status));
    /* Each master ran the acquire (the script and its SET count two), and
     * then the release written behind it. */
    for (int m = 0; m < tc_n(); m++)
        cr_expect(TC_AWAIT(tc_acquires_seen(m) >= seen[m] + 2, 2000),
                  "master %d never ran the acquire (%lld commands)", m,
                  tc_acquires_seen(m) - seen[m]);
    cr_expect(TC_AWAIT(tc_key_count(res, strlen(res)) == 0, 2000),
              "the free left the attempt's keys on %d masters", tc_key_count(res, strlen(res)));
    redlock_lock_free(acq.lock);
}

Test(async, ready_status_and_ping_work_on_an_async_client)
{
    /* No polling with ping: readiness is awaited, then status and ping
     * run on the loop like every other operation. */
    struct st_rec ready = { 0 }, st = { 0 }, ping = { 0 };
    redlock_error e;
    in_call = 1;
    cr_assert(eq(int, redlock_ready_async(client, 0, 5000, on_ready, &ready, &e), 0), "%s", e.msg);
    in_call = 0;
    cr_assert(TC_RUN_UNTIL(base, ready.runs == 1, 6000), "ready never called back");
    cr_assert(eq(int, ready.status, 0));
    cr_expect(ge(u32, ready.answered, 3), "the quorum is connected");

    char res[128];
    tc_resource(res, sizeof(res), NULL);
    struct rec a = { 0 };
    start_acquire(client, res, &a);
    wait_done(&a, "acquire");
    in_call = 1;
    cr_assert(eq(int, redlock_status_get_async(client, res, strlen(res), on_status, &st, &e), 0),
              "%s", e.msg);
    cr_assert(eq(int, redlock_ping_async(client, on_status, &ping, &e), 0), "%s", e.msg);
    in_call = 0;
    cr_assert(TC_RUN_UNTIL(base, st.runs == 1 && ping.runs == 1, 5000), "no callback");
    cr_expect(eq(int, st.status, 0));
    cr_expect(eq(int, st.held_on, 5));
    cr_expect(eq(str, st.token, (char *)redlock_lock_token(a.lock)));
    cr_expect(eq(int, ping.status, 0));
    cr_expect(eq(u32, ping.answered, 5));
    redlock_lock_free(a.lock);
    tc_del_all(res, strlen(res));

    /* Readiness that cannot come: a timeout, once, from the loop. */
    struct st_rec never = { 0 };
    redlock_config cfg;
    tc_config(&cfg);
    char *masters = tc_masters_with(0, "127.0.0.1:1");
    cfg.masters = masters;
    redlock_client *c = tc_client_async(&cfg, base);
    cr_assert(eq(int, redlock_ready_async(c, 5, 200, on_ready, &never, &e), 0), "%s", e.msg);
    cr_assert(TC_RUN_UNTIL(base, never.runs == 1, 3000), "the timeout never came");
    cr_expect(eq(int, never.status, REDLOCK_ETIMEOUT));
    cr_expect(le(u32, never.answered, 4));
    cr_expect(eq(int, never.err.code, REDLOCK_ETIMEOUT), "the error is the status");
    cr_expect(not(zero(ptr, strstr(never.err.msg, "5 wanted"))), "%s", never.err.msg);
    redlock_client_free(c);
    free(masters);
}
