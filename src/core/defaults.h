/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The defaults that several layers apply to a configuration's 0 (the
 * header documents them as "0: 5000" and so on), defined once here so
 * that the layers cannot drift apart: rlk_conn (conn.c), the driver
 * (driver.c), the floors above it (src/client/), the resplock command (src/cli/) and the reconnect pacing (retry.c).
 * Internal (rlk__ prefix, not installed); constants only.
 */
#ifndef RESPLOCK_DEFAULTS_H
#define RESPLOCK_DEFAULTS_H

/* A connect (TCP, TLS, handshake), and one command's or reply's wait. */
#define RLK__DEFAULT_TIMEOUT_MS 5000

/* The reconnect pacing's first pause, and the most it grows to. */
#define RLK__DEFAULT_BACKOFF_MS 50
#define RLK__DEFAULT_BACKOFF_MAX_MS 2000

#endif
