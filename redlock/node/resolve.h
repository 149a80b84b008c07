/* resolve.h - looking a master's name up again, off the loop's thread.
 *
 * getaddrinfo() blocks as long as the resolver takes (resolv.conf: 5 s x 2
 * by default); a job runs it on a short-lived detached thread and hands the
 * answer back through a pipe read on the client's loop. Whoever lets go of
 * the job last frees it. Why, and what a freed owner does: docs/memory-guard.md,
 * "Names that move".
 */
#ifndef REDLOCK_RESOLVE_H
#define REDLOCK_RESOLVE_H

#include "base/reactor.h"

typedef struct rl_resolve rl_resolve;

/* The answer: @gai 0 and the address rl_addr_lookup() picked (@ip) and
 * the count of distinct addresses (@naddrs), or getaddrinfo()'s error
 * (gai_strerror(@gai)). @ip is valid during the call only. */
typedef void rl_resolve_fn(void *arg, int gai, const char *ip, int naddrs);

/* Look @host up; @fn runs exactly once, from @loop, unless
 * rl_resolve_cancel() comes first. NULL when it cannot start (no memory,
 * no pipe, no thread): @fn never runs. Call on the loop's thread. */
rl_resolve *rl_resolve_start(const redlock_loop *loop, const char *host, rl_resolve_fn *fn,
                             void *arg);

/* Give up @r's answer: @fn will not run. On the loop's thread, before @fn
 * ran (after it, the job is gone). NULL: nothing. */
void rl_resolve_cancel(rl_resolve *r);

#endif
