/* test-harness.c - the test harness itself: cluster, faults, fake masters.
 *
 * Every other cluster test trusts tests/helpers and cluster-up.sh to do what
 * they say: a killed master refuses connections, a paused one holds them
 * without answering, restart brings back an empty master (unless --aof),
 * heal undoes everything, fake masters answer what they were told. This
 * checks those promises once, so a failing fault test points at the library.
 * Built twice by meson: plain, and with --aof --requirepass.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libevent.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "cluster.h"
#include "core.h"
#include "fake.h"

static void expect_pong(int i)
{
    redisReply *r = tc_cmd(i, "PING");

    cr_assert(not(zero(ptr, r)), "master %d does not answer", i);
    cr_assert(eq(int, r->type, REDIS_REPLY_STATUS), "master %d: %s", i, r->str);
    cr_assert(eq(str, r->str, "PONG"));
    freeReplyObject(r);
}

static void set_key(int i, const char *key)
{
    redisReply *r = tc_cmd(i, "SET %s v", key);

    cr_assert(not(zero(ptr, r)));
    cr_assert(eq(int, r->type, REDIS_REPLY_STATUS), "SET on master %d: %s", i, r->str);
    freeReplyObject(r);
}

/* Heal after every test: a failed assertion must not leave a master down
 * for the next one. */
static void heal(void)
{
    tc_heal();
}

TestSuite(harness, .fini = heal, .timeout = 60);

Test(harness, environment_describes_the_cluster)
{
    char want[1024] = "";
    char *with;

    cr_assert(eq(int, tc_n(), 5));
    for (int i = 0; i < tc_n(); i++) {
        if (i)
            strcat(want, ",");
        strcat(want, tc_addr(i));
        cr_assert(eq(int, tc_port(i), tc_port(0) + i));
    }
    cr_assert(eq(str, (char *)tc_masters(), want));

    with = tc_masters_with(2, "127.0.0.1:1");
    cr_assert(not(zero(ptr, strstr(with, ",127.0.0.1:1,"))), "%s", with);
    cr_assert(zero(ptr, strstr(with, tc_addr(2))));
    free(with);
}

Test(harness, every_master_answers)
{
    for (int i = 0; i < tc_n(); i++)
        expect_pong(i);
}

Test(harness, password_is_required_when_set)
{
    redisContext *c;
    redisReply *r;

    c = redisConnect("127.0.0.1", tc_port(0));
    cr_assert(not(zero(ptr, c)));
    cr_assert(zero(int, c->err), "%s", c->errstr);
    r = redisCommand(c, "PING");
    cr_assert(not(zero(ptr, r)));
    if (tc_password())
        cr_expect(eq(int, r->type, REDIS_REPLY_ERROR), "PING without AUTH: %s", r->str);
    else
        cr_expect(eq(int, r->type, REDIS_REPLY_STATUS), "PING: %s", r->str);
    freeReplyObject(r);
    redisFree(c);
}

Test(harness, resource_names_are_unique)
{
    char a[128], b[128], pid[32];

    tc_resource(a, sizeof(a), NULL);
    tc_resource(b, sizeof(b), NULL);
    cr_assert(ne(str, a, b));
    cr_assert(not(zero(ptr, strstr(a, "harness/resource_names_are_unique:"))), "%s", a);
    snprintf(pid, sizeof(pid), ":%ld:", (long)getpid());
    cr_assert(not(zero(ptr, strstr(a, pid))), "%s", a);
    cr_assert(eq(str, (char *)tc_resource(a, sizeof(a), "x"), a));
    cr_assert(eq(int, strncmp(a, "x:", 2), 0));
}

Test(harness, key_count_sees_each_master)
{
    char key[128];

    tc_resource(key, sizeof(key), NULL);
    cr_assert(eq(int, tc_key_count(key, strlen(key)), 0));
    set_key(0, key);
    set_key(3, key);
    set_key(4, key);
    cr_assert(eq(int, tc_key_count(key, strlen(key)), 3));
}

Test(harness, killed_master_refuses_then_restarts)
{
    char key[128];
    redisReply *r;

    tc_resource(key, sizeof(key), NULL);
    set_key(1, key);
    tc_kill(1);
    cr_assert(zero(ptr, tc_cmd(1, "PING")), "a killed master answered");
    tc_kill(1); /* killing a dead master is a no-op */
    cr_assert(eq(int, tc_key_count(key, strlen(key)), 0));

    tc_restart(1);
    expect_pong(1);
    r = tc_cmd(1, "EXISTS %s", key);
    cr_assert(not(zero(ptr, r)));
    /* Without persistence a restarted master forgets its keys (the hazard
     * docs/memory-guard.md discusses); with --aof (appendfsync always) it
     * keeps them. */
    cr_assert(eq(i64, r->integer, tc_aof() ? 1 : 0));
    freeReplyObject(r);
}

/* --- pause: an async PING must hang until resume ------------------------- */

struct ping_state {
    volatile int done;
    int type;
};

static void on_ping(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct ping_state *s = privdata;
    redisReply *r = reply;

    (void)ac;
    s->type = r ? r->type : -1;
    s->done = 1;
}

Test(harness, paused_master_holds_commands_until_resumed)
{
    struct event_base *base = event_base_new();
    struct ping_state st = { 0 };
    redisAsyncContext *ac;

    cr_assert(not(zero(ptr, base)));
    tc_pause(2);
    ac = redisAsyncConnect("127.0.0.1", tc_port(2));
    cr_assert(not(zero(ptr, ac)));
    cr_assert(zero(int, ac->err), "%s", ac->errstr);
    cr_assert(eq(int, redisLibeventAttach(ac, base), REDIS_OK));
    /* A paused master's kernel still accepts the connection: the command
     * is sent and never answered. */
    if (tc_password())
        redisAsyncCommand(ac, NULL, NULL, "AUTH %s", tc_password());
    cr_assert(eq(int, redisAsyncCommand(ac, on_ping, &st, "PING"), REDIS_OK));
    cr_assert(eq(int, TC_RUN_UNTIL(base, st.done, 300), 0), "a paused master answered");

    tc_resume(2);
    cr_assert(eq(int, TC_RUN_UNTIL(base, st.done, 5000), 1), "no answer after resume");
    cr_assert(eq(int, st.type, REDIS_REPLY_STATUS));

    redisAsyncFree(ac);
    event_base_free(base);
}

Test(harness, heal_restarts_dead_and_resumes_paused)
{
    tc_kill(0);
    tc_kill(4);
    tc_pause(3);
    tc_heal();
    for (int i = 0; i < tc_n(); i++)
        expect_pong(i);
    tc_heal(); /* nothing to do: still fine */
}

/* --- TC_RUN_UNTIL -------------------------------------------------------- */

static void set_flag(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    *(volatile int *)arg = 1;
}

Test(harness, run_until_returns_when_the_flag_is_set)
{
    struct event_base *base = event_base_new();
    const struct timeval soon = { .tv_usec = 10000 };
    volatile int flag = 0;
    struct event *ev;

    ev = evtimer_new(base, set_flag, (void *)&flag);
    evtimer_add(ev, &soon);
    cr_assert(eq(int, TC_RUN_UNTIL(base, flag, 5000), 1));
    /* and returns at once when it already is */
    cr_assert(eq(int, TC_RUN_UNTIL(base, flag, 5000), 1));
    event_free(ev);
    event_base_free(base);
}

Test(harness, run_until_times_out)
{
    struct event_base *base = event_base_new();
    volatile int flag = 0;
    uint64_t t0 = tc_now_us();
    long ms;

    cr_assert(eq(int, TC_RUN_UNTIL(base, flag, 50), 0));
    ms = (long)tc_ms_since(t0);
    cr_assert(ge(long, ms, 45));
    cr_assert(lt(long, ms, 2000));
    event_base_free(base);
}

/* --- fake masters ------------------------------------------------------- */

Test(fake, answers_every_command_with_its_bytes)
{
    static const char reply[] = "-ERR fake says no\r\n";
    int port = 0;
    tc_fake *f = tc_fake_start(reply, sizeof(reply) - 1, &port);
    redisContext *c;
    redisReply *r;

    cr_assert(gt(int, port, 0));
    cr_assert(eq(int, tc_fake_port(f), port));
    c = redisConnect("127.0.0.1", port);
    cr_assert(zero(int, c->err), "%s", c->errstr);
    for (int k = 0; k < 3; k++) {
        r = redisCommand(c, "SET k%d v NX PX 1000", k);
        cr_assert(not(zero(ptr, r)), "%s", c->errstr);
        cr_assert(eq(int, r->type, REDIS_REPLY_ERROR));
        cr_assert(eq(str, r->str, "ERR fake says no"));
        freeReplyObject(r);
    }
    cr_assert(eq(u32, tc_fake_commands(f), 3));
    cr_assert(eq(u32, tc_fake_connections(f), 1));
    redisFree(c);
    tc_fake_stop(f);
}

Test(fake, garbage_reply_is_a_protocol_error)
{
    static const char garbage[] = "\x01\xffnot resp\r\n";
    tc_fake *f = tc_fake_start(garbage, sizeof(garbage) - 1, NULL);
    char *addr = strdup(tc_fake_addr(f));
    redisContext *c;
    redisReply *r;

    cr_assert(eq(int, strncmp(addr, "127.0.0.1:", 10), 0));
    c = redisConnect("127.0.0.1", atoi(addr + 10));
    cr_assert(zero(int, c->err), "%s", c->errstr);
    r = redisCommand(c, "PING");
    cr_assert(zero(ptr, r));
    cr_assert(eq(int, c->err, REDIS_ERR_PROTOCOL), "err %d: %s", c->err, c->errstr);
    redisFree(c);
    free(addr);
    tc_fake_stop(f);
}

Test(fake, black_hole_never_answers)
{
    const struct timeval tv = { .tv_usec = 200000 };
    int port;
    tc_fake *f = tc_blackhole_start(&port);
    redisContext *c;
    redisReply *r;

    c = redisConnectWithTimeout("127.0.0.1", port, tv);
    cr_assert(zero(int, c->err), "%s", c->errstr);
    redisSetTimeout(c, tv);
    r = redisCommand(c, "PING");
    cr_assert(zero(ptr, r), "a black hole answered");
    cr_assert(eq(int, c->err, REDIS_ERR_IO), "err %d: %s", c->err, c->errstr);
    redisFree(c);
    tc_fake_stop(f);
}

Test(fake, stop_closes_open_connections)
{
    int port;
    tc_fake *f = tc_blackhole_start(&port);
    redisContext *c = redisConnect("127.0.0.1", port);
    redisReply *r;

    cr_assert(zero(int, c->err), "%s", c->errstr);
    cr_assert(eq(int, redisAppendCommand(c, "PING"), REDIS_OK));
    tc_fake_stop(f);
    /* no timeout set: a black hole left open would hang here */
    r = redisCommand(c, "PING");
    cr_assert(zero(ptr, r));
    cr_assert(ne(int, c->err, 0));
    redisFree(c);
}
