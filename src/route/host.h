/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The primitive host (host.c): one per client (or over one core), between the
 * primitives and the route.  It owns every core's hooks and fans the
 * cores' events out to every primitive that joined, so that several
 * primitives share the connections without one of them owning them; and
 * it carries each primitive's requests to the core that serves their
 * slot, following a Redis Cluster's redirects on the way, so that the
 * primitive's reply callback sees only the final reply (as libvalkey's
 * cluster client wraps a user's callback).  It knows nothing of what the
 * commands mean.  Internal (rlk__ prefix, not installed).
 *
 * Which core serves a slot is the topology's answer (rlk__host_topo): a
 * route implements it; a test scripts it; a host without one is over
 * one core, where MOVED is an error reply like any.
 *
 * Time: the cores' clocks (rlk__core_now); one thread at a time.
 */
#ifndef RESPLOCK_HOST_H
#define RESPLOCK_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

typedef struct rlk__host rlk__host;

/* Which core serves a slot, as the route knows it. */
typedef struct rlk__host_topo {
    /* The core that serves slot now (NULL: none known yet: what is for
     * the slot is held until rlk__host_changed or a core's ready). */
    rlk__core *(*core_for)(void *ctx, unsigned slot);
    /* v, a reply of from, is MOVED or ASK: the core to send to (NULL:
     * not known yet: the slot's once core_for knows it), *ask set for
     * ASK (ASKING first, this once). */
    rlk__core *(*redirect)(void *ctx, rlk__core *from, const rlk_resp_value *v, int *ask);
    /* READONLY is followed too (a primary found by asking sentinels,
     * demoted under its clients): redirect hears it, and the request
     * goes again after a pause, as after TRYAGAIN, within its bound. */
    int readonly_follows;
    void *ctx;
} rlk__host_topo;

/* What a joined primitive hears: each may be NULL.  Core events name
 * their core; every primitive hears every core's. */
typedef struct rlk__host_ops {
    void (*connected)(void *ctx, rlk__core *c);
    void (*ready)(void *ctx, rlk__core *c);
    /* After every request of the core owed heard so (its reply NULL). */
    void (*closed)(void *ctx, rlk__core *c);
    /* Which core serves which slot changed (a cluster's new table). */
    void (*changed)(void *ctx);
    /* The cores will not come (status, msg): what waits for one must
     * fail now.  Held requests have been answered so already. */
    void (*refused)(void *ctx, int status, const char *msg);
    /* A push no subscription of the host took (a message, an
     * unsubscribe the server sent by itself). */
    void (*push)(void *ctx, rlk__core *c, const rlk_resp_value *v);
    /* The primitive's own times, as rlk__core_hooks' (its next, -1:
     * none; what is due then, a failure returned is the tick's). */
    int64_t (*deadline)(void *ctx);
    int (*tick)(void *ctx, int64_t now);
    /* Around every call of a core that may call back, and around the
     * host's own (changed, refuse): the primitive's callbacks run between
     * them, so that it may free at leave what finished meanwhile.  leave
     * gets the call's status and returns it. */
    void (*enter)(void *ctx, int64_t now);
    int (*leave)(void *ctx, int status);
} rlk__host_ops;

/* A host over topo's cores (attached one by one), or with topo NULL over
 * the one core attached.  NULL when out of memory. */
rlk__host *rlk__host_new(const rlk__host_topo *topo);
/* Frees it: requests held end without their callbacks; the cores stay
 * (free the host after the primitives, before the cores). */
void rlk__host_free(rlk__host *h);

/* core serves some slots: the host takes its hooks.  RLK_OK or
 * RLK_ERR_NOMEM. */
int rlk__host_attach(rlk__host *h, rlk__core *core);
/* A new table (the route's changed): held requests look again, then
 * every primitive hears changed. */
void rlk__host_changed(rlk__host *h, int64_t now);
/* The topology's cores will not come: every request held is answered
 * (v NULL, rlk__host_why status), then every primitive hears refused. */
void rlk__host_refuse(rlk__host *h, int status, const char *msg, int64_t now);

/* ops (not copied: it must outlive the join) with ctx joins: RLK_OK,
 * RLK_ERR_NOMEM, RLK_ERR_INVALID (joined already).  part: no more
 * events, no more messages or answers of its subscriptions (its routed
 * requests in flight still get their replies). */
int rlk__host_join(rlk__host *h, const rlk__host_ops *ops, void *ctx);
void rlk__host_part(rlk__host *h, const rlk__host_ops *ops, void *ctx);

/* Routed requests.
 *
 * A request for slot, ops built and answered as rlk__core_submit's
 * (ctx and arg the caller's, flags RLK__REQ_EVAL...), with deadline
 * either absolute (monotonic ms: it bounds the wait for a core and the
 * re-sends; each sending's reply is awaited until it or the command
 * timeout, whichever comes first), RLK__DL_DEFAULT (the command timeout
 * from its first sending bounds it and every re-send; held without
 * bound until then), or -1 (no bound: held and sent again for as long
 * as it takes, each sending's reply awaited for the command timeout).
 * It is held until the slot's core is ready; sent again at the core a
 * MOVED names (at most RLK__HOST_REDIRECTS redirects, then the reply is
 * an error saying it was a loop), after ASKING once at the node an ASK
 * names, after a paced pause on TRYAGAIN or CLUSTERDOWN, all within its
 * deadline (past it, the last such error is the reply).
 *
 * Every request submitted RLK_OK gets exactly one reply callback: the
 * final reply v with the core c that gave it; or v NULL: no reply will
 * come, c the core whose connection closed, or c NULL when it was never
 * answered by a core (rlk__host_why gives the status then: its deadline
 * passed while held, RLK_ERR_TIMEOUT; the host refused, the status
 * given).  The reply callback may submit.  q, as given to it, is a copy
 * with the caller's ops, ctx and arg.
 *
 * Returns RLK_OK, RLK_ERR_NOMEM (the slot's core, when one is known,
 * is broken then, as by its own submit), RLK_ERR_INVALID (no build; n
 * out of range), or a failure of the core it was submitted to at once
 * (its build's, the core's: RLK_ERR_NOMEM breaks the core). */
#define RLK__HOST_REDIRECTS 16
int rlk__host_submit(rlk__host *h, unsigned slot, const rlk__req_ops *ops, void *ctx, int64_t arg,
                     int64_t deadline, int flags);

/* A group: parts[0..n) (n <= RLK__HOST_PARTS) pipelined on one core,
 * for one slot, with one ctx and arg, sent again whole when any part's
 * reply was a redirect: the parts' reply callbacks are called, in order,
 * only for a sending none of whose parts was redirected, after the last
 * part's reply (the earlier parts' replies are kept in the group until
 * then, at most RLK__HOST_KEPT bytes in all: more fail the group's parts
 * with an RLK_ERR_LIMIT reply NULL, c NULL).  v NULL (a connection
 * closed, a deadline held) is given to every part, in order. */
#define RLK__HOST_PARTS 4
#define RLK__HOST_KEPT 65536
int rlk__host_submit_group(rlk__host *h, unsigned slot, int n, const rlk__req_ops *const *parts,
                           void *ctx, int64_t arg, int64_t deadline, int flags);

/* A group whose first sending's reply is awaited until first_dl (-1:
 * as any sending's) where that is sooner: a reply that may never come
 * (a node frozen while its replica takes over) leaves time within
 * deadline to send it again where the slot is then. */
int rlk__host_submit_first(rlk__host *h, unsigned slot, int n, const rlk__req_ops *const *parts,
                           void *ctx, int64_t arg, int64_t first_dl, int64_t deadline, int flags);

/* Every request of ctx's the host holds or has in flight ends by
 * deadline (absolute monotonic ms) at the latest: its wait for a core
 * and its re-sends (a sending under way keeps its own reply deadline).
 * For a caller that gives up on what it asked (a request held without
 * a bound of its own, say) and must know by when it is answered. */
void rlk__host_bound(rlk__host *h, const void *ctx, int64_t deadline);

/* Within a reply callback: how the request ended when v is NULL and c
 * is NULL (else RLK_OK), and why (its message). */
int rlk__host_why(const rlk__host *h, const char **msg);
/* Within a reply callback: the redirects its request followed before
 * this reply (a redirect loop's error has more than RLK__HOST_REDIRECTS). */
int rlk__host_redirects(const rlk__host *h);

/* Within a group part's reply callback: the reply of part k of the
 * same sending (k < 0 counts from the last: -1 is the last part's), so
 * that a part may read what the parts after it were answered (a WAIT
 * sent after a write); NULL when there is none (not in a group's
 * callback, k out of range, or no reply came). */
const rlk_resp_value *rlk__host_part_reply(const rlk__host *h, int k);

/* Subscriptions, their messages dispatched by channel.
 *
 * SUBSCRIBE ch on core c (the core that serves the subscriber's slot,
 * as rlk__host_core_for says), SSUBSCRIBE where c's server is a Redis
 * Cluster node (channels are sharded by slot there); on 0: its
 * UNSUBSCRIBE.  ops->reply (ops or it may be NULL) hears the answer as
 * rlk__core_subscribe says, with ctx and arg.  A MOVED or ASK among
 * them (the channel's slot moved) is told to the topology first (a
 * MOVED patches its table); the subscriber sees that its subscription
 * did not take, and then every joined primitive hears changed.  From
 * the call on, until its unsubscribe, a refusal, c's close or the
 * server's own sunsubscribe of it (given to on_msg, then the end), c's
 * messages on ch (message, smessage) go to on_msg(ctx, c, v) alone, not
 * to the members' push.  ctx is the subscriber's as it joined: its part
 * ends its subscriptions (no more messages, no more answers).
 * RLK_OK, RLK_ERR_NOMEM (c is broken then, as by its own subscribe),
 * or rlk__core_subscribe's failure. */
typedef void (*rlk__host_msg_fn)(void *ctx, rlk__core *c, const rlk_resp_value *v);
int rlk__host_subscribe(rlk__host *h, rlk__core *c, int on, const char *ch,
                        const rlk__req_ops *ops, rlk__host_msg_fn on_msg, void *ctx, int64_t arg);

/* The core that serves slot now (NULL: none known yet), as the
 * topology says; a host without one: its core. */
rlk__core *rlk__host_core_for(rlk__host *h, unsigned slot);
/* The core whose call (feed, tick, connected, closed) is under way, for
 * a primitive's enter, leave and tick (NULL: none, or the host's own). */
rlk__core *rlk__host_turning(const rlk__host *h);
/* The caller's clock (a time before the last is taken as the last),
 * given to every core: a caller that submits sets it first. */
void rlk__host_clock(rlk__host *h, int64_t now);
/* The cores' command timeout (the first attached's; -1: none;
 * RLK__DL_DEFAULT: no core attached yet). */
int64_t rlk__host_timeout_ms(const rlk__host *h);
/* Whether MOVED and ASK are followed (a topology is given). */
int rlk__host_routed(const rlk__host *h);
/* v is a reply the host follows when it carries the request (MOVED, ASK,
 * TRYAGAIN, CLUSTERDOWN, on a routed host): its class, else 0.  For a
 * primitive that reads such a reply the host gave it as final (its
 * redirects or its time ran out) or that no routed request carried (a
 * subscription's). */
int rlk__host_redirect_class(const rlk__host *h, const rlk_resp_value *v);
/* Requests held (not sent yet): for tests and the fuzz harness. */
size_t rlk__host_held(const rlk__host *h);
/* The host's own next time (a held request's deadline or re-send),
 * joined primitives' aside; -1: none. */
int64_t rlk__host_due(const rlk__host *h);

#endif
