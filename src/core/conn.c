/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One connection to one server: the request core (core.c) under a
 * blocking driver, as hiredis builds its contexts on its one reader.
 *
 * The core does the protocol: the handshake and its fallback rules,
 * matching each reply to its request, subscriptions, telling pushes from
 * replies.  This file keeps the socket (transport.h), each call's
 * deadline (its own timeout, and the cap of conn_internal.h), reconnects
 * with the one backoff (retry.h), the check for a connection the server
 * closed while it sat idle, and the replies: the core's tree lives only
 * during its callback, so each reply is copied into the connection's
 * arena there, and stays valid until the next call.
 *
 * Any failure that could leave the byte stream out of step with the
 * server (timeout, I/O error, protocol error) closes the connection.  A
 * failure the core meets after the call had all it waited for (a reply
 * sent twice, in the same read) is told by the next call.
 */
#include "resplock.h"
#include "transport.h"
#include "connect.h"
#include "clock.h"
#include "core.h"
#include "url.h"
#include "conn_internal.h"
#include "defaults.h"
#include "reply.h"
#include "retry.h"
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_ATTEMPTS 5
#define DEFAULT_STALE_CHECK_MS 1
#define DEFAULT_MAX_REPLY_BYTES (64u << 20)
#define READ_CHUNK 16384
#define ARENA_INLINE 4096

/* What the call in progress waits for. */
enum { WAIT_NONE, WAIT_REPLIES, WAIT_READY, WAIT_PUSH };

struct rlk_conn {
    rlk_conn_config cfg;      /* strings below are our own copies */
    char *strings;            /* one block holding the copied strings */
    rlk__url url;
    int url_status;
    /* A Sentinel URL's parts (sentinel.block NULL: a plain URL): url is
     * the data nodes', whose address each connect asks the sentinels. */
    rlk__sentinel_url sentinel;
    rlk__transport t;
    rlk__core *core;
    int64_t cap;              /* rlk__conn_cap's deadline, or -1 */
    uint64_t generation;
    int64_t last_io_ms;       /* when the last call started */
    rlk__backoff backoff;
    /* The call in progress: what it waits for, where its replies go
     * (by their request's arg), how many came. */
    int wait;
    rlk_resp_value **replies;
    size_t want, got;
    int pushed;               /* messages given to on_push by this call */
    int failed;               /* a reply that could not be kept: why */
    const rlk__cmd *building; /* the command rlk__core_submit builds */
    int feeding;              /* inside the core: a close waits for its end */
    int close_asked;          /* rlk_conn_close from a push handler */
    int stale;                /* the core failed after the call had its answer */
    int pipelining;           /* the last call was a pipeline */
    rlk_resp_arena arena;     /* the last call's replies */
    rlk__script_state scripts;
    rlk_conn_info info;
    char err[512];
    unsigned char arena_inline[ARENA_INLINE];
};

/* ------------------------------------------------------------------ */

#define set_err rlk__conn_fail

int rlk__conn_fail(rlk_conn *c, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return status;
}

const char *rlk_conn_errmsg(const rlk_conn *c) { return c->err; }
int rlk_conn_is_connected(const rlk_conn *c) { return c->t.fd >= 0; }
uint64_t rlk_conn_generation(const rlk_conn *c) { return c->generation; }
int rlk_conn_fd(const rlk_conn *c) { return c->t.fd; }
const rlk_conn_info *rlk_conn_get_info(const rlk_conn *c) { return &c->info; }
rlk__script_state *rlk__conn_script_state(rlk_conn *c) { return &c->scripts; }

/* ------------------------------------------------------------------ */
/* What the core hands over                                             */

/* A copy of v's own fields and string in a, with no children, attribute
 * or sibling yet; NULL when a is full. */
static rlk_resp_value *copy_node(rlk_resp_arena *a, const rlk_resp_value *v)
{
    size_t extra = v->str ? v->len + 1 : 0;
    rlk_resp_value *n = rlk_resp_arena_alloc(a, sizeof *n + extra);
    if (!n) return NULL;
    *n = *v;
    n->child = n->next = n->attr = NULL;
    if (v->str) {
        char *s = (char *)(n + 1);
        if (v->len) memcpy(s, v->str, v->len);
        s[v->len] = '\0';
        n->str = s;
    }
    return n;
}

/* Puts copy n of o in line to get o's children and attribute, unless o
 * has none: the original waits in n->child, the next in line in
 * n->attr, both free until n's turn. */
static void in_line(rlk_resp_value **head, rlk_resp_value **tail, rlk_resp_value *n,
                    const rlk_resp_value *o)
{
    if (!o->child && !o->attr) return;
    n->child = (rlk_resp_value *)(uintptr_t)o;
    if (*tail) (*tail)->attr = n;
    else *head = n;
    *tail = n;
}

/* A copy of the reply v (strings NUL-terminated) in a, or NULL when a is
 * full.  Breadth first, without recursion: a reply may nest as deep as
 * the parser's limits allow. */
static rlk_resp_value *copy_tree(rlk_resp_arena *a, const rlk_resp_value *v)
{
    rlk_resp_value *root = copy_node(a, v), *head = NULL, *tail = NULL;
    if (!root) return NULL;
    in_line(&head, &tail, root, v);
    while (head) {
        rlk_resp_value *n = head;
        const rlk_resp_value *o = n->child;
        head = n->attr;
        if (!head) tail = NULL;
        n->child = n->attr = NULL;
        if (o->attr) {
            if (!(n->attr = copy_node(a, o->attr))) return NULL;
            in_line(&head, &tail, n->attr, o->attr);
        }
        rlk_resp_value **link = &n->child;
        for (const rlk_resp_value *k = o->child; k; k = k->next) {
            if (!(*link = copy_node(a, k))) return NULL;
            in_line(&head, &tail, *link, k);
            link = &(*link)->next;
        }
    }
    return root;
}

/* A request's reply (NULL: the connection closed first): kept for the
 * call as replies[q->arg]. */
static void on_reply(rlk__core *k, rlk__req *q, const rlk_resp_value *v)
{
    (void)k;
    rlk_conn *c = q->ctx;
    if (!v || c->wait != WAIT_REPLIES || (size_t)q->arg >= c->want) return;
    c->got++;
    if (c->failed) return;
    rlk_resp_value *kept = copy_tree(&c->arena, v);
    if (kept) {
        c->replies[q->arg] = kept;
        return;
    }
    /* The blocks double: one that failed past half the bound failed at
     * the bound, not for want of memory. */
    c->failed = (c->arena.first_cap + c->arena.heap_bytes) * 2 > c->arena.max_bytes
                    ? RLK_ERR_LIMIT
                    : RLK_ERR_NOMEM;
}

static int build_cmd(rlk__core *k, rlk__req *q)
{
    const rlk__cmd *m = ((rlk_conn *)q->ctx)->building;
    return rlk__core_put_parts(k, m->nhead, m->head, m->headlen, m->argc, m->argv, m->argvlen);
}

static const rlk__req_ops cmd_ops = {build_cmd, on_reply, NULL, RLK__T_ANY};
static const rlk__req_ops sub_ops = {NULL, on_reply, NULL, 0};

static int word_is(const rlk_resp_value *v, const char *s)
{
    size_t n = strlen(s);
    return v && (v->type == RLK_RESP_BULK || v->type == RLK_RESP_SIMPLE) && v->len == n &&
           strncasecmp(v->str, s, n) == 0;
}

/* Subscription confirmations, as RESP3 pushes or RESP2 arrays. */
static int is_confirmation(const rlk_resp_value *v)
{
    const rlk_resp_value *k = v->child;
    return word_is(k, "subscribe") || word_is(k, "unsubscribe") || word_is(k, "psubscribe") ||
           word_is(k, "punsubscribe") || word_is(k, "ssubscribe") || word_is(k, "sunsubscribe");
}

/* A push (a RESP2 message on a connection that subscribed, too): to
 * on_push.  Confirmations nobody waits for are dropped. */
static void on_push(void *ctx, rlk__core *k, const rlk_resp_value *v)
{
    (void)k;
    rlk_conn *c = ctx;
    if (is_confirmation(v)) return;
    c->pushed++;
    if (c->cfg.on_push) c->cfg.on_push(c->cfg.ctx, c, v);
}

/* ------------------------------------------------------------------ */
/* Life                                                                 */

rlk_conn *rlk_conn_new(const rlk_conn_config *cfg)
{
    rlk_conn *c = rlk__malloc(sizeof *c);
    if (!c) return NULL;
    memset(c, 0, offsetof(rlk_conn, arena_inline));
    if (cfg) c->cfg = *cfg;
    if (rlk__conn_config_copy(&c->cfg, &c->strings) != RLK_OK) {
        rlk__free(c);
        return NULL;
    }
    if (!c->cfg.connect_timeout_ms) c->cfg.connect_timeout_ms = RLK__DEFAULT_TIMEOUT_MS;
    if (!c->cfg.command_timeout_ms) c->cfg.command_timeout_ms = RLK__DEFAULT_TIMEOUT_MS;
    if (!c->cfg.reconnect_attempts) c->cfg.reconnect_attempts = DEFAULT_ATTEMPTS;
    if (c->cfg.backoff_initial_ms <= 0) c->cfg.backoff_initial_ms = RLK__DEFAULT_BACKOFF_MS;
    if (c->cfg.backoff_max_ms <= 0) c->cfg.backoff_max_ms = RLK__DEFAULT_BACKOFF_MAX_MS;
    if (!c->cfg.stale_check_ms) c->cfg.stale_check_ms = DEFAULT_STALE_CHECK_MS;
    if (!c->cfg.max_reply_bytes) c->cfg.max_reply_bytes = DEFAULT_MAX_REPLY_BYTES;
    c->cap = -1;
    rlk__transport_init(&c->t);
    c->info.client_id = -1;

    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed)
        seed = (uint64_t)rlk__now_ms() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)c;
    rlk__backoff_init(&c->backoff, c->cfg.backoff_initial_ms, c->cfg.backoff_max_ms, seed);
    if (rlk__url_is_sentinel(c->cfg.url)) {
        c->url_status = rlk__sentinel_url_split(&c->sentinel, c->cfg.url, c->err, sizeof c->err);
        if (c->url_status == RLK_OK)
            c->url_status = rlk__url_parse(&c->url, c->sentinel.data, c->err, sizeof c->err);
    } else {
        c->url_status = rlk__url_parse(&c->url, c->cfg.url, c->err, sizeof c->err);
    }

    /* One bound for a reply's bytes and, apart from them, for its tree
     * (the core's while it reads it, then the copy kept here): a reply
     * of many small elements costs ~80 bytes of nodes per element of 4
     * bytes on the wire, so a bound on the bytes alone would let a
     * hostile server multiply them twentyfold in memory.  A bulk longer
     * than the bound is refused as soon as it is announced. */
    size_t max = c->cfg.max_reply_bytes;
    rlk_resp_limits lim = c->cfg.limits;
    if (!lim.max_bulk || lim.max_bulk > max) lim.max_bulk = max;
    rlk_resp_arena_init(&c->arena, c->arena_inline, sizeof c->arena_inline, max);
    rlk__core_config k;
    memset(&k, 0, sizeof k);
    if (c->url_status == RLK_OK) {
        k.username = c->url.user;
        k.password = c->url.password;
        k.db = c->url.db;
    }
    k.client_name = c->cfg.client_name;
    k.protocol = c->cfg.protocol;
    k.command_timeout_ms = -1; /* each call keeps its own deadline */
    k.max_input = max;
    k.max_tree = max;
    k.limits = &lim;
    k.stray_confirmations = 1;
    k.require_primary = c->sentinel.block != NULL;
    k.hooks.push = on_push;
    k.hooks.ctx = c;
    if (!(c->core = rlk__core_new(&k))) {
        rlk__url_free(&c->url);
        rlk__sentinel_url_free(&c->sentinel);
        rlk__free(c->strings);
        rlk__free(c);
        return NULL;
    }
    return c;
}

/* Closes the transport and ends the core's connection (the replies
 * owed will not come). */
static void close_now(rlk_conn *c)
{
    rlk__transport_close(&c->t);
    rlk__core_closed(c->core, rlk__now_ms());
    c->stale = 0;
    c->info.tls_version = NULL;
    c->info.tls_cipher = NULL;
}

void rlk_conn_close(rlk_conn *c)
{
    if (c->feeding) {
        /* From a push handler, inside the core: it stops reading at
         * once, and is closed when it returns (see fed). */
        c->close_asked = 1;
        rlk__core_fail(c->core, RLK_ERR_CLOSED, "connection closed by the push handler");
        rlk__transport_close(&c->t);
        return;
    }
    close_now(c);
}

void rlk_conn_free(rlk_conn *c)
{
    if (!c) return;
    close_now(c);
    rlk__core_free(c->core);
    rlk_resp_arena_free(&c->arena);
    rlk__url_free(&c->url);
    rlk__sentinel_url_free(&c->sentinel);
    rlk__free(c->strings);
    rlk__free(c);
}

/* ------------------------------------------------------------------ */
/* Deadlines and failures                                               */

/* A call's deadline: its own timeout (ms < 0: none) from now, or the
 * cap if that comes first. */
static int64_t deadline_from(const rlk_conn *c, int64_t now, int ms)
{
    int64_t d = ms < 0 ? -1 : now + ms;
    return c->cap >= 0 && (d < 0 || c->cap < d) ? c->cap : d;
}

static int64_t deadline_after(const rlk_conn *c, int ms)
{
    return deadline_from(c, rlk__now_ms(), ms);
}

void rlk__conn_cap(rlk_conn *c, int64_t deadline)
{
    c->cap = deadline < 0 ? -1 : deadline;
}

int64_t rlk__conn_narrow(rlk_conn *c, int64_t start)
{
    int64_t was = c->cap;
    c->cap = deadline_from(c, start, c->cfg.command_timeout_ms);
    return was;
}

/* Whether the deadline passed.  Read after every read that left the
 * call unanswered, never once per round trip: a server that keeps
 * sending keeps the socket readable, so waiting in poll() alone would
 * never time out. */
static int expired(int64_t deadline)
{
    return deadline >= 0 && rlk__now_ms() >= deadline;
}

/* Closes after a failure that may have desynchronized the stream; keeps
 * the message the failure left. */
static int broken(rlk_conn *c, int status)
{
    char keep[sizeof c->err];
    memcpy(keep, c->err, sizeof keep);
    rlk_conn_close(c);
    memcpy(c->err, keep, sizeof keep);
    return status;
}

static int timed_out(rlk_conn *c, const char *doing)
{
    if (c->wait == WAIT_REPLIES && c->want > 1)
        set_err(c, RLK_ERR_TIMEOUT, "%s: timed out with %zu of %zu replies", doing, c->got,
                c->want);
    else
        set_err(c, RLK_ERR_TIMEOUT, "%s: timed out waiting for %s", doing, c->t.peer);
    return broken(c, RLK_ERR_TIMEOUT);
}

static int transport_failed(rlk_conn *c, int status, const char *doing)
{
    if (status == RLK_ERR_TIMEOUT) return timed_out(c, doing);
    set_err(c, status, "%s: %s", doing, c->t.err[0] ? c->t.err : rlk_strerror(status));
    return broken(c, status);
}

/* The core failed: closes, with the core's reason.  The handshake's
 * verdicts (refused credentials, a SELECT refused...) say it alone. */
static int core_failed(rlk_conn *c, int status, const char *doing)
{
    if (c->wait == WAIT_READY && (status == RLK_ERR_AUTH || status == RLK_ERR_SERVER))
        set_err(c, status, "%s", rlk__core_errmsg(c->core));
    else
        set_err(c, status, "%s: %s", doing, rlk__core_errmsg(c->core));
    return broken(c, status);
}

/* Whether the call has what it waits for. */
static int done(const rlk_conn *c)
{
    switch (c->wait) {
    case WAIT_REPLIES: return c->got >= c->want;
    case WAIT_READY: return rlk__core_ready(c->core);
    case WAIT_PUSH: return c->pushed > 0;
    default: return 0;
    }
}

/* After the core took bytes (r: its status): RLK_OK, or the failure
 * that closed c. */
static int fed(rlk_conn *c, int r, const char *doing)
{
    if (c->close_asked) {
        c->close_asked = 0;
        close_now(c);
        if (done(c) && !c->failed) return RLK_OK;
        return set_err(c, RLK_ERR_CLOSED, "%s: connection closed by the push handler", doing);
    }
    if (c->failed) {
        if (c->failed == RLK_ERR_LIMIT)
            set_err(c, RLK_ERR_LIMIT, "%s: replies need more than %zu bytes of memory "
                    "(max_reply_bytes)", doing, c->cfg.max_reply_bytes);
        else
            set_err(c, RLK_ERR_NOMEM, "%s: out of memory for a reply", doing);
        return broken(c, c->failed);
    }
    if (r == RLK_OK) return RLK_OK;
    /* What came after the call's answer (a reply sent twice, say): its
     * answer stands, the next call is told. */
    if (done(c)) {
        c->stale = 1;
        return RLK_OK;
    }
    return core_failed(c, r, doing);
}

/* Reads what comes (waiting until the deadline) and gives it to the
 * core.  RLK_OK; RLK_ERR_TIMEOUT without closing when keep (a wait for
 * messages, or a look that must not wait); or a failure that closed c. */
static int fill(rlk_conn *c, int64_t deadline, const char *doing, int keep)
{
    char buf[READ_CHUNK];
    ssize_t n = rlk__transport_read_some(&c->t, buf, sizeof buf, deadline);
    if (n == 0) {
        set_err(c, RLK_ERR_IO, "%s: connection closed by the server", doing);
        return broken(c, RLK_ERR_IO);
    }
    if (n < 0) {
        if (n == RLK_ERR_TIMEOUT && keep) return RLK_ERR_TIMEOUT;
        return transport_failed(c, (int)n, doing);
    }
    c->feeding = 1;
    int r = rlk__core_feed(c->core, buf, (size_t)n, rlk__now_ms());
    c->feeding = 0;
    return fed(c, r, doing);
}

/* Drives the core until the call has what it waits for: writes its
 * output and reads what comes, both at once (a pipeline of any length
 * cannot stall on full buffers), under the deadline.  RLK_OK, or a
 * failure that closed c. */
static int run(rlk_conn *c, int64_t deadline, const char *doing)
{
    for (int read = 0;;) {
        if (done(c)) return RLK_OK;
        const char *out;
        size_t n = rlk__core_output(c->core, &out);
        if (n) {
            ssize_t w = c->t.ops->write(&c->t, out, n);
            if (w > 0) {
                rlk__core_consume(c->core, (size_t)w);
                continue;
            }
            if (w == 0) w = RLK_ERR_IO;
            if (w != RLK__WANT_WRITE && w != RLK__WANT_READ)
                return transport_failed(c, (int)w, doing);
            if (w == RLK__WANT_WRITE && !(c->t.ops->pending && c->t.ops->pending(&c->t))) {
                /* Either way: the server may wait for us to read. */
                struct pollfd pfd = {c->t.fd, POLLIN | POLLOUT, 0};
                int pr = poll(&pfd, 1, rlk__ms_left(deadline));
                if (pr < 0 && errno != EINTR) {
                    set_err(c, RLK_ERR_IO, "%s: poll: %s", doing, strerror(errno));
                    return broken(c, RLK_ERR_IO);
                }
                if (pr == 0) return timed_out(c, doing);
                if (pr < 0 || !(pfd.revents & (POLLIN | POLLHUP | POLLERR))) continue;
            }
        }
        if (read && expired(deadline)) return timed_out(c, doing);
        int r = fill(c, deadline, doing, 0);
        if (r != RLK_OK) return r;
        read = 1;
    }
}

/* Waits for the n replies of the requests just queued (their arg 0..n)
 * into replies[0..n): RLK_OK, or a failure that closed c (replies all
 * NULL then). */
static int await(rlk_conn *c, rlk_resp_value **replies, size_t n, int64_t deadline,
                 const char *doing)
{
    c->wait = WAIT_REPLIES;
    c->replies = replies;
    c->want = n;
    c->got = 0;
    int r = run(c, deadline, doing);
    c->wait = WAIT_NONE;
    c->replies = NULL;
    if (r != RLK_OK)
        for (size_t i = 0; i < n; i++) replies[i] = NULL;
    return r;
}

/* Forgets what the previous call handed out. */
static void begin_call(rlk_conn *c)
{
    rlk_resp_arena_reset(&c->arena);
    c->pipelining = 0;
    c->failed = 0;
}

/* ------------------------------------------------------------------ */
/* Connecting                                                           */

/* A Sentinel URL's: the primary's address, asked of each sentinel in
 * turn until one names it, into c->url.  RLK_OK, or the last reason
 * none did. */
static int ask_sentinels(rlk_conn *c, int64_t deadline)
{
    const char *argv[3] = {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", c->sentinel.master};
    int r = RLK_ERR_CONNECT;
    for (size_t i = 0; i < c->sentinel.n; i++) {
        rlk_conn_config sc = c->cfg;
        sc.url = c->sentinel.sentinels[i];
        sc.reconnect_attempts = -1;
        sc.on_push = NULL;
        sc.on_connect = NULL;
        int left = rlk__ms_left(deadline);
        if (left == 0) break;
        if (left > 0) sc.connect_timeout_ms = sc.command_timeout_ms = left;
        rlk_conn *s = rlk_conn_new(&sc);
        if (!s) return set_err(c, RLK_ERR_NOMEM, "out of memory");
        rlk_resp_value *v = NULL;
        r = rlk_conn_connect(s);
        if (r == RLK_OK) r = rlk_conn_command(s, &v, 3, argv, NULL);
        char addr[256];
        int port = r == RLK_OK ? rlk__addr_reply(v, addr) : 0;
        if (port) {
            size_t n = strlen(addr) + 1;
            char *host = rlk__malloc(n);
            if (host) memcpy(host, addr, n);
            rlk_conn_free(s);
            if (!host) return set_err(c, RLK_ERR_NOMEM, "out of memory");
            rlk__free(c->url.host);
            c->url.host = host;
            c->url.port = port;
            return RLK_OK;
        }
        if (r == RLK_OK) {
            r = RLK_ERR_CONNECT;
            set_err(c, r, "sentinel %s: no primary named '%.64s' known", sc.url, c->sentinel.master);
        } else {
            set_err(c, r, "sentinel %.100s: %.300s", sc.url, rlk_conn_errmsg(s));
        }
        rlk_conn_free(s);
    }
    return r;
}

static int connect_once(rlk_conn *c)
{
    if (c->url_status != RLK_OK) return c->url_status == RLK_ERR_NOMEM
        ? set_err(c, RLK_ERR_NOMEM, "out of memory parsing the URL") : RLK_ERR_URL;
    rlk_conn_close(c);
    c->err[0] = '\0';
    memset(&c->info, 0, sizeof c->info);
    c->info.client_id = -1;
    int64_t now = rlk__now_ms();
    int64_t deadline = deadline_from(c, now, c->cfg.connect_timeout_ms);
    int r = c->sentinel.block ? ask_sentinels(c, deadline) : RLK_OK;
    if (r != RLK_OK) return broken(c, r);
    r = rlk__connect_url(&c->t, &c->url, &c->cfg.tls, deadline);
    if (r != RLK_OK) {
        set_err(c, r, "%s", c->t.err[0] ? c->t.err : rlk_strerror(r));
        return broken(c, r);
    }
    begin_call(c);
    r = rlk__core_connected(c->core, now);
    if (r == RLK_OK) {
        c->wait = WAIT_READY;
        r = run(c, deadline, c->cfg.protocol == 2 ? "handshake" : "handshake (HELLO 3)");
        c->wait = WAIT_NONE;
    } else {
        set_err(c, r, "handshake: %s", rlk__core_errmsg(c->core));
        broken(c, r);
    }
    if (r != RLK_OK) return r;
    c->info = *rlk__core_info(c->core);
    snprintf(c->info.peer, sizeof c->info.peer, "%s", c->t.peer);
    c->info.tls_version = rlk__tls_version(&c->t);
    c->info.tls_cipher = rlk__tls_cipher(&c->t);
    c->generation++;
    rlk__backoff_served(&c->backoff);
    if (c->cfg.on_connect) c->cfg.on_connect(c->cfg.ctx, c, c->generation > 1);
    return RLK_OK;
}

int rlk_conn_connect(rlk_conn *c)
{
    return connect_once(c);
}

/* Sleeps ms milliseconds (nothing when ms <= 0), through signals. */
static void pause_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Up to reconnect_attempts tries, by the one rule of retry.h: each try
 * after a failed one, in this call or an earlier one, waits the
 * backoff's pause (within the call's cap); a connection made starts the
 * pauses over; a failure no try mends ends the tries. */
static int reconnect(rlk_conn *c)
{
    int attempts = c->cfg.reconnect_attempts > 0 ? c->cfg.reconnect_attempts : 1;
    int r = RLK_ERR_CLOSED;
    for (int i = 0; i < attempts; i++) {
        int64_t p = c->backoff.at - rlk__now_ms();
        if (p > 0) {
            int left = rlk__ms_left(c->cap);
            if (left >= 0 && p > left) p = left;
            pause_ms(p);
            if (expired(c->cap)) {
                char last[sizeof c->err];
                memcpy(last, c->err, sizeof last);
                return set_err(c, RLK_ERR_TIMEOUT, "reconnect: the call's deadline came after "
                               "%d tries (last: %.400s)", i, last);
            }
        }
        r = connect_once(c);
        if (r == RLK_OK) return r;
        rlk__backoff_failed(&c->backoff, rlk__now_ms());
        if (!rlk__retry_mends(r, c->t.lasting)) return r;
    }
    return r;
}

int rlk_conn_reconnect(rlk_conn *c)
{
    /* Asked for now: no pause owed by earlier failures. */
    rlk__backoff_served(&c->backoff);
    return reconnect(c);
}

/* The core failed after the last call had its answer: closes, and says
 * why.  Its status. */
static int report_stale(rlk_conn *c)
{
    int r = rlk__core_broken(c->core);
    set_err(c, r, "after the last call, from %s: %s", c->t.peer, rlk__core_errmsg(c->core));
    return broken(c, r);
}

/* A server that closed the connection while it sat idle (a restart, an
 * idle timeout, CLIENT KILL) has left an end of file, or a reset, to be
 * read.  Found before anything is sent, it closes the connection, and
 * reconnecting is safe: no command can have been lost.  Bytes found
 * instead go to the core: push messages are delivered, and a reply (one
 * sent twice, one to a command that gave up) closes the connection as
 * out of step, before the next command can take it for its own.  Only a
 * connection left idle a while is looked at: a server restarts, a proxy
 * drops an idle connection, over milliseconds at least; a look before
 * every command would cost a system call per round trip.  A close that
 * lands inside the window fails the command instead (it is never
 * re-sent).  RLK_OK, or the failure that closed c. */
static int idle_check(rlk_conn *c, int64_t now)
{
    if (c->t.fd < 0) return RLK_OK;
    if (c->cfg.stale_check_ms >= 0 && now - c->last_io_ms < c->cfg.stale_check_ms) return RLK_OK;
    if (rlk__transport_wait_readable(&c->t, now) != 1) return RLK_OK;
    int r = fill(c, rlk__now_ms(), "idle connection", 1);
    return r == RLK_ERR_TIMEOUT ? RLK_OK : r;
}

/* Before a call at time now: a closed connection is re-established if
 * allowed.  The call counts as activity for the stale check. */
static int ensure_connected(rlk_conn *c, int64_t now)
{
    int r = c->stale ? report_stale(c) : idle_check(c, now);
    c->last_io_ms = now;
    if (c->t.fd >= 0) return RLK_OK;
    if (c->cfg.reconnect_attempts < 0) {
        if (c->generation == 0) return connect_once(c);
        /* Out of step, a reply over the bound...: said as it is. */
        if (r != RLK_OK && r != RLK_ERR_IO && r != RLK_ERR_TLS) return r;
        return set_err(c, RLK_ERR_CLOSED, r != RLK_OK ? "not connected: the server closed the "
                                                        "connection, and reconnecting is off"
                                                      : "not connected");
    }
    return reconnect(c);
}

int rlk__conn_ensure(rlk_conn *c)
{
    return ensure_connected(c, rlk__now_ms());
}

/* ------------------------------------------------------------------ */
/* Commands                                                             */

/* The command's first word and its length. */
static const char *cmd_name(const rlk__cmd *q, size_t *len)
{
    if (q->nhead) {
        *len = q->headlen[0];
        return q->head[0];
    }
    *len = q->argc > 0 ? (q->argvlen ? q->argvlen[0] : strlen(q->argv[0])) : 0;
    return q->argc > 0 ? q->argv[0] : "";
}

/* The command's name, for messages: never its arguments (AUTH has a
 * password among them). */
static void command_name(char *out, size_t n, const rlk__cmd *q)
{
    size_t len;
    const char *name = cmd_name(q, &len);
    size_t i = 0;
    for (; i < len && i + 1 < n && i < 32; i++) {
        unsigned char ch = (unsigned char)name[i];
        out[i] = (ch >= 0x21 && ch <= 0x7e) ? (char)ch : '?';
    }
    out[i] = '\0';
}

static int name_is(const char *name, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(name, word, n) == 0;
}

/*
 * Commands that would change what the connection keeps track of go
 * through the functions made for them: sent raw, a subscription would
 * leave replies unmatched (RESP3 confirms by push), HELLO and RESET would
 * change the protocol or drop the handshake, MONITOR would flood the
 * stream.  On a RESP2 connection that subscribed, only PING is left.
 */
static int check_command(rlk_conn *c, const rlk__cmd *q)
{
    static const struct { const char *name; size_t len; } refused[] = {
        {"SUBSCRIBE", 9},     {"PSUBSCRIBE", 10},   {"SSUBSCRIBE", 10},
        {"UNSUBSCRIBE", 11},  {"PUNSUBSCRIBE", 12}, {"SUNSUBSCRIBE", 12},
        {"HELLO", 5},         {"RESET", 5},         {"MONITOR", 7}};
    size_t n;
    const char *name = cmd_name(q, &n);
    /* Most commands leave at the length test: this runs for every
     * pipelined request. */
    if (n == 5 || n == 7 || (n >= 9 && n <= 12)) {
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
            if (refused[i].len == n && strncasecmp(name, refused[i].name, n) == 0)
                return set_err(c, RLK_ERR_INVALID,
                               "%s is not sent as a plain command: use rlk_conn_subscribe / "
                               "rlk_conn_unsubscribe, or the connection's configuration",
                               refused[i].name);
    }
    if (rlk__core_resp3(c->core) || !rlk__core_subscribed(c->core) || name_is(name, n, "PING"))
        return RLK_OK;
    return set_err(c, RLK_ERR_INVALID,
                   "a RESP2 connection that subscribed only takes (UN)SUBSCRIBE and PING; "
                   "use another connection for commands");
}

/* A command's words: head[] then argv[], at least one, none NULL. */
static int cmd_ok(const rlk__cmd *q)
{
    if (q->nhead < 0 || q->nhead > 3 || q->argc < 0 || q->nhead + q->argc < 1) return 0;
    if (q->argc > 0 && !q->argv) return 0;
    return q->nhead ? q->head[0] != NULL : q->argv[0] != NULL;
}

/* Queues command q, its reply to go to replies[i] of the call. */
static int submit(rlk_conn *c, const rlk__cmd *q, size_t i, const char *doing)
{
    c->building = q;
    int r = rlk__core_submit(c->core, &cmd_ops, c, (int64_t)i, -1, 0);
    c->building = NULL;
    if (r == RLK_OK) return r;
    set_err(c, r, "%s: cannot send the command: %s", doing, rlk__core_errmsg(c->core));
    return rlk__core_broken(c->core) ? broken(c, r) : r;
}

int rlk__conn_command(rlk_conn *c, rlk_resp_value **reply, const rlk__cmd *q)
{
    *reply = NULL;
    if (!cmd_ok(q)) return set_err(c, RLK_ERR_INVALID, "empty command");
    int64_t now = rlk__now_ms();
    int r = ensure_connected(c, now);
    if (r == RLK_OK) r = check_command(c, q);
    if (r != RLK_OK) return r;
    begin_call(c);
    char doing[40];
    command_name(doing, sizeof doing, q);
    r = submit(c, q, 0, doing);
    if (r != RLK_OK) return r;
    return await(c, reply, 1, deadline_from(c, now, c->cfg.command_timeout_ms), doing);
}

int rlk_conn_command(rlk_conn *c, rlk_resp_value **reply, int argc,
                     const char *const *argv, const size_t *argvlen)
{
    rlk__cmd q = {.argc = argc, .argv = argv, .argvlen = argvlen};
    return rlk__conn_command(c, reply, &q);
}

int rlk__conn_pipeline(rlk_conn *c, size_t n, const rlk__cmd *cmds, rlk_resp_value **replies,
                       int more)
{
    for (size_t i = 0; i < n; i++) replies[i] = NULL;
    if (n == 0) return RLK_OK;
    for (size_t i = 0; i < n; i++)
        if (!cmd_ok(&cmds[i]))
            return set_err(c, RLK_ERR_INVALID, "pipeline request %zu is malformed", i);
    int r;
    if (more) {
        /* The replies of the part before stay in the arena. */
        if (c->t.fd < 0 || !c->pipelining)
            return set_err(c, RLK_ERR_CLOSED, "pipeline: no pipeline to go on with");
        if (c->stale) return report_stale(c);
    } else if ((r = ensure_connected(c, rlk__now_ms())) != RLK_OK) {
        return r;
    }
    for (size_t i = 0; i < n; i++)
        if ((r = check_command(c, &cmds[i])) != RLK_OK) return r;
    if (!more) begin_call(c);
    c->pipelining = 1;
    int64_t deadline = deadline_after(c, c->cfg.command_timeout_ms);
    for (size_t i = 0; i < n; i++)
        if ((r = submit(c, &cmds[i], i, "pipeline")) != RLK_OK) {
            /* The requests before it are queued: they must not be sent
             * without their caller. */
            if (i > 0 && c->t.fd >= 0) broken(c, r);
            return r;
        }
    return await(c, replies, n, deadline, "pipeline");
}

/* ------------------------------------------------------------------ */
/* Pub/sub                                                              */

static int sub_command(rlk_conn *c, int on, const char *channel, size_t len)
{
    const char *verb = on ? "SUBSCRIBE" : "UNSUBSCRIBE";
    int r = ensure_connected(c, rlk__now_ms());
    if (r != RLK_OK) return r;
    begin_call(c);
    int64_t deadline = deadline_after(c, c->cfg.command_timeout_ms);
    r = rlk__core_subscribe_n(c->core, on, 0, channel, len, &sub_ops, c, 0);
    if (r != RLK_OK) {
        set_err(c, r, "%s: cannot send the command: %s", verb, rlk__core_errmsg(c->core));
        return rlk__core_broken(c->core) ? broken(c, r) : r;
    }
    rlk_resp_value *v;
    if ((r = await(c, &v, 1, deadline, verb)) != RLK_OK) return r;
    if (rlk__is_error(v)) {
        int n = (int)(v->len > 300 ? 300 : v->len);
        return set_err(c, RLK_ERR_SERVER, "%s: %.*s", verb, n, v->str);
    }
    /* [kind, channel, count]: the count of channels still subscribed. */
    const rlk_resp_value *cnt = rlk_resp_value_at(v, 2);
    if (!cnt || cnt->type != RLK_RESP_INTEGER) {
        set_err(c, RLK_ERR_PROTO, "%s: unexpected reply", verb);
        return broken(c, RLK_ERR_PROTO);
    }
    return RLK_OK;
}

int rlk_conn_subscribe(rlk_conn *c, const char *channel, size_t len)
{
    return sub_command(c, 1, channel, len);
}

int rlk_conn_unsubscribe(rlk_conn *c, const char *channel, size_t len)
{
    return sub_command(c, 0, channel, len);
}

int rlk_conn_wait_push(rlk_conn *c, int timeout_ms)
{
    if (c->t.fd < 0) return set_err(c, RLK_ERR_CLOSED, "not connected");
    if (c->stale) return report_stale(c);
    begin_call(c);
    int64_t deadline = deadline_after(c, timeout_ms);
    c->wait = WAIT_PUSH;
    c->pushed = 0;
    int r;
    /* A partial message stays in the core: the next call goes on with
     * it. */
    for (int read = 0;; read = 1) {
        if (c->pushed) {
            r = 1;
            break;
        }
        if (read && expired(deadline)) {
            r = 0;
            break;
        }
        r = fill(c, deadline, "waiting for messages", 1);
        if (r == RLK_ERR_TIMEOUT) {
            r = 0;
            break;
        }
        if (r != RLK_OK) break;
    }
    c->wait = WAIT_NONE;
    return r;
}

/* ------------------------------------------------------------------ */

rlk_error_class rlk_reply_error_class(const rlk_resp_value *v) { return rlk__reply_class(v); }

void rlk_conn_set_timeouts(rlk_conn *c, int connect_ms, int command_ms)
{
    if (connect_ms > 0) c->cfg.connect_timeout_ms = connect_ms;
    if (command_ms) c->cfg.command_timeout_ms = command_ms;
}
