/* test-cli-url.c - redlock-cli with masters written as URLs that carry passwords.
 *
 * The CLI refuses a password on its command line (ps(1) shows argv to
 * everyone), so a URL with a password must come from $REDLOCK_MASTERS (or
 * a file); from there it works, and the password shows nowhere: not on
 * stdout or stderr, not in --json, not in the command line of any process.
 * The masters are the cluster's, with an ACL user per test made here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "cli.h"
#include "cluster.h"

#define SECRET "Cli-S3cret"

TestSuite(cli_url, .init = tcli_setup, .fini = tcli_teardown, .timeout = 60);

static void expect_no_secret(const struct tcli_proc *p)
{
    cr_expect(zero(ptr, strstr(p->out, SECRET)), "the password shows on stdout: %s", p->out);
    cr_expect(zero(ptr, strstr(p->err, SECRET)), "the password shows on stderr: %s", p->err);
}

/* REDLOCK_MASTERS=... with an ACL user on every master, its password in
 * each URL; the user name into @user. */
static void masters_env(char *env, size_t size, char *user, size_t usize)
{
    snprintf(user, usize, "cli-%ld", (long)getpid());
    size_t used = (size_t)snprintf(env, size, "REDLOCK_MASTERS=");
    for (int i = 0; i < tc_n(); i++) {
        redisReply *r = tc_cmd(i, "ACL SETUSER %s reset on >%s ~* &* +@all", user, SECRET);
        cr_assert(not(zero(ptr, r)));
        freeReplyObject(r);
        used += (size_t)snprintf(env + used, size - used, "%sredis://%s:%s@%s", i ? "," : "", user,
                                 SECRET, tc_addr(i));
    }
}

Test(cli_url, a_password_in_argv_is_refused_without_echoing_it)
{
    struct tcli_proc p;
    char masters[128], res[128];
    snprintf(masters, sizeof(masters), "redis://u:%s@%s", SECRET, tc_addr(0));
    tc_resource(res, sizeof(res), NULL);
    int rc = tcli_run(&p, "--masters", masters, "lock", res);
    cr_expect(eq(int, rc, 64), "status %d: %s", rc, p.err);
    cr_expect(eq(sz, tcli_count_lines(p.err), 1), "%s", p.err);
    cr_expect(not(zero(ptr, strstr(p.err, "REDLOCK_MASTERS"))), "no way out named: %s", p.err);
    expect_no_secret(&p);
    tcli_free(&p);
}

Test(cli_url, passwords_from_the_environment_work_and_never_show)
{
    struct tcli_proc p;
    char env[1024], user[64], res[128], token[64];
    masters_env(env, sizeof(env), user, sizeof(user));
    const char *envs[] = { env, NULL };
    tc_resource(res, sizeof(res), NULL);

    int rc = tcli_run_env(&p, envs, "lock", res, "--ttl", "20000ms", "--json", (const char *)NULL);
    cr_assert(eq(int, rc, 0), "status %d: %s", rc, p.err);
    expect_no_secret(&p);
    cr_expect(not(zero(ptr, strstr(p.out, user))), "masters not named in the JSON: %s", p.out);
    char *t = strstr(p.out, "\"token\":\"");
    cr_assert(not(zero(ptr, t)), "%s", p.out);
    snprintf(token, 33, "%s", t + 9);
    tcli_free(&p);
    /* lock exits at quorum: the other masters' SETs may still be running. */
    cr_expect(TC_AWAIT(tcli_holders(res, token) == tc_n(), 5000), "held on %d of %d masters",
              tcli_holders(res, token), tc_n());

    rc = tcli_run_env(&p, envs, "status", res, "--json", (const char *)NULL);
    cr_expect(eq(int, rc, 0), "status %d: %s", rc, p.err);
    expect_no_secret(&p);
    tcli_free(&p);
    rc = tcli_run_env(&p, envs, "unlock", res, token, "-v", (const char *)NULL);
    cr_expect(eq(int, rc, 0), "status %d: %s", rc, p.err);
    expect_no_secret(&p);
    tcli_free(&p);
}

Test(cli_url, a_wrong_password_from_the_environment_never_shows)
{
    struct tcli_proc p;
    char env[1024], user[64], res[128];
    masters_env(env, sizeof(env), user, sizeof(user));
    /* Every URL's password, one character off. */
    for (char *s = env; (s = strstr(s, SECRET)); s += strlen(SECRET))
        s[0] = 'X';
    const char *envs[] = { env, NULL };
    tc_resource(res, sizeof(res), NULL);
    int rc = tcli_run_env(&p, envs, "lock", res, "--json", "-v", (const char *)NULL);
    cr_expect(ne(int, rc, 0));
    cr_expect(not(zero(ptr, strstr(p.out, "EAUTH"))), "%s", p.out);
    cr_expect(zero(ptr, strstr(p.out, "Xli-S3cret")), "the password shows: %s", p.out);
    cr_expect(zero(ptr, strstr(p.err, "Xli-S3cret")), "the password shows: %s", p.err);
    tcli_free(&p);
}

Test(cli_url, no_command_line_holds_the_password)
{
    struct tcli_proc p;
    char env[1024], user[64], res[128], cmd[700];
    masters_env(env, sizeof(env), user, sizeof(user));
    const char *envs[] = { env, NULL };
    tc_resource(res, sizeof(res), NULL);
    /* CMD copies its parent's (redlock-cli's) command line while the lock
     * is held. */
    snprintf(cmd, sizeof(cmd), "tr '\\0' ' ' < /proc/$PPID/cmdline > %s/cmdline", tcli_tmpdir);
    int rc = tcli_run_env(&p, envs, "run", res, "--", "sh", "-c", cmd, (const char *)NULL);
    cr_assert(eq(int, rc, 0), "status %d: %s", rc, p.err);
    expect_no_secret(&p);
    tcli_free(&p);
    char path[TCLI_SCRATCH_MAX + 16];
    snprintf(path, sizeof(path), "%s/cmdline", tcli_tmpdir);
    char *line = tcli_slurp(path);
    cr_expect(not(zero(ptr, strstr(line, "run"))), "not redlock-cli's: %s", line);
    cr_expect(zero(ptr, strstr(line, SECRET)), "the password shows in ps: %s", line);
    free(line);
}
