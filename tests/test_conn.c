/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connection and script layers (rlk_conn_*, rlk_script_*) against
 * real redis-server processes on free loopback ports: TCP, IPv6, Unix
 * sockets, passwords and ACL users, SELECT, RESP2 and RESP3, TLS with and
 * without client certificates, pipelines, push messages, scripts,
 * restarts.  Scripted fake servers stand in where a real server cannot
 * misbehave on purpose: a RESP2-only server, slow, oversized, garbled and
 * truncated replies, scripted error codes.  All traffic stays on the
 * loopback interface; every wait is bounded by a deadline.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "conn_internal.h"
#include "conntest.h"
#include "fakeserver.h"
#include "resplock.h"
#include "server.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MARGIN_MS 1500  /* how late a deadline may fire (valgrind, loaded CI) */
#define TLS_DEADLINE_MS 3000

/* ------------------------------------------------------------------ */
/* Helpers                                                             */


/* A counting allocator for the library: live and peak bytes, so tests
 * can tell that a hostile reply did not make the library hold much. */
static long long mem_live, mem_peak;
#define HDR 16

static void note_alloc(long long n)
{
    long long live = __atomic_add_fetch(&mem_live, n, __ATOMIC_SEQ_CST);
    long long peak = __atomic_load_n(&mem_peak, __ATOMIC_SEQ_CST);
    while (live > peak &&
           !__atomic_compare_exchange_n(&mem_peak, &peak, live, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
        ;
}

static void *cnt_malloc(void *ctx, size_t n)
{
    unsigned char *p = malloc(n + HDR);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    note_alloc((long long)n);
    return p + HDR;
}

static void cnt_free(void *ctx, void *q)
{
    size_t n;
    unsigned char *p = q;
    if (!p) return;
    p -= HDR;
    memcpy(&n, p, sizeof n);
    note_alloc(-(long long)n);
    free(p);
}

static void *cnt_realloc(void *ctx, void *q, size_t n)
{
    size_t old = 0;
    unsigned char *p = q, *np;
    if (!p) return cnt_malloc(ctx, n);
    p -= HDR;
    memcpy(&old, p, sizeof old);
    np = realloc(p, n + HDR);
    if (!np) return NULL;
    memcpy(np, &n, sizeof n);
    /* Both blocks may exist at once while realloc copies. */
    note_alloc((long long)n);
    note_alloc(-(long long)old);
    return np + HDR;
}

static long long mem_reset_peak(void)
{
    long long live = __atomic_load_n(&mem_live, __ATOMIC_SEQ_CST);
    __atomic_store_n(&mem_peak, live, __ATOMIC_SEQ_CST);
    return live;
}

/* What callbacks saw: pub/sub payloads in order, and connects. */
struct rec {
    int npush, bad_push;
    char push[128][48];
    char channel[48];
    int connects, last_reconnected;
};

static void rec_push(void *ctx, rlk_conn *c, const rlk_resp_value *m)
{
    struct rec *r = ctx;
    const rlk_resp_value *kind = rlk_resp_value_at(m, 0), *ch = rlk_resp_value_at(m, 1),
                         *p = rlk_resp_value_at(m, 2);
    if (!kind || !ch || !p || kind->len != 7 || memcmp(kind->str, "message", 7) != 0 ||
        r->npush == 128) {
        r->bad_push++;
        return;
    }
    snprintf(r->channel, sizeof r->channel, "%.*s", (int)ch->len, ch->str);
    snprintf(r->push[r->npush++], sizeof r->push[0], "%.*s", (int)p->len, p->str);
}

static void rec_connect(void *ctx, rlk_conn *c, int reconnected)
{
    struct rec *r = ctx;
    r->connects++;
    r->last_reconnected = reconnected;
}

/* Status of a command given as NULL-terminated words. */
static int cmd_status(rlk_conn *c, rlk_resp_value **v, ...)
{
    const char *argv[33];
    int argc;
    va_list ap;
    va_start(ap, v);
    argc = collect_args(argv, ap);
    va_end(ap);
    return rlk_conn_command(c, v, argc, argv, NULL);
}
#define STATUS(c, v, ...) cmd_status(c, v, __VA_ARGS__, (const char *)NULL)

static int is_str(const rlk_resp_value *v, const char *s)
{
    size_t n = strlen(s);
    return v &&
           (v->type == RLK_RESP_SIMPLE || v->type == RLK_RESP_BULK ||
            v->type == RLK_RESP_VERBATIM) &&
           v->len == n && memcmp(v->str, s, n) == 0;
}

static int is_int(const rlk_resp_value *v, long long i)
{
    return v && v->type == RLK_RESP_INTEGER && v->integer == i;
}

static int is_err(const rlk_resp_value *v)
{
    return v && (v->type == RLK_RESP_ERROR || v->type == RLK_RESP_BLOB_ERROR);
}

/* Check a reply once (the argument may be a command: evaluated once). */
static int check_str(const rlk_resp_value *v, const char *want, const char *what, int line)
{
    return tl_ok(is_str(v, want), __FILE__, line, "%s: not \"%s\" (type %c, \"%.*s\")", what,
                 want, v ? v->type : '?', v && v->str ? (int)v->len : 0,
                 v && v->str ? v->str : "");
}

static int check_int(const rlk_resp_value *v, long long want, const char *what, int line)
{
    return tl_ok(is_int(v, want), __FILE__, line, "%s: not integer %lld (type %c, %lld)", what,
                 want, v ? v->type : '?', v ? (long long)v->integer : 0LL);
}
#define CHECK_STR(v, s) check_str(v, s, #v, __LINE__)
#define CHECK_INT(v, i) check_int(v, i, #v, __LINE__)

/* A copy of a string reply, NUL-terminated, or "". */
static void copy_reply(char *out, size_t n, const rlk_resp_value *v)
{
    size_t len = v && v->str ? (v->len < n - 1 ? v->len : n - 1) : 0;
    if (len) memcpy(out, v->str, len);
    out[len] = '\0';
}

/* ------------------------------------------------------------------ */
/* Servers, started once and shared                                    */

static ts_server *plain_srv, *auth_srv, *v6_srv, *restart_srv;
static ts_server *tls_main, *tls_mtls, *tls_wrong_host, *tls_expired;
static const char *const PASSWORD = "p@ss:w/rd%"; /* URL: p%40ss%3Aw%2Frd%25 */
static const char *const PASSWORD_URL = "p%40ss%3Aw%2Frd%25";

static ts_server *get_plain(void)
{
    if (!plain_srv) {
        ts_options o;
        memset(&o, 0, sizeof o);
        o.unix_socket = 1;
        plain_srv = ts_start(&o);
    }
    return plain_srv;
}

static ts_server *get_auth(void)
{
    if (!auth_srv) {
        ts_options o;
        memset(&o, 0, sizeof o);
        o.password = PASSWORD;
        auth_srv = ts_start(&o);
    }
    return auth_srv;
}

/* ------------------------------------------------------------------ */
/* Fake servers                                                        */

/* What a scripted fake received, for tests that check what was sent. */
struct fake_log {
    pthread_mutex_t mu;
    int resp2;        /* answer HELLO as a server that does not know it */
    const char *hello_refusal; /* with resp2: this error instead */
    int n;
    char cmd[64][128];
};

static void log_init(struct fake_log *l, int resp2)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
    l->resp2 = resp2;
}

static void log_command(struct fake_log *l, int argc, char **argv)
{
    int i;
    pthread_mutex_lock(&l->mu);
    if (l->n < 64) {
        char *p = l->cmd[l->n];
        size_t left = sizeof l->cmd[0];
        p[0] = '\0';
        for (i = 0; i < argc; i++) {
            size_t used = strlen(p);
            snprintf(p + used, left - used, "%s%s", i ? " " : "", argv[i]);
        }
        l->n++;
    }
    pthread_mutex_unlock(&l->mu);
}

static int log_count(struct fake_log *l, const char *cmd)
{
    int i, n = 0;
    pthread_mutex_lock(&l->mu);
    for (i = 0; i < l->n; i++) n += strcmp(l->cmd[i], cmd) == 0;
    pthread_mutex_unlock(&l->mu);
    return n;
}

static int log_prefix_count(struct fake_log *l, const char *prefix)
{
    int i, n = 0;
    pthread_mutex_lock(&l->mu);
    for (i = 0; i < l->n; i++) n += strncmp(l->cmd[i], prefix, strlen(prefix)) == 0;
    pthread_mutex_unlock(&l->mu);
    return n;
}

static int ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if ((*a | 0x20) != (*b | 0x20)) return 0;
    return *a == *b;
}

#define HELLO3_REPLY                                                                       \
    "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.9.9\r\n$5\r\nproto\r\n:3\r\n" \
    "$2\r\nid\r\n:42\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n"     \
    "$7\r\nmodules\r\n*0\r\n"

/*
 * A scripted server (arg: struct fake_log).  HELLO is answered as Redis 7
 * does (or refused as by Redis 5 when log->resp2), then:
 *   RAW bytes      sends bytes as they are (any reply, good or bad)
 *   DRIP bytes     sends them one byte per 100 ms
 *   CLOSE [bytes]  sends bytes (if any) and closes
 *   BIGBULK        declares a 2,000,000-byte bulk and sends it all
 *   HOLD           never answers
 *   PING, ECHO     as Redis; anything else: +OK
 * Every command is logged.
 */
static void fake_scripted(fake_conn *fc, void *arg)
{
    struct fake_log *l = arg;
    char **argv, line[64];
    int argc;
    for (;;) {
        argc = fake_read_command(fc, &argv, -1, NULL);
        if (argc <= 0) return;
        log_command(l, argc, argv);
        if (ieq(argv[0], "HELLO")) {
            if (fake_send_str(fc, !l->resp2          ? HELLO3_REPLY
                                  : l->hello_refusal ? l->hello_refusal
                                                     : "-ERR unknown command 'HELLO', with args "
                                                       "beginning with: '3' \r\n"))
                return;
        } else if (ieq(argv[0], "RAW") && argc == 2) {
            if (fake_send_str(fc, argv[1])) return;
        } else if (ieq(argv[0], "DRIP") && argc == 2) {
            const char *s;
            for (s = argv[1]; *s; s++)
                if (fake_send(fc, s, 1) != 0 || fake_pause(fc, 100) != 0) return;
        } else if (ieq(argv[0], "CLOSE")) {
            if (argc == 2) fake_send_str(fc, argv[1]);
            return;
        } else if (ieq(argv[0], "BIGBULK")) {
            static char chunk[65536];
            size_t sent = 0;
            memset(chunk, 'x', sizeof chunk);
            if (fake_send_str(fc, "$2000000\r\n")) return;
            while (sent < 2000000) {
                size_t n = 2000000 - sent < sizeof chunk ? 2000000 - sent : sizeof chunk;
                if (fake_send(fc, chunk, n)) return;
                sent += n;
            }
            if (fake_send_str(fc, "\r\n")) return;
        } else if (ieq(argv[0], "HOLD")) {
            fake_hold(fc);
            return;
        } else if (ieq(argv[0], "PING")) {
            if (fake_send_str(fc, "+PONG\r\n")) return;
        } else if (ieq(argv[0], "ECHO") && argc == 2) {
            snprintf(line, sizeof line, "$%zu\r\n", strlen(argv[1]));
            if (fake_send_str(fc, line) || fake_send_str(fc, argv[1]) ||
                fake_send_str(fc, "\r\n"))
                return;
        } else {
            if (fake_send_str(fc, "+OK\r\n")) return;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Plain TCP, IPv6, Unix sockets                                       */

static void test_tcp_handshake(void)
{
    ts_server *s = get_plain();
    rlk_conn_config cfg;
    rlk_conn *c;
    rlk_resp_value *v;
    const rlk_conn_info *info;
    struct rec rec;
    char url[128], peer[64], buf[512];
    int rc;
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    memset(&rec, 0, sizeof rec);
    cfg_init(&cfg, url);
    cfg.client_name = "conn-test-1";
    cfg.on_connect = rec_connect;
    cfg.ctx = &rec;
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) return;
    /* The library allocates through the counting hook (see main). */
    CHECK(__atomic_load_n(&mem_live, __ATOMIC_SEQ_CST) > 0);
    CHECK_EQ_INT(rlk_conn_is_connected(c), 0);
    CHECK_EQ_INT(rlk_conn_fd(c), -1);
    CHECK_EQ_U64(rlk_conn_generation(c), 0);
    rc = rlk_conn_connect(c);
    if (!CHECK_MSG(rc == RLK_OK, "connect: %d %s", rc, rlk_conn_errmsg(c))) goto out;
    CHECK_EQ_STR(rlk_conn_errmsg(c), "");
    CHECK_EQ_INT(rlk_conn_is_connected(c), 1);
    CHECK(rlk_conn_fd(c) >= 0);
    CHECK_EQ_U64(rlk_conn_generation(c), 1);
    CHECK_EQ_INT(rec.connects, 1);
    CHECK_EQ_INT(rec.last_reconnected, 0);

    info = rlk_conn_get_info(c);
    CHECK_EQ_INT(info->protocol, 3);
    /* HELLO's server and version: what the server says it is in INFO
     * (Valkey: "valkey" and its own version). */
    struct server_id id;
    if (SERVER_ID(c, &id)) {
        CHECK_EQ_STR(info->server, id.name);
        CHECK_EQ_STR(info->version, id.version);
    }
    CHECK_EQ_STR(info->user, "default");
    CHECK(info->tls_version == NULL && info->tls_cipher == NULL);
    snprintf(peer, sizeof peer, "127.0.0.1:%d", s->port);
    CHECK_EQ_STR(info->peer, peer);
    CHECK_EQ_INT(info->db, 0);
    CHECK(info->client_id > 0);
    v = CMD(c, "CLIENT", "ID");
    CHECK_INT(v, info->client_id);

    v = CMD(c, "CLIENT", "GETNAME");
    CHECK_STR(v, "conn-test-1");
    v = CMD(c, "CLIENT", "INFO");
    copy_reply(buf, sizeof buf, v);
    CHECK_MSG(ts_contains(buf, "name=conn-test-1 "), "CLIENT INFO: %s", buf);
    CHECK_MSG(ts_contains(buf, "resp=3"), "CLIENT INFO: %s", buf);

    /* Replies are RESP3: a map for HGETALL, a double, a null. */
    CMD(c, "DEL", "h");
    CHECK_INT(CMD(c, "HSET", "h", "f", "v"), 1);
    v = CMD(c, "HGETALL", "h");
    CHECK_MSG(v && v->type == RLK_RESP_MAP && v->len == 1, "HGETALL type %c", v ? v->type : '?');
    v = CMD(c, "GET", "no-such-key");
    CHECK(v && v->type == RLK_RESP_NULL);

    /* A server error is a reply, and the connection goes on. */
    CHECK_STR(CMD(c, "SET", "str", "abc"), "OK");
    v = CMD(c, "INCR", "str");
    CHECK(is_err(v) && v->len > 0 && ts_contains(v->str, "not an integer"));
    CHECK_EQ_INT(rlk_conn_is_connected(c), 1);
    CHECK_STR(CMD(c, "PING"), "PONG");

    /* An empty command is refused without touching the server. */
    rc = rlk_conn_command(c, &v, 0, NULL, NULL);
    CHECK_EQ_INT(rc, RLK_ERR_INVALID);
    CHECK(v == NULL);
    CHECK_EQ_INT(rlk_conn_is_connected(c), 1);
    CHECK_STR(CMD(c, "PING"), "PONG");

    rlk_conn_close(c);
    CHECK_EQ_INT(rlk_conn_is_connected(c), 0);
    CHECK_EQ_INT(rlk_conn_fd(c), -1);
out:
    rlk_conn_free(c);
}

/* A command on a connection never connected connects first. */
static void test_tcp_connect_on_first_command(void)
{
    ts_server *s = get_plain();
    rlk_conn_config cfg;
    rlk_conn *c;
    struct rec rec;
    char url[128];
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    memset(&rec, 0, sizeof rec);
    cfg_init(&cfg, url);
    cfg.on_connect = rec_connect;
    cfg.ctx = &rec;
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) return;
    /* Waiting for messages does not connect. */
    CHECK_EQ_INT(rlk_conn_wait_push(c, 10), RLK_ERR_CLOSED);
    CHECK_EQ_INT(rec.connects, 0);
    CHECK_STR(CMD(c, "PING"), "PONG");
    CHECK_EQ_U64(rlk_conn_generation(c), 1);
    CHECK_EQ_INT(rec.connects, 1);
    CHECK_EQ_INT(rec.last_reconnected, 0);
    rlk_conn_free(c);

    /* Also with reconnecting off: the first connect is not a reconnect. */
    cfg.reconnect_attempts = -1;
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) return;
    CHECK_STR(CMD(c, "PING"), "PONG");
    CHECK_EQ_U64(rlk_conn_generation(c), 1);
    rlk_conn_free(c);
}

static void test_binary_and_large_values(void)
{
    ts_server *s = get_plain();
    rlk_conn *c;
    rlk_resp_value *v;
    char url[128], *big;
    const char *argv[3];
    size_t lens[3], i, n = 1 << 20;
    int rc;
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    c = CONNECT(url);
    big = malloc(n);
    if (!c || !CHECK(big != NULL)) goto out;
    for (i = 0; i < n; i++) big[i] = (char)(i * 7 + (i >> 9));
    argv[0] = "SET";
    argv[1] = "bin\0key";
    argv[2] = big;
    lens[0] = 3;
    lens[1] = 7;
    lens[2] = n;
    rc = rlk_conn_command(c, &v, 3, argv, lens);
    CHECK_MSG(rc == RLK_OK && is_str(v, "OK"), "SET: %d %s", rc, rlk_conn_errmsg(c));
    argv[0] = "GET";
    lens[0] = 3;
    rc = rlk_conn_command(c, &v, 2, argv, lens);
    CHECK_EQ_INT(rc, RLK_OK);
    if (CHECK(v && v->type == RLK_RESP_BULK)) CHECK_EQ_MEM(v->str, v->len, big, n);
    /* The key with the NUL is not the key cut at the NUL. */
    v = CMD(c, "EXISTS", "bin");
    CHECK_INT(v, 0);
out:
    free(big);
    rlk_conn_free(c);
}

static void test_ipv6(void)
{
    ts_options o;
    rlk_conn *c;
    char url[128], peer[64];
    if (!ts_have_ipv6()) {
        printf("SKIP test_ipv6: no ::1 on this machine\n");
        return;
    }
    if (!v6_srv) {
        memset(&o, 0, sizeof o);
        o.ipv6 = 1;
        v6_srv = ts_start(&o);
    }
    if (!CHECK(v6_srv != NULL)) return;
    snprintf(url, sizeof url, "redis://[::1]:%d/2", v6_srv->port);
    c = CONNECT(url);
    if (!c) return;
    snprintf(peer, sizeof peer, ":%d", v6_srv->port);
    CHECK_MSG(ts_contains(rlk_conn_get_info(c)->peer, "::1") &&
                  ts_contains(rlk_conn_get_info(c)->peer, peer),
              "peer %s", rlk_conn_get_info(c)->peer);
    CHECK_EQ_INT(rlk_conn_get_info(c)->protocol, 3);
    CHECK_EQ_INT(rlk_conn_get_info(c)->db, 2);
    CHECK_STR(CMD(c, "SET", "v6key", "here"), "OK");
    CHECK_STR(CMD(c, "GET", "v6key"), "here");
    rlk_conn_free(c);
}

static void test_unix_socket(void)
{
    ts_server *s = get_plain();
    rlk_conn *c, *other;
    rlk_resp_value *v;
    char url[400], tcp[128];
    if (!CHECK(s != NULL && s->unix_path[0])) return;
    snprintf(url, sizeof url, "unix://%s", s->unix_path);
    c = CONNECT(url);
    if (!c) return;
    CHECK_EQ_STR(rlk_conn_get_info(c)->peer, s->unix_path);
    CHECK_EQ_INT(rlk_conn_get_info(c)->protocol, 3);
    CHECK_EQ_INT(rlk_conn_get_info(c)->db, 0);
    CHECK_STR(CMD(c, "PING"), "PONG");
    v = CMD(c, "CLIENT", "INFO");
    CHECK_MSG(v && ts_contains(v->str, "flags=U"), "CLIENT INFO over a Unix socket: %.*s",
              v ? (int)v->len : 0, v ? v->str : "");
    rlk_conn_free(c);

    snprintf(url, sizeof url, "unix://%s?db=5", s->unix_path);
    c = CONNECT(url);
    url_of(tcp, sizeof tcp, s);
    other = CONNECT(tcp);
    if (c && other) {
        CHECK_EQ_INT(rlk_conn_get_info(c)->db, 5);
        CHECK_STR(CMD(c, "SET", "unix-db-key", "five"), "OK");
        CHECK(CMD(other, "GET", "unix-db-key")->type == RLK_RESP_NULL);
        CHECK_STR(CMD(other, "SELECT", "5"), "OK");
        CHECK_STR(CMD(other, "GET", "unix-db-key"), "five");
    }
    rlk_conn_free(c);
    rlk_conn_free(other);
}

static void test_default_url_from_env(void)
{
    ts_server *s = get_plain();
    rlk_conn_config cfg;
    rlk_conn *c;
    char url[128], peer[64];
    const char *old = getenv("REDIS_URL");
    char *saved = old ? strdup(old) : NULL;
    if (!CHECK(s != NULL)) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/1", s->port);
    setenv("REDIS_URL", url, 1);
    cfg_init(&cfg, NULL);
    c = rlk_conn_new(&cfg);
    if (saved) setenv("REDIS_URL", saved, 1);
    else unsetenv("REDIS_URL");
    free(saved);
    if (!CHECK(c != NULL)) return;
    CHECK_EQ_INT(rlk_conn_connect(c), RLK_OK);
    snprintf(peer, sizeof peer, "127.0.0.1:%d", s->port);
    CHECK_EQ_STR(rlk_conn_get_info(c)->peer, peer);
    CHECK_EQ_INT(rlk_conn_get_info(c)->db, 1);
    rlk_conn_free(c);
}

static void test_connect_errors(void)
{
    rlk_conn_config cfg;
    rlk_conn *c;
    rlk_resp_value *v;
    char url[128], want[64];
    int port = ts_free_port(0), rc;
    int64_t start;

    /* Nobody listens: refused, at once, with the address. */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    cfg_init(&cfg, url);
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) return;
    start = ts_now_ms();
    rc = rlk_conn_connect(c);
    CHECK_EQ_INT(rc, RLK_ERR_CONNECT);
    snprintf(want, sizeof want, "127.0.0.1:%d", port);
    CHECK_MSG(ts_contains(rlk_conn_errmsg(c), want) && ts_contains(rlk_conn_errmsg(c), "refused"),
              "errmsg: %s", rlk_conn_errmsg(c));
    CHECK_EQ_INT(rlk_conn_is_connected(c), 0);
    CHECK_EQ_U64(rlk_conn_generation(c), 0);
    rlk_conn_free(c);

    /* A command tries reconnect_attempts times, with backoff, then fails. */
    cfg.reconnect_attempts = 3;
    cfg.backoff_initial_ms = 20;
    cfg.backoff_max_ms = 40;
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) return;
    start = ts_now_ms();
    rc = STATUS(c, &v, "PING");
    CHECK_EQ_INT(rc, RLK_ERR_CONNECT);
    CHECK(v == NULL);
    CHECK_MSG(ts_now_ms() - start >= 20 && ts_now_ms() - start < 2000, "took %lld ms",
              (long long)(ts_now_ms() - start));
    rlk_conn_free(c);

    /* A bad URL: RLK_ERR_URL with a reason, and no password in it. */
    cfg_init(&cfg, "redis://user:s3cretpw@127.0.0.1:0");
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) return;
    rc = rlk_conn_connect(c);
    CHECK_EQ_INT(rc, RLK_ERR_URL);
    CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "port"), "errmsg: %s", rlk_conn_errmsg(c));
    CHECK(!ts_contains(rlk_conn_errmsg(c), "s3cretpw"));
    CHECK_EQ_INT(STATUS(c, &v, "PING"), RLK_ERR_URL);
    rlk_conn_free(c);
}

/* ------------------------------------------------------------------ */
/* Authentication                                                      */

static void test_auth_password(void)
{
    ts_server *s = get_auth();
    rlk_conn_config cfg;
    rlk_conn *c;
    rlk_resp_value *v;
    char url[256];
    int rc;
    if (!CHECK(s != NULL)) return;

    /* The right password, percent-encoded in the URL. */
    snprintf(url, sizeof url, "redis://:%s@127.0.0.1:%d", PASSWORD_URL, s->port);
    c = CONNECT(url);
    if (c) {
        CHECK_EQ_INT(rlk_conn_get_info(c)->protocol, 3);
        CHECK_EQ_STR(rlk_conn_get_info(c)->user, "default");
        CHECK_STR(CMD(c, "ACL", "WHOAMI"), "default");
        CHECK_STR(CMD(c, "SET", "authed", "yes"), "OK");
    }
    rlk_conn_free(c);
    /* The same under RESP2 (AUTH instead of HELLO ... AUTH). */
    snprintf(url, sizeof url, "redis://:%s@127.0.0.1:%d", PASSWORD_URL, s->port);
    cfg_init(&cfg, url);
    cfg.protocol = 2;
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) {
        rc = rlk_conn_connect(c);
        CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
        CHECK_STR(CMD(c, "GET", "authed"), "yes");
    }
    rlk_conn_free(c);

    /* A wrong password: AUTH, WRONGPASS, and never the password. */
    snprintf(url, sizeof url, "redis://:wrong-pw-xyz@127.0.0.1:%d", s->port);
    cfg_init(&cfg, url);
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) {
        rc = rlk_conn_connect(c);
        CHECK_EQ_INT(rc, RLK_ERR_AUTH);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "WRONGPASS"), "errmsg: %s", rlk_conn_errmsg(c));
        CHECK(!ts_contains(rlk_conn_errmsg(c), "wrong-pw-xyz"));
        CHECK_EQ_INT(rlk_conn_is_connected(c), 0);
        /* A command does not retry what cannot succeed. */
        CHECK_EQ_INT(STATUS(c, &v, "PING"), RLK_ERR_AUTH);
        CHECK(!ts_contains(rlk_conn_errmsg(c), "wrong-pw-xyz"));
    }
    rlk_conn_free(c);
    cfg.protocol = 2;
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) {
        rc = rlk_conn_connect(c);
        CHECK_EQ_INT(rc, RLK_ERR_AUTH);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "WRONGPASS"), "errmsg: %s", rlk_conn_errmsg(c));
        CHECK(!ts_contains(rlk_conn_errmsg(c), "wrong-pw-xyz"));
    }
    rlk_conn_free(c);

    /* No password: NOAUTH from HELLO. */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", s->port);
    cfg_init(&cfg, url);
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) {
        rc = rlk_conn_connect(c);
        CHECK_EQ_INT(rc, RLK_ERR_AUTH);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "NOAUTH"), "errmsg: %s", rlk_conn_errmsg(c));
        CHECK_EQ_INT(rlk_conn_is_connected(c), 0);
    }
    rlk_conn_free(c);
    /* No password, RESP2 and a client name: CLIENT SETNAME meets NOAUTH. */
    cfg.protocol = 2;
    cfg.client_name = "nopass";
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) {
        rc = rlk_conn_connect(c);
        CHECK_EQ_INT(rc, RLK_ERR_AUTH);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "NOAUTH"), "errmsg: %s", rlk_conn_errmsg(c));
    }
    rlk_conn_free(c);
}

static void test_auth_acl_user(void)
{
    ts_server *s = get_auth();
    rlk_conn *admin, *c;
    rlk_conn_config cfg;
    rlk_resp_value *v;
    char url[256];
    int rc;
    if (!CHECK(s != NULL)) return;
    snprintf(url, sizeof url, "redis://default:%s@127.0.0.1:%d", PASSWORD_URL, s->port);
    admin = CONNECT(url);
    if (!admin) return;
    v = CMD(admin, "ACL", "SETUSER", "alice", "on", ">secret", "~*", "+@all");
    CHECK_STR(v, "OK");

    snprintf(url, sizeof url, "redis://alice:secret@127.0.0.1:%d", s->port);
    c = CONNECT(url);
    if (c) {
        CHECK_STR(CMD(c, "ACL", "WHOAMI"), "alice");
        CHECK_EQ_STR(rlk_conn_get_info(c)->user, "alice");
        CHECK_STR(CMD(c, "SET", "alice-key", "1"), "OK");
    }
    rlk_conn_free(c);
    /* RESP2: AUTH alice secret. */
    cfg_init(&cfg, url);
    cfg.protocol = 2;
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) {
        rc = rlk_conn_connect(c);
        CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
        CHECK_STR(CMD(c, "ACL", "WHOAMI"), "alice");
    }
    rlk_conn_free(c);

    snprintf(url, sizeof url, "redis://alice:not-her-secret@127.0.0.1:%d", s->port);
    cfg_init(&cfg, url);
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) {
        rc = rlk_conn_connect(c);
        CHECK_EQ_INT(rc, RLK_ERR_AUTH);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "WRONGPASS"), "errmsg: %s", rlk_conn_errmsg(c));
        CHECK(!ts_contains(rlk_conn_errmsg(c), "not-her-secret"));
    }
    rlk_conn_free(c);
    /* A user name without a password authenticates nobody: the
     * connection is the default user's, and info says so. */
    snprintf(url, sizeof url, "redis://alice@127.0.0.1:%d", get_plain()->port);
    c = CONNECT(url);
    if (c) {
        CHECK_STR(CMD(c, "ACL", "WHOAMI"), "default");
        CHECK_EQ_STR(rlk_conn_get_info(c)->user, "default");
    }
    rlk_conn_free(c);
    /* A user that does not exist fails the same way. */
    snprintf(url, sizeof url, "redis://mallory:secret@127.0.0.1:%d", s->port);
    cfg_init(&cfg, url);
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) CHECK_EQ_INT(rlk_conn_connect(c), RLK_ERR_AUTH);
    rlk_conn_free(c);

    /* A user without CLIENT: the RESP2 handshake's CLIENT SETNAME is
     * refused (NOPERM), and the connection serves all the same, the
     * core's rule for every connection. */
    CHECK_STR(CMD(admin, "ACL", "SETUSER", "carol", "on", ">pw3", "~*", "+@all", "-client"), "OK");
    snprintf(url, sizeof url, "redis://carol:pw3@127.0.0.1:%d", s->port);
    cfg_init(&cfg, url);
    cfg.protocol = 2;
    cfg.client_name = "named-by-carol";
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) {
        rc = rlk_conn_connect(c);
        CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
        CHECK_STR(CMD(c, "ACL", "WHOAMI"), "carol");
        v = CMD(c, "CLIENT", "GETNAME");
        CHECK_MSG(is_err(v), "CLIENT GETNAME: type %c", v ? v->type : '?');
    }
    rlk_conn_free(c);

    CMD(admin, "ACL", "DELUSER", "alice", "carol");
    rlk_conn_free(admin);
}

/* ------------------------------------------------------------------ */
/* SELECT and protocol 2                                               */

static void test_select_db(void)
{
    ts_server *s = get_plain();
    rlk_conn *c, *other;
    rlk_conn_config cfg;
    char url[128];
    int rc;
    if (!CHECK(s != NULL)) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/3", s->port);
    c = CONNECT(url);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", s->port);
    other = CONNECT(url);
    if (c && other) {
        CHECK_EQ_INT(rlk_conn_get_info(c)->db, 3);
        CHECK_STR(CMD(c, "SET", "select-key", "in-three"), "OK");
        CHECK(CMD(other, "GET", "select-key")->type == RLK_RESP_NULL);
        CHECK_STR(CMD(other, "SELECT", "3"), "OK");
        CHECK_STR(CMD(other, "GET", "select-key"), "in-three");
        /* After a reconnect the database is selected again. */
        CHECK_EQ_INT(rlk_conn_reconnect(c), RLK_OK);
        CHECK_EQ_INT(rlk_conn_get_info(c)->db, 3);
        CHECK_STR(CMD(c, "GET", "select-key"), "in-three");
    }
    rlk_conn_free(c);
    rlk_conn_free(other);

    /* 16 databases: /99 is refused, clearly. */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/99", s->port);
    cfg_init(&cfg, url);
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) return;
    rc = rlk_conn_connect(c);
    CHECK_EQ_INT(rc, RLK_ERR_SERVER);
    CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "SELECT") &&
                  ts_contains(rlk_conn_errmsg(c), "out of range"),
              "errmsg: %s", rlk_conn_errmsg(c));
    CHECK_EQ_INT(rlk_conn_is_connected(c), 0);
    rlk_conn_free(c);
}

static void test_protocol2_real(void)
{
    ts_server *s = get_plain();
    rlk_conn_config cfg;
    rlk_conn *c;
    rlk_resp_value *v;
    char url[128], buf[512];
    int rc;
    if (!CHECK(s != NULL)) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/4", s->port);
    cfg_init(&cfg, url);
    cfg.protocol = 2;
    cfg.client_name = "resp2-client";
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) return;
    rc = rlk_conn_connect(c);
    if (!CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c))) goto out;
    CHECK_EQ_INT(rlk_conn_get_info(c)->protocol, 2);
    CHECK_EQ_INT(rlk_conn_get_info(c)->db, 4);
    /* No HELLO: what it would have told is unknown. */
    CHECK_EQ_INT(rlk_conn_get_info(c)->client_id, -1);
    CHECK_EQ_STR(rlk_conn_get_info(c)->server, "");
    v = CMD(c, "CLIENT", "INFO");
    copy_reply(buf, sizeof buf, v);
    CHECK(v && v->type == RLK_RESP_BULK);
    CHECK_MSG(ts_contains(buf, "resp=2") && ts_contains(buf, "name=resp2-client ") &&
                  ts_contains(buf, "db=4"),
              "CLIENT INFO: %s", buf);
    CMD(c, "DEL", "h2");
    CHECK_INT(CMD(c, "HSET", "h2", "f", "v"), 1);
    v = CMD(c, "HGETALL", "h2");
    CHECK_MSG(v && v->type == RLK_RESP_ARRAY && v->len == 2, "HGETALL under RESP2: type %c",
              v ? v->type : '?');
    v = CMD(c, "GET", "no-such-key");
    CHECK(v && v->type == RLK_RESP_NULL && v->null_wire == '$');
out:
    rlk_conn_free(c);
}

/* The fake records what was sent: protocol 2 means no HELLO at all. */
static void test_protocol2_no_hello(void)
{
    struct fake_log log;
    fake_server *fs;
    rlk_conn_config cfg;
    rlk_conn *c = NULL;
    char url[128];
    int rc;
    log_init(&log, 1);
    fs = fake_start(fake_scripted, &log);
    if (!CHECK(fs != NULL)) return;
    snprintf(url, sizeof url, "redis://u1:pw1@127.0.0.1:%d", fake_port(fs));
    cfg_init(&cfg, url);
    cfg.protocol = 2;
    cfg.client_name = "n2";
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) goto out;
    rc = rlk_conn_connect(c);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    CHECK_STR(CMD(c, "ECHO", "hi"), "hi");
    CHECK_EQ_INT(log_prefix_count(&log, "HELLO"), 0);
    CHECK_EQ_INT(log.n, 4);
    CHECK_EQ_STR(log.cmd[0], "AUTH u1 pw1");
    CHECK_EQ_STR(log.cmd[1], "CLIENT SETNAME n2");
    /* Without HELLO to tell whether the server has it: asked anyway. */
    CHECK_EQ_STR(log.cmd[2], "CLIENT NO-EVICT on");
    CHECK_EQ_STR(log.cmd[3], "ECHO hi");
    CHECK_EQ_INT(rlk_conn_get_info(c)->protocol, 2);
out:
    rlk_conn_free(c);
    fake_stop(fs);
    pthread_mutex_destroy(&log.mu);
}

/* A server without HELLO (Redis 5): fall back to RESP2, AUTH, SETNAME. */
static void test_resp2_fallback(void)
{
    struct fake_log log;
    fake_server *fs;
    rlk_conn_config cfg;
    rlk_conn *c = NULL;
    char url[128];
    int rc;
    log_init(&log, 1);
    fs = fake_start(fake_scripted, &log);
    if (!CHECK(fs != NULL)) return;
    snprintf(url, sizeof url, "redis://user:pass@127.0.0.1:%d/2", fake_port(fs));
    cfg_init(&cfg, url);
    cfg.client_name = "old-server-client";
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) goto out;
    rc = rlk_conn_connect(c);
    if (!CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c))) goto out;
    CHECK_EQ_INT(rlk_conn_get_info(c)->protocol, 2);
    CHECK_EQ_STR(rlk_conn_get_info(c)->user, "user");
    CHECK_EQ_INT(rlk_conn_get_info(c)->db, 2);
    CHECK_STR(CMD(c, "PING"), "PONG");
    CHECK_STR(CMD(c, "ECHO", "resp2 works"), "resp2 works");
    CHECK_EQ_INT(log.n, 6);
    CHECK_EQ_STR(log.cmd[0], "HELLO 3 AUTH user pass SETNAME old-server-client");
    CHECK_EQ_STR(log.cmd[1], "AUTH user pass");
    CHECK_EQ_STR(log.cmd[2], "CLIENT SETNAME old-server-client");
    CHECK_EQ_STR(log.cmd[3], "SELECT 2");
    CHECK_EQ_STR(log.cmd[4], "PING");
    rlk_conn_free(c);

    /* protocol 3 insists: the refusal is a server error, clearly. */
    cfg.protocol = 3;
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) goto out;
    rc = rlk_conn_connect(c);
    CHECK_EQ_INT(rc, RLK_ERR_SERVER);
    CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "HELLO") &&
                  ts_contains(rlk_conn_errmsg(c), "unknown command"),
              "errmsg: %s", rlk_conn_errmsg(c));
    CHECK(!ts_contains(rlk_conn_errmsg(c), "pass"));
out:
    rlk_conn_free(c);
    fake_stop(fs);
    pthread_mutex_destroy(&log.mu);
}

/* HELLO refused in each of the words servers and proxies use for "no
 * RESP3 here": the connection falls back to RESP2 as the lock session
 * does (one set of rules, the request core's), and serves; protocol 3
 * insists on RESP3 whatever the words. */
static void test_resp2_fallback_words(void)
{
    static const char *const refusals[] = {
        "-ERR unknown or unsupported protocol version\r\n",
        "-NOPROTO sorry, this protocol version is not supported\r\n",
        "-ERR unknown subcommand 'HELLO'. Try CLIENT HELP.\r\n",
        "-ERR Syntax error\r\n",
    };
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        struct fake_log log;
        fake_server *fs;
        rlk_conn_config cfg;
        rlk_conn *c;
        char url[128];
        int rc;
        log_init(&log, 1);
        log.hello_refusal = refusals[i];
        fs = fake_start(fake_scripted, &log);
        if (!CHECK(fs != NULL)) return;
        snprintf(url, sizeof url, "redis://user:pass@127.0.0.1:%d", fake_port(fs));
        cfg_init(&cfg, url);
        cfg.client_name = "words";
        c = rlk_conn_new(&cfg);
        if (CHECK(c != NULL)) {
            rc = rlk_conn_connect(c);
            CHECK_MSG(rc == RLK_OK, "%s: %d %s", refusals[i], rc, rlk_conn_errmsg(c));
            CHECK_EQ_INT(rlk_conn_get_info(c)->protocol, 2);
            CHECK_STR(CMD(c, "ECHO", "served"), "served");
            CHECK_EQ_INT(log_count(&log, "AUTH user pass"), 1);
            CHECK_EQ_INT(log_count(&log, "CLIENT SETNAME words"), 1);
        }
        rlk_conn_free(c);
        cfg.protocol = 3;
        c = rlk_conn_new(&cfg);
        if (CHECK(c != NULL)) {
            CHECK_EQ_INT(rlk_conn_connect(c), RLK_ERR_SERVER);
            CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "HELLO"), "errmsg: %s", rlk_conn_errmsg(c));
        }
        rlk_conn_free(c);
        fake_stop(fs);
        pthread_mutex_destroy(&log.mu);
    }
}

/* ------------------------------------------------------------------ */
/* TLS                                                                 */

#ifdef RLK_HAVE_OPENSSL
static ts_server *tls_server(ts_server **slot, const char *cert, const char *key, int mtls)
{
    ts_options o;
    if (*slot) return *slot;
    if (!ts_certs_dir()) return NULL;
    memset(&o, 0, sizeof o);
    o.tls_cert = ts_cert(cert);
    o.tls_key = ts_cert(key);
    o.tls_ca = ts_cert("ca.crt");
    o.tls_auth_clients = mtls;
    o.tls_client_cert = ts_cert("client.crt");
    o.tls_client_key = ts_cert("client.key");
    *slot = ts_start(&o);
    return *slot;
}

static void test_tls_ok(void)
{
    ts_server *s = tls_server(&tls_main, "server.crt", "server.key", 0);
    rlk_conn_config cfg;
    rlk_conn *c;
    char url[128];
    int rc;
    if (!CHECK(s != NULL)) return;
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d/1", s->port);
    cfg_init(&cfg, url);
    cfg.tls.ca_file = ts_cert("ca.crt");
    cfg.client_name = "tls-client";
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) return;
    rc = rlk_conn_connect(c);
    if (CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c))) {
        const rlk_conn_info *info = rlk_conn_get_info(c);
        CHECK(info->tls_version != NULL && ts_contains(info->tls_version, "TLS"));
        CHECK(info->tls_cipher != NULL && info->tls_cipher[0]);
        CHECK_EQ_INT(info->protocol, 3);
        CHECK_EQ_INT(info->db, 1);
        CHECK_STR(CMD(c, "CLIENT", "GETNAME"), "tls-client");
        CHECK_STR(CMD(c, "SET", "tls-key", "over-tls"), "OK");
        CHECK_STR(CMD(c, "GET", "tls-key"), "over-tls");
    }
    rlk_conn_free(c);

    /* A DNS name of the certificate, given apart from the address so that
     * nothing depends on a name resolving. */
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", s->port);
    cfg_init(&cfg, url);
    cfg.tls.ca_dir = ts_cert("cadir");
    cfg.tls.server_name = "redis.resplock.test";
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) return;
    rc = rlk_conn_connect(c);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    CHECK_STR(CMD(c, "PING"), "PONG");
    rlk_conn_free(c);
}

static void test_tls_mutual(void)
{
    ts_server *s = tls_server(&tls_mtls, "server.crt", "server.key", 1);
    rlk_conn_config cfg;
    rlk_conn *c;
    char url[128];
    int rc;
    int64_t start;
    if (!CHECK(s != NULL)) return;
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", s->port);
    cfg_init(&cfg, url);
    cfg.tls.ca_file = ts_cert("ca.crt");
    cfg.tls.cert_file = ts_cert("client.crt");
    cfg.tls.key_file = ts_cert("client.key");
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) return;
    rc = rlk_conn_connect(c);
    if (CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c))) {
        CHECK(rlk_conn_get_info(c)->tls_version != NULL);
        CHECK_STR(CMD(c, "PING"), "PONG");
    }
    rlk_conn_free(c);

    /* Without a client certificate: refused, clearly, in time. */
    cfg.tls.cert_file = cfg.tls.key_file = NULL;
    cfg.connect_timeout_ms = TLS_DEADLINE_MS;
    cfg.reconnect_attempts = -1;
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) return;
    start = ts_now_ms();
    rc = rlk_conn_connect(c);
    CHECK_MSG(rc == RLK_ERR_TLS || rc == RLK_ERR_IO, "rc %d: %s", rc, rlk_conn_errmsg(c));
    CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "certificate"), "errmsg: %s", rlk_conn_errmsg(c));
    CHECK(ts_now_ms() - start < TLS_DEADLINE_MS);
    CHECK_EQ_INT(rlk_conn_is_connected(c), 0);
    rlk_conn_free(c);
}

/* Connects and expects failure rc1 (or rc2), a message containing want,
 * within deadline_ms (+ margin when the failure is the deadline). */
static void expect_fail(const char *url, const char *ca, int deadline_ms, int rc1, int rc2,
                        const char *want, int line)
{
    rlk_conn_config cfg;
    rlk_conn *c;
    int rc;
    int64_t start, took;
    cfg_init(&cfg, url);
    cfg.tls.ca_file = ca ? ts_cert(ca) : NULL;
    cfg.connect_timeout_ms = deadline_ms;
    c = rlk_conn_new(&cfg);
    if (!tl_ok(c != NULL, __FILE__, line, "rlk_conn_new")) return;
    start = ts_now_ms();
    rc = rlk_conn_connect(c);
    took = ts_now_ms() - start;
    tl_ok(rc == rc1 || rc == rc2, __FILE__, line, "%s: rc %d, want %d or %d (%s)", url, rc, rc1,
          rc2, rlk_conn_errmsg(c));
    if (want)
        tl_ok(ts_contains(rlk_conn_errmsg(c), want), __FILE__, line, "errmsg \"%s\", want \"%s\"",
              rlk_conn_errmsg(c), want);
    else
        tl_ok(rlk_conn_errmsg(c)[0] != '\0', __FILE__, line, "no message");
    tl_ok(took < (rc == RLK_ERR_TIMEOUT ? deadline_ms + MARGIN_MS : deadline_ms), __FILE__, line,
          "%s: took %lld ms (deadline %d)", url, (long long)took, deadline_ms);
    tl_ok(rlk_conn_is_connected(c) == 0, __FILE__, line, "still connected");
    rlk_conn_free(c);
}

static void test_tls_failures(void)
{
    ts_server *m = tls_server(&tls_main, "server.crt", "server.key", 0);
    ts_server *w = tls_server(&tls_wrong_host, "wrong-host.crt", "wrong-host.key", 0);
    ts_server *e = tls_server(&tls_expired, "expired.crt", "expired.key", 0);
    ts_server *p = get_plain();
    rlk_conn_config cfg;
    rlk_conn *c;
    char url[128];
    if (!CHECK(m && w && e && p)) return;

    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", m->port);
    expect_fail(url, "other-ca.crt", TLS_DEADLINE_MS, RLK_ERR_TLS, RLK_ERR_TLS,
                "certificate verify failed", __LINE__);
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", w->port);
    expect_fail(url, "ca.crt", TLS_DEADLINE_MS, RLK_ERR_TLS, RLK_ERR_TLS, "IP address mismatch",
                __LINE__);
    /* The name checked, given apart from the address: server.crt's, not
     * this certificate's. */
    cfg_init(&cfg, url);
    cfg.tls.ca_file = ts_cert("ca.crt");
    cfg.tls.server_name = "redis.resplock.test";
    if (CHECK((c = rlk_conn_new(&cfg)) != NULL)) {
        CHECK_EQ_INT(rlk_conn_connect(c), RLK_ERR_TLS);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "hostname mismatch"), "%s", rlk_conn_errmsg(c));
        rlk_conn_free(c);
    }
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", e->port);
    expect_fail(url, "ca.crt", TLS_DEADLINE_MS, RLK_ERR_TLS, RLK_ERR_TLS,
                "certificate has expired", __LINE__);
    /* Plaintext HELLO to the TLS port: the server drops it (perhaps with
     * an alert, which is no RESP); an error either way, never a hang. */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", m->port);
    expect_fail(url, NULL, TLS_DEADLINE_MS, RLK_ERR_IO, RLK_ERR_PROTO, NULL, __LINE__);
    /* A ClientHello to a plain port: Redis may wait for a line end; the
     * deadline ends that. */
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", p->port);
    expect_fail(url, "ca.crt", 1000, RLK_ERR_TLS, RLK_ERR_TIMEOUT, "TLS", __LINE__);
}

/* A pipeline over TLS: the pipeline writes and reads through the TLS
 * transport itself, with its buffered records. */
static void test_tls_pipeline(void)
{
    enum { N = 500, SIZE = 4096 };
    ts_server *s = tls_server(&tls_main, "server.crt", "server.key", 0);
    rlk_conn_config cfg;
    rlk_conn *c;
    rlk_request reqs[N];
    rlk_resp_value *replies[N];
    const char *argv[N][2];
    size_t lens[2] = {4, SIZE};
    char url[128], *bufs = malloc((size_t)N * SIZE);
    int rc, i, bad = 0;
    if (!CHECK(s && bufs)) goto out;
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", s->port);
    cfg_init(&cfg, url);
    cfg.tls.ca_file = ts_cert("ca.crt");
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) goto out;
    rc = rlk_conn_connect(c);
    if (CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c))) {
        for (i = 0; i < N; i++) {
            char *b = bufs + (size_t)i * SIZE;
            memset(b, 'a' + i % 26, SIZE);
            snprintf(b, 16, "%d:", i);
            argv[i][0] = "ECHO";
            argv[i][1] = b;
            reqs[i] = (rlk_request){NULL, 0, 2, argv[i], lens};
        }
        rc = rlk_conn_pipeline(c, N, reqs, replies);
        CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
        for (i = 0; rc == RLK_OK && i < N; i++)
            if (!(replies[i] && replies[i]->type == RLK_RESP_BULK && replies[i]->len == SIZE &&
                  memcmp(replies[i]->str, bufs + (size_t)i * SIZE, SIZE) == 0))
                bad++;
        CHECK_EQ_INT(bad, 0);
        CHECK_STR(CMD(c, "PING"), "PONG");
    }
    rlk_conn_free(c);
out:
    free(bufs);
}
#endif

/* ------------------------------------------------------------------ */
/* Hostile servers                                                     */

struct hostile {
    struct fake_log log;
    fake_server *fs;
    rlk_conn *c;
};

static int hostile_start(struct hostile *h, int command_ms, uint64_t max_bulk)
{
    rlk_conn_config cfg;
    char url[128];
    memset(h, 0, sizeof *h);
    log_init(&h->log, 0);
    h->fs = fake_start(fake_scripted, &h->log);
    if (!CHECK(h->fs != NULL)) return 0;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", fake_port(h->fs));
    cfg_init(&cfg, url);
    cfg.command_timeout_ms = command_ms;
    cfg.limits.max_bulk = max_bulk;
    h->c = rlk_conn_new(&cfg);
    if (!CHECK(h->c != NULL)) return 0;
    if (!CHECK_MSG(rlk_conn_connect(h->c) == RLK_OK, "%s", rlk_conn_errmsg(h->c))) return 0;
    CHECK_EQ_INT(rlk_conn_get_info(h->c)->protocol, 3);
    CHECK_EQ_INT(rlk_conn_get_info(h->c)->client_id, 42);
    CHECK_EQ_STR(rlk_conn_get_info(h->c)->version, "7.9.9");
    return 1;
}

static void hostile_stop(struct hostile *h)
{
    rlk_conn_free(h->c);
    fake_stop(h->fs);
    pthread_mutex_destroy(&h->log.mu);
}

static void test_hostile_drip(void)
{
    struct hostile h;
    rlk_resp_value *v;
    int64_t start, took;
    int rc;
    if (hostile_start(&h, 500, 0)) {
        start = ts_now_ms();
        rc = STATUS(h.c, &v, "DRIP", "+a reply that takes two seconds to arrive\r\n");
        took = ts_now_ms() - start;
        CHECK_EQ_INT(rc, RLK_ERR_TIMEOUT);
        CHECK(v == NULL);
        CHECK_MSG(took >= 450 && took < 500 + MARGIN_MS, "took %lld ms", (long long)took);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(h.c), "timed out"), "errmsg: %s",
                  rlk_conn_errmsg(h.c));
        CHECK_EQ_INT(rlk_conn_is_connected(h.c), 0);
        /* The next command is on a new connection, not the dripping one. */
        CHECK_STR(CMD(h.c, "PING"), "PONG");
        CHECK_EQ_U64(rlk_conn_generation(h.c), 2);
        CHECK_EQ_INT(fake_accepted(h.fs), 2);
    }
    hostile_stop(&h);
}

static void test_hostile_big_bulk(void)
{
    struct hostile h;
    rlk_resp_value *v;
    long long base;
    int rc;
    if (hostile_start(&h, LONG_MS, 1 << 20)) {
        base = mem_reset_peak();
        rc = STATUS(h.c, &v, "BIGBULK");
        CHECK_EQ_INT(rc, RLK_ERR_LIMIT);
        CHECK(v == NULL);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(h.c), "2000000") &&
                      ts_contains(rlk_conn_errmsg(h.c), "limit"),
                  "errmsg: %s", rlk_conn_errmsg(h.c));
        CHECK_EQ_INT(rlk_conn_is_connected(h.c), 0);
        CHECK_MSG(mem_peak - base < 256 * 1024, "the library held %lld bytes",
                  mem_peak - base);
        printf("    (big bulk: \"%s\", peak %lld bytes)\n", rlk_conn_errmsg(h.c),
               mem_peak - base);
    }
    hostile_stop(&h);
}

/* A huge declared length is not preallocated: the bytes never come, the
 * deadline passes, and little was held. */
static void test_hostile_no_prealloc(void)
{
    struct hostile h;
    rlk_resp_value *v;
    long long base;
    int rc;
    if (hostile_start(&h, 300, 0)) {
        base = mem_reset_peak();
        rc = STATUS(h.c, &v, "RAW", "$60000000\r\nonly a few bytes");
        CHECK_EQ_INT(rc, RLK_ERR_TIMEOUT);
        CHECK_EQ_INT(rlk_conn_is_connected(h.c), 0);
        CHECK_MSG(mem_peak - base < 256 * 1024, "the library held %lld bytes",
                  mem_peak - base);
    }
    hostile_stop(&h);
}

static void test_hostile_garbage(void)
{
    struct hostile h;
    rlk_resp_value *v;
    int rc;
    if (hostile_start(&h, LONG_MS, 0)) {
        rc = STATUS(h.c, &v, "RAW", "@@@\r\n");
        CHECK_EQ_INT(rc, RLK_ERR_PROTO);
        CHECK(v == NULL);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(h.c), "protocol error"), "errmsg: %s",
                  rlk_conn_errmsg(h.c));
        CHECK_EQ_INT(rlk_conn_is_connected(h.c), 0);
        /* The next command goes to a new connection. */
        CHECK_STR(CMD(h.c, "PING"), "PONG");
        CHECK_EQ_U64(rlk_conn_generation(h.c), 2);
    }
    hostile_stop(&h);
}

static void test_hostile_close_mid_reply(void)
{
    struct hostile h;
    rlk_resp_value *v;
    int rc;
    if (hostile_start(&h, LONG_MS, 0)) {
        rc = STATUS(h.c, &v, "CLOSE", "$10\r\nabc");
        CHECK_EQ_INT(rc, RLK_ERR_IO);
        CHECK(v == NULL);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(h.c), "closed"), "errmsg: %s", rlk_conn_errmsg(h.c));
        CHECK_EQ_INT(rlk_conn_is_connected(h.c), 0);
        /* Not sent again: the fake saw it once, on one connection. */
        CHECK_EQ_INT(log_count(&h.log, "CLOSE $10\r\nabc"), 1);
        CHECK_EQ_INT(fake_accepted(h.fs), 1);
        CHECK_EQ_U64(rlk_conn_generation(h.c), 1);
        /* The next command reconnects. */
        CHECK_STR(CMD(h.c, "PING"), "PONG");
        CHECK_EQ_INT(fake_accepted(h.fs), 2);
        CHECK_EQ_U64(rlk_conn_generation(h.c), 2);
        CHECK_EQ_INT(log_count(&h.log, "CLOSE $10\r\nabc"), 1);
    }
    hostile_stop(&h);
}

/* A pipeline whose server stops answering, or hangs up, midway. */
static void test_hostile_pipeline(void)
{
    struct hostile h;
    rlk_request reqs[3];
    rlk_resp_value *replies[3];
    const char *ping[1] = {"PING"}, *hold[1] = {"HOLD"};
    const char *cut[2] = {"CLOSE", "$3\r\nab"};
    int64_t start, took;
    int rc;
    if (hostile_start(&h, 300, 0)) {
        reqs[0] = (rlk_request){NULL, 0, 1, ping, NULL};
        reqs[1] = (rlk_request){NULL, 0, 1, hold, NULL};
        reqs[2] = (rlk_request){NULL, 0, 1, ping, NULL};
        start = ts_now_ms();
        rc = rlk_conn_pipeline(h.c, 3, reqs, replies);
        took = ts_now_ms() - start;
        CHECK_EQ_INT(rc, RLK_ERR_TIMEOUT);
        CHECK_MSG(took >= 250 && took < 300 + MARGIN_MS, "took %lld ms", (long long)took);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(h.c), "1 of 3"), "errmsg: %s", rlk_conn_errmsg(h.c));
        CHECK_EQ_INT(rlk_conn_is_connected(h.c), 0);

        reqs[1] = (rlk_request){NULL, 0, 2, cut, NULL};
        rc = rlk_conn_pipeline(h.c, 3, reqs, replies);
        CHECK_EQ_INT(rc, RLK_ERR_IO);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(h.c), "closed"), "errmsg: %s", rlk_conn_errmsg(h.c));
        CHECK_EQ_INT(rlk_conn_is_connected(h.c), 0);
        /* Neither pipeline was sent twice. */
        CHECK_EQ_INT(log_count(&h.log, "HOLD"), 1);
        CHECK_EQ_INT(log_count(&h.log, "CLOSE $3\r\nab"), 1);
        CHECK_EQ_INT(fake_accepted(h.fs), 2);
    }
    hostile_stop(&h);
}

/* A push handler may close the connection; the call in progress then
 * fails at once, whatever it was. */
static void close_on_push(void *ctx, rlk_conn *c, const rlk_resp_value *m)
{
    (*(int *)ctx)++;
    rlk_conn_close(c);
}

static void test_push_handler_closes(void)
{
    struct fake_log log;
    fake_server *fs;
    rlk_conn_config cfg;
    rlk_conn *c = NULL;
    rlk_resp_value *v, *replies[3];
    rlk_request reqs[3];
    const char *ping[1] = {"PING"};
    const char *push[2] = {"RAW", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nx\r\n+OK\r\n"};
    char url[128];
    int calls = 0, rc;
    int64_t start;
    log_init(&log, 0);
    fs = fake_start(fake_scripted, &log);
    if (!CHECK(fs != NULL)) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", fake_port(fs));
    cfg_init(&cfg, url);
    cfg.on_push = close_on_push;
    cfg.ctx = &calls;
    cfg.reconnect_attempts = -1;
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL) || !CHECK(rlk_conn_connect(c) == RLK_OK)) goto out;

    rc = rlk_conn_command(c, &v, 2, push, NULL);
    CHECK_EQ_INT(rc, RLK_ERR_CLOSED);
    CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "push handler"), "errmsg: %s", rlk_conn_errmsg(c));
    CHECK_EQ_INT(calls, 1);

    CHECK_EQ_INT(rlk_conn_reconnect(c), RLK_OK);
    reqs[0] = (rlk_request){NULL, 0, 1, ping, NULL};
    reqs[1] = (rlk_request){NULL, 0, 2, push, NULL};
    reqs[2] = (rlk_request){NULL, 0, 1, ping, NULL};
    start = ts_now_ms();
    rc = rlk_conn_pipeline(c, 3, reqs, replies);
    CHECK_EQ_INT(rc, RLK_ERR_CLOSED);
    CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "push handler"), "errmsg: %s", rlk_conn_errmsg(c));
    CHECK(ts_now_ms() - start < LONG_MS / 2);
    CHECK_EQ_INT(calls, 2);
    CHECK_EQ_INT(rlk_conn_is_connected(c), 0);
out:
    rlk_conn_free(c);
    fake_stop(fs);
    pthread_mutex_destroy(&log.mu);
}

/* A listener that accepts and never answers HELLO: the connect deadline. */
static void test_handshake_deadline(void)
{
    fake_server *fs = fake_start(fake_silent, NULL);
    rlk_conn_config cfg;
    rlk_conn *c;
    char url[128];
    int rc;
    int64_t start, took;
    if (!CHECK(fs != NULL)) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", fake_port(fs));
    cfg_init(&cfg, url);
    cfg.connect_timeout_ms = 500;
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) {
        start = ts_now_ms();
        rc = rlk_conn_connect(c);
        took = ts_now_ms() - start;
        CHECK_EQ_INT(rc, RLK_ERR_TIMEOUT);
        CHECK_MSG(took >= 450 && took < 500 + MARGIN_MS, "took %lld ms", (long long)took);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "HELLO") &&
                      ts_contains(rlk_conn_errmsg(c), "timed out"),
                  "errmsg: %s", rlk_conn_errmsg(c));
        CHECK_EQ_INT(rlk_conn_is_connected(c), 0);
    }
    rlk_conn_free(c);
    fake_stop(fs);
}

/* Refuses the handshake of the first *arg connections as a full server
 * does ("max number of clients reached", then a close), then serves as
 * Redis 5. */
static void refuse_first(fake_conn *fc, void *arg)
{
    int *left = arg;
    if (__atomic_fetch_sub(left, 1, __ATOMIC_SEQ_CST) > 0) {
        fake_send_str(fc, "-ERR max number of clients reached\r\n");
        return;
    }
    fake_resp2(fc, NULL);
}

/* A handshake refused for now is tried again, as the client's
 * connections do (retry.h's one rule): the third try serves. */
static void test_reconnect_refused_for_now(void)
{
    int left = 2;
    fake_server *fs = fake_start(refuse_first, &left);
    rlk_conn_config cfg;
    rlk_conn *c;
    char url[128];
    if (!CHECK(fs != NULL)) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", fake_port(fs));
    cfg_init(&cfg, url);
    cfg.reconnect_attempts = 4;
    cfg.backoff_initial_ms = 10;
    cfg.backoff_max_ms = 20;
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) {
        int rc = rlk_conn_reconnect(c);
        CHECK_MSG(rc == RLK_OK, "%d: %s", rc, rlk_conn_errmsg(c));
        CHECK_EQ_INT(fake_accepted(fs), 3);
        CHECK_EQ_U64(rlk_conn_generation(c), 1);
    }
    rlk_conn_free(c);
    fake_stop(fs);
}

/* The pauses hold across calls: a command after one whose try failed
 * waits the backoff's pause before its own, so a caller calling in a
 * loop does not hammer a server that is down; rlk_conn_reconnect asks
 * for a try now. */
static void test_reconnect_paced_across_calls(void)
{
    fake_server *fs = fake_start(fake_close_at_once, NULL);
    rlk_conn_config cfg;
    rlk_conn *c;
    rlk_resp_value *v;
    char url[128];
    if (!CHECK(fs != NULL)) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", fake_port(fs));
    cfg_init(&cfg, url);
    cfg.reconnect_attempts = 1;
    cfg.backoff_initial_ms = 600;
    cfg.backoff_max_ms = 600;
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) {
        CHECK_EQ_INT(STATUS(c, &v, "PING"), RLK_ERR_IO);
        int64_t start = ts_now_ms();
        CHECK_EQ_INT(STATUS(c, &v, "PING"), RLK_ERR_IO);
        int64_t took = ts_now_ms() - start;
        CHECK_MSG(took >= 300, "the second call tried after %lld ms, want the pause (300..600)",
                  (long long)took);
        CHECK_EQ_INT(fake_accepted(fs), 2);
        start = ts_now_ms();
        CHECK_EQ_INT(rlk_conn_reconnect(c), RLK_ERR_IO);
        took = ts_now_ms() - start;
        CHECK_MSG(took < 300, "rlk_conn_reconnect tried after %lld ms, want at once",
                  (long long)took);
        CHECK_EQ_INT(fake_accepted(fs), 3);
    }
    rlk_conn_free(c);
    fake_stop(fs);
}

/* Every try is counted by a server that hangs up at once. */
static void test_reconnect_attempts_counted(void)
{
    fake_server *fs = fake_start(fake_close_at_once, NULL);
    rlk_conn_config cfg;
    rlk_conn *c;
    rlk_resp_value *v;
    char url[128];
    int rc;
    int64_t start;
    if (!CHECK(fs != NULL)) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", fake_port(fs));
    cfg_init(&cfg, url);
    cfg.reconnect_attempts = 4;
    cfg.backoff_initial_ms = 10;
    cfg.backoff_max_ms = 20;
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) {
        start = ts_now_ms();
        rc = STATUS(c, &v, "PING");
        /* An end of file, or a reset when HELLO arrived after the close. */
        CHECK_EQ_INT(rc, RLK_ERR_IO);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "HELLO") &&
                      (ts_contains(rlk_conn_errmsg(c), "closed") ||
                       ts_contains(rlk_conn_errmsg(c), "reset")),
                  "errmsg: %s", rlk_conn_errmsg(c));
        CHECK(ts_now_ms() - start < LONG_MS);
        CHECK_EQ_INT(fake_accepted(fs), 4);
        rc = rlk_conn_reconnect(c);
        CHECK_EQ_INT(rc, RLK_ERR_IO);
        CHECK_EQ_INT(fake_accepted(fs), 8);
        CHECK_EQ_U64(rlk_conn_generation(c), 0);
    }
    rlk_conn_free(c);
    fake_stop(fs);
}

/* ------------------------------------------------------------------ */
/* Error classes                                                       */

static void test_error_classes(void)
{
    ts_server *s = get_plain(), *a = get_auth();
    struct hostile h;
    rlk_conn *c;
    rlk_conn_config cfg;
    rlk_resp_value *v;
    char url[256];
    size_t i;
    static const struct {
        const char *raw;
        rlk_error_class ec;
    } fake_cases[] = {
        {"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN "
         "NOSAVE.\r\n",
         RLK_EC_BUSY},
        {"-LOADING Redis is loading the dataset in memory\r\n", RLK_EC_LOADING},
        {"-MOVED 3999 127.0.0.1:6381\r\n", RLK_EC_MOVED},
        {"-ASK 3999 127.0.0.1:6381\r\n", RLK_EC_ASK},
        {"-READONLY You can't write against a read only replica.\r\n", RLK_EC_READONLY},
        {"-NOSCRIPT No matching script. Please use EVAL.\r\n", RLK_EC_NOSCRIPT},
        {"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
         RLK_EC_WRONGPASS},
        {"-NOAUTH Authentication required.\r\n", RLK_EC_NOAUTH},
        {"-BUSY\r\n", RLK_EC_BUSY},
        {"!29\r\nLOADING loading in blob form.\r\n", RLK_EC_LOADING},
        {"-TRYAGAIN Multiple keys request during rehashing of slot\r\n", RLK_EC_TRYAGAIN},
        {"-CLUSTERDOWN The cluster is down\r\n", RLK_EC_CLUSTERDOWN},
        {"-CROSSSLOT Keys in request don't hash to the same slot\r\n", RLK_EC_CROSSSLOT},
        {"-OOM command not allowed when used memory > 'maxmemory'.\r\n", RLK_EC_OOM},
        {"-NOPERM this user has no permissions to access one of the keys\r\n", RLK_EC_NOPERM},
        {"-BUSYGROUP Consumer Group name already exists\r\n", RLK_EC_OTHER},
        {"-MOVEDX 1 h:1\r\n", RLK_EC_OTHER},
        {"-ERR unknown command\r\n", RLK_EC_OTHER},
        {"-\r\n", RLK_EC_OTHER},
        {"+MOVED 1 h:1\r\n", RLK_EC_NONE},
        {"$5\r\nBUSY!\r\n", RLK_EC_NONE},
        {":1\r\n", RLK_EC_NONE},
        {"_\r\n", RLK_EC_NONE},
    };

    CHECK_EQ_INT(rlk_reply_error_class(NULL), RLK_EC_NONE);
    if (!CHECK(s && a)) return;
    url_of(url, sizeof url, s);
    c = CONNECT(url);
    if (c) {
        v = CMD(c, "EVALSHA", "0123456789012345678901234567890123456789", "0");
        CHECK_EQ_INT(rlk_reply_error_class(v), RLK_EC_NOSCRIPT);
        v = CMD(c, "NO-SUCH-COMMAND");
        CHECK_EQ_INT(rlk_reply_error_class(v), RLK_EC_OTHER);
        v = CMD(c, "PING");
        CHECK_EQ_INT(rlk_reply_error_class(v), RLK_EC_NONE);
        v = CMD(c, "GET", "no-such-key");
        CHECK_EQ_INT(rlk_reply_error_class(v), RLK_EC_NONE);
        /* WRONGPASS from AUTH on a server without a password. */
        v = CMD(c, "AUTH", "somebody", "nothing");
        CHECK_EQ_INT(rlk_reply_error_class(v), RLK_EC_WRONGPASS);
    }
    rlk_conn_free(c);

    /* NOAUTH: RESP2 without a password sends nothing at connect. */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", a->port);
    cfg_init(&cfg, url);
    cfg.protocol = 2;
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) CHECK_EQ_INT(rlk_conn_connect(c), RLK_OK);
    v = CMD(c, "GET", "k");
    CHECK_EQ_INT(rlk_reply_error_class(v), RLK_EC_NOAUTH);
    v = CMD(c, "AUTH", "default", "wrong");
    CHECK_EQ_INT(rlk_reply_error_class(v), RLK_EC_WRONGPASS);
    rlk_conn_free(c);

    if (hostile_start(&h, LONG_MS, 0)) {
        for (i = 0; i < sizeof fake_cases / sizeof fake_cases[0]; i++) {
            int rc = STATUS(h.c, &v, "RAW", fake_cases[i].raw);
            CHECK_MSG(rc == RLK_OK, "%s: %d %s", fake_cases[i].raw, rc, rlk_conn_errmsg(h.c));
            CHECK_MSG((int)rlk_reply_error_class(v) == (int)fake_cases[i].ec, "%s: class %d, want %d",
                      fake_cases[i].raw, (int)rlk_reply_error_class(v), (int)fake_cases[i].ec);
        }
        CHECK_EQ_INT(rlk_conn_is_connected(h.c), 1);
        CHECK_EQ_U64(rlk_conn_generation(h.c), 1);
    }
    hostile_stop(&h);
}

/* ------------------------------------------------------------------ */
/* Pipelines                                                           */

static void test_pipeline_10000(void)
{
    enum { N = 10000 };
    ts_server *s = get_plain();
    rlk_conn *c;
    rlk_request *reqs = calloc(N, sizeof *reqs);
    rlk_resp_value **replies = calloc(N, sizeof *replies);
    const char *(*argv)[3] = calloc(N, sizeof *argv);
    char (*keys)[24] = calloc(N, sizeof *keys), (*vals)[24] = calloc(N, sizeof *vals);
    static const char *const incr[2] = {"INCR", "pipe-counter"};
    char url[128];
    int rc, bad, i;
    if (!CHECK(s && reqs && replies && argv && keys && vals)) goto out0;
    url_of(url, sizeof url, s);
    c = CONNECT(url);
    if (!c) goto out0;
    CMD(c, "DEL", "pipe-counter");

    for (i = 0; i < N; i++) {
        reqs[i].argc = 2;
        reqs[i].argv = incr;
    }
    rc = rlk_conn_pipeline(c, N, reqs, replies);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    for (i = 0, bad = 0; rc == RLK_OK && i < N; i++)
        if (!is_int(replies[i], i + 1) && bad++ < 5) CHECK_INT(replies[i], i + 1);
    CHECK_EQ_INT(bad, 0);

    for (i = 0; i < N; i++) {
        snprintf(keys[i], sizeof keys[i], "pipe-k-%d", i);
        snprintf(vals[i], sizeof vals[i], "value-%d", i * 3);
        argv[i][0] = "SET";
        argv[i][1] = keys[i];
        argv[i][2] = vals[i];
        reqs[i].argc = 3;
        reqs[i].argv = argv[i];
    }
    rc = rlk_conn_pipeline(c, N, reqs, replies);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    for (i = 0, bad = 0; rc == RLK_OK && i < N; i++)
        if (!is_str(replies[i], "OK") && bad++ < 5) CHECK_STR(replies[i], "OK");
    CHECK_EQ_INT(bad, 0);
    for (i = 0; i < N; i++) {
        argv[i][0] = "GET";
        reqs[i].argc = 2;
    }
    rc = rlk_conn_pipeline(c, N, reqs, replies);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    for (i = 0, bad = 0; rc == RLK_OK && i < N; i++)
        if (!is_str(replies[i], vals[i]) && bad++ < 5) CHECK_STR(replies[i], vals[i]);
    CHECK_EQ_INT(bad, 0);
    CHECK_INT(CMD(c, "INCR", "pipe-counter"), N + 1);

    /* Empty pipeline, and a malformed request. */
    CHECK_EQ_INT(rlk_conn_pipeline(c, 0, reqs, replies), RLK_OK);
    reqs[1].argc = 0;
    CHECK_EQ_INT(rlk_conn_pipeline(c, 2, reqs, replies), RLK_ERR_INVALID);
    CHECK_STR(CMD(c, "PING"), "PONG");
    rlk_conn_free(c);
out0:
    free(reqs);
    free(replies);
    free(argv);
    free(keys);
    free(vals);
}

/* A large pipeline of large values: writing and reading must overlap. */
static void test_pipeline_large_values(void)
{
    enum { N = 300, SIZE = 64 * 1024 };
    ts_server *s = get_plain();
    rlk_conn *c;
    rlk_request reqs[N];
    rlk_resp_value *replies[N];
    const char *argv[3] = {"ECHO", NULL, NULL};
    size_t lens[2] = {4, SIZE};
    char url[128], *big = malloc(SIZE);
    int rc, i, bad = 0;
    if (!CHECK(s && big)) goto out;
    memset(big, 'z', SIZE);
    argv[1] = big;
    url_of(url, sizeof url, s);
    c = CONNECT(url);
    if (!c) goto out;
    for (i = 0; i < N; i++) {
        memset(&reqs[i], 0, sizeof reqs[i]);
        reqs[i].argc = 2;
        reqs[i].argv = argv;
        reqs[i].argvlen = lens;
    }
    rc = rlk_conn_pipeline(c, N, reqs, replies);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    for (i = 0; rc == RLK_OK && i < N; i++)
        if (!(replies[i] && replies[i]->type == RLK_RESP_BULK && replies[i]->len == SIZE &&
              memcmp(replies[i]->str, big, SIZE) == 0))
            bad++;
    CHECK_EQ_INT(bad, 0);
    rlk_conn_free(c);
out:
    free(big);
}

/* ------------------------------------------------------------------ */
/* Scripts                                                             */

static const char *const SCRIPT_INCR = "return redis.call('INCR', KEYS[1])";
static const char *const SCRIPT_TAG = "return 'got:' .. ARGV[1]";
static const char *const SCRIPT_COUNT = "return #KEYS .. ':' .. #ARGV";
static const char *const SCRIPT_BAD = "return (";
static const char *const SCRIPT_RUNTIME = "return redis.call('NO-SUCH-COMMAND')";

static void test_script_sha1(void)
{
    ts_server *s = get_plain();
    rlk_conn *c;
    rlk_script sc;
    rlk_resp_value *v;
    const char *argv[3] = {"SCRIPT", "LOAD", NULL};
    size_t lens[3] = {6, 4, 0};
    const char *texts[] = {SCRIPT_INCR, SCRIPT_TAG, SCRIPT_COUNT, "return 1"};
    char url[128];
    size_t i;
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    c = CONNECT(url);
    if (!c) return;
    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        rlk_script_init(&sc, texts[i], 0);
        CHECK_EQ_INT(strlen(sc.sha1), 40);
        CHECK(sc.len == strlen(texts[i]) && sc.text == texts[i]);
        v = CMD(c, "SCRIPT", "LOAD", texts[i]);
        CHECK_STR(v, sc.sha1);
    }
    /* An explicit length: only those bytes. */
    rlk_script_init(&sc, "return 7 -- and a comment", 8);
    argv[2] = sc.text;
    lens[2] = 8;
    CHECK_EQ_INT(rlk_conn_command(c, &v, 3, argv, lens), RLK_OK);
    CHECK_STR(v, sc.sha1);
    v = CMD(c, "EVALSHA", sc.sha1, "0");
    CHECK_INT(v, 7);
    rlk_conn_free(c);
}

static void test_script_flush_eval(void)
{
    ts_server *s = get_plain();
    rlk_conn *c;
    rlk_script inc, tag, count;
    rlk_resp_value *v;
    const char *keys[1] = {"script-counter"};
    const char *args[20];
    char url[128], tmp[20][8];
    int rc, i;
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    c = CONNECT(url);
    if (!c) return;
    rlk_script_init(&inc, SCRIPT_INCR, 0);
    rlk_script_init(&tag, SCRIPT_TAG, 0);
    rlk_script_init(&count, SCRIPT_COUNT, 0);
    CMD(c, "DEL", "script-counter");
    CHECK_STR(CMD(c, "SCRIPT", "FLUSH"), "OK");
    rc = rlk_conn_eval(c, &v, &inc, 1, 1, keys, NULL);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    CHECK_INT(v, 1);
    CHECK_STR(CMD(c, "SCRIPT", "FLUSH"), "OK");
    rc = rlk_conn_eval(c, &v, &inc, 1, 1, keys, NULL);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    CHECK_INT(v, 2);
    /* Loaded now: a third call is one EVALSHA. */
    rc = rlk_conn_eval(c, &v, &inc, 1, 1, keys, NULL);
    CHECK_INT(v, 3);
    v = CMD(c, "SCRIPT", "EXISTS", inc.sha1);
    CHECK(v && v->type == RLK_RESP_ARRAY && v->len == 1 && is_int(v->child, 1));

    args[0] = "world";
    rc = rlk_conn_eval(c, &v, &tag, 0, 1, args, NULL);
    CHECK_STR(v, "got:world");

    /* More arguments than fit the stack (another path), after a flush. */
    for (i = 0; i < 20; i++) {
        snprintf(tmp[i], sizeof tmp[i], "a%d", i);
        args[i] = tmp[i];
    }
    CHECK_STR(CMD(c, "SCRIPT", "FLUSH"), "OK");
    rc = rlk_conn_eval(c, &v, &count, 3, 20, args, NULL);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    CHECK_STR(v, "3:17");
    rc = rlk_conn_eval(c, &v, &count, 0, 20, args, NULL);
    CHECK_STR(v, "0:20");
    rc = rlk_conn_eval(c, &v, &count, 5, 5, args, NULL);
    CHECK_STR(v, "5:0");

    /* Bad key counts are the caller's mistake. */
    CHECK_EQ_INT(rlk_conn_eval(c, &v, &count, 2, 1, args, NULL), RLK_ERR_INVALID);
    CHECK(v == NULL);
    CHECK_EQ_INT(rlk_conn_eval(c, &v, &count, -1, 1, args, NULL), RLK_ERR_INVALID);
    CHECK_STR(CMD(c, "PING"), "PONG");
    rlk_conn_free(c);
}

static void test_script_flush_pipeline(void)
{
    ts_server *s = get_plain();
    rlk_conn *c;
    rlk_script inc, tag;
    rlk_request reqs[8];
    rlk_resp_value *replies[24];
    rlk_request many[24];
    const char *k1[1] = {"pipe-script-counter"};
    const char *ax[1] = {"x"}, *ay[1] = {"y"};
    const char *ping[1] = {"PING"};
    const char *incr[2] = {"INCR", "pipe-plain-counter"};
    const char *echo[2] = {"ECHO", "z"};
    char url[128];
    int rc, i;
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    c = CONNECT(url);
    if (!c) return;
    rlk_script_init(&inc, SCRIPT_INCR, 0);
    rlk_script_init(&tag, SCRIPT_TAG, 0);
    CMD(c, "DEL", "pipe-script-counter", "pipe-plain-counter");

    memset(reqs, 0, sizeof reqs);
    reqs[0] = (rlk_request){&inc, 1, 1, k1, NULL};
    reqs[1] = (rlk_request){NULL, 0, 1, ping, NULL};
    reqs[2] = (rlk_request){&tag, 0, 1, ax, NULL};
    reqs[3] = (rlk_request){NULL, 0, 2, incr, NULL};
    reqs[4] = (rlk_request){&inc, 1, 1, k1, NULL};
    reqs[5] = (rlk_request){&tag, 0, 1, ay, NULL};
    reqs[6] = (rlk_request){NULL, 0, 2, echo, NULL};
    reqs[7] = (rlk_request){&inc, 1, 1, k1, NULL};

    /* Scripts cached: one round. */
    CHECK_STR(CMD(c, "SCRIPT", "LOAD", SCRIPT_INCR), inc.sha1);
    CHECK_STR(CMD(c, "SCRIPT", "LOAD", SCRIPT_TAG), tag.sha1);
    rc = rlk_conn_pipeline(c, 8, reqs, replies);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    if (rc == RLK_OK) {
        CHECK_INT(replies[0], 1);
        CHECK_STR(replies[1], "PONG");
        CHECK_STR(replies[2], "got:x");
        CHECK_INT(replies[3], 1);
        CHECK_INT(replies[4], 2);
        CHECK_STR(replies[5], "got:y");
        CHECK_STR(replies[6], "z");
        CHECK_INT(replies[7], 3);
    }

    /* After a flush: the same replies, in the same places. */
    CHECK_STR(CMD(c, "SCRIPT", "FLUSH"), "OK");
    rc = rlk_conn_pipeline(c, 8, reqs, replies);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    if (rc == RLK_OK) {
        CHECK_INT(replies[0], 4);
        CHECK_STR(replies[1], "PONG");
        CHECK_STR(replies[2], "got:x");
        CHECK_INT(replies[3], 2);
        CHECK_INT(replies[4], 5);
        CHECK_STR(replies[5], "got:y");
        CHECK_STR(replies[6], "z");
        CHECK_INT(replies[7], 6);
        for (i = 0; i < 8; i++)
            CHECK_MSG(rlk_reply_error_class(replies[i]) != RLK_EC_NOSCRIPT, "reply %d NOSCRIPT",
                      i);
    }
    /* Only one of the two flushed: the other is called at once. */
    CHECK_STR(CMD(c, "SCRIPT", "FLUSH"), "OK");
    CHECK_STR(CMD(c, "SCRIPT", "LOAD", SCRIPT_TAG), tag.sha1);
    rc = rlk_conn_pipeline(c, 8, reqs, replies);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    if (rc == RLK_OK) {
        CHECK_INT(replies[0], 7);
        CHECK_STR(replies[2], "got:x");
        CHECK_INT(replies[4], 8);
        CHECK_STR(replies[6], "z");
        CHECK_INT(replies[7], 9);
    }

    /* More retries than the small array holds. */
    for (i = 0; i < 24; i++) many[i] = (rlk_request){&inc, 1, 1, k1, NULL};
    CHECK_STR(CMD(c, "SCRIPT", "FLUSH"), "OK");
    rc = rlk_conn_pipeline(c, 24, many, replies);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    for (i = 0; rc == RLK_OK && i < 24; i++) CHECK_INT(replies[i], 10 + i);
    CHECK_STR(CMD(c, "PING"), "PONG");
    rlk_conn_free(c);
}

static void test_script_errors(void)
{
    ts_server *s = get_plain();
    rlk_conn *c;
    rlk_script bad, runtime;
    rlk_request reqs[3];
    rlk_resp_value *v, *replies[3];
    const char *ping[1] = {"PING"};
    char url[128];
    int rc;
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    c = CONNECT(url);
    if (!c) return;
    rlk_script_init(&bad, SCRIPT_BAD, 0);
    rlk_script_init(&runtime, SCRIPT_RUNTIME, 0);

    rc = rlk_conn_eval(c, &v, &bad, 0, 0, NULL, NULL);
    CHECK_MSG(rc == RLK_ERR_SERVER || (rc == RLK_OK && is_err(v)), "rc %d", rc);
    CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "SCRIPT LOAD") &&
                  ts_contains(rlk_conn_errmsg(c), "compiling"),
              "errmsg: %s", rlk_conn_errmsg(c));
    CHECK_EQ_INT(rlk_conn_is_connected(c), 1);
    CHECK_STR(CMD(c, "PING"), "PONG");

    memset(reqs, 0, sizeof reqs);
    reqs[0] = (rlk_request){NULL, 0, 1, ping, NULL};
    reqs[1] = (rlk_request){&bad, 0, 0, NULL, NULL};
    reqs[2] = (rlk_request){NULL, 0, 1, ping, NULL};
    rc = rlk_conn_pipeline(c, 3, reqs, replies);
    CHECK_EQ_INT(rc, RLK_ERR_SERVER);
    CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "SCRIPT LOAD") &&
                  ts_contains(rlk_conn_errmsg(c), "compiling"),
              "errmsg: %s", rlk_conn_errmsg(c));
    CHECK_EQ_INT(rlk_conn_is_connected(c), 1);
    /* Still in step with the server. */
    CHECK_STR(CMD(c, "ECHO", "in-step"), "in-step");

    /* A script that fails when run: an error reply, RLK_OK. */
    rc = rlk_conn_eval(c, &v, &runtime, 0, 0, NULL, NULL);
    CHECK_EQ_INT(rc, RLK_OK);
    CHECK_MSG(is_err(v) && rlk_reply_error_class(v) == RLK_EC_OTHER, "type %c",
              v ? v->type : '?');
    CHECK_STR(CMD(c, "PING"), "PONG");
    rlk_conn_free(c);
}

/* ------------------------------------------------------------------ */
/* Push messages                                                       */

static int publish(rlk_conn *p, const char *ch, const char *msg, int line)
{
    rlk_resp_value *v = run_cmd(p, line, "PUBLISH", ch, msg, (const char *)NULL);
    return v && v->type == RLK_RESP_INTEGER ? (int)v->integer : -1;
}

static void test_push_resp3(void)
{
    ts_server *s = get_plain();
    rlk_conn_config cfg;
    rlk_conn *c = NULL, *pub = NULL;
    rlk_resp_value *v, *replies[20];
    rlk_request reqs[20];
    const char *echo[20][2];
    char url[128], want[128][48], word[20][16];
    struct rec rec;
    int rc, i, j, nwant = 0;
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    memset(&rec, 0, sizeof rec);
    cfg_init(&cfg, url);
    cfg.on_push = rec_push;
    cfg.ctx = &rec;
    c = rlk_conn_new(&cfg);
    pub = CONNECT(url);
    if (!CHECK(c && pub)) goto out;
    CHECK_EQ_INT(rlk_conn_connect(c), RLK_OK);
    CHECK_EQ_INT(rlk_conn_subscribe(c, "news", 4), RLK_OK);
    CHECK_EQ_INT(rec.npush, 0); /* the confirmation is not a message */

    /* Commands and messages interleaved: every command its reply, every
     * message once, in order, by the time the next reply is in. */
    for (i = 0; i < 10; i++) {
        char cmd[16];
        for (j = 0; j < 1 + i % 3; j++) {
            snprintf(want[nwant], sizeof want[0], "msg-%d-%d", i, j);
            CHECK_EQ_INT(publish(pub, "news", want[nwant], __LINE__), 1);
            nwant++;
        }
        snprintf(cmd, sizeof cmd, "cmd-%d", i);
        v = CMD(c, "ECHO", cmd);
        CHECK_STR(v, cmd);
        CHECK_EQ_INT(rec.npush, nwant);
    }
    /* Messages in the middle of a pipeline. */
    for (i = 0; i < 5; i++) {
        snprintf(want[nwant], sizeof want[0], "pipe-msg-%d", i);
        CHECK_EQ_INT(publish(pub, "news", want[nwant], __LINE__), 1);
        nwant++;
    }
    for (i = 0; i < 20; i++) {
        snprintf(word[i], sizeof word[i], "pw-%d", i);
        echo[i][0] = "ECHO";
        echo[i][1] = word[i];
        reqs[i] = (rlk_request){NULL, 0, 2, echo[i], NULL};
    }
    rc = rlk_conn_pipeline(c, 20, reqs, replies);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    for (i = 0; rc == RLK_OK && i < 20; i++) CHECK_STR(replies[i], word[i]);
    CHECK_EQ_INT(rec.npush, nwant);

    /* wait_push: 0 when nothing comes (and the connection stays), 1 on a
     * message. */
    CHECK_EQ_INT(rlk_conn_wait_push(c, 100), 0);
    CHECK_EQ_INT(rlk_conn_is_connected(c), 1);
    snprintf(want[nwant], sizeof want[0], "waited-for");
    CHECK_EQ_INT(publish(pub, "news", want[nwant], __LINE__), 1);
    nwant++;
    CHECK_EQ_INT(rlk_conn_wait_push(c, LONG_MS), 1);
    CHECK_EQ_INT(rec.npush, nwant);
    CHECK_EQ_INT(rlk_conn_wait_push(c, 50), 0);
    CHECK_EQ_INT(rlk_conn_is_connected(c), 1);
    CHECK_STR(CMD(c, "PING"), "PONG");

    CHECK_EQ_INT(rec.bad_push, 0);
    CHECK_EQ_STR(rec.channel, "news");
    CHECK_EQ_INT(rec.npush, nwant);
    for (i = 0; i < nwant && i < rec.npush; i++) CHECK_EQ_STR(rec.push[i], want[i]);

    /* Unsubscribed: nobody listens any more. */
    CHECK_EQ_INT(rlk_conn_unsubscribe(c, "news", 4), RLK_OK);
    CHECK_EQ_INT(publish(pub, "news", "unheard", __LINE__), 0);
    CHECK_STR(CMD(c, "PING"), "PONG");
    CHECK_EQ_INT(rec.npush, nwant);
    CHECK_EQ_U64(rlk_conn_generation(c), 1);
out:
    rlk_conn_free(c);
    rlk_conn_free(pub);
}

/* A publisher in another thread, publishing while the subscriber sends
 * commands: messages land in the middle of replies. */
enum { CONC_MSGS = 300, CONC_CMDS = 300 };

struct seq {
    int next, bad;
};

static void seq_push(void *ctx, rlk_conn *c, const rlk_resp_value *m)
{
    struct seq *q = ctx;
    const rlk_resp_value *p = rlk_resp_value_at(m, 2);
    char want[32];
    snprintf(want, sizeof want, "m-%d", q->next);
    if (p && p->len == strlen(want) && memcmp(p->str, want, p->len) == 0) q->next++;
    else q->bad++;
}

struct publisher {
    const char *url;
    int published, failed;
};

static void *publish_all(void *arg)
{
    struct publisher *p = arg;
    rlk_conn_config cfg;
    rlk_conn *c;
    char msg[32];
    int i;
    cfg_init(&cfg, p->url);
    c = rlk_conn_new(&cfg);
    for (i = 0; c && i < CONC_MSGS; i++) {
        const char *argv[3] = {"PUBLISH", "busy", msg};
        rlk_resp_value *v;
        snprintf(msg, sizeof msg, "m-%d", i);
        if (rlk_conn_command(c, &v, 3, argv, NULL) != RLK_OK || !is_int(v, 1)) p->failed++;
        else p->published++;
    }
    rlk_conn_free(c);
    return NULL;
}

static void test_push_resp3_concurrent(void)
{
    ts_server *s = get_plain();
    rlk_conn_config cfg;
    rlk_conn *c;
    struct seq q = {0, 0};
    struct publisher pub;
    pthread_t th;
    char url[128], word[32];
    int i, bad = 0, started;
    int64_t deadline;
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    cfg_init(&cfg, url);
    cfg.on_push = seq_push;
    cfg.ctx = &q;
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL) || !CHECK(rlk_conn_connect(c) == RLK_OK) ||
        !CHECK(rlk_conn_subscribe(c, "busy", 4) == RLK_OK)) {
        rlk_conn_free(c);
        return;
    }
    memset(&pub, 0, sizeof pub);
    pub.url = url;
    started = pthread_create(&th, NULL, publish_all, &pub) == 0;
    CHECK(started);
    for (i = 0; i < CONC_CMDS; i++) {
        const char *argv[2] = {"ECHO", word};
        rlk_resp_value *v;
        snprintf(word, sizeof word, "echo-%d", i);
        if (rlk_conn_command(c, &v, 2, argv, NULL) != RLK_OK || !is_str(v, word)) bad++;
    }
    if (started) pthread_join(th, NULL);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(pub.failed, 0);
    CHECK_EQ_INT(pub.published, CONC_MSGS);
    printf("    (%d of %d messages arrived during commands)\n", q.next, CONC_MSGS);
    /* What is still on its way comes through wait_push. */
    deadline = ts_now_ms() + LONG_MS;
    while (q.next + q.bad < CONC_MSGS && ts_now_ms() < deadline)
        if (rlk_conn_wait_push(c, LONG_MS) < 0) break;
    CHECK_EQ_INT(q.next, CONC_MSGS);
    CHECK_EQ_INT(q.bad, 0);
    CHECK_EQ_INT(rlk_conn_wait_push(c, 50), 0);
    CHECK_EQ_U64(rlk_conn_generation(c), 1);
    rlk_conn_free(c);
}

static void test_pubsub_resp2(void)
{
    ts_server *s = get_plain();
    rlk_conn_config cfg;
    rlk_conn *c = NULL, *pub = NULL;
    rlk_resp_value *v, *replies[1];
    rlk_request req;
    rlk_script sc;
    const char *get[2] = {"GET", "k"};
    char url[128];
    struct rec rec;
    int rc;
    int64_t deadline;
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    memset(&rec, 0, sizeof rec);
    cfg_init(&cfg, url);
    cfg.protocol = 2;
    cfg.on_push = rec_push;
    cfg.ctx = &rec;
    c = rlk_conn_new(&cfg);
    pub = CONNECT(url);
    if (!CHECK(c && pub)) goto out;
    CHECK_EQ_INT(rlk_conn_connect(c), RLK_OK);
    CHECK_EQ_INT(rlk_conn_get_info(c)->protocol, 2);
    CHECK_EQ_INT(rlk_conn_subscribe(c, "chan2", 5), RLK_OK);

    /* A dedicated subscriber: commands are refused here, not sent. */
    rc = STATUS(c, &v, "GET", "k");
    CHECK_EQ_INT(rc, RLK_ERR_INVALID);
    CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "SUBSCRIBE"), "errmsg: %s", rlk_conn_errmsg(c));
    req = (rlk_request){NULL, 0, 2, get, NULL};
    CHECK_EQ_INT(rlk_conn_pipeline(c, 1, &req, replies), RLK_ERR_INVALID);
    rlk_script_init(&sc, "return 1", 0);
    CHECK_EQ_INT(rlk_conn_eval(c, &v, &sc, 0, 0, NULL, NULL), RLK_ERR_INVALID);
    req = (rlk_request){&sc, 0, 0, NULL, NULL};
    CHECK_EQ_INT(rlk_conn_pipeline(c, 1, &req, replies), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk_conn_is_connected(c), 1);
    /* PING is allowed (RESP2 answers it with an array). */
    v = CMD(c, "PING");
    CHECK_MSG(v && v->type == RLK_RESP_ARRAY && is_str(v->child, "pong"), "PING: type %c",
              v ? v->type : '?');
    CHECK_EQ_INT(rec.npush, 0);

    CHECK_EQ_INT(publish(pub, "chan2", "first", __LINE__), 1);
    CHECK_EQ_INT(publish(pub, "chan2", "second", __LINE__), 1);
    CHECK_EQ_INT(publish(pub, "chan2", "third", __LINE__), 1);
    deadline = ts_now_ms() + LONG_MS;
    while (rec.npush < 3 && ts_now_ms() < deadline) {
        rc = rlk_conn_wait_push(c, LONG_MS);
        if (!CHECK_MSG(rc == 1, "wait_push: %d %s", rc, rlk_conn_errmsg(c))) break;
    }
    CHECK_EQ_INT(rec.npush, 3);
    CHECK_EQ_INT(rec.bad_push, 0);
    CHECK_EQ_STR(rec.push[0], "first");
    CHECK_EQ_STR(rec.push[1], "second");
    CHECK_EQ_STR(rec.push[2], "third");
    CHECK_EQ_STR(rec.channel, "chan2");
    CHECK_EQ_INT(rlk_conn_wait_push(c, 100), 0);
    CHECK_EQ_INT(rlk_conn_is_connected(c), 1);

    /* A message that arrives before the unsubscription is still one. */
    CHECK_EQ_INT(publish(pub, "chan2", "fourth", __LINE__), 1);
    CHECK_EQ_INT(rlk_conn_unsubscribe(c, "chan2", 5), RLK_OK);
    CHECK_EQ_INT(rec.npush, 4);
    CHECK_EQ_STR(rec.push[3], "fourth");
    CHECK_EQ_INT(publish(pub, "chan2", "unheard", __LINE__), 0);
    CHECK_STR(CMD(c, "SET", "k", "back-to-normal"), "OK");
    CHECK_STR(CMD(c, "GET", "k"), "back-to-normal");
    CHECK_EQ_INT(rec.npush, 4);
out:
    rlk_conn_free(c);
    rlk_conn_free(pub);
}

/* A push message cut in two by a wait that timed out: the rest arrives
 * with the next command's reply, and both come out whole. */
static void test_push_split_across_calls(void)
{
    struct fake_log log;
    fake_server *fs;
    rlk_conn_config cfg;
    rlk_conn *c = NULL;
    rlk_resp_value *v;
    struct rec rec;
    char url[128];
    int rc;
    log_init(&log, 0);
    memset(&rec, 0, sizeof rec);
    fs = fake_start(fake_scripted, &log);
    if (!CHECK(fs != NULL)) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", fake_port(fs));
    cfg_init(&cfg, url);
    cfg.on_push = rec_push;
    cfg.ctx = &rec;
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL) || !CHECK(rlk_conn_connect(c) == RLK_OK)) goto out;
    rc = STATUS(c, &v, "RAW",
                "+OK\r\n>3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$22\r\nsplit across two c");
    CHECK_EQ_INT(rc, RLK_OK);
    CHECK_STR(v, "OK");
    CHECK_EQ_INT(rlk_conn_wait_push(c, 200), 0);
    CHECK_EQ_INT(rlk_conn_is_connected(c), 1);
    CHECK_EQ_INT(rec.npush, 0);
    rc = STATUS(c, &v, "RAW", "alls\r\n*2\r\n$5\r\nfirst\r\n$6\r\nsecond\r\n");
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_conn_errmsg(c));
    CHECK_MSG(v && v->type == RLK_RESP_ARRAY && v->len == 2 && is_str(v->child, "first") &&
                  is_str(v->child->next, "second"),
              "reply: type %c len %zu", v ? v->type : '?', v ? v->len : 0);
    CHECK_EQ_INT(rec.npush, 1);
    CHECK_EQ_INT(rec.bad_push, 0);
    CHECK_EQ_STR(rec.push[0], "split across two calls");
    CHECK_EQ_STR(rec.channel, "ch");
    CHECK_STR(CMD(c, "PING"), "PONG");
out:
    rlk_conn_free(c);
    fake_stop(fs);
    pthread_mutex_destroy(&log.mu);
}

/* ------------------------------------------------------------------ */
/* Restarts and reconnection                                           */

static ts_server *get_restart(void)
{
    if (!restart_srv) restart_srv = ts_start(NULL);
    return restart_srv;
}

static void test_reconnect_after_restart(void)
{
    ts_server *s = get_restart();
    rlk_conn_config cfg;
    rlk_conn *c = NULL, *off = NULL;
    rlk_resp_value *v;
    struct rec rec, rec_off;
    char url[128];
    int rc;
    if (!CHECK(s != NULL)) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/1", s->port);
    memset(&rec, 0, sizeof rec);
    memset(&rec_off, 0, sizeof rec_off);
    cfg_init(&cfg, url);
    cfg.on_connect = rec_connect;
    cfg.ctx = &rec;
    c = rlk_conn_new(&cfg);
    cfg.reconnect_attempts = -1;
    cfg.ctx = &rec_off;
    off = rlk_conn_new(&cfg);
    if (!CHECK(c && off)) goto out;
    CHECK_EQ_INT(rlk_conn_connect(c), RLK_OK);
    CHECK_EQ_INT(rlk_conn_connect(off), RLK_OK);
    CHECK_STR(CMD(c, "SET", "before-restart", "1"), "OK");
    CHECK_EQ_U64(rlk_conn_generation(c), 1);
    CHECK_EQ_INT(rec.connects, 1);
    CHECK_EQ_INT(rec.last_reconnected, 0);

    if (!CHECK(ts_restart(s) == 0)) goto out;

    /* The next command reconnects by itself, and says so. */
    rc = STATUS(c, &v, "GET", "before-restart");
    CHECK_MSG(rc == RLK_OK, "after restart: %d %s", rc, rlk_conn_errmsg(c));
    CHECK_MSG(v && v->type == RLK_RESP_NULL, "a fresh server: GET type %c", v ? v->type : '?');
    CHECK_EQ_U64(rlk_conn_generation(c), 2);
    CHECK_EQ_INT(rec.connects, 2);
    CHECK_EQ_INT(rec.last_reconnected, 1);
    CHECK_EQ_INT(rlk_conn_get_info(c)->db, 1);
    CHECK_STR(CMD(c, "SET", "after-restart", "2"), "OK");

    /* Reconnecting off: the command fails, and nothing reconnects. */
    rc = STATUS(off, &v, "PING");
    CHECK_MSG(rc == RLK_ERR_CLOSED || rc == RLK_ERR_IO, "rc %d %s", rc, rlk_conn_errmsg(off));
    CHECK(v == NULL);
    CHECK(rlk_conn_errmsg(off)[0] != '\0');
    CHECK_EQ_INT(rlk_conn_is_connected(off), 0);
    rc = STATUS(off, &v, "PING");
    CHECK_EQ_INT(rc, RLK_ERR_CLOSED);
    CHECK_EQ_U64(rlk_conn_generation(off), 1);
    CHECK_EQ_INT(rec_off.connects, 1);
    /* ... until asked. */
    CHECK_EQ_INT(rlk_conn_reconnect(off), RLK_OK);
    CHECK_EQ_U64(rlk_conn_generation(off), 2);
    CHECK_EQ_INT(rec_off.last_reconnected, 1);
    CHECK_STR(CMD(off, "GET", "after-restart"), "2");
out:
    rlk_conn_free(c);
    rlk_conn_free(off);
}

/* The server drops an idle connection (CLIENT KILL).  With the stale
 * check before every command (stale_check_ms < 0) it is noticed before
 * the next command is sent, which then goes to a new connection.  With
 * the default window (the kill lands within 1 ms of the last reply), the
 * next command fails instead, is not re-sent, and the one after it
 * reconnects; either way the reconnect is reported. */
static void test_reconnect_after_client_kill(void)
{
    ts_server *s = get_plain();
    rlk_conn_config cfg;
    rlk_conn *c = NULL, *admin = NULL;
    rlk_resp_value *v;
    struct rec rec;
    char url[128], id[32];
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    memset(&rec, 0, sizeof rec);
    cfg_init(&cfg, url);
    cfg.on_connect = rec_connect;
    cfg.ctx = &rec;
    cfg.stale_check_ms = -1;
    c = rlk_conn_new(&cfg);
    admin = CONNECT(url);
    if (!CHECK(c && admin) || !CHECK(rlk_conn_connect(c) == RLK_OK)) goto out;
    snprintf(id, sizeof id, "%lld", (long long)rlk_conn_get_info(c)->client_id);
    CHECK_INT(CMD(admin, "CLIENT", "KILL", "ID", id), 1);
    v = CMD(c, "CLIENT", "ID");
    CHECK(v && v->type == RLK_RESP_INTEGER && v->integer != atoll(id));
    CHECK_EQ_U64(rlk_conn_generation(c), 2);
    CHECK_EQ_INT(rec.connects, 2);
    CHECK_EQ_INT(rec.last_reconnected, 1);
    CHECK_INT(v, rlk_conn_get_info(c)->client_id);
    rlk_conn_free(c);

    /* The default window: a stale connection detected by the command
     * itself. */
    memset(&rec, 0, sizeof rec);
    cfg.stale_check_ms = 0;
    c = rlk_conn_new(&cfg);
    if (!CHECK(c) || !CHECK(rlk_conn_connect(c) == RLK_OK)) goto out;
    snprintf(id, sizeof id, "%lld", (long long)rlk_conn_get_info(c)->client_id);
    CHECK_INT(CMD(admin, "CLIENT", "KILL", "ID", id), 1);
    {
        const char *argv[] = {"INCR", "kill-window"};
        int st = rlk_conn_command(c, &v, 2, argv, NULL);
        /* Within the window the command meets the closed socket:
         * RLK_ERR_IO, nothing re-sent; past it (a slow machine), the
         * check reconnects first and the INCR succeeds once. */
        if (st == RLK_OK) {
            CHECK(v && v->type == RLK_RESP_INTEGER && v->integer == 1);
        } else {
            CHECK_EQ_INT(st, RLK_ERR_IO);
            CHECK_EQ_U64(rlk_conn_generation(c), 1);
            v = CMD(c, "GET", "kill-window");
            CHECK(v && v->type == RLK_RESP_NULL);  /* the failed INCR never ran */
        }
    }
    CHECK_EQ_U64(rlk_conn_generation(c), 2);
    CHECK_EQ_INT(rec.last_reconnected, 1);
out:
    rlk_conn_free(c);
    rlk_conn_free(admin);
}

/* The server stops while a command waits for its reply. */
struct killer {
    ts_server *s;
    int ok;
};

static void *kill_when_blocked(void *p)
{
    struct killer *k = p;
    char url[128];
    rlk_conn *admin;
    int64_t deadline = ts_now_ms() + LONG_MS;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", k->s->port);
    admin = CONNECT(url);
    while (admin && ts_now_ms() < deadline) {
        rlk_resp_value *v = CMD(admin, "INFO", "clients");
        if (!v) break;
        if (ts_contains(v->str, "blocked_clients:1")) {
            k->ok = 1;
            break;
        }
        ts_pause_ms(10);
    }
    rlk_conn_free(admin);
    ts_halt(k->s);
    return NULL;
}

static void test_fail_mid_command(void)
{
    ts_server *s = get_restart();
    rlk_conn_config cfg;
    rlk_conn *c;
    rlk_resp_value *v;
    struct killer k;
    pthread_t th;
    char url[128];
    int rc;
    int64_t start;
    if (!CHECK(s != NULL)) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", s->port);
    cfg_init(&cfg, url);
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL)) return;
    CHECK_EQ_INT(rlk_conn_connect(c), RLK_OK);
    k.s = s;
    k.ok = 0;
    if (!CHECK(pthread_create(&th, NULL, kill_when_blocked, &k) == 0)) goto out;
    start = ts_now_ms();
    rc = STATUS(c, &v, "BLPOP", "never-filled", "0");
    pthread_join(th, NULL);
    CHECK(k.ok);
    CHECK_EQ_INT(rc, RLK_ERR_IO);
    CHECK(v == NULL);
    CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "BLPOP") && ts_contains(rlk_conn_errmsg(c), "closed"),
              "errmsg: %s", rlk_conn_errmsg(c));
    CHECK(ts_now_ms() - start < LONG_MS);
    /* Reported, not re-sent: no new connection was made. */
    CHECK_EQ_INT(rlk_conn_is_connected(c), 0);
    CHECK_EQ_U64(rlk_conn_generation(c), 1);

    CHECK_EQ_INT(ts_start_again(s), 0);
    CHECK_STR(CMD(c, "PING"), "PONG");
    CHECK_EQ_U64(rlk_conn_generation(c), 2);
    v = CMD(c, "INFO", "clients");
    CHECK_MSG(v && ts_contains(v->str, "blocked_clients:0"), "a BLPOP was sent again");
out:
    rlk_conn_free(c);
}

/* ------------------------------------------------------------------ */
/* A hostile server: floods, endless replies, replies sent twice        */

/* A configuration for a fake server, with url as its storage. */
static void cfg_fake(rlk_conn_config *cfg, char *url, size_t n, fake_server *fs)
{
    snprintf(url, n, "redis://127.0.0.1:%d", fake_port(fs));
    cfg_init(cfg, url);
}

#define PUSH_MSG ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nx\r\n"
#define PUSH_CONFIRM ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
#define FLOOD_MS 8000 /* the flood ends then: a client that ignores its
                         deadline fails the time check instead of hanging */

static void count_push(void *ctx, rlk_conn *c, const rlk_resp_value *m)
{
    (*(long *)ctx)++;
}

/* Took about ms: not before, and not much after (valgrind: MARGIN_MS). */
#define CHECK_TOOK(took, ms)                                                          \
    CHECK_MSG((took) >= (ms) - 20 && (took) < (ms) + MARGIN_MS, "took %lld ms, not ~%d", \
              (long long)(took), (ms))

enum flooded { FLOOD_COMMAND, FLOOD_PIPELINE, FLOOD_WAIT, FLOOD_HANDSHAKE };

/* One call against a server flooding msg (from the start for the
 * handshake, else after HELLO's reply), under a 300 ms deadline (200 ms
 * for the wait): it ends in time, as a timeout. */
static void flood(const char *msg, enum flooded call)
{
    struct fake_flood f = {msg, call != FLOOD_HANDSHAKE, FLOOD_MS, 0};
    fake_server *fs = fake_start(fake_flood, &f);
    static const char *const ping[1] = {"PING"};
    rlk_request q[2] = {{NULL, 0, 1, ping, NULL}, {NULL, 0, 1, ping, NULL}};
    rlk_resp_value *v[2];
    rlk_conn_config cfg;
    rlk_conn *c;
    char url[128];
    long pushes = 0;
    int64_t start;
    int rc;
    if (!CHECK(fs != NULL)) return;
    cfg_fake(&cfg, url, sizeof url, fs);
    cfg.command_timeout_ms = 300;
    cfg.connect_timeout_ms = 300;
    cfg.reconnect_attempts = -1;
    cfg.on_push = count_push;
    cfg.ctx = &pushes;
    c = rlk_conn_new(&cfg);
    if (!CHECK(c != NULL) ||
        (call != FLOOD_HANDSHAKE &&
         !CHECK_MSG(rlk_conn_connect(c) == RLK_OK, "connect: %s", rlk_conn_errmsg(c))))
        goto out;
    start = ts_now_ms();
    switch (call) {
    case FLOOD_COMMAND: rc = rlk_conn_command(c, v, 1, ping, NULL); break;
    case FLOOD_PIPELINE: rc = rlk_conn_pipeline(c, 2, q, v); break;
    case FLOOD_WAIT: rc = rlk_conn_wait_push(c, 200); break;
    default: rc = rlk_conn_connect(c); break;
    }
    CHECK_TOOK(ts_now_ms() - start, call == FLOOD_WAIT ? 200 : 300);
    CHECK_MSG(__atomic_load_n(&f.sent, __ATOMIC_SEQ_CST) > 100000, "flooded %zu bytes", f.sent);
    if (call == FLOOD_WAIT) {
        /* Confirmations are not messages: the wait ends empty, open. */
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_INT(rlk_conn_is_connected(c), 1);
    } else {
        CHECK_EQ_INT(rc, RLK_ERR_TIMEOUT);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "timed out"), "errmsg: %s", rlk_conn_errmsg(c));
        CHECK_EQ_INT(rlk_conn_is_connected(c), 0);
        CHECK_MSG(call == FLOOD_HANDSHAKE ? ts_contains(rlk_conn_errmsg(c), "HELLO")
                                          : pushes > 1000,
                  "%ld pushes delivered; errmsg: %s", pushes, rlk_conn_errmsg(c));
    }
out:
    rlk_conn_free(c);
    fake_stop(fs);
}

static void test_flood_command(void)
{
    flood(PUSH_MSG, FLOOD_COMMAND);
}

static void test_flood_pipeline(void)
{
    flood(PUSH_MSG, FLOOD_PIPELINE);
}

static void test_flood_wait_push(void)
{
    flood(PUSH_CONFIRM, FLOOD_WAIT);
}

static void test_flood_handshake(void)
{
    flood(PUSH_MSG, FLOOD_HANDSHAKE);
}

/* An endless reply against max_reply_bytes = 1 MiB: refused early, with
 * little memory held, whatever its shape. */
static void endless_reply(const char *what, const char *head, const char *unit,
                          const char *want_msg)
{
    struct fake_stream f = {head, unit, 16u << 20, 0};
    fake_server *fs = fake_start(fake_stream, &f);
    rlk_conn_config cfg;
    rlk_conn *c;
    rlk_resp_value *v;
    char url[128];
    long long base, peak;
    size_t sent;
    int64_t start, took;
    int rc;
    if (!CHECK(fs != NULL)) return;
    cfg_fake(&cfg, url, sizeof url, fs);
    cfg.command_timeout_ms = 3000;
    cfg.max_reply_bytes = 1u << 20;
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL) && CHECK_MSG(rlk_conn_connect(c) == RLK_OK, "connect: %s", rlk_conn_errmsg(c))) {
        base = mem_reset_peak();
        start = ts_now_ms();
        rc = STATUS(c, &v, "GET", "k");
        took = ts_now_ms() - start;
        peak = __atomic_load_n(&mem_peak, __ATOMIC_SEQ_CST) - base;
        sent = __atomic_load_n(&f.sent, __ATOMIC_SEQ_CST);
        CHECK_EQ_INT(rc, RLK_ERR_LIMIT);
        /* At the limit, not at the 3 s timeout (reading 1 MiB under
         * valgrind on a loaded machine takes a while). */
        CHECK_MSG(took < 2500, "took %lld ms", (long long)took);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(c), want_msg), "errmsg: %s", rlk_conn_errmsg(c));
        CHECK_EQ_INT(rlk_conn_is_connected(c), 0);
        CHECK_MSG(peak < 5 * (1 << 20) / 2, "the library held %lld bytes", peak);
        printf("    (%s: peak %lld bytes held, %zu bytes sent by then: %.2fx; \"%s\")\n", what,
               peak, sent, sent ? (double)peak / (double)sent : 0.0, rlk_conn_errmsg(c));
    }
    rlk_conn_free(c);
    fake_stop(fs);
}

static void test_reply_bound_elements(void)
{
    endless_reply("endless array of integers", "*4294967295\r\n", ":1\r\n", "needs more than 1048576 bytes of memory");
}

static void test_reply_bound_bytes(void)
{
    static char unit[16400];
    memcpy(unit, "$16384\r\n", 8);
    memset(unit + 8, 'x', 16384);
    memcpy(unit + 8 + 16384, "\r\n", 3);
    endless_reply("endless array of 16 KiB bulks", "*4294967295\r\n", unit, "reply larger than 1048576 bytes");
}

static void test_reply_bound_bulk(void)
{
    endless_reply("400 MB bulk", "$400000000\r\n", "xxxxxxxxxxxxxxxx", "1048576");
}

/* The default bound leaves room for any value a lock client meets. */
static void test_reply_bound_default(void)
{
    ts_server *s = get_plain();
    char url[128];
    rlk_conn *c;
    rlk_resp_value *v;
    const char *argv[3] = {"SET", "big10", NULL};
    size_t lens[3] = {3, 5, 10u << 20};
    char *big = malloc(lens[2]);
    if (!CHECK(s != NULL && big != NULL)) {
        free(big);
        return;
    }
    memset(big, 'v', lens[2]);
    big[12345] = 'w';
    argv[2] = big;
    url_of(url, sizeof url, s);
    c = CONNECT(url);
    if (c) {
        CHECK_EQ_INT(rlk_conn_command(c, &v, 3, argv, lens), RLK_OK);
        v = CMD(c, "GET", "big10");
        CHECK(v && v->type == RLK_RESP_BULK && v->len == lens[2] &&
              memcmp(v->str, big, lens[2]) == 0);
        CMD(c, "DEL", "big10");
    }
    rlk_conn_free(c);
    free(big);
}

/* A server that answers every ECHO twice: the copy must never pass for
 * the next command's reply.  reconnect < 0: reconnecting is off. */
static void duplicate_reply(int delay_ms, int reconnect)
{
    struct fake_twice f = {delay_ms, 0};
    fake_server *fs = fake_start(fake_twice, &f);
    rlk_conn_config cfg;
    rlk_conn *c;
    rlk_resp_value *v;
    char url[128];
    int64_t start, deadline;
    int rc;
    if (!CHECK(fs != NULL)) return;
    cfg_fake(&cfg, url, sizeof url, fs);
    cfg.reconnect_attempts = reconnect;
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL) && CHECK_MSG(rlk_conn_connect(c) == RLK_OK, "connect: %s", rlk_conn_errmsg(c))) {
        start = ts_now_ms();
        CHECK_STR(CMD(c, "ECHO", "reply-of-A"), "reply-of-A");
        /* The copy was sent, and the connection sat idle past
         * stale_check_ms (1 ms): then it must be seen. */
        deadline = ts_now_ms() + LONG_MS;
        while ((__atomic_load_n(&f.dups, __ATOMIC_SEQ_CST) < 1 || ts_now_ms() - start < 3) &&
               ts_now_ms() < deadline)
            ts_pause_ms(1);
        CHECK_EQ_INT(__atomic_load_n(&f.dups, __ATOMIC_SEQ_CST), 1);
        rc = STATUS(c, &v, "ECHO", "reply-of-B");
        CHECK_MSG(!is_str(v, "reply-of-A"), "B got A's duplicated reply (generation %llu)",
                  (unsigned long long)rlk_conn_generation(c));
        if (reconnect < 0) {
            CHECK_EQ_INT(rc, RLK_ERR_PROTO);
            CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "out of step"), "errmsg: %s",
                      rlk_conn_errmsg(c));
        } else {
            CHECK_EQ_INT(rc, RLK_OK);
            CHECK_STR(v, "reply-of-B");
            CHECK_EQ_U64(rlk_conn_generation(c), 2);
        }
    }
    rlk_conn_free(c);
    fake_stop(fs);
}

static void test_duplicate_reply_at_once(void)
{
    duplicate_reply(0, 0);
}

static void test_duplicate_reply_later(void)
{
    duplicate_reply(30, 0);
}

static void test_duplicate_reply_no_reconnect(void)
{
    duplicate_reply(30, -1);
}

/* rlk__conn_cap: one deadline over connect, command, reconnect, wait. */
static void test_cap(void)
{
    struct hostile h;
    fake_server *fs = fake_start(fake_silent, NULL);
    rlk_conn_config cfg;
    rlk_conn *c;
    rlk_resp_value *v;
    char url[128];
    int64_t start;
    if (!CHECK(fs != NULL)) return;
    cfg_fake(&cfg, url, sizeof url, fs);
    cfg.command_timeout_ms = 5000;
    cfg.connect_timeout_ms = 5000;
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) {
        /* The handshake of the command's connect never gets an answer. */
        start = ts_now_ms();
        rlk__conn_cap(c, start + 300);
        CHECK_EQ_INT(STATUS(c, &v, "PING"), RLK_ERR_TIMEOUT);
        CHECK_TOOK(ts_now_ms() - start, 300);
        CHECK_EQ_INT(rlk_conn_is_connected(c), 0);
    }
    rlk_conn_free(c);
    fake_stop(fs);

    /* A command the server holds. */
    if (hostile_start(&h, 5000, 0)) {
        start = ts_now_ms();
        rlk__conn_cap(h.c, start + 300);
        CHECK_EQ_INT(STATUS(h.c, &v, "HOLD"), RLK_ERR_TIMEOUT);
        CHECK_TOOK(ts_now_ms() - start, 300);
        CHECK_EQ_INT(rlk_conn_is_connected(h.c), 0);
        /* Without the cap, the next call is the command timeout's. */
        rlk__conn_cap(h.c, -1);
        CHECK_STR(CMD(h.c, "PING"), "PONG");
        /* A wait for messages ends at the cap, without closing. */
        start = ts_now_ms();
        rlk__conn_cap(h.c, start + 200);
        CHECK_EQ_INT(rlk_conn_wait_push(h.c, 5000), 0);
        CHECK_TOOK(ts_now_ms() - start, 200);
        CHECK_EQ_INT(rlk_conn_is_connected(h.c), 1);
    }
    hostile_stop(&h);

    /* Reconnecting to a closed port: no backoff pause past the cap. */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", ts_free_port(0));
    cfg_init(&cfg, url);
    cfg.reconnect_attempts = 5;
    cfg.backoff_initial_ms = 1000;
    cfg.backoff_max_ms = 1000;
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL)) {
        start = ts_now_ms();
        rlk__conn_cap(c, start + 200);
        CHECK_EQ_INT(rlk_conn_reconnect(c), RLK_ERR_TIMEOUT);
        CHECK_TOOK(ts_now_ms() - start, 200);
        CHECK_MSG(ts_contains(rlk_conn_errmsg(c), "refused"), "errmsg: %s", rlk_conn_errmsg(c));
    }
    rlk_conn_free(c);
}

/* The first EVALSHA (arg: a counter of them) gets NOSCRIPT at once,
 * everything else an answer after 250 ms. */
static void fake_slow_noscript(fake_conn *fc, void *arg)
{
    char **argv;
    int argc, *evals = arg;
    while ((argc = fake_read_command(fc, &argv, -1, NULL)) > 0) {
        const char *reply = "+OK\r\n";
        if (ieq(argv[0], "HELLO"))
            reply = HELLO3_REPLY;
        else if (ieq(argv[0], "CLIENT")) /* NO-EVICT, of the handshake: at once */
            reply = "+OK\r\n";
        else if (ieq(argv[0], "EVALSHA") && __atomic_fetch_add(evals, 1, __ATOMIC_SEQ_CST) == 0)
            reply = "-NOSCRIPT No matching script. Please use EVAL.\r\n";
        else if (fake_pause(fc, 250) != 0)
            return;
        else if (ieq(argv[0], "EVALSHA"))
            reply = ":1\r\n";
        if (fake_send_str(fc, reply)) return;
    }
}

/* EVALSHA, NOSCRIPT, SCRIPT LOAD and the retry share one command
 * timeout (400 ms): a server slow at each of them does not get three. */
static void test_eval_one_deadline(void)
{
    int evals = 0;
    fake_server *fs = fake_start(fake_slow_noscript, &evals);
    rlk_conn_config cfg;
    rlk_conn *c;
    rlk_script sc;
    rlk_resp_value *v;
    char url[128];
    int64_t start;
    if (!CHECK(fs != NULL)) return;
    rlk_script_init(&sc, "return 1", 0);
    cfg_fake(&cfg, url, sizeof url, fs);
    cfg.command_timeout_ms = 400;
    c = rlk_conn_new(&cfg);
    if (CHECK(c != NULL) && CHECK_MSG(rlk_conn_connect(c) == RLK_OK, "connect: %s", rlk_conn_errmsg(c))) {
        start = ts_now_ms();
        CHECK_EQ_INT(rlk_conn_eval(c, &v, &sc, 0, 0, NULL, NULL), RLK_ERR_TIMEOUT);
        CHECK_TOOK(ts_now_ms() - start, 400);
        /* The cap it set for the retry is gone: a script call answered
         * in 250 ms is in time. */
        CHECK_EQ_INT(rlk_conn_eval(c, &v, &sc, 0, 0, NULL, NULL), RLK_OK);
        CHECK_INT(v, 1);
    }
    rlk_conn_free(c);
    fake_stop(fs);
}

/* For tests/cli-ping.sh: a server that floods push messages after
 * HELLO's reply; prints its port, serves until stdin closes. */
static int serve_flood(void)
{
    struct fake_flood f = {PUSH_MSG, 1, 0, 0};
    fake_server *fs = fake_start(fake_flood, &f);
    char b[64];
    if (!fs) return 1;
    printf("%d\n", fake_port(fs));
    fflush(stdout);
    while (fread(b, 1, sizeof b, stdin) > 0)
        ;
    fake_stop(fs);
    return 0;
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    rlk_allocator a = {cnt_malloc, cnt_realloc, cnt_free, NULL};
    long long live;
    if (argc == 2 && strcmp(argv[1], "--serve-flood") == 0) return serve_flood();
    tl_init(argc, argv);
    signal(SIGPIPE, SIG_DFL); /* the library must never raise it */
    rlk_set_allocator(&a);

    RUN_TEST(test_tcp_handshake);
    RUN_TEST(test_tcp_connect_on_first_command);
    RUN_TEST(test_binary_and_large_values);
    RUN_TEST(test_ipv6);
    RUN_TEST(test_unix_socket);
    RUN_TEST(test_default_url_from_env);
    RUN_TEST(test_connect_errors);
    RUN_TEST(test_auth_password);
    RUN_TEST(test_auth_acl_user);
    RUN_TEST(test_select_db);
    RUN_TEST(test_protocol2_real);
    RUN_TEST(test_protocol2_no_hello);
    RUN_TEST(test_resp2_fallback);
    RUN_TEST(test_resp2_fallback_words);
#ifdef RLK_HAVE_OPENSSL
    RUN_TEST(test_tls_ok);
    RUN_TEST(test_tls_mutual);
    RUN_TEST(test_tls_failures);
    RUN_TEST(test_tls_pipeline);
#endif
    RUN_TEST(test_hostile_drip);
    RUN_TEST(test_hostile_big_bulk);
    RUN_TEST(test_hostile_no_prealloc);
    RUN_TEST(test_hostile_garbage);
    RUN_TEST(test_hostile_close_mid_reply);
    RUN_TEST(test_hostile_pipeline);
    RUN_TEST(test_push_handler_closes);
    RUN_TEST(test_handshake_deadline);
    RUN_TEST(test_reconnect_attempts_counted);
    RUN_TEST(test_reconnect_refused_for_now);
    RUN_TEST(test_reconnect_paced_across_calls);
    RUN_TEST(test_error_classes);
    RUN_TEST(test_pipeline_10000);
    RUN_TEST(test_pipeline_large_values);
    RUN_TEST(test_script_sha1);
    RUN_TEST(test_script_flush_eval);
    RUN_TEST(test_script_flush_pipeline);
    RUN_TEST(test_script_errors);
    RUN_TEST(test_push_resp3);
    RUN_TEST(test_push_resp3_concurrent);
    RUN_TEST(test_pubsub_resp2);
    RUN_TEST(test_push_split_across_calls);
    RUN_TEST(test_reconnect_after_restart);
    RUN_TEST(test_reconnect_after_client_kill);
    RUN_TEST(test_fail_mid_command);
    RUN_TEST(test_flood_command);
    RUN_TEST(test_flood_pipeline);
    RUN_TEST(test_flood_wait_push);
    RUN_TEST(test_flood_handshake);
    RUN_TEST(test_reply_bound_elements);
    RUN_TEST(test_reply_bound_bytes);
    RUN_TEST(test_reply_bound_bulk);
    RUN_TEST(test_reply_bound_default);
    RUN_TEST(test_duplicate_reply_at_once);
    RUN_TEST(test_duplicate_reply_later);
    RUN_TEST(test_duplicate_reply_no_reconnect);
    RUN_TEST(test_cap);
    RUN_TEST(test_eval_one_deadline);

    ts_stop(plain_srv);
    ts_stop(auth_srv);
    ts_stop(v6_srv);
    ts_stop(restart_srv);
    ts_stop(tls_main);
    ts_stop(tls_mtls);
    ts_stop(tls_wrong_host);
    ts_stop(tls_expired);

    /* Every connection was freed: the library holds nothing. */
    live = __atomic_load_n(&mem_live, __ATOMIC_SEQ_CST);
    tl_state.checks++;
    if (live != 0) {
        printf("FAIL main: the library still holds %lld bytes\n", live);
        tl_state.failed++;
    }
    return tl_finish();
}
