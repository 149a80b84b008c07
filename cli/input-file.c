/* input-file.c - how redlock-cli opens a file it is told to read (the config
 * file, --password-file, --masters-file) and checks the TLS files the library
 * will read: never blocking, and never opening what is not a file.
 *
 * stat() first, refused unopened unless a regular file (or a pipe), then an
 * O_NONBLOCK open and an fstat() that it is what was looked at. Why:
 * docs/errors-cli.md, "How the CLI reads its settings, files and secrets".
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m)
{
    if (S_ISREG(m))
        return "a regular file";
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a file";
}

static int acceptable(mode_t m, unsigned flags)
{
    return S_ISREG(m) || ((flags & CLI_INPUT_PIPE_OK) && S_ISFIFO(m));
}

/* One line: what @path is (@m), and what @opt takes (@flags). */
static void refuse_kind(const char *opt, const char *path, mode_t m, unsigned flags)
{
    cli_usage_error("%s '%s' is %s: give %s", opt, path, kind_of(m),
                    flags & CLI_INPUT_DIR       ? "a directory"
                    : flags & CLI_INPUT_PIPE_OK ? "a regular file or a pipe"
                                                : "a regular file");
}

int cli_open_input(const char *opt, const char *path, unsigned flags, struct stat *ret_st)
{
    struct stat before, st;
    int fd;

    if (stat(path, &before) < 0) {
        if (errno == ENOENT && (flags & CLI_INPUT_MISSING_OK))
            return CLI_INPUT_MISSING;
        cli_usage_error("%s '%s': %s: give a readable file", opt, path, strerror(errno));
        return -1;
    }
    if (!acceptable(before.st_mode, flags)) {
        refuse_kind(opt, path, before.st_mode, flags);
        return -1;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &st) < 0) {
        cli_usage_error("%s '%s': %s: give a readable file", opt, path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (st.st_dev != before.st_dev || st.st_ino != before.st_ino ||
        !acceptable(st.st_mode, flags)) {
        cli_usage_error("%s '%s': replaced while it was being opened: try again", opt, path);
        close(fd);
        return -1;
    }
    *ret_st = st;
    return fd;
}

int cli_check_input_kind(const char *opt, const char *path, unsigned flags)
{
    struct stat st;

    /* What does not exist or cannot be read the library says, in its own
     * words (it knows the effective user's rights); only the kind is ours. */
    if (!path || stat(path, &st) < 0)
        return 0;
    if (flags & CLI_INPUT_DIR ? S_ISDIR(st.st_mode) : acceptable(st.st_mode, flags))
        return 0;
    refuse_kind(opt, path, st.st_mode, flags);
    return -1;
}
