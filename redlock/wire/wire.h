/* wire.h - what a master's reply means: the typed answer every verb's reader returns.
 *
 * The wire layer owns both directions of a verb: the form each master is
 * sent (planned from that master's capabilities) and the reading of its
 * reply into an rl_answer. The kinds above are to count answers, never raw
 * replies (the acquire reads an rl_grant, a typed answer of its own);
 * what each master is sent, per verb, is docs/wire.md.
 */
#ifndef REDLOCK_WIRE_H
#define REDLOCK_WIRE_H

#include "node/node.h"

/* What a master said, whatever form it was sent. What an answer means to
 * the caller (is GONE released, or lost?) is the kind's to say: the reader
 * only tells the cases apart. */
typedef enum rl_answer_kind {
    RL_ANSWER_DONE,     /* granted, released, extended: the script's 1 */
    RL_ANSWER_GONE,     /* the key is not there (0) */
    RL_ANSWER_HELD,     /* another token holds it (-1) */
    RL_ANSWER_EXCLUDED, /* the master's memory does not count now (-2): code, detail */
    RL_ANSWER_BAD,      /* an error reply, or a shape the verb never sends: code, detail */
} rl_answer_kind;

/* Room for a detail: more than a vote's, so that the vote's cut
 * (rl_vote_set, rl_fit) is made once, from the master's own words. */
#define RL_ANSWER_DETAIL_LEN 256

/* One master's answer, and the side facts its reply taught. A BAD answer
 * with code REDLOCK_EUNAVAIL (LOADING, BUSY) is a master that is there but
 * cannot answer for now: like one that is down, not a misconfigured one. */
typedef struct rl_answer {
    rl_answer_kind kind;
    int code;         /* EXCLUDED, BAD: REDLOCK_E*; else 0 */
    bool redo;        /* the form sent could not do the job here: the slot sends the script */
    unsigned refused; /* RL_NATIVE_* the master claimed but answered wrongly (0: none) */
    char detail[RL_ANSWER_DETAIL_LEN]; /* EXCLUDED, BAD: why, not yet fitted to one line */
} rl_answer;

/* Fill @a: @kind, @code and @detail, no side facts. */
void rl_answer_set(rl_answer *a, rl_answer_kind kind, int code, const char *detail);
/* An error reply as an answer (BAD): its code, and a detail a person can
 * act on (NOAUTH behind a failed AUTH names the AUTH's cause, an ACL denial
 * names the command). */
void rl_answer_error(rl_answer *a, const rl_node *n, const rl_reply *r);
/* A code the release and extend scripts answer with (1, 0, -1; -2 the
 * memory of @n is not trusted), whoever computed it. */
void rl_answer_code(rl_answer *a, const rl_node *n, int code);
/* The release or extend script's reply (@what names it in a BAD detail). */
void rl_answer_script(rl_answer *a, const rl_node *n, const rl_reply *r, const char *what);

#endif
