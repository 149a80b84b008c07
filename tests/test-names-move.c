/* test-names-move.c - a master written as a host name, and the name moves.
 *
 * A client looks a master's name up again before each reconnect
 * (docs/memory-guard.md, "Names that move"). The case that used to break
 * mutual exclusion: the name moves onto a server whose own memory counts
 * (here a standby declared empty in advance), which never saw what the old
 * server granted as that master. The client that follows the name must make
 * that server reborn before any vote on it counts, for every client: its
 * CHECK says "moved", and the server's marker sits out the window. A name
 * that stops resolving keeps the address the client had. The look-up runs on
 * a thread that shares its job with the node: a client freed meanwhile leaves
 * the job to the thread, which frees it (its pipe closes) when DNS gives up.
 *
 * Runs under tests/private-hosts.sh: a mount namespace of its own where
 * /etc/hosts is REDLOCK_TEST_HOSTS, rewritten here in place (the bind mount
 * holds the file's inode: a rename would not be seen). Master 0 is written
 * `mover:PORT`; the others as the cluster gives them. One worker: master 0
 * is killed and replaced, and 127.0.0.2:PORT is fixed.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <hiredis/hiredis.h>

#include <redlock.h>

#include "cluster.h"
#include "core.h"
#include "servers.h"

#define MOVER 0            /* the master written as a name */
#define NEW_IP "127.0.0.2" /* where the name moves */
#define LEASE_MS 20000u    /* a lease live across the move: the window it sets */

static const char marker[] = "\0redlock:marker";
static tc_redis *standby; /* the server the name moves onto */
static char masters[1024];

/* Rewrite the hosts file in place: truncate and write, same inode. */
static void hosts_write(const char *mover_ip)
{
    const char *path = getenv("REDLOCK_TEST_HOSTS");
    cr_assert(path && *path, "REDLOCK_TEST_HOSTS is not set (run under private-hosts.sh)");
    char text[256];
    int len = snprintf(text, sizeof(text), "127.0.0.1 localhost\n::1 localhost\n");
    if (mover_ip)
        len += snprintf(text + len, sizeof(text) - (size_t)len, "%s mover\n", mover_ip);
    int fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert(fd >= 0, "open %s", path);
    cr_assert(eq(int, (int)write(fd, text, (size_t)len), len));
    close(fd);
}

/* Rewrite the hosts file in place with @text. */
static void hosts_write_text(const char *text)
{
    const char *path = getenv("REDLOCK_TEST_HOSTS");
    int fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert(fd >= 0, "open %s", path);
    cr_assert(eq(int, (int)write(fd, text, strlen(text)), (int)strlen(text)));
    close(fd);
}

/* Rewrite resolv.conf (REDLOCK_TEST_RESOLV) in place with @text. */
static void resolv_write(const char *text)
{
    const char *path = getenv("REDLOCK_TEST_RESOLV");
    cr_assert(path && *path, "REDLOCK_TEST_RESOLV is not set (run under private-hosts.sh)");
    int fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert(fd >= 0, "open %s", path);
    cr_assert(eq(int, (int)write(fd, text, strlen(text)), (int)strlen(text)));
    close(fd);
}

/* The pipes this process has open now ("pipe:[inode]", one per end), up
 * to @max of them into @out; returns how many. */
static int open_pipes(char out[][64], int max)
{
    DIR *d = opendir("/proc/self/fd");
    cr_assert(d != NULL, "opendir /proc/self/fd");
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < max;) {
        char path[300];
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, out[n], 63);
        if (len > 5 && strncmp(out[n], "pipe:", 5) == 0)
            out[n++][len] = '\0';
    }
    closedir(d);
    return n;
}

static bool in_list(const char *s, char list[][64], int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0)
            return true;
    return false;
}

/* How many of @pipes (@n) are still open. */
static int still_open(char pipes[][64], int n)
{
    char now[64][64];
    int k = open_pipes(now, 64), open = 0;
    for (int i = 0; i < n; i++)
        open += in_list(pipes[i], now, k);
    return open;
}

static void setup(void)
{
    const char *skip = getenv("REDLOCK_TEST_HOSTS_SKIP");
    if (skip && *skip)
        cr_skip_test("%s", skip);
    hosts_write("127.0.0.1");
    resolv_write("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n");
    char name[32];
    snprintf(name, sizeof(name), "mover:%d", tc_port(MOVER));
    char *list = tc_masters_with(MOVER, name);
    snprintf(masters, sizeof(masters), "%s", list);
    free(list);
}

static void teardown(void)
{
    tc_redis_stop(standby);
    standby = NULL;
    tc_heal();
}

TestSuite(names, .init = setup, .fini = teardown, .timeout = 90);

static redlock_client *mover_client(void)
{
    redlock_config cfg;
    tc_config(&cfg);
    cfg.masters = masters;
    cfg.retry_count = 0;
    cfg.reconnect_min_ms = 10;
    cfg.reconnect_max_ms = 50; /* a reconnect is what the tests wait for */
    cfg.log_fn = tc_log;
    cfg.log_level = REDLOCK_LOG_INFO;
    return tc_client(&cfg, -1);
}

/* A reply from the standby (127.0.0.2), whose port is master 0's. */
static redisReply *standby_cmd(const char *fmt, ...)
{
    redisContext *rc = redisConnect(NEW_IP, tc_port(MOVER));
    cr_assert(rc && !rc->err, "connect to the standby: %s", rc ? rc->errstr : "out of memory");
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(rc, fmt, ap);
    va_end(ap);
    redisFree(rc);
    cr_assert(r != NULL, "no reply from the standby");
    return r;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (const char *p = tc_log_text(); (p = strstr(p, s)); p += strlen(s))
        n++;
    return n;
}

/* Master 0's row in a fresh ping. */
static const redlock_master_state *ping0(redlock_client *c, redlock_status *st)
{
    redlock_ping(c, st, NULL);
    return redlock_status_master(st, MOVER);
}

Test(names, a_name_moved_onto_a_server_that_counts_is_reborn_there_before_it_votes)
{
    redlock_client *c = mover_client();
    char res[128], other[128];
    tc_resource(res, sizeof(res), "moved");
    tc_resource(other, sizeof(other), "moved-other");
    tc_must_release(c, tc_must_acquire(c, res, 2000, NULL));

    /* A lease the old server granted as master 0, live across the move. */
    redlock_lock *held = tc_must_acquire(c, res, LEASE_MS, NULL);

    /* The old server goes for good (the operator's rule); the name points
     * at a standby declared empty in advance: its own marker counts. */
    tc_kill(MOVER);
    char port[16];
    snprintf(port, sizeof(port), "%d", tc_port(MOVER));
    const char *args[] = { "--bind", NEW_IP, "--port", port, NULL };
    standby = tc_redis_start(args);
    redlock_config dcfg;
    tc_config(&dcfg);
    char one[64];
    snprintf(one, sizeof(one), "%s:%s", NEW_IP, port);
    dcfg.masters = one;
    redlock_client *d = tc_client(&dcfg, -1);
    size_t declared = 0;
    redlock_error e;
    cr_assert(eq(int, redlock_declare_empty(d, &declared, &e), 0), "%s", e.msg);
    redlock_client_free(d);
    redisReply *s = standby_cmd("HGET %b served", marker, sizeof(marker) - 1);
    cr_assert(s->type == REDIS_REPLY_STRING, "the standby's marker counts before the move");
    freeReplyObject(s);
    redisReply *info = standby_cmd("INFO server");
    const char *p = strstr(info->str, "run_id:");
    cr_assert(p != NULL, "INFO has no run_id");
    char run_id[41];
    snprintf(run_id, sizeof(run_id), "%.40s", p + 7);
    freeReplyObject(info);

    hosts_write(NEW_IP);

    /* The client follows the name: master 0 answers from the standby, and
     * sits out, named for the move. */
    TC_STATUS(st);
    const redlock_master_state *m = NULL;
    cr_assert(TC_AWAIT((m = ping0(c, st), m->err == 0 && strcmp(m->run_id, run_id) == 0), 10000),
              "master 0 never answered from the standby (run_id %.8s): err %d %s; log:\n%s", run_id,
              m ? m->err : -1, m ? m->detail : "", tc_log_text());
    cr_assert(m->excluded, "master 0 counts at once on the server its name moved to");
    cr_assert(strstr(m->excluded_why, "its name moved to a new server") != NULL, "excluded_why: %s",
              m->excluded_why);
    char was[64];
    snprintf(was, sizeof(was), "(was 127.0.0.1)");
    cr_assert(tc_log_has("now at " NEW_IP, was), "no INFO line for the move; log:\n%s",
              tc_log_text());

    /* Server side: reborn for the move, so every client's acquire sees it. */
    s = standby_cmd("HGET %b cause", marker, sizeof(marker) - 1);
    cr_assert(s->type == REDIS_REPLY_STRING && strcmp(s->str, "moved") == 0,
              "the standby's marker does not say 'moved'");
    freeReplyObject(s);

    /* No OK from master 0 counts: a free resource is granted by the four
     * others, and master 0's vote is not an OK; the held one stays held. */
    TC_OUTCOME(out);
    redlock_lock *lock = NULL;
    int rc = redlock_acquire(c, other, strlen(other), 2000, &lock, out, &e);
    cr_assert(eq(int, rc, 0), "%s", e.msg);
    const redlock_vote *v = redlock_outcome_vote(out, MOVER);
    cr_assert(v->kind != REDLOCK_VOTE_OK, "master 0 voted OK on the server its name moved to");
    tc_must_release(c, lock);
    redlock_client *b = mover_client();
    redlock_lock *second = NULL;
    rc = redlock_acquire(b, res, strlen(res), 2000, &second, out, &e);
    cr_assert(not(eq(int, rc, 0)), "a second client took the lock the first holds");
    v = redlock_outcome_vote(out, MOVER);
    cr_assert(v->kind != REDLOCK_VOTE_OK, "master 0 voted OK for a second holder");
    redlock_client_free(b);
    tc_must_release(c, held);
    redlock_client_free(c);
}

Test(names, a_name_that_stops_resolving_keeps_its_address_and_warns_once)
{
    redlock_client *c = mover_client();
    char res[128];
    tc_resource(res, sizeof(res), "unresolved");
    TC_STATUS(st);
    const redlock_master_state *m = ping0(c, st);
    char run_id[41];
    memcpy(run_id, m->run_id, sizeof(run_id));

    /* Each CLIENT KILL drops the connection; the reconnect looks the name
     * up, fails, and goes to the address it had. */
    hosts_write(NULL);
    for (int kill = 0; kill < 2; kill++) {
        int before = count_lines("): connected");
        freeReplyObject(tc_cmd(MOVER, "CLIENT KILL TYPE normal"));
        cr_assert(TC_AWAIT(count_lines("): connected") > before && (m = ping0(c, st), m->err == 0),
                           10000),
                  "master 0 did not come back after CLIENT KILL; log:\n%s", tc_log_text());
        cr_assert(strcmp(m->run_id, run_id) == 0, "run_id %.8s, was %.8s", m->run_id, run_id);
        cr_assert(not(m->excluded), "%s", m->excluded_why);
    }
    cr_assert(eq(int, count_lines("cannot resolve \"mover\" again"), 1),
              "the failure streak is not one warning; log:\n%s", tc_log_text());
    cr_assert(tc_log_has("cannot resolve \"mover\" again", "keeping 127.0.0.1"), "%s",
              tc_log_text());
    tc_must_release(c, tc_must_acquire(c, res, 2000, NULL));
    redlock_client_free(c);
}

/* The node's look-up runs on a thread of its own and shares its job with the
 * node: a client freed while it runs must neither wait for it nor leave the
 * job behind. A DNS server that never answers (a UDP socket nobody reads)
 * keeps the look-up running for resolv.conf's timeout. */
Test(names, a_client_freed_while_its_name_is_looked_up_lets_the_look_up_end_alone)
{
    redlock_config cfg;
    tc_config(&cfg);
    cfg.masters = masters;
    cfg.reconnect_min_ms = 10;
    cfg.reconnect_max_ms = 50;
    cfg.log_fn = tc_log;
    cfg.log_level = REDLOCK_LOG_DEBUG;
    redlock_client *c = tc_client(&cfg, -1);

    int dns = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(53) };
    inet_pton(AF_INET, "127.0.0.3", &sa.sin_addr);
    if (dns < 0 || bind(dns, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        cr_skip_test("cannot bind a silent DNS server on 127.0.0.3:53 here");
    resolv_write("nameserver 127.0.0.3\noptions timeout:3 attempts:1\n");
    hosts_write(NULL);
    char before[64][64], during[64][64], job[4][64];
    int nbefore = open_pipes(before, 64);

    freeReplyObject(tc_cmd(MOVER, "CLIENT KILL TYPE normal"));
    cr_assert(TC_AWAIT(tc_log_contains("looking \"mover\" up again"), 10000),
              "no look-up started; log:\n%s", tc_log_text());
    /* The pipes that opened with the look-up are its job's. */
    int nduring = open_pipes(during, 64), njob = 0;
    for (int i = 0; i < nduring && njob < 4; i++)
        if (!in_list(during[i], before, nbefore))
            memcpy(job[njob++], during[i], sizeof(job[0]));
    cr_assert(eq(int, njob, 2), "the look-up's pipe is not open (%d new pipe ends)", njob);
    uint64_t t0 = tc_now_us();
    redlock_client_free(c);
    cr_assert(lt(u64, tc_ms_since(t0), 2000), "freeing the client waited for the look-up");
    cr_assert(eq(int, still_open(job, njob), 2), "the job went with the client, under its thread");
    /* The thread's look-up ends at resolv.conf's timeout; it lets go last. */
    cr_assert(TC_AWAIT(still_open(job, njob) == 0, 8000), "the look-up's pipe outlived its thread");
    close(dns);
}

/* A name with two IPv4 addresses is two servers for one master: said once,
 * when the client is made (and never for localhost's IPv6 address beside
 * its IPv4 one, which is never picked). */
Test(names, a_round_robin_name_is_warned_once_and_localhost_is_not)
{
    hosts_write_text("127.0.0.1 localhost rr\n127.0.0.4 rr\n::1 localhost\n");
    char list[1024];
    int len = snprintf(list, sizeof(list), "rr:%d,localhost:%d", tc_port(0), tc_port(1));
    for (int i = 2; i < tc_n(); i++)
        len += snprintf(list + len, sizeof(list) - (size_t)len, ",%s", tc_addr(i));
    redlock_config cfg;
    tc_config(&cfg);
    cfg.masters = list;
    cfg.log_fn = tc_log;
    cfg.log_level = REDLOCK_LOG_INFO;
    redlock_client *c = tc_client(&cfg, 4);
    cr_assert(eq(int, count_lines("resolves to 2 addresses (round-robin)"), 1), "log:\n%s",
              tc_log_text());
    cr_assert(tc_log_has("master 0 (rr:", "unsafe for a master"), "log:\n%s", tc_log_text());
    cr_assert(not(tc_log_contains("\"localhost\" resolves")), "log:\n%s", tc_log_text());
    redlock_client_free(c);
}
