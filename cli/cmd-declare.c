/* cmd-declare.c - `declare-empty`: tell new masters that they have nothing
 * to forget.
 *
 * The library's memory guard keeps a master without a memory marker out of
 * quorums for the longest ttl in use: it may have restarted and forgotten a
 * lock. A fresh deployment's masters have no marker either, and nothing to
 * forget; an operator says so with this command, once, and they count at
 * once (redlock_declare_empty()). Masters that have a marker are left
 * alone: a master that crashed and has been asked since (an acquire stamps
 * a new marker) keeps its wait. One that crashed and was not asked since
 * cannot be told from a new one, and would be declared: hence the man
 * page's warning, and no such command in any automatic path.
 */
#include "commands.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "report.h"

int cli_cmd_declare_empty(const struct cli_opts *o, redlock_client *c)
{
    size_t n = redlock_client_masters(c), declared = 0;
    redlock_error err;
    int rc, code;

    memset(&err, 0, sizeof(err));
    rc = redlock_declare_empty(c, &declared, &err);
    code = cli_exit_for(rc);
    if (rc == 0 && !o->json)
        printf("%zu of %zu masters declared empty (the others have a memory marker)\n",
               declared, n);
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
        json_key(&j, "declared");
        json_u64(&j, declared);
        json_obj_end(&j);
        json_end(&j);
    }
    return code;
}
