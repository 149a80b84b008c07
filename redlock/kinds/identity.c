/* identity.c - one redis-server, one vote.
 *
 * Tells masters apart by the run_id each handshake read: refuses the later
 * node to reach a server another node is connected to (an EINVAL naming both
 * entries), and lets no round count two OKs from one run_id. Why addresses
 * are not enough, and why safety does not rest on when the refusal comes:
 * docs/safety.md, "Assumptions (the timing model)", A3.
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
