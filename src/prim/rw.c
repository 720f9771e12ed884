/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The read-write lock (rw.h): a file of callbacks over the host, shaped
 * as the semaphore's (sem.c).  The host finds the name's node and follows
 * a cluster's redirects; the renewer renews the holds (lease kind 'w');
 * what is left here is the scripts' words, their replies read, and a
 * wait's times: a try when the lock's channel says something changed,
 * and at least every recheck slice, which also keeps the waiter's place
 * in line from lapsing.  The line, the rules of who may hold and every
 * expiry are the scripts' (rw_acquire.lua).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "rw.h"

#include "internal.h"
#include "keys.h"
#include "lua.h"
#include "random.h"
#include "reply.h"
#include "waiter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { S_TRYING, S_WAITING, S_HELD, S_RELEASING, S_ENDED, S_STATUS };
enum { SC_ACQUIRE, SC_RELEASE, SC_STATUS, SC_COUNT };

/* A subscription to one read-write lock's channel on one core, shared by the
 * waits of this client that wait there. */
typedef struct sub {
    struct sub *next;
    rlk__core *core;
    int refs;
    int confirmed;
    uint64_t hash;
    char ch[];
} sub;

struct rlk__rw {
    rlk__rw *prev, *next;   /* the read-write locks' calls */
    rlk__rws *m;
    int state;
    int inflight;            /* requests whose reply is owed */
    int forgotten;           /* the caller let go: freed when nothing is owed */
    int round_holds;         /* a renewal round holds the lease: it frees */
    int leased;              /* in the renewer */
    int lost;                /* atomic: read by any thread */
    int in_line;             /* a try asked for a place in line */
    sub *sb;                 /* the subscription a wait listens on */
    int mode;                /* RLK_RW_READ or RLK_RW_WRITE */
    int64_t ttl, wait_ms, lease_ms, slice;
    int64_t wait_until, reply_by, next_try, start;
    uint64_t fence;
    int watchdog;
    rlk__rw_cb cb;
    void *ctx, *owner;
    unsigned slot;
    rlk__lease lease;
    rlk_rw_status *st;       /* a status read's */
    char a_ttl[24], a_lease[24];
    /* An extend under way (rlk__rw_extend): its ms, when it was sent. */
    char a_ext[24];
    int64_t ext_ms, ext_start;
    int extending;
    char token[40];
    char n[12];              /* the hold's number among its holder's */
    char hid[52];            /* token ":" n: the hold's field (its lease's token) */
    char facts[RLK__FACTS_MAX];
    char msg[256];
    char *name, *line, *chan;
    char key[];              /* "resplock:rw:{NAME}", then line, chan, name */
};

struct rlk__rws {
    rlk__host *h;
    rlk__renewer *rn;
    rlk__rw_lost_fn lost;
    int64_t recheck;
    rlk_script scripts[SC_COUNT];
    rlk__rw *calls;
    sub *subs;
    size_t n;
    int64_t now;
    char host_name[RLK_HOLDER_HOST_MAX + 1];
};

/* ------------------------------------------------------------------ */
/* Checks and life                                                      */

int rlk__rw_check(const char *name, const rlk_rw_options *o, int watchdog_ok, char *err,
                   size_t errlen)
{
    const char *why = NULL;
    if (!name || !*name) why = "an empty read-write lock name";
    else if (!rlk__rw_name_ok(name))
        why = "a name that begins with '}' (its keys would have an empty hash tag, and no "
              "slot in common on a cluster)";
    else if (!o) why = "no options";
    else if (o->mode != RLK_RW_READ && o->mode != RLK_RW_WRITE) why = "a mode not known";
    else if (o->ttl_ms < 0) why = "a TTL below 1 ms";
    else if (o->wait_ms < 0 && o->wait_ms != RLK_WAIT_FOREVER)
        why = "a negative wait (other than RLK_WAIT_FOREVER)";
    else if (o->lost_margin_ms < 0) why = "a negative lost margin";
    /* The scripts count in Lua numbers: whole below 2^53. */
    else if (o->ttl_ms > ((int64_t)1 << 40)) why = "the TTL must be below 2^40";
    else if (o->watchdog && !watchdog_ok)
        why = "a watchdog needs something to renew it: start the watchdog thread "
              "(rlk_client_watchdog_start), call rlk_client_tick, or use an event loop";
    if (!why) return RLK_OK;
    snprintf(err, errlen, "read-write lock: %s", why);
    return RLK_ERR_INVALID;
}

static int64_t ttl_of(const rlk_rw_options *o)
{
    return o->ttl_ms > 0 ? o->ttl_ms : RLK_DEFAULT_TTL_MS;
}

static void unlink_call(rlk__rws *m, rlk__rw *s)
{
    if (s->prev) s->prev->next = s->next;
    else if (m->calls == s) m->calls = s->next;
    if (s->next) s->next->prev = s->prev;
    s->prev = s->next = NULL;
    m->n--;
}

static void sub_drop(rlk__rws *m, rlk__rw *s);

/* Freed once the caller let it go, no reply is owed and no round holds
 * its lease. */
static void maybe_free(rlk__rw *s)
{
    if (!s->forgotten || s->inflight || s->round_holds) return;
    sub_drop(s->m, s);
    unlink_call(s->m, s);
    rlk__free(s);
}

/* The renewer's round that held the lease of a hold let go ended
 * (after the read-write locks went, too: m NULL then). */
static void lease_destroy(void *owner)
{
    rlk__rw *s = owner;
    s->round_holds = 0;
    if (!s->m) rlk__free(s);
    else maybe_free(s);
}

static void unlease(rlk__rw *s)
{
    if (!s->leased) return;
    s->leased = 0;
    if (!rlk__renewer_remove(s->m->rn, &s->lease)) s->round_holds = 1;
}

static void lease_lost(void *ctx, void *owner)
{
    (void)owner;
    rlk__rw *s = ctx;
    if (__atomic_exchange_n(&s->lost, 1, __ATOMIC_RELAXED)) return;
    if (s->state == S_HELD && !s->forgotten && s->m->lost) s->m->lost(s->owner);
}

/* The call's end, told once. */
static void finish(rlk__rw *s, int status)
{
    rlk__rw_cb cb = s->cb;
    s->cb = NULL;
    if (status == RLK_OK) s->msg[0] = '\0';
    if (cb && !s->forgotten) cb(s->ctx, status, s->msg);
}

int rlk__rw_name_ok(const char *name)
{
    /* "resplock:rw:{" NAME "}": its hash tag is NAME up to its first
     * '}', which every key of the name shares; empty (the whole key
     * hashed, each key to its own slot) only when NAME begins with '}'. */
    return name && *name && *name != '}';
}

size_t rlk__rw_key_cap(const char *name)
{
    return sizeof RLK__RW_PREFIX + strlen(name) + sizeof "}:line";
}

void rlk__rw_key(const char *name, const char *suffix, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s}%s", RLK__RW_PREFIX, name, suffix);
}

static rlk__rw *new_call(rlk__rws *m, const char *name, int state)
{
    size_t nl = strlen(name), cap = rlk__rw_key_cap(name);
    /* Its state key, line key, channel and name, each with its NUL. */
    rlk__rw *s = rlk__malloc(sizeof *s + 3 * cap + nl + 1);
    if (!s) return NULL;
    memset(s, 0, sizeof *s);
    rlk__rw_key(name, "", s->key, cap);
    s->line = s->key + cap;
    rlk__rw_key(name, ":line", s->line, cap);
    s->chan = s->line + cap;
    rlk__rw_key(name, ":wake", s->chan, cap);
    s->name = s->chan + cap;
    memcpy(s->name, name, nl + 1);
    s->m = m;
    s->state = state;
    s->slot = rlk__keyslot(s->key, strlen(s->key));
    s->next = m->calls;
    if (m->calls) m->calls->prev = s;
    m->calls = s;
    m->n++;
    return s;
}

/* ------------------------------------------------------------------ */
/* Subscriptions                                                        */

static void on_sub(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static const rlk__req_ops sub_ops = {NULL, on_sub, NULL, 0};
static void on_msg(void *ctx, rlk__core *c, const rlk_resp_value *v);

static void sub_unlink(rlk__rws *m, sub *b)
{
    for (sub **pp = &m->subs; *pp; pp = &(*pp)->next)
        if (*pp == b) {
            *pp = b->next;
            break;
        }
    for (rlk__rw *s = m->calls; s; s = s->next)
        if (s->sb == b) s->sb = NULL;
    rlk__free(b);
}

/* s stops listening; the channel is left when no other wait listens. */
static void sub_drop(rlk__rws *m, rlk__rw *s)
{
    sub *b = s->sb;
    if (!b) return;
    s->sb = NULL;
    if (--b->refs > 0) return;
    rlk__core *c = b->core;
    char ch[256];
    snprintf(ch, sizeof ch, "%s", b->ch);
    uint64_t hash = b->hash;
    sub_unlink(m, b);
    if (rlk__core_ready(c))
        (void)rlk__host_subscribe(m->h, c, 0, ch, &sub_ops, on_msg, m, (int64_t)hash);
}

static int send_try(rlk__rw *s);

/* A wait listens on its channel at the core that serves its slot, under
 * RESP3 (a RESP2 connection that subscribed could not carry the tries:
 * there the wait looks again every slice). */
static void sub_take(rlk__rws *m, rlk__rw *s)
{
    rlk__core *c = rlk__host_core_for(m->h, s->slot);
    if (s->sb && s->sb->core == c) return;
    sub_drop(m, s);
    if (!c || !rlk__core_ready(c) || !rlk__core_resp3(c)) return;
    sub *b;
    for (b = m->subs; b; b = b->next)
        if (b->core == c && strcmp(b->ch, s->chan) == 0) break;
    if (b) {
        b->refs++;
        s->sb = b;
        return;
    }
    size_t n = strlen(s->chan);
    if (n >= 256 || !(b = rlk__malloc(sizeof *b + n + 1))) return; /* the slice serves */
    memset(b, 0, sizeof *b);
    b->core = c;
    b->refs = 1;
    b->hash = rlk__fnv1a(s->chan, n);
    memcpy(b->ch, s->chan, n + 1);
    b->next = m->subs;
    m->subs = b;
    s->sb = b;
    if (rlk__host_subscribe(m->h, c, 1, b->ch, &sub_ops, on_msg, m, (int64_t)b->hash) != RLK_OK)
        sub_unlink(m, b);
}

static sub *sub_find(rlk__rws *m, rlk__core *c, uint64_t hash)
{
    for (sub *b = m->subs; b; b = b->next)
        if (b->core == c && b->hash == hash) return b;
    return NULL;
}

/* The waits on b look again now: a release may have come before the
 * subscription took, or its message says one came. */
static void wake(rlk__rws *m, sub *b)
{
    for (rlk__rw *s = m->calls, *next; s; s = next) {
        next = s->next;
        if (s->sb == b && s->state == S_WAITING && !s->inflight && !s->forgotten) send_try(s);
    }
}

static void on_sub(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    rlk__rws *m = q->ctx;
    sub *b = sub_find(m, c, (uint64_t)q->arg);
    if (!b || q->sub != RLK__SUB_ON) return;
    if (!v || rlk__is_error(v)) {
        sub_unlink(m, b); /* its waits look again every slice */
        return;
    }
    b->confirmed = 1;
    wake(m, b);
}

static void on_msg(void *ctx, rlk__core *c, const rlk_resp_value *v)
{
    rlk__rws *m = ctx;
    const rlk_resp_value *kind = rlk_resp_value_at(v, 0), *ch = rlk_resp_value_at(v, 1);
    if (!ch || (ch->type != RLK_RESP_BULK && ch->type != RLK_RESP_SIMPLE)) return;
    sub *b = sub_find(m, c, rlk__fnv1a(ch->str, ch->len));
    if (!b) return;
    if (rlk__str_is(kind, "sunsubscribe", 12)) {
        /* The server let it go (the slot moved): the waits look again
         * soon and subscribe where the slot is then. */
        for (rlk__rw *s = m->calls; s; s = s->next)
            if (s->sb == b && s->state == S_WAITING && s->next_try > m->now + 100)
                s->next_try = m->now + 100;
        sub_unlink(m, b);
        return;
    }
    if (rlk__str_is(kind, "message", 7) || rlk__str_is(kind, "smessage", 8)) wake(m, b);
}

/* ------------------------------------------------------------------ */
/* Requests                                                             */

static const char *pub_of(rlk__core *c) { return rlk__core_cluster(c) ? "s" : "p"; }

static int build_try(rlk__core *c, rlk__req *q)
{
    rlk__rw *s = q->ctx;
    const char *argv[10] = {s->key,     s->line,  s->mode == RLK_RW_WRITE ? "w" : "r",
                            s->a_ttl,   s->token, s->n,
                            s->a_lease, s->chan,  pub_of(c),
                            s->facts};
    return rlk__core_put_script(c, q, &s->m->scripts[SC_ACQUIRE], 2, 10, argv, NULL);
}

static int build_release(rlk__core *c, rlk__req *q)
{
    rlk__rw *s = q->ctx;
    const char *argv[7] = {s->key,  s->line,   s->token, s->n,
                           s->chan, pub_of(c), q->arg == 'l' ? "l" : "r"};
    return rlk__core_put_script(c, q, &s->m->scripts[SC_RELEASE], 2, 7, argv, NULL);
}

static int build_status(rlk__core *c, rlk__req *q)
{
    rlk__rw *s = q->ctx;
    const char *argv[2] = {s->key, s->line};
    return rlk__core_put_script(c, q, &s->m->scripts[SC_STATUS], 2, 2, argv, NULL);
}

static int build_extend(rlk__core *c, rlk__req *q)
{
    rlk__rw *s = q->ctx;
    const char *argv[8] = {s->key, s->line, s->token, s->n, s->chan, pub_of(c), "e", s->a_ext};
    return rlk__core_put_script(c, q, &s->m->scripts[SC_RELEASE], 2, 8, argv, NULL);
}

static void try_reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static void release_reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static void extend_reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static void status_reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v);

static const rlk__req_ops try_ops = {build_try, try_reply, NULL, RLK__T_ARRAY};
static const rlk__req_ops release_ops = {build_release, release_reply, NULL, RLK__T_INTEGER};
static const rlk__req_ops extend_ops = {build_extend, extend_reply, NULL, RLK__T_INTEGER};
static const rlk__req_ops status_ops = {build_status, status_reply, NULL, RLK__T_ARRAY};

static int send_try(rlk__rw *s)
{
    rlk__rws *m = s->m;
    /* A place in line only for a wait: a try once never blocks the line. */
    rlk__i64_dec(s->a_lease, s->wait_ms != 0 ? (long long)s->lease_ms : 0LL);
    s->in_line |= s->wait_ms != 0;
    s->start = m->now;
    s->next_try = m->now + s->slice;
    int r = rlk__host_submit(m->h, s->slot, &try_ops, s, 0, s->reply_by, 0);
    if (r == RLK_OK) s->inflight++;
    return r;
}

/* Given back or taken out of the line without waiting for the answer:
 * the caller has its result already (or let go). */
static void send_quiet(rlk__rw *s, char mode)
{
    if (rlk__host_submit(s->m->h, s->slot, &release_ops, s, mode, RLK__DL_DEFAULT, 0) == RLK_OK)
        s->inflight++;
}

static void fail_reply(rlk__rw *s, rlk__core *c, const rlk_resp_value *v, const char *doing)
{
    int st = RLK_ERR_SERVER;
    if (!v) {
        const char *why = NULL;
        st = c ? RLK_ERR_CLOSED : rlk__host_why(s->m->h, &why);
        if (c || st == RLK_OK) st = RLK_ERR_CLOSED;
        snprintf(s->msg, sizeof s->msg, "read-write lock %s: %s: %s", s->name, doing,
                 c ? "the connection closed before the reply" : why && *why ? why : rlk_strerror(st));
    } else if (rlk__is_error(v)) {
        snprintf(s->msg, sizeof s->msg, "read-write lock %s: %s: the server refused: %.*s", s->name,
                 doing, (int)(v->len > 160 ? 160 : v->len), v->str ? v->str : "");
    } else {
        st = RLK_ERR_PROTO;
        snprintf(s->msg, sizeof s->msg, "read-write lock %s: %s: the reply is not the script's", s->name,
                 doing);
    }
    s->state = S_ENDED;
    finish(s, st);
}

/* The wait is over without the hold: out of the line, BUSY. */
static void give_up(rlk__rw *s)
{
    sub_drop(s->m, s);
    if (s->in_line) send_quiet(s, 'l');
    s->state = S_ENDED;
    snprintf(s->msg, sizeof s->msg, "read-write lock %s: no %s hold within the wait", s->name,
             s->mode == RLK_RW_WRITE ? "write" : "read");
    finish(s, RLK_LOCK_BUSY);
}

static void try_reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    rlk__rw *s = q->ctx;
    rlk__rws *m = s->m;
    int64_t granted, fence, readers, writers, now = c ? rlk__core_now(c) : m->now;
    if (now > m->now) m->now = now;
    s->inflight--;
    int ok = v && !rlk__is_error(v) && v->len == 4 && !rlk__int_at(v, 0, &granted) &&
             !rlk__int_at(v, 1, &fence) && !rlk__int_at(v, 2, &readers) &&
             !rlk__int_at(v, 3, &writers) && (granted == 0 || granted == 1);
    if (s->forgotten) {
        /* Let go while it was asked: a hold got then (or maybe got: no
         * reply came) goes back at once, and its place too. */
        if ((ok && granted) || !v) send_quiet(s, 'r');
        if (s->in_line && !(ok && granted)) send_quiet(s, 'l');
        s->in_line = 0;
        maybe_free(s);
        return;
    }
    if (s->state != S_TRYING && s->state != S_WAITING) return;
    if (!ok) {
        /* A lost reply within a wait is asked again at the next slice
         * (the same token: a grant it missed is found as its own). */
        if (!v && s->wait_ms != 0 && (s->wait_until < 0 || now < s->wait_until)) {
            s->state = S_WAITING;
            return;
        }
        sub_drop(m, s);
        /* No reply: the try may have taken the hold; it goes back
         * (a release of a token not held does nothing), and its place. */
        if (!v) send_quiet(s, 'r');
        if (!v && s->in_line) send_quiet(s, 'l');
        fail_reply(s, c, v, "acquire");
        return;
    }
    if (granted) {
        sub_drop(m, s);
        s->in_line = 0;
        s->fence = (uint64_t)fence;
        s->state = S_HELD;
        rlk__lease *l = &s->lease;
        l->key = s->key;
        l->token = s->hid;
        l->kind = 'w';
        l->slot = s->slot;
        l->ttl = s->ttl;
        l->watchdog = s->watchdog;
        l->scripted = 1;
        l->on_lost = lease_lost;
        l->ctx = s;
        l->owner = s;
        l->destroy = lease_destroy;
        /* Valid from the try's sending: the server's TTL ran from later. */
        rlk__lease_set_validity(rlk__renewer_leases(m->rn), l, s->start, s->ttl);
        rlk__renewer_add(m->rn, l);
        s->leased = 1;
        finish(s, RLK_OK);
        return;
    }
    if (s->wait_ms == 0 || (s->wait_until >= 0 && now >= s->wait_until)) {
        give_up(s);
        return;
    }
    /* A new subscription's confirmation tries again (on_sub): a release
     * between this try and it would be heard by nobody.  One that
     * listened already hears every release after this try ran (the
     * server writes its messages on the same connection, in order). */
    s->state = S_WAITING;
    sub_take(m, s);
}

/* An extend's reply: the hold's validity counts ms from its sending,
 * and renewals go on with ms as their TTL; not held, they are lost. */
static void extend_reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    rlk__rw *s = q->ctx;
    s->inflight--;
    s->extending = 0;
    if (s->forgotten || s->state != S_HELD) {
        maybe_free(s);
        return;
    }
    rlk__leases *reg = rlk__renewer_leases(s->m->rn);
    int st = RLK_OK;
    if (!v || v->type != RLK_RESP_INTEGER) {
        /* Its fail_reply's message, without ending the holder: the
         * hold stays held until its validity says otherwise. */
        st = !v ? RLK_ERR_CLOSED : rlk__is_error(v) ? RLK_ERR_SERVER : RLK_ERR_PROTO;
        snprintf(s->msg, sizeof s->msg, "read-write lock %s: extend: %s", s->name,
                 !v ? (c ? "the connection closed before the reply" : "no reply")
                 : rlk__is_error(v) ? "the server refused it" : "the reply is not the script's");
    } else if (v->integer != 1) {
        st = RLK_LOCK_NOT_HELD;
        snprintf(s->msg, sizeof s->msg, "read-write lock %s: extend: the hold had expired", s->name);
    }
    pthread_mutex_lock(&reg->mu);
    if (st == RLK_OK) {
        s->lease.ttl = s->ext_ms;
        rlk__lease_set_validity(reg, &s->lease, s->ext_start, s->ext_ms);
    } else if (st == RLK_LOCK_NOT_HELD) {
        rlk__lease_mark_lost(reg, &s->lease);
    }
    pthread_mutex_unlock(&reg->mu);
    finish(s, st);
}

static void release_reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    rlk__rw *s = q->ctx;
    s->inflight--;
    if (s->forgotten || s->state != S_RELEASING || q->arg != 'r') {
        maybe_free(s);
        return;
    }
    if (!v || v->type != RLK_RESP_INTEGER) {
        fail_reply(s, c, v, "release");
        s->forgotten = 1;
        maybe_free(s);
        return;
    }
    int64_t r = v->integer;
    if (r != 1)
        snprintf(s->msg, sizeof s->msg, "read-write lock %s: the hold had expired (pruned)",
                 s->name);
    s->state = S_ENDED;
    finish(s, r == 1 ? RLK_OK : RLK_LOCK_NOT_HELD);
    s->forgotten = 1;
    maybe_free(s);
}

/* Element i of v as a string into out (cap bytes), cut to fit. */
static void str_at(const rlk_resp_value *v, size_t i, char *out, size_t cap)
{
    const rlk_resp_value *e = rlk_resp_value_at(v, i);
    size_t n = 0;
    if (e && (e->type == RLK_RESP_BULK || e->type == RLK_RESP_SIMPLE) && e->str) {
        n = e->len < cap - 1 ? e->len : cap - 1;
        memcpy(out, e->str, n);
    }
    out[n] = '\0';
}

static void status_fail(rlk__rw *s, rlk__core *c, const rlk_resp_value *v)
{
    fail_reply(s, c, v, "status");
    s->forgotten = 1;
    maybe_free(s);
}

static void status_reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    rlk__rw *s = q->ctx;
    s->inflight--;
    int64_t kind, fence, waiters, wwait;
    if (s->forgotten) {
        maybe_free(s);
        return;
    }
    if (!v || rlk__is_error(v) || v->len < 4 || (v->len - 4) % 5 != 0 ||
        rlk__int_at(v, 0, &kind) || rlk__int_at(v, 1, &fence) || rlk__int_at(v, 2, &waiters) ||
        rlk__int_at(v, 3, &wwait) || kind < 0 || kind > 2) {
        status_fail(s, c, v);
        return;
    }
    rlk_rw_status *st = s->st;
    memset(st, 0, sizeof *st);
    st->exists = kind != 0;
    st->not_a_rw = kind == 2;
    st->fence = (uint64_t)fence;
    st->waiters = waiters;
    st->writers_waiting = wwait;
    size_t n = (v->len - 4) / 5;
    if (n && !(st->hold = rlk__malloc(n * sizeof *st->hold))) {
        snprintf(s->msg, sizeof s->msg, "read-write lock %s: status: out of memory", s->name);
        s->state = S_ENDED;
        finish(s, RLK_ERR_NOMEM);
        s->forgotten = 1;
        maybe_free(s);
        return;
    }
    if (n) memset(st->hold, 0, n * sizeof *st->hold);
    for (size_t i = 0; i < n; i++) {
        rlk_rw_hold *h = &st->hold[i];
        int64_t hm = 0, ttl = 0, hf = 0;
        size_t at = 4 + 5 * i;
        char facts[RLK__FACTS_MAX + 64];
        str_at(v, at, h->token, sizeof h->token);
        if (rlk__int_at(v, at + 1, &hm) || rlk__int_at(v, at + 2, &ttl) ||
            rlk__int_at(v, at + 3, &hf) || (hm != RLK_RW_READ && hm != RLK_RW_WRITE)) {
            rlk__free(st->hold);
            st->hold = NULL;
            status_fail(s, c, v);
            return;
        }
        h->mode = (rlk_rw_mode)hm;
        h->ttl_ms = ttl;
        h->fence = (uint64_t)hf;
        str_at(v, at + 4, facts, sizeof facts);
        rlk_lock_status ls;
        memset(&ls, 0, sizeof ls);
        rlk__facts_read(&ls, facts, strlen(facts));
        h->has_facts = ls.has_facts;
        h->pid = ls.pid;
        h->since_ms = ls.since_ms;
        memcpy(h->host, ls.host, sizeof h->host);
        memcpy(h->cmd, ls.cmd, sizeof h->cmd);
        if (hm == RLK_RW_WRITE) st->writers++;
        else st->readers++;
    }
    st->nholds = n;
    s->state = S_ENDED;
    finish(s, RLK_OK);
    s->forgotten = 1;
    maybe_free(s);
}

/* ------------------------------------------------------------------ */
/* The host's member                                                    */

static int64_t next_wake(void *ctx)
{
    rlk__rws *m = ctx;
    int64_t soonest = -1;
    for (rlk__rw *s = m->calls; s; s = s->next) {
        if (s->state != S_WAITING || s->inflight || s->forgotten) continue;
        int64_t t = s->next_try;
        if (s->wait_until >= 0 && s->wait_until < t) t = s->wait_until;
        if (soonest < 0 || t < soonest) soonest = t;
    }
    return soonest;
}

static int tick(void *ctx, int64_t now)
{
    rlk__rws *m = ctx;
    if (now > m->now) m->now = now;
    for (rlk__rw *s = m->calls, *next; s; s = next) {
        next = s->next;
        if (s->state != S_WAITING || s->inflight || s->forgotten) continue;
        if (s->wait_until >= 0 && now >= s->wait_until) {
            give_up(s);
        } else if (now >= s->next_try) {
            int r = send_try(s);
            if (r != RLK_OK) {
                sub_drop(m, s);
                snprintf(s->msg, sizeof s->msg, "read-write lock %s: a try could not be sent (%s)",
                         s->name, rlk_strerror(r));
                s->state = S_ENDED;
                finish(s, r);
            }
        }
    }
    return RLK_OK;
}

static void enter(void *ctx, int64_t now)
{
    rlk__rws *m = ctx;
    if (now > m->now) m->now = now;
}
static int leave(void *ctx, int status) { (void)ctx; return status; }

/* Its subscriptions went with the connection: the waits there look
 * again at their slices, and subscribe again then. */
static void closed(void *ctx, rlk__core *c)
{
    rlk__rws *m = ctx;
    for (sub *b = m->subs, *next; b; b = next) {
        next = b->next;
        if (b->core == c) sub_unlink(m, b);
    }
}

/* The cores will not come: a wait would look again at nothing. */
static void refused(void *ctx, int status, const char *msg)
{
    rlk__rws *m = ctx;
    for (rlk__rw *s = m->calls, *next; s; s = next) {
        next = s->next;
        if (s->state != S_WAITING || s->inflight || s->forgotten) continue;
        sub_drop(m, s);
        snprintf(s->msg, sizeof s->msg, "read-write lock %s: %s", s->name,
                 msg && *msg ? msg : rlk_strerror(status));
        s->state = S_ENDED;
        finish(s, status);
    }
}

static const rlk__host_ops host_ops = {.closed = closed,
                                       .refused = refused,
                                       .deadline = next_wake,
                                       .tick = tick,
                                       .enter = enter,
                                       .leave = leave};

rlk__rws *rlk__rws_new(rlk__host *h, rlk__renewer *rn, int64_t recheck_ms,
                         rlk__rw_lost_fn lost)
{
    rlk__rws *m = rlk__malloc(sizeof *m);
    if (!m) return NULL;
    memset(m, 0, sizeof *m);
    m->h = h;
    m->rn = rn;
    m->lost = lost;
    m->recheck = recheck_ms;
    rlk__facts_host(m->host_name);
    const char *texts[SC_COUNT] = {rlk__lua_rw_acquire, rlk__lua_rw_release,
                                   rlk__lua_rw_status};
    for (int i = 0; i < SC_COUNT; i++) rlk_script_init(&m->scripts[i], texts[i], 0);
    if (rlk__host_join(h, &host_ops, m) != RLK_OK) {
        rlk__free(m);
        return NULL;
    }
    return m;
}

void rlk__rws_free(rlk__rws *m)
{
    if (!m) return;
    rlk__host_part(m->h, &host_ops, m);
    while (m->calls) {
        rlk__rw *s = m->calls;
        unlink_call(m, s);
        s->forgotten = 1;
        s->m = NULL;
        if (s->leased && !rlk__renewer_remove(m->rn, &s->lease)) s->round_holds = 1;
        /* A round that holds its lease frees it at its end (lease_destroy). */
        if (!s->round_holds) rlk__free(s);
    }
    while (m->subs) {
        sub *b = m->subs;
        m->subs = b->next;
        rlk__free(b);
    }
    rlk__free(m);
}

/* ------------------------------------------------------------------ */
/* Calls                                                                */

int rlk__rw_acquire(rlk__rws *m, const char *name, const rlk_rw_options *o, const char *token,
                    int64_t reply_by, int64_t wait_until, rlk__rw_cb cb, void *ctx, void *owner,
                    int64_t now, rlk__rw **out)
{
    char err[200];
    int st = rlk__rw_check(name, o, 1, err, sizeof err);
    if (st != RLK_OK) return st;
    unsigned char rnd[20];
    if (token && strlen(token) >= sizeof ((rlk__rw *)0)->token) return RLK_ERR_INVALID;
    if (rlk__random_bytes(rnd, sizeof rnd) != 0) return RLK_ERR_NOMEM;
    rlk__rw *s = new_call(m, name, S_TRYING);
    if (!s) return RLK_ERR_NOMEM;
    if (token) {
        snprintf(s->token, sizeof s->token, "%s", token);
    } else {
        memcpy(s->token, "rlk:", 4);
        rlk__hex(rnd, 16, s->token + 4);
        s->token[36] = '\0';
    }
    /* The hold's number: random, so that holds of one holder never meet
     * (a try sent again finds its own hold by it). */
    rlk__hex(rnd + 16, 4, s->n);
    s->n[8] = '\0';
    snprintf(s->hid, sizeof s->hid, "%s:%s", s->token, s->n);
    rlk__facts_make(m->host_name, s->facts, o->holder_cmd);
    s->mode = o->mode;
    s->ttl = ttl_of(o);
    s->wait_ms = o->wait_ms;
    s->watchdog = o->watchdog;
    s->lease.margin = o->lost_margin_ms;
    rlk__wait_plan p;
    rlk__wait_plan_for(&p, m->recheck, s->ttl);
    s->slice = p.slice;
    s->lease_ms = p.lease;
    s->wait_until = o->wait_ms == RLK_WAIT_FOREVER || o->wait_ms == 0 ? -1 : wait_until;
    s->reply_by = reply_by;
    s->cb = cb;
    s->ctx = ctx;
    s->owner = owner;
    rlk__i64_dec(s->a_ttl, (long long)s->ttl);
    if (now > m->now) m->now = now;
    st = send_try(s);
    if (st != RLK_OK) {
        unlink_call(m, s);
        rlk__free(s);
        return st;
    }
    *out = s;
    return RLK_OK;
}

int rlk__rw_release(rlk__rw *s, int64_t reply_by, rlk__rw_cb cb, void *ctx, int64_t now)
{
    rlk__rws *m = s->m;
    if (now > m->now) m->now = now;
    unlease(s);
    if (s->state != S_HELD || __atomic_load_n(&s->lost, __ATOMIC_RELAXED)) {
        int held = s->state == S_HELD;
        rlk__rw_forget(s);
        return held ? RLK_LOCK_LOST : RLK_ERR_INVALID;
    }
    s->state = S_RELEASING;
    s->cb = cb;
    s->ctx = ctx;
    int r = rlk__host_submit(m->h, s->slot, &release_ops, s, 'r', reply_by, 0);
    if (r != RLK_OK) {
        s->forgotten = 1;
        maybe_free(s);
        return r;
    }
    s->inflight++;
    return RLK_OK;
}

int rlk__rw_extend(rlk__rw *s, int64_t ms, int64_t reply_by, rlk__rw_cb cb, void *ctx,
                    int64_t now)
{
    rlk__rws *m = s->m;
    if (now > m->now) m->now = now;
    if (ms < 1 || s->extending) return RLK_ERR_INVALID;
    if (s->state != S_HELD || __atomic_load_n(&s->lost, __ATOMIC_RELAXED)) return RLK_LOCK_LOST;
    rlk__i64_dec(s->a_ext, (long long)ms);
    s->ext_ms = ms;
    s->ext_start = now;
    s->cb = cb;
    s->ctx = ctx;
    int r = rlk__host_submit(m->h, s->slot, &extend_ops, s, 0, reply_by, 0);
    if (r != RLK_OK) return r;
    s->inflight++;
    s->extending = 1;
    return RLK_OK;
}

void rlk__rw_forget(rlk__rw *s)
{
    if (!s) return;
    unlease(s);
    sub_drop(s->m, s);
    /* A wait's place goes now rather than blocking the line until it
     * lapses; a try in flight is answered first (try_reply does it). */
    if (s->state == S_WAITING && s->in_line && !s->inflight) send_quiet(s, 'l');
    s->cb = NULL;
    s->forgotten = 1;
    maybe_free(s);
}

int rlk__rw_status(rlk__rws *m, const char *name, rlk_rw_status *st, int64_t reply_by,
                    rlk__rw_cb cb, void *ctx, int64_t now)
{
    if (!rlk__rw_name_ok(name)) return RLK_ERR_INVALID;
    rlk__rw *s = new_call(m, name, S_STATUS);
    if (!s) return RLK_ERR_NOMEM;
    s->st = st;
    s->cb = cb;
    s->ctx = ctx;
    if (now > m->now) m->now = now;
    int r = rlk__host_submit(m->h, s->slot, &status_ops, s, 0, reply_by, 0);
    if (r != RLK_OK) {
        unlink_call(m, s);
        rlk__free(s);
        return r;
    }
    s->inflight++;
    return RLK_OK;
}

int rlk__rw_lost(const rlk__rw *s) { return __atomic_load_n(&s->lost, __ATOMIC_RELAXED); }

int64_t rlk__rw_remaining(const rlk__rw *s, int64_t now)
{
    if (s->state != S_HELD || rlk__rw_lost(s)) return 0;
    int64_t left = __atomic_load_n(&s->lease.valid_until, __ATOMIC_RELAXED) - now;
    return left > 0 ? left : 0;
}

int rlk__rw_expire(rlk__rw *s, int64_t now)
{
    if (s->state != S_HELD || rlk__rw_lost(s) || rlk__rw_remaining(s, now) > 0) return 0;
    return !__atomic_exchange_n(&s->lost, 1, __ATOMIC_RELAXED);
}

uint64_t rlk__rw_fence(const rlk__rw *s) { return s->fence; }
const char *rlk__rw_token(const rlk__rw *s) { return s->token; }
const char *rlk__rw_name(const rlk__rw *s) { return s->name; }
int rlk__rw_mode(const rlk__rw *s) { return s->mode; }
int64_t rlk__rw_ttl(const rlk__rw *s) { return s->ttl; }
