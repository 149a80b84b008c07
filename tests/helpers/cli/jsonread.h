/* jsonread.h - reading redlock-cli's --json output in tests: validate the
 * one object, find its members. Every accessor fails the running test when
 * the member is missing or of another type.
 */
#ifndef TCLI_JSONREAD_H
#define TCLI_JSONREAD_H

#include <stddef.h>

/* @doc must be exactly one JSON object and a newline. */
void tcli_assert_one_json_object(const char *doc);

/* The value of member @key of the object at @obj, or NULL. */
const char *tcli_jget(const char *obj, const char *key);
/* Element @i of the array at @arr, or NULL. */
const char *tcli_jindex(const char *arr, int i);
/* tcli_jget(), failing the test when @key is missing. */
const char *tcli_jreq(const char *obj, const char *key);

long long tcli_jint(const char *obj, const char *key);
double tcli_jdouble(const char *obj, const char *key);
int tcli_jbool(const char *obj, const char *key);
int tcli_jnull(const char *obj, const char *key);
/* A string member without escapes (tokens, addresses, codes) into @buf. */
char *tcli_jstr(const char *obj, const char *key, char *buf, size_t size);
/* Array element @i, a string without escapes, into @buf. */
char *tcli_jelem_str(const char *arr, int i, char *buf, size_t size);

#endif
