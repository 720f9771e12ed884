/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Sentinel setup of tests/sentinel.h, proved against itself: a
 * primary, its replica and three sentinels (quorum 2), all real
 * redis-server processes; ready after the start with every sentinel
 * naming the node ROLE calls master; SENTINEL FAILOVER promotes the
 * replica and the old primary replicates from it; kill -9 of the primary
 * and the replica promoted within a deadline, the killed node restarted
 * empty and made a replica by the sentinels (never named primary on the
 * way); one sentinel paused and the other two still agreeing and failing
 * over.  Everything is talked to through rlk_conn.
 *
 * The tests run in order on one setup (each finds the primary the one
 * before left).  Timings are printed as "# ..." lines, never asserted.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "conntest.h"
#include "resplock.h"
#include "sentinel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tsn_env *env;

static rlk_conn *data_conn(int i, int line)
{
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", tsn_data_port(env, i));
    return connect_url(url, 2, NULL, NULL, line);
}
#define DATA(i) data_conn(i, __LINE__)

static int string_is(const rlk_resp_value *v, const char *want)
{
    return v && v->type == RLK_RESP_BULK && v->len == strlen(want) &&
           memcmp(v->str, want, v->len) == 0;
}

/* Data node r is a replica of p by its own ROLE and INFO replication. */
static void check_replica_of(int r, int p, int line)
{
    rlk_conn *k = data_conn(r, line);
    rlk_resp_value *v;
    char info[4096], want[64];
    if (!k) return;
    v = CMD(k, "ROLE");
    tl_ok(v && v->type == RLK_RESP_ARRAY && string_is(v->child, "slave"), __FILE__, line,
          "data node %d: ROLE is not slave", r);
    CMD_STR(k, info, "INFO", "replication");
    snprintf(want, sizeof want, "master_port:%d\r\n", tsn_data_port(env, p));
    tl_ok(ts_contains(info, want) && ts_contains(info, "master_link_status:up\r\n"), __FILE__,
          line, "data node %d not linked to %d: %.200s", r, p, info);
    rlk_conn_free(k);
}
#define CHECK_REPLICA_OF(r, p) check_replica_of(r, p, __LINE__)

static void check_master(int i, int line)
{
    tl_ok(tsn_is_master(env, i) == 1, __FILE__, line, "data node %d: ROLE is not master", i);
}
#define CHECK_MASTER(i) check_master(i, __LINE__)

/* ------------------------------------------------------------------ */

/* After the start every sentinel names data node 0, ROLE agrees, and
 * the URL names the three sentinels. */
static void test_ready(void)
{
    char url[256], want[64];
    for (int s = 0; s < TSN_SENTINELS; s++)
        CHECK_MSG(tsn_primary_by(env, s) == 0, "sentinel %d names %d", s,
                  tsn_primary_by(env, s));
    CHECK_EQ_INT(tsn_primary(env), 0);
    CHECK_EQ_INT(tsn_replica(env), 1);
    CHECK_MASTER(0);
    CHECK_REPLICA_OF(1, 0);
    tsn_url(env, url, sizeof url);
    CHECK(strncmp(url, "redis+sentinel://", 17) == 0);
    for (int s = 0; s < TSN_SENTINELS; s++) {
        snprintf(want, sizeof want, "127.0.0.1:%d", tsn_sentinel_port(env, s));
        CHECK_MSG(ts_contains(url, want), "%s lacks %s", url, want);
    }
    CHECK_MSG(strlen(url) > 10 && !strcmp(url + strlen(url) - 10, "/rlkmaster"), "%s", url);
}

/* SENTINEL FAILOVER: the replica, with what was written before, becomes
 * the primary; the old primary its replica. */
static void test_failover(void)
{
    int p = tsn_primary(env), r = 1 - p, ms;
    rlk_conn *k;
    if (!CHECK(p >= 0)) return;
    if ((k = DATA(p)) != NULL) {
        CMD(k, "SET", "sn:k", "kept");
        CHECK_EQ_INT(CMD_INT(k, "WAIT", "1", "5000"), 1);
        rlk_conn_free(k);
    }
    ms = tsn_failover(env, TSN_READY_MS);
    if (!CHECK_MSG(ms >= 0, "no failover to %d within %d ms", r, TSN_READY_MS)) return;
    printf("# SENTINEL FAILOVER: data node %d primary, %d its replica, after %d ms\n", r, p, ms);
    CHECK_EQ_INT(tsn_primary(env), r);
    CHECK_MASTER(r);
    CHECK_REPLICA_OF(p, r);
    if ((k = DATA(r)) != NULL) {
        CHECK(string_is(CMD(k, "GET", "sn:k"), "kept"));
        rlk_conn_free(k);
    }
}

/* kill -9 of the primary: the sentinels promote the replica; restarted
 * (empty, as a primary of its own), the killed node is made a replica
 * of the new primary and never named primary meanwhile. */
static void test_kill_primary(void)
{
    int p = tsn_primary(env), r = 1 - p, ms, named = 0, ready = 0;
    int64_t t0, deadline;
    if (!CHECK(p >= 0)) return;
    t0 = ts_now_ms();
    if (!CHECK(tsn_kill(env, p) == 0)) return;
    ms = tsn_wait_primary(env, r, TSN_READY_MS);
    if (!CHECK_MSG(ms >= 0, "data node %d not promoted within %d ms", r, TSN_READY_MS)) return;
    printf("# kill -9 of primary %d: %d promoted after %lld ms (down-after %d ms)\n", p, r,
           (long long)(ts_now_ms() - t0), env->down_after_ms);
    CHECK_MASTER(r);

    t0 = ts_now_ms();
    if (!CHECK(tsn_restart(env, p) == 0)) return;
    deadline = t0 + TSN_READY_MS;
    while (!ready && ts_now_ms() < deadline) {
        for (int s = 0; s < TSN_SENTINELS; s++) named += tsn_primary_by(env, s) == p;
        ready = tsn_primary(env) == r && tsn_ready(env);
        if (!ready) ts_pause_ms(50);
    }
    if (!CHECK_MSG(ready, "not ready with %d as replica within %d ms", p, TSN_READY_MS)) return;
    printf("# data node %d back as a replica of %d after %lld ms\n", p, r,
           (long long)(ts_now_ms() - t0));
    CHECK_EQ_INT(named, 0);
    CHECK_EQ_INT(tsn_primary(env), r);
    CHECK_REPLICA_OF(p, r);
}

/* One sentinel stopped: the other two still agree, and with quorum 2
 * they still find the killed primary down and fail over; resumed, the
 * third learns the new primary. */
static void test_paused_sentinel(void)
{
    int p = tsn_primary(env), r = 1 - p, ms;
    int64_t t0;
    if (!CHECK(p >= 0)) return;
    if (!CHECK(tsn_pause_sentinel(env, 0) == 0)) return;
    CHECK_EQ_INT(tsn_primary(env), p);
    t0 = ts_now_ms();
    if (CHECK(tsn_kill(env, p) == 0)) {
        ms = tsn_wait_primary(env, r, TSN_READY_MS);
        CHECK_MSG(ms >= 0, "data node %d not promoted by two sentinels within %d ms", r,
                  TSN_READY_MS);
        printf("# one sentinel paused, kill -9 of primary %d: %d promoted after %lld ms\n", p, r,
               (long long)(ts_now_ms() - t0));
        CHECK_MASTER(r);
    }
    CHECK_EQ_INT(tsn_resume_sentinel(env, 0), 0);
    t0 = ts_now_ms();
    CHECK_MSG(tsn_wait_primary(env, r, TSN_READY_MS) >= 0, "the resumed sentinel");
    CHECK_EQ_INT(tsn_primary_by(env, 0), r);
    printf("# the resumed sentinel agreed after %lld ms\n", (long long)(ts_now_ms() - t0));
}

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    env = tsn_start(0);
    if (!CHECK_MSG(env != NULL, "the sentinel setup did not start")) return tl_finish();
    printf("# primary, replica and %d sentinels ready in %lld ms\n", TSN_SENTINELS,
           (long long)(ts_now_ms() - t0));
    RUN_TEST(test_ready);
    RUN_TEST(test_failover);
    RUN_TEST(test_kill_primary);
    RUN_TEST(test_paused_sentinel);
    tsn_stop(env);
    return tl_finish();
}
