/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lock (see lock.h): the lock protocol as callbacks on a request
 * core, over the caller's clock.
 *
 * Each request goes to the core with the callback that reads its
 * reply (see "Sending").  A handle (rlk_session_lock) moves through the states below; its held
 * validity, renewal and loss live in the lease registry (lease.c), the
 * waiting rules in waiter.c, the keys and tokens in keys.c, the scripts
 * in src/lua/.  Handles are freed only at the end of the outermost
 * public call (the zombie list), so a callback may release or acquire
 * while the lock walks its handles.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "resplock.h"
#include "core.h"
#include "host.h"
#include "internal.h"
#include "keys.h"
#include "lease.h"
#include "lock.h"
#include "lua.h"
#include "renewer.h"
#include "retry.h"
#include "scriptcall.h"
#include "serverinfo.h"
#include "waiter.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { SC_ACQUIRE, SC_RELEASE, SC_EXTEND, SC_STATUS, SC_COUNT };

/* What a connection may not subscribe to (rlk__locks.nosub). */
enum {
    NOSUB_HANDOFF = 1,   /* its handoff channel: its waiters poll, not in line */
    NOSUB_RELEASE = 2    /* a release channel: in line, woken by re-checks */
};

typedef struct lnode lnode;

/* A handle's states. */
enum {
    L_PENDING,   /* before the handshake is done */
    L_TRY,       /* a try in flight (SET+TIME, or the script) */
    L_WAIT,      /* in line (or polling) until wake_at, a message, or the end */
    L_CONFIRM,   /* a handoff's confirmation in flight */
    L_HELD,
    L_RELEASING,
    L_REL_PENDING, /* a release whose reply was lost, sent again after the
                      next handshake */
    L_DONE       /* its terminal event was given */
};

/* A call without a handle (session_internal.h), owned by its request
 * in the core's queue, and listed on the session until its end. */
typedef struct scall {
    struct scall *prev, *next; /* the session's calls under way */
    rlk__locks *s;
    int which;           /* SC_STATUS, SC_RELEASE or SC_EXTEND */
    int how;
    int64_t ms;
    rlk__session_call_cb cb;
    void *ctx;
    unsigned slot;
    size_t cap;
    char *token;         /* after the keys */
    char keys[];         /* rlk__make_keys' slots */
} scall;

struct rlk_session_lock {
    rlk__locks *s;
    rlk_session_lock *prev, *next; /* the session's handles */
    rlk_session_lock *znext;       /* on the zombie list */
    char *keys;           /* rlk__make_keys' slots, then token and tomb */
    size_t cap;
    char *token;          /* simple: random hex; reentrant: the holder */
    char *tomb;           /* reentrant: this handle's release's tombstone */
    char *facts;          /* reentrant: its holder's facts (rlk:holder) */
    char kind;            /* the scripts' letter: 's' simple, 'r' reentrant */
    int fair;             /* simple, and its tries are acquire.lua's 'f' */
    int64_t holds;
    void *user;
    int state;
    int64_t ttl, wait_ms;
    int64_t until;        /* the wait ends (-1: never) */
    int64_t pending_until; /* L_PENDING gives up (-1: never) */
    int64_t wake_at;      /* L_WAIT tries again */
    int64_t try_start;    /* the try (or confirmation) in flight was queued */
    int inflight;         /* requests in the queue naming it */
    int set_result;       /* SET NX PX's: 1 taken, 0 busy, <0 a status */
    uint64_t window_end;  /* the window's HGET's: rlk__window_end */
    char mode;            /* of the next try: 0 (SET+HGET+TIME), 'w', 'q' */
    int final;            /* the try in flight is the last */
    int cancel;           /* released while acquiring */
    int waited;           /* it joined the line (a try of mode 'w' found it busy) */
    int resend;           /* a try's reply was lost: try again, in the form
                             that finds a lock that try took ('q') */
    int resent;           /* the next try sent is that re-send */
    int probed;           /* a first try's SET NX found it busy: the script
                             in mode 'q' looked whether it is a lock */
    int rel_resend;       /* the release is (to be) sent a second time */
    int rel_started;      /* its first sending was set up */
    int64_t rel_until;    /* a release's re-send is not sent after (-1: no bound) */
    int64_t rel_valid;    /* the lock's validity when its release was sent (-1: none) */
    int64_t rel_not_after; /* reentrant: the server's time (ms) from which a
                              re-send of its release may find the tombstone
                              of the first gone, and must do nothing */
    char rel_flag;        /* the release in flight as sent: a simple lock's
                             re-send within its validity ('1'), */
    char rel_na[24];      /* ... a reentrant re-send's bound ("0": none) */
    int64_t srv_ms, srv_at; /* the server's clock (ms) read before now srv_at */
    int handed;           /* a handoff came during a try in flight */
    uint64_t handed_fence;
    int confirming;       /* held: a handoff's confirmation in flight in
                             the background (see handed_over) */
    int64_t conf_start;   /* ... queued then */
    int forgotten;        /* rlk__locks_forget'ed while busy: ends unheard */
    int full;             /* held only once a handoff is confirmed (full_ttl) */
    int subscribed;       /* to its release channel (RESP3) */
    int leased;           /* in the lease registry */
    int ext_on;           /* an extend in flight: */
    int ext_how;
    int64_t ext_ms;
    int64_t ext_start;    /* ... queued then */
    uint64_t fence;
    lnode *node;          /* the connection of its slot, as the host's table
                             says (NULL: none yet): its lease's rounds and
                             its subscriptions go there */
    lnode *lost_on;       /* a reply of its lost when that connection closed */
    int looped;           /* the try's SET met a redirect loop (the host's bound) */
    int paced;            /* a wait's try met one: pace set up */
    rlk__backoff pace;    /* ... the pauses before its next try */
    rlk__lease lease;
};

/* A server's connection as the lock sees it: one per core attached
 * (its hooks' context), with what the lock keeps per connection. */
struct lnode {
    rlk__locks *s;
    struct lnode *next;
    rlk__core *core;      /* not owned */
    /* RESP3: the release channel of the last lock waited for stays
     * subscribed after its wait (NULL: none), so that waiting for it
     * again starts in line (see start). */
    char *kept;
    /* NOSUB_*: SUBSCRIBEs this connection's user was refused (an ACL
     * without the channel), and why (rlk__locks_wait_note; "": none). */
    int nosub;
    char note[320];
    /* The server refused a WAIT (or WAITAOF) on this connection: its
     * reply ("": none).  Locks that ask for replicas fail at once. */
    char nowait[208];
};

struct rlk__locks {
    rlk_session_config cfg;
    rlk_client_config timing;
    rlk__host *host;      /* the connections, joined */
    rlk__host *own_host;  /* ... made for one core by rlk__locks_new_on */
    lnode *nodes;         /* the connections seen */
    void *owner;          /* what the callbacks are given as the session */
    rlk_session_lock *giving_back; /* an ignored release's handle, while it is built */
    char handoff[64];     /* "resplock:handoff:HEX": FENCE TOKEN hands a lock over */
    uint64_t handoff_hash; /* its rlk__fnv1a */
    char id[40];          /* "HEX:", the default reentrant holders' prefix */
    char host_name[RLK_HOLDER_HOST_MAX + 1]; /* this host's name, %XX-encoded, for
                                           the holder's facts (read once) */
    uint64_t holders;     /* ... and their counter */
    rlk_script scripts[SC_COUNT];
    int64_t now;
    int depth;            /* public calls under way (callbacks call in) */
    rlk_session_lock *head;
    rlk_session_lock *zombies;
    scall *calls;         /* calls without a handle under way */
    rlk__renewer *renewer; /* the watchdog's rounds, the leases' registry */
    rlk__renewer *own_renewer; /* ... made for one core by rlk__locks_new_on */
    rlk__leases *leases;  /* ... the renewer's */
    /* RESP2: the caller relays this session's messages from a connection
     * of its own (rlk__locks_set_listener): waiters wait in line. */
    int listener;
    /* locks_deadline's last answer, while dl_valid: every call that
     * may change it (enter, a request queued) clears dl_valid, so that a
     * client holding many locks does not walk them at every turn. */
    int64_t dl_cache;
    int dl_valid;
    char err[256];
    rlk_error_class errclass; /* err's server error's class (RLK_ERR_SERVER) */
};


static int vfail(rlk__locks *s, int status, const char *fmt, va_list ap)
{
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    s->errclass = RLK_EC_NONE;
    return status;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(rlk__locks *s, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(s, status, fmt, ap);
    va_end(ap);
    return status;
}

/* The core failed (r, not RLK_OK): its reason becomes the lock's. */
static int core_failed(rlk__locks *s, rlk__core *core, int r)
{
    if (r != RLK_OK && core) snprintf(s->err, sizeof s->err, "%s", rlk__core_errmsg(core));
    return r;
}

const char *rlk__locks_errmsg(const rlk__locks *s) { return s->err; }
rlk_error_class rlk__locks_errclass(const rlk__locks *s) { return s->errclass; }

/* Failure status, just recorded, was server error v's: its class is kept
 * with the message, so that no caller reads the message's text. */
static int of_reply(rlk__locks *s, int status, const rlk_resp_value *v)
{
    if (status == RLK_ERR_SERVER) s->errclass = rlk__reply_class(v);
    return status;
}

/* Every connection has the same command timeout (one configuration). */
static int64_t timeout_ms(const rlk__locks *s)
{
    int64_t t = rlk__host_timeout_ms(s->host);
    return t == RLK__DL_DEFAULT ? RLK__DEFAULT_TIMEOUT_MS : t;
}

static int64_t reply_deadline(const rlk__locks *s)
{
    int64_t t = timeout_ms(s);
    return t < 0 ? -1 : s->now + t;
}

static int nresp3(const lnode *n) { return n && rlk__core_resp3(n->core); }
static int nready(const lnode *n) { return n && rlk__core_ready(n->core); }
/* A Redis Cluster node (its HELLO said so): subscriptions are sharded,
 * in the lock's slot, and so is the channel a waiter is handed a lock
 * on. */
static int ncluster(const lnode *n) { return n && rlk__core_cluster(n->core); }

/* What the lock keeps for connection c, made when first needed (NULL:
 * c NULL, or out of memory: as a connection not up). */
static lnode *node_of(rlk__locks *s, rlk__core *c)
{
    if (!c) return NULL;
    lnode **tail = &s->nodes;
    for (; *tail; tail = &(*tail)->next)
        if ((*tail)->core == c) return *tail;
    lnode *n = rlk__malloc(sizeof *n);
    if (!n) return NULL;
    memset(n, 0, sizeof *n);
    n->s = s;
    n->core = c;
    *tail = n;
    return n;
}

/* The connection that serves slot now (NULL: none known yet). */
static lnode *node_for(rlk__locks *s, unsigned slot)
{
    return node_of(s, rlk__host_core_for(s->host, slot));
}

/* The caller's clock never goes back; a time before the last is taken
 * as the last. */
static void set_now(rlk__locks *s, int64_t now)
{
    if (now > s->now) s->now = now;
    rlk__leases_clock(s->leases, s->now);
    rlk__host_clock(s->host, s->now);
}

/* ------------------------------------------------------------------ */
/* Handles                                                              */

static void free_handle(rlk_session_lock *l)
{
    rlk__free(l->keys);
    rlk__free(l);
}

/* The lease registry's destroy: a round outlived the handle. */
static void destroy_handle(void *owner)
{
    rlk_session_lock *l = owner;
    rlk__locks *s = l->s;
    if (s->depth > 0) {
        l->znext = s->zombies;
        s->zombies = l;
    } else {
        free_handle(l);
    }
}

static void unlink_handle(rlk__locks *s, rlk_session_lock *l)
{
    if (l->prev) l->prev->next = l->next;
    else s->head = l->next;
    if (l->next) l->next->prev = l->prev;
    l->prev = NULL;
}

/* The handle's terminal event: it leaves the session; its memory goes at
 * the end of the outermost call (or with the round that holds its
 * lease).  Its `next` stays as it was, so that a walk standing on it
 * goes on (zombies are chained by znext). */
static void finish(rlk__locks *s, rlk_session_lock *l, rlk_session_event ev, int status)
{
    if (ev && l->ext_on) {
        /* An extend asked before is still to be answered (the host
         * sends it again after a TRYAGAIN, a CLUSTERDOWN or a MOVED,
         * while the release sent after it was answered): its result
         * comes first, as it was asked first.  The lock has ended, so
         * the extend keeps nothing (sent again, it finds another token
         * or none).  Its reply, when it comes, is dropped: the handle
         * is freed once no request of its is owed (leave). */
        l->ext_on = 0;
        if (s->cfg.cb)
            s->cfg.cb(s->cfg.ctx, s->owner, RLK_SEV_EXTENDED, l,
                      fail(s, RLK_LOCK_NOT_HELD, "extend: lock '%s' ended before the extend was answered",
                           l->keys));
    }
    l->state = L_DONE;
    unlink_handle(s, l);
    int mine = 1;
    if (l->leased) {
        l->leased = 0;
        mine = rlk__renewer_remove(s->renewer, &l->lease);
    }
    if (s->cfg.cb && ev) s->cfg.cb(s->cfg.ctx, s->owner, ev, l, status);
    if (mine) {
        l->znext = s->zombies;
        s->zombies = l;
    }
}

static void enter(rlk__locks *s, int64_t now)
{
    s->dl_valid = 0;
    s->depth++;
    set_now(s, now);
}

static void leave(rlk__locks *s)
{
    if (--s->depth > 0) return;
    /* A handle ended with a request still owed (its extend, sent again
     * by the host) stays until that reply, the request's context. */
    rlk_session_lock **p = &s->zombies;
    while (*p) {
        rlk_session_lock *l = *p;
        if (l->inflight > 0) {
            p = &l->znext;
            continue;
        }
        *p = l->znext;
        free_handle(l);
    }
}

void rlk__locks_note(rlk__locks *s, const char *msg) { snprintf(s->err, sizeof s->err, "%s", msg); }

/* leave, after a call of core whose status is r. */
static int leave_core(rlk__locks *s, rlk__core *core, int r)
{
    if (r != RLK_OK) core_failed(s, core, r);
    rlk__leases_notify_lost(s->leases, 0);
    leave(s);
    return r;
}

void *rlk_session_lock_user(const rlk_session_lock *l) { return l->user; }
const char *rlk_session_lock_name(const rlk_session_lock *l) { return l->keys; }
const char *rlk_session_lock_token(const rlk_session_lock *l) { return l->token; }
uint64_t rlk_session_lock_fence(const rlk_session_lock *l) { return l->fence; }
int64_t rlk_session_lock_holds(const rlk_session_lock *l) { return l->holds; }

int64_t rlk_session_lock_remaining_ms(const rlk_session_lock *l, int64_t now)
{
    if (!l->leased || __atomic_load_n(&l->lease.lost, __ATOMIC_RELAXED)) return 0;
    int64_t left = __atomic_load_n(&l->lease.valid_until, __ATOMIC_RELAXED) - now;
    return left > 0 ? left : 0;
}

/* ------------------------------------------------------------------ */
/* Sending                                                              */

/* Each request goes to the core with its handle (or the session, or a
 * call) as context, and its ops build its command from there: so the
 * core can send it again (as EVAL after NOSCRIPT) without a copy.  A
 * handle's requests count in its inflight; each reply callback takes
 * one off first, and a NULL reply (the connection closed) leaves the
 * handle's state to rlk_session_closed. */

static const char *key(const rlk_session_lock *l, int which)
{
    return l->keys + (size_t)which * l->cap;
}

static rlk_session_lock *owed(rlk__req *q)
{
    rlk_session_lock *l = q->ctx;
    l->inflight--;
    return l;
}

/* Requests of l (n of them, pipelined: a group the host sends again
 * whole), to the host for its slot: the host holds them until the
 * slot's connection is up and follows a cluster's redirects, so that
 * each reply callback sees the final reply.  first_dl: the first
 * sending's reply deadline where it is shorter than deadline's. */
static int submit_n(rlk__locks *s, int n, const rlk__req_ops *const *ops, rlk_session_lock *l,
                    int64_t arg, int64_t first_dl, int64_t deadline, int flags)
{
    s->dl_valid = 0;
    int r = rlk__host_submit_first(s->host, l->lease.slot, n, ops, l, arg, first_dl, deadline, flags);
    if (r == RLK_OK) l->inflight += n;
    else core_failed(s, l->node ? l->node->core : NULL, r);
    return r;
}

static int submit(rlk__locks *s, const rlk__req_ops *ops, rlk_session_lock *l, int64_t arg,
                  int64_t deadline, int flags)
{
    return submit_n(s, 1, &ops, l, arg, -1, deadline, flags);
}

/* A reply of l's came from c (NULL: none will come, c closed; or no
 * connection answered it, which *status says then): the handle follows
 * its slot where the host's redirects found it served elsewhere. */
static int arrived(rlk__locks *s, rlk_session_lock *l, rlk__core *c, const rlk_resp_value *v,
                   int *status);

/* Why the host answered a request itself (see arrived). */
static const char *why_msg(const rlk__locks *s)
{
    const char *m;
    rlk__host_why(s->host, &m);
    return m;
}

static void ttl_str(char *out, int64_t v) { rlk__i64_dec(out, (long long)v); }

static int build_set(rlk__core *c, rlk__req *q)
{
    rlk_session_lock *l = q->ctx;
    char ttl[24];
    ttl_str(ttl, l->ttl);
    const char *argv[6] = {"SET", l->keys, l->token, "NX", "PX", ttl};
    return rlk__core_put(c, 6, argv, NULL);
}

static int build_yield(rlk__core *c, rlk__req *q)
{
    rlk_session_lock *l = q->ctx;
    const char *argv[3] = {"HGET", key(l, RLK__K_WAITERS), "~yield"};
    return rlk__core_put(c, 3, argv, NULL);
}

static int build_time(rlk__core *c, rlk__req *q)
{
    (void)q;
    const char *argv[1] = {"TIME"};
    return rlk__core_put(c, 1, argv, NULL);
}

/* The acquire script in mode q->arg (see src/lua/acquire.lua). */
static int build_acq(rlk__core *c, rlk__req *q)
{
    rlk_session_lock *l = q->ctx;
    rlk__locks *s = l->s;
    rlk__wait_plan p;
    rlk__wait_plan_for(&p, s->timing.recheck_ms, l->ttl);
    char ttl[24], ls[24], cs[24], m[2] = {(char)q->arg, 0}, k[2] = {l->fair ? 'f' : l->kind, 0};
    ttl_str(ttl, l->ttl);
    ttl_str(ls, p.lease);
    ttl_str(cs, p.claim);
    /* The channel the waiter is handed the lock on: the session's, or
     * on a cluster the lock's own (in its slot, where SPUBLISH reaches). */
    const char *hand = rlk__core_cluster(c) ? key(l, RLK__K_CHANNEL) : s->handoff;
    const char *argv[11] = {l->keys, key(l, RLK__K_QUEUE), key(l, RLK__K_WAITERS), l->token, ttl,
                            k, m, ls, hand, cs, l->facts};
    return rlk__core_put_script(c, q, &s->scripts[SC_ACQUIRE], 3, l->facts ? 11 : 10, argv, NULL);
}

/* The native commands l may use on c: a simple lock's, until a native
 * form found its value marked (lease.scripted). */
static unsigned native_caps(const rlk__core *c, const rlk_session_lock *l)
{
    return l->kind == 's' && !l->lease.scripted ? rlk__core_caps(c) : 0;
}

/* A native form's refusal of itself (not of the lock): an ACL without
 * the command, a server without it or the option after all.  The
 * capability is dropped for the connection, the script sent instead. */
/* SET key token IFEQ token PX ms (rlk__put_set_ifeq): the lock's TTL
 * becomes ms if its value is exactly the token (OK), else nothing (nil). */

/* The extend script setting the lock's TTL (a handoff's confirmation),
 * or adding or setting ext_ms (rlk_session_extend's).  q->arg 1: by SET
 * IFEQ where c has it (else q->arg becomes 0: the script).  A handoff's
 * confirmation goes by the script: a lock handed over with others still
 * in line carries their mark, which SET IFEQ would miss. */
static int build_extend_script(rlk__core *c, rlk__req *q, int confirm)
{
    rlk_session_lock *l = q->ctx;
    char ms[24];
    ttl_str(ms, confirm ? l->ttl : l->ext_ms);
    if (q->arg == 1 && !confirm && (native_caps(c, l) & RLK_CAP_SET_IFEQ) &&
        l->ext_how == RLK_EXTEND_SET)
        return rlk__put_set_ifeq(c, l->keys, l->token, ms);
    q->arg = 0;
    /* A reentrant lock's confirmation also writes its holder's facts
     * (the handoff replaced the hash without them). */
    int facts = confirm && l->kind == 'r' && l->facts;
    const char *argv[6] = {l->keys, l->token, ms,
                           confirm || l->ext_how == RLK_EXTEND_SET ? "set" : "add",
                           l->kind == 'r' ? "r" : "s", l->facts};
    return rlk__core_put_script(c, q, &l->s->scripts[SC_EXTEND], 1, facts ? 6 : 5, argv, NULL);
}

static int build_confirm(rlk__core *c, rlk__req *q) { return build_extend_script(c, q, 1); }
static int build_extend(rlk__core *c, rlk__req *q) { return build_extend_script(c, q, 0); }

static void on_ignored(rlk__core *c, rlk__req *q, const rlk_resp_value *v);

/* The release script, with the arguments send_release chose, of the
 * request's handle, or of the handle being given back (an ignored
 * release's context is the session: its handle goes before the reply
 * comes). */
static int build_release(rlk__core *c, rlk__req *q)
{
    rlk_session_lock *l = q->ops->reply == on_ignored ? ((rlk__locks *)q->ctx)->giving_back : q->ctx;
    rlk__locks *s = l->s;
    /* q->arg 1: by DELIFEQ (or DELEX IFEQ) where c has it: deleted when
     * the value is exactly the token; its 0 sends the script (see
     * on_release).  Else q->arg becomes 0: the script. */
    unsigned caps = q->arg == 1 ? native_caps(c, l) : 0;
    if (caps & RLK_CAP_DELIFEQ) {
        const char *argv[3] = {"DELIFEQ", l->keys, l->token};
        return rlk__core_put(c, 3, argv, NULL);
    }
    if (caps & RLK_CAP_DELEX_IFEQ) {
        const char *argv[4] = {"DELEX", l->keys, "IFEQ", l->token};
        return rlk__core_put(c, 4, argv, NULL);
    }
    q->arg = 0;
    /* A reentrant release names its tombstone, which holds its result
     * for a while (see src/lua/release.lua): twice the command timeout,
     * at least a second, a minute without a timeout, as the blocking
     * client's. */
    int64_t t = timeout_ms(s), life_ms = t < 0 ? 60000 : t < 500 ? 1000 : 2 * t;
    char life[24];
    ttl_str(life, life_ms);
    const char *simple[8] = {l->keys, key(l, RLK__K_QUEUE), key(l, RLK__K_WAITERS), l->token,
                             l->rel_flag == '1' ? "1" : "0", "", "", "s"};
    const char *reentrant[9] = {l->keys, key(l, RLK__K_QUEUE), key(l, RLK__K_WAITERS), l->tomb,
                                l->token, "0", life, l->rel_na, "s"};
    int r = l->kind == 'r';
    /* On a cluster, ARGV[5] 's': SPUBLISH, in the lock's slot. */
    int argc = rlk__core_cluster(c) ? (r ? 9 : 8) : r ? 8 : 4 + (l->rel_flag == '1');
    return rlk__core_put_script(c, q, &s->scripts[SC_RELEASE], r ? 4 : 3, argc,
                                r ? reentrant : simple, NULL);
}

static void on_set(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static void on_yield(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static void on_time(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static void on_acq(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static void on_confirm(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static void on_extend(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static void on_release(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static int confirm_again(rlk__core *c, const rlk__req *q);
static int extend_again(rlk__core *c, const rlk__req *q);

static const rlk__req_ops set_ops = {build_set, on_set, NULL, RLK__T_SIMPLE | RLK__T_NULL};
static const rlk__req_ops yield_ops = {build_yield, on_yield, NULL, RLK__T_BULK | RLK__T_NULL};
static const rlk__req_ops time_ops = {build_time, on_time, NULL, RLK__T_ARRAY};
static const rlk__req_ops acq_ops = {build_acq, on_acq, NULL, RLK__T_ARRAY};
static void on_set_ifeq(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static const rlk__req_ops confirm_ops = {build_confirm, on_confirm, confirm_again,
                                         RLK__T_INTEGER};
static const rlk__req_ops extend_ops = {build_extend, on_extend, extend_again, RLK__T_INTEGER};
/* The same, sent as SET IFEQ where the connection has it (arg 1): OK or
 * nil, or the script's integer where it went as the script. */
static const rlk__req_ops extend_native_ops = {build_extend, on_set_ifeq, extend_again,
                                               RLK__T_INTEGER | RLK__T_SIMPLE | RLK__T_NULL};
static const rlk__req_ops release_ops = {build_release, on_release, NULL, RLK__T_INTEGER};
static const rlk__req_ops ignore_ops = {build_release, on_ignored, NULL, RLK__T_INTEGER};

/* The replicas a lock asks for: WAIT (or WAITAOF) pipelined after the
 * request that takes or confirms it, the last part of its group, whose
 * reply acquired reads (rlk__host_part_reply); its own reply is not read. */
static int build_wait(rlk__core *c, rlk__req *q)
{
    const rlk__lease *e = &((rlk_session_lock *)q->ctx)->lease;
    return rlk__put_wait(c, q, e->acks, e->acks_aof, e->acks_ms);
}

static void on_waited(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    (void)c;
    (void)v;
    owed(q);
}

static const rlk__req_ops wait_ops = {build_wait, on_waited, NULL, RLK__T_ANY};
static const rlk__req_ops *const first_try_ops[4] = {&set_ops, &yield_ops, &time_ops, &wait_ops};

/* ops, then the WAIT where l asks for replicas. */
static int submit_w(rlk__locks *s, const rlk__req_ops *ops, rlk_session_lock *l, int64_t arg,
                    int64_t deadline)
{
    const rlk__req_ops *parts[2] = {ops, &wait_ops};
    return submit_n(s, 1 + (l->lease.acks != 0), parts, l, arg, -1, deadline, 0);
}

static int send_try(rlk__locks *s, rlk_session_lock *l)
{
    l->looped = 0;
    l->try_start = s->now;
    l->state = L_TRY;
    /* Every try keeps to the acquire's own deadline (the blocking
     * client's one deadline per call): its reply, its re-sends after a
     * redirect; each reply awaited a command timeout at most. */
    int64_t dl = l->pending_until;
    /* A try sent once the acquire's deadline has passed (the last try
     * that leaves the line, a tick that came late) gets its own command
     * timeout, as every reply is awaited: a deadline already past would
     * leave the core a reply overdue that no tick had failed. */
    if (!l->resent && dl >= 0 && dl <= s->now) dl = RLK__DL_DEFAULT;
    l->resent = 0; /* the tries after it are the acquire's own */
    if (!l->mode) return submit_n(s, 3 + (l->lease.acks != 0), first_try_ops, l, 0, -1, dl, 0);
    return submit_w(s, &acq_ops, l, l->mode, dl);
}

/* A confirmation and an extend end a command timeout from now
 * (reply_deadline), whether sent at once or held by the host for their
 * slot's connection (a cluster node's opening), so that a held one ends
 * in time too, before a release sent after it can (RLK__DL_DEFAULT
 * would count only from its first sending). */
static int send_confirm(rlk__locks *s, rlk_session_lock *l)
{
    if (l->confirming) {
        l->conf_start = s->now; /* the lock is reported held already */
    } else {
        l->try_start = s->now;
        l->state = L_CONFIRM;
    }
    return submit_w(s, &confirm_ops, l, 0, reply_deadline(s));
}

static int send_extend(rlk__locks *s, rlk_session_lock *l)
{
    return submit(s, &extend_native_ops, l, 1, reply_deadline(s), 0);
}

/* The least the server's clock (ms) can read now: what it read at
 * srv_at, plus the time since by our clock, less 0.2% of it for the two
 * clocks' rates (NTP slews by 0.05% at most). */
static int64_t server_now_min(const rlk__locks *s, const rlk_session_lock *l)
{
    int64_t d = s->now - l->srv_at;
    return l->srv_ms + d - d / 500 - 1;
}

/* ignore: the handle goes now and nobody reads the reply (sent as EVAL,
 * since no NOSCRIPT could be answered). */
static int send_release(rlk__locks *s, rlk_session_lock *l, int ignore)
{
    int64_t t = timeout_ms(s), life_ms = t < 0 ? 60000 : t < 500 ? 1000 : 2 * t;
    int64_t dl = reply_deadline(s);
    /* A simple lock's re-send within the validity says so ("1"): a lock
     * gone or held by another was then released by the first attempt
     * (see release.lua).  A reentrant one learns it from its tombstone. */
    l->rel_flag = 0;
    memcpy(l->rel_na, "0", 2);
    if (!ignore) {
        if (!l->rel_started) {
            l->rel_started = 1;
            /* The first sending: a re-send must come within one command
             * timeout of it, while a reentrant tombstone still tells. */
            l->rel_until = t < 0 ? -1 : s->now + t;
            l->rel_valid = l->leased && !l->lease.lost ? l->lease.valid_until : -1;
            /* The first attempt runs no earlier than this sending, and
             * its tombstone lives life_ms from then: a re-send that runs
             * before the server's clock reads rel_not_after still finds
             * it.  Nothing bounds when bytes on the way arrive, so the
             * re-send carries that bound, and does nothing after it. */
            l->rel_not_after = server_now_min(s, l) + life_ms;
            /* On a cluster the first sending has half of it: a node that
             * does not answer may be frozen while its replica takes
             * over, and the re-send goes to the slot's owner then. */
            if (t > 0 && l->node && ncluster(l->node)) {
                l->state = L_RELEASING;
                return submit_n(s, 1, (const rlk__req_ops *const[]){&release_ops}, l, 1,
                                s->now + t / 2, l->rel_until, 0);
            }
        } else if (l->rel_resend) {
            if (l->rel_valid >= 0 && s->now < l->rel_valid) l->rel_flag = '1';
            if (l->rel_until >= 0 && (dl < 0 || l->rel_until < dl)) dl = l->rel_until;
            if (l->kind == 'r')
                rlk__i64_dec(l->rel_na, (long long)l->rel_not_after);
        }
        l->state = L_RELEASING;
    }
    if (!ignore) return submit(s, &release_ops, l, 1, dl, 0);
    /* Given back as the handle goes: to its connection now or not at all
     * (the host would build it again later, from a handle gone). */
    if (!l->node) return RLK_OK;
    s->giving_back = l;
    s->dl_valid = 0;
    rlk__core *c = l->node->core;
    int r = core_failed(s, c, rlk__core_submit(c, &ignore_ops, s, 0, dl, RLK__REQ_EVAL));
    s->giving_back = NULL;
    return r;
}

static void on_sub(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static const rlk__req_ops sub_ops = {NULL, on_sub, NULL, 0};
static void on_msg(void *ctx, rlk__core *c, const rlk_resp_value *v);

/* SUBSCRIBE (on) or UNSUBSCRIBE of ch, under RESP3, through the host
 * (sharded on a cluster; ch's messages come to on_msg): its answer takes
 * a place in the queue like any reply (the server's confirmation, a
 * push, comes in the reply's place; a refusal is an error reply). */
static int send_sub(lnode *n, int on, const char *ch)
{
    n->s->dl_valid = 0;
    int r = rlk__host_subscribe(n->s->host, n->core, on, ch, &sub_ops, on_msg, n->s,
                                (int64_t)rlk__fnv1a(ch, strlen(ch)));
    return core_failed(n->s, n->core, r);
}

/* RESP3: the release channel of a lock waited for.  Left when no other
 * handle waits for it. */
static int subscribe(rlk__locks *s, rlk_session_lock *l, int on)
{
    lnode *n = l->node;
    if (!nresp3(n)) {
        /* The listener's connection is subscribed by the caller. */
        if (s->listener || !on) l->subscribed = on;
        return RLK_OK;
    }
    if (l->subscribed == on) return RLK_OK;
    const char *ch = key(l, RLK__K_CHANNEL);
    if (n->kept && strcmp(n->kept, ch) == 0) {
        l->subscribed = on; /* the connection's kept subscription */
        return RLK_OK;
    }
    if (!on)
        for (rlk_session_lock *h = s->head; h; h = h->next)
            if (h != l && h->node == n && h->subscribed && strcmp(h->keys, l->keys) == 0) {
                l->subscribed = 0; /* the other keeps it */
                return RLK_OK;
            }
    l->subscribed = on;
    if (!on) {
        /* Kept for the next wait instead of left; the one kept before
         * is left now. */
        size_t len = strlen(ch) + 1;
        char *k = rlk__malloc(len);
        if (k) {
            int r = RLK_OK;
            if (n->kept) {
                r = send_sub(n, 0, n->kept);
                rlk__free(n->kept);
            }
            memcpy(k, ch, len);
            n->kept = k;
            return r;
        }
    }
    return send_sub(n, on, ch);
}

/* ------------------------------------------------------------------ */
/* Acquiring                                                            */

static int release_now(rlk__locks *s, rlk_session_lock *l);

/* Another handle of this session holding the same reentrant lock for
 * the same holder: a hold taken on top of it keeps its fence (the script
 * gives the clock's time now), as the blocking client's does. */
static const rlk_session_lock *held_before(const rlk__locks *s, const rlk_session_lock *l)
{
    for (const rlk_session_lock *h = s->head; h; h = h->next)
        if (h != l && h->kind == 'r' && (h->state == L_HELD || h->state == L_RELEASING || h->state == L_REL_PENDING) &&
            h->leased && !h->lease.lost && strcmp(h->keys, l->keys) == 0 &&
            strcmp(h->token, l->token) == 0)
            return h;
    return NULL;
}

static int errlen(const rlk_resp_value *v);

/* Too few replicas acknowledged l's write (got, as rlk__wait_count
 * counts; w the reply), or the server refused the wait. */
static int not_acked(rlk__locks *s, const rlk_session_lock *l, const rlk_resp_value *w, long got)
{
    const rlk__lease *e = &l->lease;
    const char *cmd = e->acks_aof ? "WAITAOF" : "WAIT";
    if (w && rlk__is_error(w))
        return of_reply(s, fail(s, RLK_ERR_SERVER, "acquire: the server refused %s (%.*s): released",
                                cmd, errlen(w), w->str), w);
    /* WAITAOF counts no replica when the primary's own AOF lacks it. */
    return fail(s, RLK_ERR_REPLICAS, "acquire: %ld of %d replicas acknowledged the lock within %lld "
                "ms (%s%s): released", got < 0 ? 0 : got, e->acks, (long long)e->acks_ms, cmd,
                got < 0 && e->acks_aof ? ": not the primary's AOF" : "");
}

/* The wait is over with the lock held (holds of it by its holder, as
 * the server counted them), valid for ms from l->try_start. */
static int acquired(rlk__locks *s, rlk_session_lock *l, uint64_t fence, int64_t holds,
                    int64_t ms)
{
    int r = subscribe(s, l, 0);
    if (r != RLK_OK) return r;
    if (l->lease.acks) {
        /* The WAIT after it (the group's last part) counted too few
         * replicas, or was refused: given back, not acquired. */
        const rlk__lease *e = &l->lease;
        const rlk_resp_value *w = rlk__host_part_reply(s->host, -1);
        long got = rlk__wait_count(w, e->acks_aof);
        if (got < e->acks) {
            r = send_release(s, l, 1);
            if (w && rlk__is_error(w) && l->node)
                snprintf(l->node->nowait, sizeof l->node->nowait, "%.*s", errlen(w), w->str);
            finish(s, l, l->cancel ? RLK_SEV_RELEASED : RLK_SEV_NOT_ACQUIRED,
                   l->cancel ? RLK_LOCK_NOT_HELD : not_acked(s, l, w, got));
            return r;
        }
    }
    const rlk_session_lock *before = holds > 1 ? held_before(s, l) : NULL;
    l->fence = before ? before->fence : fence;
    l->srv_ms = (int64_t)(fence / 1000);
    l->srv_at = s->now;
    l->holds = holds;
    rlk__lease_set_validity(s->leases, &l->lease, l->try_start, ms);
    if (l->lease.valid_until <= s->now) {
        /* The reply came after the validity it gave was over: no success
         * is reported for it; the lock is given back. */
        r = send_release(s, l, 1);
        finish(s, l, l->cancel ? RLK_SEV_RELEASED : RLK_SEV_NOT_ACQUIRED,
               l->cancel ? RLK_LOCK_NOT_HELD
                         : fail(s, RLK_ERR_TIMEOUT, "acquire: the reply came after the validity it gave"));
        return r;
    }
    /* Taken after waiting in line: others likely wait behind it, whose
     * mark would answer a native release or renewal nil or 0, one round
     * trip more each; it goes by the scripts from the start. */
    if (l->waited) l->lease.scripted = 1;
    rlk__renewer_add(s->renewer, &l->lease);
    l->leased = 1;
    l->state = L_HELD;
    if (l->cancel) return release_now(s, l);
    if (s->cfg.cb) s->cfg.cb(s->cfg.ctx, s->owner, RLK_SEV_ACQUIRED, l, RLK_OK);
    return RLK_OK;
}

/* The wait ends without the lock. */
static int not_acquired(rlk__locks *s, rlk_session_lock *l, int status)
{
    int r = subscribe(s, l, 0);
    if (l->cancel) finish(s, l, RLK_SEV_RELEASED, RLK_LOCK_NOT_HELD);
    else finish(s, l, RLK_SEV_NOT_ACQUIRED, status);
    return r;
}

/* Busy: in line until the next look, or the end of the wait. */
static int busy(rlk__locks *s, rlk_session_lock *l, int64_t pttl)
{
    if (l->mode == 'w') l->waited = 1; /* that try joined the line */
    if (l->handed) {
        l->handed = 0;
        return send_confirm(s, l);
    }
    if (l->final || l->wait_ms == 0)
        return not_acquired(s, l, fail(s, RLK_LOCK_BUSY, "lock '%s' is held by someone else", l->keys));
    if (l->cancel || (l->until >= 0 && s->now >= l->until)) {
        /* In line: one last try that also leaves it. */
        if (l->mode != 'w')
            return not_acquired(s, l, fail(s, RLK_LOCK_BUSY, "lock '%s' is held by someone else", l->keys));
        l->final = 1;
        l->mode = 'q';
        return send_try(s, l);
    }
    int nosub = l->node ? l->node->nosub : 0;
    /* On a cluster the handoff comes on the release channel, which must
     * be in the lock's slot: Redisson's name of it is not for a name
     * with '}' before any '{', or with "{}" (its hash tag differs). */
    if (ncluster(l->node)) {
        const char *ch = key(l, RLK__K_CHANNEL);
        if (rlk__keyslot(ch, strlen(ch)) != l->lease.slot) nosub |= NOSUB_RELEASE;
        if (nosub & NOSUB_RELEASE) nosub |= NOSUB_HANDOFF;
    }
    if ((nresp3(l->node) || s->listener) && !l->subscribed && l->mode != 'w' &&
        !(nosub & NOSUB_HANDOFF)) {
        /* Subscribed first, then in line: a release in between is not
         * missed, and a handoff finds a listener.  Where the release
         * channel was refused, in line all the same (the handoff
         * channel is heard), woken by the re-checks instead.  Where the
         * handoff channel was refused, not in line, where nobody would
         * hear its handoff: the waiter polls, as under RESP2 without a
         * listener. */
        if (!(nosub & NOSUB_RELEASE)) {
            int r = subscribe(s, l, 1);
            if (r != RLK_OK) return r;
        }
        l->mode = 'w';
        return send_try(s, l);
    }
    rlk__wait_plan p;
    rlk__wait_plan_for(&p, s->timing.recheck_ms, l->ttl);
    int64_t wait = p.slice;
    if (pttl >= 0 && pttl + 1 < wait) wait = pttl + 1;
    /* A fair waiter that cannot hear a handoff polls in line all the
     * same: its place is its turn (release.lua frees the lock for it). */
    if (l->fair) l->mode = 'w';
    l->wake_at = s->now + wait;
    if (l->until >= 0 && l->wake_at > l->until) l->wake_at = l->until;
    l->state = L_WAIT;
    return RLK_OK;
}

/* A handle forgotten while a request of its was in flight ends once
 * none is. */
static void end_forgotten(rlk__locks *s, rlk_session_lock *l)
{
    if (l->forgotten && l->state == L_HELD && !l->inflight && !l->ext_on && !l->confirming)
        finish(s, l, 0, RLK_OK);
}


/* A handoff message came to a waiter in line, l.  Under RESP3 it came
 * on this connection after the reply of the waiter's last try, so the
 * release that set the claim ran after that try started: a lock without
 * a watchdog is reported held now, valid for the claim from then, and
 * its confirmation goes in the background (confirmed), so that a
 * handoff costs no more than its message.  The confirmation is waited
 * for instead when that would leave less than a quarter of the claim,
 * for a watchdog lock (its renewals and loss reports go by its TTL), for
 * one asked to be held at its full TTL (full_ttl: its caller may not
 * turn the session again), for an acquire called off, and under RESP2
 * (the message came on another connection: no order with the try's
 * reply). */
static int handed_over(rlk__locks *s, rlk_session_lock *l)
{
    rlk__wait_plan p;
    rlk__wait_plan_for(&p, s->timing.recheck_ms, l->ttl);
    int64_t until = l->try_start + rlk_plan_valid_ms(&s->timing, p.claim);
    if (!nresp3(l->node) || l->lease.watchdog || l->full || l->cancel || until - s->now < p.claim / 4)
        return send_confirm(s, l);
    l->confirming = 1;
    int r = send_confirm(s, l);
    if (r != RLK_OK) {
        l->confirming = 0;
        return r;
    }
    return acquired(s, l, l->handed_fence, 1, p.claim);
}

/* The reply v of a confirmation sent in the background: the lock is
 * then valid for its TTL from the confirmation's sending, or lost (the
 * claim ran out, and someone else may have it).  NULL (the connection
 * closed): it stays valid for its claim.  A lock whose release is under
 * way already learns its fate from the release.  A handle forgotten
 * meanwhile ends now. */
static int confirmed(rlk__locks *s, rlk_session_lock *l, const rlk_resp_value *v)
{
    l->confirming = 0;
    rlk__lease *e = &l->lease;
    if (v && l->state == L_HELD && l->leased && !e->lost) {
        if (v->type == RLK_RESP_INTEGER && v->integer >= 0)
            rlk__lease_set_validity(s->leases, e, l->conf_start, l->ttl);
        if (v->type != RLK_RESP_INTEGER || v->integer < 0 || e->valid_until <= s->now)
            rlk__lease_mark_lost(s->leases, e);
    }
    end_forgotten(s, l);
    return RLK_OK;
}

static void lost_cb(void *ctx, void *owner);

/* A simple lock's first try is SET NX PX (with HGET of the window and
 * TIME); a reentrant lock's, the script in mode '0', which counts another
 * hold of its holder. */
static int start(rlk__locks *s, rlk_session_lock *l)
{
    if (l->lease.acks && l->node && l->node->nowait[0])
        return not_acquired(s, l, fail(s, RLK_ERR_SERVER, "acquire: the server refused %s on this "
                                       "connection (%s): nothing sent",
                                       l->lease.acks_aof ? "WAITAOF" : "WAIT", l->node->nowait));
    l->resent = l->resend;
    if (l->resend) {
        l->resend = 0;
        l->mode = 'q';
        if (l->pending_until >= 0 && s->now >= l->pending_until)
            return not_acquired(s, l, fail(s, RLK_ERR_TIMEOUT, "acquire: not connected in time"));
    } else if (l->kind == 's' && l->wait_ms != 0 &&
               ((l->node && l->node->kept && strcmp(l->node->kept, key(l, RLK__K_CHANNEL)) == 0) ||
                (!nresp3(l->node) && s->listener))) {
        /* Waited for before and still subscribed: in line at the first
         * try (which a release that let the lock go to others for a
         * while also keeps away from it, see release.lua). */
        l->subscribed = 1;
        l->mode = 'w';
    } else {
        l->mode = l->kind == 'r' || l->fair ? '0' : 0;
    }
    return send_try(s, l);
}

/* ------------------------------------------------------------------ */
/* The holder's facts                                                   */

int rlk__locks_check_acquire(rlk__locks *s, const char *name, const rlk_lock_options *o)
{
    if (!name || !*name) return fail(s, RLK_ERR_INVALID, "acquire: empty lock name");
    if (o->kind != RLK_LOCK_SIMPLE && o->kind != RLK_LOCK_REENTRANT && o->kind != RLK_LOCK_FAIR)
        return fail(s, RLK_ERR_INVALID, "acquire: unknown lock kind");
    if (o->kind == RLK_LOCK_REENTRANT && o->holder && !*o->holder)
        return fail(s, RLK_ERR_INVALID, "acquire: empty holder");
    /* A lock valid for no time would be given back by every try that
     * takes it, and tried again at once: a busy loop on the server. */
    int64_t ttl = o->ttl_ms > 0 ? o->ttl_ms : RLK_DEFAULT_TTL_MS;
    if (o->min_replicas < 0 || o->min_replicas_aof < 0 || o->replicas_timeout_ms < 0 ||
        o->min_replicas > RLK__ACKED_ALL || o->min_replicas_aof > RLK__ACKED_ALL ||
        (o->min_replicas && o->min_replicas_aof) || o->replicas_timeout_ms > ttl / 4)
        return fail(s, RLK_ERR_INVALID, "acquire: min_replicas or min_replicas_aof: one of them, "
                                        "with a replicas timeout within a quarter of the TTL");
    if (rlk_plan_valid_ms(&s->timing, ttl) <= 0)
        return fail(s, RLK_ERR_INVALID,
                    "acquire: TTL %lld ms leaves the lock no validity (the drift allowance "
                    "is %lld ms): use a longer TTL",
                    (long long)ttl, (long long)rlk_plan_drift_ms(&s->timing, ttl));
    return RLK_OK;
}

int64_t rlk__locks_acks_ms(const rlk_lock_options *o)
{
    if (!o->min_replicas && !o->min_replicas_aof) return 0;
    if (o->replicas_timeout_ms > 0) return o->replicas_timeout_ms;
    int64_t t = (o->ttl_ms > 0 ? o->ttl_ms : RLK_DEFAULT_TTL_MS) / 10;
    return t > 1000 ? 1000 : t < 1 ? 1 : t;
}

rlk_session_lock *rlk__locks_acquire(rlk__locks *s, const char *name,
                                      const rlk_lock_options *o, void *user, int64_t now)
{
    return rlk__locks_acquire_as(s, name, o, NULL, user, now);
}

rlk_session_lock *rlk__locks_acquire_as(rlk__locks *s, const char *name,
                                         const rlk_lock_options *o, const char *token,
                                         void *user, int64_t now)
{
    rlk_lock_options d;
    if (!o) {
        rlk_lock_options_init(&d);
        o = &d;
    }
    if (rlk__locks_check_acquire(s, name, o) != RLK_OK) return NULL;
    int reentrant = o->kind == RLK_LOCK_REENTRANT;
    char facts[RLK__FACTS_MAX];
    /* "k=f;" first: status tells a fair lock by its value alone. */
    size_t fk = o->kind == RLK_LOCK_FAIR ? 4 : 0;
    memcpy(facts, "k=f;", fk);
    size_t fl = fk + rlk__facts_make(s->host_name, facts + fk, o->holder_cmd);
    /* The token's room: "rlk:", 32 hex digits, ';' and the facts, a
     * holder named, or the session's prefix and a counter's 20 digits.
     * A reentrant release's tombstone: its prefix, ':' and 32 hex
     * digits; then its facts. */
    size_t cap = rlk__key_cap(name);
    if (token && (reentrant || strlen(token) >= RLK__TOKEN_MAX)) token = NULL;
    size_t tl = token      ? strlen(token)
                : !reentrant ? 4 + 32 + 1 + fl
                : o->holder  ? strlen(o->holder)
                             : strlen(s->id) + 20;
    size_t keys = RLK__NKEYS * cap, all = keys + tl + 1 + (reentrant ? cap + 34 + fl + 1 : 0);
    rlk_session_lock *l = rlk__malloc(sizeof *l);
    if (!l) return NULL;
    memset(l, 0, sizeof *l);
    l->cap = cap;
    l->keys = all >= keys ? rlk__malloc(all) : NULL;
    unsigned char rnd[16];
    if (!l->keys || rlk__random_bytes(rnd, sizeof rnd) != 0) {
        fail(s, RLK_ERR_NOMEM, "acquire: out of memory or random bytes");
        free_handle(l);
        return NULL;
    }
    enter(s, now);
    rlk__make_keys(name, l->keys, l->cap);
    l->token = l->keys + keys;
    l->kind = reentrant ? 'r' : 's';
    l->fair = o->kind == RLK_LOCK_FAIR;
    if (token) {
        memcpy(l->token, token, tl + 1);
    } else if (!reentrant) {
        /* "rlk:": resplock's token, which its waiters may mark (see
         * src/lua/acquire.lua); others' are never touched. */
        memcpy(l->token, "rlk:", 4);
        rlk__hex(rnd, sizeof rnd, l->token + 4);
        l->token[36] = ';';
        memcpy(l->token + 37, facts, fl + 1);
    } else {
        if (o->holder) memcpy(l->token, o->holder, tl + 1);
        else snprintf(l->token, tl + 1, "%s%llu", s->id, (unsigned long long)++s->holders);
        /* One release per handle: its tombstone's id can be drawn now. */
        l->tomb = l->token + tl + 1;
        size_t pl = strlen(key(l, RLK__K_TOMB));
        memcpy(l->tomb, key(l, RLK__K_TOMB), pl);
        l->tomb[pl] = ':';
        rlk__hex(rnd, sizeof rnd, l->tomb + pl + 1);
        l->facts = l->tomb + pl + 1 + 32 + 1;
        memcpy(l->facts, facts, fl + 1);
    }
    l->s = s;
    l->user = user;
    l->ttl = o->ttl_ms > 0 ? o->ttl_ms : RLK_DEFAULT_TTL_MS;
    l->wait_ms = o->wait_ms;
    l->full = o->full_ttl != 0;
    l->until = o->wait_ms < 0 ? -1 : s->now + o->wait_ms;
    int64_t t = timeout_ms(s);
    l->pending_until = o->wait_ms < 0 ? -1 : s->now + o->wait_ms + (t < 0 ? 0 : t);
    rlk__lease *e = &l->lease;
    e->key = l->keys;
    e->token = l->token;
    e->kind = l->kind;
    e->slot = rlk__keyslot(name, strlen(name));
    e->ttl = l->ttl;
    e->watchdog = o->watchdog;
    e->margin = o->lost_margin_ms > 0 ? o->lost_margin_ms : 0;
    e->acks_aof = o->min_replicas_aof > 0;
    e->acks = (int)(e->acks_aof ? o->min_replicas_aof : o->min_replicas);
    e->acks_ms = rlk__locks_acks_ms(o);
    /* A handoff is reported held once confirmed, as the replicas counted. */
    if (e->acks) l->full = 1;
    e->owner = l;
    e->destroy = destroy_handle;
    e->on_lost = lost_cb;
    e->ctx = s;
    l->next = s->head;
    if (s->head) s->head->prev = l;
    s->head = l;
    l->state = L_PENDING;
    /* A failure here broke the session: the caller sees it at its next
     * feed or tick, and closing ends this acquire with the others. */
    l->node = node_for(s, e->slot);
    if (nready(l->node)) start(s, l);
    leave(s);
    return l;
}

static void lost_cb(void *ctx, void *owner)
{
    rlk_session_lock *l = owner;
    rlk__locks *s = ctx;
    if (l->state == L_HELD && s->cfg.cb) s->cfg.cb(s->cfg.ctx, s->owner, RLK_SEV_LOST, l, RLK_LOCK_LOST);
}

/* ------------------------------------------------------------------ */
/* Releasing                                                            */

static int release_now(rlk__locks *s, rlk_session_lock *l)
{
    if (!nready(l->node) && rlk__host_routed(s->host) && l->node) {
        /* A cluster node's connection opening (a new primary after a
         * failover): the release waits for it, a command timeout at
         * most, as a release whose reply was lost does. */
        l->state = L_REL_PENDING;
        l->rel_until = reply_deadline(s);
        l->rel_valid = l->leased && !l->lease.lost ? l->lease.valid_until : -1;
        return RLK_OK;
    }
    if (!nready(l->node)) {
        finish(s, l, RLK_SEV_RELEASED, fail(s, RLK_ERR_CLOSED, "release: not connected"));
        return RLK_OK;
    }
    return send_release(s, l, 0);
}

int rlk_session_release(rlk_session_lock *l, int64_t now)
{
    rlk__locks *s = l->s;
    int r = RLK_OK;
    if (l->state == L_RELEASING || l->state == L_REL_PENDING || l->state == L_DONE || l->cancel)
        return fail(s, RLK_ERR_INVALID, "release: under way already");
    enter(s, now);
    switch (l->state) {
    case L_PENDING:
        l->cancel = 1;
        finish(s, l, RLK_SEV_RELEASED, RLK_LOCK_NOT_HELD);
        break;
    case L_WAIT:
        l->cancel = 1;
        l->final = 1;
        if (l->mode == 'w') l->mode = 'q';
        r = send_try(s, l);
        /* A cancel is answered within a command timeout, as a release
         * is: a try without a bound of its own (an acquire that waits
         * for ever) held for its slot's connection ends by then. */
        if (r == RLK_OK) rlk__host_bound(s->host, l, reply_deadline(s));
        break;
    case L_TRY:
    case L_CONFIRM:
        l->cancel = 1;
        rlk__host_bound(s->host, l, reply_deadline(s));
        break;
    default:
        r = release_now(s, l);
    }
    leave(s);
    return r;
}

static int on_push(lnode *n, const rlk_resp_value *v);

void rlk__locks_forget(rlk_session_lock *l, int64_t now)
{
    rlk__locks *s = l->s;
    l->user = NULL;
    if (l->state != L_HELD || l->inflight || l->cancel || l->ext_on) {
        /* Busy: it goes on to its end unheard (user NULL), unrenewed. */
        l->lease.watchdog = 0;
        l->forgotten = 1;
        return;
    }
    enter(s, now);
    finish(s, l, 0, RLK_OK);
    leave(s);
}

const char *rlk__locks_wait_note(const rlk__locks *s)
{
    for (const lnode *n = s->nodes; n; n = n->next)
        if (n->note[0]) return n->note;
    return NULL;
}
const char *rlk__locks_handoff_channel(const rlk__locks *s) { return s->handoff; }
void rlk__locks_set_listener(rlk__locks *s, int on) { s->listener = on; }

int rlk__locks_message(rlk__locks *s, const rlk_resp_value *msg, int64_t now)
{
    lnode *n = s->nodes; /* a RESP2 listener serves one server */
    if (!n) return RLK_OK;
    if (rlk__core_broken(n->core)) return core_failed(s, n->core, rlk__core_broken(n->core));
    if (!rlk__core_connected_now(n->core)) return RLK_OK;
    enter(s, now);
    int r = on_push(n, msg);
    leave(s);
    return r;
}

/* ------------------------------------------------------------------ */
/* Extending                                                            */

int rlk_session_extend(rlk_session_lock *l, int64_t ms, int how, int64_t now)
{
    rlk__locks *s = l->s;
    if (ms < 1 || (how != RLK_EXTEND_ADD && how != RLK_EXTEND_SET))
        return fail(s, RLK_ERR_INVALID, "extend: bad duration or mode");
    if (l->state != L_HELD || l->cancel)
        return fail(s, RLK_ERR_INVALID, "extend: lock '%s' is not held", l->keys);
    if (l->ext_on) return fail(s, RLK_ERR_INVALID, "extend: under way already");
    if (__atomic_load_n(&l->lease.lost, __ATOMIC_RELAXED))
        return fail(s, RLK_LOCK_LOST, "extend: lock '%s' was lost", l->keys);
    if (!nready(l->node)) return fail(s, RLK_ERR_CLOSED, "extend: not connected");
    enter(s, now);
    l->ext_on = 1;
    l->ext_ms = ms;
    l->ext_how = how;
    l->ext_start = s->now;
    int r = send_extend(s, l);
    if (r != RLK_OK) l->ext_on = 0; /* not queued: no event will come */
    leave(s);
    return r;
}

/* ------------------------------------------------------------------ */
/* Replies                                                              */

static void call_done(rlk__locks *s, scall *k, rlk__session_result *res);

static void ready_go(lnode *n);

static int start(rlk__locks *s, rlk_session_lock *l);

/* l's release channel is not heard any more (its slot moved, or the
 * server ended the subscription): a wait goes back in line by its next
 * try, subscribed first (see busy), whether it waits, has a try in
 * flight or one to send again: in line unsubscribed, it would be woken
 * by re-checks only, and a handoff would find no listener. */
static void not_listening(rlk_session_lock *l)
{
    l->subscribed = 0;
    if ((l->state == L_WAIT || l->state == L_TRY || l->state == L_PENDING) && l->mode == 'w')
        l->mode = l->kind == 'r' || l->fair ? '0' : 0;
}

/* l follows its slot to the connection that serves it now, as the
 * host's table says (its lease joins that connection's rounds). */
static void place(rlk__locks *s, rlk_session_lock *l)
{
    lnode *n = node_for(s, l->lease.slot);
    /* No owner known (a table that lists none for now): it stays. */
    if (n == l->node || (!n && l->node)) return;
    not_listening(l); /* the old node's subscription goes with its slot */
    l->node = n;
}

/* A handle waiting for its connection (L_PENDING, L_REL_PENDING) sends
 * now. */
static int resume(rlk__locks *s, rlk_session_lock *l)
{
    if (l->state == L_PENDING) return start(s, l);
    if (l->state == L_REL_PENDING) return send_release(s, l, 0);
    return RLK_OK;
}

/* When l tries again after its try met a redirect loop: the one
 * backoff's next pause. */
static int64_t paced_at(rlk__locks *s, rlk_session_lock *l)
{
    if (!l->paced) {
        rlk__backoff_init(&l->pace, 0, 0, (uint64_t)(uintptr_t)l ^ (uint64_t)s->now);
        l->paced = 1;
    }
    return s->now + rlk__backoff_next(&l->pace);
}

/* Whether the reply v of l's try (an error) ended a redirect loop (more
 * redirects than the host follows: nodes that send the slot to each
 * other after a bad CLUSTER SETSLOT) while l's wait lasts: it then tries
 * again after the one backoff's pause (the table may be mended by then),
 * its last try at the wait's end, and waits meanwhile.  Else the loop is
 * the try's error, which says so. */
static int looping(rlk__locks *s, rlk_session_lock *l)
{
    if (rlk__host_redirects(s->host) <= RLK__HOST_REDIRECTS || l->wait_ms == 0 || l->final ||
        (l->until >= 0 && s->now >= l->until))
        return 0;
    l->wake_at = paced_at(s, l);
    if (l->until >= 0 && l->wake_at > l->until) l->wake_at = l->until;
    l->state = L_WAIT;
    return 1;
}

/* Every handle whose slot is served by another connection now, with no
 * request in flight, follows it: held locks are renewed there at once,
 * waits try there, requests waiting for a connection go there. */
static void rebind(rlk__locks *s)
{
    for (rlk_session_lock *l = s->head; l; l = l->next) {
        if (l->state == L_DONE || l->inflight || l->ext_on || l->confirming) continue;
        lnode *was = l->node;
        place(s, l);
        if (l->node != was && l->state == L_WAIT) l->wake_at = s->now;
    }
}

static int arrived(rlk__locks *s, rlk_session_lock *l, rlk__core *c, const rlk_resp_value *v,
                   int *status)
{
    *status = RLK_OK;
    if (!v && !c) {
        *status = rlk__host_why(s->host, NULL);
        if (*status == RLK_OK) *status = RLK_ERR_CLOSED;
        return 0;
    }
    if (!v) {
        l->lost_on = node_of(s, c); /* its closed hook settles l */
        return 0;
    }
    if (rlk__host_redirects(s->host) && (!l->node || l->node->core != c)) {
        place(s, l);
        rebind(s); /* the others of the slot that moved follow it */
    }
    return 1;
}

static void ready_go(lnode *n)
{
    rlk__locks *s = n->s;
    if (nresp3(n) && !ncluster(n) && send_sub(n, 1, s->handoff) != RLK_OK) return;
    if (s->cfg.cb) s->cfg.cb(s->cfg.ctx, s->owner, RLK_SEV_READY, NULL, RLK_OK);
    for (rlk_session_lock *l = s->head; l && nready(n) && !rlk__core_broken(n->core); l = l->next)
        if ((l->state == L_PENDING || l->state == L_REL_PENDING) && !l->inflight) {
            place(s, l);
            if (l->node != n) continue;
            if (resume(s, l) != RLK_OK) return;
        }
}

static int errlen(const rlk_resp_value *v) { return (int)(v->len > 200 ? 200 : v->len); }

/* A first try's replies: SET NX PX, the window's HGET, then TIME, which
 * decides. */
static void on_set(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    (void)c;
    rlk_session_lock *l = owed(q);
    if (!v) return;
    rlk__locks *s = l->s;
    if (rlk__is_error(v) && rlk__host_redirects(s->host) > RLK__HOST_REDIRECTS) l->looped = 1;
    if (rlk__is_error(v))
        l->set_result =
            of_reply(s, fail(s, RLK_ERR_SERVER, "acquire: %.*s", errlen(v), v->str), v);
    else if (v->type == RLK_RESP_NULL) l->set_result = 0;
    else if (v->type == RLK_RESP_SIMPLE && v->len == 2 && memcmp(v->str, "OK", 2) == 0)
        l->set_result = 1;
    else l->set_result = fail(s, RLK_ERR_PROTO, "acquire: unexpected reply to SET");
}

static void on_yield(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    (void)c;
    rlk_session_lock *l = owed(q);
    if (v) l->window_end = rlk__window_end(v);
}

static void on_time(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    rlk_session_lock *l = owed(q);
    rlk__locks *s = l->s;
    int st;
    if (!arrived(s, l, c, v, &st)) {
        if (st != RLK_OK) not_acquired(s, l, fail(s, st, "acquire: %s", why_msg(s)));
        return;
    }
    if (l->looped && looping(s, l)) return;
    l->paced = 0;
    uint64_t fence = rlk__fence_of_time(v);
    if (l->set_result == 1 && !fence) {
        send_release(s, l, 1);
        not_acquired(s, l, fail(s, RLK_ERR_PROTO, "acquire: unexpected reply to TIME"));
    } else if (l->set_result == 1 && fence / 1000 < l->window_end) {
        /* Taken by a SET NX inside the window in which resplock keeps
         * away from a lock it freed (see release.lua): the script in
         * mode 'q' gives it back and tells how long the window lasts
         * (the form of a try sent again after a lost reply). */
        l->mode = 'q';
        send_try(s, l);
    } else if (l->set_result == 1) {
        acquired(s, l, fence, 1, l->ttl);
    } else if (l->set_result < 0) {
        not_acquired(s, l, l->set_result);
    } else if (!l->probed && !(l->wait_ms != 0 && (nresp3(l->node) || s->listener) &&
                               !(l->node && l->node->nosub))) {
        /* Busy at the acquire's first look, and no try of the script
         * next (a wait in line's is one, and its busy reply tells): the
         * script in mode 'q' (which also takes a lock freed since) tells
         * a lock from an application's key, once, on this path only. */
        l->probed = 1;
        l->mode = 'q';
        send_try(s, l);
    } else {
        busy(s, l, -1);
    }
}

/* A confirmation is sent again as EVAL after NOSCRIPT while its result
 * still matters: waited for, or of a lock still held. */
static int confirm_again(rlk__core *c, const rlk__req *q)
{
    (void)c;
    const rlk_session_lock *l = q->ctx;
    return !l->confirming || l->state == L_HELD;
}

static void on_confirm(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    rlk_session_lock *l = owed(q);
    rlk__locks *s = l->s;
    int st;
    if (!arrived(s, l, c, v, &st)) {
        /* No connection answered in time: a confirmation in the
         * background leaves the lock valid for its claim. */
        if (st == RLK_OK) return;
        if (l->confirming) confirmed(s, l, NULL);
        else not_acquired(s, l, fail(s, st, "acquire: %s", why_msg(s)));
        return;
    }
    if (l->confirming) {
        confirmed(s, l, v);
        return;
    }
    if (v->type != RLK_RESP_INTEGER) {
        not_acquired(s, l, of_reply(s, fail(s, rlk__is_error(v) ? RLK_ERR_SERVER : RLK_ERR_PROTO,
                                            "acquire: unexpected reply to the confirmation"), v));
        return;
    }
    if (v->integer >= 0) {
        acquired(s, l, l->handed_fence, 1, l->ttl);
        return;
    }
    /* Read too late: someone else has it now. */
    l->mode = l->final ? 'q' : 'w';
    if (l->final) send_try(s, l);
    else busy(s, l, -1);
}

/* The acquire script: {1, fence, holds, found} or {0, pttl}. */
static void on_acq(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    rlk_session_lock *l = owed(q);
    rlk__locks *s = l->s;
    int st;
    if (!arrived(s, l, c, v, &st)) {
        if (st != RLK_OK) not_acquired(s, l, fail(s, st, "acquire: %s", why_msg(s)));
        return;
    }
    int64_t ok, x, holds;
    if (rlk__is_error(v)) {
        int loop = rlk__host_redirects(s->host) > RLK__HOST_REDIRECTS;
        if (loop && looping(s, l)) return;
        not_acquired(s, l,
                     of_reply(s, fail(s, RLK_ERR_SERVER, "acquire: %.*s", errlen(v), v->str), v));
        return;
    }
    l->paced = 0;
    if (v->type != RLK_RESP_ARRAY || rlk__int_at(v, 0, &ok) || rlk__int_at(v, 1, &x)) {
        not_acquired(s, l, fail(s, RLK_ERR_PROTO, "acquire: unexpected reply from the server"));
        return;
    }
    if (ok < 0) {
        static const char *const why[] = {"", "neither a string nor a hash",
                                          "a key that never expires",
                                          "a hash whose values are not hold counts"};
        not_acquired(s, l, fail(s, RLK_LOCK_NOT_A_LOCK, "'%s' is not a lock: %s", l->keys,
                                x >= 1 && x <= 3 ? why[x] : "an unknown layout"));
        return;
    }
    if (!ok) {
        /* After the first look's SET NX and script, polls by SET NX. */
        if (l->probed == 1 && l->mode == 'q' && !l->final) l->mode = 0;
        l->probed = 2;
        busy(s, l, x);
        return;
    }
    if (x <= 0) {
        not_acquired(s, l, fail(s, RLK_ERR_PROTO, "acquire: no fence"));
        return;
    }
    if (rlk__int_at(v, 2, &holds) || holds < 1) holds = 1;
    int64_t found;
    if ((char)q->arg != '0' && l->kind == 'r' && !rlk__int_at(v, 3, &found) && found &&
        held_before(s, l)) {
        /* Found its holder's field, not counted: a hold of another
         * handle (both waited in line under one holder), not a handoff
         * to this one.  A try that counts a hold. */
        l->mode = '0';
        send_try(s, l);
        return;
    }
    acquired(s, l, (uint64_t)x, holds, l->ttl);
}

/* The release script's reply, as a status. */
static int release_status(rlk__locks *s, const rlk_resp_value *v, const char *name,
                          int resent)
{
    if (rlk__is_error(v))
        return of_reply(s, fail(s, RLK_ERR_SERVER, "release: %.*s", errlen(v), v->str), v);
    if (v->type != RLK_RESP_INTEGER) return fail(s, RLK_ERR_PROTO, "release: unexpected reply");
    if (v->integer == 1 || v->integer == 2) return RLK_OK; /* 2: one hold of several */
    if (v->integer == 0) return fail(s, RLK_LOCK_NOT_HELD, "release: lock '%s' was not held (expired)", name);
    if (v->integer == -3 && resent) /* only a re-send carries its bound */
        return fail(s, RLK_ERR_TIMEOUT,
                    "release: lock '%s': its re-send came too late to tell whether the first "
                    "attempt ran; it did nothing",
                    name);
    return fail(s, RLK_LOCK_NOT_OWNER, "release: lock '%s' is held by someone else", name);
}

/* A native form (q->arg 1) that did not do it: answered nil or 0 (the
 * value is not exactly the token: marked by waiters, or not this
 * holder's), or refused itself (caps dropped then).  The script is sent
 * instead, in the request's place (l's requests go in order), and
 * decides: 1 then; 0: the reply is the caller's; -1: read it as lost. */
static int native_missed(rlk__core *c, const rlk__req *q, const rlk_resp_value *v, unsigned caps)
{
    rlk_session_lock *l = q->ctx;
    if (q->arg != 1 || !v) return 0;
    if (rlk__is_error(v)) {
        /* SET is refused at maxmemory, the script (allow-oom) is not. */
        int oom = rlk__reply_class(v) == RLK_EC_OOM;
        if (!oom && !rlk__set_ifeq_refused(v)) return 0;
        /* An extend's script would come after the release queued
         * behind it, which may have gone its own way: the refusal is
         * the extend's result. */
        if (q->ops == &extend_native_ops && l->state != L_HELD) return 0;
        if (oom) l->lease.scripted = 1;
        else rlk__core_drop_caps(c, caps);
    } else if (v->type == RLK_RESP_NULL || (v->type == RLK_RESP_INTEGER && v->integer == 0)) {
        l->lease.scripted = 1;
    } else {
        return 0;
    }
    rlk__locks *s = l->s;
    const rlk__req_ops *ops = q->ops == &extend_native_ops ? &extend_ops : &release_ops;
    /* To the slot's connection, which answered (the host follows an ASK
     * again). */
    s->dl_valid = 0;
    int r = rlk__host_submit(s->host, l->lease.slot, ops, l, 0, q->deadline, 0);
    if (r == RLK_OK) return 1; /* the request's place in inflight passes to it */
    /* Not queued (the connection broke): the request ends as if its
     * reply were lost (-1), which closing reports. */
    core_failed(s, c, r);
    return -1;
}

/* SET IFEQ's reply to an extend (or the script's, where it went as the
 * script). */
static void on_set_ifeq(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    rlk_session_lock *l = q->ctx;
    int m = native_missed(c, q, v, RLK_CAP_SET_IFEQ);
    if (m > 0) return;
    if (m < 0) v = NULL;
    rlk_resp_value x;
    if (q->arg == 1 && v && v->type == RLK_RESP_SIMPLE) {
        /* OK: the TTL set, as the script answers. */
        memset(&x, 0, sizeof x);
        x.type = RLK_RESP_INTEGER;
        x.integer = l->ext_ms;
        v = &x;
    }
    on_extend(c, q, v);
}

static void on_release(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    int m = native_missed(c, q, v, RLK_CAP_DELIFEQ | RLK_CAP_DELEX_IFEQ);
    if (m > 0) return;
    if (m < 0) v = NULL;
    rlk_session_lock *l = owed(q);
    rlk__locks *s = l->s;
    int st;
    if (!arrived(s, l, c, v, &st)) {
        if (st != RLK_OK) finish(s, l, RLK_SEV_RELEASED, fail(s, st, "release: %s", why_msg(s)));
        return;
    }
    finish(s, l, RLK_SEV_RELEASED, release_status(s, v, l->keys, l->kind == 'r' && l->rel_resend));
}

/* A release nobody waits for: its handle is gone (see send_release). */
static void on_ignored(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    (void)c;
    (void)q;
    (void)v;
}

/* The extend script's reply: RLK_OK with the TTL set in *after, or a
 * status. */
static int extend_status(rlk__locks *s, const rlk_resp_value *v, const char *name, int64_t *after)
{
    if (rlk__is_error(v))
        return of_reply(s, fail(s, RLK_ERR_SERVER, "extend: %.*s", errlen(v), v->str), v);
    if (v->type != RLK_RESP_INTEGER)
        return fail(s, RLK_ERR_PROTO, "extend: unexpected reply from the server");
    if (v->integer == -1) return fail(s, RLK_LOCK_NOT_HELD, "extend: lock '%s' is not held (expired)", name);
    if (v->integer < 0) return fail(s, RLK_LOCK_NOT_OWNER, "extend: lock '%s' is held by someone else", name);
    *after = v->integer;
    return RLK_OK;
}

/* An extend of a lock whose release is queued behind it is not sent
 * again after NOSCRIPT: its result must come before the release's
 * (which ends the handle), so the NOSCRIPT is its result. */
static int extend_again(rlk__core *c, const rlk__req *q)
{
    (void)c;
    const rlk_session_lock *l = q->ctx;
    return l->state == L_HELD;
}

static void on_extend(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    rlk_session_lock *l = owed(q);
    rlk__locks *s = l->s;
    if (l->state == L_DONE) return; /* its result was given at the end (finish) */
    int st;
    if (!arrived(s, l, c, v, &st)) {
        if (st == RLK_OK) return;
        /* No connection to the node of its slot in time; or its sending
         * again (after a redirect) ran out of memory, which broke that
         * connection: closed, as the header says of an extend. */
        if (st == RLK_ERR_NOMEM) st = RLK_ERR_CLOSED;
        l->ext_on = 0;
        if (s->cfg.cb)
            s->cfg.cb(s->cfg.ctx, s->owner, RLK_SEV_EXTENDED, l,
                      fail(s, st, "extend: %s", why_msg(s)));
        end_forgotten(s, l);
        return;
    }
    int64_t after = 0;
    st = extend_status(s, v, l->keys, &after);
    rlk__lease *e = &l->lease;
    l->ext_on = 0;
    if (e->lost) {
        st = fail(s, RLK_LOCK_LOST, "extend: lock '%s' was lost", l->keys);
    } else if (st == RLK_OK) {
        /* A set TTL becomes the lock's TTL; an added time is a one-off
         * and renewals go on with the TTL the lock had. */
        if (l->ext_how == RLK_EXTEND_SET) e->ttl = l->ext_ms;
        rlk__lease_set_validity(s->leases, e, l->ext_start, after);
        if (e->valid_until <= s->now)
            st = fail(s, RLK_ERR_TIMEOUT, "extend: the reply came after the validity it gave");
    }
    if (st == RLK_LOCK_NOT_HELD || st == RLK_LOCK_NOT_OWNER || st == RLK_ERR_TIMEOUT)
        rlk__lease_mark_lost(s->leases, e);
    if (s->cfg.cb) s->cfg.cb(s->cfg.ctx, s->owner, RLK_SEV_EXTENDED, l, st);
    end_forgotten(s, l);
}

/* ------------------------------------------------------------------ */
/* Calls without a handle                                               */

static int build_call(rlk__core *c, rlk__req *q)
{
    scall *k = q->ctx;
    /* A release on a cluster: ARGV[5] 's', SPUBLISH in the lock's slot
     * (see build_release). */
    const char *ks[8] = {k->keys, k->keys + RLK__K_QUEUE * k->cap,
                         k->keys + RLK__K_WAITERS * k->cap, k->token, "0", "", "", "s"};
    char ms[24];
    ttl_str(ms, k->ms);
    const char *ext[5] = {k->keys, k->token, ms, k->how == RLK_EXTEND_ADD ? "add" : "set", "s"};
    int ext_call = k->which == SC_EXTEND;
    int argc = ext_call ? 5 : k->which == SC_STATUS ? 3 : rlk__core_cluster(c) ? 8 : 4;
    return rlk__core_put_script(c, q, &k->s->scripts[k->which], ext_call ? 1 : 3, argc,
                                ext_call ? ext : ks, NULL);
}

static void on_call(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static const rlk__req_ops call_array_ops = {build_call, on_call, NULL, RLK__T_ARRAY};
static const rlk__req_ops call_int_ops = {build_call, on_call, NULL, RLK__T_INTEGER};

static void call_done(rlk__locks *s, scall *k, rlk__session_result *res)
{
    if (k->prev) k->prev->next = k->next;
    else s->calls = k->next;
    if (k->next) k->next->prev = k->prev;
    if (k->cb) k->cb(k->ctx, s->owner, res);
    rlk__free(k);
}

/* The status script's reply: {held, type, pttl, holds, waiters, facts,
 * not a lock}. */
static int read_status(rlk__locks *s, const rlk_resp_value *v, rlk_lock_status *st)
{
    int64_t held, ttl, holds, w, bad;
    const rlk_resp_value *t = rlk_resp_value_at(v, 1), *f = rlk_resp_value_at(v, 5);
    if (rlk__is_error(v))
        return of_reply(s, fail(s, RLK_ERR_SERVER, "status: %.*s", errlen(v), v->str), v);
    if (v->type != RLK_RESP_ARRAY || rlk__int_at(v, 0, &held) || rlk__int_at(v, 2, &ttl) ||
        rlk__int_at(v, 3, &holds) || rlk__int_at(v, 4, &w) || rlk__int_at(v, 6, &bad) || !t ||
        !f || (f->type != RLK_RESP_BULK && f->type != RLK_RESP_SIMPLE))
        return fail(s, RLK_ERR_PROTO, "status: unexpected reply from the server");
    memset(st, 0, sizeof *st);
    st->not_a_lock = bad >= 1 && bad <= 3 ? (int)bad : 0;
    rlk__facts_read(st, f->str, f->len);
    st->held = held != 0;
    if (rlk__str_is(t, "hash", 4)) st->kind = RLK_LOCK_REENTRANT;
    st->ttl_ms = held ? ttl : 0;
    st->holds = holds;
    st->waiters = w;
    return RLK_OK;
}

static void on_call(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    scall *k = q->ctx;
    rlk__locks *s = k->s;
    rlk__session_result res;
    memset(&res, 0, sizeof res);
    if (!v && !c) {
        /* Its slot's connection did not come in time (or was refused). */
        int st = rlk__host_why(s->host, NULL);
        res.status = fail(s, st == RLK_ERR_TIMEOUT ? RLK_ERR_CLOSED : st,
                          "not connected to the node of '%s'", k->keys);
    } else if (!v) {
        res.status = fail(s, RLK_ERR_CLOSED, "the connection closed");
    } else if (k->which == SC_STATUS) {
        res.status = read_status(s, v, &res.lock);
    } else if (k->which == SC_RELEASE) {
        res.status = release_status(s, v, k->keys, 0);
    } else {
        res.status = extend_status(s, v, k->keys, &res.ttl_ms_after);
    }
    call_done(s, k, &res);
}

static int call(rlk__locks *s, int which, const char *name, const char *token, int64_t ms,
                int how, rlk__session_call_cb cb, void *ctx, int64_t now)
{
    if (!name || !*name || (which != SC_STATUS && (!token || !*token)))
        return fail(s, RLK_ERR_INVALID, "empty lock name or token");
    if (which == SC_EXTEND && (ms < 1 || (how != RLK_EXTEND_ADD && how != RLK_EXTEND_SET)))
        return fail(s, RLK_ERR_INVALID, "extend: bad duration or mode");
    unsigned slot = rlk__keyslot(name, strlen(name));
    lnode *n = node_for(s, slot);
    /* On a cluster the slot's connection may be opening: the host holds
     * the call for it, a command timeout at most. */
    if (!nready(n) && !rlk__host_routed(s->host)) return fail(s, RLK_ERR_CLOSED, "not connected");
    size_t cap = rlk__key_cap(name), tl = token ? strlen(token) + 1 : 0;
    scall *k = rlk__malloc(sizeof *k + RLK__NKEYS * cap + tl);
    if (!k) return fail(s, RLK_ERR_NOMEM, "out of memory");
    memset(k, 0, sizeof *k);
    k->s = s;
    k->which = which;
    k->how = how;
    k->ms = ms;
    k->cb = cb;
    k->ctx = ctx;
    k->cap = cap;
    k->slot = slot;
    rlk__make_keys(name, k->keys, cap);
    k->token = k->keys + RLK__NKEYS * cap;
    if (token) memcpy(k->token, token, tl);
    enter(s, now);
    s->dl_valid = 0;
    int r = rlk__host_submit(s->host, slot, which == SC_STATUS ? &call_array_ops : &call_int_ops, k,
                             0, reply_deadline(s), 0);
    if (r != RLK_OK) {
        core_failed(s, n ? n->core : NULL, r);
        rlk__free(k);
    } else {
        k->next = s->calls;
        if (s->calls) s->calls->prev = k;
        s->calls = k;
    }
    leave(s);
    return r;
}

int rlk__locks_status(rlk__locks *s, const char *name, rlk__session_call_cb cb, void *ctx,
                        int64_t now)
{
    return call(s, SC_STATUS, name, NULL, 0, 0, cb, ctx, now);
}

int rlk__locks_release_token(rlk__locks *s, const char *name, const char *token,
                               rlk__session_call_cb cb, void *ctx, int64_t now)
{
    return call(s, SC_RELEASE, name, token, 0, 0, cb, ctx, now);
}

int rlk__locks_extend_token(rlk__locks *s, const char *name, const char *token, int64_t ms,
                              int how, rlk__session_call_cb cb, void *ctx, int64_t now)
{
    return call(s, SC_EXTEND, name, token, ms, how, cb, ctx, now);
}

/* A push (RESP3): a handoff to one of the handles, or a release that
 * wakes those waiting for the lock. */
/* A sharded subscription the server ended by itself (its slot moved
 * away): the waits on it try again, where the slot is now, and
 * subscribe there. */
static void sunsubscribed(lnode *n, const rlk_resp_value *ch)
{
    rlk__locks *s = n->s;
    if (n->kept && rlk__str_is(ch, n->kept, strlen(n->kept))) {
        rlk__free(n->kept);
        n->kept = NULL;
    }
    for (rlk_session_lock *l = s->head; l; l = l->next) {
        if (l->node != n || !l->subscribed ||
            !rlk__str_is(ch, key(l, RLK__K_CHANNEL), strlen(key(l, RLK__K_CHANNEL))))
            continue;
        not_listening(l);
        if (l->state == L_WAIT) l->wake_at = s->now;
    }
}

static int on_push(lnode *n, const rlk_resp_value *v)
{
    rlk__locks *s = n->s;
    const rlk_resp_value *ch = rlk_resp_value_at(v, 1), *kind = rlk_resp_value_at(v, 0);
    if (ch && rlk__str_is(kind, "sunsubscribe", 12)) {
        sunsubscribed(n, ch);
        return RLK_OK;
    }
    int sharded = rlk__str_is(kind, "smessage", 8);
    if ((!sharded && !rlk__str_is(kind, "message", 7)) || !ch) return RLK_OK;
    /* A message on the handoff channel that names no waiter's token (a
     * handoff meant for an earlier wait, or a forgery) is no lock: the
     * waiters look again at once.  On a cluster the handoff comes on the
     * lock's channel, where only "0" (freed) wakes the others. */
    int handoff = rlk__str_is(ch, s->handoff, strlen(s->handoff));
    const rlk_resp_value *pl = rlk_resp_value_at(v, 2);
    int freed = !sharded || (pl && rlk__str_is(pl, "0", 1));
    for (rlk_session_lock *l = s->head; l; l = l->next) {
        if (l->state == L_DONE || l->state == L_HELD || l->state == L_RELEASING ||
            l->state == L_REL_PENDING || l->node != n)
            continue;
        uint64_t fence;
        if (rlk__handoff_parse(v, sharded ? key(l, RLK__K_CHANNEL) : s->handoff, l->token, &fence)) {
            l->handed_fence = fence;
            if (l->state == L_WAIT) return handed_over(s, l);
            l->handed = 1; /* confirmed after the try in flight */
            return RLK_OK;
        }
        if (l->state == L_WAIT &&
            (handoff ||
             (freed && rlk__str_is(ch, key(l, RLK__K_CHANNEL), strlen(key(l, RLK__K_CHANNEL)))))) {
            int r = send_try(s, l);
            if (r != RLK_OK) return r;
        }
    }
    return RLK_OK;
}

/* The answer to a SUBSCRIBE or UNSUBSCRIBE (q->arg: its channel's
 * hash).  A SUBSCRIBE refused (an ACL user without the channel: Redis
 * 7's default for new users, or without the command) is remembered for
 * the connection, and its waiters re-check instead (see busy); a
 * refused UNSUBSCRIBE leaves a channel whose messages no waiter needs. */
static void on_sub(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    rlk__locks *s = q->ctx;
    lnode *n = node_of(s, c);
    if (!n || !v || q->sub != RLK__SUB_ON || !rlk__is_error(v)) return;
    uint64_t chan = (uint64_t)q->arg;
    if (rlk__host_redirect_class(s->host, v)) {
        /* A sharded channel whose slot moves: no refusal.  Its waits
         * look again soon, and subscribe where the slot is then (the
         * host told the topology of a MOVED, and the handles follow the
         * table at its changed). */
        for (rlk_session_lock *h = s->head; h; h = h->next) {
            const char *ch = key(h, RLK__K_CHANNEL);
            if (h->node != n || rlk__fnv1a(ch, strlen(ch)) != chan) continue;
            not_listening(h);
            if (h->state == L_WAIT && h->wake_at > s->now + 100) h->wake_at = s->now + 100;
        }
        return;
    }
    if (chan == s->handoff_hash) {
        n->nosub |= NOSUB_HANDOFF;
        snprintf(n->note, sizeof n->note,
                 "SUBSCRIBE refused (%.*s): waits re-check the lock, not in line", errlen(v), v->str);
        return;
    }
    n->nosub |= NOSUB_RELEASE;
    if (!(n->nosub & NOSUB_HANDOFF))
        snprintf(n->note, sizeof n->note,
                 "SUBSCRIBE refused (%.*s): waits are not woken by releases, they re-check the lock",
                 errlen(v), v->str);
    for (rlk_session_lock *h = s->head; h; h = h->next) {
        const char *ch = key(h, RLK__K_CHANNEL);
        if (h->subscribed && rlk__fnv1a(ch, strlen(ch)) == chan) h->subscribed = 0;
    }
}


/* ------------------------------------------------------------------ */
/* Time                                                                 */

static int64_t deadline_now(const rlk__locks *s);

static int64_t locks_deadline(const rlk__locks *s)
{
    /* The cache is the lock's own bookkeeping, not its state: the const
     * of the caller's view stays true. */
    rlk__locks *m = (rlk__locks *)s;
    if (!m->dl_valid || m->depth > 0) {
        m->dl_cache = deadline_now(s);
        m->dl_valid = m->depth == 0;
    }
    return m->dl_cache;
}

static int64_t deadline_now(const rlk__locks *s)
{
    int64_t next = -1;
#define AT(t) do { int64_t t_ = (t); if (t_ >= 0 && (next < 0 || t_ < next)) next = t_; } while (0)
    for (const rlk_session_lock *l = s->head; l; l = l->next) {
        if (l->state == L_PENDING) AT(l->pending_until);
        else if (l->state == L_REL_PENDING) AT(l->rel_until);
        else if (l->state == L_WAIT) AT(l->wake_at);
        /* Its slot's connection up (found by a new table): it goes. */
        if ((l->state == L_PENDING || l->state == L_REL_PENDING) && !l->inflight && nready(l->node))
            AT(s->now);
    }
#undef AT
    return next;
}

/* What is due (the core's tick hook, from the connection of from):
 * waits, rounds on every connection that can send, losses.  A failure
 * is from's alone (another connection's breaks that one). */
static int locks_tick(rlk__locks *s, lnode *from, int64_t now)
{
    if (from && rlk__core_broken(from->core))
        return core_failed(s, from->core, rlk__core_broken(from->core));
    enter(s, now);
    for (rlk_session_lock *l = s->head; l; l = l->next) {
        if (l->state == L_PENDING && l->pending_until >= 0 && s->now >= l->pending_until) {
            not_acquired(s, l, fail(s, RLK_ERR_TIMEOUT, "acquire: not connected in time"));
        } else if (l->state == L_REL_PENDING && l->rel_until >= 0 && s->now >= l->rel_until) {
            finish(s, l, RLK_SEV_RELEASED, fail(s, RLK_ERR_TIMEOUT, "release: not connected in time"));
        } else if (l->state == L_WAIT && s->now >= l->wake_at) {
            if (l->until >= 0 && s->now >= l->until) {
                l->final = 1;
                if (l->mode == 'w') l->mode = 'q';
            }
            send_try(s, l);
        }
        if ((l->state == L_PENDING || l->state == L_REL_PENDING) && !l->inflight &&
            nready(l->node) && !rlk__core_broken(l->node->core))
            resume(s, l);
    }
    int r = RLK_OK;
    if (from && rlk__core_broken(from->core))
        r = core_failed(s, from->core, rlk__core_broken(from->core));
    leave(s);
    return r;
}

/* ------------------------------------------------------------------ */
/* The connection                                                       */

/* A new connection (the core's hook): its first round re-checks every
 * held lock (the server may have lost its keys). */
static void on_connected(void *ctx, rlk__core *c)
{
    lnode *n = node_of(ctx, c);
    if (!n) return;
    n->nosub = 0;
    n->note[0] = n->nowait[0] = '\0';
}

/* The connection went (the core's hook), after each request owed
 * heard so (a round's leases are tried again on the next connection,
 * while validity lasts; calls ended RLK_ERR_CLOSED): the handles'
 * states are settled here. */
static void on_closed(void *ctx, rlk__core *c)
{
    rlk__locks *s = ctx;
    lnode *n = node_of(s, c);
    if (!n) return;
    enter(s, rlk__core_now(c));
    rlk__free(n->kept);
    n->kept = NULL;
    for (rlk_session_lock *l = s->head; l; l = l->next) {
        int lost = l->lost_on == n;
        if (l->node != n && !lost) continue;
        if (l->node == n) {
            l->subscribed = 0;
            l->handed = 0;
        }
        l->lost_on = NULL;
        /* A request of its is still to be answered (held by the host,
         * or sent to another connection after a redirect): that answer
         * settles it. */
        if (l->inflight) continue;
        /* A background confirmation's reply will not come. */
        if (l->confirming) {
            confirmed(s, l, NULL);
            if (l->state == L_DONE) continue;
        }
        if (l->ext_on) {
            /* Its reply will not come: the lock stays as valid as it
             * was.  Before a release's result, as it was sent before. */
            l->ext_on = 0;
            if (s->cfg.cb)
                s->cfg.cb(s->cfg.ctx, s->owner, RLK_SEV_EXTENDED, l,
                          fail(s, RLK_ERR_CLOSED, "extend: the connection closed"));
            if (l->state == L_DONE) continue;
        }
        if (l->state == L_TRY || l->state == L_WAIT || l->state == L_CONFIRM) {
            /* Tried again after the next handshake, within the acquire's
             * deadline: the lost try may have taken the lock, which the
             * 'q' form finds.  Not another hold of a reentrant lock held
             * already: a hold the lost try counted could not be told
             * from the earlier ones. */
            if (!l->cancel && (l->pending_until < 0 || s->now < l->pending_until) &&
                !(l->kind == 'r' && held_before(s, l))) {
                l->state = L_PENDING;
                l->resend = 1;
            } else {
                not_acquired(s, l, fail(s, RLK_ERR_CLOSED, "acquire: the connection closed"));
            }
        } else if (l->state == L_RELEASING) {
            /* Sent again once, within a command timeout of the first. */
            if (!l->rel_resend && (l->rel_until < 0 || s->now < l->rel_until)) {
                l->state = L_REL_PENDING;
                l->rel_resend = 1;
            } else {
                finish(s, l, RLK_SEV_RELEASED, fail(s, RLK_ERR_CLOSED, "release: the connection closed"));
            }
        } else if (l->state == L_REL_PENDING) {
            /* Closed again before the re-send went: it ends. */
            finish(s, l, RLK_SEV_RELEASED, fail(s, RLK_ERR_CLOSED, "release: the connection closed"));
        }
    }
    rlk__leases_notify_lost(s->leases, 0);
    leave(s);
}

/* ------------------------------------------------------------------ */
/* Life                                                                 */

/* A connection's handshake is done: the handoff channel is subscribed
 * to there (RESP3), and the acquires and releases that waited for the
 * connection of their slot go. */
static void host_ready(void *ctx, rlk__core *c)
{
    lnode *n = node_of(ctx, c);
    if (n) ready_go(n);
}

static void host_push(void *ctx, rlk__core *c, const rlk_resp_value *v)
{
    lnode *n = node_of(ctx, c);
    if (n) on_push(n, v);
}

/* A message on a channel the lock subscribed (the host's dispatch). */
static void on_msg(void *ctx, rlk__core *c, const rlk_resp_value *v) { host_push(ctx, c, v); }

/* Which core serves which slot changed (a cluster's new table): the
 * handles whose slot moved follow it (their leases are re-checked at
 * once on the new connection; waits and handles waiting for a
 * connection go there). */
static void host_changed(void *ctx) { rebind(ctx); }

/* The connections will not come (the client's servers were refused, msg
 * says why): every acquire and release that waits for one ends now with
 * status, as its deadline would have ended it (the host answered the
 * requests it held so). */
static void host_refused(void *ctx, int status, const char *msg)
{
    rlk__locks *s = ctx;
    for (rlk_session_lock *l = s->head; l; l = l->next) {
        if (l->inflight || l->ext_on || l->confirming) continue; /* its reply ends it */
        if (l->state == L_PENDING || l->state == L_WAIT)
            not_acquired(s, l, fail(s, status, "acquire: %s", msg));
        else if (l->state == L_REL_PENDING)
            finish(s, l, RLK_SEV_RELEASED, fail(s, status, "release: %s", msg));
    }
    rlk__leases_notify_lost(s->leases, 0);
}

static int64_t host_deadline(void *ctx) { return locks_deadline(ctx); }

static int host_tick(void *ctx, int64_t now)
{
    rlk__locks *s = ctx;
    return locks_tick(s, node_of(s, rlk__host_turning(s->host)), now);
}

static void host_enter(void *ctx, int64_t now) { enter(ctx, now); }

static int host_leave(void *ctx, int r)
{
    rlk__locks *s = ctx;
    rlk__core *c = rlk__host_turning(s->host);
    if (c) return leave_core(s, c, r);
    rlk__leases_notify_lost(s->leases, 0);
    leave(s);
    return r;
}

static const rlk__host_ops host_ops = {on_connected, host_ready,    on_closed,
                                       host_changed, host_refused,  host_push,
                                       host_deadline, host_tick,    host_enter,
                                       host_leave};

rlk__locks *rlk__locks_new(rlk__host *host, rlk__renewer *renewer, const rlk_session_config *cfg,
                           void *owner)
{
    rlk__locks *s = rlk__malloc(sizeof *s);
    if (!s) return NULL;
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    if (cfg->timing) s->timing = *cfg->timing;
    s->cfg.timing = &s->timing;
    /* The connection's strings are the core's. */
    s->cfg.username = s->cfg.password = s->cfg.client_name = NULL;
    s->host = host;
    s->renewer = renewer;
    s->leases = rlk__renewer_leases(renewer);
    s->owner = owner;
    unsigned char rnd[12 + 16];
    if (rlk__random_bytes(rnd, sizeof rnd) != 0 || rlk__host_join(host, &host_ops, s) != RLK_OK) {
        rlk__free(s);
        return NULL;
    }
    memcpy(s->handoff, "resplock:handoff:", 17);
    rlk__hex(rnd, 12, s->handoff + 17);
    s->handoff_hash = rlk__fnv1a(s->handoff, strlen(s->handoff));
    rlk__hex(rnd + 12, 16, s->id);
    s->id[32] = ':';
    s->id[33] = 0;
    /* The host's name, once: an acquire makes no system call for it. */
    rlk__facts_host(s->host_name);
    const char *texts[SC_COUNT] = {rlk__lua_acquire, rlk__lua_release, rlk__lua_extend,
                                   rlk__lua_status};
    for (int i = 0; i < SC_COUNT; i++) rlk_script_init(&s->scripts[i], texts[i], 0);
    return s;
}

rlk__locks *rlk__locks_new_on(rlk__core *core, const rlk_session_config *cfg, void *owner)
{
    rlk__host *h = rlk__host_new(NULL);
    rlk__renewer *rn = h && rlk__host_attach(h, core) == RLK_OK ? rlk__renewer_new(h, cfg->timing) : NULL;
    rlk__locks *s = rn ? rlk__locks_new(h, rn, cfg, owner) : NULL;
    if (!s) {
        rlk__renewer_free(rn);
        rlk__host_free(h);
        return NULL;
    }
    s->own_host = h;
    s->own_renewer = rn;
    return s;
}

void rlk__locks_free(rlk__locks *s)
{
    if (!s) return;
    rlk__host_part(s->host, &host_ops, s);
    s->depth++;
    /* Rounds in flight hold leases of handles freed below. */
    rlk__renewer_abandon(s->renewer);
    for (lnode *n = s->nodes; n; n = n->next) {
        rlk__free(n->kept);
        n->kept = NULL;
    }
    s->leases->lost_head = NULL; /* no event from here */
    while (s->head) {
        rlk_session_lock *l = s->head;
        unlink_handle(s, l);
        if (l->leased) rlk__renewer_remove(s->renewer, &l->lease);
        free_handle(l);
    }
    s->depth--;
    while (s->zombies) {
        rlk_session_lock *l = s->zombies;
        s->zombies = l->znext;
        free_handle(l);
    }
    while (s->calls) {
        scall *k = s->calls;
        s->calls = k->next;
        rlk__free(k);
    }
    while (s->nodes) {
        lnode *n = s->nodes;
        s->nodes = n->next;
        rlk__free(n);
    }
    rlk__renewer_free(s->own_renewer);
    rlk__host_free(s->own_host);
    rlk__free(s);
}
