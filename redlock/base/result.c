/* result.c - the accessors of the opaque results (result.h, redlock.h). */
#include <stdlib.h>

#include "base/result.h"

redlock_outcome *redlock_outcome_new(void)
{
    return calloc(1, sizeof(redlock_outcome));
}

void redlock_outcome_free(redlock_outcome *o)
{
    free(o);
}

int redlock_outcome_status(const redlock_outcome *o)
{
    return o->status;
}

size_t redlock_outcome_masters(const redlock_outcome *o)
{
    return o->n_masters;
}

size_t redlock_outcome_quorum(const redlock_outcome *o)
{
    return o->quorum;
}

size_t redlock_outcome_ok(const redlock_outcome *o)
{
    return o->n_ok;
}

uint32_t redlock_outcome_attempts(const redlock_outcome *o)
{
    return o->attempts;
}

uint64_t redlock_outcome_elapsed_us(const redlock_outcome *o)
{
    return o->elapsed_us;
}

int64_t redlock_outcome_validity_ms(const redlock_outcome *o)
{
    return o->validity_ms;
}

const redlock_vote *redlock_outcome_vote(const redlock_outcome *o, size_t i)
{
    return i < o->n_masters ? &o->votes[i] : NULL;
}

redlock_status *redlock_status_new(void)
{
    return calloc(1, sizeof(redlock_status));
}

void redlock_status_free(redlock_status *st)
{
    free(st);
}

size_t redlock_status_masters(const redlock_status *st)
{
    return st->n_masters;
}

size_t redlock_status_quorum(const redlock_status *st)
{
    return st->quorum;
}

size_t redlock_status_answered(const redlock_status *st)
{
    return st->n_answered;
}

size_t redlock_status_held(const redlock_status *st)
{
    return st->n_held;
}

const char *redlock_status_majority_token(const redlock_status *st)
{
    return st->majority_token;
}

const redlock_master_state *redlock_status_master(const redlock_status *st, size_t i)
{
    return i < st->n_masters ? &st->masters[i] : NULL;
}
