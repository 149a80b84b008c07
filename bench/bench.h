/* bench.h - shared declarations of redlock-bench.
 *
 * The benchmark is one program split by concern: bench.c (options, scenario
 * table, main), floor.c (raw hiredis floor and capacity), load.c (acquire +
 * release load through the async and blocking APIs), contend.c (forked
 * contenders on one resource, overlap check), faults.c (cluster-up.sh,
 * fault scenarios, timeline), report.c (table, JSON lines, plot).
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "hist.h"
#include <redlock.h>

#define BENCH_MAX_MASTERS REDLOCK_MAX_MASTERS
#define BENCH_MAX_RESULTS 32
#define BENCH_NERR 32                 /* errs[] slots, indexed by -code */

/* Settings, filled by parseOptions(). One instance, shared by all files. */
struct config {
    /* targets: loopback only */
    char masters[1024];               /* "127.0.0.1:7000,..." as given */
    int n_masters;                    /* N */
    char host[BENCH_MAX_MASTERS][64]; /* per master */
    int port[BENCH_MAX_MASTERS];

    /* fault injection through cluster-up.sh */
    const char *cluster_script;       /* NULL: fault scenarios are skipped */
    const char *cluster_dir;
    int base_port;
    int aof_base_port;                /* restart-aof: its own --aof cluster */
    char aof_dir[512];                /* ... in this dir (cluster_dir + "-aof") */

    /* what to run */
    char scenarios[512];              /* comma list, or "all" */
    double duration_s;                /* per timed scenario */
    int clients;                      /* contention: K processes */
    int threads;                      /* blocking throughput: T threads */
    int inflight;                     /* async throughput: cycles in flight */
    int pipeline;                     /* raw capacity: commands in flight per master */
    uint32_t ttl_ms;                  /* lock ttl for every scenario */
    uint32_t node_timeout_ms;         /* redlock_config.node_timeout_ms */
    uint32_t hold_us;                 /* contention: time held before release */
    uint32_t retry_delay_ms;          /* contention*: library retry base delay */
    uint32_t retry_jitter_ms;         /* contention*: library retry jitter */
    uint32_t retry_count;             /* contention*: library retries */
    uint32_t fail_backoff_us;         /* timeline: a slot's pause after a failure */
    uint64_t seed;
    uint64_t max_ops;                 /* per scenario: acquires attempted */
    double max_time_s;                /* watchdog for the whole run */

    /* output */
    const char *out_dir;              /* JSON lines, timeline data and plot */
    const char *json_path;            /* --json FILE, or NULL */
    int tty;                          /* stdout is a terminal: progress line */
    int no_progress;
    int json_stdout;                  /* print JSON lines after the table */

    char run_id[32];                  /* key prefix unique to this run */
    int step, n_steps;                /* scenario i of n, for the progress line */
};

extern struct config config;

/* One scenario's figures. Latencies in µs. */
struct result {
    char scenario[32];
    char fault[192];                  /* what was done to which masters; "" if none */
    int skipped;
    char note[512];                   /* one line for the table's notes */
    uint64_t ops;                     /* acquires attempted */
    uint64_t ok;
    uint64_t failed;
    uint64_t violations;              /* overlapping windows on one resource */
    uint64_t checked;                 /* windows checked for overlap */
    double max_overlap_us;
    uint64_t release_failed;
    struct hist acq;                  /* successful acquires */
    struct hist rel;                  /* releases */
    struct hist fail;                 /* failed acquires: time to fail */
    double duration_s;
    double cycles_per_s;              /* < 0: not applicable */
    double cpu_us_per_cycle;          /* < 0: not applicable */
    double masters_cpu_us_per_cycle;  /* all N masters together; < 0: n/a */
    double masters_cores;             /* their CPU s per wall s; < 0: n/a */
    uint64_t errs[BENCH_NERR];        /* failures by -code */
    struct hist handoff;              /* contention: release returned -> next holder's
                                         acquire returned, other process, µs */
    uint64_t owner_changes;           /* contention: grants to another process than the last */
    uint64_t early_handoffs;          /* ... whose acquire returned before that release did */
    double max_gap_ms;                /* contention: longest time nobody held the lock */
    double max_gap_at_s;              /* ... from this long after the start */
    uint64_t restarts_seen;           /* contention: master restarts the clients saw */
    char extra[4096];                 /* more JSON members: ",\"k\":v..." */
};

/* The floor, measured first and used by every later row. */
struct floor_figures {
    int valid;
    uint64_t set_p50, set_p99;        /* one master, SET NX PX */
    uint64_t del_p50, del_p99;        /* one master, DEL */
    uint64_t quorum_p50, quorum_p99;  /* raw SET to all N, majority-th reply */
    double raw_ops_per_s;             /* N masters, pipelined SET+DEL */
    double ceiling_cycles_per_s;      /* raw_ops_per_s / (2 N) */
    double script_ceiling_cycles_per_s; /* the same, released by script */
    uint64_t healthy_p99;             /* uncontended acquire p99, for pause */
    /* per-master clock estimates, from a redlock_ping on a blocking client
     * that probed TIME every 100 ms while the floor ran */
    int n_clock;                      /* 0: not taken */
    char clock_err[160];              /* why not, if it failed */
    double clock_window_s;            /* how long the client sampled */
    struct {
        int reachable;
        double rate_lo, rate_hi;      /* 0, 0: unknown */
        uint64_t samples, jumps, rate_faults;
        int trusted;
        int64_t offset_us;
        char run_id[41];
        int64_t uptime_s;
        int aof_always;
        int excluded;
    } clock[BENCH_MAX_MASTERS];
};

extern struct floor_figures floor_fig;

/* bench.c */
uint64_t now_us(void);                /* CLOCK_MONOTONIC, µs */
uint64_t cpu_us(void);                /* getrusage(RUSAGE_SELF) user+sys, µs */
int stop_requested(void);             /* SIGINT/SIGTERM seen */
void sleep_us(uint64_t us);
struct result *result_new(const char *scenario);
struct result *result_last(void);     /* the latest result_new(), or NULL */
void result_err(struct result *r, int code);
void result_extra(struct result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void result_note(struct result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bench_config_fill(redlock_config *cfg, uint32_t retries);
int wait_masters_up(unsigned timeout_ms); /* all N answer PING: 0, else -1 */
double masters_cpu_s(void);           /* INFO cpu summed over N, or -1 */
void masters_cpu_delta(struct result *r, double before, uint64_t cycles);
void register_child(int pid);
void bench_in_child(void);             /* a forked child: drop the parent's duties */
void unregister_child(int pid);
uint64_t bench_rand(void);            /* seeded xorshift, main thread only */

/* floor.c */
void scenario_floor(void);

/* load.c */
struct timeline;
struct load_opts {
    int inflight;                     /* cycles in flight on one loop */
    double duration_s;
    uint64_t max_ops;
    uint32_t retries;                 /* redlock_config.retry_count */
    uint32_t fail_backoff_us;         /* pause a slot after a failed acquire */
    uint32_t settle_ms;               /* no warm-up: run the loop this long first */
    struct timeline *tl;              /* optional: per-bucket figures */
    const char *label;                /* progress label and key prefix */
    /* called once the client is warm, just before the clock starts (the
     * fault scenarios break masters here) */
    void (*before)(void *arg);
    void *before_arg;
};
int load_async(const struct load_opts *o, struct result *r);
int bench_async_client(struct event_base *base, uint32_t retries, redlock_client **ret,
                       char *why, size_t whylen);
int load_blocking(int threads, double duration_s, struct result *r);
void scenario_uncontended(void);
void scenario_throughput(void);
void scenario_blocking(void);

/* contend.c */
struct contend_opts {
    int clients;
    double duration_s;
    uint32_t ttl_ms;
    uint32_t hold_us;
    uint32_t reconnect_max_ms;        /* 0: the library's default */
    int restart_guard_off;            /* cfg.restart_guard = 0 (it is on by default) */
    uint32_t retry_count;             /* the library's retry settings */
    uint32_t retry_delay_ms;
    uint32_t retry_jitter_ms;
    int pubsub_off;                   /* cfg.pubsub_wait = 0 (it is on by default) */
    const char *label;
    /* runs in the parent while the children contend; @t0 is their start */
    void (*during)(void *arg, uint64_t t0);
    void *arg;
};
int contend_run(const struct contend_opts *o, struct result *r);
void scenario_contention(void);
void scenario_contention_poll(void);
/* The retry settings the restart scenarios use: retry at once, so that
 * contenders are always trying (a restart must land inside a hold). */
#define BENCH_BUSY_RETRY_COUNT 2000u
#define BENCH_BUSY_RETRY_DELAY_MS 0u
#define BENCH_BUSY_RETRY_JITTER_MS 1u

/* faults.c */
int cluster_available(void);
int cluster_run(const char *action, int index);  /* 0 on success */
int cluster_heal(void);
void scenario_kill1(void);
void scenario_kill2(void);
void scenario_kill3(void);
void scenario_pause2(void);
void scenario_restart(void);
void scenario_restart_guard(void);
void scenario_restart_delayed(void);
void scenario_restart_aof(void);
void scenario_timeline(void);

/* Timeline: figures per 100 ms bucket, plus the fault events. */
#define TL_BUCKET_US 100000u
#define TL_MAX_BUCKETS 1200
#define TL_MAX_EVENTS 32
struct timeline {
    uint64_t t0;                      /* monotonic µs */
    int n_buckets;
    uint64_t ok[TL_MAX_BUCKETS];
    uint64_t failed[TL_MAX_BUCKETS];
    struct hist *acq;                 /* n_buckets histograms */
    volatile uint64_t heal_us;        /* set by the fault thread when heal starts */
    uint64_t recovered_us;            /* first success after heal_us */
    int n_events;
    double ev_t[TL_MAX_EVENTS];       /* s since t0 */
    char ev_label[TL_MAX_EVENTS][48];
};
void timeline_record(struct timeline *tl, uint64_t t_us, uint64_t lat_us, int ok);

/* report.c */
void progress(const char *label, double elapsed_s, double total_s,
              uint64_t ok, uint64_t failed);
void progress_clear(void);
void report_json_line(FILE *f, const struct result *r);
void report_all(struct result **res, int n);
void report_timeline(const struct timeline *tl);

#endif
