/* fuzz-cli-args.c - arbitrary bytes as redlock-cli's command line, its
 * environment, its password file and its masters file.
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
 * otherwise). A WORD starting with \xfe is the masters file's content (the
 * rest of the word). A WORD starting with \xff ends the list: every byte
 * after that \xff, NULs included, is the password file's content. The value
 * of any --password-file or --masters-file option is replaced by that file
 * (a memfd, as /proc/self/fd/N), so an input can never make the parser open
 * a path of its choosing (a FIFO or /dev/stdin would block the fuzzer).
 *
 * Checked on every input, beyond memory safety and UB:
 *  - the result is OK, EXIT_0, USAGE or CONFIG (no masters given);
 *  - OK means a complete command: the positional arguments it needs, in
 *    range (1..64 distinct resources of 1..1024 bytes, one for status;
 *    run's CMD, or -c's shell and string), a password of 1..4096 bytes
 *    without NUL, a conflict exit code of 0..255 (not 0 for lock), a loss
 *    signal that ends CMD, a wait of 0..a year or forever;
 *  - OK means the library accepts it all: the configuration made from it
 *    (redlock_config_check), its masters (redlock_masters_check, counted
 *    alike), its ttl with its drift factor (redlock_ttl_check), its token
 *    (redlock_token_check);
 *  - and the CLI accepts exactly what the library accepts: every --masters
 *    value, $REDLOCK_MASTERS, --ttl value and word of the input, parsed
 *    again alone in a minimal command line, is accepted by the CLI if and
 *    only if the library accepts it (a password in --masters excepted: the
 *    CLI refuses it there by design);
 *  - no message shows a password of the masters list (":PASSWORD@").
 *
 * The CLI's messages are captured in memory and dropped; with
 * REDLOCK_FUZZ_VERBOSE=1 they are printed (sanitizer and libFuzzer reports
 * are written to fd 2 directly and stay).
 */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <redlock.h>

#include "opts.h"

#define MAX_WORDS 160 /* room past REDLOCK_SET_MAX + 1 positional words */

static int pw_fd = -1, mf_fd = -1;
static char pw_path[64], mf_path[64];
static char *msgs; /* what the CLI printed since the last reset */
static size_t msgs_len;
static int verbose;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Undefined behaviour must stop the run, not scroll by. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
    return "halt_on_error=1:print_stacktrace=1";
}

static void fail(const char *what, const char *detail)
{
    /* stderr is a memory stream: write to fd 2, after what the CLI said. */
    fflush(stderr);
    if (verbose && msgs_len > 0)
        dprintf(2, "%.*s", (int)msgs_len, msgs);
    dprintf(2, "fuzz-cli-args: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}

static int memfd(const char *name, char *path, size_t size)
{
    int fd = memfd_create(name, MFD_CLOEXEC);

    if (fd < 0) {
        perror("fuzz-cli-args: memfd_create");
        abort();
    }
    snprintf(path, size, "/proc/self/fd/%d", fd);
    return fd;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *v = getenv("REDLOCK_FUZZ_VERBOSE");

    (void)argc;
    (void)argv;
    pw_fd = memfd("redlock-fuzz-password", pw_path, sizeof(pw_path));
    mf_fd = memfd("redlock-fuzz-masters", mf_path, sizeof(mf_path));
    unsetenv("REDLOCK_MASTERS");
    unsetenv("REDLOCK_PASSWORD");
    verbose = v != NULL && strcmp(v, "1") == 0;
    /* libFuzzer took its own copy of the stderr FILE * at start-up. */
    stderr = open_memstream(&msgs, &msgs_len);
    if (stderr == NULL)
        abort();
    if (!verbose) {
        FILE *null = fopen("/dev/null", "w");

        if (null != NULL)
            stdout = null;
    }
    return 0;
}

/* Forget what was printed (after showing it, with REDLOCK_FUZZ_VERBOSE=1). */
static void msgs_reset(void)
{
    fflush(stderr);
    if (verbose && msgs_len > 0)
        dprintf(2, "%.*s", (int)msgs_len, msgs);
    fseeko(stderr, 0, SEEK_SET);
    fflush(stderr);
    msgs[0] = '\0';
}

static void no_help(void)
{
}

static void set_file(int fd, const void *p, size_t len)
{
    if (ftruncate(fd, 0) != 0 || (len > 0 && pwrite(fd, p, len, 0) != (ssize_t)len))
        fail("cannot write a memfd", strerror(errno));
}

/* ---- what the library says ------------------------------------------------- */

static double drift_in_force(const struct cli_opts *o)
{
    redlock_config d;

    redlock_config_init(&d);
    return o->drift_factor >= 0 ? o->drift_factor : d.drift_factor;
}

/* OK: the library accepts everything the command will hand it. */
static void check_library_accepts(const struct cli_opts *o)
{
    redlock_config cfg;
    redlock_error err;
    size_t n = 0;

    if (o->masters == NULL || redlock_masters_check(o->masters, &n, NULL, &err) != 0)
        fail("OK with masters the library refuses", err.msg);
    if (n != o->n_masters)
        fail("OK with a master count other than the library's", o->masters);
    cli_config_fill(o, &cfg);
    if (redlock_config_check(&cfg, &err) != 0)
        fail("OK with a configuration the library refuses", err.msg);
    if (redlock_ttl_check(o->ttl_ms, drift_in_force(o), &err) != 0)
        fail("OK with a ttl the library refuses", err.msg);
    if (o->token != NULL && redlock_token_check(o->token, &err) != 0)
        fail("OK with a token the library refuses", err.msg);
}

static void check_ok(const struct cli_opts *o)
{
    if (o->cmd <= CLI_CMD_NONE || o->cmd > CLI_CMD_DECLARE_EMPTY || o->cmd_name == NULL)
        fail("OK without a command", NULL);
    int need_resource = o->cmd != CLI_CMD_PING && o->cmd != CLI_CMD_DECLARE_EMPTY;
    int need_token = o->cmd == CLI_CMD_UNLOCK || o->cmd == CLI_CMD_EXTEND;
    if (need_resource &&
        (o->resource == NULL || o->resource_len == 0 || o->resource_len > REDLOCK_RESOURCE_MAX ||
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
    if (need_token != (o->token != NULL))
        fail("OK with a TOKEN missing, or one too many", o->cmd_name);
    if (o->cmd == CLI_CMD_RUN &&
        (o->run_argv == NULL || o->run_argv[0] == NULL || o->run_argv[0][0] == '\0'))
        fail("run: OK without CMD", NULL);
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
    if (o->wait_ms != CLI_WAIT_FOREVER && (o->wait_ms < 0 || o->wait_ms > CLI_WAIT_MAX_MS))
        fail("OK with --wait beyond its bounds", NULL);
    if (o->wait_set && o->retry > 0)
        fail("OK with --wait and --retry", NULL);
    if (o->n_masters < 1 || o->n_masters > REDLOCK_MAX_MASTERS)
        fail("OK with no masters or too many", o->masters);
    if (o->password != NULL) {
        size_t n = strlen(o->password);
        if (n == 0 || n > CLI_PASSWORD_MAX)
            fail("OK with an empty or oversized password", NULL);
    }
    check_library_accepts(o);
}

/* ---- the CLI accepts exactly what the library accepts --------------------- */

/* Parse @argv (NULL-terminated) alone, with $REDLOCK_MASTERS = @env_masters
 * (or unset): the result. */
static int parse_alone(char **argv, const char *env_masters)
{
    struct cli_opts o;
    int argc = 0, r;

    while (argv[argc] != NULL)
        argc++;
    if (env_masters != NULL)
        setenv("REDLOCK_MASTERS", env_masters, 1);
    else
        unsetenv("REDLOCK_MASTERS");
    r = cli_opts_parse(&o, argc, argv, no_help);
    cli_opts_done(&o);
    return r;
}

/* What the library says of @list as the configuration's masters. */
static int library_takes_masters(const char *list, int *secret)
{
    redlock_config cfg;

    *secret = 0;
    if (redlock_masters_check(list, NULL, secret, NULL) != 0)
        return 0;
    redlock_config_init(&cfg);
    cfg.masters = list;
    return redlock_config_check(&cfg, NULL) == 0;
}

static void same_verdict_masters(const char *list, int in_argv)
{
    char *argv[] = { "redlock-cli", "--masters", (char *)list, "ping", NULL };
    char *env_argv[] = { "redlock-cli", "ping", NULL };
    int secret, lib = library_takes_masters(list, &secret), r;

    if (!in_argv && list[0] == '\0')
        return; /* an empty $REDLOCK_MASTERS is unset: CONFIG */
    r = in_argv ? parse_alone(argv, NULL) : parse_alone(env_argv, list);
    if (lib && secret && in_argv)
        lib = 0; /* refused in argv by design */
    if ((r == CLI_PARSE_OK) != lib)
        fail(lib ? "the CLI refuses masters the library takes"
                 : "the CLI takes masters the library refuses",
             list);
}

static void same_verdict_ttl(const char *val, const char *drift)
{
    char *argv[] = { "redlock-cli", "--masters", "127.0.0.1:7000", "lock",
                     "r",           "--ttl",     (char *)val,      drift ? "--drift-factor" : NULL,
                     (char *)drift, NULL };
    struct cli_opts d;
    uint64_t ms;
    int r = parse_alone(argv, NULL), lib = 0;

    memset(&d, 0, sizeof(d));
    d.drift_factor = -1;
    if (drift != NULL && cli_parse_drift(drift, &d.drift_factor) < 0)
        return; /* the factor's fault: not what this compares */
    if (cli_parse_duration_ms(val, 1, REDLOCK_TTL_MAX_MS, &ms) == 0)
        lib = redlock_ttl_check((uint32_t)ms, drift_in_force(&d), NULL) == 0;
    if ((r == CLI_PARSE_OK) != lib)
        fail(lib ? "the CLI refuses a ttl the library takes"
                 : "the CLI takes a ttl the library refuses",
             val);
}

static void same_verdict_token(const char *word)
{
    char *argv[] = { "redlock-cli", "--masters", "127.0.0.1:7000", "unlock",
                     "r",           "--",        (char *)word,     NULL };
    int lib = redlock_token_check(word, NULL) == 0;

    if ((parse_alone(argv, NULL) == CLI_PARSE_OK) != lib)
        fail(lib ? "the CLI refuses a token the library takes"
                 : "the CLI takes a token the library refuses",
             word);
}

/* The value of option @name in @argv (--name V or --name=V), the last
 * one, or NULL. */
static const char *value_of(char **argv, int argc, const char *name)
{
    size_t n = strlen(name);
    const char *v = NULL;

    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], name) == 0 && k + 1 < argc)
            v = argv[k + 1];
        else if (strncmp(argv[k], name, n) == 0 && argv[k][n] == '=')
            v = argv[k] + n + 1;
    }
    return v;
}

#define MAX_TOKEN_CHECKS 16 /* words tried as a token, per input */

static void check_exactness(char **argv, int argc, const char *env_masters)
{
    const char *drift = value_of(argv, argc, "--drift-factor");
    int tokens = 0;

    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--masters") == 0 && k + 1 < argc)
            same_verdict_masters(argv[k + 1], 1);
        else if (strncmp(argv[k], "--masters=", 10) == 0)
            same_verdict_masters(argv[k] + 10, 1);
        if (strcmp(argv[k], "--ttl") == 0 && k + 1 < argc)
            same_verdict_ttl(argv[k + 1], drift);
        if (argv[k][0] != '-' && strlen(argv[k]) <= 2 * REDLOCK_TOKEN_MAX &&
            tokens++ < MAX_TOKEN_CHECKS)
            same_verdict_token(argv[k]);
    }
    if (env_masters != NULL)
        same_verdict_masters(env_masters, 0);
}

/* ---- secrets --------------------------------------------------------------- */

/* A message about the masters (the others may echo any word of the
 * input, which may hold the same bytes) shows @needle. */
/* The messages' own hints say how credentials are written ("redis://
 * user:password@host:port", "user:password@ or :password@"): a password
 * that is part of one ("rd" of "password@") is not shown by it. */
static const char HINT[] = ":password@";

/* Does @needle occur in the line @l (@len bytes) other than inside HINT? */
static int shows_outside_hint(const char *l, size_t len, const char *needle)
{
    size_t nlen = strlen(needle), hlen = sizeof(HINT) - 1;

    for (const char *at = memmem(l, len, needle, nlen); at != NULL;
         at = memmem(at + 1, len - (size_t)(at + 1 - l), needle, nlen)) {
        int in_hint = 0;

        for (const char *h = memmem(l, len, HINT, hlen); h != NULL && !in_hint;
             h = memmem(h + 1, len - (size_t)(h + 1 - l), HINT, hlen))
            in_hint = at >= h && at + nlen <= h + hlen;
        if (!in_hint)
            return 1;
        if (at + 1 >= l + len)
            break;
    }
    return 0;
}

static int masters_line_shows(const char *needle)
{
    for (const char *l = msgs; l < msgs + msgs_len;) {
        const char *end = memchr(l, '\n', (size_t)(msgs + msgs_len - l));
        size_t len = end ? (size_t)(end - l) : (size_t)(msgs + msgs_len - l);
        static const char *const heads[] = { "redlock-cli: --masters",
                                             "redlock-cli: $REDLOCK_MASTERS" };

        for (size_t h = 0; h < 2; h++)
            if (len >= strlen(heads[h]) && memcmp(l, heads[h], strlen(heads[h])) == 0 &&
                shows_outside_hint(l, len, needle))
                return 1;
        l += len + 1;
    }
    return 0;
}

/* No message about the masters shows ":PASSWORD@" (or "PASSWORD@" without
 * a user) of an entry of @list that has one. */
static void check_no_password_shown(const char *list)
{
    fflush(stderr);
    if (list == NULL || msgs_len == 0)
        return;
    for (const char *p = list; *p;) {
        const char *comma = strchrnul(p, ','), *at = NULL, *colon = NULL;
        const char *from = p, *q = p;

        /* A password is what follows user: up to the last '@', after a
         * scheme (RFC 3986 letters, then "://") if the entry starts with
         * one, as a user would read the entry. */
        while (q < comma && (isalnum((unsigned char)*q) || strchr("+-.", *q) != NULL))
            q++;
        if (q > p && comma - q >= 3 && memcmp(q, "://", 3) == 0)
            from = q + 3;
        for (const char *q = comma; q > from; q--)
            if (q[-1] == '@') {
                at = q - 1;
                break;
            }
        /* ... after the user name, if the part before a ':' holds no '@'. */
        for (const char *q = from; at != NULL && q < at && *q != '@' && colon == NULL; q++)
            if (*q == ':')
                colon = q;
        if (colon == NULL)
            colon = from;
        if (at != NULL && at - colon > 1) {
            char *needle = strndup(colon, (size_t)(at - colon + 1));

            /* (A password written as the mask itself shows as the mask.) */
            if (needle != NULL && strcmp(needle + (needle[0] == ':'), "***@") != 0 &&
                masters_line_shows(needle))
                fail("a message shows a password", needle);
            free(needle);
        }
        p = *comma ? comma + 1 : comma;
    }
}

/* Every masters list the input holds: --masters values, the environment's,
 * the file's (its lines as entries). */
static void check_no_password_in_any(char **argv, int argc, const char *env_masters,
                                     const char *file)
{
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--masters") == 0 && k + 1 < argc)
            check_no_password_shown(argv[k + 1]);
        else if (strncmp(argv[k], "--masters=", 10) == 0)
            check_no_password_shown(argv[k] + 10);
    }
    check_no_password_shown(env_masters);
    check_no_password_shown(file);
}

/* ---- one input ------------------------------------------------------------- */

/* argv and the environment from @data; the two files' contents set. */
static int build_argv(const uint8_t *data, size_t size, char **argv, char **masters_file)
{
    int argc = 0;
    const uint8_t *file = NULL;
    size_t file_len = 0;

    set_file(mf_fd, NULL, 0);
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
        if (len > 0 && w[0] == 0xfe) {
            set_file(mf_fd, w + 1, len - 1);
            free(*masters_file);
            *masters_file = strndup((const char *)w + 1, len - 1);
            for (char *c = *masters_file; c != NULL && *c; c++)
                if (*c == '\n')
                    *c = ',';
            continue;
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
                if (strcmp(s + 1, "REDLOCK_MASTERS") == 0 || strcmp(s + 1, "REDLOCK_PASSWORD") == 0)
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
    set_file(pw_fd, file, file ? file_len : 0);
    return argc;
}

/* Every --password-file and --masters-file reads our memfds. */
static void redirect_files(char **argv, int argc)
{
    static const struct {
        const char *opt;
        const char *path;
    } files[] = { { "--password-file", pw_path }, { "--masters-file", mf_path } };

    for (int k = 1; k < argc; k++) {
        for (size_t f = 0; f < 2; f++) {
            size_t n = strlen(files[f].opt);

            if (strcmp(argv[k], files[f].opt) == 0 && k + 1 < argc) {
                k++;
                free(argv[k]);
                argv[k] = strdup(files[f].path);
            } else if (strncmp(argv[k], files[f].opt, n) == 0 && argv[k][n] == '=') {
                char *s = malloc(n + 1 + strlen(files[f].path) + 1);

                if (s != NULL)
                    sprintf(s, "%s=%s", files[f].opt, files[f].path);
                free(argv[k]);
                argv[k] = s;
            }
            if (argv[k] == NULL)
                fail("out of memory building argv", NULL);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *argv[MAX_WORDS + 2];
    char *env_masters = NULL, *masters_file = NULL;
    struct cli_opts o;
    int argc, r;

    if (size > 16384)
        return 0;
    unsetenv("REDLOCK_MASTERS");
    unsetenv("REDLOCK_PASSWORD");
    msgs_reset();
    argc = build_argv(data, size, argv, &masters_file);
    redirect_files(argv, argc);
    if (getenv("REDLOCK_MASTERS") != NULL)
        env_masters = strdup(getenv("REDLOCK_MASTERS"));

    r = cli_opts_parse(&o, argc, argv, no_help);
    if (r != CLI_PARSE_OK && r != CLI_PARSE_EXIT_0 && r != CLI_PARSE_USAGE && r != CLI_PARSE_CONFIG)
        fail("unexpected parse result", NULL);
    if (r == CLI_PARSE_OK)
        check_ok(&o);
    cli_opts_done(&o);
    if (o.password != NULL || o.masters != NULL)
        fail("cli_opts_done() left memory behind", NULL);

    check_exactness(argv, argc, env_masters);
    check_no_password_in_any(argv, argc, env_masters, masters_file);

    free(env_masters);
    free(masters_file);
    for (int k = 0; k < argc; k++)
        free(argv[k]);
    return 0;
}
