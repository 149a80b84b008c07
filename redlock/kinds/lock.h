/* lock.h - lock objects: what a lease is, and what it covers. */
#ifndef REDLOCK_LOCK_H
#define REDLOCK_LOCK_H

#include "core/types.h"

redlock_lock *rl_lock_new(const redlock_resource *set, size_t count, const char *token);
/* A lock on the resources behind @keys (each with @prefix_len bytes of key
 * prefix in front). */
redlock_lock *rl_lock_from_keys(const rl_keyset *keys, size_t prefix_len, const char *token);
/* The set a lock covers, as resources (for ops on an existing lock). */
size_t rl_lock_resources(const redlock_lock *lock, redlock_resource *out);

/* What this client holds (redlock_client.mine), kept on the loop thread by
 * the ops themselves and never asked of a master: an acquire granted @token
 * on @locks until @until; an extend of @token moved its end to @until; a
 * release of @token began (whatever its outcome, the caller holds it no
 * more). */
void rl_mine_add(redlock_client *c, const rl_keyset *locks, const char *token, rl_monotime until);
void rl_mine_extend(redlock_client *c, const char *token, rl_monotime until);
void rl_mine_drop(redlock_client *c, const char *token);
/* Does this client hold one of @locks now? Then its index in @locks, its
 * token and the validity left (ms); else -1. */
int rl_mine_find(const redlock_client *c, const rl_keyset *locks, const char **ret_token,
                 int64_t *ret_left_ms);

#endif
