/* masters.c - where redlock-cli's list of masters comes from, and its check.
 *
 * --masters LIST, else --masters-file FILE, else $REDLOCK_MASTERS; no
 * default. The library checks the list (redlock_masters_check()); --masters
 * refuses a password, and messages about a list are made from a masked
 * copy. Why: docs/errors-cli.md, "How the CLI reads its settings, files and
 * secrets".
 */
#include "opts.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MASTERS_FILE_MAX 65536 /* bytes: 16 entries of up to 1 KiB, and room to spare */
#define MASK "***"

/* The library's message without its own "masters: " in front: we name
 * the source instead. */
static const char *lib_msg(const redlock_error *err, int rc)
{
    const char *m = err->msg[0] ? err->msg : redlock_strerror(rc);

    return strncmp(m, "masters: ", 9) == 0 ? m + 9 : m;
}

/* Where an entry's credentials may begin: after its scheme ("redis://"),
 * if it starts with one (letters, digits, "+-." and "://", as RFC 3986
 * has it), else at its start. */
static const char *after_scheme(const char *e, size_t len)
{
    size_t i = 0;

    while (i < len && (isalnum((unsigned char)e[i]) || strchr("+-.", e[i])))
        i++;
    return i > 0 && i + 3 <= len && memcmp(e + i, "://", 3) == 0 ? e + i + 3 : e;
}

/* Entry @e (@len bytes) with what could be a password masked: everything
 * after the scheme, and after the user name if there is one, up to the
 * last '@'. Wider than what the
 * library reads as a password, on purpose: a malformed entry may hold one
 * where the library does not look. Appended to @out (room for len +
 * sizeof(MASK)). */
static void mask_entry(const char *e, size_t len, char *out)
{
    const char *from = after_scheme(e, len), *at = NULL;
    size_t o = strlen(out);

    for (size_t i = len; i > 0 && !at; i--)
        if (e[i - 1] == '@')
            at = e + i - 1;
    if (!at || at < from) {
        memcpy(out + o, e, len);
        out[o + len] = '\0';
        return;
    }
    /* Keep the user name (up to a ':', if that part holds no '@'): it
     * helps to find the entry, and is no secret. */
    for (const char *p = from; p < at && *p != '@'; p++) {
        if (*p == ':') {
            from = p + 1;
            break;
        }
    }
    memcpy(out + o, e, (size_t)(from - e));
    o += (size_t)(from - e);
    memcpy(out + o, MASK, sizeof(MASK) - 1);
    o += sizeof(MASK) - 1;
    memcpy(out + o, at, len - (size_t)(at - e));
    out[o + len - (size_t)(at - e)] = '\0';
}

/* @list with every entry masked (mask_entry), or NULL when out of memory. */
static char *masked_list(const char *list)
{
    size_t n = 1;
    char *out;

    for (const char *p = list; *p; p++)
        n += (*p == ',');
    out = malloc(strlen(list) + n * sizeof(MASK) + 1);
    if (!out)
        return NULL;
    out[0] = '\0';
    for (const char *p = list;;) {
        const char *comma = strchrnul(p, ',');

        mask_entry(p, (size_t)(comma - p), out);
        if (*comma == '\0')
            return out;
        strcat(out, ",");
        p = comma + 1;
    }
}

/* The list failed the library's check with @err: say why, without a
 * password. The masked copy gives the same verdict and a message that is
 * safe to print, unless masking removed the fault itself (a bad %-escape
 * in a password): then name the entry, masked. */
static void explain(const char *list, const char *from, int rc, const redlock_error *err)
{
    char *masked;
    redlock_error merr;
    size_t idx = 1;

    if (!strchr(list, '@')) {
        cli_usage_error("%s: %s", from, lib_msg(err, rc));
        return;
    }
    masked = masked_list(list);
    if (!masked) {
        cli_usage_error("%s: out of memory", from);
        return;
    }
    memset(&merr, 0, sizeof(merr));
    rc = redlock_masters_check(masked, NULL, NULL, &merr);
    if (rc != 0) {
        cli_usage_error("%s: %s", from, lib_msg(&merr, rc));
        free(masked);
        return;
    }
    for (const char *p = list; *p; p++) {
        const char *comma = strchrnul(p, ',');
        char *one = strndup(p, (size_t)(comma - p));

        if (one && redlock_masters_check(one, NULL, NULL, NULL) != 0) {
            char shown[128] = "";
            char *m = masked_list(one);

            if (m)
                cli_printable(m, strlen(m), shown, sizeof(shown));
            cli_usage_error("%s: entry %zu (%s): its user:password@ part is malformed (a bad "
                            "%%-escape, or too long; the password is not shown)",
                            from, idx, shown);
            free(m);
            free(one);
            free(masked);
            return;
        }
        free(one);
        if (*comma == '\0')
            break;
        p = comma;
        idx++;
    }
    cli_usage_error("%s: malformed (the passwords in it are not shown)", from);
    free(masked);
}

/* The first entry of @list that carries a password, 1-based. */
static size_t entry_with_secret(const char *list)
{
    size_t idx = 1;

    for (const char *p = list;;) {
        const char *comma = strchrnul(p, ',');
        char *one = strndup(p, (size_t)(comma - p));
        int secret = 0;

        if (one && redlock_masters_check(one, NULL, &secret, NULL) == 0 && secret) {
            free(one);
            return idx;
        }
        free(one);
        if (*comma == '\0')
            return idx;
        p = comma + 1;
        idx++;
    }
}

/* @list from @from into o->masters, if the library accepts it. */
static int take(struct cli_opts *o, const char *list, const char *from, int in_argv,
                int *ret_secret)
{
    redlock_error err;
    size_t n = 0;
    int secret = 0, rc;

    memset(&err, 0, sizeof(err));
    rc = redlock_masters_check(list, &n, &secret, &err);
    if (rc != 0) {
        explain(list, from, rc, &err);
        return -1;
    }
    if (secret && in_argv) {
        cli_usage_error("%s: entry %zu carries a password, which ps(1) shows to every user: put "
                        "the list in $REDLOCK_MASTERS or a file (--masters-file FILE), or the "
                        "password in --password-file",
                        from, entry_with_secret(list));
        return -1;
    }
    free(o->masters);
    o->masters = strdup(list);
    if (!o->masters) {
        cli_usage_error("%s: out of memory", from);
        return -1;
    }
    o->n_masters = n;
    if (ret_secret)
        *ret_secret = secret;
    return 0;
}

/* A masters file: the list as --masters takes it, or one entry per line
 * (a newline separates entries as a comma does; blank lines at the end
 * are dropped). It may carry passwords: read like a password file. */
static int take_file(struct cli_opts *o, const char *path)
{
    char *text = NULL, *w;
    size_t len;
    int rc, shared = 0, secret = 0;

    if (cli_read_secret_file("--masters-file", path, MASTERS_FILE_MAX, &text, &shared) < 0)
        return -1;
    /* Blank lines at the end are no entries. */
    len = strlen(text);
    while (len > 0 && strchr("\r\n \t", text[len - 1]))
        text[--len] = '\0';
    w = text;
    for (const char *r = text; *r; r++) {
        if (*r == '\r' && r[1] == '\n')
            continue;
        *w++ = *r == '\n' ? ',' : *r;
    }
    *w = '\0';
    rc = take(o, text, "--masters-file", 0, &secret);
    if (rc == 0 && secret && shared)
        cli_warn_shared_secret("--masters-file", path);
    explicit_bzero(text, len);
    free(text);
    return rc;
}

int cli_load_masters(struct cli_opts *o)
{
    const char *env = getenv("REDLOCK_MASTERS");
    int rc;

    if (o->masters_arg && o->masters_file) {
        cli_usage_error("--masters and --masters-file both name the masters: give one");
        return CLI_PARSE_USAGE;
    }
    if (o->masters_arg) {
        rc = take(o, o->masters_arg, o->masters_arg_from ? o->masters_arg_from : "--masters",
                  !o->masters_arg_from, NULL);
    } else if (o->masters_file) {
        rc = take_file(o, o->masters_file);
    } else if (env && env[0] != '\0') {
        /* Empty counts as unset, as for $REDLOCK_PASSWORD. */
        rc = take(o, env, "$REDLOCK_MASTERS", 0, NULL);
    } else {
        /* A cron job that lost its environment must not lock (or fail to
         * lock) a cluster nobody named. */
        cli_usage_error("no masters: give --masters HOST:PORT,... or set $REDLOCK_MASTERS "
                        "(there is no default)");
        return CLI_PARSE_CONFIG;
    }
    if (rc < 0)
        return CLI_PARSE_USAGE;
    if (o->n_masters % 2 == 0)
        cli_warn("warning: %zu masters: an even number tolerates no more failures than %zu "
                 "(quorum %zu of %zu); use an odd number",
                 o->n_masters, o->n_masters - 1, o->n_masters / 2 + 1, o->n_masters);
    return CLI_PARSE_OK;
}
