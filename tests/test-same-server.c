/* test-same-server.c - one redis-server listed twice never counts twice.
 *
 * Issue 18: `unix:///r.sock?db=2,127.0.0.1:P,127.0.0.1:DEAD` took a lock on
 * the one live server. Each test starts its own redis-server on a port and
 * a unix socket (helpers/servers.c) and lists it twice, beside a port
 * nothing listens on: counting the twin would reach the quorum of 2, so
 * every acquire here must fail. The memory guard is off so that a new
 * server's OK counts: a control acquire with a real second master shows
 * the server votes OK, so the twin's refusal is what keeps the lock away.
 * The run_id in the messages is read from the server with hiredis.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <hiredis/hiredis.h>

#include "cli.h"
#include "cluster.h"
#include "core.h"
#include "servers.h"

#define TTL_MS 10000
#define DEAD_PORT_K 9 /* a port of this test's block nothing listens on */

TestSuite(same_server, .init = tcli_setup, .fini = tcli_teardown, .timeout = 60);

/* A server on tc_block_port(@k) and a unix socket (its path into @sock); its
 * run_id into @run_id. Each test uses its own @k: workers run in parallel. */
static tc_redis *start_server(int k, char *sock, size_t size, char run_id[41])
{
    char port[16];
    snprintf(port, sizeof(port), "%d", tc_block_port(k));
    snprintf(sock, size, "%s/s%d.sock", tc_scratch_dir(), k);
    const char *args[] = { "--port", port, "--unixsocket", sock, "--unixsocketperm", "700", NULL };
    tc_redis *s = tc_redis_start(args);
    redisContext *ctx = redisConnectUnix(sock);
    cr_assert(not(zero(ptr, ctx)));
    redisReply *r = redisCommand(ctx, "INFO server");
    cr_assert(not(zero(ptr, r)));
    char *at = r->type == REDIS_REPLY_STRING ? strstr(r->str, "run_id:") : NULL;
    cr_assert(not(zero(ptr, at)), "no run_id in INFO");
    snprintf(run_id, 41, "%.40s", at + 7);
    freeReplyObject(r);
    redisFree(ctx);
    return s;
}

static void config(redlock_config *cfg, const char *masters)
{
    redlock_config_init(cfg);
    cfg->masters = masters;
    cfg->node_timeout_ms = 2000;
    cfg->retry_count = 0;
    cfg->restart_guard = 0; /* a new server's OK counts: only the twin rule refuses it */
    cfg->log_fn = tc_log;
    cfg->log_level = REDLOCK_LOG_DEBUG;
}

static void expected_msg(char *buf, size_t size, const char *a, const char *b, const char *run_id)
{
    snprintf(buf, size,
             "masters: %s and %s are the same server (run_id %.8s): each master must "
             "be a separate redis-server",
             a, b, run_id);
}

/* Acquire at once after creating the client, @rounds times: the votes
 * queue behind both handshakes, so the twin is found while they are in
 * flight (or only after the acquire decided: one server on one db answers
 * the second SET NX with nil). Then once more after readiness. None may
 * succeed, and each client ends up refusing the twin. */
static void expect_never_granted(const char *masters, int rounds)
{
    redlock_config cfg;
    config(&cfg, masters);
    for (int i = 0; i <= rounds; i++) {
        redlock_client *c = NULL;
        redlock_error e;
        cr_assert(eq(int, redlock_client_new(&cfg, NULL, &c, &e), 0), "%s", e.msg);
        if (i == rounds)
            redlock_ready(c, 0, 5000, NULL, NULL);
        char res[128];
        tc_resource(res, sizeof(res), NULL);
        redlock_lock *l = NULL;
        TC_OUTCOME(out);
        int rc = redlock_acquire(c, res, strlen(res), TTL_MS, &l, out, &e);
        cr_expect(tcli_yes(rc == REDLOCK_ENOQUORUM || rc == REDLOCK_ECONFLICT),
                  "round %d: %s: %s (one server counted twice?)", i, redlock_err_name(rc), e.msg);
        cr_expect(zero(ptr, l));
        cr_expect(lt(u32, redlock_outcome_ok(out), 2), "round %d: %u OKs", i,
                  redlock_outcome_ok(out));
        if (l)
            redlock_lock_free(l);
        rc = redlock_ready(c, 0, 5000, NULL, &e);
        cr_expect(eq(int, rc, REDLOCK_EINVAL), "round %d: %s: %s", i, redlock_err_name(rc), e.msg);
        redlock_client_free(c);
    }
}

/* redlock_ready() reports the list as wrong: EINVAL, one line, both entries. */
static void expect_ready_refuses(const char *masters, const char *a, const char *b,
                                 const char *run_id)
{
    redlock_config cfg;
    config(&cfg, masters);
    redlock_client *c = NULL;
    redlock_error e;
    cr_assert(eq(int, redlock_client_new(&cfg, NULL, &c, &e), 0), "%s", e.msg);
    size_t up = 9;
    int rc = redlock_ready(c, 0, 10000, &up, &e);
    cr_expect(eq(int, rc, REDLOCK_EINVAL), "%s: %s", redlock_err_name(rc), e.msg);
    /* Refused the moment the later twin's INFO is read: the earlier one may
     * still be finishing its handshake (up 0) or be up (1); never both. */
    cr_expect(le(sz, up, 1), "%zu up: never both twins, never the dead master", up);
    tc_expect_msg(&e, "ready");
    char want[1024];
    expected_msg(want, sizeof(want), a, b, run_id);
    cr_expect(eq(str, e.msg, want));
    cr_expect(tcli_yes(e.master == 0 || e.master == 1), "master %d", e.master);
    /* Ping says it on the refused master, and it does not count. */
    TC_STATUS(st);
    redlock_ping(c, st, NULL);
    int k = e.master;
    cr_expect(eq(int, redlock_status_master(st, k)->err, REDLOCK_EINVAL), "%s",
              redlock_status_master(st, k)->detail);
    cr_expect(not(zero(ptr, strstr(redlock_status_master(st, k)->detail, "same server as master"))),
              "%s", redlock_status_master(st, k)->detail);
    cr_expect(not(zero(int, redlock_status_master(st, k)->excluded)));
    redlock_client_free(c);
}

Test(same_server, a_socket_and_a_port_of_one_server_never_make_a_quorum)
{
    char sock[600], run_id[41], masters[1024], a[700], b[64];
    tc_redis *s = start_server(1, sock, sizeof(sock), run_id);
    snprintf(a, sizeof(a), "unix://%s", sock);
    snprintf(b, sizeof(b), "127.0.0.1:%d", tc_block_port(1));

    /* Control: the server votes OK beside a real second master. */
    snprintf(masters, sizeof(masters), "%s,%s,127.0.0.1:%d", a, tc_addr(0),
             tc_block_port(DEAD_PORT_K));
    redlock_config cfg;
    config(&cfg, masters);
    redlock_client *c = tc_client(&cfg, 2);
    char res[128];
    tc_resource(res, sizeof(res), NULL);
    redlock_lock *l = tc_must_acquire(c, res, TTL_MS, NULL);
    tc_must_release(c, l);
    redlock_client_free(c);

    snprintf(masters, sizeof(masters), "%s,%s,127.0.0.1:%d", a, b, tc_block_port(DEAD_PORT_K));
    expect_ready_refuses(masters, a, b, run_id);
    expect_never_granted(masters, 20);
    tc_redis_stop(s);
}

Test(same_server, two_databases_of_one_server_never_make_a_quorum)
{
    char sock[600], run_id[41], masters[1024], a[64], b[700];
    tc_redis *s = start_server(2, sock, sizeof(sock), run_id);
    snprintf(a, sizeof(a), "redis://127.0.0.1:%d/0", tc_block_port(2));
    snprintf(b, sizeof(b), "unix://%s?db=2", sock);
    snprintf(masters, sizeof(masters), "%s,%s,127.0.0.1:%d", a, b, tc_block_port(DEAD_PORT_K));
    expect_ready_refuses(masters, a, b, run_id);
    expect_never_granted(masters, 20);
    tc_redis_stop(s);
}

/* The list of issue 18, and the same with the third master alive: exit 64
 * and one line (after the guard's warning), whichever twin finished its
 * handshake first. */
Test(same_server, the_cli_refuses_one_server_listed_twice_exit_64)
{
    char sock[600], run_id[41], a[700], b[64], want[1100];
    tc_redis *s = start_server(3, sock, sizeof(sock), run_id);
    snprintf(a, sizeof(a), "unix://%s?db=2", sock);
    snprintf(b, sizeof(b), "127.0.0.1:%d", tc_block_port(3));
    char line[1024];
    expected_msg(line, sizeof(line), a, b, run_id);
    snprintf(want, sizeof(want), "redlock-cli: %s\n", line);
    for (int i = 0; i < 10; i++) {
        char masters[1024], third[64], res[128];
        if (i % 2)
            snprintf(third, sizeof(third), "%s", tc_addr(0));
        else
            snprintf(third, sizeof(third), "127.0.0.1:%d", tc_block_port(DEAD_PORT_K));
        snprintf(masters, sizeof(masters), "%s,%s,%s", a, b, third);
        tc_resource(res, sizeof(res), NULL);
        struct tcli_proc p;
        int rc = tcli_run(&p, "--masters", masters, "--no-restart-guard", "lock", res);
        tcli_take_guard_warning(&p);
        cr_expect(eq(int, rc, 64), "run %d (%s): status %d: %s%s", i, masters, rc, p.out, p.err);
        cr_expect(eq(str, p.err, want), "run %d", i);
        cr_expect(eq(str, p.out, ""), "run %d", i);
        tcli_free(&p);
    }
    tc_redis_stop(s);
}
