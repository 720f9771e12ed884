/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The route (route.c): between the primitives and the connections.  It
 * knows which server a key lives on and holds those servers' drivers
 * (driver.h), each under its request core (core.h), turned together in
 * one poll, so that one thread serves every connection of a client
 * without one waiting for another.  A primitive asks the route for the
 * core of a key's slot and submits there; the client reaches the
 * drivers through the route alone.  It knows nothing of what the
 * commands mean.  Internal (rlk__ prefix, not installed).
 *
 * Kinds: ONE, every key on one server; SET, every key on each of several
 * independent servers (the ground of Redlock, whose quorum is counted
 * over them).  Sentinel (a server found by asking sentinels) and
 * Cluster (a key's slot picks its shard) are to come as kinds of their
 * own.
 */
#ifndef RESPLOCK_ROUTE_H
#define RESPLOCK_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "driver.h"

enum { RLK__ROUTE_ONE = 1, RLK__ROUTE_SET };

typedef struct rlk__route {
    int kind;
    size_t n;
    rlk__driver *drivers;  /* n of them, in the order given */
    char err[600];
} rlk__route;

/* n servers (ONE: n must be 1), each from its rlk_conn_config, every
 * core with cc's library and input bound (NULL: none).  RLK_OK;
 * RLK_ERR_INVALID; RLK_ERR_NOMEM; RLK_ERR_URL (which server, and why, in
 * r->err; the route is made all the same, and its turns fail so).
 * rlk__route_destroy in every case. */
int rlk__route_init(rlk__route *r, int kind, size_t n, const rlk_conn_config *conns,
                    const rlk__core_config *cc);
void rlk__route_destroy(rlk__route *r);

/* The cores of the servers that hold keys of slot, into out (at most
 * max): their count.  ONE: the only one; SET: all of them, in order. */
size_t rlk__route_cores(rlk__route *r, unsigned slot, rlk__core **out, size_t max);
/* The i-th server's core (i < r->n). */
rlk__core *rlk__route_core(rlk__route *r, size_t i);

/* One turn of every driver, in one poll, blocking until something
 * happened, a core's deadline, or until (-1: none).  RLK_OK, or the
 * first failure a driver met in this turn (its reason in r->err; each
 * driver goes on, reconnecting when allowed). */
int rlk__route_step(rlk__route *r, int64_t until);

/* Turns until done(ctx) (RLK_OK) or until passes (RLK_ERR_TIMEOUT), or
 * until no driver can go on (each failed in a way no retry mends, or is
 * closed with reconnecting off: the first one's status). */
int rlk__route_run(rlk__route *r, int (*done)(void *ctx), void *ctx, int64_t until);

/* A turn in two halves for a caller that polls fds of its own too: the
 * route's entries in p[0..r->n) (fd -1: nothing to watch), *wake the
 * time the poll must end by; the first failure, as rlk__route_step's.
 * after reads p[0..r->n)'s events. */
struct pollfd;
int rlk__route_prepare(rlk__route *r, struct pollfd *p, int64_t until, int64_t *wake);
int rlk__route_after(rlk__route *r, const struct pollfd *p);

/* The turn of a caller with nothing else to watch, over a route of one
 * server: its driver's (rlk__driver_turn_alone); over more, a step. */
int rlk__route_turn_alone(rlk__route *r, int64_t until);

/* 0 when no driver can do anything any more. */
int rlk__route_can_go_on(const rlk__route *r);

/* What a blocking caller asks of server i's connection. */
typedef struct rlk__route_health {
    int up;                /* connected */
    int connecting;        /* a connect try under way */
    int fails;             /* connect tries failed in a row */
    int last;              /* the status of the last failure (0: none) */
    int fatal;             /* a failure no retry mends */
    uint64_t connects;     /* connections made so far */
    int64_t retry_at;      /* no connect try before (monotonic ms) */
    const char *err;       /* the last failure's reason ("": none) */
} rlk__route_health;
void rlk__route_health_of(const rlk__route *r, size_t i, rlk__route_health *h);

/* Server i's socket (-1: not connected), its connection's facts (peer,
 * TLS) into info's fields of them, and its connection closed (the next
 * turn reconnects when allowed). */
int rlk__route_fd(const rlk__route *r, size_t i);
void rlk__route_peer(const rlk__route *r, size_t i, rlk_conn_info *info);
void rlk__route_close(rlk__route *r, size_t i);
/* Turns server i's driver until no connect try is under way
 * (rlk__driver_connect_through). */
int rlk__route_connect_through(rlk__route *r, size_t i);

#endif
