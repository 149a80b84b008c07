/* test-drift.c - the drift margin and validity arithmetic, at its edges.
 *
 * Every safety claim rests on validity = ttl - elapsed - margin never being
 * larger than it should be: the margin rounds up, validity rounds down, and
 * nothing overflows for any uint32 ttl. Pure functions: no cluster needed.
 * Factors are powers of two where exact results are asserted, so the
 * expected values are exact in binary floating point too.
 */
#include <math.h>
#include <stdint.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include "drift.h"

/* ------------------------------------------------------------------------ */
/* Margin                                                                   */
/* ------------------------------------------------------------------------ */

struct margin_case {
    uint32_t ttl_ms;
    double factor;
    uint64_t margin_us; /* expected: ceil(ttl * 1000 * factor) + 2000 */
    uint64_t margin_ms; /* expected: margin_us / 1000, rounded up */
};

ParameterizedTestParameters(margin, matches_the_formula)
{
    static struct margin_case cases[] = {
        /* factor 0: only the fixed 2 ms, whatever the ttl */
        { 1, 0.0, 2000, 2 },
        { 10000, 0.0, 2000, 2 },
        { UINT32_MAX, 0.0, 2000, 2 },
        /* exact products */
        { 1000, 0.5, 502000, 502 },
        { 3, 0.5, 3500, 4 },
        { 8, 0.125, 3000, 3 },
        { 1, 0.25, 2250, 3 },
        /* fractions of a µs round up to a whole µs */
        { 1, 1.0 / 1024, 2001, 3 },      /* 0.977 µs -> 1 */
        { 1, 1.0 / (1 << 20), 2001, 3 }, /* 0.00095 µs -> 1 */
        { 3, 1.0 / 1024, 2003, 3 },      /* 2.93 µs -> 3 */
        /* the largest ttl: ttl * 1000 * factor is exact below 2^53 */
        { UINT32_MAX, 0.5, 2147483647500ull + 2000, 2147483650ull },
        { UINT32_MAX, 1.0 / 1024, 4194304000ull + 2000, 4194306ull }, /* 4194303999.02 */
    };
    return cr_make_param_array(struct margin_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct margin_case *c, margin, matches_the_formula)
{
    cr_expect(eq(u64, drift_margin_us(c->ttl_ms, c->factor), c->margin_us),
              "margin_us(ttl=%u, factor=%g)", c->ttl_ms, c->factor);
    cr_expect(eq(u64, drift_margin_ms(c->ttl_ms, c->factor), c->margin_ms),
              "margin_ms(ttl=%u, factor=%g)", c->ttl_ms, c->factor);
}

Test(margin, default_factor_is_one_percent_plus_two_ms)
{
    /* 0.01 is not exact in binary: allow the one µs that rounding up may add,
     * but never less than the exact margin. */
    uint64_t m = drift_margin_us(10000, 0.01);
    uint64_t ms = drift_margin_ms(10000, 0.01);

    cr_assert(ge(u64, m, 102000));
    cr_assert(le(u64, m, 102001));
    cr_assert(ms == 102 || ms == 103, "margin_ms(10000, 0.01) = %llu", (unsigned long long)ms);
    cr_assert(eq(u64, drift_margin_us(1, 0.01), 2010));
}

Test(margin, never_below_the_exact_value)
{
    /* Rounding may only make the margin bigger, for ttls across the range
     * and factors that are not exact in binary. */
    static const uint32_t ttls[] = { 1,    2,     7,        999,         1000,
                                     1001, 30000, 86400000, 2147483647u, UINT32_MAX };
    static const double factors[] = { 0.001, 0.01, 0.1, 0.3, 0.999 };

    for (size_t i = 0; i < sizeof(ttls) / sizeof(ttls[0]); i++) {
        for (size_t j = 0; j < sizeof(factors) / sizeof(factors[0]); j++) {
            long double exact = (long double)ttls[i] * 1000.0L * factors[j];
            uint64_t m = drift_margin_us(ttls[i], factors[j]);
            long double rate = (long double)(m - DRIFT_FIXED_US);

            /* 0.01 L of slack: the double product may sit a hair below
             * the exact decimal value; it may never be a whole µs below. */
            cr_expect(rate >= exact - 0.01L, "margin_us(%u, %g) = %llu below exact %.3Lf", ttls[i],
                      factors[j], (unsigned long long)m, exact);
            cr_expect(rate <= ceill(exact) + 1, "margin_us(%u, %g) = %llu far above exact %.3Lf",
                      ttls[i], factors[j], (unsigned long long)m, exact);
            cr_expect(ge(u64, drift_margin_ms(ttls[i], factors[j]) * 1000, m),
                      "margin_ms must round up");
        }
    }
}

Test(margin, largest_ttl_and_factor_do_not_overflow)
{
    uint64_t m = drift_margin_us(UINT32_MAX, 0.999999);

    /* ~4.29e12 µs: well inside 64 bits, and bigger than the ttl * 0.99 */
    cr_assert(gt(u64, m, (uint64_t)UINT32_MAX * 990));
    cr_assert(lt(u64, m, (uint64_t)UINT32_MAX * 1000 + DRIFT_FIXED_US));
    cr_assert(lt(i64, drift_validity_us(UINT32_MAX, 0, 0.999999), 4294968ll));
    cr_assert(gt(i64, drift_validity_us(UINT32_MAX, 0, 0.999999), 0));
}

/* ------------------------------------------------------------------------ */
/* Validity                                                                 */
/* ------------------------------------------------------------------------ */

Test(validity, is_ttl_minus_elapsed_minus_margin)
{
    cr_assert(eq(i64, drift_validity_us(10, 0, 0.0), 8000));
    cr_assert(eq(i64, drift_validity_us(10, 3000, 0.0), 5000));
    cr_assert(eq(i64, drift_validity_us(1000, 100000, 0.5), 1000000 - 100000 - 502000));
    cr_assert(eq(i64, drift_validity_us(UINT32_MAX, 0, 0.0), (int64_t)UINT32_MAX * 1000 - 2000));
}

Test(validity, ttl_one_is_never_valid)
{
    /* 1 ms of ttl is less than the fixed 2 ms margin. */
    cr_assert(lt(i64, drift_validity_us(1, 0, 0.0), 0));
    cr_assert(le(i64, drift_validity_ms(1, 0, 0.0), 0));
    cr_assert(le(i64, drift_validity_ms(2, 0, 0.0), 0));
    cr_assert(le(i64, drift_validity_ms(3, 0, 0.0), 1));
}

struct round_case {
    uint64_t elapsed_us; /* with ttl 10 ms, factor 0: validity_us = 8000 - elapsed */
    int64_t validity_ms; /* floor(validity_us / 1000) */
};

ParameterizedTestParameters(validity, rounds_down_towards_less_validity)
{
    static struct round_case cases[] = {
        { 0, 8 },     /* 8000 µs */
        { 1, 7 },     /* 7999 µs */
        { 6999, 1 },  /* 1001 µs */
        { 7000, 1 },  /* 1000 µs */
        { 7001, 0 },  /* 999 µs: not a whole ms */
        { 7999, 0 },  /* 1 µs */
        { 8000, 0 },  /* 0 µs */
        { 8001, -1 }, /* -1 µs: floor, not truncation towards 0 */
        { 8999, -1 }, /* -999 µs */
        { 9000, -1 }, /* -1000 µs */
        { 9001, -2 }, /* -1001 µs */
        { 1000000, -992 },
    };
    return cr_make_param_array(struct round_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct round_case *c, validity, rounds_down_towards_less_validity)
{
    cr_assert(eq(i64, drift_validity_us(10, c->elapsed_us, 0.0), 8000 - (int64_t)c->elapsed_us));
    cr_assert(eq(i64, drift_validity_ms(10, c->elapsed_us, 0.0), c->validity_ms),
              "validity_ms(ttl=10, elapsed=%llu us)", (unsigned long long)c->elapsed_us);
}

Test(validity, ms_positive_iff_granted)
{
    /* A lease is granted when validity_ms > 0. That must happen exactly when
     * at least one whole ms of validity is left, and never when validity_us
     * is zero or negative. Swept around every boundary for a few ttls. */
    static const uint32_t ttls[] = { 1, 2, 3, 10, 1000, 30000 };
    static const double factors[] = { 0.0, 0.01, 0.5 };

    for (size_t i = 0; i < sizeof(ttls) / sizeof(ttls[0]); i++) {
        for (size_t j = 0; j < sizeof(factors) / sizeof(factors[0]); j++) {
            uint32_t ttl = ttls[i];
            int64_t full = drift_validity_us(ttl, 0, factors[j]);
            int64_t prev_ms = INT64_MIN;

            for (int64_t back = -1500; back <= 1500; back++) {
                /* elapsed chosen so validity_us runs over -1500..1500 */
                int64_t e = full - back;
                uint64_t elapsed;
                int64_t us, ms;

                if (e < 0)
                    continue;
                elapsed = (uint64_t)e;
                us = drift_validity_us(ttl, elapsed, factors[j]);
                ms = drift_validity_ms(ttl, elapsed, factors[j]);
                cr_assert(eq(i64, us, back));
                cr_assert(eq(int, ms > 0, us >= 1000),
                          "ttl %u factor %g elapsed %llu: us %lld ms %lld", ttl, factors[j],
                          (unsigned long long)elapsed, (long long)us, (long long)ms);
                cr_assert(le(i64, ms * 1000, us), "ms must not exceed us");
                cr_assert(gt(i64, ms * 1000 + 1000, us), "ms is the floor of us");
                /* back grows, so elapsed shrinks: validity may only grow */
                cr_assert(ge(i64, ms, prev_ms), "validity must not grow with elapsed");
                prev_ms = ms;
            }
        }
    }
}

Test(validity, huge_elapsed_stays_negative)
{
    /* A wild clock reading must not wrap the result positive. */
    cr_assert(lt(i64, drift_validity_us(UINT32_MAX, UINT64_MAX, 0.0), 0));
    cr_assert(lt(i64, drift_validity_ms(UINT32_MAX, UINT64_MAX, 0.0), 0));
    cr_assert(lt(i64, drift_validity_us(1, (uint64_t)INT64_MAX + 1, 0.01), 0));
    cr_assert(lt(i64, drift_validity_ms(UINT32_MAX, (uint64_t)1 << 63, 0.5), 0));
}

Test(validity, elapsed_equal_to_ttl_is_expired)
{
    cr_assert(lt(i64, drift_validity_us(1000, 1000000, 0.0), 0));
    cr_assert(lt(i64, drift_validity_ms(1000, 1000000, 0.01), 0));
    cr_assert(lt(i64, drift_validity_ms(UINT32_MAX, (uint64_t)UINT32_MAX * 1000, 0.0), 0));
}
