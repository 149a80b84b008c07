/* mstat.c - what the masters did during a row, from their own counters
 * over plain hiredis (not through the library under test): CPU time (INFO
 * cpu) and, per command, calls and time spent (INFO commandstats; Redis 7
 * also lists the redis.call()s a script makes, whose time is part of the
 * EVALSHA's too). Read before and after a row, they say what one cycle
 * costs the masters and what the library asked of them.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

static double info_num(const char *info, const char *field)
{
    const char *p = strstr(info, field);

    return p ? strtod(p + strlen(field), NULL) : -1;
}

/* Add "cmdstat_NAME:calls=C,usec=U,..." lines into @s. */
static void add_cmdstats(struct mstat *s, const char *info)
{
    const char *p;

    for (p = strstr(info, "cmdstat_"); p; p = strstr(p + 1, "cmdstat_")) {
        char name[sizeof(s->cmd[0].name)];
        unsigned long long calls, usec;
        int i;

        if (sscanf(p, "cmdstat_%23[^:]:calls=%llu,usec=%llu", name, &calls, &usec) != 3)
            continue;
        for (i = 0; i < s->n && strcmp(s->cmd[i].name, name) != 0; i++)
            ;
        if (i == s->n) {
            if (s->n == MSTAT_CMDS)
                continue;
            snprintf(s->cmd[s->n++].name, sizeof(name), "%s", name);
        }
        s->cmd[i].calls += calls;
        s->cmd[i].usec += usec;
    }
}

/* One master's INFO @section into @s; 0, or -1 if it does not answer. */
static int master_info(int i, const char *section, struct mstat *s)
{
    struct timeval tv = { 0, 300000 };
    redisContext *rc = redisConnectWithTimeout(config.host[i], config.port[i], tv);
    redisReply *rep = NULL;
    int ok = 0;

    if (rc && !rc->err) {
        redisSetTimeout(rc, tv);
        rep = redisCommand(rc, "INFO %s", section);
    }
    if (rep && rep->type == REDIS_REPLY_STRING) {
        double sys = info_num(rep->str, "used_cpu_sys:");
        double user = info_num(rep->str, "used_cpu_user:");

        ok = 1;
        if (strcmp(section, "cpu") == 0 && (ok = sys >= 0 && user >= 0))
            s->cpu_s += sys + user;
        add_cmdstats(s, rep->str);
    }
    if (rep)
        freeReplyObject(rep);
    redisFree(rc);
    return ok ? 0 : -1;
}

/* Every master's counters summed; s->ok is 0 if one did not answer. */
void masters_stat(struct mstat *s)
{
    int i;

    memset(s, 0, sizeof(*s));
    s->ok = 1;
    for (i = 0; i < config.n_masters && s->ok; i++)
        if (master_info(i, "cpu", s) < 0 || master_info(i, "commandstats", s) < 0)
            s->ok = 0;
}

/* CPU seconds used so far by all N masters, or -1 if one does not answer. */
double masters_cpu_s(void)
{
    struct mstat s;

    masters_stat(&s);
    return s.ok ? s.cpu_s : -1;
}

static int by_usec(const void *a, const void *b)
{
    const struct mstat_cmd *x = a, *y = b;

    return x->usec < y->usec ? 1 : x->usec > y->usec ? -1 : 0;
}

static int by_calls(const void *a, const void *b)
{
    const struct mstat_cmd *x = a, *y = b;

    return x->calls < y->calls ? 1 : x->calls > y->calls ? -1 : strcmp(x->name, y->name);
}

/* "set 1.00, evalsha 1.00, get 1.00, del 1.00": what one cycle asked of
 * each master, most called first. Commands seen less than once in a
 * hundred cycles (the bench's own INFO) are left out. */
static void calls_line(struct result *r, struct mstat_cmd *d, int n, uint64_t cycles)
{
    size_t used = 0;
    int i;

    qsort(d, (size_t)n, sizeof(d[0]), by_calls);
    for (i = 0; i < n && used < sizeof(r->masters_calls); i++) {
        double per = (double)d[i].calls / (double)cycles / (double)config.n_masters;

        if (per >= 0.01)
            used += (size_t)snprintf(r->masters_calls + used, sizeof(r->masters_calls) - used,
                                     "%s%s %.2f", used ? ", " : "", d[i].name, per);
    }
}

/* @r's masters' figures from @before (masters_stat() at the start) and now,
 * over r->duration_s and @cycles: cores busy, CPU per cycle, and per
 * command calls per cycle and µs per call (the three costliest in the
 * notes, all in the JSON), and the calls per cycle and master. */
void masters_delta(struct result *r, const struct mstat *before, uint64_t cycles)
{
    struct mstat now;
    struct mstat_cmd d[MSTAT_CMDS];
    size_t used = 0;
    int i, j, n = 0;

    if (!before->ok || r->duration_s <= 0 || (masters_stat(&now), !now.ok))
        return;
    r->masters_cores = (now.cpu_s - before->cpu_s) / r->duration_s;
    if (!cycles)
        return;
    r->masters_cpu_us_per_cycle = (now.cpu_s - before->cpu_s) * 1e6 / (double)cycles;
    for (i = 0; i < now.n; i++) {
        d[n] = now.cmd[i];
        for (j = 0; j < before->n; j++)
            if (strcmp(before->cmd[j].name, now.cmd[i].name) == 0) {
                d[n].calls -= before->cmd[j].calls;
                d[n].usec -= before->cmd[j].usec;
            }
        n += d[n].calls > 0;
    }
    qsort(d, (size_t)n, sizeof(d[0]), by_usec);
    json_key(&r->xj, "masters_commands");
    json_obj_begin(&r->xj);
    for (i = 0; i < n; i++) {
        double per_cycle = (double)d[i].calls / (double)cycles,
               us = (double)d[i].usec / (double)d[i].calls;

        json_key(&r->xj, d[i].name);
        json_obj_begin(&r->xj);
        json_kv_double(&r->xj, "calls_per_cycle", per_cycle, 3);
        json_kv_double(&r->xj, "us_per_call", us, 2);
        json_obj_end(&r->xj);
        if (i < 3 && used < sizeof(r->masters_cmds))
            used += (size_t)snprintf(r->masters_cmds + used, sizeof(r->masters_cmds) - used,
                                     "%s%s %.2f/cycle x %.1f us", i ? ", " : "", d[i].name,
                                     per_cycle, us);
    }
    json_obj_end(&r->xj);
    calls_line(r, d, n, cycles);
}
