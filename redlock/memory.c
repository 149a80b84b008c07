/* memory.c - the memory guard, the client's side: the window an acquire asks
 * a reborn master for, and raising it when a longer ttl turns up.
 *
 * A master that lost its data is stamped with a window by the first acquire
 * that meets it (script.c): it votes for nobody until that window has passed.
 * The acquire asks for the longest ttl its client knows of. A client used at
 * once (redlock-cli, any fresh process) may send its first acquire before
 * any master has told it the fleet's longest ttl, and so stamp its own short
 * ttl where a longer lock may still live on the other masters. Therefore,
 * whenever the client learns of a longer ttl than any window it has asked
 * for, it sends every master a raise: it lengthens a window that is still
 * running and changes nothing else. On each master the raise follows the
 * acquire on the same connection, so it lands after the stamp it corrects;
 * and a master that reports a young window shorter than the longest ttl the
 * client knows (a vote, a handshake, a probe) is raised on the spot, so a
 * raise that could not be sent is made good at the next word from it.
 */
#include "memory.h"
#include "fanout.h"
#include "script.h"
#include "types.h"

static uint32_t max2(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

uint32_t rl_memory_window(redlock_client *c, uint32_t ttl_ms)
{
    uint32_t w = max2(max2(ttl_ms, c->max_ttl_ms), max2(c->fleet_ttl_ms, c->cfg.restart_guard_ms));
    w = max2(w, 1);
    c->asked_window_ms = max2(c->asked_window_ms, w);
    return w;
}

/* The raise script to the masters in @mask. Sent after whatever is already
 * queued on each connection, a stamp included. */
static void raise_on(redlock_client *c, uint32_t mask, uint32_t window_ms)
{
    rl_cmd cmd;
    rl_cmd_raise(&cmd, window_ms);
    rl_fanout_fire(c->nodes, c->n, &cmd, mask);
}

void rl_memory_learned(redlock_client *c, uint32_t maxttl_ms)
{
    c->fleet_ttl_ms = max2(c->fleet_ttl_ms, maxttl_ms);
    /* Nothing stamped yet, or nothing shorter than this: nothing to raise. */
    if (maxttl_ms <= c->asked_window_ms || c->asked_window_ms == 0 || c->freeing)
        return;
    c->asked_window_ms = maxttl_ms;
    /* A master this cannot reach now tells us its window when it answers
     * again (its handshake or a vote): rl_memory_marker() raises it then. */
    raise_on(c, (1u << c->n) - 1, maxttl_ms);
}

void rl_memory_marker(redlock_client *c, uint32_t idx, int64_t age_ms, uint32_t window_ms,
                      uint32_t maxttl_ms)
{
    rl_memory_learned(c, maxttl_ms);
    if (!c->cfg.restart_guard || c->freeing || age_ms < 0 || (uint64_t)age_ms >= window_ms ||
        window_ms >= c->fleet_ttl_ms)
        return;
    raise_on(c, 1u << idx, c->fleet_ttl_ms);
}
