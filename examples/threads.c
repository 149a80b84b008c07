/* threads.c - many threads, one blocking client, one resource.
 *
 * Each thread takes the lock, increments a shared counter the slow way
 * (read, pause, write) and releases. Without the lock the threads would
 * overwrite each other's increments; with it the counter ends exact. The
 * client is shared: its calls are thread-safe and pipelined over one
 * connection per master.
 *
 *   cc threads.c $(pkg-config --cflags --libs redlock) -pthread -o threads
 *   ./threads 127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003,127.0.0.1:7004
 */
#include <redlock.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define THREADS 4
#define ROUNDS 10

static redlock_client *client;
static long counter;        /* protected by the Redlock lock, nothing else */
static atomic_int inside;   /* threads in the critical section: must stay <= 1 */
static atomic_int overlaps; /* times a thread found another one inside */
static atomic_int failures;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        redlock_lock *lock;
        redlock_error err;
        /* retry_count in main() makes this wait while another thread holds it */
        if (redlock_acquire(client, "counter", strlen("counter"), 5000, &lock, NULL, &err) != 0) {
            fprintf(stderr, "threads: acquire: %s\n", err.msg);
            atomic_fetch_add(&failures, 1);
            continue;
        }
        if (atomic_fetch_add(&inside, 1) != 0)
            atomic_fetch_add(&overlaps, 1);
        long seen = counter;
        /* The pause is the point: it gives a second thread, were it let in,
         * time to read the same value. */
        nanosleep(&(struct timespec){ .tv_nsec = 2 * 1000 * 1000 }, NULL);
        counter = seen + 1;
        atomic_fetch_sub(&inside, 1);
        if (redlock_release(client, lock, NULL, &err) != 0) {
            fprintf(stderr, "threads: release: %s\n", err.msg);
            atomic_fetch_add(&failures, 1);
        }
        redlock_lock_free(lock);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    redlock_config cfg;
    redlock_config_init(&cfg);
    cfg.masters = argc > 1 ? argv[1]
                           : "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002,"
                             "127.0.0.1:7003,127.0.0.1:7004";
    /* Wait for the lock rather than fail: a release wakes the waiters at
     * once (pub/sub), the retry delay is only the fallback. */
    cfg.retry_count = 1000;
    cfg.retry_delay_ms = 50;
    cfg.retry_jitter_ms = 50;
    redlock_error err;
    if (redlock_client_new(&cfg, NULL, &client, &err) != 0) {
        fprintf(stderr, "threads: %s\n", err.msg);
        return 1;
    }
    pthread_t t[THREADS];
    int started = 0;
    for (; started < THREADS; started++)
        if (pthread_create(&t[started], NULL, worker, NULL) != 0)
            break;
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    redlock_client_free(client);

    long expected = (long)started * ROUNDS;
    printf("%d threads x %d rounds: counter = %ld (expected %ld), %d overlaps, %d failures\n",
           started, ROUNDS, counter, expected, atomic_load(&overlaps), atomic_load(&failures));
    return counter == expected && started == THREADS && atomic_load(&overlaps) == 0 &&
                   atomic_load(&failures) == 0
               ? 0
               : 1;
}
