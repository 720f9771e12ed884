/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cluster of tests/cluster.h, proved against itself: six real
 * redis-server processes made a cluster of 3 primaries and 3 replicas;
 * every slot served once, keys where their slot is (MOVED elsewhere); a
 * slot migrated step by step (ASK and TRYAGAIN in the middle, MOVED from
 * the old owner after); a primary killed with kill -9 and its replica
 * promoted within a deadline, the killed node back as a replica; a
 * TAKEOVER; a paused node.  Everything is talked to through rlk_conn.
 *
 * The tests run in order on one cluster (each finds the topology the one
 * before left).  Timings are printed as "# ..." lines, never asserted.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "cluster.h"
#include "conntest.h"
#include "keys.h"
#include "resplock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tc_cluster *cl;

static rlk_conn *node_conn(int i, int line)
{
    char url[64];
    tc_url(cl, i, url, sizeof url);
    return connect_url(url, 0, NULL, NULL, line);
}
#define NODE(i) node_conn(i, __LINE__)

/* The reply is the error "PREFIX ..." (prefix with its space). */
static int err_starts(const rlk_resp_value *v, const char *prefix)
{
    size_t n = strlen(prefix);
    return v && (v->type == RLK_RESP_ERROR || v->type == RLK_RESP_BLOB_ERROR) && v->len >= n &&
           memcmp(v->str, prefix, n) == 0;
}

/* The reply is exactly the error "KIND slot 127.0.0.1:port". */
static int redirect_is(int line, const rlk_resp_value *v, const char *kind, unsigned slot,
                       int port)
{
    char want[64];
    snprintf(want, sizeof want, "%s %u 127.0.0.1:%d", kind, slot, port);
    return tl_ok(v && v->type == RLK_RESP_ERROR && v->len == strlen(want) &&
                     memcmp(v->str, want, v->len) == 0,
                 __FILE__, line, "want -%s, got %c%.*s", want, v ? v->type : '?',
                 v && v->str ? (int)v->len : 4, v && v->str ? v->str : "NULL");
}
#define REDIRECT_IS(v, kind, slot, port) redirect_is(__LINE__, v, kind, slot, port)

static int string_is(const rlk_resp_value *v, const char *want)
{
    return v && v->type == RLK_RESP_BULK && v->len == strlen(want) &&
           memcmp(v->str, want, v->len) == 0;
}

static unsigned slot_of(const char *key)
{
    return rlk__keyslot(key, strlen(key));
}

/* Another primary than p (by the cluster's view), or -1. */
static int other_primary(int p)
{
    for (int i = 0; i < TC_NODES; i++)
        if (i != p && tc_alive(cl, i) && tc_is_primary(cl, i) == 1) return i;
    return -1;
}

/* ------------------------------------------------------------------ */

/* Six nodes, three primaries each with one replica; every slot served
 * exactly once, in CLUSTER SLOTS of every node; CLUSTER KEYSLOT agrees
 * with the library's CRC16. */
static void test_cluster_up(void)
{
    int primaries = 0, replicas = 0;
    for (int i = 0; i < TC_NODES; i++) {
        rlk_conn *k = NODE(i);
        char info[4096];
        unsigned char seen[TC_SLOTS];
        long covered = 0, overlaps = 0;
        rlk_resp_value *v;
        if (!k) continue;
        CMD_STR(k, info, "CLUSTER", "INFO");
        CHECK_MSG(ts_contains(info, "cluster_state:ok\r\n"), "node %d: %.60s", i, info);
        CHECK_MSG(ts_contains(info, "cluster_known_nodes:6\r\n"), "node %d", i);
        CHECK_MSG(ts_contains(info, "cluster_size:3\r\n"), "node %d", i);
        CMD_STR(k, info, "INFO", "replication");
        primaries += ts_contains(info, "role:master\r\n");
        replicas += ts_contains(info, "role:slave\r\n") &&
                    ts_contains(info, "master_link_status:up\r\n");
        memset(seen, 0, sizeof seen);
        v = CMD(k, "CLUSTER", "SLOTS");
        for (const rlk_resp_value *r = v ? v->child : NULL; r; r = r->next) {
            int64_t lo = -1, hi = -1;
            const rlk_resp_value *primary = rlk_resp_value_at(r, 2);
            if (!CHECK(rlk__int_at(r, 0, &lo) == 0 && rlk__int_at(r, 1, &hi) == 0 && lo >= 0 &&
                       hi < TC_SLOTS && lo <= hi && primary))
                break;
            /* The primary, then its replica. */
            CHECK_MSG(r->len == 4, "node %d: range %lld-%lld with %zu entries", i,
                      (long long)lo, (long long)hi, r->len);
            for (int64_t s = lo; s <= hi; s++) overlaps += seen[s]++ != 0;
            covered += hi - lo + 1;
            int64_t port = -1;
            CHECK(rlk__int_at(primary, 1, &port) == 0 && tc_node_of_port(cl, (int)port) >= 0);
        }
        CHECK_MSG(covered == TC_SLOTS && overlaps == 0, "node %d: %ld slots covered, %ld twice",
                  i, covered, overlaps);
        rlk_conn_free(k);
    }
    CHECK_EQ_INT(primaries, 3);
    CHECK_EQ_INT(replicas, 3);

    /* The library's slot of a key is the server's. */
    {
        static const char *const keys[] = {"foo", "bar", "{user1000}.following", "a{b}c",
                                           "{}x", "x{", "resplock:lock", ""};
        rlk_conn *k = NODE(0);
        for (size_t j = 0; k && j < sizeof keys / sizeof keys[0]; j++)
            CHECK_MSG(CMD_INT(k, "CLUSTER", "KEYSLOT", keys[j]) == slot_of(keys[j]),
                      "\"%s\": slot %u", keys[j], slot_of(keys[j]));
        rlk_conn_free(k);
    }
}

/* A key is served by the owner of its slot; every other node, primary or
 * replica, answers MOVED to that owner. */
static void test_keys_and_moved(void)
{
    static const char *const keys[] = {"alpha", "beta", "gamma", "delta", "{t}x"};
    for (size_t j = 0; j < sizeof keys / sizeof keys[0]; j++) {
        unsigned slot = slot_of(keys[j]);
        int o = tc_owner(cl, slot);
        if (!CHECK_MSG(o >= 0 && tc_is_primary(cl, o) == 1, "\"%s\" (slot %u): owner %d",
                       keys[j], slot, o))
            continue;
        for (int i = 0; i < TC_NODES; i++) {
            rlk_conn *k = NODE(i);
            rlk_resp_value *v;
            if (!k) continue;
            v = CMD(k, "SET", keys[j], "v");
            if (i == o)
                CHECK_MSG(v && v->type == RLK_RESP_SIMPLE, "node %d: SET %s", i, keys[j]);
            else
                REDIRECT_IS(v, "MOVED", slot, tc_port(cl, o));
            rlk_conn_free(k);
        }
    }
}

/* A slot moved key by key: in the middle, the source answers ASK for a
 * key already moved (and still serves the others, and TRYAGAIN for a
 * multi-key command over both), the target answers MOVED unless asked
 * with ASKING; once closed, the old owner answers MOVED and the target
 * serves every key. */
static void test_migration(void)
{
    static const char *const keys[] = {"{mig}a", "{mig}b", "{mig}c"};
    unsigned slot = slot_of("mig");
    int from = tc_owner(cl, slot), to = other_primary(from), asked = 0, served = 0;
    const char *moved = NULL;
    char s[8];
    rlk_conn *src = NULL, *dst = NULL;
    rlk_resp_value *v;
    int64_t t0;
    if (!CHECK(from >= 0 && to >= 0)) return;
    src = NODE(from);
    dst = NODE(to);
    if (!src || !dst) goto out;
    snprintf(s, sizeof s, "%u", slot);
    for (int j = 0; j < 3; j++) CMD(src, "SET", keys[j], keys[j]);
    CHECK_EQ_INT(CMD_INT(src, "CLUSTER", "COUNTKEYSINSLOT", s), 3);

    t0 = ts_now_ms();
    if (!CHECK(tc_migrate_begin(cl, slot, to) == 0)) goto out;
    /* Nothing moved yet: the source serves all. */
    v = CMD(src, "GET", keys[0]);
    CHECK(string_is(v, keys[0]));
    CHECK_EQ_INT(tc_migrate_keys(cl, slot, 1), 1);
    for (int j = 0; j < 3; j++) {
        v = CMD(src, "GET", keys[j]);
        if (string_is(v, keys[j])) {
            served++;
        } else if (REDIRECT_IS(v, "ASK", slot, tc_port(cl, to))) {
            asked++;
            moved = keys[j];
        }
    }
    CHECK_EQ_INT(asked, 1);
    CHECK_EQ_INT(served, 2);
    v = CMD(src, "MGET", keys[0], keys[1], keys[2]);
    CHECK_MSG(err_starts(v, "TRYAGAIN "), "MGET over a slot half moved: %c%.*s",
              v ? v->type : '?', v && v->str ? (int)v->len : 0, v && v->str ? v->str : "");
    if (moved) {
        v = CMD(dst, "GET", moved);
        REDIRECT_IS(v, "MOVED", slot, tc_port(cl, from));
        v = CMD(dst, "ASKING");
        CHECK(v && v->type == RLK_RESP_SIMPLE);
        v = CMD(dst, "GET", moved);
        CHECK_MSG(string_is(v, moved), "GET %s after ASKING", moved);
    }
    CHECK_EQ_INT(CMD_INT(src, "CLUSTER", "COUNTKEYSINSLOT", s), 2);
    CHECK_EQ_INT(CMD_INT(dst, "CLUSTER", "COUNTKEYSINSLOT", s), 1);

    if (!CHECK(tc_migrate_end(cl, slot) == 0)) goto out;
    printf("# slot %u migrated from node %d to node %d in %lld ms\n", slot, from, to,
           (long long)(ts_now_ms() - t0));
    CHECK_EQ_INT(tc_owner(cl, slot), to);
    CHECK_EQ_INT(CMD_INT(src, "CLUSTER", "COUNTKEYSINSLOT", s), 0);
    CHECK_EQ_INT(CMD_INT(dst, "CLUSTER", "COUNTKEYSINSLOT", s), 3);
    for (int j = 0; j < 3; j++) {
        v = CMD(src, "GET", keys[j]);
        REDIRECT_IS(v, "MOVED", slot, tc_port(cl, to));
        v = CMD(dst, "GET", keys[j]);
        CHECK_MSG(string_is(v, keys[j]), "GET %s on the new owner", keys[j]);
    }
out:
    rlk_conn_free(src);
    rlk_conn_free(dst);
}

/* kill -9 of a primary: its replica takes over its slots (with the data
 * it had replicated) within the deadline; restarted, the killed node
 * comes back as a replica of the new primary. */
static void test_failover_after_kill(void)
{
    const char *key = "{fo}k";
    unsigned slot = slot_of(key);
    int p = tc_owner(cl, slot), r = tc_replica_of(cl, p), ms;
    rlk_conn *k;
    rlk_resp_value *v;
    int64_t t0;
    if (!CHECK(p >= 0 && r >= 0)) return;
    if ((k = NODE(p)) != NULL) {
        CMD(k, "SET", key, "kept");
        /* Replicated before the kill, so the promoted replica has it. */
        CHECK_EQ_INT(CMD_INT(k, "WAIT", "1", "5000"), 1);
        rlk_conn_free(k);
    }
    t0 = ts_now_ms();
    if (!CHECK(tc_kill(cl, p) == 0)) return;
    CHECK(!tc_alive(cl, p));
    ms = tc_wait_primary(cl, r, TC_READY_MS);
    if (!CHECK_MSG(ms >= 0, "node %d not promoted within %d ms", r, TC_READY_MS)) return;
    printf("# kill -9 of primary %d: replica %d promoted, cluster ready, after %lld ms "
           "(node timeout %d ms)\n", p, r, (long long)(ts_now_ms() - t0), cl->node_timeout_ms);
    CHECK_EQ_INT(tc_is_primary(cl, r), 1);
    CHECK_EQ_INT(tc_owner(cl, slot), r);
    if ((k = NODE(r)) != NULL) {
        v = CMD(k, "GET", key);
        CHECK(string_is(v, "kept"));
        rlk_conn_free(k);
    }

    t0 = ts_now_ms();
    if (!CHECK(tc_restart(cl, p) == 0)) return;
    CHECK_EQ_INT(tc_wait_ready(cl, TC_READY_MS), 0);
    printf("# node %d back as a replica after %lld ms\n", p, (long long)(ts_now_ms() - t0));
    CHECK_EQ_INT(tc_is_primary(cl, p), 0);
    CHECK_EQ_INT(tc_replica_of(cl, r), p);
}

/* CLUSTER FAILOVER TAKEOVER: the replica becomes the primary at once,
 * the old primary its replica. */
static void test_takeover(void)
{
    unsigned slot = slot_of("{to}k");
    int p = tc_owner(cl, slot), r = tc_replica_of(cl, p), ms;
    if (!CHECK(p >= 0 && r >= 0)) return;
    if (!CHECK(tc_failover(cl, r, "TAKEOVER") == 0)) return;
    ms = tc_wait_primary(cl, r, TC_READY_MS);
    CHECK_MSG(ms >= 0, "node %d not promoted", r);
    printf("# TAKEOVER: node %d primary, cluster ready, after %d ms\n", r, ms);
    CHECK_EQ_INT(tc_owner(cl, slot), r);
    CHECK_EQ_INT(tc_is_primary(cl, p), 0);
    CHECK_EQ_INT(tc_replica_of(cl, r), p);
}

/* A paused node answers nothing (a command times out); resumed, it
 * answers and the cluster is ready with it. */
static void test_pause_resume(void)
{
    int r = -1;
    rlk_conn *k;
    rlk_resp_value *v = NULL;
    for (int i = 0; i < TC_NODES && r < 0; i++)
        if (tc_is_primary(cl, i) == 0) r = i;
    if (!CHECK(r >= 0) || !(k = NODE(r))) return;
    if (CHECK(tc_pause(cl, r) == 0)) {
        CHECK(!tc_alive(cl, r));
        rlk_conn_set_timeouts(k, 0, 300);
        CHECK_EQ_INT(rlk_conn_command(k, &v, 1, (const char *[]){"PING"}, NULL),
                     RLK_ERR_TIMEOUT);
        CHECK_EQ_INT(tc_resume(cl, r), 0);
    }
    CHECK(tc_alive(cl, r));
    rlk_conn_set_timeouts(k, 0, LONG_MS);
    CHECK_EQ_INT(rlk_conn_command(k, &v, 1, (const char *[]){"PING"}, NULL), RLK_OK);
    CHECK_EQ_INT(tc_wait_ready(cl, TC_READY_MS), 0);
    rlk_conn_free(k);
}

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    cl = tc_start(0);
    if (!CHECK_MSG(cl != NULL, "the cluster did not start")) return tl_finish();
    printf("# cluster of %d nodes ready in %lld ms\n", TC_NODES, (long long)(ts_now_ms() - t0));
    RUN_TEST(test_cluster_up);
    RUN_TEST(test_keys_and_moved);
    RUN_TEST(test_migration);
    RUN_TEST(test_failover_after_kill);
    RUN_TEST(test_takeover);
    RUN_TEST(test_pause_resume);
    t0 = ts_now_ms();
    tc_stop(cl);
    printf("# cluster stopped in %lld ms\n", (long long)(ts_now_ms() - t0));
    return tl_finish();
}
