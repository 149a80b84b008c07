/* op.h - the operation core: the life of one request, whatever its kind.
 *
 * An op (libuv's "request") is one acquire, release, extend, status or ping.
 * The core owns what kinds share: a place in the client's list, rounds of
 * votes, the kind's timer, delivery (op hook, then completion or the kind's
 * deliver hook); it knows a kind only through its hooks (rl_op_ops). Layers:
 * docs/map.md, "`redlock/`"; delivery's rule: docs/threads.md, first point.
 */
#ifndef REDLOCK_OP_H
#define REDLOCK_OP_H

#include "core/types.h"

typedef struct rl_op rl_op;

/* How outcome.c reads the votes of a round that failed (rl_op_ops.verdict):
 * what "held" and "gone" mean to the kind.
 *   HELD_CONFLICTS  a holder's token is another client's lock: ECONFLICT
 *                   (acquire)
 *   GONE_DONE       a key already gone counts as done: "released" (release)
 *   HELD_LOST       a majority holding another token means ours is lost:
 *                   ENOTHELD (release, extend)
 *   GONE_LOST       ... and a key gone counts toward that majority (extend) */
#define RL_VERDICT_HELD_CONFLICTS 0x1u
#define RL_VERDICT_GONE_DONE 0x2u
#define RL_VERDICT_HELD_LOST 0x4u
#define RL_VERDICT_GONE_LOST 0x8u

typedef struct rl_op_ops {
    int kind;         /* enum redlock_op_kind, for the op hook; opaque here */
    const char *name; /* "acquire", ... for messages */
    unsigned verdict; /* RL_VERDICT_* */
    /* Record one master's answer to the current round: @r, or NULL with
     * @err/@why (down, refused, timed out). @sent_us: when it was asked. */
    void (*on_vote)(rl_op *op, uint32_t idx, const rl_reply *r, int err, const char *why,
                    rl_monotime sent_us);
    /* Look at what the round has so far and decide: finish the op, start
     * another round, or wait for more answers. Runs after each batch of
     * answers, and once when a round starts. */
    void (*decide)(rl_op *op);
    /* The kind's own timer (rl_op_arm) fired. Optional. */
    void (*on_timer)(rl_op *op);
    /* Stop early with @status (cancelled): clean up on the masters, then
     * rl_op_finish. Optional: without it the op just finishes. */
    void (*cancel)(rl_op *op, int status);
    /* Hand a result that is not a lock to the user (status, ping, declare).
     * Optional: without it the core runs op->cb with op->lock. The op is
     * finished and off the list. */
    void (*deliver)(rl_op *op);
    /* Free what the kind owns beyond the op itself. Optional. */
    void (*destroy)(rl_op *op);
} rl_op_ops;

struct rl_op {
    const rl_op_ops *ops;
    redlock_client *c;
    rl_op *prev, *next; /* the client's ops in flight */
    rl_op *done_next;   /* the client's delivery queue */
    bool done;
    int status;

    /* What the core delivers (deliver.c) when the kind has no deliver
     * hook: the one completion shape of acquire, release and extend. */
    redlock_done_cb cb;
    void *arg;
    redlock_lock *lock; /* acquire: set only by success, then the callback's
                           owner's; release/extend: the caller's, NULL once
                           the watchdog let go of it */

    /* the current round of votes */
    rl_fanout *round;                        /* NULL between rounds */
    uint32_t round_seq;                      /* bumped by every round: a decide that started
                                                a new one tells the core to stop */
    uint32_t sent_mask;                      /* masters the round's command went to */
    uint32_t pending_mask;                   /* counted masters that have not answered */
    uint32_t counted_mask;                   /* masters whose answers count */
    uint32_t server_mask;                    /* masters whose OK counted this round ... */
    uint64_t server_id[REDLOCK_MAX_MASTERS]; /* ... and their run_id's hash (identity.c) */
    rl_timer round_timer;                    /* the node timeout of the current round */
    rl_timer timer;                          /* the kind's own (retry delay, ...) */

    uint32_t trace_id;       /* its id in the trace (trace.c); 0: not tracing */
    rl_monotime trace_att;   /* the attempt the trace last announced */
    rl_monotime decided_us;  /* when a success measured its validity (the trace's
                                DEC time) */
    uint32_t decided_ttl_ms; /* the ttl it measured it from (the trace's DEC ttl;
                                0: the lock's), kept when the lock is gone */
    rl_monotime started_us;  /* the call */
    rl_monotime attempt_us;  /* start of the current (finally: deciding) attempt */
    uint32_t attempts;

    rl_keys k;     /* the locks (prefix + resource) and, as asked,
                      their fence counters, queues and lease sets */
    char *keymem;  /* owns every key of k */
    uint32_t nres; /* resources */
    size_t size;   /* of the kind's struct, for the op cache (op.c) */

    redlock_outcome out;
    redlock_error err;
};

/* Which keys besides the locks an op needs (rl_op_new). */
#define RL_KEYS_FENCE 0x1u /* fence counters */
#define RL_KEYS_QUEUE 0x2u /* waiters' queues and lease sets */

/* Allocate @size bytes (a kind's struct that starts with an rl_op), put it
 * on the client's list, build the keys of @set; *@ret on success. 0,
 * REDLOCK_ESHUTDOWN (the client is being freed), REDLOCK_ENOMEM (@e says). */
int rl_op_new(redlock_client *c, const rl_op_ops *ops, size_t size, const redlock_resource *set,
              size_t count, unsigned keys, rl_op **ret, redlock_error *e);

/* The kind's timer. */
void rl_op_arm(rl_op *op, uint32_t ms);
void rl_op_disarm(rl_op *op);

/* How a round is sent and read (rl_round_start's @how).
 *   PRIORITY  may use the headroom above max_inflight: the command pairs
 *             with a SET that was admitted (a release, an extend, a cleanup)
 *   VOTES     the round's answers are the outcome's votes: those masters'
 *             votes start as PENDING */
#define RL_ROUND_PRIORITY 0x1u
#define RL_ROUND_VOTES 0x2u

/* A new round: @f goes to every master in @send; answers count from those
 * in @count (a subset); @how: RL_ROUND_* flags. Masters that fail at once
 * are reported through on_vote; then decide runs once. The round before is
 * dropped. */
void rl_round_start(rl_op *op, rl_fanout *f, uint32_t send, uint32_t count, unsigned how);
/* The same, from @cmd: the fanout is made here. Out of memory finishes the
 * op with ENOMEM (@what names the command in the message). @send and
 * @count: RL_ALL for every master. */
#define RL_ALL UINT32_MAX
void rl_round_send(rl_op *op, const rl_cmd *cmd, const char *what, uint32_t send, uint32_t count,
                   unsigned how);
/* Stop the current round: later answers are dropped. */
void rl_round_end(rl_op *op);

/* A quorum just reached: too late to count (RL_QUORUM_MAX_MS after the
 * attempt's start, with the memory guard on)? Then the op's error says so,
 * naming @what ("acquire", "extend"), and the caller fails the attempt with
 * REDLOCK_ETIMEOUT. A reborn master's fleet is measured only that long
 * after its rebirth (memory.c): a later quorum could rest on a vote it
 * gave before and forgot. */
bool rl_quorum_late(rl_op *op, const char *what);

/* Decided: record @status, end the round and timers, queue for delivery. */
void rl_op_finish(rl_op *op, int status);
/* Ask the op to stop with @status (its kind may clean up first). */
void rl_op_cancel(rl_op *op, int status);

/* Fill a vote: @kind, @err, a one-line @detail, latency from @sent_us. */
void rl_vote_set(redlock_vote *v, int kind, int err, const char *detail, rl_monotime sent_us);
/* A vote that failed: TIMEOUT, DOWN or ERROR by @err, with @why. */
void rl_vote_failed(redlock_vote *v, int err, const char *why, rl_monotime sent_us);

/* For delivery (deliver.c), which stands above this core. */
/* Free a delivered op, or keep it for the client's next (the op cache). */
void rl_op_free(rl_op *op);
/* Free the ops the client kept. */
void rl_op_cache_free(redlock_client *c);
/* Deliveries running on this thread, of any client (on_deliver counts
 * them): a callback of one client that starts an op on another client of
 * the same loop must not have that op delivered in this same pass either
 * (two clients retrying into each other would hold the loop forever). */
extern _Thread_local int rl_deliver_depth;
/* The delivery of ops that finished inside a delivery waits this long, not
 * 0 ms: a 0 ms timer may run again in the same pass (libevent's table makes
 * it active; a raw libuv 1.44 timer runs before the poll), and a caller
 * that retries from its failure callback must not keep any loop from its
 * sockets. */
#define RL_DELIVER_LATER_MS 1

#endif
