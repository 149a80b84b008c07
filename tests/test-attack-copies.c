/* test-attack-copies.c - a copy of a master's data in its place must not
 * count while a lease the copy lacks is live (issue 29, attack 1).
 *
 * On AOF masters (appendfsync always, meson gives this file a cluster started
 * with --aof) the memory guard of 1.0 trusted a restarted master whose marker
 * vouched for the process before it (that process kept every acknowledged
 * write); the vouch was data, though, and travelled with every copy of it.
 * Now a process that did not write its marker sits out, whatever it loaded
 * (docs/memory-guard.md, "Who the master is"). Here master 2's data is
 * replaced by one taken before A's lock: (a) an RDB dump SAVEd before A,
 * loaded the way an operator turns a dump into an AOF master (start with
 * appendonly no, then CONFIG SET appendonly yes); (b) a copy of its own AOF
 * directory; (c) a copy of another master's AOF directory; (d) a replica, in
 * sync until just before A, moved onto master 2's port once master 2 is
 * SIGKILLed. A holds the resource on 0, 1 and 2 (3 and 4 were down, and came
 * back empty), so 2, 3 and 4 are a majority that does not know A: B must be
 * refused while A's lease runs, and once A has released, B's fence must be
 * above A's.
 *
 * Each copy has its control: the same steps, the copy made but master 2
 * restarted from its own files (it kept A's key), where B is refused
 * as well. B is a redlock-cli call, and in a second variant a
 * long-lived library client that met master 2 before the copy replaced it
 * (it reconnects to the new process). Run alone (faults): the tests kill
 * masters. Every test starts from new, declared-empty masters.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>
#include <hiredis/hiredis.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"
#include "holders.h"
#include "servers.h"
#include "spawn.h"

#define X TCLI_X

enum copy {
    RDB_DUMP,   /* an RDB dump SAVEd before A */
    AOF_DIR,    /* a copy of its AOF directory, taken before A */
    OTHERS_AOF, /* a copy of master 0's AOF directory, taken before A */
    REPLICA,    /* a replica in sync until just before A */
};

static const char *const copy_name[] = { "an RDB dump saved before A",
                                         "a copy of its AOF directory taken before A",
                                         "a copy of master 0's AOF directory taken before A",
                                         "a replica in sync until just before A" };

static tc_redis *replica;      /* (d): started by the test, stopped by .fini */
static redlock_client *b_long; /* B, long-lived: freed by .fini */
static char conf_orig[8192];   /* master X's redis.conf while the test has changed it */
static int replica_port;

/* Master X's redis.conf back as it was, if the test changed it. */
static void conf_restore(void)
{
    char path[600];

    if (!conf_orig[0])
        return;
    snprintf(path, sizeof(path), "%s/redis.conf", tc_master_dir(X));
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(conf_orig, f);
        fclose(f);
    }
    conf_orig[0] = '\0';
}

/* Master X's redis.conf with "appendonly no" in place of "appendonly
 * yes", the original kept for conf_restore(). */
static void conf_aof_off(void)
{
    char path[600], *hit;

    snprintf(path, sizeof(path), "%s/redis.conf", tc_master_dir(X));
    FILE *f = fopen(path, "r");
    cr_assert(f != NULL, "cannot read %s", path);
    size_t n = fread(conf_orig, 1, sizeof(conf_orig) - 1, f);
    fclose(f);
    conf_orig[n] = '\0';
    hit = strstr(conf_orig, "\nappendonly yes\n");
    cr_assert(hit != NULL, "%s has no \"appendonly yes\" line", path);
    f = fopen(path, "w");
    cr_assert(f != NULL, "cannot write %s", path);
    fprintf(f, "%.*s\nappendonly no\n%s", (int)(hit - conf_orig), conf_orig,
            hit + strlen("\nappendonly yes\n"));
    fclose(f);
}

/* The copies a test may have left in master X's dir (a control does). */
static void copies_rm(void)
{
    tc_master_rm(X, "dump.before-a.rdb");
    tc_master_rm(X, "appendonlydir.before-a");
    tc_master_rm(X, "appendonlydir.other");
}

static void fini(void)
{
    redlock_client_free(b_long);
    b_long = NULL;
    tc_redis_stop(replica); /* it may be on master X's port */
    replica = NULL;
    freeReplyObject(tc_cmd(X, "CONFIG SET repl-diskless-sync-delay 5"));
    conf_restore();
    tcli_hold_fini();
    copies_rm();
}

TestSuite(copies, .init = tcli_hold_init, .fini = fini, .timeout = 60);

/* A shell command's words, run to their end; the test fails if they fail. */
static void sh(const char *const *argv)
{
    char out[1024];
    int rc = tc_spawn(argv, out, sizeof(out));

    cr_assert(eq(int, rc, 0), "%s %s failed (%d): %s", argv[0], argv[1], rc, out);
}

/* "DIR-of-master-@m/@name" into @buf. */
static const char *in_dir(char *buf, size_t size, int m, const char *name)
{
    snprintf(buf, size, "%s/%s", tc_master_dir(m), name);
    return buf;
}

/* A command to the replica, on whatever port it listens now. */
static redisReply *replica_cmd(const char *fmt, ...)
{
    struct timeval tv = { 2, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", replica_port, tv);
    redisReply *r = NULL;
    va_list ap;

    cr_assert(c && !c->err, "the replica on port %d does not answer", replica_port);
    redisSetTimeout(c, tv);
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

/* INFO field @field of @r (an INFO reply) as a number, -1 if absent. */
static long long info_field(const redisReply *r, const char *field)
{
    char key[64];
    const char *p;

    snprintf(key, sizeof(key), "\n%s:", field);
    if (!r || r->type != REDIS_REPLY_STRING || !(p = strstr(r->str, key)))
        return -1;
    return atoll(p + strlen(key));
}

/* The replica has all master X wrote: its link is up and its offset is X's. */
static int replica_in_sync(void)
{
    redisReply *m = tc_cmd(X, "INFO replication"), *s = replica_cmd("INFO replication");
    int ok = s && s->type == REDIS_REPLY_STRING && strstr(s->str, "master_link_status:up") &&
             info_field(s, "master_repl_offset") == info_field(m, "master_repl_offset");

    freeReplyObject(m);
    freeReplyObject(s);
    return ok;
}

/* Before A: the copy @kind is made. */
static void copy_before_a(enum copy kind)
{
    char a[700], b[700], port[16], xport[16];

    copies_rm(); /* cp -a into a dir that exists would copy into it */
    switch (kind) {
    case RDB_DUMP: {
        redisReply *r = tc_cmd_slow(X, 10, "SAVE");
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "SAVE on master %d failed", X);
        freeReplyObject(r);
        sh((const char *const[]){ "cp", in_dir(a, sizeof(a), X, "dump.rdb"),
                                  in_dir(b, sizeof(b), X, "dump.before-a.rdb"), NULL });
        break;
    }
    case AOF_DIR:
        sh((const char *const[]){ "cp", "-a", in_dir(a, sizeof(a), X, "appendonlydir"),
                                  in_dir(b, sizeof(b), X, "appendonlydir.before-a"), NULL });
        break;
    case OTHERS_AOF:
        sh((const char *const[]){ "cp", "-a", in_dir(a, sizeof(a), 0, "appendonlydir"),
                                  in_dir(b, sizeof(b), X, "appendonlydir.other"), NULL });
        break;
    case REPLICA:
        replica_port = tc_block_port(5);
        snprintf(port, sizeof(port), "%d", replica_port);
        snprintf(xport, sizeof(xport), "%d", tc_port(X));
        /* The full sync at once, not after the default 5 s wait for more
         * replicas (repl-diskless-sync-delay). */
        freeReplyObject(tc_cmd(X, "CONFIG SET repl-diskless-sync-delay 0"));
        /* A hot standby set up as its master is: AOF, appendfsync always. */
        replica = tc_redis_start((const char *const[]){ "--port", port, "--replicaof", "127.0.0.1",
                                                        xport, "--appendonly", "yes",
                                                        "--appendfsync", "always", NULL });
        cr_assert(TC_AWAIT(replica_in_sync(), 10000), "the replica never caught up");
        /* The link breaks just before A: the replica has everything but A. */
        freeReplyObject(replica_cmd("REPLICAOF NO ONE"));
        break;
    }
    tcli_hold_log_marker(X, "when the copy was made");
}

/* Master X writes its AOF, rewritten from its dataset (CONFIG SET
 * appendonly yes starts the rewrite before it returns). */
static int aof_rewritten(void)
{
    redisReply *r = tc_cmd(X, "INFO persistence");
    int done = info_field(r, "aof_enabled") == 1 && info_field(r, "aof_rewrite_in_progress") == 0 &&
               info_field(r, "aof_rewrite_scheduled") == 0;

    freeReplyObject(r);
    return done;
}

/* rdb-to-aof: the way to load a dump into an AOF master (Redis loads no
 * dump where appendonly is yes): start it with appendonly no, then turn AOF
 * on at run time, which rewrites the AOF from the dataset. */
static void restore_rdb_dump(void)
{
    char a[700], b[700];

    tc_master_rm(X, "appendonlydir");
    sh((const char *const[]){ "mv", in_dir(a, sizeof(a), X, "dump.before-a.rdb"),
                              in_dir(b, sizeof(b), X, "dump.rdb"), NULL });
    conf_aof_off();
    tc_restart(X);
    redisReply *r = tc_cmd(X, "CONFIG SET appendonly yes");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "CONFIG SET appendonly yes failed");
    freeReplyObject(r);
    cr_assert(TC_AWAIT(aof_rewritten(), 10000), "master %d's AOF was never rewritten from the dump",
              X);
    conf_restore();
}

/* Master X is SIGKILLed; with @restore it comes back as the copy @kind,
 * else from its own files (AOF always: it kept A's key). */
static void replace_x(enum copy kind, int restore)
{
    char a[700], b[700];
    uint64_t t0 = tc_now_us();

    tc_kill(X);
    if (!restore) {
        tc_redis_stop(replica);
        replica = NULL;
        tc_restart(X);
        tcli_hold_fault("sigkill, restart from its own AOF", X, 0, t0);
        tcli_hold_log_marker(X, "after its restart");
        return;
    }
    switch (kind) {
    case RDB_DUMP: restore_rdb_dump(); break;
    case AOF_DIR:
    case OTHERS_AOF:
        tc_master_rm(X, "appendonlydir");
        sh((const char *const[]){
            "mv",
            in_dir(a, sizeof(a), X,
                   kind == AOF_DIR ? "appendonlydir.before-a" : "appendonlydir.other"),
            in_dir(b, sizeof(b), X, "appendonlydir"), NULL });
        tc_restart(X);
        break;
    case REPLICA: {
        /* Promoted onto the master's own port: the clients reconnect to it. */
        redisReply *r = replica_cmd("CONFIG SET port %d", tc_port(X));
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "the replica cannot take port %d",
                  tc_port(X));
        freeReplyObject(r);
        replica_port = tc_port(X);
        break;
    }
    }
    tcli_hold_fault(copy_name[kind], X, 1, t0);
    tcli_hold_log_marker(X, "in its place");
}

/* ---- B, a long-lived library client ------------------------------------------ */

/* Connected to every master before the copy replaced master X. */
static redlock_client *b_client(void)
{
    redlock_config cfg;

    tc_config(&cfg);
    cfg.retry_count = 0;
    cfg.reconnect_min_ms = 10;
    cfg.reconnect_max_ms = 100;
    return tc_client(&cfg, -1);
}

/* B's acquire of @res (fenced), waiting up to @wait_ms, recorded. */
static int b_acquire(redlock_client *b, const char *res, int64_t wait_ms, redlock_lock **l,
                     redlock_outcome *out, uint64_t *done_us)
{
    redlock_acquire_opts o;
    redlock_resource one = { res, strlen(res) };
    redlock_error e;

    redlock_acquire_opts_init(&o);
    o.ttl_ms = 2000;
    o.wait_ms = wait_ms;
    o.flags = REDLOCK_FENCE;
    uint64_t t0 = tc_now_us();
    int rc = redlock_acquire_with(b, &one, 1, &o, l, out, &e);
    *done_us = tc_now_us();
    tc_hist_acquire(tcli_hold_hist(), "B", res, strlen(res), o.ttl_ms, t0, rc, *l, out);
    cr_log_info("B (long-lived): %s%s%s", redlock_err_name(rc), rc ? ": " : "", rc ? e.msg : "");
    return rc;
}

static void b_release(redlock_client *b, redlock_lock *l)
{
    TC_OUTCOME(out);
    uint64_t t0 = tc_now_us();
    int rc = redlock_release(b, l, out, NULL);

    tc_hist_release(tcli_hold_hist(), "B", t0, rc, l, out);
    redlock_lock_free(l);
}

/* tcli_hold_b_asks() with the long-lived B. */
static void b_lib_asks(redlock_client *b, const struct tcli_call *a, const char *res)
{
    TC_OUTCOME(out);
    redlock_lock *l = NULL;
    uint64_t done;
    char votes[REDLOCK_MAX_MASTERS + 1];

    tcli_hold_later();
    int rc = b_acquire(b, res, 0, &l, out, &done);
    cr_assert(tcli_hold_live(a, done),
              "the attack took longer than A's lease: the scenario tests nothing");
    tcli_hold_expect_refused("B", rc == REDLOCK_ECONFLICT, redlock_err_name(rc),
                             rc == 0 ? redlock_lock_fence(l) : 0, tc_hist_votes(out, votes), a,
                             done);
    if (rc == 0)
        b_release(b, l);

    tcli_hold_a_releases(a, res);
    l = NULL;
    rc = b_acquire(b, res, 15000, &l, out, &done);
    cr_expect(eq(int, rc, 0), "once A released, B did not get the lock: %s", redlock_err_name(rc));
    if (rc == 0) {
        cr_expect(gt(u64, redlock_lock_fence(l), a->fence),
                  "after A (fence %llu), B got fence %llu", (unsigned long long)a->fence,
                  (unsigned long long)redlock_lock_fence(l));
        b_release(b, l);
    }
    tcli_hold_check();
}

/* ---- the scenario ------------------------------------------------------------ */

/*
 * The copy @kind of master X is made (after a client met the fleet, so
 * that X's marker vouches for its process); A takes the resource on 0, 1
 * and X; X is SIGKILLed and comes back as the copy (@restore), or from its
 * own files (the control); 1.5 s later B asks, a redlock-cli call or
 * (@long_lived) a library client connected before X was replaced.
 */
static void copy_scenario(enum copy kind, int restore, int long_lived)
{
    char res[128];
    struct tcli_call a;

    tcli_hold_need_aof(1);
    tc_resource(res, sizeof(res), NULL);
    tcli_hold_ping(); /* the fleet as it runs: X's marker vouches for its process */
    copy_before_a(kind);
    tcli_hold_a_on_012(&a, res, 1);
    if (long_lived)
        b_long = b_client();
    replace_x(kind, restore);
    if (b_long)
        b_lib_asks(b_long, &a, res);
    else
        tcli_hold_b_asks(&a, res, 0);
}

Test(copies, a_restore_from_an_rdb_dump_saved_before_a_refuses_b_while_a_holds)
{
    copy_scenario(RDB_DUMP, 1, 0);
}

Test(copies, a_restore_from_an_aof_copy_taken_before_a_refuses_b_while_a_holds)
{
    copy_scenario(AOF_DIR, 1, 0);
}

Test(copies, another_masters_aof_copied_in_refuses_b_while_a_holds)
{
    copy_scenario(OTHERS_AOF, 1, 0);
}

Test(copies, a_replica_moved_onto_the_killed_masters_port_refuses_b_while_a_holds)
{
    copy_scenario(REPLICA, 1, 0);
}

/* The same with B a long-lived client, which met master X before: its
 * reconnect meets the copy (a new process) and must not count it either. */
Test(copies, a_restore_from_an_rdb_dump_refuses_a_long_lived_b_while_a_holds)
{
    copy_scenario(RDB_DUMP, 1, 1);
}

Test(copies, a_restore_from_an_aof_copy_refuses_a_long_lived_b_while_a_holds)
{
    copy_scenario(AOF_DIR, 1, 1);
}

Test(copies, another_masters_aof_copied_in_refuses_a_long_lived_b_while_a_holds)
{
    copy_scenario(OTHERS_AOF, 1, 1);
}

Test(copies, a_replica_moved_onto_the_port_refuses_a_long_lived_b_while_a_holds)
{
    copy_scenario(REPLICA, 1, 1);
}

/* Controls: the copy made, but master X restarted from its own AOF. It
 * kept A's key and says "held": B is refused, today as after the fix. */
Test(copies, control_an_rdb_dump_saved_but_not_restored_refuses_b)
{
    copy_scenario(RDB_DUMP, 0, 0);
}

Test(copies, control_an_aof_copy_taken_but_not_restored_refuses_b)
{
    copy_scenario(AOF_DIR, 0, 0);
}

Test(copies, control_another_masters_aof_copied_but_not_used_refuses_b)
{
    copy_scenario(OTHERS_AOF, 0, 0);
}

Test(copies, control_a_replica_made_but_not_moved_in_refuses_b)
{
    copy_scenario(REPLICA, 0, 0);
}
