/* addr.h - master addresses: parsing the master list, resolving names.
 *
 * A master is written `host:port`, `[v6addr]:port`, `redis://[user:password@]host[:port][/db]`
 * (port 6379 by default), `rediss://...` (TLS) or `unix://[user:password@]/path/to.sock[?db=N]`,
 * separated by commas; credentials and paths may be percent-encoded (%2C for a comma). Parsing
 * is pure; a name is resolved at creation and before every reconnect (resolve.c), off the loop's
 * thread. Why a new address makes the master reborn: docs/memory-guard.md, "Names that move".
 */
#ifndef REDLOCK_ADDR_H
#define REDLOCK_ADDR_H

#include "redlock.h"

#include <stdbool.h>
#include <stddef.h>

#define RL_HOST_MAX 256
#define RL_NAME_MAX 280   /* display name: never holds a password */
#define RL_SECRET_MAX 256 /* user name or password from a URL */

enum rl_addr_kind { RL_ADDR_TCP, RL_ADDR_UNIX };

typedef struct rl_addr {
    int kind;                 /* enum rl_addr_kind */
    bool tls;                 /* rediss:// (or the client's tls setting) */
    bool url;                 /* written as a URL */
    char name[RL_NAME_MAX];   /* for messages, logs and JSON: no password */
    char host[RL_HOST_MAX];   /* TCP: as written (no brackets); unix: the socket path */
    int port;                 /* TCP only */
    char ip[64];              /* TCP: resolved numeric address ("" until resolved) */
    int naddrs;               /* TCP: distinct addresses of the family picked */
    int db;                   /* SELECT this database; -1: none given */
    char user[RL_SECRET_MAX]; /* URL credentials ("" when not given) */
    char password[RL_SECRET_MAX];
    bool has_password;
} rl_addr;

/* Parse @list into @out (room for REDLOCK_MAX_MASTERS). Checks shape, ranges and
 * duplicates as written; no DNS. Returns the count (> 0), or a negative
 * REDLOCK_E* with @e naming the entry and the fix. */
int rl_addr_parse_list(const char *list, rl_addr *out, redlock_error *e);

/* Resolve @a (TCP, preferring IPv4). 0 or REDLOCK_ERESOLVE / EINVAL. */
int rl_addr_resolve(rl_addr *a, int idx, redlock_error *e);

/* Look @host up as rl_addr_resolve() does: the address it picks into @ip,
 * the count of distinct addresses of its family (IPv4 if there is one) into
 * *@ret_naddrs. 0, or getaddrinfo()'s
 * error (gai_strerror). Blocks: any thread may call it. */
int rl_addr_lookup(const char *host, char ip[64], int *ret_naddrs);

/* Is @a a TCP master written as a host name (not a numeric address)? */
bool rl_addr_is_name(const rl_addr *a);

/* Do @a and @b name the same master once resolved? */
bool rl_addr_same(const rl_addr *a, const rl_addr *b);

#endif
