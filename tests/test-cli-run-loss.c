/* test-cli-run-loss.c - redlock-cli run when the lock cannot be kept: the
 * key lost on a majority, the watchdog's caps, the loss signal (-s); and
 * run itself stopped (^Z, SIGSTOP) or killed (SIGKILL), where CMD's
 * children must not write once the lock may have lapsed. (Masters that
 * fail under run: test-cli-run-faults.c.)
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "cli.h"
#include "cluster.h"
#include "jsonread.h"

TestSuite(run_loss, .init = tcli_setup, .fini = tcli_teardown, .timeout = 60);

Test(run_loss, run_exits_124_when_a_majority_loses_the_key)
{
    struct tcli_proc p;
    char res[128], fifo[TCLI_SCRATCH_MAX + 32], script[TCLI_SCRATCH_MAX + 128];
    pid_t child;
    uint64_t t0;

    tc_resource(res, sizeof(res), NULL);
    tcli_make_fifo(fifo, sizeof(fifo));
    snprintf(script, sizeof(script), "echo $$ > '%s'; exec sleep 60", fifo);
    tcli_bg(&p, "run", res, "--ttl", "1000ms", "--kill-after", "500ms", "--", "sh", "-c", script);
    child = tcli_read_pid_from_fifo(fifo);

    /* Another party deletes the key on a majority: the next extend finds the
     * token gone, and CMD is stopped. */
    t0 = tc_now_us();
    for (int i = 0; i < tc_n() / 2 + 1; i++) {
        redisReply *r = tc_cmd(i, "DEL %s", res);

        cr_assert(r != NULL);
        freeReplyObject(r);
    }
    cr_assert(eq(int, tcli_wait(&p), 124), "stderr: %s", p.err);
    cr_assert(tc_ms_since(t0) < 1000 + 500 + 1000, "took %llu ms",
              (unsigned long long)tc_ms_since(t0));
    cr_assert(tcli_process_gone(child), "CMD (pid %ld) still runs", (long)child);
    cr_assert(strstr(p.err, "lock lost") != NULL, "%s", p.err);
    tcli_free(&p);
}

Test(run_loss, k_is_kill_after_as_in_timeout)
{
    struct tcli_proc p;
    char res[128];

    tc_resource(res, sizeof(res), NULL);
    /* timeout -k: a CMD that ignores SIGTERM gets SIGKILL after -k. */
    cr_assert(eq(int,
                 tcli_run(&p, "run", res, "--ttl", "1s", "--max-lease", "300ms", "-k", "0.3",
                          "--json", "--", "sh", "-c", "trap '' TERM; sleep 30"),
                 124),
              "stderr: %s", p.err);
    cr_assert(strstr(p.err, "SIGKILL if it is still there in 300 ms") != NULL, "stderr: %s", p.err);
    cr_assert(eq(int, tcli_jint(tcli_jreq(p.out, "child"), "signal"), SIGKILL), "%s", p.out);
    tcli_free(&p);
}

Test(run_loss, run_stops_cmd_at_the_watchdog_limits, .timeout = 60)
{
    struct tcli_proc p;
    char res[128], buf[64];
    uint64_t t0;

    tc_resource(res, sizeof(res), NULL);
    /* Two extensions (at about 0.49 s and 0.98 s), then the cap: CMD is
     * stopped as for a lost lock, while the lock is still valid. */
    t0 = tc_now_us();
    cr_assert(eq(int,
                 tcli_run(&p, "run", res, "--ttl", "1000ms", "--max-extends", "2", "--kill-after",
                          "500ms", "--json", "--", "sleep", "30"),
                 124),
              "stderr: %s", p.err);
    cr_assert(tc_ms_since(t0) < 5000, "took %llu ms", (unsigned long long)tc_ms_since(t0));
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jbool(p.out, "limit_reached"));
    cr_assert(tcli_jbool(p.out, "lock_lost"));
    cr_assert(eq(str, tcli_jstr(tcli_jreq(p.out, "error"), "code", buf, sizeof(buf)), "ELIMIT"));
    cr_assert(eq(int, tcli_jint(p.out, "extends"), 2), "%s", p.out);
    cr_assert(eq(int, tcli_jint(p.out, "max_extends"), 2));
    cr_assert(eq(int, tcli_jint(tcli_jreq(p.out, "child"), "signal"), SIGTERM));
    cr_assert(tcli_jbool(p.out, "released"), "the lock was still ours to release");
    cr_assert(strstr(p.err, "limit reached") != NULL, "stderr: %s", p.err);
    tcli_free(&p);
    /* run exits at the release's quorum; the 1 s ttl would end the key
     * soon anyway, so it must go before it could. */
    tcli_await_released(res, 5000);

    cr_assert(eq(int,
                 tcli_run(&p, "run", res, "--ttl", "1000ms", "--max-lease", "700ms", "--kill-after",
                          "500ms", "--json", "--", "sleep", "30"),
                 124),
              "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jbool(p.out, "limit_reached"));
    cr_assert(eq(int, tcli_jint(p.out, "max_lease_ms"), 700));
    cr_assert(tcli_jint(p.out, "extends") <= 2, "%s", p.out);
    tcli_free(&p);

    /* run's own defaults otherwise, for batch jobs: 1e6 extensions, 7 days. */
    cr_assert(eq(int, tcli_run(&p, "run", res, "--json", "--", "true"), 0));
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(int, tcli_jint(p.out, "max_extends"), 1000000));
    cr_assert(eq(int, tcli_jint(p.out, "max_lease_ms"), 604800000));
    cr_assert(tcli_yes(!tcli_jbool(p.out, "limit_reached")));
    tcli_free(&p);
}

/* CMD for the tests below: a grandchild that appends CLOCK_REALTIME stamps
 * to @stamps every 20 ms; CMD writes "CMD-PID WRITER-PID TOKEN" into
 * @fifo and waits. */
struct writer {
    char fifo[TCLI_SCRATCH_MAX + 32];
    char stamps[TCLI_SCRATCH_MAX + 32];
    char script[3 * TCLI_SCRATCH_MAX];
    pid_t cmd, writer;
    char token[40];
};

static void writer_plan(struct writer *w)
{
    snprintf(w->fifo, sizeof(w->fifo), "%s/fifo", tcli_tmpdir);
    snprintf(w->stamps, sizeof(w->stamps), "%s/stamps", tcli_tmpdir);
    cr_assert(mkfifo(w->fifo, 0600) == 0);
    snprintf(w->script, sizeof(w->script),
             "(while :; do date +%%s%%N >> '%s'; sleep 0.02; done) & "
             "echo $$ $! \"$REDLOCK_TOKEN\" > '%s'; wait",
             w->stamps, w->fifo);
}

static void writer_started(struct writer *w)
{
    char buf[128];
    long a = 0, b = 0;

    tcli_read_line_from_fifo(w->fifo, buf, sizeof(buf));
    cr_assert(eq(int, sscanf(buf, "%ld %ld %39s", &a, &b, w->token), 3), "'%s'", buf);
    w->cmd = (pid_t)a;
    w->writer = (pid_t)b;
    tcli_await_file_grows(w->stamps, 0, 5000);
}

/* `run --ttl TTL [--json] -c WRITER` on a new resource, until the writer
 * writes. */
static void start_writer_run(struct tcli_proc *p, struct writer *w, char *res, size_t size,
                             const char *ttl, int json)
{
    tc_resource(res, size, NULL);
    writer_plan(w);
    if (json)
        tcli_bg(p, "run", res, "--ttl", ttl, "--json", "-c", w->script);
    else
        tcli_bg(p, "run", res, "--ttl", ttl, "-c", w->script);
    writer_started(w);
}

/* ^Z (or SIGTTIN, SIGTTOU: @sig): CMD's whole group stops, then run
 * itself. */
static void stop_run(const struct tcli_proc *p, const struct writer *w, int sig)
{
    cr_assert(kill(p->pid, sig) == 0);
    tcli_await_proc_state(p->pid, 'T', 5000);
    tcli_await_group_stopped(w->cmd, 5000);
}

/* When the lock on @res may lapse at the earliest, CLOCK_REALTIME ns: the
 * shortest PTTL of our token's keys, from now. */
static long long earliest_lapse(const char *res)
{
    long long t = tcli_realtime_ns(), least = -1;

    for (int i = 0; i < tc_n(); i++) {
        long long ms = tcli_master_pttl(i, res);

        if (ms >= 0 && (least < 0 || ms < least))
            least = ms;
    }
    cr_assert(least >= 0, "the key is gone already");
    return t + least * 1000000LL;
}

Test(run_loss, signal_option_chooses_what_cmd_gets_on_loss)
{
    struct tcli_proc p;
    char res[128], fifo[TCLI_SCRATCH_MAX + 32], got[TCLI_SCRATCH_MAX + 32],
        script[3 * TCLI_SCRATCH_MAX];
    char *err;

    tc_resource(res, sizeof(res), NULL);
    snprintf(fifo, sizeof(fifo), "%s/fifo", tcli_tmpdir);
    snprintf(got, sizeof(got), "%s/got", tcli_tmpdir);
    cr_assert(mkfifo(fifo, 0600) == 0);
    snprintf(script, sizeof(script),
             "trap 'echo INT > \"%s\"; exit 3' INT; echo $$ > '%s'; sleep 60 & wait", got, fifo);
    tcli_bg(&p, "run", res, "--ttl", "1s", "-s", "int", "--json", "-c", script);
    tcli_read_pid_from_fifo(fifo);
    for (int i = 0; i < tc_n() / 2 + 1; i++)
        freeReplyObject(tc_cmd(i, "DEL %s", res));
    cr_assert(eq(int, tcli_wait(&p), 124), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "SIGINT") != NULL, "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(int, tcli_jint(tcli_jreq(p.out, "child"), "exit_status"), 3), "%s", p.out);
    err = tcli_slurp(got);
    cr_assert(eq(str, err, "INT\n"));
    free(err);
    tcli_free(&p);
}

Test(run_loss, sigtstp_stops_cmd_and_its_children_and_fg_continues_them)
{
    static const int stops[] = { SIGTSTP, SIGTTIN, SIGTTOU };
    struct tcli_proc p;
    struct writer w;
    char res[128];

    start_writer_run(&p, &w, res, sizeof(res), "5s", 1);
    for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
        char *stamps;
        long long size;

        stop_run(&p, &w, stops[i]);
        cr_assert(eq(int, tcli_holders(res, w.token), tc_n()), "the lock is still held");
        stamps = tcli_slurp(w.stamps);
        size = (long long)strlen(stamps);
        free(stamps);
        /* fg (SIGCONT to run): well inside the lease, CMD goes on. */
        cr_assert(kill(p.pid, SIGCONT) == 0);
        tcli_await_file_grows(w.stamps, size, 5000);
    }
    cr_assert(kill(p.pid, SIGTERM) == 0);
    cr_assert(eq(int, tcli_wait(&p), 128 + SIGTERM), "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(int, tcli_jint(p.out, "stops"), 3), "%s", p.out);
    cr_assert(tcli_yes(!tcli_jbool(p.out, "lock_lost")), "%s", p.out);
    cr_assert(tcli_jbool(p.out, "released"));
    tcli_free(&p);
    tcli_await_gone(w.writer, 5000);
}

Test(run_loss, a_stopped_run_lets_the_lease_lapse_and_cmd_never_runs_again)
{
    struct tcli_proc p, second;
    struct writer w;
    char res[128];
    long long stopped_at;

    start_writer_run(&p, &w, res, sizeof(res), "1s", 1);

    stop_run(&p, &w, SIGTSTP);
    stopped_at = tcli_last_stamp(w.stamps);

    /* Nobody extends the stopped run's lease: it lapses, and another run
     * takes the lock while the first is still stopped. No member of the
     * first CMD's group runs then, and the guard kills the group (at the
     * lease's end by its clock; a loaded machine may run it a little
     * late, which the stop makes harmless). */
    tcli_await_key_gone(res, 5000);
    cr_assert(eq(int, tcli_run(&second, "run", res, "--", "true"), 0), "stderr: %s", second.err);
    tcli_free(&second);
    cr_assert(eq(int, tcli_group_running(w.cmd), 0), "CMD's group ran on past the lease");
    cr_assert(TC_AWAIT(!tcli_group_alive(w.cmd), 2000), "CMD's group outlived the lease by 2 s");
    cr_assert(eq(int, tcli_last_stamp(w.stamps), stopped_at), "CMD's child wrote while stopped");

    /* fg: too late; run says so, and exits 124. */
    cr_assert(kill(p.pid, SIGCONT) == 0);
    cr_assert(eq(int, tcli_wait(&p), 124), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "stopped") != NULL, "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jbool(p.out, "lock_lost"));
    cr_assert(eq(int, tcli_last_stamp(w.stamps), stopped_at), "CMD's child wrote after fg");
    tcli_free(&p);
}

Test(run_loss, sigkill_of_run_stops_cmd_and_its_children_within_the_lease)
{
    struct tcli_proc p;
    struct writer w;
    char res[128];
    char *err;
    long long lapse;

    start_writer_run(&p, &w, res, sizeof(res), "5s", 0);

    /* The OOM killer, or kill -9: nobody extends the lock any more. */
    cr_assert(kill(p.pid, SIGKILL) == 0);
    lapse = earliest_lapse(res);
    tcli_await_gone(w.writer, 5000);
    tcli_await_gone(w.cmd, 5000);
    /* Gone while the lock still held: no write after it could lapse. */
    cr_assert(tcli_holders(res, w.token) >= tc_n() / 2 + 1, "the lease lapsed first");
    cr_assert(tcli_last_stamp(w.stamps) < lapse, "a write %lld ns after the lease could lapse",
              tcli_last_stamp(w.stamps) - lapse);
    cr_assert(eq(int, tcli_wait(&p), 128 + SIGKILL));
    tcli_free(&p);
    err = tcli_await_file_contains(p.err_path, "redlock-cli is gone", 5000);
    cr_assert(eq(int, tcli_count_lines(err), 1), "stderr: %s", err);
    free(err);
}

Test(run_loss, sigstop_of_run_lets_the_guard_kill_cmd_at_the_lease_end)
{
    struct tcli_proc p;
    struct writer w;
    char res[128];
    long long lapse;

    start_writer_run(&p, &w, res, sizeof(res), "1s", 0);

    /* SIGSTOP cannot be caught: CMD runs on until the lease ends, and not
     * a write later. */
    cr_assert(kill(p.pid, SIGSTOP) == 0);
    tcli_await_proc_state(p.pid, 'T', 5000);
    lapse = earliest_lapse(res);
    tcli_await_gone(w.writer, 5000);
    cr_assert(tcli_last_stamp(w.stamps) < lapse, "a write %lld ns after the lease could lapse",
              tcli_last_stamp(w.stamps) - lapse);
    cr_assert(kill(p.pid, SIGCONT) == 0);
    cr_assert(eq(int, tcli_wait(&p), 124), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "SIGKILL") != NULL, "stderr: %s", p.err);
    tcli_free(&p);
}

Test(run_loss, a_stop_while_waiting_for_the_lock_does_not_end_the_wait)
{
    struct tcli_proc holder, p;
    char res[128], t[40];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&holder, "lock", res, "--ttl", "30s"), 0));
    tcli_take_token(holder.out, t);
    tcli_free(&holder);
    tcli_bg(&p, "run", res, "--wait", "20s", "--", "true");
    tcli_await_waiting(res, 5000);
    /* ^Z and fg while it waits: the SIGCONT wakes the wait, but it is not
     * a signal to give up on. */
    cr_assert(kill(p.pid, SIGTSTP) == 0);
    tcli_await_proc_state(p.pid, 'T', 5000);
    cr_assert(kill(p.pid, SIGCONT) == 0);
    cr_assert(eq(int, tcli_run(&holder, "unlock", res, t), 0));
    tcli_free(&holder);
    cr_assert(eq(int, tcli_wait(&p), 0), "stderr: %s", p.err);
    tcli_free(&p);
}
