/* memory.h - the memory guard, the client's side (memory.c). */
#ifndef REDLOCK_MEMORY_H
#define REDLOCK_MEMORY_H

#include <stdint.h>

#include "redlock.h"

/* The window an acquire with @ttl_ms asks a reborn master for: the longest
 * ttl the client knows of, at least restart_guard_ms. Remembered. */
uint32_t rl_memory_window(redlock_client *c, uint32_t ttl_ms);
/* A master reported @maxttl_ms as the longest ttl it has seen: remember it,
 * and raise every still-running window this client stamped shorter. */
void rl_memory_learned(redlock_client *c, uint32_t maxttl_ms);
/* Master @idx reported its marker (a read, or a vote): what it says is
 * learned, and a window still running that is shorter than the longest
 * ttl the client knows is raised on that master. @age_ms -1: no marker. */
void rl_memory_marker(redlock_client *c, uint32_t idx, int64_t age_ms, uint32_t window_ms,
                      uint32_t maxttl_ms);

#endif
