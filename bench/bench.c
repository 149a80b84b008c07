/* bench.c - redlock-bench: what the engine does when masters die, measured
 * against the raw SET NX PX floor of the same masters in the same run.
 *
 * This file holds the one config, parseOptions(), the scenario table and
 * main(). Each scenario fills one struct result; report.c prints them all at
 * the end (table, JSON lines, timeline plot), as redis-benchmark does.
 */
#include "bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

struct config config;
struct floor_figures floor_fig;

static struct result *results[BENCH_MAX_RESULTS];
static int n_results;
static volatile sig_atomic_t stop_flag;
static volatile sig_atomic_t n_children;
static volatile pid_t children[256];
static uint64_t rand_state;

/* ------------------------------------------------------------------------ */
/* Small helpers shared by every scenario                                   */
/* ------------------------------------------------------------------------ */

uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t cpu_us(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

void sleep_us(uint64_t us)
{
    struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000 };

    while (nanosleep(&ts, &ts) == -1 && errno == EINTR && !stop_flag)
        ;
}

int stop_requested(void)
{
    return stop_flag != 0;
}

uint64_t bench_rand(void)
{
    /* xorshift64*: reproducible fault targets for a given --seed */
    rand_state ^= rand_state >> 12;
    rand_state ^= rand_state << 25;
    rand_state ^= rand_state >> 27;
    return rand_state * 2685821657736338717ull;
}

struct result *result_new(const char *scenario)
{
    struct result *r;

    if (n_results == BENCH_MAX_RESULTS) {
        fprintf(stderr, "redlock-bench: too many results\n");
        exit(2);
    }
    r = calloc(1, sizeof(*r));
    if (!r) {
        fprintf(stderr, "redlock-bench: out of memory\n");
        exit(2);
    }
    snprintf(r->scenario, sizeof(r->scenario), "%s", scenario);
    hist_init(&r->acq);
    hist_init(&r->rel);
    hist_init(&r->fail);
    hist_init(&r->handoff);
    r->cycles_per_s = -1;
    r->cpu_us_per_cycle = -1;
    r->masters_cpu_us_per_cycle = -1;
    r->masters_cores = -1;
    results[n_results++] = r;
    return r;
}

struct result *result_last(void)
{
    return n_results ? results[n_results - 1] : NULL;
}

void result_err(struct result *r, int code)
{
    int i = -code;

    if (i <= 0 || i >= BENCH_NERR)
        i = BENCH_NERR - 1;
    r->errs[i]++;
}

void result_extra(struct result *r, const char *fmt, ...)
{
    size_t used = strlen(r->extra);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->extra + used, sizeof(r->extra) - used, fmt, ap);
    va_end(ap);
}

void result_note(struct result *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->note, sizeof(r->note), fmt, ap);
    va_end(ap);
}

/* The redlock_config every scenario starts from. Keys carry the run id, so
 * two runs on the same masters never see each other's locks. */
void bench_config_fill(redlock_config *cfg, uint32_t retries)
{
    static char prefix[64];

    snprintf(prefix, sizeof(prefix), "rlbench:%s:", config.run_id);
    redlock_config_init(cfg);
    cfg->masters = config.masters;
    cfg->key_prefix = prefix;
    cfg->node_timeout_ms = config.node_timeout_ms;
    cfg->retry_count = retries;
}

/* All N masters answer PING, over plain hiredis (not the library under
 * test): used after every heal, before the next scenario starts. */
int wait_masters_up(unsigned timeout_ms)
{
    uint64_t deadline = now_us() + (uint64_t)timeout_ms * 1000u;
    struct timeval tv = { 0, 300000 };
    int i, up;

    for (;;) {
        up = 0;
        for (i = 0; i < config.n_masters; i++) {
            redisContext *rc = redisConnectWithTimeout(config.host[i], config.port[i], tv);
            redisReply *rep;

            if (!rc || rc->err) {
                redisFree(rc);
                continue;
            }
            redisSetTimeout(rc, tv);
            rep = redisCommand(rc, "PING");
            if (rep && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "PONG") == 0)
                up++;
            if (rep)
                freeReplyObject(rep);
            redisFree(rc);
        }
        if (up == config.n_masters)
            return 0;
        if (now_us() > deadline || stop_flag)
            return -1;
        sleep_us(50000);
    }
}

/* CPU seconds used so far by all N masters (INFO cpu, user + sys), or -1
 * if one does not answer. Read before and after a scenario, it says how
 * busy the masters were: on a 2-core box they share the cores with us. */
double masters_cpu_s(void)
{
    struct timeval tv = { 0, 300000 };
    double total = 0;
    int i;

    for (i = 0; i < config.n_masters; i++) {
        redisContext *rc = redisConnectWithTimeout(config.host[i], config.port[i], tv);
        redisReply *rep;
        const char *p;
        double v = -1;

        if (!rc || rc->err) {
            redisFree(rc);
            return -1;
        }
        redisSetTimeout(rc, tv);
        rep = redisCommand(rc, "INFO cpu");
        if (rep && rep->type == REDIS_REPLY_STRING) {
            double sys = -1, user = -1;

            if ((p = strstr(rep->str, "used_cpu_sys:")) != NULL)
                sys = strtod(p + 13, NULL);
            if ((p = strstr(rep->str, "used_cpu_user:")) != NULL)
                user = strtod(p + 14, NULL);
            if (sys >= 0 && user >= 0)
                v = sys + user;
        }
        if (rep)
            freeReplyObject(rep);
        redisFree(rc);
        if (v < 0)
            return -1;
        total += v;
    }
    return total;
}

/* Fill @r's masters' CPU figures from a masters_cpu_s() taken at the start
 * (@before) and one taken now, over r->duration_s. */
void masters_cpu_delta(struct result *r, double before, uint64_t cycles)
{
    double after;

    if (before < 0 || r->duration_s <= 0 || (after = masters_cpu_s()) < 0)
        return;
    r->masters_cores = (after - before) / r->duration_s;
    if (cycles)
        r->masters_cpu_us_per_cycle = (after - before) * 1e6 / (double)cycles;
}

void register_child(int pid)
{
    if (n_children < (int)(sizeof(children) / sizeof(children[0])))
        children[n_children++] = pid;
}

void unregister_child(int pid)
{
    int i;

    for (i = 0; i < n_children; i++)
        if (children[i] == pid)
            children[i] = 0;
}

void bench_in_child(void)
{
    n_children = 0;
    signal(SIGALRM, SIG_DFL);
}

static void kill_children(void)
{
    int i;

    for (i = 0; i < n_children; i++)
        if (children[i] > 0)
            kill(children[i], SIGKILL);
}

static void on_stop_signal(int sig)
{
    (void)sig;
    if (stop_flag) {
        /* second ^C: no more patience */
        kill_children();
        _exit(130);
    }
    stop_flag = 1;
}

static void on_watchdog(int sig)
{
    static const char msg[] = "\nredlock-bench: --max-time reached, giving up "
                              "(masters may still be paused or down: heal them)\n";
    (void)sig;
    kill_children();
    if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
        /* nothing left to do */
    }
    _exit(3);
}

/* ------------------------------------------------------------------------ */
/* Options                                                                  */
/* ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
"usage: redlock-bench [options]\n"
"\n"
"Targets (loopback only):\n"
"  --masters LIST        host:port,host:port,... (default 127.0.0.1:7000..7004)\n"
"  -n, --n-masters N     with --base-port, when --masters is not given (default 5)\n"
"  --base-port P         first master's port (default 7000)\n"
"\n"
"Fault injection (scenarios kill*, pause*, restart*, timeline):\n"
"  --cluster-script PATH cluster-up.sh; without it fault scenarios are skipped\n"
"  --cluster-dir DIR     its -d DIR\n"
"  --aof-base-port P     restart-aof starts its own --aof cluster there, in\n"
"                        DIR-aof, and stops it afterwards (default base+10)\n"
"\n"
"What to run:\n"
"  --scenarios LIST      comma list or 'all' (default): floor,uncontended,\n"
"                        throughput,blocking,contention,contention-poll,\n"
"                        kill1,kill2,kill3,\n"
"                        pause2,restart,restart-guard,restart-delayed,\n"
"                        restart-aof,timeline\n"
"                        (floor always runs: every ratio is taken against it)\n"
"  --duration S          seconds per timed scenario (default 2)\n"
"  --clients K           contention: forked client processes (default 8)\n"
"  --threads T           blocking throughput: threads (default 4)\n"
"  --inflight D          async throughput: cycles in flight (default 64)\n"
"  --pipeline P          raw capacity: commands in flight per master (default 64)\n"
"  --ttl MS              lock ttl (default 1000)\n"
"  --node-timeout MS     per-master timeout given to the library (default 50)\n"
"  --hold-us US          contention: hold time before release (default 0)\n"
"  --retries N           contention*: library retry_count (default 1000000)\n"
"  --retry-delay MS      contention*: library retry_delay_ms (default 50)\n"
"  --retry-jitter MS     contention*: library retry_jitter_ms (default 50)\n"
"                        (contention: pub/sub on; contention-poll: off; the\n"
"                        restart* scenarios always retry at once: 2000, 0, 1)\n"
"  --seed N              picks fault targets and key names (default 1)\n"
"  --max-ops N           per scenario, acquires attempted (default 2000000)\n"
"  --fail-backoff-us US  timeline: a load slot waits this long after a failed\n"
"                        acquire before the next one (default 1000)\n"
"  --max-time S          watchdog for the whole run (default 900)\n"
"\n"
"Output:\n"
"  --out DIR             results.jsonl, timeline.tsv and timeline.svg (default out)\n"
"  --json FILE           also write the JSON lines to FILE\n"
"  --no-json             do not print the JSON lines after the table\n"
"  --no-progress         no progress line (it is shown only on a terminal anyway)\n"
"\n"
"Exit: 0 done; 2 setup error; 3 watchdog; 4 violations where the algorithm\n"
"claims safety.\n");
}

static int is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;

    if (strcmp(host, "localhost") == 0)
        return 1;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return 0;
}

/* Split "h:p,[v6]:p,..." into config.host/port, refusing anything that is
 * not loopback: this program sends bursts and kills servers. */
static int parse_masters(const char *list)
{
    char buf[1024], *save = NULL, *tok;
    int n = 0;

    snprintf(buf, sizeof(buf), "%s", list);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon, *host = tok;
        long port;

        if (n == BENCH_MAX_MASTERS) {
            fprintf(stderr, "redlock-bench: at most %d masters\n", BENCH_MAX_MASTERS);
            return -1;
        }
        colon = strrchr(tok, ':');
        if (!colon) {
            fprintf(stderr, "redlock-bench: master '%s': want host:port\n", tok);
            return -1;
        }
        *colon = '\0';
        port = strtol(colon + 1, NULL, 10);
        if (host[0] == '[') {
            host++;
            host[strcspn(host, "]")] = '\0';
        }
        if (port <= 0 || port > 65535 || !is_loopback(host)) {
            fprintf(stderr, "redlock-bench: master '%s:%s': only loopback addresses "
                    "with a valid port are allowed\n", host, colon + 1);
            return -1;
        }
        snprintf(config.host[n], sizeof(config.host[n]), "%s", host);
        config.port[n] = (int)port;
        n++;
    }
    if (n == 0)
        return -1;
    config.n_masters = n;
    return 0;
}

static double parse_num(const char *opt, const char *s, double lo, double hi)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "redlock-bench: %s: '%s' is not a number in [%g, %g]\n", opt, s, lo, hi);
        exit(2);
    }
    return v;
}

enum {
    OPT_MASTERS = 256, OPT_BASE_PORT, OPT_SCRIPT, OPT_DIR, OPT_AOF, OPT_SCEN,
    OPT_DUR, OPT_CLIENTS, OPT_THREADS, OPT_INFLIGHT, OPT_PIPELINE, OPT_TTL,
    OPT_NODE_TO, OPT_HOLD, OPT_RETRIES, OPT_RDELAY, OPT_RJITTER, OPT_SEED,
    OPT_MAXOPS, OPT_MAXTIME, OPT_BACKOFF, OPT_OUT, OPT_JSON, OPT_NOJSON, OPT_NOPROG,
};

static void parseOptions(int argc, char **argv)
{
    static const struct option opts[] = {
        { "masters", required_argument, 0, OPT_MASTERS },
        { "n-masters", required_argument, 0, 'n' },
        { "base-port", required_argument, 0, OPT_BASE_PORT },
        { "cluster-script", required_argument, 0, OPT_SCRIPT },
        { "cluster-dir", required_argument, 0, OPT_DIR },
        { "aof-base-port", required_argument, 0, OPT_AOF },
        { "scenarios", required_argument, 0, OPT_SCEN },
        { "duration", required_argument, 0, OPT_DUR },
        { "clients", required_argument, 0, OPT_CLIENTS },
        { "threads", required_argument, 0, OPT_THREADS },
        { "inflight", required_argument, 0, OPT_INFLIGHT },
        { "pipeline", required_argument, 0, OPT_PIPELINE },
        { "ttl", required_argument, 0, OPT_TTL },
        { "node-timeout", required_argument, 0, OPT_NODE_TO },
        { "hold-us", required_argument, 0, OPT_HOLD },
        { "retries", required_argument, 0, OPT_RETRIES },
        { "retry-delay", required_argument, 0, OPT_RDELAY },
        { "retry-jitter", required_argument, 0, OPT_RJITTER },
        { "seed", required_argument, 0, OPT_SEED },
        { "max-ops", required_argument, 0, OPT_MAXOPS },
        { "fail-backoff-us", required_argument, 0, OPT_BACKOFF },
        { "max-time", required_argument, 0, OPT_MAXTIME },
        { "out", required_argument, 0, OPT_OUT },
        { "json", required_argument, 0, OPT_JSON },
        { "no-json", no_argument, 0, OPT_NOJSON },
        { "no-progress", no_argument, 0, OPT_NOPROG },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    const char *masters = NULL;
    int c, n = 5, i;

    config.base_port = 7000;
    snprintf(config.scenarios, sizeof(config.scenarios), "all");
    config.duration_s = 2.0;
    config.clients = 8;
    config.threads = 4;
    config.inflight = 64;
    config.pipeline = 64;
    config.ttl_ms = 1000;
    config.node_timeout_ms = 50;
    config.hold_us = 0;
    config.retry_count = 1000000;
    config.retry_delay_ms = 50;
    config.retry_jitter_ms = 50;
    config.seed = 1;
    config.max_ops = 2000000;
    config.fail_backoff_us = 1000;
    config.max_time_s = 900;
    config.out_dir = "out";
    config.json_stdout = 1;

    while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_MASTERS: masters = optarg; break;
        case 'n': n = (int)parse_num("-n", optarg, 1, BENCH_MAX_MASTERS); break;
        case OPT_BASE_PORT: config.base_port = (int)parse_num("--base-port", optarg, 1, 65535 - BENCH_MAX_MASTERS); break;
        case OPT_SCRIPT: config.cluster_script = optarg; break;
        case OPT_DIR: config.cluster_dir = optarg; break;
        case OPT_AOF: config.aof_base_port = (int)parse_num("--aof-base-port", optarg, 1024, 65535 - BENCH_MAX_MASTERS); break;
        case OPT_SCEN: snprintf(config.scenarios, sizeof(config.scenarios), "%s", optarg); break;
        case OPT_DUR: config.duration_s = parse_num("--duration", optarg, 0.1, 3600); break;
        case OPT_CLIENTS: config.clients = (int)parse_num("--clients", optarg, 2, 64); break;
        case OPT_THREADS: config.threads = (int)parse_num("--threads", optarg, 1, 256); break;
        case OPT_INFLIGHT: config.inflight = (int)parse_num("--inflight", optarg, 1, 4096); break;
        case OPT_PIPELINE: config.pipeline = (int)parse_num("--pipeline", optarg, 1, 4096); break;
        case OPT_TTL: config.ttl_ms = (uint32_t)parse_num("--ttl", optarg, 10, 600000); break;
        case OPT_NODE_TO: config.node_timeout_ms = (uint32_t)parse_num("--node-timeout", optarg, 1, 60000); break;
        case OPT_HOLD: config.hold_us = (uint32_t)parse_num("--hold-us", optarg, 0, 60000000); break;
        case OPT_RETRIES: config.retry_count = (uint32_t)parse_num("--retries", optarg, 0, 1000000); break;
        case OPT_RDELAY: config.retry_delay_ms = (uint32_t)parse_num("--retry-delay", optarg, 0, 60000); break;
        case OPT_RJITTER: config.retry_jitter_ms = (uint32_t)parse_num("--retry-jitter", optarg, 0, 60000); break;
        case OPT_SEED: config.seed = (uint64_t)parse_num("--seed", optarg, 0, 1e18); break;
        case OPT_BACKOFF: config.fail_backoff_us = (uint32_t)parse_num("--fail-backoff-us", optarg, 0, 10000000); break;
        case OPT_MAXOPS: config.max_ops = (uint64_t)parse_num("--max-ops", optarg, 1, 1e12); break;
        case OPT_MAXTIME: config.max_time_s = parse_num("--max-time", optarg, 1, 86400); break;
        case OPT_OUT: config.out_dir = optarg; break;
        case OPT_JSON: config.json_path = optarg; break;
        case OPT_NOJSON: config.json_stdout = 0; break;
        case OPT_NOPROG: config.no_progress = 1; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "redlock-bench: unexpected argument '%s'\n", argv[optind]);
        exit(2);
    }
    if (masters) {
        snprintf(config.masters, sizeof(config.masters), "%s", masters);
    } else {
        size_t used = 0;

        for (i = 0; i < n; i++)
            used += (size_t)snprintf(config.masters + used, sizeof(config.masters) - used,
                                     "%s127.0.0.1:%d", i ? "," : "", config.base_port + i);
    }
    if (parse_masters(config.masters) < 0)
        exit(2);
    if (config.cluster_script && !config.cluster_dir) {
        fprintf(stderr, "redlock-bench: --cluster-script needs --cluster-dir\n");
        exit(2);
    }
    if (config.cluster_script) {
        /* fault injection addresses masters by cluster-up.sh index */
        for (i = 1; i < config.n_masters; i++) {
            if (config.port[i] != config.port[0] + i) {
                fprintf(stderr, "redlock-bench: with --cluster-script, --masters must be "
                        "cluster-up.sh's list (consecutive ports from master 0)\n");
                exit(2);
            }
        }
    }
    if (!config.aof_base_port)
        config.aof_base_port = config.port[0] + 10;
    if (config.cluster_dir)
        snprintf(config.aof_dir, sizeof(config.aof_dir), "%s-aof", config.cluster_dir);
    config.tty = isatty(STDOUT_FILENO) && !config.no_progress;
    rand_state = config.seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    snprintf(config.run_id, sizeof(config.run_id), "%ld-%llu", (long)getpid(),
             (unsigned long long)config.seed);
}

/* ------------------------------------------------------------------------ */
/* Scenario table                                                           */
/* ------------------------------------------------------------------------ */

struct scenario {
    const char *name;
    void (*run)(void);
    int faults;                       /* needs --cluster-script */
};

static const struct scenario scenarios[] = {
    { "floor", scenario_floor, 0 },
    { "uncontended", scenario_uncontended, 0 },
    { "throughput", scenario_throughput, 0 },
    { "blocking", scenario_blocking, 0 },
    { "contention", scenario_contention, 0 },
    { "contention-poll", scenario_contention_poll, 0 },
    { "kill1", scenario_kill1, 1 },
    { "kill2", scenario_kill2, 1 },
    { "kill3", scenario_kill3, 1 },
    { "pause2", scenario_pause2, 1 },
    { "restart", scenario_restart, 1 },
    { "restart-guard", scenario_restart_guard, 1 },
    { "restart-delayed", scenario_restart_delayed, 1 },
    { "restart-aof", scenario_restart_aof, 1 },
    { "timeline", scenario_timeline, 1 },
};
#define N_SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static int scenario_selected(const char *name)
{
    char buf[512], *save = NULL, *tok;

    if (strcmp(name, "floor") == 0 || strcmp(config.scenarios, "all") == 0)
        return 1;
    snprintf(buf, sizeof(buf), "%s", config.scenarios);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (strcmp(tok, name) == 0)
            return 1;
    return 0;
}

static void check_scenario_names(void)
{
    char buf[512], *save = NULL, *tok;
    size_t i;

    if (strcmp(config.scenarios, "all") == 0)
        return;
    snprintf(buf, sizeof(buf), "%s", config.scenarios);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        for (i = 0; i < N_SCENARIOS; i++)
            if (strcmp(tok, scenarios[i].name) == 0)
                break;
        if (i == N_SCENARIOS) {
            fprintf(stderr, "redlock-bench: unknown scenario '%s' (see --help)\n", tok);
            exit(2);
        }
    }
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    size_t i;
    int rc = 0, k;

    parseOptions(argc, argv);
    check_scenario_names();

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_watchdog;
    sigaction(SIGALRM, &sa, NULL);
    /* A killed master makes writes on its socket fail; that is data, not a
     * reason to die. */
    signal(SIGPIPE, SIG_IGN);
    alarm((unsigned)config.max_time_s);

    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("redlock-bench: libredlock %s, %d masters (%s), ttl %u ms, node timeout %u ms, "
           "%.1f s per scenario, seed %llu\n",
           redlock_version(), config.n_masters, config.masters, config.ttl_ms,
           config.node_timeout_ms, config.duration_s, (unsigned long long)config.seed);
    if (wait_masters_up(5000) < 0) {
        fprintf(stderr, "redlock-bench: not every master answers PING at %s "
                "(start them: cluster-up.sh start)\n", config.masters);
        return 2;
    }
    if (!config.cluster_script)
        printf("redlock-bench: no --cluster-script: fault scenarios are skipped\n");

    for (i = 0; i < N_SCENARIOS; i++)
        config.n_steps += scenario_selected(scenarios[i].name);
    for (i = 0; i < N_SCENARIOS && !stop_requested(); i++) {
        if (!scenario_selected(scenarios[i].name))
            continue;
        config.step++;
        if (scenarios[i].faults && !cluster_available()) {
            struct result *r = result_new(scenarios[i].name);

            r->skipped = 1;
            result_note(r, "skipped: needs --cluster-script and --cluster-dir");
            continue;
        }
        scenarios[i].run();
        /* Whatever a scenario did, the next one starts from a whole cluster. */
        if (scenarios[i].faults && cluster_heal() < 0) {
            fprintf(stderr, "redlock-bench: cannot heal the cluster after %s; stopping\n",
                    scenarios[i].name);
            rc = 2;
            break;
        }
    }
    progress_clear();
    if (stop_requested())
        printf("redlock-bench: interrupted; partial report\n");
    report_all(results, n_results);

    for (k = 0; k < n_results; k++) {
        const struct result *r = results[k];
        /* restart (no persistence, immediate, restart guard off) is the
         * one case where the algorithm does not claim safety; with the
         * guard on (restart-guard) it does */
        if (r->violations && strcmp(r->scenario, "restart") != 0 && rc == 0)
            rc = 4;
    }
    for (k = 0; k < n_results; k++)
        free(results[k]);
    return rc;
}
