/* floor.h - the state the floor's files share (floor.c, capacity.c, quorum.c,
 * raw.c, cmpdel.c, rawcycle.c): plain hiredis connections to every master on
 * one libevent loop, and the figures each phase fills. Private to those
 * files.
 */
#ifndef BENCH_FLOOR_H
#define BENCH_FLOOR_H

#include "bench.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

enum floor_phase { PH_CONNECT, PH_SINGLE, PH_QUORUM, PH_CAPACITY, PH_DONE };

/* How a master compares and deletes (cmpdel.c): the script, or natively. */
enum floor_release { REL_SCRIPT, REL_DELIFEQ, REL_DELEX };

struct chain;
struct floor_state;

/* One question to one master while the release is prepared (cmpdel.c);
 * kept in the state, so a reply hiredis delivers late still finds it. */
struct floor_ask {
    struct floor_state *fs;
    int master;
    enum floor_release kind; /* REL_SCRIPT: a SCRIPT LOAD */
    int guard;               /* ... of the raw-guard row's script */
};

struct floor_state {
    struct event_base *base;
    redisAsyncContext *ac[BENCH_MAX_MASTERS];
    int n;
    int connected;
    int conn_failed;
    int broken; /* a reply was NULL or unexpected */
    enum floor_phase phase;
    uint64_t phase_start;
    uint64_t deadline; /* current phase, monotonic µs */
    uint64_t t0;       /* current single/quorum op */
    uint64_t seq;      /* key counter */
    char key[96];
    int replies;                /* quorum phase: replies so far */
    int sel[BENCH_MAX_MASTERS]; /* quorum phase: the masters asked, */
    int n_sel;
    int need;        /* ... the reply that is timed, */
    struct hist *qh; /* ... and where it is recorded */
    struct hist set, del, quorum;
    /* capacity */
    struct chain *chains;
    int n_chains;
    int active_chains;
    int use_script; /* capacity: release by EVALSHA, not DEL */
    /* compare-then-delete (cmpdel.c) */
    char sha[48];                              /* of its script, from SCRIPT LOAD */
    char guard_sha[48];                        /* of raw-guard's (index entry too) */
    enum floor_release rel[BENCH_MAX_MASTERS]; /* each master's cheapest */
    struct floor_ask ask[BENCH_MAX_MASTERS][4];
    int loaded; /* answers to those questions so far */
    uint64_t cap_replies;
    struct event *tick;
};

struct capacity {
    double ops, cpu, mcores; /* replies/s, client cores, masters' cores */
};

/* raw.c */
extern const char floor_token[33];                     /* 32 bytes, like a real token */
struct floor_state *floor_open(char *why, size_t len); /* connected to all N, or NULL */
void floor_close(struct floor_state *fs);
void floor_set_phase(struct floor_state *fs, enum floor_phase ph, double seconds);
int floor_reply_ok(const redisReply *r);
int floor_send_set(struct floor_state *fs, int m, const char *key, redisCallbackFn *cb, void *pd);
int floor_send_del(struct floor_state *fs, int m, const char *key, redisCallbackFn *cb, void *pd);

/* quorum.c */
void floor_quorum_run(struct floor_state *fs, struct hist *h);

/* cmpdel.c */
int floor_release_prepare(struct floor_state *fs, char *why, size_t len);
int floor_send_release(struct floor_state *fs, int m, const char *key, int native,
                       redisCallbackFn *cb, void *pd);
int floor_send_release_guard(struct floor_state *fs, int m, const char *key, const char *index,
                             int native, redisCallbackFn *cb, void *pd);
int floor_release_deleted(const redisReply *r);
int floor_release_native(const struct floor_state *fs);
const char *floor_release_name(enum floor_release k);
void floor_release_describe(const struct floor_state *fs, int native, char *buf, size_t len);

/* capacity.c */
int floor_capacity(struct floor_state *fs, struct result *r, double d, struct capacity *raw,
                   struct capacity *script);

#endif
