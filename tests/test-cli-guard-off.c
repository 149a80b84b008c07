/* test-cli-guard-off.c - --no-restart-guard, the switch that turns the
 * memory guard off, is a command-line flag only (issue 29, item 4).
 *
 * It used to come as silently from $REDLOCK_NO_RESTART_GUARD and a config
 * file's line, and `run` handed it on to CMD's environment, so one setting
 * turned the guard off for every redlock-cli below it. Now the environment
 * and the file refuse it in one line naming where it came from, every use
 * prints a warning (without -v), and run's CMD never inherits it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "cli.h"
#include "cluster.h"
#include "jsonread.h"

TestSuite(guard_off, .init = tcli_setup, .fini = tcli_teardown, .timeout = 60);

#define REFUSED_IN_ENV                                                                         \
    "redlock-cli: $REDLOCK_NO_RESTART_GUARD: --no-restart-guard must be given on the command " \
    "line, not in the environment: unset the variable (it would turn the memory guard off "    \
    "for every process that inherits it)\n"

/* @p exited 64 with @want as its only output. */
static void expect_refused(const struct tcli_proc *p, const char *want)
{
    cr_assert(eq(int, p->status, 64), "exit %d: %s", p->status, p->err);
    cr_assert(eq(str, p->err, (char *)want));
    cr_assert(eq(str, p->out, ""));
}

/* Any value, even "no", and even beside the flag on argv: the variable
 * is not an input any more, and saying so beats ignoring it. */
Test(guard_off, the_environment_cannot_turn_the_guard_off)
{
    static const char *const values[] = { "yes", "1", "no" };
    struct tcli_proc p;

    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char var[64];
        const char *env[] = { var, NULL };

        snprintf(var, sizeof(var), "REDLOCK_NO_RESTART_GUARD=%s", values[i]);
        tcli_run_env(&p, env, "ping", "--samples", "1", (const char *)NULL);
        expect_refused(&p, REFUSED_IN_ENV);
        tcli_free(&p);
    }
    {
        const char *env[] = { "REDLOCK_NO_RESTART_GUARD=yes", NULL };

        tcli_run_env(&p, env, "ping", "--no-restart-guard", (const char *)NULL);
        expect_refused(&p, REFUSED_IN_ENV);
        tcli_free(&p);
    }
}

/* --config FILE and the default file alike; the line is named. */
Test(guard_off, a_config_file_cannot_turn_the_guard_off)
{
    char conf[TCLI_SCRATCH_MAX + 32], dflt[TCLI_SCRATCH_MAX + 48], xdg_env[TCLI_SCRATCH_MAX + 32],
        want[4 * TCLI_SCRATCH_MAX];
    const char *rest = "--no-restart-guard must be given on the command line, not in a config "
                       "file: delete the line (it would turn the memory guard off for every "
                       "command that reads the file)";
    struct tcli_proc p;

    snprintf(conf, sizeof(conf), "%s/guard.conf", tcli_tmpdir);
    tcli_put_file(conf, "prefix = guard:\nno-restart-guard = yes\n");
    snprintf(want, sizeof(want), "redlock-cli: %s:2: %s\n", conf, rest);
    tcli_run(&p, "ping", "--config", conf);
    expect_refused(&p, want);
    tcli_free(&p);
    tcli_run(&p, "ping", "--config", conf, "--no-restart-guard");
    expect_refused(&p, want);
    tcli_free(&p);

    tcli_default_conf(dflt, sizeof(dflt), xdg_env, sizeof(xdg_env));
    tcli_put_file(dflt, "no-restart-guard = no\n");
    snprintf(want, sizeof(want), "redlock-cli: %s:1: %s\n", dflt, rest);
    {
        const char *env[] = { xdg_env, NULL };

        tcli_run_env(&p, env, "ping", (const char *)NULL);
        expect_refused(&p, want);
        tcli_free(&p);
    }
}

/* Every command given the flag says so first, with or without -v, and
 * with -q too (a script that passes both still leaves the line in its
 * log); a command without it does not. */
Test(guard_off, every_use_is_warned_about_on_stderr)
{
    struct tcli_proc p;
    char res[128], token[33];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--ttl", "10s", "--no-restart-guard"), 0),
              "stderr: %s", p.err);
    cr_assert(eq(str, p.err, TCLI_GUARD_OFF_WARNING));
    cr_assert(tcli_is_token(p.out), "%s", p.out);
    tcli_take_token(p.out, token);
    tcli_free(&p);

    cr_assert(eq(int, tcli_run(&p, "-v", "status", res, "--no-restart-guard"), 0), "stderr: %s",
              p.err);
    tcli_take_guard_warning(&p);
    cr_assert(strstr(p.err, "--no-restart-guard") == NULL, "said twice: %s", p.err);
    tcli_free(&p);

    cr_assert(eq(int, tcli_run(&p, "ping", "--samples", "1", "--no-restart-guard"), 0),
              "stderr: %s", p.err);
    cr_assert(eq(str, p.err, TCLI_GUARD_OFF_WARNING));
    cr_assert(strstr(p.out, "memory guard off") != NULL, "%s", p.out);
    tcli_free(&p);

    cr_assert(eq(int, tcli_run(&p, "status", res), 0), "stderr: %s", p.err);
    cr_assert(eq(str, p.err, ""));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "-q", "status", res, "--no-restart-guard"), 0));
    cr_assert(eq(str, p.err, TCLI_GUARD_OFF_WARNING));
    tcli_free(&p);

    cr_assert(eq(int, tcli_run(&p, "unlock", res, token, "--no-restart-guard"), 0), "stderr: %s",
              p.err);
    cr_assert(eq(str, p.err, TCLI_GUARD_OFF_WARNING));
    tcli_free(&p);
}

/* run hands CMD every setting it resolved, and handed it this one too:
 * CMD's environment has no REDLOCK_NO_RESTART_GUARD now, and a
 * redlock-cli inside CMD runs with the guard on (and says nothing about
 * it). --restart-guard-ms, a setting like the others, still goes. */
Test(guard_off, run_never_hands_it_to_cmd)
{
    struct tcli_proc p;
    char res[128];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "run", res, "--no-restart-guard", "--", "env"), 0), "stderr: %s",
              p.err);
    cr_assert(strstr(p.out, "REDLOCK_TOKEN=") != NULL, "not CMD's environment: %s", p.out);
    cr_assert(strstr(p.out, "NO_RESTART_GUARD") == NULL, "%s", p.out);
    cr_assert(eq(str, p.err, TCLI_GUARD_OFF_WARNING));
    tcli_free(&p);

    cr_assert(eq(int,
                 tcli_run(&p, "run", res, "--no-restart-guard", "--", "sh", "-c",
                          "exec \"$REDLOCK_CLI\" ping --samples 1 --json"),
                 0),
              "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jbool(p.out, "restart_guard"), "%s", p.out);
    cr_assert(eq(str, p.err, TCLI_GUARD_OFF_WARNING), "the inner one warned too");
    tcli_free(&p);

    cr_assert(eq(int, tcli_run(&p, "run", res, "--restart-guard-ms", "5s", "--", "env"), 0),
              "stderr: %s", p.err);
    cr_assert(strstr(p.out, "\nREDLOCK_RESTART_GUARD_MS=5s\n") != NULL, "%s", p.out);
    cr_assert(strstr(p.out, "NO_RESTART_GUARD") == NULL, "%s", p.out);
    tcli_free(&p);
}

/* The guard's window is a setting like the others: argv, the environment
 * and a config file still give it (short ones: the shared masters must
 * keep counting for the tests beside this one). */
Test(guard_off, the_window_still_comes_from_every_source)
{
    char conf[TCLI_SCRATCH_MAX + 32];
    const char *env[] = { "REDLOCK_RESTART_GUARD_MS=250ms", NULL };
    struct tcli_proc p;

    snprintf(conf, sizeof(conf), "%s/window.conf", tcli_tmpdir);
    tcli_put_file(conf, "restart-guard-ms = 300ms\n");
    cr_assert(
        eq(int, tcli_run(&p, "ping", "--samples", "1", "--json", "--restart-guard-ms", "200ms"), 0),
        "stderr: %s", p.err);
    cr_assert(eq(i64, tcli_jint(p.out, "restart_guard_ms"), 200));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run_env(&p, env, "ping", "--samples", "1", "--json", (const char *)NULL),
                 0),
              "stderr: %s", p.err);
    cr_assert(eq(i64, tcli_jint(p.out, "restart_guard_ms"), 250));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "ping", "--samples", "1", "--json", "--config", conf), 0),
              "stderr: %s", p.err);
    cr_assert(eq(i64, tcli_jint(p.out, "restart_guard_ms"), 300));
    cr_assert(tcli_jbool(p.out, "restart_guard"));
    tcli_free(&p);
}
