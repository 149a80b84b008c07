/* cancel.c - cancellation sources: one fire stops every acquire given it.
 *
 * Firing marks the source and cancels what is registered: directly for an
 * async client, through the I/O thread for a blocking one, which cancels
 * its client's ops under the source's mutex (rl_cancel_run). Locking and
 * lifetime: docs/threads.md, "Cancellation sources" and "Who owns what".
 */
#include "core/cancel.h"
#include "core/loop.h"

#include <stdbool.h>

#include <pthread.h>
#include <stdlib.h>

struct redlock_cancel {
    pthread_mutex_t mu;
    int refs; /* the owner + requests in flight */
    bool fired;
    rl_cancel_reg *regs;
};

int redlock_cancel_new(redlock_cancel **ret)
{
    if (!ret)
        return REDLOCK_EINVAL;
    redlock_cancel *cc = calloc(1, sizeof(*cc));
    if (!cc)
        return REDLOCK_ENOMEM;
    if (pthread_mutex_init(&cc->mu, NULL) != 0) {
        free(cc);
        return REDLOCK_ENOMEM;
    }
    cc->refs = 1;
    *ret = cc;
    return 0;
}

static void rl_cancel_unref(redlock_cancel *cc)
{
    pthread_mutex_lock(&cc->mu);
    int left = --cc->refs;
    pthread_mutex_unlock(&cc->mu);
    if (left == 0) {
        pthread_mutex_destroy(&cc->mu);
        free(cc);
    }
}

void redlock_cancel_free(redlock_cancel *cc)
{
    if (cc)
        rl_cancel_unref(cc);
}

int redlock_cancel_fired(const redlock_cancel *cc)
{
    return cc && __atomic_load_n(&cc->fired, __ATOMIC_ACQUIRE);
}

bool rl_cancel_register(rl_cancel_reg *reg, redlock_cancel *cc, redlock_client *c, rl_op *op)
{
    if (!cc)
        return false;
    pthread_mutex_lock(&cc->mu);
    bool fired = cc->fired;
    if (!fired) {
        /* The registration holds a reference: the op unregisters on its
         * loop's thread after its callback ran, and a blocking caller may
         * free the source the moment its call returned. */
        cc->refs++;
        reg->cc = cc;
        reg->c = c;
        reg->op = op;
        reg->next = cc->regs;
        cc->regs = reg;
    }
    pthread_mutex_unlock(&cc->mu);
    return fired;
}

void rl_cancel_unregister(rl_cancel_reg *reg)
{
    redlock_cancel *cc = reg->cc;
    if (!cc)
        return;
    pthread_mutex_lock(&cc->mu);
    for (rl_cancel_reg **pp = &cc->regs; *pp; pp = &(*pp)->next) {
        if (*pp == reg) {
            *pp = reg->next;
            break;
        }
    }
    pthread_mutex_unlock(&cc->mu);
    reg->cc = NULL;
    rl_cancel_unref(cc);
}

/* On @c's loop thread: cancel every op of @c registered with @cc, one at a
 * time, without holding the lock while kind code runs. */
static void cancel_on_loop(redlock_client *c, void *arg)
{
    redlock_cancel *cc = arg;
    for (;;) {
        rl_op *op = NULL;
        pthread_mutex_lock(&cc->mu);
        for (rl_cancel_reg *r = cc->regs; r && !op; r = r->next) {
            if (r->c == c && !r->done) {
                r->done = true;
                op = r->op;
            }
        }
        pthread_mutex_unlock(&cc->mu);
        if (!op)
            break;
        rl_op_cancel(op, REDLOCK_ECANCELED);
    }
    rl_cancel_unref(cc);
}

void redlock_cancel_fire(redlock_cancel *cc)
{
    if (!cc)
        return;
    pthread_mutex_lock(&cc->mu);
    bool again = cc->fired;
    __atomic_store_n(&cc->fired, true, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&cc->mu);
    while (!again) {
        /* One client at a time: hand it the source (a reference), and mark
         * its registrations so the next round finds the next client. */
        redlock_client *c = NULL;
        pthread_mutex_lock(&cc->mu);
        for (rl_cancel_reg *r = cc->regs; r; r = r->next) {
            if (!c && !r->handed)
                c = r->c;
            if (c && r->c == c)
                r->handed = true;
        }
        if (c)
            cc->refs++;
        /* A blocking client is posted to under the lock: its op is still
         * registered, so the client's shutdown (which unregisters it on the
         * I/O thread, under this lock) has not ended and the client cannot
         * be freed under us. An async client runs the cancel right here, on
         * its own thread, and that takes the lock: post after letting go. */
        bool blocking = c && c->blk;
        bool refused = blocking && !rl_loop_post(c, cancel_on_loop, cc);
        pthread_mutex_unlock(&cc->mu);
        if (!c)
            break;
        if (!blocking)
            rl_loop_post(c, cancel_on_loop, cc);
        else if (refused)
            rl_cancel_unref(cc); /* the client is going: its shutdown ends the op */
    }
}
