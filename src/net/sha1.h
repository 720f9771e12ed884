/* SPDX-License-Identifier: BSD-3-Clause */
/* SHA1 of script bodies (sha1.c).  Internal to the library (rlk__ prefix,
 * not installed). */
#ifndef RESPLOCK_SHA1_H
#define RESPLOCK_SHA1_H

#include <stddef.h>

/* SHA1 of data (OpenSSL's when built with it, else a small internal one),
 * as 40 lowercase hex digits and a NUL.  Cannot fail: should OpenSSL's
 * digest fail (no memory, SHA1 disabled by a provider), the internal one
 * answers. */
void rlk__sha1_hex(const void *data, size_t len, char out[41]);

/* The internal implementation, always compiled, so that tests cover it
 * in builds with OpenSSL too. */
void rlk__sha1_internal_hex(const void *data, size_t len, char out[41]);

#endif
