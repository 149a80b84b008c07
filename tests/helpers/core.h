/* core.h - what the redlock behaviour tests share, on top of cluster.h.
 *
 * Clients on the test cluster (config filled from REDLOCK_TEST_*, created
 * and connected or the test fails), what the masters hold under a key (GET
 * and PTTL straight from each master, binary-safe), a barrier that proves
 * every master has run what a client sent before it, and the rule that
 * every error message is one non-empty line. Like cluster.h, helpers that
 * cannot do their job fail the running test (in a plain, non-criterion
 * program: print and abort). core_expect_msg() is for criterion tests only.
 */
#ifndef TC_CORE_H
#define TC_CORE_H

#include <stddef.h>
#include <stdint.h>

#include <redlock.h>

struct event_base;

/* ------------------------------------------------------------------------ */
/* Clients                                                                  */
/* ------------------------------------------------------------------------ */

/* redlock_config_init() plus the test cluster's masters and password, and a
 * node timeout roomy enough for sanitizer builds on a loaded machine. */
void core_config(redlock_config *cfg);

/*
 * core_client() - A blocking client for @cfg (NULL: core_config()'s)
 *
 * Returns once @want_up masters answered a ping through it (-1: all N), so a
 * test starts from connected masters instead of racing the handshakes.
 * Ownership: free with redlock_client_free().
 */
redlock_client *core_client(const redlock_config *cfg, int want_up);

/* An async client on @base; not waited for (it cannot ping). */
redlock_client *core_client_async(const redlock_config *cfg, struct event_base *base);

/* Ping through @c until at least @want masters answer or @timeout_ms
 * passes; each round is one real round trip, not a sleep.
 * Return: masters that answered the last ping. */
int core_wait_up(redlock_client *c, int want, int timeout_ms);

/* ------------------------------------------------------------------------ */
/* What masters hold                                                        */
/* ------------------------------------------------------------------------ */

/*
 * core_get() - GET and PTTL of @key on master @i, binary-safe
 * @val:   receives the value, NUL-terminated and cut to @size (may be NULL)
 * @pttl:  receives PTTL in ms (-2 absent, -1 no ttl) (may be NULL)
 *
 * Return: 1 if the key holds a string, 0 if absent, -1 if the master did
 * not answer or the key holds another type.
 */
int core_get(int i, const void *key, size_t len, char *val, size_t size, long long *pttl);

/* Masters where @key holds exactly @token with 0 < PTTL <= @max_pttl_ms. */
int core_count_token(const void *key, size_t len, const char *token, long long max_pttl_ms);

/* SET @key @value PX @ttl_ms on master @i (a lock taken by "someone else"). */
void core_plant(int i, const void *key, size_t len, const char *value, unsigned ttl_ms);

/* DEL @key on every master that answers. */
void core_del_all(const void *key, size_t len);

/*
 * core_barrier() - Wait until every master has run all @c sent so far
 *
 * A status query goes down the same N connections behind everything @c
 * queued before, and each master answers in order, so once all N answered,
 * all earlier commands (the SETs or releases an early-quorum call did not
 * wait for) have run everywhere. The query is about a key of its own, so
 * whatever the test keeps under its resource cannot make it fail. Fails
 * the test if a master does not answer.
 */
void core_barrier(redlock_client *c);

/* The same for the masters in @mask (bit i: master i) only; the others may
 * be down or fakes. */
void core_barrier_on(redlock_client *c, unsigned mask);

/* An INFO field of master @i as a number ("total_commands_processed",
 * "cmdstat_eval" gives its calls=), or -1 if absent. */
long long core_info_num(int i, const char *section, const char *field);

/* ------------------------------------------------------------------------ */
/* Time and messages                                                        */
/* ------------------------------------------------------------------------ */

/* CLOCK_MONOTONIC in µs. */
uint64_t core_now_us(void);

/* Assert @e->msg is one non-empty line that fits its buffer (@what names
 * the call in the failure message). */
void core_expect_msg(const redlock_error *e, const char *what);

/* A loopback port that nothing listens on (bound, then closed). */
int core_dead_port(void);

/* 1 if @token is 32 lowercase-or-uppercase hex characters. */
int core_is_hex32(const char *token);

/* ------------------------------------------------------------------------ */
/* A slow link: a proxy in front of one master                              */
/* ------------------------------------------------------------------------ */

typedef struct core_proxy core_proxy;

/*
 * core_proxy_start() - A TCP proxy on a loopback port in front of master @i
 *
 * Replies go back at once. Commands go through at once until
 * core_proxy_hold() says otherwise; commands are counted with the hiredis
 * reader, so a hold can start between two commands sent in one write.
 * Served by a thread. Ownership: stop it with core_proxy_stop().
 */
core_proxy *core_proxy_start(int i);

/* "127.0.0.1:port" to put in a masters list. */
const char *core_proxy_addr(const core_proxy *p);

/* From now on let the next @pass commands through at once and hold every
 * later one for @delay_ms (in order) before passing it on: a master that
 * has run a command and answered, but hears the next one late. */
void core_proxy_hold(core_proxy *p, unsigned pass, unsigned delay_ms);

/* Close every connection and the listener, join the thread, free @p.
 * Held commands not yet passed on are dropped. NULL is a no-op. */
void core_proxy_stop(core_proxy *p);

#endif
