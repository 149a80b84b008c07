/* result.h - what the opaque results of redlock.h hold.
 *
 * redlock_outcome and redlock_status are opaque to programs (redlock.h says
 * why: their arrays are sized by REDLOCK_MAX_MASTERS, a limit a later
 * library may raise). Inside the library they are plain structs: an op
 * embeds its outcome, a status op its status, and the blocking calls copy
 * them into the caller's object. result.c has the accessors.
 */
#ifndef REDLOCK_RESULT_H
#define REDLOCK_RESULT_H

#include "redlock.h"

struct redlock_outcome {
    int status;          /* what the call returned */
    uint32_t n_masters;  /* N */
    uint32_t quorum;     /* N/2 + 1 */
    uint32_t n_ok;       /* OK votes in the deciding attempt */
    uint32_t attempts;   /* acquire: attempts made (1 + retries used) */
    uint64_t elapsed_us; /* deciding attempt: start to decision, monotonic */
    int64_t validity_ms; /* acquire/extend: validity computed; <= 0 on failure */
    redlock_vote votes[REDLOCK_MAX_MASTERS]; /* deciding attempt, by master index */
};

struct redlock_status {
    uint32_t n_masters;                         /* N */
    uint32_t quorum;                            /* N/2 + 1 */
    uint32_t n_answered;                        /* masters that answered */
    uint32_t n_held;                            /* status: masters where the key exists */
    char majority_token[REDLOCK_TOKEN_MAX + 1]; /* status: token held on a majority, or "" */
    redlock_master_state masters[REDLOCK_MAX_MASTERS];
};

#endif
