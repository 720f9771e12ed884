/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connecting to what a parsed URL (url.h) names (connect.c): its Unix
 * socket, or its host and port in TCP, or in TLS.  Above both transport
 * files (transport.c, tls.c), which know nothing of URLs.  Internal to
 * the library (rlk__ prefix, not installed).
 */
#ifndef RESPLOCK_CONNECT_H
#define RESPLOCK_CONNECT_H

#include <stdint.h>

#include "resplock.h"
#include "transport.h"
#include "url.h"

/* Starts the connect, in steps (see "Connecting in steps" in
 * transport.h), with tls for a TLS URL (NULL: the system's CAs).
 * Statuses as the transport's _start functions. */
int rlk__connect_url_start(rlk__transport *t, const rlk__url *u, const rlk_tls_config *tls,
                           int64_t deadline);

/* The same, waiting until it is done. */
int rlk__connect_url(rlk__transport *t, const rlk__url *u, const rlk_tls_config *tls,
                     int64_t deadline);

#endif
