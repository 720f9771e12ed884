/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The route (route.c): between the primitives and the connections.  It
 * knows which server a key lives on and holds those servers' drivers
 * (driver.h), each under its request core (core.h), turned together in
 * one poll, so that one thread serves every connection of a client
 * without one waiting for another.  A primitive is handed, by the
 * client, the route's core for a key's slot and its redirect reading,
 * submits there and follows the redirects itself; the client reaches
 * the drivers through the route alone.  It knows nothing of what the
 * commands mean.  Internal (rlk__ prefix, not installed).
 *
 * Kinds (struct rlk__route_kind, a const table of a kind's topology:
 * which core serves a slot, a redirect followed, the kind's upkeep
 * before a turn and when it is due, which members hold data, and which
 * member is the primary): "one", every key on one server (the
 * client's), until that server turns out to be a Redis Cluster node
 * (below), when the route switches to the kind "cluster"; "set", every
 * key on each of several independent servers (the ground of Redlock,
 * whose quorum is counted over them; nothing makes one yet);
 * "sentinel" (sentinel.c), a primary found by asking Redis Sentinels.
 * The owner names members by role (rlk__route_primary), never by index:
 * a kind decides what stands at which place.
 *
 * Redis Cluster, found by itself: the seed's HELLO says mode "cluster",
 * or a command of a primitive is answered MOVED (a server without
 * HELLO).  The route then reads CLUSTER SHARDS (CLUSTER SLOTS where
 * SHARDS is unknown) into a slot table (slots.h) over a connection that
 * is up, and gives each slot the core of its primary, whose driver it
 * opens when first asked for (with the seed's URL scheme, credentials
 * and TLS settings, at the node's address; the seed's own connection
 * when it is that node), telling its owner (hooks.added).  A redirect
 * a primitive met (rlk__route_redirect) patches the table (MOVED) or
 * names a node for once (ASK); the table is read again soon after a
 * MOVED, while a primary's connection is down (a failover names a new
 * one), and every 60 s; each new table is told (hooks.changed), so that
 * what waits for a slot's connection looks again.
 */
#ifndef RESPLOCK_ROUTE_H
#define RESPLOCK_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "driver.h"
#include "host.h"
#include "slots.h"

enum { RLK__ROUTE_ONE = 1, RLK__ROUTE_SET };

/* The most connections of a route (a poll's entries, with the client's
 * own two). */
#define RLK__ROUTE_MAX 62

/* What the route tells its owner (the client).  Called from within a
 * turn (prepare or after), or from within rlk__route_core_for and
 * rlk__route_redirect. */
typedef struct rlk__route_hooks {
    /* A new connection's core (a cluster node): its owner takes its
     * hooks.  RLK_OK, or a failure (the node is then not used). */
    int (*added)(void *ctx, rlk__core *core);
    /* The slot table changed. */
    void (*changed)(void *ctx);
    /* The servers given are not one cluster (the reason in r->err):
     * every connection is closed and stays so, and what waits for one
     * must fail now, not at its deadline.  Not called from within
     * rlk__route_core_for. */
    void (*refused)(void *ctx);
    void *ctx;
} rlk__route_hooks;

typedef struct rlk__route rlk__route;

/* A kind's topology: what differs between kinds, behind one table. */
typedef struct rlk__route_kind {
    const char *name;
    /* The cores of the servers that hold keys of slot, into out (at
     * most max): their count (rlk__route_cores). */
    size_t (*cores)(rlk__route *r, unsigned slot, rlk__core **out, size_t max);
    /* The core that serves slot now (rlk__route_core_for). */
    rlk__core *(*core_for)(rlk__route *r, unsigned slot);
    /* A MOVED or ASK followed (rlk__route_redirect). */
    rlk__core *(*redirect)(rlk__route *r, rlk__core *from, const rlk_resp_value *v, int *ask);
    /* Before a turn, at now: the kind's own work (a table read); the
     * time the turn must wake for it, or -1. */
    int64_t (*upkeep)(rlk__route *r, int64_t now);
    /* The soonest time upkeep has work, -1: none. */
    int64_t (*due)(const rlk__route *r);
    /* Whether member i holds data (its core is a server's that keys
     * live on, attached to the owner's host). */
    int (*is_data)(const rlk__route *r, size_t i);
    /* The member a one-server owner talks to: its connection's health,
     * socket and facts are the client's. */
    size_t (*primary)(const rlk__route *r);
    /* A kind of its own file, made by rlk__route_init_kind: its members
     * from conn (the route's drivers array made, the rest zero).  NULL
     * for the kinds of rlk__route_init. */
    int (*init)(rlk__route *r, const rlk_conn_config *conn);
    /* READONLY is followed (host.h's readonly_follows). */
    int readonly_follows;
} rlk__route_kind;

/* One server (a cluster's seeds until the cluster is found); a Redis
 * Cluster (found by a route of one); several independent servers. */
extern const rlk__route_kind rlk__route_kind_one, rlk__route_kind_cluster, rlk__route_kind_set;

struct rlk__route {
    const rlk__route_kind *ops; /* the kind now (one becomes cluster) */
    size_t n;                 /* drivers, n <= RLK__ROUTE_MAX */
    size_t seeds;             /* ONE: the first of them are the servers
                                 given (several: a cluster's seeds) */
    size_t polled;            /* of them in the last prepare's entries */
    rlk__driver **drivers;    /* n of them: the servers given, in order,
                                 then a cluster's nodes as opened */
    /* A cluster node's connection closed and not opened again: the node
     * serves no slot in the last table (a primary that failed over, a
     * node named by an ASK).  Opened again when asked for. */
    unsigned char parked[RLK__ROUTE_MAX];
    int refused;              /* seeds that are not one cluster: no more */
    int seeds_checked;        /* the seeds found in a table: not again */
    int have_table;           /* slots read at least once */
    int refreshing;           /* a CLUSTER SHARDS or SLOTS under way */
    int use_slots;            /* SHARDS unknown here: SLOTS */
    int64_t refresh_at;       /* the next read of the table (-1: none due) */
    int64_t refresh_min;      /* no read before (a pause between reads) */
    uint64_t tables;          /* tables read so far */
    size_t probe;             /* the next node opened to read the table
                                 from when no connection is up */
    int64_t probe_at;         /* ... no sooner than */
    rlk__slots *slots;        /* a cluster's (32 KiB: made when found) */
    rlk__core_config cc;      /* for the nodes' cores */
    rlk_conn_config conn;     /* the seed's; its strings are drivers[0]'s */
    rlk__route_hooks hooks;
    /* The owner's side connection (rlk__route_side_open), or NULL, and
     * how many were opened: the one a prepare saw (side_seen) is the
     * one its after turns. */
    rlk__driver *side;
    unsigned side_gen, side_seen;
    /* SENTINEL (sentinel.c): member 0 holds data, at the address the
     * sentinels (members 1 to n-1) name before each of its connects. */
    struct {
        char *master;         /* the primary's name, as they know it */
        size_t next;          /* the sentinel asked next */
        size_t asked;         /* sentinels asked in this round in vain */
        int asking;           /* a question under way */
        int named;            /* an answer taken, its connect not judged */
        int leave;            /* READONLY heard: member 0's connection goes */
        int64_t round_at;     /* the next question no sooner than */
    } sn;
    char err[600];
};

/* For the kinds' files: a new member (its driver for conn, at host:port
 * when host is given; *status RLK_OK or its failure, the reason in
 * r->err; NULL out of memory), and the table entries kinds share: the
 * slot's one core (core_for's), the first member's core, no redirect,
 * the first member as the primary. */
rlk__driver *rlk__route_new_driver(rlk__route *r, const rlk_conn_config *conn, const char *host,
                                   int port, int *status);
size_t rlk__route_cores_of_slot(rlk__route *r, unsigned slot, rlk__core **out, size_t max);
rlk__core *rlk__route_first_core(rlk__route *r, unsigned slot);
rlk__core *rlk__route_no_redirect(rlk__route *r, rlk__core *from, const rlk_resp_value *v,
                                  int *ask);
size_t rlk__route_first_given(const rlk__route *r);
/* A route of a kind of its own file (its init makes the members from
 * conn, a URL of its own form), every core with cc's library and input
 * bound.  Statuses as rlk__route_init's; rlk__route_destroy in every
 * case. */
int rlk__route_init_kind(rlk__route *r, const rlk__route_kind *kind, const rlk_conn_config *conn,
                         const rlk__core_config *cc);

/* n servers (ONE: one, or several seeds of one Redis Cluster, which
 * must then all be nodes of it), each from its rlk_conn_config, every
 * core with cc's library and input bound (NULL: none).  RLK_OK;
 * RLK_ERR_INVALID; RLK_ERR_NOMEM; RLK_ERR_URL (which server, and why, in
 * r->err; the route is made all the same, and its turns fail so).
 * rlk__route_destroy in every case. */
int rlk__route_init(rlk__route *r, int kind, size_t n, const rlk_conn_config *conns,
                    const rlk__core_config *cc);
void rlk__route_destroy(rlk__route *r);
void rlk__route_set_hooks(rlk__route *r, const rlk__route_hooks *hooks);

/* The cores of the servers that hold keys of slot, into out (at most
 * max): their count.  ONE: the only one (on a cluster, the slot's
 * primary's, none while the table is not read); SET: all of them, in
 * order. */
size_t rlk__route_cores(rlk__route *r, unsigned slot, rlk__core **out, size_t max);
/* The core that serves slot now (NULL: none known yet), opening its
 * connection when first asked for.  Seeds found not to be one cluster
 * are refused at the next turn, not here (the caller is within its own
 * walk of what it sends). */
rlk__core *rlk__route_core_for(rlk__route *r, unsigned slot);
/* The i-th server's core (i < r->n). */
rlk__core *rlk__route_core(rlk__route *r, size_t i);

/* v, a reply of from, is MOVED or ASK (else NULL, nothing done): the
 * core to send the request to (NULL: not known, or not opened; the
 * request waits for rlk__route_core_for of its slot then), *ask set for
 * ASK (send ASKING first, this once).  A MOVED patches the table. */
rlk__core *rlk__route_redirect(rlk__route *r, rlk__core *from, const rlk_resp_value *v, int *ask);

/* The host's topology (host.h), topo, from the route's kind: a slot's
 * core and a redirect, each asked of the kind the route is of when
 * called (one that becomes a cluster answers as a cluster). */
void rlk__route_topo(rlk__route *r, rlk__host_topo *topo);

/* The primary member's index (the kind's primary: one server's only
 * member, or the first server given; a cluster's first seed, whose
 * connection is the one an event loop polls), and whether member i holds
 * data.  The calls below that name a member take its index from these. */
size_t rlk__route_primary(const rlk__route *r);
int rlk__route_is_data(const rlk__route *r, size_t i);

/* The handshake of one of the servers given is done (ONE: a seed's). */
int rlk__route_seed_ready(const rlk__route *r);
/* Whether the route found a Redis Cluster. */
int rlk__route_is_cluster(const rlk__route *r);

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
 * route's entries in p[0..r->polled) (fd -1: nothing to watch; at most
 * RLK__ROUTE_MAX), *wake the time the poll must end by; the first
 * failure, as rlk__route_step's.  after reads p[0..r->polled)'s events
 * (connections opened in between are in the next prepare). */
struct pollfd;
int rlk__route_prepare(rlk__route *r, struct pollfd *p, int64_t until, int64_t *wake);
int rlk__route_after(rlk__route *r, const struct pollfd *p);

/* The turn of a caller with nothing else to watch, over a route of one
 * server: its driver's (rlk__driver_turn_alone); over more, a step. */
int rlk__route_turn_alone(rlk__route *r, int64_t until);

/* The soonest time a turn is due for the cores' own deadlines and the
 * route's (a table to read), -1: none; connects and reconnects aside. */
int64_t rlk__route_due(const rlk__route *r);

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
    int parked;            /* a cluster node's, closed and left so */
    int held;              /* waiting for its address (from sentinels) */
} rlk__route_health;
void rlk__route_health_of(const rlk__route *r, size_t i, rlk__route_health *h);

/* A connection of the owner's own beside the route's servers, to the
 * server conn names, under a core of cc (its hooks the owner's): a RESP2
 * connection that subscribes can send no other command, so such an
 * owner listens on one of these.  It is no server of the route (no
 * slot, no health, not in rlk__route_prepare's entries nor in
 * can_go_on), but a driver like theirs, connecting in steps and again
 * after a loss, that the owner turns in the same poll by the two halves
 * below.  One at a time: opening closes the one before.  RLK_OK,
 * RLK_ERR_NOMEM or RLK_ERR_URL (the reason in r->err; none open then). */
int rlk__route_side_open(rlk__route *r, const rlk_conn_config *conn, const rlk__core_config *cc);
void rlk__route_side_close(rlk__route *r);
/* Its turn in two halves, as rlk__driver_prepare and _after (the fd -1
 * and RLK_OK with none open).  after turns nothing when the connection
 * open is not the one prepare saw (closed, or another opened, while the
 * owner polled without holding the route), nor when prepare was not
 * called since. */
int rlk__route_side_prepare(rlk__route *r, struct pollfd *pfd, int64_t until, int64_t *wake);
int rlk__route_side_after(rlk__route *r, const struct pollfd *pfd);
/* 0 when none is open, or no turn can do anything with it any more (a
 * failure no retry mends). */
int rlk__route_side_can_go_on(const rlk__route *r);

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
