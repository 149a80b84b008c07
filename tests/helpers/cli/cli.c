/* cli.c - running redlock-cli in tests, and awaiting what it does (see
 * cli.h). Compiled once, into libtcli.a, for every test-cli-*.c.
 */
#include "cli.h"

#include <dirent.h>
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
#include <hiredis/hiredis.h>

#include "cluster.h"
#include "core.h"
#include "jsonread.h"

char tcli_tmpdir[TCLI_SCRATCH_MAX];
static char private_dir[TCLI_SCRATCH_MAX + 16]; /* a private cluster's state dir, if any */
static int private_port0;                       /* its master 0's port */
/* redlock-cli processes started and not reaped yet: a test that fails
 * half-way leaves them to tcli_teardown(), which kills them, rather than
 * running (`lock --wait forever`) or stopped (^Z) for ever. */
#define MAX_LIVE 16
static pid_t live[MAX_LIVE];
static char private_pw[128]; /* its password, or "" */

const char *tcli_path(void)
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

char *tcli_slurp(const char *path)
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
/* If set, tcli_start() opens this file as the CLI's descriptor 3. */
const char *tcli_fd3_path;

/* "!NAME" in @envp means unset: drop it, and NAME's entries. Return: the
 * entries left. */
static size_t drop_unset(const char **envp, size_t e)
{
    for (size_t i = 0; i < e;) {
        const char *name = envp[i] + 1;
        size_t nl = strlen(name);

        if (envp[i][0] != '!') {
            i++;
            continue;
        }
        for (size_t k = 0; k < e;) {
            if (k != i && strncmp(envp[k], name, nl) == 0 && envp[k][nl] == '=') {
                memmove(&envp[k], &envp[k + 1], (e - k - 1) * sizeof(envp[0]));
                e--;
                i -= (k < i);
            } else {
                k++;
            }
        }
        memmove(&envp[i], &envp[i + 1], (e - i - 1) * sizeof(envp[0]));
        e--;
    }
    return e;
}

void tcli_start(struct tcli_proc *p, const char *const *args, const char *const *env)
{
    static unsigned seq;
    const char *argv[TCLI_MAX_ARGS + 2];
    char masters_env[1024], path_env[PATH_MAX + 8], cli_var[TCLI_SCRATCH_MAX + 32];
    char trace_env[PATH_MAX + 16];
    const char *envp[32];
    size_t k = 0, e = 0;

    memset(p, 0, sizeof(*p));
    snprintf(p->out_path, sizeof(p->out_path), "%s/out.%u", tcli_tmpdir, seq);
    snprintf(p->err_path, sizeof(p->err_path), "%s/err.%u", tcli_tmpdir, seq);
    seq++;

    argv[k++] = tcli_path();
    for (size_t i = 0; args[i] != NULL; i++) {
        cr_assert(k < TCLI_MAX_ARGS);
        argv[k++] = args[i];
    }
    argv[k] = NULL;

    snprintf(path_env, sizeof(path_env), "PATH=%s",
             getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    snprintf(masters_env, sizeof(masters_env), "REDLOCK_MASTERS=%s", tc_masters());
    snprintf(cli_var, sizeof(cli_var), "REDLOCK_CLI=%s", tcli_path());
    envp[e++] = path_env;
    envp[e++] = cli_var;
    /* A traced test (tests/with-cluster.sh --trace) traces its CLI calls
     * too: their steps are the ones the trace check most needs to see. */
    if (getenv("REDLOCK_TRACE") != NULL) {
        snprintf(trace_env, sizeof(trace_env), "REDLOCK_TRACE=%s", getenv("REDLOCK_TRACE"));
        envp[e++] = trace_env;
    }
    for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
        cr_assert(e + 2 < sizeof(envp) / sizeof(envp[0]), "too many environment entries");
        envp[e++] = env[i];
    }
    /* Defaults go after the caller's entries, and only if not overridden. */
    {
        int have_masters = 0;

        for (size_t i = 0; i < e; i++)
            if (strncmp(envp[i], "REDLOCK_MASTERS=", 16) == 0 ||
                strcmp(envp[i], "!REDLOCK_MASTERS") == 0)
                have_masters = 1;
        if (!have_masters)
            envp[e++] = masters_env;
    }
    e = drop_unset(envp, e);
    envp[e] = NULL;
    p->started_us = tc_now_us();

    p->pid = fork();
    cr_assert(p->pid >= 0, "fork: %s", strerror(errno));
    for (size_t i = 0; p->pid > 0 && i < MAX_LIVE; i++)
        if (live[i] == 0) {
            live[i] = p->pid;
            break;
        }
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
        if (tcli_fd3_path != NULL) {
            int fd3 = open(tcli_fd3_path, O_RDONLY);

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

/* @p's process was reaped with status @st: its outputs, its status. */
static int reaped(struct tcli_proc *p, int st)
{
    for (size_t i = 0; i < MAX_LIVE; i++)
        if (live[i] == p->pid)
            live[i] = 0;
    p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    p->out = tcli_slurp(p->out_path);
    p->err = tcli_slurp(p->err_path);
    return p->status;
}

int tcli_wait(struct tcli_proc *p)
{
    int st;

    while (waitpid(p->pid, &st, 0) < 0)
        cr_assert(tcli_yes(errno == EINTR), "waitpid: %s", strerror(errno));
    return reaped(p, st);
}

int tcli_wait_within(struct tcli_proc *p, int timeout_ms)
{
    uint64_t passed = tc_ms_since(p->started_us);
    pid_t r = 0;
    int st = 0;

    /* Polled: the exit is the event, and there is nothing to block on
     * with a deadline (await.h). */
    TC_AWAIT((r = waitpid(p->pid, &st, WNOHANG)) != 0 && !(r < 0 && errno == EINTR),
             passed < (uint64_t)timeout_ms ? (uint64_t)timeout_ms - passed : 0);
    if (r == 0) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, &st, 0);
        reaped(p, st);
    }
    cr_assert(tcli_yes(r != 0), "still running after %d ms (killed); stderr: %s", timeout_ms,
              p->err);
    cr_assert(tcli_yes(r == p->pid), "waitpid: %s", strerror(errno));
    p->elapsed_ms = tc_ms_since(p->started_us);
    return reaped(p, st);
}

void tcli_free(struct tcli_proc *p)
{
    free(p->out);
    free(p->err);
    p->out = p->err = NULL;
}

/* The NULL-terminated arguments after @first into @args. */
static void collect_args(const char **args, va_list ap)
{
    size_t k = 0;

    for (const char *a; (a = va_arg(ap, const char *)) != NULL;) {
        cr_assert(k < TCLI_MAX_ARGS);
        args[k++] = a;
    }
    args[k] = NULL;
}

void tcli_spawn(struct tcli_proc *p, const char *const *env, ...)
{
    const char *args[TCLI_MAX_ARGS + 1];
    va_list ap;

    va_start(ap, env);
    collect_args(args, ap);
    va_end(ap);
    tcli_start(p, args, env);
}

void tcli_make_fifo(char *path, size_t size)
{
    snprintf(path, size, "%s/fifo", tcli_tmpdir);
    cr_assert(mkfifo(path, 0600) == 0, "mkfifo %s: %s", path, strerror(errno));
}

void tcli_take_guard_warning(struct tcli_proc *p)
{
    size_t n = strlen(TCLI_GUARD_OFF_WARNING);

    cr_assert(strncmp(p->err, TCLI_GUARD_OFF_WARNING, n) == 0,
              "stderr does not start with the guard's warning: %s", p->err);
    memmove(p->err, p->err + n, strlen(p->err + n) + 1);
}

void tcli_put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    cr_assert(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    cr_assert(eq(int, fclose(f), 0));
}

void tcli_default_conf(char *path, size_t size, char *env_entry, size_t env_size)
{
    char xdg[TCLI_SCRATCH_MAX + 16], dir[TCLI_SCRATCH_MAX + 32];

    snprintf(xdg, sizeof(xdg), "%s/xdg", tcli_tmpdir);
    snprintf(dir, sizeof(dir), "%s/redlock", xdg);
    cr_assert(mkdir(xdg, 0700) == 0 && mkdir(dir, 0700) == 0, "%s: %s", dir, strerror(errno));
    snprintf(path, size, "%s/cli.conf", dir);
    snprintf(env_entry, env_size, "XDG_CONFIG_HOME=%s", xdg);
}

size_t tcli_count_lines(const char *s)
{
    size_t n = 0;

    for (; *s; s++)
        n += (*s == '\n');
    return n;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void tcli_setup(void)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

    snprintf(tcli_tmpdir, sizeof(tcli_tmpdir), "%s/redlock-cli-test.XXXXXX", base);
    cr_assert(mkdtemp(tcli_tmpdir) != NULL, "mkdtemp: %s", strerror(errno));
    private_dir[0] = '\0';
}

/* cluster-up.sh on a private cluster; returns its exit status. */
int tcli_private_cluster(const char *const *args)
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
        cr_assert(tcli_yes(errno == EINTR));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void tcli_teardown(void)
{
    /* SIGKILL works on a stopped process too; a `run` killed so has its
     * guard stop CMD's group. */
    for (size_t i = 0; i < MAX_LIVE; i++) {
        if (live[i] > 0) {
            kill(live[i], SIGKILL);
            waitpid(live[i], NULL, 0);
        }
        live[i] = 0;
    }
    private_port0 = 0;
    if (private_dir[0] != '\0') {
        const char *stop[] = { "stop", NULL };

        tcli_private_cluster(stop);
        private_dir[0] = '\0';
    }
    nftw(tcli_tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Start @n masters on REDLOCK_TEST_BASEPORT + @offset.. (the unused ports of
 * this executable's slot) and write their list to @masters. */
void tcli_private_start(int n, int offset, const char *password, char *masters, size_t size)
{
    char nbuf[16], pbuf[16];
    int base = atoi(getenv("REDLOCK_TEST_BASEPORT") ? getenv("REDLOCK_TEST_BASEPORT") : "0");
    const char *args[10] = { "-n", nbuf, "-p", pbuf, NULL };
    size_t k = 4, used = 0;

    cr_assert(base > 0, "REDLOCK_TEST_BASEPORT is not set");
    snprintf(nbuf, sizeof(nbuf), "%d", n);
    snprintf(pbuf, sizeof(pbuf), "%d", base + offset);
    snprintf(private_dir, sizeof(private_dir), "%s/cluster", tcli_tmpdir);
    private_port0 = base + offset;
    snprintf(private_pw, sizeof(private_pw), "%s", password != NULL ? password : "");
    if (password != NULL) {
        args[k++] = "--requirepass";
        args[k++] = password;
    }
    args[k++] = "start";
    args[k] = NULL;
    cr_assert(eq(int, tcli_private_cluster(args), 0), "private cluster on port %d did not start",
              base + offset);
    masters[0] = '\0';
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(masters + used, size - used, "%s127.0.0.1:%d", i ? "," : "",
                                 base + offset + i);
}

/* cluster-up.sh @what @i on the private cluster: kill, pause, resume. */
static void private_fault(const char *what, int i)
{
    char ibuf[16]; /* any int: the ASan build checks the bound */
    const char *args[] = { what, ibuf, NULL };

    snprintf(ibuf, sizeof(ibuf), "%d", i);
    cr_assert(eq(int, tcli_private_cluster(args), 0), "cluster-up.sh %s %d failed", what, i);
}

void tcli_private_kill(int i)
{
    private_fault("kill", i);
}

void tcli_private_pause(int i)
{
    private_fault("pause", i);
}

void tcli_private_resume(int i)
{
    private_fault("resume", i);
}

redisReply *tcli_private_cmd(int i, const char *fmt, ...)
{
    struct timeval tv = { 1, 0 };
    redisContext *c;
    redisReply *r = NULL;
    va_list ap;

    cr_assert(private_port0 > 0, "no private cluster");
    c = redisConnectWithTimeout("127.0.0.1", private_port0 + i, tv);
    if (c != NULL && c->err == 0 && redisSetTimeout(c, tv) == REDIS_OK) {
        if (private_pw[0] != '\0')
            freeReplyObject(redisCommand(c, "AUTH %s", private_pw));
        va_start(ap, fmt);
        r = redisvCommand(c, fmt, ap);
        va_end(ap);
    }
    if (c != NULL)
        redisFree(c);
    return r;
}

long long tcli_private_pttl(int i, const char *key)
{
    redisReply *r = tcli_private_cmd(i, "PTTL %s", key);
    long long v = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -3;

    if (r != NULL)
        freeReplyObject(r);
    return v;
}

/* Masters that refuse connections: loopback ports bound but never listened
 * on, so nothing else can take them while this test runs (the sockets stay
 * open until the worker exits). */
void tcli_dead_masters(char *buf, size_t size, int n)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
        socklen_t len = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        cr_assert(fd >= 0);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        cr_assert(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind: %s", strerror(errno));
        cr_assert(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
        used += (size_t)snprintf(buf + used, size - used, "%s127.0.0.1:%d", i ? "," : "",
                                 ntohs(sa.sin_port));
    }
}

int tcli_is_token(const char *s)
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
int tcli_holders(const char *res, const char *token)
{
    int n = 0;

    for (int i = 0; i < tc_n(); i++) {
        redisReply *r = tc_cmd(i, "GET %s", res);

        if (r != NULL && r->type == REDIS_REPLY_STRING && tc_value_is_token(r->str, token))
            n++;
        if (r != NULL)
            freeReplyObject(r);
    }
    return n;
}

int tcli_is_hex40(const char *s)
{
    if (strlen(s) != 40)
        return 0;
    for (size_t i = 0; i < 40; i++)
        if (!strchr("0123456789abcdef", s[i]))
            return 0;
    return 1;
}

/* tests/helpers/clockshim.so, built next to this test, or NULL. */
const char *tcli_clockshim_path(void)
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

void tcli_assert_votes(const char *doc, int n)
{
    const char *masters = tcli_jreq(doc, "masters"), *m;
    char buf[128];

    cr_assert(tcli_yes(*masters == '['));
    for (int i = 0; i < n; i++) {
        m = tcli_jindex(masters, i);
        cr_assert(m != NULL, "masters[%d] missing", i);
        cr_assert(eq(str, tcli_jstr(m, "addr", buf, sizeof(buf)), (char *)tc_addr(i)));
        tcli_jstr(m, "vote", buf, sizeof(buf));
        cr_assert(strstr(" none pending ok held gone timeout down error excluded ", buf) != NULL,
                  "vote '%s'", buf);
        tcli_jint(m, "latency_us");
        tcli_jreq(m, "detail");
        tcli_jreq(m, "error");
    }
    cr_assert(tcli_jindex(masters, n) == NULL);
}

/* The token on the first line of @out into @token (33 bytes). */
void tcli_take_token(const char *out, char *token)
{
    cr_assert(strlen(out) >= 33 && out[32] == '\n', "stdout: '%s'", out);
    memcpy(token, out, 32);
    token[32] = '\0';
}

/* `lock --fence` prints "TOKEN\nFENCE\n": the token into @token, the fence
 * returned. */
unsigned long long tcli_take_token_and_fence(const char *out, char *token)
{
    const char *f = out + 33;
    char *end;
    unsigned long long v;

    tcli_take_token(out, token);
    cr_assert(tcli_yes(*f >= '0' && *f <= '9'), "no fence on the second line: '%s'", out);
    v = strtoull(f, &end, 10);
    cr_assert(eq(str, end, "\n"), "stdout is not token and fence: '%s'", out);
    return v;
}

long long tcli_master_pttl(int i, const char *key)
{
    redisReply *r = tc_cmd(i, "PTTL %s", key);
    long long v;

    cr_assert(r != NULL && r->type == REDIS_REPLY_INTEGER);
    v = r->integer;
    freeReplyObject(r);
    return v;
}
