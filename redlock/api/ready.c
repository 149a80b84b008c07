/* ready.c - readiness waiters: "tell me when N masters are connected".
 *
 * Tests and programs used to poll with ping until the masters answered.
 * A waiter here is told once, from the loop: as soon as enough nodes are up
 * (past their handshake), or when its timeout passes. Node state changes
 * reach us through the nodes' env hook (client.c), so nothing polls.
 */
#include "api/ready.h"
#include "kinds/identity.h"

#include <stdlib.h>

typedef struct rl_ready {
    struct rl_ready *next;
    redlock_client *c;
    size_t min;       /* masters wanted up */
    rl_timer timeout; /* the deadline */
    rl_timer now;     /* zero timer: deliver from the loop */
    int status;       /* what to deliver */
    redlock_ready_cb cb;
    void *arg;
} rl_ready;

static size_t up_count(const redlock_client *c)
{
    size_t up = 0;
    for (uint32_t i = 0; i < c->n; i++)
        up += c->nodes[i].state == RL_NODE_UP;
    return up;
}

static void ready_unlink(rl_ready *r)
{
    for (rl_ready **pp = &r->c->ready; *pp; pp = &(*pp)->next) {
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    }
}

static void ready_free(rl_ready *r)
{
    rl_timer_fini(&r->timeout);
    rl_timer_fini(&r->now);
    free(r);
}

static void ready_deliver(rl_ready *r)
{
    redlock_client *c = r->c;
    ready_unlink(r);
    size_t up = up_count(c);
    redlock_ready_cb cb = r->cb;
    void *arg = r->arg;
    int status = r->status;
    redlock_error e = { 0, -1, "" };
    const rl_node *twin = status == REDLOCK_EINVAL ? rl_identity_refused(c) : NULL;
    if (twin)
        rl_identity_seterr(c, twin, &e);
    else if (status == REDLOCK_ESHUTDOWN)
        rl_seterr(&e, status, -1, "client freed while waiting for masters");
    else if (status)
        rl_seterr(&e, status, -1, "%zu of %u masters connected, %zu wanted", up, c->n, r->min);
    ready_free(r);
    rl_client_enter(c);
    cb(c, status, up, &e, arg);
    rl_client_leave(c);
}

static void ready_on_now(void *arg)
{
    ready_deliver(arg);
}

static void ready_on_timeout(void *arg)
{
    rl_ready *r = arg;
    r->status = up_count(r->c) >= r->min ? 0 : REDLOCK_ETIMEOUT;
    ready_deliver(r);
}

/* Enough are up (0), or the master list is wrong (EINVAL): deliver on the
 * next pass (we may be inside a reply). */
static void ready_fire(rl_ready *r, int status)
{
    if (rl_timer_armed(&r->now))
        return;
    rl_timer_stop(&r->timeout);
    r->status = status;
    rl_timer_start(&r->now, 0);
}

/* Two entries found to be one server: the list itself is wrong, and
 * waiting longer cannot fix it, so every waiter hears it now, however many
 * masters are up. */
void rl_ready_check(redlock_client *c)
{
    size_t up = up_count(c);
    bool twins = rl_identity_refused(c) != NULL;
    for (rl_ready *r = c->ready; r; r = r->next)
        if (twins || up >= r->min)
            ready_fire(r, twins ? REDLOCK_EINVAL : 0);
}

int rl_ready_start(redlock_client *c, size_t min_masters, uint32_t timeout_ms, redlock_ready_cb cb,
                   void *arg, redlock_error *e)
{
    int rc = rl_client_live(c, e);
    if (rc)
        return rc;
    if (min_masters > c->n || timeout_ms == 0 || timeout_ms > REDLOCK_TTL_MAX_MS) {
        rl_seterr(e, REDLOCK_EINVAL, -1,
                  "ready: min_masters must be 0..%u (0: the quorum) and timeout_ms 1..%u", c->n,
                  REDLOCK_TTL_MAX_MS);
        return REDLOCK_EINVAL;
    }
    rl_ready *r = calloc(1, sizeof(*r));
    if (!r || rl_timer_init(&r->timeout, &c->loop, ready_on_timeout, r) != 0 ||
        rl_timer_init(&r->now, &c->loop, ready_on_now, r) != 0) {
        if (r)
            ready_free(r);
        rl_seterr(e, REDLOCK_ENOMEM, -1, "out of memory");
        return REDLOCK_ENOMEM;
    }
    r->c = c;
    r->min = min_masters ? min_masters : c->quorum;
    r->cb = cb;
    r->arg = arg;
    r->next = c->ready;
    c->ready = r;
    rl_timer_start(&r->timeout, timeout_ms);
    rl_ready_check(c);
    return 0;
}

void rl_ready_close(redlock_client *c)
{
    while (c->ready) {
        rl_ready *r = c->ready;
        r->status = REDLOCK_ESHUTDOWN;
        ready_deliver(r);
    }
}
