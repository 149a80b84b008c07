/* handoff.h - the local hand-off: a release that passes its lock to a
 * waiter of the same client, whose next attempt takes the keys over from the
 * releasing token in one round (docs/waiting.md, "The local hand-off").
 */
#ifndef REDLOCK_HANDOFF_H
#define REDLOCK_HANDOFF_H

#include "core/op.h"

/* release.c: may @lock (still valid), being released by @rel, pass to a
 * waiter of this client? Then this returns the waiter's op, ready for
 * rl_handoff_start; @rel sends nothing and waits for the pass, whose
 * outcome calls @end once: @won (@rel is done), or lost and @rel goes out
 * to every master but @taken (masters that answered the pass with a grant:
 * the passing token is gone there). Else NULL. */
rl_op *rl_handoff_offer(redlock_client *c, redlock_lock *lock, rl_op *rel,
                        void (*end)(rl_op *rel, uint32_t taken, bool won));
/* release.c: start the pass attempt of the waiter rl_handoff_offer chose. */
void rl_handoff_start(rl_op *acq);
/* release.c: @rel stops waiting for the pass to @acq (cancelled, freed):
 * the attempt goes on as an ordinary one. */
void rl_handoff_cut(rl_op *acq);

/* release.c: @rel did not pass its lock: waiters parked for its keys try
 * now (their attempts go behind the release on every connection). */
void rl_handoff_unpark(redlock_client *c, const rl_op *rel);

/* release.c: a release @rel that does not pass: the channel whose waiters
 * its hand-over passes over (wait.c), or NULL for the plain release. */
const char *rl_handoff_skip(redlock_client *c, const rl_op *rel);

#endif
