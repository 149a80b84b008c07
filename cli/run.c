/* run.c - `redlock-cli run RESOURCE... -- CMD`: run CMD while holding the lock.
 *
 * The course of the command: acquire (all resources or none, with --wait),
 * start the watchdog and the guard, start CMD, supervise it until it exits
 * (run-supervise.c), release, and report. What happens while CMD runs, and
 * why, is told at the top of run-supervise.c and run-guard.c.
 */
#include "run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "acquire.h"
#include "cli.h"
#include "json.h"
#include "report.h"
#include "run-parts.h"

/* The head of run's JSON object when CMD could not be started: not a
 * library failure, so the code is an errno name. */
static void exec_error_json(struct json *j, int code, int exec_errno)
{
    json_key(j, "command");
    json_cstr(j, "run");
    json_key(j, "ok");
    json_bool(j, 0);
    json_key(j, "exit");
    json_i64(j, code);
    json_key(j, "error");
    json_obj_begin(j);
    json_key(j, "code");
    json_cstr(j, strerrorname_np(exec_errno) ? strerrorname_np(exec_errno) : "EIO");
    json_key(j, "message");
    json_cstr(j, strerror(exec_errno));
    json_obj_end(j);
}

static void child_json(struct json *j, const struct run_result *r)
{
    json_key(j, "child");
    if (!r || r->pid == 0) {
        json_null(j);
        return;
    }
    json_obj_begin(j);
    json_key(j, "pid");
    json_i64(j, r->pid);
    json_key(j, "exit_status");
    if (r->exec_errno == 0 && WIFEXITED(r->status))
        json_i64(j, WEXITSTATUS(r->status));
    else
        json_null(j);
    json_key(j, "signal");
    if (r->exec_errno == 0 && WIFSIGNALED(r->status))
        json_i64(j, WTERMSIG(r->status));
    else
        json_null(j);
    json_obj_end(j);
}

static void json_u64_or_null(struct json *j, const char *key, int have, uint64_t v)
{
    json_key(j, key);
    if (have)
        json_u64(j, v);
    else
        json_null(j);
}

/* What run counted and how it ended (all 0 when CMD never came near). */
static void run_counts_json(struct json *j, const struct run_result *r)
{
    static const struct run_result none;
    const struct run_result *x = r ? r : &none;
    const struct {
        const char *key;
        unsigned value;
        int is_bool;
    } m[] = {
        { "extends", x->extends, 0 },
        { "extend_failures", x->extend_failures, 0 },
        { "watchdog_restarts", x->wd_restarts, 0 },
        { "stops", x->stops, 0 },
        { "lock_lost", (unsigned)x->lost, 1 },
        { "limit_reached", (unsigned)x->limit_reached, 1 },
        { "released", (unsigned)x->released, 1 },
    };

    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
        json_key(j, m[i].key);
        if (m[i].is_bool)
            json_bool(j, m[i].value != 0);
        else
            json_u64(j, m[i].value);
    }
}

/* What printing run's JSON object needs. */
struct run_report {
    int rc; /* the library's code, 0 if none */
    const redlock_error *err;
    const redlock_lock *lock; /* NULL if it was not taken */
    const redlock_outcome *acq;
    const struct cli_acquire_stats *st;
    const struct run_result *r; /* NULL if CMD never came near */
    const struct watch *w;      /* NULL if the watchdog never started */
};

static void print_json(const struct cli_opts *o, redlock_client *c, int code,
                       const struct run_report *p)
{
    const struct run_result *r = p->r;
    struct json j;

    json_init(&j, stdout);
    json_obj_begin(&j);
    if (r && r->exec_errno != 0)
        exec_error_json(&j, code, r->exec_errno);
    else
        report_json_head(&j, "run", code, p->rc, p->err);
    cli_acquire_json(&j, c, o, p->lock, p->acq, p->st);
    run_counts_json(&j, r);
    json_u64_or_null(&j, "max_extends", p->w != NULL, p->w ? p->w->max_extends : 0);
    json_u64_or_null(&j, "max_lease_ms", p->w != NULL, p->w ? p->w->max_lease_ms : 0);
    child_json(&j, r);
    json_obj_end(&j);
    json_end(&j);
}

/* CMD could not be started: say why; the exit status. */
static int exec_failed(const struct cli_opts *o, const struct run_result *r)
{
    int e = r->exec_errno;

    if (r->pid == 0) {
        cli_error("run: cannot start '%s': %s", o->run_argv[0], strerror(e));
        return CLI_EXIT_SOFTWARE;
    }
    if (e == ENOENT || e == ENOTDIR) {
        if (!strchr(o->run_argv[0], '/'))
            cli_error("run: '%s': command not found (check $PATH)", o->run_argv[0]);
        else
            cli_error("run: '%s': %s", o->run_argv[0], strerror(e));
        return CLI_EXIT_NOTFOUND;
    }
    cli_error("run: '%s': cannot execute: %s%s", o->run_argv[0], strerror(e),
              e == EACCES    ? " (chmod +x?)"
              : e == ENOEXEC ? " (missing #! line?)"
                             : "");
    return CLI_EXIT_NOEXEC;
}

/* CMD ran and was reaped: the exit status. */
static int cmd_exit(const redlock_lock *lock, struct run_result *r)
{
    if (r->lost)
        return CLI_EXIT_LOST;
    if (redlock_lock_validity_ms(lock) <= 0) {
        /* CMD finished, but after the lease had run out: we cannot say it
         * ran under the lock. */
        r->lost = 1;
        r->lost_rc = REDLOCK_EEXPIRED;
        snprintf(r->lost_err.msg, sizeof(r->lost_err.msg), "the lease ran out before CMD finished");
        cli_error("run: %s", r->lost_err.msg);
        return CLI_EXIT_LOST;
    }
    if (WIFEXITED(r->status))
        return WEXITSTATUS(r->status);
    if (WIFSIGNALED(r->status))
        return 128 + WTERMSIG(r->status);
    return CLI_EXIT_SOFTWARE;
}

/* With the lock held: the watchdog, the guard, CMD, until CMD exits.
 * Return: the exit status. */
static int hold(const struct cli_opts *o, redlock_client *c, redlock_lock *lock, struct watch *w,
                struct run_result *r)
{
    redlock_error err;
    int rc, sig = cli_pending_term_signal();

    if (sig != 0) {
        /* Told to stop before CMD started: do not start it. */
        cli_error("run: interrupted by SIG%s before CMD started", sigabbrev_np(sig));
        return 128 + sig;
    }
    /* From here the library extends the lock, before CMD even starts. */
    memset(&err, 0, sizeof(err));
    rc = run_watch_start(o, c, lock, w, &err);
    if (rc != 0) {
        /* EINVAL: no validity left, we were too slow to get here. */
        cli_error("run: cannot keep the lock extended: %s",
                  err.msg[0] ? err.msg : redlock_strerror(rc));
        return cli_exit_for(rc == REDLOCK_EINVAL ? REDLOCK_EEXPIRED : rc);
    }
    if (run_guard_start(o) < 0) {
        cli_error("run: cannot start the guard process: %s", strerror(errno));
        return CLI_EXIT_SOFTWARE;
    }
    if (run_start_cmd(o, lock, r) < 0) {
        run_guard_done();
        return exec_failed(o, r);
    }
    run_guard_watch(r->pid, w->until_us);
    run_supervise(o, c, lock, w, r);
    /* No more extensions, and no lost callback after this returns. */
    redlock_watchdog_stop(c, lock);
    run_watch_drain(lock, w, r);
    return cmd_exit(lock, r);
}

/* Also stops the watchdog, if CMD never started. */
static void release(const struct cli_opts *o, redlock_client *c, redlock_lock *lock,
                    struct run_result *r)
{
    redlock_outcome *rel = redlock_outcome_new(); /* NULL: released without the votes */
    redlock_error rerr;
    int rrc;

    memset(&rerr, 0, sizeof(rerr));
    rrc = redlock_release(c, lock, rel, &rerr);
    r->released = (rrc == 0);
    /* After a loss, failing to release is expected: stay quiet. */
    if (rrc != 0 && !r->lost) {
        report_error_set("run: release", o->set, o->n_resources, rrc, &rerr, rel);
        report_votes(c, rel, 1);
        cli_error("run: the lock expires by itself within %u ms", (unsigned)o->ttl_ms);
    }
    redlock_outcome_free(rel);
}

int cli_run_config(redlock_config *cfg)
{
    if (run_events_open() < 0)
        return -1;
    cfg->op_fn = run_on_op;
    return 0;
}

static int run(const struct cli_opts *o, redlock_client *c, redlock_outcome *acq)
{
    redlock_lock *lock = NULL;
    redlock_error err;
    struct cli_acquire_stats st;
    struct run_result r;
    struct watch w;
    struct run_report rep = { 0, NULL, NULL, acq, &st, NULL, NULL };
    int rc, code;

    memset(&r, 0, sizeof(r));
    memset(&w, 0, sizeof(w));
    if (run_signals_setup() < 0) {
        cli_error("run: cannot set up signal handling: %s", strerror(errno));
        return CLI_EXIT_SOFTWARE;
    }
    run_metrics(o, c);
    rc = cli_acquire(o, c, &lock, acq, &err, &st);
    run_metrics(o, c);
    if (rc != 0) {
        if (rc == CLI_ACQUIRE_INTERRUPTED) {
            code = cli_acquire_interrupted(o, &st, &err);
            rc = REDLOCK_ECANCELED;
        } else {
            code = cli_acquire_exit(o, rc, acq);
            if (code == CLI_EXIT_USAGE) {
                cli_usage_error("run: %s", err.msg[0] ? err.msg : redlock_strerror(rc));
                return code;
            }
            if (!cli_acquire_quiet(o, rc)) {
                report_error_set("run", o->set, o->n_resources, rc, &err, acq);
                cli_acquire_explain(o, c, rc, acq);
                report_votes(c, acq, 1);
            }
        }
        rep.rc = rc;
        rep.err = &err;
        if (o->json)
            print_json(o, c, code, &rep);
        return code;
    }
    report_votes(c, acq, 0);
    cli_note("run: acquired on %u/%u masters, validity %lld ms", (unsigned)redlock_outcome_ok(acq),
             (unsigned)redlock_outcome_masters(acq), (long long)redlock_outcome_validity_ms(acq));
    code = hold(o, c, lock, &w, &r);
    release(o, c, lock, &r);
    run_metrics(o, c);
    if (o->json) {
        rep.lock = lock;
        rep.r = &r;
        rep.w = w.started_us != 0 ? &w : NULL;
        if (r.lost) {
            rep.rc = r.lost_rc;
            rep.err = &r.lost_err;
        }
        print_json(o, c, code, &rep);
    }
    redlock_lock_free(lock);
    return code;
}

int cli_run(const struct cli_opts *o, redlock_client *c)
{
    redlock_outcome *acq = redlock_outcome_new();
    int code;

    if (!acq) {
        cli_error("run: out of memory");
        return CLI_EXIT_SOFTWARE;
    }
    code = run(o, c, acq);
    redlock_outcome_free(acq);
    return code;
}
