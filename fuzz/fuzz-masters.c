/* fuzz-masters.c - arbitrary bytes as redlock_config.masters.
 *
 * The master list is parsed inside the library (client.c, parse_masters),
 * which is only reachable through redlock_client_new(): that call also
 * resolves each host and starts connecting. offline.c, linked in, makes
 * resolution numeric-only (plus "localhost") and every connect() fail at
 * once, so an input costs no DNS query and sends no packet. The client is
 * made on an event_base of ours and freed at once; the loop never runs.
 *
 * Checked on every input, beyond memory safety and UB:
 *  - the return is 0, EINVAL, ERESOLVE or ENOMEM; on failure reterr has the
 *    same code and a non-empty one-line message, and *ret is untouched;
 *  - on success, N = entries in the input (1..16), quorum = N/2+1, and every
 *    master's address is set;
 *  - after redlock_client_free() no event is left on the base.
 * Also (unless REDLOCK_FUZZ_STRICT=0): no two masters are the same endpoint
 * once IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are read as the IPv4
 * they are. The fuzzer found the library counting such a pair as two
 * masters; client.c now maps them, and the input that showed it is in the
 * corpus (repro-v4-mapped-duplicate).
 *
 * Run: build-fuzz/fuzz/fuzz-masters fuzz/corpus/fuzz-masters (tools/fuzz.sh).
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/types.h"

static struct event_base *base;
static int strict;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Undefined behaviour must stop the run, not scroll by. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
    return "halt_on_error=1:print_stacktrace=1";
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* Strict by default since client.c maps ::ffff:a.b.c.d to a.b.c.d;
     * REDLOCK_FUZZ_STRICT=0 turns the duplicate-master check off. */
    const char *s = getenv("REDLOCK_FUZZ_STRICT");
    strict = !(s != NULL && strcmp(s, "0") == 0);
    /* One base for the whole run: a client that left an event behind
     * shows up in the count after its free. */
    base = event_base_new();
    if (base == NULL)
        abort();
    return 0;
}

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz-masters: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}

/* "::ffff:a.b.c.d" is a.b.c.d: an IPv6 socket connects to the IPv4 master. */
static void endpoint(const rl_node *n, char *out, size_t len)
{
    const char *ip = n->addr.kind == RL_ADDR_UNIX ? n->addr.host : n->addr.ip;
    struct in6_addr a6;

    if (inet_pton(AF_INET6, ip, &a6) == 1 && IN6_IS_ADDR_V4MAPPED(&a6)) {
        char v4[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &a6.s6_addr[12], v4, sizeof(v4));
        snprintf(out, len, "%s:%d", v4, n->addr.port);
        return;
    }
    snprintf(out, len, "%s:%d", ip, n->addr.port);
}

static void check_success(redlock_client *c, const char *list)
{
    size_t entries = 1, n = redlock_client_masters(c);

    for (const char *p = list; *p; p++)
        entries += *p == ',';
    if (n < 1 || n > REDLOCK_MAX_MASTERS || n != entries)
        fail("accepted list has a wrong number of masters", list);
    if (redlock_client_quorum(c) != n / 2 + 1)
        fail("quorum is not N/2+1", list);
    for (size_t i = 0; i < n; i++) {
        const char *addr = redlock_client_master_addr(c, i);
        if (addr == NULL || addr[0] == '\0')
            fail("a master has no address", list);
    }
    if (redlock_client_master_addr(c, n) != NULL)
        fail("an address past N", list);
    if (!strict)
        return;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++) {
            char a[96], b[96];
            endpoint(&c->nodes[i], a, sizeof(a));
            endpoint(&c->nodes[j], b, sizeof(b));
            if (strcmp(a, b) == 0)
                fail("two masters are the same endpoint (strict)", a);
        }
    }
}

static void check_failure(int rc, const redlock_error *err, const char *list)
{
    if (rc != REDLOCK_EINVAL && rc != REDLOCK_ERESOLVE && rc != REDLOCK_ENOMEM)
        fail("unexpected return code", redlock_err_name(rc));
    if (err->code != rc)
        fail("reterr->code differs from the return", list);
    if (err->msg[0] == '\0' || memchr(err->msg, '\0', sizeof(err->msg)) == NULL)
        fail("reterr->msg is empty or not terminated", list);
    if (strpbrk(err->msg, "\r\n") != NULL)
        fail("reterr->msg is not one line", err->msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* 16 entries of at most 271 bytes fit in 4.4 KB: longer adds nothing. */
    if (size > 8192)
        return 0;
    char *list = malloc(size + 1);
    if (list == NULL)
        return 0;
    memcpy(list, data, size);
    list[size] = '\0';

    redlock_config cfg;
    redlock_config_init(&cfg);
    cfg.masters = list;
    cfg.connect_timeout_ms = 1;
    cfg.clock_policy = REDLOCK_CLOCK_OFF;

    redlock_client *c = (redlock_client *)&cfg; /* sentinel: must stay as is */
    redlock_error err;
    memset(&err, 0, sizeof(err));
    int rc = redlock_client_new(&cfg, base, &c, &err);
    if (rc == 0) {
        if (c == (redlock_client *)&cfg)
            fail("0 returned but *ret not set", list);
        check_success(c, list);
        redlock_client_free(c);
    } else {
        if (c != (redlock_client *)&cfg)
            fail("*ret clobbered on failure", list);
        check_failure(rc, &err, list);
    }
    if (event_base_get_num_events(base, EVENT_BASE_COUNT_ADDED) != 0)
        fail("events left on the base after redlock_client_free()", list);
    free(list);
    return 0;
}
