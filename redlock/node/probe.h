/* probe.h - the clock monitor's heartbeat: TIME from every master. */
#ifndef REDLOCK_PROBE_H
#define REDLOCK_PROBE_H

#include "node/node.h"

/* The probes of one interval for @n, each unless one is still in flight or
 * the node is down: TIME (@clock: the clock monitor is on), and what the
 * master remembers and may evict (its marker, CONFIG). */
void rl_probe_node(rl_node *n, bool clock);

/* A TIME reply as µs: false unless two bulk strings of digits, seconds up
 * to 2^40 and microseconds below 10^6, so no arithmetic on it overflows. */
bool rl_time_reply(const rl_reply *r, int64_t *ret_us);

#endif
