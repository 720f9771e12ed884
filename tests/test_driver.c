/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The session's driver (src/core/driver.c): a session over the library's own
 * transports (TCP, Unix socket, TLS) against real redis-server
 * processes, through what a connection meets: a server that closes it,
 * restarts empty, goes away, freezes, refuses the password, or is full.
 */
#include "config.h"

#define TESTLIB_MAIN
#include "testlib.h"
#include "server.h"
#include "conntest.h"
#include "resplock.h"
#include "driver.h"
#include "lock.h"
#include "lua.h"
#include "route.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CHECK_EQ_INT as an expression, for a check that guards what follows. */
#define EQ(a, b) eq_((long long)(a), (long long)(b), #a, __LINE__)
static int eq_(long long a, long long b, const char *what, int line)
{
    return tl_ok(a == b, __FILE__, line, "%s: %lld, expected %lld", what, a, b);
}

static ts_server *srv;
static char url[128];
static rlk_conn *adm;

/* ------------------------------------------------------------------ */
/* A driver and its events                                              */

#define MAXEV 32
typedef struct dt {
    rlk__driver d;
    rlk__locks *lk;           /* the locks over its core */
    struct {
        rlk_session_event ev;
        rlk_session_lock *l;
        int status;
        int64_t at;      /* ts_now_ms() when it came */
    } evs[MAXEV];
    int nev;
    rlk_client_config timing;
} dt;

static void on_event(void *ctx, rlk_session *s, rlk_session_event e, rlk_session_lock *l,
                     int status)
{
    dt *t = ctx;
    (void)s;
    if (t->nev >= MAXEV) return;
    t->evs[t->nev].ev = e;
    t->evs[t->nev].l = l;
    t->evs[t->nev].status = status;
    t->evs[t->nev].at = ts_now_ms();
    t->nev++;
}

static int count(const dt *t, rlk_session_event e)
{
    int n = 0;
    for (int i = 0; i < t->nev; i++) n += t->evs[i].ev == e;
    return n;
}

static int dt_init(dt *t, const rlk_conn_config *conn)
{
    memset(t, 0, sizeof *t);
    rlk_client_config_init(&t->timing);
    rlk_session_config sc;
    rlk_session_config_init(&sc);
    sc.cb = on_event;
    sc.ctx = t;
    sc.timing = &t->timing;
    rlk__core_config kc;
    memset(&kc, 0, sizeof kc);
    kc.library = &rlk__lua_library;
    int r = rlk__driver_init(&t->d, conn, &kc);
    if (t->d.core) t->lk = rlk__locks_new_on(t->d.core, &sc, NULL);
    if (t->d.core && !t->lk) return RLK_ERR_NOMEM;
    return r;
}

static void dt_destroy(dt *t)
{
    rlk__locks_free(t->lk);
    t->lk = NULL;
    rlk__driver_destroy(&t->d);
}

/* A core config with the scripts' library. */
static rlk__core_config with_library(void)
{
    rlk__core_config kc;
    memset(&kc, 0, sizeof kc);
    kc.library = &rlk__lua_library;
    return kc;
}

static void conn_cfg(rlk_conn_config *c, const char *u)
{
    rlk_conn_config_init(c);
    c->url = u;
    c->client_name = "driver-test";
    c->command_timeout_ms = 2000;
}

static int dt_new(dt *t, const char *u)
{
    rlk_conn_config c;
    conn_cfg(&c, u);
    return dt_init(t, &c);
}

typedef struct want {
    dt *t;
    rlk_session_event ev;
    int n;
} want;

static int has_events(void *ctx)
{
    want *w = ctx;
    return count(w->t, w->ev) >= w->n;
}

/* Runs t until it has seen n events of kind ev, for at most ms. */
static int run_until(dt *t, rlk_session_event ev, int n, int ms)
{
    want w = {t, ev, n};
    return rlk__driver_run(&t->d, has_events, &w, ts_now_ms() + ms);
}

static int never(void *ctx)
{
    (void)ctx;
    return 0;
}

/* Runs t for ms: its renewals, its reconnects. */
static void run_for(dt *t, int ms)
{
    rlk__driver_run(&t->d, never, NULL, ts_now_ms() + ms);
}

static rlk_session_lock *acq(dt *t, const char *name, int64_t ttl, int64_t wait, int watchdog)
{
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = ttl;
    o.wait_ms = wait;
    o.watchdog = watchdog;
    return rlk__locks_acquire(t->lk, name, &o, NULL, ts_now_ms());
}

/* The token the server holds at key (rlk_conn adm), "" when none. */
static const char *held_token(rlk_conn *c, const char *key)
{
    static char tok[256];
    if (CMD_STR(c, tok, "GET", key) < 0) tok[0] = '\0';
    return tok;
}

/* Kills the driver's connection from the server's side, found by its
 * client name. */
static int kill_driver_conn(rlk_conn *c)
{
    rlk_resp_value *v = CMD(c, "CLIENT", "LIST");
    if (!v || !v->str) return 0;
    const char *p = strstr(v->str, "name=driver-test");
    if (!p) return 0;
    const char *line = p;
    while (line > v->str && line[-1] != '\n') line--;
    const char *id = strstr(line, "id=");
    if (!id || id > p) return 0;
    char num[24];
    snprintf(num, sizeof num, "%lld", strtoll(id + 3, NULL, 10));
    return CMD_INT(c, "CLIENT", "KILL", "ID", num) == 1;
}

/* A server of the test's own (restarted, halted or frozen), its URL in u. */
static ts_server *own_server(char *u, size_t n)
{
    ts_server *s = ts_start(NULL);
    if (CHECK(s != NULL)) url_of(u, n, s);
    return s;
}

/* A lock taken at once (NULL, a test failure, when it was not). */
static rlk_session_lock *take(dt *t, const char *name, int64_t ttl, int watchdog)
{
    rlk_session_lock *l = acq(t, name, ttl, 0, watchdog);
    CHECK_EQ_INT(run_until(t, RLK_SEV_ACQUIRED, 1, LONG_MS), RLK_OK);
    return EQ(count(t, RLK_SEV_ACQUIRED), 1) ? l : NULL;
}

/* An acquire and its release over the driver, checked on the server. */
static void acquire_release(dt *t, rlk_conn *c, const char *name)
{
    rlk_session_lock *l = acq(t, name, 30000, 0, 0);
    if (!CHECK(l != NULL)) return;
    CHECK_EQ_INT(run_until(t, RLK_SEV_ACQUIRED, 1, LONG_MS), RLK_OK);
    if (!EQ(count(t, RLK_SEV_ACQUIRED), 1)) return;
    CHECK_EQ_STR(held_token(c, name), rlk_session_lock_token(l));
    CHECK_EQ_INT(rlk_session_release(l, ts_now_ms()), RLK_OK);
    CHECK_EQ_INT(run_until(t, RLK_SEV_RELEASED, 1, LONG_MS), RLK_OK);
    CHECK_EQ_INT(t->evs[t->nev - 1].status, RLK_OK);
    CHECK_EQ_INT(CMD_INT(c, "EXISTS", name), 0);
}

/* ------------------------------------------------------------------ */

static void test_tcp(void)
{
    dt t;
    if (!EQ(dt_new(&t, url), RLK_OK)) goto out;
    CHECK_EQ_INT(rlk__driver_fd(&t.d), -1);
    acquire_release(&t, adm, "drv:tcp");
    CHECK_EQ_U64(t.d.connects, 1);
    CHECK(rlk__driver_fd(&t.d) >= 0);
out:
    dt_destroy(&t);
}

static void test_unix(void)
{
    ts_options o;
    memset(&o, 0, sizeof o);
    o.unix_socket = 1;
    ts_server *s = ts_start(&o);
    if (!CHECK(s != NULL)) return;
    char u[400], tcp[128];
    snprintf(u, sizeof u, "unix://%s", s->unix_path);
    url_of(tcp, sizeof tcp, s);
    rlk_conn *c = CONNECT(tcp);
    dt t;
    if (CHECK(c != NULL) && EQ(dt_new(&t, u), RLK_OK))
        acquire_release(&t, c, "drv:unix");
    dt_destroy(&t);
    rlk_conn_free(c);
    ts_stop(s);
}

/* A TLS server's certificates in o (0: they could not be made, a test
 * failure). */
static int tls_server(ts_options *o)
{
    if (!CHECK(ts_certs_dir() != NULL)) return 0;
    o->tls_cert = ts_cert("server.crt");
    o->tls_key = ts_cert("server.key");
    o->tls_ca = ts_cert("ca.crt");
    return 1;
}

#ifdef RLK_HAVE_OPENSSL
/* Starts a TLS server (auth_clients: it requires a client certificate;
 * its readiness check presents one), its URL in u; NULL on failure (a
 * test failure). */
static ts_server *tls_start(int auth_clients, char *u, size_t n)
{
    ts_options o;
    memset(&o, 0, sizeof o);
    if (!tls_server(&o)) return NULL;
    o.tls_auth_clients = auth_clients;
    o.tls_client_cert = ts_cert("client.crt");
    o.tls_client_key = ts_cert("client.key");
    ts_server *s = ts_start(&o);
    if (CHECK(s != NULL)) snprintf(u, n, "rediss://127.0.0.1:%d", s->port);
    return s;
}
#endif

static void test_tls(void)
{
#ifdef RLK_HAVE_OPENSSL
    char u[128];
    ts_server *s = tls_start(0, u, sizeof u);
    if (!s) return;
    rlk_conn_config cc;
    cfg_init(&cc, u);
    cc.tls.ca_file = ts_cert("ca.crt");
    rlk_conn *c = rlk_conn_new(&cc);
    CHECK(c != NULL && rlk_conn_connect(c) == RLK_OK);
    dt t;
    conn_cfg(&cc, u);
    cc.tls.ca_file = ts_cert("ca.crt");
    if (EQ(dt_init(&t, &cc), RLK_OK)) acquire_release(&t, c, "drv:tls");
    dt_destroy(&t);

    /* Without the CA the server is not trusted: a failure no retry
     * mends, returned at once and again, with one try made. */
    conn_cfg(&cc, u);
    cc.tls.ca_file = ts_cert("other-ca.crt");
    if (EQ(dt_init(&t, &cc), RLK_OK)) {
        CHECK(acq(&t, "drv:tls2", 30000, 5000, 0) != NULL);
        int64_t t0 = ts_now_ms();
        CHECK_EQ_INT(run_until(&t, RLK_SEV_ACQUIRED, 1, LONG_MS), RLK_ERR_TLS);
        CHECK_MSG(ts_contains(t.d.err, "verif"), "err: %s", t.d.err);
        CHECK_EQ_INT(rlk__driver_step(&t.d, ts_now_ms() + 1000), RLK_ERR_TLS);
        CHECK_EQ_INT(t.d.fails, 1);
        CHECK_MSG(ts_now_ms() - t0 < LONG_MS / 2, "gave up after %lld ms",
                  (long long)(ts_now_ms() - t0));
    }
    dt_destroy(&t);
    rlk_conn_free(c);
    ts_stop(s);
#else
    /* Built without OpenSSL: a TLS URL fails clearly, once. */
    char u[128];
    snprintf(u, sizeof u, "rediss://127.0.0.1:%d", srv->port);
    dt t;
    if (EQ(dt_new(&t, u), RLK_OK)) {
        CHECK_EQ_INT(rlk__driver_step(&t.d, ts_now_ms() + 1000), RLK_ERR_TLS);
        CHECK_MSG(ts_contains(t.d.err, "not compiled"), "err: %s", t.d.err);
    }
    dt_destroy(&t);
#endif
}

#ifdef RLK_HAVE_OPENSSL
/* A server that requires a client certificate, and none given: the
 * server's refusal (under TLS 1.3 read after the handshake) is not tried
 * again either. */
static void test_tls_client_cert_refused(void)
{
    char u[128];
    ts_server *s = tls_start(1, u, sizeof u);
    if (!s) return;
    rlk_conn_config cc;
    conn_cfg(&cc, u);
    cc.tls.ca_file = ts_cert("ca.crt");
    dt t;
    if (EQ(dt_init(&t, &cc), RLK_OK)) {
        CHECK(acq(&t, "drv:mtls", 30000, 5000, 0) != NULL);
        CHECK_EQ_INT(run_until(&t, RLK_SEV_ACQUIRED, 1, LONG_MS), RLK_ERR_TLS);
        CHECK_MSG(ts_contains(t.d.err, "client certificate"), "err: %s", t.d.err);
        CHECK_EQ_INT(rlk__driver_step(&t.d, ts_now_ms() + 1000), RLK_ERR_TLS);
        CHECK_EQ_INT(t.d.fails, 1);
    }
    dt_destroy(&t);
    ts_stop(s);
}
#endif

/* The server kills the connection under a lock with the watchdog: the
 * driver connects again at once and the renewals go on. */
static void test_killed_connection(void)
{
    dt t;
    if (!EQ(dt_new(&t, url), RLK_OK)) goto out;
    rlk_session_lock *l = take(&t, "drv:kill", 600, 1);
    if (!l) goto out;
    for (int i = 0; i < 3; i++) {
        CHECK(kill_driver_conn(adm));
        run_for(&t, 400);
    }
    run_for(&t, 1200); /* two TTLs more */
    CHECK_EQ_INT(count(&t, RLK_SEV_LOST), 0);
    CHECK_MSG(t.d.connects >= 4, "connects %llu", (unsigned long long)t.d.connects);
    CHECK_EQ_STR(held_token(adm, "drv:kill"), rlk_session_lock_token(l));
    CHECK(rlk_session_lock_remaining_ms(l, ts_now_ms()) > 0);
    CHECK_EQ_INT(rlk_session_release(l, ts_now_ms()), RLK_OK);
    CHECK_EQ_INT(run_until(&t, RLK_SEV_RELEASED, 1, LONG_MS), RLK_OK);
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "drv:kill"), 0);
out:
    dt_destroy(&t);
}

/* The server restarts empty: the lock is gone, and the first renewal on
 * the new connection finds it so, before its validity ends. */
static void test_restart_loses_lock(void)
{
    char u[128];
    ts_server *s = own_server(u, sizeof u);
    if (!s) return;
    dt t;
    if (!EQ(dt_new(&t, u), RLK_OK)) goto out;
    rlk_session_lock *l = take(&t, "drv:restart", 3000, 1);
    if (!l) goto out;
    int64_t valid_end = ts_now_ms() + rlk_session_lock_remaining_ms(l, ts_now_ms());
    CHECK_EQ_INT(ts_restart(s), 0);
    CHECK_EQ_INT(run_until(&t, RLK_SEV_LOST, 1, LONG_MS), RLK_OK);
    if (EQ(count(&t, RLK_SEV_LOST), 1)) {
        int64_t at = t.evs[t.nev - 1].at;
        CHECK_MSG(at <= valid_end, "lost reported %lld ms after the validity ended",
                  (long long)(at - valid_end));
    }
    CHECK(t.d.connects >= 2);
    CHECK_EQ_INT(rlk_session_release(l, ts_now_ms()), RLK_OK);
    CHECK_EQ_INT(run_until(&t, RLK_SEV_RELEASED, 1, LONG_MS), RLK_OK);
    /* And the new server serves the next acquire. */
    rlk_conn *c = CONNECT(u);
    t.nev = 0;
    if (c) acquire_release(&t, c, "drv:restart");
    rlk_conn_free(c);
out:
    dt_destroy(&t);
    ts_stop(s);
}

/* The server is gone for a while: tries are paced by the backoff (a few
 * per second, not a busy loop), and an acquire waiting for the
 * connection is served when it comes back. */
static void test_backoff(void)
{
    char u[128];
    ts_server *s = own_server(u, sizeof u);
    if (!s) return;
    dt t;
    if (!EQ(dt_new(&t, u), RLK_OK)) goto out;
    CHECK_EQ_INT(ts_halt(s), 0);
    rlk_session_lock *l = acq(&t, "drv:backoff", 30000, 60000, 0);
    CHECK(l != NULL);
    int64_t t0 = ts_now_ms();
    run_for(&t, 1500);
    int64_t spent = ts_now_ms() - t0;
    /* 50 ms doubling up to 2 s, half of each pause random: 25+50+100+
     * 200+400 ms make 775 ms at least, so within 1.5 s no more than 6
     * pauses, 7 tries, can pass; a loop without pauses makes hundreds. */
    CHECK_MSG(t.d.fails >= 3 && t.d.fails <= 7, "%d tries in %lld ms", t.d.fails,
              (long long)spent);
    CHECK_MSG(ts_contains(t.d.err, "refused"), "err: %s", t.d.err);
    CHECK_EQ_INT(count(&t, RLK_SEV_NOT_ACQUIRED), 0);
    CHECK_EQ_INT(ts_start_again(s), 0);
    CHECK_EQ_INT(run_until(&t, RLK_SEV_ACQUIRED, 1, LONG_MS), RLK_OK);
    CHECK_EQ_INT(count(&t, RLK_SEV_ACQUIRED), 1);
    CHECK_EQ_INT(t.d.fails, 0);
out:
    dt_destroy(&t);
    ts_stop(s);
}

/* A server frozen (SIGSTOP) under a watchdog lock: the loss is reported
 * before the validity ends, and no call blocks past its bound. */
static void test_frozen(void)
{
    char u[128];
    ts_server *s = own_server(u, sizeof u);
    if (!s) return;
    dt t;
    if (!EQ(dt_new(&t, u), RLK_OK)) goto out;
    rlk_session_lock *l = take(&t, "drv:frozen", 1000, 1);
    if (!l) goto out;
    CHECK_EQ_INT(kill(s->pid, SIGSTOP), 0);
    int64_t valid_end = ts_now_ms() + rlk_session_lock_remaining_ms(l, ts_now_ms());
    int64_t longest = 0;
    for (int64_t end = ts_now_ms() + LONG_MS; count(&t, RLK_SEV_LOST) == 0 && ts_now_ms() < end;) {
        int64_t a = ts_now_ms();
        rlk__driver_step(&t.d, a + 100);
        if (ts_now_ms() - a > longest) longest = ts_now_ms() - a;
    }
    kill(s->pid, SIGCONT);
    if (EQ(count(&t, RLK_SEV_LOST), 1))
        CHECK_MSG(t.evs[t.nev - 1].at <= valid_end, "lost %lld ms late",
                  (long long)(t.evs[t.nev - 1].at - valid_end));
    /* A turn waits at most until its bound or the session's deadline;
     * a connect try (the server accepts while frozen) at most until the
     * turn's bound too.  Generous for valgrind. */
    CHECK_MSG(longest <= 600, "a turn took %lld ms", (long long)longest);
    CHECK_EQ_INT(rlk_session_release(l, ts_now_ms()), RLK_OK);
    run_until(&t, RLK_SEV_RELEASED, 1, LONG_MS);
out:
    dt_destroy(&t);
    ts_stop(s);
}

/* A wrong password: RLK_ERR_AUTH from the handshake, not tried again. */
static void test_wrong_password(void)
{
    ts_options o;
    memset(&o, 0, sizeof o);
    o.password = "right";
    ts_server *s = ts_start(&o);
    if (!CHECK(s != NULL)) return;
    char u[160];
    snprintf(u, sizeof u, "redis://:wrong@127.0.0.1:%d", s->port);
    dt t;
    if (EQ(dt_new(&t, u), RLK_OK)) {
        CHECK(acq(&t, "drv:auth", 30000, 5000, 0) != NULL);
        CHECK_EQ_INT(run_until(&t, RLK_SEV_ACQUIRED, 1, LONG_MS), RLK_ERR_AUTH);
        CHECK_MSG(ts_contains(t.d.err, "WRONGPASS"), "err: %s", t.d.err);
        CHECK(!ts_contains(t.d.err, "wrong@"));
        CHECK_EQ_INT(run_until(&t, RLK_SEV_ACQUIRED, 1, 1000), RLK_ERR_AUTH);
        CHECK_EQ_INT(t.d.fails, 1);
    }
    dt_destroy(&t);
    snprintf(u, sizeof u, "redis://:right@127.0.0.1:%d/2", s->port);
    if (EQ(dt_new(&t, u), RLK_OK)) {
        char plain[128];
        snprintf(plain, sizeof plain, "redis://:right@127.0.0.1:%d/2", s->port);
        rlk_conn *c = CONNECT(plain);
        if (c) acquire_release(&t, c, "drv:auth"); /* in db 2, as the URL says */
        rlk_conn_free(c);
    }
    dt_destroy(&t);
    ts_stop(s);
}

/* A connection that holds one of the server's slots (tls: with the CA),
 * or NULL (a test failure). */
static rlk_conn *slot_taker(const char *u, int tls)
{
    rlk_conn_config cc;
    cfg_init(&cc, u);
    if (tls) cc.tls.ca_file = ts_cert("ca.crt");
    rlk_conn *c = rlk_conn_new(&cc);
    if (!CHECK(c != NULL) || !CHECK_MSG(rlk_conn_connect(c) == RLK_OK, "%s", rlk_conn_errmsg(c))) {
        rlk_conn_free(c);
        return NULL;
    }
    return c;
}

enum { FULL_RESP3, FULL_RESP2_AUTH, FULL_TLS };

/* Three tries have failed and none is under way (a try cut short by a
 * run's bound would end as "timed out", not as the server's refusal). */
static int refused_thrice(void *ctx)
{
    const rlk__driver *d = ctx;
    return d->fails >= 3 && !rlk__driver_connecting(d);
}

/* A handshake refused for now (two other connections fill the server's
 * two slots: "max number of clients reached") is tried again after the
 * backoff's pauses, and the waiting acquire is served once a slot is
 * free.  FULL_RESP2_AUTH: RESP2 with a password, whose AUTH is the
 * request the refusal answers; FULL_TLS: TLS, where the server closes
 * the connection before the TLS handshake, with no words. */
static void refused_for_now(int kind)
{
    const char *extra[] = {"--maxclients", "2", NULL};
    ts_options o;
    memset(&o, 0, sizeof o);
    o.extra = extra;
    if (kind == FULL_RESP2_AUTH) o.password = "pw";
    if (kind == FULL_TLS && !tls_server(&o)) return;
    ts_server *s = ts_start(&o);
    if (!CHECK(s != NULL)) return;
    char u[128];
    snprintf(u, sizeof u, "%s://%s127.0.0.1:%d", kind == FULL_TLS ? "rediss" : "redis",
             kind == FULL_RESP2_AUTH ? ":pw@" : "", s->port);
    rlk_conn *c1 = slot_taker(u, kind == FULL_TLS), *c2 = slot_taker(u, kind == FULL_TLS);
    rlk_conn_config cc;
    conn_cfg(&cc, u);
    cc.protocol = kind == FULL_RESP2_AUTH ? 2 : 0;
    if (kind == FULL_TLS) cc.tls.ca_file = ts_cert("ca.crt");
    dt t;
    int made = c1 && c2;
    if (made && EQ(dt_init(&t, &cc), RLK_OK)) {
        CHECK(acq(&t, "drv:full", 30000, 60000, 0) != NULL);
        /* 25-50, 50-100 and 100-200 ms pauses: three tries well within
         * the bound. */
        CHECK_EQ_INT(rlk__driver_run(&t.d, refused_thrice, &t.d, ts_now_ms() + LONG_MS), RLK_OK);
        CHECK_MSG(t.d.fails >= 3, "%d tries", t.d.fails);
        if (kind == FULL_TLS)
            CHECK_MSG(t.d.last == RLK_ERR_TLS, "%d: %s", t.d.last, t.d.err);
        else
            CHECK_MSG(ts_contains(t.d.err, "max number of clients reached"), "err: %s", t.d.err);
        CHECK_EQ_INT(count(&t, RLK_SEV_NOT_ACQUIRED), 0);
        rlk_conn_free(c2);
        c2 = NULL;
        CHECK_EQ_INT(run_until(&t, RLK_SEV_ACQUIRED, 1, LONG_MS), RLK_OK);
        CHECK_EQ_INT(count(&t, RLK_SEV_ACQUIRED), 1);
        CHECK_EQ_INT(t.d.fails, 0);
    }
    if (made) dt_destroy(&t);
    rlk_conn_free(c1);
    rlk_conn_free(c2);
    ts_stop(s);
}

static void test_refused_for_now(void)
{
    refused_for_now(FULL_RESP3);
    refused_for_now(FULL_RESP2_AUTH);
#ifdef RLK_HAVE_OPENSSL
    refused_for_now(FULL_TLS);
#endif
}

/* Reconnecting off (reconnect_attempts -1): after the server closes the
 * connection the driver stays closed until asked. */
static void test_reconnect_off(void)
{
    dt t;
    rlk_conn_config c;
    conn_cfg(&c, url);
    c.reconnect_attempts = -1;
    if (!EQ(dt_init(&t, &c), RLK_OK)) goto out;
    acquire_release(&t, adm, "drv:off");
    CHECK(kill_driver_conn(adm));
    int64_t t0 = ts_now_ms();
    CHECK_EQ_INT(run_until(&t, RLK_SEV_READY, 99, LONG_MS), RLK_ERR_CLOSED);
    CHECK_MSG(ts_now_ms() - t0 < LONG_MS / 2, "closed after %lld ms", (long long)(ts_now_ms() - t0));
    CHECK_EQ_U64(t.d.connects, 1);
    CHECK_EQ_INT(rlk__driver_reconnect(&t.d), RLK_OK);
    CHECK_EQ_U64(t.d.connects, 2);
    t.nev = 0;
    acquire_release(&t, adm, "drv:off");
out:
    dt_destroy(&t);
}

/* A server that lets no connection in (its queue full): a reconnect
 * waits for the connect timeout and reports the connect's failure, the
 * try counted.  The next try's prepare returns at once, with the
 * connect's socket and event to poll for, and its deadline; closing
 * the driver gives the try up without counting it. */
static void test_reconnect_no_room(void)
{
    ts_hole h;
    if (!CHECK_MSG(ts_hole_open(&h) == 0, "no listener with a full queue")) return;
    char u[64], msg[64];
    snprintf(u, sizeof u, "redis://127.0.0.1:%d", h.port);
    snprintf(msg, sizeof msg, "connect 127.0.0.1:%d: timed out after ", h.port);
    rlk_conn_config c;
    conn_cfg(&c, u);
    c.connect_timeout_ms = 300;
    dt t;
    if (EQ(dt_init(&t, &c), RLK_OK)) {
        int64_t t0 = ts_now_ms();
        CHECK_EQ_INT(rlk__driver_reconnect(&t.d), RLK_ERR_CONNECT);
        CHECK_MSG(ts_now_ms() - t0 >= 290, "gave up after %lld ms", (long long)(ts_now_ms() - t0));
        CHECK_MSG(ts_contains(t.d.err, msg), "err: %s", t.d.err);
        CHECK_EQ_INT(t.d.fails, 1);
        CHECK(!rlk__driver_connecting(&t.d));
        struct pollfd p;
        int64_t wake = -1, until = ts_now_ms() + LONG_MS;
        for (;;) { /* through the backoff's pause */
            CHECK_EQ_INT(rlk__driver_prepare(&t.d, &p, until, &wake), RLK_OK);
            if (rlk__driver_connecting(&t.d) || ts_now_ms() >= until) break;
            rlk__poll_until(&p, 1, wake);
            CHECK_EQ_INT(rlk__driver_after(&t.d, &p), RLK_OK);
        }
        int64_t started = ts_now_ms();
        if (CHECK(rlk__driver_connecting(&t.d))) {
            CHECK(p.fd >= 0 && p.fd == t.d.t.fd && p.events == POLLOUT);
            CHECK_MSG(wake > started && wake <= started + 300, "wake in %lld ms",
                      (long long)(wake - started));
            CHECK_EQ_INT(rlk__driver_fd(&t.d), -1);
            CHECK(rlk__driver_can_go_on(&t.d));
        }
        rlk__driver_close(&t.d);
        CHECK(!rlk__driver_connecting(&t.d));
        CHECK_EQ_INT(t.d.fails, 1);
        /* A run whose bound comes before the connect's deadline ends
         * the try with it, as a failed try. */
        t.d.err[0] = '\0';
        CHECK_EQ_INT(rlk__driver_run(&t.d, never, NULL, ts_now_ms() + 100), RLK_ERR_TIMEOUT);
        CHECK(!rlk__driver_connecting(&t.d));
        CHECK_EQ_INT(t.d.fails, 2);
        CHECK_MSG(ts_contains(t.d.err, msg), "err: %s", t.d.err);
    }
    dt_destroy(&t);
    ts_hole_close(&h);
}

/* ------------------------------------------------------------------ */
/* A route over two servers (a SET, Redlock's ground)                   */

typedef struct rt {
    rlk__route r;
    rlk__locks *lk[2];        /* over each server's core */
    char own[2];              /* what each one's events name as the session */
    struct {
        rlk_session *s;
        rlk_session_event ev;
        int64_t at;
    } evs[MAXEV];
    int nev;
} rt;

static void rt_event(void *ctx, rlk_session *s, rlk_session_event e, rlk_session_lock *l,
                     int status)
{
    rt *t = ctx;
    (void)l, (void)status;
    if (t->nev >= MAXEV) return;
    t->evs[t->nev].s = s;
    t->evs[t->nev].ev = e;
    t->evs[t->nev].at = ts_now_ms();
    t->nev++;
}

static int rt_count(const rt *t, const rlk_session *s, rlk_session_event e)
{
    int n = 0;
    for (int i = 0; i < t->nev; i++) n += t->evs[i].ev == e && (!s || t->evs[i].s == s);
    return n;
}

typedef struct rt_want {
    rt *t;
    rlk_session_event ev;
    int n;
} rt_want;

static int rt_has(void *ctx)
{
    rt_want *w = ctx;
    return rt_count(w->t, NULL, w->ev) >= w->n;
}

/* Server A frozen: its lock is reported lost in time while B's is still
 * renewed, and no turn of the route waits on A. */
static void test_route_set(void)
{
    char ua[128], ub[128];
    ts_server *a = own_server(ua, sizeof ua), *b = own_server(ub, sizeof ub);
    rlk_conn *cb = b ? CONNECT(ub) : NULL;
    rt t;
    memset(&t, 0, sizeof t);
    rlk_conn_config cc[2];
    conn_cfg(&cc[0], ua);
    conn_cfg(&cc[1], ub);
    rlk_session_config sc;
    rlk_session_config_init(&sc);
    sc.cb = rt_event;
    sc.ctx = &t;
    rlk__core_config kc = with_library();
    /* ONE takes several servers only as seeds of one cluster, 16 at most;
     * no servers is no route. */
    rlk_conn_config many[17];
    for (int i = 0; i < 17; i++) many[i] = cc[0];
    CHECK_EQ_INT(rlk__route_init(&t.r, RLK__ROUTE_ONE, 17, many, &kc), RLK_ERR_INVALID);
    rlk__route_destroy(&t.r);
    CHECK_EQ_INT(rlk__route_init(&t.r, RLK__ROUTE_SET, 0, cc, &kc), RLK_ERR_INVALID);
    rlk__route_destroy(&t.r);
    /* A route of one: its kind's, its primary its only member, whose core
     * serves every slot (the host's topology asks the kind); not a
     * cluster before its server says so. */
    if (a && EQ(rlk__route_init(&t.r, RLK__ROUTE_ONE, 1, cc, &kc), RLK_OK)) {
        rlk__host_topo topo;
        rlk__route_topo(&t.r, &topo);
        CHECK(t.r.ops == &rlk__route_kind_one);
        CHECK_EQ_INT((int)rlk__route_primary(&t.r), 0);
        CHECK(rlk__route_is_data(&t.r, 0));
        CHECK(!rlk__route_is_cluster(&t.r));
        CHECK(topo.core_for(topo.ctx, 1234) == rlk__route_core(&t.r, rlk__route_primary(&t.r)));
        CHECK(rlk__route_core_for(&t.r, 0) == rlk__route_core(&t.r, 0));
        CHECK_EQ_INT((int)rlk__route_due(&t.r), -1);
    }
    rlk__route_destroy(&t.r);
    if (!a || !b || !cb || !EQ(rlk__route_init(&t.r, RLK__ROUTE_SET, 2, cc, &kc), RLK_OK)) goto out;
    rlk__core *cores[4];
    if (!EQ(rlk__route_cores(&t.r, 0, cores, 4), 2)) goto out;
    for (int i = 0; i < 2; i++)
        if (!CHECK((t.lk[i] = rlk__locks_new_on(cores[i], &sc, &t.own[i])) != NULL)) goto out;
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 800;
    o.watchdog = 1;
    rlk_session_lock *la = rlk__locks_acquire(t.lk[0], "rt:job", &o, NULL, ts_now_ms());
    rlk_session_lock *lb = rlk__locks_acquire(t.lk[1], "rt:job", &o, NULL, ts_now_ms());
    rt_want w = {&t, RLK_SEV_ACQUIRED, 2};
    CHECK_EQ_INT(rlk__route_run(&t.r, rt_has, &w, ts_now_ms() + LONG_MS), RLK_OK);
    if (!EQ(rt_count(&t, NULL, RLK_SEV_ACQUIRED), 2)) goto out;
    CHECK_EQ_INT(kill(a->pid, SIGSTOP), 0);
    int64_t valid_end = ts_now_ms() + rlk_session_lock_remaining_ms(la, ts_now_ms());
    int64_t longest = 0, end = ts_now_ms() + 2400; /* three TTLs */
    while (ts_now_ms() < end) {
        int64_t t0 = ts_now_ms();
        rlk__route_step(&t.r, end);
        if (ts_now_ms() - t0 > longest) longest = ts_now_ms() - t0;
    }
    kill(a->pid, SIGCONT);
    if (EQ(rt_count(&t, (rlk_session *)&t.own[0], RLK_SEV_LOST), 1)) {
        int64_t at = 0;
        for (int i = 0; i < t.nev; i++)
            if (t.evs[i].ev == RLK_SEV_LOST) at = t.evs[i].at;
        CHECK_MSG(at <= valid_end, "A's loss reported %lld ms late", (long long)(at - valid_end));
    }
    CHECK_EQ_INT(rt_count(&t, (rlk_session *)&t.own[1], RLK_SEV_LOST), 0);
    CHECK_EQ_STR(held_token(cb, "rt:job"), rlk_session_lock_token(lb));
    CHECK(rlk_session_lock_remaining_ms(lb, ts_now_ms()) > 0);
    CHECK_MSG(longest <= 600, "a turn of the route took %lld ms", (long long)longest);
    CHECK_EQ_INT(rlk_session_release(lb, ts_now_ms()), RLK_OK);
    CHECK_EQ_INT(rlk_session_release(la, ts_now_ms()), RLK_OK);
    rt_want rel = {&t, RLK_SEV_RELEASED, 2};
    CHECK_EQ_INT(rlk__route_run(&t.r, rt_has, &rel, ts_now_ms() + LONG_MS), RLK_OK);
    CHECK_EQ_INT(CMD_INT(cb, "EXISTS", "rt:job"), 0);
out:
    for (int i = 0; i < 2; i++) rlk__locks_free(t.lk[i]);
    rlk__route_destroy(&t.r);
    rlk_conn_free(cb);
    ts_stop(a);
    ts_stop(b);
}

/* ------------------------------------------------------------------ */
/* A route over three servers, one of which lets no connection in       */

#define HOLE_CONNECT_MS 2000
/* A turn's bound, set by the issue (#18): a property of turns that
 * never wait on one connection's connect, not a speed. */
#define TURN_MS 100

/* Acquire-and-release cycles on each server's session. */
typedef struct busy {
    rlk__route r;
    rlk__locks *lk[3];        /* over each server's core */
    char own[3];              /* what each one's events name as the session */
    int state[3];             /* 0 idle, 1 acquiring, 2 held, 3 releasing */
    rlk_session_lock *l[3];
    int cycles[3];
    int failures[3];          /* an acquire or a release that did not pass */
    int last_status[3];
} busy;

static void busy_event(void *ctx, rlk_session *s, rlk_session_event e, rlk_session_lock *l,
                       int status)
{
    busy *b = ctx;
    (void)l;
    size_t i = 0;
    while (i < b->r.n && (const void *)&b->own[i] != (const void *)s) i++;
    if (i == b->r.n || e == RLK_SEV_READY) return;
    if (e == RLK_SEV_ACQUIRED && b->state[i] == 1) {
        b->state[i] = 2;
        return;
    }
    if (e == RLK_SEV_RELEASED && b->state[i] == 3 && status == RLK_OK) {
        b->cycles[i]++;
    } else {
        b->failures[i]++;
        b->last_status[i] = status;
    }
    b->state[i] = 0;
    b->l[i] = NULL;
}

/* Starts the next step of the cycle on server i. */
static void busy_work(busy *b, int i, const char *name)
{
    rlk__locks *s = b->lk[i];
    if (b->state[i] == 0) {
        rlk_lock_options o;
        rlk_lock_options_init(&o);
        o.ttl_ms = 30000;
        b->l[i] = rlk__locks_acquire(s, name, &o, NULL, ts_now_ms());
        if (CHECK(b->l[i] != NULL)) b->state[i] = 1;
    } else if (b->state[i] == 2) {
        if (EQ(rlk_session_release(b->l[i], ts_now_ms()), RLK_OK)) b->state[i] = 3;
    }
}

static int busy_init(busy *b, size_t n, const rlk_conn_config *cc)
{
    memset(b, 0, sizeof *b);
    rlk_session_config sc;
    rlk_session_config_init(&sc);
    sc.cb = busy_event;
    sc.ctx = b;
    rlk__core_config kc = with_library();
    int r = rlk__route_init(&b->r, RLK__ROUTE_SET, n, cc, &kc);
    for (size_t i = 0; r == RLK_OK && i < n; i++)
        if (!(b->lk[i] = rlk__locks_new_on(rlk__route_core(&b->r, i), &sc, &b->own[i]))) r = RLK_ERR_NOMEM;
    return r;
}

static void busy_destroy(busy *b)
{
    for (size_t i = 0; i < 3; i++) {
        rlk__locks_free(b->lk[i]);
        b->lk[i] = NULL;
    }
    rlk__route_destroy(&b->r);
}

/* Servers 1 and 3 real, server 2 a listener that lets no connection in
 * (tls: one that completes TCP connects and never answers the
 * ClientHello, server 2's URL being rediss://; else one whose queue is
 * full, so the TCP connect itself never completes), all with a 2 s
 * connect timeout.  While server 2's connect is under way, every turn
 * of the route ends within TURN_MS, and acquire-release cycles go on
 * on servers 1 and 3; server 2's connect is then reported timed out,
 * not before its deadline. */
static void route_with_hole(int tls)
{
    char u[3][160];
    ts_server *a = own_server(u[0], sizeof u[0]), *c = own_server(u[2], sizeof u[2]);
    ts_hole hole = {-1, {0}, 0, 0};
    int silent = -1, port = 0;
    busy b;
    memset(&b, 0, sizeof b);
    if (tls) {
        silent = ts_silent_listener(&port);
        if (!CHECK(silent >= 0)) goto out;
    } else {
        if (!CHECK_MSG(ts_hole_open(&hole) == 0, "no listener with a full queue")) goto out;
        port = hole.port;
    }
    snprintf(u[1], sizeof u[1], "%s://127.0.0.1:%d", tls ? "rediss" : "redis", port);
    if (!a || !c) goto out;
    rlk_conn_config cc[3];
    for (int i = 0; i < 3; i++) {
        conn_cfg(&cc[i], u[i]);
        cc[i].connect_timeout_ms = HOLE_CONNECT_MS;
        if (tls) cc[i].tls.ca_file = ts_cert("ca.crt");
    }

    /* A cycle on servers 1 and 3 alone first, and OpenSSL set up: code
     * run for the first time is slow under valgrind (OpenSSL's one-time
     * set-up takes most of a second there), and that is not what is
     * measured. */
    rlk_conn_config good[2] = {cc[0], cc[2]};
    if (!EQ(busy_init(&b, 2, good), RLK_OK)) goto out;
    for (int64_t end = ts_now_ms() + LONG_MS; ts_now_ms() < end && !(b.cycles[0] && b.cycles[1]);) {
        busy_work(&b, 0, "hole:warm-a");
        busy_work(&b, 1, "hole:warm-c");
        rlk__route_step(&b.r, end);
    }
    if (tls) { /* up to the ClientHello, with server 2 itself */
        rlk__transport t;
        rlk__transport_init(&t);
        int rc = rlk__tls_connect_start(&t, "127.0.0.1", port, &cc[1].tls, -1);
        CHECK_EQ_INT(ts_steps_to_handshake(&t, rc), RLK__IN_PROGRESS);
        rlk__transport_close(&t);
    }
    if (!CHECK_MSG(b.cycles[0] && b.cycles[1], "no cycle on servers 1 and 3")) goto out;
    busy_destroy(&b);

    if (!EQ(busy_init(&b, 3, cc), RLK_OK)) goto out;
    int64_t t0 = ts_now_ms(), end = t0 + HOLE_CONNECT_MS + LONG_MS;
    int64_t longest = 0, failed_at = -1;
    int turns = 0;
    while (ts_now_ms() < end && failed_at < 0) {
        busy_work(&b, 0, "hole:a");
        busy_work(&b, 2, "hole:c");
        int64_t t1 = ts_now_ms();
        rlk__route_step(&b.r, end);
        int64_t took = ts_now_ms() - t1;
        if (took > longest) longest = took;
        turns++;
        if (b.r.drivers[1]->fails > 0) failed_at = ts_now_ms();
    }
    printf("    %s: %d turns, the longest %lld ms; cycles %d and %d\n", tls ? "TLS" : "TCP", turns,
           (long long)longest, b.cycles[0], b.cycles[2]);
    CHECK_MSG(longest <= TURN_MS, "a turn of the route took %lld ms", (long long)longest);
    if (CHECK_MSG(failed_at >= 0, "server 2's connect never failed")) {
        CHECK_MSG(failed_at - t0 >= HOLE_CONNECT_MS, "server 2 failed after %lld ms",
                  (long long)(failed_at - t0));
        rlk__driver *h = b.r.drivers[1];
        CHECK_EQ_INT(h->last, RLK_ERR_TIMEOUT);
        char msg[96];
        if (tls)
            snprintf(msg, sizeof msg, "TLS: handshake with 127.0.0.1:%d timed out after ", port);
        else
            snprintf(msg, sizeof msg, "connect 127.0.0.1:%d: timed out after ", port);
        CHECK_MSG(ts_contains(h->err, msg), "err: %s", h->err);
    }
    /* The work on servers 1 and 3 went on meanwhile, and without fail. */
    for (int i = 0; i < 3; i += 2) {
        CHECK_MSG(b.cycles[i] >= 3, "server %d: %d cycles", i + 1, b.cycles[i]);
        CHECK_MSG(b.failures[i] == 0, "server %d: %d failures (last %d)", i + 1, b.failures[i],
                  b.last_status[i]);
        CHECK_EQ_INT(b.r.drivers[i]->fails, 0);
        CHECK_EQ_U64(b.r.drivers[i]->connects, 1);
    }
    CHECK_EQ_U64(b.r.drivers[1]->connects, 0);
out:
    busy_destroy(&b);
    ts_hole_close(&hole);
    if (silent >= 0) close(silent);
    ts_stop(a);
    ts_stop(c);
}

static void test_route_hole(void) { route_with_hole(0); }

#ifdef RLK_HAVE_OPENSSL
static void test_route_tls_silent(void) { route_with_hole(1); }
#endif

static void test_bad_url(void)
{
    dt t;
    CHECK_EQ_INT(dt_new(&t, "redis://127.0.0.1:99999"), RLK_ERR_URL);
    CHECK(t.d.err[0] != '\0');
    CHECK_EQ_INT(rlk__driver_step(&t.d, ts_now_ms() + 100), RLK_ERR_URL);
    dt_destroy(&t);
}

int main(int argc, char **argv)
{
    tl_init(argc, argv);
    srv = ts_start(NULL);
    if (!srv) {
        CHECK_MSG(0, "redis-server did not start");
        return tl_finish();
    }
    url_of(url, sizeof url, srv);
    adm = CONNECT(url);
    tl_run("TCP: acquire and release", test_tcp);
    tl_run("a Unix socket", test_unix);
    tl_run("TLS, and a server not trusted", test_tls);
#ifdef RLK_HAVE_OPENSSL
    tl_run("TLS: the client's certificate refused", test_tls_client_cert_refused);
#endif
    tl_run("a killed connection: renewals go on", test_killed_connection);
    tl_run("a restart loses the lock: reported in time", test_restart_loses_lock);
    tl_run("a server gone: paced tries, served on return", test_backoff);
    tl_run("a frozen server: lost in time, turns bounded", test_frozen);
    tl_run("a wrong password is not tried again", test_wrong_password);
    tl_run("a handshake refused for now is tried again", test_refused_for_now);
    tl_run("reconnecting off", test_reconnect_off);
    tl_run("a reconnect to a server with no room", test_reconnect_no_room);
    tl_run("a bad URL", test_bad_url);
    tl_run("a route over two servers, one frozen", test_route_set);
    tl_run("a route over three servers, one whose queue is full", test_route_hole);
#ifdef RLK_HAVE_OPENSSL
    tl_run("a route over three servers, one silent in TLS", test_route_tls_silent);
#endif
    rlk_conn_free(adm);
    ts_stop(srv);
    return tl_finish();
}
