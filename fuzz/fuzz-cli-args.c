/* fuzz-cli-args.c - arbitrary bytes as redlock-cli's command line and
 * password file.
 *
 * cli_opts_parse() (cli/opts.c) returns instead of exiting, so it is called
 * directly, once per input; no command runs. Input layout:
 *
 *   WORD \0 WORD \0 ... [\xff FILE]
 *
 * Each WORD is one argv element after argv[0] ("redlock-cli"; at most 160,
 * enough to go past the 64 resources of a set).
 * A WORD starting with \x01 is not an argument but an environment setting,
 * "\x01REDLOCK_MASTERS=..." or "\x01REDLOCK_PASSWORD=..." (both are unset
 * otherwise). A WORD starting with \xff ends the list: every byte after
 * that \xff, NULs included, is the password file's content. The value of
 * any --password-file option is replaced by that file (a memfd, as
 * /proc/self/fd/N), so an input can never make the parser open a path of
 * its choosing (a FIFO or /dev/stdin would block the fuzzer).
 *
 * Checked on every input, beyond memory safety and UB:
 *  - the result is OK, EXIT_0, USAGE or CONFIG (no masters given);
 *  - OK means a complete command: the positional arguments it needs, in
 *    range (1..64 distinct resources of 1..1024 bytes, one for status;
 *    token 1..128 printable bytes; run's CMD, or -c's shell and string),
 *    1..16 masters, a password of 1..4096 bytes without NUL, a conflict
 *    exit code of 0..255 (not 0 for lock), a loss signal that ends CMD;
 *  - the normalised masters list is a fixed point: parsing it again as
 *    --masters gives the same string;
 *  - the library accepts that list too (redlock_client_new, with offline.c
 *    keeping it off the network), except for the two refusals the CLI
 *    leaves to it by design: the same master under two names ("same
 *    master") and entries over 270 bytes ("too long").
 *
 * The CLI's messages go to /dev/null unless REDLOCK_FUZZ_VERBOSE=1 is set
 * (sanitizer and libFuzzer reports are written to fd 2 directly and stay).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <event2/event.h>

#include <redlock.h>

#include "opts.h"

#define MAX_WORDS 160   /* room past REDLOCK_SET_MAX + 1 positional words */
#define PASSWORD_MAX 4096   /* as in cli/password.c */

static int pw_fd = -1;
static char pw_path[64];
static struct event_base *base;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Undefined behaviour must stop the run, not scroll by. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
    return "halt_on_error=1:print_stacktrace=1";
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pw_fd = memfd_create("redlock-fuzz-password", MFD_CLOEXEC);
    if (pw_fd < 0) {
        perror("fuzz-cli-args: memfd_create");
        abort();
    }
    snprintf(pw_path, sizeof(pw_path), "/proc/self/fd/%d", pw_fd);
    unsetenv("REDLOCK_MASTERS");
    unsetenv("REDLOCK_PASSWORD");
    const char *v = getenv("REDLOCK_FUZZ_VERBOSE");
    if (v == NULL || strcmp(v, "1") != 0) {
        /* libFuzzer took its own copy of the stderr FILE * at start-up. */
        FILE *null = fopen("/dev/null", "w");
        if (null != NULL) {
            stdout = null;
            stderr = null;
        }
    }
    base = event_base_new();
    if (base == NULL)
        abort();
    return 0;
}

static void no_help(void)
{
}

static void fail(const char *what, const char *detail)
{
    /* stderr may be /dev/null: write to fd 2. */
    dprintf(2, "fuzz-cli-args: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}

static void set_password_file(const uint8_t *p, size_t len)
{
    if (ftruncate(pw_fd, 0) != 0 || (len > 0 && pwrite(pw_fd, p, len, 0) != (ssize_t)len))
        fail("cannot write the password memfd", strerror(errno));
}

static int printable_token(const char *t)
{
    size_t n = strlen(t);

    if (n == 0 || n > REDLOCK_TOKEN_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (t[i] <= ' ' || t[i] > '~')
            return 0;
    return 1;
}

static void check_ok(const struct cli_opts *o)
{
    if (o->cmd <= CLI_CMD_NONE || o->cmd > CLI_CMD_PING || o->cmd_name == NULL)
        fail("OK without a command", NULL);
    int need_resource = o->cmd != CLI_CMD_PING;
    int need_token = o->cmd == CLI_CMD_UNLOCK || o->cmd == CLI_CMD_EXTEND;
    if (need_resource && (o->resource == NULL || o->resource_len == 0 ||
                          o->resource_len > REDLOCK_RESOURCE_MAX ||
                          strlen(o->resource) != o->resource_len))
        fail("OK with a missing or bad RESOURCE", o->cmd_name);
    if (need_resource &&
        (o->n_resources < 1 || o->n_resources > REDLOCK_SET_MAX ||
         (o->cmd == CLI_CMD_STATUS && o->n_resources != 1) || o->set[0].name != o->resource))
        fail("OK with a bad number of resources", o->cmd_name);
    for (size_t i = 0; need_resource && i < o->n_resources; i++) {
        const redlock_resource *r = &o->set[i];
        if (r->name == NULL || r->len == 0 || r->len > REDLOCK_RESOURCE_MAX ||
            strlen(r->name) != r->len)
            fail("OK with a bad resource in the set", o->cmd_name);
        for (size_t j = 0; j < i; j++)
            if (o->set[j].len == r->len && memcmp(o->set[j].name, r->name, r->len) == 0)
                fail("OK with the same resource twice in a set", o->cmd_name);
    }
    if (need_token && (o->token == NULL || !printable_token(o->token)))
        fail("OK with a missing or bad TOKEN", o->cmd_name);
    if (o->cmd == CLI_CMD_RUN &&
        (o->run_argv == NULL || o->run_argv[0] == NULL || o->run_argv[0][0] == '\0'))
        fail("run: OK without CMD", NULL);
    if (o->ttl_ms == 0 || o->ttl_ms > REDLOCK_TTL_MAX_MS)
        fail("OK with a ttl out of range", NULL);
    if (o->cmd == CLI_CMD_RUN && o->shell_command != NULL &&
        (o->shell_command[0] == '\0' || o->run_argv != o->shell_argv ||
         strcmp(o->run_argv[0], CLI_SHELL) != 0 || o->run_argv[2] != o->shell_command ||
         o->run_argv[3] != NULL))
        fail("run -c: OK without the shell and its string as CMD", NULL);
    if (o->conflict_exit > 255 || (o->cmd == CLI_CMD_LOCK && o->conflict_exit == 0))
        fail("OK with a conflict exit code out of range", NULL);
    if (o->loss_signal < 1 || o->loss_signal > SIGRTMAX || o->loss_signal == SIGSTOP ||
        o->loss_signal == SIGTSTP || o->loss_signal == SIGCONT || o->loss_signal == SIGCHLD)
        fail("OK with a loss signal that does not end CMD", NULL);
    if (o->wait_ms > CLI_WAIT_MAX_MS)
        fail("OK with --wait beyond its bound", NULL);
    if (o->masters == NULL || o->n_masters < 1 || o->n_masters > REDLOCK_MAX_MASTERS)
        fail("OK with no masters or too many", o->masters);
    if (o->password != NULL) {
        size_t n = strlen(o->password);
        if (n == 0 || n > PASSWORD_MAX)
            fail("OK with an empty or oversized password", NULL);
    }
}

/* The normalised list parses to itself. */
static void check_fixed_point(const char *masters)
{
    char *argv[] = { "redlock-cli", "--masters", (char *)masters, "ping", NULL };
    struct cli_opts o2;

    int r = cli_opts_parse(&o2, 4, argv, no_help);
    if (r != CLI_PARSE_OK)
        fail("the normalised masters list does not parse again", masters);
    if (strcmp(o2.masters, masters) != 0)
        fail("normalising the masters list twice changes it", masters);
    cli_opts_done(&o2);
}

/* What the CLI accepts, the library must not call malformed. */
static void check_library_agrees(const char *masters)
{
    redlock_config cfg;
    redlock_client *c = NULL;
    redlock_error err;

    redlock_config_init(&cfg);
    cfg.masters = masters;
    cfg.connect_timeout_ms = 1;
    cfg.clock_policy = REDLOCK_CLOCK_OFF;
    int rc = redlock_client_new(&cfg, base, &c, &err);
    if (rc == 0) {
        redlock_client_free(c);
        return;
    }
    if (rc == REDLOCK_ERESOLVE || rc == REDLOCK_ENOMEM)
        return;
    if (rc == REDLOCK_EINVAL &&
        (strstr(err.msg, "same master") != NULL || strstr(err.msg, "too long") != NULL))
        return;
    fail("the CLI accepted a masters list the library refuses", err.msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *argv[MAX_WORDS + 2];
    int argc = 0;
    const uint8_t *file = NULL;
    size_t file_len = 0;

    if (size > 16384)
        return 0;
    unsetenv("REDLOCK_MASTERS");
    unsetenv("REDLOCK_PASSWORD");
    argv[argc++] = strdup("redlock-cli");
    for (size_t i = 0; i < size;) {
        const uint8_t *w = data + i;
        const uint8_t *nul = memchr(w, '\0', size - i);
        size_t len = nul ? (size_t)(nul - w) : size - i;

        i += len + 1;
        if (len > 0 && w[0] == 0xff) {
            file = w + 1;
            file_len = (size_t)(data + size - file);
            break;
        }
        /* Each word in its own allocation, so ASan sees any over-read. */
        char *s = malloc(len + 1);
        if (s == NULL)
            break;
        memcpy(s, w, len);
        s[len] = '\0';
        if (len > 0 && s[0] == 0x01) {
            char *eq = strchr(s + 1, '=');
            if (eq != NULL) {
                *eq = '\0';
                if (strcmp(s + 1, "REDLOCK_MASTERS") == 0 ||
                    strcmp(s + 1, "REDLOCK_PASSWORD") == 0)
                    setenv(s + 1, eq + 1, 1);
            }
            free(s);
            continue;
        }
        if (argc == MAX_WORDS + 1) {
            free(s);
            break;
        }
        argv[argc++] = s;
    }
    argv[argc] = NULL;

    /* Every --password-file reads our memfd. */
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--password-file") == 0 && k + 1 < argc) {
            k++;
            free(argv[k]);
            argv[k] = strdup(pw_path);
        } else if (strncmp(argv[k], "--password-file=", 16) == 0) {
            char *s = malloc(16 + strlen(pw_path) + 1);
            if (s != NULL) {
                memcpy(s, "--password-file=", 16);
                strcpy(s + 16, pw_path);
            }
            free(argv[k]);
            argv[k] = s;
        }
        if (argv[k] == NULL)
            fail("out of memory building argv", NULL);
    }
    set_password_file(file, file ? file_len : 0);

    struct cli_opts o;
    int r = cli_opts_parse(&o, argc, argv, no_help);
    if (r != CLI_PARSE_OK && r != CLI_PARSE_EXIT_0 && r != CLI_PARSE_USAGE &&
        r != CLI_PARSE_CONFIG)
        fail("unexpected parse result", NULL);
    if (r == CLI_PARSE_OK) {
        check_ok(&o);
        check_fixed_point(o.masters);
        check_library_agrees(o.masters);
    }
    cli_opts_done(&o);
    if (o.password != NULL || o.masters != NULL)
        fail("cli_opts_done() left memory behind", NULL);

    for (int k = 0; k < argc; k++)
        free(argv[k]);
    return 0;
}
