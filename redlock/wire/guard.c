/* guard.c - the memory guard's replies, read once: a master's LEASES
 * report, and its answer to the operator's word.
 *
 * memory.c (the settle's look at the fleet) and declare.c (the operator's
 * word) both ask every master for its leases; what they make of a report is
 * theirs (docs/memory-guard.md). The shapes: docs/wire.md, "memory guard".
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

void rl_wire_declare_read(rl_word *w, const rl_node *n, const rl_reply *r)
{
    *w = (rl_word){ .kind = RL_WORD_BAD };
    if (rl_reply_type(r) == RL_REPLY_ARRAY && rl_reply_elements(r) == 2 &&
        rl_reply_type(rl_reply_element(r, 1)) == RL_REPLY_INTEGER) {
        long long ms = rl_reply_integer(rl_reply_element(r, 1)); /* {'wait', ms} */
        w->kind = RL_WORD_WAIT;
        w->wait_ms = ms <= 0 ? 0 : ms > 600000 ? 600000 : (uint32_t)ms;
    } else if (rl_reply_type(r) == RL_REPLY_INTEGER && rl_reply_integer(r) >= 0 &&
               rl_reply_integer(r) <= 1) {
        w->kind = RL_WORD_COUNTS;
        w->fresh = rl_reply_integer(r) == 1;
    } else if (rl_reply_type(r) == RL_REPLY_INTEGER && rl_reply_integer(r) < 0) {
        w->kind = RL_WORD_HOLDS;
        w->keys = -rl_reply_integer(r);
    } else if (rl_reply_type(r) == RL_REPLY_ERROR) {
        rl_answer_error(&w->bad, n, r);
    } else {
        rl_answer_set(&w->bad, RL_ANSWER_BAD, REDLOCK_EPROTO, "unexpected reply");
    }
}
