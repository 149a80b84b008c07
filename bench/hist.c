/* hist.c - log-linear latency histogram: constant-time record, percentiles
 * by one walk over the buckets. See hist.h for the bucket layout.
 */
#include "hist.h"

#include <string.h>

static unsigned hist_index(uint64_t v)
{
    unsigned msb, shift, idx;

    if (v < (2u << HIST_SUB_BITS))
        return (unsigned)v;
    msb = 63u - (unsigned)__builtin_clzll(v);
    shift = msb - HIST_SUB_BITS;
    idx = ((shift + 1) << HIST_SUB_BITS) + (unsigned)(v >> shift) - (1u << HIST_SUB_BITS);
    return idx < HIST_BUCKETS ? idx : HIST_BUCKETS - 1;
}

/* Highest value that falls into bucket @idx. */
static uint64_t hist_bucket_top(unsigned idx)
{
    unsigned shift;
    uint64_t sub;

    if (idx < (2u << HIST_SUB_BITS))
        return idx;
    shift = (idx >> HIST_SUB_BITS) - 1;
    sub = (idx & ((1u << HIST_SUB_BITS) - 1)) + (1u << HIST_SUB_BITS);
    return ((sub + 1) << shift) - 1;
}

void hist_init(struct hist *h)
{
    memset(h, 0, sizeof(*h));
    h->min = UINT64_MAX;
}

void hist_add(struct hist *h, uint64_t v)
{
    h->b[hist_index(v)]++;
    h->count++;
    h->sum += v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
    unsigned i;

    if (src->count == 0)
        return;
    for (i = 0; i < HIST_BUCKETS; i++)
        dst->b[i] += src->b[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t hist_pct(const struct hist *h, double q)
{
    uint64_t rank, seen = 0, top;
    unsigned i;

    if (h->count == 0)
        return 0;
    if (q >= 1.0)
        return h->max;
    /* rank is 1-based: the smallest value with at least q*count values at or
     * below it. */
    rank = (uint64_t)(q * (double)h->count);
    if ((double)rank < q * (double)h->count || rank == 0)
        rank++;
    for (i = 0; i < HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            top = hist_bucket_top(i);
            if (top > h->max)
                top = h->max;
            if (top < h->min)
                top = h->min;
            return top;
        }
    }
    return h->max;
}

double hist_mean(const struct hist *h)
{
    return h->count ? (double)h->sum / (double)h->count : 0.0;
}
