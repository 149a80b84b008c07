/* test-cli-run-faults.c - redlock-cli run while masters fail under it: a
 * minority paused (CMD and the lock carry on), a majority paused for a
 * while (the library's watchdog rides it out), or for good (CMD is stopped
 * with the watchdog's floor of validity left), a majority killed.
 *
 * The faults hit private masters (cli.h): one private cluster of up to 5
 * on the spare ports of this executable's slot, so its tests run one at a
 * time (criterion -j1, tests/meson.build).
 */
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

TestSuite(run_faults, .init = tcli_setup, .fini = tcli_teardown, .timeout = 60);

/* CMD for the tests below: writes "PID TOKEN" into @fifo, then waits for
 * a line on @go (the test says when it may exit). */
struct held_cmd {
    char fifo[TCLI_SCRATCH_MAX + 32];
    char go[TCLI_SCRATCH_MAX + 32];
    char script[3 * TCLI_SCRATCH_MAX];
    pid_t pid;
    char token[40];
};

static void held_cmd_plan(struct held_cmd *h)
{
    snprintf(h->fifo, sizeof(h->fifo), "%s/fifo", tcli_tmpdir);
    snprintf(h->go, sizeof(h->go), "%s/go", tcli_tmpdir);
    cr_assert(mkfifo(h->fifo, 0600) == 0 && mkfifo(h->go, 0600) == 0);
    snprintf(h->script, sizeof(h->script), "echo $$ \"$REDLOCK_TOKEN\" > '%s'; read x < '%s'",
             h->fifo, h->go);
}

static void held_cmd_started(struct held_cmd *h)
{
    char buf[128];
    long pid = 0;

    tcli_read_line_from_fifo(h->fifo, buf, sizeof(buf));
    cr_assert(eq(int, sscanf(buf, "%ld %39s", &pid, h->token), 2), "'%s'", buf);
    h->pid = (pid_t)pid;
}

/* Let CMD exit 0. */
static void held_cmd_finish(const struct held_cmd *h)
{
    int fd = open(h->go, O_WRONLY);

    cr_assert(fd >= 0);
    cr_assert(write(fd, "go\n", 3) == 3);
    close(fd);
}

Test(run_faults, run_keeps_cmd_and_the_lock_with_two_of_five_masters_paused)
{
    struct tcli_proc p, st;
    struct held_cmd h;
    char res[128], priv[128], masters[512], buf[64];
    struct tcli_monitor *mon;

    /* 3 shared masters that stay up, 2 private ones that this test pauses. */
    tc_resource(res, sizeof(res), NULL);
    tcli_private_start(2, 5, tc_password(), priv, sizeof(priv));
    snprintf(masters, sizeof(masters), "%s,%s,%s,%s", tc_addr(0), tc_addr(1), tc_addr(2), priv);
    held_cmd_plan(&h);
    tcli_bg(&p, "run", res, "--masters", masters, "--ttl", "1s", "--json", "-c", h.script);
    held_cmd_started(&h);
    tcli_private_pause(0);
    tcli_private_pause(1);

    /* Two extensions (one every half ttl) while the two are paused, each
     * decided by the three that answer: longer than an extension interval,
     * and longer than the ttl itself. */
    mon = tcli_monitor_start(0);
    tcli_monitor_await(mon, h.token, 5000);
    tcli_monitor_await(mon, h.token, 5000);
    tcli_monitor_await(mon, h.token, 5000);
    tcli_monitor_stop(mon);
    cr_assert(tcli_yes(!tcli_process_gone(h.pid)), "CMD was stopped");
    cr_assert(eq(int, tcli_holders(res, h.token), 3), "not held on the three that answer");

    /* Seen from outside: held by CMD's token on a majority. */
    cr_assert(eq(int, tcli_run(&st, "status", res, "--masters", masters, "--json"), 0),
              "stderr: %s", st.err);
    tcli_assert_one_json_object(st.out);
    cr_assert(tcli_jbool(st.out, "held"), "%s", st.out);
    cr_assert(eq(str, tcli_jstr(st.out, "majority_token", buf, sizeof(buf)), h.token), "%s",
              st.out);
    tcli_free(&st);

    tcli_private_resume(0);
    tcli_private_resume(1);
    held_cmd_finish(&h);
    cr_assert(eq(int, tcli_wait(&p), 0), "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_yes(!tcli_jbool(p.out, "lock_lost")), "%s", p.out);
    cr_assert(tcli_jint(p.out, "extends") >= 2, "%s", p.out);
    cr_assert(eq(int, tcli_jint(p.out, "extend_failures"), 0), "%s", p.out);
    cr_assert(tcli_jbool(p.out, "released"), "%s", p.out);
    tcli_free(&p);
}

Test(run_faults, run_rides_out_three_of_five_masters_paused_for_a_while)
{
    struct tcli_proc p;
    struct held_cmd h;
    char res[128], priv[128], masters[512];
    char *err;

    /* 2 shared masters, 3 private ones: pausing those takes the quorum. */
    tc_resource(res, sizeof(res), NULL);
    tcli_private_start(3, 5, tc_password(), priv, sizeof(priv));
    snprintf(masters, sizeof(masters), "%s,%s,%s", tc_addr(0), tc_addr(1), priv);
    held_cmd_plan(&h);
    tcli_bg(&p, "run", res, "--masters", masters, "--ttl", "6s", "--json", "-c", h.script);
    held_cmd_started(&h);
    for (int i = 0; i < 3; i++)
        tcli_private_pause(i);

    /* The extension due with 3 s left fails (no quorum); the library tries
     * again until only its floor (600 ms) is left. The masters come back
     * well before that, and an extension reaches them. */
    err = tcli_await_file_contains(p.err_path, "extend failed", 6000);
    free(err);
    for (int i = 0; i < 3; i++)
        tcli_private_resume(i);
    err = tcli_await_file_contains(p.err_path, "extended again", 3000);
    free(err);
    /* Printed at the extension's quorum: private master 0 may run it
     * later (its old lease had 3 s or less left, so > 3 s is the new one). */
    cr_assert(TC_AWAIT(tcli_private_pttl(0, res) > 3000, 3000),
              "the extension did not reach a master that was back");
    cr_assert(tcli_yes(!tcli_process_gone(h.pid)), "CMD was stopped");

    held_cmd_finish(&h);
    cr_assert(eq(int, tcli_wait(&p), 0), "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_yes(!tcli_jbool(p.out, "lock_lost")), "%s", p.out);
    cr_assert(tcli_jint(p.out, "extend_failures") >= 1, "%s", p.out);
    cr_assert(tcli_jint(p.out, "watchdog_restarts") >= 1, "%s", p.out);
    cr_assert(tcli_jint(p.out, "extends") >= 1, "%s", p.out);
    cr_assert(tcli_jbool(p.out, "released"), "%s", p.out);
    cr_assert(eq(int, tcli_jint(tcli_jreq(p.out, "child"), "exit_status"), 0), "%s", p.out);
    tcli_free(&p);
}

Test(run_faults, run_stops_cmd_with_the_floor_left_when_a_majority_stays_paused)
{
    struct tcli_proc p;
    struct held_cmd h;
    char res[128], priv[128], masters[512], code[32];
    const char *left;
    long long ms;

    tc_resource(res, sizeof(res), NULL);
    tcli_private_start(3, 5, tc_password(), priv, sizeof(priv));
    snprintf(masters, sizeof(masters), "%s,%s,%s", tc_addr(0), tc_addr(1), priv);
    held_cmd_plan(&h);
    tcli_bg(&p, "run", res, "--masters", masters, "--ttl", "2s", "--kill-after", "5s", "--json",
            "-c", h.script);
    held_cmd_started(&h);
    for (int i = 0; i < 3; i++)
        tcli_private_pause(i);

    /* Extensions fail from 1 s left on, every 100 ms; with the floor
     * (max(ttl/10, 4 x 50 ms) = 200 ms) left the watchdog gives up, and CMD
     * gets SIGTERM while the lock is still ours. */
    cr_assert(eq(int, tcli_wait(&p), 124), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "lock lost") != NULL, "stderr: %s", p.err);
    left = strstr(p.err, "ms of validity left (floor 200 ms)");
    cr_assert(left != NULL, "stderr: %s", p.err);
    while (left > p.err && left[-1] == ' ')
        left--;
    while (left > p.err && left[-1] >= '0' && left[-1] <= '9')
        left--;
    ms = atoll(left);
    cr_assert(ms > 0 && ms <= 300, "gave up with %lld ms left: %s", ms, p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jbool(p.out, "lock_lost"));
    cr_assert(eq(str, tcli_jstr(tcli_jreq(p.out, "error"), "code", code, sizeof(code)),
                 "ENOQUORUM"),
              "%s", p.out);
    cr_assert(tcli_jint(p.out, "extend_failures") >= 2, "%s", p.out);
    cr_assert(tcli_jint(p.out, "watchdog_restarts") >= 1, "%s", p.out);
    cr_assert(eq(int, tcli_jint(tcli_jreq(p.out, "child"), "signal"), SIGTERM), "%s", p.out);
    tcli_free(&p);
    for (int i = 0; i < 3; i++)
        tcli_private_resume(i);
}

Test(run_faults, run_exits_124_when_a_majority_of_masters_dies)
{
    struct tcli_proc p;
    char res[128], fifo[TCLI_SCRATCH_MAX + 32], script[TCLI_SCRATCH_MAX * 2 + 256], priv[256],
        masters[512];
    pid_t child, grandchild;
    uint64_t t0;

    tc_resource(res, sizeof(res), NULL);
    /* 2 shared masters + 3 private ones that this test may kill. */
    tcli_private_start(3, 5, tc_password(), priv, sizeof(priv));
    snprintf(masters, sizeof(masters), "%s,%s,%s", tc_addr(0), tc_addr(1), priv);
    tcli_make_fifo(fifo, sizeof(fifo));
    /* CMD starts a grandchild, then reports both pids. */
    snprintf(script, sizeof(script), "sleep 60 & echo $$ $! > '%s'; wait", fifo);
    tcli_bg(&p, "run", res, "--masters", masters, "--ttl", "1500ms", "--json", "--", "sh", "-c",
            script);
    {
        char buf[64];
        long a = 0, b = 0;

        tcli_read_line_from_fifo(fifo, buf, sizeof(buf));
        cr_assert(eq(int, sscanf(buf, "%ld %ld", &a, &b), 2), "'%s'", buf);
        child = (pid_t)a;
        grandchild = (pid_t)b;
    }
    t0 = tc_now_us();
    for (int i = 0; i < 3; i++)
        tcli_private_kill(i);
    /* The watchdog's extensions now fail (no quorum), and it tries again
     * while validity remains above its floor; then CMD gets SIGTERM, its
     * whole process group with it. */
    cr_assert(eq(int, tcli_wait(&p), 124), "stderr: %s", p.err);
    cr_assert(tc_ms_since(t0) < 1500 + 2000 + 1000, "took %llu ms",
              (unsigned long long)tc_ms_since(t0));
    cr_assert(tcli_process_gone(child), "CMD (pid %ld) still runs", (long)child);
    cr_assert(tcli_process_gone(grandchild), "CMD's child (pid %ld) still runs", (long)grandchild);
    cr_assert(strstr(p.err, "lock lost") != NULL, "%s", p.err);
    tcli_assert_one_json_object(p.out);
    {
        char code[32];

        cr_assert(tcli_jbool(p.out, "lock_lost"));
        cr_assert(tcli_yes(!tcli_jbool(p.out, "limit_reached")));
        cr_assert(tcli_jint(p.out, "extend_failures") >= 1, "%s", p.out);
        cr_assert(eq(str, tcli_jstr(tcli_jreq(p.out, "error"), "code", code, sizeof(code)),
                     "ENOQUORUM"),
                  "%s", p.out);
    }
    tcli_free(&p);
}

/* Masters started by hand (no cluster-up.sh, never declared) have no memory
 * marker: the first lock cannot count them. It says so in plain words and
 * names `redlock-cli declare-empty` and when it is safe; after it, the
 * lock is taken. (Private masters, emptied: the memory guard is theirs.) */
Test(run_faults, the_first_lock_on_new_masters_names_declare_empty)
{
    struct tcli_proc p;
    char res[128], priv[256];

    tc_resource(res, sizeof(res), NULL);
    tcli_private_start(3, 5, tc_password(), priv, sizeof(priv));
    for (int i = 0; i < 3; i++) {
        struct redisReply *r = tcli_private_cmd(i, "FLUSHALL");

        cr_assert(r != NULL, "FLUSHALL on private master %d", i);
        freeReplyObject(r);
    }
    cr_assert(eq(int, tcli_run(&p, "run", res, "--masters", priv, "--", "true"), 69), "stderr: %s",
              p.err);
    cr_assert(strstr(p.err, "3 of 3 masters have no memory marker") != NULL, "%s", p.err);
    cr_assert(strstr(p.err, "run `redlock-cli declare-empty` once") != NULL, "%s", p.err);
    cr_assert(strstr(p.err, "restarted empty while locks may be live: wait") != NULL, "%s", p.err);
    tcli_free(&p);
    /* The same for lock. */
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--masters", priv), 69), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "declare-empty") != NULL, "%s", p.err);
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "declare-empty", "--masters", priv), 0), "stderr: %s", p.err);
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "run", res, "--masters", priv, "--", "true"), 0), "stderr: %s",
              p.err);
    cr_assert(strstr(p.err, "declare-empty") == NULL, "%s", p.err);
    tcli_free(&p);
}
