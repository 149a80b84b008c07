/* conf.h - the configuration file's lines (conf.c), which opts-layers.c
 * applies. */
#ifndef REDLOCK_CLI_CONF_H
#define REDLOCK_CLI_CONF_H

#include <stddef.h>

#define CLI_CONF_MAX 64                         /* settings in one file */
#define CLI_CONF_SYSTEM "/etc/redlock/cli.conf" /* the default after the user's */

struct cli_conf {
    const char *path; /* as given, for messages */
    char *text;       /* owned: the file, cut into the strings below */
    struct {
        const char *key, *val; /* trimmed, into text */
        unsigned line;         /* 1-based, for messages */
    } e[CLI_CONF_MAX];
    size_t n;
};

/* Read @path into @c: blank lines and lines starting with '#' are skipped,
 * every other line is `key = value` (spaces around both trimmed). A file
 * that does not exist is empty unless @required. Return: 0, or -1 after a
 * one-line message. Call cli_conf_free() on any outcome. */
int cli_conf_load(const char *path, int required, struct cli_conf *c);
void cli_conf_free(struct cli_conf *c);

/* The default file: $XDG_CONFIG_HOME/redlock/cli.conf (~/.config/... when
 * unset) if it exists, else CLI_CONF_SYSTEM. @buf holds the first. */
const char *cli_conf_default_path(char *buf, size_t size);

#endif
