/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The route (route.c): which servers a key lives on, and their drivers
 * (driver.h) turned together in one poll, so that one thread serves
 * every connection of a client without one waiting for another.
 * Internal (rlk__ prefix, not installed).
 *
 * Kinds: ONE, every key on one server (today's client); SET, every key
 * on each of several independent servers (the ground of Redlock, whose
 * quorum is counted over them).  Sentinel (a server found by asking
 * sentinels) and Cluster (a key's slot picks its shard) are to come as
 * kinds of their own.
 */
#ifndef RESPLOCK_ROUTE_H
#define RESPLOCK_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "driver.h"

enum { RLK__ROUTE_ONE = 1, RLK__ROUTE_SET };

typedef struct rlk__route {
    int kind;
    size_t n;
    rlk__driver *drivers;  /* n of them, in the order given */
    char err[600];
} rlk__route;

/* n servers (ONE: n must be 1), each from its rlk_conn_config, every
 * session with sc's callback and context (the callback tells them apart
 * by their rlk_session).  RLK_OK; RLK_ERR_INVALID; RLK_ERR_NOMEM;
 * RLK_ERR_URL (which server, and why, in r->err).  rlk__route_destroy
 * in every case. */
int rlk__route_init(rlk__route *r, int kind, size_t n, const rlk_conn_config *conns,
                    const rlk_session_config *sc);
void rlk__route_destroy(rlk__route *r);

/* The drivers of the servers that hold key, into out (at most max): their
 * count.  ONE: the only one; SET: all of them. */
size_t rlk__route_servers(rlk__route *r, const char *key, rlk__driver **out, size_t max);

/* One turn of every driver, in one poll, blocking until something
 * happened, a session's deadline, or until (-1: none).  RLK_OK, or the
 * first failure a driver met in this turn (its reason in r->err; each
 * driver goes on, reconnecting when allowed). */
int rlk__route_step(rlk__route *r, int64_t until);

/* Turns until done(ctx) (RLK_OK) or until passes (RLK_ERR_TIMEOUT), or
 * until no driver can go on (each failed in a way no retry mends, or is
 * closed with reconnecting off: the first one's status). */
int rlk__route_run(rlk__route *r, int (*done)(void *ctx), void *ctx, int64_t until);

#endif
