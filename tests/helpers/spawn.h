/* spawn.h - run a helper program and keep what it says.
 *
 * The tests drive scripts (cluster-up.sh, netns.sh) and the history checker
 * as child processes. What they print is quoted in failure messages, never
 * passed through: criterion's TAP mode drops what a test worker writes, and
 * the TAP stream on stdout must carry nothing else. Free of criterion, so a
 * forked child or a plain program can use it.
 */
#ifndef TC_SPAWN_H
#define TC_SPAWN_H

#include <stddef.h>

/*
 * tc_spawn() - Run @argv (argv[0] searched in PATH) to its end
 * @argv:      NULL-terminated
 * @out, @size: receives stdout and stderr together, NUL-terminated, trailing
 *             newlines trimmed; when it does not fit, its head and its tail
 *             (the first complaint and the last words) around a "[...]"
 *
 * The child gets the caller's environment; its stdin is the caller's.
 * Return: the exit status (0..255), or -1 if it could not be run or was
 * killed by a signal (@out then says which).
 */
int tc_spawn(const char *const *argv, char *out, size_t size);

#endif
