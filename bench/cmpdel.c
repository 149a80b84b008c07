/* cmpdel.c - compare-then-delete on a master over plain hiredis: what any
 * Redlock release must run, at its cheapest. The smallest script (loaded
 * once with SCRIPT LOAD, then EVALSHA), or the server's own command where
 * it has one: DELIFEQ (Valkey >= 9.0) or DELEX key IFEQ value (Redis >=
 * 8.4, Valkey >= 9.2). Which one a master has is asked at connect (COMMAND
 * INFO), never guessed from a version string: a fork or a backport may
 * have either, and a master with both uses DELIFEQ.
 */
#include "floor.h"

#include <string.h>

#include <event2/event.h>

/* The least a release can ask of a master that has no native command. */
static const char release_lua[] = "if redis.call('get', KEYS[1]) == ARGV[1] then\n"
                                  "  return redis.call('del', KEYS[1])\n"
                                  "end\n"
                                  "return 0\n";

/* The same with the lease's entry in the master's index of held keys
 * (KEYS[2]) removed where the key was ours: the raw-guard row's release
 * on a master without a native command (rawcycle.c). */
static const char release_guard_lua[] = "if redis.call('get', KEYS[1]) == ARGV[1] then\n"
                                        "  redis.call('zrem', KEYS[2], KEYS[1])\n"
                                        "  return redis.call('del', KEYS[1])\n"
                                        "end\n"
                                        "return 0\n";

const char *floor_release_name(enum floor_release k)
{
    return k == REL_DELIFEQ ? "DELIFEQ" : k == REL_DELEX ? "DELEX IFEQ" : "EVALSHA";
}

/* COMMAND INFO NAME answers [nil] for a command the server does not know,
 * [[name, arity, ...]] for one it does. */
static int command_known(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
           r->element[0]->type == REDIS_REPLY_ARRAY;
}

static void on_ask(redisAsyncContext *ac, void *reply, void *pd)
{
    struct floor_ask *a = pd;
    struct floor_state *fs = a->fs;
    redisReply *r = reply;

    (void)ac;
    if (a->kind == REL_SCRIPT) {
        if (r && r->type == REDIS_REPLY_STRING)
            snprintf(a->guard ? fs->guard_sha : fs->sha, sizeof(fs->sha), "%s", r->str);
        else
            fs->broken = 1;
    } else if (command_known(r) && fs->rel[a->master] == REL_SCRIPT) {
        /* asked DELIFEQ first: a server with both keeps that one */
        fs->rel[a->master] = a->kind;
    }
    if (++fs->loaded == 4 * fs->n)
        event_base_loopbreak(fs->base);
}

static void on_ask_stuck(evutil_socket_t fd, short what, void *arg)
{
    struct floor_state *fs = arg;

    (void)fd;
    (void)what;
    fs->broken = 1;
    event_base_loopbreak(fs->base);
}

/* Load the scripts on every master and ask each which native command it
 * has; fills fs->sha, fs->guard_sha and fs->rel[]. 0, or -1 with @why
 * filled. */
int floor_release_prepare(struct floor_state *fs, char *why, size_t len)
{
    static const char *const names[] = { "delifeq", "delex" };
    struct timeval bound = { 3, 0 };
    struct event *stuck = evtimer_new(fs->base, on_ask_stuck, fs);
    int m, i;

    if (!stuck) {
        snprintf(why, len, "out of memory");
        return -1;
    }
    fs->loaded = 0;
    for (m = 0; m < fs->n; m++) {
        const char *load[3] = { "SCRIPT", "LOAD", release_lua };
        size_t load_len[3] = { 6, 4, sizeof(release_lua) - 1 };
        const char *gload[3] = { "SCRIPT", "LOAD", release_guard_lua };
        size_t gload_len[3] = { 6, 4, sizeof(release_guard_lua) - 1 };

        fs->rel[m] = REL_SCRIPT;
        for (i = 0; i < 3; i++)
            fs->ask[m][i] = (struct floor_ask){ fs, m, (enum floor_release)i, 0 };
        fs->ask[m][3] = (struct floor_ask){ fs, m, REL_SCRIPT, 1 };
        redisAsyncCommandArgv(fs->ac[m], on_ask, &fs->ask[m][REL_SCRIPT], 3, load, load_len);
        redisAsyncCommandArgv(fs->ac[m], on_ask, &fs->ask[m][3], 3, gload, gload_len);
        for (i = 0; i < 2; i++) {
            const char *argv[3] = { "COMMAND", "INFO", names[i] };
            size_t alen[3] = { 7, 4, strlen(names[i]) };

            /* replies come in order: DELIFEQ's is seen first */
            redisAsyncCommandArgv(fs->ac[m], on_ask, &fs->ask[m][REL_DELIFEQ + i], 3, argv, alen);
        }
    }
    evtimer_add(stuck, &bound);
    event_base_dispatch(fs->base);
    event_free(stuck);
    if (fs->broken || fs->loaded != 4 * fs->n) {
        snprintf(why, len, "SCRIPT LOAD or COMMAND INFO failed or went unanswered on a master");
        fs->broken = 1;
        return -1;
    }
    return 0;
}

/* Compare-then-delete @key (holding floor_token) on master @m: natively
 * where it can and @native allows, else EVALSHA. */
int floor_send_release(struct floor_state *fs, int m, const char *key, int native,
                       redisCallbackFn *cb, void *pd)
{
    size_t klen = strlen(key), tlen = sizeof(floor_token) - 1;
    enum floor_release k = native ? fs->rel[m] : REL_SCRIPT;

    if (k == REL_DELIFEQ) {
        const char *argv[3] = { "DELIFEQ", key, floor_token };
        size_t len[3] = { 7, klen, tlen };

        return redisAsyncCommandArgv(fs->ac[m], cb, pd, 3, argv, len);
    }
    if (k == REL_DELEX) {
        const char *argv[4] = { "DELEX", key, "IFEQ", floor_token };
        size_t len[4] = { 5, klen, 4, tlen };

        return redisAsyncCommandArgv(fs->ac[m], cb, pd, 4, argv, len);
    }
    {
        const char *argv[5] = { "EVALSHA", fs->sha, "1", key, floor_token };
        size_t len[5] = { 7, strlen(fs->sha), 1, klen, tlen };

        return redisAsyncCommandArgv(fs->ac[m], cb, pd, 5, argv, len);
    }
}

/* raw-guard's release of @key on master @m: the compare-delete and the
 * removal of the lease's entry from @index. Natively (where @native and the
 * master allow), the command then ZREM in the same write: nothing makes them
 * one step, which a sound design would need (docs/memory-guard.md,
 * "The release without Lua"), so this is a floor, not a release. Else one
 * EVALSHA that does both. */
int floor_send_release_guard(struct floor_state *fs, int m, const char *key, const char *index,
                             int native, redisCallbackFn *cb, void *pd)
{
    if (native && fs->rel[m] != REL_SCRIPT) {
        if (floor_send_release(fs, m, key, native, cb, pd) != REDIS_OK)
            return REDIS_ERR;
        redisAsyncCommand(fs->ac[m], NULL, NULL, "ZREM %s %s", index, key);
        return REDIS_OK;
    }
    {
        const char *argv[6] = { "EVALSHA", fs->guard_sha, "2", key, index, floor_token };
        size_t len[6] = { 7,           strlen(fs->guard_sha), 1,
                          strlen(key), strlen(index),         sizeof(floor_token) - 1 };

        return redisAsyncCommandArgv(fs->ac[m], cb, pd, 6, argv, len);
    }
}

/* Whether a release deleted the key: all three answer the integer 1. */
int floor_release_deleted(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
}

/* Any master with a native command (a mixed fleet releases each its own way). */
int floor_release_native(const struct floor_state *fs)
{
    int m;

    for (m = 0; m < fs->n; m++)
        if (fs->rel[m] != REL_SCRIPT)
            return 1;
    return 0;
}

/* "EVALSHA on all 5" or "DELIFEQ on 3, EVALSHA on 2", for @native as
 * floor_send_release() takes it. */
void floor_release_describe(const struct floor_state *fs, int native, char *buf, size_t len)
{
    int count[3] = { 0, 0, 0 }, k, m;
    size_t used = 0;

    for (m = 0; m < fs->n; m++)
        count[native ? fs->rel[m] : REL_SCRIPT]++;
    buf[0] = '\0';
    for (k = 2; k >= 0 && used < len; k--) {
        if (!count[k])
            continue;
        if (count[k] == fs->n)
            used += (size_t)snprintf(buf + used, len - used, "%s on all %d", floor_release_name(k),
                                     fs->n);
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%s on %d", used ? ", " : "",
                                     floor_release_name(k), count[k]);
    }
}
