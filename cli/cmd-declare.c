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
 * the fleet's longest ttl, the bound of windows that cannot be measured.
 * Neither runs on any automatic path.
 */
#include "commands.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "report.h"

static int word_on_masters(const struct cli_opts *o, redlock_client *c, bool readmit)
{
    size_t n = redlock_client_masters(c), done = 0;
    redlock_error err;
    int rc, code;

    memset(&err, 0, sizeof(err));
    if (readmit)
        rc = redlock_readmit(c, o->ttl_set ? o->ttl_ms : 0, &done, &err);
    else
        rc = redlock_declare_empty(c, &done, &err);
    code = cli_exit_for(rc);
    if (rc == 0 && !o->json)
        printf(readmit ? "%zu of %zu masters readmitted (the others counted already)\n"
                       : "%zu of %zu masters declared empty (the others counted already)\n",
               done, n);
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
