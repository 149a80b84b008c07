/* error.c - the error table and the one-line error detail.
 *
 * One X-macro in redlock.h (REDLOCK_ERRNO_MAP) generates the enum and both
 * string tables here, so a new code cannot be added without a message.
 */
#include "base/common.h"

#include <stdio.h>
#include <string.h>

const char *redlock_strerror(int code)
{
    switch (code) {
    /* One case per code, from the X-macro. clang-format would take the case
     * label inside the #define for one of this switch's own and indent the
     * map's line as its body: the cases are kept out of it. */
    /* clang-format off */
    case 0: return "success";
#define RL_STRERROR_GEN(name, val, msg) case REDLOCK_##name: return msg;
    REDLOCK_ERRNO_MAP(RL_STRERROR_GEN)
#undef RL_STRERROR_GEN
    }
    /* clang-format on */
    return "unknown error";
}

const char *redlock_err_name(int code)
{
    switch (code) {
    /* As in redlock_strerror(): kept out of clang-format. */
    /* clang-format off */
    case 0: return "OK";
#define RL_ERRNAME_GEN(name, val, msg) case REDLOCK_##name: return #name;
    REDLOCK_ERRNO_MAP(RL_ERRNAME_GEN)
#undef RL_ERRNAME_GEN
    }
    /* clang-format on */
    return "EUNKNOWN";
}

static bool has(const char *s, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(s + i, needle, n) == 0)
            return true;
    return false;
}

static bool starts(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

int rl_classify_error_reply(const char *str, size_t len)
{
    if (!str)
        return REDLOCK_EPROTO;
    if (rl_error_reply_transient(str, len))
        return REDLOCK_EUNAVAIL;
    /* A script that touches a key of another type fails with WRONGTYPE
     * somewhere in the message, not always at its start. */
    if (has(str, len, "WRONGTYPE"))
        return REDLOCK_EWRONGTYPE;
    if (has(str, len, "NOAUTH") || has(str, len, "WRONGPASS") || rl_reply_is_acl_denial(str, len) ||
        has(str, len, "invalid password") || has(str, len, "invalid username"))
        return REDLOCK_EAUTH;
    return REDLOCK_EREPLY;
}

/* The user is who it says, but its ACL lacks a command, key or channel:
 * NOPERM, or inside a script "The user executing the script can't run this
 * command" (Redis) or "ACL failure in script: ... has no permissions"
 * (Valkey). Classified as EAUTH, worded as what it is. */
bool rl_reply_is_acl_denial(const char *str, size_t len)
{
    return str && (has(str, len, "NOPERM") || has(str, len, "can't run this command") ||
                   has(str, len, "can't access at least one") || has(str, len, "ACL failure") ||
                   has(str, len, "no permissions to"));
}

/* Replies a healthy master gives while it cannot serve for a moment: it is
 * loading its dataset, a script runs too long (BUSY), a cluster slot moves
 * (TRYAGAIN) or a replica lost its master (MASTERDOWN). Nothing is wrong with
 * the setup: the master is unavailable for now, like one that is down. */
bool rl_error_reply_transient(const char *str, size_t len)
{
    return str && (starts(str, len, "LOADING ") || starts(str, len, "BUSY ") ||
                   starts(str, len, "TRYAGAIN ") || starts(str, len, "MASTERDOWN "));
}

/* The length of the longest prefix of @s[0..n) that ends on a character
 * boundary: a UTF-8 sequence cut short at the end (by us, or by whoever
 * cut @s before) is left out whole. Bytes that are not UTF-8 at all stay. */
static size_t whole_chars(const char *s, size_t n)
{
    size_t i = n;
    while (i > 0 && n - i < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
        i--;
    if (i == 0)
        return n;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t want = lead >= 0xF0 && lead < 0xF8 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return lead >= 0xC0 && lead < 0xF8 && n - (i - 1) < want ? i - 1 : n;
}

char *rl_fit(char *dst, size_t size, const char *src)
{
    static const char more[] = "\xe2\x80\xa6"; /* U+2026 HORIZONTAL ELLIPSIS */
    size_t n = strlen(src), cut = n;
    bool cut_short = n >= size;
    if (size == 0)
        return dst;
    if (cut_short) {
        cut = size > sizeof(more) ? size - sizeof(more) : size - 1;
        /* Within the last few bytes, end at a word rather than in one. */
        for (size_t k = cut; k > 0 && cut - k < 16; k--) {
            if (src[k] == ' ') {
                cut = k;
                break;
            }
        }
        while (cut > 0 && (src[cut - 1] == ' ' || src[cut - 1] == ';' || src[cut - 1] == ','))
            cut--;
    }
    cut = whole_chars(src, cut);
    memcpy(dst, src, cut);
    if (cut_short && size > sizeof(more)) {
        memcpy(dst + cut, more, sizeof(more));
        cut += sizeof(more) - 1;
    }
    dst[cut] = '\0';
    for (char *p = dst; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    return dst;
}

char *rl_fit_clauses(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src), more = 0, keep;
    const char *tail = n > 0 && src[n - 1] == ')' ? strstr(src, " (+") : NULL;
    char count[32];
    if (size == 0)
        return dst;
    /* A count the message already has ("(+2 more)") is added to. */
    if (tail && sscanf(tail, " (+%zu more)", &more) == 1 && strlen(tail) < 20)
        n = (size_t)(tail - src);
    else
        more = 0;
    for (keep = n;;) {
        int cl = more ? snprintf(count, sizeof(count), " (+%zu more)", more) : 0;
        if (keep + (size_t)(cl > 0 ? cl : 0) < size) {
            memcpy(dst, src, keep);
            memcpy(dst + keep, count, cl > 0 ? (size_t)cl + 1 : 1);
            dst[keep + (size_t)(cl > 0 ? cl : 0)] = '\0';
            break;
        }
        /* Drop the last clause still kept. */
        size_t k = keep;
        while (k > 1 && !(src[k - 2] == ';' && src[k - 1] == ' '))
            k--;
        if (k <= 1)
            return rl_fit(dst, size, src); /* one clause, too long: cut it */
        keep = k - 2;
        more++;
    }
    for (char *p = dst; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    return dst;
}

/* Like anetSetError: a NULL @e is fine. The message is kept on one line,
 * since callers print it as one, and cut to fit with rl_fit(). */
void rl_seterr(redlock_error *e, int code, int master, const char *fmt, ...)
{
    if (!e)
        return;
    e->code = code;
    e->master = master;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    rl_fit(e->msg, sizeof(e->msg), line);
}
