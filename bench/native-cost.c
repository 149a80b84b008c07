/* native-cost.c - what one release, extend or acquire costs a master: the
 * library's script or transaction against the server's own commands, and
 * against the same commands pipelined without MULTI, on the same server.
 *
 * Run by tools/native-cost.sh; prints one line per shape: name, µs/call
 * (commandstats), µs of CPU per call. The scripts are the library's own
 * (script.c). How: bench/RESULTS.md, "How the rows measure" (native-cost).
 */
#include "base/script.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

static redisContext *rc;
static long n_calls = 20000;

static redisReply *cmd(int argc, const char **argv, const size_t *len)
{
    redisReply *r = redisCommandArgv(rc, argc, argv, len);
    if (!r) {
        fprintf(stderr, "native-cost: %s\n", rc->errstr);
        exit(1);
    }
    return r;
}

static void must(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(rc, fmt, ap);
    va_end(ap);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "native-cost: %s: %s\n", fmt, r ? r->str : rc->errstr);
        exit(1);
    }
    freeReplyObject(r);
}

/* "usec=" of cmdstat_@name, or 0. */
static double stat_usec(const char *info, const char *name)
{
    char field[64];
    snprintf(field, sizeof(field), "cmdstat_%s:", name);
    const char *p = strstr(info, field);
    p = p ? strstr(p, "usec=") : NULL;
    return p ? strtod(p + 5, NULL) : 0;
}

static double cpu_us(void)
{
    redisReply *r = redisCommand(rc, "INFO cpu");
    double s = 0;
    const char *p = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "used_cpu_sys:") : NULL;
    if (p)
        s += strtod(p + 13, NULL);
    p = p ? strstr(r->str, "used_cpu_user:") : NULL;
    if (p)
        s += strtod(p + 14, NULL);
    freeReplyObject(r);
    return s * 1e6;
}

static const char key[] = "native-cost:lock";
/* The library's names start with a NUL (script.c); these do not, so that
 * every shape can name them alike. */
static const char queue[] = "native-cost:lock:q";
static const char leases[] = "native-cost:lock:l";
static const char marker[] = "native-cost:marker";
static const char held[] = "native-cost:held";
static const char token[] = "00112233445566778899aabbccddeeff";

typedef void shape_fn(void);

/* One shape: N calls of @fn, each after @prep (not measured: RESETSTAT
 * first, the prep's own commands are told apart by name). */
static void measure(const char *name, shape_fn *prep, const char *prep_cmd, shape_fn *fn,
                    const char *const *counted)
{
    must("SET %s %s", key, token);
    must("CONFIG RESETSTAT");
    double cpu0 = cpu_us(), prep_cpu = 0;
    for (long i = 0; i < n_calls; i++) {
        if (prep)
            prep();
        fn();
    }
    double cpu = cpu_us() - cpu0;
    redisReply *r = redisCommand(rc, "INFO commandstats");
    double usec = 0, inner = 0;
    for (size_t k = 0; counted[k]; k++)
        usec += stat_usec(r->str, counted[k]);
    static const char *const inside[] = { "get",     "set",   "del",  "exists",  "zrem",
                                          "zadd",    "hmget", "hget", "pexpire", "pexpiretime",
                                          "delifeq", "delex", NULL };
    for (size_t k = 0; inside[k]; k++)
        inner += stat_usec(r->str, inside[k]);
    if (prep)
        inner -= stat_usec(r->str, prep_cmd); /* the prep's, not the shape's */
    freeReplyObject(r);
    if (prep) {
        /* The prep is one command per call: its own CPU measured alone. */
        double c0 = cpu_us();
        for (long i = 0; i < n_calls; i++)
            prep();
        prep_cpu = cpu_us() - c0;
    }
    printf("%-38s %6.2f us/call (commandstats; commands inside: %5.2f)  %6.2f us CPU/call\n", name,
           usec / n_calls, inner / n_calls, (cpu - prep_cpu) / n_calls);
}

static void set_token(void)
{
    must("SET %s %s PX 60000", key, token);
}

static void extend_script(void)
{
    const char *argv[] = { "EVALSHA",
                           rl_script_sha(RL_SCRIPT_EXTEND),
                           "3",
                           key,
                           "\0redlock:marker",
                           "\0redlock:held",
                           token,
                           "10000",
                           "1" };
    size_t len[] = { 7, 40, 1, strlen(key), 15, 13, strlen(token), 5, 1 };
    freeReplyObject(cmd(9, argv, len));
}

/* Read and drop @n replies. */
static void read_replies(int n)
{
    for (int i = 0; i < n; i++) {
        redisReply *r = NULL;
        if (redisGetReply(rc, (void **)&r) != REDIS_OK) {
            fprintf(stderr, "native-cost: %s\n", rc->errstr);
            exit(1);
        }
        freeReplyObject(r);
    }
}

/* A transaction sent as the library sends it: MULTI, the commands and
 * EXEC in one write, then every reply read. */
static void transaction(int n, const char *const *fmt, const char *const (*a)[3])
{
    redisAppendCommand(rc, "MULTI");
    for (int i = 0; i < n; i++)
        redisAppendCommand(rc, fmt[i], a[i][0], a[i][1], a[i][2]);
    redisAppendCommand(rc, "EXEC");
    read_replies(n + 2);
}

/* The library's until issue 30 (cmd.c rl_cmd_extend_native), no longer
 * sent: every master gets the extend script; kept as a measurement. The
 * second SET is for a key marked for its waiters. */
static void extend_native(void)
{
    static const char marked[] = "00112233445566778899aabbccddeeff\2";
    static const char *const fmt[] = { "HGET %s%s served", "GET %s%s%s",
                                       "SET %s %s IFEQ %s PX 10000", "SET %s %s IFEQ %s PX 10000",
                                       "ZADD %s GT 9999999999999 %s" };
    const char *const a[5][3] = { { marker, "", "" },
                                  { key, "", "" },
                                  { key, token, token },
                                  { key, marked, marked },
                                  { held, token, "" } };
    transaction(5, fmt, a);
}

static void release_script(void)
{
    const char *argv[] = {
        "EVALSHA", rl_script_sha(RL_SCRIPT_RELEASE), "4", key, queue, leases, "\0redlock:held",
        token
    };
    size_t len[] = {
        7, 40, 1, strlen(key), sizeof(queue) - 1, sizeof(leases) - 1, 13, strlen(token)
    };
    freeReplyObject(cmd(8, argv, len));
}

static void delifeq(void)
{
    must("DELIFEQ %s %s", key, token);
}

static void delex(void)
{
    must("DELEX %s IFEQ %s", key, token);
}

static const char *del_native; /* "DELIFEQ" or "DELEX" */

/* Several commands in one write, no MULTI: every reply read. */
static void pipeline(int n, const char *const *fmt, const char *const (*a)[3])
{
    for (int i = 0; i < n; i++)
        redisAppendCommand(rc, fmt[i], a[i][0], a[i][1], a[i][2]);
    read_replies(n);
}

static void del_key(void)
{
    must("DEL %s", key);
}

static void acquire_set(void)
{
    must("SET %s %s NX PX 10000", key, token);
}

static void acquire_fast(void)
{
    static const char *const fmt[] = { "HGET %s%s served", "SET %s %s NX GET PX 10000%s",
                                       "EXISTS %s%s%s", "ZADD %s GT 9999999999999 %s%s" };
    const char *const a[4][3] = {
        { marker, "", "" }, { key, token, "" }, { queue, "", "" }, { held, token, "" }
    };
    transaction(4, fmt, a);
}

static void acquire_pipe(void)
{
    static const char *const fmt[] = { "SET %s %s NX GET PX 10000%s", "HGET %s%s served",
                                       "ZADD %s 9999999999999 %s%s" };
    const char *const a[3][3] = { { key, token, "" }, { marker, "", "" }, { held, token, "" } };
    pipeline(3, fmt, a);
}

static void release_pipe(void)
{
    static const char *const fmt_delifeq[] = { "DELIFEQ %s %s%s", "ZREM %s %s%s", "EXISTS %s%s%s" };
    static const char *const fmt_delex[] = { "DELEX %s IFEQ %s%s", "ZREM %s %s%s",
                                             "EXISTS %s%s%s" };
    const char *const a[3][3] = { { key, token, "" }, { held, key, "" }, { queue, "", "" } };
    pipeline(3, strcmp(del_native, "DELIFEQ") == 0 ? fmt_delifeq : fmt_delex, a);
}

/* The library's release without Lua (cmd.c rl_cmd_release_native): ZREM of
 * the lease's index entry and the compare-and-delete, pipelined. */
static void release_native(void)
{
    static const char *const fmt_delifeq[] = { "ZREM %s %s%s", "DELIFEQ %s %s%s" };
    static const char *const fmt_delex[] = { "ZREM %s %s%s", "DELEX %s IFEQ %s%s" };
    const char *const a[2][3] = { { held, token, "" }, { key, token, "" } };
    pipeline(2, strcmp(del_native, "DELIFEQ") == 0 ? fmt_delifeq : fmt_delex, a);
}

static int has(const char *command)
{
    redisReply *r = redisCommand(rc, "COMMAND INFO %s", command);
    int yes = r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
              r->element[0]->type == REDIS_REPLY_ARRAY;
    freeReplyObject(r);
    return yes;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: native-cost SOCKET|PORT [N]\n");
        return 2;
    }
    if (argc > 2)
        n_calls = atol(argv[2]);
    rc = atoi(argv[1]) > 0 ? redisConnect("127.0.0.1", atoi(argv[1])) : redisConnectUnix(argv[1]);
    if (!rc || rc->err) {
        fprintf(stderr, "native-cost: connect: %s\n", rc ? rc->errstr : "out of memory");
        return 1;
    }
    if (rl_scripts_init() != 0)
        return 1;
    for (int i = 0; i < RL_SCRIPT_COUNT; i++)
        must("SCRIPT LOAD %s", rl_script_body(i));
    /* A marker that counts, and knows the ttl: the extend script's
     * common case (HEARD answers from one HMGET). */
    must("HSET %s served 1 maxttl 60000 born 0 window 0", marker);
    redisReply *r = redisCommand(rc, "SET native-cost:probe x IFEQ y");
    int ifeq = r && r->type != REDIS_REPLY_ERROR;
    freeReplyObject(r);
    del_native = has("DELIFEQ") ? "DELIFEQ" : has("DELEX") ? "DELEX" : NULL;

    static const char *const sha[] = { "evalsha", NULL };
    static const char *const tx[] = { "multi", "exec", NULL };
    static const char *const delifeq_c[] = { "delifeq", NULL };
    static const char *const delex_c[] = { "delex", NULL };
    measure("extend: script (EVALSHA)", NULL, NULL, extend_script, sha);
    if (ifeq)
        measure("extend: SET IFEQ transaction", NULL, NULL, extend_native, tx);
    measure("release: script (EVALSHA)", set_token, "set", release_script, sha);
    if (del_native && strcmp(del_native, "DELIFEQ") == 0)
        measure("release: DELIFEQ alone (unsound)", set_token, "set", delifeq, delifeq_c);
    if (del_native && strcmp(del_native, "DELEX") == 0)
        measure("release: DELEX IFEQ alone (unsound)", set_token, "set", delex, delex_c);
    static const char *const rel_c[] = { "delifeq", "delex", "zrem", "exists", NULL };
    if (del_native)
        measure("release: the library's, ZREM+DEL* pipelined", set_token, "set", release_native,
                rel_c);
    /* The acquire, and the least a guarded cycle asks (the raw-guard row,
     * rawcycle.c): what each command beside the SET costs per call. */
    static const char *const set_c[] = { "set", NULL };
    static const char *const guard_c[] = { "set", "hget", "zadd", NULL };
    measure("acquire: SET NX PX alone", del_key, "del", acquire_set, set_c);
    measure("acquire: fast transaction", del_key, "del", acquire_fast, tx);
    measure("acquire: SET+HGET+ZADD pipelined", del_key, "del", acquire_pipe, guard_c);
    if (del_native)
        measure("release: DEL*+ZREM+EXISTS pipelined", set_token, "set", release_pipe, rel_c);
    must("DEL %s", key);
    redisFree(rc);
    return 0;
}
