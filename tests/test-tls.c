/* test-tls.c - TLS to masters against real redis-server processes with tls-port.
 *
 * The test makes a CA, server and client certificates with openssl
 * (helpers/servers.c) and starts its own TLS servers on its port block;
 * with-cluster.sh's one plain master serves as "a plain port". Every
 * failure must be one line that names the master and says what to fix, and
 * must come from the connection itself, well before the node timeout: a
 * handshake that fails never hangs past connect_timeout_ms.
 *
 * A build without TLS (hiredis 0.14) skips these, each with one line, and
 * runs only no_tls_build_refuses_tls_with_einval.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "cluster.h"
#include "await.h"
#include "core.h"
#include "servers.h"

#define TTL_MS 10000
#define CONNECT_MS 1000 /* connect_timeout_ms of the clients here */
#define NODE_MS 5000    /* node_timeout_ms: far beyond it, so a failure seen is the connection's */

/* ---- servers and clients ------------------------------------------------------ */

/* TLS_TLS12_*: TLS 1.2 only, where a refusal is the handshake_failure
 * alert whatever its cause: a client certificate missing, or no cipher in
 * common (the one allowed needs an RSA key; the server's is EC). */
enum {
    TLS_OPTIONAL,
    TLS_REQUIRE_CLIENT,
    TLS_OTHER_NAME,
    TLS_TLS12_REQUIRE_CLIENT,
    TLS_TLS12_NO_COMMON_CIPHER
};

static tc_redis *servers[4];

/* A TLS-only server on port k of the block. */
static tc_redis *tls_server(int k, int kind)
{
    char port[16];
    snprintf(port, sizeof(port), "%d", tc_block_port(k));
    bool require = kind == TLS_REQUIRE_CLIENT || kind == TLS_TLS12_REQUIRE_CLIENT;
    bool tls12 = kind == TLS_TLS12_REQUIRE_CLIENT || kind == TLS_TLS12_NO_COMMON_CIPHER;
    const char *args[] = {
        "--port",
        "0",
        "--tls-port",
        port,
        "--tls-cert-file",
        tc_pki_file(kind == TLS_OTHER_NAME ? "other.crt" : "server.crt"),
        "--tls-key-file",
        tc_pki_file(kind == TLS_OTHER_NAME ? "other.key" : "server.key"),
        "--tls-ca-cert-file",
        tc_pki_file("ca.crt"),
        "--tls-auth-clients",
        require ? "yes" : "optional",
        /* Otherwise redis' default protocols and OpenSSL's ciphers. */
        "--tls-protocols",
        tls12 ? "TLSv1.2" : "TLSv1.2 TLSv1.3",
        "--tls-ciphers",
        kind == TLS_TLS12_NO_COMMON_CIPHER ? "AES128-SHA" : "DEFAULT",
        NULL,
    };
    return servers[k - 1] = tc_redis_start(args);
}

static bool build_has_tls(void)
{
    redlock_config cfg;
    redlock_config_init(&cfg);
    cfg.masters = "rediss://127.0.0.1:1";
    return redlock_config_check(&cfg, NULL) == 0;
}

static void need_tls(void)
{
    if (!build_has_tls())
        cr_skip_test("this build has no TLS (hiredis 0.14, or -Dtls=disabled): TLS tests run "
                     "against hiredis >= 1.0 (tools/run-tests.sh stage hiredis12)");
}

static void config(redlock_config *cfg, const char *masters)
{
    redlock_config_init(cfg);
    cfg->masters = masters;
    cfg->tls_ca_file = tc_pki_file("ca.crt");
    cfg->retry_count = 0;
    cfg->connect_timeout_ms = CONNECT_MS;
    cfg->node_timeout_ms = NODE_MS;
    cfg->log_fn = tc_log;
    cfg->log_level = REDLOCK_LOG_INFO;
}

static void teardown(void)
{
    for (size_t i = 0; i < sizeof(servers) / sizeof(servers[0]); i++) {
        tc_redis_stop(servers[i]);
        servers[i] = NULL;
    }
}

TestSuite(tls, .fini = teardown, .timeout = 120);

/* Take and release a lock through @cfg; every master over TLS, each
 * holding the token in between. */
static void lock_round_trip(const redlock_config *cfg, uint32_t n)
{
    redlock_client *c = NULL;
    redlock_error e;
    int rc = redlock_client_new(cfg, NULL, &c, &e);
    cr_assert(eq(int, rc, 0), "%s", e.msg);
    size_t up = 0;
    rc = redlock_ready(c, n, 10000, &up, &e);
    cr_assert(eq(int, rc, 0), "%zu of %u up: %s; log:\n%s", up, n, e.msg, tc_log_text());
    /* Servers this test just started: nothing to forget (restart guard). */
    cr_assert(eq(int, redlock_declare_empty(c, NULL, &e), 0), "%s", e.msg);

    char res[128];
    tc_resource(res, sizeof(res), NULL);
    redlock_lock *l = NULL;
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    TC_STATUS(st);
    TC_STATUS(ping);
    cr_assert(eq(int, redlock_status_get(c, res, strlen(res), st, &e), 0), "%s", e.msg);
    cr_assert(eq(int, redlock_ping(c, ping, &e), 0), "%s", e.msg);
    for (uint32_t i = 0; i < n; i++) {
        cr_expect(eq(int, redlock_status_master(ping, i)->tls, 1), "master %u not over TLS", i);
        cr_expect(eq(str, (char *)redlock_status_master(st, i)->token,
                     (char *)redlock_lock_token(l)),
                  "master %u", i);
    }
    cr_expect(eq(int, redlock_release(c, l, NULL, &e), 0), "%s", e.msg);
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* An acquire through @cfg (one master) fails on the connection with @code
 * (EAUTH: a certificate refused, which waiting cannot fix; 0: ENOQUORUM or
 * EPROTO, the master is not what TLS expects): one line naming master 0
 * (@name) with @what in it, the log naming it by index too, and no wait for
 * the node timeout. The message goes to @msg. */
static void expect_connection_failure(const redlock_config *cfg, int code, const char *name,
                                      const char *what, char msg[REDLOCK_ERRMSG_LEN])
{
    redlock_client *c = NULL;
    redlock_error e;
    int rc = redlock_client_new(cfg, NULL, &c, &e);
    cr_assert(eq(int, rc, 0), "%s", e.msg);
    char res[128];
    tc_resource(res, sizeof(res), NULL);
    redlock_lock *l = NULL;
    TC_OUTCOME(out);
    uint64_t t0 = tc_now_us();
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, out, &e);
    uint64_t ms = (tc_now_us() - t0) / 1000;
    cr_log_info("%s (%llu ms)", e.msg, (unsigned long long)ms);
    if (code)
        cr_expect(eq(int, rc, code), "%s: %s", redlock_err_name(rc), e.msg);
    else
        cr_expect(rc == REDLOCK_ENOQUORUM || rc == REDLOCK_EPROTO, "%s: %s", redlock_err_name(rc),
                  e.msg);
    cr_expect(zero(ptr, l));
    tc_expect_msg(&e, what);
    cr_expect(not(zero(ptr, strstr(e.msg, name))), "the message does not name %s: %s", name, e.msg);
    cr_expect(not(zero(ptr, strstr(e.msg, what))), "no \"%s\" in: %s", what, e.msg);
    cr_expect(zero(ptr, strstr(redlock_outcome_vote(out, 0)->detail, "no answer within")),
              "the node timeout decided, not the connection: %s",
              redlock_outcome_vote(out, 0)->detail);
    /* The connect timeout bounds a handshake that stalls; the node timeout
     * is five times that, so a decision past it was not the connection's. */
    cr_expect(lt(u64, ms, (uint64_t)NODE_MS), "took %llu ms", (unsigned long long)ms);
    redlock_client_free(c);
    char tag[300];
    snprintf(tag, sizeof(tag), "master 0 (%s)", name);
    cr_expect(tc_log_has(tag, "disconnected"), "no log line naming %s:\n%s", tag, tc_log_text());
    memcpy(msg, e.msg, REDLOCK_ERRMSG_LEN);
}

/* One master: a server of @kind on port 1, written as @scheme://...; its
 * name into @name, and a client config for it into @cfg. */
static void one_master(int kind, const char *scheme, char name[64], redlock_config *cfg)
{
    need_tls();
    tls_server(1, kind);
    snprintf(name, 64, "%s://127.0.0.1:%d", scheme, tc_block_port(1));
    config(cfg, name);
}

/* ---- it works ---------------------------------------------------------------- */

/* Three TLS servers, on ports 1..3, written by @fmt (three %d). */
static void three_masters(const char *fmt, char masters[256], redlock_config *cfg)
{
    need_tls();
    for (int k = 1; k <= 3; k++)
        tls_server(k, TLS_OPTIONAL);
    snprintf(masters, 256, fmt, tc_block_port(1), tc_block_port(2), tc_block_port(3));
    config(cfg, masters);
}

Test(tls, rediss_urls_handshake_and_lock)
{
    char masters[256];
    redlock_config cfg;
    three_masters("rediss://127.0.0.1:%d,rediss://127.0.0.1:%d,rediss://localhost:%d", masters,
                  &cfg);
    lock_round_trip(&cfg, 3);
    cr_expect(tc_log_has("connected (TLS)", "master 2"), "log:\n%s", tc_log_text());
}

Test(tls, config_tls_makes_host_port_masters_tls)
{
    char masters[256];
    redlock_config cfg;
    three_masters("127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", masters, &cfg);
    cfg.tls = 1;
    lock_round_trip(&cfg, 3);
}

Test(tls, mutual_tls_with_a_client_certificate)
{
    char name[64];
    redlock_config cfg;
    one_master(TLS_REQUIRE_CLIENT, "rediss", name, &cfg);
    cfg.tls_cert_file = tc_pki_file("client.crt");
    cfg.tls_key_file = tc_pki_file("client.key");
    lock_round_trip(&cfg, 1);
}

Test(tls, server_name_picks_the_name_the_certificate_must_hold)
{
    char name[64];
    redlock_config cfg;
    one_master(TLS_OTHER_NAME, "rediss", name, &cfg);
    cfg.tls_server_name = "other.example";
    lock_round_trip(&cfg, 1);
}

/* A TLS master that dies mid-session (SIGKILL: no close_notify, so OpenSSL
 * reads an unexpected EOF) is down, like a plain one: the handshake was
 * fine, so neither its certificate nor its port is to blame, and the next
 * acquire wins on the other two and counts it as down. Once it is back, the
 * client reconnects to it. */
Test(tls, a_killed_master_is_down_not_misconfigured)
{
    char masters[256];
    redlock_config cfg;
    three_masters("rediss://127.0.0.1:%d,rediss://127.0.0.1:%d,rediss://127.0.0.1:%d", masters,
                  &cfg);
    /* No reconnect for 3 s: the next acquire's vote carries the reason the
     * connection ended, not that of a reconnect refused on the dead port. */
    cfg.reconnect_min_ms = cfg.reconnect_max_ms = 3000;
    redlock_client *c = NULL;
    redlock_error e;
    cr_assert(eq(int, redlock_client_new(&cfg, NULL, &c, &e), 0), "%s", e.msg);
    cr_assert(eq(int, redlock_ready(c, 3, 10000, NULL, &e), 0), "%s", e.msg);
    cr_assert(eq(int, redlock_declare_empty(c, NULL, &e), 0), "%s", e.msg);
    char res[128];
    tc_resource(res, sizeof(res), NULL);
    redlock_lock *l = NULL;
    int rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, NULL, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    cr_expect(eq(int, redlock_release(c, l, NULL, &e), 0), "%s", e.msg);
    redlock_lock_free(l);

    tc_redis_stop(servers[1]);
    servers[1] = NULL;
    char tag[64];
    snprintf(tag, sizeof(tag), "master 1 (rediss://127.0.0.1:%d)", tc_block_port(2));
    cr_assert(TC_AWAIT(tc_log_has(tag, "disconnected"), 10000), "log:\n%s", tc_log_text());

    TC_OUTCOME(out);
    l = NULL;
    rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, out, &e);
    cr_assert(eq(int, rc, 0), "%s: %s", redlock_err_name(rc), e.msg);
    const redlock_vote *v = redlock_outcome_vote(out, 1);
    cr_log_info("master 1: %s %s: %s", redlock_vote_kind_name(v->kind), redlock_err_name(v->err),
                v->detail);
    cr_expect(eq(int, v->kind, REDLOCK_VOTE_DOWN), "%s: %s", redlock_vote_kind_name(v->kind),
              v->detail);
    cr_expect(eq(int, v->err, REDLOCK_ECONNECT), "%s: %s", redlock_err_name(v->err), v->detail);
    cr_expect(zero(ptr, strstr(v->detail, "TLS port")), "%s", v->detail);
    cr_expect(eq(int, redlock_release(c, l, NULL, &e), 0), "%s", e.msg);
    redlock_lock_free(l);

    tls_server(2, TLS_OPTIONAL);
    rc = redlock_ready(c, 3, 20000, NULL, &e);
    cr_expect(eq(int, rc, 0), "%s; log:\n%s", e.msg, tc_log_text());
    redlock_client_free(c);
}

/* ---- it fails, clearly ----------------------------------------------------------- */

Test(tls, wrong_ca_is_a_one_line_error)
{
    char name[64], msg[REDLOCK_ERRMSG_LEN];
    redlock_config cfg;
    one_master(TLS_OPTIONAL, "rediss", name, &cfg);
    cfg.tls_ca_file = tc_pki_file("other-ca.crt");
    expect_connection_failure(&cfg, REDLOCK_EAUTH, name, "certificate verify failed", msg);
}

Test(tls, verification_is_on_by_default)
{
    char name[64], msg[REDLOCK_ERRMSG_LEN];
    redlock_config cfg;
    one_master(TLS_OTHER_NAME, "rediss", name, &cfg); /* a valid certificate, for other.example */
    expect_connection_failure(&cfg, REDLOCK_EAUTH, name, "IP address mismatch", msg);
    /* Only turning verification off accepts it. */
    cfg.tls_verify = 0;
    lock_round_trip(&cfg, 1);
}

Test(tls, a_server_name_the_certificate_lacks_fails)
{
    char name[64], msg[REDLOCK_ERRMSG_LEN];
    redlock_config cfg;
    one_master(TLS_OPTIONAL, "rediss", name, &cfg);
    cfg.tls_server_name = "wrong.example";
    expect_connection_failure(&cfg, REDLOCK_EAUTH, name, "hostname mismatch", msg);
}

Test(tls, missing_client_certificate_is_a_one_line_error)
{
    char name[64], msg[REDLOCK_ERRMSG_LEN];
    redlock_config cfg;
    one_master(TLS_REQUIRE_CLIENT, "rediss", name, &cfg);
    expect_connection_failure(&cfg, REDLOCK_EAUTH, name, "tls_cert_file", msg);
}

/* TLS 1.2 says "handshake failure" for both: the advice follows whether
 * the master asked for a certificate we lack. (The first master's alert
 * can be lost to a reset: it refuses us with the rest of our flight still
 * unread. Then the request alone says it, as the same advice.) */
Test(tls, tls12_handshake_failure_advice_follows_the_certificate_request)
{
    char name[64], msg[REDLOCK_ERRMSG_LEN];
    redlock_config cfg;
    one_master(TLS_TLS12_REQUIRE_CLIENT, "rediss", name, &cfg);
    expect_connection_failure(&cfg, REDLOCK_EAUTH, name, "tls_cert_file", msg);

    tc_redis_stop(servers[0]);
    tls_server(1, TLS_TLS12_NO_COMMON_CIPHER);
    expect_connection_failure(&cfg, REDLOCK_EAUTH, name, "client certificate? TLS version?", msg);
    cr_expect(zero(ptr, strstr(msg, "tls_cert_file")), "%s", msg);
}

Test(tls, plain_client_on_a_tls_port_is_a_one_line_error)
{
    char name[64], msg[REDLOCK_ERRMSG_LEN];
    redlock_config cfg;
    one_master(TLS_OPTIONAL, "redis", name, &cfg);
    cfg.tls_ca_file = NULL; /* no master uses TLS: the TLS settings would be refused */
    expect_connection_failure(&cfg, 0, name, "TLS port", msg);
}

Test(tls, tls_client_on_a_plain_port_is_a_one_line_error)
{
    need_tls();
    char name[64], msg[REDLOCK_ERRMSG_LEN];
    snprintf(name, sizeof(name), "rediss://127.0.0.1:%d", tc_port(0));
    redlock_config cfg;
    config(&cfg, name);
    /* Redis either answers the ClientHello with an error line (when one of
     * its random bytes is a newline) or waits for the rest of the "command"
     * until the connect timeout: both say TLS, and neither hangs. */
    expect_connection_failure(&cfg, 0, name, "TLS", msg);
    cr_expect(not(zero(ptr, strstr(msg, "plain port"))), "no hint about the plain port: %s", msg);
}

/* ---- configuration ---------------------------------------------------------------- */

Test(tls, unloadable_tls_files_are_einval_naming_the_field)
{
    need_tls();
    redlock_config cfg;
    redlock_client *c = NULL;
    redlock_error e;
    config(&cfg, "rediss://127.0.0.1:1");
    cfg.tls_ca_file = "/nonexistent/ca.crt";
    cr_expect(eq(int, redlock_client_new(&cfg, NULL, &c, &e), REDLOCK_EINVAL));
    cr_expect(zero(ptr, c));
    tc_expect_msg(&e, "tls_ca_file");
    cr_expect(not(zero(ptr, strstr(e.msg, "config.tls_ca_file"))), "%s", e.msg);
    cr_expect(not(zero(ptr, strstr(e.msg, "No such file"))), "%s", e.msg);

    config(&cfg, "rediss://127.0.0.1:1");
    cfg.tls_cert_file = tc_pki_file("client.crt");
    cfg.tls_key_file = tc_pki_file("server.key"); /* not the certificate's key */
    cr_expect(eq(int, redlock_client_new(&cfg, NULL, &c, &e), REDLOCK_EINVAL));
    cr_expect(not(zero(ptr, strstr(e.msg, "config.tls_key_file"))), "%s", e.msg);

    config(&cfg, "rediss://127.0.0.1:1");
    cfg.tls_cert_file = tc_pki_file("client.crt");
    cr_expect(eq(int, redlock_config_check(&cfg, &e), REDLOCK_EINVAL));
    cr_expect(not(zero(ptr, strstr(e.msg, "go together"))), "%s", e.msg);

    config(&cfg, "127.0.0.1:1"); /* TLS files, and no master over TLS */
    cr_expect(eq(int, redlock_config_check(&cfg, &e), REDLOCK_EINVAL));
    cr_expect(not(zero(ptr, strstr(e.msg, "no master uses TLS"))), "%s", e.msg);

    config(&cfg, "unix:///tmp/x.sock");
    cfg.tls = 1;
    cr_expect(eq(int, redlock_config_check(&cfg, &e), REDLOCK_EINVAL));
    cr_expect(not(zero(ptr, strstr(e.msg, "unix socket"))), "%s", e.msg);
}

/* Readable is for the effective user, the one OpenSSL opens the file as
 * (a setuid program, sudo -u): root's own file, as "nobody" would see it. */
Test(tls, an_unreadable_tls_file_says_so_for_the_effective_user)
{
    need_tls();
    if (geteuid() != 0)
        cr_skip_test("needs root, to read a file as another effective user");
    char path[512];
    snprintf(path, sizeof(path), "%s/ca-root-only.crt", tc_scratch_dir());
    FILE *f = fopen(path, "w");
    cr_assert(not(zero(ptr, f)), "%s: %s", path, strerror(errno));
    fclose(f);
    cr_assert(eq(int, chmod(path, 0600), 0), "%s", strerror(errno));

    redlock_config cfg;
    redlock_client *c = NULL;
    redlock_error e;
    config(&cfg, "rediss://127.0.0.1:1");
    cfg.tls_ca_file = path;
    cr_assert(eq(int, seteuid(65534), 0), "seteuid: %s", strerror(errno));
    int rc = redlock_client_new(&cfg, NULL, &c, &e);
    cr_assert(eq(int, seteuid(0), 0), "seteuid back: %s", strerror(errno));
    cr_expect(eq(int, rc, REDLOCK_EINVAL), "%s", redlock_err_name(rc));
    cr_expect(zero(ptr, c));
    cr_expect(not(zero(ptr, strstr(e.msg, "cannot read it: Permission denied"))), "%s", e.msg);
}

Test(tls, no_tls_build_refuses_tls_with_einval)
{
    if (build_has_tls())
        cr_skip_test("this build has TLS: the refusal is tested where it has none (hiredis 0.14)");
    static const char *const lists[] = { "rediss://127.0.0.1:1", "127.0.0.1:1" };
    for (int i = 0; i < 2; i++) {
        redlock_config cfg;
        redlock_client *c = NULL;
        redlock_error e;
        redlock_config_init(&cfg);
        cfg.masters = lists[i];
        cfg.tls = i == 1;
        cr_expect(eq(int, redlock_config_check(&cfg, &e), REDLOCK_EINVAL), "%s", lists[i]);
        tc_expect_msg(&e, "config_check");
        cr_expect(not(zero(ptr, strstr(e.msg, "no TLS"))), "%s", e.msg);
        cr_expect(eq(int, redlock_client_new(&cfg, NULL, &c, &e), REDLOCK_EINVAL));
        cr_expect(zero(ptr, c));
        cr_expect(not(zero(ptr, strstr(e.msg, "hiredis >= 1.0"))), "%s", e.msg);
    }
}
