/* restart.c - masters restarted without persistence mid-contention: the
 * textbook way to hand one lock to two holders, and the remedies.
 */
#include "bench.h"

#include <string.h>

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
/* is what is measured) and restart-aof (appendfsync always; the guard is   */
/* on but leaves such masters alone).                                       */
/* ------------------------------------------------------------------------ */

enum restart_kind { RESTART_EMPTY, RESTART_GUARD, RESTART_DELAYED, RESTART_AOF };

static void restart_scenario(const char *name, enum restart_kind kind)
{
    struct result *r = result_new(name);
    struct schedule s;
    int idx[3];
    double t_restart = RESTART_AT_S, dur;
    /* 4 contenders: with holds of ttl/3, more would only wait longer */
    struct contend_opts o = { .clients = config.clients < 4 ? config.clients : 4,
                              .ttl_ms = config.ttl_ms,
                              .hold_us = config.ttl_ms * 1000u / 3u, .label = name,
                              /* reconnect quickly, as a busy client would, so the
                               * restarted masters are used inside the hold */
                              .reconnect_max_ms = 20,
                              .restart_guard_off = kind == RESTART_EMPTY ||
                                                   kind == RESTART_DELAYED,
                              /* always trying: a restart must land inside a hold */
                              .wait = { .wait_ms = 1000, .retry_delay_ms = 0,
                                        .retry_jitter_ms = 1, .pubsub = 1 },
                              .during = sched_during, .arg = &s };

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
        snprintf(r->fault, sizeof(r->fault), "SIGKILL :%d,:%d; then SIGKILL :%d, restart :%d,:%d "
                 "at once and :%d after ttl+100ms (no persistence)", config.port[idx[0]],
                 config.port[idx[1]], config.port[idx[2]], config.port[idx[0]],
                 config.port[idx[1]], config.port[idx[2]]);
    } else {
        sched_add(&s, t_restart, "heal", -1);
        dur = t_restart + 1.5;
        /* the guard keeps the restarted masters out for a ttl: leave as
         * long again after it for the contenders to resume */
        if (kind == RESTART_GUARD)
            dur = t_restart + 2.0 * (double)config.ttl_ms / 1000.0 + 0.5;
        snprintf(r->fault, sizeof(r->fault), "SIGKILL :%d,:%d; then SIGKILL :%d and restart "
                 "all three at once (%s)", config.port[idx[0]], config.port[idx[1]],
                 config.port[idx[2]],
                 kind == RESTART_AOF ? "appendonly, appendfsync always" : "no persistence");
    }
    if (dur < config.duration_s)
        dur = config.duration_s;
    o.duration_s = dur;
    contend_run(&o, r);
    if (s.errors && !r->note[0])
        result_note(r, "error: %d cluster-up.sh commands failed", s.errors);
    if (!r->note[0] && r->checked)
        result_note(r, "restart guard %s; %llu master restarts seen by the %d contenders; "
                    "longest time without a holder %.0f ms, from %.2f s (faults at 0 and "
                    "%.1f s)", o.restart_guard_off ? "off" : "on",
                    (unsigned long long)r->restarts_seen, o.clients, r->max_gap_ms,
                    r->max_gap_at_s, t_restart);
    result_extra(r, ",\"safe_by_algorithm\":%s", kind == RESTART_EMPTY ? "false" : "true");
}

void scenario_restart(void)
{
    restart_scenario("restart", RESTART_EMPTY);
}

void scenario_restart_guard(void)
{
    restart_scenario("restart-guard", RESTART_GUARD);
}

void scenario_restart_delayed(void)
{
    restart_scenario("restart-delayed", RESTART_DELAYED);
}

/* The same with masters that persist every write: restart-aof runs its own
 * --aof cluster (ports --aof-base-port.., dir DIR-aof) for the scenario and
 * stops it afterwards, so the main cluster's mode is left alone. */
void scenario_restart_aof(void)
{
    char port[16], n[16], list[1024], saved_masters[1024], saved_host[BENCH_MAX_MASTERS][64];
    const char *saved_dir = config.cluster_dir;
    int saved_port[BENCH_MAX_MASTERS], i, rc;
    const char *start[] = { "-n", n, "-p", port, "-d", config.aof_dir, "--aof", "start", NULL };
    const char *stop[] = { "-d", config.aof_dir, "stop", NULL };

    snprintf(port, sizeof(port), "%d", config.aof_base_port);
    snprintf(n, sizeof(n), "%d", config.n_masters);
    rc = cluster_script_run(start, list, sizeof(list));
    if (rc != 0) {
        struct result *r = result_new("restart-aof");

        result_note(r, "error: cannot start the --aof cluster on port %d in %s",
                 config.aof_base_port, config.aof_dir);
        cluster_script_run(stop, NULL, 0);
        return;
    }
    memcpy(saved_masters, config.masters, sizeof(saved_masters));
    memcpy(saved_host, config.host, sizeof(saved_host));
    memcpy(saved_port, config.port, sizeof(saved_port));
    snprintf(config.masters, sizeof(config.masters), "%s", list);
    for (i = 0; i < config.n_masters; i++) {
        snprintf(config.host[i], sizeof(config.host[i]), "127.0.0.1");
        config.port[i] = config.aof_base_port + i;
    }
    config.cluster_dir = config.aof_dir;

    restart_scenario("restart-aof", RESTART_AOF);
    cluster_heal();

    cluster_script_run(stop, NULL, 0);
    config.cluster_dir = saved_dir;
    memcpy(config.masters, saved_masters, sizeof(saved_masters));
    memcpy(config.host, saved_host, sizeof(saved_host));
    memcpy(config.port, saved_port, sizeof(saved_port));
}
