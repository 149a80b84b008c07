/* msg.c - redlock-cli's messages on stderr and its exit codes.
 *
 * Every message is one line, "redlock-cli: " first, so that scripts and
 * logs can grep them. The library never prints; this file is where its
 * error codes become words and exit statuses.
 */
#include "cli.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cli_quiet;
int cli_verbose;
const char *cli_msg_source;

/* The library's messages name its configuration fields; here the user
 * typed options. Longest first, so that a field is never cut by a shorter
 * one that starts it; whole words only (whole_word). */
static const char *const words[][2] = {
    { "set tls_cert_file and tls_key_file", "give --cert and --key" },
    { "config.tls_* is set", "a TLS option is given" },
    { "set config.tls = 1", "add --tls" },
    { "config.tls_cert_file", "--cert" },
    { "config.tls_key_file", "--key" },
    { "config.tls_ca_file", "--cacert" },
    { "config.tls_ca_dir", "--cacertdir" },
    { "config.tls_server_name", "--sni" },
    { "tls_server_name", "--sni" },
    { "tls_ca_file", "--cacert" },
};

/* Can @ch be part of a name: a word, a path, an address? */
static bool name_char(char ch)
{
    return isalnum((unsigned char)ch) || (ch != '\0' && strchr("_./-:@~", ch));
}

/* Is the field name at @at (@len bytes of @line) a word of its own, not a
 * piece of a path, an address or a master's text that happens to hold it?
 * A '.' or ':' right after it ends a sentence only when a space or the end
 * of the line follows. */
static bool whole_word(const char *line, const char *at, size_t len)
{
    const char *end = at + len;
    if (at > line && name_char(at[-1]))
        return false;
    if (!name_char(*end))
        return true;
    return (*end == '.' || *end == ':') && (end[1] == '\0' || isspace((unsigned char)end[1]));
}

static void cli_words(char *line, size_t size)
{
    for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
        const char *from = words[w][0], *to = words[w][1];
        size_t fl = strlen(from), tl = strlen(to);
        char *at = line;
        while ((at = strstr(at, from))) {
            if (!whole_word(line, at, fl)) {
                at += fl;
                continue;
            }
            size_t rest = strlen(at + fl);
            if ((size_t)(at - line) + tl + rest + 1 > size)
                break;
            memmove(at + tl, at + fl, rest + 1);
            memcpy(at, to, tl);
            at += tl;
        }
    }
}

static void vmsg(const char *fmt, va_list ap)
{
    char line[1024];

    /* One write per line, so lines from concurrent processes (or the
     * library's log thread) do not interleave mid-line. */
    vsnprintf(line, sizeof(line), fmt, ap);
    cli_words(line, sizeof(line));
    if (cli_msg_source)
        fprintf(stderr, "%s: %s: %s\n", CLI_NAME, cli_msg_source, line);
    else
        fprintf(stderr, "%s: %s\n", CLI_NAME, line);
}

void cli_say(enum cli_level level, const char *fmt, ...)
{
    va_list ap;

    if ((level != CLI_SAY_USAGE && cli_quiet) || (level == CLI_SAY_NOTE && cli_verbose < 1))
        return;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
}

int cli_exit_for(int rc)
{
    switch (rc) {
    case REDLOCK_OK: return CLI_EXIT_OK;
    case REDLOCK_EINVAL: return CLI_EXIT_USAGE;
    case REDLOCK_ECONFLICT:
    case REDLOCK_ENOTHELD: return CLI_EXIT_TEMPFAIL;
    case REDLOCK_ERESOLVE: return CLI_EXIT_NOHOST;
    /* The masters, not the lock, are the problem, and it may pass: too
     * many are down, slow or excluded for a quorum. The message names
     * which master and why. */
    case REDLOCK_ENOQUORUM:
    case REDLOCK_EEXPIRED:
    case REDLOCK_ETIMEOUT:
    case REDLOCK_ECONNECT:
    case REDLOCK_EBUSY:
    case REDLOCK_EUNAVAIL:   /* loading its data, or busy: it passes */
    case REDLOCK_EUNTRUSTED: /* excluded masters (clock, memory guard) */
        return CLI_EXIT_UNAVAILABLE;
    /* Waiting will not help: a person must fix the password, the ACL... */
    case REDLOCK_EAUTH: return CLI_EXIT_NOPERM;
    /* ... or the setup: another program's value under the key, an address
     * that is not a Redis server, a master refusing the commands. */
    case REDLOCK_EWRONGTYPE:
    case REDLOCK_EPROTO:
    case REDLOCK_EREPLY: return CLI_EXIT_CONFIG;
    /* ECANCELED: we cancel only on a signal, and then exit 128 + its
     * number (acquire.c); from anywhere else it is our bug. */
    default: /* ENOMEM, ESHUTDOWN, EASYNC, ESYS, ECANCELED, unknown */ return CLI_EXIT_SOFTWARE;
    }
}

int cli_exit_for_masters(int rc, const int *errs, size_t n)
{
    size_t auth = 0, setup = 0, may_fail = n - (n / 2 + 1);

    if (rc != REDLOCK_ENOQUORUM)
        return cli_exit_for(rc);
    for (size_t i = 0; i < n; i++) {
        int code = cli_exit_for(errs[i]);

        auth += (code == CLI_EXIT_NOPERM);
        setup += (code == CLI_EXIT_NOPERM || code == CLI_EXIT_CONFIG);
    }
    if (auth > may_fail)
        return CLI_EXIT_NOPERM;
    if (setup > may_fail)
        return CLI_EXIT_CONFIG;
    return CLI_EXIT_UNAVAILABLE;
}

uint64_t cli_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint32_t cli_jitter(uint32_t n)
{
    /* xorshift64*, seeded from the clock and pid: enough to spread racing
     * waiters apart, which is all jitter is for. */
    static uint64_t s;

    if (n == 0)
        return 0;
    if (s == 0)
        s = (cli_now_us() << 16) ^ (uint64_t)getpid() ^ 0x9e3779b97f4a7c15ull;
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return (uint32_t)((s * 0x2545f4914f6cdd1dull) >> 33) % (n + 1);
}

const char *cli_printable(const void *p, size_t len, char *buf, size_t cap)
{
    const unsigned char *s = p;
    size_t o = 0;

    if (cap < 8) {
        if (cap > 0)
            buf[0] = '\0';
        return buf;
    }
    for (size_t i = 0; i < len; i++) {
        /* Room for the longest step (4) plus "..." and the NUL. */
        if (o + 4 + 4 > cap) {
            memcpy(buf + o, "...", 4);
            return buf;
        }
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\') {
            buf[o++] = (char)s[i];
        } else {
            snprintf(buf + o, 5, "\\x%02x", s[i]);
            o += 4;
        }
    }
    buf[o] = '\0';
    return buf;
}
