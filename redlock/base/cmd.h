/* cmd.h - the commands we send to masters, one builder each.
 *
 * One home for each argument layout (script.c documents what each script
 * reads; docs/wire.md has every form in one table, with what each reply
 * means). A builder points into the caller's memory; rl_fanout_new() copies
 * what it gets, so every master is sent the same bytes.
 */
#ifndef REDLOCK_CMD_H
#define REDLOCK_CMD_H

#include "base/common.h"

/* A list of keys, as a command wants them. */
typedef struct rl_keyset {
    uint32_t n;
    const char **v;
    size_t *len;
} rl_keyset;

/* The keys an operation works on (op.c builds them once): the locks, and
 * per lock its fence counter, waiters' queue and lease set. */
typedef struct rl_keys {
    rl_keyset locks, fences, queues, leases;
} rl_keys;

#define RL_CMD_ARGS_MAX (16 + 5 * REDLOCK_SET_MAX)
#define RL_CMD_PARTS_MAX 6

typedef struct rl_cmd {
    int script;     /* enum rl_script, or -1 for a plain command */
    int nparts;     /* > 0: a transaction of this many commands, sent
                       between MULTI and EXEC; part_argc[i] arguments each */
    bool pipelined; /* ... or, set: the commands one after another, no
                       MULTI (none needs the others' step); the last
                       one's reply is the answer */
    int part_argc[RL_CMD_PARTS_MAX];
    int node_arg; /* > 0: the argument whose value each master gets
                     its own of (rl_fanout_set_node_arg) */
    int argc;
    const char *argv[RL_CMD_ARGS_MAX];
    size_t len[RL_CMD_ARGS_MAX];
    char nums[8][24]; /* numbers printed for the command */
    int nnums;
} rl_cmd;

/* What an acquire attempt asks of each master. */
typedef struct rl_acquire_args {
    const char *token;
    uint32_t ttl_ms;
    bool fenced;
    bool queued;        /* a waiter: join the queue when held */
    bool marked;        /* check the memory marker */
    const char *waiter; /* queued: "hand|channel|id" */
    uint64_t ticket;    /* queued: when it started waiting (µs, real time) */
    uint32_t lease_ms;  /* queued: how long its place lasts without news */
    uint32_t window_ms; /* marked: the memory window asked for */
    const char *prev;   /* a local hand-off: the passing holder's token, or NULL */
    bool placed;        /* ... the waiter may have a place in the queues already */
} rl_acquire_args;

/* SET key token NX PX ttl: one lock, no fence, no queue, no marker. */
void rl_cmd_set(rl_cmd *c, const rl_keys *k, const char *token, uint32_t ttl_ms);
/* The fast path's acquire (acquire.c): one lock, no fence, no queue, on a
 * master whose memory counts. A transaction, atomic on the master:
 *   HMGET marker served maxttl; SET key token NX GET PX ttl; EXISTS queue;
 *   ZADD held GT end token
 * (reply: [[served or nil, maxttl or nil], nil if set or the holder's
 * value, 0|1, 0|1]; a
 * key of another type: WRONGTYPE in the SET's place). The lease end `end`
 * is the node argument: each master's own clock (0 until set). EXISTS
 * says whether anybody was queued when the key was granted: only a lease
 * granted with nobody queued may be released without Lua (release.c). */
void rl_cmd_acquire_fast(rl_cmd *c, const rl_keys *k, const char *token, uint32_t ttl_ms);
/* The CHECK script (script.c): the marker and the index of held keys.
 * @moved: the connection reaches the master at a new address of its name
 * (the server is made reborn). A marker made here has a fleet bound of at
 * least @maxttl_ms and names its rebirth @birth (a fresh random value). */
void rl_cmd_check(rl_cmd *c, bool moved, uint32_t maxttl_ms, const char *birth);
void rl_cmd_acquire(rl_cmd *c, const rl_keys *k, const rl_acquire_args *a);
/* A waiter's place in the queues, as a release changes it: @waiter leaves
 * them (@ticket 0), or keeps its place (its @ticket and @lease_ms). */
typedef struct rl_place {
    const char *waiter;
    uint64_t ticket;
    uint32_t lease_ms;
} rl_place;

/* Remove @match from the locks and hand each key to its next waiter (a
 * DEL where nobody waits), waking it if @wake: a release and a waiter giving
 * up (@match its reservation; @place leaves) wake; a failed attempt's
 * cleanup (its waiter, if any, keeps its @place) never does. @place may be
 * NULL. */
void rl_cmd_release(rl_cmd *c, const rl_keys *k, const char *match, bool wake,
                    const rl_place *place);
/* The PASS script (script.c): a local hand-off's common case, for one lock
 * and no fence, the acquire's @a with @a->prev set. */
void rl_cmd_pass(rl_cmd *c, const rl_keys *k, const rl_acquire_args *a);
/* The same as a release (@wake, no place), handing each key to the first
 * live waiter of another client than the one on channel @skip, if one is
 * queued (a local run that reached its bound: docs/waiting.md). */
void rl_cmd_release_skip(rl_cmd *c, const rl_keys *k, const char *match, const char *skip);
void rl_cmd_extend(rl_cmd *c, const rl_keys *k, const char *token, uint32_t ttl_ms, bool marked);
/* The release without Lua, on a master with a native compare-and-delete
 * (wire/release.c): one lock, two commands pipelined, no MULTI:
 *   ZREM held token; DELIFEQ key token (or, @delex, DELEX key IFEQ token)
 * (the answer: the delete's 1 or 0). A value marked for waiters is not
 * deleted: the release script must hand the key on (fanout.c's redo). */
void rl_cmd_release_native(rl_cmd *c, const rl_keys *k, const char *token, bool delex);
/* ZREM held token: the index entry the fast path's transaction wrote
 * where its SET was refused (it cannot refuse the ZADD): a lease that
 * never was, which LEASES would report live until its end. */
void rl_cmd_unindex(rl_cmd *c, const char *token);
void rl_cmd_fence(rl_cmd *c, const rl_keys *k, uint64_t value);
void rl_cmd_status(rl_cmd *c, const rl_keys *k);
void rl_cmd_time(rl_cmd *c);
void rl_cmd_marker(rl_cmd *c, int script); /* a script of the marker alone */
/* declare-empty, or (@readmit) readmit with the fleet bound @max_ttl_ms
 * (0: kept); a master made to count has its fence counter raised to
 * @fence first, and only if it was reborn at least @min_age_ms ago on its
 * clock (a master without a marker is reborn as @birth). */
void rl_cmd_declare(rl_cmd *c, bool readmit, uint32_t max_ttl_ms, uint64_t fence,
                    uint32_t min_age_ms, const char *birth);
void rl_cmd_raise(rl_cmd *c, uint32_t window_ms);
/* The memory guard's fleet-wide steps (memory.c): how long may the leases
 * a master granted still live, and its fence counter; a pending master's
 * window, for the rebirth @birth it named, and the largest fence counter
 * the fleet reported, which its own is raised to. */
void rl_cmd_leases(rl_cmd *c);
void rl_cmd_settle(rl_cmd *c, const char *birth, uint32_t window_ms, bool tight, uint64_t fence);

#endif
