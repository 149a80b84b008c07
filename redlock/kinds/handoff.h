/* handoff.h - the local hand-off: a release that passes its lock to a
 * waiter of the same client, whose next attempt takes the keys over from the
 * releasing token in one round (docs/waiting.md, "The local hand-off").
 */
#ifndef REDLOCK_HANDOFF_H
#define REDLOCK_HANDOFF_H

#include "core/op.h"

struct rl_acquire;

/* release.c: may @lock (still valid), being released by @rel, pass to a
 * waiter of this client? Then this returns the waiter's op, ready for
 * rl_handoff_start; @rel sends nothing and waits for the pass
 * (rl_release_passed, rl_release_resume). Else NULL. */
rl_op *rl_handoff_offer(redlock_client *c, redlock_lock *lock, rl_op *rel);
/* release.c: start the pass attempt of the waiter rl_handoff_offer chose. */
void rl_handoff_start(rl_op *acq);
/* release.c: @rel stops waiting for the pass to @acq (cancelled, freed):
 * the attempt goes on as an ordinary one. */
void rl_handoff_cut(rl_op *acq);

/* acquire.c: a new waiter for keys a holder of this client holds parks:
 * no attempt (it could only meet that holder), its poll armed; the
 * holder's release passes to it or starts its attempt (rl_handoff_unpark).
 * True if @a parked. */
bool rl_handoff_park(struct rl_acquire *a);
/* release.c: @rel did not pass its lock: waiters parked for its keys try
 * now (their attempts go behind the release on every connection). */
void rl_handoff_unpark(redlock_client *c, const rl_op *rel);

/* acquire.c: the pass attempt of @a won @lock, or lost. */
void rl_handoff_won(struct rl_acquire *a, redlock_lock *lock);
void rl_handoff_lost(struct rl_acquire *a);

/* release.c, for the above: the pass granted (@rel finishes: released), or
 * it lost and @rel goes out now to every master but @taken (masters that
 * answered the pass with a grant: the passing token is gone there). */
void rl_release_passed(rl_op *rel, uint32_t taken);
void rl_release_resume(rl_op *rel, uint32_t taken);

/* release.c: a release @rel that does not pass: the channel whose waiters
 * its hand-over passes over (wait.c), or NULL for the plain release. */
const char *rl_handoff_skip(redlock_client *c, const rl_op *rel);

#endif
