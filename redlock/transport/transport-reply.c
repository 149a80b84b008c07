/* transport-reply.c - replies as the library reads them, and the guard that builds them.
 *
 * Callers read replies through accessors, so they never see redisReply.
 * The guard sits in hiredis' reader, which builds each reply one object at a
 * time through a table of functions: ours refuse, before hiredis looks at a
 * reply, what would make it abort or allocate without bound.
 */
#include "transport/transport-reply.h"
#include "transport/transport-private.h"

#include <hiredis/read.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- replies --------------------------------------------------------------- */

/* rl_reply is hiredis' redisReply; only the transport knows it. The fields
 * read here are the same in 0.14.1 and 1.x. */
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

bool rl_reply_counter(const rl_reply *r, uint64_t *out)
{
    if (r && rl_reply_type(r) == RL_REPLY_INTEGER && rl_reply_integer(r) >= 0) {
        *out = (uint64_t)rl_reply_integer(r);
        return true;
    }
    size_t len;
    const char *s = r && rl_reply_type(r) == RL_REPLY_STRING ? rl_reply_str(r, &len) : NULL;
    if (!s || len == 0 || len > 18)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return true;
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

/* ---- the reply guard ------------------------------------------------------- *
 *
 * hiredis trusts the server in places where a master that is not a
 * well-behaved Redis (another service on the port, a proxy gone wrong,
 * anyone on the path) can take the whole process down or make it allocate
 * without bound:
 *  - a reply no command asked for fails an assert() (async.c,
 *    redisProcessCallbacks), in 0.14.1 and 1.x alike, unless the
 *    connection is subscribed;
 *  - on a subscribed connection, an array without two strings fails an
 *    assert() (HIREDIS_MAJOR 0) and an "unsubscribe" without an integer
 *    third fails another (both versions); a "subscribe" confirming a
 *    channel hiredis has no callback for fails one more (HIREDIS_MAJOR >= 1
 *    only: 0.14.1 ignores it), and so does a "psubscribe" (1.x: we never
 *    subscribe to patterns);
 *  - "*N" makes the reader allocate N pointers before one element arrived
 *    (HIREDIS_MAJOR 0 has no limit; 1.x checks its reader's maxelements,
 *    2^32-1 by default, which we lower) and nesting multiplies objects
 *    (1.x grows its task stack without limit; 0.14.1 stops at depth 7).
 * A refusal (NULL) fails the reader, which hiredis reports as out of memory
 * and answers by dropping the connection: transport.c says what happened. */

#if HIREDIS_MAJOR >= 1
typedef size_t rl_nelem_t; /* HIREDIS_MAJOR >= 1: createArray takes a size_t */
#else
typedef int rl_nelem_t;
#endif

static redisReplyObjectFunctions *hiredis_fns; /* the reader's own */
static redisReplyObjectFunctions guard_fns;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

static bool refuse(const redisReadTask *t, const char *what)
{
    rl_conn *c = t->privdata;
    c->refused = what;
    return false;
}

/* Is there a command whose reply this is? (Otherwise it is unsolicited, or
 * on a subscribed connection, a pub/sub message.) */
static bool expected(const rl_conn *c)
{
    return c->ac && c->ac->replies.head != NULL;
}

/* Does the top-level reply that @t belongs to go to pub/sub handling? */
static bool is_pubsub(const redisReadTask *t)
{
    const rl_conn *c = t->privdata;
    return c->subscriber && c->ac && !expected(c) && (c->ac->c.flags & REDIS_SUBSCRIBED);
}

/* The kind of the pub/sub message @t is an element of (its first element). */
static const char *pubsub_kind(const redisReadTask *t)
{
    const redisReply *msg = t->parent->obj;
    return msg->element[0]->str;
}

static rl_subch *sub_find(rl_conn *c, const char *name, size_t len, rl_subch ***link)
{
    rl_subch **p = &c->subs;
    for (; *p; p = &(*p)->next) {
        if ((*p)->len == len && memcmp((*p)->name, name, len) == 0)
            break;
    }
    if (link)
        *link = p;
    return *p;
}

int rl_guard_subscribed(rl_conn *c, const char *channel, size_t len)
{
    rl_subch *s = sub_find(c, channel, len, NULL);
    if (!s) {
        s = malloc(sizeof(*s) + len);
        if (!s)
            return REDLOCK_ENOMEM;
        s->len = len;
        memcpy(s->name, channel, len);
        s->pending = 0;
        s->next = c->subs;
        c->subs = s;
    }
    s->pending++;
    return 0;
}

void rl_guard_free(rl_conn *c)
{
    while (c->subs) {
        rl_subch *next = c->subs->next;
        free(c->subs);
        c->subs = next;
    }
}

/* The channel of a pub/sub message, before hiredis handles the message:
 * keep the mirror of hiredis' table in step with what hiredis will do with
 * it (both versions count a channel's pending confirmations the same way,
 * and drop it on an "unsubscribe" once none is pending). The reply is
 * handled right after it is built, and the mirror's updates commute with a
 * SUBSCRIBE sent in between, so the two never disagree. */
static bool guard_channel(const redisReadTask *t, const char *s, size_t len)
{
    rl_conn *c = t->privdata;
    const char *kind = pubsub_kind(t);
    rl_subch **link;
    rl_subch *ch = sub_find(c, s, len, &link);
    if (strcasecmp(kind, "subscribe") == 0) {
        if (!ch)
            return refuse(t, "a confirmation of a subscription we did not ask for");
        ch->pending--;
    } else if (strcasecmp(kind, "unsubscribe") == 0 && ch && ch->pending == 0) {
        *link = ch->next;
        free(ch);
    }
    return true;
}

static bool word_is(const char *s, size_t len, const char *word)
{
    return len == strlen(word) && strncasecmp(s, word, len) == 0;
}

/* Elements of a pub/sub message: its kind (one we subscribe for), the
 * channel, and an integer count ((un)subscribe) or the message. */
static bool guard_pubsub_element(const redisReadTask *t, int type, const char *s, size_t len)
{
    if (t->idx == 0) {
        /* @s is the reader's buffer, not NUL-terminated. */
        if (type != REDIS_REPLY_STRING || !s ||
            (!word_is(s, len, "message") && !word_is(s, len, "subscribe") &&
             !word_is(s, len, "unsubscribe")))
            return refuse(t, "a malformed pub/sub message");
        return true;
    }
    if (t->idx == 1)
        return type == REDIS_REPLY_STRING ? guard_channel(t, s, len)
                                          : refuse(t, "a malformed pub/sub message");
    bool message = strcasecmp(pubsub_kind(t), "message") == 0;
    if (type != (message ? REDIS_REPLY_STRING : REDIS_REPLY_INTEGER))
        return refuse(t, "a malformed pub/sub message");
    return true;
}

/* Checks common to every object; @type is what it will be; @s/@len its
 * text, for strings. */
static bool guard_check(const redisReadTask *t, int type, long long elements, const char *s,
                        size_t len)
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
        if (type == REDIS_REPLY_ERROR || expected(c))
            return true;
        if (!c->subscriber || !(c->ac && (c->ac->c.flags & REDIS_SUBSCRIBED)))
            return refuse(t, "a reply nothing asked for");
        if (type != REDIS_REPLY_ARRAY || elements != 3)
            return refuse(t, "a malformed pub/sub message");
        return true;
    }
    if (++c->objs > RL_REPLY_OBJECTS_MAX)
        return refuse(t, "a reply of too many parts to be ours");
    if (t->parent->parent || !is_pubsub(t))
        return true;
    return guard_pubsub_element(t, type, s, len);
}

static void *guard_string(const redisReadTask *t, char *s, size_t len)
{
    return guard_check(t, t->type, 0, s, len) ? hiredis_fns->createString(t, s, len) : NULL;
}

static void *guard_array(const redisReadTask *t, rl_nelem_t elements)
{
    return guard_check(t, t->type, (long long)elements, NULL, 0)
               ? hiredis_fns->createArray(t, elements)
               : NULL;
}

static void *guard_integer(const redisReadTask *t, long long v)
{
    return guard_check(t, REDIS_REPLY_INTEGER, 0, NULL, 0) ? hiredis_fns->createInteger(t, v)
                                                           : NULL;
}

static void *guard_nil(const redisReadTask *t)
{
    return guard_check(t, REDIS_REPLY_NIL, 0, NULL, 0) ? hiredis_fns->createNil(t) : NULL;
}

static void guard_free(void *obj)
{
    hiredis_fns->freeObject(obj);
}

#if HIREDIS_MAJOR >= 1
/* HIREDIS_MAJOR >= 1 reads RESP3 too. We never send HELLO 3, so a master
 * that sends these is not speaking to us. */
static void *guard_double(const redisReadTask *t, double d, char *s, size_t len)
{
    (void)d;
    (void)s;
    (void)len;
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
    /* 1.x's table has createDouble and createBool between the others. */
    guard_fns = (redisReplyObjectFunctions){ guard_string, guard_array, guard_integer, guard_double,
                                             guard_nil,    guard_bool,  guard_free };
#else
    guard_fns = (redisReplyObjectFunctions){ guard_string, guard_array, guard_integer, guard_nil,
                                             guard_free };
#endif
}

bool rl_guard_attach(rl_conn *c)
{
    pthread_once(&guard_once, guard_init);
    redisReader *rd = c->ac->c.reader;
    if (!hiredis_fns || rd->fn != hiredis_fns)
        return false;
    rd->fn = &guard_fns;
    rd->privdata = c;
#if HIREDIS_MAJOR >= 1
    /* 1.x refuses a longer array itself, as a protocol error. */
    rd->maxelements = RL_REPLY_ARRAY_MAX;
#endif
    return true;
}
