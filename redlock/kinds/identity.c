/* identity.c - one redis-server, one vote.
 *
 * docs/safety.md, "Assumptions (the timing model)", A3: the N masters are
 * distinct processes. Comparing addresses at creation cannot see that
 * unix:///r.sock?db=2 and 127.0.0.1:6379 are one server; its run_id can, once
 * a handshake has read it. Refusing the later node is what the user sees (an
 * EINVAL naming both entries); mutual exclusion does not rest on when that
 * happens: a round never counts two OKs whose connections reported the same
 * run_id, so a master redirected to another's server mid-round counts once.
 */
#include "kinds/identity.h"

#include <stdio.h>
#include <string.h>

int rl_identity_twin(const redlock_client *c, const rl_node *n)
{
    for (uint32_t j = 0; j < c->n; j++) {
        const rl_node *m = &c->nodes[j];
        if (m != n && m->id_current && m->twin < 0 && strcmp(m->trust.run_id, n->trust.run_id) == 0)
            return (int)j;
    }
    return -1;
}

const rl_node *rl_identity_refused(const redlock_client *c)
{
    for (uint32_t i = 0; i < c->n; i++)
        if (c->nodes[i].twin >= 0)
            return &c->nodes[i];
    return NULL;
}

void rl_identity_seterr(const redlock_client *c, const rl_node *n, redlock_error *e)
{
    /* In list order, whichever of the two connected first. */
    const rl_node *a = &c->nodes[n->twin], *b = n;
    if (a->idx > b->idx) {
        const rl_node *t = a;
        a = b;
        b = t;
    }
    rl_seterr(e, REDLOCK_EINVAL, (int)n->idx,
              "masters: %s and %s are the same server (run_id %.8s): each master must be "
              "a separate redis-server",
              RL_QUOTE(a->addr.name, 90), RL_QUOTE(b->addr.name, 90), n->trust.run_id);
}

/* FNV-1a: equal run_ids hash equal, so no twin is missed; a collision of
 * two different ones could only refuse a vote, never count one twice. */
static uint64_t id_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

bool rl_round_same_server(rl_op *op, uint32_t idx, char *why, size_t len)
{
    const rl_node *n = &op->c->nodes[idx];
    if (!n->id_current)
        return false;
    uint64_t id = id_hash(n->trust.run_id);
    for (uint32_t j = 0; j < op->c->n; j++) {
        if (j != idx && (op->server_mask & (1u << j)) && op->server_id[j] == id) {
            snprintf(why, len, "same server as master %u (run_id %.8s): counted once", j,
                     n->trust.run_id);
            return true;
        }
    }
    op->server_mask |= 1u << idx;
    op->server_id[idx] = id;
    return false;
}
