/* wire.c - the readings every verb shares: an error reply, a script's code.
 *
 * A master's error reply, and the 1 / 0 / -1 / -2 the release and extend
 * scripts answer with, mean the same whichever verb asked; each verb's own
 * reader (wire/release.c, wire/extend.c) starts from these. What a vote makes of an
 * answer is the kinds' (kinds/outcome.c).
 */
#include "wire/wire.h"

#include <stdio.h>
#include <string.h>

void rl_answer_set(rl_answer *a, rl_answer_kind kind, int code, const char *detail)
{
    a->kind = kind;
    a->code = code;
    a->redo = false;
    a->refused = 0;
    snprintf(a->detail, sizeof(a->detail), "%s", detail);
}

/* A command queued behind a failed AUTH gets NOAUTH from the master; the
 * real cause (AUTH failed: WRONGPASS ...) is on the node, and that is what
 * the user needs to read. */
void rl_answer_error(rl_answer *a, const rl_node *n, const rl_reply *r)
{
    size_t len;
    const char *str = rl_reply_str(r, &len);
    int code = rl_classify_error_reply(str, len);
    const char *detail = str;
    char acl[REDLOCK_VOTE_DETAIL_LEN];
    if (code == REDLOCK_EAUTH && n->err == REDLOCK_EAUTH && n->errstr[0]) {
        detail = n->errstr;
    } else if (code == REDLOCK_EAUTH && len >= 6 && memcmp(str, "NOAUTH", 6) == 0) {
        detail = "the master requires a password (none was given: set one)";
    } else if (rl_reply_is_acl_denial(str, len)) {
        /* Not a password problem: the user is known, its ACL lacks a
         * command, a key or a channel redlock uses. Name it. */
        const char *q = memchr(str, '\'', len);
        const char *q2 = q ? memchr(q + 1, '\'', len - (size_t)(q + 1 - str)) : NULL;
        if (q && q2)
            snprintf(acl, sizeof(acl), "ACL: the user may not run %.*s", (int)(q2 - q + 1), q);
        else
            snprintf(acl, sizeof(acl), "ACL: the user may not run a command (or key) redlock uses");
        detail = acl;
    }
    /* Redis 7 ends an error raised inside a script with " script: <sha>,
     * on @user_script:<line>.": ours, and nothing the user can act on. */
    char cut[RL_ANSWER_DETAIL_LEN]; /* the vote (rl_vote_set) cuts it to fit, and says so */
    const char *tail = detail == str ? strstr(str, " script: ") : NULL;
    if (tail) {
        snprintf(cut, sizeof(cut), "%.*s", (int)(tail - str), str);
        detail = cut;
    }
    rl_answer_set(a, RL_ANSWER_BAD, code, detail);
}

void rl_answer_code(rl_answer *a, const rl_node *n, int code)
{
    if (code == 1) {
        rl_answer_set(a, RL_ANSWER_DONE, 0, "");
    } else if (code == 0) {
        rl_answer_set(a, RL_ANSWER_GONE, 0, "");
    } else if (code == -1) {
        rl_answer_set(a, RL_ANSWER_HELD, 0, "");
    } else {
        /* -2: the extend script on a master whose memory is not trusted
         * (a reborn master may hold our key from an old snapshot). */
        char d[REDLOCK_VOTE_DETAIL_LEN];
        if (!rl_trust_memory_young(&n->trust, rl_now_us(), d, sizeof(d)))
            snprintf(d, sizeof(d), "memory not trusted: it lost its data or restarted");
        rl_answer_set(a, RL_ANSWER_EXCLUDED, REDLOCK_EUNTRUSTED, d);
    }
}

void rl_answer_script(rl_answer *a, const rl_node *n, const rl_reply *r, const char *what)
{
    int type = rl_reply_type(r);
    if (type == RL_REPLY_INTEGER && rl_reply_integer(r) >= -2 && rl_reply_integer(r) <= 1) {
        rl_answer_code(a, n, (int)rl_reply_integer(r));
    } else if (type == RL_REPLY_ERROR) {
        rl_answer_error(a, n, r);
    } else {
        char d[80];
        snprintf(d, sizeof(d), "unexpected %s reply to the %s script",
                 type == RL_REPLY_INTEGER ? "integer" : rl_reply_type_name(type), what);
        rl_answer_set(a, RL_ANSWER_BAD, REDLOCK_EPROTO, d);
    }
}
