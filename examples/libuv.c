/* libuv.c - take a lock on five masters from a libuv loop, release it. Build and run:
 *   cc libuv.c $(pkg-config --cflags --libs redlock libuv) && ./a.out HOST:PORT,HOST:PORT,...
 * (or set REDLOCK_MASTERS). The client's hooks are <redlock/libuv.h>'s: one
 * uv_poll_t per connection, uv timers for the timeouts. */
#include <redlock/libuv.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static int status = 1;

static void on_released(redlock_client *c, int rc, redlock_lock *lock, const redlock_outcome *out,
                        const redlock_error *err, void *arg)
{
    (void)out, (void)arg;
    if (rc == 0) {
        printf("released\n");
        status = 0;
    } else {
        fprintf(stderr, "libuv: release: %s\n", err->msg); /* it lapses after its ttl anyway */
    }
    redlock_lock_free(lock);
    redlock_client_free(c); /* from its own callback: done when this returns */
}

static void on_locked(redlock_client *c, int rc, redlock_lock *lock, const redlock_outcome *out,
                      const redlock_error *err, void *arg)
{
    redlock_error e;
    (void)out, (void)arg;
    if (rc != 0) {
        fprintf(stderr, "libuv: %s\n", err->msg); /* e.g. held by another client: retry later */
        redlock_client_free(c);
        return;
    }
    printf("locked on a libuv loop, valid for %lld ms\n",
           (long long)redlock_lock_validity_ms(lock));
    /* ... the work, on this loop: finish well within the validity ... */
    if (redlock_release_async(c, lock, on_released, NULL, &e) != 0) {
        fprintf(stderr, "libuv: release: %s\n", e.msg);
        redlock_lock_free(lock);
        redlock_client_free(c);
    }
}

int main(int argc, char **argv)
{
    redlock_config cfg;
    redlock_config_init(&cfg);
    cfg.masters = argc > 1 ? argv[1] : getenv("REDLOCK_MASTERS");
    if (!cfg.masters || !*cfg.masters) {
        fprintf(stderr, "usage: libuv HOST:PORT,HOST:PORT,... (or set REDLOCK_MASTERS)\n");
        return 64; /* EX_USAGE */
    }
    signal(SIGPIPE, SIG_IGN); /* the client writes on this thread */
    uv_loop_t *loop = uv_default_loop();
    redlock_client *c = NULL;
    redlock_error err;
    if (redlock_client_new_libuv(&cfg, loop, &c, &err) != 0 ||
        redlock_acquire_async(c, "report", 6, 10000 /* ttl, ms */, on_locked, NULL, &err) != 0) {
        fprintf(stderr, "libuv: %s\n", err.msg);
        redlock_client_free(c);
        return 1;
    }
    /* Runs until the client is freed and its handles are closed: the
     * loop is then empty, and closes. */
    uv_run(loop, UV_RUN_DEFAULT);
    if (uv_loop_close(loop) != 0)
        fprintf(stderr, "libuv: handles left on the loop\n");
    return status;
}
