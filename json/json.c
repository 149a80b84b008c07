/* json.c - the streaming JSON writer (see json.h).
 *
 * Resource names may hold any byte but NUL, and JSON strings must be
 * Unicode, so the string writer validates UTF-8 itself instead of trusting
 * the input: a script parsing our output must never see invalid JSON.
 */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void json_init(struct json *j, FILE *f)
{
    j->f = f;
    j->need_comma = 0;
}

static void sep(struct json *j)
{
    if (j->need_comma)
        fputc(',', j->f);
    j->need_comma = 1;
}

void json_obj_begin(struct json *j)
{
    sep(j);
    fputc('{', j->f);
    j->need_comma = 0;
}

void json_obj_end(struct json *j)
{
    fputc('}', j->f);
    j->need_comma = 1;
}

void json_arr_begin(struct json *j)
{
    sep(j);
    fputc('[', j->f);
    j->need_comma = 0;
}

void json_arr_end(struct json *j)
{
    fputc(']', j->f);
    j->need_comma = 1;
}

void json_key(struct json *j, const char *key)
{
    sep(j);
    /* Keys are our own ASCII literals: no escaping needed. */
    fprintf(j->f, "\"%s\":", key);
    j->need_comma = 0;
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

int json_str(struct json *j, const void *p, size_t len)
{
    const unsigned char *s = p;
    int lossless = 1;

    sep(j);
    fputc('"', j->f);
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        size_t k;

        switch (c) {
        case '"':
            fputs("\\\"", j->f);
            i++;
            continue;
        case '\\':
            fputs("\\\\", j->f);
            i++;
            continue;
        case '\n':
            fputs("\\n", j->f);
            i++;
            continue;
        case '\r':
            fputs("\\r", j->f);
            i++;
            continue;
        case '\t':
            fputs("\\t", j->f);
            i++;
            continue;
        case '\b':
            fputs("\\b", j->f);
            i++;
            continue;
        case '\f':
            fputs("\\f", j->f);
            i++;
            continue;
        default: break;
        }
        if (c < 0x20 || c == 0x7f) {
            fprintf(j->f, "\\u%04x", c);
            i++;
            continue;
        }
        k = utf8_seq(s + i, len - i);
        if (k == 0) {
            fprintf(j->f, "\\u%04x", c);
            lossless = 0;
            i++;
            continue;
        }
        fwrite(s + i, 1, k, j->f);
        i += k;
    }
    fputc('"', j->f);
    return lossless;
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
    fputc('"', j->f);
    for (size_t i = 0; i < len; i++)
        fprintf(j->f, "%02x", s[i]);
    fputc('"', j->f);
}

void json_i64(struct json *j, int64_t v)
{
    sep(j);
    fprintf(j->f, "%" PRId64, v);
}

void json_u64(struct json *j, uint64_t v)
{
    sep(j);
    fprintf(j->f, "%" PRIu64, v);
}

void json_double(struct json *j, double v, int digits)
{
    if (!isfinite(v)) {
        json_null(j);
        return;
    }
    sep(j);
    /* %f never uses an exponent, and "-0.000" is still valid JSON. */
    fprintf(j->f, "%.*f", digits, v);
}

void json_bool(struct json *j, int v)
{
    sep(j);
    fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j)
{
    sep(j);
    fputs("null", j->f);
}

void json_end(struct json *j)
{
    fputc('\n', j->f);
    fflush(j->f);
    j->need_comma = 0;
}
