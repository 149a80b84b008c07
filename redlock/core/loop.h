/* loop.h - a blocking client's I/O thread, and running code on a client's loop. */
#ifndef REDLOCK_LOOP_H
#define REDLOCK_LOOP_H

#include "core/types.h"

#include <pthread.h>

typedef struct rl_call rl_call;
/* Start @call's operation on the loop's thread; 0 means its callback will
 * end the call (rl_call_done), else the call ends with that code. */
typedef int rl_call_start(redlock_client *c, rl_call *call, redlock_error *e);
typedef void rl_loop_fn(redlock_client *c, void *arg);

/* One blocking call, on its caller's stack: an operation to start there,
 * or a function to run there. */
struct rl_call {
    rl_call *next;
    rl_call_start *start;
    rl_loop_fn *fn;
    void *fn_arg;
    bool posted;    /* nobody waits: freed after it ran */
    uint32_t state; /* RL_CALL_*: a futex word (loop.c) */
    int status;
    redlock_outcome *out; /* optional: the caller's */
    redlock_error *err;   /* optional: the caller's */
};

int rl_loop_start(redlock_client *c, redlock_error *e);
/* Stop the I/O thread: queued and in-flight calls complete (ESHUTDOWN or
 * their outcome), c->shutdown runs on the I/O thread, then it exits. */
void rl_loop_stop(redlock_client *c);

/* Hand @call to the I/O thread and sleep until it is done; its status. */
int rl_loop_submit(redlock_client *c, rl_call *call);
/* On the I/O thread: the call's operation ended. */
void rl_call_done(redlock_client *c, rl_call *call, int status, const redlock_outcome *out,
                  const redlock_error *err);

/* Run @fn on @c's loop thread and wait until it returned (async clients:
 * right here). 0, or REDLOCK_ESHUTDOWN / ESYS (it did not run). */
int rl_loop_call(redlock_client *c, rl_loop_fn *fn, void *arg);
/* Run @fn on @c's loop thread soon, without waiting (async clients: right
 * here). From any thread. False when it will never run: the client is
 * being freed (its I/O thread takes no more work), or no memory; the
 * caller then undoes what it handed over with @arg. */
bool rl_loop_post(redlock_client *c, rl_loop_fn *fn, void *arg);

#endif
