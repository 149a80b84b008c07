/* redlock.h - a Redlock quorum lock over N independent Redis masters.
 *
 * A resource is locked when a majority (N/2+1) of N masters store its random token with a ttl;
 * redlock_acquire() asks every master at once and returns a lease valid for ttl - elapsed -
 * (ttl * drift_factor + 2 ms). Async (on your event_base's thread) or blocking (NULL: an I/O
 * thread; callers on any threads: docs/threads.md). Calls return 0 or a negative REDLOCK_E*,
 * details in an optional redlock_error. Why: docs/safety.md, docs/memory-guard.md, docs/wire.md.
 */
#ifndef REDLOCK_H
#define REDLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h> /* memset, in the inline _init()s: C++ warns of {0} */

#include <redlock/version.h>

struct event_base;

#if defined(__GNUC__)
#define REDLOCK_API __attribute__((visibility("default")))
#else
#define REDLOCK_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/* XX(name, value, message). One table generates the enum, redlock_strerror()
 * and redlock_err_name(). "Held by someone else" (ECONFLICT) and "Redis is
 * broken" (ENOQUORUM and the per-master codes) are never the same code. */
#define REDLOCK_ERRNO_MAP(XX)                                                       \
    XX(EINVAL, -1, "invalid argument")                                              \
    XX(ENOMEM, -2, "out of memory")                                                 \
    XX(ECONFLICT, -3, "resource is locked by another client")                       \
    XX(ENOQUORUM, -4, "no quorum: too many masters down, slow or failing")          \
    XX(EEXPIRED, -5, "validity expired before a quorum was reached")                \
    XX(ENOTHELD, -6, "lock not held by this token")                                 \
    XX(ETIMEOUT, -7, "master did not answer in time")                               \
    XX(ECONNECT, -8, "cannot connect to master")                                    \
    XX(EAUTH, -9, "authentication with master failed")                              \
    XX(EWRONGTYPE, -10, "key holds a value of the wrong type")                      \
    XX(EPROTO, -11, "master sent an unexpected or malformed reply")                 \
    XX(EREPLY, -12, "master answered with an error")                                \
    XX(EBUSY, -13, "too many commands in flight to master")                         \
    XX(ESHUTDOWN, -14, "client is shutting down")                                   \
    XX(ERESOLVE, -15, "cannot resolve master address")                              \
    XX(EASYNC, -16, "wrong API for this client (blocking vs async)")                \
    XX(ESYS, -17, "system call failed")                                             \
    XX(EUNTRUSTED, -18, "master excluded from the quorum (clock or restart guard)") \
    XX(ELIMIT, -19, "watchdog limit reached (max extensions or max lease time)")    \
    XX(EUNAVAIL, -20, "master temporarily unavailable (loading its data, or busy)") \
    XX(ECANCELED, -21, "operation cancelled")

enum redlock_errno {
    REDLOCK_OK = 0,
#define REDLOCK_ERRNO_GEN(name, val, msg) REDLOCK_##name = (val),
    REDLOCK_ERRNO_MAP(REDLOCK_ERRNO_GEN)
#undef REDLOCK_ERRNO_GEN
};

/**
 * redlock_strerror() - Describe an error code in a few words
 * @code: 0 or a REDLOCK_E* code
 *
 * Return: a static string, never NULL ("unknown error" for codes not listed).
 */
REDLOCK_API
const char *redlock_strerror(int code);

/**
 * redlock_err_name() - The code's name, e.g. "ECONFLICT"
 * @code: 0 ("OK") or a REDLOCK_E* code
 *
 * Return: a static string, never NULL.
 */
REDLOCK_API
const char *redlock_err_name(int code);

#define REDLOCK_ERRMSG_LEN 256

/*
 * redlock_error - detail of a failure, filled by the call that failed, and
 * what every callback gets as @err.
 * @code:   the same code the call returned (the callback's @status)
 * @master: index of the master the failure is about, or -1 when it is about
 *          the operation as a whole (e.g. no quorum)
 * @msg:    one line naming what went wrong and what to do, e.g.
 *          "master 127.0.0.1:7003: AUTH failed (check the password)"
 * Compatibility: callers allocate it (often on the stack), so its layout is
 * fixed for the life of the soname: it never grows.
 */
typedef struct redlock_error {
    int code;
    int master;
    char msg[REDLOCK_ERRMSG_LEN];
} redlock_error;

/* ------------------------------------------------------------------------ */
/* Opaque types, and the one shape of every callback                        */
/* ------------------------------------------------------------------------ */

/* A client: N master connections plus settings. Create with
 * redlock_client_new(), free with redlock_client_free(). Opaque. */
typedef struct redlock_client redlock_client;

/* A lease on one resource: resource, token and validity. Returned by a
 * successful acquire (the caller owns it) or made with redlock_lock_new()
 * from a token taken elsewhere (e.g. by redlock-cli). Opaque. */
typedef struct redlock_lock redlock_lock;

/*
 * Callbacks. Every callback the library runs for a client has one shape:
 *
 *     (redlock_client *c, int status, <what it is about>, const redlock_error *err, void *arg)
 *
 * @c is the client it ran for; @status is 0 or a REDLOCK_E* code; @err is
 * never NULL: its code is @status, its msg the one line to show (on
 * success code 0, master -1, msg ""), and for per-master news (events)
 * its master names the master. @arg is what you gave with the callback.
 * Everything passed by pointer is valid only during the call, except a
 * lock the callback is told it now owns (a successful acquire).
 *
 * Where they run: on "the client's loop thread", the thread running the
 * client's event loop at that moment, never two at once and never inside
 * the call that asked for them: an async client's event_base, in your
 * thread; a blocking client's own I/O thread. What they may do is said at
 * each type: the completions (redlock_done_cb, redlock_status_cb,
 * redlock_ready_cb) and redlock_lost_cb may start other operations and may
 * free the client (as in hiredis, the free is deferred until the callback
 * returns); the hooks in redlock_config (events, completed operations,
 * logs) must not call into redlock at all. No callback of a blocking client
 * may make a blocking call on it (it would wait for its own loop).
 *
 * The log hook alone keeps a log sink's shape, (level, msg, arg) as
 * libevent's event_log_cb: it reports the library's life line by line, not
 * one operation or one master, and the other hooks carry what code acts on.
 */

/*
 * How this API grows (the rule for every addition after 1.1). Soname 1
 * only ever gains functions, each in a new version node of libredlock.sym.
 *  - Twins arrive together: an operation gets its blocking call and its
 *    _async call (same inputs; the outputs go to the callback instead) in
 *    the same release, and both start the same operation, so they cannot
 *    disagree.
 *  - New behaviour of an operation enters through an options struct (size
 *    first, filled by an inline _init(), fields only added at the end:
 *    redlock_acquire_opts), taken by one _with call and its _with_async
 *    twin; never through another positional argument, flag word or
 *    variant. The flag words of redlock_declare_empty_with(),
 *    redlock_readmit_with() and their _async twins (1.1) are the last.
 *  - A completion reuses a callback type above where its result fits; a
 *    new one keeps the one shape (c, status, what it is about, err, arg).
 */

/* ------------------------------------------------------------------------ */
/* Votes: what each master said                                             */
/* ------------------------------------------------------------------------ */

/* The most masters a client may have. A limit, not a layout: no struct of
 * this header has an array of this size, so a later library may raise it. */
#define REDLOCK_MAX_MASTERS 16

/* One master's answer to one operation. */
enum redlock_vote_kind {
    REDLOCK_VOTE_NONE = 0, /* not asked (operation decided before sending) */
    REDLOCK_VOTE_PENDING,  /* asked; no answer yet when the outcome was decided */
    REDLOCK_VOTE_OK,       /* granted / released / extended */
    REDLOCK_VOTE_HELD,     /* key holds another client's token */
    REDLOCK_VOTE_GONE,     /* release/extend: key already expired or absent */
    REDLOCK_VOTE_TIMEOUT,  /* no answer within the node timeout */
    REDLOCK_VOTE_DOWN,     /* connection refused, lost, not connected, or too many
                              commands already waiting there (err EBUSY) */
    REDLOCK_VOTE_ERROR,    /* error reply or unusable reply; see err/detail */
    REDLOCK_VOTE_EXCLUDED, /* not counted: clock untrusted or restart guard (detail says) */
};

#define REDLOCK_VOTE_DETAIL_LEN 96

/* Read through the pointer redlock_outcome_vote() returns; never allocated
 * by a program. Compatibility: fields are only ever added at the end. */
typedef struct redlock_vote {
    int kind;                             /* enum redlock_vote_kind */
    int err;                              /* REDLOCK_E* when not OK, else 0 */
    uint32_t latency_us;                  /* send to answer (or to decision) */
    char detail[REDLOCK_VOTE_DETAIL_LEN]; /* e.g. "connection refused", error reply text */
} redlock_vote;

/**
 * redlock_vote_kind_name() - "ok", "held", "gone", "timeout", ...
 * @kind: enum redlock_vote_kind
 *
 * Return: a static string, never NULL.
 */
REDLOCK_API
const char *redlock_vote_kind_name(int kind);

/*
 * redlock_outcome - everything an operation saw, for logging and the CLI:
 * its status, its counts and one vote per master, filled for successes and
 * failures alike. Opaque, as libevent's struct event_base is (hiredis's
 * redisContext, by contrast, is a public struct), so that the number of
 * masters and what a vote says can grow without a new soname.
 *
 * A blocking call fills one you made with redlock_outcome_new() (reuse it
 * for any number of calls; each overwrites it) and freed with
 * redlock_outcome_free(). A callback or hook lends one, valid during the
 * call. Read it with the accessors below; each takes any outcome the
 * library filled.
 */
typedef struct redlock_outcome redlock_outcome;

/* redlock_outcome_new() - An empty outcome (status 0, no masters).
 * Return: NULL when out of memory. */
REDLOCK_API
redlock_outcome *redlock_outcome_new(void);

/* redlock_outcome_free() - Free @o (NULL is fine). */
REDLOCK_API
void redlock_outcome_free(redlock_outcome *o);

/* What the call returned (0 or REDLOCK_E*). */
REDLOCK_API
int redlock_outcome_status(const redlock_outcome *o);

/* N, the client's masters: the votes there are. */
REDLOCK_API
size_t redlock_outcome_masters(const redlock_outcome *o);

/* N/2 + 1. */
REDLOCK_API
size_t redlock_outcome_quorum(const redlock_outcome *o);

/* OK votes in the deciding attempt. */
REDLOCK_API
size_t redlock_outcome_ok(const redlock_outcome *o);

/* Acquire: attempts made (1 + retries and wake-ups); 1 for the others. */
REDLOCK_API
uint32_t redlock_outcome_attempts(const redlock_outcome *o);

/* The deciding attempt, start to decision (monotonic clock). */
REDLOCK_API
uint64_t redlock_outcome_elapsed_us(const redlock_outcome *o);

/* Acquire and extend: the validity computed; <= 0 on failure. */
REDLOCK_API
int64_t redlock_outcome_validity_ms(const redlock_outcome *o);

/* Master @i's vote in the deciding attempt, by master index.
 * Return: valid as long as @o is; NULL when @i >= redlock_outcome_masters(). */
REDLOCK_API
const redlock_vote *redlock_outcome_vote(const redlock_outcome *o, size_t i);

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

enum redlock_log_level {
    REDLOCK_LOG_DEBUG = 0,
    REDLOCK_LOG_INFO,
    REDLOCK_LOG_WARN,
    REDLOCK_LOG_ERROR,
};

/* Log hook. Called from the thread running the client's event loop. It must
 * not call back into redlock. The library never writes to stdout/stderr. */
typedef void (*redlock_log_fn)(int level, const char *msg, void *arg);

/* What the clock monitor, the restart guard and the masters' ACLs can report
 * (redlock_event_fn). New kinds are only ever added at the end: ignore the
 * ones you do not know. */
enum redlock_event {
    REDLOCK_EVENT_CLOCK_JUMP = 1, /* a master's clock stepped beyond clock_jump_ms */
    REDLOCK_EVENT_CLOCK_RATE,     /* a master's clock rate is off by more than drift_factor */
    REDLOCK_EVENT_RESTART,        /* a master's run_id changed: it restarted */
    REDLOCK_EVENT_ACL_CHANNEL,    /* a master's ACL refuses the wake-up channel: waiters
                                     poll instead of being woken (once per client; the
                                     message names the ACL rule to add) */
};

/*
 * redlock_event_fn - news about one master from the clock monitor, the
 * restart guard and the wake-up channel (config.event_fn)
 * @c:      the client (on a blocking client it may run before
 *          redlock_client_new() has returned it to you)
 * @status: REDLOCK_EUNTRUSTED when the event takes the master out of
 *          quorums now (clock events under REDLOCK_CLOCK_EXCLUDE); 0 when
 *          it is news only (a restart: whether its vote still counts is the
 *          memory guard's to say, and redlock_ping() shows it)
 * @event:  enum redlock_event
 * @err:    @err->master is the master's index, @err->msg one line naming it
 *          (also logged at REDLOCK_LOG_WARN)
 * Runs on the client's loop thread, from inside the reply that showed it.
 * It must not block or call into redlock (the client's state is
 * mid-update).
 */
typedef void (*redlock_event_fn)(redlock_client *c, int status, int event, const redlock_error *err,
                                 void *arg);

/* What to do with a master whose clock misbehaves. */
enum redlock_clock_policy {
    REDLOCK_CLOCK_WARN = 0, /* log, call event_fn, count (default) */
    REDLOCK_CLOCK_EXCLUDE,  /* also: its votes do not count until it behaved
                               for clock_readmit_ms; N and the quorum stay
                               fixed, so this can only make acquires fail */
    REDLOCK_CLOCK_OFF,      /* no probes */
};

/* What a completed operation was, for the op hook (redlock_op_fn). */
enum redlock_op_kind {
    REDLOCK_OP_ACQUIRE = 1,
    REDLOCK_OP_RELEASE,
    REDLOCK_OP_EXTEND,
    REDLOCK_OP_STATUS,
    REDLOCK_OP_PING,
    REDLOCK_OP_DECLARE, /* redlock_declare_empty() */
};

/*
 * redlock_op_info - one completed operation, for metrics (redlock_op_fn).
 * @kind:        enum redlock_op_kind
 * @status:      what the call returned (0 or REDLOCK_E*)
 * @attempts:    attempts made (acquire: 1 + retries, wake-ups and the queue's joining;
 *               others: 1 + resends)
 * @waited_us:   from the call to its decision (includes retries and waiting)
 * @elapsed_us:  the deciding attempt alone, start to decision
 * @resource:    the (first) resource, not NUL-terminated; NULL for ping
 * @outcome:     votes and per-master latencies of the deciding attempt
 * Valid only during the hook. Compatibility: the library allocates it and
 * hands it out by pointer, so fields are only ever added at the end; a
 * program built against an older header reads the ones it knows.
 */
typedef struct redlock_op_info {
    int kind;
    int status;
    uint32_t attempts;
    uint64_t waited_us;
    uint64_t elapsed_us;
    const void *resource;
    size_t resource_len;
    const redlock_outcome *outcome;
} redlock_op_info;

/*
 * redlock_op_fn - the op hook (config.op_fn): once per completed operation
 * @status: what the operation returns (also @info->status)
 * @info:   what it was and what it cost
 * @err:    its detail, as its callback or blocking call gets it
 * Runs on the client's loop thread, just before the operation's own
 * callback or return, for every operation of every caller (the watchdog's
 * extensions too). It must not block or call into redlock.
 */
typedef void (*redlock_op_fn)(redlock_client *c, int status, const redlock_op_info *info,
                              const redlock_error *err, void *arg);

/*
 * redlock_config - client settings. Fill with redlock_config_init(), then set
 * what you need. Strings are copied by redlock_client_new(); the config may
 * be freed or reused afterwards.
 *
 * Compatibility: the fields above the line "added after 1.0" are the 1.0
 * layout; new fields are only ever added at the end. redlock_config_init()
 * is inline: it records in @size the struct size your program was compiled
 * with, and the library reads no field beyond it (later fields take their
 * defaults). So a program built against this header keeps working with a
 * later libredlock1.
 */
typedef struct redlock_config {
    size_t size; /* set by redlock_config_init(); do not change */

    /* --- Where the masters are, and who we are to them ---------------- */
    const char *masters;    /* comma-separated, 1..REDLOCK_MAX_MASTERS, no duplicates:
                                 host:port  [v6addr]:port
                                 redis://[user:password@]host[:port][/db]
                                 rediss://...  (TLS)
                                 unix://[user:password@]/path/to.sock[?db=N]
                               URL credentials override username/password for
                               that master. Host names are resolved by
                               client_new, and again before each reconnect
                               (a master whose name moved sits out its
                               window there: docs/memory-guard.md,
                               "Names that move"). */
    const char *key_prefix; /* prepended to every resource name; default "" */
    const char *username;   /* ACL user for AUTH, or NULL */
    const char *password;   /* AUTH password, or NULL for none */
    /* TLS to masters (libredlock built against hiredis >= 1.0 with hiredis_ssl,
     * redlock_has_tls(); otherwise asking for TLS fails in redlock_client_new
     * with EINVAL). */
    int tls;                   /* 1: every master over TLS; rediss:// entries always are */
    const char *tls_ca_file;   /* CA bundle (PEM); NULL with tls_ca_dir NULL: system CAs */
    const char *tls_ca_dir;    /* CA directory (c_rehash layout) */
    const char *tls_cert_file; /* client certificate (mutual TLS), with tls_key_file */
    const char *tls_key_file;
    const char *tls_server_name; /* SNI and the name verified; default: each master's host */
    int tls_verify;              /* default 1: verify the master's certificate and name */

    /* --- Connections ---------------------------------------------------- */
    uint32_t node_timeout_ms;    /* per-master request timeout; default 50 */
    uint32_t connect_timeout_ms; /* connect + AUTH handshake; default 1000 */
    uint32_t reconnect_min_ms;   /* reconnect backoff, first step; default 10 */
    uint32_t reconnect_max_ms;   /* reconnect backoff cap; default 1000. An operation
                                    that needs a master that is down tries to
                                    connect at once (at most every reconnect_min_ms),
                                    so a master that is back is used within a
                                    round trip, whatever the backoff says. */
    uint32_t max_inflight;       /* requests outstanding per master before new
                                    requests fail at once with EBUSY; default 1024 */
    uint32_t max_reply_bytes;    /* largest reply a master may send (a reply growing past
                                    it drops the connection: EPROTO); default 1 MiB */

    /* --- Acquire: how long to wait, and how ------------------------------ */
    int64_t wait_ms;          /* redlock_acquire()'s wait: REDLOCK_WAIT_RETRIES
                                 (default: the retry_count deadline below), 0 (one
                                 attempt), a duration, or REDLOCK_WAIT_FOREVER */
    uint32_t retry_count;     /* polls after the first attempt before giving up;
                                 default 3. REDLOCK_WAIT_RETRIES makes the wait a
                                 deadline of retry_count x (retry_delay +
                                 retry_jitter) ms of polling (900 ms with the
                                 defaults: what the polls took at their longest;
                                 time spent in attempts moves it on) that also ends
                                 after retry_count polls, whichever comes first.
                                 It waits in the masters' queue like any deadline:
                                 a waiter far from the head polls less often (up to
                                 8 delays apart), so it may make fewer polls.
                                 Wake-ups from a release, and the attempt right
                                 after a first one that met a holder (it takes the
                                 waiter's place in the queues), are extra attempts
                                 and do not count. */
    uint32_t retry_delay_ms;  /* base delay between polls; default 200 */
    uint32_t retry_jitter_ms; /* plus uniform random 0..jitter; default 100 */
    /* Waiting: an acquire that finds the resource held joins a queue kept on
     * the masters and is woken, in its turn, by the release that hands the
     * resource over (docs/waiting.md, "Waiting in turn: the fair hand-off").
     * The poll timer (retry_delay + jitter) stays as the fallback. 0: poll
     * only. */
    int pubsub_wait;     /* default 1 (on) */
    double drift_factor; /* clock-drift allowance, fraction of ttl: default 0.01,
                            REDLOCK_DRIFT_FACTOR_MIN <= factor < 1 */

    /* --- Release ----------------------------------------------------------- */
    uint32_t release_retry_count;    /* retries for masters that did not answer;
                                        default 2 (independent of retry_count) */
    uint32_t release_retry_delay_ms; /* default 20 */

    /* --- Clock monitor (docs/memory-guard.md, "Clocks"): a TIME probe per master */
    int clock_policy;          /* enum redlock_clock_policy; default WARN */
    uint32_t clock_probe_ms;   /* probe interval; default 1000 */
    uint32_t clock_jump_ms;    /* step beyond elapsed that counts as a jump; default 25 */
    uint32_t clock_window_ms;  /* rate estimated over this sliding window; default 10000 */
    uint32_t clock_readmit_ms; /* trusted again after this long without a fault; default 10000 */

    /* --- Memory guard (docs/memory-guard.md) -------------------------------
     * A master counts toward a quorum only while it can show that it kept
     * what it granted. Each master keeps a marker key (no ttl) naming the
     * process that wrote it; a master that lost it or is another process
     * (a restart whatever its persistence, a flush, a copy of data, a name
     * that moved) is reborn and votes for nobody until every lease it may
     * have granted and forgotten has ended: measured from the other
     * masters, or, when that cannot be measured, the longest ttl in use.
     * Every acquire checks the marker in the same step that takes the lock.
     * Masters whose eviction policy could evict lock keys (maxmemory set
     * with a volatile-* or allkeys-* policy) are excluded too. */
    int restart_guard;         /* default 1 (on); 0 trusts every master's memory */
    uint32_t restart_guard_ms; /* the window is at least this long (set it fleet-wide
                                  to the longest ttl any client uses); default 0 */

    /* --- Watchdog (redlock_watchdog_start) ---------------------------------
     * Extend when the validity left falls
     * to ttl / watchdog_divisor; stop after watchdog_max_extends extensions or
     * watchdog_max_lease_ms since it started, whichever comes first (the
     * Redlock spec asks for extensions to be limited). An extension that fails
     * for a reason that can pass (no quorum, timeouts, masters busy) is retried
     * until only watchdog_floor_ms of validity is left; then lost_cb runs, with
     * that much time left to stop cleanly. */
    uint32_t watchdog_divisor;      /* default 3: extend with a third of the ttl left */
    uint32_t watchdog_max_extends;  /* default 1000 */
    uint32_t watchdog_max_lease_ms; /* default 3600000 (1 hour) */
    uint32_t watchdog_floor_ms;     /* 0 (default): max(ttl / 10, 4 * node_timeout_ms) */

    /* --- Hooks: they run on the client's loop thread and must not call into
     * redlock ------------------------------------------------------------- */
    redlock_log_fn log_fn;     /* optional */
    void *log_arg;             /* passed to log_fn */
    int log_level;             /* minimum level logged; default REDLOCK_LOG_WARN */
    redlock_event_fn event_fn; /* optional: the clock monitor's and the guard's news */
    void *event_arg;
    redlock_op_fn op_fn; /* optional: called at every completed operation */
    void *op_arg;

    /* Fields added after 1.0 go here, at the end. */

    /* --- Local hand-off (1.1; docs/waiting.md, "The local hand-off") -------
     * A release while another caller of this client waits for the same
     * resources passes the lock to that waiter directly: its attempt takes
     * the keys over from the releasing token in one round, with a fresh
     * ttl and fence, instead of a release, a wake-up and a new attempt.
     * While another client waits in the queue, a lock passes at most
     * local_run_max - 1 times in a row (local_run_max holders, counting the
     * first); then the release hands it to another client's waiter. The
     * bound is on passes, jumps ahead of the queue: its ticket order may
     * still serve this client's older waiters next. Only
     * waiters that wait in the masters' queues (pubsub_wait on) are passed
     * to: the queues are what tell whether another client waits. */
    uint32_t local_run_max; /* default 4; 0 or 1: no local hand-off */
} redlock_config;

#define REDLOCK_RESOURCE_MAX 1024      /* bytes, without the prefix */
#define REDLOCK_PREFIX_MAX 256         /* bytes */
#define REDLOCK_TTL_MAX_MS 2147483647u /* ~24.8 days: keeps all arithmetic in range */
/* The least config.drift_factor: 0.1 % of the ttl. NTP slews a clock's rate
 * by up to 0.05 % (500 ppm: ntpd, adjtime(3)), so a master's clock and ours
 * may run that far apart while both count as synchronised; the margin must
 * cover it with room to spare. A factor of 0 would leave only the 2 ms. */
#define REDLOCK_DRIFT_FACTOR_MIN 0.001

#define REDLOCK_WAIT_FOREVER ((int64_t)-1)     /* wait until the lock is ours (or cancelled) */
#define REDLOCK_WAIT_RETRIES ((int64_t)-2)     /* config.wait_ms: a retry_count deadline */
#define REDLOCK_WAIT_DEFAULT ((int64_t)-3)     /* acquire opts: the client's wait_ms */
#define REDLOCK_WAIT_MAX_MS ((int64_t)1 << 40) /* ~35 years: longer is FOREVER */

/**
 * redlock_config_init_sized() - Fill the first @size bytes of @cfg with defaults
 * Use redlock_config_init(); this is what it calls.
 */
REDLOCK_API
void redlock_config_init_sized(redlock_config *cfg, size_t size);

/**
 * redlock_config_init() - Fill @cfg with the defaults listed above
 * @cfg: config to fill; masters is set to NULL and must be set by the caller
 */
static inline void redlock_config_init(redlock_config *cfg)
{
    redlock_config_init_sized(cfg, sizeof(*cfg));
}

/**
 * redlock_config_check() - Check @cfg the way redlock_client_new() would
 * @cfg:    a config filled by redlock_config_init() and then by you
 * @reterr: optional; the message names the field and the fix
 *
 * Everything but name resolution and connecting: ranges, the shape of the
 * master list and duplicates as written. For tools that validate input
 * before they connect (redlock-cli does).
 * Return: 0, REDLOCK_EINVAL.
 */
REDLOCK_API
int redlock_config_check(const redlock_config *cfg, redlock_error *reterr);

/**
 * redlock_masters_check() - Check a master list alone
 * @masters:    as for redlock_config.masters
 * @ret_count:  optional: set to the number of masters on success
 * @ret_secret: optional: set to 1 if an entry carries a password (a URL with
 *              user:password@), so callers can refuse secrets on a command line
 * Return: 0, REDLOCK_EINVAL (the message names the entry).
 */
REDLOCK_API
int redlock_masters_check(const char *masters, size_t *ret_count, int *ret_secret,
                          redlock_error *reterr);

/**
 * redlock_ttl_check() - Is @ttl_ms usable with @drift_factor?
 *
 * A ttl must be 1..REDLOCK_TTL_MAX_MS and leave validity once the drift
 * margin (ttl * drift_factor + 2 ms) is taken; the message says the least
 * ttl that does. @drift_factor must be one a config takes
 * (REDLOCK_DRIFT_FACTOR_MIN <= factor < 1). Return: 0, REDLOCK_EINVAL.
 */
REDLOCK_API
int redlock_ttl_check(uint32_t ttl_ms, double drift_factor, redlock_error *reterr);

/**
 * redlock_token_check() - Is @token a token redlock_lock_new() accepts?
 * (1..REDLOCK_TOKEN_MAX printable bytes, no spaces). Return: 0, REDLOCK_EINVAL.
 */
REDLOCK_API
int redlock_token_check(const char *token, redlock_error *reterr);

/**
 * redlock_validity_ms() - ttl - elapsed - drift margin, in whole ms (rounded down)
 * The arithmetic every acquire and extend uses; <= 0 means no lease.
 */
REDLOCK_API
int64_t redlock_validity_ms(uint32_t ttl_ms, uint64_t elapsed_us, double drift_factor);

/** redlock_drift_margin_ms() - ceil(ttl * drift_factor) + 2 ms. */
REDLOCK_API
uint64_t redlock_drift_margin_ms(uint32_t ttl_ms, double drift_factor);

/* ------------------------------------------------------------------------ */
/* Lifecycle                                                                */
/* ------------------------------------------------------------------------ */

/**
 * redlock_client_new() - Create a client and start connecting to every master
 * @cfg:      settings; copied
 * @base:     your event_base for the async API, or NULL for the blocking API
 *            (the client then runs one private I/O thread)
 * @ret:      set to the new client on success; untouched on failure
 * @reterr:   optional detail on failure
 *
 * Connections are opened in the background; a master that is down does not
 * make this call fail (its votes fail until it is back). Host names are
 * resolved here (ERESOLVE if one does not resolve), and again, off the
 * loop's thread, before each reconnect: a name that moved is followed, and
 * the server it moved to sits out the leases it never saw; one that stops
 * resolving keeps its address (a warning in the log).
 *
 * Two entries with one address are refused here (EINVAL). Two entries that
 * reach one redis-server otherwise (a unix socket and a port, two dbs) are
 * known once both handshakes have read the server's INFO run_id: the later
 * one is then refused (its votes fail with EINVAL: "same server as master
 * K"), redlock_ready() and redlock_ready_async() report REDLOCK_EINVAL with
 * one line naming both entries, and ping shows it on that master. Its votes
 * never count, whenever it is found: no round counts two OKs from one
 * run_id. Not checked when a master's ACL refuses INFO.
 *
 * Return: 0, REDLOCK_EINVAL (bad config: the message names the field),
 * REDLOCK_ERESOLVE (a host name does not resolve), REDLOCK_ENOMEM,
 * REDLOCK_ESYS (I/O thread could not start).
 * Ownership: the caller owns *@ret and frees it with redlock_client_free().
 * Thread-safety: async clients belong to @base's thread.
 * Signals: hiredis writes with write(2). A blocking client's I/O thread
 * blocks all signals, so a dropped connection yields EPIPE, not SIGPIPE. An
 * async client writes on your thread: ignore SIGPIPE there (as most network
 * programs do), or a master that drops the connection can kill the process.
 * Sockets are close-on-exec: children you fork and exec do not inherit them.
 */
REDLOCK_API
int redlock_client_new(const redlock_config *cfg, struct event_base *base, redlock_client **ret,
                       redlock_error *reterr);

/* ------------------------------------------------------------------------ */
/* Async on any event loop                                                  */
/* ------------------------------------------------------------------------ */

/*
 * An async client needs three things of a loop: to watch a file descriptor,
 * to run a callback after some milliseconds, and to run one "soon" (a 0 ms
 * timer: after the callbacks that are ready now, never inside the call that
 * asks). redlock_loop is that, as a table of hooks over your loop, in the
 * manner of hiredis's adapters and c-ares's socket callbacks. libevent needs
 * none of it (redlock_client_new() takes the event_base); ready-made tables
 * for libuv and GLib ship as headers, <redlock/libuv.h> and
 * <redlock/glib.h>. Every hook is called on the loop's thread, from the
 * client's own calls and callbacks.
 */

/* Watch events, a bit mask. */
#define REDLOCK_LOOP_READ 1
#define REDLOCK_LOOP_WRITE 2

/* @events: what is ready, REDLOCK_LOOP_READ and/or REDLOCK_LOOP_WRITE (an
 * error or a hang-up on the descriptor: both the events being watched). */
typedef void redlock_loop_io_fn(void *arg, int events);
typedef void redlock_loop_timer_fn(void *arg);

/*
 * redlock_loop - the hooks a client runs its I/O and its timers on
 *
 * Fill it with redlock_loop_init() and the adapter's (or your own) hooks;
 * redlock_client_new_loop() copies it. Rules each hook must keep:
 *  - watch_new: one watch per descriptor (the library never makes two on
 *    one fd), watching nothing until watch_set. NULL: out of memory.
 *  - watch_set: watch for @events from now on (0: for nothing); calls @fn
 *    whenever one of them is ready (level-triggered), until set again or
 *    freed. 0, or -1 if the loop refused.
 *  - watch_free: stop and free; the library closes the fd only after it.
 *  - timer_new: a one-shot timer, not armed. NULL: out of memory.
 *  - timer_start: arm (or re-arm, replacing the last arm) to run @fn once,
 *    @ms from now; 0 ms: after the callbacks ready now, in the loop's next
 *    pass at the latest. 0, or -1 if the loop refused.
 *  - timer_stop: disarm (no-op if not armed). timer_free: disarm and free.
 *  - After watch_free or timer_free, its @fn is never called again, even if
 *    it was ready in the same pass; each may be called from inside its own
 *    @fn, and any hook from inside any @fn.
 * Watches and timers may outlive redlock_client_free() by nothing: it frees
 * them all before it returns (a loop whose handles close later, as libuv's,
 * finishes that on its next pass).
 */
typedef struct redlock_loop {
    size_t size; /* set by redlock_loop_init(); do not change */
    void *data;  /* your loop: passed to watch_new and timer_new */
    void *(*watch_new)(void *data, int fd, redlock_loop_io_fn *fn, void *arg);
    int (*watch_set)(void *watch, int events);
    void (*watch_free)(void *watch);
    void *(*timer_new)(void *data, redlock_loop_timer_fn *fn, void *arg);
    int (*timer_start)(void *timer, uint64_t ms);
    void (*timer_stop)(void *timer);
    void (*timer_free)(void *timer);
} redlock_loop;

/** redlock_loop_init() - An empty table with its size set: fill every hook. */
static inline void redlock_loop_init(redlock_loop *l)
{
    memset(l, 0, sizeof(*l));
    l->size = sizeof(*l);
}

/**
 * redlock_client_new_loop() - redlock_client_new() for an async client on @loop
 * @loop: the hooks of your loop; copied. Every hook must be set.
 *
 * The client is async, as one made with an event_base: call the *_async
 * functions from the loop's thread; completions arrive there. Everything
 * else is as for redlock_client_new().
 *
 * Return: as redlock_client_new(); REDLOCK_EINVAL also for a NULL @loop, a
 * hook left unset, or a @loop->size this library does not know.
 * Since 1.1.
 */
REDLOCK_API
int redlock_client_new_loop(const redlock_config *cfg, const redlock_loop *loop,
                            redlock_client **ret, redlock_error *reterr);

/**
 * redlock_client_free() - Close all connections and free @c
 * @c: client, or NULL (no-op)
 *
 * Operations still in flight complete with REDLOCK_ESHUTDOWN (or their
 * outcome, if already decided): async callbacks run before this call
 * returns; blocking calls waiting in other threads return. Called from one
 * of the client's own callbacks, the free is deferred until that callback
 * returns (hiredis' rule), and runs before control is back in your loop.
 * Locks held are not released; they expire after their ttl. A release (or
 * extend) already started is written to each master whose socket takes it
 * at once, though its callback says ESHUTDOWN: release, then free, loses no
 * release. An acquire still in flight is undone the same way (the release
 * of its attempt is written behind its SETs), and a waiting one leaves its
 * queues. redlock_lock objects stay valid (free them).
 * Thread-safety: blocking clients: calls already waiting in other threads
 * return REDLOCK_ESHUTDOWN; starting a call during or after this one is
 * undefined (join those threads first).
 */
REDLOCK_API
void redlock_client_free(redlock_client *c);

/** redlock_client_masters() - N, the number of masters. */
REDLOCK_API
size_t redlock_client_masters(const redlock_client *c);

/** redlock_client_quorum() - N/2 + 1. */
REDLOCK_API
size_t redlock_client_quorum(const redlock_client *c);

/**
 * redlock_client_master_addr() - "host:port" of master @i as configured
 * Return: a string owned by @c, valid until it is freed; NULL if @i >= N.
 */
REDLOCK_API
const char *redlock_client_master_addr(const redlock_client *c, size_t i);

/* ------------------------------------------------------------------------ */
/* Blocking operations (client made with base == NULL)                      */
/* ------------------------------------------------------------------------ */

/**
 * redlock_acquire() - Take a lock on @resource on a majority of masters
 * @c:           blocking client
 * @resource:    resource name: 1..REDLOCK_RESOURCE_MAX bytes, any byte but NUL
 * @len:         its length
 * @ttl_ms:      lock time to live, 1..REDLOCK_TTL_MAX_MS, and long enough to
 *               leave a positive validity after the drift margin
 * @ret_lock:    set to the lease on success; untouched on failure
 * @ret_outcome: optional, from redlock_outcome_new(); the deciding
 *               attempt's votes, success or failure
 * @reterr:      optional detail on failure
 *
 * Redlock is not reentrant: a resource this client already holds is
 * waited for like any other holder's (another thread sharing the client
 * may release it); the first attempt logs a warning naming the token.
 *
 * Waits by config.wait_ms; by default (REDLOCK_WAIT_RETRIES) until a
 * deadline of retry_count x (retry_delay + retry_jitter) ms of polling
 * after the call (900 ms with the defaults; the time its attempts take
 * moves the deadline on), polling up to retry_count times besides the
 * first attempt (fewer far back in the queue) and woken by the release that
 * hands it the lock; each attempt with a fresh token. After a failed attempt it
 * releases on every master it sent the SET to. Validity is timed from the
 * start of the successful attempt; a lease with validity <= 0 is never
 * returned.
 *
 * Return: 0; REDLOCK_ECONFLICT (held by another client); REDLOCK_ENOQUORUM
 * (too many masters down, slow or failing); REDLOCK_EEXPIRED (quorum reached
 * too late); REDLOCK_EAUTH, REDLOCK_EWRONGTYPE, REDLOCK_EPROTO,
 * REDLOCK_EREPLY (enough masters fail this way to deny a quorum: fix the
 * setup); REDLOCK_EINVAL; REDLOCK_ENOMEM; REDLOCK_ESHUTDOWN; REDLOCK_EASYNC.
 * Ownership: the caller owns *@ret_lock: release it, then redlock_lock_free().
 * Thread-safety: safe from any number of threads on one client.
 */
REDLOCK_API
int redlock_acquire(redlock_client *c, const void *resource, size_t len, uint32_t ttl_ms,
                    redlock_lock **ret_lock, redlock_outcome *ret_outcome, redlock_error *reterr);

/* One resource of a set, for redlock_acquire_set(). Compatibility: programs
 * pass arrays of it, so its layout is fixed for the life of the soname. */
typedef struct redlock_resource {
    const void *name; /* any bytes but NUL */
    size_t len;       /* 1..REDLOCK_RESOURCE_MAX */
} redlock_resource;

#define REDLOCK_SET_MAX 64 /* resources in one lock */

/* Flags for redlock_acquire_set(). */
#define REDLOCK_FENCE 0x1u /* also return a fencing token (redlock_lock_fence) */

/**
 * redlock_acquire_set() - Take a lock on several resources at once, and/or fenced
 * @set, @count: 1..REDLOCK_SET_MAX distinct resources; all or none
 * @flags:       0 or REDLOCK_FENCE
 *
 * All-or-nothing on each master: one Lua script per master checks every key
 * and sets all of them, or none; the same quorum and validity rules as
 * redlock_acquire() apply to the set as a whole. Release and extend act on
 * the whole set.
 *
 * With REDLOCK_FENCE each master also increments its fence counter (one per
 * master, for every resource) in the same script; after a quorum the client
 * takes the largest value and writes it back (counter = max(counter, value))
 * to a majority before it reports success, so any later grant, whose majority
 * meets that one, sees a larger value. Give the token to the resource you
 * protect and have it reject writes carrying a token older than the newest it
 * has seen (docs/waiting.md, "Fencing tokens", states the exact claim). Costs
 * one more round trip.
 *
 * Return, ownership, thread-safety: as for redlock_acquire().
 */
REDLOCK_API
int redlock_acquire_set(redlock_client *c, const redlock_resource *set, size_t count,
                        uint32_t ttl_ms, unsigned flags, redlock_lock **ret_lock,
                        redlock_outcome *ret_outcome, redlock_error *reterr);

/* ------------------------------------------------------------------------ */
/* Per-call acquire options, waiting and cancelling                          */
/* ------------------------------------------------------------------------ */

/* A cancellation source (Go's context, .NET's CancellationToken): give it to
 * any number of acquires through redlock_acquire_opts.cancel, fire it once to
 * stop them all. Opaque. */
typedef struct redlock_cancel redlock_cancel;

/**
 * redlock_cancel_new() - Make a cancellation source
 * Return: 0, REDLOCK_EINVAL (@ret NULL), REDLOCK_ENOMEM.
 * Ownership: free with redlock_cancel_free() once every operation given it
 * has completed.
 */
REDLOCK_API
int redlock_cancel_new(redlock_cancel **ret);

/**
 * redlock_cancel_fire() - Cancel every operation using @cc, now and later
 *
 * An acquire still waiting or voting completes with REDLOCK_ECANCELED (its
 * callback runs once, from the loop; a blocking call returns), after the
 * attempt in flight is released on every master it may have written to. An
 * acquire that already succeeded is not undone. Idempotent.
 * Thread-safety: any thread for blocking clients; async clients: the loop's
 * thread.
 */
REDLOCK_API
void redlock_cancel_fire(redlock_cancel *cc);

/** redlock_cancel_fired() - 1 once redlock_cancel_fire() ran on @cc. */
REDLOCK_API
int redlock_cancel_fired(const redlock_cancel *cc);

/** redlock_cancel_free() - Free @cc (NULL is a no-op). */
REDLOCK_API
void redlock_cancel_free(redlock_cancel *cc);

/*
 * redlock_acquire_opts - how one acquire behaves. Fill with
 * redlock_acquire_opts_init(), set ttl_ms, then what you need.
 * @size:             set by redlock_acquire_opts_init(); do not change
 * @ttl_ms:           lock time to live (required), as for redlock_acquire()
 * @wait_ms:          0: one attempt; > 0: keep trying until this long after
 *                    the call (at most REDLOCK_WAIT_MAX_MS); REDLOCK_WAIT_FOREVER;
 *                    REDLOCK_WAIT_DEFAULT (what init sets): config.wait_ms
 * @retry_delay_ms,
 * @retry_jitter_ms:  the polling fallback while waiting (a release normally
 *                    wakes the waiter whose turn it is at once);
 *                    REDLOCK_OPT_DEFAULT (what init sets): the client's
 * @flags:            0 or REDLOCK_FENCE
 * @cancel:           optional cancellation source (redlock_cancel_fire)
 *
 * Compatibility: fields are only ever added at the end, and init is inline:
 * it records the size your program was compiled with, and the library
 * gives every later field its default.
 */
typedef struct redlock_acquire_opts {
    size_t size;
    uint32_t ttl_ms;
    uint32_t retry_delay_ms;
    uint32_t retry_jitter_ms;
    unsigned flags;
    int64_t wait_ms;
    redlock_cancel *cancel;
} redlock_acquire_opts;

#define REDLOCK_OPT_DEFAULT UINT32_MAX

/** redlock_acquire_opts_init() - Defaults: no ttl (set it), the client's wait and polling. */
static inline void redlock_acquire_opts_init(redlock_acquire_opts *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->size = sizeof(*opts);
    opts->retry_delay_ms = REDLOCK_OPT_DEFAULT;
    opts->retry_jitter_ms = REDLOCK_OPT_DEFAULT;
    opts->wait_ms = REDLOCK_WAIT_DEFAULT;
}

/**
 * redlock_acquire_with() - Take a lock on @set, waiting as @opts says
 * @set, @count: 1..REDLOCK_SET_MAX distinct resources (one: { name, len })
 * @opts:        see redlock_acquire_opts
 * @ret_lock, @ret_outcome, @reterr: as for redlock_acquire()
 *
 * Waiting: an attempt that finds the resource held joins the queue on the
 * masters and sleeps until the release that hands it the lock wakes it (or
 * the poll timer fires, or the wait ends). Waiters are served in about the
 * order they started waiting, across processes (docs/waiting.md,
 * "Waiting in turn: the fair hand-off"). A wake-up only starts an ordinary
 * attempt: mutual exclusion never depends on it. The wait ends at its
 * deadline: an attempt in flight then completes, and the call returns what
 * the last attempt saw (ECONFLICT if still held).
 *
 * Return: as for redlock_acquire(), plus REDLOCK_ECANCELED (@opts->cancel
 * fired; the attempt in flight was released).
 * Thread-safety: as for redlock_acquire(). Blocking clients only.
 */
REDLOCK_API
int redlock_acquire_with(redlock_client *c, const redlock_resource *set, size_t count,
                         const redlock_acquire_opts *opts, redlock_lock **ret_lock,
                         redlock_outcome *ret_outcome, redlock_error *reterr);

/**
 * redlock_release() - Release @lock on every master
 * @c, @lock:    the lock (not freed by this call)
 * @ret_outcome, @reterr: optional, as for redlock_acquire()
 *
 * Deletes the key only where it still holds @lock's token (a Lua
 * compare-then-DEL, or the server's own compare-and-delete where it has one:
 * docs/wire.md); where a waiter is queued, the key goes to the first one
 * instead (a reservation only it can take) and it is woken. A master where
 * the key already expired counts as released (vote "gone"). Masters that do
 * not answer are retried up to release_retry_count times.
 *
 * Return: 0 (released or already gone on a majority); REDLOCK_ENOTHELD
 * (provably lost: a majority holds another token); REDLOCK_ENOQUORUM (no
 * majority either way: masters that timed out or are down may still hold
 * it; the keys expire with their ttl); REDLOCK_EWRONGTYPE/EAUTH/EPROTO/EREPLY as for acquire;
 * REDLOCK_EINVAL; REDLOCK_ENOMEM; REDLOCK_ESHUTDOWN; REDLOCK_EASYNC.
 * Thread-safety: safe from any thread; one lock must not be used by two
 * calls at once.
 */
REDLOCK_API
int redlock_release(redlock_client *c, redlock_lock *lock, redlock_outcome *ret_outcome,
                    redlock_error *reterr);

/**
 * redlock_extend() - Set @lock's ttl to @ttl_ms again, on a majority
 * @c, @lock:    the lock; its validity is updated on success
 * @ttl_ms:      new time to live, counted from now
 *
 * A compare-token-then-expire on every master, atomic there (a Lua script:
 * docs/wire.md). Succeeds only on a majority, with validity recomputed
 * exactly as for acquire, from the start of this call. A master where the
 * key is gone does not count.
 *
 * Return: 0; REDLOCK_ENOTHELD (provably lost: on a majority the key is gone
 * or holds another token); REDLOCK_ENOQUORUM (no majority either way: the
 * lease stands, capped as described); REDLOCK_EEXPIRED; the setup codes as for acquire;
 * REDLOCK_EINVAL; REDLOCK_ENOMEM; REDLOCK_ESHUTDOWN; REDLOCK_EASYNC.
 * Thread-safety: as for redlock_release().
 */
REDLOCK_API
int redlock_extend(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms,
                   redlock_outcome *ret_outcome, redlock_error *reterr);

/* ------------------------------------------------------------------------ */
/* Async operations (client made with your event_base)                      */
/* ------------------------------------------------------------------------ */

/*
 * redlock_done_cb - the completion of an acquire, a release or an extend
 * @c:      the client
 * @status: what the blocking twin would return (0 or REDLOCK_E*)
 * @lock:   acquire: on success a new lease that you now own (release it,
 *          then redlock_lock_free() it), NULL on failure; release and
 *          extend: the lock you passed (extend updated its validity)
 * @out:    the deciding attempt's votes, success or failure
 * @err:    never NULL; the detail of a failure (code 0 and "" on success)
 *
 * Contract (libuv's): if an *_async call returns an error, its callback
 * never runs. Otherwise it runs exactly once, from the client's event loop
 * (your thread), never inside the *_async call itself, after the op hook.
 * It may start other operations, release or free @lock, and free the
 * client (deferred until it returns; operations still in flight then end
 * with REDLOCK_ESHUTDOWN). @out and @err are valid only during the call.
 */
typedef void (*redlock_done_cb)(redlock_client *c, int status, redlock_lock *lock,
                                const redlock_outcome *out, const redlock_error *err, void *arg);

/**
 * redlock_acquire_async() - redlock_acquire() on the caller's event loop
 * @cb:  called once with the outcome; on success @lock is a new lease the
 *       callback's owner now owns (release it, then free it); on failure NULL
 * @arg: passed to @cb
 *
 * Return: 0 (cb will run), REDLOCK_EINVAL, REDLOCK_ENOMEM, REDLOCK_ESHUTDOWN,
 * REDLOCK_EASYNC (blocking client). The resource is copied.
 */
REDLOCK_API
int redlock_acquire_async(redlock_client *c, const void *resource, size_t len, uint32_t ttl_ms,
                          redlock_done_cb cb, void *arg, redlock_error *reterr);

/** redlock_acquire_set_async() - redlock_acquire_set() on the caller's event loop. */
REDLOCK_API
int redlock_acquire_set_async(redlock_client *c, const redlock_resource *set, size_t count,
                              uint32_t ttl_ms, unsigned flags, redlock_done_cb cb, void *arg,
                              redlock_error *reterr);

/**
 * redlock_acquire_with_async() - redlock_acquire_with() on the caller's event loop
 * Return: 0 (cb will run), REDLOCK_EINVAL, REDLOCK_ENOMEM, REDLOCK_ESHUTDOWN,
 * REDLOCK_EASYNC. The set and the options are copied.
 */
REDLOCK_API
int redlock_acquire_with_async(redlock_client *c, const redlock_resource *set, size_t count,
                               const redlock_acquire_opts *opts, redlock_done_cb cb, void *arg,
                               redlock_error *reterr);

/**
 * redlock_release_async() - redlock_release() on the caller's event loop
 * @lock: must stay valid until @cb runs (@cb gets it back; free it there
 *        or later)
 */
REDLOCK_API
int redlock_release_async(redlock_client *c, redlock_lock *lock, redlock_done_cb cb, void *arg,
                          redlock_error *reterr);

/**
 * redlock_extend_async() - redlock_extend() on the caller's event loop
 * @lock: must stay valid until @cb runs; its validity is updated on success
 */
REDLOCK_API
int redlock_extend_async(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms, redlock_done_cb cb,
                         void *arg, redlock_error *reterr);

/* ------------------------------------------------------------------------ */
/* Watchdog: keep a lock alive while work of unknown length runs            */
/* ------------------------------------------------------------------------ */

/*
 * redlock_lost_cb - the watchdog stopped on its own
 * @status: why: an extension failed to reach a majority (as redlock_extend()
 *          says), validity ran out before an extension succeeded
 *          (REDLOCK_EEXPIRED), a limit was reached (REDLOCK_ELIMIT: the lock
 *          stays valid for what is left, then lapses), or the client is
 *          being freed (REDLOCK_ESHUTDOWN)
 * @lock:   the watched lock; no watchdog runs on it any more
 * @err:    one line: the failures, and the validity left
 *
 * Runs once, on the client's loop thread. Stop using the resource by
 * redlock_lock_validity_ms(). Not called after redlock_watchdog_stop() or
 * redlock_release(). It must not block. It may free @lock; on an async
 * client it may also release @lock (redlock_release_async()), start a new
 * watchdog, and free the client (deferred until it returns); on a blocking
 * client only calls that take no client (redlock_lock_free(), the lock
 * accessors).
 */
typedef void (*redlock_lost_cb)(redlock_client *c, int status, redlock_lock *lock,
                                const redlock_error *err, void *arg);

/**
 * redlock_watchdog_start() - Extend @lock automatically until stopped
 * @lock: a held lock; must stay valid until the watchdog stops (lost_cb ran,
 *        or redlock_watchdog_stop()/redlock_release() returned)
 * @lost_cb, @arg: see redlock_lost_cb
 *
 * Extends by the lock's ttl whenever the validity left falls to
 * ttl / watchdog_divisor, on the client's event loop: no thread per lock.
 * Return: 0, REDLOCK_EINVAL (no validity, or a watchdog already runs),
 * REDLOCK_ENOMEM, REDLOCK_ESHUTDOWN.
 * Thread-safety: async clients: the loop's thread; blocking clients: any.
 */
REDLOCK_API
int redlock_watchdog_start(redlock_client *c, redlock_lock *lock, redlock_lost_cb lost_cb,
                           void *arg, redlock_error *reterr);

/**
 * redlock_watchdog_stop() - Stop extending @lock (the lock stays held for
 * its remaining validity). No-op if none runs. redlock_release() stops it too.
 */
REDLOCK_API
void redlock_watchdog_stop(redlock_client *c, redlock_lock *lock);

/* ------------------------------------------------------------------------ */
/* Locks                                                                    */
/* ------------------------------------------------------------------------ */

#define REDLOCK_TOKEN_MAX 128 /* bytes, for tokens given to redlock_lock_new() */

/**
 * redlock_lock_new() - A lock handle for a token obtained elsewhere
 * @resource, @len: as for redlock_acquire()
 * @token:  NUL-terminated token (printable, 1..REDLOCK_TOKEN_MAX bytes)
 * @ret:    set on success
 *
 * For releasing or extending a lock taken by another process (redlock-cli
 * unlock/extend). Its validity is 0 until a successful extend.
 * Return: 0, REDLOCK_EINVAL, REDLOCK_ENOMEM.
 * Ownership: the caller owns *@ret; free with redlock_lock_free().
 */
REDLOCK_API
int redlock_lock_new(const void *resource, size_t len, const char *token, redlock_lock **ret,
                     redlock_error *reterr);

/**
 * redlock_lock_new_set() - redlock_lock_new() for a set of resources
 * (to release or extend a set taken elsewhere, e.g. redlock-cli lock R1 R2).
 */
REDLOCK_API
int redlock_lock_new_set(const redlock_resource *set, size_t count, const char *token,
                         redlock_lock **ret, redlock_error *reterr);

/** redlock_lock_free() - Free @lock (NULL is a no-op). Does not release it.
 * A lock with a running watchdog must be stopped (or released) first. */
REDLOCK_API
void redlock_lock_free(redlock_lock *lock);

/**
 * redlock_lock_token() - The lock's token, NUL-terminated
 * Ownership: borrowed; valid until @lock is freed.
 * The token is 32 hex characters: 128 bits from OpenSSL RAND_bytes.
 */
REDLOCK_API
const char *redlock_lock_token(const redlock_lock *lock);

/**
 * redlock_lock_resource() - The resource name (not NUL-terminated)
 * @len: set to its length
 * Ownership: borrowed; valid until @lock is freed.
 */
REDLOCK_API
const void *redlock_lock_resource(const redlock_lock *lock, size_t *len);

/** redlock_lock_count() - How many resources the lock covers (1 unless a set). */
REDLOCK_API
size_t redlock_lock_count(const redlock_lock *lock);

/** redlock_lock_resource_at() - Resource @i of the set; NULL if @i >= count. */
REDLOCK_API
const void *redlock_lock_resource_at(const redlock_lock *lock, size_t i, size_t *len);

/**
 * redlock_lock_fence() - The fencing token of a REDLOCK_FENCE acquire
 * Return: > 0 for fenced locks; 0 otherwise. Strictly increasing across
 * successive holders of the same resource (docs/waiting.md,
 * "Fencing tokens": the exact claim).
 */
REDLOCK_API
uint64_t redlock_lock_fence(const redlock_lock *lock);

/** redlock_lock_validity_ms() - Validity remaining now (ms, monotonic); <= 0 once lapsed. */
REDLOCK_API
int64_t redlock_lock_validity_ms(const redlock_lock *lock);

/** redlock_lock_ttl_ms() - The ttl of the last successful acquire/extend. */
REDLOCK_API
uint32_t redlock_lock_ttl_ms(const redlock_lock *lock);

/* ------------------------------------------------------------------------ */
/* Inspection: what each master holds, and how it answers                   */
/* ------------------------------------------------------------------------ */

/*
 * redlock_master_state - one master's view, for redlock_status_get() and
 * redlock_ping(). Read through the pointer redlock_status_master() returns;
 * never allocated by a program. Compatibility: fields are only ever added
 * at the end. The first group is filled by both; the second by a status
 * (the key); the third by a ping (the master's health), zero otherwise.
 */
typedef struct redlock_master_state {
    int err;                              /* 0, or REDLOCK_E*: this master's view is missing */
    char detail[REDLOCK_VOTE_DETAIL_LEN]; /* error text when err != 0 */
    uint32_t rtt_us;                      /* round trip of this query */

    /* status: the key */
    int held;                          /* 1 if the key exists on this master */
    int reserved;                      /* the key is reserved for the next waiter
                                          (a hand-off in progress); held is 0 */
    int64_t pttl_ms;                   /* remaining ttl (ms); -2 if absent, -1 if no ttl */
    char token[REDLOCK_TOKEN_MAX + 1]; /* token stored there ("" if absent) */

    /* ping: the clock monitor's, the memory guard's and the connection's view */
    int64_t clock_offset_us;             /* master TIME minus client real time at
                                            the round trip's midpoint */
    double clock_rate_lo, clock_rate_hi; /* master clock rate / client monotonic rate,
                                            bounds over the window; 0 when unknown */
    uint64_t clock_samples;              /* TIME samples taken */
    uint64_t clock_jumps;                /* jumps seen */
    uint64_t clock_rate_faults;          /* rate faults seen */
    int clock_trusted;                   /* 0 within clock_readmit_ms of a fault */
    char run_id[41];                     /* INFO run_id at the last handshake */
    int64_t uptime_s;                    /* INFO uptime_in_seconds at the last handshake */
    int aof_always;                      /* appendonly yes + appendfsync always */
    int excluded;                        /* would not count toward a quorum now */
    char excluded_why[REDLOCK_VOTE_DETAIL_LEN];
    int64_t memory_age_ms;     /* age of the master's memory marker (its clock);
                                  -1 while unknown */
    uint32_t memory_window_ms; /* the marker must be this old to count */
    int64_t maxmemory;         /* CONFIG maxmemory; -1 if CONFIG was refused */
    char eviction_policy[32];  /* CONFIG maxmemory-policy, or "" if unknown */
    int tls;                   /* connected over TLS */
} redlock_master_state;

/*
 * redlock_status - what every master said to a status or a ping. Opaque,
 * made, lent and read as redlock_outcome is: redlock_status_new() for the
 * blocking calls (reusable), lent to redlock_status_cb during the call.
 */
typedef struct redlock_status redlock_status;

/* redlock_status_new() - An empty status. Return: NULL when out of memory. */
REDLOCK_API
redlock_status *redlock_status_new(void);

/* redlock_status_free() - Free @st (NULL is fine). */
REDLOCK_API
void redlock_status_free(redlock_status *st);

/* N, the client's masters. */
REDLOCK_API
size_t redlock_status_masters(const redlock_status *st);

/* N/2 + 1. */
REDLOCK_API
size_t redlock_status_quorum(const redlock_status *st);

/* Masters that answered. */
REDLOCK_API
size_t redlock_status_answered(const redlock_status *st);

/* Status: masters where the key exists. */
REDLOCK_API
size_t redlock_status_held(const redlock_status *st);

/* Status: the token a majority holds, or "" (never NULL). */
REDLOCK_API
const char *redlock_status_majority_token(const redlock_status *st);

/* Master @i's view, by master index.
 * Return: valid as long as @st is; NULL when @i >= redlock_status_masters(). */
REDLOCK_API
const redlock_master_state *redlock_status_master(const redlock_status *st, size_t i);

/**
 * redlock_status_get() - Ask every master who holds @resource, and for how long
 * @ret: from redlock_status_new(); filled on success (0) and also on
 *       ENOQUORUM, with what was seen
 *
 * Read-only (GET + PTTL in one script per master); never changes a lock.
 * Return: 0 when a majority answered; REDLOCK_ENOQUORUM; REDLOCK_EINVAL;
 * REDLOCK_ENOMEM; REDLOCK_ESHUTDOWN; REDLOCK_EASYNC (async client).
 * Thread-safety: as for redlock_acquire().
 */
REDLOCK_API
int redlock_status_get(redlock_client *c, const void *resource, size_t len, redlock_status *ret,
                       redlock_error *reterr);

/**
 * redlock_lock_check() - Is @lock still held, and for how long?
 * @ret_left_ms: optional: the validity left (ms) when held, else 0
 *
 * Reads every resource of @lock on every master (as redlock_status_get())
 * and counts the masters that store the lock's token on all of them. Held
 * means: a quorum of them do, and the lock's own validity (its client's
 * clock: redlock_lock_validity_ms()) has not run out; the masters can only
 * shorten that promise, never lengthen it. Read-only.
 * Return: 0 (held; @ret_left_ms set); REDLOCK_ENOTHELD (a majority does not
 * hold the token: released, expired, taken over); REDLOCK_EEXPIRED (the
 * validity ran out); REDLOCK_ENOQUORUM (too many masters silent to tell);
 * REDLOCK_EINVAL; REDLOCK_ESHUTDOWN; REDLOCK_EASYNC. Blocking clients
 * (async: redlock_lock_check_async()).
 */
REDLOCK_API
int redlock_lock_check(redlock_client *c, const redlock_lock *lock, int64_t *ret_left_ms,
                       redlock_error *reterr);

/**
 * redlock_ping() - Round trip and clock offset (TIME) of every master
 * @ret: filled on success (0) and also on ENOQUORUM
 *
 * Offsets need no synchronised clocks to be harmless (Redlock needs bounded
 * clock *rates*, not equal clocks); they are reported for operators.
 * Return: as for redlock_status_get().
 */
REDLOCK_API
int redlock_ping(redlock_client *c, redlock_status *ret, redlock_error *reterr);

/*
 * redlock_status_cb - the completion of a status or a ping
 * @st: what every master said; the library's, valid during the call (also
 *      on REDLOCK_ENOQUORUM, with what was seen)
 * Same contract, thread and freedom as redlock_done_cb.
 */
typedef void (*redlock_status_cb)(redlock_client *c, int status, const redlock_status *st,
                                  const redlock_error *err, void *arg);

/** redlock_status_get_async() - redlock_status_get() on the caller's event loop.
 * Return: 0 (cb will run), REDLOCK_EINVAL, REDLOCK_ENOMEM, REDLOCK_ESHUTDOWN, REDLOCK_EASYNC. */
REDLOCK_API
int redlock_status_get_async(redlock_client *c, const void *resource, size_t len,
                             redlock_status_cb cb, void *arg, redlock_error *reterr);

/** redlock_ping_async() - redlock_ping() on the caller's event loop. Return: as above. */
REDLOCK_API
int redlock_ping_async(redlock_client *c, redlock_status_cb cb, void *arg, redlock_error *reterr);

/*
 * redlock_check_cb - the completion of a lock check
 * @status:  what redlock_lock_check() returns: 0 (held), REDLOCK_ENOTHELD,
 *           REDLOCK_EEXPIRED, REDLOCK_ENOQUORUM, ...
 * @left_ms: when @status is 0, the validity left (ms) at the decision, as
 *           redlock_lock_check()'s @ret_left_ms; else 0
 * @err:     never NULL; the one line redlock_lock_check() would give
 * Same contract, thread and freedom as redlock_done_cb. Since 1.1.
 */
typedef void (*redlock_check_cb)(redlock_client *c, int status, int64_t left_ms,
                                 const redlock_error *err, void *arg);

/**
 * redlock_lock_check_async() - redlock_lock_check() on the caller's event loop
 * @lock: the lock to check; not changed, and must stay valid until @cb runs
 *        (its resources are read one after another, its validity at the end)
 * @cb:   runs once, with what redlock_lock_check() would return
 * @arg:  passed to @cb
 *
 * The same check as redlock_lock_check(), read-only: one status per
 * resource of @lock, in turn (each seen by the op hook as
 * REDLOCK_OP_STATUS), then the verdict.
 * Return: 0 (cb will run), REDLOCK_EINVAL (@c, @lock or @cb NULL),
 * REDLOCK_ENOMEM, REDLOCK_ESHUTDOWN, REDLOCK_EASYNC (blocking client: use
 * redlock_lock_check()).
 * Ownership: @lock stays the caller's; nothing is copied.
 * Since 1.1.
 */
REDLOCK_API
int redlock_lock_check_async(redlock_client *c, const redlock_lock *lock, redlock_check_cb cb,
                             void *arg, redlock_error *reterr);

/*
 * redlock_ready_cb - enough masters are up, or they will not be
 * @status: 0 once @n_up masters (at least the number asked for) are
 *          connected and past their handshake; REDLOCK_ETIMEOUT with how
 *          many were; REDLOCK_EINVAL as soon as two masters are found to be
 *          one redis-server (see redlock_client_new()); REDLOCK_ESHUTDOWN
 *          when the client is freed first
 * @n_up:   masters up when it ran
 * @err:    one line: how many were up of how many wanted, or the two
 *          entries that are one server (@err->master: the later one)
 * Same contract, thread and freedom as redlock_done_cb.
 */
typedef void (*redlock_ready_cb)(redlock_client *c, int status, size_t n_up,
                                 const redlock_error *err, void *arg);

/**
 * redlock_ready_async() - Learn when masters are connected, without polling
 * @min_masters: how many must be up: 1..N, or 0 for the quorum
 * @timeout_ms:  give up after this long (1..REDLOCK_TTL_MAX_MS)
 *
 * Runs @cb at once (on the next loop pass) if enough are up already.
 * Return: 0 (cb will run), REDLOCK_EINVAL, REDLOCK_ENOMEM, REDLOCK_ESHUTDOWN,
 * REDLOCK_EASYNC (blocking client: use redlock_ready()).
 */
REDLOCK_API
int redlock_ready_async(redlock_client *c, size_t min_masters, uint32_t timeout_ms,
                        redlock_ready_cb cb, void *arg, redlock_error *reterr);

/**
 * redlock_ready() - Block until @min_masters masters are connected (0: the quorum)
 * @ret_n_up: optional: how many were up when it returned
 * Return: 0, REDLOCK_ETIMEOUT, REDLOCK_EINVAL (also: two masters are one
 * redis-server; @reterr names both entries), REDLOCK_ESHUTDOWN, REDLOCK_EASYNC.
 */
REDLOCK_API
int redlock_ready(redlock_client *c, size_t min_masters, uint32_t timeout_ms, size_t *ret_n_up,
                  redlock_error *reterr);

/* ------------------------------------------------------------------------ */
/* Memory guard: declaring new masters empty                                 */
/* ------------------------------------------------------------------------ */

/**
 * redlock_declare_empty() - Tell masters that are new and empty that they may vote at once
 *
 * A master that lost its data (no memory marker), or that restarted with data
 * that may lack grants (its marker belongs to another process: whatever it
 * reloaded, a promoted replica, a backup, a copy), sits out until the leases
 * it may have granted have ended, as measured from the other masters (or, when
 * they cannot all be measured, the longest ttl in use). A fresh deployment's
 * masters are in that state too, with nothing to forget: this makes every
 * master that holds NO key besides its marker count at once. Masters whose
 * marker counts already are left alone; a master that holds keys is not new,
 * is left as it is, and the call fails with REDLOCK_EINVAL naming it.
 *
 * It looks at the fleet first (again half a second after a master's rebirth,
 * where one was reborn less than that ago: every attempt that may have
 * counted a vote it gave before it forgot has decided by then), and
 * refuses where a master that remembers reports a live
 * lease (REDLOCK_ECONFLICT, naming it and its time left: a master that sits
 * out may have granted it and forgotten) or a master does not answer, or
 * answers with a report no Redis sends (REDLOCK_ENOQUORUM: it may be the one
 * that remembers). Each master made to
 * count has its fencing counter raised to the largest the fleet reports.
 * @ret_declared: optional: how many masters were declared
 * Return: 0 (a majority answered), REDLOCK_EINVAL (a master holds keys; the
 * message names it), REDLOCK_ECONFLICT, REDLOCK_ENOQUORUM, REDLOCK_ESHUTDOWN,
 * REDLOCK_EASYNC.
 * Blocking clients (async: redlock_declare_empty_async()).
 */
REDLOCK_API
int redlock_declare_empty(redlock_client *c, size_t *ret_declared, redlock_error *reterr);

/**
 * redlock_readmit() - Let every master vote at once, after an operator checked the fleet
 *
 * The risk, once: a master that sits out may have granted a lock that is still
 * live and that it has forgotten; readmitting it lets a second client take that
 * lock while the first still holds it. Call it only when you know no such lock
 * is live (every holder stopped, or every ttl since the restart has passed).
 * It looks at the fleet first and refuses as redlock_declare_empty() does.
 * @max_ttl_ms: 0, or the longest ttl the fleet's clients use: the bound a
 * master sits out when its window cannot be measured (it replaces the longest
 * ttl ever recorded on each master's marker, but is never set below the
 * longest lease the fleet reports live)
 * @ret_readmitted: optional: how many masters were readmitted
 * Return: 0, REDLOCK_ECONFLICT, REDLOCK_ENOQUORUM, REDLOCK_EINVAL,
 * REDLOCK_ESHUTDOWN, REDLOCK_EASYNC.
 * Blocking clients (async: redlock_readmit_async()).
 */
REDLOCK_API
int redlock_readmit(redlock_client *c, uint32_t max_ttl_ms, size_t *ret_readmitted,
                    redlock_error *reterr);

/* redlock_declare_empty_with() and redlock_readmit_with() flags. */
#define REDLOCK_DECLARE_FORCE                       \
    0x1u /* act where the fleet's look refuses: the \
            operator knows that no lease it reports \
            or could not see is live */

/**
 * redlock_declare_empty_with() - redlock_declare_empty(), with flags
 * @flags: 0 or REDLOCK_DECLARE_FORCE
 * Since 1.1.
 */
REDLOCK_API
int redlock_declare_empty_with(redlock_client *c, unsigned flags, size_t *ret_declared,
                               redlock_error *reterr);

/**
 * redlock_readmit_with() - redlock_readmit(), with flags, saying the bound it set
 * @flags: 0 or REDLOCK_DECLARE_FORCE
 * @ret_bound_ms: optional: the fleet bound it set on each master that answered
 * (the larger of @max_ttl_ms and the longest lease the fleet reported live; 0
 * when @max_ttl_ms is 0: kept)
 * Since 1.1.
 */
REDLOCK_API
int redlock_readmit_with(redlock_client *c, uint32_t max_ttl_ms, unsigned flags,
                         size_t *ret_readmitted, uint32_t *ret_bound_ms, redlock_error *reterr);

/*
 * redlock_declare_cb - the completion of a declare-empty or a readmit
 * @status:   what redlock_declare_empty_with() or redlock_readmit_with()
 *            returns for the same call
 * @n:        masters this call made count (declared empty, or readmitted);
 *            also on failure, when it acted before it failed (a
 *            declare-empty's REDLOCK_EINVAL: the empty masters were
 *            declared); 0 when it refused before acting (REDLOCK_ECONFLICT,
 *            a silent master's REDLOCK_ENOQUORUM)
 * @bound_ms: readmit, when @status is 0: the fleet bound it set, as
 *            redlock_readmit_with()'s @ret_bound_ms (0: kept); otherwise 0
 * @err:      never NULL; the one line the blocking call would give
 * Same contract, thread and freedom as redlock_done_cb. Since 1.1.
 */
typedef void (*redlock_declare_cb)(redlock_client *c, int status, size_t n, uint32_t bound_ms,
                                   const redlock_error *err, void *arg);

/**
 * redlock_declare_empty_async() - redlock_declare_empty_with() on the caller's event loop
 * @flags: 0 or REDLOCK_DECLARE_FORCE
 * @cb:    runs once, with what redlock_declare_empty_with() would return and
 *         how many masters it declared
 * @arg:   passed to @cb
 *
 * The same operation as the blocking call: it looks at the fleet (again,
 * later, while a master was reborn too lately: @cb may run a second or
 * more after the call), refuses or says its word, from the loop.
 * Return: 0 (cb will run), REDLOCK_EINVAL (@c or @cb NULL, unknown
 * @flags), REDLOCK_ENOMEM, REDLOCK_ESHUTDOWN, REDLOCK_EASYNC (blocking
 * client: use redlock_declare_empty_with()).
 * Ownership: nothing to own; what @cb gets is valid during the call.
 * Since 1.1.
 */
REDLOCK_API
int redlock_declare_empty_async(redlock_client *c, unsigned flags, redlock_declare_cb cb, void *arg,
                                redlock_error *reterr);

/**
 * redlock_readmit_async() - redlock_readmit_with() on the caller's event loop
 * @max_ttl_ms: 0, or the longest ttl the fleet's clients use (as for
 *              redlock_readmit())
 * @flags:      0 or REDLOCK_DECLARE_FORCE
 * @cb:         runs once, with what redlock_readmit_with() would return,
 *              how many masters it readmitted and the bound it set
 * @arg:        passed to @cb
 *
 * The same operation as the blocking call, with the same risk
 * (redlock_readmit()): call it only when you know no lock a master that
 * sits out may have granted is live.
 * Return: 0 (cb will run), REDLOCK_EINVAL (@c or @cb NULL, @max_ttl_ms
 * above REDLOCK_TTL_MAX_MS, unknown @flags), REDLOCK_ENOMEM,
 * REDLOCK_ESHUTDOWN, REDLOCK_EASYNC (blocking client: use
 * redlock_readmit_with()).
 * Ownership: nothing to own; what @cb gets is valid during the call.
 * Since 1.1.
 */
REDLOCK_API
int redlock_readmit_async(redlock_client *c, uint32_t max_ttl_ms, unsigned flags,
                          redlock_declare_cb cb, void *arg, redlock_error *reterr);

/* ------------------------------------------------------------------------ */
/* Metrics                                                                  */
/* ------------------------------------------------------------------------ */

/**
 * redlock_metrics_write() - the client's metrics as Prometheus text
 * @c:       any client, blocking or async
 * @buf:     where the text goes, NUL-terminated; NULL with @cap 0 to ask
 *           only how long it is
 * @cap:     bytes at @buf
 * @ret_len: set to the text's length without its NUL (so @cap must be at
 *           least *@ret_len + 1), whether it fitted or not
 * @reterr:  optional
 *
 * Writes the Prometheus text exposition format, version 0.0.4 (serve it as
 * "text/plain; version=0.0.4"; its names also pass as OpenMetrics): acquires,
 * releases and extends by status, the acquire's wait and the lease's hold
 * as histograms, leases the watchdog lost and the validity they had left,
 * and per master (label master="host:port") its votes, its sitting out and
 * why, whether it answered last, and its clock and restart events. Every
 * metric, its labels and what to alert on: docs/operators.md.
 *
 * Counting costs each operation a few relaxed atomic adds on the client's
 * loop thread; nothing is sent to the masters and nothing is allocated.
 * Any thread may call this at any time, also while the client's I/O
 * thread runs operations (a counter read here may be one operation behind
 * another). It allocates nothing and does not block. Not an operation, so
 * it has no async twin.
 *
 * Return: 0; REDLOCK_EINVAL if @c or @ret_len is NULL, or if the text does
 * not fit in @cap bytes (@reterr says how many it needs; counters grow
 * between two calls, so leave room). Since 1.1.
 */
REDLOCK_API
int redlock_metrics_write(redlock_client *c, char *buf, size_t cap, size_t *ret_len,
                          redlock_error *reterr);

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

/** redlock_version() - "MAJOR.MINOR.PATCH" of the library linked, not the header. */
REDLOCK_API
const char *redlock_version(void);

/**
 * redlock_has_tls() - Was the library linked built with TLS to masters?
 *
 * 1: config.tls and rediss:// URLs work (hiredis >= 1.0 with hiredis_ssl).
 * 0: asking for TLS fails in redlock_client_new() with REDLOCK_EINVAL.
 */
REDLOCK_API
int redlock_has_tls(void);

#ifdef __cplusplus
}
#endif

#endif /* REDLOCK_H */
