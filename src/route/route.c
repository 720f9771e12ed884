/* SPDX-License-Identifier: BSD-3-Clause */
/* The route (see route.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "route.h"
#include "clock.h"
#include "internal.h"
#include "reply.h"

#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

/* The table is read again: every TABLE_EVERY_MS; no sooner than
 * TABLE_PAUSE_MS after the last read began; TABLE_RETRY_MS after a read
 * that failed. */
#define TABLE_EVERY_MS 60000
#define TABLE_PAUSE_MS 250
#define TABLE_RETRY_MS 1000

rlk__driver *rlk__route_new_driver(rlk__route *r, const rlk_conn_config *conn, const char *host,
                                   int port, int *status)
{
    rlk__driver *d = rlk__malloc(sizeof *d);
    if (!d) {
        *status = RLK_ERR_NOMEM;
        snprintf(r->err, sizeof r->err, "out of memory");
        return NULL;
    }
    *status = host ? rlk__driver_init_at(d, conn, &r->cc, host, port)
                   : rlk__driver_init(d, conn, &r->cc);
    r->drivers[r->n++] = d; /* destroyed with the others, whatever happened */
    if (*status != RLK_OK) snprintf(r->err, sizeof r->err, "server %zu: %s", r->n, d->err);
    return d;
}

int rlk__route_init(rlk__route *r, int kind, size_t n, const rlk_conn_config *conns,
                    const rlk__core_config *cc)
{
    memset(r, 0, sizeof *r);
    r->refresh_at = -1;
    if (n == 0 || (kind == RLK__ROUTE_ONE && n > 16) ||
        (kind != RLK__ROUTE_ONE && kind != RLK__ROUTE_SET) || n > RLK__ROUTE_MAX) {
        snprintf(r->err, sizeof r->err, "route: %zu servers for this kind", n);
        return RLK_ERR_INVALID;
    }
    r->drivers = rlk__malloc(RLK__ROUTE_MAX * sizeof *r->drivers);
    if (!r->drivers) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return RLK_ERR_NOMEM;
    }
    r->ops = kind == RLK__ROUTE_ONE ? &rlk__route_kind_one : &rlk__route_kind_set;
    r->seeds = n;
    if (cc) r->cc = *cc;
    r->conn = conns[0];
    for (size_t i = 0; i < n; i++) {
        int st;
        rlk__route_new_driver(r, &conns[i], NULL, 0, &st);
        if (st != RLK_OK) return st;
    }
    return RLK_OK;
}

int rlk__route_init_kind(rlk__route *r, const rlk__route_kind *kind, const rlk_conn_config *conn,
                         const rlk__core_config *cc)
{
    memset(r, 0, sizeof *r);
    r->refresh_at = -1;
    r->drivers = rlk__malloc(RLK__ROUTE_MAX * sizeof *r->drivers);
    if (!r->drivers) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return RLK_ERR_NOMEM;
    }
    r->ops = kind;
    r->seeds = 1;
    if (cc) r->cc = *cc;
    r->conn = *conn;
    return kind->init(r, conn);
}

void rlk__route_destroy(rlk__route *r)
{
    rlk__route_side_close(r);
    for (size_t i = 0; i < r->n; i++) {
        rlk__driver_destroy(r->drivers[i]);
        rlk__free(r->drivers[i]);
    }
    rlk__free(r->drivers);
    r->drivers = NULL;
    r->n = r->polled = 0;
    rlk__free(r->sn.master);
    r->sn.master = NULL;
    if (r->slots) {
        rlk__slots_free(r->slots);
        rlk__free(r->slots);
        r->slots = NULL;
    }
}

void rlk__route_set_hooks(rlk__route *r, const rlk__route_hooks *hooks) { r->hooks = *hooks; }

rlk__core *rlk__route_core(rlk__route *r, size_t i) { return r->drivers[i]->core; }

int rlk__route_is_cluster(const rlk__route *r) { return r->ops == &rlk__route_kind_cluster; }

size_t rlk__route_primary(const rlk__route *r) { return r->ops->primary(r); }

int rlk__route_is_data(const rlk__route *r, size_t i) { return r->ops->is_data(r, i); }

/* A cluster found: its table made (empty), the route's kind switched to
 * the cluster's.  0, or -1 out of memory (the route then stays one
 * server's). */
static int become_cluster(rlk__route *r)
{
    if (rlk__route_is_cluster(r)) return 0;
    if (!r->slots) {
        r->slots = rlk__malloc(sizeof *r->slots);
        if (!r->slots) {
            snprintf(r->err, sizeof r->err, "cluster: out of memory");
            return -1;
        }
        rlk__slots_init(r->slots);
    }
    r->ops = &rlk__route_kind_cluster;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Redis Cluster                                                        */

static int tls_route(const rlk__route *r) { return r->drivers[0]->url.kind == RLK__URL_TLS; }

static rlk__driver *driver_of(const rlk__route *r, const rlk__core *c)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->drivers[i]->core == c) return r->drivers[i];
    return NULL;
}

/* The connection to host:port, opened (and told to the owner) when
 * there is none and open is set.  NULL: none (or it could not be made:
 * the reason in r->err). */
static rlk__driver *node_driver(rlk__route *r, const char *host, int port, int open)
{
    if (!host || !*host || port <= 0) return NULL;
    for (size_t i = 0; i < r->n; i++) {
        const rlk__driver *d = r->drivers[i];
        if (d->url.kind != RLK__URL_UNIX && d->url.host && d->url.port == port &&
            strcmp(d->url.host, host) == 0) {
            if (open) r->parked[i] = 0;
            return r->drivers[i];
        }
    }
    if (!open || r->refused) return NULL;
    if (r->n >= RLK__ROUTE_MAX) {
        snprintf(r->err, sizeof r->err, "cluster: more than %d connections", RLK__ROUTE_MAX);
        return NULL;
    }
    int st;
    rlk__driver *d = rlk__route_new_driver(r, &r->conn, host, port, &st);
    if (st == RLK_OK && r->hooks.added) {
        st = r->hooks.added(r->hooks.ctx, d->core);
        if (st != RLK_OK) snprintf(r->err, sizeof r->err, "cluster: node %s:%d: out of memory", host, port);
    }
    if (st != RLK_OK) {
        r->n--;
        rlk__driver_destroy(d);
        rlk__free(d);
        return NULL;
    }
    return d;
}

static int port_of(const rlk__route *r, const rlk__node *nd);

/* After a new table: the connections of the nodes (but the seed's) that
 * serve no slot in it are closed and left so (a failed primary would be
 * tried again for ever); those of its primaries stay or reopen. */
/* A connection is ready to read the table over. */
static int any_ready(const rlk__route *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (!r->parked[i] && rlk__core_ready(r->drivers[i]->core) && !rlk__core_broken(r->drivers[i]->core))
            return 1;
    return 0;
}

/* d connects to node nd. */
static int is_node(const rlk__route *r, const rlk__driver *d, const rlk__node *nd)
{
    return nd && d->url.host && port_of(r, nd) == d->url.port && strcmp(nd->host, d->url.host) == 0;
}

/* d's node serves a slot in the table. */
static int serves(const rlk__route *r, const rlk__driver *d)
{
    const rlk__slots *t = r->slots;
    if (!d->url.host) return 0;
    for (unsigned sl = 0; sl < RLK__NSLOTS; sl++) {
        const rlk__node *nd = rlk__slots_owner(t, sl);
        if (is_node(r, d, nd)) return 1;
        /* Ranges: skip to the next owner. */
        while (nd && sl + 1 < RLK__NSLOTS && t->owner[sl + 1] == t->owner[sl]) sl++;
    }
    return 0;
}

static void park_idle(rlk__route *r)
{
    for (size_t i = r->seeds; i < r->n; i++) {
        rlk__driver *d = r->drivers[i];
        if (!serves(r, d) && !r->parked[i]) {
            /* Not the last one up: the table is read again over it
             * (a failover still under way). */
            r->parked[i] = 1;
            if (!any_ready(r)) {
                r->parked[i] = 0;
                continue;
            }
            rlk__driver_close(d);
        }
    }
}

static void table_due(rlk__route *r, int64_t at)
{
    if (r->refresh_at < 0 || at < r->refresh_at) r->refresh_at = at;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
/* A configuration no retry mends: every connection fails with it. */
static void refuse(rlk__route *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    r->refused = 1;
    for (size_t i = 0; i < r->n; i++) {
        rlk__driver *d = r->drivers[i];
        rlk__driver_close(d);
        d->fatal = RLK_ERR_INVALID;
        d->last = RLK_ERR_INVALID;
        snprintf(d->err, sizeof d->err, "%.*s", (int)sizeof d->err - 1, r->err);
    }
    if (r->hooks.refused) r->hooks.refused(r->hooks.ctx);
}

int rlk__route_seed_ready(const rlk__route *r)
{
    for (size_t i = 0; i < r->seeds; i++)
        if (rlk__core_ready(r->drivers[i]->core)) return 1;
    return 0;
}

/* A seed's handshake said it is a cluster node.  Several seeds must all
 * be; one that is not is refused only when may_refuse is set. */
static void notice_cluster(rlk__route *r, int may_refuse)
{
    if (r->ops == &rlk__route_kind_set || r->refused) return;
    for (size_t i = 0; i < r->seeds; i++) {
        const rlk__core *c = r->drivers[i]->core;
        if (!rlk__core_ready(c)) continue;
        if (rlk__core_cluster(c)) {
            if (!rlk__route_is_cluster(r) && become_cluster(r) == 0) table_due(r, rlk__core_now(c));
        } else if (r->seeds > 1) {
            if (!may_refuse) return;
            refuse(r, "seed %zu (%s) is not a Redis Cluster node (its mode: %s): several seeds "
                      "must be nodes of one cluster", i + 1, r->drivers[i]->t.peer,
                   rlk__core_info(c)->mode[0] ? rlk__core_info(c)->mode : "unknown");
            return;
        }
    }
}

/* Every seed is a node of the table just read (from's; its place among
 * the drivers, for the message).  Once only, at the first table: a later
 * one may lack a seed's node for good reasons (failed over, for CLUSTER
 * SLOTS names no node that serves no slot; removed from the cluster),
 * and refusing then would close every connection for good. */
static void check_seeds(rlk__route *r, const rlk__driver *from)
{
    if (r->seeds_checked) return;
    size_t o = 0;
    while (o < r->n && r->drivers[o] != from) o++;
    for (size_t i = 0; i < r->seeds && r->seeds > 1; i++) {
        const rlk__driver *d = r->drivers[i];
        int found = 0;
        for (size_t k = 0; k < r->slots->nnodes && !found; k++) {
            const rlk__node *nd = &r->slots->nodes[k];
            found = is_node(r, d, nd);
        }
        if (!found) {
            if (o < r->seeds)
                refuse(r, "seed %zu (%s:%d) is not a node of the cluster of seed %zu (%s:%d): several "
                          "seeds must be nodes of one cluster, as it names them", i + 1,
                       d->url.host ? d->url.host : "?", d->url.port, o + 1,
                       from->url.host ? from->url.host : "?", from->url.port);
            else
                refuse(r, "seed %zu (%s:%d) is not a node of the cluster the others belong to", i + 1,
                       d->url.host ? d->url.host : "?", d->url.port);
            return;
        }
    }
    r->seeds_checked = 1;
}

static int build_table(rlk__core *c, rlk__req *q)
{
    const rlk__route *r = q->ctx;
    const char *argv[2] = {"CLUSTER", r->use_slots ? "SLOTS" : "SHARDS"};
    return rlk__core_put(c, 2, argv, NULL);
}

static void on_table(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    rlk__route *r = q->ctx;
    int64_t now = rlk__core_now(c);
    r->refreshing = 0;
    if (!v) {
        table_due(r, now); /* from another connection, or this one again */
        return;
    }
    if (rlk__is_error(v)) {
        /* SHARDS unknown (before Redis 7), or refused to this user by
         * an ACL that lets it read SLOTS. */
        if (!r->use_slots && (rlk__error_starts(v, "ERR unknown subcommand") ||
                              rlk__error_starts(v, "ERR Unknown subcommand") ||
                              rlk__error_starts(v, "NOPERM"))) {
            r->use_slots = 1;
            r->refresh_min = now;
            table_due(r, now);
            return;
        }
        snprintf(r->err, sizeof r->err, "cluster: CLUSTER %s: %.*s", r->use_slots ? "SLOTS" : "SHARDS",
                 (int)(v->len > 200 ? 200 : v->len), v->str);
        table_due(r, now + TABLE_RETRY_MS);
        return;
    }
    const rlk__driver *d = driver_of(r, c);
    const char *origin = d && d->url.kind != RLK__URL_UNIX ? d->url.host : NULL;
    int st = r->use_slots ? rlk__slots_from_slots(r->slots, v, origin, tls_route(r))
                          : rlk__slots_from_shards(r->slots, v, origin);
    if (st != RLK_OK) {
        snprintf(r->err, sizeof r->err, "cluster: the slot table: %s", r->slots->err);
        table_due(r, now + TABLE_RETRY_MS);
        return;
    }
    r->have_table = 1;
    r->tables++;
    check_seeds(r, d);
    if (r->refused) return;
    table_due(r, now + TABLE_EVERY_MS);
    /* The owner follows the table first: a request waiting for a node
     * the table dropped (a frozen primary, replaced) goes to the new
     * one, and is not ended by that node's closing. */
    if (r->hooks.changed) r->hooks.changed(r->hooks.ctx);
    park_idle(r);
}

static const rlk__req_ops table_ops = {build_table, on_table, NULL, RLK__T_ARRAY};

/* Before a turn: a cluster found, the table read when due (over the
 * seed's connection when it is up, else another's), and read again
 * soon while a connection that serves slots is down or silent (a
 * request timed out there and no handshake was answered since: a
 * frozen primary, whose failover names a new one).  The time the turn
 * must wake for it, or -1. */
static int64_t cluster_upkeep(rlk__route *r, int64_t now)
{
    notice_cluster(r, 1);
    if (r->refused) return -1;
    for (size_t i = 0; i < r->n; i++) {
        const rlk__driver *d = r->drivers[i];
        if (!r->parked[i] && ((!d->up && d->fails > 0) || d->silent) && r->have_table &&
            serves(r, d))
            table_due(r, now);
    }
    if (r->refreshing || r->refresh_at < 0) return -1;
    int64_t at = r->refresh_at > r->refresh_min ? r->refresh_at : r->refresh_min;
    if (now < at) return at;
    for (size_t i = 0; i < r->n; i++) {
        rlk__core *c = r->drivers[i]->core;
        if (!rlk__core_ready(c) || rlk__core_broken(c)) continue;
        rlk__core_clock(c, now);
        if (rlk__core_submit(c, &table_ops, r, 0, RLK__DL_DEFAULT, 0) != RLK_OK) continue;
        r->refreshing = 1;
        r->refresh_at = -1;
        r->refresh_min = now + TABLE_PAUSE_MS;
        return -1;
    }
    /* None up (the nodes it knew failed, or serve through others now):
     * another node of the table is opened, one a second in turn, to
     * read the table from; a connection's handshake wakes the turn. */
    if (r->have_table && r->slots->nnodes && now >= r->probe_at) {
        r->probe_at = now + 1000;
        for (size_t k = 0; k < r->slots->nnodes; k++) {
            const rlk__node *nd = &r->slots->nodes[r->probe++ % r->slots->nnodes];
            rlk__driver *d = node_driver(r, nd->host, port_of(r, nd), 0);
            if (nd->health == RLK__HEALTH_FAILED) continue;
            if (d) {
                size_t i = 0;
                while (r->drivers[i] != d) i++;
                if (!r->parked[i]) continue; /* reconnecting by itself */
            }
            if (node_driver(r, nd->host, port_of(r, nd), 1)) break;
        }
        return r->probe_at;
    }
    return -1;
}

static int port_of(const rlk__route *r, const rlk__node *nd)
{
    return tls_route(r) && nd->tls_port ? nd->tls_port : nd->port;
}

static rlk__core *cluster_core_for(rlk__route *r, unsigned slot)
{
    notice_cluster(r, 0);
    const rlk__node *nd = rlk__slots_owner(r->slots, slot);
    if (!nd) return NULL;
    rlk__driver *d = node_driver(r, nd->host, port_of(r, nd), 1);
    return d ? d->core : NULL;
}

/* A MOVED or ASK: one server's route becomes a cluster's (a server
 * without HELLO's mode), a cluster's follows it. */
static rlk__core *cluster_redirect(rlk__route *r, rlk__core *from, const rlk_resp_value *v, int *ask)
{
    rlk_error_class e = rlk__reply_class(v);
    *ask = 0;
    if (e != RLK_EC_MOVED && e != RLK_EC_ASK) return NULL;
    const rlk__driver *fd = driver_of(r, from);
    rlk__redirect rd;
    if (rlk__parse_redirect(v->str, v->len, fd && fd->url.kind != RLK__URL_UNIX ? fd->url.host : NULL,
                            &rd) != 0)
        return NULL;
    int64_t now = rlk__core_now(from);
    if (!rlk__route_is_cluster(r)) {
        if (become_cluster(r) != 0) return NULL; /* a server without HELLO's mode */
        table_due(r, now);
    }
    rlk__driver *d;
    if (rd.ask) {
        *ask = 1;
        d = node_driver(r, rd.host, rd.port, 1);
    } else {
        if (rlk__slots_moved(r->slots, rd.slot, rd.host, rd.port, tls_route(r)) < 0) {
            snprintf(r->err, sizeof r->err, "cluster: MOVED %u %s:%d: %s", rd.slot, rd.host, rd.port,
                     r->slots->err);
            return NULL;
        }
        table_due(r, now); /* more may have moved: a failover, a resharding */
        d = node_driver(r, rd.host, rd.port, 1);
    }
    return d ? d->core : NULL;
}

static int64_t cluster_due(const rlk__route *r)
{
    if (r->refused || r->refreshing || r->refresh_at < 0) return -1;
    int64_t at = r->refresh_at > r->refresh_min ? r->refresh_at : r->refresh_min;
    if (!any_ready(r) && r->probe_at > at) at = r->probe_at; /* none to read it over */
    return at;
}

/* ------------------------------------------------------------------ */
/* The kinds                                                            */

/* The core of every kind but the set: the slot's one. */
size_t rlk__route_cores_of_slot(rlk__route *r, unsigned slot, rlk__core **out, size_t max)
{
    rlk__core *c = r->ops->core_for(r, slot);
    if (!c || max == 0) return 0;
    out[0] = c;
    return 1;
}

static rlk__core *one_core_for(rlk__route *r, unsigned slot)
{
    notice_cluster(r, 0);
    if (rlk__route_is_cluster(r)) return cluster_core_for(r, slot);
    /* several seeds: none before the cluster is found */
    return r->seeds > 1 ? NULL : r->drivers[0]->core;
}

/* A seed's handshake may say it is a cluster node: the route is then a
 * cluster's, whose upkeep reads its table. */
static int64_t one_upkeep(rlk__route *r, int64_t now)
{
    notice_cluster(r, 1);
    return rlk__route_is_cluster(r) ? cluster_upkeep(r, now) : -1;
}

static int64_t none_due(const rlk__route *r)
{
    (void)r;
    return -1;
}

static int every_member(const rlk__route *r, size_t i)
{
    (void)r;
    (void)i;
    return 1;
}

/* The first server given: one server's only one, a cluster's first seed
 * (its connection the one rlk_client_fd gives, its health the client's
 * while no table is read), a set's first. */
size_t rlk__route_first_given(const rlk__route *r)
{
    (void)r;
    return 0;
}

static size_t set_cores(rlk__route *r, unsigned slot, rlk__core **out, size_t max)
{
    (void)slot;
    size_t k = 0;
    for (size_t i = 0; i < r->n && k < max; i++)
        if (r->ops->is_data(r, i) && r->drivers[i]->core) out[k++] = r->drivers[i]->core;
    return k;
}

rlk__core *rlk__route_first_core(rlk__route *r, unsigned slot)
{
    (void)slot;
    return r->seeds > 1 ? NULL : r->drivers[0]->core;
}

rlk__core *rlk__route_no_redirect(rlk__route *r, rlk__core *from, const rlk_resp_value *v, int *ask)
{
    (void)r;
    (void)from;
    (void)v;
    *ask = 0;
    return NULL;
}

static int64_t no_upkeep(rlk__route *r, int64_t now)
{
    (void)r;
    (void)now;
    return -1;
}

const rlk__route_kind rlk__route_kind_one = {
    "one", rlk__route_cores_of_slot, one_core_for, cluster_redirect, one_upkeep, none_due,
    every_member, rlk__route_first_given, NULL, 0,
};
const rlk__route_kind rlk__route_kind_cluster = {
    "cluster", rlk__route_cores_of_slot, cluster_core_for, cluster_redirect, cluster_upkeep,
    cluster_due, every_member, rlk__route_first_given, NULL, 0,
};
const rlk__route_kind rlk__route_kind_set = {
    "set", set_cores, rlk__route_first_core, rlk__route_no_redirect, no_upkeep, none_due,
    every_member, rlk__route_first_given, NULL, 0,
};

rlk__core *rlk__route_core_for(rlk__route *r, unsigned slot) { return r->ops->core_for(r, slot); }

size_t rlk__route_cores(rlk__route *r, unsigned slot, rlk__core **out, size_t max)
{
    return r->ops->cores(r, slot, out, max);
}

rlk__core *rlk__route_redirect(rlk__route *r, rlk__core *from, const rlk_resp_value *v, int *ask)
{
    return r->ops->redirect(r, from, v, ask);
}

static rlk__core *topo_core_for(void *ctx, unsigned slot)
{
    rlk__route *r = ctx;
    return r->ops->core_for(r, slot);
}

static rlk__core *topo_redirect(void *ctx, rlk__core *from, const rlk_resp_value *v, int *ask)
{
    rlk__route *r = ctx;
    return r->ops->redirect(r, from, v, ask);
}

void rlk__route_topo(rlk__route *r, rlk__host_topo *topo)
{
    topo->core_for = topo_core_for;
    topo->redirect = topo_redirect;
    topo->readonly_follows = r->ops && r->ops->readonly_follows; /* none: not made */
    topo->ctx = r;
}

/* ------------------------------------------------------------------ */
/* Turns                                                                */

static int note(rlk__route *r, int first, int status, size_t i)
{
    if (first != RLK_OK || status == RLK_OK) return first;
    snprintf(r->err, sizeof r->err, "server %zu: %s", i + 1, r->drivers[i]->err);
    return status;
}

int rlk__route_prepare(rlk__route *r, struct pollfd *p, int64_t until, int64_t *wake)
{
    int first = RLK_OK;
    *wake = until;
    size_t n0 = r->n;
    int64_t w0 = r->ops->upkeep(r, rlk__now_ms());
    if (w0 >= 0 && (*wake < 0 || w0 < *wake)) *wake = w0;
    for (size_t i = 0; i < r->n; i++) {
        int64_t w;
        if (r->parked[i]) {
            p[i].fd = -1;
            p[i].events = p[i].revents = 0;
            continue;
        }
        first = note(r, first, rlk__driver_prepare(r->drivers[i], &p[i], until, &w), i);
        if (w >= 0 && (*wake < 0 || w < *wake)) *wake = w;
    }
    r->polled = r->n;
    /* A connection opened meanwhile (by a primitive's callback) waits
     * for no poll to start. */
    if (r->n != n0) *wake = rlk__now_ms();
    return first;
}

int rlk__route_after(rlk__route *r, const struct pollfd *p)
{
    int first = RLK_OK;
    size_t n = r->polled < r->n ? r->polled : r->n;
    for (size_t i = 0; i < n; i++)
        if (!r->parked[i]) first = note(r, first, rlk__driver_after(r->drivers[i], &p[i]), i);
    return first;
}

int rlk__route_step(rlk__route *r, int64_t until)
{
    struct pollfd p[RLK__ROUTE_MAX];
    int64_t wake;
    int first = rlk__route_prepare(r, p, until, &wake);
    /* Nothing to wait for (seeds refused, every driver failed for
     * good): no poll of nothing until a deadline. */
    if (first != RLK_OK && !rlk__route_can_go_on(r)) return first;
    if (rlk__poll_until(p, r->polled, wake) < 0) {
        snprintf(r->err, sizeof r->err, "poll: %s", strerror(errno));
        return RLK_ERR_IO;
    }
    int second = rlk__route_after(r, p);
    return first != RLK_OK ? first : second;
}

int rlk__route_turn_alone(rlk__route *r, int64_t until)
{
    if (r->n != 1 || rlk__route_is_cluster(r)) return rlk__route_step(r, until);
    int st = rlk__driver_turn_alone(r->drivers[0], until);
    int64_t w = r->ops->upkeep(r, rlk__now_ms());
    (void)w;
    return note(r, RLK_OK, st, 0);
}

int64_t rlk__route_due(const rlk__route *r)
{
    int64_t due = -1;
    for (size_t i = 0; i < r->n; i++) {
        int64_t d = r->parked[i] ? -1 : rlk__core_deadline(r->drivers[i]->core);
        if (d >= 0 && (due < 0 || d < due)) due = d;
    }
    int64_t at = r->ops->due(r);
    if (at >= 0 && (due < 0 || at < due)) due = at;
    return due;
}

int rlk__route_can_go_on(const rlk__route *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (!r->parked[i] && rlk__driver_can_go_on(r->drivers[i])) return 1;
    return 0;
}

int rlk__route_run(rlk__route *r, int (*done)(void *ctx), void *ctx, int64_t until)
{
    for (;;) {
        if (done(ctx)) return RLK_OK;
        if (until >= 0 && rlk__now_ms() >= until) return RLK_ERR_TIMEOUT;
        int st = rlk__route_step(r, until);
        if (!rlk__route_can_go_on(r)) return st != RLK_OK ? st : RLK_ERR_CLOSED;
    }
}

void rlk__route_health_of(const rlk__route *r, size_t i, rlk__route_health *h)
{
    const rlk__driver *d = r->drivers[i];
    h->up = d->up;
    h->connecting = rlk__driver_connecting(d);
    h->fails = d->fails;
    h->last = d->last;
    h->fatal = d->fatal;
    h->connects = d->connects;
    h->retry_at = d->backoff.at;
    h->err = d->err;
    h->parked = r->parked[i];
    h->held = d->held;
}

int rlk__route_fd(const rlk__route *r, size_t i) { return rlk__driver_fd(r->drivers[i]); }

void rlk__route_peer(const rlk__route *r, size_t i, rlk_conn_info *info)
{
    const rlk__driver *d = r->drivers[i];
    snprintf(info->peer, sizeof info->peer, "%s", d->t.peer);
    info->tls_version = rlk__tls_version(&d->t);
    info->tls_cipher = rlk__tls_cipher(&d->t);
}

void rlk__route_close(rlk__route *r, size_t i) { rlk__driver_close(r->drivers[i]); }

int rlk__route_connect_through(rlk__route *r, size_t i)
{
    return rlk__driver_connect_through(r->drivers[i]);
}

/* ------------------------------------------------------------------ */
/* The owner's side connection                                          */

int rlk__route_side_open(rlk__route *r, const rlk_conn_config *conn, const rlk__core_config *cc)
{
    rlk__route_side_close(r);
    rlk__driver *d = rlk__malloc(sizeof *d);
    if (!d) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return RLK_ERR_NOMEM;
    }
    int st;
    const rlk__driver *p = r->n ? r->drivers[rlk__route_primary(r)] : NULL;
    if (p && p->ask_each) {
        /* At the address the primary's member was given last (one
         * asked of sentinels), with its credentials. */
        rlk_conn_config c = *conn;
        c.url = p->cfg.url;
        st = rlk__driver_init_at(d, &c, cc, p->url.host, p->url.port);
    } else {
        st = rlk__driver_init(d, conn, cc);
    }
    if (st != RLK_OK) {
        snprintf(r->err, sizeof r->err, "%s", d->err);
        rlk__driver_destroy(d);
        rlk__free(d);
        return st;
    }
    r->side = d;
    if (++r->side_gen == 0) r->side_gen = 1; /* 0: none seen */
    return RLK_OK;
}

void rlk__route_side_close(rlk__route *r)
{
    if (!r->side) return;
    rlk__driver_destroy(r->side);
    rlk__free(r->side);
    r->side = NULL;
}

int rlk__route_side_prepare(rlk__route *r, struct pollfd *pfd, int64_t until, int64_t *wake)
{
    if (!r->side) {
        pfd->fd = -1;
        pfd->events = pfd->revents = 0;
        *wake = until;
        r->side_seen = 0;
        return RLK_OK;
    }
    r->side_seen = r->side_gen;
    return rlk__driver_prepare(r->side, pfd, until, wake);
}

int rlk__route_side_after(rlk__route *r, const struct pollfd *pfd)
{
    if (!r->side || r->side_seen != r->side_gen) return RLK_OK;
    r->side_seen = 0;
    return rlk__driver_after(r->side, pfd);
}

int rlk__route_side_can_go_on(const rlk__route *r)
{
    return r->side && rlk__driver_can_go_on(r->side);
}
