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
 * acquire on the same connection, so it lands after the stamp it corrects.
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

void rl_memory_learned(redlock_client *c, uint32_t maxttl_ms)
{
    c->fleet_ttl_ms = max2(c->fleet_ttl_ms, maxttl_ms);
    /* Nothing stamped yet, or nothing shorter than this: nothing to raise. */
    if (maxttl_ms <= c->asked_window_ms || c->asked_window_ms == 0 || c->freeing)
        return;
    c->asked_window_ms = maxttl_ms;
    rl_cmd cmd;
    rl_cmd_raise(&cmd, maxttl_ms);
    rl_fanout *f = rl_fanout_new(c->nodes, &cmd);
    for (uint32_t i = 0; f && i < c->n; i++)
        rl_fanout_send(f, i, true);   /* a master that is down has no stamp of ours to fix */
    rl_fanout_detach(f);
}
