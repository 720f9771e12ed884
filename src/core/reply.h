/* SPDX-License-Identifier: BSD-3-Clause */
/* Readings of one reply, for every layer above the codec (reply.c), and
 * the numbers commands carry. */
#ifndef RESPLOCK_REPLY_H
#define RESPLOCK_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "resplock.h"

/* v is an error reply (simple or blob); NULL is not. */
int rlk__is_error(const rlk_resp_value *v);
/* The class of error reply v by its code: NOSCRIPT, MOVED, ASK, TRYAGAIN,
 * CLUSTERDOWN, CROSSSLOT, LOADING, BUSY, READONLY, OOM, NOPERM...
 * (RLK_EC_OTHER: another code; RLK_EC_NONE: not an error, or NULL).  The
 * public rlk_reply_error_class is this. */
rlk_error_class rlk__reply_class(const rlk_resp_value *v);
/* v's element i is an integer: *out, 0; else -1. */
int rlk__int_at(const rlk_resp_value *v, size_t i, int64_t *out);
/* v is the string s[0..n) (simple or bulk). */
int rlk__str_is(const rlk_resp_value *v, const char *s, size_t n);
/* v is [host, port] (SENTINEL GET-MASTER-ADDR-BY-NAME's answer): the
 * host into host (256 bytes: shorter than that, no NUL), the port (1 to
 * 65535, in digits) returned; else 0. */
int rlk__addr_reply(const rlk_resp_value *v, char *host);

/* Decimal digits of v into out (at least 11 bytes), NUL-terminated;
 * returns their count.  For hot paths where snprintf costs more than the
 * rest of a command's encoding. */
static inline size_t rlk__utoa(char *out, unsigned v)
{
    char tmp[12];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    out[n] = '\0';
    return n;
}

/* FNV-1a of p[0..n): a channel kept by its hash (a subscription's place
 * in the queue, its owner's note of which channel it was). */
static inline uint64_t rlk__fnv1a(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

#endif
