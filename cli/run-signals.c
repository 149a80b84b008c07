/* run-signals.c - job control for `run`: TSTP, TTIN and TTOU stop CMD's
 * group before us. (INT, TERM and HUP come through signals.c's self-pipe;
 * the loop, run-supervise.c, forwards them to CMD.)
 *
 * Job control. CMD runs in a process group of its own, so a terminal's ^Z
 * (SIGTSTP), and SIGTTIN/SIGTTOU, reach only us. Were we to stop alone,
 * nobody would extend the lease, it would lapse, and CMD would keep working
 * without the lock while another holder starts. So these signals stop
 * CMD's group first (SIGSTOP, which CMD cannot ignore, as it could SIGTSTP)
 * and then us. Continued, we let CMD go on only if the lock still has more
 * than the guard's margin (run-guard.c); with less it is stopped as for a
 * lost lock, and if the lease ran out meanwhile its group is killed without
 * running again.
 * Forwarding rather than refusing keeps ^Z working as users expect: the
 * whole job stops. (Refusing could not cover SIGSTOP anyway; for that, and
 * for our death, the guard process watches the lease: run-guard.c.)
 */
#include "run-parts.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "cli.h"

static const int stop_signals[] = { SIGTSTP, SIGTTIN, SIGTTOU };

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static volatile sig_atomic_t cmd_pgid;    /* CMD's group once it runs, else 0 */
static volatile sig_atomic_t cmd_stopped; /* we stopped CMD's group for a ^Z */

/* ^Z and friends: CMD's group first, then us (see the top of the file).
 * Runs on any thread; kill() is async-signal-safe. When SIGCONT continues
 * us, its own handler (signals.c) tells the loop. */
static void on_stop_signal(int sig)
{
    int saved = errno;
    pid_t pg = cmd_pgid;

    (void)sig;
    if (pg > 0) {
        kill(-pg, SIGSTOP);
        cmd_stopped = 1;
    }
    kill(getpid(), SIGSTOP);
    errno = saved;
}

int run_signals_setup(void)
{
    if (cli_signals_setup() < 0 ||
        cli_signals_handle(stop_signals, N_OF(stop_signals), on_stop_signal, SA_RESTART) < 0)
        return -1;
    return 0;
}

void run_signals_default(void)
{
    cli_signals_default();
    cli_signals_handle(stop_signals, N_OF(stop_signals), SIG_DFL, 0);
}

void run_cmd_started(pid_t pgid)
{
    cmd_pgid = pgid;
}

/* Signal CMD's process group; CMD itself if it left the group. */
void run_signal_cmd(pid_t pid, int sig)
{
    if (kill(-pid, sig) < 0 && errno == ESRCH)
        kill(pid, sig);
}

/* With --foreground the terminal's ^Z reaches CMD's group, not us: CMD
 * stops and we would go on extending a lock nobody uses, with the shell
 * waiting on us and the terminal held by a stopped group. So we stop too,
 * as a ^Z that reached us first would have stopped both: the shell sees
 * the job stopped and takes the terminal; its `fg` continues us, and
 * resume() (run-supervise.c) hands the terminal back to CMD. */
void run_cmd_stopped_by_tty(void)
{
    cmd_stopped = 1;
    kill(getpid(), SIGSTOP);
}

int run_cmd_was_stopped(void)
{
    return cmd_stopped;
}

void run_cmd_resumed(void)
{
    cmd_stopped = 0;
}
