/* loop-cases.h - what loop-cases.c needs to know of the loop it tests.
 *
 * loop-cases.c holds the tests of a redlock_loop adapter, written once:
 * its hooks alone, then redlock clients on it. Each test-loop-<name>.c
 * links it and defines tc_loop_driver: how to make its loop, run one pass
 * of it, count what the adapter has on it, and close it.
 */
#ifndef TC_LOOP_CASES_H
#define TC_LOOP_CASES_H

#include <redlock.h>

struct tc_loop_driver {
    const char *name; /* "libuv", "glib" */
    /* A fresh loop of the test's own; fails the test if it cannot. */
    void *(*open)(void);
    /* The adapter's table on @loop (redlock_libuv_loop(), ...). */
    int (*fill)(redlock_loop *l, void *loop);
    /* The adapter's redlock_client_new_<name>() on @loop. */
    int (*client_new)(const redlock_config *cfg, void *loop, redlock_client **ret,
                      redlock_error *reterr);
    /* One pass of @loop, blocking at most TC_POLL_MS (await.h). */
    void (*pass)(void *loop);
    /* Watches and timers on @loop now (handles not closed, sources
     * attached), the driver's own not counted. */
    int (*handles)(void *loop);
    /* One more pass, then close @loop and free it. Return: NULL if nothing
     * was left on it, else what was (static storage). */
    const char *(*close)(void *loop);
};

/* Defined by the test program that links loop-cases.c. */
extern const struct tc_loop_driver tc_loop_driver;

#endif
