/* json.h - the one JSON writer of the tree: redlock-cli's --json output and
 * redlock-bench's result lines (an internal static library, json/).
 *
 * Enough for one object per line: objects, arrays, strings of any bytes,
 * numbers, booleans and null. Commas are placed by the writer, so callers
 * only say key, value, key, value.
 */
#ifndef REDLOCK_JSON_H
#define REDLOCK_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct json {
    FILE *f;   /* the stream written to, or NULL: */
    char *buf; /* ... the buffer, NUL-terminated, of @size bytes */
    size_t size, used;
    int truncated;  /* the buffer was too small: what did not fit is lost */
    int need_comma; /* a value was written at this level: the next needs ',' */
};

/* A writer onto the stream @f. */
void json_init(struct json *j, FILE *f);
/* A writer into @buf (@size bytes, kept NUL-terminated, cut when full):
 * members kept to be written into a line later. */
void json_init_buf(struct json *j, char *buf, size_t size);
void json_obj_begin(struct json *j);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j);
void json_arr_end(struct json *j);
void json_key(struct json *j, const char *key);

/* A string of @len bytes. Valid UTF-8 is written as is (control characters,
 * '"' and '\' escaped); every byte that is not part of valid UTF-8 is
 * written as \u00XX, i.e. read as Latin-1. Return: 1 if the bytes were
 * valid UTF-8 (the string round-trips), 0 if some byte was mapped. */
int json_str(struct json *j, const void *s, size_t len);
void json_cstr(struct json *j, const char *s); /* NULL: null */
void json_hex(struct json *j, const void *s, size_t len);
void json_i64(struct json *j, int64_t v);
void json_u64(struct json *j, uint64_t v);
/* A number with @digits decimals; null if not finite (JSON has no NaN). */
void json_double(struct json *j, double v, int digits);
void json_bool(struct json *j, int v);
void json_null(struct json *j);

/* @text as it is: JSON another writer made (members it kept in a buffer,
 * to go into this object). */
void json_raw(struct json *j, const char *text);

/* A member in one call: json_key(@key), then the value as above. */
void json_kv_cstr(struct json *j, const char *key, const char *s); /* NULL: null */
void json_kv_i64(struct json *j, const char *key, int64_t v);
void json_kv_u64(struct json *j, const char *key, uint64_t v);
void json_kv_double(struct json *j, const char *key, double v, int digits);
void json_kv_bool(struct json *j, const char *key, int v);
void json_kv_null(struct json *j, const char *key);

/* Finish the document: newline and flush. */
void json_end(struct json *j);

/* 1 if @len bytes at @s are valid UTF-8 (no overlongs, no surrogates). */
int json_utf8_valid(const void *s, size_t len);

#endif
