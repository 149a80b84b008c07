/* signals.c - the signals that end a wait for a lock, heard through a
 * self-pipe: SIGINT, SIGTERM and SIGHUP, plus SIGCHLD and SIGCONT, which
 * only wake the reader.
 *
 * Handlers write the signal's number into a pipe (SA_RESTART); acquire.c's
 * watcher or run-supervise.c's loop reads it. Why: docs/waiting.md, "`lock`
 * and `run` waiting for the lock: signals".
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static const int term_signals[] = { SIGINT, SIGTERM, SIGHUP };
static const int wake_signals[] = { SIGCHLD, SIGCONT };

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static int sig_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;

    /* Non-blocking: if the pipe is full, the reader has plenty to read. */
    if (write(sig_pipe[1], &b, 1) < 0) {
        /* nothing to do: see above */
    }
    errno = saved;
}

int cli_signals_handle(const int *sigs, size_t n, void (*fn)(int), int flags)
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

int cli_signals_setup(void)
{
    if (sig_pipe[0] < 0 && pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    if (cli_signals_handle(term_signals, N_OF(term_signals), on_signal, SA_RESTART) < 0 ||
        cli_signals_handle(wake_signals, N_OF(wake_signals), on_signal, SA_RESTART | SA_NOCLDSTOP) <
            0)
        return -1;
    return 0;
}

int cli_signals_child_stops(void)
{
    static const int chld[] = { SIGCHLD };

    return cli_signals_handle(chld, 1, on_signal, SA_RESTART);
}

void cli_signals_default(void)
{
    static const int pipe_sig[] = { SIGPIPE };

    /* SIGPIPE is ignored in main(), and exec keeps SIG_IGN: a child gets
     * the defaults of everything we changed. */
    cli_signals_handle(term_signals, N_OF(term_signals), SIG_DFL, 0);
    cli_signals_handle(wake_signals, N_OF(wake_signals), SIG_DFL, 0);
    cli_signals_handle(pipe_sig, 1, SIG_DFL, 0);
}

int cli_signal_fd(void)
{
    return sig_pipe[0];
}

int cli_pending_term_signal(void)
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
