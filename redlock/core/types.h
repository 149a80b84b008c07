/* types.h - the client and lock structures, shared by the files above the nodes.
 *
 * struct redlock_client (its nodes, ops, delivery queue, waiters) and the
 * lock a caller holds. Where one acquire goes through these, file by file:
 * docs/map.md, "One redlock_acquire(), file by file"; who owns an op and a
 * fanout: docs/threads.md, "Who owns what".
 */
#ifndef REDLOCK_TYPES_H
#define REDLOCK_TYPES_H

#include "base/common.h"
#include "base/reactor.h"
#include "core/fanout.h"
#include "core/metrics.h"
#include "node/node.h"
#include "base/result.h"

struct rl_blocking;
struct rl_watchdog;
struct rl_wait;
struct rl_ready;
typedef struct rl_op rl_op;

/* Resources this client found held within RL_HOT_MS, remembered by hash in
 * this many slots: a waiter for one of them queues from its first attempt
 * instead of trying the fast path first (acquire-queue.c). */
#define RL_HOT_SLOTS 64
#define RL_HOT_MS 1000

/* Keys this client acquired and has neither released nor seen expire,
 * remembered by hash in this many slots (lock.c): an acquire that meets a
 * holder tells the reentrant case at once. A collision only forgets one. */
#define RL_MINE_SLOTS 64

/* Freed ops a client keeps for its next ones (op.c): room for acquires
 * and releases of a few dozen in flight, at most about 200 kB. */
#define RL_OP_CACHE 64

struct redlock_client {
    redlock_config cfg; /* a full copy; the strings below own its strings */
    char *strs;         /* every string of cfg, copied in one block */
    size_t prefix_len;
    struct event_base *base; /* blocking client: its private base; else NULL */
    redlock_loop loop;       /* what the client runs on: every watch and timer */
    bool owns_base;          /* blocking client: private base + I/O thread */
    bool freeing;
    uint32_t n;      /* masters */
    uint32_t quorum; /* n/2 + 1 */
    rl_node nodes[REDLOCK_MAX_MASTERS];
    rl_node_env env;              /* what the nodes see of us */
    rl_tls *tls;                  /* NULL: no master uses TLS */
    rl_op *ops;                   /* in flight, not yet delivered */
    rl_op *done_head, *done_tail; /* finished, waiting for delivery */
    rl_timer deliver;             /* runs the delivery queue (deliver.c) */
    struct rl_op_cached {         /* freed ops kept for the next, with their timers (op.c) */
        rl_op *op;
        size_t size;
    } op_cache[RL_OP_CACHE];
    uint32_t n_op_cache;
    struct rl_blocking *blk;  /* NULL for async clients */
    uint64_t rng;             /* xorshift state for retry jitter */
    rl_timer probe;           /* clock monitor: TIME to every master */
    uint32_t max_ttl_ms;      /* longest ttl requested so far */
    uint32_t fleet_ttl_ms;    /* longest ttl any master's memory marker reported */
    uint32_t asked_window_ms; /* longest memory window an acquire asked for (memory.c) */
    struct rl_settle *settle; /* measuring a reborn master's window (memory.c) */
    struct rl_watchdog *wds;  /* running watchdogs */
    struct rl_wait *wait;     /* waiting for locks (wait.c) */
    struct rl_hot {           /* resources found held lately (acquire-queue.c) */
        uint64_t hash;
        rl_monotime until;
    } hot[RL_HOT_SLOTS];
    struct rl_mine {       /* keys this client acquired and holds (lock.c) */
        uint64_t hash;     /* of the key (prefix included); 0: free slot */
        rl_monotime until; /* the lease's validity end, as the lock says */
        char token[RL_TOKEN_LEN + 1];
    } mine[RL_MINE_SLOTS];
    struct rl_ready *ready;              /* readiness waiters (ready.c) */
    int in_callback;                     /* inside a user callback run by the library */
    bool free_requested;                 /* redlock_client_free() was called from one */
    void (*destroy)(redlock_client *c);  /* client.c's teardown, for the deferred free */
    void (*shutdown)(redlock_client *c); /* client.c: end every op and watchdog (loop thread) */
    rl_metrics metrics;                  /* counted on the loop thread, read by any (metrics.h) */
};

struct redlock_lock {
    uint32_t n;       /* resources */
    const char **res; /* n names (point into mem) */
    size_t *len;
    char *mem;
    char token[REDLOCK_TOKEN_MAX + 1];
    uint32_t ttl_ms;
    uint64_t fence;                   /* 0 unless fenced */
    uint32_t quiet_mask;              /* masters that granted it by the fast path with
                                         nobody queued: its release may go without Lua
                                         there (release.c) */
    uint32_t guess_mask;              /* masters whose fast-path answer had not come when
                                         it was granted, every master that answered having
                                         granted as above: likely so too (acquire.c) */
    rl_monotime valid_until_us;       /* monotonic; 0: no validity known. Read and written
                                         only through rl_lock_valid_until/_set: with a
                                         blocking client the watchdog's I/O thread
                                         writes it while the holder's thread reads */
    rl_monotime granted_us;           /* when its acquire decided (hold time); 0: unknown */
    uint32_t run;                     /* grants in a row by this client's local hand-offs
                                         while another client waited, this one's counted
                                         (handoff.c): none pass past local_run_max */
    struct rl_watchdog *wd;           /* running watchdog, or NULL */
    void (*on_free)(redlock_lock *l); /* set while a watchdog runs: stops it first */
};

static inline rl_monotime rl_lock_valid_until(const redlock_lock *l)
{
    return __atomic_load_n(&l->valid_until_us, __ATOMIC_RELAXED);
}

static inline void rl_lock_set_valid_until(redlock_lock *l, rl_monotime t)
{
    __atomic_store_n(&l->valid_until_us, t, __ATOMIC_RELAXED);
}

/* Around every user callback the library runs from the loop: a
 * redlock_client_free() inside it is deferred (as hiredis does) until the
 * callback returned. rl_client_leave() returns true if the client is gone. */
static inline void rl_client_enter(redlock_client *c)
{
    c->in_callback++;
}

static inline bool rl_client_leave(redlock_client *c)
{
    if (--c->in_callback == 0 && c->free_requested) {
        c->destroy(c);
        return true;
    }
    return false;
}

/* The one check, at every start (an op: rl_op_new; a readiness waiter; a
 * watchdog), of a client being freed: nothing new begins once its free
 * has started, from a callback the free runs or from another start. */
static inline int rl_client_live(const redlock_client *c, redlock_error *e)
{
    if (!c->freeing)
        return 0;
    rl_seterr(e, REDLOCK_ESHUTDOWN, -1, "client is being freed");
    return REDLOCK_ESHUTDOWN;
}

/* A uniform random number in 0..n (the client's xorshift: jitter only). */
static inline uint32_t rl_client_jitter(redlock_client *c, uint32_t n)
{
    c->rng ^= c->rng << 13;
    c->rng ^= c->rng >> 7;
    c->rng ^= c->rng << 17;
    return n ? (uint32_t)(c->rng % ((uint64_t)n + 1)) : 0;
}

#endif
