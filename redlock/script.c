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
#include "internal.h"

#include <openssl/sha.h>
#include <pthread.h>
#include <string.h>

static const char *const bodies[RL_SCRIPT_COUNT] = {
    [RL_SCRIPT_RELEASE] =
        "local v = redis.call('get', KEYS[1])\n"
        "if v == ARGV[1] then redis.call('del', KEYS[1]) return 1 end\n"
        "if v == false then return 0 end\n"
        "return -1\n",
    [RL_SCRIPT_EXTEND] =
        "local v = redis.call('get', KEYS[1])\n"
        "if v == ARGV[1] then redis.call('pexpire', KEYS[1], ARGV[2]) return 1 end\n"
        "if v == false then return 0 end\n"
        "return -1\n",
    [RL_SCRIPT_STATUS] =
        "return {redis.call('get', KEYS[1]), redis.call('pttl', KEYS[1])}\n",
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
