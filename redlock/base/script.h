/* script.h - the Lua scripts every master runs, and their SHA1 digests.
 * What each is sent and answers, beside the other forms: docs/wire.md. */
#ifndef REDLOCK_SCRIPT_H
#define REDLOCK_SCRIPT_H

enum rl_script {
    RL_SCRIPT_RELEASE, /* every key: 1 deleted (some ours), 0 all absent, -1 one held by another */
    RL_SCRIPT_EXTEND,  /* all keys ours: pexpire all, 1; one absent: 0; one another's: -1 */
    RL_SCRIPT_STATUS,  /* {value or false, pttl} */
    RL_SCRIPT_ACQUIRE, /* sets: all keys or none; fenced: returns the max counter */
    RL_SCRIPT_FENCE,   /* counter = max(counter, value) on every key */
    RL_SCRIPT_MARKER,  /* CHECK: who the master is; {age, window, maxttl, state, cause, now, birth}
                        */
    RL_SCRIPT_DECLARE, /* an empty master's marker counts at once: 1, 0 already, -keys */
    RL_SCRIPT_RAISE,   /* lengthen a running window set from the bound: 1 */
    RL_SCRIPT_LEASES,  /* {counts, ms left of the latest lease, maxttl, fence[, token]} */
    RL_SCRIPT_SETTLE,  /* a pending master's window: 1 settled, 0 not pending */
    RL_SCRIPT_PASS,    /* a local hand-off's common case: {1, 0, maxttl, bits}, or {-4}: ask
                          the acquire script */
    RL_SCRIPT_COUNT
};

/* The memory marker's key (it starts with a NUL: no lock key can be it). */
#define RL_MARKER_KEY "\0redlock:marker"
#define RL_MARKER_KEY_LEN (sizeof(RL_MARKER_KEY) - 1)
/* The index of lock keys granted while trusted (a set; script.c). */
#define RL_HELD_KEY "\0redlock:held"
#define RL_HELD_KEY_LEN (sizeof(RL_HELD_KEY) - 1)

/* The master's fence counter: one for every resource (script.c). */
#define RL_FENCE_KEY "\0redlock:fence"
#define RL_FENCE_KEY_LEN (sizeof(RL_FENCE_KEY) - 1)

const char *rl_script_body(int id);
const char *rl_script_sha(int id); /* 40 hex chars */
int rl_scripts_init(void);         /* idempotent, thread-safe */

#endif
