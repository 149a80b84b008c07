/* guard.c - the memory guard's replies, read once: a master's LEASES report.
 *
 * memory.c (the settle's look at the fleet) and declare.c (the operator's
 * word) both ask every master for it; what they make of it is theirs
 * (docs/memory-guard.md). The shape: docs/wire.md, "memory guard: settle".
 */
#include "wire/guard.h"
#include "redlock.h"

static bool in_ttl(long long v)
{
    return v >= 0 && v <= REDLOCK_TTL_MAX_MS;
}

bool rl_wire_leases_read(rl_leases *l, const rl_reply *r)
{
    size_t k = r && rl_reply_type(r) == RL_REPLY_ARRAY ? rl_reply_elements(r) : 0;
    if (k < 4 || k > 6)
        return false;
    long long v[3];
    for (size_t i = 0; i < 3; i++) {
        const rl_reply *e = rl_reply_element(r, i);
        if (rl_reply_type(e) != RL_REPLY_INTEGER)
            return false;
        v[i] = rl_reply_integer(e);
    }
    uint64_t fence;
    if (!rl_reply_counter(rl_reply_element(r, 3), &fence) || v[0] < 0 || v[0] > 1 ||
        !in_ttl(v[1]) || !in_ttl(v[2]))
        return false;
    const rl_reply *tok = k == 5 ? rl_reply_element(r, 4) : NULL;
    const rl_reply *since = k == 6 ? rl_reply_element(r, 5) : NULL;
    *l = (rl_leases){
        .counts = v[0] == 1,
        .left_ms = (uint32_t)v[1],
        .maxttl_ms = (uint32_t)v[2],
        .fence = fence,
        .token = tok && rl_reply_type(tok) == RL_REPLY_STRING ? rl_reply_str(tok, NULL) : "",
        .since_ms = since && rl_reply_type(since) == RL_REPLY_INTEGER &&
                            rl_reply_integer(since) >= 0
                        ? rl_reply_integer(since)
                        : -1,
    };
    return true;
}
