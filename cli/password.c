/* password.c - the AUTH password from --password-file.
 *
 * A file, or a pipe (`--password-file <(pass show redis)`): never argv,
 * where ps(1) would show it. Opened non-blocking, so that a FIFO nobody
 * writes to, or a device, cannot hang a cron job: a pipe gets
 * PASSWORD_PIPE_WAIT_MS to deliver the password and its end, anything else
 * that is not a regular file is refused. Messages never include the content.
 */
#include "opts.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define PASSWORD_MAX 4096            /* bytes: Redis has no limit, a file this big is a mistake */
#define PASSWORD_PIPE_WAIT_MS 5000   /* a pipe's writer has this long to write and close */

/* Wait for @fd (a pipe) to have data or an end. Return: 1 if it may, 0 on
 * timeout. *@hup is set once the writer is known to have come and gone. */
static int pipe_wait(int fd, uint64_t deadline_us, int *hup)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
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

/* Read all of @fd into @buf (PASSWORD_MAX + 2 bytes). Return: the length,
 * or -1 after a message. */
static ssize_t read_all(int fd, const char *path, int is_pipe, char *buf)
{
    uint64_t deadline = cli_now_us() + (uint64_t)PASSWORD_PIPE_WAIT_MS * 1000u;
    size_t len = 0;
    int hup = 0;

    for (;;) {
        ssize_t r = read(fd, buf + len, PASSWORD_MAX + 1 - len);

        if (r > 0) {
            len += (size_t)r;
            if (len > PASSWORD_MAX) {
                cli_usage_error("--password-file '%s': longer than %d bytes: the file should "
                                "hold only the password", path, PASSWORD_MAX);
                return -1;
            }
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        /* A FIFO without a writer reads as an end at once: wait for a
         * writer to come, as a blocking open would, but not for ever. */
        if ((r == 0 && is_pipe && len == 0 && !hup) || (r < 0 && errno == EAGAIN)) {
            if (!pipe_wait(fd, deadline, &hup)) {
                cli_usage_error("--password-file '%s': a pipe that gave no password and no end "
                                "within %d s: write the password and close it, or give a "
                                "regular file", path, PASSWORD_PIPE_WAIT_MS / 1000);
                return -1;
            }
            continue;
        }
        if (r < 0) {
            cli_usage_error("--password-file '%s': %s: give a readable file", path,
                            strerror(errno));
            return -1;
        }
        return (ssize_t)len;
    }
}

int cli_read_password_file(struct cli_opts *o, const char *path)
{
    char *buf = NULL;
    struct stat st;
    ssize_t got;
    size_t len;
    int fd;

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        cli_usage_error("--password-file '%s': %s: give a readable file", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) < 0 || (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))) {
        cli_usage_error("--password-file '%s': not a regular file or a pipe: give a file "
                        "holding the password", path);
        goto fail;
    }
    buf = malloc(PASSWORD_MAX + 2);
    if (buf == NULL) {
        cli_usage_error("out of memory while reading --password-file");
        goto fail;
    }
    got = read_all(fd, path, S_ISFIFO(st.st_mode), buf);
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
        cli_usage_error("--password-file '%s' is empty: put the password in it, or drop the "
                        "option", path);
        goto fail;
    }
    if (strlen(buf) != len) {
        cli_usage_error("--password-file '%s' contains a NUL byte: the file should hold only "
                        "the password", path);
        goto fail;
    }
    if (S_ISREG(st.st_mode) && (st.st_mode & 0077) != 0)
        cli_warn("warning: password file '%s' is readable by others (chmod 600 '%s')", path,
                 path);
    o->password = buf;
    return 0;
fail:
    if (buf != NULL) {
        explicit_bzero(buf, PASSWORD_MAX + 2);
        free(buf);
    }
    if (fd >= 0)
        close(fd);
    return -1;
}
