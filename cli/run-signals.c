/* run-signals.c - job control for `run`: TSTP, TTIN and TTOU stop CMD's
 * group before us. (INT, TERM and HUP come through signals.c's self-pipe;
 * the loop, run-supervise.c, forwards them to CMD.)
 *
 * Continued, CMD goes on only with more than the guard's margin left
 * (run-guard.c). Why CMD's group stops first, and why forward, not refuse:
 * docs/waiting.md, "`run` while CMD runs" (job control).
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
