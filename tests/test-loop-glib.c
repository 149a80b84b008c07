/* test-loop-glib.c - <redlock/glib.h> on a real GMainContext.
 *
 * The cases are loop-cases.c's (the hooks alone, then clients on the test's
 * masters); this file says how to run a context of the test's own for
 * them, and checks what is GLib's own: NULL is the default context, and a
 * freed client leaves no source attached to its context. GLib cannot list
 * a context's sources, but it numbers them in order: every source made
 * between two markers has an id between theirs, and
 * g_main_context_find_source_by_id() finds it while it is attached.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock/glib.h>

#include "await.h"
#include "core.h"
#include "loop-cases.h"

struct gl {
    GMainContext *ctx;
    guint first; /* a marker's id: the test's sources come after it */
};

/* A source attached and destroyed at once: its id is the next to be given. */
static guint marker(GMainContext *ctx)
{
    GSource *s = g_idle_source_new();
    guint id = g_source_attach(s, ctx);

    g_source_destroy(s);
    g_source_unref(s);
    return id;
}

/* Sources attached to @ctx whose ids are after @first; their names in @what. */
static int attached(GMainContext *ctx, guint first, char *what, size_t size)
{
    guint last = marker(ctx);
    int n = 0;

    if (what && size)
        what[0] = '\0';
    for (guint id = first + 1; id < last; id++) {
        GSource *s = g_main_context_find_source_by_id(ctx, id);
        if (!s)
            continue;
        n++;
        if (what) {
            size_t len = strlen(what);
            const char *name = g_source_get_name(s);
            snprintf(what + len, size - len, "%s%s", len ? ", " : "", name ? name : "(unnamed)");
        }
    }
    return n;
}

static void *gl_open(void)
{
    struct gl *g = g_new0(struct gl, 1);

    /* A GLib warning or critical (a misused source, a bad tag) fails the
     * test: by default GLib only prints them. */
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
    g->ctx = g_main_context_new();
    g->first = marker(g->ctx);
    return g;
}

static int gl_fill(redlock_loop *l, void *loop)
{
    return redlock_glib_loop(l, ((struct gl *)loop)->ctx);
}

static int gl_client_new(const redlock_config *cfg, void *loop, redlock_client **ret,
                         redlock_error *reterr)
{
    return redlock_client_new_glib(cfg, ((struct gl *)loop)->ctx, ret, reterr);
}

static gboolean on_tick(gpointer data)
{
    (void)data;
    return G_SOURCE_CONTINUE;
}

/* One iteration, woken after TC_POLL_MS if nothing else wakes it. */
static void gl_pass(void *loop)
{
    struct gl *g = loop;
    GSource *tick = g_timeout_source_new(TC_POLL_MS);

    g_source_set_callback(tick, on_tick, NULL, NULL);
    g_source_attach(tick, g->ctx);
    g_main_context_iteration(g->ctx, TRUE);
    g_source_destroy(tick);
    g_source_unref(tick);
}

static int gl_handles(void *loop)
{
    struct gl *g = loop;

    return attached(g->ctx, g->first, NULL, 0);
}

static const char *gl_close(void *loop)
{
    static char left[320];
    struct gl *g = loop;
    char what[256];
    int n;

    g_main_context_iteration(g->ctx, FALSE);
    n = attached(g->ctx, g->first, what, sizeof(what));
    g_main_context_unref(g->ctx);
    g_free(g);
    if (n == 0)
        return NULL;
    snprintf(left, sizeof(left), "%d sources still attached: %s", n, what);
    return left;
}

const struct tc_loop_driver tc_loop_driver = {
    .name = "glib",
    .open = gl_open,
    .fill = gl_fill,
    .client_new = gl_client_new,
    .pass = gl_pass,
    .handles = gl_handles,
    .close = gl_close,
};

/* ------------------------------------------------------------------------ */
/* GLib's own                                                               */
/* ------------------------------------------------------------------------ */

static void glib_setup(void)
{
    signal(SIGPIPE, SIG_IGN); /* an async client writes on our thread (redlock.h) */
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
}

TestSuite(glib, .init = glib_setup, .timeout = 60);

static void on_done(redlock_client *c, int status, redlock_lock *lock, const redlock_outcome *out,
                    const redlock_error *err, void *arg)
{
    int *done = arg;

    (void)c, (void)out, (void)err;
    *done = status == 0 ? 1 : -1;
    if (lock && status == 0)
        *done = redlock_release_async(c, lock, tc_free_lock_cb, NULL, NULL) == 0 ? 1 : -2;
}

Test(glib, a_null_context_is_the_default_one_and_a_freed_client_leaves_nothing_on_it)
{
    GMainContext *def = g_main_context_default();
    guint first = marker(def);
    redlock_loop l;
    redlock_client *c = NULL;
    redlock_config cfg;
    redlock_error e;
    char res[128], what[256];
    int done = 0, rc;

    cr_assert(eq(int, redlock_glib_loop(&l, NULL), 0));
    cr_expect(eq(ptr, l.data, (void *)def));

    tc_config(&cfg);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_client_new_glib(&cfg, NULL, &c, &e);
    cr_assert(eq(int, rc, 0), "%s", e.msg);
    cr_assert(eq(int, redlock_acquire_async(c, res, strlen(res), 10000, on_done, &done, &e), 0),
              "%s", e.msg);
    /* Only the default context runs the client. */
    cr_assert(TC_AWAIT((g_main_context_iteration(NULL, FALSE), done != 0), 10000),
              "the default context never ran the acquire");
    cr_assert(eq(int, done, 1), "acquire, then release_async: %d", done);
    cr_expect(gt(int, attached(def, first, NULL, 0), 0), "the client has no source on it");
    redlock_client_free(c);
    cr_expect(eq(int, attached(def, first, what, sizeof(what)), 0), "left: %s", what);
}
