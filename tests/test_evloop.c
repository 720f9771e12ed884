/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The client turned by the caller's own event loop (resplock.h, "Event
 * loops"): rlk_client_watch, rlk_client_handle, the _async lock calls
 * and the poll adapter, against real redis-server processes.
 *
 * The loop here is the test's own poll over every client's entries.
 * Each call of the API is timed: none may take longer than TURN_MS, the
 * issue's (#18) bound on a turn, whatever a server does (paused by
 * SIGSTOP, or a listener that lets no connection in) -- a property of
 * calls that never wait for a server, not a speed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "conntest.h"
#include "server.h"
#include "testlib.h"
#include "adapters/poll.h"
#include "resplock.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TURN_MS 100

/* A check of a == b that is an expression: 1 when it held. */
#define EQ(a, b) eq_((long long)(a), (long long)(b), #a, __LINE__)
static int eq_(long long a, long long b, const char *what, int line)
{
    return tl_ok(a == b, __FILE__, line, "%s: %lld, expected %lld", what, a, b);
}

static ts_server *srv;
static char url[64];
static rlk_conn *adm;   /* a raw connection to srv */
static int slow;        /* under valgrind: longer TTLs */

/* ------------------------------------------------------------------ */
/* Timing every call, and the callbacks                                 */

static int in_handle;           /* inside rlk_client_handle */
static int64_t longest;         /* the longest timed call so far (ms) */
static const char *longest_what;
static int64_t t_start;

static int timed_end(const char *what, int r)
{
    int64_t took = ts_now_ms() - t_start;
    if (took > longest) {
        longest = took;
        longest_what = what;
    }
    return r;
}
/* Not nested: a callback's own calls are inside its handle's time. */
#define TIMED(what, expr) (t_start = ts_now_ms(), timed_end(what, (expr)))

static void reset_longest(void)
{
    longest = 0;
    longest_what = "nothing";
}

/* What an _async call's callback saw. */
typedef struct done_rec {
    rlk_client *cl;
    int calls, status, inside;
    rlk_lock *l;
    char msg[300];
} done_rec;

static void on_done(void *ctx, rlk_lock *l, int status)
{
    done_rec *d = ctx;
    d->calls++;
    d->status = status;
    d->inside = in_handle;
    d->l = l;
    snprintf(d->msg, sizeof d->msg, "%s", status == RLK_OK ? "" : rlk_client_errmsg(d->cl));
}

static void rec_init(done_rec *d, rlk_client *cl)
{
    memset(d, 0, sizeof *d);
    d->cl = cl;
}

/* What on_lost saw. */
typedef struct lost_rec {
    int calls, inside, is_lost;
    int64_t at;
} lost_rec;

static void on_lost(void *ctx, rlk_lock *l)
{
    lost_rec *r = ctx;
    r->calls++;
    r->inside = in_handle;
    r->is_lost = rlk_lock_is_lost(l);
    r->at = ts_now_ms();
}

/* ------------------------------------------------------------------ */
/* The loop                                                             */

#define MAXC 3

typedef struct loop {
    rlk_client *cl[MAXC];
    size_t n;
    int fails[MAXC];          /* rlk_client_handle's failures */
    int last[MAXC];           /* the first one's status */
    int64_t fail_at[MAXC];    /* when it came (-1: none) */
    char err[MAXC][300];      /* its message */
    int watch_errs;
} loop;

static void loop_init(loop *lp, size_t n, rlk_client *const *cl)
{
    memset(lp, 0, sizeof *lp);
    lp->n = n;
    for (size_t i = 0; i < n; i++) {
        lp->cl[i] = cl[i];
        lp->fail_at[i] = -1;
    }
}

/* One turn over every client: watch each, one poll until the soonest
 * deadline (or until), handle each. */
static void turn(loop *lp, int64_t until)
{
    rlk_watch w[MAXC][4];
    int k[MAXC];
    struct pollfd p[MAXC * 4];
    size_t np = 0;
    int64_t wake = until;
    for (size_t i = 0; i < lp->n; i++) {
        int64_t d = -1;
        k[i] = TIMED("rlk_client_watch", rlk_client_watch(lp->cl[i], w[i], 4, &d));
        if (k[i] < 0 || k[i] > 4) {
            lp->watch_errs++;
            k[i] = 0;
        }
        if (d >= 0 && (wake < 0 || d < wake)) wake = d;
        for (int j = 0; j < k[i]; j++) {
            p[np].fd = w[i][j].fd;
            p[np].events = (short)((w[i][j].events & RLK_EV_READ ? POLLIN : 0) |
                                   (w[i][j].events & RLK_EV_WRITE ? POLLOUT : 0));
            p[np].revents = 0;
            np++;
        }
    }
    int64_t left = wake < 0 ? 1000 : wake - ts_now_ms();
    if (left < 0) left = 0;
    if (poll(p, np, (int)left) < 0)
        for (size_t j = 0; j < np; j++) p[j].revents = 0;
    np = 0;
    for (size_t i = 0; i < lp->n; i++) {
        for (int j = 0; j < k[i]; j++, np++)
            w[i][j].revents = (p[np].revents & POLLIN ? RLK_EV_READ : 0) |
                              (p[np].revents & POLLOUT ? RLK_EV_WRITE : 0) |
                              (p[np].revents & (POLLERR | POLLHUP) ? RLK_EV_READ : 0);
        in_handle = 1;
        int r = TIMED("rlk_client_handle", rlk_client_handle(lp->cl[i], w[i], (size_t)k[i]));
        in_handle = 0;
        if (r != RLK_OK) {
            if (lp->fails[i]++ == 0) {
                lp->last[i] = r;
                lp->fail_at[i] = ts_now_ms();
                snprintf(lp->err[i], sizeof lp->err[i], "%s", rlk_client_errmsg(lp->cl[i]));
            }
        }
    }
}

/* Turns until done(ctx) or ms pass: 1 when done. */
static int run_until(loop *lp, int (*done)(void *), void *ctx, int64_t ms)
{
    int64_t end = ts_now_ms() + ms;
    while (!done(ctx)) {
        if (ts_now_ms() >= end) return 0;
        turn(lp, end);
    }
    return 1;
}

static int called(void *ctx) { return ((done_rec *)ctx)->calls > 0; }
static int lost_any(void *ctx) { return ((lost_rec *)ctx)->calls > 0; }

/* Turns one client until rec's callback came (within LONG_MS). */
static int wait_done(rlk_client *cl, done_rec *rec)
{
    loop lp;
    loop_init(&lp, 1, &cl);
    return run_until(&lp, called, rec, LONG_MS);
}

static void lock_opts(rlk_lock_options *o, int64_t ttl, int64_t wait, int watchdog, lost_rec *lost)
{
    rlk_lock_options_init(o);
    o->ttl_ms = ttl;
    o->wait_ms = wait;
    o->watchdog = watchdog;
    if (lost) {
        o->on_lost = on_lost;
        o->ctx = lost;
    }
}

static rlk_client *client_for(const char *u, int timeout_ms)
{
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    cfg.conn.url = u;
    cfg.conn.client_name = "evloop-test";
    cfg.conn.command_timeout_ms = timeout_ms;
    cfg.conn.connect_timeout_ms = timeout_ms;
    rlk_client *cl = rlk_client_new(&cfg);
    CHECK(cl != NULL);
    return cl;
}

/* Acquires name on cl through the loop: the handle, or NULL (a test
 * failure). */
static rlk_lock *acquire_async(rlk_client *cl, const char *name, const rlk_lock_options *o)
{
    done_rec d;
    rec_init(&d, cl);
    rlk_lock *l = NULL;
    if (!EQ(TIMED("acquire_async", rlk_lock_acquire_async(cl, name, o, on_done, &d, &l)),
                      RLK_OK))
        return NULL;
    CHECK(l != NULL);
    CHECK_EQ_INT(d.calls, 0); /* never from within the call */
    if (!CHECK_MSG(wait_done(cl, &d), "acquire of %s: no result", name)) {
        rlk_lock_forget(l);
        return NULL;
    }
    CHECK_MSG(d.status == RLK_OK, "acquire of %s: %d %s", name, d.status, d.msg);
    CHECK(d.inside);
    CHECK(d.l == l);
    return d.status == RLK_OK ? l : NULL;
}

/* Releases l through the loop: the release's status. */
static int release_async(rlk_client *cl, rlk_lock *l)
{
    done_rec d;
    rec_init(&d, cl);
    int r = TIMED("release_async", rlk_lock_release_async(l, on_done, &d));
    if (!EQ(r, RLK_OK)) return r;
    CHECK_EQ_INT(d.calls, 0);
    if (!CHECK(wait_done(cl, &d))) return RLK_ERR_TIMEOUT;
    CHECK(d.inside);
    return d.status;
}

/* The value at key on c ("" when none). */
static void get(rlk_conn *c, const char *key, char *out, size_t n)
{
    out[0] = '\0';
    rlk_resp_value *v = run_cmd(c, __LINE__, "GET", key, (const char *)NULL);
    if (v && v->type == RLK_RESP_BULK) snprintf(out, n, "%.*s", (int)v->len, v->str);
}

/* ------------------------------------------------------------------ */
/* Tests                                                                */

/* Acquire, extend and release, each started without waiting and ended
 * by a callback from rlk_client_handle; the blocking calls refuse a
 * handle with an _async call under way. */
static void test_acquire_extend_release(void)
{
    rlk_client *cl = client_for(url, 2000);
    if (!cl) return;
    reset_longest();
    rlk_lock_options o;
    lock_opts(&o, 10000, 0, 0, NULL);
    done_rec d;
    rec_init(&d, cl);
    rlk_lock *l = NULL;
    CHECK_EQ_INT(rlk_lock_acquire_async(cl, "ev:basic", &o, on_done, &d, &l), RLK_OK);
    CHECK_EQ_INT(d.calls, 0);
    if (l) {
        CHECK_EQ_INT(rlk_lock_release(l), RLK_ERR_INVALID);
        CHECK_EQ_INT(rlk_lock_extend(l, 1000, RLK_EXTEND_ADD), RLK_ERR_INVALID);
        CHECK_EQ_INT(rlk_lock_extend_async(l, 1000, RLK_EXTEND_ADD, NULL, NULL), RLK_ERR_INVALID);
    }
    if (!CHECK(wait_done(cl, &d)) || !EQ(d.status, RLK_OK)) goto out;
    CHECK(d.inside);
    char v[160];
    get(adm, "ev:basic", v, sizeof v);
    CHECK_EQ_STR(v, rlk_lock_token(l));
    CHECK(rlk_lock_remaining_ms(l) > 0);
    /* Nothing due for a while: the loop sleeps in its wait (a deadline
     * left at "now" would make it spin). */
    loop lp;
    loop_init(&lp, 1, &cl);
    int turns = 0;
    for (int64_t end = ts_now_ms() + 500; ts_now_ms() < end; turns++) turn(&lp, end);
    CHECK_MSG(turns <= 5, "%d turns in 500 ms with nothing to do", turns);

    rec_init(&d, cl);
    CHECK_EQ_INT(TIMED("extend_async", rlk_lock_extend_async(l, 20000, RLK_EXTEND_SET, on_done, &d)),
                 RLK_OK);
    CHECK_EQ_INT(d.calls, 0);
    CHECK_EQ_INT(rlk_lock_extend_async(l, 1000, RLK_EXTEND_ADD, NULL, NULL), RLK_ERR_INVALID);
    if (CHECK(wait_done(cl, &d))) {
        CHECK_EQ_INT(d.status, RLK_OK);
        CHECK(d.inside);
        CHECK(d.l == l);
    }
    CHECK_EQ_INT(rlk_lock_ttl_ms(l), 20000);
    long long pttl = CMD_INT(adm, "PTTL", "ev:basic");
    CHECK_MSG(pttl > 10000 && pttl <= 20000, "PTTL %lld", pttl);

    CHECK_EQ_INT(release_async(cl, l), RLK_OK);
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "ev:basic"), 0);
    CHECK_MSG(longest <= TURN_MS, "%s took %lld ms", longest_what, (long long)longest);
out:
    rlk_client_free(cl);
}

typedef struct cycler {
    rlk_client *cl;
    const char *name;
    int state;                /* 0 idle, 1 acquiring, 2 held, 3 releasing */
    rlk_lock *l;
    done_rec d;
    int cycles, failures, last_status;
    int stop;                 /* no new cycle */
} cycler;

static void cycler_init(cycler *c, rlk_client *cl, const char *name)
{
    memset(c, 0, sizeof *c);
    c->cl = cl;
    c->name = name;
}

/* Starts the next step of an acquire-and-release cycle on c->cl. */
static void cycle_step(cycler *c)
{
    if (c->state == 1 || c->state == 3) {
        if (!c->d.calls) return;
        if (c->d.status != RLK_OK) {
            c->failures++;
            c->last_status = c->d.status;
            c->state = 0;
        } else {
            if (c->state == 3) c->cycles++;
            c->state = c->state == 1 ? 2 : 0;
        }
    }
    if (c->stop && c->state != 2) return;
    rec_init(&c->d, c->cl);
    if (c->state == 0) {
        rlk_lock_options o;
        lock_opts(&o, 30000, 0, 0, NULL);
        if (EQ(TIMED("acquire_async", rlk_lock_acquire_async(c->cl, c->name, &o, on_done,
                                                                       &c->d, &c->l)),
                         RLK_OK))
            c->state = 1;
    } else if (c->state == 2) {
        if (EQ(TIMED("release_async", rlk_lock_release_async(c->l, on_done, &c->d)),
                         RLK_OK))
            c->state = 3;
    }
}

/* Cycles on c, turning lp, until n cycles are done (within LONG_MS): 1
 * when they are. */
static int cycle_until(loop *lp, cycler *c, int n)
{
    for (int64_t end = ts_now_ms() + LONG_MS; ts_now_ms() < end && c->cycles < n;) {
        cycle_step(c);
        turn(lp, end);
    }
    return CHECK_MSG(c->cycles >= n, "%d cycles, want %d", c->cycles, n);
}

/* Ends the cycle under way (its lock released). */
static void cycle_end(loop *lp, cycler *c)
{
    c->stop = 1;
    for (int64_t end = ts_now_ms() + LONG_MS; ts_now_ms() < end && c->state != 0;) {
        cycle_step(c);
        turn(lp, end);
    }
    CHECK_EQ_INT(c->state, 0);
}

/* A server paused by SIGSTOP while one lock on it and one on another
 * server are held, with the watchdog: no call of the API waits for it;
 * the paused server's lock is reported lost (on_lost, from
 * rlk_client_handle) and an acquire on it ends; the other server's lock
 * goes on being renewed, and acquire-release cycles go on there. */
static void test_paused_server(void)
{
    ts_server *a = ts_start(NULL), *b = ts_start(NULL);
    char ua[64], ub[64];
    rlk_client *ca = NULL, *cb = NULL;
    rlk_conn *admb = NULL;
    int stopped = 0;
    if (!CHECK(a && b)) goto out;
    url_of(ua, sizeof ua, a);
    url_of(ub, sizeof ub, b);
    admb = CONNECT(ub);
    ca = client_for(ua, 1000);
    cb = client_for(ub, 2000);
    if (!ca || !cb || !admb) goto out;
    int64_t ttl = slow ? 3000 : 1000;
    lost_rec lost_a, lost_b;
    memset(&lost_a, 0, sizeof lost_a);
    memset(&lost_b, 0, sizeof lost_b);
    rlk_lock_options o;
    lock_opts(&o, ttl, 0, 1, &lost_a);
    rlk_lock *la = acquire_async(ca, "ev:paused", &o);
    lock_opts(&o, ttl, 0, 1, &lost_b);
    rlk_lock *lb = acquire_async(cb, "ev:paused", &o);
    if (!la || !lb) goto out;
    char tb[160];
    snprintf(tb, sizeof tb, "%s", rlk_lock_token(lb));

    cycler cy;
    cycler_init(&cy, cb, "ev:cycle");
    rlk_client *both[2] = {ca, cb};
    loop lp;
    loop_init(&lp, 2, both);
    /* A first cycle: code run for the first time (slow under valgrind)
     * is not what is measured. */
    cycle_until(&lp, &cy, 1);

    if (!CHECK(kill(a->pid, SIGSTOP) == 0)) goto out;
    stopped = 1;
    int64_t frozen = ts_now_ms();
    int64_t valid_end = frozen + rlk_lock_remaining_ms(la);
    reset_longest();
    /* An acquire on the paused server: it must not wait, and it ends. */
    done_rec dp;
    rec_init(&dp, ca);
    rlk_lock *lp2 = NULL;
    lock_opts(&o, ttl, 0, 0, NULL);
    CHECK_EQ_INT(TIMED("acquire_async", rlk_lock_acquire_async(ca, "ev:paused-2", &o, on_done, &dp,
                                                               &lp2)),
                 RLK_OK);
    int turns = 0;
    for (int64_t end = frozen + 5 * ttl / 2; ts_now_ms() < end; turns++) {
        cycle_step(&cy);
        turn(&lp, end);
    }
    printf("    %d turns in %lld ms, the longest call %s: %lld ms; %d cycles on the other "
           "server\n",
           turns, (long long)(ts_now_ms() - frozen), longest_what, (long long)longest, cy.cycles);
    CHECK_MSG(longest <= TURN_MS, "%s took %lld ms", longest_what, (long long)longest);
    CHECK_EQ_INT(lost_a.calls, 1);
    CHECK(lost_a.inside);
    CHECK(lost_a.is_lost);
    CHECK_MSG(lost_a.calls == 0 || lost_a.at <= valid_end,
              "on_lost %lld ms after the validity ended", (long long)(lost_a.at - valid_end));
    CHECK(rlk_lock_is_lost(la));
    CHECK_EQ_INT(dp.calls, 1);
    CHECK_MSG(dp.status != RLK_OK, "the acquire on the paused server: %d", dp.status);
    CHECK(dp.inside);
    /* The other server: its lock renewed, its cycles without a fault. */
    CHECK_EQ_INT(lost_b.calls, 0);
    char v[160];
    get(admb, "ev:paused", v, sizeof v);
    CHECK_EQ_STR(v, tb);
    CHECK_MSG(cy.cycles >= 3, "%d cycles on the other server", cy.cycles);
    CHECK_MSG(cy.failures == 0, "%d failures on the other server (last %d)", cy.failures,
              cy.last_status);
    CHECK_EQ_INT(lp.fails[1], 0);
    CHECK_EQ_INT(lp.watch_errs, 0);

    kill(a->pid, SIGCONT);
    stopped = 0;
    CHECK_EQ_INT(release_async(ca, la), RLK_LOCK_LOST);
    CHECK_EQ_INT(release_async(cb, lb), RLK_OK);
    la = lb = NULL;
    CHECK_EQ_INT(lost_a.calls, 1);
    cycle_end(&lp, &cy);
out:
    if (stopped) kill(a->pid, SIGCONT);
    rlk_client_free(ca);
    rlk_client_free(cb);
    rlk_conn_free(admb);
    ts_stop(a);
    ts_stop(b);
}

/* One client's server a listener whose queue is full (its TCP connect
 * never completes), another client's a real server, one loop: the
 * connect under way is watched (its socket, for writing) and ends at its
 * timeout, reported by rlk_client_handle, and no call waits for it
 * meanwhile: cycles go on on the other client. */
#define HOLE_CONNECT_MS 2000
static void test_full_backlog(void)
{
    ts_hole hole;
    rlk_client *ch = NULL, *cb = NULL;
    if (!CHECK_MSG(ts_hole_open(&hole) == 0, "no listener with a full queue")) return;
    char uh[64];
    snprintf(uh, sizeof uh, "redis://127.0.0.1:%d", hole.port);
    ch = client_for(uh, HOLE_CONNECT_MS);
    cb = client_for(url, 2000);
    if (!ch || !cb) goto out;
    cycler cy;
    cycler_init(&cy, cb, "ev:hole-cycle");
    rlk_client *both[2] = {ch, cb};
    loop lp;
    loop_init(&lp, 2, both);
    loop warm;
    loop_init(&warm, 1, &cb);
    cycle_until(&warm, &cy, 1);

    reset_longest();
    int64_t t0 = ts_now_ms();
    done_rec dh;
    rec_init(&dh, ch);
    rlk_lock *lh = NULL;
    rlk_lock_options o;
    lock_opts(&o, 30000, 0, 0, NULL);
    CHECK_EQ_INT(TIMED("acquire_async", rlk_lock_acquire_async(ch, "ev:hole", &o, on_done, &dh, &lh)),
                 RLK_OK);
    /* The connect under way: its socket, waiting to be writable, by its
     * timeout at the latest. */
    rlk_watch w[4];
    int64_t dl = -1;
    int k = TIMED("rlk_client_watch", rlk_client_watch(ch, w, 4, &dl));
    if (EQ(k, 1)) {
        CHECK(w[0].fd >= 0);
        CHECK_EQ_INT(w[0].events, RLK_EV_WRITE);
    }
    CHECK_MSG(dl >= 0 && dl <= t0 + HOLE_CONNECT_MS + 50, "deadline in %lld ms",
              (long long)(dl - t0));
    int turns = 0;
    for (int64_t end = t0 + HOLE_CONNECT_MS + LONG_MS;
         ts_now_ms() < end && (lp.fail_at[0] < 0 || !dh.calls); turns++) {
        cycle_step(&cy);
        turn(&lp, end);
    }
    printf("    %d turns, the longest call %s: %lld ms; %d cycles on the other client\n", turns,
           longest_what, (long long)longest, cy.cycles);
    CHECK_MSG(longest <= TURN_MS, "%s took %lld ms", longest_what, (long long)longest);
    if (CHECK_MSG(lp.fail_at[0] >= 0, "the connect never failed")) {
        CHECK_MSG(lp.fail_at[0] - t0 >= HOLE_CONNECT_MS, "failed after %lld ms",
                  (long long)(lp.fail_at[0] - t0));
        CHECK_EQ_INT(lp.last[0], RLK_ERR_TIMEOUT);
        char msg[96];
        snprintf(msg, sizeof msg, "connect 127.0.0.1:%d: timed out after ", hole.port);
        CHECK_MSG(ts_contains(lp.err[0], msg), "err: %s", lp.err[0]);
    }
    if (EQ(dh.calls, 1)) {
        CHECK_EQ_INT(dh.status, RLK_ERR_TIMEOUT);
        CHECK(dh.inside);
    }
    CHECK_MSG(cy.cycles >= 3, "%d cycles on the other client", cy.cycles);
    CHECK_MSG(cy.failures == 0, "%d failures on the other client (last %d)", cy.failures,
              cy.last_status);
    CHECK_EQ_INT(lp.fails[1], 0);
    cycle_end(&lp, &cy);
out:
    rlk_client_free(ch);
    rlk_client_free(cb);
    ts_hole_close(&hole);
}

/* A lock taken over by someone else: its renewal finds it so, and
 * on_lost is called once, from rlk_client_handle; its release reports
 * it lost and leaves the other holder's key. */
static void test_lost_from_handle(void)
{
    rlk_client *cl = client_for(url, 2000);
    if (!cl) return;
    lost_rec lost;
    memset(&lost, 0, sizeof lost);
    rlk_lock_options o;
    lock_opts(&o, slow ? 3000 : 1000, 0, 1, &lost);
    rlk_lock *l = acquire_async(cl, "ev:lost", &o);
    if (!l) goto out;
    CMD(adm, "SET", "ev:lost", "someone-else", "PX", "60000");
    loop lp;
    loop_init(&lp, 1, &cl);
    int got = run_until(&lp, lost_any, &lost, LONG_MS);
    if (CHECK_MSG(got, "on_lost never called")) {
        CHECK(lost.inside);
        CHECK(lost.is_lost);
    }
    CHECK(rlk_lock_is_lost(l));
    CHECK_EQ_INT(rlk_lock_extend_async(l, 1000, RLK_EXTEND_SET, NULL, NULL), RLK_LOCK_LOST);
    CHECK_EQ_INT(release_async(cl, l), RLK_LOCK_LOST);
    CHECK_EQ_INT(lost.calls, 1);
    char v[64];
    get(adm, "ev:lost", v, sizeof v);
    CHECK_EQ_STR(v, "someone-else");
out:
    CMD(adm, "DEL", "ev:lost");
    rlk_client_free(cl);
}

/* An acquire called off by rlk_lock_release_async: while it waits in
 * line for a lock held by someone else, and before any connection
 * (nothing reachable): its done never comes, the release's does (from
 * rlk_client_handle, not from within the call), RLK_LOCK_NOT_HELD. */
static void test_call_off(void)
{
    rlk_client *cl = client_for(url, 2000);
    char uc[64];
    snprintf(uc, sizeof uc, "redis://127.0.0.1:%d", ts_free_port(0));
    rlk_client *cc = client_for(uc, 2000);
    if (!cl || !cc) goto out;
    CMD(adm, "SET", "ev:busy", "someone-else", "PX", "60000");
    rlk_lock_options o;
    lock_opts(&o, 10000, 30000, 0, NULL);
    done_rec da, dr;
    rec_init(&da, cl);
    rec_init(&dr, cl);
    rlk_lock *l = NULL;
    CHECK_EQ_INT(rlk_lock_acquire_async(cl, "ev:busy", &o, on_done, &da, &l), RLK_OK);
    loop lp;
    loop_init(&lp, 1, &cl);
    /* In line: the waiter's place is in the server's data. */
    char q[64];
    snprintf(q, sizeof q, "{ev:busy}:queue");
    for (int64_t end = ts_now_ms() + LONG_MS; ts_now_ms() < end && CMD_INT(adm, "EXISTS", q) == 0;)
        turn(&lp, ts_now_ms() + 20);
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", q), 1);
    CHECK_EQ_INT(rlk_lock_release_async(l, on_done, &dr), RLK_OK);
    CHECK_EQ_INT(rlk_lock_release_async(l, on_done, &dr), RLK_ERR_INVALID);
    if (CHECK(run_until(&lp, called, &dr, LONG_MS))) {
        CHECK_EQ_INT(dr.status, RLK_LOCK_NOT_HELD);
        CHECK(dr.inside);
    }
    CHECK_EQ_INT(da.calls, 0);
    char v[64];
    get(adm, "ev:busy", v, sizeof v);
    CHECK_EQ_STR(v, "someone-else");

    /* Before any connection: the call-off ends at once, told by the
     * next rlk_client_handle. */
    rec_init(&da, cc);
    rec_init(&dr, cc);
    l = NULL;
    CHECK_EQ_INT(rlk_lock_acquire_async(cc, "ev:busy", &o, on_done, &da, &l), RLK_OK);
    CHECK_EQ_INT(rlk_lock_release_async(l, on_done, &dr), RLK_OK);
    CHECK_EQ_INT(dr.calls, 0);
    rlk_watch w[4];
    int64_t dl = -1;
    CHECK(rlk_client_watch(cc, w, 4, &dl) >= 0);
    CHECK_MSG(dl >= 0 && dl <= ts_now_ms(), "deadline in %lld ms", (long long)(dl - ts_now_ms()));
    in_handle = 1;
    rlk_client_handle(cc, NULL, 0);
    in_handle = 0;
    CHECK_EQ_INT(dr.calls, 1);
    CHECK_EQ_INT(dr.status, RLK_LOCK_NOT_HELD);
    CHECK(dr.inside);
    CHECK_EQ_INT(da.calls, 0);
out:
    CMD(adm, "DEL", "ev:busy");
    rlk_client_free(cl);
    rlk_client_free(cc);
}

/* In a handle's last callback (an acquire that failed, a release): the
 * calls that would use it are refused, not run on what has ended. */
typedef struct last_rec {
    done_rec d;
    int release_async, release, extend_async;
} last_rec;

static void on_last(void *ctx, rlk_lock *l, int status)
{
    last_rec *r = ctx;
    on_done(&r->d, l, status);
    r->release_async = rlk_lock_release_async(l, on_done, &r->d);
    r->release = rlk_lock_release(l);
    r->extend_async = rlk_lock_extend_async(l, 1000, RLK_EXTEND_ADD, on_done, &r->d);
}

static void test_last_callback(void)
{
    rlk_client *cl = client_for(url, 2000);
    if (!cl) return;
    CMD(adm, "SET", "ev:last", "someone-else", "PX", "60000");
    rlk_lock_options o;
    lock_opts(&o, 10000, 0, 0, NULL);
    last_rec r;
    memset(&r, 0, sizeof r);
    r.d.cl = cl;
    rlk_lock *l = NULL;
    CHECK_EQ_INT(rlk_lock_acquire_async(cl, "ev:last", &o, on_last, &r, &l), RLK_OK);
    if (CHECK(wait_done(cl, &r.d))) {
        CHECK_EQ_INT(r.d.calls, 1);
        CHECK_EQ_INT(r.d.status, RLK_LOCK_BUSY);
        CHECK_EQ_INT(r.release_async, RLK_ERR_INVALID);
        CHECK_EQ_INT(r.release, RLK_ERR_INVALID);
        CHECK_EQ_INT(r.extend_async, RLK_ERR_INVALID);
    }
    CMD(adm, "DEL", "ev:last");
    l = acquire_async(cl, "ev:last", &o);
    if (l) {
        memset(&r, 0, sizeof r);
        r.d.cl = cl;
        CHECK_EQ_INT(rlk_lock_release_async(l, on_last, &r), RLK_OK);
        if (CHECK(wait_done(cl, &r.d))) {
            CHECK_EQ_INT(r.d.status, RLK_OK);
            CHECK_EQ_INT(r.release_async, RLK_ERR_INVALID);
            CHECK_EQ_INT(r.release, RLK_ERR_INVALID);
            CHECK_EQ_INT(r.extend_async, RLK_ERR_INVALID);
        }
    }
    /* Nothing more comes for them. */
    loop lp;
    loop_init(&lp, 1, &cl);
    for (int64_t end = ts_now_ms() + 200; ts_now_ms() < end;) turn(&lp, end);
    CHECK_EQ_INT(r.d.calls, 1);
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "ev:last"), 0);
    rlk_client_free(cl);
}

/* A client that cannot go on (a URL that does not parse): watch says
 * so, and handle ends the acquire under way with that status. */
static void test_cannot_go_on(void)
{
    rlk_client *cl = client_for("redis://127.0.0.1:99999", 2000);
    if (!cl) return;
    rlk_lock_options o;
    lock_opts(&o, 10000, RLK_WAIT_FOREVER, 0, NULL);
    done_rec d;
    rec_init(&d, cl);
    rlk_lock *l = NULL;
    CHECK_EQ_INT(rlk_lock_acquire_async(cl, "ev:nowhere", &o, on_done, &d, &l), RLK_OK);
    rlk_watch w[4];
    int64_t dl;
    CHECK_EQ_INT(rlk_client_watch(cl, w, 4, &dl), RLK_ERR_URL);
    CHECK(rlk_client_errmsg(cl)[0] != '\0');
    in_handle = 1;
    CHECK_EQ_INT(rlk_client_handle(cl, NULL, 0), RLK_ERR_URL);
    in_handle = 0;
    if (EQ(d.calls, 1)) {
        CHECK_EQ_INT(d.status, RLK_ERR_URL);
        CHECK(d.inside);
        CHECK(d.msg[0] != '\0');
    }
    rlk_client_free(cl);
}

/* The watchdog thread and the loop's calls exclude each other. */
static void test_thread_refused(void)
{
    rlk_client *cl = client_for(url, 2000);
    if (!cl) return;
    rlk_watch w[4];
    int64_t dl;
    rlk_lock *l = NULL;
    rlk_lock_options o;
    lock_opts(&o, 10000, 0, 0, NULL);
    done_rec d;
    rec_init(&d, cl);
    if (EQ(rlk_client_watchdog_start(cl), RLK_OK)) {
        CHECK_EQ_INT(rlk_client_watch(cl, w, 4, &dl), RLK_ERR_INVALID);
        CHECK_EQ_INT(rlk_client_handle(cl, NULL, 0), RLK_ERR_INVALID);
        CHECK_EQ_INT(rlk_lock_acquire_async(cl, "ev:thread", &o, on_done, &d, &l), RLK_ERR_INVALID);
        CHECK(l == NULL);
        rlk_client_watchdog_stop(cl);
    }
    CHECK(rlk_client_watch(cl, w, 4, &dl) >= 0);
    CHECK_EQ_INT(rlk_client_watchdog_start(cl), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk_lock_acquire_async(cl, "ev:thread", &o, NULL, NULL, &l), RLK_ERR_INVALID);
    rlk_client_free(cl);
}

static int released_rec(void *ctx) { return ((done_rec *)ctx)->calls > 0; }

#ifndef RLK_HAVE_OPENSSL
/* Built without OpenSSL: a rediss:// client fails clearly, at once, as
 * a configuration error, through the poll adapter too. */
static void test_tls_poll_adapter(void)
{
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    cfg.conn.url = "rediss://127.0.0.1:6379";
    rlk_client *cl = rlk_client_new(&cfg);
    if (!CHECK(cl != NULL)) return;
    int r = RLK_OK;
    for (int i = 0; i < 20 && r == RLK_OK; i++) r = rlk_client_poll_once(cl, 10);
    CHECK_MSG(r != RLK_OK, "a rediss:// client went on without TLS");
    CHECK_MSG(strstr(rlk_client_errmsg(cl), "not compiled in") != NULL, "errmsg: %s",
              rlk_client_errmsg(cl));
    rlk_client_free(cl);
}
#else
/* A TLS server, through the poll adapter alone: the connect's TLS
 * handshake in steps, an acquire and a release. */
static void test_tls_poll_adapter(void)
{
    ts_options so;
    memset(&so, 0, sizeof so);
    so.tls_cert = ts_cert("server.crt");
    so.tls_key = ts_cert("server.key");
    so.tls_ca = ts_cert("ca.crt");
    if (!CHECK_MSG(so.tls_cert && so.tls_key && so.tls_ca, "no test certificates")) return;
    ts_server *s = ts_start(&so);
    if (!CHECK(s != NULL)) return;
    char u[64];
    snprintf(u, sizeof u, "rediss://127.0.0.1:%d", s->port);
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    cfg.conn.url = u;
    cfg.conn.tls.ca_file = ts_cert("ca.crt");
    rlk_client *cl = rlk_client_new(&cfg);
    rlk_conn_config ac;
    cfg_init(&ac, u);
    ac.tls.ca_file = ts_cert("ca.crt");
    rlk_conn *a = rlk_conn_new(&ac);
    if (!CHECK(cl && a) || !EQ(rlk_conn_connect(a), RLK_OK)) goto out;
    rlk_lock_options o;
    lock_opts(&o, 10000, 0, 1, NULL);
    done_rec d;
    rec_init(&d, cl);
    rlk_lock *l = NULL;
    CHECK_EQ_INT(rlk_lock_acquire_async(cl, "ev:tls", &o, on_done, &d, &l), RLK_OK);
    int polls = 0, fails = 0;
    for (int64_t end = ts_now_ms() + LONG_MS; !d.calls && ts_now_ms() < end; polls++) {
        in_handle = 1;
        fails += rlk_client_poll_once(cl, 100) != RLK_OK;
        in_handle = 0;
    }
    printf("    acquired in %d turns\n", polls);
    CHECK_EQ_INT(fails, 0);
    if (!EQ(d.calls, 1) || !CHECK_MSG(d.status == RLK_OK, "%d %s", d.status, d.msg))
        goto out;
    CHECK(polls >= 2); /* the handshake took turns: it did not block in one */
    const rlk_conn_info *info = rlk_client_info(cl);
    CHECK(info && info->tls_version && info->tls_version[0]);
    char v[160];
    get(a, "ev:tls", v, sizeof v);
    CHECK_EQ_STR(v, rlk_lock_token(l));
    rec_init(&d, cl);
    CHECK_EQ_INT(rlk_lock_release_async(l, on_done, &d), RLK_OK);
    for (int64_t end = ts_now_ms() + LONG_MS; !released_rec(&d) && ts_now_ms() < end;) {
        in_handle = 1;
        rlk_client_poll_once(cl, -1);
        in_handle = 0;
    }
    CHECK_EQ_INT(d.calls, 1);
    CHECK_EQ_INT(d.status, RLK_OK);
    CHECK_EQ_INT(CMD_INT(a, "EXISTS", "ev:tls"), 0);
out:
    rlk_conn_free(a);
    rlk_client_free(cl);
    ts_stop(s);
}
#endif

static int setup(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const char *wrap = getenv("RLK_WRAP");
    slow = getenv("RLK_TEST_SLOW") || (wrap && wrap[0]);
    srv = ts_start(NULL);
    if (!srv) {
        printf("FAIL redis-server did not start\n");
        return 1;
    }
    url_of(url, sizeof url, srv);
    adm = CONNECT(url);
    return adm ? TL_RUN_TESTS : 1;
}

static void teardown(void)
{
    rlk_conn_free(adm);
    ts_stop(srv);
}

TL_PROGRAM(setup, teardown,
           TL_TEST_NAMED("acquire, extend and release without waiting", test_acquire_extend_release),
           TL_TEST_NAMED("a paused server holds no call up", test_paused_server),
           TL_TEST_NAMED("a connect to a full queue holds no call up", test_full_backlog),
           TL_TEST_NAMED("a lost lock's on_lost from rlk_client_handle", test_lost_from_handle),
           TL_TEST_NAMED("an acquire called off", test_call_off),
           TL_TEST_NAMED("a handle in its last callback", test_last_callback),
           TL_TEST_NAMED("a client that cannot go on", test_cannot_go_on),
           TL_TEST_NAMED("the watchdog thread and the loop exclude each other", test_thread_refused),
           TL_TEST_NAMED("TLS through the poll adapter", test_tls_poll_adapter));
