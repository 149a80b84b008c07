/* run-parts.h - the pieces of `redlock-cli run`, shared between run.c
 * (the command's course), run-supervise.c (signals and the loop while CMD
 * runs), run-exec.c (starting CMD) and run-guard.c (the process that stops
 * CMD's group if redlock-cli dies). Not for the rest of the CLI: run.h is
 * the interface.
 */
#ifndef REDLOCK_CLI_RUN_PARTS_H
#define REDLOCK_CLI_RUN_PARTS_H

#include <stdint.h>
#include <sys/types.h>

#include <redlock.h>

#include "opts.h"

/* The guard stops CMD's group when this much validity is left and no news
 * came (run-guard.c), and a ^Z-ed run lets CMD go on only with more left:
 * half run's floor (cli_run_floor_ms), so that a run riding out a blip
 * stops CMD itself, with the floor left, before the guard has to. */
#define RUN_GUARD_MARGIN_MS(o) (cli_run_floor_ms(o) / 2u)

struct run_result {
    unsigned extends;         /* the watchdog's extensions that succeeded */
    unsigned extend_failures; /* ... that failed */
    unsigned wd_restarts;     /* extensions the watchdog tried again after a failure */
    unsigned stops;           /* SIGTSTP/SIGTTIN/SIGTTOU passed on to CMD's group */
    int lost;                 /* the lock could no longer be vouched for: exit 124 */
    int limit_reached;        /* ... because --max-extends or --max-lease was reached */
    int lost_rc;              /* why: the watchdog's code, or EEXPIRED */
    redlock_error lost_err;
    int status;     /* CMD's wait status */
    int exec_errno; /* 0, or why CMD could not be started */
    pid_t pid;      /* CMD, also its process group */
    int released;   /* release succeeded */
};

/* The library's watchdog as the main loop sees it. */
struct watch {
    uint32_t max_extends; /* caps in force (config.c) */
    uint32_t max_lease_ms;
    uint64_t started_us; /* the caps count from here */
    uint64_t until_us;   /* latest end of validity seen: moves on with each extension */
    int running;         /* started, and no lost message read since */
    int last_failed;     /* the last extension failed */
};

/* run-signals.c: job control (signals.c has the rest). */
int run_signals_setup(void);             /* before the acquire: -1 with errno */
void run_signals_default(void);          /* in CMD's child, before exec: async-signal-safe */
void run_cmd_started(pid_t pgid);        /* from now on, stop signals reach CMD's group (0: none) */
int run_cmd_was_stopped(void);           /* a ^Z stopped CMD's group, and nobody continued it */
void run_cmd_resumed(void);              /* ... and now it is continued */
void run_signal_cmd(pid_t pid, int sig); /* CMD's group; CMD itself if it left the group */
void run_cmd_stopped_by_tty(void);       /* the terminal stopped CMD (^Z, SIGTTIN): stop us */

/* run-supervise.c: the watchdog, and the loop while CMD runs. */
int run_events_open(void); /* before the client exists: -1 with errno */
/* --metrics-file: the client's metrics into it now (no-op without
 * the option); a failure warns once and the run goes on. */
void run_metrics(const struct cli_opts *o, redlock_client *c);
void run_on_op(redlock_client *c, int status, const redlock_op_info *info, const redlock_error *err,
               void *arg); /* the client's op hook */
int run_watch_start(const struct cli_opts *o, redlock_client *c, redlock_lock *lock,
                    struct watch *w, redlock_error *err);
void run_supervise(const struct cli_opts *o, redlock_client *c, redlock_lock *lock, struct watch *w,
                   struct run_result *r);
/* After redlock_watchdog_stop(): count what the watchdog did until then. */
void run_watch_drain(redlock_lock *lock, struct watch *w, struct run_result *r);

/* run-exec.c: start CMD in a process group of its own. Return: 0, with
 * r->pid set, or -1 with r->exec_errno set (CMD did not start, and r->pid
 * is 0 or reaped already). */
int run_start_cmd(const struct cli_opts *o, const redlock_lock *lock, struct run_result *r);
/* The terminal back to our group once CMD is reaped, if CMD's group holds
 * it (run-exec.c says who holds the terminal when). */
void run_tty_restore(void);
/* The terminal to group @pgid, if CMD is to hold it and our group holds it
 * (after `fg`, not after `bg`). Return: 1 if done, else 0. */
int run_tty_give(pid_t pgid);
int run_tty_held(void); /* a controlling terminal is watched while CMD runs */
/* CMD stopped touching the terminal from the background: from now on its
 * group is to hold it whenever ours does. */
void run_tty_for_cmd(void);

/* run-guard.c: a process that outlives us, and stops CMD's group if we die
 * (SIGKILL, OOM) or stop (SIGSTOP) while the lease runs out. */
int run_guard_start(const struct cli_opts *o);       /* before CMD: -1 with errno */
void run_guard_watch(pid_t pgid, uint64_t until_us); /* CMD started; lease ends then */
void run_guard_until(uint64_t until_us);             /* the lease was extended */
void run_guard_losing(void);                         /* we stop CMD ourselves now */
void run_guard_done(void);                           /* CMD exited: stand down */

#endif
