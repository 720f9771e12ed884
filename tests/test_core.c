/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The request core (src/core/core.c), alone: fed bytes the test makes up and
 * read back through its callbacks, with no server and no socket.  What
 * every primitive relies on: each request answered exactly once (by its
 * reply, or by NULL when the connection goes), in order, with its own
 * context; a reply that cannot be its request's breaks the connection;
 * a missing script is sent again as EVAL by building it again; the
 * handshake's rules; subscriptions' confirmations; deadlines and bounds.
 */
#include "config.h"

#define TESTLIB_MAIN
#include "testlib.h"
#include "core.h"
#include "internal.h"
#include "lua.h"
#include "resplock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the callbacks saw. */
#define MAXLOG 64
typedef struct {
    int n;
    struct {
        int64_t arg;
        char type;        /* the reply's type; 0: NULL (closed) */
        char text[80];
        int missing;
    } e[MAXLOG];
    int ready, closed, connected, pushes;
    char last_push[80];
    int again;            /* what again() answers */
    int submit_in_close;  /* a submit tried from a closed callback: its status */
    rlk__core *core;
} seen;

static seen S;

static void put_text(char *out, size_t n, const rlk_resp_value *v)
{
    if (!v) {
        snprintf(out, n, "-");
        return;
    }
    if (v->type == RLK_RESP_INTEGER) snprintf(out, n, "%lld", (long long)v->integer);
    else if (v->str) snprintf(out, n, "%.*s", (int)(v->len < n - 1 ? v->len : n - 1), v->str);
    else snprintf(out, n, "%c", (char)v->type);
}

static int build_words(rlk__core *c, rlk__req *q)
{
    /* ctx: the words, NUL-separated, ended by an empty one. */
    const char *p = q->ctx, *argv[8];
    int argc = 0;
    while (*p && argc < 8) {
        argv[argc++] = p;
        p += strlen(p) + 1;
    }
    return rlk__core_put(c, argc, argv, NULL);
}

static void on_reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    if (S.n >= MAXLOG) return;
    S.e[S.n].arg = q->arg;
    S.e[S.n].type = v ? (char)v->type : 0;
    S.e[S.n].missing = q->missing;
    put_text(S.e[S.n].text, sizeof S.e[S.n].text, v);
    S.n++;
    if (!v) S.submit_in_close = rlk__core_submit(c, q->ops, q->ctx, 99, RLK__DL_DEFAULT, 0);
}

static const rlk__req_ops any_ops = {build_words, on_reply, NULL, RLK__T_ANY};
static const rlk__req_ops int_ops = {build_words, on_reply, NULL, RLK__T_INTEGER};

static rlk_script script;

static int build_script(rlk__core *c, rlk__req *q)
{
    const char *argv[2] = {"k", "v"};
    return rlk__core_put_script(c, q, &script, 1, 2, argv, NULL);
}

static int again(rlk__core *c, const rlk__req *q)
{
    (void)c;
    (void)q;
    return S.again;
}

static const rlk__req_ops script_ops = {build_script, on_reply, NULL, RLK__T_INTEGER};

/* A script call whose second build fails (memory ran out for its EVAL). */
static int builds;
static int build_once(rlk__core *c, rlk__req *q)
{
    if (builds++ > 0) return rlk__core_fail(c, RLK_ERR_NOMEM, "out of memory");
    return build_script(c, q);
}
static const rlk__req_ops once_ops = {build_once, on_reply, NULL, RLK__T_INTEGER};
static const rlk__req_ops script_once_ops = {build_script, on_reply, again, RLK__T_INTEGER};

static void h_connected(void *ctx, rlk__core *c) { (void)ctx; (void)c; S.connected++; }
static void h_ready(void *ctx, rlk__core *c) { (void)ctx; (void)c; S.ready++; }
static void h_closed(void *ctx, rlk__core *c) { (void)ctx; (void)c; S.closed++; }

static void h_push(void *ctx, rlk__core *c, const rlk_resp_value *v)
{
    (void)ctx;
    (void)c;
    S.pushes++;
    put_text(S.last_push, sizeof S.last_push, rlk_resp_value_at(v, 0));
}

/* A core with cfg's connection fields (NULL: none). */
static rlk__core *make(const rlk__core_config *base)
{
    memset(&S, 0, sizeof S);
    rlk__core_config cfg;
    if (base) cfg = *base;
    else memset(&cfg, 0, sizeof cfg);
    cfg.command_timeout_ms = 1000;
    cfg.library = &rlk__lua_library;
    cfg.hooks.connected = h_connected;
    cfg.hooks.ready = h_ready;
    cfg.hooks.closed = h_closed;
    cfg.hooks.push = h_push;
    S.core = rlk__core_new(&cfg);
    CHECK(S.core != NULL);
    return S.core;
}

static int feed(rlk__core *c, const char *bytes, int64_t now)
{
    return rlk__core_feed(c, bytes, strlen(bytes), now);
}

/* The output as text, then marked sent. */
static void take(rlk__core *c, char *out, size_t n)
{
    const char *p;
    size_t len = rlk__core_output(c, &p);
    snprintf(out, n, "%.*s", (int)(len < n - 1 ? len : n - 1), p ? p : "");
    rlk__core_consume(c, len);
}

#define HELLO7 "%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n"
#define HELLO62 "%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n6.2.14\r\n"

#define NOEVICT "*3\r\n$6\r\nCLIENT\r\n$8\r\nNO-EVICT\r\n$2\r\non\r\n"

/* Connected and ready after HELLO answered hello; where that tells a
 * server with CLIENT NO-EVICT (Redis 7.0+), it is sent, not waited for,
 * and answered here. */
static rlk__core *ready_core(const char *hello)
{
    rlk__core *c = make(NULL);
    char out[512];
    CHECK_EQ_INT(rlk__core_connected(c, 100), RLK_OK);
    take(c, out, sizeof out);
    CHECK(strstr(out, "HELLO") != NULL);
    CHECK_EQ_INT(feed(c, hello, 101), RLK_OK);
    CHECK_EQ_INT(S.ready, 1);
    take(c, out, sizeof out);
    int seven = strcmp(hello, HELLO7) == 0;
    CHECK_EQ_STR(out, seven ? NOEVICT : "");
    if (seven) CHECK_EQ_INT(feed(c, "+OK\r\n", 101), RLK_OK);
    CHECK_EQ_INT((int)rlk__core_owed(c), 0);
    return c;
}

static void test_order_and_context(void)
{
    rlk__core *c = ready_core(HELLO7);
    static const char w1[] = "GET\0a\0", w2[] = "INCR\0b\0", w3[] = "TIME\0";
    CHECK_EQ_INT(rlk__core_submit(c, &any_ops, (void *)w1, 1, RLK__DL_DEFAULT, 0), RLK_OK);
    CHECK_EQ_INT(rlk__core_submit(c, &int_ops, (void *)w2, 2, RLK__DL_DEFAULT, 0), RLK_OK);
    CHECK_EQ_INT(rlk__core_submit(c, &any_ops, (void *)w3, 3, RLK__DL_DEFAULT, 0), RLK_OK);
    CHECK_EQ_INT((int)rlk__core_owed(c), 3);
    char out[512];
    take(c, out, sizeof out);
    CHECK(strstr(out, "*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$4\r\nINCR\r\n$1\r\nb\r\n*1\r\n$4\r\nTIME") != NULL);
    /* A push between replies is no reply. */
    CHECK_EQ_INT(feed(c, "$1\r\nx\r\n>3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n:7\r\n*0\r\n", 200),
                 RLK_OK);
    CHECK_EQ_INT(S.n, 3);
    CHECK_EQ_INT((int)S.e[0].arg, 1);
    CHECK_EQ_STR(S.e[0].text, "x");
    CHECK_EQ_INT((int)S.e[1].arg, 2);
    CHECK_EQ_STR(S.e[1].text, "7");
    CHECK_EQ_INT((int)S.e[2].arg, 3);
    CHECK_EQ_INT(S.pushes, 1);
    CHECK_EQ_STR(S.last_push, "message");
    CHECK_EQ_INT((int)rlk__core_owed(c), 0);
    rlk__core_free(c);
}

static void test_out_of_step(void)
{
    static const char w[] = "INCR\0b\0";
    char out[512];
    /* A reply to nothing. */
    rlk__core *c = ready_core(HELLO7);
    CHECK_EQ_INT(feed(c, ":1\r\n", 200), RLK_ERR_PROTO);
    CHECK_EQ_INT(feed(c, ":1\r\n", 201), RLK_ERR_PROTO); /* until closed */
    rlk__core_free(c);
    /* A reply to a request still in the output. */
    c = ready_core(HELLO7);
    CHECK_EQ_INT(rlk__core_submit(c, &int_ops, (void *)w, 1, RLK__DL_DEFAULT, 0), RLK_OK);
    CHECK_EQ_INT(feed(c, ":1\r\n", 200), RLK_ERR_PROTO);
    CHECK_EQ_INT(S.n, 0);
    rlk__core_free(c);
    /* A type its request never gets. */
    c = ready_core(HELLO7);
    CHECK_EQ_INT(rlk__core_submit(c, &int_ops, (void *)w, 1, RLK__DL_DEFAULT, 0), RLK_OK);
    take(c, out, sizeof out);
    CHECK_EQ_INT(feed(c, "$1\r\nx\r\n", 200), RLK_ERR_PROTO);
    CHECK_EQ_INT(S.n, 0);
    CHECK(strstr(rlk__core_errmsg(c), "cannot answer") != NULL);
    /* ... but an error answers anything. */
    rlk__core_closed(c, 201);
    CHECK_EQ_INT(S.n, 1);
    CHECK_EQ_INT(S.e[0].type, 0);
    rlk__core_free(c);
    c = ready_core(HELLO7);
    CHECK_EQ_INT(rlk__core_submit(c, &int_ops, (void *)w, 1, RLK__DL_DEFAULT, 0), RLK_OK);
    take(c, out, sizeof out);
    CHECK_EQ_INT(feed(c, "-ERR value is not an integer\r\n", 200), RLK_OK);
    CHECK_EQ_INT(S.n, 1);
    CHECK_EQ_INT(S.e[0].type, RLK_RESP_ERROR);
    rlk__core_free(c);
}

/* Every request owed hears once that its reply will not come, in order,
 * and then the owner; nothing can be queued meanwhile. */
static void test_closed_once(void)
{
    rlk__core *c = ready_core(HELLO7);
    static const char w[] = "PING\0";
    for (int i = 0; i < 20; i++)
        CHECK_EQ_INT(rlk__core_submit(c, &any_ops, (void *)w, i, RLK__DL_DEFAULT, 0), RLK_OK);
    char out[2048];
    take(c, out, sizeof out);
    CHECK_EQ_INT(feed(c, "+PONG\r\n+PONG\r\n", 200), RLK_OK);
    rlk__core_closed(c, 300);
    CHECK_EQ_INT(S.n, 20);
    int in_order = 1;
    for (int i = 0; i < 20; i++) in_order &= S.e[i].arg == i;
    CHECK(in_order);
    CHECK_EQ_INT(S.e[1].type, RLK_RESP_SIMPLE);
    CHECK_EQ_INT(S.e[2].type, 0);
    CHECK_EQ_INT(S.e[19].type, 0);
    CHECK_EQ_INT(S.closed, 1);
    CHECK_EQ_INT(S.submit_in_close, RLK_ERR_CLOSED);
    CHECK_EQ_INT((int)rlk__core_owed(c), 0);
    rlk__core_closed(c, 301); /* not connected: nothing */
    CHECK_EQ_INT(S.closed, 1);
    CHECK_EQ_INT(S.n, 20);
    /* Reconnected: the handshake again, a clean slate. */
    CHECK_EQ_INT(rlk__core_connected(c, 400), RLK_OK);
    CHECK_EQ_INT(S.connected, 2);
    CHECK(!rlk__core_ready(c));
    CHECK_EQ_INT(rlk__core_submit(c, &any_ops, (void *)w, 1, RLK__DL_DEFAULT, 0), RLK_ERR_CLOSED);
    CHECK_EQ_INT(rlk__core_broken(c), 0);
    take(c, out, sizeof out);
    CHECK_EQ_INT(feed(c, HELLO7, 401), RLK_OK);
    CHECK_EQ_INT(S.ready, 2);
    rlk__core_free(c);
}

/* NOSCRIPT: the same request, built again as EVAL, answered once. */
static void test_noscript_again(void)
{
    rlk_script_init(&script, "return 1", 0);
    rlk__core *c = ready_core(HELLO62); /* no FUNCTIONs: EVALSHA */
    char out[1024];
    CHECK_EQ_INT(rlk__core_submit(c, &script_ops, NULL, 5, RLK__DL_DEFAULT, 0), RLK_OK);
    take(c, out, sizeof out);
    CHECK(strstr(out, "EVALSHA") != NULL && strstr(out, script.sha1) != NULL);
    CHECK_EQ_INT(feed(c, "-NOSCRIPT No matching script. Please use EVAL.\r\n", 200), RLK_OK);
    CHECK_EQ_INT(S.n, 0);
    take(c, out, sizeof out);
    CHECK(strstr(out, "$4\r\nEVAL\r\n$8\r\nreturn 1\r\n$1\r\n1\r\n$1\r\nk\r\n$1\r\nv\r\n") != NULL);
    /* EVAL's own NOSCRIPT (a proxy's) is the answer: once only. */
    CHECK_EQ_INT(feed(c, "-NOSCRIPT again\r\n", 201), RLK_OK);
    CHECK_EQ_INT(S.n, 1);
    CHECK_EQ_INT((int)S.e[0].arg, 5);
    CHECK_EQ_INT(S.e[0].type, RLK_RESP_ERROR);
    /* A request whose owner says no: its reply is the error, marked. */
    S.again = 0;
    CHECK_EQ_INT(rlk__core_submit(c, &script_once_ops, NULL, 6, RLK__DL_DEFAULT, 0), RLK_OK);
    take(c, out, sizeof out);
    CHECK_EQ_INT(feed(c, "-NOSCRIPT No matching script.\r\n", 202), RLK_OK);
    CHECK_EQ_INT(S.n, 2);
    CHECK_EQ_INT(S.e[1].missing, 1);
    /* Built again but it cannot be: answered NULL at once (no reply
     * will come), never lost. */
    builds = 0;
    CHECK_EQ_INT(rlk__core_submit(c, &once_ops, NULL, 8, RLK__DL_DEFAULT, 0), RLK_OK);
    take(c, out, sizeof out);
    CHECK_EQ_INT(feed(c, "-NOSCRIPT No matching script.\r\n", 202), RLK_ERR_NOMEM);
    CHECK_EQ_INT(S.n, 3);
    CHECK_EQ_INT((int)S.e[2].arg, 8);
    CHECK_EQ_INT(S.e[2].type, 0);
    CHECK_EQ_INT((int)rlk__core_owed(c), 0);
    rlk__core_closed(c, 203);
    CHECK_EQ_INT(S.n, 3);
    rlk__core_free(c);
    c = ready_core(HELLO62);
    /* Forced EVAL at once: never built again. */
    CHECK_EQ_INT(rlk__core_submit(c, &script_ops, NULL, 7, RLK__DL_DEFAULT, RLK__REQ_EVAL), RLK_OK);
    take(c, out, sizeof out);
    CHECK(strstr(out, "EVAL\r\n") != NULL && strstr(out, "EVALSHA") == NULL);
    CHECK_EQ_INT(feed(c, ":1\r\n", 203), RLK_OK);
    CHECK_EQ_INT(S.n, 1);
    CHECK_EQ_STR(S.e[0].text, "1");
    rlk__core_free(c);
}

/* FCALL where HELLO tells a server with FUNCTIONs; a missing library is
 * loaded once and the call sent again as EVAL; a refused FUNCTION LOAD
 * leaves EVALSHA for the rest of the connection. */
static void test_fcall_and_load(void)
{
    /* One of the embedded scripts: it has a function in the library. */
    rlk_script_init(&script, rlk__lua_library.functions[0].text,
                    rlk__lua_library.functions[0].len);
    rlk__core *c = ready_core(HELLO7);
    char out[65536];
    CHECK_EQ_INT(rlk__core_submit(c, &script_ops, NULL, 1, RLK__DL_DEFAULT, 0), RLK_OK);
    take(c, out, sizeof out);
    CHECK(strncmp(out, "*5\r\n$5\r\nFCALL\r\n", 15) == 0);
    CHECK_EQ_INT(feed(c, "-ERR Function not found\r\n", 200), RLK_OK);
    take(c, out, sizeof out);
    CHECK(strstr(out, "FUNCTION\r\n$4\r\nLOAD") != NULL);
    CHECK(strstr(out, "$4\r\nEVAL\r\n") != NULL);
    CHECK_EQ_INT(S.n, 0);
    /* The load refused (an ACL), then the call's own answer. */
    CHECK_EQ_INT(feed(c, "-NOPERM no FUNCTION for you\r\n:1\r\n", 201), RLK_OK);
    CHECK_EQ_INT(S.n, 1);
    CHECK_EQ_STR(S.e[0].text, "1");
    CHECK_EQ_INT(rlk__core_submit(c, &script_ops, NULL, 2, RLK__DL_DEFAULT, 0), RLK_OK);
    take(c, out, sizeof out);
    CHECK(strstr(out, "EVALSHA") != NULL && strstr(out, "FCALL") == NULL);
    rlk__core_free(c);
}

static void test_deadlines(void)
{
    rlk__core *c = ready_core(HELLO7);
    static const char w[] = "PING\0";
    CHECK_EQ_INT(rlk__core_deadline(c), -1);
    CHECK_EQ_INT(rlk__core_submit(c, &any_ops, (void *)w, 1, 5000, 0), RLK_OK);
    rlk__core_clock(c, 1000);
    CHECK_EQ_INT(rlk__core_submit(c, &any_ops, (void *)w, 2, RLK__DL_DEFAULT, 0), RLK_OK);
    CHECK_EQ_INT(rlk__core_deadline(c), 2000);
    CHECK_EQ_INT(rlk__core_tick(c, 1999), RLK_OK);
    CHECK_EQ_INT(rlk__core_tick(c, 2000), RLK_ERR_TIMEOUT);
    CHECK(strstr(rlk__core_errmsg(c), "in time") != NULL);
    rlk__core_closed(c, 2001);
    CHECK_EQ_INT(S.n, 2);
    CHECK_EQ_INT(rlk__core_deadline(c), -1);
    rlk__core_free(c);
}

/* A request whose build says the server may hold the connection (a
 * WAIT, rlk__core_hold) moves its own reply deadline and those of the
 * requests queued behind it while the hold lasts, not those before it
 * nor those queued after it ended; a new connection forgets it. */
static int build_hold(rlk__core *c, rlk__req *q)
{
    rlk__core_hold(c, q, 700);
    return build_words(c, q);
}
static const rlk__req_ops hold_ops = {build_hold, on_reply, NULL, RLK__T_ANY};

static void test_hold(void)
{
    rlk__core *c = ready_core(HELLO7);
    static const char w[] = "WAIT\0" "1\0" "700\0", p[] = "PING\0";
    rlk__core_clock(c, 1000);
    CHECK_EQ_INT(rlk__core_submit(c, &any_ops, (void *)p, 1, RLK__DL_DEFAULT, 0), RLK_OK);
    CHECK_EQ_INT(rlk__core_deadline(c), 2000);
    rlk__core_clock(c, 1100);
    CHECK_EQ_INT(rlk__core_submit(c, &hold_ops, (void *)w, 2, RLK__DL_DEFAULT, 0), RLK_OK);
    rlk__core_clock(c, 1200);
    /* Behind the WAIT: 1200 + 1000, plus the 600 ms the hold has left. */
    CHECK_EQ_INT(rlk__core_submit(c, &any_ops, (void *)p, 3, RLK__DL_DEFAULT, 0), RLK_OK);
    char out[512];
    take(c, out, sizeof out);
    CHECK(strstr(out, "WAIT") != NULL);
    CHECK_EQ_INT(feed(c, "+PONG\r\n", 1300), RLK_OK);
    /* The WAIT's own: 1100 + 1000 + 700. */
    CHECK_EQ_INT(rlk__core_deadline(c), 2800);
    CHECK_EQ_INT(rlk__core_tick(c, 2799), RLK_OK);
    CHECK_EQ_INT(feed(c, ":1\r\n", 2799), RLK_OK);
    CHECK_EQ_INT(rlk__core_deadline(c), 2800);
    CHECK_EQ_INT(rlk__core_tick(c, 2799), RLK_OK);
    CHECK_EQ_INT(feed(c, "+PONG\r\n", 2799), RLK_OK);
    CHECK_EQ_INT(S.n, 3);
    /* The hold is over: a request queued now has its own deadline. */
    CHECK_EQ_INT(rlk__core_submit(c, &any_ops, (void *)p, 4, RLK__DL_DEFAULT, 0), RLK_OK);
    CHECK_EQ_INT(rlk__core_deadline(c), 3799);
    CHECK_EQ_INT(rlk__core_tick(c, 3799), RLK_ERR_TIMEOUT);
    rlk__core_closed(c, 3800);
    /* A new connection starts with no hold. */
    CHECK_EQ_INT(rlk__core_connected(c, 3900), RLK_OK);
    take(c, out, sizeof out);
    CHECK_EQ_INT(feed(c, HELLO7, 3901), RLK_OK);
    take(c, out, sizeof out);
    CHECK_EQ_INT(feed(c, "+OK\r\n", 3901), RLK_OK);
    CHECK_EQ_INT(rlk__core_submit(c, &hold_ops, (void *)w, 5, RLK__DL_DEFAULT, 0), RLK_OK);
    CHECK_EQ_INT(rlk__core_deadline(c), 3901 + 1000 + 700);
    rlk__core_free(c);
}

/* Confirmations answer their own (UN)SUBSCRIBE; one naming another
 * channel is out of step; an unsubscribe the server sends by itself (a
 * slot that moved) is a push. */
static void test_subscriptions(void)
{
    rlk__core *c = ready_core(HELLO7);
    char out[512];
    CHECK_EQ_INT(rlk__core_subscribe(c, 1, 0, "ch-a", &any_ops, NULL, 1), RLK_OK);
    CHECK_EQ_INT(rlk__core_subscribe(c, 1, 1, "ch-b", &any_ops, NULL, 2), RLK_OK);
    take(c, out, sizeof out);
    CHECK(strstr(out, "$9\r\nSUBSCRIBE\r\n$4\r\nch-a") != NULL);
    CHECK(strstr(out, "$10\r\nSSUBSCRIBE\r\n$4\r\nch-b") != NULL);
    CHECK_EQ_INT(feed(c, ">3\r\n$9\r\nsubscribe\r\n$4\r\nch-a\r\n:1\r\n"
                         ">3\r\n$10\r\nssubscribe\r\n$4\r\nch-b\r\n:1\r\n", 200), RLK_OK);
    CHECK_EQ_INT(S.n, 2);
    CHECK_EQ_INT(S.pushes, 0);
    /* The server drops ch-b by itself. */
    CHECK_EQ_INT(feed(c, ">3\r\n$12\r\nsunsubscribe\r\n$4\r\nch-b\r\n:0\r\n", 201), RLK_OK);
    CHECK_EQ_INT(S.pushes, 1);
    CHECK_EQ_STR(S.last_push, "sunsubscribe");
    /* A plain channel's confirmation does not answer a sharded one. */
    CHECK_EQ_INT(rlk__core_subscribe(c, 1, 1, "ch-c", &any_ops, NULL, 3), RLK_OK);
    take(c, out, sizeof out);
    CHECK_EQ_INT(feed(c, ">3\r\n$9\r\nsubscribe\r\n$4\r\nch-c\r\n:1\r\n", 202), RLK_ERR_PROTO);
    rlk__core_free(c);
    /* Nor another channel's. */
    c = ready_core(HELLO7);
    CHECK_EQ_INT(rlk__core_subscribe(c, 1, 0, "ch-a", &any_ops, NULL, 1), RLK_OK);
    take(c, out, sizeof out);
    CHECK_EQ_INT(feed(c, ">3\r\n$9\r\nsubscribe\r\n$4\r\nch-z\r\n:1\r\n", 200), RLK_ERR_PROTO);
    CHECK_EQ_INT(S.n, 0);
    rlk__core_free(c);
    /* A refusal is an error in the reply's place. */
    c = ready_core(HELLO7);
    CHECK_EQ_INT(rlk__core_subscribe(c, 1, 0, "ch-a", &any_ops, NULL, 1), RLK_OK);
    take(c, out, sizeof out);
    CHECK_EQ_INT(feed(c, "-NOPERM this user has no permissions to access the 'ch-a' channel\r\n", 200),
                 RLK_OK);
    CHECK_EQ_INT(S.n, 1);
    CHECK_EQ_INT(S.e[0].type, RLK_RESP_ERROR);
    rlk__core_free(c);
}

/* The handshake: words, fallbacks, refusals. */
static void test_handshake(void)
{
    rlk__core_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.username = "app";
    cfg.password = "pw";
    cfg.client_name = "w1";
    cfg.db = 3;
    rlk__core *c = make(&cfg);
    char out[512];
    CHECK_EQ_INT(rlk__core_connected(c, 100), RLK_OK);
    CHECK_EQ_INT(S.connected, 1);
    take(c, out, sizeof out);
    CHECK_EQ_STR(out, "*7\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$3\r\napp\r\n$2\r\npw\r\n"
                      "$7\r\nSETNAME\r\n$2\r\nw1\r\n");
    CHECK_EQ_INT(feed(c, HELLO7, 101), RLK_OK);
    CHECK_EQ_INT(S.ready, 0);
    take(c, out, sizeof out);
    /* CLIENT NO-EVICT (Redis 7.0+) with it, not waited for. */
    CHECK_EQ_STR(out, "*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n" NOEVICT);
    CHECK_EQ_INT(feed(c, "+OK\r\n", 102), RLK_OK);
    CHECK_EQ_INT(S.ready, 1);
    CHECK_EQ_INT((int)rlk__core_owed(c), 1);
    /* Refused (a user without it): no failure. */
    CHECK_EQ_INT(feed(c, "-NOPERM this user has no permissions to run the 'client|no-evict' command\r\n", 102),
                 RLK_OK);
    CHECK_EQ_INT((int)rlk__core_owed(c), 0);
    CHECK_EQ_INT(rlk__core_broken(c), 0);
    CHECK_EQ_INT(rlk__core_info(c)->protocol, 3);
    CHECK_EQ_STR(rlk__core_info(c)->user, "app");
    CHECK(rlk__core_resp3(c));
    rlk__core_free(c);
    /* Refused credentials. */
    c = make(&cfg);
    CHECK_EQ_INT(rlk__core_connected(c, 100), RLK_OK);
    take(c, out, sizeof out);
    CHECK_EQ_INT(feed(c, "-WRONGPASS invalid username-password pair\r\n", 101), RLK_ERR_AUTH);
    CHECK(strstr(rlk__core_errmsg(c), "authentication failed") != NULL);
    CHECK(strstr(rlk__core_errmsg(c), "pw") == NULL);
    rlk__core_free(c);
    /* A full server, whatever was asked. */
    c = make(NULL);
    CHECK_EQ_INT(rlk__core_connected(c, 100), RLK_OK);
    take(c, out, sizeof out);
    CHECK_EQ_INT(feed(c, "-ERR max number of clients reached\r\n", 101), RLK_ERR_SERVER);
    rlk__core_free(c);
    /* RESP2 only: no HELLO; AUTH with the password alone when no user. */
    memset(&cfg, 0, sizeof cfg);
    cfg.protocol = 2;
    cfg.password = "pw";
    c = make(&cfg);
    CHECK_EQ_INT(rlk__core_connected(c, 100), RLK_OK);
    take(c, out, sizeof out);
    /* CLIENT NO-EVICT after it, not waited for (no HELLO tells whether
     * the server has it). */
    CHECK_EQ_STR(out, "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n" NOEVICT);
    CHECK_EQ_INT(feed(c, "+OK\r\n", 101), RLK_OK);
    CHECK_EQ_INT(S.ready, 1);
    CHECK(!rlk__core_resp3(c));
    CHECK_EQ_INT(feed(c, "-ERR unknown subcommand 'NO-EVICT'\r\n", 101), RLK_OK);
    CHECK_EQ_INT(rlk__core_broken(c), 0);
    rlk__core_free(c);
    /* RESP2 with nothing to ask: ready at once. */
    cfg.password = NULL;
    c = make(&cfg);
    CHECK_EQ_INT(rlk__core_connected(c, 100), RLK_OK);
    CHECK_EQ_INT(S.ready, 1);
    take(c, out, sizeof out);
    CHECK_EQ_STR(out, NOEVICT);
    CHECK_EQ_INT(rlk__core_connected(c, 100), RLK_ERR_INVALID);
    rlk__core_free(c);
}

/* A reply over max_input is refused before it is whole. */
static void test_input_bound(void)
{
    rlk__core_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.max_input = 64;
    rlk__core *c = make(&cfg);
    char out[512];
    CHECK_EQ_INT(rlk__core_connected(c, 100), RLK_OK);
    take(c, out, sizeof out);
    CHECK_EQ_INT(feed(c, HELLO7, 101), RLK_OK);
    static const char w[] = "GET\0k\0";
    CHECK_EQ_INT(rlk__core_submit(c, &any_ops, (void *)w, 1, RLK__DL_DEFAULT, 0), RLK_OK);
    take(c, out, sizeof out);
    char big[200];
    snprintf(big, sizeof big, "$100\r\n%090d", 0);
    int r = feed(c, big, 102);
    CHECK_MSG(r == RLK_ERR_LIMIT || r == RLK_ERR_PROTO, "status %d", r);
    CHECK_EQ_INT(S.n, 0);
    rlk__core_free(c);
}

/* Error classes, in one place. */
static void test_classes(void)
{
    static const struct {
        const char *bytes;
        rlk_error_class ec;
    } cases[] = {
        {"-MOVED 3999 127.0.0.1:6381\r\n", RLK_EC_MOVED},
        {"-ASK 3999 127.0.0.1:6381\r\n", RLK_EC_ASK},
        {"-TRYAGAIN Multiple keys request during rehashing of slot\r\n", RLK_EC_TRYAGAIN},
        {"-CLUSTERDOWN The cluster is down\r\n", RLK_EC_CLUSTERDOWN},
        {"-LOADING Redis is loading the dataset in memory\r\n", RLK_EC_LOADING},
        {"-OOM command not allowed\r\n", RLK_EC_OOM},
        {"-READONLY You can't write against a read only replica.\r\n", RLK_EC_READONLY},
        {"-NOSCRIPT No matching script.\r\n", RLK_EC_NOSCRIPT},
        {"-BUSY Redis is busy running a script.\r\n", RLK_EC_BUSY},
        {"-ERR LOADING is not the code here\r\n", RLK_EC_OTHER},
        {"+MOVED 1 h:1\r\n", RLK_EC_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlk_resp_arena a;
        rlk_resp_reader rd;
        rlk_resp_arena_init(&a, NULL, 0, 1 << 16);
        rlk_resp_reader_init(&rd, &a, NULL);
        rlk_resp_value *v = NULL;
        size_t used = 0;
        CHECK_EQ_INT(rlk_resp_read(&rd, cases[i].bytes, strlen(cases[i].bytes), &used, &v), 1);
        CHECK_MSG(rlk__reply_class(v) == cases[i].ec, "%s", cases[i].bytes);
        rlk_resp_reader_free(&rd);
        rlk_resp_arena_free(&a);
    }
}

int main(int argc, char **argv)
{
    tl_init(argc, argv);
    tl_run("replies in order, each with its context; pushes apart", test_order_and_context);
    tl_run("a reply out of step breaks the connection", test_out_of_step);
    tl_run("closing answers each request once, in order", test_closed_once);
    tl_run("NOSCRIPT: built again as EVAL, answered once", test_noscript_again);
    tl_run("FCALL, FUNCTION LOAD, EVALSHA after a refusal", test_fcall_and_load);
    tl_run("deadlines", test_deadlines);
    tl_run("hold", test_hold);
    tl_run("subscriptions and their confirmations", test_subscriptions);
    tl_run("the handshake", test_handshake);
    tl_run("the input bound", test_input_bound);
    tl_run("error classes", test_classes);
    return tl_finish();
}
