/* check.c - is a lock still held, and for how long (redlock_lock_check).
 *
 * Runs on the client's loop as one status per resource, in turn, each
 * started from the completion of the one before; the blocking call and its
 * _async twin both start it here. Read-only. Why a quorum of masters holding
 * the token decides, not the time left: docs/safety.md, "What the
 * implementation adds" ("A check can only take a lock away").
 */
#include "kinds/kinds.h"

#include <stdlib.h>
#include <string.h>

typedef struct rl_check {
    const redlock_lock *lock; /* the caller's, valid until cb has run */
    size_t next;              /* the resource being read */
    uint32_t mine;            /* masters holding the token on every resource so far */
    uint32_t answered;        /* masters that answered every status so far */
    redlock_check_cb cb;
    void *arg;
} rl_check;

static void check_on_status(redlock_client *c, int status, const redlock_status *st,
                            const redlock_error *err, void *arg);

static int check_ask(redlock_client *c, rl_check *k, redlock_error *e)
{
    size_t len;
    const void *res = redlock_lock_resource_at(k->lock, k->next, &len);
    return rl_status_start(c, res, len, check_on_status, k, e);
}

/* The verdict once every resource was read; @e says why when not held. */
static int check_verdict(redlock_client *c, const rl_check *k, int64_t *left_ms, redlock_error *e)
{
    uint32_t held = (uint32_t)__builtin_popcount(k->mine),
             seen = (uint32_t)__builtin_popcount(k->answered);
    int64_t left = redlock_lock_validity_ms(k->lock);
    if (held >= c->quorum && left > 0) {
        *left_ms = left;
        return 0;
    }
    if (held >= c->quorum) {
        rl_seterr(e, REDLOCK_EEXPIRED, -1,
                  "lock_check: its validity has run out (the "
                  "token is still on %u of %u masters, but nothing is promised now)",
                  held, c->n);
        return REDLOCK_EEXPIRED;
    }
    if (held + (c->n - seen) >= c->quorum) {
        rl_seterr(e, REDLOCK_ENOQUORUM, -1,
                  "lock_check: the token is on %u of %u masters "
                  "and %u did not answer: cannot tell (%u needed)",
                  held, c->n, c->n - seen, c->quorum);
        return REDLOCK_ENOQUORUM;
    }
    rl_seterr(e, REDLOCK_ENOTHELD, -1,
              "lock_check: not held: the token is on %u of %u "
              "masters (%u needed)",
              held, c->n, c->quorum);
    return REDLOCK_ENOTHELD;
}

static void check_end(redlock_client *c, rl_check *k, int status, int64_t left_ms,
                      const redlock_error *err)
{
    redlock_check_cb cb = k->cb;
    void *arg = k->arg;
    free(k);
    cb(c, status, status ? 0 : left_ms, err, arg);
}

/* One resource read (on the loop, from its status's delivery): fold it in,
 * then read the next one or decide. A status that fails for any reason but
 * "too few answered" ends the check with its own error. */
static void check_on_status(redlock_client *c, int status, const redlock_status *st,
                            const redlock_error *err, void *arg)
{
    rl_check *k = arg;
    redlock_error e = { 0, -1, "" };
    if (status && status != REDLOCK_ENOQUORUM) {
        if (!err) {
            rl_seterr(&e, status, -1, "lock_check: %s", redlock_strerror(status));
            err = &e;
        }
        check_end(c, k, status, 0, err);
        return;
    }
    const char *token = redlock_lock_token(k->lock);
    for (uint32_t m = 0; m < c->n && m < REDLOCK_MAX_MASTERS; m++) {
        const redlock_master_state *ms = &st->masters[m];
        if (ms->err)
            k->answered &= ~(1u << m);
        if (ms->err || !ms->held || strcmp(ms->token, token) != 0)
            k->mine &= ~(1u << m);
    }
    int rc = 0;
    int64_t left = 0;
    if (++k->next < redlock_lock_count(k->lock)) {
        rc = check_ask(c, k, &e);
        if (rc == 0)
            return;
    } else {
        rc = check_verdict(c, k, &left, &e);
    }
    check_end(c, k, rc, left, &e);
}

int rl_check_start(redlock_client *c, const redlock_lock *lock, redlock_check_cb cb, void *arg,
                   redlock_error *e)
{
    rl_check *k = calloc(1, sizeof(*k));
    if (!k) {
        rl_seterr(e, REDLOCK_ENOMEM, -1, "out of memory starting a lock check");
        return REDLOCK_ENOMEM;
    }
    k->lock = lock;
    k->mine = k->answered = (1u << c->n) - 1;
    k->cb = cb;
    k->arg = arg;
    int rc = check_ask(c, k, e);
    if (rc)
        free(k);
    return rc;
}
