/* acquire.c - `lock` and `run` take their lock: one call of the library
 * with the wait of this command, and a thread that cancels it on a signal.
 *
 * One redlock_acquire_with() (the waiting is the library's: no loop here),
 * and while it waits a small thread reading signals.c's self-pipe fires its
 * redlock_cancel on SIGINT, SIGTERM or SIGHUP. Why: docs/waiting.md, "`lock`
 * and `run` waiting for the lock: signals".
 */
#include "acquire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "report.h"

/* The cancel source of the last acquire, freed by cli_acquire_cleanup().
 * The blocking call returns before its operation is gone from the I/O
 * thread, which still unregisters from the source then: freeing it at the
 * return would pull it from under that thread. Once the client is freed,
 * every operation is. */
static redlock_cancel *spent;

/* The thread that turns a terminating signal into a cancel. */
struct watcher {
    redlock_cancel *cc;
    int stop[2]; /* written once the call has returned */
    int signal;  /* the signal that fired cc (read after the join) */
    pthread_t thread;
};

static void *watch(void *arg)
{
    struct watcher *w = arg;

    for (;;) {
        struct pollfd p[2] = { { .fd = cli_signal_fd(), .events = POLLIN },
                               { .fd = w->stop[0], .events = POLLIN } };
        int sig;

        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return NULL; /* cannot happen with valid fds; do not spin */
        }
        if (p[1].revents != 0)
            return NULL;
        sig = cli_pending_term_signal();
        if (sig != 0) {
            w->signal = sig;
            redlock_cancel_fire(w->cc);
            return NULL;
        }
    }
}

static int watcher_start(struct watcher *w)
{
    sigset_t all, old;
    int rc;

    memset(w, 0, sizeof(*w));
    w->stop[0] = w->stop[1] = -1;
    if (redlock_cancel_new(&w->cc) != 0)
        return -1;
    if (pipe2(w->stop, O_CLOEXEC) < 0)
        goto fail;
    /* Handlers run on the other threads: this one only reads the pipe. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&w->thread, NULL, watch, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0)
        return 0;
    errno = rc;
fail:
    if (w->stop[0] >= 0) {
        close(w->stop[0]);
        close(w->stop[1]);
    }
    redlock_cancel_free(w->cc);
    return -1;
}

/* Return: the signal that cancelled the call, or 0. */
static int watcher_stop(struct watcher *w)
{
    char b = 0;

    if (write(w->stop[1], &b, 1) < 0) {
        /* a pipe nobody else writes to cannot be full */
    }
    pthread_join(w->thread, NULL);
    close(w->stop[0]);
    close(w->stop[1]);
    redlock_cancel_free(spent);
    spent = w->cc;
    return w->signal;
}

void cli_acquire_cleanup(void)
{
    redlock_cancel_free(spent);
    spent = NULL;
}

int cli_acquire(const struct cli_opts *o, redlock_client *c, redlock_lock **ret_lock,
                redlock_outcome *out, redlock_error *err, struct cli_acquire_stats *st)
{
    uint64_t start = cli_now_us();
    redlock_acquire_opts opts;
    struct watcher w;
    int rc;

    memset(st, 0, sizeof(*st));
    memset(err, 0, sizeof(*err));
    redlock_acquire_opts_init(&opts);
    opts.ttl_ms = o->ttl_ms;
    opts.flags = o->fence ? REDLOCK_FENCE : 0;
    opts.retry_delay_ms = o->retry_delay_ms;
    opts.retry_jitter_ms = o->retry_delay_ms / 2;
    /* Without --wait, the client's: a deadline of --retry polls, and no
     * more polls than that (config.c); 0 by default. */
    if (o->wait_set)
        opts.wait_ms = o->wait_ms;
    if (watcher_start(&w) < 0) {
        snprintf(err->msg, sizeof(err->msg), "cannot watch for signals while waiting: %s",
                 strerror(errno));
        return REDLOCK_ESYS;
    }
    opts.cancel = w.cc;
    rc = redlock_acquire_with(c, o->set, o->n_resources, &opts, ret_lock, out, err);
    st->signal = watcher_stop(&w);
    st->attempts = redlock_outcome_attempts(out) > 0 ? redlock_outcome_attempts(out) : 1;
    st->waited_us = cli_now_us() - start;
    if (st->signal == 0)
        return rc;
    if (rc == 0) {
        /* Ours a moment before the signal: nobody will use it. */
        redlock_release(c, *ret_lock, NULL, NULL);
        redlock_lock_free(*ret_lock);
        *ret_lock = NULL;
    }
    return CLI_ACQUIRE_INTERRUPTED;
}

int cli_acquire_exit(const struct cli_opts *o, int rc, const redlock_outcome *out)
{
    /* flock(1)'s -E: a cron job may skip quietly (run -E 0), or tell a
     * conflict from its CMD's own 75. */
    if (rc == REDLOCK_ECONFLICT)
        return (int)o->conflict_exit;
    return report_exit_for(rc, out);
}

int cli_acquire_quiet(const struct cli_opts *o, int rc)
{
    /* flock -n -E N prints nothing on a conflict: whoever asked for -E
     * expects the lock to be busy at times, and a cron job's stderr is
     * mail. -v still says who holds it. */
    return rc == REDLOCK_ECONFLICT && o->conflict_exit_set && o->verbose == 0;
}

int cli_acquire_interrupted(const struct cli_opts *o, const struct cli_acquire_stats *st,
                            redlock_error *err)
{
    memset(err, 0, sizeof(*err));
    err->code = REDLOCK_ECANCELED;
    err->master = -1;
    snprintf(err->msg, sizeof(err->msg),
             "interrupted by SIG%s while waiting for the lock, after "
             "%u attempt(s) and %llu ms: nothing is held",
             sigabbrev_np(st->signal), st->attempts, (unsigned long long)(st->waited_us / 1000u));
    cli_error("%s: %s", o->cmd_name, err->msg);
    return 128 + st->signal;
}

void cli_acquire_json(struct json *j, redlock_client *c, const struct cli_opts *o,
                      const redlock_lock *lock, const redlock_outcome *out,
                      const struct cli_acquire_stats *st)
{
    report_json_set(j, o->set, o->n_resources);
    json_key(j, "token");
    json_cstr(j, lock ? redlock_lock_token(lock) : NULL);
    json_key(j, "fence");
    if (lock && o->fence)
        json_u64(j, redlock_lock_fence(lock));
    else
        json_null(j);
    json_key(j, "ttl_ms");
    json_u64(j, o->ttl_ms);
    json_key(j, "validity_ms");
    json_i64(j, lock ? redlock_outcome_validity_ms(out) : 0);
    json_key(j, "acquired_on");
    json_u64(j, lock ? redlock_outcome_ok(out) : 0);
    json_key(j, "attempts");
    json_u64(j, st->attempts);
    json_key(j, "waited_ms");
    json_u64(j, st->waited_us / 1000u);
    report_json_votes(j, c, out);
}

/* The words a vote's detail starts with for a master that holds no memory
 * marker: never declared, or its data lost (redlock/trust.c, cause_words;
 * tests/test-cli-lock.c checks the hint below appears). */
#define NEW_MASTER_WORDS "lost its data (or is new)"

/* Masters started by hand (no cluster-up.sh, no declare-empty) all sit out
 * the first lock: say so in plain words, and what to run. */
static void explain_new_masters(const struct cli_opts *o, const redlock_outcome *out)
{
    size_t n = redlock_outcome_masters(out), quorum = redlock_outcome_quorum(out), fresh = 0;

    for (size_t i = 0; i < n; i++) {
        const redlock_vote *v = redlock_outcome_vote(out, i);

        fresh += v->kind == REDLOCK_VOTE_EXCLUDED && v->err == REDLOCK_EUNTRUSTED &&
                 strncmp(v->detail, NEW_MASTER_WORDS, strlen(NEW_MASTER_WORDS)) == 0;
    }
    if (fresh == 0 || n - fresh >= quorum)
        return; /* the others could have voted: not what failed it */
    cli_error("%s: %zu of %zu masters have no memory marker: they are new, or lost their data, "
              "and do not vote until every lock they may have granted has expired. New masters "
              "started by hand, never used: run `redlock-cli declare-empty` once, then lock "
              "again. Masters that restarted empty while locks may be live: wait (a ttl) "
              "instead, as declaring them could grant a live lock twice.",
              o->cmd_name, fresh, n);
}

/* A set refused as held: which members, and by which token. One status
 * per member, only on this failure path. */
static void explain_held_members(const struct cli_opts *o, redlock_client *c)
{
    redlock_status *st = redlock_status_new();
    char name[128], line[1024];
    size_t used = 0, named = 0, more = 0;

    if (!st)
        return;
    line[0] = '\0';
    for (size_t i = 0; i < o->n_resources; i++) {
        const redlock_resource *r = &o->set[i];
        const char *tok;
        int n;

        if (redlock_status_get(c, r->name, r->len, st, NULL) != 0 || redlock_status_held(st) == 0)
            continue;
        tok = redlock_status_majority_token(st);
        cli_printable(r->name, r->len, name, sizeof(name));
        if (named == 4) {
            more++;
            continue;
        }
        if (tok[0] != '\0')
            n = snprintf(line + used, sizeof(line) - used,
                         "%s'%s' (token %s, on %zu of %zu masters)", named ? ", " : "", name, tok,
                         redlock_status_held(st), redlock_status_masters(st));
        else
            n = snprintf(line + used, sizeof(line) - used, "%s'%s' (on %zu of %zu masters)",
                         named ? ", " : "", name, redlock_status_held(st),
                         redlock_status_masters(st));
        if (n < 0 || (size_t)n >= sizeof(line) - used) {
            line[used] = '\0';
            more++;
            continue;
        }
        used += (size_t)n;
        named++;
    }
    redlock_status_free(st);
    if (named == 0)
        return; /* freed meanwhile: the next try may get it */
    if (more)
        snprintf(line + used, sizeof(line) - used, " and %zu more", more);
    cli_error("%s: held now: %s", o->cmd_name, line);
}

void cli_acquire_explain(const struct cli_opts *o, redlock_client *c, int rc,
                         const redlock_outcome *out)
{
    if (rc == REDLOCK_ENOQUORUM || rc == REDLOCK_EUNTRUSTED)
        explain_new_masters(o, out);
    else if (rc == REDLOCK_ECONFLICT && o->n_resources > 1)
        explain_held_members(o, c);
}
