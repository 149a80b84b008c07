/* deliver.h - delivery of finished ops, and the end of every op of a client.
 *
 * For the client (client.c): the delivery event's life, and the end of
 * every op when the client is freed. When a callback runs:
 * docs/threads.md, first point.
 */
#ifndef REDLOCK_DELIVER_H
#define REDLOCK_DELIVER_H

#include "core/types.h"

/* The delivery event. 0, or REDLOCK_ENOMEM. */
int rl_ops_init(redlock_client *c);
/* Finish every op with ESHUTDOWN (those decided keep their status) and
 * deliver them all now. On the loop's thread. */
void rl_ops_shutdown(redlock_client *c);
/* The delivery event, and the ops the client kept (op.c's cache). */
void rl_ops_free(redlock_client *c);

#endif
