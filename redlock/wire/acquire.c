/* acquire.c - an acquire round's answers, read: plain SET, the fast path's
 * transaction, the acquire script (and PASS, which answers as it does).
 *
 * Each becomes an rl_grant: what the master decided, and the side facts its
 * reply taught (the marker's bound, whether the marker serves this window),
 * which the kind hands to the node. What each reply means: docs/wire.md,
 * "acquire"; what a vote makes of it: kinds/acquire-votes.c.
 */
#include "wire/acquire.h"
#include "node/node-memory.h"
#include "node/trust.h"

#include <stdio.h>
#include <stdlib.h>

void rl_wire_acquire_plan(rl_acquire_plan *p, const rl_node *nodes, uint32_t n,
                          const rl_acquire_ask *ask)
{
    const rl_acquire_args *a = ask->args;
    p->kind = RL_ALT_NONE;
    p->alt_mask = 0;
    p->late = a->marked;
    bool plain = !a->fenced && !a->queued && ask->nres == 1 && !a->prev;
    if (plain && !a->marked) {
        rl_cmd_set(&p->main, ask->k, a->token, a->ttl_ms);
        return;
    }
    bool pass = a->prev && a->marked && !a->fenced && ask->nres == 1;
    if (!pass && !plain) {
        rl_cmd_acquire(&p->main, ask->k, a);
        return; /* a fence, a set, a queue: the script to every master */
    }
    for (uint32_t i = 0; i < n; i++)
        if (rl_node_fast(&nodes[i], a->window_ms, ask->start))
            p->alt_mask |= 1u << i;
    /* The common case, every master on the fast path, sends no script:
     * it is not built (PASS keeps it for its redo). */
    if (pass || p->alt_mask != (1u << n) - 1)
        rl_cmd_acquire(&p->main, ask->k, a);
    if (pass) {
        p->kind = RL_ALT_PASS;
        rl_cmd_pass(&p->alt, ask->k, a);
        return;
    }
    p->kind = RL_ALT_FAST;
    rl_cmd_acquire_fast(&p->alt, ask->k, a->token, a->ttl_ms);
    for (uint32_t i = 0; i < n; i++)
        if (p->alt_mask & (1u << i)) {
            int64_t end = rl_trust_lease_end(&nodes[i].trust, ask->start, a->ttl_ms, ask->drift);
            int len = snprintf(p->end[i], sizeof(p->end[i]), "%lld", (long long)end);
            p->end_len[i] = (size_t)len;
        }
}

bool rl_wire_pass_redo(rl_node *n, const rl_reply *r)
{
    (void)n;
    if (rl_reply_type(r) != RL_REPLY_ARRAY || rl_reply_elements(r) != 1)
        return false;
    const rl_reply *e = rl_reply_element(r, 0);
    return rl_reply_type(e) == RL_REPLY_INTEGER && rl_reply_integer(e) == -4;
}

static void grant_bad(rl_grant *g, const char *detail)
{
    g->kind = RL_GRANT_BAD;
    rl_answer_set(&g->bad, RL_ANSWER_BAD, REDLOCK_EPROTO, detail);
}

/* The fast path's HMGET marker served maxttl (cmd.c), for a window of
 * @want_ms: RL_SERVED, RL_UNSERVED (gone, or its window not over), RL_SHORT
 * (served, its bound below @want_ms: *@bound); -1 malformed. */
static int served_read(const rl_reply *pair, uint32_t want_ms, uint32_t *bound)
{
    if (rl_reply_type(pair) != RL_REPLY_ARRAY || rl_reply_elements(pair) != 2)
        return -1;
    const rl_reply *served = rl_reply_element(pair, 0), *max = rl_reply_element(pair, 1);
    int st = rl_reply_type(served), bt = rl_reply_type(max);
    if ((st != RL_REPLY_STRING && st != RL_REPLY_NIL) ||
        (bt != RL_REPLY_STRING && bt != RL_REPLY_NIL))
        return -1;
    long long maxttl = 0;
    if (bt == RL_REPLY_STRING) {
        const char *s = rl_reply_str(max, NULL);
        char *end;
        maxttl = strtoll(s, &end, 10);
        if (*s == '\0' || *end != '\0' || maxttl < 0 || maxttl > REDLOCK_TTL_MAX_MS)
            return -1;
    }
    *bound = (uint32_t)maxttl;
    if (st == RL_REPLY_STRING && maxttl >= (long long)want_ms)
        return RL_SERVED;
    return st == RL_REPLY_STRING ? RL_SHORT : RL_UNSERVED;
}

bool rl_wire_fast_quiet(const rl_reply *r)
{
    const rl_reply *e[4];
    if (rl_reply_type(r) != RL_REPLY_ARRAY || rl_reply_elements(r) != 4)
        return false;
    for (size_t i = 0; i < 4; i++)
        e[i] = rl_reply_element(r, i);
    return rl_reply_type(e[0]) == RL_REPLY_ARRAY && rl_reply_elements(e[0]) == 2 &&
           rl_reply_type(rl_reply_element(e[0], 0)) == RL_REPLY_STRING &&
           rl_reply_type(e[1]) == RL_REPLY_NIL && rl_reply_type(e[2]) == RL_REPLY_INTEGER &&
           rl_reply_integer(e[2]) == 0;
}

/* The fast path's transaction: [served, SET NX GET's answer, EXISTS
 * queue's, ZADD's] (cmd.h). An error in any place is the answer. */
static void read_fast(rl_grant *g, const rl_node *n, const rl_reply *r, uint32_t window_ms)
{
    const rl_reply *e[4];
    bool ok = rl_reply_elements(r) == 4;
    for (size_t i = 0; ok && i < 4; i++)
        e[i] = rl_reply_element(r, i);
    for (size_t i = 0; ok && i < 4; i++) {
        if (rl_reply_type(e[i]) == RL_REPLY_ERROR) { /* WRONGTYPE marker or index, ... */
            g->kind = RL_GRANT_BAD;
            rl_answer_error(&g->bad, n, e[i]);
            return;
        }
    }
    /* SET NX GET: nil when it set the key, the holder's value when not. */
    int old = ok ? rl_reply_type(e[1]) : 0;
    g->served = ok ? served_read(e[0], window_ms, &g->bound_ms) : -1;
    if (g->served < 0 || (old != RL_REPLY_NIL && old != RL_REPLY_STRING) ||
        rl_reply_type(e[2]) != RL_REPLY_INTEGER || rl_reply_type(e[3]) != RL_REPLY_INTEGER)
        grant_bad(g, "malformed reply to the acquire");
    else if (g->served == RL_UNSERVED)
        g->kind = RL_GRANT_UNSERVED;
    else if (g->served == RL_SHORT)
        g->kind = RL_GRANT_SHORT;
    else if (old == RL_REPLY_STRING)
        g->kind = RL_GRANT_HELD;
    else /* set (nil): nobody queued when EXISTS of the queue says 0 */
        g->quiet = rl_reply_integer(e[2]) == 0;
}

/* The acquire script's answer: {1, fence, maxttl[, flags]} granted,
 * {0, reserved, maxttl[, rank]} held, {-2, age, maxttl, window} memory too
 * young to count ({-2, -1, maxttl, 0, birth, age}: reborn, its window not
 * measured yet), {-3, j, maxttl, wrongtype} resource j's fence counter is
 * garbage. */
static void read_script(rl_grant *g, const rl_reply *r)
{
    long long x[4] = { 0, 0, 0, 0 }, since = 0;
    size_t k = rl_reply_elements(r);
    bool ok = k == 3 || k == 4 || k == 6;
    for (size_t i = 0; ok && i < k && i < 4; i++) {
        const rl_reply *e = rl_reply_element(r, i);
        ok = rl_reply_type(e) == RL_REPLY_INTEGER;
        if (ok)
            x[i] = rl_reply_integer(e);
    }
    const rl_reply *birth = ok && k == 6 ? rl_reply_element(r, 4) : NULL;
    if (birth) {
        const rl_reply *e = rl_reply_element(r, 5);
        ok = x[0] == -2 && x[1] == -1 && rl_reply_type(birth) == RL_REPLY_STRING &&
             rl_reply_type(e) == RL_REPLY_INTEGER && rl_reply_integer(e) >= 0;
        since = ok ? rl_reply_integer(e) : 0;
    }
    if (!ok || x[0] < -3 || x[1] < (x[0] == -2 ? -1 : 0) || x[2] < 0 || x[2] > REDLOCK_TTL_MAX_MS ||
        x[3] < 0 || x[3] > REDLOCK_TTL_MAX_MS) {
        grant_bad(g, "malformed reply to the acquire script");
        return;
    }
    g->maxttl_ms = x[2];
    if (x[0] == 1) {
        g->fence = (uint64_t)x[1];
        g->others = k == 4 && (x[3] & 2);
    } else if (x[0] == 0) {
        g->kind = RL_GRANT_HELD;
        g->reserved = x[1] == 1;
        if (k == 4)
            g->rank = (uint32_t)x[3];
    } else if (x[0] == -3) {
        g->kind = RL_GRANT_BAD_COUNTER;
        g->counter = (uint32_t)x[1];
        g->wrongtype = x[3] == 1;
    } else {
        g->kind = RL_GRANT_YOUNG;
        g->pending = x[1] < 0;
        g->age_ms = x[1] < 0 ? since : x[1];
        g->window_ms = (uint32_t)x[3];
        g->birth = birth ? rl_reply_str(birth, NULL) : NULL;
    }
}

void rl_wire_acquire_read(rl_grant *g, const rl_node *n, const rl_reply *r, rl_acquire_form form,
                          uint32_t window_ms)
{
    *g = (rl_grant){ .kind = RL_GRANT_OK, .rank = UINT32_MAX, .maxttl_ms = -1, .served = -1 };
    int type = rl_reply_type(r);
    if (rl_reply_is_status(r, "OK")) {
        return;
    } else if (type == RL_REPLY_ARRAY && form == RL_FORM_FAST) {
        read_fast(g, n, r, window_ms);
    } else if (type == RL_REPLY_ARRAY) {
        read_script(g, r);
    } else if (type == RL_REPLY_NIL) {
        g->kind = RL_GRANT_HELD; /* NX refused: the cleanup tells another type apart */
    } else if (type == RL_REPLY_ERROR) {
        g->kind = RL_GRANT_BAD;
        rl_answer_error(&g->bad, n, r);
    } else {
        char d[64];
        snprintf(d, sizeof(d), "unexpected %s reply to the acquire", rl_reply_type_name(type));
        grant_bad(g, d);
    }
}

int64_t rl_wire_acquire_late_maxttl(const rl_reply *r)
{
    if (rl_reply_type(r) != RL_REPLY_ARRAY || rl_reply_elements(r) < 3)
        return -1;
    const rl_reply *e = rl_reply_element(r, 2);
    return rl_reply_type(e) == RL_REPLY_INTEGER ? rl_reply_integer(e) : -1;
}
