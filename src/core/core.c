/* SPDX-License-Identifier: BSD-3-Clause */
/* The request core (see core.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "core.h"
#include "internal.h"
#include "reply.h"
#include "scriptcall.h"
#include "serverinfo.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_MAX_INPUT (1u << 20)

/* The handshake's steps (rlk__req.arg of the core's own requests). */
enum { HS_HELLO, HS_AUTH, HS_SETNAME, HS_SELECT, HS_ROLE, HS_NOEVICT, HS_LOAD };

/* The arena's room inside the core (see arena0). */
#define CORE_ARENA0 1024

struct rlk__core {
    rlk__core_config cfg;
    char *strings;            /* cfg's strings, copied */
    int64_t now;
    /* The server may hold the connection's replies until then (a WAIT
     * queued: rlk__core_hold): later requests' deadlines count from it. */
    int64_t hold_until;
    int connected, ready, resp3, broken;
    /* Script calls go as FCALL (HELLO told a server with FUNCTIONs and a
     * library is known, and none was refused since); a FUNCTION LOAD is
     * in flight; HELLO told a server that reads script flags. */
    int fcall, loading, script_flags;
    /* The native commands HELLO told (RLK_CAP_SET_IFEQ, RLK_CAP_DELIFEQ,
     * RLK_CAP_DELEX_IFEQ), less those refused since (rlk__core_drop_caps). */
    unsigned caps;
    int hs_left;              /* handshake replies still owed */
    int64_t subs;             /* subscriptions, as last confirmed */
    rlk_buf in, out;
    size_t out_off;           /* out's bytes sent already */
    uint64_t consumed;        /* output bytes sent on this connection */
    rlk_resp_arena arena;
    rlk_resp_reader reader;
    rlk__req *q;              /* the queue: q[qhead..qtail) */
    size_t qhead, qtail, qcap;
    rlk_conn_info info;
    char err[256];
    /* The arena's first room: the small replies of the everyday
     * commands are built here, with no heap block; a larger reply (a
     * handshake's, a big pipeline's) takes one, which goes again once
     * nothing is owed, so that an idle connection keeps none. */
    _Alignas(max_align_t) unsigned char arena0[CORE_ARENA0];
};

static int vfail(rlk__core *c, int status, const char *fmt, va_list ap)
{
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    return status;
}

int rlk__core_fail(rlk__core *c, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    c->broken = vfail(c, status, fmt, ap);
    va_end(ap);
    return status;
}

/* A failure of one call, which leaves the core as it was. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int say(rlk__core *c, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(c, status, fmt, ap);
    va_end(ap);
    return status;
}

int rlk__core_connected_now(const rlk__core *c) { return c->connected; }
int rlk__core_ready(const rlk__core *c) { return c->ready; }
int rlk__core_resp3(const rlk__core *c) { return c->resp3; }
unsigned rlk__core_caps(const rlk__core *c) { return c->caps; }
void rlk__core_drop_caps(rlk__core *c, unsigned caps) { c->caps &= ~caps; }
int rlk__core_broken(const rlk__core *c) { return c->broken; }
const char *rlk__core_errmsg(const rlk__core *c) { return c->err; }
const rlk_conn_info *rlk__core_info(const rlk__core *c) { return &c->info; }
int rlk__core_cluster(const rlk__core *c)
{
    return c->info.mode[0] == 'c' && strcmp(c->info.mode, "cluster") == 0;
}
size_t rlk__core_owed(const rlk__core *c) { return c->qtail - c->qhead; }
size_t rlk__core_buffered(const rlk__core *c) { return c->in.len; }
int64_t rlk__core_now(const rlk__core *c) { return c->now; }

int64_t rlk__core_timeout_ms(const rlk__core *c)
{
    int t = c->cfg.command_timeout_ms;
    return t == 0 ? RLK__DEFAULT_TIMEOUT_MS : t < 0 ? -1 : t;
}

int64_t rlk__core_reply_deadline(const rlk__core *c)
{
    int64_t t = rlk__core_timeout_ms(c);
    return t < 0 ? -1 : c->now + t;
}

static void set_now(rlk__core *c, int64_t now)
{
    if (now > c->now) c->now = now;
}

void rlk__core_clock(rlk__core *c, int64_t now) { set_now(c, now); }

/* Around a call that may call the owner back. */
static void enter(rlk__core *c, int64_t now)
{
    set_now(c, now);
    if (c->cfg.hooks.enter) c->cfg.hooks.enter(c->cfg.hooks.ctx, c->now);
}

static int leave(rlk__core *c, int r)
{
    return c->cfg.hooks.leave ? c->cfg.hooks.leave(c->cfg.hooks.ctx, r) : r;
}
void rlk__core_set_hooks(rlk__core *c, const rlk__core_hooks *hooks) { c->cfg.hooks = *hooks; }

static int errlen(const rlk_resp_value *v) { return (int)(v->len > 200 ? 200 : v->len); }

int rlk__error_starts(const rlk_resp_value *v, const char *prefix)
{
    size_t n = strlen(prefix);
    return rlk__is_error(v) && v->len >= n && strncasecmp(v->str, prefix, n) == 0;
}

/* ------------------------------------------------------------------ */
/* Sending                                                              */

/* A command put or not: out of memory fails the core (a request half
 * built cannot be told from one never built); a command that cannot be
 * encoded is the caller's mistake, and leaves the core as it was. */
static int put_status(rlk__core *c, int r)
{
    if (r == RLK_OK) return r;
    if (r == RLK_ERR_NOMEM) return rlk__core_fail(c, r, "out of memory");
    return say(c, r, "a command that cannot be sent: %s", rlk_strerror(r));
}

int rlk__core_put(rlk__core *c, int argc, const char *const *argv, const size_t *lens)
{
    return put_status(c, rlk_resp_append_command(&c->out, argc, argv, lens));
}

int rlk__core_put_parts(rlk__core *c, int nhead, const char *const *head, const size_t *headlen,
                        int argc, const char *const *argv, const size_t *lens)
{
    if (nhead <= 0) return rlk__core_put(c, argc, argv, lens);
    if (argc >= 0 && nhead + argc <= 16 && head && (argv || !argc)) {
        /* One command of both parts, each length read once. */
        const char *all[16];
        size_t len[16];
        for (int i = 0; i < nhead + argc; i++) {
            const char *a = i < nhead ? head[i] : argv[i - nhead];
            const size_t *l = i < nhead ? headlen : lens;
            int j = i < nhead ? i : i - nhead;
            if (!a && !(l && !l[j])) return put_status(c, RLK_ERR_INVALID);
            all[i] = a;
            len[i] = l ? l[j] : strlen(a);
        }
        return put_status(c, rlk_resp_append_command(&c->out, nhead + argc, all, len));
    }
    /* Both parts checked first, and room for all of it at once (a few
     * bytes more: two array headers), as rlk_resp_append_command does. */
    size_t need = rlk_resp_command_size(nhead, head, headlen), more = 0;
    if (argc > 0 && !(more = rlk_resp_command_size(argc, argv, lens))) need = 0;
    if (!need || argc < 0) return put_status(c, RLK_ERR_INVALID);
    size_t was = c->out.len;
    int r = rlk_buf_reserve(&c->out, need + more);
    if (r == RLK_OK) r = rlk_resp_put_header(&c->out, RLK_RESP_ARRAY, (int64_t)nhead + argc);
    for (int i = 0; r == RLK_OK && i < nhead; i++)
        r = rlk_resp_put_blob(&c->out, RLK_RESP_BULK, NULL, head[i],
                              headlen ? headlen[i] : strlen(head[i]));
    for (int i = 0; r == RLK_OK && i < argc; i++)
        r = rlk_resp_put_blob(&c->out, RLK_RESP_BULK, NULL, argv[i],
                              lens ? lens[i] : strlen(argv[i]));
    if (r != RLK_OK) c->out.len = was;
    return put_status(c, r);
}

int rlk__core_put_script(rlk__core *c, rlk__req *q, const rlk_script *s, int nkeys, int argc,
                         const char *const *argv, const size_t *lens)
{
    if (argc < 0) return rlk__core_fail(c, RLK_ERR_INVALID, "bad script call");
    const char *head[3];
    size_t headlen[3];
    char nk[12];
    int how = q->eval ? RLK__CALL_EVAL : c->fcall ? RLK__CALL_FCALL : RLK__CALL_EVALSHA;
    if (c->script_flags) how |= RLK__CALL_FLAGS;
    how = rlk__script_head(c->cfg.library, s, how, nkeys, head, headlen, nk);
    int r = rlk__core_put_parts(c, 3, head, headlen, argc, argv, lens);
    q->script = 1;
    q->fcall = how == RLK__CALL_FCALL;
    return r;
}

/* Room for one more request at the queue's tail. */
static int room(rlk__core *c)
{
    if (c->qtail < c->qcap) return RLK_OK;
    if (c->qhead > 0) {
        memmove(c->q, c->q + c->qhead, (c->qtail - c->qhead) * sizeof *c->q);
        c->qtail -= c->qhead;
        c->qhead = 0;
        return RLK_OK;
    }
    /* A handshake, or a try of three commands, fits in 4. */
    size_t cap = c->qcap ? 2 * c->qcap : 4;
    rlk__req *q = rlk__realloc(c->q, cap * sizeof *q);
    if (!q) return RLK_ERR_NOMEM;
    c->q = q;
    c->qcap = cap;
    return RLK_OK;
}

/* Queues t (its fields but out_end set) and builds its command: all or
 * nothing. */
static int enqueue(rlk__core *c, const rlk__req *t)
{
    if (room(c) != RLK_OK) return rlk__core_fail(c, RLK_ERR_NOMEM, "out of memory");
    size_t was = c->out.len;
    rlk__req *q = &c->q[c->qtail];
    *q = *t;
    q->script = q->fcall = 0;
    if (q->deadline >= 0 && c->hold_until > c->now) q->deadline += c->hold_until - c->now;
    int r = q->ops->build(c, q);
    if (r != RLK_OK) {
        c->out.len = was;
        return r;
    }
    q->out_end = c->consumed + (c->out.len - c->out_off);
    c->qtail++;
    return RLK_OK;
}

/* A request whose reply nobody reads. */
static const rlk__req_ops null_ops = {NULL, NULL, NULL, RLK__T_ANY};

static int64_t deadline_of(const rlk__core *c, int64_t deadline)
{
    return deadline == RLK__DL_DEFAULT ? rlk__core_reply_deadline(c) : deadline;
}

int rlk__core_submit(rlk__core *c, const rlk__req_ops *ops, void *ctx, int64_t arg,
                     int64_t deadline, int flags)
{
    if (!ops || !ops->build) return say(c, RLK_ERR_INVALID, "a request without a command");
    if (!c->ready) return say(c, RLK_ERR_CLOSED, "not connected");
    rlk__req t;
    memset(&t, 0, sizeof t);
    t.ops = ops;
    t.ctx = ctx;
    t.arg = arg;
    t.eval = (flags & RLK__REQ_EVAL) != 0;
    t.deadline = deadline_of(c, deadline);
    return enqueue(c, &t);
}


typedef struct sub_build {
    const rlk__req_ops *ops; /* the owner's */
    const char *verb, *ch;
    size_t len;
} sub_build;

static int build_sub(rlk__core *c, rlk__req *q)
{
    const sub_build *b = q->ctx;
    const char *argv[2] = {b->verb, b->ch};
    size_t lens[2] = {strlen(b->verb), b->len};
    return rlk__core_put(c, 2, argv, lens);
}

int rlk__core_subscribe(rlk__core *c, int on, int sharded, const char *ch,
                        const rlk__req_ops *ops, void *ctx, int64_t arg)
{
    return rlk__core_subscribe_n(c, on, sharded, ch, strlen(ch), ops, ctx, arg);
}

int rlk__core_subscribe_n(rlk__core *c, int on, int sharded, const char *ch, size_t len,
                          const rlk__req_ops *ops, void *ctx, int64_t arg)
{
    if (!c->ready) return say(c, RLK_ERR_CLOSED, "not connected");
    /* The words are written at once: build runs inside this call only
     * (a confirmation is never sent again). */
    static const rlk__req_ops sub_ops = {build_sub, NULL, NULL, 0};
    sub_build b = {ops, on ? (sharded ? "SSUBSCRIBE" : "SUBSCRIBE")
                           : (sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE"),
                   ch, len};
    rlk__req t;
    memset(&t, 0, sizeof t);
    t.ops = &sub_ops;
    t.ctx = &b;
    t.deadline = rlk__core_reply_deadline(c);
    t.sub = on ? RLK__SUB_ON : RLK__SUB_OFF;
    t.chan = rlk__fnv1a(ch, len) ^ (uint64_t)(sharded != 0);
    int r = enqueue(c, &t);
    if (r == RLK_OK) {
        rlk__req *q = &c->q[c->qtail - 1];
        q->ops = ops ? ops : &null_ops;
        q->ctx = ctx;
        q->arg = arg;
    }
    return r;
}

int64_t rlk__core_subscribed(const rlk__core *c) { return c->subs; }

/* ------------------------------------------------------------------ */
/* The handshake                                                        */

static int build_hs(rlk__core *c, rlk__req *q);
static void on_hs(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static const rlk__req_ops hs_ops = {build_hs, on_hs, NULL, RLK__T_ANY};

/* The handshake's words, by step (the core's strings live as long as
 * it). */
static int build_hs(rlk__core *c, rlk__req *q)
{
    const char *argv[7];
    int argc = 0;
    switch ((int)q->arg) {
    case HS_HELLO:
        argv[argc++] = "HELLO";
        argv[argc++] = "3";
        if (c->cfg.password) {
            argv[argc++] = "AUTH";
            argv[argc++] = c->cfg.username ? c->cfg.username : "default";
            argv[argc++] = c->cfg.password;
        }
        if (c->cfg.client_name) {
            argv[argc++] = "SETNAME";
            argv[argc++] = c->cfg.client_name;
        }
        break;
    case HS_AUTH:
        /* Without a user name, the one-argument form: a server without
         * HELLO may predate ACL users (Redis 5). */
        argv[argc++] = "AUTH";
        if (c->cfg.username) argv[argc++] = c->cfg.username;
        argv[argc++] = c->cfg.password;
        break;
    case HS_SETNAME:
        argv[argc++] = "CLIENT";
        argv[argc++] = "SETNAME";
        argv[argc++] = c->cfg.client_name;
        break;
    case HS_ROLE:
        argv[argc++] = "ROLE";
        break;
    case HS_NOEVICT:
        argv[argc++] = "CLIENT";
        argv[argc++] = "NO-EVICT";
        argv[argc++] = "on";
        break;
    case HS_SELECT: {
        char db[12];
        rlk__utoa(db, (unsigned)c->cfg.db);
        argv[argc++] = "SELECT";
        argv[argc++] = db;
        return rlk__core_put(c, argc, argv, NULL);
    }
    default: { /* HS_LOAD */
        size_t len = 0;
        char *text = rlk__script_library_text(c->cfg.library, &len);
        if (!text) return rlk__core_fail(c, RLK_ERR_NOMEM, "FUNCTION LOAD: out of memory");
        const char *av[3] = {"FUNCTION", "LOAD", text};
        size_t al[3] = {8, 4, len};
        int r = rlk__core_put(c, 3, av, al);
        rlk__free(text);
        return r;
    }
    }
    return rlk__core_put(c, argc, argv, NULL);
}

static int send_hs(rlk__core *c, int step)
{
    rlk__req t;
    memset(&t, 0, sizeof t);
    t.ops = &hs_ops;
    t.arg = step;
    t.hs = 1;
    t.deadline = rlk__core_reply_deadline(c);
    int r = enqueue(c, &t);
    if (r == RLK_OK && step != HS_LOAD && step != HS_NOEVICT) c->hs_left++;
    return r;
}

static int send_auth_select(rlk__core *c, int auth, int setname)
{
    int r = RLK_OK;
    if (auth && c->cfg.password) r = send_hs(c, HS_AUTH);
    if (r == RLK_OK && setname && c->cfg.client_name) r = send_hs(c, HS_SETNAME);
    if (r == RLK_OK && c->cfg.db > 0) r = send_hs(c, HS_SELECT);
    if (r == RLK_OK && c->cfg.require_primary) r = send_hs(c, HS_ROLE);
    return r;
}

static void hs_step(rlk__core *c)
{
    if (--c->hs_left > 0) return;
    c->ready = 1;
    c->info.protocol = c->resp3 ? 3 : 2;
    if (c->cfg.hooks.ready) c->cfg.hooks.ready(c->cfg.hooks.ctx, c);
}

/* Errors that say the credentials were refused. */
static int auth_refusal(const rlk_resp_value *v)
{
    static const char *const words[] = {"WRONGPASS", "NOAUTH", "NOPERM", "ERR invalid password",
                                        "ERR invalid username", "ERR AUTH",
                                        "ERR Client sent AUTH"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (rlk__error_starts(v, words[i])) return 1;
    return 0;
}

/* HELLO refused as a command or protocol the server does not have (not
 * as a refusal of the credentials): a server before Redis 6, or a proxy
 * without RESP3. */
static int hello_unknown(const rlk_resp_value *v)
{
    static const char *const words[] = {"ERR unknown command", "NOPROTO", "ERR unknown subcommand",
                                        "ERR unknown or unsupported", "ERR Syntax error"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (rlk__error_starts(v, words[i])) return 1;
    return 0;
}

static void on_load(rlk__core *c, const rlk_resp_value *v)
{
    /* Refused (an ACL, a server that has no FUNCTION after all):
     * EVALSHA for the rest of the connection. */
    c->loading = 0;
    if (v && !rlk__library_loaded(v) && !rlk__state_refused(v)) c->fcall = 0;
}

static void on_hs(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    int step = (int)q->arg;
    if (step == HS_LOAD) {
        on_load(c, v);
        return;
    }
    /* Done or refused (a user without it), the connection serves. */
    if (step == HS_NOEVICT) return;
    if (!v || c->broken) return;
    /* A server full of clients says so as it accepts, before it reads
     * anything: the reply of whichever request went first. */
    if (rlk__error_starts(v, "ERR max number of clients")) {
        rlk__core_fail(c, RLK_ERR_SERVER, "handshake: %.*s", errlen(v), v->str);
        return;
    }
    if (rlk__is_error(v)) {
        if (step == HS_HELLO && hello_unknown(v) && c->cfg.protocol != 3) {
            /* No RESP3 here: RESP2, with AUTH and SETNAME of their own. */
            c->resp3 = 0;
            if (send_auth_select(c, 1, 1) == RLK_OK) hs_step(c);
            return;
        }
        if (step == HS_SETNAME && !rlk__error_starts(v, "NOAUTH")) {
            /* A name is for the server's CLIENT LIST only: a server or
             * a user without CLIENT SETNAME still serves. */
            hs_step(c);
            return;
        }
        if (auth_refusal(v))
            rlk__core_fail(c, RLK_ERR_AUTH, "authentication failed: %.*s", errlen(v), v->str);
        else
            rlk__core_fail(c, RLK_ERR_SERVER, "%s refused: %.*s",
                           step == HS_HELLO ? "HELLO 3" : step == HS_AUTH ? "AUTH"
                           : step == HS_ROLE ? "ROLE" : "SELECT",
                           errlen(v), v->str);
        return;
    }
    if (step == HS_ROLE) {
        /* A server named as the primary must say it is one: a replica
         * (a primary that failed over and came back as one) is not
         * written to.  Another try asks again who the primary is. */
        const rlk_resp_value *role = rlk_resp_value_at(v, 0);
        if (!rlk__str_is(role, "master", 6)) {
            int str = role && (role->type == RLK_RESP_BULK || role->type == RLK_RESP_SIMPLE);
            rlk__core_fail(c, RLK_ERR_SERVER, "ROLE: the server is %.*s, not a primary",
                           str ? (int)(role->len > 20 ? 20 : role->len) : 1, str ? role->str : "?");
            return;
        }
    }
    if (step == HS_HELLO) {
        if (v->type != RLK_RESP_MAP && c->cfg.protocol == 3) {
            rlk__core_fail(c, RLK_ERR_PROTO, "HELLO 3 was answered in RESP2");
            return;
        }
        c->resp3 = v->type == RLK_RESP_MAP;
        rlk__hello_info(&c->info, NULL, v);
        rlk__server sv;
        rlk__server_from_hello(&sv, v);
        c->fcall = c->cfg.library && (sv.caps & RLK_CAP_FUNCTIONS) != 0;
        c->script_flags = (sv.caps & RLK_CAP_SCRIPT_FLAGS) != 0;
        c->caps = sv.caps & (RLK_CAP_SET_IFEQ | RLK_CAP_DELIFEQ | RLK_CAP_DELEX_IFEQ);
        if (send_auth_select(c, 0, 0) != RLK_OK) return;
        /* Where the server has it: a server that evicts clients under
         * maxmemory-clients pressure must not drop this connection.  Not
         * waited for (the connection is ready at HELLO's reply); its
         * reply, or refusal, comes before any request's. */
        if ((sv.caps & RLK_CAP_NO_EVICT) && send_hs(c, HS_NOEVICT) != RLK_OK) return;
    }
    hs_step(c);
}

/* ------------------------------------------------------------------ */
/* Replies                                                              */

static int kind_is(const rlk_resp_value *v, const char *word)
{
    return rlk__str_is(rlk_resp_value_at(v, 0), word, strlen(word));
}

/* The verbs of a subscription's confirmation: [verb, channel, count]. */
static int sub_kind(const rlk_resp_value *v)
{
    return kind_is(v, "subscribe") || kind_is(v, "unsubscribe") || kind_is(v, "ssubscribe") ||
           kind_is(v, "sunsubscribe");
}

int rlk__core_is_confirmation(const rlk_resp_value *v) { return sub_kind(v); }

/* What comes out of the replies' order: RESP3's pushes; under RESP2, on
 * a connection that subscribed, the arrays of messages and of
 * confirmations (such a connection takes no command but (UN)SUBSCRIBE
 * and PING, whose ["pong", ""] is neither). */
static int out_of_band(const rlk__core *c, const rlk_resp_value *v)
{
    if (v->type == RLK_RESP_PUSH) return 1;
    return !c->resp3 && c->subs > 0 && v->type == RLK_RESP_ARRAY &&
           (sub_kind(v) || kind_is(v, "message") || kind_is(v, "smessage") ||
            kind_is(v, "pmessage"));
}

/* The channel a confirmation names, as rlk__core_subscribe keeps it
 * (0: none). */
static uint64_t push_chan(const rlk_resp_value *v)
{
    const rlk_resp_value *ch = rlk_resp_value_at(v, 1);
    if (!ch || (ch->type != RLK_RESP_BULK && ch->type != RLK_RESP_SIMPLE)) return 0;
    int sharded = kind_is(v, "ssubscribe") || kind_is(v, "sunsubscribe");
    return rlk__fnv1a(ch->str, ch->len) ^ (uint64_t)sharded;
}

/* A confirmation's count: the subscriptions left. */
static void count_subs(rlk__core *c, const rlk_resp_value *v)
{
    const rlk_resp_value *n = rlk_resp_value_at(v, 2);
    if (n && n->type == RLK_RESP_INTEGER) c->subs = n->integer > 0 ? n->integer : 0;
}

static unsigned type_bit(int t)
{
    switch (t) {
    case RLK_RESP_SIMPLE: return RLK__T_SIMPLE;
    case RLK_RESP_BULK: return RLK__T_BULK;
    case RLK_RESP_INTEGER: return RLK__T_INTEGER;
    case RLK_RESP_ARRAY: return RLK__T_ARRAY;
    case RLK_RESP_NULL: return RLK__T_NULL;
    case RLK_RESP_MAP: return RLK__T_MAP;
    case RLK_RESP_VERBATIM: return RLK__T_VERBATIM;
    default: return 0x8000u;
    }
}

/* Whether v can answer q: its confirmation naming its channel for an
 * (UN)SUBSCRIBE (a push; under RESP2 an array), an error for anything,
 * else a reply of a type q expects.  Any other is a reply out of step
 * (the server's, or a proxy's), which must break the connection, never
 * be read as the answer to another request. */
static int fits(const rlk__core *c, const rlk__req *q, const rlk_resp_value *v)
{
    if (rlk__is_error(v)) return 1;
    if (q->sub) {
        int on = q->sub == RLK__SUB_ON;
        return (v->type == RLK_RESP_PUSH || (!c->resp3 && v->type == RLK_RESP_ARRAY)) &&
               (kind_is(v, on ? "subscribe" : "unsubscribe") ||
                kind_is(v, on ? "ssubscribe" : "sunsubscribe")) &&
               push_chan(v) == q->chan;
    }
    if (v->type == RLK_RESP_PUSH) return 0;
    return (q->ops->expect & type_bit(v->type)) != 0;
}

/* Whether script call q, answered v, goes again as EVAL (once): its
 * script was not cached (NOSCRIPT to EVALSHA), or FCALL did not run (its
 * library missing, loaded now for the calls after; FCALL refused to the
 * connection, EVALSHA from now; refused for a state EVAL meets only at
 * its first write). */
static int script_again(rlk__core *c, const rlk__req *q, const rlk_resp_value *v)
{
    if (!q->script || q->eval || !rlk__is_error(v)) return 0;
    if (!q->fcall) return rlk__reply_class(v) == RLK_EC_NOSCRIPT;
    int e = rlk__fcall_error(v);
    if (e == RLK__FCALL_UNUSABLE) c->fcall = 0;
    if (e == RLK__FCALL_MISSING && c->fcall && !c->loading && send_hs(c, HS_LOAD) == RLK_OK)
        c->loading = 1;
    return e != 0;
}

static int on_reply(rlk__core *c, const rlk_resp_value *v)
{
    const rlk__req *head = c->qhead < c->qtail ? &c->q[c->qhead] : NULL;
    if (out_of_band(c, v)) {
        /* One that is no confirmation is a message; so is an
         * unsubscribe the server sends by itself (a slot that moved
         * away), and where the owner says so any confirmation, when the
         * request owed is not the one it confirms. */
        int conf = sub_kind(v);
        if (!conf || (!(head && head->sub && fits(c, head, v)) &&
                      (kind_is(v, "sunsubscribe") || c->cfg.stray_confirmations))) {
            if (conf) count_subs(c, v);
            if (c->cfg.hooks.push) c->cfg.hooks.push(c->cfg.hooks.ctx, c, v);
            return RLK_OK;
        }
    }
    if (!head)
        return rlk__core_fail(c, RLK_ERR_PROTO, "a reply to no request: out of step");
    /* A server answers what it received: bytes that read as the reply
     * of a request still in the output are not its reply. */
    if (head->out_end > c->consumed)
        return rlk__core_fail(c, RLK_ERR_PROTO, "a reply to a request not sent yet: out of step");
    if (!fits(c, head, v))
        return rlk__core_fail(c, RLK_ERR_PROTO,
                              "a reply ('%c') that cannot answer its request: out of step",
                              (char)v->type);
    rlk__req q = c->q[c->qhead++];
    if (q.sub && !rlk__is_error(v)) count_subs(c, v);
    if (script_again(c, &q, v)) {
        if (!q.ops->again || q.ops->again(c, &q)) {
            /* The script cache was flushed (or FCALL did not run): the
             * same request again as EVAL, which loads the script too. */
            q.eval = 1;
            if (q.deadline >= 0) q.deadline = rlk__core_reply_deadline(c);
            int r = enqueue(c, &q);
            if (r == RLK_OK) return RLK_OK;
            if (!c->broken) rlk__core_fail(c, r, "%s", "a script call could not be sent again");
            /* Out of the queue and not back in it: its answer is that no
             * reply will come (the connection is broken and goes). */
            if (q.ops->reply) q.ops->reply(c, &q, NULL);
            return r;
        }
        q.missing = 1;
    }
    if (q.ops->reply) q.ops->reply(c, &q, v);
    return RLK_OK;
}

static size_t max_input(const rlk__core *c)
{
    return c->cfg.max_input ? c->cfg.max_input : DEFAULT_MAX_INPUT;
}

/* A reply the reader refused, said as its parser tells. */
static int bad_reply(rlk__core *c, int got)
{
    uint64_t at = 0;
    const char *why = NULL;
    rlk_resp_parser_error(&c->reader.parser, &at, &why);
    /* The arena's blocks double: one that failed past half its bound
     * failed at the bound, not for want of memory. */
    if (got == RLK_ERR_NOMEM &&
        (c->arena.first_cap + c->arena.heap_bytes) * 2 > c->arena.max_bytes)
        return rlk__core_fail(c, RLK_ERR_LIMIT, "reply needs more than %zu bytes of memory",
                              c->arena.max_bytes);
    return rlk__core_fail(c, got, "%s at byte %llu of the connection: %s",
                          got == RLK_ERR_LIMIT   ? "reply over a limit"
                          : got == RLK_ERR_NOMEM ? "out of memory for a reply"
                                                 : "protocol error",
                          (unsigned long long)at, why ? why : rlk_strerror(got));
}

/* Hands each whole reply in the input to its request. */
static int parse(rlk__core *c)
{
    size_t pos = 0;
    int r = RLK_OK;
    while (r == RLK_OK && !c->broken && pos < c->in.len) {
        size_t used = 0;
        rlk_resp_value *v = NULL;
        int got = rlk_resp_read(&c->reader, c->in.data + pos, c->in.len - pos, &used, &v);
        if (got < 0) {
            r = bad_reply(c, got);
            break;
        }
        if (got == 0) break;
        pos += used;
        r = on_reply(c, v);
        rlk_resp_arena_reset(&c->arena);
        if (c->arena.blocks && c->qhead == c->qtail) rlk_resp_arena_free(&c->arena);
    }
    if (r == RLK_OK && c->broken) r = c->broken;
    if (r == RLK_OK) {
        rlk_buf_consume(&c->in, pos);
        /* Full, with a reply that is not whole yet. */
        if (c->in.len >= max_input(c))
            r = rlk__core_fail(c, RLK_ERR_LIMIT, "reply larger than %zu bytes", max_input(c));
    }
    return r;
}

int rlk__core_feed(rlk__core *c, const char *buf, size_t len, int64_t now)
{
    if (c->broken) return c->broken;
    if (!c->connected) return say(c, RLK_ERR_INVALID, "feed: not connected");
    enter(c, now);
    /* In steps, each parsed before the next is added: the input never
     * holds more than max_input (after a parse it holds less), so that
     * its buffer never grows past it. */
    int r;
    do {
        size_t room = max_input(c) - c->in.len, n = len < room ? len : room;
        if ((r = rlk_buf_append(&c->in, buf, n)) != RLK_OK) {
            r = rlk__core_fail(c, r, "input: %s",
                               r == RLK_ERR_NOMEM ? "out of memory" : rlk_strerror(r));
            break;
        }
        buf += n;
        len -= n;
        r = parse(c);
    } while (r == RLK_OK && len > 0);
    return leave(c, r);
}

size_t rlk__core_output(const rlk__core *c, const char **buf)
{
    *buf = c->out.data + c->out_off;
    return c->out.len - c->out_off;
}

void rlk__core_consume(rlk__core *c, size_t n)
{
    size_t left = c->out.len - c->out_off;
    if (n > left) n = left;
    c->consumed += n;
    c->out_off += n;
    /* What was sent goes when all of it went, or when it outweighs what
     * is left: a long output written in small parts is moved a bounded
     * number of times, not once per part. */
    if (c->out_off == c->out.len || (c->out_off >= 65536 && c->out_off >= left - n)) {
        rlk_buf_consume(&c->out, c->out_off);
        c->out_off = 0;
    }
}

void rlk__core_hold(rlk__core *c, rlk__req *q, int64_t ms)
{
    if (ms <= 0) return;
    if (q->deadline >= 0) q->deadline += ms;
    if (c->now + ms > c->hold_until) c->hold_until = c->now + ms;
}

int64_t rlk__core_deadline(const rlk__core *c)
{
    int64_t next = c->cfg.hooks.deadline ? c->cfg.hooks.deadline(c->cfg.hooks.ctx) : -1;
    for (size_t i = c->qhead; i < c->qtail; i++) {
        int64_t t = c->q[i].deadline;
        if (t >= 0 && (next < 0 || t < next)) next = t;
    }
    return next;
}

int rlk__core_tick(rlk__core *c, int64_t now)
{
    if (c->broken) return c->broken;
    enter(c, now);
    int r = RLK_OK;
    for (size_t i = c->qhead; i < c->qtail && r == RLK_OK; i++)
        if (c->q[i].deadline >= 0 && c->q[i].deadline <= c->now)
            r = rlk__core_fail(c, RLK_ERR_TIMEOUT, "no reply from the server in time");
    if (r == RLK_OK && c->cfg.hooks.tick) r = c->cfg.hooks.tick(c->cfg.hooks.ctx, c->now);
    if (r == RLK_OK && c->broken) r = c->broken;
    return leave(c, r);
}

/* ------------------------------------------------------------------ */
/* The connection                                                       */

int rlk__core_connected(rlk__core *c, int64_t now)
{
    if (c->connected) return say(c, RLK_ERR_INVALID, "connected: already");
    enter(c, now);
    c->connected = 1;
    c->broken = c->ready = c->resp3 = 0;
    c->hold_until = 0;
    c->hs_left = 0;
    c->subs = 0;
    c->fcall = c->loading = c->script_flags = 0;
    c->caps = 0;
    c->err[0] = '\0';
    memset(&c->info, 0, sizeof c->info);
    c->info.client_id = -1;
    c->info.db = c->cfg.db;
    snprintf(c->info.user, sizeof c->info.user, "%s",
             c->cfg.password && c->cfg.username ? c->cfg.username : "default");
    if (c->cfg.hooks.connected) c->cfg.hooks.connected(c->cfg.hooks.ctx, c);
    int r;
    if (c->cfg.protocol != 2) {
        r = send_hs(c, HS_HELLO);
    } else {
        /* RESP2 asked for: no HELLO tells what the server has, so CLIENT
         * NO-EVICT goes anyway, after the credentials, not waited for
         * (a server before Redis 7.0 refuses it, which is no failure). */
        r = send_auth_select(c, 1, 1);
        if (r == RLK_OK) r = send_hs(c, HS_NOEVICT);
        if (r == RLK_OK && c->hs_left == 0) {
            c->hs_left = 1;
            hs_step(c);
        }
    }
    return leave(c, r);
}

void rlk__core_closed(rlk__core *c, int64_t now)
{
    if (!c->connected) return;
    enter(c, now);
    c->connected = c->ready = c->resp3 = 0;
    c->fcall = c->loading = c->script_flags = 0;
    c->caps = 0;
    c->broken = 0;
    c->hs_left = 0;
    c->subs = 0;
    rlk_buf_free(&c->in);
    rlk_buf_free(&c->out);
    c->out_off = 0;
    c->consumed = 0;
    rlk_resp_reader_reset(&c->reader);
    rlk_resp_arena_reset(&c->arena);
    /* The replies owed will not come.  The queue is emptied first, so
     * that a callback sees a core with nothing owed. */
    size_t n = c->qtail - c->qhead;
    if (n == 0) {
        if (c->cfg.hooks.closed) c->cfg.hooks.closed(c->cfg.hooks.ctx, c);
        leave(c, RLK_OK);
        return;
    }
    rlk__req stack[16], *owed = n <= 16 ? stack : rlk__malloc(n * sizeof *owed);
    if (!owed) {
        /* No room to copy: each in place, none can be queued meanwhile
         * (not connected). */
        while (c->qhead < c->qtail) {
            rlk__req q = c->q[c->qhead++];
            if (q.ops->reply) q.ops->reply(c, &q, NULL);
        }
        c->qhead = c->qtail = 0;
    } else {
        memcpy(owed, c->q + c->qhead, n * sizeof *owed);
        c->qhead = c->qtail = 0;
        for (size_t i = 0; i < n; i++)
            if (owed[i].ops->reply) owed[i].ops->reply(c, &owed[i], NULL);
        if (owed != stack) rlk__free(owed);
    }
    if (c->cfg.hooks.closed) c->cfg.hooks.closed(c->cfg.hooks.ctx, c);
    leave(c, RLK_OK);
}

/* ------------------------------------------------------------------ */
/* Life                                                                 */

static size_t copy_len(const char *p) { return p ? strlen(p) + 1 : 0; }

rlk__core *rlk__core_new(const rlk__core_config *cfg)
{
    rlk__core *c = rlk__malloc(sizeof *c);
    if (!c) return NULL;
    memset(c, 0, sizeof *c);
    c->cfg = *cfg;
    size_t n = copy_len(cfg->username) + copy_len(cfg->password) + copy_len(cfg->client_name);
    if (n && !(c->strings = rlk__malloc(n))) {
        rlk__free(c);
        return NULL;
    }
    char *p = c->strings;
    const char **f[3] = {&c->cfg.username, &c->cfg.password, &c->cfg.client_name};
    for (int i = 0; i < 3; i++)
        if (*f[i]) {
            size_t k = strlen(*f[i]) + 1;
            *f[i] = memcpy(p, *f[i], k);
            p += k;
        }
    rlk_resp_limits lim;
    rlk_resp_limits_default(&lim);
    size_t max = max_input(c);
    lim.max_bulk = max;
    lim.max_depth = 8;
    /* Every element takes 3 bytes at least: no more of them than the
     * bytes buffered allow. */
    lim.max_elements = max / 3 + 16;
    if (cfg->limits) lim = *cfg->limits;
    c->cfg.limits = NULL; /* the caller's, read here only */
    /* A reply's tree takes at most ~22 bytes per byte of input (a node
     * per 3 bytes): bounded by max_input too, unless bounded apart. */
    rlk_resp_arena_init(&c->arena, c->arena0, sizeof c->arena0,
                        cfg->max_tree ? cfg->max_tree : 24 * max + 65536);
    rlk_resp_reader_init(&c->reader, &c->arena, &lim);
    c->in.max = max;
    return c;
}

void rlk__core_free(rlk__core *c)
{
    if (!c) return;
    rlk_resp_reader_free(&c->reader);
    rlk_resp_arena_free(&c->arena);
    rlk_buf_free(&c->in);
    rlk_buf_free(&c->out);
    rlk__free(c->q);
    rlk__free(c->strings);
    rlk__free(c);
}
