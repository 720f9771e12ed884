/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lock client over a redis+sentinel:// URL, against the real
 * Sentinel setup of tests/sentinel.h (a primary, a replica, three
 * sentinels with quorum 2): the primary is asked of the sentinels and
 * the lock lands there; a sentinel that is down, listed first, is passed
 * over; a primary's name no sentinel knows, and a URL without one, fail
 * with words that say so; a sentinel that names a replica (a fake one:
 * real sentinels cannot be made to lie) costs a try whose ROLE refuses
 * it, and the next sentinel is asked; after SENTINEL FAILOVER a new acquire lands
 * on the new primary, never on the old one (now a replica).  Under RESP2
 * (cfg.conn.protocol 2) the client's sentinel connections still subscribe
 * to +switch-master (CLIENT LIST on each sentinel, RESP3 beside it as
 * the control), and a wait's listener connection follows a failover to
 * the new primary, where the holder's release hands the waiter the lock
 * at once.
 *
 * The tests run in order on one setup (each finds the primary the one
 * before left).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "conntest.h"
#include "fakeserver.h"
#include "locktest.h"
#include "resplock.h"
#include "sentinel.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tsn_env *env;

static rlk_client *client_for(const char *url, int connect_ms)
{
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    cfg.conn.url = url;
    cfg.conn.connect_timeout_ms = connect_ms;
    cfg.conn.command_timeout_ms = 3000;
    return rlk_client_new(&cfg);
}

/* The value of key on data node i ("" when none, or no answer). */
static const char *value_on(int i, const char *key)
{
    static char got[256];
    char url[64];
    got[0] = '\0';
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", tsn_data_port(env, i));
    rlk_conn *c = CONNECT(url);
    if (c && CMD_STR(c, got, "GET", key) < 0) got[0] = '\0';
    rlk_conn_free(c);
    return got;
}

/* Acquires name through url, and checks that data node at holds it
 * with the lock's token; released after. */
static void lock_lands_on(const char *url, const char *name, int at)
{
    rlk_client *cl = client_for(url, 5000);
    if (!CHECK(cl != NULL)) return;
    CHECK_MSG(tsn_lock_lands_on(env, cl, name, at) == 0, "%s on data node %d (stderr says why)",
              name, at);
    rlk_client_free(cl);
}

static void test_acquire_on_the_primary(void)
{
    char url[256];
    tsn_url(env, url, sizeof url);
    int p = tsn_primary(env);
    if (!CHECK(p >= 0)) return;
    lock_lands_on(url, "sn-first", p);
}

static void test_a_sentinel_down_is_passed_over(void)
{
    char url[320], good[256];
    tsn_url(env, good, sizeof good);
    /* A port nobody listens on, first. */
    snprintf(url, sizeof url, "redis+sentinel://127.0.0.1:%d,%s", ts_free_port(0),
             good + strlen("redis+sentinel://"));
    int p = tsn_primary(env);
    if (!CHECK(p >= 0)) return;
    lock_lands_on(url, "sn-passed-over", p);
}

/* A sentinel that names data node *arg whatever it is asked. */
static void lying_sentinel(fake_conn *fc, void *arg)
{
    int node = *(int *)arg;
    char **argv;
    int argc;
    while ((argc = fake_read_command(fc, &argv, -1, NULL)) > 0) {
        if (strcmp(argv[0], "HELLO") == 0) {
            fake_send_str(fc, "-ERR unknown command 'HELLO'\r\n");
        } else if (argc == 3 && strcmp(argv[0], "SENTINEL") == 0) {
            char port[8], reply[64];
            snprintf(port, sizeof port, "%d", tsn_data_port(env, node));
            snprintf(reply, sizeof reply, "*2\r\n$9\r\n127.0.0.1\r\n$%zu\r\n%s\r\n",
                     strlen(port), port);
            fake_send_str(fc, reply);
        } else {
            fake_send_str(fc, "+OK\r\n");
        }
    }
}

static void test_a_sentinel_naming_a_replica(void)
{
    int p = tsn_primary(env), rep = 1 - p;
    if (!CHECK(p >= 0)) return;
    fake_server *fs = fake_start(lying_sentinel, &rep);
    if (!CHECK(fs != NULL)) return;
    char url[320], good[256];
    /* Alone, it is never believed: the replica's ROLE refuses it. */
    snprintf(url, sizeof url, "redis+sentinel://127.0.0.1:%d/%s", fake_port(fs), TSN_NAME);
    rlk_client *cl = client_for(url, 1500);
    if (CHECK(cl != NULL)) {
        CHECK(rlk_client_connect(cl) != RLK_OK);
        CHECK_MSG(ts_contains(rlk_client_errmsg(cl), "ROLE: the server is slave, not a primary"),
                  "errmsg: %s", rlk_client_errmsg(cl));
    }
    rlk_client_free(cl);
    /* First of several: the next sentinel is asked, and the lock lands
     * on the primary. */
    tsn_url(env, good, sizeof good);
    snprintf(url, sizeof url, "redis+sentinel://127.0.0.1:%d,%s", fake_port(fs),
             good + strlen("redis+sentinel://"));
    lock_lands_on(url, "sn-lied-to", p);
    fake_stop(fs);
}

static void test_unknown_name_and_bad_urls(void)
{
    char url[320];
    snprintf(url, sizeof url, "redis+sentinel://127.0.0.1:%d/nosuch", tsn_sentinel_port(env, 0));
    rlk_client *cl = client_for(url, 1500);
    if (CHECK(cl != NULL)) {
        CHECK(rlk_client_connect(cl) != RLK_OK);
        CHECK_MSG(ts_contains(rlk_client_errmsg(cl), "no primary named 'nosuch'"), "errmsg: %s",
                  rlk_client_errmsg(cl));
    }
    rlk_client_free(cl);

    static const struct {
        const char *url, *words;
    } bad[] = {
        {"redis+sentinel://127.0.0.1:26379", "no primary's name"},
        {"redis+sentinel://127.0.0.1:26379/", "no primary's name"},
        {"redis+sentinel://127.0.0.1:26379,/m", "empty sentinel address"},
        {"redis+sentinel://127.0.0.1:26379/m?db=2", "unknown query parameter"},
        {"redis+sentinel://127.0.0.1:26379/m%41", "must be plain"},
        {"redis+sentinel://127.0.0.1:26379/m#x", "fragment"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cl = client_for(bad[i].url, 1000);
        if (!CHECK(cl != NULL)) continue;
        CHECK_EQ_INT(rlk_client_connect(cl), RLK_ERR_URL);
        CHECK_MSG(ts_contains(rlk_client_errmsg(cl), bad[i].words), "%s: %s", bad[i].url,
                  rlk_client_errmsg(cl));
        rlk_client_free(cl);
    }
}

/* After a failover, a client made before it acquires on the new
 * primary: its connection to the old one was closed by the sentinels'
 * reconfiguration, and the next connect asks them again. */
static void test_after_a_failover(void)
{
    char url[256];
    tsn_url(env, url, sizeof url);
    int old = tsn_primary(env);
    if (!CHECK(old >= 0)) return;
    rlk_client *cl = client_for(url, 5000);
    if (!CHECK(cl != NULL)) return;
    CHECK_EQ_INT(rlk_client_connect(cl), RLK_OK);
    int ms = tsn_failover(env, TSN_READY_MS);
    if (CHECK_MSG(ms >= 0, "no failover") && CHECK(tsn_primary(env) == 1 - old)) {
        printf("# failover in %d ms\n", ms);
        rlk_lock_options o;
        rlk_lock_options_init(&o);
        o.ttl_ms = 30000;
        o.wait_ms = 10000;
        rlk_lock *l = NULL;
        int rc = rlk_lock_acquire(cl, "sn-after", &o, &l);
        if (CHECK_MSG(rc == RLK_OK, "%d: %s", rc, rlk_client_errmsg(cl))) {
            CHECK_EQ_STR(value_on(1 - old, "sn-after"), rlk_lock_token(l));
            CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
        }
    }
    rlk_client_free(cl);
}

/* The sub= count of the connection named name in c's CLIENT LIST (the
 * highest when several), or -1 when none is so named. */
static int subs_of(rlk_conn *c, const char *name)
{
    char needle[80];
    int best = -1;
    rlk_resp_value *v = c ? CMD(c, "CLIENT", "LIST") : NULL;
    if (!v || !v->str) return -1;
    snprintf(needle, sizeof needle, " name=%s ", name);
    for (const char *p = v->str; (p = strstr(p, needle)) != NULL; p++) {
        const char *eol = strchr(p, '\n'), *sub = strstr(p, " sub=");
        if (sub && (!eol || sub < eol) && atoi(sub + 5) > best) best = atoi(sub + 5);
    }
    return best;
}

/* Waits until sentinel s (data node s when data) has a connection named
 * name with at least want subscriptions: 1, or 0 at the deadline. */
static int wait_subs(int data, int s, const char *name, int want, int64_t ms)
{
    char url[64];
    int64_t deadline = ts_now_ms() + ms;
    int got;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d",
             data ? tsn_data_port(env, s) : tsn_sentinel_port(env, s));
    rlk_conn *c = CONNECT(url);
    while ((got = subs_of(c, name)) < want && ts_now_ms() < deadline) ts_pause_ms(20);
    rlk_conn_free(c);
    return got >= want;
}

/* Under RESP2 (cfg.conn.protocol 2) as under RESP3, each of the
 * client's sentinel connections subscribes to +switch-master. */
static void test_resp2_sentinels_subscribe(void)
{
    char url[256];
    tsn_url(env, url, sizeof url);
    for (int proto = 3; proto >= 2; proto--) {
        char name[16];
        snprintf(name, sizeof name, "rlk-sn-p%d", proto);
        rlk_client *cl = CLIENT_EX(url, proto, 0, name);
        if (!CHECK(cl != NULL)) return;
        CHECK_EQ_INT(rlk_client_connect(cl), RLK_OK);
        for (int s = 0; s < TSN_SENTINELS; s++)
            CHECK_MSG(wait_subs(0, s, name, 1, 5000),
                      "protocol %d: no connection of the client subscribed on sentinel %d",
                      proto, s);
        rlk_client_free(cl);
    }
}

/* A RESP2 wait's listener (its own connection, subscribed to the lock's
 * channels on the primary) follows a failover: it is found on the new
 * primary, and the holder's release there hands the lock to the waiter
 * at once (its re-checks are a minute apart, so only the message can). */
static void test_resp2_waiter_after_a_failover(void)
{
    char url[256];
    tsn_url(env, url, sizeof url);
    int old = tsn_primary(env);
    if (!CHECK(old >= 0)) return;
    rlk_client *holder = client_for(url, 5000);
    rlk_client *wcl = CLIENT_EX(url, 2, 60000, "rlk-sn-waiter");
    if (!CHECK(holder != NULL) || !CHECK(wcl != NULL)) goto out;
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 60000;
    rlk_lock *hl = NULL;
    int rc = rlk_lock_acquire(holder, "sn-r2-wait", &o, &hl);
    if (!CHECK_MSG(rc == RLK_OK, "%d: %s", rc, rlk_client_errmsg(holder))) goto out;
    struct waiter w;
    if (!waiter_start(&w, wcl, "sn-r2-wait", 30000, 40000, RLK_LOCK_SIMPLE)) goto out;
    /* Listening on the primary: both channels (the handoff's, the
     * lock's). */
    CHECK_MSG(wait_subs(1, old, "rlk-sn-waiter", 2, 10000), "no listener on the primary");
    int ms = tsn_failover(env, TSN_READY_MS);
    if (CHECK_MSG(ms >= 0, "no failover") && CHECK(tsn_primary(env) == 1 - old)) {
        CHECK_MSG(wait_subs(1, 1 - old, "rlk-sn-waiter", 2, 10000),
                  "the listener is not on the new primary (data node %d)", 1 - old);
        CHECK(!waiter_done(&w));
        rc = rlk_lock_release(hl);
        CHECK_MSG(rc == RLK_OK, "release: %d: %s", rc, rlk_client_errmsg(holder));
        hl = NULL;
        int64_t t0 = ts_now_ms();
        while (!waiter_done(&w) && ts_now_ms() < t0 + 5000) ts_pause_ms(10);
        CHECK_MSG(waiter_done(&w), "the waiter did not acquire within 5 s of the release");
    }
    if (hl) rlk_lock_release(hl);
    pthread_join(w.th, NULL);
    if (CHECK_MSG(w.rc == RLK_OK, "waiter: %d: %s", w.rc, w.err)) {
        CHECK_EQ_STR(value_on(1 - old, "sn-r2-wait"), rlk_lock_token(w.l));
        CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    }
out:
    rlk_client_free(wcl);
    rlk_client_free(holder);
}

int main(int argc, char **argv)
{
    tl_init(argc, argv);
    env = tsn_start(0);
    if (!CHECK_MSG(env != NULL, "the sentinel setup did not start")) return tl_finish();
    RUN_TEST(test_acquire_on_the_primary);
    RUN_TEST(test_a_sentinel_down_is_passed_over);
    RUN_TEST(test_a_sentinel_naming_a_replica);
    RUN_TEST(test_unknown_name_and_bad_urls);
    RUN_TEST(test_after_a_failover);
    RUN_TEST(test_resp2_sentinels_subscribe);
    RUN_TEST(test_resp2_waiter_after_a_failover);
    tsn_stop(env);
    return tl_finish();
}
