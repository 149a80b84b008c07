/* cluster.c - the criterion tests' side of tests/with-cluster.sh.
 *
 * Reads the cluster's coordinates from REDLOCK_TEST_*, drives cluster-up.sh
 * for faults, talks to masters with the hiredis sync API, and runs an
 * event loop until a callback has run. Kept out of the library: nothing
 * here is redlock code, and tests of every kind (black-box and white-box)
 * link it. Fake masters live in fake.c.
 */
#include "cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "spawn.h"

#define TC_HOST "127.0.0.1"
#define TC_MAX_MASTERS 64  /* cluster-up.sh's limit */
#define TC_CMD_TIMEOUT_S 2 /* connect and command timeout of tc_cmd() */

void tc_fail(const char *fmt, ...)
{
    char msg[2560];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (criterion_current_test)
        cr_fatal("%s", msg);
    fprintf(stderr, "tc: %s\n", msg);
    abort();
}

/* ------------------------------------------------------------------------ */
/* Environment                                                              */
/* ------------------------------------------------------------------------ */

static const char *env_required(const char *name)
{
    const char *v = getenv(name);

    if (!v || !*v)
        tc_fail("%s is not set: run this test through tests/with-cluster.sh "
                "(meson test does)",
                name);
    return v;
}

static long env_long(const char *name, long min, long max)
{
    const char *v = env_required(name);
    char *end;
    long n;

    errno = 0;
    n = strtol(v, &end, 10);
    if (errno || *end || end == v || n < min || n > max)
        tc_fail("%s=\"%s\" is not a number in %ld..%ld", name, v, min, max);
    return n;
}

const char *tc_masters(void)
{
    return env_required("REDLOCK_TEST_MASTERS");
}

int tc_n(void)
{
    return (int)env_long("REDLOCK_TEST_N", 1, TC_MAX_MASTERS);
}

static int baseport(void)
{
    return (int)env_long("REDLOCK_TEST_BASEPORT", 1, 65535);
}

static void check_index(const char *what, int i)
{
    int n = tc_n();

    if (i < 0 || i >= n)
        tc_fail("%s: master index %d out of range 0..%d", what, i, n - 1);
}

int tc_port(int i)
{
    check_index("tc_port", i);
    return baseport() + i;
}

const char *tc_addr(int i)
{
    /* One slot per master and per thread: the pointer stays valid for the
     * thread's life and no caller can overwrite another's. */
    static __thread char addrs[TC_MAX_MASTERS][32];
    int port = tc_port(i); /* fails the test unless 0 <= i < N */

    snprintf(addrs[i], sizeof(addrs[i]), TC_HOST ":%d", port);
    return addrs[i];
}

const char *tc_password(void)
{
    const char *v = getenv("REDLOCK_TEST_PASSWORD");

    return v && *v ? v : NULL;
}

int tc_aof(void)
{
    const char *v = getenv("REDLOCK_TEST_AOF");

    return v && strcmp(v, "1") == 0;
}

char *tc_masters_with(int i, const char *addr)
{
    int n = tc_n();
    size_t size = strlen(addr) + 1;
    char *out;

    check_index("tc_masters_with", i);
    for (int k = 0; k < n; k++)
        size += 32;
    out = malloc(size);
    if (!out)
        tc_fail("tc_masters_with: out of memory");
    out[0] = '\0';
    for (int k = 0; k < n; k++) {
        if (k)
            strcat(out, ",");
        strcat(out, k == i ? addr : tc_addr(k));
    }
    return out;
}

/* ------------------------------------------------------------------------ */
/* Faults                                                                   */
/* ------------------------------------------------------------------------ */

/* The words of cluster-up.sh -n N -p P -d DIR @cmd [@i]. */
struct cu_words {
    char n[16], p[16], i[16];
    const char *argv[12];
};

static void cluster_words(struct cu_words *w, const char *cmd, int i)
{
    int k = 0;

    snprintf(w->n, sizeof(w->n), "%d", tc_n());
    snprintf(w->p, sizeof(w->p), "%d", baseport());
    w->i[0] = '\0';
    w->argv[k++] = "bash";
    w->argv[k++] = env_required("REDLOCK_TEST_CLUSTER");
    w->argv[k++] = "-n";
    w->argv[k++] = w->n;
    w->argv[k++] = "-p";
    w->argv[k++] = w->p;
    w->argv[k++] = "-d";
    w->argv[k++] = env_required("REDLOCK_TEST_DIR");
    w->argv[k++] = cmd;
    if (i >= 0) {
        check_index(cmd, i);
        snprintf(w->i, sizeof(w->i), "%d", i);
        w->argv[k++] = w->i;
    }
    w->argv[k] = NULL;
}

/* cluster-up.sh -n N -p P -d DIR @cmd [@i], its words quoted if it fails. */
static void cluster_up(const char *cmd, int i)
{
    struct cu_words w;
    char out[2048];
    int rc;

    cluster_words(&w, cmd, i);
    rc = tc_spawn(w.argv, out, sizeof(out));
    if (rc != 0)
        tc_fail("cluster-up.sh %s %s failed (status %d): %s", cmd, w.i, rc,
                out[0] ? out : "(no output)");
}

void tc_kill(int i)
{
    cluster_up("kill", i);
}

void tc_pause(int i)
{
    cluster_up("pause", i);
}

void tc_resume(int i)
{
    cluster_up("resume", i);
}

void tc_restart(int i)
{
    cluster_up("restart", i);
}

/* A restart on a thread of its own: tc_spawn() and nothing that could
 * fail the test from there; tc_restart_end() judges. */
struct tc_bg {
    pthread_t thread;
    struct cu_words w;
    int rc;
    char out[2048];
};

static void *bg_main(void *arg)
{
    struct tc_bg *b = arg;

    b->rc = tc_spawn(b->w.argv, b->out, sizeof(b->out));
    return NULL;
}

tc_bg *tc_restart_begin(int i)
{
    tc_bg *b = calloc(1, sizeof(*b));

    if (!b)
        tc_fail("tc_restart_begin: out of memory");
    cluster_words(&b->w, "restart", i);
    if (pthread_create(&b->thread, NULL, bg_main, b) != 0)
        tc_fail("tc_restart_begin: cannot start a thread");
    return b;
}

void tc_restart_end(tc_bg *b)
{
    char out[2048];
    int rc;

    pthread_join(b->thread, NULL);
    rc = b->rc;
    snprintf(out, sizeof(out), "%s", b->out);
    free(b);
    if (rc != 0)
        tc_fail("cluster-up.sh restart failed (status %d): %s", rc, out[0] ? out : "(no output)");
}

const char *tc_master_dir(int i)
{
    static __thread char dirs[TC_MAX_MASTERS][512];

    check_index("tc_master_dir", i);
    snprintf(dirs[i], sizeof(dirs[i]), "%s/%d", env_required("REDLOCK_TEST_DIR"), i);
    return dirs[i];
}

void tc_master_rm(int i, const char *name)
{
    char path[600], out[512];
    const char *argv[] = { "rm", "-rf", "--", path, NULL };
    int rc;

    snprintf(path, sizeof(path), "%s/%s", tc_master_dir(i), name);
    rc = tc_spawn(argv, out, sizeof(out));
    if (rc != 0)
        tc_fail("removing %s failed (%d): %s", path, rc, out);
}

/* The test as the operator, in the library's trace (redlock/transport/trace.c) when
 * there is one: a marker it writes by hand is a step no client took, and
 * model/trace-check.py must know of it (an OPER line, before the write). */
static void trace_operator(int i, const char *act)
{
    const char *path = getenv("REDLOCK_TRACE");
    struct timespec ts;
    char line[128];
    int fd, len;

    if (!path || !*path || clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return;
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    len = snprintf(line, sizeof(line), "%llu %d test OPER m=%d act=%s addr=%s\n",
                   (unsigned long long)ts.tv_sec * 1000000ull +
                       (unsigned long long)ts.tv_nsec / 1000,
                   (int)getpid(), i, act, tc_addr(i));
    if (len > 0 && write(fd, line, (size_t)len) < 0)
        len = -1;
    close(fd);
}

void tc_declare_empty(int i)
{
    /* What redlock_readmit() does (redlock/base/script.c): a memory marker that
     * counts at once, for this very process (its run_id). Whatever marker
     * is there: a client's probe may already have found the restarted
     * master and marked it pending; the test says it is new. */
    static const char script[] =
        "local run = string.match(redis.call('info', 'server'), 'run_id:(%x+)') or '' "
        "local m = redis.call('hmget', KEYS[1], 'served', 'run', 'pending') "
        "if m[1] and m[2] == run and not m[3] then return 0 end "
        "redis.call('hset', KEYS[1], 'born', 0, 'window', 0, 'served', 1, 'run', run) "
        "redis.call('hsetnx', KEYS[1], 'maxttl', 0) "
        "redis.call('hdel', KEYS[1], 'pending', 'cause', 'tight') return 1";
    static const char key[] = "\0redlock:marker";
    for (int k = i < 0 ? 0 : i; k < (i < 0 ? tc_n() : i + 1); k++) {
        trace_operator(k, "declare-empty");
        redisReply *r = tc_cmd(k, "EVAL %s 1 %b", script, key, sizeof(key) - 1);
        if (!r || r->type != REDIS_REPLY_INTEGER)
            tc_fail("declaring master %d empty: %s", k, r && r->str ? r->str : "no answer");
        freeReplyObject(r);
    }
}

void tc_heal(void)
{
    cluster_up("heal", -1);
    /* The masters it restarted lost their data: here they come back as
     * new ones an operator declared empty, so the next test starts from a
     * fleet that votes. Tests of the memory guard restart with tc_restart. */
    tc_declare_empty(-1);
}

void tc_fresh(int i)
{
    for (int k = i < 0 ? 0 : i; k < (i < 0 ? tc_n() : i + 1); k++) {
        redisReply *r = tc_cmd(k, "FLUSHALL");

        if (!r || r->type != REDIS_REPLY_STATUS)
            tc_fail("FLUSHALL on master %d: %s", k, r && r->str ? r->str : "no answer");
        freeReplyObject(r);
    }
    tc_declare_empty(i);
}

void tc_pause_writes(int i, int ms)
{
    redisReply *r = tc_cmd(i, "CLIENT PAUSE %d WRITE", ms);

    if (!r || r->type != REDIS_REPLY_STATUS)
        tc_fail("CLIENT PAUSE %d WRITE on master %d: %s", ms, i,
                r && r->str ? r->str : "no answer");
    freeReplyObject(r);
}

/* ------------------------------------------------------------------------ */
/* Direct commands                                                          */
/* ------------------------------------------------------------------------ */

/* Why tc_cmd() returned NULL, on stderr. Not cr_log_warn(): criterion 2.4.1
 * makes the whole run exit 1 after any warning, even when every test
 * passes, and a test may expect tc_cmd() to fail (a killed master). */
__attribute__((format(printf, 1, 2))) static void tc_note(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("[tc] ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static redisContext *master_connect(int i, int timeout_s)
{
    const struct timeval tv = { .tv_sec = timeout_s };
    const char *password = tc_password();
    redisContext *c;

    c = redisConnectWithTimeout(TC_HOST, tc_port(i), tv);
    if (!c) {
        tc_note("tc_cmd: master %d: out of memory", i);
        return NULL;
    }
    if (c->err) {
        tc_note("tc_cmd: master %d (%s): %s", i, tc_addr(i), c->errstr);
        goto fail;
    }
    if (redisSetTimeout(c, tv) != REDIS_OK) {
        tc_note("tc_cmd: master %d (%s): cannot set timeout", i, tc_addr(i));
        goto fail;
    }
    if (password) {
        redisReply *r = redisCommand(c, "AUTH %s", password);
        int ok = r && r->type == REDIS_REPLY_STATUS;

        if (!ok)
            tc_note("tc_cmd: master %d (%s): AUTH failed: %s", i, tc_addr(i),
                    r ? r->str : c->errstr);
        freeReplyObject(r);
        if (!ok)
            goto fail;
    }
    return c;
fail:
    redisFree(c);
    return NULL;
}

static redisReply *finish(int i, redisContext *c, void *reply)
{
    if (!reply)
        tc_note("tc_cmd: master %d (%s): %s", i, tc_addr(i), c->err ? c->errstr : "no reply");
    redisFree(c);
    return reply;
}

static redisReply *vcmd(int i, int timeout_s, const char *fmt, va_list ap)
{
    redisContext *c = master_connect(i, timeout_s);

    if (!c)
        return NULL;
    return finish(i, c, redisvCommand(c, fmt, ap));
}

redisReply *tc_cmd(int i, const char *fmt, ...)
{
    va_list ap;
    redisReply *reply;

    va_start(ap, fmt);
    reply = vcmd(i, TC_CMD_TIMEOUT_S, fmt, ap);
    va_end(ap);
    return reply;
}

redisReply *tc_cmd_slow(int i, int timeout_s, const char *fmt, ...)
{
    va_list ap;
    redisReply *reply;

    va_start(ap, fmt);
    reply = vcmd(i, timeout_s, fmt, ap);
    va_end(ap);
    return reply;
}

redisReply *tc_cmd_argv(int i, int argc, const char **argv, const size_t *argvlen)
{
    redisContext *c = master_connect(i, TC_CMD_TIMEOUT_S);

    if (!c)
        return NULL;
    return finish(i, c, redisCommandArgv(c, argc, argv, argvlen));
}

int tc_key_count(const void *key, size_t len)
{
    const char *argv[2] = { "EXISTS", key };
    const size_t argvlen[2] = { 6, len };
    int n = tc_n(), count = 0;

    for (int i = 0; i < n; i++) {
        redisReply *r = tc_cmd_argv(i, 2, argv, argvlen);

        if (r && r->type == REDIS_REPLY_INTEGER && r->integer == 1)
            count++;
        freeReplyObject(r);
    }
    return count;
}

/* ------------------------------------------------------------------------ */
/* Test plumbing                                                            */
/* ------------------------------------------------------------------------ */

const char *tc_resource(char *buf, size_t size, const char *name)
{
    static atomic_uint seq;
    char label[256];
    int len;

    if (!name) {
        const struct criterion_test *t = criterion_current_test;

        snprintf(label, sizeof(label), "%s/%s", t ? t->category : "test", t ? t->name : "unknown");
        name = label;
    }
    len = snprintf(buf, size, "%s:%ld:%u", name, (long)getpid(), atomic_fetch_add(&seq, 1));
    if (len < 0 || (size_t)len >= size)
        tc_fail("tc_resource: %zu bytes are too few for a resource named \"%s\"", size, name);
    return buf;
}
