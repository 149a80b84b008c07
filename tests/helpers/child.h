/* child.h - a lock holder in a forked process, and the pipe it talks on.
 *
 * Tests about clients that stop or die while holding a lock fork the
 * holder: a signal must reach it and not the test. The child reports what
 * it did as lines on a pipe ("acquired TOKEN", "done ...", or "ERR why"),
 * and the test waits for each line, which is the event it acts on. The
 * child uses only the helpers that do not need criterion (history.h,
 * tc_client_try()); the suite's .fini kills a child left behind.
 */
#ifndef TC_CHILD_H
#define TC_CHILD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <redlock.h>

#include "history.h"

/* The running child (-1: none). */
extern pid_t tc_child_pid;

/*
 * tc_child_start() - Fork a child that runs @fn(@arg, fd) and _exit()s
 *
 * @fn writes its lines to fd (tc_child_tell()). Return: the parent's end of
 * the pipe, to read with tc_child_hear(). Fails the test if it cannot fork.
 */
int tc_child_start(void (*fn)(void *arg, int fd), void *arg);

/* In the child: one line to the parent (end it with \n); _exit(3) if the
 * parent is gone. */
__attribute__((format(printf, 2, 3))) void tc_child_tell(int fd, const char *fmt, ...);

/* In the child: say "ERR why" and _exit(1). */
__attribute__((noreturn, format(printf, 2, 3))) void tc_child_fail(int fd, const char *fmt, ...);

/* One line from the child (without the newline), waiting at most @ms. A
 * line starting "ERR " fails the test with the child's words, so does
 * silence or the child going away. */
void tc_child_hear(int fd, char *line, size_t size, int ms);

/* A blocking client for a holder and for whoever comes after it: a 250 ms
 * node timeout, @retries retries 20-30 ms apart, connected to every master.
 * NULL with the reason in @why (usable in the child). */
redlock_client *tc_child_client(unsigned retries, char *why, size_t size);

/* What a holder child is given: the history to write, the resource. */
struct tc_child_args {
    const char *hpath;
    const char *res;
};

/* What a holder child has once it holds the lock. */
struct tc_child_holder {
    tc_hist *h;        /* the history, opened again in the child */
    redlock_client *c; /* tc_child_client(5, ...) */
    redlock_lock *l;
    uint64_t invoke_us;   /* when the acquire began ... */
    uint64_t complete_us; /* ... and returned */
};

/* In the child: open the history, make a client, take @a->res for @ttl_ms
 * as "A", and record it. Any failure is tc_child_fail(). */
void tc_child_acquire(int fd, const struct tc_child_args *a, uint32_t ttl_ms,
                      struct tc_child_holder *ret);

/* SIGKILL the child, if any, and reap it: for .fini. */
void tc_child_reap(void);

#endif
