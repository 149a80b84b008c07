/* faults.c - the reason redlock-bench exists: break masters on purpose and
 * measure what the engine does.
 *
 * Masters are broken through cluster-up.sh (kill = SIGKILL, pause = SIGSTOP,
 * restart/heal), run as a child process with a bounded wait, never through
 * a shell. Master i of --masters is cluster-up.sh's index i. Every fault
 * scenario ends with a heal, done by main() even if the scenario failed.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int cluster_available(void)
{
    return config.cluster_script && config.cluster_dir && access(config.cluster_script, X_OK) == 0;
}

/* Run cluster-up.sh with @args (NULL-terminated, after the script path).
 * Its stdout goes to @out (may be NULL), stderr to our stderr. Bounded:
 * killed after 30 s. Returns its exit status, or -1. */
static int run_script(const char *const *args, char *out, size_t outlen)
{
    const char *argv[16];
    char tmpl[] = "/tmp/rlbench-XXXXXX";
    posix_spawn_file_actions_t fa;
    uint64_t deadline;
    pid_t pid;
    int i, fd, status = -1, rc;

    argv[0] = config.cluster_script;
    for (i = 0; args[i] && i < 14; i++)
        argv[i + 1] = args[i];
    argv[i + 1] = NULL;

    fd = mkstemp(tmpl);
    if (fd < 0)
        return -1;
    unlink(tmpl);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    rc = posix_spawn(&pid, config.cluster_script, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fprintf(stderr, "redlock-bench: cannot run %s: %s\n", config.cluster_script, strerror(rc));
        close(fd);
        return -1;
    }
    register_child(pid);
    deadline = now_us() + 30000000u;
    for (;;) {
        pid_t p = waitpid(pid, &status, WNOHANG);

        if (p == pid)
            break;
        if (p < 0 && errno != EINTR) {
            status = -1;
            break;
        }
        if (now_us() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fprintf(stderr, "redlock-bench: %s %s took over 30 s; killed\n",
                    config.cluster_script, args[0]);
            status = -1;
            break;
        }
        sleep_us(2000);
    }
    unregister_child(pid);
    if (out && outlen) {
        ssize_t n = pread(fd, out, outlen - 1, 0);

        out[n > 0 ? n : 0] = '\0';
        out[strcspn(out, "\n")] = '\0';
    }
    close(fd);
    if (status == -1)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int cluster_run(const char *action, int index)
{
    char idx[16];
    const char *args[] = { "-d", config.cluster_dir, action, NULL, NULL };

    if (index >= 0) {
        snprintf(idx, sizeof(idx), "%d", index);
        args[3] = idx;
    }
    return run_script(args, NULL, 0);
}

int cluster_heal(void)
{
    if (cluster_run("heal", -1) != 0)
        return -1;
    return wait_masters_up(10000);
}

/* k distinct master indices, chosen by --seed. */
static void pick_masters(int k, int *out)
{
    int perm[BENCH_MAX_MASTERS], i, j, t;

    for (i = 0; i < config.n_masters; i++)
        perm[i] = i;
    for (i = config.n_masters - 1; i > 0; i--) {
        j = (int)(bench_rand() % (uint64_t)(i + 1));
        t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (i = 0; i < k; i++)
        out[i] = perm[i];
}

static void describe(char *buf, size_t len, const char *what, const int *idx, int k)
{
    size_t used = (size_t)snprintf(buf, len, "%s master%s", what, k > 1 ? "s" : "");
    int i;

    for (i = 0; i < k && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%d (:%d)", i ? "," : " ", idx[i],
                                 config.port[idx[i]]);
}

/* ------------------------------------------------------------------------ */
/* kill N / pause N: sequential acquire+release on distinct keys while N     */
/* masters are broken                                                       */
/* ------------------------------------------------------------------------ */

struct fault_arg {
    const char *action;               /* "kill" or "pause" */
    int idx[BENCH_MAX_MASTERS];
    int k;
    int errors;
};

static void inject(void *arg)
{
    struct fault_arg *fa = arg;
    int i;

    for (i = 0; i < fa->k; i++)
        if (cluster_run(fa->action, fa->idx[i]) != 0)
            fa->errors++;
}

static void fault_scenario(const char *name, const char *action, int k, double duration_s)
{
    struct result *r = result_new(name);
    struct fault_arg fa = { .action = action, .k = k };
    struct load_opts o = { .inflight = 1, .duration_s = duration_s, .max_ops = config.max_ops,
                           .retries = 0, .label = name, .before = inject, .before_arg = &fa };

    if (k >= config.n_masters) {
        r->skipped = 1;
        result_note(r, "skipped: needs more than %d masters", k);
        return;
    }
    pick_masters(k, fa.idx);
    describe(r->fault, sizeof(r->fault), strcmp(action, "kill") == 0 ? "SIGKILL" : "SIGSTOP",
             fa.idx, k);
    load_async(&o, r);
    if (fa.errors && !r->note[0])
        result_note(r, "error: cluster-up.sh %s failed %d times", action, fa.errors);
    result_extra(r, ",\"inflight\":1,\"retries\":0");
}

void scenario_kill1(void)
{
    fault_scenario("kill1", "kill", 1, config.duration_s);
}

void scenario_kill2(void)
{
    fault_scenario("kill2", "kill", 2, config.duration_s);
}

void scenario_kill3(void)
{
    struct result *r, probe;
    redlock_config def;
    struct load_opts o = { .inflight = 1, .duration_s = 5.0, .max_ops = 3, .label = "kill3-probe",
                           .settle_ms = 300 };

    /* every acquire fails here, quickly: a second is plenty */
    fault_scenario("kill3", "kill", config.n_masters / 2 + 1,
                   config.duration_s < 1.0 ? config.duration_s : 1.0);
    /* The figure above is one attempt (retry_count 0). An application with
     * the library's default retries waits for them too: measure a few. */
    redlock_config_init(&def);
    o.retries = def.retry_count;
    memset(&probe, 0, sizeof(probe));
    hist_init(&probe.acq);
    hist_init(&probe.rel);
    hist_init(&probe.fail);
    r = result_last();
    if (!r || r->skipped || load_async(&o, &probe) != 0 || probe.fail.count == 0)
        return;
    result_extra(r, ",\"time_to_fail_default_retries_us\":{\"retry_count\":%u,"
                 "\"retry_delay_ms\":%u,\"retry_jitter_ms\":%u,\"n\":%llu,\"p50\":%llu,\"max\":%llu}",
                 def.retry_count, def.retry_delay_ms, def.retry_jitter_ms,
                 (unsigned long long)probe.fail.count, (unsigned long long)hist_pct(&probe.fail, 0.5),
                 (unsigned long long)probe.fail.max);
    result_note(r, "with the default %u retries (delay %u ms + jitter %u ms) an acquire fails after "
                "%.0f ms (p50 of %llu)", def.retry_count, def.retry_delay_ms, def.retry_jitter_ms,
                (double)hist_pct(&probe.fail, 0.5) / 1000.0, (unsigned long long)probe.fail.count);
}

void scenario_pause2(void)
{
    fault_scenario("pause2", "pause", 2, config.duration_s);
}

/* ------------------------------------------------------------------------ */
/* Fault schedules, run from a thread (timeline) or from the contention     */
/* parent while the children fight                                         */
/* ------------------------------------------------------------------------ */

struct fault_step {
    double at_s;                      /* since the schedule's t0 */
    const char *action;               /* cluster-up.sh command */
    int idx;                          /* master index, -1 for heal */
};

struct schedule {
    struct fault_step steps[24];
    int n;
    uint64_t t0;
    struct timeline *tl;              /* optional: events are marked there */
    int errors;
    char log[192];                    /* what was done, for the result's fault */
};

static void sched_add(struct schedule *s, double at, const char *action, int idx)
{
    if (s->n < (int)(sizeof(s->steps) / sizeof(s->steps[0]))) {
        s->steps[s->n].at_s = at;
        s->steps[s->n].action = action;
        s->steps[s->n].idx = idx;
        s->n++;
    }
}

static void sched_run(struct schedule *s)
{
    int i;

    for (i = 0; i < s->n && !stop_requested(); i++) {
        const struct fault_step *st = &s->steps[i];
        uint64_t at = s->t0 + (uint64_t)(st->at_s * 1e6), now = now_us();

        if (now < at)
            sleep_us(at - now);
        /* events are marked when the command starts: signals land at once,
         * and restarted masters listen well before cluster-up.sh has
         * finished checking them */
        now = now_us();
        if (s->tl && strcmp(st->action, "heal") == 0)
            s->tl->heal_us = now;
        if (cluster_run(st->action, st->idx) != 0)
            s->errors++;
        if (s->tl && s->tl->n_events < TL_MAX_EVENTS) {
            int e = s->tl->n_events;

            s->tl->ev_t[e] = (double)(now - s->tl->t0) / 1e6;
            if (st->idx >= 0)
                snprintf(s->tl->ev_label[e], sizeof(s->tl->ev_label[e]), "%s :%d", st->action,
                         config.port[st->idx]);
            else
                snprintf(s->tl->ev_label[e], sizeof(s->tl->ev_label[e]), "%s", st->action);
            s->tl->n_events = e + 1;
        }
    }
}

static void sched_during(void *arg, uint64_t t0)
{
    struct schedule *s = arg;

    s->t0 = t0;
    sched_run(s);
}

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
/* guard, on by default: the contenders saw every master before, so a new   */
/* run_id keeps it out of quorums for the longest ttl they used),           */
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
    double t_restart = 0.8, dur;
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
                              .retry_count = BENCH_BUSY_RETRY_COUNT,
                              .retry_delay_ms = BENCH_BUSY_RETRY_DELAY_MS,
                              .retry_jitter_ms = BENCH_BUSY_RETRY_JITTER_MS,
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
    rc = run_script(start, list, sizeof(list));
    if (rc != 0) {
        struct result *r = result_new("restart-aof");

        result_note(r, "error: cannot start the --aof cluster on port %d in %s",
                 config.aof_base_port, config.aof_dir);
        run_script(stop, NULL, 0);
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

    run_script(stop, NULL, 0);
    config.cluster_dir = saved_dir;
    memcpy(config.masters, saved_masters, sizeof(saved_masters));
    memcpy(config.host, saved_host, sizeof(saved_host));
    memcpy(config.port, saved_port, sizeof(saved_port));
}

/* ------------------------------------------------------------------------ */
/* Timeline: steady load while masters die and come back on a schedule      */
/* ------------------------------------------------------------------------ */

void timeline_record(struct timeline *tl, uint64_t t_us, uint64_t lat_us, int ok)
{
    int b;

    if (t_us < tl->t0)
        return;
    b = (int)((t_us - tl->t0) / TL_BUCKET_US);
    if (b >= tl->n_buckets)
        return;
    if (ok) {
        if (tl->heal_us && t_us > tl->heal_us && !tl->recovered_us)
            tl->recovered_us = t_us;
        tl->ok[b]++;
        hist_add(&tl->acq[b], lat_us);
    } else {
        tl->failed[b]++;
    }
}

struct tl_arg {
    struct schedule *s;
    struct timeline *tl;
    pthread_t th;
    int started;
};

static void *tl_thread(void *arg)
{
    sched_run(arg);
    return NULL;
}

/* Called by load_async() once the client is warm: the clock starts now. */
static void tl_start(void *arg)
{
    struct tl_arg *a = arg;

    a->tl->t0 = now_us();
    a->s->t0 = a->tl->t0;
    a->started = pthread_create(&a->th, NULL, tl_thread, a->s) == 0;
}

void scenario_timeline(void)
{
    struct result *r = result_new("timeline");
    struct timeline *tl = calloc(1, sizeof(*tl));
    struct schedule s;
    struct tl_arg a;
    double T = config.duration_s * 6.0;
    int idx[BENCH_MAX_MASTERS] = {0}, q = config.n_masters / 2 + 1, i;
    struct load_opts o = { .inflight = 4, .max_ops = config.max_ops, .retries = 0,
                           .fail_backoff_us = config.fail_backoff_us, .label = "timeline", .before = tl_start, .before_arg = &a };

    if (T < 10.0)
        T = 10.0;
    if (T > TL_MAX_BUCKETS * (TL_BUCKET_US / 1e6))
        T = TL_MAX_BUCKETS * (TL_BUCKET_US / 1e6);
    if (!tl || !(tl->acq = calloc(TL_MAX_BUCKETS, sizeof(*tl->acq)))) {
        result_note(r, "error: out of memory");
        free(tl);
        return;
    }
    tl->n_buckets = (int)(T * 10.0);
    for (i = 0; i < tl->n_buckets; i++)
        hist_init(&tl->acq[i]);
    memset(&s, 0, sizeof(s));
    memset(&a, 0, sizeof(a));
    s.tl = tl;
    a.s = &s;
    a.tl = tl;
    pick_masters(config.n_masters, idx);

    /* minority down, minority paused, then a majority down, then all back */
    sched_add(&s, T * 1 / 12, "kill", idx[0]);
    if (config.n_masters >= 5)
        sched_add(&s, T * 2 / 12, "kill", idx[1]);
    sched_add(&s, T * 3 / 12, "restart", idx[0]);
    if (config.n_masters >= 5)
        sched_add(&s, T * 4 / 12, "restart", idx[1]);
    sched_add(&s, T * 5 / 12, "pause", idx[2]);
    if (config.n_masters >= 5)
        sched_add(&s, T * 6 / 12, "pause", idx[3]);
    sched_add(&s, T * 7 / 12, "resume", idx[2]);
    if (config.n_masters >= 5)
        sched_add(&s, T * 7 / 12, "resume", idx[3]);
    for (i = 0; i < q; i++)
        sched_add(&s, T * 8 / 12, "kill", idx[i]);
    sched_add(&s, T * 9.5 / 12, "heal", -1);
    snprintf(r->fault, sizeof(r->fault), "schedule over %.0f s: kill 2, restart, pause 2, "
             "resume, kill %d (no quorum), heal", T, q);

    o.duration_s = T;
    o.tl = tl;
    load_async(&o, r);
    if (a.started)
        pthread_join(a.th, NULL);
    if (s.errors && !r->note[0])
        result_note(r, "error: %d cluster-up.sh commands failed", s.errors);
    result_extra(r, ",\"inflight\":4,\"bucket_ms\":%u,\"fail_backoff_us\":%u",
                 TL_BUCKET_US / 1000u, config.fail_backoff_us);
    if (tl->heal_us && tl->recovered_us) {
        result_extra(r, ",\"recovery_after_heal_ms\":%.1f",
                     (double)(tl->recovered_us - tl->heal_us) / 1000.0);
        result_note(r, "first acquire after the final heal succeeded %.0f ms after cluster-up.sh "
                    "heal started", (double)(tl->recovered_us - tl->heal_us) / 1000.0);
    } else if (tl->heal_us) {
        result_extra(r, ",\"recovery_after_heal_ms\":null");
        result_note(r, "no acquire succeeded after the final heal (%.1f s left in the run)",
                    (double)(tl->t0 + (uint64_t)(T * 1e6) - tl->heal_us) / 1e6);
    }
    report_timeline(tl);
    free(tl->acq);
    free(tl);
}
