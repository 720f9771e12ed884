/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The watchdog (rlk_client_tick, rlk_client_watchdog_start) against real
 * redis-server processes on free loopback ports, in tick and thread
 * mode: renewal (also of reentrant holds), loss and on_lost, killed,
 * frozen and restarted servers, batches of 10,000 locks, reconnects.
 *
 * Every wait is on a condition under a deadline.  Timing assertions have
 * margins (MARGIN) that grow under valgrind.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "fakeserver.h"
#include "locktest.h"
#include "resplock.h"
#include "server.h"

#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Watchdog, tick mode                                                 */

static void test_reentrant_watchdog(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    struct ticker t;
    rlk_lock *l;
    char got[16];
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    l = acquire(a, "re-wd", 600, RLK_LOCK_REENTRANT, 1, &lr, __LINE__);
    if (l) {
        ticker_init(&t, a, l, admin, "re-wd", &lr);
        tick_for(&t, 1500, 1);
        CHECK_EQ_INT(lost_calls(&lr), 0);
        CHECK_MSG(t.min_pttl >= (slow ? 100 : 200), "min PTTL %lld", t.min_pttl);
        CMD_STR(admin, got, "HGET", "re-wd", rlk_lock_token(l));
        CHECK_EQ_STR(got, "1");
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
        CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "re-wd"), 0);
    }
    rlk_client_free(a);
}

static void test_watchdog_tick(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    struct ticker t;
    rlk_lock *l;
    char got[256];
    int64_t t0;
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    CMD(admin, "DEL", "wd-tick");
    l = ACQ_WD(a, "wd-tick", 600, &lr);
    if (!l) goto out;
    ticker_init(&t, a, l, admin, "wd-tick", &lr);
    tick_for(&t, 3000, 1);
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_EQ_INT(rlk_lock_is_lost(l), 0);
    CHECK(rlk_lock_remaining_ms(l) > 0);
    CHECK(CMD_STR(admin, got, "GET", "wd-tick") == 1);
    CHECK_EQ_STR(got, rlk_lock_token(l));
    CHECK_MSG(t.min_pttl >= (slow ? 100 : 200), "PTTL fell to %lld (TTL 600)", t.min_pttl);
    /* Renewing every 200 ms: about 15 ticks, not a busy loop. */
    CHECK_MSG(t.ticks >= 10 && t.ticks <= 60, "%d ticks in 3 s", t.ticks);
    CHECK_EQ_INT(t.errors, 0);
    CHECK_MSG(t.next > 0 && t.next <= 200, "next_ms %lld", (long long)t.next);

    /* Without ticks it expires; the next tick reports it. */
    t0 = ts_now_ms();
    CHECK(wait_exists(admin, "wd-tick", 0, 600 + LONG_MS));
    CHECK(ts_now_ms() - t0 <= 600 + MARGIN);
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_EQ_INT(rlk_lock_remaining_ms(l), 0);
    CHECK_EQ_INT(rlk_client_tick(a, &t.next), RLK_OK);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    CHECK_EQ_INT(rlk_lock_is_lost(l), 1);
    CHECK_EQ_INT(t.next, -1);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_LOST);
out:
    rlk_client_free(a);
}

/* Tick mode calls on_lost with the client's internal lock released: the
 * callback may call into the client, here releasing the lost lock and
 * acquiring another; a callback under the lock would deadlock here. */
struct reentry {
    rlk_client *cl;
    int calls, release_status, acquire_status;
    rlk_lock *next;
};

static void lost_reenters(void *ctx, rlk_lock *l)
{
    struct reentry *e = ctx;
    e->calls++;
    e->release_status = rlk_lock_release(l);
    e->acquire_status = rlk_lock_acquire(e->cl, "wd-reenter-2", NULL, &e->next);
}

static void test_watchdog_on_lost_may_call_client(void)
{
    rlk_client *a = CLIENT();
    struct reentry e;
    rlk_lock_options o;
    rlk_lock *l;
    int64_t deadline;
    memset(&e, 0, sizeof e);
    if (!a) return;
    e.cl = a;
    CMD(admin, "DEL", "wd-reenter", "wd-reenter-2");
    rlk_lock_options_init(&o);
    o.ttl_ms = 600;
    o.watchdog = 1;
    o.on_lost = lost_reenters;
    o.ctx = &e;
    if (!CHECK(rlk_lock_acquire(a, "wd-reenter", &o, &l) == RLK_OK)) goto out;
    CMD(admin, "DEL", "wd-reenter");
    deadline = ts_now_ms() + 600 + LONG_MS;
    while (e.calls == 0 && ts_now_ms() < deadline) {
        int64_t next = -1;
        rlk_client_tick(a, &next);
        if (e.calls) break;
        struct pollfd p = {rlk_client_fd(a), POLLIN, 0};
        poll(&p, 1, (int)(next < 0 || next > 50 ? 50 : next));
    }
    CHECK_EQ_INT(e.calls, 1);
    CHECK_EQ_INT(e.release_status, RLK_LOCK_LOST);
    CHECK_EQ_INT(e.acquire_status, RLK_OK);
    if (e.next) CHECK_EQ_INT(rlk_lock_release(e.next), RLK_OK);
out:
    rlk_client_free(a);
}

static void test_watchdog_lost_on_delete(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    struct ticker t;
    rlk_lock *l;
    int64_t t_del;
    char got[32];
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    CMD(admin, "DEL", "wd-del", "wd-taken");
    l = ACQ_WD(a, "wd-del", 600, &lr);
    if (!l) goto out;
    ticker_init(&t, a, l, NULL, NULL, &lr);
    tick_for(&t, 300, 1);
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CMD(admin, "DEL", "wd-del");
    t_del = ts_now_ms();
    tick_for(&t, 600 + LONG_MS, 1);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    if (lost_calls(&lr) == 1) {
        CHECK_MSG(lr.at - t_del <= 200 + MARGIN, "on_lost %lld ms after the DEL",
                  (long long)(lr.at - t_del));
        CHECK_MSG(lr.at <= t.valid_est, "on_lost at %lld, the validity ended at %lld",
                  (long long)lr.at, (long long)t.valid_est);
        CHECK_EQ_INT(lr.is_lost, 1);
        CHECK_EQ_INT(lr.remaining, 0);
    }
    /* Once only, and nothing left to renew. */
    tick_for(&t, 300, 0);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    CHECK_EQ_INT(t.next, -1);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_LOST);

    /* Taken by someone else meanwhile: lost, and their key is intact. */
    memset(&lr, 0, sizeof lr);
    l = ACQ_WD(a, "wd-taken", 600, &lr);
    if (!l) goto out;
    CMD(admin, "SET", "wd-taken", "other", "PX", "10000");
    ticker_init(&t, a, l, NULL, NULL, &lr);
    tick_for(&t, 600 + LONG_MS, 1);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    CHECK(lr.at <= t.valid_est);
    /* Lost before its release, which says what it found. */
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_LOST);
    CHECK_MSG(ts_contains(rlk_client_errmsg(a), "someone else"), "message \"%s\"",
              rlk_client_errmsg(a));
    CHECK(CMD_STR(admin, got, "GET", "wd-taken") == 1);
    CHECK_EQ_STR(got, "other");
    CMD(admin, "DEL", "wd-taken");
out:
    rlk_client_free(a);
}

enum { SERVER_HALT, SERVER_FREEZE, SERVER_RESTART };

static void watchdog_server_trouble(int what)
{
    ts_server *s = ts_start(NULL);
    char url[64];
    rlk_client *a = NULL;
    rlk_conn *adm = NULL;
    struct lost_rec lr;
    struct ticker t;
    rlk_lock *l;
    int64_t t_event, ttl = what == SERVER_RESTART ? 3000 : 1000;
    memset(&lr, 0, sizeof lr);
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    a = CLIENT_EX(url, 0, 0, NULL);
    if (!a) goto out;
    l = ACQ_WD(a, "wd-trouble", ttl, &lr);
    if (!l) goto out;
    ticker_init(&t, a, l, NULL, NULL, &lr);
    tick_for(&t, ttl / 2, 1);
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_EQ_INT(t.errors, 0);
    if (what == SERVER_HALT) {
        CHECK_EQ_INT(ts_halt(s), 0);
    } else if (what == SERVER_FREEZE) {
        CHECK_EQ_INT(kill(s->pid, SIGSTOP), 0);
    } else {
        CHECK_EQ_INT(ts_restart(s), 0);
    }
    t_event = ts_now_ms();
    t.ticks = 0;
    tick_for(&t, ttl + LONG_MS, 1);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    if (lost_calls(&lr) == 1) {
        printf("    on_lost %lld ms after the event, %lld ms before the validity ended "
               "(%d ticks)\n", (long long)(lr.at - t_event), (long long)(t.valid_est - lr.at),
               t.ticks);
        /* Before the validity ends, so the holder can still stop. */
        CHECK_MSG(lr.at < t.valid_est, "on_lost at +%lld ms, validity ended at +%lld ms",
                  (long long)(lr.at - t_event), (long long)(t.valid_est - t_event));
        if (what == SERVER_RESTART)
            CHECK_MSG(lr.at - t_event <= ttl / 3 + MARGIN,
                      "lost %lld ms after the restart", (long long)(lr.at - t_event));
    }
    CHECK_MSG(t.ticks < 100, "%d ticks until the loss: a busy loop", t.ticks);
    if (what != SERVER_RESTART) CHECK(t.errors > 0);
    if (what == SERVER_FREEZE) kill(s->pid, SIGCONT);
    if (what == SERVER_RESTART) {
        adm = CONNECT(url);
        CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "wd-trouble"), 0);
    }
out:
    rlk_client_free(a);
    rlk_conn_free(adm);
    ts_stop(s);
}

static void test_watchdog_server_killed(void) { watchdog_server_trouble(SERVER_HALT); }
static void test_watchdog_server_frozen(void) { watchdog_server_trouble(SERVER_FREEZE); }
static void test_watchdog_server_restarted(void) { watchdog_server_trouble(SERVER_RESTART); }

/* A tick never waits for the server: with the server frozen (SIGSTOP),
 * the tick that finds the renewal due sends it and returns at once, as
 * do the ticks after it; once the server runs again, ticks driven by
 * poll on the client's fd read the reply, and the lock is renewed. */
static void test_tick_does_not_block(void)
{
    ts_server *s = ts_start(NULL);
    char url[64];
    rlk_client *a = NULL;
    rlk_conn *adm = NULL;
    struct lost_rec lr;
    rlk_lock *l;
    int frozen = 0, renewed = 0, ticks = 0;
    int64_t next = -1, due, t0, took, before, deadline;
    const int64_t bound = slow ? 500 : 50;
    memset(&lr, 0, sizeof lr);
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    a = CLIENT_EX(url, 0, 0, NULL);
    adm = CONNECT(url);
    if (!a || !adm) goto out;
    l = ACQ_WD(a, "wd-nonblocking", 3000, &lr); /* renewed at 1 s, lost at 2.67 s */
    if (!l) goto out;
    CHECK_EQ_INT(rlk_client_tick(a, &next), RLK_OK);
    if (!CHECK(next > 0)) goto out;
    due = ts_now_ms() + next;
    while (ts_now_ms() < due) ts_pause_ms(5);
    frozen = CHECK(kill(s->pid, SIGSTOP) == 0);
    before = ts_now_ms() + rlk_lock_remaining_ms(l);
    t0 = ts_now_ms();
    CHECK_EQ_INT(rlk_client_tick(a, &next), RLK_OK);
    took = ts_now_ms() - t0;
    printf("    tick with the renewal due and the server frozen: %lld ms\n", (long long)took);
    CHECK_MSG(took < bound, "the tick took %lld ms (bound %lld)", (long long)took,
              (long long)bound);
    /* Asked back by the time the lock would be reported lost. */
    CHECK_MSG(next > 0 && next <= rlk_lock_remaining_ms(l), "next %lld ms", (long long)next);
    t0 = ts_now_ms();
    CHECK_EQ_INT(rlk_client_tick(a, &next), RLK_OK);
    CHECK(ts_now_ms() - t0 < bound);
    /* Frozen a while longer, well within the validity. */
    deadline = ts_now_ms() + 300;
    while (ts_now_ms() < deadline) ts_pause_ms(10);
    if (frozen) CHECK(kill(s->pid, SIGCONT) == 0);
    frozen = 0;
    deadline = ts_now_ms() + LONG_MS;
    while (!renewed && ts_now_ms() < deadline) {
        struct pollfd p = {rlk_client_fd(a), POLLIN, 0};
        poll(&p, 1, (int)(next >= 0 && next < 100 ? next : 100));
        t0 = ts_now_ms();
        CHECK_EQ_INT(rlk_client_tick(a, &next), RLK_OK);
        CHECK(ts_now_ms() - t0 < bound);
        ticks++;
        renewed = ts_now_ms() + rlk_lock_remaining_ms(l) > before + 500;
    }
    CHECK_MSG(renewed, "not renewed after the server resumed (%d ticks)", ticks);
    CHECK_EQ_INT(rlk_lock_is_lost(l), 0);
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK(CMD_INT(adm, "PTTL", "wd-nonblocking") > 2000);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
out:
    if (frozen) kill(s->pid, SIGCONT);
    rlk_client_free(a);
    rlk_conn_free(adm);
    ts_stop(s);
}

/* When a lock is known held until (monotonic ms, give or take one). */
static int64_t valid_end(const rlk_lock *l) { return ts_now_ms() + rlk_lock_remaining_ms(l); }

/* Ticks as an event loop would (poll on the fd for the time the last
 * tick asked for) until every one of the n locks was renewed by a round
 * sent after this call began: its validity ends later than a renewal
 * sent now would give (valid_ms: its length; 2 ms for the two clocks
 * read apart).  A round already on its way when the call began does not
 * count: it is read to its end, and the next one is waited for, so that
 * none is in flight when this returns (the first lock renewed says
 * nothing of the others, and a lock renewed by a round whose tail is
 * still unanswered would let its tail be counted with the next).  *took
 * is the time spent inside the ticks (they never wait for the server). */
static int tick_until_round(rlk_client *cl, rlk_lock *const *l, int n, int64_t valid_ms, int64_t ms,
                            int64_t *took)
{
    int64_t t_begin = ts_now_ms(), deadline = t_begin + ms, next = 0;
    int done = 0;
    *took = 0;
    while (ts_now_ms() < deadline) {
        struct pollfd p = {rlk_client_fd(cl), POLLIN, 0};
        int64_t t0;
        poll(&p, 1, (int)(next >= 0 && next < 1000 ? next : 1000));
        t0 = ts_now_ms();
        if (rlk_client_tick(cl, &next) != RLK_OK) break;
        *took += ts_now_ms() - t0;
        while (done < n && valid_end(l[done]) >= t_begin + valid_ms + 2) done++;
        if (done == n) return 1;
    }
    return 0;
}

#define BATCH_LOCKS 10000

static void test_watchdog_batching(void)
{
    ts_server *s = ts_start(NULL);
    rlk_client_config cfg;
    rlk_client *cl = NULL;
    rlk_conn *adm = NULL;
    rlk_lock **locks = calloc(BATCH_LOCKS, sizeof *locks);
    rlk_resp_value *v;
    char url[64], name[32];
    int i, n = 0, lost = 0;
    int64_t t0, t_round = 0, valid_ms;
    long long calls;
    if (!CHECK(s != NULL) || !locks) goto out;
    url_of(url, sizeof url, s);
    adm = CONNECT(url);
    client_cfg(&cfg, url);
    /* TTL 30 s: a round every 3 s, some ten times what a round of 10000
     * takes under valgrind (265 ms) or natively on a busy machine (283
     * ms): at 300 ms the next round could be on its way before the
     * counts below were read, and be counted with the wrong one.  (At
     * 1.5 s, ASan's build in a CI run beside other tests counted 15
     * script calls in a round of 10: half of the next round was sent
     * before the first one's last reply was read.) */
    cfg.renew_divisor = 10;
    valid_ms = rlk_plan_valid_ms(&cfg, 30000);
    cl = CLIENT_WITH(&cfg);
    if (!cl || !adm) goto out;
    t0 = ts_now_ms();
    for (i = 0; i < BATCH_LOCKS; i++) {
        rlk_lock_options o;
        int rc;
        snprintf(name, sizeof name, "batch:%d", i);
        opts(&o, 30000, 0, RLK_LOCK_SIMPLE, 1, NULL);
        rc = rlk_lock_acquire(cl, name, &o, &locks[i]);
        if (rc != RLK_OK) {
            CHECK_MSG(0, "acquire %s: %d %s", name, rc, rlk_client_errmsg(cl));
            break;
        }
        n++;
    }
    printf("    %d locks acquired in %lld ms\n", n, (long long)(ts_now_ms() - t0));
    if (n != BATCH_LOCKS) goto out;

    /* Rounds may have come while the locks were taken (a round renews
     * every lock of its connection once any is due), and one may be on
     * its way: one whole round sent after that is waited for first, so
     * that the next comes a renewal period (3 s) after it, with
     * nothing in flight while the counts are reset (a round's tail
     * still unanswered was counted with the next: 10403 SETs on a busy
     * machine). */
    CHECK(tick_until_round(cl, locks, n, valid_ms, LONG_MS, &t_round));
    /* Where the server has SET IFEQ (Valkey 8.1+, Redis 8.4+), a round
     * renews each simple lock by one SET IFEQ PX, no script; else by the
     * renewal script, 1000 locks a call.  With the scripts flushed, the
     * next round meets NOSCRIPT and sends the renewal script itself
     * (EVAL), which loads it. */
    int native = server_has_set_ifeq(adm);
    printf("    renewal by %s\n", native ? "SET IFEQ PX" : "the script");
    v = CMD(adm, "SCRIPT", "FLUSH");
    CHECK(v && v->type == RLK_RESP_SIMPLE);
    reset_stats(adm);
    CHECK(tick_until_round(cl, locks, n, valid_ms, LONG_MS, &t_round));
    calls = stat_calls(adm, SCRIPT_CALLS);
    if (native) {
        CHECK_MSG(calls == 0, "first round: %lld script calls", calls);
        CHECK_EQ_INT(stat_calls(adm, "set"), BATCH_LOCKS);
        CHECK_EQ_INT(stat_calls(adm, "eval"), 0);
    } else {
        CHECK_MSG(calls == 10 || calls == 20, "first round: %lld script calls", calls);
        CHECK(stat_calls(adm, "eval") <= 10);
    }
    CHECK(stat_calls(adm, "script") <= 1);

    /* Age every key, then one more round: 10 script calls of 1000
     * locks each (or a SET IFEQ each), and every key renewed. */
    v = CMD(adm, "EVAL",
            "for i = 0, 9999 do redis.call('pexpire', 'batch:' .. i, 20000) end return 1", "0");
    CHECK(v && v->type == RLK_RESP_INTEGER);
    reset_stats(adm);
    t0 = ts_now_ms();
    CHECK(tick_until_round(cl, locks, n, valid_ms, LONG_MS, &t_round));
    CHECK_EQ_INT(stat_calls(adm, SCRIPT_CALLS), native ? 0 : (BATCH_LOCKS + 999) / 1000);
    if (native) CHECK_EQ_INT(stat_calls(adm, "set"), BATCH_LOCKS);
    CHECK_EQ_INT(stat_calls(adm, "eval"), 0);
    CHECK_EQ_INT(stat_calls(adm, "script"), 0);
    printf("    renewal round of %d locks: %lld ms in ticks, %lld ms until applied\n", n,
           (long long)t_round, (long long)(ts_now_ms() - t0));
    v = CMD(adm, "EVAL",
            "local n = 0 for i = 0, 9999 do if redis.call('pttl', 'batch:' .. i) > 25000 "
            "then n = n + 1 end end return n",
            "0");
    CHECK_MSG(v && v->type == RLK_RESP_INTEGER && v->integer == BATCH_LOCKS,
              "%lld keys renewed of %d", v ? (long long)v->integer : -1LL, BATCH_LOCKS);
    for (i = 0; i < n; i++) lost += rlk_lock_is_lost(locks[i]);
    CHECK_EQ_INT(lost, 0);
out:
    rlk_client_free(cl); /* frees the handles without releasing */
    rlk_conn_free(adm);
    free(locks);
    ts_stop(s);
}

/* A reconnect makes the watchdog check every lock at once: the server
 * may be a new one that lost its keys. */
static void test_reconnect_rechecks(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    struct ticker t;
    rlk_lock *l;
    rlk_lock_status st;
    char id[32];
    long long pttl;
    int64_t t_kill;
    uint64_t gen;
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    CMD(admin, "DEL", "reconn");
    l = ACQ_WD(a, "reconn", 30000, &lr);
    if (!l) goto out;
    ticker_init(&t, a, l, NULL, NULL, &lr);
    tick_for(&t, 50, 0);
    CHECK_MSG(t.next > 5000, "next_ms %lld", (long long)t.next);

    /* Killed while idle: the fd polls readable, the tick notices,
     * reconnects and renews (nothing was due for 10 s). */
    gen = rlk_client_generation(a);
    CMD(admin, "PEXPIRE", "reconn", "20000");
    snprintf(id, sizeof id, "%lld", (long long)rlk_client_info(a)->client_id);
    CHECK_EQ_INT(CMD_INT(admin, "CLIENT", "KILL", "ID", id), 1);
    t_kill = ts_now_ms();
    t.ticks = 0;
    pttl = 0;
    while (ts_now_ms() - t_kill < 2000) {
        tick_for(&t, 100, 0);
        pttl = CMD_INT(admin, "PTTL", "reconn");
        if (pttl > 25000) break;
    }
    CHECK_MSG(pttl > 25000, "not renewed after the reconnect: PTTL %lld", pttl);
    CHECK_MSG(t.ticks <= 20, "%d ticks: a busy loop on a closed connection", t.ticks);
    CHECK_EQ_U64(rlk_client_generation(a), gen + 1);
    CHECK_EQ_INT(lost_calls(&lr), 0);

    /* Reconnected by another call: the next tick renews at once. */
    CMD(admin, "PEXPIRE", "reconn", "20000");
    snprintf(id, sizeof id, "%lld", (long long)rlk_client_info(a)->client_id);
    CHECK_EQ_INT(CMD_INT(admin, "CLIENT", "KILL", "ID", id), 1);
    CHECK_EQ_INT(rlk_lock_get_status(a, "something-else", &st), RLK_OK);
    CHECK_EQ_U64(rlk_client_generation(a), gen + 2);
    CHECK_EQ_INT(rlk_client_tick(a, &t.next), RLK_OK);
    pttl = CMD_INT(admin, "PTTL", "reconn");
    CHECK_MSG(pttl > 25000, "not renewed after the reconnect: PTTL %lld", pttl);

    /* The key vanished with the connection: lost at once. */
    CMD(admin, "DEL", "reconn");
    snprintf(id, sizeof id, "%lld", (long long)rlk_client_info(a)->client_id);
    CHECK_EQ_INT(CMD_INT(admin, "CLIENT", "KILL", "ID", id), 1);
    t_kill = ts_now_ms();
    tick_for(&t, 2000, 1);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    CHECK_MSG(lr.at - t_kill < MARGIN, "lost %lld ms after the kill", (long long)(lr.at - t_kill));
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_LOST);
out:
    rlk_client_free(a);
}

#ifdef RLK_HAVE_OPENSSL
/* Over TLS a reconnect has a handshake to wait for.  The event loop
 * polls rlk_client_fd alone, which a handshake under way does not have
 * yet: the tick that reconnects waits for it (as rlk_client_tick says),
 * and a tick loop does not spin meanwhile. */
static void test_tick_reconnects_tls(void)
{
    ts_options o;
    memset(&o, 0, sizeof o);
    if (!CHECK(ts_certs_dir() != NULL)) return;
    o.tls_cert = ts_cert("server.crt");
    o.tls_key = ts_cert("server.key");
    o.tls_ca = ts_cert("ca.crt");
    ts_server *s = ts_start(&o);
    if (!CHECK(s != NULL)) return;
    char url[64], id[32];
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", s->port);
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    cfg.conn.tls.ca_file = ts_cert("ca.crt");
    rlk_conn_config cc;
    cfg_init(&cc, url);
    cc.tls.ca_file = ts_cert("ca.crt");
    rlk_conn *adm = rlk_conn_new(&cc);
    rlk_client *a = CLIENT_WITH(&cfg);
    struct lost_rec lr;
    struct ticker t;
    memset(&lr, 0, sizeof lr);
    if (!a || !CHECK(adm && rlk_conn_connect(adm) == RLK_OK)) goto out;
    rlk_lock *l = ACQ_WD(a, "tick-tls", 30000, &lr);
    if (!l) goto out;
    ticker_init(&t, a, l, NULL, NULL, &lr);
    tick_for(&t, 50, 0);
    uint64_t gen = rlk_client_generation(a);
    snprintf(id, sizeof id, "%lld", (long long)rlk_client_info(a)->client_id);
    CHECK_EQ_INT(CMD_INT(adm, "CLIENT", "KILL", "ID", id), 1);
    t.ticks = 0;
    tick_for(&t, 500, 0);
    CHECK_EQ_U64(rlk_client_generation(a), gen + 1);
    CHECK(rlk_client_fd(a) >= 0);
    CHECK_MSG(t.ticks <= 20, "%d ticks: a busy loop while the handshake went on", t.ticks);
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
out:
    rlk_client_free(a);
    rlk_conn_free(adm);
    ts_stop(s);
}
#endif

/* ------------------------------------------------------------------ */
/* Watchdog, thread mode                                               */

static void test_watchdog_thread(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    rlk_lock *l;
    long long min_pttl = LLONG_MAX, v;
    int64_t t0, est = 0, t_del, deadline;
    char got[256];
    int i, errors = 0;
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    CMD(admin, "DEL", "wd-thread");
    CHECK_EQ_INT(rlk_client_watchdog_start(a), RLK_OK);
    CHECK_EQ_INT(rlk_client_watchdog_start(a), RLK_OK); /* already running */
    /* Taken after the thread went to sleep: it must still be renewed
     * in time (TTL shorter than the thread's idle wait). */
    l = ACQ_WD(a, "wd-thread", 600, &lr);
    if (!l) goto out;
    t0 = ts_now_ms();
    while (ts_now_ms() - t0 < 3000 && !lost_calls(&lr)) {
        v = CMD_INT(admin, "PTTL", "wd-thread");
        if (v < min_pttl) min_pttl = v;
        ts_pause_ms(20); /* sampling interval */
    }
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_MSG(min_pttl >= (slow ? 100 : 200), "PTTL fell to %lld (TTL 600)", min_pttl);
    CHECK(CMD_STR(admin, got, "GET", "wd-thread") == 1);
    CHECK_EQ_STR(got, rlk_lock_token(l));
    CHECK(rlk_lock_remaining_ms(l) > 0);

    /* The client's calls from this thread while the watchdog runs. */
    for (i = 0; i < 30; i++) {
        rlk_lock_status st;
        rlk_lock *o = ACQ_WD(a, "wd-thread-other", 1000, NULL);
        if (!o) {
            errors++;
            break;
        }
        if (rlk_lock_extend(o, 500, RLK_EXTEND_ADD) != RLK_OK) errors++;
        if (rlk_lock_get_status(a, "wd-thread-other", &st) != RLK_OK || !st.held) errors++;
        if (rlk_lock_release(o) != RLK_OK) errors++;
    }
    CHECK_EQ_INT(errors, 0);
    CHECK_EQ_INT(lost_calls(&lr), 0);

    /* Deleted: on_lost comes from the watchdog thread, in time. */
    CMD(admin, "DEL", "wd-thread");
    t_del = ts_now_ms();
    est = t_del + rlk_lock_remaining_ms(l);
    deadline = t_del + 600 + LONG_MS;
    while (!lost_calls(&lr) && ts_now_ms() < deadline) ts_pause_ms(2);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    if (lost_calls(&lr) == 1) {
        CHECK(!pthread_equal(lr.thread, pthread_self()));
        CHECK_MSG(lr.at - t_del <= 200 + MARGIN, "on_lost %lld ms after the DEL",
                  (long long)(lr.at - t_del));
        CHECK_MSG(lr.at <= est, "on_lost at %lld, validity ended at %lld", (long long)lr.at,
                  (long long)est);
    }
    CHECK_EQ_INT(rlk_lock_is_lost(l), 1);
    t0 = ts_now_ms();
    rlk_client_watchdog_stop(a);
    CHECK_MSG(ts_now_ms() - t0 < 100 + MARGIN, "stop took %lld ms", (long long)(ts_now_ms() - t0));
    rlk_client_watchdog_stop(a); /* not running: nothing */
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_LOST);

    /* Started again, and freed while running. */
    CHECK_EQ_INT(rlk_client_watchdog_start(a), RLK_OK);
    l = ACQ_WD(a, "wd-thread", 600, NULL);
    (void)l;
out:
    rlk_client_free(a);
}

/* The server goes away under the watchdog thread: on_lost from the
 * thread, before the validity ends. */
static void test_watchdog_thread_server_killed(void)
{
    ts_server *s = ts_start(NULL);
    char url[64];
    rlk_client *a = NULL;
    struct lost_rec lr;
    rlk_lock *l;
    int64_t t0, t_halt, est, deadline;
    memset(&lr, 0, sizeof lr);
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    a = CLIENT_EX(url, 0, 0, NULL);
    if (!a) goto out;
    CHECK_EQ_INT(rlk_client_watchdog_start(a), RLK_OK);
    l = ACQ_WD(a, "wdt-killed", 1000, &lr);
    if (!l) goto out;
    t0 = ts_now_ms();
    while (ts_now_ms() - t0 < 500 && !lost_calls(&lr)) ts_pause_ms(10); /* held meanwhile */
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_EQ_INT(ts_halt(s), 0);
    t_halt = ts_now_ms();
    est = t_halt + rlk_lock_remaining_ms(l); /* no renewal can succeed from here */
    deadline = t_halt + 1000 + LONG_MS;
    while (!lost_calls(&lr) && ts_now_ms() < deadline) ts_pause_ms(2);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    if (lost_calls(&lr) == 1) {
        CHECK(!pthread_equal(lr.thread, pthread_self()));
        CHECK_MSG(lr.at < est, "on_lost at +%lld ms, validity ended at +%lld ms",
                  (long long)(lr.at - t_halt), (long long)(est - t_halt));
    }
    CHECK_EQ_INT(rlk_lock_remaining_ms(l), 0);
    rlk_client_watchdog_stop(a);
    /* Lost before: so it says, with what the release found. */
    CHECK_MSG(rlk_lock_release(l) == RLK_LOCK_LOST &&
                  ts_contains(rlk_client_errmsg(a), "Connection refused"),
              "release with the server gone: %s", rlk_client_errmsg(a));
out:
    rlk_client_free(a);
    ts_stop(s);
}

/* A SET-extend to a short time while the thread sleeps: renewed in time
 * for the new TTL. */
static void test_watchdog_thread_extend_shorter(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    rlk_lock *l;
    long long min_pttl = LLONG_MAX, v;
    int64_t t0;
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    CMD(admin, "DEL", "wd-short");
    l = ACQ_WD(a, "wd-short", 30000, &lr);
    if (!l) goto out;
    CHECK_EQ_INT(rlk_client_watchdog_start(a), RLK_OK);
    CHECK_EQ_INT(rlk_lock_extend(l, 600, RLK_EXTEND_SET), RLK_OK);
    t0 = ts_now_ms();
    while (ts_now_ms() - t0 < 2000 && !lost_calls(&lr)) {
        v = CMD_INT(admin, "PTTL", "wd-short");
        if (v < min_pttl) min_pttl = v;
        ts_pause_ms(20); /* sampling interval */
    }
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_MSG(min_pttl >= (slow ? 100 : 200), "PTTL fell to %lld (TTL 600)", min_pttl);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
out:
    rlk_client_free(a);
}

/* ------------------------------------------------------------------ */
/* A listener whose server does not answer                              */

/* The client's first connection goes to the shared server through a
 * proxy; every one after it is accepted and then neither read nor
 * answered, until the test lets it go (it is closed then). */
struct stall_after_first {
    struct proxy px;
    int accepted; /* atomic */
    int stalled;  /* atomic: connections held now */
    int let_go;   /* atomic: set by the test */
};

static void stall_after_first(fake_conn *fc, void *arg)
{
    struct stall_after_first *s = arg;
    if (__atomic_fetch_add(&s->accepted, 1, __ATOMIC_SEQ_CST) == 0) {
        proxy_conn(fc, &s->px);
        return;
    }
    __atomic_add_fetch(&s->stalled, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&s->let_go, __ATOMIC_SEQ_CST))
        if (fake_pause(fc, 5) < 0) break;
    __atomic_sub_fetch(&s->stalled, 1, __ATOMIC_SEQ_CST);
}

/* A listener whose queue holds one connection: a thread accepts the
 * client's first and passes it on to the shared server, accepting no
 * other; the test then fills the queue, so that a connect after that
 * is left with its SYN unanswered. */
struct one_proxy {
    int lfd, port;
    int stop; /* atomic */
    int fillers[8], nfill;
    pthread_t th;
};

static void *one_proxy_main(void *arg)
{
    struct one_proxy *op = arg;
    struct sockaddr_in a;
    char buf[65536];
    int cfd = -1, up, lfd = op->lfd; /* closed by the test once it is let go */
    while (cfd < 0 && !__atomic_load_n(&op->stop, __ATOMIC_SEQ_CST)) {
        struct pollfd p = {lfd, POLLIN, 0};
        if (poll(&p, 1, 20) > 0 && (p.revents & POLLIN)) cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    }
    if (cfd < 0) return NULL;
    up = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)srv->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (up >= 0 && connect(up, (struct sockaddr *)&a, sizeof a) == 0) {
        while (!__atomic_load_n(&op->stop, __ATOMIC_SEQ_CST)) {
            struct pollfd p[2] = {{cfd, POLLIN, 0}, {up, POLLIN, 0}};
            ssize_t n;
            if (poll(p, 2, 20) <= 0) continue;
            if (p[0].revents) {
                if ((n = recv(cfd, buf, sizeof buf, 0)) <= 0) break;
                if (send(up, buf, (size_t)n, MSG_NOSIGNAL) != n) break;
            }
            if (p[1].revents) {
                if ((n = recv(up, buf, sizeof buf, 0)) <= 0) break;
                if (send(cfd, buf, (size_t)n, MSG_NOSIGNAL) != n) break;
            }
        }
    }
    if (up >= 0) close(up);
    close(cfd);
    return NULL;
}

static int one_proxy_start(struct one_proxy *op)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    memset(op, 0, sizeof *op);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    op->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (op->lfd < 0 || bind(op->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(op->lfd, 0) != 0 || getsockname(op->lfd, (struct sockaddr *)&sa, &len) != 0 ||
        pthread_create(&op->th, NULL, one_proxy_main, op) != 0) {
        if (op->lfd >= 0) close(op->lfd);
        op->lfd = -1;
        return 0;
    }
    op->port = ntohs(sa.sin_port);
    return 1;
}

/* Connects to the listener until a connect stays pending: 1 then. */
static int one_proxy_fill(struct one_proxy *op)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)op->port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    while (op->nfill < 8) {
        struct pollfd p;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) return 0;
        op->fillers[op->nfill++] = fd;
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) continue;
        p.fd = fd;
        p.events = POLLOUT;
        if (poll(&p, 1, 300) == 0) return 1;
    }
    return 0;
}

/* The listener goes: a connect pending on it is refused at its next
 * SYN. */
static void one_proxy_close_listener(struct one_proxy *op)
{
    for (int i = 0; i < op->nfill; i++) close(op->fillers[i]);
    op->nfill = 0;
    if (op->lfd >= 0) close(op->lfd);
    op->lfd = -1;
}

static void one_proxy_stop(struct one_proxy *op)
{
    __atomic_store_n(&op->stop, 1, __ATOMIC_SEQ_CST);
    pthread_join(op->th, NULL);
    one_proxy_close_listener(op);
}

/* This host's sockets whose connect to 127.0.0.1:port is pending (SYN
 * sent, state 02 in /proc/net/tcp); -1 when that cannot be read. */
static int syn_sent_to(int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    char line[512], rem[16];
    unsigned rport, st;
    int n = 0;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, " %*d: %*[0-9A-Fa-f]:%*x %15[0-9A-Fa-f]:%x %x", rem, &rport, &st) == 3 &&
            strcmp(rem, "0100007F") == 0 && (int)rport == port && st == 2)
            n++;
    fclose(f);
    return n;
}

enum { LISTENER_SILENT, LISTENER_QUEUE_FULL };

/* A RESP2 wait that finds the lock busy opens a listener of its own (a
 * connection subscribed to the lock's channels).  One whose server
 * accepts and never answers, or whose connect is never answered (a full
 * queue), must not hold back the renewal of the locks the client holds,
 * in thread mode (the wait's caller and the thread share the client's
 * mutex) as in tick mode (the wait's own turns renew them): while it
 * hangs, each held lock's PTTL is seen going up again, three times, and
 * never runs out, and none is reported lost.  Once the listener's
 * connection fails, the wait goes on by re-checks and gets the lock
 * when it is freed. */
static void listener_stalls(int thread, int how)
{
    const int64_t ttl = 1500; /* renewed every 500 ms */
    const char *held[2] = {"wd-lst-1", "wd-lst-2"}, *busy = "wd-lst-busy";
    struct stall_after_first st;
    struct one_proxy op;
    struct lost_rec lr[2];
    struct waiter w;
    fake_server *fs = NULL;
    char url[64];
    rlk_client *a = NULL, *b = NULL;
    rlk_lock *l[2] = {NULL, NULL}, *lb = NULL;
    long long prev[2], min_pttl[2] = {LLONG_MAX, LLONG_MAX};
    int rises[2] = {0, 0}, started = 0, joined = 0, proxied = 0, pending = 0, hung = 0, i;
    int64_t t0, deadline;
    memset(&st, 0, sizeof st);
    memset(lr, 0, sizeof lr);
    if (how == LISTENER_SILENT) {
        st.px.upstream_port = srv->port;
        fs = fake_start(stall_after_first, &st);
        if (!CHECK(fs != NULL)) return;
        snprintf(url, sizeof url, "redis://127.0.0.1:%d", fake_port(fs));
    } else {
        if (!CHECK(one_proxy_start(&op))) return;
        proxied = 1;
        snprintf(url, sizeof url, "redis://127.0.0.1:%d", op.port);
    }
    CMD(admin, "DEL", held[0], held[1], busy);
    a = CLIENT_EX(url, 2, 100, NULL);
    b = CLIENT();
    if (!a || !b) goto out;
    if (thread && !CHECK(rlk_client_watchdog_start(a) == RLK_OK)) goto out;
    for (i = 0; i < 2; i++)
        if (!(l[i] = ACQ_WD(a, held[i], ttl, &lr[i]))) goto out;
    if (!(lb = ACQ(b, busy, 60000))) goto out;
    if (how == LISTENER_QUEUE_FULL) {
        if (!CHECK_MSG(one_proxy_fill(&op), "the listen queue never filled")) goto out;
        pending = syn_sent_to(op.port);
        if (!CHECK(pending >= 1)) goto out;
    }
    if (!waiter_start(&w, a, busy, 10000, 20000, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    deadline = ts_now_ms() + LONG_MS;
    for (;;) {
        hung = how == LISTENER_SILENT ? __atomic_load_n(&st.stalled, __ATOMIC_SEQ_CST) == 1
                                      : syn_sent_to(op.port) == pending + 1;
        if (hung || waiter_done(&w) || ts_now_ms() >= deadline) break;
        ts_pause_ms(2);
    }
    if (!CHECK_MSG(hung, "the wait's listener did not connect (waiter done: %d)", waiter_done(&w)))
        goto out;
    for (i = 0; i < 2; i++) prev[i] = CMD_INT(admin, "PTTL", held[i]);
    t0 = ts_now_ms();
    deadline = t0 + 4 * ttl + MARGIN;
    while ((rises[0] < 3 || rises[1] < 3) && ts_now_ms() < deadline) {
        for (i = 0; i < 2; i++) {
            long long v = CMD_INT(admin, "PTTL", held[i]);
            if (v < min_pttl[i]) min_pttl[i] = v;
            if (v > prev[i]) rises[i]++;
            prev[i] = v;
        }
        if (min_pttl[0] <= 0 || min_pttl[1] <= 0 || lost_calls(&lr[0]) || lost_calls(&lr[1]))
            break;
        ts_pause_ms(20); /* sampling interval */
    }
    printf("    %s mode, listener %s for %lld ms: renewals %d and %d, min PTTL %lld and %lld\n",
           thread ? "thread" : "tick", how == LISTENER_SILENT ? "unanswered" : "not let in",
           (long long)(ts_now_ms() - t0), rises[0], rises[1], min_pttl[0], min_pttl[1]);
    /* All that while the wait was still waiting for its listener. */
    CHECK(!waiter_done(&w));
    if (how == LISTENER_SILENT) CHECK_EQ_INT(__atomic_load_n(&st.stalled, __ATOMIC_SEQ_CST), 1);
    else CHECK_EQ_INT(syn_sent_to(op.port), pending + 1);
    for (i = 0; i < 2; i++) {
        CHECK_MSG(rises[i] >= 3, "%s renewed %d times while the listener hung (TTL %lld)",
                  held[i], rises[i], (long long)ttl);
        CHECK_MSG(min_pttl[i] > 0, "%s ran out (PTTL %lld) while the listener hung", held[i],
                  min_pttl[i]);
        CHECK_EQ_INT(lost_calls(&lr[i]), 0);
    }

    /* Let go: the listener's connection fails; the wait re-checks. */
    if (how == LISTENER_SILENT) __atomic_store_n(&st.let_go, 1, __ATOMIC_SEQ_CST);
    else one_proxy_close_listener(&op);
    CHECK_EQ_INT(rlk_lock_release(lb), RLK_OK);
    lb = NULL;
    deadline = ts_now_ms() + LONG_MS;
    while (!waiter_done(&w) && ts_now_ms() < deadline) ts_pause_ms(5);
    CHECK(waiter_done(&w));
    pthread_join(w.th, NULL);
    joined = 1;
    CHECK_MSG(w.rc == RLK_OK, "the wait ended with %d: %s", w.rc, w.err);
    if (w.l) CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    for (i = 0; i < 2; i++) {
        CHECK_EQ_INT(rlk_lock_is_lost(l[i]), 0);
        CHECK_EQ_INT(rlk_lock_release(l[i]), RLK_OK);
        l[i] = NULL;
        CHECK_EQ_INT(lost_calls(&lr[i]), 0);
    }
out:
    __atomic_store_n(&st.let_go, 1, __ATOMIC_SEQ_CST);
    if (proxied) one_proxy_close_listener(&op);
    if (lb) rlk_lock_release(lb);
    if (started && !joined) {
        pthread_join(w.th, NULL);
        if (w.l) rlk_lock_release(w.l);
    }
    for (i = 0; i < 2; i++)
        if (l[i]) rlk_lock_release(l[i]);
    if (thread && a) rlk_client_watchdog_stop(a);
    rlk_client_free(a);
    rlk_client_free(b);
    fake_stop(fs);
    if (proxied) one_proxy_stop(&op);
}

static void test_listener_unanswered_thread(void) { listener_stalls(1, LISTENER_SILENT); }
static void test_listener_unanswered_tick(void) { listener_stalls(0, LISTENER_SILENT); }
static void test_listener_not_let_in_thread(void) { listener_stalls(1, LISTENER_QUEUE_FULL); }
static void test_listener_not_let_in_tick(void) { listener_stalls(0, LISTENER_QUEUE_FULL); }

/* ------------------------------------------------------------------ */
/* A lock nobody renews                                                 */

/* Waits until l's validity is over (remaining 0), within ms. */
static int wait_validity_over(rlk_lock *l, int64_t ms)
{
    int64_t deadline = ts_now_ms() + ms;
    while (rlk_lock_remaining_ms(l) > 0) {
        if (ts_now_ms() >= deadline) return 0;
        ts_pause_ms(5); /* sampling interval */
    }
    return 1;
}

/* A watchdog lock whose client is in tick mode but never ticks (the
 * program does its work instead): once its validity is over it reads as
 * lost, and the release, the first call on the client after it, calls
 * on_lost and reports RLK_LOCK_LOST (not RLK_LOCK_NOT_HELD, which says
 * the lock went while it was thought held). */
static void test_unrenewed_watchdog_lock_lost(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    rlk_lock *l;
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    CMD(admin, "DEL", "wd-idle");
    CHECK_EQ_INT(rlk_client_tick(a, NULL), RLK_OK); /* tick mode */
    l = ACQ_WD(a, "wd-idle", 600, &lr);
    if (!l) goto out;
    CHECK_EQ_INT(rlk_lock_is_lost(l), 0);
    CHECK(wait_validity_over(l, 600 + LONG_MS));
    CHECK_EQ_INT(rlk_lock_is_lost(l), 1);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_LOST);
    CHECK_MSG(ts_contains(rlk_client_errmsg(a), "lost"), "message \"%s\"", rlk_client_errmsg(a));
    CHECK_EQ_INT(lost_calls(&lr), 1);
    CHECK_EQ_INT(lr.is_lost, 1);
    CHECK_EQ_INT(lr.remaining, 0);
out:
    rlk_client_free(a);
}

/* Without a watchdog the same: lost when the validity is over, on_lost
 * by the next call on the client (any call), once; extend and release
 * report RLK_LOCK_LOST. */
static void test_unrenewed_lock_lost(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    rlk_lock_options o;
    rlk_lock_status st;
    rlk_lock *l = NULL;
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    CMD(admin, "DEL", "plain-idle");
    opts(&o, 300, 0, RLK_LOCK_SIMPLE, 0, &lr);
    if (!CHECK(rlk_lock_acquire(a, "plain-idle", &o, &l) == RLK_OK)) goto out;
    CHECK(wait_validity_over(l, 300 + LONG_MS));
    CHECK_EQ_INT(rlk_lock_is_lost(l), 1);
    CHECK_EQ_INT(rlk_lock_get_status(a, "someone-else", &st), RLK_OK);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    CHECK_EQ_INT(lr.is_lost, 1);
    CHECK_EQ_INT(rlk_lock_extend(l, 1000, RLK_EXTEND_SET), RLK_LOCK_LOST);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_LOST);
    CHECK_EQ_INT(lost_calls(&lr), 1);
out:
    rlk_client_free(a);
}

/* In thread mode the thread reports it (from the thread) when the
 * validity ends, with no call on the client meanwhile. */
static void test_unrenewed_lock_lost_thread(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    int64_t deadline;
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    CMD(admin, "DEL", "plain-thread");
    CHECK_EQ_INT(rlk_client_watchdog_start(a), RLK_OK);
    opts(&o, 300, 0, RLK_LOCK_SIMPLE, 0, &lr);
    if (!CHECK(rlk_lock_acquire(a, "plain-thread", &o, &l) == RLK_OK)) goto out;
    deadline = ts_now_ms() + 300 + LONG_MS;
    while (!lost_calls(&lr) && ts_now_ms() < deadline) ts_pause_ms(5); /* sampling */
    CHECK_EQ_INT(lost_calls(&lr), 1);
    if (lost_calls(&lr) == 1) {
        CHECK(!pthread_equal(lr.thread, pthread_self()));
        CHECK_EQ_INT(lr.is_lost, 1);
    }
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_LOST);
    CHECK_EQ_INT(lost_calls(&lr), 1);
out:
    rlk_client_watchdog_stop(a);
    rlk_client_free(a);
}

/* A watchdog lock that nothing would renew (no thread, and the client
 * never ticked) is refused before anything is sent; tick mode starts
 * with the first rlk_client_tick, which does no I/O while the client
 * holds nothing and is not connected. */
static void test_watchdog_needs_a_driver(void)
{
    rlk_client_config cfg;
    rlk_client *a;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    int64_t next = 0;
    client_cfg(&cfg, srv_url);
    a = rlk_client_new(&cfg);
    if (!CHECK(a != NULL)) return;
    CMD(admin, "DEL", "wd-driver");
    opts(&o, 10000, 0, RLK_LOCK_SIMPLE, 1, NULL);
    CHECK_EQ_INT(rlk_lock_acquire(a, "wd-driver", &o, &l), RLK_ERR_INVALID);
    CHECK(l == NULL);
    CHECK_MSG(ts_contains(rlk_client_errmsg(a), "rlk_client_tick") &&
                  ts_contains(rlk_client_errmsg(a), "rlk_client_watchdog_start"),
              "message \"%s\"", rlk_client_errmsg(a));
    CHECK_EQ_INT(rlk_client_generation(a), 0);
    CHECK_EQ_INT(rlk_client_tick(a, &next), RLK_OK);
    CHECK_EQ_INT(next, -1);
    CHECK_EQ_INT(rlk_client_generation(a), 0);
    CHECK_EQ_INT(rlk_lock_acquire(a, "wd-driver", &o, &l), RLK_OK);
    if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    rlk_client_free(a);
    /* The watchdog thread renews it as well. */
    a = rlk_client_new(&cfg);
    if (!CHECK(a != NULL)) return;
    CHECK_EQ_INT(rlk_client_watchdog_start(a), RLK_OK);
    l = NULL;
    CHECK_EQ_INT(rlk_lock_acquire(a, "wd-driver", &o, &l), RLK_OK);
    if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    rlk_client_free(a);
}

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;

    RUN(test_reentrant_watchdog);
    RUN(test_watchdog_tick);
    RUN(test_watchdog_lost_on_delete);
    RUN(test_watchdog_on_lost_may_call_client);
    RUN(test_watchdog_server_killed);
    RUN(test_watchdog_server_frozen);
    RUN(test_watchdog_server_restarted);
    RUN(test_tick_does_not_block);
    RUN(test_watchdog_batching);
    RUN(test_reconnect_rechecks);
#ifdef RLK_HAVE_OPENSSL
    RUN(test_tick_reconnects_tls);
#endif
    RUN(test_watchdog_thread);
    RUN(test_watchdog_thread_extend_shorter);
    RUN(test_watchdog_thread_server_killed);
    RUN(test_listener_unanswered_thread);
    RUN(test_listener_unanswered_tick);
    RUN(test_listener_not_let_in_thread);
    RUN(test_listener_not_let_in_tick);
    RUN(test_unrenewed_watchdog_lock_lost);
    RUN(test_unrenewed_lock_lost);
    RUN(test_unrenewed_lock_lost_thread);
    RUN(test_watchdog_needs_a_driver);

    return locktest_finish(t0);
}
