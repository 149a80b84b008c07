/* raw.c - the floor's plumbing: plain hiredis async connections to every
 * master on the floor's loop, the raw commands it times (SET NX PX with a
 * token-sized value, DEL), and its phases. No redlock here: this is what
 * the library is measured against.
 */
#include "floor.h"

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

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct floor_state *fs = ac->data;

    if (status == REDIS_OK)
        fs->connected++;
    else
        fs->conn_failed++;
    if (fs->connected + fs->conn_failed == fs->n)
        event_base_loopbreak(fs->base);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct floor_state *fs = ac->data;
    int i;

    (void)status;
    for (i = 0; i < fs->n; i++)
        if (fs->ac[i] == ac)
            fs->ac[i] = NULL;
}

void floor_set_phase(struct floor_state *fs, enum floor_phase ph, double seconds)
{
    fs->phase = ph;
    fs->phase_start = now_us();
    fs->deadline = fs->phase_start + (uint64_t)(seconds * 1e6);
}

/* Connect to every master; 0, or -1 with the row's note set. */
int floor_connect(struct floor_state *fs, struct result *r)
{
    int m;

    floor_set_phase(fs, PH_CONNECT, 3.0);
    for (m = 0; m < fs->n; m++) {
        fs->ac[m] = redisAsyncConnect(config.host[m], config.port[m]);
        if (!fs->ac[m] || fs->ac[m]->err) {
            result_note(r, "error: connect %s:%d: %s", config.host[m],
                        config.port[m], fs->ac[m] ? fs->ac[m]->errstr : "out of memory");
            return -1;
        }
        fs->ac[m]->data = fs;
        redisLibeventAttach(fs->ac[m], fs->base);
        redisAsyncSetConnectCallback(fs->ac[m], on_connect);
        redisAsyncSetDisconnectCallback(fs->ac[m], on_disconnect);
    }
    event_base_dispatch(fs->base);
    if (fs->connected != fs->n) {
        result_note(r, "error: %d of %d masters did not connect", fs->n - fs->connected, fs->n);
        return -1;
    }
    return 0;
}

