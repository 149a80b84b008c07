/* cli.h - what the redlock-cli tests share: running the real binary as a
 * script would, a scratch directory and private clusters per test, and
 * ways to await what the CLI does (a line in its output, a process state,
 * a command it sent to a master) instead of sleeping.
 *
 * Every test runs the binary built next to it (<builddir>/cli/redlock-cli,
 * or $REDLOCK_CLI) against the masters tests/with-cluster.sh started, and
 * checks what a script can see: the exit code, stdout and stderr. Faults
 * that must not disturb tests running in parallel (a majority killed, a
 * password) use small private clusters on the spare ports of the
 * executable's slot (REDLOCK_TEST_BASEPORT + 5..9). Helpers fail the
 * running test (criterion) when they cannot do their job.
 */
#ifndef TCLI_CLI_H
#define TCLI_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "await.h" /* tc_now_us(), tc_ms_since(): the clock of the tests */

#define TCLI_MAX_ARGS 80 /* a set of 64 resources, and the rest */
#define TCLI_SCRATCH_MAX 512

/* criterion's new cr_assert() pastes the first token of its (expanded)
 * argument: a plain condition must start with a function name. */
static inline int tcli_yes(int cond)
{
    return cond;
}

/* ------------------------------------------------------------------------ */
/* Fixtures: TestSuite(x, .init = tcli_setup, .fini = tcli_teardown)          */
/* ------------------------------------------------------------------------ */

extern char tcli_tmpdir[TCLI_SCRATCH_MAX]; /* this test's scratch dir */
void tcli_setup(void);
void tcli_teardown(void); /* kills what the test left running, stops a private cluster,
                           removes the dir */

/* ------------------------------------------------------------------------ */
/* Running the binary                                                       */
/* ------------------------------------------------------------------------ */

struct tcli_proc {
    pid_t pid;
    int status;          /* exit code, or 128 + signal */
    char *out;           /* stdout, NUL-terminated */
    char *err;           /* stderr */
    uint64_t started_us; /* tc_now_us() at fork */
    uint64_t elapsed_ms; /* tcli_wait_within(): from the start to the exit */
    char out_path[TCLI_SCRATCH_MAX + 32];
    char err_path[TCLI_SCRATCH_MAX + 32];
};

/* If set, tcli_start() opens this file as the CLI's descriptor 3. */
extern const char *tcli_fd3_path;

const char *tcli_path(void);

/*
 * Start redlock-cli with @args (NULL-terminated). Its environment is built
 * from scratch: PATH, REDLOCK_MASTERS = the test cluster, REDLOCK_CLI (for
 * commands run by `run`), plus @env ("NAME=value" strings, NULL-terminated;
 * "!NAME" removes NAME). stdout and stderr go to files,
 * stdin is /dev/null.
 */
void tcli_start(struct tcli_proc *p, const char *const *args, const char *const *env);
int tcli_wait(struct tcli_proc *p); /* reap, read stdout and stderr: the status */
/* tcli_wait(), for a process that must exit within @timeout_ms of its
 * start: one still running then is killed and fails the test.
 * p->elapsed_ms says how long it ran. */
int tcli_wait_within(struct tcli_proc *p, int timeout_ms);
void tcli_free(struct tcli_proc *p);
/* Start, args as a NULL-terminated list, and leave running (tcli_wait()
 * later). */
void tcli_spawn(struct tcli_proc *p, const char *const *env, ...);
#define tcli_bg(p, ...) tcli_spawn((p), NULL, __VA_ARGS__, (const char *)NULL)
/* Run to completion: the exit status. */
#define tcli_run_env(p, env, ...) (tcli_spawn((p), (env), __VA_ARGS__), tcli_wait(p))
#define tcli_run(p, ...) tcli_run_env((p), NULL, __VA_ARGS__, (const char *)NULL)
/* A FIFO in the scratch dir, its path into @path. */
void tcli_make_fifo(char *path, size_t size);
/* @text into the file @path (made or emptied). */
void tcli_put_file(const char *path, const char *text);
/* The default config file of a redlock-cli run with @env_entry in its
 * environment: <scratch>/xdg/redlock/cli.conf (the directories made, the
 * file not) into @path, "XDG_CONFIG_HOME=<scratch>/xdg" into @env_entry. */
void tcli_default_conf(char *path, size_t size, char *env_entry, size_t env_size);
/* What --no-restart-guard prints on stderr first, on every use (not with
 * -q), as one line. */
#define TCLI_GUARD_OFF_WARNING                                                          \
    "redlock-cli: warning: --no-restart-guard: the memory guard is off: a master that " \
    "restarted or lost its data counts at once and may grant a lock that is still held\n"
/* For a test that turns the guard off to talk to new masters: assert that
 * @p's stderr starts with TCLI_GUARD_OFF_WARNING and cut it out, so that
 * the checks after it see what the command said besides. */
void tcli_take_guard_warning(struct tcli_proc *p);

/* ------------------------------------------------------------------------ */
/* Small readers                                                            */
/* ------------------------------------------------------------------------ */

char *tcli_slurp(const char *path); /* the whole file; the caller frees it */
size_t tcli_count_lines(const char *s);
int tcli_is_token(const char *s); /* 32 hex digits and a newline */
int tcli_is_hex40(const char *s);
void tcli_take_token(const char *out, char *token); /* first line of @out, 33 bytes */
/* `lock --fence` prints "TOKEN\nFENCE\n": the token into @token, the fence
 * returned. */
unsigned long long tcli_take_token_and_fence(const char *out, char *token);
/* Every master's vote in a --json object: @n of them, well formed. */
void tcli_assert_votes(const char *doc, int n);

/* ------------------------------------------------------------------------ */
/* The masters                                                              */
/* ------------------------------------------------------------------------ */

int tcli_holders(const char *res, const char *token); /* masters where @res holds @token */
long long tcli_master_pttl(int i, const char *key);
/* Start @n masters on REDLOCK_TEST_BASEPORT + @offset.. and write their
 * list to @masters. One private cluster per test, stopped by tcli_teardown. */
void tcli_private_start(int n, int offset, const char *password, char *masters, size_t size);
void tcli_private_kill(int i);
void tcli_private_pause(int i); /* SIGSTOP: its socket stays open, it answers nothing */
void tcli_private_resume(int i);
int tcli_private_cluster(const char *const *args); /* cluster-up.sh on it: its status */
/* A command to private master @i, as redisCommand() formats it: the reply
 * (free it), or NULL if it did not answer within a second. */
struct redisReply *tcli_private_cmd(int i, const char *fmt, ...);
/* PTTL of @key on private master @i: -2 absent, -1 no ttl, -3 no answer. */
long long tcli_private_pttl(int i, const char *key);
/* Masters that refuse connections: loopback ports bound but never listened
 * on, so nothing else can take them while the test runs. */
void tcli_dead_masters(char *buf, size_t size, int n);
const char *tcli_clockshim_path(void); /* tests/clockshim.so, or NULL */

/* ------------------------------------------------------------------------ */
/* Awaiting events (each fails the test after @timeout_ms)                  */
/* ------------------------------------------------------------------------ */

/* A line that CMD (started by `run`) writes into the FIFO @fifo. */
void tcli_read_line_from_fifo(const char *fifo, char *buf, size_t size);
pid_t tcli_read_pid_from_fifo(const char *fifo);
/* Until the file @path contains @needle; returns its content (free it). */
char *tcli_await_file_contains(const char *path, const char *needle, int timeout_ms);
/* /proc/PID/stat's state letter ('R', 'S', 'T', 'Z'...), or 0 if gone. */
char tcli_proc_state(pid_t pid);
void tcli_await_proc_state(pid_t pid, char state, int timeout_ms);
int tcli_process_gone(pid_t pid); /* gone, or a zombie */
void tcli_await_gone(pid_t pid, int timeout_ms);
/* What master @master is asked, from now on (MONITOR): start it before
 * the command that will send what you await. */
struct tcli_monitor;
struct tcli_monitor *tcli_monitor_start(int master);
/* Until a command line containing @needle (e.g. "\"SET\" \"res\"") goes by. */
void tcli_monitor_await(struct tcli_monitor *m, const char *needle, int timeout_ms);
void tcli_monitor_stop(struct tcli_monitor *m);
/* Until every master has a waiter queued for @res (an acquire waiting in
 * its turn: the library's queue, "res\0q"). */
void tcli_await_waiting(const char *res, int timeout_ms);
/* Until every process in group @pgid is stopped (and there is one).
 * Zombies do not count as members. */
void tcli_await_group_stopped(pid_t pgid, int timeout_ms);
int tcli_group_alive(pid_t pgid);   /* some process is in group @pgid */
int tcli_group_running(pid_t pgid); /* members of group @pgid not stopped */
/* Until the file @path is larger than @size bytes. */
void tcli_await_file_grows(const char *path, long long size, int timeout_ms);
/* Until no master has @key. */
void tcli_await_key_gone(const char *key, int timeout_ms);
/* The same for a lock a command released at its quorum (the other masters
 * may not have run the release yet), with a ttl short enough to run out
 * within @timeout_ms: a key seen with a ttl that is gone only once that ttl
 * could have run out fails the test, so a release that never reached a
 * master is not mistaken for one that did. */
void tcli_await_released(const char *key, int timeout_ms);
/* Until private master @i has @key (@present), or has it no more. */
void tcli_await_private_key(int i, const char *key, int present, int timeout_ms);
long long tcli_realtime_ns(void); /* CLOCK_REALTIME, as `date +%s%N` prints it */
/* The last line of @path that starts with a digit, as a number (0: none). */
long long tcli_last_stamp(const char *path);

#endif
