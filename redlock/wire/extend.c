/* extend.c - an extend on the wire: the script every master gets, and its reply read.
 *
 * One form: the extend script compares each key with the token and sets the
 * new ttl, all or nothing per master, and where the guard is on reads the
 * marker and raises the index in the same step (docs/wire.md, "extend").
 */
#include "wire/extend.h"

void rl_wire_extend_plan(rl_cmd *script, const rl_keys *k, const char *token, uint32_t ttl_ms,
                         bool guard)
{
    rl_cmd_extend(script, k, token, ttl_ms, guard);
}

void rl_wire_extend_read(rl_answer *a, const rl_node *n, const rl_reply *r)
{
    rl_answer_script(a, n, r, "extend");
}
