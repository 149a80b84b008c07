/* kinds.h - how the layers above the kinds start an operation.
 *
 * The two API files, async.c and blocking.c, both come here; the watchdog
 * starts extends here too. Each returns 0 (the callback will run exactly
 * once, from the loop) or an error (it never will): REDLOCK_ESHUTDOWN once
 * the client is being freed (rl_op_new says so, for every kind).
 */
#ifndef REDLOCK_KINDS_H
#define REDLOCK_KINDS_H

#include "config.h"
#include "op.h"

int rl_acquire_start(redlock_client *c, const redlock_resource *set, size_t count,
                     const rl_wait_spec *w, redlock_done_cb cb, void *arg, redlock_error *e);
int rl_release_start(redlock_client *c, redlock_lock *lock, redlock_done_cb cb, void *arg,
                     redlock_error *e);
/* @ret_op (optional): the op, so the watchdog can cut it loose from the lock. */
int rl_extend_start(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms, redlock_done_cb cb,
                    void *arg, rl_op **ret_op, redlock_error *e);
/* The extend @op no longer writes into its lock (the lock may be freed). */
void rl_extend_forget_lock(rl_op *op);
/* Status and ping fill a redlock_status of their own, valid during @cb. */
int rl_status_start(redlock_client *c, const void *resource, size_t len, redlock_status_cb cb,
                    void *arg, redlock_error *e);
int rl_ping_start(redlock_client *c, redlock_status_cb cb, void *arg, redlock_error *e);

/* An operator's word on masters (redlock_declare_empty, redlock_readmit):
 * @readmit, and the fleet bound @max_ttl_ms it asks for (0: left alone);
 * @force: even where the fleet's look forbids it (declare.c). The callback
 * gets how many masters now count by it and the bound it set (0: none). */
typedef void (*rl_declare_cb)(redlock_client *c, int status, uint32_t declared, uint32_t bound_ms,
                              const redlock_outcome *out, const redlock_error *err, void *arg);
int rl_declare_start(redlock_client *c, bool readmit, uint32_t max_ttl_ms, bool force,
                     rl_declare_cb cb, void *arg, redlock_error *e);

#endif
