/* test-token-fork.c - a forked child never takes a lock with its parent's next token.
 *
 * Tokens are drawn from OpenSSL a batch at a time, per thread (token.c). An
 * async client makes them on the caller's thread, so a child forked from it
 * inherits that thread's batch: unless the batch is dropped at fork, parent
 * and child hand out the same next token, and whichever releases second
 * releases the other's lock. Against the real masters: the tokens compared
 * are the ones the masters hold.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "cluster.h"
#include "core.h"

#define TTL_MS 10000

typedef struct taken {
    int done;
    int status;
    char token[REDLOCK_TOKEN_MAX + 1];
} taken;

static void on_acquired(redlock_client *c, int status, redlock_lock *lock,
                        const redlock_outcome *out, const redlock_error *err, void *arg)
{
    (void)c;
    (void)out;
    (void)err;
    taken *t = arg;
    t->status = status;
    if (lock) {
        snprintf(t->token, sizeof(t->token), "%s", redlock_lock_token(lock));
        redlock_lock_free(lock); /* the lock lapses: the key's ttl does the rest */
    }
    t->done = 1;
}

/* A lock on a fresh resource through a new async client on a new base, in
 * this thread: its token into @t. */
static void take_async(const char *label, taken *t)
{
    struct event_base *base = event_base_new();
    redlock_config cfg;
    tc_config(&cfg);
    redlock_client *c = tc_client_async(&cfg, base);
    char res[128];
    tc_resource(res, sizeof(res), label);
    redlock_error e;
    memset(t, 0, sizeof(*t));
    if (redlock_acquire_async(c, res, strlen(res), TTL_MS, on_acquired, t, &e) == 0)
        TC_RUN_UNTIL(base, t->done, 10000);
    redlock_client_free(c);
    event_base_free(base);
}

Test(token, a_forked_child_draws_tokens_of_its_own)
{
    taken first, parent, child;
    take_async("prime", &first); /* this thread now holds a batch of tokens */
    cr_assert(eq(int, first.status, 0));

    int fds[2];
    cr_assert(eq(int, pipe(fds), 0));
    pid_t pid = fork();
    cr_assert(ge(int, pid, 0));
    if (pid == 0) {
        take_async("child", &child);
        ssize_t w = write(fds[1], &child, sizeof(child));
        _exit(w == (ssize_t)sizeof(child) ? 0 : 1);
    }
    close(fds[1]);
    take_async("parent", &parent);
    memset(&child, 0, sizeof(child));
    ssize_t r = read(fds[0], &child, sizeof(child));
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    cr_assert(eq(sz, (size_t)r, sizeof(child)), "the child said nothing");
    cr_assert(eq(int, child.status, 0), "child: %s", redlock_err_name(child.status));
    cr_assert(eq(int, parent.status, 0));
    cr_expect(tc_is_hex32(child.token) && tc_is_hex32(parent.token));
    cr_expect(ne(str, child.token, parent.token), "parent and child drew the same token");
    cr_expect(ne(str, child.token, first.token));
}
