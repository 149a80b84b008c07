/* cmd-declare.c - an operator's word on masters: `declare-empty` and
 * `readmit`.
 *
 * declare-empty: masters holding no key count at once; readmit: every
 * master does (--ttl resets the fleet's bound). Both look at the fleet first
 * and refuse (exit 75 or 69) unless --force, on the command line only; never
 * automatic. Why: docs/memory-guard.md, "The operator's word: declare-empty and readmit".
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
