/* drift.h - the clock-drift margin that every acquire and extend subtracts.
 *
 * margin = a relative rate error of `factor` over the ttl plus 2 ms of the
 * masters' expiry granularity, taken from ttl - elapsed. Internal to
 * libredlock: nothing here is exported. Why rates, not synchronised clocks:
 * docs/memory-guard.md, "What we assume" and "What the margin covers".
 */
#ifndef REDLOCK_DRIFT_H
#define REDLOCK_DRIFT_H

#include <stdint.h>

#define DRIFT_FIXED_US 2000u /* the "+ 2 ms" of the margin */

/* margin = ceil(ttl * factor) + 2 ms, in µs. Rounded up: a bigger margin only
 * shortens validity, so rounding can never make a lease look safer than it
 * is. @factor must be in [0, 1); ttl up to UINT32_MAX cannot overflow. */
uint64_t drift_margin_us(uint32_t ttl_ms, double factor);

/* The same, in whole ms, rounded up. */
uint64_t drift_margin_ms(uint32_t ttl_ms, double factor);

/* validity = ttl - elapsed - margin, in µs; negative once lapsed. */
int64_t drift_validity_us(uint32_t ttl_ms, uint64_t elapsed_us, double factor);

/* The same in whole ms, rounded down (towards less validity): a lease is only
 * granted when this is > 0. */
int64_t drift_validity_ms(uint32_t ttl_ms, uint64_t elapsed_us, double factor);

#endif
