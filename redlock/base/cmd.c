/* cmd.c - the commands we send to masters: every argument layout in one place.
 *
 * Scripts go as EVALSHA sha numkeys keys... args...; fanout.c swaps in EVAL
 * and the body when a master answers NOSCRIPT.
 */
#include "base/cmd.h"
#include "base/script.h"

#include <stdio.h>
#include <string.h>

static void arg(rl_cmd *c, const char *s, size_t len)
{
    c->argv[c->argc] = s;
    c->len[c->argc] = len;
    c->argc++;
}

static void arg_str(rl_cmd *c, const char *s)
{
    arg(c, s, strlen(s));
}

static void arg_num(rl_cmd *c, unsigned long long v)
{
    char *buf = c->nums[c->nnums++];
    arg(c, buf, (size_t)snprintf(buf, sizeof(c->nums[0]), "%llu", v));
}

static void arg_keys(rl_cmd *c, const rl_keyset *ks)
{
    for (uint32_t i = 0; i < ks->n; i++)
        arg(c, ks->v[i], ks->len[i]);
}

static void begin(rl_cmd *c, int script)
{
    c->script = script;
    c->nparts = c->node_arg = 0;
    c->pipelined = false;
    c->argc = c->nnums = 0;
}

static void script(rl_cmd *c, int id, uint32_t numkeys)
{
    begin(c, id);
    arg(c, "EVALSHA", 7);
    arg(c, rl_script_sha(id), 40);
    arg_num(c, numkeys);
}

void rl_cmd_set(rl_cmd *c, const rl_keys *k, const char *token, uint32_t ttl_ms)
{
    /* The lock itself. NX: only if nobody holds it; PX: it expires on the
     * master's own clock even if we vanish. */
    begin(c, -1);
    arg(c, "SET", 3);
    arg(c, k->locks.v[0], k->locks.len[0]);
    arg_str(c, token);
    arg(c, "NX", 2);
    arg(c, "PX", 2);
    arg_num(c, ttl_ms);
}

/* One more command of a transaction: the arguments since the last one. */
static void part_end(rl_cmd *c, int *mark)
{
    c->part_argc[c->nparts++] = c->argc - *mark;
    *mark = c->argc;
}

/* A transaction that starts with HMGET marker served maxttl: whether this
 * master's memory counts, and the longest ttl its marker knows, read in the
 * step of what follows. A grant counts only where the bound already covers
 * the ttl asked (acquire-votes.c): the transaction cannot raise it, and an
 * operator may have lowered it since the client last looked
 * (docs/memory-guard.md, "The fast path"). */
static void served_first(rl_cmd *c, int *mark)
{
    begin(c, -1);
    arg(c, "HMGET", 5);
    arg(c, RL_MARKER_KEY, RL_MARKER_KEY_LEN);
    arg(c, "served", 6);
    arg(c, "maxttl", 6);
    part_end(c, mark);
}

/* ZADD held GT end token, `end` each master's own (the node argument):
 * the index hears of a lease's end, raised and never lowered; the entry is
 * the lease's, named by its token (script.c's INDEX says why). */
static void index_end(rl_cmd *c, const char *token, int *mark)
{
    arg(c, "ZADD", 4);
    arg(c, RL_HELD_KEY, RL_HELD_KEY_LEN);
    arg(c, "GT", 2);
    c->node_arg = c->argc;
    arg(c, "0", 1);
    arg_str(c, token);
    part_end(c, mark);
}

void rl_cmd_acquire_fast(rl_cmd *c, const rl_keys *k, const char *token, uint32_t ttl_ms)
{
    /* Why these three, and why together: docs/memory-guard.md,
     * "The fast path". The marker's `served` says, in the same atomic step as
     * the SET, that this master's memory counts; the index hears of the lease
     * before any client could learn that it was granted. */
    int mark = 0;
    served_first(c, &mark);
    arg(c, "SET", 3); /* NX GET: a key of another type says WRONGTYPE at once */
    arg(c, k->locks.v[0], k->locks.len[0]);
    arg_str(c, token);
    arg(c, "NX", 2);
    arg(c, "GET", 3);
    arg(c, "PX", 2);
    arg_num(c, ttl_ms);
    part_end(c, &mark);
    arg(c, "EXISTS", 6); /* anybody queued: then the release takes the script */
    arg(c, k->queues.v[0], k->queues.len[0]);
    part_end(c, &mark);
    index_end(c, token, &mark); /* last: its last argument is the token (rl_late_fn) */
}

void rl_cmd_check(rl_cmd *c, bool moved, uint32_t maxttl_ms, const char *birth)
{
    script(c, RL_SCRIPT_MARKER, 2);
    arg(c, RL_MARKER_KEY, RL_MARKER_KEY_LEN);
    arg(c, RL_HELD_KEY, RL_HELD_KEY_LEN);
    arg_num(c, maxttl_ms);
    arg(c, moved ? "moved" : "", moved ? 5 : 0);
    arg_str(c, birth);
}

void rl_cmd_acquire(rl_cmd *c, const rl_keys *k, const rl_acquire_args *a)
{
    uint32_t n = k->locks.n;
    script(c, RL_SCRIPT_ACQUIRE,
           n + (a->fenced ? n + 1 : 0) + (a->queued ? 2 * n : 0) + (a->marked ? 2 : 0));
    arg_keys(c, &k->locks);
    if (a->fenced) {
        arg_keys(c, &k->fences); /* old per-resource counters, then the master's */
        arg(c, RL_FENCE_KEY, RL_FENCE_KEY_LEN);
    }
    if (a->queued) {
        arg_keys(c, &k->queues);
        arg_keys(c, &k->leases);
    }
    if (a->marked) {
        arg(c, RL_MARKER_KEY, RL_MARKER_KEY_LEN);
        arg(c, RL_HELD_KEY, RL_HELD_KEY_LEN);
    }
    static const char *const flags[8] = { "", "f", "q", "fq", "m", "fm", "qm", "fqm" };
    arg_str(c, a->token);
    arg_num(c, a->ttl_ms);
    arg_num(c, n);
    arg_str(c, flags[(a->fenced ? 1 : 0) | (a->queued ? 2 : 0) | (a->marked ? 4 : 0)]);
    arg_str(c, a->queued ? a->waiter : "");
    arg_num(c, a->ticket);
    arg_num(c, a->lease_ms);
    arg_num(c, a->window_ms);
    if (a->prev)
        arg_str(c, a->prev);
}

void rl_cmd_release(rl_cmd *c, const rl_keys *k, const char *match, bool wake,
                    const rl_place *place)
{
    script(c, RL_SCRIPT_RELEASE, 3 * k->locks.n + 1);
    arg_keys(c, &k->locks);
    arg_keys(c, &k->queues);
    arg_keys(c, &k->leases);
    arg(c, RL_HELD_KEY, RL_HELD_KEY_LEN); /* a key deleted leaves the index */
    arg_str(c, match);
    if (wake && !place)
        return; /* a plain release: the script's defaults (script.c) */
    arg(c, wake ? "1" : "0", 1);
    arg_str(c, place ? place->waiter : "");
    if (place && place->ticket) {
        arg_num(c, place->ticket);
        arg_num(c, place->lease_ms);
    } else {
        arg(c, "", 0);
        arg(c, "0", 1);
    }
}

void rl_cmd_pass(rl_cmd *c, const rl_keys *k, const rl_acquire_args *a)
{
    script(c, RL_SCRIPT_PASS, 5);
    arg(c, k->locks.v[0], k->locks.len[0]);
    arg(c, k->queues.v[0], k->queues.len[0]);
    arg(c, k->leases.v[0], k->leases.len[0]);
    arg(c, RL_MARKER_KEY, RL_MARKER_KEY_LEN);
    arg(c, RL_HELD_KEY, RL_HELD_KEY_LEN);
    arg_str(c, a->token);
    arg_num(c, a->ttl_ms);
    arg_str(c, a->prev);
    arg_str(c, a->waiter);
    arg_num(c, a->window_ms);
    arg(c, a->placed ? "1" : "0", 1);
}

void rl_cmd_release_skip(rl_cmd *c, const rl_keys *k, const char *match, const char *skip)
{
    rl_cmd_release(c, k, match, true, &(rl_place){ "", 0, 0 }); /* no waiter */
    arg_str(c, skip);
}

void rl_cmd_extend(rl_cmd *c, const rl_keys *k, const char *token, uint32_t ttl_ms, bool marked)
{
    /* @marked: the memory marker hears of the new ttl (the memory guard). */
    script(c, RL_SCRIPT_EXTEND, k->locks.n + (marked ? 2 : 0));
    arg_keys(c, &k->locks);
    if (marked) {
        arg(c, RL_MARKER_KEY, RL_MARKER_KEY_LEN);
        arg(c, RL_HELD_KEY, RL_HELD_KEY_LEN);
    }
    arg_str(c, token);
    arg_num(c, ttl_ms);
    arg(c, marked ? "1" : "0", 1);
}

void rl_cmd_release_native(rl_cmd *c, const rl_keys *k, const char *token, bool delex)
{
    /* docs/memory-guard.md, "The release without Lua": two commands,
     * pipelined, no MULTI. The ZREM removes this lease's index entry only (it
     * is named by the token), so it is right whatever the delete does, before
     * or after it: the lease ends with its release (its holder stopped at the
     * call). The delete's 1 is the answer; its 0 (gone, another's, or marked
     * for a waiter: the compare cannot tell) sends the script (wire/release.c),
     * which tells them apart and hands the key on. */
    int mark = 0;
    begin(c, -1);
    c->pipelined = true;
    arg(c, "ZREM", 4);
    arg(c, RL_HELD_KEY, RL_HELD_KEY_LEN);
    arg_str(c, token);
    part_end(c, &mark);
    arg(c, delex ? "DELEX" : "DELIFEQ", delex ? 5 : 7);
    arg(c, k->locks.v[0], k->locks.len[0]);
    if (delex)
        arg(c, "IFEQ", 4);
    arg_str(c, token);
    part_end(c, &mark);
}

void rl_cmd_unindex(rl_cmd *c, const char *token)
{
    begin(c, -1);
    arg(c, "ZREM", 4);
    arg(c, RL_HELD_KEY, RL_HELD_KEY_LEN);
    arg_str(c, token);
}

void rl_cmd_fence(rl_cmd *c, const rl_keys *k, uint64_t value)
{
    script(c, RL_SCRIPT_FENCE, k->fences.n + 1);
    arg(c, RL_FENCE_KEY, RL_FENCE_KEY_LEN);
    arg_keys(c, &k->fences);
    arg_num(c, value);
}

void rl_cmd_status(rl_cmd *c, const rl_keys *k)
{
    script(c, RL_SCRIPT_STATUS, 1);
    arg(c, k->locks.v[0], k->locks.len[0]);
}

void rl_cmd_time(rl_cmd *c)
{
    begin(c, -1);
    arg(c, "TIME", 4);
}

void rl_cmd_marker(rl_cmd *c, int id)
{
    script(c, id, 1);
    arg(c, RL_MARKER_KEY, RL_MARKER_KEY_LEN);
}

void rl_cmd_raise(rl_cmd *c, uint32_t window_ms)
{
    rl_cmd_marker(c, RL_SCRIPT_RAISE);
    arg_num(c, window_ms);
}

void rl_cmd_leases(rl_cmd *c)
{
    script(c, RL_SCRIPT_LEASES, 3);
    arg(c, RL_MARKER_KEY, RL_MARKER_KEY_LEN);
    arg(c, RL_HELD_KEY, RL_HELD_KEY_LEN);
    arg(c, RL_FENCE_KEY, RL_FENCE_KEY_LEN);
}

void rl_cmd_settle(rl_cmd *c, const char *birth, uint32_t window_ms, bool tight, uint64_t fence)
{
    script(c, RL_SCRIPT_SETTLE, 2);
    arg(c, RL_MARKER_KEY, RL_MARKER_KEY_LEN);
    arg(c, RL_FENCE_KEY, RL_FENCE_KEY_LEN);
    arg_str(c, birth);
    arg_num(c, window_ms);
    arg(c, tight ? "1" : "0", 1);
    arg_num(c, fence);
}

void rl_cmd_declare(rl_cmd *c, bool readmit, uint32_t max_ttl_ms, uint64_t fence,
                    uint32_t min_age_ms, const char *birth)
{
    script(c, RL_SCRIPT_DECLARE, 3);
    arg(c, RL_MARKER_KEY, RL_MARKER_KEY_LEN);
    arg(c, RL_HELD_KEY, RL_HELD_KEY_LEN);
    arg(c, RL_FENCE_KEY, RL_FENCE_KEY_LEN);
    arg(c, readmit ? "readmit" : "empty", readmit ? 7 : 5);
    if (max_ttl_ms)
        arg_num(c, max_ttl_ms);
    else
        arg(c, "", 0);
    arg_num(c, fence);
    arg_num(c, min_age_ms);
    arg_str(c, birth);
}
