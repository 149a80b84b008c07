/* wait.h - waiting in turn: a client's waiters, their places in the masters'
 * queues, and the wake-ups that come when a release hands one the lock. */
#ifndef REDLOCK_WAIT_H
#define REDLOCK_WAIT_H

#include "core/types.h"

#define RL_WAITER_MAX 160 /* "hand|channel|id" */

/* One waiting acquire, embedded in it. @wake runs when a release handed it
 * the lock on a master; it only ever starts an ordinary attempt. */
typedef struct rl_waiter {
    struct rl_waiter *prev, *next; /* the client's waiters */
    void (*wake)(struct rl_waiter *w);
    char member[RL_WAITER_MAX]; /* its name in the masters' queues */
    uint64_t ticket;            /* when it started waiting: µs, real time */
    bool joined;
} rl_waiter;

/* Make @w a waiter: a name (its client's channel and an id), a ticket (the
 * time it started waiting, strictly increasing within the client), and how
 * long a reservation may wait for it (@hand_ms); subscribe the client's
 * channel on every master that has no subscription yet. */
void rl_wait_join(redlock_client *c, rl_waiter *w, uint32_t hand_ms);
/* The client's waiters, oldest first (w->next), or NULL. */
rl_waiter *rl_wait_first(const redlock_client *c);
/* The client's wake-up channel ("redlock:wake:<hex>"), or NULL if none of
 * its acquires ever waited. */
const char *rl_wait_channel(const redlock_client *c);
/* @w waits no more (its queue places are left by the caller). */
void rl_wait_leave(redlock_client *c, rl_waiter *w);
/* A message on a node's subscriber connection (the nodes' env hook). */
void rl_wait_on_message(rl_node *n, const char *ch, size_t clen, const char *msg, size_t mlen,
                        void *arg);
/* A node came up: subscribe there again if this client waits. */
void rl_wait_node_up(redlock_client *c, rl_node *n);
void rl_wait_close(redlock_client *c);

#endif
