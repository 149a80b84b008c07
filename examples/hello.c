/* hello.c - take a lock on five masters, work, release. Build and run:
 *   cc hello.c $(pkg-config --cflags --libs redlock) && ./a.out HOST:PORT,HOST:PORT,...
 * (or set REDLOCK_MASTERS, as redlock-cli reads it) */
#include <redlock.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    redlock_config cfg;
    redlock_config_init(&cfg);
    cfg.masters = argc > 1 ? argv[1] : getenv("REDLOCK_MASTERS");
    if (!cfg.masters || !*cfg.masters) {
        fprintf(stderr, "usage: hello HOST:PORT,HOST:PORT,... (or set REDLOCK_MASTERS; "
                        "cluster-up.sh start prints a list)\n");
        return 64; /* EX_USAGE */
    }
    redlock_client *c = NULL;
    redlock_lock *lock;
    redlock_error err;
    if (redlock_client_new(&cfg, NULL, &c, &err) != 0 ||
        redlock_acquire(c, "report", 6, 10000 /* ttl, ms */, &lock, NULL, &err) != 0) {
        fprintf(stderr, "hello: %s\n", err.msg); /* e.g. held by another client: retry later */
        redlock_client_free(c);
        return 1;
    }
    printf("locked (quorum: %zu of %zu masters), valid for %lld ms\n", redlock_client_quorum(c),
           redlock_client_masters(c), (long long)redlock_lock_validity_ms(lock));
    /* ... the work: finish well within the validity ... */
    int rc = redlock_release(c, lock, NULL, &err);
    if (rc == 0)
        printf("released\n");
    else
        fprintf(stderr, "hello: release: %s\n", err.msg); /* it lapses after its ttl anyway */
    redlock_lock_free(lock);
    redlock_client_free(c);
    return rc == 0 ? 0 : 1;
}
