/* internal.h - the private structures of libredlock and how they fit.
 *
 * Where a lock request goes, in one sitting:
 *
 *   redlock_acquire()          blocking.c  queue the request for the I/O thread
 *     -> redlock_acquire_async acquire.c   one rl_op: the whole acquire, all attempts
 *       -> rl_fanout_new/send  fanout.c    SET key token NX PX ttl to every master
 *         -> rl_node_send      node.c      onto that master's hiredis connection
 *       <- rl_fanout_on_reply  fanout.c    a reply (or NULL: connection failed)
 *     <- acq_on_vote           acquire.c   count; decide at majority or at
 *                                          "majority impossible"; node timer
 *     <- rl_op_complete        client.c    deferred to the loop; user callback
 *
 * Ownership in one paragraph: an rl_op belongs to the client until its
 * callback has run. An rl_fanout belongs to itself: it holds one reference
 * per command still queued at hiredis plus one for its owner, so a reply that
 * arrives after the op decided (or timed out, or was freed) lands in a live
 * fanout whose owner pointer is NULL, and is dropped there. Nothing that a
 * late reply can reach is ever freed under it.
 */
#ifndef REDLOCK_INTERNAL_H
#define REDLOCK_INTERNAL_H

#include "redlock.h"
#include "monitor.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <event2/event.h>

/* ---- time ---------------------------------------------------------------- */

/* µs on CLOCK_MONOTONIC: the type says which clock a value came from. */
typedef uint64_t rl_monotime;
rl_monotime rl_now_us(void);

/* ---- errors (error.c) ---------------------------------------------------- */

void rl_seterr(redlock_error *e, int code, int master, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- logging (log.c) ----------------------------------------------------- */

void rl_log_emit(const redlock_client *c, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Checks the level before formatting anything, like serverLog. */
#define rl_log(c, level, ...)                                                   \
    do {                                                                        \
        if ((c)->cfg.log_fn && (level) >= (c)->cfg.log_level)                   \
            rl_log_emit((c), (level), __VA_ARGS__);                             \
    } while (0)

/* ---- tokens (token.c) ---------------------------------------------------- */

#define RL_TOKEN_BYTES 16                      /* 128 bits */
#define RL_TOKEN_LEN (RL_TOKEN_BYTES * 2)      /* hex */
int rl_token_new(char out[RL_TOKEN_LEN + 1]);
uint64_t rl_random_u64(void);

/* ---- scripts (script.c) -------------------------------------------------- */

enum rl_script {
    RL_SCRIPT_RELEASE,   /* every key: 1 deleted (some ours), 0 all absent, -1 one held by another */
    RL_SCRIPT_EXTEND,    /* all keys ours: pexpire all, 1; one absent: 0; one another's: -1 */
    RL_SCRIPT_STATUS,    /* {value or false, pttl} */
    RL_SCRIPT_ACQUIRE,   /* sets: all keys or none; fenced: returns the max counter */
    RL_SCRIPT_FENCE,     /* counter = max(counter, value) on every key */
    RL_SCRIPT_COUNT
};
const char *rl_script_body(int id);
const char *rl_script_sha(int id);   /* 40 hex chars */
int rl_scripts_init(void);           /* idempotent, thread-safe */

/* ---- event adapter (ev.c) ------------------------------------------------ */

int rl_ev_attach(redisAsyncContext *ac, struct event_base *base);

/* ---- nodes (node.c) ------------------------------------------------------ */

enum rl_node_state { RL_NODE_DOWN, RL_NODE_CONNECTING, RL_NODE_UP };

typedef struct rl_node {
    redlock_client *c;
    uint32_t idx;
    char addr[280];               /* "host:port" as configured, for messages */
    char ip[64];                  /* resolved once at client_new */
    int port;
    redisAsyncContext *ac;        /* NULL while down; hiredis may free it itself */
    int state;                    /* enum rl_node_state */
    uint32_t inflight;            /* commands queued at hiredis, awaiting a reply */
    uint32_t backoff_ms;          /* next reconnect delay */
    struct event *timer;          /* reconnect backoff, or the connect deadline */
    int err;                      /* why it is (or last was) down: REDLOCK_E* */
    char errstr[REDLOCK_VOTE_DETAIL_LEN];
    uint64_t connects;            /* successful handshakes, for logs and tests */
    redisAsyncContext *sub;       /* pub/sub connection (waiting), or NULL */
    bool sub_up;                  /* subscribed to every watched channel */

    /* clock monitor (drift/monitor.h) */
    drift_monitor clock;
    bool probe_out;               /* a TIME probe is in flight */
    rl_monotime probe_send_us;

    /* restart guard: what INFO said at the last handshake */
    char run_id[41];              /* "" until the first INFO reply */
    int64_t uptime_s;
    rl_monotime started_us;       /* monotonic estimate of the master's start
                                     (now - uptime at the INFO reply); 0 unknown */
    bool restart_seen;            /* run_id changed while we knew the master */
    bool aof_always;              /* appendonly yes and appendfsync always */

    const char *refused;          /* what the reply guard refused last, or NULL */
} rl_node;

/* Should @n's vote not count now, for an op with @ttl_ms? Writes why. */
bool rl_node_excluded(const rl_node *n, uint32_t ttl_ms, char *why, size_t len);
/* Send a TIME probe if none is in flight (client.c's probe timer). */
void rl_node_probe(rl_node *n);

int rl_node_init(rl_node *n, redlock_client *c, uint32_t idx);
void rl_node_start(rl_node *n);
void rl_node_close(rl_node *n);

/* Queue one command. Returns 0 (fn will run exactly once, with a reply or
 * NULL), or a REDLOCK_E* code with n->errstr saying why (fn never runs).
 * @priority commands (releases that pair with an admitted SET) may use up to
 * twice max_inflight, so cleanup is never refused where its SET was taken. */
int rl_node_send(rl_node *n, redisCallbackFn *fn, void *privdata, int argc,
                 const char **argv, const size_t *argvlen, bool priority);

/* Called by reply callbacks for every reply: keeps inflight exact and, on a
 * NULL reply, records why the connection failed. */
void rl_node_reply_seen(rl_node *n, const redisAsyncContext *ac, const redisReply *r);

/* Build @ac's replies through checks that refuse what hiredis 0.14.1 would
 * crash on (an unsolicited reply, a malformed pub/sub reply) or allocate
 * blindly (a huge array): the connection fails instead, as EPROTO. @ac->data
 * must be its rl_node (the pub/sub connection: the node's ->sub). */
void rl_node_guard_replies(redisAsyncContext *ac);

/* A TIME reply as µs: false unless two bulk strings of digits, seconds up
 * to 2^40 and microseconds below 10^6, so no arithmetic on it overflows. */
bool rl_time_reply(const redisReply *r, int64_t *ret_us);

/* ---- fan-out (fanout.c) -------------------------------------------------- */

enum rl_cmd {
    RL_CMD_SET,          /* one key, no fence: plain SET NX PX */
    RL_CMD_ACQUIRE,      /* several keys and/or fenced: the acquire script */
    RL_CMD_FENCE,        /* fence write-back */
    RL_CMD_RELEASE, RL_CMD_EXTEND, RL_CMD_STATUS, RL_CMD_TIME
};

/* A list of keys, as hiredis wants them. */
typedef struct rl_keyset {
    uint32_t n;
    const char **v;
    size_t *len;
} rl_keyset;

enum rl_slot_state { RL_SLOT_IDLE, RL_SLOT_SENT, RL_SLOT_DONE };

struct rl_fanout;

/* Owner's per-master handler: @r is the reply (valid during the call), or
 * NULL with @err/@errstr saying why the master failed. */
typedef void rl_vote_fn(void *owner, struct rl_fanout *f, uint32_t idx,
                        const redisReply *r, int err, const char *errstr);

typedef struct rl_slot {
    struct rl_fanout *f;
    uint32_t idx;
    uint8_t state;                /* enum rl_slot_state */
    uint8_t evalled;              /* EVAL sent after NOSCRIPT: no second fallback */
    rl_monotime sent_us;
} rl_slot;

typedef struct rl_fanout {
    redlock_client *c;
    rl_vote_fn *on_vote;          /* NULL once the owner detached */
    void *owner;
    int refs;                     /* 1 (owner) + 1 per SENT slot */
    int cmd;                      /* enum rl_cmd */
    int script;                   /* enum rl_script, or -1 for plain commands */
    int argc;
    const char **argv;            /* built once; argv[0..1] are EVALSHA sha */
    size_t *argvlen;
    rl_slot slots[REDLOCK_MAX_MASTERS];
    char buf[];                   /* argv arrays and copies of every argument */
} rl_fanout;

/* @keys: the lock keys; @fences: their counter keys (fenced acquire, fence
 * write-back), else NULL; @value: the fence to write back. */
rl_fanout *rl_fanout_new(redlock_client *c, int cmd, const rl_keyset *keys,
                         const rl_keyset *fences, const char *token, uint32_t ttl_ms,
                         uint64_t value, rl_vote_fn *fn, void *owner);
/* 0, or REDLOCK_E* (the master failed at once: no vote will come). */
int rl_fanout_send(rl_fanout *f, uint32_t idx, bool priority);
/* The owner lets go: later replies are dropped, memory goes with the last. */
void rl_fanout_detach(rl_fanout *f);

/* ---- operations (client.c, acquire.c, release.c, extend.c, inspect.c) --- */

enum rl_op_kind { RL_OP_ACQUIRE, RL_OP_RELEASE, RL_OP_EXTEND, RL_OP_STATUS, RL_OP_PING };
enum rl_phase { RL_PHASE_VOTING, RL_PHASE_FENCING, RL_PHASE_CLEANUP, RL_PHASE_WAITING,
                RL_PHASE_DONE };

typedef void rl_status_cb(redlock_client *c, int status, redlock_status *st,
                          const redlock_error *err, void *arg);

typedef struct rl_op {
    int kind;                     /* enum rl_op_kind */
    int phase;                    /* enum rl_phase */
    redlock_client *c;
    struct rl_op *prev, *next;    /* client's list of ops not yet completed */
    struct event *ev;             /* node timeout, retry delay, completion */
    rl_fanout *f;                 /* current attempt's votes */
    rl_fanout *cleanup;           /* acquire: release after a failed attempt */
    redlock_lock *lock;           /* acquire: result; release/extend: caller's */
    uint32_t ttl_ms;
    uint32_t attempt;             /* 1-based */
    uint32_t max_attempts;
    uint32_t n_ok, n_fail, n_pending;
    uint32_t n_cleanup_wait;      /* bitmask: acquire: masters whose cleanup we await;
                                     release: masters to retry */
    rl_monotime start_us;         /* start of the current attempt */
    int64_t validity_us;
    int status;
    char token[REDLOCK_TOKEN_MAX + 1];
    rl_keyset keys;               /* prefix + resource, per resource */
    rl_keyset fences;             /* their fence counters: key + "\0fence" */
    char *keymem;                 /* owns both keysets */
    uint32_t nres;                /* resources */
    unsigned flags;               /* REDLOCK_FENCE */
    uint64_t fence;               /* acquire: max counter seen this attempt */
    rl_fanout *fencing;           /* acquire: the fence write-back */
    bool watching;                /* acquire: subscribed to its keys' channels */
    bool fence_failed;            /* acquire: this attempt's fence write-back failed */
    redlock_acquire_cb acq_cb;
    redlock_op_cb op_cb;
    rl_status_cb *st_cb;
    void *arg;
    redlock_status *st;           /* status/ping: caller's buffer */
    redlock_outcome out;
    redlock_error err;
} rl_op;

rl_op *rl_op_new(redlock_client *c, int kind, const redlock_resource *set, size_t count,
                 bool fence, redlock_error *reterr);
/* The set a lock covers, as resources (for ops on an existing lock). */
int rl_lock_resources(const redlock_lock *lock, redlock_resource *out);
void rl_op_free(rl_op *op);
/* Record the decision and deliver it from the loop (never inline). */
void rl_op_complete(rl_op *op, int status);
void rl_op_arm(rl_op *op, uint32_t ms);
void rl_op_disarm(rl_op *op);
void rl_op_vote_failed(rl_op *op, uint32_t idx, int err, const char *errstr);
typedef void rl_fail_fn(rl_op *op, uint32_t idx, int err, const char *errstr);
redlock_vote *rl_op_take_vote(rl_op *op, const rl_fanout *f, uint32_t idx);
void rl_op_send(rl_op *op, uint32_t mask, bool priority, rl_fail_fn *fail);
void rl_op_timeout_pending(rl_op *op, rl_fail_fn *fail);
void rl_op_fill_outcome(rl_op *op);

void rl_client_cancel_ops(redlock_client *c);
int rl_check_async(redlock_client *c, redlock_error *reterr);
int rl_check_resource(const void *resource, size_t len, redlock_error *reterr);
int rl_check_set(const redlock_resource *set, size_t count, redlock_error *reterr);
int rl_check_ttl(const redlock_client *c, uint32_t ttl_ms, redlock_error *reterr);

/* Per-kind event handlers, called from the op's event. */
void rl_acquire_on_timer(rl_op *op);
void rl_release_on_timer(rl_op *op);
void rl_extend_on_timer(rl_op *op);
void rl_inspect_on_timer(rl_op *op);

/* The operations' entry points, shared by the async and blocking APIs. */
int rl_acquire_start(redlock_client *c, const redlock_resource *set, size_t count,
                     uint32_t ttl_ms, unsigned flags, redlock_acquire_cb cb, void *arg,
                     redlock_error *reterr);
int rl_release_start(redlock_client *c, redlock_lock *lock, redlock_op_cb cb, void *arg,
                     redlock_error *reterr);
int rl_extend_start(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms,
                    redlock_op_cb cb, void *arg, redlock_error *reterr);
/* The same, returning the op (the watchdog detaches it from the lock). */
int rl_extend_start_op(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms,
                       redlock_op_cb cb, void *arg, struct rl_op **ret_op,
                       redlock_error *reterr);
int rl_status_start(redlock_client *c, const void *resource, size_t len,
                    redlock_status *st, rl_status_cb *cb, void *arg,
                    redlock_error *reterr);
int rl_ping_start(redlock_client *c, redlock_status *st, rl_status_cb *cb,
                  void *arg, redlock_error *reterr);

/* ---- outcome (outcome.c) ------------------------------------------------- */

/* Classify a reply error string into REDLOCK_E*. */
int rl_classify_error_reply(const char *str, size_t len);
const char *rl_reply_type_name(int type);
/* Fill vote i from a failure; copies a one-line detail. */
void rl_vote_set(redlock_vote *v, int kind, int err, const char *detail, rl_monotime sent_us);
void rl_vote_error_reply(redlock_vote *v, const rl_node *n, const redisReply *r,
                         rl_monotime sent_us);
int rl_vote_script_reply(redlock_vote *v, const rl_node *n, const redisReply *r,
                         rl_monotime sent_us, const char *what, int gone_err);
/* Decide the failure code of an attempt from its votes and write the one-line
 * message. @what is "acquire", "release" or "extend". */
int rl_outcome_failure(const rl_op *op, const char *what, redlock_error *e);

/* ---- the client (client.c) ----------------------------------------------- */

struct rl_blocking;

struct redlock_client {
    redlock_config cfg;           /* strings below own the copies */
    char *masters, *prefix, *username, *password;
    size_t prefix_len;
    struct event_base *base;
    bool owns_base;               /* blocking client: private base + I/O thread */
    bool freeing;
    bool in_start;                /* inside an rl_*_start call (see rl_op_complete) */
    uint32_t n;                   /* masters */
    uint32_t quorum;              /* n/2 + 1 */
    rl_node nodes[REDLOCK_MAX_MASTERS];
    rl_op *ops;                   /* not yet completed */
    struct rl_blocking *blk;      /* NULL for async clients */
    uint64_t rng;                 /* xorshift state for retry jitter */
    struct event *probe_ev;       /* clock monitor: TIME to every master */
    uint32_t max_ttl_ms;          /* longest ttl requested so far (restart guard) */
    struct rl_watchdog *wds;      /* running watchdogs */
    struct rl_chan *chans;        /* channels waiters listen on (pubsub.c) */
};

struct redlock_lock {
    uint32_t n;                   /* resources */
    const char **res;             /* n names (point into mem) */
    size_t *len;
    char *mem;
    char token[REDLOCK_TOKEN_MAX + 1];
    uint32_t ttl_ms;
    uint64_t fence;               /* 0 unless fenced */
    rl_monotime valid_until_us;   /* monotonic; 0: no validity known. Read and written
                                     only through rl_lock_valid_until/_set: with a
                                     blocking client the watchdog's I/O thread
                                     writes it while the holder's thread reads */
    struct rl_watchdog *wd;       /* running watchdog, or NULL */
};

redlock_lock *rl_lock_new(const redlock_resource *set, size_t count, const char *token);

static inline rl_monotime rl_lock_valid_until(const redlock_lock *l)
{
    return __atomic_load_n(&l->valid_until_us, __ATOMIC_RELAXED);
}

static inline void rl_lock_set_valid_until(redlock_lock *l, rl_monotime t)
{
    __atomic_store_n(&l->valid_until_us, t, __ATOMIC_RELAXED);
}

/* ---- waiting without polling (pubsub.c) ----------------------------------- */

void rl_pubsub_watch(redlock_client *c, const rl_keyset *keys);
void rl_pubsub_unwatch(redlock_client *c, const rl_keyset *keys);
void rl_pubsub_close(redlock_client *c);   /* client free */
/* acquire.c: a release arrived for one of @op's keys: retry now. */
void rl_acquire_wake(rl_op *op);

/* ---- watchdog (watchdog.c) ----------------------------------------------- */

int rl_watchdog_start(redlock_client *c, redlock_lock *lock, redlock_lost_cb cb, void *arg,
                      redlock_error *reterr);
void rl_watchdog_stop(redlock_client *c, redlock_lock *lock);
void rl_watchdog_stop_all(redlock_client *c);   /* client free: lost_cb(ESHUTDOWN) */

/* ---- blocking API (blocking.c) ------------------------------------------- */

int rl_blocking_start(redlock_client *c, redlock_error *reterr);
/* Watchdog start/stop run on the I/O thread, like every other request. */
int rl_blocking_watchdog(redlock_client *c, bool start, redlock_lock *lock, redlock_lost_cb cb,
                         void *arg, redlock_error *reterr);
void rl_blocking_stop(redlock_client *c);

#endif
