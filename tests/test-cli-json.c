/* test-cli-json.c - redlock-cli --json: one object per command, on success
 * and failure, with the fields redlock-cli(1) lists, any resource bytes
 * escaped, and the error's code; setup errors (78) say which.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "cli.h"
#include "cluster.h"
#include "jsonread.h"

TestSuite(json, .init = tcli_setup, .fini = tcli_teardown, .timeout = 60);

Test(json, json_fields_of_every_command)
{
    struct tcli_proc p;
    char res[128], token[64], buf[128];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--ttl", "20000ms", "--json"), 0), "%s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(str, tcli_jstr(p.out, "command", buf, sizeof(buf)), "lock"));
    cr_assert(tcli_jbool(p.out, "ok"));
    cr_assert(eq(int, tcli_jint(p.out, "exit"), 0));
    cr_assert(tcli_jnull(p.out, "error"));
    cr_assert(eq(str, tcli_jstr(p.out, "resource", buf, sizeof(buf)), res));
    tcli_jstr(p.out, "token", token, sizeof(token));
    cr_assert(eq(sz, strlen(token), 32));
    cr_assert(eq(int, tcli_jint(p.out, "ttl_ms"), 20000));
    cr_assert(tcli_jint(p.out, "validity_ms") > 19000 && tcli_jint(p.out, "validity_ms") < 20000);
    cr_assert(tcli_jint(p.out, "acquired_on") >= 3);
    cr_assert(eq(int, tcli_jint(p.out, "quorum"), tc_n() / 2 + 1));
    cr_assert(eq(int, tcli_jint(p.out, "n_masters"), tc_n()));
    cr_assert(tcli_jint(p.out, "elapsed_us") > 0);
    cr_assert(eq(int, tcli_jint(p.out, "attempts"), 1));
    tcli_jint(p.out, "waited_ms");
    tcli_assert_votes(p.out, tc_n());
    tcli_free(&p);

    /* A failure is one object too, with the error's code. */
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--json"), 75));
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_yes(!tcli_jbool(p.out, "ok")));
    cr_assert(eq(int, tcli_jint(p.out, "exit"), 75));
    cr_assert(eq(str, tcli_jstr(tcli_jreq(p.out, "error"), "code", buf, sizeof(buf)), "ECONFLICT"));
    tcli_jreq(tcli_jreq(p.out, "error"), "message");
    cr_assert(tcli_jnull(p.out, "token"));
    tcli_assert_votes(p.out, tc_n());
    tcli_free(&p);

    cr_assert(eq(int, tcli_run(&p, "status", res, "--json"), 0));
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jbool(p.out, "held"));
    cr_assert(eq(str, tcli_jstr(p.out, "majority_token", buf, sizeof(buf)), token));
    cr_assert(eq(int, tcli_jint(p.out, "held_on"), tc_n()));
    cr_assert(eq(int, tcli_jint(p.out, "answered"), tc_n()));
    {
        const char *m = tcli_jindex(tcli_jreq(p.out, "masters"), 0);

        cr_assert(tcli_jbool(m, "reachable"));
        cr_assert(tcli_jbool(m, "held"));
        cr_assert(tcli_jint(m, "pttl_ms") > 0);
        cr_assert(eq(str, tcli_jstr(m, "token", buf, sizeof(buf)), token));
        tcli_jint(m, "rtt_us");
    }
    tcli_free(&p);

    cr_assert(eq(int, tcli_run(&p, "ping", "--json"), 0));
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(int, tcli_jint(p.out, "reachable"), tc_n()));
    {
        const char *m = tcli_jindex(tcli_jreq(p.out, "masters"), tc_n() - 1);

        cr_assert(eq(str, tcli_jstr(m, "addr", buf, sizeof(buf)), (char *)tc_addr(tc_n() - 1)));
        cr_assert(tcli_jbool(m, "reachable"));
        tcli_jint(m, "rtt_us");
        tcli_jint(m, "clock_offset_us");
    }
    tcli_free(&p);

    cr_assert(eq(int, tcli_run(&p, "extend", res, token, "--ttl", "20000ms", "--json"), 0));
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jint(p.out, "extended_on") >= 3);
    tcli_assert_votes(p.out, tc_n());
    tcli_free(&p);

    cr_assert(eq(int, tcli_run(&p, "unlock", res, token, "--json"), 0));
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(str, tcli_jstr(p.out, "command", buf, sizeof(buf)), "unlock"));
    cr_assert(tcli_jint(p.out, "released_on") >= 3);
    tcli_assert_votes(p.out, tc_n());
    tcli_free(&p);
}

Test(json, json_fields_of_run)
{
    struct tcli_proc p;
    char res[128], buf[128];

    tc_resource(res, sizeof(res), NULL);
    cr_assert(eq(int, tcli_run(&p, "run", res, "--json", "--", "true"), 0), "%s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(str, tcli_jstr(p.out, "command", buf, sizeof(buf)), "run"));
    cr_assert(tcli_jbool(p.out, "released"));
    cr_assert(tcli_yes(!tcli_jbool(p.out, "lock_lost")));
    tcli_jint(p.out, "extends");
    cr_assert(eq(int, tcli_jint(p.out, "stops"), 0));
    cr_assert(eq(int, tcli_jint(tcli_jreq(p.out, "child"), "exit_status"), 0));
    cr_assert(tcli_jnull(tcli_jreq(p.out, "child"), "signal"));
    tcli_free(&p);
}

Test(json, json_escapes_any_resource_bytes)
{
    struct tcli_proc p;
    char res[160];
    const char *hex;

    /* Quote, backslash, control byte, newline, a byte that is not UTF-8,
     * and valid UTF-8 (é). */
    snprintf(res, sizeof(res), "%s \"q\" \\ \x01\n \xff \xc3\xa9",
             tc_resource((char[128]){ 0 }, 128, NULL));
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--json"), 0), "%s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(strstr(p.out, "\\\"q\\\" \\\\ \\u0001\\n \\u00ff \xc3\xa9") != NULL, "%s", p.out);
    hex = tcli_jreq(p.out, "resource_hex");
    cr_assert(tcli_yes(*hex == '"'));
    cr_assert(strncmp(hex + 1 + 2 * (strlen(res) - 4), "ff20c3a9\"", 9) == 0, "%s", hex);
    tcli_free(&p);
    cr_assert(eq(int, tcli_run(&p, "status", res, "--json"), 0));
    tcli_assert_one_json_object(p.out);
    cr_assert(tcli_jbool(p.out, "held"));
    tcli_free(&p);
}

Test(json, a_key_of_another_type_is_a_setup_error_78)
{
    struct tcli_proc p;
    char res[128], buf[64];

    tc_resource(res, sizeof(res), NULL);
    /* Another program keeps a list under the key on every master: no
     * waiting will help, someone must choose another name or a prefix. */
    for (int i = 0; i < tc_n(); i++)
        freeReplyObject(tc_cmd(i, "RPUSH %s x", res));
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--json"), 78), "stderr: %s", p.err);
    tcli_assert_one_json_object(p.out);
    cr_assert(eq(int, tcli_jint(p.out, "exit"), 78));
    cr_assert(eq(str, tcli_jstr(tcli_jreq(p.out, "error"), "code", buf, sizeof(buf)),
                 "EWRONGTYPE"));
    cr_assert(strstr(p.err, "wrong type") != NULL || strstr(p.err, "WRONGTYPE") != NULL,
              "stderr: %s", p.err);
    tcli_free(&p);
    /* With --wait, too. (The library tells a key of another type from a
     * holder only at the wait's last attempt, so this one waits it out.) */
    cr_assert(eq(int, tcli_run(&p, "lock", res, "--wait", "300ms"), 78), "stderr: %s", p.err);
    tcli_free(&p);
}
