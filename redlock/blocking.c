/* blocking.c - the blocking, thread-safe API over the async core.
 *
 * One private event_base and one I/O thread per blocking client. Callers on
 * any thread put a request on a mutex-protected queue, wake the I/O thread
 * through a pipe, and sleep on their own condition variable. The I/O thread
 * starts each request as an ordinary async op, so requests from many threads
 * are in flight together and share the N connections as pipelines: nothing
 * is serialised behind one caller. Only this thread ever touches hiredis or
 * the base, so they need no locks of their own.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum rl_req_kind { REQ_ACQUIRE, REQ_RELEASE, REQ_EXTEND, REQ_STATUS, REQ_PING, REQ_WD_START,
                   REQ_WD_STOP };

typedef struct rl_req {
    int kind;
    struct rl_req *next;
    pthread_cond_t cond;          /* signalled under blk->mu when done */
    bool done;
    int status;
    const void *resource;         /* status: borrowed from the caller */
    size_t len;
    const redlock_resource *set;  /* acquire: borrowed from the caller */
    size_t count;
    unsigned flags;
    uint32_t ttl_ms;
    redlock_lock *lock;           /* in: release/extend; out: acquire */
    redlock_outcome *out;         /* optional */
    redlock_error *err;           /* optional */
    redlock_status *st;           /* status/ping */
    redlock_lost_cb lost_cb;      /* watchdog start */
    void *lost_arg;
} rl_req;

struct rl_blocking {
    pthread_t thread;
    pthread_mutex_t mu;           /* guards head/tail, stop, waiters and every req->done */
    pthread_cond_t idle;          /* signalled when the last waiter leaves after stop */
    rl_req *head, *tail;
    bool stop;
    int waiters;                  /* callers inside submit_and_wait */
    int pipefd[2];                /* wake-up: [0] read by the I/O thread */
    struct event *wake_ev;
};

/* ---- I/O thread side ------------------------------------------------------ */

static void req_finish(redlock_client *c, rl_req *req, int status,
                       const redlock_outcome *out, const redlock_error *err)
{
    struct rl_blocking *b = c->blk;
    pthread_mutex_lock(&b->mu);
    req->status = status;
    if (req->out && out)
        *req->out = *out;
    if (req->err) {
        if (status && err)
            *req->err = *err;
        else if (status)
            rl_seterr(req->err, status, -1, "%s", redlock_strerror(status));
    }
    req->done = true;
    /* Signal while holding the mutex: the caller cannot wake, return and
     * destroy req->cond before we have let go of it. */
    pthread_cond_signal(&req->cond);
    pthread_mutex_unlock(&b->mu);
}

static void on_acquired(redlock_client *c, int status, redlock_lock *lock,
                        const redlock_outcome *out, const redlock_error *err, void *arg)
{
    rl_req *req = arg;
    req->lock = lock;
    req_finish(c, req, status, out, err);
}

static void on_op_done(redlock_client *c, int status, redlock_lock *lock,
                       const redlock_outcome *out, const redlock_error *err, void *arg)
{
    (void)lock;
    req_finish(c, arg, status, out, err);
}

static void on_status_done(redlock_client *c, int status, redlock_status *st,
                           const redlock_error *err, void *arg)
{
    (void)st;
    req_finish(c, arg, status, NULL, err);
}

static void req_start(redlock_client *c, rl_req *req)
{
    redlock_error err = { 0, -1, "" };
    int rc;
    switch (req->kind) {
    case REQ_ACQUIRE:
        rc = rl_acquire_start(c, req->set, req->count, req->ttl_ms, req->flags, on_acquired, req,
                              &err);
        break;
    case REQ_RELEASE:
        rc = rl_release_start(c, req->lock, on_op_done, req, &err);
        break;
    case REQ_EXTEND:
        rc = rl_extend_start(c, req->lock, req->ttl_ms, on_op_done, req, &err);
        break;
    case REQ_STATUS:
        rc = rl_status_start(c, req->resource, req->len, req->st, on_status_done, req, &err);
        break;
    case REQ_WD_START:
        /* Synchronous on this thread: finish the request either way. */
        rc = rl_watchdog_start(c, req->lock, req->lost_cb, req->lost_arg, &err);
        req_finish(c, req, rc, NULL, &err);
        return;
    case REQ_WD_STOP:
        rl_watchdog_stop(c, req->lock);
        req_finish(c, req, 0, NULL, NULL);
        return;
    default:
        rc = rl_ping_start(c, req->st, on_status_done, req, &err);
        break;
    }
    if (rc != 0)
        req_finish(c, req, rc, NULL, &err);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    redlock_client *c = arg;
    struct rl_blocking *b = c->blk;
    char buf[64];
    /* Drain first, then take the queue: a request queued after the take
     * finds the queue empty and writes a new wake-up byte. */
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    pthread_mutex_lock(&b->mu);
    rl_req *list = b->head;
    b->head = b->tail = NULL;
    bool stop = b->stop;
    pthread_mutex_unlock(&b->mu);
    while (list) {
        rl_req *next = list->next;
        if (stop) {
            redlock_error e;
            rl_seterr(&e, REDLOCK_ESHUTDOWN, -1, "client is being freed");
            req_finish(c, list, REDLOCK_ESHUTDOWN, NULL, &e);
        } else {
            req_start(c, list);
        }
        list = next;
    }
    if (stop) {
        /* Calls still in flight in other threads complete now, with
         * ESHUTDOWN (or their real outcome if already decided), so no
         * caller is left waiting on a client that is going away. */
        rl_client_cancel_ops(c);
        event_base_loopbreak(c->base);
    }
}

static void *io_main(void *arg)
{
    redlock_client *c = arg;
    event_base_dispatch(c->base);
    return NULL;
}

int rl_blocking_start(redlock_client *c, redlock_error *reterr)
{
    struct rl_blocking *b = calloc(1, sizeof(*b));
    if (!b) {
        rl_seterr(reterr, REDLOCK_ENOMEM, -1, "out of memory");
        return REDLOCK_ENOMEM;
    }
    b->pipefd[0] = b->pipefd[1] = -1;
    if (pthread_mutex_init(&b->mu, NULL) != 0 || pthread_cond_init(&b->idle, NULL) != 0) {
        free(b);
        rl_seterr(reterr, REDLOCK_ESYS, -1, "pthread_mutex_init failed");
        return REDLOCK_ESYS;
    }
    if (pipe2(b->pipefd, O_NONBLOCK | O_CLOEXEC) != 0)
        goto fail;
    b->wake_ev = event_new(c->base, b->pipefd[0], EV_READ | EV_PERSIST, on_wake, c);
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
    rl_seterr(reterr, REDLOCK_ESYS, -1, "cannot start the I/O thread: %s", strerror(errno));
    if (b->wake_ev)
        event_free(b->wake_ev);
    if (b->pipefd[0] >= 0) {
        close(b->pipefd[0]);
        close(b->pipefd[1]);
    }
    pthread_cond_destroy(&b->idle);
    pthread_mutex_destroy(&b->mu);
    free(b);
    return REDLOCK_ESYS;
}

static void wake(struct rl_blocking *b)
{
    /* A full pipe already means "wake up": EAGAIN is fine. */
    ssize_t w = write(b->pipefd[1], "w", 1);
    (void)w;
}

void rl_blocking_stop(redlock_client *c)
{
    struct rl_blocking *b = c->blk;
    pthread_mutex_lock(&b->mu);
    b->stop = true;
    pthread_mutex_unlock(&b->mu);
    wake(b);
    pthread_join(b->thread, NULL);
    /* Callers woken with ESHUTDOWN still need b->mu to leave: wait for the
     * last of them before destroying it. */
    pthread_mutex_lock(&b->mu);
    while (b->waiters > 0)
        pthread_cond_wait(&b->idle, &b->mu);
    pthread_mutex_unlock(&b->mu);
    /* The I/O thread is gone: from here on this thread owns the base. */
    event_free(b->wake_ev);
    close(b->pipefd[0]);
    close(b->pipefd[1]);
    pthread_cond_destroy(&b->idle);
    pthread_mutex_destroy(&b->mu);
    free(b);
    c->blk = NULL;
}

/* ---- caller side ----------------------------------------------------------- */

static int check_blocking(redlock_client *c, redlock_error *reterr)
{
    if (!c) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "client is NULL");
        return REDLOCK_EINVAL;
    }
    if (!c->blk) {
        rl_seterr(reterr, REDLOCK_EASYNC, -1,
                  "this client lives on your event_base: use the _async calls "
                  "(or make the client with base == NULL)");
        return REDLOCK_EASYNC;
    }
    return 0;
}

static int submit_and_wait(redlock_client *c, rl_req *req)
{
    struct rl_blocking *b = c->blk;
    if (pthread_cond_init(&req->cond, NULL) != 0) {
        rl_seterr(req->err, REDLOCK_ESYS, -1, "pthread_cond_init failed");
        return REDLOCK_ESYS;
    }
    pthread_mutex_lock(&b->mu);
    if (b->stop) {
        pthread_mutex_unlock(&b->mu);
        pthread_cond_destroy(&req->cond);
        rl_seterr(req->err, REDLOCK_ESHUTDOWN, -1, "client is being freed");
        return REDLOCK_ESHUTDOWN;
    }
    bool was_empty = b->head == NULL;
    b->waiters++;
    if (b->tail)
        b->tail->next = req;
    else
        b->head = req;
    b->tail = req;
    pthread_mutex_unlock(&b->mu);
    if (was_empty)
        wake(b);
    pthread_mutex_lock(&b->mu);
    while (!req->done)
        pthread_cond_wait(&req->cond, &b->mu);
    if (--b->waiters == 0 && b->stop)
        pthread_cond_signal(&b->idle);
    pthread_mutex_unlock(&b->mu);
    pthread_cond_destroy(&req->cond);
    return req->status;
}

int redlock_acquire(redlock_client *c, const void *resource, size_t len, uint32_t ttl_ms,
                    redlock_lock **ret_lock, redlock_outcome *ret_outcome, redlock_error *reterr)
{
    redlock_resource one = { resource, len };
    return redlock_acquire_set(c, &one, 1, ttl_ms, 0, ret_lock, ret_outcome, reterr);
}

int redlock_acquire_set(redlock_client *c, const redlock_resource *set, size_t count,
                        uint32_t ttl_ms, unsigned flags, redlock_lock **ret_lock,
                        redlock_outcome *ret_outcome, redlock_error *reterr)
{
    int rc = check_blocking(c, reterr);
    if (rc)
        return rc;
    if (!ret_lock) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "acquire: ret_lock must not be NULL");
        return REDLOCK_EINVAL;
    }
    /* Reject bad input here, on the caller's thread, with no round trip. */
    rc = rl_check_set(set, count, reterr);
    if (!rc)
        rc = rl_check_ttl(c, ttl_ms, reterr);
    if (rc)
        return rc;
    rl_req req = { .kind = REQ_ACQUIRE, .set = set, .count = count, .flags = flags,
                   .ttl_ms = ttl_ms, .out = ret_outcome, .err = reterr };
    rc = submit_and_wait(c, &req);
    if (rc == 0)
        *ret_lock = req.lock;
    return rc;
}

int redlock_release(redlock_client *c, redlock_lock *lock, redlock_outcome *ret_outcome,
                    redlock_error *reterr)
{
    int rc = check_blocking(c, reterr);
    if (rc)
        return rc;
    if (!lock) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "release: lock is NULL");
        return REDLOCK_EINVAL;
    }
    rl_req req = { .kind = REQ_RELEASE, .lock = lock, .out = ret_outcome, .err = reterr };
    return submit_and_wait(c, &req);
}

int redlock_extend(redlock_client *c, redlock_lock *lock, uint32_t ttl_ms,
                   redlock_outcome *ret_outcome, redlock_error *reterr)
{
    int rc = check_blocking(c, reterr);
    if (rc)
        return rc;
    if (!lock) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "extend: lock is NULL");
        return REDLOCK_EINVAL;
    }
    rc = rl_check_ttl(c, ttl_ms, reterr);
    if (rc)
        return rc;
    rl_req req = { .kind = REQ_EXTEND, .lock = lock, .ttl_ms = ttl_ms, .out = ret_outcome,
                   .err = reterr };
    return submit_and_wait(c, &req);
}

int redlock_status_get(redlock_client *c, const void *resource, size_t len,
                       redlock_status *ret, redlock_error *reterr)
{
    int rc = check_blocking(c, reterr);
    if (rc)
        return rc;
    if (!ret) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "status: ret must not be NULL");
        return REDLOCK_EINVAL;
    }
    rc = rl_check_resource(resource, len, reterr);
    if (rc)
        return rc;
    rl_req req = { .kind = REQ_STATUS, .resource = resource, .len = len, .st = ret,
                   .err = reterr };
    return submit_and_wait(c, &req);
}

int redlock_ping(redlock_client *c, redlock_status *ret, redlock_error *reterr)
{
    int rc = check_blocking(c, reterr);
    if (rc)
        return rc;
    if (!ret) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "ping: ret must not be NULL");
        return REDLOCK_EINVAL;
    }
    rl_req req = { .kind = REQ_PING, .st = ret, .err = reterr };
    return submit_and_wait(c, &req);
}

int rl_blocking_watchdog(redlock_client *c, bool start, redlock_lock *lock, redlock_lost_cb cb,
                         void *arg, redlock_error *reterr)
{
    rl_req req = { .kind = start ? REQ_WD_START : REQ_WD_STOP, .lock = lock, .lost_cb = cb,
                   .lost_arg = arg, .err = reterr };
    return submit_and_wait(c, &req);
}
