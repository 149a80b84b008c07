/* run.c - `redlock-cli run RESOURCE... -- CMD`: run CMD while holding the lock.
 *
 * The parent acquires (all resources or none), forks CMD into its own
 * process group, and hands the lock to the library's watchdog, which
 * extends it on the client's I/O thread whenever half the ttl is left
 * (watchdog_divisor 2). A poll() loop hears signals (a self-pipe) and the
 * watchdog's lost callback (a second pipe). When the lock can no longer be
 * vouched for - the token lost its majority, the lease ran out, the
 * --max-extends/--max-lease cap was reached, or extends kept failing until
 * only a third of the ttl was left - CMD's group gets SIGTERM, then SIGKILL
 * after --kill-after, and we exit 124, as timeout(1) does: the lock is what
 * bounds CMD's time.
 *
 * The watchdog stops at the first failed extension. A failure that can pass
 * (no quorum: masters down or slow) is not the end of the lock, so, as
 * before the watchdog, we retry: every ttl/10 (at least 10 ms) we start the
 * watchdog again, which extends at once, until only ttl/3 of validity is
 * left. Giving up there, rather than at zero, leaves CMD a third of the ttl
 * to stop while the lock is still ours. A restarted watchdog counts its caps
 * from zero, so from the first restart on we enforce what is left of them
 * here.
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
#define N_ENV_OWN 5

/* What we set in CMD's environment; inherited values of these are dropped,
 * so a nested run never passes on its parent's lock. */
static const char *const own_env_names[N_ENV_OWN] = {
    "REDLOCK_TOKEN", "REDLOCK_RESOURCE", "REDLOCK_RESOURCES", "REDLOCK_MASTERS", "REDLOCK_FENCE",
};

struct exec_plan {
    unsigned char *close_fd; /* close_fd[fd] != 0: close it in the child */
    int close_hi;            /* close_fd has close_hi + 1 entries */
    char **argv;        /* CMD [ARG...] */
    char **envp;        /* environ + own_env_names (REDLOCK_FENCE only with --fence) */
    char *env_own[N_ENV_OWN]; /* the strings we allocated, NULL if not set */
    char **paths;       /* candidates to execve(), in $PATH order */
    size_t n_paths;
};

static void plan_free(struct exec_plan *p)
{
    for (size_t i = 0; i < N_ENV_OWN; i++)
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

/* $REDLOCK_RESOURCES: every name, one per line, no trailing newline (a set
 * with a name holding a newline is refused by opts.c). */
static char *resources_entry(const struct cli_opts *o)
{
    size_t len = 0, at = 0;
    char *val, *e;

    for (size_t i = 0; i < o->n_resources; i++)
        len += o->set[i].len + 1;
    val = malloc(len);
    if (val == NULL)
        return NULL;
    for (size_t i = 0; i < o->n_resources; i++) {
        memcpy(val + at, o->set[i].name, o->set[i].len);
        at += o->set[i].len;
        val[at++] = '\n';
    }
    e = env_entry("REDLOCK_RESOURCES", val, at - 1);
    free(val);
    return e;
}

static int plan_exec(struct exec_plan *p, const struct cli_opts *o, const redlock_lock *lock)
{
    const char *cmd = o->run_argv[0];
    const char *token = redlock_lock_token(lock);
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

    /* CMD learns its lock from the environment: the token (to call
     * `redlock-cli extend` itself), the resources (the first alone, for
     * scripts written for one; then all of them), the masters, and with
     * --fence the fencing token for the resource it protects. */
    p->env_own[0] = env_entry("REDLOCK_TOKEN", token, strlen(token));
    p->env_own[1] = env_entry("REDLOCK_RESOURCE", o->resource, o->resource_len);
    p->env_own[2] = resources_entry(o);
    p->env_own[3] = env_entry("REDLOCK_MASTERS", o->masters, strlen(o->masters));
    if (!p->env_own[0] || !p->env_own[1] || !p->env_own[2] || !p->env_own[3])
        return -1;
    if (o->fence) {
        char fence[24];

        snprintf(fence, sizeof(fence), "%llu", (unsigned long long)redlock_lock_fence(lock));
        p->env_own[4] = env_entry("REDLOCK_FENCE", fence, strlen(fence));
        if (p->env_own[4] == NULL)
            return -1;
    }
    while (environ[n_env] != NULL)
        n_env++;
    p->envp = calloc(n_env + N_ENV_OWN + 1, sizeof(char *));
    if (p->envp == NULL)
        return -1;
    for (size_t i = 0; i < n_env; i++) {
        int ours = 0;

        for (size_t e = 0; e < N_ENV_OWN; e++)
            ours |= env_is(environ[i], own_env_names[e]);
        if (!ours)
            p->envp[k++] = environ[i];
    }
    for (size_t i = 0; i < N_ENV_OWN; i++)
        if (p->env_own[i] != NULL)
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
    RUN_HOLDING,    /* lock held, the watchdog extending it */
    RUN_STOPPING,   /* lock lost: CMD got SIGTERM, SIGKILL at kill_deadline */
};

struct run_result {
    unsigned extends;         /* extensions seen (the watchdog's, by their effect) */
    unsigned extend_failures; /* extensions that failed */
    unsigned wd_restarts;     /* watchdog started again after a failure that can pass */
    int lost;                 /* the lock could no longer be vouched for: exit 124 */
    int limit_reached;        /* ... because --max-extends or --max-lease was reached */
    int lost_rc;              /* why: the watchdog's code, or EEXPIRED */
    redlock_error lost_err;
    int status;               /* CMD's wait status */
    int exec_errno;           /* 0, or why CMD could not be started */
    pid_t pid;
    int released;             /* release succeeded */
};

/* The watchdog as the main loop sees it. */
struct watch {
    uint32_t max_extends;     /* caps in force: ours, else the library's */
    uint32_t max_lease_ms;
    uint64_t started_us;      /* the first start: the caps count from here */
    uint64_t until_us;        /* latest end of validity seen: moves on with each extension */
    uint64_t restart_at;      /* 0, or when to start the watchdog again */
    int running;              /* started, and no lost message read since */
};

/* What the watchdog's lost callback hands the main loop, through wd_pipe. */
struct wd_msg {
    int status;
    redlock_error err;
};

static int wd_pipe[2] = {-1, -1};

/* On the library's I/O thread: it must not block or call back into the
 * library. One message per watchdog start, far below the pipe's capacity
 * and PIPE_BUF (so it arrives whole); were it lost, supervise() would
 * still see the validity run down. */
static void on_watchdog_lost(redlock_client *c, redlock_lock *lock, int status,
                             const redlock_error *err, void *arg)
{
    struct wd_msg m;

    (void)c;
    (void)lock;
    (void)arg;
    memset(&m, 0, sizeof(m));
    m.status = status;
    if (err != NULL)
        m.err = *err;
    if (write(wd_pipe[1], &m, sizeof(m)) < 0) {
        /* see above */
    }
}

#define CLI_RUN_MAX_EXTENDS 1000000u        /* default --max-extends */
#define CLI_RUN_MAX_LEASE_MS 604800000u     /* default --max-lease: 7 days */

static void watch_init(const struct cli_opts *o, const redlock_lock *lock, struct watch *w)
{
    int64_t left = redlock_lock_validity_ms(lock);

    memset(w, 0, sizeof(*w));
    /* Batch jobs (a nightly backup) run for hours: the library's one-hour
     * default would stop them by surprise. Still limited, as the spec asks,
     * but by a week. */
    w->max_extends = o->max_extends ? o->max_extends : CLI_RUN_MAX_EXTENDS;
    w->max_lease_ms = o->max_lease_ms ? o->max_lease_ms : CLI_RUN_MAX_LEASE_MS;
    w->started_us = cli_now_us();
    w->until_us = w->started_us + (left > 0 ? (uint64_t)left * 1000u : 0);
}

/* Count extensions by their effect: each moves the end of validity on by
 * about half a ttl. redlock_lock_validity_ms() rounds down to the ms, so a
 * move of more than 2 ms is an extension, not rounding. Exact as long as
 * we look more often than the watchdog extends (every ttl/10 vs ttl/2). */
static void note_extends(const redlock_lock *lock, struct watch *w, struct run_result *r)
{
    int64_t left = redlock_lock_validity_ms(lock);
    uint64_t until;

    if (left <= 0)
        return;
    until = cli_now_us() + (uint64_t)left * 1000u;
    if (until > w->until_us + 2000u)
        r->extends++;
    if (until > w->until_us)
        w->until_us = until;
}

static int limits_reached(const struct watch *w, const struct run_result *r, uint64_t now)
{
    return r->extends >= w->max_extends ||
           (now - w->started_us) / 1000u >= (uint64_t)w->max_lease_ms;
}

/* A loss that waiting cannot cure: the token no longer holds a majority,
 * the lease ran out, a cap was reached, or the client is going away. */
static int loss_is_final(int rc)
{
    return rc == REDLOCK_ENOTHELD || rc == REDLOCK_EEXPIRED || rc == REDLOCK_ELIMIT ||
           rc == REDLOCK_ESHUTDOWN || rc == REDLOCK_EINVAL || rc == REDLOCK_ENOMEM;
}

/* The lock can no longer be vouched for (r->lost_rc says why): say so, and
 * stop CMD. */
static void lose(const struct cli_opts *o, const struct watch *w, struct run_result *r)
{
    r->lost = 1;
    if (r->lost_rc == REDLOCK_ELIMIT) {
        r->limit_reached = 1;
        snprintf(r->lost_err.msg, sizeof(r->lost_err.msg),
                 "watchdog limit reached (--max-extends %u, --max-lease %u ms) after %u "
                 "extensions and %llu ms: the lock is no longer extended", w->max_extends,
                 w->max_lease_ms, r->extends,
                 (unsigned long long)((cli_now_us() - w->started_us) / 1000u));
        report_error_set("run", o->set, o->n_resources, r->lost_rc, &r->lost_err, NULL);
        cli_error("run: lease limit reached: stopping CMD (pid %ld): SIGTERM, SIGKILL in %u ms",
                  (long)r->pid, (unsigned)o->kill_after_ms);
    } else {
        report_error_set("run: extend", o->set, o->n_resources, r->lost_rc, &r->lost_err, NULL);
        cli_error("run: lock lost: stopping CMD (pid %ld): SIGTERM, SIGKILL in %u ms",
                  (long)r->pid, (unsigned)o->kill_after_ms);
    }
    signal_cmd(r->pid, SIGTERM);
}

static int ms_until(uint64_t now, uint64_t t)
{
    uint64_t d = t > now ? t - now : 0;

    d = (d + 999) / 1000;
    return d > 60000 ? 60000 : (int)d;
}

/* The parent's loop while CMD runs. Returns once CMD has been reaped. */
static void supervise(const struct cli_opts *o, redlock_client *c, redlock_lock *lock,
                      struct watch *w, struct run_result *r)
{
    const uint64_t ttl_us = (uint64_t)o->ttl_ms * 1000u;
    /* After a failure that can pass, extend again every ttl/10 (at least
     * 10 ms) until only ttl/3 of validity is left (see the top of the file).
     * Between events, look at the lock as often, at most every second. */
    const uint64_t retry_us = ttl_us / 10 > 10000 ? ttl_us / 10 : 10000;
    const uint64_t tick_us = retry_us < 1000000 ? retry_us : 1000000;
    const int64_t floor_ms = (int64_t)(o->ttl_ms / 3);
    uint64_t kill_deadline = 0;
    enum run_state state = RUN_HOLDING;
    int killed = 0;

    for (;;) {
        struct pollfd pfd[2] = {{.fd = sig_pipe[0], .events = POLLIN},
                                {.fd = wd_pipe[0], .events = POLLIN}};
        uint64_t now = cli_now_us();
        int timeout = -1;
        unsigned char sigs[64];
        struct wd_msg m;
        ssize_t n;

        if (state == RUN_HOLDING) {
            int lost_now = 0;
            int64_t left;

            note_extends(lock, w, r);
            left = redlock_lock_validity_ms(lock);
            if (left <= 0) {
                /* We were not scheduled for a whole lease (stopped,
                 * swapped), and neither was the watchdog. */
                lost_now = 1;
                r->lost_rc = REDLOCK_EEXPIRED;
                snprintf(r->lost_err.msg, sizeof(r->lost_err.msg),
                         "the lease ran out before it could be extended");
            } else if (w->restart_at != 0 && now >= w->restart_at) {
                redlock_error err;
                int rc;

                w->restart_at = 0;
                if (left <= floor_ms) {
                    lost_now = 1;   /* with the last failure's code and message */
                } else if (limits_reached(w, r, now)) {
                    lost_now = 1;
                    r->lost_rc = REDLOCK_ELIMIT;
                } else {
                    /* Extends at once: less than ttl/2 is left. */
                    memset(&err, 0, sizeof(err));
                    rc = redlock_watchdog_start(c, lock, on_watchdog_lost, NULL, &err);
                    if (rc == 0) {
                        w->running = 1;
                        r->wd_restarts++;
                    } else {
                        lost_now = 1;
                        r->lost_rc = rc;
                        r->lost_err = err;
                    }
                }
            } else if (r->wd_restarts > 0 && w->running && limits_reached(w, r, now)) {
                /* A restarted watchdog counts its caps from zero: what is
                 * left of ours is enforced here. */
                redlock_watchdog_stop(c, lock);
                w->running = 0;
                lost_now = 1;
                r->lost_rc = REDLOCK_ELIMIT;
            }
            if (lost_now) {
                if (w->running) {
                    redlock_watchdog_stop(c, lock);
                    w->running = 0;
                }
                state = RUN_STOPPING;
                lose(o, w, r);
                kill_deadline = cli_now_us() + (uint64_t)o->kill_after_ms * 1000u;
                continue;
            }
            timeout = ms_until(now, now + tick_us);
            if (w->restart_at != 0 && ms_until(now, w->restart_at) < timeout)
                timeout = ms_until(now, w->restart_at);
        } else if (!killed) {
            if (now >= kill_deadline) {
                signal_cmd(r->pid, SIGKILL);
                killed = 1;
            } else {
                timeout = ms_until(now, kill_deadline);
            }
        }

        if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
            break;   /* cannot happen with valid fds; do not spin */
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
        while (read(wd_pipe[0], &m, sizeof(m)) == (ssize_t)sizeof(m)) {
            int64_t left;

            w->running = 0;
            if (state != RUN_HOLDING)
                continue;
            r->lost_rc = m.status;
            r->lost_err = m.err;
            if (m.status != REDLOCK_ELIMIT && m.status != REDLOCK_ESHUTDOWN)
                r->extend_failures++;
            left = redlock_lock_validity_ms(lock);
            if (loss_is_final(m.status) || left <= floor_ms) {
                /* ENOTHELD: a majority has another token, or none: the
                 * lock is gone, retrying cannot bring it back. */
                state = RUN_STOPPING;
                lose(o, w, r);
                kill_deadline = cli_now_us() + (uint64_t)o->kill_after_ms * 1000u;
                continue;
            }
            /* One line per retry; the cause in full once, if it comes to
             * giving up. */
            cli_warn("warning: run: extend failed (%s); retrying, validity left %lld ms",
                     redlock_strerror(m.status), (long long)left);
            w->restart_at = cli_now_us() + retry_us;
        }
        for (;;) {
            pid_t wp = waitpid(r->pid, &r->status, WNOHANG);

            if (wp == r->pid) {
                if (state == RUN_STOPPING)   /* leave no straggler in CMD's group */
                    kill(-r->pid, SIGKILL);
                return;
            }
            if (wp < 0 && errno == EINTR)
                continue;
            if (wp < 0) {     /* cannot happen: r->pid is our child */
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
static int start_cmd(const struct cli_opts *o, const redlock_lock *lock, struct run_result *r)
{
    struct exec_plan plan;
    sigset_t all, old;
    int errpipe[2], err = 0;
    ssize_t n;
    pid_t pid, parent = getpid();

    if (plan_exec(&plan, o, lock) < 0) {
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
                       const redlock_error *err, const redlock_lock *lock,
                       const redlock_outcome *acq, const struct cli_acquire_stats *st,
                       const struct run_result *r, const struct watch *w)
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
    report_json_set(&j, o->set, o->n_resources);
    json_key(&j, "token");
    json_cstr(&j, lock != NULL ? redlock_lock_token(lock) : NULL);
    json_key(&j, "fence");
    if (lock != NULL && o->fence)
        json_u64(&j, redlock_lock_fence(lock));
    else
        json_null(&j);
    json_key(&j, "ttl_ms");
    json_u64(&j, o->ttl_ms);
    json_key(&j, "validity_ms");
    json_i64(&j, lock != NULL ? acq->validity_ms : 0);
    json_key(&j, "acquired_on");
    json_u64(&j, lock != NULL ? acq->n_ok : 0);
    json_key(&j, "attempts");
    json_u64(&j, st->attempts);
    json_key(&j, "waited_ms");
    json_u64(&j, st->waited_us / 1000u);
    report_json_votes(&j, c, acq);
    json_key(&j, "extends");
    json_u64(&j, r ? r->extends : 0);
    json_key(&j, "extend_failures");
    json_u64(&j, r ? r->extend_failures : 0);
    json_key(&j, "watchdog_restarts");
    json_u64(&j, r ? r->wd_restarts : 0);
    json_key(&j, "max_extends");
    if (w != NULL)
        json_u64(&j, w->max_extends);
    else
        json_null(&j);
    json_key(&j, "max_lease_ms");
    if (w != NULL)
        json_u64(&j, w->max_lease_ms);
    else
        json_null(&j);
    json_key(&j, "lock_lost");
    json_bool(&j, r ? r->lost : 0);
    json_key(&j, "limit_reached");
    json_bool(&j, r ? r->limit_reached : 0);
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
    struct watch w;
    int rc, code, sig;

    memset(&r, 0, sizeof(r));
    memset(&w, 0, sizeof(w));
    if (setup_signals() < 0 || pipe2(wd_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
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
        report_error_set("run", o->set, o->n_resources, rc, &err, &acq);
        report_votes(c, &acq, 1);
        if (o->json)
            print_json(o, c, code, rc, &err, NULL, &acq, &st, NULL, NULL);
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

    /* From here the library extends the lock, before CMD even starts. */
    watch_init(o, lock, &w);
    memset(&err, 0, sizeof(err));
    rc = redlock_watchdog_start(c, lock, on_watchdog_lost, NULL, &err);
    if (rc != 0) {
        /* EINVAL: no validity left, we were too slow to get here. */
        cli_error("run: cannot keep the lock extended: %s",
                  err.msg[0] ? err.msg : redlock_strerror(rc));
        code = cli_exit_for(rc == REDLOCK_EINVAL ? REDLOCK_EEXPIRED : rc);
        goto release;
    }
    w.running = 1;

    if (start_cmd(o, lock, &r) < 0) {
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

    supervise(o, c, lock, &w, &r);
    /* No more extensions, and no lost callback after this returns. */
    redlock_watchdog_stop(c, lock);
    note_extends(lock, &w, &r);
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

        /* Also stops the watchdog, if CMD never started. */
        memset(&rerr, 0, sizeof(rerr));
        rrc = redlock_release(c, lock, &rel, &rerr);
        r.released = (rrc == 0);
        /* After a loss, failing to release is expected: stay quiet. */
        if (rrc != 0 && !r.lost) {
            report_error_set("run: release", o->set, o->n_resources, rrc, &rerr, &rel);
            report_votes(c, &rel, 1);
            cli_error("run: the lock expires by itself within %u ms", (unsigned)o->ttl_ms);
        }
    }
    if (o->json) {
        const struct watch *wp = w.started_us != 0 ? &w : NULL;

        if (r.lost)
            print_json(o, c, code, r.lost_rc, &r.lost_err, lock, &acq, &st, &r, wp);
        else
            print_json(o, c, code, 0, NULL, lock, &acq, &st, &r, wp);
    }
    redlock_lock_free(lock);
    return code;
}
