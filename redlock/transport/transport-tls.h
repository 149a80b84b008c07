/* transport-tls.h - a client's TLS settings (transport-tls.c). Part of the
 * transport's face (transport.h includes it); a header of its own for the
 * same reason as transport-reply.h.
 */
#ifndef REDLOCK_TRANSPORT_TLS_H
#define REDLOCK_TRANSPORT_TLS_H

#include "transport/transport-types.h"

/* TLS settings from the config (CA, client certificate, verification).
 * *ret stays NULL when no master uses TLS. 0, or REDLOCK_EINVAL naming the
 * file that does not load. */
int rl_tls_new(const redlock_config *cfg, const rl_addr *addrs, uint32_t n, rl_tls **ret,
               redlock_error *e);
void rl_tls_free(rl_tls *t);

#endif
