/* cmd-lock.c - `lock`, `unlock` and `extend`: one operation each, on one
 * resource or a set, with the token on stdout (lock) or taken from the
 * command line (unlock, extend).
 */
#include "commands.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "acquire.h"
#include "cli.h"
#include "json.h"
#include "report.h"

int cli_cmd_lock(const struct cli_opts *o, redlock_client *c)
{
    redlock_lock *lock = NULL;
    redlock_outcome *out;
    redlock_error err;
    struct cli_acquire_stats st;
    int rc, code;

    /* ^C while waiting: cancel, leave nothing behind, exit 128 + N. */
    if (cli_signals_setup() < 0) {
        cli_error("lock: cannot set up signal handling: %s", strerror(errno));
        return CLI_EXIT_SOFTWARE;
    }
    if (!(out = redlock_outcome_new())) {
        cli_error("lock: out of memory");
        return CLI_EXIT_SOFTWARE;
    }
    rc = cli_acquire(o, c, &lock, out, &err, &st);
    if (rc == CLI_ACQUIRE_INTERRUPTED) {
        code = cli_acquire_interrupted(o, &st, &err);
        rc = REDLOCK_ECANCELED;
    } else {
        code = cli_acquire_exit(o, rc, out);
    }
    if (rc == 0) {
        /* The token on the first line; with --fence the fencing token on
         * the second, so `read -r t; read -r f` takes both. */
        if (!o->json && o->fence)
            printf("%s\n%llu\n", redlock_lock_token(lock),
                   (unsigned long long)redlock_lock_fence(lock));
        else if (!o->json)
            printf("%s\n", redlock_lock_token(lock));
        report_votes(c, out, 0);
        cli_note("acquired on %u/%u masters (quorum %u) in %llu us, validity %lld ms",
                 (unsigned)redlock_outcome_ok(out), (unsigned)redlock_outcome_masters(out),
                 (unsigned)redlock_outcome_quorum(out),
                 (unsigned long long)redlock_outcome_elapsed_us(out),
                 (long long)redlock_outcome_validity_ms(out));
    } else if (code == CLI_EXIT_USAGE) {
        cli_usage_error("lock: %s", err.msg[0] ? err.msg : redlock_strerror(rc));
    } else if (rc != REDLOCK_ECANCELED && !cli_acquire_quiet(o, rc)) {
        report_error_set("lock", o->set, o->n_resources, rc, &err, out);
        cli_acquire_explain(o, c, rc, out);
        report_votes(c, out, 1);
    }
    if (o->json && code != CLI_EXIT_USAGE) {
        struct json j;

        json_init(&j, stdout);
        json_obj_begin(&j);
        report_json_head(&j, "lock", code, rc, &err);
        cli_acquire_json(&j, c, o, lock, out, &st);
        json_obj_end(&j);
        json_end(&j);
    }
    /* The lock stays on the masters: `unlock` or its ttl ends it. */
    redlock_lock_free(lock);
    redlock_outcome_free(out);
    return code;
}

/* Tokens the library makes are 32 lowercase hex digits. */
static int looks_like_token(const char *t)
{
    if (strlen(t) != 32)
        return 0;
    for (size_t i = 0; i < 32; i++)
        if (!((t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'f')))
            return 0;
    return 1;
}

static void token_op_json(const struct cli_opts *o, redlock_client *c, int code, int rc,
                          const redlock_outcome *out, const redlock_error *err)
{
    struct json j;

    json_init(&j, stdout);
    json_obj_begin(&j);
    report_json_head(&j, o->cmd_name, code, rc, err);
    report_json_set(&j, o->set, o->n_resources);
    json_key(&j, "token");
    json_cstr(&j, o->token);
    if (o->cmd == CLI_CMD_EXTEND) {
        json_key(&j, "ttl_ms");
        json_u64(&j, o->ttl_ms);
        json_key(&j, "validity_ms");
        json_i64(&j, rc == 0 ? redlock_outcome_validity_ms(out) : 0);
        json_key(&j, "extended_on");
    } else {
        json_key(&j, "released_on");
    }
    json_u64(&j, redlock_outcome_ok(out));
    report_json_votes(&j, c, out);
    json_obj_end(&j);
    json_end(&j);
}

/* unlock and extend: act on a token that another process obtained. */
int cli_cmd_token_op(const struct cli_opts *o, redlock_client *c)
{
    const int is_extend = (o->cmd == CLI_CMD_EXTEND);
    redlock_lock *lock = NULL;
    redlock_outcome *out;
    redlock_error err;
    int rc, code;

    if (!(out = redlock_outcome_new())) {
        cli_error("%s: out of memory", o->cmd_name);
        return CLI_EXIT_SOFTWARE;
    }
    memset(&err, 0, sizeof(err));
    /* The same list as given to lock, in any order: release and extend act
     * on every member still holding TOKEN. */
    if (o->n_resources == 1)
        rc = redlock_lock_new(o->resource, o->resource_len, o->token, &lock, &err);
    else
        rc = redlock_lock_new_set(o->set, o->n_resources, o->token, &lock, &err);
    if (rc == 0 && is_extend)
        rc = redlock_extend(c, lock, o->ttl_ms, out, &err);
    else if (rc == 0)
        rc = redlock_release(c, lock, out, &err);
    code = report_exit_for(rc, out);
    if (rc == 0) {
        report_votes(c, out, 0);
        if (is_extend)
            cli_note("extended on %u/%u masters, validity %lld ms",
                     (unsigned)redlock_outcome_ok(out), (unsigned)redlock_outcome_masters(out),
                     (long long)redlock_outcome_validity_ms(out));
        else
            cli_note("released on %u/%u masters", (unsigned)redlock_outcome_ok(out),
                     (unsigned)redlock_outcome_masters(out));
    } else if (code == CLI_EXIT_USAGE) {
        cli_usage_error("%s: %s", o->cmd_name, err.msg[0] ? err.msg : redlock_strerror(rc));
    } else {
        report_error_set(o->cmd_name, o->set, o->n_resources, rc, &err, out);
        report_votes(c, out, 1);
        /* `unlock a b` without the token reads b as the token: say so. */
        if (rc == REDLOCK_ENOTHELD && !looks_like_token(o->token))
            cli_error("%s: TOKEN '%s' is not the 32 hex digits that lock prints: the token "
                      "is the last word (%s RESOURCE... TOKEN)",
                      o->cmd_name, o->token, o->cmd_name);
    }
    if (o->json && code != CLI_EXIT_USAGE)
        token_op_json(o, c, code, rc, out, &err);
    redlock_lock_free(lock);
    redlock_outcome_free(out);
    return code;
}
