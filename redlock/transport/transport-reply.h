/* transport-reply.h - reading a reply (transport-reply.c): what every reply
 * function of the library reads its answer with. Part of the transport's
 * face (transport.h includes it); a header of its own so that
 * transport-reply.c declares what it defines without standing above
 * transport.c, which calls its guard.
 */
#ifndef REDLOCK_TRANSPORT_REPLY_H
#define REDLOCK_TRANSPORT_REPLY_H

#include "transport/transport-types.h"

int rl_reply_type(const rl_reply *r);
long long rl_reply_integer(const rl_reply *r);
/* A counter as a script returns it exactly: a string of 1 to 18 decimal
 * digits (or a non-negative integer). False for anything else. */
bool rl_reply_counter(const rl_reply *r, uint64_t *out);
/* String, status or error text (NUL-terminated), and its length. */
const char *rl_reply_str(const rl_reply *r, size_t *len);
size_t rl_reply_elements(const rl_reply *r);
const rl_reply *rl_reply_element(const rl_reply *r, size_t i);
/* Is @r the status reply @s (e.g. "OK")? */
bool rl_reply_is_status(const rl_reply *r, const char *s);
/* A type as a word, for messages. */
const char *rl_reply_type_name(int type);

#endif
