/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The primitive host (src/route/host.c) over three scripted cores, with
 * no server and no socket: the test answers each core's output with the
 * bytes it chooses (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) and a scripted
 * topology (a slot map the test's MOVED patches, as the route's table
 * is).  What a primitive relies on: each request answered once, with
 * the final reply only, within its deadline and the redirect bound; a
 * group re-sent whole and its parts' replies given together; a request
 * held until its core is ready; every joined primitive hearing every
 * core's events; subscriptions' messages dispatched by channel; no
 * allocation per request once warm.
 */
#include "config.h"

#define TESTLIB_MAIN
#include "testlib.h"
#include "core.h"
#include "host.h"
#include "internal.h"
#include "resplock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCORES 3
#define NSLOTS 8
#define HELLO "%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n6.2.14\r\n"

/* The scripted topology: core i is node "n<i>:1". */
static struct {
    rlk__core *core[NCORES];
    int map[NSLOTS];       /* slot -> core index, -1: none known */
    int redirects;         /* redirect() calls */
} T;

static rlk__core *topo_core_for(void *ctx, unsigned slot)
{
    (void)ctx;
    return slot < NSLOTS && T.map[slot] >= 0 ? T.core[T.map[slot]] : NULL;
}

/* "MOVED 3 n1:1" or "ASK 3 n2:1". */
static rlk__core *topo_redirect(void *ctx, rlk__core *from, const rlk_resp_value *v, int *ask)
{
    (void)ctx;
    (void)from;
    T.redirects++;
    unsigned slot = 0;
    int node = -1;
    char kind[8] = "";
    char text[64];
    snprintf(text, sizeof text, "%.*s", (int)v->len, v->str);
    if (sscanf(text, "%7s %u n%d:1", kind, &slot, &node) != 3 || node < 0 || node >= NCORES)
        return NULL;
    *ask = strcmp(kind, "ASK") == 0;
    if (!*ask && slot < NSLOTS) T.map[slot] = node;
    return T.core[node];
}

static const rlk__host_topo topo = {topo_core_for, topo_redirect, NULL};

/* What a primitive's callbacks saw. */
#define MAXLOG 64
typedef struct prim {
    int n;
    struct {
        int64_t arg;
        char type;          /* 0: NULL */
        int core;           /* the core's index, -1: NULL */
        int why;            /* rlk__host_why */
        int redirs;
        char text[200];
        int64_t at;
    } e[MAXLOG];
    int ready[NCORES], closed[NCORES], connected[NCORES], pushes, changed, refused;
    int enters, leaves;
    int msgs;               /* messages of its subscriptions */
    char msg[64];           /* the last one's kind and channel */
} prim;

static prim P1, P2;
static rlk__host *H;
static int64_t NOW;

static int core_index(const rlk__core *c)
{
    for (int i = 0; i < NCORES; i++)
        if (T.core[i] == c) return i;
    return -1;
}

static void put_text(char *out, size_t n, const rlk_resp_value *v)
{
    if (!v) snprintf(out, n, "-");
    else if (v->type == RLK_RESP_INTEGER) snprintf(out, n, "%lld", (long long)v->integer);
    else if ((v->type == RLK_RESP_ARRAY || v->type == RLK_RESP_PUSH) && v->child && v->child->str)
        snprintf(out, n, "[%.*s", (int)v->child->len, v->child->str);
    else if (v->str) snprintf(out, n, "%.*s", (int)(v->len < n - 1 ? v->len : n - 1), v->str);
    else snprintf(out, n, "%c", (char)v->type);
}

/* The request's words: ctx, NUL-separated, ended by an empty one. */
static int build_words(rlk__core *c, rlk__req *q)
{
    const char *p = q->ctx, *argv[8];
    int argc = 0;
    while (*p && argc < 8) {
        argv[argc++] = p;
        p += strlen(p) + 1;
    }
    return rlk__core_put(c, argc, argv, NULL);
}

static void log_reply(prim *P, rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    if (P->n >= MAXLOG) return;
    P->e[P->n].arg = q->arg;
    P->e[P->n].type = v ? (char)v->type : 0;
    P->e[P->n].core = c ? core_index(c) : -1;
    P->e[P->n].why = rlk__host_why(H, NULL);
    P->e[P->n].redirs = rlk__host_redirects(H);
    P->e[P->n].at = NOW;
    put_text(P->e[P->n].text, sizeof P->e[P->n].text, v);
    P->n++;
}

static void on_reply1(rlk__core *c, rlk__req *q, const rlk_resp_value *v) { log_reply(&P1, c, q, v); }
static void on_reply2(rlk__core *c, rlk__req *q, const rlk_resp_value *v) { log_reply(&P2, c, q, v); }

static const rlk__req_ops ops1 = {build_words, on_reply1, NULL, RLK__T_ANY};
static const rlk__req_ops ops2 = {build_words, on_reply2, NULL, RLK__T_ANY};
static const rlk__req_ops set_ops = {build_words, on_reply1, NULL, RLK__T_SIMPLE | RLK__T_NULL};
static const rlk__req_ops get_ops = {build_words, on_reply1, NULL, RLK__T_BULK | RLK__T_NULL};
static const rlk__req_ops time_ops = {build_words, on_reply1, NULL, RLK__T_ARRAY};

#define PRIM_HOOKS(P)                                                                           \
    static void P##_connected(void *ctx, rlk__core *c) { ((prim *)ctx)->connected[core_index(c)]++; } \
    static void P##_ready(void *ctx, rlk__core *c) { ((prim *)ctx)->ready[core_index(c)]++; }         \
    static void P##_closed(void *ctx, rlk__core *c) { ((prim *)ctx)->closed[core_index(c)]++; }       \
    static void P##_changed(void *ctx) { ((prim *)ctx)->changed++; }                                  \
    static void P##_refused(void *ctx, int st, const char *m) { (void)st; (void)m; ((prim *)ctx)->refused++; } \
    static void P##_push(void *ctx, rlk__core *c, const rlk_resp_value *v) { (void)c; (void)v; ((prim *)ctx)->pushes++; } \
    static void P##_enter(void *ctx, int64_t now) { (void)now; ((prim *)ctx)->enters++; }            \
    static int P##_leave(void *ctx, int st) { ((prim *)ctx)->leaves++; return st; }                  \
    static const rlk__host_ops P##_ops = {P##_connected, P##_ready, P##_closed, P##_changed,          \
                                          P##_refused,   P##_push,  NULL,       NULL,                 \
                                          P##_enter,     P##_leave};
PRIM_HOOKS(p1)
PRIM_HOOKS(p2)

/* The output of core i as text, then marked sent. */
static void take(int i, char *out, size_t n)
{
    const char *p;
    size_t len = rlk__core_output(T.core[i], &p);
    snprintf(out, n, "%.*s", (int)(len < n - 1 ? len : n - 1), p ? p : "");
    rlk__core_consume(T.core[i], len);
}

/* How many times s occurs in the output of core i (taken). */
static int sent(int i, const char *s)
{
    char out[8192];
    take(i, out, sizeof out);
    int k = 0;
    for (const char *p = out; (p = strstr(p, s)) != NULL; p += strlen(s)) k++;
    return k;
}

static int feed(int i, const char *bytes)
{
    return rlk__core_feed(T.core[i], bytes, strlen(bytes), NOW);
}

static void connect_core_as(int i, const char *hello)
{
    char out[512];
    CHECK_EQ_INT(rlk__core_connected(T.core[i], NOW), RLK_OK);
    take(i, out, sizeof out);
    CHECK(strstr(out, "HELLO") != NULL);
    CHECK_EQ_INT(feed(i, hello), RLK_OK);
    CHECK(rlk__core_ready(T.core[i]));
    take(i, out, sizeof out);
}

static void connect_core(int i) { connect_core_as(i, HELLO); }

/* A host over three cores, the first `up` of them ready; slot s is
 * served by core s % NCORES. */
static void setup(int routed, int up)
{
    memset(&T, 0, sizeof T);
    memset(&P1, 0, sizeof P1);
    memset(&P2, 0, sizeof P2);
    NOW = 1000;
    H = rlk__host_new(routed ? &topo : NULL);
    CHECK(H != NULL);
    for (int i = 0; i < NCORES; i++) {
        rlk__core_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.command_timeout_ms = 1000;
        T.core[i] = rlk__core_new(&cfg);
        CHECK(T.core[i] != NULL);
        CHECK_EQ_INT(rlk__host_attach(H, T.core[i]), RLK_OK);
        if (!routed) break;
    }
    for (int s = 0; s < NSLOTS; s++) T.map[s] = s % NCORES;
    CHECK_EQ_INT(rlk__host_join(H, &p1_ops, &P1), RLK_OK);
    for (int i = 0; i < up; i++) connect_core(i);
}

static void teardown(void)
{
    rlk__host_free(H);
    for (int i = 0; i < NCORES; i++)
        if (T.core[i]) rlk__core_free(T.core[i]);
    H = NULL;
}

/* Turns the clock to t and ticks every core. */
static void tick_to(int64_t t)
{
    NOW = t;
    for (int i = 0; i < NCORES; i++)
        if (T.core[i]) rlk__core_tick(T.core[i], NOW);
}

static const char w_get[] = "GET\0k\0";
static const char w_set[] = "SET\0k\0v\0NX\0PX\0" "100\0";
static const char w_hget[] = "HGET\0w\0~y\0";
static const char w_time[] = "TIME\0";
#define GET_WIRE "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
#define ASKING_WIRE "*1\r\n$6\r\nASKING\r\n"

static void test_plain(void)
{
    setup(1, 3);
    CHECK_EQ_INT(rlk__host_submit(H, 1, &ops1, (void *)w_get, 7, RLK__DL_DEFAULT, 0), RLK_OK);
    CHECK_EQ_INT(sent(1, GET_WIRE), 1);
    CHECK_EQ_INT(sent(0, GET_WIRE) + sent(2, GET_WIRE), 0);
    CHECK_EQ_INT(feed(1, "$1\r\nx\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 1);
    CHECK_EQ_INT(P1.e[0].arg, 7);
    CHECK_EQ_INT(P1.e[0].core, 1);
    CHECK_EQ_STR(P1.e[0].text, "x");
    CHECK_EQ_INT(P1.e[0].redirs, 0);
    teardown();
}

static void test_moved(void)
{
    setup(1, 3);
    CHECK_EQ_INT(rlk__host_submit(H, 1, &ops1, (void *)w_get, 1, RLK__DL_DEFAULT, 0), RLK_OK);
    CHECK_EQ_INT(sent(1, GET_WIRE), 1);
    CHECK_EQ_INT(feed(1, "-MOVED 1 n2:1\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 0); /* the redirect is not the caller's */
    CHECK_EQ_INT(T.map[1], 2);
    CHECK_EQ_INT(sent(2, GET_WIRE), 1);
    CHECK_EQ_INT(sent(2, ASKING_WIRE), 0);
    CHECK_EQ_INT(feed(2, "$2\r\nok\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 1);
    CHECK_EQ_INT(P1.e[0].core, 2);
    CHECK_EQ_STR(P1.e[0].text, "ok");
    CHECK_EQ_INT(P1.e[0].redirs, 1);
    teardown();
}

static void test_ask(void)
{
    setup(1, 3);
    CHECK_EQ_INT(rlk__host_submit(H, 1, &ops1, (void *)w_get, 1, RLK__DL_DEFAULT, 0), RLK_OK);
    take(1, (char[64]){0}, 64);
    CHECK_EQ_INT(feed(1, "-ASK 1 n0:1\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 0);
    CHECK_EQ_INT(T.map[1], 1); /* ASK: this once, the table stays */
    char out[512];
    take(0, out, sizeof out);
    CHECK_EQ_STR(out, ASKING_WIRE GET_WIRE);
    CHECK_EQ_INT(feed(0, "+OK\r\n$1\r\ny\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 1);
    CHECK_EQ_INT(P1.e[0].core, 0);
    CHECK_EQ_STR(P1.e[0].text, "y");
    /* The next goes to the slot's own core, without ASKING. */
    CHECK_EQ_INT(rlk__host_submit(H, 1, &ops1, (void *)w_get, 2, RLK__DL_DEFAULT, 0), RLK_OK);
    take(1, out, sizeof out);
    CHECK_EQ_STR(out, GET_WIRE);
    teardown();
}

static void test_tryagain(void)
{
    setup(1, 3);
    int64_t dl = NOW + 5000;
    CHECK_EQ_INT(rlk__host_submit(H, 1, &ops1, (void *)w_get, 1, dl, 0), RLK_OK);
    CHECK_EQ_INT(sent(1, GET_WIRE), 1);
    CHECK_EQ_INT(feed(1, "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 0);
    CHECK_EQ_INT((int)rlk__host_held(H), 1);
    int64_t due = rlk__host_due(H);
    CHECK(due > NOW && due <= NOW + 2000);
    CHECK(rlk__core_deadline(T.core[1]) == due || rlk__core_deadline(T.core[1]) < due);
    tick_to(due - 1);
    CHECK_EQ_INT(sent(1, GET_WIRE), 0); /* not before its pause ends */
    tick_to(due);
    CHECK_EQ_INT(sent(1, GET_WIRE), 1);
    CHECK_EQ_INT(feed(1, "-CLUSTERDOWN The cluster is down\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 0);
    tick_to(rlk__host_due(H));
    CHECK_EQ_INT(sent(1, GET_WIRE), 1);
    CHECK_EQ_INT(feed(1, ":5\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 1);
    CHECK_EQ_STR(P1.e[0].text, "5");
    CHECK(P1.e[0].at <= dl);
    teardown();
}

/* Refused past its deadline: the last refusal is the answer, given by
 * the deadline, and no sending is made after it. */
static void test_refused_until_deadline(void)
{
    setup(1, 3);
    int64_t dl = NOW + 700;
    CHECK_EQ_INT(rlk__host_submit(H, 2, &ops1, (void *)w_get, 1, dl, 0), RLK_OK);
    int sendings = 0;
    for (int k = 0; k < 100 && P1.n == 0; k++) {
        int s = sent(2, GET_WIRE);
        sendings += s;
        if (s) CHECK_EQ_INT(feed(2, "-CLUSTERDOWN Hash slot not served\r\n"), RLK_OK);
        else if (rlk__host_due(H) >= 0) tick_to(rlk__host_due(H));
        CHECK(NOW <= dl);
    }
    CHECK_EQ_INT(P1.n, 1);
    CHECK(sendings >= 2);
    CHECK(P1.e[0].at <= dl);
    CHECK(strstr(P1.e[0].text, "CLUSTERDOWN") != NULL);
    CHECK_EQ_INT(P1.e[0].why, RLK_OK);
    CHECK_EQ_INT((int)rlk__host_held(H), 0);
    teardown();
}

/* Two nodes that send the slot to each other: the bound ends it with an
 * error that says it was a loop. */
static void test_redirect_loop(void)
{
    setup(1, 3);
    CHECK_EQ_INT(rlk__host_submit(H, 1, &ops1, (void *)w_get, 1, RLK__DL_DEFAULT, 0), RLK_OK);
    int sendings = 0;
    for (int k = 0; k < 40 && P1.n == 0; k++) {
        for (int i = 0; i < 2; i++) {
            int s = sent(i + 1, GET_WIRE);
            sendings += s;
            if (s) CHECK_EQ_INT(feed(i + 1, i == 0 ? "-MOVED 1 n2:1\r\n" : "-MOVED 1 n1:1\r\n"), RLK_OK);
        }
    }
    CHECK_EQ_INT(P1.n, 1);
    CHECK_EQ_INT(sendings, RLK__HOST_REDIRECTS + 1);
    CHECK_EQ_INT(P1.e[0].type, RLK_RESP_ERROR);
    CHECK(strstr(P1.e[0].text, "redirect loop") != NULL);
    CHECK(strstr(P1.e[0].text, "MOVED 1 n") != NULL);
    CHECK_EQ_INT(P1.e[0].redirs, RLK__HOST_REDIRECTS + 1);
    teardown();
}

static const rlk__req_ops *const try_parts[3] = {&set_ops, &get_ops, &time_ops};
static const char *try_words[3] = {w_set, w_hget, w_time};

/* The group's parts' ctx is one: the test's words are chosen by arg. */
static int build_part(rlk__core *c, rlk__req *q);
static void part_reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
static int part_no;
static const rlk__req_ops g_set = {build_part, part_reply, NULL, RLK__T_SIMPLE | RLK__T_NULL};
static const rlk__req_ops g_get = {build_part, part_reply, NULL, RLK__T_BULK | RLK__T_NULL};
static const rlk__req_ops g_time = {build_part, part_reply, NULL, RLK__T_ARRAY};
static const rlk__req_ops *const group[3] = {&g_set, &g_get, &g_time};

static int build_part(rlk__core *c, rlk__req *q)
{
    int i = q->ops == &g_set ? 0 : q->ops == &g_get ? 1 : 2;
    rlk__req iq = *q;
    iq.ctx = (void *)try_words[i];
    return build_words(c, &iq);
}

static void part_reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    log_reply(&P1, c, q, v);
    P1.e[P1.n - 1].arg = q->ops == &g_set ? 0 : q->ops == &g_get ? 1 : 2;
    part_no++;
}

#define SET_WIRE "*6\r\n$3\r\nSET\r\n"
#define HGET_WIRE "*3\r\n$4\r\nHGET\r\n"
#define TIME_WIRE "*1\r\n$4\r\nTIME\r\n"

static void test_group(void)
{
    (void)try_parts;
    setup(1, 3);
    CHECK_EQ_INT(rlk__host_submit_group(H, 1, 3, group, NULL, 0, RLK__DL_DEFAULT, 0), RLK_OK);
    char out[1024];
    take(1, out, sizeof out);
    CHECK(strstr(out, SET_WIRE) != NULL && strstr(out, HGET_WIRE) != NULL &&
          strstr(out, TIME_WIRE) != NULL);
    /* The keyed parts moved, TIME ran: nothing is heard of this sending. */
    CHECK_EQ_INT(feed(1, "-MOVED 1 n0:1\r\n-MOVED 1 n0:1\r\n*2\r\n$10\r\n1700000000\r\n$1\r\n5\r\n"),
                 RLK_OK);
    CHECK_EQ_INT(P1.n, 0);
    CHECK_EQ_INT(T.redirects, 1); /* one redirect followed for the group */
    take(0, out, sizeof out);
    CHECK(strstr(out, SET_WIRE) != NULL && strstr(out, HGET_WIRE) != NULL &&
          strstr(out, TIME_WIRE) != NULL);
    CHECK(strstr(out, "ASKING") == NULL);
    /* The second part asked elsewhere: again whole, ASKING before each. */
    CHECK_EQ_INT(feed(0, "+OK\r\n-ASK 1 n2:1\r\n*2\r\n$10\r\n1700000001\r\n$1\r\n6\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 0);
    take(2, out, sizeof out);
    CHECK_EQ_STR(out, ASKING_WIRE "*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nNX\r\n$2\r\nPX\r\n$3\r\n100\r\n"
                      ASKING_WIRE "*3\r\n$4\r\nHGET\r\n$1\r\nw\r\n$2\r\n~y\r\n" ASKING_WIRE TIME_WIRE);
    CHECK_EQ_INT(feed(2, "+OK\r\n+OK\r\n+OK\r\n$3\r\n123\r\n+OK\r\n*2\r\n$10\r\n1700000002\r\n$1\r\n7\r\n"),
                 RLK_OK);
    CHECK_EQ_INT(P1.n, 3);
    CHECK_EQ_INT(P1.e[0].arg, 0);
    CHECK_EQ_STR(P1.e[0].text, "OK");
    CHECK_EQ_INT(P1.e[1].arg, 1);
    CHECK_EQ_STR(P1.e[1].text, "123");
    CHECK_EQ_INT(P1.e[2].arg, 2);
    CHECK_EQ_STR(P1.e[2].text, "[1700000002");
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(P1.e[i].core, 2);
    CHECK_EQ_INT(P1.e[2].redirs, 2);
    teardown();
}

/* A group whose connection closes mid-way: every part hears NULL. */
static void test_group_closed(void)
{
    setup(1, 3);
    CHECK_EQ_INT(rlk__host_submit_group(H, 1, 3, group, NULL, 0, RLK__DL_DEFAULT, 0), RLK_OK);
    take(1, (char[1024]){0}, 1024);
    CHECK_EQ_INT(feed(1, "+OK\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 0);
    rlk__core_closed(T.core[1], NOW);
    CHECK_EQ_INT(P1.n, 3);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(P1.e[i].type, 0);
        CHECK_EQ_INT(P1.e[i].core, 1);
        CHECK_EQ_INT(P1.e[i].arg, i);
    }
    CHECK_EQ_INT(P1.closed[1], 1);
    teardown();
}

/* A redirect loop ends a group too, its redirected part told so. */
static void test_group_loop(void)
{
    setup(1, 3);
    CHECK_EQ_INT(rlk__host_submit_group(H, 1, 3, group, NULL, 0, RLK__DL_DEFAULT, 0), RLK_OK);
    int sendings = 0;
    for (int k = 0; k < 40 && P1.n == 0; k++)
        for (int i = 1; i < 3; i++)
            if (sent(i, TIME_WIRE)) {
                sendings++;
                const char *m = i == 1 ? "-MOVED 1 n2:1\r\n" : "-MOVED 1 n1:1\r\n";
                char b[128];
                snprintf(b, sizeof b, "%s%s*2\r\n$1\r\n1\r\n$1\r\n2\r\n", m, m);
                CHECK_EQ_INT(feed(i, b), RLK_OK);
            }
    CHECK_EQ_INT(sendings, RLK__HOST_REDIRECTS + 1);
    CHECK_EQ_INT(P1.n, 3);
    CHECK(strstr(P1.e[0].text, "redirect loop") != NULL);
    CHECK(strstr(P1.e[1].text, "MOVED") == P1.e[1].text); /* the part after, as it came */
    teardown();
}

/* Held until the slot's core is ready; a slot no core serves yet, until
 * a table names one. */
static void test_held(void)
{
    setup(1, 2); /* core 2 not connected */
    CHECK_EQ_INT(rlk__host_submit(H, 2, &ops1, (void *)w_get, 1, RLK__DL_DEFAULT, 0), RLK_OK);
    CHECK_EQ_INT((int)rlk__host_held(H), 1);
    T.map[4] = -1;
    CHECK_EQ_INT(rlk__host_submit(H, 4, &ops1, (void *)w_get, 2, RLK__DL_DEFAULT, 0), RLK_OK);
    CHECK_EQ_INT((int)rlk__host_held(H), 2);
    CHECK_EQ_INT(rlk__host_due(H), -1);
    CHECK_EQ_INT(sent(0, GET_WIRE) + sent(1, GET_WIRE), 0);
    connect_core(2);
    CHECK_EQ_INT(P1.ready[2], 1);
    CHECK_EQ_INT((int)rlk__host_held(H), 1);
    CHECK_EQ_INT(feed(2, "$1\r\na\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 1);
    CHECK_EQ_INT(P1.e[0].arg, 1);
    T.map[4] = 0;
    rlk__host_changed(H, NOW);
    CHECK_EQ_INT(P1.changed, 1);
    CHECK_EQ_INT((int)rlk__host_held(H), 0);
    CHECK_EQ_INT(sent(0, GET_WIRE), 1);
    CHECK_EQ_INT(feed(0, "$1\r\nb\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 2);
    CHECK_EQ_INT(P1.e[1].arg, 2);
    CHECK_EQ_INT(P1.e[1].core, 0);
    teardown();
}

/* A deadline passes while held: the caller hears RLK_ERR_TIMEOUT by it. */
static void test_held_deadline(void)
{
    setup(1, 2);
    int64_t dl = NOW + 300;
    CHECK_EQ_INT(rlk__host_submit(H, 2, &ops1, (void *)w_get, 1, dl, 0), RLK_OK);
    CHECK_EQ_INT(rlk__host_due(H), dl);
    CHECK(rlk__core_deadline(T.core[0]) <= dl);
    tick_to(dl - 1);
    CHECK_EQ_INT(P1.n, 0);
    tick_to(dl);
    CHECK_EQ_INT(P1.n, 1);
    CHECK_EQ_INT(P1.e[0].type, 0);
    CHECK_EQ_INT(P1.e[0].core, -1);
    CHECK_EQ_INT(P1.e[0].why, RLK_ERR_TIMEOUT);
    CHECK_EQ_INT((int)rlk__host_held(H), 0);
    /* And a refusal ends the held at once. */
    CHECK_EQ_INT(rlk__host_submit(H, 2, &ops1, (void *)w_get, 2, RLK__DL_DEFAULT, 0), RLK_OK);
    rlk__host_refuse(H, RLK_ERR_INVALID, "not one cluster", NOW);
    CHECK_EQ_INT(P1.n, 2);
    CHECK_EQ_INT(P1.e[1].why, RLK_ERR_INVALID);
    CHECK_EQ_INT(P1.refused, 1);
    teardown();
}

/* Two primitives on one core: each hears the core's events and its own
 * replies only. */
static void test_two_primitives(void)
{
    setup(0, 0);
    CHECK_EQ_INT(rlk__host_join(H, &p2_ops, &P2), RLK_OK);
    CHECK_EQ_INT(rlk__host_join(H, &p2_ops, &P2), RLK_ERR_INVALID);
    connect_core(0);
    CHECK_EQ_INT(P1.connected[0], 1);
    CHECK_EQ_INT(P2.connected[0], 1);
    CHECK_EQ_INT(P1.ready[0], 1);
    CHECK_EQ_INT(P2.ready[0], 1);
    CHECK(P1.enters > 0 && P1.enters == P1.leaves);
    CHECK(P2.enters > 0 && P2.enters == P2.leaves);
    CHECK_EQ_INT(rlk__host_submit(H, 5, &ops1, (void *)w_get, 1, RLK__DL_DEFAULT, 0), RLK_OK);
    CHECK_EQ_INT(rlk__host_submit(H, 6, &ops2, (void *)w_get, 2, RLK__DL_DEFAULT, 0), RLK_OK);
    CHECK_EQ_INT(sent(0, GET_WIRE), 2);
    CHECK_EQ_INT(feed(0, "$2\r\np1\r\n>3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n$2\r\np2\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 1);
    CHECK_EQ_STR(P1.e[0].text, "p1");
    CHECK_EQ_INT(P2.n, 1);
    CHECK_EQ_STR(P2.e[0].text, "p2");
    CHECK_EQ_INT(P1.pushes, 1);
    CHECK_EQ_INT(P2.pushes, 1);
    /* One server: MOVED is an error like any. */
    CHECK_EQ_INT(rlk__host_submit(H, 5, &ops1, (void *)w_get, 3, RLK__DL_DEFAULT, 0), RLK_OK);
    take(0, (char[256]){0}, 256);
    CHECK_EQ_INT(feed(0, "-MOVED 5 n1:1\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 2);
    CHECK_EQ_STR(P1.e[1].text, "MOVED 5 n1:1");
    /* Parted: no more events. */
    rlk__host_part(H, &p2_ops, &P2);
    rlk__core_closed(T.core[0], NOW);
    CHECK_EQ_INT(P1.closed[0], 1);
    CHECK_EQ_INT(P2.closed[0], 0);
    teardown();
}

static int fail_next; /* the allocation hook's (below): the next allocation fails */

/* A subscription's message (the host's dispatch by channel). */
static void on_msg(void *ctx, rlk__core *c, const rlk_resp_value *v)
{
    prim *P = ctx;
    (void)c;
    const rlk_resp_value *k = rlk_resp_value_at(v, 0), *ch = rlk_resp_value_at(v, 1);
    P->msgs++;
    snprintf(P->msg, sizeof P->msg, "%.*s %.*s", k ? (int)k->len : 0, k ? k->str : "",
             ch ? (int)ch->len : 0, ch ? ch->str : "");
}

#define MSG(n, kind, ch) ">3\r\n$" #n "\r\n" kind "\r\n$2\r\n" ch "\r\n$1\r\nm\r\n"

/* Each subscriber hears its own channels' messages, and only those;
 * others go to every member's push; an unsubscribe, a close and a part
 * end a subscription. */
static void test_subscriptions(void)
{
    setup(0, 0);
    CHECK_EQ_INT(rlk__host_join(H, &p2_ops, &P2), RLK_OK);
    connect_core(0);
    CHECK_EQ_INT(rlk__host_subscribe(H, T.core[0], 1, "c1", &ops1, on_msg, &P1, 11), RLK_OK);
    CHECK_EQ_INT(rlk__host_subscribe(H, T.core[0], 1, "c2", &ops2, on_msg, &P2, 12), RLK_OK);
    /* One server: not sharded. */
    CHECK_EQ_INT(sent(0, "*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nc"), 2);
    CHECK_EQ_INT(feed(0, ">3\r\n$9\r\nsubscribe\r\n$2\r\nc1\r\n:1\r\n"
                         ">3\r\n$9\r\nsubscribe\r\n$2\r\nc2\r\n:2\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.n, 1);
    CHECK_EQ_INT(P1.e[0].arg, 11);
    CHECK_EQ_STR(P1.e[0].text, "[subscribe");
    CHECK_EQ_INT(P2.n, 1);
    CHECK_EQ_INT(P2.e[0].arg, 12);
    CHECK_EQ_INT(feed(0, MSG(7, "message", "c1") MSG(7, "message", "c2") MSG(7, "message", "c2")), RLK_OK);
    CHECK_EQ_INT(P1.msgs, 1);
    CHECK_EQ_STR(P1.msg, "message c1");
    CHECK_EQ_INT(P2.msgs, 2);
    CHECK_EQ_STR(P2.msg, "message c2");
    CHECK_EQ_INT(P1.pushes + P2.pushes, 0);
    /* A channel nobody subscribed through the host: every member's. */
    CHECK_EQ_INT(feed(0, MSG(7, "message", "c9")), RLK_OK);
    CHECK_EQ_INT(P1.pushes, 1);
    CHECK_EQ_INT(P2.pushes, 1);
    /* Unsubscribed: c1's messages are nobody's subscription now. */
    CHECK_EQ_INT(rlk__host_subscribe(H, T.core[0], 0, "c1", &ops1, on_msg, &P1, 13), RLK_OK);
    CHECK_EQ_INT(sent(0, "*2\r\n$11\r\nUNSUBSCRIBE\r\n$2\r\nc1\r\n"), 1);
    CHECK_EQ_INT(feed(0, MSG(7, "message", "c1") ">3\r\n$11\r\nunsubscribe\r\n$2\r\nc1\r\n:1\r\n"), RLK_OK);
    CHECK_EQ_INT(P1.msgs, 1);
    CHECK_EQ_INT(P1.pushes, 2);
    CHECK_EQ_INT(P1.n, 2);
    CHECK_EQ_INT(P1.e[1].arg, 13);
    /* A refusal ends it at once. */
    CHECK_EQ_INT(rlk__host_subscribe(H, T.core[0], 1, "c3", &ops1, on_msg, &P1, 14), RLK_OK);
    CHECK_EQ_INT(sent(0, "SUBSCRIBE"), 1);
    CHECK_EQ_INT(feed(0, "-NOPERM no permissions to access the 'c3' channel\r\n" MSG(7, "message", "c3")), RLK_OK);
    CHECK_EQ_INT(P1.n, 3);
    CHECK_EQ_INT(P1.e[2].type, RLK_RESP_ERROR);
    CHECK_EQ_INT(P1.msgs, 1);
    CHECK_EQ_INT(P1.pushes, 3);
    /* A close ends c2's: the next connection's messages on c2 are not
     * P2's subscription. */
    rlk__core_closed(T.core[0], NOW);
    connect_core(0);
    CHECK_EQ_INT(feed(0, MSG(7, "message", "c2")), RLK_OK);
    CHECK_EQ_INT(P2.msgs, 2);
    CHECK_EQ_INT(P2.pushes, 4);
    /* A part ends the parted one's: no message, no answer. */
    CHECK_EQ_INT(rlk__host_subscribe(H, T.core[0], 1, "c2", &ops2, on_msg, &P2, 15), RLK_OK);
    CHECK_EQ_INT(sent(0, "SUBSCRIBE"), 1);
    rlk__host_part(H, &p2_ops, &P2);
    CHECK_EQ_INT(feed(0, ">3\r\n$9\r\nsubscribe\r\n$2\r\nc2\r\n:1\r\n" MSG(7, "message", "c2")), RLK_OK);
    CHECK_EQ_INT(P2.n, 1);
    CHECK_EQ_INT(P2.msgs, 2);
    CHECK_EQ_INT(P1.pushes, 5);
    /* Out of memory: the core breaks, as by its own subscribe, so that
     * its owner hears closed instead of waiting for an answer. */
    fail_next = 1;
    CHECK_EQ_INT(rlk__host_subscribe(H, T.core[0], 1, "c4", &ops1, on_msg, &P1, 16), RLK_ERR_NOMEM);
    CHECK(rlk__core_broken(T.core[0]) != 0);
    teardown();
}

#define HELLO_CLUSTER "%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n" \
                      "$4\r\nmode\r\n$7\r\ncluster\r\n"

/* On a cluster node: sharded; a MOVED is told to the topology (its
 * table patched), the subscriber sees the refusal, every member then
 * hears changed; the server's own sunsubscribe ends a subscription. */
static void test_sharded_subscriptions(void)
{
    setup(1, 0);
    CHECK_EQ_INT(rlk__host_join(H, &p2_ops, &P2), RLK_OK);
    for (int i = 0; i < NCORES; i++) {
        connect_core_as(i, HELLO_CLUSTER);
        CHECK_EQ_INT(feed(i, "+OK\r\n"), RLK_OK); /* Redis 7's CLIENT NO-EVICT */
    }
    CHECK_EQ_INT(rlk__host_subscribe(H, T.core[1], 1, "s1", &ops1, on_msg, &P1, 1), RLK_OK);
    CHECK_EQ_INT(sent(1, "*2\r\n$10\r\nSSUBSCRIBE\r\n$2\r\ns1\r\n"), 1);
    CHECK_EQ_INT(feed(1, "-MOVED 4 n2:1\r\n" MSG(8, "smessage", "s1")), RLK_OK);
    CHECK_EQ_INT(T.redirects, 1);
    CHECK_EQ_INT(T.map[4], 2);
    CHECK_EQ_INT(P1.n, 1);
    CHECK_EQ_STR(P1.e[0].text, "MOVED 4 n2:1");
    CHECK_EQ_INT(P1.changed, 1);
    CHECK_EQ_INT(P2.changed, 1);
    CHECK_EQ_INT(P1.msgs, 0);
    CHECK_EQ_INT(P1.pushes, 1);
    /* Where the slot is now: taken; then the server ends it itself. */
    CHECK_EQ_INT(rlk__host_subscribe(H, T.core[2], 1, "s1", &ops1, on_msg, &P1, 2), RLK_OK);
    CHECK_EQ_INT(sent(2, "SSUBSCRIBE"), 1);
    CHECK_EQ_INT(feed(2, ">3\r\n$10\r\nssubscribe\r\n$2\r\ns1\r\n:1\r\n" MSG(8, "smessage", "s1")), RLK_OK);
    CHECK_EQ_INT(P1.msgs, 1);
    CHECK_EQ_STR(P1.msg, "smessage s1");
    CHECK_EQ_INT(feed(2, ">3\r\n$12\r\nsunsubscribe\r\n$2\r\ns1\r\n:0\r\n" MSG(8, "smessage", "s1")), RLK_OK);
    CHECK_EQ_INT(P1.msgs, 2);
    CHECK_EQ_STR(P1.msg, "sunsubscribe s1");
    CHECK_EQ_INT(P1.pushes, 2);
    CHECK_EQ_INT(P1.changed, 1);
    teardown();
}

/* Allocations counted by the hook; fail_next: the next one fails. */
static long allocs;
static void *a_malloc(void *ctx, size_t n)
{
    (void)ctx;
    allocs++;
    if (fail_next) {
        fail_next = 0;
        return NULL;
    }
    return malloc(n);
}
static void *a_realloc(void *ctx, void *p, size_t n) { (void)ctx; allocs++; return realloc(p, n); }
static void a_free(void *ctx, void *p) { (void)ctx; free(p); }

/* Once warm, a request and a group cost no allocation of the host. */
static void test_no_allocation(void)
{
    setup(1, 3);
    for (int round = 0; round < 2; round++) {
        long before = allocs;
        for (int k = 0; k < 50; k++) {
            P1.n = 0;
            CHECK_EQ_INT(rlk__host_submit(H, 1, &ops1, (void *)w_get, k, RLK__DL_DEFAULT, 0), RLK_OK);
            CHECK_EQ_INT(rlk__host_submit_group(H, 1, 3, group, NULL, 0, RLK__DL_DEFAULT, 0), RLK_OK);
            take(1, (char[1024]){0}, 1024);
            CHECK_EQ_INT(feed(1, "$1\r\nx\r\n+OK\r\n$3\r\n123\r\n*2\r\n$1\r\n1\r\n$1\r\n2\r\n"), RLK_OK);
            CHECK_EQ_INT(P1.n, 4);
        }
        if (round == 1) CHECK_EQ_INT(allocs - before, 0);
    }
    teardown();
}

int main(int argc, char **argv)
{
    rlk_allocator a = {a_malloc, a_realloc, a_free, NULL};
    rlk_set_allocator(&a);
    tl_init(argc, argv);
    tl_run("a request goes to its slot's core", test_plain);
    tl_run("MOVED: sent again where the table now says", test_moved);
    tl_run("ASK: once, after ASKING, the table unchanged", test_ask);
    tl_run("TRYAGAIN and CLUSTERDOWN: again after a pause", test_tryagain);
    tl_run("refused until the deadline: the last refusal by then", test_refused_until_deadline);
    tl_run("a redirect loop ends at the bound", test_redirect_loop);
    tl_run("a group: sent again whole, its replies together", test_group);
    tl_run("a group closed mid-way: every part hears so", test_group_closed);
    tl_run("a group's redirect loop", test_group_loop);
    tl_run("held until the slot's core is ready", test_held);
    tl_run("a deadline passes while held; a refusal", test_held_deadline);
    tl_run("two primitives share one core", test_two_primitives);
    tl_run("subscriptions: each subscriber its own channels' messages", test_subscriptions);
    tl_run("sharded subscriptions: MOVED, the server's sunsubscribe", test_sharded_subscriptions);
    tl_run("no allocation per request once warm", test_no_allocation);
    return tl_finish();
}
