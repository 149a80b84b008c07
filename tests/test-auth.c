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
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/logging.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"

#define TTL_MS 10000u
#define FALLBACK_PASSWORD "test-auth fallback"

static int set_by_us;   /* the suite set requirepass itself */

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
    core_config(cfg);
    cfg->username = user;
    cfg->password = password;
    cfg->retry_count = 0;
}

/* An acquire that must fail with EAUTH, naming a master, leaving no key. */
static void expect_eauth(const redlock_config *cfg, const char *what)
{
    redlock_client *c;
    redlock_lock *l = NULL;
    redlock_outcome out;
    redlock_error e;
    char res[128];
    int rc;

    c = core_client(cfg, 0);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
    cr_expect(eq(int, rc, REDLOCK_EAUTH), "%s: %s: %s", what, redlock_err_name(rc), e.msg);
    cr_expect(zero(ptr, l));
    cr_expect(eq(int, e.code, REDLOCK_EAUTH));
    core_expect_msg(&e, what);
    cr_expect(ge(int, e.master, 0), "%s: the message is about one master: %s", what, e.msg);
    if (e.master >= 0 && e.master < tc_n())
        cr_expect(not(zero(ptr, strstr(e.msg, tc_addr(e.master)))), "%s: %s", what, e.msg);
    cr_expect(not(zero(ptr, strstr(e.msg, "password"))), "%s: says nothing of the password: %s",
              what, e.msg);
    /* Decided once a majority refused: the rest may still be pending. */
    int refused = 0;
    for (int i = 0; i < tc_n(); i++) {
        if (out.votes[i].kind == REDLOCK_VOTE_PENDING)
            continue;
        cr_expect(eq(int, out.votes[i].kind, REDLOCK_VOTE_ERROR), "%s: master %d voted %s (%s)",
                  what, i, redlock_vote_kind_name(out.votes[i].kind), out.votes[i].detail);
        cr_expect(eq(int, out.votes[i].err, REDLOCK_EAUTH), "%s: master %d: %s", what, i,
                  redlock_err_name(out.votes[i].err));
        refused++;
    }
    cr_expect(ge(int, refused, tc_n() / 2 + 1), "%s", what);
    cr_log_info("%s: %s", what, e.msg);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "%s: a key was written", what);

    /* Inspection calls fail the same way, not as "no quorum" silently. */
    redlock_status st;
    rc = redlock_status_get(c, res, strlen(res), &st, &e);
    cr_expect(eq(int, rc, REDLOCK_EAUTH), "%s: status: %s: %s", what, redlock_err_name(rc),
              e.msg);
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
    c = core_client(&cfg, -1);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    core_barrier(c);
    cr_expect(eq(int, core_count_token(res, strlen(res), redlock_lock_token(l), TTL_MS), tc_n()));
    cr_expect(eq(int, redlock_extend(c, l, 2 * TTL_MS, NULL, &e), 0), "%s", e.msg);
    cr_expect(eq(int, redlock_release(c, l, NULL, &e), 0), "%s", e.msg);
    core_barrier(c);
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
    c = core_client(&cfg, 0);
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
    redlock_outcome out;
    redlock_status st;
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
    c = core_client(&cfg, 4);
    cr_assert(TC_AWAIT((memset(&st, 0, sizeof(st)), redlock_ping(c, &st, NULL),
                        st.masters[4].err == REDLOCK_EAUTH),
                       10000),
              "master 4: %s: %s", redlock_err_name(st.masters[4].err), st.masters[4].detail);
    tc_resource(res, sizeof(res), NULL);
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
    cr_expect(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, out.votes[4].kind, REDLOCK_VOTE_ERROR), "voted %s (%s)",
              redlock_vote_kind_name(out.votes[4].kind), out.votes[4].detail);
    cr_expect(eq(int, out.votes[4].err, REDLOCK_EAUTH), "%s", out.votes[4].detail);
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
    c = core_client(&cfg, -1);
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
    redlock_outcome out;
    redlock_error e;
    char res[128], user[64];

    snprintf(user, sizeof(user), "rl-noinfo-%ld", (long)getpid());
    for (int i = 0; i < tc_n(); i++) {
        redisReply *r = tc_cmd(i, "ACL SETUSER %s on >user-password ~* &* +@all -info", user);

        cr_assert(r && r->type == REDIS_REPLY_STATUS, "ACL SETUSER: %s", r ? r->str : "-");
        freeReplyObject(r);
    }
    auth_config(&cfg, user, "user-password");
    c = core_client(&cfg, -1);
    tc_resource(res, sizeof(res), NULL);
    int rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, &out, &e);
    cr_expect(eq(int, rc, REDLOCK_ENOQUORUM), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, out.votes[0].kind, REDLOCK_VOTE_EXCLUDED), "%s",
              redlock_vote_kind_name(out.votes[0].kind));
    cr_expect(strstr(out.votes[0].detail, "refused by the ACL: the user needs +info") != NULL,
              "%s", out.votes[0].detail);
    cr_expect(eq(int, tc_key_count(res, strlen(res)), 0), "a key was written");
    redlock_lock_free(l);
    redlock_client_free(c);
    for (int i = 0; i < tc_n(); i++)
        freeReplyObject(tc_cmd(i, "ACL DELUSER %s", user));
}
