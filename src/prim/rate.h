/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rate limiter, the host's second primitive (rate.c): decisions of
 * the rate script (src/lua/rate.lua, GCRA on the server's clock), each a
 * request the host carries to its key's slot, and the wait form's
 * sleeps, which are this primitive's own times in the host's fan-out
 * (its deadline and tick): nothing is sent while one sleeps.  It joins
 * the host it is given and uses nothing else of the house below it.
 * Internal (rlk__ prefix, not installed).
 */
#ifndef RESPLOCK_RATE_H
#define RESPLOCK_RATE_H

#include <stddef.h>
#include <stdint.h>

#include "host.h"
#include "resplock.h"

typedef struct rlk__rates rlk__rates;

/* The key of limiter name: "resplock:rate:" name, into buf (cap bytes,
 * at least rlk__rate_key_cap(name)). */
#define RLK__RATE_PREFIX "resplock:rate:"
size_t rlk__rate_key_cap(const char *name);
void rlk__rate_key(const char *name, char *buf, size_t cap);

/* Whether o is a decision's (n 0: a status's, whose n is not read):
 * RLK_OK, or RLK_ERR_INVALID with the reason in err. */
int rlk__rate_check(const char *name, const rlk_rate_options *o, int status_only, char *err,
                    size_t errlen);

/* A decision's end: status as rlk_rate_take's, res the last decision,
 * msg the reason of a failure ("" on RLK_OK and RLK_RATE_LIMITED). */
typedef void (*rlk__rate_cb)(void *ctx, int status, const rlk_rate_result *res, const char *msg);

/* The limiter primitive, joined to h.  NULL when out of memory. */
rlk__rates *rlk__rates_new(rlk__host *h);
/* Parts the host; decisions under way end without their callbacks
 * (their replies, if any come, are dropped). */
void rlk__rates_free(rlk__rates *r);

/* Starts a decision of limiter name with o (checked: rlk__rate_check),
 * status_only: of 0 tokens and no wait.  Its requests are bounded by
 * reply_by (absolute monotonic ms; RLK__DL_DEFAULT: the command timeout
 * of each); a refusal whose wait would wake past wait_until (-1: no
 * bound; ignored without o->wait_ms) ends it at once.  cb is called
 * exactly once, never from this call.  RLK_OK, RLK_ERR_INVALID,
 * RLK_ERR_NOMEM, or the host's submit failure. */
int rlk__rate_take(rlk__rates *r, const char *name, const rlk_rate_options *o, int status_only,
                   int64_t reply_by, int64_t wait_until, rlk__rate_cb cb, void *ctx, int64_t now);

/* Decisions under way (sleeping or sent). */
size_t rlk__rates_pending(const rlk__rates *r);

#endif
