/* acquire-mine.c - an attempt that met this client's own holder.
 *
 * redlock is not reentrant: the caller may be waiting for itself. The
 * message names the resource and says so once per wait, as a warning,
 * since another thread or task of the client may be the holder instead.
 */
#include "kinds/acquire-private.h"
#include "kinds/lock.h"

#include <stdio.h>

/* The attempt met a holder: is it this client (lock.c, "what this client
 * holds")? Then the message says so: the caller itself, if it holds the
 * lock (redlock is not reentrant), or another thread or task sharing the
 * client, whose release ends the wait. A collision of names would need
 * this client to hold a live key with the same hash. */
static bool acq_mine(rl_acquire *a)
{
    rl_op *op = &a->op;
    const char *token;
    int64_t left_ms;
    int i = rl_mine_find(op->c, &op->k.locks, &token, &left_ms);
    if (i < 0)
        return false;
    size_t pl = op->c->prefix_len, len = op->k.locks.len[i] - pl;
    char name[160];
    size_t k = 0;
    for (size_t j = 0; j < len && k + 4 < sizeof(name); j++) {
        unsigned char ch = (unsigned char)op->k.locks.v[i][pl + j];
        name[k++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    if (k < len)
        name[k++] = '.', name[k++] = '.', name[k++] = '.';
    name[k] = '\0';
    rl_seterr(&op->err, REDLOCK_ECONFLICT, -1,
              "acquire: this client already holds '%s' (token %.12s..., %lld ms of validity left): "
              "redlock is not reentrant; if this caller holds it, use that lock or release it",
              name, token, (long long)left_ms);
    return true;
}

void rl_acq_tell_mine(rl_acquire *a)
{
    if (acq_mine(a) && !a->told_mine) { /* acq_mine also words the error */
        a->told_mine = true;
        rl_log(&a->op.c->cfg, REDLOCK_LOG_WARN, "%s (waiting for its release)", a->op.err.msg);
    }
}
