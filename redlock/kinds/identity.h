/* identity.h - one redis-server, one vote: masters told apart by run_id.
 *
 * Two checks on the run_id every handshake reads (node.c): the later node to
 * reach a server another node is connected to is refused, and no round
 * counts two OKs from one run_id. Why addresses compared at creation
 * (client.c) are not enough: docs/safety.md, "Assumptions (the timing
 * model)", A3.
 */
#ifndef REDLOCK_IDENTITY_H
#define REDLOCK_IDENTITY_H

#include "core/op.h"

/* The index of another master of @c connected now to @n's server, or -1. */
int rl_identity_twin(const redlock_client *c, const rl_node *n);

/* The first master refused as another's twin, or NULL. */
const rl_node *rl_identity_refused(const redlock_client *c);

/* The setup error for refused @n: EINVAL, one line naming both entries. */
void rl_identity_seterr(const redlock_client *c, const rl_node *n, redlock_error *e);

/* About to count an OK from master @idx in @op's current round: true (with
 * @why) if an OK from the same run_id was counted in it already. A master
 * whose INFO was refused (ACL) has no run_id and cannot be checked. */
bool rl_round_same_server(rl_op *op, uint32_t idx, char *why, size_t len);

#endif
