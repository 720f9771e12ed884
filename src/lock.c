/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Lock semantics: acquire, release, extend, renewal by a watchdog,
 * reentrancy, fencing tokens, waiting that wakes on release.
 *
 * Everything that must be atomic on the server is one script; this file
 * knows the scripts' meaning, the script layer knows how to run them, the
 * connection layer how to carry them.  Times are monotonic milliseconds.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "resplock.h"
#include "conn_internal.h"
#include "clock.h"
#include "internal.h"
#include "lua.h"
#include "script.h"
#include "lease.h"
#include "keys.h"
#include "waiter.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>


/* ------------------------------------------------------------------ */
/* Scripts: src/lua/NAME.lua (see lua.h and each file's header)        */

enum { S_ACQUIRE, S_RELEASE, S_EXTEND, S_RENEW, S_STATUS, S_COUNT };

static const char *const script_text[S_COUNT] = {rlk__lua_acquire, rlk__lua_release,
                                                 rlk__lua_extend, rlk__lua_renew,
                                                 rlk__lua_status};

/* ------------------------------------------------------------------ */
/* Objects                                                              */

struct rlk_lock {
    rlk_client *cl;
    char *name;              /* with the derived keys, one allocation */
    char *queue_key;         /* waiting in line: see src/lua/acquire.lua */
    char *waiters_key;
    char *tomb_key;          /* the tombstones' prefix (":TOKEN" follows) */
    char *channel;           /* published on release */
    char token[96];          /* simple: random hex; reentrant: field */
    rlk_lock_kind kind;
    uint64_t fence;
    int64_t holds;
    void (*on_lost)(void *ctx, rlk_lock *l);
    void *ctx;
    /* Its TTL, validity and renewal, in the client's lease registry.  A
     * renewal round in flight holds a reference (the registry's mutex is
     * not held across its I/O); a handle released or forgotten meanwhile
     * is unlinked and marked dead, and the round frees it. */
    rlk__lease lease;
};

struct rlk_client {
    rlk_client_config cfg;
    char *strings;
    char client_id[64];
    rlk_conn *conn;
    rlk_conn *sub;           /* RESP2 only: a connection for waiting */
    rlk_lock *waiting;       /* the lock being waited for, if any */
    int handed;              /* ... was handed over: its fence in handed_fence */
    uint64_t handed_fence;
    char handoff_channel[64]; /* this client's: "FENCE TOKEN" hands a lock over */
    /* RESP3: the subscriptions are kept after a wait, so that the next
     * wait for the same lock starts in the queue at once.  Valid while
     * the connection's generation is sub_gen. */
    uint64_t sub_gen;
    int sub_handoff;
    char *sub_release;       /* the release channel subscribed, or NULL */
    rlk_script scripts[S_COUNT];
    rlk__leases leases;      /* the locks held; its mutex when the watchdog thread runs */
    pthread_t thread;
    int thread_running;
    int stop_pipe[2];        /* wakes the thread: to stop, or to look again */
    int stopping;
    rlk_conn *wd_conn;       /* the watchdog thread's own connection */
    /* The deadline of the call under way on conn (acquire, release...),
     * -1 for none: a renewal round inside a wait keeps within it. */
    int64_t call_cap;
    int server_busy;         /* the last script was refused with LOADING or BUSY */
    /* The lock of a handoff's confirmation sent and not read yet (see
     * confirm_later; NULL once that was freed), and when it was sent. */
    rlk_lock *unconfirmed;
    int64_t confirm_sent;
    /* Tick mode's renewal round: sent by one tick, its replies read by
     * later calls on conn as they come (see send_round). */
    rlk__round tround;
    int tround_on;
    int renew_eval;          /* the script was missing: the next round sends EVAL */
    char err[512];
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
    return status;
}

static int conn_fail(rlk_client *cl, rlk_conn *c, int status, const char *doing)
{
    return cl_fail(cl, status, "%s: %s", doing, rlk_conn_errmsg(c));
}

const char *rlk_client_errmsg(const rlk_client *cl) { return cl->err; }
rlk_conn *rlk_client_conn(rlk_client *cl) { return cl->conn; }
int rlk_client_fd(const rlk_client *cl) { return rlk_conn_fd(cl->conn); }

void rlk_client_config_init(rlk_client_config *cfg) { memset(cfg, 0, sizeof *cfg); }
void rlk_lock_options_init(rlk_lock_options *o) { memset(o, 0, sizeof *o); }

/* Makes the watchdog thread, if any, look at the locks now: one was
 * added, or is due sooner than the thread planned to wake. */
static void wake_watchdog(rlk_client *cl)
{
    if (!cl->thread_running) return;
    ssize_t w;
    do {
        w = write(cl->stop_pipe[1], "w", 1);
    } while (w < 0 && errno == EINTR); /* a full pipe wakes it as well */
}

/* Called from whichever thread uses the connection. */
static void on_connect(void *ctx, rlk_conn *c, int reconnected)
{
    (void)c;
    rlk_client *cl = ctx;
    if (reconnected) {
        __atomic_store_n(&cl->leases.recheck_all, 1, __ATOMIC_RELAXED);
        wake_watchdog(cl);
    }
}

/* A waiter's connection: a message on the client's handoff channel
 * naming the waiter's token means the lock is now its own, with the fence
 * the message carries.  Anything else only wakes the waiter
 * (rlk_conn_wait_push returns), which then tries again. */
static void on_push(void *ctx, rlk_conn *c, const rlk_resp_value *msg)
{
    rlk_client *cl = ctx;
    if (c != cl->conn && c != cl->sub) return; /* the watchdog thread's */
    rlk_lock *w = cl->waiting;
    uint64_t f;
    if (!w || !rlk__handoff_parse(msg, cl->handoff_channel, w->token, &f)) return;
    cl->handed_fence = f;
    cl->handed = 1;
}

static rlk_conn *new_conn(rlk_client *cl, int protocol)
{
    rlk_conn_config cc = cl->cfg.conn;
    cc.on_push = on_push;
    cc.on_connect = on_connect;
    cc.ctx = cl;
    if (protocol) cc.protocol = protocol;
    /* One try per call, without sleeping: the lock layer decides when to
     * try again (a watchdog must not sleep through a lock's validity). */
    cc.reconnect_attempts = 1;
    return rlk_conn_new(&cc);
}

rlk_client *rlk_client_new(const rlk_client_config *cfg)
{
    rlk_client *cl = rlk__malloc(sizeof *cl);
    if (!cl) return NULL;
    memset(cl, 0, sizeof *cl);
    if (cfg) cl->cfg = *cfg;
    cl->stop_pipe[0] = cl->stop_pipe[1] = -1;
    cl->call_cap = -1;
    if (!cl->cfg.drift_ms) cl->cfg.drift_ms = RLK__DEFAULT_DRIFT_MS;
    if (cl->cfg.renew_divisor <= 0) cl->cfg.renew_divisor = 3;
    if (cl->cfg.recheck_ms <= 0) cl->cfg.recheck_ms = RLK__DEFAULT_RECHECK_MS;
    if (cl->cfg.client_id) {
        snprintf(cl->client_id, sizeof cl->client_id, "%s", cl->cfg.client_id);
    } else {
        unsigned char u[16];
        char h[33];
        if (rlk__random_bytes(u, sizeof u) != 0) {
            rlk__free(cl);
            return NULL;
        }
        u[6] = (unsigned char)((u[6] & 0x0f) | 0x40); /* a version 4 UUID */
        u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
        rlk__hex(u, sizeof u, h);
        snprintf(cl->client_id, sizeof cl->client_id, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8,
                 h + 12, h + 16, h + 20);
    }
    cl->cfg.client_id = NULL;
    {
        unsigned char u[16];
        char h[33];
        if (rlk__random_bytes(u, sizeof u) != 0) {
            rlk__free(cl);
            return NULL;
        }
        rlk__hex(u, sizeof u, h);
        snprintf(cl->handoff_channel, sizeof cl->handoff_channel, "resplock:handoff:%s", h);
    }
    /* The configuration's strings, copied: the connections opened later
     * (the RESP2 waiting one, the watchdog thread's) are made from them,
     * long after the caller's buffers may have gone. */
    if (rlk__conn_config_copy(&cl->cfg.conn, &cl->strings) != RLK_OK) {
        rlk__free(cl);
        return NULL;
    }
    cl->conn = new_conn(cl, 0);
    if (!cl->conn || rlk__leases_init(&cl->leases, &cl->cfg) != 0) {
        rlk_conn_free(cl->conn);
        rlk__free(cl->strings);
        rlk__free(cl);
        return NULL;
    }
    for (int i = 0; i < S_COUNT; i++) rlk_script_init(&cl->scripts[i], script_text[i], 0);
    return cl;
}

int rlk_client_connect(rlk_client *cl)
{
    int r = rlk_conn_connect(cl->conn);
    if (r != RLK_OK) return conn_fail(cl, cl->conn, r, "connect");
    return RLK_OK;
}

static void settle_confirm(rlk_client *cl);

static void free_lock(rlk_lock *l)
{
    rlk__free(l->name);
    rlk__free(l);
}

/* A handle whose last renewal round ended after it was dropped. */
static void destroy_lock(void *owner) { free_lock(owner); }

/* Unlinks and frees a handle (now, or at the end of the round that
 * holds it).  No network I/O: it never waits for a renewal round. */
static void drop_lock(rlk_client *cl, rlk_lock *l)
{
    if (cl->unconfirmed == l) cl->unconfirmed = NULL; /* its reply is read and dropped */
    pthread_mutex_lock(&cl->leases.mu);
    int now = rlk__lease_unlink(&cl->leases, &l->lease);
    pthread_mutex_unlock(&cl->leases.mu);
    if (now) free_lock(l);
}

void rlk_client_free(rlk_client *cl)
{
    if (!cl) return;
    rlk_client_watchdog_stop(cl);
    settle_confirm(cl);
    while (cl->leases.head) drop_lock(cl, cl->leases.head->owner);
    rlk_conn_free(cl->conn);
    rlk_conn_free(cl->sub);
    rlk__free(cl->sub_release);
    rlk__leases_destroy(&cl->leases);
    rlk__free(cl->strings);
    rlk__free(cl);
}

/* ------------------------------------------------------------------ */
/* Running scripts                                                      */

static void set_validity(rlk_lock *l, int64_t start, int64_t ttl);
static void mark_lost(rlk_lock *l);

/*
 * The reply of a handoff's confirmation sent by confirm_later, handed
 * over by the connection ahead of the next call's own replies: the lock
 * is then valid for its TTL from when the confirmation was sent, or lost
 * (the claim ran out and someone else has it).  NULL: the connection
 * closed first, nothing is learnt, and the lock stays valid for its
 * claim.
 */
static void confirm_reply(void *ctx, rlk_conn *c, const rlk_resp_value *v)
{
    rlk_client *cl = ctx;
    rlk_lock *l = cl->unconfirmed;
    (void)c;
    cl->unconfirmed = NULL;
    if (!l || !v || v->type != RLK_RESP_INTEGER) return;
    pthread_mutex_lock(&cl->leases.mu);
    if (v->integer >= 0) set_validity(l, cl->confirm_sent, l->lease.ttl);
    else mark_lost(l);
    pthread_mutex_unlock(&cl->leases.mu);
}

/* Reads a handoff's confirmation still owed, now (tick, forget, free). */
static void settle_confirm(rlk_client *cl)
{
    if (cl->unconfirmed && rlk__conn_drain(cl->conn) != RLK_OK) cl->unconfirmed = NULL;
}

/* A call that may be re-sent after its connection failed.  With flag,
 * the re-send carries one more argument, "1", when the lock's validity
 * (valid_until, monotonic ms) is not over by then: the caller leaves
 * room for it at argv[argc]. */
struct resend {
    int flag;            /* the flag: argv[argc], sent in the re-send only */
    int64_t valid_until;
};

static const struct resend RESEND = {0, 0}; /* re-sent as it is */

/* Runs a script; a failed connection is re-established and the call
 * re-sent once when `resend` (the call is safe to repeat), all within one
 * deadline. */
static int run(rlk_client *cl, rlk_conn *c, int which, int nkeys, int argc,
               const char *const *argv, const size_t *lens, const struct resend *resend,
               rlk_resp_value **out, const char *doing)
{
    /* One command timeout from now for the call and its re-send, within
     * the cap of a call around it (cl->call_cap). */
    int64_t was = rlk__conn_narrow(c, rlk__now_ms());
    int r = rlk_conn_eval(c, out, &cl->scripts[which], nkeys, argc, argv, lens);
    if (resend && rlk__transient(r)) {
        int rr = rlk_conn_reconnect(c);
        if (resend->flag && rlk__now_ms() < resend->valid_until) argc++;
        if (rr == RLK_OK) r = rlk_conn_eval(c, out, &cl->scripts[which], nkeys, argc, argv, lens);
    }
    rlk__conn_cap(c, was);
    cl->server_busy = 0;
    if (r != RLK_OK) return conn_fail(cl, c, r, doing);
    if (rlk__is_error(*out)) {
        /* A server still loading its data after a restart, or busy with
         * a long script, will serve again soon: a waiter tries again. */
        rlk_error_class ec = rlk_reply_error_class(*out);
        cl->server_busy = ec == RLK_EC_LOADING || ec == RLK_EC_BUSY;
        return cl_fail(cl, RLK_ERR_SERVER, "%s: %.*s", doing,
                       (int)((*out)->len > 300 ? 300 : (*out)->len), (*out)->str);
    }
    return RLK_OK;
}

static int64_t drift(const rlk_client *cl, int64_t ttl)
{
    return rlk_plan_drift_ms(&cl->cfg, ttl);
}

static void set_validity(rlk_lock *l, int64_t start, int64_t ttl)
{
    rlk__lease_set_validity(&l->cl->leases, &l->lease, start, ttl);
}

/* ------------------------------------------------------------------ */
/* Acquire                                                              */

/* Room for each of a lock's derived names: the name twice (a computed
 * hash tag) and a little. */
/* The lease's on_lost: the lock's, with the handle. */
static void lock_lost(void *ctx, void *owner)
{
    rlk_lock *l = owner;
    (void)ctx;
    l->on_lost(l->ctx, l);
}

static rlk_lock *new_lock(rlk_client *cl, const char *name, const rlk_lock_options *o)
{
    size_t cap = rlk__key_cap(name);
    rlk_lock *l = rlk__malloc(sizeof *l);
    if (!l) return NULL;
    memset(l, 0, sizeof *l);
    l->name = rlk__malloc(RLK__NKEYS * cap);
    if (!l->name) {
        rlk__free(l);
        return NULL;
    }
    rlk__make_keys(name, l->name, cap);
    l->queue_key = l->name + RLK__K_QUEUE * cap;
    l->waiters_key = l->name + RLK__K_WAITERS * cap;
    l->tomb_key = l->name + RLK__K_TOMB * cap;
    l->channel = l->name + RLK__K_CHANNEL * cap;
    l->cl = cl;
    l->kind = o->kind;
    l->on_lost = o->on_lost;
    l->ctx = o->ctx;
    rlk__lease *e = &l->lease;
    e->key = l->name;
    e->token = l->token;
    e->kind = o->kind == RLK_LOCK_REENTRANT ? 'r' : 's';
    e->slot = rlk__keyslot(name, strlen(name));
    e->ttl = o->ttl_ms > 0 ? o->ttl_ms : RLK_DEFAULT_TTL_MS;
    e->watchdog = o->watchdog;
    e->margin = o->lost_margin_ms > 0 ? o->lost_margin_ms : 0;
    e->on_lost = o->on_lost ? lock_lost : NULL;
    e->owner = l;
    e->destroy = destroy_lock;
    return l;
}

static int release_keys(rlk_client *cl, rlk_lock_kind kind, const char *keys, size_t cap,
                        const char *token, int64_t valid_until, int64_t *result);

/*
 * The first try of a simple lock: SET NX PX and TIME in one round trip,
 * no script.  The fence is the server's clock read right after the SET:
 * a later holder's SET comes after this lock ended, which is after this
 * TIME unless the lock ran out first, and then its validity is over
 * before this reply is read (see try_acquire).  1 acquired, 0 busy, or a
 * status.
 */
static int try_plain(rlk_client *cl, rlk_lock *l, const char *ttl, uint64_t *fence)
{
    const char *set[6] = {"SET", l->name, l->token, "NX", "PX", ttl};
    const char *time[1] = {"TIME"};
    rlk_request q[2] = {{NULL, 0, 6, set, NULL}, {NULL, 0, 1, time, NULL}};
    rlk_resp_value *v[2];
    int64_t was = rlk__conn_narrow(cl->conn, rlk__now_ms());
    int r = rlk_conn_pipeline(cl->conn, 2, q, v);
    rlk__conn_cap(cl->conn, was);
    cl->server_busy = 0;
    if (r != RLK_OK) return conn_fail(cl, cl->conn, r, "acquire");
    if (rlk__is_error(v[0])) {
        rlk_error_class ec = rlk_reply_error_class(v[0]);
        cl->server_busy = ec == RLK_EC_LOADING || ec == RLK_EC_BUSY;
        return cl_fail(cl, RLK_ERR_SERVER, "acquire: %.*s",
                       (int)(v[0]->len > 300 ? 300 : v[0]->len), v[0]->str);
    }
    if (v[0]->type == RLK_RESP_NULL) return 0;
    *fence = rlk__fence_of_time(v[1]);
    if (v[0]->type != RLK_RESP_SIMPLE || !*fence) {
        /* Taken, with no fence to give: not returned (the lock runs out
         * by its TTL if this delete does not arrive). */
        int64_t res;
        if (v[0]->type == RLK_RESP_SIMPLE)
            release_keys(cl, RLK_LOCK_SIMPLE, l->name, rlk__key_cap(l->name), l->token, -1, &res);
        return cl_fail(cl, RLK_ERR_PROTO, "acquire: unexpected reply from the server");
    }
    return 1;
}

/* One attempt.  mode 0: try; 'w': try, else join the queue (or renew
 * the place in it for lease ms; a handoff gives it the lock for claim
 * ms); 'q': try, else leave the queue.  'w' and 'q' also find the lock
 * holding this token (handed over since the last try, or taken by a try
 * whose reply was lost) and extend it to the full TTL.  1 acquired, valid
 * from this attempt's start; 0 busy (*pttl set, -1 when not known); or a
 * status. */
static int try_acquire(rlk_client *cl, rlk_lock *l, int mode, int64_t lease, int64_t claim,
                       int64_t *pttl)
{
    char ttl[24], ls[24], cs[24], m[2] = {mode ? (char)mode : '0', 0};
    snprintf(ttl, sizeof ttl, "%lld", (long long)l->lease.ttl);
    rlk_resp_value *v;
    int64_t start = rlk__now_ms();
    int reentrant = l->kind == RLK_LOCK_REENTRANT, r;
    if (!mode && !reentrant) {
        uint64_t fence = 0;
        r = try_plain(cl, l, ttl, &fence);
        if (r != 1) {
            *pttl = -1;
            return r;
        }
        l->fence = fence;
        l->holds = 1;
        set_validity(l, start, l->lease.ttl);
        return 1;
    }
    snprintf(ls, sizeof ls, "%lld", (long long)lease);
    snprintf(cs, sizeof cs, "%lld", (long long)claim);
    const char *argv[10] = {l->name, l->queue_key, l->waiters_key, l->token, ttl,
                            reentrant ? "r" : "s", m, ls, cl->handoff_channel, cs};
    r = run(cl, cl->conn, S_ACQUIRE, 3, 10, argv, NULL, NULL, &v, "acquire");
    if (r != RLK_OK) return r;
    int64_t ok, x;
    if (v->type != RLK_RESP_ARRAY || rlk__int_at(v, 0, &ok) || rlk__int_at(v, 1, &x))
        return cl_fail(cl, RLK_ERR_PROTO, "acquire: unexpected reply from the server");
    if (!ok) {
        *pttl = x;
        return 0;
    }
    l->fence = (uint64_t)x;
    if (rlk__int_at(v, 2, &l->holds) || l->holds < 1) l->holds = 1;
    set_validity(l, start, l->lease.ttl);
    return 1;
}

/*
 * A handoff message came: the lock holds this token for the waiter's
 * claim only.  Extending it to the full TTL makes it ours and proves the
 * handoff still good: a waiter that read the message late (paused past
 * the claim) may find that someone else holds the lock by now.  1 held
 * (valid from this call's start), 0 not (keep waiting), or a status.
 */
static int confirm_handoff(rlk_client *cl, rlk_lock *l)
{
    char ms[24];
    snprintf(ms, sizeof ms, "%lld", (long long)l->lease.ttl);
    const char *argv[5] = {l->name, l->token, ms, "set",
                           l->kind == RLK_LOCK_REENTRANT ? "r" : "s"};
    rlk_resp_value *v;
    int64_t start = rlk__now_ms();
    int r = run(cl, cl->conn, S_EXTEND, 1, 5, argv, NULL, NULL, &v, "acquire");
    if (r != RLK_OK) return r;
    if (v->type != RLK_RESP_INTEGER)
        return cl_fail(cl, RLK_ERR_PROTO, "acquire: unexpected reply from the server");
    if (v->integer < 0) return 0;
    l->fence = cl->handed_fence;
    l->holds = 1;
    set_validity(l, start, l->lease.ttl);
    return 1;
}

static rlk_conn *wait_conn(rlk_client *cl, int *status)
{
    if (rlk_conn_get_info(cl->conn)->protocol == 3) return cl->conn;
    /* RESP2: a subscribed connection takes no other command. */
    if (!cl->sub) {
        cl->sub = new_conn(cl, 2);
        if (!cl->sub) {
            *status = cl_fail(cl, RLK_ERR_NOMEM, "out of memory");
            return NULL;
        }
    }
    return cl->sub;
}

/* RESP3: still subscribed, on this connection, to the lock's release
 * channel and to the client's handoff channel. */
static int subscribed(rlk_client *cl, const rlk_lock *l)
{
    return rlk_conn_get_info(cl->conn)->protocol == 3 && rlk_conn_is_connected(cl->conn) &&
           cl->sub_gen == rlk_conn_generation(cl->conn) && cl->sub_handoff && cl->sub_release &&
           strcmp(cl->sub_release, l->channel) == 0;
}

/*
 * Subscribes the waiting connection to the lock's release channel and to
 * the client's handoff channel.  Under RESP3 (sub is the client's
 * connection) the subscriptions are kept after the wait: one release
 * channel, the last lock waited for (the one before is left without
 * waiting for the confirmation), and the handoff channel.  A client that
 * waits for the same lock again then joins the queue in its first try.
 * Messages on the kept channels that arrive outside a wait are dropped.
 */
static int subscribe(rlk_client *cl, rlk_conn *sub, const rlk_lock *l)
{
    int r;
    if (sub != cl->conn)
        return (r = rlk_conn_subscribe(sub, l->channel, strlen(l->channel))) != RLK_OK
                   ? r
                   : rlk_conn_subscribe(sub, cl->handoff_channel, strlen(cl->handoff_channel));
    if (cl->sub_gen != rlk_conn_generation(sub)) {
        /* A new connection: nothing is subscribed on it. */
        cl->sub_gen = rlk_conn_generation(sub);
        cl->sub_handoff = 0;
        rlk__free(cl->sub_release);
        cl->sub_release = NULL;
    }
    if (cl->sub_release && strcmp(cl->sub_release, l->channel) != 0) {
        const char *argv[2] = {"UNSUBSCRIBE", cl->sub_release};
        r = rlk__conn_send(sub, 2, argv, NULL);
        rlk__free(cl->sub_release);
        cl->sub_release = NULL;
        if (r != RLK_OK) return r;
    }
    if (!cl->sub_release) {
        size_t n = strlen(l->channel) + 1;
        char *copy = rlk__malloc(n);
        if (!copy) return RLK_ERR_NOMEM;
        r = rlk_conn_subscribe(sub, l->channel, n - 1);
        if (r != RLK_OK) {
            rlk__free(copy);
            return r;
        }
        cl->sub_release = memcpy(copy, l->channel, n);
    }
    if (!cl->sub_handoff) {
        r = rlk_conn_subscribe(sub, cl->handoff_channel, strlen(cl->handoff_channel));
        if (r != RLK_OK) return r;
        cl->sub_handoff = 1;
    }
    cl->sub_gen = rlk_conn_generation(sub);
    return RLK_OK;
}

/*
 * A handoff message came for a lock without a watchdog: the confirmation
 * is sent now, and its reply is read by the client's next call on its
 * connection, ahead of that call's own (confirm_reply), so that neither
 * the handoff nor the next call waits a round trip for it.  Meanwhile the lock is valid for the claim, from
 * the waiter's last busy try (the handoff came later).  0 when that is
 * too short to be worth it, or the connection is not there: the caller
 * confirms and waits for the answer instead.  A watchdog lock always
 * confirms at once: its renewals and loss reports go by its full TTL.
 */
static int confirm_later(rlk_client *cl, rlk_lock *l, int64_t since, int64_t claim)
{
    int64_t now = rlk__now_ms(), until = since + claim - drift(cl, claim);
    if (l->lease.watchdog || until - now < claim / 4 || !rlk_conn_is_connected(cl->conn)) return 0;
    char ms[24];
    snprintf(ms, sizeof ms, "%lld", (long long)l->lease.ttl);
    /* EVAL, not EVALSHA: a NOSCRIPT read later could not be retried. */
    const char *argv[8] = {"EVAL", cl->scripts[S_EXTEND].text, "1", l->name, l->token, ms,
                           "set", l->kind == RLK_LOCK_REENTRANT ? "r" : "s"};
    if (cl->unconfirmed ||
        rlk__conn_send_deferred(cl->conn, 8, argv, NULL, confirm_reply, cl) != RLK_OK)
        return 0;
    cl->unconfirmed = l;
    cl->confirm_sent = now;
    l->fence = cl->handed_fence;
    l->holds = 1;
    set_validity(l, since, claim);
    return 1;
}

/* Renews this client's watchdog locks in tick mode while it waits
 * (defined with the watchdog); ms until the next renewal is due, or -1. */
static int64_t tick_in_wait(rlk_client *cl);

/* A handle of this client on the same reentrant lock and field: an
 * acquisition is then another hold, whose fence is that handle's. */
static const rlk_lock *held_before(rlk_client *cl, const rlk_lock *l)
{
    const rlk_lock *found = NULL;
    pthread_mutex_lock(&cl->leases.mu);
    for (const rlk__lease *e = cl->leases.head; e && !found; e = e->next) {
        const rlk_lock *h = e->owner;
        if (h->kind == RLK_LOCK_REENTRANT && !e->lost && strcmp(h->name, l->name) == 0 &&
            strcmp(h->token, l->token) == 0)
            found = h;
    }
    pthread_mutex_unlock(&cl->leases.mu);
    return found;
}

/* Sets the deadline of the call under way on the client's connection. */
static void set_call_cap(rlk_client *cl, int64_t cap)
{
    cl->call_cap = cap;
    rlk__conn_cap(cl->conn, cap);
}

/*
 * After a step of an acquisition failed with status r: 1 when it may be
 * made again, on a new connection (the server restarted or closed the
 * connection, or a reply was lost) or later (the server answered LOADING
 * or BUSY), within the call's deadline; 0 to give up.  The first retry is at once, later ones after a growing pause.
 * Not for a reentrant lock this client already holds: a hold counted by
 * a lost try could not be told from the ones before.
 */
static int retry_after(rlk_client *cl, int r, int64_t cap, int once, int *retries,
                       int ambiguous)
{
    if (!(rlk__transient(r) || (r == RLK_ERR_SERVER && cl->server_busy)) || ambiguous ||
        (once && *retries))
        return 0;
    int64_t now = rlk__now_ms();
    if (cap >= 0 && now >= cap) return 0;
    if ((*retries)++) {
        int64_t p = 25LL << (*retries < 7 ? *retries : 7); /* 100 ms .. 3.2 s */
        if (cap >= 0 && cap - now < p) p = cap - now;
        rlk__pause_ms(p);
    }
    return 1;
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
    if (!name || !*name) return cl_fail(cl, RLK_ERR_INVALID, "acquire: empty lock name");
    if (o->kind != RLK_LOCK_SIMPLE && o->kind != RLK_LOCK_REENTRANT)
        return cl_fail(cl, RLK_ERR_INVALID, "acquire: unknown lock kind");
    rlk_lock *l = new_lock(cl, name, o);
    if (!l) return cl_fail(cl, RLK_ERR_NOMEM, "out of memory");
    if (l->kind == RLK_LOCK_REENTRANT) {
        snprintf(l->token, sizeof l->token, "%s:%ld", cl->client_id, (long)syscall(SYS_gettid));
    } else {
        unsigned char rnd[16];
        if (rlk__random_bytes(rnd, sizeof rnd) != 0) {
            free_lock(l);
            return cl_fail(cl, RLK_ERR_INVALID, "acquire: no random bytes from the kernel");
        }
        rlk__hex(rnd, sizeof rnd, l->token);
    }

    /* One deadline for the whole call: the wait, or without one the
     * command timeout (a try and its re-send share it). */
    int64_t start = rlk__now_ms(), cap = -1;
    int t = rlk__conn_timeout_ms(cl->conn);
    int64_t deadline = o->wait_ms < 0 ? -1 : start + o->wait_ms;
    if (o->wait_ms > 0) cap = deadline;
    else if (o->wait_ms == 0 && t >= 0) cap = start + t;
    set_call_cap(cl, cap);
    rlk__wait_plan plan;
    rlk__wait_plan_for(&plan, cl->cfg.recheck_ms, l->lease.ttl);
    int64_t slice = plan.slice, lease = plan.lease, claim = plan.claim;
    const rlk_lock *before = l->kind == RLK_LOCK_REENTRANT ? held_before(cl, l) : NULL;
    uint64_t before_fence = before ? before->fence : 0;
    rlk_conn *sub = NULL;
    int r, status = RLK_OK, mode = 0, final = 0, sub_ok = 0, retries = 0;
    cl->waiting = l;
    cl->handed = 0;
    /* Still subscribed from an earlier wait for this lock (RESP3): the
     * first try already joins the queue.  Not for a reentrant lock: its
     * first try must count a hold taken again by this thread. */
    if (o->wait_ms != 0 && l->kind == RLK_LOCK_SIMPLE && subscribed(cl, l)) {
        sub = cl->conn;
        mode = 'w';
        sub_ok = 1;
    }
    int64_t last_busy = 0;
    for (;;) {
        int64_t pttl = -1, sent = rlk__now_ms();
        if (cl->handed) {
            cl->handed = 0;
            if (confirm_later(cl, l, last_busy ? last_busy : start, claim)) break;
            r = confirm_handoff(cl, l);
            if (r == 1) break;
            if (r == 0) { /* read too late: someone else has it now */
                mode = 'w';
                continue;
            }
        } else {
            r = try_acquire(cl, l, mode, lease, claim, &pttl);
            if (r == 1) break;
        }
        if (r < 0) {
            if (!retry_after(cl, r, cap, o->wait_ms == 0, &retries, before != NULL)) {
                status = r;
                break;
            }
            /* Again in the waiting script's form, which also finds
             * whether the lost try took the lock; the subscriptions went
             * with the connection. */
            if (!mode) mode = 'q';
            sub_ok = 0;
            continue;
        }
        if (mode == 'w') last_busy = sent;
        if (cl->handed) continue; /* the message came with the reply */
        if (final) {
            status = cl_fail(cl, RLK_LOCK_BUSY, "lock '%s' is held by someone else", name);
            break;
        }
        int64_t now = rlk__now_ms();
        if (o->wait_ms == 0 || (deadline >= 0 && now >= deadline)) {
            if (mode == 'w') {
                mode = 'q';
                final = 1;
                set_call_cap(cl, now + (t >= 0 && t < 250 ? t : 250));
                continue;
            }
            status = cl_fail(cl, RLK_LOCK_BUSY, "lock '%s' is held by someone else", name);
            break;
        }
        if (!sub_ok || (sub == cl->conn && !subscribed(cl, l))) {
            /* Subscribe first, then try again and join the queue: a
             * release between the failed try and the subscriptions is
             * not missed, and a handoff reaches a listening waiter.
             * Again after a reconnect, which lost the subscriptions. */
            sub = wait_conn(cl, &status);
            if (!sub) break;
            rlk__conn_cap(sub, cap);
            r = subscribe(cl, sub, l);
            if (r != RLK_OK) {
                conn_fail(cl, sub, r, "subscribe");
                if (!retry_after(cl, r, cap, 0, &retries, before != NULL)) {
                    status = r;
                    break;
                }
                continue;
            }
            sub_ok = 1;
            mode = 'w';
            continue;
        }
        /* Until the lock is handed over, a release message, the holder's
         * TTL running out, the re-check (for holders that do not publish,
         * and to keep the place in the queue), or a renewal of this
         * client's other locks. */
        int64_t wait = slice, due = tick_in_wait(cl);
        if (cl->handed) continue;
        if (pttl >= 0 && pttl + 1 < wait) wait = pttl + 1;
        if (due >= 0 && due < wait) wait = due;
        now = rlk__now_ms();
        if (deadline >= 0 && deadline - now < wait) wait = deadline - now > 0 ? deadline - now : 0;
        r = rlk_conn_wait_push(sub, (int)wait);
        if (cl->handed) continue;
        if (r < 0) {
            conn_fail(cl, sub, r, "waiting for the lock");
            if (!retry_after(cl, r, cap, 0, &retries, before != NULL)) {
                status = r;
                break;
            }
            sub_ok = 0;
        }
        now = rlk__now_ms();
        if (deadline >= 0 && now >= deadline && mode == 'w') {
            /* The wait is over: one last try that also leaves the
             * queue, with a little time of its own. */
            mode = 'q';
            final = 1;
            set_call_cap(cl, now + (t >= 0 && t < 250 ? t : 250));
        }
    }
    if (status != RLK_OK && status != RLK_LOCK_BUSY && mode == 'w' &&
        rlk_conn_is_connected(cl->conn)) {
        /* The wait failed (its connection, or a server error) while in
         * line: leave the line, so that no release hands the lock to a
         * waiter that has gone; that last try may find the lock handed
         * over already, and then it is ours after all. */
        char err[sizeof cl->err];
        int64_t pttl;
        memcpy(err, cl->err, sizeof err);
        set_call_cap(cl, rlk__now_ms() + (t >= 0 && t < 250 ? t : 250));
        if (try_acquire(cl, l, 'q', lease, claim, &pttl) == 1) status = RLK_OK;
        else memcpy(cl->err, err, sizeof err);
    }
    cl->waiting = NULL;
    set_call_cap(cl, -1);
    /* RESP2: the waiting connection is simply closed.  RESP3: the
     * subscriptions stay for the next wait (see subscribe). */
    if (cl->sub) {
        rlk_conn_free(cl->sub);
        cl->sub = NULL;
    }
    if (status != RLK_OK) {
        free_lock(l);
        return status;
    }
    /* Another hold of a lock this client holds keeps that hold's fence
     * (the script gives the clock's time now). */
    if (before_fence && l->holds > 1) l->fence = before_fence;
    rlk__lease_add(&cl->leases, &l->lease);
    if (l->lease.watchdog) wake_watchdog(cl);
    *out = l;
    return RLK_OK;
}

/* ------------------------------------------------------------------ */
/* Release, extend                                                      */

/* keys: as make_keys wrote them, slots of cap bytes.  valid_until: the
 * lock's validity (monotonic ms; -1 not known), by which a re-sent
 * release learns whether a lock gone means that its first attempt
 * released it (see src/lua/release.lua). */
static int release_keys(rlk_client *cl, rlk_lock_kind kind, const char *keys, size_t cap,
                        const char *token, int64_t valid_until, int64_t *result)
{
    char id[33];
    const char *name = keys;
    int reentrant = kind == RLK_LOCK_REENTRANT;
    if (reentrant) {
        unsigned char rnd[16];
        if (rlk__random_bytes(rnd, sizeof rnd) != 0)
            return cl_fail(cl, RLK_ERR_INVALID, "release: no random bytes from the kernel");
        rlk__hex(rnd, sizeof rnd, id);
    }
    /* A reentrant release's tombstone, keyed by this release's id: what
     * a re-sent release learns the first one did.  A re-send comes within
     * one command timeout of the first attempt (see run): the tombstone
     * lives twice that, at least a second.  A simple lock needs none (see
     * src/lua/release.lua). */
    char *tomb = NULL, life[24];
    if (reentrant) {
        const char *prefix = keys + RLK__K_TOMB * cap;
        size_t pl = strlen(prefix);
        tomb = rlk__malloc(pl + sizeof id + 1);
        if (!tomb) return cl_fail(cl, RLK_ERR_NOMEM, "out of memory");
        memcpy(tomb, prefix, pl);
        tomb[pl] = ':';
        memcpy(tomb + pl + 1, id, sizeof id);
    }
    int t = rlk__conn_timeout_ms(cl->conn);
    snprintf(life, sizeof life, "%d", t < 0 ? 60000 : t < 500 ? 1000 : 2 * t);
    const char *argv[8]; /* and a re-send's flag */
    int n = 0;
    argv[n++] = name;
    argv[n++] = keys + RLK__K_QUEUE * cap;
    argv[n++] = keys + RLK__K_WAITERS * cap;
    if (reentrant) argv[n++] = tomb;
    int nkeys = n;
    argv[n++] = token;
    if (reentrant) {
        argv[n++] = "0";
        argv[n++] = life;
    }
    argv[n] = "1"; /* a simple lock's re-send, within its validity */
    rlk_resp_value *v;
    struct resend rs = {!reentrant, valid_until};
    int r = run(cl, cl->conn, S_RELEASE, nkeys, n, argv, NULL, &rs, &v, "release");
    rlk__free(tomb);
    if (r != RLK_OK) return r;
    if (v->type != RLK_RESP_INTEGER)
        return cl_fail(cl, RLK_ERR_PROTO, "release: unexpected reply from the server");
    *result = v->integer;
    if (v->integer == 0)
        return cl_fail(cl, RLK_LOCK_NOT_HELD, "release: lock '%s' was not held (expired)", name);
    if (v->integer < 0)
        return cl_fail(cl, RLK_LOCK_NOT_OWNER, "release: lock '%s' is held by someone else", name);
    return RLK_OK;
}

int rlk_lock_release(rlk_lock *l)
{
    rlk_client *cl = l->cl;
    int64_t res = 0;
    /* No renewal of a lock being released: it would find the key gone
     * and report a loss that is none. */
    pthread_mutex_lock(&cl->leases.mu);
    l->lease.watchdog = 0;
    pthread_mutex_unlock(&cl->leases.mu);
    int r = release_keys(cl, l->kind, l->name, rlk__key_cap(l->name), l->token,
                         __atomic_load_n(&l->lease.valid_until, __ATOMIC_RELAXED), &res);
    drop_lock(cl, l);
    return r;
}

void rlk_lock_forget(rlk_lock *l)
{
    /* A handoff's confirmation still unread: the lock is held for its
     * TTL only once the server has run it. */
    if (l->cl->unconfirmed == l) settle_confirm(l->cl);
    drop_lock(l->cl, l);
}

static int extend_keys(rlk_client *cl, rlk_lock_kind kind, const char *name, const char *token,
                       int64_t ms, int how, int64_t *ttl_after)
{
    if (ms < 1 || (how != RLK_EXTEND_ADD && how != RLK_EXTEND_SET))
        return cl_fail(cl, RLK_ERR_INVALID, "extend: bad duration or mode");
    char mss[24];
    snprintf(mss, sizeof mss, "%lld", (long long)ms);
    const char *argv[5] = {name, token, mss, how == RLK_EXTEND_ADD ? "add" : "set",
                           kind == RLK_LOCK_REENTRANT ? "r" : "s"};
    rlk_resp_value *v;
    int r = run(cl, cl->conn, S_EXTEND, 1, 5, argv, NULL, how == RLK_EXTEND_SET ? &RESEND : NULL,
                &v, "extend");
    if (r != RLK_OK) return r;
    if (v->type != RLK_RESP_INTEGER)
        return cl_fail(cl, RLK_ERR_PROTO, "extend: unexpected reply from the server");
    if (v->integer == -1)
        return cl_fail(cl, RLK_LOCK_NOT_HELD, "extend: lock '%s' is not held (expired)", name);
    if (v->integer < 0)
        return cl_fail(cl, RLK_LOCK_NOT_OWNER, "extend: lock '%s' is held by someone else", name);
    if (ttl_after) *ttl_after = v->integer;
    return RLK_OK;
}

/* Marks a lock lost (with the registry's mutex held) and queues its
 * on_lost call. */
static void mark_lost(rlk_lock *l) { rlk__lease_mark_lost(&l->cl->leases, &l->lease); }

/* The on_lost calls due (see rlk__leases_notify_lost). */
static void notify_lost(rlk_client *cl, int locked)
{
    rlk__leases_notify_lost(&cl->leases, locked);
}

int rlk_lock_extend(rlk_lock *l, int64_t ms, int how)
{
    rlk_client *cl = l->cl;
    if (rlk_lock_is_lost(l))
        return cl_fail(cl, RLK_LOCK_LOST, "extend: lock '%s' was lost", l->name);
    int64_t start = rlk__now_ms(), after = 0;
    int r = extend_keys(cl, l->kind, l->name, l->token, ms, how, &after);
    pthread_mutex_lock(&cl->leases.mu);
    if (r == RLK_OK) {
        /* A set TTL becomes the lock's TTL; an added time is a one-off
         * and renewals go on with the TTL the lock had. */
        if (how == RLK_EXTEND_SET) l->lease.ttl = ms;
        set_validity(l, start, after);
    } else if (r == RLK_LOCK_NOT_HELD || r == RLK_LOCK_NOT_OWNER) {
        mark_lost(l);
    }
    pthread_mutex_unlock(&cl->leases.mu);
    notify_lost(cl, 0);
    /* A shorter TTL makes the renewal due sooner. */
    if (r == RLK_OK && l->lease.watchdog) wake_watchdog(cl);
    return r;
}

int rlk_release_token(rlk_client *cl, const char *name, const char *token)
{
    size_t cap = rlk__key_cap(name);
    char *keys = rlk__malloc(RLK__NKEYS * cap);
    if (!keys) return cl_fail(cl, RLK_ERR_NOMEM, "out of memory");
    rlk__make_keys(name, keys, cap);
    int64_t res;
    int r = release_keys(cl, RLK_LOCK_SIMPLE, keys, cap, token, -1, &res);
    rlk__free(keys);
    return r;
}

int rlk_extend_token(rlk_client *cl, const char *name, const char *token, int64_t ms, int how,
                     int64_t *ttl_ms_after)
{
    return extend_keys(cl, RLK_LOCK_SIMPLE, name, token, ms, how, ttl_ms_after);
}

int rlk_lock_get_status(rlk_client *cl, const char *name, rlk_lock_status *st)
{
    size_t cap = rlk__key_cap(name);
    char *keys = rlk__malloc(RLK__NKEYS * cap);
    if (!keys) return cl_fail(cl, RLK_ERR_NOMEM, "out of memory");
    rlk__make_keys(name, keys, cap);
    const char *argv[3] = {name, keys + RLK__K_QUEUE * cap, keys + RLK__K_WAITERS * cap};
    rlk_resp_value *v;
    int r = run(cl, cl->conn, S_STATUS, 3, 3, argv, NULL, &RESEND, &v, "status");
    rlk__free(keys);
    if (r != RLK_OK) return r;
    int64_t held, ttl, holds, w;
    const rlk_resp_value *t = rlk_resp_value_at(v, 1);
    if (v->type != RLK_RESP_ARRAY || rlk__int_at(v, 0, &held) || rlk__int_at(v, 2, &ttl) ||
        rlk__int_at(v, 3, &holds) || rlk__int_at(v, 4, &w) || !t)
        return cl_fail(cl, RLK_ERR_PROTO, "status: unexpected reply from the server");
    memset(st, 0, sizeof *st);
    st->held = held != 0;
    st->kind = t->len == 4 && memcmp(t->str, "hash", 4) == 0 ? RLK_LOCK_REENTRANT : RLK_LOCK_SIMPLE;
    st->ttl_ms = held ? ttl : 0;
    st->holds = holds;
    st->waiters = w;
    return RLK_OK;
}

/* ------------------------------------------------------------------ */
/* Accessors                                                            */

int64_t rlk_lock_remaining_ms(const rlk_lock *l)
{
    if (__atomic_load_n(&l->lease.lost, __ATOMIC_RELAXED)) return 0;
    int64_t left = __atomic_load_n(&l->lease.valid_until, __ATOMIC_RELAXED) - rlk__now_ms();
    return left > 0 ? left : 0;
}

int rlk_lock_is_lost(const rlk_lock *l)
{
    return __atomic_load_n(&l->lease.lost, __ATOMIC_RELAXED);
}
uint64_t rlk_lock_fence(const rlk_lock *l) { return l->fence; }
const char *rlk_lock_token(const rlk_lock *l) { return l->token; }
const char *rlk_lock_name(const rlk_lock *l) { return l->name; }
int64_t rlk_lock_ttl_ms(const rlk_lock *l) { return l->lease.ttl; }
int64_t rlk_lock_holds(const rlk_lock *l) { return l->holds; }

/* ------------------------------------------------------------------ */
/* Watchdog                                                             */

/*
 * Renews the due locks on connection c (all of them after a reconnect),
 * in one round trip: the registry plans the round and applies its
 * replies; the client's mutex is held only for those two, never across
 * the network.  The whole round (connect included) ends before the
 * first lock is due to be reported lost.  Failures are recorded on the
 * client only when c is the client's own connection: the watchdog
 * thread must not write the message the client's thread reads.
 */
static int renew_round(rlk_client *cl, rlk_conn *c)
{
    rlk__round rd;
    int r = rlk__round_plan(&cl->leases, rlk__now_ms(), 0, &rd);
    if (r <= 0) return r;
    rlk_resp_value **replies = rd.replies;
    int64_t end = rd.end;
    if (c == cl->conn && cl->call_cap >= 0 && cl->call_cap < end) end = cl->call_cap;
    rlk__conn_cap(c, end);
    r = rlk_conn_is_connected(c) ? RLK_OK : rlk_conn_connect(c);
    for (int again = 1, per_slot = rd.per_slot; r == RLK_OK; again = 0) {
        size_t nreq = rlk__round_requests(&rd, &cl->scripts[S_RENEW], per_slot);
        r = rlk_conn_pipeline(c, nreq, rd.reqs, replies);
        /* A cluster-enabled server takes one slot per script call. */
        if (r != RLK_OK || per_slot || !again || !rlk__round_crossslot(replies[0])) break;
        per_slot = 1;
    }
    rlk__conn_cap(c, c == cl->conn ? cl->call_cap : -1);
    if (r != RLK_OK && c == cl->conn) conn_fail(cl, c, r, "renew");
    if (r == RLK_OK && rlk__is_error(replies[0]) && c == cl->conn)
        cl_fail(cl, RLK_ERR_SERVER, "renew: %.*s", (int)replies[0]->len, replies[0]->str);
    rlk__round_finish(&cl->leases, &rd, r);
    return r;
}

/* A reply of tick mode's round, handed over by whichever call on conn
 * read it (v NULL: the connection closed first). */
static void round_reply(void *ctx, rlk_conn *c, const rlk_resp_value *v)
{
    rlk_client *cl = ctx;
    (void)c;
    if (!cl->tround_on) return;
    if (rlk__script_missing(v)) cl->renew_eval = 1;
    else if (rlk__is_error(v)) cl_fail(cl, RLK_ERR_SERVER, "renew: %.*s", (int)v->len, v->str);
    if (rlk__round_apply_one(&cl->leases, &cl->tround, v)) cl->tround_on = 0;
}

/*
 * Tick mode's round: the requests are sent and the replies left to
 * later calls (ticks, or any call on conn, which reads them ahead of its
 * own), so that a tick never waits for the server.  FCALL or EVALSHA
 * (the script layer's choice), or EVAL after a reply that found the
 * script or the library missing (it comes too late to load it and send
 * again: that round's locks are tried again soon).  Connecting,
 * when conn is closed, still waits (within the round's end).  RLK_OK
 * (also when nothing is due), or the status of a failed send.
 */
static int send_round(rlk_client *cl)
{
    rlk__round *rd = &cl->tround;
    int r = rlk__round_plan(&cl->leases, rlk__now_ms(), 1, rd);
    if (r <= 0) return r;
    rlk_conn *c = cl->conn;
    const rlk_script *s = &cl->scripts[S_RENEW];
    int eval = cl->renew_eval;
    rlk__conn_cap(c, rd->end);
    r = rlk_conn_is_connected(c) ? RLK_OK : rlk_conn_connect(c);
    if (r == RLK_OK) {
        size_t nreq = rlk__round_requests(rd, s, rd->per_slot);
        rlk__cmd *cmds = rlk__malloc(nreq * (sizeof *cmds + 12));
        char *digits = cmds ? (char *)(cmds + nreq) : NULL;
        r = cmds ? RLK_OK : rlk__conn_fail(c, RLK_ERR_NOMEM, "renew: out of memory");
        for (size_t q = 0; cmds && q < nreq; q++) {
            rlk__cmd *x = &cmds[q];
            rlk__script_deferred_head(c, s, rd->reqs[q].nkeys, eval, x, digits + 12 * q);
            x->argc = rd->reqs[q].argc;
            x->argv = rd->reqs[q].argv;
            x->argvlen = rd->reqs[q].argvlen;
        }
        if (cmds) r = rlk__conn_send_deferred_cmds(c, nreq, cmds, round_reply, cl);
        rlk__free(cmds);
    }
    rlk__conn_cap(c, cl->call_cap);
    if (r != RLK_OK) {
        conn_fail(cl, c, r, "renew");
        rlk__round_finish(&cl->leases, rd, r);
        return r;
    }
    cl->tround_on = 1;
    if (eval) cl->renew_eval = 0;
    return RLK_OK;
}

/* Reads the replies of tick mode's round still owed, waiting for them
 * (within the round's end): before a blocking round on conn, or the
 * watchdog thread's. */
static void settle_round(rlk_client *cl)
{
    if (!cl->tround_on) return;
    int64_t end = cl->tround.end;
    if (cl->call_cap >= 0 && cl->call_cap < end) end = cl->call_cap;
    rlk__conn_cap(cl->conn, end);
    rlk__conn_drain(cl->conn); /* a failure closed conn: the round is over */
    rlk__conn_cap(cl->conn, cl->call_cap);
}

int rlk_client_tick(rlk_client *cl, int64_t *next_ms)
{
    /* The caller polls the fd between ticks: what made it readable
     * (replies of a round or a confirmation, push messages) is consumed
     * here without waiting, or its loop would spin.  The server closing
     * the connection (a restart, CLIENT KILL) may have taken the keys
     * with it: every lock is checked now, not when next due. */
    int r = RLK_OK, owed = cl->tround_on, pr = rlk__conn_poll_replies(cl->conn);
    if (pr != RLK_OK) {
        __atomic_store_n(&cl->leases.recheck_all, 1, __ATOMIC_RELAXED);
        /* The round's replies went with the connection: it failed. */
        if (owed) r = conn_fail(cl, cl->conn, pr, "renew");
    }
    if (cl->tround_on && rlk__now_ms() >= cl->tround.end) {
        /* No reply by the time the first of its locks is reported lost:
         * the connection is given up, as a blocking round's timeout
         * would; the locks still valid are tried on a new one. */
        r = cl_fail(cl, RLK_ERR_TIMEOUT, "renew: no reply from the server in time");
        rlk_conn_close(cl->conn); /* the round ends with it */
    }
    if (!cl->tround_on) {
        int rr = send_round(cl);
        if (r == RLK_OK) r = rr;
    } else {
        pthread_mutex_lock(&cl->leases.mu);
        rlk__leases_expire(&cl->leases, rlk__now_ms());
        pthread_mutex_unlock(&cl->leases.mu);
    }
    pthread_mutex_lock(&cl->leases.mu);
    if (next_ms) *next_ms = rlk__leases_next_due(&cl->leases, rlk__now_ms());
    pthread_mutex_unlock(&cl->leases.mu);
    notify_lost(cl, 0);
    return r;
}

static int64_t tick_in_wait(rlk_client *cl)
{
    if (cl->thread_running || !cl->leases.head) return -1;
    settle_round(cl);
    renew_round(cl, cl->conn); /* a failure: validity decides, the next try comes soon */
    pthread_mutex_lock(&cl->leases.mu);
    int64_t next = rlk__leases_next_due(&cl->leases, rlk__now_ms());
    pthread_mutex_unlock(&cl->leases.mu);
    notify_lost(cl, 0);
    return next;
}

static void *watchdog_main(void *arg)
{
    rlk_client *cl = arg;
    while (!__atomic_load_n(&cl->stopping, __ATOMIC_ACQUIRE)) {
        renew_round(cl, cl->wd_conn);
        pthread_mutex_lock(&cl->leases.mu);
        notify_lost(cl, 1);
        int64_t next = rlk__leases_next_due(&cl->leases, rlk__now_ms());
        pthread_mutex_unlock(&cl->leases.mu);
        /* Wake at the next due time, or at once when a lock is added or
         * extended, or when told to stop. */
        int64_t wait = next < 0 || next > cl->cfg.recheck_ms ? cl->cfg.recheck_ms : next;
        struct pollfd p = {cl->stop_pipe[0], POLLIN, 0};
        if (poll(&p, 1, (int)wait) > 0) {
            char drain[64];
            while (read(cl->stop_pipe[0], drain, sizeof drain) > 0) {
            }
        }
    }
    return NULL;
}

int rlk_client_watchdog_start(rlk_client *cl)
{
    if (cl->thread_running) return RLK_OK;
    settle_round(cl);
    cl->wd_conn = new_conn(cl, 0);
    if (!cl->wd_conn) return cl_fail(cl, RLK_ERR_NOMEM, "out of memory");
    int r = rlk_conn_connect(cl->wd_conn);
    if (r != RLK_OK) {
        conn_fail(cl, cl->wd_conn, r, "watchdog connect");
        rlk_conn_free(cl->wd_conn);
        cl->wd_conn = NULL;
        return r;
    }
    __atomic_store_n(&cl->stopping, 0, __ATOMIC_RELEASE);
    if (pipe2(cl->stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        rlk_conn_free(cl->wd_conn);
        cl->wd_conn = NULL;
        return cl_fail(cl, RLK_ERR_IO, "watchdog: pipe: %s", strerror(errno));
    }
    /* Set before the thread starts: it reads it (wake_watchdog, from
     * on_connect of its connection). */
    cl->thread_running = 1;
    if (pthread_create(&cl->thread, NULL, watchdog_main, cl) != 0) {
        cl->thread_running = 0;
        close(cl->stop_pipe[0]);
        close(cl->stop_pipe[1]);
        cl->stop_pipe[0] = cl->stop_pipe[1] = -1;
        rlk_conn_free(cl->wd_conn);
        cl->wd_conn = NULL;
        return cl_fail(cl, RLK_ERR_IO, "watchdog: cannot start a thread");
    }
    return RLK_OK;
}

void rlk_client_watchdog_stop(rlk_client *cl)
{
    if (!cl->thread_running) return;
    __atomic_store_n(&cl->stopping, 1, __ATOMIC_RELEASE);
    wake_watchdog(cl);
    pthread_join(cl->thread, NULL);
    cl->thread_running = 0;
    close(cl->stop_pipe[0]);
    close(cl->stop_pipe[1]);
    cl->stop_pipe[0] = cl->stop_pipe[1] = -1;
    rlk_conn_free(cl->wd_conn);
    cl->wd_conn = NULL;
}
