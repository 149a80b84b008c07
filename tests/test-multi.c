/* test-multi.c - locks on sets of resources: all or nothing, on each master
 * and overall; overlapping sets never held at once; release and extend act
 * on the whole set; a master down does not change the rules.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

TestSuite(multi, .fini = tc_heal, .timeout = 60);

static redlock_client *client(void)
{
    redlock_config cfg;
    tc_config(&cfg); /* the tests' node timeout: 50 ms is too tight under ASan on busy cores */
    cfg.retry_count = 0;
    redlock_client *c;
    redlock_error err;
    cr_assert(eq(int, redlock_client_new(&cfg, NULL, &c, &err), 0), "%s", err.msg);
    return c;
}

static int exists_on(int master, const char *name)
{
    redisReply *r = tc_cmd(master, "EXISTS %b", name, strlen(name));
    int v = (int)r->integer;
    freeReplyObject(r);
    return v;
}

Test(multi, set_is_taken_whole_and_released_whole)
{
    redlock_client *c = client();
    char a[128], b[128], d[128];
    tc_resource(a, sizeof(a), "a");
    tc_resource(b, sizeof(b), "b");
    tc_resource(d, sizeof(d), "d");
    redlock_resource set[3] = { { a, strlen(a) }, { b, strlen(b) }, { d, strlen(d) } };
    redlock_lock *l;
    redlock_error err;
    cr_assert(eq(int, redlock_acquire_set(c, set, 3, 10000, 0, &l, NULL, &err), 0), "%s", err.msg);
    cr_assert(eq(sz, redlock_lock_count(l), 3));
    /* The acquire returned at a majority: wait for the others' SETs before
     * looking (one could otherwise run between two EXISTS). */
    tc_barrier(c);
    for (int m = 0; m < tc_n(); m++)
        cr_assert(eq(int, exists_on(m, a) + exists_on(m, b) + exists_on(m, d),
                     exists_on(m, a) ? 3 : 0),
                  "master %d holds all three or none", m);
    /* any one member is now held */
    redlock_lock *l2;
    cr_assert(eq(int, redlock_acquire(c, b, strlen(b), 1000, &l2, NULL, &err), REDLOCK_ECONFLICT));
    cr_assert(eq(int, redlock_extend(c, l, 20000, NULL, &err), 0), "%s", err.msg);
    tc_barrier(c); /* master 0 may not have been in the extend's majority */
    redisReply *r = tc_cmd(0, "PTTL %b", d, strlen(d));
    cr_assert(gt(i64, r->integer, 10000), "extend covered the last member too");
    freeReplyObject(r);
    cr_assert(eq(int, redlock_release(c, l, NULL, &err), 0), "%s", err.msg);
    tc_barrier(c); /* so did the release */
    for (int m = 0; m < tc_n(); m++)
        cr_assert(eq(int, exists_on(m, a) + exists_on(m, b) + exists_on(m, d), 0));
    redlock_lock_free(l);
    redlock_client_free(c);
}

Test(multi, one_member_held_means_no_member_is_taken)
{
    redlock_client *c = client();
    char a[128], b[128];
    tc_resource(a, sizeof(a), "held-a");
    tc_resource(b, sizeof(b), "held-b");
    redlock_lock *lb;
    cr_assert(eq(int, redlock_acquire(c, b, strlen(b), 10000, &lb, NULL, NULL), 0));
    redlock_resource set[2] = { { a, strlen(a) }, { b, strlen(b) } };
    redlock_lock *l;
    redlock_error err;
    cr_assert(eq(int, redlock_acquire_set(c, set, 2, 10000, 0, &l, NULL, &err), REDLOCK_ECONFLICT),
              "%s", err.msg);
    for (int m = 0; m < tc_n(); m++)
        cr_assert(eq(int, exists_on(m, a), 0), "master %d: free member untouched", m);
    redlock_release(c, lb, NULL, NULL);
    redlock_lock_free(lb);
    redlock_client_free(c);
}

Test(multi, bad_sets_are_refused_with_a_clear_message)
{
    redlock_client *c = client();
    redlock_resource dup[2] = { { "x", 1 }, { "x", 1 } };
    redlock_lock *l;
    redlock_error err;
    cr_assert(eq(int, redlock_acquire_set(c, dup, 2, 1000, 0, &l, NULL, &err), REDLOCK_EINVAL));
    cr_assert(strstr(err.msg, "repeats") != NULL, "%s", err.msg);
    cr_assert(eq(int, redlock_acquire_set(c, dup, 0, 1000, 0, &l, NULL, &err), REDLOCK_EINVAL));
    redlock_resource big[REDLOCK_SET_MAX + 1];
    cr_assert(eq(int, redlock_acquire_set(c, big, REDLOCK_SET_MAX + 1, 1000, 0, &l, NULL, &err),
                 REDLOCK_EINVAL));
    cr_assert(eq(int, redlock_acquire_set(c, dup, 1, 1000, 0x80, &l, NULL, &err), REDLOCK_EINVAL),
              "unknown flag");
    redlock_client_free(c);
}

/* Two clients race for overlapping sets {x, y} and {y, z}, many times, with
 * a master down: never both. */
static char rx[128], ry[128], rz[128];
static volatile int both;
static pthread_barrier_t bar;

static void *racer(void *arg)
{
    int which = (int)(long)arg;
    redlock_client *c = client();
    redlock_resource s0[2] = { { rx, strlen(rx) }, { ry, strlen(ry) } };
    redlock_resource s1[2] = { { ry, strlen(ry) }, { rz, strlen(rz) } };
    for (int i = 0; i < 200; i++) {
        pthread_barrier_wait(&bar);
        redlock_lock *l = NULL;
        int rc = redlock_acquire_set(c, which ? s1 : s0, 2, 5000, 0, &l, NULL, NULL);
        if (rc == 0)
            __atomic_add_fetch(&both, 1, __ATOMIC_SEQ_CST);
        pthread_barrier_wait(&bar);
        if (which == 0) {
            cr_assert(le(int, both, 1), "round %d: both sets held at once", i);
            both = 0;
        }
        pthread_barrier_wait(&bar);
        if (l) {
            redlock_release(c, l, NULL, NULL);
            redlock_lock_free(l);
        }
    }
    redlock_client_free(c);
    return NULL;
}

Test(multi, overlapping_sets_are_never_both_held)
{
    tc_resource(rx, sizeof(rx), "x");
    tc_resource(ry, sizeof(ry), "y");
    tc_resource(rz, sizeof(rz), "z");
    tc_kill(4);
    pthread_barrier_init(&bar, NULL, 2);
    pthread_t t0, t1;
    pthread_create(&t0, NULL, racer, (void *)0L);
    pthread_create(&t1, NULL, racer, (void *)1L);
    pthread_join(t0, NULL);
    pthread_join(t1, NULL);
    pthread_barrier_destroy(&bar);
}
