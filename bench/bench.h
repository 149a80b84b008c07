/* bench.h - shared declarations of redlock-bench.
 *
 * One program split by concern, in layers, a file calling only files below
 * it: main.c; report.c, targets.c; the scenarios; the engines (load.c,
 * contend.c, then inproc.c, whose waiters a contend.c process may run);
 * the helpers; options.c, util.c, ophook.c, mstat.c; state.c, hist.c.
 * Every file in its layer: docs/map.md, "`bench/`: redlock-bench".
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "hist.h"
#include "json.h"
#include <redlock.h>

#define BENCH_MAX_MASTERS REDLOCK_MAX_MASTERS
#define BENCH_MAX_RESULTS 40
#define BENCH_MAX_CLIENTS 64 /* contenders: processes or waiters */
#define BENCH_NERR 32        /* errs[] slots, indexed by -code */

/* Settings, filled by parse_options(). One instance, shared by all files. */
struct config {
    /* targets: loopback only */
    char masters[1024];               /* "127.0.0.1:7000,..." as given */
    int n_masters;                    /* N */
    char host[BENCH_MAX_MASTERS][64]; /* per master */
    int port[BENCH_MAX_MASTERS];

    /* fault injection through cluster-up.sh */
    const char *cluster_script; /* NULL: fault scenarios are skipped */
    const char *cluster_dir;
    int base_port;
    int aof_base_port; /* restart-aof: its own --aof cluster */
    char aof_dir[512]; /* ... in this dir (cluster_dir + "-aof") */

    /* what to run */
    char scenarios[512];      /* comma list, or "all" */
    double duration_s;        /* per timed scenario */
    int clients;              /* contention: K processes (inproc: K waiters) */
    int threads;              /* blocking throughput: T threads */
    int inflight;             /* async throughput: cycles in flight */
    int pipeline;             /* raw capacity: commands in flight per master */
    uint32_t ttl_ms;          /* lock ttl for every scenario */
    uint32_t node_timeout_ms; /* redlock_config.node_timeout_ms */
    int local_run_max;        /* redlock_config.local_run_max; -1: the library's */
    uint32_t hold_us;         /* contention-hold*, inproc: time held */
    uint32_t retry_delay_ms;  /* contention*: library retry base delay */
    uint32_t retry_jitter_ms; /* contention*: library retry jitter */
    uint32_t wait_ms;         /* contention*: a contender gives up after this */
    uint32_t syscall_cycles;  /* uncontended*: cycles counted for syscalls */
    uint32_t fail_backoff_us; /* timeline: a slot's pause after a failure */
    uint64_t seed;
    uint64_t max_ops;  /* per scenario: acquires attempted */
    double max_time_s; /* watchdog for the whole run */

    /* output */
    const char *out_dir;   /* JSON lines, timeline data and plot */
    const char *json_path; /* --json FILE, or NULL */
    const char *trace_dir; /* --trace-dir DIR: fault scenarios' traces */
    int tty;               /* stdout is a terminal: progress line */
    int no_progress;
    int json_stdout; /* print JSON lines after the table */

    char run_id[32];   /* key prefix unique to this run */
    int step, n_steps; /* scenario i of n, for the progress line */
};

extern struct config config;

/* What the library said about every acquire through its op hook
 * (redlock_config.op_fn): its own count of attempts and of the time each
 * call waited. Plain data, like struct tally. */
struct opstats {
    int on;                 /* counting (not during warm-up); atomic */
    uint64_t acquires, ok;  /* completed acquire calls; succeeded */
    uint64_t attempts;      /* summed over them */
    struct hist attempts_h; /* attempts per acquire (exact below 256) */
    struct hist waited;     /* waited_us: the call to its decision */
    uint64_t votes[BENCH_MAX_MASTERS][REDLOCK_VOTE_EXCLUDED + 1]; /* by master, kind */
};

/* One scenario's figures. Latencies in µs. */
struct result {
    char scenario[32];
    char fault[192]; /* what was done to which masters; "" if none */
    int skipped;
    char note[512]; /* one line for the table's notes */
    uint64_t ops;   /* acquires attempted */
    uint64_t ok;
    uint64_t failed;
    uint64_t violations; /* overlapping windows on one resource */
    uint64_t checked;    /* windows checked for overlap */
    double max_overlap_us;
    uint64_t release_failed;
    struct hist acq;  /* successful acquires */
    struct hist rel;  /* releases */
    struct hist fail; /* failed acquires: time to fail */
    double duration_s;
    double cycles_per_s;             /* < 0: not applicable */
    double cpu_us_per_cycle;         /* < 0: not applicable */
    double masters_cpu_us_per_cycle; /* all N masters together; < 0: n/a */
    double masters_cores;            /* their CPU s per wall s; < 0: n/a */
    char masters_cmds[200];          /* the costliest commands per cycle, or "" */
    char masters_calls[200];         /* every command's calls per cycle and master */
    uint64_t errs[BENCH_NERR];       /* failures by -code */
    /* contention rows */
    struct hist handoff;                   /* release returned -> next holder's acquire
                                              returned, other owner, µs */
    uint64_t owner_changes;                /* grants to another owner than the last */
    uint64_t early_handoffs;               /* ... whose acquire returned before that release did */
    double max_gap_ms;                     /* longest time nobody held the lock */
    double max_gap_at_s;                   /* ... from this long after the start */
    uint64_t restarts_seen;                /* master restarts the clients saw */
    double sat_out_ms;                     /* restart-persist-*: longest time a restarted
                                              master did not count; < 0: n/a */
    int sat_out_open;                      /* ... one still did not count at the end */
    uint64_t waiters_killed;               /* contention-deadwaiter: SIGKILLed waiters */
    double handoff_ratio;                  /* ... hand-offs/s against its baseline; < 0: n/a */
    int n_owners;                          /* processes or waiters */
    uint64_t grants_by[BENCH_MAX_CLIENTS]; /* per owner */
    double fairness_jain;                  /* over grants_by; < 0: n/a */
    /* contention-mixed: processes of several waiters each; owners above
       are the processes */
    int waiters_each;                             /* waiters per process; 0: one */
    uint64_t grants_by_waiter[BENCH_MAX_CLIENTS]; /* process 0's waiters, 1's, ... */
    double fairness_jain_waiters;                 /* over grants_by_waiter; < 0: n/a */
    int64_t longest_run;                          /* most grants in a row to one process while
                                                     the row ran (not its drain); < 0: n/a */
    uint64_t process_changes;                     /* ... grants to another process than the last */
    int64_t longest_jumps;                        /* most grants in a row to one process, after
                                                     the first, each ahead of an older waiter of
                                                     another process (passes); < 0: n/a */
    struct opstats lib;                           /* the library's own figures (op hook) */
    int64_t inversions;                           /* inproc: grants that overtook an older waiter;
                                                     < 0: not measured */
    double syscalls_per_cycle;                    /* uncontended*: < 0: not counted */
    double epoll_ctl_per_cycle;
    double first_grant_ms; /* timeline: quorum back -> first grant; < 0: n/a */
    uint64_t raw_all_p99;  /* kill*, pause*: raw quorum of all N before the */
    uint64_t raw_live_p99; /* fault, and of the masters it spares; 0: n/a */
    char extra[4096];      /* more JSON members, ",\"k\":v...", written by xj */
    struct json xj;        /* the writer into extra[] (set up by result_clear()) */
};

/* What one worker (thread, process) counted; added into a result at the end.
 * Plain data: it can live in a MAP_SHARED page written by a forked child. */
struct tally {
    uint64_t ops, ok, failed, rel_failed;
    uint64_t errs[BENCH_NERR];
    struct hist acq, rel, fail;
};

/* The floor, measured first and used by every later row. */
struct floor_figures {
    int valid;
    uint64_t set_p50, set_p99;          /* one master, SET NX PX */
    uint64_t del_p50, del_p99;          /* one master, DEL */
    uint64_t quorum_p50, quorum_p99;    /* raw SET to all N, majority-th reply */
    double raw_ops_per_s;               /* N masters, pipelined SET+DEL */
    double ceiling_cycles_per_s;        /* raw_ops_per_s / (2 N) */
    double script_ceiling_cycles_per_s; /* the same, released by script */
    uint64_t healthy_p99;               /* uncontended acquire p99, for pause */
    /* per-master clock estimates, from a redlock_ping on a blocking client
     * that probed TIME every 100 ms while the floor ran */
    int n_clock;           /* 0: not taken */
    char clock_err[160];   /* why not, if it failed */
    double clock_window_s; /* how long the client sampled */
    struct {
        int reachable;
        double rate_lo, rate_hi; /* 0, 0: unknown */
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

/* The raw row's loaded passes (rawcycle.c), for issue 21's targets; its
 * passes at 1 in flight are the "raw" result itself. */
struct raw_figures {
    int valid;
    char release[64];                /* how it released: "EVALSHA on all 5", ... */
    int inflight;                    /* cycles in flight in the passes below */
    double cycles_per_s;             /* released as .release says */
    double masters_cpu_us_per_cycle; /* all N together; < 0: not read */
    double script_cycles_per_s;      /* released by EVALSHA on every master */
    double script_masters_cpu_us_per_cycle;
};

extern struct raw_figures raw_fig;

/* The raw-guard row's loaded pass (rawcycle.c): the least the memory guard
 * asks of the masters, with no library, at --inflight. */
struct guard_figures {
    int valid;
    double cycles_per_s;
    double masters_cpu_us_per_cycle; /* all N together; < 0: not read */
};

extern struct guard_figures guard_fig;

/* state.c */
struct result *result_new(const char *scenario);
void result_clear(struct result *r);              /* back to empty, name kept */
struct result *result_last(void);                 /* the latest result_new(), or NULL */
struct result *result_find(const char *scenario); /* not skipped, or NULL */
struct result **results_all(int *n);
void results_free(void);
int err_slot(int code); /* errs[] index of a REDLOCK_E* code */
void result_err(struct result *r, int code);
void tally_init(struct tally *t);
void tally_fail(struct tally *t, int code, uint64_t waited_us);
void result_add_tally(struct result *r, const struct tally *t);
/* "@key":{"p50":..,"p90":..,"p99":..,"p999":..,"max":..} of @h, or null when
 * it is empty. */
void json_kv_hist(struct json *j, const char *key, const struct hist *h);
void result_note(struct result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* util.c */
uint64_t now_us(void);    /* CLOCK_MONOTONIC, µs */
uint64_t cpu_us(void);    /* getrusage(RUSAGE_SELF) user+sys, µs */
int stop_requested(void); /* SIGINT/SIGTERM seen */
void sleep_us(uint64_t us);
void bench_seed(uint64_t seed);
uint64_t bench_rand(void); /* seeded xorshift, main thread only */
int mkdir_p(const char *dir);
void register_child(int pid);
void unregister_child(int pid);
void bench_in_child(void); /* a forked child: drop the parent's duties */
void bench_signals_install(unsigned max_time_s);
void progress(const char *label, double elapsed_s, double total_s, uint64_t ok, uint64_t failed);
void progress_clear(void);

/* options.c */
void parse_options(int argc, char **argv, const char *scenario_list); /* list: for --help */

/* masters.c */
void bench_config_fill(redlock_config *cfg, uint32_t retries);
uint32_t bench_local_run_max(void);             /* B of the clients above; 0: no local hand-off */
const char *bench_hiredis_version(void);        /* the hiredis headers built against */
int master_answers(int i, uint64_t timeout_us); /* PING over plain hiredis: 1/0 */
int wait_masters_up(unsigned timeout_ms);       /* all N answer PING: 0, else -1 */
int wait_masters_vote(void);                    /* all N vote in acquires again: 0, else -1 */
struct event_base;
int bench_async_client(struct event_base *base, const redlock_config *cfg, redlock_client **ret,
                       char *why, size_t whylen);
int bench_blocking_client(const redlock_config *cfg, redlock_client **ret, char *why,
                          size_t whylen);
int bench_declare_empty(size_t *declared, char *why, size_t whylen);

/* mstat.c: the masters' own counters, summed over N */
#define MSTAT_CMDS 96 /* a long-lived master has run many kinds of command */
struct mstat_cmd {
    char name[24]; /* "evalsha", "set", ... */
    uint64_t calls, usec;
};
struct mstat {
    int ok;       /* every master answered */
    double cpu_s; /* INFO cpu: user + sys */
    int n;
    struct mstat_cmd cmd[MSTAT_CMDS]; /* INFO commandstats */
};
void masters_stat(struct mstat *s);
double masters_cpu_s(void); /* CPU s so far, or -1 */
void masters_delta(struct result *r, const struct mstat *before, uint64_t cycles);

/* ophook.c: the library's op hook, counting into a struct opstats */
void opstats_hook(struct opstats *s, redlock_config *cfg); /* before client_new */
void opstats_start(struct opstats *s);                     /* count from now on (after warm-up) */
void opstats_merge(struct opstats *dst, const struct opstats *src);
void opstats_line(char *buf, size_t len, const struct opstats *s);
void opstats_votes_line(char *buf, size_t len, const struct opstats *s);

/* waiting.c: how a contender waits for a busy lock: a deadline per call
 * (redlock_acquire_with), the polling fallback, pub/sub on the client. */
struct wait_policy {
    uint32_t wait_ms;         /* deadline: give up this long after the call */
    uint32_t retry_delay_ms;  /* polling fallback: delay ... */
    uint32_t retry_jitter_ms; /* ... plus 0..jitter */
    int pubsub;               /* wake on a release (pub/sub), or poll only */
    int by_retries;           /* plain redlock_acquire(): the client's default wait,
                                 retry_count = wait_ms / (delay + jitter) */
};
struct wait_policy wait_policy_default(int pubsub); /* --wait-ms, --retry-* */
void wait_config(const struct wait_policy *w, redlock_config *cfg);
int wait_acquire(redlock_client *c, const struct wait_policy *w, const char *res, uint32_t ttl_ms,
                 redlock_lock **lock);
int wait_acquire_async(redlock_client *c, const struct wait_policy *w, const char *res,
                       uint32_t ttl_ms, redlock_done_cb cb, void *arg);
void wait_json(struct result *r, const struct wait_policy *w);

/* sysc.c: system calls made by this process's threads, from the kernel's
 * syscall tracepoints (perf_event_open), while counting runs. */
enum { SYSC_TOTAL, SYSC_EPOLL_CTL, SYSC_WRITE, SYSC_READ, SYSC_EPOLL_WAIT, SYSC_FUTEX, SYSC_KINDS };
struct sysc {
    int ok; /* counted; else why says why not */
    char why[160];
    int n_fd;
    int fd[8 * SYSC_KINDS]; /* per thread and kind */
    uint64_t count[SYSC_KINDS];
    uint64_t cycles; /* what the counts are divided by */
};
void sysc_start(struct sysc *s); /* every thread that exists now */
void sysc_stop(struct sysc *s, uint64_t cycles);
void sysc_json(struct result *r, const struct sysc *s);
void sysc_note(char *buf, size_t len, const struct sysc *s);

/* timeline.c: figures per 100 ms bucket, plus the fault events. */
#define TL_BUCKET_US 100000u
#define TL_MAX_BUCKETS 1200
#define TL_MAX_EVENTS 32
struct timeline {
    uint64_t t0; /* monotonic µs */
    int n_buckets;
    uint64_t ok[TL_MAX_BUCKETS];
    uint64_t failed[TL_MAX_BUCKETS];
    struct hist *acq;                         /* n_buckets histograms */
    volatile uint64_t heal_us;                /* set by the fault thread when heal starts */
    volatile uint64_t quorum_us;              /* a quorum of masters answers PING again */
    volatile uint64_t declared_us;            /* the healed masters were declared empty */
    size_t declared;                          /* ... how many of them */
    char declare_err[160];                    /* why the declare failed, or "" */
    int gated;                                /* atomic: the load starts no acquire now */
    int in_flight;                            /* atomic: acquires the load has in flight */
    uint64_t recovered_us;                    /* first success after heal_us */
    uint64_t failed_before_grant;             /* acquires failed after the declare, before it */
    uint64_t connected_us[BENCH_MAX_MASTERS]; /* the load client's latest connect */
    int n_events;
    double ev_t[TL_MAX_EVENTS]; /* s since t0 */
    char ev_label[TL_MAX_EVENTS][48];
};
int timeline_begin(struct timeline *tl);                     /* 0: gated, start nothing now */
void timeline_on_log(int level, const char *msg, void *arg); /* log_fn, arg: tl */
void timeline_record(struct timeline *tl, uint64_t t_us, uint64_t lat_us, int ok);
void timeline_event(struct timeline *tl, uint64_t t_us, const char *label);
void report_timeline(const struct timeline *tl);
const char *timeline_plot_msg(void); /* "" until report_timeline() ran */

/* cluster.c */
int cluster_available(void);
int cluster_script_run(const char *const *args, char *out, size_t outlen);
int cluster_run(const char *action, int index); /* 0 on success */
int cluster_heal(void);
void pick_masters(int k, int *out); /* k distinct indices, by --seed */
void describe_masters(char *buf, size_t len, const char *what, const int *idx, int k);
struct fault_step {
    double at_s;        /* since the schedule's t0 */
    const char *action; /* cluster-up.sh command */
    int idx;            /* master index, -1 for heal */
    int declare;        /* heal: then declare the healed masters
                           empty, the load held off meanwhile */
};
struct schedule {
    struct fault_step steps[24];
    int n;
    uint64_t t0;
    struct timeline *tl; /* optional: events are marked there */
    int errors;
};
void sched_add(struct schedule *s, double at, const char *action, int idx);
void sched_add_declared_heal(struct schedule *s, double at);
void sched_run(struct schedule *s);
void sched_during(void *arg, uint64_t t0); /* contend_opts.during for a schedule */

/* windows.c: lock windows on one resource, from any number of owners */
struct owned_window {
    uint64_t start;    /* µs, monotonic: acquire returned */
    uint64_t end;      /* µs: release called, or validity end */
    uint64_t rel_done; /* µs: release returned */
    int owner;
    uint64_t asked; /* µs: its waiter began the acquire (the queue's ticket) */
};
/* A log of windows: grown on the heap, or fixed (a slice of a page shared
 * with forked children, at the same address in both: it fills up). */
struct winlog {
    struct owned_window *w;
    size_t n, cap;
    int fixed;
};
int winlog_add(struct winlog *l, const struct owned_window *w); /* 0, or -1: no room */
void windows_check(struct owned_window *w, size_t n, uint64_t t_start, struct result *r);
void windows_runs(const struct owned_window *w, size_t n, int per, uint64_t t_end,
                  struct result *r);
double jain(const uint64_t *x, int n); /* < 0 when all are 0 */
void result_fairness(struct result *r, const uint64_t *grants, int n);
void contention_json(struct result *r, int clients, uint32_t hold_us);

/* load.c */
struct load_opts {
    int inflight; /* cycles in flight on one loop */
    double duration_s;
    uint64_t max_ops;
    uint32_t retries;         /* redlock_config.retry_count */
    uint32_t fail_backoff_us; /* pause a slot after a failed acquire */
    uint32_t hold_us;         /* hold each lock this long before releasing */
    uint32_t settle_ms;       /* no warm-up: run the loop this long first */
    struct timeline *tl;      /* optional: per-bucket figures */
    struct sysc *sys;         /* optional: count syscalls over the run */
    const char *label;        /* progress label and key prefix */
    unsigned flags;           /* acquire flags (REDLOCK_FENCE) */
    /* called once the client is warm, just before the clock starts (the
     * fault scenarios break masters here) */
    void (*before)(void *arg);
    void *before_arg;
};
int load_async(const struct load_opts *o, struct result *r);
int load_blocking(int threads, double duration_s, uint64_t max_ops, struct sysc *sys,
                  struct result *r);

/* contend.c */
struct contend_opts {
    int clients;
    int waiters; /* > 1: each process runs this many waiters on one async
                    client (inproc.c), not one blocking caller */
    double duration_s;
    uint32_t ttl_ms;
    uint32_t hold_us;
    struct wait_policy wait;
    uint32_t reconnect_max_ms;  /* 0: the library's default */
    int restart_guard_off;      /* cfg.restart_guard = 0 (it is on by default) */
    double kill_waiter_every_s; /* > 0: SIGKILL a waiting contender this often
                                   and start a new one in its place */
    const char *label;
    /* runs in the parent while the children contend; @t0 is their start */
    void (*during)(void *arg, uint64_t t0);
    void *arg;
};
int contend_run(const struct contend_opts *o, struct result *r);

/* restart.c: when the restart* scenarios restart masters, s after the start */
#define RESTART_AT_S 0.8

/* inproc.c: K waiters sharing one async client on one resource, each
 * acquiring, holding and releasing until a deadline. What they did is
 * plain data, so that a process forked by contend.c can keep it in a page
 * it shares with the parent. */
struct waiters_opts {
    int k;      /* waiters, at most BENCH_MAX_CLIENTS */
    int owner0; /* their windows' owners: owner0 .. owner0 + k - 1 */
    uint32_t ttl_ms, hold_us;
    const struct wait_policy *wait;
    const char *res;
    const char *label; /* progress line; NULL: none (a forked contender) */
};
struct waiters_out {
    struct tally t;                     /* every acquire of the K */
    uint64_t grants[BENCH_MAX_CLIENTS]; /* per waiter */
    int64_t inversions;                 /* grants that overtook an older waiter */
    volatile uint64_t ok_now;           /* t.ok, for a progress line elsewhere */
    struct winlog wins;                 /* every hold */
    int full;                           /* wins had no room: stopped early */
};
struct inproc;
struct inproc *inproc_open(const redlock_config *cfg, const struct waiters_opts *o,
                           struct waiters_out *out, char *why, size_t whylen);
void inproc_serve(struct inproc *ip, uint64_t t_end); /* returns once all K stopped */
void inproc_close(struct inproc *ip);
int inproc_run(int waiters, double duration_s, uint32_t hold_us, const struct wait_policy *w,
               struct result *r);

/* quorum.c: raw SET quorums next to a fault (all N vs the masters it spares) */
int raw_quorum_compare(const int *keep, int k, double seconds, struct hist *all, struct hist *live,
                       char *why, size_t len);

/* scenarios: floor.c, clock.c, rawcycle.c, latency.c, contention.c, faults.c, restart.c */
void scenario_floor(void);
void scenario_raw(void);
void scenario_raw_guard(void);
redlock_client *clock_client_start(uint64_t *t0);
void clock_client_report(redlock_client *c, uint64_t t0, struct result *r);
void scenario_uncontended(void);
void scenario_uncontended_blocking(void);
void scenario_uncontended_hold(void);
void scenario_throughput(void);
void scenario_fence_keys(void);
long long fence_keys_grown_max(void); /* -1: not run (fencekeys.c) */
void scenario_blocking(void);
void scenario_contention(void);
void scenario_contention_poll(void);
void scenario_contention_hold(void);
void scenario_contention_hold_poll(void);
void scenario_contention_hold_default(void);
void scenario_contention_inproc(void);
void scenario_contention_mixed(void);
void scenario_kill1(void);
void scenario_kill2(void);
void scenario_kill3(void);
void scenario_pause2(void);
void scenario_timeline(void);
void scenario_restart(void);
void scenario_restart_guard(void);
void scenario_restart_delayed(void);
void scenario_restart_aof(void);
void scenario_restart_persist(void);
void scenario_contention_deadwaiter(void);

/* report.c, targets.c */
void report_json_line(FILE *f, const struct result *r);
void report_all(struct result **res, int n);
void report_targets(void);

#endif
