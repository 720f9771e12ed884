/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Replicas that must have a lock (rlk_lock_options.min_replicas: WAIT;
 * min_replicas_aof: WAITAOF), against a real primary and a real replica
 * started here: the acquire waits for the replica; too few replicas
 * (more asked than there are, the replica frozen with SIGSTOP) fail the
 * acquire with RLK_ERR_REPLICAS and give the lock back; a release never
 * waits and never fails for lack of them; a watchdog's renewal that the
 * replica did not acknowledge counts as failed, so the lock is reported
 * lost while the primary still holds it; a user whose ACL refuses WAIT
 * gets a clear error, once, and the next acquire sends nothing;
 * WAITAOF where the server has it (appendonly on), and its refusal
 * where not; options refused before anything is sent.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "locktest.h"
#include "resplock.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ts_server *replica;
static rlk_conn *radm; /* a raw connection to the replica */

/* Whether INFO section of c has field:value. */
static int info_has(rlk_conn *c, const char *section, const char *field_value)
{
    rlk_resp_value *v = CMD(c, "INFO", section);
    return v && v->str && strstr(v->str, field_value) != NULL;
}

/* The replica's link to the primary is up, within ms. */
static int link_up(int64_t ms)
{
    int64_t end = ts_now_ms() + ms;
    while (!info_has(radm, "replication", "master_link_status:up")) {
        if (ts_now_ms() > end) return 0;
        usleep(20000);
    }
    return 1;
}

/* The primary counts the replica as connected and caught up: a WAIT of
 * one replica answers 1 (a write of the test's own first). */
static int replica_acks(int64_t ms)
{
    int64_t end = ts_now_ms() + ms;
    for (;;) {
        CMD(admin, "SET", "wait-probe", "1", "PX", "60000");
        if (CMD_INT(admin, "WAIT", "1", "200") == 1) return 1;
        if (ts_now_ms() > end) return 0;
    }
}

static void freeze(int on)
{
    kill(replica->pid, on ? SIGSTOP : SIGCONT);
    if (!on) CHECK_MSG(link_up(LONG_MS) && replica_acks(LONG_MS), "the replica did not come back");
}

static void wopts(rlk_lock_options *o, int64_t ttl, long n, long aof, long ms)
{
    opts(o, ttl, 0, RLK_LOCK_SIMPLE, 0, NULL);
    o->min_replicas = n;
    o->min_replicas_aof = aof;
    o->replicas_timeout_ms = ms;
}

static void test_defaults_and_bad_options(void)
{
    rlk_lock_options o;
    memset(&o, 0x5a, sizeof o);
    rlk_lock_options_init(&o);
    CHECK_EQ_INT(o.min_replicas, 0);
    CHECK_EQ_INT(o.min_replicas_aof, 0);
    CHECK_EQ_INT(o.replicas_timeout_ms, 0);
    CHECK(strstr(rlk_strerror(RLK_ERR_REPLICAS), "replicas") != NULL);
    rlk_client *cl = CLIENT();
    if (!cl) return;
    reset_stats(admin);
    static const struct {
        long n, aof, ms;
        int64_t ttl;
        const char *says;
    } bad[] = {
        {1, 1, 0, 10000, "one of them"},
        {-1, 0, 0, 10000, "one of them"},
        {0, -2, 0, 10000, "one of them"},
        {1, 0, -5, 10000, "one of them"},
        {1, 0, 2501, 10000, "quarter of the TTL"},
        {0, 1, 300, 1000, "quarter of the TTL"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rlk_lock *l = NULL;
        wopts(&o, bad[i].ttl, bad[i].n, bad[i].aof, bad[i].ms);
        CHECK_EQ_INT(rlk_lock_acquire(cl, "wait-bad", &o, &l), RLK_ERR_INVALID);
        CHECK(l == NULL);
        CHECK_MSG(strstr(rlk_client_errmsg(cl), bad[i].says) != NULL, "case %zu: %s", i,
                  rlk_client_errmsg(cl));
    }
    CHECK_EQ_INT(stat_calls(admin, "set+" SCRIPT_CALLS), 0);
    rlk_client_free(cl);
}

static void test_acquire_waits_for_the_replica(void)
{
    rlk_client *cl = CLIENT();
    if (!cl) return;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    char got[256];
    reset_stats(admin);
    wopts(&o, 10000, 1, 0, 0);
    CHECK_EQ_INT(rlk_lock_acquire(cl, "wait-one", &o, &l), RLK_OK);
    if (!l) goto out;
    /* WAIT said the replica has it: it is there now, without polling. */
    CHECK(CMD_STR(radm, got, "GET", "wait-one") == 1);
    CHECK_EQ_STR(got, rlk_lock_token(l));
    CHECK_EQ_INT(stat_calls(admin, "wait"), 1);
    /* A release never waits. */
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    CHECK_EQ_INT(stat_calls(admin, "wait"), 1);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "wait-one"), 0);
out:
    rlk_client_free(cl);
}

static void test_more_replicas_than_there_are(void)
{
    rlk_client *cl = CLIENT();
    if (!cl) return;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    wopts(&o, 10000, 2, 0, 150);
    int64_t t0 = ts_now_ms();
    CHECK_EQ_INT(rlk_lock_acquire(cl, "wait-two", &o, &l), RLK_ERR_REPLICAS);
    CHECK(l == NULL);
    /* WAIT waited its timeout for the second replica. */
    CHECK(ts_now_ms() - t0 >= 150);
    CHECK_MSG(strstr(rlk_client_errmsg(cl), "1 of 2 replicas") != NULL, "%s", rlk_client_errmsg(cl));
    /* Given back: nobody holds it. */
    CHECK(wait_exists(admin, "wait-two", 0, LONG_MS));
    rlk_client_free(cl);
}

static void test_frozen_replica(void)
{
    rlk_client *cl = CLIENT();
    if (!cl) return;
    rlk_lock_options o;
    rlk_lock *l = NULL, *l2 = NULL;
    wopts(&o, 10000, 1, 0, 200);
    CHECK_EQ_INT(rlk_lock_acquire(cl, "wait-frozen", &o, &l), RLK_OK);
    freeze(1);
    /* The release neither waits for the frozen replica nor fails. */
    reset_stats(admin);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    CHECK_EQ_INT(stat_calls(admin, "wait"), 0);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "wait-frozen"), 0);
    /* An acquire now is not acknowledged: not acquired, given back. */
    CHECK_EQ_INT(rlk_lock_acquire(cl, "wait-frozen", &o, &l2), RLK_ERR_REPLICAS);
    CHECK(l2 == NULL);
    CHECK_MSG(strstr(rlk_client_errmsg(cl), "0 of 1 replicas") != NULL, "%s", rlk_client_errmsg(cl));
    CHECK(wait_exists(admin, "wait-frozen", 0, LONG_MS));
    /* A lock that asks for no replicas is not held up by them. */
    l2 = ACQ(cl, "wait-frozen", 10000);
    if (l2) CHECK_EQ_INT(rlk_lock_release(l2), RLK_OK);
    freeze(0);
    rlk_client_free(cl);
}

/* A WAIT that waits longer than the command timeout: the blocking call
 * waits for it (its deadline allows for the wait, as the core's do),
 * and tells the replicas' count, not a timeout. */
static void test_wait_longer_than_the_command_timeout(void)
{
    rlk_client_config cfg;
    client_cfg(&cfg, srv_url);
    cfg.conn.command_timeout_ms = 300;
    rlk_client *cl = CLIENT_WITH(&cfg);
    if (!cl) return;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    wopts(&o, 10000, 2, 0, 700);
    int64_t t0 = ts_now_ms();
    int rc = rlk_lock_acquire(cl, "wait-long", &o, &l);
    CHECK_MSG(rc == RLK_ERR_REPLICAS, "%d %s", rc, rlk_client_errmsg(cl));
    CHECK(ts_now_ms() - t0 >= 700);
    CHECK(wait_exists(admin, "wait-long", 0, LONG_MS));
    /* The connection stayed up: nothing timed out behind the WAIT. */
    CHECK_EQ_INT((int)rlk_client_generation(cl), 1);
    rlk_client_free(cl);
}

/* The watchdog's renewals wait for the replica too: frozen, they count
 * as failed, and the lock is reported lost before its validity ends
 * while the primary, which took every renewal, still holds it. */
static void test_renewal_needs_the_replica(void)
{
    rlk_client *cl = CLIENT();
    if (!cl) return;
    struct lost_rec lr;
    struct ticker t;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    memset(&lr, 0, sizeof lr);
    opts(&o, 1500, 0, RLK_LOCK_SIMPLE, 1, &lr);
    o.min_replicas = 1;
    CHECK_EQ_INT(rlk_lock_acquire(cl, "wait-renew", &o, &l), RLK_OK);
    if (!l) goto out;
    ticker_init(&t, cl, l, admin, "wait-renew", &lr);
    reset_stats(admin);
    tick_for(&t, 2500, 1);
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK(rlk_lock_remaining_ms(l) > 0);
    /* Renewed every half second or so, each followed by a WAIT. */
    CHECK(stat_calls(admin, "wait") >= 3);
    freeze(1);
    int64_t t0 = ts_now_ms();
    tick_for(&t, 1500 + LONG_MS, 1);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    /* Before the validity's end (1.5 s less the drift from the last
     * acknowledged renewal), and the primary still has it. */
    CHECK(ts_now_ms() - t0 <= 1500 + MARGIN);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "wait-renew"), 1);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_LOST);
    freeze(0);
out:
    CMD(admin, "DEL", "wait-renew");
    rlk_client_free(cl);
}

/* A user whose ACL refuses WAIT: the acquire fails with the server's
 * words and gives the lock back; the next one on that connection sends
 * nothing. */
static void test_wait_refused_by_acl(void)
{
    rlk_resp_value *ok = CMD(admin, "ACL", "SETUSER", "w-nowait", "on", ">w-pw", "~*", "&*", "+@all",
                             "-wait");
    CHECK(ok && ok->type == RLK_RESP_SIMPLE);
    char url[128];
    snprintf(url, sizeof url, "redis://w-nowait:w-pw@127.0.0.1:%d", srv->port);
    rlk_client *cl = CLIENT_EX(url, 0, 0, NULL);
    if (!cl) return;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    wopts(&o, 10000, 1, 0, 0);
    CHECK_EQ_INT(rlk_lock_acquire(cl, "wait-acl", &o, &l), RLK_ERR_SERVER);
    CHECK(l == NULL);
    CHECK_MSG(strstr(rlk_client_errmsg(cl), "refused WAIT") != NULL &&
                  strstr(rlk_client_errmsg(cl), "NOPERM") != NULL,
              "%s", rlk_client_errmsg(cl));
    CHECK(wait_exists(admin, "wait-acl", 0, LONG_MS));
    reset_stats(admin);
    CHECK_EQ_INT(rlk_lock_acquire(cl, "wait-acl", &o, &l), RLK_ERR_SERVER);
    CHECK_MSG(strstr(rlk_client_errmsg(cl), "nothing sent") != NULL, "%s", rlk_client_errmsg(cl));
    CHECK_EQ_INT(stat_calls(admin, "set+" SCRIPT_CALLS), 0);
    /* Without replicas asked, the same user locks as ever. */
    l = ACQ(cl, "wait-acl", 10000);
    if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    rlk_client_free(cl);
    CMD(admin, "ACL", "DELUSER", "w-nowait");
}

/* WAITAOF 1 N: refused where the server lacks it or its AOF is off
 * (an error, never a silent WAIT instead); with appendonly on, the lock
 * is acquired. */
static void test_waitaof(void)
{
    rlk_resp_value *info = CMD(admin, "COMMAND", "INFO", "WAITAOF");
    int have = info && info->type == RLK_RESP_ARRAY && info->len == 1 && info->child &&
               info->child->type == RLK_RESP_ARRAY;
    rlk_client *cl = CLIENT();
    if (!cl) return;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    wopts(&o, 10000, 0, 1, 500);
    CHECK_EQ_INT(rlk_lock_acquire(cl, "wait-aof", &o, &l), RLK_ERR_SERVER);
    CHECK_MSG(strstr(rlk_client_errmsg(cl), "refused WAITAOF") != NULL, "%s", rlk_client_errmsg(cl));
    CHECK_MSG(strstr(rlk_client_errmsg(cl), have ? "appendonly" : "unknown command") != NULL, "%s",
              rlk_client_errmsg(cl));
    CHECK(wait_exists(admin, "wait-aof", 0, LONG_MS));
    rlk_client_free(cl);
    if (!have) return;
    CMD(admin, "CONFIG", "SET", "appendonly", "yes");
    CMD(radm, "CONFIG", "SET", "appendonly", "yes");
    int64_t end = ts_now_ms() + LONG_MS;
    while (!(info_has(admin, "persistence", "aof_rewrite_in_progress:0") &&
             info_has(radm, "persistence", "aof_rewrite_in_progress:0") &&
             info_has(admin, "persistence", "aof_enabled:1") &&
             info_has(radm, "persistence", "aof_enabled:1")) &&
           ts_now_ms() < end)
        usleep(20000);
    cl = CLIENT();
    if (cl) {
        l = NULL;
        /* appendfsync everysec: up to a second before each fsync. */
        o.replicas_timeout_ms = 2500;
        int rc = rlk_lock_acquire(cl, "wait-aof", &o, &l);
        CHECK_MSG(rc == RLK_OK, "%d %s", rc, rlk_client_errmsg(cl));
        if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
        rlk_client_free(cl);
    }
    CMD(admin, "CONFIG", "SET", "appendonly", "no");
    CMD(radm, "CONFIG", "SET", "appendonly", "no");
}

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;
    char port[16];
    snprintf(port, sizeof port, "%d", srv->port);
    const char *extra[] = {"--replicaof", "127.0.0.1", port, NULL};
    ts_options ro;
    memset(&ro, 0, sizeof ro);
    ro.extra = extra;
    replica = ts_start(&ro);
    char rurl[64];
    if (replica) snprintf(rurl, sizeof rurl, "redis://127.0.0.1:%d", replica->port);
    radm = replica ? CONNECT(rurl) : NULL;
    if (!radm || !link_up(LONG_MS) || !replica_acks(LONG_MS)) {
        printf("FAIL main: the replica did not start or link\n");
        return 1;
    }
    RUN(test_defaults_and_bad_options);
    RUN(test_acquire_waits_for_the_replica);
    RUN(test_more_replicas_than_there_are);
    RUN(test_wait_longer_than_the_command_timeout);
    RUN(test_frozen_replica);
    RUN(test_renewal_needs_the_replica);
    RUN(test_wait_refused_by_acl);
    RUN(test_waitaof);
    CMD(admin, "DEL", "wait-probe");
    rlk_conn_free(radm);
    ts_stop(replica);
    return locktest_finish(t0);
}
