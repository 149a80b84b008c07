/* history.c - the history recorder (history.h) and a way to run the checker.
 *
 * Lines are JSON so the checker needs nothing but python3's standard
 * library; each is formatted into one buffer and appended with one write(2)
 * on an O_APPEND descriptor. POSIX makes O_APPEND's seek-and-write atomic
 * and Linux serialises writes to one regular file, so lines from many
 * threads and processes never tear or interleave.
 */
#include "history.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "await.h"
#include "spawn.h"

#ifndef TC_HIST_CHECK_PY
#define TC_HIST_CHECK_PY "tests/history/check.py"
#endif

struct tc_hist {
    int fd;
    char *path;
};

/* A line never needs more: a resource is at most 1024 bytes + a prefix,
 * 6 bytes each once escaped, and the other fields fit in a few hundred. */
#define TC_HIST_LINE_MAX 16384

static const char *const op_names[] = {
    [TC_HIST_ACQUIRE] = "acquire", [TC_HIST_EXTEND] = "extend", [TC_HIST_RELEASE] = "release",
    [TC_HIST_USE] = "use",         [TC_HIST_FAULT] = "fault",   [TC_HIST_KEY] = "key",
};

tc_hist *tc_hist_open(const char *path)
{
    tc_hist *h = calloc(1, sizeof(*h));

    if (!h)
        return NULL;
    h->path = strdup(path);
    if (!h->path) {
        free(h);
        errno = ENOMEM;
        return NULL;
    }
    h->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (h->fd < 0) {
        int e = errno;

        free(h->path);
        free(h);
        errno = e;
        return NULL;
    }
    return h;
}

void tc_hist_close(tc_hist *h)
{
    if (!h)
        return;
    close(h->fd);
    free(h->path);
    free(h);
}

const char *tc_hist_path(const tc_hist *h)
{
    return h->path;
}

/* ---- line building ------------------------------------------------------ */

typedef struct buf {
    char *p;
    size_t len, cap;
    int overflow;
} buf;

__attribute__((format(printf, 2, 3))) static void put(buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->overflow)
        return;
    va_start(ap, fmt);
    n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->cap - b->len)
        b->overflow = 1;
    else
        b->len += (size_t)n;
}

/* A JSON string of arbitrary bytes. Bytes that are not printable ASCII are
 * written as \u00XX: the checker reads the name back as latin-1, one code
 * point per byte, so every byte string maps to a distinct name. */
static void put_str(buf *b, const char *key, const void *s, size_t len)
{
    const unsigned char *p = s;

    put(b, ",\"%s\":\"", key);
    for (size_t i = 0; i < len && !b->overflow; i++) {
        unsigned char c = p[i];

        if (c == '"' || c == '\\')
            put(b, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            put(b, "\\u%04x", c);
        else
            put(b, "%c", c);
    }
    put(b, "\"");
}

int tc_hist_write(tc_hist *h, const tc_hist_rec *r)
{
    buf b = { .cap = TC_HIST_LINE_MAX };
    uint64_t complete = r->complete_us ? r->complete_us : tc_now_us();
    int rc = 0;

    if (!h || !r || r->op < TC_HIST_ACQUIRE || r->op > TC_HIST_KEY)
        return -EINVAL;
    b.p = malloc(b.cap);
    if (!b.p)
        return -ENOMEM;
    put(&b, "{\"op\":\"%s\"", op_names[r->op]);
    if (r->client)
        put_str(&b, "client", r->client, strlen(r->client));
    if (r->res)
        put_str(&b, "res", r->res, r->res_len);
    put(&b, ",\"invoke\":%llu,\"complete\":%llu",
        (unsigned long long)(r->invoke_us ? r->invoke_us : complete), (unsigned long long)complete);
    if (r->op != TC_HIST_FAULT && r->op != TC_HIST_KEY)
        put(&b, ",\"rc\":%d,\"code\":\"%s\"", r->rc, redlock_err_name(r->rc));
    if (r->token)
        put_str(&b, "token", r->token, strlen(r->token));
    if (r->has_vend)
        put(&b, ",\"vend\":%llu", (unsigned long long)r->vend_us);
    if (r->op == TC_HIST_ACQUIRE || r->op == TC_HIST_EXTEND)
        put(&b, ",\"fence\":%llu,\"ttl\":%u,\"oks\":%u,\"n_ok\":%u", (unsigned long long)r->fence,
            r->ttl_ms, r->oks, r->n_ok);
    if (r->op == TC_HIST_ACQUIRE && r->attempts)
        put(&b, ",\"attempts\":%u", r->attempts);
    if (r->op == TC_HIST_RELEASE)
        put(&b, ",\"oks\":%u,\"n_ok\":%u", r->oks, r->n_ok);
    if (r->votes)
        put_str(&b, "votes", r->votes, strlen(r->votes));
    if (r->op == TC_HIST_USE)
        put(&b, ",\"late\":%d", r->late ? 1 : 0);
    if (r->op == TC_HIST_FAULT || r->op == TC_HIST_KEY)
        put(&b, ",\"master\":%d", r->master);
    if (r->op == TC_HIST_FAULT) {
        put_str(&b, "what", r->what ? r->what : "?", strlen(r->what ? r->what : "?"));
        put(&b, ",\"lost\":%d", r->lost ? 1 : 0);
    }
    if (r->op == TC_HIST_KEY)
        put(&b, ",\"pttl\":%lld", (long long)r->pttl_ms);
    put(&b, "}\n");
    if (b.overflow) {
        free(b.p);
        return -E2BIG;
    }

    /* One write: O_APPEND places it at the end atomically. A regular file
     * does not take short writes except when the disk is full. */
    for (;;) {
        ssize_t n = write(h->fd, b.p, b.len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = -errno;
        else if ((size_t)n != b.len)
            rc = -EIO;
        break;
    }
    free(b.p);
    return rc;
}

/* ---- redlock calls ------------------------------------------------------ */

uint32_t tc_hist_oks(const redlock_outcome *out)
{
    uint32_t oks = 0;

    if (!out)
        return 0;
    for (uint32_t i = 0; i < redlock_outcome_masters(out) && i < REDLOCK_MAX_MASTERS; i++)
        if (redlock_outcome_vote(out, i)->kind == REDLOCK_VOTE_OK)
            oks |= 1u << i;
    return oks;
}

char *tc_hist_votes(const redlock_outcome *out, char *buf)
{
    static const char letters[] = {
        [REDLOCK_VOTE_NONE] = '-', [REDLOCK_VOTE_PENDING] = 'P', [REDLOCK_VOTE_OK] = 'O',
        [REDLOCK_VOTE_HELD] = 'H', [REDLOCK_VOTE_GONE] = 'G',    [REDLOCK_VOTE_TIMEOUT] = 'T',
        [REDLOCK_VOTE_DOWN] = 'D', [REDLOCK_VOTE_ERROR] = 'E',   [REDLOCK_VOTE_EXCLUDED] = 'X',
    };
    uint32_t n = out ? redlock_outcome_masters(out) : 0;

    if (n > REDLOCK_MAX_MASTERS)
        n = REDLOCK_MAX_MASTERS;
    for (uint32_t i = 0; i < n; i++) {
        int k = redlock_outcome_vote(out, i)->kind;

        buf[i] = k >= 0 && k < (int)sizeof(letters) ? letters[k] : '?';
    }
    buf[n] = '\0';
    return buf;
}

/* Fill the fields every lock line shares. The completion time is read
 * before the validity, so complete + validity is at most the library's
 * own end of the lease. */
static void lock_rec(tc_hist_rec *r, const char *client, int op, uint64_t invoke_us, int rc,
                     const redlock_lock *lock, const redlock_outcome *out, char *votes)
{
    memset(r, 0, sizeof(*r));
    r->client = client;
    r->op = op;
    r->invoke_us = invoke_us;
    r->complete_us = tc_now_us();
    r->rc = rc;
    r->master = -1;
    if (lock) {
        int64_t v = redlock_lock_validity_ms(lock);

        r->res = redlock_lock_resource(lock, &r->res_len);
        r->token = redlock_lock_token(lock);
        r->fence = redlock_lock_fence(lock);
        if (op != TC_HIST_RELEASE && op != TC_HIST_USE) {
            r->has_vend = 1;
            r->vend_us = (uint64_t)((int64_t)r->complete_us + v * 1000);
        }
    }
    r->oks = tc_hist_oks(out);
    r->n_ok = out ? redlock_outcome_ok(out) : 0;
    r->votes = out ? tc_hist_votes(out, votes) : NULL;
}

int tc_hist_acquire(tc_hist *h, const char *client, const void *res, size_t len, uint32_t ttl_ms,
                    uint64_t invoke_us, int rc, const redlock_lock *lock,
                    const redlock_outcome *out)
{
    char votes[REDLOCK_MAX_MASTERS + 1];
    tc_hist_rec r;

    lock_rec(&r, client, TC_HIST_ACQUIRE, invoke_us, rc, rc == 0 ? lock : NULL, out, votes);
    if (!r.res) {
        r.res = res;
        r.res_len = len;
    }
    r.ttl_ms = ttl_ms;
    r.attempts = out ? redlock_outcome_attempts(out) : 0;
    return tc_hist_write(h, &r);
}

int tc_hist_extend(tc_hist *h, const char *client, uint32_t ttl_ms, uint64_t invoke_us, int rc,
                   const redlock_lock *lock, const redlock_outcome *out)
{
    char votes[REDLOCK_MAX_MASTERS + 1];
    tc_hist_rec r;

    lock_rec(&r, client, TC_HIST_EXTEND, invoke_us, rc, lock, out, votes);
    r.ttl_ms = ttl_ms;
    return tc_hist_write(h, &r);
}

int tc_hist_release(tc_hist *h, const char *client, uint64_t invoke_us, int rc,
                    const redlock_lock *lock, const redlock_outcome *out)
{
    char votes[REDLOCK_MAX_MASTERS + 1];
    tc_hist_rec r;

    lock_rec(&r, client, TC_HIST_RELEASE, invoke_us, rc, lock, out, votes);
    return tc_hist_write(h, &r);
}

int tc_hist_use(tc_hist *h, const char *client, uint64_t invoke_us, const redlock_lock *lock,
                int late)
{
    tc_hist_rec r;

    lock_rec(&r, client, TC_HIST_USE, invoke_us, 0, lock, NULL, NULL);
    r.late = late;
    return tc_hist_write(h, &r);
}

int tc_hist_fault(tc_hist *h, const char *what, int master, int lost, uint64_t invoke_us)
{
    tc_hist_rec r = {
        .client = "test",
        .op = TC_HIST_FAULT,
        .invoke_us = invoke_us,
        .master = master,
        .lost = lost,
        .what = what,
    };

    return tc_hist_write(h, &r);
}

int tc_hist_key(tc_hist *h, int master, const void *res, size_t len, const char *token,
                int64_t pttl_ms)
{
    tc_hist_rec r = {
        .client = "snapshot",
        .op = TC_HIST_KEY,
        .res = res,
        .res_len = len,
        .token = token,
        .master = master,
        .pttl_ms = pttl_ms,
    };

    return tc_hist_write(h, &r);
}

/* ---- the checker -------------------------------------------------------- */

int tc_hist_check(const char *history, const char *snapshot, const char *const *args, char *out,
                  size_t size)
{
    const char *py = getenv("REDLOCK_PYTHON");
    const char *script = getenv("REDLOCK_HISTORY_CHECK");
    const char *argv[32];
    int k = 0;

    if (!py || !*py)
        py = "python3";
    if (!script || !*script)
        script = TC_HIST_CHECK_PY;
    argv[k++] = py;
    argv[k++] = script;
    if (snapshot) {
        argv[k++] = "--snapshot";
        argv[k++] = snapshot;
    }
    for (int i = 0; args && args[i] && k < 29; i++)
        argv[k++] = args[i];
    argv[k++] = history;
    argv[k] = NULL;
    /* Output that does not fit keeps its head (the first violation) and
     * its tail (the last one and the summary line). */
    return tc_spawn(argv, out, size);
}
