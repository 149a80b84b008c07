/* loop.c - a blocking client's I/O thread, and running code on a client's loop.
 *
 * One private event_base and one I/O thread per blocking client: callers
 * queue a call, wake the thread and sleep until it is done; for an async
 * client the caller is on the loop's thread and a call runs at once. Why
 * this shape, and what a blocking call costs: docs/threads.md.
 */
#include "core/loop.h"

#include <errno.h>
#include <event2/event.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

/* rl_call.state: the caller sleeps on it while it is RL_CALL_ASLEEP. */
enum { RL_CALL_PENDING, RL_CALL_ASLEEP, RL_CALL_DONE };

struct rl_blocking {
    pthread_t thread;
    pthread_mutex_t mu;  /* guards head/tail, stop, waiters, wake_sent */
    pthread_cond_t idle; /* signalled when the last waiter leaves after stop */
    rl_call *head, *tail;
    bool stop;
    bool wake_sent; /* the eventfd holds a wake-up not yet taken */
    int waiters;    /* callers inside rl_loop_submit */
    int wakefd;     /* eventfd: read by the I/O thread */
    struct event *wake_ev;
};

static void futex_wait(uint32_t *word, uint32_t val)
{
    /* Returns at once if *word is no longer @val; EINTR and spurious
     * wake-ups are the caller's loop's business. */
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void rl_call_done(redlock_client *c, rl_call *call, int status, const redlock_outcome *out,
                  const redlock_error *err)
{
    (void)c;
    /* The caller reads these only after it saw RL_CALL_DONE (acquire). */
    call->status = status;
    if (call->out && out)
        *call->out = *out;
    if (call->err) {
        if (status && err)
            *call->err = *err;
        else if (status)
            rl_seterr(call->err, status, -1, "%s", redlock_strerror(status));
    }
    /* From the exchange on, the call may be gone (its caller returned):
     * the wake below only names the address. A wake on memory that is no
     * longer a call wakes nobody, or someone who checks their own word. */
    uint32_t was = __atomic_exchange_n(&call->state, RL_CALL_DONE, __ATOMIC_RELEASE);
    if (was == RL_CALL_ASLEEP)
        futex_wake(&call->state);
}

/* Sleep until @call is done. */
static void call_wait(rl_call *call)
{
    for (;;) {
        uint32_t s = RL_CALL_PENDING;
        if (__atomic_compare_exchange_n(&call->state, &s, RL_CALL_ASLEEP, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_ACQUIRE) ||
            s == RL_CALL_ASLEEP) {
            futex_wait(&call->state, RL_CALL_ASLEEP);
            continue;
        }
        return; /* RL_CALL_DONE, with the acquire above */
    }
}

static void call_run(redlock_client *c, rl_call *call, bool stop)
{
    if (call->fn) {
        /* Functions run even when stopping: they hold references (cancel). */
        call->fn(c, call->fn_arg);
        if (call->posted)
            free(call);
        else
            rl_call_done(c, call, 0, NULL, NULL);
        return;
    }
    redlock_error err = { 0, -1, "" };
    int rc = REDLOCK_ESHUTDOWN;
    if (stop)
        rl_seterr(&err, rc, -1, "client is being freed");
    else
        rc = call->start(c, call, &err);
    if (rc != 0)
        rl_call_done(c, call, rc, NULL, &err);
}

/* ---- I/O thread side ------------------------------------------------------ */

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    redlock_client *c = arg;
    struct rl_blocking *b = c->blk;
    uint64_t n;
    /* One read empties the counter. Before the queue is taken: a call
     * queued after the take sees wake_sent false and wakes us again. */
    ssize_t r = read(fd, &n, sizeof(n));
    (void)r;
    pthread_mutex_lock(&b->mu);
    rl_call *list = b->head;
    b->head = b->tail = NULL;
    b->wake_sent = false;
    bool stop = b->stop;
    pthread_mutex_unlock(&b->mu);
    while (list) {
        rl_call *next = list->next;
        call_run(c, list, stop);
        list = next;
    }
    if (stop) {
        /* Calls still in flight in other threads complete now, with
         * ESHUTDOWN (or their real outcome if already decided), so no
         * caller is left waiting on a client that is going away. */
        c->shutdown(c);
        event_base_loopbreak(c->base);
    }
}

static void *io_main(void *arg)
{
    redlock_client *c = arg;
    event_base_dispatch(c->base);
    return NULL;
}

int rl_loop_start(redlock_client *c, redlock_error *e)
{
    struct rl_blocking *b = calloc(1, sizeof(*b));
    if (!b) {
        rl_seterr(e, REDLOCK_ENOMEM, -1, "out of memory");
        return REDLOCK_ENOMEM;
    }
    b->wakefd = -1;
    if (pthread_mutex_init(&b->mu, NULL) != 0 || pthread_cond_init(&b->idle, NULL) != 0) {
        free(b);
        rl_seterr(e, REDLOCK_ESYS, -1, "pthread_mutex_init failed");
        return REDLOCK_ESYS;
    }
    if ((b->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        goto fail;
    b->wake_ev = event_new(c->base, b->wakefd, EV_READ | EV_PERSIST, on_wake, c);
    if (!b->wake_ev || event_add(b->wake_ev, NULL) != 0)
        goto fail;
    c->blk = b;
    /* The I/O thread runs with every signal blocked: a master that drops
     * the connection mid-write then gives hiredis EPIPE instead of killing
     * the host program with SIGPIPE, and the host's signal handlers keep
     * running on its own threads. The mask is inherited at creation. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int prc = pthread_create(&b->thread, NULL, io_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (prc != 0) {
        c->blk = NULL;
        errno = prc;
        goto fail;
    }
    return 0;
fail:
    rl_seterr(e, REDLOCK_ESYS, -1, "cannot start the I/O thread: %s", strerror(errno));
    if (b->wake_ev)
        event_free(b->wake_ev);
    if (b->wakefd >= 0)
        close(b->wakefd);
    pthread_cond_destroy(&b->idle);
    pthread_mutex_destroy(&b->mu);
    free(b);
    return REDLOCK_ESYS;
}

/* Under b->mu: make sure the I/O thread will look at the queue. */
static void wake(struct rl_blocking *b)
{
    if (b->wake_sent)
        return; /* on its way: on_wake takes the queue after reading it */
    b->wake_sent = true;
    uint64_t one = 1;
    ssize_t w = write(b->wakefd, &one, sizeof(one));
    (void)w; /* cannot fail short of a counter at 2^64-1 */
}

void rl_loop_stop(redlock_client *c)
{
    struct rl_blocking *b = c->blk;
    pthread_mutex_lock(&b->mu);
    b->stop = true;
    wake(b);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    /* Callers woken with ESHUTDOWN still need b->mu to leave: wait for the
     * last of them before destroying it. */
    pthread_mutex_lock(&b->mu);
    while (b->waiters > 0)
        pthread_cond_wait(&b->idle, &b->mu);
    pthread_mutex_unlock(&b->mu);
    /* The I/O thread is gone: from here on this thread owns the base. */
    event_free(b->wake_ev);
    close(b->wakefd);
    pthread_cond_destroy(&b->idle);
    pthread_mutex_destroy(&b->mu);
    free(b);
    c->blk = NULL;
}

/* ---- caller side ----------------------------------------------------------- */

/* Under b->mu. */
static void enqueue(struct rl_blocking *b, rl_call *call)
{
    call->next = NULL;
    if (b->tail)
        b->tail->next = call;
    else
        b->head = call;
    b->tail = call;
    wake(b);
}

int rl_loop_submit(redlock_client *c, rl_call *call)
{
    struct rl_blocking *b = c->blk;
    call->state = RL_CALL_PENDING;
    pthread_mutex_lock(&b->mu);
    if (b->stop) {
        pthread_mutex_unlock(&b->mu);
        rl_seterr(call->err, REDLOCK_ESHUTDOWN, -1, "client is being freed");
        return REDLOCK_ESHUTDOWN;
    }
    b->waiters++;
    enqueue(b, call);
    pthread_mutex_unlock(&b->mu);
    call_wait(call);
    pthread_mutex_lock(&b->mu);
    if (--b->waiters == 0 && b->stop)
        pthread_cond_signal(&b->idle);
    pthread_mutex_unlock(&b->mu);
    return call->status;
}

int rl_loop_call(redlock_client *c, rl_loop_fn *fn, void *arg)
{
    if (!c->blk) {
        fn(c, arg);
        return 0;
    }
    rl_call call = { .fn = fn, .fn_arg = arg };
    return rl_loop_submit(c, &call);
}

bool rl_loop_post(redlock_client *c, rl_loop_fn *fn, void *arg)
{
    if (!c->blk) {
        fn(c, arg);
        return true;
    }
    rl_call *call = calloc(1, sizeof(*call));
    if (!call)
        return false;
    call->fn = fn;
    call->fn_arg = arg;
    call->posted = true;
    struct rl_blocking *b = c->blk;
    pthread_mutex_lock(&b->mu);
    /* The pass that sees the stop takes the queue for the last time: a
     * call queued after it would wait in a queue nobody reads, holding
     * what it was given. */
    bool ok = !b->stop;
    if (ok)
        enqueue(b, call);
    pthread_mutex_unlock(&b->mu);
    if (!ok)
        free(call);
    return ok;
}
