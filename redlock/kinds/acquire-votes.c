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

/* The fast path's transaction, answered with nobody queued and the key
 * set: a grant its lock's release may take without Lua (release.c). */
static bool fast_quiet(const rl_reply *r)
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
            n->late_quiet = fast_quiet(r);
        }
        return;
    }
    if (script != RL_SCRIPT_ACQUIRE || rl_reply_type(r) != RL_REPLY_ARRAY ||
        rl_reply_elements(r) < 3)
        return;
    const rl_reply *e = rl_reply_element(r, 2);
    if (rl_reply_type(e) == RL_REPLY_INTEGER)
        acq_heard(n, rl_reply_integer(e));
}

/* A grant by the script (or PASS). A local hand-off's: the passing token
 * is gone there, and a fourth element says whether another client's
 * waiter is queued (handoff.c: the run counts only then). */
static void acq_script_ok(rl_acquire *a, uint32_t idx, const long long *x, size_t k,
                          rl_monotime sent)
{
    if (a->pass_from) {
        a->att.took_mask |= 1u << idx;
        a->att.others |= k == 4 && (x[3] & 2);
    }
    acq_count_ok(a, idx, (uint64_t)x[1], sent);
}

/* The acquire script's answer: {1, fence, maxttl} granted, {0, 0, maxttl}
 * held ({0, 1, maxttl}: a key of the set is reserved for us), {-2, age, maxttl, window} this
 * master's memory is too young to count ({-2, -1, maxttl, 0, birth, age}: reborn, its window
 * not measured yet), {-3, j, maxttl, wrongtype} resource j's fence counter is garbage. */
static void acq_on_script_vote(rl_acquire *a, uint32_t idx, const rl_reply *r, rl_monotime sent)
{
    rl_op *op = &a->op;
    redlock_vote *v = &op->out.votes[idx];
    long long x[4] = { 0, 0, 0, 0 }, since = 0;
    size_t k = rl_reply_elements(r);
    bool ok = k == 3 || k == 4 || k == 6;
    for (size_t i = 0; ok && i < k && i < 4; i++) {
        const rl_reply *e = rl_reply_element(r, i);
        ok = rl_reply_type(e) == RL_REPLY_INTEGER;
        if (ok)
            x[i] = rl_reply_integer(e);
    }
    /* pending: the rebirth it names, which a settle names back, and how
     * long ago it was reborn (ms, the master's clock) */
    const rl_reply *birth = ok && k == 6 ? rl_reply_element(r, 4) : NULL;
    if (birth) {
        const rl_reply *e = rl_reply_element(r, 5);
        ok = x[0] == -2 && x[1] == -1 && rl_reply_type(birth) == RL_REPLY_STRING &&
             rl_reply_type(e) == RL_REPLY_INTEGER && rl_reply_integer(e) >= 0;
        since = ok ? rl_reply_integer(e) : 0;
    }
    if (!ok || x[0] < -3 || x[1] < (x[0] == -2 ? -1 : 0) || x[2] < 0 || x[2] > REDLOCK_TTL_MAX_MS ||
        x[3] < 0 || x[3] > REDLOCK_TTL_MAX_MS) {
        rl_vote_set(v, REDLOCK_VOTE_ERROR, REDLOCK_EPROTO, "malformed reply to the acquire script",
                    sent);
        a->att.n_fail++;
        return;
    }
    redlock_client *c = op->c;
    rl_memory_learned(c, (uint32_t)x[2]);
    acq_heard(&c->nodes[idx], x[2]);
    if (x[0] == 1) {
        acq_script_ok(a, idx, x, k, sent);
    } else if (x[0] == 0) {
        rl_vote_set(v, REDLOCK_VOTE_HELD, REDLOCK_ECONFLICT, "held by another client", sent);
        a->att.n_fail++;
        if (x[1] == 1)
            a->att.reserved_seen = true; /* part of a set is ours: the wake-up was real */
        if (k == 4 && (uint64_t)x[3] < a->att.rank)
            a->att.rank = (uint32_t)x[3]; /* its place in the queue there */
    } else if (x[0] == -3) {
        acq_bad_counter(a, idx, (uint32_t)x[1], x[3] == 1, sent);
    } else {
        /* What the master says of itself; the last CHECK on it may know
         * more (the cause, the window): the vote says what the node knows. */
        rl_node *n = &c->nodes[idx];
        rl_marker m = { .age_ms = x[1] < 0 ? since : x[1],
                        .window_ms = (uint32_t)x[3],
                        .maxttl_ms = (uint32_t)x[2],
                        .state = x[1] < 0 ? RL_MEM_PENDING : RL_MEM_YOUNG,
                        .cause = n->trust.mem_cause ? n->trust.mem_cause : RL_MEM_CAUSE_LOST,
                        .birth = birth ? rl_reply_str(birth, NULL) : NULL };
        rl_node_marker(n, &m);
        char d[REDLOCK_VOTE_DETAIL_LEN];
        if (!rl_trust_memory_young(&n->trust, rl_now_us(), d, sizeof(d)))
            snprintf(d, sizeof(d), "memory not trusted yet");
        rl_vote_set(v, REDLOCK_VOTE_EXCLUDED, REDLOCK_EUNTRUSTED, d, sent);
        a->att.n_fail++;
    }
}

/* The fast path's transaction (acquire.c): [served, SET NX GET's answer,
 * EXISTS queue's, ZADD's] (cmd.h). A grant with nobody queued may be
 * released without Lua on that master (quiet_mask, release.c).
 * A master whose marker is not `served` (gone: FLUSHALL, eviction; or its
 * window not passed) does not count, whatever the SET did (a key it wrote
 * carries our token, and the cleanup removes it like any other): its
 * memory is asked at once, and its next votes take the script, which
 * reborn it or tells its window. */
static void acq_on_fast_vote(rl_acquire *a, uint32_t idx, const rl_reply *r, rl_monotime sent)
{
    rl_op *op = &a->op;
    redlock_vote *v = &op->out.votes[idx];
    rl_node *n = &op->c->nodes[idx];
    const rl_reply *e[4];
    bool ok = rl_reply_elements(r) == 4;
    for (size_t i = 0; ok && i < 4; i++)
        e[i] = rl_reply_element(r, i);
    for (size_t i = 0; ok && i < 4; i++) {
        if (rl_reply_type(e[i]) == RL_REPLY_ERROR) {
            rl_vote_error_reply(v, n, e[i], sent); /* WRONGTYPE marker or index, ... */
            a->att.n_fail++;
            return;
        }
    }
    /* SET NX GET: nil when it set the key, the holder's value when not. */
    int old = ok ? rl_reply_type(e[1]) : 0;
    int served = ok ? rl_node_served(n, e[0], a->att.window_ms) : -1;
    if (served < 0 || (old != RL_REPLY_NIL && old != RL_REPLY_STRING) ||
        rl_reply_type(e[2]) != RL_REPLY_INTEGER || rl_reply_type(e[3]) != RL_REPLY_INTEGER) {
        rl_vote_set(v, REDLOCK_VOTE_ERROR, REDLOCK_EPROTO, "malformed reply to the acquire", sent);
        a->att.n_fail++;
        return;
    }
    if (served == RL_UNSERVED) {
        rl_vote_set(v, REDLOCK_VOTE_EXCLUDED, REDLOCK_EUNTRUSTED,
                    "memory marker gone or its window not over: checking it", sent);
        a->att.n_fail++;
    } else if (served == RL_SHORT) {
        /* Counts, but its marker's bound is below this window: an
         * operator lowered it. The next attempt takes the script, which
         * raises it (rl_node_served). */
        rl_vote_set(v, REDLOCK_VOTE_EXCLUDED, REDLOCK_EUNTRUSTED,
                    "its marker's longest ttl is below this lock's: raising it", sent);
        a->att.n_fail++;
    } else if (old == RL_REPLY_STRING) {
        rl_vote_set(v, REDLOCK_VOTE_HELD, REDLOCK_ECONFLICT, "held by another client", sent);
        a->att.n_fail++;
    } else {
        if (fast_quiet(r))
            a->att.quiet_mask |= 1u << idx;
        acq_count_ok(a, idx, 0, sent);
    }
}

static void acq_on_set_vote(rl_acquire *a, uint32_t idx, const rl_reply *r, int err,
                            const char *why, rl_monotime sent)
{
    rl_op *op = &a->op;
    redlock_vote *v = &op->out.votes[idx];
    int type = r ? rl_reply_type(r) : 0;
    if (!r) {
        rl_vote_failed(v, err, why, sent);
        a->att.n_fail++;
    } else if (rl_reply_is_status(r, "OK")) {
        acq_count_ok(a, idx, 0, sent);
    } else if (type == RL_REPLY_ARRAY && (a->att.fast_mask & (1u << idx))) {
        acq_on_fast_vote(a, idx, r, sent);
    } else if (type == RL_REPLY_ARRAY) {
        acq_on_script_vote(a, idx, r, sent);
    } else if (type == RL_REPLY_NIL) {
        /* NX refused: the key exists. It could also be a key of another
         * type; the cleanup release tells the two apart. */
        rl_vote_set(v, REDLOCK_VOTE_HELD, REDLOCK_ECONFLICT, "held by another client", sent);
        a->att.n_fail++;
    } else if (type == RL_REPLY_ERROR) {
        rl_vote_error_reply(v, &op->c->nodes[idx], r, sent);
        a->att.n_fail++;
    } else {
        char d[64];
        snprintf(d, sizeof(d), "unexpected %s reply to the acquire", rl_reply_type_name(type));
        rl_vote_set(v, REDLOCK_VOTE_ERROR, REDLOCK_EPROTO, d, sent);
        a->att.n_fail++;
    }
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
