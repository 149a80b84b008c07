/* outcome.c - from votes to one status code and one line a person can act on.
 *
 * The rule users care about most: "locked by another client" and "Redis is
 * broken" are never the same error. A failed attempt is a conflict only when
 * the masters that answered normally (OK or held) could have formed a
 * majority; a misconfiguration code (AUTH, WRONGTYPE, garbage, error reply)
 * is reported as itself when it alone denies the quorum; everything else is
 * "no quorum", with the failing masters named.
 */
#include "outcome.h"

#include <stdio.h>
#include <string.h>

/* An error reply as a vote. A command queued behind a failed AUTH gets
 * NOAUTH from the master; the real cause (AUTH failed: WRONGPASS ...) is on
 * the node, and that is what the user needs to read. */
void rl_vote_error_reply(redlock_vote *v, const rl_node *n, const rl_reply *r,
                         rl_monotime sent_us)
{
    size_t len;
    const char *str = rl_reply_str(r, &len);
    int code = rl_classify_error_reply(str, len);
    const char *detail = str;
    if (code == REDLOCK_EAUTH && n->err == REDLOCK_EAUTH && n->errstr[0])
        detail = n->errstr;
    else if (code == REDLOCK_EAUTH && len >= 6 && memcmp(str, "NOAUTH", 6) == 0)
        detail = "the master requires a password (none was given: set one)";
    /* LOADING, BUSY: the master is there but cannot answer for now, like
     * one that is down, not one that is misconfigured. */
    rl_vote_set(v, code == REDLOCK_EUNAVAIL ? REDLOCK_VOTE_DOWN : REDLOCK_VOTE_ERROR, code,
                detail, sent_us);
}

/* The release and extend scripts answer 1 (done), 0 (key gone), -1 (held by
 * another token). @gone_err is what "gone" means to the caller: nothing
 * for a release (already expired counts as released), ENOTHELD for extend. */
int rl_vote_script_reply(redlock_vote *v, const rl_node *n, const rl_reply *r,
                         rl_monotime sent_us, const char *what, int gone_err)
{
    int type = rl_reply_type(r);
    long long i = type == RL_REPLY_INTEGER ? rl_reply_integer(r) : 2;
    if (i == 1) {
        rl_vote_set(v, REDLOCK_VOTE_OK, 0, "", sent_us);
    } else if (i == 0) {
        rl_vote_set(v, REDLOCK_VOTE_GONE, gone_err,
                    gone_err ? "key expired or deleted" : "already expired", sent_us);
    } else if (i == -1) {
        rl_vote_set(v, REDLOCK_VOTE_HELD, REDLOCK_ENOTHELD, "held by another token", sent_us);
    } else if (type == RL_REPLY_ERROR) {
        rl_vote_error_reply(v, n, r, sent_us);
    } else {
        char d[80];
        snprintf(d, sizeof(d), "unexpected %s reply to the %s script",
                 type == RL_REPLY_INTEGER ? "integer" : rl_reply_type_name(type), what);
        rl_vote_set(v, REDLOCK_VOTE_ERROR, REDLOCK_EPROTO, d, sent_us);
    }
    return v->kind;
}

static const char *hint(int code)
{
    switch (code) {
    case REDLOCK_EAUTH: return "check the password (and the ACL user, if any)";
    case REDLOCK_EWRONGTYPE:
        return "another program stores a non-string under this key: use a key prefix "
               "or another resource name";
    case REDLOCK_EPROTO: return "is that address a Redis server?";
    default: return "see the master's log";
    }
}

int rl_outcome_failure(const rl_op *op, const char *what, redlock_error *e)
{
    const redlock_client *c = op->c;
    int kind_ = op->ops->kind;
    uint32_t n = c->n, q = c->quorum;
    uint32_t ok = 0, gone = 0, held = 0, pending = 0, per_code[32] = {0};
    for (uint32_t i = 0; i < n; i++) {
        const redlock_vote *v = &op->out.votes[i];
        switch (v->kind) {
        case REDLOCK_VOTE_OK: ok++; break;
        case REDLOCK_VOTE_GONE: gone++; break;
        case REDLOCK_VOTE_HELD: held++; break;
        case REDLOCK_VOTE_PENDING: pending++; break;
        case REDLOCK_VOTE_ERROR:
            if (v->err < 0 && -v->err < 32)
                per_code[-v->err]++;
            break;
        default: break;
        }
    }
    bool release = kind_ == REDLOCK_OP_RELEASE;
    bool extend = kind_ == REDLOCK_OP_EXTEND;
    uint32_t good = ok + (release ? gone : 0);

    /* Somebody else has it: the masters not known to be broken (answered
     * normally, or not answered yet when an early failure was decided)
     * could have formed a majority. Counting the pending ones keeps the
     * verdict independent of which replies happened to arrive first. */
    if (kind_ == REDLOCK_OP_ACQUIRE && held > 0 && good + held + pending >= q) {
        rl_seterr(e, REDLOCK_ECONFLICT, -1,
                  "acquire: resource is held by another client on %u of %u masters "
                  "(retry later, or wait longer before giving up)", held, n);
        return REDLOCK_ECONFLICT;
    }
    /* We lost it: only when a majority says so, each master for itself
     * (another token there; for an extend, also our key gone). Masters that
     * timed out, are down or failed may still hold our token: with them the
     * outcome is unknown, which is no quorum, never "not held". */
    uint32_t not_ours = held + (extend ? gone : 0);
    if ((release || extend) && not_ours >= q) {
        rl_seterr(e, REDLOCK_ENOTHELD, -1,
                  "%s: this token no longer holds the lock: another token holds it on %u and it "
                  "is gone from %u of %u masters (it expired, and may have been taken); acquire "
                  "again", what, held, gone, n);
        return REDLOCK_ENOTHELD;
    }

    static const int setup_codes[] = { REDLOCK_EAUTH, REDLOCK_EWRONGTYPE, REDLOCK_EPROTO,
                                       REDLOCK_EREPLY };
    for (size_t k = 0; k < sizeof(setup_codes) / sizeof(setup_codes[0]); k++) {
        int code = setup_codes[k];
        if (per_code[-code] > n - q) {
            int m = -1;
            for (uint32_t i = 0; i < n && m < 0; i++)
                if (op->out.votes[i].kind == REDLOCK_VOTE_ERROR && op->out.votes[i].err == code)
                    m = (int)i;
            rl_seterr(e, code, m, "%s: master %s: %s (%s; %u of %u masters fail this way)",
                      what, c->nodes[m].addr.name, op->out.votes[m].detail, hint(code),
                      per_code[-code], n);
            return code;
        }
    }

    /* No quorum: name the failing masters, as many as fit on the line. */
    char line[REDLOCK_ERRMSG_LEN];
    uint32_t failed = 0;
    for (uint32_t i = 0; i < n; i++) {
        int k = op->out.votes[i].kind;
        if (k != REDLOCK_VOTE_OK && k != REDLOCK_VOTE_GONE && k != REDLOCK_VOTE_NONE &&
            k != REDLOCK_VOTE_PENDING)
            failed++;
    }
    int len = snprintf(line, sizeof(line), "%s: no quorum: %u of %u masters failed, %u %s, %u needed",
                       what, failed, n, good, release ? "released" : "agreed", q);
    int first = -1, listed = 0, more = 0;
    for (uint32_t i = 0; i < n; i++) {
        const redlock_vote *v = &op->out.votes[i];
        if (v->kind == REDLOCK_VOTE_OK || v->kind == REDLOCK_VOTE_GONE ||
            v->kind == REDLOCK_VOTE_NONE || v->kind == REDLOCK_VOTE_PENDING)
            continue;
        if (first < 0)
            first = (int)i;
        char part[200];
        int pl = snprintf(part, sizeof(part), "; %s: %s", c->nodes[i].addr.name,
                          v->detail[0] ? v->detail : redlock_vote_kind_name(v->kind));
        if (len >= 0 && (size_t)len + (size_t)pl + 12 < sizeof(line)) {
            memcpy(line + len, part, (size_t)pl + 1);
            len += pl;
            listed++;
        } else {
            more++;
        }
    }
    if (more && len >= 0 && (size_t)len + 12 < sizeof(line))
        snprintf(line + len, sizeof(line) - (size_t)len, " (+%d more)", more);
    (void)listed;
    rl_seterr(e, REDLOCK_ENOQUORUM, -1, "%s", line);
    return REDLOCK_ENOQUORUM;
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
