/* cluster.c - breaking masters on purpose: cluster-up.sh (kill = SIGKILL,
 * pause = SIGSTOP, restart/heal), run as a child process with a bounded
 * wait, never through a shell, and schedules of such steps run from a
 * thread while a load or a contention runs. Master i of --masters is
 * cluster-up.sh's index i.
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
int cluster_script_run(const char *const *args, char *out, size_t outlen)
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
            fprintf(stderr, "redlock-bench: %s %s took over 30 s; killed\n", config.cluster_script,
                    args[0]);
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
    return cluster_script_run(args, NULL, 0);
}

/* Between scenarios: every master up and voting again. */
int cluster_heal(void)
{
    if (cluster_run("heal", -1) != 0 || wait_masters_up(10000) != 0)
        return -1;
    return wait_masters_vote();
}

/* k distinct master indices, chosen by --seed. */
void pick_masters(int k, int *out)
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

void describe_masters(char *buf, size_t len, const char *what, const int *idx, int k)
{
    size_t used = (size_t)snprintf(buf, len, "%s master%s", what, k > 1 ? "s" : "");
    int i;

    for (i = 0; i < k && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%d (:%d)", i ? "," : " ", idx[i],
                                 config.port[idx[i]]);
}

/* ------------------------------------------------------------------------ */
/* Fault schedules, run from a thread (timeline) or from the contention     */
/* parent while the children fight                                         */
/* ------------------------------------------------------------------------ */

void sched_add(struct schedule *s, double at, const char *action, int idx)
{
    if (s->n < (int)(sizeof(s->steps) / sizeof(s->steps[0]))) {
        s->steps[s->n].at_s = at;
        s->steps[s->n].action = action;
        s->steps[s->n].idx = idx;
        s->steps[s->n].declare = 0;
        s->n++;
    }
}

/* A heal after which the healed masters are declared empty (see
 * sched_heal_declared). */
void sched_add_declared_heal(struct schedule *s, double at)
{
    int n = s->n;

    sched_add(s, at, "heal", -1);
    if (s->n > n)
        s->steps[n].declare = 1;
}

/* While a heal runs: the moment a quorum of masters answers PING again.
 * Masters that answer at the first look were never down (or were only
 * paused) and are not asked again; the others are asked every millisecond
 * (a refused connect on loopback costs microseconds). */
static void *quorum_probe(void *arg)
{
    struct timeline *tl = arg;
    uint64_t deadline = now_us() + 15000000u;
    int up[BENCH_MAX_MASTERS] = { 0 }, n_up = 0, q = config.n_masters / 2 + 1, i;

    while (n_up < q && now_us() < deadline && !stop_requested()) {
        for (i = 0; i < config.n_masters && n_up < q; i++)
            if (!up[i] && master_answers(i, 20000))
                up[i] = 1, n_up++;
        if (n_up < q)
            sleep_us(1000);
    }
    if (n_up >= q) {
        tl->quorum_us = now_us();
        timeline_event(tl, tl->quorum_us, "quorum back");
    }
    return NULL;
}

/* Hold the timeline's load off and wait until none of its acquires is in
 * flight (they fail fast while a majority is down), at most 5 s. */
static void gate_close(struct timeline *tl)
{
    uint64_t deadline = now_us() + 5000000u;

    __atomic_store_n(&tl->gated, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&tl->in_flight, __ATOMIC_SEQ_CST) > 0 && now_us() < deadline)
        sleep_us(200);
}

/* After the heal: declare the healed masters empty, as an operator who puts
 * masters back into service would, then let the load go. The masters the
 * timeline heals were killed more than a ttl before (timeline_schedule), so
 * they cannot have forgotten a live lock; without the declare the restart
 * guard would keep them out for the longest ttl in use, by design (the
 * restart-guard row shows that wait). The load is held off from the heal
 * to the declare because its first acquire to reach a master without a
 * marker would start that guard window, which a declare never shortens. */
static void heal_declared(struct timeline *tl)
{
    if (bench_declare_empty(&tl->declared, tl->declare_err, sizeof(tl->declare_err)) == 0) {
        tl->declared_us = now_us();
        timeline_event(tl, tl->declared_us, "declared empty");
    }
    __atomic_store_n(&tl->gated, 0, __ATOMIC_SEQ_CST);
}

static void sched_step(struct schedule *s, const struct fault_step *st)
{
    uint64_t now;
    pthread_t probe;
    int probing = 0, declare = st->declare && s->tl;
    char label[48];

    if (declare)
        gate_close(s->tl);
    now = now_us();
    /* events are marked when the command starts: signals land at once,
     * and restarted masters listen well before cluster-up.sh has
     * finished checking them */
    if (s->tl && strcmp(st->action, "heal") == 0) {
        s->tl->heal_us = now;
        probing = pthread_create(&probe, NULL, quorum_probe, s->tl) == 0;
    }
    if (st->idx >= 0)
        snprintf(label, sizeof(label), "%s :%d", st->action, config.port[st->idx]);
    else
        snprintf(label, sizeof(label), "%s", st->action);
    if (s->tl)
        timeline_event(s->tl, now, label);
    if (cluster_run(st->action, st->idx) != 0)
        s->errors++;
    if (probing)
        pthread_join(probe, NULL);
    if (declare)
        heal_declared(s->tl);
}

void sched_run(struct schedule *s)
{
    int i;

    for (i = 0; i < s->n && !stop_requested(); i++) {
        uint64_t at = s->t0 + (uint64_t)(s->steps[i].at_s * 1e6), now = now_us();

        if (now < at)
            sleep_us(at - now);
        sched_step(s, &s->steps[i]);
    }
}

void sched_during(void *arg, uint64_t t0)
{
    struct schedule *s = arg;

    s->t0 = t0;
    sched_run(s);
}
