/* raw.c - the floor's plumbing: plain hiredis async connections to every
 * master on the floor's loop, the raw commands it times (SET NX PX with a
 * token-sized value, DEL), and its phases. No redlock here: this is what
 * the library is measured against.
 */
#include "floor.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>

const char floor_token[33] = "0123456789abcdef0123456789abcdef";

int floor_send_set(struct floor_state *fs, int m, const char *key, redisCallbackFn *cb, void *pd)
{
    char ttl[16];
    const char *argv[6] = { "SET", key, floor_token, "NX", "PX", ttl };
    size_t len[6];
    int i;

    snprintf(ttl, sizeof(ttl), "%u", config.ttl_ms);
    for (i = 0; i < 6; i++)
        len[i] = strlen(argv[i]);
    return redisAsyncCommandArgv(fs->ac[m], cb, pd, 6, argv, len);
}

int floor_send_del(struct floor_state *fs, int m, const char *key, redisCallbackFn *cb, void *pd)
{
    const char *argv[2] = { "DEL", key };
    size_t len[2] = { 3, strlen(key) };

    return redisAsyncCommandArgv(fs->ac[m], cb, pd, 2, argv, len);
}

int floor_reply_ok(const redisReply *r)
{
    return r && (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_INTEGER);
}

/* The context is hiredis' to free after this call when the connect
 * failed (0.14 and 1.x alike): forget it. */
static void forget(struct floor_state *fs, const redisAsyncContext *ac)
{
    int i;

    for (i = 0; i < fs->n; i++)
        if (fs->ac[i] == ac)
            fs->ac[i] = NULL;
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct floor_state *fs = ac->data;

    if (status == REDIS_OK) {
        fs->connected++;
    } else {
        fs->conn_failed++;
        forget(fs, ac);
    }
    if (fs->connected + fs->conn_failed == fs->n)
        event_base_loopbreak(fs->base);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    (void)status;
    forget(ac->data, ac);
}

void floor_set_phase(struct floor_state *fs, enum floor_phase ph, double seconds)
{
    fs->phase = ph;
    fs->phase_start = now_us();
    fs->deadline = fs->phase_start + (uint64_t)(seconds * 1e6);
}

/* A floor state on a loop of its own, connected to every master over
 * plain hiredis; NULL with @why filled if it cannot be. */
struct floor_state *floor_open(char *why, size_t len)
{
    struct floor_state *fs = calloc(1, sizeof(*fs));
    int m;

    if (!fs || !(fs->base = event_base_new())) {
        snprintf(why, len, "cannot create an event loop");
        free(fs);
        return NULL;
    }
    fs->n = config.n_masters;
    hist_init(&fs->set);
    hist_init(&fs->del);
    hist_init(&fs->quorum);
    floor_set_phase(fs, PH_CONNECT, 3.0);
    for (m = 0; m < fs->n; m++) {
        fs->ac[m] = redisAsyncConnect(config.host[m], config.port[m]);
        if (!fs->ac[m] || fs->ac[m]->err) {
            snprintf(why, len, "connect %s:%d: %s", config.host[m], config.port[m],
                     fs->ac[m] ? fs->ac[m]->errstr : "out of memory");
            floor_close(fs);
            return NULL;
        }
        fs->ac[m]->data = fs;
        redisLibeventAttach(fs->ac[m], fs->base);
        redisAsyncSetConnectCallback(fs->ac[m], on_connect);
        redisAsyncSetDisconnectCallback(fs->ac[m], on_disconnect);
    }
    event_base_dispatch(fs->base);
    if (fs->connected != fs->n) {
        snprintf(why, len, "%d of %d masters did not connect", fs->n - fs->connected, fs->n);
        floor_close(fs);
        return NULL;
    }
    return fs;
}

void floor_close(struct floor_state *fs)
{
    int m;

    for (m = 0; m < fs->n; m++)
        if (fs->ac[m])
            redisAsyncFree(fs->ac[m]);
    /* hiredis frees the contexts' events from its cleanup hook */
    if (fs->tick)
        event_free(fs->tick);
    event_base_free(fs->base);
    free(fs->chains);
    free(fs);
}
