/* test-loop-libuv.c - <redlock/libuv.h> on a real uv_loop_t.
 *
 * The cases are loop-cases.c's (the hooks alone, then clients on the test's
 * masters); this file says how to run a libuv loop for them, and checks
 * what is libuv's own: handles close in uv_close()'s callback, so a loop
 * closes (uv_loop_close() == 0) only after one more pass once the client
 * is freed, and then it must.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock/libuv.h>

#include "await.h"
#include "core.h"
#include "loop-cases.h"

/* The test's loop, and a timer that ends each pass after TC_POLL_MS. */
struct uvl {
    uv_loop_t loop;
    uv_timer_t tick;
};

static void *uvl_open(void)
{
    struct uvl *u = calloc(1, sizeof(*u));

    cr_assert(not(zero(ptr, u)));
    cr_assert(eq(int, uv_loop_init(&u->loop), 0));
    cr_assert(eq(int, uv_timer_init(&u->loop, &u->tick), 0));
    return u;
}

static int uvl_fill(redlock_loop *l, void *loop)
{
    return redlock_libuv_loop(l, loop ? &((struct uvl *)loop)->loop : NULL);
}

static int uvl_client_new(const redlock_config *cfg, void *loop, redlock_client **ret,
                          redlock_error *reterr)
{
    return redlock_client_new_libuv(cfg, &((struct uvl *)loop)->loop, ret, reterr);
}

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

static void uvl_pass(void *loop)
{
    struct uvl *u = loop;

    uv_timer_start(&u->tick, on_tick, TC_POLL_MS, 0);
    uv_run(&u->loop, UV_RUN_ONCE);
    uv_timer_stop(&u->tick);
}

struct walk {
    uv_handle_t *skip;
    int n;
    char what[256];
};

static void count_handle(uv_handle_t *h, void *arg)
{
    struct walk *w = arg;
    size_t len = strlen(w->what);

    if (h == w->skip)
        return;
    w->n++;
    snprintf(w->what + len, sizeof(w->what) - len, "%s%s%s", len ? ", " : "",
             uv_handle_type_name(uv_handle_get_type(h)), uv_is_closing(h) ? " (closing)" : "");
}

static struct walk walk(struct uvl *u)
{
    struct walk w = { .skip = (uv_handle_t *)&u->tick };

    uv_walk(&u->loop, count_handle, &w);
    return w;
}

static int uvl_handles(void *loop)
{
    return walk(loop).n;
}

static const char *uvl_close(void *loop)
{
    static char left[320];
    struct uvl *u = loop;
    struct walk w;
    int rc;

    uv_close((uv_handle_t *)&u->tick, NULL);
    uv_run(&u->loop, UV_RUN_NOWAIT);
    w = walk(u);
    rc = uv_loop_close(&u->loop);
    if (rc == 0) {
        free(u);
        return NULL;
    }
    /* Leaked on purpose: the handles left point into it. */
    snprintf(left, sizeof(left), "uv_loop_close: %s; handles: %s", uv_err_name(rc), w.what);
    return left;
}

const struct tc_loop_driver tc_loop_driver = {
    .name = "libuv",
    .open = uvl_open,
    .fill = uvl_fill,
    .client_new = uvl_client_new,
    .pass = uvl_pass,
    .handles = uvl_handles,
    .close = uvl_close,
};

/* ------------------------------------------------------------------------ */
/* libuv's own                                                              */
/* ------------------------------------------------------------------------ */

static void ignore_sigpipe(void)
{
    signal(SIGPIPE, SIG_IGN); /* an async client writes on our thread (redlock.h) */
}

TestSuite(libuv, .init = ignore_sigpipe, .timeout = 60);

Test(libuv, a_null_loop_is_einval_with_one_line)
{
    redlock_config cfg;
    redlock_loop l;
    redlock_client *c = NULL;
    redlock_error e;

    tc_config(&cfg);
    cr_expect(eq(int, redlock_libuv_loop(&l, NULL), REDLOCK_EINVAL));
    cr_expect(eq(int, redlock_client_new_libuv(&cfg, NULL, &c, &e), REDLOCK_EINVAL));
    cr_expect(eq(int, e.code, REDLOCK_EINVAL));
    cr_expect(zero(ptr, c));
    tc_expect_msg(&e, "NULL uv_loop_t");
    cr_expect(not(zero(ptr, strstr(e.msg, "uv_loop_t"))), "%s", e.msg);
}

static void on_ready(redlock_client *c, int status, size_t n_up, const redlock_error *err,
                     void *arg)
{
    (void)c, (void)n_up, (void)err;
    *(int *)arg = status == 0 ? 1 : -1;
}

Test(libuv, the_loop_closes_one_pass_after_the_client_is_freed)
{
    uv_loop_t loop;
    redlock_client *c = NULL;
    redlock_config cfg;
    redlock_error e;
    int up = 0, rc;

    cr_assert(eq(int, uv_loop_init(&loop), 0));
    tc_config(&cfg);
    rc = redlock_client_new_libuv(&cfg, &loop, &c, &e);
    cr_assert(eq(int, rc, 0), "%s", e.msg);
    cr_assert(eq(int, redlock_ready_async(c, 0, 10000, on_ready, &up, &e), 0), "%s", e.msg);
    /* The connections keep the loop alive: UV_RUN_ONCE until ready. */
    cr_assert(TC_AWAIT((uv_run(&loop, UV_RUN_ONCE), up != 0), 10000));
    cr_assert(eq(int, up, 1), "masters not up");

    redlock_client_free(c);
    /* Every handle is closing, none closed: the loop is not done yet. */
    cr_expect(eq(int, uv_loop_close(&loop), UV_EBUSY));
    cr_expect(eq(int, uv_loop_alive(&loop), 1), "the closing handles are not on the loop");
    /* One pass runs the close callbacks (which free the handles: ASan
     * would see a leak otherwise), and nothing is active any more. */
    cr_expect(eq(int, uv_run(&loop, UV_RUN_DEFAULT), 0));
    cr_expect(eq(int, uv_loop_close(&loop), 0), "the loop does not close after one more pass");
}
