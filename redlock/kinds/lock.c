/* lock.c - lock objects: the lease an acquire returns, or one rebuilt from a token.
 *
 * A lock is plain data owned by the caller: resources, token, ttl, fence
 * and the monotonic instant its validity ends. The validity is read and
 * written atomically, because a blocking client's watchdog updates it on
 * the I/O thread while the holder reads it on its own.
 */
#include "kinds/lock.h"
#include "base/cmd.h"
#include "base/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- locks --------------------------------------------------------------- */

redlock_lock *rl_lock_new(const redlock_resource *set, size_t count, const char *token)
{
    redlock_lock *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    size_t bytes = count * (sizeof(char *) + sizeof(size_t));
    for (size_t i = 0; i < count; i++)
        bytes += set[i].len + 1;
    l->mem = malloc(bytes);
    if (!l->mem) {
        free(l);
        return NULL;
    }
    l->n = (uint32_t)count;
    l->res = (const char **)(void *)l->mem;
    l->len = (size_t *)(void *)(l->mem + count * sizeof(char *));
    char *p = l->mem + count * (sizeof(char *) + sizeof(size_t));
    for (size_t i = 0; i < count; i++) {
        memcpy(p, set[i].name, set[i].len);
        p[set[i].len] = '\0';
        l->res[i] = p;
        l->len[i] = set[i].len;
        p += set[i].len + 1;
    }
    snprintf(l->token, sizeof(l->token), "%s", token);
    return l;
}

redlock_lock *rl_lock_from_keys(const rl_keyset *keys, size_t prefix_len, const char *token)
{
    redlock_resource set[REDLOCK_SET_MAX];
    for (uint32_t i = 0; i < keys->n; i++) {
        set[i].name = keys->v[i] + prefix_len;
        set[i].len = keys->len[i] - prefix_len;
    }
    return rl_lock_new(set, keys->n, token);
}

size_t rl_lock_resources(const redlock_lock *lock, redlock_resource *out)
{
    for (uint32_t i = 0; i < lock->n; i++) {
        out[i].name = lock->res[i];
        out[i].len = lock->len[i];
    }
    return lock->n;
}

int redlock_lock_new_set(const redlock_resource *set, size_t count, const char *token,
                         redlock_lock **ret, redlock_error *reterr)
{
    if (!ret) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "ret must not be NULL");
        return REDLOCK_EINVAL;
    }
    int rc = rl_check_set(set, count, reterr);
    if (!rc)
        rc = rl_check_token(token, reterr);
    if (rc)
        return rc;
    redlock_lock *l = rl_lock_new(set, count, token);
    if (!l) {
        rl_seterr(reterr, REDLOCK_ENOMEM, -1, "out of memory");
        return REDLOCK_ENOMEM;
    }
    *ret = l;
    return 0;
}

int redlock_lock_new(const void *resource, size_t len, const char *token, redlock_lock **ret,
                     redlock_error *reterr)
{
    redlock_resource one = { resource, len };
    return redlock_lock_new_set(&one, 1, token, ret, reterr);
}

void redlock_lock_free(redlock_lock *lock)
{
    if (!lock)
        return;
    /* A watchdog still running would extend freed memory: stop it first
     * (watchdog.c set this hook; it stops on the client's loop thread). */
    if (lock->on_free)
        lock->on_free(lock);
    free(lock->mem);
    free(lock);
}

const char *redlock_lock_token(const redlock_lock *lock)
{
    return lock ? lock->token : NULL;
}

const void *redlock_lock_resource(const redlock_lock *lock, size_t *len)
{
    if (!lock) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = lock->len[0];
    return lock->res[0];
}

size_t redlock_lock_count(const redlock_lock *lock)
{
    return lock ? lock->n : 0;
}

const void *redlock_lock_resource_at(const redlock_lock *lock, size_t i, size_t *len)
{
    if (!lock || i >= lock->n) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = lock->len[i];
    return lock->res[i];
}

uint64_t redlock_lock_fence(const redlock_lock *lock)
{
    return lock ? lock->fence : 0;
}

int64_t redlock_lock_validity_ms(const redlock_lock *lock)
{
    rl_monotime until = lock ? rl_lock_valid_until(lock) : 0;
    if (until == 0)
        return 0;
    rl_monotime now = rl_now_us();
    if (now >= until)
        return -(int64_t)((now - until + 999) / 1000);
    return (int64_t)((until - now) / 1000);
}

uint32_t redlock_lock_ttl_ms(const redlock_lock *lock)
{
    return lock ? __atomic_load_n(&lock->ttl_ms, __ATOMIC_RELAXED) : 0;
}

/* ---- what this client holds ----------------------------------------------- */

/* Redlock is not reentrant: a second acquire of a resource by the client
 * that holds it meets its own key, and would wait (poll, queue) until its
 * wait ran out, saying "held by another client". The client knows better:
 * it granted the token. So each granted key is remembered here until its
 * release begins or its validity ends, and an acquire whose attempt met a
 * holder looks here before waiting (acquire.c). Nothing is sent for it:
 * the common case, an acquire that meets no holder, never looks. A key
 * whose slot was taken by another is only forgotten: that acquire waits as
 * before. Remembered per client, since the token is the client's. */

static uint64_t key_hash(const char *key, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a, as the hot slots' */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 1099511628211ull;
    return h ? h : 1; /* 0 marks a free slot */
}

void rl_mine_add(redlock_client *c, const rl_keyset *locks, const char *token, rl_monotime until)
{
    for (uint32_t i = 0; i < locks->n; i++) {
        uint64_t h = key_hash(locks->v[i], locks->len[i]);
        struct rl_mine *m = &c->mine[h % RL_MINE_SLOTS];
        m->hash = h;
        m->until = until;
        snprintf(m->token, sizeof(m->token), "%s", token);
    }
}

void rl_mine_extend(redlock_client *c, const char *token, rl_monotime until)
{
    for (size_t i = 0; i < RL_MINE_SLOTS; i++)
        if (c->mine[i].hash && strcmp(c->mine[i].token, token) == 0)
            c->mine[i].until = until;
}

void rl_mine_drop(redlock_client *c, const char *token)
{
    for (size_t i = 0; i < RL_MINE_SLOTS; i++)
        if (c->mine[i].hash && strcmp(c->mine[i].token, token) == 0)
            memset(&c->mine[i], 0, sizeof(c->mine[i]));
}

int rl_mine_find(const redlock_client *c, const rl_keyset *locks, const char **ret_token,
                 int64_t *ret_left_ms)
{
    rl_monotime now = rl_now_us();
    for (uint32_t i = 0; i < locks->n; i++) {
        uint64_t h = key_hash(locks->v[i], locks->len[i]);
        const struct rl_mine *m = &c->mine[h % RL_MINE_SLOTS];
        if (m->hash == h && m->until > now) {
            *ret_token = m->token;
            *ret_left_ms = (int64_t)((m->until - now) / 1000);
            return (int)i;
        }
    }
    return -1;
}
