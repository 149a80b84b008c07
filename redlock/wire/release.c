/* release.c - a release on the wire: the form each master gets, and its reply read.
 *
 * Every master gets the release script, except the one-lock release's quiet
 * masters that have a native compare-and-delete (docs/wire.md, "release";
 * why it is safe: docs/memory-guard.md, "The release without Lua").
 */
#include "wire/release.h"

#include <string.h>

/* The native kind a master of @mask has (DELIFEQ before DELEX), or 0. */
static unsigned native_kind(const rl_node *nodes, uint32_t n, uint32_t mask)
{
    for (unsigned kind = RL_NATIVE_DELIFEQ; kind <= RL_NATIVE_DELEX; kind <<= 1)
        for (uint32_t i = 0; i < n; i++)
            if ((mask & (1u << i)) && rl_node_native(&nodes[i], kind))
                return kind;
    return 0;
}

/* The native delete goes only where nobody was queued when the lease was
 * granted (the quiet masters): a key marked for a waiter is not deleted,
 * so there it would cost a second request (the script, after its 0). */
void rl_wire_release_plan(rl_release_plan *p, const rl_node *nodes, uint32_t n,
                          const rl_release_ask *ask)
{
    if (ask->skip[0])
        rl_cmd_release_skip(&p->script, ask->k, ask->token, ask->skip); /* another's waiter */
    else
        rl_cmd_release(&p->script, ask->k, ask->token, true, NULL); /* the next waiter */
    uint32_t quiet = ask->quiet & ask->mask;
    p->kind = ask->k->locks.n == 1 ? native_kind(nodes, n, quiet) : 0;
    p->native_mask = 0;
    if (!p->kind)
        return;
    rl_cmd_release_native(&p->native, ask->k, ask->token, p->kind == RL_NATIVE_DELEX);
    for (uint32_t i = 0; i < n; i++)
        if ((quiet & (1u << i)) && rl_node_native(&nodes[i], p->kind))
            p->native_mask |= 1u << i;
}

/* The native delete's answer asks for the script when it deleted nothing
 * (0: the key is gone, another's, or ours marked for a waiter who is owed
 * the hand-over; the script tells which, and hands over), and when the
 * master did not do what it claims (a plain ERR: it lacks the command; an
 * answer that is not 0 or 1) or may not (NOPERM: an ACL written before
 * the release without Lua, README): then it is refused, the master's own
 * words in the detail, and this release loses nothing. OOM, LOADING and
 * the like are answers, as they would be for the script. */
void rl_wire_release_read_native(rl_answer *a, const rl_node *n, const rl_reply *r)
{
    unsigned native = n->trust.native & (RL_NATIVE_DELIFEQ | RL_NATIVE_DELEX);
    native = native & RL_NATIVE_DELIFEQ ? RL_NATIVE_DELIFEQ : native;
    int type = rl_reply_type(r);
    if (type == RL_REPLY_ERROR) {
        size_t len;
        const char *str = rl_reply_str(r, &len);
        if (!((len >= 4 && memcmp(str, "ERR ", 4) == 0) ||
              (len >= 6 && memcmp(str, "NOPERM", 6) == 0))) {
            rl_answer_error(a, n, r);
            return;
        }
        rl_answer_set(a, RL_ANSWER_BAD, rl_classify_error_reply(str, len), str);
        a->refused = native;
    } else if (type == RL_REPLY_INTEGER && rl_reply_integer(r) == 1) {
        rl_answer_set(a, RL_ANSWER_DONE, 0, "");
        return;
    } else if (type == RL_REPLY_INTEGER && rl_reply_integer(r) == 0) {
        rl_answer_set(a, RL_ANSWER_GONE, 0, "");
    } else {
        rl_answer_set(a, RL_ANSWER_BAD, REDLOCK_EPROTO, "neither 0 nor 1");
        a->refused = native;
    }
    a->redo = true;
}

void rl_wire_release_read(rl_answer *a, const rl_node *n, const rl_reply *r)
{
    rl_answer_script(a, n, r, "release");
}
