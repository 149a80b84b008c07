/* options.c - redlock-bench's command line: usage, parse_options() (one
 * struct config, as redis-benchmark does) and the checks on what was given.
 */
#include "bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where cluster-up.sh is installed (bench/meson.build), for the help. */
#ifndef BENCH_CLUSTER_UP
#define BENCH_CLUSTER_UP "cluster-up.sh"
#endif

static const char *scenario_list = "";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: redlock-bench [options]\n"
            "\n"
            "Durations are bare numbers in the unit the value's name gives: S seconds\n"
            "(--duration, --max-time), MS milliseconds (--ttl, --node-timeout,\n"
            "--retry-delay, --retry-jitter, --wait-ms), US microseconds (--hold-us,\n"
            "--fail-backoff-us); no unit suffixes. (redlock-cli differs: there a bare\n"
            "number is seconds, and 250ms says ms.)\n"
            "\n"
            "Targets (loopback only; one of --masters and --base-port is required):\n"
            "  --masters LIST        host:port,host:port,...\n"
            "  --base-port P         or: N masters on 127.0.0.1:P, P+1, ...\n"
            "  -n, --n-masters N     with --base-port (default 5)\n"
            "Masters to measure, started by cluster-up.sh (five on 127.0.0.1:7000..7004,\n"
            "-p P for others; it prints their list):\n"
            "  %s start\n"
            "\n"
            "Fault injection (scenarios kill*, pause*, restart*, timeline):\n"
            "  --cluster-script PATH cluster-up.sh (above); without it, no fault scenarios\n"
            "  --cluster-dir DIR     its -d DIR\n"
            "  --aof-base-port P     restart-aof starts its own --aof cluster there, in\n"
            "                        DIR-aof, and stops it afterwards (default base+10);\n"
            "                        restart-persist one per persistence mode, in turn,\n"
            "                        in DIR-persist (wiped first)\n"
            "\n"
            "What to run:\n"
            "  --scenarios LIST      comma list or 'all' (default):%s\n"
            "                        (floor always runs: every ratio is taken against it)\n"
            "  --duration S          seconds per timed scenario (default 2)\n"
            "  --threads T           blocking throughput: threads (default 4)\n"
            "  --inflight D          async throughput and raw's loaded pass: cycles in\n"
            "                        flight (default 64)\n"
            "  --pipeline P          raw capacity: commands in flight per master (default 64)\n"
            "  --ttl MS              lock ttl (default 1000)\n"
            "  --node-timeout MS     per-master timeout given to the library (default 50)\n"
            "  --local-run-max B     the library's local hand-off bound (default: the\n"
            "                        library's, 4; 0 turns the local hand-off off)\n"
            "  --syscall-cycles N    uncontended*: cycles counted for syscalls (default 3000)\n"
            "\n"
            "Contention (contention*: one key; each row with pub/sub waiting, and polling):\n"
            "  --clients K           processes contending, and waiters in contention-inproc\n"
            "                        (default 8; contention-mixed: always 4 processes of\n"
            "                        4 waiters)\n"
            "  --hold-us US          hold time of the contention-hold*, inproc and mixed rows\n"
            "                        (default 1000; contention and contention-poll hold 0)\n"
            "  --retry-delay MS      polling fallback, per acquire: retry_delay_ms (default 10)\n"
            "  --retry-jitter MS     ... plus retry_jitter_ms (default 5)\n"
            "  --wait-ms MS          each acquire's deadline (wait_ms): a contender gives up\n"
            "                        this long after the call (default 2000)\n"
            "                        (the restart* scenarios always retry at once)\n"
            "\n"
            "Other:\n"
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
            "  --trace-dir DIR       fault scenarios write the library's protocol trace to\n"
            "                        DIR/<scenario>.trace, for model/trace-check.py\n"
            "\n"
            "Exit: 0 done; 2 setup error; 3 watchdog; 4 violations where the algorithm\n"
            "claims safety.\n",
            BENCH_CLUSTER_UP, scenario_list);
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

/* The library decides whether the list is valid (redlock_client_new says
 * why not, in one line); the bench only needs each master's host and port,
 * to break it and to reach it without the library, and refuses anything
 * that is not loopback: this program sends bursts and kills servers. */
static int split_masters(const char *list)
{
    char buf[1024], *save = NULL, *tok;
    int n = 0;

    snprintf(buf, sizeof(buf), "%s", list);
    for (tok = strtok_r(buf, ",", &save); tok && n < BENCH_MAX_MASTERS;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(tok, ':'), *host = tok;

        if (!colon)
            break;
        *colon = '\0';
        if (host[0] == '[') {
            host++;
            host[strcspn(host, "]")] = '\0';
        }
        if (!is_loopback(host)) {
            fprintf(stderr,
                    "redlock-bench: master '%s': only loopback addresses are "
                    "allowed\n",
                    host);
            return -1;
        }
        snprintf(config.host[n], sizeof(config.host[n]), "%s", host);
        config.port[n++] = atoi(colon + 1);
    }
    config.n_masters = n;
    return 0;
}

/* The library is the one judge of a master list: redlock_masters_check()
 * where the library has it, else a client made from the list and freed at
 * once (meson looks for the symbol; drop the fallback once every library
 * the bench is built with has the check). */
static int check_masters(const char *list)
{
    redlock_error err;
    int rc;

    memset(&err, 0, sizeof(err));
#ifdef BENCH_HAVE_MASTERS_CHECK
    rc = redlock_masters_check(list, NULL, NULL, &err);
#else
    {
        redlock_config cfg;
        redlock_client *c = NULL;

        redlock_config_init(&cfg);
        cfg.masters = list;
        rc = redlock_client_new(&cfg, NULL, &c, &err);
        redlock_client_free(c);
    }
#endif
    if (rc != 0) {
        fprintf(stderr, "redlock-bench: --masters: %s\n",
                err.msg[0] ? err.msg : redlock_strerror(rc));
        return -1;
    }
    return split_masters(list);
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

static void set_defaults(void)
{
    snprintf(config.scenarios, sizeof(config.scenarios), "all");
    config.duration_s = 2.0;
    config.clients = 8;
    config.threads = 4;
    config.inflight = 64;
    config.pipeline = 64;
    config.ttl_ms = 1000;
    config.node_timeout_ms = 50;
    config.local_run_max = -1;
    config.hold_us = 1000;
    config.retry_delay_ms = 10;
    config.retry_jitter_ms = 5;
    config.wait_ms = 2000;
    config.syscall_cycles = 3000;
    config.seed = 1;
    config.max_ops = 2000000;
    config.fail_backoff_us = 1000;
    config.max_time_s = 900;
    config.out_dir = "out";
    config.json_stdout = 1;
}

/* One row per numeric option: where it goes and its bounds. */
struct num_opt {
    const char *name;
    enum { T_INT, T_U32, T_U64, T_DBL } type;
    void *dst;
    double lo, hi;
};

static const struct num_opt num_opts[] = {
    { "n-masters", T_INT, &config.n_masters, 1, BENCH_MAX_MASTERS },
    { "base-port", T_INT, &config.base_port, 1, 65535 - BENCH_MAX_MASTERS },
    { "aof-base-port", T_INT, &config.aof_base_port, 1024, 65535 - BENCH_MAX_MASTERS },
    { "duration", T_DBL, &config.duration_s, 0.1, 3600 },
    { "clients", T_INT, &config.clients, 2, BENCH_MAX_CLIENTS },
    { "threads", T_INT, &config.threads, 1, 256 },
    { "inflight", T_INT, &config.inflight, 1, 4096 },
    { "pipeline", T_INT, &config.pipeline, 1, 4096 },
    { "ttl", T_U32, &config.ttl_ms, 10, 600000 },
    { "node-timeout", T_U32, &config.node_timeout_ms, 1, 60000 },
    { "local-run-max", T_INT, &config.local_run_max, 0, 1000 },
    { "hold-us", T_U32, &config.hold_us, 0, 60000000 },
    { "retry-delay", T_U32, &config.retry_delay_ms, 0, 60000 },
    { "retry-jitter", T_U32, &config.retry_jitter_ms, 0, 60000 },
    { "wait-ms", T_U32, &config.wait_ms, 0, 3600000 },
    { "syscall-cycles", T_U32, &config.syscall_cycles, 0, 1000000 },
    { "seed", T_U64, &config.seed, 0, 1e18 },
    { "max-ops", T_U64, &config.max_ops, 1, 1e12 },
    { "fail-backoff-us", T_U32, &config.fail_backoff_us, 0, 10000000 },
    { "max-time", T_DBL, &config.max_time_s, 1, 86400 },
};
#define N_NUM_OPTS (sizeof(num_opts) / sizeof(num_opts[0]))

static void set_num(const struct num_opt *o, const char *arg)
{
    char opt[40];
    double v;

    snprintf(opt, sizeof(opt), "--%s", o->name);
    v = parse_num(opt, arg, o->lo, o->hi);
    switch (o->type) {
    case T_INT: *(int *)o->dst = (int)v; break;
    case T_U32: *(uint32_t *)o->dst = (uint32_t)v; break;
    case T_U64: *(uint64_t *)o->dst = (uint64_t)v; break;
    case T_DBL: *(double *)o->dst = v; break;
    }
}

enum {
    OPT_MASTERS = 256,
    OPT_SCRIPT,
    OPT_DIR,
    OPT_SCEN,
    OPT_OUT,
    OPT_JSON,
    OPT_NOJSON,
    OPT_NOPROG,
    OPT_TRACE,
    OPT_NUM = 512
};

static const char *parse_args(int argc, char **argv)
{
    static struct option opts[N_NUM_OPTS + 10];
    static const struct option fixed[] = {
        { "masters", required_argument, 0, OPT_MASTERS },
        { "cluster-script", required_argument, 0, OPT_SCRIPT },
        { "cluster-dir", required_argument, 0, OPT_DIR },
        { "scenarios", required_argument, 0, OPT_SCEN },
        { "out", required_argument, 0, OPT_OUT },
        { "json", required_argument, 0, OPT_JSON },
        { "no-json", no_argument, 0, OPT_NOJSON },
        { "no-progress", no_argument, 0, OPT_NOPROG },
        { "trace-dir", required_argument, 0, OPT_TRACE },
        { "help", no_argument, 0, 'h' },
    };
    const char *masters = NULL;
    size_t i;
    int c;

    for (i = 0; i < N_NUM_OPTS; i++)
        opts[i] = (struct option){ num_opts[i].name, required_argument, 0, OPT_NUM + (int)i };
    memcpy(opts + N_NUM_OPTS, fixed, sizeof(fixed));
    while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
        switch (c) {
        case 'n': set_num(&num_opts[0], optarg); break;
        case OPT_MASTERS: masters = optarg; break;
        case OPT_SCRIPT: config.cluster_script = optarg; break;
        case OPT_DIR: config.cluster_dir = optarg; break;
        case OPT_SCEN: snprintf(config.scenarios, sizeof(config.scenarios), "%s", optarg); break;
        case OPT_OUT: config.out_dir = optarg; break;
        case OPT_JSON: config.json_path = optarg; break;
        case OPT_NOJSON: config.json_stdout = 0; break;
        case OPT_NOPROG: config.no_progress = 1; break;
        case OPT_TRACE: config.trace_dir = optarg; break;
        case 'h': usage(stdout); exit(0);
        default:
            if (c >= OPT_NUM && c < OPT_NUM + (int)N_NUM_OPTS) {
                set_num(&num_opts[c - OPT_NUM], optarg);
                break;
            }
            usage(stderr);
            exit(2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "redlock-bench: unexpected argument '%s'\n", argv[optind]);
        exit(2);
    }
    return masters;
}

void parse_options(int argc, char **argv, const char *list)
{
    const char *masters;
    int i;

    scenario_list = list;
    set_defaults();
    config.n_masters = 5;
    masters = parse_args(argc, argv);
    if (masters) {
        snprintf(config.masters, sizeof(config.masters), "%s", masters);
    } else if (!config.base_port) {
        /* No default: 7000.. is where Redis Cluster tutorials put their
         * nodes too, and this program floods what it is given. */
        fprintf(stderr,
                "redlock-bench: no masters: give --masters LIST or --base-port P "
                "(to start five on 127.0.0.1:7000..7004: %s start)\n",
                BENCH_CLUSTER_UP);
        exit(2);
    } else {
        size_t used = 0;
        int n = config.n_masters;

        for (i = 0; i < n; i++)
            used += (size_t)snprintf(config.masters + used, sizeof(config.masters) - used,
                                     "%s127.0.0.1:%d", i ? "," : "", config.base_port + i);
    }
    if (check_masters(config.masters) < 0)
        exit(2);
    if (config.cluster_script && !config.cluster_dir) {
        fprintf(stderr, "redlock-bench: --cluster-script needs --cluster-dir\n");
        exit(2);
    }
    /* fault injection addresses masters by cluster-up.sh index */
    for (i = 1; config.cluster_script && i < config.n_masters; i++) {
        if (config.port[i] != config.port[0] + i) {
            fprintf(stderr, "redlock-bench: with --cluster-script, --masters must be "
                            "cluster-up.sh's list (consecutive ports from master 0)\n");
            exit(2);
        }
    }
    if (!config.aof_base_port)
        config.aof_base_port = config.port[0] + 10;
    if (config.cluster_dir)
        snprintf(config.aof_dir, sizeof(config.aof_dir), "%s-aof", config.cluster_dir);
    config.tty = isatty(STDOUT_FILENO) && !config.no_progress;
    bench_seed(config.seed);
    snprintf(config.run_id, sizeof(config.run_id), "%ld-%llu", (long)getpid(),
             (unsigned long long)config.seed);
}
