/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver (driver.c): one server's connection under one request core
 * (core.h), the I/O half of it.
 *
 * It connects (TCP, Unix socket or TLS, from the same URL and settings
 * as rlk_conn), writes what the core asks to send, feeds it what
 * arrives, ticks it at its reply deadlines, and after a connection fails
 * or closes connects again, paced by the one backoff of retry.h.  It
 * knows no primitive: whoever owns the primitives over the core (the
 * client, through the route) passes their deadlines in the turn's until
 * and ticks them after.  Internal (rlk__ prefix, not installed).
 *
 * Connecting: in steps, as states of the driver's turns (the TCP
 * connect, then the TLS handshake; transport.h), so that a server slow
 * to answer, or answering nothing, holds up no other driver polled in
 * the same loop.  A try is bounded by connect_timeout_ms alone, not by
 * the bound of the turn that started it: it goes on over the turns that
 * follow, each poll waiting for its events too; the core's handshake
 * starts once the transport is connected.  Name resolution is the one
 * part that may block (transport.h).  rlk__driver_run, the blocking
 * wait, ends a try still under way when its own bound passes, as a
 * failed try (with its "timed out after" message).
 *
 * Reconnecting: a driver connects again when its connection goes (its
 * core's owner may hold what must be renewed), by the one rule of
 * retry.h that rlk_conn follows too: the first try at once after a
 * connection that served, later ones after growing, jittered pauses
 * (backoff_initial_ms doubling up to backoff_max_ms).
 * reconnect_attempts -1: only the first connect is made by itself; after
 * a loss every step fails with RLK_ERR_CLOSED until
 * rlk__driver_reconnect.  A failure that another try cannot mend
 * (rlk__retry_mends: a bad URL, a refused password, a certificate
 * refused or TLS files that do not load) is returned at once and not
 * tried again by itself; any other (a connection refused or reset, a
 * handshake the server refused for now: "max number of clients
 * reached", LOADING) is tried again.
 */
#ifndef RESPLOCK_DRIVER_H
#define RESPLOCK_DRIVER_H

#include <stdint.h>

#include "clock.h"
#include "resplock.h"
#include "retry.h"
#include "transport.h"
#include "url.h"

typedef struct rlk__driver {
    rlk_conn_config cfg;   /* url and TLS strings point into strings */
    char *strings;
    rlk__url url;
    int url_status;
    rlk__transport t;
    struct rlk__core *core;
    int up;                /* connected, and the core told so */
    int fatal;             /* a failure no retry mends (returned again,
                              until rlk__driver_reconnect) */
    uint64_t connects;     /* connections made so far */
    int fails;             /* connect tries failed in a row */
    int silent;            /* a request or connect timed out, and no
                              handshake has been answered since: the node
                              may be frozen behind a connection that is up */
    int last;              /* the status of the last failure (0: none) */
    int allow_once;        /* rlk__driver_reconnect: connect though off */
    /* No connect try while held: the address is being asked for
     * (rlk__driver_set_addr ends it); ask_each: held again after every
     * connection lost and every failed try (a server found by asking
     * sentinels is asked for before each connect). */
    int held, ask_each;
    rlk__backoff backoff;  /* and its at: no connect try before */
    char err[512];
} rlk__driver;

/* Sets up d for conn (NULL: the defaults; url as rlk_conn_config's, the
 * user, password and db come from it) and a new core with cc's library,
 * hooks and input bound (cc NULL: none; its connection fields are
 * conn's).  Nothing is connected yet.  RLK_OK; RLK_ERR_NOMEM;
 * RLK_ERR_URL (the reason in d->err).  rlk__driver_destroy in every
 * case. */
struct rlk__core_config;
int rlk__driver_init(rlk__driver *d, const rlk_conn_config *conn,
                     const struct rlk__core_config *cc);
/* The same for another node of conn's server (a Redis Cluster's): the
 * URL's scheme, credentials and TLS settings, at host:port instead. */
int rlk__driver_init_at(rlk__driver *d, const rlk_conn_config *conn,
                        const struct rlk__core_config *cc, const char *host, int port);
void rlk__driver_destroy(rlk__driver *d);
/* The server's address from now on (the next connect's), and the hold
 * ended.  RLK_OK; RLK_ERR_URL (a Unix socket's URL, or no address: the
 * driver fails so from then on); RLK_ERR_NOMEM. */
int rlk__driver_set_addr(rlk__driver *d, const char *host, int port);

/* One turn, blocking until something happened or until (monotonic ms;
 * -1: no bound besides the core's own deadlines): connect when due,
 * send, wait for bytes, feed them, tick.  RLK_OK; or the failure of this
 * turn (a connect try, the connection closing, the core failing: the
 * reason in d->err), after which the next turn reconnects when allowed;
 * a failure no retry mends (RLK_ERR_URL, RLK_ERR_AUTH, such an
 * RLK_ERR_TLS) is returned by every turn from then on. */
int rlk__driver_step(rlk__driver *d, int64_t until);

/* A turn in two halves, for a loop that polls several drivers at once
 * (route.c).  Neither blocks (name resolution aside: see "Connecting"
 * above).  prepare starts a connect when one is due, sends, fills *pfd
 * (fd -1: nothing to watch yet; while connecting, the event the connect
 * waits for) and *wake, the time the poll must end by (-1: none).
 * After the poll, after advances a connect under way, or reads what
 * came; then it ticks and sends.  Statuses as rlk__driver_step's. */
struct pollfd;
int rlk__driver_prepare(rlk__driver *d, struct pollfd *pfd, int64_t until, int64_t *wake);
int rlk__driver_after(rlk__driver *d, const struct pollfd *pfd);

/* The turn of a caller with nothing else to watch (the blocking calls
 * of a client without its thread): as prepare, poll and after, but on a
 * plain socket with everything sent it waits in one recv (see
 * rlk__transport_recv_until).  A signal ends it early, as it ends
 * poll's.  Statuses as rlk__driver_after's, or prepare's when it cannot
 * go on. */
int rlk__driver_turn_alone(rlk__driver *d, int64_t until);

/* 0 when no turn can do anything any more: a failure no retry mends,
 * or closed with reconnecting off (until rlk__driver_reconnect). */
int rlk__driver_can_go_on(const rlk__driver *d);

/* Turns until done(ctx) is non-zero (RLK_OK), until passes
 * (RLK_ERR_TIMEOUT), or a failure no retry mends (that status).  done
 * is asked before the first turn. */
int rlk__driver_run(rlk__driver *d, int (*done)(void *ctx), void *ctx, int64_t until);

/* Connects again now (the backoff starts over), whatever
 * reconnect_attempts says, and waits for the handshake until the
 * connect timeout.  RLK_OK or the failure. */
int rlk__driver_reconnect(rlk__driver *d);

/* Closes the connection (the core learns it), or gives up a connect
 * try under way (not counted as a failed try); the next turn reconnects
 * when allowed. */
void rlk__driver_close(rlk__driver *d);

/* 1 while a connect try is under way (the TCP connect or the TLS
 * handshake; the core's handshake comes after). */
int rlk__driver_connecting(const rlk__driver *d);

/* Turns until no connect try is under way (connected, or failed), for a
 * caller that must not leave one half done (rlk_client_tick, whose
 * event loop polls only the connected fd).  RLK_OK or the try's
 * failure. */
int rlk__driver_connect_through(rlk__driver *d);

/* The socket, or -1 while not connected. */
int rlk__driver_fd(const rlk__driver *d);

#endif
