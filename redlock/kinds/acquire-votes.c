/* acquire-votes.c - what one master's answer to an acquire round means.
 *
 * The SET round's answer in each of its three forms (plain SET, the fast
 * path's transaction, the acquire script), the fence write-back's acks, and
 * the cleanup's answers (a key of another type or a real holder); each
 * becomes a vote and a count acquire.c decides on. What each reply means:
 * docs/wire.md, "Per verb".
 */
#include "kinds/acquire-private.h"
#include "kinds/identity.h"
#include "kinds/memory.h"
#include "kinds/outcome.h"
#include "base/script.h"
#include "wire/acquire.h"

#include <stdio.h>
#include <string.h>

/* ---- votes ------------------------------------------------------------------- */

/* An OK from master @idx, unless that master's word does not count now. */
static void acq_count_ok(rl_acquire *a, uint32_t idx, uint64_t fence, rl_monotime sent)
{
    rl_op *op = &a->op;
    redlock_vote *v = &op->out.votes[idx];
    char w[REDLOCK_VOTE_DETAIL_LEN];
    /* Checked again on the OK itself: facts about a master (its clock, its
     * eviction policy) can change while the SET is in flight. */
    if (!rl_node_vote_counts(&op->c->nodes[idx], w, sizeof(w))) {
        rl_vote_set(v, REDLOCK_VOTE_EXCLUDED, REDLOCK_EUNTRUSTED, w, sent);
        a->att.n_fail++;
        return;
    }
    /* One redis-server behind two entries holds one key, not two: its
     * second OK is no vote (identity.c). */
    if (rl_round_same_server(op, idx, w, sizeof(w))) {
        rl_vote_set(v, REDLOCK_VOTE_EXCLUDED, REDLOCK_EINVAL, w, sent);
        a->att.n_fail++;
        return;
    }
    rl_vote_set(v, REDLOCK_VOTE_OK, 0, "", sent);
    a->att.n_ok++;
    if (fence > a->att.fence)
        a->att.fence = fence;
}

/* Master @idx keeps garbage in the fence counter of resource @j: it is
 * named, as the key at fault, and nothing was written. Not repaired: only
 * an operator knows which value is safe (never below a fence handed out). */
static void acq_bad_counter(rl_acquire *a, uint32_t idx, uint32_t j, bool wrongtype,
                            rl_monotime sent)
{
    rl_op *op = &a->op;
    redlock_client *c = op->c;
    char d[REDLOCK_VOTE_DETAIL_LEN];
    if (j >= op->k.locks.n) { /* the master's own counter */
        snprintf(d, sizeof(d), "fence counter \\0redlock:fence %s",
                 wrongtype ? "is not a string" : "is not an integer");
        rl_vote_set(&op->out.votes[idx], REDLOCK_VOTE_ERROR, REDLOCK_EWRONGTYPE, d, sent);
        a->att.n_fail++;
        return;
    }
    int len = (int)(op->k.locks.len[j] - c->prefix_len);
    snprintf(d, sizeof(d), "fence counter %.*s\\0fence %s", len > 40 ? 40 : len,
             op->k.locks.v[j] + c->prefix_len, wrongtype ? "is not a string" : "is not an integer");
    rl_vote_set(&op->out.votes[idx], REDLOCK_VOTE_ERROR, REDLOCK_EWRONGTYPE, d, sent);
    a->att.n_fail++;
}

/* The marker's bound after the acquire script raised it (its third
 * element): what the fast path asks of a master (rl_trust_fast). */
static void acq_heard(rl_node *n, long long maxttl)
{
    if (maxttl > (long long)n->trust.maxttl_ms && maxttl <= REDLOCK_TTL_MAX_MS)
        n->trust.maxttl_ms = (uint32_t)maxttl;
}

void rl_acq_on_late(rl_node *n, int script, const rl_reply *r, const char *last, size_t len)
{
    if (script < 0) {
        /* A fast-path answer after its acquire decided: its token is the
         * transaction's last argument (cmd.c). The node remembers the last
         * such token and whether it was a grant with nobody queued, which
         * the lock's release asks for. */
        if (len < sizeof(n->late_token)) {
            memcpy(n->late_token, last, len);
            n->late_token[len] = '\0';
            n->late_quiet = rl_wire_fast_quiet(r);
        }
        return;
    }
    if (script == RL_SCRIPT_ACQUIRE)
        acq_heard(n, rl_wire_acquire_late_maxttl(r));
}

/* A grant, whichever form. A local hand-off's (PASS): the passing token
 * is gone there, and the answer says whether another client's waiter is
 * queued (acquire-pass.c: the run counts only then). */
static void acq_granted(rl_acquire *a, uint32_t idx, const rl_grant *g, rl_monotime sent)
{
    if (a->pass_from) {
        a->att.took_mask |= 1u << idx;
        a->att.others |= g->others;
    }
    acq_count_ok(a, idx, g->fence, sent);
}

/* The script's -2: what the master says of itself; the last CHECK on it
 * may know more (the cause, the window): the vote says what the node knows. */
static void acq_young(rl_acquire *a, uint32_t idx, const rl_grant *g, rl_monotime sent)
{
    rl_node *n = &a->op.c->nodes[idx];
    rl_marker m = { .age_ms = g->age_ms,
                    .window_ms = g->window_ms,
                    .maxttl_ms = (uint32_t)g->maxttl_ms,
                    .state = g->pending ? RL_MEM_PENDING : RL_MEM_YOUNG,
                    .cause = n->trust.mem_cause ? n->trust.mem_cause : RL_MEM_CAUSE_LOST,
                    .birth = g->birth };
    rl_node_marker(n, &m);
    char d[REDLOCK_VOTE_DETAIL_LEN];
    if (!rl_trust_memory_young(&n->trust, rl_now_us(), d, sizeof(d)))
        snprintf(d, sizeof(d), "memory not trusted yet");
    rl_vote_set(&a->op.out.votes[idx], REDLOCK_VOTE_EXCLUDED, REDLOCK_EUNTRUSTED, d, sent);
}

/* What one master's answer (wire/acquire.c) makes of this attempt. A fast
 * path's grant with nobody queued may be released without Lua on that
 * master (quiet_mask, release.c). A fast path's master whose marker is not
 * `served` (gone: FLUSHALL, eviction; or its window not passed) does not
 * count, whatever the SET did (a key it wrote carries our token, and the
 * cleanup removes it like any other): its memory is asked at once, and its
 * next votes take the script, which reborn it or tells its window. */
static void acq_on_grant(rl_acquire *a, uint32_t idx, const rl_grant *g, rl_monotime sent)
{
    redlock_vote *v = &a->op.out.votes[idx];
    switch (g->kind) {
    case RL_GRANT_OK:
        if (g->quiet)
            a->att.quiet_mask |= 1u << idx;
        acq_granted(a, idx, g, sent);
        return; /* counted there */
    case RL_GRANT_HELD:
        rl_vote_set(v, REDLOCK_VOTE_HELD, REDLOCK_ECONFLICT, "held by another client", sent);
        if (g->reserved)
            a->att.reserved_seen = true; /* part of a set is ours: the wake-up was real */
        if (g->rank < a->att.rank)
            a->att.rank = g->rank; /* its place in the queue there */
        break;
    case RL_GRANT_YOUNG: acq_young(a, idx, g, sent); break;
    case RL_GRANT_UNSERVED:
        rl_vote_set(v, REDLOCK_VOTE_EXCLUDED, REDLOCK_EUNTRUSTED,
                    "memory marker gone or its window not over: checking it", sent);
        break;
    case RL_GRANT_SHORT:
        /* Counts, but its marker's bound is below this window: an operator
         * lowered it. The next attempt takes the script, which raises it. */
        rl_vote_set(v, REDLOCK_VOTE_EXCLUDED, REDLOCK_EUNTRUSTED,
                    "its marker's longest ttl is below this lock's: raising it", sent);
        break;
    case RL_GRANT_BAD_COUNTER:
        acq_bad_counter(a, idx, g->counter, g->wrongtype, sent);
        return; /* counted there */
    case RL_GRANT_BAD: rl_vote_answer(v, &g->bad, sent, 0); break;
    }
    a->att.n_fail++;
}

static void acq_on_set_vote(rl_acquire *a, uint32_t idx, const rl_reply *r, int err,
                            const char *why, rl_monotime sent)
{
    rl_op *op = &a->op;
    if (!r) {
        rl_vote_failed(&op->out.votes[idx], err, why, sent);
        a->att.n_fail++;
        return;
    }
    rl_node *n = &op->c->nodes[idx];
    rl_grant g;
    rl_wire_acquire_read(&g, n, r, a->att.fast_mask & (1u << idx) ? RL_FORM_FAST : RL_FORM_SCRIPT,
                         a->att.window_ms);
    /* The side facts first, whatever the vote: the marker's bound the
     * script said (the fast path asks it of a master: rl_trust_fast), or a
     * marker that did not serve this window. */
    if (g.maxttl_ms >= 0) {
        rl_memory_learned(op->c, (uint32_t)g.maxttl_ms);
        acq_heard(n, g.maxttl_ms);
    }
    rl_node_not_served(n, g.served, g.bound_ms);
    acq_on_grant(a, idx, &g, sent);
}

/* The fence write-back: an acknowledgement or not (the vote vector keeps
 * what the acquire itself saw). */
static void acq_on_fence_ack(rl_acquire *a, uint32_t idx, const rl_reply *r)
{
    char w[REDLOCK_VOTE_DETAIL_LEN];
    if (r && rl_reply_type(r) == RL_REPLY_INTEGER && rl_reply_integer(r) == 1 &&
        !rl_round_same_server(&a->op, idx, w, sizeof(w)))
        a->att.n_ok++;
    else
        a->att.n_fail++;
}

/* After a failed attempt: a WRONGTYPE from the cleanup release turns a
 * "held" vote into what it really was: a key of another type under our
 * name, which no amount of waiting will free. */
static void acq_on_cleanup(rl_acquire *a, uint32_t idx, const rl_reply *r)
{
    redlock_vote *v = &a->op.out.votes[idx];
    /* 1: our token was there, so this attempt's SET found the key free or
     * reserved for us, even if its answer came after the decision. */
    if (r && rl_reply_type(r) == RL_REPLY_INTEGER && rl_reply_integer(r) == 1) {
        a->att.found = true;
        if (a->pass_from) /* a pass granted late: the passing token is gone here too */
            a->att.took_mask |= 1u << idx;
    }
    size_t len;
    const char *s = r && rl_reply_type(r) == RL_REPLY_ERROR ? rl_reply_str(r, &len) : NULL;
    if (s && v->kind == REDLOCK_VOTE_HELD &&
        rl_classify_error_reply(s, len) == REDLOCK_EWRONGTYPE) {
        v->kind = REDLOCK_VOTE_ERROR;
        v->err = REDLOCK_EWRONGTYPE;
        snprintf(v->detail, sizeof(v->detail), "key holds a non-string value (WRONGTYPE)");
    }
}

void rl_acq_on_vote(rl_op *op, uint32_t idx, const rl_reply *r, int err, const char *why,
                    rl_monotime sent)
{
    rl_acquire *a = ACQ(op);
    switch (a->phase) {
    case ACQ_VOTING: acq_on_set_vote(a, idx, r, err, why, sent); break;
    case ACQ_FENCING: acq_on_fence_ack(a, idx, r); break;
    case ACQ_CLEANUP: acq_on_cleanup(a, idx, r); break;
    }
}
