/* crfix.h - force-included into every test (tests/meson.build).
 *
 * Criterion 2.4.1 defines gt() in C as !(actual < reference), i.e. >=:
 * gt(u64, 5, 5) passes (Snaipe/Criterion#473, fixed after 2.4.1). Tests
 * here use gt() for strict claims (fencing tokens must increase), so the
 * operator is redefined to mean what it says. The assert machinery expands
 * this macro at each use, after this header has replaced it.
 */
#ifndef REDLOCK_TESTS_CRFIX_H
#define REDLOCK_TESTS_CRFIX_H

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#ifndef __cplusplus
#undef CRI_BINOP_T_GT
#define CRI_BINOP_T_GT(Tag, Actual, Ref) \
    (CRI_BINOP_LT_TAG(Tag, !, Actual, Ref) && CRI_BINOP_EQ_TAG(Tag, !, Actual, Ref))
#endif

#endif
