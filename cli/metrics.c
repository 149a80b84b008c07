/* metrics.c - the library's metrics for redlock-cli: `metrics` prints them,
 * `run --metrics-file PATH` keeps PATH up to date for node_exporter's
 * textfile collector (written at the start, after each extension and the
 * loss, and at the end; docs/operators.md).
 */
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The text in a buffer of our own: asked for its length, then written with
 * room for what counters add in between. Return: NULL after a line on
 * stderr (@what says for which command). */
static char *metrics_text(redlock_client *c, size_t *len, const char *what)
{
    redlock_error err;
    size_t need = 0;

    memset(&err, 0, sizeof(err));
    if (redlock_metrics_write(c, NULL, 0, &need, &err) != 0) {
        cli_error("%s: %s", what, err.msg);
        return NULL;
    }
    for (int tries = 0; tries < 3; tries++) {
        size_t cap = need + 4096;
        char *buf = malloc(cap);

        if (!buf) {
            cli_error("%s: out of memory", what);
            return NULL;
        }
        if (redlock_metrics_write(c, buf, cap, len, &err) == 0)
            return buf;
        free(buf);
        need = *len;
    }
    cli_error("%s: %s", what, err.msg);
    return NULL;
}

int cli_metrics_print(redlock_client *c, FILE *f)
{
    size_t len;
    char *text = metrics_text(c, &len, "metrics");

    if (!text)
        return -1;
    fwrite(text, 1, len, f);
    free(text);
    return 0;
}

int cli_metrics_file(redlock_client *c, const char *path, int *warned)
{
    size_t len;
    char *text = metrics_text(c, &len, "run: --metrics-file");
    char *tmp = NULL;
    const char *step = "cannot write";
    FILE *f = NULL;
    int e = 0;

    if (!text)
        return -1;
    if (asprintf(&tmp, "%s.tmp", path) < 0) {
        tmp = NULL;
        e = ENOMEM;
        goto fail;
    }
    /* Never through a link another user planted, nor over a file that is
     * not ours: a stale .tmp of our own (a run killed mid-write) is
     * replaced, anything else is refused. Not inherited by CMD. */
    if (unlink(tmp) != 0 && errno != ENOENT) {
        e = errno;
        goto fail;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || !(f = fdopen(fd, "w"))) {
        e = errno;
        if (fd >= 0)
            close(fd);
        goto fail;
    }
    errno = 0;
    if (fwrite(text, 1, len, f) != len || fflush(f) != 0)
        e = errno ? errno : EIO;
    if (fclose(f) != 0 && !e)
        e = errno;
    if (e) {
        unlink(tmp);
        goto fail;
    }
    if (rename(tmp, path) != 0) {
        e = errno;
        step = "cannot rename its .tmp over";
        unlink(tmp);
        goto fail;
    }
    free(tmp);
    free(text);
    return 0;
fail:
    if ((*warned)++ == 0)
        cli_warn("warning: run: --metrics-file %s: %s it: %s; the lock and CMD go on without "
                 "metrics",
                 path, step, strerror(e));
    free(tmp);
    free(text);
    return -1;
}
