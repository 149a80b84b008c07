/* watchdog.c - async API on your own libevent loop; work longer than the ttl.
 *
 * Takes a lock with a 600 ms ttl, starts the watchdog, and "works" for
 * 2 seconds (a timer standing in for real work on the same loop). The
 * watchdog extends the lock whenever a third of the ttl is left, so the lock
 * is still valid when the work ends, three ttls later. Then it releases.
 *
 *   cc watchdog.c $(pkg-config --cflags --libs redlock libevent) -o watchdog
 *   ./watchdog 127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003,127.0.0.1:7004
 */
#include <redlock.h>

#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define TTL_MS 600
#define WORK_MS 2000
#define TICK_MS 50

struct job {
    struct event_base *base;
    redlock_client *client;
    struct event *tick; /* the "work": one step every TICK_MS */
    redlock_lock *lock;
    int ticks;             /* steps done */
    int extensions;        /* times the validity went up: the watchdog extended */
    int64_t last_validity; /* ms */
    int lost;              /* the watchdog gave up */
    int status;            /* exit status */
};

static void on_released(redlock_client *c, int status, redlock_lock *lock,
                        const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct job *job = arg;
    (void)c, (void)out;
    if (status != 0) {
        fprintf(stderr, "watchdog: release: %s\n", err->msg);
        job->status = 1;
    } else {
        printf("released\n");
    }
    redlock_lock_free(lock);
    job->lock = NULL;
    event_base_loopbreak(job->base);
}

/* Work over (or abandoned): release, which also stops the watchdog. */
static void finish(struct job *job)
{
    redlock_error err;
    event_del(job->tick);
    if (redlock_release_async(job->client, job->lock, on_released, job, &err) != 0) {
        fprintf(stderr, "watchdog: release: %s\n", err.msg);
        job->status = 1;
        redlock_lock_free(job->lock);
        job->lock = NULL;
        event_base_loopbreak(job->base);
    }
}

/* Runs only if the watchdog stops on its own (a failed extension, a limit):
 * the lock is no longer safe to rely on past its current validity. */
static void on_lost(redlock_client *c, int status, redlock_lock *lock, const redlock_error *err,
                    void *arg)
{
    struct job *job = arg;
    (void)c, (void)lock, (void)status;
    fprintf(stderr, "watchdog: lock lost: %s\n", err->msg);
    job->lost = 1;
}

/* One step of work. Real work would check the validity the same way before
 * each step that touches the protected resource. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct job *job = arg;
    (void)fd, (void)what;
    int64_t v = redlock_lock_validity_ms(job->lock);
    if (v > job->last_validity)
        job->extensions++;
    job->last_validity = v;
    if (job->lost || v <= 0) {
        fprintf(stderr, "watchdog: lock gone after %d ms of work: stopping\n",
                job->ticks * TICK_MS);
        job->status = 1;
        finish(job);
        return;
    }
    if (++job->ticks * TICK_MS < WORK_MS)
        return;
    printf("worked %d ms with a %d ms ttl: the watchdog extended the lock %d times, "
           "%lld ms of validity left\n",
           WORK_MS, TTL_MS, job->extensions, (long long)v);
    finish(job);
}

static void on_acquired(redlock_client *c, int status, redlock_lock *lock,
                        const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct job *job = arg;
    (void)out;
    if (status != 0) { /* runs exactly once, from the loop */
        fprintf(stderr, "watchdog: %s\n", err->msg);
        job->status = 1;
        event_base_loopbreak(job->base);
        return;
    }
    job->lock = lock; /* ours now: release, then free */
    job->last_validity = redlock_lock_validity_ms(lock);
    printf("locked, valid for %lld ms\n", (long long)job->last_validity);
    redlock_error werr;
    if (redlock_watchdog_start(c, lock, on_lost, job, &werr) != 0) {
        fprintf(stderr, "watchdog: %s\n", werr.msg);
        job->status = 1;
        finish(job);
        return;
    }
    event_add(job->tick, &(struct timeval){ .tv_usec = TICK_MS * 1000 });
}

int main(int argc, char **argv)
{
    /* An async client writes on this thread: a master dropping the
     * connection must not kill the process (redlock.h, client_new). */
    signal(SIGPIPE, SIG_IGN);
    struct job job = { .base = event_base_new() };
    if (!job.base)
        return 1;
    job.tick = event_new(job.base, -1, EV_PERSIST, on_tick, &job);

    redlock_config cfg;
    redlock_config_init(&cfg);
    cfg.masters = argc > 1 ? argv[1]
                           : "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002,"
                             "127.0.0.1:7003,127.0.0.1:7004";
    redlock_error err;
    if (!job.tick || redlock_client_new(&cfg, job.base, &job.client, &err) != 0 ||
        redlock_acquire_async(job.client, "report", strlen("report"), TTL_MS, on_acquired, &job,
                              &err) != 0) {
        fprintf(stderr, "watchdog: %s\n", job.tick ? err.msg : "out of memory");
        job.status = 1;
    } else {
        event_base_dispatch(job.base);
    }
    redlock_client_free(job.client);
    if (job.tick)
        event_free(job.tick);
    event_base_free(job.base);
    return job.status;
}
