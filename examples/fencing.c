/* fencing.c - fencing tokens: the protected store rejects a holder whose lease ran out.
 *
 * A lease can end while its holder is not looking: a GC pause, a stopped VM,
 * a slow disk. Client A takes a fenced lock with a short ttl, then stalls
 * past it; client B takes the lock (a larger fencing token) and writes; A
 * wakes and writes with its old token. Checking its own validity first would
 * not save A: the stall can fall between that check and the write. The store
 * must check, so it keeps the newest token it has seen and rejects older
 * ones. Here the store is a toy in memory; in a database it is a fence
 * column and `UPDATE ... WHERE fence <= $token`.
 *
 *   cc fencing.c $(pkg-config --cflags --libs redlock) -o fencing
 *   ./fencing 127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003,127.0.0.1:7004
 */
#include <redlock.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The protected resource: accepts a write only with a token at least as new
 * as every token it has accepted before. */
struct store {
    uint64_t newest_fence;
    char value[32];
};

static int store_write(struct store *s, uint64_t fence, const char *value)
{
    if (fence < s->newest_fence)
        return -1; /* a stale holder: refuse */
    s->newest_fence = fence;
    snprintf(s->value, sizeof s->value, "%s", value);
    return 0;
}

static redlock_client *client(const char *masters, uint32_t retries)
{
    redlock_config cfg;
    redlock_config_init(&cfg);
    cfg.masters = masters;
    cfg.retry_count = retries; /* B waits for A's lease to end */
    cfg.retry_delay_ms = 50;
    redlock_client *c = NULL;
    redlock_error err;
    if (redlock_client_new(&cfg, NULL, &c, &err) != 0)
        fprintf(stderr, "fencing: %s\n", err.msg);
    return c;
}

static redlock_lock *take(redlock_client *c, const char *who, uint32_t ttl_ms)
{
    redlock_resource account = { "account:17", strlen("account:17") };
    redlock_lock *lock = NULL;
    redlock_error err;
    if (redlock_acquire_set(c, &account, 1, ttl_ms, REDLOCK_FENCE, &lock, NULL, &err) != 0)
        fprintf(stderr, "fencing: %s: %s\n", who, err.msg);
    else
        printf("%s holds the lock with fencing token %" PRIu64 "\n", who, redlock_lock_fence(lock));
    return lock;
}

int main(int argc, char **argv)
{
    const char *masters = argc > 1 ? argv[1]
                                   : "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002,"
                                     "127.0.0.1:7003,127.0.0.1:7004";
    struct store store = { 0 };
    int ok = 0;
    redlock_client *ca = client(masters, 0), *cb = client(masters, 100);
    redlock_lock *a = NULL, *b = NULL;
    if (!ca || !cb || !(a = take(ca, "A", 300)))
        goto out;

    /* A stalls here. Nothing runs on A's behalf while B waits for the
     * lock, which B gets once A's 300 ms lease has run out. */
    printf("A stalls past its lease\n");
    if (!(b = take(cb, "B", 10000)))
        goto out;
    int b_ok = store_write(&store, redlock_lock_fence(b), "B's balance") == 0;
    printf("B writes with token %" PRIu64 ": %s\n", redlock_lock_fence(b),
           b_ok ? "accepted" : "rejected");

    printf("A wakes (its validity: %lld ms) and writes with token %" PRIu64 "\n",
           (long long)redlock_lock_validity_ms(a), redlock_lock_fence(a));
    int a_ok = store_write(&store, redlock_lock_fence(a), "A's balance") == 0;
    printf("A's write: %s (the store has seen token %" PRIu64 "); the store holds %s\n",
           a_ok ? "accepted" : "rejected", store.newest_fence, store.value);
    ok = b_ok && !a_ok && redlock_lock_fence(b) > redlock_lock_fence(a);

    redlock_error err;
    if (redlock_release(cb, b, NULL, &err) != 0)
        fprintf(stderr, "fencing: B: release: %s\n", err.msg);
out:
    redlock_lock_free(a); /* A's lease lapsed: nothing to release */
    redlock_lock_free(b);
    redlock_client_free(ca);
    redlock_client_free(cb);
    return ok ? 0 : 1;
}
