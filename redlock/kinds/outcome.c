/* outcome.c - from votes to one status code and one line a person can act on.
 *
 * A failed attempt is a conflict only when the masters that answered
 * normally could have formed a majority; a misconfiguration code is itself
 * when it alone denies the quorum; else "no quorum", failing masters named.
 * Why: docs/errors.md, "Held by another client" vs "Redis is broken".
 */
#include "kinds/outcome.h"

#include <stdio.h>
#include <string.h>

/* What a vote makes of an answer: what "gone" means is the caller's. */
int rl_vote_answer(redlock_vote *v, const rl_answer *a, rl_monotime sent_us, int gone_err)
{
    switch (a->kind) {
    case RL_ANSWER_DONE: rl_vote_set(v, REDLOCK_VOTE_OK, 0, "", sent_us); break;
    case RL_ANSWER_GONE:
        rl_vote_set(v, REDLOCK_VOTE_GONE, gone_err,
                    gone_err ? "key expired or deleted" : "already expired", sent_us);
        break;
    case RL_ANSWER_HELD:
        rl_vote_set(v, REDLOCK_VOTE_HELD, REDLOCK_ENOTHELD, "held by another token", sent_us);
        break;
    case RL_ANSWER_EXCLUDED:
        rl_vote_set(v, REDLOCK_VOTE_EXCLUDED, a->code, a->detail, sent_us);
        break;
    case RL_ANSWER_BAD:
        /* LOADING, BUSY: the master is there but cannot answer for now,
         * like one that is down, not one that is misconfigured. */
        rl_vote_set(v, a->code == REDLOCK_EUNAVAIL ? REDLOCK_VOTE_DOWN : REDLOCK_VOTE_ERROR,
                    a->code, a->detail, sent_us);
        break;
    }
    return v->kind;
}

void rl_vote_error_reply(redlock_vote *v, const rl_node *n, const rl_reply *r, rl_monotime sent_us)
{
    rl_answer a;
    rl_answer_error(&a, n, r);
    rl_vote_answer(v, &a, sent_us, 0);
}

static const char *hint(int code, const char *detail)
{
    switch (code) {
    case REDLOCK_EAUTH: return "check the password (and the ACL user, if any)";
    case REDLOCK_EWRONGTYPE:
        /* A counter going back would hand out a fence twice: no reset. */
        if (strncmp(detail, "fence counter ", 14) == 0)
            return "SET it to the largest fence any master handed out, never lower";
        return "another program stores a non-string under this key: use a key prefix "
               "or another resource name";
    case REDLOCK_EPROTO: return "is that address a Redis server?";
    case REDLOCK_EREPLY:
        /* Full for now, with maxmemory-policy noeviction (the one that
         * never evicts a lock): it passes as keys expire. */
        if (strncmp(detail, "OOM ", 4) == 0)
            return "the master is at its maxmemory: free memory or raise maxmemory";
        return "see the master's log";
    default: return "see the master's log";
    }
}

/* The votes of one attempt, counted by what they say. */
typedef struct tally {
    uint32_t ok, gone, held, pending, failed;
    uint32_t per_code[32]; /* error votes, by -REDLOCK_E* */
} tally;

static bool counts_as_answer(int kind)
{
    return kind == REDLOCK_VOTE_OK || kind == REDLOCK_VOTE_GONE || kind == REDLOCK_VOTE_NONE ||
           kind == REDLOCK_VOTE_PENDING;
}

static void count_votes(const rl_op *op, tally *t)
{
    *t = (tally){ 0 };
    for (uint32_t i = 0; i < op->c->n; i++) {
        const redlock_vote *v = &op->out.votes[i];
        t->ok += v->kind == REDLOCK_VOTE_OK;
        t->gone += v->kind == REDLOCK_VOTE_GONE;
        t->held += v->kind == REDLOCK_VOTE_HELD;
        t->pending += v->kind == REDLOCK_VOTE_PENDING;
        t->failed += !counts_as_answer(v->kind);
        if (v->kind == REDLOCK_VOTE_ERROR && v->err < 0 && -v->err < 32)
            t->per_code[-v->err]++;
    }
}

/* A misconfiguration that alone denies the quorum is reported as itself,
 * with the first master that shows it. 0 if there is none. */
static int setup_failure(const rl_op *op, const tally *t, const char *what, redlock_error *e)
{
    static const int codes[] = { REDLOCK_EAUTH, REDLOCK_EWRONGTYPE, REDLOCK_EPROTO,
                                 REDLOCK_EREPLY };
    const redlock_client *c = op->c;
    for (size_t k = 0; k < sizeof(codes) / sizeof(codes[0]); k++) {
        int code = codes[k];
        if (t->per_code[-code] <= c->n - c->quorum)
            continue;
        uint32_t m = 0;
        while (op->out.votes[m].kind != REDLOCK_VOTE_ERROR || op->out.votes[m].err != code)
            m++;
        /* A detail that carries its own advice (TLS's, "is this a Redis
         * server?") needs no second one. */
        const char *d = op->out.votes[m].detail;
        size_t dl = strlen(d);
        bool advised = strncmp(d, "TLS", 3) == 0 || (dl > 1 && strcmp(d + dl - 2, "?)") == 0);
        char tail[192];
        snprintf(tail, sizeof(tail), " (%s%s%u of %u masters fail this way)",
                 advised                      ? ""
                 : strncmp(d, "ACL:", 4) == 0 ? "grant what README's ACL section lists"
                                              : hint(code, d),
                 advised ? "" : "; ", t->per_code[-code], c->n);
        /* The end says what to do and how many masters: a long address
         * (a URL, a socket path) and a long detail are cut to keep it,
         * the detail keeping at least half of the room left. */
        char name[RL_NAME_MAX], det[REDLOCK_VOTE_DETAIL_LEN];
        size_t room = sizeof(e->msg) - 1 - strlen(what) - strlen(": master : ") - strlen(tail);
        size_t nl = strlen(c->nodes[m].addr.name);
        size_t keep_d = dl < room / 2 ? dl : room / 2;
        size_t name_room = room - keep_d;
        rl_fit(name, nl < name_room ? nl + 1 : name_room + 1, c->nodes[m].addr.name);
        size_t det_room = room - strlen(name) + 1;
        rl_fit(det, det_room < sizeof(det) ? det_room : sizeof(det), d);
        rl_seterr(e, code, (int)m, "%s: master %s: %s%s", what, name, det, tail);
        return code;
    }
    return 0;
}

/* No quorum: name the failing masters, as many as fit on one line. */
static int no_quorum(const rl_op *op, const tally *t, uint32_t good, const char *what,
                     redlock_error *e)
{
    const redlock_client *c = op->c;
    char line[REDLOCK_ERRMSG_LEN];
    int len = snprintf(line, sizeof(line),
                       "%s: no quorum: %u of %u masters failed, %u %s, %u needed", what, t->failed,
                       c->n, good,
                       (op->ops->verdict & RL_VERDICT_GONE_DONE) ? "released" : "agreed",
                       c->quorum);
    int more = 0, named = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        const redlock_vote *v = &op->out.votes[i];
        if (counts_as_answer(v->kind))
            continue;
        const char *name = c->nodes[i].addr.name;
        const char *why = v->detail[0] ? v->detail : redlock_vote_kind_name(v->kind);
        char part[sizeof(line)], cut[RL_NAME_MAX];
        int pl = snprintf(part, sizeof(part), "; %s: %s", name, why);
        /* One master is always named, with what it said: a long address
         * (a URL, a socket path) is cut to make room for its words. */
        size_t room = len >= 0 ? sizeof(line) - 12 - (size_t)len : 0, wl = strlen(why);
        if (pl > 0 && (size_t)pl >= room && named == 0 && room > wl + 4 + 16) {
            rl_fit(cut, room - wl - 4 < sizeof(cut) ? room - wl - 4 : sizeof(cut), name);
            pl = snprintf(part, sizeof(part), "; %s: %s", cut, why);
        }
        if (len >= 0 && (size_t)len + (size_t)pl + 12 < sizeof(line)) {
            memcpy(line + len, part, (size_t)pl + 1);
            len += pl;
            named++;
        } else {
            more++;
        }
    }
    if (more && len >= 0 && (size_t)len + 12 < sizeof(line))
        snprintf(line + len, sizeof(line) - (size_t)len, " (+%d more)", more);
    rl_seterr(e, REDLOCK_ENOQUORUM, -1, "%s", line);
    return REDLOCK_ENOQUORUM;
}

int rl_outcome_failure(const rl_op *op, redlock_error *e)
{
    const redlock_client *c = op->c;
    const char *what = op->ops->name;
    unsigned verdict = op->ops->verdict;
    tally t;
    count_votes(op, &t);
    uint32_t good = t.ok + ((verdict & RL_VERDICT_GONE_DONE) ? t.gone : 0);

    /* Somebody else has it: the masters not known to be broken (answered
     * normally, or not answered yet when an early failure was decided)
     * could have formed a majority. Counting the pending ones keeps the
     * verdict independent of which replies happened to arrive first. */
    if ((verdict & RL_VERDICT_HELD_CONFLICTS) && t.held > 0 &&
        good + t.held + t.pending >= c->quorum) {
        rl_seterr(e, REDLOCK_ECONFLICT, -1,
                  "acquire: resource is held by another client on %u of %u masters "
                  "(retry later, or wait longer before giving up)",
                  t.held, c->n);
        return REDLOCK_ECONFLICT;
    }
    /* We lost it: only when a majority says so, each master for itself
     * (another token there; for an extend, also our key gone). Masters that
     * timed out, are down or failed may still hold our token: with them the
     * outcome is unknown, which is no quorum, never "not held". */
    uint32_t lost = t.held + ((verdict & RL_VERDICT_GONE_LOST) ? t.gone : 0);
    if ((verdict & RL_VERDICT_HELD_LOST) && lost >= c->quorum) {
        rl_seterr(e, REDLOCK_ENOTHELD, -1,
                  "%s: this token no longer holds the lock: another token holds it on %u and it "
                  "is gone from %u of %u masters (it expired, and may have been taken); acquire "
                  "again",
                  what, t.held, t.gone, c->n);
        return REDLOCK_ENOTHELD;
    }
    int code = setup_failure(op, &t, what, e);
    return code ? code : no_quorum(op, &t, good, what, e);
}

const char *redlock_vote_kind_name(int kind)
{
    switch (kind) {
    case REDLOCK_VOTE_NONE: return "none";
    case REDLOCK_VOTE_PENDING: return "pending";
    case REDLOCK_VOTE_OK: return "ok";
    case REDLOCK_VOTE_HELD: return "held";
    case REDLOCK_VOTE_GONE: return "gone";
    case REDLOCK_VOTE_TIMEOUT: return "timeout";
    case REDLOCK_VOTE_DOWN: return "down";
    case REDLOCK_VOTE_ERROR: return "error";
    case REDLOCK_VOTE_EXCLUDED: return "excluded";
    }
    return "unknown";
}
