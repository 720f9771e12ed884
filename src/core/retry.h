/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one reconnect pacing of the library (retry.c): the blocking
 * connection (conn.c) and the driver (driver.c) space their
 * connect tries by it.  Internal (rlk__ prefix, not installed).
 */
#ifndef RESPLOCK_RETRY_H
#define RESPLOCK_RETRY_H

#include <stdint.h>

typedef struct rlk__backoff {
    int64_t initial, max; /* ms: the first pause, and the most it grows to */
    int64_t pause;        /* the next pause before jitter */
    uint64_t rng;         /* jitter only, not security */
} rlk__backoff;

/* initial <= 0: 50 ms; max <= 0: 2000 ms (defaults.h).  seed: any value
 * (0 allowed). */
void rlk__backoff_init(rlk__backoff *b, int initial, int max, uint64_t seed);

/* The pause before the next try: half the current pause fixed, half
 * random, which spreads out clients that lost the same server at the
 * same moment; then the pause doubles, up to max. */
int64_t rlk__backoff_next(rlk__backoff *b);

/* Back to the first pause (after a try that worked). */
void rlk__backoff_reset(rlk__backoff *b);

#endif
