/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sans-I/O session (rlk_session_*): against real redis-server
 * processes, driven by a small poll loop of the test's own (the session
 * does no I/O), and against bytes and times the test makes up, which a
 * real server cannot produce on purpose (a reply that comes after the
 * validity it gives is over, garbage, silence).
 */
#include "config.h"

#define TESTLIB_MAIN
#include "testlib.h"
#include "server.h"
#include "conntest.h"
#include "locktest.h"
#include "internal.h"
#include "lua.h"
#include "resplock.h"
#include "session_internal.h"
#include "sha1.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* srv: locktest.h's */
static char url[128];
static rlk_conn *adm;

/* ------------------------------------------------------------------ */
/* Events                                                               */

#define MAXEV 64
typedef struct ev {
    rlk_session_event ev;
    rlk_session_lock *l;
    int status;
    int64_t remaining;   /* rlk_session_lock_remaining_ms at the event */
    uint64_t fence;
    char token[256];
} ev;

typedef struct drv {
    rlk_session *s;
    int fd;
    ev evs[MAXEV];
    int nev;
    int64_t now;         /* the time the session was given last */
    int manual;          /* the test's own clock (no socket) */
} drv;

static void on_event(void *ctx, rlk_session *s, rlk_session_event e, rlk_session_lock *l,
                     int status)
{
    drv *d = ctx;
    (void)s;
    if (d->nev >= MAXEV) return;
    ev *x = &d->evs[d->nev++];
    x->ev = e;
    x->l = l;
    x->status = status;
    x->remaining = l ? rlk_session_lock_remaining_ms(l, d->now) : 0;
    x->fence = l ? rlk_session_lock_fence(l) : 0;
    snprintf(x->token, sizeof x->token, "%s", l ? rlk_session_lock_token(l) : "");
}

static int count(const drv *d, rlk_session_event e)
{
    int n = 0;
    for (int i = 0; i < d->nev; i++) n += d->evs[i].ev == e;
    return n;
}

static const ev *find(const drv *d, rlk_session_event e, const rlk_session_lock *l)
{
    for (int i = 0; i < d->nev; i++)
        if (d->evs[i].ev == e && (!l || d->evs[i].l == l)) return &d->evs[i];
    return NULL;
}

/* A session as user (password "pw"; NULL: the default user), speaking
 * protocol, re-checking every recheck_ms. */
static void drv_init_as(drv *d, int protocol, int64_t recheck_ms, const char *user)
{
    memset(d, 0, sizeof *d);
    d->fd = -1;
    static rlk_client_config timing;
    rlk_client_config_init(&timing);
    timing.recheck_ms = recheck_ms;
    rlk_session_config cfg;
    rlk_session_config_init(&cfg);
    cfg.protocol = protocol;
    cfg.username = user;
    cfg.password = user ? "pw" : NULL;
    cfg.command_timeout_ms = 2000;
    cfg.timing = &timing;
    cfg.cb = on_event;
    cfg.ctx = d;
    d->s = rlk_session_new(&cfg);
    CHECK(d->s != NULL);
}

static void drv_init(drv *d, int protocol, int64_t recheck_ms)
{
    drv_init_as(d, protocol, recheck_ms, NULL);
}

/* A blocking connect is fine here: the test is the event loop's owner;
 * the session never sees the socket. */
static void drv_connect(drv *d, const ts_server *to)
{
    struct sockaddr_storage ss;
    socklen_t len = ts_loopback(0, &ss);
    ((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)to->port);
    d->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(d->fd >= 0);
    CHECK(connect(d->fd, (struct sockaddr *)&ss, len) == 0);
    d->now = ts_now_ms();
    CHECK_EQ_INT(rlk_session_connected(d->s, d->now), RLK_OK);
}

static void drv_close(drv *d)
{
    if (d->fd >= 0) close(d->fd);
    d->fd = -1;
    rlk_session_closed(d->s, ts_now_ms());
}

/* One turn of the loop: send what is pending, wait for input or the
 * session's deadline (at most max_ms), feed, tick.  The session's
 * failures close the connection, as an application would. */
static void turn(drv *d, int max_ms)
{
    const char *out;
    size_t n;
    while (d->fd >= 0 && (n = rlk_session_output(d->s, &out)) > 0) {
        ssize_t w = send(d->fd, out, n, MSG_NOSIGNAL);
        if (w <= 0) {
            drv_close(d);
            return;
        }
        rlk_session_consume(d->s, (size_t)w);
    }
    int64_t now = ts_now_ms(), dl = rlk_session_deadline(d->s);
    int wait = max_ms;
    if (dl >= 0 && dl - now < wait) wait = dl - now > 0 ? (int)(dl - now) : 0;
    struct pollfd p = {d->fd, POLLIN, 0};
    int r = d->fd >= 0 ? poll(&p, 1, wait) : (ts_pause_ms(wait), 0);
    d->now = ts_now_ms();
    if (r > 0) {
        char buf[16384];
        ssize_t got = read(d->fd, buf, sizeof buf);
        if (got <= 0 || rlk_session_feed(d->s, buf, (size_t)got, d->now) != RLK_OK) {
            drv_close(d);
            return;
        }
    }
    if (rlk_session_tick(d->s, d->now) != RLK_OK) drv_close(d);
}

/* Turns the loops of the drivers until cond holds or ms pass. */
#define RUN_UNTIL(cond, ms, ...)                                                    \
    do {                                                                            \
        drv *ds_[] = {__VA_ARGS__};                                                 \
        int64_t end_ = ts_now_ms() + (ms);                                          \
        while (!(cond) && ts_now_ms() < end_)                                       \
            for (size_t i_ = 0; i_ < sizeof ds_ / sizeof ds_[0]; i_++) turn(ds_[i_], 5); \
    } while (0)

static void drv_free(drv *d)
{
    if (d->fd >= 0) close(d->fd);
    rlk_session_free(d->s);
}

static rlk_session_lock *acq(drv *d, const char *name, int64_t ttl, int64_t wait, int watchdog)
{
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = ttl;
    o.wait_ms = wait;
    o.watchdog = watchdog;
    d->now = ts_now_ms();
    return rlk_session_acquire(d->s, name, &o, d, d->now);
}

static uint64_t server_us(void)
{
    rlk_resp_value *v = CMD(adm, "TIME");
    const rlk_resp_value *a = rlk_resp_value_at(v, 0), *b = rlk_resp_value_at(v, 1);
    if (!a || !b) return 0;
    return strtoull(a->str, NULL, 10) * 1000000u + strtoull(b->str, NULL, 10);
}

/* ------------------------------------------------------------------ */
/* Against a real server                                                */

static void test_acquire_release(void)
{
    drv d;
    drv_init(&d, 0, 0);
    drv_connect(&d, srv);
    uint64_t before = server_us();
    rlk_session_lock *l = acq(&d, "sess:a", 5000, 0, 0);
    CHECK(l != NULL);
    RUN_UNTIL(count(&d, RLK_SEV_ACQUIRED) + count(&d, RLK_SEV_NOT_ACQUIRED) > 0, 5000, &d);
    CHECK_EQ_INT(count(&d, RLK_SEV_READY), 1);
    const ev *a = find(&d, RLK_SEV_ACQUIRED, l);
    CHECK(a != NULL);
    if (!a) goto out;
    char v[256];
    CHECK_EQ_INT(CMD_STR(adm, v, "GET", "sess:a"), 1);
    CHECK_EQ_STR(v, a->token);
    /* The fence is the server's clock just after the SET. */
    uint64_t after = server_us();
    CHECK_MSG(a->fence >= before && a->fence <= after, "fence %llu not in [%llu, %llu]",
              (unsigned long long)a->fence, (unsigned long long)before, (unsigned long long)after);
    CHECK(a->remaining > 4000 && a->remaining <= 5000);
    CHECK_EQ_INT(rlk_session_release(l, ts_now_ms()), RLK_OK);
    RUN_UNTIL(count(&d, RLK_SEV_RELEASED) > 0, 5000, &d);
    const ev *r = find(&d, RLK_SEV_RELEASED, l);
    CHECK(r && r->status == RLK_OK);
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "sess:a"), 0);
out:
    drv_free(&d);
}

static void test_busy(void)
{
    drv d;
    drv_init(&d, 0, 0);
    drv_connect(&d, srv);
    CMD(adm, "SET", "sess:b", "someone", "PX", "60000");
    rlk_session_lock *l = acq(&d, "sess:b", 5000, 0, 0);
    RUN_UNTIL(count(&d, RLK_SEV_NOT_ACQUIRED) + count(&d, RLK_SEV_ACQUIRED) > 0, 5000, &d);
    const ev *e = find(&d, RLK_SEV_NOT_ACQUIRED, l);
    CHECK(e && e->status == RLK_LOCK_BUSY);
    /* With a wait that runs out: busy at its end, and out of the line. */
    int64_t t0 = ts_now_ms();
    l = acq(&d, "sess:b", 5000, 300, 0);
    RUN_UNTIL(count(&d, RLK_SEV_NOT_ACQUIRED) > 1, 5000, &d);
    e = find(&d, RLK_SEV_NOT_ACQUIRED, l);
    CHECK(e && e->status == RLK_LOCK_BUSY);
    CHECK(ts_now_ms() - t0 >= 300);
    CHECK_EQ_INT(CMD_INT(adm, "LLEN", "{sess:b}:queue"), 0);
    CMD(adm, "DEL", "sess:b");
    drv_free(&d);
}

/* A waiter in line gets the lock handed over by the holder's release,
 * at once (not at its next look: recheck 10 s), with a later fence. */
static void test_handoff(void)
{
    drv h, w;
    drv_init(&h, 0, 0);
    drv_init(&w, 0, 10000);
    drv_connect(&h, srv);
    drv_connect(&w, srv);
    rlk_session_lock *hl = acq(&h, "sess:h", 20000, 0, 0);
    RUN_UNTIL(count(&h, RLK_SEV_ACQUIRED) > 0, 5000, &h);
    CHECK(find(&h, RLK_SEV_ACQUIRED, hl) != NULL);
    rlk_session_lock *wl = acq(&w, "sess:h", 20000, 15000, 0);
    RUN_UNTIL(CMD_INT(adm, "LLEN", "{sess:h}:queue") == 1, 5000, &h, &w);
    CHECK_EQ_INT(CMD_INT(adm, "LLEN", "{sess:h}:queue"), 1);
    int64_t t0 = ts_now_ms();
    rlk_session_release(hl, t0);
    RUN_UNTIL(count(&w, RLK_SEV_ACQUIRED) > 0, 8000, &h, &w);
    const ev *e = find(&w, RLK_SEV_ACQUIRED, wl);
    CHECK(e != NULL);
    CHECK_MSG(ts_now_ms() - t0 < 5000, "handed over after %lld ms", (long long)(ts_now_ms() - t0));
    if (e) {
        CHECK(e->fence > find(&h, RLK_SEV_ACQUIRED, hl)->fence);
        char v[256];
        CMD_STR(adm, v, "GET", "sess:h");
        CHECK_EQ_STR(v, e->token);
        /* Held at the message (RESP3, no watchdog) for the claim only:
         * the re-check period (a third of the TTL here) and a second,
         * from the waiter's last look. */
        CHECK_MSG(e->remaining > 0 && e->remaining <= 7666, "remaining %lld",
                  (long long)e->remaining);
        /* Then confirmed in the background: the full TTL. */
        RUN_UNTIL(rlk_session_lock_remaining_ms(wl, ts_now_ms()) > 15000, 5000, &w);
        CHECK(rlk_session_lock_remaining_ms(wl, ts_now_ms()) > 15000);
        CHECK(CMD_INT(adm, "PTTL", "sess:h") > 15000);
        rlk_session_release(wl, ts_now_ms());
        RUN_UNTIL(count(&w, RLK_SEV_RELEASED) > 0, 5000, &w);
    }
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "sess:h"), 0);
    drv_free(&h);
    drv_free(&w);
}

/* RESP2: no push, so the waiter polls (recheck 100 ms) and takes the
 * lock after the holder frees it. */
static void test_resp2_wait(void)
{
    drv w;
    drv_init(&w, 2, 100);
    drv_connect(&w, srv);
    CMD(adm, "SET", "sess:r2", "someone", "PX", "60000");
    rlk_session_lock *wl = acq(&w, "sess:r2", 5000, 10000, 0);
    RUN_UNTIL(0, 300, &w);
    CHECK_EQ_INT(count(&w, RLK_SEV_ACQUIRED), 0);
    CMD(adm, "DEL", "sess:r2");
    RUN_UNTIL(count(&w, RLK_SEV_ACQUIRED) > 0, 5000, &w);
    CHECK(find(&w, RLK_SEV_ACQUIRED, wl) != NULL);
    rlk_session_release(wl, ts_now_ms());
    RUN_UNTIL(count(&w, RLK_SEV_RELEASED) > 0, 5000, &w);
    CHECK(find(&w, RLK_SEV_RELEASED, wl) && find(&w, RLK_SEV_RELEASED, wl)->status == RLK_OK);
    drv_free(&w);
}

/* The watchdog keeps a 300 ms lock for 1.5 s; the scripts, flushed
 * meanwhile, come back by EVAL. */
static void test_watchdog_and_noscript(void)
{
    drv d;
    drv_init(&d, 0, 0);
    drv_connect(&d, srv);
    rlk_session_lock *l = acq(&d, "sess:w", 300, 0, 1);
    RUN_UNTIL(count(&d, RLK_SEV_ACQUIRED) > 0, 5000, &d);
    CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL);
    CMD(adm, "SCRIPT", "FLUSH");
    RUN_UNTIL(0, 1500, &d);
    CHECK_EQ_INT(count(&d, RLK_SEV_LOST), 0);
    char v[256];
    CHECK_EQ_INT(CMD_STR(adm, v, "GET", "sess:w"), 1);
    CHECK_EQ_STR(v, rlk_session_lock_token(l));
    CHECK(rlk_session_lock_remaining_ms(l, ts_now_ms()) > 0);
    CMD(adm, "SCRIPT", "FLUSH");
    rlk_session_release(l, ts_now_ms());
    RUN_UNTIL(count(&d, RLK_SEV_RELEASED) > 0, 5000, &d);
    CHECK(find(&d, RLK_SEV_RELEASED, l) && find(&d, RLK_SEV_RELEASED, l)->status == RLK_OK);
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "sess:w"), 0);
    drv_free(&d);
}

/* A frozen server: the lock is reported lost before its validity ends,
 * and the loop around the session never waits for the server. */
static void test_frozen_server(void)
{
    ts_server *f = ts_start(NULL);
    CHECK(f != NULL);
    if (!f) return;
    drv d;
    drv_init(&d, 0, 0);
    drv_connect(&d, f);
    rlk_session_lock *l = acq(&d, "sess:f", 600, 0, 1);
    RUN_UNTIL(count(&d, RLK_SEV_ACQUIRED) > 0, 5000, &d);
    CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL);
    kill(f->pid, SIGSTOP);
    int64_t t0 = ts_now_ms(), longest = 0, valid_until = 0;
    while (!count(&d, RLK_SEV_LOST) && ts_now_ms() - t0 < 5000) {
        int64_t a = ts_now_ms(), left = rlk_session_lock_remaining_ms(l, a);
        if (left > 0) valid_until = a + left;
        turn(&d, 5);
        if (ts_now_ms() - a > longest) longest = ts_now_ms() - a;
    }
    const ev *e = find(&d, RLK_SEV_LOST, l);
    CHECK(e != NULL);
    /* Reported while still valid (the lost margin), not after. */
    if (e) CHECK_MSG(d.now < valid_until, "lost reported at %lld, valid until %lld",
                     (long long)d.now, (long long)valid_until);
    CHECK_MSG(longest < 200, "a turn of the loop took %lld ms", (long long)longest);
    kill(f->pid, SIGCONT);
    drv_free(&d);
    ts_stop(f);
}

/* Extend: a set TTL and an added time reach the server and the lock's
 * validity; the script comes back by EVAL after a flush; a lock expired
 * is not held, a lock taken by someone else is not ours (both lost). */
static void test_extend(void)
{
    drv d;
    drv_init(&d, 0, 0);
    drv_connect(&d, srv);
    rlk_session_lock *l = acq(&d, "sess:x", 1000, 0, 0);
    RUN_UNTIL(count(&d, RLK_SEV_ACQUIRED) + count(&d, RLK_SEV_NOT_ACQUIRED) > 0, 5000, &d);
    CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL);
    CHECK(rlk_session_lock_remaining_ms(l, ts_now_ms()) <= 1000);
    CMD(adm, "SCRIPT", "FLUSH");
    int64_t t0 = ts_now_ms();
    CHECK_EQ_INT(rlk_session_extend(l, 20000, RLK_EXTEND_SET, t0), RLK_OK);
    /* One at a time. */
    CHECK_EQ_INT(rlk_session_extend(l, 20000, RLK_EXTEND_SET, t0), RLK_ERR_INVALID);
    CHECK_EQ_INT(count(&d, RLK_SEV_EXTENDED), 0);
    RUN_UNTIL(count(&d, RLK_SEV_EXTENDED) > 0, 5000, &d);
    const ev *e = find(&d, RLK_SEV_EXTENDED, l);
    CHECK(e && e->status == RLK_OK);
    CHECK(CMD_INT(adm, "PTTL", "sess:x") > 15000);
    /* Valid for the new TTL from the call, less the drift. */
    int64_t left = rlk_session_lock_remaining_ms(l, t0);
    CHECK_MSG(left > 19000 && left <= 20000, "remaining %lld ms after extending to 20 s",
              (long long)left);
    t0 = ts_now_ms();
    CHECK_EQ_INT(rlk_session_extend(l, 10000, RLK_EXTEND_ADD, t0), RLK_OK);
    RUN_UNTIL(count(&d, RLK_SEV_EXTENDED) > 1, 5000, &d);
    CHECK(d.evs[d.nev - 1].ev == RLK_SEV_EXTENDED && d.evs[d.nev - 1].status == RLK_OK);
    CHECK(CMD_INT(adm, "PTTL", "sess:x") > 25000);
    CHECK(rlk_session_lock_remaining_ms(l, t0) > 25000);
    CHECK_EQ_INT(rlk_session_extend(l, 0, RLK_EXTEND_ADD, t0), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk_session_extend(l, 10, 7, t0), RLK_ERR_INVALID);
    /* Someone else's now. */
    CMD(adm, "SET", "sess:x", "someone", "PX", "60000");
    CHECK_EQ_INT(rlk_session_extend(l, 1000, RLK_EXTEND_SET, ts_now_ms()), RLK_OK);
    RUN_UNTIL(count(&d, RLK_SEV_EXTENDED) > 2, 5000, &d);
    CHECK(d.evs[d.nev - 1].ev == RLK_SEV_LOST);
    CHECK(d.nev >= 2 && d.evs[d.nev - 2].ev == RLK_SEV_EXTENDED &&
          d.evs[d.nev - 2].status == RLK_LOCK_NOT_OWNER);
    CHECK_EQ_INT(rlk_session_lock_remaining_ms(l, ts_now_ms()), 0);
    CHECK_EQ_INT(rlk_session_extend(l, 1000, RLK_EXTEND_SET, ts_now_ms()), RLK_LOCK_LOST);
    char v[256];
    CHECK_EQ_INT(CMD_STR(adm, v, "GET", "sess:x"), 1);
    CHECK_EQ_STR(v, "someone");
    rlk_session_release(l, ts_now_ms());
    RUN_UNTIL(count(&d, RLK_SEV_RELEASED) > 0, 5000, &d);
    CMD(adm, "DEL", "sess:x");
    /* Expired: not held. */
    int n = d.nev;
    l = acq(&d, "sess:x2", 200, 0, 0);
    RUN_UNTIL(d.nev > n, 5000, &d);
    CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL);
    RUN_UNTIL(CMD_INT(adm, "EXISTS", "sess:x2") == 0, 5000, &d);
    CHECK_EQ_INT(rlk_session_extend(l, 1000, RLK_EXTEND_ADD, ts_now_ms()), RLK_OK);
    RUN_UNTIL(count(&d, RLK_SEV_EXTENDED) > 3, 5000, &d);
    CHECK(d.evs[d.nev - 2].ev == RLK_SEV_EXTENDED && d.evs[d.nev - 2].l == l &&
          d.evs[d.nev - 2].status == RLK_LOCK_NOT_HELD);
    CHECK(d.evs[d.nev - 1].ev == RLK_SEV_LOST && d.evs[d.nev - 1].l == l);
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "sess:x2"), 0);
    drv_free(&d);
}

/* A reentrant lock's holds by one holder (-1: none). */
static long hget(const char *key, const char *field)
{
    char v[32];
    return CMD_STR(adm, v, "HGET", key, field) == 1 ? strtol(v, NULL, 10) : -1;
}

static rlk_session_lock *acq_r(drv *d, const char *name, const char *holder, int64_t ttl,
                                int64_t wait)
{
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = ttl;
    o.wait_ms = wait;
    o.kind = RLK_LOCK_REENTRANT;
    o.holder = holder;
    d->now = ts_now_ms();
    return rlk_session_acquire(d->s, name, &o, d, d->now);
}

/* The next result (ACQUIRED or NOT_ACQUIRED) of l, after event n. */
static const ev *result_of(drv *d, int n, const rlk_session_lock *l)
{
    for (int64_t end = ts_now_ms() + 5000; ts_now_ms() < end; turn(d, 5))
        for (int i = n; i < d->nev; i++)
            if (d->evs[i].l == l &&
                (d->evs[i].ev == RLK_SEV_ACQUIRED || d->evs[i].ev == RLK_SEV_NOT_ACQUIRED ||
                 d->evs[i].ev == RLK_SEV_RELEASED))
                return &d->evs[i];
    return NULL;
}

/* Reentrant: a holder's second hold is counted on the server (the hash
 * field's count, one field) and keeps the first hold's fence; the key's
 * expiry is not shortened; each release takes one hold away; another
 * holder is busy meanwhile, and gets the lock handed over after the
 * last release. */
static void test_reentrant(void)
{
    drv d, o;
    drv_init(&d, 0, 0);
    drv_init(&o, 0, 10000);
    drv_connect(&d, srv);
    drv_connect(&o, srv);
    CMD(adm, "DEL", "sess:re");
    rlk_session_lock *a = acq_r(&d, "sess:re", "app:1", 20000, 0);
    const ev *ea = result_of(&d, 0, a);
    CHECK(ea && ea->ev == RLK_SEV_ACQUIRED);
    if (!ea || ea->ev != RLK_SEV_ACQUIRED) goto out;
    CHECK_EQ_STR(rlk_session_lock_token(a), "app:1");
    CHECK_EQ_INT(rlk_session_lock_holds(a), 1);
    CHECK_EQ_INT(hget("sess:re", "app:1"), 1);
    CMD(adm, "PEXPIRE", "sess:re", "30000");
    int n = d.nev;
    rlk_session_lock *b = acq_r(&d, "sess:re", "app:1", 5000, 0);
    const ev *eb = result_of(&d, n, b);
    CHECK(eb && eb->ev == RLK_SEV_ACQUIRED);
    if (!eb || eb->ev != RLK_SEV_ACQUIRED) goto out;
    CHECK_EQ_U64(eb->fence, ea->fence);
    CHECK_EQ_INT(rlk_session_lock_holds(b), 2);
    CHECK_EQ_INT(hget("sess:re", "app:1"), 2);
    /* One holder's field, and its facts (rlk:holder). */
    CHECK_EQ_INT(CMD_INT(adm, "HLEN", "sess:re"), 2);
    CHECK_EQ_INT(CMD_INT(adm, "HEXISTS", "sess:re", "rlk:holder"), 1);
    CHECK_MSG(CMD_INT(adm, "PTTL", "sess:re") > 25000, "the second hold shortened the expiry");
    /* Another holder: busy at once, and in line with a wait. */
    n = o.nev;
    rlk_session_lock *x = acq_r(&o, "sess:re", "app:2", 5000, 0);
    const ev *ex = result_of(&o, n, x);
    CHECK(ex && ex->ev == RLK_SEV_NOT_ACQUIRED && ex->status == RLK_LOCK_BUSY);
    /* The same session, no holder named: a holder of its own, busy too. */
    n = d.nev;
    rlk_session_lock *y = acq_r(&d, "sess:re", NULL, 5000, 0);
    const ev *ey = result_of(&d, n, y);
    CHECK(ey && ey->ev == RLK_SEV_NOT_ACQUIRED && ey->status == RLK_LOCK_BUSY);
    n = o.nev;
    rlk_session_lock *w = acq_r(&o, "sess:re", "app:2", 5000, 15000);
    RUN_UNTIL(CMD_INT(adm, "LLEN", "{sess:re}:queue") == 1, 5000, &d, &o);
    CHECK_EQ_INT(CMD_INT(adm, "LLEN", "{sess:re}:queue"), 1);
    n = d.nev;
    rlk_session_release(a, ts_now_ms());
    RUN_UNTIL(count(&d, RLK_SEV_RELEASED) > 0, 5000, &d, &o);
    CHECK(find(&d, RLK_SEV_RELEASED, a) && find(&d, RLK_SEV_RELEASED, a)->status == RLK_OK);
    CHECK_EQ_INT(hget("sess:re", "app:1"), 1);
    /* Its tombstone holds its result. */
    CHECK_EQ_INT(CMD_INT(adm, "EVAL", "return #redis.call('keys', '{sess:re}:released:*')", "0"), 1);
    CHECK_EQ_INT(count(&o, RLK_SEV_ACQUIRED), 0);
    rlk_session_release(b, ts_now_ms());
    RUN_UNTIL(count(&d, RLK_SEV_RELEASED) > 1 && count(&o, RLK_SEV_ACQUIRED) > 0, 5000, &d, &o);
    CHECK(find(&d, RLK_SEV_RELEASED, b) && find(&d, RLK_SEV_RELEASED, b)->status == RLK_OK);
    const ev *ew = find(&o, RLK_SEV_ACQUIRED, w);
    CHECK(ew != NULL);
    if (ew) {
        CHECK(ew->fence > ea->fence);
        CHECK_EQ_INT(hget("sess:re", "app:2"), 1);
        /* Handed over, then confirmed: one holder's field, and the
         * facts its confirmation wrote (the handoff has none). */
        RUN_UNTIL(CMD_INT(adm, "HLEN", "sess:re") == 2, 5000, &d, &o);
        CHECK_EQ_INT(CMD_INT(adm, "HLEN", "sess:re"), 2);
        CHECK_EQ_INT(CMD_INT(adm, "HEXISTS", "sess:re", "rlk:holder"), 1);
        /* Confirmed in the background (the handoff was reported held
         * for the claim): the full TTL. */
        RUN_UNTIL(rlk_session_lock_remaining_ms(w, ts_now_ms()) > 4000, 5000, &o);
        CHECK(CMD_INT(adm, "PTTL", "sess:re") > 4000);
        rlk_session_release(w, ts_now_ms());
        RUN_UNTIL(count(&o, RLK_SEV_RELEASED) > 0, 5000, &o);
    }
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "sess:re"), 0);
out:
    drv_free(&d);
    drv_free(&o);
}

/* Sessions and blocking clients share locks, both ways: the blocking
 * client's reentrant lock keeps a session out, unless the session names
 * the same holder (the client's rlk_lock_token, "ID:UUID:THREAD", whose
 * hold it then counts); a
 * session's locks are what rlk_lock_get_status reads and what the
 * blocking client is kept out of. */
static void test_interop(void)
{
    rlk_client_config cc;
    rlk_client_config_init(&cc);
    cc.conn.url = url;
    cc.client_id = "blk";
    rlk_client *cl = rlk_client_new(&cc);
    CHECK(cl != NULL);
    if (!cl) return;
    drv d;
    drv_init(&d, 0, 0);
    drv_connect(&d, srv);
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.kind = RLK_LOCK_REENTRANT;
    o.ttl_ms = 20000;
    rlk_lock *bl = NULL;
    CHECK_EQ_INT(rlk_lock_acquire(cl, "sess:io", &o, &bl), RLK_OK);
    if (!bl) goto out;
    int n = d.nev;
    rlk_session_lock *x = acq_r(&d, "sess:io", "app:9", 5000, 0);
    const ev *e = result_of(&d, n, x);
    CHECK(e && e->ev == RLK_SEV_NOT_ACQUIRED && e->status == RLK_LOCK_BUSY);
    n = d.nev;
    x = acq(&d, "sess:io", 5000, 0, 0);
    e = result_of(&d, n, x);
    CHECK(e && e->ev == RLK_SEV_NOT_ACQUIRED && e->status == RLK_LOCK_BUSY);
    char holder[128], tid[32];
    snprintf(holder, sizeof holder, "%s", rlk_lock_token(bl));
    snprintf(tid, sizeof tid, ":%ld", (long)syscall(SYS_gettid));
    CHECK_MSG(strncmp(holder, "blk:", 4) == 0 && strlen(holder) > strlen(tid) &&
                  strcmp(holder + strlen(holder) - strlen(tid), tid) == 0,
              "holder \"%s\"", holder);
    n = d.nev;
    x = acq_r(&d, "sess:io", holder, 5000, 0);
    e = result_of(&d, n, x);
    CHECK(e && e->ev == RLK_SEV_ACQUIRED);
    CHECK_EQ_INT(hget("sess:io", holder), 2);
    CHECK_EQ_INT(rlk_session_lock_holds(x), 2);
    n = d.nev;
    rlk_session_release(x, ts_now_ms());
    e = result_of(&d, n, x);
    CHECK(e && e->ev == RLK_SEV_RELEASED && e->status == RLK_OK);
    CHECK_EQ_INT(hget("sess:io", holder), 1);
    CHECK_EQ_INT(rlk_lock_release(bl), RLK_OK);
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "sess:io"), 0);
    /* The other way. */
    n = d.nev;
    rlk_session_lock *sl = acq(&d, "sess:io2", 20000, 0, 0);
    e = result_of(&d, n, sl);
    CHECK(e && e->ev == RLK_SEV_ACQUIRED);
    rlk_lock_status st;
    CHECK_EQ_INT(rlk_lock_get_status(cl, "sess:io2", &st), RLK_OK);
    CHECK(st.held && st.kind == RLK_LOCK_SIMPLE && st.ttl_ms > 15000);
    rlk_lock_options_init(&o);
    CHECK_EQ_INT(rlk_lock_acquire(cl, "sess:io2", &o, &bl), RLK_LOCK_BUSY);
    n = d.nev;
    rlk_session_lock *r1 = acq_r(&d, "sess:io3", "app:3", 20000, 0);
    rlk_session_lock *r2 = acq_r(&d, "sess:io3", "app:3", 20000, 0);
    RUN_UNTIL(count(&d, RLK_SEV_ACQUIRED) >= 3, 5000, &d);
    CHECK(find(&d, RLK_SEV_ACQUIRED, r1) && find(&d, RLK_SEV_ACQUIRED, r2));
    CHECK_EQ_INT(rlk_lock_get_status(cl, "sess:io3", &st), RLK_OK);
    CHECK(st.held && st.kind == RLK_LOCK_REENTRANT && st.holds == 2);
    o.kind = RLK_LOCK_REENTRANT;
    CHECK_EQ_INT(rlk_lock_acquire(cl, "sess:io3", &o, &bl), RLK_LOCK_BUSY);
    /* Released by its token from the blocking client: the session's
     * extend then finds it not held. */
    CHECK_EQ_INT(rlk_release_token(cl, "sess:io2", rlk_session_lock_token(sl)), RLK_OK);
    n = d.nev;
    CHECK_EQ_INT(rlk_session_extend(sl, 1000, RLK_EXTEND_ADD, ts_now_ms()), RLK_OK);
    RUN_UNTIL(count(&d, RLK_SEV_EXTENDED) > 0, 5000, &d);
    e = find(&d, RLK_SEV_EXTENDED, sl);
    CHECK(e && e->status == RLK_LOCK_NOT_HELD);
    CMD(adm, "DEL", "sess:io3");
out:
    drv_free(&d);
    rlk_client_free(cl);
}

/* The calls without a handle (session_internal.h). */
typedef struct callres {
    int n;
    rlk__session_result r;
} callres;

static void on_call(void *ctx, rlk_session *s, const rlk__session_result *res)
{
    callres *c = ctx;
    (void)s;
    c->n++;
    c->r = *res;
}

/* Status, release and extend by token, against the server, with the
 * statuses of their blocking counterparts; the scripts come back by EVAL
 * after a flush; closing ends a call under way; a call's reply has the
 * command timeout. */
static void test_calls(void)
{
    drv d;
    drv_init(&d, 0, 0);
    callres c = {0};
    CHECK_EQ_INT(rlk__session_status(d.s, "sess:c", on_call, &c, ts_now_ms()), RLK_ERR_CLOSED);
    drv_connect(&d, srv);
    RUN_UNTIL(rlk_session_ready(d.s), 5000, &d);
    CHECK_EQ_INT(rlk__session_status(d.s, "", on_call, &c, ts_now_ms()), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk__session_release_token(d.s, "sess:c", "", on_call, &c, ts_now_ms()),
                 RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk__session_extend_token(d.s, "sess:c", "t", 0, RLK_EXTEND_SET, on_call, &c,
                                           ts_now_ms()), RLK_ERR_INVALID);
    CHECK_EQ_INT(c.n, 0);
    CMD(adm, "DEL", "sess:c");
    CHECK_EQ_INT(rlk__session_status(d.s, "sess:c", on_call, &c, ts_now_ms()), RLK_OK);
    CHECK_EQ_INT(c.n, 0);
    RUN_UNTIL(c.n > 0, 5000, &d);
    CHECK(c.n == 1 && c.r.status == RLK_OK && !c.r.lock.held && c.r.lock.ttl_ms == 0);
    /* A reentrant lock with two holds and a waiter in line. */
    CMD(adm, "HSET", "sess:c", "h1", "2");
    CMD(adm, "PEXPIRE", "sess:c", "30000");
    CMD(adm, "EVAL",
        "local tm = redis.call('time'); redis.call('hset', KEYS[1], 'w1', string.format('%d 1 1 s x', tm[1] * 1000 + 60000)); return 1",
        "1", "{sess:c}:waiters");
    CMD(adm, "SCRIPT", "FLUSH");
    c.n = 0;
    CHECK_EQ_INT(rlk__session_status(d.s, "sess:c", on_call, &c, ts_now_ms()), RLK_OK);
    RUN_UNTIL(c.n > 0, 5000, &d);
    CHECK(c.n == 1 && c.r.status == RLK_OK && c.r.lock.held && c.r.lock.kind == RLK_LOCK_REENTRANT);
    CHECK_EQ_INT(c.r.lock.holds, 2);
    CHECK_EQ_INT(c.r.lock.waiters, 1);
    CHECK(c.r.lock.ttl_ms > 25000 && c.r.lock.ttl_ms <= 30000);
    CMD(adm, "DEL", "sess:c", "{sess:c}:waiters");
    /* By token: extend (set, then add), then not owner, release, not held. */
    CMD(adm, "SET", "sess:c", "tok", "PX", "1000");
    c.n = 0;
    CHECK_EQ_INT(rlk__session_extend_token(d.s, "sess:c", "tok", 20000, RLK_EXTEND_SET, on_call,
                                           &c, ts_now_ms()), RLK_OK);
    RUN_UNTIL(c.n > 0, 5000, &d);
    CHECK(c.n == 1 && c.r.status == RLK_OK && c.r.ttl_ms_after == 20000);
    CHECK(CMD_INT(adm, "PTTL", "sess:c") > 15000);
    c.n = 0;
    CHECK_EQ_INT(rlk__session_extend_token(d.s, "sess:c", "tok", 5000, RLK_EXTEND_ADD, on_call,
                                           &c, ts_now_ms()), RLK_OK);
    RUN_UNTIL(c.n > 0, 5000, &d);
    CHECK(c.r.status == RLK_OK && c.r.ttl_ms_after > 20000 && c.r.ttl_ms_after <= 25000);
    c.n = 0;
    CHECK_EQ_INT(rlk__session_extend_token(d.s, "sess:c", "other", 5000, RLK_EXTEND_ADD, on_call,
                                           &c, ts_now_ms()), RLK_OK);
    CHECK_EQ_INT(rlk__session_release_token(d.s, "sess:c", "other", on_call, &c, ts_now_ms()),
                 RLK_OK);
    RUN_UNTIL(c.n > 1, 5000, &d);
    CHECK(c.n == 2 && c.r.status == RLK_LOCK_NOT_OWNER);
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "sess:c"), 1);
    c.n = 0;
    CHECK_EQ_INT(rlk__session_release_token(d.s, "sess:c", "tok", on_call, &c, ts_now_ms()), RLK_OK);
    RUN_UNTIL(c.n > 0, 5000, &d);
    CHECK(c.r.status == RLK_OK);
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "sess:c"), 0);
    c.n = 0;
    CHECK_EQ_INT(rlk__session_release_token(d.s, "sess:c", "tok", on_call, &c, ts_now_ms()), RLK_OK);
    CHECK_EQ_INT(rlk__session_extend_token(d.s, "sess:c", "tok", 10, RLK_EXTEND_SET, on_call, &c,
                                           ts_now_ms()), RLK_OK);
    RUN_UNTIL(c.n > 1, 5000, &d);
    CHECK(c.n == 2 && c.r.status == RLK_LOCK_NOT_HELD);
    /* Closing ends a call under way; its reply has the command timeout
     * (2000 ms here). */
    c.n = 0;
    int64_t t0 = ts_now_ms();
    CHECK_EQ_INT(rlk__session_status(d.s, "sess:c", on_call, &c, t0), RLK_OK);
    CHECK_EQ_INT(rlk_session_deadline(d.s), t0 + 2000);
    drv_close(&d);
    CHECK(c.n == 1 && c.r.status == RLK_ERR_CLOSED);
    drv_free(&d);
}

/* ------------------------------------------------------------------ */
/* FUNCTIONs (Redis 7)                                                  */

/* The calls of cmd the server refused before running them (an ACL). */
static long long rejected(const char *cmd)
{
    char key[64];
    rlk_resp_value *v = CMD(adm, "INFO", "commandstats");
    if (!v || !v->str) return -1;
    char *text = malloc(v->len + 1);
    if (!text) return -1;
    memcpy(text, v->str, v->len);
    text[v->len] = '\0';
    snprintf(key, sizeof key, "cmdstat_%s:", cmd);
    long long n = 0;
    char *p = strstr(text, key), *end = p ? strchr(p, '\n') : NULL;
    if (end) *end = '\0';
    if (p && (p = strstr(p, "rejected_calls="))) n = strtoll(p + 15, NULL, 10);
    free(text);
    return n;
}

/* Whether the server has the library of the embedded scripts. */
static int has_library(void)
{
    rlk_resp_value *v = CMD(adm, "FUNCTION", "LIST", "LIBRARYNAME", rlk__lua_library.name);
    return v && v->type == RLK_RESP_ARRAY && v->len == 1;
}

/* A lock's life in one session, held with the watchdog: another's
 * acquire waits in line (the acquire script) and is handed the lock
 * (its confirmation: the extend script), an extend, renewals, a status
 * call, releases.  1 when every step did as it should. */
static int fcall_cycle(const char *user, const char *pass)
{
    drv d, w;
    drv_init(&d, 0, 0);
    drv_init(&w, 0, 0);
    if (user) {
        /* Both sessions as the user: their configs point at these. */
        rlk_session_free(d.s);
        rlk_session_free(w.s);
        rlk_session_config cfg;
        rlk_session_config_init(&cfg);
        cfg.username = user;
        cfg.password = pass;
        cfg.command_timeout_ms = 2000;
        cfg.cb = on_event;
        cfg.ctx = &d;
        d.s = rlk_session_new(&cfg);
        cfg.ctx = &w;
        w.s = rlk_session_new(&cfg);
    }
    int ok = 0;
    drv_connect(&d, srv);
    drv_connect(&w, srv);
    CMD(adm, "DEL", "sess:fn");
    rlk_session_lock *l = acq(&d, "sess:fn", 300, 0, 1);
    RUN_UNTIL(count(&d, RLK_SEV_ACQUIRED) > 0, 5000, &d);
    if (!CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL)) goto out;
    rlk_session_lock *m = acq(&w, "sess:fn", 5000, 10000, 0);
    RUN_UNTIL(CMD_INT(adm, "LLEN", "{sess:fn}:queue") == 1, 5000, &d, &w);
    CHECK_EQ_INT(rlk_session_extend(l, 400, RLK_EXTEND_SET, ts_now_ms()), RLK_OK);
    RUN_UNTIL(count(&d, RLK_SEV_EXTENDED) > 0, 5000, &d, &w);
    const ev *e = find(&d, RLK_SEV_EXTENDED, l);
    if (!CHECK(e && e->status == RLK_OK)) goto out;
    /* Renewed past its TTL. */
    RUN_UNTIL(0, 900, &d, &w);
    CHECK_EQ_INT(count(&d, RLK_SEV_LOST), 0);
    callres c = {0};
    CHECK_EQ_INT(rlk__session_status(d.s, "sess:fn", on_call, &c, ts_now_ms()), RLK_OK);
    RUN_UNTIL(c.n > 0, 5000, &d);
    CHECK(c.n == 1 && c.r.status == RLK_OK && c.r.lock.held && c.r.lock.waiters == 1);
    CHECK_EQ_INT(rlk_session_release(l, ts_now_ms()), RLK_OK);
    RUN_UNTIL(count(&w, RLK_SEV_ACQUIRED) > 0 && count(&d, RLK_SEV_RELEASED) > 0, 5000, &d, &w);
    e = find(&d, RLK_SEV_RELEASED, l);
    CHECK(e && e->status == RLK_OK);
    if (!CHECK(find(&w, RLK_SEV_ACQUIRED, m) != NULL)) goto out;
    CHECK_EQ_INT(rlk_session_release(m, ts_now_ms()), RLK_OK);
    RUN_UNTIL(count(&w, RLK_SEV_RELEASED) > 0, 5000, &w);
    e = find(&w, RLK_SEV_RELEASED, m);
    ok = CHECK(e && e->status == RLK_OK) &
         CHECK_MSG(CMD_INT(adm, "EXISTS", "sess:fn") == 0, "sess:fn is left");
out:
    drv_free(&d);
    drv_free(&w);
    return ok;
}

/* On Redis 7 every script call goes as FCALL of the library (no
 * EVALSHA): the acquire that waits, its handoff's confirmation, an
 * extend, renewals, a status call, releases.  After FUNCTION FLUSH the
 * first call finds no function: the library is loaded, the call sent
 * again (once, as EVAL), and the calls after it go as FCALL again. */
static void test_fcall(void)
{
    CMD(adm, "FUNCTION", "FLUSH");
    reset_stats(adm);
    if (fcall_cycle(NULL, NULL)) {
        /* Loaded by the first session that met no function (both, when
         * the holder's renewal went before the waiter's load). */
        CHECK(has_library());
        long long loads = stat_calls(adm, "function|load");
        CHECK_MSG(loads >= 1 && loads <= 2, "%lld FUNCTION LOAD", loads);
        CHECK(stat_calls(adm, "eval") >= 1);
    }
    reset_stats(adm);
    if (fcall_cycle(NULL, NULL)) {
        CHECK_EQ_INT(stat_calls(adm, "evalsha"), 0);
        CHECK_EQ_INT(stat_calls(adm, "eval"), 0);
        CHECK_EQ_INT(stat_calls(adm, "function|load"), 0);
        /* acquire, confirm, extend, status, 2 releases, renewals */
        CHECK_MSG(stat_calls(adm, "fcall") >= 7, "%lld FCALL", stat_calls(adm, "fcall"));
    }
    /* Flushed while a lock is held: its extend meets no function.  A
     * reentrant lock, whose extend is a script on every server (a
     * simple lock's goes by SET IFEQ where the server has it). */
    drv d;
    drv_init(&d, 0, 0);
    drv_connect(&d, srv);
    rlk_session_lock *l = acq_r(&d, "sess:fn2", NULL, 5000, 0);
    RUN_UNTIL(count(&d, RLK_SEV_ACQUIRED) > 0, 5000, &d);
    if (!CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL)) goto out;
    CMD(adm, "FUNCTION", "FLUSH");
    reset_stats(adm);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(rlk_session_extend(l, 8000, RLK_EXTEND_SET, ts_now_ms()), RLK_OK);
        RUN_UNTIL(count(&d, RLK_SEV_EXTENDED) > i, 5000, &d);
        const ev *e = &d.evs[d.nev - 1];
        CHECK(e->ev == RLK_SEV_EXTENDED && e->status == RLK_OK);
        CHECK(CMD_INT(adm, "PTTL", "sess:fn2") > 7000);
    }
    CHECK(has_library());
    CHECK_EQ_INT(stat_calls(adm, "function|load"), 1);
    CHECK_EQ_INT(stat_calls(adm, "eval"), 1);
    CHECK_EQ_INT(stat_calls(adm, "fcall"), 2);
    rlk_session_release(l, ts_now_ms());
    RUN_UNTIL(count(&d, RLK_SEV_RELEASED) > 0, 5000, &d);
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "sess:fn2"), 0);
out:
    drv_free(&d);
}

/* A user that may not call functions (-fcall), and one that may not
 * load them (-function): their sessions try FCALL once per connection
 * and go on with EVALSHA, and every step still works. */
static void test_fcall_refused(void)
{
    static const struct {
        const char *user, *rule1, *rule2;
    } users[] = {{"sess-nofcall", "-fcall", "-function"}, {"sess-noload", "-function", "+fcall"}};
    for (size_t i = 0; i < sizeof users / sizeof users[0]; i++) {
        CMD(adm, "ACL", "SETUSER", users[i].user, "reset", "on", ">fnpw", "~*", "&*", "+@all",
            users[i].rule1, users[i].rule2);
        CMD(adm, "FUNCTION", "FLUSH");
        CMD(adm, "SCRIPT", "FLUSH");
        reset_stats(adm);
        if (fcall_cycle(users[i].user, "fnpw")) {
            CHECK(!has_library());
            CHECK_MSG(stat_calls(adm, "evalsha") >= 5, "%lld EVALSHA", stat_calls(adm, "evalsha"));
            /* Once on each of the two connections, or twice where a
             * renewal went before the first answer came. */
            if (i == 0) {
                /* Refused before it ran. */
                long long n = rejected("fcall");
                CHECK_MSG(n >= 2 && n <= 4, "%lld FCALL refused", n);
                CHECK_EQ_INT(stat_calls(adm, "fcall"), 0);
            } else {
                /* Not found, its load refused (one load at a time). */
                long long n = stat_calls(adm, "fcall");
                CHECK_MSG(n >= 2 && n <= 4, "%lld FCALL", n);
                CHECK_EQ_INT(rejected("function|load"), 2);
            }
        }
        CMD(adm, "ACL", "DELUSER", users[i].user);
    }
}

/* ------------------------------------------------------------------ */
/* Users who may not subscribe                                          */

/* Whether the server holds the reentrant lock name for holder. */
static int held_for(const char *name, const char *holder)
{
    return CMD_INT(adm, "HEXISTS", name, holder) == 1;
}

/* Three reentrant acquires queued before the handshake by a user whose
 * SUBSCRIBE the server refuses (an error reply where a confirmation
 * would come), one of them of a lock another holder has: each is
 * reported as the server holds it (no ACQUIRED for the other's lock,
 * nothing held on the server unreported, the connection never out of
 * step); the wait for the other's lock takes it by re-checking once the
 * other lets it go, within its wait; nothing is left once released. */
static void no_subscribe_as(const char *user)
{
    static const char *const names[3] = {"sess:acl:a", "sess:acl:b", "sess:acl:c"};
    rlk_session_lock *l[3];
    drv d;
    drv_init_as(&d, 0, 200, user);
    CMD(adm, "DEL", names[0], names[1], names[2]);
    CMD(adm, "HSET", names[0], "other:1", "1");
    CMD(adm, "PEXPIRE", names[0], "30000");
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.kind = RLK_LOCK_REENTRANT;
    o.ttl_ms = 10000;
    d.now = ts_now_ms();
    for (int i = 0; i < 3; i++) {
        o.wait_ms = i == 0 ? 8000 : 0;
        l[i] = rlk_session_acquire(d.s, names[i], &o, &d, d.now);
        if (!CHECK(l[i] != NULL)) goto out;
    }
    drv_connect(&d, srv);
    RUN_UNTIL(d.fd < 0 || d.nev >= 3, 5000, &d);
    CHECK_MSG(d.fd >= 0, "the session broke: %s", rlk_session_errmsg(d.s));
    CHECK(find(&d, RLK_SEV_ACQUIRED, l[0]) == NULL && find(&d, RLK_SEV_NOT_ACQUIRED, l[0]) == NULL);
    CHECK(!held_for(names[0], rlk_session_lock_token(l[0])));
    for (int i = 1; i < 3; i++) {
        const ev *e = find(&d, RLK_SEV_ACQUIRED, l[i]);
        CHECK_MSG(e != NULL, "%s not reported acquired", names[i]);
        /* Reported or not, the server agrees. */
        CHECK_MSG(held_for(names[i], rlk_session_lock_token(l[i])) == (e != NULL),
                  "%s: reported %s, held on the server: %d", names[i], e ? "held" : "not held",
                  held_for(names[i], rlk_session_lock_token(l[i])));
    }
    /* The other holder lets go (no release message: it is not a
     * resplock holder); the waiter finds it free at a re-check. */
    CMD(adm, "DEL", names[0]);
    RUN_UNTIL(d.fd < 0 || find(&d, RLK_SEV_ACQUIRED, l[0]) || find(&d, RLK_SEV_NOT_ACQUIRED, l[0]),
              7000, &d);
    CHECK_MSG(find(&d, RLK_SEV_ACQUIRED, l[0]) != NULL, "the wait ended without the lock: %s",
              rlk_session_errmsg(d.s));
    CHECK(held_for(names[0], rlk_session_lock_token(l[0])));
    CHECK_MSG(d.fd >= 0, "the session broke: %s", rlk_session_errmsg(d.s));
    /* Said, for a -v to print. */
    const char *note = rlk_session_wait_note(d.s);
    CHECK_MSG(note && ts_contains(note, "SUBSCRIBE refused (NOPERM") && ts_contains(note, "re-check"),
              "note: %s", note ? note : "(none)");
    for (int i = 0; i < 3; i++)
        if (find(&d, RLK_SEV_ACQUIRED, l[i])) rlk_session_release(l[i], ts_now_ms());
    RUN_UNTIL(count(&d, RLK_SEV_RELEASED) >= count(&d, RLK_SEV_ACQUIRED), 5000, &d);
    for (int i = 0; i < 3; i++) {
        const ev *e = find(&d, RLK_SEV_RELEASED, l[i]);
        CHECK_MSG(!find(&d, RLK_SEV_ACQUIRED, l[i]) || (e && e->status == RLK_OK),
                  "%s: released %d, status %d (%s)", names[i], e != NULL, e ? e->status : 0,
                  rlk_session_errmsg(d.s));
        CHECK_MSG(CMD_INT(adm, "EXISTS", names[i]) == 0, "%s is left", names[i]);
    }
out:
    drv_free(&d);
}

/* Users made the Redis 7 way (acl-pubsub-default resetchannels: no
 * channel at all), one of them without FCALL (its scripts by EVALSHA),
 * and one that may not run SUBSCRIBE.  The scripts are on the server
 * already, so that every try runs at once. */
static void test_no_subscribe(void)
{
    static const char *const users[] = {"sess-nochan", "sess-nochan-nofcall", "sess-nosub"};
    size_t len = 0;
    char *lib = rlk__script_library_text(&rlk__lua_library, &len);
    if (!CHECK(lib != NULL)) return;
    CMD(adm, "FUNCTION", "LOAD", "REPLACE", lib);
    rlk__free(lib);
    CMD(adm, "SCRIPT", "LOAD", rlk__lua_acquire);
    CMD(adm, "ACL", "DELUSER", users[0], users[1], users[2]);
    CMD(adm, "ACL", "SETUSER", users[0], "on", ">pw", "~*", "+@all");
    CMD(adm, "ACL", "SETUSER", users[1], "on", ">pw", "~*", "+@all", "-fcall");
    CMD(adm, "ACL", "SETUSER", users[2], "on", ">pw", "~*", "&*", "+@all", "-subscribe");
    for (size_t i = 0; i < sizeof users / sizeof users[0]; i++) no_subscribe_as(users[i]);
    CMD(adm, "ACL", "DELUSER", users[0], users[1], users[2]);
}

/* ------------------------------------------------------------------ */
/* Made-up bytes and times                                              */

/* Replies: the requests they answer were written first (a session takes
 * no reply for a request still in its output). */
static void feed_str(drv *d, const char *s, int64_t now)
{
    d->now = now;
    rlk_session_consume(d->s, (size_t)-1);
    CHECK_EQ_INT(rlk_session_feed(d->s, s, strlen(s), now), RLK_OK);
}

static int out_has(drv *d, const char *needle)
{
    const char *o;
    size_t n = rlk_session_output(d->s, &o);
    char *c = malloc(n + 1);
    memcpy(c, o, n);
    c[n] = 0;
    int r = ts_contains(c, needle);
    free(c);
    return r;
}

/* A (UN)SUBSCRIBE's answer under RESP3, as a server sends it: a push
 * naming the channel, in the reply's place. */
static void sub_reply(drv *d, const char *kind, const char *chan, int64_t now)
{
    char push[256];
    snprintf(push, sizeof push, ">3\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n:1\r\n", strlen(kind), kind,
             strlen(chan), chan);
    feed_str(d, push, now);
}

/* The answer to the UNSUBSCRIBE in the output (of the release channel
 * kept after the wait before, left when another wait ends). */
static void answer_unsubscribe(drv *d, int64_t now)
{
    const char *o;
    size_t n = rlk_session_output(d->s, &o);
    const char *at = memmem(o, n, "UNSUBSCRIBE\r\n$", 14);
    char chan[96] = "";
    if (CHECK(at != NULL)) {
        int len = atoi(at + 14);
        const char *p = memchr(at + 14, '\n', (size_t)(o + n - (at + 14)));
        if (CHECK(p && len > 0 && len < (int)sizeof chan)) snprintf(chan, sizeof chan, "%.*s", len, p + 1);
    }
    sub_reply(d, "unsubscribe", chan, now);
}

#define HELLO_62 "%1\r\n$6\r\nserver\r\n$5\r\nredis\r\n"

/* Ready after HELLO answered with hello (a server that tells no version
 * by default: scripts by EVALSHA), its handoff channel subscribed. */
static void manual_ready_as(drv *d, const char *hello)
{
    drv_init(d, 0, 0);
    d->manual = 1;
    CHECK_EQ_INT(rlk_session_connected(d->s, 1000), RLK_OK);
    CHECK(out_has(d, "HELLO"));
    rlk_session_consume(d->s, 1 << 20);
    feed_str(d, hello ? hello : HELLO_62, 1000);
    CHECK(rlk_session_ready(d->s));
    CHECK(out_has(d, "SUBSCRIBE"));
    /* A server with CLIENT NO-EVICT (Redis 7.0+) is asked for it, before
     * the subscription; its answer comes first. */
    int noevict = out_has(d, "*3\r\n$6\r\nCLIENT\r\n$8\r\nNO-EVICT\r\n$2\r\non\r\n");
    rlk_session_consume(d->s, 1 << 20);
    if (noevict) feed_str(d, "+OK\r\n", 1000);
    sub_reply(d, "subscribe", rlk__session_handoff_channel(d->s), 1000);
}

static void manual_ready(drv *d) { manual_ready_as(d, NULL); }

/* After a first try's SET: no window open (HGET's null), then TIME. */
#define TIME_REPLY "$-1\r\n*2\r\n$10\r\n1700000000\r\n$6\r\n123456\r\n"

/* The acquire's reply comes after the TTL it was sent with: no success,
 * and the lock it took is given back. */
static void test_late_reply(void)
{
    drv d;
    manual_ready(&d);
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 100;
    rlk_session_lock *l = rlk_session_acquire(d.s, "late", &o, NULL, 1000);
    CHECK(out_has(&d, "SET") && out_has(&d, "TIME"));
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "+OK\r\n" TIME_REPLY, 1100);
    CHECK_EQ_INT(count(&d, RLK_SEV_ACQUIRED), 0);
    const ev *e = find(&d, RLK_SEV_NOT_ACQUIRED, l);
    CHECK(e && e->status == RLK_ERR_TIMEOUT);
    CHECK(out_has(&d, "EVAL"));
    feed_str(&d, ":1\r\n", 1101); /* the release's reply, read by nobody */
    /* In time: held, valid from when the try was queued. */
    l = rlk_session_acquire(d.s, "ontime", &o, NULL, 2000);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "+OK\r\n" TIME_REPLY, 2050);
    e = find(&d, RLK_SEV_ACQUIRED, l);
    CHECK(e != NULL);
    CHECK_EQ_U64(rlk_session_lock_fence(l), 1700000000123456ull);
    CHECK(rlk_session_lock_remaining_ms(l, 2050) > 0 && rlk_session_lock_remaining_ms(l, 2050) <= 50);
    CHECK_EQ_INT(rlk_session_lock_remaining_ms(l, 2100), 0);
    drv_free(&d);
}

/* Silence: a reply overdue fails the session at its deadline; closing
 * ends the acquire; bad bytes are RLK_ERR_PROTO. */
static void test_deadlines_and_garbage(void)
{
    drv d;
    manual_ready(&d);
    rlk_session_lock *l = rlk_session_acquire(d.s, "quiet", NULL, NULL, 5000);
    CHECK(l != NULL);
    int64_t dl = rlk_session_deadline(d.s);
    CHECK_EQ_INT(dl, 5000 + 2000);
    CHECK_EQ_INT(rlk_session_tick(d.s, dl - 1), RLK_OK);
    CHECK_EQ_INT(rlk_session_tick(d.s, dl), RLK_ERR_TIMEOUT);
    rlk_session_closed(d.s, dl);
    const ev *e = find(&d, RLK_SEV_NOT_ACQUIRED, l);
    CHECK(e && e->status == RLK_ERR_CLOSED);
    CHECK_EQ_INT(rlk_session_deadline(d.s), -1);
    /* Reconnect: the handshake again; garbage breaks it. */
    CHECK_EQ_INT(rlk_session_connected(d.s, 8000), RLK_OK);
    CHECK_EQ_INT(rlk_session_feed(d.s, "!!garbage\r\n", 11, 8000), RLK_ERR_PROTO);
    CHECK_EQ_INT(rlk_session_feed(d.s, "+OK\r\n", 5, 8000), RLK_ERR_PROTO); /* until closed */
    rlk_session_closed(d.s, 8000);
    /* A reply nobody asked for. */
    CHECK_EQ_INT(rlk_session_connected(d.s, 9000), RLK_OK);
    CHECK_EQ_INT(rlk_session_feed(d.s, "%0\r\n+OK\r\n", 9, 9000), RLK_ERR_PROTO);
    rlk_session_closed(d.s, 9000);
    /* Over the input bound: a bulk that never ends. */
    CHECK_EQ_INT(rlk_session_connected(d.s, 9500), RLK_OK);
    CHECK_EQ_INT(rlk_session_feed(d.s, "$2000000\r\n", 10, 9500), RLK_ERR_LIMIT);
    rlk_session_closed(d.s, 9500);
    drv_free(&d);
}

/* A wait's end is a deadline too: an acquire queued before the
 * handshake gives up at it, without a connection at all. */
static void test_pending_deadline(void)
{
    drv d;
    drv_init(&d, 0, 0);
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.wait_ms = 500;
    rlk_session_lock *l = rlk_session_acquire(d.s, "nowhere", &o, NULL, 100);
    CHECK(l != NULL);
    int64_t dl = rlk_session_deadline(d.s);
    CHECK_EQ_INT(dl, 100 + 500 + 2000);
    CHECK_EQ_INT(rlk_session_tick(d.s, dl), RLK_OK);
    const ev *e = find(&d, RLK_SEV_NOT_ACQUIRED, l);
    CHECK(e && e->status == RLK_ERR_TIMEOUT);
    CHECK_EQ_INT(rlk_session_deadline(d.s), -1);
    drv_free(&d);
}

/* A first try's SET that took the lock inside the window in which
 * resplock keeps away from a lock it freed (HGET of the waiters hash's
 * "~yield" ends it after TIME's ms, 1700000000123): not held, the acquire
 * script goes in mode 'q' (which gives the lock back) and its answer
 * counts.  A window over by TIME's ms does not. */
static void test_first_try_in_window(void)
{
    drv d;
    manual_ready(&d);
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    rlk_session_lock *l = rlk_session_acquire(d.s, "win", &o, NULL, 1000);
    CHECK(out_has(&d, "*3\r\n$4\r\nHGET\r\n$13\r\n{win}:waiters\r\n$6\r\n~yield\r\n"));
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "+OK\r\n$15\r\ny 1700000000124\r\n*2\r\n$10\r\n1700000000\r\n$6\r\n123456\r\n",
             1001);
    CHECK_EQ_INT(count(&d, RLK_SEV_ACQUIRED) + count(&d, RLK_SEV_NOT_ACQUIRED), 0);
    CHECK(out_has(&d, "EVALSHA") && out_has(&d, "$3\r\nwin\r\n") && out_has(&d, "$1\r\nq\r\n"));
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "*2\r\n:0\r\n:1\r\n", 1002);
    const ev *e = find(&d, RLK_SEV_NOT_ACQUIRED, l);
    CHECK(e && e->status == RLK_LOCK_BUSY);
    CHECK_EQ_INT(count(&d, RLK_SEV_ACQUIRED), 0);
    l = rlk_session_acquire(d.s, "win2", &o, NULL, 2000);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "+OK\r\n$15\r\ny 1700000000123\r\n*2\r\n$10\r\n1700000000\r\n$6\r\n123456\r\n",
             2001);
    CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL);
    drv_free(&d);
}

/* A handoff's message names the waiter's token and a fence: the session
 * confirms, and reports the fence the message carried. */
static void test_handoff_bytes(void)
{
    drv d;
    manual_ready(&d);
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 10000;
    o.wait_ms = 5000;
    rlk_session_lock *l = rlk_session_acquire(d.s, "hand", &o, NULL, 10000);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "$-1\r\n" TIME_REPLY, 10001);
    CHECK(out_has(&d, "redisson_lock__channel:{hand}") && out_has(&d, "EVALSHA"));
    /* The handoff channel goes out among the acquire script's arguments. */
    const char *o2;
    size_t n = rlk_session_output(d.s, &o2);
    char chan[64] = "";
    const char *at = memmem(o2, n, "resplock:handoff:", 17);
    CHECK(at != NULL);
    if (at) snprintf(chan, sizeof chan, "%.41s", at);
    rlk_session_consume(d.s, 1 << 20);
    sub_reply(&d, "subscribe", "redisson_lock__channel:{hand}", 10002);
    feed_str(&d, "*2\r\n:0\r\n:9000\r\n", 10002);
    CHECK_EQ_INT(count(&d, RLK_SEV_ACQUIRED), 0);
    char push[256], pl[128];
    /* A message naming another token is not this waiter's. */
    snprintf(pl, sizeof pl, "42 %s", "0123456789abcdef0123456789abcdef");
    snprintf(push, sizeof push, ">3\r\n$7\r\nmessage\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n", strlen(chan),
             chan, strlen(pl), pl);
    feed_str(&d, push, 10003);
    /* ... but makes it look again at once: a try in line, no
     * confirmation; busy, it waits on. */
    CHECK(out_has(&d, "EVALSHA") && !out_has(&d, "set"));
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "*2\r\n:0\r\n:5000\r\n", 10003);
    CHECK_EQ_INT(rlk_session_output(d.s, &o2), 0);
    snprintf(pl, sizeof pl, "1700000000999999 %s", rlk_session_lock_token(l));
    snprintf(push, sizeof push, ">3\r\n$7\r\nmessage\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n", strlen(chan),
             chan, strlen(pl), pl);
    feed_str(&d, push, 10004);
    CHECK(out_has(&d, "EVALSHA") && out_has(&d, "set"));
    /* Held at the message, before the confirmation's reply: for the
     * claim (re-check 1000 ms and a second, less a drift of 22 ms) from
     * the last try, sent at 10003. */
    const ev *e = find(&d, RLK_SEV_ACQUIRED, l);
    CHECK(e != NULL);
    CHECK_EQ_INT(rlk_session_lock_remaining_ms(l, 10004), 10003 + 2000 - 22 - 10004);
    CHECK_EQ_U64(rlk_session_lock_fence(l), 1700000000999999ull);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, ":10000\r\n", 10005);
    CHECK_EQ_INT(count(&d, RLK_SEV_ACQUIRED), 1);
    CHECK_EQ_INT(count(&d, RLK_SEV_LOST), 0);
    /* Confirmed: the full TTL from the confirmation's sending. */
    CHECK_EQ_INT(rlk_session_lock_remaining_ms(l, 10005), 10004 + 10000 - 102 - 10005);
    /* The wait is over: its release channel stays subscribed, kept for
     * the next wait for this lock, which starts in line (the waiting
     * script, no SET, no SUBSCRIBE). */
    CHECK(!out_has(&d, "UNSUBSCRIBE"));
    rlk_session_consume(d.s, 1 << 20);
    /* (o as above: TTL 10 s, a wait of 5 s) */
    rlk_session_lock *again = rlk_session_acquire(d.s, "hand", &o, NULL, 10006);
    CHECK(again != NULL);
    CHECK(out_has(&d, "EVALSHA") && !out_has(&d, "SUBSCRIBE") && !out_has(&d, "$3\r\nSET\r\n"));
    drv_free(&d);
}

/* A waiter in line whose first try went at `at`, busy; its handoff
 * channel in chan. */
static rlk_session_lock *in_line(drv *d, const char *name, int watchdog, int64_t at, char *chan)
{
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 10000;
    o.wait_ms = 20000;
    o.watchdog = watchdog;
    rlk_session_lock *l = rlk_session_acquire(d->s, name, &o, NULL, at);
    rlk_session_consume(d->s, 1 << 20);
    feed_str(d, "$-1\r\n" TIME_REPLY, at + 1); /* busy: subscribed, in line */
    const char *o2;
    size_t n = rlk_session_output(d->s, &o2);
    const char *h = memmem(o2, n, "resplock:handoff:", 17);
    CHECK(h != NULL);
    chan[0] = 0;
    if (h) snprintf(chan, 64, "%.41s", h);
    rlk_session_consume(d->s, 1 << 20);
    char rel[96];
    snprintf(rel, sizeof rel, "redisson_lock__channel:{%s}", name);
    sub_reply(d, "subscribe", rel, at + 2);
    feed_str(d, "*2\r\n:0\r\n:9000\r\n", at + 2);
    return l;
}

static void hand(drv *d, const char *chan, const rlk_session_lock *l, int64_t now)
{
    char push[256], pl[128];
    snprintf(pl, sizeof pl, "1700000000999999 %s", rlk_session_lock_token(l));
    snprintf(push, sizeof push, ">3\r\n$7\r\nmessage\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n", strlen(chan),
             chan, strlen(pl), pl);
    feed_str(d, push, now);
}

/* The first event ev of l from the n-th on (a handle's address may be
 * a freed one's). */
static const ev *since(const drv *d, int n, rlk_session_event e, const rlk_session_lock *l)
{
    for (int i = n; i < d->nev; i++)
        if (d->evs[i].ev == e && d->evs[i].l == l) return &d->evs[i];
    return NULL;
}

static int count_since(const drv *d, int n, rlk_session_event e)
{
    int k = 0;
    for (int i = n; i < d->nev; i++) k += d->evs[i].ev == e;
    return k;
}

/* A waiter in line since at, handed the lock at msg_at, is held only
 * once its confirmation answered, for the TTL from the confirmation. */
static void held_once_confirmed(drv *d, const char *name, int watchdog, int64_t at,
                                int64_t msg_at)
{
    char chan[64];
    int n = d->nev;
    rlk_session_lock *l = in_line(d, name, watchdog, at, chan);
    hand(d, chan, l, msg_at);
    CHECK(since(d, n, RLK_SEV_ACQUIRED, l) == NULL);
    rlk_session_consume(d->s, 1 << 20);
    feed_str(d, ":10000\r\n", msg_at + 1);
    answer_unsubscribe(d, msg_at + 1); /* the channel kept before */
    CHECK(since(d, n, RLK_SEV_ACQUIRED, l) != NULL);
    CHECK_EQ_INT(rlk_session_lock_remaining_ms(l, msg_at + 1), msg_at + 9898 - (msg_at + 1));
}

/* A handoff reported at its message, confirmed in the background: the
 * confirmation finds the claim gone (the waiter was slow), and the lock
 * is reported lost at once; the connection closes before the
 * confirmation's reply, and the lock stays valid for its claim; a
 * release right after the report goes behind the confirmation.  A lock
 * with a watchdog, and a message that leaves under a quarter of the
 * claim, wait for the confirmation instead. */
static void test_handoff_background(void)
{
    drv d;
    char chan[64];
    manual_ready(&d);
    /* Gone by the confirmation: lost. */
    int n = d.nev;
    rlk_session_lock *l = in_line(&d, "bg1", 0, 1000, chan);
    hand(&d, chan, l, 1500);
    CHECK(since(&d, n, RLK_SEV_ACQUIRED, l) != NULL);
    CHECK_EQ_INT(rlk_session_lock_remaining_ms(l, 1500), 1001 + 1978 - 1500);
    CHECK(out_has(&d, "set"));
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, ":-2\r\n", 1501);
    const ev *e = since(&d, n, RLK_SEV_LOST, l);
    CHECK(e && e->status == RLK_LOCK_LOST);
    CHECK_EQ_INT(rlk_session_lock_remaining_ms(l, 1501), 0);
    /* Released at once: the release goes after the confirmation, whose
     * reply is read first. */
    n = d.nev;
    rlk_session_lock *m = in_line(&d, "bg2", 0, 2000, chan);
    hand(&d, chan, m, 2010);
    CHECK(since(&d, n, RLK_SEV_ACQUIRED, m) != NULL);
    CHECK_EQ_INT(rlk_session_release(m, 2010), RLK_OK);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, ":10000\r\n", 2011);
    /* bg1's channel, kept until bg2's wait ended */
    sub_reply(&d, "unsubscribe", "redisson_lock__channel:{bg1}", 2011);
    CHECK(since(&d, n, RLK_SEV_RELEASED, m) == NULL);
    CHECK_EQ_INT(count_since(&d, n, RLK_SEV_LOST), 0);
    feed_str(&d, ":1\r\n", 2012);
    e = since(&d, n, RLK_SEV_RELEASED, m);
    CHECK(e && e->status == RLK_OK);
    /* A watchdog lock: held once the confirmation answered. */
    held_once_confirmed(&d, "bg3", 1, 3000, 3010);
    /* A message 1.6 s after the last try: under a quarter of the 2 s
     * claim is left, so it waits for the confirmation. */
    held_once_confirmed(&d, "bg4", 0, 4000, 5600);
    /* The connection closes before the confirmation's reply: valid for
     * the claim still, not lost. */
    n = d.nev;
    rlk_session_lock *c = in_line(&d, "bg5", 0, 6000, chan);
    hand(&d, chan, c, 6100);
    CHECK(since(&d, n, RLK_SEV_ACQUIRED, c) != NULL);
    int lost = count_since(&d, n, RLK_SEV_LOST);
    rlk_session_closed(d.s, 6101);
    CHECK_EQ_INT(count_since(&d, n, RLK_SEV_LOST), lost);
    CHECK_EQ_INT(rlk_session_lock_remaining_ms(c, 6101), 6001 + 1978 - 6101);
    drv_free(&d);
}

#define NOPERM_CHANNELS \
    "-NOPERM this user has no permissions to access one of the channels used as arguments\r\n"

/* A SUBSCRIBE answered with an error (an ACL user without the channel):
 * the refusal answers that request, nothing else.  Refused for the
 * handoff channel (at the handshake's end), a busy wait does not join
 * the line, where nobody would hear its handoff: it tries again (SET NX
 * PX) at each re-check.  Refused for the lock's release channel, it
 * waits in line (its handoff channel is heard), woken by its re-checks
 * and its handoff, and subscribes no more. */
static void test_subscribe_refused_bytes(void)
{
    drv d;
    drv_init(&d, 0, 0);
    d.manual = 1;
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 10000;
    o.wait_ms = 5000;
    CHECK_EQ_INT(rlk_session_connected(d.s, 1000), RLK_OK);
    rlk_session_lock *l = rlk_session_acquire(d.s, "nosub", &o, NULL, 1000);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, HELLO_62, 1000);
    CHECK(out_has(&d, "SUBSCRIBE") && out_has(&d, "$3\r\nSET\r\n"));
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, NOPERM_CHANNELS, 1001);
    CHECK_EQ_INT(d.nev, 1); /* READY */
    feed_str(&d, "$-1\r\n" TIME_REPLY, 1002);
    /* Busy, and polling next: one look by the acquire script (is it a
     * lock?), busy too. */
    CHECK(out_has(&d, "EVALSHA") && !out_has(&d, "SUBSCRIBE"));
    feed_str(&d, "*2\r\n:0\r\n:9000\r\n", 1002);
    CHECK_EQ_INT(d.nev, 1); /* busy, waiting */
    const char *out;
    CHECK_EQ_INT(rlk_session_output(d.s, &out), 0);
    /* The re-check: every second (the default), a SET again. */
    CHECK(rlk_session_wait_note(d.s) != NULL);
    CHECK_EQ_INT(rlk_session_deadline(d.s), 2002);
    CHECK_EQ_INT(rlk_session_tick(d.s, 2002), RLK_OK);
    CHECK(out_has(&d, "$3\r\nSET\r\n") && !out_has(&d, "SUBSCRIBE") && !out_has(&d, "EVAL"));
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "+OK\r\n" TIME_REPLY, 2003);
    CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL);
    const char *note = rlk_session_wait_note(d.s);
    CHECK_MSG(note && ts_contains(note, "not in line"), "note: %s", note ? note : "(none)");
    /* A new connection may subscribe again (an ACL can change). */
    rlk_session_closed(d.s, 2004);
    CHECK_EQ_INT(rlk_session_connected(d.s, 2005), RLK_OK);
    CHECK(rlk_session_wait_note(d.s) == NULL);
    drv_free(&d);

    /* The release channel refused. */
    manual_ready(&d);
    l = rlk_session_acquire(d.s, "nosub2", &o, NULL, 3000);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "$-1\r\n" TIME_REPLY, 3001);
    CHECK(out_has(&d, "SUBSCRIBE\r\n$31\r\nredisson_lock__channel:{nosub2}") && out_has(&d, "EVALSHA"));
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, NOPERM_CHANNELS, 3002);
    feed_str(&d, "*2\r\n:0\r\n:9000\r\n", 3002);
    CHECK_EQ_INT(count(&d, RLK_SEV_NOT_ACQUIRED) + count(&d, RLK_SEV_ACQUIRED), 0);
    CHECK_EQ_INT(rlk_session_output(d.s, &out), 0);
    CHECK_EQ_INT(rlk_session_deadline(d.s), 4002);
    CHECK_EQ_INT(rlk_session_tick(d.s, 4002), RLK_OK);
    CHECK(out_has(&d, "EVALSHA") && !out_has(&d, "SUBSCRIBE") && !out_has(&d, "$3\r\nSET\r\n"));
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "*2\r\n:0\r\n:9000\r\n", 4003);
    hand(&d, rlk__session_handoff_channel(d.s), l, 4004);
    CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL);
    note = rlk_session_wait_note(d.s);
    CHECK_MSG(note && ts_contains(note, "not woken by releases"), "note: %s", note ? note : "(none)");
    drv_free(&d);
}

/* A reply that matches no request breaks the connection, never shifts
 * the replies after it onto the wrong requests: a confirmation naming
 * another channel, one where no SUBSCRIBE waits, an OK to a SUBSCRIBE,
 * a reply of a type its request cannot get (an integer to SET). */
static void test_reply_matches_no_request(void)
{
    static const char *const bad[] = {">3\r\n$9\r\nsubscribe\r\n$5\r\nother\r\n:1\r\n",
                                      ">3\r\n$11\r\nunsubscribe\r\n$1\r\nx\r\n:0\r\n", "+OK\r\n"};
    drv d;
    drv_init(&d, 0, 0);
    d.manual = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ_INT(rlk_session_connected(d.s, 1000), RLK_OK);
        rlk_session_consume(d.s, 1 << 20);
        feed_str(&d, HELLO_62, 1000);
        rlk_session_consume(d.s, 1 << 20);
        CHECK_EQ_INT(rlk_session_feed(d.s, bad[i], strlen(bad[i]), 1001), RLK_ERR_PROTO);
        rlk_session_closed(d.s, 1001);
    }
    /* The handoff channel's confirmation, then one more. */
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(rlk_session_connected(d.s, 2000), RLK_OK);
        rlk_session_consume(d.s, 1 << 20);
        feed_str(&d, HELLO_62, 2000);
        rlk_session_consume(d.s, 1 << 20);
        sub_reply(&d, "subscribe", rlk__session_handoff_channel(d.s), 2001);
        rlk_session_lock *l = rlk_session_acquire(d.s, "nomatch", &o, NULL, 2001);
        rlk_session_consume(d.s, 1 << 20);
        const char *more = i == 0 ? ":1\r\n" : ">3\r\n$9\r\nsubscribe\r\n$1\r\nx\r\n:2\r\n";
        CHECK_EQ_INT(rlk_session_feed(d.s, more, strlen(more), 2002), RLK_ERR_PROTO);
        CHECK(find(&d, RLK_SEV_ACQUIRED, l) == NULL);
        rlk_session_closed(d.s, 2002);
    }
    drv_free(&d);
}

/* Extend on made-up bytes: the validity counts from when the request
 * was queued, not from its reply; a NOSCRIPT is answered by the same
 * request as EVAL; a reply after the validity it gives is over is no
 * success, and the lock is then lost. */
static void test_extend_bytes(void)
{
    drv d;
    manual_ready(&d);
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 100;
    rlk_session_lock *l = rlk_session_acquire(d.s, "ext", &o, NULL, 1000);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "+OK\r\n" TIME_REPLY, 1001);
    CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL);
    CHECK_EQ_INT(rlk_session_extend(l, 5000, RLK_EXTEND_SET, 1010), RLK_OK);
    CHECK(out_has(&d, "EVALSHA") && out_has(&d, "$4\r\n5000\r\n$3\r\nset\r\n$1\r\ns\r\n"));
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "-NOSCRIPT No matching script. Please use EVAL.\r\n", 1020);
    CHECK(out_has(&d, "*8\r\n$4\r\nEVAL\r\n") && out_has(&d, "$3\r\nset\r\n"));
    CHECK_EQ_INT(count(&d, RLK_SEV_EXTENDED), 0);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, ":5000\r\n", 1500);
    const ev *e = find(&d, RLK_SEV_EXTENDED, l);
    CHECK(e && e->status == RLK_OK);
    rlk_client_config timing;
    rlk_client_config_init(&timing);
    CHECK_EQ_INT(rlk_session_lock_remaining_ms(l, 1500), 1010 + rlk_plan_valid_ms(&timing, 5000) - 1500);
    /* Added time, answered after it ran out. */
    CHECK_EQ_INT(rlk_session_extend(l, 1, RLK_EXTEND_ADD, 1600), RLK_OK);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, ":1\r\n", 1700);
    CHECK(d.evs[d.nev - 2].ev == RLK_SEV_EXTENDED && d.evs[d.nev - 2].status == RLK_ERR_TIMEOUT);
    CHECK(d.evs[d.nev - 1].ev == RLK_SEV_LOST);
    CHECK_EQ_INT(rlk_session_lock_remaining_ms(l, 1700), 0);
    /* Released behind an extend answered NOSCRIPT: the extend is not
     * sent again (its result would come after the release's, which ends
     * the handle): the NOSCRIPT is its result, before the release's. */
    l = rlk_session_acquire(d.s, "ext2", &o, NULL, 2000);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "+OK\r\n" TIME_REPLY, 2001);
    CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL);
    CHECK_EQ_INT(rlk_session_extend(l, 1000, RLK_EXTEND_ADD, 2002), RLK_OK);
    CHECK_EQ_INT(rlk_session_release(l, 2002), RLK_OK);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "-NOSCRIPT No matching script. Please use EVAL.\r\n", 2003);
    CHECK(d.evs[d.nev - 1].ev == RLK_SEV_EXTENDED && d.evs[d.nev - 1].status == RLK_ERR_SERVER);
    CHECK(!out_has(&d, "add"));
    feed_str(&d, ":1\r\n", 2004);
    CHECK(d.evs[d.nev - 1].ev == RLK_SEV_RELEASED && d.evs[d.nev - 1].status == RLK_OK);
    drv_free(&d);
}

#define HELLO_AS(version)                                                           \
    "%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$" version "\r\n"
#define NOT_FOUND "-ERR Function not found\r\n"
#define ACQ_REPLY "*4\r\n:1\r\n:5\r\n:1\r\n:0\r\n"

/* A reentrant acquire (its first try is the script) at now. */
static rlk_session_lock *acq_bytes(drv *d, const char *name, int64_t now)
{
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.kind = RLK_LOCK_REENTRANT;
    o.ttl_ms = 5000;
    return rlk_session_acquire(d->s, name, &o, NULL, now);
}

/* The server from HELLO: Redis 6.2 gets EVALSHA, Redis 7 FCALL of the
 * library's function.  FCALL's failures, made up: "Function not found"
 * loads the library and sends the call again once, as EVAL; a refused
 * load, an unknown FCALL or one an ACL refuses: EVALSHA from then on.
 * An extend whose release is queued behind it is not sent again. */
static void test_fcall_bytes(void)
{
    char fn[96];
    snprintf(fn, sizeof fn, "%s_acquire\r\n", rlk__lua_library.name);
    drv d;
    manual_ready_as(&d, HELLO_AS("6\r\n6.2.14"));
    acq_bytes(&d, "f62", 1100);
    CHECK(out_has(&d, "EVALSHA") && !out_has(&d, "FCALL"));
    drv_free(&d);

    manual_ready_as(&d, HELLO_AS("6\r\n7.0.15"));
    rlk_session_lock *l = acq_bytes(&d, "f70", 1100);
    CHECK(out_has(&d, "*14\r\n$5\r\nFCALL\r\n") && out_has(&d, fn) && !out_has(&d, "EVAL"));
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, NOT_FOUND, 1101);
    CHECK(out_has(&d, "*3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n"));
    CHECK(out_has(&d, "*14\r\n$4\r\nEVAL\r\n"));
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "$21\r\nresplock_0123456789ab\r\n" ACQ_REPLY, 1102);
    if (!CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL)) goto out;
    /* Loaded: FCALL again.  An extend answered "not found" with the
     * release behind it: its error is its result, before RELEASED. */
    CHECK_EQ_INT(rlk_session_extend(l, 1000, RLK_EXTEND_ADD, 1103), RLK_OK);
    CHECK(out_has(&d, "FCALL"));
    CHECK_EQ_INT(rlk_session_release(l, 1103), RLK_OK);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, NOT_FOUND, 1104);
    CHECK(d.evs[d.nev > 0 ? d.nev - 1 : 0].ev == RLK_SEV_EXTENDED && d.evs[d.nev > 0 ? d.nev - 1 : 0].status == RLK_ERR_SERVER);
    CHECK(!out_has(&d, "*8\r\n$4\r\nEVAL\r\n") && out_has(&d, "FUNCTION"));
    rlk_session_consume(d.s, 1 << 20);
    /* The release's FCALL found nothing either: again as EVAL, the load
     * already under way.  The load is refused: EVALSHA from now. */
    feed_str(&d, NOT_FOUND, 1105);
    CHECK(out_has(&d, "$4\r\nEVAL\r\n") && !out_has(&d, "FUNCTION"));
    CHECK(d.evs[d.nev > 0 ? d.nev - 1 : 0].ev == RLK_SEV_EXTENDED);
    feed_str(&d, "-NOPERM this user has no permissions to run the 'function|load' command\r\n",
             1106);
    feed_str(&d, ":1\r\n", 1107);
    CHECK(d.evs[d.nev > 0 ? d.nev - 1 : 0].ev == RLK_SEV_RELEASED && d.evs[d.nev > 0 ? d.nev - 1 : 0].status == RLK_OK);
    rlk_session_consume(d.s, 1 << 20);
    l = acq_bytes(&d, "f70b", 1108);
    CHECK(out_has(&d, "EVALSHA") && !out_has(&d, "FCALL"));
    drv_free(&d);

    /* FCALL unknown (or refused by an ACL): again as EVAL, then EVALSHA. */
    const char *refusals[] = {"-ERR unknown command 'FCALL', with args beginning with: \r\n",
                              "-NOPERM this user has no permissions to run the 'fcall' command\r\n"};
    for (int i = 0; i < 2; i++) {
        manual_ready_as(&d, HELLO_AS("5\r\n7.2.6"));
        l = acq_bytes(&d, "f72", 1100);
        CHECK(out_has(&d, "FCALL"));
        rlk_session_consume(d.s, 1 << 20);
        feed_str(&d, refusals[i], 1101);
        CHECK(out_has(&d, "*14\r\n$4\r\nEVAL\r\n") && !out_has(&d, "FUNCTION"));
        rlk_session_consume(d.s, 1 << 20);
        feed_str(&d, ACQ_REPLY, 1102);
        if (!CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL)) goto out;
        CHECK_EQ_INT(rlk_session_release(l, 1103), RLK_OK);
        CHECK(out_has(&d, "EVALSHA") && !out_has(&d, "FCALL"));
        drv_free(&d);
    }
    return;
out:
    drv_free(&d);
}

/* The text of a script with flags for EVAL, or the SHA1 EVALSHA names:
 * with its "#!lua flags=..." line only where HELLO told a server that
 * reads it (Redis 7), never on Redis 6.2, which would fail on the line.
 * A reentrant release is sent as EVALSHA (Redis 6.2) and again as EVAL
 * after NOSCRIPT, or as FCALL (Redis 7) and again as EVAL after an OOM
 * that refused it before it ran. */
static void test_script_flags_bytes(void)
{
    const rlk__script_fn *rel = NULL;
    char plain[41];
    for (size_t i = 0; i < rlk__lua_library.nfunctions; i++)
        if (rlk__lua_library.functions[i].text == rlk__lua_release)
            rel = &rlk__lua_library.functions[i];
    if (!CHECK(rel && rel->flagged)) return;
    rlk__sha1_hex(rlk__lua_release, strlen(rlk__lua_release), plain);
    for (int v7 = 0; v7 < 2; v7++) {
        drv d;
        manual_ready_as(&d, v7 ? HELLO_AS("6\r\n7.0.15") : HELLO_AS("6\r\n6.2.14"));
        rlk_session_lock *l = acq_bytes(&d, "flags", 1100);
        rlk_session_consume(d.s, 1 << 20);
        feed_str(&d, ACQ_REPLY, 1101);
        if (!CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL)) {
            drv_free(&d);
            return;
        }
        CHECK_EQ_INT(rlk_session_release(l, 1102), RLK_OK);
        if (v7) {
            CHECK(out_has(&d, "FCALL") && out_has(&d, rel->name));
            rlk_session_consume(d.s, 1 << 20);
            feed_str(&d, "-OOM command not allowed when used memory > 'maxmemory'.\r\n", 1103);
            CHECK(out_has(&d, "$4\r\nEVAL\r\n") && out_has(&d, "#!lua flags=allow-oom\n"));
        } else {
            CHECK(out_has(&d, "EVALSHA") && out_has(&d, plain) && !out_has(&d, rel->flagged_sha1));
            rlk_session_consume(d.s, 1 << 20);
            feed_str(&d, "-NOSCRIPT No matching script. Please use EVAL.\r\n", 1103);
            CHECK(out_has(&d, "$4\r\nEVAL\r\n") && !out_has(&d, "#!"));
        }
        rlk_session_consume(d.s, 1 << 20);
        feed_str(&d, ":1\r\n", 1104);
        CHECK(find(&d, RLK_SEV_RELEASED, l) != NULL);
        drv_free(&d);
    }
}

/* Two acquires of one reentrant holder waiting in line share its place:
 * the handoff goes to one; the other, finding the holder's field when it
 * tries again, takes a hold of its own (a try in mode '0', counted) with
 * the first one's fence, not a hold that is not counted. */
static void test_reentrant_same_line(void)
{
    drv d;
    manual_ready(&d);
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 10000;
    o.wait_ms = 5000;
    o.kind = RLK_LOCK_REENTRANT;
    o.holder = "app:7";
    rlk_session_lock *a = rlk_session_acquire(d.s, "rl", &o, NULL, 1000);
    rlk_session_lock *b = rlk_session_acquire(d.s, "rl", &o, NULL, 1000);
    /* First tries: the script in mode '0' (no SET for a reentrant lock). */
    CHECK(!out_has(&d, "SET\r\n") && out_has(&d, "$5\r\napp:7\r\n$5\r\n10000\r\n$1\r\nr\r\n$1\r\n0\r\n"));
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "*2\r\n:0\r\n:9000\r\n*2\r\n:0\r\n:9000\r\n", 1001);
    CHECK(out_has(&d, "$1\r\nr\r\n$1\r\nw\r\n"));
    const char *o2;
    size_t n = rlk_session_output(d.s, &o2);
    char chan[64] = "";
    const char *at = memmem(o2, n, "resplock:handoff:", 17);
    if (at) snprintf(chan, sizeof chan, "%.41s", at);
    rlk_session_consume(d.s, 1 << 20);
    for (int i = 0; i < 2; i++) { /* each subscribed, then in line */
        sub_reply(&d, "subscribe", "redisson_lock__channel:{rl}", 1002);
        feed_str(&d, "*2\r\n:0\r\n:9000\r\n", 1002);
    }
    char push[256], pl[64] = "1700000000000111 app:7";
    snprintf(push, sizeof push, ">3\r\n$7\r\nmessage\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n", strlen(chan),
             chan, strlen(pl), pl);
    feed_str(&d, push, 1003);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, ":10000\r\n", 1004); /* the confirmation */
    CHECK_EQ_INT(count(&d, RLK_SEV_ACQUIRED), 1);
    if (find(&d, RLK_SEV_ACQUIRED, b)) { /* the handoff went to b: swap */
        rlk_session_lock *t = a;
        a = b;
        b = t;
    }
    CHECK(find(&d, RLK_SEV_ACQUIRED, a) != NULL);
    CHECK_EQ_U64(rlk_session_lock_fence(a), 1700000000000111ull);
    /* b's next look finds app:7's field, uncounted: */
    CHECK_EQ_INT(rlk_session_tick(d.s, 2500), RLK_OK);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "*4\r\n:1\r\n:1700000000000222\r\n:1\r\n:1\r\n", 2501);
    CHECK(find(&d, RLK_SEV_ACQUIRED, b) == NULL);
    CHECK(out_has(&d, "$1\r\nr\r\n$1\r\n0\r\n"));
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "*4\r\n:1\r\n:1700000000000333\r\n:2\r\n:0\r\n", 2502);
    CHECK(find(&d, RLK_SEV_ACQUIRED, b) != NULL);
    CHECK_EQ_INT(rlk_session_lock_holds(b), 2);
    CHECK_EQ_U64(rlk_session_lock_fence(b), 1700000000000111ull);
    drv_free(&d);
}

/* A server without HELLO (Redis 5): RESP2, and AUTH in the form it
 * knows, with the password alone when no user is named. */
static void test_no_hello_auth(void)
{
    for (int user = 0; user < 2; user++) {
        drv d;
        drv_init(&d, 0, 0);
        rlk_session_free(d.s);
        rlk_session_config cfg;
        rlk_session_config_init(&cfg);
        cfg.password = "secret";
        cfg.username = user ? "app" : NULL;
        cfg.cb = on_event;
        cfg.ctx = &d;
        d.s = rlk_session_new(&cfg);
        CHECK_EQ_INT(rlk_session_connected(d.s, 100), RLK_OK);
        CHECK(out_has(&d, user ? "AUTH\r\n$3\r\napp\r\n$6\r\nsecret" : "AUTH\r\n$7\r\ndefault\r\n$6\r\nsecret"));
        rlk_session_consume(d.s, 1 << 20);
        feed_str(&d, "-ERR unknown command 'HELLO'\r\n", 101);
        CHECK(out_has(&d, user ? "*3\r\n$4\r\nAUTH\r\n$3\r\napp\r\n$6\r\nsecret\r\n"
                               : "*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n"));
        CHECK(!rlk_session_ready(d.s));
        rlk_session_consume(d.s, 1 << 20);
        feed_str(&d, "+OK\r\n", 102);
        CHECK(rlk_session_ready(d.s));
        /* RESP2: no subscription to the handoff channel. */
        CHECK(!out_has(&d, "SUBSCRIBE"));
        drv_free(&d);
    }
}

/* The handshake's rules are the request core's, the same for every
 * connection (rlk_conn's were the reference): HELLO refused as unknown
 * in any of the servers' and proxies' words falls back to RESP2; a
 * refused CLIENT SETNAME leaves a connection that serves; protocol 3
 * means RESP3 only. */
static void test_handshake_rules(void)
{
    static const char *const unknown[] = {
        "-ERR unknown command 'HELLO', with args beginning with: '3'\r\n",
        "-ERR unknown subcommand 'HELLO'\r\n",
        "-ERR Syntax error\r\n",
        "-NOPROTO unsupported protocol version\r\n",
        "-ERR unknown or unsupported protocol version\r\n",
    };
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        drv d;
        drv_init(&d, 0, 0);
        CHECK_EQ_INT(rlk_session_connected(d.s, 100), RLK_OK);
        rlk_session_consume(d.s, 1 << 20);
        CHECK_MSG(rlk_session_feed(d.s, unknown[i], strlen(unknown[i]), 101) == RLK_OK,
                  "%s: %s", unknown[i], rlk_session_errmsg(d.s));
        CHECK_MSG(rlk_session_ready(d.s), "%s: not ready", unknown[i]);
        CHECK_EQ_INT(rlk__session_info(d.s)->protocol, 2);
        drv_free(&d);
    }
    /* A refused CLIENT SETNAME (an ACL user without CLIENT, a proxy). */
    for (int protocol = 0; protocol <= 2; protocol += 2) {
        drv d;
        memset(&d, 0, sizeof d);
        d.fd = -1;
        rlk_session_config cfg;
        rlk_session_config_init(&cfg);
        cfg.protocol = protocol;
        cfg.client_name = "worker-7";
        cfg.cb = on_event;
        cfg.ctx = &d;
        d.s = rlk_session_new(&cfg);
        CHECK_EQ_INT(rlk_session_connected(d.s, 100), RLK_OK);
        if (protocol == 0) {
            rlk_session_consume(d.s, 1 << 20);
            feed_str(&d, "-ERR unknown command 'HELLO'\r\n", 101);
        }
        CHECK(out_has(&d, "CLIENT\r\n$7\r\nSETNAME\r\n$8\r\nworker-7"));
        rlk_session_consume(d.s, 1 << 20);
        const char *no = "-NOPERM this user has no permissions to run the 'client|setname' command\r\n";
        CHECK_MSG(rlk_session_feed(d.s, no, strlen(no), 102) == RLK_OK, "protocol %d: %s", protocol,
                  rlk_session_errmsg(d.s));
        CHECK_MSG(rlk_session_ready(d.s), "protocol %d: a refused SETNAME failed the handshake",
                  protocol);
        drv_free(&d);
    }
    /* protocol 3: RESP3 or nothing, as rlk_conn's. */
    drv d;
    drv_init(&d, 3, 0);
    CHECK_EQ_INT(rlk_session_connected(d.s, 100), RLK_OK);
    rlk_session_consume(d.s, 1 << 20);
    const char *refused = "-ERR unknown command 'HELLO'\r\n";
    CHECK_EQ_INT(rlk_session_feed(d.s, refused, strlen(refused), 101), RLK_ERR_SERVER);
    CHECK(!rlk_session_ready(d.s));
    CHECK_MSG(strstr(rlk_session_errmsg(d.s), "HELLO") != NULL, "%s", rlk_session_errmsg(d.s));
    CHECK(!out_has(&d, "AUTH") && !out_has(&d, "SELECT"));
    drv_free(&d);
}

/* ------------------------------------------------------------------ */
/* Re-sends after a lost reply                                          */

/* Writes what the session has to send, without reading a reply. */
static void send_only(drv *d)
{
    const char *out;
    size_t n;
    while (d->fd >= 0 && (n = rlk_session_output(d->s, &out)) > 0) {
        ssize_t w = send(d->fd, out, n, MSG_NOSIGNAL);
        if (!CHECK(w > 0)) return;
        rlk_session_consume(d->s, (size_t)w);
    }
}

/* Waits (with a deadline) until the server says key exists (want 1) or
 * not (want 0). */
static int key_is(const char *key, long long want)
{
    for (int64_t end = ts_now_ms() + LONG_MS; ts_now_ms() < end; ts_pause_ms(2))
        if (CMD_INT(adm, "EXISTS", key) == want) return 1;
    return 0;
}

/* The try's reply is lost: the server took the lock for the token, and
 * the connection closed before the reply was read.  After the next
 * handshake the session tries again in the form that finds it, and the
 * lock is held with the same token: not left to run out by its TTL. */
static void test_resend_acquire(void)
{
    drv d;
    drv_init(&d, 0, 0);
    drv_connect(&d, srv);
    RUN_UNTIL(rlk_session_ready(d.s), 5000, &d);
    rlk_session_lock *l = acq(&d, "sess:resend", 30000, 0, 0);
    if (!CHECK(l != NULL)) goto out;
    send_only(&d);
    CHECK(key_is("sess:resend", 1));
    drv_close(&d); /* the reply is never read */
    CHECK_EQ_INT(count(&d, RLK_SEV_NOT_ACQUIRED), 0);
    drv_connect(&d, srv);
    RUN_UNTIL(count(&d, RLK_SEV_ACQUIRED) + count(&d, RLK_SEV_NOT_ACQUIRED) > 0, 5000, &d);
    const ev *a = find(&d, RLK_SEV_ACQUIRED, l);
    if (CHECK(a != NULL)) {
        char v[256];
        CHECK_EQ_INT(CMD_STR(adm, v, "GET", "sess:resend"), 1);
        CHECK_EQ_STR(v, a->token);
        CHECK(a->remaining > 25000);
        CHECK_EQ_INT(rlk_session_release(l, ts_now_ms()), RLK_OK);
        RUN_UNTIL(count(&d, RLK_SEV_RELEASED) > 0, 5000, &d);
    }
    CHECK(key_is("sess:resend", 0));
out:
    drv_free(&d);
}

/* The release's reply is lost: sent again once after the next
 * handshake, flagged as a re-send within the lock's validity, it finds
 * the lock gone and reports it released. */
static void test_resend_release(void)
{
    drv d;
    drv_init(&d, 0, 0);
    drv_connect(&d, srv);
    rlk_session_lock *l = acq(&d, "sess:resend-rel", 30000, 0, 0);
    RUN_UNTIL(count(&d, RLK_SEV_ACQUIRED) > 0, 5000, &d);
    if (!CHECK(find(&d, RLK_SEV_ACQUIRED, l) != NULL)) goto out;
    CHECK_EQ_INT(rlk_session_release(l, ts_now_ms()), RLK_OK);
    send_only(&d);
    CHECK(key_is("sess:resend-rel", 0));
    drv_close(&d);
    CHECK_EQ_INT(count(&d, RLK_SEV_RELEASED), 0);
    drv_connect(&d, srv);
    RUN_UNTIL(count(&d, RLK_SEV_RELEASED) > 0, 5000, &d);
    const ev *r = find(&d, RLK_SEV_RELEASED, l);
    CHECK(r != NULL && r->status == RLK_OK);
    /* Sent twice, the release is not sent a third time: a second close
     * ends it. */
    l = acq(&d, "sess:resend-rel", 30000, 0, 0);
    RUN_UNTIL(count(&d, RLK_SEV_ACQUIRED) > 1, 5000, &d);
    d.nev = 0;
    CHECK_EQ_INT(rlk_session_release(l, ts_now_ms()), RLK_OK);
    drv_close(&d);
    drv_connect(&d, srv);
    RUN_UNTIL(rlk_session_ready(d.s), 5000, &d);
    send_only(&d); /* the re-sent release */
    drv_close(&d);
    r = find(&d, RLK_SEV_RELEASED, l);
    CHECK(r != NULL && r->status == RLK_ERR_CLOSED);
out:
    CMD(adm, "DEL", "sess:resend-rel");
    drv_free(&d);
}

/* Made up: the re-sent try is the 'q' form with the same token, within
 * the acquire's deadline; another hold of a reentrant lock held already
 * is not re-sent (a hold the lost try counted would be counted twice);
 * an acquire whose deadline passed while closed ends. */
static void test_resend_rules(void)
{
    drv d;
    manual_ready(&d);
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 10000;
    rlk_session_lock *l = rlk_session_acquire(d.s, "rs", &o, NULL, 1000);
    char tok[256];
    snprintf(tok, sizeof tok, "%s", rlk_session_lock_token(l));
    rlk_session_consume(d.s, 1 << 20);
    rlk_session_closed(d.s, 1100);
    CHECK_EQ_INT(d.nev, 1); /* READY only */
    CHECK_EQ_INT(rlk_session_connected(d.s, 1200), RLK_OK);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "%1\r\n$6\r\nserver\r\n$5\r\nredis\r\n", 1200);
    CHECK(out_has(&d, "EVALSHA") && out_has(&d, tok) && out_has(&d, "\r\n$1\r\nq\r\n"));
    rlk_session_consume(d.s, 1 << 20);
    sub_reply(&d, "subscribe", rlk__session_handoff_channel(d.s), 1250);
    feed_str(&d, "*4\r\n:1\r\n:1700000000123456\r\n:1\r\n:1\r\n", 1250);
    const ev *a = find(&d, RLK_SEV_ACQUIRED, l);
    CHECK(a != NULL && strcmp(a->token, tok) == 0);
    /* Valid from the re-send (1200), not from the first try. */
    CHECK(rlk_session_lock_remaining_ms(l, 1250) > 9800 && rlk_session_lock_remaining_ms(l, 1250) <= 9950);

    /* A reentrant lock held by holder H, then another hold of it whose
     * reply is lost: NOT_ACQUIRED(CLOSED), not re-sent. */
    o.kind = RLK_LOCK_REENTRANT;
    o.holder = "H";
    rlk_session_lock *h1 = rlk_session_acquire(d.s, "rr", &o, NULL, 1300);
    rlk_session_consume(d.s, 1 << 20);
    feed_str(&d, "*4\r\n:1\r\n:1700000000200000\r\n:1\r\n:0\r\n", 1310);
    CHECK(find(&d, RLK_SEV_ACQUIRED, h1) != NULL);
    rlk_session_lock *h2 = rlk_session_acquire(d.s, "rr", &o, NULL, 1320);
    rlk_session_consume(d.s, 1 << 20);
    rlk_session_closed(d.s, 1330);
    const ev *n = find(&d, RLK_SEV_NOT_ACQUIRED, h2);
    CHECK(n != NULL && n->status == RLK_ERR_CLOSED);

    /* Closed past the acquire's deadline (wait 0: one command timeout,
     * 2000 ms here): it ends at that deadline, never re-sent. */
    o.kind = RLK_LOCK_SIMPLE;
    o.holder = NULL;
    CHECK_EQ_INT(rlk_session_connected(d.s, 1400), RLK_OK);
    feed_str(&d, "%1\r\n$6\r\nserver\r\n$5\r\nredis\r\n", 1400);
    rlk_session_consume(d.s, 1 << 20);
    d.nev = 0; /* l3 may reuse the address of a handle gone */
    rlk_session_lock *l3 = rlk_session_acquire(d.s, "rs3", &o, NULL, 1500);
    rlk_session_consume(d.s, 1 << 20);
    rlk_session_closed(d.s, 1600);
    CHECK_EQ_INT(rlk_session_deadline(d.s) <= 3500, 1);
    CHECK_EQ_INT(rlk_session_tick(d.s, 3500), RLK_OK);
    n = find(&d, RLK_SEV_NOT_ACQUIRED, l3);
    CHECK(n != NULL && n->status == RLK_ERR_TIMEOUT);
    drv_free(&d);
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
    tl_run("acquire and release", test_acquire_release);
    tl_run("busy, and a wait that runs out", test_busy);
    tl_run("a handoff to a waiter in line", test_handoff);
    tl_run("RESP2: a waiter polls", test_resp2_wait);
    tl_run("watchdog renewals, NOSCRIPT", test_watchdog_and_noscript);
    tl_run("a frozen server: lost in time, never blocked", test_frozen_server);
    tl_run("extend: set, add, not owner, not held", test_extend);
    tl_run("reentrant: holds counted, one fence, released one by one", test_reentrant);
    tl_run("sessions and blocking clients share locks", test_interop);
    tl_run("status, release and extend by token", test_calls);
    tl_run("Redis 7: FCALL, the library loaded after FUNCTION FLUSH", test_fcall);
    tl_run("Redis 7: FCALL refused by an ACL, EVALSHA", test_fcall_refused);
    tl_run("users who may not subscribe: nothing shifts, waits re-check", test_no_subscribe);
    tl_run("a reply after the validity is over", test_late_reply);
    tl_run("a first try inside the window resplock keeps away in, made up", test_first_try_in_window);
    tl_run("deadlines, garbage, bounds", test_deadlines_and_garbage);
    tl_run("an acquire before any connection ends at its deadline", test_pending_deadline);
    tl_run("handoff messages, made up", test_handoff_bytes);
    tl_run("a SUBSCRIBE refused, made up: its own answer, waits re-check", test_subscribe_refused_bytes);
    tl_run("a reply that matches no request breaks the connection", test_reply_matches_no_request);
    tl_run("a handoff confirmed in the background, made up", test_handoff_background);
    tl_run("no HELLO: RESP2, AUTH in its old form", test_no_hello_auth);
    tl_run("the handshake's rules: HELLO's refusals, a refused SETNAME, protocol 3", test_handshake_rules);
    tl_run("extend, made up: validity from the request, NOSCRIPT, late", test_extend_bytes);
    tl_run("FCALL, made up: Redis 6.2 and 7, not found, refused", test_fcall_bytes);
    tl_run("script flags, made up: EVAL has them on Redis 7 only", test_script_flags_bytes);
    tl_run("reentrant, made up: two waiters of one holder", test_reentrant_same_line);
    tl_run("a lost try's reply: tried again, the lock kept", test_resend_acquire);
    tl_run("a lost release reply: sent again once", test_resend_release);
    tl_run("re-send rules, made up", test_resend_rules);
    rlk_conn_free(adm);
    ts_stop(srv);
    return tl_finish();
}
