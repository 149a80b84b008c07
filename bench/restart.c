/* restart.c - masters restarted mid-contention: without persistence (the
 * textbook way to hand one lock to two holders) and the remedies, and
 * under each persistence mode (restart-persist-*).
 */
#include "bench.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Restart without persistence, mid-contention                              */
/*                                                                          */
/* With five masters up, every lock lives on all five and one restarted     */
/* master cannot hand it out twice. The dangerous case is the textbook one: */
/* two masters are down when the holder acquires (its key is on exactly     */
/* three), then one of those three restarts empty while the two come back:  */
/* three empty masters form a majority for the next contender. Holders keep */
/* the lock for ttl/3 so the restart lands inside a hold.                   */
/*                                                                          */
/* Each variant isolates one remedy: restart (none: the library's restart   */
/* guard turned off, to show the danger), restart-guard (the library's      */
/* guard, on by default: a restarted master has lost its memory marker, so  */
/* it does not vote until the longest ttl in use has passed),               */
/* restart-delayed (the operator waits a ttl; guard off, so the delay alone */
/* is what is measured) and restart-aof (appendfsync always: it kept the    */
/* key, and sits out its window as any restart does).                       */
/* ------------------------------------------------------------------------ */

enum restart_kind { RESTART_EMPTY, RESTART_GUARD, RESTART_DELAYED, RESTART_AOF, RESTART_PERSIST };

/* restart-persist: after the schedule's heal, how long each restarted
 * master kept out of quorums, seen through redlock_ping on a client of its
 * own (what an operator's `redlock-cli ping` shows). */
struct sat_out {
    struct schedule *s;
    int idx[3], k;
    double contend_s;                  /* the contenders stop this long after t0 */
    uint64_t healed_us;                /* the heal returned: every master answers PING */
    double ms[3];                      /* < 0: still out when the watch ended */
    uint32_t window_ms;                /* the largest memory_window_ms ping showed */
    char why[REDLOCK_VOTE_DETAIL_LEN]; /* the first excluded_why seen */
    char err[160];
};

static void sat_out_during(void *arg, uint64_t t0)
{
    struct sat_out *so = arg;
    redlock_config cfg;
    redlock_client *c = NULL;
    redlock_status *st;
    uint64_t end = t0 + (uint64_t)(so->contend_s * 1e6);
    int left = so->k, i;

    sched_during(so->s, t0);
    so->healed_us = now_us();
    for (i = 0; i < 3; i++)
        so->ms[i] = -1;
    bench_config_fill(&cfg, 0);
    cfg.reconnect_max_ms = 20;
    if (bench_blocking_client(&cfg, &c, so->err, sizeof(so->err)) < 0)
        return;
    if (!(st = redlock_status_new())) {
        snprintf(so->err, sizeof(so->err), "redlock_status_new: out of memory");
        redlock_client_free(c);
        return;
    }
    while (left > 0 && now_us() < end && !stop_requested()) {
        redlock_error err;
        uint64_t t;

        memset(&err, 0, sizeof(err));
        redlock_ping(c, st, &err);
        t = now_us();
        for (i = 0; i < so->k; i++) {
            /* NULL when the ping failed as a whole: nobody is back yet */
            const redlock_master_state *m = redlock_status_master(st, so->idx[i]);

            if (!m || so->ms[i] >= 0)
                continue;
            if (m->memory_window_ms > so->window_ms)
                so->window_ms = m->memory_window_ms;
            if (m->excluded && !so->why[0])
                snprintf(so->why, sizeof(so->why), "%s", m->excluded_why);
            if (m->err == 0 && !m->excluded) {
                so->ms[i] = (double)(t - so->healed_us) / 1000.0;
                left--;
            }
        }
        if (left > 0)
            sleep_us(10000);
    }
    redlock_status_free(st);
    redlock_client_free(c);
}

/* The row's figures: the longest time a restarted master sat out, each
 * one's, and the longest time the contenders (always waiting) had no
 * holder. */
static void persist_report(struct result *r, const struct sat_out *so, const char *persist,
                           double t_restart)
{
    char each[96]; /* the note's list */
    size_t used = 0;
    int i;

    each[0] = '\0';
    r->sat_out_ms = 0;
    json_kv_cstr(&r->xj, "persist", persist);
    json_key(&r->xj, "sat_out_ms");
    json_arr_begin(&r->xj);
    for (i = 0; i < so->k; i++) {
        if (so->ms[i] < 0)
            r->sat_out_open = 1;
        else if (so->ms[i] > r->sat_out_ms)
            r->sat_out_ms = so->ms[i];
        json_double(&r->xj, so->ms[i], 0);
        if (used < sizeof(each))
            used += (size_t)snprintf(each + used, sizeof(each) - used, "%s%.0f", i ? "," : "",
                                     so->ms[i]);
    }
    json_arr_end(&r->xj);
    json_kv_bool(&r->xj, "sat_out_open", r->sat_out_open);
    json_kv_u64(&r->xj, "memory_window_ms", so->window_ms);
    json_kv_double(&r->xj, "no_holder_ms", r->max_gap_ms, 1);
    if (so->err[0] && !r->note[0])
        result_note(r, "error: ping client: %s", so->err);
    if (!r->note[0] && r->checked)
        result_note(r,
                    "%s: %llu overlaps in %llu windows; restarted masters sat out %s ms "
                    "(ping; -1: still out at the end; window up to %u ms%s%.60s); waiters and "
                    "no holder for %.0f ms from %.2f s (restart at %.1f s)",
                    persist, (unsigned long long)r->violations, (unsigned long long)r->checked,
                    each, so->window_ms, so->why[0] ? "; " : "", so->why, r->max_gap_ms,
                    r->max_gap_at_s, t_restart);
}

static void restart_scenario(const char *name, enum restart_kind kind, const char *persist)
{
    struct result *r = result_new(name);
    struct sat_out so;
    struct schedule s;
    int idx[3];
    double t_restart = RESTART_AT_S, dur;
    /* 4 contenders: with holds of ttl/3, more would only wait longer */
    struct contend_opts o = {
        .clients = config.clients < 4 ? config.clients : 4,
        .ttl_ms = config.ttl_ms,
        .hold_us = config.ttl_ms * 1000u / 3u,
        .label = name,
        /* reconnect quickly, as a busy client would, so the
         * restarted masters are used inside the hold */
        .reconnect_max_ms = 20,
        .restart_guard_off = kind == RESTART_EMPTY || kind == RESTART_DELAYED,
        /* always trying: a restart must land inside a hold */
        .wait = { .wait_ms = 1000, .retry_delay_ms = 0, .retry_jitter_ms = 1, .pubsub = 1 },
        .during = sched_during,
        .arg = &s
    };

    if (config.n_masters < 3) {
        r->skipped = 1;
        result_note(r, "skipped: needs at least 3 masters");
        return;
    }
    memset(&s, 0, sizeof(s));
    pick_masters(3, idx);
    /* a and b down first; c is one of the three the holders then use */
    sched_add(&s, 0.0, "kill", idx[0]);
    if (config.n_masters >= 5)
        sched_add(&s, 0.0, "kill", idx[1]);
    sched_add(&s, t_restart, "kill", idx[2]);
    if (kind == RESTART_DELAYED) {
        /* c stays down longer than any lock it held could live */
        sched_add(&s, t_restart, "restart", idx[0]);
        if (config.n_masters >= 5)
            sched_add(&s, t_restart, "restart", idx[1]);
        sched_add(&s, t_restart + (double)config.ttl_ms / 1000.0 + 0.1, "restart", idx[2]);
        dur = t_restart + (double)config.ttl_ms / 1000.0 + 1.0;
        snprintf(r->fault, sizeof(r->fault),
                 "SIGKILL :%d,:%d; then SIGKILL :%d, restart :%d,:%d "
                 "at once and :%d after ttl+100ms (no persistence)",
                 config.port[idx[0]], config.port[idx[1]], config.port[idx[2]], config.port[idx[0]],
                 config.port[idx[1]], config.port[idx[2]]);
    } else {
        sched_add(&s, t_restart, "heal", -1);
        dur = t_restart + 1.5;
        /* the guard keeps the restarted masters out for a ttl: leave as
         * long again after it for the contenders to resume */
        if (kind == RESTART_GUARD || kind == RESTART_PERSIST)
            dur = t_restart + 2.0 * (double)config.ttl_ms / 1000.0 + 0.5;
        snprintf(r->fault, sizeof(r->fault),
                 "SIGKILL :%d,:%d; then SIGKILL :%d and restart "
                 "all three at once (%s)",
                 config.port[idx[0]], config.port[idx[1]], config.port[idx[2]],
                 kind == RESTART_AOF ? "appendonly, appendfsync always"
                 : persist           ? persist
                                     : "no persistence");
    }
    if (dur < config.duration_s)
        dur = config.duration_s;
    o.duration_s = dur;
    if (kind == RESTART_PERSIST) {
        memset(&so, 0, sizeof(so));
        so.s = &s;
        so.k = config.n_masters >= 5 ? 3 : 2;
        so.idx[0] = idx[0];
        so.idx[1] = so.k == 3 ? idx[1] : idx[2];
        so.idx[2] = idx[2];
        so.contend_s = dur;
        o.during = sat_out_during;
        o.arg = &so;
    }
    contend_run(&o, r);
    if (s.errors && !r->note[0])
        result_note(r, "error: %d cluster-up.sh commands failed", s.errors);
    if (kind == RESTART_PERSIST) {
        persist_report(r, &so, persist, t_restart);
        return;
    }
    if (!r->note[0] && r->checked)
        result_note(r,
                    "restart guard %s; %llu master restarts seen by the %d contenders; "
                    "longest time without a holder %.0f ms, from %.2f s (faults at 0 and "
                    "%.1f s)",
                    o.restart_guard_off ? "off" : "on", (unsigned long long)r->restarts_seen,
                    o.clients, r->max_gap_ms, r->max_gap_at_s, t_restart);
    json_kv_bool(&r->xj, "safe_by_algorithm", kind != RESTART_EMPTY);
}

void scenario_restart(void)
{
    restart_scenario("restart", RESTART_EMPTY, NULL);
}

void scenario_restart_guard(void)
{
    restart_scenario("restart-guard", RESTART_GUARD, NULL);
}

void scenario_restart_delayed(void)
{
    restart_scenario("restart-delayed", RESTART_DELAYED, NULL);
}

/* A cluster of its own for one scenario, on --aof-base-port.. (the main
 * cluster's mode is left alone): config points at it until own_cluster_end. */
struct own_cluster {
    char masters[1024];
    char host[BENCH_MAX_MASTERS][64];
    int port[BENCH_MAX_MASTERS];
    const char *cluster_dir;
    const char *dir;
};

static int own_cluster_begin(struct own_cluster *oc, const char *dir, const char *persist)
{
    char port[16], n[16], list[1024];
    const char *start[] = { "-n", n, "-p", port, "-d", dir, "--persist", persist, "start", NULL };
    const char *stop[] = { "-d", dir, "stop", NULL };
    int i;

    snprintf(port, sizeof(port), "%d", config.aof_base_port);
    snprintf(n, sizeof(n), "%d", config.n_masters);
    if (cluster_script_run(start, list, sizeof(list)) != 0) {
        cluster_script_run(stop, NULL, 0);
        return -1;
    }
    oc->dir = dir;
    oc->cluster_dir = config.cluster_dir;
    memcpy(oc->masters, config.masters, sizeof(oc->masters));
    memcpy(oc->host, config.host, sizeof(oc->host));
    memcpy(oc->port, config.port, sizeof(oc->port));
    snprintf(config.masters, sizeof(config.masters), "%s", list);
    for (i = 0; i < config.n_masters; i++) {
        snprintf(config.host[i], sizeof(config.host[i]), "127.0.0.1");
        config.port[i] = config.aof_base_port + i;
    }
    config.cluster_dir = dir;
    return 0;
}

static void own_cluster_end(struct own_cluster *oc)
{
    const char *stop[] = { "-d", oc->dir, "stop", NULL };

    cluster_heal();
    cluster_script_run(stop, NULL, 0);
    config.cluster_dir = oc->cluster_dir;
    memcpy(config.masters, oc->masters, sizeof(oc->masters));
    memcpy(config.host, oc->host, sizeof(oc->host));
    memcpy(config.port, oc->port, sizeof(oc->port));
}

/* The same with masters that persist every write: restart-aof runs its own
 * --persist always cluster in DIR-aof and stops it afterwards. */
void scenario_restart_aof(void)
{
    struct own_cluster oc;

    if (own_cluster_begin(&oc, config.aof_dir, "always") != 0) {
        struct result *r = result_new("restart-aof");

        result_note(r, "error: cannot start the --aof cluster on port %d in %s",
                    config.aof_base_port, config.aof_dir);
        return;
    }
    restart_scenario("restart-aof", RESTART_AOF, NULL);
    own_cluster_end(&oc);
}

/* ------------------------------------------------------------------------ */
/* Restart under each persistence mode (issue 18)                           */
/*                                                                          */
/* The restart-guard fault (two masters down, a holder on the other three,  */
/* one of those restarted, all three back at once) on a fresh cluster per   */
/* mode: none; rdb (SAVE on every master before the contention, so the      */
/* restarted one reloads a snapshot that has its marker but none of the     */
/* leases granted since); AOF everysec (SIGKILL loses nothing the kernel    */
/* got, so what is tested is the run_id rule: a restart is reborn,          */
/* whatever the file kept); AOF always (reborn too: nothing a copy carries  */
/* is trusted). One row per mode: overlaps, how long each restarted         */
/* master sat out (redlock_ping: excluded), the longest time the waiting    */
/* contenders had no holder.                                                */
/* ------------------------------------------------------------------------ */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

static void persist_mode(const char *dir, const char *mode)
{
    char name[32], idx[16];
    const char *stop[] = { "-d", dir, "stop", NULL };
    const char *save[] = { "-d", dir, "cli", idx, "SAVE", NULL };
    struct own_cluster oc;
    int i;

    snprintf(name, sizeof(name), "restart-persist-%s", mode);
    /* fresh masters: nothing left from an earlier mode or run to load */
    if (access(dir, F_OK) == 0) {
        cluster_script_run(stop, NULL, 0);
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    if (own_cluster_begin(&oc, dir, mode) != 0) {
        struct result *r = result_new(name);

        result_note(r, "error: cannot start the --persist %s cluster on port %d in %s", mode,
                    config.aof_base_port, dir);
        return;
    }
    if (strcmp(mode, "rdb") == 0) {
        for (i = 0; i < config.n_masters; i++) {
            snprintf(idx, sizeof(idx), "%d", i);
            cluster_script_run(save, NULL, 0);
        }
    }
    restart_scenario(name, RESTART_PERSIST, mode);
    own_cluster_end(&oc);
}

void scenario_restart_persist(void)
{
    static const char *const modes[] = { "none", "rdb", "everysec", "always" };
    char dir[600];
    size_t i;

    snprintf(dir, sizeof(dir), "%s-persist", config.cluster_dir);
    for (i = 0; i < sizeof(modes) / sizeof(modes[0]) && !stop_requested(); i++)
        persist_mode(dir, modes[i]);
}
