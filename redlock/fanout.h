/* fanout.h - one command, sent to every master, whose replies may outlive its owner. */
#ifndef REDLOCK_FANOUT_H
#define REDLOCK_FANOUT_H

#include "node.h"

enum rl_cmd {
    RL_CMD_SET,          /* one key, no fence: plain SET NX PX */
    RL_CMD_ACQUIRE,      /* several keys and/or fenced: the acquire script */
    RL_CMD_FENCE,        /* fence write-back */
    RL_CMD_RELEASE,      /* compare-token DEL; wakes waiters */
    RL_CMD_CLEANUP,      /* the same after a failed attempt: wakes nobody */
    RL_CMD_EXTEND, RL_CMD_STATUS, RL_CMD_TIME
};

/* A list of keys, as the command wants them. */
typedef struct rl_keyset {
    uint32_t n;
    const char **v;
    size_t *len;
} rl_keyset;

typedef struct rl_fanout rl_fanout;

/* The owner's per-master handler: @r is the reply (valid during the call),
 * or NULL with @err/@why saying why the master failed. */
typedef void rl_vote_fn(void *owner, rl_fanout *f, uint32_t idx, const rl_reply *r, int err,
                        const char *why);

/* @keys: the lock keys; @fences: their counter keys (fenced acquire, fence
 * write-back), else NULL; @value: the fence to write back. NULL on OOM. */
rl_fanout *rl_fanout_new(rl_node *nodes, int cmd, const rl_keyset *keys,
                         const rl_keyset *fences, const char *token, uint32_t ttl_ms,
                         uint64_t value);
/* Who gets the replies (before anything is sent). */
void rl_fanout_set_owner(rl_fanout *f, rl_vote_fn *fn, void *owner);
/* 0, or REDLOCK_E* (the master failed at once: no vote will come; the
 * node's errstr says why). */
int rl_fanout_send(rl_fanout *f, uint32_t idx, bool priority);
/* When the command was sent to master @idx. */
rl_monotime rl_fanout_sent_us(const rl_fanout *f, uint32_t idx);
int rl_fanout_cmd(const rl_fanout *f);
/* The owner lets go: later replies are dropped, memory goes with the last. */
void rl_fanout_detach(rl_fanout *f);

#endif
