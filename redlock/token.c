/* token.c - lock tokens and the jitter random source.
 *
 * A token must be unguessable (another client that could predict it could
 * release or extend our lock), so it comes from OpenSSL's CSPRNG: 128 bits,
 * printed as 32 hex characters. Retry jitter needs no such strength; it uses
 * a per-client xorshift seeded from the same source.
 */
#include "common.h"

#include <openssl/rand.h>
#include <time.h>

int rl_token_new(char out[RL_TOKEN_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[RL_TOKEN_BYTES];
    if (RAND_bytes(raw, sizeof(raw)) != 1)
        return REDLOCK_ESYS;
    for (size_t i = 0; i < sizeof(raw); i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
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
