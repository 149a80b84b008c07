/* aoffile.c - a master's append-only file, read and cut (see aoffile.h). */
#include "aoffile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"

const char *tc_aof_incr_path(int m, char *buf, size_t size)
{
    char manifest[700], line[512], last[256] = "";
    const char *dir = tc_master_dir(m);

    snprintf(manifest, sizeof(manifest), "%s/appendonlydir/appendonly.aof.manifest", dir);
    FILE *f = fopen(manifest, "r");
    if (!f)
        tc_fail("master %d has no AOF manifest at %s", m, manifest);
    /* "file appendonly.aof.3.incr.aof seq 3 type i": the last such line
     * is the file that takes the writes. */
    while (fgets(line, sizeof(line), f)) {
        char name[256];

        if (sscanf(line, "file %255s", name) == 1 && strstr(line, " type i"))
            snprintf(last, sizeof(last), "%s", name);
    }
    fclose(f);
    if (!last[0])
        tc_fail("master %d's AOF manifest names no incremental file", m);
    snprintf(buf, size, "%s/appendonlydir/%s", dir, last);
    return buf;
}

long long tc_aof_incr_size(int m)
{
    char path[1024];
    struct stat st;

    if (stat(tc_aof_incr_path(m, path, sizeof(path)), &st) != 0)
        tc_fail("cannot stat %s", path);
    return (long long)st.st_size;
}

void tc_aof_cut(int m, long long size)
{
    char path[1024];

    if (truncate(tc_aof_incr_path(m, path, sizeof(path)), (off_t)size) != 0)
        tc_fail("cannot cut %s to %lld bytes", path, size);
}

void tc_aof_cut_at(int m, const char *needle)
{
    char path[1024];
    FILE *f = fopen(tc_aof_incr_path(m, path, sizeof(path)), "rb");
    long long size;
    char *buf, *hit, *cmd;

    if (!f)
        tc_fail("cannot read %s", path);
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)size + 1);
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size)
        tc_fail("cannot read %s", path);
    fclose(f);
    hit = memmem(buf, (size_t)size, needle, strlen(needle));
    if (!hit) {
        free(buf);
        tc_fail("\"%s\" is not in master %d's AOF", needle, m);
    }
    /* Back to the command's "*<argc>" at the start of a line. */
    for (cmd = hit; cmd > buf && !(cmd[0] == '*' && cmd[-1] == '\n'); cmd--)
        ;
    size = cmd - buf;
    free(buf);
    tc_aof_cut(m, size);
}
