/* servers.c - servers a test starts itself, the TLS test PKI, the log (see servers.h).
 *
 * A server runs as a child of the test process with its log on a pipe: the
 * test reads the log until the server says it is ready, then a thread
 * drains the pipe so the server never blocks on it. PR_SET_PDEATHSIG kills
 * the server if the test process dies first, so a crashed test leaves no
 * server holding its port.
 */
#include "servers.h"
#include "await.h"
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#define TC_REDIS_READY_MS 10000 /* a server that is not ready by then is broken */
#define TC_REDIS_MAX_ARGS 48

struct tc_redis {
    pid_t pid;
    int fd; /* its stdout and stderr */
    pthread_t drain;
    char log[4096]; /* what it said until ready, for failures */
};

static const char *env_or_fail(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        cr_fatal("%s is not set: run this test through tests/with-cluster.sh", name);
    return v;
}

int tc_block_port(int k)
{
    if (k < 1 || k > 9)
        cr_fatal("tc_block_port(%d): a test's block has ports 1..9", k);
    return atoi(env_or_fail("REDLOCK_TEST_BASEPORT")) + k;
}

const char *tc_scratch_dir(void)
{
    static char dir[512];
    if (!dir[0]) {
        snprintf(dir, sizeof(dir), "%s/ts.XXXXXX", env_or_fail("REDLOCK_TEST_DIR"));
        if (!mkdtemp(dir))
            cr_fatal("mkdtemp %s: %s", dir, strerror(errno));
    }
    return dir;
}

/* Run @argv (NULL-terminated); fail the test, quoting it, unless it exits 0. */
static void run(const char *const *argv)
{
    char out[2048];
    if (tc_spawn(argv, out, sizeof(out)) != 0)
        cr_fatal("%s %s failed: %s", argv[0], argv[1], out);
}

/* A key and a certificate for @cn, signed by @ca (NULL: self-signed, a CA),
 * with the extensions in @ext (openssl's "-extfile" syntax), valid for
 * @days from now ("-1": it expired a day before it was made). */
static void make_cert(const char *dir, const char *name, const char *cn, const char *ca,
                      const char *ext, const char *days)
{
    char key[600], crt[600], csr[600], extf[600], cakey[600], cacrt[600], subj[128];
    snprintf(key, sizeof(key), "%s/%s.key", dir, name);
    snprintf(crt, sizeof(crt), "%s/%s.crt", dir, name);
    snprintf(csr, sizeof(csr), "%s/%s.csr", dir, name);
    snprintf(extf, sizeof(extf), "%s/%s.ext", dir, name);
    snprintf(subj, sizeof(subj), "/CN=%s", cn);
    FILE *f = fopen(extf, "w");
    if (!f)
        cr_fatal("cannot write %s: %s", extf, strerror(errno));
    fprintf(f, "%s\n", ext);
    fclose(f);
    if (!ca) {
        const char *argv[] = { "openssl", "req",      "-x509",
                               "-new",    "-nodes",   "-newkey",
                               "ec",      "-pkeyopt", "ec_paramgen_curve:P-256",
                               "-keyout", key,        "-out",
                               crt,       "-days",    days,
                               "-subj",   subj,       "-extensions",
                               "v3",      "-config",  extf,
                               NULL };
        run(argv);
        return;
    }
    snprintf(cakey, sizeof(cakey), "%s/%s.key", dir, ca);
    snprintf(cacrt, sizeof(cacrt), "%s/%s.crt", dir, ca);
    const char *req[] = { "openssl", "req", "-new",     "-nodes",
                          "-newkey", "ec",  "-pkeyopt", "ec_paramgen_curve:P-256",
                          "-keyout", key,   "-out",     csr,
                          "-subj",   subj,  NULL };
    run(req);
    const char *sign[] = { "openssl", "x509",        "-req",   "-in", csr,
                           "-CA",     cacrt,         "-CAkey", cakey, "-CAcreateserial",
                           "-out",    crt,           "-days",  days,  "-extfile",
                           extf,      "-extensions", "v3",     NULL };
    run(sign);
}

const char *tc_pki(void)
{
    static char pki[512];
    if (pki[0])
        return pki;
    snprintf(pki, sizeof(pki), "%s/pki", env_or_fail("REDLOCK_TEST_DIR"));
    struct stat st;
    if (stat(pki, &st) == 0)
        return pki;
    /* Made aside and renamed into place: test processes running side by
     * side either make it or find it whole, never half-made. */
    char tmp[600];
    snprintf(tmp, sizeof(tmp), "%s.XXXXXX", pki);
    if (!mkdtemp(tmp))
        cr_fatal("mkdtemp %s: %s", tmp, strerror(errno));
    const char *ca_ext = "[v3]\nbasicConstraints=critical,CA:TRUE\n"
                         "keyUsage=critical,keyCertSign,cRLSign\n"
                         "[req]\ndistinguished_name=dn\n[dn]\n";
    const char *server_ext =
        "[v3]\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth";
    make_cert(tmp, "ca", "redlock test CA", NULL, ca_ext, "1");
    make_cert(tmp, "other-ca", "some other CA", NULL, ca_ext, "1");
    make_cert(tmp, "server", "localhost", "ca", server_ext, "1");
    make_cert(tmp, "client", "redlock-client", "ca", "[v3]\nextendedKeyUsage=clientAuth", "1");
    make_cert(tmp, "other", "other.example", "ca",
              "[v3]\nsubjectAltName=DNS:other.example\nextendedKeyUsage=serverAuth", "1");
    make_cert(tmp, "expired", "localhost", "ca", server_ext, "-1");
    if (rename(tmp, pki) != 0 && stat(pki, &st) != 0)
        cr_fatal("rename %s %s: %s", tmp, pki, strerror(errno));
    return pki;
}

const char *tc_pki_file(const char *name)
{
    static char bufs[8][600];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof(bufs[0]), "%s/%s", tc_pki(), name);
    return b;
}

static void *drain_main(void *arg)
{
    tc_redis *s = arg;
    char buf[4096];
    while (read(s->fd, buf, sizeof(buf)) > 0)
        ;
    return NULL;
}

/* Read the server's log until it says it is ready; false if it exits or
 * says nothing of the kind in time. */
static bool await_ready(tc_redis *s)
{
    size_t used = 0;
    uint64_t t0 = tc_now_us();
    for (;;) {
        long left = TC_REDIS_READY_MS - (long)tc_ms_since(t0);
        struct pollfd p = { .fd = s->fd, .events = POLLIN };
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return false;
        ssize_t n = read(s->fd, s->log + used, sizeof(s->log) - 1 - used);
        if (n <= 0)
            return false; /* it exited */
        used += (size_t)n;
        s->log[used] = '\0';
        /* "Ready to accept connections" (TCP, TLS), or "...ready to accept
         * connections at PATH" (a unix socket only). */
        if (strstr(s->log, "eady to accept connections"))
            return true;
        if (used == sizeof(s->log) - 1)
            used = 0; /* keep reading; the line is short */
    }
}

tc_redis *tc_redis_start(const char *const *args)
{
    const char *bin = getenv("REDLOCK_TEST_SERVER");
    return tc_redis_start_with(bin && *bin ? bin : "redis-server", args);
}

tc_redis *tc_redis_start_with(const char *bin, const char *const *args)
{
    static int seq;
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/server%d", tc_scratch_dir(), ++seq);
    if (mkdir(dir, 0700) != 0)
        cr_fatal("mkdir %s: %s", dir, strerror(errno));
    const char *argv[TC_REDIS_MAX_ARGS] = { bin, "--bind",       "127.0.0.1", "--save",
                                            "",  "--appendonly", "no",        "--dir",
                                            dir, "--loglevel",   "notice" };
    size_t n = 11;
    for (size_t i = 0; args[i]; i++) {
        if (n + 1 >= TC_REDIS_MAX_ARGS)
            cr_fatal("tc_redis_start: too many arguments");
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0)
        cr_fatal("pipe: %s", strerror(errno));
    tc_redis *s = calloc(1, sizeof(*s));
    pid_t parent = getpid();
    s->pid = fork();
    if (s->pid < 0)
        cr_fatal("fork: %s", strerror(errno));
    if (s->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1); /* the test died before the line above */
        dup2(pipefd[1], STDOUT_FILENO);
        dup2(pipefd[1], STDERR_FILENO);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(pipefd[1]);
    s->fd = pipefd[0];
    if (!await_ready(s)) {
        char log[4096];
        snprintf(log, sizeof(log), "%s", s->log);
        tc_redis_stop(s);
        cr_fatal("%s did not become ready; it said:\n%s", argv[0], log);
    }
    if (pthread_create(&s->drain, NULL, drain_main, s) != 0)
        cr_fatal("pthread_create failed");
    return s;
}

void tc_redis_stop(tc_redis *s)
{
    if (!s)
        return;
    kill(s->pid, SIGKILL);
    while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (s->drain)
        pthread_join(s->drain, NULL);
    close(s->fd);
    free(s);
}

/* ---- the log ------------------------------------------------------------------ */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[32768];
static char log_copy[sizeof(log_buf)];

void tc_log(int level, const char *msg, void *arg)
{
    (void)level;
    (void)arg;
    pthread_mutex_lock(&log_mu);
    size_t used = strlen(log_buf);
    snprintf(log_buf + used, sizeof(log_buf) - used, "%s\n", msg);
    pthread_mutex_unlock(&log_mu);
}

bool tc_log_has(const char *a, const char *b)
{
    bool found = false;
    pthread_mutex_lock(&log_mu);
    for (const char *line = log_buf; *line && !found;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char one[1024];
        snprintf(one, sizeof(one), "%.*s", (int)len, line);
        found = strstr(one, a) && strstr(one, b);
        line += len + (end ? 1 : 0);
    }
    pthread_mutex_unlock(&log_mu);
    return found;
}

bool tc_log_contains(const char *s)
{
    return tc_log_has(s, "");
}

const char *tc_log_text(void)
{
    pthread_mutex_lock(&log_mu);
    memcpy(log_copy, log_buf, sizeof(log_copy));
    pthread_mutex_unlock(&log_mu);
    return log_copy;
}
