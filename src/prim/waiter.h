/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The waiter's rules (waiter.c), shared by every front end that waits
 * for a lock (the blocking client, the sans-I/O session): how often a
 * waiter looks again, how long its place in line and a handoff's claim
 * last, and how it reads a handoff.  See src/lua/acquire.lua and
 * src/lua/release.lua for the line itself.
 */
#ifndef RESPLOCK_WAITER_H
#define RESPLOCK_WAITER_H

#include <stdint.h>

#include "resplock.h"

#define RLK__DEFAULT_RECHECK_MS 1000

typedef struct rlk__wait_plan {
    /* A waiter renews its place in line, and looks again for holders
     * that do not publish on release, at least every slice. */
    int64_t slice;
    /* Its place lapses after a lease of two slices and a little, so that
     * a waiter that died stops being handed the lock soon. */
    int64_t lease;
    /* A handoff gives it the lock for the claim (a slice and a second,
     * at most the TTL) until it confirms: a waiter paused meanwhile holds
     * the lock up that long at most. */
    int64_t claim;
} rlk__wait_plan;

/* The plan for a lock of ttl ms, for a client whose recheck_ms is
 * recheck (0: the default). */
void rlk__wait_plan_for(rlk__wait_plan *p, int64_t recheck, int64_t ttl);

/* The handoff channel's message msg ("message", channel, "FENCE TOKEN")
 * hands the lock holding token over: 1 and *fence; else 0 (a message
 * for an earlier wait names another token: that lock expires). */
int rlk__handoff_parse(const rlk_resp_value *msg, const char *channel, const char *token,
                       uint64_t *fence);

#endif
