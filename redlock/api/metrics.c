/* metrics.c - redlock_metrics_write(): a client's metrics as Prometheus text.
 *
 * Reads the counters core/metrics.c keeps (relaxed atomic loads, from any
 * thread) and writes the text exposition format 0.0.4: counters end in
 * _total, durations are _seconds histograms. Why the names and _count read
 * as they do, every metric and what to alert on: docs/operators.md.
 */
#include "core/types.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct out {
    char *buf;
    size_t cap;
    size_t len; /* what the whole text takes, also past cap */
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

static void head(out *o, const char *name, const char *type, const char *help)
{
    put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: backslash, double quote and newline escaped. */
static const char *esc(char *dst, size_t cap, const char *s)
{
    size_t o = 0;
    for (; *s && o + 3 < cap; s++) {
        if (*s == '\\' || *s == '"' || *s == '\n') {
            dst[o++] = '\\';
            dst[o++] = *s == '\n' ? 'n' : *s;
        } else {
            dst[o++] = *s;
        }
    }
    dst[o] = '\0';
    return dst;
}

/* A status label: "ok", or the REDLOCK_E* name without its E, lower case
 * ("conflict", "noquorum"). */
static const char *status_name(char *dst, size_t cap, int code)
{
    const char *n = redlock_err_name(code);
    size_t o = 0;
    if (code && n[0] == 'E')
        n++;
    for (; *n && o + 1 < cap; n++)
        dst[o++] = (char)(*n >= 'A' && *n <= 'Z' ? *n - 'A' + 'a' : *n);
    dst[o] = '\0';
    return dst;
}

/* The statuses a counter always shows, by -code: a rate or an increase
 * needs a series before its first event (an alert on a series that appears
 * at 1 would never fire). The others show once they happened. */
#define ALWAYS(code) (1u << -(code))

/* One counter by status. */
static void by_status(out *o, const char *name, const char *help, const uint64_t *cells,
                      unsigned always)
{
    char s[24];
    head(o, name, "counter", help);
    for (int i = 0; i < RL_MET_STATUSES; i++) {
        uint64_t v = rl_met_get(&cells[i]);
        if ((always & (1u << i)) || v)
            put(o, "%s{status=\"%s\"} %llu\n", name, status_name(s, sizeof(s), -i),
                (unsigned long long)v);
    }
}

/* One plain counter. */
static void counter(out *o, const char *name, const char *help, const uint64_t *cell)
{
    head(o, name, "counter", help);
    put(o, "%s %llu\n", name, (unsigned long long)rl_met_get(cell));
}

/* @us as seconds, "0.001", "2.5", "1800": digits only, whatever the
 * program's LC_NUMERIC (printf's %g would write "0,001" under a German
 * locale, which no scraper parses). */
static const char *seconds(char *dst, size_t cap, uint64_t us)
{
    int n = snprintf(dst, cap, "%llu.%06llu", (unsigned long long)(us / 1000000),
                     (unsigned long long)(us % 1000000));
    while (n > 0 && dst[n - 1] == '0')
        dst[--n] = '\0';
    if (n > 0 && dst[n - 1] == '.')
        dst[--n] = '\0';
    return dst;
}

static void hist(out *o, const char *name, const char *help, const rl_hist *h)
{
    char sec[48];
    head(o, name, "histogram", help);
    uint64_t cum = 0;
    for (int b = 0; b < RL_MET_BUCKETS; b++) {
        cum += rl_met_get(&h->bucket[b]);
        if (b < RL_MET_BUCKETS - 1)
            put(o, "%s_bucket{le=\"%s\"} %llu\n", name,
                seconds(sec, sizeof(sec), rl_met_bounds_us[b]), (unsigned long long)cum);
        else
            put(o, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    }
    put(o, "%s_sum %s\n%s_count %llu\n", name, seconds(sec, sizeof(sec), rl_met_get(&h->sum_us)),
        name, (unsigned long long)cum);
}

static const char *const event_names[RL_MET_EVENTS] = {
    "", "clock_jump", "clock_rate", "restart", "acl_channel",
};

static void masters(out *o, const redlock_client *c)
{
    char m[2 * RL_NAME_MAX + 1];
    char s[24];
    const rl_metrics *mt = &c->metrics;
    head(o, "redlock_master_votes_total", "counter",
         "Each master's answer in the deciding attempt of acquires, releases and extends, by "
         "kind (ok counted toward the quorum).");
    for (uint32_t i = 0; i < c->n; i++) {
        esc(m, sizeof(m), c->nodes[i].addr.name);
        for (int k = REDLOCK_VOTE_OK; k < RL_MET_VOTES; k++) {
            uint64_t v = rl_met_get(&mt->master[i].votes[k]);
            if (k == REDLOCK_VOTE_OK || k == REDLOCK_VOTE_DOWN || k == REDLOCK_VOTE_TIMEOUT ||
                k == REDLOCK_VOTE_EXCLUDED || v)
                put(o, "redlock_master_votes_total{master=\"%s\",vote=\"%s\"} %llu\n", m,
                    redlock_vote_kind_name(k), (unsigned long long)v);
        }
    }
    head(o, "redlock_master_sat_out_total", "counter",
         "Votes a master gave that did not count (excluded), by cause: untrusted (clock or "
         "restart guard), inval (one server behind two entries), or another REDLOCK_E* name.");
    for (uint32_t i = 0; i < c->n; i++) {
        esc(m, sizeof(m), c->nodes[i].addr.name);
        for (int k = 0; k < RL_MET_STATUSES; k++) {
            uint64_t v = rl_met_get(&mt->master[i].sat_out[k]);
            if (k == -REDLOCK_EUNTRUSTED || v)
                put(o, "redlock_master_sat_out_total{master=\"%s\",cause=\"%s\"} %llu\n", m,
                    status_name(s, sizeof(s), -k), (unsigned long long)v);
        }
    }
    head(o, "redlock_master_up", "gauge",
         "1 when the master's last answer (to an acquire, release, extend or ping) came, 0 when "
         "it was down or timed out; absent before its first answer.");
    for (uint32_t i = 0; i < c->n; i++) {
        uint64_t last = rl_met_get(&mt->master[i].up);
        if (!last)
            continue;
        int kind = (int)last - 1;
        put(o, "redlock_master_up{master=\"%s\"} %d\n", esc(m, sizeof(m), c->nodes[i].addr.name),
            kind != REDLOCK_VOTE_DOWN && kind != REDLOCK_VOTE_TIMEOUT);
    }
    head(o, "redlock_master_events_total", "counter",
         "The clock monitor's, the restart guard's and the wake-up channel's news about a "
         "master, by event.");
    for (uint32_t i = 0; i < c->n; i++) {
        esc(m, sizeof(m), c->nodes[i].addr.name);
        for (int e = 1; e < RL_MET_EVENTS; e++) {
            uint64_t v = rl_met_get(&mt->master[i].events[e]);
            if (e <= REDLOCK_EVENT_CLOCK_RATE || v)
                put(o, "redlock_master_events_total{master=\"%s\",event=\"%s\"} %llu\n", m,
                    event_names[e], (unsigned long long)v);
        }
    }
    head(o, "redlock_master_clock_excluded_total", "counter",
         "Clock verdicts that took the master out of quorums (clock_policy exclude).");
    for (uint32_t i = 0; i < c->n; i++)
        put(o, "redlock_master_clock_excluded_total{master=\"%s\"} %llu\n",
            esc(m, sizeof(m), c->nodes[i].addr.name),
            (unsigned long long)rl_met_get(&mt->master[i].excluded_events));
}

int redlock_metrics_write(redlock_client *c, char *buf, size_t cap, size_t *ret_len,
                          redlock_error *reterr)
{
    if (!c || !ret_len || (!buf && cap)) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1,
                  "metrics: client and ret_len must not be NULL, nor buf with cap > 0");
        return REDLOCK_EINVAL;
    }
    out o = { buf, cap, 0 };
    const rl_metrics *mt = &c->metrics;
    head(&o, "redlock_masters", "gauge", "Masters the client was given (N).");
    put(&o, "redlock_masters %u\n", c->n);
    head(&o, "redlock_quorum", "gauge", "Votes an acquire needs (N/2 + 1).");
    put(&o, "redlock_quorum %u\n", c->quorum);
    by_status(&o, "redlock_acquires_total", "Acquires completed, by status.", mt->acquires,
              ALWAYS(0) | ALWAYS(REDLOCK_ECONFLICT) | ALWAYS(REDLOCK_ENOQUORUM));
    hist(&o, "redlock_acquire_wait_seconds",
         "An acquire's call to its decision: retries and waiting in turn included.", &mt->wait);
    by_status(&o, "redlock_releases_total", "Releases completed, by status.", mt->releases,
              ALWAYS(0));
    hist(&o, "redlock_lock_hold_seconds", "A lease's grant to its release's decision.", &mt->hold);
    by_status(&o, "redlock_extends_total", "Extends completed (the watchdog's too), by status.",
              mt->extends, ALWAYS(0) | ALWAYS(REDLOCK_ENOQUORUM));
    by_status(&o, "redlock_leases_lost_total",
              "Leases the watchdog gave up (its lost callback), by status.", mt->lost,
              ALWAYS(REDLOCK_ENOQUORUM) | ALWAYS(REDLOCK_EEXPIRED));
    hist(&o, "redlock_lease_lost_validity_left_seconds",
         "The validity a lease had left when the watchdog gave it up (0: none).", &mt->lost_left);
    counter(&o, "redlock_local_handoffs_total",
            "Releases that passed the lock to a waiter of this client, and it was granted.",
            &mt->handoffs);
    counter(&o, "redlock_local_handoffs_failed_total",
            "Local hand-offs whose attempt lost: the release then went out as usual.",
            &mt->handoffs_failed);
    masters(&o, c);
    *ret_len = o.len;
    if (o.len >= cap) {
        if (buf && cap)
            buf[0] = '\0';
        if (!buf && !cap)
            return 0; /* the length was asked */
        rl_seterr(reterr, REDLOCK_EINVAL, -1,
                  "metrics: a buffer of %zu bytes is too small: %zu bytes needed (text and NUL)",
                  cap, o.len + 1);
        return REDLOCK_EINVAL;
    }
    if (reterr)
        *reterr = (redlock_error){ 0, -1, "" };
    return 0;
}
