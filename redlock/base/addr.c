/* addr.c - the master list: parse every entry, refuse what is ambiguous, resolve names.
 *
 * The forms are in addr.h; what a bad entry gets: docs/errors.md, "Master list". A master's
 * display name (messages, logs, JSON, redlock_client_master_addr()) never holds its password.
 * Numeric hosts must be written the way inet_pton reads them: getaddrinfo()
 * follows inet_aton() and reads "0127.0.0.1" as octal (87.0.0.1), another
 * host than the one the user meant.
 */
#include "base/addr.h"
#include "base/common.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>

#define BAD(...)                                       \
    do {                                               \
        rl_seterr(e, REDLOCK_EINVAL, -1, __VA_ARGS__); \
        return REDLOCK_EINVAL;                         \
    } while (0)

static bool has_prefix(const char *s, size_t len, const char *p)
{
    size_t n = strlen(p);
    return len >= n && strncasecmp(s, p, n) == 0;
}

/* Where the credentials of entry @s end: its '@', or NULL. A URL's host,
 * port and database never hold an '@', so in redis(s):// the last one ends
 * them (a password may hold '@' and '/' unescaped); a unix socket's path
 * starts with '/', so there the first "@/" does. An entry with no scheme
 * and an '@' is a mistake refused below, but it is found the same way, so
 * that its message can leave the password out. */
static const char *userinfo_end(const char *s, size_t len)
{
    const char *sep = memmem(s, len, "://", 3);
    const char *start = sep ? sep + 3 : s, *end = s + len;
    if (has_prefix(s, len, "unix://"))
        return memmem(start, (size_t)(end - start), "@/", 2);
    const char *at = NULL;
    for (const char *q = start; q < end; q++)
        if (*q == '@')
            at = q;
    return at;
}

/* Append @len bytes of @s to @out (room @cap, NUL-terminated), cut to fit. */
static void append(char *out, size_t cap, size_t *used, const char *s, size_t len)
{
    if (*used + 1 >= cap)
        return;
    size_t n = len < cap - 1 - *used ? len : cap - 1 - *used;
    memcpy(out + *used, s, n);
    *used += n;
    out[*used] = '\0';
}

/* @list (one entry or many) as messages may show it: each password
 * replaced by "***" (the user name stays: it is not a secret). */
static void redact(const char *list, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *at = userinfo_end(p, len);
        if (!at) {
            append(out, cap, &used, p, len);
        } else {
            const char *sep = memmem(p, len, "://", 3);
            const char *ui = sep ? sep + 3 : p;
            const char *colon = memchr(ui, ':', (size_t)(at - ui));
            const char *keep = colon ? colon + 1 : ui;
            append(out, cap, &used, p, (size_t)(keep - p));
            append(out, cap, &used, "***", 3);
            append(out, cap, &used, at, len - (size_t)(at - p));
        }
        if (!comma)
            break;
        append(out, cap, &used, ",", 1);
        p = comma + 1;
    }
}

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Percent-decode @s[0..len) into @out (NUL-terminated). -1 on a bad escape,
 * a NUL byte, or no room. */
static int pct_decode(const char *s, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int ch = (unsigned char)s[i];
        if (ch == '%') {
            if (i + 2 >= len)
                return -1;
            int a = hexval((unsigned char)s[i + 1]), b = hexval((unsigned char)s[i + 2]);
            if (a < 0 || b < 0)
                return -1;
            ch = a * 16 + b;
            i += 2;
        }
        if (ch == 0 || o + 1 >= cap)
            return -1;
        out[o++] = (char)ch;
    }
    out[o] = '\0';
    return 0;
}

/* A decimal number in @min..@max, digits only (no sign, no spaces); -1 if not. */
static int parse_uint(const char *s, size_t len, long min, long max)
{
    long v = 0;
    if (len == 0 || len > 5)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v >= min && v <= max ? (int)v : -1;
}

#define parse_port(s, len) parse_uint((s), (len), 1, 65535)
#define parse_db(s, len) parse_uint((s), (len), 0, 65535)

/* Is @host an IP address as inet_pton reads it (v4 or v6)? */
static bool is_ip(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* A host name or address as written: printable, no spaces; a numeric one
 * must be what inet_pton reads (see the top of the file). */
static int check_host(const char *entry, const char *host, bool bracketed, redlock_error *e)
{
    if (!host[0])
        BAD("masters: empty host in \"%s\"", RL_QUOTE(entry, 60));
    for (const char *p = host; *p; p++)
        if (!isgraph((unsigned char)*p))
            BAD("masters: \"%s\": the host contains a space or control character",
                RL_QUOTE(entry, 60));
    if (!bracketed && strchr(host, ':'))
        BAD("masters: \"%s\": write IPv6 addresses as [addr]:port", RL_QUOTE(entry, 60));
    /* "127.0.0.1." (a fully qualified name's habit) is no name and no
     * address to getaddrinfo(): it would be "cannot resolve", as for a host
     * that does not exist. Say what is wrong instead. */
    size_t hl = strlen(host);
    if (hl > 1 && host[hl - 1] == '.' && strspn(host, "0123456789.") == hl &&
        memchr(host, '.', hl - 1))
        BAD("masters: master '%s': an IPv4 address ends in a dot: write %.*s", host, (int)(hl - 1),
            host);
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_flags = AI_NUMERICHOST };
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) == 0) {
        freeaddrinfo(res);
        if (!is_ip(host))
            BAD("masters: \"%s\": %s is not a plain IP address (write dotted decimal "
                "without leading zeros: some parsers read 0127.0.0.1 as octal)",
                RL_QUOTE(entry, 60), host);
    }
    if (bracketed) {
        unsigned char buf[sizeof(struct in6_addr)];
        if (inet_pton(AF_INET6, host, buf) != 1)
            BAD("masters: \"%s\": [%s] is not an IPv6 address", RL_QUOTE(entry, 60), host);
    }
    return 0;
}

/* "host:port" or "[v6]:port" from @hp (the authority part); @need_port:
 * plain entries must name the port, URLs default to 6379. */
static int parse_hostport(const char *entry, const char *hp, size_t len, bool need_port, rl_addr *a,
                          redlock_error *e)
{
    const char *host = hp, *colon = NULL;
    size_t hlen;
    bool bracketed = false;
    if (len && hp[0] == '[') {
        const char *rb = memchr(hp, ']', len);
        if (!rb || rb == hp + 1)
            BAD("masters: bad entry \"%s\" (IPv6 is written [addr]:port)", RL_QUOTE(entry, 60));
        host = hp + 1;
        hlen = (size_t)(rb - hp - 1);
        bracketed = true;
        size_t rest = len - (size_t)(rb + 1 - hp);
        if (rest) {
            if (rb[1] != ':')
                BAD("masters: bad entry \"%s\" (IPv6 is written [addr]:port)", RL_QUOTE(entry, 60));
            colon = rb + 1;
        }
    } else {
        /* The last ':' separates the port; check_host refuses a host that
         * still holds one (an IPv6 address written without brackets). */
        for (const char *p = hp + len; p > hp; p--)
            if (p[-1] == ':') {
                colon = p - 1;
                break;
            }
        hlen = colon ? (size_t)(colon - hp) : len;
    }
    if (!colon && need_port)
        BAD("masters: bad entry \"%s\" (expected host:port)", RL_QUOTE(entry, 60));
    if (hlen == 0)
        BAD("masters: empty host in \"%s\"", RL_QUOTE(entry, 60));
    if (hlen >= sizeof(a->host))
        BAD("masters: the host in \"%s\" is too long", RL_QUOTE(entry, 60));
    memcpy(a->host, host, hlen);
    a->host[hlen] = '\0';
    if (colon) {
        size_t plen = (size_t)(hp + len - colon - 1);
        a->port = parse_port(colon + 1, plen);
        if (a->port < 0)
            BAD("masters: bad port in \"%s\" (expected 1..65535)", RL_QUOTE(entry, 60));
    } else {
        a->port = 6379;
    }
    return check_host(entry, a->host, bracketed, e);
}

/* "user:password@" (user may be empty). */
static int parse_userinfo(const char *ui, size_t len, rl_addr *a, redlock_error *e)
{
    const char *colon = memchr(ui, ':', len);
    if (!colon)
        BAD("masters: \"%s\": credentials are written user:password@ or :password@",
            RL_QUOTE(a->name, 60));
    if (pct_decode(ui, (size_t)(colon - ui), a->user, sizeof(a->user)) < 0 ||
        pct_decode(colon + 1, len - (size_t)(colon - ui) - 1, a->password, sizeof(a->password)) < 0)
        BAD("masters: \"%s\": bad %%-escape or over-long user name or password",
            RL_QUOTE(a->name, 60));
    if (!a->password[0])
        BAD("masters: \"%s\": the password is empty (leave out \"user:@\" for none)",
            RL_QUOTE(a->name, 60));
    a->has_password = true;
    return 0;
}

/* The display name of a URL entry: the URL without its password. */
static void url_name(rl_addr *a, const char *scheme)
{
    char hostport[RL_HOST_MAX + 16];
    if (a->kind == RL_ADDR_UNIX)
        snprintf(hostport, sizeof(hostport), "%s", a->host);
    else if (strchr(a->host, ':'))
        snprintf(hostport, sizeof(hostport), "[%s]:%d", a->host, a->port);
    else
        snprintf(hostport, sizeof(hostport), "%s:%d", a->host, a->port);
    char db[24] = "";
    if (a->db >= 0)
        snprintf(db, sizeof(db), a->kind == RL_ADDR_UNIX ? "?db=%d" : "/%d", a->db);
    snprintf(a->name, sizeof(a->name), "%s://%s%s%s%s", scheme, RL_QUOTE(a->user, 60),
             a->user[0] ? "@" : "", RL_QUOTE(hostport, 190), db);
}

/* @shown is @entry as messages show it (no password). */
static int parse_url(const char *entry, size_t len, const char *shown, rl_addr *a, redlock_error *e)
{
    bool unix_sock = has_prefix(entry, len, "unix://");
    bool tls = has_prefix(entry, len, "rediss://");
    const char *scheme = unix_sock ? "unix" : tls ? "rediss" : "redis";
    size_t skip = strlen(scheme) + 3;
    const char *p = entry + skip, *end = entry + len;
    a->url = true;
    a->tls = tls;
    a->kind = unix_sock ? RL_ADDR_UNIX : RL_ADDR_TCP;
    snprintf(a->name, sizeof(a->name), "%s://...", scheme); /* until known */

    const char *at = userinfo_end(entry, len);
    if (at) {
        int rc = parse_userinfo(p, (size_t)(at - p), a, e);
        if (rc)
            return rc;
        p = at + 1;
    }
    const char *auth_end = p;
    while (auth_end < end && *auth_end != '/' && *auth_end != '?')
        auth_end++;
    if (unix_sock) {
        if (p != auth_end)
            BAD("masters: \"%s\": write unix sockets as unix:///path/to.sock",
                RL_QUOTE(a->name, 60));
        const char *q = memchr(p, '?', (size_t)(end - p));
        const char *pend = q ? q : end;
        if (pend - p < 2 || pct_decode(p, (size_t)(pend - p), a->host, sizeof(a->host)) < 0)
            BAD("masters: bad unix socket path in \"%s\"", RL_QUOTE(a->name, 60));
        /* sun_path holds 107 bytes and a NUL; hiredis 1.x copies a path of
         * 107 without its NUL (the connect then fails, or reaches garbage):
         * 106 is the most both hiredis versions connect to. */
        if (strlen(a->host) + 2 > sizeof(((struct sockaddr_un *)0)->sun_path))
            BAD("masters: unix socket path in \"%s\" is longer than %zu bytes",
                RL_QUOTE(a->name, 60), sizeof(((struct sockaddr_un *)0)->sun_path) - 2);
        if (q) {
            if (!has_prefix(q + 1, (size_t)(end - q - 1), "db=") ||
                (a->db = parse_db(q + 4, (size_t)(end - q - 4))) < 0)
                BAD("masters: \"%s\": the only parameter is ?db=N (0..65535)",
                    RL_QUOTE(a->name, 60));
        }
        url_name(a, scheme);
        return 0;
    }
    int rc = parse_hostport(shown, p, (size_t)(auth_end - p), false, a, e);
    if (rc)
        return rc;
    if (auth_end < end) {
        if (*auth_end == '?')
            BAD("masters: \"%s\": URL parameters are not supported (the database is "
                "written /N)",
                RL_QUOTE(shown, 60));
        const char *db = auth_end + 1;
        if (db < end && (a->db = parse_db(db, (size_t)(end - db))) < 0)
            BAD("masters: \"%s\": the database after the host must be a number 0..65535",
                RL_QUOTE(shown, 60));
    }
    url_name(a, scheme);
    return 0;
}

static int parse_entry(const char *entry, size_t len, rl_addr *a, redlock_error *e)
{
    memset(a, 0, sizeof(*a));
    a->db = -1;
    char shown[RL_NAME_MAX];
    redact(entry, shown, sizeof(shown));
    if (has_prefix(entry, len, "redis://") || has_prefix(entry, len, "rediss://") ||
        has_prefix(entry, len, "unix://"))
        return parse_url(entry, len, shown, a, e);
    /* "redis:/host:port" or "redis:host:port": a scheme short of its two
     * slashes reads as a host holding a ':' (an IPv6 address without its
     * brackets), which is not what the user meant. A host named redis
     * ("redis:6379") has no '/' and no second ':', and stays one. */
    static const char *const schemes[][2] = {
        { "redis:", "redis://host:port" },
        { "rediss:", "rediss://host:port" },
        { "unix:", "unix:///path/to.sock" },
    };
    for (size_t k = 0; k < sizeof(schemes) / sizeof(schemes[0]); k++) {
        size_t n = strlen(schemes[k][0]);
        if (has_prefix(entry, len, schemes[k][0]) &&
            (entry[n] == '/' || memchr(entry + n, ':', len - n)))
            BAD("masters: \"%s\": a URL has two slashes after its scheme: write %s",
                RL_QUOTE(shown, 60), schemes[k][1]);
    }
    const char *sep = strstr(entry, "://");
    if (sep && (size_t)(sep - entry) < len)
        BAD("masters: \"%s\": unknown scheme (use redis://, rediss://, unix:// or "
            "host:port)",
            RL_QUOTE(shown, 60));
    if (len >= sizeof(a->name))
        BAD("masters: entry \"%s\" is too long", RL_QUOTE(entry, 40));
    memcpy(a->name, entry, len);
    a->name[len] = '\0';
    a->kind = RL_ADDR_TCP;
    return parse_hostport(a->name, entry, len, true, a, e);
}

static bool same_as_written(const rl_addr *a, const rl_addr *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == RL_ADDR_UNIX)
        return strcmp(a->host, b->host) == 0;
    return a->port == b->port && strcasecmp(a->host, b->host) == 0;
}

/* An entry with an '@' and no scheme: credentials outside a URL, or a
 * password holding a ',' that split its URL in two. Found before any entry
 * is parsed, so that no message quotes the piece of a password that the
 * ',' left in the entry before it. */
static int check_stray_credentials(const char *list, redlock_error *e)
{
    int idx = 1;
    for (const char *p = list;; idx++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (memchr(p, '@', len) && !memmem(p, len, "://", 3))
            BAD("masters: entry %d holds an '@' outside a URL: credentials are written "
                "redis://user:password@host:port (a ',' in a password as %%2C)",
                idx);
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

int rl_addr_parse_list(const char *list, rl_addr *out, redlock_error *e)
{
    if (!list || !*list)
        BAD("masters: no master given (use host:port,host:port,...)");
    int rc = check_stray_credentials(list, e);
    if (rc)
        return rc;
    char shown[256];
    redact(list, shown, sizeof(shown));
    int count = 0;
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t')) {
            p++;
            len--;
        }
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len == 0) {
            if (!comma && count > 0)
                BAD("masters: trailing comma in \"%s\"", RL_QUOTE(shown, 80));
            BAD("masters: empty entry %d in \"%s\" (use host:port,host:port,...)", count + 1,
                RL_QUOTE(shown, 80));
        }
        if (count == REDLOCK_MAX_MASTERS)
            BAD("masters: more than %d entries (use 3, 5 or 7 masters)", REDLOCK_MAX_MASTERS);
        char entry[1024];
        if (len >= sizeof(entry))
            BAD("masters: entry %d is too long", count + 1);
        memcpy(entry, p, len);
        entry[len] = '\0';
        rc = parse_entry(entry, len, &out[count], e);
        if (rc)
            return rc;
        for (int j = 0; j < count; j++) {
            if (same_as_written(&out[j], &out[count])) {
                rl_seterr(e, REDLOCK_EINVAL, count,
                          "masters: %s and %s are the same master; each master must be "
                          "independent",
                          RL_QUOTE(out[j].name, 60), RL_QUOTE(out[count].name, 60));
                return REDLOCK_EINVAL;
            }
        }
        count++;
        if (!comma)
            break;
        p = comma + 1;
    }
    return count;
}

bool rl_addr_is_name(const rl_addr *a)
{
    return a->kind == RL_ADDR_TCP && !is_ip(a->host);
}

/* Print @sa's address into @ip: ::ffff:a.b.c.d is the IPv4 master a.b.c.d,
 * named so, or the duplicate check would count one master twice. */
static void addr_ntop(const struct sockaddr *sa, char ip[64])
{
    const struct in6_addr *a6 = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, ip, 64);
    else if (IN6_IS_ADDR_V4MAPPED(a6))
        inet_ntop(AF_INET, &a6->s6_addr[12], ip, 64);
    else
        inet_ntop(AF_INET6, a6, ip, 64);
}

int rl_addr_lookup(const char *host, char ip[64], int *ret_naddrs)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, NULL, &hints, &res);
    if (gai != 0 || !res)
        return gai != 0 ? gai : EAI_NONAME;
    /* Prefer IPv4: hiredis tries AF_INET first for names too. */
    struct addrinfo *pick = res;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
        if (ai->ai_family == AF_INET) {
            pick = ai;
            break;
        }
    addr_ntop(pick->ai_addr, ip);
    /* Distinct addresses of the family picked (a resolver may list one
     * twice): more than one is a round-robin name, whose pick may change
     * from one look-up to the next, and which cannot be one server
     * (docs/memory-guard.md, "Names that move"). An IPv6 address beside
     * the IPv4 one ("localhost") is never picked while the IPv4 one is
     * there: not counted. */
    int n = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (ai->ai_family != pick->ai_family)
            continue;
        char one[64], other[64];
        addr_ntop(ai->ai_addr, one);
        bool seen = false;
        for (struct addrinfo *b = res; b != ai && !seen; b = b->ai_next) {
            addr_ntop(b->ai_addr, other);
            seen = b->ai_family == pick->ai_family && strcmp(one, other) == 0;
        }
        n += !seen;
    }
    *ret_naddrs = n;
    freeaddrinfo(res);
    return 0;
}

int rl_addr_resolve(rl_addr *a, int idx, redlock_error *e)
{
    if (a->kind == RL_ADDR_UNIX)
        return 0;
    int gai = rl_addr_lookup(a->host, a->ip, &a->naddrs);
    if (gai != 0) {
        rl_seterr(e, REDLOCK_ERESOLVE, idx,
                  "master %s: cannot resolve \"%s\": %s (check the host name)",
                  RL_QUOTE(a->name, 80), RL_QUOTE(a->host, 60), gai_strerror(gai));
        return REDLOCK_ERESOLVE;
    }
    return 0;
}

bool rl_addr_same(const rl_addr *a, const rl_addr *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == RL_ADDR_UNIX)
        return strcmp(a->host, b->host) == 0;
    return a->port == b->port && strcmp(a->ip, b->ip) == 0;
}
