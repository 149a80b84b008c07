/* watchdog.h - automatic extension of held locks. */
#ifndef REDLOCK_WATCHDOG_H
#define REDLOCK_WATCHDOG_H

#include "core/types.h"

/* On the loop's thread: stop @lock's watchdog, if any (release does). */
void rl_watchdog_stop(redlock_client *c, redlock_lock *lock);
/* Client free: every watchdog reports ESHUTDOWN. */
void rl_watchdog_stop_all(redlock_client *c);

#endif
