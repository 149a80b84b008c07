/* wait.h - waiting for a lock without polling: wake-ups from releases. */
#ifndef REDLOCK_WAIT_H
#define REDLOCK_WAIT_H

#include "types.h"

/* One waiting acquire, embedded in it. @wake runs when a release may have
 * freed the resource; it only ever starts an ordinary attempt. */
typedef struct rl_waiter {
    struct rl_waiter *prev, *next;   /* the client's waiters, oldest first */
    void (*wake)(struct rl_waiter *w);
    const rl_keyset *keys;
    bool joined;
} rl_waiter;

/* Listen for releases of @keys (idempotent). */
void rl_wait_join(redlock_client *c, rl_waiter *w, const rl_keyset *keys);
/* Stop listening (a no-op if not joined). */
void rl_wait_leave(redlock_client *c, rl_waiter *w);
/* A message arrived on a node's subscriber connection (the node env hook). */
void rl_wait_on_message(rl_node *n, const char *ch, size_t clen, const char *msg, size_t mlen,
                        void *arg);
/* Client free. */
void rl_wait_close(redlock_client *c);

#endif
