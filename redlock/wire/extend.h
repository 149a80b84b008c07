/* extend.h - what an extend sends each master, and what its reply means (wire/extend.c). */
#ifndef REDLOCK_WIRE_EXTEND_H
#define REDLOCK_WIRE_EXTEND_H

#include "base/cmd.h"
#include "wire/wire.h"

/* The round's command, the same to every master: the extend script for
 * the locks of @k held by @token, the new ttl @ttl_ms, reading the marker
 * and writing the index when @guard (the restart guard) is on. */
void rl_wire_extend_plan(rl_cmd *script, const rl_keys *k, const char *token, uint32_t ttl_ms,
                         bool guard);
/* The script's reply from master @n: DONE (extended), GONE (a key is not
 * there), HELD (another token holds one), EXCLUDED (-2: the master's memory
 * does not count now; nothing extended), or BAD (an error reply, or a shape
 * the script never sends), its detail from the master's own words. */
void rl_wire_extend_read(rl_answer *a, const rl_node *n, const rl_reply *r);

#endif
