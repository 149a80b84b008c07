/* masters.c - redlock-cli's list of masters: "host:port,[v6]:port,...".
 *
 * Checked here so that a typo in a cron job's --masters is one line naming
 * the entry, before any connection is tried. The library checks the list
 * again (and resolves it); once it exports a check of its own, this file
 * goes.
 */
#include "opts.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

/* Append @len bytes of @s to the growing string *@buf. */
static int buf_append(char **buf, size_t *used, size_t *cap, const char *s, size_t len)
{
    if (*used + len + 1 > *cap) {
        size_t ncap = (*cap ? *cap * 2 : 128);
        char *n;

        while (ncap < *used + len + 1)
            ncap *= 2;
        n = realloc(*buf, ncap);
        if (n == NULL)
            return -1;
        *buf = n;
        *cap = ncap;
    }
    memcpy(*buf + *used, s, len);
    *used += len;
    (*buf)[*used] = '\0';
    return 0;
}

struct master_entry {
    const char *host;   /* into the scratch copy */
    size_t host_len;
    int bracketed;      /* IPv6 written as [addr] */
    unsigned port;
};

/* Entry @idx (1-based, for messages) at @p, already trimmed, into @e. */
static int parse_entry(char *p, size_t idx, const char *from, struct master_entry *e)
{
    char *colon;
    uint64_t port;

    if (*p == '[') {
        char *rb = strchr(p, ']');

        if (rb == NULL || rb == p + 1 || rb[1] != ':') {
            cli_usage_error("%s: entry %zu '%s' is not [IPV6]:PORT (e.g. [::1]:7000)", from, idx,
                            p);
            return -1;
        }
        e->host = p + 1;
        e->host_len = (size_t)(rb - p - 1);
        e->bracketed = 1;
        colon = rb + 1;
    } else {
        colon = strrchr(p, ':');
        if (colon == NULL || colon == p) {
            cli_usage_error("%s: entry %zu '%s' is not HOST:PORT (e.g. 127.0.0.1:7000)", from,
                            idx, p);
            return -1;
        }
        if (memchr(p, ':', (size_t)(colon - p)) != NULL) {
            cli_usage_error("%s: entry %zu '%s': write IPv6 addresses as [ADDR]:PORT", from, idx,
                            p);
            return -1;
        }
        e->host = p;
        e->host_len = (size_t)(colon - p);
        e->bracketed = 0;
    }
    for (size_t k = 0; k < e->host_len; k++) {
        if (isspace((unsigned char)e->host[k]) || !isprint((unsigned char)e->host[k])) {
            cli_usage_error("%s: entry %zu '%s': the host name contains a space or control "
                            "character", from, idx, p);
            return -1;
        }
    }
    if (cli_parse_u64(colon + 1, 1, 65535, &port) < 0) {
        cli_usage_error("%s: entry %zu '%s': the port must be a number from 1 to 65535", from,
                        idx, p);
        return -1;
    }
    e->port = (unsigned)port;
    return 0;
}

/* @e in normal form ("host:port", "[v6]:port"), after a comma unless first. */
static int append_entry(char **norm, size_t *used, size_t *cap, const struct master_entry *e,
                        int first)
{
    char portbuf[16];

    snprintf(portbuf, sizeof(portbuf), ":%u", e->port);
    if ((!first && buf_append(norm, used, cap, ",", 1) < 0) ||
        (e->bracketed && buf_append(norm, used, cap, "[", 1) < 0) ||
        buf_append(norm, used, cap, e->host, e->host_len) < 0 ||
        (e->bracketed && buf_append(norm, used, cap, "]", 1) < 0) ||
        buf_append(norm, used, cap, portbuf, strlen(portbuf)) < 0)
        return -1;
    return 0;
}

/* Cut the next comma-separated entry off *@next, with spaces around it
 * dropped. */
static char *next_entry(char **next)
{
    char *p = *next, *end = strchr(p, ',');

    *next = end ? end + 1 : NULL;
    if (end)
        *end = '\0';
    while (*p == ' ' || *p == '\t')
        p++;
    end = p + strlen(p);
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
        *--end = '\0';
    return p;
}

/* Parse "host:port,[v6]:port,..." from @src (named @from in messages) into
 * a normalised list: spaces around entries dropped, ports in plain decimal.
 * Duplicates are refused here, by name: the library refuses them again after
 * resolving, which also catches 127.0.0.1 vs localhost. */
int cli_parse_masters(struct cli_opts *o, const char *src, const char *from)
{
    struct master_entry ents[REDLOCK_MAX_MASTERS];
    char *scratch = strdup(src);
    char *norm = NULL, *next = scratch;
    size_t n = 0, used = 0, cap = 0;

    if (scratch == NULL)
        goto oom;
    while (next != NULL) {
        char *p = next_entry(&next);

        if (*p == '\0') {
            if (n == 0 && next == NULL)
                cli_usage_error("%s is empty: give HOST:PORT[,HOST:PORT...]", from);
            else
                cli_usage_error("%s: empty entry %zu: remove the extra comma", from, n + 1);
            goto fail;
        }
        if (n == REDLOCK_MAX_MASTERS) {
            cli_usage_error("%s: more than %d masters: give at most %d", from,
                            REDLOCK_MAX_MASTERS, REDLOCK_MAX_MASTERS);
            goto fail;
        }
        if (parse_entry(p, n + 1, from, &ents[n]) < 0)
            goto fail;
        for (size_t k = 0; k < n; k++) {
            if (ents[k].port == ents[n].port && ents[k].host_len == ents[n].host_len &&
                strncasecmp(ents[k].host, ents[n].host, ents[n].host_len) == 0) {
                cli_usage_error("%s: master %s is listed twice (entries %zu and %zu): list each "
                                "master once", from, p, k + 1, n + 1);
                goto fail;
            }
        }
        if (append_entry(&norm, &used, &cap, &ents[n], n == 0) < 0)
            goto oom;
        n++;
    }
    free(scratch);
    free(o->masters);
    o->masters = norm;
    o->n_masters = n;
    o->masters_from = from;
    return 0;
oom:
    cli_usage_error("out of memory while parsing %s", from);
fail:
    free(scratch);
    free(norm);
    return -1;
}
