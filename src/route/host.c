/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The primitive host (see host.h).
 *
 * Each routed request lives in a record (hreq) from the host's pool, so
 * that the steady path allocates nothing: the records freed are kept
 * for the next requests.  A record is sent to the core as one core
 * request per part, its context the record and its arg the part's index,
 * through the record's own ops (wrap_*), which call the caller's with
 * the caller's context: so the core can send a part again as EVAL after
 * NOSCRIPT without the host, and the host can send the whole again after
 * a redirect without the caller.  A group's earlier parts' replies are
 * copied into the record's arena (a small buffer of its own first), as
 * they live only during the core's call, and given with the last part's.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "host.h"
#include "internal.h"
#include "reply.h"
#include "retry.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { R_HELD, R_SENT };

typedef struct hreq hreq;
struct hreq {
    hreq *next;                 /* on the held list, or the pool */
    hreq *aprev, *anext;        /* every record not in the pool */
    rlk__host *h;
    rlk__req_ops wops[RLK__HOST_PARTS]; /* the core's view of each part */
    const rlk__req_ops *parts[RLK__HOST_PARTS];
    int n;
    void *ctx;
    int64_t args[RLK__HOST_PARTS]; /* the caller's arg, as each build left it */
    int64_t deadline;           /* the caller's (RLK__DL_DEFAULT or absolute) */
    int64_t first_dl;           /* the first sending's reply deadline (-1: none) */
    int64_t bound;              /* no sending after (-1: none known yet) */
    int flags;
    unsigned slot;
    int state;
    int owed;                   /* parts of this sending not answered yet */
    int lost;                   /* a part's reply will not come */
    int dead;                   /* a submit failed: its replies are dropped */
    int dead_status;            /* ... and then the caller hears this (0: not) */
    int redirected;             /* a part's reply of this sending was one */
    int moved;                  /* ... a MOVED or ASK (else a refusal) */
    int redirs;                 /* MOVED and ASK followed */
    int asks;                   /* ... of them ASK */
    int paced;
    int64_t go_at;              /* not sent before (-1: at once) */
    rlk__core *to;              /* the next sending goes here (NULL: the slot's) */
    rlk__core *last;            /* the last sending went here (NULL: none yet) */
    int ask;                    /* ... after ASKING */
    rlk__backoff pace;
    rlk_resp_arena arena;       /* the kept replies */
    rlk_resp_value *kept[RLK__HOST_PARTS];
    unsigned char missing[RLK__HOST_PARTS]; /* the parts' rlk__req.missing */
    int kept_over;              /* a reply did not fit the bound */
    unsigned char buf[256];
};

typedef struct hnode {
    struct hnode *next;
    rlk__host *h;
    rlk__core *core;
} hnode;

typedef struct member {
    const rlk__host_ops *ops;   /* NULL: parted */
    void *ctx;
} member;

/* A subscription (on) or an unsubscribe on its way.  A subscription
 * takes its channel's messages on its core from its sending until it
 * ends (live); its record goes when it has ended and its answer came. */
typedef struct hsub hsub;
struct hsub {
    hsub *next;
    rlk__host *h;
    rlk__core *core;
    const rlk__req_ops *ops;    /* the caller's: its reply */
    rlk__req_ops wops;          /* the core's view */
    rlk__host_msg_fn on_msg;
    void *ctx;                  /* NULL: its subscriber parted */
    int64_t arg;
    int live;                   /* takes its channel's messages */
    int owed;                   /* its answer has not come */
    size_t len;
    char ch[];
};

struct rlk__host {
    rlk__host_topo topo;
    int routed;
    hnode *nodes;
    rlk__core *only;            /* without a topology: the core attached */
    member *members;
    size_t nmembers, cap;
    int depth;
    int parted;                 /* members to compact at the outermost leave */
    hreq *held, *held_tail;
    hreq *all;                  /* every record held or in flight */
    size_t nheld;
    hreq *pool;
    size_t npool;
    hsub *subs;
    int pumping, pump_again;
    rlk__core *turning;         /* the core whose call is under way */
    int64_t now;
    uint64_t seed;
    /* Of the reply callback under way. */
    int why;
    int cur_redirs;
    /* The replies of the group being delivered (NULL: none). */
    rlk_resp_value *const *cur_vals;
    int cur_n;
    char msg[320];
};

/* Records kept for reuse: enough for a few requests in flight at once
 * each, not so many that an idle client keeps much. */
#define POOL_MAX 8

static void set_now(rlk__host *h, int64_t now)
{
    if (now > h->now) h->now = now;
}

static int64_t now_of(rlk__host *h, rlk__core *c)
{
    if (c) set_now(h, rlk__core_now(c));
    return h->now;
}

/* ------------------------------------------------------------------ */
/* Members                                                              */

#define EACH(h, i, m) \
    for (size_t i = 0; i < (h)->nmembers; i++) \
        for (member *m = &(h)->members[i]; m && m->ops; m = NULL)

static void enter(rlk__host *h, int64_t now)
{
    set_now(h, now);
    h->depth++;
    EACH(h, i, m) if (m->ops->enter) m->ops->enter(m->ctx, now);
}

static void compact(rlk__host *h)
{
    size_t k = 0;
    for (size_t i = 0; i < h->nmembers; i++)
        if (h->members[i].ops) h->members[k++] = h->members[i];
    h->nmembers = k;
    h->parted = 0;
}

static int leave(rlk__host *h, int status)
{
    EACH(h, i, m) if (m->ops->leave) status = m->ops->leave(m->ctx, status);
    if (--h->depth == 0 && h->parted) compact(h);
    return status;
}

int rlk__host_join(rlk__host *h, const rlk__host_ops *ops, void *ctx)
{
    if (!ops) return RLK_ERR_INVALID;
    EACH(h, i, m) if (m->ops == ops && m->ctx == ctx) return RLK_ERR_INVALID;
    if (h->nmembers == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 2;
        member *n = rlk__realloc(h->members, cap * sizeof *n);
        if (!n) return RLK_ERR_NOMEM;
        h->members = n;
        h->cap = cap;
    }
    h->members[h->nmembers++] = (member){ops, ctx};
    return RLK_OK;
}

static void subs_sweep(rlk__host *h);

void rlk__host_part(rlk__host *h, const rlk__host_ops *ops, void *ctx)
{
    EACH(h, i, m) if (m->ops == ops && m->ctx == ctx) {
        m->ops = NULL;
        h->parted = 1;
    }
    if (!h->depth && h->parted) compact(h);
    for (hsub *u = h->subs; u; u = u->next)
        if (u->ctx == ctx) {
            u->ctx = NULL;
            u->live = 0;
        }
    subs_sweep(h);
}

/* ------------------------------------------------------------------ */
/* Records                                                              */

static hreq *rec_new(rlk__host *h)
{
    hreq *r = h->pool;
    if (r) {
        h->pool = r->next;
        h->npool--;
    } else if (!(r = rlk__malloc(sizeof *r))) {
        return NULL;
    }
    memset(r, 0, offsetof(hreq, buf));
    r->h = h;
    r->anext = h->all;
    if (h->all) h->all->aprev = r;
    h->all = r;
    r->go_at = -1;
    r->bound = -1;
    rlk_resp_arena_init(&r->arena, r->buf, sizeof r->buf, RLK__HOST_KEPT);
    return r;
}

static void rec_free(rlk__host *h, hreq *r)
{
    if (r->aprev) r->aprev->anext = r->anext;
    else h->all = r->anext;
    if (r->anext) r->anext->aprev = r->aprev;
    rlk_resp_arena_free(&r->arena);
    if (h->npool < POOL_MAX) {
        r->next = h->pool;
        h->pool = r;
        h->npool++;
    } else {
        rlk__free(r);
    }
}

static void hold(rlk__host *h, hreq *r)
{
    r->state = R_HELD;
    r->next = NULL;
    if (h->held_tail) h->held_tail->next = r;
    else h->held = r;
    h->held_tail = r;
    h->nheld++;
}

static void unhold(rlk__host *h, hreq *r, hreq *prev)
{
    if (prev) prev->next = r->next;
    else h->held = r->next;
    if (h->held_tail == r) h->held_tail = prev;
    h->nheld--;
    r->next = NULL;
}

/* A copy of v (its attributes left out: no caller reads them) in a, or
 * NULL when it does not fit. */
static rlk_resp_value *copy_value(rlk_resp_arena *a, const rlk_resp_value *v)
{
    rlk_resp_value *c = rlk_resp_arena_alloc(a, sizeof *c);
    if (!c) return NULL;
    *c = *v;
    c->attr = c->child = c->next = NULL;
    if (v->str) {
        char *s = rlk_resp_arena_alloc(a, v->len + 1);
        if (!s) return NULL;
        memcpy(s, v->str, v->len);
        s[v->len] = '\0';
        c->str = s;
    }
    rlk_resp_value **tail = &c->child;
    for (const rlk_resp_value *e = v->child; e; e = e->next) {
        if (!(*tail = copy_value(a, e))) return NULL;
        tail = &(*tail)->next;
    }
    return c;
}

/* An error reply of text msg in r's arena (NULL: it did not fit). */
static rlk_resp_value *error_value(hreq *r, const char *msg)
{
    rlk_resp_value v;
    memset(&v, 0, sizeof v);
    v.type = RLK_RESP_ERROR;
    v.str = msg;
    v.len = strlen(msg);
    return copy_value(&r->arena, &v);
}

/* ------------------------------------------------------------------ */
/* The core's view of a part                                            */

static rlk__req inner(const hreq *r, const rlk__req *q)
{
    rlk__req iq = *q;
    iq.ops = r->parts[q->arg];
    iq.ctx = r->ctx;
    iq.arg = r->args[q->arg];
    return iq;
}

static int wrap_build(rlk__core *c, rlk__req *q)
{
    hreq *r = q->ctx;
    rlk__req iq = inner(r, q);
    int st = iq.ops->build(c, &iq);
    /* What build set (a script call's form) is the core's to keep; the
     * arg it chose (a form of the command) is the caller's, given with
     * the reply. */
    const rlk__req_ops *ops = q->ops;
    int64_t arg = q->arg;
    r->args[arg] = iq.arg;
    *q = iq;
    q->ops = ops;
    q->ctx = r;
    q->arg = arg;
    return st;
}

static int wrap_again(rlk__core *c, const rlk__req *q)
{
    const hreq *r = q->ctx;
    if (!r->parts[q->arg]->again) return 1;
    rlk__req iq = inner(r, q);
    return r->parts[q->arg]->again(c, &iq);
}

static void wrap_reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v);

static int build_asking(rlk__core *c, rlk__req *q)
{
    (void)q;
    const char *argv[1] = {"ASKING"};
    return rlk__core_put(c, 1, argv, NULL);
}

static void on_asking(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    (void)c;
    (void)q;
    (void)v; /* refused: the request after it is answered ASK or MOVED again */
}

static const rlk__req_ops asking_ops = {build_asking, on_asking, NULL, RLK__T_ANY};

/* ------------------------------------------------------------------ */
/* Sending                                                              */

/* The reply deadline of a sending of r to c, which also fixes r's
 * bound at its first sending when the caller gave none. */
static int64_t sending_deadline(hreq *r, rlk__core *c)
{
    if (r->first_dl >= 0) {
        int64_t f = r->first_dl;
        r->first_dl = -1;
        if (r->deadline != RLK__DL_DEFAULT && (r->deadline < 0 || f < r->deadline)) return f;
    }
    if (r->deadline == RLK__DL_DEFAULT) {
        if (r->bound < 0) r->bound = rlk__core_reply_deadline(c);
        return r->bound >= 0 ? r->bound : -1;
    }
    int64_t dl = rlk__core_reply_deadline(c);
    if (r->deadline < 0) return dl;
    return dl < 0 || r->deadline < dl ? r->deadline : dl;
}

/* Sends r's parts to c: RLK_OK, or the failure of a part's submit (r is
 * then dead: the parts queued before it are dropped as answered). */
static int send_to(hreq *r, rlk__core *c)
{
    int64_t dl = sending_deadline(r, c);
    r->state = R_SENT;
    r->owed = r->lost = r->redirected = r->moved = r->kept_over = 0;
    rlk_resp_arena_free(&r->arena);
    memset(r->kept, 0, sizeof r->kept);
    memset(r->missing, 0, sizeof r->missing);
    int ask = r->ask;
    r->ask = 0;
    r->to = NULL;
    r->go_at = -1;
    r->last = c;
    for (int i = 0; i < r->n; i++) {
        int st = RLK_OK;
        /* ASKING holds for the one command after it. */
        if (ask) st = rlk__core_submit(c, &asking_ops, NULL, 0, dl, 0);
        if (st == RLK_OK) st = rlk__core_submit(c, &r->wops[i], r, i, dl, r->flags);
        if (st != RLK_OK) {
            r->dead = 1;
            return st;
        }
        r->owed++;
    }
    return RLK_OK;
}

/* The core r goes to next (NULL: none ready yet). */
static rlk__core *target(rlk__host *h, hreq *r)
{
    rlk__core *c = r->to ? r->to : rlk__host_core_for(h, r->slot);
    return c && rlk__core_ready(c) && !rlk__core_broken(c) ? c : NULL;
}

/* Gives every part of r its reply: vals[i] (NULL: none will come), from
 * c (NULL: no core answered; why and h->msg say why then), and frees r. */
static void deliver(rlk__host *h, hreq *r, rlk__core *c, rlk_resp_value *const *vals, int why)
{
    int saved_why = h->why, saved_redirs = h->cur_redirs, saved_n = h->cur_n;
    rlk_resp_value *const *saved_vals = h->cur_vals;
    h->cur_vals = vals;
    h->cur_n = r->n;
    for (int i = 0; i < r->n; i++) {
        rlk__req q;
        memset(&q, 0, sizeof q);
        q.ops = r->parts[i];
        q.ctx = r->ctx;
        q.arg = r->args[i];
        q.deadline = r->deadline;
        q.missing = r->missing[i];
        h->why = why;
        h->cur_redirs = r->redirs;
        if (q.ops->reply) q.ops->reply(c, &q, vals ? vals[i] : NULL);
    }
    h->why = saved_why;
    h->cur_redirs = saved_redirs;
    h->cur_vals = saved_vals;
    h->cur_n = saved_n;
    rec_free(h, r);
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static void fail_req(rlk__host *h, hreq *r, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->msg, sizeof h->msg, fmt, ap);
    va_end(ap);
    deliver(h, r, NULL, NULL, status);
}

/* A re-send of r (to c) failed: the caller hears it, once the parts
 * that went before the failure are answered. */
static void resend_failed(rlk__host *h, hreq *r, rlk__core *c, int st)
{
    if (r->owed) {
        r->dead_status = st;
        snprintf(h->msg, sizeof h->msg, "%s", rlk__core_errmsg(c));
        return;
    }
    fail_req(h, r, st, "%s", *rlk__core_errmsg(c) ? rlk__core_errmsg(c) : "could not be sent again");
}

/* Sends r now if it can go (its core ready, its pause over), else holds
 * it. */
static void go_or_hold(rlk__host *h, hreq *r)
{
    rlk__core *c = r->go_at < 0 || r->go_at <= h->now ? target(h, r) : NULL;
    if (!c) {
        hold(h, r);
        return;
    }
    int st = send_to(r, c);
    if (st != RLK_OK) resend_failed(h, r, c, st);
}

static int64_t bound_of(const hreq *r) { return r->deadline >= 0 ? r->deadline : r->bound; }

void rlk__host_bound(rlk__host *h, const void *ctx, int64_t deadline)
{
    if (deadline < 0) return;
    for (hreq *r = h->all; r; r = r->anext) {
        if (r->ctx != ctx) continue;
        int64_t end = bound_of(r);
        if (end < 0 || deadline < end) r->deadline = deadline;
    }
}

/* Held requests that can go now go; those past their bound end. */
static void pump(rlk__host *h)
{
    if (h->pumping) {
        h->pump_again = 1; /* a callback of this walk changed what can go */
        return;
    }
    h->pumping = 1;
    do {
        h->pump_again = 0;
        hreq *prev = NULL, *r = h->held;
        while (r) {
            hreq *next = r->next;
            int64_t end = bound_of(r);
            rlk__core *c = NULL;
            if (end >= 0 && h->now >= end) {
                unhold(h, r, prev);
                if (r->go_at >= 0)
                    fail_req(h, r, RLK_ERR_TIMEOUT, "slot %u: refused until the deadline", r->slot);
                else
                    fail_req(h, r, RLK_ERR_TIMEOUT, "slot %u: no connection ready in time", r->slot);
            } else if ((r->go_at < 0 || r->go_at <= h->now) && (c = target(h, r)) != NULL) {
                unhold(h, r, prev);
                int st = send_to(r, c);
                if (st != RLK_OK) resend_failed(h, r, c, st);
            } else {
                prev = r;
            }
            r = next;
        }
    } while (h->pump_again);
    h->pumping = 0;
}

/* ------------------------------------------------------------------ */
/* Replies                                                              */

static rlk__core *topo_redirect(rlk__host *h, rlk__core *from, const rlk_resp_value *v, int *ask);

int rlk__host_redirect_class(const rlk__host *h, const rlk_resp_value *v)
{
    if (!h->routed || !v || !rlk__is_error(v)) return 0;
    rlk_error_class ec = rlk__reply_class(v);
    return ec == RLK_EC_MOVED || ec == RLK_EC_ASK || ec == RLK_EC_TRYAGAIN ||
                   ec == RLK_EC_CLUSTERDOWN || (ec == RLK_EC_READONLY && h->topo.readonly_follows)
               ? (int)ec
               : 0;
}

/* r's sending was redirected: whether it goes again (then held or sent),
 * else its last replies are the answer. */
static int follow(rlk__host *h, hreq *r)
{
    int64_t end = bound_of(r);
    if (end >= 0 && h->now >= end) return 0;
    if (r->moved) {
        if (r->redirs > RLK__HOST_REDIRECTS) return 0;
    } else {
        /* TRYAGAIN (a multi-key command while its slot migrates),
         * CLUSTERDOWN (the slot not served for now): again after a
         * pause that grows; one that would end past the bound is not
         * taken, and the refusal is the answer now, not at the bound. */
        if (!r->paced) {
            rlk__backoff_init(&r->pace, 0, 0, (uint64_t)(uintptr_t)r ^ (uint64_t)h->now ^ ++h->seed);
            r->paced = 1;
        }
        r->go_at = h->now + rlk__backoff_next(&r->pace);
        if (end >= 0 && r->go_at >= end) return 0;
    }
    go_or_hold(h, r);
    return 1;
}

static void wrap_reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    hreq *r = q->ctx;
    rlk__host *h = r->h;
    int part = (int)q->arg;
    now_of(h, c);
    r->owed--;
    if (r->dead) {
        if (r->owed) return;
        if (r->dead_status) deliver(h, r, NULL, NULL, r->dead_status);
        else rec_free(h, r);
        return;
    }
    r->missing[part] = q->missing;
    if (!v) r->lost = 1;
    int ec = rlk__host_redirect_class(h, v);
    if (ec && !r->redirected) {
        r->redirected = 1;
        r->moved = ec == RLK_EC_MOVED || ec == RLK_EC_ASK;
        if (r->moved) {
            r->redirs++;
            r->asks += ec == RLK_EC_ASK;
            int ask = 0;
            rlk__core *to = topo_redirect(h, c, v, &ask);
            /* MOVED: the slot's core as the table now says (patched). */
            r->to = ask ? to : NULL;
            r->ask = ask && to;
        } else if (ec == RLK_EC_READONLY) {
            int ask = 0;
            topo_redirect(h, c, v, &ask); /* the topology looks for the primary */
        }
    }
    if (part < r->n - 1) {
        if (v && !r->kept_over && !(r->kept[part] = copy_value(&r->arena, v))) r->kept_over = 1;
        return;
    }
    if (r->lost) {
        deliver(h, r, c, NULL, RLK_OK);
        return;
    }
    if (r->redirected && follow(h, r)) return;
    if (r->kept_over) {
        fail_req(h, r, RLK_ERR_LIMIT, "a group's replies need more than %u bytes",
                 (unsigned)RLK__HOST_KEPT);
        return;
    }
    rlk_resp_value *vals[RLK__HOST_PARTS];
    for (int i = 0; i < r->n - 1; i++) vals[i] = r->kept[i];
    vals[r->n - 1] = (rlk_resp_value *)v;
    if (r->redirected && r->moved && r->redirs > RLK__HOST_REDIRECTS) {
        /* The part redirected hears that it was a loop, not a node's one
         * answer. */
        for (int i = 0; i < r->n; i++) {
            if (!rlk__host_redirect_class(h, vals[i])) continue;
            char m[300];
            snprintf(m, sizeof m,
                     "a redirect loop (more than %d MOVED%s in a row: the slot's nodes name "
                     "each other), the last: %.*s",
                     RLK__HOST_REDIRECTS, r->asks ? " or ASK" : "",
                     (int)(vals[i]->len > 160 ? 160 : vals[i]->len),
                     vals[i]->str);
            rlk_resp_value *e = error_value(r, m);
            if (e) vals[i] = e;
            break;
        }
    }
    deliver(h, r, c, vals, RLK_OK);
}

/* ------------------------------------------------------------------ */
/* Submitting                                                           */

int rlk__host_submit_group(rlk__host *h, unsigned slot, int n, const rlk__req_ops *const *parts,
                           void *ctx, int64_t arg, int64_t deadline, int flags)
{
    return rlk__host_submit_first(h, slot, n, parts, ctx, arg, -1, deadline, flags);
}

int rlk__host_submit_first(rlk__host *h, unsigned slot, int n, const rlk__req_ops *const *parts,
                           void *ctx, int64_t arg, int64_t first_dl, int64_t deadline, int flags)
{
    if (n < 1 || n > RLK__HOST_PARTS) return RLK_ERR_INVALID;
    for (int i = 0; i < n; i++)
        if (!parts[i] || !parts[i]->build) return RLK_ERR_INVALID;
    hreq *r = rec_new(h);
    if (!r) {
        /* As the core's own submit: out of memory breaks the core the
         * request was for, when it is connected, so that its owner
         * hears of it (a connection closed, the requests owed answered)
         * instead of waiting for a reply to a request never sent. */
        rlk__core *c = rlk__host_core_for(h, slot);
        if (c && rlk__core_connected_now(c) && !rlk__core_broken(c))
            rlk__core_fail(c, RLK_ERR_NOMEM, "out of memory");
        return RLK_ERR_NOMEM;
    }
    r->n = n;
    for (int i = 0; i < n; i++) {
        r->parts[i] = parts[i];
        r->wops[i] = (rlk__req_ops){wrap_build, wrap_reply, wrap_again, parts[i]->expect};
    }
    r->ctx = ctx;
    for (int i = 0; i < n; i++) r->args[i] = arg;
    r->deadline = deadline;
    r->first_dl = first_dl;
    r->flags = flags;
    r->slot = slot;
    rlk__core *c = target(h, r);
    if (!c) {
        hold(h, r);
        return RLK_OK;
    }
    now_of(h, c);
    int st = send_to(r, c);
    /* A failure here is the caller's, its callbacks never called. */
    if (st != RLK_OK && !r->owed) rec_free(h, r);
    return st;
}

int rlk__host_submit(rlk__host *h, unsigned slot, const rlk__req_ops *ops, void *ctx, int64_t arg,
                     int64_t deadline, int flags)
{
    return rlk__host_submit_group(h, slot, 1, &ops, ctx, arg, deadline, flags);
}

int rlk__host_why(const rlk__host *h, const char **msg)
{
    if (msg) *msg = h->why ? h->msg : "";
    return h->why;
}

int rlk__host_redirects(const rlk__host *h) { return h->cur_redirs; }

const rlk_resp_value *rlk__host_part_reply(const rlk__host *h, int k)
{
    if (k < 0) k += h->cur_n;
    return h->cur_vals && k >= 0 && k < h->cur_n ? h->cur_vals[k] : NULL;
}

rlk__core *rlk__host_core_for(rlk__host *h, unsigned slot)
{
    if (!h->routed) return h->only;
    return h->topo.core_for ? h->topo.core_for(h->topo.ctx, slot) : NULL;
}

void rlk__host_clock(rlk__host *h, int64_t now)
{
    set_now(h, now);
    for (hnode *n = h->nodes; n; n = n->next) rlk__core_clock(n->core, h->now);
}

int rlk__host_routed(const rlk__host *h) { return h->routed; }

int64_t rlk__host_timeout_ms(const rlk__host *h)
{
    const hnode *n = h->nodes;
    while (n && n->next) n = n->next; /* the first attached */
    return n ? rlk__core_timeout_ms(n->core) : RLK__DL_DEFAULT;
}
size_t rlk__host_held(const rlk__host *h) { return h->nheld; }

int64_t rlk__host_due(const rlk__host *h)
{
    int64_t due = -1;
    for (const hreq *r = h->held; r; r = r->next) {
        /* A pause over waits for its core's ready, not for a time. */
        int64_t end = bound_of(r);
        int64_t t = r->go_at > h->now && (end < 0 || r->go_at < end) ? r->go_at : end;
        if (t >= 0 && (due < 0 || t < due)) due = t;
    }
    return due;
}

/* ------------------------------------------------------------------ */
/* The cores' hooks                                                     */

static void on_connected(void *ctx, rlk__core *c)
{
    rlk__host *h = ((hnode *)ctx)->h;
    now_of(h, c);
    EACH(h, i, m) if (m->ops->connected) m->ops->connected(m->ctx, c);
}

static void on_ready(void *ctx, rlk__core *c)
{
    rlk__host *h = ((hnode *)ctx)->h;
    now_of(h, c);
    /* The primitives first (what they send at a handshake's end goes
     * before what waited), then what waited for this core. */
    EACH(h, i, m) if (m->ops->ready) m->ops->ready(m->ctx, c);
    pump(h);
}

static void on_closed(void *ctx, rlk__core *c)
{
    rlk__host *h = ((hnode *)ctx)->h;
    now_of(h, c);
    /* A request sent before and held to go again to c (after TRYAGAIN,
     * CLUSTERDOWN, a MOVED or ASK there), and without a topology every
     * request held for c (its handshake not done yet), ends with c's
     * connection, as the requests c owed do: its caller hears that no
     * reply will come (a host over one core ends everything at a close). */
    hreq *prev = NULL, *r = h->held;
    while (r) {
        hreq *next = r->next;
        rlk__core *to = r->to ? r->to : rlk__host_core_for(h, r->slot);
        if ((r->last || !h->routed) && to == c) {
            unhold(h, r, prev);
            deliver(h, r, c, NULL, RLK_OK);
        } else {
            prev = r;
        }
        r = next;
    }
    /* c's subscriptions went with its connection (their answers owed
     * have come, NULL, before this hook). */
    for (hsub *u = h->subs; u; u = u->next)
        if (u->core == c) u->live = 0;
    subs_sweep(h);
    EACH(h, i, m) if (m->ops->closed) m->ops->closed(m->ctx, c);
}

static void on_push(void *ctx, rlk__core *c, const rlk_resp_value *v)
{
    rlk__host *h = ((hnode *)ctx)->h;
    now_of(h, c);
    /* A message on a channel subscribed through the host goes to its
     * subscriber alone; so does the server's own SUNSUBSCRIBE of it (a
     * sharded channel whose slot moved), which ends the subscription. */
    const rlk_resp_value *kind = rlk_resp_value_at(v, 0), *ch = rlk_resp_value_at(v, 1);
    int ends = rlk__str_is(kind, "sunsubscribe", 12);
    if (ch && (ends || rlk__str_is(kind, "message", 7) || rlk__str_is(kind, "smessage", 8))) {
        int taken = 0;
        for (hsub *u = h->subs; u; u = u->next) {
            if (!u->live || u->core != c || !rlk__str_is(ch, u->ch, u->len)) continue;
            if (ends) u->live = 0;
            if (u->on_msg) u->on_msg(u->ctx, c, v);
            taken = 1;
        }
        if (ends) subs_sweep(h);
        if (taken) return;
    }
    EACH(h, i, m) if (m->ops->push) m->ops->push(m->ctx, c, v);
}

static int64_t on_deadline(void *ctx)
{
    rlk__host *h = ((hnode *)ctx)->h;
    int64_t due = rlk__host_due(h);
    EACH(h, i, m) if (m->ops->deadline) {
        int64_t t = m->ops->deadline(m->ctx);
        if (t >= 0 && (due < 0 || t < due)) due = t;
    }
    return due;
}

static int on_tick(void *ctx, int64_t now)
{
    rlk__host *h = ((hnode *)ctx)->h;
    set_now(h, now);
    pump(h);
    int first = RLK_OK;
    EACH(h, i, m) if (m->ops->tick) {
        int st = m->ops->tick(m->ctx, now);
        if (first == RLK_OK) first = st;
    }
    return first;
}

static void on_enter(void *ctx, int64_t now)
{
    hnode *n = ctx;
    if (!n->h->depth) n->h->turning = n->core;
    enter(n->h, now);
}

static int on_leave(void *ctx, int status)
{
    hnode *n = ctx;
    status = leave(n->h, status);
    if (!n->h->depth) n->h->turning = NULL;
    return status;
}

rlk__core *rlk__host_turning(const rlk__host *h) { return h->turning; }

/* v, a reply of from that no routed request carried (a
 * subscription's), is MOVED or ASK: the topology's answer (a MOVED
 * patches its table); NULL, *ask 0 without a topology. */
static rlk__core *topo_redirect(rlk__host *h, rlk__core *from, const rlk_resp_value *v, int *ask)
{
    *ask = 0;
    if (!h->routed || !h->topo.redirect) return NULL;
    return h->topo.redirect(h->topo.ctx, from, v, ask);
}

/* ------------------------------------------------------------------ */
/* Subscriptions                                                        */

/* The records that have ended and been answered go. */
static void subs_sweep(rlk__host *h)
{
    hsub **p = &h->subs;
    while (*p) {
        hsub *u = *p;
        if (!u->live && !u->owed) {
            *p = u->next;
            rlk__free(u);
        } else {
            p = &u->next;
        }
    }
}

static void sub_reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    hsub *u = q->ctx;
    rlk__host *h = u->h;
    now_of(h, c);
    u->owed = 0;
    int moved = 0;
    if (!v || rlk__is_error(v)) {
        u->live = 0; /* refused, or its connection went */
        if (v) {
            rlk_error_class ec = rlk__reply_class(v);
            moved = ec == RLK_EC_MOVED || ec == RLK_EC_ASK;
        }
    }
    if (moved) {
        /* The channel's slot moved: the topology hears it (a MOVED
         * patches its table), the subscriber sees the refusal, then
         * every primitive follows the table. */
        int ask;
        topo_redirect(h, c, v, &ask);
    }
    if (u->ctx && u->ops && u->ops->reply) {
        rlk__req cq = *q;
        cq.ops = u->ops;
        cq.ctx = u->ctx;
        cq.arg = u->arg;
        u->ops->reply(c, &cq, v);
    }
    if (moved && h->routed) EACH(h, i, m) if (m->ops->changed) m->ops->changed(m->ctx);
    subs_sweep(h);
}

int rlk__host_subscribe(rlk__host *h, rlk__core *c, int on, const char *ch,
                        const rlk__req_ops *ops, rlk__host_msg_fn on_msg, void *ctx, int64_t arg)
{
    size_t len = strlen(ch);
    hsub *u = rlk__malloc(sizeof *u + len + 1);
    if (!u) {
        /* As the core's own subscribe: out of memory breaks the core, so
         * that its owner hears of it (closed) instead of waiting for an
         * answer to a subscription never sent. */
        if (rlk__core_connected_now(c) && !rlk__core_broken(c))
            rlk__core_fail(c, RLK_ERR_NOMEM, "out of memory");
        return RLK_ERR_NOMEM;
    }
    memset(u, 0, sizeof *u);
    u->h = h;
    u->core = c;
    u->ops = ops;
    u->wops.reply = sub_reply;
    u->on_msg = on_msg;
    u->ctx = ctx;
    u->arg = arg;
    u->len = len;
    memcpy(u->ch, ch, len + 1);
    if (!on) /* no more messages from here */
        for (hsub *o = h->subs; o; o = o->next)
            if (o->live && o->core == c && o->ctx == ctx && o->len == len && memcmp(o->ch, ch, len) == 0)
                o->live = 0;
    int r = rlk__core_subscribe_n(c, on, rlk__core_cluster(c), ch, len, &u->wops, u, arg);
    if (r != RLK_OK) {
        subs_sweep(h);
        rlk__free(u);
        return r;
    }
    u->owed = 1;
    u->live = on;
    u->next = h->subs;
    h->subs = u;
    subs_sweep(h);
    return RLK_OK;
}

int rlk__host_attach(rlk__host *h, rlk__core *core)
{
    for (hnode *n = h->nodes; n; n = n->next)
        if (n->core == core) return RLK_OK;
    hnode *n = rlk__malloc(sizeof *n);
    if (!n) return RLK_ERR_NOMEM;
    n->h = h;
    n->core = core;
    n->next = h->nodes;
    h->nodes = n;
    if (!h->routed && !h->only) h->only = core;
    rlk__core_hooks hk = {on_connected, on_ready, on_closed, on_push, on_deadline,
                          on_tick,      on_enter, on_leave,  n};
    rlk__core_set_hooks(core, &hk);
    return RLK_OK;
}

void rlk__host_changed(rlk__host *h, int64_t now)
{
    enter(h, now);
    pump(h);
    EACH(h, i, m) if (m->ops->changed) m->ops->changed(m->ctx);
    leave(h, RLK_OK);
}

void rlk__host_refuse(rlk__host *h, int status, const char *msg, int64_t now)
{
    enter(h, now);
    hreq *r;
    while ((r = h->held) != NULL) {
        unhold(h, r, NULL);
        fail_req(h, r, status, "%s", msg ? msg : "refused");
    }
    EACH(h, i, m) if (m->ops->refused) m->ops->refused(m->ctx, status, msg);
    leave(h, RLK_OK);
}

rlk__host *rlk__host_new(const rlk__host_topo *topo)
{
    rlk__host *h = rlk__malloc(sizeof *h);
    if (!h) return NULL;
    memset(h, 0, sizeof *h);
    if (topo) {
        h->topo = *topo;
        h->routed = 1;
    }
    return h;
}

void rlk__host_free(rlk__host *h)
{
    if (!h) return;
    hreq *r;
    while ((r = h->all) != NULL) {
        h->all = r->anext;
        rlk_resp_arena_free(&r->arena);
        rlk__free(r);
    }
    while ((r = h->pool) != NULL) {
        h->pool = r->next;
        rlk__free(r);
    }
    hsub *u;
    while ((u = h->subs) != NULL) {
        h->subs = u->next;
        rlk__free(u);
    }
    hnode *n;
    while ((n = h->nodes) != NULL) {
        h->nodes = n->next;
        rlk__core_hooks none;
        memset(&none, 0, sizeof none);
        rlk__core_set_hooks(n->core, &none);
        rlk__free(n);
    }
    rlk__free(h->members);
    rlk__free(h);
}
