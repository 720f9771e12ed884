/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allocation failure injection, as SQLite does it.  Every allocation of
 * the library goes through the hook (rlk_set_allocator); for each
 * scenario the Nth allocation fails, for every N from 1 until a run makes
 * fewer than N allocations, so every allocation point on the scenario's
 * path fails once.  A run with a failure must end in RLK_ERR_NOMEM or
 * another clear error, never a crash; it must free all it allocated (the
 * hook counts live blocks; Valgrind runs this program too); and it must
 * leave no lock in a wrong state: a lock on the server is one that the
 * caller holds a handle for, or one that expires by itself.
 *
 * Scenarios: parsing and tree building, connect and handshake, acquire
 * and release, a watchdog round, the session's requests.  Also measured through the hook: the
 * heap of an idle client (connected, one lock held, watchdog in tick
 * mode), which must stay within 32 KB.
 *
 * Plain TCP only: OpenSSL's own allocations do not go through the hook.
 */
#include "config.h"

#define TESTLIB_MAIN
#include "testlib.h"
#include "server.h"

#include "resplock.h"
#include "driver.h"
#include "lock.h"
#include "lua.h"
#include "session_internal.h"
#include "adapters/poll.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ts_server *srv;
static char url[64];

/* ------------------------------------------------------------------ */
/* The hook: counts calls, live blocks and bytes; fails call fail_at.   */

static struct {
    long calls, fail_at;
    int failed;
    long blocks;
    size_t live, peak;
} H;

#define HDR 16 /* keeps the caller's block aligned as malloc's */

static void *h_malloc(void *ctx, size_t n)
{
    (void)ctx;
    if (++H.calls == H.fail_at) {
        H.failed = 1;
        return NULL;
    }
    size_t *p = malloc(n + HDR);
    if (!p) return NULL;
    p[0] = n;
    H.blocks++;
    H.live += n;
    if (H.live > H.peak) H.peak = H.live;
    return (char *)p + HDR;
}

static void h_free(void *ctx, void *ptr)
{
    (void)ctx;
    if (!ptr) return;
    size_t *p = (size_t *)(void *)((char *)ptr - HDR);
    H.blocks--;
    H.live -= p[0];
    free(p);
}

static void *h_realloc(void *ctx, void *ptr, size_t n)
{
    if (!ptr) return h_malloc(ctx, n);
    if (++H.calls == H.fail_at) {
        H.failed = 1;
        return NULL; /* the old block stays the caller's */
    }
    size_t *p = (size_t *)(void *)((char *)ptr - HDR), old = p[0];
    size_t *q = realloc(p, n + HDR);
    if (!q) return NULL;
    q[0] = n;
    H.live = H.live - old + n;
    if (H.live > H.peak) H.peak = H.live;
    return (char *)q + HDR;
}

/* ------------------------------------------------------------------ */

static rlk_conn *admin;

static long long admin_int(const char *a0, const char *a1)
{
    const char *argv[2] = {a0, a1};
    rlk_resp_value *v;
    if (rlk_conn_command(admin, &v, 2, argv, NULL) != RLK_OK || v->type != RLK_RESP_INTEGER)
        return -100;
    return v->integer;
}

static void admin_del(const char *key)
{
    const char *argv[2] = {"DEL", key};
    rlk_resp_value *v;
    rlk_conn_command(admin, &v, 2, argv, NULL);
}

/* A failing run's status: out of memory, or another error that says
 * what went wrong. */
static int clear_failure(int r, const char *msg)
{
    return r == RLK_ERR_NOMEM || (r < 0 && msg && *msg);
}

typedef int (*scenario_fn)(const char **msg);

/*
 * Runs fn with the Nth allocation failing, for N = 1, 2, ... until a run
 * makes fewer than N allocations (which must then succeed).  setup (may
 * be NULL) runs before each run without failures, check_after after it.
 * Returns the number of failure points covered.
 */
static long inject(const char *name, int (*setup)(void), scenario_fn fn,
                   void (*check_after)(int r))
{
    long n;
    for (n = 1; n < 100000; n++) {
        const char *msg = NULL;
        long base = H.blocks;
        if (setup && setup() != 0) break;
        long blocks = H.blocks;
        H.calls = 0;
        H.failed = 0;
        H.fail_at = n;
        int r = fn(&msg);
        int injected = H.failed;
        H.fail_at = 0;
        /* With a set-up, the run may also free what the set-up left (a
         * client's buffers of its earlier replies): counted once
         * check_after has freed the set-up's objects too. */
        if (!setup)
            CHECK_MSG(H.blocks == blocks, "%s, allocation %ld failing: %ld blocks leaked", name, n,
                      H.blocks - blocks);
        if (check_after) check_after(r);
        if (setup)
            CHECK_MSG(H.blocks == base, "%s, allocation %ld failing: %ld blocks leaked", name, n,
                      H.blocks - base);
        if (!injected) {
            CHECK_MSG(r == RLK_OK, "%s without a failure: %d %s", name, r, msg ? msg : "");
            break;
        }
        if (!CHECK_MSG(r == RLK_OK || clear_failure(r, msg),
                       "%s, allocation %ld failing: status %d, message \"%s\"", name, n, r,
                       msg ? msg : ""))
            break;
    }
    printf("    %s: %ld allocation points failed in turn\n", name, n - 1);
    return n - 1;
}

/* ------------------------------------------------------------------ */
/* Parsing and tree building                                            */

static int sc_parse(const char **msg)
{
    /* Aggregates of every kind, a big number, a streamed string and deep
     * nesting (the build stack grows). */
    static const char head[] =
        "*2\r\n$5\r\nhello\r\n%2\r\n+a\r\n:1\r\n+b\r\n*2\r\n,1.5\r\n#t\r\n"
        ">2\r\n+x\r\n(123456789012345678901234567890\r\n"
        "$?\r\n;4\r\nabcd\r\n;3\r\nefg\r\n;0\r\n"
        "|1\r\n+ttl\r\n:3\r\n~2\r\n_\r\n=7\r\ntxt:abc\r\n";
    char in[2048];
    size_t len = strlen(head);
    memcpy(in, head, len);
    for (int i = 0; i < 60; i++) {
        memcpy(in + len, "*1\r\n", 4);
        len += 4;
    }
    memcpy(in + len, ":42\r\n", 5);
    len += 5;
    rlk_resp_arena a;
    rlk_resp_reader rd;
    rlk_resp_arena_init(&a, NULL, 0, 0); /* every node on the heap */
    rlk_resp_reader_init(&rd, &a, NULL);
    size_t off = 0;
    int r = RLK_OK, replies = 0;
    while (off < len) {
        size_t used;
        rlk_resp_value *v;
        r = rlk_resp_read(&rd, in + off, len - off, &used, &v);
        if (r == 0) r = RLK_ERR_PROTO; /* all of it is complete */
        if (r < 0) break;
        off += used;
        replies++;
        r = RLK_OK;
    }
    if (r == RLK_OK && replies != 5) r = RLK_ERR_PROTO;
    *msg = rlk_strerror(r);
    rlk_resp_reader_free(&rd);
    rlk_resp_arena_free(&a);
    return r;
}

/* ------------------------------------------------------------------ */
/* Connect and handshake                                                */

static char conn_msg[600];

static int sc_connect(const char **msg)
{
    rlk_conn_config cc;
    rlk_conn_config_init(&cc);
    cc.url = url;
    cc.client_name = "alloc-test";
    *msg = "rlk_conn_new: out of memory";
    rlk_conn *c = rlk_conn_new(&cc);
    if (!c) return RLK_ERR_NOMEM;
    int r = rlk_conn_connect(c);
    if (r == RLK_OK) {
        const char *argv[1] = {"PING"};
        rlk_resp_value *v;
        r = rlk_conn_command(c, &v, 1, argv, NULL);
        if (r == RLK_OK && !(v->type == RLK_RESP_SIMPLE && v->len == 4)) r = RLK_ERR_PROTO;
    }
    snprintf(conn_msg, sizeof conn_msg, "%s", rlk_conn_errmsg(c));
    *msg = conn_msg;
    rlk_conn_free(c);
    return r;
}

/* ------------------------------------------------------------------ */
/* Acquire and release                                                  */

static char cl_msg[600];

static rlk_client *new_client(int divisor)
{
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    cfg.conn.url = url;
    cfg.renew_divisor = divisor;
    return rlk_client_new(&cfg);
}

/* From an event loop: rlk_lock_acquire_async and rlk_lock_release_async,
 * turned by the poll adapter (within 10 s). */
static int async_status, async_calls;

static void async_done(void *ctx, rlk_lock *l, int status)
{
    (void)l;
    rlk_client *cl = ctx;
    async_status = status;
    async_calls++;
    snprintf(cl_msg, sizeof cl_msg, "%s", status == RLK_OK ? "" : rlk_client_errmsg(cl));
}

static int async_turns(rlk_client *cl)
{
    for (int64_t end = ts_now_ms() + 10000; !async_calls && ts_now_ms() < end;)
        rlk_client_poll_once(cl, 100);
    return async_calls ? async_status : RLK_ERR_TIMEOUT;
}

/* An acquire and a release, blocking or from an event loop (loop). */
static int acquire_release(const char **msg, int loop)
{
    *msg = "rlk_client_new: out of memory";
    rlk_client *cl = new_client(0);
    if (!cl) return RLK_ERR_NOMEM;
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 5000;
    rlk_lock *l = NULL;
    int r;
    cl_msg[0] = '\0';
    if (!loop) {
        r = rlk_lock_acquire(cl, "alloc-lock", &o, &l);
        if (r == RLK_OK) {
            CHECK(l != NULL && rlk_lock_remaining_ms(l) > 0);
            r = rlk_lock_release(l);
        } else {
            CHECK(l == NULL);
        }
        snprintf(cl_msg, sizeof cl_msg, "%s", rlk_client_errmsg(cl));
    } else {
        async_calls = 0;
        r = rlk_lock_acquire_async(cl, "alloc-lock", &o, async_done, cl, &l);
        if (r == RLK_OK) r = async_turns(cl);
        else snprintf(cl_msg, sizeof cl_msg, "%s", rlk_client_errmsg(cl));
        if (r == RLK_OK) {
            async_calls = 0;
            if ((r = rlk_lock_release_async(l, async_done, cl)) == RLK_OK) r = async_turns(cl);
            else snprintf(cl_msg, sizeof cl_msg, "%s", rlk_client_errmsg(cl));
        }
    }
    *msg = cl_msg;
    rlk_client_free(cl);
    return r;
}

static int sc_acquire(const char **msg) { return acquire_release(msg, 0); }
static int sc_acquire_async(const char **msg) { return acquire_release(msg, 1); }

/* After each run: a run that succeeded left nothing; a failed one at
 * most a lock that expires by itself (its reply could not be read). */
static void acquire_after(int r)
{
    long long exists = admin_int("EXISTS", "alloc-lock");
    if (r == RLK_OK) {
        CHECK_MSG(exists == 0, "a released lock is still there");
    } else if (exists == 1) {
        long long pttl = admin_int("PTTL", "alloc-lock");
        CHECK_MSG(pttl > 0 && pttl <= 5000, "a lock left without a handle has PTTL %lld", pttl);
    }
    admin_del("alloc-lock");
}

/* ------------------------------------------------------------------ */
/* A watchdog round                                                     */

static rlk_client *wd_cl;
static rlk_lock *wd_lock;

/* Set up without failures: a watchdog lock whose renewal is due. */
static int wd_setup(void)
{
    wd_cl = new_client(1000); /* renew every ttl/1000: due in 5 ms */
    if (!CHECK(wd_cl != NULL)) return -1;
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 5000;
    o.watchdog = 1;
    CHECK_EQ_INT(rlk_client_tick(wd_cl, NULL), RLK_OK); /* tick mode */
    if (!CHECK_MSG(rlk_lock_acquire(wd_cl, "alloc-wd", &o, &wd_lock) == RLK_OK, "%s",
                   rlk_client_errmsg(wd_cl)))
        return -1;
    int64_t until = ts_now_ms() + 20;
    while (ts_now_ms() < until) ts_pause_ms(2); /* the renewal comes due */
    return 0;
}

/* When the lock is known held until (monotonic ms, give or take one):
 * a renewal moves it on, whatever time passed. */
static int64_t valid_end(const rlk_lock *l) { return ts_now_ms() + rlk_lock_remaining_ms(l); }

static int sc_tick(const char **msg)
{
    int64_t next = -1, before = valid_end(wd_lock);
    int r = rlk_client_tick(wd_cl, &next);
    /* The tick sends the round; a later one, once the fd is readable,
     * reads its replies, and the round (and its memory) ends there. */
    while (r == RLK_OK && valid_end(wd_lock) <= before) {
        struct pollfd p = {rlk_client_fd(wd_cl), POLLIN, 0};
        if (p.fd < 0 || poll(&p, 1, 2000) != 1) break;
        r = rlk_client_tick(wd_cl, &next);
    }
    snprintf(cl_msg, sizeof cl_msg, "%s", rlk_client_errmsg(wd_cl));
    *msg = cl_msg;
    return r;
}

/* After each failed round: it lost nothing (the lock is still held, and
 * the next round renews it, when it comes due); then the client goes. */
static void tick_after(int r)
{
    (void)r;
    CHECK_MSG(!rlk_lock_is_lost(wd_lock) && rlk_lock_remaining_ms(wd_lock) > 0,
              "a failed watchdog round marked the lock lost");
    int64_t until = ts_now_ms() + 20;
    while (ts_now_ms() < until) ts_pause_ms(2);
    /* A round that failed after its set-up tries again a little later
     * (half the loss margin): tick until then, within a deadline. */
    int64_t before = valid_end(wd_lock), deadline = ts_now_ms() + 3000;
    int renewed = 0;
    while (!renewed && ts_now_ms() < deadline) {
        int64_t next = -1;
        CHECK_EQ_INT(rlk_client_tick(wd_cl, &next), RLK_OK);
        renewed = valid_end(wd_lock) > before;
        if (!renewed) ts_pause_ms(next > 0 && next < 20 ? next : 20);
    }
    CHECK_MSG(renewed, "not renewed after the failed round");
    CHECK_EQ_INT(rlk_lock_release(wd_lock), RLK_OK);
    rlk_client_free(wd_cl);
    wd_cl = NULL;
}

static void test_watchdog_round(void)
{
    CHECK(inject("watchdog round", wd_setup, sc_tick, tick_after) > 1);
}

/* ------------------------------------------------------------------ */

static void test_parse(void) { CHECK(inject("parse and tree", NULL, sc_parse, NULL) > 3); }
static void test_connect(void) { CHECK(inject("connect and handshake", NULL, sc_connect, NULL) > 3); }
static void test_acquire_release(void)
{
    CHECK(inject("acquire and release", NULL, sc_acquire, acquire_after) > 3);
}
static void test_acquire_release_async(void)
{
    CHECK(inject("acquire and release from an event loop", NULL, sc_acquire_async,
                 acquire_after) > 3);
}

/* The heap an idle client holds: connected, one lock held, watchdog in
 * tick mode, after a renewal round. */
static void test_idle_client_heap(void)
{
    size_t before = H.live;
    long blocks = H.blocks;
    rlk_client *cl = new_client(0);
    rlk_lock *l = NULL;
    rlk_lock_options o;
    if (!CHECK(cl != NULL)) return;
    rlk_lock_options_init(&o);
    o.watchdog = 1;
    CHECK_EQ_INT(rlk_client_tick(cl, NULL), RLK_OK); /* tick mode */
    if (CHECK(rlk_lock_acquire(cl, "alloc-idle", &o, &l) == RLK_OK)) {
        CHECK_EQ_INT(rlk_client_tick(cl, NULL), RLK_OK);
        size_t idle = H.live - before;
        printf("    idle client: %zu bytes in %ld blocks (connected, one lock held, watchdog in "
               "tick mode)\n", idle, H.blocks - blocks);
        /* The bound issue #29 set: at most 16 KB with one lock held. */
        CHECK_MSG(idle <= 16384, "idle client heap %zu bytes, more than 16 KB", idle);
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    }
    rlk_client_free(cl);
    CHECK_EQ_INT(H.blocks, blocks);
}

/* ------------------------------------------------------------------ */
/* The sans-I/O session: handshake, acquire, a renewal round, release,  */
/* all on made-up bytes (no server: the session does no I/O).           */

/* ------------------------------------------------------------------ */
/* The session's driver over a real server                              */

static int drv_acquired, drv_done, drv_status;
static char drv_msg[600];

static void drv_cb(void *ctx, rlk_session *s, rlk_session_event ev, rlk_session_lock *l,
                   int status)
{
    (void)ctx, (void)s, (void)l;
    if (ev == RLK_SEV_ACQUIRED) drv_acquired = 1;
    if (ev == RLK_SEV_NOT_ACQUIRED || ev == RLK_SEV_RELEASED) {
        drv_done = 1;
        drv_status = status;
    }
}

static int drv_done_yet(void *ctx)
{
    (void)ctx;
    return drv_acquired || drv_done;
}

static int drv_released(void *ctx)
{
    (void)ctx;
    return drv_done;
}

/* Connect, handshake, acquire, release through rlk__driver: a failed
 * allocation anywhere ends in a clear status (the driver's or the
 * session's reason), never a crash or a leak; a lock left behind by a
 * release that could not be sent runs out by its TTL (deleted here). */
static int sc_driver(const char **msg)
{
    drv_acquired = drv_done = 0;
    drv_status = RLK_OK;
    *msg = drv_msg;
    rlk_conn_config cc;
    rlk_conn_config_init(&cc);
    cc.url = url;
    cc.client_name = "alloc-driver";
    rlk_session_config sc;
    rlk_session_config_init(&sc);
    sc.cb = drv_cb;
    rlk__core_config kc;
    memset(&kc, 0, sizeof kc);
    kc.library = &rlk__lua_library;
    rlk__driver d;
    rlk__locks *lk = NULL;
    int r = rlk__driver_init(&d, &cc, &kc);
    if (r == RLK_OK && !(lk = rlk__locks_new_on(d.core, &sc, NULL))) r = RLK_ERR_NOMEM;
    rlk_session_lock *l = NULL;
    if (r == RLK_OK) {
        rlk_lock_options o;
        rlk_lock_options_init(&o);
        o.ttl_ms = 10000;
        l = rlk__locks_acquire(lk, "alloc:drv", &o, NULL, ts_now_ms());
        if (!l) r = RLK_ERR_NOMEM;
    }
    if (r == RLK_OK) r = rlk__driver_run(&d, drv_done_yet, NULL, ts_now_ms() + 5000);
    if (r == RLK_OK && drv_done) r = drv_status;
    if (r == RLK_OK) {
        r = rlk_session_release(l, ts_now_ms());
        if (r == RLK_OK) r = rlk__driver_run(&d, drv_released, NULL, ts_now_ms() + 5000);
        if (r == RLK_OK) r = drv_status;
    }
    snprintf(drv_msg, sizeof drv_msg, "%s", d.err[0] ? d.err : lk ? rlk__locks_errmsg(lk) : "");
    rlk__locks_free(lk);
    rlk__driver_destroy(&d);
    admin_del("alloc:drv");
    return r;
}

static void test_driver(void) { CHECK(inject("driver", NULL, sc_driver, NULL) > 5); }

static int sess_acquired, sess_released;
static char sess_msg[300];

static void sess_cb(void *ctx, rlk_session *s, rlk_session_event ev, rlk_session_lock *l,
                    int status)
{
    (void)ctx, (void)s, (void)l;
    if (ev == RLK_SEV_ACQUIRED) sess_acquired++;
    if (ev == RLK_SEV_RELEASED && status == RLK_OK) sess_released++;
}

static int sess_feed(rlk_session *s, const char *bytes, int64_t now)
{
    rlk_session_consume(s, (size_t)-1); /* written, before any reply */
    int r = rlk_session_feed(s, bytes, strlen(bytes), now);
    rlk_session_consume(s, (size_t)-1);
    return r;
}

/* HELLO's reply (RESP3), then the confirmation of the SUBSCRIBE the
 * handshake ends with, as a server sends it. */
static int sess_hello(rlk_session *s, const char *hello, int64_t now)
{
    char sub[128];
    const char *ch = rlk__session_handoff_channel(s);
    const char *out = NULL;
    rlk_session_consume(s, (size_t)-1);
    int r = rlk_session_feed(s, hello, strlen(hello), now);
    /* CLIENT NO-EVICT, asked of a server that has it (Redis 7.0+),
     * before the SUBSCRIBE: answered first. */
    size_t n = rlk_session_output(s, &out);
    if (r == RLK_OK && out && memmem(out, n, "NO-EVICT", 8)) r = sess_feed(s, "+OK\r\n", now);
    snprintf(sub, sizeof sub, ">3\r\n$9\r\nsubscribe\r\n$%zu\r\n%s\r\n:1\r\n", strlen(ch), ch);
    if (r == RLK_OK) r = sess_feed(s, sub, now);
    return r;
}

static int sc_session(const char **msg)
{
    sess_acquired = sess_released = 0;
    *msg = sess_msg;
    snprintf(sess_msg, sizeof sess_msg, "rlk_session_new");
    rlk_session_config c;
    rlk_session_config_init(&c);
    c.cb = sess_cb;
    c.password = "secret";
    c.client_name = "alloc";
    rlk_session *s = rlk_session_new(&c);
    if (!s) return RLK_ERR_NOMEM;
    int r = rlk_session_connected(s, 1000);
    if (r == RLK_OK) r = sess_hello(s, "%1\r\n+server\r\n+redis\r\n", 1000);
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 3000;
    o.watchdog = 1;
    rlk_session_lock *l = NULL;
    if (r == RLK_OK && !(l = rlk_session_acquire(s, "alloc:s", &o, NULL, 1000)))
        r = RLK_ERR_NOMEM;
    if (r == RLK_OK) r = sess_feed(s, "+OK\r\n$-1\r\n*2\r\n$10\r\n1700000000\r\n$1\r\n5\r\n", 1001);
    if (r == RLK_OK && sess_acquired != 1) r = RLK_ERR_PROTO;
    if (r == RLK_OK) r = rlk_session_tick(s, 2001); /* the renewal is due */
    if (r == RLK_ERR_NOMEM && H.failed && sess_acquired == 1) {
        /* The round could not be sent: after a reconnect the next one
         * must go (the lock is still valid until about 3900). */
        int was = r;
        const char *out;
        rlk_session_closed(s, 2001);
        r = rlk_session_connected(s, 2001);
        if (r == RLK_OK) r = sess_hello(s, "%1\r\n+server\r\n+redis\r\n", 2001);
        if (r == RLK_OK) r = rlk_session_tick(s, 2002);
        size_t n = rlk_session_output(s, &out);
        CHECK_MSG(r == RLK_OK && memmem(out, n, "EVALSHA", 7) != NULL,
                  "no renewal round after a reconnect (status %d)", r);
        r = was;
    }
    if (r == RLK_OK) r = sess_feed(s, "*1\r\n:1\r\n", 2002);
    if (r == RLK_OK && rlk_session_lock_remaining_ms(l, 2002) < 2900) r = RLK_ERR_PROTO;
    if (r == RLK_OK) r = rlk_session_release(l, 2003);
    if (r == RLK_OK) r = sess_feed(s, ":1\r\n", 2004);
    if (r == RLK_OK && sess_released != 1) r = RLK_ERR_PROTO;
    if (r != RLK_OK) snprintf(sess_msg, sizeof sess_msg, "%s", rlk_session_errmsg(s));
    rlk_session_free(s);
    return r;
}

static void test_session(void) { CHECK(inject("session", NULL, sc_session, NULL) > 5); }

/* A session with cb, connected, its handshake answered (*r: the status;
 * NULL when memory ran out first). */
static rlk_session *sess_ready(rlk_session_cb cb, int *r)
{
    snprintf(sess_msg, sizeof sess_msg, "rlk_session_new");
    rlk_session_config c;
    rlk_session_config_init(&c);
    c.cb = cb;
    rlk_session *s = rlk_session_new(&c);
    if (!s) return NULL;
    *r = rlk_session_connected(s, 1000);
    if (*r == RLK_OK) *r = sess_hello(s, "%1\r\n+server\r\n+redis\r\n", 1000);
    return s;
}

/* 40 locks: the renewal round's request outgrows the output buffer, so
 * sending the round can fail part way; a reconnect must still send the
 * next round. */
static int sc_session_round(const char **msg)
{
    enum { N = 40 };
    sess_acquired = sess_released = 0;
    *msg = sess_msg;
    int r;
    rlk_session *s = sess_ready(sess_cb, &r);
    if (!s) return RLK_ERR_NOMEM;
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 3000;
    o.watchdog = 1;
    /* One at a time: the output buffer stays the size of one acquire. */
    for (int i = 0; i < N && r == RLK_OK; i++) {
        char name[32];
        snprintf(name, sizeof name, "alloc:round:%02d", i);
        if (!rlk_session_acquire(s, name, &o, NULL, 1000)) r = RLK_ERR_NOMEM;
        if (r == RLK_OK) r = sess_feed(s, "+OK\r\n$-1\r\n*2\r\n$10\r\n1700000000\r\n$1\r\n5\r\n", 1001);
    }
    if (r == RLK_OK && sess_acquired != N) r = RLK_ERR_PROTO;
    int ticked = r == RLK_OK;
    if (r == RLK_OK) r = rlk_session_tick(s, 2001); /* one round of N keys */
    if (ticked && r == RLK_ERR_NOMEM && H.failed) {
        int was = r;
        const char *out;
        rlk_session_closed(s, 2001);
        r = rlk_session_connected(s, 2001);
        if (r == RLK_OK) r = sess_hello(s, "%1\r\n+server\r\n+redis\r\n", 2001);
        if (r == RLK_OK) r = rlk_session_tick(s, 2002);
        size_t n = rlk_session_output(s, &out);
        CHECK_MSG(r == RLK_OK && memmem(out, n, "EVALSHA", 7) != NULL,
                  "40 locks: no renewal round after a reconnect (status %d)", r);
        r = was;
    } else if (r == RLK_OK) {
        char reply[8 + 4 * N + 1];
        int k = snprintf(reply, sizeof reply, "*%d\r\n", N);
        for (int i = 0; i < N; i++) k += snprintf(reply + k, sizeof reply - (size_t)k, ":1\r\n");
        r = sess_feed(s, reply, 2002);
    }
    if (r != RLK_OK) snprintf(sess_msg, sizeof sess_msg, "%s", rlk_session_errmsg(s));
    rlk_session_free(s);
    return r;
}

static void test_session_round(void)
{
    CHECK(inject("session, 40 locks", NULL, sc_session_round, NULL) > 40);
}

/* The session's later requests: a reentrant lock held twice by one
 * holder, an extend (answered NOSCRIPT, then sent again as EVAL), the
 * calls without a handle, the releases.  A run that fails closes the
 * session with requests under way, and frees it with calls queued. */
static int sess_extended, sess_calls;

static void sess_cb2(void *ctx, rlk_session *s, rlk_session_event ev, rlk_session_lock *l,
                     int status)
{
    sess_cb(ctx, s, ev, l, status);
    if (ev == RLK_SEV_EXTENDED && status == RLK_OK) sess_extended++;
}

static void sess_call_cb(void *ctx, rlk_session *s, const rlk__session_result *res)
{
    (void)ctx, (void)s;
    if (res->status == RLK_OK) sess_calls++;
}

#define ACQ_REPLY(fence, holds) "*4\r\n:1\r\n:" fence "\r\n:" holds "\r\n:0\r\n"

/* The end of a run with status r: a run that failed closes the session
 * with requests under way (or not, in turn), and frees it with calls
 * queued. */
static int sess_done(rlk_session *s, int r, int64_t now)
{
    if (r != RLK_OK) {
        snprintf(sess_msg, sizeof sess_msg, "%s", rlk_session_errmsg(s));
        /* The calls under way end here, or with the session. */
        if (H.calls % 2) rlk_session_closed(s, now);
    }
    rlk_session_free(s);
    return r;
}

static int sc_session_requests(const char **msg)
{
    sess_acquired = sess_released = sess_extended = sess_calls = 0;
    *msg = sess_msg;
    int r;
    rlk_session *s = sess_ready(sess_cb2, &r);
    if (!s) return RLK_ERR_NOMEM;
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 3000;
    o.kind = RLK_LOCK_REENTRANT;
    rlk_session_lock *a = NULL, *b = NULL;
    if (r == RLK_OK && !(a = rlk_session_acquire(s, "alloc:r", &o, NULL, 1000))) r = RLK_ERR_NOMEM;
    if (r == RLK_OK) r = sess_feed(s, ACQ_REPLY("7", "1"), 1001);
    o.holder = a ? rlk_session_lock_token(a) : NULL;
    if (r == RLK_OK && !(b = rlk_session_acquire(s, "alloc:r", &o, NULL, 1002))) r = RLK_ERR_NOMEM;
    if (r == RLK_OK) r = sess_feed(s, ACQ_REPLY("9", "2"), 1003);
    if (r == RLK_OK && (sess_acquired != 2 || rlk_session_lock_fence(b) != 7)) r = RLK_ERR_PROTO;
    if (r == RLK_OK) r = rlk_session_extend(a, 5000, RLK_EXTEND_SET, 1004);
    if (r == RLK_OK) r = sess_feed(s, "-NOSCRIPT No matching script.\r\n", 1005);
    if (r == RLK_OK) r = sess_feed(s, ":5000\r\n", 1006);
    if (r == RLK_OK && sess_extended != 1) r = RLK_ERR_PROTO;
    if (r == RLK_OK) r = rlk__session_status(s, "alloc:r", sess_call_cb, NULL, 1007);
    if (r == RLK_OK) r = rlk__session_release_token(s, "alloc:t", "tok", sess_call_cb, NULL, 1007);
    if (r == RLK_OK)
        r = rlk__session_extend_token(s, "alloc:t", "tok", 100, RLK_EXTEND_ADD, sess_call_cb, NULL,
                                      1007);
    if (r == RLK_OK) r = sess_feed(s, "*7\r\n:1\r\n+hash\r\n:4000\r\n:2\r\n:0\r\n$0\r\n\r\n:0\r\n", 1008);
    if (r == RLK_OK) r = sess_feed(s, "-NOSCRIPT No matching script.\r\n", 1008);
    if (r == RLK_OK) r = sess_feed(s, ":900\r\n:1\r\n", 1009); /* the EVAL comes last */
    if (r == RLK_OK && sess_calls != 3) r = RLK_ERR_PROTO;
    if (r == RLK_OK) r = rlk_session_release(a, 1010);
    if (r == RLK_OK) r = rlk_session_release(b, 1010);
    if (r == RLK_OK) r = sess_feed(s, ":2\r\n:1\r\n", 1011);
    if (r == RLK_OK && sess_released != 2) r = RLK_ERR_PROTO;
    return sess_done(s, r, 1012);
}

static void test_session_requests(void)
{
    CHECK(inject("session requests", NULL, sc_session_requests, NULL) > 10);
}

/* Re-sends: an acquire and a release whose replies were lost, sent
 * again after a reconnect. */
static int sc_session_resend(const char **msg)
{
    sess_acquired = sess_released = 0;
    *msg = sess_msg;
    int r = RLK_ERR_NOMEM;
    rlk_session *s = sess_ready(sess_cb, &r);
    if (!s) return RLK_ERR_NOMEM;
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 3000;
    rlk_session_lock *l = NULL;
    if (r == RLK_OK && !(l = rlk_session_acquire(s, "alloc:r", &o, NULL, 1000))) r = RLK_ERR_NOMEM;
    for (int round = 0; r == RLK_OK && round < 2; round++) {
        /* round 0: the try's reply is lost; round 1: the release's. */
        if (round == 1) r = rlk_session_release(l, 1100);
        rlk_session_consume(s, (size_t)-1);
        rlk_session_closed(s, 1100);
        if (r == RLK_OK) r = rlk_session_connected(s, 1200);
        if (r == RLK_OK) r = sess_hello(s, "%1\r\n+server\r\n+redis\r\n", 1200);
        if (r == RLK_OK)
            r = sess_feed(s, round == 0 ? "*4\r\n:1\r\n:1700000000000005\r\n:1\r\n:1\r\n" : ":1\r\n", 1210);
        if (r == RLK_OK && (round == 0 ? sess_acquired : sess_released) != 1) r = RLK_ERR_PROTO;
    }
    if (r != RLK_OK) snprintf(sess_msg, sizeof sess_msg, "%s", rlk_session_errmsg(s));
    rlk_session_free(s);
    return r;
}

static void test_session_resend(void)
{
    CHECK(inject("session re-sends", NULL, sc_session_resend, NULL) > 5);
}

/* A session whose HELLO tells Redis 7: its requests as FCALL, the
 * library's FUNCTION LOAD after "Function not found" (its text built in
 * memory), the call again as EVAL, a renewal as FCALL, FCALL refused:
 * EVALSHA for what follows. */
static int sc_session_fcall(const char **msg)
{
    sess_acquired = sess_released = sess_extended = sess_calls = 0;
    *msg = sess_msg;
    snprintf(sess_msg, sizeof sess_msg, "rlk_session_new");
    rlk_session_config c;
    rlk_session_config_init(&c);
    c.cb = sess_cb2;
    rlk_session *s = rlk_session_new(&c);
    if (!s) return RLK_ERR_NOMEM;
    int r = rlk_session_connected(s, 1000);
    if (r == RLK_OK)
        r = sess_hello(s, "%2\r\n+server\r\n+redis\r\n+version\r\n+7.0.15\r\n", 1000);
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 3000;
    o.kind = RLK_LOCK_REENTRANT;
    o.watchdog = 1;
    rlk_session_lock *a = NULL;
    const char *out = NULL;
    if (r == RLK_OK && !(a = rlk_session_acquire(s, "alloc:f", &o, NULL, 1000))) r = RLK_ERR_NOMEM;
    if (r == RLK_OK && !memmem(out, rlk_session_output(s, &out), "FCALL", 5)) r = RLK_ERR_PROTO;
    if (r == RLK_OK) r = sess_feed(s, "-ERR Function not found\r\n", 1001);
    if (r == RLK_OK) r = sess_feed(s, "+resplock_x\r\n" ACQ_REPLY("7", "1"), 1002);
    if (r == RLK_OK && sess_acquired != 1) r = RLK_ERR_PROTO;
    if (r == RLK_OK) r = rlk_session_tick(s, 2001); /* the renewal is due */
    if (r == RLK_OK) r = sess_feed(s, "*1\r\n:1\r\n", 2002);
    if (r == RLK_OK) r = rlk_session_extend(a, 5000, RLK_EXTEND_SET, 2003);
    if (r == RLK_OK) r = sess_feed(s, "-ERR unknown command 'FCALL'\r\n", 2004);
    if (r == RLK_OK) r = sess_feed(s, ":5000\r\n", 2005);
    if (r == RLK_OK && sess_extended != 1) r = RLK_ERR_PROTO;
    if (r == RLK_OK) r = rlk__session_status(s, "alloc:f", sess_call_cb, NULL, 2006);
    if (r == RLK_OK && !memmem(out, rlk_session_output(s, &out), "EVALSHA", 7)) r = RLK_ERR_PROTO;
    if (r == RLK_OK) r = sess_feed(s, "*7\r\n:1\r\n+hash\r\n:4000\r\n:1\r\n:0\r\n$0\r\n\r\n:0\r\n", 2007);
    if (r == RLK_OK && sess_calls != 1) r = RLK_ERR_PROTO;
    if (r == RLK_OK) r = rlk_session_release(a, 2008);
    if (r == RLK_OK) r = sess_feed(s, ":1\r\n", 2009);
    if (r == RLK_OK && sess_released != 1) r = RLK_ERR_PROTO;
    return sess_done(s, r, 2010);
}

static void test_session_fcall(void)
{
    CHECK(inject("session, FCALL", NULL, sc_session_fcall, NULL) > 10);
}

int main(int argc, char **argv)
{
    rlk_allocator a = {h_malloc, h_realloc, h_free, NULL};
    tl_init(argc, argv);
    rlk_set_allocator(&a); /* before any object: every object is the hook's */
    srv = ts_start(NULL);
    if (!srv) {
        printf("FAIL: could not start redis-server\n");
        return tl_finish() | 1;
    }
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", srv->port);
    rlk_conn_config cc;
    rlk_conn_config_init(&cc);
    cc.url = url;
    admin = rlk_conn_new(&cc);
    if (!admin || rlk_conn_connect(admin) != RLK_OK) {
        printf("FAIL: admin connection\n");
        return tl_finish() | 1;
    }
    RUN_TEST(test_parse);
    RUN_TEST(test_connect);
    RUN_TEST(test_acquire_release);
    RUN_TEST(test_acquire_release_async);
    RUN_TEST(test_watchdog_round);
    RUN_TEST(test_driver);
    RUN_TEST(test_session);
    RUN_TEST(test_session_round);
    RUN_TEST(test_session_requests);
    RUN_TEST(test_session_resend);
    RUN_TEST(test_session_fcall);
    RUN_TEST(test_idle_client_heap);
    rlk_conn_free(admin);
    ts_stop(srv);
    CHECK_EQ_INT(H.blocks, 0);
    return tl_finish();
}
