/* check.c - is a lock still held, and for how long (redlock_lock_check).
 *
 * The client's own clock is what promises a lock: its validity, measured from
 * the start of the attempt that took it (docs/safety.md,
 * "The claim and its argument"). The masters can only take that promise away
 * early: a lock whose token a majority no longer holds (released elsewhere,
 * expired on fast clocks, masters that forgot it and were readmitted) is not
 * held, whatever time is left. So a check reads every resource of the lock on
 * every master (the status script: GET and PTTL at one instant), counts the
 * masters that hold the token on every resource, and answers with the
 * validity left only when they are a quorum. Read-only: it never changes a
 * lock.
 */
#include "types.h"

#include <stdio.h>
#include <string.h>

int redlock_lock_check(redlock_client *c, const redlock_lock *lock, int64_t *ret_left_ms,
                       redlock_error *reterr)
{
    if (ret_left_ms)
        *ret_left_ms = 0;
    if (!c || !lock) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "lock_check: client and lock must not be NULL");
        return REDLOCK_EINVAL;
    }
    uint32_t mine = (1u << c->n) - 1, answered = mine;
    for (size_t i = 0; i < redlock_lock_count(lock); i++) {
        size_t len;
        const void *res = redlock_lock_resource_at(lock, i, &len);
        redlock_status st;
        int rc = redlock_status_get(c, res, len, &st, reterr);
        if (rc && rc != REDLOCK_ENOQUORUM)
            return rc;
        for (uint32_t m = 0; m < c->n && m < REDLOCK_MAX_MASTERS; m++) {
            const redlock_master_state *ms = &st.masters[m];
            if (ms->err)
                answered &= ~(1u << m);
            if (ms->err || !ms->held || strcmp(ms->token, redlock_lock_token(lock)) != 0)
                mine &= ~(1u << m);
        }
    }
    uint32_t held = (uint32_t)__builtin_popcount(mine),
             seen = (uint32_t)__builtin_popcount(answered);
    int64_t left = redlock_lock_validity_ms(lock);
    if (held >= c->quorum && left > 0) {
        if (ret_left_ms)
            *ret_left_ms = left;
        return 0;
    }
    if (held >= c->quorum) {
        rl_seterr(reterr, REDLOCK_EEXPIRED, -1,
                  "lock_check: its validity has run out (the "
                  "token is still on %u of %u masters, but nothing is promised now)",
                  held, c->n);
        return REDLOCK_EEXPIRED;
    }
    if (held + (c->n - seen) >= c->quorum) {
        rl_seterr(reterr, REDLOCK_ENOQUORUM, -1,
                  "lock_check: the token is on %u of %u masters "
                  "and %u did not answer: cannot tell (%u needed)",
                  held, c->n, c->n - seen, c->quorum);
        return REDLOCK_ENOQUORUM;
    }
    rl_seterr(reterr, REDLOCK_ENOTHELD, -1,
              "lock_check: not held: the token is on %u of %u "
              "masters (%u needed)",
              held, c->n, c->quorum);
    return REDLOCK_ENOTHELD;
}
