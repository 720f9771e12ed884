/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Locks on a REAL Redis Cluster (tests/cluster.h: 3 primaries, 3
 * replicas), through the public API only, every client made with node
 * 0's URL alone: it must find the cluster and route each name to the
 * primary owning its slot by itself.
 *
 *   a. names on all three shards: acquire, status, renewed by the
 *      watchdog past 2x their TTL (the key read on its owner), release
 *      (the key gone on its owner);
 *   b. a waiter is woken by the release (not by its re-check);
 *   c. a slot migrated step by step while its lock is held and waited
 *      for: the renewals follow the key, the waiter gets the lock after
 *      the release, never both at once;
 *   d. kill -9 of a primary: the locks of the other shards go on, those
 *      of the failed shard are kept (the promoted replica has the key
 *      with their token) or reported lost, a waiter acquires on the new
 *      primary, and no call outlives its deadline;
 *   e. Redisson 3.22+ waiters on a cluster (SSUBSCRIBE to the slot's
 *      owner) hear a release's "0", and no cluster-wide PUBLISH is sent;
 *   f. names of one hash tag land on one node;
 *   g. SIGSTOP of a primary (its connection up and silent): a lock of
 *      its shard is kept and renewed on the promoted replica, and a
 *      release reaches the new primary.
 *   h. seeds that are not one cluster (a node of another, real, cluster
 *      of one node; a standalone server; the same standalone server
 *      twice): an acquire fails with RLK_ERR_INVALID naming the seed,
 *      whatever its wait (for ever included), blocking, with the
 *      watchdog thread, or with no wait, long before its wait's end;
 *   i. a slot in a MOVED loop (its two primaries name each other after
 *      a bad CLUSTER SETSLOT): an acquire's wait tries again until it
 *      ends (MOVED replies of more than one try), then fails with
 *      RLK_ERR_SERVER naming the loop; with no wait, the first try's
 *      loop ends it; mended, the slot's lock is taken again.
 *
 * The tests run in order on one cluster.  The state of the servers is
 * read with rlk_conn on the node that owns a key, following MOVED and
 * ASK as a cluster client would.  Timings are printed as "# ..." lines,
 * never asserted; deadlines are bounds a call must keep, with slack.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "cluster.h"
#include "keys.h"
#include "locktest.h"
#include "resplock.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tc_cluster *cl;
static char seed_url[64]; /* node 0's URL: the only one the clients get */
static rlk_conn *nconn[TC_NODES];
static int64_t SLACK; /* how late past its deadline a call may return */

/* ------------------------------------------------------------------ */
/* The cluster as the test sees it                                     */

static rlk_conn *node_conn(int i, int line)
{
    char url[64];
    if (i < 0 || i >= TC_NODES) return NULL;
    if (!nconn[i]) {
        tc_url(cl, i, url, sizeof url);
        nconn[i] = connect_url(url, 3, NULL, NULL, line);
    }
    return nconn[i];
}
#define NODE(i) node_conn(i, __LINE__)

/* A node killed or restarted: its cached connection goes. */
static void node_forget(int i)
{
    rlk_conn_free(nconn[i]);
    nconn[i] = NULL;
}

static unsigned slot_of(const char *key)
{
    return rlk__keyslot(key, strlen(key));
}

/* The primaries now, by their own word; how many (3 when all is well). */
static int primaries(int p[TC_NODES])
{
    int n = 0;
    for (int i = 0; i < TC_NODES; i++)
        if (tc_alive(cl, i) && tc_is_primary(cl, i) == 1) p[n++] = i;
    return n;
}

/* A name "PREFIX-K" whose slot primary `owner` serves, into out. */
static int pick_name(char *out, size_t n, const char *prefix, int owner, int line)
{
    for (int k = 0; k < 300; k++) {
        snprintf(out, n, "%s-%d", prefix, k);
        if (tc_owner(cl, slot_of(out)) == owner) return 1;
    }
    out[0] = '\0';
    return tl_ok(0, __FILE__, line, "no name %s-K on node %d in 300 tries", prefix, owner);
}
#define PICK(out, prefix, owner) pick_name(out, sizeof out, prefix, owner, __LINE__)

/* The node a MOVED or ASK reply points to, or -1. */
static int redirect_node(const rlk_resp_value *v, int *ask)
{
    const char *colon;
    rlk_error_class ec = rlk_reply_error_class(v);
    if ((ec != RLK_EC_MOVED && ec != RLK_EC_ASK) || !v->str) return -1;
    *ask = ec == RLK_EC_ASK;
    colon = memrchr(v->str, ':', v->len);
    if (!colon) return -1;
    return tc_node_of_port(cl, atoi(colon + 1));
}

/*
 * One command on a key, sent to node i and then where MOVED or ASK (with
 * ASKING first) say, at most three hops; *at is the node that answered.
 * NULL (a test failure) when no node answered.
 */
static rlk_resp_value *key_cmd(int i, int *at, int line, int argc, const char **argv)
{
    for (int hop = 0; hop < 4; hop++) {
        rlk_conn *k = node_conn(i, line);
        rlk_resp_value *v = NULL;
        int ask = 0, rc;
        if (!k) return NULL;
        rc = rlk_conn_command(k, &v, argc, argv, NULL);
        if (!tl_ok(rc == RLK_OK, __FILE__, line, "%s on node %d: %d %s", argv[0], i, rc,
                   rlk_conn_errmsg(k)))
            return NULL;
        int to = redirect_node(v, &ask);
        if (to < 0) {
            if (at) *at = i;
            return v;
        }
        i = to;
        if (ask) {
            k = node_conn(i, line);
            if (!k || rlk_conn_command(k, &v, 1, (const char *[]){"ASKING"}, NULL) != RLK_OK)
                return NULL;
            rc = rlk_conn_command(k, &v, argc, argv, NULL);
            if (!tl_ok(rc == RLK_OK, __FILE__, line, "%s on node %d: %d", argv[0], i, rc))
                return NULL;
            if (at) *at = i;
            return v;
        }
    }
    tl_ok(0, __FILE__, line, "%s %s: redirected more than three times", argv[0], argv[1]);
    return NULL;
}

/*
 * What a lock's key holds for token, looked up from node hint: 1 the
 * token holds it (a simple lock's value, a field of a reentrant lock's
 * hash), 0 it does not (absent, or another's), -1 no answer.  *pttl (may
 * be NULL) gets the key's PTTL, *at the node that has it.
 */
static int holds_at(int hint, const char *name, const char *token, rlk_lock_kind kind,
                    long long *pttl, int *at, int line)
{
    const char *get[2] = {"GET", name}, *hex[3] = {"HEXISTS", name, token},
               *pt[2] = {"PTTL", name};
    rlk_resp_value *v;
    int held;
    if (kind == RLK_LOCK_SIMPLE) {
        v = key_cmd(hint, at, line, 2, get);
        if (!v) return -1;
        if (rlk_reply_error_class(v) == RLK_EC_CLUSTERDOWN) return -2;
        /* The token, or with the mark "+w" of waiters in line. */
        size_t tl = token ? strlen(token) : 0;
        held = v->type == RLK_RESP_BULK && token &&
               (v->len == tl || (v->len == tl + 2 && memcmp(v->str + tl, "+w", 2) == 0)) &&
               memcmp(v->str, token, tl) == 0;
    } else {
        v = key_cmd(hint, at, line, 3, hex);
        if (!v) return -1;
        if (rlk_reply_error_class(v) == RLK_EC_CLUSTERDOWN) return -2;
        held = v->type == RLK_RESP_INTEGER && v->integer == 1;
    }
    if (pttl) {
        v = key_cmd(at ? *at : hint, NULL, line, 2, pt);
        *pttl = v && v->type == RLK_RESP_INTEGER ? v->integer : LLONG_MIN;
    }
    return held;
}

/* The key's value as a string ("" when absent), read on node hint
 * following redirects. */
static void value_at(int hint, const char *name, char *out, size_t n, int *at, int line)
{
    rlk_resp_value *v = key_cmd(hint, at, line, 2, (const char *[]){"GET", name});
    out[0] = '\0';
    if (v && v->type == RLK_RESP_BULK) snprintf(out, n, "%.*s", (int)v->len, v->str);
    /* The holder's token, less the mark "+w" of waiters in line. */
    size_t len = strlen(out);
    if (len > 2 && strcmp(out + len - 2, "+w") == 0) out[len - 2] = '\0';
}

/* EXISTS key on node i itself (no redirect followed: a redirect is a
 * test failure), as 0/1, or -1. */
static long long exists_on(int i, const char *key, int line)
{
    rlk_conn *k = node_conn(i, line);
    rlk_resp_value *v = NULL;
    if (!k || rlk_conn_command(k, &v, 2, (const char *[]){"EXISTS", key}, NULL) != RLK_OK)
        return -1;
    if (!tl_ok(v->type == RLK_RESP_INTEGER, __FILE__, line, "EXISTS %s on node %d: %c%.*s", key,
               i, v->type, v->str ? (int)v->len : 0, v->str ? v->str : ""))
        return -1;
    return v->integer;
}

/* ------------------------------------------------------------------ */
/* Clients and held locks                                              */

/* A client of the seed's URL alone.  thread: the watchdog thread renews
 * its watchdog locks; else it is in tick mode (for locks without one). */
static rlk_client *new_client(int thread, int64_t recheck_ms, int timeout_ms, int line)
{
    rlk_client_config cfg;
    rlk_client *c;
    int rc;
    client_cfg(&cfg, seed_url);
    cfg.recheck_ms = recheck_ms;
    if (timeout_ms) cfg.conn.connect_timeout_ms = cfg.conn.command_timeout_ms = timeout_ms;
    if (!thread) return client_with(&cfg, line);
    c = rlk_client_new(&cfg);
    if (!tl_ok(c != NULL, __FILE__, line, "rlk_client_new")) return NULL;
    rc = rlk_client_connect(c);
    if (rc == RLK_OK) rc = rlk_client_watchdog_start(c);
    if (!tl_ok(rc == RLK_OK, __FILE__, line, "client %s: %d %s", seed_url, rc,
               rlk_client_errmsg(c))) {
        rlk_client_free(c);
        return NULL;
    }
    return c;
}
#define NEW_CLIENT(thread, recheck, timeout) new_client(thread, recheck, timeout, __LINE__)

/* A lock the test holds and watches on the servers. */
struct held {
    char name[64];
    rlk_lock_kind kind;
    int64_t ttl;
    rlk_lock *l;
    struct lost_rec lost;
    int node;            /* where its key was last seen */
    long long last_pttl; /* the key's PTTL then */
    int renewals;        /* PTTL rises seen: renewals */
    int missing;         /* looks that found the key without its token */
};

static int hold(rlk_client *c, struct held *h, int watchdog, int line)
{
    rlk_lock_options o;
    int rc;
    memset(&h->lost, 0, sizeof h->lost);
    opts(&o, h->ttl, 0, h->kind, watchdog, &h->lost);
    h->l = NULL;
    h->renewals = h->missing = 0;
    h->last_pttl = LLONG_MAX;
    h->node = 0;
    rc = rlk_lock_acquire(c, h->name, &o, &h->l);
    return tl_ok(rc == RLK_OK && h->l, __FILE__, line, "acquire %s (slot %u): %d %s", h->name,
                 slot_of(h->name), rc, rlk_client_errmsg(c));
}
#define HOLD(c, h, wd) hold(c, h, wd, __LINE__)

/* One look at a held lock's key: its token must be there; a PTTL higher
 * than at the last look is a renewal.  0 when the token was missing (a
 * CLUSTERDOWN answer is no look). */
static int look_at(struct held *h, int line)
{
    long long pttl = LLONG_MIN;
    int at = h->node, r = holds_at(h->node, h->name, rlk_lock_token(h->l), h->kind, &pttl, &at,
                                   line);
    if (r == -2) return 1;
    if (r != 1) {
        h->missing++;
        return 0;
    }
    if (pttl > h->last_pttl) h->renewals++;
    h->last_pttl = pttl;
    h->node = at;
    return 1;
}
#define LOOK(h) look_at(h, __LINE__)

/* The lock is held as far as the client knows: not lost, on_lost never
 * called. */
static int still_held(const struct held *h)
{
    return h->l && !rlk_lock_is_lost(h->l) && lost_calls((struct lost_rec *)&h->lost) == 0;
}

/* ------------------------------------------------------------------ */
/* Pub/sub as Redisson (and a plain subscriber) does it                */

struct heard {
    int pmessage, smessage, zero_s, other, marker;
    char channel[96], payload[96]; /* the last message's */
    char first[200];               /* "CHANNEL PAYLOAD" of the first */
};

/* smessage CHANNEL PAYLOAD, pmessage PATTERN CHANNEL PAYLOAD. */
static void on_msg(void *ctx, rlk_conn *c, const rlk_resp_value *m)
{
    struct heard *h = ctx;
    const rlk_resp_value *kind = rlk_resp_value_at(m, 0);
    int pat = word_is(kind, "pmessage");
    const rlk_resp_value *ch = rlk_resp_value_at(m, 1 + pat), *pl = rlk_resp_value_at(m, 2 + pat);
    (void)c;
    if (!pat && !word_is(kind, "smessage")) {
        /* Confirmations, and sunsubscribe when the slot moves. */
        if (!word_is(kind, "ssubscribe") && !word_is(kind, "psubscribe")) h->other++;
        return;
    }
    if (!ch || !pl || !ch->str || !pl->str) return;
    if (pat) {
        h->pmessage++;
        h->marker += word_is(ch, "marker");
    } else {
        h->smessage++;
        h->zero_s += word_is(pl, "0");
    }
    snprintf(h->channel, sizeof h->channel, "%.*s", (int)ch->len, ch->str);
    snprintf(h->payload, sizeof h->payload, "%.*s", (int)pl->len, pl->str);
    if (!h->first[0]) snprintf(h->first, sizeof h->first, "%s %s", h->channel, h->payload);
}

/* A RESP3 connection to node i that sent cmd (SSUBSCRIBE as Redisson
 * 3.22+ does on a cluster, or PSUBSCRIBE) for channel.  rlk_conn has
 * neither, so the command is written on its socket by hand; its
 * confirmation comes as a push, before PING's reply. */
static rlk_conn *subscriber(int i, const char *cmd, const char *channel, struct heard *h,
                            int line)
{
    char url[64], buf[256];
    rlk_conn *c;
    rlk_resp_value *v = NULL;
    int n;
    tc_url(cl, i, url, sizeof url);
    c = connect_url(url, 3, on_msg, h, line);
    if (!c) return NULL;
    n = snprintf(buf, sizeof buf, "*2\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n", strlen(cmd), cmd,
                 strlen(channel), channel);
    tl_ok(write(rlk_conn_fd(c), buf, (size_t)n) == n &&
              rlk_conn_command(c, &v, 1, (const char *[]){"PING"}, NULL) == RLK_OK,
          __FILE__, line, "%s %s on node %d: %s", cmd, channel, i, rlk_conn_errmsg(c));
    if (!strcmp(cmd, "SSUBSCRIBE")) {
        v = run_cmd(node_conn(i, line), line, "PUBSUB", "SHARDNUMSUB", channel,
                    (const char *)NULL);
        tl_ok(v && rlk_resp_value_at(v, 1) && rlk_resp_value_at(v, 1)->integer == 1, __FILE__,
              line, "PUBSUB SHARDNUMSUB %s on node %d: not 1", channel, i);
    }
    return c;
}
#define SUBSCRIBER(i, cmd, ch, h) subscriber(i, cmd, ch, h, __LINE__)


/* Waits (LONG_MS) until n waiters are in line for name, as the status
 * of client c says. */
static int wait_in_line(rlk_client *c, const char *name, int64_t n, int line)
{
    int64_t deadline = ts_now_ms() + LONG_MS;
    rlk_lock_status st;
    int rc;
    for (;;) {
        memset(&st, 0, sizeof st);
        rc = rlk_lock_get_status(c, name, &st);
        if (rc == RLK_OK && st.waiters >= n) return 1;
        if (rc != RLK_OK || ts_now_ms() >= deadline) break;
        ts_pause_ms(10);
    }
    return tl_ok(0, __FILE__, line, "%s: %lld waiter(s) in line, want %lld (status %d %s)", name,
                 (long long)st.waiters, (long long)n, rc, rlk_client_errmsg(c));
}
#define WAIT_IN_LINE(c, name, n) wait_in_line(c, name, n, __LINE__)

/* Waits until the waiter's acquire returned, at most until deadline. */
static int wait_waiter(struct waiter *w, int64_t deadline)
{
    while (!waiter_done(w) && ts_now_ms() < deadline) ts_pause_ms(5);
    return waiter_done(w);
}

/* A primary other than node 0 (the seed), and node 0 itself when it is
 * a primary (else another one): -1 when there is none. */
static int primary_not_seed(const int *p, int np)
{
    for (int i = 0; i < np; i++)
        if (p[i] != 0) return p[i];
    return -1;
}

static int primary_seed(const int *p, int np)
{
    for (int i = 0; i < np; i++)
        if (p[i] == 0) return 0;
    return np ? p[0] : -1;
}

/* ------------------------------------------------------------------ */

/* Names on all three shards, simple and reentrant, one client of node
 * 0's URL: each acquired with a watchdog and a short TTL, its status
 * held, its key holding its token on its owner at every look for more
 * than twice the TTL (it would have expired without renewals; the PTTL
 * is seen going up), then released: the key gone on its owner. */
static void test_three_shards(void)
{
    int64_t ttl = slow ? 4000 : 1500, t0, end;
    int p[TC_NODES], np = primaries(p), n = 0;
    struct held h[6];
    rlk_client *a;
    if (!CHECK_MSG(np == 3, "%d primaries", np)) return;
    memset(h, 0, sizeof h);
    for (int i = 0; i < 3; i++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "s%d", p[i]);
        if (!PICK(h[2 * i].name, prefix, p[i])) return;
        snprintf(prefix, sizeof prefix, "r%d", p[i]);
        if (!PICK(h[2 * i + 1].name, prefix, p[i])) return;
        h[2 * i].kind = RLK_LOCK_SIMPLE;
        h[2 * i + 1].kind = RLK_LOCK_REENTRANT;
        h[2 * i].ttl = h[2 * i + 1].ttl = ttl;
    }
    if (!(a = NEW_CLIENT(1, 0, 0))) return;
    {
        /* The seed's HELLO said what it is. */
        const rlk_conn_info *ci = rlk_client_info(a);
        CHECK_MSG(ci && !strcmp(ci->mode, "cluster"), "the seed's mode: \"%s\"",
                  ci ? ci->mode : "(not connected)");
    }
    t0 = ts_now_ms();
    for (int i = 0; i < 6; i++) {
        rlk_lock_status st;
        int rc;
        if (!HOLD(a, &h[i], 1)) continue;
        n++;
        h[i].node = p[i / 2];
        memset(&st, 0, sizeof st);
        rc = rlk_lock_get_status(a, h[i].name, &st);
        CHECK_MSG(rc == RLK_OK && st.held == 1 && st.kind == h[i].kind && st.ttl_ms > 0 &&
                      st.ttl_ms <= ttl,
                  "status of %s: %d %s: held %d kind %d ttl %lld", h[i].name, rc,
                  rlk_client_errmsg(a), st.held, (int)st.kind, (long long)st.ttl_ms);
        if (h[i].kind == RLK_LOCK_REENTRANT) CHECK_EQ_INT(st.holds, 1);
        CHECK_MSG(LOOK(&h[i]), "%s: its token is not on node %d", h[i].name, p[i / 2]);
        CHECK_EQ_INT(h[i].node, p[i / 2]);
    }
    if (!CHECK_MSG(n == 6, "%d of 6 acquired", n)) goto out;
    /* More than two TTLs: without the watchdog every key would be gone. */
    end = t0 + 2 * ttl + ttl / 2;
    while (ts_now_ms() < end) {
        for (int i = 0; i < 6; i++) LOOK(&h[i]);
        ts_pause_ms(20);
    }
    for (int i = 0; i < 6; i++) {
        CHECK_MSG(LOOK(&h[i]), "%s gone after %lld ms (TTL %lld)", h[i].name,
                  (long long)(ts_now_ms() - t0), (long long)ttl);
        CHECK_MSG(h[i].missing == 0, "%s: %d looks found the key without its token", h[i].name,
                  h[i].missing);
        CHECK_MSG(h[i].renewals >= 2, "%s: %d renewals seen", h[i].name, h[i].renewals);
        CHECK_MSG(still_held(&h[i]), "%s: lost (on_lost %d)", h[i].name, h[i].lost.calls);
        CHECK_EQ_INT(h[i].node, p[i / 2]);
    }
    printf("# renewals seen over %lld ms (TTL %lld): %d %d %d %d %d %d\n",
           (long long)(ts_now_ms() - t0), (long long)ttl, h[0].renewals, h[1].renewals,
           h[2].renewals, h[3].renewals, h[4].renewals, h[5].renewals);
out:
    for (int i = 0; i < 6; i++) {
        if (!h[i].l) continue;
        CHECK_MSG(rlk_lock_release(h[i].l) == RLK_OK, "release %s: %s", h[i].name,
                  rlk_client_errmsg(a));
        CHECK_MSG(exists_on(p[i / 2], h[i].name, __LINE__) == 0, "%s still on node %d",
                  h[i].name, p[i / 2]);
    }
    rlk_client_free(a);
}

/* A waiter on another shard than the seed's is woken by the release.
 * Its client re-checks every RECHECK ms, and neither its TTL nor the
 * holder's runs out for longer (it re-checks at least every
 * min(recheck_ms, its ttl / 3), and when the holder's TTL runs out): so
 * a try that comes before RECHECK ms from the start of its wait cannot
 * be a re-check (the first try came after the start, any re-check at
 * least RECHECK ms after a try), only the release's message woke it.
 * Requiring the lock by then is a deadline, not a speed: natively it
 * comes within milliseconds of the release. */
static void test_wait_woken(void)
{
    enum { RECHECK = 15000 };
    int p[TC_NODES], np = primaries(p), owner = primary_not_seed(p, np), started = 0;
    char name[64], val[256];
    struct waiter w;
    rlk_client *a = NULL, *b = NULL;
    rlk_lock *la = NULL;
    int64_t w0 = 0, t_rel;
    if (!CHECK(owner > 0) || !PICK(name, "wake", owner)) return;
    a = NEW_CLIENT(0, 0, 0);
    b = NEW_CLIENT(0, RECHECK, 0);
    if (!a || !b || !(la = acquire(a, name, 60000, RLK_LOCK_SIMPLE, 0, NULL, __LINE__))) goto out;
    w0 = ts_now_ms();
    started = waiter_start(&w, b, name, 60000, RECHECK + 10000, RLK_LOCK_SIMPLE);
    if (!started || !WAIT_IN_LINE(a, name, 1)) goto out;
    CHECK_MSG(!waiter_done(&w), "the waiter returned while the lock was held: %d %s", w.rc,
              w.err);
    t_rel = ts_now_ms();
    CHECK_MSG(rlk_lock_release(la) == RLK_OK, "release: %s", rlk_client_errmsg(a));
    la = NULL;
    CHECK_MSG(wait_waiter(&w, w0 + RECHECK - 500),
              "the waiter did not have the lock %d ms after its start: not woken",
              RECHECK - 500);
    pthread_join(w.th, NULL);
    started = 0;
    printf("# the waiter had the lock %lld ms after the release\n",
           (long long)(w.done_at - t_rel));
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "the waiter: %d %s", w.rc, w.err)) goto out;
    value_at(owner, name, val, sizeof val, NULL, __LINE__);
    CHECK_EQ_STR(val, rlk_lock_token(w.l));
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    CHECK_EQ_INT(exists_on(owner, name, __LINE__), 0);
out:
    if (started) {
        pthread_join(w.th, NULL);
        if (w.l) rlk_lock_release(w.l);
    }
    if (la) rlk_lock_release(la);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* The fair kind on a shard other than the seed's: six fair waiters,
 * each started once the one before is in line, are served in that order
 * (each handoff SPUBLISHed in the lock's slot), the one in {NAME}:queue's
 * order, while the ones behind still wait. */
static void test_fair_order(void)
{
    enum { NW = 6 };
    int p[TC_NODES], np = primaries(p), owner = primary_not_seed(p, np), started = 0, i, j;
    int joined[NW] = {0};
    char name[64], queue[80], tok[NW][96];
    struct waiter w[NW];
    rlk_client *a = NULL, *b[NW] = {NULL};
    rlk_lock *la = NULL;
    rlk_resp_value *v;
    const rlk_resp_value *e;
    if (!CHECK(owner > 0) || !PICK(name, "fair", owner)) return;
    snprintf(queue, sizeof queue, "{%s}:queue", name);
    a = NEW_CLIENT(0, 0, 0);
    for (i = 0; i < NW; i++) b[i] = NEW_CLIENT(0, 15000, 0);
    if (!a || !(la = acquire(a, name, 60000, RLK_LOCK_FAIR, 0, NULL, __LINE__))) goto out;
    for (i = 0; i < NW; i++) {
        if (!b[i] || !waiter_start(&w[i], b[i], name, 60000, 60000, RLK_LOCK_FAIR)) goto out;
        started++;
        if (!WAIT_IN_LINE(a, name, i + 1)) goto out;
    }
    v = key_cmd(owner, NULL, __LINE__, 4, (const char *[]){"LRANGE", queue, "0", "-1"});
    for (i = 0, e = v ? v->child : NULL; e && i < NW; e = e->next, i++)
        snprintf(tok[i], sizeof tok[i], "%.*s", (int)e->len, e->str);
    if (!CHECK_MSG(i == NW, "%d places in %s", i, queue)) goto out;
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    for (i = 0; i < NW; i++) {
        pthread_join(w[i].th, NULL);
        joined[i] = 1;
        if (!CHECK_MSG(w[i].rc == RLK_OK && w[i].l, "waiter %d: %d %s", i + 1, w[i].rc, w[i].err))
            break;
        CHECK_EQ_STR(rlk_lock_token(w[i].l), tok[i]);
        for (j = i + 1; j < NW; j++)
            CHECK_MSG(!waiter_done(&w[j]), "waiter %d returned while %d held the lock", j + 1,
                      i + 1);
        CHECK_EQ_INT(rlk_lock_release(w[i].l), RLK_OK);
        w[i].l = NULL;
    }
    CHECK_EQ_INT(exists_on(owner, name, __LINE__), 0);
out:
    if (la) rlk_lock_release(la);
    waiters_end(w, joined, started);
    rlk_client_free(a);
    for (i = 0; i < NW; i++) rlk_client_free(b[i]);
}

/* Looks at a held lock until one more renewal is seen, within LONG_MS,
 * while the waiter w must still wait (it returning now would be a second
 * holder, or a wait given up).  *early counts looks that found it done. */
static int renewed_once(struct held *h, struct waiter *w, int *early, int line)
{
    int64_t deadline = ts_now_ms() + LONG_MS;
    int want = h->renewals + 1;
    while (h->renewals < want && ts_now_ms() < deadline) {
        look_at(h, line);
        *early += waiter_done(w);
        ts_pause_ms(10);
    }
    return tl_ok(h->renewals >= want && still_held(h), __FILE__, line,
                 "%s: no renewal seen on node %d (lost %d, on_lost %d)", h->name, h->node,
                 h->l ? rlk_lock_is_lost(h->l) : -1, h->lost.calls);
}
#define RENEWED_ONCE(h, w, early) renewed_once(h, w, early, __LINE__)

/* A lock on the seed's shard held by A (a watchdog, the watchdog
 * thread) and waited for by B (in a thread), its slot to be moved to
 * another primary. */
struct scene {
    int from, to, started, early;
    unsigned slot;
    struct held h;
    struct waiter w;
    rlk_client *a, *b;
};

/* Sets sc up, B (its re-check b_recheck_ms, its TTL b_ttl) in line.  0
 * when something failed (a test failure); scene_end cleans up anyway. */
static int scene_start(struct scene *sc, const char *prefix, int64_t b_recheck_ms, int64_t b_ttl,
                       int line)
{
    int p[TC_NODES], np = primaries(p);
    memset(sc, 0, sizeof *sc);
    sc->from = primary_seed(p, np);
    sc->to = -1;
    for (int i = 0; i < np && sc->to < 0; i++)
        if (p[i] != sc->from) sc->to = p[i];
    sc->h.kind = RLK_LOCK_SIMPLE;
    sc->h.ttl = slow ? 4000 : 1500;
    if (!tl_ok(sc->from >= 0 && sc->to >= 0, __FILE__, line, "primaries: %d", np) ||
        !pick_name(sc->h.name, sizeof sc->h.name, prefix, sc->from, line))
        return 0;
    sc->slot = slot_of(sc->h.name);
    sc->a = new_client(1, 0, 0, line);
    sc->b = new_client(0, b_recheck_ms, 0, line);
    if (!sc->a || !sc->b || !hold(sc->a, &sc->h, 1, line)) return 0;
    sc->h.node = sc->from;
    sc->started = waiter_start(&sc->w, sc->b, sc->h.name, b_ttl, 60000, RLK_LOCK_SIMPLE);
    return sc->started && wait_in_line(sc->a, sc->h.name, 1, line);
}
#define SCENE_START(sc, prefix, recheck, ttl) scene_start(sc, prefix, recheck, ttl, __LINE__)

/* More than two TTLs of looks at A's lock (B must go on waiting); then
 * A's key must be on node `on` with A's token, renewed at least twice
 * meanwhile, A never reported lost. */
static void scene_watch(struct scene *sc, int on, int line)
{
    struct held *h = &sc->h;
    int64_t t0 = ts_now_ms(), end = t0 + 2 * h->ttl + h->ttl / 2;
    int before = h->renewals;
    while (ts_now_ms() < end) {
        look_at(h, line);
        sc->early += waiter_done(&sc->w);
        ts_pause_ms(20);
    }
    tl_ok(look_at(h, line) && h->node == on, __FILE__, line,
          "%s not on node %d with A's token after %lld ms", h->name, on,
          (long long)(ts_now_ms() - t0));
    tl_ok(h->renewals - before >= 2, __FILE__, line, "%d renewals seen on node %d",
          h->renewals - before, on);
    tl_ok(h->missing == 0, __FILE__, line, "%d looks found the key without A's token",
          h->missing);
    tl_ok(still_held(h), __FILE__, line, "A lost its lock (on_lost %d)", h->lost.calls);
    tl_ok(sc->early == 0, __FILE__, line, "B's acquire returned while A held the lock: %d %s",
          sc->w.rc, sc->w.err);
}
#define SCENE_WATCH(sc, on) scene_watch(sc, on, __LINE__)

/* A releases; B's acquire returns with the lock, whose key (read from
 * the source, following redirects) is on node `to` with B's token, and
 * B releases it.  handed: the key right after A's release must hold B's
 * token already (a handoff, not a free lock). */
static void scene_handover(struct scene *sc, int handed, int line)
{
    char val[256], after[256];
    int at = -1;
    tl_ok(rlk_lock_release(sc->h.l) == RLK_OK, __FILE__, line, "A's release: %s",
          rlk_client_errmsg(sc->a));
    sc->h.l = NULL;
    value_at(sc->from, sc->h.name, after, sizeof after, &at, line);
    if (handed)
        tl_ok(after[0] && at == sc->to, __FILE__, line,
              "after A's release the key is \"%s\" on node %d", after, at);
    tl_ok(wait_waiter(&sc->w, ts_now_ms() + LONG_MS), __FILE__, line, "B did not return");
    pthread_join(sc->w.th, NULL);
    sc->started = 0;
    if (!tl_ok(sc->w.rc == RLK_OK && sc->w.l, __FILE__, line, "B: %d %s", sc->w.rc, sc->w.err))
        return;
    if (handed) CHECK_EQ_STR(after, rlk_lock_token(sc->w.l));
    value_at(sc->from, sc->h.name, val, sizeof val, &at, line);
    tl_ok(at == sc->to, __FILE__, line, "the key read on node %d", at);
    CHECK_EQ_STR(val, rlk_lock_token(sc->w.l));
    tl_ok(rlk_lock_release(sc->w.l) == RLK_OK, __FILE__, line, "B's release");
    sc->w.l = NULL;
    value_at(sc->from, sc->h.name, val, sizeof val, &at, line);
    tl_ok(!val[0] && at == sc->to, __FILE__, line, "%s left on node %d: \"%s\"", sc->h.name,
          at, val);
}
#define SCENE_HANDOVER(sc, handed) scene_handover(sc, handed, __LINE__)

static void scene_end(struct scene *sc)
{
    if (sc->started) {
        pthread_join(sc->w.th, NULL);
        if (sc->w.l) rlk_lock_release(sc->w.l);
    }
    if (sc->h.l) rlk_lock_release(sc->h.l);
    rlk_client_free(sc->a);
    rlk_client_free(sc->b);
}

/*
 * The window in which every key of a slot has moved but the slot is still
 * MIGRATING (the source answers ASK, the target serves a key only after
 * ASKING), held open for several renewal periods and re-checks: A's
 * watchdog renewals reach the key on the target (ASKING, then the
 * script), a status call too, B keeps waiting (its tries answered ASK,
 * or TRYAGAIN, go on until its deadline).  Then the slot is given to the
 * target, A releases and B acquires it there.  (Within the window B could
 * not take a lock A freed: the importing node answers TRYAGAIN to a
 * script whose keys are there only in part, and B's sharded subscription
 * is on the source, where the release's SPUBLISH on the target does not
 * reach: README, "On a Redis Cluster", says so.)
 */
static void test_ask_window(void)
{
    struct scene sc;
    rlk_lock_status st;
    int k, at = -1, rc;
    if (!SCENE_START(&sc, "ask", 0, 10000)) goto out;
    if (!CHECK(tc_migrate_begin(cl, sc.slot, sc.to) == 0)) goto out;
    while ((k = tc_migrate_keys(cl, sc.slot, 100)) > 0) continue;
    CHECK_EQ_INT(k, 0);
    CHECK_MSG(holds_at(sc.from, sc.h.name, rlk_lock_token(sc.h.l), sc.h.kind, NULL, &at,
                       __LINE__) == 1 && at == sc.to,
              "%s: on node %d", sc.h.name, at);
    /* A call without a handle follows the ASK too. */
    memset(&st, 0, sizeof st);
    rc = rlk_lock_get_status(sc.a, sc.h.name, &st);
    CHECK_MSG(rc == RLK_OK && st.held == 1 && st.waiters == 1,
              "status in the window: %d %s: held %d, %lld waiter(s)", rc,
              rlk_client_errmsg(sc.a), st.held, (long long)st.waiters);
    SCENE_WATCH(&sc, sc.to);
    CHECK(tc_migrate_end(cl, sc.slot) == 0);
    SCENE_HANDOVER(&sc, 0);
out:
    scene_end(&sc);
    if (sc.to >= 0 && sc.from >= 0 && tc_owner(cl, sc.slot) == sc.from)
        CHECK(tc_migrate_end(cl, sc.slot) == 0);
}

/*
 * The slot of a lock moved to another primary step by step while A holds
 * the lock (a watchdog, a short TTL) and B waits for it: a renewal is
 * seen where the key is after each step (the source while MIGRATING, the
 * target once the key moved: ASK, then MOVED after the end), and on the
 * new owner for more than two TTLs after; A is never reported lost, B
 * never returns while A holds.  A's release then hands the lock to B on
 * the new owner: the key is never free after it (a release frees the
 * lock unless a live waiter's channel has a subscriber there, so B
 * still waits in line and listens on the new owner, where the handoff's
 * message wakes it), and B's acquire returns with the token the key
 * holds.  (B's re-check is not what this test can tell apart: B also
 * tries again whenever the holder's short TTL would run out.)
 */
static void test_migration(void)
{
    struct scene sc;
    int moved = 0, k;
    if (!SCENE_START(&sc, "mig", 30000, 60000) || !RENEWED_ONCE(&sc.h, &sc.w, &sc.early))
        goto out;
    if (!CHECK(tc_migrate_begin(cl, sc.slot, sc.to) == 0)) goto out;
    RENEWED_ONCE(&sc.h, &sc.w, &sc.early);
    CHECK_EQ_INT(sc.h.node, sc.from);
    /* The lock's key and its line's keys, one at a time. */
    while ((k = tc_migrate_keys(cl, sc.slot, 1)) > 0) {
        moved += k;
        LOOK(&sc.h);
        printf("# %d key(s) moved: the lock's key is on node %d\n", moved, sc.h.node);
        RENEWED_ONCE(&sc.h, &sc.w, &sc.early);
    }
    CHECK_EQ_INT(k, 0);
    CHECK_MSG(moved >= 1, "%d keys moved", moved);
    CHECK_EQ_INT(sc.h.node, sc.to);
    if (!CHECK(tc_migrate_end(cl, sc.slot) == 0)) goto out;
    CHECK_EQ_INT(tc_owner(cl, sc.slot), sc.to);
    printf("# slot %u moved from node %d to node %d, %d keys one by one\n", sc.slot, sc.from,
           sc.to, moved);
    SCENE_WATCH(&sc, sc.to);
    /* B listens on the new owner (after the server's sunsubscribe on the
     * old one, or its next look): the handoff needs a listener there. */
    {
        char ch[160];
        int64_t t0 = ts_now_ms(), subs = 0;
        snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", sc.h.name);
        while (ts_now_ms() < t0 + LONG_MS) {
            rlk_resp_value *v = run_cmd(NODE(sc.to), __LINE__, "PUBSUB", "SHARDNUMSUB", ch,
                                        (const char *)NULL);
            subs = v && rlk_resp_value_at(v, 1) ? rlk_resp_value_at(v, 1)->integer : 0;
            if (subs >= 1) break;
            ts_pause_ms(20);
        }
        CHECK_MSG(subs >= 1, "B not subscribed to %s on node %d after %lld ms", ch, sc.to,
                  (long long)(ts_now_ms() - t0));
        printf("# B subscribed on node %d %lld ms after the watch\n", sc.to,
               (long long)(ts_now_ms() - t0));
    }
    SCENE_HANDOVER(&sc, 1);
out:
    scene_end(&sc);
}

/* A call returned within its deadline plus SLACK. */
static int in_time(int64_t t0, int64_t deadline_ms, const char *what, int line)
{
    int64_t took = ts_now_ms() - t0;
    return tl_ok(took <= deadline_ms + SLACK, __FILE__, line,
                 "%s took %lld ms, past its deadline %lld ms + %lld", what, (long long)took,
                 (long long)deadline_ms, (long long)SLACK);
}
#define IN_TIME(t0, deadline, what) in_time(t0, deadline, what, __LINE__)

/* CONFIG SET cluster-require-full-coverage on every live node. */
static int full_coverage(const char *yes_no)
{
    for (int i = 0; i < TC_NODES; i++) {
        rlk_resp_value *v;
        if (!tc_alive(cl, i)) continue;
        v = CMD(NODE(i), "CONFIG", "SET", "cluster-require-full-coverage", yes_no);
        if (!v || v->type != RLK_RESP_SIMPLE) return -1;
    }
    return 0;
}

/*
 * kill -9 of a primary (not the seed) while A holds a watchdog lock on
 * each shard and B waits for the one on the failed shard.  Each lock was
 * replicated before the kill (WAIT after a write of the test's own in
 * its slot), so the promoted replica has it.
 *   - The other shards' locks (a TTL shorter than the failover takes)
 *     stay held through it, are seen renewed on their owners during the
 *     outage and after it, and are released there.
 *   - The failed shard's lock (a TTL longer than the failover) is either
 *     kept, its key seen renewed with its token on the new primary, or
 *     reported lost (on_lost); never held while the new primary lacks
 *     it; its release says which (RLK_OK, RLK_LOCK_LOST).
 *   - During the outage an acquire on the failed shard by a new client
 *     returns by its deadline (wait + 250 ms) plus SLACK, whatever it
 *     gets; every release by its command timeout plus SLACK; B by its
 *     wait plus SLACK, holding the lock on the new primary.
 * The cluster is told not to require full coverage meanwhile, so that
 * the other shards go on serving while one has no primary (by default
 * every node answers CLUSTERDOWN then, and no client could renew
 * anything): their locks must be renewed through the outage.
 * The killed node is started again at the end (as a replica).
 */
static void test_failover(void)
{
    enum { CMD_MS = 3000, B_WAIT = 30000, C_WAIT = 2000 };
    int64_t ttl_other = slow ? 6000 : 3000, ttl_failed = 15000, t_kill, t_up, t0, w0 = 0, end;
    int p[TC_NODES], np = primaries(p), victim = primary_not_seed(p, np), r = -1, vi = -1;
    int started = 0, c_started = 0, ms, rc, renewed[3] = {0, 0, 0}, resolved = 0;
    int64_t c0;
    char cname[64], val[256];
    struct held h[3];
    struct waiter w, wc;
    rlk_client *a = NULL, *b = NULL, *c = NULL;
    memset(h, 0, sizeof h);
    if (!CHECK_MSG(np == 3 && victim > 0, "%d primaries", np)) return;
    for (int i = 0; i < 3; i++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "fo%d", p[i]);
        if (!PICK(h[i].name, prefix, p[i])) return;
        h[i].kind = RLK_LOCK_SIMPLE;
        h[i].ttl = p[i] == victim ? ttl_failed : ttl_other;
        if (p[i] == victim) vi = i;
    }
    if (!PICK(cname, "fo-new", victim)) return;
    if (!CHECK(full_coverage("no") == 0)) return;
    r = tc_replica_of(cl, victim);
    if (!CHECK(r >= 0)) return;
    a = NEW_CLIENT(1, 0, CMD_MS);
    b = NEW_CLIENT(0, 0, CMD_MS);
    c = NEW_CLIENT(0, 0, CMD_MS);
    if (!a || !b || !c) goto out;
    for (int i = 0; i < 3; i++) {
        char sync[96];
        rlk_conn *k = NODE(p[i]);
        if (!HOLD(a, &h[i], 1) || !k) goto out;
        h[i].node = p[i];
        /* Replicated: the replica acknowledged a later write of the slot. */
        snprintf(sync, sizeof sync, "{%.63s}:sync", h[i].name);
        CMD(k, "SET", sync, "1", "PX", "60000");
        CHECK_EQ_INT(CMD_INT(k, "WAIT", "1", "5000"), 1);
    }
    w0 = ts_now_ms();
    started = waiter_start(&w, b, h[vi].name, 10000, B_WAIT, RLK_LOCK_SIMPLE);
    if (!started || !WAIT_IN_LINE(a, h[vi].name, 1)) goto out;
    for (int i = 0; i < 3; i++) LOOK(&h[i]);

    t_kill = ts_now_ms();
    if (!CHECK(tc_kill(cl, victim) == 0)) goto out;
    node_forget(victim);

    /* While the shard has no primary: an acquire there by another client
     * (in a thread), and the other shards' locks renewed meanwhile. */
    c0 = ts_now_ms();
    c_started = waiter_start(&wc, c, cname, 5000, C_WAIT, RLK_LOCK_SIMPLE);
    for (int i = 0; i < 3; i++) renewed[i] = h[i].renewals;
    while (tc_is_primary(cl, r) != 1 && ts_now_ms() < t_kill + TC_READY_MS) {
        for (int i = 0; i < 3; i++)
            if (i != vi) LOOK(&h[i]);
        ts_pause_ms(20);
    }
    t_up = ts_now_ms();
    for (int i = 0; i < 3; i++) {
        if (i == vi) continue;
        /* A renewal is due every ttl_other / 3, and no replica is promoted
         * before the node timeout: then one falls in the outage. */
        if (t_up - t_kill > ttl_other / 3 + MARGIN)
            CHECK_MSG(h[i].renewals > renewed[i], "%s (node %d): not renewed in the %lld ms "
                      "the shard of node %d had no primary", h[i].name, p[i],
                      (long long)(t_up - t_kill), victim);
        printf("# %s (node %d): %d renewals seen in the outage\n", h[i].name, p[i],
               h[i].renewals - renewed[i]);
        renewed[i] = h[i].renewals;
    }
    if (c_started) {
        pthread_join(wc.th, NULL);
        c_started = 0;
        CHECK_MSG(wc.done_at - c0 <= C_WAIT + 250 + SLACK,
                  "an acquire on the failed shard took %lld ms, wait %d ms",
                  (long long)(wc.done_at - c0), C_WAIT);
        printf("# an acquire on the failed shard during the outage: %d (%s) after %lld ms\n",
               wc.rc, wc.err, (long long)(wc.done_at - c0));
        if (wc.l) {
            t0 = ts_now_ms();
            rlk_lock_release(wc.l);
            IN_TIME(t0, CMD_MS, "its release");
        }
    }

    ms = tc_wait_primary(cl, r, TC_READY_MS);
    if (!CHECK_MSG(ms >= 0, "node %d not promoted", r)) goto out;
    printf("# kill -9 of node %d: node %d primary after %lld ms, the cluster ready after "
           "%lld ms\n", victim, r, (long long)(t_up - t_kill),
           (long long)(ts_now_ms() - t_kill));
    CHECK_EQ_INT(tc_owner(cl, slot_of(h[vi].name)), r);

    /* Until each lock of the other shards was seen renewed on its owner,
     * and the failed shard's lock renewed on the new primary or reported
     * lost: by the end of its validity at the latest. */
    h[vi].node = r;
    h[vi].last_pttl = LLONG_MAX;
    end = t_kill + ttl_failed + SLACK;
    for (;;) {
        int done = 1;
        for (int i = 0; i < 3; i++) {
            if (i == vi) {
                if (!still_held(&h[i])) {
                    resolved = 1;
                } else {
                    long long pttl = LLONG_MIN;
                    int at = r;
                    int has = holds_at(r, h[i].name, rlk_lock_token(h[i].l), h[i].kind, &pttl,
                                       &at, __LINE__);
                    if (has == 1 && at == r && pttl > h[i].last_pttl) resolved = 1;
                    /* Once renewed there, held means there. */
                    if (resolved && still_held(&h[i]))
                        CHECK_MSG(has == 1 && at == r,
                                  "%s held, but node %d (the new primary) lacks it", h[i].name,
                                  r);
                    if (has == 1) h[i].last_pttl = pttl;
                }
                done &= resolved;
            } else {
                LOOK(&h[i]);
                done &= h[i].renewals > renewed[i];
            }
        }
        if (done || ts_now_ms() >= end) break;
        ts_pause_ms(20);
    }
    for (int i = 0; i < 3; i++) {
        if (i == vi) continue;
        CHECK_MSG(still_held(&h[i]), "%s (node %d) lost by the failover of node %d", h[i].name,
                  p[i], victim);
        CHECK_MSG(h[i].missing == 0 && h[i].node == p[i], "%s: %d looks without its token",
                  h[i].name, h[i].missing);
        CHECK_MSG(h[i].renewals > renewed[i], "%s: no renewal seen after the failover",
                  h[i].name);
    }
    CHECK_MSG(resolved, "%s: neither renewed on node %d nor reported lost %lld ms after the kill",
              h[vi].name, r, (long long)(ts_now_ms() - t_kill));
    if (still_held(&h[vi])) {
        CHECK_MSG(holds_at(r, h[vi].name, rlk_lock_token(h[vi].l), h[vi].kind, NULL, NULL,
                           __LINE__) == 1,
                  "%s held, but the new primary lacks it", h[vi].name);
        printf("# the failed shard's lock was kept\n");
    } else {
        CHECK_MSG(rlk_lock_is_lost(h[vi].l) && lost_calls(&h[vi].lost) == 1,
                  "%s: lost %d, on_lost called %d times", h[vi].name, rlk_lock_is_lost(h[vi].l),
                  lost_calls(&h[vi].lost));
        printf("# the failed shard's lock was reported lost\n");
    }
    if (still_held(&h[vi]))
        CHECK_MSG(!waiter_done(&w), "B returned while A held the lock: %d %s", w.rc, w.err);

    for (int i = 0; i < 3; i++) {
        int kept = still_held(&h[i]);
        t0 = ts_now_ms();
        rc = rlk_lock_release(h[i].l);
        h[i].l = NULL;
        IN_TIME(t0, CMD_MS, "a release after the failover");
        CHECK_MSG(rc == (kept ? RLK_OK : RLK_LOCK_LOST), "release of %s (%s): %d %s", h[i].name,
                  kept ? "kept" : "lost", rc, rlk_client_errmsg(a));
        if (i != vi) CHECK_EQ_INT(exists_on(p[i], h[i].name, __LINE__), 0);
    }

    /* B acquires on the new primary. */
    CHECK(wait_waiter(&w, w0 + B_WAIT + 250 + SLACK));
    pthread_join(w.th, NULL);
    started = 0;
    CHECK_MSG(w.done_at - w0 <= B_WAIT + 250 + SLACK, "B's acquire took %lld ms, wait %d ms",
              (long long)(w.done_at - w0), B_WAIT);
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "B: %d %s", w.rc, w.err)) goto out;
    printf("# B had the lock %lld ms after the promotion\n", (long long)(w.done_at - t_up));
    value_at(r, h[vi].name, val, sizeof val, &rc, __LINE__);
    CHECK_MSG(rc == r, "%s read on node %d", h[vi].name, rc);
    CHECK_EQ_STR(val, rlk_lock_token(w.l));
    t0 = ts_now_ms();
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    IN_TIME(t0, CMD_MS, "B's release");
    CHECK_EQ_INT(exists_on(r, h[vi].name, __LINE__), 0);
out:
    if (started) {
        pthread_join(w.th, NULL);
        if (w.l) rlk_lock_release(w.l);
    }
    if (c_started) {
        pthread_join(wc.th, NULL);
        if (wc.l) rlk_lock_release(wc.l);
    }
    for (int i = 0; i < 3; i++)
        if (h[i].l) rlk_lock_release(h[i].l);
    rlk_client_free(a);
    rlk_client_free(b);
    rlk_client_free(c);
    /* The killed node back, as a replica, for the tests after. */
    if (victim > 0 && !tc_alive(cl, victim)) {
        CHECK(tc_restart(cl, victim) == 0);
        CHECK(tc_wait_ready(cl, TC_READY_MS) == 0);
    }
    CHECK(full_coverage("yes") == 0);
}

/*
 * SIGSTOP of a primary (not the seed) while A holds two watchdog locks
 * on its shard, each replicated first: a VM paused, a process swapped
 * out.  Its TCP connection stays up and says nothing, and no reset tells
 * the client; its replica is promoted by the cluster.
 *   - A release sent once the promotion is done, to the node the client
 *     still takes for the primary, must reach the new primary within
 *     its command timeout (plus SLACK): RLK_OK, the key gone there.
 *   - The other lock must be kept: never reported lost, seen renewed
 *     with its token on the new primary within its validity, and
 *     released there.
 * Full coverage stays required, as by default: while the shard has no
 * primary every node answers CLUSTERDOWN.  The frozen node is resumed
 * at the end whatever happened (it rejoins as a replica).
 */
static void test_frozen_primary(void)
{
    enum { CMD_MS = 6000 };
    int64_t ttl = 15000, t_stop = 0, t_up, t0, end;
    int p[TC_NODES], np = primaries(p), victim = primary_not_seed(p, np), r = -1, rc;
    int paused = 0, renewed_there = 0;
    struct held h[2];
    rlk_client *a = NULL;
    memset(h, 0, sizeof h);
    if (!CHECK_MSG(np == 3 && victim > 0, "%d primaries", np)) return;
    r = tc_replica_of(cl, victim);
    if (!CHECK(r >= 0)) return;
    for (int i = 0; i < 2; i++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "fz%d", i);
        if (!PICK(h[i].name, prefix, victim)) return;
        h[i].kind = RLK_LOCK_SIMPLE;
        h[i].ttl = ttl;
    }
    a = NEW_CLIENT(1, 0, CMD_MS);
    if (!a) goto out;
    for (int i = 0; i < 2; i++) {
        char sync[96];
        rlk_conn *k = NODE(victim);
        if (!HOLD(a, &h[i], 1) || !k) goto out;
        h[i].node = victim;
        snprintf(sync, sizeof sync, "{%.63s}:sync", h[i].name);
        CMD(k, "SET", sync, "1", "PX", "60000");
        CHECK_EQ_INT(CMD_INT(k, "WAIT", "1", "5000"), 1);
        LOOK(&h[i]);
    }
    node_forget(victim);
    t_stop = ts_now_ms();
    if (!CHECK(tc_pause(cl, victim) == 0)) goto out;
    paused = 1;
    while (tc_is_primary(cl, r) != 1 && ts_now_ms() < t_stop + TC_READY_MS) ts_pause_ms(20);
    t_up = ts_now_ms();
    if (!CHECK_MSG(tc_is_primary(cl, r) == 1, "node %d not promoted", r)) goto out;
    printf("# SIGSTOP of node %d: node %d primary after %lld ms\n", victim, r,
           (long long)(t_up - t_stop));

    /* The release, most likely sent to the frozen node first. */
    t0 = ts_now_ms();
    rc = rlk_lock_release(h[1].l);
    h[1].l = NULL;
    printf("# a release after the promotion: %d (%s) in %lld ms\n", rc,
           rc == RLK_OK ? "" : rlk_client_errmsg(a), (long long)(ts_now_ms() - t0));
    IN_TIME(t0, CMD_MS, "a release after the freeze");
    CHECK_MSG(rc == RLK_OK, "release of %s: %d %s", h[1].name, rc, rlk_client_errmsg(a));
    CHECK_EQ_INT(exists_on(r, h[1].name, __LINE__), 0);

    /* The lock kept: renewed on the new primary, within its validity. */
    h[0].last_pttl = LLONG_MAX;
    end = t_stop + ttl;
    while (still_held(&h[0]) && !renewed_there && ts_now_ms() < end) {
        long long pttl = LLONG_MIN;
        int at = r;
        int has = holds_at(r, h[0].name, rlk_lock_token(h[0].l), h[0].kind, &pttl, &at,
                           __LINE__);
        if (has == 1 && at == r) {
            if (pttl > h[0].last_pttl) renewed_there = 1;
            h[0].last_pttl = pttl;
        }
        if (!renewed_there) ts_pause_ms(20);
    }
    CHECK_MSG(still_held(&h[0]), "%s reported lost %lld ms after the SIGSTOP of its primary",
              h[0].name, (long long)(ts_now_ms() - t_stop));
    CHECK_MSG(renewed_there, "%s: not seen renewed on node %d (the new primary) %lld ms after "
              "the SIGSTOP", h[0].name, r, (long long)(ts_now_ms() - t_stop));
    if (renewed_there)
        printf("# %s renewed on node %d %lld ms after the SIGSTOP\n", h[0].name, r,
               (long long)(ts_now_ms() - t_stop));
    t0 = ts_now_ms();
    rc = rlk_lock_release(h[0].l);
    h[0].l = NULL;
    IN_TIME(t0, CMD_MS, "the kept lock's release");
    CHECK_MSG(rc == RLK_OK, "release of %s: %d %s", h[0].name, rc, rlk_client_errmsg(a));
    CHECK_EQ_INT(exists_on(r, h[0].name, __LINE__), 0);
out:
    for (int i = 0; i < 2; i++)
        if (h[i].l) rlk_lock_release(h[i].l);
    rlk_client_free(a);
    if (paused) {
        CHECK(tc_resume(cl, victim) == 0);
        node_forget(victim);
        CHECK(tc_wait_ready(cl, TC_READY_MS) == 0);
    }
}

/*
 * Redisson 3.22+ on a cluster waits for a lock's release with SSUBSCRIBE
 * redisson_lock__channel:{NAME} on the node owning the channel's slot
 * (NAME's).  A reentrant lock (Redisson's layout) released must reach it
 * there as an smessage "0", once; with NAME braced already ("{job}x"),
 * on redisson_lock__channel:{job}x.  With a resplock waiter in line the
 * release hands the lock over: no "0" then (the lock is not free), and
 * the waiter's own release sends it.  And no cluster-wide PUBLISH at
 * all, of the release or of a handoff: PSUBSCRIBE * on another node
 * hears only a marker PUBLISHed on the owner after the releases (the
 * cluster bus carries one node's publications to another in order, so
 * one published before the marker would have come first).
 */
static void redisson_case(rlk_client *a, const char *name, int with_waiter)
{
    char ch[128];
    unsigned slot = slot_of(name);
    int o = tc_owner(cl, slot), other = -1, p[TC_NODES], np = primaries(p), started = 0;
    struct heard hs, hp;
    struct waiter w;
    rlk_conn *ss = NULL, *sp = NULL;
    rlk_client *b = NULL;
    rlk_lock *l;
    snprintf(ch, sizeof ch, "redisson_lock__channel:%s%s%s", strchr(name, '{') ? "" : "{", name,
             strchr(name, '{') ? "" : "}");
    for (int i = 0; i < np && other < 0; i++)
        if (p[i] != o) other = p[i];
    if (!CHECK_MSG(o >= 0 && other >= 0, "%s: owner %d", name, o)) return;
    memset(&hs, 0, sizeof hs);
    memset(&hp, 0, sizeof hp);
    ss = SUBSCRIBER(o, "SSUBSCRIBE", ch, &hs);
    sp = SUBSCRIBER(other, "PSUBSCRIBE", "*", &hp);
    if (!ss || !sp) goto out;
    if (!(l = acquire(a, name, 10000, RLK_LOCK_REENTRANT, 0, NULL, __LINE__))) goto out;
    if (with_waiter) {
        if (!(b = NEW_CLIENT(0, 0, 0))) goto out;
        started = waiter_start(&w, b, name, 10000, LONG_MS, RLK_LOCK_REENTRANT);
        if (!started || !WAIT_IN_LINE(a, name, 1)) goto out;
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
        pthread_join(w.th, NULL);
        started = 0;
        if (!CHECK_MSG(w.rc == RLK_OK && w.l, "the waiter: %d %s", w.rc, w.err)) goto out;
        DRAIN(ss);
        CHECK_MSG(hs.zero_s == 0, "%s: \"0\" on %s at a handoff", name, ch);
        l = w.l;
        w.l = NULL;
    }
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    CHECK_MSG(wait_heard(ss, &hs.zero_s, 1), "%s: no \"0\" on %s (node %d): %d smessage(s)",
              name, ch, o, hs.smessage);
    DRAIN(ss);
    CHECK_MSG(hs.zero_s == 1 && !strcmp(hs.channel, ch), "%s: %d \"0\" smessage(s) (%d in all), "
              "the last on \"%s\"", name, hs.zero_s, hs.smessage, hs.channel);
    printf("# %s: the Redisson subscriber got %d smessage(s), %d of them \"0\"\n", name,
           hs.smessage, hs.zero_s);
    CMD(NODE(o), "PUBLISH", "marker", "marker");
    CHECK(wait_heard(sp, &hp.marker, 1));
    CHECK_MSG(hp.pmessage == 1 && hp.marker == 1,
              "%s: PSUBSCRIBE * on node %d got %d message(s), the first \"%s\": a "
              "cluster-wide PUBLISH", name, other, hp.pmessage, hp.first);
out:
    if (started) {
        pthread_join(w.th, NULL);
        if (w.l) rlk_lock_release(w.l);
    }
    rlk_client_free(b);
    rlk_conn_free(ss);
    rlk_conn_free(sp);
}

static void test_redisson_channel(void)
{
    int p[TC_NODES], np = primaries(p);
    char name[64];
    rlk_client *a;
    /* On the seed's shard too, where a client that knows one server only
     * gets as far as its release. */
    if (!PICK(name, "rch", primary_seed(p, np)) || !(a = NEW_CLIENT(0, 0, 0))) return;
    redisson_case(a, name, 0);
    redisson_case(a, "{job}x", 0);
    PICK(name, "rch-line", primary_not_seed(p, np));
    redisson_case(a, name, 1);
    rlk_client_free(a);
}

/* Names of one hash tag are on one node, the owner of the tag's slot. */
static void test_hash_tag(void)
{
    static const char *const names[] = {"{t}a", "{t}b"};
    int o = tc_owner(cl, slot_of("t"));
    rlk_client *a = NEW_CLIENT(0, 0, 0);
    rlk_lock *l[2] = {NULL, NULL};
    if (!a || !CHECK(o >= 0)) goto out;
    for (int i = 0; i < 2; i++) {
        int at = -1;
        if (!(l[i] = ACQ(a, names[i], 10000))) continue;
        CHECK_MSG(holds_at(o, names[i], rlk_lock_token(l[i]), RLK_LOCK_SIMPLE, NULL, &at,
                           __LINE__) == 1 && at == o,
                  "%s: not on node %d (found on %d)", names[i], o, at);
    }
    printf("# {t}: slot %u, node %d\n", slot_of("t"), o);
out:
    for (int i = 0; i < 2; i++) {
        if (!l[i]) continue;
        CHECK_EQ_INT(rlk_lock_release(l[i]), RLK_OK);
        CHECK_EQ_INT(exists_on(o, names[i], __LINE__), 0);
    }
    rlk_client_free(a);
}

/* Every key left on the primaries has a TTL (the library's and the
 * test's own). */
static void test_no_key_without_ttl(void)
{
    int p[TC_NODES], np = primaries(p);
    for (int i = 0; i < np; i++) {
        char first[256];
        rlk_conn *k = NODE(p[i]);
        long long n = k ? keys_without_ttl(k, "*", first, sizeof first) : -1;
        CHECK_MSG(n == 0, "node %d: %lld keys without a TTL, %s first", p[i], n, first);
    }
}

/* ------------------------------------------------------------------ */
/* g. seeds that are not one cluster                                    */

/* An acquire in a thread of its own, so that one that never returns is
 * a failure of the test, not a hang of it. */
struct bounded_acq {
    rlk_client *c;
    int64_t wait_ms;
    int status;
    char err[600];
};

static void *bounded_acq_main(void *arg)
{
    struct bounded_acq *a = arg;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    opts(&o, 10000, a->wait_ms, RLK_LOCK_SIMPLE, 0, NULL);
    a->status = rlk_lock_acquire(a->c, "g-seeds", &o, &l);
    snprintf(a->err, sizeof a->err, "%s", rlk_client_errmsg(a->c));
    if (l) rlk_lock_release(l);
    return NULL;
}

/* The acquire's status, or -1 when it had not returned within bound_ms
 * (its client is then left to the thread: the test has failed). */
static int acquire_within(rlk_client *c, int64_t wait_ms, int64_t bound_ms, char *err, size_t n)
{
    struct bounded_acq a = {c, wait_ms, 0, ""};
    pthread_t t;
    struct timespec ts;
    if (pthread_create(&t, NULL, bounded_acq_main, &a) != 0) return -2;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += bound_ms / 1000;
    if (pthread_timedjoin_np(t, NULL, &ts) != 0) {
        pthread_detach(t);
        snprintf(err, n, "still waiting after %lld ms", (long long)bound_ms);
        return -1;
    }
    snprintf(err, n, "%s", a.err);
    return a.status;
}

static void test_seeds_refused(void)
{
    /* Its bus port is chosen: port + 10000 may be taken or too big (a
     * bus port taken meanwhile fails the start: another is chosen). */
    char bus[16];
    const char *extra[] = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                           "--cluster-port", bus, NULL};
    ts_options to;
    memset(&to, 0, sizeof to);
    to.extra = extra;
    ts_server *other = NULL, *alone = ts_start(NULL);
    for (int attempt = 0; attempt < 4 && !other; attempt++) {
        int port = ts_free_port(0);
        if (port < 0) break;
        snprintf(bus, sizeof bus, "%d", port);
        other = ts_start(&to);
    }
    char other_url[64], alone_url[64], other_port[16], alone_port[16], seed_port[16];
    int64_t bound = slow ? 90000 : 20000;
    if (!CHECK(other && alone)) goto out;
    url_of(other_url, sizeof other_url, other);
    url_of(alone_url, sizeof alone_url, alone);
    snprintf(other_port, sizeof other_port, "127.0.0.1:%d)", other->port);
    snprintf(alone_port, sizeof alone_port, "127.0.0.1:%d)", alone->port);
    snprintf(seed_port, sizeof seed_port, "127.0.0.1:%d)", tc_port(cl, 0));
    /* Another cluster, of one node that serves every slot. */
    rlk_conn *k = CONNECT(other_url);
    rlk_resp_value *v = k ? CMD(k, "CLUSTER", "ADDSLOTSRANGE", "0", "16383") : NULL;
    if (!CHECK(v && v->type == RLK_RESP_SIMPLE)) {
        rlk_conn_free(k);
        goto out;
    }
    int64_t until = ts_now_ms() + TC_READY_MS, up = 0;
    while (!up && ts_now_ms() < until) {
        v = CMD(k, "CLUSTER", "INFO");
        up = v && v->str && memmem(v->str, v->len, "cluster_state:ok", 16);
        if (!up) usleep(20000);
    }
    rlk_conn_free(k);
    if (!CHECK_MSG(up, "the one-node cluster is not ok")) goto out;
    struct {
        const char *what, *first, *second, *named1, *named2, *says;
    } cases[] = {
        {"a node of another cluster second", seed_url, other_url, other_port, seed_port,
         "is not a node of the cluster of seed"},
        {"a node of another cluster first", other_url, seed_url, other_port, seed_port,
         "is not a node of the cluster of seed"},
        /* Refused by its mode, or by the table read before its
         * handshake was done. */
        {"a standalone server second", seed_url, alone_url, alone_port, alone_port, "is not a"},
        {"the same standalone server twice", alone_url, alone_url, alone_port, alone_port,
         "is not a Redis Cluster node"},
    };
    static const int64_t waits[] = {-1, 60000, 0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int thread = 0; thread < 2; thread++)
            for (size_t w = 0; w < sizeof waits / sizeof waits[0]; w++) {
                rlk_client_config cfg;
                const char *seeds[1] = {cases[i].second};
                char err[600];
                client_cfg(&cfg, cases[i].first);
                cfg.seeds = seeds;
                cfg.nseeds = 1;
                rlk_client *c = rlk_client_new(&cfg);
                if (!CHECK(c != NULL)) continue;
                if (thread && !CHECK(rlk_client_watchdog_start(c) == RLK_OK)) {
                    rlk_client_free(c);
                    continue;
                }
                int64_t t0 = ts_now_ms();
                int rc = acquire_within(c, waits[w], bound, err, sizeof err);
                CHECK_MSG(rc == RLK_ERR_INVALID && strstr(err, "seed ") &&
                              strstr(err, cases[i].says) &&
                              (strstr(err, cases[i].named1) || strstr(err, cases[i].named2)),
                          "%s, %s, wait %lld: %d %s", cases[i].what, thread ? "thread" : "blocking",
                          (long long)waits[w], rc, err);
                /* Before its wait's end: the refusal ended it. */
                if (waits[w] != 0)
                    CHECK_MSG(ts_now_ms() - t0 < bound, "%s: returned after %lld ms", cases[i].what,
                              (long long)(ts_now_ms() - t0));
                if (rc == -1) goto out; /* the thread still has c */
                rlk_client_free(c);
            }
out:
    ts_stop(other);
    ts_stop(alone);
}

/* ------------------------------------------------------------------ */
/* h. a MOVED loop                                                      */

/* The MOVED replies node i gave since its last CONFIG RESETSTAT. */
static long long moved_replies(int i)
{
    rlk_conn *k = NODE(i);
    rlk_resp_value *v = k ? CMD(k, "INFO", "errorstats") : NULL;
    const char *p;
    if (!v || !v->str) return -1;
    p = memmem(v->str, v->len, "errorstat_MOVED:count=", 22);
    return p ? strtoll(p + 22, NULL, 10) : 0;
}

static void test_moved_loop(void)
{
    int p[TC_NODES], np = primaries(p), a, b;
    char name[64], ida[48], idb[48], slot[16];
    rlk_client *c = NULL;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    if (!CHECK_MSG(np == 3, "%d primaries", np)) return;
    a = p[0];
    b = p[1];
    if (!PICK(name, "h-loop", a)) return;
    snprintf(slot, sizeof slot, "%u", slot_of(name));
    if (!CHECK(CMD_STR(NODE(a), ida, "CLUSTER", "MYID") == 1) ||
        !CHECK(CMD_STR(NODE(b), idb, "CLUSTER", "MYID") == 1))
        return;
    rlk_resp_value *v = CMD(NODE(a), "CLUSTER", "SETSLOT", slot, "NODE", idb);
    if (!CHECK(v && v->type == RLK_RESP_SIMPLE)) return;
    v = CMD(NODE(b), "CLUSTER", "SETSLOT", slot, "NODE", ida);
    if (!CHECK(v && v->type == RLK_RESP_SIMPLE)) goto mend;
    for (int i = 0; i < 2; i++) {
        int at = i ? b : a, ask = 0;
        v = CMD(NODE(at), "SET", name, "x");
        CHECK_MSG(v && redirect_node(v, &ask) == (i ? a : b) && !ask, "node %d: no MOVED to %d", at,
                  i ? a : b);
    }
    reset_stats(NODE(a));
    reset_stats(NODE(b));
    c = NEW_CLIENT(0, 0, 0);
    if (!c) goto mend;
    int64_t t0 = ts_now_ms();
    opts(&o, 10000, 3000, RLK_LOCK_SIMPLE, 0, NULL);
    int rc = rlk_lock_acquire(c, name, &o, &l);
    int64_t took = ts_now_ms() - t0;
    long long moved = moved_replies(a) + moved_replies(b);
    printf("# the loop's acquire: %d after %lld ms, %lld MOVED: %s\n", rc, (long long)took, moved,
           rlk_client_errmsg(c));
    CHECK_EQ_INT(rc, RLK_ERR_SERVER);
    CHECK_MSG(strstr(rlk_client_errmsg(c), "redirect loop") != NULL, "%s", rlk_client_errmsg(c));
    CHECK_MSG(took >= 3000, "the loop ended the 3 s wait after %lld ms", (long long)took);
    /* More than one try's bound (16 in a row, the 17th ends a try). */
    CHECK_MSG(moved > 2 * 17, "%lld MOVED replies: one try, not tried again", moved);
    if (l) rlk_lock_release(l);
    l = NULL;
    /* No wait: the first try's loop ends it (a simple lock's first try
     * is SET NX, a reentrant one's the script: both read so). */
    for (int kind = 0; kind < 2; kind++) {
        opts(&o, 10000, 0, kind ? RLK_LOCK_REENTRANT : RLK_LOCK_SIMPLE, 0, NULL);
        rc = rlk_lock_acquire(c, name, &o, &l);
        CHECK_MSG(rc == RLK_ERR_SERVER && strstr(rlk_client_errmsg(c), "redirect loop"),
                  "%s, no wait: %d %s", kind ? "reentrant" : "simple", rc, rlk_client_errmsg(c));
        if (l) rlk_lock_release(l);
        l = NULL;
    }
    /* A reentrant lock's wait, by the script: tried again, then named. */
    t0 = ts_now_ms();
    opts(&o, 10000, 1000, RLK_LOCK_REENTRANT, 0, NULL);
    rc = rlk_lock_acquire(c, name, &o, &l);
    took = ts_now_ms() - t0;
    CHECK_MSG(rc == RLK_ERR_SERVER && strstr(rlk_client_errmsg(c), "redirect loop") && took >= 1000,
              "reentrant, 1 s wait: %d after %lld ms: %s", rc, (long long)took, rlk_client_errmsg(c));
    if (l) rlk_lock_release(l);
    l = NULL;
mend:
    v = CMD(NODE(a), "CLUSTER", "SETSLOT", slot, "NODE", ida);
    CHECK(v && v->type == RLK_RESP_SIMPLE);
    CHECK_EQ_INT(tc_wait_ready(cl, TC_READY_MS), 0);
    if (c) {
        opts(&o, 10000, 5000, RLK_LOCK_SIMPLE, 0, NULL);
        CHECK_EQ_INT(rlk_lock_acquire(c, name, &o, &l), RLK_OK);
        if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    }
    rlk_client_free(c);
}

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    /* SIGPIPE fatal: the library must never raise it (nodes die here). */
    locktest_timing();
    SLACK = slow ? 6000 : 3000;
    cl = tc_start(0);
    if (!CHECK_MSG(cl != NULL, "the cluster did not start")) return tl_finish();
    tc_url(cl, 0, seed_url, sizeof seed_url);
    printf("# cluster ready in %lld ms; the clients' URL: %s\n", (long long)(ts_now_ms() - t0),
           seed_url);
    RUN(test_three_shards);
    RUN(test_wait_woken);
    RUN(test_fair_order);
    RUN(test_migration);
    RUN(test_ask_window);
    RUN(test_failover);
    RUN(test_frozen_primary);
    RUN(test_redisson_channel);
    RUN(test_hash_tag);
    RUN(test_seeds_refused);
    RUN(test_moved_loop);
    RUN(test_no_key_without_ttl);
    for (int i = 0; i < TC_NODES; i++) node_forget(i);
    tc_stop(cl);
    printf("# total %lld ms\n", (long long)(ts_now_ms() - t0));
    return tl_finish();
}
