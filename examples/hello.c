/* hello.c - take and release a lock on five masters with the blocking API.
 *
 *   cc hello.c $(pkg-config --cflags --libs redlock) -o hello
 *   ./hello 127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003,127.0.0.1:7004
 */
#include <redlock.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    redlock_config cfg;
    redlock_config_init(&cfg);
    cfg.masters = argc > 1 ? argv[1] : "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002,"
                                       "127.0.0.1:7003,127.0.0.1:7004";
    redlock_client *c;
    redlock_error err;
    if (redlock_client_new(&cfg, NULL, &c, &err) != 0) {
        fprintf(stderr, "hello: %s\n", err.msg);
        return 1;
    }
    redlock_lock *lock;
    redlock_outcome out;
    int rc = redlock_acquire(c, "hello", strlen("hello"), 10000, &lock, &out, &err);
    if (rc != 0) {
        fprintf(stderr, "hello: %s\n", err.msg);   /* e.g. held by another client */
        redlock_client_free(c);
        return rc == REDLOCK_ECONFLICT ? 2 : 1;
    }
    printf("locked on %u of %u masters, token %s, valid for %lld ms\n", out.n_ok,
           out.n_masters, redlock_lock_token(lock), (long long)redlock_lock_validity_ms(lock));
    /* ... the critical section: finish well within the validity ... */
    rc = redlock_release(c, lock, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "hello: release: %s\n", err.msg);
    else
        printf("released\n");
    redlock_lock_free(lock);
    redlock_client_free(c);
    return rc == 0 ? 0 : 1;
}
