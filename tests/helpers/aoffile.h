/* aoffile.h - a master's append-only file, cut as a machine crash cuts it.
 *
 * With appendfsync everysec (or no), a machine that stops loses what the
 * AOF had not synced yet: up to the last second or two of writes. SIGKILL
 * alone loses nothing (the kernel still writes the page cache out), so the
 * tests that need that crash kill the master and cut its AOF by hand: at
 * a size read before the lost writes, or at the first write that carries a
 * given token. Redis 7 keeps the AOF as a directory: a base file and
 * incremental files, named by appendonlydir/<name>.manifest; the writes
 * since the last rewrite go to the last incremental file, which is the one
 * read and cut here. For a master that is killed (or, for the size, alive).
 * Helpers fail the running test when they cannot do their job.
 */
#ifndef TC_AOFFILE_H
#define TC_AOFFILE_H

#include <stddef.h>

/* The path of master @m's current incremental AOF file, from its manifest,
 * into @buf. Return: @buf. */
const char *tc_aof_incr_path(int m, char *buf, size_t size);

/* Its size in bytes now. */
long long tc_aof_incr_size(int m);

/* Cut it to @size bytes: every write after that point is lost. */
void tc_aof_cut(int m, long long size);

/* Cut it at the start of the first command that carries @needle (a
 * token): that write and every one after it are lost. */
void tc_aof_cut_at(int m, const char *needle);

#endif
