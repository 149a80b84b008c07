/* cancel.h - cancellation sources (redlock_cancel) and the ops listening to them. */
#ifndef REDLOCK_CANCEL_H
#define REDLOCK_CANCEL_H

#include "core/op.h"

/* An op's registration with a cancellation source, embedded in the op. */
typedef struct rl_cancel_reg {
    redlock_cancel *cc; /* NULL: not registered */
    redlock_client *c;
    rl_op *op;
    bool handed; /* fire handed this op's client the source */
    bool done;   /* its client's loop cancelled it */
    struct rl_cancel_reg *next;
} rl_cancel_reg;

/* Listen to @cc (NULL: nothing to do). Returns true if it has fired already. */
bool rl_cancel_register(rl_cancel_reg *reg, redlock_cancel *cc, redlock_client *c, rl_op *op);
void rl_cancel_unregister(rl_cancel_reg *reg);

#endif
