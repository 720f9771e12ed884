/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Redlock (rlk_client_config.redlock) over 5 independent servers started
 * here: one token on every server, the fence the largest of the
 * servers' clocks; 2 servers down and it still acquires, 3 down and it
 * fails at once with the servers' connection status (not RLK_LOCK_BUSY)
 * naming them; one frozen with SIGSTOP does not hold an acquire until
 * its command timeout; held by someone else on a majority is
 * RLK_LOCK_BUSY and nothing is left behind; two clients contending
 * never both hold a majority (read from the servers, over many rounds);
 * a server restarted empty under a running watchdog is taken again with
 * the same token; a lock that loses its majority is reported lost;
 * extend and release by token need a majority; 2 or 4 servers are
 * refused; one of the servers a Redis Cluster (found through one node's
 * URL, the lock on the node serving its slot).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "cluster.h"
#include "locktest.h"
#include "resplock.h"
#include "adapters/poll.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NS 5
static ts_server *sv[NS];
static char url[NS][64];
static rlk_conn *adm[NS];

static rlk_client *rl_client(size_t n, int64_t timeout_ms)
{
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    static const char *seeds[NS];
    for (size_t i = 1; i < n; i++) seeds[i - 1] = url[i];
    cfg.conn.url = url[0];
    cfg.seeds = seeds;
    cfg.nseeds = n - 1;
    cfg.redlock = 1;
    cfg.conn.connect_timeout_ms = (int)timeout_ms;
    cfg.conn.command_timeout_ms = (int)timeout_ms;
    rlk_client *cl = rlk_client_new(&cfg);
    CHECK(cl != NULL);
    if (cl) CHECK_EQ_INT(rlk_client_tick(cl, NULL), RLK_OK);
    return cl;
}

/* How many servers hold key with value token. */
static int holding(const char *key, const char *token)
{
    int n = 0;
    for (int i = 0; i < NS; i++) {
        if (!adm[i]) continue;
        rlk_resp_value *v = CMD(adm[i], "GET", key);
        n += v && v->str && strcmp(v->str, token) == 0;
    }
    return n;
}

/* How many servers still have key, once that is 0 or after LONG_MS:
 * a release returns once a majority released it, the others' releases
 * (sent with theirs) are answered soon after; cl (may be NULL) is
 * ticked meanwhile. */
static int left_on(rlk_client *cl, const char *key)
{
    int64_t end = ts_now_ms() + LONG_MS;
    for (;;) {
        int n = 0;
        for (int i = 0; i < NS; i++) n += adm[i] && CMD_INT(adm[i], "EXISTS", key) == 1;
        if (!n || ts_now_ms() > end) return n;
        if (cl) rlk_client_tick(cl, NULL);
        ts_pause_ms(5);
    }
}

static void clear(const char *key)
{
    for (int i = 0; i < NS; i++)
        if (adm[i]) CMD(adm[i], "DEL", key);
}

static void reconnect_admin(int i)
{
    rlk_conn_free(adm[i]);
    adm[i] = CONNECT(url[i]);
    if (i == 0) admin = adm[0]; /* locktest_finish frees it */
}

static void test_refused_sizes(void)
{
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    const char *seeds[3] = {url[1], url[2], url[3]};
    cfg.conn.url = url[0];
    cfg.redlock = 1;
    cfg.seeds = seeds;
    for (size_t n = 0; n <= 3; n++) {
        cfg.nseeds = n;
        rlk_client *cl = rlk_client_new(&cfg);
        /* 1, 2 or 4 servers: refused; 3: made. */
        CHECK_MSG((cl != NULL) == (n == 2), "%zu seeds", n);
        rlk_client_free(cl);
    }
}

static void test_one_token_everywhere(void)
{
    rlk_client *cl = rl_client(NS, LONG_MS);
    if (!cl) return;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    opts(&o, 10000, 0, RLK_LOCK_SIMPLE, 0, NULL);
    long long before = server_time_ms();
    int rc = rlk_lock_acquire(cl, "rl-basic", &o, &l);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_client_errmsg(cl));
    if (!l) goto out;
    CHECK(is_token(rlk_lock_token(l)));
    /* The servers that answered in time hold it (a majority at least;
     * the others' SETs were sent at once and answer soon). */
    int64_t end = ts_now_ms() + LONG_MS;
    while (holding("rl-basic", rlk_lock_token(l)) < NS && ts_now_ms() < end) {
        rlk_client_tick(cl, NULL);
        ts_pause_ms(5);
    }
    CHECK_EQ_INT(holding("rl-basic", rlk_lock_token(l)), NS);
    /* Their replies came before the GETs' (one server each): read now. */
    rlk_client_tick(cl, NULL);
    /* The fence: a server's clock at the acquire, in microseconds. */
    CHECK(rlk_lock_fence(l) / 1000 >= (uint64_t)before);
    int64_t left = rlk_lock_remaining_ms(l);
    CHECK(left > 0 && left <= rlk_plan_valid_ms(NULL, 10000));
    CHECK(!rlk_lock_is_lost(l));
    /* Someone else: busy at once. */
    rlk_client *other = rl_client(NS, LONG_MS);
    rlk_lock *l2 = NULL;
    if (other) {
        rc = rlk_lock_acquire(other, "rl-basic", &o, &l2);
        CHECK_MSG(rc == RLK_LOCK_BUSY, "%d %s", rc, rlk_client_errmsg(other));
        CHECK(l2 == NULL);
    }
    /* Status: held on all of them. */
    rlk_lock_status st;
    CHECK_EQ_INT(rlk_lock_get_status(cl, "rl-basic", &st), RLK_OK);
    CHECK_EQ_INT(st.held, 1);
    CHECK_EQ_INT(st.servers, NS);
    CHECK_EQ_INT(st.held_on, NS);
    CHECK_EQ_INT(st.pid, getpid());
    /* Extend: every server's TTL. */
    CHECK_EQ_INT(rlk_lock_extend(l, 20000, RLK_EXTEND_SET), RLK_OK);
    for (int i = 0; i < NS; i++) CHECK(CMD_INT(adm[i], "PTTL", "rl-basic") > 15000);
    CHECK(rlk_lock_remaining_ms(l) > 15000);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    CHECK_EQ_INT(left_on(cl, "rl-basic"), 0);
    /* Free now: the other takes it. */
    if (other) {
        rc = rlk_lock_acquire(other, "rl-basic", &o, &l2);
        CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_client_errmsg(other));
        if (l2) CHECK_EQ_INT(rlk_lock_release(l2), RLK_OK);
    }
    rlk_client_free(other);
out:
    rlk_client_free(cl);
    clear("rl-basic");
}

static void test_two_down_still_acquires(void)
{
    CHECK_EQ_INT(ts_halt(sv[1]), 0);
    CHECK_EQ_INT(ts_halt(sv[3]), 0);
    rlk_client *cl = rl_client(NS, LONG_MS);
    if (cl) {
        rlk_lock_options o;
        rlk_lock *l = NULL;
        opts(&o, 10000, 0, RLK_LOCK_SIMPLE, 0, NULL);
        int rc = rlk_lock_acquire(cl, "rl-two-down", &o, &l);
        CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_client_errmsg(cl));
        if (l) {
            int n = 0;
            for (int i = 0; i < NS; i += 2) {
                rlk_resp_value *v = CMD(adm[i], "GET", "rl-two-down");
                n += v && v->str && strcmp(v->str, rlk_lock_token(l)) == 0;
            }
            CHECK_EQ_INT(n, 3);
            rc = rlk_lock_release(l);
            CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_client_errmsg(cl));
        }
        rlk_client_free(cl);
    }
    CHECK_EQ_INT(ts_start_again(sv[1]), 0);
    CHECK_EQ_INT(ts_start_again(sv[3]), 0);
    reconnect_admin(1);
    reconnect_admin(3);
}

static void test_three_down_fails_at_once(void)
{
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(ts_halt(sv[i]), 0);
    /* A command timeout far longer than a refused connect takes. */
    rlk_client *cl = rl_client(NS, 20000);
    if (cl) {
        rlk_lock_options o;
        rlk_lock *l = NULL;
        opts(&o, 10000, 0, RLK_LOCK_SIMPLE, 0, NULL);
        int64_t t0 = ts_now_ms();
        int rc = rlk_lock_acquire(cl, "rl-three-down", &o, &l);
        int64_t took = ts_now_ms() - t0;
        CHECK_MSG(rc == RLK_ERR_CONNECT || rc == RLK_ERR_IO || rc == RLK_ERR_CLOSED,
                  "%d %s", rc, rlk_client_errmsg(cl));
        CHECK(l == NULL);
        /* Not the 20 s of the command timeout: when no majority can be
         * had any more, it ends. */
        CHECK_MSG(took < 10000, "%lld ms", (long long)took);
        const char *m = rlk_client_errmsg(cl);
        CHECK_MSG(ts_contains(m, "no quorum") && ts_contains(m, url[0] + 8) &&
                      ts_contains(m, url[2] + 8) && !ts_contains(m, url[4] + 8),
                  "%s", m);
        /* Nothing left on the two that took it. */
        CHECK_EQ_INT(CMD_INT(adm[3], "EXISTS", "rl-three-down"), 0);
        CHECK_EQ_INT(CMD_INT(adm[4], "EXISTS", "rl-three-down"), 0);
        /* With a wait: tried again until it runs out, the same status. */
        opts(&o, 10000, 700, RLK_LOCK_SIMPLE, 0, NULL);
        t0 = ts_now_ms();
        rc = rlk_lock_acquire(cl, "rl-three-down", &o, &l);
        CHECK_MSG(rc == RLK_ERR_CONNECT || rc == RLK_ERR_IO || rc == RLK_ERR_CLOSED ||
                      rc == RLK_ERR_TIMEOUT,
                  "%d %s", rc, rlk_client_errmsg(cl));
        CHECK_MSG(ts_contains(rlk_client_errmsg(cl), "no quorum"), "%s", rlk_client_errmsg(cl));
        CHECK(ts_now_ms() - t0 >= 400);
        rlk_client_free(cl);
    }
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(ts_start_again(sv[i]), 0);
        reconnect_admin(i);
    }
}

static void test_frozen_server_does_not_hold_it_up(void)
{
    rlk_client *cl = rl_client(NS, 15000);
    if (!cl) return;
    CHECK_EQ_INT(rlk_client_connect(cl), RLK_OK);
    kill(sv[2]->pid, SIGSTOP);
    rlk_lock_options o;
    rlk_lock *l = NULL;
    opts(&o, 10000, 0, RLK_LOCK_SIMPLE, 0, NULL);
    int64_t t0 = ts_now_ms();
    int rc = rlk_lock_acquire(cl, "rl-frozen", &o, &l);
    int64_t took = ts_now_ms() - t0;
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_client_errmsg(cl));
    /* The other four answered: it did not wait out the frozen one's
     * command timeout (15 s). */
    CHECK_MSG(took < 7500, "%lld ms", (long long)took);
    if (l) CHECK(rlk_lock_remaining_ms(l) > 0);
    if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    kill(sv[2]->pid, SIGCONT);
    rlk_client_free(cl);
    clear("rl-frozen");
}

static void test_busy_on_a_majority(void)
{
    for (int i = 0; i < 3; i++) CMD(adm[i], "SET", "rl-busy", "someone", "PX", "60000");
    rlk_client *cl = rl_client(NS, LONG_MS);
    if (cl) {
        rlk_lock_options o;
        rlk_lock *l = NULL;
        opts(&o, 10000, 0, RLK_LOCK_SIMPLE, 0, NULL);
        int rc = rlk_lock_acquire(cl, "rl-busy", &o, &l);
        CHECK_MSG(rc == RLK_LOCK_BUSY, "%d %s", rc, rlk_client_errmsg(cl));
        /* What it took on the two others was given back. */
        CHECK_EQ_INT(CMD_INT(adm[3], "EXISTS", "rl-busy"), 0);
        CHECK_EQ_INT(CMD_INT(adm[4], "EXISTS", "rl-busy"), 0);
        CHECK_EQ_INT(holding("rl-busy", "someone"), 3);
        /* A wait: tried again after pauses until it runs out. */
        opts(&o, 10000, 600, RLK_LOCK_SIMPLE, 0, NULL);
        int64_t t0 = ts_now_ms();
        rc = rlk_lock_acquire(cl, "rl-busy", &o, &l);
        CHECK_EQ_INT(rc, RLK_LOCK_BUSY);
        CHECK(ts_now_ms() - t0 >= 400);
        /* Freed on one: a majority is there to take. */
        CMD(adm[0], "DEL", "rl-busy");
        rc = rlk_lock_acquire(cl, "rl-busy", &o, &l);
        CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_client_errmsg(cl));
        if (l) {
            CHECK(holding("rl-busy", rlk_lock_token(l)) >= 3);
            CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
        }
        CHECK_EQ_INT(holding("rl-busy", "someone"), 2);
        rlk_client_free(cl);
    }
    clear("rl-busy");
}

/* Two clients contending, each in its own thread; the servers are read
 * under adm_mu (the admin connections are shared). */
struct contender {
    pthread_t th;
    int rounds, got, overlap, minority, errors, finished;
    char err[300];
};
static pthread_mutex_t adm_mu = PTHREAD_MUTEX_INITIALIZER;
static int in_section;

static void *contend(void *arg)
{
    struct contender *c = arg;
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    const char *seeds[NS - 1] = {url[1], url[2], url[3], url[4]};
    cfg.conn.url = url[0];
    cfg.seeds = seeds;
    cfg.nseeds = NS - 1;
    cfg.redlock = 1;
    cfg.conn.command_timeout_ms = LONG_MS;
    rlk_client *cl = rlk_client_new(&cfg);
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 10000;
    for (int r = 0; cl && r < c->rounds; r++) {
        rlk_lock *l = NULL;
        int rc = rlk_lock_acquire(cl, "rl-contend", &o, &l);
        if (rc == RLK_LOCK_BUSY) continue;
        if (rc != RLK_OK) {
            c->errors++;
            snprintf(c->err, sizeof c->err, "%d %s", rc, rlk_client_errmsg(cl));
            continue;
        }
        c->got++;
        if (__atomic_add_fetch(&in_section, 1, __ATOMIC_SEQ_CST) != 1) c->overlap++;
        /* Held: a majority of the servers has this token. */
        pthread_mutex_lock(&adm_mu);
        if (holding("rl-contend", rlk_lock_token(l)) < 3) c->minority++;
        pthread_mutex_unlock(&adm_mu);
        __atomic_sub_fetch(&in_section, 1, __ATOMIC_SEQ_CST);
        rc = rlk_lock_release(l);
        if (rc != RLK_OK) {
            c->errors++;
            snprintf(c->err, sizeof c->err, "release %d %s", rc, rlk_client_errmsg(cl));
        }
    }
    if (!cl) c->errors++;
    rlk_client_free(cl);
    __atomic_store_n(&c->finished, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void test_contenders_never_both_hold_it(void)
{
    struct contender c[2];
    memset(c, 0, sizeof c);
    for (int i = 0; i < 2; i++) {
        c[i].rounds = slow ? 40 : 200;
        pthread_create(&c[i].th, NULL, contend, &c[i]);
    }
    /* Meanwhile the servers never show two tokens each on a majority. */
    int both = 0, looks = 0;
    while (!__atomic_load_n(&c[0].finished, __ATOMIC_SEQ_CST) ||
           !__atomic_load_n(&c[1].finished, __ATOMIC_SEQ_CST)) {
        char seen[NS][300];
        pthread_mutex_lock(&adm_mu);
        for (int i = 0; i < NS; i++) {
            rlk_resp_value *v = CMD(adm[i], "GET", "rl-contend");
            snprintf(seen[i], sizeof seen[i], "%s", v && v->str ? v->str : "");
        }
        pthread_mutex_unlock(&adm_mu);
        int majorities = 0;
        for (int i = 0; i < NS; i++) {
            int n = 0, first = 1;
            if (!seen[i][0]) continue;
            for (int k = 0; k < NS; k++) {
                n += strcmp(seen[k], seen[i]) == 0;
                if (k < i && strcmp(seen[k], seen[i]) == 0) first = 0;
            }
            majorities += first && n >= 3;
        }
        both += majorities > 1;
        looks++;
    }
    for (int i = 0; i < 2; i++) pthread_join(c[i].th, NULL);
    CHECK_EQ_INT(both, 0);
    CHECK(looks > 0);
    for (int i = 0; i < 2; i++) {
        CHECK_MSG(c[i].errors == 0, "contender %d: %d errors, last %s", i, c[i].errors, c[i].err);
        CHECK_EQ_INT(c[i].overlap, 0);
        CHECK_EQ_INT(c[i].minority, 0);
    }
    /* Both got it, in turns. */
    CHECK(c[0].got > 0 && c[1].got > 0);
    clear("rl-contend");
}

static struct lost_rec lr;

static void test_restarted_server_is_taken_again(void)
{
    rlk_client *cl = rl_client(NS, 1000);
    if (!cl) return;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    memset(&lr, 0, sizeof lr);
    opts(&o, 1500, 0, RLK_LOCK_SIMPLE, 1, &lr);
    int rc = rlk_lock_acquire(cl, "rl-restart", &o, &l);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_client_errmsg(cl));
    if (!l) {
        rlk_client_free(cl);
        return;
    }
    char token[300];
    snprintf(token, sizeof token, "%s", rlk_lock_token(l));
    CHECK_EQ_INT(ts_restart(sv[4]), 0);
    reconnect_admin(4);
    CHECK_EQ_INT(CMD_INT(adm[4], "EXISTS", "rl-restart"), 0);
    /* Ticks renew it on the others and take it again on the empty one,
     * with the same token; never lost meanwhile; past several TTLs. */
    int64_t end = ts_now_ms() + 3 * 1500 + LONG_MS, retaken = 0;
    while (ts_now_ms() < end && !lost_calls(&lr)) {
        int64_t next = 0;
        rlk_client_tick(cl, &next);
        rlk_resp_value *v = CMD(adm[4], "GET", "rl-restart");
        if (!retaken && v && v->str && strcmp(v->str, token) == 0) retaken = ts_now_ms();
        if (retaken && ts_now_ms() > retaken + 3 * 1500) break;
        struct pollfd p = {rlk_client_fd(cl), POLLIN, 0};
        poll(&p, 1, (int)(next < 0 || next > 50 ? 50 : next));
    }
    CHECK_MSG(retaken != 0, "not taken again on the restarted server");
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK(!rlk_lock_is_lost(l));
    CHECK_EQ_INT(holding("rl-restart", token), NS);
    /* Taken from a majority (deleted on 3): reported lost. */
    for (int i = 0; i < 3; i++) CMD(adm[i], "DEL", "rl-restart");
    end = ts_now_ms() + 1500 + LONG_MS;
    while (ts_now_ms() < end && !lost_calls(&lr)) {
        int64_t next = 0;
        rlk_client_tick(cl, &next);
        struct pollfd p = {rlk_client_fd(cl), POLLIN, 0};
        poll(&p, 1, (int)(next < 0 || next > 50 ? 50 : next));
    }
    CHECK_EQ_INT(lost_calls(&lr), 1);
    CHECK(rlk_lock_is_lost(l));
    CHECK_EQ_INT(rlk_lock_remaining_ms(l), 0);
    rc = rlk_lock_release(l);
    CHECK_MSG(rc == RLK_LOCK_LOST, "%d %s", rc, rlk_client_errmsg(cl));
    rlk_client_free(cl);
    clear("rl-restart");
}

/* Turned by an event loop (rlk_client_watch, rlk_client_handle through
 * the poll adapter): a watchdog lock renewed past several TTLs. */
static void test_event_loop_renews(void)
{
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    const char *seeds[NS - 1] = {url[1], url[2], url[3], url[4]};
    cfg.conn.url = url[0];
    cfg.seeds = seeds;
    cfg.nseeds = NS - 1;
    cfg.redlock = 1;
    rlk_client *cl = rlk_client_new(&cfg);
    if (!CHECK(cl != NULL)) return;
    rlk_watch w[2];
    int64_t dl;
    CHECK_EQ_INT(rlk_client_watch(cl, w, 2, &dl), 1);
    CHECK(w[0].fd == rlk_client_fd(cl) && w[0].fd >= 0);
    rlk_lock_options o;
    rlk_lock *l = NULL;
    memset(&lr, 0, sizeof lr);
    opts(&o, 600, 0, RLK_LOCK_SIMPLE, 1, &lr);
    int rc = rlk_lock_acquire(cl, "rl-loop", &o, &l);
    CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_client_errmsg(cl));
    if (l) {
        int64_t end = ts_now_ms() + 4 * 600;
        while (ts_now_ms() < end && !lost_calls(&lr)) rlk_client_poll_once(cl, 100);
        CHECK_EQ_INT(lost_calls(&lr), 0);
        CHECK(rlk_lock_remaining_ms(l) > 0);
        CHECK_EQ_INT(holding("rl-loop", rlk_lock_token(l)), NS);
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    }
    rlk_client_free(cl);
    clear("rl-loop");
}

static void test_by_token(void)
{
    rlk_client *cl = rl_client(NS, LONG_MS);
    if (!cl) return;
    /* A token on 3 of 5: released by token on a majority. */
    for (int i = 0; i < 3; i++) CMD(adm[i], "SET", "rl-token", "rlk:tok", "PX", "60000");
    int64_t after = 0;
    CHECK_EQ_INT(rlk_extend_token(cl, "rl-token", "rlk:tok", 30000, RLK_EXTEND_SET, &after),
                 RLK_OK);
    CHECK(after > 25000 && after <= 30000);
    CHECK_EQ_INT(rlk_release_token(cl, "rl-token", "rlk:tok"), RLK_OK);
    CHECK_EQ_INT(holding("rl-token", "rlk:tok"), 0);
    /* On 2 of 5: no majority. */
    for (int i = 0; i < 2; i++) CMD(adm[i], "SET", "rl-token", "rlk:tok", "PX", "60000");
    int rc = rlk_release_token(cl, "rl-token", "rlk:tok");
    CHECK_MSG(rc != RLK_OK && ts_contains(rlk_client_errmsg(cl), "2 of 5"), "%d %s", rc,
              rlk_client_errmsg(cl));
    rlk_client_free(cl);
    clear("rl-token");
}

static void test_a_cluster_among_them(void)
{
    tc_cluster *c = tc_start(0);
    if (!CHECK_MSG(c != NULL, "the cluster did not start")) return;
    char curl[64];
    tc_url(c, 0, curl, sizeof curl);
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    const char *seeds[2] = {url[1], curl};
    cfg.conn.url = url[0];
    cfg.seeds = seeds;
    cfg.nseeds = 2;
    cfg.redlock = 1;
    cfg.conn.command_timeout_ms = LONG_MS;
    rlk_client *cl = rlk_client_new(&cfg);
    if (CHECK(cl != NULL)) {
        rlk_lock_options o;
        rlk_lock *l = NULL;
        opts(&o, 10000, LONG_MS, RLK_LOCK_SIMPLE, 0, NULL);
        int rc = rlk_lock_acquire(cl, "rl-cluster", &o, &l);
        CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_client_errmsg(cl));
        if (l) {
            /* On the node serving the name's slot, as on the others, once
             * its answer came. */
            char nurl[64];
            tc_url(c, tc_owner(c, t_slot("rl-cluster")), nurl, sizeof nurl);
            rlk_conn *nc = CONNECT(nurl);
            int64_t end = ts_now_ms() + LONG_MS;
            int on = 0;
            while (nc && !on && ts_now_ms() < end) {
                rlk_resp_value *v = CMD(nc, "GET", "rl-cluster");
                on = v && v->str && strcmp(v->str, rlk_lock_token(l)) == 0;
                if (!on) rlk_client_tick(cl, NULL), ts_pause_ms(5);
            }
            CHECK_MSG(on, "the cluster's node does not hold it");
            /* And on both single servers (the later one's answer read
             * by the ticks). */
            end = ts_now_ms() + LONG_MS;
            while (holding("rl-cluster", rlk_lock_token(l)) < 2 && ts_now_ms() < end)
                rlk_client_tick(cl, NULL), ts_pause_ms(5);
            CHECK_EQ_INT(holding("rl-cluster", rlk_lock_token(l)), 2);
            CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
            end = ts_now_ms() + LONG_MS;
            while (nc && CMD_INT(nc, "EXISTS", "rl-cluster") != 0 && ts_now_ms() < end)
                rlk_client_tick(cl, NULL), ts_pause_ms(5);
            if (nc) CHECK_EQ_INT(CMD_INT(nc, "EXISTS", "rl-cluster"), 0);
            CHECK_EQ_INT(left_on(cl, "rl-cluster"), 0);
            rlk_conn_free(nc);
        }
        rlk_client_free(cl);
    }
    tc_stop(c);
    clear("rl-cluster");
}

static void test_refusals(void)
{
    rlk_client *cl = rl_client(NS, LONG_MS);
    if (!cl) return;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    opts(&o, 10000, 0, RLK_LOCK_REENTRANT, 0, NULL);
    CHECK_EQ_INT(rlk_lock_acquire(cl, "rl-refused", &o, &l), RLK_ERR_INVALID);
    CHECK(ts_contains(rlk_client_errmsg(cl), "simple locks only"));
    CHECK_EQ_INT(rlk_client_watchdog_start(cl), RLK_ERR_INVALID);
    CHECK(ts_contains(rlk_client_errmsg(cl), "Redlock"));
    rlk_client_free(cl);
    for (int i = 0; i < NS; i++) CHECK_EQ_INT(CMD_INT(adm[i], "EXISTS", "rl-refused"), 0);
}

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;
    /* srv is the first server; four more. */
    sv[0] = srv;
    adm[0] = admin;
    snprintf(url[0], sizeof url[0], "%s", srv_url);
    for (int i = 1; i < NS; i++) {
        sv[i] = ts_start(NULL);
        if (!sv[i]) {
            printf("FAIL main: server %d did not start\n", i);
            return 1;
        }
        snprintf(url[i], sizeof url[i], "redis://127.0.0.1:%d", sv[i]->port);
        adm[i] = CONNECT(url[i]);
    }
    RUN(test_refused_sizes);
    RUN(test_one_token_everywhere);
    RUN(test_two_down_still_acquires);
    RUN(test_three_down_fails_at_once);
    RUN(test_frozen_server_does_not_hold_it_up);
    RUN(test_busy_on_a_majority);
    RUN(test_contenders_never_both_hold_it);
    RUN(test_restarted_server_is_taken_again);
    RUN(test_event_loop_renews);
    RUN(test_by_token);
    RUN(test_a_cluster_among_them);
    RUN(test_refusals);
    for (int i = 1; i < NS; i++) {
        rlk_conn_free(adm[i]);
        ts_stop(sv[i]);
    }
    return locktest_finish(t0);
}
