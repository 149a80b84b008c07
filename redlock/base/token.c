/* token.c - lock tokens and the jitter random source.
 *
 * A token is 128 bits from OpenSSL's CSPRNG, printed as 32 hex characters:
 * unguessable, since whoever could predict one could release or extend our
 * lock. Retry jitter needs no such strength: a per-client xorshift seeded
 * from the same source. Why tokens come in batches, and what a fork does to
 * them: the comment above RL_TOKEN_BATCH; the cost: docs/transport.md, "Cost".
 */
#include "base/common.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

/* OpenSSL 3 calls getpid() on every RAND_bytes() (to notice a fork): a
 * system call per acquire, so tokens are drawn RL_TOKEN_BATCH at a time per
 * thread, each wiped as it is handed out. A forked child must never hand out
 * its parent's bytes (two locks, one token): pthread_atfork() moves fork_gen
 * on in every child, which makes each thread's batch stale there. */
#define RL_TOKEN_BATCH 16

static unsigned long fork_gen; /* moved on in each forked child */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void on_fork_child(void)
{
    __atomic_add_fetch(&fork_gen, 1, __ATOMIC_RELAXED);
}

static void atfork_init(void)
{
    pthread_atfork(NULL, NULL, on_fork_child);
}

static __thread struct {
    unsigned char raw[RL_TOKEN_BATCH * RL_TOKEN_BYTES];
    unsigned left;     /* tokens not handed out yet */
    unsigned long gen; /* fork_gen when drawn */
} batch;

/* The next RL_TOKEN_BYTES random bytes into @out, from this thread's batch
 * (drawn again when empty or drawn before a fork). 0, or -1 when OpenSSL
 * fails (then nothing is used from it). */
static int next_random(unsigned char out[RL_TOKEN_BYTES])
{
    pthread_once(&atfork_once, atfork_init);
    unsigned long gen = __atomic_load_n(&fork_gen, __ATOMIC_RELAXED);
    if (batch.left == 0 || batch.gen != gen) {
        if (RAND_bytes(batch.raw, sizeof(batch.raw)) != 1) {
            OPENSSL_cleanse(batch.raw, sizeof(batch.raw));
            batch.left = 0;
            return -1;
        }
        batch.left = RL_TOKEN_BATCH;
        batch.gen = gen;
    }
    unsigned char *p = batch.raw + (size_t)--batch.left * RL_TOKEN_BYTES;
    memcpy(out, p, RL_TOKEN_BYTES);
    OPENSSL_cleanse(p, RL_TOKEN_BYTES);
    return 0;
}

int rl_token_new(char out[RL_TOKEN_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[RL_TOKEN_BYTES];
    if (next_random(raw) != 0)
        return REDLOCK_ESYS;
    for (size_t i = 0; i < sizeof(raw); i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    OPENSSL_cleanse(raw, sizeof(raw));
    out[RL_TOKEN_LEN] = '\0';
    return 0;
}

uint64_t rl_random_u64(void)
{
    uint64_t v = 0;
    if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
        v = rl_now_us() ^ (uint64_t)(uintptr_t)&v;
    return v ? v : 0x9e3779b97f4a7c15ull;
}

rl_monotime rl_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int64_t rl_realtime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int rl_token_match(const char *v, size_t len, const char *token)
{
    size_t tlen = strlen(token);
    if (!v || len < tlen || memcmp(v, token, tlen) != 0)
        return -1;
    return len == tlen ? 0 : len == tlen + 1 && v[tlen] == '\2' ? 1 : -1;
}
