/* test-cli-tls.c - redlock-cli's TLS options against real TLS redis-servers.
 *
 * The options are redis-cli's (--tls, --cacert, --cert, --key, --sni,
 * --insecure); rediss:// masters need no --tls. The servers and the PKI
 * are the test's own (helpers/servers.c). Every failure is one line in the
 * CLI's words (options, not the library's field names) with the exit
 * status a script can act on: 77 for a certificate one side refuses, 64
 * for a file that cannot be read.
 *
 * A build without TLS skips these with one line each, except the last,
 * which checks what such a build says.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <redlock.h>

#include "cli.h"
#include "cluster.h"
#include "servers.h"

static tc_redis *servers[3];

static void teardown(void)
{
    for (int k = 0; k < 3; k++) {
        tc_redis_stop(servers[k]);
        servers[k] = NULL;
    }
    tcli_teardown();
}

TestSuite(cli_tls, .init = tcli_setup, .fini = teardown, .timeout = 60);

static bool build_has_tls(void)
{
    redlock_config cfg;
    redlock_config_init(&cfg);
    cfg.masters = "rediss://127.0.0.1:1";
    return redlock_config_check(&cfg, NULL) == 0;
}

/* Three TLS-only servers on ports 1..3 of the block with the PKI's @cert
 * (.crt and .key), client certificates required if @mutual; their list as
 * host:port into @masters. */
static void start_servers_with(const char *cert, bool mutual, char masters[128])
{
    char crt[64], key[64];
    snprintf(crt, sizeof(crt), "%s.crt", cert);
    snprintf(key, sizeof(key), "%s.key", cert);
    if (!build_has_tls())
        cr_skip_test("this build has no TLS (hiredis 0.14): tools/run-tests.sh stage hiredis12 "
                     "runs these");
    for (int k = 1; k <= 3; k++) {
        char port[16];
        snprintf(port, sizeof(port), "%d", tc_block_port(k));
        const char *args[] = {
            "--port",
            "0",
            "--tls-port",
            port,
            "--tls-cert-file",
            tc_pki_file(crt),
            "--tls-key-file",
            tc_pki_file(key),
            "--tls-ca-cert-file",
            tc_pki_file("ca.crt"),
            "--tls-auth-clients",
            mutual ? "yes" : "no",
            NULL,
        };
        servers[k - 1] = tc_redis_start(args);
    }
    snprintf(masters, 128, "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", tc_block_port(1),
             tc_block_port(2), tc_block_port(3));
}

static void start_servers(bool mutual, char masters[128])
{
    start_servers_with("server", mutual, masters);
}

Test(cli_tls, tls_and_cacert_take_and_release_a_lock)
{
    struct tcli_proc p;
    char masters[128], res[128], token[33];
    start_servers(false, masters);
    const char *ca = tc_pki_file("ca.crt");
    tc_resource(res, sizeof(res), NULL);

    /* Servers this test just started: nothing to forget. */
    int rc = tcli_run(&p, "--masters", masters, "--tls", "--cacert", ca, "declare-empty");
    cr_assert(eq(int, rc, 0), "declare-empty: %d: %s", rc, p.err);
    tcli_free(&p);
    rc = tcli_run(&p, "--masters", masters, "--tls", "--cacert", ca, "lock", res);
    cr_assert(eq(int, rc, 0), "lock: %d: %s", rc, p.err);
    cr_assert(tcli_is_token(p.out), "%s", p.out);
    tcli_take_token(p.out, token);
    tcli_free(&p);
    rc = tcli_run(&p, "--masters", masters, "--tls", "--cacert", ca, "lock", res);
    cr_expect(eq(int, rc, 75), "a second lock while held: %d: %s", rc, p.err);
    tcli_free(&p);
    rc = tcli_run(&p, "--masters", masters, "--tls", "--cacert", ca, "unlock", res, token);
    cr_expect(eq(int, rc, 0), "unlock: %d: %s", rc, p.err);
    tcli_free(&p);
}

Test(cli_tls, rediss_masters_with_a_client_certificate)
{
    struct tcli_proc p;
    char masters[128], urls[160], res[128];
    start_servers(true, masters);
    snprintf(urls, sizeof(urls),
             "rediss://127.0.0.1:%d,rediss://127.0.0.1:%d,"
             "rediss://127.0.0.1:%d",
             tc_block_port(1), tc_block_port(2), tc_block_port(3));
    tc_resource(res, sizeof(res), NULL);

    int rc = tcli_run(&p, "--masters", urls, "--cacert", tc_pki_file("ca.crt"), "--cert",
                      tc_pki_file("client.crt"), "--key", tc_pki_file("client.key"),
                      "--no-restart-guard", "lock", "--ttl", "5s", res);
    tcli_take_guard_warning(&p);
    cr_expect(eq(int, rc, 0), "%d: %s", rc, p.err);
    cr_expect(tcli_is_token(p.out), "%s", p.out);
    tcli_free(&p);

    /* Without the certificate the masters refuse us: 77, one line. */
    rc = tcli_run(&p, "--masters", urls, "--cacert", tc_pki_file("ca.crt"), "--no-restart-guard",
                  "lock", res);
    tcli_take_guard_warning(&p);
    cr_expect(eq(int, rc, 77), "%d: %s", rc, p.err);
    cr_expect(eq(sz, tcli_count_lines(p.err), 1), "%s", p.err);
    tcli_free(&p);
}

Test(cli_tls, a_certificate_that_does_not_verify_is_77_in_one_line_naming_cacert)
{
    struct tcli_proc p;
    char masters[128], res[128];
    start_servers(false, masters);
    tc_resource(res, sizeof(res), NULL);

    /* The system's CAs do not know the test CA. */
    int rc = tcli_run(&p, "--masters", masters, "--tls", "--no-restart-guard", "lock", res);
    tcli_take_guard_warning(&p);
    cr_expect(eq(int, rc, 77), "%d: %s", rc, p.err);
    cr_expect(eq(sz, tcli_count_lines(p.err), 1), "%s", p.err);
    cr_expect(not(zero(ptr, strstr(p.err, "certificate verify failed"))), "%s", p.err);
    cr_expect(not(zero(ptr, strstr(p.err, "--cacert"))), "the option is not named: %s", p.err);
    cr_expect(zero(ptr, strstr(p.err, "tls_ca_file")), "the library's field: %s", p.err);
    tcli_free(&p);

    /* A name the certificate does not hold. */
    rc = tcli_run(&p, "--masters", masters, "--tls", "--cacert", tc_pki_file("ca.crt"), "--sni",
                  "wrong.example", "--no-restart-guard", "lock", res);
    tcli_take_guard_warning(&p);
    cr_expect(eq(int, rc, 77), "%d: %s", rc, p.err);
    cr_expect(not(zero(ptr, strstr(p.err, "--sni"))), "%s", p.err);
    tcli_free(&p);

    /* --insecure: encrypted, unverified, and it works. */
    rc = tcli_run(&p, "--masters", masters, "--tls", "--insecure", "--no-restart-guard", "lock",
                  res);
    tcli_take_guard_warning(&p);
    cr_expect(eq(int, rc, 0), "%d: %s", rc, p.err);
    tcli_free(&p);
}

/* A master's certificate that expired is the master's to renew: the line
 * says so, and since when, not "--cacert?" (the CA is fine). */
Test(cli_tls, an_expired_master_certificate_is_77_saying_it_is_renewed_on_the_master)
{
    struct tcli_proc p;
    char masters[128], res[128];
    start_servers_with("expired", false, masters);
    tc_resource(res, sizeof(res), NULL);

    int rc = tcli_run(&p, "--masters", masters, "--tls", "--cacert", tc_pki_file("ca.crt"),
                      "--no-restart-guard", "lock", res);
    tcli_take_guard_warning(&p);
    cr_expect(eq(int, rc, 77), "%d: %s", rc, p.err);
    cr_expect(eq(sz, tcli_count_lines(p.err), 1), "%s", p.err);
    cr_expect(not(zero(ptr, strstr(p.err, "TLS: the master's certificate expired on 20"))), "%s",
              p.err);
    cr_expect(not(zero(ptr, strstr(p.err, "(renew it on the master, not --cacert)"))), "%s", p.err);
    cr_expect(zero(ptr, strstr(p.err, "--cacert?")), "%s", p.err);
    tcli_free(&p);
}

/* rediss:// to a plain port: the master reads the ClientHello as a command
 * and waits for the rest. The connection gives up after --connect-timeout-ms
 * (1 s), long after the vote's --timeout-ms (50 ms); the vote still says
 * what the library says then: a plain port? (Or Redis answers the hello
 * with an error line, and TLS says it: 78.) */
Test(cli_tls, rediss_on_a_plain_port_asks_whether_it_is_one)
{
    if (!build_has_tls())
        cr_skip_test("this build has no TLS (hiredis 0.14): tools/run-tests.sh stage hiredis12 "
                     "runs these");
    struct tcli_proc p;
    char masters[64], res[128];
    snprintf(masters, sizeof(masters), "rediss://%s", tc_addr(0));
    tc_resource(res, sizeof(res), NULL);

    int rc = tcli_run(&p, "--masters", masters, "--insecure", "--no-restart-guard", "lock", res);
    tcli_take_guard_warning(&p);
    cr_expect(rc == 69 || rc == 78, "%d: %s", rc, p.err);
    cr_expect(eq(sz, tcli_count_lines(p.err), 1), "%s", p.err);
    cr_expect(not(zero(ptr, strstr(p.err, "plain port?"))), "no hint: %s", p.err);
    tcli_free(&p);
}

Test(cli_tls, bad_tls_options_are_64_in_one_line)
{
    struct tcli_proc p;
    char masters[128], res[128];
    start_servers(false, masters);
    tc_resource(res, sizeof(res), NULL);
    static const struct {
        const char *opt, *val, *says;
    } cases[] = {
        { "--cacert", "/nonexistent/ca.crt", "No such file" },
        { "--cacert", "/etc/hostname", "--cacert" },
        /* A path holding a field's name is the user's: it stays as typed. */
        { "--cacert", "/nonexistent/tls_ca_file/config.tls_key_file.crt",
          "\"/nonexistent/tls_ca_file/config.tls_key_file.crt\": cannot read it" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = tcli_run(&p, "--masters", masters, "--tls", cases[i].opt, cases[i].val, "lock",
                          res);
        cr_expect(eq(int, rc, 64), "%s %s: %d: %s", cases[i].opt, cases[i].val, rc, p.err);
        cr_expect(eq(sz, tcli_count_lines(p.err), 1), "%s", p.err);
        cr_expect(not(zero(ptr, strstr(p.err, cases[i].says))), "%s", p.err);
        tcli_free(&p);
    }
    /* TLS files, and no master that uses TLS. */
    int rc = tcli_run(&p, "--masters", masters, "--cacert", tc_pki_file("ca.crt"), "lock", res);
    cr_expect(eq(int, rc, 64), "%d: %s", rc, p.err);
    cr_expect(not(zero(ptr, strstr(p.err, "--tls"))), "%s", p.err);
    tcli_free(&p);
}

Test(cli_tls, a_build_without_tls_says_so_in_one_line)
{
    if (build_has_tls())
        cr_skip_test("this build has TLS: the refusal is tested where it has none");
    struct tcli_proc p;
    char res[128];
    tc_resource(res, sizeof(res), NULL);
    int rc = tcli_run(&p, "--masters", tc_addr(0), "--tls", "lock", res);
    cr_expect(eq(int, rc, 64), "%d: %s", rc, p.err);
    cr_expect(eq(sz, tcli_count_lines(p.err), 1), "%s", p.err);
    cr_expect(not(zero(ptr, strstr(p.err, "hiredis"))), "%s", p.err);
    tcli_free(&p);
}
