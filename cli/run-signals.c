/* run-signals.c - the signals `run` handles: INT, TERM and HUP are
 * forwarded to CMD, CHLD and CONT wake the loop (run-supervise.c) through
 * a self-pipe, and TSTP, TTIN and TTOU stop CMD's group before us.
 *
 * Job control. CMD runs in a process group of its own, so a terminal's ^Z
 * (SIGTSTP), and SIGTTIN/SIGTTOU, reach only us. Were we to stop alone,
 * nobody would extend the lease, it would lapse, and CMD would keep working
 * without the lock while another holder starts. So these signals stop
 * CMD's group first (SIGSTOP, which CMD cannot ignore, as it could SIGTSTP)
 * and then us. Continued, we let CMD go on only if the lock still has more
 * than a third of its ttl; with less it is stopped as for a lost lock, and
 * if the lease ran out meanwhile its group is killed without running again.
 * Forwarding rather than refusing keeps ^Z working as users expect: the
 * whole job stops. (Refusing could not cover SIGSTOP anyway; for that, and
 * for our death, the guard process watches the lease: run-guard.c.)
 */
#include "run-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

/* Signals we forward to CMD; SIGCHLD and SIGCONT wake the loop. */
static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP};
static const int stop_signals[] = {SIGTSTP, SIGTTIN, SIGTTOU};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static int sig_pipe[2] = {-1, -1};
static volatile sig_atomic_t cmd_pgid;     /* CMD's group once it runs, else 0 */
static volatile sig_atomic_t cmd_stopped;  /* we stopped CMD's group for a ^Z */

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;

    /* Non-blocking: if the pipe is full, the loop has plenty to read. */
    if (write(sig_pipe[1], &b, 1) < 0) {
        /* nothing to do: see above */
    }
    errno = saved;
}

/* ^Z and friends: CMD's group first, then us (see the top of the file).
 * Runs on any thread; kill() is async-signal-safe. When SIGCONT continues
 * us, its own handler tells the loop. */
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

static int handle(const int *sigs, size_t n, void (*fn)(int), int flags)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = flags;
    for (size_t i = 0; i < n; i++)
        if (sigaction(sigs[i], &sa, NULL) < 0)
            return -1;
    return 0;
}

int run_signals_setup(void)
{
    static const int chld[] = {SIGCHLD}, cont[] = {SIGCONT};

    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    /* SA_RESTART: a signal must not make the library's blocking calls (or
     * our own reads) fail; the loop learns of it from the pipe. */
    if (handle(forwarded_signals, N_OF(forwarded_signals), on_signal, SA_RESTART) < 0 ||
        handle(chld, 1, on_signal, SA_RESTART | SA_NOCLDSTOP) < 0 ||
        handle(cont, 1, on_signal, SA_RESTART) < 0 ||
        handle(stop_signals, N_OF(stop_signals), on_stop_signal, SA_RESTART) < 0)
        return -1;
    return 0;
}

void run_signals_default(void)
{
    static const int others[] = {SIGCHLD, SIGCONT, SIGPIPE};

    /* Ignored in the parent (SIGPIPE), and exec keeps SIG_IGN: CMD gets
     * the defaults of everything we changed. */
    handle(forwarded_signals, N_OF(forwarded_signals), SIG_DFL, 0);
    handle(stop_signals, N_OF(stop_signals), SIG_DFL, 0);
    handle(others, N_OF(others), SIG_DFL, 0);
}

int run_signal_fd(void)
{
    return sig_pipe[0];
}

void run_cmd_started(pid_t pgid)
{
    cmd_pgid = pgid;
}

int run_pending_term_signal(void)
{
    unsigned char sigs[64];
    ssize_t n;
    int last = 0;

    while ((n = read(sig_pipe[0], sigs, sizeof(sigs))) > 0)
        for (ssize_t i = 0; i < n; i++)
            if (sigs[i] != SIGCHLD && sigs[i] != SIGCONT)
                last = sigs[i];
    return last;
}

/* Signal CMD's process group; CMD itself if it left the group. */
void run_signal_cmd(pid_t pid, int sig)
{
    if (kill(-pid, sig) < 0 && errno == ESRCH)
        kill(pid, sig);
}


int run_cmd_was_stopped(void)
{
    return cmd_stopped;
}

void run_cmd_resumed(void)
{
    cmd_stopped = 0;
}
