/* transport.c - connections to masters over hiredis (0.14.1 or 1.x) and libevent.
 *
 * The only file that includes a hiredis header. It owns four things, each
 * marked by a heading below: replies (read through accessors, so callers
 * never see redisReply), the reply guard (hiredis trusts the server more
 * than we may), the libevent glue (one write per loop pass, no epoll_ctl in
 * the steady state), and the connection itself (commands in, replies out in
 * order, every callback exactly once). Where hiredis 0.14 and 1.x differ,
 * the difference is handled here and marked with HIREDIS_MAJOR.
 */
#include "transport.h"

#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <event2/event.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifndef RL_HAVE_TLS
#define RL_HAVE_TLS 0
#endif
#if RL_HAVE_TLS
#include <arpa/inet.h>
#include <hiredis/hiredis_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#endif

#define RL_REPLY_ARRAY_MAX 1024     /* we never ask for more than a few */
#define RL_REPLY_OBJECTS_MAX 4096   /* objects in one reply, nested ones included */

/* ---- replies --------------------------------------------------------------- */

/* rl_reply is hiredis' redisReply; only this file knows it. The fields read
 * here are the same in 0.14.1 and 1.x. */
static const redisReply *R(const rl_reply *r)
{
    return (const redisReply *)(const void *)r;
}

int rl_reply_type(const rl_reply *r)
{
    switch (R(r)->type) {
    case REDIS_REPLY_STRING: return RL_REPLY_STRING;
    case REDIS_REPLY_ARRAY: return RL_REPLY_ARRAY;
    case REDIS_REPLY_INTEGER: return RL_REPLY_INTEGER;
    case REDIS_REPLY_NIL: return RL_REPLY_NIL;
    case REDIS_REPLY_STATUS: return RL_REPLY_STATUS;
    case REDIS_REPLY_ERROR: return RL_REPLY_ERROR;
    }
    return RL_REPLY_OTHER;
}

long long rl_reply_integer(const rl_reply *r)
{
    return R(r)->integer;
}

const char *rl_reply_str(const rl_reply *r, size_t *len)
{
    const redisReply *h = R(r);
    bool text = h->type == REDIS_REPLY_STRING || h->type == REDIS_REPLY_STATUS ||
                h->type == REDIS_REPLY_ERROR;
    if (len)
        *len = text ? h->len : 0;
    return text && h->str ? h->str : "";
}

size_t rl_reply_elements(const rl_reply *r)
{
    return R(r)->type == REDIS_REPLY_ARRAY ? R(r)->elements : 0;
}

const rl_reply *rl_reply_element(const rl_reply *r, size_t i)
{
    return (const rl_reply *)(const void *)R(r)->element[i];
}

bool rl_reply_is_status(const rl_reply *r, const char *s)
{
    const redisReply *h = R(r);
    return h->type == REDIS_REPLY_STATUS && h->len == strlen(s) && memcmp(h->str, s, h->len) == 0;
}

const char *rl_reply_type_name(int type)
{
    switch (type) {
    case RL_REPLY_STRING: return "string";
    case RL_REPLY_ARRAY: return "array";
    case RL_REPLY_INTEGER: return "integer";
    case RL_REPLY_NIL: return "nil";
    case RL_REPLY_STATUS: return "status";
    case RL_REPLY_ERROR: return "error";
    }
    return "unknown";
}

/* ---- the connection -------------------------------------------------------- */

enum { W_IDLE, W_FLUSH, W_ARMED };

typedef struct rl_cb {
    rl_reply_fn *fn;
    void *arg;
} rl_cb;

struct rl_conn {
    redisAsyncContext *ac;        /* NULL once hiredis let go of it */
    const rl_conn_hooks *hooks;
    void *arg;
    struct event *rev, *wev;
    int wstate;                   /* W_*: see the libevent glue */
    bool in_write;                /* inside our write handler */
    int busy;                     /* inside one of our event handlers */
    bool free_pending;            /* hiredis let go while busy: free on the way out */
    bool closing;                 /* no new commands: closed, or failing */
    bool subscriber;
    bool answered;                /* at least one reply arrived */
    rl_cb *q;                     /* reply functions, in send order (a ring) */
    uint32_t qhead, qlen, qcap;
    uint32_t max_reply_bytes;
    uint32_t objs;                /* objects in the reply being read */
    const char *refused;          /* what the guard refused, or NULL */
    int err;                      /* why it closed: the first reason wins */
    char why[160];
    bool tls;
    void *ssl;                    /* our SSL object (hiredis owns it once attached) */
};

static void conn_free(rl_conn *c)
{
    free(c->q);
    free(c);
}

#if RL_HAVE_TLS
/* The TLS reason for a connection that failed before any reply. */
static bool tls_reason(rl_conn *c, char *out, size_t len)
{
    if (!c->ssl || c->answered)
        return false;
    long v = SSL_get_verify_result(c->ssl);
    if (v != X509_V_OK) {
        snprintf(out, len, "TLS: certificate verify failed: %s (check tls_ca_file and the "
                 "master's name)", X509_verify_cert_error_string(v));
        return true;
    }
    return false;
}
#endif

/* Record why the connection failed, from what hiredis says, in words a user
 * can act on. Runs before the first NULL reply and at cleanup; the first
 * reason recorded wins (an explicit close says its own). */
static void conn_note_error(rl_conn *c)
{
    if (c->err || !c->ac)
        return;
    const redisAsyncContext *ac = c->ac;
    const char *what = ac->errstr[0] ? ac->errstr : "connection lost";
    c->err = REDLOCK_ECONNECT;
#if RL_HAVE_TLS
    if (tls_reason(c, c->why, sizeof(c->why)))
        return;
#endif
    if (ac->err == REDIS_ERR_OOM && c->refused) {
        c->err = REDLOCK_EPROTO;
        snprintf(c->why, sizeof(c->why), "master sent %s (is this a Redis server?)", c->refused);
    } else if (ac->err == REDIS_ERR_PROTOCOL) {
        c->err = REDLOCK_EPROTO;
        bool tls_bytes = strstr(what, "\\x15") || strstr(what, "\\x16");
        snprintf(c->why, sizeof(c->why), "%.90s%s", what,
                 tls_bytes ? " (a TLS port? write the master as rediss://...)" : "");
    } else if (ac->err == REDIS_ERR_EOF) {
        snprintf(c->why, sizeof(c->why), "connection closed by master%s",
                 c->answered ? "" : " before it answered (a TLS port? too many clients?)");
    } else if (ac->err == REDIS_ERR_OTHER && rl_error_reply_transient(what, strlen(what))) {
        /* hiredis closes a connection that got an error it did not ask for:
         * a master still loading its data says so this way. */
        c->err = REDLOCK_EUNAVAIL;
        snprintf(c->why, sizeof(c->why), "%.120s", what);
    } else if (strstr(what, "refused")) {
        snprintf(c->why, sizeof(c->why), "connection refused (is redis-server running?)");
    } else if (c->tls && !c->answered) {
        snprintf(c->why, sizeof(c->why), "TLS handshake failed: %.100s (is this a TLS port?)",
                 what);
    } else {
        snprintf(c->why, sizeof(c->why), "%.120s", what);
    }
}

static void conn_on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    (void)ac;
    rl_conn *c = privdata;
    if (c->qlen == 0)
        return;   /* cannot happen: one entry per command sent */
    rl_cb cb = c->q[c->qhead];
    c->qhead = (c->qhead + 1) % c->qcap;
    c->qlen--;
    if (reply) {
        c->answered = true;
        cb.fn(cb.arg, (const rl_reply *)reply, 0, NULL);
        return;
    }
    /* hiredis is flushing its callbacks before it frees the context: no
     * command may be queued on it any more. */
    conn_note_error(c);
    c->closing = true;
    cb.fn(cb.arg, NULL, c->err, c->why);
}

static void conn_on_message(redisAsyncContext *ac, void *reply, void *privdata)
{
    (void)ac;
    rl_conn *c = privdata;
    const redisReply *r = reply;
    /* The guard made sure a message is an array of strings; confirmations
     * of (un)subscribe carry an integer third. */
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[2]->type != REDIS_REPLY_STRING ||
        strcmp(r->element[0]->str, "message") != 0 || !c->hooks->on_message)
        return;
    c->answered = true;
    c->hooks->on_message(c, r->element[1]->str, r->element[1]->len, r->element[2]->str,
                         r->element[2]->len, c->arg);
}

static int queue_reserve(rl_conn *c)
{
    if (c->qlen < c->qcap)
        return 0;
    uint32_t cap = c->qcap ? 2 * c->qcap : 16;
    rl_cb *q = malloc((size_t)cap * sizeof(*q));
    if (!q)
        return REDLOCK_ENOMEM;
    for (uint32_t i = 0; i < c->qlen; i++)
        q[i] = c->q[(c->qhead + i) % c->qcap];
    free(c->q);
    c->q = q;
    c->qhead = 0;
    c->qcap = cap;
    return 0;
}

int rl_conn_send(rl_conn *c, rl_reply_fn *fn, void *arg, int argc, const char **argv,
                 const size_t *argvlen)
{
    if (c->closing || !c->ac)
        return REDLOCK_ECONNECT;
    if (queue_reserve(c) != 0)
        return REDLOCK_ENOMEM;
    /* hiredis only formats the command into its buffer here: no callback
     * runs inside this call, so the entry can be queued after it. */
    if (redisAsyncCommandArgv(c->ac, conn_on_reply, c, argc, argv, argvlen) != REDIS_OK)
        return REDLOCK_ECONNECT;
    c->q[(c->qhead + c->qlen) % c->qcap] = (rl_cb){ fn, arg };
    c->qlen++;
    return 0;
}

int rl_conn_subscribe(rl_conn *c, const char *channel, size_t len, bool on)
{
    if (c->closing || !c->ac || !c->subscriber)
        return REDLOCK_ECONNECT;
    const char *argv[2] = { on ? "SUBSCRIBE" : "UNSUBSCRIBE", channel };
    size_t lens[2] = { on ? 9u : 11u, len };
    return redisAsyncCommandArgv(c->ac, conn_on_message, c, 2, argv, lens) == REDIS_OK
               ? 0 : REDLOCK_ECONNECT;
}

uint32_t rl_conn_pending(const rl_conn *c)
{
    return c ? c->qlen : 0;
}

bool rl_conn_is_tls(const rl_conn *c)
{
    return c && c->tls;
}

void rl_conn_close(rl_conn *c, int err, const char *why)
{
    if (!c || c->closing || !c->ac)
        return;   /* already going: its reason stands */
    c->closing = true;
    if (!c->err) {
        c->err = err;
        snprintf(c->why, sizeof(c->why), "%s", why);
    }
    /* Inside a hiredis callback this only marks the context; hiredis frees
     * it (and runs every pending callback with NULL) once it unwinds. */
    redisAsyncFree(c->ac);
}

/* ---- the libevent glue ------------------------------------------------------ *
 *
 * Our own copy of the idea in hiredis' adapters/libevent.h, for two reasons:
 * that adapter does not check its allocation (0.14.1), and it arms and
 * disarms epoll for every command. Here the read event stays armed, and a
 * command does not arm write interest at all: it makes the write event
 * active, so every command queued in this pass of the loop goes out in one
 * write() when the pass reaches it. Only a write that would block (a full
 * socket, a connect in progress, a TLS handshake) arms the real event. */

static void ev_on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    rl_conn *c = arg;
    redisReader *rd = c->ac->c.reader;
    /* The reader keeps a reply's bytes until it is complete, so a master
     * streaming one huge bulk string would grow it without end: stop here.
     * hiredis reads at most 16 KiB per call, so the cap holds to that. */
    if (rd->len - rd->pos > c->max_reply_bytes) {
        char why[96];
        snprintf(why, sizeof(why), "master sent a reply larger than %u bytes (is this a Redis "
                 "server?)", c->max_reply_bytes);
        rl_conn_close(c, REDLOCK_EPROTO, why);
        return;
    }
    c->busy++;
    redisAsyncHandleRead(c->ac);
    if (--c->busy == 0 && c->free_pending)
        conn_free(c);
}

static void ev_on_write(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    rl_conn *c = arg;
    /* Whether the socket became writable or a command made us active: the
     * event is not pending any more; hiredis says below if it wants more. */
    c->wstate = W_IDLE;
    c->busy++;
    c->in_write = true;
    redisAsyncHandleWrite(c->ac);
    c->in_write = false;
    if (--c->busy == 0 && c->free_pending)
        conn_free(c);
}

static void ev_add_read(void *p)
{
    (void)p;   /* armed once, at open, and kept armed (EV_PERSIST) */
}

static void ev_del_read(void *p)
{
    (void)p;   /* hiredis asks only when tearing down: cleanup removes it */
}

static void ev_add_write(void *p)
{
    rl_conn *c = p;
    if (c->in_write) {
        /* hiredis could not write it all: now wait for the socket. */
        if (c->wstate != W_ARMED && event_add(c->wev, NULL) == 0)
            c->wstate = W_ARMED;
    } else if (c->wstate == W_IDLE) {
        event_active(c->wev, EV_WRITE, 1);
        c->wstate = W_FLUSH;
    }
}

static void ev_del_write(void *p)
{
    rl_conn *c = p;
    if (c->wstate == W_ARMED) {
        event_del(c->wev);
        c->wstate = W_IDLE;
    }
}

/* hiredis frees the context: every pending callback has run. The end of
 * the connection for us too. */
static void ev_cleanup(void *p)
{
    rl_conn *c = p;
    event_free(c->rev);
    event_free(c->wev);
    c->rev = c->wev = NULL;
    conn_note_error(c);
    c->ac = NULL;
    c->closing = true;
    if (c->hooks->on_close)
        c->hooks->on_close(c, c->err ? c->err : REDLOCK_ECONNECT,
                           c->why[0] ? c->why : "connection closed", c->arg);
    if (c->busy)
        c->free_pending = true;   /* one of our handlers is on the stack */
    else
        conn_free(c);
}

/* ---- the reply guard ------------------------------------------------------- *
 *
 * hiredis trusts the server in places where a master that is not a
 * well-behaved Redis (another service on the port, a proxy gone wrong,
 * anyone on the path) can take the whole process down or make it allocate
 * without bound: a reply no command asked for fails an assert() (async.c,
 * redisProcessCallbacks, in 0.14.1 and 1.x); on a subscribed connection an
 * array without two strings fails another in 0.14.1, and an "unsubscribe"
 * of two elements is read past its end; "*N" makes the reader allocate N
 * pointers before one element arrived; nesting multiplies objects. The
 * reader builds replies through a table of functions, one object at a time,
 * before hiredis looks at them: ours refuses those replies there. A refusal
 * (NULL) fails the reader, which hiredis reports as out of memory and
 * answers by dropping the connection: conn_note_error says what happened. */

#if HIREDIS_MAJOR >= 1
typedef size_t rl_nelem_t;
#else
typedef int rl_nelem_t;
#endif

static redisReplyObjectFunctions *hiredis_fns;   /* the reader's own */
static redisReplyObjectFunctions guard_fns;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

static bool refuse(const redisReadTask *t, const char *what)
{
    rl_conn *c = t->privdata;
    c->refused = what;
    return false;
}

/* Does the top-level reply that @t belongs to go to pub/sub handling? */
static bool is_pubsub(const redisReadTask *t)
{
    const rl_conn *c = t->privdata;
    return c->subscriber && c->ac && c->ac->replies.head == NULL;
}

/* Checks common to every object; @type is what it will be. */
static bool guard_check(const redisReadTask *t, int type, long long elements)
{
    rl_conn *c = t->privdata;
    if (type != REDIS_REPLY_STRING && type != REDIS_REPLY_ARRAY && type != REDIS_REPLY_INTEGER &&
        type != REDIS_REPLY_NIL && type != REDIS_REPLY_STATUS && type != REDIS_REPLY_ERROR)
        return refuse(t, "a RESP3 reply (we speak RESP2)");
    if (type == REDIS_REPLY_ARRAY && (elements < 0 || elements > RL_REPLY_ARRAY_MAX))
        return refuse(t, "an array too large to be ours");
    if (!t->parent) {
        c->objs = 0;
        /* Errors are hiredis' business: it drops the connection, keeping
         * their text (a full server or one still loading says so this way). */
        if (type != REDIS_REPLY_ERROR && c->ac && c->ac->replies.head == NULL && !c->subscriber)
            return refuse(t, "a reply nothing asked for");
        if (is_pubsub(t) && type == REDIS_REPLY_ARRAY && elements < 3)
            return refuse(t, "a malformed pub/sub message");
        return true;
    }
    if (++c->objs > RL_REPLY_OBJECTS_MAX)
        return refuse(t, "a reply of too many parts to be ours");
    if (t->parent->parent || !is_pubsub(t))
        return true;
    /* Elements of a pub/sub message: kind and channel are strings; the
     * count that ends an (un)subscribe is an integer. */
    if (t->idx < 2)
        return type == REDIS_REPLY_STRING || refuse(t, "a malformed pub/sub message");
    if (t->idx == 2) {
        const redisReply *msg = t->parent->obj;
        const char *kind = msg->element[0]->str;
        if (kind[0] == 'p' || kind[0] == 'P')
            kind++;
        if (strcasecmp(kind, "unsubscribe") == 0 && type != REDIS_REPLY_INTEGER)
            return refuse(t, "a malformed pub/sub message");
    }
    return true;
}

static void *guard_string(const redisReadTask *t, char *s, size_t len)
{
    return guard_check(t, t->type, 0) ? hiredis_fns->createString(t, s, len) : NULL;
}

static void *guard_array(const redisReadTask *t, rl_nelem_t elements)
{
    return guard_check(t, t->type, (long long)elements) ? hiredis_fns->createArray(t, elements)
                                                        : NULL;
}

static void *guard_integer(const redisReadTask *t, long long v)
{
    return guard_check(t, REDIS_REPLY_INTEGER, 0) ? hiredis_fns->createInteger(t, v) : NULL;
}

static void *guard_nil(const redisReadTask *t)
{
    return guard_check(t, REDIS_REPLY_NIL, 0) ? hiredis_fns->createNil(t) : NULL;
}

static void guard_free(void *obj)
{
    hiredis_fns->freeObject(obj);
}

#if HIREDIS_MAJOR >= 1
/* RESP3 only: we never send HELLO 3, so a master that sends these is not
 * speaking to us. */
static void *guard_double(const redisReadTask *t, double d, char *s, size_t len)
{
    (void)d; (void)s; (void)len;
    refuse(t, "a RESP3 double (we speak RESP2)");
    return NULL;
}

static void *guard_bool(const redisReadTask *t, int b)
{
    (void)b;
    refuse(t, "a RESP3 boolean (we speak RESP2)");
    return NULL;
}
#endif

static void guard_init(void)
{
    /* hiredis keeps its functions static: take them from a reader. */
    redisReader *r = redisReaderCreate();
    if (!r)
        return;
    hiredis_fns = r->fn;
    redisReaderFree(r);
#if HIREDIS_MAJOR >= 1
    guard_fns = (redisReplyObjectFunctions){ guard_string, guard_array, guard_integer,
                                             guard_double, guard_nil, guard_bool, guard_free };
#else
    guard_fns = (redisReplyObjectFunctions){ guard_string, guard_array, guard_integer,
                                             guard_nil, guard_free };
#endif
}

static bool guard_attach(rl_conn *c)
{
    pthread_once(&guard_once, guard_init);
    redisReader *rd = c->ac->c.reader;
    if (!hiredis_fns || rd->fn != hiredis_fns)
        return false;
    rd->fn = &guard_fns;
    rd->privdata = c;
#if HIREDIS_MAJOR >= 1
    rd->maxelements = RL_REPLY_ARRAY_MAX;
#endif
    return true;
}

/* ---- TLS --------------------------------------------------------------------- */

struct rl_tls {
#if RL_HAVE_TLS
    SSL_CTX *ctx;
#endif
    bool verify;
    char server_name[RL_HOST_MAX];   /* "" : each master's own host */
};

#if RL_HAVE_TLS
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_init_once(void)
{
    redisInitOpenSSL();
}

static const char *ssl_err(void)
{
    unsigned long e = ERR_peek_last_error();
    return e ? ERR_reason_error_string(e) : "unknown reason";
}

int rl_tls_new(const redlock_config *cfg, const rl_addr *addrs, uint32_t n, rl_tls **ret,
               redlock_error *e)
{
    *ret = NULL;
    bool any = cfg->tls;
    for (uint32_t i = 0; i < n; i++)
        any = any || addrs[i].tls;
    if (!any)
        return 0;
    pthread_once(&tls_once, tls_init_once);
    rl_tls *t = calloc(1, sizeof(*t));
    if (!t || !(t->ctx = SSL_CTX_new(TLS_client_method()))) {
        free(t);
        rl_seterr(e, REDLOCK_ENOMEM, -1, "cannot create a TLS context: %s", ssl_err());
        return REDLOCK_ENOMEM;
    }
    ERR_clear_error();
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    t->verify = cfg->tls_verify;
    SSL_CTX_set_verify(t->ctx, t->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    const char *what = NULL, *file = NULL;
    if (cfg->tls_ca_file || cfg->tls_ca_dir) {
        if (SSL_CTX_load_verify_locations(t->ctx, cfg->tls_ca_file, cfg->tls_ca_dir) != 1) {
            what = cfg->tls_ca_file ? "config.tls_ca_file" : "config.tls_ca_dir";
            file = cfg->tls_ca_file ? cfg->tls_ca_file : cfg->tls_ca_dir;
        }
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        what = "the system CA store", file = "(default paths)";
    }
    if (!what && cfg->tls_cert_file &&
        SSL_CTX_use_certificate_chain_file(t->ctx, cfg->tls_cert_file) != 1)
        what = "config.tls_cert_file", file = cfg->tls_cert_file;
    if (!what && cfg->tls_key_file &&
        (SSL_CTX_use_PrivateKey_file(t->ctx, cfg->tls_key_file, SSL_FILETYPE_PEM) != 1 ||
         SSL_CTX_check_private_key(t->ctx) != 1))
        what = "config.tls_key_file", file = cfg->tls_key_file;
    if (what) {
        rl_seterr(e, REDLOCK_EINVAL, -1, "%s \"%.80s\": cannot load it: %s", what, file,
                  ssl_err());
        rl_tls_free(t);
        return REDLOCK_EINVAL;
    }
    if (cfg->tls_server_name)
        snprintf(t->server_name, sizeof(t->server_name), "%s", cfg->tls_server_name);
    *ret = t;
    return 0;
}

void rl_tls_free(rl_tls *t)
{
    if (!t)
        return;
    if (t->ctx)
        SSL_CTX_free(t->ctx);
    free(t);
}

/* An SSL object for one master: the name it must prove (SNI too, unless it
 * is an address), handed to hiredis, which drives the handshake and owns
 * the object once it accepted it. */
static int tls_attach(rl_conn *c, const rl_tls *t, const rl_addr *a, char *why, size_t len)
{
    SSL *ssl = SSL_new(t->ctx);
    if (!ssl) {
        snprintf(why, len, "cannot start TLS: %s", ssl_err());
        return REDLOCK_ENOMEM;
    }
    const char *name = t->server_name[0] ? t->server_name : a->host;
    unsigned char ip[sizeof(struct in6_addr)];
    bool is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
    if (!is_ip)
        SSL_set_tlsext_host_name(ssl, name);
    if (t->verify) {
        if (is_ip)
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name);
        else
            SSL_set1_host(ssl, name);
    }
    if (redisInitiateSSL(&c->ac->c, ssl) != REDIS_OK) {
        snprintf(why, len, "TLS: %.100s", c->ac->c.errstr[0] ? c->ac->c.errstr : ssl_err());
        SSL_free(ssl);
        return REDLOCK_ECONNECT;
    }
    c->ssl = ssl;
    c->tls = true;
    return 0;
}
#else
int rl_tls_new(const redlock_config *cfg, const rl_addr *addrs, uint32_t n, rl_tls **ret,
               redlock_error *e)
{
    (void)addrs; (void)n;
    *ret = NULL;
    bool any = cfg->tls;
    for (uint32_t i = 0; i < n; i++)
        any = any || addrs[i].tls;
    if (!any)
        return 0;
    rl_seterr(e, REDLOCK_EINVAL, -1, "TLS to masters needs libredlock built against hiredis "
              ">= 1.0 with hiredis_ssl; this build has no TLS");
    return REDLOCK_EINVAL;
}

void rl_tls_free(rl_tls *t)
{
    free(t);
}
#endif

/* ---- opening ------------------------------------------------------------------ */

static int conn_attach_events(rl_conn *c, struct event_base *base)
{
    redisAsyncContext *ac = c->ac;
    c->rev = event_new(base, ac->c.fd, EV_READ | EV_PERSIST, ev_on_read, c);
    c->wev = event_new(base, ac->c.fd, EV_WRITE, ev_on_write, c);
    if (!c->rev || !c->wev)
        return REDLOCK_ENOMEM;
    /* The first writable event tells hiredis that the non-blocking connect
     * finished; commands queued before that go out with it. */
    if (event_add(c->rev, NULL) != 0 || event_add(c->wev, NULL) != 0)
        return REDLOCK_ESYS;
    c->wstate = W_ARMED;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    ac->ev.data = c;
    return 0;
}

int rl_conn_open(const rl_conn_opts *o, const rl_conn_hooks *h, void *arg, rl_conn **ret,
                 char *why, size_t whylen)
{
    const rl_addr *a = o->addr;
    redisAsyncContext *ac = a->kind == RL_ADDR_UNIX ? redisAsyncConnectUnix(a->host)
                                                    : redisAsyncConnect(a->ip, a->port);
    if (!ac) {
        snprintf(why, whylen, "out of memory connecting");
        return REDLOCK_ENOMEM;
    }
    if (ac->err) {
        snprintf(why, whylen, "%s", strstr(ac->errstr, "refused")
                                        ? "connection refused (is redis-server running?)"
                                        : ac->errstr);
        redisAsyncFree(ac);
        return REDLOCK_ECONNECT;
    }
    /* hiredis opens sockets without close-on-exec: a program that forks
     * and execs (redlock-cli run) would leak our connections into its
     * children, keeping them open after we close them. */
    int fdflags = fcntl(ac->c.fd, F_GETFD);
    if (fdflags >= 0)
        fcntl(ac->c.fd, F_SETFD, fdflags | FD_CLOEXEC);

    rl_conn *c = calloc(1, sizeof(*c));
    int rc = c ? 0 : REDLOCK_ENOMEM;
    if (c) {
        c->ac = ac;
        c->hooks = h;
        c->arg = arg;
        c->subscriber = o->subscriber;
        c->max_reply_bytes = o->max_reply_bytes ? o->max_reply_bytes : (1u << 20);
        ac->data = c;
        if (!guard_attach(c))
            rc = REDLOCK_ENOMEM;
    }
#if RL_HAVE_TLS
    if (!rc && o->tls)
        rc = tls_attach(c, o->tls, a, why, whylen);
#endif
    if (!rc)
        rc = conn_attach_events(c, o->base);
    if (rc) {
        if (!why[0] || rc == REDLOCK_ENOMEM)
            snprintf(why, whylen, "cannot set up the connection (%s)", redlock_strerror(rc));
        if (c && c->rev)
            event_free(c->rev);
        if (c && c->wev)
            event_free(c->wev);
        if (c)
            ac->ev = (__typeof__(ac->ev)){ 0 };
        redisAsyncFree(ac);
        if (c)
            conn_free(c);
        return rc;
    }
    *ret = c;
    return 0;
}
