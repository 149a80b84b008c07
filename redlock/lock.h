/* lock.h - lock objects: what a lease is, and what it covers. */
#ifndef REDLOCK_LOCK_H
#define REDLOCK_LOCK_H

#include "types.h"

redlock_lock *rl_lock_new(const redlock_resource *set, size_t count, const char *token);
/* A lock on the resources behind @keys (each with @prefix_len bytes of key
 * prefix in front). */
redlock_lock *rl_lock_from_keys(const rl_keyset *keys, size_t prefix_len, const char *token);
/* The set a lock covers, as resources (for ops on an existing lock). */
size_t rl_lock_resources(const redlock_lock *lock, redlock_resource *out);

#endif
