/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The renewer (see renewer.h): the watchdog's rounds, one at a time per
 * core, for the leases of every primitive joined to the host.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "renewer.h"
#include "defaults.h"
#include "internal.h"
#include "keys.h"
#include "lua.h"
#include "serverinfo.h"

#include <string.h>

/* A core as the renewer sees it: its rounds. */
typedef struct rnode {
    struct rnode *next;
    rlk__renewer *rn;
    rlk__core *core;      /* not owned */
    rlk__conn_round cr;   /* the renewal rounds of its leases (lease.h) */
    int recheck_all;      /* a new connection, or a lease moved here:
                             every lease of it is re-checked */
    int rechecked;        /* a round went on this connection */
} rnode;

struct rlk__renewer {
    rlk__host *host;
    rlk_client_config timing;
    rlk__leases leases;
    rlk_script script;    /* src/lua/renew.lua */
    rnode *nodes;
    int64_t now;
    int depth;
    /* The next time due, while dl_valid and the registry's gen is
     * dl_gen: a client holding many leases does not walk them at every
     * turn. */
    int64_t dl_cache;
    unsigned dl_gen;
    int dl_valid;
};

static const rlk__host_ops renewer_ops;

int rlk__set_ifeq_refused(const rlk_resp_value *v)
{
    return rlk__reply_class(v) == RLK_EC_NOPERM || rlk__error_starts(v, "ERR unknown command") ||
           rlk__error_starts(v, "ERR syntax error") || rlk__error_starts(v, "ERR wrong number");
}

int rlk__put_set_ifeq(rlk__core *c, const char *key, const char *token, const char *ms)
{
    const char *argv[7] = {"SET", key, token, "IFEQ", token, "PX", ms};
    return rlk__core_put(c, 7, argv, NULL);
}

int rlk__put_wait(rlk__core *c, rlk__req *q, int n, int aof, int64_t ms)
{
    char ns[24], mss[24];
    rlk__i64_dec(ns, n);
    rlk__i64_dec(mss, (long long)ms);
    const char *argv[4] = {"WAIT", ns, mss, NULL};
    if (aof) {
        argv[0] = "WAITAOF";
        argv[1] = "1";
        argv[2] = ns;
        argv[3] = mss;
    }
    rlk__core_hold(c, q, ms);
    return rlk__core_put(c, 3 + (aof != 0), argv, NULL);
}

static void set_now(rlk__renewer *rn, int64_t now)
{
    if (now > rn->now) rn->now = now;
    rlk__leases_clock(&rn->leases, rn->now);
    rn->dl_valid = 0;
}

static rnode *node_of(rlk__renewer *rn, rlk__core *c)
{
    if (!c) return NULL;
    rnode **tail = &rn->nodes;
    for (rnode *n = rn->nodes; n; tail = &n->next, n = n->next)
        if (n->core == c) return n;
    rnode *n = rlk__malloc(sizeof *n);
    if (!n) return NULL;
    memset(n, 0, sizeof *n);
    n->rn = rn;
    n->core = c;
    *tail = n;
    return n;
}

/* A Redis Cluster node (its HELLO said so). */
static int cluster_node(const rnode *n)
{
    return n && rlk__core_cluster(n->core);
}

/* A round can be sent on n: connected, none in flight. */
static int can_send(const rnode *n)
{
    return n && rlk__core_ready(n->core) && !n->cr.on && !rlk__core_broken(n->core);
}

/* Each lease joins the rounds of the core that serves its slot now, as
 * the host's table says (none known: it stays).  One that moved is
 * renewed there at once with every lease there: its last renewal was
 * elsewhere. */
static void place_all(rlk__renewer *rn)
{
    for (rlk__lease *e = rn->leases.head; e; e = e->next) {
        rnode *n = node_of(rn, rlk__host_core_for(rn->host, e->slot));
        if (!n || n == e->group) continue;
        e->group = n;
        n->recheck_all = 1;
        n->rechecked = 0;
    }
    rn->dl_valid = 0;
}

/* ------------------------------------------------------------------ */
/* Rounds                                                               */

/* The request of n's round that q is (q->ctx; q->arg: see
 * rlk__conn_round_arg), or NULL: of an earlier round (the host sends a
 * request again after a redirect, and its reply can come after that
 * round ended). */
static const rlk_request *round_req(const rnode *n, const rlk__req *q, size_t *i)
{
    return rlk__conn_round_req(&n->cr, q->arg, i);
}

static int build_renew(rlk__core *c, rlk__req *q)
{
    rnode *n = q->ctx;
    size_t i;
    const rlk_request *r = round_req(n, q, &i);
    if (!r) return RLK_ERR_INVALID; /* its round is over: not sent again */
    if (!r->script) {
        /* A simple lease alone (rlk__round.native): key, kind, token,
         * ttl, each a string of the lease's. */
        return rlk__put_set_ifeq(c, r->argv[0], r->argv[2], r->argv[3]);
    }
    return rlk__core_put_script(c, q, &n->rn->script, r->nkeys, r->argc, r->argv, r->argvlen);
}

/* A round's reply: its leases' results.  A missing script is not sent
 * again (the round's time is short): the next round goes as EVAL. */
static int renew_again(rlk__core *c, const rlk__req *q)
{
    (void)c;
    (void)q;
    return 0;
}

/* The reply of request i of n's round applied (v NULL: it will not
 * come).  The round that re-checked every lease of a new connection,
 * all its replies read, ends the re-check. */
static void round_reply(rnode *n, size_t i, const rlk_resp_value *v)
{
    n->rn->dl_valid = 0;
    if (rlk__conn_round_reply(&n->rn->leases, &n->cr, i, v)) n->recheck_all = 0;
}

/* Every reply of n's round not applied yet will not come (its
 * connection closed, or the owners go). */
static void round_abandon(rnode *n)
{
    n->rn->dl_valid = 0;
    rlk__conn_round_abandon(&n->rn->leases, &n->cr);
}

/* The replicas request i's leases ask for: the most of those that ask
 * by WAIT (w) and by WAITAOF (a), and the longest wait (the return). */
static int64_t acks_of(const rlk__round *rd, size_t i, int *w, int *a)
{
    size_t first, cnt = rlk__round_leases(rd, i, &first);
    int64_t ms = 0;
    *w = *a = 0;
    for (size_t k = first; k < first + cnt; k++) {
        const rlk__lease *l = rd->e[k].l;
        int *m = l->acks_aof ? a : w;
        if (l->acks > *m) *m = l->acks;
        if (l->acks && l->acks_ms > ms) ms = l->acks_ms;
    }
    return ms;
}

static int build_wait(rlk__core *c, rlk__req *q, int aof)
{
    rnode *n = q->ctx;
    size_t i;
    int w, a;
    if (!round_req(n, q, &i)) return RLK_ERR_INVALID;
    int64_t ms = acks_of(&n->cr.round, i, &w, &a);
    return rlk__put_wait(c, q, aof ? a : w, aof, ms);
}

static int build_wait_n(rlk__core *c, rlk__req *q) { return build_wait(c, q, 0); }
static int build_wait_aof(rlk__core *c, rlk__req *q) { return build_wait(c, q, 1); }
static const rlk__req_ops wait_ops = {build_wait_n, NULL, NULL, RLK__T_ANY};
static const rlk__req_ops waitaof_ops = {build_wait_aof, NULL, NULL, RLK__T_ANY};

static void on_renew(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    rnode *n = q->ctx;
    rlk__renewer *rn = n->rn;
    size_t i;
    if (!round_req(n, q, &i)) return;
    /* The WAIT and WAITAOF sent after it, in this order (see send_round). */
    rlk__round *rd = &n->cr.round;
    int w, a;
    acks_of(rd, i, &w, &a);
    rd->acked = w ? rlk__wait_count(rlk__host_part_reply(rn->host, 1), 0) : RLK__ACKED_ALL;
    rd->acked_aof = a ? rlk__wait_count(rlk__host_part_reply(rn->host, w ? 2 : 1), 1) : RLK__ACKED_ALL;
    if (q->missing) n->cr.eval = 1;
    if (rlk__host_redirect_class(rn->host, v)) {
        /* Not run (the host's redirects ran out, or its time did): its
         * leases keep their validity and are tried again soon. */
        round_reply(n, i, NULL);
        return;
    }
    /* A refused SET IFEQ: the script from now on, on this connection. */
    if (v && c && rlk__round_native(&n->cr.round, i) && rlk__set_ifeq_refused(v))
        rlk__core_drop_caps(c, RLK_CAP_SET_IFEQ);
    round_reply(n, i, v);
    /* Answered where the host's redirects found the slot: the leases
     * follow their slots (renewed there at once). */
    if (v && c && c != n->core) place_all(rn);
}

static const rlk__req_ops renew_ops = {build_renew, on_renew, renew_again, RLK__T_ARRAY};
static const rlk__req_ops renew_native_ops = {build_renew, on_renew, renew_again,
                                              RLK__T_SIMPLE | RLK__T_NULL};

static int64_t reply_deadline(const rlk__renewer *rn)
{
    int64_t t = rlk__host_timeout_ms(rn->host);
    if (t == RLK__DL_DEFAULT) t = RLK__DEFAULT_TIMEOUT_MS;
    return t < 0 ? -1 : rn->now + t;
}

/* The leases of n due for renewal, in one round on n's connection. */
static int send_round(rlk__renewer *rn, rnode *n)
{
    rlk__round *rd = &n->cr.round;
    size_t nreq;
    int eval;
    /* A cluster's node refuses a script whose keys span slots: one call
     * per slot there from the first round. */
    int r = rlk__conn_round_plan(&rn->leases, &n->cr, rn->now, n, n->recheck_all, &rn->script,
                                 (rlk__core_caps(n->core) & RLK_CAP_SET_IFEQ) != 0, cluster_node(n),
                                 &nreq, &eval);
    if (r <= 0) return r == 0 ? RLK_OK : rlk__core_fail(n->core, r, "renew: out of memory");
    int64_t dl = reply_deadline(rn);
    if (dl < 0 || rd->end < dl) dl = rd->end;
    /* A cluster's node that does not answer in time may be frozen while
     * its replica takes over: half the time left is kept to find the new
     * primary and renew there before the leases are reported lost. */
    if (cluster_node(n) && rd->end > rn->now && rn->now + (rd->end - rn->now) / 2 < dl)
        dl = rn->now + (rd->end - rn->now) / 2;
    n->rechecked = 1;
    rn->dl_valid = 0;
    for (size_t i = 0; i < nreq; i++) {
        /* For the slot of its first key (each within one slot on a
         * cluster): the host follows a migration's ASK, or a MOVED, with
         * it, within the round's time. */
        const rlk_request *q = &rd->reqs[i];
        unsigned slot = rlk__keyslot(q->argv[0], q->argvlen ? q->argvlen[0] : strlen(q->argv[0]));
        /* Leases that ask for replicas: WAIT, WAITAOF after it, in one
         * group that a redirect sends again whole. */
        const rlk__req_ops *parts[3] = {rlk__round_native(rd, i) ? &renew_native_ops : &renew_ops};
        int w, a, np = 1;
        acks_of(rd, i, &w, &a);
        if (w) parts[np++] = &wait_ops;
        if (a) parts[np++] = &waitaof_ops;
        r = rlk__host_submit_group(rn->host, slot, np, parts, n, rlk__conn_round_arg(&n->cr, i), dl,
                                   eval ? RLK__REQ_EVAL : 0);
        if (r != RLK_OK) {
            /* Not queued (the connection broke): this one and those
             * after it will not be answered. */
            for (size_t k = i; k < nreq; k++) round_reply(n, k, NULL);
            return r;
        }
    }
    return RLK_OK;
}

/* ------------------------------------------------------------------ */
/* The host's member                                                    */

static int64_t deadline_now(const rlk__renewer *rn)
{
    int64_t next = -1;
    /* A renewal is due when a round can be sent on its connection; a
     * loss to report, always.  After a reconnect every lease there is
     * checked at once (the server may have lost its keys), by the
     * connection's first round. */
    for (const rlk__lease *e = rn->leases.head; e; e = e->next) {
        if (!e->watchdog || e->lost) continue;
        const rnode *n = e->group;
        int send = can_send(n);
        int64_t t = send && !n->rechecked && n->recheck_all ? rn->now
                    : send && !e->inflight && e->renew_at < e->lost_at ? e->renew_at
                                                                         : e->lost_at;
        if (t >= 0 && (next < 0 || t < next)) next = t;
    }
    return next;
}

static int64_t rn_deadline(void *ctx)
{
    rlk__renewer *rn = ctx;
    if (!rn->dl_valid || rn->dl_gen != rn->leases.gen || rn->depth > 0) {
        rn->dl_cache = deadline_now(rn);
        rn->dl_gen = rn->leases.gen;
        rn->dl_valid = rn->depth == 0;
    }
    return rn->dl_cache;
}

/* What is due: a round on every connection that can send one, the
 * losses of leases whose renewal did not come in time. */
static int rn_tick(void *ctx, int64_t now)
{
    rlk__renewer *rn = ctx;
    set_now(rn, now);
    for (rnode *n = rn->nodes; n; n = n->next)
        if (can_send(n)) send_round(rn, n);
    rlk__leases_expire(&rn->leases, rn->now);
    rlk__leases_notify_lost(&rn->leases, 0);
    return RLK_OK;
}

/* A new connection: its first round re-checks every lease there (the
 * server may have lost its keys). */
static void rn_connected(void *ctx, rlk__core *c)
{
    rlk__renewer *rn = ctx;
    rnode *n = node_of(rn, c);
    if (!n) return;
    n->rechecked = 0;
    for (const rlk__lease *e = rn->leases.head; e && !n->recheck_all; e = e->next)
        n->recheck_all = e->group == n;
}

/* The leases whose slot's core was not known when they were added go
 * to the core that is known now. */
static void rn_ready(void *ctx, rlk__core *c)
{
    (void)c;
    place_all(ctx);
}

/* The connection went, after each request owed heard so: a round's
 * requests sent elsewhere after a redirect (or held for a connection)
 * answer later, after the round: it ends here, or no round would follow
 * (its leases are tried again on the next connection while validity
 * lasts). */
static void rn_closed(void *ctx, rlk__core *c)
{
    rlk__renewer *rn = ctx;
    for (rnode *n = rn->nodes; n; n = n->next)
        if (n->core == c) round_abandon(n);
}

static void rn_changed(void *ctx) { place_all(ctx); }

static void rn_enter(void *ctx, int64_t now)
{
    rlk__renewer *rn = ctx;
    rn->depth++;
    set_now(rn, now);
}

static int rn_leave(void *ctx, int status)
{
    rlk__renewer *rn = ctx;
    rn->depth--;
    return status;
}

static const rlk__host_ops renewer_ops = {rn_connected, rn_ready,    rn_closed, rn_changed,
                                          NULL,         NULL,        rn_deadline, rn_tick,
                                          rn_enter,     rn_leave};

/* ------------------------------------------------------------------ */
/* Life                                                                 */

rlk__renewer *rlk__renewer_new(rlk__host *host, const rlk_client_config *timing)
{
    rlk__renewer *rn = rlk__malloc(sizeof *rn);
    if (!rn) return NULL;
    memset(rn, 0, sizeof *rn);
    rn->host = host;
    if (timing) rn->timing = *timing;
    else rlk_client_config_init(&rn->timing);
    if (rlk__leases_init(&rn->leases, &rn->timing) != 0) {
        rlk__free(rn);
        return NULL;
    }
    rn->leases.manual_clock = 1;
    rlk_script_init(&rn->script, rlk__lua_renew, 0);
    if (rlk__host_join(host, &renewer_ops, rn) != RLK_OK) {
        rlk__leases_destroy(&rn->leases);
        rlk__free(rn);
        return NULL;
    }
    return rn;
}

void rlk__renewer_abandon(rlk__renewer *rn)
{
    for (rnode *n = rn->nodes; n; n = n->next) round_abandon(n);
}

void rlk__renewer_free(rlk__renewer *rn)
{
    if (!rn) return;
    rlk__host_part(rn->host, &renewer_ops, rn);
    rlk__renewer_abandon(rn);
    rlk__leases_destroy(&rn->leases);
    while (rn->nodes) {
        rnode *n = rn->nodes;
        rn->nodes = n->next;
        rlk__free(n);
    }
    rlk__free(rn);
}

rlk__leases *rlk__renewer_leases(rlk__renewer *rn) { return &rn->leases; }

void rlk__renewer_add(rlk__renewer *rn, rlk__lease *l)
{
    /* Where its slot is served now (where its acquire was answered):
     * its first renewal is due at its time there, no re-check. */
    l->group = node_of(rn, rlk__host_core_for(rn->host, l->slot));
    rlk__lease_add(&rn->leases, l);
    rn->dl_valid = 0;
}

int rlk__renewer_remove(rlk__renewer *rn, rlk__lease *l)
{
    rn->dl_valid = 0;
    return rlk__lease_unlink(&rn->leases, l);
}
