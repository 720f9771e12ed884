/* SPDX-License-Identifier: BSD-3-Clause */
/* Connecting to what a URL names (see connect.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "connect.h"

int rlk__connect_url_start(rlk__transport *t, const rlk__url *u, const rlk_tls_config *tls,
                           int64_t deadline)
{
    switch (u->kind) {
    case RLK__URL_UNIX:
        return rlk__unix_connect_start(t, u->path, deadline);
    case RLK__URL_TLS:
        return rlk__tls_connect_start(t, u->host, u->port, tls, deadline);
    default:
        return rlk__tcp_connect_start(t, u->host, u->port, deadline);
    }
}

int rlk__connect_url(rlk__transport *t, const rlk__url *u, const rlk_tls_config *tls,
                     int64_t deadline)
{
    return rlk__connect_finish(t, rlk__connect_url_start(t, u, tls, deadline));
}
