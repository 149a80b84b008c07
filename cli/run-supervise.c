/* run-supervise.c - `run` while CMD runs: the library's watchdog keeps the
 * lock, and a loop stops CMD when the lock can no longer be vouched for.
 *
 * The watchdog extends at half the ttl within run's caps and floor (config.c);
 * its op hook and lost callback write into a pipe that a poll() loop here
 * reads beside the signals; a loss sends --signal, then SIGKILL, and exit 124.
 * ^Z: run-signals.c, resume(). Why: docs/waiting.md, "Watchdog", "`run` while CMD runs".
 */
#include "run-parts.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "metrics.h"
#include "report.h"

/* --metrics-file: written before the acquire (a path that cannot be
 * written says so at once, and the run goes on), after it, at each of the
 * watchdog's extensions and its loss (below), and at the end (run.c). */
void run_metrics(const struct cli_opts *o, redlock_client *c)
{
    static int warned;

    if (o->metrics_file)
        cli_metrics_file(c, o->metrics_file, &warned);
}

enum run_state {
    RUN_HOLDING,  /* lock held, the watchdog extending it */
    RUN_STOPPING, /* lock lost: CMD got the loss signal, SIGKILL at kill_deadline */
};

/* What the I/O thread hands the loop, through ev_pipe. */
enum wd_event {
    WD_EXTENDED = 1, /* an extension succeeded */
    WD_FAILED,       /* an extension failed (the watchdog decides what next) */
    WD_LOST,         /* the watchdog stopped: status says why */
};

struct wd_msg {
    int kind; /* enum wd_event */
    int status;
    redlock_error err; /* WD_LOST, WD_FAILED: the library's whole line */
};

/* Made before the client, so that the I/O thread never sees it change. */
static int ev_pipe[2] = { -1, -1 };

int run_events_open(void)
{
    return pipe2(ev_pipe, O_CLOEXEC | O_NONBLOCK);
}

/* On the I/O thread: it must not block or call back into the library.
 * Messages are far below PIPE_BUF (each arrives whole), and the loop
 * drains the pipe at every turn, a few a second at most, far below its
 * capacity; were one lost all the same, the loop would still see the
 * validity run down. */
static void post(int kind, int status, const redlock_error *err)
{
    struct wd_msg m;

    memset(&m, 0, sizeof(m));
    m.kind = kind;
    m.status = status;
    if (err)
        m.err = *err;
    if (ev_pipe[1] >= 0 && write(ev_pipe[1], &m, sizeof(m)) < 0) {
        /* see above */
    }
}

void run_on_op(redlock_client *c, int status, const redlock_op_info *info, const redlock_error *err,
               void *arg)
{
    (void)c;
    (void)status;
    (void)arg;
    /* run's only extensions are the watchdog's. A failure's line names the
     * masters and why: the warning says it whole. */
    if (info->kind == REDLOCK_OP_EXTEND)
        post(info->status == 0 ? WD_EXTENDED : WD_FAILED, info->status,
             info->status == 0 ? NULL : err);
}

static void on_watchdog_lost(redlock_client *c, int status, redlock_lock *lock,
                             const redlock_error *err, void *arg)
{
    (void)c;
    (void)lock;
    (void)arg;
    post(WD_LOST, status, err);
}

int run_watch_start(const struct cli_opts *o, redlock_client *c, redlock_lock *lock,
                    struct watch *w, redlock_error *err)
{
    redlock_config cfg;
    int64_t left = redlock_lock_validity_ms(lock);
    int rc;

    memset(w, 0, sizeof(*w));
    if (ev_pipe[0] < 0) {
        snprintf(err->msg, sizeof(err->msg), "no pipe for the watchdog's news");
        return REDLOCK_ESYS;
    }
    cli_config_fill(o, &cfg);
    w->max_extends = cfg.watchdog_max_extends;
    w->max_lease_ms = cfg.watchdog_max_lease_ms;
    w->started_us = cli_now_us();
    w->until_us = w->started_us + (left > 0 ? (uint64_t)left * 1000u : 0);
    rc = redlock_watchdog_start(c, lock, on_watchdog_lost, NULL, err);
    w->running = (rc == 0);
    return rc;
}

/* The lease's end, as the lock says now: tell the guard if it moved on. */
static void note_until(const redlock_lock *lock, struct watch *w)
{
    int64_t left = redlock_lock_validity_ms(lock);
    uint64_t until;

    if (left <= 0)
        return;
    until = cli_now_us() + (uint64_t)left * 1000u;
    if (until > w->until_us) {
        w->until_us = until;
        run_guard_until(until);
    }
}

/* An extension's outcome: count it. */
static void note_extension(const redlock_lock *lock, struct watch *w, struct run_result *r,
                           const struct wd_msg *m)
{
    if (w->last_failed)
        r->wd_restarts++;
    w->last_failed = (m->kind == WD_FAILED);
    if (m->kind == WD_EXTENDED) {
        r->extends++;
        note_until(lock, w);
        return;
    }
    r->extend_failures++;
}

void run_watch_drain(redlock_lock *lock, struct watch *w, struct run_result *r)
{
    struct wd_msg m;

    while (read(ev_pipe[0], &m, sizeof(m)) == (ssize_t)sizeof(m))
        if (m.kind != WD_LOST)
            note_extension(lock, w, r, &m);
}

static int ms_until(uint64_t now, uint64_t t)
{
    uint64_t d = t > now ? t - now : 0;

    d = (d + 999) / 1000;
    return d > 60000 ? 60000 : (int)d;
}

/* The loop's state, beside the caller's watch and result. */
struct loop {
    const struct cli_opts *o;
    redlock_client *c;
    redlock_lock *lock;
    struct watch *w;
    struct run_result *r;
    enum run_state state;
    uint64_t tick_us;       /* look at the lock at least this often */
    int64_t margin_ms;      /* the guard's margin (RUN_GUARD_MARGIN_MS) */
    uint64_t kill_deadline; /* RUN_STOPPING: SIGKILL then */
    int killed;             /* SIGKILL sent */
    int tty_said;           /* said that CMD stopped on the terminal */
};

/* The lock can no longer be vouched for (r->lost_rc says why): say so. */
static void declare_lost(struct loop *l)
{
    struct run_result *r = l->r;

    if (l->w->running) {
        redlock_watchdog_stop(l->c, l->lock);
        l->w->running = 0;
    }
    r->lost = 1;
    l->state = RUN_STOPPING;
    run_guard_losing();
    if (r->lost_rc != REDLOCK_ELIMIT) {
        report_error_set("run: extend", l->o->set, l->o->n_resources, r->lost_rc, &r->lost_err,
                         NULL);
        return;
    }
    r->limit_reached = 1;
    snprintf(r->lost_err.msg, sizeof(r->lost_err.msg),
             "watchdog limit reached (--max-extends %u, --max-lease %u ms) after %u extensions "
             "and %llu ms: the lock is no longer extended, and lapses in %lld ms",
             l->w->max_extends, l->w->max_lease_ms, r->extends,
             (unsigned long long)((cli_now_us() - l->w->started_us) / 1000u),
             (long long)redlock_lock_validity_ms(l->lock));
    report_error_set("run", l->o->set, l->o->n_resources, r->lost_rc, &r->lost_err, NULL);
}

/* ... and stop CMD: the loss signal now, SIGKILL after --kill-after. */
static void lose(struct loop *l)
{
    const struct cli_opts *o = l->o;

    declare_lost(l);
    cli_error("run: %s: stopping CMD (pid %ld): SIG%s, SIGKILL if it is still there in %u ms",
              l->r->limit_reached ? "lease limit reached" : "lock lost", (long)l->r->pid,
              sigabbrev_np(o->loss_signal), (unsigned)o->kill_after_ms);
    run_signal_cmd(l->r->pid, o->loss_signal);
    l->kill_deadline = cli_now_us() + (uint64_t)o->kill_after_ms * 1000u;
}

static void lose_expired(struct loop *l, const char *why)
{
    l->r->lost_rc = REDLOCK_EEXPIRED;
    snprintf(l->r->lost_err.msg, sizeof(l->r->lost_err.msg), "%s", why);
    lose(l);
}

/* We were continued after a ^Z: let CMD go on only while the lock is ours
 * for long enough (see run-signals.c). */
static void resume(struct loop *l)
{
    int64_t left = redlock_lock_validity_ms(l->lock);
    pid_t pid = l->r->pid;

    run_cmd_resumed();
    l->r->stops++;
    if (left <= 0) {
        /* CMD must not run one more instruction without the lock. */
        if (l->state == RUN_HOLDING) {
            l->r->lost_rc = REDLOCK_EEXPIRED;
            snprintf(l->r->lost_err.msg, sizeof(l->r->lost_err.msg),
                     "the lease ran out while redlock-cli was stopped");
            declare_lost(l);
        }
        cli_error("run: the lease ran out while redlock-cli was stopped: killing CMD's process "
                  "group (pid %ld) without letting it run again",
                  (long)pid);
        run_signal_cmd(pid, SIGKILL);
        l->killed = 1;
        return;
    }
    if (l->state == RUN_HOLDING && left <= l->margin_ms)
        lose_expired(l, "the lease was nearly out when redlock-cli was continued");
    else if (l->state == RUN_HOLDING)
        cli_note("run: continued with %lld ms of the lease left: continuing CMD", (long long)left);
    /* `fg` gave the terminal to our group; CMD reads it, if it is to. */
    run_tty_give(pid);
    /* Stopping: CMD may now act on the loss signal. */
    run_signal_cmd(pid, SIGCONT);
}

/* Did the terminal stop CMD (its ^Z with CMD in the foreground, or CMD
 * touching it from the background)? Then stop with it (see
 * run_cmd_stopped_by_tty()). Consumes the stop report; exits are left for
 * reap(). */
static void check_tty_stop(struct loop *l)
{
    siginfo_t si;

    if (!run_tty_held() || run_cmd_was_stopped())
        return;
    memset(&si, 0, sizeof(si));
    if (waitid(P_PID, (id_t)l->r->pid, &si, WSTOPPED | WNOHANG) < 0 || si.si_pid == 0 ||
        si.si_code != CLD_STOPPED)
        return;
    if (si.si_status == SIGTTIN || si.si_status == SIGTTOU) {
        /* CMD touched the terminal from the background (stdin was not a
         * terminal, or we were started with `&`): the job stops as a
         * whole, and `fg` gives CMD the terminal (resume()). Said once. */
        if (!l->tty_said)
            cli_warn("run: CMD stopped: it %s the terminal from the background; `fg` hands it "
                     "the terminal (or start it with --foreground)",
                     si.si_status == SIGTTIN ? "read" : "wrote to");
        l->tty_said = 1;
        run_tty_for_cmd();
        run_cmd_stopped_by_tty();
    } else if (si.si_status == SIGTSTP) {
        run_cmd_stopped_by_tty();
    }
}

static void read_signals(struct loop *l)
{
    unsigned char sigs[64];
    ssize_t n;

    while ((n = read(cli_signal_fd(), sigs, sizeof(sigs))) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (sigs[i] == SIGCONT && run_cmd_was_stopped())
                resume(l);
            if (sigs[i] == SIGCHLD)
                check_tty_stop(l);
            if (sigs[i] == SIGCHLD || sigs[i] == SIGCONT)
                continue;
            /* Forward: CMD decides what INT/TERM/HUP mean; we keep the
             * lock until it exits, then release it. */
            cli_note("run: forwarding signal %d to CMD", sigs[i]);
            run_signal_cmd(l->r->pid, sigs[i]);
        }
    }
}

/* What the watchdog did: count it, warn of a failed extension (the
 * library retries it while it can), give up when it stops. */
static void read_watchdog(struct loop *l)
{
    struct wd_msg m;

    while (read(ev_pipe[0], &m, sizeof(m)) == (ssize_t)sizeof(m)) {
        if (m.kind != WD_LOST) {
            int recovered = m.kind == WD_EXTENDED && l->w->last_failed;

            note_extension(l->lock, l->w, l->r, &m);
            if (l->state != RUN_HOLDING) {
                run_metrics(l->o, l->c);
                continue;
            }
            if (m.kind == WD_FAILED)
                cli_warn("warning: run: extend failed, validity left %lld ms: %s",
                         (long long)redlock_lock_validity_ms(l->lock),
                         m.err.msg[0] ? m.err.msg : redlock_strerror(m.status));
            else if (recovered)
                cli_warn("run: extended again after %u failed extension(s); validity left "
                         "%lld ms",
                         l->r->extend_failures, (long long)redlock_lock_validity_ms(l->lock));
            run_metrics(l->o, l->c); /* after the news: a slow disk delays only this */
            continue;
        }
        l->w->running = 0;
        if (l->state == RUN_HOLDING) {
            /* CMD is told first: the file may sit on a slow disk, and the
             * floor the watchdog kept is CMD's to stop cleanly in */
            l->r->lost_rc = m.status;
            l->r->lost_err = m.err;
            lose(l);
        }
        run_metrics(l->o, l->c);
    }
}

/* CMD exited? Then tell the guard to stand down before reaping CMD, so
 * that its process group id cannot have been reused when the guard could
 * still act on it. Return: 1 once CMD is reaped. */
static int reap(struct loop *l)
{
    siginfo_t si;

    memset(&si, 0, sizeof(si));
    if (waitid(P_PID, (id_t)l->r->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
        return 0;
    if (l->state == RUN_STOPPING) /* leave no straggler in CMD's group */
        kill(-l->r->pid, SIGKILL);
    run_guard_done();
    while (waitpid(l->r->pid, &l->r->status, 0) < 0 && errno == EINTR)
        ;
    run_tty_restore();
    run_cmd_started(0);
    return 1;
}

/* The poll timeout for this turn, or -2 when the lock was just lost. */
static int turn_timeout(struct loop *l, uint64_t now)
{
    if (l->state == RUN_HOLDING) {
        /* The watchdog's lost callback says when the lock is gone; this
         * catches what it cannot: we were not scheduled for a whole lease
         * (swapped, SIGSTOP), and neither was the watchdog. */
        if (redlock_lock_validity_ms(l->lock) <= 0) {
            lose_expired(l, "the lease ran out before it could be extended");
            return -2;
        }
        return ms_until(now, now + l->tick_us);
    }
    if (l->killed)
        return -1;
    if (now >= l->kill_deadline) {
        run_signal_cmd(l->r->pid, SIGKILL);
        l->killed = 1;
        return -1;
    }
    return ms_until(now, l->kill_deadline);
}

void run_supervise(const struct cli_opts *o, redlock_client *c, redlock_lock *lock, struct watch *w,
                   struct run_result *r)
{
    const uint64_t ttl_us = (uint64_t)o->ttl_ms * 1000u;
    struct loop l = { o, c, lock, w, r, RUN_HOLDING, 0, 0, 0, 0, 0 };

    /* Look at the lock every tenth of the ttl (at least 10 ms, at most a
     * second) between events. */
    l.tick_us = ttl_us / 10 > 10000 ? ttl_us / 10 : 10000;
    if (l.tick_us > 1000000)
        l.tick_us = 1000000;
    l.margin_ms = (int64_t)RUN_GUARD_MARGIN_MS(o);
    for (;;) {
        struct pollfd pfd[2] = { { .fd = cli_signal_fd(), .events = POLLIN },
                                 { .fd = ev_pipe[0], .events = POLLIN } };
        int timeout = turn_timeout(&l, cli_now_us());

        if (timeout == -2)
            continue;
        if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
            break; /* cannot happen with valid fds; do not spin */
        read_signals(&l);
        read_watchdog(&l);
        if (reap(&l))
            return;
    }
    /* poll() failed: wait for CMD rather than leave it running unlocked. */
    run_signal_cmd(r->pid, SIGKILL);
    run_guard_done();
    while (waitpid(r->pid, &r->status, 0) < 0 && errno == EINTR)
        ;
    run_tty_restore();
    run_cmd_started(0);
}
