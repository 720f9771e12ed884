/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Waiting for a lock, against real redis-server processes on free
 * loopback ports: waits that wake on a release and on expiry (RESP3 and
 * RESP2), and the handoff of a released lock to the first live waiter in
 * line (order, dead and deaf entries, timeouts, reentrant and by-token
 * releases, forged messages, kept subscriptions, reconnects), and the
 * window after 2 s of handoffs, which new clients keep away from too;
 * and the fair kind's order (six waiters served as they joined, no
 * newcomer past the line, an unheard waiter's place kept).
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

#include <poll.h>
#include <pthread.h>
#include <stdlib.h>

/* Fences grow (by the server's clock, not by one). */
#define CHECK_FENCE_AFTER(f, prev)                                                            \
    CHECK_MSG((f) > (prev), "fence %llu after %llu", (unsigned long long)(f),                 \
              (unsigned long long)(prev))

/* ------------------------------------------------------------------ */
/* Waiting                                                             */

static void test_wait_zero_is_one_try(void)
{
    rlk_client *a = CLIENT(), *b = CLIENT();
    rlk_lock *l;
    int64_t t0;
    if (!a || !b) goto out;
    l = ACQ(a, "w0", 10000);
    if (!l) goto out;
    CHECK_EQ_INT(try_acquire(b, "w0", RLK_LOCK_SIMPLE), RLK_LOCK_BUSY); /* connects */
    reset_stats(admin);
    t0 = ts_now_ms();
    CHECK_EQ_INT(try_acquire(b, "w0", RLK_LOCK_SIMPLE), RLK_LOCK_BUSY);
    CHECK(ts_now_ms() - t0 < MARGIN);
    /* One SET NX PX (and its TIME), and on this busy path one look by
     * the acquire script (is it a lock?), whose own SET NX counts too;
     * no subscription. */
    CHECK_EQ_INT(stat_calls(admin, "set"), 2);
    CHECK_EQ_INT(stat_calls(admin, SCRIPT_CALLS), 1);
    CHECK_EQ_INT(stat_calls(admin, "subscribe"), 0);
    CHECK(rlk_client_wait_note(b) == NULL); /* the handoff channel was not refused */
    rlk_lock_release(l);
out:
    rlk_client_free(a);
    rlk_client_free(b);
}

static void test_wait_bounded(void)
{
    rlk_client *a = CLIENT(), *b = CLIENT_EX(srv_url, 0, 200, NULL), *c = CLIENT();
    rlk_lock_options o;
    rlk_lock *l, *got = NULL;
    int64_t t0, el;
    long long calls;
    int rc;
    if (!a || !b || !c) goto out;
    l = ACQ(a, "wb", 30000);
    if (!l) goto out;

    /* Re-checks every 200 ms: BUSY after the wait, a few tries. */
    opts(&o, 10000, 900, RLK_LOCK_SIMPLE, 0, NULL);
    reset_stats(admin);
    t0 = ts_now_ms();
    rc = rlk_lock_acquire(b, "wb", &o, &got);
    el = ts_now_ms() - t0;
    CHECK_EQ_INT(rc, RLK_LOCK_BUSY);
    CHECK(got == NULL);
    CHECK_MSG(el >= 900 - 1 && el <= 900 + MARGIN, "returned after %lld ms (wait 900)",
              (long long)el);
    calls = stat_calls(admin, SCRIPT_CALLS);
    CHECK_MSG(calls >= 5 && calls <= 12, "%lld tries in 900 ms with re-check 200", calls);
    /* The release channel (the client's handoff channel was subscribed
     * with the connection); under RESP3 both stay subscribed for the
     * next wait. */
    CHECK_EQ_INT(stat_calls(admin, "subscribe"), 1);
    CHECK_EQ_INT(stat_calls(admin, "unsubscribe"), 0);

    /* The default re-check (1000 ms): no busy polling at all. */
    opts(&o, 10000, 600, RLK_LOCK_SIMPLE, 0, NULL);
    reset_stats(admin);
    t0 = ts_now_ms();
    rc = rlk_lock_acquire(c, "wb", &o, &got);
    el = ts_now_ms() - t0;
    CHECK_EQ_INT(rc, RLK_LOCK_BUSY);
    CHECK_MSG(el >= 600 - 1 && el <= 600 + MARGIN, "returned after %lld ms (wait 600)",
              (long long)el);
    calls = stat_calls(admin, SCRIPT_CALLS);
    CHECK_MSG(calls >= 2 && calls <= 4, "%lld tries in 600 ms with re-check 1000", calls);
    rlk_lock_release(l);
out:
    rlk_client_free(a);
    rlk_client_free(b);
    rlk_client_free(c);
}

static void wake_on_release(int protocol)
{
    char name[32], cname[32];
    rlk_client *a = CLIENT(), *w;
    struct waiter wt;
    rlk_lock *l;
    int64_t t_rel, limit = slow ? 2000 : 500;
    snprintf(name, sizeof name, "wake-rel-%d", protocol);
    snprintf(cname, sizeof cname, "waiter-resp%d", protocol);
    w = CLIENT_EX(srv_url, protocol, 5000, cname);
    if (!a || !w) goto out;
    CHECK_EQ_INT(rlk_client_info(w)->protocol, protocol);
    CMD(admin, "DEL", name);
    l = ACQ(a, name, 30000);
    if (!l) goto out;
    reset_stats(admin);
    if (!waiter_start(&wt, w, name, 10000, 10000, RLK_LOCK_SIMPLE)) goto out;
    CHECK(wait_calls(admin, SCRIPT_CALLS, 2, LONG_MS));
    CHECK(wait_calls(admin, "subscribe", 1, LONG_MS));
    /* RESP2 waits on a second connection; RESP3 on the same one. */
    CHECK_EQ_INT(count_clients(admin, cname), protocol == 2 ? 2 : 1);
    t_rel = ts_now_ms();
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    pthread_join(wt.th, NULL);
    CHECK_MSG(wt.rc == RLK_OK, "waiter: %d %s", wt.rc, wt.err);
    CHECK_MSG(wt.done_at - t_rel < limit, "acquired %lld ms after the release (re-check 5000)",
              (long long)(wt.done_at - t_rel));
    if (wt.l) {
        CHECK(rlk_lock_remaining_ms(wt.l) > 0);
        CHECK_EQ_INT(rlk_lock_release(wt.l), RLK_OK);
    }
    /* The waiting connection is gone (RESP2); under RESP3 the
     * subscription stays on the one connection, for the next wait. */
    {
        int64_t deadline = ts_now_ms() + LONG_MS;
        while (count_clients(admin, cname) != 1 && ts_now_ms() < deadline) ts_pause_ms(5);
        CHECK_EQ_INT(count_clients(admin, cname), 1);
        char ch[64];
        const rlk_resp_value *cnt;
        rlk_resp_value *v;
        snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", name);
        v = CMD(admin, "PUBSUB", "NUMSUB", ch);
        cnt = v ? rlk_resp_value_at(v, 1) : NULL;
        CHECK_MSG(cnt && cnt->type == RLK_RESP_INTEGER && cnt->integer == (protocol == 3),
                  "subscribers of %s: %lld, want %d", ch, cnt ? (long long)cnt->integer : -1,
                  protocol == 3);
    }
out:
    rlk_client_free(a);
    rlk_client_free(w);
}

static void test_wake_on_release_resp3(void) { wake_on_release(3); }
static void test_wake_on_release_resp2(void) { wake_on_release(2); }

/* The holder never releases (it forgot the lock): the waiter wakes when
 * the TTL runs out, not at its re-check. */
static void wake_on_expiry(int protocol)
{
    char name[32];
    rlk_client *a = CLIENT(), *w = CLIENT_EX(srv_url, protocol, 10000, NULL);
    rlk_lock_options o;
    rlk_lock *l, *got = NULL;
    int64_t t0, el;
    int rc;
    snprintf(name, sizeof name, "wake-ttl-%d", protocol);
    if (!a || !w) goto out;
    CMD(admin, "DEL", name);
    t0 = ts_now_ms();
    l = ACQ(a, name, 500);
    if (!l) goto out;
    rlk_lock_forget(l);
    opts(&o, 10000, 10000, RLK_LOCK_SIMPLE, 0, NULL);
    rc = rlk_lock_acquire(w, name, &o, &got);
    el = ts_now_ms() - t0;
    CHECK_MSG(rc == RLK_OK, "waiter: %d %s", rc, rlk_client_errmsg(w));
    CHECK_MSG(el >= 480 && el <= 500 + MARGIN, "acquired %lld ms after the holder (TTL 500)",
              (long long)el);
    if (got) CHECK_EQ_INT(rlk_lock_release(got), RLK_OK);
out:
    rlk_client_free(a);
    rlk_client_free(w);
}

static void test_wake_on_expiry_resp3(void) { wake_on_expiry(3); }
static void test_wake_on_expiry_resp2(void) { wake_on_expiry(2); }

/* ------------------------------------------------------------------ */
/* Handoff: a release hands the lock to the first live waiter          */

/* The longest a waiter of these tests waits: any handoff comes long
 * before, and a broken one fails the test instead of hanging it. */
#define HO_WAIT_MS (slow ? 60000 : 20000)

/* The field of name's waiters hash that is not among known[0..k-1]: the
 * token of the waiter that registered last.  1 when there is exactly
 * one such field (else a test failure). */
static int newest_waiter(const char *name, char known[][96], int k, char *out, size_t n)
{
    char key[128];
    rlk_resp_value *v;
    const rlk_resp_value *e;
    int found = 0, j;
    out[0] = '\0';
    HO_KEY(key, name, "waiters");
    v = CMD(admin, "HKEYS", key);
    for (e = v ? v->child : NULL; e; e = e->next) {
        for (j = 0; j < k; j++)
            if (strlen(known[j]) == e->len && memcmp(known[j], e->str, e->len) == 0) break;
        if (j < k) continue;
        found++;
        snprintf(out, n, "%.*s", (int)e->len, e->str);
    }
    return CHECK_MSG(found == 1, "%d new entries in %s", found, key);
}

/* Whether name's queue is exactly toks[0..n-1], in this order. */
static int queue_is(const char *name, char toks[][96], int n, int line)
{
    char key[128];
    rlk_resp_value *v;
    const rlk_resp_value *e;
    int i = 0, ok = 1;
    HO_KEY(key, name, "queue");
    v = run_cmd(admin, line, "LRANGE", key, "0", "-1", (const char *)NULL);
    if (!v) return 0;
    for (e = v->child; e; e = e->next, i++)
        if (i >= n || strlen(toks[i]) != e->len || memcmp(toks[i], e->str, e->len) != 0) ok = 0;
    return tl_ok(ok && i == n, __FILE__, line, "queue %s: %d entries, not the %d expected in order",
                 key, i, n);
}

/* The channel a waiter's entry names ("EXPIRYMS TTLMS CHANNEL"): its
 * client's handoff channel.  1 when found. */
static int waiter_channel(const char *name, const char *tok, char *out, size_t n)
{
    char key[128], val[256];
    const char *sp;
    HO_KEY(key, name, "waiters");
    out[0] = '\0';
    if (!CHECK(CMD_STR(admin, val, "HGET", key, tok) == 1)) return 0;
    /* "EXPIRY TTL CLAIM KIND CHANNEL" */
    sp = strchr(val, ' ');
    sp = sp ? strchr(sp + 1, ' ') : NULL;
    sp = sp ? strchr(sp + 1, ' ') : NULL;
    sp = sp ? strchr(sp + 1, ' ') : NULL;
    if (!CHECK_MSG(sp && ts_contains(sp + 1, "resplock:handoff:"), "entry \"%s\"", val)) return 0;
    snprintf(out, n, "%s", sp + 1);
    return 1;
}

/* Nobody in line, and nothing left for good: no queue, no waiter entry,
 * and the waiters hash (which may keep the "~chain" of the last
 * handoffs) goes within a minute. */
static int nothing_in_line(const char *waiters, const char *queue)
{
    long long pttl = CMD_INT(admin, "PTTL", waiters);
    return CHECK_MSG(CMD_INT(admin, "EXISTS", queue) == 0 && waiter_entries(waiters) == 0 &&
                         (pttl == -2 || (pttl > 0 && pttl <= 60000)),
                     "queue %lld, %lld entries, waiters PTTL %lld",
                     CMD_INT(admin, "EXISTS", queue), waiter_entries(waiters), pttl);
}

/* PUBSUB NUMSUB of one channel, or -1. */
static long long numsub(const char *ch)
{
    rlk_resp_value *v = CMD(admin, "PUBSUB", "NUMSUB", ch);
    const rlk_resp_value *cnt = v ? rlk_resp_value_at(v, 1) : NULL;
    return cnt && cnt->type == RLK_RESP_INTEGER ? cnt->integer : -1;
}

/* Runs the simple lock's acquire and release scripts once, so that the
 * server has them: a count of script calls then holds no call that found
 * them missing (NOSCRIPT, or no function: a fresh server, when a test runs
 * alone). */
static void load_scripts(rlk_client *cl)
{
    rlk_lock *l = ACQ(cl, "ho-load-scripts", 10000);
    if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
}

/* The holder *la releases (RLK_OK), and the waiter w, joined, has the
 * lock.  *la is NULL after. */
/* Ticks, when the client's fd is readable, until the handoff's
 * confirmation has been read: the lock's validity then goes past the
 * claim's (a tick never waits for the reply). */
static void tick_until_confirmed(rlk_client *c, const rlk_lock *l, int64_t claim)
{
    int64_t deadline = ts_now_ms() + LONG_MS;
    while (rlk_lock_remaining_ms(l) <= claim && ts_now_ms() < deadline) {
        struct pollfd p = {rlk_client_fd(c), POLLIN, 0};
        if (p.fd < 0) break;
        poll(&p, 1, 100);
        CHECK_EQ_INT(rlk_client_tick(c, NULL), RLK_OK);
    }
}

static int hand_over(rlk_lock **la, struct waiter *w, int *joined)
{
    CHECK_EQ_INT(rlk_lock_release(*la), RLK_OK);
    *la = NULL;
    pthread_join(w->th, NULL);
    *joined = 1;
    return CHECK_MSG(w->rc == RLK_OK && w->l, "waiter: %d %s", w->rc, w->err);
}

/* Waiters are served in the order they came: a release hands the lock
 * to the first of them only, with that waiter's TTL (each has its own,
 * 5 s apart, to tell them by) and the next fence; the others keep their
 * places.  When the last one releases, nothing is left behind.  n (at
 * most 6) waiters of kind, behind a holder of that kind, whose facts
 * start "k=f;" for a fair lock (the status tells the kind by them). */
static void serve_in_order(const char *name, rlk_lock_kind kind, int n)
{
    rlk_client *a = CLIENT(), *c[6];
    struct waiter w[6];
    int joined[6] = {0}, started = 0, i, j;
    char tok[6][96], waiters[64], queue[64], got[256];
    rlk_lock *la = NULL;
    rlk_lock_status st;
    uint64_t fence;
    long long pttl;
    for (i = 0; i < n; i++) c[i] = CLIENT();
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!a) goto out;
    for (i = 0; i < n; i++)
        if (!c[i]) goto out;
    CMD(admin, "DEL", name, waiters, queue);
    la = acquire(a, name, 30000, kind, 0, NULL, __LINE__);
    if (!la) goto out;
    CHECK_MSG(ts_contains(rlk_lock_token(la), ";k=f;") == (kind == RLK_LOCK_FAIR), "token %s",
              rlk_lock_token(la));
    fence = rlk_lock_fence(la);
    /* Each starts once the one before is in the queue: the order is
     * known, and so is each one's token. */
    for (i = 0; i < n; i++) {
        if (!waiter_start(&w[i], c[i], name, 20000 + 5000 * i, HO_WAIT_MS, kind)) goto out;
        started++;
        if (!CHECK_MSG(wait_waiters(name, i + 1, LONG_MS), "waiter %d did not register", i + 1) ||
            !newest_waiter(name, tok, i, tok[i], sizeof tok[i]))
            goto out;
    }
    if (!queue_is(name, tok, n, __LINE__)) goto out;
    if (CHECK(rlk_lock_get_status(a, name, &st) == RLK_OK)) {
        CHECK_EQ_INT(st.kind, kind);
        CHECK_EQ_INT(st.waiters, n);
    }

    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    for (i = 0; i < n; i++) {
        pthread_join(w[i].th, NULL);
        joined[i] = 1;
        if (!CHECK_MSG(w[i].rc == RLK_OK && w[i].l, "waiter %d: %d %s", i + 1, w[i].rc, w[i].err))
            goto out;
        CHECK_EQ_STR(rlk_lock_token(w[i].l), tok[i]);
        CHECK(CMD_STR(admin, got, "GET", name) == 1);
        {
            /* Marked "+w" while others are still in line. */
            char want[256];
            snprintf(want, sizeof want, "%s%s", tok[i], i < n - 1 ? "+w" : "");
            CHECK_EQ_STR(got, want);
        }
        pttl = CMD_INT(admin, "PTTL", name);
        CHECK_MSG(pttl > 20000 + 5000 * i - MARGIN && pttl <= 20000 + 5000 * i,
                  "waiter %d: PTTL %lld, its TTL %d", i + 1, pttl, 20000 + 5000 * i);
        CHECK_FENCE_AFTER(rlk_lock_fence(w[i].l), fence);
        fence = rlk_lock_fence(w[i].l);
        /* The ones behind it still wait, in their places. */
        for (j = i + 1; j < n; j++)
            CHECK_MSG(!waiter_done(&w[j]), "waiter %d returned while %d held the lock", j + 1,
                      i + 1);
        queue_is(name, tok + i + 1, n - 1 - i, __LINE__);
        CHECK_EQ_INT(waiter_entries(waiters), n - 1 - i);
        CHECK_EQ_INT(rlk_lock_release(w[i].l), RLK_OK);
        w[i].l = NULL;
    }
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
    CHECK(nothing_in_line(waiters, queue));
out:
    if (la) rlk_lock_release(la);
    waiters_end(w, joined, started);
    rlk_client_free(a);
    for (i = 0; i < n; i++) rlk_client_free(c[i]);
}

static void test_handoff_fifo(void) { serve_in_order("ho-fifo", RLK_LOCK_SIMPLE, 3); }

/* An entry whose lease ran out (its waiter died) is passed over and
 * removed, even though its channel has a listener (here: the live
 * waiter's own), and costs no fence; the waiter behind it gets the
 * lock. */
static void test_handoff_skips_dead_entry(void)
{
    const char *name = "ho-dead";
    rlk_client *a = CLIENT(), *c = CLIENT();
    struct waiter w;
    int joined = 0, started = 0;
    char tok[2][96], waiters[64], queue[64], got[256], ch[96], entry[160];
    rlk_lock *la = NULL;
    uint64_t fence;
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, waiters, queue);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    fence = rlk_lock_fence(la);
    if (!waiter_start(&w, c, name, 20000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS)) ||
        !newest_waiter(name, tok, 0, tok[1], sizeof tok[1]) ||
        !waiter_channel(name, tok[1], ch, sizeof ch))
        goto out;
    /* In front of it: an entry that expired long ago. */
    snprintf(tok[0], sizeof tok[0], "dead-waiter");
    snprintf(entry, sizeof entry, "1 30000 s %s", ch);
    CHECK_EQ_INT(CMD_INT(admin, "HSET", waiters, tok[0], entry), 1);
    CHECK_EQ_INT(CMD_INT(admin, "LPUSH", queue, tok[0]), 2);
    if (!queue_is(name, tok, 2, __LINE__)) goto out;
    {
        /* status counts the live waiter, not the lapsed entry. */
        rlk_lock_status st;
        CHECK_EQ_INT(rlk_lock_get_status(a, name, &st), RLK_OK);
        CHECK_EQ_INT(st.waiters, 1);
    }

    if (!hand_over(&la, &w, &joined)) goto out;
    CHECK_EQ_STR(rlk_lock_token(w.l), tok[1]);
    CHECK(CMD_STR(admin, got, "GET", name) == 1);
    CHECK_EQ_STR(got, tok[1]);
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
    CHECK_EQ_INT(CMD_INT(admin, "HEXISTS", waiters, tok[0]), 0);
    CHECK(nothing_in_line(waiters, queue));
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* A live entry whose channel nobody listens on (its client is gone) is
 * passed over: the PUBLISH reached no one.  The waiter behind it gets
 * the lock; the skipped one may have used up a fence.  With no one else
 * in line, the release frees the lock and says so on the release
 * channel, as without waiters. */
static void test_handoff_skips_not_listening(void)
{
    const char *name = "ho-deaf", *deaf_ch = "resplock:handoff:nobody-listens";
    rlk_client *a = CLIENT(), *c = CLIENT();
    struct waiter w;
    struct pushes ps;
    rlk_conn *sub = NULL;
    int joined = 0, started = 0;
    char tok[2][96], waiters[64], queue[64], got[256], entry[160];
    rlk_lock *la = NULL, *lc;
    uint64_t fence;
    long long now;
    int64_t deadline;
    memset(&ps, 0, sizeof ps);
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, waiters, queue);
    CHECK_EQ_INT(numsub(deaf_ch), 0);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    fence = rlk_lock_fence(la);
    if (!waiter_start(&w, c, name, 20000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS)) ||
        !newest_waiter(name, tok, 0, tok[1], sizeof tok[1]))
        goto out;
    /* In front of it: an entry good for ten minutes, on a deaf channel. */
    now = server_time_ms();
    if (now < 0) goto out;
    snprintf(tok[0], sizeof tok[0], "deaf-waiter");
    snprintf(entry, sizeof entry, "%lld 30000 s %s", now + 600000, deaf_ch);
    CHECK_EQ_INT(CMD_INT(admin, "HSET", waiters, tok[0], entry), 1);
    CHECK_EQ_INT(CMD_INT(admin, "LPUSH", queue, tok[0]), 2);
    if (!queue_is(name, tok, 2, __LINE__)) goto out;

    if (!hand_over(&la, &w, &joined)) goto out;
    CHECK_EQ_STR(rlk_lock_token(w.l), tok[1]);
    CHECK(CMD_STR(admin, got, "GET", name) == 1);
    CHECK_EQ_STR(got, tok[1]);
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
    CHECK_EQ_INT(CMD_INT(admin, "HEXISTS", waiters, tok[0]), 0);
    CHECK(nothing_in_line(waiters, queue));
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);

    /* Only the deaf entry in line: the lock is freed, "0" published. */
    sub = connect_url(srv_url, 3, rec_push, &ps, __LINE__);
    if (!sub) goto out;
    CHECK_EQ_INT(rlk_conn_subscribe(sub, "redisson_lock__channel:{ho-deaf}", 32), RLK_OK);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    /* As a waiter joins: its place, and the holder's value marked (see
     * src/lua/acquire.lua). */
    CHECK_EQ_INT(CMD_INT(admin, "HSET", waiters, tok[0], entry), 1);
    CHECK_EQ_INT(CMD_INT(admin, "RPUSH", queue, tok[0]), 1);
    CHECK_EQ_INT(CMD_INT(admin, "APPEND", name, "+w"), (long long)strlen(rlk_lock_token(la)) + 2);
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
    CHECK(nothing_in_line(waiters, queue));
    deadline = ts_now_ms() + LONG_MS;
    while (ps.n == 0 && ts_now_ms() < deadline)
        if (rlk_conn_wait_push(sub, (int)(deadline - ts_now_ms())) < 0) break;
    CHECK_EQ_INT(ps.n, 1);
    CHECK_EQ_STR(ps.payload, "0");
    /* Free indeed: anyone takes it at once. */
    lc = ACQ(c, name, 10000);
    if (lc) CHECK_EQ_INT(rlk_lock_release(lc), RLK_OK);
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_conn_free(sub);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* A waiter whose wait runs out leaves the queue: nothing of it remains,
 * and the next release frees the lock rather than handing it to the
 * client, which under RESP3 still listens on its handoff channel. */
static void test_handoff_wait_timeout_leaves_queue(void)
{
    const char *name = "ho-timeout";
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, 3, 0, NULL);
    struct waiter w;
    int joined = 0, started = 0;
    char tok[1][96], waiters[64], queue[64], ch[96];
    rlk_lock *la = NULL;
    int64_t wait = slow ? 3000 : 500;
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, waiters, queue);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    if (!waiter_start(&w, c, name, 10000, wait, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    /* It was in line... */
    if (!CHECK(wait_waiters(name, 1, LONG_MS)) ||
        !newest_waiter(name, tok, 0, tok[0], sizeof tok[0]) ||
        !waiter_channel(name, tok[0], ch, sizeof ch))
        goto out;
    pthread_join(w.th, NULL);
    joined = 1;
    CHECK_MSG(w.rc == RLK_LOCK_BUSY, "waiter: %d %s", w.rc, w.err);
    CHECK(w.l == NULL);
    /* ... and left it. */
    CHECK_EQ_INT(CMD_INT(admin, "HLEN", waiters), 0);
    CHECK_EQ_INT(CMD_INT(admin, "LLEN", queue), 0);
    CHECK_EQ_INT(numsub(ch), 1);
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* A waiter that finds the lock free (its holder went away without a
 * release) takes it and leaves the queue; otherwise its own release,
 * under RESP3 still subscribed, would hand the lock back to itself. */
static void test_handoff_acquire_when_free_leaves_queue(void)
{
    const char *name = "ho-free";
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, 3, 0, NULL);
    struct waiter w;
    int joined = 0, started = 0;
    char tok[1][96], waiters[64], queue[64];
    rlk_lock *la;
    uint64_t fence;
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, waiters, queue);
    la = ACQ(a, name, slow ? 3000 : 500);
    if (!la) goto out;
    fence = rlk_lock_fence(la);
    rlk_lock_forget(la);
    if (!waiter_start(&w, c, name, 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS)) ||
        !newest_waiter(name, tok, 0, tok[0], sizeof tok[0]))
        goto out;
    pthread_join(w.th, NULL);
    joined = 1;
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err)) goto out;
    CHECK_EQ_STR(rlk_lock_token(w.l), tok[0]);
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
    CHECK(nothing_in_line(waiters, queue));
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* Reentrant: a release that only takes one hold away hands nothing
 * over; the final one gives the waiter the hash with its own field at 1
 * hold, its TTL and the next fence, in the message (the waiter makes no
 * try of its own: its re-check is 6.7 s away). */
static void test_handoff_reentrant(void)
{
    const char *name = "ho-re";
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, 0, 30000, NULL);
    struct waiter w;
    int joined = 0, started = 0;
    char tok[1][96], afield[96], waiters[64], got[256];
    rlk_lock *l1 = NULL, *l2 = NULL;
    uint64_t fence;
    long long pttl;
    HO_KEY(waiters, name, "waiters");
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, waiters, "{ho-re}:queue");
    l1 = ACQ_R(a, name, 30000);
    l2 = ACQ_R(a, name, 30000);
    if (!l1 || !l2) goto out;
    CHECK_EQ_INT(rlk_lock_holds(l2), 2);
    fence = rlk_lock_fence(l1);
    snprintf(afield, sizeof afield, "%s", rlk_lock_token(l1));
    if (!waiter_start(&w, c, name, 20000, HO_WAIT_MS, RLK_LOCK_REENTRANT)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS)) ||
        !newest_waiter(name, tok, 0, tok[0], sizeof tok[0]))
        goto out;

    /* One hold fewer: still A's, the waiter still in line. */
    CHECK_EQ_INT(rlk_lock_release(l2), RLK_OK);
    l2 = NULL;
    CMD_STR(admin, got, "HGET", name, afield);
    CHECK_EQ_STR(got, "1");
    CHECK_EQ_INT(CMD_INT(admin, "HEXISTS", waiters, tok[0]), 1);
    CHECK(!waiter_done(&w));

    reset_stats(admin);
    CHECK_EQ_INT(rlk_lock_release(l1), RLK_OK);
    l1 = NULL;
    pthread_join(w.th, NULL);
    joined = 1;
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err)) goto out;
    /* The release, and the waiter's confirmation of the handoff. */
    CHECK_MSG(stat_calls(admin, SCRIPT_CALLS) == 2 && stat_calls(admin, "eval") == 0,
              "%lld scripts run: the release and %s", stat_calls(admin, SCRIPT_CALLS),
              "the waiter's confirmation");
    CHECK_EQ_STR(rlk_lock_token(w.l), tok[0]);
    CHECK_EQ_INT(rlk_lock_holds(w.l), 1);
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
    CMD_STR(admin, got, "TYPE", name);
    CHECK_EQ_STR(got, "hash");
    /* Its field, and the holder facts its confirmation wrote. */
    CHECK_EQ_INT(CMD_INT(admin, "HLEN", name), 2);
    CHECK_EQ_INT(CMD_INT(admin, "HEXISTS", name, "rlk:holder"), 1);
    CHECK_EQ_INT(CMD_INT(admin, "HEXISTS", name, afield), 0);
    CMD_STR(admin, got, "HGET", name, tok[0]);
    CHECK_EQ_STR(got, "1");
    pttl = CMD_INT(admin, "PTTL", name);
    CHECK_MSG(pttl > 20000 - MARGIN && pttl <= 20000, "PTTL %lld, the waiter's TTL 20000", pttl);
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    if (l2) rlk_lock_release(l2);
    if (l1) rlk_lock_release(l1);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* A release by token (what `resplock release NAME TOKEN` does) hands
 * the lock over just the same, in the message (no try of the waiter's
 * own: its re-check is 6.7 s away). */
static void test_handoff_release_by_token(void)
{
    const char *name = "ho-bytoken";
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, 0, 30000, NULL);
    struct waiter w;
    int joined = 0, started = 0;
    char tok[1][96], atok[96], got[256];
    rlk_lock *la;
    uint64_t fence = 0;
    int held = 0;
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, "{ho-bytoken}:waiters", "{ho-bytoken}:queue");
    load_scripts(a);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    fence = rlk_lock_fence(la);
    snprintf(atok, sizeof atok, "%s", rlk_lock_token(la));
    rlk_lock_forget(la);
    held = 1;
    if (!waiter_start(&w, c, name, 20000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS)) ||
        !newest_waiter(name, tok, 0, tok[0], sizeof tok[0]))
        goto out;
    reset_stats(admin);
    CHECK_EQ_INT(rlk_release_token(a, name, atok), RLK_OK);
    held = 0;
    pthread_join(w.th, NULL);
    joined = 1;
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err)) goto out;
    CHECK_MSG(stat_calls(admin, SCRIPT_CALLS) == 2 && stat_calls(admin, "eval") == 0,
              "%lld scripts run: the release and %s", stat_calls(admin, SCRIPT_CALLS),
              "the waiter's confirmation");
    CHECK_EQ_STR(rlk_lock_token(w.l), tok[0]);
    CHECK(CMD_STR(admin, got, "GET", name) == 1);
    CHECK_EQ_STR(got, tok[0]);
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    if (held) rlk_release_token(a, name, atok);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* A lock got by handoff is valid, until the waiter's confirmation is
 * read, for the claim (the re-check, 1000 ms, plus a second) from the
 * waiter's last try before the release; once it is read (the client's
 * next call: here a tick once the reply came), for the TTL from when it
 * was sent.  Never
 * longer than the server keeps it (PTTL, read first, is at least the
 * validity read after). */
static void handoff_validity(int full)
{
    const char *name = full ? "ho-full" : "ho-valid";
    const int64_t ttl = 10000, drift = 10000 / 100 + 2;
    rlk_client *a = CLIENT(), *c = CLIENT();
    struct waiter w;
    int joined = 0, started = 0;
    rlk_lock *la = NULL;
    long long pttl;
    int64_t rem;
    char waiters[64], queue[64];
    if (!a || !c) goto out;
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    CMD(admin, "DEL", name, waiters, queue);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    memset(&w, 0, sizeof w);
    w.cl = c;
    w.name = name;
    opts(&w.o, ttl, HO_WAIT_MS, RLK_LOCK_SIMPLE, 0, NULL);
    w.o.full_ttl = full;
    if (!CHECK(pthread_create(&w.th, NULL, waiter_main, &w) == 0)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
    if (full) {
        /* The confirmation goes as EVALSHA or FCALL, is refused, and goes
         * again as EVAL: all before the acquire returns. */
        CMD(admin, "SCRIPT", "FLUSH");
        CMD(admin, "FUNCTION", "FLUSH");
    }
    if (!hand_over(&la, &w, &joined)) goto out;
    pttl = CMD_INT(admin, "PTTL", name);
    rem = rlk_lock_remaining_ms(w.l);
    if (!full) {
        CHECK_MSG(rem > 0 && rem <= 2000, "remaining %lld before the confirmation is read",
                  (long long)rem);
        CHECK_MSG(pttl >= rem, "PTTL %lld < remaining %lld", pttl, (long long)rem);
        tick_until_confirmed(c, w.l, 2000);
        rem = rlk_lock_remaining_ms(w.l);
        pttl = CMD_INT(admin, "PTTL", name);
    }
    /* With full_ttl, no turn of c between the acquire's return and here. */
    CHECK_MSG(rem > 0 && rem <= ttl - drift, "remaining %lld (TTL %lld)", (long long)rem,
              (long long)ttl);
    CHECK_MSG(pttl + MARGIN >= rem, "PTTL %lld < remaining %lld", pttl, (long long)rem);
    CHECK_MSG(rem >= ttl - drift - MARGIN, "remaining %lld (TTL %lld)", (long long)rem,
              (long long)ttl);
    CHECK_EQ_INT(rlk_lock_is_lost(w.l), 0);
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

static void test_handoff_validity(void) { handoff_validity(0); }

/* With full_ttl a handed-over lock is reported held only once its
 * confirmation extended it to the TTL, even when the confirmation's
 * script is gone (SCRIPT FLUSH and FUNCTION FLUSH: NOSCRIPT, then EVAL):
 * for a caller that hands the token on and never turns the client
 * again (resplock acquire). */
static void test_handoff_full_ttl(void) { handoff_validity(1); }

/* Waiting twice for the same lock.  Under RESP3 the subscriptions of the
 * first wait stay: the second one subscribes to nothing and is in line
 * after its first try.  Under RESP2 the waiting connection is closed
 * after each wait, so each wait subscribes to both channels again (and
 * tries once before joining).  Both times the lock comes by handoff. */
static void wait_twice(int protocol)
{
    char name[32], got[256];
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, protocol, 5000, NULL);
    struct waiter w;
    int joined = 0, started = 0, round;
    rlk_lock *la = NULL;
    uint64_t fence;
    long long subs, tries, scripts;
    snprintf(name, sizeof name, "ho-again-%d", protocol);
    if (!a || !c) goto out;
    CHECK_EQ_INT(rlk_client_info(c)->protocol, protocol);
    load_scripts(a);
    for (round = 0; round < 2; round++) {
        la = ACQ(a, name, 30000);
        if (!la) goto out;
        fence = rlk_lock_fence(la);
        reset_stats(admin);
        if (!waiter_start(&w, c, name, 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
        started = 1;
        joined = 0;
        if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
        /* It subscribes before it joins the line: the counts are final
         * (its next re-check is 3 s away). */
        subs = stat_calls(admin, "subscribe");
        /* A try is a script call, or the plain SET NX PX of a first try:
         * each reads the server's clock (TIME) once. */
        tries = stat_calls(admin, "time");
        scripts = stat_calls(admin, SCRIPT_CALLS);
        if (protocol == 3 && round == 1) {
            CHECK_MSG(subs == 0, "second wait (RESP3): %lld SUBSCRIBE", subs);
            CHECK_MSG(tries == 1, "second wait (RESP3): %lld tries to join the line", tries);
        } else if (protocol == 3) {
            /* The release channel; the handoff channel was subscribed
             * with the connection. */
            CHECK_MSG(subs == 1, "wait %d (RESP%d): %lld SUBSCRIBE", round + 1, protocol, subs);
        } else {
            CHECK_MSG(subs == 2, "wait %d (RESP%d): %lld SUBSCRIBE", round + 1, protocol, subs);
            /* The first try without a wait (SET NX), busy: the acquire
             * script's look (is it a lock?); then the try in line. */
            if (round == 1)
                CHECK_MSG(tries == 3, "second wait (RESP2): %lld tries to join the line", tries);
        }
        CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
        la = NULL;
        pthread_join(w.th, NULL);
        joined = 1;
        if (!CHECK_MSG(w.rc == RLK_OK && w.l, "wait %d: %d %s", round + 1, w.rc, w.err)) goto out;
        /* Handed over: the release and the waiter's confirmation were
         * the only scripts since. */
        CHECK_MSG(stat_calls(admin, SCRIPT_CALLS) == scripts + 2 && stat_calls(admin, "eval") == 0,
                  "wait %d: %lld scripts, %lld before the release", round + 1,
                  stat_calls(admin, SCRIPT_CALLS), scripts);
        CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
        CHECK(CMD_STR(admin, got, "GET", name) == 1);
        CHECK_EQ_STR(got, rlk_lock_token(w.l));
        CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
        w.l = NULL;
    }
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* RESP3: the subscriptions kept after a wait go with the connection.  A
 * client whose connection was killed in between (its first try then
 * finds the connection closed, and is sent again on a new one) subscribes
 * again on the new connection, and is handed the lock by the release
 * (its re-check is 5 s away, so only the handoff can give it the lock in
 * time). */
static void test_wait_after_reconnect_subscribes_again(void)
{
    const char *name = "ho-reconn";
    char id[32], got[256];
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, 3, 5000, NULL);
    struct waiter w;
    int joined = 0, started = 0;
    rlk_lock *la = NULL;
    uint64_t gen, fence;
    int64_t t_rel;
    if (!a || !c) goto out;
    load_scripts(a);
    /* A first wait: the subscriptions are made and kept. */
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    if (!waiter_start(&w, c, name, 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    pthread_join(w.th, NULL);
    joined = 1;
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "first wait: %d %s", w.rc, w.err)) goto out;
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;

    /* The server drops the waiter's connection, and with it the
     * subscriptions. */
    gen = rlk_client_generation(c);
    snprintf(id, sizeof id, "%lld", (long long)rlk_client_info(c)->client_id);
    CHECK_EQ_INT(CMD_INT(admin, "CLIENT", "KILL", "ID", id), 1);

    la = ACQ(a, name, 30000);
    if (!la) goto out;
    fence = rlk_lock_fence(la);
    reset_stats(admin);
    if (!waiter_start(&w, c, name, 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    joined = 0;
    /* Registered, and subscribed again on the new connection. */
    if (!CHECK_MSG(wait_waiters(name, 1, LONG_MS), "waiter: %s",
                   waiter_done(&w) ? w.err : "still waiting"))
        goto out;
    CHECK(wait_calls(admin, "subscribe", 2, LONG_MS));
    t_rel = ts_now_ms();
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    pthread_join(w.th, NULL);
    joined = 1;
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "second wait: %d %s", w.rc, w.err)) goto out;
    CHECK(rlk_client_generation(c) > gen);
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
    CHECK_MSG(w.done_at - t_rel < (slow ? 2500 : 1000),
              "acquired %lld ms after the release (re-check 5000)", (long long)(w.done_at - t_rel));
    CHECK(CMD_STR(admin, got, "GET", name) == 1);
    CHECK_EQ_STR(got, rlk_lock_token(w.l));
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* A wait whose waiting connection breaks goes on: a RESP2 waiter whose
 * waiting connection the server closes connects and subscribes again,
 * keeps its place in line, and is handed the lock by the release. */
static void test_wait_survives_lost_connection(void)
{
    const char *name = "ho-failed";
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, 2, 5000, NULL);
    struct waiter w;
    int joined = 0, started = 0;
    rlk_lock *la = NULL;
    if (!a || !c) goto out;
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    reset_stats(admin);
    if (!waiter_start(&w, c, name, 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
    CHECK(wait_calls(admin, "subscribe", 2, LONG_MS));
    /* The waiter's listener: the one RESP2 subscriber (the holder's
     * RESP3 connection is a subscriber too, to its handoff channel). */
    {
        rlk_resp_value *v = CMD(admin, "CLIENT", "LIST", "TYPE", "pubsub");
        char id[32] = "";
        int n = 0;
        for (const char *line = v && v->str ? v->str : ""; *line;) {
            const char *end = strchr(line, '\n');
            size_t len = end ? (size_t)(end - line) : strlen(line);
            if (memmem(line, len, " resp=2", 7) && sscanf(line, "id=%31s", id) == 1) n++;
            line += len + (end ? 1 : 0);
        }
        CHECK_EQ_INT(n, 1);
        CHECK_EQ_INT(CMD_INT(admin, "CLIENT", "KILL", "ID", id), 1);
    }
    CHECK_MSG(wait_calls(admin, "subscribe", 4, LONG_MS), "the waiter did not subscribe again");
    CHECK(!waiter_done(&w));
    CHECK_EQ_INT(waiter_entries("{ho-failed}:waiters"), 1);
    if (!hand_over(&la, &w, &joined)) goto out;
    tick_until_confirmed(c, w.l, 5000);
    CHECK(rlk_lock_remaining_ms(w.l) > 5000);
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    if (la) rlk_lock_release(la);
    if (w.l) rlk_lock_release(w.l);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

static void test_wait_again_resp3_keeps_subscription(void) { wait_twice(3); }
static void test_wait_again_resp2_subscribes_again(void) { wait_twice(2); }

/* A message on the waiter's handoff channel that does not name its
 * token (a handoff meant for an earlier wait, or a forgery) is not the
 * lock: the waiter looks again at once, stays in line, and gets the
 * lock from the real release with the real fence. */
static void test_handoff_other_token_ignored(void)
{
    const char *name = "ho-forged";
    /* Re-check 30 s, TTL 30 s: the waiter's next own try is 10 s away,
     * so a try soon after a message is the message's doing. */
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, 0, 30000, NULL);
    struct waiter w;
    int joined = 0, started = 0, i;
    char tok[1][96], ch[96], msg[3][160], got[256], waiters[64];
    rlk_lock *la = NULL;
    uint64_t fence;
    HO_KEY(waiters, name, "waiters");
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, waiters, "{ho-forged}:queue");
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    fence = rlk_lock_fence(la);
    if (!waiter_start(&w, c, name, 30000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS)) ||
        !newest_waiter(name, tok, 0, tok[0], sizeof tok[0]) ||
        !waiter_channel(name, tok[0], ch, sizeof ch))
        goto out;
    snprintf(msg[0], sizeof msg[0], "999 sometoken");
    snprintf(msg[1], sizeof msg[1], "999 %sx", tok[0]); /* its token and more */
    snprintf(msg[2], sizeof msg[2], "999 %.31s", tok[0]); /* a prefix of it */
    reset_stats(admin);
    for (i = 0; i < 3; i++) {
        CHECK_EQ_INT(CMD_INT(admin, "PUBLISH", ch, msg[i]), 1);
        CHECK_MSG(wait_calls(admin, SCRIPT_CALLS, i + 1, LONG_MS), "no try after message %d", i + 1);
        CHECK_MSG(!waiter_done(&w), "the waiter returned on \"%s\"", msg[i]);
    }
    CHECK_EQ_INT(CMD_INT(admin, "HEXISTS", waiters, tok[0]), 1);
    CHECK(CMD_STR(admin, got, "GET", name) == 1);
    {
        char want[256]; /* the holder's token, marked by the waiter in line */
        snprintf(want, sizeof want, "%s+w", rlk_lock_token(la));
        CHECK_EQ_STR(got, want);
    }

    if (!hand_over(&la, &w, &joined)) goto out;
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
    CHECK(CMD_STR(admin, got, "GET", name) == 1);
    CHECK_EQ_STR(got, tok[0]);
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* A reentrant lock taken again by its holder (same client, same thread)
 * with a wait is one more hold at once, valid for its TTL, whatever the
 * client's earlier waits left behind.  Here the first hold came from a
 * wait, which under RESP3 leaves the client subscribed to the lock's
 * channels (so the second acquire starts with the wait script). */
static void reentrant_again_after_wait(int protocol)
{
    char name[32], got[16];
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, protocol, 0, NULL);
    rlk_lock_options o;
    rlk_lock *la, *l1 = NULL, *l2 = NULL;
    int64_t drift = 10000 / 100 + 2, rem;
    int rc;
    snprintf(name, sizeof name, "ho-renest-%d", protocol);
    if (!a || !c) goto out;
    CMD(admin, "DEL", name);
    /* A holder that goes away: its hold runs out in 300 ms. */
    la = ACQ_R(a, name, 300);
    if (!la) goto out;
    rlk_lock_forget(la);
    opts(&o, 10000, LONG_MS, RLK_LOCK_REENTRANT, 0, NULL);
    rc = rlk_lock_acquire(c, name, &o, &l1);
    if (!CHECK_MSG(rc == RLK_OK && l1, "first: %d %s", rc, rlk_client_errmsg(c))) goto out;
    CHECK_EQ_INT(rlk_lock_holds(l1), 1);

    rc = rlk_lock_acquire(c, name, &o, &l2);
    if (!CHECK_MSG(rc == RLK_OK && l2, "again: %d %s", rc, rlk_client_errmsg(c))) goto out;
    CHECK_EQ_INT(rlk_lock_holds(l2), 2);
    CMD_STR(admin, got, "HGET", name, rlk_lock_token(l2));
    CHECK_EQ_STR(got, "2");
    rem = rlk_lock_remaining_ms(l2);
    CHECK_MSG(rem > 10000 - drift - MARGIN, "remaining %lld of a hold just taken (TTL 10000)",
              (long long)rem);
    CHECK_EQ_INT(rlk_lock_is_lost(l2), 0);

    /* The inner release leaves the outer hold. */
    CHECK_EQ_INT(rlk_lock_release(l2), RLK_OK);
    l2 = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 1);
    CMD_STR(admin, got, "HGET", name, rlk_lock_token(l1));
    CHECK_EQ_STR(got, "1");
    CHECK_EQ_INT(rlk_lock_release(l1), RLK_OK);
    l1 = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    if (l2) rlk_lock_release(l2);
    if (l1) rlk_lock_release(l1);
    rlk_client_free(a);
    rlk_client_free(c);
}

static void test_reentrant_again_after_wait_resp3(void) { reentrant_again_after_wait(3); }
static void test_reentrant_again_after_wait_resp2(void) { reentrant_again_after_wait(2); }

/* A waiter gets a lock of the kind it asked for, whatever the kind of
 * the holder that hands it over: a simple waiter behind a reentrant
 * holder gets a string it can release, a reentrant waiter behind a
 * simple holder a hash with its field. */
static void handoff_other_kind(rlk_lock_kind holder, rlk_lock_kind waiter)
{
    const char *name = holder == RLK_LOCK_REENTRANT ? "ho-kind-rs" : "ho-kind-sr";
    rlk_client *a = CLIENT(), *c = CLIENT();
    struct waiter w;
    int joined = 0, started = 0;
    char got[256];
    rlk_lock *la = NULL;
    int rc;
    if (!a || !c) goto out;
    CMD(admin, "DEL", name);
    la = acquire(a, name, 30000, holder, 0, NULL, __LINE__);
    if (!la) goto out;
    if (!waiter_start(&w, c, name, 20000, HO_WAIT_MS, waiter)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
    if (!hand_over(&la, &w, &joined)) goto out;
    CMD_STR(admin, got, "TYPE", name);
    CHECK_EQ_STR(got, waiter == RLK_LOCK_SIMPLE ? "string" : "hash");
    rc = rlk_lock_release(w.l);
    w.l = NULL;
    CHECK_MSG(rc == RLK_OK, "the waiter's release: %d %s", rc, rlk_client_errmsg(c));
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    CMD(admin, "DEL", name);
    rlk_client_free(a);
    rlk_client_free(c);
}

static void test_handoff_simple_waiter_reentrant_holder(void)
{
    handoff_other_kind(RLK_LOCK_REENTRANT, RLK_LOCK_SIMPLE);
}

static void test_handoff_reentrant_waiter_simple_holder(void)
{
    handoff_other_kind(RLK_LOCK_SIMPLE, RLK_LOCK_REENTRANT);
}

/* The first of the waiters w[0..n-1] not joined yet to return, joined;
 * -1 when none returns within LONG_MS (a test failure). */
static int join_first(struct waiter *w, int *joined, int n)
{
    int64_t deadline = ts_now_ms() + LONG_MS;
    int i;
    for (;;) {
        for (i = 0; i < n; i++)
            if (!joined[i] && waiter_done(&w[i])) {
                pthread_join(w[i].th, NULL);
                joined[i] = 1;
                return i;
            }
        if (!CHECK_MSG(ts_now_ms() < deadline, "no waiter returned within %lld ms",
                       (long long)LONG_MS))
            return -1;
        ts_pause_ms(2);
    }
}

/* After 2 s of handing the lock from waiter to waiter, a release frees
 * it and resplock keeps away for a window (the waiters hash's "~yield":
 * "y END", the server's ms), so that clients that poll get their turn.
 * A client new to the lock keeps away too: its first try (a simple
 * lock's plain SET NX, a reentrant lock's script in mode '0') does not
 * take the free lock, and one that waits gets it only once the window is
 * over (its fence is the server's clock then), as the waiter in line
 * does. */
static void yield_window(rlk_lock_kind kind)
{
    const char *name = kind == RLK_LOCK_SIMPLE ? "ho-yield-s" : "ho-yield-r";
    rlk_client *c[2] = {CLIENT(), CLIENT()}, *fresh = CLIENT(), *fresh_w = CLIENT();
    struct waiter w[2];
    int joined[2] = {0, 0}, started = 0, cur = 0, handoffs = 0, i, k;
    char waiters[64], queue[64], y[64];
    rlk_lock *held = NULL;
    long long end = 0, after;
    int64_t t0;
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!c[0] || !c[1] || !fresh || !fresh_w) goto out;
    CMD(admin, "DEL", name, waiters, queue);
    /* The new clients connect (and the scripts are loaded) on another
     * lock: what they send for this one is their first try. */
    CHECK_EQ_INT(try_acquire(fresh, "ho-yield-other", kind), RLK_OK);
    CHECK_EQ_INT(try_acquire(fresh_w, "ho-yield-other", kind), RLK_OK);
    held = acquire(c[0], name, 10000, kind, 0, NULL, __LINE__);
    if (!held) goto out;
    /* The chain: the other client waits in line, the holder releases
     * (handing the lock over), and the two swap, until a release frees
     * the lock and opens the window. */
    t0 = ts_now_ms();
    for (;;) {
        if (!waiter_start(&w[0], c[1 - cur], name, 10000, HO_WAIT_MS, kind)) goto out;
        started = 1;
        joined[0] = 0;
        if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
        CHECK_EQ_INT(rlk_lock_release(held), RLK_OK);
        held = NULL;
        if (CMD_STR(admin, y, "HGET", waiters, "~yield") == 1) break;
        pthread_join(w[0].th, NULL);
        joined[0] = 1;
        if (!CHECK_MSG(w[0].rc == RLK_OK && w[0].l, "handoff %d: %d %s", handoffs + 1, w[0].rc,
                       w[0].err))
            goto out;
        held = w[0].l;
        w[0].l = NULL;
        handoffs++;
        cur = 1 - cur;
        if (!CHECK_MSG(ts_now_ms() - t0 < 10000, "no window after %d handoffs in 10 s", handoffs))
            goto out;
    }
    CHECK_MSG(ts_now_ms() - t0 >= 2000 && handoffs > 10, "the window opened after %d handoffs in %lld ms",
              handoffs, (long long)(ts_now_ms() - t0));
    CHECK_MSG(sscanf(y, "y %lld", &end) == 1, "~yield is \"%s\"", y);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);

    /* In the window the lock is free, and a new client's try finds it
     * busy; nothing of it is left behind. */
    CHECK_EQ_INT(try_acquire(fresh, name, kind), RLK_LOCK_BUSY);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
    /* A new client that waits joins the line behind the waiter. */
    if (!waiter_start(&w[1], fresh_w, name, 10000, HO_WAIT_MS, kind)) goto out;
    started = 2;
    joined[1] = 0;
    {
        int64_t deadline = ts_now_ms() + LONG_MS;
        while (!waiter_done(&w[1]) && waiter_entries(waiters) < 2 && ts_now_ms() < deadline)
            ts_pause_ms(1);
    }
    after = server_time_ms();
    CHECK_MSG(after < end, "the new clients' tries ended %lld ms after the window: the test cannot tell",
              after - end);
    /* Each gets the lock once the window is over, one after the other. */
    for (k = 0; k < 2; k++) {
        i = join_first(w, joined, 2);
        if (i < 0) goto out;
        if (!CHECK_MSG(w[i].rc == RLK_OK && w[i].l, "%s: %d %s", i ? "the new client" : "the waiter",
                       w[i].rc, w[i].err))
            continue;
        CHECK_MSG(rlk_lock_fence(w[i].l) >= (uint64_t)end * 1000,
                  "%s got the lock %lld ms before the window ended", i ? "the new client" : "the waiter",
                  end - (long long)(rlk_lock_fence(w[i].l) / 1000));
        CHECK_EQ_INT(rlk_lock_release(w[i].l), RLK_OK);
        w[i].l = NULL;
    }
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
    CHECK(nothing_in_line(waiters, queue));
out:
    if (held) rlk_lock_release(held);
    waiters_end(w, joined, started);
    CMD(admin, "DEL", name, waiters, queue);
    for (i = 0; i < 2; i++) rlk_client_free(c[i]);
    rlk_client_free(fresh);
    rlk_client_free(fresh_w);
}

static void test_yield_window_new_client_simple(void) { yield_window(RLK_LOCK_SIMPLE); }
static void test_yield_window_new_client_reentrant(void) { yield_window(RLK_LOCK_REENTRANT); }

/* ------------------------------------------------------------------ */
/* Users without channel permission                                    */

/* ACL users of the shared server (password "pw"): one made the Redis 7
 * way (acl-pubsub-default resetchannels: no channel at all), and one
 * that may not run SUBSCRIBE. */
#define NOCHAN "lw-nochan"
#define NOSUB "lw-nosub"

static void make_users(void)
{
    CMD(admin, "ACL", "DELUSER", NOCHAN, NOSUB);
    CMD(admin, "ACL", "SETUSER", NOCHAN, "on", ">pw", "~*", "+@all");
    CMD(admin, "ACL", "SETUSER", NOSUB, "on", ">pw", "~*", "&*", "+@all", "-subscribe");
}

static rlk_client *user_client(const char *user, int protocol, int64_t recheck_ms)
{
    char url[128];
    snprintf(url, sizeof url, "redis://%s:pw@127.0.0.1:%d", user, srv->port);
    return CLIENT_EX(url, protocol, recheck_ms, NULL);
}

/* The holder *la releases, and the waiter w gets the lock and releases
 * it: nothing is left of name. */
static void release_to(rlk_lock **la, struct waiter *w, int *joined, const char *name)
{
    if (hand_over(la, w, joined)) {
        CHECK_EQ_INT(rlk_lock_release(w->l), RLK_OK);
        w->l = NULL;
    }
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
}

/* A waiter whose SUBSCRIBE the server refuses (under RESP3 on its one
 * connection, under RESP2 on the wait's own) still gets the lock once
 * the holder releases it, within its wait: it re-checks, and is not in
 * line, where nobody would hear its handoff. */
static void wait_without_channels(const char *user, int protocol)
{
    char name[48], queue[64];
    rlk_client *a = CLIENT(), *c = user_client(user, protocol, 200);
    struct waiter w;
    int joined = 0, started = 0;
    const char *note;
    rlk_lock *la = NULL;
    snprintf(name, sizeof name, "nochan-wait-%s-%d", user, protocol);
    HO_KEY(queue, name, "queue");
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, queue);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    reset_stats(admin);
    if (!waiter_start(&w, c, name, 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    /* Its first try and a re-check, then the release. */
    CHECK(wait_calls(admin, "set", 3, LONG_MS));
    CHECK_MSG(!waiter_done(&w), "the waiter returned: %d %s", w.rc, w.err);
    CHECK_EQ_INT(CMD_INT(admin, "LLEN", queue), 0);
    release_to(&la, &w, &joined, name);
    /* Said, for a -v to print. */
    note = rlk_client_wait_note(c);
    CHECK_MSG(note && ts_contains(note, "SUBSCRIBE refused (NOPERM") && ts_contains(note, "re-check"),
              "note: %s", note ? note : "(none)");
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

static void test_wait_without_channels_resp3(void)
{
    make_users();
    wait_without_channels(NOCHAN, 3);
    wait_without_channels(NOSUB, 3);
}

static void test_wait_without_channels_resp2(void)
{
    make_users();
    wait_without_channels(NOCHAN, 2);
    wait_without_channels(NOSUB, 2);
}

/* A user given only the channels the lock uses waits in line, and is
 * handed the lock by the release, under RESP3 and RESP2. */
static void test_wait_with_lock_channels(void)
{
    const char *user = "lw-lockchans";
    CMD(admin, "ACL", "DELUSER", user);
    CMD(admin, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "&resplock:handoff:*",
        "&redisson_lock__channel:*");
    for (int protocol = 3; protocol >= 2; protocol--) {
        char name[32];
        rlk_client *a = CLIENT(), *c = user_client(user, protocol, 10000);
        struct waiter w;
        int joined = 0, started = 0;
        rlk_lock *la = NULL;
        snprintf(name, sizeof name, "lockchans-%d", protocol);
        if (!a || !c) goto next;
        CMD(admin, "DEL", name);
        la = ACQ(a, name, 30000);
        if (!la) goto next;
        if (!waiter_start(&w, c, name, 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto next;
        started = 1;
        if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto next;
        /* Handed over by the release (its re-check is 10 s away). */
        if (hand_over(&la, &w, &joined)) CHECK(rlk_client_wait_note(c) == NULL);
    next:
        if (la) rlk_lock_release(la);
        waiters_end(&w, &joined, started);
        CMD(admin, "DEL", name);
        rlk_client_free(a);
        rlk_client_free(c);
    }
    CMD(admin, "ACL", "DELUSER", user);
}

/* Connections the shared server has accepted so far. */
static long long connections_received(void)
{
    rlk_resp_value *v = CMD(admin, "INFO", "stats");
    const char *p = v && v->str ? strstr(v->str, "total_connections_received:") : NULL;
    return p ? strtoll(p + 27, NULL, 10) : -1;
}

/* A RESP2 wait whose listener the server drops because its user lost
 * the channels (Redis 7 disconnects the subscribers an ACL change no
 * longer permits): opened again and refused, the wait goes on by its
 * re-checks, without a connection opened at every turn, and gets the
 * lock once the holder releases it. */
static void test_wait_listener_refused_later(void)
{
    const char *name = "nochan-later", *user = "lw-chan";
    rlk_client *a = CLIENT(), *c;
    struct waiter w;
    int joined = 0, started = 0;
    long long conns, more;
    rlk_lock *la = NULL;
    CMD(admin, "ACL", "DELUSER", user);
    CMD(admin, "ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all");
    c = user_client(user, 2, 200);
    if (!a || !c) goto out;
    CMD(admin, "DEL", name);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    if (!waiter_start(&w, c, name, 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
    reset_stats(admin); /* resets the connections counted too */
    conns = connections_received();
    CMD(admin, "ACL", "SETUSER", user, "resetchannels");
    CHECK(wait_calls(admin, SCRIPT_CALLS, 4, LONG_MS));
    more = connections_received() - conns;
    CHECK_MSG(more >= 1 && more <= 2, "%lld connections opened over 4 re-checks", more);
    CHECK_MSG(!waiter_done(&w), "the waiter returned: %d %s", w.rc, w.err);
    release_to(&la, &w, &joined, name);
    CHECK(rlk_client_wait_note(c) != NULL);
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
    CMD(admin, "ACL", "DELUSER", user);
}

/* A holder that may not publish (no channel): its releases free the
 * lock and say so, a reentrant lock's (whose release publishes "0") and
 * a simple lock's with a waiter in line (whose release would hand it
 * over with a message): the waiter, whom the release cannot tell, takes
 * the lock at its next re-check, within its wait. */
static void release_without_channels(int protocol)
{
    char name[48];
    rlk_client *h = user_client(NOCHAN, protocol, 0), *c = CLIENT_EX(srv_url, 0, 200, NULL);
    struct waiter w;
    int joined = 0, started = 0, rc;
    rlk_lock *la = NULL;
    if (!h || !c) goto out;
    snprintf(name, sizeof name, "nochan-rel-r-%d", protocol);
    CMD(admin, "DEL", name);
    la = ACQ_R(h, name, 30000);
    if (!la) goto out;
    rc = rlk_lock_release(la);
    la = NULL;
    CHECK_MSG(rc == RLK_OK, "reentrant release: %d %s", rc, rlk_client_errmsg(h));
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);

    snprintf(name, sizeof name, "nochan-rel-s-%d", protocol);
    CMD(admin, "DEL", name);
    la = ACQ(h, name, 30000);
    if (!la) goto out;
    if (!waiter_start(&w, c, name, 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
    release_to(&la, &w, &joined, name);
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(h);
    rlk_client_free(c);
}

static void test_release_without_channels(void)
{
    make_users();
    release_without_channels(2);
    release_without_channels(3);
}

/* ------------------------------------------------------------------ */
/* The fair kind: the line's order is the order served                 */

/* Six fair waiters, each started once the one before is in line, are
 * served exactly in that order (serve_in_order). */
static void test_fair_order(void) { serve_in_order("fair-order", RLK_LOCK_FAIR, 6); }

/* A free fair lock with a live waiter in line (the holder's key gone, as
 * when its TTL ran out or a claim was not confirmed), the waiter's next
 * look 10 s away: a fair newcomer does not take it, a simple one's
 * SET NX does (what the simple kind does not promise); the waiter takes
 * it at its wait's end, its last try, being first in line. */
static void test_fair_newcomer_does_not_barge(void)
{
    const char *name = "fair-barge";
    rlk_client *a = CLIENT(), *b = CLIENT(), *c = CLIENT_EX(srv_url, 0, 10000, NULL);
    struct waiter w;
    int joined = 0, started = 0;
    char queue[64];
    rlk_lock *la = NULL;
    HO_KEY(queue, name, "queue");
    if (!a || !b || !c) goto out;
    CMD(admin, "DEL", name, queue);
    la = acquire(a, name, 30000, RLK_LOCK_FAIR, 0, NULL, __LINE__);
    if (!la) goto out;
    if (!waiter_start(&w, c, name, 30000, 3000, RLK_LOCK_FAIR)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
    CMD(admin, "DEL", name);
    CHECK_EQ_INT(try_acquire(b, name, RLK_LOCK_FAIR), RLK_LOCK_BUSY);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
    CHECK_EQ_INT(CMD_INT(admin, "LLEN", queue), 1);
    CHECK_EQ_INT(try_acquire(b, name, RLK_LOCK_SIMPLE), RLK_OK);
    CHECK_MSG(!waiter_done(&w), "the waiter returned early: %d %s", w.rc, w.err);
    pthread_join(w.th, NULL);
    joined = 1;
    CHECK_MSG(w.rc == RLK_OK && w.l, "the waiter, first in line at its last try: %d %s", w.rc, w.err);
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    CMD(admin, "DEL", name);
    rlk_client_free(a);
    rlk_client_free(b);
    rlk_client_free(c);
}

/* A fair waiter that cannot hear a handoff (its user has no channels)
 * polls in line and keeps its place: the release frees the lock for it
 * rather than hand it to the fair waiter behind, which is served next
 * (at its re-check: that user may not publish a handoff either). */
static void test_fair_unheard_keeps_place(void)
{
    const char *name = "fair-unheard";
    rlk_client *a = CLIENT(), *c[2];
    struct waiter w[2];
    int joined[2] = {0, 0}, started = 0, first;
    char queue[64];
    rlk_lock *la = NULL;
    make_users();
    c[0] = user_client(NOCHAN, 3, 200);
    c[1] = CLIENT();
    HO_KEY(queue, name, "queue");
    if (!a || !c[0] || !c[1]) goto out;
    CMD(admin, "DEL", name, queue);
    la = acquire(a, name, 30000, RLK_LOCK_FAIR, 0, NULL, __LINE__);
    if (!la) goto out;
    for (int i = 0; i < 2; i++) {
        if (!waiter_start(&w[i], c[i], name, 30000, HO_WAIT_MS, RLK_LOCK_FAIR)) goto out;
        started++;
        if (!CHECK_MSG(wait_waiters(name, i + 1, LONG_MS), "waiter %d did not register", i + 1))
            goto out;
    }
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    first = join_first(w, joined, 2);
    if (!CHECK_MSG(first == 0, "waiter %d was served first", first + 1)) goto out;
    CHECK_MSG(w[0].rc == RLK_OK && w[0].l, "the unheard waiter: %d %s", w[0].rc, w[0].err);
    if (w[0].l) CHECK_EQ_INT(rlk_lock_release(w[0].l), RLK_OK);
    w[0].l = NULL;
    pthread_join(w[1].th, NULL);
    joined[1] = 1;
    CHECK_MSG(w[1].rc == RLK_OK && w[1].l, "the waiter behind: %d %s", w[1].rc, w[1].err);
out:
    if (la) rlk_lock_release(la);
    waiters_end(w, joined, started);
    CMD(admin, "DEL", name);
    rlk_client_free(a);
    rlk_client_free(c[0]);
    rlk_client_free(c[1]);
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;

    RUN(test_wait_zero_is_one_try);
    RUN(test_wait_bounded);
    RUN(test_wake_on_release_resp3);
    RUN(test_wake_on_release_resp2);
    RUN(test_wake_on_expiry_resp3);
    RUN(test_wake_on_expiry_resp2);
    RUN(test_handoff_fifo);
    RUN(test_handoff_skips_dead_entry);
    RUN(test_handoff_skips_not_listening);
    RUN(test_handoff_wait_timeout_leaves_queue);
    RUN(test_handoff_acquire_when_free_leaves_queue);
    RUN(test_handoff_reentrant);
    RUN(test_handoff_release_by_token);
    RUN(test_handoff_validity);
    RUN(test_handoff_full_ttl);
    RUN(test_wait_again_resp3_keeps_subscription);
    RUN(test_wait_after_reconnect_subscribes_again);
    RUN(test_wait_survives_lost_connection);
    RUN(test_wait_again_resp2_subscribes_again);
    RUN(test_handoff_other_token_ignored);
    RUN(test_reentrant_again_after_wait_resp3);
    RUN(test_reentrant_again_after_wait_resp2);
    RUN(test_handoff_simple_waiter_reentrant_holder);
    RUN(test_handoff_reentrant_waiter_simple_holder);
    RUN(test_wait_without_channels_resp3);
    RUN(test_wait_without_channels_resp2);
    RUN(test_wait_listener_refused_later);
    RUN(test_wait_with_lock_channels);
    RUN(test_release_without_channels);
    RUN(test_yield_window_new_client_simple);
    RUN(test_yield_window_new_client_reentrant);
    RUN(test_fair_order);
    RUN(test_fair_newcomer_does_not_barge);
    RUN(test_fair_unheard_keeps_place);

    return locktest_finish(t0);
}
