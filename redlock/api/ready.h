/* ready.h - readiness: learn when enough masters are connected, without polling. */
#ifndef REDLOCK_READY_H
#define REDLOCK_READY_H

#include "core/types.h"

int rl_ready_start(redlock_client *c, size_t min_masters, uint32_t timeout_ms, redlock_ready_cb cb,
                   void *arg, redlock_error *e);
/* A node came up or went down (from the nodes' env hook). */
void rl_ready_check(redlock_client *c);
/* Client free: every waiter gets ESHUTDOWN, now. */
void rl_ready_close(redlock_client *c);

#endif
