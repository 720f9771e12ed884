/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One connection to one server: handshake, commands, pipelines, push
 * messages, reconnection.
 *
 * Replies are trees built by the codec's reader straight over the receive
 * buffer (no copy) and stay valid until the next call on the connection;
 * the buffer is compacted and the arena reset only at the start of a call,
 * or after a push message was delivered.  Pipelines are the exception:
 * their replies are gathered while the buffer keeps moving, so their
 * strings are copied into the arena.
 *
 * Any failure that could leave the byte stream out of step with the
 * server (timeout, I/O error, protocol error) closes the connection.
 */
#include "resplock.h"
#include "transport.h"
#include "connect.h"
#include "clock.h"
#include "core.h"
#include "url.h"
#include "conn_internal.h"
#include "defaults.h"
#include "keys.h"
#include "retry.h"
#include "serverinfo.h"
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

struct rlk_conn {
    rlk_conn_config cfg;      /* strings below are our own copies */
    char *strings;            /* one block holding the copied strings */
    rlk__url url;
    int url_status;
    rlk__transport t;
    rlk_buf rx;               /* received bytes; rx_off of them parsed */
    size_t rx_off;
    size_t rx_max;            /* bound on one reply's bytes */
    int64_t cap;              /* rlk__conn_cap's deadline, or -1 */
    rlk_buf tx;
    rlk_resp_reader reader;
    rlk_resp_arena arena;
    int protocol;             /* 2 or 3 once connected */
    uint64_t generation;
    uint64_t nsubs;           /* channels subscribed (RESP2 matters) */
    int pipelining;           /* replies must outlive buffer moves */
    int64_t last_io_ms;       /* when the last call started */
    rlk__backoff backoff;
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

static size_t str_size(const char *s) { return s ? strlen(s) + 1 : 0; }

static const char *copy_str(char **dst, const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    memcpy(*dst, s, n);
    const char *r = *dst;
    *dst += n;
    return r;
}

int rlk__conn_config_copy(rlk_conn_config *cfg, char **strings)
{
    const rlk_conn_config s = *cfg;
    size_t need = str_size(s.url) + str_size(s.client_name) +
                  str_size(s.tls.ca_file) + str_size(s.tls.ca_dir) +
                  str_size(s.tls.cert_file) + str_size(s.tls.key_file) +
                  str_size(s.tls.server_name);
    *strings = NULL;
    if (!need) return RLK_OK;
    char *p = *strings = rlk__malloc(need);
    if (!p) return RLK_ERR_NOMEM;
    cfg->url = copy_str(&p, s.url);
    cfg->client_name = copy_str(&p, s.client_name);
    cfg->tls.ca_file = copy_str(&p, s.tls.ca_file);
    cfg->tls.ca_dir = copy_str(&p, s.tls.ca_dir);
    cfg->tls.cert_file = copy_str(&p, s.tls.cert_file);
    cfg->tls.key_file = copy_str(&p, s.tls.key_file);
    cfg->tls.server_name = copy_str(&p, s.tls.server_name);
    return RLK_OK;
}

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
    rlk_buf_init(&c->rx);
    rlk_buf_init(&c->tx);
    /* One bound for a reply's bytes and, separately, for its tree: a
     * reply of many small elements costs ~80 bytes of nodes per element
     * of 4 bytes on the wire, so a bound on the bytes alone would let a
     * hostile server multiply them twentyfold in memory.  A bulk longer
     * than the bound is refused as soon as it is announced. */
    c->rx_max = c->cfg.max_reply_bytes;
    rlk_resp_limits lim = c->cfg.limits;
    if (!lim.max_bulk || lim.max_bulk > c->rx_max) lim.max_bulk = c->rx_max;
    rlk_resp_reader_init(&c->reader, &c->arena, &lim);
    /* The buffer never grows past the bound plus one read: doubling past
     * it would cost up to twice the bound. */
    c->rx.max = c->rx_max > SIZE_MAX - READ_CHUNK ? SIZE_MAX : c->rx_max + READ_CHUNK;
    rlk_resp_arena_init(&c->arena, c->arena_inline, sizeof c->arena_inline, c->rx_max);
    c->info.client_id = -1;

    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed)
        seed = (uint64_t)rlk__now_ms() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)c;
    rlk__backoff_init(&c->backoff, c->cfg.backoff_initial_ms, c->cfg.backoff_max_ms, seed);

    c->url_status = rlk__url_parse(&c->url, c->cfg.url, c->err, sizeof c->err);
    return c;
}

void rlk_conn_close(rlk_conn *c)
{
    rlk__transport_close(&c->t);
    c->rx.len = 0;
    c->rx_off = 0;
    c->tx.len = 0;
    c->nsubs = 0;
    rlk_resp_reader_reset(&c->reader);
    rlk_resp_arena_reset(&c->arena);
    c->info.tls_version = NULL;
    c->info.tls_cipher = NULL;
}

void rlk_conn_free(rlk_conn *c)
{
    if (!c) return;
    rlk_conn_close(c);
    rlk_buf_free(&c->rx);
    rlk_buf_free(&c->tx);
    rlk_resp_reader_free(&c->reader);
    rlk_resp_arena_free(&c->arena);
    rlk__url_free(&c->url);
    rlk__free(c->strings);
    rlk__free(c);
}

/* ------------------------------------------------------------------ */
/* Bytes in and out                                                     */

/* Forgets what the previous call handed out. */
static void begin_call(rlk_conn *c)
{
    rlk_buf_consume(&c->rx, c->rx_off);
    c->rx_off = 0;
    /* A reply cut short by a wait that timed out (rlk_conn_wait_push)
     * has its partial tree in the arena about to be reset: parse it again
     * from its first byte, which rx still holds. */
    if (!rlk_resp_parser_idle(&c->reader.parser)) rlk_resp_reader_reset(&c->reader);
    rlk_resp_arena_reset(&c->arena);
    c->tx.len = 0;
    c->pipelining = 0;
    c->reader.copy_strings = 0;
}

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

/* Whether the deadline passed.  Read after every push delivered and
 * every read that left a reply incomplete, never once per round trip:
 * a server that keeps sending keeps the socket readable, so waiting in
 * poll() alone would never time out. */
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
    set_err(c, RLK_ERR_TIMEOUT, "%s: timed out while the server kept sending", doing);
    return broken(c, RLK_ERR_TIMEOUT);
}

static int transport_failed(rlk_conn *c, int status, const char *doing)
{
    if (status == RLK_ERR_TIMEOUT)
        set_err(c, status, "%s: %s", doing, c->t.err[0] ? c->t.err : "timed out");
    else
        set_err(c, status, "%s: %s", doing, c->t.err[0] ? c->t.err : rlk_strerror(status));
    return broken(c, status);
}

/* Reads more bytes into rx.  Returns RLK_OK, or a failure that closed
 * the connection, or RLK_ERR_TIMEOUT without closing when keep_on_timeout
 * (an idle wait for push messages). */
static int fill(rlk_conn *c, int64_t deadline, const char *doing, int keep_on_timeout)
{
    if (c->rx.len - c->rx_off >= c->rx_max)
        return set_err(c, RLK_ERR_LIMIT, "%s: reply larger than %zu bytes", doing, c->rx_max),
               broken(c, RLK_ERR_LIMIT);
    if (c->rx_off > 0 && c->rx_off == c->rx.len && !c->pipelining) {
        /* Nothing pending: start at the buffer's beginning again. */
        c->rx.len = 0;
        c->rx_off = 0;
    } else if (c->pipelining && c->rx_off > 0 && c->rx.cap - c->rx.len < READ_CHUNK) {
        /* A pipeline's replies are copies (copy_strings): the bytes they
         * came from may go rather than grow the buffer. */
        rlk_buf_consume(&c->rx, c->rx_off);
        c->rx_off = 0;
    }
    int r = rlk_buf_reserve(&c->rx, READ_CHUNK);
    /* Near its bound the buffer takes a shorter read rather than none. */
    if (r == RLK_ERR_LIMIT) r = rlk_buf_reserve(&c->rx, c->rx.max - c->rx.len);
    if (r != RLK_OK) return set_err(c, r, "%s: out of memory", doing), broken(c, r);
    ssize_t n = rlk__transport_read_some(&c->t, c->rx.data + c->rx.len,
                                         c->rx.cap - c->rx.len, deadline);
    if (n > 0) {
        c->rx.len += (size_t)n;
        return RLK_OK;
    }
    if (n == 0) {
        set_err(c, RLK_ERR_IO, "%s: connection closed by the server", doing);
        return broken(c, RLK_ERR_IO);
    }
    if (n == RLK_ERR_TIMEOUT && keep_on_timeout) return RLK_ERR_TIMEOUT;
    return transport_failed(c, (int)n, doing);
}

static int flush_tx(rlk_conn *c, int64_t deadline, const char *doing)
{
    int r = rlk__transport_write_all(&c->t, c->tx.data, c->tx.len, deadline);
    c->tx.len = 0;
    if (r != RLK_OK) return transport_failed(c, r, doing);
    return RLK_OK;
}

static int bulk_is(const rlk_resp_value *v, const char *s)
{
    size_t n = strlen(s);
    return v && (v->type == RLK_RESP_BULK || v->type == RLK_RESP_SIMPLE) &&
           v->len == n && strncasecmp(v->str, s, n) == 0;
}

/* Subscription confirmations, as RESP3 pushes or RESP2 replies. */
static int is_sub_confirmation(const rlk_resp_value *v)
{
    const rlk_resp_value *k = v->child;
    return bulk_is(k, "subscribe") || bulk_is(k, "unsubscribe") ||
           bulk_is(k, "psubscribe") || bulk_is(k, "punsubscribe") ||
           bulk_is(k, "ssubscribe") || bulk_is(k, "sunsubscribe");
}

/* What is not a reply to a command: RESP3 pushes, and on a RESP2
 * connection that subscribed, published messages. */
static int is_push(const rlk_conn *c, const rlk_resp_value *v)
{
    if (v->type == RLK_RESP_PUSH) return 1;
    if (c->protocol == 2 && c->nsubs && v->type == RLK_RESP_ARRAY) {
        const rlk_resp_value *k = v->child;
        return bulk_is(k, "message") || bulk_is(k, "pmessage") || bulk_is(k, "smessage");
    }
    return 0;
}

static void after_push(rlk_conn *c)
{
    if (c->pipelining) return; /* earlier replies of the pipeline live on */
    rlk_buf_consume(&c->rx, c->rx_off);
    c->rx_off = 0;
    rlk_resp_arena_reset(&c->arena);
}

/* Parses what rx holds.  1 with *out set, 0 when more bytes are needed,
 * or a protocol failure (connection closed). */
static int parse_one(rlk_conn *c, rlk_resp_value **out, const char *doing)
{
    size_t used;
    int r = rlk_resp_read(&c->reader, c->rx.data + c->rx_off, c->rx.len - c->rx_off,
                          &used, out);
    if (r > 0) {
        c->rx_off += used;
        return 1;
    }
    if (r == 0) return 0;
    uint64_t at;
    const char *why;
    rlk_resp_parser_error(&c->reader.parser, &at, &why);
    /* The arena's blocks double: one that failed past half the bound
     * failed at the bound, not for want of memory. */
    if (r == RLK_ERR_NOMEM && (c->arena.first_cap + c->arena.heap_bytes) * 2 > c->arena.max_bytes) {
        set_err(c, RLK_ERR_LIMIT, "%s: reply from %s needs more than %zu bytes of memory "
                "(max_reply_bytes)", doing, c->t.peer, c->rx_max);
        return broken(c, RLK_ERR_LIMIT);
    }
    set_err(c, r, "%s: %s from %s at byte %llu of the connection: %s", doing,
            r == RLK_ERR_LIMIT ? "reply over a limit" : r == RLK_ERR_NOMEM ? "out of memory"
                                                                            : "protocol error",
            c->t.peer, (unsigned long long)at, why);
    return broken(c, r);
}

/* Delivers a push to the caller or drops a late confirmation. */
static void deliver_push(rlk_conn *c, rlk_resp_value *v)
{
    if (v->type == RLK_RESP_PUSH && is_sub_confirmation(v)) {
        /* Confirmations nobody waits for (after a timeout) are dropped. */
    } else if (c->cfg.on_push) {
        c->cfg.on_push(c->cfg.ctx, c, v);
    }
    after_push(c);
}

/* What next_reply waits for: a reply; or a RESP3 subscription
 * confirmation push taken as the reply. */
enum { NEXT_REPLY, NEXT_CONFIRM };

/* Reads the next reply, passing push messages on. */
static int next_reply(rlk_conn *c, int64_t deadline, int confirm,
                      rlk_resp_value **out, const char *doing)
{
    for (int read = 0;; read = 1) {
        int r = parse_one(c, out, doing);
        if (r < 0) return r;
        if (r > 0) {
            if (confirm == NEXT_CONFIRM && (*out)->type == RLK_RESP_PUSH &&
                is_sub_confirmation(*out))
                return RLK_OK;
            if (!is_push(c, *out)) return RLK_OK;
            deliver_push(c, *out);
            if (c->t.fd < 0) return set_err(c, RLK_ERR_CLOSED, "%s: connection closed by the push handler", doing);
            if (expired(deadline)) return timed_out(c, doing);
            continue;
        }
        if (read && expired(deadline)) return timed_out(c, doing);
        r = fill(c, deadline, doing, 0);
        if (r != RLK_OK) return r;
    }
}

/* Appends a command to tx as one array: its head words, then argv. */
static int encode_cmd(rlk_buf *b, const rlk__cmd *q)
{
    if (!q->nhead) return rlk_resp_append_command(b, q->argc, q->argv, q->argvlen);
    /* Room for all of it at once (a few bytes more: two array headers),
     * as rlk_resp_append_command takes it: the buffer grows once. */
    size_t need = rlk_resp_command_size(q->nhead, q->head, q->headlen);
    if (q->argc > 0) need += rlk_resp_command_size(q->argc, q->argv, q->argvlen);
    int r = rlk_buf_reserve(b, need);
    if (r == RLK_OK) r = rlk_resp_put_header(b, RLK_RESP_ARRAY, q->nhead + q->argc);
    for (int i = 0; r == RLK_OK && i < q->nhead; i++)
        r = rlk_resp_put_blob(b, RLK_RESP_BULK, NULL, q->head[i], q->headlen[i]);
    for (int i = 0; r == RLK_OK && i < q->argc; i++)
        r = rlk_resp_put_blob(b, RLK_RESP_BULK, NULL, q->argv[i],
                              q->argvlen ? q->argvlen[i] : strlen(q->argv[i]));
    return r;
}

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

/* One exchange on an open connection: no reconnect, no begin_call. */
static int exchange_cmd(rlk_conn *c, int64_t deadline, int confirm, rlk_resp_value **reply,
                        const rlk__cmd *q)
{
    char doing[40];
    command_name(doing, sizeof doing, q);
    int r = encode_cmd(&c->tx, q);
    if (r != RLK_OK) return set_err(c, r, "%s: cannot encode the command: %s", doing, rlk_strerror(r));
    r = flush_tx(c, deadline, doing);
    if (r != RLK_OK) return r;
    return next_reply(c, deadline, confirm, reply, doing);
}

static int exchange(rlk_conn *c, int64_t deadline, int confirm, rlk_resp_value **reply,
                    int argc, const char *const *argv, const size_t *argvlen)
{
    rlk__cmd q = {.argc = argc, .argv = argv, .argvlen = argvlen};
    return exchange_cmd(c, deadline, confirm, reply, &q);
}

/* ------------------------------------------------------------------ */
/* Handshake                                                            */

static void read_hello(rlk_conn *c, const rlk_resp_value *m)
{
    rlk__hello_info(&c->info, &c->protocol, m);
}

static int error_starts(const rlk_resp_value *v, const char *prefix)
{
    size_t n = strlen(prefix);
    return rlk__is_error(v) && v->len >= n && strncasecmp(v->str, prefix, n) == 0;
}

/* An error reply as a message: its first line, bounded. */
static int server_error(rlk_conn *c, int status, const char *what, const rlk_resp_value *v)
{
    int n = (int)(v->len > 300 ? 300 : v->len);
    return set_err(c, status, "%s: %.*s", what, n, v->str);
}

static int auth_error(rlk_conn *c, const char *what, const rlk_resp_value *v)
{
    if (error_starts(v, "WRONGPASS") || error_starts(v, "NOAUTH") ||
        error_starts(v, "NOPERM") || error_starts(v, "ERR invalid password") ||
        error_starts(v, "ERR invalid username") ||
        error_starts(v, "ERR AUTH") || error_starts(v, "ERR Client sent AUTH"))
        return server_error(c, RLK_ERR_AUTH, "authentication failed", v);
    return server_error(c, RLK_ERR_SERVER, what, v);
}

static int handshake(rlk_conn *c, int64_t deadline)
{
    const char *user = c->url.user, *pass = c->url.password;
    const char *name = c->cfg.client_name;
    rlk_resp_value *v;
    int r;
    const char *argv[7];
    int argc;

    c->protocol = 2;
    /* A user name without a password is never sent: the server's
     * default user is who we are then. */
    snprintf(c->info.user, sizeof c->info.user, "%s", user && pass ? user : "default");
    if (c->cfg.protocol != 2) {
        argc = 0;
        argv[argc++] = "HELLO";
        argv[argc++] = "3";
        if (pass) {
            argv[argc++] = "AUTH";
            argv[argc++] = user ? user : "default";
            argv[argc++] = pass;
        }
        if (name) {
            argv[argc++] = "SETNAME";
            argv[argc++] = name;
        }
        r = exchange(c, deadline, 0, &v, argc, argv, NULL);
        if (r != RLK_OK) return r;
        if (!rlk__is_error(v)) {
            if (v->type == RLK_RESP_MAP || v->type == RLK_RESP_ARRAY) read_hello(c, v);
            c->protocol = 3;
            goto select_db;
        }
        int unknown = error_starts(v, "ERR unknown command") || error_starts(v, "NOPROTO") ||
                      error_starts(v, "ERR unknown subcommand") ||
                      error_starts(v, "ERR Syntax error");
        if (!unknown || c->cfg.protocol == 3)
            return auth_error(c, "HELLO 3 refused", v);
        rlk_resp_arena_reset(&c->arena);
    }
    /* RESP2: AUTH, then CLIENT SETNAME. */
    if (pass) {
        argc = 0;
        argv[argc++] = "AUTH";
        if (user) argv[argc++] = user;
        argv[argc++] = pass;
        r = exchange(c, deadline, 0, &v, argc, argv, NULL);
        if (r != RLK_OK) return r;
        if (rlk__is_error(v)) return auth_error(c, "AUTH refused", v);
    }
    if (name) {
        argv[0] = "CLIENT";
        argv[1] = "SETNAME";
        argv[2] = name;
        r = exchange(c, deadline, 0, &v, 3, argv, NULL);
        if (r != RLK_OK) return r;
        if (error_starts(v, "NOAUTH")) return auth_error(c, "CLIENT SETNAME", v);
        /* Servers without CLIENT SETNAME still serve locks: go on. */
    }
select_db:
    c->info.protocol = c->protocol;
    if (c->url.db != 0) {
        char db[24];
        snprintf(db, sizeof db, "%d", c->url.db);
        argv[0] = "SELECT";
        argv[1] = db;
        r = exchange(c, deadline, 0, &v, 2, argv, NULL);
        if (r != RLK_OK) return r;
        if (rlk__is_error(v)) {
            if (error_starts(v, "NOAUTH")) return auth_error(c, "SELECT", v);
            return server_error(c, RLK_ERR_SERVER, "SELECT refused", v);
        }
    }
    c->info.db = c->url.db;
    return RLK_OK;
}

static int connect_once(rlk_conn *c)
{
    if (c->url_status != RLK_OK) return c->url_status == RLK_ERR_NOMEM
        ? set_err(c, RLK_ERR_NOMEM, "out of memory parsing the URL") : RLK_ERR_URL;
    rlk_conn_close(c);
    c->err[0] = '\0';
    memset(&c->info, 0, sizeof c->info);
    c->info.client_id = -1;
    int64_t deadline = deadline_after(c, c->cfg.connect_timeout_ms);
    int r = rlk__connect_url(&c->t, &c->url, &c->cfg.tls, deadline);
    if (r != RLK_OK) {
        set_err(c, r, "%s", c->t.err[0] ? c->t.err : rlk_strerror(r));
        return broken(c, r);
    }
    snprintf(c->info.peer, sizeof c->info.peer, "%s", c->t.peer);
    c->info.tls_version = rlk__tls_version(&c->t);
    c->info.tls_cipher = rlk__tls_cipher(&c->t);
    begin_call(c);
    r = handshake(c, deadline);
    rlk_resp_arena_reset(&c->arena);
    if (r != RLK_OK) {
        if (c->t.fd >= 0) broken(c, r);
        return r;
    }
    c->generation++;
    if (c->cfg.on_connect) c->cfg.on_connect(c->cfg.ctx, c, c->generation > 1);
    return RLK_OK;
}

int rlk_conn_connect(rlk_conn *c)
{
    return connect_once(c);
}

/* Failures worth another try: the server may come back or finish
 * loading.  Bad URLs, TLS verification and authentication will not. */
int rlk__transient(int status)
{
    return status == RLK_ERR_CONNECT || status == RLK_ERR_TIMEOUT ||
           status == RLK_ERR_IO || status == RLK_ERR_CLOSED;
}

void rlk__pause_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int rlk_conn_reconnect(rlk_conn *c)
{
    int attempts = c->cfg.reconnect_attempts > 0 ? c->cfg.reconnect_attempts : 1;
    int r = RLK_ERR_CLOSED;
    rlk__backoff_reset(&c->backoff);
    for (int i = 0; i < attempts; i++) {
        if (i > 0) {
            int64_t p = rlk__backoff_next(&c->backoff);
            int left = rlk__ms_left(c->cap);
            if (left >= 0 && p > left) p = left;
            rlk__pause_ms(p);
        }
        if (i > 0 && expired(c->cap)) {
            char last[sizeof c->err];
            memcpy(last, c->err, sizeof last);
            return set_err(c, RLK_ERR_TIMEOUT, "reconnect: the call's deadline came after %d "
                           "tries (last: %.400s)", i, last);
        }
        r = connect_once(c);
        if (r == RLK_OK || !rlk__transient(r)) return r;
    }
    return r;
}

/* A server that closed the connection while it sat idle (a restart, an
 * idle timeout, CLIENT KILL) has left an end of file, or a reset, to be
 * read.  Found before anything is sent, it closes the connection, and
 * reconnecting is safe: no command can have been lost.  Bytes found
 * instead (push messages) stay in rx for the call.  1 when it closed. */
static int idle_close(rlk_conn *c, int64_t now)
{
    /* Only a connection left idle a while: a server restarts, a proxy
     * drops an idle connection, over milliseconds at least; checking on
     * every command would cost a system call per round trip.  A close
     * that lands inside the window fails the command instead (it is
     * never re-sent). */
    if (c->t.fd < 0) return 0;
    if (c->cfg.stale_check_ms >= 0 && now - c->last_io_ms < c->cfg.stale_check_ms) return 0;
    if (rlk__transport_wait_readable(&c->t, now) != 1) return 0;
    return fill(c, rlk__now_ms(), "idle connection", 1) != RLK_OK && c->t.fd < 0;
}

/* Bytes that came while no command was waiting.  Push messages are
 * delivered; anything else (a reply sent twice, a reply to a command
 * that gave up) means the stream is out of step, and the connection is
 * closed before the next command can take those bytes for its own
 * reply.  Sees only what is buffered or what idle_close read: looking
 * at the socket before every command would cost a system call per round
 * trip.  RLK_OK, or the failure that closed c. */
static int out_of_step(rlk_conn *c)
{
    begin_call(c);
    while (c->rx.len > 0) {
        rlk_resp_value *v;
        int r = parse_one(c, &v, "idle connection");
        if (r < 0) return r;
        if (r == 0) {
            /* Incomplete: only a push (or its attribute) may be pending. */
            char b = c->rx.data[0];
            if (b == '>' || b == '|' || (c->protocol == 2 && c->nsubs)) return 0;
            break;
        }
        if (!is_push(c, v) && v->type != RLK_RESP_PUSH) break;
        deliver_push(c, v);
        if (c->t.fd < 0) return set_err(c, RLK_ERR_CLOSED, "connection closed by the push handler");
    }
    if (c->rx.len == 0) return RLK_OK;
    set_err(c, RLK_ERR_PROTO, "a reply arrived while no command was waiting: the connection "
            "to %s was out of step", c->t.peer);
    return broken(c, RLK_ERR_PROTO);
}

/* Before a call at time now: a closed connection is re-established if
 * allowed.  The call counts as activity for the stale check. */
static int ensure_connected(rlk_conn *c, int64_t now)
{
    int closed = idle_close(c, now);
    c->last_io_ms = now;
    if (c->t.fd >= 0 && c->rx.len > c->rx_off) {
        /* Nothing was sent yet: reconnecting loses no command. */
        int r = out_of_step(c);
        if (r != RLK_OK && c->cfg.reconnect_attempts < 0) return r;
    }
    if (c->t.fd >= 0) return RLK_OK;
    if (c->cfg.reconnect_attempts < 0) {
        if (c->generation == 0) return connect_once(c);
        return set_err(c, RLK_ERR_CLOSED, closed ? "not connected: the server closed the "
                                                   "connection, and reconnecting is off"
                                                 : "not connected");
    }
    return rlk_conn_reconnect(c);
}

int rlk__conn_ensure(rlk_conn *c)
{
    return ensure_connected(c, rlk__now_ms());
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
    if (c->protocol != 2 || !c->nsubs || name_is(name, n, "PING")) return RLK_OK;
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

int rlk__conn_command(rlk_conn *c, rlk_resp_value **reply, const rlk__cmd *q)
{
    *reply = NULL;
    if (!cmd_ok(q)) return set_err(c, RLK_ERR_INVALID, "empty command");
    int64_t now = rlk__now_ms();
    int r = ensure_connected(c, now);
    if (r != RLK_OK) return r;
    r = check_command(c, q);
    if (r != RLK_OK) return r;
    begin_call(c);
    return exchange_cmd(c, deadline_from(c, now, c->cfg.command_timeout_ms), 0, reply, q);
}

int rlk_conn_command(rlk_conn *c, rlk_resp_value **reply, int argc,
                     const char *const *argv, const size_t *argvlen)
{
    rlk__cmd q = {.argc = argc, .argv = argv, .argvlen = argvlen};
    return rlk__conn_command(c, reply, &q);
}

/* ------------------------------------------------------------------ */
/* Pipelines                                                            */

/* Sends tx and reads n replies into out[], overlapping the two so that
 * neither side's buffers can fill up and stall the other. */
static int run_pipeline(rlk_conn *c, int64_t deadline, size_t n, rlk_resp_value **out)
{
    size_t sent = 0, got = 0;
    const char *doing = "pipeline";
    int read = 0;
    /* Where the replies gathered so far end: a push delivered meanwhile
     * gives its memory back, or a flood of them would fill the arena. */
    rlk_resp_arena_mark kept;
    rlk_resp_arena_mark_at(&c->arena, &kept);
    while (got < n) {
        int r = parse_one(c, &out[got], doing);
        if (r < 0) return r;
        if (r > 0) {
            if (is_push(c, out[got])) {
                deliver_push(c, out[got]);
                if (c->t.fd < 0)
                    return set_err(c, RLK_ERR_CLOSED, "%s: connection closed by the push handler",
                                   doing);
                rlk_resp_arena_rewind(&c->arena, &kept);
                if (expired(deadline)) return timed_out(c, doing);
                continue;
            }
            got++;
            rlk_resp_arena_mark_at(&c->arena, &kept);
            continue;
        }
        if (read && expired(deadline)) return timed_out(c, doing);
        struct pollfd pfd = {c->t.fd, POLLIN, 0};
        if (sent < c->tx.len) {
            ssize_t w = c->t.ops->write(&c->t, c->tx.data + sent, c->tx.len - sent);
            if (w > 0) {
                sent += (size_t)w;
                continue;
            }
            if (w == RLK__WANT_WRITE) pfd.events |= POLLOUT;
            else if (w != RLK__WANT_READ) return transport_failed(c, (int)w, doing);
        }
        if (!c->t.ops->pending || !c->t.ops->pending(&c->t)) {
            int pr = poll(&pfd, 1, rlk__ms_left(deadline));
            if (pr < 0 && errno != EINTR)
                return set_err(c, RLK_ERR_IO, "%s: poll: %s", doing, strerror(errno)),
                       broken(c, RLK_ERR_IO);
            if (pr == 0) {
                set_err(c, RLK_ERR_TIMEOUT, "%s: timed out with %zu of %zu replies", doing, got, n);
                return broken(c, RLK_ERR_TIMEOUT);
            }
            if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        }
        r = fill(c, deadline, doing, 0);
        if (r != RLK_OK) return r;
        read = 1;
    }
    c->tx.len = 0;
    return RLK_OK;
}

int rlk__conn_pipeline(rlk_conn *c, size_t n, const rlk__cmd *cmds, rlk_resp_value **replies,
                       int more)
{
    for (size_t i = 0; i < n; i++) replies[i] = NULL;
    if (n == 0) return RLK_OK;
    int r;
    if (more) {
        /* The replies of the part before live in the arena and rx. */
        if (c->t.fd < 0 || !c->pipelining)
            return set_err(c, RLK_ERR_CLOSED, "pipeline: no pipeline to go on with");
        c->tx.len = 0;
    } else {
        r = ensure_connected(c, rlk__now_ms());
        if (r != RLK_OK) return r;
        begin_call(c);
        c->pipelining = 1;
        c->reader.copy_strings = 1;
    }
    int64_t deadline = deadline_after(c, c->cfg.command_timeout_ms);
    for (size_t i = 0; i < n; i++) {
        if (!cmd_ok(&cmds[i]))
            return set_err(c, RLK_ERR_INVALID, "pipeline request %zu is malformed", i);
        r = check_command(c, &cmds[i]);
        if (r != RLK_OK) return r;
        r = encode_cmd(&c->tx, &cmds[i]);
        if (r != RLK_OK) return set_err(c, r, "pipeline: cannot encode request %zu", i);
    }
    return run_pipeline(c, deadline, n, replies);
}

/* ------------------------------------------------------------------ */
/* Pub/sub                                                              */

static int sub_command(rlk_conn *c, const char *verb, const char *channel, size_t len)
{
    int r = ensure_connected(c, rlk__now_ms());
    if (r != RLK_OK) return r;
    begin_call(c);
    const char *argv[2] = {verb, channel};
    size_t lens[2] = {strlen(verb), len};
    int64_t deadline = deadline_after(c, c->cfg.command_timeout_ms);
    rlk_resp_value *v;
    r = exchange(c, deadline, NEXT_CONFIRM, &v, 2, argv, lens);
    if (r != RLK_OK) return r;
    if (rlk__is_error(v)) return server_error(c, RLK_ERR_SERVER, verb, v);
    /* [kind, channel, count]: the count of channels still subscribed. */
    const rlk_resp_value *cnt = rlk_resp_value_at(v, 2);
    if (!is_sub_confirmation(v) || !cnt || cnt->type != RLK_RESP_INTEGER) {
        set_err(c, RLK_ERR_PROTO, "%s: unexpected reply", verb);
        return broken(c, RLK_ERR_PROTO);
    }
    c->nsubs = cnt->integer > 0 ? (uint64_t)cnt->integer : 0;
    return RLK_OK;
}

int rlk_conn_subscribe(rlk_conn *c, const char *channel, size_t len)
{
    return sub_command(c, "SUBSCRIBE", channel, len);
}

int rlk_conn_unsubscribe(rlk_conn *c, const char *channel, size_t len)
{
    return sub_command(c, "UNSUBSCRIBE", channel, len);
}

/*
 * Reads what comes while no command waits: push messages go to on_push.
 * Returns 1 at the first push message (not a subscription confirmation)
 * or 0 at the deadline.  A failure closes c.
 */
static int read_idle(rlk_conn *c, int64_t deadline, const char *doing)
{
    for (int read = 0;; read = 1) {
        rlk_resp_value *v;
        int r = parse_one(c, &v, doing);
        if (r < 0) return r;
        if (r > 0) {
            if (!is_push(c, v) && !(v->type == RLK_RESP_PUSH)) {
                set_err(c, RLK_ERR_PROTO, "a reply arrived while no command was waiting");
                return broken(c, RLK_ERR_PROTO);
            }
            int confirmation = v->type == RLK_RESP_PUSH && is_sub_confirmation(v);
            deliver_push(c, v);
            if (!confirmation) return 1;
            if (c->t.fd < 0 || expired(deadline)) return 0;
            continue;
        }
        /* A partial reply stays in rx: the next call parses it again. */
        if (read && expired(deadline)) return 0;
        r = fill(c, deadline, doing, 1);
        if (r == RLK_ERR_TIMEOUT) return 0;
        if (r != RLK_OK) return r;
    }
}

int rlk_conn_wait_push(rlk_conn *c, int timeout_ms)
{
    if (c->t.fd < 0) return set_err(c, RLK_ERR_CLOSED, "not connected");
    begin_call(c);
    return read_idle(c, deadline_after(c, timeout_ms), "waiting for messages");
}

/* ------------------------------------------------------------------ */

rlk_error_class rlk_reply_error_class(const rlk_resp_value *v) { return rlk__reply_class(v); }

void rlk_conn_set_timeouts(rlk_conn *c, int connect_ms, int command_ms)
{
    if (connect_ms > 0) c->cfg.connect_timeout_ms = connect_ms;
    if (command_ms) c->cfg.command_timeout_ms = command_ms;
}
