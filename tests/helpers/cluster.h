/* cluster.h - what a criterion test needs from the masters it runs against.
 *
 * tests/with-cluster.sh starts a fresh cluster per test executable and puts
 * its coordinates in REDLOCK_TEST_* environment variables. These helpers read
 * them, break masters on purpose through cluster-up.sh, talk to one master
 * directly with the hiredis sync API (to inspect keys, flush scripts, plant
 * wrong-type keys). Fake masters are in fake.h; running a loop until a
 * callback has run is TC_RUN_UNTIL() (core.h).
 *
 * Every helper that cannot do its job fails the running test with a message
 * (criterion's cr_fatal), so tests need not check their results, except
 * tc_cmd(), whose failures a test may want to see.
 * Outside a criterion test (a plain program: criterion's runner cannot start
 * under ThreadSanitizer) a failing helper prints the message and aborts.
 * Not thread-safe unless noted: call them from the test's thread.
 */
#ifndef TC_CLUSTER_H
#define TC_CLUSTER_H

#include <stddef.h>

#include <hiredis/hiredis.h>

struct event_base;

/* ------------------------------------------------------------------------ */
/* The cluster (from the environment)                                       */
/* ------------------------------------------------------------------------ */

/* "127.0.0.1:P0,127.0.0.1:P1,...": the config's masters string. */
const char *tc_masters(void);

/* N, the number of masters. */
int tc_n(void);

/* Port of master @i (0-based). */
int tc_port(int i);

/* "127.0.0.1:port" of master @i. Static storage; thread-safe. */
const char *tc_addr(int i);

/* The masters' password, or NULL when they need none. */
const char *tc_password(void);

/* 1 if the masters run with --aof (appendonly, appendfsync always). */
int tc_aof(void);

/* tc_masters() with master @i's address replaced by @addr (e.g. a fake
 * master's). Ownership: the caller frees the result with free(). */
char *tc_masters_with(int i, const char *addr);

/* ------------------------------------------------------------------------ */
/* Faults: cluster-up.sh on this test's cluster. Each returns once done:     */
/* kill when the process is gone, pause when it is stopped, restart and heal */
/* when the masters answer PING again.                                       */
/* ------------------------------------------------------------------------ */

void tc_kill(int i);    /* SIGKILL master @i */
void tc_pause(int i);   /* SIGSTOP: socket open, no answers */
void tc_resume(int i);  /* SIGCONT */
void tc_restart(int i); /* start a killed master again; empty unless --aof */
/* Declare master @i (-1: every master) empty on purpose: a memory marker
 * that counts at once where there is none (redlock_declare_empty()). */
void tc_declare_empty(int i);
/* Restart every dead master, resume every paused one, and declare them
 * empty: crashed masters come back as new ones. */
void tc_heal(void);
/* Make master @i (-1: every master) a new, empty one: FLUSHALL, then
 * declared empty. Its marker counts at once and remembers no ttl, so the
 * memory window a test sees is the one its own clients make. */
void tc_fresh(int i);

/* tc_restart() that returns at once, the restart running on a thread: for
 * a master that answers LOADING while it reads a large dataset, which
 * tc_restart() would wait out. tc_restart_end() waits for it and fails the
 * test if it failed. */
typedef struct tc_bg tc_bg;
tc_bg *tc_restart_begin(int i);
void tc_restart_end(tc_bg *b);

/* Master @i's own dir (its redis.conf, log, dump and AOF files). Static
 * storage per thread and master. */
const char *tc_master_dir(int i);

/* Remove @name (a file or a dir, e.g. "dump.rdb", "appendonlydir") from
 * master @i's dir, if it is there. */
void tc_master_rm(int i, const char *name);

/* CLIENT PAUSE @ms WRITE on master @i: it holds writes (SET, scripts) and
 * keeps answering reads, so this is a slow master, not a dead one. */
void tc_pause_writes(int i, int ms);

/* ------------------------------------------------------------------------ */
/* Direct commands to one master (hiredis sync API, AUTH done if needed)    */
/* ------------------------------------------------------------------------ */

/*
 * tc_cmd() - Run one command on master @i, as redisCommand() formats it
 * (%s for C strings, %b for binary with a size_t length).
 *
 * A new connection each call, with a 2 s connect and command timeout, so a
 * paused or dead master makes it return NULL rather than hang.
 * Return: the reply (an error reply is a reply), or NULL on connection or
 * I/O failure (the reason is logged).
 * Ownership: the caller frees the reply with freeReplyObject().
 */
redisReply *tc_cmd(int i, const char *fmt, ...);

/* tc_cmd() for a command whose work is the point (DEBUG POPULATE, SAVE):
 * its timeout is @timeout_s seconds, not 2, so that a loaded machine makes
 * it slow rather than failed. A paused or dead master still ends it. */
redisReply *tc_cmd_slow(int i, int timeout_s, const char *fmt, ...);

/* tc_cmd() with an argument vector (binary-safe), as redisCommandArgv(). */
redisReply *tc_cmd_argv(int i, int argc, const char **argv, const size_t *argvlen);

/* Number of masters on which @key exists (masters that do not answer count
 * as not holding it). */
int tc_key_count(const void *key, size_t len);

/* ------------------------------------------------------------------------ */
/* Test plumbing                                                            */
/* ------------------------------------------------------------------------ */

/* Fail the running test with a message: cr_fatal() inside a criterion
 * test; in a plain program, print it and abort. What every helper here
 * does when it cannot do its job. */
__attribute__((noreturn, format(printf, 1, 2))) void tc_fail(const char *fmt, ...);

/*
 * tc_resource() - A resource name no other test or run can be using
 * @buf, @size: where to write it (NUL-terminated)
 * @name:       a label, usually the test's name; NULL for "suite/test" of
 *              the running criterion test
 *
 * "<name>:<pid>:<seq>": the pid tells parallel criterion workers apart, the
 * sequence number several resources within one test.
 * Return: @buf.
 */
const char *tc_resource(char *buf, size_t size, const char *name);

#endif
