/* hist.h - fixed-size log-linear latency histogram (the HDR idea, small).
 *
 * Values are µs. Below 256 every value has its own bucket; above, each power
 * of two is split into 128 buckets, so a percentile is off by < 0.8 %. The
 * struct is plain data with no pointers: it can live in a MAP_SHARED page
 * written by a forked child and be merged by the parent.
 */
#ifndef BENCH_HIST_H
#define BENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 7
#define HIST_BUCKETS 4096 /* covers values up to 2^37 µs */

struct hist {
    uint64_t count;
    uint64_t sum; /* µs */
    uint64_t min; /* µs; UINT64_MAX while empty */
    uint64_t max; /* µs */
    uint64_t b[HIST_BUCKETS];
};

void hist_init(struct hist *h);
void hist_add(struct hist *h, uint64_t v);
void hist_merge(struct hist *dst, const struct hist *src);
/* The value at quantile @q (0..1): the highest value of the bucket holding
 * it, capped by the recorded max. 0 when empty. */
uint64_t hist_pct(const struct hist *h, double q);
double hist_mean(const struct hist *h);

#endif
