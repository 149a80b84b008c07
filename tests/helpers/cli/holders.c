/* holders.c - A and B of the memory guard's attack tests, as redlock-cli
 * calls recorded in a history (see holders.h).
 *
 * What a call did is read from its --json object, which carries all a
 * history line needs: the token, the fence, the validity when the lock was
 * decided and every master's vote. The window written is [complete,
 * complete + validity): a little longer than the lease (the decision came
 * before the process exited), which can only make the checker see more
 * overlap, never less.
 */
#include "holders.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/new/assert.h>
#include <hiredis/hiredis.h>

#include "aoffile.h"
#include "cli.h"
#include "cluster.h"
#include "jsonread.h"

static tc_hist *hist;
static char hist_path[TCLI_SCRATCH_MAX + 32];

void tcli_hold_setup(void)
{
    tcli_setup();
    snprintf(hist_path, sizeof(hist_path), "%s/history.jsonl", tcli_tmpdir);
    hist = tc_hist_open(hist_path);
    cr_assert(hist != NULL, "cannot open the history %s", hist_path);
}

void tcli_hold_teardown(void)
{
    tc_hist_close(hist);
    hist = NULL;
    tcli_teardown();
}

void tcli_hold_init(void)
{
    tcli_hold_setup();
    tc_fresh(-1);
}

void tcli_hold_fini(void)
{
    tcli_hold_teardown();
    tc_heal();
}

void tcli_hold_need_aof(int aof)
{
    if (tc_aof() != aof)
        cr_skip_test("needs a cluster started %s --aof (meson gives it one)",
                     aof ? "with" : "without");
}

tc_hist *tcli_hold_hist(void)
{
    return hist;
}

void tcli_hold_fault(const char *what, int m, int lost, uint64_t t0_us)
{
    cr_assert(eq(int, tc_hist_fault(hist, what, m, lost, t0_us), 0), "history write failed");
}

/* The library's code named @name (the JSON's error code), or EUNKNOWN's. */
static int code_of(const char *name)
{
    for (int c = -1; c >= -64; c--)
        if (strcmp(redlock_err_name(c), name) == 0)
            return c;
    return -64;
}

/* One letter per vote, as tc_hist_votes() writes them. */
static char vote_letter(const char *vote)
{
    static const char *const names[] = { "ok",    "held",     "gone",    "timeout", "down",
                                         "error", "excluded", "pending", "none" };
    static const char letters[] = "OHGTDEXP-";

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(vote, names[i]) == 0)
            return letters[i];
    return '?';
}

/* What the --json object @doc of a lock or unlock says, into @c. Return:
 * the masters that voted OK (bit i: master i). */
static uint32_t read_call(struct tcli_call *c, const char *doc)
{
    char buf[64];
    uint32_t oks = 0;
    const char *masters, *m;

    tcli_assert_one_json_object(doc);
    c->rc = 0;
    c->msg[0] = '\0';
    if (!tcli_jnull(doc, "error")) {
        const char *err = tcli_jreq(doc, "error");
        const char *msg = tcli_jreq(err, "message"), *end;

        c->rc = code_of(tcli_jstr(err, "code", buf, sizeof(buf)));
        /* The message as it is (escapes and all): it is only shown. */
        end = strchr(msg + 1, '"');
        while (end && end[-1] == '\\')
            end = strchr(end + 1, '"');
        snprintf(c->msg, sizeof(c->msg), "%.*s", end ? (int)(end - msg - 1) : 0, msg + 1);
    }
    c->token[0] = '\0';
    if (!tcli_jnull(doc, "token"))
        tcli_jstr(doc, "token", c->token, sizeof(c->token));
    c->fence = 0;
    if (tcli_jget(doc, "fence") && !tcli_jnull(doc, "fence"))
        c->fence = (uint64_t)tcli_jint(doc, "fence");
    c->validity_ms = tcli_jget(doc, "validity_ms") ? tcli_jint(doc, "validity_ms") : 0;
    c->votes[0] = '\0';
    masters = tcli_jget(doc, "masters");
    for (int i = 0; masters && i < REDLOCK_MAX_MASTERS && (m = tcli_jindex(masters, i)); i++) {
        c->votes[i] = vote_letter(tcli_jstr(m, "vote", buf, sizeof(buf)));
        c->votes[i + 1] = '\0';
        if (c->votes[i] == 'O')
            oks |= 1u << i;
    }
    return oks;
}

int tcli_hold_lock(struct tcli_call *c, const char *who, const char *res, const char *ttl,
                   int fence, const char *wait)
{
    const char *args[12] = { "lock", res, "--ttl", ttl, "--json" };
    size_t k = 5;
    struct tcli_proc p;
    uint32_t ttl_ms;

    if (fence)
        args[k++] = "--fence";
    if (wait) {
        args[k++] = "--wait";
        args[k++] = wait;
    }
    args[k] = NULL;
    memset(c, 0, sizeof(*c));
    c->invoke_us = tc_now_us();
    tcli_start(&p, args, NULL);
    c->status = tcli_wait(&p);
    c->complete_us = tc_now_us();
    uint32_t oks = read_call(c, p.out);
    ttl_ms = (uint32_t)tcli_jint(p.out, "ttl_ms");
    tcli_free(&p);

    tc_hist_rec r = {
        .client = who,
        .op = TC_HIST_ACQUIRE,
        .res = res,
        .res_len = strlen(res),
        .invoke_us = c->invoke_us,
        .complete_us = c->complete_us,
        .rc = c->rc,
        .token = c->status == 0 ? c->token : NULL,
        .vend_us = c->complete_us + 1000u * (uint64_t)c->validity_ms,
        .has_vend = c->status == 0,
        .fence = c->fence,
        .ttl_ms = ttl_ms,
        .oks = oks,
        .n_ok = (uint32_t)__builtin_popcount(oks),
        .votes = c->votes,
    };
    cr_assert(eq(int, tc_hist_write(hist, &r), 0), "history write failed");
    cr_log_info("%s: lock exit %d, fence %llu, validity %lld ms, votes %s%s%s", who, c->status,
                (unsigned long long)c->fence, (long long)c->validity_ms, c->votes,
                c->msg[0] ? ": " : "", c->msg);
    return c->status;
}

int tcli_hold_unlock(const char *who, const char *res, const struct tcli_call *lock)
{
    const char *args[] = { "unlock", res, lock->token, "--json", NULL };
    struct tcli_call c = { 0 };
    struct tcli_proc p;

    c.invoke_us = tc_now_us();
    tcli_start(&p, args, NULL);
    c.status = tcli_wait(&p);
    c.complete_us = tc_now_us();
    uint32_t oks = read_call(&c, p.out);
    tcli_free(&p);

    tc_hist_rec r = {
        .client = who,
        .op = TC_HIST_RELEASE,
        .res = res,
        .res_len = strlen(res),
        .invoke_us = c.invoke_us,
        .complete_us = c.complete_us,
        .rc = c.rc,
        .token = lock->token,
        .oks = oks,
        .n_ok = (uint32_t)__builtin_popcount(oks),
        .votes = c.votes,
    };
    cr_assert(eq(int, tc_hist_write(hist, &r), 0), "history write failed");
    cr_log_info("%s: unlock exit %d, votes %s%s%s", who, c.status, c.votes, c.msg[0] ? ": " : "",
                c.msg);
    return c.status;
}

int tcli_hold_run(const char *const *args)
{
    struct tcli_proc p;
    int status;

    tcli_start(&p, args, NULL);
    status = tcli_wait(&p);
    cr_log_info("redlock-cli %s: exit %d: %.1500s", args[0], status, p.err);
    tcli_free(&p);
    return status;
}

void tcli_hold_ping(void)
{
    static const char *const ping[] = { "ping", "--samples", "1", NULL };

    tcli_hold_run(ping);
}

int tcli_hold_live(const struct tcli_call *a, uint64_t at_us)
{
    return a->status == 0 && at_us < a->invoke_us + 1000u * (uint64_t)a->validity_ms;
}

void tcli_hold_restart_empty(int m, int declare)
{
    tc_kill(m);
    tc_master_rm(m, "appendonlydir");
    tc_master_rm(m, "dump.rdb");
    tc_restart(m);
    if (declare)
        tc_declare_empty(m);
}

void tcli_hold_crash_losing_since(uint64_t since_us, long long size)
{
    uint64_t t0 = tc_now_us();

    tc_kill(TCLI_X);
    uint64_t since = tc_now_us() - since_us;
    cr_assert(lt(u64, since, 1000000u),
              "the crash came %.0f ms after the writes it loses began: more than the second an "
              "everysec AOF may lose",
              since / 1000.0);
    tc_aof_cut(TCLI_X, size);
    tc_restart(TCLI_X);
    tcli_hold_fault("machine crash: the last second lost", TCLI_X, 1, t0);
    tcli_hold_log_marker(TCLI_X, "after its restart");
}

void tcli_hold_34_down(void)
{
    uint64_t t0 = tc_now_us();

    tc_kill(3);
    tc_kill(4);
    tcli_hold_fault("sigkill 3 and 4", -1, 0, t0);
}

void tcli_hold_a_locks(struct tcli_call *a, const char *res, int fence)
{
    tcli_hold_lock(a, "A", res, TCLI_A_TTL, fence, NULL);
    cr_assert(eq(int, a->status, 0), "A did not get the lock: %s", a->msg);
    cr_assert(eq(str, a->votes, "OOODD"), "A counted masters 0, 1 and 2 only (votes %s)", a->votes);
}

void tcli_hold_a_while_34_down(struct tcli_call *a, const char *res, int fence)
{
    tcli_hold_34_down();
    tcli_hold_a_locks(a, res, fence);
}

void tcli_hold_34_back(void)
{
    uint64_t t0 = tc_now_us();

    tcli_hold_restart_empty(3, 1);
    tcli_hold_restart_empty(4, 1);
    tcli_hold_fault("3 and 4 back, empty, declared empty", -1, 0, t0);
}

void tcli_hold_a_on_012(struct tcli_call *a, const char *res, int fence)
{
    tcli_hold_a_while_34_down(a, res, fence);
    tcli_hold_34_back();
}

void tcli_hold_later(void)
{
    /* Time is the subject: the B asks 1-2 s after the attack, when
     * a window the attack made short has run out. */
    tc_sleep_ms(1500);
}

void tcli_hold_expect_refused(const char *who, int refused, const char *answer, uint64_t fence,
                              const char *votes, const struct tcli_call *a, uint64_t b_done_us)
{
    int64_t left_ms = (int64_t)(a->invoke_us + 1000u * (uint64_t)a->validity_ms) / 1000 -
                      (int64_t)b_done_us / 1000;
    char fences[96] = ""; /* "with fence 1 = A's fence 1", where A is fenced */

    if (a->fence)
        snprintf(fences, sizeof(fences), " with fence %llu %s A's fence %llu",
                 (unsigned long long)fence,
                 fence == a->fence  ? "="
                 : fence < a->fence ? "<"
                                    : ">",
                 (unsigned long long)a->fence);
    cr_expect(refused, "%s %s%s, votes %s, while A held its lease %lld ms more: two holders", who,
              answer, fences, votes, (long long)left_ms);
    if (refused)
        cr_log_info("%s refused (%s, votes %s) while A held %lld ms more", who, answer, votes,
                    (long long)left_ms);
}

void tcli_hold_b_refused(const struct tcli_call *a, const char *res, int no_quorum_too)
{
    struct tcli_call b;
    char answer[32];

    tcli_hold_later();
    tcli_hold_lock(&b, "B", res, TCLI_B_TTL, a->fence != 0, NULL);
    cr_assert(tcli_hold_live(a, b.complete_us),
              "the attack took longer than A's lease: the scenario tests nothing");
    snprintf(answer, sizeof(answer), "exit %d", b.status);
    tcli_hold_expect_refused("B", b.status == 75 || (no_quorum_too && b.status == 69), answer,
                             b.fence, b.votes, a, b.complete_us);
    if (b.status == 0)
        tcli_hold_unlock("B", res, &b);
}

void tcli_hold_a_releases(const struct tcli_call *a, const char *res)
{
    /* Whatever it says (logged): the lease ends here for A, which stops
     * acting as the holder, and its keys end with their ttl at the latest,
     * within B's wait. */
    tcli_hold_unlock("A", res, a);
}

void tcli_hold_b_after(const struct tcli_call *a, const char *res)
{
    struct tcli_call b;

    tcli_hold_a_releases(a, res);
    tcli_hold_lock(&b, "B", res, TCLI_B_TTL, a->fence != 0, TCLI_B_WAIT);
    cr_expect(eq(int, b.status, 0), "once A released, B did not get the lock within %s: %s",
              TCLI_B_WAIT, b.msg);
    if (b.status != 0)
        return;
    if (a->fence)
        cr_expect(gt(u64, b.fence, a->fence), "after A (fence %llu), B got fence %llu, votes %s",
                  (unsigned long long)a->fence, (unsigned long long)b.fence, b.votes);
    tcli_hold_unlock("B", res, &b);
}

void tcli_hold_b_asks(const struct tcli_call *a, const char *res, int no_quorum_too)
{
    tcli_hold_b_refused(a, res, no_quorum_too);
    tcli_hold_b_after(a, res);
    tcli_hold_check();
}

void tcli_hold_log_marker(int m, const char *when)
{
    static const char key[] = "\0redlock:marker";
    char line[1024] = "";
    size_t used = 0;
    redisReply *r = tc_cmd(m, "HGETALL %b", key, sizeof(key) - 1);

    /* Values cut to 12 bytes: a run_id's head names its process. */
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
        int n = snprintf(line + used, sizeof(line) - used, " %s=%.12s", r->element[i]->str,
                         r->element[i + 1]->str);
        if (n < 0 || (size_t)n >= sizeof(line) - used)
            break;
        used += (size_t)n;
    }
    cr_log_info("master %d's marker %s:%s", m, when, r ? line : " (no answer)");
    freeReplyObject(r);
}

void tcli_hold_check(void)
{
    static char out[32768];
    int rc = tc_hist_check(hist_path, NULL, NULL, out, sizeof(out));

    cr_assert(eq(int, rc, 0), "the history checker says (exit %d):\n%s", rc, out);
    cr_log_info("checker: %s", strrchr(out, '\n') ? strrchr(out, '\n') + 1 : out);
}
