/* test-auth.c - masters that require AUTH: right, wrong and missing credentials.
 *
 * meson runs this against a cluster started with --requirepass. A wrong or
 * missing password is a setup error (EAUTH) whose message names a master
 * and says what to fix; it is never "no quorum" or "held by another
 * client". ACL users (AUTH user password) work as well. If the cluster was
 * started without a password, the suite sets one with CONFIG SET and takes
 * it away again in .fini (run with one worker then).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/logging.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"
#include "spawn.h"

#define TTL_MS 10000u
#define FALLBACK_PASSWORD "test-auth fallback"

static int set_by_us; /* the suite set requirepass itself */

static void setup(void)
{
    if (tc_password())
        return;
    for (int i = 0; i < tc_n(); i++) {
        redisReply *r = tc_cmd(i, "CONFIG SET requirepass %s", FALLBACK_PASSWORD);

        if (!r || r->type != REDIS_REPLY_STATUS)
            cr_fatal("CONFIG SET requirepass on master %d failed", i);
        freeReplyObject(r);
    }
    /* From here on tc_cmd() must AUTH: it reads the password from here. */
    setenv("REDLOCK_TEST_PASSWORD", FALLBACK_PASSWORD, 1);
    set_by_us = 1;
}

static void teardown(void)
{
    if (!set_by_us)
        return;
    for (int i = 0; i < tc_n(); i++)
        freeReplyObject(tc_cmd(i, "CONFIG SET requirepass %s", ""));
    unsetenv("REDLOCK_TEST_PASSWORD");
    set_by_us = 0;
}

TestSuite(auth, .init = setup, .fini = teardown, .timeout = 60);

static void auth_config(redlock_config *cfg, const char *user, const char *password)
{
    tc_config(cfg);
    cfg->username = user;
    cfg->password = password;
    cfg->retry_count = 0;
}

/* An acquire that must fail with EAUTH, naming a master, leaving no key. */
static void expect_eauth(const redlock_config *cfg, const char *what)
{
    redlock_client *c;
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    char res[128];
    int rc;

    c = tc_client(cfg, 0);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, out, &e);
    cr_expect(eq(int, rc, REDLOCK_EAUTH), "%s: %s: %s", what, redlock_err_name(rc), e.msg);
    cr_expect(zero(ptr, l));
    cr_expect(eq(int, e.code, REDLOCK_EAUTH));
    tc_expect_msg(&e, what);
    cr_expect(ge(int, e.master, 0), "%s: the message is about one master: %s", what, e.msg);
    if (e.master >= 0 && e.master < tc_n())
        cr_expect(not(zero(ptr, strstr(e.msg, tc_addr(e.master)))), "%s: %s", what, e.msg);
    cr_expect(not(zero(ptr, strstr(e.msg, "password"))), "%s: says nothing of the password: %s",
              what, e.msg);
    /* Decided once a majority refused: the rest may still be pending. */
    int refused = 0;
    for (int i = 0; i < tc_n(); i++) {
        if (redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_PENDING)
            continue;
        cr_expect(eq(int, redlock_outcome_vote(out, i)->kind, REDLOCK_VOTE_ERROR),
                  "%s: master %d voted %s (%s)", what, i,
                  redlock_vote_kind_name(redlock_outcome_vote(out, i)->kind),
                  redlock_outcome_vote(out, i)->detail);
        cr_expect(eq(int, redlock_outcome_vote(out, i)->err, REDLOCK_EAUTH), "%s: master %d: %s",
                  what, i, redlock_err_name(redlock_outcome_vote(out, i)->err));
        refused++;
    }
    cr_expect(ge(int, refused, tc_n() / 2 + 1), "%s", what);
    cr_log_info("%s: %s", what, e.msg);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "%s: a key was written", what);

    /* Inspection calls fail the same way, not as "no quorum" silently. */
    TC_STATUS(st);
    rc = redlock_status_get(c, res, strlen(res), st, &e);
    cr_expect(eq(int, rc, REDLOCK_EAUTH), "%s: status: %s: %s", what, redlock_err_name(rc), e.msg);
    redlock_client_free(c);
}

Test(auth, right_password_works)
{
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_error e;
    char res[128];
    int rc;

    cr_assert(not(zero(ptr, (void *)tc_password())));
    auth_config(&cfg, NULL, tc_password());
    c = tc_client(&cfg, -1);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    tc_barrier(c);
    cr_expect(eq(int, tc_count_token(res, strlen(res), redlock_lock_token(l), TTL_MS), tc_n()));
    cr_expect(eq(int, redlock_extend(c, l, 2 * TTL_MS, NULL, &e), 0), "%s", e.msg);
    cr_expect(eq(int, redlock_release(c, l, NULL, &e), 0), "%s", e.msg);
    tc_barrier(c);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0));
    redlock_lock_free(l);
    redlock_client_free(c);
}

Test(auth, wrong_password_is_eauth)
{
    redlock_config cfg;

    auth_config(&cfg, NULL, "not the password");
    expect_eauth(&cfg, "wrong password");
}

Test(auth, wrong_password_message_says_the_password_was_refused)
{
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_error e;
    char res[128];
    int rc;

    /* The operator gave a password and it was refused: the message must
     * say so (the master's WRONGPASS, or "AUTH failed"), not "NOAUTH
     * Authentication required", which reads as if none had been given.
     * A new client, so the SET is queued behind the handshake's AUTH. */
    auth_config(&cfg, NULL, "not the password");
    c = tc_client(&cfg, 0);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, REDLOCK_EAUTH), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(strstr(e.msg, "WRONGPASS") || strstr(e.msg, "AUTH failed"),
              "a refused password reported as: %s", e.msg);
    redlock_client_free(c);
}

Test(auth, no_password_is_eauth_and_asks_for_one)
{
    redlock_config cfg;

    auth_config(&cfg, NULL, NULL);
    expect_eauth(&cfg, "no password");
}

Test(auth, wrong_password_on_a_minority_still_acquires)
{
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    TC_STATUS(st);
    redlock_error e;
    char res[128];
    char user[64];
    int rc;

    /* Master 4 has an ACL user whose password we get wrong; the others
     * accept it. One master refusing AUTH costs one vote, not the lock. */
    snprintf(user, sizeof(user), "rl-minority-%ld", (long)getpid());
    for (int i = 0; i < tc_n(); i++) {
        redisReply *r = tc_cmd(i, "ACL SETUSER %s on >%s ~* &* +@all", user,
                               i == 4 ? "other-password" : "user-password");

        cr_assert(not(zero(ptr, r)));
        cr_assert(eq(int, r->type, REDIS_REPLY_STATUS), "ACL SETUSER: %s", r->str);
        freeReplyObject(r);
    }
    auth_config(&cfg, user, "user-password");
    /* One connection per master, so master 4 stays down with its AUTH
     * failure: a reconnect would queue the SET behind a new AUTH, and the
     * quorum of the other four would decide before it fails ("pending"). */
    cfg.reconnect_min_ms = cfg.reconnect_max_ms = 60000;
    c = tc_client(&cfg, 4);
    cr_assert(TC_AWAIT((redlock_ping(c, st, NULL),
                        redlock_status_master(st, 4)->err == REDLOCK_EAUTH),
                       10000),
              "master 4: %s: %s", redlock_err_name(redlock_status_master(st, 4)->err),
              redlock_status_master(st, 4)->detail);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, out, &e);
    cr_expect(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, redlock_outcome_vote(out, 4)->kind, REDLOCK_VOTE_ERROR), "voted %s (%s)",
              redlock_vote_kind_name(redlock_outcome_vote(out, 4)->kind),
              redlock_outcome_vote(out, 4)->detail);
    cr_expect(eq(int, redlock_outcome_vote(out, 4)->err, REDLOCK_EAUTH), "%s",
              redlock_outcome_vote(out, 4)->detail);
    if (l)
        redlock_release(c, l, NULL, NULL);
    redlock_lock_free(l);
    redlock_client_free(c);
    for (int i = 0; i < tc_n(); i++)
        freeReplyObject(tc_cmd(i, "ACL DELUSER %s", user));
}

Test(auth, acl_user_and_password_work_and_a_wrong_one_is_eauth)
{
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_error e;
    char res[128];
    char user[64];
    int rc;

    snprintf(user, sizeof(user), "rl-user-%ld", (long)getpid());
    for (int i = 0; i < tc_n(); i++) {
        redisReply *r = tc_cmd(i, "ACL SETUSER %s on >user-password ~* &* +@all", user);

        cr_assert(not(zero(ptr, r)));
        cr_assert(eq(int, r->type, REDIS_REPLY_STATUS), "ACL SETUSER: %s", r->str);
        freeReplyObject(r);
    }

    auth_config(&cfg, user, "user-password");
    c = tc_client(&cfg, -1);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &e);
    cr_expect(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    if (l) {
        cr_expect(eq(int, redlock_release(c, l, NULL, &e), 0), "%s", e.msg);
        redlock_lock_free(l);
    }
    redlock_client_free(c);

    auth_config(&cfg, user, "wrong-user-password");
    expect_eauth(&cfg, "wrong ACL password");
    auth_config(&cfg, "no-such-user", "user-password");
    expect_eauth(&cfg, "unknown ACL user");

    for (int i = 0; i < tc_n(); i++)
        freeReplyObject(tc_cmd(i, "ACL DELUSER %s", user));
}

/* The memory guard reads who the master is (INFO, inside the CHECK script)
 * before any vote on a connection: a user whose ACL refuses INFO cannot be
 * checked, so its votes do not count, and the vote says what is missing. */
Test(auth, an_acl_without_info_keeps_the_master_out_and_says_why)
{
    redlock_config cfg;
    redlock_client *c;
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    redlock_error e;
    char res[128], user[64];

    snprintf(user, sizeof(user), "rl-noinfo-%ld", (long)getpid());
    for (int i = 0; i < tc_n(); i++) {
        redisReply *r = tc_cmd(i, "ACL SETUSER %s on >user-password ~* &* +@all -info", user);

        cr_assert(r && r->type == REDIS_REPLY_STATUS, "ACL SETUSER: %s", r ? r->str : "-");
        freeReplyObject(r);
    }
    auth_config(&cfg, user, "user-password");
    c = tc_client(&cfg, -1);
    tc_resource(res, sizeof(res), NULL);
    int rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, out, &e);
    cr_expect(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, redlock_outcome_vote(out, 0)->kind, REDLOCK_VOTE_EXCLUDED), "%s",
              redlock_vote_kind_name(redlock_outcome_vote(out, 0)->kind));
    cr_expect(strstr(redlock_outcome_vote(out, 0)->detail, "ACL refuses the memory check") != NULL,
              "%s", redlock_outcome_vote(out, 0)->detail);
    /* A credential to fix, not an untrusted master (redlock-cli: 77). */
    cr_expect(eq(int, redlock_outcome_vote(out, 0)->err, REDLOCK_EAUTH), "%s",
              redlock_err_name(redlock_outcome_vote(out, 0)->err));
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "a key was written");
    redlock_lock_free(l);
    redlock_client_free(c);
    for (int i = 0; i < tc_n(); i++)
        freeReplyObject(tc_cmd(i, "ACL DELUSER %s", user));
}

/* ---- the ACL README.md gives a redlock user ---------------------------- */

/* Warnings the library logged, for the ACL tests. */
static char acl_log[4096];
static void acl_log_fn(int level, const char *msg, void *arg)
{
    (void)arg;
    size_t used = strlen(acl_log);
    if (level >= REDLOCK_LOG_WARN && used + strlen(msg) + 2 < sizeof(acl_log))
        snprintf(acl_log + used, sizeof(acl_log) - used, "%s\n", msg);
}

/* Run README's `redis-cli ACL SETUSER redlock ...` line on every master,
 * as user @user, password "acl-pass", with @edit applied (NULL: as it is;
 * else a sed expression for the line). */
static void readme_acl(const char *user, const char *edit)
{
    const char *path = getenv("REDLOCK_README");
    cr_assert(path != NULL, "REDLOCK_README not set (tests/meson.build)");
    FILE *f = fopen(path, "r");
    cr_assert(f != NULL, "cannot open %s", path);
    static char line[2048];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f))
        found = strncmp(line, "redis-cli ACL SETUSER redlock ", 30) == 0;
    fclose(f);
    cr_assert(found, "README.md has no `redis-cli ACL SETUSER redlock` line");
    line[strcspn(line, "\n")] = '\0';
    for (int i = 0; i < tc_n(); i++) {
        char script[3072], out[512];
        snprintf(
            script, sizeof(script),
            "line=$(printf '%%s' \"$1\" | sed -e 's/^redis-cli ACL SETUSER redlock /ACL SETUSER %s /' "
            "-e 's/PASSWORD/acl-pass/' -e 's/~locks:/~acl-%s:/' %s%s%s); "
            "eval \"redis-cli -p %d -a \\\"$2\\\" --no-auth-warning $line\"",
            user, user, edit ? "-e '" : "", edit ? edit : "", edit ? "'" : "", tc_port(i));
        const char *argv[] = { "sh", "-c", script, "sh", line, tc_password(), NULL };
        int rc = tc_spawn(argv, out, sizeof(out));
        cr_assert(eq(int, rc, 0), "README's ACL line on master %d: exit %d: %s", i, rc, out);
        cr_assert(strncmp(out, "OK", 2) == 0, "README's ACL line on master %d: %s", i, out);
    }
}

static redlock_client *acl_client(const char *user, char *prefix, size_t size)
{
    redlock_config cfg;

    snprintf(prefix, size, "acl-%s:", user);
    auth_config(&cfg, user, "acl-pass");
    cfg.key_prefix = prefix;
    cfg.log_fn = acl_log_fn;
    cfg.log_level = REDLOCK_LOG_WARN;
    cfg.retry_count = 20;
    cfg.retry_delay_ms = 20;
    return tc_client(&cfg, -1);
}

/* B's waiting acquire, on a thread of its own while A still holds. */
struct waiter_arg {
    redlock_client *c;
    const redlock_resource *one;
    const redlock_acquire_opts *o;
    redlock_lock *l;
    int rc;
};

static void *waiter_main(void *p)
{
    struct waiter_arg *w = p;
    w->rc = redlock_acquire_with(w->c, w->one, 1, w->o, &w->l, NULL, NULL);
    return NULL;
}

/* Has a waiter for @res (under @prefix) queued on master 0, within
 * @timeout_ms? The queue is the key "prefix res \0q" (script.c). */
static bool queued(const char *prefix, const char *res, int timeout_ms)
{
    char qkey[256];
    int qlen = snprintf(qkey, sizeof(qkey), "%s%s", prefix, res) + 2;
    memcpy(qkey + qlen - 2, "\0q", 2);
    return TC_AWAIT(({
                        redisReply *q = tc_cmd(0, "ZCARD %b", qkey, (size_t)qlen);
                        int n = q && q->type == REDIS_REPLY_INTEGER ? (int)q->integer : 0;
                        freeReplyObject(q);
                        n >= 1;
                    }),
                    timeout_ms);
}

/* Everything redlock does works for a user with exactly README's ACL: the
 * guard's check, a fenced acquire, extend, a waiter that queues, subscribes
 * and is handed the lock by the release (PUBLISH), ping, declare-empty. */
Test(auth, the_readme_acl_is_all_a_redlock_user_needs)
{
    char user[64], prefix[80], res[128];
    redlock_lock *a = NULL;
    redlock_error e;
    TC_STATUS(st);

    snprintf(user, sizeof(user), "rl-readme-%ld", (long)getpid());
    readme_acl(user, NULL);
    acl_log[0] = '\0';
    redlock_client *c1 = acl_client(user, prefix, sizeof(prefix));
    redlock_client *c2 = acl_client(user, prefix, sizeof(prefix));
    tc_resource(res, sizeof(res), NULL);
    redlock_resource one = { res, strlen(res) };
    redlock_acquire_opts o;
    redlock_acquire_opts_init(&o);
    o.ttl_ms = TTL_MS;
    o.flags = REDLOCK_FENCE;
    int rc = redlock_acquire_with(c1, &one, 1, &o, &a, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, redlock_extend(c1, a, TTL_MS, NULL, &e), 0), "extend: %s", e.msg);

    o.wait_ms = 5000;
    o.retry_delay_ms = 2000; /* B is woken by the hand-off, not by its poll */
    o.retry_jitter_ms = 0;
    struct waiter_arg w = { c2, &one, &o, NULL, -1 };
    pthread_t t;
    cr_assert(eq(int, pthread_create(&t, NULL, waiter_main, &w), 0));
    cr_expect(queued(prefix, res, 3000), "B never queued");
    uint64_t t0 = tc_now_us();
    cr_expect(eq(int, redlock_release(c1, a, NULL, &e), 0), "release: %s", e.msg);
    pthread_join(t, NULL);
    cr_assert(eq(int, w.rc, 0), "B: %s", redlock_err_name(w.rc));
    cr_expect(lt(u64, tc_now_us() - t0, 1500000ull), "B was not woken by the release");
    cr_expect(gt(u64, redlock_lock_fence(w.l), redlock_lock_fence(a)), "fences increase");
    cr_expect(eq(int, redlock_release(c2, w.l, NULL, &e), 0), "release B: %s", e.msg);
    cr_expect(eq(int, redlock_ping(c1, st, &e), 0), "ping: %s", e.msg);
    for (int i = 0; i < tc_n(); i++)
        cr_expect(not(redlock_status_master(st, i)->excluded), "master %d excluded: %s", i,
                  redlock_status_master(st, i)->excluded_why);
    size_t declared = 99;
    cr_expect(eq(int, redlock_declare_empty(c1, &declared, &e), 0), "declare-empty: %s", e.msg);
    cr_expect(eq(str, acl_log, ""), "warnings with README's ACL:\n%s", acl_log);
    redlock_lock_free(a);
    redlock_lock_free(w.l);
    redlock_client_free(c1);
    redlock_client_free(c2);
    for (int i = 0; i < tc_n(); i++)
        freeReplyObject(tc_cmd(i, "ACL DELUSER %s", user));
}

/* Without the channel, a waiting client says so once, as an event naming the
 * ACL rule to add, and polls; a release while it waits hands the lock over
 * all the same and says it released (the wake-up alone is refused); a
 * command the ACL refuses is named in the vote, not "check the password". */
Test(auth, an_acl_without_the_channel_or_a_command_says_what_is_missing)
{
    char user[64], prefix[80], res[128];
    redlock_lock *a = NULL, *b = NULL;
    TC_OUTCOME(out);
    redlock_error e;

    snprintf(user, sizeof(user), "rl-nochan-%ld", (long)getpid());
    readme_acl(user, "s/ resetchannels [^ ]*/ resetchannels/");
    acl_log[0] = '\0';
    redlock_client *c1 = acl_client(user, prefix, sizeof(prefix));
    redlock_client *c2 = acl_client(user, prefix, sizeof(prefix));
    tc_resource(res, sizeof(res), NULL);
    a = tc_must_acquire(c1, res, 300, NULL);
    redlock_resource one = { res, strlen(res) };
    redlock_acquire_opts o;
    redlock_acquire_opts_init(&o);
    o.ttl_ms = TTL_MS;
    o.wait_ms = 5000;
    int rc = redlock_acquire_with(c2, &one, 1, &o, &b, out, &e); /* by polling */
    cr_assert(eq(int, rc, 0), "B: %s: %s", redlock_err_name(rc), e.msg);
    int said = 0;
    for (const char *p = acl_log; (p = strstr(p, "refuses the wake-up channel")); p++)
        said++;
    /* Both clients waited (redlock_acquire() with retry_count polls): each
     * says it once, whatever the number of masters. */
    cr_expect(eq(int, said, 2), "said %d times (once per client):\n%s", said, acl_log);
    cr_expect(strstr(acl_log, "ACL SETUSER ") != NULL && strstr(acl_log, user) != NULL &&
                  strstr(acl_log, "'&redlock:wake:*'") != NULL,
              "names the rule to add:\n%s", acl_log);

    /* B holds it; A waits by polling; B's release hands it over to A (the
     * reservation is made, only the wake-up is refused): the release says
     * it released, and A takes the lock at its next poll. */
    {
        struct waiter_arg w = { c1, &one, &o, NULL, -1 };
        pthread_t t;

        o.wait_ms = 5000;
        o.retry_delay_ms = 300;
        o.retry_jitter_ms = 0;
        cr_assert(eq(int, pthread_create(&t, NULL, waiter_main, &w), 0));
        cr_expect(queued(prefix, res, 3000), "A never queued");
        rc = redlock_release(c2, b, NULL, &e);
        cr_expect(eq(int, rc, 0), "release with a waiter: %s: %s", redlock_err_name(rc), e.msg);
        pthread_join(t, NULL);
        cr_expect(eq(int, w.rc, 0), "A: %s", redlock_err_name(w.rc));
        redlock_lock_free(b);
        b = w.l;
    }
    redlock_release(c1, b, NULL, NULL);
    redlock_lock_free(a);
    redlock_lock_free(b);
    redlock_client_free(c1);
    redlock_client_free(c2);
    for (int i = 0; i < tc_n(); i++) {
        freeReplyObject(tc_cmd(i, "ACL DELUSER %s", user));
        freeReplyObject(tc_cmd(i, "ACL SETUSER %s on >acl-pass ~* &* +@all -evalsha", user));
    }

    redlock_config cfg;
    auth_config(&cfg, user, "acl-pass");
    redlock_client *c = tc_client(&cfg, -1);
    /* An uncontended acquire may take the fast path (no script: acquire.c);
     * the release is a script whatever the path: one of them is refused. */
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &a, out, &e);
    const char *which = "acquire";
    if (rc == 0) {
        which = "release";
        rc = redlock_release(c, a, NULL, &e);
        redlock_lock_free(a);
    }
    cr_expect(eq(int, rc, REDLOCK_EAUTH), "%s: %s: %s", which, redlock_err_name(rc), e.msg);
    cr_expect(strstr(e.msg, "ACL: the user may not run 'evalsha'") != NULL &&
                  strstr(e.msg, "password") == NULL,
              "%s: %s", which, e.msg);
    redlock_client_free(c);
    for (int i = 0; i < tc_n(); i++)
        freeReplyObject(tc_cmd(i, "ACL DELUSER %s", user));
}
