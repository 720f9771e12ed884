/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The route's kind "sentinel" (route.h): a primary found by asking
 * Redis Sentinels.  Member 0 holds data; members 1 to n-1 are the
 * sentinels of the URL (sentinel_url in url.h), which hold none and are
 * attached to no host.  Before each connect of member 0 (its driver is
 * held, driver.h, again after every connection lost and every failed
 * try), the upkeep asks one sentinel at a time SENTINEL
 * GET-MASTER-ADDR-BY-NAME; the address it names is member 0's next
 * connect's, whose handshake asks ROLE and goes on only on a primary
 * (core.h, require_primary): a sentinel that is down or gives no
 * answer is passed over, one that names a replica costs a failed try.
 * The sentinel that answered is asked first next time, unless the
 * address it named failed: then the one after it.  After a round of
 * sentinels asked in vain, the next waits ROUND_PAUSE_MS.  When every
 * sentinel's connection failed in a way no retry mends (its TLS
 * certificate refused, a wrong password), member 0 fails with that
 * status at once.  A READONLY
 * reply on member 0 (a primary demoted while connected: the host sends
 * the request again, host.h), and a +switch-master message of its name
 * from any sentinel (each connection subscribes: it negotiates RESP3
 * whatever cfg.conn.protocol says, which is the data node's; a sentinel
 * without HELLO, older than Redis 6, is not subscribed to), close its
 * connection, and the sentinels are asked again.  The owner's side
 * connection (a RESP2 wait's listener) is moved to member 0's address
 * whenever member 0 is connected somewhere else, so that it listens on
 * the primary member 0's commands go to.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "sentinel.h"
#include "route.h"
#include "internal.h"
#include "reply.h"
#include "url.h"

#include <stdio.h>
#include <string.h>

#define ROUND_PAUSE_MS 250
/* While no sentinel is connected: how often the upkeep looks again. */
#define IDLE_MS 100

static size_t sentinels(const rlk__route *r) { return r->n - 1; }

/* The sentinel after i (1 to n-1, round). */
static size_t after(const rlk__route *r, size_t i) { return i % sentinels(r) + 1; }

static int build_ask(rlk__core *c, rlk__req *q)
{
    const rlk__route *r = q->ctx;
    const char *argv[3] = {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", r->sn.master};
    return rlk__core_put(c, 3, argv, NULL);
}

static void on_ask(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    rlk__route *r = q->ctx;
    size_t i = (size_t)q->arg;
    rlk__driver *d = r->drivers[0];
    r->sn.asking = 0;
    char host[256];
    int port = rlk__addr_reply(v, host);
    if (port) {
        if (rlk__driver_set_addr(d, host, port) == RLK_OK) {
            r->sn.next = i;
            r->sn.asked = 0;
            r->sn.named = 1;
        }
        return;
    }
    /* Passed over: why, for whoever waits for the primary. */
    const char *peer = r->drivers[i]->t.peer[0] ? r->drivers[i]->t.peer : "?";
    if (!v)
        snprintf(d->err, sizeof d->err, "sentinel %s: no answer", peer);
    else if (rlk__is_error(v))
        snprintf(d->err, sizeof d->err, "sentinel %s: %.*s", peer, (int)(v->len > 200 ? 200 : v->len),
                 v->str);
    else
        snprintf(d->err, sizeof d->err, "sentinel %s: no primary named '%.64s' known", peer,
                 r->sn.master);
    r->sn.next = after(r, i);
    if (++r->sn.asked >= sentinels(r)) {
        r->sn.asked = 0;
        r->sn.round_at = rlk__core_now(c) + ROUND_PAUSE_MS;
    }
}

/* READONLY from member 0 (the primary it reached was demoted under
 * it): its connection goes at the next upkeep (not from within the
 * core's reply), and the sentinels are asked again. */
static rlk__core *sentinel_redirect(rlk__route *r, rlk__core *from, const rlk_resp_value *v,
                                    int *ask)
{
    *ask = 0;
    if (from == r->drivers[0]->core && rlk__reply_class(v) == RLK_EC_READONLY) r->sn.leave = 1;
    return NULL;
}

static const rlk__req_ops ask_ops = {build_ask, on_ask, NULL, RLK__T_ARRAY | RLK__T_NULL};

/* +switch-master: the sentinels promoted a replica.  Within the ten
 * seconds or so before they demote the old primary, it still takes
 * writes, and what is written there the new primary never sees: member
 * 0 leaves it at once. */
#define SWITCH "+switch-master"

/* Each sentinel connection (RESP3: commands and messages on one)
 * listens for the switch as it is ready.  A refusal (an ACL) goes
 * unread: READONLY and lost connections still tell. */
static void sentinel_ready(void *ctx, rlk__core *c)
{
    (void)ctx;
    if (rlk__core_resp3(c)) rlk__core_subscribe(c, 1, 0, SWITCH, NULL, NULL, 0);
}

/* A message "+switch-master NAME OLD-IP OLD-PORT NEW-IP NEW-PORT" of
 * our primary's name. */
static void sentinel_push(void *ctx, rlk__core *c, const rlk_resp_value *v)
{
    rlk__route *r = ctx;
    (void)c;
    const rlk_resp_value *ch = rlk_resp_value_at(v, 1), *msg = rlk_resp_value_at(v, 2);
    size_t n = strlen(r->sn.master);
    if (rlk__str_is(rlk_resp_value_at(v, 0), "message", 7) &&
        rlk__str_is(ch, SWITCH, sizeof SWITCH - 1) && msg && msg->type == RLK_RESP_BULK &&
        msg->len > n && memcmp(msg->str, r->sn.master, n) == 0 && msg->str[n] == ' ')
        r->sn.leave = 1;
}

/* Before a turn: while member 0 waits for an address, a sentinel that
 * is connected is asked for it. */
static int64_t sentinel_upkeep(rlk__route *r, int64_t now)
{
    rlk__driver *d = r->drivers[0];
    if (r->sn.leave) {
        r->sn.leave = 0;
        rlk__driver_close(d);
        d->held = 1;
    }
    /* The owner's side connection (a RESP2 wait's listener, route.h),
     * opened at the primary's address of its time, follows member 0 to
     * the primary it is connected to now: moved here, before the turn
     * polls it, never from within a reply. */
    rlk__driver *sd = r->side;
    if (sd && rlk__core_ready(d->core) && d->url.host && sd->url.host &&
        (sd->url.port != d->url.port || strcmp(sd->url.host, d->url.host) != 0) &&
        rlk__driver_set_addr(sd, d->url.host, d->url.port) == RLK_OK)
        rlk__driver_close(sd);
    if (!d->held || r->sn.asking || r->n < 2) return -1;
    if (r->sn.named) {
        /* The address the last answer named failed (refused, no
         * primary there: fails counts the tries since one served):
         * another sentinel is asked first. */
        r->sn.named = 0;
        if (d->fails > 0) r->sn.next = after(r, r->sn.next);
    }
    if (now < r->sn.round_at) return r->sn.round_at;
    size_t i = r->sn.next;
    for (size_t k = 0; k < sentinels(r); k++, i = after(r, i)) {
        rlk__core *c = r->drivers[i]->core;
        if (!rlk__core_ready(c) || rlk__core_broken(c)) continue;
        rlk__core_clock(c, now);
        if (rlk__core_submit(c, &ask_ops, r, (int64_t)i, RLK__DL_DEFAULT, 0) != RLK_OK) continue;
        r->sn.asking = 1;
        return -1;
    }
    /* None connected: why, for whoever waits for the primary.  When
     * every sentinel failed in a way no retry mends (a certificate
     * refused, a password wrong: their drivers' fatal), member 0 fails
     * so too, at once, instead of waiting out the caller's time. */
    const rlk__driver *s = r->drivers[r->sn.next];
    size_t k = 1;
    while (k < r->n && r->drivers[k]->fatal) k++;
    if (k == r->n) {
        d->fatal = s->fatal;
        snprintf(d->err, sizeof d->err, "no sentinel can be reached (%.100s: %.200s)",
                 s->url.host ? s->url.host : "?", s->err);
        return -1;
    }
    snprintf(d->err, sizeof d->err, "no sentinel connected (%.100s: %.200s)",
             s->url.host ? s->url.host : "?", s->err[0] ? s->err : "connecting");
    r->sn.round_at = now + IDLE_MS;
    return r->sn.round_at;
}

static int64_t sentinel_due(const rlk__route *r)
{
    return r->drivers[0]->held && !r->sn.asking ? r->sn.round_at : -1;
}

static int first_only(const rlk__route *r, size_t i)
{
    (void)r;
    return i == 0;
}

static int sentinel_init(rlk__route *r, const rlk_conn_config *conn)
{
    rlk__sentinel_url su;
    int st;
    char why[512];
    int split = rlk__sentinel_url_split(&su, conn->url, why, sizeof why);
    if (split != RLK_OK) {
        /* The route is made all the same (one member, whose turns fail
         * with the URL's reason). */
        rlk__driver *d = rlk__route_new_driver(r, conn, NULL, 0, &st);
        if (d && split == RLK_ERR_URL) {
            d->fatal = d->url_status = RLK_ERR_URL;
            snprintf(d->err, sizeof d->err, "%s", why);
        }
        snprintf(r->err, sizeof r->err, "%s", why);
        return split;
    }
    rlk_conn_config c = *conn;
    size_t n = strlen(su.master) + 1;
    r->sn.master = rlk__malloc(n);
    if (!r->sn.master) {
        rlk__sentinel_url_free(&su);
        snprintf(r->err, sizeof r->err, "out of memory");
        return RLK_ERR_NOMEM;
    }
    memcpy(r->sn.master, su.master, n);
    r->sn.next = 1;
    c.url = su.data;
    r->cc.require_primary = 1;
    rlk__driver *d = rlk__route_new_driver(r, &c, NULL, 0, &st);
    r->cc.require_primary = 0;
    if (d) d->held = d->ask_each = 1;
    /* The sentinels run no scripts. */
    const rlk__script_library *lib = r->cc.library;
    r->cc.library = NULL;
    rlk__core_hooks hooks;
    memset(&hooks, 0, sizeof hooks);
    hooks.ready = sentinel_ready;
    hooks.push = sentinel_push;
    hooks.ctx = r;
    /* The sentinels' connections negotiate RESP3 (HELLO 3, RESP2 where
     * it is refused) whatever the protocol asked for, which is the data
     * node's: under RESP2 a connection that subscribed could send no
     * SENTINEL command, and +switch-master would go unheard. */
    c.protocol = 0;
    for (size_t i = 0; st == RLK_OK && i < su.n; i++) {
        c.url = su.sentinels[i];
        rlk__driver *s = rlk__route_new_driver(r, &c, NULL, 0, &st);
        if (s && s->core) rlk__core_set_hooks(s->core, &hooks);
    }
    r->cc.library = lib;
    rlk__sentinel_url_free(&su);
    return st;
}

const rlk__route_kind rlk__route_kind_sentinel = {
    "sentinel", rlk__route_cores_of_slot, rlk__route_first_core, sentinel_redirect,
    sentinel_upkeep, sentinel_due, first_only, rlk__route_first_given, sentinel_init, 1,
};
