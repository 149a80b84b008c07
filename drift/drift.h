/* drift.h - the clock-drift margin that every acquire and extend subtracts.
 *
 * Redlock does not need synchronised clocks, only clocks whose rates differ
 * by a bounded factor. A lease of ttl ms on the masters' clocks is trusted
 * by the client for ttl - elapsed - margin ms on its own monotonic clock,
 * where the margin covers a relative rate error of `factor` plus 2 ms of
 * timer granularity on the masters (Redis expires keys with ms precision).
 * Internal to libredlock: nothing here is exported.
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
