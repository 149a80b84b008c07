/* error.c - the error table and the one-line error detail.
 *
 * One X-macro in redlock.h (REDLOCK_ERRNO_MAP) generates the enum and both
 * string tables here, so a new code cannot be added without a message.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

const char *redlock_strerror(int code)
{
    switch (code) {
    case 0: return "success";
#define RL_STRERROR_GEN(name, val, msg) case REDLOCK_##name: return msg;
    REDLOCK_ERRNO_MAP(RL_STRERROR_GEN)
#undef RL_STRERROR_GEN
    }
    return "unknown error";
}

const char *redlock_err_name(int code)
{
    switch (code) {
    case 0: return "OK";
#define RL_ERRNAME_GEN(name, val, msg) case REDLOCK_##name: return #name;
    REDLOCK_ERRNO_MAP(RL_ERRNAME_GEN)
#undef RL_ERRNAME_GEN
    }
    return "EUNKNOWN";
}

/* Like anetSetError: a NULL @e is fine. The message is cut to fit and kept
 * on one line, since callers print it as one. */
void rl_seterr(redlock_error *e, int code, int master, const char *fmt, ...)
{
    if (!e)
        return;
    e->code = code;
    e->master = master;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    for (char *p = e->msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}
