/* run.c - `redlock-cli run RESOURCE -- CMD`: run CMD while holding the lock.
 *
 * The parent acquires, forks CMD into its own process group, and extends the
 * lock every ttl/3 from a poll() loop that also hears signals (a self-pipe).
 * When the lock can no longer be vouched for - the token lost its majority,
 * or extends kept failing until only a third of the ttl was left - CMD's
 * group gets SIGTERM, then SIGKILL after --kill-after, and we exit 124, as
 * timeout(1) does: the lock is what bounds CMD's time.
 */
#include "run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acquire.h"
#include "cli.h"
#include "json.h"
#include "report.h"

extern char **environ;

/* Signals we forward to CMD; SIGCHLD wakes the loop. */
static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP};

static int sig_pipe[2] = {-1, -1};

/* Descriptors open when we started: CMD inherits these (a script may hand
 * it "3>file"), but not the masters' sockets, which hiredis opens without
 * close-on-exec and which a long-lived CMD would otherwise keep open. */
#define MAX_INHERITED 1024
static int inherited_fds[MAX_INHERITED];
static size_t n_inherited;
static int inherited_overflow;   /* too many to list: close nothing */

/* Highest descriptor open now, from /proc/self/fd; -1 if unknown. */
static int highest_fd(int (*each)(int fd))
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int hi = -1;

    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);

        if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end != '\0' || fd == dirfd(d))
            continue;
        if (each != NULL && each((int)fd) < 0)
            break;
        if (fd > hi)
            hi = (int)fd;
    }
    closedir(d);
    return hi;
}

static int note_fd(int fd)
{
    if (n_inherited == MAX_INHERITED) {
        inherited_overflow = 1;
        return -1;
    }
    inherited_fds[n_inherited++] = fd;
    return 0;
}

void cli_run_note_inherited_fds(void)
{
    if (highest_fd(note_fd) < 0 && n_inherited == 0)
        inherited_overflow = 1;   /* no /proc: do not guess */
}

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

static int setup_signals(void)
{
    struct sigaction sa;

    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* SA_RESTART: a signal must not make the library's blocking calls (or
     * our own reads) fail; the loop learns of it from the pipe. */
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < sizeof(forwarded_signals) / sizeof(forwarded_signals[0]); i++)
        if (sigaction(forwarded_signals[i], &sa, NULL) < 0)
            return -1;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    if (sigaction(SIGCHLD, &sa, NULL) < 0)
        return -1;
    return 0;
}

/* Everything the child needs, built before fork(): after fork() in a
 * process with threads (the library's I/O thread), the child may only make
 * async-signal-safe calls, so no malloc, no setenv, no execvp. */
struct exec_plan {
    unsigned char *close_fd; /* close_fd[fd] != 0: close it in the child */
    int close_hi;            /* close_fd has close_hi + 1 entries */
    char **argv;        /* CMD [ARG...] */
    char **envp;        /* environ + REDLOCK_TOKEN, REDLOCK_RESOURCE, REDLOCK_MASTERS */
    char *env_own[3];   /* the three strings we allocated */
    char **paths;       /* candidates to execve(), in $PATH order */
    size_t n_paths;
};

static void plan_free(struct exec_plan *p)
{
    for (size_t i = 0; i < 3; i++)
        free(p->env_own[i]);
    for (size_t i = 0; i < p->n_paths; i++)
        free(p->paths[i]);
    free(p->paths);
    free(p->envp);
    free(p->close_fd);
}

static char *env_entry(const char *name, const void *val, size_t len)
{
    size_t nl = strlen(name);
    char *s = malloc(nl + 1 + len + 1);

    if (s == NULL)
        return NULL;
    memcpy(s, name, nl);
    s[nl] = '=';
    memcpy(s + nl + 1, val, len);
    s[nl + 1 + len] = '\0';
    return s;
}

static int env_is(const char *entry, const char *name)
{
    size_t nl = strlen(name);

    return strncmp(entry, name, nl) == 0 && entry[nl] == '=';
}

static int plan_exec(struct exec_plan *p, const struct cli_opts *o, const char *token)
{
    const char *cmd = o->run_argv[0];
    size_t n_env = 0, k = 0;

    memset(p, 0, sizeof(*p));
    p->argv = o->run_argv;

    /* What to close in the child: every descriptor opened since we started
     * (the I/O thread may open a few more before fork(): hence the slack). */
    if (!inherited_overflow) {
        int hi = highest_fd(NULL);

        if (hi >= 0) {
            p->close_hi = hi + 64;
            p->close_fd = calloc((size_t)p->close_hi + 1, 1);
            if (p->close_fd == NULL)
                return -1;
            memset(p->close_fd + 3, 1, (size_t)p->close_hi - 2);
            for (size_t i = 0; i < n_inherited; i++)
                if (inherited_fds[i] <= p->close_hi)
                    p->close_fd[inherited_fds[i]] = 0;
        }
    }

    /* CMD learns its lock from the environment: the token (for fencing or
     * to call `redlock-cli extend` itself), the resource and the masters. */
    p->env_own[0] = env_entry("REDLOCK_TOKEN", token, strlen(token));
    p->env_own[1] = env_entry("REDLOCK_RESOURCE", o->resource, o->resource_len);
    p->env_own[2] = env_entry("REDLOCK_MASTERS", o->masters, strlen(o->masters));
    if (!p->env_own[0] || !p->env_own[1] || !p->env_own[2])
        return -1;
    while (environ[n_env] != NULL)
        n_env++;
    p->envp = calloc(n_env + 4, sizeof(char *));
    if (p->envp == NULL)
        return -1;
    for (size_t i = 0; i < n_env; i++)
        if (!env_is(environ[i], "REDLOCK_TOKEN") && !env_is(environ[i], "REDLOCK_RESOURCE") &&
            !env_is(environ[i], "REDLOCK_MASTERS"))
            p->envp[k++] = environ[i];
    for (size_t i = 0; i < 3; i++)
        p->envp[k++] = p->env_own[i];
    p->envp[k] = NULL;

    /* The $PATH search execvp() would do, as a list of paths to try. */
    if (strchr(cmd, '/') != NULL) {
        p->paths = calloc(1, sizeof(char *));
        if (p->paths == NULL || (p->paths[0] = strdup(cmd)) == NULL)
            return -1;
        p->n_paths = 1;
        return 0;
    } else {
        const char *path = getenv("PATH");
        size_t n = 1;

        if (path == NULL)
            path = "/usr/local/bin:/usr/bin:/bin";
        for (const char *s = path; *s; s++)
            n += (*s == ':');
        p->paths = calloc(n, sizeof(char *));
        if (p->paths == NULL)
            return -1;
        for (const char *s = path;; ) {
            const char *e = strchrnul(s, ':');
            size_t dl = (size_t)(e - s);
            char *c;

            if (dl == 0) {          /* an empty entry means the current directory */
                s = ".";
                dl = 1;
            }
            c = malloc(dl + 1 + strlen(cmd) + 1);
            if (c == NULL)
                return -1;
            memcpy(c, s, dl);
            c[dl] = '/';
            strcpy(c + dl + 1, cmd);
            p->paths[p->n_paths++] = c;
            if (*e == '\0')
                break;
            s = e + 1;
        }
    }
    return 0;
}

/* In the child, between fork() and execve(): async-signal-safe calls only.
 * On failure, the errno goes up @errfd (close-on-exec, so a successful exec
 * closes it and the parent reads EOF). */
static void __attribute__((noreturn))
child_exec(const struct exec_plan *p, int errfd, const sigset_t *mask, pid_t parent)
{
    struct sigaction dfl;
    int err = ENOENT, saw_eacces = 0;

    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (size_t i = 0; i < sizeof(forwarded_signals) / sizeof(forwarded_signals[0]); i++)
        sigaction(forwarded_signals[i], &dfl, NULL);
    sigaction(SIGCHLD, &dfl, NULL);
    sigaction(SIGPIPE, &dfl, NULL);     /* ignored in the parent; exec keeps SIG_IGN */

    /* Own process group: termination reaches CMD's children too, and a
     * terminal's ^C reaches only us, so CMD does not get it twice. */
    setpgid(0, 0);
    /* If redlock-cli dies (SIGKILL, OOM), nobody extends the lock any more:
     * CMD must not outlive it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(CLI_EXIT_LOST);
    sigprocmask(SIG_SETMASK, mask, NULL);
    if (p->close_fd != NULL)
        for (int fd = 3; fd <= p->close_hi; fd++)
            if (p->close_fd[fd] && fd != errfd)
                close(fd);

    for (size_t i = 0; i < p->n_paths; i++) {
        execve(p->paths[i], p->argv, p->envp);
        if (errno == EACCES) {
            saw_eacces = 1;
        } else if (errno != ENOENT && errno != ENOTDIR) {
            err = errno;
            break;
        }
    }
    if (err == ENOENT && saw_eacces)
        err = EACCES;
    if (write(errfd, &err, sizeof(err)) < 0) {
        /* the parent then sees EOF and a 127 exit */
    }
    _exit(CLI_EXIT_NOTFOUND);
}

/* Signal CMD's process group; CMD itself if it left the group. */
static void signal_cmd(pid_t pid, int sig)
{
    if (kill(-pid, sig) < 0 && errno == ESRCH)
        kill(pid, sig);
}

enum run_state {
    RUN_HOLDING,    /* lock held, extending */
    RUN_STOPPING,   /* lock lost: CMD got SIGTERM, SIGKILL at kill_deadline */
};

struct run_result {
    unsigned extends;         /* successful extends */
    unsigned extend_failures; /* failed extend calls */
    int lost;                 /* the lock could no longer be vouched for */
    int lost_rc;              /* why: the last extend's code, or EEXPIRED */
    redlock_error lost_err;
    int status;               /* CMD's wait status */
    int exec_errno;           /* 0, or why CMD could not be started */
    pid_t pid;
    int released;             /* release succeeded */
};

static int ms_until(uint64_t now, uint64_t t)
{
    uint64_t d = t > now ? t - now : 0;

    d = (d + 999) / 1000;
    return d > 60000 ? 60000 : (int)d;
}

/* The parent's loop while CMD runs. Returns once CMD has been reaped. */
static void supervise(const struct cli_opts *o, redlock_client *c, redlock_lock *lock,
                      struct run_result *r)
{
    const uint64_t ttl_us = (uint64_t)o->ttl_ms * 1000u;
    /* Extend every ttl/3; after a failure, retry every ttl/10 (at least
     * 10 ms) until only ttl/3 of validity is left. Giving up there, rather
     * than at zero, leaves CMD a third of the ttl to stop while the lock is
     * still ours. */
    const uint64_t every_us = ttl_us / 3 > 0 ? ttl_us / 3 : 1;
    const uint64_t retry_us = ttl_us / 10 > 10000 ? ttl_us / 10 : 10000;
    const int64_t floor_ms = (int64_t)(o->ttl_ms / 3);
    uint64_t next_extend = cli_now_us() + every_us;
    uint64_t kill_deadline = 0;
    enum run_state state = RUN_HOLDING;
    int killed = 0;

    for (;;) {
        struct pollfd pfd = {.fd = sig_pipe[0], .events = POLLIN};
        uint64_t now = cli_now_us();
        int timeout = -1, lost_now = 0;
        unsigned char sigs[64];
        ssize_t n;

        if (state == RUN_HOLDING) {
            if (now >= next_extend) {
                redlock_outcome out;
                redlock_error err;
                int rc;

                memset(&err, 0, sizeof(err));
                rc = redlock_extend(c, lock, o->ttl_ms, &out, &err);
                if (rc == 0) {
                    r->extends++;
                    next_extend = cli_now_us() + every_us;
                    cli_note("extended: validity %lld ms", (long long)out.validity_ms);
                } else {
                    r->extend_failures++;
                    r->lost_rc = rc;
                    r->lost_err = err;
                    /* ENOTHELD: a majority has another token, or none: the
                     * lock is gone, retrying cannot bring it back. */
                    if (rc == REDLOCK_ENOTHELD ||
                        redlock_lock_validity_ms(lock) <= floor_ms) {
                        lost_now = 1;
                        report_error("run: extend", o->resource, o->resource_len, rc, &err,
                                     &out);
                        report_votes(c, &out, 1);
                    } else {
                        /* One line per retry; the per-master detail once,
                         * if it comes to giving up. */
                        cli_warn("warning: run: extend failed (%s); retrying, validity left "
                                 "%lld ms", redlock_strerror(rc),
                                 (long long)redlock_lock_validity_ms(lock));
                        next_extend = cli_now_us() + retry_us;
                    }
                }
            }
            if (!lost_now && redlock_lock_validity_ms(lock) <= 0) {
                /* We were not scheduled for a whole lease (stopped, swapped). */
                lost_now = 1;
                r->lost_rc = REDLOCK_EEXPIRED;
                snprintf(r->lost_err.msg, sizeof(r->lost_err.msg),
                         "the lease ran out before it could be extended");
            }
            if (lost_now) {
                r->lost = 1;
                state = RUN_STOPPING;
                cli_error("run: lock lost: stopping CMD (pid %ld): SIGTERM, SIGKILL in %u ms",
                          (long)r->pid, (unsigned)o->kill_after_ms);
                signal_cmd(r->pid, SIGTERM);
                kill_deadline = cli_now_us() + (uint64_t)o->kill_after_ms * 1000u;
                continue;
            }
            timeout = ms_until(cli_now_us(), next_extend);
        } else if (!killed) {
            if (now >= kill_deadline) {
                signal_cmd(r->pid, SIGKILL);
                killed = 1;
            } else {
                timeout = ms_until(now, kill_deadline);
            }
        }

        if (poll(&pfd, 1, timeout) < 0 && errno != EINTR)
            break;   /* cannot happen with one valid fd; do not spin */
        while ((n = read(sig_pipe[0], sigs, sizeof(sigs))) > 0) {
            for (ssize_t i = 0; i < n; i++) {
                if (sigs[i] == SIGCHLD)
                    continue;
                /* Forward: CMD decides what INT/TERM/HUP mean; we keep
                 * the lock until it exits, then release it. */
                cli_note("run: forwarding signal %d to CMD", sigs[i]);
                signal_cmd(r->pid, sigs[i]);
            }
        }
        for (;;) {
            pid_t w = waitpid(r->pid, &r->status, WNOHANG);

            if (w == r->pid) {
                if (state == RUN_STOPPING)   /* leave no straggler in CMD's group */
                    kill(-r->pid, SIGKILL);
                return;
            }
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {      /* cannot happen: r->pid is our child */
                r->status = 0;
                return;
            }
            break;
        }
    }
    /* poll() failed: wait for CMD rather than leave it running unlocked. */
    signal_cmd(r->pid, SIGKILL);
    while (waitpid(r->pid, &r->status, 0) < 0 && errno == EINTR)
        ;
}

/* Start CMD. Return: 0, with r->pid set, or -1 with r->exec_errno set
 * (CMD could not be started; it has been reaped). */
static int start_cmd(const struct cli_opts *o, const char *token, struct run_result *r)
{
    struct exec_plan plan;
    sigset_t all, old;
    int errpipe[2], err = 0;
    ssize_t n;
    pid_t pid, parent = getpid();

    if (plan_exec(&plan, o, token) < 0) {
        plan_free(&plan);
        r->exec_errno = ENOMEM;
        return -1;
    }
    if (pipe2(errpipe, O_CLOEXEC) < 0) {
        r->exec_errno = errno;
        plan_free(&plan);
        return -1;
    }
    /* No handler may run in the child before it resets them. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    fflush(NULL);
    pid = fork();
    if (pid == 0)
        child_exec(&plan, errpipe[1], &old, parent);
    err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(errpipe[1]);
    if (pid < 0) {
        close(errpipe[0]);
        plan_free(&plan);
        r->exec_errno = err;
        return -1;
    }
    /* Also here, so that the group exists before we ever signal it. The
     * child may have exec'd already (EACCES): then it set it itself. */
    setpgid(pid, pid);
    r->pid = pid;
    do {
        n = read(errpipe[0], &err, sizeof(err));
    } while (n < 0 && errno == EINTR);
    close(errpipe[0]);
    plan_free(&plan);
    if (n == (ssize_t)sizeof(err)) {
        r->exec_errno = err;
        while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
            ;
        return -1;
    }
    return 0;
}

/* Drain the signal pipe; return the last terminating signal seen, or 0. */
static int pending_term_signal(void)
{
    unsigned char sigs[64];
    ssize_t n;
    int last = 0;

    while ((n = read(sig_pipe[0], sigs, sizeof(sigs))) > 0)
        for (ssize_t i = 0; i < n; i++)
            if (sigs[i] != SIGCHLD)
                last = sigs[i];
    return last;
}

static void print_json(const struct cli_opts *o, redlock_client *c, int code, int rc,
                       const redlock_error *err, const char *token,
                       const redlock_outcome *acq, const struct cli_acquire_stats *st,
                       const struct run_result *r)
{
    struct json j;

    json_init(&j, stdout);
    json_obj_begin(&j);
    if (r != NULL && r->exec_errno != 0) {
        /* Not a library failure: the code is an errno name. */
        json_key(&j, "command");
        json_cstr(&j, "run");
        json_key(&j, "ok");
        json_bool(&j, 0);
        json_key(&j, "exit");
        json_i64(&j, code);
        json_key(&j, "error");
        json_obj_begin(&j);
        json_key(&j, "code");
        json_cstr(&j, strerrorname_np(r->exec_errno) ? strerrorname_np(r->exec_errno) : "EIO");
        json_key(&j, "message");
        json_cstr(&j, strerror(r->exec_errno));
        json_obj_end(&j);
    } else {
        report_json_head(&j, "run", code, rc, err);
    }
    report_json_resource(&j, o->resource, o->resource_len);
    json_key(&j, "token");
    json_cstr(&j, token);
    json_key(&j, "ttl_ms");
    json_u64(&j, o->ttl_ms);
    json_key(&j, "validity_ms");
    json_i64(&j, token != NULL ? acq->validity_ms : 0);
    json_key(&j, "acquired_on");
    json_u64(&j, token != NULL ? acq->n_ok : 0);
    json_key(&j, "attempts");
    json_u64(&j, st->attempts);
    json_key(&j, "waited_ms");
    json_u64(&j, st->waited_us / 1000u);
    report_json_votes(&j, c, acq);
    json_key(&j, "extends");
    json_u64(&j, r ? r->extends : 0);
    json_key(&j, "extend_failures");
    json_u64(&j, r ? r->extend_failures : 0);
    json_key(&j, "lock_lost");
    json_bool(&j, r ? r->lost : 0);
    json_key(&j, "released");
    json_bool(&j, r ? r->released : 0);
    json_key(&j, "child");
    if (r == NULL || r->pid == 0) {
        json_null(&j);
    } else {
        json_obj_begin(&j);
        json_key(&j, "pid");
        json_i64(&j, r->pid);
        json_key(&j, "exit_status");
        if (r->exec_errno == 0 && WIFEXITED(r->status))
            json_i64(&j, WEXITSTATUS(r->status));
        else
            json_null(&j);
        json_key(&j, "signal");
        if (r->exec_errno == 0 && WIFSIGNALED(r->status))
            json_i64(&j, WTERMSIG(r->status));
        else
            json_null(&j);
        json_obj_end(&j);
    }
    json_obj_end(&j);
    json_end(&j);
}

int cli_run(const struct cli_opts *o, redlock_client *c)
{
    redlock_lock *lock = NULL;
    redlock_outcome acq;
    redlock_error err;
    struct cli_acquire_stats st;
    struct run_result r;
    int rc, code, sig;

    memset(&r, 0, sizeof(r));
    if (setup_signals() < 0) {
        cli_error("run: cannot set up signal handling: %s", strerror(errno));
        return CLI_EXIT_SOFTWARE;
    }
    rc = cli_acquire(o, c, sig_pipe[0], &lock, &acq, &err, &st);
    if (rc == CLI_ACQUIRE_INTERRUPTED) {
        sig = pending_term_signal();
        cli_error("run: interrupted by signal %d while waiting for the lock", sig);
        return 128 + sig;
    }
    if (rc != 0) {
        code = cli_exit_for(rc);
        if (code == CLI_EXIT_USAGE) {
            cli_usage_error("run: %s", err.msg[0] ? err.msg : redlock_strerror(rc));
            return code;
        }
        report_error("run", o->resource, o->resource_len, rc, &err, &acq);
        report_votes(c, &acq, 1);
        if (o->json)
            print_json(o, c, code, rc, &err, NULL, &acq, &st, NULL);
        return code;
    }
    report_votes(c, &acq, 0);
    cli_note("run: acquired on %u/%u masters, validity %lld ms", (unsigned)acq.n_ok,
             (unsigned)acq.n_masters, (long long)acq.validity_ms);

    sig = pending_term_signal();
    if (sig != 0) {
        /* Told to stop before CMD started: do not start it. */
        cli_error("run: interrupted by signal %d before CMD started", sig);
        code = 128 + sig;
        goto release;
    }

    if (start_cmd(o, redlock_lock_token(lock), &r) < 0) {
        int e = r.exec_errno;

        if (r.pid == 0) {
            cli_error("run: cannot start '%s': %s", o->run_argv[0], strerror(e));
            code = CLI_EXIT_SOFTWARE;
        } else if (e == ENOENT || e == ENOTDIR) {
            code = CLI_EXIT_NOTFOUND;
            if (strchr(o->run_argv[0], '/') == NULL)
                cli_error("run: '%s': command not found (check $PATH)", o->run_argv[0]);
            else
                cli_error("run: '%s': %s", o->run_argv[0], strerror(e));
        } else {
            code = CLI_EXIT_NOEXEC;
            cli_error("run: '%s': cannot execute: %s%s", o->run_argv[0], strerror(e),
                      e == EACCES ? " (chmod +x?)" :
                      e == ENOEXEC ? " (missing #! line?)" : "");
        }
        goto release;
    }

    supervise(o, c, lock, &r);
    if (r.lost) {
        code = CLI_EXIT_LOST;
    } else if (redlock_lock_validity_ms(lock) <= 0) {
        /* CMD finished, but after the lease had run out: we cannot say it
         * ran under the lock. */
        r.lost = 1;
        r.lost_rc = REDLOCK_EEXPIRED;
        snprintf(r.lost_err.msg, sizeof(r.lost_err.msg),
                 "the lease ran out before CMD finished");
        cli_error("run: %s", r.lost_err.msg);
        code = CLI_EXIT_LOST;
    } else if (WIFEXITED(r.status)) {
        code = WEXITSTATUS(r.status);
    } else if (WIFSIGNALED(r.status)) {
        code = 128 + WTERMSIG(r.status);
    } else {
        code = CLI_EXIT_SOFTWARE;
    }

release:
    {
        redlock_outcome rel;
        redlock_error rerr;
        int rrc;

        memset(&rerr, 0, sizeof(rerr));
        rrc = redlock_release(c, lock, &rel, &rerr);
        r.released = (rrc == 0);
        /* After a loss, failing to release is expected: stay quiet. */
        if (rrc != 0 && !r.lost) {
            report_error("run: release", o->resource, o->resource_len, rrc, &rerr, &rel);
            report_votes(c, &rel, 1);
            cli_error("run: the lock expires by itself within %u ms", (unsigned)o->ttl_ms);
        }
    }
    if (o->json) {
        if (r.lost)
            print_json(o, c, code, r.lost_rc, &r.lost_err, redlock_lock_token(lock), &acq, &st,
                       &r);
        else
            print_json(o, c, code, 0, NULL, redlock_lock_token(lock), &acq, &st, &r);
    }
    redlock_lock_free(lock);
    return code;
}
