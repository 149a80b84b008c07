/* test-url.c - masters written as URLs: credentials per master, a database, unix sockets.
 *
 * Against the cluster's real masters (ACL users made here, one per master
 * and test) and servers on unix sockets started here (helpers/servers.c).
 * What the masters hold is read straight from them with hiredis, never
 * through the library. Passwords must never show: not in a message, not in
 * the log, not in a vote.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <criterion/new/assert.h>

#include <hiredis/hiredis.h>

#include "cluster.h"
#include "core.h"
#include "servers.h"

#define TTL_MS 10000
#define SECRET "S3cret-Pw" /* in every password here: it must never show */

static void expect_no_secret(const char *what, const char *text)
{
    cr_expect(zero(ptr, strstr(text, SECRET)), "the password shows in %s: %s", what, text);
}

static void config(redlock_config *cfg, const char *masters)
{
    redlock_config_init(cfg);
    cfg->masters = masters;
    cfg->node_timeout_ms = 2000;
    cfg->retry_count = 0;
    cfg->log_fn = tc_log;
    cfg->log_level = REDLOCK_LOG_DEBUG;
}

static tc_redis *servers[3];

static void teardown(void)
{
    for (int i = 0; i < 3; i++) {
        tc_redis_stop(servers[i]);
        servers[i] = NULL;
    }
    expect_no_secret("the log", tc_log_text());
}

TestSuite(url, .fini = teardown, .timeout = 60);

/* ---- reading masters directly ---------------------------------------------- */

/* Does @key exist in database @db of the server at @ctx's address? */
static int exists_in_db(redisContext *ctx, int db, const char *key)
{
    cr_assert(not(zero(ptr, ctx)));
    cr_assert(zero(int, ctx->err), "%s", ctx->errstr);
    redisReply *r = redisCommand(ctx, "SELECT %d", db);
    cr_assert(not(zero(ptr, r)));
    freeReplyObject(r);
    r = redisCommand(ctx, "EXISTS %s", key);
    cr_assert(not(zero(ptr, r)));
    int n = (int)r->integer;
    freeReplyObject(r);
    return n;
}

static int exists_tcp(int i, int db, const char *key)
{
    redisContext *ctx = redisConnect("127.0.0.1", tc_port(i));
    int n = exists_in_db(ctx, db, key);
    redisFree(ctx);
    return n;
}

static int exists_unix(const char *path, int db, const char *key)
{
    redisContext *ctx = redisConnectUnix(path);
    int n = exists_in_db(ctx, db, key);
    redisFree(ctx);
    return n;
}

/* An ACL user on master @i named after this process, with @pass. */
static const char *make_user(int i, const char *pass, char *name, size_t size)
{
    snprintf(name, size, "rl%d-%ld", i, (long)getpid());
    redisReply *r = tc_cmd(i, "ACL SETUSER %s reset on >%s ~* &* +@all", name, pass);
    cr_assert(not(zero(ptr, r)));
    cr_assert(eq(int, r->type, REDIS_REPLY_STATUS), "ACL SETUSER: %s", r->str);
    freeReplyObject(r);
    return name;
}

/* Is a client authenticated as @user connected to master @i? */
static bool connected_as(int i, const char *user)
{
    redisReply *r = tc_cmd(i, "CLIENT LIST");
    cr_assert(not(zero(ptr, r)));
    char needle[96];
    snprintf(needle, sizeof(needle), "user=%s ", user);
    bool found = r->type == REDIS_REPLY_STRING && strstr(r->str, needle);
    freeReplyObject(r);
    return found;
}

/* A client for @cfg once @want masters are up, each new database or server
 * declared empty (the restart guard's marker lives in each database). */
static redlock_client *client(const redlock_config *cfg, int want)
{
    redlock_client *c = tc_client(cfg, want);
    redlock_error e;
    /* Forced: a test may leave a master out on purpose (a wrong password),
     * and declare-empty refuses when it cannot look at every master. */
    cr_assert(eq(int, redlock_declare_empty_with(c, REDLOCK_DECLARE_FORCE, NULL, &e), 0), "%s",
              e.msg);
    return c;
}

/* The masters take() and give() wait for (bit i: master i); 0: all. */
static unsigned barrier_mask;

/* Take a lock on a fresh resource (its name into @res) through @c; once
 * the masters in barrier_mask (0: all) have run it. */
static redlock_lock *take(redlock_client *c, char res[128], redlock_outcome *out)
{
    tc_resource(res, 128, NULL);
    redlock_lock *l = NULL;
    redlock_error e;
    int rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    if (barrier_mask)
        tc_barrier_on(c, barrier_mask);
    else
        tc_barrier(c);
    return l;
}

/* Release @l and free it, once every master has run the release. */
static void give(redlock_client *c, redlock_lock *l)
{
    redlock_error e;
    cr_expect(eq(int, redlock_release(c, l, NULL, &e), 0), "%s", e.msg);
    if (barrier_mask)
        tc_barrier_on(c, barrier_mask);
    else
        tc_barrier(c);
    redlock_lock_free(l);
}

/* ---- it works ---------------------------------------------------------------- */

Test(url, each_master_authenticates_with_its_own_credentials)
{
    char users[3][64], masters[512];
    size_t used = 0;
    for (int i = 0; i < 3; i++) {
        char pass[64];
        snprintf(pass, sizeof(pass), "%s-%d", SECRET, i);
        make_user(i, pass, users[i], sizeof(users[i]));
        used += (size_t)snprintf(masters + used, sizeof(masters) - used, "%sredis://%s:%s@%s",
                                 i ? "," : "", users[i], pass, tc_addr(i));
    }
    redlock_config cfg;
    config(&cfg, masters);
    redlock_client *c = client(&cfg, 3);
    for (int i = 0; i < 3; i++) {
        cr_expect(connected_as(i, users[i]), "master %d: no client as %s", i, users[i]);
        char name[128];
        snprintf(name, sizeof(name), "redis://%s@%s", users[i], tc_addr(i));
        cr_expect(eq(str, (char *)redlock_client_master_addr(c, (size_t)i), name));
    }
    char res[128];
    redlock_lock *l = take(c, res, NULL);
    cr_expect(eq(int, tc_count_token(res, strlen(res), redlock_lock_token(l), TTL_MS), 3));
    give(c, l);
    redlock_client_free(c);
}

Test(url, a_wrong_password_fails_only_its_master_and_never_shows)
{
    char users[3][64], masters[512];
    size_t used = 0;
    for (int i = 0; i < 3; i++) {
        make_user(i, SECRET "-right", users[i], sizeof(users[i]));
        used += (size_t)snprintf(masters + used, sizeof(masters) - used, "%sredis://%s:%s@%s",
                                 i ? "," : "", users[i], i == 2 ? SECRET "-wrong" : SECRET "-right",
                                 tc_addr(i));
    }
    redlock_config cfg;
    config(&cfg, masters);
    /* One connection per master: master 2 stays down with the AUTH failure
     * of its first handshake. With the default backoff the acquire could
     * find it reconnecting, its SET queued behind a new AUTH, and masters 0
     * and 1 make the quorum before that AUTH fails: a pending vote, no
     * detail (failed once). */
    cfg.reconnect_min_ms = cfg.reconnect_max_ms = 60000;
    redlock_client *c = client(&cfg, 2);
    barrier_mask = 1u << 0 | 1u << 1; /* master 2 never lets us in */
    TC_STATUS(st);
    redlock_error e = { 0 };
    int rc = 0;
    /* The event the vote depends on: master 2 reported down with EAUTH. */
    cr_assert(TC_AWAIT((rc = redlock_ping(c, st, &e),
                        redlock_status_master(st, 2)->err == REDLOCK_EAUTH),
                       10000),
              "master 2: %s: %s", redlock_err_name(redlock_status_master(st, 2)->err),
              redlock_status_master(st, 2)->detail);
    cr_expect(eq(int, rc, 0), "the ping: %s", e.msg);
    expect_no_secret("the ping's error", e.msg);
    char res[128];
    TC_OUTCOME(out);
    redlock_lock *l = take(c, res, out);
    /* Master 2 is down, so its vote fails at once, before 0 and 1 answer. */
    for (int i = 0; i < 2; i++)
        cr_expect(eq(int, redlock_outcome_vote(out, i)->kind, REDLOCK_VOTE_OK),
                  "master %d voted %s (%s)", i,
                  redlock_vote_kind_name(redlock_outcome_vote(out, i)->kind),
                  redlock_outcome_vote(out, i)->detail);
    cr_expect(eq(int, redlock_outcome_vote(out, 2)->kind, REDLOCK_VOTE_ERROR),
              "master 2 voted %s (%s)", redlock_vote_kind_name(redlock_outcome_vote(out, 2)->kind),
              redlock_outcome_vote(out, 2)->detail);
    cr_expect(eq(int, redlock_outcome_vote(out, 2)->err, REDLOCK_EAUTH), "%s",
              redlock_outcome_vote(out, 2)->detail);
    cr_expect(not(zero(ptr, strstr(redlock_outcome_vote(out, 2)->detail, "AUTH failed"))), "%s",
              redlock_outcome_vote(out, 2)->detail);
    expect_no_secret("the vote", redlock_outcome_vote(out, 2)->detail);
    cr_expect(eq(int, redlock_ping(c, st, &e), 0), "%s", e.msg);
    for (int i = 0; i < 2; i++)
        cr_expect(eq(int, redlock_status_master(st, i)->err, 0), "master %d: %s", i,
                  redlock_status_master(st, i)->detail);
    cr_expect(eq(int, redlock_status_master(st, 2)->err, REDLOCK_EAUTH), "%s",
              redlock_status_master(st, 2)->detail);
    expect_no_secret("the ping", redlock_status_master(st, 2)->detail);
    give(c, l);
    redlock_client_free(c);
}

Test(url, a_database_index_puts_the_keys_in_that_database)
{
    char masters[512];
    size_t used = 0;
    for (int i = 0; i < 3; i++)
        used += (size_t)snprintf(masters + used, sizeof(masters) - used, "%sredis://%s/%d",
                                 i ? "," : "", tc_addr(i), 3 + i);
    redlock_config cfg;
    config(&cfg, masters);
    redlock_client *c = client(&cfg, 3);
    char res[128];
    redlock_lock *l = take(c, res, NULL);
    for (int i = 0; i < 3; i++) {
        cr_expect(eq(int, exists_tcp(i, 3 + i, res), 1), "master %d: not in db %d", i, 3 + i);
        cr_expect(eq(int, exists_tcp(i, 0, res), 0), "master %d: in db 0", i);
    }
    give(c, l);
    for (int i = 0; i < 3; i++)
        cr_expect(eq(int, exists_tcp(i, 3 + i, res), 0), "master %d: left behind", i);
    redlock_client_free(c);
}

Test(url, unix_socket_masters)
{
    char paths[3][600], masters[2048];
    size_t used = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(paths[i], sizeof(paths[i]), "%s/m%d.sock", tc_scratch_dir(), i);
        const char *args[] = { "--port",
                               "0",
                               "--unixsocket",
                               paths[i],
                               "--unixsocketperm",
                               "700",
                               i == 2 ? "--requirepass" : NULL,
                               SECRET,
                               NULL };
        servers[i] = tc_redis_start(args);
        /* Master 2 wants a password and says it in its URL, with a database. */
        if (i == 2)
            used += (size_t)snprintf(masters + used, sizeof(masters) - used, ",unix://:%s@%s?db=5",
                                     SECRET, paths[i]);
        else
            used += (size_t)snprintf(masters + used, sizeof(masters) - used, "%sunix://%s",
                                     i ? "," : "", paths[i]);
    }
    redlock_config cfg;
    config(&cfg, masters);
    redlock_client *c = client(&cfg, 3);
    char res[128];
    redlock_lock *l = take(c, res, NULL);
    cr_expect(eq(int, exists_unix(paths[0], 0, res), 1));
    cr_expect(eq(int, exists_unix(paths[1], 0, res), 1));
    redisContext *ctx = redisConnectUnix(paths[2]);
    redisReply *r = redisCommand(ctx, "AUTH %s", SECRET);
    freeReplyObject(r);
    cr_expect(eq(int, exists_in_db(ctx, 5, res), 1), "master 2: not in db 5");
    redisFree(ctx);
    give(c, l);
    redlock_client_free(c);
}

/* One acquire by a new client for @cfg, expected to fail: its code, the
 * message in @e (one line). */
static int failed_acquire(const redlock_config *cfg, redlock_error *e)
{
    redlock_client *c = NULL;
    cr_assert(eq(int, redlock_client_new(cfg, NULL, &c, e), 0), "%s", e->msg);
    char res[128];
    tc_resource(res, sizeof(res), NULL);
    redlock_lock *l = NULL;
    int rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, e);
    cr_expect(zero(ptr, l));
    tc_expect_msg(e, "acquire");
    redlock_client_free(c);
    return rc;
}

Test(url, a_missing_unix_socket_is_a_one_line_error)
{
    char masters[700];
    snprintf(masters, sizeof(masters), "unix://%s/nobody-here.sock", tc_scratch_dir());
    redlock_config cfg;
    config(&cfg, masters);
    redlock_error e;
    int rc = failed_acquire(&cfg, &e);
    cr_expect(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(not(zero(ptr, strstr(e.msg, "nobody-here.sock"))), "%s", e.msg);
    cr_expect(not(zero(ptr, strstr(e.msg, "unixsocket"))), "%s", e.msg);
}

/* Is @s valid UTF-8, every character whole? */
static bool utf8_whole(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80             ? 0
                : (*p & 0xE0) == 0xC0 ? 1
                : (*p & 0xF0) == 0xE0 ? 2
                : (*p & 0xF8) == 0xF0 ? 3
                                      : -1;
        if (n < 0)
            return false;
        for (p++; n > 0; n--, p++)
            if ((*p & 0xC0) != 0x80)
                return false;
    }
    return true;
}

static bool ends_with(const char *s, const char *end)
{
    size_t n = strlen(s), m = strlen(end);
    return n >= m && strcmp(s + n - m, end) == 0;
}

/* A message longer than redlock_error's 256 bytes: a master written with
 * a long user name and socket path, both in two-byte characters. The
 * address is what gives way, cut between whole characters and marked with
 * "…"; the end, which says what to do and how many masters, stays. */
Test(url, a_long_address_is_cut_and_the_advice_kept)
{
    char user[128] = "a", path[200], masters[600];
    for (int i = 0; i < 40; i++) /* 81 bytes: a cut at a byte count splits a character */
        strcat(user, "\xc3\xa9");
    /* Up to 106 bytes: hiredis 1.2 copies a path of 107, the most sun_path
     * holds, without its NUL into memory it did not clear. */
    snprintf(path, sizeof(path), "%s/b", tc_scratch_dir());
    while (strlen(path) + 2 + strlen(".sock") < sizeof(((struct sockaddr_un *)0)->sun_path) - 1)
        strcat(path, "\xc3\xa9");
    strcat(path, ".sock");
    const char *args[] = {
        "--port", "0", "--unixsocket", path, "--unixsocketperm", "700", "--requirepass",
        SECRET,   NULL
    };
    servers[0] = tc_redis_start(args);
    snprintf(masters, sizeof(masters), "unix://%s:%s-wrong@%s", user, SECRET, path);
    redlock_config cfg;
    config(&cfg, masters);
    redlock_error e;
    int rc = failed_acquire(&cfg, &e);
    cr_expect(eq(int, rc, REDLOCK_EAUTH), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(utf8_whole(e.msg), "a character is cut in two: %s", e.msg);
    cr_expect(not(zero(ptr, strstr(e.msg, "AUTH failed"))), "%s", e.msg);
    cr_expect(not(zero(ptr, strstr(e.msg, "\xe2\x80\xa6"))), "the cut is not marked: %s", e.msg);
    cr_expect(ends_with(e.msg, "(check the password (and the ACL user, if any); 1 of 1 masters "
                               "fail this way)"),
              "the advice is lost: %s", e.msg);
    expect_no_secret("the message", e.msg);
    tc_redis_stop(servers[0]);
    servers[0] = NULL;

    /* No quorum names the master too, with what it said. */
    rc = failed_acquire(&cfg, &e);
    cr_expect(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(utf8_whole(e.msg), "a character is cut in two: %s", e.msg);
    cr_expect(not(zero(ptr, strstr(e.msg, "redis-server running"))), "%s", e.msg);
    cr_expect(ends_with(e.msg, "?)"), "the master's words are lost: %s", e.msg);
}

/* ---- bad URLs ------------------------------------------------------------------ */

struct bad_url {
    const char *masters;
    const char *says; /* in the message */
};

static const struct bad_url bad_urls[] = {
    { "redis://", "empty host" },
    { "redis://127.0.0.1:0", "bad port" },
    { "redis://127.0.0.1:70000", "bad port" },
    { "redis://127.0.0.1:6379/x", "database" },
    { "redis://127.0.0.1:6379/65536", "database" },
    { "redis://127.0.0.1:6379?db=1", "parameters" },
    { "redis://u:" SECRET "@127.0.0.1:6379?db=1", "parameters" },
    { "redis://u:" SECRET "@bad host:6379", "space" },
    { "redis://u:" SECRET "@127.0.0.1:99999", "bad port" },
    { "redis://u:" SECRET "@0127.0.0.1:6379", "octal" },
    { "rediss://u:" SECRET "@[::1:6379", "IPv6" },
    { "redis://" SECRET "@127.0.0.1:6379", "user:password@" },
    { "redis://u:@127.0.0.1:6379", "password is empty" },
    { "redis://u:pw%zz" SECRET "@127.0.0.1:6379", "escape" },
    { "http://u:" SECRET "@127.0.0.1:6379", "unknown scheme" },
    { "u:" SECRET "@127.0.0.1:6379", "outside a URL" },
    { "redis://u:pa," SECRET "@127.0.0.1:6379", "%2C" },
    { "unix://", "unix socket path" },
    { "unix://relative/path.sock", "unix:///path" },
    { "unix:///tmp/r.sock?x=1", "?db=N" },
    { "unix://u:" SECRET "@/tmp/r.sock?db=-1", "?db=N" },
    { "redis://127.0.0.1:1,redis://u:" SECRET "@127.0.0.1:1", "same master" },
    { "redis://u:" SECRET "@127.0.0.1:1,,127.0.0.1:2", "empty entry" },
    { "redis://u:" SECRET "@127.0.0.1:1,", "trailing comma" },
    /* A slash short: the URL's form, not the IPv6 or port advice. */
    { "redis:/127.0.0.1:6379", "write redis://host:port" },
    { "redis:127.0.0.1:6379", "write redis://host:port" },
    { "rediss:/[::1]:6380", "write rediss://host:port" },
    { "unix:/tmp/r.sock", "write unix:///path/to.sock" },
    /* 107 bytes: sun_path's most, which hiredis 1.x copies without its NUL. */
    { "unix:///tmp/0123456789012345678901234567890123456789012345678901234567890123456789"
      "012345678901234567890123456.sock",
      "longer than 106 bytes" },
};

ParameterizedTestParameters(url, bad_url_is_one_line_einval_without_the_password)
{
    static size_t idx[sizeof(bad_urls) / sizeof(bad_urls[0])];
    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, url, bad_url_is_one_line_einval_without_the_password)
{
    const struct bad_url *b = &bad_urls[*i];
    redlock_config cfg;
    redlock_error e;
    config(&cfg, b->masters);
    int rc = redlock_config_check(&cfg, &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL), "%s: %s", b->masters, redlock_err_name(rc));
    tc_expect_msg(&e, b->masters);
    cr_expect(not(zero(ptr, strstr(e.msg, b->says))), "%s: no \"%s\" in: %s", b->masters, b->says,
              e.msg);
    expect_no_secret("the message", e.msg);
    size_t count = 7;
    int secret = 7;
    cr_expect(eq(int, redlock_masters_check(b->masters, &count, &secret, &e), REDLOCK_EINVAL));
    cr_expect(eq(sz, count, 7), "count clobbered on failure");
    cr_expect(eq(int, secret, 7), "secret clobbered on failure");
    expect_no_secret("the message", e.msg);
}

Test(url, masters_check_says_which_lists_carry_a_secret)
{
    size_t count = 0;
    int secret = -1;
    cr_expect(
        eq(int, redlock_masters_check("127.0.0.1:1,redis://u@127.0.0.1:2/1", &count, &secret, NULL),
           REDLOCK_EINVAL),
        "a user without a password is refused");
    cr_expect(eq(int,
                 redlock_masters_check("127.0.0.1:1,redis://127.0.0.1:2/1,unix:///tmp/s", &count,
                                       &secret, NULL),
                 0));
    cr_expect(eq(sz, count, 3));
    cr_expect(eq(int, secret, 0));
    cr_expect(eq(
        int, redlock_masters_check("127.0.0.1:1,unix://:" SECRET "@/tmp/s", &count, &secret, NULL),
        0));
    cr_expect(eq(sz, count, 2));
    cr_expect(eq(int, secret, 1));
    /* A host named like a scheme is a host: redis:6379 is not a URL. */
    cr_expect(eq(
        int, redlock_masters_check("redis:6379,unix:7000,rediss:6380", &count, &secret, NULL), 0));
    cr_expect(eq(sz, count, 3));
}
