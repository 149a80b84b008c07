/* node-conn.c - what every connection to a master opens with, and the
 * subscriber connection.
 *
 * The command connection (node.c) and a waiter's subscriber connection use
 * the same options (TLS where the entry or config says) and the same AUTH
 * (a URL's credentials over the config's). The subscriber carries only
 * SUBSCRIBE and never votes: docs/waiting.md, "Waiting in turn".
 */
#include "node/node-conn.h"

#include <string.h>

rl_conn_opts rl_node_conn_opts(const rl_node *n, bool subscriber)
{
    const redlock_config *cfg = n->env->cfg;
    bool tls = n->env->tls && n->addr.kind == RL_ADDR_TCP && (n->addr.tls || cfg->tls);
    rl_conn_opts o = { .addr = &n->addr,
                       .loop = n->env->loop,
                       .tls = tls ? n->env->tls : NULL,
                       .max_reply_bytes = cfg->max_reply_bytes,
                       .subscriber = subscriber };
    return o;
}

/* Credentials for @n: a URL's own win over the config's. */
static void node_credentials(const rl_node *n, const char **user, const char **pass)
{
    if (n->addr.has_password) {
        *user = n->addr.user[0] ? n->addr.user : NULL;
        *pass = n->addr.password;
    } else {
        *user = n->env->cfg->username;
        *pass = n->env->cfg->password;
    }
}

int rl_node_send_auth(rl_node *n, rl_conn *conn, rl_reply_fn *fn)
{
    const char *user, *pass;
    node_credentials(n, &user, &pass);
    if (!pass)
        return 0;
    const char *argv[3] = { "AUTH", user ? user : pass, pass };
    size_t lens[3] = { 4, strlen(argv[1]), strlen(argv[2]) };
    return rl_conn_send(conn, fn, n, user ? 3 : 2, argv, lens);
}

static void sub_on_close(rl_conn *conn, int err, const char *why, void *arg)
{
    (void)err;
    (void)why;
    rl_node *n = arg;
    if (n->sub == conn)
        n->sub = NULL; /* reopened by the next waiter; meanwhile polling covers */
}

static void sub_on_message(rl_conn *conn, const char *ch, size_t clen, const char *msg, size_t mlen,
                           void *arg)
{
    rl_node *n = arg;
    if (n->sub == conn && n->env->on_message)
        n->env->on_message(n, ch, clen, msg, mlen, n->env->arg);
}

static const rl_conn_hooks sub_hooks = { .on_close = sub_on_close, .on_message = sub_on_message };

static void sub_on_auth(void *arg, const rl_reply *r, int err, const char *why)
{
    (void)err;
    (void)why;
    rl_node *n = arg;
    if (r && rl_reply_type(r) == RL_REPLY_ERROR && n->sub)
        rl_conn_close(n->sub, REDLOCK_EAUTH, "AUTH failed on the subscriber connection");
}

rl_conn *rl_node_subscriber(rl_node *n)
{
    if (n->sub || n->state != RL_NODE_UP || !rl_node_open(n))
        return n->sub;
    rl_conn_opts o = rl_node_conn_opts(n, true);
    char why[REDLOCK_VOTE_DETAIL_LEN] = "";
    if (rl_conn_open(&o, &sub_hooks, n, &n->sub, why, sizeof(why)) != 0) {
        n->sub = NULL;
        return NULL;
    }
    if (rl_node_send_auth(n, n->sub, sub_on_auth) != 0) {
        rl_conn_close(n->sub, REDLOCK_ECONNECT, "cannot queue AUTH");
        return NULL;
    }
    return n->sub;
}
