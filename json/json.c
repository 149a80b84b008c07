/* json.c - the streaming JSON writer (see json.h).
 *
 * Resource names may hold any byte but NUL, and JSON strings must be
 * Unicode, so the string writer validates UTF-8 itself instead of trusting
 * the input: a script parsing our output must never see invalid JSON.
 */
#include "json.h"

#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <string.h>

void json_init(struct json *j, FILE *f)
{
    memset(j, 0, sizeof(*j));
    j->f = f;
}

void json_init_buf(struct json *j, char *buf, size_t size)
{
    memset(j, 0, sizeof(*j));
    j->buf = buf;
    j->size = size;
    if (size > 0)
        buf[0] = '\0';
}

/* @n bytes at @p to the stream, or into the buffer as far as they fit
 * (which stays NUL-terminated). */
static void out_n(struct json *j, const void *p, size_t n)
{
    size_t room;

    if (j->f) {
        fwrite(p, 1, n, j->f);
        return;
    }
    room = j->size > j->used ? j->size - j->used - 1 : 0;
    if (n > room) {
        j->truncated = 1;
        n = room;
    }
    memcpy(j->buf + j->used, p, n);
    j->used += n;
    if (j->size > 0)
        j->buf[j->used] = '\0';
}

static void out_c(struct json *j, char c)
{
    out_n(j, &c, 1);
}

static void out_s(struct json *j, const char *s)
{
    out_n(j, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void out_f(struct json *j, const char *fmt, ...)
{
    char tmp[400]; /* a number or an escape: DBL_MAX with %f is 316 bytes */
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0)
        out_n(j, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void sep(struct json *j)
{
    if (j->need_comma)
        out_c(j, ',');
    j->need_comma = 1;
}

void json_obj_begin(struct json *j)
{
    sep(j);
    out_c(j, '{');
    j->need_comma = 0;
}

void json_obj_end(struct json *j)
{
    out_c(j, '}');
    j->need_comma = 1;
}

void json_arr_begin(struct json *j)
{
    sep(j);
    out_c(j, '[');
    j->need_comma = 0;
}

void json_arr_end(struct json *j)
{
    out_c(j, ']');
    j->need_comma = 1;
}

/* Length of the valid UTF-8 sequence starting at @s (at most @n bytes
 * available), or 0 if @s does not start one. RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

int json_utf8_valid(const void *p, size_t len)
{
    const unsigned char *s = p;

    for (size_t i = 0; i < len;) {
        size_t k = utf8_seq(s + i, len - i);

        if (k == 0)
            return 0;
        i += k;
    }
    return 1;
}

/* @len bytes at @p as a JSON string (see json_str()). */
static int put_str(struct json *j, const void *p, size_t len)
{
    const unsigned char *s = p;
    int lossless = 1;

    out_c(j, '"');
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        size_t k;

        switch (c) {
        case '"':
            out_s(j, "\\\"");
            i++;
            continue;
        case '\\':
            out_s(j, "\\\\");
            i++;
            continue;
        case '\n':
            out_s(j, "\\n");
            i++;
            continue;
        case '\r':
            out_s(j, "\\r");
            i++;
            continue;
        case '\t':
            out_s(j, "\\t");
            i++;
            continue;
        case '\b':
            out_s(j, "\\b");
            i++;
            continue;
        case '\f':
            out_s(j, "\\f");
            i++;
            continue;
        default: break;
        }
        if (c < 0x20 || c == 0x7f) {
            out_f(j, "\\u%04x", c);
            i++;
            continue;
        }
        k = utf8_seq(s + i, len - i);
        if (k == 0) {
            out_f(j, "\\u%04x", c);
            lossless = 0;
            i++;
            continue;
        }
        out_n(j, s + i, k);
        i += k;
    }
    out_c(j, '"');
    return lossless;
}

int json_str(struct json *j, const void *p, size_t len)
{
    sep(j);
    return put_str(j, p, len);
}

/* Keys are escaped as strings are: most are our literals, but some come
 * from outside (a command name a master reports). */
void json_key(struct json *j, const char *key)
{
    sep(j);
    put_str(j, key, strlen(key));
    out_c(j, ':');
    j->need_comma = 0;
}

void json_cstr(struct json *j, const char *s)
{
    if (s == NULL)
        json_null(j);
    else
        json_str(j, s, strlen(s));
}

void json_hex(struct json *j, const void *p, size_t len)
{
    const unsigned char *s = p;

    sep(j);
    out_c(j, '"');
    for (size_t i = 0; i < len; i++)
        out_f(j, "%02x", s[i]);
    out_c(j, '"');
}

void json_i64(struct json *j, int64_t v)
{
    sep(j);
    out_f(j, "%" PRId64, v);
}

void json_u64(struct json *j, uint64_t v)
{
    sep(j);
    out_f(j, "%" PRIu64, v);
}

void json_double(struct json *j, double v, int digits)
{
    if (!isfinite(v)) {
        json_null(j);
        return;
    }
    sep(j);
    /* %f never uses an exponent, and "-0.000" is still valid JSON. */
    out_f(j, "%.*f", digits, v);
}

void json_bool(struct json *j, int v)
{
    sep(j);
    out_s(j, v ? "true" : "false");
}

void json_null(struct json *j)
{
    sep(j);
    out_s(j, "null");
}

void json_raw(struct json *j, const char *text)
{
    out_s(j, text);
    if (text[0] != '\0')
        j->need_comma = 1;
}

void json_kv_cstr(struct json *j, const char *key, const char *s)
{
    json_key(j, key);
    json_cstr(j, s);
}

void json_kv_i64(struct json *j, const char *key, int64_t v)
{
    json_key(j, key);
    json_i64(j, v);
}

void json_kv_u64(struct json *j, const char *key, uint64_t v)
{
    json_key(j, key);
    json_u64(j, v);
}

void json_kv_double(struct json *j, const char *key, double v, int digits)
{
    json_key(j, key);
    json_double(j, v, digits);
}

void json_kv_bool(struct json *j, const char *key, int v)
{
    json_key(j, key);
    json_bool(j, v);
}

void json_kv_null(struct json *j, const char *key)
{
    json_key(j, key);
    json_null(j);
}

void json_end(struct json *j)
{
    out_c(j, '\n');
    if (j->f)
        fflush(j->f);
    j->need_comma = 0;
}
