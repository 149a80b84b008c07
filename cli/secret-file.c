/* secret-file.c - files that hold secrets: the AUTH password
 * (--password-file) and a masters list that may carry passwords
 * (--masters-file).
 *
 * A file or a pipe, never argv; opened non-blocking by cli_open_input(); a
 * pipe gets SECRET_PIPE_WAIT_MS to deliver; messages never include the content.
 * Why: docs/errors-cli.md, "How the CLI reads its settings, files and secrets".
 */
#include "opts.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define SECRET_PIPE_WAIT_MS 5000 /* a pipe's writer has this long to write and close */

/* Wait for @fd (a pipe) to have data or an end. Return: 1 if it may, 0 on
 * timeout. *@hup is set once the writer is known to have come and gone. */
static int pipe_wait(int fd, uint64_t deadline_us, int *hup)
{
    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        uint64_t now = cli_now_us();
        int r;

        if (now >= deadline_us)
            return 0;
        r = poll(&p, 1, (int)((deadline_us - now + 999) / 1000));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        if ((p.revents & POLLHUP) && !(p.revents & POLLIN))
            *hup = 1;
        return 1;
    }
}

/* What is being read, for messages. */
struct secret_file {
    const char *opt; /* "--password-file" */
    const char *path;
    size_t max; /* bytes */
    int is_pipe;
};

/* Read all of @fd into @buf (f->max + 2 bytes). Return: the length, or -1
 * after a message. */
static ssize_t read_all(int fd, const struct secret_file *f, char *buf)
{
    uint64_t deadline = cli_now_us() + (uint64_t)SECRET_PIPE_WAIT_MS * 1000u;
    size_t len = 0;
    int hup = 0;

    for (;;) {
        ssize_t r = read(fd, buf + len, f->max + 1 - len);

        if (r > 0) {
            len += (size_t)r;
            if (len > f->max) {
                cli_usage_error("%s '%s': longer than %zu bytes: is it the right file?", f->opt,
                                f->path, f->max);
                return -1;
            }
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        /* A FIFO without a writer reads as an end at once: wait for a
         * writer to come, as a blocking open would, but not for ever. */
        if ((r == 0 && f->is_pipe && len == 0 && !hup) || (r < 0 && errno == EAGAIN)) {
            if (!pipe_wait(fd, deadline, &hup)) {
                cli_usage_error("%s '%s': a pipe that gave nothing and no end within %d s: "
                                "write to it and close it, or give a regular file",
                                f->opt, f->path, SECRET_PIPE_WAIT_MS / 1000);
                return -1;
            }
            continue;
        }
        if (r < 0) {
            cli_usage_error("%s '%s': %s: give a readable file", f->opt, f->path, strerror(errno));
            return -1;
        }
        return (ssize_t)len;
    }
}

int cli_read_secret_file(const char *opt, const char *path, size_t max, char **ret, int *ret_shared)
{
    struct secret_file f = { opt, path, max, 0 };
    char *buf = NULL;
    struct stat st;
    ssize_t got;
    size_t len;
    int fd;

    fd = cli_open_input(opt, path, CLI_INPUT_PIPE_OK, &st);
    if (fd < 0)
        return -1;
    f.is_pipe = S_ISFIFO(st.st_mode);
    buf = malloc(max + 2);
    if (!buf) {
        cli_usage_error("out of memory while reading %s", opt);
        goto fail;
    }
    got = read_all(fd, &f, buf);
    if (got < 0)
        goto fail;
    close(fd);
    fd = -1;
    len = (size_t)got;
    buf[len] = '\0';
    if (len > 0 && buf[len - 1] == '\n')
        buf[--len] = '\0';
    if (len > 0 && buf[len - 1] == '\r')
        buf[--len] = '\0';
    if (len == 0) {
        cli_usage_error("%s '%s' is empty: fill it, or drop the option", opt, path);
        goto fail;
    }
    if (strlen(buf) != len) {
        cli_usage_error("%s '%s' contains a NUL byte: is it the right file?", opt, path);
        goto fail;
    }
    *ret_shared = S_ISREG(st.st_mode) && (st.st_mode & 0077) != 0;
    *ret = buf;
    return 0;
fail:
    if (buf) {
        explicit_bzero(buf, max + 2);
        free(buf);
    }
    if (fd >= 0)
        close(fd);
    return -1;
}

void cli_warn_shared_secret(const char *opt, const char *path)
{
    cli_warn("warning: %s '%s' is readable by others (chmod 600 '%s')", opt, path, path);
}
