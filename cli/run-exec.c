/* run-exec.c - starting `run`'s CMD: its environment, its descriptors, the
 * $PATH search, and fork/exec in a process group of its own.
 *
 * Everything the child needs is built before fork(): after fork() in a
 * process with threads (the library's I/O thread), the child may only make
 * async-signal-safe calls, so no malloc, no setenv, no execvp.
 */
#include "run-parts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "run.h"

extern char **environ;

/* Descriptors open when we started: CMD inherits these (a script may hand
 * it "3>file"), but not the masters' sockets, which hiredis opens without
 * close-on-exec and which a long-lived CMD would otherwise keep open. */
#define MAX_INHERITED 1024
static int inherited_fds[MAX_INHERITED];
static size_t n_inherited;
static int inherited_overflow; /* too many to list: close nothing */

/* Highest descriptor open now, from /proc/self/fd; -1 if unknown. */
static int highest_fd(int (*each)(int fd))
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int hi = -1;

    if (!d)
        return -1;
    while ((e = readdir(d))) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);

        if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end != '\0' || fd == dirfd(d))
            continue;
        if (each && each((int)fd) < 0)
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
        inherited_overflow = 1; /* no /proc: do not guess */
}

#define N_ENV_OWN 4

/* What we set in CMD's environment about the lock; inherited values of
 * these are dropped, so a nested run never passes on its parent's lock.
 * The settings (o->run_env) are dropped and set the same way. */
static const char *const own_env_names[N_ENV_OWN] = {
    "REDLOCK_TOKEN",
    "REDLOCK_RESOURCE",
    "REDLOCK_RESOURCES",
    "REDLOCK_FENCE",
};

struct exec_plan {
    unsigned char *close_fd;  /* close_fd[fd] != 0: close it in the child */
    int close_hi;             /* close_fd has close_hi + 1 entries */
    char **argv;              /* CMD [ARG...] */
    char **envp;              /* environ + own_env_names (REDLOCK_FENCE only with --fence)
                                 + o->run_env */
    char *env_own[N_ENV_OWN]; /* the strings we allocated, NULL if not set */
    char **paths;             /* candidates to execve(), in $PATH order */
    size_t n_paths;
    int pdeath_signal; /* CMD gets it if we die before the guard knows it */
    int tty_fd;        /* the terminal CMD's group takes if ours holds it, or -1 */
};

/* The terminal, as flock(1) leaves it: flock's command runs in flock's own
 * process group, so it reads the terminal whenever flock could. Ours runs
 * in a group of its own (so that the loss signal reaches its children),
 * which the terminal treats as a background job: reading it would stop CMD
 * (SIGTTIN) while we went on extending, and the run would hang silently.
 * So while CMD runs we keep the controlling terminal open (fg_tty), and:
 *   - CMD's group takes it at the start (fg_cmd) when --foreground says
 *     so or when stdin and stdout are the terminal (flock's case), if
 *     our group holds it then: a run started with `&` never takes it from
 *     the shell's foreground job;
 *   - otherwise (stdin redirected, or started in the background), a CMD
 *     that touches the terminal anyway (sudo, ssh read /dev/tty) stops on
 *     SIGTTIN or SIGTTOU: we stop with it, so the shell shows the job
 *     stopped, and its `fg` hands the terminal to CMD (run-supervise.c);
 *   - when CMD is reaped, the terminal goes back to our group, if CMD's
 *     group still holds it.
 * Nothing changes for the lock: the loss signal, the guard and the release
 * do not depend on who holds the terminal; a ^C now reaches CMD's group
 * directly instead of being forwarded by us, with the same effect. */
static int fg_tty = -1;
static pid_t fg_pgid; /* CMD's group, once it runs */
static int fg_cmd;    /* CMD's group is to hold the terminal whenever ours has it */

static int controlling_tty(void)
{
    return open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
}

int run_tty_held(void)
{
    return fg_tty >= 0;
}

void run_tty_for_cmd(void)
{
    if (fg_tty >= 0)
        fg_cmd = 1;
}

/* The terminal from group @from to group @to, if @from holds it: never
 * take it from whoever the shell gave it to meanwhile (after a ^Z and
 * `bg`, the shell itself). SIGTTOU is blocked around tcsetpgrp(): called
 * from a background group, it would otherwise send us SIGTTOU, whose
 * handler stops CMD's group and us (run-signals.c); blocked, the kernel
 * lets the call through. */
static int tty_pass(pid_t from, pid_t to)
{
    sigset_t ttou, old;
    int rc;

    if (fg_tty < 0 || tcgetpgrp(fg_tty) != from)
        return 0;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &ttou, &old);
    rc = tcsetpgrp(fg_tty, to);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc == 0;
}

int run_tty_give(pid_t pgid)
{
    return fg_cmd && tty_pass(getpgrp(), pgid);
}

void run_tty_restore(void)
{
    if (fg_tty < 0)
        return;
    if (fg_pgid > 0)
        tty_pass(fg_pgid, getpgrp());
    close(fg_tty);
    fg_tty = -1;
    fg_pgid = 0;
    fg_cmd = 0;
}

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

    if (!s)
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

/* Does @entry ("NAME=value") name a variable o->run_env sets or drops? */
static int env_in_run_env(const char *entry, char *const *run_env)
{
    for (; run_env && *run_env; run_env++) {
        size_t nl = strcspn(*run_env, "=");

        if (strncmp(entry, *run_env, nl) == 0 && entry[nl] == '=')
            return 1;
    }
    return 0;
}

/* $REDLOCK_RESOURCES: every name, one per line, no trailing newline (a set
 * with a name holding a newline is refused by opts-args.c). */
static char *resources_entry(const struct cli_opts *o)
{
    size_t len = 0, at = 0;
    char *val, *e;

    for (size_t i = 0; i < o->n_resources; i++)
        len += o->set[i].len + 1;
    val = malloc(len);
    if (!val)
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

/* What to close in the child: every descriptor opened since we started
 * (the I/O thread may open a few more before fork(): hence the slack). */
static int plan_fds(struct exec_plan *p)
{
    int hi;

    if (inherited_overflow || (hi = highest_fd(NULL)) < 0)
        return 0;
    p->close_hi = hi + 64;
    p->close_fd = calloc((size_t)p->close_hi + 1, 1);
    if (!p->close_fd)
        return -1;
    memset(p->close_fd + 3, 1, (size_t)p->close_hi - 2);
    for (size_t i = 0; i < n_inherited; i++)
        if (inherited_fds[i] <= p->close_hi)
            p->close_fd[inherited_fds[i]] = 0;
    return 0;
}

/* CMD learns its lock from the environment: the token (to call `redlock-cli
 * extend` itself), the resources (the first alone, for scripts written for
 * one; then all of them), and with --fence the fencing token for the
 * resource it protects; and every setting this run resolved, wherever it
 * came from (o->run_env: the masters, --user, --cacert, --prefix...), so
 * that the redlock-cli it calls talks to the same masters the same way. */
static int plan_env(struct exec_plan *p, const struct cli_opts *o, const redlock_lock *lock)
{
    const char *token = redlock_lock_token(lock);
    size_t n_env = 0, n_run = 0, k = 0;

    p->env_own[0] = env_entry("REDLOCK_TOKEN", token, strlen(token));
    p->env_own[1] = env_entry("REDLOCK_RESOURCE", o->resource, o->resource_len);
    p->env_own[2] = resources_entry(o);
    if (!p->env_own[0] || !p->env_own[1] || !p->env_own[2])
        return -1;
    if (o->fence) {
        char fence[24];

        snprintf(fence, sizeof(fence), "%llu", (unsigned long long)redlock_lock_fence(lock));
        p->env_own[3] = env_entry("REDLOCK_FENCE", fence, strlen(fence));
        if (!p->env_own[3])
            return -1;
    }
    while (environ[n_env])
        n_env++;
    while (o->run_env && o->run_env[n_run])
        n_run++;
    p->envp = calloc(n_env + N_ENV_OWN + n_run + 1, sizeof(char *));
    if (!p->envp)
        return -1;
    for (size_t i = 0; i < n_env; i++) {
        int ours = env_in_run_env(environ[i], o->run_env);

        for (size_t e = 0; e < N_ENV_OWN; e++)
            ours |= env_is(environ[i], own_env_names[e]);
        if (!ours)
            p->envp[k++] = environ[i];
    }
    for (size_t i = 0; i < N_ENV_OWN; i++)
        if (p->env_own[i])
            p->envp[k++] = p->env_own[i];
    for (size_t i = 0; i < n_run; i++)
        if (strchr(o->run_env[i], '='))
            p->envp[k++] = o->run_env[i];
    p->envp[k] = NULL;
    return 0;
}

/* The $PATH search execvp() would do, as a list of paths to try. */
static int plan_paths(struct exec_plan *p, const char *cmd)
{
    const char *path = getenv("PATH");
    size_t n = 1;

    if (strchr(cmd, '/')) {
        p->paths = calloc(1, sizeof(char *));
        if (!p->paths || !(p->paths[0] = strdup(cmd)))
            return -1;
        p->n_paths = 1;
        return 0;
    }
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *s = path; *s; s++)
        n += (*s == ':');
    p->paths = calloc(n, sizeof(char *));
    if (!p->paths)
        return -1;
    for (const char *s = path;;) {
        const char *e = strchrnul(s, ':');
        size_t dl = (size_t)(e - s);
        char *c;

        if (dl == 0) { /* an empty entry means the current directory */
            s = ".";
            dl = 1;
        }
        c = malloc(dl + 1 + strlen(cmd) + 1);
        if (!c)
            return -1;
        memcpy(c, s, dl);
        c[dl] = '/';
        strcpy(c + dl + 1, cmd);
        p->paths[p->n_paths++] = c;
        if (*e == '\0')
            return 0;
        s = e + 1;
    }
}

static int plan_exec(struct exec_plan *p, const struct cli_opts *o, const redlock_lock *lock)
{
    memset(p, 0, sizeof(*p));
    p->argv = o->run_argv;
    p->pdeath_signal = o->loss_signal;
    p->tty_fd = fg_cmd ? fg_tty : -1;
    if (plan_fds(p) < 0 || plan_env(p, o, lock) < 0)
        return -1;
    return plan_paths(p, o->run_argv[0]);
}

/* In the child, between fork() and execve(): async-signal-safe calls only.
 * On failure, the errno goes up @errfd (close-on-exec, so a successful exec
 * closes it and the parent reads EOF). */
static void __attribute__((noreturn))
child_exec(const struct exec_plan *p, int errfd, const sigset_t *mask, pid_t parent)
{
    int err = ENOENT, saw_eacces = 0;
    pid_t parent_group = getpgrp();

    run_signals_default();
    /* Own process group: termination reaches CMD's children too, and a
     * terminal's ^C reaches only us, so CMD does not get it twice. */
    setpgid(0, 0);
    /* CMD's group takes the terminal (fg_cmd), so that CMD can read it (a
     * background group reading it gets SIGTTIN), if our group holds it.
     * Done here as well as in the parent, so that CMD never runs before it
     * is done; every signal is still blocked, SIGTTOU too, so the call is
     * let through (tcgetpgrp and tcsetpgrp are async-signal-safe). */
    if (p->tty_fd >= 0 && tcgetpgrp(p->tty_fd) == parent_group)
        tcsetpgrp(p->tty_fd, getpid());
    /* If redlock-cli dies (SIGKILL, OOM), nobody extends the lock any more.
     * The guard (run-guard.c) stops the whole group then; this covers CMD
     * itself until the guard has heard of it. */
    prctl(PR_SET_PDEATHSIG, p->pdeath_signal);
    if (getppid() != parent)
        _exit(CLI_EXIT_LOST);
    sigprocmask(SIG_SETMASK, mask, NULL);
    if (p->close_fd)
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

int run_start_cmd(const struct cli_opts *o, const redlock_lock *lock, struct run_result *r)
{
    struct exec_plan plan;
    sigset_t all, old;
    int errpipe[2], err = 0;
    ssize_t n;
    pid_t pid, parent = getpid();

    fg_tty = controlling_tty();
    /* CMD gets the terminal when it is the terminal's whole user: stdin and
     * stdout both the terminal. In a pipeline (make | less) the other end
     * shares our process group, and taking the terminal from it would stop
     * it; --foreground asks for it all the same. */
    fg_cmd = fg_tty >= 0 && (o->foreground || (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)));
    if (fg_tty >= 0 && cli_signals_child_stops() < 0) {
        close(fg_tty);
        fg_tty = -1;
        fg_cmd = 0;
    }
    if (plan_exec(&plan, o, lock) < 0) {
        run_tty_restore();
        plan_free(&plan);
        r->exec_errno = ENOMEM;
        return -1;
    }
    if (pipe2(errpipe, O_CLOEXEC) < 0) {
        r->exec_errno = errno;
        run_tty_restore();
        plan_free(&plan);
        return -1;
    }
    /* No handler may run in the child before it resets them, and none in
     * the parent before it knows CMD's group (a ^Z must reach it). */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    fflush(NULL);
    pid = fork();
    if (pid == 0)
        child_exec(&plan, errpipe[1], &old, parent);
    err = errno;
    if (pid > 0) {
        /* Also here, so that the group exists before we ever signal it.
         * The child may have exec'd already (EACCES): then it set it. */
        setpgid(pid, pid);
        if (fg_tty >= 0) {
            /* The child may have taken it already: then ours does nothing. */
            if (fg_cmd)
                tty_pass(getpgrp(), pid);
            fg_pgid = pid;
        }
        run_cmd_started(pid);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(errpipe[1]);
    if (pid < 0) {
        run_tty_restore();
        close(errpipe[0]);
        plan_free(&plan);
        r->exec_errno = err;
        return -1;
    }
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
        run_tty_restore();
        run_cmd_started(0);
        return -1;
    }
    return 0;
}
