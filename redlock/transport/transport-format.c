/* transport-format.c - a command in RESP, in one pass and at most one allocation.
 *
 * transport.c formats every command here and hands hiredis the bytes
 * (redisAsyncFormattedCommand): no hiredis, no connection in this file.
 * Why not hiredis' formatter: docs/transport.md, "Formatting".
 */
#include "transport/transport-format.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A header, "*N\r\n" or "$N\r\n", is its kind, N in decimal and CRLF. N
 * is a size_t (a count, or an argument's length), so it has at most the
 * 20 digits of 2^64 - 1: a header takes at most RESP_HEAD_MAX bytes. */
#define RESP_DIGITS_MAX 20 /* 18446744073709551615 */
#define RESP_HEAD_MAX (1 + RESP_DIGITS_MAX + 2)
_Static_assert(SIZE_MAX <= UINT64_MAX, "a size_t has at most RESP_DIGITS_MAX digits");

/* "*N\r\n" or "$N\r\n" at @p; returns the end. */
static char *resp_head(char *p, char kind, size_t n)
{
    char digits[RESP_DIGITS_MAX];
    int k = 0;
    do {
        digits[k++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    *p++ = kind;
    while (k)
        *p++ = digits[--k];
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

char *rl_resp_format(int argc, const char **argv, const size_t *argvlen, char *buf, size_t cap,
                     size_t *len, char **heap)
{
    /* What is written below, at most: the array's header, then per
     * argument its header, its bytes and CRLF. */
    size_t total = RESP_HEAD_MAX;
    for (int i = 0; i < argc; i++)
        total += RESP_HEAD_MAX + argvlen[i] + 2;
    *heap = NULL;
    char *out = buf;
    if (total > cap && !(out = *heap = malloc(total)))
        return NULL;
    char *p = resp_head(out, '*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        p = resp_head(p, '$', argvlen[i]);
        memcpy(p, argv[i], argvlen[i]);
        p += argvlen[i];
        *p++ = '\r';
        *p++ = '\n';
    }
    *len = (size_t)(p - out);
    return out;
}
