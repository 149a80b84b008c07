/* client.c - the client's life: make it from a config, run it, free it.
 *
 * The client owns everything long-lived: N nodes (one connection each,
 * node.c), the ops in flight (op.c), watchdogs, waiters and readiness
 * waiters. It sits above all of them and hears back from the nodes only
 * through the hooks of their env.
 */
#include "core/types.h"
#include "base/addr.h"
#include "core/loop.h"
#include "kinds/memory.h"
#include "base/config.h"
#include "kinds/identity.h"
#include "core/op.h"
#include "core/deliver.h"
#include "node/probe.h"
#include "api/ready.h"
#include "base/script.h"
#include "transport/trace.h"
#include "core/wait.h"
#include "kinds/watchdog.h"

#include <event2/event.h>

#include <stdlib.h>
#include <string.h>

const char *redlock_version(void)
{
    return REDLOCK_VERSION_STRING;
}

int redlock_has_tls(void)
{
#if RL_HAVE_TLS
    return 1;
#else
    return 0;
#endif
}

/* Every string of the config, copied into one block that the client owns;
 * the config's pointers are moved onto the copies. */
static int copy_strings(redlock_client *c)
{
    const char **fields[] = {
        &c->cfg.masters,       &c->cfg.key_prefix,   &c->cfg.username,
        &c->cfg.password,      &c->cfg.tls_ca_file,  &c->cfg.tls_ca_dir,
        &c->cfg.tls_cert_file, &c->cfg.tls_key_file, &c->cfg.tls_server_name
    };
    size_t n = sizeof(fields) / sizeof(fields[0]), bytes = 1;
    for (size_t i = 0; i < n; i++)
        bytes += *fields[i] ? strlen(*fields[i]) + 1 : 0;
    char *p = c->strs = malloc(bytes);
    if (!p)
        return REDLOCK_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (!*fields[i])
            continue;
        size_t len = strlen(*fields[i]) + 1;
        memcpy(p, *fields[i], len);
        *fields[i] = p;
        p += len;
    }
    *p = '\0';
    if (!c->cfg.key_prefix)
        c->cfg.key_prefix = p; /* "" */
    c->prefix_len = strlen(c->cfg.key_prefix);
    return 0;
}

/* Resolve every master once and refuse two that are one. */
static int resolve_masters(redlock_client *c, rl_addr *addrs, int n, redlock_error *e)
{
    for (int i = 0; i < n; i++) {
        int rc = rl_addr_resolve(&addrs[i], i, e);
        if (rc)
            return rc;
        for (int j = 0; j < i; j++) {
            if (rl_addr_same(&addrs[j], &addrs[i])) {
                rl_seterr(e, REDLOCK_EINVAL, i,
                          "masters: %s and %s are the same master (%s:%d); each master "
                          "must be independent",
                          RL_QUOTE(addrs[j].name, 60), RL_QUOTE(addrs[i].name, 60), addrs[i].ip,
                          addrs[i].port);
                return REDLOCK_EINVAL;
            }
        }
    }
    c->n = (uint32_t)n;
    c->quorum = (uint32_t)(n / 2 + 1);
    return 0;
}

static uint32_t probe_interval_ms(const redlock_client *c)
{
    return c->cfg.clock_policy != REDLOCK_CLOCK_OFF ? c->cfg.clock_probe_ms : 1000;
}

/* The clock monitor's heartbeat: one TIME per master per interval. */
static void client_on_probe(void *arg)
{
    redlock_client *c = arg;
    rl_timer_start(&c->probe, probe_interval_ms(c));
    for (uint32_t i = 0; i < c->n; i++)
        rl_probe_node(&c->nodes[i], c->cfg.clock_policy != REDLOCK_CLOCK_OFF);
}

static void client_on_marker(rl_node *n, const rl_marker *m, void *arg)
{
    rl_memory_marker(arg, n->idx, m);
}

/* A master's clock or restart event, for the config's hook: the client,
 * and the master in the error's place. */
static void client_on_event(rl_node *n, int status, int event, const char *msg, void *arg)
{
    redlock_client *c = arg;
    if (n->idx < REDLOCK_MAX_MASTERS && event > 0 && event < RL_MET_EVENTS) {
        rl_met_master *mm = &c->metrics.master[n->idx];
        rl_met_inc(&mm->events[event]);
        if (status == REDLOCK_EUNTRUSTED)
            rl_met_inc(&mm->excluded_events);
    }
    if (!c->cfg.event_fn)
        return;
    redlock_error e = { status, (int)n->idx, "" };
    rl_fit(e.msg, sizeof(e.msg), msg);
    c->cfg.event_fn(c, status, event, &e, c->cfg.event_arg);
}

static int client_on_identity(const rl_node *n, void *arg)
{
    return rl_identity_twin(arg, n);
}

static void client_on_node_state(rl_node *n, void *arg)
{
    redlock_client *c = arg;
    if (n->state == RL_NODE_UP)
        rl_wait_node_up(c, n); /* waiters hear of hand-offs there again */
    rl_ready_check(c);
}

/* On the loop's thread: everything that waits on this client ends now,
 * each exactly once (watchdogs, ops, readiness waiters), and what that
 * queued for the masters (cleanup releases, waiters' leaves) is written.
 * Once: a blocking client's I/O thread runs it, then client_destroy on the
 * caller's thread finds it done. */
static void client_shutdown(redlock_client *c)
{
    if (c->freeing)
        return;
    c->freeing = true;
    rl_watchdog_stop_all(c);
    rl_ops_shutdown(c);
    rl_ready_close(c);
    rl_memory_free(c);
    for (uint32_t i = 0; i < c->n; i++)
        rl_node_flush(&c->nodes[i]);
}

/* Tear down on the loop's thread (or after the I/O thread has exited). */
static void client_destroy(redlock_client *c)
{
    c->free_requested = false;
    client_shutdown(c);
    rl_wait_close(c);
    rl_timer_fini(&c->probe);
    for (uint32_t i = 0; i < c->n; i++)
        rl_node_close(&c->nodes[i]);
    rl_ops_free(c);
    rl_trace_close(c->env.trace);
    rl_tls_free(c->tls);
    if (c->owns_base && c->base)
        event_base_free(c->base);
    free(c->strs);
    free(c);
}

static int client_start(redlock_client *c, rl_addr *addrs, redlock_error *e)
{
    c->env = (rl_node_env){ .loop = &c->loop,
                            .cfg = &c->cfg,
                            .tls = c->tls,
                            .trace = rl_trace_open(c->cfg.masters, c->n, c->quorum,
                                                   c->cfg.drift_factor, c->cfg.restart_guard,
                                                   c->cfg.key_prefix),
                            .on_marker = client_on_marker,
                            .on_state = client_on_node_state,
                            .on_identity = client_on_identity,
                            .on_event = client_on_event,
                            .on_message = rl_wait_on_message,
                            .arg = c };
    if (rl_ops_init(c) != 0)
        goto oom;
    for (uint32_t i = 0; i < c->n; i++)
        if (rl_node_init(&c->nodes[i], &c->env, i, &addrs[i]) != 0)
            goto oom;
    if (rl_timer_init(&c->probe, &c->loop, client_on_probe, c) != 0)
        goto oom;
    rl_timer_start(&c->probe, probe_interval_ms(c));
    /* Start connecting before the I/O thread exists: the base is not shared
     * with another thread yet, so this needs no locking. */
    for (uint32_t i = 0; i < c->n; i++)
        rl_node_start(&c->nodes[i]);
    return c->owns_base ? rl_loop_start(c, e) : 0;
oom:
    rl_seterr(e, REDLOCK_ENOMEM, -1, "out of memory creating client");
    return REDLOCK_ENOMEM;
}

/* @loop: an async client's; NULL for a blocking client, which runs on a
 * private event_base of its own. */
static int client_new(const redlock_config *cfg, const redlock_loop *loop, redlock_client **ret,
                      redlock_error *reterr)
{
    redlock_config full;
    int rc = rl_config_copy(cfg, &full, reterr);
    if (!rc)
        rc = rl_config_validate(&full, reterr);
    if (rc)
        return rc;
    if (rl_scripts_init() != 0) {
        rl_seterr(reterr, REDLOCK_ESYS, -1, "cannot initialise script digests");
        return REDLOCK_ESYS;
    }
    redlock_client *c = calloc(1, sizeof(*c));
    rl_addr *addrs = calloc(REDLOCK_MAX_MASTERS, sizeof(*addrs));
    rc = REDLOCK_ENOMEM;
    if (!c || !addrs)
        goto fail;
    c->cfg = full;
    c->destroy = client_destroy;
    c->shutdown = client_shutdown;
    c->rng = rl_random_u64();
    if (copy_strings(c) != 0)
        goto fail;
    int n = rl_addr_parse_list(c->cfg.masters, addrs, reterr);
    rc = n < 0 ? n : resolve_masters(c, addrs, n, reterr);
    if (!rc)
        rc = rl_tls_new(&c->cfg, addrs, c->n, &c->tls, reterr);
    if (rc)
        goto fail;
    if (loop) {
        c->loop = *loop;
    } else {
        rc = REDLOCK_ENOMEM;
        if (!(c->base = event_base_new()))
            goto fail;
        c->owns_base = true;
        rl_loop_libevent(&c->loop, c->base);
    }
    rc = client_start(c, addrs, reterr);
    if (rc)
        goto fail;
    free(addrs);
    *ret = c;
    return 0;
fail:
    if (rc == REDLOCK_ENOMEM)
        rl_seterr(reterr, rc, -1, "out of memory creating client");
    free(addrs);
    if (c && c->loop.size)
        client_destroy(c);
    else if (c) {
        rl_tls_free(c->tls);
        free(c->strs);
        free(c);
    }
    return rc;
}

int redlock_client_new(const redlock_config *cfg, struct event_base *base, redlock_client **ret,
                       redlock_error *reterr)
{
    if (!cfg || !ret) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "redlock_client_new: cfg and ret must not be NULL");
        return REDLOCK_EINVAL;
    }
    if (!base)
        return client_new(cfg, NULL, ret, reterr);
    redlock_loop loop;
    rl_loop_libevent(&loop, base);
    return client_new(cfg, &loop, ret, reterr);
}

int redlock_client_new_loop(const redlock_config *cfg, const redlock_loop *loop,
                            redlock_client **ret, redlock_error *reterr)
{
    char why[160];
    if (!cfg || !ret) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1,
                  "redlock_client_new_loop: cfg and ret must not be NULL");
        return REDLOCK_EINVAL;
    }
    if (rl_loop_check(loop, why, sizeof(why)) != 0) {
        rl_seterr(reterr, REDLOCK_EINVAL, -1, "redlock_client_new_loop: %s", why);
        return REDLOCK_EINVAL;
    }
    return client_new(cfg, loop, ret, reterr);
}

void redlock_client_free(redlock_client *c)
{
    if (!c || c->freeing)
        return; /* NULL, or called again from a callback run by this free */
    if (!c->blk && c->in_callback > 0) {
        /* Inside one of our callbacks (async clients: on the loop's thread;
         * a blocking client's callbacks are the library's own): hiredis'
         * rule. Free once it returns, so no library frame above us touches
         * freed memory. */
        c->free_requested = true;
        return;
    }
    if (c->blk)
        rl_loop_stop(c); /* runs client_shutdown on the I/O thread */
    client_destroy(c);
}

size_t redlock_client_masters(const redlock_client *c)
{
    return c ? c->n : 0;
}

size_t redlock_client_quorum(const redlock_client *c)
{
    return c ? c->quorum : 0;
}

const char *redlock_client_master_addr(const redlock_client *c, size_t i)
{
    return c && i < c->n ? c->nodes[i].addr.name : NULL;
}
