/* transport-format.c - a command in RESP, in one pass and at most one allocation.
 *
 * transport.c formats every command here and hands hiredis the bytes
 * (redisAsyncFormattedCommand): no hiredis, no connection in this file.
 * Why not hiredis' formatter: docs/transport.md, "Formatting".
 */
#include "transport/transport-format.h"

#include <stdlib.h>
#include <string.h>

/* "*N\r\n" or "$N\r\n" at @p; returns the end. */
static char *resp_head(char *p, char kind, size_t n)
{
    char digits[24];
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
    size_t total = 16;
    for (int i = 0; i < argc; i++)
        total += argvlen[i] + 24;
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
