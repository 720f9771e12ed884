/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The blocking client (rlk_client, rlk_lock in resplock.h): thin
 * wrappers over the client core.
 *
 * A client is a route (route.h: one server, or the Redis Cluster it
 * finds from its seeds, a driver per node), one primitive host over it
 * (host.h), attached to every data core the route makes and told of
 * each new slot table, whose topology the route's kind gives
 * (rlk__route_topo), and the primitives that join the host: the lock
 * (lock.h: rlk__locks), the rate limiter (rate.h) and the semaphore
 * (sem.h).  The client names
 * the route's members by role, never by index: the connection whose
 * health, socket and facts are the client's is the route's primary
 * (rlk__route_primary), and what the host attaches is its data members
 * (rlk__route_is_data); which member that is is the route kind's word.
 * Each call queues its request with the lock and turns the route until
 * the lock reports the result by an event, or until the call's
 * deadline.  The lock protocol (tries, the line of waiters and
 * handoffs, renewal rounds, re-sends after a lost reply, the script
 * calls) is the lock's alone, following redirects the host's; what is
 * left here is the handles, the holder of a reentrant lock (the client's random id and the calling thread), one
 * deadline per call, the pauses of a try the server refused for a while
 * (LOADING, BUSY), a RESP2 listener's connection, and who turns the
 * route.
 *
 * Who turns it: without the watchdog thread, the owner's calls, each
 * while it waits (and rlk_client_tick, one turn that never waits for the
 * server).  With the thread, the thread alone: it turns the route with
 * the client's mutex released while it polls, and a call from the
 * owner's thread queues its request under the mutex, wakes the thread
 * (a pipe) and waits on a condition for the result.  on_lost is called
 * by whoever turned the route when the loss was found: from the thread
 * with the mutex held, from the owner's calls after the mutex is let go.
 *
 * Or the owner's event loop turns it (rlk_client_watch, then its wait,
 * then rlk_client_handle: a prepared turn of the route split around the
 * loop's own wait), and the _async calls start a request without
 * waiting: their results are owed to their callbacks, which
 * rlk_client_handle calls, as it calls on_lost.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "resplock.h"
#include "clock.h"
#include "conn_internal.h"
#include "defaults.h"
#include "internal.h"
#include "host.h"
#include "lease.h"
#include "keys.h"
#include "route.h"
#include "host.h"
#include "lock.h"
#include "lua.h"
#include "rate.h"
#include "sem.h"
#include "rw.h"
#include "redlock.h"
#include "reply.h"
#include "transport.h"
#include "sentinel.h"
#include "url.h"
#include "waiter.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A try refused with LOADING or BUSY is tried again after these pauses,
 * doubling. */
#define BUSY_PAUSE_MIN_MS 100
#define BUSY_PAUSE_MAX_MS 3200

/* A result of the event loop's calls, owed to its callback. */
typedef struct owed_result {
    int owed, status;
    char *msg;                /* the client's message then (NULL: none) */
} owed_result;

enum { OP_NONE, OP_ACQUIRE, OP_RELEASE };
enum { RES_OP, RES_EXT };

struct rlk_lock {
    rlk_client *cl;
    rlk_lock *prev, *next;    /* the client's handles */
    rlk_session_lock *sl;     /* the session's handle; NULL once it ended */
    char *name;
    char token[RLK__TOKEN_MAX]; /* simple: rlk:, hex, facts; reentrant: the holder */
    rlk_lock_kind kind;
    uint64_t fence;
    int64_t holds;
    int64_t ttl;              /* what renewals set (atomic: read by any thread) */
    int lost;                 /* atomic: reported lost, or found past its validity */
    int lost_due;             /* on_lost owed, called at the end of the call */
    int held;                 /* handed to the caller by its acquire */
    int releasing;            /* its release (or forget) is under way */
    void (*on_lost)(void *ctx, rlk_lock *l);
    void *ctx;
    int done, status;         /* the result of the request under way */
    int orphan;               /* given up by its call: freed at its end */
    /* The event loop's calls on it (rlk_lock_acquire_async...): the one
     * under way, and the results owed to their callbacks (deliver). */
    int op;                   /* OP_ACQUIRE or OP_RELEASE under way */
    rlk_lock_done op_done;
    void *op_ctx;
    int ext_on;               /* an extend under way */
    int ext_how;
    int64_t ext_ms;
    rlk_lock_done ext_done;
    void *ext_ctx;
    int rel_wait;             /* a release waiting for the connection... */
    int64_t rel_by;           /* ...until (-1: no bound) */
    int rel_lost;             /* lost before its release */
    owed_result res[2];       /* RES_OP's (acquire, release), RES_EXT's */
    rlk__rl_lock *rl;         /* a Redlock client's: the lock over its servers */
    int mark;                 /* owed when deliver began */
    int pinned;               /* in deliver's hands: not freed... */
    int doomed;               /* ...but out of the client's list */
};

/* Thread mode's own calls: reached through cl->th only, which the first
 * rlk_client_watchdog_start sets, so that a program that never starts the
 * thread (the static command) links none of them. */
typedef struct thread_ops {
    void (*signal)(rlk_client *cl);              /* a result came */
    void (*wait)(rlk_client *cl, int64_t until); /* for a result, or until (-1: none) */
    void (*join)(rlk_client *cl);                /* the thread, told to stop */
    void (*end)(rlk_client *cl);                 /* the client is freed */
} thread_ops;

struct rlk_client {
    rlk_client_config cfg;
    char *strings;            /* cfg.conn's strings, copied */
    /* The holder of its reentrant locks, with ":THREAD-ID" after it:
     * the configured client_id (its first 64 bytes) and ':', if any,
     * then a random UUID of this client's, so that no two clients share
     * a holder whatever their configuration (two containers each
     * running as PID 1 with one client_id have the same thread ids). */
    char client_id[104];
    /* A Redlock client (cfg.redlock) is its servers' clients, each a
     * client of this file, and the lock over them (redlock.h): every
     * call goes there, and nothing below is used. */
    rlk__rl *rl;
    rlk__route route;         /* one server, for now */
    rlk__host *host;          /* over the route's cores: the primitives join it */
    rlk__locks *lk;           /* the locks, joined to the host */
    rlk__renewer *renewer;    /* the watchdog's rounds, joined to the host */
    rlk__rates *rates;        /* the rate limiter, joined to the host at its first call */
    struct rate_rec *rate_recs; /* the rate calls under way */
    int rate_due;             /* some rate call's result is owed to a loop */
    rlk__sems *sems;          /* the semaphores, joined to the host at their first call */
    /* rlk__sems_free, set with sems: a program that never calls rlk_sem_*
     * links none of the semaphore's code (a static command stays small). */
    void (*sems_free)(rlk__sems *m);
    struct rlk_sem *sem_list; /* the permits held */
    int sem_notify;           /* some permit's on_lost is owed */
    rlk__rws *rws;            /* the read-write locks, as sems */
    void (*rws_free)(rlk__rws *m);
    struct rlk_rw *rw_list;   /* the holds */
    int rw_notify;            /* some hold's on_lost is owed */
    rlk_lock *locks;
    pthread_mutex_t mu;       /* recursive: on_lost may read accessors */
    pthread_cond_t cv;        /* a result came (thread mode; made by its first start) */
    const struct thread_ops *th; /* thread mode's calls, set by its first start */
    pthread_t thread;
    int thread_on;
    int stopping;
    int wake_pipe[2];
    int notify;               /* some handle's lost_due is set */
    int ticking;              /* rlk_client_tick was called: tick mode */
    /* When a held lock's validity ends next, at the soonest (-1: none):
     * the sweep is due then, not at every call (a client may hold
     * thousands of locks). */
    int64_t next_expiry;
    int64_t timeout;          /* the command timeout (-1: none) */
    rlk_conn *own;            /* rlk_client_conn's */
    /* A RESP2 wait's listener: a connection of its own subscribed to the
     * session's handoff channel and to side_channel (the release channel
     * of the lock waited for), its messages relayed to the session: the
     * route's side connection, polled in the same turns as the route's
     * (its connect and its SUBSCRIBEs go in steps, so that a server slow
     * to answer them holds back no renewal of the locks held), which
     * connects again by itself after a loss, and subscribes again then.
     * side_channel set: wanted. */
    int side_on;              /* the route's side connection is this */
    int side_state;           /* SIDE_* */
    int side_heard;           /* confirmations on its connection */
    char *side_channel;
    /* Why a RESP2 wait re-checks instead: its listener's SUBSCRIBE was
     * refused (rlk_client_wait_note; "": it was not). */
    char side_note[320];
    rlk_conn_info info;
    /* The event loop: rlk_client_watch prepares a turn of the route into
     * wp, which rlk_client_handle ends (watch_ok: none turned it since). */
    int looping;              /* one of the loop's calls was made */
    struct pollfd *wp;        /* one entry per server */
    int watch_ok;
    int loop_fail;            /* a failure of the watch, for the handle */
    int owed;                 /* some handle has a result owed */
    char err[600];
    rlk_error_class errclass; /* err's server error's class (rlk_client_errclass) */
};

/* ------------------------------------------------------------------ */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int cl_fail(rlk_client *cl, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cl->err, sizeof cl->err, fmt, ap);
    va_end(ap);
    cl->errclass = RLK_EC_NONE;
    return status;
}

/* The lock's message for a failure it reported, and its server error's
 * class. */
static int session_fail(rlk_client *cl, int status)
{
    cl_fail(cl, status, "%s", rlk__locks_errmsg(cl->lk));
    cl->errclass = rlk__locks_errclass(cl->lk);
    return status;
}

/* The driver's message for a failure of the connection. */
static int driver_fail(rlk_client *cl, int status)
{
    rlk__route_health h;
    rlk__route_health_of(&cl->route, rlk__route_primary(&cl->route), &h);
    return cl_fail(cl, status, "%s", h.err[0] ? h.err : rlk_strerror(status));
}

const char *rlk_client_errmsg(const rlk_client *cl)
{
    return cl->rl ? rlk__rl_errmsg(cl->rl) : cl->err;
}
rlk_error_class rlk_client_errclass(const rlk_client *cl)
{
    return cl->rl ? RLK_EC_NONE : cl->errclass;
}

/* Every call of the owner's begins here.  The host's clock is set to now
 * first: a primitive's request counts its reply's deadline from the
 * host's clock, which otherwise is the time of the client's last turn
 * (after an idle spell longer than the command timeout, a deadline in
 * the past: the connection timed out right after the request went). */
static void enter(rlk_client *cl)
{
    pthread_mutex_lock(&cl->mu);
    if (cl->host) rlk__host_clock(cl->host, rlk__now_ms());
}

static void mark_lost(rlk_client *cl, rlk_lock *l);

/* The server given whose connection is ready (of several seeds of a
 * cluster, the first that is), else the route's primary. */
static size_t seed_of(const rlk_client *cl)
{
    for (size_t i = 0; i < cl->route.seeds; i++)
        if (rlk__core_ready(rlk__route_core((rlk__route *)&cl->route, i))) return i;
    return rlk__route_primary(&cl->route);
}

/* The core of the server given (see seed_of). */
static rlk__core *core_of(const rlk_client *cl)
{
    return rlk__route_core((rlk__route *)&cl->route, seed_of(cl));
}

static int64_t sooner(int64_t a, int64_t b)
{
    if (a < 0) return b;
    if (b < 0) return a;
    return a < b ? a : b;
}

/* Marks lost the held handles whose validity is over, whatever drives
 * their renewal, or nothing does (no watchdog, a tick-mode client that
 * does not tick): the session reports a watchdog lock lost before its
 * validity ends only while someone turns it.  Returns when the next
 * held handle's validity ends (-1: none). */
static int64_t sweep(rlk_client *cl)
{
    int64_t now = rlk__now_ms(), next = -1;
    for (rlk_lock *l = cl->locks; l; l = l->next) {
        if (!l->held || l->releasing || !l->sl || __atomic_load_n(&l->lost, __ATOMIC_RELAXED))
            continue;
        int64_t left = rlk_session_lock_remaining_ms(l->sl, now);
        if (left > 0) next = sooner(next, now + left);
        else mark_lost(cl, l);
    }
    return next;
}

/* l's validity ends now + what is left of it: the sweep comes then at
 * the latest (an acquire, or an extend that may have shortened it). */
static void expires(rlk_client *cl, rlk_lock *l)
{
    int64_t now = rlk__now_ms();
    cl->next_expiry = sooner(cl->next_expiry, now + rlk_session_lock_remaining_ms(l->sl, now));
}

/* Lets the mutex go, then (on the owner's side) calls the on_lost owed,
 * those of locks whose validity ran out among them: they may call the
 * client's functions.  The list is walked again after each call, which
 * may have released or forgotten handles. */
static void sems_notify(rlk_client *cl);
static void rws_notify(rlk_client *cl);

static void leave(rlk_client *cl)
{
    sems_notify(cl);
    rws_notify(cl);
    if (!cl->thread_on && cl->next_expiry >= 0 && rlk__now_ms() >= cl->next_expiry)
        cl->next_expiry = sweep(cl);
    while (!cl->thread_on && cl->notify) {
        rlk_lock *l = cl->locks;
        while (l && !l->lost_due) l = l->next;
        if (!l) {
            cl->notify = 0;
            break;
        }
        l->lost_due = 0;
        pthread_mutex_unlock(&cl->mu);
        l->on_lost(l->ctx, l);
        pthread_mutex_lock(&cl->mu);
    }
    pthread_mutex_unlock(&cl->mu);
}

/* Makes the thread, if any, look at the session now. */
static void wake_thread(rlk_client *cl)
{
    if (!cl->thread_on) return;
    ssize_t w;
    do {
        w = write(cl->wake_pipe[1], "w", 1);
    } while (w < 0 && errno == EINTR); /* a full pipe wakes it as well */
}

/* ------------------------------------------------------------------ */
/* Handles                                                              */

/* l is lost (the session found it so, or its validity is over): marked
 * once, and its on_lost called once: from the thread while it runs
 * (with the mutex held, as documented: now, or at its next turn when
 * the owner's call found it), else at the end of the owner's call.  Not
 * for a handle whose call gave it up, nor one being released (the
 * release reports it). */
static void mark_lost(rlk_client *cl, rlk_lock *l)
{
    if (__atomic_exchange_n(&l->lost, 1, __ATOMIC_RELAXED)) return;
    if (!l->on_lost || l->orphan || l->releasing) return;
    if (cl->thread_on && pthread_equal(pthread_self(), cl->thread)) {
        l->on_lost(l->ctx, l);
    } else {
        l->lost_due = 1;
        cl->notify = 1;
        wake_thread(cl);
    }
}

static rlk_lock *new_handle(rlk_client *cl, const char *name, const rlk_lock_options *o)
{
    rlk_lock *l = rlk__malloc(sizeof *l);
    if (!l) return NULL;
    memset(l, 0, sizeof *l);
    size_t n = strlen(name) + 1;
    l->name = rlk__malloc(n);
    if (!l->name) {
        rlk__free(l);
        return NULL;
    }
    memcpy(l->name, name, n);
    l->cl = cl;
    l->kind = o->kind;
    l->ttl = o->ttl_ms > 0 ? o->ttl_ms : RLK_DEFAULT_TTL_MS;
    l->on_lost = o->on_lost;
    l->ctx = o->ctx;
    l->next = cl->locks;
    if (cl->locks) cl->locks->prev = l;
    cl->locks = l;
    return l;
}

static void free_mem(rlk_lock *l)
{
    for (int i = 0; i < 2; i++) rlk__free(l->res[i].msg);
    rlk__free(l->name);
    rlk__free(l);
}

/* l leaves the client's list and is freed, at once or, while deliver
 * holds it, after its callbacks. */
static void free_handle(rlk_lock *l)
{
    rlk_client *cl = l->cl;
    if (l->doomed) return;
    if (l->prev) l->prev->next = l->next;
    else cl->locks = l->next;
    if (l->next) l->next->prev = l->prev;
    if (l->pinned) l->doomed = 1;
    else free_mem(l);
}

static int lost_release(rlk_client *cl, rlk_lock *l, int status);

/* l's result for its callback (RES_OP or RES_EXT), with the client's
 * message when it failed: rlk_client_handle calls it (deliver). */
static void owe(rlk_client *cl, rlk_lock *l, int which, int status)
{
    owed_result *o = &l->res[which];
    o->owed = 1;
    o->status = status;
    rlk__free(o->msg);
    o->msg = NULL;
    if (status != RLK_OK) {
        size_t n = strlen(cl->err) + 1;
        if ((o->msg = rlk__malloc(n))) memcpy(o->msg, cl->err, n);
    }
    cl->owed = 1;
}

/* An event that ends an event loop's call on l. */
static void loop_result(rlk_client *cl, rlk_lock *l, rlk_session_event ev, int status)
{
    if (ev == RLK_SEV_EXTENDED) {
        if (status == RLK_OK && l->ext_how == RLK_EXTEND_SET)
            __atomic_store_n(&l->ttl, l->ext_ms, __ATOMIC_RELAXED);
        if (l->sl) expires(cl, l);
        owe(cl, l, RES_EXT, status);
        return;
    }
    if (ev == RLK_SEV_ACQUIRED) {
        l->held = 1;
        expires(cl, l);
    } else if (l->op == OP_RELEASE && l->rel_lost) {
        status = lost_release(cl, l, status);
    }
    owe(cl, l, RES_OP, status);
}

/* The session's events.  The handle's result is recorded for the call
 * waiting for it (or owed to an event loop's callback); a handle its
 * call gave up is freed at its end. */
static void on_event(void *ctx, rlk_session *s, rlk_session_event ev, rlk_session_lock *sl,
                     int status)
{
    rlk_client *cl = ctx;
    rlk_lock *l = sl ? rlk_session_lock_user(sl) : NULL;
    if (!l) return;
    switch (ev) {
    case RLK_SEV_ACQUIRED:
        l->fence = rlk_session_lock_fence(sl);
        l->holds = rlk_session_lock_holds(sl);
        {
            /* As snprintf's "%s", which costs more than the rest of the
             * event: a token that does not fit is cut. */
            const char *t = rlk_session_lock_token(sl);
            size_t n = strlen(t);
            if (n >= sizeof l->token) n = sizeof l->token - 1;
            memcpy(l->token, t, n);
            l->token[n] = '\0';
        }
        break;
    case RLK_SEV_NOT_ACQUIRED:
    case RLK_SEV_RELEASED:
        l->sl = NULL;
        break;
    case RLK_SEV_LOST:
        mark_lost(cl, l);
        return;
    default:
        break;
    }
    /* An orphan's end is nobody's result: the message stays the call's. */
    (void)s;
    if (status != RLK_OK && !l->orphan) session_fail(cl, status);
    if (ev == RLK_SEV_EXTENDED ? l->ext_on : l->op) {
        loop_result(cl, l, ev, status);
        return;
    }
    l->done = 1;
    l->status = status;
    if (l->orphan && !l->sl) free_handle(l);
    if (cl->thread_on) cl->th->signal(cl);
}

/* ------------------------------------------------------------------ */
/* Turning the route                                                    */

/* ------------------------------------------------------------------ */
/* The RESP2 listener                                                   */

/* Where the listener is: connecting and subscribing; heard by both
 * channels (at least once: after a loss it subscribes again); failed
 * before it was; a SUBSCRIBE refused. */
enum { SIDE_DIALING = 1, SIDE_LISTENING, SIDE_FAILED, SIDE_REFUSED };

/* Its messages go to the session; a confirmation that answers no
 * SUBSCRIBE of ours (the server's own) is nothing to it. */
static void side_push(void *ctx, rlk__core *c, const rlk_resp_value *msg)
{
    (void)c;
    rlk_client *cl = ctx;
    if (rlk__core_is_confirmation(msg)) return;
    /* A failure broke the session: the driver's next turn closes it. */
    rlk__locks_message(cl->lk, msg, rlk__now_ms());
}

/* A SUBSCRIBE's answer.  NULL: the connection went (the driver says
 * why, and connects again). */
static void side_subscribed(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    (void)c;
    rlk_client *cl = q->ctx;
    if (!v) return;
    if (rlk__is_error(v)) {
        /* An ACL without the channels: waits re-check instead. */
        snprintf(cl->side_note, sizeof cl->side_note,
                 "SUBSCRIBE refused (%.*s): waits re-check the lock, not in line",
                 (int)(v->len > 200 ? 200 : v->len), v->str ? v->str : "");
        cl->side_state = SIDE_REFUSED;
        return;
    }
    if (++cl->side_heard == 2) {
        cl->side_state = SIDE_LISTENING;
        cl->side_note[0] = '\0';
    }
}

static const rlk__req_ops side_sub_ops = {NULL, side_subscribed, NULL, 0};

/* Connected (its handshake done): both channels asked for.  One that
 * cannot be queued breaks the core, whose connection the driver's next
 * turn closes. */
static void side_ready(void *ctx, rlk__core *c)
{
    rlk_client *cl = ctx;
    const char *h = rlk__locks_handoff_channel(cl->lk);
    cl->side_heard = 0;
    if (rlk__core_subscribe(c, 1, 0, h, &side_sub_ops, cl, 0) == RLK_OK)
        rlk__core_subscribe(c, 1, 0, cl->side_channel, &side_sub_ops, cl, 0);
}

static void side_drop(rlk_client *cl)
{
    if (cl->side_on) rlk__route_side_close(&cl->route);
    cl->side_on = 0;
    cl->side_state = 0;
}

/* Sets the listener up for side_channel: the turns connect it and
 * subscribe it.  RLK_OK, or the failure (no listener then). */
static int side_open(rlk_client *cl)
{
    rlk_conn_config cc = cl->cfg.conn;
    cc.protocol = 2;
    cc.on_push = NULL;
    cc.on_connect = NULL;
    cc.ctx = NULL;
    cc.reconnect_attempts = 1; /* connects again after a loss whatever the client's say */
    rlk__core_config kc;
    memset(&kc, 0, sizeof kc);
    kc.max_input = cl->cfg.conn.max_reply_bytes;
    kc.stray_confirmations = 1;
    kc.hooks.ready = side_ready;
    kc.hooks.push = side_push;
    kc.hooks.ctx = cl;
    int r = rlk__route_side_open(&cl->route, &cc, &kc);
    if (r != RLK_OK) return cl_fail(cl, r, "wait: listener: %s", cl->route.err);
    cl->side_on = 1;
    cl->side_state = SIDE_DIALING;
    cl->side_heard = 0;
    return r;
}

/* A turn's status of the listener's driver: a failure before it
 * listened ends its first try, as a failed one (the wait polls). */
static void side_status(rlk_client *cl, int r)
{
    if (r != RLK_OK && cl->side_state == SIDE_DIALING) cl->side_state = SIDE_FAILED;
}

static void side_end(rlk_client *cl)
{
    side_drop(cl);
    rlk__free(cl->side_channel);
    cl->side_channel = NULL;
    rlk__locks_set_listener(cl->lk, 0);
}

/* After a turn: a listener refused, failed before it listened, or that
 * no turn can connect any more, goes; the wait goes on without it, its
 * waiters re-checking. */
static void side_after(rlk_client *cl)
{
    if (!cl->side_on) return;
    if (cl->side_state == SIDE_REFUSED || cl->side_state == SIDE_FAILED ||
        !rlk__route_side_can_go_on(&cl->route))
        side_end(cl);
}

static int side_settled(void *ctx)
{
    rlk_client *cl = ctx;
    return !cl->side_on || cl->side_state != SIDE_DIALING;
}

/*
 * One turn: the route (connect when due, send, poll, read, tick the
 * cores, whose ticks are the lock's too), the RESP2 listener when a wait
 * has one, and wake_fd (the thread's pipe, or -1).  unlock: the mutex is let go while
 * polling (the thread).  The route's status.
 */
static int turn(rlk_client *cl, int64_t until, int wake_fd, int unlock)
{
    cl->watch_ok = 0; /* a watch's entries are of the turn before */
    if (wake_fd < 0 && !cl->side_on) return rlk__route_turn_alone(&cl->route, until);
    struct pollfd p[RLK__ROUTE_MAX + 2];
    int64_t wake, side_wake = -1;
    int r = rlk__route_prepare(&cl->route, p, until, &wake);
    size_t rn = cl->route.polled, n = rn + 1;
    p[rn].fd = -1;
    p[rn].events = p[rn].revents = 0;
    if (cl->side_on) {
        side_status(cl, rlk__route_side_prepare(&cl->route, &p[rn], until, &side_wake));
        wake = sooner(wake, side_wake);
    }
    if (wake_fd >= 0) {
        p[rn + 1].fd = wake_fd;
        p[rn + 1].events = POLLIN;
        p[rn + 1].revents = 0;
        n = rn + 2;
        /* Looks at the lock again at least every recheck_ms, and at the
         * end of a held lock's validity (sweep). */
        wake = sooner(sooner(wake, rlk__now_ms() + cl->cfg.recheck_ms), cl->next_expiry);
    } else if (r != RLK_OK && !rlk__route_can_go_on(&cl->route)) {
        return r;
    }
    if (unlock) pthread_mutex_unlock(&cl->mu);
    rlk__poll_until(p, n, wake);
    if (n == rn + 2 && p[rn + 1].revents) {
        char drain[64];
        while (read(wake_fd, drain, sizeof drain) > 0) {
        }
    }
    if (unlock) pthread_mutex_lock(&cl->mu);
    /* Of the listener prepared above alone: the owner's call may have
     * ended it, or opened another, while the thread polled. */
    if (cl->side_on) side_status(cl, rlk__route_side_after(&cl->route, &p[rn]));
    int r2 = rlk__route_after(&cl->route, p);
    side_after(cl);
    return r != RLK_OK ? r : r2;
}

typedef struct {
    rlk_client *cl;
    int (*done)(void *);
    void *ctx;
    int fails0, max_fails;
} drive_goal;

/* Done, or a call that gives up on connecting: its connect tries failed
 * max_fails times in a row. */
static int goal_met(void *arg)
{
    drive_goal *g = arg;
    if (g->done(g->ctx)) return 1;
    /* On a cluster the seed is one node of several: each name's
     * requests wait for their own node's connection, within their
     * deadlines. */
    if (rlk__route_is_cluster(&g->cl->route) || g->cl->route.seeds > 1) return 0;
    rlk__route_health h;
    rlk__route_health_of(&g->cl->route, rlk__route_primary(&g->cl->route), &h);
    return g->max_fails > 0 && !h.up && h.fails - g->fails0 >= g->max_fails;
}

/* The connect tries a call makes before it gives up (wait_ms 0, and the
 * calls on a held lock): the connection's reconnect_attempts. */
static int tries(const rlk_client *cl)
{
    int n = cl->cfg.conn.reconnect_attempts;
    return n == 0 ? 5 : n < 0 ? 1 : n;
}

/*
 * Turns the route (or, while the thread runs, waits for it to) until
 * done(ctx), or until (monotonic ms; -1: none), or until max_fails
 * connect tries in a row failed (0: no such bound; a handshake the
 * server refused for now counts, and is tried again after the backoff's
 * pause).  With the mutex held.  RLK_OK; RLK_ERR_TIMEOUT (also when the
 * tries ran out); or the failure of a driver that cannot go on (one no
 * retry mends: RLK_ERR_URL, RLK_ERR_AUTH, a certificate refused; or
 * closed with reconnecting off), its reason in cl->err.
 */
static int drive_for(rlk_client *cl, int (*done)(void *), void *ctx, int64_t until, int max_fails)
{
    rlk__route_health h;
    rlk__route_health_of(&cl->route, rlk__route_primary(&cl->route), &h);
    drive_goal g = {cl, done, ctx, h.fails, max_fails};
    int r;
    if (!cl->thread_on) {
        for (;;) {
            r = RLK_OK;
            if (goal_met(&g)) break;
            if (until >= 0 && rlk__now_ms() >= until) {
                r = RLK_ERR_TIMEOUT;
                break;
            }
            r = turn(cl, until, -1, 0);
            if (r != RLK_OK && !rlk__route_can_go_on(&cl->route)) break;
        }
        if (r == RLK_OK && !done(ctx)) r = RLK_ERR_TIMEOUT;
    } else {
        wake_thread(cl);
        r = RLK_OK;
        while (!goal_met(&g)) {
            if (!rlk__route_can_go_on(&cl->route)) {
                rlk__route_health_of(&cl->route, rlk__route_primary(&cl->route), &h);
                r = h.fatal ? h.fatal : RLK_ERR_CLOSED;
                break;
            }
            if (until >= 0 && until <= rlk__now_ms()) {
                r = RLK_ERR_TIMEOUT;
                break;
            }
            cl->th->wait(cl, until);
        }
        if (r == RLK_OK && !done(ctx)) r = RLK_ERR_TIMEOUT;
    }
    if (r != RLK_OK && r != RLK_ERR_TIMEOUT) driver_fail(cl, r);
    return r;
}

static int drive(rlk_client *cl, int (*done)(void *), void *ctx, int64_t until)
{
    return drive_for(cl, done, ctx, until, tries(cl));
}

static int handle_done(void *ctx) { return ((rlk_lock *)ctx)->done; }
static int never(void *ctx) { (void)ctx; return 0; }
static int seed_ready(void *ctx) { return rlk__route_seed_ready(ctx); }

/* A call's deadline passed (or the connection cannot be had) without a
 * ready session: the status to return, with the connection's own reason
 * when a connect failed. */
static int not_connected(rlk_client *cl, int r, const char *doing)
{
    rlk__route_health h;
    rlk__route_health_of(&cl->route, rlk__route_primary(&cl->route), &h);
    if (r == RLK_ERR_TIMEOUT && h.held && !h.fails && h.err[0])
        return cl_fail(cl, r, "%s: timed out asking the sentinels for the primary: %s", doing,
                       h.err);
    if (r == RLK_ERR_TIMEOUT && h.fails && h.last) r = h.last;
    if (r == RLK_ERR_TIMEOUT || !h.err[0]) return cl_fail(cl, r, "%s: %s", doing, rlk_strerror(r));
    return cl_fail(cl, r, "%s: %s", doing, h.err);
}

/* Connects (when not connected) and waits for the handshake, until. */
static int ready_by(rlk_client *cl, int64_t until, const char *doing)
{
    /* A cluster: each name's call waits for its node's connection
     * itself (the seed's may be down while the others serve). */
    if (rlk__route_seed_ready(&cl->route) || rlk__route_is_cluster(&cl->route)) return RLK_OK;
    int r = drive(cl, seed_ready, &cl->route, until);
    if (r == RLK_OK) return RLK_OK;
    return not_connected(cl, r, doing);
}

static int64_t after_ms(const rlk_client *cl, int64_t from, int64_t ms)
{
    (void)cl;
    return ms < 0 ? -1 : from + ms;
}

/* A RESP2 wait's listener for side_channel, waited for by turns that
 * renew the locks held meanwhile, until it listens, fails or is
 * refused, or until (and one connect and one reply's time at most):
 * listening, the waits go in line; else they poll. */
static void side_listen(rlk_client *cl, int64_t until)
{
    if (side_open(cl) == RLK_OK) {
        int64_t c = cl->cfg.conn.connect_timeout_ms, t = cl->timeout;
        int64_t by = rlk__now_ms() + c + (t >= 0 ? t : c);
        char err[sizeof cl->err];
        memcpy(err, cl->err, sizeof err);
        drive_for(cl, side_settled, cl, sooner(until, by), 0);
        memcpy(cl->err, err, sizeof err); /* the wait's own, not the listener's */
    }
    if (cl->side_on && cl->side_state == SIDE_LISTENING) rlk__locks_set_listener(cl->lk, 1);
    else side_end(cl);
}

/* ------------------------------------------------------------------ */
/* The client                                                           */

static void *thread_main(void *arg);

/* The host's topology is the route's (rlk__route_topo: its kind's a
 * slot's core, a redirect followed); a cluster node's new core is
 * attached, a new slot table told. */
static int route_added(void *ctx, rlk__core *core)
{
    rlk_client *cl = ctx;
    return rlk__host_attach(cl->host, core);
}

static void route_changed(void *ctx)
{
    rlk_client *cl = ctx;
    rlk__host_changed(cl->host, rlk__now_ms());
}

/* Seeds that are not one cluster: what waits for a connection fails
 * now with the reason, not at its deadline (a wait for ever would never
 * end). */
static void route_refused(void *ctx)
{
    rlk_client *cl = ctx;
    rlk__host_refuse(cl->host, RLK_ERR_INVALID, cl->route.err, rlk__now_ms());
}

static const rlk__rl_api member_api;

rlk_client *rlk_client_new(const rlk_client_config *cfg)
{
    rlk_client *cl = rlk__malloc(sizeof *cl);
    if (!cl) return NULL;
    memset(cl, 0, sizeof *cl);
    if (cfg && cfg->redlock) {
        /* Its servers' clients are all it has. */
        cl->wake_pipe[0] = cl->wake_pipe[1] = -1;
        if (!(cl->rl = rlk__rl_new(&member_api, cfg))) {
            rlk__free(cl);
            return NULL;
        }
        return cl;
    }
    if (cfg) cl->cfg = *cfg;
    cl->wake_pipe[0] = cl->wake_pipe[1] = -1;
    if (!cl->cfg.drift_ms) cl->cfg.drift_ms = RLK__DEFAULT_DRIFT_MS;
    if (cl->cfg.renew_divisor <= 0) cl->cfg.renew_divisor = 3;
    if (cl->cfg.recheck_ms <= 0) cl->cfg.recheck_ms = RLK__DEFAULT_RECHECK_MS;
    unsigned char u[16];
    char h[33];
    if (rlk__random_bytes(u, sizeof u) != 0) {
        rlk__free(cl);
        return NULL;
    }
    u[6] = (unsigned char)((u[6] & 0x0f) | 0x40); /* a version 4 UUID */
    u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
    rlk__hex(u, sizeof u, h);
    const char *id = cl->cfg.client_id ? cl->cfg.client_id : "";
    snprintf(cl->client_id, sizeof cl->client_id, "%.64s%s%.8s-%.4s-%.4s-%.4s-%.12s", id,
             *id ? ":" : "", h, h + 8, h + 12, h + 16, h + 20);
    cl->cfg.client_id = NULL;
    int t = cl->cfg.conn.command_timeout_ms;
    cl->timeout = t == 0 ? RLK__DEFAULT_TIMEOUT_MS : t < 0 ? -1 : t;
    if (cl->cfg.conn.connect_timeout_ms <= 0) cl->cfg.conn.connect_timeout_ms = RLK__DEFAULT_TIMEOUT_MS;
    if (rlk__conn_config_copy(&cl->cfg.conn, &cl->strings) != RLK_OK) {
        rlk__free(cl);
        return NULL;
    }
    rlk_session_config sc;
    rlk_session_config_init(&sc);
    sc.timing = &cl->cfg;
    sc.cb = on_event;
    sc.ctx = cl;
    rlk__core_config cc;
    memset(&cc, 0, sizeof cc);
    cc.max_input = cl->cfg.conn.max_reply_bytes;
    cc.library = &rlk__lua_library;
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    int ok = pthread_mutex_init(&cl->mu, &ma) == 0;
    pthread_mutexattr_destroy(&ma);
    if (!ok) {
        rlk__free(cl->strings);
        rlk__free(cl);
        return NULL;
    }
    /* A URL that does not parse is the first call's failure (as a
     * connection's would be), not the constructor's. */
    /* The seeds: conn.url's server, then each of cfg->seeds with the
     * same settings (the route's drivers copy their strings). */
    rlk_conn_config seeds[16];
    size_t nseeds = cl->cfg.seeds && cl->cfg.nseeds <= 15 ? cl->cfg.nseeds : 0;
    seeds[0] = cl->cfg.conn;
    for (size_t i = 0; i < nseeds; i++) {
        seeds[i + 1] = cl->cfg.conn;
        seeds[i + 1].url = cl->cfg.seeds[i] ? cl->cfg.seeds[i] : "";
    }
    int sentinel = rlk__url_is_sentinel(cl->cfg.conn.url);
    int r = sentinel ? rlk__route_init_kind(&cl->route, &rlk__route_kind_sentinel, seeds, &cc)
                     : rlk__route_init(&cl->route, RLK__ROUTE_ONE, 1 + nseeds, seeds, &cc);
    if ((cl->cfg.seeds && cl->cfg.nseeds > 15) || (sentinel && nseeds)) r = RLK_ERR_INVALID;
    cl->cfg.seeds = NULL; /* the caller's: not kept */
    rlk__host_topo topo;
    rlk__route_topo(&cl->route, &topo);
    rlk__route_hooks rh = {route_added, route_changed, route_refused, cl};
    rlk__route_set_hooks(&cl->route, &rh);
    ok = (r == RLK_OK || r == RLK_ERR_URL) && cl->route.drivers && cl->route.n &&
         (cl->host = rlk__host_new(&topo)) != NULL;
    for (size_t i = 0; ok && i < cl->route.n; i++)
        if (rlk__route_is_data(&cl->route, i))
            ok = rlk__host_attach(cl->host, rlk__route_core(&cl->route, i)) == RLK_OK;
    ok = ok && (cl->renewer = rlk__renewer_new(cl->host, sc.timing)) != NULL;
    ok = ok && (cl->lk = rlk__locks_new(cl->host, cl->renewer, &sc, NULL)) != NULL;
    if (!ok) {
        rlk__locks_free(cl->lk);
        rlk__renewer_free(cl->renewer);
        rlk__host_free(cl->host);
        rlk__route_destroy(&cl->route);
        pthread_mutex_destroy(&cl->mu);
        rlk__free(cl->strings);
        rlk__free(cl);
        return NULL;
    }
    return cl;
}

int rlk_client_connect(rlk_client *cl)
{
    if (cl->rl) return rlk__rl_connect(cl->rl);
    enter(cl);
    int r = ready_by(cl, rlk__now_ms() + cl->cfg.conn.connect_timeout_ms, "connect");
    leave(cl);
    return r;
}

static void rates_end(rlk_client *cl);
static void sems_end(rlk_client *cl);
static void rws_end(rlk_client *cl);

void rlk_client_free(rlk_client *cl)
{
    if (!cl) return;
    if (cl->rl) {
        rlk__rl_free(cl->rl);
        while (cl->locks) free_handle(cl->locks);
        rlk__free(cl);
        return;
    }
    rlk_client_watchdog_stop(cl);
    side_drop(cl);
    rates_end(cl);
    sems_end(cl);
    rws_end(cl);
    rlk__locks_free(cl->lk); /* its handles, before the cores their requests are on */
    rlk__renewer_free(cl->renewer);
    rlk__host_free(cl->host);
    rlk__route_destroy(&cl->route);
    while (cl->locks) free_handle(cl->locks);
    rlk_conn_free(cl->own);
    rlk__free(cl->side_channel);
    rlk__free(cl->wp);
    if (cl->th) cl->th->end(cl);
    pthread_mutex_destroy(&cl->mu);
    rlk__free(cl->strings);
    rlk__free(cl);
}

rlk_conn *rlk_client_conn(rlk_client *cl)
{
    if (cl->rl) return rlk_client_conn(rlk__rl_member(cl->rl, 0));
    if (!cl->own) {
        rlk_conn_config cc = cl->cfg.conn;
        cc.on_push = NULL;
        cc.on_connect = NULL;
        cc.ctx = NULL;
        cl->own = rlk_conn_new(&cc);
        if (!cl->own) cl_fail(cl, RLK_ERR_NOMEM, "out of memory");
        else rlk__conn_set_library(cl->own, &rlk__lua_library);
    }
    return cl->own;
}

const rlk_conn_info *rlk_client_info(rlk_client *cl)
{
    if (cl->rl) return rlk__rl_info(cl->rl);
    enter(cl);
    size_t seed = seed_of(cl);
    const rlk_conn_info *si = rlk__core_info(core_of(cl));
    const rlk_conn_info *out = NULL;
    rlk__route_health h;
    rlk__route_health_of(&cl->route, seed, &h);
    if (h.up && si->protocol) {
        cl->info = *si;
        rlk__route_peer(&cl->route, seed, &cl->info);
        out = &cl->info;
    }
    leave(cl);
    return out;
}

const char *rlk_client_wait_note(rlk_client *cl)
{
    if (cl->rl) return NULL;
    enter(cl);
    const char *n = rlk__locks_wait_note(cl->lk);
    if (!n && cl->side_note[0]) n = cl->side_note;
    leave(cl);
    return n;
}

uint64_t rlk_client_generation(rlk_client *cl)
{
    if (cl->rl) return rlk__rl_generation(cl->rl);
    enter(cl);
    rlk__route_health h;
    rlk__route_health_of(&cl->route, rlk__route_primary(&cl->route), &h);
    uint64_t g = h.connects;
    leave(cl);
    return g;
}

/* ------------------------------------------------------------------ */
/* Acquire                                                              */

/* A refusal that passes by itself: the server loading its data
 * (LOADING), or busy with a long script (BUSY), as the lock classed its
 * error reply. */
static int refused_for_now(const rlk_client *cl)
{
    return cl->errclass == RLK_EC_LOADING || cl->errclass == RLK_EC_BUSY;
}

/* A reentrant lock's holder: the client's random id and the calling
 * thread, Redisson's layout "UUID:THREAD" (client_id before it, when
 * set). */
static const char *holder_of(const rlk_client *cl, char *out, size_t n)
{
    snprintf(out, n, "%s:%ld", cl->client_id, (long)syscall(SYS_gettid));
    return out;
}

/* Under Redlock: the lock over the servers, and a handle for it. */
static int rl_acquire(rlk_client *cl, const char *name, const rlk_lock_options *o,
                      rlk_lock **out)
{
    rlk_lock *l = new_handle(cl, name ? name : "", o);
    if (!l) return RLK_ERR_NOMEM;
    int r = rlk__rl_acquire(cl->rl, name, o, l, &l->rl);
    if (r != RLK_OK) {
        free_handle(l);
        return r;
    }
    snprintf(l->token, sizeof l->token, "%s", rlk__rl_token(l->rl));
    l->fence = rlk__rl_fence(l->rl);
    l->holds = 1;
    l->held = 1;
    *out = l;
    return RLK_OK;
}

int rlk_lock_acquire(rlk_client *cl, const char *name, const rlk_lock_options *o,
                     rlk_lock **out)
{
    rlk_lock_options defaults;
    *out = NULL;
    if (!o) {
        rlk_lock_options_init(&defaults);
        o = &defaults;
    }
    if (cl->rl) return rl_acquire(cl, name, o, out);
    enter(cl);
    /* Refused before anything is queued, as the session would refuse it
     * (o->holder is not the blocking client's). */
    rlk_lock_options so = *o;
    so.holder = NULL;
    int bad = rlk__locks_check_acquire(cl->lk, name, &so);
    if (bad != RLK_OK) {
        session_fail(cl, bad);
        leave(cl);
        return bad;
    }
    if (o->watchdog && !cl->thread_on && !cl->ticking && !cl->looping) {
        /* Nothing would renew it: it would run out unseen. */
        leave(cl);
        return cl_fail(cl, RLK_ERR_INVALID,
                       "acquire: a watchdog lock needs something to renew it: start the "
                       "watchdog thread (rlk_client_watchdog_start), call rlk_client_tick "
                       "first (tick mode), or turn the client by an event loop "
                       "(rlk_client_watch)");
    }
    rlk_lock *l = new_handle(cl, name, o);
    if (!l) {
        leave(cl);
        return cl_fail(cl, RLK_ERR_NOMEM, "out of memory");
    }
    char holder[128];
    so.on_lost = NULL;
    so.ctx = NULL;
    if (o->kind == RLK_LOCK_REENTRANT) so.holder = holder_of(cl, holder, sizeof holder);
    /* One deadline for the whole call: the wait and one command timeout
     * (the session ends the acquire by then itself; this bounds a
     * connect that never comes).  A try refused for now goes again after
     * a pause, while the wait lasts (without one: once). */
    int64_t start = rlk__now_ms();
    int64_t t = cl->timeout, last = t >= 0 && t < 250 ? t : 250;
    /* A try that asks for replicas may be held by its WAIT that long
     * more (the core's deadlines allow for it; so does this one). */
    int64_t held = rlk__locks_acks_ms(o);
    if (t >= 0) t += held;
    int64_t until = o->wait_ms < 0 ? -1 : o->wait_ms == 0 ? after_ms(cl, start, t) : start + o->wait_ms + last + held;
    int64_t pause = BUSY_PAUSE_MIN_MS;
    int retries = 0, status, listened = 0;
    /* The clock read once a try: the call's start for the first, when
     * nothing was awaited before it. */
    int64_t now = start;
    /* RESP2 (asked for, or met already): one connection cannot both wait
     * for messages and send, so a wait that the first try finds busy
     * opens a listener of its own, as under RESP3 its subscriptions ride
     * the connection, and waits in line.  A wait connects first to
     * learn which. */
    if (o->wait_ms != 0 && cl->cfg.conn.protocol == 0 && !rlk__core_ready(core_of(cl)) &&
        !rlk__route_is_cluster(&cl->route)) {
        /* Connected first, within the wait: the protocol decides how. */
        int r = drive_for(cl, seed_ready, &cl->route, until, 0);
        if (r != RLK_OK) {
            status = not_connected(cl, r, "acquire");
            free_handle(l);
            leave(cl);
            return status;
        }
        now = rlk__now_ms();
    }
    int resp2 = cl->cfg.conn.protocol == 2 ||
                (rlk__core_ready(core_of(cl)) && rlk__core_info(core_of(cl))->protocol == 2);
    for (;; now = rlk__now_ms()) {
        so.wait_ms = o->wait_ms;
        if (o->wait_ms > 0) { /* what is left of the wait, after pauses */
            int64_t left = start + o->wait_ms - now;
            so.wait_ms = left < 0 ? 0 : left;
        }
        int first = resp2 && !listened && so.wait_ms != 0;
        if (first) so.wait_ms = 0;
        l->done = 0;
        l->sl = rlk__locks_acquire(cl->lk, name, &so, l, now);
        if (!l->sl) {
            status = session_fail(cl, RLK_ERR_NOMEM);
            break;
        }
        wake_thread(cl);
        int r = drive_for(cl, handle_done, l, until, o->wait_ms == 0 ? tries(cl) : 0);
        if (!l->done) {
            /* Out of time, or a connection that cannot be had: the
             * acquire is called off (a lock it took after all is given
             * back), and the handle goes at its end. */
            status = not_connected(cl, r, "acquire");
            l->orphan = 1;
            rlk_lock *gone = l;
            l = NULL;
            rlk_session_release(gone->sl, rlk__now_ms());
            break;
        }
        status = l->status;
        rlk__route_health h;
        rlk__route_health_of(&cl->route, rlk__route_primary(&cl->route), &h);
        if (status == RLK_ERR_TIMEOUT && !rlk__core_ready(core_of(cl)))
            status = not_connected(cl, status, "acquire");
        else if (status == RLK_ERR_CLOSED && h.last && h.last != RLK_ERR_CLOSED)
            status = driver_fail(cl, h.last); /* why it closed: a reply overdue... */
        if (first && status == RLK_LOCK_BUSY &&
            (o->wait_ms < 0 || rlk__now_ms() < start + o->wait_ms)) {
            listened = 1;
            size_t cap = rlk__key_cap(name);
            char *keys = rlk__malloc(RLK__NKEYS * cap);
            if (!keys) {
                status = cl_fail(cl, RLK_ERR_NOMEM, "out of memory");
                break;
            }
            rlk__make_keys(name, keys, cap);
            cl->side_channel = keys;
            memmove(keys, keys + RLK__K_CHANNEL * cap, strlen(keys + RLK__K_CHANNEL * cap) + 1);
            side_listen(cl, o->wait_ms < 0 ? -1 : start + o->wait_ms);
            continue;
        }
        /* A try whose reply came too late (the server was paused), or
         * whose connection could not be had again in time, while the
         * wait lasts: the wait goes on. */
        if (status == RLK_ERR_TIMEOUT && o->wait_ms != 0 &&
            (o->wait_ms < 0 || rlk__now_ms() < start + o->wait_ms))
            continue;
        if (status != RLK_ERR_SERVER || !refused_for_now(cl)) break;
        int64_t next = rlk__now_ms() + pause;
        if ((o->wait_ms == 0 && retries > 0) || (until >= 0 && next >= until)) break;
        retries++;
        pause = pause * 2 > BUSY_PAUSE_MAX_MS ? BUSY_PAUSE_MAX_MS : pause * 2;
        char err[sizeof cl->err];
        memcpy(err, cl->err, sizeof err);
        rlk_error_class ec = cl->errclass;
        drive_for(cl, never, NULL, next, 0); /* other locks are renewed meanwhile */
        memcpy(cl->err, err, sizeof err);
        cl->errclass = ec;
    }
    if (cl->side_channel) side_end(cl); /* RESP2: the listener goes with the wait */
    if (status == RLK_OK) {
        l->held = 1;
        expires(cl, l);
        *out = l;
        wake_thread(cl); /* which then knows when its validity ends */
    } else if (l) {
        free_handle(l);
    }
    leave(cl);
    return status;
}

/* ------------------------------------------------------------------ */
/* Release, extend, forget                                              */

/* The status of the release of a lock that was lost before it: the
 * release was still sent (it frees the key if it is still this
 * holder's), and says what it found. */
static int lost_release(rlk_client *cl, rlk_lock *l, int status)
{
    char found[sizeof cl->err];
    snprintf(found, sizeof found, "%s", status == RLK_OK ? "released" : cl->err);
    return cl_fail(cl, RLK_LOCK_LOST, "release: lock '%s' was lost before its release (%s)",
                   l->name, found);
}

/* The blocking calls on a handle with an event loop's call under way,
 * or one that ended (in its last callback). */
static int loop_busy(rlk_client *cl, const rlk_lock *l, const char *doing)
{
    if (l->doomed)
        return cl_fail(cl, RLK_ERR_INVALID, "%s: lock '%s': the handle has ended", doing, l->name);
    return cl_fail(cl, RLK_ERR_INVALID, "%s: lock '%s': an asynchronous call on it is under way",
                   doing, l->name);
}

int rlk_lock_release(rlk_lock *l)
{
    rlk_client *cl = l->cl;
    if (l->rl) {
        int r = rlk__rl_release(l->rl);
        free_handle(l);
        return r;
    }
    enter(cl);
    if (l->op || l->ext_on || l->doomed) {
        leave(cl);
        return loop_busy(cl, l, "release");
    }
    if (l->releasing) { /* from its on_lost, which the release under way called */
        leave(cl);
        return cl_fail(cl, RLK_LOCK_LOST, "release: lock '%s' was lost; its release is under way",
                       l->name);
    }
    /* A lock lost before the release reports RLK_LOCK_LOST, whatever the
     * release finds; its on_lost, if still owed, is called first (from
     * this thread without the watchdog thread). */
    int lost = rlk_lock_is_lost(l);
    if (lost) mark_lost(cl, l);
    l->releasing = 1;
    if (l->lost_due) {
        l->lost_due = 0;
        pthread_mutex_unlock(&cl->mu);
        l->on_lost(l->ctx, l);
        pthread_mutex_lock(&cl->mu);
    }
    int64_t start = rlk__now_ms();
    l->done = 0;
    /* Connected first (the session would end a release at once without
     * a connection); one that cannot be had leaves the lock to its TTL. */
    int was_ready = rlk__route_seed_ready(&cl->route);
    int status = ready_by(cl, after_ms(cl, start, cl->timeout), "release");
    if (status == RLK_OK &&
        (status = rlk_session_release(l->sl, was_ready ? start : rlk__now_ms())) != RLK_OK)
        session_fail(cl, status);
    if (status == RLK_OK) {
        wake_thread(cl);
        /* The session ends it within one command timeout of its sending,
         * a re-send's included; this bounds a connect that never comes. */
        int r = drive(cl, handle_done, l, after_ms(cl, start, cl->timeout < 0 ? -1 : 2 * cl->timeout));
        if (l->done) {
            status = l->status;
        } else {
            status = not_connected(cl, r, "release");
            if (lost) status = lost_release(cl, l, status);
            l->orphan = 1; /* freed when the session is done with it */
            leave(cl);
            return status;
        }
    } else {
        rlk__locks_forget(l->sl, start);
        l->sl = NULL;
    }
    if (lost) status = lost_release(cl, l, status);
    free_handle(l);
    leave(cl);
    return status;
}

void rlk_lock_forget(rlk_lock *l)
{
    rlk_client *cl = l->cl;
    if (l->rl) {
        rlk__rl_forget(l->rl);
        free_handle(l);
        return;
    }
    enter(cl);
    if (l->releasing) { /* from its on_lost, during its release: that frees it */
        leave(cl);
        return;
    }
    if (l->sl) rlk__locks_forget(l->sl, rlk__now_ms());
    free_handle(l);
    leave(cl);
}

int rlk_lock_extend(rlk_lock *l, int64_t ms, int how)
{
    rlk_client *cl = l->cl;
    if (l->rl) {
        int r = rlk__rl_extend(l->rl, ms, how);
        __atomic_store_n(&l->ttl, rlk__rl_ttl(l->rl), __ATOMIC_RELAXED);
        return r;
    }
    enter(cl);
    if (l->op || l->ext_on || l->doomed) {
        leave(cl);
        return loop_busy(cl, l, "extend");
    }
    if (rlk_lock_is_lost(l)) {
        /* Its validity may have just run out: on_lost, if owed, comes
         * as this call ends. */
        mark_lost(cl, l);
        int status = cl_fail(cl, RLK_LOCK_LOST, "extend: lock '%s' was lost", l->name);
        leave(cl);
        return status;
    }
    if (ms < 1 || (how != RLK_EXTEND_ADD && how != RLK_EXTEND_SET)) {
        leave(cl);
        return cl_fail(cl, RLK_ERR_INVALID, "extend: bad duration or mode");
    }
    int64_t start = rlk__now_ms(), until = after_ms(cl, start, cl->timeout);
    int status, sent = 0;
    for (;;) {
        status = ready_by(cl, until, "extend");
        if (status != RLK_OK) break;
        l->done = 0;
        status = rlk_session_extend(l->sl, ms, how, rlk__now_ms());
        if (status != RLK_OK) {
            session_fail(cl, status);
            break;
        }
        sent++;
        wake_thread(cl);
        int r = drive(cl, handle_done, l, until < 0 ? -1 : until + cl->timeout);
        if (!l->done) {
            /* The session answers every extend by its reply's deadline:
             * only a connection torn down on the way gets here. */
            status = not_connected(cl, r, "extend");
            break;
        }
        status = l->status;
        /* A lost reply: a set TTL is sent once more (the same result
         * either way), an added time is not (it could add twice). */
        if (status != RLK_ERR_CLOSED || how != RLK_EXTEND_SET || sent > 1) break;
    }
    if (status == RLK_OK && how == RLK_EXTEND_SET) __atomic_store_n(&l->ttl, ms, __ATOMIC_RELAXED);
    if (l->sl) expires(cl, l);
    leave(cl);
    return status;
}

/* ------------------------------------------------------------------ */
/* Calls without a handle                                               */

typedef struct {
    int done;
    rlk__session_result res;
} call_result;

static void call_cb(void *ctx, rlk_session *s, const rlk__session_result *res)
{
    (void)s;
    call_result *c = ctx;
    c->res = *res;
    c->done = 1;
}

static int call_done(void *ctx) { return ((call_result *)ctx)->done; }

enum { CALL_STATUS, CALL_RELEASE, CALL_EXTEND };

/* One call of the session's (session_internal.h), waited for; re-sent
 * once after a lost reply when resend says so. */
static int call(rlk_client *cl, int which, const char *name, const char *token, int64_t ms,
                int how, int resend, call_result *c)
{
    static const char *const what[] = {"status", "release", "extend"};
    int64_t start = rlk__now_ms(), until = after_ms(cl, start, cl->timeout);
    int status, sent = 0;
    for (;;) {
        status = ready_by(cl, until, what[which]);
        if (status != RLK_OK) return status;
        memset(c, 0, sizeof *c);
        int64_t now = rlk__now_ms();
        if (which == CALL_STATUS)
            status = rlk__locks_status(cl->lk, name, call_cb, c, now);
        else if (which == CALL_RELEASE)
            status = rlk__locks_release_token(cl->lk, name, token, call_cb, c, now);
        else
            status = rlk__locks_extend_token(cl->lk, name, token, ms, how, call_cb, c, now);
        if (status != RLK_OK) return session_fail(cl, status);
        sent++;
        wake_thread(cl);
        int r = drive(cl, call_done, c, until < 0 ? -1 : until + cl->timeout);
        if (!c->done) {
            /* Given up: the session must not call back into this frame. */
            rlk__route_close(&cl->route, rlk__route_primary(&cl->route));
            return not_connected(cl, r, what[which]);
        }
        status = c->res.status;
        if (status != RLK_OK) session_fail(cl, status);
        if (status != RLK_ERR_CLOSED || !resend || sent > 1) return status;
    }
}

int rlk_release_token(rlk_client *cl, const char *name, const char *token)
{
    if (cl->rl) return rlk__rl_release_token(cl->rl, name, token);
    call_result c;
    enter(cl);
    int r = call(cl, CALL_RELEASE, name, token, 0, 0, 0, &c);
    leave(cl);
    return r;
}

int rlk_extend_token(rlk_client *cl, const char *name, const char *token, int64_t ms, int how,
                     int64_t *ttl_ms_after)
{
    if (cl->rl) return rlk__rl_extend_token(cl->rl, name, token, ms, how, ttl_ms_after);
    call_result c;
    if (ms < 1 || (how != RLK_EXTEND_ADD && how != RLK_EXTEND_SET))
        return cl_fail(cl, RLK_ERR_INVALID, "extend: bad duration or mode");
    enter(cl);
    int r = call(cl, CALL_EXTEND, name, token, ms, how, how == RLK_EXTEND_SET, &c);
    if (r == RLK_OK && ttl_ms_after) *ttl_ms_after = c.res.ttl_ms_after;
    leave(cl);
    return r;
}

int rlk_lock_get_status(rlk_client *cl, const char *name, rlk_lock_status *st)
{
    call_result c;
    if (cl->rl) return rlk__rl_get_status(cl->rl, name, st);
    enter(cl);
    int r = call(cl, CALL_STATUS, name, NULL, 0, 0, 1, &c);
    if (r == RLK_OK) *st = c.res.lock;
    leave(cl);
    return r;
}

/* ------------------------------------------------------------------ */
/* Accessors: any thread while the handle exists                       */

int64_t rlk_lock_remaining_ms(const rlk_lock *l)
{
    if (l->rl) return rlk__rl_remaining(l->rl);
    /* Without the mutex (an owner's call may hold it across its wait):
     * the validity is read atomically; l->sl changes only when the
     * handle ends, by its owner. */
    return l->sl && !rlk_lock_is_lost(l) ? rlk_session_lock_remaining_ms(l->sl, rlk__now_ms()) : 0;
}

int rlk_lock_is_lost(const rlk_lock *l)
{
    if (l->rl) return rlk__rl_is_lost(l->rl);
    if (__atomic_load_n(&l->lost, __ATOMIC_RELAXED)) return 1;
    /* Its validity over, whatever renews it or not: lost, before any
     * call marks it so. */
    return l->held && l->sl && rlk_session_lock_remaining_ms(l->sl, rlk__now_ms()) == 0;
}
uint64_t rlk_lock_fence(const rlk_lock *l) { return l->fence; }
const char *rlk_lock_token(const rlk_lock *l) { return l->token; }
const char *rlk_lock_name(const rlk_lock *l) { return l->name; }
int64_t rlk_lock_ttl_ms(const rlk_lock *l) { return __atomic_load_n(&l->ttl, __ATOMIC_RELAXED); }
int64_t rlk_lock_holds(const rlk_lock *l) { return l->holds; }

/* ------------------------------------------------------------------ */
/* Tick mode and the watchdog thread                                    */

int rlk_client_fd(const rlk_client *cl)
{
    if (cl->rl) return rlk__rl_fd(cl->rl);
    return rlk__route_fd(&cl->route, rlk__route_primary(&cl->route));
}

int rlk_client_tick(rlk_client *cl, int64_t *next_ms)
{
    if (cl->rl) return rlk__rl_tick(cl->rl, next_ms);
    enter(cl);
    if (cl->thread_on) {
        leave(cl);
        return cl_fail(cl, RLK_ERR_INVALID, "tick: the watchdog thread runs");
    }
    cl->ticking = 1;
    cl->watch_ok = 0;
    rlk__route_health h;
    rlk__route_health_of(&cl->route, rlk__route_primary(&cl->route), &h);
    if (!cl->locks && !cl->sem_list && !cl->rw_list && !h.up) {
        /* Nothing to renew, nothing to read: no connect (a program that
         * declares tick mode before its first acquire connects within
         * that acquire's own deadline). */
        if (next_ms) *next_ms = -1;
        leave(cl);
        return RLK_OK;
    }
    /* One turn that waits for nothing but the primary's connect:
     * what came is read, what is due is sent.  A cluster's other
     * connections are read here too (the event loop polls
     * rlk_client_fd only): their connects go on at the next ticks. */
    struct pollfd p[RLK__ROUTE_MAX];
    int64_t wake;
    int r = rlk__route_prepare(&cl->route, p, -1, &wake);
    size_t n = cl->route.polled, pri = rlk__route_primary(&cl->route);
    rlk__route_health_of(&cl->route, rlk__route_primary(&cl->route), &h);
    if (r == RLK_OK && h.connecting) {
        /* The event loop polls rlk_client_fd only, which a connect under
         * way does not have yet: the tick waits for it. */
        r = rlk__route_connect_through(&cl->route, pri);
        p[pri].fd = -1;
    }
    if (poll(p, n, 0) < 0)
        for (size_t i = 0; i < n; i++) p[i].revents = 0;
    int r2 = rlk__route_after(&cl->route, p);
    if (r == RLK_OK) r = r2;
    if (r != RLK_OK) driver_fail(cl, r);
    if (next_ms) {
        int64_t due = rlk__route_due(&cl->route);
        int64_t now = rlk__now_ms();
        for (size_t i = 0; i < cl->route.n; i++) {
            rlk__route_health_of(&cl->route, i, &h);
            if (h.parked) continue;
            /* A connect under way, or a reply owed (the handshake's too)
             * on a connection the event loop does not poll (not the
             * primary's): looked for again soon. */
            if (h.connecting || (i != pri && rlk__core_owed(rlk__route_core(&cl->route, i)) > 0))
                due = sooner(due, now + 10);
            else if (!h.up && (cl->locks || cl->sem_list || cl->rw_list))
                /* To connect again when due (the next tick starts it). */
                due = sooner(due, h.retry_at > now ? h.retry_at : now + 10);
        }
        if (due >= 0) {
            due -= rlk__now_ms();
            if (due < 0) due = 0;
        }
        *next_ms = due;
    }
    leave(cl);
    return r;
}

static void *thread_main(void *arg)
{
    rlk_client *cl = arg;
    pthread_mutex_lock(&cl->mu);
    while (!cl->stopping) {
        turn(cl, -1, cl->wake_pipe[0], 1);
        cl->next_expiry = sweep(cl);
        if (cl->notify) { /* owed by the owner's calls (an extend found it lost) */
            cl->notify = 0;
            for (rlk_lock *l = cl->locks; l; l = l->next)
                if (l->lost_due) {
                    l->lost_due = 0;
                    l->on_lost(l->ctx, l);
                }
        }
        pthread_cond_broadcast(&cl->cv);
    }
    pthread_mutex_unlock(&cl->mu);
    return NULL;
}

/* Thread mode's own calls (cl->th). */
static void th_signal(rlk_client *cl) { pthread_cond_broadcast(&cl->cv); }

static void th_wait(rlk_client *cl, int64_t until)
{
    if (until < 0) {
        pthread_cond_wait(&cl->cv, &cl->mu);
        return;
    }
    int64_t left = until - rlk__now_ms();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += left / 1000;
    ts.tv_nsec += (left % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&cl->cv, &cl->mu, &ts);
}

static void th_join(rlk_client *cl) { pthread_join(cl->thread, NULL); }
static void th_end(rlk_client *cl) { pthread_cond_destroy(&cl->cv); }

static const thread_ops thread_calls = {th_signal, th_wait, th_join, th_end};

/* The condition variable, at the first start. */
static int th_make(rlk_client *cl)
{
    if (cl->th) return 0;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int r = pthread_cond_init(&cl->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (r == 0) cl->th = &thread_calls;
    return r;
}

int rlk_client_watchdog_start(rlk_client *cl)
{
    if (cl->rl) return rlk__rl_refuse(cl->rl, "the watchdog thread");
    enter(cl);
    if (cl->thread_on) {
        leave(cl);
        return RLK_OK;
    }
    if (cl->looping) {
        leave(cl);
        return cl_fail(cl, RLK_ERR_INVALID,
                       "watchdog: the client is turned by an event loop (rlk_client_watch)");
    }
    if (th_make(cl) != 0) {
        leave(cl);
        return cl_fail(cl, RLK_ERR_NOMEM, "watchdog: cannot make a condition variable");
    }
    if (pipe2(cl->wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        leave(cl);
        return cl_fail(cl, RLK_ERR_IO, "watchdog: pipe: %s", strerror(errno));
    }
    cl->stopping = 0;
    cl->next_expiry = sweep(cl); /* the locks held already */
    cl->thread_on = 1;
    if (pthread_create(&cl->thread, NULL, thread_main, cl) != 0) {
        cl->thread_on = 0;
        close(cl->wake_pipe[0]);
        close(cl->wake_pipe[1]);
        cl->wake_pipe[0] = cl->wake_pipe[1] = -1;
        leave(cl);
        return cl_fail(cl, RLK_ERR_IO, "watchdog: cannot start a thread");
    }
    leave(cl);
    return RLK_OK;
}

void rlk_client_watchdog_stop(rlk_client *cl)
{
    if (cl->rl) return;
    pthread_mutex_lock(&cl->mu);
    if (!cl->thread_on) {
        pthread_mutex_unlock(&cl->mu);
        return;
    }
    cl->stopping = 1;
    wake_thread(cl);
    pthread_mutex_unlock(&cl->mu);
    cl->th->join(cl);
    pthread_mutex_lock(&cl->mu);
    cl->thread_on = 0;
    close(cl->wake_pipe[0]);
    close(cl->wake_pipe[1]);
    cl->wake_pipe[0] = cl->wake_pipe[1] = -1;
    pthread_mutex_unlock(&cl->mu);
}

/* ------------------------------------------------------------------ */
/* The event loop                                                       */

/* The loop's calls are refused while the thread runs; the first one puts
 * the client in loop mode (no thread from then on). */
static int loop_start(rlk_client *cl, const char *doing)
{
    if (cl->thread_on) return cl_fail(cl, RLK_ERR_INVALID, "%s: the watchdog thread runs", doing);
    cl->looping = 1;
    return RLK_OK;
}

/* One result owed to l's callback: called without the mutex, its
 * message the client's meanwhile.  A handle whose acquire failed or
 * whose release ended leaves the client first, and is freed once its
 * callbacks are over (deliver). */
static void call_back(rlk_client *cl, rlk_lock *l, int which)
{
    owed_result *o = &l->res[which];
    rlk_lock_done done = which == RES_EXT ? l->ext_done : l->op_done;
    void *ctx = which == RES_EXT ? l->ext_ctx : l->op_ctx;
    int status = o->status;
    o->owed = 0;
    if (status != RLK_OK) cl_fail(cl, status, "%s", o->msg ? o->msg : rlk_strerror(status));
    rlk__free(o->msg);
    o->msg = NULL;
    if (which == RES_EXT) {
        l->ext_on = 0;
    } else {
        int ends = l->op == OP_RELEASE || status != RLK_OK;
        l->op = OP_NONE;
        if (ends) {
            if (l->sl) rlk__locks_forget(l->sl, rlk__now_ms());
            l->sl = NULL;
            free_handle(l);
        }
    }
    if (done) {
        pthread_mutex_unlock(&cl->mu);
        done(ctx, l, status);
        pthread_mutex_lock(&cl->mu);
    }
}

/* The callbacks owed when it starts, handle by handle: its acquire's
 * result, its on_lost, its extend's result, its release's result.  What
 * the callbacks start and end at once is owed to the next call. */
static void deliver(rlk_client *cl)
{
    if (!cl->owed && !cl->notify) return;
    cl->owed = 0;
    for (rlk_lock *l = cl->locks; l; l = l->next)
        l->mark = l->res[RES_OP].owed || l->res[RES_EXT].owed || l->lost_due;
    for (;;) {
        rlk_lock *l = cl->locks;
        while (l && !l->mark) l = l->next;
        if (!l) break;
        l->mark = 0;
        l->pinned = 1;
        if (l->res[RES_OP].owed && l->op == OP_ACQUIRE) call_back(cl, l, RES_OP);
        if (!l->doomed && l->lost_due) {
            l->lost_due = 0;
            pthread_mutex_unlock(&cl->mu);
            l->on_lost(l->ctx, l);
            pthread_mutex_lock(&cl->mu);
        }
        if (!l->doomed && l->res[RES_EXT].owed) call_back(cl, l, RES_EXT);
        if (!l->doomed && l->res[RES_OP].owed) call_back(cl, l, RES_OP);
        l->pinned = 0;
        if (l->doomed) free_mem(l);
    }
    for (rlk_lock *l = cl->locks; l; l = l->next)
        if (l->res[RES_OP].owed || l->res[RES_EXT].owed) cl->owed = 1;
}

/* Releases waiting for the connection: sent once it is ready, or ended
 * when their time is up (the lock then expires by itself). */
static void waiting_releases(rlk_client *cl)
{
    int ready = rlk__core_ready(core_of(cl));
    int64_t now = rlk__now_ms();
    for (rlk_lock *l = cl->locks; l; l = l->next) {
        if (!l->rel_wait) continue;
        int st;
        if (ready) {
            l->rel_wait = 0;
            if ((st = rlk_session_release(l->sl, now)) == RLK_OK) continue;
            session_fail(cl, st);
        } else if (l->rel_by >= 0 && now >= l->rel_by) {
            l->rel_wait = 0;
            st = not_connected(cl, RLK_ERR_TIMEOUT, "release");
        } else {
            continue;
        }
        if (l->rel_lost) st = lost_release(cl, l, st);
        owe(cl, l, RES_OP, st);
    }
}

/* The client cannot go on (st, its reason in cl->err): the acquires
 * under way and the releases waiting for a connection end so. */
static void end_calls(rlk_client *cl, int st)
{
    char why[sizeof cl->err];
    memcpy(why, cl->err, sizeof why);
    for (rlk_lock *l = cl->locks; l; l = l->next) {
        if (l->res[RES_OP].owed || !(l->op == OP_ACQUIRE || l->rel_wait)) continue;
        l->rel_wait = 0;
        int s = cl_fail(cl, st, "%s: %s", l->op == OP_ACQUIRE ? "acquire" : "release", why);
        if (l->op == OP_RELEASE && l->rel_lost) s = lost_release(cl, l, s);
        owe(cl, l, RES_OP, s);
    }
    memcpy(cl->err, why, sizeof why);
}

/* The status of a client that cannot go on, its reason in cl->err. */
static int cannot_go_on(rlk_client *cl)
{
    rlk__route_health h;
    rlk__route_health_of(&cl->route, rlk__route_primary(&cl->route), &h);
    return driver_fail(cl, h.fatal ? h.fatal : RLK_ERR_CLOSED);
}

static void rates_deliver(rlk_client *cl);

int rlk_client_watch(rlk_client *cl, rlk_watch *w, size_t max, int64_t *deadline_ms)
{
    if (cl->rl) return rlk__rl_watch(cl->rl, w, max, deadline_ms);
    enter(cl);
    *deadline_ms = -1;
    int r = loop_start(cl, "watch");
    if (r == RLK_OK && !cl->wp && !(cl->wp = rlk__malloc(RLK__ROUTE_MAX * sizeof *cl->wp)))
        r = cl_fail(cl, RLK_ERR_NOMEM, "out of memory");
    if (r != RLK_OK) {
        pthread_mutex_unlock(&cl->mu);
        return r;
    }
    int64_t wake;
    r = rlk__route_prepare(&cl->route, cl->wp, -1, &wake);
    cl->watch_ok = 1;
    if (r != RLK_OK && !rlk__route_can_go_on(&cl->route)) {
        r = cannot_go_on(cl);
        pthread_mutex_unlock(&cl->mu);
        return r;
    }
    if (r != RLK_OK && !cl->loop_fail) cl->loop_fail = r;
    size_t k = 0;
    for (size_t i = 0; i < cl->route.polled; i++) {
        const struct pollfd *p = &cl->wp[i];
        if (p->fd < 0) continue;
        if (k < max) {
            w[k].fd = p->fd;
            w[k].events =
                (p->events & POLLIN ? RLK_EV_READ : 0) | (p->events & POLLOUT ? RLK_EV_WRITE : 0);
            w[k].revents = 0;
        }
        k++;
    }
    int64_t dl = sooner(wake, cl->next_expiry);
    for (rlk_lock *l = cl->locks; l; l = l->next)
        if (l->rel_wait) dl = sooner(dl, l->rel_by);
    if (cl->owed || cl->notify || cl->loop_fail || cl->rate_due || cl->sem_notify || cl->rw_notify)
        dl = rlk__now_ms();
    *deadline_ms = dl;
    pthread_mutex_unlock(&cl->mu); /* no callback but from rlk_client_handle */
    return (int)k;
}

int rlk_client_handle(rlk_client *cl, const rlk_watch *w, size_t n)
{
    if (cl->rl) return rlk__rl_handle(cl->rl, w, n);
    enter(cl);
    int r = loop_start(cl, "handle");
    if (r != RLK_OK) {
        pthread_mutex_unlock(&cl->mu);
        return r;
    }
    struct pollfd p[RLK__ROUTE_MAX];
    size_t rn = cl->route.polled;
    r = cl->loop_fail;
    cl->loop_fail = 0;
    if (cl->watch_ok) {
        /* The watch's entries, with what came on their fds. */
        memcpy(p, cl->wp, rn * sizeof *p);
        for (size_t i = 0; i < rn; i++) {
            p[i].revents = 0;
            for (size_t j = 0; j < n && p[i].fd >= 0; j++) {
                if (w[j].fd != p[i].fd || !w[j].revents) continue;
                p[i].revents |= (short)((w[j].revents & RLK_EV_WRITE ? POLLOUT : 0) |
                                        (w[j].revents & ~RLK_EV_WRITE ? POLLIN : 0));
            }
        }
    } else {
        int64_t wake;
        int r1 = rlk__route_prepare(&cl->route, p, -1, &wake); /* nothing came */
        if (r == RLK_OK) r = r1;
    }
    cl->watch_ok = 0;
    int r2 = rlk__route_after(&cl->route, p);
    if (r == RLK_OK) r = r2;
    if (r != RLK_OK) driver_fail(cl, r);
    waiting_releases(cl);
    if (!rlk__route_can_go_on(&cl->route)) {
        r = cannot_go_on(cl);
        end_calls(cl, r);
    }
    if (cl->next_expiry >= 0 && rlk__now_ms() >= cl->next_expiry) cl->next_expiry = sweep(cl);
    /* The turn's failure is what rlk_client_errmsg tells after it,
     * whatever the callbacks' calls said. */
    char why[sizeof cl->err];
    memcpy(why, cl->err, sizeof why);
    deliver(cl);
    rates_deliver(cl);
    if (r != RLK_OK) memcpy(cl->err, why, sizeof why);
    leave(cl);
    return r;
}

/* rlk_lock_acquire_async, a simple lock's token given (NULL: drawn). */
static int acquire_async_as(rlk_client *cl, const char *name, const rlk_lock_options *o,
                            const char *token, rlk_lock_done done, void *ctx, rlk_lock **out)
{
    rlk_lock_options defaults;
    *out = NULL;
    if (!o) {
        rlk_lock_options_init(&defaults);
        o = &defaults;
    }
    enter(cl);
    int r = loop_start(cl, "acquire");
    if (r == RLK_OK && !done) r = cl_fail(cl, RLK_ERR_INVALID, "acquire: no callback");
    rlk_lock_options so = *o;
    so.holder = NULL;
    if (r == RLK_OK && (r = rlk__locks_check_acquire(cl->lk, name, &so)) != RLK_OK)
        session_fail(cl, r);
    rlk_lock *l = r == RLK_OK ? new_handle(cl, name, o) : NULL;
    if (r == RLK_OK && !l) r = cl_fail(cl, RLK_ERR_NOMEM, "out of memory");
    if (r == RLK_OK) {
        char holder[128];
        so.on_lost = NULL;
        so.ctx = NULL;
        if (o->kind == RLK_LOCK_REENTRANT) so.holder = holder_of(cl, holder, sizeof holder);
        l->op = OP_ACQUIRE;
        l->op_done = done;
        l->op_ctx = ctx;
        l->sl = rlk__locks_acquire_as(cl->lk, name, &so, token, l, rlk__now_ms());
        if (!l->sl) {
            r = session_fail(cl, RLK_ERR_NOMEM);
            free_handle(l);
        } else {
            *out = l;
        }
    }
    pthread_mutex_unlock(&cl->mu);
    return r;
}

int rlk_lock_acquire_async(rlk_client *cl, const char *name, const rlk_lock_options *o,
                           rlk_lock_done done, void *ctx, rlk_lock **out)
{
    *out = NULL;
    if (cl->rl) return rlk__rl_refuse(cl->rl, "rlk_lock_acquire_async");
    return acquire_async_as(cl, name, o, NULL, done, ctx, out);
}

/* A handle's token while its acquire is under way. */
static const char *pending_token(const rlk_lock *l)
{
    return l->sl ? rlk_session_lock_token(l->sl) : l->token;
}

/* A Redlock client's servers: clients of this file, each turned by
 * the Redlock client as an event loop would. */
static const rlk__rl_api member_api = {
    rlk_client_new,         rlk_client_free,   rlk_client_errmsg,       rlk_client_info,
    rlk_client_generation,  rlk_client_connect, acquire_async_as,       pending_token,
    rlk_lock_release_async, rlk_lock_extend_async, rlk_lock_forget,     rlk_client_watch,
    rlk_client_handle,      rlk_lock_remaining_ms, rlk_lock_is_lost,    rlk_lock_fence,
    rlk_lock_get_status,    rlk_release_token, rlk_extend_token,
};

int rlk_lock_release_async(rlk_lock *l, rlk_lock_done done, void *ctx)
{
    rlk_client *cl = l->cl;
    if (cl->rl) return rlk__rl_refuse(cl->rl, "rlk_lock_release_async");
    enter(cl);
    int r = loop_start(cl, "release");
    if (r == RLK_OK && l->doomed)
        r = loop_busy(cl, l, "release");
    else if (r == RLK_OK && (l->op == OP_RELEASE || l->releasing || l->ext_on))
        r = cl_fail(cl, RLK_ERR_INVALID, "release: lock '%s': a release or an extend is under way",
                    l->name);
    if (r != RLK_OK) {
        pthread_mutex_unlock(&cl->mu);
        return r;
    }
    int64_t now = rlk__now_ms();
    int call_off = l->op == OP_ACQUIRE && !l->held;
    if (l->op == OP_ACQUIRE) { /* its result, if owed already, is not told */
        l->res[RES_OP].owed = 0;
        rlk__free(l->res[RES_OP].msg);
        l->res[RES_OP].msg = NULL;
    }
    l->op = OP_RELEASE;
    l->op_done = done;
    l->op_ctx = ctx;
    if (call_off) {
        /* The session gives back what the acquire took; one that had
         * ended took nothing. */
        if (!l->sl)
            owe(cl, l, RES_OP,
                cl_fail(cl, RLK_LOCK_NOT_HELD, "release: lock '%s' was not acquired", l->name));
        else if ((r = rlk_session_release(l->sl, now)) != RLK_OK)
            owe(cl, l, RES_OP, session_fail(cl, r));
        pthread_mutex_unlock(&cl->mu);
        return RLK_OK;
    }
    /* As rlk_lock_release: a lock lost first reports RLK_LOCK_LOST, its
     * on_lost (if owed) before. */
    int lost = rlk_lock_is_lost(l);
    if (lost) mark_lost(cl, l);
    l->releasing = 1;
    l->rel_lost = lost;
    l->rel_wait = 1;
    l->rel_by = cl->timeout < 0 ? -1 : now + cl->timeout;
    waiting_releases(cl); /* sent now when connected */
    pthread_mutex_unlock(&cl->mu);
    return RLK_OK;
}

int rlk_lock_extend_async(rlk_lock *l, int64_t ms, int how, rlk_lock_done done, void *ctx)
{
    if (l->cl->rl) return rlk__rl_refuse(l->cl->rl, "rlk_lock_extend_async");
    rlk_client *cl = l->cl;
    enter(cl);
    int r = loop_start(cl, "extend");
    if (r != RLK_OK) {
    } else if (ms < 1 || (how != RLK_EXTEND_ADD && how != RLK_EXTEND_SET)) {
        r = cl_fail(cl, RLK_ERR_INVALID, "extend: bad duration or mode");
    } else if (!l->held || !l->sl || l->op || l->releasing || l->ext_on) {
        r = cl_fail(cl, RLK_ERR_INVALID,
                    "extend: lock '%s' is not held, or a call on it is under way", l->name);
    } else if (rlk_lock_is_lost(l)) {
        mark_lost(cl, l); /* on_lost, if owed, from the next rlk_client_handle */
        r = cl_fail(cl, RLK_LOCK_LOST, "extend: lock '%s' was lost", l->name);
    } else if (!rlk__core_ready(core_of(cl)) && !rlk__route_is_cluster(&cl->route)) {
        r = cl_fail(cl, RLK_ERR_CLOSED, "extend: not connected");
    } else {
        l->ext_on = 1;
        l->ext_ms = ms;
        l->ext_how = how;
        l->ext_done = done;
        l->ext_ctx = ctx;
        if ((r = rlk_session_extend(l->sl, ms, how, rlk__now_ms())) != RLK_OK) {
            l->ext_on = 0;
            session_fail(cl, r);
        }
    }
    pthread_mutex_unlock(&cl->mu);
    return r;
}

/* ------------------------------------------------------------------ */
/* Rate limiting: the rate primitive (rate.h) joined to the host        */

/* A rate call's record, the result its decisions end with.  A blocking
 * call that gave up on its reply (its deadline passed first) leaves it
 * to the reply, which frees it. */
typedef struct rate_rec {
    struct rate_rec *next;
    rlk_client *cl;
    int done, status, abandoned;
    rlk_rate_result res;
    rlk_rate_done cb;         /* the event loop's, owed at its handle */
    void *ctx;
    char msg[256];
} rate_rec;

static void rec_unlink(rlk_client *cl, rate_rec *k)
{
    rate_rec **pp = &cl->rate_recs;
    while (*pp && *pp != k) pp = &(*pp)->next;
    if (*pp) *pp = k->next;
}

static void rate_end(void *ctx, int status, const rlk_rate_result *res, const char *msg)
{
    rate_rec *k = ctx;
    rlk_client *cl = k->cl;
    if (k->abandoned) {
        rec_unlink(cl, k);
        rlk__free(k);
        return;
    }
    k->done = 1;
    k->status = status;
    k->res = *res;
    snprintf(k->msg, sizeof k->msg, "%s", msg);
    if (k->cb) cl->rate_due = 1;
    if (cl->thread_on) cl->th->signal(cl);
}

static int rec_done(void *ctx) { return ((rate_rec *)ctx)->done; }

/* The calls under way end without their results (the client goes). */
static void rates_end(rlk_client *cl)
{
    rlk__rates_free(cl->rates);
    cl->rates = NULL;
    for (rate_rec *k; (k = cl->rate_recs) != NULL; rlk__free(k)) cl->rate_recs = k->next;
}

/* Starts a call (with the mutex held): its record, or NULL with the
 * status in *st and cl->err. */
static rate_rec *rate_start(rlk_client *cl, const char *name, const rlk_rate_options *o,
                            int status_only, rlk_rate_done cb, void *ctx, int *st)
{
    char err[160];
    *st = rlk__rate_check(name, o, status_only, err, sizeof err);
    if (*st != RLK_OK) {
        cl_fail(cl, *st, "%s", err);
        return NULL;
    }
    if (!cl->rates && !(cl->rates = rlk__rates_new(cl->host))) {
        *st = cl_fail(cl, RLK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    rate_rec *k = rlk__malloc(sizeof *k);
    if (!k) {
        *st = cl_fail(cl, RLK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    memset(k, 0, sizeof *k);
    k->cl = cl;
    k->cb = cb;
    k->ctx = ctx;
    /* Each reply within the command timeout, or within the wait when
     * that ends later; the sleeps within the wait. */
    int64_t now = rlk__now_ms(), t = cl->timeout, wait = status_only ? 0 : o->wait_ms;
    int64_t wait_until = wait > 0 ? now + wait : -1;
    int64_t reply_by = wait == RLK_WAIT_FOREVER || (t < 0 && wait == 0)
                           ? RLK__DL_DEFAULT
                           : now + (wait > t ? wait : t);
    *st = rlk__rate_take(cl->rates, name, o, status_only, reply_by, wait_until, rate_end, k, now);
    if (*st != RLK_OK) {
        cl_fail(cl, *st, "rate %s: %s", name, rlk_strerror(*st));
        rlk__free(k);
        return NULL;
    }
    k->next = cl->rate_recs;
    cl->rate_recs = k;
    return k;
}

static int rate_call(rlk_client *cl, const char *name, const rlk_rate_options *o, int status_only,
                     rlk_rate_result *res)
{
    rlk_rate_result none;
    if (!res) res = &none;
    memset(res, 0, sizeof *res);
    enter(cl);
    int st;
    rate_rec *k = rate_start(cl, name, o, status_only, NULL, NULL, &st);
    if (k) {
        /* The host answers every decision by its deadline; the turns end
         * there too, for a connection that never comes. */
        int64_t t = cl->timeout, wait = status_only ? 0 : o->wait_ms;
        int64_t until = wait == RLK_WAIT_FOREVER || (t < 0 && wait == 0)
                            ? -1
                            : rlk__now_ms() + (wait > t ? wait : t);
        int r = drive(cl, rec_done, k, until);
        if (k->done) {
            st = k->status;
            *res = k->res;
            if (st != RLK_OK && st != RLK_RATE_LIMITED) cl_fail(cl, st, "%s", k->msg);
            rec_unlink(cl, k);
            rlk__free(k);
        } else {
            k->abandoned = 1;
            st = not_connected(cl, r == RLK_OK ? RLK_ERR_TIMEOUT : r, "rate");
        }
    }
    leave(cl);
    return st;
}

int rlk_rate_take(rlk_client *cl, const char *name, const rlk_rate_options *o,
                  rlk_rate_result *res)
{
    if (cl->rl) return rlk__rl_refuse(cl->rl, "the rate limiter");
    return rate_call(cl, name, o, 0, res);
}

int rlk_rate_status(rlk_client *cl, const char *name, const rlk_rate_options *o,
                    rlk_rate_result *res)
{
    if (cl->rl) return rlk__rl_refuse(cl->rl, "the rate limiter");
    return rate_call(cl, name, o, 1, res);
}

int rlk_rate_take_async(rlk_client *cl, const char *name, const rlk_rate_options *o,
                        rlk_rate_done done, void *ctx)
{
    if (cl->rl) return rlk__rl_refuse(cl->rl, "the rate limiter");
    enter(cl);
    int st = loop_start(cl, "rate");
    if (st == RLK_OK && !done) st = cl_fail(cl, RLK_ERR_INVALID, "rate: no callback");
    if (st == RLK_OK) rate_start(cl, name, o, 0, done, ctx, &st);
    pthread_mutex_unlock(&cl->mu); /* no callback but from rlk_client_handle */
    return st;
}

/* The loop's rate results, each to its callback without the mutex;
 * those that end meanwhile are owed to the next handle. */
static void rates_deliver(rlk_client *cl)
{
    if (!cl->rate_due) return;
    cl->rate_due = 0;
    rate_rec *mine = NULL, **pp = &cl->rate_recs;
    while (*pp) {
        rate_rec *k = *pp;
        if (k->done && k->cb) {
            *pp = k->next;
            k->next = mine;
            mine = k;
        } else {
            pp = &k->next;
        }
    }
    while (mine) {
        rate_rec *k = mine;
        mine = k->next;
        if (k->status != RLK_OK && k->status != RLK_RATE_LIMITED) cl_fail(cl, k->status, "%s", k->msg);
        pthread_mutex_unlock(&cl->mu);
        k->cb(k->ctx, k->status, &k->res);
        pthread_mutex_lock(&cl->mu);
        rlk__free(k);
    }
}

/* ------------------------------------------------------------------ */
/* Semaphores: the semaphore primitive (sem.h) joined to the host       */

/* A permit set held, or asked for by a call under way: the primitive's
 * permit and what the caller sees.  A blocking call that gave up on its
 * reply (its deadline passed first) forgets the permit, which the
 * primitive gives back when the reply comes. */
struct rlk_sem {
    rlk_client *cl;
    rlk_sem *prev, *next;     /* the client's permits held */
    rlk__sem *h;
    void (*on_lost)(void *ctx, rlk_sem *s);
    void *ctx;
    int done, status;
    int lost_due;             /* on_lost owed, called at the end of a call */
    char msg[256];
};

static void sem_link(rlk_client *cl, rlk_sem *s)
{
    s->prev = NULL;
    s->next = cl->sem_list;
    if (cl->sem_list) cl->sem_list->prev = s;
    cl->sem_list = s;
}

static void sem_unlink(rlk_client *cl, rlk_sem *s)
{
    if (s->prev) s->prev->next = s->next;
    else if (cl->sem_list == s) cl->sem_list = s->next;
    if (s->next) s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

/* The primitive found a permit lost: on_lost from the thread now (the
 * mutex held, as rlk_lock_options.on_lost says), else at the end of the
 * owner's call (sems_notify). */
static void sem_lost(void *owner)
{
    rlk_sem *s = owner;
    rlk_client *cl = s->cl;
    if (!s->on_lost) return;
    if (cl->thread_on && pthread_equal(pthread_self(), cl->thread)) {
        s->on_lost(s->ctx, s);
    } else {
        s->lost_due = 1;
        cl->sem_notify = 1;
        wake_thread(cl);
    }
}

/* With the mutex held: permits whose validity ran out unrenewed are
 * lost; the on_lost owed are called with it let go (they may release
 * permits: the list is walked again after each). */
static void sems_notify(rlk_client *cl)
{
    if (!cl->sem_list) return;
    int64_t now = rlk__now_ms();
    for (rlk_sem *s = cl->sem_list; s; s = s->next)
        if (rlk__sem_expire(s->h, now) && s->on_lost) {
            s->lost_due = 1;
            cl->sem_notify = 1;
        }
    while (cl->sem_notify) {
        rlk_sem *s = cl->sem_list;
        while (s && !s->lost_due) s = s->next;
        if (!s) {
            cl->sem_notify = 0;
            break;
        }
        s->lost_due = 0;
        pthread_mutex_unlock(&cl->mu);
        s->on_lost(s->ctx, s);
        pthread_mutex_lock(&cl->mu);
    }
}

static void sems_end(rlk_client *cl)
{
    if (cl->sems) cl->sems_free(cl->sems); /* the permits' too */
    cl->sems = NULL;
    while (cl->sem_list) {
        rlk_sem *s = cl->sem_list;
        sem_unlink(cl, s);
        rlk__free(s);
    }
}

static void sem_done(void *ctx, int status, const char *msg)
{
    rlk_sem *s = ctx;
    s->done = 1;
    s->status = status;
    snprintf(s->msg, sizeof s->msg, "%s", msg ? msg : "");
    if (s->cl->thread_on) s->cl->th->signal(s->cl);
}

static int sem_is_done(void *ctx) { return ((rlk_sem *)ctx)->done; }

static int sem_ready(rlk_client *cl, const char *doing)
{
    if (!cl->sems && !(cl->sems = rlk__sems_new(cl->host, cl->renewer, cl->cfg.recheck_ms,
                                                sem_lost)))
        return cl_fail(cl, RLK_ERR_NOMEM, "%s: out of memory", doing);
    cl->sems_free = rlk__sems_free;
    return RLK_OK;
}

void rlk_sem_options_init(rlk_sem_options *o)
{
    memset(o, 0, sizeof *o);
    o->k = 1;
}

int rlk_sem_acquire(rlk_client *cl, const char *name, const rlk_sem_options *o, rlk_sem **out)
{
    if (out) *out = NULL;
    if (cl->rl) return rlk__rl_refuse(cl->rl, "the semaphore");
    enter(cl);
    char err[200];
    int st = out ? rlk__sem_check(name, o, cl->thread_on || cl->ticking || cl->looping, err,
                                  sizeof err)
                 : (snprintf(err, sizeof err, "semaphore: no out"), RLK_ERR_INVALID);
    if (st != RLK_OK) {
        cl_fail(cl, st, "%s", err);
        leave(cl);
        return st;
    }
    rlk_sem *s = NULL;
    if ((st = sem_ready(cl, "semaphore")) != RLK_OK || !(s = rlk__malloc(sizeof *s))) {
        if (st == RLK_OK) st = cl_fail(cl, RLK_ERR_NOMEM, "semaphore: out of memory");
        leave(cl);
        return st;
    }
    memset(s, 0, sizeof *s);
    s->cl = cl;
    s->on_lost = o->on_lost;
    s->ctx = o->ctx;
    /* Each try's reply within the command timeout past the wait; the
     * turns end a command timeout after that, for a connection that
     * never comes. */
    int64_t now = rlk__now_ms(), t = cl->timeout, wait = o->wait_ms;
    int64_t wait_until = wait > 0 ? now + wait : -1;
    int64_t reply_by = wait == RLK_WAIT_FOREVER || t < 0 ? RLK__DL_DEFAULT : now + wait + t;
    int64_t until = wait == RLK_WAIT_FOREVER || t < 0 ? -1 : now + wait + 2 * t;
    st = rlk__sem_acquire(cl->sems, name, o, reply_by, wait_until, sem_done, s, s, now, &s->h);
    if (st != RLK_OK) {
        cl_fail(cl, st, "semaphore %s: %s", name, rlk_strerror(st));
        rlk__free(s);
        leave(cl);
        return st;
    }
    int r = drive(cl, sem_is_done, s, until);
    if (s->done && s->status == RLK_OK) {
        sem_link(cl, s);
        *out = s;
        st = RLK_OK;
    } else {
        if (s->done) {
            st = s->status;
            cl_fail(cl, st, "%s", s->msg);
        } else {
            st = not_connected(cl, r == RLK_OK ? RLK_ERR_TIMEOUT : r, "semaphore");
        }
        rlk__sem_forget(s->h);
        rlk__free(s);
    }
    leave(cl);
    return st;
}

int rlk_sem_release(rlk_sem *s)
{
    if (!s) return RLK_ERR_INVALID;
    rlk_client *cl = s->cl;
    enter(cl);
    sem_unlink(cl, s);
    int64_t now = rlk__now_ms();
    if (rlk__sem_lost(s->h) && s->lost_due) {
        /* Its on_lost first, as the lock's release calls it. */
        s->lost_due = 0;
        pthread_mutex_unlock(&cl->mu);
        s->on_lost(s->ctx, s);
        pthread_mutex_lock(&cl->mu);
    }
    int64_t t = cl->timeout;
    s->done = 0;
    /* The permit is freed by a release that fails at once: its name is
     * read before. */
    snprintf(s->msg, sizeof s->msg, "semaphore %s: ", rlk__sem_name(s->h));
    int st = rlk__sem_release(s->h, t < 0 ? RLK__DL_DEFAULT : now + t, sem_done, s, now);
    if (st == RLK_LOCK_LOST) {
        cl_fail(cl, st, "%sthe permits were lost before the release", s->msg);
    } else if (st != RLK_OK) {
        cl_fail(cl, st, "%srelease: %s", s->msg, rlk_strerror(st));
    } else {
        int r = drive(cl, sem_is_done, s, t < 0 ? -1 : now + 2 * t);
        if (s->done) {
            st = s->status;
            if (st != RLK_OK) cl_fail(cl, st, "%s", s->msg);
        } else {
            /* The release goes on without us; the permit is freed by its
             * reply. */
            st = not_connected(cl, r == RLK_OK ? RLK_ERR_TIMEOUT : r, "semaphore release");
            rlk__sem_forget(s->h);
        }
    }
    rlk__free(s);
    leave(cl);
    return st;
}

int rlk_sem_extend(rlk_sem *s, int64_t ms)
{
    if (!s) return RLK_ERR_INVALID;
    rlk_client *cl = s->cl;
    enter(cl);
    int64_t now = rlk__now_ms(), t = cl->timeout;
    s->done = 0;
    int st = rlk__sem_extend(s->h, ms, t < 0 ? RLK__DL_DEFAULT : now + t, sem_done, s, now);
    if (st == RLK_LOCK_LOST) {
        cl_fail(cl, st, "semaphore %s: the permits were lost before the extend", rlk__sem_name(s->h));
    } else if (st != RLK_OK) {
        cl_fail(cl, st, "semaphore %s: extend: %s", rlk__sem_name(s->h),
                st == RLK_ERR_INVALID ? "ms below 1, or an extend under way" : rlk_strerror(st));
    } else {
        int r = drive(cl, sem_is_done, s, t < 0 ? -1 : now + 2 * t);
        st = s->done ? s->status : not_connected(cl, r == RLK_OK ? RLK_ERR_TIMEOUT : r, "semaphore extend");
        if (s->done && st != RLK_OK) cl_fail(cl, st, "%s", s->msg);
    }
    leave(cl);
    return st;
}

void rlk_sem_forget(rlk_sem *s)
{
    if (!s) return;
    rlk_client *cl = s->cl;
    enter(cl);
    sem_unlink(cl, s);
    rlk__sem_forget(s->h);
    rlk__free(s);
    leave(cl);
}

int64_t rlk_sem_remaining_ms(const rlk_sem *s)
{
    return s ? rlk__sem_remaining(s->h, rlk__now_ms()) : 0;
}
int rlk_sem_is_lost(const rlk_sem *s)
{
    return !s || rlk__sem_lost(s->h) || rlk__sem_remaining(s->h, rlk__now_ms()) <= 0;
}
uint64_t rlk_sem_fence(const rlk_sem *s) { return s ? rlk__sem_fence(s->h) : 0; }
const char *rlk_sem_token(const rlk_sem *s) { return s ? rlk__sem_token(s->h) : ""; }
const char *rlk_sem_name(const rlk_sem *s) { return s ? rlk__sem_name(s->h) : ""; }
int64_t rlk_sem_k(const rlk_sem *s) { return s ? rlk__sem_k(s->h) : 0; }
int64_t rlk_sem_ttl_ms(const rlk_sem *s) { return s ? rlk__sem_ttl(s->h) : 0; }

/* A status read's record: the call that gave up on it leaves it to the
 * reply, which frees it. */
typedef struct sem_status_rec {
    rlk_client *cl;
    int done, status, abandoned;
    rlk_sem_status st;
    char msg[256];
} sem_status_rec;

static void sem_status_done(void *ctx, int status, const char *msg)
{
    sem_status_rec *k = ctx;
    if (k->abandoned) {
        rlk_sem_status_free(&k->st);
        rlk__free(k);
        return;
    }
    k->done = 1;
    k->status = status;
    snprintf(k->msg, sizeof k->msg, "%s", msg ? msg : "");
    if (k->cl->thread_on) k->cl->th->signal(k->cl);
}

static int sem_status_is_done(void *ctx) { return ((sem_status_rec *)ctx)->done; }

int rlk_sem_get_status(rlk_client *cl, const char *name, rlk_sem_layout layout,
                       int64_t lock_timeout_ms, rlk_sem_status *st)
{
    if (st) memset(st, 0, sizeof *st);
    /* redis-semaphore's default lockTimeout. */
    if (lock_timeout_ms == 0) lock_timeout_ms = 10000;
    if (cl->rl) return rlk__rl_refuse(cl->rl, "the semaphore");
    enter(cl);
    int r = RLK_OK;
    if (!st || !name || !*name ||
        (layout == RLK_SEM_LAYOUT_RESPLOCK && !rlk__sem_name_ok(name)))
        r = cl_fail(cl, RLK_ERR_INVALID,
                    "semaphore status: no status, or an empty name or one that begins with '}'");
    else if (layout == RLK_SEM_LAYOUT_REDIS_SEMAPHORE &&
             (lock_timeout_ms < 1 || lock_timeout_ms > ((int64_t)1 << 40)))
        r = cl_fail(cl, RLK_ERR_INVALID, "semaphore status: a lockTimeout not 1 ms .. 2^40 ms");
    else if (layout != RLK_SEM_LAYOUT_RESPLOCK && layout != RLK_SEM_LAYOUT_REDIS_SEMAPHORE)
        r = cl_fail(cl, RLK_ERR_INVALID, "semaphore status: a layout not known");
    sem_status_rec *k = NULL;
    if (r == RLK_OK) r = sem_ready(cl, "semaphore status");
    if (r == RLK_OK && !(k = rlk__malloc(sizeof *k)))
        r = cl_fail(cl, RLK_ERR_NOMEM, "semaphore status: out of memory");
    if (r == RLK_OK) {
        memset(k, 0, sizeof *k);
        k->cl = cl;
        int64_t now = rlk__now_ms(), t = cl->timeout;
        r = rlk__sem_status(cl->sems, name, (int)layout, lock_timeout_ms, &k->st,
                            t < 0 ? RLK__DL_DEFAULT : now + t, sem_status_done, k, now);
        if (r != RLK_OK) {
            cl_fail(cl, r, "semaphore status %s: %s", name, rlk_strerror(r));
            rlk__free(k);
        } else {
            int d = drive(cl, sem_status_is_done, k, t < 0 ? -1 : now + 2 * t);
            if (k->done) {
                r = k->status;
                if (r == RLK_OK) *st = k->st;
                else cl_fail(cl, r, "%s", k->msg);
                rlk__free(k);
            } else {
                k->abandoned = 1;
                r = not_connected(cl, d == RLK_OK ? RLK_ERR_TIMEOUT : d, "semaphore status");
            }
        }
    }
    leave(cl);
    return r;
}

void rlk_sem_status_free(rlk_sem_status *st)
{
    if (!st) return;
    rlk__free(st->holder);
    st->holder = NULL;
    st->nholders = 0;
}

/* ------------------------------------------------------------------ */
/* Read-write locks: the primitive (rw.h) joined to the host, as the     */
/* semaphores are                                                       */

/* A hold, or one asked for by a call under way: the primitive's hold
 * and what the caller sees.  A blocking call that gave up on its reply
 * (its deadline passed first) forgets the hold, which the
 * primitive gives back when the reply comes. */
struct rlk_rw {
    rlk_client *cl;
    rlk_rw *prev, *next;     /* the client's holds */
    rlk__rw *h;
    void (*on_lost)(void *ctx, rlk_rw *s);
    void *ctx;
    int done, status;
    int lost_due;             /* on_lost owed, called at the end of a call */
    char msg[256];
};

static void rw_link(rlk_client *cl, rlk_rw *s)
{
    s->prev = NULL;
    s->next = cl->rw_list;
    if (cl->rw_list) cl->rw_list->prev = s;
    cl->rw_list = s;
}

static void rw_unlink(rlk_client *cl, rlk_rw *s)
{
    if (s->prev) s->prev->next = s->next;
    else if (cl->rw_list == s) cl->rw_list = s->next;
    if (s->next) s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

/* The primitive found a hold lost: on_lost from the thread now (the
 * mutex held, as rlk_lock_options.on_lost says), else at the end of the
 * owner's call (rws_notify). */
static void rw_lost(void *owner)
{
    rlk_rw *s = owner;
    rlk_client *cl = s->cl;
    if (!s->on_lost) return;
    if (cl->thread_on && pthread_equal(pthread_self(), cl->thread)) {
        s->on_lost(s->ctx, s);
    } else {
        s->lost_due = 1;
        cl->rw_notify = 1;
        wake_thread(cl);
    }
}

/* With the mutex held: holds whose validity ran out unrenewed are
 * lost; the on_lost owed are called with it let go (they may release
 * holds: the list is walked again after each). */
static void rws_notify(rlk_client *cl)
{
    if (!cl->rw_list) return;
    int64_t now = rlk__now_ms();
    for (rlk_rw *s = cl->rw_list; s; s = s->next)
        if (rlk__rw_expire(s->h, now) && s->on_lost) {
            s->lost_due = 1;
            cl->rw_notify = 1;
        }
    while (cl->rw_notify) {
        rlk_rw *s = cl->rw_list;
        while (s && !s->lost_due) s = s->next;
        if (!s) {
            cl->rw_notify = 0;
            break;
        }
        s->lost_due = 0;
        pthread_mutex_unlock(&cl->mu);
        s->on_lost(s->ctx, s);
        pthread_mutex_lock(&cl->mu);
    }
}

static void rws_end(rlk_client *cl)
{
    if (cl->rws) cl->rws_free(cl->rws); /* the holds' too */
    cl->rws = NULL;
    while (cl->rw_list) {
        rlk_rw *s = cl->rw_list;
        rw_unlink(cl, s);
        rlk__free(s);
    }
}

static void rw_done(void *ctx, int status, const char *msg)
{
    rlk_rw *s = ctx;
    s->done = 1;
    s->status = status;
    snprintf(s->msg, sizeof s->msg, "%s", msg ? msg : "");
    if (s->cl->thread_on) s->cl->th->signal(s->cl);
}

static int rw_is_done(void *ctx) { return ((rlk_rw *)ctx)->done; }

static int rw_ready(rlk_client *cl, const char *doing)
{
    if (!cl->rws && !(cl->rws = rlk__rws_new(cl->host, cl->renewer, cl->cfg.recheck_ms,
                                                rw_lost)))
        return cl_fail(cl, RLK_ERR_NOMEM, "%s: out of memory", doing);
    cl->rws_free = rlk__rws_free;
    return RLK_OK;
}

void rlk_rw_options_init(rlk_rw_options *o)
{
    memset(o, 0, sizeof *o);
    o->mode = RLK_RW_READ;
}

int rlk_rw_acquire(rlk_client *cl, const char *name, const rlk_rw_options *o, rlk_rw **out)
{
    if (out) *out = NULL;
    if (cl->rl) return rlk__rl_refuse(cl->rl, "the read-write lock");
    enter(cl);
    char err[200];
    int st = out ? rlk__rw_check(name, o, cl->thread_on || cl->ticking || cl->looping, err,
                                  sizeof err)
                 : (snprintf(err, sizeof err, "read-write lock: no out"), RLK_ERR_INVALID);
    if (st == RLK_OK && o->holder && o->holder->cl != cl)
        st = (snprintf(err, sizeof err, "read-write lock: a holder of another client"),
              RLK_ERR_INVALID);
    if (st != RLK_OK) {
        cl_fail(cl, st, "%s", err);
        leave(cl);
        return st;
    }
    rlk_rw *s = NULL;
    if ((st = rw_ready(cl, "read-write lock")) != RLK_OK || !(s = rlk__malloc(sizeof *s))) {
        if (st == RLK_OK) st = cl_fail(cl, RLK_ERR_NOMEM, "read-write lock: out of memory");
        leave(cl);
        return st;
    }
    memset(s, 0, sizeof *s);
    s->cl = cl;
    s->on_lost = o->on_lost;
    s->ctx = o->ctx;
    /* Each try's reply within the command timeout past the wait; the
     * turns end a command timeout after that, for a connection that
     * never comes. */
    int64_t now = rlk__now_ms(), t = cl->timeout, wait = o->wait_ms;
    int64_t wait_until = wait > 0 ? now + wait : -1;
    int64_t reply_by = wait == RLK_WAIT_FOREVER || t < 0 ? RLK__DL_DEFAULT : now + wait + t;
    int64_t until = wait == RLK_WAIT_FOREVER || t < 0 ? -1 : now + wait + 2 * t;
    st = rlk__rw_acquire(cl->rws, name, o, o->holder ? rlk__rw_token(o->holder->h) : NULL,
                         reply_by, wait_until, rw_done, s, s, now, &s->h);
    if (st != RLK_OK) {
        cl_fail(cl, st, "read-write lock %s: %s", name, rlk_strerror(st));
        rlk__free(s);
        leave(cl);
        return st;
    }
    int r = drive(cl, rw_is_done, s, until);
    if (s->done && s->status == RLK_OK) {
        rw_link(cl, s);
        *out = s;
        st = RLK_OK;
    } else {
        if (s->done) {
            st = s->status;
            cl_fail(cl, st, "%s", s->msg);
        } else {
            st = not_connected(cl, r == RLK_OK ? RLK_ERR_TIMEOUT : r, "read-write lock");
        }
        rlk__rw_forget(s->h);
        rlk__free(s);
    }
    leave(cl);
    return st;
}

int rlk_rw_release(rlk_rw *s)
{
    if (!s) return RLK_ERR_INVALID;
    rlk_client *cl = s->cl;
    enter(cl);
    rw_unlink(cl, s);
    int64_t now = rlk__now_ms();
    if (rlk__rw_lost(s->h) && s->lost_due) {
        /* Its on_lost first, as the lock's release calls it. */
        s->lost_due = 0;
        pthread_mutex_unlock(&cl->mu);
        s->on_lost(s->ctx, s);
        pthread_mutex_lock(&cl->mu);
    }
    int64_t t = cl->timeout;
    s->done = 0;
    /* The hold is freed by a release that fails at once: its name is
     * read before. */
    snprintf(s->msg, sizeof s->msg, "read-write lock %s: ", rlk__rw_name(s->h));
    int st = rlk__rw_release(s->h, t < 0 ? RLK__DL_DEFAULT : now + t, rw_done, s, now);
    if (st == RLK_LOCK_LOST) {
        cl_fail(cl, st, "%sthe hold was lost before the release", s->msg);
    } else if (st != RLK_OK) {
        cl_fail(cl, st, "%srelease: %s", s->msg, rlk_strerror(st));
    } else {
        int r = drive(cl, rw_is_done, s, t < 0 ? -1 : now + 2 * t);
        if (s->done) {
            st = s->status;
            if (st != RLK_OK) cl_fail(cl, st, "%s", s->msg);
        } else {
            /* The release goes on without us; the hold is freed by its
             * reply. */
            st = not_connected(cl, r == RLK_OK ? RLK_ERR_TIMEOUT : r, "read-write lock release");
            rlk__rw_forget(s->h);
        }
    }
    rlk__free(s);
    leave(cl);
    return st;
}

int rlk_rw_extend(rlk_rw *s, int64_t ms)
{
    if (!s) return RLK_ERR_INVALID;
    rlk_client *cl = s->cl;
    enter(cl);
    int64_t now = rlk__now_ms(), t = cl->timeout;
    s->done = 0;
    int st = rlk__rw_extend(s->h, ms, t < 0 ? RLK__DL_DEFAULT : now + t, rw_done, s, now);
    if (st == RLK_LOCK_LOST) {
        cl_fail(cl, st, "read-write lock %s: the hold was lost before the extend", rlk__rw_name(s->h));
    } else if (st != RLK_OK) {
        cl_fail(cl, st, "read-write lock %s: extend: %s", rlk__rw_name(s->h),
                st == RLK_ERR_INVALID ? "ms below 1, or an extend under way" : rlk_strerror(st));
    } else {
        int r = drive(cl, rw_is_done, s, t < 0 ? -1 : now + 2 * t);
        st = s->done ? s->status : not_connected(cl, r == RLK_OK ? RLK_ERR_TIMEOUT : r, "read-write lock extend");
        if (s->done && st != RLK_OK) cl_fail(cl, st, "%s", s->msg);
    }
    leave(cl);
    return st;
}

void rlk_rw_forget(rlk_rw *s)
{
    if (!s) return;
    rlk_client *cl = s->cl;
    enter(cl);
    rw_unlink(cl, s);
    rlk__rw_forget(s->h);
    rlk__free(s);
    leave(cl);
}

int64_t rlk_rw_remaining_ms(const rlk_rw *s)
{
    return s ? rlk__rw_remaining(s->h, rlk__now_ms()) : 0;
}
int rlk_rw_is_lost(const rlk_rw *s)
{
    return !s || rlk__rw_lost(s->h) || rlk__rw_remaining(s->h, rlk__now_ms()) <= 0;
}
uint64_t rlk_rw_fence(const rlk_rw *s) { return s ? rlk__rw_fence(s->h) : 0; }
const char *rlk_rw_token(const rlk_rw *s) { return s ? rlk__rw_token(s->h) : ""; }
const char *rlk_rw_name(const rlk_rw *s) { return s ? rlk__rw_name(s->h) : ""; }
rlk_rw_mode rlk_rw_mode_of(const rlk_rw *s) { return s ? (rlk_rw_mode)rlk__rw_mode(s->h) : RLK_RW_READ; }
int64_t rlk_rw_ttl_ms(const rlk_rw *s) { return s ? rlk__rw_ttl(s->h) : 0; }

/* A status read's record: the call that gave up on it leaves it to the
 * reply, which frees it. */
typedef struct rw_status_rec {
    rlk_client *cl;
    int done, status, abandoned;
    rlk_rw_status st;
    char msg[256];
} rw_status_rec;

static void rw_status_done(void *ctx, int status, const char *msg)
{
    rw_status_rec *k = ctx;
    if (k->abandoned) {
        rlk_rw_status_free(&k->st);
        rlk__free(k);
        return;
    }
    k->done = 1;
    k->status = status;
    snprintf(k->msg, sizeof k->msg, "%s", msg ? msg : "");
    if (k->cl->thread_on) k->cl->th->signal(k->cl);
}

static int rw_status_is_done(void *ctx) { return ((rw_status_rec *)ctx)->done; }

int rlk_rw_get_status(rlk_client *cl, const char *name, rlk_rw_status *st)
{
    if (st) memset(st, 0, sizeof *st);
    if (cl->rl) return rlk__rl_refuse(cl->rl, "the read-write lock");
    enter(cl);
    int r = RLK_OK;
    if (!st || !rlk__rw_name_ok(name))
        r = cl_fail(cl, RLK_ERR_INVALID,
                    "read-write lock status: no status, or an empty name or one that begins with '}'");
    rw_status_rec *k = NULL;
    if (r == RLK_OK) r = rw_ready(cl, "read-write lock status");
    if (r == RLK_OK && !(k = rlk__malloc(sizeof *k)))
        r = cl_fail(cl, RLK_ERR_NOMEM, "read-write lock status: out of memory");
    if (r == RLK_OK) {
        memset(k, 0, sizeof *k);
        k->cl = cl;
        int64_t now = rlk__now_ms(), t = cl->timeout;
        r = rlk__rw_status(cl->rws, name, &k->st, t < 0 ? RLK__DL_DEFAULT : now + t,
                            rw_status_done, k, now);
        if (r != RLK_OK) {
            cl_fail(cl, r, "read-write lock status %s: %s", name, rlk_strerror(r));
            rlk__free(k);
        } else {
            int d = drive(cl, rw_status_is_done, k, t < 0 ? -1 : now + 2 * t);
            if (k->done) {
                r = k->status;
                if (r == RLK_OK) *st = k->st;
                else cl_fail(cl, r, "%s", k->msg);
                rlk__free(k);
            } else {
                k->abandoned = 1;
                r = not_connected(cl, d == RLK_OK ? RLK_ERR_TIMEOUT : d, "read-write lock status");
            }
        }
    }
    leave(cl);
    return r;
}

void rlk_rw_status_free(rlk_rw_status *st)
{
    if (!st) return;
    rlk__free(st->hold);
    st->hold = NULL;
    st->nholds = 0;
}
