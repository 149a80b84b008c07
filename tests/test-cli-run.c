/* test-cli-run.c - redlock-cli run when all goes well: CMD's status, its
 * environment and descriptors, the lock held across many ttls and released
 * after, signals forwarded, a shell string (-c), a conflict skipped (-E),
 * and racing runs that never overlap.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "cli.h"
#include "cluster.h"
#include "jsonread.h"

TestSuite(run, .init = tcli_setup, .fini = tcli_teardown, .timeout = 60);

Test(run, run_exits_with_the_command_status_and_releases)
{
    struct tcli_proc p;
    char res[128];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int,
                 tcli_run(&p, "run", res, "--", "sh", "-c",
                          "test -n \"$REDLOCK_TOKEN\" && test \"$REDLOCK_RESOURCE\" = \"$1\" "
                          "&& exit 7",
                          "sh", res),
                 7),
              "stderr: %s", p.err);
    tcli_free(&p);
    tcli_await_key_gone(res, 5000); /* run exits at the release's quorum */
    /* Killed by a signal: 128 + signal, as a shell reports it. */
    cr_assert(eq(int, tcli_run(&p, "run", res, "--", "sh", "-c", "kill -USR1 $$"), 128 + SIGUSR1));
    tcli_free(&p);
}

Test(run, run_keeps_the_lock_across_many_ttls, .timeout = 60)
{
    struct tcli_proc p;
    char res[128];

    tc_resource(res, sizeof(res), NULL);
    /* ttl 1 s, CMD 4.5 s: after 4.5 ttls CMD checks, through the CLI
     * itself, that its token still holds a majority. The watchdog extends
     * whenever half the ttl is left, about every 0.49 s: 9 extensions. */
    cr_assert(eq(int,
                 tcli_run(&p, "run", res, "--ttl", "1000ms", "--json", "--", "sh", "-c",
                          "sleep 4.5; s=$(\"$REDLOCK_CLI\" status \"$REDLOCK_RESOURCE\") || exit 8;"
                          " case \"$s\" in *\"held by $REDLOCK_TOKEN on a majority\"*) exit 0;;"
                          " esac; echo \"$s\" >&2; exit 9"),
                 0),
              "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jint(p.out, "extends") >= 8, "extends: %lld", tcli_jint(p.out, "extends"));
    cr_assert(eq(int, tcli_jint(p.out, "extend_failures"), 0));
    cr_assert(eq(int, tcli_jint(p.out, "watchdog_restarts"), 0));
    tcli_free(&p);
}

Test(run, run_passes_our_descriptors_to_cmd_but_not_the_masters_sockets)
{
    struct tcli_proc p;
    char res[128];

    tc_resource(res, sizeof(res), NULL);
    /* CMD lists its own descriptors: the caller's 0-3, nothing else (the
     * CLI's connections to the masters are open while CMD runs). No pipeline
     * in CMD: sh would hold the pipe's ends while ls looks. */
    tcli_fd3_path = "/dev/null";
    cr_assert(eq(int, tcli_run(&p, "run", res, "--", "sh", "-c", "ls /proc/$$/fd"), 0), "%s",
              p.err);
    tcli_fd3_path = NULL;
    cr_assert(eq(str, p.out, "0\n1\n2\n3\n"));
    tcli_free(&p);
}

Test(run, run_exports_the_fence_and_every_resource)
{
    struct tcli_proc p;
    char a[128], b[128], want[400];
    const char *env[] = { "REDLOCK_FENCE=stale", "REDLOCK_RESOURCES=stale", NULL };
    const char *nl;
    unsigned long long fence;

    tc_resource(a, sizeof(a), NULL);
    tc_resource(b, sizeof(b), NULL);
    cr_assert(eq(int,
                 tcli_run_env(&p, env, "run", a, b, "--fence", "--", "sh", "-c",
                              "printf '%s\\n%s\\n%s\\n' \"$REDLOCK_FENCE\" \"$REDLOCK_RESOURCE\" "
                              "\"$REDLOCK_RESOURCES\"",
                              (const char *)NULL),
                 0),
              "stderr: %s", p.err);
    /* REDLOCK_FENCE, then REDLOCK_RESOURCE (the first), then
     * REDLOCK_RESOURCES: one name per line, in the order given. */
    fence = strtoull(p.out, NULL, 10);
    cr_assert(fence > 0, "stdout: %s", p.out);
    nl = strchr(p.out, '\n');
    cr_assert(nl != NULL);
    snprintf(want, sizeof(want), "%s\n%s\n%s\n", a, a, b);
    cr_assert(eq(str, (char *)nl + 1, want));
    tcli_free(&p);
    /* run exits at the release's quorum. */
    tcli_await_key_gone(a, 5000);
    tcli_await_key_gone(b, 5000);

    /* The fence is in the JSON too, and grows. */
    cr_assert(eq(int, tcli_run(&p, "run", a, "--fence", "--json", "--", "true"), 0), "%s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_yes((unsigned long long)tcli_jint(p.out, "fence") > fence), "%s", p.out);
    tcli_free(&p);

    /* Without --fence there is no REDLOCK_FENCE, not even the caller's. */
    cr_assert(eq(int,
                 tcli_run_env(&p, env, "run", a, "--", "sh", "-c",
                              "printf '%s|%s\\n' \"${REDLOCK_FENCE-unset}\" \"$REDLOCK_RESOURCES\"",
                              (const char *)NULL),
                 0),
              "stderr: %s", p.err);
    snprintf(want, sizeof(want), "unset|%s\n", a);
    cr_assert(eq(str, p.out, want));
    tcli_free(&p);
}

Test(run, run_with_a_set_holds_every_member_until_cmd_exits, .timeout = 60)
{
    struct tcli_proc p;
    char a[128], b[128];

    tc_resource(a, sizeof(a), NULL);
    tc_resource(b, sizeof(b), NULL);
    /* ttl 1 s, CMD 1.5 s: then every member is still held by CMD's token
     * on a majority, and a lock on one member alone is refused. */
    cr_assert(eq(int,
                 tcli_run(&p, "run", a, b, "--ttl", "1000ms", "--json", "--", "sh", "-c",
                          "sleep 1.5; printf '%s\\n' \"$REDLOCK_RESOURCES\" | "
                          "while IFS= read -r r; do s=$(\"$REDLOCK_CLI\" status \"$r\") || exit 8;"
                          " case \"$s\" in *\"held by $REDLOCK_TOKEN on a majority\"*) ;;"
                          " *) echo \"$s\" >&2; exit 9;; esac; done || exit $?;"
                          " \"$REDLOCK_CLI\" -q lock \"$1\"; test $? = 75 || exit 10",
                          "sh", b),
                 0),
              "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jint(p.out, "extends") >= 2, "extends: %lld", tcli_jint(p.out, "extends"));
    cr_assert(tcli_jbool(p.out, "released"));
    tcli_free(&p);
    /* run exits at the release's quorum; the 1 s ttl would end the keys
     * soon anyway, so they must go before it could. */
    tcli_await_released(a, 5000);
    tcli_await_released(b, 5000);
}

Test(run, run_forwards_sigterm_and_releases)
{
    struct tcli_proc p;
    char res[128], fifo[TCLI_SCRATCH_MAX + 32], script[TCLI_SCRATCH_MAX + 128];

    tc_resource(res, sizeof(res), NULL);
    tcli_make_fifo(fifo, sizeof(fifo));
    snprintf(script, sizeof(script),
             "trap 'exit 7' TERM; echo $$ > '%s'; while :; do sleep 0.05; done", fifo);
    tcli_bg(&p, "run", res, "--", "sh", "-c", script);
    tcli_read_pid_from_fifo(fifo);
    cr_assert(kill(p.pid, SIGTERM) == 0);
    /* CMD's TERM trap decides the status; the lock is released after. */
    cr_assert(eq(int, tcli_wait(&p), 7), "stderr: %s", p.err);
    tcli_await_key_gone(res, 5000); /* run exits at the release's quorum */
    tcli_free(&p);
}

Test(run, run_forwards_sigint)
{
    struct tcli_proc p;
    char res[128], fifo[TCLI_SCRATCH_MAX + 32], script[TCLI_SCRATCH_MAX + 128];

    tc_resource(res, sizeof(res), NULL);
    tcli_make_fifo(fifo, sizeof(fifo));
    snprintf(script, sizeof(script), "echo $$ > '%s'; exec sleep 60", fifo);
    tcli_bg(&p, "run", res, "--", "sh", "-c", script);
    tcli_read_pid_from_fifo(fifo);
    cr_assert(kill(p.pid, SIGINT) == 0);
    cr_assert(eq(int, tcli_wait(&p), 128 + SIGINT), "stderr: %s", p.err);
    tcli_await_key_gone(res, 5000); /* run exits at the release's quorum */
    tcli_free(&p);
}

Test(run, run_exits_126_and_127_when_cmd_cannot_start)
{
    struct tcli_proc p;
    char res[128], noexec[TCLI_SCRATCH_MAX + 32];
    int fd;

    tc_resource(res, sizeof(res), NULL);
    snprintf(noexec, sizeof(noexec), "%s/not-executable", tcli_tmpdir);
    fd = open(noexec, O_WRONLY | O_CREAT, 0644);
    cr_assert(fd >= 0);
    cr_assert(write(fd, "#!/bin/sh\nexit 0\n", 17) == 17);
    close(fd);

    cr_assert(eq(int, tcli_run(&p, "run", res, "--", noexec), 126), "%s", p.err);
    cr_assert(eq(int, tcli_count_lines(p.err), 1), "%s", p.err);
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "run", res, "--", tcli_tmpdir), 126), "%s",
              p.err); /* a directory */
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "run", res, "--", "redlock-no-such-command"), 127));
    cr_assert(strstr(p.err, "command not found") != NULL, "%s", p.err);
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "run", res, "--json", "--", "/no/such/file"), 127));
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(int, tcli_jint(p.out, "exit"), 127));
    tcli_free(&p);
    /* The lock was released each time. */
    tcli_await_key_gone(res, 5000); /* run exits at the release's quorum */
}

Test(run, racing_runs_never_overlap, .timeout = 90)
{
    enum { RACERS = 3 };
    struct tcli_proc p[RACERS];
    char res[128], stamps[TCLI_SCRATCH_MAX + 32], script[TCLI_SCRATCH_MAX * 2 + 256];
    long long start[RACERS], end[RACERS];
    int n_start = 0, n_end = 0;
    FILE *f;
    char word[16];
    long long t;

    tc_resource(res, sizeof(res), NULL);
    snprintf(stamps, sizeof(stamps), "%s/stamps", tcli_tmpdir);
    /* Each CMD outlives the ttl (1.3 s vs 1 s), so exclusion depends on the
     * extends too. Stamps are CLOCK_REALTIME ns, appended in one write. */
    snprintf(script, sizeof(script),
             "echo start $(date +%%s%%N) >> '%s'; sleep 1.3; echo end $(date +%%s%%N) >> '%s'",
             stamps, stamps);
    for (int i = 0; i < RACERS; i++) {
        const char *args[] = {
            "run",  res,  "--ttl", "1000ms", "--wait", "30000ms", "--retry-delay",
            "50ms", "--", "sh",    "-c",     script,   NULL
        };

        tcli_start(&p[i], args, NULL);
    }
    for (int i = 0; i < RACERS; i++) {
        cr_assert(eq(int, tcli_wait(&p[i]), 0), "racer %d: %s", i, p[i].err);
        tcli_free(&p[i]);
    }
    f = fopen(stamps, "r");
    cr_assert(f != NULL);
    while (fscanf(f, "%15s %lld", word, &t) == 2) {
        if (strcmp(word, "start") == 0) {
            cr_assert(n_start < RACERS);
            start[n_start++] = t;
        } else {
            cr_assert(n_end < RACERS);
            end[n_end++] = t;
        }
        /* Intervals are disjoint iff the file alternates start, end. */
        cr_assert(n_start - n_end == 0 || n_start - n_end == 1,
                  "two CMDs ran at once (%d starts, %d ends)", n_start, n_end);
    }
    fclose(f);
    cr_assert(eq(int, n_start, RACERS));
    cr_assert(eq(int, n_end, RACERS));
    for (int i = 0; i < RACERS; i++) {
        cr_assert(start[i] < end[i]);
        if (i > 0)
            cr_assert(start[i] >= end[i - 1], "CMD %d started before CMD %d ended", i, i - 1);
    }
}

Test(run, c_runs_a_shell_string_under_the_lock)
{
    struct tcli_proc p;
    char res[128], script[256];

    tc_resource(res, sizeof(res), NULL);
    snprintf(script, sizeof(script),
             "test \"$REDLOCK_RESOURCE\" = '%s' && test -n \"$REDLOCK_TOKEN\" && echo \"in $0\"; "
             "exit 4",
             res);
    cr_assert(eq(int, tcli_run(&p, "run", res, "-c", script), 4), "stderr: %s", p.err);
    cr_assert(eq(str, p.out, "in /bin/sh\n"));
    tcli_free(&p);
    tcli_await_key_gone(res, 5000); /* run exits at the release's quorum */
    /* The long spelling, before the command name. */
    cr_assert(eq(int, tcli_run(&p, "--command=exit 0", "run", res), 0), "stderr: %s", p.err);
    tcli_free(&p);
}

Test(run, foreground_lets_cmd_read_the_terminal)
{
    struct tcli_proc p;
    char res[128], cmd[2048], out[4096];
    size_t n = 0;
    FILE *f;
    int rc;

    tc_resource(res, sizeof(res), NULL);
    /* Without a terminal (stdin /dev/null, no tty): as without the flag. */
    cr_assert(eq(int, tcli_run(&p, "run", res, "--foreground", "--", "true"), 0), "stderr: %s",
              p.err);
    tcli_free(&p);
    if (access("/usr/bin/script", X_OK) != 0)
        cr_skip_test("script(1) is not installed: no pty to test with");
    /* In a pty (script(1)): CMD reads the terminal, as under flock, and the
     * shell reads it again after: the terminal was given back. (stdin is
     * the terminal here, so the flag only says what run does anyway:
     * cmd_takes_the_terminal_when_stdin_is_one.) */
    snprintf(cmd, sizeof(cmd),
             "printf 'hello\\nworld\\n' | REDLOCK_MASTERS='%s' timeout 20 script -qec "
             "\"'%s' run '%s' --foreground -c 'read x; echo got:\\$x'; read y; "
             "echo after:\\$y\" /dev/null",
             tc_masters(), tcli_path(), res);
    f = popen(cmd, "r");
    cr_assert(f != NULL);
    while (n < sizeof(out) - 1 && fgets(out + n, (int)(sizeof(out) - n), f) != NULL)
        n += strlen(out + n);
    out[n] = '\0';
    rc = pclose(f);
    cr_assert(eq(int, WEXITSTATUS(rc), 0), "output: %s", out);
    cr_assert(strstr(out, "got:hello") != NULL, "output: %s", out);
    cr_assert(strstr(out, "after:world") != NULL, "output: %s", out);
}

/* The output of shell command @cmd (stdout and stderr, as the command
 * redirects them) into @out; its exit status. */
static int shell_output(const char *cmd, char *out, size_t size)
{
    size_t n = 0;
    FILE *f = popen(cmd, "r");

    cr_assert(f != NULL);
    while (n < size - 1 && fgets(out + n, (int)(size - n), f) != NULL)
        n += strlen(out + n);
    out[n] = '\0';
    return WEXITSTATUS(pclose(f));
}

/* tests/helpers/cli/pty-job-control.py in @mode on a resource of its own:
 * an interactive bash in a pty runs `run`, types, ^Z's, fg's. */
static void job_control_at_an_interactive_shell(const char *mode)
{
    char res[128], cmd[2048], out[4096];

    if (access("/usr/bin/python3", X_OK) != 0 || access("/bin/bash", X_OK) != 0)
        cr_skip_test("python3 or bash is not installed: no interactive shell in a pty");
    tc_resource(res, sizeof(res), NULL);
    snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' '%s' '%s' '%s' 2>&1", TCLI_PTY_SCRIPT,
             tcli_path(), tc_masters(), res, mode);
    cr_assert(eq(int, shell_output(cmd, out, sizeof(out)), 0), "%s", out);
    tcli_await_key_gone(res, 5000); /* run exits at the release's quorum */
}

Test(run, foreground_job_control_at_an_interactive_shell, .timeout = 60)
{
    /* ^Z stops CMD and redlock-cli with it; fg gives CMD the terminal
     * again. */
    job_control_at_an_interactive_shell("foreground");
}

/* As flock(1): stdin is the terminal, so CMD's group takes it without
 * --foreground; CMD reads it, ^Z stops the job, fg gives it back. */
/* In a pipeline (run ... | cat), the other end shares our process group:
 * CMD must not take the terminal from it (it would stop a pager). Alone on
 * the terminal, it takes it. CMD says which: the terminal's foreground
 * group is its own, or not. */
Test(run, cmd_leaves_the_terminal_to_a_pipeline, .timeout = 60)
{
    char res[128], where[TCLI_SCRATCH_MAX + 16], cmd[4096], out[4096];

    if (access("/usr/bin/script", X_OK) != 0)
        cr_skip_test("script(1) is not installed: no pty to test with");
    tc_resource(res, sizeof(res), NULL);
    snprintf(where, sizeof(where), "%s/where.sh", tcli_tmpdir);
    tcli_put_file(where, "set -- $(ps -o tpgid=,pgid= -p $$)\n"
                         "if [ \"$1\" = \"$2\" ]; then echo cmd:fg; else echo cmd:bg; fi\n");
    snprintf(cmd, sizeof(cmd),
             "REDLOCK_MASTERS='%s' timeout 20 script -qec "
             "\"'%s' run '%s' -- sh '%s' | sed s/^/piped-/; '%s' run '%s' -- sh '%s'\" "
             "/dev/null </dev/null 2>&1",
             tc_masters(), tcli_path(), res, where, tcli_path(), res, where);
    cr_assert(eq(int, shell_output(cmd, out, sizeof(out)), 0), "%s", out);
    cr_assert(strstr(out, "piped-cmd:bg") != NULL, "in a pipeline: %s", out);
    cr_assert(strstr(out, "\ncmd:fg") != NULL || strncmp(out, "cmd:fg", 6) == 0,
              "alone on the terminal: %s", out);
}

Test(run, cmd_takes_the_terminal_when_stdin_is_one, .timeout = 60)
{
    char res[128], cmd[2048], out[4096];

    if (access("/usr/bin/script", X_OK) != 0)
        cr_skip_test("script(1) is not installed: no pty to test with");
    tc_resource(res, sizeof(res), NULL);
    /* In a pty: CMD reads the terminal, then the shell reads it again (it
     * was given back). Before, CMD stopped on SIGTTIN and the run hung
     * until timeout(1) killed it: exit 124, no "got:". */
    snprintf(cmd, sizeof(cmd),
             "printf 'hello\\nworld\\n' | REDLOCK_MASTERS='%s' timeout 20 script -qec "
             "\"'%s' run '%s' -c 'read x; echo got:\\$x'; read y; "
             "echo after:\\$y\" /dev/null",
             tc_masters(), tcli_path(), res);
    cr_assert(eq(int, shell_output(cmd, out, sizeof(out)), 0), "output: %s", out);
    cr_assert(strstr(out, "got:hello") != NULL, "output: %s", out);
    cr_assert(strstr(out, "after:world") != NULL, "output: %s", out);
    tcli_await_key_gone(res, 5000);
    job_control_at_an_interactive_shell("auto");
}

/* Started with `&`, run never takes the terminal from the shell; a CMD
 * that reads it stops the whole job (one line says why), and fg gives CMD
 * the terminal. */
Test(run, a_background_run_stops_when_cmd_reads_the_terminal_and_fg_resumes_it, .timeout = 60)
{
    job_control_at_an_interactive_shell("background");
}

Test(run, conflict_exit_code_0_skips_cmd_quietly)
{
    struct tcli_proc p;
    char res[128], marker[TCLI_SCRATCH_MAX + 32];

    tc_resource(res, sizeof(res), NULL);
    snprintf(marker, sizeof(marker), "%s/ran", tcli_tmpdir);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--ttl", "30s"), 0));
    tcli_free(&p);
    /* flock -E 0: a cron job that finds the lock held skips its turn. */
    cr_assert(eq(int, tcli_run(&p, "run", res, "-E", "0", "--", "touch", marker), 0), "stderr: %s",
              p.err);
    cr_assert(eq(str, p.err, ""));
    tcli_free(&p);
    cr_assert(access(marker, F_OK) != 0, "CMD ran without the lock");
    /* And a CMD that exits 75 itself is told apart from a conflict. */
    cr_assert(eq(int, tcli_run(&p, "run", res, "-E", "9", "--json", "--", "touch", marker), 9));
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jnull(p.out, "child"));
    tcli_free(&p);
    cr_assert(eq(int,
                 tcli_run(&p, "run",
                          "other-"
                          "resource",
                          "-E", "9", "--", "sh", "-c", "exit 75"),
                 75));
    tcli_free(&p);
}

Test(run, sigterm_while_waiting_for_the_lock_cancels_it_and_cmd_never_runs)
{
    struct tcli_proc holder, p;
    char res[128], t[40], marker[TCLI_SCRATCH_MAX + 32], buf[64];

    tc_resource(res, sizeof(res), NULL);
    snprintf(marker, sizeof(marker), "%s/ran", tcli_tmpdir);
    cr_assert(eq(int, tcli_run(&holder, "lock", res, "--ttl", "30s"), 0));
    tcli_take_token(holder.out, t);
    tcli_free(&holder);
    tcli_bg(&p, "run", res, "--wait", "forever", "--json", "--", "touch", marker);
    tcli_await_waiting(res, 5000);
    cr_assert(kill(p.pid, SIGTERM) == 0);
    cr_assert(eq(int, tcli_wait(&p), 128 + SIGTERM), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "interrupted by SIGTERM") != NULL, "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(str, tcli_jstr(tcli_jreq(p.out, "error"), "code", buf, sizeof(buf)), "ECANCELED"));
    cr_assert(tcli_jnull(p.out, "child"));
    cr_assert(tcli_yes(!tcli_jbool(p.out, "released")));
    tcli_free(&p);
    cr_assert(access(marker, F_OK) != 0, "CMD ran");
    cr_assert(eq(int, tcli_holders(res, t), tc_n()), "the holder's lock was touched");
}

/* @text into the file @path, readable by its owner only. */
static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    cr_assert(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    cr_assert(eq(int, fclose(f), 0));
    cr_assert(eq(int, chmod(path, 0600), 0));
}

/* What CMD's environment says (its REDLOCK_* lines, sorted), then whether
 * the redlock-cli it runs, from another directory, reaches the same lock:
 * it extends it. */
static const char env_and_extend[] =
    "env | grep '^REDLOCK_' | sort > \"$1\"; cd / && "
    "\"$REDLOCK_CLI\" extend \"$REDLOCK_RESOURCE\" \"$REDLOCK_TOKEN\" --ttl 20s -q";

/* @path (absolute) as a path relative to the working directory. */
static void relative(const char *path, char *buf, size_t size)
{
    char cwd[TCLI_SCRATCH_MAX];
    size_t used = 0;

    cr_assert(getcwd(cwd, sizeof(cwd)) != NULL);
    for (const char *c = cwd; *c; c++)
        if (*c == '/' && c[1] != '\0')
            used += (size_t)snprintf(buf + used, size - used, "../");
    snprintf(buf + used, size - used, "%s", path + 1);
}

Test(run, cmd_sees_every_setting_resolved_but_no_password_that_was_not_in_the_environment)
{
    static const char pw[] = "run env s3cret";
    struct tcli_proc p;
    char res[128], priv[128], var[TCLI_SCRATCH_MAX + 32], mfile[TCLI_SCRATCH_MAX + 32];
    char pfile[TCLI_SCRATCH_MAX + 32], conf[TCLI_SCRATCH_MAX + 32], out[TCLI_SCRATCH_MAX + 32];
    char want[2 * TCLI_SCRATCH_MAX + 256], rel[3 * TCLI_SCRATCH_MAX], *env;

    /* One private master with a password; the settings from every source:
     * the command line (--timeout-ms, --masters-file, --password-file given
     * relative to the working directory, which CMD leaves), the
     * environment ($REDLOCK_RETRY; a stale $REDLOCK_MASTERS and a wrong
     * $REDLOCK_PASSWORD that those outweigh), a config file (prefix). */
    tc_resource(res, sizeof(res), NULL);
    tcli_private_start(1, 5, pw, priv, sizeof(priv));
    snprintf(mfile, sizeof(mfile), "%s/masters", tcli_tmpdir);
    snprintf(pfile, sizeof(pfile), "%s/password", tcli_tmpdir);
    snprintf(conf, sizeof(conf), "%s/cli.conf", tcli_tmpdir);
    snprintf(out, sizeof(out), "%s/env", tcli_tmpdir);
    put_file(mfile, priv);
    put_file(pfile, pw);
    put_file(conf, "prefix = runenv-\nconnect-timeout-ms = 3s\n");
    relative(pfile, rel, sizeof(rel));
    snprintf(var, sizeof(var), "REDLOCK_PASSWORD=wrong");
    {
        const char *env_in[] = { "REDLOCK_RETRY=2", "REDLOCK_MASTERS=127.0.0.1:1", var, NULL };

        cr_assert(eq(int,
                     tcli_run_env(&p, env_in, "--config", conf, "--masters-file", mfile,
                                  "--password-file", rel, "--timeout-ms", "900ms", "run", res, "--",
                                  "sh", "-c", env_and_extend, "sh", out, (const char *)NULL),
                     0),
                  "CMD's redlock-cli did not reach the lock: %s", p.err);
    }
    tcli_free(&p);
    env = tcli_slurp(out);
    snprintf(want, sizeof(want),
             "REDLOCK_CONNECT_TIMEOUT_MS=3s\nREDLOCK_MASTERS=%s\nREDLOCK_PASSWORD_FILE=%s\n"
             "REDLOCK_PREFIX=runenv-\n",
             priv, pfile);
    cr_assert(tcli_yes(strstr(env, want) != NULL), "want\n%s\nin\n%s", want, env);
    cr_assert(tcli_yes(strstr(env, "REDLOCK_RETRY=2\n") != NULL), "%s", env);
    cr_assert(tcli_yes(strstr(env, "REDLOCK_TIMEOUT_MS=900ms\n") != NULL), "%s", env);
    /* The password file outweighed $REDLOCK_PASSWORD: CMD gets the file's
     * path, not the variable, and never the password. */
    cr_assert(tcli_yes(strstr(env, "REDLOCK_PASSWORD=") == NULL), "%s", env);
    cr_assert(tcli_yes(strstr(env, pw) == NULL), "the password is in CMD's environment: %s", env);
    free(env);

    /* A masters list with the password in it, from a file: CMD gets the
     * file, not the list (nor the inherited $REDLOCK_MASTERS). */
    snprintf(want, sizeof(want), "redis://:run%%20env%%20s3cret@%s", priv);
    put_file(mfile, want);
    {
        const char *env_in[] = { "REDLOCK_MASTERS=127.0.0.1:1", NULL };

        cr_assert(eq(int,
                     tcli_run_env(&p, env_in, "--masters-file", mfile, "run", res, "--", "sh", "-c",
                                  env_and_extend, "sh", out, (const char *)NULL),
                     0),
                  "CMD's redlock-cli did not reach the lock: %s", p.err);
    }
    tcli_free(&p);
    env = tcli_slurp(out);
    snprintf(want, sizeof(want), "REDLOCK_MASTERS_FILE=%s\n", mfile);
    cr_assert(tcli_yes(strstr(env, want) != NULL), "want %s in\n%s", want, env);
    cr_assert(tcli_yes(strstr(env, "REDLOCK_MASTERS=") == NULL), "%s", env);
    cr_assert(tcli_yes(strstr(env, "s3cret") == NULL), "the password is in CMD's environment: %s",
              env);
    free(env);

    /* The same list from $REDLOCK_MASTERS: it was in the environment
     * already, and CMD gets it as it was. */
    snprintf(var, sizeof(var), "REDLOCK_MASTERS=redis://:run%%20env%%20s3cret@%s", priv);
    {
        const char *env_in[] = { var, NULL };

        cr_assert(eq(int,
                     tcli_run_env(&p, env_in, "run", res, "--", "sh", "-c", env_and_extend, "sh",
                                  out, (const char *)NULL),
                     0),
                  "CMD's redlock-cli did not reach the lock: %s", p.err);
    }
    tcli_free(&p);
    env = tcli_slurp(out);
    cr_assert(tcli_yes(strstr(env, var) != NULL), "want %s in\n%s", var, env);
    free(env);
}
