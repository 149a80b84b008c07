/* spawn.c - run a helper program, collect its output (see spawn.h).
 *
 * One place for posix_spawn, the pipe and the reading loop that
 * cluster-up.sh, netns.sh and the history checker all need. The output is
 * read to EOF, which comes when the program exits: programs that leave
 * daemons behind (redis-server) give them their own stdio.
 */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

__attribute__((format(printf, 3, 4))) static void say(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;

    if (!out || !size)
        return;
    va_start(ap, fmt);
    vsnprintf(out, size, fmt, ap);
    va_end(ap);
}

/* Everything @fd gives until EOF, in a malloc'd buffer (NULL when out of
 * memory: the rest is drained all the same, so the writer never blocks). */
static char *read_all(int fd, size_t *ret_len)
{
    char *all = NULL;
    size_t used = 0, cap = 0;

    for (;;) {
        char sink[4096];

        if (all && used + sizeof(sink) > cap) {
            char *p = realloc(all, 2 * cap);

            if (p) {
                all = p;
                cap *= 2;
            }
        } else if (!all && used == 0 && (all = malloc(65536)) != NULL) {
            cap = 65536;
        }
        int keep = all && used + sizeof(sink) <= cap;
        ssize_t r = read(fd, keep ? all + used : sink, keep ? cap - used : sizeof(sink));

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (keep)
            used += (size_t)r;
    }
    *ret_len = used;
    return all;
}

/* @all into @out: all of it, or its head and tail around a cut mark. */
static void keep_ends(const char *all, size_t used, char *out, size_t size)
{
    static const char cut[] = "\n[...]\n";

    if (!out || !size)
        return;
    if (!all) {
        out[0] = '\0';
    } else if (used < size) {
        memcpy(out, all, used);
        out[used] = '\0';
    } else if (size <= sizeof(cut)) {
        memcpy(out, all, size - 1);
        out[size - 1] = '\0';
    } else {
        size_t head = (size - sizeof(cut)) / 2, tail = size - sizeof(cut) - head;

        memcpy(out, all, head);
        memcpy(out + head, cut, sizeof(cut) - 1);
        memcpy(out + head + sizeof(cut) - 1, all + used - tail, tail);
        out[size - 1] = '\0';
    }
    for (size_t n = strlen(out); n && (out[n - 1] == '\n' || out[n - 1] == '\r'); n--)
        out[n - 1] = '\0';
}

int tc_spawn(const char *const *argv, char *out, size_t size)
{
    posix_spawn_file_actions_t fa;
    int pipefd[2], status, rc;
    size_t used = 0;
    char *all;
    pid_t pid;

    say(out, size, "%s", "");
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        say(out, size, "%s: pipe: %s", argv[0], strerror(errno));
        return -1;
    }
    if (posix_spawn_file_actions_init(&fa) != 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        say(out, size, "%s: posix_spawn_file_actions_init failed", argv[0]);
        return -1;
    }
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDERR_FILENO);
    rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    if (rc != 0) {
        close(pipefd[0]);
        say(out, size, "cannot run %s: %s", argv[0], strerror(rc));
        return -1;
    }
    all = read_all(pipefd[0], &used);
    close(pipefd[0]);
    keep_ends(all, used, out, size);
    free(all);
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            say(out, size, "%s: waitpid: %s", argv[0], strerror(errno));
            return -1;
        }
    }
    if (!WIFEXITED(status)) {
        size_t n = out && size ? strlen(out) : 0;

        if (out && n + 48 < size)
            snprintf(out + n, size - n, "%s(%s killed by signal %d)", n ? "\n" : "", argv[0],
                     WTERMSIG(status));
        return -1;
    }
    return WEXITSTATUS(status);
}
