/* script.c - the Lua scripts and their SHA1 digests.
 *
 * Release and extend must compare the token and act in one step: a GET
 * followed by a DEL from the client could delete a lock that expired and was
 * taken by someone else in between. Redis runs a script atomically.
 *
 * The digests are computed locally, so EVALSHA can be sent before any
 * SCRIPT LOAD reply; a master that answers NOSCRIPT (restarted, or SCRIPT
 * FLUSH) gets the same script again as EVAL (fanout.c).
 */
#include "script.h"
#include "common.h"

#include <openssl/sha.h>
#include <pthread.h>
#include <string.h>

/* Each script works on one key or a set of keys (KEYS), so the same code
 * serves single locks and multi-resource locks. */
static const char *const bodies[RL_SCRIPT_COUNT] = {
    /* Release: delete every key that still holds our token, and (ARGV[2] is
     * '1') publish on its channel to wake waiters; a failed attempt's own
     * cleanup passes '0' and wakes nobody. -1 if any key
     * holds another token (we had lost it: report it), 1 if we deleted
     * something, 0 if everything was already gone. */
    [RL_SCRIPT_RELEASE] =
        "local mine, other = 0, 0\n"
        "for i = 1, #KEYS do\n"
        "  local v = redis.call('get', KEYS[i])\n"
        "  if v == ARGV[1] then\n"
        "    redis.call('del', KEYS[i]) mine = mine + 1\n"
        "    if ARGV[2] == '1' then redis.call('publish', KEYS[i], 'released') end\n"
        "  elseif v ~= false then other = other + 1 end\n"
        "end\n"
        "if other > 0 then return -1 end\n"
        "if mine > 0 then return 1 end\n"
        "return 0\n",
    /* Extend: all or nothing on this master. Only if every key still holds
     * our token; a key that is gone (0) or another's (-1) extends nothing,
     * so extend never resurrects a lock. */
    [RL_SCRIPT_EXTEND] =
        "for i = 1, #KEYS do\n"
        "  local v = redis.call('get', KEYS[i])\n"
        "  if v == false then return 0 end\n"
        "  if v ~= ARGV[1] then return -1 end\n"
        "end\n"
        "for i = 1, #KEYS do redis.call('pexpire', KEYS[i], ARGV[2]) end\n"
        "return 1\n",
    [RL_SCRIPT_STATUS] =
        "return {redis.call('get', KEYS[1]), redis.call('pttl', KEYS[1])}\n",
    /* Acquire a set (and/or fenced): KEYS[1..n] are the locks, KEYS[n+1..2n]
     * their fence counters when ARGV[3] is "1"; ARGV[1] token, ARGV[2] ttl,
     * ARGV[4] n. All keys or none: nil if any exists. Returns the largest
     * counter after incrementing each (fenced), else 0. */
    [RL_SCRIPT_ACQUIRE] =
        "local n = tonumber(ARGV[4])\n"
        "for i = 1, n do\n"
        "  if redis.call('exists', KEYS[i]) == 1 then return false end\n"
        "end\n"
        "for i = 1, n do redis.call('set', KEYS[i], ARGV[1], 'PX', ARGV[2]) end\n"
        "if ARGV[3] ~= '1' then return 0 end\n"
        "local f = 0\n"
        "for i = n + 1, 2 * n do\n"
        "  local v = redis.call('incr', KEYS[i])\n"
        "  if v > f then f = v end\n"
        "end\n"
        "return f\n",
    /* Fence write-back: counter = max(counter, ARGV[1]) on every key. */
    [RL_SCRIPT_FENCE] =
        "local f = tonumber(ARGV[1])\n"
        "for i = 1, #KEYS do\n"
        "  local c = tonumber(redis.call('get', KEYS[i]) or '0')\n"
        "  if c < f then redis.call('set', KEYS[i], ARGV[1]) end\n"
        "end\n"
        "return 1\n",
};

static char shas[RL_SCRIPT_COUNT][41];
static pthread_once_t shas_once = PTHREAD_ONCE_INIT;

static void compute_shas(void)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < RL_SCRIPT_COUNT; i++) {
        unsigned char d[SHA_DIGEST_LENGTH];
        SHA1((const unsigned char *)bodies[i], strlen(bodies[i]), d);
        for (int j = 0; j < SHA_DIGEST_LENGTH; j++) {
            shas[i][2 * j] = hex[d[j] >> 4];
            shas[i][2 * j + 1] = hex[d[j] & 15];
        }
        shas[i][40] = '\0';
    }
}

int rl_scripts_init(void)
{
    return pthread_once(&shas_once, compute_shas) == 0 ? 0 : REDLOCK_ESYS;
}

const char *rl_script_body(int id)
{
    return bodies[id];
}

const char *rl_script_sha(int id)
{
    return shas[id];
}
