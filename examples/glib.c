/* glib.c - take a lock on five masters from a GLib main loop, release it. Build and run:
 *   cc glib.c $(pkg-config --cflags --libs redlock glib-2.0) && ./a.out HOST:PORT,HOST:PORT,...
 * (or set REDLOCK_MASTERS). The client's hooks are <redlock/glib.h>'s: a
 * GSource per connection and per timer, on the default main context. */
#include <redlock/glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static GMainLoop *loop;
static int status = 1;

static void on_released(redlock_client *c, int rc, redlock_lock *lock, const redlock_outcome *out,
                        const redlock_error *err, void *arg)
{
    (void)out, (void)arg;
    if (rc == 0) {
        printf("released\n");
        status = 0;
    } else {
        fprintf(stderr, "glib: release: %s\n", err->msg); /* it lapses after its ttl anyway */
    }
    redlock_lock_free(lock);
    redlock_client_free(c); /* from its own callback: done when this returns */
    g_main_loop_quit(loop);
}

static void on_locked(redlock_client *c, int rc, redlock_lock *lock, const redlock_outcome *out,
                      const redlock_error *err, void *arg)
{
    redlock_error e;
    (void)out, (void)arg;
    if (rc != 0) {
        fprintf(stderr, "glib: %s\n", err->msg); /* e.g. held by another client: retry later */
        redlock_client_free(c);
        g_main_loop_quit(loop);
        return;
    }
    printf("locked on a GLib main loop, valid for %lld ms\n",
           (long long)redlock_lock_validity_ms(lock));
    /* ... the work, on this loop: finish well within the validity ... */
    if (redlock_release_async(c, lock, on_released, NULL, &e) != 0) {
        fprintf(stderr, "glib: release: %s\n", e.msg);
        redlock_lock_free(lock);
        redlock_client_free(c);
        g_main_loop_quit(loop);
    }
}

int main(int argc, char **argv)
{
    redlock_config cfg;
    redlock_config_init(&cfg);
    cfg.masters = argc > 1 ? argv[1] : getenv("REDLOCK_MASTERS");
    if (!cfg.masters || !*cfg.masters) {
        fprintf(stderr, "usage: glib HOST:PORT,HOST:PORT,... (or set REDLOCK_MASTERS)\n");
        return 64; /* EX_USAGE */
    }
    signal(SIGPIPE, SIG_IGN); /* the client writes on this thread */
    redlock_client *c = NULL;
    redlock_error err;
    /* NULL: the default main context, the one g_main_loop_new(NULL, ...) runs. */
    if (redlock_client_new_glib(&cfg, NULL, &c, &err) != 0 ||
        redlock_acquire_async(c, "report", 6, 10000 /* ttl, ms */, on_locked, NULL, &err) != 0) {
        fprintf(stderr, "glib: %s\n", err.msg);
        redlock_client_free(c);
        return 1;
    }
    loop = g_main_loop_new(NULL, FALSE);
    g_main_loop_run(loop); /* until a callback quits it */
    g_main_loop_unref(loop);
    return status;
}
