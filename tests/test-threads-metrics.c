/* test-threads-metrics.c - redlock_metrics_write() from a service thread
 * while a blocking client's I/O thread counts (issue 32): no data race
 * (suite "threads" runs under ThreadSanitizer in tools/run-tests.sh), every
 * scrape is whole text, and the counters add up once the workers are done.
 *
 * A plain program printing TAP, as test-threads.c is, and for its reason:
 * criterion 2.4.1's runner cannot start under TSan (Snaipe/Criterion#274).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

#define WORKERS 4
#define CYCLES 20

static int failures;

#define CHECK(cond, ...)                                       \
    do {                                                       \
        if (!(cond)) {                                         \
            failures++;                                        \
            printf("# test-threads-metrics.c:%d: ", __LINE__); \
            printf(__VA_ARGS__);                               \
            printf("\n");                                      \
        }                                                      \
    } while (0)

struct worker {
    redlock_client *c;
    char res[128];
    int failed; /* calls that failed but for a late quorum */
    int acquired, extended, released;
};

/* A call that failed: the memory guard's late quorum (ETIMEOUT: a round
 * past 500 ms, which a loaded machine under ASan can take) is a verdict the
 * metrics must count like any other; anything else fails the test. */
static int outcome(struct worker *w, int rc)
{
    if (rc != 0 && rc != REDLOCK_ETIMEOUT)
        w->failed++;
    return rc == 0;
}

static atomic_int workers_done;

static void *work(void *arg)
{
    struct worker *w = arg;

    for (int i = 0; i < CYCLES; i++) {
        redlock_lock *l = NULL;
        redlock_error e;

        if (!outcome(w, redlock_acquire(w->c, w->res, strlen(w->res), 30000, &l, NULL, &e)))
            continue;
        w->acquired++;
        w->extended += outcome(w, redlock_extend(w->c, l, 30000, NULL, &e));
        w->released += outcome(w, redlock_release(w->c, l, NULL, &e));
        redlock_lock_free(l);
    }
    atomic_fetch_add(&workers_done, 1);
    return NULL;
}

static char text[64 * 1024];

static void scrapes_race_free_beside_the_io_thread(void)
{
    redlock_client *c = tc_client(NULL, -1);
    pthread_t th[WORKERS];
    struct worker w[WORKERS];
    int scrapes = 0;

    for (int i = 0; i < WORKERS; i++) {
        w[i].c = c;
        w[i].failed = w[i].acquired = w[i].extended = w[i].released = 0;
        tc_resource(w[i].res, sizeof(w[i].res), "metrics");
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    /* This thread is the service's: it scrapes while the workers run. */
    while (atomic_load(&workers_done) < WORKERS || scrapes == 0) {
        size_t len = 0;
        redlock_error e;
        int rc = redlock_metrics_write(c, text, sizeof(text), &len, &e);

        CHECK(rc == 0, "scrape %d: %s", scrapes, e.msg);
        CHECK(len > 0 && text[len - 1] == '\n' && strlen(text) == len, "whole text");
        scrapes++;
    }
    long acquired = 0, extended = 0, released = 0;
    for (int i = 0; i < WORKERS; i++) {
        pthread_join(th[i], NULL);
        CHECK(w[i].failed == 0, "worker %d: %d calls failed", i, w[i].failed);
        acquired += w[i].acquired;
        extended += w[i].extended;
        released += w[i].released;
    }
    CHECK(acquired >= WORKERS * CYCLES / 2, "only %ld of %d acquires succeeded", acquired,
          WORKERS * CYCLES);
    size_t len = 0;
    CHECK(redlock_metrics_write(c, text, sizeof(text), &len, NULL) == 0, "last scrape");
    CHECK(tc_metric(text, "redlock_acquires_total{status=\"ok\"}") == acquired,
          "acquires ok (%ld): %s", acquired, text);
    CHECK(tc_metric(text, "redlock_extends_total{status=\"ok\"}") == extended, "extends ok (%ld)",
          extended);
    CHECK(tc_metric(text, "redlock_releases_total{status=\"ok\"}") == released, "releases ok (%ld)",
          released);
    CHECK(tc_metric(text, "redlock_lock_hold_seconds_count") == acquired, "holds");
    CHECK(tc_metric(text, "redlock_acquire_wait_seconds_count") == WORKERS * CYCLES, "waits");
    printf("# %d scrapes beside %d operations\n", scrapes, 3 * WORKERS * CYCLES);
    redlock_client_free(c);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("TAP version 13\n1..1\n");
    scrapes_race_free_beside_the_io_thread();
    printf("%s 1 - threads_metrics::scrapes_race_free_beside_the_io_thread\n",
           failures ? "not ok" : "ok");
    return failures ? 1 : 0;
}
