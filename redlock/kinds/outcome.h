/* outcome.h - from votes to one status code and one line a person can act on. */
#ifndef REDLOCK_OUTCOME_H
#define REDLOCK_OUTCOME_H

#include "core/op.h"
#include "wire/wire.h"

/* A master's answer (wire/wire.h) as its vote; @gone_err is what "gone"
 * means to the caller: nothing for a release (already expired counts as
 * released), ENOTHELD for extend. Returns the vote's kind. */
int rl_vote_answer(redlock_vote *v, const rl_answer *a, rl_monotime sent_us, int gone_err);
/* An error reply as a vote (NOAUTH behind a failed AUTH names the cause). */
void rl_vote_error_reply(redlock_vote *v, const rl_node *n, const rl_reply *r, rl_monotime sent_us);
/* Decide the failure code of an attempt from its votes and write the one-line
 * message, named by the kind's name and read by its verdict (op.h). */
int rl_outcome_failure(const rl_op *op, redlock_error *e);

#endif
