/* core.h - what the redlock behaviour tests share, on top of cluster.h.
 *
 * Clients on the test cluster (config filled from REDLOCK_TEST_*, created
 * and connected or the test fails), what the masters hold under a key (GET
 * and PTTL straight from each master, binary-safe), a barrier that proves
 * every master has run what a client sent before it, and the rule that
 * every error message is one non-empty line, and the fixture most suites
 * start from. Like cluster.h, helpers that cannot do their job fail the
 * running test (in a plain, non-criterion program: print and abort).
 * tc_expect_msg() and the fixture are for criterion tests only.
 */
#ifndef TC_CORE_H
#define TC_CORE_H

#include <stddef.h>
#include <stdint.h>

#include <redlock.h>

#include <event2/event.h>

#include "await.h"
#include "cluster.h"

struct event_base;

/* ------------------------------------------------------------------------ */
/* Clients                                                                  */
/* ------------------------------------------------------------------------ */

/* redlock_config_init() plus the test cluster's masters and password, and a
 * node timeout roomy enough for sanitizer builds on a loaded machine. */
void tc_config(redlock_config *cfg);

/*
 * tc_client() - A blocking client for @cfg (NULL: tc_config()'s)
 *
 * Returns once @want_up masters answered a ping through it (-1: all N), so a
 * test starts from connected masters instead of racing the handshakes.
 * Ownership: free with redlock_client_free().
 */
redlock_client *tc_client(const redlock_config *cfg, int want_up);

/* tc_client() that says why instead of failing the test, for a forked
 * child: NULL with the reason in @why. */
redlock_client *tc_client_try(const redlock_config *cfg, int want_up, char *why, size_t size);

/* An async client on @base; not waited for (it cannot ping). */
redlock_client *tc_client_async(const redlock_config *cfg, struct event_base *base);

/* Ping through @c until at least @want masters answer or @timeout_ms
 * passes; each round is one real round trip, not a sleep.
 * Return: masters that answered the last ping. */
int tc_wait_up(redlock_client *c, int want, int timeout_ms);

/* Run @base until an async client @c has @want masters connected
 * (redlock_ready_async: no polling). 1 if it did within @timeout_ms. */
int tc_async_ready(struct event_base *base, redlock_client *c, int want, int timeout_ms);

/* An op callback that frees the lock it is given (fire-and-forget releases). */
void tc_free_lock_cb(redlock_client *c, int status, redlock_lock *lock, const redlock_outcome *out,
                     const redlock_error *err, void *arg);

/* redlock_acquire() of @res on @c that must succeed (the test fails with
 * the library's message otherwise). @out may be NULL. Return: the lock. */
redlock_lock *tc_must_acquire(redlock_client *c, const char *res, uint32_t ttl_ms,
                              redlock_outcome *out);

/* redlock_release() that must succeed, then redlock_lock_free(). */
void tc_must_release(redlock_client *c, redlock_lock *lock);

/* An outcome or a status the test owns, freed when it goes out of scope
 * (gcc's and clang's cleanup attribute), so that a test holds one without a
 * free at every return: TC_OUTCOME(out); redlock_acquire(..., out, &e);
 * A test that cannot get one (out of memory) fails there. */
#define TC_OUTCOME(name) \
    redlock_outcome *name __attribute__((cleanup(tc_outcome_freep))) = tc_outcome_new()
#define TC_STATUS(name) \
    redlock_status *name __attribute__((cleanup(tc_status_freep))) = tc_status_new()
redlock_outcome *tc_outcome_new(void);
void tc_outcome_freep(redlock_outcome **o);
redlock_status *tc_status_new(void);
void tc_status_freep(redlock_status **st);

/* One timed acquire of a fresh resource: what went in and what came out. */
struct tc_try {
    char res[128];        /* tc_resource() of the running test */
    redlock_lock *l;      /* the lock, or NULL; the caller frees it */
    redlock_outcome *out; /* kept across calls; freed with the struct (TC_TRY) */
    redlock_error e;
    int rc;
    uint64_t took_ms; /* how long redlock_acquire() took */
};
/* A struct tc_try of the test's, its outcome freed when it goes out of
 * scope; reuse it for any number of tc_try_acquire() calls. */
#define TC_TRY(name) struct tc_try name __attribute__((cleanup(tc_try_freep))) = { 0 }
void tc_try_freep(struct tc_try *t);

/* redlock_acquire() of a fresh resource on @c, timed, into @t. Return: rc. */
int tc_try_acquire(redlock_client *c, uint32_t ttl_ms, struct tc_try *t);

/* ------------------------------------------------------------------------ */
/* What masters hold                                                        */
/* ------------------------------------------------------------------------ */

/*
 * tc_get() - GET and PTTL of @key on master @i, binary-safe
 * @val:   receives the value, NUL-terminated and cut to @size (may be NULL)
 * @pttl:  receives PTTL in ms (-2 absent, -1 no ttl) (may be NULL)
 *
 * Return: 1 if the key holds a string, 0 if absent, -1 if the master did
 * not answer or the key holds another type.
 */
int tc_get(int i, const void *key, size_t len, char *val, size_t size, long long *pttl);

/* Is @val (a lock key's value) @token's lease: the token, or the token
 * marked for its waiters (a trailing "\2", script.c)? */
int tc_value_is_token(const char *val, const char *token);
/* Masters where @key holds @token (tc_value_is_token) with 0 < PTTL <=
 * @max_pttl_ms. */
int tc_count_token(const void *key, size_t len, const char *token, long long max_pttl_ms);

/* SET @key @value PX @ttl_ms on master @i (a lock taken by "someone else"). */
void tc_plant(int i, const void *key, size_t len, const char *value, unsigned ttl_ms);

/* DEL @key on every master that answers. */
void tc_del_all(const void *key, size_t len);

/*
 * tc_barrier() - Wait until every master has run all @c sent so far
 *
 * A status query goes down the same N connections behind everything @c
 * queued before, and each master answers in order, so once all N answered,
 * all earlier commands (the SETs or releases an early-quorum call did not
 * wait for) have run everywhere. The query is about a key of its own, so
 * whatever the test keeps under its resource cannot make it fail. Fails
 * the test if a master does not answer.
 */
void tc_barrier(redlock_client *c);

/* The same for the masters in @mask (bit i: master i) only; the others may
 * be down or fakes. */
void tc_barrier_on(redlock_client *c, unsigned mask);

/* An INFO field of master @i as a number ("total_commands_processed",
 * "cmdstat_eval" gives its calls=), or -1 if absent. */
long long tc_info_num(int i, const char *section, const char *field);
/* Calls of command @cmd ("evalsha", "delifeq") on every master together,
 * from commandstats (0 where a master never ran it). */
long long tc_calls(const char *cmd);
/* The compare-and-delete the cluster's server has, as commandstats names it
 * ("delifeq": Valkey 9; "delex": Redis 8.4), or NULL: asked with COMMAND
 * INFO on master 0 (the library goes by the version, trust.c: the two must
 * agree). */
const char *tc_native_delete(void);
/* Commands master @i ran that may be acquires (SET, EVALSHA, EVAL): grows by
 * at least one per acquire attempt that reached it. */
long long tc_acquires_seen(int i);

/* ------------------------------------------------------------------------ */
/* Messages and tokens                                                      */
/* ------------------------------------------------------------------------ */

/* Assert @e->msg is one non-empty line that fits its buffer (@what names
 * the call in the failure message). */
void tc_expect_msg(const redlock_error *e, const char *what);

/* 1 if @token is 32 lowercase-or-uppercase hex characters. */
int tc_is_hex32(const char *token);

/* The value of the sample @series ("name{labels}", exactly as written) in
 * the Prometheus text @text (redlock_metrics_write), or -1 if it has none. */
double tc_metric(const char *text, const char *series);

/*
 * TC_CASE_INDEXES() - The body of a ParameterizedTestParameters() over
 * the static array @table: the cases are the indexes 0..N-1
 *
 * Criterion runs each parameterized case in a worker that may be a fresh
 * exec of the binary, so pointers inside a parameter (string literals,
 * functions) would point nowhere there. The parameter is the case's index
 * into a file-scope table instead; plain integers travel fine. Needs
 * <criterion/parameterized.h>.
 */
#define TC_CASE_INDEXES(table)                                                    \
    do {                                                                          \
        static size_t idx_[sizeof(table) / sizeof((table)[0])];                   \
        for (size_t k_ = 0; k_ < sizeof(idx_) / sizeof(idx_[0]); k_++)            \
            idx_[k_] = k_;                                                        \
        return cr_make_param_array(size_t, idx_, sizeof(idx_) / sizeof(idx_[0])); \
    } while (0)

/* ------------------------------------------------------------------------ */
/* The fixture                                                              */
/* ------------------------------------------------------------------------ */

/*
 * What a test about one client and one resource starts from, and what its
 * suite's .fini takes down whether the test passed or not. A suite's .init
 * calls tc_fx_init() and adds its own settings to tc_fx.cfg; the test
 * changes tc_fx.cfg if it must and calls tc_fx_client(). Criterion runs
 * each test in a process of its own, so one global is one test's.
 */
struct tc_fx {
    redlock_config cfg;   /* tc_config(), then the suite's settings */
    redlock_client *c;    /* tc_fx_client(); freed by .fini */
    redlock_lock *l;      /* the test's lock, if any; freed (not released) by .fini */
    redlock_outcome *out; /* for the test's calls; freed by .fini */
    redlock_error e;
    char res[128];          /* a resource of the test's own (tc_resource()) */
    size_t len;             /* strlen(res) */
    char *masters;          /* tc_fx_masters_with(); freed by .fini */
    struct tc_proxy *proxy; /* tc_fx_proxy(); stopped by .fini */
};

extern struct tc_fx tc_fx;

/* For .init: tc_fx cleared, tc_config(&tc_fx.cfg), a fresh tc_fx.res. */
void tc_fx_init(void);

/* For .init of suites whose every test wants a client of the default
 * config, connected to every master: tc_fx_init(), tc_fx_client(-1). */
void tc_fx_setup(void);

/* For .fini: free tc_fx.c, then tc_fx.l; stop tc_fx.proxy; free tc_fx.masters. */
void tc_fx_fini(void);

/* The node timeout of tc_fx_init_faults(): long, so that "at once" and
 * "after the timeout" cannot be confused. */
#define TC_FAULTS_NODE_TIMEOUT_MS 2000u

/* For .init of fault suites: tc_fx_init(), then what a test about a
 * fault wants: no retries (each attempt is seen), a node timeout of
 * TC_FAULTS_NODE_TIMEOUT_MS (tests about timeouts set their own),
 * reconnects within 100 ms. */
void tc_fx_init_faults(void);

/* For .fini of fault suites: tc_heal(), then tc_fx_fini(). */
void tc_fx_fini_faults(void);

/* tc_fx.c = tc_client(&tc_fx.cfg, @want_up). Return: tc_fx.c. */
redlock_client *tc_fx_client(int want_up);

/* Master @i of tc_fx.cfg.masters replaced by a slow link (tc_proxy_start()) in
 * front of it. Return: tc_fx.proxy. */
struct tc_proxy *tc_fx_proxy(int i);

/* Master @i of tc_fx.cfg.masters replaced by @addr (tc_masters_with()). */
void tc_fx_masters_with(int i, const char *addr);

#endif
