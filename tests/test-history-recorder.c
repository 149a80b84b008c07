/* test-history-recorder.c - the recorder writes what the checker reads,
 * whole, from any number of threads and processes.
 *
 * Records made from real lock objects (helpers/history.c) carry the
 * lock's token, resource, votes and validity window, and the checker
 * accepts them. Each line is appended with one write(2) on an O_APPEND
 * descriptor, so lines from concurrent threads and forked processes never
 * tear.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "core.h"
#include "histcase.h"

TestSuite(history, .init = tc_hc_init, .fini = tc_hc_fini, .timeout = 60);

/* ---- the recorder ------------------------------------------------------------------------- */

/* Records made from real lock objects carry the lock's token, resource and
 * validity window, and the checker accepts them. */
Test(history, records_from_redlock_objects_are_accepted)
{
    char p[512];
    tc_hist *h = tc_hc_new(p, sizeof(p));
    redlock_lock *l = NULL;
    const redlock_outcome *o = NULL; /* what an outcome adds: test-acquire.c, on real masters */
    FILE *f;
    char line[4096];

    cr_assert(eq(int, redlock_lock_new("res", 3, "0123456789abcdef0123456789abcdef", &l, NULL), 0));
    uint64_t t = tc_now_us();
    cr_assert(eq(int, tc_hist_acquire(h, "a", "res", 3, 1000, t, 0, l, o), 0));
    cr_assert(eq(int, tc_hist_extend(h, "a", 1000, t, REDLOCK_ENOTHELD, l, o), 0));
    cr_assert(eq(int, tc_hist_use(h, "a", t, l, 1), 0));
    cr_assert(eq(int, tc_hist_release(h, "a", t, 0, l, o), 0));
    cr_assert(eq(int, tc_hist_acquire(h, "b", "res", 3, 1000, t, REDLOCK_ECONFLICT, NULL, NULL),
                 0));
    cr_assert(eq(int, tc_hist_fault(h, "sigstop", 3, 0, t), 0));
    cr_assert(eq(int, tc_hist_key(h, 1, "res", 3, "0123456789abcdef0123456789abcdef", 500), 0));
    tc_hist_close(h);
    redlock_lock_free(l);

    f = fopen(p, "r");
    cr_assert(f != NULL);
    cr_assert(fgets(line, sizeof(line), f) != NULL);
    fclose(f);
    cr_expect(strstr(line, "\"op\":\"acquire\",\"client\":\"a\",\"res\":\"res\"") != NULL, "%s",
              line);
    cr_expect(strstr(line, "\"token\":\"0123456789abcdef0123456789abcdef\"") != NULL, "%s", line);
    cr_expect(strstr(line, "\"oks\":0,\"n_ok\":0") != NULL, "%s", line);
    cr_expect(strstr(line, "\"fence\":0") != NULL, "%s", line);
    cr_expect(strstr(line, "\"vend\":") != NULL, "%s", line);
    tc_hc_expect_clean(p, NULL, NULL);
    cr_expect(strstr(tc_hc_out, "checked 5 ops, 1 holder, 0 violations") != NULL, "%s", tc_hc_out);
}

#define WRITERS 4
#define LINES 300

typedef struct writer {
    tc_hist *h;
    int id;
    int failed;
} writer;

/* Long lines (a 1000-byte resource of odd bytes) make torn writes likely if
 * the recorder ever split one. */
static void *write_lines(void *arg)
{
    writer *w = arg;
    char res[1000], client[32];

    for (size_t i = 0; i < sizeof(res); i++)
        res[i] = (char)(i * 7 + (size_t)w->id);
    snprintf(client, sizeof(client), "p%d-w%d", (int)getpid(), w->id);
    for (int i = 0; i < LINES; i++) {
        tc_hist_rec r = { .client = client,
                          .op = TC_HIST_ACQUIRE,
                          .res = res,
                          .res_len = sizeof(res),
                          .invoke_us = tc_now_us(),
                          .rc = REDLOCK_ECONFLICT,
                          .ttl_ms = 1000,
                          .master = -1 };
        if (tc_hist_write(w->h, &r) != 0)
            w->failed++;
    }
    return NULL;
}

static int write_from_threads(tc_hist *h)
{
    pthread_t th[WRITERS];
    writer w[WRITERS];
    int failed = 0;

    for (int i = 0; i < WRITERS; i++) {
        w[i] = (writer){ .h = h, .id = i };
        pthread_create(&th[i], NULL, write_lines, &w[i]);
    }
    for (int i = 0; i < WRITERS; i++) {
        pthread_join(th[i], NULL);
        failed += w[i].failed;
    }
    return failed;
}

Test(history, lines_stay_whole_across_threads_and_processes)
{
    char p[512], want[128];
    tc_hist *h = tc_hc_new(p, sizeof(p));
    pid_t kids[2];

    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        cr_assert(kids[k] >= 0, "fork: %s", strerror(errno));
        if (kids[k] == 0) {
            /* the child shares the parent's O_APPEND descriptor */
            _exit(write_from_threads(h) ? 1 : 0);
        }
    }
    cr_expect(eq(int, write_from_threads(h), 0));
    for (int k = 0; k < 2; k++) {
        int st;

        cr_assert(waitpid(kids[k], &st, 0) == kids[k]);
        int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;

        cr_expect(ok, "writer process %d failed", k);
    }
    tc_hist_close(h);
    tc_hc_expect_clean(p, NULL, NULL);
    snprintf(want, sizeof(want), "checked %d ops, 0 holders, 0 violations", 3 * WRITERS * LINES);
    cr_expect(strstr(tc_hc_out, want) != NULL, "wanted \"%s\":\n%.2000s", want, tc_hc_out);
}
