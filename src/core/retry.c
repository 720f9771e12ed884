/* SPDX-License-Identifier: BSD-3-Clause */
/* The one reconnect rule: pacing and which failures are retried (see
 * retry.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "retry.h"
#include "defaults.h"
#include "resplock.h"

void rlk__backoff_init(rlk__backoff *b, int initial, int max, uint64_t seed)
{
    b->initial = initial > 0 ? initial : RLK__DEFAULT_BACKOFF_MS;
    b->max = max > 0 ? max : RLK__DEFAULT_BACKOFF_MAX_MS;
    if (b->max < b->initial) b->max = b->initial;
    b->pause = b->initial;
    b->at = 0;
    /* xorshift64* must not start at 0. */
    b->rng = seed ? seed : 0x9E3779B97F4A7C15ULL;
}

static uint64_t next_rand(rlk__backoff *b)
{
    b->rng ^= b->rng >> 12;
    b->rng ^= b->rng << 25;
    b->rng ^= b->rng >> 27;
    return b->rng * 0x2545F4914F6CDD1DULL;
}

int64_t rlk__backoff_next(rlk__backoff *b)
{
    int64_t p = b->pause / 2 + (int64_t)(next_rand(b) % (uint64_t)(b->pause / 2 + 1));
    b->pause = b->pause * 2 > b->max ? b->max : b->pause * 2;
    return p;
}

void rlk__backoff_reset(rlk__backoff *b) { b->pause = b->initial; }

void rlk__backoff_served(rlk__backoff *b)
{
    b->pause = b->initial;
    b->at = 0;
}

void rlk__backoff_failed(rlk__backoff *b, int64_t now) { b->at = now + rlk__backoff_next(b); }

int rlk__retry_mends(int status, int tls_lasting)
{
    return status != RLK_ERR_URL && status != RLK_ERR_INVALID && status != RLK_ERR_AUTH &&
           !(status == RLK_ERR_TLS && tls_lasting);
}
