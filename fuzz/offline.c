/* offline.c - keep a fuzz harness off the network.
 *
 * redlock_client_new() resolves every master's host with getaddrinfo() and
 * starts a non-blocking connect() to each before it returns, so a harness
 * that feeds it random master lists would send DNS queries for random names
 * and SYNs to random addresses (or hammer whatever listens on loopback,
 * such as the masters of a test running next to us). Linked into a harness,
 * the two definitions below replace libc's, for the library and for
 * libhiredis alike (the executable comes first in the dynamic linker's
 * search order; the sanitizers' own interceptors for these are weak):
 *
 *   getaddrinfo() resolves numeric addresses only (AI_NUMERICHOST), plus
 *     "localhost" as /etc/hosts usually has it (::1, then 127.0.0.1), so
 *     both the "prefer IPv4" choice and the duplicate check still run;
 *     any other name fails with EAI_NONAME: the ERESOLVE path.
 *   connect() fails at once with ECONNREFUSED: hiredis reports the refused
 *     connect and the node schedules a reconnect that never fires.
 *
 * Only for harnesses that must not talk to anything: fuzz-reply, which talks
 * to its own fake masters on loopback, does not link this file.
 */
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

typedef int gai_fn(const char *, const char *, const struct addrinfo *, struct addrinfo **);

static gai_fn *libc_getaddrinfo(void)
{
    static gai_fn *fn;

    if (fn == NULL)
        fn = (gai_fn *)dlsym(RTLD_NEXT, "getaddrinfo");
    return fn;
}

/* Numeric only: never a query to a resolver. */
static int numeric(const char *node, const char *service, const struct addrinfo *hints,
                   struct addrinfo **res)
{
    struct addrinfo h;
    gai_fn *fn = libc_getaddrinfo();

    if (fn == NULL)
        return EAI_SYSTEM;
    memset(&h, 0, sizeof(h));
    if (hints != NULL)
        h = *hints;
    h.ai_flags |= AI_NUMERICHOST;
    return fn(node, service, &h, res);
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    struct addrinfo *v6 = NULL, *v4 = NULL, *tail;
    int family = hints != NULL ? hints->ai_family : AF_UNSPEC;

    if (node == NULL || strcmp(node, "localhost") != 0)
        return numeric(node, service, hints, res);
    /* glibc's freeaddrinfo() frees entry by entry, so two lists joined into
     * one are freed correctly by the caller's single call. */
    if (family == AF_UNSPEC || family == AF_INET6)
        numeric("::1", service, hints, &v6);
    if (family == AF_UNSPEC || family == AF_INET)
        numeric("127.0.0.1", service, hints, &v4);
    if (v6 == NULL && v4 == NULL)
        return EAI_NONAME;
    if (v6 == NULL) {
        *res = v4;
        return 0;
    }
    for (tail = v6; tail->ai_next != NULL; tail = tail->ai_next)
        ;
    tail->ai_next = v4;
    *res = v6;
    return 0;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    (void)fd;
    (void)addr;
    (void)len;
    errno = ECONNREFUSED;
    return -1;
}
