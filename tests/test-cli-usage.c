/* test-cli-usage.c - redlock-cli's command line and setup: every bad input
 * is exit 64 and one line, a missing setup (no masters) is 78, refused
 * credentials 77, password files and pipes that never block, --help on one
 * screen, and the man page rendered without a warning.
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
#include <criterion/parameterized.h>

#include <redlock.h>

#include "cli.h"
#include "cluster.h"
#include "jsonread.h"

TestSuite(usage, .init = tcli_setup, .fini = tcli_teardown, .timeout = 30);

#define LONG_256                                                                                                                       \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
#define SEVENTEEN_MASTERS \
    "h:1,h:2,h:3,h:4,h:5,h:6,h:7,h:8,h:9,h:10,h:11,h:12,h:13,h:14,h:15,h:16,h:17"

struct bad_input {
    const char *why;
    const char *args[12];
    const char *env; /* one "NAME=value", or NULL */
};

static const char resource_1025[] = LONG_256 LONG_256 LONG_256 LONG_256 "y";

static struct bad_input bad_inputs[] = {
    { "no command", { NULL }, NULL },
    { "unknown command", { "lok", "r", NULL }, NULL },
    { "unknown option", { "lock", "r", "--bogus", NULL }, NULL },
    { "unknown short option", { "lock", "r", "-x", NULL }, NULL },
    { "missing resource", { "lock", NULL }, NULL },
    { "empty resource", { "lock", "", NULL }, NULL },
    { "resource too long", { "lock", resource_1025, NULL }, NULL },
    { "extra argument", { "status", "r", "s", NULL }, NULL },
    { "a resource twice in a set", { "lock", "a", "b", "a", NULL }, NULL },
    { "a resource twice in an unlock", { "unlock", "a", "a", "tok", NULL }, NULL },
    { "an empty member of a set", { "lock", "a", "", NULL }, NULL },
    { "run: a set member with a newline", { "run", "a", "b\nc", "--", "true", NULL }, NULL },
    { "run: a set without --", { "run", "a", "b", "true", NULL }, NULL },
    { "fence on unlock", { "unlock", "r", "tok", "--fence", NULL }, NULL },
    { "fence with a value", { "lock", "r", "--fence=1", NULL }, NULL },
    { "no-pubsub on status", { "status", "r", "--no-pubsub", NULL }, NULL },
    { "max-extends zero", { "run", "r", "--max-extends", "0", "--", "true", NULL }, NULL },
    { "max-extends beyond 32 bits",
      { "run", "r", "--max-extends", "4294967296", "--", "true", NULL },
      NULL },
    { "max-lease garbage", { "run", "r", "--max-lease", "1y", "--", "true", NULL }, NULL },
    { "max-lease on lock", { "lock", "r", "--max-lease", "1000ms", NULL }, NULL },
    { "max-extends on extend",
      { "extend", "r", "tok", "--ttl", "100ms", "--max-extends", "3", NULL },
      NULL },
    { "ping takes no argument", { "ping", "r", NULL }, NULL },
    { "declare-empty takes no argument", { "declare-empty", "r", NULL }, NULL },
    { "ttl on declare-empty", { "declare-empty", "--ttl", "1s", NULL }, NULL },
    { "ttl zero", { "lock", "r", "--ttl", "0ms", NULL }, NULL },
    { "ttl negative", { "lock", "r", "--ttl", "-5", NULL }, NULL },
    { "ttl not a number", { "lock", "r", "--ttl", "abc", NULL }, NULL },
    { "ttl trailing garbage", { "lock", "r", "--ttl", "100x", NULL }, NULL },
    { "ttl leading space", { "lock", "r", "--ttl", " 100", NULL }, NULL },
    { "ttl plus sign", { "lock", "r", "--ttl=+100", NULL }, NULL },
    { "ttl beyond PX range", { "lock", "r", "--ttl", "2147483648ms", NULL }, NULL },
    { "ttl overflows 64 bits", { "lock", "r", "--ttl", "99999999999999999999999ms", NULL }, NULL },
    { "ttl shorter than the drift margin", { "lock", "r", "--ttl", "3ms", NULL }, NULL },
    { "ttl hex", { "lock", "r", "--ttl", "0x10", NULL }, NULL },
    { "ttl exponent", { "lock", "r", "--ttl", "1e3", NULL }, NULL },
    { "ttl a fraction of a millisecond", { "lock", "r", "--ttl", "0.5ms", NULL }, NULL },
    { "ttl point without digits after", { "lock", "r", "--ttl", "1.", NULL }, NULL },
    { "ttl point without digits before", { "lock", "r", "--ttl", ".5s", NULL }, NULL },
    { "ttl two points", { "lock", "r", "--ttl", "1.2.3", NULL }, NULL },
    { "ttl seconds beyond PX range", { "lock", "r", "--ttl", "2147484", NULL }, NULL },
    { "timeout-ms bare number", { "ping", "--timeout-ms", "50", NULL }, NULL },
    { "restart-guard-ms bare decimal", { "ping", "--restart-guard-ms", "1.5", NULL }, NULL },
    { "ttl without value", { "lock", "r", "--ttl", NULL }, NULL },
    { "ttl on unlock", { "unlock", "r", "tok", "--ttl", "100ms", NULL }, NULL },
    { "wait negative", { "lock", "r", "--wait", "-1", NULL }, NULL },
    { "wait on status", { "status", "r", "--wait", "10ms", NULL }, NULL },
    { "kill-after on lock", { "lock", "r", "--kill-after", "10ms", NULL }, NULL },
    { "flag with a value", { "lock", "r", "--json=yes", NULL }, NULL },
    { "unlock without token", { "unlock", "r", NULL }, NULL },
    { "token with a space", { "unlock", "r", "a b", NULL }, NULL },
    { "extend without ttl", { "extend", "r", "tok", NULL }, NULL },
    { "run without command", { "run", "r", NULL }, NULL },
    { "run with empty command", { "run", "r", "--", NULL }, NULL },
    { "run command without --", { "run", "r", "true", NULL }, NULL },
    { "status without resource", { "status", NULL }, NULL },
    { "timeout zero", { "ping", "--timeout-ms", "0ms", NULL }, NULL },
    { "retry not a number", { "ping", "--retry", "x", NULL }, NULL },
    { "retry-delay zero", { "ping", "--retry-delay", "0ms", NULL }, NULL },
    { "drift factor >= 1", { "ping", "--drift-factor", "1.5", NULL }, NULL },
    { "drift factor garbage", { "ping", "--drift-factor", "0.01x", NULL }, NULL },
    { "drift factor hex float", { "ping", "--drift-factor", "0x1p-7", NULL }, NULL },
    { "drift factor exponent", { "ping", "--drift-factor", "1e-2", NULL }, NULL },
    { "drift factor not a number", { "ping", "--drift-factor", "nan", NULL }, NULL },
    { "prefix too long", { "ping", "--prefix", LONG_256 "z", NULL }, NULL },
    { "empty user", { "ping", "--user", "", NULL }, NULL },
    { "masters empty", { "ping", "--masters", "", NULL }, NULL },
    { "master without port", { "ping", "--masters", "127.0.0.1", NULL }, NULL },
    { "master port zero", { "ping", "--masters", "127.0.0.1:0", NULL }, NULL },
    { "master port too big", { "ping", "--masters", "127.0.0.1:65536", NULL }, NULL },
    { "master port garbage", { "ping", "--masters", "127.0.0.1:7x", NULL }, NULL },
    { "masters trailing comma", { "ping", "--masters", "127.0.0.1:7000,", NULL }, NULL },
    { "master bare IPv6", { "ping", "--masters", "::1:7000", NULL }, NULL },
    { "master bad brackets", { "ping", "--masters", "[::1:7000", NULL }, NULL },
    { "master URL with one slash", { "ping", "--masters", "redis:/127.0.0.1:7000", NULL }, NULL },
    { "duplicate masters", { "ping", "--masters", "127.0.0.1:7000,127.0.0.1:7000", NULL }, NULL },
    { "duplicate masters, other spelling",
      { "ping", "--masters", "h:7000,H:07000,g:1", NULL },
      NULL },
    { "duplicate masters after resolving",
      { "ping", "--masters", "127.0.0.1:7000,localhost:7000,127.0.0.1:7001", NULL },
      NULL },
    { "too many masters", { "ping", "--masters", SEVENTEEN_MASTERS, NULL }, NULL },
    { "bad $REDLOCK_MASTERS", { "ping", NULL }, "REDLOCK_MASTERS=127.0.0.1:x" },
    { "missing password file", { "ping", "--password-file", "/no/such/file", NULL }, NULL },
    { "password file is a directory", { "ping", "--password-file", "/", NULL }, NULL },
    { "password file is /dev/null", { "ping", "--password-file", "/dev/null", NULL }, NULL },
    { "password on the command line", { "ping", "--password", "s3cret", NULL }, NULL },
    { "password on the command line, =", { "ping", "--password=s3cret", NULL }, NULL },
    { "password as -a", { "ping", "-a", "s3cret", NULL }, NULL },
    { "mistyped password option", { "ping", "--pasword=s3cret", NULL }, NULL },
    { "clock policy unknown", { "ping", "--clock-policy", "sometimes", NULL }, NULL },
    { "clock policy empty", { "lock", "r", "--clock-policy=", NULL }, NULL },
    { "clock policy in capitals", { "ping", "--clock-policy", "WARN", NULL }, NULL },
    { "clock policy without value", { "ping", "--clock-policy", NULL }, NULL },
    { "restart guard window negative", { "lock", "r", "--restart-guard-ms", "-1", NULL }, NULL },
    { "restart guard window beyond the ttl range",
      { "lock", "r", "--restart-guard-ms", "2147483648ms", NULL },
      NULL },
    { "restart guard window garbage", { "ping", "--restart-guard-ms", "1 s", NULL }, NULL },
    { "restart guard window and no guard",
      { "lock", "r", "--restart-guard-ms", "1000ms", "--no-restart-guard", NULL },
      NULL },
    { "no-restart-guard with a value", { "ping", "--no-restart-guard=1", NULL }, NULL },
    { "samples zero", { "ping", "--samples", "0", NULL }, NULL },
    { "samples too many", { "ping", "--samples", "1001", NULL }, NULL },
    { "samples on lock", { "lock", "r", "--samples", "3", NULL }, NULL },
    { "ttl with an unknown unit", { "lock", "r", "--ttl", "10sec", NULL }, NULL },
    { "ttl with a decimal comma", { "lock", "r", "--ttl", "1,5s", NULL }, NULL },
    { "ttl with a space before the unit", { "lock", "r", "--ttl", "10 s", NULL }, NULL },
    { "ttl beyond PX range in days", { "lock", "r", "--ttl", "25d", NULL }, NULL },
    { "ttl unit without number", { "lock", "r", "--ttl", "s", NULL }, NULL },
    { "ttl given twice", { "lock", "r", "--ttl", "10s", "--ttl=20s", NULL }, NULL },
    { "masters given twice", { "ping", "--masters", "h:1", "--masters", "h:2", NULL }, NULL },
    { "masters given twice, with a password",
      { "ping", "--masters", "redis://:s3cret@h:1", "--masters", "h:2", NULL },
      NULL },
    { "wait beyond a year", { "lock", "r", "--wait", "366d", NULL }, NULL },
    { "kill-after beyond an hour", { "run", "r", "--kill-after", "2h", "--", "true", NULL }, NULL },
    { "retry-delay in capitals", { "lock", "r", "--retry-delay", "5S", NULL }, NULL },
    { "conflict exit code too big", { "lock", "r", "-E", "256", NULL }, NULL },
    { "conflict exit code negative", { "lock", "r", "--conflict-exit-code", "-1", NULL }, NULL },
    { "conflict exit code garbage", { "run", "r", "-E", "x", "--", "true", NULL }, NULL },
    { "conflict exit code without value", { "lock", "r", "-E", NULL }, NULL },
    { "conflict exit code 0 for lock", { "lock", "r", "-E0", NULL }, NULL },
    { "conflict exit code on unlock", { "unlock", "r", "tok", "-E", "3", NULL }, NULL },
    { "conflict exit code given twice", { "lock", "r", "-E", "3", "-E", "4", NULL }, NULL },
    { "command string empty", { "run", "r", "-c", "", NULL }, NULL },
    { "command string and CMD", { "run", "r", "-c", "true", "--", "true", NULL }, NULL },
    { "command string on lock", { "lock", "r", "-c", "true", NULL }, NULL },
    { "command string without value", { "run", "r", "-c", NULL }, NULL },
    { "signal unknown", { "run", "r", "-s", "FOO", "--", "true", NULL }, NULL },
    { "signal that stops", { "run", "r", "-s", "STOP", "--", "true", NULL }, NULL },
    { "signal that is ignored", { "run", "r", "--signal", "SIGWINCH", "--", "true", NULL }, NULL },
    { "signal zero", { "run", "r", "-s", "0", "--", "true", NULL }, NULL },
    { "signal beyond SIGRTMAX", { "run", "r", "-s", "65", "--", "true", NULL }, NULL },
    { "signal on lock", { "lock", "r", "-s", "TERM", NULL }, NULL },
    { "foreground on lock", { "lock", "r", "--foreground", NULL }, NULL },
    { "password file is a character device",
      { "ping", "--password-file", "/dev/zero", NULL },
      NULL },
    { "a password in --masters",
      { "ping", "--masters", "redis://:s3cret@127.0.0.1:7000", NULL },
      NULL },
    { "a password in --masters, with a user",
      { "lock", "r", "--masters=127.0.0.1:7001,redis://bob:s3cret@127.0.0.1:7000", NULL },
      NULL },
    { "a malformed URL with a password",
      { "ping", NULL },
      "REDLOCK_MASTERS=redis://u:s3cret@127.0.0.1:7x" },
    { "a bad %-escape in a URL's password",
      { "ping", NULL },
      "REDLOCK_MASTERS=redis://u:s3cret%zz@127.0.0.1:7000" },
    { "credentials without a scheme", { "ping", NULL }, "REDLOCK_MASTERS=u:s3cret@127.0.0.1:7000" },
    { "a trailing comma after a password",
      { "ping", NULL },
      "REDLOCK_MASTERS=redis://:s3cret@127.0.0.1:7000," },
    { "master with leading zeros", { "ping", "--masters", "0127.0.0.1:7000", NULL }, NULL },
    { "master: an IPv4 address with a trailing dot",
      { "ping", "--masters", "127.0.0.1.:7000", NULL },
      NULL },
    { "master URL: an IPv4 address with a trailing dot",
      { "ping", NULL },
      "REDLOCK_MASTERS=redis://u:s3cret@127.0.0.1./0" },
    { "insecure without TLS", { "ping", "--insecure", NULL }, NULL },
    { "master with an unknown scheme",
      { "ping", "--masters", "http://127.0.0.1:7000", NULL },
      NULL },
    { "unix socket with a relative path",
      { "ping", "--masters", "unix://redis.sock", NULL },
      NULL },
    { "masters and a masters file",
      { "ping", "--masters", "h:1", "--masters-file", "/dev/null", NULL },
      NULL },
    { "missing masters file", { "ping", "--masters-file", "/no/such/file", NULL }, NULL },
    { "masters file is a character device", { "ping", "--masters-file", "/dev/null", NULL }, NULL },
    { "config file is a directory", { "ping", "--config", "/", NULL }, NULL },
    { "config file is a character device", { "ping", "--config", "/dev/zero", NULL }, NULL },
    { "cacert is a directory", { "ping", "--cacert", "/", NULL }, NULL },
    { "cacertdir is a character device", { "ping", "--cacertdir", "/dev/null", NULL }, NULL },
    { "wait forever misspelt", { "lock", "r", "--wait", "forevr", NULL }, NULL },
    { "wait forever on unlock", { "unlock", "r", "tok", "--wait", "forever", NULL }, NULL },
    { "retry with wait", { "lock", "r", "--retry", "3", "--wait", "1s", NULL }, NULL },
    { "nonblock with wait", { "lock", "r", "-n", "-w", "1", NULL }, NULL },
    { "nonblock with retry",
      { "run", "r", "--nonblock", "--retry", "3", "--", "true", NULL },
      NULL },
    { "nonblock on unlock", { "unlock", "r", "tok", "-n", NULL }, NULL },
    { "short wait garbage", { "lock", "r", "-w", "soon", NULL }, NULL },
    { "short kill-after on lock", { "lock", "r", "-k", "1", NULL }, NULL },
    { "retry-delay beyond ten minutes", { "lock", "r", "--retry-delay", "11m", NULL }, NULL },
    { "timeout beyond ten minutes", { "ping", "--timeout-ms", "11m", NULL }, NULL },
    { "user without a password", { "ping", "--user", "bob", NULL }, NULL },
    { "token with a control byte", { "unlock", "r", "a\x01b", NULL }, NULL },
    { "token too long", { "extend", "r", LONG_256, "--ttl", "1s", NULL }, NULL },
};

#define N_BAD_INPUTS (sizeof(bad_inputs) / sizeof(bad_inputs[0]))

/* Parameters are indexes: criterion's workers are separate executions, where
 * pointers inside a parameter (to these strings) would not be valid. */
static int bad_input_index[N_BAD_INPUTS];

ParameterizedTestParameters(usage, bad_input_exits_64)
{
    for (size_t i = 0; i < N_BAD_INPUTS; i++)
        bad_input_index[i] = (int)i;
    return cr_make_param_array(int, bad_input_index, N_BAD_INPUTS);
}

ParameterizedTest(int *index, usage, bad_input_exits_64)
{
    const struct bad_input *in = &bad_inputs[*index];
    struct tcli_proc p;
    const char *env[2] = { in->env, NULL };

    tcli_start(&p, in->args, env);
    cr_assert(eq(int, tcli_wait(&p), 64), "%s: exit %d, stderr: %s", in->why, p.status, p.err);
    cr_assert(eq(str, p.out, ""), "%s: stdout: %s", in->why, p.out);
    cr_assert(eq(int, tcli_count_lines(p.err), 1), "%s: stderr is not one line: %s", in->why,
              p.err);
    cr_assert(strncmp(p.err, "redlock-cli: ", 13) == 0, "%s: %s", in->why, p.err);
    cr_assert(strstr(p.err, "s3cret") == NULL, "%s: the password was printed: %s", in->why, p.err);
    tcli_free(&p);
}

/* The commands the man page's SYNOPSIS names: each ".B NAME" right after
 * a ".RI [ options ]" line, "\-" read as "-". Return: how many, in @cmds. */
static size_t man_commands(char cmds[][32], size_t max)
{
    char *man = tcli_slurp(REDLOCK_CLI_MAN), *line, *save = NULL;
    int after_options = 0;
    size_t n = 0;

    cr_assert(man != NULL, "cannot read %s", REDLOCK_CLI_MAN);
    for (line = strtok_r(man, "\n", &save); line && n < max; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, ".SH", 3) == 0 && strstr(line, "DESCRIPTION"))
            break;
        if (after_options && strncmp(line, ".B ", 3) == 0) {
            size_t k = 0;

            for (const char *c = line + 3; *c && *c != ' ' && k < 31; c++)
                if (*c != '\\')
                    cmds[n][k++] = *c;
            cmds[n++][k] = '\0';
        }
        after_options = strcmp(line, ".RI [ options ]") == 0;
    }
    free(man);
    return n;
}

Test(usage, unknown_command_names_every_command_of_the_man_page)
{
    char cmds[16][32];
    size_t n = man_commands(cmds, 16);
    struct tcli_proc p;

    cr_assert(n >= 8, "only %zu commands found in the man page's SYNOPSIS", n);
    cr_assert(eq(int, tcli_run(&p, "lok", "r"), 64), "stderr: %s", p.err);
    for (size_t i = 0; i < n; i++) {
        char word[40];

        /* Whole names: "lock" must not pass for "unlock". */
        snprintf(word, sizeof(word), " %s%s", cmds[i], i + 1 < n ? "," : " (");
        cr_assert(strstr(p.err, word) != NULL, "'%s' is not named: %s", cmds[i], p.err);
    }
    tcli_free(&p);
    /* No command at all: the same list. */
    cr_assert(eq(int, tcli_run(&p, "--ttl", "5"), 64), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "declare-empty, readmit (") != NULL, "%s", p.err);
    tcli_free(&p);
}

/* Not in the table: an empty regular file needs a path made at run time. */
Test(usage, an_empty_password_file_exits_64_and_says_so)
{
    char path[] = "/tmp/redlock-empty-pw-XXXXXX";
    const char *args[] = { "ping", "--password-file", path, NULL };
    struct tcli_proc p;
    int fd = mkstemp(path);

    cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
    close(fd);
    tcli_start(&p, args, NULL);
    int status = tcli_wait(&p);
    unlink(path);
    cr_assert(eq(int, status, 64), "exit %d, stderr: %s", status, p.err);
    cr_assert(eq(int, tcli_count_lines(p.err), 1), "%s", p.err);
    cr_expect(strstr(p.err, "is empty") != NULL, "%s", p.err);
    tcli_free(&p);
}

Test(usage, a_set_holds_at_most_64_resources)
{
    static char names[66][8];
    const char *args[TCLI_MAX_ARGS + 1];
    struct tcli_proc p;
    size_t k = 0;

    args[k++] = "lock";
    for (int i = 0; i < 65; i++) {
        snprintf(names[i], sizeof(names[i]), "r%d", i);
        args[k++] = names[i];
    }
    args[k] = NULL;
    tcli_start(&p, args, NULL);
    cr_assert(eq(int, tcli_wait(&p), 64), "stderr: %s", p.err);
    cr_assert(eq(str, p.out, ""));
    cr_assert(eq(int, tcli_count_lines(p.err), 1), "%s", p.err);
    cr_assert(strstr(p.err, "64") != NULL, "%s", p.err);
    tcli_free(&p);
    /* unlock: 64 resources and the token are fine as far as parsing goes;
     * 65 and the token are not. */
    args[0] = "unlock";
    args[k++] = "tok";
    args[k] = NULL;
    tcli_start(&p, args, NULL);
    cr_assert(eq(int, tcli_wait(&p), 64), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "before TOKEN") != NULL, "%s", p.err);
    tcli_free(&p);
}

Test(usage, json_does_not_change_exit_64)
{
    struct tcli_proc p;

    cr_assert(eq(int, tcli_run(&p, "--json", "lock", "r", "--ttl", "0ms"), 64));
    cr_assert(eq(str, p.out, ""));
    tcli_free(&p);
}

Test(usage, even_number_of_masters_is_a_warning)
{
    struct tcli_proc p;
    char masters[256], res[128];

    tc_resource(res, sizeof(res), NULL);
    snprintf(masters, sizeof(masters), "%s,%s,%s,%s", tc_addr(0), tc_addr(1), tc_addr(2),
             tc_addr(3));
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--masters", masters), 0), "%s", p.err);
    cr_assert(tcli_is_token(p.out));
    cr_assert(eq(int, tcli_count_lines(p.err), 1), "%s", p.err);
    cr_assert(strstr(p.err, "warning") != NULL && strstr(p.err, "odd") != NULL, "%s", p.err);
    tcli_free(&p);
    /* -q silences it. */
    cr_assert(eq(int, tcli_run(&p, "-q", "status", res, "--masters", masters), 0));
    cr_assert(eq(str, p.err, ""));
    tcli_free(&p);
}

Test(usage, help_fits_one_screen_and_lists_exit_codes)
{
    struct tcli_proc p;
    const char *codes[] = { "64", "69", "75", "77", "78", "124", "126", "127", "128+N" };
    const char *line;
    size_t lines = 0;

    cr_assert(eq(int, tcli_run(&p, "--help"), 0));
    for (line = p.out; *line; lines++) {
        size_t len = strcspn(line, "\n");

        cr_assert(len <= 80, "help line %zu is %zu columns", lines + 1, len);
        line += len + (line[len] == '\n');
    }
    cr_assert(lines <= 24, "help is %zu lines", lines);
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        cr_assert(strstr(p.out, codes[i]) != NULL, "exit code %s not in --help", codes[i]);
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "lock", "-h"), 0));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "--version"), 0));
    cr_assert(strncmp(p.out, "redlock-cli ", 12) == 0, "%s", p.out);
    tcli_free(&p);
}

Test(usage, password_from_file_or_env_is_used_and_never_printed, .timeout = 60)
{
    struct tcli_proc p;
    char masters[128], pwfile[TCLI_SCRATCH_MAX + 32], badfile[TCLI_SCRATCH_MAX + 32];
    const char *secret = "cli s3cret pw";
    const char *env_good[] = { "REDLOCK_PASSWORD=cli s3cret pw", NULL };
    const char *env_bad[] = { "REDLOCK_PASSWORD=wr0ng-s3cret", NULL };
    FILE *f;

    tcli_private_start(1, 8, secret, masters, sizeof(masters));
    snprintf(pwfile, sizeof(pwfile), "%s/pw", tcli_tmpdir);
    snprintf(badfile, sizeof(badfile), "%s/badpw", tcli_tmpdir);
    f = fopen(pwfile, "w");
    cr_assert(f != NULL);
    fprintf(f, "%s\n", secret);
    fclose(f);
    chmod(pwfile, 0600);
    f = fopen(badfile, "w");
    cr_assert(f != NULL);
    fprintf(f, "wr0ng-s3cret\n");
    fclose(f);
    chmod(badfile, 0600);

    cr_assert(eq(int, tcli_run(&p, "ping", "-v", "--masters", masters, "--password-file", pwfile),
                 0),
              "%s", p.err);
    cr_assert(strstr(p.out, "s3cret") == NULL && strstr(p.err, "s3cret") == NULL);
    tcli_free(&p);
    cr_assert(eq(int,
                 tcli_run_env(&p, env_good, "lock", "pw-test", "--masters", masters, "-v",
                              (const char *)NULL),
                 0),
              "%s", p.err);
    cr_assert(strstr(p.out, "s3cret") == NULL && strstr(p.err, "s3cret") == NULL);
    tcli_free(&p);

    /* Wrong or missing password: the master refuses; 77, and no secret. */
    cr_assert(eq(
        int, tcli_run(&p, "ping", "-v", "--json", "--masters", masters, "--password-file", badfile),
        77));
    cr_assert(strstr(p.out, "s3cret") == NULL && strstr(p.err, "s3cret") == NULL, "%s%s", p.out,
              p.err);
    tcli_free(&p);
    cr_assert(eq(int,
                 tcli_run_env(&p, env_bad, "status", "x", "--masters", masters, "-vv",
                              (const char *)NULL),
                 77));
    cr_assert(strstr(p.out, "s3cret") == NULL && strstr(p.err, "s3cret") == NULL, "%s%s", p.out,
              p.err);
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "ping", "--masters", masters), 77));
    tcli_free(&p);
}

/* @text into a new file @name in the scratch dir, with @mode; its path. */
static void write_file(char *path, size_t size, const char *name, const char *text, mode_t mode)
{
    FILE *f;

    snprintf(path, size, "%s/%s", tcli_tmpdir, name);
    f = fopen(path, "w");
    cr_assert(f != NULL);
    fputs(text, f);
    fclose(f);
    cr_assert(chmod(path, mode) == 0);
}

static void assert_no_secret(const struct tcli_proc *p)
{
    cr_assert(strstr(p->out, "s3cret") == NULL && strstr(p->err, "s3cret") == NULL,
              "the password was printed: %s%s", p->out, p->err);
}

Test(usage, passwords_in_master_urls_come_from_the_environment_or_a_file, .timeout = 60)
{
    struct tcli_proc p;
    char priv[64], url[128], env_url[160], env_bad[160], addr[128], file[TCLI_SCRATCH_MAX + 32];
    char text[160], res[128];
    const char *env[] = { env_url, NULL };
    const char *bad[] = { env_bad, NULL };

    tc_resource(res, sizeof(res), NULL);
    tcli_private_start(1, 9, "url-s3cret", priv, sizeof(priv));
    snprintf(url, sizeof(url), "redis://:url-s3cret@%s", priv);
    snprintf(env_url, sizeof(env_url), "REDLOCK_MASTERS=%s", url);
    snprintf(env_bad, sizeof(env_bad), "REDLOCK_MASTERS=redis://:wr0ng-s3cret@%s", priv);

    /* From the environment: used, and shown without its password. */
    cr_assert(
        eq(int, tcli_run_env(&p, env, "ping", "-v", "--samples", "1", "--json", (const char *)NULL),
           0),
        "stderr: %s", p.err);
    assert_no_secret(&p);
    tcli_assert_one_json_object(p.out);
    snprintf(text, sizeof(text), "redis://%s", priv);
    cr_assert(eq(str,
                 tcli_jstr(tcli_jindex(tcli_jreq(p.out, "masters"), 0), "addr", addr, sizeof(addr)),
                 text));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run_env(&p, env, "lock", res, "-vv", "--json", (const char *)NULL), 0),
              "stderr: %s", p.err);
    assert_no_secret(&p);
    tcli_free(&p);
    /* run's CMD gets the list, password and all, to call redlock-cli. */
    cr_assert(eq(int,
                 tcli_run_env(&p, env, "run", "other", "-c",
                              "\"$REDLOCK_CLI\" -q status \"$REDLOCK_RESOURCE\"",
                              (const char *)NULL),
                 0),
              "stderr: %s", p.err);
    tcli_free(&p);

    /* From a file, one entry per line; a warning if others may read it. */
    snprintf(text, sizeof(text), "%s\n", url);
    write_file(file, sizeof(file), "masters", text, 0600);
    cr_assert(eq(int, tcli_run(&p, "status", res, "--masters-file", file), 0), "stderr: %s", p.err);
    assert_no_secret(&p);
    cr_assert(eq(str, p.err, ""));
    tcli_free(&p);
    cr_assert(chmod(file, 0644) == 0);
    cr_assert(eq(int, tcli_run(&p, "status", res, "--masters-file", file), 0), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "readable by others") != NULL, "stderr: %s", p.err);
    tcli_free(&p);

    /* Never in argv: ps(1) would show it. */
    cr_assert(eq(int, tcli_run(&p, "ping", "--masters", url), 64));
    assert_no_secret(&p);
    cr_assert(eq(int, tcli_count_lines(p.err), 1), "%s", p.err);
    cr_assert(strstr(p.err, "REDLOCK_MASTERS") != NULL && strstr(p.err, "--masters-file") != NULL,
              "%s", p.err);
    tcli_free(&p);

    /* A wrong one: refused by the master (77), and still never printed. */
    cr_assert(eq(int, tcli_run_env(&p, bad, "lock", res, "-vv", "--json", (const char *)NULL), 77),
              "stderr: %s", p.err);
    assert_no_secret(&p);
    tcli_free(&p);
}

Test(usage, no_masters_is_a_configuration_error_78)
{
    struct tcli_proc p;
    const char *env[] = { "!REDLOCK_MASTERS", NULL };
    const char *empty[] = { "REDLOCK_MASTERS=", NULL };

    /* A cron job without the environment: no guess at a cluster. */
    cr_assert(eq(int, tcli_run_env(&p, env, "lock", "r", "--json", (const char *)NULL), 78),
              "stderr: %s", p.err);
    cr_assert(eq(str, p.out, ""));
    cr_assert(eq(int, tcli_count_lines(p.err), 1), "%s", p.err);
    cr_assert(strstr(p.err, "--masters") != NULL && strstr(p.err, "REDLOCK_MASTERS") != NULL, "%s",
              p.err);
    tcli_free(&p);
    /* Empty is unset, as for $REDLOCK_PASSWORD. */
    cr_assert(eq(int, tcli_run_env(&p, empty, "ping", (const char *)NULL), 78), "stderr: %s",
              p.err);
    tcli_free(&p);
    /* Bad usage is still told first. */
    cr_assert(eq(int, tcli_run_env(&p, env, "lock", (const char *)NULL), 64));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run_env(&p, env, "--help", (const char *)NULL), 0));
    tcli_free(&p);
}

/* The CLI says --cacert where the library says config.tls_ca_file, but
 * only for the word itself: a path or an address that holds it is the
 * user's, and stays as typed. */
Test(usage, field_names_become_options_as_whole_words_only)
{
    struct tcli_proc p;
    const char *sock = "unix:///nonexistent/tls_ca_file/config.tls_key_file.sock";

    cr_assert(eq(int, tcli_run(&p, "--masters", sock, "ping"), 69), "stderr: %s", p.err);
    cr_expect(strstr(p.err, sock) != NULL, "the address was rewritten: %s", p.err);
    cr_expect(strstr(p.err, "--cacert") == NULL && strstr(p.err, "--key") == NULL, "%s", p.err);
    tcli_free(&p);
    /* The words themselves still are rewritten (in a build without TLS
     * too: this is the configuration check). */
    cr_assert(eq(int, tcli_run(&p, "--masters", tc_addr(0), "--cacert", "/x/tls_ca_file", "ping"),
                 64),
              "stderr: %s", p.err);
    cr_expect(strstr(p.err, "a TLS option is given") != NULL, "%s", p.err);
    cr_expect(strstr(p.err, "add --tls") != NULL, "%s", p.err);
    tcli_free(&p);
}

/* A child that opens @fifo for writing, writes @text and closes it: the
 * writer of a password pipe. */
static pid_t fifo_writer(const char *fifo, const char *text)
{
    pid_t pid = fork();

    cr_assert(pid >= 0);
    if (pid == 0) {
        int fd = open(fifo, O_WRONLY);

        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
            _exit(1);
        _exit(0);
    }
    return pid;
}

Test(usage, a_password_pipe_is_read_and_never_blocks_for_ever, .timeout = 60)
{
    struct tcli_proc p;
    char masters[128], fifo[TCLI_SCRATCH_MAX + 32];
    const char *secret = "cli s3cret pw";
    uint64_t t0;
    pid_t w;
    int st, hold;

    tcli_private_start(1, 7, secret, masters, sizeof(masters));
    snprintf(fifo, sizeof(fifo), "%s/pw", tcli_tmpdir);
    cr_assert(mkfifo(fifo, 0600) == 0);

    /* A writer: the password arrives through the pipe (as <(pass show x)). */
    w = fifo_writer(fifo, "cli s3cret pw\n");
    cr_assert(eq(int,
                 tcli_run(&p, "ping", "--samples", "1", "--masters", masters, "--password-file",
                          fifo),
                 0),
              "stderr: %s", p.err);
    tcli_free(&p);
    cr_assert(waitpid(w, &st, 0) == w && WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* A writer that holds the pipe and writes nothing; then nobody at all.
     * Either way one line and 64, after the pipe's grace (time is what
     * this checks: the CLI must give up by itself). */
    hold = open(fifo, O_RDWR);
    cr_assert(hold >= 0);
    t0 = tc_now_us();
    cr_assert(eq(int, tcli_run(&p, "ping", "--masters", masters, "--password-file", fifo), 64));
    cr_assert(tc_ms_since(t0) < 15000, "took %llu ms", (unsigned long long)tc_ms_since(t0));
    cr_assert(eq(int, tcli_count_lines(p.err), 1), "%s", p.err);
    cr_assert(strstr(p.err, "pipe") != NULL, "%s", p.err);
    tcli_free(&p);
    close(hold);
    cr_assert(eq(int, tcli_run(&p, "ping", "--masters", masters, "--password-file", fifo), 64));
    cr_assert(eq(int, tcli_count_lines(p.err), 1), "%s", p.err);
    tcli_free(&p);
}

/* Run @argv, its stdout and stderr into files; return its exit status and
 * the two outputs (free them). */
static int run_tool(const char *const *argv, char **out, char **err)
{
    char op[TCLI_SCRATCH_MAX + 32], ep[TCLI_SCRATCH_MAX + 32];
    pid_t pid;
    int st;

    snprintf(op, sizeof(op), "%s/tool.out", tcli_tmpdir);
    snprintf(ep, sizeof(ep), "%s/tool.err", tcli_tmpdir);
    pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int o = open(op, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0600);

        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(99);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    cr_assert(waitpid(pid, &st, 0) == pid);
    *out = tcli_slurp(op);
    *err = tcli_slurp(ep);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(usage, man_page_renders_without_warnings_and_says_what_the_code_does)
{
    const char *check[] = { "groff", "-ww", "-z", "-man", REDLOCK_CLI_MAN, NULL };
    const char *render[] = { "groff",     "-man",          "-Tutf8", "-P-cbou",
                             "-rLL=200n", REDLOCK_CLI_MAN, NULL };
    char *out, *err;

    if (access("/usr/bin/groff", X_OK) != 0)
        cr_skip_test("groff is not installed (apt-get install groff-base)");
    cr_assert(eq(int, run_tool(check, &out, &err), 0), "%s", err);
    cr_assert(eq(str, err, ""), "troff warns: %s", err);
    free(out);
    free(err);
    cr_assert(eq(int, run_tool(render, &out, &err), 0), "%s", err);
    /* The quotes of the JSON example survive troff. */
    cr_assert(strstr(out, "{\"code\": \"ECONFLICT\", \"message\": \"...\"}") != NULL,
              "the JSON error example: %s",
              strstr(out, "ECONFLICT") ? strstr(out, "ECONFLICT") - 20 : out);
    /* The footer names the version built (meson fills it in). */
    cr_assert(strstr(out, "redlock " REDLOCK_VERSION_STRING) != NULL, "the footer's version");
    /* The defaults the code has. */
    cr_assert(strstr(out, "default 1000000") != NULL, "--max-extends' default");
    cr_assert(strstr(out, "default 1000,") == NULL, "--max-extends' old default");
    {
        static const char *const said[] = { "77",        "78",           "conflict-exit-code",
                                            "signal",    "command",      "--masters-file",
                                            "forever",   "EUNAVAIL",     "ECANCELED",
                                            "128 + N",   "redis://",     "unix://",
                                            "the floor", "declare-empty" };

        for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++)
            cr_assert(strstr(out, said[i]) != NULL, "the man page never mentions %s", said[i]);
    }
    /* One duration rule: a bare number is seconds, so no option that takes
     * a duration T is followed by "ms" as if its bare number were ms. */
    {
        static const char *const wrong[] = { "--kill-after ms", "--max-lease ms",
                                             "--retry-delay ms", "--wait ms", "T ms" };

        for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++)
            cr_assert(strstr(out, wrong[i]) == NULL, "the man page says \"%s\"", wrong[i]);
    }
    /* What the code no longer does. */
    cr_assert(strstr(out, "a third of the ttl") == NULL, "run's old retry policy");
    cr_assert(strstr(out, "cannot be cut short") == NULL, "--wait's old waiting");
    free(out);
    free(err);
}

/* status R --json run with @env and @args: is R held under the prefix in
 * force? (The lock was taken under "cmd:", and each source names another
 * prefix but one.) */
static int held_with(const char *const *env, const char *res, const char *arg1, const char *arg2)
{
    struct tcli_proc p;
    int held;

    cr_assert(eq(int,
                 tcli_run_env(&p, env, "status", res, "--json", arg1, arg2, (const char *)NULL), 0),
              "stderr: %s", p.err);
    held = tcli_jbool(p.out, "held");
    tcli_free(&p);
    return held;
}

Test(usage, connection_options_from_environment_and_config_files_in_order)
{
    struct tcli_proc p;
    char res[128], dflt[TCLI_SCRATCH_MAX + 48], conf[TCLI_SCRATCH_MAX + 32],
        xdg_env[TCLI_SCRATCH_MAX + 32], text[512], dead[256];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--prefix", "cmd:"), 0), "stderr: %s", p.err);
    tcli_free(&p);
    tcli_default_conf(dflt, sizeof(dflt), xdg_env, sizeof(xdg_env));
    snprintf(conf, sizeof(conf), "%s/other.conf", tcli_tmpdir);
    tcli_put_file(dflt, "# the default file\nprefix = cmd:\n");
    tcli_put_file(conf, "  prefix=conf:  \n\n");
    {
        const char *e_dflt[] = { xdg_env, NULL };
        const char *e_env[] = { xdg_env, "REDLOCK_PREFIX=cmd:", NULL };
        const char *e_env_other[] = { xdg_env, "REDLOCK_PREFIX=env:", NULL };

        /* The default file is read ... */
        cr_assert(held_with(e_dflt, res, NULL, NULL));
        /* ... unless --config names another, which counts instead. */
        cr_assert(not(held_with(e_dflt, res, "--config", conf)));
        /* The environment beats the config file; the command line beats
         * the environment. */
        cr_assert(held_with(e_env, res, "--config", conf));
        cr_assert(held_with(e_env_other, res, "--prefix=cmd:", NULL));
        cr_assert(not(held_with(e_env_other, res, NULL, NULL)));
    }
    /* The masters: a file's list counts only without $REDLOCK_MASTERS, and
     * may carry a password (a file, not argv). */
    tcli_dead_masters(dead, sizeof(dead), 3);
    snprintf(text, sizeof(text), "masters = %s\ntls = no\n", dead);
    tcli_put_file(conf, text);
    cr_assert(eq(int, tcli_run(&p, "ping", "--config", conf), 0), "stderr: %s", p.err);
    tcli_free(&p);
    {
        const char *no_env[] = { "!REDLOCK_MASTERS", NULL };

        cr_assert(eq(int, tcli_run_env(&p, no_env, "ping", "--config", conf, (const char *)NULL),
                     69));
        tcli_free(&p);
        snprintf(text, sizeof(text), "masters = redis://:s3cret@%.*s\n",
                 (int)strcspn(tc_masters(), ","), tc_masters());
        tcli_put_file(conf, text);
        /* Taken (argv would refuse it: 64), then refused by the master,
         * which has no password: 77. */
        cr_assert(eq(int, tcli_run_env(&p, no_env, "ping", "--config", conf, (const char *)NULL),
                     77),
                  "stderr: %s", p.err);
        cr_assert(strstr(p.err, "s3cret") == NULL, "stderr: %s", p.err);
        tcli_free(&p);
    }
    /* $REDLOCK_TLS=no outweighs a file's tls = yes; a bad value is named
     * with its source. */
    tcli_put_file(conf, "tls = yes\n");
    {
        const char *tls_no[] = { "REDLOCK_TLS=no", NULL };
        const char *tls_bad[] = { "REDLOCK_TLS=maybe", NULL };
        const char *user[] = { "REDLOCK_USER=bob", NULL };
        const char *timeout[] = { "REDLOCK_TIMEOUT_MS=50", NULL };

        cr_assert(eq(int, tcli_run_env(&p, tls_no, "ping", "--config", conf, (const char *)NULL),
                     0),
                  "stderr: %s", p.err);
        tcli_free(&p);
        cr_assert(eq(int, tcli_run_env(&p, tls_bad, "ping", (const char *)NULL), 64));
        cr_assert(strstr(p.err, "$REDLOCK_TLS: --tls 'maybe'") != NULL, "stderr: %s", p.err);
        tcli_free(&p);
        cr_assert(eq(int, tcli_run_env(&p, timeout, "ping", (const char *)NULL), 64));
        cr_assert(strstr(p.err, "$REDLOCK_TIMEOUT_MS: --timeout-ms '50': give a unit") != NULL,
                  "stderr: %s", p.err);
        tcli_free(&p);
        cr_assert(eq(int, tcli_run_env(&p, user, "ping", (const char *)NULL), 64));
        cr_assert(strstr(p.err, "'bob' needs a password") != NULL, "stderr: %s", p.err);
        tcli_free(&p);
    }
    /* A file's mistakes: one line each, with FILE:LINE. */
    tcli_put_file(conf, "ttl = 5\n");
    cr_assert(eq(int, tcli_run(&p, "ping", "--config", conf), 64));
    cr_assert(strstr(p.err, "other.conf:1: 'ttl': a command's or the output's option") != NULL,
              "stderr: %s", p.err);
    tcli_free(&p);
    tcli_put_file(conf, "# ok\nprefix\n");
    cr_assert(eq(int, tcli_run(&p, "ping", "--config", conf), 64));
    cr_assert(strstr(p.err, "other.conf:2: expected 'key = value'") != NULL, "stderr: %s", p.err);
    tcli_free(&p);
    tcli_put_file(conf, "user = a\nuser = b\n");
    cr_assert(eq(int, tcli_run(&p, "ping", "--config", conf), 64));
    cr_assert(strstr(p.err, "other.conf:2: user given twice") != NULL, "stderr: %s", p.err);
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "ping", "--config", "/no/such/file.conf"), 64));
    cr_assert(eq(str, p.err, "redlock-cli: --config '/no/such/file.conf': no such file\n"));
    tcli_free(&p);
}

/* The stderr line for --drift-factor @val below the floor, from @source
 * (NULL: argv; "$REDLOCK_DRIFT_FACTOR"; "FILE:LINE"). */
static void expect_below_floor(const struct tcli_proc *p, const char *source, const char *val)
{
    char want[512];

    snprintf(want, sizeof(want),
             "redlock-cli: %s%s--drift-factor '%s': below the floor of 0.001 (0.1 %% of the "
             "ttl): the margin must cover clocks that NTP slews by up to 0.05 %%\n",
             source ? source : "", source ? ": " : "", val);
    cr_assert(eq(int, p->status, 64), "%s %s: exit %d: %s", source, val, p->status, p->err);
    cr_assert(eq(str, p->err, want));
    cr_assert(eq(str, p->out, ""));
}

/* `lock --json` of @res, 100 s, with @env and @arg1 @arg2; unlocked after.
 * Return: the validity it reported. */
static long long lock_validity(const char *const *env, const char *res, const char *arg1,
                               const char *arg2)
{
    struct tcli_proc p;
    char token[64];
    long long validity;

    cr_assert(eq(int,
                 tcli_run_env(&p, env, "lock", res, "--ttl", "100s", "--json", arg1, arg2,
                              (const char *)NULL),
                 0),
              "stderr: %s", p.err);
    validity = tcli_jint(p.out, "validity_ms");
    tcli_jstr(p.out, "token", token, sizeof(token));
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "unlock", res, token), 0), "stderr: %s", p.err);
    tcli_free(&p);
    return validity;
}

/* A drift factor of 0 took the margin away and was accepted from every
 * source. Now 0 and half the floor are refused from argv, the environment
 * and the config file alike, naming the floor; the floor itself is taken,
 * and used: a 100 s lock keeps 100000 - 102 ms less its round trip, where
 * the default factor would leave less than 99000. */
Test(usage, drift_factor_below_the_floor_is_refused_from_every_source)
{
    static const char *const below[] = { "0", "0.0005" };
    char conf[TCLI_SCRATCH_MAX + 32], src[TCLI_SCRATCH_MAX + 40], text[64], var[64], res[128];
    struct tcli_proc p;

    snprintf(conf, sizeof(conf), "%s/drift.conf", tcli_tmpdir);
    snprintf(src, sizeof(src), "%s:1", conf);
    for (size_t i = 0; i < sizeof(below) / sizeof(below[0]); i++) {
        const char *env[] = { var, NULL };

        snprintf(var, sizeof(var), "REDLOCK_DRIFT_FACTOR=%s", below[i]);
        snprintf(text, sizeof(text), "drift-factor = %s\n", below[i]);
        tcli_put_file(conf, text);
        tcli_run(&p, "ping", "--drift-factor", below[i]);
        expect_below_floor(&p, NULL, below[i]);
        tcli_free(&p);
        tcli_run_env(&p, env, "ping", (const char *)NULL);
        expect_below_floor(&p, "$REDLOCK_DRIFT_FACTOR", below[i]);
        tcli_free(&p);
        tcli_run(&p, "ping", "--config", conf);
        expect_below_floor(&p, src, below[i]);
        tcli_free(&p);
    }

    tc_resource(res, sizeof(res), NULL);
    tcli_put_file(conf, "drift-factor = 0.001\n");
    {
        const char *env[] = { "REDLOCK_DRIFT_FACTOR=0.001", NULL };
        long long v[] = { lock_validity(NULL, res, "--drift-factor", "0.001"),
                          lock_validity(env, res, NULL, NULL),
                          lock_validity(NULL, res, "--config", conf) };

        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
            cr_assert(v[i] > 99000 && v[i] <= 100000 - 102, "source %zu: validity %lld ms", i,
                      v[i]);
    }
}

/* Refusing a file is parsing: far within this, however loaded the machine;
 * well below SECRET_PIPE_WAIT_MS (5 s), the grace of the pipes that are
 * read, so that a refusal cannot pass for that wait. */
#define REFUSED_AT_ONCE_MS 4000

/* A FIFO nobody writes to, named where a regular file is read whole (the
 * config file, given or the default one) or opened by the library (a TLS
 * file): refused at once, in one line, never opened. --config FIFO used to
 * block in open(2) until a writer came, for ever in a cron job; --cacert
 * FIFO, in OpenSSL. */
Test(usage, a_fifo_for_a_config_or_tls_file_is_refused_at_once)
{
    char fifo[TCLI_SCRATCH_MAX + 32], dflt[TCLI_SCRATCH_MAX + 48], xdg_env[TCLI_SCRATCH_MAX + 32],
        want[4 * TCLI_SCRATCH_MAX];
    struct tcli_proc p;

    tcli_make_fifo(fifo, sizeof(fifo));
    tcli_spawn(&p, NULL, "ping", "--config", fifo, (const char *)NULL);
    cr_assert(eq(int, tcli_wait_within(&p, REFUSED_AT_ONCE_MS), 64), "stderr: %s", p.err);
    snprintf(want, sizeof(want), "redlock-cli: --config '%s' is a FIFO: give a regular file\n",
             fifo);
    cr_assert(eq(str, p.err, want));
    tcli_free(&p);

    tcli_default_conf(dflt, sizeof(dflt), xdg_env, sizeof(xdg_env));
    cr_assert(mkfifo(dflt, 0600) == 0);
    {
        const char *env[] = { xdg_env, NULL };

        tcli_spawn(&p, env, "ping", (const char *)NULL);
        cr_assert(eq(int, tcli_wait_within(&p, REFUSED_AT_ONCE_MS), 64), "stderr: %s", p.err);
        snprintf(want, sizeof(want),
                 "redlock-cli: config file '%s' is a FIFO: give a regular file\n", dflt);
        cr_assert(eq(str, p.err, want));
        tcli_free(&p);
    }

    tcli_spawn(&p, NULL, "ping", "--tls", "--cacert", fifo, (const char *)NULL);
    cr_assert(eq(int, tcli_wait_within(&p, REFUSED_AT_ONCE_MS), 64), "stderr: %s", p.err);
    snprintf(want, sizeof(want), "redlock-cli: --cacert '%s' is a FIFO: give a regular file\n",
             fifo);
    cr_assert(eq(str, p.err, want));
    tcli_free(&p);
}

/* The password and masters files take a pipe (<(pass show redis)), read
 * with a deadline: a FIFO nobody writes to gives up after its 5 s grace,
 * in one line, the same way for both (time is what this checks). */
Test(usage, a_secret_fifo_nobody_writes_to_gives_up_within_its_grace)
{
    static const char *const opts[] = { "--password-file", "--masters-file" };
    char fifo[TCLI_SCRATCH_MAX + 32], want[2 * TCLI_SCRATCH_MAX];
    struct tcli_proc p;

    tcli_make_fifo(fifo, sizeof(fifo));
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        tcli_spawn(&p, NULL, "ping", opts[i], fifo, (const char *)NULL);
        cr_assert(eq(int, tcli_wait_within(&p, 5000 + REFUSED_AT_ONCE_MS), 64), "%s: stderr: %s",
                  opts[i], p.err);
        cr_assert(p.elapsed_ms >= 4900, "%s gave up after %llu ms, before its grace", opts[i],
                  (unsigned long long)p.elapsed_ms);
        snprintf(want, sizeof(want),
                 "redlock-cli: %s '%s': a pipe that gave nothing and no end within 5 s: write "
                 "to it and close it, or give a regular file\n",
                 opts[i], fifo);
        cr_assert(eq(str, p.err, want));
        tcli_free(&p);
    }
}
