/* cli.h - what the pieces of redlock-cli share: exit codes, messages, the
 * mapping from library error codes to exit codes.
 *
 * Exit codes follow sysexits(3) for our own failures and timeout(1) for
 * `run`, so a script can tell a lock failure from its command's status.
 */
#ifndef REDLOCK_CLI_H
#define REDLOCK_CLI_H

#include <stddef.h>
#include <stdint.h>

#include <redlock.h>

#define CLI_NAME "redlock-cli"

enum cli_exit {
    CLI_EXIT_OK = 0,
    CLI_EXIT_USAGE = 64,       /* EX_USAGE: bad option, value or argument */
    CLI_EXIT_NOHOST = 68,      /* EX_NOHOST: a master's host name does not resolve */
    CLI_EXIT_UNAVAILABLE = 69, /* EX_UNAVAILABLE: no quorum reachable */
    CLI_EXIT_SOFTWARE = 70,    /* EX_SOFTWARE: internal or system error */
    CLI_EXIT_TEMPFAIL = 75,    /* EX_TEMPFAIL: held elsewhere / not held by that token */
    CLI_EXIT_NOPERM = 77,      /* EX_NOPERM: the masters refuse our credentials (AUTH, ACL) */
    CLI_EXIT_CONFIG = 78,      /* EX_CONFIG: no masters given; masters or keys set up wrong */
    CLI_EXIT_LOST = 124,       /* run: the lock was lost while CMD ran */
    CLI_EXIT_NOEXEC = 126,     /* run: CMD found but not executable */
    CLI_EXIT_NOTFOUND = 127,   /* run: CMD not found */
};

/* Verbosity, set once by main() from -q / -v before anything is printed. */
extern int cli_quiet; /* 1: errors only, no warnings or notes */
extern int cli_verbose;
/* Where the value a message is about came from ("$REDLOCK_TLS",
 * "FILE:LINE"), said before the message; NULL for the command line. */
extern const char *cli_msg_source; /* 0, 1 (-v: per-master detail), 2 (-vv: library debug log) */

/* One line on stderr, prefixed with "redlock-cli: ". cli_error() always
 * prints (unless -q); cli_usage_error() always prints, even with -q, since
 * exit 64 must explain itself; cli_warn() is suppressed by -q; cli_note()
 * prints only with -v. */
enum cli_level { CLI_SAY_USAGE, CLI_SAY_ERROR, CLI_SAY_WARN, CLI_SAY_NOTE };
void cli_say(enum cli_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define cli_usage_error(...) cli_say(CLI_SAY_USAGE, __VA_ARGS__)
#define cli_error(...) cli_say(CLI_SAY_ERROR, __VA_ARGS__)
#define cli_warn(...) cli_say(CLI_SAY_WARN, __VA_ARGS__)
#define cli_note(...) cli_say(CLI_SAY_NOTE, __VA_ARGS__)

/* @len bytes of @p as a printable C string in @buf (bytes outside 0x20..0x7e
 * as \xNN; cut with "..." when longer than @cap allows), for messages about
 * resource names, which may hold any byte but NUL. Return: @buf. */
const char *cli_printable(const void *p, size_t len, char *buf, size_t cap);

/* Exit code for a REDLOCK_E* code returned by the library: the table in
 * --help and redlock-cli(1), EXIT STATUS. */
int cli_exit_for(int rc);

/* The same, for an operation on @n masters whose master @i failed with
 * @errs[i] (0 if it did not): a "no quorum" that the masters' setup alone
 * explains is not "masters down or slow" but 77 (credentials refused) or 78
 * (setup), as the library does for errors in replies. */
int cli_exit_for_masters(int rc, const int *errs, size_t n);

/* signals.c: SIGINT, SIGTERM and SIGHUP (and SIGCHLD, SIGCONT: wake-ups
 * only) written into a self-pipe by their handlers. */
int cli_signals_setup(void); /* -1 with errno */
/* SIGCHLD also when a child stops (run --foreground: the terminal's ^Z
 * stops CMD, not us). Return: 0, or -1 with errno. */
int cli_signals_child_stops(void);
int cli_signal_fd(void);           /* readable when a signal came: one byte each */
int cli_pending_term_signal(void); /* drain it: the last terminating signal, or 0 */
void cli_signals_default(void);    /* in a child, before exec: async-signal-safe */
/* sigaction(@fn, @flags) for each of @sigs. */
int cli_signals_handle(const int *sigs, size_t n, void (*fn)(int), int flags);

/* input-file.c: the files redlock-cli is told to read, opened without ever
 * blocking. cli_open_input() stat()s @path, refuses unopened what is not a
 * regular file (nor a pipe, with CLI_INPUT_PIPE_OK), opens it O_NONBLOCK
 * and checks with fstat() that it opened what it looked at (into
 * *@ret_st). @opt names it in messages ("--config"). Return: the
 * descriptor (O_NONBLOCK, O_CLOEXEC), -1 after a one-line message, or
 * CLI_INPUT_MISSING, silently, when it does not exist and
 * CLI_INPUT_MISSING_OK is given. */
struct stat;
enum {
    CLI_INPUT_PIPE_OK = 1,    /* a pipe too (read with a deadline) */
    CLI_INPUT_MISSING_OK = 2, /* a missing file is the caller's to report */
    CLI_INPUT_DIR = 4,        /* cli_check_input_kind(): a directory is wanted */
};
#define CLI_INPUT_MISSING (-2)
int cli_open_input(const char *opt, const char *path, unsigned flags, struct stat *ret_st);
/* For a file the library opens (TLS): 0 unless @path is there and of
 * another kind than @flags want (a regular file, or CLI_INPUT_DIR); then
 * -1 after a one-line message. A file that is missing or unreadable is
 * left to the library's check. */
int cli_check_input_kind(const char *opt, const char *path, unsigned flags);

/* Monotonic clock, µs. */
uint64_t cli_now_us(void);

/* Uniform random number in [0, n], for retry jitter (not cryptographic). */
uint32_t cli_jitter(uint32_t n);

#endif
