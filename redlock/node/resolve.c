/* resolve.c - a master's name looked up on a thread of its own (resolve.h).
 *
 * One job per look-up, two holders: the thread, until it has written its
 * answer and the byte that wakes the loop; the owner, until the answer has
 * been read or it cancelled. The last to let go frees the job and closes
 * the pipe; the thread never touches the watch, which only the loop's
 * thread sets, fires and frees.
 */
#include "node/resolve.h"
#include "base/addr.h"
#include "base/reactor.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rl_resolve {
    pthread_mutex_t mu; /* refs and the answer */
    int refs;           /* the thread, the owner */
    int fds[2];         /* the thread writes one byte to fds[1] when the answer is in */
    rl_watch watch;     /* fds[0] on the owner's loop; owner's side only */
    rl_resolve_fn *fn;
    void *arg;
    char host[RL_HOST_MAX];
    int gai; /* the answer */
    char ip[64];
    int naddrs;
};

static void job_unref(rl_resolve *r)
{
    pthread_mutex_lock(&r->mu);
    bool last = --r->refs == 0;
    pthread_mutex_unlock(&r->mu);
    if (!last)
        return;
    close(r->fds[0]);
    close(r->fds[1]);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static void *job_run(void *p)
{
    rl_resolve *r = p;
    char ip[64] = "";
    int naddrs = 0;
    int gai = rl_addr_lookup(r->host, ip, &naddrs);
    pthread_mutex_lock(&r->mu);
    r->gai = gai;
    memcpy(r->ip, ip, sizeof(r->ip));
    r->naddrs = naddrs;
    pthread_mutex_unlock(&r->mu);
    /* The pipe is empty and its read end open (we hold a reference): one
     * byte never blocks and never raises SIGPIPE. */
    char b = 1;
    while (write(r->fds[1], &b, 1) < 0 && errno == EINTR)
        ;
    job_unref(r);
    return NULL;
}

static void job_on_answer(void *arg, int events)
{
    (void)events;
    rl_resolve *r = arg;
    char b;
    while (read(r->fds[0], &b, 1) < 0 && errno == EINTR)
        ;
    char ip[64];
    pthread_mutex_lock(&r->mu);
    int gai = r->gai, naddrs = r->naddrs;
    memcpy(ip, r->ip, sizeof(ip));
    pthread_mutex_unlock(&r->mu);
    rl_resolve_fn *fn = r->fn;
    void *fn_arg = r->arg;
    rl_watch_fini(&r->watch);
    job_unref(r); /* the owner's: it is done with the job before it hears the answer */
    fn(fn_arg, gai, ip, naddrs);
}

rl_resolve *rl_resolve_start(const redlock_loop *loop, const char *host, rl_resolve_fn *fn,
                             void *arg)
{
    rl_resolve *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    if (pipe2(r->fds, O_CLOEXEC) != 0) {
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    r->refs = 2;
    r->fn = fn;
    r->arg = arg;
    snprintf(r->host, sizeof(r->host), "%s", host);
    if (rl_watch_init(&r->watch, loop, r->fds[0], job_on_answer, r) != 0 ||
        rl_watch_set(&r->watch, REDLOCK_LOOP_READ) != 0)
        goto fail;
    /* The thread takes no signal of the program's: they stay with the
     * threads that expect them (it inherits this mask). */
    pthread_attr_t attr;
    sigset_t all, old;
    sigfillset(&all);
    if (pthread_attr_init(&attr) != 0)
        goto fail;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    int rc = pthread_create(&t, &attr, job_run, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        goto fail;
    return r;
fail:
    rl_watch_fini(&r->watch);
    close(r->fds[0]);
    close(r->fds[1]);
    pthread_mutex_destroy(&r->mu);
    free(r);
    return NULL;
}

void rl_resolve_cancel(rl_resolve *r)
{
    if (!r)
        return;
    rl_watch_fini(&r->watch);
    job_unref(r);
}
