/* test-cli.c - redlock-cli, driven as a script would drive it.
 *
 * Every test runs the real binary (built next to us: <builddir>/cli/) against
 * the real masters that tests/with-cluster.sh started, and checks what a
 * script can see: the exit code, stdout (the token, a table, one JSON
 * object) and stderr (one line per message). The masters' state is checked
 * directly with tc_cmd(). Faults that must not disturb parallel tests (a
 * majority killed, a password) use small private clusters on the spare ports
 * of this executable's slot (REDLOCK_TEST_BASEPORT + 5..9).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include "cluster.h"

#define MAX_ARGS 80   /* a set of 64 resources, and the rest */

/* criterion's new cr_assert() pastes the first token of its (expanded)
 * argument: a plain condition must start with a function name. */
static inline int yes(int cond)
{
    return cond;
}

/* ------------------------------------------------------------------------ */
/* Running the binary                                                       */
/* ------------------------------------------------------------------------ */

#define SCRATCH_MAX 512

static char tmpdir[SCRATCH_MAX];        /* this test's scratch dir */
static char private_dir[SCRATCH_MAX + 16]; /* a private cluster's state dir, if any */

static const char *cli_path(void)
{
    static char path[PATH_MAX + 32];
    char exe[PATH_MAX];
    ssize_t n;
    char *slash;

    if (getenv("REDLOCK_CLI") != NULL)
        return getenv("REDLOCK_CLI");
    if (path[0] != '\0')
        return path;
    /* <builddir>/tests/test-cli -> <builddir>/cli/redlock-cli */
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    cr_assert(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    cr_assert(slash != NULL);
    *slash = '\0';
    snprintf(path, sizeof(path), "%s/../cli/redlock-cli", exe);
    cr_assert(access(path, X_OK) == 0, "%s: %s (set $REDLOCK_CLI)", path, strerror(errno));
    return path;
}

struct cli_proc {
    pid_t pid;
    int status;          /* exit code, or 128 + signal */
    char *out;           /* stdout, NUL-terminated */
    char *err;           /* stderr */
    char out_path[SCRATCH_MAX + 32];
    char err_path[SCRATCH_MAX + 32];
};

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long len;

    cr_assert(f != NULL, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)len + 1);
    cr_assert(buf != NULL);
    cr_assert(fread(buf, 1, (size_t)len, f) == (size_t)len);
    buf[len] = '\0';
    fclose(f);
    return buf;
}

/*
 * Start redlock-cli with @args (NULL-terminated). Its environment is built
 * from scratch: PATH, REDLOCK_MASTERS = the test cluster, REDLOCK_CLI (for
 * commands run by `run`), plus @env ("NAME=value" strings, NULL-terminated;
 * "NAME=" with nothing after removes NAME). stdout and stderr go to files.
 */
/* If set, cli_start() opens this file as the CLI's descriptor 3. */
static const char *fd3_path;

static void cli_start(struct cli_proc *p, const char *const *args, const char *const *env)
{
    static unsigned seq;
    const char *argv[MAX_ARGS + 2];
    char masters_env[1024], path_env[PATH_MAX + 8], cli_env[SCRATCH_MAX + 32];
    const char *envp[32];
    size_t k = 0, e = 0;

    memset(p, 0, sizeof(*p));
    snprintf(p->out_path, sizeof(p->out_path), "%s/out.%u", tmpdir, seq);
    snprintf(p->err_path, sizeof(p->err_path), "%s/err.%u", tmpdir, seq);
    seq++;

    argv[k++] = cli_path();
    for (size_t i = 0; args[i] != NULL; i++) {
        cr_assert(k < MAX_ARGS);
        argv[k++] = args[i];
    }
    argv[k] = NULL;

    snprintf(path_env, sizeof(path_env), "PATH=%s",
             getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    snprintf(masters_env, sizeof(masters_env), "REDLOCK_MASTERS=%s", tc_masters());
    snprintf(cli_env, sizeof(cli_env), "REDLOCK_CLI=%s", cli_path());
    envp[e++] = path_env;
    envp[e++] = cli_env;
    for (size_t i = 0; env != NULL && env[i] != NULL; i++)
        envp[e++] = env[i];
    /* Defaults go after the caller's entries, and only if not overridden. */
    {
        int have_masters = 0;

        for (size_t i = 0; i < e; i++)
            if (strncmp(envp[i], "REDLOCK_MASTERS=", 16) == 0)
                have_masters = 1;
        if (!have_masters)
            envp[e++] = masters_env;
    }
    /* "NAME=" means unset. */
    for (size_t i = 0; i < e;) {
        const char *eq = strchr(envp[i], '=');

        if (eq != NULL && eq[1] == '\0') {
            memmove(&envp[i], &envp[i + 1], (e - i - 1) * sizeof(envp[0]));
            e--;
        } else {
            i++;
        }
    }
    envp[e] = NULL;

    p->pid = fork();
    cr_assert(p->pid >= 0, "fork: %s", strerror(errno));
    if (p->pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        int out = open(p->out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int err = open(p->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

        if (in < 0 || out < 0 || err < 0)
            _exit(99);
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        /* The CLI starts with 0-2 only (and 3 if asked): criterion's own
         * descriptors must not blur what `run` passes on to CMD. */
        if (fd3_path != NULL) {
            int fd3 = open(fd3_path, O_RDONLY);

            if (fd3 < 0 || dup2(fd3, 3) < 0)
                _exit(97);
            close_range(4, ~0u, 0);
        } else {
            close_range(3, ~0u, 0);
        }
        execve(argv[0], (char *const *)argv, (char *const *)envp);
        _exit(98);
    }
}

static int cli_wait(struct cli_proc *p)
{
    int st;

    while (waitpid(p->pid, &st, 0) < 0)
        cr_assert(yes(errno == EINTR), "waitpid: %s", strerror(errno));
    p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    p->out = slurp(p->out_path);
    p->err = slurp(p->err_path);
    return p->status;
}

static void cli_free(struct cli_proc *p)
{
    free(p->out);
    free(p->err);
    p->out = p->err = NULL;
}

/* Run to completion; args as a NULL-terminated list. */
static int cli_env(struct cli_proc *p, const char *const *env, ...)
{
    const char *args[MAX_ARGS + 1];
    size_t k = 0;
    va_list ap;

    va_start(ap, env);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL;) {
        cr_assert(k < MAX_ARGS);
        args[k++] = a;
    }
    va_end(ap);
    args[k] = NULL;
    cli_start(p, args, env);
    return cli_wait(p);
}

#define cli(p, ...) cli_env((p), NULL, __VA_ARGS__, (const char *)NULL)

static size_t count_lines(const char *s)
{
    size_t n = 0;

    for (; *s; s++)
        n += (*s == '\n');
    return n;
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ------------------------------------------------------------------------ */
/* A small JSON checker: validates the document and finds members           */
/* ------------------------------------------------------------------------ */

static const char *jws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static const char *jvalue(const char *p);

static const char *jstring(const char *p)
{
    if (*p++ != '"')
        return NULL;
    while (*p != '"') {
        unsigned char c = (unsigned char)*p;

        if (c == '\0' || c < 0x20)
            return NULL;
        if (c == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p[i]) || p[i] == '\0')
                        return NULL;
                p += 5;
            } else if (*p && strchr("\"\\/bfnrt", *p)) {
                p++;
            } else {
                return NULL;
            }
        } else if (c < 0x80) {
            p++;
        } else {
            /* Raw UTF-8: lead byte, then continuation bytes. */
            int n = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 ? 1 : -1;

            if (n < 0 || c > 0xf4)
                return NULL;
            p++;
            for (int i = 0; i < n; i++, p++)
                if (((unsigned char)*p & 0xc0) != 0x80)
                    return NULL;
        }
    }
    return p + 1;
}

static const char *jnumber(const char *p)
{
    const char *s;

    if (*p == '-')
        p++;
    s = p;
    while (*p >= '0' && *p <= '9')
        p++;
    if (p == s || (s[0] == '0' && p - s > 1))
        return NULL;
    if (*p == '.') {
        s = ++p;
        while (*p >= '0' && *p <= '9')
            p++;
        if (p == s)
            return NULL;
    }
    return p;
}

static const char *jcontainer(const char *p, char open, char close)
{
    if (*p++ != open)
        return NULL;
    p = jws(p);
    if (*p == close)
        return p + 1;
    for (;;) {
        if (open == '{') {
            p = jstring(p);
            if (p == NULL)
                return NULL;
            p = jws(p);
            if (*p++ != ':')
                return NULL;
        }
        p = jvalue(jws(p));
        if (p == NULL)
            return NULL;
        p = jws(p);
        if (*p == close)
            return p + 1;
        if (*p++ != ',')
            return NULL;
        p = jws(p);
    }
}

static const char *jvalue(const char *p)
{
    p = jws(p);
    switch (*p) {
    case '{': return jcontainer(p, '{', '}');
    case '[': return jcontainer(p, '[', ']');
    case '"': return jstring(p);
    case 't': return strncmp(p, "true", 4) == 0 ? p + 4 : NULL;
    case 'f': return strncmp(p, "false", 5) == 0 ? p + 5 : NULL;
    case 'n': return strncmp(p, "null", 4) == 0 ? p + 4 : NULL;
    default: return jnumber(p);
    }
}

/* @doc must be exactly one JSON object and a newline. */
static void assert_one_json_object(const char *doc)
{
    const char *end;

    cr_assert(doc[0] == '{', "not a JSON object: %s", doc);
    end = jvalue(doc);
    cr_assert(end != NULL, "invalid JSON: %s", doc);
    cr_assert(strcmp(end, "\n") == 0, "trailing bytes after the JSON object: '%s'", end);
}

/* The value of member @key of the object at @obj, or NULL. */
static const char *jget(const char *obj, const char *key)
{
    const char *p = jws(obj);
    size_t kl = strlen(key);

    cr_assert(yes(*p == '{'), "jget(%s): not an object", key);
    p = jws(p + 1);
    while (*p == '"') {
        const char *k = p + 1, *v;

        p = jstring(p);
        cr_assert(p != NULL);
        p = jws(p);
        cr_assert(yes(*p == ':'));
        v = jws(p + 1);
        if ((size_t)(p - k - 1) == kl && strncmp(k, key, kl) == 0)
            return v;
        p = jws(jvalue(v));
        if (*p == ',')
            p = jws(p + 1);
    }
    return NULL;
}

/* Element @i of the array at @arr, or NULL. */
static const char *jindex(const char *arr, int i)
{
    const char *p = jws(arr);

    cr_assert(yes(*p == '['));
    p = jws(p + 1);
    if (*p == ']')
        return NULL;
    for (int k = 0; k < i; k++) {
        p = jws(jvalue(p));
        if (*p != ',')
            return NULL;
        p = jws(p + 1);
    }
    return p;
}

static const char *jreq(const char *obj, const char *key)
{
    const char *v = jget(obj, key);

    cr_assert(v != NULL, "JSON member \"%s\" missing in %s", key, obj);
    return v;
}

static long long jint(const char *obj, const char *key)
{
    const char *v = jreq(obj, key);

    cr_assert(yes((*v >= '0' && *v <= '9') || *v == '-'), "\"%s\" is not a number: %.40s", key, v);
    return strtoll(v, NULL, 10);
}

static double jdouble(const char *obj, const char *key)
{
    const char *v = jreq(obj, key);

    cr_assert(yes((*v >= '0' && *v <= '9') || *v == '-'), "\"%s\" is not a number: %.40s", key, v);
    return strtod(v, NULL);
}

static int jbool(const char *obj, const char *key)
{
    const char *v = jreq(obj, key);

    cr_assert(strncmp(v, "true", 4) == 0 || strncmp(v, "false", 5) == 0,
              "\"%s\" is not a boolean: %.40s", key, v);
    return v[0] == 't';
}

static int jnull(const char *obj, const char *key)
{
    return strncmp(jreq(obj, key), "null", 4) == 0;
}

/* A string member without escapes (tokens, addresses, codes) into @buf. */
static char *jstr(const char *obj, const char *key, char *buf, size_t size)
{
    const char *v = jreq(obj, key), *e;

    cr_assert(yes(*v == '"'), "\"%s\" is not a string: %.40s", key, v);
    e = strchr(v + 1, '"');
    cr_assert(e != NULL && (size_t)(e - v - 1) < size);
    memcpy(buf, v + 1, (size_t)(e - v - 1));
    buf[e - v - 1] = '\0';
    return buf;
}

/* ------------------------------------------------------------------------ */
/* Fixtures                                                                 */
/* ------------------------------------------------------------------------ */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void setup(void)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

    snprintf(tmpdir, sizeof(tmpdir), "%s/redlock-cli-test.XXXXXX", base);
    cr_assert(mkdtemp(tmpdir) != NULL, "mkdtemp: %s", strerror(errno));
    private_dir[0] = '\0';
}

/* cluster-up.sh on a private cluster; returns its exit status. */
static int private_cluster(const char *const *args)
{
    const char *argv[16];
    size_t k = 0;
    pid_t pid;
    int st;

    argv[k++] = "bash";
    argv[k++] = getenv("REDLOCK_TEST_CLUSTER");
    cr_assert(argv[1] != NULL, "REDLOCK_TEST_CLUSTER is not set (run via with-cluster.sh)");
    argv[k++] = "-d";
    argv[k++] = private_dir;
    for (size_t i = 0; args[i] != NULL; i++)
        argv[k++] = args[i];
    argv[k] = NULL;
    pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        /* Its stdout (the masters list) must not reach criterion's TAP. */
        int null = open("/dev/null", O_WRONLY);

        if (null >= 0)
            dup2(null, 1);
        execvp("bash", (char *const *)argv);
        _exit(127);
    }
    while (waitpid(pid, &st, 0) < 0)
        cr_assert(yes(errno == EINTR));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void teardown(void)
{
    if (private_dir[0] != '\0') {
        const char *stop[] = {"stop", NULL};

        private_cluster(stop);
        private_dir[0] = '\0';
    }
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Start @n masters on REDLOCK_TEST_BASEPORT + @offset.. (the unused ports of
 * this executable's slot) and write their list to @masters. */
static void private_start(int n, int offset, const char *password, char *masters, size_t size)
{
    char nbuf[16], pbuf[16];
    int base = atoi(getenv("REDLOCK_TEST_BASEPORT") ? getenv("REDLOCK_TEST_BASEPORT") : "0");
    const char *args[10] = {"-n", nbuf, "-p", pbuf, NULL};
    size_t k = 4, used = 0;

    cr_assert(base > 0, "REDLOCK_TEST_BASEPORT is not set");
    snprintf(nbuf, sizeof(nbuf), "%d", n);
    snprintf(pbuf, sizeof(pbuf), "%d", base + offset);
    snprintf(private_dir, sizeof(private_dir), "%s/cluster", tmpdir);
    if (password != NULL) {
        args[k++] = "--requirepass";
        args[k++] = password;
    }
    args[k++] = "start";
    args[k] = NULL;
    cr_assert(eq(int, private_cluster(args), 0), "private cluster on port %d did not start",
              base + offset);
    masters[0] = '\0';
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(masters + used, size - used, "%s127.0.0.1:%d", i ? "," : "",
                                 base + offset + i);
}

static void private_kill(int i)
{
    char ibuf[16];   /* any int: the ASan build checks the bound */
    const char *args[] = {"kill", ibuf, NULL};

    snprintf(ibuf, sizeof(ibuf), "%d", i);
    cr_assert(eq(int, private_cluster(args), 0));
}

/* Masters that refuse connections: loopback ports bound but never listened
 * on, so nothing else can take them while this test runs (the sockets stay
 * open until the worker exits). */
static void dead_masters(char *buf, size_t size, int n)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
        socklen_t len = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        cr_assert(fd >= 0);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        cr_assert(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind: %s",
                  strerror(errno));
        cr_assert(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
        used += (size_t)snprintf(buf + used, size - used, "%s127.0.0.1:%d", i ? "," : "",
                                 ntohs(sa.sin_port));
    }
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(cli_usage, .init = setup, .fini = teardown, .timeout = 30);

static int is_token(const char *s)
{
    size_t n = strlen(s);

    if (n != 33 || s[32] != '\n')
        return 0;
    for (size_t i = 0; i < 32; i++)
        if (!strchr("0123456789abcdef", s[i]))
            return 0;
    return 1;
}

/* Number of masters on which @res holds @token. */
static int holders(const char *res, const char *token)
{
    int n = 0;

    for (int i = 0; i < tc_n(); i++) {
        redisReply *r = tc_cmd(i, "GET %s", res);

        if (r != NULL && r->type == REDIS_REPLY_STRING && strcmp(r->str, token) == 0)
            n++;
        if (r != NULL)
            freeReplyObject(r);
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* lock / unlock / extend: exit codes 0 and 75                              */
/* ------------------------------------------------------------------------ */

Test(cli, lock_prints_only_the_token_and_holds_every_master)
{
    struct cli_proc p;
    char res[128], token[64];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, cli(&p, "lock", res, "--ttl", "30000"), 0), "stderr: %s", p.err);
    cr_assert(is_token(p.out), "stdout is not just a token: '%s'", p.out);
    cr_assert(eq(str, p.err, ""));
    memcpy(token, p.out, 32);
    token[32] = '\0';
    cr_assert(eq(int, holders(res, token), tc_n()));
    cli_free(&p);

    /* Held: a second lock fails with 75, one line naming the cause. */
    cr_assert(eq(int, cli(&p, "lock", res), 75));
    cr_assert(eq(str, p.out, ""));
    cr_assert(strstr(p.err, "held by another client") != NULL, "stderr: %s", p.err);
    cli_free(&p);

    cr_assert(eq(int, cli(&p, "unlock", res, token), 0), "stderr: %s", p.err);
    cr_assert(eq(str, p.out, ""));
    cr_assert(eq(int, tc_key_count(res, strlen(res)), 0));
    cli_free(&p);

    /* Free again. */
    cr_assert(eq(int, cli(&p, "lock", res, "--ttl", "5000"), 0), "stderr: %s", p.err);
    cli_free(&p);
}

Test(cli, unlock_and_extend_with_a_wrong_token_exit_75)
{
    struct cli_proc p;
    char res[128], token[64];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, cli(&p, "lock", res, "--ttl", "30000"), 0));
    memcpy(token, p.out, 32);
    token[32] = '\0';
    cli_free(&p);

    cr_assert(eq(int, cli(&p, "unlock", res, "0123456789abcdef0123456789abcdef"), 75),
              "stderr: %s", p.err);
    cr_assert(eq(int, count_lines(p.err) >= 1, 1));
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "extend", res, "not-the-token", "--ttl", "60000"), 75));
    cli_free(&p);
    /* Neither touched the real holder. */
    cr_assert(eq(int, holders(res, token), tc_n()));
    /* Nor does unlocking a resource nobody holds count as success for a
     * stranger's token? It does not matter here: only the holder's token
     * is released below. */
    cr_assert(eq(int, cli(&p, "unlock", res, token), 0));
    cli_free(&p);
}

Test(cli, extend_raises_the_ttl_on_the_masters)
{
    struct cli_proc p;
    char res[128], token[64];
    redisReply *r;

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, cli(&p, "lock", res, "--ttl", "5000"), 0));
    memcpy(token, p.out, 32);
    token[32] = '\0';
    cli_free(&p);

    cr_assert(eq(int, cli(&p, "extend", res, token, "--ttl", "120000", "--json"), 0),
              "stderr: %s", p.err);
    assert_one_json_object(p.out);
    cr_assert(jint(p.out, "validity_ms") > 100000);
    cr_assert(jint(p.out, "extended_on") >= 3);
    cr_assert(eq(int, jint(p.out, "ttl_ms"), 120000));
    cli_free(&p);
    r = tc_cmd(0, "PTTL %s", res);
    cr_assert(r != NULL && r->type == REDIS_REPLY_INTEGER);
    cr_assert(r->integer > 100000, "PTTL %lld after extend", r->integer);
    freeReplyObject(r);
}

Test(cli, wait_gets_the_lock_once_the_holder_expires)
{
    struct cli_proc p;
    char res[128];
    uint64_t t0;

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, cli(&p, "lock", res, "--ttl", "800"), 0));
    cli_free(&p);
    t0 = now_ms();
    cr_assert(eq(int, cli(&p, "lock", res, "--wait", "10000", "--retry-delay", "50"), 0),
              "stderr: %s", p.err);
    cr_assert(is_token(p.out));
    cr_assert(now_ms() - t0 < 5000);
    cli_free(&p);
}

Test(cli, wait_runs_out_with_75_when_the_lock_stays_held)
{
    struct cli_proc p;
    char res[128];
    uint64_t t0;

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, cli(&p, "lock", res, "--ttl", "30000"), 0));
    cli_free(&p);
    t0 = now_ms();
    cr_assert(eq(int, cli(&p, "lock", res, "--wait", "600", "--retry-delay", "50", "--json"),
                 75));
    cr_assert(now_ms() - t0 >= 600, "gave up after %llu ms", (unsigned long long)(now_ms() - t0));
    assert_one_json_object(p.out);
    cr_assert(jint(p.out, "attempts") >= 3);
    cr_assert(jint(p.out, "waited_ms") >= 600);
    cli_free(&p);
}

/* ------------------------------------------------------------------------ */
/* 69, 68: masters unreachable or unknown                                   */
/* ------------------------------------------------------------------------ */

Test(cli, no_quorum_exits_69_naming_each_master)
{
    struct cli_proc p;
    char dead[256], masters[512], res[128];
    const char *cmds[][4] = {
        {"lock", res, NULL},
        {"status", res, NULL},
        {"ping", NULL},
        {"unlock", res, "0123456789abcdef0123456789abcdef", NULL},
    };

    tc_resource(res, sizeof(res), NULL);
    /* 2 live masters and 3 dead ones: no majority of 5. */
    dead_masters(dead, sizeof(dead), 3);
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
        cli_start(&p, args, NULL);
        cr_assert(eq(int, cli_wait(&p), 69), "%s: stderr: %s", cmds[c][0], p.err);
        snprintf(first_dead, sizeof(first_dead), "%.*s: connection refused",
                 (int)strcspn(dead, ","), dead);
        cr_assert(strstr(p.err, first_dead) != NULL, "%s: no '%s' line in: %s", cmds[c][0],
                  first_dead, p.err);
        cli_free(&p);
    }
}

Test(cli, lock_succeeds_with_a_minority_down_and_warns)
{
    struct cli_proc p;
    char dead[256], masters[512], res[128];

    tc_resource(res, sizeof(res), NULL);
    dead_masters(dead, sizeof(dead), 2);
    snprintf(masters, sizeof(masters), "%s,%s,%s,%s", tc_addr(0), tc_addr(1), tc_addr(2), dead);
    /* 5 masters, 3 up: a quorum; the 2 down ones are named on stderr. */
    cr_assert(eq(int, cli(&p, "lock", res, "--masters", masters), 0), "stderr: %s", p.err);
    cr_assert(is_token(p.out));
    /* The quorum may be decided before the refusals are seen: at most one
     * warning per dead master, each naming it. */
    cr_assert(count_lines(p.err) <= 2, "stderr: %s", p.err);
    for (const char *l = p.err; *l; l = strchr(l, '\n') + 1)
        cr_assert(strncmp(l, "redlock-cli: warning: 127.0.0.1:", 32) == 0, "stderr: %s", p.err);
    cli_free(&p);
}

Test(cli, unknown_master_host_exits_68)
{
    struct cli_proc p;

    cr_assert(eq(int, cli(&p, "ping", "--masters", "no-such-host.invalid:7000"), 68),
              "stderr: %s", p.err);
    cr_assert(eq(int, count_lines(p.err), 1));
    cr_assert(strstr(p.err, "no-such-host.invalid") != NULL);
    cli_free(&p);
}

Test(cli, quiet_prints_nothing_on_failure)
{
    struct cli_proc p;
    char res[128];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, cli(&p, "lock", res), 0));
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "-q", "lock", res), 75));
    cr_assert(eq(str, p.err, ""));
    cr_assert(eq(str, p.out, ""));
    cli_free(&p);
}

/* ------------------------------------------------------------------------ */
/* status, ping                                                             */
/* ------------------------------------------------------------------------ */

Test(cli, status_and_ping_show_every_master)
{
    struct cli_proc p;
    char res[128], token[64];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, cli(&p, "status", res), 0));
    for (int i = 0; i < tc_n(); i++)
        cr_assert(strstr(p.out, tc_addr(i)) != NULL, "no line for %s: %s", tc_addr(i), p.out);
    cr_assert(strstr(p.out, "free") != NULL);
    cli_free(&p);

    cr_assert(eq(int, cli(&p, "lock", res), 0));
    memcpy(token, p.out, 32);
    token[32] = '\0';
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "status", res), 0));
    cr_assert(strstr(p.out, token) != NULL);
    cr_assert(strstr(p.out, "on a majority") != NULL, "%s", p.out);
    cli_free(&p);

    cr_assert(eq(int, cli(&p, "ping"), 0), "stderr: %s", p.err);
    cr_assert(eq(int, count_lines(p.out), (size_t)tc_n() + 2), "%s", p.out);
    for (int i = 0; i < tc_n(); i++)
        cr_assert(strstr(p.out, tc_addr(i)) != NULL);
    cli_free(&p);
}

/* ------------------------------------------------------------------------ */
/* ping: clock monitor and restart guard                                    */
/* ------------------------------------------------------------------------ */

static void assert_votes(const char *doc, int n);

static int is_hex40(const char *s)
{
    if (strlen(s) != 40)
        return 0;
    for (size_t i = 0; i < 40; i++)
        if (!strchr("0123456789abcdef", s[i]))
            return 0;
    return 1;
}

Test(cli, ping_json_reports_clocks_run_ids_and_exclusions)
{
    struct cli_proc p;
    char buf[128];
    uint64_t t0 = now_ms();

    /* Default --samples 5: five pings 100 ms apart, the client probing
     * every master's TIME at that interval meanwhile: rates are known. */
    cr_assert(eq(int, cli(&p, "ping", "--json"), 0), "stderr: %s", p.err);
    cr_assert(now_ms() - t0 >= 350, "5 samples took only %llu ms",
              (unsigned long long)(now_ms() - t0));
    cr_assert(eq(str, p.err, ""), "a healthy cluster gives no warning: %s", p.err);
    assert_one_json_object(p.out);
    cr_assert(jint(p.out, "pings") >= 5);
    cr_assert(eq(str, jstr(p.out, "clock_policy", buf, sizeof(buf)), "warn"));
    cr_assert(jbool(p.out, "restart_guard"));
    cr_assert(eq(int, jint(p.out, "restart_guard_ms"), 0));
    cr_assert(eq(int, jint(p.out, "counting"), tc_n()));
    cr_assert(eq(int, jint(p.out, "excluded"), 0));
    for (int i = 0; i < tc_n(); i++) {
        const char *m = jindex(jreq(p.out, "masters"), i);
        double lo, hi;

        cr_assert(m != NULL);
        cr_assert(jbool(m, "reachable"), "masters[%d]", i);
        lo = jdouble(m, "clock_rate_lo");
        hi = jdouble(m, "clock_rate_hi");
        /* Same machine, same clock: the true rate is 1, and the interval
         * contains it; latency only widens it. */
        cr_assert(lo >= 0.9 && hi <= 1.1 && lo <= hi, "masters[%d] rate %f..%f", i, lo, hi);
        cr_assert(lo <= 1.001 && hi >= 0.999, "masters[%d] rate %f..%f excludes 1", i, lo, hi);
        cr_assert(jint(m, "clock_samples") >= 2, "masters[%d]", i);
        cr_assert(eq(int, jint(m, "clock_jumps"), 0));
        cr_assert(eq(int, jint(m, "clock_rate_faults"), 0));
        cr_assert(jbool(m, "clock_trusted"), "masters[%d]", i);
        cr_assert(is_hex40(jstr(m, "run_id", buf, sizeof(buf))), "run_id '%s'", buf);
        cr_assert(jint(m, "uptime_s") >= 0);
        cr_assert(yes(!jbool(m, "aof_always")), "with-cluster.sh masters have no AOF");
        cr_assert(yes(!jbool(m, "excluded")), "masters[%d]", i);
        cr_assert(jnull(m, "excluded_why"));
        jint(m, "clock_offset_us");
    }
    cli_free(&p);

    /* One sample: quick, and the rates are not known yet (null). The run_id
     * comes from the handshake, so it is there at once. */
    cr_assert(eq(int, cli(&p, "ping", "--samples", "1", "--no-restart-guard", "--json"), 0));
    assert_one_json_object(p.out);
    cr_assert(eq(int, jint(p.out, "pings"), 1));
    cr_assert(yes(!jbool(p.out, "restart_guard")));
    {
        const char *m = jindex(jreq(p.out, "masters"), 0);

        cr_assert(jnull(m, "clock_rate_lo") || jdouble(m, "clock_rate_lo") > 0);
        cr_assert(is_hex40(jstr(m, "run_id", buf, sizeof(buf))), "run_id '%s'", buf);
    }
    cli_free(&p);

    /* No probes with the monitor off: one ping, nothing sampled. */
    cr_assert(eq(int, cli(&p, "ping", "--clock-policy", "off", "--json"), 0));
    assert_one_json_object(p.out);
    cr_assert(eq(str, jstr(p.out, "clock_policy", buf, sizeof(buf)), "off"));
    cr_assert(eq(int, jint(p.out, "pings"), 1));
    cr_assert(eq(int, jint(jindex(jreq(p.out, "masters"), 0), "clock_samples"), 0));
    cr_assert(jnull(jindex(jreq(p.out, "masters"), 0), "clock_rate_hi"));
    cli_free(&p);

    /* The table: one line per master with the new columns, and a summary. */
    cr_assert(eq(int, cli(&p, "--clock-policy", "exclude", "ping", "--samples", "3"), 0));
    cr_assert(eq(int, count_lines(p.out), (size_t)tc_n() + 2), "%s", p.out);
    cr_assert(strstr(p.out, "CLOCK_RATE") != NULL && strstr(p.out, "RUN_ID") != NULL &&
              strstr(p.out, "QUORUM") != NULL, "%s", p.out);
    cr_assert(strstr(p.out, "trusted") != NULL && strstr(p.out, "counts") != NULL, "%s", p.out);
    cr_assert(strstr(p.out, "clock policy exclude, restart guard on") != NULL, "%s", p.out);
    cli_free(&p);
}

Test(cli, restart_guard_window_excludes_masters_that_started_inside_it)
{
    struct cli_proc p;
    char res[128], buf[160];
    int excluded = 0;

    tc_resource(res, sizeof(res), NULL);
    /* A window longer than any master has been up: none may vote, so the
     * lock fails as "no quorum" (69), and says why. */
    cr_assert(eq(int, cli(&p, "lock", res, "--restart-guard-ms", "2147483647"), 69),
              "stderr: %s", p.err);
    cr_assert(eq(str, p.out, ""));
    cr_assert(strstr(p.err, "restart guard") != NULL, "stderr: %s", p.err);
    cli_free(&p);

    cr_assert(eq(int, cli(&p, "lock", res, "--restart-guard-ms", "2147483647", "--json"), 69));
    assert_one_json_object(p.out);
    cr_assert(eq(str, jstr(jreq(p.out, "error"), "code", buf, sizeof(buf)), "ENOQUORUM"));
    cr_assert(jnull(p.out, "token"));
    assert_votes(p.out, tc_n());
    for (int i = 0; i < tc_n(); i++) {
        const char *m = jindex(jreq(p.out, "masters"), i);

        jstr(m, "vote", buf, sizeof(buf));
        cr_assert(strcmp(buf, "ok") != 0, "masters[%d] voted ok inside the guard window", i);
        if (strcmp(buf, "excluded") == 0) {
            excluded++;
            cr_assert(eq(str, jstr(m, "error", buf, sizeof(buf)), "EUNTRUSTED"));
            cr_assert(strstr(jstr(m, "detail", buf, sizeof(buf)), "restart guard") != NULL,
                      "detail: %s", buf);
        }
    }
    /* Decided as soon as a quorum was impossible: at least N - quorum + 1. */
    cr_assert(excluded >= tc_n() - (tc_n() / 2 + 1) + 1, "%d excluded: %s", excluded, p.out);
    cli_free(&p);

    /* ping shows every master excluded, and warns that no quorum can form;
     * it still exits 0: every master answered. */
    cr_assert(eq(int, cli(&p, "ping", "--samples", "1", "--restart-guard-ms", "2147483647",
                          "--json"), 0), "stderr: %s", p.err);
    assert_one_json_object(p.out);
    cr_assert(eq(int, jint(p.out, "counting"), 0));
    cr_assert(eq(int, jint(p.out, "excluded"), tc_n()));
    cr_assert(eq(int, jint(p.out, "restart_guard_ms"), 2147483647));
    {
        const char *m = jindex(jreq(p.out, "masters"), 0);

        cr_assert(jbool(m, "excluded"));
        cr_assert(strstr(jstr(m, "excluded_why", buf, sizeof(buf)), "restart guard") != NULL,
                  "%s", buf);
    }
    cr_assert(strstr(p.err, "count toward a quorum") != NULL, "stderr: %s", p.err);
    cli_free(&p);

    /* run is refused the same way, before CMD starts. */
    cr_assert(eq(int, cli(&p, "run", res, "--restart-guard-ms", "2147483647", "--", "sh", "-c",
                          "echo ran"), 69), "stderr: %s", p.err);
    cr_assert(strstr(p.out, "ran") == NULL);
    cli_free(&p);

    /* It is the guard: without it the same lock is granted. */
    cr_assert(eq(int, cli(&p, "lock", res, "--no-restart-guard", "--ttl", "5000"), 0),
              "stderr: %s", p.err);
    cr_assert(is_token(p.out));
    cli_free(&p);
}

/* tests/helpers/clockshim.so, built next to this test, or NULL. */
static const char *clockshim_path(void)
{
    static char path[PATH_MAX + 32];
    char exe[PATH_MAX];
    ssize_t n;

    if (getenv("REDLOCK_CLOCKSHIM") != NULL)
        return getenv("REDLOCK_CLOCKSHIM");
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(path, sizeof(path), "%s/clockshim.so", exe);
    return access(path, R_OK) == 0 ? path : NULL;
}

Test(cli, ping_shows_a_fast_clock_untrusted_and_exclude_excludes_it, .timeout = 60)
{
    struct cli_proc p;
    char priv[64], masters[256], clockfile[SCRATCH_MAX + 16], buf[160];
    const char *shim = clockshim_path();
    const char *restart0[] = {"restart", "0", NULL};
    FILE *f;

    if (shim == NULL)
        cr_skip_test("tests/clockshim.so is not built (ninja builds it by default)");
    /* A private master (on the slot's last spare port: +5..+8 are other
     * tests') restarted with its clock at x1.2: 20 ms gained per 100 ms
     * probe, under the 25 ms that would count as a jump, so the monitor
     * reports a rate fault. Two shared masters complete the three: ping
     * only reads their TIME. */
    private_start(1, 9, NULL, priv, sizeof(priv));
    snprintf(masters, sizeof(masters), "%s,%s,%s", priv, tc_addr(0), tc_addr(1));
    snprintf(clockfile, sizeof(clockfile), "%s/clock-0", tmpdir);
    f = fopen(clockfile, "w");
    cr_assert(f != NULL);
    fputs("1.2 0\n", f);
    fclose(f);
    private_kill(0);
    setenv("LD_PRELOAD", shim, 1);
    setenv("CLOCKSHIM_FILE", clockfile, 1);
    cr_assert(eq(int, private_cluster(restart0), 0));
    unsetenv("LD_PRELOAD");
    unsetenv("CLOCKSHIM_FILE");

    /* warn (default): flagged and warned about, still counted. */
    cr_assert(eq(int, cli(&p, "ping", "--json", "--masters", masters), 0), "stderr: %s", p.err);
    assert_one_json_object(p.out);
    {
        const char *m0 = jindex(jreq(p.out, "masters"), 0);
        const char *m1 = jindex(jreq(p.out, "masters"), 1);

        cr_assert(jdouble(m0, "clock_rate_lo") > 1.01 && jdouble(m0, "clock_rate_hi") < 1.5,
                  "%s", m0);
        cr_assert(jint(m0, "clock_rate_faults") >= 1);
        cr_assert(yes(!jbool(m0, "clock_trusted")));
        cr_assert(yes(!jbool(m0, "excluded")));
        cr_assert(jbool(m1, "clock_trusted"));
        cr_assert(jdouble(m1, "clock_rate_hi") < 1.01);
    }
    cr_assert(eq(int, jint(p.out, "counting"), 3));
    /* The event hook: one warning line per event (a jump, if the shim's
     * clock stepped between two probes, is reported instead of the rate). */
    cr_assert(strstr(p.err, "redlock-cli: warning: master 127.0.0.1:") != NULL &&
              (strstr(p.err, "clock runs at") != NULL || strstr(p.err, "clock jumped") != NULL),
              "stderr: %s", p.err);
    cli_free(&p);

    /* exclude: the same master does not count toward a quorum. */
    cr_assert(eq(int, cli(&p, "ping", "--json", "--clock-policy", "exclude", "--masters",
                          masters), 0), "stderr: %s", p.err);
    assert_one_json_object(p.out);
    {
        const char *m0 = jindex(jreq(p.out, "masters"), 0);

        cr_assert(jbool(m0, "excluded"));
        cr_assert(strstr(jstr(m0, "excluded_why", buf, sizeof(buf)), "clock") != NULL, "%s",
                  buf);
        cr_assert(yes(!jbool(jindex(jreq(p.out, "masters"), 2), "excluded")));
    }
    cr_assert(eq(int, jint(p.out, "counting"), 2));
    cli_free(&p);

    /* -q silences the warning; off takes no samples at all. */
    cr_assert(eq(int, cli(&p, "-q", "ping", "--clock-policy", "off", "--masters", masters), 0));
    cr_assert(eq(str, p.err, ""));
    cr_assert(strstr(p.out, "untrusted") == NULL, "%s", p.out);
    cli_free(&p);
}

/* ------------------------------------------------------------------------ */
/* --json                                                                   */
/* ------------------------------------------------------------------------ */

static void assert_votes(const char *doc, int n)
{
    const char *masters = jreq(doc, "masters"), *m;
    char buf[128];

    cr_assert(yes(*masters == '['));
    for (int i = 0; i < n; i++) {
        m = jindex(masters, i);
        cr_assert(m != NULL, "masters[%d] missing", i);
        cr_assert(eq(str, jstr(m, "addr", buf, sizeof(buf)), (char *)tc_addr(i)));
        jstr(m, "vote", buf, sizeof(buf));
        cr_assert(strstr(" none pending ok held gone timeout down error excluded ", buf) != NULL,
                  "vote '%s'", buf);
        jint(m, "latency_us");
        jreq(m, "detail");
        jreq(m, "error");
    }
    cr_assert(jindex(masters, n) == NULL);
}

Test(cli, json_fields_of_every_command)
{
    struct cli_proc p;
    char res[128], token[64], buf[128];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, cli(&p, "lock", res, "--ttl", "20000", "--json"), 0), "%s", p.err);
    assert_one_json_object(p.out);
    cr_assert(eq(str, jstr(p.out, "command", buf, sizeof(buf)), "lock"));
    cr_assert(jbool(p.out, "ok"));
    cr_assert(eq(int, jint(p.out, "exit"), 0));
    cr_assert(jnull(p.out, "error"));
    cr_assert(eq(str, jstr(p.out, "resource", buf, sizeof(buf)), res));
    jstr(p.out, "token", token, sizeof(token));
    cr_assert(eq(sz, strlen(token), 32));
    cr_assert(eq(int, jint(p.out, "ttl_ms"), 20000));
    cr_assert(jint(p.out, "validity_ms") > 19000 && jint(p.out, "validity_ms") < 20000);
    cr_assert(jint(p.out, "acquired_on") >= 3);
    cr_assert(eq(int, jint(p.out, "quorum"), tc_n() / 2 + 1));
    cr_assert(eq(int, jint(p.out, "n_masters"), tc_n()));
    cr_assert(jint(p.out, "elapsed_us") > 0);
    cr_assert(eq(int, jint(p.out, "attempts"), 1));
    jint(p.out, "waited_ms");
    assert_votes(p.out, tc_n());
    cli_free(&p);

    /* A failure is one object too, with the error's code. */
    cr_assert(eq(int, cli(&p, "lock", res, "--json"), 75));
    assert_one_json_object(p.out);
    cr_assert(yes(!jbool(p.out, "ok")));
    cr_assert(eq(int, jint(p.out, "exit"), 75));
    cr_assert(eq(str, jstr(jreq(p.out, "error"), "code", buf, sizeof(buf)), "ECONFLICT"));
    jreq(jreq(p.out, "error"), "message");
    cr_assert(jnull(p.out, "token"));
    assert_votes(p.out, tc_n());
    cli_free(&p);

    cr_assert(eq(int, cli(&p, "status", res, "--json"), 0));
    assert_one_json_object(p.out);
    cr_assert(jbool(p.out, "held"));
    cr_assert(eq(str, jstr(p.out, "majority_token", buf, sizeof(buf)), token));
    cr_assert(eq(int, jint(p.out, "held_on"), tc_n()));
    cr_assert(eq(int, jint(p.out, "answered"), tc_n()));
    {
        const char *m = jindex(jreq(p.out, "masters"), 0);

        cr_assert(jbool(m, "reachable"));
        cr_assert(jbool(m, "held"));
        cr_assert(jint(m, "pttl_ms") > 0);
        cr_assert(eq(str, jstr(m, "token", buf, sizeof(buf)), token));
        jint(m, "rtt_us");
    }
    cli_free(&p);

    cr_assert(eq(int, cli(&p, "ping", "--json"), 0));
    assert_one_json_object(p.out);
    cr_assert(eq(int, jint(p.out, "reachable"), tc_n()));
    {
        const char *m = jindex(jreq(p.out, "masters"), tc_n() - 1);

        cr_assert(eq(str, jstr(m, "addr", buf, sizeof(buf)), (char *)tc_addr(tc_n() - 1)));
        cr_assert(jbool(m, "reachable"));
        jint(m, "rtt_us");
        jint(m, "clock_offset_us");
    }
    cli_free(&p);

    cr_assert(eq(int, cli(&p, "extend", res, token, "--ttl", "20000", "--json"), 0));
    assert_one_json_object(p.out);
    cr_assert(jint(p.out, "extended_on") >= 3);
    assert_votes(p.out, tc_n());
    cli_free(&p);

    cr_assert(eq(int, cli(&p, "unlock", res, token, "--json"), 0));
    assert_one_json_object(p.out);
    cr_assert(eq(str, jstr(p.out, "command", buf, sizeof(buf)), "unlock"));
    cr_assert(jint(p.out, "released_on") >= 3);
    assert_votes(p.out, tc_n());
    cli_free(&p);

    cr_assert(eq(int, cli(&p, "run", res, "--json", "--", "true"), 0), "%s", p.err);
    assert_one_json_object(p.out);
    cr_assert(eq(str, jstr(p.out, "command", buf, sizeof(buf)), "run"));
    cr_assert(jbool(p.out, "released"));
    cr_assert(yes(!jbool(p.out, "lock_lost")));
    jint(p.out, "extends");
    cr_assert(eq(int, jint(jreq(p.out, "child"), "exit_status"), 0));
    cr_assert(jnull(jreq(p.out, "child"), "signal"));
    cli_free(&p);
}

Test(cli, json_escapes_any_resource_bytes)
{
    struct cli_proc p;
    char res[160];
    const char *hex;

    /* Quote, backslash, control byte, newline, a byte that is not UTF-8,
     * and valid UTF-8 (é). */
    snprintf(res, sizeof(res), "%s \"q\" \\ \x01\n \xff \xc3\xa9",
             tc_resource((char[128]){0}, 128, NULL));
    cr_assert(eq(int, cli(&p, "lock", res, "--json"), 0), "%s", p.err);
    assert_one_json_object(p.out);
    cr_assert(strstr(p.out, "\\\"q\\\" \\\\ \\u0001\\n \\u00ff \xc3\xa9") != NULL, "%s", p.out);
    hex = jreq(p.out, "resource_hex");
    cr_assert(yes(*hex == '"'));
    cr_assert(strncmp(hex + 1 + 2 * (strlen(res) - 4), "ff20c3a9\"", 9) == 0, "%s", hex);
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "status", res, "--json"), 0));
    assert_one_json_object(p.out);
    cr_assert(jbool(p.out, "held"));
    cli_free(&p);
}

/* ------------------------------------------------------------------------ */
/* run                                                                      */
/* ------------------------------------------------------------------------ */

Test(cli, run_exits_with_the_command_status_and_releases)
{
    struct cli_proc p;
    char res[128];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, cli(&p, "run", res, "--", "sh", "-c",
                          "test -n \"$REDLOCK_TOKEN\" && test \"$REDLOCK_RESOURCE\" = \"$1\" "
                          "&& exit 7", "sh", res), 7), "stderr: %s", p.err);
    cli_free(&p);
    cr_assert(eq(int, tc_key_count(res, strlen(res)), 0), "not released");
    /* Killed by a signal: 128 + signal, as a shell reports it. */
    cr_assert(eq(int, cli(&p, "run", res, "--", "sh", "-c", "kill -USR1 $$"), 128 + SIGUSR1));
    cli_free(&p);
}

Test(cli, run_keeps_the_lock_across_many_ttls, .timeout = 60)
{
    struct cli_proc p;
    char res[128];

    tc_resource(res, sizeof(res), NULL);
    /* ttl 1 s, CMD 4.5 s: after 4.5 ttls CMD checks, through the CLI
     * itself, that its token still holds a majority. The watchdog extends
     * whenever half the ttl is left, about every 0.49 s: 9 extensions. */
    cr_assert(eq(int, cli(&p, "run", res, "--ttl", "1000", "--json", "--", "sh", "-c",
                          "sleep 4.5; s=$(\"$REDLOCK_CLI\" status \"$REDLOCK_RESOURCE\") || exit 8;"
                          " case \"$s\" in *\"held by $REDLOCK_TOKEN on a majority\"*) exit 0;;"
                          " esac; echo \"$s\" >&2; exit 9"),
                 0), "stderr: %s", p.err);
    assert_one_json_object(p.out);
    cr_assert(jint(p.out, "extends") >= 8, "extends: %lld", jint(p.out, "extends"));
    cr_assert(eq(int, jint(p.out, "extend_failures"), 0));
    cr_assert(eq(int, jint(p.out, "watchdog_restarts"), 0));
    cli_free(&p);
}

Test(cli, run_passes_our_descriptors_to_cmd_but_not_the_masters_sockets)
{
    struct cli_proc p;
    char res[128];

    tc_resource(res, sizeof(res), NULL);
    /* CMD lists its own descriptors: the caller's 0-3, nothing else (the
     * CLI's connections to the masters are open while CMD runs). No pipeline
     * in CMD: sh would hold the pipe's ends while ls looks. */
    fd3_path = "/dev/null";
    cr_assert(eq(int, cli(&p, "run", res, "--", "sh", "-c", "ls /proc/$$/fd"), 0),
              "%s", p.err);
    fd3_path = NULL;
    cr_assert(eq(str, p.out, "0\n1\n2\n3\n"));
    cli_free(&p);
}

/* Wait until CMD (started by `run`) writes its pid into the FIFO. */
static pid_t read_pid_from_fifo(const char *fifo)
{
    char buf[32] = {0};
    int fd = open(fifo, O_RDONLY);   /* blocks until CMD opens it */
    ssize_t n;

    cr_assert(fd >= 0, "open %s: %s", fifo, strerror(errno));
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    cr_assert(n > 0, "nothing read from the FIFO");
    return (pid_t)atol(buf);
}

static int process_gone(pid_t pid)
{
    char path[64], state = 0;
    FILE *f;

    if (kill(pid, 0) < 0 && errno == ESRCH)
        return 1;
    /* A zombie re-parented to a lazy init is gone for our purposes. */
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 1;
    if (fscanf(f, "%*d %*s %c", &state) != 1)
        state = 0;
    fclose(f);
    return state == 'Z';
}

Test(cli, run_exits_124_when_a_majority_loses_the_key)
{
    struct cli_proc p;
    char res[128], fifo[SCRATCH_MAX + 32], script[SCRATCH_MAX + 128];
    const char *args[16];
    pid_t child;
    uint64_t t0;

    tc_resource(res, sizeof(res), NULL);
    snprintf(fifo, sizeof(fifo), "%s/fifo", tmpdir);
    cr_assert(mkfifo(fifo, 0600) == 0);
    snprintf(script, sizeof(script), "echo $$ > '%s'; exec sleep 60", fifo);
    args[0] = "run";
    args[1] = res;
    args[2] = "--ttl";
    args[3] = "1000";
    args[4] = "--kill-after";
    args[5] = "500";
    args[6] = "--";
    args[7] = "sh";
    args[8] = "-c";
    args[9] = script;
    args[10] = NULL;
    cli_start(&p, args, NULL);
    child = read_pid_from_fifo(fifo);

    /* Another party deletes the key on a majority: the next extend finds the
     * token gone, and CMD is stopped. */
    t0 = now_ms();
    for (int i = 0; i < tc_n() / 2 + 1; i++) {
        redisReply *r = tc_cmd(i, "DEL %s", res);

        cr_assert(r != NULL);
        freeReplyObject(r);
    }
    cr_assert(eq(int, cli_wait(&p), 124), "stderr: %s", p.err);
    cr_assert(now_ms() - t0 < 1000 + 500 + 1000, "took %llu ms",
              (unsigned long long)(now_ms() - t0));
    cr_assert(process_gone(child), "CMD (pid %ld) still runs", (long)child);
    cr_assert(strstr(p.err, "lock lost") != NULL, "%s", p.err);
    cli_free(&p);
}

Test(cli, run_exits_124_when_a_majority_of_masters_dies, .timeout = 60)
{
    struct cli_proc p;
    char res[128], fifo[SCRATCH_MAX + 32], script[SCRATCH_MAX * 2 + 256], priv[256], masters[512];
    const char *args[16];
    pid_t child, grandchild;
    uint64_t t0;

    tc_resource(res, sizeof(res), NULL);
    /* 2 shared masters + 3 private ones that this test may kill. */
    private_start(3, 5, tc_password(), priv, sizeof(priv));
    snprintf(masters, sizeof(masters), "%s,%s,%s", tc_addr(0), tc_addr(1), priv);
    snprintf(fifo, sizeof(fifo), "%s/fifo", tmpdir);
    cr_assert(mkfifo(fifo, 0600) == 0);
    /* CMD starts a grandchild, then reports both pids. */
    snprintf(script, sizeof(script), "sleep 60 & echo $$ $! > '%s'; wait", fifo);
    args[0] = "run";
    args[1] = res;
    args[2] = "--masters";
    args[3] = masters;
    args[4] = "--ttl";
    args[5] = "1500";
    args[6] = "--json";
    args[7] = "--";
    args[8] = "sh";
    args[9] = "-c";
    args[10] = script;
    args[11] = NULL;
    cli_start(&p, args, NULL);
    {
        char buf[64] = {0};
        int fd = open(fifo, O_RDONLY);
        long a = 0, b = 0;

        cr_assert(fd >= 0);
        cr_assert(read(fd, buf, sizeof(buf) - 1) > 0);
        close(fd);
        cr_assert(eq(int, sscanf(buf, "%ld %ld", &a, &b), 2), "'%s'", buf);
        child = (pid_t)a;
        grandchild = (pid_t)b;
    }
    t0 = now_ms();
    for (int i = 0; i < 3; i++)
        private_kill(i);
    /* The watchdog's extensions now fail (no quorum), and run starts it
     * again while validity remains; once a third of the ttl is left, CMD
     * gets SIGTERM, its whole process group with it. */
    cr_assert(eq(int, cli_wait(&p), 124), "stderr: %s", p.err);
    cr_assert(now_ms() - t0 < 1500 + 2000 + 1000, "took %llu ms",
              (unsigned long long)(now_ms() - t0));
    cr_assert(process_gone(child), "CMD (pid %ld) still runs", (long)child);
    cr_assert(process_gone(grandchild), "CMD's child (pid %ld) still runs", (long)grandchild);
    cr_assert(strstr(p.err, "lock lost") != NULL, "%s", p.err);
    assert_one_json_object(p.out);
    {
        char code[32];

        cr_assert(jbool(p.out, "lock_lost"));
        cr_assert(yes(!jbool(p.out, "limit_reached")));
        cr_assert(jint(p.out, "extend_failures") >= 1, "%s", p.out);
        cr_assert(eq(str, jstr(jreq(p.out, "error"), "code", code, sizeof(code)), "ENOQUORUM"),
                  "%s", p.out);
    }
    cli_free(&p);
}

Test(cli, racing_runs_never_overlap, .timeout = 90)
{
    enum { RACERS = 3 };
    struct cli_proc p[RACERS];
    char res[128], stamps[SCRATCH_MAX + 32], script[SCRATCH_MAX * 2 + 256];
    long long start[RACERS], end[RACERS];
    int n_start = 0, n_end = 0;
    FILE *f;
    char word[16];
    long long t;

    tc_resource(res, sizeof(res), NULL);
    snprintf(stamps, sizeof(stamps), "%s/stamps", tmpdir);
    /* Each CMD outlives the ttl (1.3 s vs 1 s), so exclusion depends on the
     * extends too. Stamps are CLOCK_REALTIME ns, appended in one write. */
    snprintf(script, sizeof(script),
             "echo start $(date +%%s%%N) >> '%s'; sleep 1.3; echo end $(date +%%s%%N) >> '%s'",
             stamps, stamps);
    for (int i = 0; i < RACERS; i++) {
        const char *args[] = {"run", res, "--ttl", "1000", "--wait", "30000", "--retry-delay",
                              "50", "--", "sh", "-c", script, NULL};

        cli_start(&p[i], args, NULL);
    }
    for (int i = 0; i < RACERS; i++) {
        cr_assert(eq(int, cli_wait(&p[i]), 0), "racer %d: %s", i, p[i].err);
        cli_free(&p[i]);
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

Test(cli, run_forwards_sigterm_and_releases)
{
    struct cli_proc p;
    char res[128], fifo[SCRATCH_MAX + 32], script[SCRATCH_MAX + 128];
    const char *args[16];

    tc_resource(res, sizeof(res), NULL);
    snprintf(fifo, sizeof(fifo), "%s/fifo", tmpdir);
    cr_assert(mkfifo(fifo, 0600) == 0);
    snprintf(script, sizeof(script),
             "trap 'exit 7' TERM; echo $$ > '%s'; while :; do sleep 0.05; done", fifo);
    args[0] = "run";
    args[1] = res;
    args[2] = "--";
    args[3] = "sh";
    args[4] = "-c";
    args[5] = script;
    args[6] = NULL;
    cli_start(&p, args, NULL);
    read_pid_from_fifo(fifo);
    cr_assert(kill(p.pid, SIGTERM) == 0);
    /* CMD's TERM trap decides the status; the lock is released after. */
    cr_assert(eq(int, cli_wait(&p), 7), "stderr: %s", p.err);
    cr_assert(eq(int, tc_key_count(res, strlen(res)), 0), "not released");
    cli_free(&p);
}

Test(cli, run_forwards_sigint)
{
    struct cli_proc p;
    char res[128], fifo[SCRATCH_MAX + 32], script[SCRATCH_MAX + 128];
    const char *args[16];

    tc_resource(res, sizeof(res), NULL);
    snprintf(fifo, sizeof(fifo), "%s/fifo", tmpdir);
    cr_assert(mkfifo(fifo, 0600) == 0);
    snprintf(script, sizeof(script), "echo $$ > '%s'; exec sleep 60", fifo);
    args[0] = "run";
    args[1] = res;
    args[2] = "--";
    args[3] = "sh";
    args[4] = "-c";
    args[5] = script;
    args[6] = NULL;
    cli_start(&p, args, NULL);
    read_pid_from_fifo(fifo);
    cr_assert(kill(p.pid, SIGINT) == 0);
    cr_assert(eq(int, cli_wait(&p), 128 + SIGINT), "stderr: %s", p.err);
    cr_assert(eq(int, tc_key_count(res, strlen(res)), 0), "not released");
    cli_free(&p);
}

Test(cli, run_exits_126_and_127_when_cmd_cannot_start)
{
    struct cli_proc p;
    char res[128], noexec[SCRATCH_MAX + 32];
    int fd;

    tc_resource(res, sizeof(res), NULL);
    snprintf(noexec, sizeof(noexec), "%s/not-executable", tmpdir);
    fd = open(noexec, O_WRONLY | O_CREAT, 0644);
    cr_assert(fd >= 0);
    cr_assert(write(fd, "#!/bin/sh\nexit 0\n", 17) == 17);
    close(fd);

    cr_assert(eq(int, cli(&p, "run", res, "--", noexec), 126), "%s", p.err);
    cr_assert(eq(int, count_lines(p.err), 1), "%s", p.err);
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "run", res, "--", tmpdir), 126), "%s", p.err);   /* a directory */
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "run", res, "--", "redlock-no-such-command"), 127));
    cr_assert(strstr(p.err, "command not found") != NULL, "%s", p.err);
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "run", res, "--json", "--", "/no/such/file"), 127));
    assert_one_json_object(p.out);
    cr_assert(eq(int, jint(p.out, "exit"), 127));
    cli_free(&p);
    /* The lock was released each time. */
    cr_assert(eq(int, tc_key_count(res, strlen(res)), 0));
}

/* ------------------------------------------------------------------------ */
/* Sets, fencing tokens, the watchdog, waiting without polling              */
/* ------------------------------------------------------------------------ */

/* The token on the first line of @out into @token (33 bytes). */
static void take_token(const char *out, char *token)
{
    cr_assert(strlen(out) >= 33 && out[32] == '\n', "stdout: '%s'", out);
    memcpy(token, out, 32);
    token[32] = '\0';
}

/* `lock --fence` prints "TOKEN\nFENCE\n": the token into @token, the fence
 * returned. */
static unsigned long long take_token_and_fence(const char *out, char *token)
{
    const char *f = out + 33;
    char *end;
    unsigned long long v;

    take_token(out, token);
    cr_assert(yes(*f >= '0' && *f <= '9'), "no fence on the second line: '%s'", out);
    v = strtoull(f, &end, 10);
    cr_assert(eq(str, end, "\n"), "stdout is not token and fence: '%s'", out);
    return v;
}

/* Array element @i, a string without escapes, into @buf. */
static char *jelem_str(const char *arr, int i, char *buf, size_t size)
{
    const char *v = jindex(arr, i), *e;

    cr_assert(v != NULL && *v == '"', "element %d is not a string", i);
    e = strchr(v + 1, '"');
    cr_assert(e != NULL && (size_t)(e - v - 1) < size);
    memcpy(buf, v + 1, (size_t)(e - v - 1));
    buf[e - v - 1] = '\0';
    return buf;
}

static long long master_pttl(int i, const char *key)
{
    redisReply *r = tc_cmd(i, "PTTL %s", key);
    long long v;

    cr_assert(r != NULL && r->type == REDIS_REPLY_INTEGER);
    v = r->integer;
    freeReplyObject(r);
    return v;
}

Test(cli, lock_of_a_set_is_all_or_none)
{
    struct cli_proc p;
    char a[128], b[128], c[128], x[128], tb[40], t[40], buf[160];

    tc_resource(a, sizeof(a), NULL);
    tc_resource(b, sizeof(b), NULL);
    tc_resource(c, sizeof(c), NULL);
    tc_resource(x, sizeof(x), NULL);
    cr_assert(eq(int, cli(&p, "lock", b, "--ttl", "30000"), 0), "stderr: %s", p.err);
    take_token(p.out, tb);
    cli_free(&p);

    /* One member is held elsewhere: the set is refused as a whole (75),
     * and no other member is taken, on any master. */
    cr_assert(eq(int, cli(&p, "lock", a, b, c), 75), "stderr: %s", p.err);
    cr_assert(eq(str, p.out, ""));
    cr_assert(strstr(p.err, "held by another client") != NULL, "stderr: %s", p.err);
    cr_assert(strstr(p.err, a) != NULL, "the message names the set: %s", p.err);
    cli_free(&p);
    cr_assert(eq(int, tc_key_count(a, strlen(a)), 0), "a member was taken");
    cr_assert(eq(int, tc_key_count(c, strlen(c)), 0), "a member was taken");
    cr_assert(eq(int, holders(b, tb), tc_n()));

    cr_assert(eq(int, cli(&p, "lock", a, b, c, "--json"), 75));
    assert_one_json_object(p.out);
    cr_assert(eq(str, jstr(jreq(p.out, "error"), "code", buf, sizeof(buf)), "ECONFLICT"));
    cr_assert(eq(str, jstr(p.out, "resource", buf, sizeof(buf)), a));
    cr_assert(eq(str, jelem_str(jreq(p.out, "resources"), 0, buf, sizeof(buf)), a));
    cr_assert(eq(str, jelem_str(jreq(p.out, "resources"), 1, buf, sizeof(buf)), b));
    cr_assert(eq(str, jelem_str(jreq(p.out, "resources"), 2, buf, sizeof(buf)), c));
    cr_assert(jindex(jreq(p.out, "resources"), 3) == NULL);
    cr_assert(jnull(p.out, "token"));
    cli_free(&p);
    cr_assert(eq(int, tc_key_count(a, strlen(a)), 0));
    cr_assert(eq(int, tc_key_count(c, strlen(c)), 0));

    /* Once b is free, the set is taken: every member, one token. */
    cr_assert(eq(int, cli(&p, "unlock", b, tb), 0), "stderr: %s", p.err);
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "lock", a, b, c, "--ttl", "5000"), 0), "stderr: %s", p.err);
    cr_assert(is_token(p.out), "stdout: '%s'", p.out);
    take_token(p.out, t);
    cli_free(&p);
    cr_assert(eq(int, holders(a, t), tc_n()));
    cr_assert(eq(int, holders(b, t), tc_n()));
    cr_assert(eq(int, holders(c, t), tc_n()));

    /* An overlapping set is refused, and takes nothing either. */
    cr_assert(eq(int, cli(&p, "lock", x, c), 75), "stderr: %s", p.err);
    cli_free(&p);
    cr_assert(eq(int, tc_key_count(x, strlen(x)), 0));

    /* extend and unlock take the same list, in any order, the token last. */
    cr_assert(eq(int, cli(&p, "extend", c, a, b, t, "--ttl", "60000", "--json"), 0),
              "stderr: %s", p.err);
    assert_one_json_object(p.out);
    cr_assert(jint(p.out, "extended_on") >= 3);
    cr_assert(eq(str, jelem_str(jreq(p.out, "resources"), 0, buf, sizeof(buf)), c));
    cli_free(&p);
    cr_assert(master_pttl(0, a) > 50000, "PTTL %lld", master_pttl(0, a));
    cr_assert(master_pttl(0, c) > 50000, "PTTL %lld", master_pttl(0, c));
    cr_assert(eq(int, cli(&p, "unlock", a, b, c, "0123456789abcdef0123456789abcdef"), 75),
              "stderr: %s", p.err);
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "extend", a, b, c, "not-the-token", "--ttl", "1000"), 75));
    cli_free(&p);
    /* The token forgotten: the last resource is taken for it, and the
     * failure says where the token goes. */
    cr_assert(eq(int, cli(&p, "unlock", a, b, c), 75), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "the token is the last word") != NULL, "stderr: %s", p.err);
    cli_free(&p);
    cr_assert(eq(int, holders(a, t), tc_n()));
    cr_assert(eq(int, holders(c, t), tc_n()));
    cr_assert(eq(int, cli(&p, "unlock", b, c, a, t), 0), "stderr: %s", p.err);
    cr_assert(eq(str, p.out, ""));
    cli_free(&p);
    cr_assert(eq(int, tc_key_count(a, strlen(a)), 0));
    cr_assert(eq(int, tc_key_count(b, strlen(b)), 0));
    cr_assert(eq(int, tc_key_count(c, strlen(c)), 0));
}

Test(cli_usage, a_set_holds_at_most_64_resources)
{
    static char names[66][8];
    const char *args[MAX_ARGS + 1];
    struct cli_proc p;
    size_t k = 0;

    args[k++] = "lock";
    for (int i = 0; i < 65; i++) {
        snprintf(names[i], sizeof(names[i]), "r%d", i);
        args[k++] = names[i];
    }
    args[k] = NULL;
    cli_start(&p, args, NULL);
    cr_assert(eq(int, cli_wait(&p), 64), "stderr: %s", p.err);
    cr_assert(eq(str, p.out, ""));
    cr_assert(eq(int, count_lines(p.err), 1), "%s", p.err);
    cr_assert(strstr(p.err, "64") != NULL, "%s", p.err);
    cli_free(&p);
    /* unlock: 64 resources and the token are fine as far as parsing goes;
     * 65 and the token are not. */
    args[0] = "unlock";
    args[k++] = "tok";
    args[k] = NULL;
    cli_start(&p, args, NULL);
    cr_assert(eq(int, cli_wait(&p), 64), "stderr: %s", p.err);
    cr_assert(strstr(p.err, "before TOKEN") != NULL, "%s", p.err);
    cli_free(&p);
}

Test(cli, fence_increases_between_successive_locks)
{
    struct cli_proc p;
    char res[128], t[40];
    unsigned long long f1, f2, f3;

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, cli(&p, "lock", res, "--fence", "--ttl", "30000"), 0), "stderr: %s",
              p.err);
    f1 = take_token_and_fence(p.out, t);
    cr_assert(f1 > 0);
    cr_assert(eq(str, p.err, ""));
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "unlock", res, t), 0));
    cli_free(&p);

    cr_assert(eq(int, cli(&p, "lock", res, "--fence", "--json"), 0), "stderr: %s", p.err);
    assert_one_json_object(p.out);
    f2 = (unsigned long long)jint(p.out, "fence");
    jstr(p.out, "token", t, sizeof(t));
    cr_assert(f2 > f1, "fence %llu after %llu", f2, f1);
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "unlock", res, t), 0));
    cli_free(&p);

    /* A holder that never released: the next one, after expiry, is later
     * still. */
    cr_assert(eq(int, cli(&p, "lock", res, "--fence", "--ttl", "300"), 0));
    f3 = take_token_and_fence(p.out, t);
    cr_assert(f3 > f2, "fence %llu after %llu", f3, f2);
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "lock", res, "--fence", "--wait", "5000", "--retry-delay", "50"),
                 0), "stderr: %s", p.err);
    cr_assert(take_token_and_fence(p.out, t) > f3);
    cli_free(&p);

    /* Without --fence: one line, and "fence": null. */
    cr_assert(eq(int, cli(&p, "unlock", res, t), 0));
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "lock", res, "--json"), 0));
    assert_one_json_object(p.out);
    cr_assert(jnull(p.out, "fence"));
    cli_free(&p);
}

Test(cli, run_exports_the_fence_and_every_resource)
{
    struct cli_proc p;
    char a[128], b[128], want[400];
    const char *env[] = {"REDLOCK_FENCE=stale", "REDLOCK_RESOURCES=stale", NULL};
    const char *nl;
    unsigned long long fence;

    tc_resource(a, sizeof(a), NULL);
    tc_resource(b, sizeof(b), NULL);
    cr_assert(eq(int, cli_env(&p, env, "run", a, b, "--fence", "--", "sh", "-c",
                              "printf '%s\\n%s\\n%s\\n' \"$REDLOCK_FENCE\" \"$REDLOCK_RESOURCE\" "
                              "\"$REDLOCK_RESOURCES\"", (const char *)NULL), 0),
              "stderr: %s", p.err);
    /* REDLOCK_FENCE, then REDLOCK_RESOURCE (the first), then
     * REDLOCK_RESOURCES: one name per line, in the order given. */
    fence = strtoull(p.out, NULL, 10);
    cr_assert(fence > 0, "stdout: %s", p.out);
    nl = strchr(p.out, '\n');
    cr_assert(nl != NULL);
    snprintf(want, sizeof(want), "%s\n%s\n%s\n", a, a, b);
    cr_assert(eq(str, (char *)nl + 1, want));
    cli_free(&p);
    cr_assert(eq(int, tc_key_count(a, strlen(a)), 0), "not released");
    cr_assert(eq(int, tc_key_count(b, strlen(b)), 0), "not released");

    /* The fence is in the JSON too, and grows. */
    cr_assert(eq(int, cli(&p, "run", a, "--fence", "--json", "--", "true"), 0), "%s", p.err);
    assert_one_json_object(p.out);
    cr_assert(yes((unsigned long long)jint(p.out, "fence") > fence), "%s", p.out);
    cli_free(&p);

    /* Without --fence there is no REDLOCK_FENCE, not even the caller's. */
    cr_assert(eq(int, cli_env(&p, env, "run", a, "--", "sh", "-c",
                              "printf '%s|%s\\n' \"${REDLOCK_FENCE-unset}\" \"$REDLOCK_RESOURCES\"",
                              (const char *)NULL), 0), "stderr: %s", p.err);
    snprintf(want, sizeof(want), "unset|%s\n", a);
    cr_assert(eq(str, p.out, want));
    cli_free(&p);
}

Test(cli, run_with_a_set_holds_every_member_until_cmd_exits, .timeout = 60)
{
    struct cli_proc p;
    char a[128], b[128];

    tc_resource(a, sizeof(a), NULL);
    tc_resource(b, sizeof(b), NULL);
    /* ttl 1 s, CMD 1.5 s: then every member is still held by CMD's token
     * on a majority, and a lock on one member alone is refused. */
    cr_assert(eq(int, cli(&p, "run", a, b, "--ttl", "1000", "--json", "--", "sh", "-c",
                          "sleep 1.5; printf '%s\\n' \"$REDLOCK_RESOURCES\" | "
                          "while IFS= read -r r; do s=$(\"$REDLOCK_CLI\" status \"$r\") || exit 8;"
                          " case \"$s\" in *\"held by $REDLOCK_TOKEN on a majority\"*) ;;"
                          " *) echo \"$s\" >&2; exit 9;; esac; done || exit $?;"
                          " \"$REDLOCK_CLI\" -q lock \"$1\"; test $? = 75 || exit 10", "sh", b),
                 0), "stderr: %s", p.err);
    assert_one_json_object(p.out);
    cr_assert(jint(p.out, "extends") >= 2, "extends: %lld", jint(p.out, "extends"));
    cr_assert(jbool(p.out, "released"));
    cli_free(&p);
    cr_assert(eq(int, tc_key_count(a, strlen(a)), 0), "not released");
    cr_assert(eq(int, tc_key_count(b, strlen(b)), 0), "not released");
}

Test(cli, wait_wakes_on_release_instead_of_sleeping_out_the_retry_delay)
{
    struct cli_proc holder, p;
    char res[128], t[40];
    const char *waiter[] = {"lock", NULL, "--wait", "10000", "--retry-delay", "5000", "--json",
                            NULL};
    const char *poller[] = {"lock", NULL, "--wait", "10000", "--retry-delay", "1000",
                            "--no-pubsub", "--json", NULL};
    uint64_t t0, t_rel;

    tc_resource(res, sizeof(res), NULL);
    waiter[1] = poller[1] = res;
    cr_assert(eq(int, cli(&holder, "lock", res, "--ttl", "30000"), 0));
    take_token(holder.out, t);
    cli_free(&holder);

    /* The waiter finds it held and waits; the holder unlocks after 300 ms.
     * With a 5 s retry delay, only the release's message can wake it. */
    t0 = now_ms();
    cli_start(&p, waiter, NULL);
    usleep(300000);
    cr_assert(eq(int, cli(&holder, "unlock", res, t), 0));
    t_rel = now_ms();
    cli_free(&holder);
    cr_assert(eq(int, cli_wait(&p), 0), "stderr: %s", p.err);
    cr_assert(now_ms() - t_rel < 1500, "got the lock %llu ms after the release",
              (unsigned long long)(now_ms() - t_rel));
    cr_assert(now_ms() - t0 < 2500, "took %llu ms", (unsigned long long)(now_ms() - t0));
    assert_one_json_object(p.out);
    cr_assert(jint(p.out, "attempts") >= 2, "the waiter never waited: %s", p.out);
    cr_assert(jint(p.out, "waited_ms") >= 200, "%s", p.out);
    jstr(p.out, "token", t, sizeof(t));
    cli_free(&p);

    /* With --no-pubsub the same waiter sleeps out its retry delay. */
    t0 = now_ms();
    cli_start(&p, poller, NULL);
    usleep(300000);
    cr_assert(eq(int, cli(&holder, "unlock", res, t), 0));
    cli_free(&holder);
    cr_assert(eq(int, cli_wait(&p), 0), "stderr: %s", p.err);
    cr_assert(now_ms() - t0 >= 950, "a poller got the lock after %llu ms",
              (unsigned long long)(now_ms() - t0));
    assert_one_json_object(p.out);
    cr_assert(jint(p.out, "attempts") >= 2, "the waiter never waited: %s", p.out);
    cli_free(&p);
}

Test(cli, run_stops_cmd_at_the_watchdog_limits, .timeout = 60)
{
    struct cli_proc p;
    char res[128], buf[64];
    uint64_t t0;

    tc_resource(res, sizeof(res), NULL);
    /* Two extensions (at about 0.49 s and 0.98 s), then the cap: CMD is
     * stopped as for a lost lock, while the lock is still valid. */
    t0 = now_ms();
    cr_assert(eq(int, cli(&p, "run", res, "--ttl", "1000", "--max-extends", "2", "--kill-after",
                          "500", "--json", "--", "sleep", "30"), 124), "stderr: %s", p.err);
    cr_assert(now_ms() - t0 < 5000, "took %llu ms", (unsigned long long)(now_ms() - t0));
    assert_one_json_object(p.out);
    cr_assert(jbool(p.out, "limit_reached"));
    cr_assert(jbool(p.out, "lock_lost"));
    cr_assert(eq(str, jstr(jreq(p.out, "error"), "code", buf, sizeof(buf)), "ELIMIT"));
    cr_assert(eq(int, jint(p.out, "extends"), 2), "%s", p.out);
    cr_assert(eq(int, jint(p.out, "max_extends"), 2));
    cr_assert(eq(int, jint(jreq(p.out, "child"), "signal"), SIGTERM));
    cr_assert(jbool(p.out, "released"), "the lock was still ours to release");
    cr_assert(strstr(p.err, "limit reached") != NULL, "stderr: %s", p.err);
    cli_free(&p);
    cr_assert(eq(int, tc_key_count(res, strlen(res)), 0));

    cr_assert(eq(int, cli(&p, "run", res, "--ttl", "1000", "--max-lease", "700", "--kill-after",
                          "500", "--json", "--", "sleep", "30"), 124), "stderr: %s", p.err);
    assert_one_json_object(p.out);
    cr_assert(jbool(p.out, "limit_reached"));
    cr_assert(eq(int, jint(p.out, "max_lease_ms"), 700));
    cr_assert(jint(p.out, "extends") <= 2, "%s", p.out);
    cli_free(&p);

    /* run's own defaults otherwise, for batch jobs: 1e6 extensions, 7 days. */
    cr_assert(eq(int, cli(&p, "run", res, "--json", "--", "true"), 0));
    assert_one_json_object(p.out);
    cr_assert(eq(int, jint(p.out, "max_extends"), 1000000));
    cr_assert(eq(int, jint(p.out, "max_lease_ms"), 604800000));
    cr_assert(yes(!jbool(p.out, "limit_reached")));
    cli_free(&p);
}

/* A line CMD (started by `run`) writes into the FIFO. */
static void read_line_from_fifo(const char *fifo, char *buf, size_t size)
{
    int fd = open(fifo, O_RDONLY);
    ssize_t n;

    cr_assert(fd >= 0, "open %s: %s", fifo, strerror(errno));
    n = read(fd, buf, size - 1);
    close(fd);
    cr_assert(n > 0, "nothing read from the FIFO");
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}

Test(cli, run_retries_a_failed_extend_while_validity_remains, .timeout = 60)
{
    struct cli_proc p;
    char res[128], fifo[SCRATCH_MAX + 32], script[SCRATCH_MAX + 128], token[64];
    const char *args[16];
    char *err = NULL;
    uint64_t t0;

    tc_resource(res, sizeof(res), NULL);
    snprintf(fifo, sizeof(fifo), "%s/fifo", tmpdir);
    cr_assert(mkfifo(fifo, 0600) == 0);
    snprintf(script, sizeof(script), "echo \"$REDLOCK_TOKEN\" > '%s'; sleep 4", fifo);
    args[0] = "run";
    args[1] = res;
    args[2] = "--ttl";
    args[3] = "3000";
    args[4] = "--json";
    args[5] = "--";
    args[6] = "sh";
    args[7] = "-c";
    args[8] = script;
    args[9] = NULL;
    cli_start(&p, args, NULL);
    read_line_from_fifo(fifo, token, sizeof(token));
    cr_assert(eq(sz, strlen(token), 32), "'%s'", token);

    /* A majority of the keys turns into lists: the watchdog's extension
     * (due when 1.5 s are left) fails with WRONGTYPE, which is not "held by
     * someone else": run warns and tries again every 300 ms while more than
     * a third of the ttl is left. Repaired in time, it carries on. */
    for (int i = 0; i < tc_n() / 2 + 1; i++) {
        redisReply *r = tc_cmd(i, "DEL %s", res);

        freeReplyObject(r);
        r = tc_cmd(i, "RPUSH %s x", res);
        cr_assert(r != NULL && r->type == REDIS_REPLY_INTEGER);
        freeReplyObject(r);
    }
    t0 = now_ms();
    while (now_ms() - t0 < 3000) {
        free(err);
        err = slurp(p.err_path);
        if (strstr(err, "extend failed") != NULL)
            break;
        usleep(10000);
    }
    cr_assert(strstr(err, "warning: run: extend failed") != NULL, "stderr: %s", err);
    free(err);
    for (int i = 0; i < tc_n() / 2 + 1; i++) {
        redisReply *r = tc_cmd(i, "DEL %s", res);

        freeReplyObject(r);
        r = tc_cmd(i, "SET %s %s PX 3000", res, token);
        cr_assert(r != NULL && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    cr_assert(eq(int, cli_wait(&p), 0), "stderr: %s", p.err);
    assert_one_json_object(p.out);
    cr_assert(jint(p.out, "extend_failures") >= 1, "%s", p.out);
    cr_assert(jint(p.out, "watchdog_restarts") >= 1, "%s", p.out);
    cr_assert(jint(p.out, "extends") >= 2, "%s", p.out);
    cr_assert(yes(!jbool(p.out, "lock_lost")));
    cr_assert(jbool(p.out, "released"));
    cli_free(&p);
    cr_assert(eq(int, tc_key_count(res, strlen(res)), 0), "not released");
}

/* ------------------------------------------------------------------------ */
/* Passwords                                                                */
/* ------------------------------------------------------------------------ */

Test(cli, password_from_file_or_env_is_used_and_never_printed, .timeout = 60)
{
    struct cli_proc p;
    char masters[128], pwfile[SCRATCH_MAX + 32], badfile[SCRATCH_MAX + 32];
    const char *secret = "cli s3cret pw";
    const char *env_good[] = {"REDLOCK_PASSWORD=cli s3cret pw", NULL};
    const char *env_bad[] = {"REDLOCK_PASSWORD=wr0ng-s3cret", NULL};
    FILE *f;

    private_start(1, 8, secret, masters, sizeof(masters));
    snprintf(pwfile, sizeof(pwfile), "%s/pw", tmpdir);
    snprintf(badfile, sizeof(badfile), "%s/badpw", tmpdir);
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

    cr_assert(eq(int, cli(&p, "ping", "-v", "--masters", masters, "--password-file", pwfile), 0),
              "%s", p.err);
    cr_assert(strstr(p.out, "s3cret") == NULL && strstr(p.err, "s3cret") == NULL);
    cli_free(&p);
    cr_assert(eq(int, cli_env(&p, env_good, "lock", "pw-test", "--masters", masters, "-v",
                              (const char *)NULL), 0), "%s", p.err);
    cr_assert(strstr(p.out, "s3cret") == NULL && strstr(p.err, "s3cret") == NULL);
    cli_free(&p);

    /* Wrong or missing password: the master refuses; 77, and no secret. */
    cr_assert(eq(int, cli(&p, "ping", "-v", "--json", "--masters", masters, "--password-file",
                          badfile), 77));
    cr_assert(strstr(p.out, "s3cret") == NULL && strstr(p.err, "s3cret") == NULL, "%s%s",
              p.out, p.err);
    cli_free(&p);
    cr_assert(eq(int, cli_env(&p, env_bad, "status", "x", "--masters", masters, "-vv",
                              (const char *)NULL), 77));
    cr_assert(strstr(p.out, "s3cret") == NULL && strstr(p.err, "s3cret") == NULL, "%s%s",
              p.out, p.err);
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "ping", "--masters", masters), 77));
    cli_free(&p);
}

/* ------------------------------------------------------------------------ */
/* Bad input: exit 64, one line on stderr, nothing on stdout               */
/* ------------------------------------------------------------------------ */

#define LONG_256 \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
#define SEVENTEEN_MASTERS \
    "h:1,h:2,h:3,h:4,h:5,h:6,h:7,h:8,h:9,h:10,h:11,h:12,h:13,h:14,h:15,h:16,h:17"

struct bad_input {
    const char *why;
    const char *args[12];
    const char *env;        /* one "NAME=value", or NULL */
};

static const char resource_1025[] = LONG_256 LONG_256 LONG_256 LONG_256 "y";

static struct bad_input bad_inputs[] = {
    {"no command", {NULL}, NULL},
    {"unknown command", {"lok", "r", NULL}, NULL},
    {"unknown option", {"lock", "r", "--bogus", NULL}, NULL},
    {"unknown short option", {"lock", "r", "-x", NULL}, NULL},
    {"missing resource", {"lock", NULL}, NULL},
    {"empty resource", {"lock", "", NULL}, NULL},
    {"resource too long", {"lock", resource_1025, NULL}, NULL},
    {"extra argument", {"status", "r", "s", NULL}, NULL},
    {"a resource twice in a set", {"lock", "a", "b", "a", NULL}, NULL},
    {"a resource twice in an unlock", {"unlock", "a", "a", "tok", NULL}, NULL},
    {"an empty member of a set", {"lock", "a", "", NULL}, NULL},
    {"run: a set member with a newline", {"run", "a", "b\nc", "--", "true", NULL}, NULL},
    {"run: a set without --", {"run", "a", "b", "true", NULL}, NULL},
    {"fence on unlock", {"unlock", "r", "tok", "--fence", NULL}, NULL},
    {"fence with a value", {"lock", "r", "--fence=1", NULL}, NULL},
    {"no-pubsub on status", {"status", "r", "--no-pubsub", NULL}, NULL},
    {"max-extends zero", {"run", "r", "--max-extends", "0", "--", "true", NULL}, NULL},
    {"max-extends beyond 32 bits", {"run", "r", "--max-extends", "4294967296", "--", "true",
                                    NULL}, NULL},
    {"max-lease garbage", {"run", "r", "--max-lease", "1y", "--", "true", NULL}, NULL},
    {"max-lease on lock", {"lock", "r", "--max-lease", "1000", NULL}, NULL},
    {"max-extends on extend", {"extend", "r", "tok", "--ttl", "100", "--max-extends", "3", NULL},
     NULL},
    {"ping takes no argument", {"ping", "r", NULL}, NULL},
    {"ttl zero", {"lock", "r", "--ttl", "0", NULL}, NULL},
    {"ttl negative", {"lock", "r", "--ttl", "-5", NULL}, NULL},
    {"ttl not a number", {"lock", "r", "--ttl", "abc", NULL}, NULL},
    {"ttl trailing garbage", {"lock", "r", "--ttl", "100x", NULL}, NULL},
    {"ttl leading space", {"lock", "r", "--ttl", " 100", NULL}, NULL},
    {"ttl plus sign", {"lock", "r", "--ttl=+100", NULL}, NULL},
    {"ttl beyond PX range", {"lock", "r", "--ttl", "2147483648", NULL}, NULL},
    {"ttl overflows 64 bits", {"lock", "r", "--ttl", "99999999999999999999999", NULL}, NULL},
    {"ttl shorter than the drift margin", {"lock", "r", "--ttl", "3", NULL}, NULL},
    {"ttl without value", {"lock", "r", "--ttl", NULL}, NULL},
    {"ttl on unlock", {"unlock", "r", "tok", "--ttl", "100", NULL}, NULL},
    {"wait negative", {"lock", "r", "--wait", "-1", NULL}, NULL},
    {"wait on status", {"status", "r", "--wait", "10", NULL}, NULL},
    {"kill-after on lock", {"lock", "r", "--kill-after", "10", NULL}, NULL},
    {"flag with a value", {"lock", "r", "--json=yes", NULL}, NULL},
    {"unlock without token", {"unlock", "r", NULL}, NULL},
    {"token with a space", {"unlock", "r", "a b", NULL}, NULL},
    {"extend without ttl", {"extend", "r", "tok", NULL}, NULL},
    {"run without command", {"run", "r", NULL}, NULL},
    {"run with empty command", {"run", "r", "--", NULL}, NULL},
    {"run command without --", {"run", "r", "true", NULL}, NULL},
    {"status without resource", {"status", NULL}, NULL},
    {"timeout zero", {"ping", "--timeout-ms", "0", NULL}, NULL},
    {"retry not a number", {"ping", "--retry", "x", NULL}, NULL},
    {"retry-delay zero", {"ping", "--retry-delay", "0", NULL}, NULL},
    {"drift factor >= 1", {"ping", "--drift-factor", "1.5", NULL}, NULL},
    {"drift factor garbage", {"ping", "--drift-factor", "0.01x", NULL}, NULL},
    {"prefix too long", {"ping", "--prefix", LONG_256 "z", NULL}, NULL},
    {"empty user", {"ping", "--user", "", NULL}, NULL},
    {"masters empty", {"ping", "--masters", "", NULL}, NULL},
    {"master without port", {"ping", "--masters", "127.0.0.1", NULL}, NULL},
    {"master port zero", {"ping", "--masters", "127.0.0.1:0", NULL}, NULL},
    {"master port too big", {"ping", "--masters", "127.0.0.1:65536", NULL}, NULL},
    {"master port garbage", {"ping", "--masters", "127.0.0.1:7x", NULL}, NULL},
    {"masters trailing comma", {"ping", "--masters", "127.0.0.1:7000,", NULL}, NULL},
    {"master bare IPv6", {"ping", "--masters", "::1:7000", NULL}, NULL},
    {"master bad brackets", {"ping", "--masters", "[::1:7000", NULL}, NULL},
    {"duplicate masters", {"ping", "--masters", "127.0.0.1:7000,127.0.0.1:7000", NULL}, NULL},
    {"duplicate masters, other spelling",
     {"ping", "--masters", "h:7000,H:07000,g:1", NULL}, NULL},
    {"duplicate masters after resolving",
     {"ping", "--masters", "127.0.0.1:7000,localhost:7000,127.0.0.1:7001", NULL}, NULL},
    {"too many masters", {"ping", "--masters", SEVENTEEN_MASTERS, NULL}, NULL},
    {"bad $REDLOCK_MASTERS", {"ping", NULL}, "REDLOCK_MASTERS=127.0.0.1:x"},
    {"missing password file", {"ping", "--password-file", "/no/such/file", NULL}, NULL},
    {"password file is a directory", {"ping", "--password-file", "/", NULL}, NULL},
    {"empty password file", {"ping", "--password-file", "/dev/null", NULL}, NULL},
    {"password on the command line", {"ping", "--password", "s3cret", NULL}, NULL},
    {"password on the command line, =", {"ping", "--password=s3cret", NULL}, NULL},
    {"password as -a", {"ping", "-a", "s3cret", NULL}, NULL},
    {"mistyped password option", {"ping", "--pasword=s3cret", NULL}, NULL},
    {"clock policy unknown", {"ping", "--clock-policy", "sometimes", NULL}, NULL},
    {"clock policy empty", {"lock", "r", "--clock-policy=", NULL}, NULL},
    {"clock policy in capitals", {"ping", "--clock-policy", "WARN", NULL}, NULL},
    {"clock policy without value", {"ping", "--clock-policy", NULL}, NULL},
    {"restart guard window negative", {"lock", "r", "--restart-guard-ms", "-1", NULL}, NULL},
    {"restart guard window beyond the ttl range",
     {"lock", "r", "--restart-guard-ms", "2147483648", NULL}, NULL},
    {"restart guard window garbage", {"ping", "--restart-guard-ms", "1 s", NULL}, NULL},
    {"restart guard window and no guard",
     {"lock", "r", "--restart-guard-ms", "1000", "--no-restart-guard", NULL}, NULL},
    {"no-restart-guard with a value", {"ping", "--no-restart-guard=1", NULL}, NULL},
    {"samples zero", {"ping", "--samples", "0", NULL}, NULL},
    {"samples too many", {"ping", "--samples", "1001", NULL}, NULL},
    {"samples on lock", {"lock", "r", "--samples", "3", NULL}, NULL},
};

#define N_BAD_INPUTS (sizeof(bad_inputs) / sizeof(bad_inputs[0]))

/* Parameters are indexes: criterion's workers are separate executions, where
 * pointers inside a parameter (to these strings) would not be valid. */
static int bad_input_index[N_BAD_INPUTS];

ParameterizedTestParameters(cli_usage, bad_input_exits_64)
{
    for (size_t i = 0; i < N_BAD_INPUTS; i++)
        bad_input_index[i] = (int)i;
    return cr_make_param_array(int, bad_input_index, N_BAD_INPUTS);
}

ParameterizedTest(int *index, cli_usage, bad_input_exits_64)
{
    const struct bad_input *in = &bad_inputs[*index];
    struct cli_proc p;
    const char *env[2] = {in->env, NULL};

    cli_start(&p, in->args, env);
    cr_assert(eq(int, cli_wait(&p), 64), "%s: exit %d, stderr: %s", in->why, p.status, p.err);
    cr_assert(eq(str, p.out, ""), "%s: stdout: %s", in->why, p.out);
    cr_assert(eq(int, count_lines(p.err), 1), "%s: stderr is not one line: %s", in->why, p.err);
    cr_assert(strncmp(p.err, "redlock-cli: ", 13) == 0, "%s: %s", in->why, p.err);
    cr_assert(strstr(p.err, "s3cret") == NULL, "%s: the password was printed: %s", in->why,
              p.err);
    cli_free(&p);
}

Test(cli_usage, json_does_not_change_exit_64)
{
    struct cli_proc p;

    cr_assert(eq(int, cli(&p, "--json", "lock", "r", "--ttl", "0"), 64));
    cr_assert(eq(str, p.out, ""));
    cli_free(&p);
}

Test(cli_usage, even_number_of_masters_is_a_warning)
{
    struct cli_proc p;
    char masters[256], res[128];

    tc_resource(res, sizeof(res), NULL);
    snprintf(masters, sizeof(masters), "%s,%s,%s,%s", tc_addr(0), tc_addr(1), tc_addr(2),
             tc_addr(3));
    cr_assert(eq(int, cli(&p, "lock", res, "--masters", masters), 0), "%s", p.err);
    cr_assert(is_token(p.out));
    cr_assert(eq(int, count_lines(p.err), 1), "%s", p.err);
    cr_assert(strstr(p.err, "warning") != NULL && strstr(p.err, "odd") != NULL, "%s", p.err);
    cli_free(&p);
    /* -q silences it. */
    cr_assert(eq(int, cli(&p, "-q", "status", res, "--masters", masters), 0));
    cr_assert(eq(str, p.err, ""));
    cli_free(&p);
}

Test(cli_usage, help_fits_one_screen_and_lists_exit_codes)
{
    struct cli_proc p;
    const char *codes[] = {"64", "69", "75", "124", "126", "127"};
    const char *line;
    size_t lines = 0;

    cr_assert(eq(int, cli(&p, "--help"), 0));
    for (line = p.out; *line; lines++) {
        size_t len = strcspn(line, "\n");

        cr_assert(len <= 80, "help line %zu is %zu columns", lines + 1, len);
        line += len + (line[len] == '\n');
    }
    cr_assert(lines <= 24, "help is %zu lines", lines);
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        cr_assert(strstr(p.out, codes[i]) != NULL, "exit code %s not in --help", codes[i]);
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "lock", "-h"), 0));
    cli_free(&p);
    cr_assert(eq(int, cli(&p, "--version"), 0));
    cr_assert(strncmp(p.out, "redlock-cli ", 12) == 0, "%s", p.out);
    cli_free(&p);
}

Test(cli_usage, masters_come_from_the_environment)
{
    struct cli_proc p;
    char env_masters[600], dead[256];
    const char *env[] = {env_masters, NULL};

    /* Dead masters in $REDLOCK_MASTERS: ping uses them (69), and
     * --masters wins over the environment (0). */
    dead_masters(dead, sizeof(dead), 3);
    snprintf(env_masters, sizeof(env_masters), "REDLOCK_MASTERS=%s", dead);
    cr_assert(eq(int, cli_env(&p, env, "ping", (const char *)NULL), 69));
    cli_free(&p);
    cr_assert(eq(int, cli_env(&p, env, "ping", "--masters", tc_masters(), (const char *)NULL), 0));
    cli_free(&p);
}
