/* report.c - turns a redlock_outcome into the lines and JSON members that
 * redlock-cli prints (see report.h).
 *
 * Messages name the master and the cause, one line each, so that an
 * operator reading a cron mail can tell "7003 is down" from "someone else
 * holds the lock" without re-running anything.
 */
#include "report.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"

static int vote_is_failure(int kind)
{
    /* An excluded master (clock untrusted, memory guard) answered, or
     * would have, but its vote does not count: say so, with the why. */
    return kind == REDLOCK_VOTE_TIMEOUT || kind == REDLOCK_VOTE_DOWN ||
           kind == REDLOCK_VOTE_ERROR || kind == REDLOCK_VOTE_EXCLUDED;
}

static const char *vote_cause(const redlock_vote *v)
{
    if (v->detail[0] != '\0')
        return v->detail;
    if (v->err != 0)
        return redlock_strerror(v->err);
    return redlock_vote_kind_name(v->kind);
}

unsigned report_count_votes(const redlock_outcome *out, int kind)
{
    unsigned n = 0;

    for (size_t i = 0; out && i < redlock_outcome_masters(out); i++)
        if (redlock_outcome_vote(out, i)->kind == kind)
            n++;
    return n;
}

/* A master at its maxmemory under noeviction refuses writes with "OOM
 * command not allowed ...": it is full for now (keys expire, memory is
 * freed), not set up wrong. Its error reply counts as unavailable, like
 * LOADING's, not as the setup's (EREPLY). */
static int vote_err(const redlock_vote *v)
{
    return v->err == REDLOCK_EREPLY && strncmp(v->detail, "OOM ", 4) == 0 ? REDLOCK_EUNAVAIL
                                                                          : v->err;
}

int report_exit_for(int rc, const redlock_outcome *out)
{
    int errs[REDLOCK_MAX_MASTERS] = { 0 };
    size_t n = out ? redlock_outcome_masters(out) : 0, oom = 0, replies = 0;

    if (n > REDLOCK_MAX_MASTERS)
        n = REDLOCK_MAX_MASTERS;
    for (size_t i = 0; i < n; i++) {
        const redlock_vote *v = redlock_outcome_vote(out, i);

        errs[i] = vote_err(v);
        oom += errs[i] != v->err;
        replies += errs[i] == REDLOCK_EREPLY;
    }
    /* The library says EREPLY when error replies deny the quorum; if they
     * do only with the full masters among them, the masters are
     * unavailable for now: no quorum (69), not a setup to fix (78). */
    if (rc == REDLOCK_EREPLY && oom > 0 && replies + redlock_outcome_quorum(out) <= n)
        rc = REDLOCK_ENOQUORUM;
    return cli_exit_for_masters(rc, errs, n);
}

void report_votes(const redlock_client *c, const redlock_outcome *out, int failed)
{
    for (size_t i = 0; out && i < redlock_outcome_masters(out); i++) {
        const redlock_vote *v = redlock_outcome_vote(out, i);
        const char *addr = redlock_client_master_addr(c, i);

        if (!addr)
            addr = "?";
        if (vote_is_failure(v->kind)) {
            /* A failure's own line already names the cause, the first
             * masters and the counts: each master's line is for -v. A
             * success that some masters refused is worth a warning. */
            if (failed)
                cli_note("%s: %s", addr, vote_cause(v));
            else
                cli_warn("warning: %s: %s", addr, vote_cause(v));
        } else {
            cli_note("%s: %s (%u us)%s%s", addr, redlock_vote_kind_name(v->kind),
                     (unsigned)v->latency_us, v->detail[0] ? ": " : "", v->detail);
        }
    }
}

/* @op and what it was about, then the cause. @label: "'name'", or NULL. */
static void report_error_label(const char *op, const char *label, int rc, const redlock_error *err,
                               const redlock_outcome *out)
{
    char why[REDLOCK_ERRMSG_LEN + 96];

    /* The library's message names the cause and the counts; without one,
     * say how the votes fell ourselves. */
    if (err && err->msg[0] != '\0') {
        /* "status 'x': status: no quorum" reads better without the echo;
         * for "run: extend", compare the last word. */
        const char *last = strrchr(op, ' ') ? strrchr(op, ' ') + 1 : op;
        size_t ol = strlen(last);

        if (strncmp(err->msg, last, ol) == 0 && err->msg[ol] == ':' && err->msg[ol + 1] == ' ')
            snprintf(why, sizeof(why), "%s", err->msg + ol + 2);
        else
            snprintf(why, sizeof(why), "%s", err->msg);
    } else if (out && redlock_outcome_masters(out) > 0)
        snprintf(why, sizeof(why), "%s (ok on %u/%u masters, quorum %u)", redlock_strerror(rc),
                 (unsigned)redlock_outcome_ok(out), (unsigned)redlock_outcome_masters(out),
                 (unsigned)redlock_outcome_quorum(out));
    else
        snprintf(why, sizeof(why), "%s", redlock_strerror(rc));
    if (label)
        cli_error("%s %s: %s", op, label, why);
    else
        cli_error("%s: %s", op, why);
}

void report_error(const char *op, const void *resource, size_t len, int rc,
                  const redlock_error *err, const redlock_outcome *out)
{
    redlock_resource one = { resource, len };

    report_error_set(op, resource ? &one : NULL, resource ? 1 : 0, rc, err, out);
}

void report_error_set(const char *op, const redlock_resource *set, size_t n, int rc,
                      const redlock_error *err, const redlock_outcome *out)
{
    /* Up to three names, then a count: a 64-member set must still fit on
     * one readable line. */
    char label[4 * 132 + 32], res[128];
    size_t used = 0, shown = n < 3 ? n : 3;

    if (!set || n == 0) {
        report_error_label(op, NULL, rc, err, out);
        return;
    }
    if (n == 4)
        shown = 4; /* "and 1 more" is no shorter than the name */
    label[0] = '\0';
    for (size_t i = 0; i < shown; i++)
        used += (size_t)snprintf(label + used, sizeof(label) - used, "%s'%s'", i ? ", " : "",
                                 cli_printable(set[i].name, set[i].len, res, sizeof(res)));
    if (shown < n)
        snprintf(label + used, sizeof(label) - used, " and %zu more", n - shown);
    report_error_label(op, label, rc, err, out);
}

void report_json_head(struct json *j, const char *command, int exit_code, int rc,
                      const redlock_error *err)
{
    json_key(j, "command");
    json_cstr(j, command);
    json_key(j, "ok");
    json_bool(j, exit_code == 0);
    json_key(j, "exit");
    json_i64(j, exit_code);
    json_key(j, "error");
    if (rc == 0) {
        json_null(j);
        return;
    }
    json_obj_begin(j);
    json_key(j, "code");
    json_cstr(j, redlock_err_name(rc));
    json_key(j, "message");
    json_cstr(j, (err && err->msg[0] != '\0') ? err->msg : redlock_strerror(rc));
    json_obj_end(j);
}

void report_json_resource(struct json *j, const void *resource, size_t len)
{
    json_key(j, "resource");
    /* Names that are not UTF-8 cannot round-trip through a JSON string:
     * give the exact bytes as hex too. */
    if (!json_utf8_valid(resource, len)) {
        json_str(j, resource, len);
        json_key(j, "resource_hex");
        json_hex(j, resource, len);
    } else {
        json_str(j, resource, len);
    }
}

void report_json_set(struct json *j, const redlock_resource *set, size_t n)
{
    int all_utf8 = 1;

    report_json_resource(j, set[0].name, set[0].len);
    json_key(j, "resources");
    json_arr_begin(j);
    for (size_t i = 0; i < n; i++)
        if (!json_str(j, set[i].name, set[i].len))
            all_utf8 = 0;
    json_arr_end(j);
    if (!all_utf8) {
        json_key(j, "resources_hex");
        json_arr_begin(j);
        for (size_t i = 0; i < n; i++)
            json_hex(j, set[i].name, set[i].len);
        json_arr_end(j);
    }
}

void report_json_votes(struct json *j, const redlock_client *c, const redlock_outcome *out)
{
    json_key(j, "n_masters");
    json_u64(j, redlock_client_masters(c));
    json_key(j, "quorum");
    json_u64(j, redlock_client_quorum(c));
    json_key(j, "elapsed_us");
    json_u64(j, out ? redlock_outcome_elapsed_us(out) : 0);
    json_key(j, "masters");
    json_arr_begin(j);
    for (size_t i = 0; i < redlock_client_masters(c); i++) {
        static const redlock_vote none; /* not asked: a vote of kind NONE */
        const redlock_vote *v = out ? redlock_outcome_vote(out, i) : NULL;

        if (!v)
            v = &none;

        json_obj_begin(j);
        json_key(j, "addr");
        json_cstr(j, redlock_client_master_addr(c, i));
        json_key(j, "vote");
        json_cstr(j, redlock_vote_kind_name(v->kind));
        json_key(j, "error");
        json_cstr(j, v->err != 0 ? redlock_err_name(v->err) : NULL);
        json_key(j, "latency_us");
        json_u64(j, v->latency_us);
        json_key(j, "detail");
        json_str(j, v->detail, strnlen(v->detail, sizeof(v->detail)));
        json_obj_end(j);
    }
    json_arr_end(j);
}
