/* log.c - the client's log hook.
 *
 * Library code does not write to stdout or stderr: everything goes through
 * the optional hook in redlock_config, formatted only when the level passes
 * (the rl_log() macro checks first).
 */
#include "base/common.h"

#include <stdio.h>

void rl_log_emit(const redlock_config *cfg, int level, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cfg->log_fn(level, msg, cfg->log_arg);
}
