/* jsonread.c - a small JSON reader for redlock-cli's --json output: it
 * checks that a document is valid JSON and finds members by name, which is
 * all the CLI tests need. Failures fail the running test (cr_assert).
 */
#include "jsonread.h"

#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cli.h"

static const char *jws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static const char *jvalue(const char *p);

static const char *jstring(const char *p)
{
    if (*p++ != '"')
        return NULL;
    while (*p != '"') {
        unsigned char c = (unsigned char)*p;

        if (c == '\0' || c < 0x20)
            return NULL;
        if (c == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p[i]) || p[i] == '\0')
                        return NULL;
                p += 5;
            } else if (*p && strchr("\"\\/bfnrt", *p)) {
                p++;
            } else {
                return NULL;
            }
        } else if (c < 0x80) {
            p++;
        } else {
            /* Raw UTF-8: lead byte, then continuation bytes. */
            int n = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 ? 1 : -1;

            if (n < 0 || c > 0xf4)
                return NULL;
            p++;
            for (int i = 0; i < n; i++, p++)
                if (((unsigned char)*p & 0xc0) != 0x80)
                    return NULL;
        }
    }
    return p + 1;
}

static const char *jnumber(const char *p)
{
    const char *s;

    if (*p == '-')
        p++;
    s = p;
    while (*p >= '0' && *p <= '9')
        p++;
    if (p == s || (s[0] == '0' && p - s > 1))
        return NULL;
    if (*p == '.') {
        s = ++p;
        while (*p >= '0' && *p <= '9')
            p++;
        if (p == s)
            return NULL;
    }
    return p;
}

static const char *jcontainer(const char *p, char open, char close)
{
    if (*p++ != open)
        return NULL;
    p = jws(p);
    if (*p == close)
        return p + 1;
    for (;;) {
        if (open == '{') {
            p = jstring(p);
            if (p == NULL)
                return NULL;
            p = jws(p);
            if (*p++ != ':')
                return NULL;
        }
        p = jvalue(jws(p));
        if (p == NULL)
            return NULL;
        p = jws(p);
        if (*p == close)
            return p + 1;
        if (*p++ != ',')
            return NULL;
        p = jws(p);
    }
}

static const char *jvalue(const char *p)
{
    p = jws(p);
    switch (*p) {
    case '{': return jcontainer(p, '{', '}');
    case '[': return jcontainer(p, '[', ']');
    case '"': return jstring(p);
    case 't': return strncmp(p, "true", 4) == 0 ? p + 4 : NULL;
    case 'f': return strncmp(p, "false", 5) == 0 ? p + 5 : NULL;
    case 'n': return strncmp(p, "null", 4) == 0 ? p + 4 : NULL;
    default: return jnumber(p);
    }
}

/* @doc must be exactly one JSON object and a newline. */
void tcli_assert_one_json_object(const char *doc)
{
    const char *end;

    cr_assert(doc[0] == '{', "not a JSON object: %s", doc);
    end = jvalue(doc);
    cr_assert(end != NULL, "invalid JSON: %s", doc);
    cr_assert(strcmp(end, "\n") == 0, "trailing bytes after the JSON object: '%s'", end);
}

/* The value of member @key of the object at @obj, or NULL. */
const char *tcli_jget(const char *obj, const char *key)
{
    const char *p = jws(obj);
    size_t kl = strlen(key);

    cr_assert(tcli_yes(*p == '{'), "tcli_jget(%s): not an object", key);
    p = jws(p + 1);
    while (*p == '"') {
        const char *k = p + 1, *v;

        p = jstring(p);
        cr_assert(p != NULL);
        p = jws(p);
        cr_assert(tcli_yes(*p == ':'));
        v = jws(p + 1);
        if ((size_t)(p - k - 1) == kl && strncmp(k, key, kl) == 0)
            return v;
        p = jws(jvalue(v));
        if (*p == ',')
            p = jws(p + 1);
    }
    return NULL;
}

/* Element @i of the array at @arr, or NULL. */
const char *tcli_jindex(const char *arr, int i)
{
    const char *p = jws(arr);

    cr_assert(tcli_yes(*p == '['));
    p = jws(p + 1);
    if (*p == ']')
        return NULL;
    for (int k = 0; k < i; k++) {
        p = jws(jvalue(p));
        if (*p != ',')
            return NULL;
        p = jws(p + 1);
    }
    return p;
}

const char *tcli_jreq(const char *obj, const char *key)
{
    const char *v = tcli_jget(obj, key);

    cr_assert(v != NULL, "JSON member \"%s\" missing in %s", key, obj);
    return v;
}

long long tcli_jint(const char *obj, const char *key)
{
    const char *v = tcli_jreq(obj, key);

    cr_assert(tcli_yes((*v >= '0' && *v <= '9') || *v == '-'), "\"%s\" is not a number: %.40s", key,
              v);
    return strtoll(v, NULL, 10);
}

double tcli_jdouble(const char *obj, const char *key)
{
    const char *v = tcli_jreq(obj, key);

    cr_assert(tcli_yes((*v >= '0' && *v <= '9') || *v == '-'), "\"%s\" is not a number: %.40s", key,
              v);
    return strtod(v, NULL);
}

int tcli_jbool(const char *obj, const char *key)
{
    const char *v = tcli_jreq(obj, key);

    cr_assert(strncmp(v, "true", 4) == 0 || strncmp(v, "false", 5) == 0,
              "\"%s\" is not a boolean: %.40s", key, v);
    return v[0] == 't';
}

int tcli_jnull(const char *obj, const char *key)
{
    return strncmp(tcli_jreq(obj, key), "null", 4) == 0;
}

/* A string member without escapes (tokens, addresses, codes) into @buf. */
char *tcli_jstr(const char *obj, const char *key, char *buf, size_t size)
{
    const char *v = tcli_jreq(obj, key), *e;

    cr_assert(tcli_yes(*v == '"'), "\"%s\" is not a string: %.40s", key, v);
    e = strchr(v + 1, '"');
    cr_assert(e != NULL && (size_t)(e - v - 1) < size);
    memcpy(buf, v + 1, (size_t)(e - v - 1));
    buf[e - v - 1] = '\0';
    return buf;
}

/* Array element @i, a string without escapes, into @buf. */
char *tcli_jelem_str(const char *arr, int i, char *buf, size_t size)
{
    const char *v = tcli_jindex(arr, i), *e;

    cr_assert(v != NULL && *v == '"', "element %d is not a string", i);
    e = strchr(v + 1, '"');
    cr_assert(e != NULL && (size_t)(e - v - 1) < size);
    memcpy(buf, v + 1, (size_t)(e - v - 1));
    buf[e - v - 1] = '\0';
    return buf;
}
