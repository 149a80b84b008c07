/* run-supervise.c - `run` while CMD runs: the watchdog, and the loop that
 * stops CMD when the lock can no longer be vouched for.
 *
 * The library's watchdog extends the lock on the client's I/O thread
 * whenever half the ttl is left (watchdog_divisor 2). A poll() loop hears
 * signals (a self-pipe) and the watchdog's lost callback (a second pipe).
 * When the lock can no longer be vouched for - the token lost its
 * majority, the lease ran out, the --max-extends/--max-lease cap was
 * reached, or extends kept failing until only a third of the ttl was left
 * - CMD's group gets the loss signal (--signal, SIGTERM by default), then
 * SIGKILL after --kill-after, and we exit 124, as timeout(1) does: the lock
 * is what bounds CMD's time.
 *
 * The watchdog stops at the first failed extension. A failure that can
 * pass (no quorum: masters down or slow) is not the end of the lock, so we
 * retry: every ttl/10 (at least 10 ms) we start the watchdog again, which
 * extends at once, until only ttl/3 of validity is left. Giving up there,
 * rather than at zero, leaves CMD a third of the ttl to stop while the
 * lock is still ours. A restarted watchdog counts its caps from zero, so
 * from the first restart on we enforce what is left of them here.
 *
 * Stop signals (^Z) are handled in run-signals.c; when we are continued,
 * resume() decides whether CMD may go on.
 */
#include "run-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "report.h"

enum run_state {
    RUN_HOLDING,    /* lock held, the watchdog extending it */
    RUN_STOPPING,   /* lock lost: CMD got the loss signal, SIGKILL at kill_deadline */
};

/* What the watchdog's lost callback hands the main loop, through wd_pipe. */
struct wd_msg {
    int status;
    redlock_error err;
};

static int wd_pipe[2] = {-1, -1};

/* On the library's I/O thread: it must not block or call back into the
 * library. One message per watchdog start, far below the pipe's capacity
 * and PIPE_BUF (so it arrives whole); were it lost, the loop would still
 * see the validity run down. */
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

int run_watch_start(const struct cli_opts *o, redlock_client *c, redlock_lock *lock,
                    struct watch *w, redlock_error *err)
{
    int64_t left = redlock_lock_validity_ms(lock);
    int rc;

    memset(w, 0, sizeof(*w));
    if (wd_pipe[0] < 0 && pipe2(wd_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        snprintf(err->msg, sizeof(err->msg), "cannot make a pipe: %s", strerror(errno));
        return REDLOCK_ESYS;
    }
    /* Batch jobs (a nightly backup) run for hours: the library's one-hour
     * default would stop them by surprise. Still limited, as the spec asks,
     * but by a week. */
    w->max_extends = o->max_extends ? o->max_extends : CLI_RUN_MAX_EXTENDS;
    w->max_lease_ms = o->max_lease_ms ? o->max_lease_ms : CLI_RUN_MAX_LEASE_MS;
    w->started_us = cli_now_us();
    w->until_us = w->started_us + (left > 0 ? (uint64_t)left * 1000u : 0);
    rc = redlock_watchdog_start(c, lock, on_watchdog_lost, NULL, err);
    w->running = (rc == 0);
    return rc;
}

/* Count extensions by their effect: each moves the end of validity on by
 * about half a ttl. redlock_lock_validity_ms() rounds down to the ms, so a
 * move of more than 2 ms is an extension, not rounding. Exact as long as
 * we look more often than the watchdog extends (every ttl/10 vs ttl/2).
 * The guard learns of each new end. */
void run_note_extends(const redlock_lock *lock, struct watch *w, struct run_result *r)
{
    int64_t left = redlock_lock_validity_ms(lock);
    uint64_t until;

    if (left <= 0)
        return;
    until = cli_now_us() + (uint64_t)left * 1000u;
    if (until > w->until_us + 2000u) {
        r->extends++;
        w->until_us = until;
        run_guard_until(until);
    }
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
    uint64_t retry_us;        /* after a failure that can pass, extend again this often */
    uint64_t tick_us;         /* look at the lock at least this often */
    int64_t floor_ms;         /* give up with this much validity left */
    uint64_t kill_deadline;   /* RUN_STOPPING: SIGKILL then */
    int killed;               /* SIGKILL sent */
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
             "and %llu ms: the lock is no longer extended", l->w->max_extends,
             l->w->max_lease_ms, r->extends,
             (unsigned long long)((cli_now_us() - l->w->started_us) / 1000u));
    report_error_set("run", l->o->set, l->o->n_resources, r->lost_rc, &r->lost_err, NULL);
}

/* ... and stop CMD: the loss signal now, SIGKILL after --kill-after. */
static void lose(struct loop *l)
{
    const struct cli_opts *o = l->o;

    declare_lost(l);
    cli_error("run: %s: stopping CMD (pid %ld): SIG%s, SIGKILL in %u ms",
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

/* Start the watchdog again after a failure that can pass, if the lock and
 * the caps allow. Return: 1 if the lock is lost now (r->lost_rc set). */
static int restart_watchdog(struct loop *l, int64_t left, uint64_t now)
{
    redlock_error err;
    int rc;

    l->w->restart_at = 0;
    if (left <= l->floor_ms)
        return 1;   /* with the last failure's code and message */
    if (limits_reached(l->w, l->r, now)) {
        l->r->lost_rc = REDLOCK_ELIMIT;
        return 1;
    }
    /* Extends at once: less than ttl/2 is left. */
    memset(&err, 0, sizeof(err));
    rc = redlock_watchdog_start(l->c, l->lock, on_watchdog_lost, NULL, &err);
    if (rc != 0) {
        l->r->lost_rc = rc;
        l->r->lost_err = err;
        return 1;
    }
    l->w->running = 1;
    l->r->wd_restarts++;
    return 0;
}

/* RUN_HOLDING, at the top of each turn: is the lock still ours? Return:
 * the poll timeout, or -2 when the lock was just lost. */
static int check_holding(struct loop *l, uint64_t now)
{
    struct watch *w = l->w;
    int64_t left;
    int timeout;

    run_note_extends(l->lock, w, l->r);
    left = redlock_lock_validity_ms(l->lock);
    if (left <= 0) {
        /* We were not scheduled for a whole lease (swapped, SIGSTOP), and
         * neither was the watchdog. */
        lose_expired(l, "the lease ran out before it could be extended");
        return -2;
    }
    if (w->restart_at != 0 && now >= w->restart_at) {
        if (restart_watchdog(l, left, now)) {
            lose(l);
            return -2;
        }
    } else if (l->r->wd_restarts > 0 && w->running && limits_reached(w, l->r, now)) {
        /* A restarted watchdog counts its caps from zero: what is left of
         * ours is enforced here. */
        l->r->lost_rc = REDLOCK_ELIMIT;
        lose(l);
        return -2;
    }
    timeout = ms_until(now, now + l->tick_us);
    if (w->restart_at != 0 && ms_until(now, w->restart_at) < timeout)
        timeout = ms_until(now, w->restart_at);
    return timeout;
}

/* We were continued after a ^Z: let CMD go on only while the lock is ours
 * for long enough (see the top of the file). */
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
                  "group (pid %ld) without letting it run again", (long)pid);
        run_signal_cmd(pid, SIGKILL);
        l->killed = 1;
        return;
    }
    if (l->state == RUN_HOLDING && left <= l->floor_ms)
        lose_expired(l, "the lease was nearly out when redlock-cli was continued");
    else if (l->state == RUN_HOLDING)
        cli_note("run: continued with %lld ms of the lease left: continuing CMD",
                 (long long)left);
    /* Stopping: CMD may now act on the loss signal. */
    run_signal_cmd(pid, SIGCONT);
}

static void read_signals(struct loop *l)
{
    unsigned char sigs[64];
    ssize_t n;

    while ((n = read(cli_signal_fd(), sigs, sizeof(sigs))) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (sigs[i] == SIGCONT && run_cmd_was_stopped())
                resume(l);
            if (sigs[i] == SIGCHLD || sigs[i] == SIGCONT)
                continue;
            /* Forward: CMD decides what INT/TERM/HUP mean; we keep the
             * lock until it exits, then release it. */
            cli_note("run: forwarding signal %d to CMD", sigs[i]);
            run_signal_cmd(l->r->pid, sigs[i]);
        }
    }
}

/* The watchdog stopped: give up, or try again in a while. */
static void read_watchdog(struct loop *l)
{
    struct wd_msg m;

    while (read(wd_pipe[0], &m, sizeof(m)) == (ssize_t)sizeof(m)) {
        int64_t left;

        l->w->running = 0;
        if (l->state != RUN_HOLDING)
            continue;
        l->r->lost_rc = m.status;
        l->r->lost_err = m.err;
        if (m.status != REDLOCK_ELIMIT && m.status != REDLOCK_ESHUTDOWN)
            l->r->extend_failures++;
        left = redlock_lock_validity_ms(l->lock);
        if (loss_is_final(m.status) || left <= l->floor_ms) {
            /* ENOTHELD: a majority has another token, or none: the lock
             * is gone, retrying cannot bring it back. */
            lose(l);
            continue;
        }
        /* One line per retry; the cause in full once, if it comes to
         * giving up. */
        cli_warn("warning: run: extend failed (%s); retrying, validity left %lld ms",
                 redlock_strerror(m.status), (long long)left);
        l->w->restart_at = cli_now_us() + l->retry_us;
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
    if (l->state == RUN_STOPPING)   /* leave no straggler in CMD's group */
        kill(-l->r->pid, SIGKILL);
    run_guard_done();
    while (waitpid(l->r->pid, &l->r->status, 0) < 0 && errno == EINTR)
        ;
    run_cmd_started(0);
    return 1;
}

void run_supervise(const struct cli_opts *o, redlock_client *c, redlock_lock *lock,
                   struct watch *w, struct run_result *r)
{
    const uint64_t ttl_us = (uint64_t)o->ttl_ms * 1000u;
    struct loop l = {o, c, lock, w, r, RUN_HOLDING, 0, 0, (int64_t)(o->ttl_ms / 3), 0, 0};

    /* After a failure that can pass, extend again every ttl/10 (at least
     * 10 ms) until only ttl/3 of validity is left (see the top of the
     * file). Between events, look at the lock as often, at most every
     * second. */
    l.retry_us = ttl_us / 10 > 10000 ? ttl_us / 10 : 10000;
    l.tick_us = l.retry_us < 1000000 ? l.retry_us : 1000000;
    for (;;) {
        struct pollfd pfd[2] = {{.fd = cli_signal_fd(), .events = POLLIN},
                                {.fd = wd_pipe[0], .events = POLLIN}};
        uint64_t now = cli_now_us();
        int timeout = -1;

        if (l.state == RUN_HOLDING) {
            timeout = check_holding(&l, now);
            if (timeout == -2)
                continue;
        } else if (!l.killed) {
            if (now >= l.kill_deadline) {
                run_signal_cmd(r->pid, SIGKILL);
                l.killed = 1;
            } else {
                timeout = ms_until(now, l.kill_deadline);
            }
        }
        if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
            break;   /* cannot happen with valid fds; do not spin */
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
    run_cmd_started(0);
}
