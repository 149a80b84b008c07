/* conf.c - redlock-cli's configuration file: `key = value` lines whose keys
 * are the long option names, so that a fleet's connection settings (the
 * masters, the user, TLS files) live in one place instead of in every
 * crontab line. Reading only: opts-layers.c decides what a line may set,
 * and opts-parts.h says in which order the sources count (command line,
 * environment, --config or the default file).
 */
#include "conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define CONF_MAX_BYTES 65536 /* a file this big is not a config file */

static char *trim(char *s)
{
    char *end;

    while (*s == ' ' || *s == '\t')
        s++;
    end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        *--end = '\0';
    return s;
}

/* The whole file, NUL-terminated, into *@ret; @opt names it in messages.
 * A FIFO, a device or a directory is refused without blocking
 * (cli_open_input()): a config file is read whole, at once. Return: 0, 1
 * when it does not exist, -1 after a message. */
static int read_text(const char *opt, const char *path, char **ret)
{
    struct stat st;
    size_t n = 0;
    char *text;
    FILE *f;
    int fd = cli_open_input(opt, path, CLI_INPUT_MISSING_OK, &st);

    if (fd == CLI_INPUT_MISSING)
        return 1;
    if (fd < 0)
        return -1;
    if (st.st_size > CONF_MAX_BYTES) {
        cli_usage_error("%s '%s': larger than %d bytes: is it the right file?", opt, path,
                        CONF_MAX_BYTES);
        close(fd);
        return -1;
    }
    f = fdopen(fd, "r");
    text = f ? malloc((size_t)st.st_size + 1) : NULL;
    if (!text) {
        cli_usage_error("%s '%s': out of memory", opt, path);
        if (f)
            fclose(f);
        else
            close(fd);
        return -1;
    }
    n = fread(text, 1, (size_t)st.st_size, f);
    fclose(f);
    text[n] = '\0';
    if (strlen(text) != n) {
        cli_usage_error("%s '%s': holds a NUL byte: not a text file", opt, path);
        free(text);
        return -1;
    }
    *ret = text;
    return 0;
}

int cli_conf_load(const char *path, int required, struct cli_conf *c)
{
    unsigned line = 0;
    char *p, *next;
    int r;

    memset(c, 0, sizeof(*c));
    c->path = path;
    r = read_text(required ? "--config" : "config file", path, &c->text);
    if (r < 0)
        return -1;
    if (r > 0) {
        if (!required)
            return 0;
        cli_usage_error("--config '%s': no such file", path);
        return -1;
    }
    for (p = c->text; p; p = next) {
        char *eq, *key;

        line++;
        next = strchr(p, '\n');
        if (next)
            *next++ = '\0';
        key = trim(p);
        if (key[0] == '\0' || key[0] == '#')
            continue;
        eq = strchr(key, '=');
        if (!eq) {
            cli_usage_error("%s:%u: expected 'key = value' (a long option name, e.g. "
                            "masters = h1:6379,h2:6379,h3:6379)",
                            path, line);
            return -1;
        }
        *eq = '\0';
        if (c->n == CLI_CONF_MAX) {
            cli_usage_error("%s:%u: more than %d settings: one per option", path, line,
                            CLI_CONF_MAX);
            return -1;
        }
        c->e[c->n].key = trim(key);
        c->e[c->n].val = trim(eq + 1);
        c->e[c->n].line = line;
        c->n++;
    }
    return 0;
}

void cli_conf_free(struct cli_conf *c)
{
    if (c->text) {
        /* It may name a password file, or masters with passwords. */
        explicit_bzero(c->text, strlen(c->text));
        free(c->text);
    }
    memset(c, 0, sizeof(*c));
}

const char *cli_conf_default_path(char *buf, size_t size)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    struct stat st;

    /* The XDG base directory rule: $XDG_CONFIG_HOME, else ~/.config. */
    if (xdg && xdg[0] == '/')
        snprintf(buf, size, "%s/redlock/cli.conf", xdg);
    else if (home && home[0] == '/')
        snprintf(buf, size, "%s/.config/redlock/cli.conf", home);
    else
        buf[0] = '\0';
    if (buf[0] != '\0' && stat(buf, &st) == 0)
        return buf;
    return CLI_CONF_SYSTEM;
}
