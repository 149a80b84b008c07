/* sim-regions.c - masters in five regions, simulated on one machine.
 *
 * What does an acquire cost when the masters are 20-150 ms away, and how
 * much of a lease does that eat? Each master is put behind a relay that
 * adds half its region's round trip each way (helpers/relay.c), or, with
 * --no-relay, reached directly over links the caller has slowed with
 * `netns.sh delay` (netem). Then, for every ttl x node timeout, acquires run
 * back to back (each on a new resource, released asynchronously) and the
 * table shows latency percentiles and the validity lost: ttl - validity,
 * that is elapsed time plus the drift margin. Scenarios: all regions up,
 * the fastest region partitioned (black hole), the two fastest partitioned.
 * With --check the program fails unless the quorum-th fastest round trip
 * sets the latency and node timeouts below the needed round trip fail.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include <redlock.h>

#include "await.h"
#include "relay.h"

#define MAX_LIST 8
#define MAX_COMBOS (MAX_LIST * MAX_LIST)

static struct config {
    char masters[REDLOCK_MAX_MASTERS][64];
    int n;                             /* masters */
    unsigned rtt[REDLOCK_MAX_MASTERS]; /* ms, per master */
    int n_rtt;
    unsigned ttl[MAX_LIST]; /* ms */
    int n_ttl;
    unsigned nto[MAX_LIST]; /* node timeouts, ms */
    int n_nto;
    unsigned samples; /* acquires per ttl x timeout x scenario */
    unsigned jitter;  /* ms, one way, +/- */
    int relay_port;   /* first relay port */
    int no_relay;     /* links already slowed (netem) */
    int check;
    int max_down; /* scenarios: 0..max_down fastest down */
} config = {
    .rtt = { 20, 40, 80, 120, 150 },
    .n_rtt = 5,
    .ttl = { 1000, 10000, 30000 },
    .n_ttl = 3,
    .nto = { 100, 200, 400 },
    .n_nto = 3,
    .samples = 60,
    .relay_port = 7655,
    .max_down = 2,
};

/* One ttl x node timeout: a client and its samples. */
struct combo {
    redlock_client *c;
    unsigned ttl, nto;
    unsigned started, done, ok;
    unsigned warm, warm_runs; /* warm-up: acquires left at least, made */
    int warm_down;            /* the last warm-up saw a master not connected */
    uint64_t t0_us;           /* current acquire's start */
    double *lat_ms;           /* successes only */
    double *lost_ms;          /* ttl - validity, successes only */
    double *fail_ms;          /* failures */
    unsigned failed;
    int last_err;
};

static struct event_base *base;
static struct combo combos[MAX_COMBOS];
static int n_combos, pending_combos, releases_pending;
static int warming; /* run_all() is warming up, not sampling */
static tc_relay *relays[REDLOCK_MAX_MASTERS];

static void usage(FILE *f)
{
    fprintf(f, "usage: sim-regions [options]\n"
               "\n"
               "Acquire latency and validity lost with masters in distant regions.\n"
               "\n"
               "  --masters LIST     host:port,... (default: $REDLOCK_TEST_MASTERS)\n"
               "  --rtt LIST         round trip per master, ms (default 20,40,80,120,150)\n"
               "  --ttl LIST         ttls to try, ms (default 1000,10000,30000)\n"
               "  --node-timeout LIST  node timeouts to try, ms (default 100,200,400)\n"
               "  --samples N        acquires per cell (default 60)\n"
               "  --jitter MS        one-way jitter, +/- (default 0)\n"
               "  --relay-port P     relays listen on 127.0.0.1:P.. (default 7655)\n"
               "  --no-relay         the links are already slowed (netns.sh delay): connect\n"
               "                     directly; only the all-up scenario runs\n"
               "  --max-down K       scenarios with the 0..K fastest regions cut (default 2)\n"
               "  --check            exit 1 unless the figures match the model\n"
               "  -h, --help         this text\n"
               "\n"
               "Exit status: 0 done (and checks passed), 1 a check failed or setup failed,\n"
               "2 usage error.\n");
}

static int parse_list(const char *s, unsigned *out, int max, const char *what)
{
    int n = 0;
    const char *p = s;

    while (*p) {
        char *end;
        unsigned long v;
        errno = 0;
        v = strtoul(p, &end, 10);
        if (errno || end == p || v == 0 || v > 3600000 || (*end && *end != ',') || n == max) {
            fprintf(stderr, "sim-regions: bad %s list '%s' (1..%d numbers, comma-separated)\n",
                    what, s, max);
            exit(2);
        }
        out[n++] = (unsigned)v;
        p = *end ? end + 1 : end;
    }
    if (!n) {
        fprintf(stderr, "sim-regions: empty %s list\n", what);
        exit(2);
    }
    return n;
}

static void parse_masters(const char *s)
{
    char buf[REDLOCK_MAX_MASTERS * 64], *tok, *save = NULL;

    if (strlen(s) >= sizeof(buf)) {
        fprintf(stderr, "sim-regions: masters list too long\n");
        exit(2);
    }
    snprintf(buf, sizeof(buf), "%s", s);
    config.n = 0;
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (config.n == REDLOCK_MAX_MASTERS || strlen(tok) >= sizeof(config.masters[0])) {
            fprintf(stderr, "sim-regions: bad masters list '%s'\n", s);
            exit(2);
        }
        snprintf(config.masters[config.n++], sizeof(config.masters[0]), "%s", tok);
    }
}

static void parse_options(int argc, char **argv)
{
    static const struct option opts[] = {
        { "masters", required_argument, NULL, 'm' },
        { "rtt", required_argument, NULL, 'r' },
        { "ttl", required_argument, NULL, 't' },
        { "node-timeout", required_argument, NULL, 'o' },
        { "samples", required_argument, NULL, 's' },
        { "jitter", required_argument, NULL, 'j' },
        { "relay-port", required_argument, NULL, 'p' },
        { "no-relay", no_argument, NULL, 'R' },
        { "max-down", required_argument, NULL, 'd' },
        { "check", no_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *masters = getenv("REDLOCK_TEST_MASTERS");
    unsigned one[1];
    int c;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': masters = optarg; break;
        case 'r':
            config.n_rtt = parse_list(optarg, config.rtt, REDLOCK_MAX_MASTERS, "--rtt");
            break;
        case 't': config.n_ttl = parse_list(optarg, config.ttl, MAX_LIST, "--ttl"); break;
        case 'o': config.n_nto = parse_list(optarg, config.nto, MAX_LIST, "--node-timeout"); break;
        case 's':
            parse_list(optarg, one, 1, "--samples");
            config.samples = one[0];
            break;
        case 'j':
            if (!strcmp(optarg, "0"))
                config.jitter = 0;
            else
                parse_list(optarg, one, 1, "--jitter"), config.jitter = one[0];
            break;
        case 'p':
            parse_list(optarg, one, 1, "--relay-port");
            if (one[0] < 1024 || one[0] > 65000) {
                fprintf(stderr, "sim-regions: --relay-port must be 1024..65000\n");
                exit(2);
            }
            config.relay_port = (int)one[0];
            break;
        case 'R': config.no_relay = 1; break;
        case 'd':
            if (!strcmp(optarg, "0"))
                config.max_down = 0;
            else
                parse_list(optarg, one, 1, "--max-down"), config.max_down = (int)one[0];
            break;
        case 'c': config.check = 1; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind != argc) {
        fprintf(stderr, "sim-regions: unexpected argument '%s' (see --help)\n", argv[optind]);
        exit(2);
    }
    if (!masters || !*masters) {
        fprintf(stderr,
                "sim-regions: no masters (--masters, or run under tests/with-cluster.sh)\n");
        exit(2);
    }
    parse_masters(masters);
    if (config.n != config.n_rtt) {
        fprintf(stderr, "sim-regions: %d masters but %d round trips\n", config.n, config.n_rtt);
        exit(2);
    }
    if (config.samples > 100000)
        config.samples = 100000;
    if (config.no_relay)
        config.max_down = 0;
    if (config.max_down > config.n - (config.n / 2 + 1))
        config.max_down = config.n - (config.n / 2 + 1);
}

/* ---- sampling ---------------------------------------------------------------- */

static void start_acquire(struct combo *k);

static void start_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    start_acquire(arg);
}

static void on_release(redlock_client *c, int status, redlock_lock *lock,
                       const redlock_outcome *out, const redlock_error *err, void *arg)
{
    (void)c;
    (void)status;
    (void)out;
    (void)err;
    (void)arg;
    redlock_lock_free(lock);
    if (--releases_pending == 0 && pending_combos == 0)
        event_base_loopbreak(base);
}

static void on_acquire(redlock_client *c, int status, redlock_lock *lock,
                       const redlock_outcome *out, const redlock_error *err, void *arg)
{
    struct combo *k = arg;
    double ms = (double)(tc_now_us() - k->t0_us) / 1000.0;

    int more;

    (void)err;
    if (warming) {
        /* Until every connection is through its handshake (a slow region
         * needs a few of its round trips for it): no vote "down". */
        k->warm_down = 0;
        for (uint32_t i = 0; i < redlock_outcome_masters(out); i++)
            k->warm_down |= redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_DOWN;
        k->warm_runs++;
        if (k->warm)
            k->warm--;
        more = (k->warm || k->warm_down) && k->warm_runs < 100;
    } else {
        k->done++;
        if (status == 0) {
            k->lat_ms[k->ok] = ms;
            k->lost_ms[k->ok] = (double)k->ttl - (double)redlock_outcome_validity_ms(out);
            k->ok++;
        } else {
            k->last_err = status;
            k->fail_ms[k->failed++] = ms;
        }
        more = k->done < config.samples;
    }
    if (lock) {
        /* Released in the background: the next acquire does not wait. */
        if (redlock_release_async(c, lock, on_release, NULL, NULL) == 0)
            releases_pending++;
        else
            redlock_lock_free(lock);
    }
    if (more && warming && k->warm_down) {
        /* Pace the retries while connections come up. */
        struct timeval tv = { 0, 20000 };
        if (event_base_once(base, -1, EV_TIMEOUT, start_later, k, &tv) < 0)
            start_acquire(k);
        return;
    }
    if (more) {
        start_acquire(k);
        return;
    }
    if (--pending_combos == 0 && releases_pending == 0)
        event_base_loopbreak(base);
}

static void start_acquire(struct combo *k)
{
    char res[96];
    redlock_error e;
    int rc;

    snprintf(res, sizeof(res), "sim-regions:%ld:%u:%u:%u", (long)getpid(), k->ttl, k->nto,
             k->started++);
    k->t0_us = tc_now_us();
    rc = redlock_acquire_async(k->c, res, strlen(res), k->ttl, on_acquire, k, &e);
    if (rc != 0) {
        fprintf(stderr, "sim-regions: acquire_async: %s: %s\n", redlock_err_name(rc), e.msg);
        exit(1);
    }
}

/* Run every combo's warm-up (@warm acquires, not recorded), or its samples. */
static void run_all(unsigned warm)
{
    pending_combos = n_combos;
    warming = warm > 0;
    for (int i = 0; i < n_combos; i++) {
        combos[i].warm = warm;
        combos[i].warm_runs = 0;
        combos[i].done = combos[i].ok = combos[i].failed = 0;
        start_acquire(&combos[i]);
    }
    event_base_dispatch(base);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *v, unsigned n, double q)
{
    if (!n)
        return NAN;
    unsigned i = (unsigned)ceil(q * n);
    return v[(i ? i : 1) - 1];
}

static int cmp_unsigned(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

/* ---- scenarios -------------------------------------------------------------- */

/* The fastest @down regions black-holed: what a quorum must wait for. */
static int run_scenario(int down, int *failed_checks)
{
    unsigned sorted[REDLOCK_MAX_MASTERS];
    int order[REDLOCK_MAX_MASTERS];
    int quorum = config.n / 2 + 1;
    unsigned need;
    char label[32];

    memcpy(sorted, config.rtt, sizeof(unsigned) * (size_t)config.n);
    qsort(sorted, (size_t)config.n, sizeof(unsigned), cmp_unsigned);
    need = sorted[down + quorum - 1]; /* the quorum-th fastest of those left */
    /* Masters in order of rtt: the ones to cut are order[0..down-1]. */
    for (int i = 0; i < config.n; i++)
        order[i] = i;
    for (int i = 0; i < config.n; i++)
        for (int j = i + 1; j < config.n; j++)
            if (config.rtt[order[j]] < config.rtt[order[i]]) {
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
    if (down == 0)
        snprintf(label, sizeof(label), "all up");
    else
        snprintf(label, sizeof(label), "%d fastest cut", down);

    /* Fresh clients, connected (a warm-up round) before anything is cut:
     * a partition hits established connections, not the handshake. */
    n_combos = 0;
    for (int t = 0; t < config.n_ttl; t++) {
        for (int o = 0; o < config.n_nto; o++) {
            struct combo *k = &combos[n_combos++];
            redlock_config cfg;
            redlock_error e;
            char masters[REDLOCK_MAX_MASTERS * 64];
            size_t used = 0;
            int rc;

            for (int i = 0; i < config.n; i++)
                used += (size_t)snprintf(masters + used, sizeof(masters) - used, "%s%s",
                                         i ? "," : "",
                                         config.no_relay ? config.masters[i]
                                                         : tc_relay_addr(relays[i]));
            free(k->lat_ms);
            free(k->lost_ms);
            free(k->fail_ms);
            memset(k, 0, sizeof(*k));
            k->ttl = config.ttl[t];
            k->nto = config.nto[o];
            k->lat_ms = calloc(config.samples, sizeof(double));
            k->lost_ms = calloc(config.samples, sizeof(double));
            k->fail_ms = calloc(config.samples, sizeof(double));
            if (!k->lat_ms || !k->lost_ms || !k->fail_ms) {
                fprintf(stderr, "sim-regions: out of memory\n");
                return -1;
            }
            redlock_config_init(&cfg);
            cfg.masters = masters;
            cfg.node_timeout_ms = k->nto;
            cfg.retry_count = 0;
            cfg.clock_policy = REDLOCK_CLOCK_OFF;
            cfg.restart_guard = 0;
            rc = redlock_client_new(&cfg, base, &k->c, &e);
            if (rc != 0) {
                fprintf(stderr, "sim-regions: client: %s: %s\n", redlock_err_name(rc), e.msg);
                return -1;
            }
        }
    }
    run_all(2);
    for (int d = 0; d < down; d++)
        tc_relay_cut(relays[order[d]], 1);
    run_all(0);

    for (int i = 0; i < n_combos; i++) {
        struct combo *k = &combos[i];
        double p50, p90, p99, max, l50, l99;
        const char *verdict = "";

        qsort(k->lat_ms, k->ok, sizeof(double), cmp_double);
        qsort(k->lost_ms, k->ok, sizeof(double), cmp_double);
        qsort(k->fail_ms, k->failed, sizeof(double), cmp_double);
        p50 = pct(k->lat_ms, k->ok, 0.50);
        p90 = pct(k->lat_ms, k->ok, 0.90);
        p99 = pct(k->lat_ms, k->ok, 0.99);
        max = pct(k->lat_ms, k->ok, 1.0);
        l50 = pct(k->lost_ms, k->ok, 0.50);
        l99 = pct(k->lost_ms, k->ok, 0.99);
        if (config.check) {
            /* A node timeout clearly above the needed round trip must see
             * every acquire succeed at about that round trip; one clearly
             * below it must see every acquire fail. */
            double jit = 2.0 * config.jitter, nto = k->nto, rtt = need;
            if (nto > rtt + jit + 10.0) {
                /* A busy machine can push a sample past a tight timeout:
                 * allow a few, not a trend. */
                if (k->ok * 10 < config.samples * 9 || p50 < rtt - 1.0 - jit ||
                    p50 >= rtt + jit + 40.0) {
                    verdict = "  <- CHECK FAILED: expected success at the quorum-th round trip";
                    (*failed_checks)++;
                }
            } else if (nto + 10.0 < rtt - jit) {
                if (k->ok != 0) {
                    verdict = "  <- CHECK FAILED: expected ENOQUORUM (node timeout < round trip)";
                    (*failed_checks)++;
                }
            }
        }
        if (k->ok) {
            printf("%-14s %7u %6u %4u/%-4u %7.1f %7.1f %7.1f %7.1f %9.1f %9.1f %7.2f%%%s\n", label,
                   k->ttl, k->nto, k->ok, config.samples, p50, p90, p99, max, l50, l99,
                   100.0 * l99 / k->ttl, verdict);
        } else {
            printf("%-14s %7u %6u %4u/%-4u  all failed: %s, p50 %.1f ms, max %.1f ms%s\n", label,
                   k->ttl, k->nto, k->ok, config.samples, redlock_err_name(k->last_err),
                   pct(k->fail_ms, k->failed, 0.5), pct(k->fail_ms, k->failed, 1.0), verdict);
        }
        redlock_client_free(k->c);
        k->c = NULL;
    }
    printf("%-14s needed round trip (quorum-th fastest left): %u ms\n", "", need);
    for (int d = 0; d < down; d++)
        tc_relay_cut(relays[order[d]], 0);
    return 0;
}

int main(int argc, char **argv)
{
    int failed = 0, rc = 0;
    uint64_t t0 = tc_now_us();

    parse_options(argc, argv);
    base = event_base_new();
    if (!base) {
        fprintf(stderr, "sim-regions: event_base_new failed\n");
        return 1;
    }
    if (!config.no_relay) {
        for (int i = 0; i < config.n; i++) {
            char err[256];
            relays[i] = tc_relay_start(config.masters[i], config.relay_port + i, NULL, err,
                                       sizeof(err));
            if (!relays[i]) {
                fprintf(stderr, "sim-regions: %s\n", err);
                rc = 1;
                goto out;
            }
            tc_relay_set_delay(relays[i], config.rtt[i] / 2, config.rtt[i] - config.rtt[i] / 2,
                               config.jitter);
        }
    }

    printf("# sim-regions: %d masters, round trips", config.n);
    for (int i = 0; i < config.n; i++)
        printf(" %u", config.rtt[i]);
    printf(" ms (%s), jitter +/-%u ms one way, %u acquires per row, drift_factor 0.01\n",
           config.no_relay ? "links slowed by the caller" : "user-space relay", config.jitter,
           config.samples);
    printf("# latency: call to callback, ms; lost: ttl - validity = elapsed + ttl*0.01 + 2 ms\n");
    printf("%-14s %7s %6s %9s %7s %7s %7s %7s %9s %9s %8s\n", "scenario", "ttl_ms", "nto_ms",
           "ok/n", "p50", "p90", "p99", "max", "lost_p50", "lost_p99", "lost%ttl");
    for (int down = 0; down <= config.max_down; down++) {
        if (run_scenario(down, &failed) < 0) {
            rc = 1;
            goto out;
        }
    }
    printf("# %.1f s\n", (double)(tc_now_us() - t0) / 1e6);
    if (config.check && failed) {
        printf("# %d check(s) failed\n", failed);
        rc = 1;
    }

out:
    for (int i = 0; i < MAX_COMBOS; i++) {
        redlock_client_free(combos[i].c);
        free(combos[i].lat_ms);
        free(combos[i].lost_ms);
        free(combos[i].fail_ms);
    }
    for (int i = 0; i < config.n; i++)
        tc_relay_stop(relays[i]);
    event_base_free(base);
    return rc;
}
