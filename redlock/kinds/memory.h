/* memory.h - the memory guard, the client's side (memory.c). */
#ifndef REDLOCK_MEMORY_H
#define REDLOCK_MEMORY_H

#include <stdint.h>

#include "redlock.h"
#include "node/trust.h"

typedef struct rl_settle rl_settle;

/* The window an acquire with @ttl_ms asks a reborn master for: the longest
 * ttl the client knows of, at least restart_guard_ms. Remembered. */
uint32_t rl_memory_window(redlock_client *c, uint32_t ttl_ms);
/* A master reported @maxttl_ms as the longest ttl it has seen: remember it,
 * and raise every still-running window this client stamped shorter. */
void rl_memory_learned(redlock_client *c, uint32_t maxttl_ms);
/* Master @idx reported its marker (the CHECK, or a vote): what it says is
 * learned; a pending master gets its window measured from the fleet
 * (settle); a window still running that was set from a shorter bound than
 * the longest ttl the client knows is raised on that master. */
void rl_memory_marker(redlock_client *c, uint32_t idx, const rl_marker *m);
/* The client is going: a settle round in flight is dropped (what it sent
 * stays queued; the next client that meets the master settles it). */
void rl_memory_free(redlock_client *c);

#endif
