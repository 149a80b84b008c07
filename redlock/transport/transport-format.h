/* transport-format.h - a command in RESP, written by us (transport-format.c).
 *
 * For transport.c alone, which hands the bytes to hiredis
 * (redisAsyncFormattedCommand). Why ours: docs/transport.md, "Formatting".
 */
#ifndef REDLOCK_TRANSPORT_FORMAT_H
#define REDLOCK_TRANSPORT_FORMAT_H

#include <stddef.h>

/* The command in RESP, into @buf if it fits in @cap bytes, else into a new
 * allocation (*@heap, freed by the caller). NULL: out of memory. Ours
 * rather than hiredis' formatter: that one grows an sds argument by
 * argument (sdscatfmt, reallocs), the largest cost of a send on the
 * client (perf, the bench's throughput row). */
char *rl_resp_format(int argc, const char **argv, const size_t *argvlen, char *buf, size_t cap,
                     size_t *len, char **heap);

#endif
