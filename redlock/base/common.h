/* common.h - what every file of libredlock uses: clocks, errors, tokens.
 *
 * Leaf code only (error.c, token.c): nothing here knows a client, a master
 * or an operation, so any file may include it without tying itself to one.
 */
#ifndef REDLOCK_COMMON_H
#define REDLOCK_COMMON_H

#include "redlock.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- time (token.c) ------------------------------------------------------- */

/* µs on CLOCK_MONOTONIC: the type says which clock a value came from. */
typedef uint64_t rl_monotime;
rl_monotime rl_now_us(void);
/* µs on CLOCK_REALTIME: only for offsets shown to operators, never for leases. */
int64_t rl_realtime_us(void);

/* ---- errors (error.c) ----------------------------------------------------- */

/* Fill @e (NULL is fine) with @code, @master and a one-line message. */
void rl_seterr(redlock_error *e, int code, int master, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Copy @src into @dst (@size bytes with the NUL) on one line: newlines and
 * tabs become spaces. What does not fit is cut so that a reader can tell:
 * between words if one ends near the cut, never inside a UTF-8 character,
 * and ending in "…" (U+2026). Returns @dst. */
char *rl_fit(char *dst, size_t size, const char *src);

/* Copy @src, a message made of clauses ("head; master A: why; master B:
 * why"), into @dst keeping only whole clauses: those left out are counted
 * in a " (+N more)" at the end (added to one @src already ends with). Only
 * when the first clause alone does not fit is it cut, as rl_fit() cuts.
 * Returns @dst. */
char *rl_fit_clauses(char *dst, size_t size, const char *src);

/* @s as a message quotes it: at most @n bytes of it, cut as rl_fit() cuts.
 * The copy lives until the end of the enclosing block. */
#define RL_QUOTE(s, n) rl_fit((char[(n) + 4]){ 0 }, (n) + 4, (s))

/* Classify a master's error reply ("WRONGTYPE ...", "NOAUTH ...") into REDLOCK_E*. */
int rl_classify_error_reply(const char *str, size_t len);
bool rl_reply_is_acl_denial(const char *str, size_t len); /* NOPERM and kin */

/* Is this error reply one that passes by itself (LOADING, BUSY, TRYAGAIN,
 * MASTERDOWN): the master is there but cannot answer for a while? */
bool rl_error_reply_transient(const char *str, size_t len);

/* ---- logging (log.c) ------------------------------------------------------ */

void rl_log_emit(const redlock_config *cfg, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Checks the level before formatting anything, like serverLog. */
#define rl_log(cfg, level, ...)                           \
    do {                                                  \
        if ((cfg)->log_fn && (level) >= (cfg)->log_level) \
            rl_log_emit((cfg), (level), __VA_ARGS__);     \
    } while (0)

/* ---- the memory guard's time bound ------------------------------------------ */

/* A quorum counts only if it was reached within this long of its attempt's
 * start (acquire.c, extend.c); a client settles a reborn master only from
 * reports taken at least this long (with both clocks' drift allowance) after
 * it saw the master pending (memory.c). So every attempt that may have
 * counted the master's vote from before its rebirth has decided, and its
 * lease sits on the rest of its quorum, when the fleet is measured
 * (docs/memory-guard.md, "How long a reborn master sits out": a lease still
 * being granted). */
#define RL_QUORUM_MAX_MS 500

/* ---- tokens and randomness (token.c) ---------------------------------------- */

#define RL_TOKEN_BYTES 16                 /* 128 bits */
#define RL_TOKEN_LEN (RL_TOKEN_BYTES * 2) /* hex */
int rl_token_new(char out[RL_TOKEN_LEN + 1]);
/* Is the value @v (@len bytes, a lock key's) @token's lease: 0 the token,
 * 1 the token marked for its waiters (a trailing "\2", script.c), -1 neither
 * (NULL @v: -1). */
int rl_token_match(const char *v, size_t len, const char *token);
uint64_t rl_random_u64(void);

#endif
