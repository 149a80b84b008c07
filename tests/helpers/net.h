/* net.h - what a criterion test needs from tests/netns.sh.
 *
 * Masters in network namespaces of the test's own (one veth each), faults
 * on their links (cut, cut-in, cut-out, heal, netem delay and loss), and a
 * side door to each master through its namespace's loopback, which no fault
 * on the link can touch: tests read what a master holds through it, and put
 * a second client on the far side of a partition by relaying to it.
 *
 * Namespaces are named rlt<pid>m<i>, so parallel runs (and criterion
 * workers) never share them; tc_net_up() first reaps those of runs that died.
 * Helpers that cannot do their job fail the running test (cr_fatal).
 */
#ifndef TC_NET_H
#define TC_NET_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include <redlock.h>

#include "await.h"
#include "relay.h"

/* Skip the running test with one line (criterion's cr_skip_test) unless
 * network namespaces can be made here. */
void tc_net_require(void);

/* Start @n masters in namespaces (netns.sh up). Fails the test on error. */
void tc_net_up(int n);

/* For .init of suites on five namespaced masters: tc_net_require(), then
 * tc_net_up(5). */
void tc_net_init(void);

/* Free what tc_net_client()/tc_net_relay_*() made, then netns.sh down. Safe to
 * call when tc_net_up() never ran or failed; meant for .fini. */
void tc_net_down(void);

const char *tc_net_masters(void); /* "10.231.X.2:6379,...": through the veths */
int tc_net_n(void);
const char *tc_net_addr(int i); /* "10.231.X.Y:6379" of master @i */
const char *tc_net_ns(int i);   /* namespace of master @i */

/* Faults on master @i's link (netns.sh cut / cut-in / cut-out / heal);
 * tc_net_heal(-1) heals every link. */
void tc_net_cut(int i);
void tc_net_cut_in(int i);  /* client -> master lost: requests */
void tc_net_cut_out(int i); /* master -> client lost: replies */
void tc_net_heal(int i);

/* netem on master @i's link, each direction. Return: 0, or 3 if netem is
 * not available (@why gets netns.sh's one line; may be NULL). */
int tc_net_delay(int i, unsigned ms, unsigned jitter_ms, char *why, size_t size);
int tc_net_loss(int i, unsigned pct, char *why, size_t size);

/*
 * tc_net_relay() - A tc_relay on 127.0.0.1:@port
 * @i:        master to forward to
 * @side:     1: through master @i's namespace loopback (the side door: no
 *            link fault reaches it); 0: through its veth (delay goes on top
 *            of whatever the link does)
 * Stopped by tc_net_down(). Fails the test if it cannot start.
 */
tc_relay *tc_net_relay(int i, int port, int side);

/* Loopback ports of the relays below: side doors on TC_NET_SIDE_PORT + i,
 * delaying relays on TC_NET_DELAY_PORT + i (tests/meson.build keeps
 * 7670-7679 for them). */
#define TC_NET_SIDE_PORT 7670
#define TC_NET_DELAY_PORT 7675

/*
 * tc_net_side_client() - A client on the far side of any partition
 *
 * Its masters are relays to each master's side door (its namespace's
 * loopback), so no fault on a link reaches it: a second client that sees
 * the masters while the test's own client cannot. node_timeout_ms as
 * given; connected, and freed, as tc_net_client().
 */
redlock_client *tc_net_side_client(unsigned node_timeout_ms);

/*
 * tc_net_delayed_masters() - One-way delays @ms[i] (+/- @jitter_ms) on master
 * i's link: tc netem when the kernel has it, else a relay per master on
 * loopback (TC_NET_DELAY_PORT + i). Says which in the test's log.
 * Return: the masters list to use (static storage).
 */
const char *tc_net_delayed_masters(const unsigned *ms, unsigned jitter_ms);

/*
 * tc_net_client() - A blocking client on @masters (NULL: tc_net_masters())
 *
 * Waits until all N masters answered a ping through it (10 s at most), so
 * a test starts from connected masters. Freed by tc_net_down() unless freed
 * first with tc_net_client_free().
 */
redlock_client *tc_net_client(const redlock_config *cfg);
void tc_net_client_free(redlock_client *c);

/* redlock_config_init() with @masters (NULL: tc_net_masters()), the node
 * timeout given, no retries. */
void tc_net_config(redlock_config *cfg, const char *masters, unsigned node_timeout_ms);

/* One command on master @i through the side door, with a 2 s timeout.
 * Return: the reply, or NULL if the master did not answer. */
redisReply *tc_net_cmd(int i, const char *fmt, ...);

/* GET @key on master @i through the side door: 1 and the value in @val
 * (cut to @size), 0 if absent. Fails the test if the master does not
 * answer or the key holds another type. */
int tc_net_get(int i, const void *key, size_t len, char *val, size_t size);

/* Masters (all N, through the side door) where @key exists. */
int tc_net_key_count(const void *key, size_t len);

/* Await @key on no master (the client cannot say when a master it got no
 * answer from has run what it was sent): 1, or 0 after @timeout_ms. */
int tc_net_await_key_gone(const void *key, size_t len, int timeout_ms);

/* Masters where @key holds exactly @token. */
int tc_net_token_count(const void *key, size_t len, const char *token);

/* calls= of INFO commandstats' cmdstat_@cmd on master @i (0 if never run). */
long long tc_net_cmdstat(int i, const char *cmd);

#endif
