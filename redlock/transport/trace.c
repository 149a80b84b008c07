/* trace.c - the library's own protocol trace, for model/trace-check.py.
 *
 * REDLOCK_TRACE=/path/file turns it on per client: one line per protocol
 * step, `T PID CID EV key=value ...` (events HELLO CONN CHECKED MARK REQ REP
 * ATT QUORUM DEC), appended with one write(2) on an O_APPEND descriptor;
 * unset, a trace point is one branch on a NULL pointer. Every event and key,
 * and why processes can share a file: docs/model.md, "The trace format".
 */
#include "transport/trace.h"
#include "base/script.h"
#include "transport/transport-reply.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rl_trace {
    int fd;
    int pid;
    uint32_t ids;
    char cid[9];
};

const char *rl_trace_esc(char *out, size_t cap, const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    if (len > 48)
        len = 48;
    for (size_t i = 0; i < len && o + 4 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch > ' ' && ch < 0x7f && ch != '%' && ch != '=' && ch != ',' && ch != ']') {
            out[o++] = (char)ch;
        } else {
            out[o++] = '%';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    out[o] = '\0';
    return out;
}

rl_trace *rl_trace_open(const char *masters, uint32_t n, uint32_t quorum, double drift, bool guard,
                        const char *prefix)
{
    const char *path = getenv("REDLOCK_TRACE");
    if (!path || !*path)
        return NULL;
    rl_trace *t = calloc(1, sizeof(*t));
    char tok[RL_TOKEN_LEN + 1];
    if (!t || rl_token_new(tok) != 0) {
        free(t);
        return NULL;
    }
    t->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (t->fd < 0) {
        fprintf(stderr, "redlock: REDLOCK_TRACE=%s: cannot open it; not tracing\n", path);
        free(t);
        return NULL;
    }
    t->pid = (int)getpid();
    memcpy(t->cid, tok, 8);
    char m[256], p[160];
    rl_trace_esc(p, sizeof(p), prefix, strlen(prefix));
    /* the master list unescaped but for its separators: it holds no space */
    snprintf(m, sizeof(m), "%s", masters);
    for (char *s = m; *s; s++)
        if (*s == ' ' || *s == '=')
            *s = '_';
    rl_trace_emit(t, rl_now_us(), "HELLO",
                  "n=%u quorum=%u drift=%.6f guard=%d masters=%s prefix=%s", n, quorum, drift,
                  guard, m, p);
    return t;
}

void rl_trace_close(rl_trace *t)
{
    if (!t)
        return;
    close(t->fd);
    free(t);
}

uint32_t rl_trace_id(rl_trace *t)
{
    return __atomic_add_fetch(&t->ids, 1, __ATOMIC_RELAXED);
}

void rl_trace_emit(rl_trace *t, rl_monotime at, const char *ev, const char *fmt, ...)
{
    char buf[1024];
    int len = snprintf(buf, sizeof(buf), "%llu %d %s %s ", (unsigned long long)at, t->pid, t->cid,
                       ev);
    if (len < 0 || (size_t)len >= sizeof(buf))
        return;
    va_list ap;
    va_start(ap, fmt);
    int more = vsnprintf(buf + len, sizeof(buf) - (size_t)len, fmt, ap);
    va_end(ap);
    if (more < 0)
        return;
    len += more;
    if ((size_t)len >= sizeof(buf) - 1)
        len = (int)sizeof(buf) - 2; /* cut: the line stays one line */
    buf[len++] = '\n';
    /* One write: O_APPEND puts it whole at the end, whoever else writes. */
    ssize_t w = write(t->fd, buf, (size_t)len);
    (void)w;
}

static bool is(const char *const *argv, const size_t *len, int i, int argc, const char *s)
{
    return i < argc && len[i] == strlen(s) && memcmp(argv[i], s, len[i]) == 0;
}

const char *rl_trace_kind(int script, int nparts, bool pipelined, int argc, const char *const *argv,
                          const size_t *len)
{
    static const char *const scripts[RL_SCRIPT_COUNT] = {
        [RL_SCRIPT_RELEASE] = "release", [RL_SCRIPT_EXTEND] = "extend",
        [RL_SCRIPT_STATUS] = "status",   [RL_SCRIPT_ACQUIRE] = "acquire",
        [RL_SCRIPT_FENCE] = "fence",     [RL_SCRIPT_MARKER] = "check",
        [RL_SCRIPT_DECLARE] = "declare", [RL_SCRIPT_RAISE] = "raise",
        [RL_SCRIPT_LEASES] = "leases",   [RL_SCRIPT_SETTLE] = "settle",
        [RL_SCRIPT_PASS] = "pass",
    };
    if (script >= 0 && script < RL_SCRIPT_COUNT)
        return scripts[script];
    if (pipelined)
        return "release-native";
    if (nparts > 0)
        return "fast";
    if (is(argv, len, 0, argc, "SET"))
        return "set";
    if (is(argv, len, 0, argc, "ZREM"))
        return "unindex";
    return is(argv, len, 0, argc, "TIME") ? "time" : "other";
}

/* Argument @i as an escaped value ("" past the end); tokens cut short. */
static const char *val(char *out, size_t cap, const char *const *argv, const size_t *len, int i,
                       int argc, size_t cut)
{
    if (i < 0 || i >= argc)
        return "";
    return rl_trace_esc(out, cap, argv[i], len[i] < cut ? len[i] : cut);
}

void rl_trace_request(rl_trace *t, uint32_t idx, uint32_t op, uint32_t fid, int script, int nparts,
                      bool pipelined, int argc, const char *const *argv, const size_t *len)
{
    const char *kind = rl_trace_kind(script, nparts, pipelined, argc, argv, len);
    char k[160], a[64], b[64], c[64], d[64], e[64];
    /* A script's keys start at 3 (EVALSHA sha numkeys), its ARGV after. */
    int nk = script >= 0 && argc > 2 ? atoi(argv[2]) : 0, x = 3 + nk;
    const char *const *v = argv;
    const size_t *l = len;
    char f[400];
    f[0] = '\0';
#define V(buf, i, cut) val(buf, sizeof(buf), v, l, i, argc, cut)
    switch (script) {
    case RL_SCRIPT_ACQUIRE:
        snprintf(f, sizeof(f), "key=%s tok=%s ttl=%s nres=%s flags=%s window=%s", V(k, 3, 48),
                 V(a, x, 12), V(b, x + 1, 24), V(c, x + 2, 24), V(d, x + 3, 24), V(e, x + 7, 24));
        if (argc > x + 8) /* a local hand-off: the token it takes the key over from */
            snprintf(f + strlen(f), sizeof(f) - strlen(f), " prev=%s", V(a, x + 8, 12));
        break;
    case RL_SCRIPT_RELEASE:
        snprintf(f, sizeof(f), "key=%s tok=%s", V(k, 3, 48), V(a, x, 12));
        break;
    case RL_SCRIPT_PASS:
        snprintf(f, sizeof(f), "key=%s tok=%s ttl=%s prev=%s", V(k, 3, 48), V(a, x, 12),
                 V(b, x + 1, 24), V(c, x + 2, 12));
        break;
    case RL_SCRIPT_EXTEND:
        snprintf(f, sizeof(f), "key=%s tok=%s ttl=%s", V(k, 3, 48), V(a, x, 12), V(b, x + 1, 24));
        break;
    case RL_SCRIPT_FENCE: snprintf(f, sizeof(f), "fence=%s", V(a, argc - 1, 24)); break;
    case RL_SCRIPT_STATUS: snprintf(f, sizeof(f), "key=%s", V(k, 3, 48)); break;
    case RL_SCRIPT_MARKER:
        snprintf(f, sizeof(f), "moved=%s birth=%s", V(a, x + 1, 24), V(b, x + 2, 48));
        break;
    case RL_SCRIPT_DECLARE:
        snprintf(f, sizeof(f), "mode=%s bound=%s fence=%s age=%s birth=%s", V(a, x, 24),
                 V(b, x + 1, 24), V(c, x + 2, 24), V(d, x + 3, 24), V(e, x + 4, 48));
        break;
    case RL_SCRIPT_RAISE: snprintf(f, sizeof(f), "window=%s", V(a, x, 24)); break;
    case RL_SCRIPT_SETTLE:
        snprintf(f, sizeof(f), "birth=%s window=%s tight=%s fence=%s", V(a, x, 48), V(b, x + 1, 24),
                 V(c, x + 2, 24), V(d, x + 3, 24));
        break;
    case RL_SCRIPT_LEASES: break;
    default:
        /* cmd.c's layouts: fast (HMGET 4, SET key token NX GET PX ttl),
         * release-native (ZREM held token, DEL.. key), set, unindex */
        if (strcmp(kind, "fast") == 0)
            snprintf(f, sizeof(f), "key=%s tok=%s ttl=%s", V(k, 5, 48), V(a, 6, 12), V(b, 10, 24));
        else if (strcmp(kind, "release-native") == 0)
            snprintf(f, sizeof(f), "key=%s tok=%s", V(k, 4, 48), V(a, 2, 12));
        else if (strcmp(kind, "set") == 0)
            snprintf(f, sizeof(f), "key=%s tok=%s ttl=%s", V(k, 1, 48), V(a, 2, 12), V(b, 5, 24));
        else if (strcmp(kind, "unindex") == 0)
            snprintf(f, sizeof(f), "tok=%s", V(a, 2, 12));
        break;
    }
#undef V
    rl_trace_emit(t, rl_now_us(), "REQ", "m=%u op=%u f=%u kind=%s %s", idx, op, fid, kind, f);
}

/* @r in the compact form REP's raw= holds; returns the bytes written. */
static size_t raw(char *out, size_t cap, const rl_reply *r, int depth)
{
    char e[64];
    size_t len = 0;
    const char *s;
    if (cap < 8)
        return 0;
    switch (rl_reply_type(r)) {
    case RL_REPLY_INTEGER: return (size_t)snprintf(out, cap, "%lld", rl_reply_integer(r));
    case RL_REPLY_NIL: return (size_t)snprintf(out, cap, "nil");
    case RL_REPLY_STRING:
        s = rl_reply_str(r, &len);
        return (size_t)snprintf(out, cap, "s:%s", rl_trace_esc(e, sizeof(e), s, len));
    case RL_REPLY_STATUS:
        s = rl_reply_str(r, &len);
        return (size_t)snprintf(out, cap, "+%s", rl_trace_esc(e, sizeof(e), s, len));
    case RL_REPLY_ERROR:
        s = rl_reply_str(r, &len);
        return (size_t)snprintf(out, cap, "!%s", rl_trace_esc(e, sizeof(e), s, strcspn(s, " ")));
    case RL_REPLY_ARRAY: break;
    default: return (size_t)snprintf(out, cap, "?");
    }
    size_t n = rl_reply_elements(r), o = 0;
    out[o++] = '[';
    for (size_t i = 0; i < n && i < 8 && depth < 3 && o + 8 < cap; i++) {
        if (i)
            out[o++] = ',';
        size_t w = raw(out + o, cap - o - 2, rl_reply_element(r, i), depth + 1);
        o += w < cap - o - 2 ? w : cap - o - 2;
    }
    out[o++] = ']';
    out[o] = '\0';
    return o;
}

void rl_trace_reply(rl_trace *t, uint32_t idx, uint32_t op, uint32_t fid, const char *kind,
                    bool late, const rl_reply *r, int err)
{
    char buf[512];
    if (r)
        raw(buf, sizeof(buf), r, 0);
    else
        snprintf(buf, sizeof(buf), "- err=%d", err);
    rl_trace_emit(t, rl_now_us(), "REP", "m=%u op=%u f=%u kind=%s late=%d raw=%s", idx, op, fid,
                  kind, late, buf);
}
