/* cmd-declare.c - an operator's word on masters: `declare-empty` and
 * `readmit`.
 *
 * The library's memory guard keeps a master that lost its data, or that
 * restarted with data that may lack grants, out of quorums until the leases
 * it may have granted have ended. A fresh deployment's masters look the
 * same and have nothing to forget: declare-empty makes each master that
 * holds no key count at once (redlock_declare_empty()), and refuses, naming
 * it, a master that holds keys: that one is not new. readmit is for an
 * operator who checked that no lock a restarted master forgot is still
 * live: every master counts at once (redlock_readmit()); --ttl also resets
 * the fleet's longest ttl, the bound of windows that cannot be measured,
 * never below a lease the fleet reports live. Both look at the fleet
 * first and refuse where a master that remembers reports a live lease or
 * one does not answer (exit 75 or 69, naming it); --force, from the
 * command line only, overrides that. Neither runs on any automatic path.
 */
#include "commands.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "report.h"

/* What the word changed, in one line: how many masters count now by it,
 * and (readmit --ttl) the bound it set on each, said apart from what was
 * asked when a live lease kept it higher. */
static void say_done(const struct cli_opts *o, bool readmit, size_t done, size_t n,
                     uint32_t bound_ms)
{
    char bound[160] = "";
    if (readmit && bound_ms && bound_ms != o->ttl_ms)
        snprintf(bound, sizeof(bound),
                 "; fleet bound set to %u ms, not the %u ms asked: a lease the fleet reported "
                 "lives that long",
                 bound_ms, o->ttl_ms);
    else if (readmit && bound_ms)
        snprintf(bound, sizeof(bound), "; fleet bound set to %u ms", bound_ms);
    printf("%zu of %zu masters %s (the others counted already)%s\n", done, n,
           readmit ? "readmitted" : "declared empty", bound);
}

static int word_on_masters(const struct cli_opts *o, redlock_client *c, bool readmit)
{
    size_t n = redlock_client_masters(c), done = 0;
    uint32_t bound_ms = 0;
    unsigned flags = o->force ? REDLOCK_DECLARE_FORCE : 0;
    redlock_error err;
    int rc, code;

    memset(&err, 0, sizeof(err));
    if (o->force)
        cli_warn("warning: --force: masters that sit out count at once even where a master that "
                 "remembers reports a live lease, or one did not answer");
    if (readmit)
        rc = redlock_readmit_with(c, o->ttl_set ? o->ttl_ms : 0, flags, &done, &bound_ms, &err);
    else
        rc = redlock_declare_empty_with(c, flags, &done, &err);
    code = cli_exit_for(rc);
    if (rc == 0 && !o->json)
        say_done(o, readmit, done, n, bound_ms);
    else if (rc != 0)
        report_error(o->cmd_name, NULL, 0, rc, &err, NULL);
    if (o->json) {
        struct json j;

        json_init(&j, stdout);
        json_obj_begin(&j);
        report_json_head(&j, o->cmd_name, code, rc, &err);
        json_key(&j, "n_masters");
        json_u64(&j, n);
        json_key(&j, "quorum");
        json_u64(&j, redlock_client_quorum(c));
        json_key(&j, readmit ? "readmitted" : "declared");
        json_u64(&j, done);
        if (readmit) {
            json_key(&j, "bound_ms");
            json_u64(&j, bound_ms);
        }
        json_obj_end(&j);
        json_end(&j);
    }
    return code;
}

int cli_cmd_declare_empty(const struct cli_opts *o, redlock_client *c)
{
    return word_on_masters(o, c, false);
}

int cli_cmd_readmit(const struct cli_opts *o, redlock_client *c)
{
    return word_on_masters(o, c, true);
}
