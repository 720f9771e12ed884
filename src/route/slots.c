/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Redis Cluster's slot table and the readings of its error replies: see
 * slots.h.  A table is built in a new one and put in place only when the
 * whole reply was read, so that a reply refused half way leaves the
 * table the route had.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "slots.h"
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(rlk__slots *t, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->err, sizeof t->err, fmt, ap);
    va_end(ap);
    return status;
}

void rlk__slots_init(rlk__slots *t)
{
    memset(t, 0, sizeof *t);
    memset(t->owner, 0xff, sizeof t->owner);
}

void rlk__slots_free(rlk__slots *t)
{
    rlk__free(t->nodes);
    rlk__slots_init(t);
}

const rlk__node *rlk__slots_owner(const rlk__slots *t, unsigned slot)
{
    if (slot >= RLK__NSLOTS || t->owner[slot] == RLK__SLOTS_NONE) return NULL;
    return &t->nodes[t->owner[slot]];
}

/* ------------------------------------------------------------------ */
/* Reading reply values                                                 */

static int is_str(const rlk_resp_value *v)
{
    return v && (v->type == RLK_RESP_BULK || v->type == RLK_RESP_SIMPLE ||
                 v->type == RLK_RESP_VERBATIM) && v->str;
}

static int str_is(const rlk_resp_value *v, const char *s)
{
    size_t n = strlen(s);
    return is_str(v) && v->len == n && memcmp(v->str, s, n) == 0;
}

/* v's text into out[cap], NUL-terminated: 0, or -1 when it is not a
 * string, holds a NUL, or does not fit. */
static int copy_str(char *out, size_t cap, const rlk_resp_value *v)
{
    if (!is_str(v) || v->len >= cap || memchr(v->str, '\0', v->len)) return -1;
    memcpy(out, v->str, v->len);
    out[v->len] = '\0';
    return 0;
}

static int port_ok(int64_t p)
{
    return p > 0 && p <= 65535;
}

/* Name/value pairs: a RESP3 map, or the RESP2 flat array of them.  The
 * first name, or NULL (*ok 0) when v is neither; walk with ->next->next. */
static const rlk_resp_value *pairs(const rlk_resp_value *v, int *ok)
{
    size_t n = 0;
    *ok = 0;
    if (!v || (v->type != RLK_RESP_MAP && v->type != RLK_RESP_ARRAY)) return NULL;
    for (const rlk_resp_value *e = v->child; e; e = e->next) n++;
    if (n % 2) return NULL;
    *ok = 1;
    return v->child;
}

/* ------------------------------------------------------------------ */
/* Building                                                             */

static rlk__slots *new_table(void)
{
    rlk__slots *n = rlk__malloc(sizeof *n);
    if (n) rlk__slots_init(n);
    return n;
}

/* Puts the table n in t's place (status RLK_OK) or drops it, keeping its
 * reason in t; frees n.  Returns status. */
static int finish(rlk__slots *t, rlk__slots *n, int status)
{
    if (status == RLK_OK) {
        rlk__free(t->nodes);
        memcpy(t, n, sizeof *t);
        t->err[0] = '\0';
    } else {
        memcpy(t->err, n->err, sizeof t->err);
        rlk__free(n->nodes);
    }
    rlk__free(n);
    return status;
}

/* Appends a node: its index, or RLK_ERR_LIMIT / RLK_ERR_NOMEM. */
static int add_node(rlk__slots *t, const rlk__node *x)
{
    if (t->nnodes == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 8;
        rlk__node *p;
        if (t->nnodes >= RLK__SLOTS_MAX_NODES)
            return fail(t, RLK_ERR_LIMIT, "more than %d nodes", RLK__SLOTS_MAX_NODES);
        if (cap > RLK__SLOTS_MAX_NODES) cap = RLK__SLOTS_MAX_NODES;
        p = rlk__realloc(t->nodes, cap * sizeof *p);
        if (!p) return fail(t, RLK_ERR_NOMEM, "out of memory");
        t->nodes = p;
        t->cap = cap;
    }
    t->nodes[t->nnodes] = *x;
    return (int)t->nnodes++;
}

static void blank_node(rlk__node *x)
{
    memset(x, 0, sizeof *x);
    x->repl_offset = -1;
    x->primary = RLK__SLOTS_NONE;
}

/* Where to connect to x, from the endpoint the reply gave (present 0:
 * the reply has no endpoint field).  0, or -1 when it is malformed or
 * does not fit. */
static int set_host(rlk__node *x, int present, const rlk_resp_value *ep, const char *origin)
{
    const char *h = x->ip;
    if (present && ep->type != RLK_RESP_NULL && !is_str(ep)) return -1;
    if (present && is_str(ep) && ep->len > 0 && !str_is(ep, "?"))
        return copy_str(x->host, sizeof x->host, ep);
    /* NULL or "": the server leaves the address to the client, which
     * knows the host it sent the command to.  No endpoint (an old
     * reply), "?" (host names preferred but none announced), or no
     * origin: the IP is the one address known ("" when none). */
    if (present && (ep->type == RLK_RESP_NULL || ep->len == 0) && origin) h = origin;
    if (strlen(h) > RLK__SLOTS_HOST_MAX) return -1;
    strcpy(x->host, h);
    return 0;
}

/* Serves lo..hi from node `who`: 0, or -1 (a reason in t) for a range
 * out of bounds or a slot already served. */
static int serve(rlk__slots *t, int64_t lo, int64_t hi, int who)
{
    if (lo < 0 || hi >= RLK__NSLOTS || lo > hi)
        return fail(t, RLK_ERR_PROTO, "slot range %lld-%lld out of bounds", (long long)lo,
                    (long long)hi);
    for (int64_t s = lo; s <= hi; s++) {
        if (t->owner[s] != RLK__SLOTS_NONE)
            return fail(t, RLK_ERR_PROTO, "slot %lld served twice", (long long)s);
        t->owner[s] = (uint16_t)who;
    }
    return RLK_OK;
}

static int id_known(const rlk__slots *t, const char *id)
{
    for (size_t i = 0; id[0] && i < t->nnodes; i++)
        if (strcmp(t->nodes[i].id, id) == 0) return 1;
    return 0;
}

/* One node of a shard: a map of its fields. */
static int shard_node(rlk__slots *t, const rlk_resp_value *v, const char *origin, rlk__node *x,
                      size_t si)
{
    const rlk_resp_value *ep = NULL;
    int ok, have_ep = 0, have_role = 0;
    blank_node(x);
    const rlk_resp_value *k = pairs(v, &ok);
    if (!ok) return fail(t, RLK_ERR_PROTO, "shard %zu: a node is not a map", si);
    for (; k; k = k->next->next) {
        const rlk_resp_value *val = k->next;
        int bad = 0;
        if (str_is(k, "id")) {
            bad = copy_str(x->id, sizeof x->id, val);
        } else if (str_is(k, "port") || str_is(k, "tls-port")) {
            bad = val->type != RLK_RESP_INTEGER || !port_ok(val->integer);
            if (!bad) *(k->len == 4 ? &x->port : &x->tls_port) = (int)val->integer;
        } else if (str_is(k, "ip")) {
            bad = copy_str(x->ip, sizeof x->ip, val);
        } else if (str_is(k, "endpoint")) {
            have_ep = 1;
            ep = val;
        } else if (str_is(k, "role")) {
            have_role = 1;
            if (str_is(val, "master")) x->role = RLK__ROLE_PRIMARY;
            else if (str_is(val, "replica") || str_is(val, "slave")) x->role = RLK__ROLE_REPLICA;
            else bad = 1;
        } else if (str_is(k, "replication-offset")) {
            bad = val->type != RLK_RESP_INTEGER;
            if (!bad) x->repl_offset = val->integer;
        } else if (str_is(k, "health")) {
            x->health = str_is(val, "online")  ? RLK__HEALTH_ONLINE
                        : str_is(val, "loading") ? RLK__HEALTH_LOADING
                        : str_is(val, "failed") || str_is(val, "fail") ? RLK__HEALTH_FAILED
                        : RLK__HEALTH_UNKNOWN;
        }
        /* Any other field (hostname, availability-zone, what comes
         * later) is not needed to route. */
        if (bad)
            return fail(t, RLK_ERR_PROTO, "shard %zu: node field \"%.*s\" is malformed", si,
                        is_str(k) ? (int)(k->len > 40 ? 40 : k->len) : 1,
                        is_str(k) ? k->str : "?");
    }
    if (!have_role) return fail(t, RLK_ERR_PROTO, "shard %zu: a node without a role", si);
    if (!x->port && !x->tls_port)
        return fail(t, RLK_ERR_PROTO, "shard %zu: node \"%s\" has no port", si, x->id);
    if (set_host(x, have_ep, ep, origin) != 0)
        return fail(t, RLK_ERR_PROTO, "shard %zu: node \"%s\": a malformed endpoint", si, x->id);
    if (id_known(t, x->id))
        return fail(t, RLK_ERR_PROTO, "node \"%s\" listed twice", x->id);
    return RLK_OK;
}

static int read_shard(rlk__slots *t, const rlk_resp_value *shard, const char *origin, size_t si)
{
    const rlk_resp_value *slots = NULL, *nodes = NULL, *k;
    size_t first = t->nnodes, nranges = 0;
    int ok, primary = -1, failed_primary = -1, r;
    for (k = pairs(shard, &ok); k; k = k->next->next) {
        if (str_is(k, "slots")) slots = k->next;
        else if (str_is(k, "nodes")) nodes = k->next;
    }
    if (!ok) return fail(t, RLK_ERR_PROTO, "shard %zu is not a map", si);
    if (!slots || slots->type != RLK_RESP_ARRAY || !nodes || nodes->type != RLK_RESP_ARRAY)
        return fail(t, RLK_ERR_PROTO, "shard %zu: no array of slots and of nodes", si);
    for (const rlk_resp_value *v = nodes->child; v; v = v->next) {
        rlk__node x;
        if ((r = shard_node(t, v, origin, &x, si)) != RLK_OK) return r;
        if ((r = add_node(t, &x)) < 0) return r;
        /* The shard's slots go to its primary: a failed one only when
         * there is no other (a failover not done yet). */
        if (x.role == RLK__ROLE_PRIMARY) {
            if (x.health != RLK__HEALTH_FAILED && primary < 0) primary = r;
            if (x.health == RLK__HEALTH_FAILED && failed_primary < 0) failed_primary = r;
        }
    }
    if (primary < 0) primary = failed_primary;
    for (size_t i = first; i < t->nnodes; i++)
        t->nodes[i].primary = primary < 0 ? RLK__SLOTS_NONE : (uint16_t)primary;
    for (const rlk_resp_value *lo = slots->child; lo; lo = lo->next->next, nranges++) {
        const rlk_resp_value *hi = lo->next;
        if (!hi || lo->type != RLK_RESP_INTEGER || hi->type != RLK_RESP_INTEGER)
            return fail(t, RLK_ERR_PROTO, "shard %zu: slots are not pairs of integers", si);
        if (primary < 0)
            return fail(t, RLK_ERR_PROTO, "shard %zu serves slots but has no primary", si);
        if ((r = serve(t, lo->integer, hi->integer, primary)) != RLK_OK) return r;
    }
    return RLK_OK;
}

int rlk__slots_from_shards(rlk__slots *t, const rlk_resp_value *reply, const char *origin)
{
    rlk__slots *n = new_table();
    int r = RLK_OK;
    size_t si = 0;
    if (!n) return fail(t, RLK_ERR_NOMEM, "out of memory");
    if (!reply || reply->type != RLK_RESP_ARRAY)
        r = fail(n, RLK_ERR_PROTO, "CLUSTER SHARDS: the reply is not an array");
    for (const rlk_resp_value *s = r == RLK_OK ? reply->child : NULL; s && r == RLK_OK;
         s = s->next, si++)
        r = read_shard(n, s, origin, si);
    return finish(t, n, r);
}

/* One node of a CLUSTER SLOTS range: [endpoint, port, id, metadata]
 * (id and metadata absent from old servers). */
static int slots_node(rlk__slots *t, const rlk_resp_value *v, const char *origin, int tls,
                      rlk__node *x, size_t ri)
{
    const rlk_resp_value *ep = rlk_resp_value_at(v, 0), *port = rlk_resp_value_at(v, 1);
    const rlk_resp_value *id = rlk_resp_value_at(v, 2), *meta = rlk_resp_value_at(v, 3), *k;
    int ok = 1;
    blank_node(x);
    if (!v || v->type != RLK_RESP_ARRAY || !port)
        return fail(t, RLK_ERR_PROTO, "range %zu: a node is not [endpoint, port, ...]", ri);
    if (port->type != RLK_RESP_INTEGER || !port_ok(port->integer))
        return fail(t, RLK_ERR_PROTO, "range %zu: a node without a valid port", ri);
    *(tls ? &x->tls_port : &x->port) = (int)port->integer;
    if (id && copy_str(x->id, sizeof x->id, id) != 0)
        return fail(t, RLK_ERR_PROTO, "range %zu: a malformed node id", ri);
    for (k = meta ? pairs(meta, &ok) : NULL; k; k = k->next->next)
        if (str_is(k, "ip") && copy_str(x->ip, sizeof x->ip, k->next) != 0)
            return fail(t, RLK_ERR_PROTO, "range %zu: a malformed ip", ri);
    if (!ok) return fail(t, RLK_ERR_PROTO, "range %zu: node metadata is not a map", ri);
    if (set_host(x, 1, ep, origin) != 0)
        return fail(t, RLK_ERR_PROTO, "range %zu: a malformed endpoint", ri);
    return RLK_OK;
}

/* The node already listed that x is (by id, else by address), or -1. */
static int find_same(const rlk__slots *t, const rlk__node *x)
{
    for (size_t i = 0; i < t->nnodes; i++) {
        const rlk__node *y = &t->nodes[i];
        if (x->id[0] ? strcmp(x->id, y->id) == 0
                     : !y->id[0] && strcmp(x->host, y->host) == 0 && x->port == y->port &&
                           x->tls_port == y->tls_port)
            return (int)i;
    }
    return -1;
}

static int read_range(rlk__slots *t, const rlk_resp_value *range, const char *origin, int tls,
                      size_t ri)
{
    const rlk_resp_value *lo = rlk_resp_value_at(range, 0), *hi = rlk_resp_value_at(range, 1);
    int primary = -1, r;
    size_t pos = 0;
    if (!range || range->type != RLK_RESP_ARRAY || !lo || !hi || !hi->next ||
        lo->type != RLK_RESP_INTEGER || hi->type != RLK_RESP_INTEGER)
        return fail(t, RLK_ERR_PROTO, "range %zu is not [start, end, primary, ...]", ri);
    /* The primary first, then its replicas.  A node of several ranges
     * (slots not contiguous) is listed with each. */
    for (const rlk_resp_value *v = hi->next; v; v = v->next, pos++) {
        rlk__node x;
        if ((r = slots_node(t, v, origin, tls, &x, ri)) != RLK_OK) return r;
        x.role = pos ? RLK__ROLE_REPLICA : RLK__ROLE_PRIMARY;
        r = find_same(t, &x);
        if (r >= 0 && t->nodes[r].role != x.role)
            return fail(t, RLK_ERR_PROTO, "node \"%s\" is a primary and a replica", x.id);
        if (r < 0) {
            x.primary = pos ? (uint16_t)primary : (uint16_t)t->nnodes;
            if ((r = add_node(t, &x)) < 0) return r;
        }
        if (!pos) primary = r;
    }
    return serve(t, lo->integer, hi->integer, primary);
}

int rlk__slots_from_slots(rlk__slots *t, const rlk_resp_value *reply, const char *origin, int tls)
{
    rlk__slots *n = new_table();
    int r = RLK_OK;
    size_t ri = 0;
    if (!n) return fail(t, RLK_ERR_NOMEM, "out of memory");
    if (!reply || reply->type != RLK_RESP_ARRAY)
        r = fail(n, RLK_ERR_PROTO, "CLUSTER SLOTS: the reply is not an array");
    for (const rlk_resp_value *s = r == RLK_OK ? reply->child : NULL; s && r == RLK_OK;
         s = s->next, ri++)
        r = read_range(n, s, origin, tls, ri);
    return finish(t, n, r);
}

int rlk__slots_moved(rlk__slots *t, unsigned slot, const char *host, int port, int tls)
{
    rlk__node x;
    int r = -1;
    if (slot >= RLK__NSLOTS || !port_ok(port) || !host || !host[0] ||
        strlen(host) > RLK__SLOTS_HOST_MAX)
        return fail(t, RLK_ERR_INVALID, "MOVED to slot %u at \"%s\" port %d", slot,
                    host ? host : "", port);
    for (size_t i = 0; i < t->nnodes && r < 0; i++) {
        rlk__node *y = &t->nodes[i];
        if ((tls ? y->tls_port : y->port) == port &&
            (strcmp(y->host, host) == 0 || strcmp(y->ip, host) == 0)) {
            r = (int)i;
            /* It serves a slot: promoted since the table was built. */
            if (y->role == RLK__ROLE_REPLICA) {
                y->role = RLK__ROLE_PRIMARY;
                y->primary = (uint16_t)i;
            }
        }
    }
    if (r < 0) {
        blank_node(&x);
        strcpy(x.host, host);
        *(tls ? &x.tls_port : &x.port) = port;
        x.primary = (uint16_t)t->nnodes;
        if ((r = add_node(t, &x)) < 0) return r;
    }
    t->owner[slot] = (uint16_t)r;
    return r;
}

/* ------------------------------------------------------------------ */
/* Redirects                                                            */

/* Decimal digits s[0..n), at most max_digits of them: the value, or -1. */
static long digits(const char *s, size_t n, size_t max_digits)
{
    long v = 0;
    if (n == 0 || n > max_digits) return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

int rlk__parse_redirect(const char *msg, size_t len, const char *origin, rlk__redirect *r)
{
    const char *sp, *hp, *colon = NULL, *end = msg + len;
    size_t i, hn;
    long slot, port;
    memset(r, 0, sizeof *r);
    if (!msg) return -1;
    if (len > 6 && memcmp(msg, "MOVED ", 6) == 0) i = 6;
    else if (len > 4 && memcmp(msg, "ASK ", 4) == 0) i = 4, r->ask = 1;
    else return -1;
    sp = memchr(msg + i, ' ', len - i);
    if (!sp || (slot = digits(msg + i, (size_t)(sp - msg) - i, 5)) < 0 || slot >= RLK__NSLOTS)
        return -1;
    /* host:port, the port after the last colon (an IPv6 address has
     * colons of its own). */
    hp = sp + 1;
    for (const char *p = hp; p < end; p++)
        if (*p == ':') colon = p;
    if (!colon || (port = digits(colon + 1, (size_t)(end - colon - 1), 5)) < 0 || !port_ok(port))
        return -1;
    hn = (size_t)(colon - hp);
    if (hn >= 2 && hp[0] == '[' && hp[hn - 1] == ']') {
        hp++;
        hn -= 2;
    }
    for (i = 0; i < hn; i++)
        if ((unsigned char)hp[i] <= ' ' || hp[i] == 0x7f) return -1;
    if (hn == 0) {
        /* The spec's "MOVED 3999 :6381": the host of the node that
         * answered. */
        hp = origin ? origin : "";
        hn = strlen(hp);
    }
    if (hn > RLK__SLOTS_HOST_MAX) return -1;
    memcpy(r->host, hp, hn);
    r->host[hn] = '\0';
    r->slot = (unsigned)slot;
    r->port = (int)port;
    return 0;
}
