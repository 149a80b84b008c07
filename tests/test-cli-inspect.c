/* test-cli-inspect.c - redlock-cli status and ping, and what every command
 * says about the masters: 69 when a quorum is out of reach (each failing
 * master named), 68 for a host that does not resolve, the clock monitor and
 * the memory guard, masters from the environment.
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
#include "servers.h"

TestSuite(inspect, .init = tcli_setup, .fini = tcli_teardown, .timeout = 60);

Test(inspect, status_and_ping_show_every_master)
{
    struct tcli_proc p;
    char res[128], token[64];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "status", res), 0));
    for (int i = 0; i < tc_n(); i++)
        cr_assert(strstr(p.out, tc_addr(i)) != NULL, "no line for %s: %s", tc_addr(i), p.out);
    cr_assert(strstr(p.out, "free") != NULL);
    tcli_free(&p);

    cr_assert(eq(int, tcli_run(&p, "lock", res), 0));
    memcpy(token, p.out, 32);
    token[32] = '\0';
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "status", res), 0));
    cr_assert(strstr(p.out, token) != NULL);
    cr_assert(strstr(p.out, "on a majority") != NULL, "%s", p.out);
    tcli_free(&p);

    cr_assert(eq(int, tcli_run(&p, "ping"), 0), "stderr: %s", p.err);
    cr_assert(eq(int, tcli_count_lines(p.out), (size_t)tc_n() + 2), "%s", p.out);
    for (int i = 0; i < tc_n(); i++)
        cr_assert(strstr(p.out, tc_addr(i)) != NULL);
    tcli_free(&p);
}

Test(inspect, ping_json_reports_clocks_run_ids_and_exclusions)
{
    struct tcli_proc p;
    char buf[128];
    uint64_t t0 = tc_now_us();

    /* Default --samples 5: five pings 100 ms apart, the client probing
     * every master's TIME at that interval meanwhile: rates are known. */
    cr_assert(eq(int, tcli_run(&p, "ping", "--json"), 0), "stderr: %s", p.err);
    cr_assert(tc_ms_since(t0) >= 350, "5 samples took only %llu ms",
              (unsigned long long)tc_ms_since(t0));
    cr_assert(eq(str, p.err, ""), "a healthy cluster gives no warning: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jint(p.out, "pings") >= 5);
    cr_assert(eq(str, tcli_jstr(p.out, "clock_policy", buf, sizeof(buf)), "warn"));
    cr_assert(tcli_jbool(p.out, "restart_guard"));
    cr_assert(eq(int, tcli_jint(p.out, "restart_guard_ms"), 0));
    cr_assert(eq(int, tcli_jint(p.out, "counting"), tc_n()));
    cr_assert(eq(int, tcli_jint(p.out, "excluded"), 0));
    for (int i = 0; i < tc_n(); i++) {
        const char *m = tcli_jindex(tcli_jreq(p.out, "masters"), i);
        double lo, hi;

        cr_assert(m != NULL);
        cr_assert(tcli_jbool(m, "reachable"), "masters[%d]", i);
        lo = tcli_jdouble(m, "clock_rate_lo");
        hi = tcli_jdouble(m, "clock_rate_hi");
        /* Same machine, same clock: the true rate is 1, and the interval
         * contains it; latency only widens it. */
        cr_assert(lo >= 0.9 && hi <= 1.1 && lo <= hi, "masters[%d] rate %f..%f", i, lo, hi);
        cr_assert(lo <= 1.001 && hi >= 0.999, "masters[%d] rate %f..%f excludes 1", i, lo, hi);
        cr_assert(tcli_jint(m, "clock_samples") >= 2, "masters[%d]", i);
        cr_assert(eq(int, tcli_jint(m, "clock_jumps"), 0));
        cr_assert(eq(int, tcli_jint(m, "clock_rate_faults"), 0));
        cr_assert(tcli_jbool(m, "clock_trusted"), "masters[%d]", i);
        cr_assert(tcli_is_hex40(tcli_jstr(m, "run_id", buf, sizeof(buf))), "run_id '%s'", buf);
        cr_assert(tcli_jint(m, "uptime_s") >= 0);
        cr_assert(tcli_yes(!tcli_jbool(m, "aof_always")), "with-cluster.sh masters have no AOF");
        cr_assert(tcli_yes(!tcli_jbool(m, "excluded")), "masters[%d]", i);
        cr_assert(tcli_jnull(m, "excluded_why"));
        tcli_jint(m, "clock_offset_us");
    }
    tcli_free(&p);

    /* One sample: quick, and the rates are not known yet (null). The run_id
     * comes from the handshake, so it is there at once. */
    cr_assert(eq(int, tcli_run(&p, "ping", "--samples", "1", "--no-restart-guard", "--json"), 0));
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(int, tcli_jint(p.out, "pings"), 1));
    cr_assert(tcli_yes(!tcli_jbool(p.out, "restart_guard")));
    {
        const char *m = tcli_jindex(tcli_jreq(p.out, "masters"), 0);

        cr_assert(tcli_jnull(m, "clock_rate_lo") || tcli_jdouble(m, "clock_rate_lo") > 0);
        cr_assert(tcli_is_hex40(tcli_jstr(m, "run_id", buf, sizeof(buf))), "run_id '%s'", buf);
    }
    tcli_free(&p);

    /* No probes with the monitor off: one ping, nothing sampled. */
    cr_assert(eq(int, tcli_run(&p, "ping", "--clock-policy", "off", "--json"), 0));
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(str, tcli_jstr(p.out, "clock_policy", buf, sizeof(buf)), "off"));
    cr_assert(eq(int, tcli_jint(p.out, "pings"), 1));
    cr_assert(eq(int, tcli_jint(tcli_jindex(tcli_jreq(p.out, "masters"), 0), "clock_samples"), 0));
    cr_assert(tcli_jnull(tcli_jindex(tcli_jreq(p.out, "masters"), 0), "clock_rate_hi"));
    tcli_free(&p);

    /* The table: one line per master with the new columns, and a summary. */
    cr_assert(eq(int, tcli_run(&p, "--clock-policy", "exclude", "ping", "--samples", "3"), 0));
    cr_assert(eq(int, tcli_count_lines(p.out), (size_t)tc_n() + 2), "%s", p.out);
    cr_assert(strstr(p.out, "CLOCK_RATE") != NULL && strstr(p.out, "RUN_ID") != NULL &&
                  strstr(p.out, "QUORUM") != NULL,
              "%s", p.out);
    cr_assert(strstr(p.out, "trusted") != NULL && strstr(p.out, "counts") != NULL, "%s", p.out);
    cr_assert(strstr(p.out, "clock policy exclude, memory guard on") != NULL, "%s", p.out);
    tcli_free(&p);
}

Test(inspect, memory_guard_excludes_masters_that_lost_their_data)
{
    struct tcli_proc p;
    char res[128], buf[160], priv[128];
    static const char marker[] = "\0redlock:marker";
    int excluded = 0;

    /* Three private masters that forgot everything since they were
     * declared empty (their memory markers gone, as after a restart
     * without persistence): none may vote inside the window, so the lock
     * fails as "no quorum" (69), and says why. */
    tc_resource(res, sizeof(res), NULL);
    tcli_private_start(3, 5, NULL, priv, sizeof(priv));
    for (int i = 0; i < 3; i++)
        freeReplyObject(tcli_private_cmd(i, "DEL %b", marker, sizeof(marker) - 1));
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--masters", priv, "--restart-guard-ms", "1h"), 69),
              "stderr: %s", p.err);
    cr_assert(eq(str, p.out, ""));
    cr_assert(strstr(p.err, "memory marker") != NULL, "stderr: %s", p.err);
    tcli_free(&p);

    cr_assert(eq(int,
                 tcli_run(&p, "lock", res, "--masters", priv, "--restart-guard-ms", "1h", "--json"),
                 69));
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(str, tcli_jstr(tcli_jreq(p.out, "error"), "code", buf, sizeof(buf)), "ENOQUORUM"));
    cr_assert(tcli_jnull(p.out, "token"));
    for (int i = 0; i < 3; i++) {
        const char *m = tcli_jindex(tcli_jreq(p.out, "masters"), i);

        tcli_jstr(m, "vote", buf, sizeof(buf));
        cr_assert(strcmp(buf, "ok") != 0, "masters[%d] voted ok inside the guard window", i);
        if (strcmp(buf, "excluded") == 0) {
            excluded++;
            cr_assert(eq(str, tcli_jstr(m, "error", buf, sizeof(buf)), "EUNTRUSTED"));
            cr_assert(strstr(tcli_jstr(m, "detail", buf, sizeof(buf)), "memory marker") != NULL,
                      "detail: %s", buf);
        }
    }
    /* Decided as soon as a quorum was impossible: at least N - quorum + 1. */
    cr_assert(excluded >= 2, "%d excluded: %s", excluded, p.out);
    tcli_free(&p);

    /* ping shows every master excluded, and warns that no quorum can form;
     * it still exits 0: every master answered. */
    cr_assert(eq(int,
                 tcli_run(&p, "ping", "--masters", priv, "--samples", "1", "--restart-guard-ms",
                          "1h", "--json"),
                 0),
              "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(int, tcli_jint(p.out, "counting"), 0));
    cr_assert(eq(int, tcli_jint(p.out, "excluded"), 3));
    cr_assert(eq(int, tcli_jint(p.out, "restart_guard_ms"), 3600000));
    {
        const char *m = tcli_jindex(tcli_jreq(p.out, "masters"), 0);

        cr_assert(tcli_jbool(m, "excluded"));
        cr_assert(strstr(tcli_jstr(m, "excluded_why", buf, sizeof(buf)), "memory marker") != NULL,
                  "%s", buf);
    }
    cr_assert(strstr(p.err, "count toward a quorum") != NULL, "stderr: %s", p.err);
    tcli_free(&p);
    /* The table says why, until when, and what would change it: once a ping
     * comes half a second after the masters were reborn (a settle measures
     * only then: docs/memory-guard.md, "How long a reborn master sits out"),
     * it settles them, and says so. */
    int settled = TC_AWAIT(({
                               tcli_free(&p);
                               cr_assert(eq(int,
                                            tcli_run(&p, "ping", "--masters", priv, "--samples",
                                                     "1", "--restart-guard-ms", "1h"),
                                            0),
                                         "stderr: %s", p.err);
                               strstr(p.out, "counts at 3600.0 s") != NULL;
                           }),
                           5000);
    cr_assert(settled, "%s", p.out);
    cr_assert(strstr(p.out, "`readmit`") != NULL && strstr(p.out, "`declare-empty`") != NULL, "%s",
              p.out);
    tcli_free(&p);

    /* run is refused the same way, before CMD starts. */
    cr_assert(eq(int, tcli_run(&p, "run", res, "--masters", priv, "--", "sh", "-c", "echo ran"),
                 69),
              "stderr: %s", p.err);
    cr_assert(strstr(p.out, "ran") == NULL);
    tcli_free(&p);

    /* It is the guard: without it the same lock is granted. */
    cr_assert(eq(int,
                 tcli_run(&p, "lock", res, "--masters", priv, "--no-restart-guard", "--ttl",
                          "5000ms"),
                 0),
              "stderr: %s", p.err);
    cr_assert(tcli_is_token(p.out));
    tcli_free(&p);
}

Test(inspect, ping_shows_a_fast_clock_untrusted_and_exclude_excludes_it, .timeout = 60)
{
    struct tcli_proc p;
    char priv[64], masters[256], clockfile[TCLI_SCRATCH_MAX + 16], buf[160];
    const char *shim = tcli_clockshim_path();
    const char *restart0[] = { "restart", "0", NULL };
    FILE *f;

    if (shim == NULL)
        cr_skip_test("tests/clockshim.so is not built (ninja builds it by default)");
    /* A private master (on the slot's last spare port: +5..+8 are other
     * tests') restarted with its clock at x1.2: 20 ms gained per 100 ms
     * probe, under the 25 ms that would count as a jump, so the monitor
     * reports a rate fault. Two shared masters complete the three: ping
     * only reads their TIME. */
    tcli_private_start(1, 9, NULL, priv, sizeof(priv));
    snprintf(masters, sizeof(masters), "%s,%s,%s", priv, tc_addr(0), tc_addr(1));
    snprintf(clockfile, sizeof(clockfile), "%s/clock-0", tcli_tmpdir);
    f = fopen(clockfile, "w");
    cr_assert(f != NULL);
    fputs("1.2 0\n", f);
    fclose(f);
    tcli_private_kill(0);
    setenv("LD_PRELOAD", shim, 1);
    setenv("CLOCKSHIM_FILE", clockfile, 1);
    cr_assert(eq(int, tcli_private_cluster(restart0), 0));
    unsetenv("LD_PRELOAD");
    unsetenv("CLOCKSHIM_FILE");

    /* warn (default): flagged and warned about, still counted. (The
     * restarted master lost its memory marker: the memory guard, which
     * would exclude it too, is off for what this test is about.) */
    cr_assert(eq(int, tcli_run(&p, "ping", "--json", "--no-restart-guard", "--masters", masters),
                 0),
              "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    {
        const char *m0 = tcli_jindex(tcli_jreq(p.out, "masters"), 0);
        const char *m1 = tcli_jindex(tcli_jreq(p.out, "masters"), 1);

        cr_assert(tcli_jdouble(m0, "clock_rate_lo") > 1.01 &&
                      tcli_jdouble(m0, "clock_rate_hi") < 1.5,
                  "%s", m0);
        cr_assert(tcli_jint(m0, "clock_rate_faults") >= 1);
        cr_assert(tcli_yes(!tcli_jbool(m0, "clock_trusted")));
        cr_assert(tcli_yes(!tcli_jbool(m0, "excluded")));
        cr_assert(tcli_jbool(m1, "clock_trusted"));
        /* The same clock as ours: its interval holds 1 (how wide it is
         * depends on round trips, which load stretches). */
        cr_assert(tcli_jdouble(m1, "clock_rate_lo") <= 1.0 &&
                      tcli_jdouble(m1, "clock_rate_hi") >= 1.0,
                  "%s", m1);
    }
    cr_assert(eq(int, tcli_jint(p.out, "counting"), 3));
    /* The event hook: one warning line per event (a jump, if the shim's
     * clock stepped between two probes, is reported instead of the rate). */
    cr_assert(strstr(p.err, "redlock-cli: warning: master 0 (127.0.0.1:") != NULL &&
                  (strstr(p.err, "clock runs at") != NULL || strstr(p.err, "clock jumped") != NULL),
              "stderr: %s", p.err);
    tcli_free(&p);

    /* exclude: the same master does not count toward a quorum. */
    cr_assert(eq(int,
                 tcli_run(&p, "ping", "--json", "--no-restart-guard", "--clock-policy", "exclude",
                          "--masters", masters),
                 0),
              "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    {
        const char *m0 = tcli_jindex(tcli_jreq(p.out, "masters"), 0);

        cr_assert(tcli_jbool(m0, "excluded"));
        cr_assert(strstr(tcli_jstr(m0, "excluded_why", buf, sizeof(buf)), "clock") != NULL, "%s",
                  buf);
        cr_assert(tcli_yes(!tcli_jbool(tcli_jindex(tcli_jreq(p.out, "masters"), 2), "excluded")));
    }
    cr_assert(eq(int, tcli_jint(p.out, "counting"), 2));
    tcli_free(&p);

    /* -q silences the clock's warning (not the guard's); off takes no
     * samples at all. */
    cr_assert(eq(int,
                 tcli_run(&p, "-q", "ping", "--no-restart-guard", "--clock-policy", "off",
                          "--masters", masters),
                 0));
    cr_assert(eq(str, p.err, TCLI_GUARD_OFF_WARNING));
    cr_assert(strstr(p.out, "untrusted") == NULL, "%s", p.out);
    tcli_free(&p);
}

/* ping's last column is why a master sits out, printed whole: the
 * library's own reasons fit its 96-byte field instead of losing their end
 * (the longest eviction policy beside the largest limit Redis takes, read
 * back as 2^63 - 1, used to lose the ")"). The master is a unix socket of
 * the test's own: no port of the slot is free. */
Test(inspect, ping_prints_the_whole_reason_a_master_sits_out)
{
    struct tcli_proc p;
    char path[600], masters[800];

    snprintf(path, sizeof(path), "%s/evicting.sock", tc_scratch_dir());
    const char *args[] = { "--port",
                           "0",
                           "--unixsocket",
                           path,
                           "--unixsocketperm",
                           "700",
                           "--maxmemory-policy",
                           "volatile-random",
                           "--maxmemory",
                           "18446744073709551615",
                           NULL };
    tc_redis *s = tc_redis_start(args);

    snprintf(masters, sizeof(masters), "unix://%s,%s,%s", path, tc_addr(0), tc_addr(1));
    cr_assert(eq(int, tcli_run(&p, "ping", "--masters", masters, "--samples", "1"), 0),
              "stderr: %s", p.err);
    cr_assert(strstr(p.out, "  maxmemory-policy volatile-random may evict locks "
                            "(set noeviction)\n") != NULL,
              "%s", p.out);
    tcli_free(&p);
    tc_redis_stop(s);
}

Test(inspect, no_quorum_exits_69_naming_each_master)
{
    struct tcli_proc p;
    char dead[256], masters[512], res[128];
    const char *cmds[][4] = {
        { "lock", res, NULL },
        { "status", res, NULL },
        { "ping", NULL },
        { "unlock", res, "0123456789abcdef0123456789abcdef", NULL },
    };

    tc_resource(res, sizeof(res), NULL);
    /* 2 live masters and 3 dead ones: no majority of 5. */
    tcli_dead_masters(dead, sizeof(dead), 3);
    snprintf(masters, sizeof(masters), "%s,%s,%s", tc_addr(0), tc_addr(1), dead);
    for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
        const char *args[8];
        size_t k = 0;
        char first_dead[64];

        for (size_t i = 0; cmds[c][i] != NULL; i++)
            args[k++] = cmds[c][i];
        args[k++] = "--masters";
        args[k++] = masters;
        args[k] = NULL;
        tcli_start(&p, args, NULL);
        cr_assert(eq(int, tcli_wait(&p), 69), "%s: stderr: %s", cmds[c][0], p.err);
        snprintf(first_dead, sizeof(first_dead), "%.*s: connection refused",
                 (int)strcspn(dead, ","), dead);
        cr_assert(strstr(p.err, first_dead) != NULL, "%s: no '%s' line in: %s", cmds[c][0],
                  first_dead, p.err);
        tcli_free(&p);
    }
}

Test(inspect, lock_succeeds_with_a_minority_down_and_warns)
{
    struct tcli_proc p;
    char dead[256], masters[512], res[128];

    tc_resource(res, sizeof(res), NULL);
    tcli_dead_masters(dead, sizeof(dead), 2);
    snprintf(masters, sizeof(masters), "%s,%s,%s,%s", tc_addr(0), tc_addr(1), tc_addr(2), dead);
    /* 5 masters, 3 up: a quorum; the 2 down ones are named on stderr. */
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--masters", masters), 0), "stderr: %s", p.err);
    cr_assert(tcli_is_token(p.out));
    /* The quorum may be decided before the refusals are seen: at most one
     * warning per dead master, each naming it. */
    cr_assert(tcli_count_lines(p.err) <= 2, "stderr: %s", p.err);
    for (const char *l = p.err; *l; l = strchr(l, '\n') + 1)
        cr_assert(strncmp(l, "redlock-cli: warning: 127.0.0.1:", 32) == 0, "stderr: %s", p.err);
    tcli_free(&p);
}

Test(inspect, unknown_master_host_exits_68)
{
    struct tcli_proc p;

    cr_assert(eq(int, tcli_run(&p, "ping", "--masters", "no-such-host.invalid:7000"), 68),
              "stderr: %s", p.err);
    cr_assert(eq(int, tcli_count_lines(p.err), 1));
    cr_assert(strstr(p.err, "no-such-host.invalid") != NULL);
    tcli_free(&p);
}

Test(inspect, masters_come_from_the_environment)
{
    struct tcli_proc p;
    char env_masters[600], dead[256];
    const char *env[] = { env_masters, NULL };

    /* Dead masters in $REDLOCK_MASTERS: ping uses them (69), and
     * --masters wins over the environment (0). */
    tcli_dead_masters(dead, sizeof(dead), 3);
    snprintf(env_masters, sizeof(env_masters), "REDLOCK_MASTERS=%s", dead);
    cr_assert(eq(int, tcli_run_env(&p, env, "ping", (const char *)NULL), 69));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run_env(&p, env, "ping", "--masters", tc_masters(), (const char *)NULL),
                 0));
    tcli_free(&p);
}

Test(inspect, declare_empty_lets_new_masters_vote_at_once_and_refuses_masters_with_keys)
{
    struct tcli_proc p;
    char res[128], priv[64];
    static const char marker[] = "\0redlock:marker";

    /* A new master without its marker (as a deployment's, before anyone
     * declared it): the memory guard keeps it out. */
    tc_resource(res, sizeof(res), NULL);
    tcli_private_start(1, 8, NULL, priv, sizeof(priv));
    freeReplyObject(tcli_private_cmd(0, "DEL %b", marker, sizeof(marker) - 1));
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--masters", priv, "--ttl", "1h"), 69),
              "stderr: %s", p.err);
    tcli_free(&p);
    /* That acquire marked it, and it is still new and empty: declare-empty
     * works (the dead end it used to be: "0 of 1 declared", then a wait). */
    cr_assert(eq(int, tcli_run(&p, "declare-empty", "--masters", priv, "--json"), 0), "stderr: %s",
              p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(int, tcli_jint(p.out, "declared"), 1), "%s", p.out);
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--masters", priv, "--ttl", "1h"), 0), "stderr: %s",
              p.err);
    cr_assert(tcli_is_token(p.out));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "declare-empty", "--masters", priv), 0), "stderr: %s", p.err);
    cr_assert(strstr(p.out, "0 of 1 masters declared empty (the others counted already)") != NULL,
              "%s", p.out);
    tcli_free(&p);

    /* A master that lost its marker but holds keys is not new: refused,
     * one line, a non-zero exit; the lock key is still there. */
    freeReplyObject(tcli_private_cmd(0, "DEL %b", marker, sizeof(marker) - 1));
    cr_assert(eq(int, tcli_run(&p, "declare-empty", "--masters", priv), 64), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "holds 1 keys, so it is not new") != NULL, "%s", p.err);
    cr_assert(eq(int, (int)(strchr(p.err, '\n') - p.err + 1), (int)strlen(p.err)), "one line: %s",
              p.err);
    tcli_free(&p);
    /* The operator checked: readmit. */
    cr_assert(eq(int, tcli_run(&p, "readmit", "--masters", priv), 0), "stderr: %s", p.err);
    cr_assert(strstr(p.out, "1 of 1 masters readmitted") != NULL, "%s", p.out);
    tcli_free(&p);
}
