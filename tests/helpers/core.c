/* core.c - shared plumbing of the redlock behaviour tests (see core.h).
 *
 * Everything here talks to the library only through <redlock.h> and to the
 * masters only through cluster.h's tc_cmd(), so a test's claims about what
 * the masters hold never depend on the code under test.
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "fake.h"

/* ------------------------------------------------------------------------ */
/* Clients                                                                  */
/* ------------------------------------------------------------------------ */

void tc_config(redlock_config *cfg)
{
    redlock_config_init(cfg);
    cfg->masters = tc_masters();
    cfg->password = tc_password();
    /* 50 ms is the library's default and plenty on an idle machine; the
     * sanitizer builds on two busy cores are not idle. Tests about timing
     * set their own. */
    cfg->node_timeout_ms = 500;
}

/* The answers of one ping through @c. */
static int answering(redlock_client *c)
{
    TC_STATUS(st);
    redlock_error e;

    redlock_ping(c, st, &e);
    return (int)redlock_status_answered(st);
}

int tc_wait_up(redlock_client *c, int want, int timeout_ms)
{
    int answered = 0;
    uint64_t t0 = tc_now_us();

    /* Connected first, awaited through the library (redlock_ready: no
     * polling); then answering, since a paused master stays connected. */
    redlock_ready(c, (size_t)(want > 0 ? want : 1), (uint32_t)timeout_ms, NULL, NULL);
    int left = timeout_ms - (int)((tc_now_us() - t0) / 1000);
    TC_AWAIT((answered = answering(c)) >= want, left > 0 ? left : 1);
    return answered;
}

static void on_ready(redlock_client *c, int status, size_t n_up, const redlock_error *err,
                     void *arg)
{
    (void)err;
    (void)c;
    (void)n_up;
    *(volatile int *)arg = status == 0 ? 1 : -1;
}

int tc_async_ready(struct event_base *base, redlock_client *c, int want, int timeout_ms)
{
    volatile int done = 0;
    redlock_error e;
    if (redlock_ready_async(c, (size_t)want, (uint32_t)timeout_ms, on_ready, (void *)&done, &e))
        tc_fail("redlock_ready_async: %s", e.msg);
    TC_RUN_UNTIL(base, done, timeout_ms + 1000);
    return done == 1;
}

void tc_free_lock_cb(redlock_client *c, int status, redlock_lock *lock, const redlock_outcome *out,
                     const redlock_error *err, void *arg)
{
    (void)c;
    (void)status;
    (void)out;
    (void)err;
    (void)arg;
    redlock_lock_free(lock);
}

redlock_client *tc_client_try(const redlock_config *cfg, int want_up, char *why, size_t size)
{
    redlock_config def;
    redlock_client *c = NULL;
    redlock_error e;
    int rc;

    if (!cfg) {
        tc_config(&def);
        cfg = &def;
    }
    rc = redlock_client_new(cfg, NULL, &c, &e);
    if (rc != 0) {
        snprintf(why, size, "redlock_client_new: %s: %s", redlock_err_name(rc), e.msg);
        return NULL;
    }
    if (want_up < 0)
        want_up = (int)redlock_client_masters(c);
    if (want_up > 0) {
        int up = tc_wait_up(c, want_up, 10000);

        if (up < want_up) {
            snprintf(why, size, "only %d of the %d masters wanted answer a ping after 10 s", up,
                     want_up);
            redlock_client_free(c);
            return NULL;
        }
    }
    return c;
}

redlock_client *tc_client(const redlock_config *cfg, int want_up)
{
    char why[REDLOCK_ERRMSG_LEN + 64];
    redlock_client *c = tc_client_try(cfg, want_up, why, sizeof(why));

    if (!c)
        tc_fail("%s", why);
    return c;
}

redlock_lock *tc_must_acquire(redlock_client *c, const char *res, uint32_t ttl_ms,
                              redlock_outcome *out)
{
    redlock_lock *lock = NULL;
    redlock_error e;
    int rc = redlock_acquire(c, res, strlen(res), ttl_ms, &lock, out, &e);

    if (rc != 0 || !lock)
        tc_fail("acquire %s: %s: %s", res, redlock_err_name(rc), e.msg);
    return lock;
}

void tc_must_release(redlock_client *c, redlock_lock *lock)
{
    redlock_error e;
    int rc = redlock_release(c, lock, NULL, &e);

    if (rc != 0)
        tc_fail("release: %s: %s", redlock_err_name(rc), e.msg);
    redlock_lock_free(lock);
}

redlock_client *tc_client_async(const redlock_config *cfg, struct event_base *base)
{
    redlock_config def;
    redlock_client *c = NULL;
    redlock_error e;
    int rc;

    if (!cfg) {
        tc_config(&def);
        cfg = &def;
    }
    rc = redlock_client_new(cfg, base, &c, &e);
    if (rc != 0)
        tc_fail("redlock_client_new (async): %s: %s", redlock_err_name(rc), e.msg);
    return c;
}

int tc_try_acquire(redlock_client *c, uint32_t ttl_ms, struct tc_try *t)
{
    uint64_t t0;
    redlock_outcome *out = t->out ? t->out : tc_outcome_new();

    memset(t, 0, sizeof(*t));
    t->out = out;
    tc_resource(t->res, sizeof(t->res), NULL);
    t0 = tc_now_us();
    t->rc = redlock_acquire(c, t->res, strlen(t->res), ttl_ms, &t->l, t->out, &t->e);
    t->took_ms = tc_ms_since(t0);
    return t->rc;
}

/* ------------------------------------------------------------------------ */
/* What masters hold                                                        */
/* ------------------------------------------------------------------------ */

int tc_get(int i, const void *key, size_t len, char *val, size_t size, long long *pttl)
{
    redisReply *r = tc_cmd(i, "GET %b", key, len);
    int held;

    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_STRING) {
        held = 1;
        if (val && size) {
            size_t n = r->len < size - 1 ? r->len : size - 1;

            memcpy(val, r->str, n);
            val[n] = '\0';
        }
    } else if (r->type == REDIS_REPLY_NIL) {
        held = 0;
        if (val && size)
            val[0] = '\0';
    } else {
        held = -1;
    }
    freeReplyObject(r);
    if (pttl) {
        r = tc_cmd(i, "PTTL %b", key, len);
        *pttl = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -3;
        freeReplyObject(r);
    }
    return held;
}

int tc_value_is_token(const char *val, const char *token)
{
    size_t n = strlen(token);
    return strncmp(val, token, n) == 0 &&
           (val[n] == '\0' || (val[n] == '\2' && val[n + 1] == '\0'));
}

int tc_count_token(const void *key, size_t len, const char *token, long long max_pttl_ms)
{
    int count = 0;

    for (int i = 0; i < tc_n(); i++) {
        char val[256];
        long long pttl = 0;

        if (tc_get(i, key, len, val, sizeof(val), &pttl) == 1 && tc_value_is_token(val, token) &&
            pttl > 0 && pttl <= max_pttl_ms)
            count++;
    }
    return count;
}

void tc_plant(int i, const void *key, size_t len, const char *value, unsigned ttl_ms)
{
    redisReply *r = tc_cmd(i, "SET %b %s PX %u", key, len, value, ttl_ms);

    if (!r || r->type != REDIS_REPLY_STATUS)
        tc_fail("tc_plant: SET on master %d failed: %s", i, r && r->str ? r->str : "no answer");
    freeReplyObject(r);
}

void tc_del_all(const void *key, size_t len)
{
    for (int i = 0; i < tc_n(); i++)
        freeReplyObject(tc_cmd(i, "DEL %b", key, len));
}

void tc_barrier_on(redlock_client *c, unsigned mask)
{
    static const char key[] = "core:barrier";
    TC_STATUS(st);
    redlock_error e;
    int rc;

    rc = redlock_status_get(c, key, sizeof(key) - 1, st, &e);
    for (uint32_t i = 0; i < REDLOCK_MAX_MASTERS; i++) {
        if ((mask & (1u << i)) &&
            (i >= redlock_status_masters(st) || redlock_status_master(st, i)->err != 0))
            tc_fail("tc_barrier: master %u did not answer (%s: %s)", i,
                    i < redlock_status_masters(st)
                        ? redlock_err_name(redlock_status_master(st, i)->err)
                        : "no such master",
                    i < redlock_status_masters(st) ? redlock_status_master(st, i)->detail
                                                   : (rc ? e.msg : ""));
    }
}

void tc_barrier(redlock_client *c)
{
    tc_barrier_on(c, (1u << redlock_client_masters(c)) - 1);
}

long long tc_info_num(int i, const char *section, const char *field)
{
    redisReply *r = tc_cmd(i, "INFO %s", section);
    long long v = -1;

    if (r && r->type == REDIS_REPLY_STRING) {
        size_t flen = strlen(field);

        for (const char *p = r->str; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
            if (strncmp(p, field, flen) == 0 && p[flen] == ':') {
                const char *q = p + flen + 1;

                if (strncmp(q, "calls=", 6) == 0)
                    q += 6;
                v = strtoll(q, NULL, 10);
                break;
            }
        }
    }
    freeReplyObject(r);
    return v;
}

long long tc_calls(const char *cmd)
{
    char field[64];
    long long sum = 0;

    snprintf(field, sizeof(field), "cmdstat_%s", cmd);
    for (int m = 0; m < tc_n(); m++) {
        long long v = tc_info_num(m, "commandstats", field);

        sum += v > 0 ? v : 0;
    }
    return sum;
}

const char *tc_native_delete(void)
{
    static const char *const names[] = { "delifeq", "delex" };

    for (int i = 0; i < 2; i++) {
        redisReply *r = tc_cmd(0, "COMMAND INFO %s", names[i]);
        int has = r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
                  r->element[0]->type == REDIS_REPLY_ARRAY;

        freeReplyObject(r);
        if (has)
            return names[i];
    }
    return NULL;
}

long long tc_acquires_seen(int i)
{
    /* An acquire is SET NX (restart guard off, no wait) or the acquire
     * script (EVALSHA, or EVAL after NOSCRIPT): count the calls of all
     * three. A SET the script makes inside shows up as a SET too, but a
     * held key makes the script write nothing. */
    static const char *const cmds[] = { "cmdstat_set", "cmdstat_evalsha", "cmdstat_eval" };
    long long n = 0;
    for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
        long long v = tc_info_num(i, "commandstats", cmds[k]);
        n += v > 0 ? v : 0;
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* Messages and tokens                                                      */
/* ------------------------------------------------------------------------ */

void tc_expect_msg(const redlock_error *e, const char *what)
{
    size_t len = strnlen(e->msg, sizeof(e->msg));

    cr_expect(lt(sz, len, sizeof(e->msg)), "%s: message is not NUL-terminated", what);
    cr_expect(gt(sz, len, 0), "%s: message is empty", what);
    cr_expect(zero(ptr, memchr(e->msg, '\n', len)), "%s: message has a newline: %s", what, e->msg);
    cr_expect(zero(ptr, memchr(e->msg, '\r', len)), "%s: message has a CR: %s", what, e->msg);
}

double tc_metric(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return -1;
}

int tc_is_hex32(const char *token)
{
    if (!token || strlen(token) != 32)
        return 0;
    for (const char *p = token; *p; p++) {
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')))
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* The fixture                                                              */
/* ------------------------------------------------------------------------ */

struct tc_fx tc_fx;

void tc_fx_init(void)
{
    memset(&tc_fx, 0, sizeof(tc_fx));
    tc_config(&tc_fx.cfg);
    tc_resource(tc_fx.res, sizeof(tc_fx.res), NULL);
    tc_fx.len = strlen(tc_fx.res);
    tc_fx.out = tc_outcome_new();
}

void tc_fx_setup(void)
{
    tc_fx_init();
    tc_fx_client(-1);
}

void tc_fx_fini(void)
{
    redlock_outcome_free(tc_fx.out);
    redlock_client_free(tc_fx.c);
    redlock_lock_free(tc_fx.l);
    tc_proxy_stop(tc_fx.proxy);
    free(tc_fx.masters);
    memset(&tc_fx, 0, sizeof(tc_fx));
}

void tc_fx_init_faults(void)
{
    tc_fx_init();
    tc_fx.cfg.retry_count = 0;
    tc_fx.cfg.node_timeout_ms = TC_FAULTS_NODE_TIMEOUT_MS;
    tc_fx.cfg.reconnect_min_ms = 10;
    tc_fx.cfg.reconnect_max_ms = 100;
}

void tc_fx_fini_faults(void)
{
    tc_heal();
    tc_fx_fini();
}

redlock_client *tc_fx_client(int want_up)
{
    tc_fx.c = tc_client(&tc_fx.cfg, want_up);
    return tc_fx.c;
}

void tc_fx_masters_with(int i, const char *addr)
{
    free(tc_fx.masters);
    tc_fx.masters = tc_masters_with(i, addr);
    tc_fx.cfg.masters = tc_fx.masters;
}

struct tc_proxy *tc_fx_proxy(int i)
{
    tc_fx.proxy = tc_proxy_start(i);
    tc_fx_masters_with(i, tc_proxy_addr(tc_fx.proxy));
    return tc_fx.proxy;
}

redlock_outcome *tc_outcome_new(void)
{
    redlock_outcome *o = redlock_outcome_new();
    cr_assert(not(zero(ptr, o)), "redlock_outcome_new: out of memory");
    return o;
}

void tc_outcome_freep(redlock_outcome **o)
{
    redlock_outcome_free(*o);
}

redlock_status *tc_status_new(void)
{
    redlock_status *st = redlock_status_new();
    cr_assert(not(zero(ptr, st)), "redlock_status_new: out of memory");
    return st;
}

void tc_status_freep(redlock_status **st)
{
    redlock_status_free(*st);
}

void tc_try_freep(struct tc_try *t)
{
    redlock_outcome_free(t->out);
}
