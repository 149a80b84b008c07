/* drift.c - clock-drift margin and validity arithmetic.
 *
 * Kept apart from the quorum code so that the one formula every safety claim
 * rests on (docs/memory-guard.md, "Clocks") is computed in one place and
 * unit-tested on its own, at the edges: ttl 1 ms, ttl 2^32-1 ms, factor 0 and
 * near 1.
 */
#include "drift.h"

#include <math.h>

uint64_t drift_margin_us(uint32_t ttl_ms, double factor)
{
    /* ttl_ms * 1000 fits easily in a double's 53-bit mantissa (< 2^42), so
     * the product is exact before ceil(). */
    double rate_us = ceil((double)ttl_ms * 1000.0 * factor);
    if (!(rate_us > 0)) /* factor 0, or NaN defended against */
        rate_us = 0;
    return (uint64_t)rate_us + DRIFT_FIXED_US;
}

uint64_t drift_margin_ms(uint32_t ttl_ms, double factor)
{
    return (drift_margin_us(ttl_ms, factor) + 999) / 1000;
}

int64_t drift_validity_us(uint32_t ttl_ms, uint64_t elapsed_us, double factor)
{
    /* All terms are below 2^43 for any uint32 ttl and any elapsed below
     * ~100 days, so int64 arithmetic cannot overflow; clamp elapsed anyway so
     * a wild clock reading cannot wrap the result positive. */
    const uint64_t cap = (uint64_t)1 << 50;
    if (elapsed_us > cap)
        elapsed_us = cap;
    return (int64_t)ttl_ms * 1000 - (int64_t)elapsed_us - (int64_t)drift_margin_us(ttl_ms, factor);
}

int64_t drift_validity_ms(uint32_t ttl_ms, uint64_t elapsed_us, double factor)
{
    int64_t us = drift_validity_us(ttl_ms, elapsed_us, factor);
    /* floor division: -1 µs is -1 ms, not 0 ms */
    return us >= 0 ? us / 1000 : -((-us + 999) / 1000);
}
