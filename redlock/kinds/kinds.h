/* kinds.h - how the layers above the kinds start an operation.
 *
 * The two API files, async.c and blocking.c, both come here; the watchdog
 * starts extends here too. Each returns 0 (the callback will run exactly
 * once, from the loop) or an error (it never will): REDLOCK_ESHUTDOWN once
 * the client is being freed (rl_op_new says so, for every kind).
 */
#ifndef REDLOCK_KINDS_H
#define REDLOCK_KINDS_H

#include "base/config.h"
#include "core/op.h"

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

/* A lock check (redlock_lock_check): one status per resource of @lock, in
 * turn, then the verdict (check.c). @lock must outlive the call of @cb. */
int rl_check_start(redlock_client *c, const redlock_lock *lock, redlock_check_cb cb, void *arg,
                   redlock_error *e);

/* An operator's word on masters (redlock_declare_empty, redlock_readmit):
 * @readmit, and the fleet bound @max_ttl_ms it asks for (0: left alone);
 * @flags: 0 or REDLOCK_DECLARE_FORCE, even where the fleet's look forbids
 * it (declare.c). rl_declare_check() says whether the arguments are
 * acceptable, with no client, and rl_declare_start() checks them too. */
int rl_declare_check(bool readmit, uint32_t max_ttl_ms, unsigned flags, redlock_error *e);
int rl_declare_start(redlock_client *c, bool readmit, uint32_t max_ttl_ms, unsigned flags,
                     redlock_declare_cb cb, void *arg, redlock_error *e);

#endif
