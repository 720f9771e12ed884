/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The slot table (src/route/slots.h) against a real Redis Cluster of 3
 * primaries and 3 replicas (tests/cluster.h): the tables built from every
 * node's CLUSTER SHARDS and CLUSTER SLOTS, over RESP2 and RESP3, agree
 * with each other, with the nodes' own view, and with where sample keys
 * really live (CLUSTER KEYSLOT, a SET accepted by the owner,
 * CLUSTER COUNTKEYSINSLOT there and nowhere else); the ASK, TRYAGAIN and
 * CROSSSLOT the cluster answers are read as such; a MOVED after a slot's
 * migration patches a table into the cluster's new one; after kill -9 of
 * a primary the new tables give its slots to the promoted replica and
 * show the dead node failed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "cluster.h"
#include "conntest.h"
#include "keys.h"
#include "reply.h"
#include "resplock.h"
#include "slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tc_cluster *cl;

static rlk_conn *node_conn(int i, int protocol, int line)
{
    char url[64];
    tc_url(cl, i, url, sizeof url);
    return connect_url(url, protocol, NULL, NULL, line);
}

/* t from node i's CLUSTER SHARDS (shards) or SLOTS, over RESP2 or 3. */
static int table_of(int i, int protocol, int shards, rlk__slots *t, int line)
{
    rlk_conn *k = node_conn(i, protocol, line);
    rlk_resp_value *v = k ? run_cmd(k, line, "CLUSTER", shards ? "SHARDS" : "SLOTS",
                                    (const char *)NULL)
                          : NULL;
    int rc = !v ? -1
             : shards ? rlk__slots_from_shards(t, v, "127.0.0.1")
                      : rlk__slots_from_slots(t, v, "127.0.0.1", 0);
    tl_ok(rc == RLK_OK, __FILE__, line, "node %d: table from CLUSTER %s over RESP%d: %d %s", i,
          shards ? "SHARDS" : "SLOTS", protocol, rc, t->err);
    rlk_conn_free(k);
    return rc == RLK_OK;
}
#define TABLE_OF(i, proto, shards, t) table_of(i, proto, shards, t, __LINE__)

/* The cluster node that a table's node is, or -1. */
static int node_index(const rlk__node *n)
{
    return n && strcmp(n->host, "127.0.0.1") == 0 ? tc_node_of_port(cl, n->port) : -1;
}

static int owner_index(const rlk__slots *t, unsigned slot)
{
    return node_index(rlk__slots_owner(t, slot));
}

/* Two tables give every slot to the same cluster node: 1, else a failure
 * at line. */
static int same_owners(int line, const char *what, const rlk__slots *a, const rlk__slots *b)
{
    for (unsigned s = 0; s < RLK__NSLOTS; s++)
        if (owner_index(a, s) != owner_index(b, s))
            return tl_ok(0, __FILE__, line, "%s: slot %u: node %d, and node %d", what, s,
                         owner_index(a, s), owner_index(b, s));
    return tl_ok(1, __FILE__, line, "%s", what);
}

/* ------------------------------------------------------------------ */

/* Every node, both replies, both protocols: one table, every slot
 * served by a live primary, each replica under its primary; the nodes'
 * own view agrees on sample slots; sample keys live where it says. */
static void test_tables_agree(void)
{
    rlk__slots ref, t;
    int primary[TC_NODES];
    char key[32], slot_s[8];
    rlk__slots_init(&ref);
    rlk__slots_init(&t);
    for (int i = 0; i < TC_NODES; i++) primary[i] = tc_is_primary(cl, i);
    if (!TABLE_OF(0, 3, 1, &ref)) goto out;
    CHECK_EQ_INT(ref.nnodes, TC_NODES);
    for (unsigned s = 0; s < RLK__NSLOTS; s++) {
        int o = owner_index(&ref, s);
        if (!CHECK_MSG(o >= 0 && primary[o] == 1, "slot %u: node %d", s, o)) break;
    }
    for (size_t j = 0; j < ref.nnodes; j++) {
        const rlk__node *n = &ref.nodes[j];
        int i = node_index(n);
        if (!CHECK_MSG(i >= 0, "node on port %d", n->port)) continue;
        CHECK_EQ_INT(n->role == RLK__ROLE_PRIMARY, primary[i] == 1);
        CHECK_EQ_INT(n->health, RLK__HEALTH_ONLINE);
        if (n->role == RLK__ROLE_REPLICA)
            CHECK_MSG(tc_replica_of(cl, node_index(&ref.nodes[n->primary])) == i,
                      "node %d: primary %d", i, node_index(&ref.nodes[n->primary]));
    }
    for (int i = 0; i < TC_NODES; i++)
        for (int proto = 2; proto <= 3; proto++)
            for (int shards = 0; shards <= 1; shards++) {
                char what[64];
                snprintf(what, sizeof what, "node %d CLUSTER %s RESP%d", i,
                         shards ? "SHARDS" : "SLOTS", proto);
                if (TABLE_OF(i, proto, shards, &t)) {
                    same_owners(__LINE__, what, &ref, &t);
                    CHECK_MSG(t.nnodes == TC_NODES, "%s: %zu nodes", what, t.nnodes);
                }
            }
    /* The nodes' own view (CLUSTER NODES). */
    for (unsigned s = 0; s < RLK__NSLOTS; s += 1021)
        CHECK_MSG(tc_owner(cl, s) == owner_index(&ref, s), "slot %u: node %d, table %d", s,
                  tc_owner(cl, s), owner_index(&ref, s));

    /* Keys: the library's slot is the server's; the owner by the table
     * takes the key, counts it in its slot, and no other primary does. */
    {
        rlk_conn *k[TC_NODES];
        for (int i = 0; i < TC_NODES; i++) k[i] = node_conn(i, 3, __LINE__);
        for (int j = 0; j < 60; j++) {
            unsigned slot;
            int o;
            rlk_resp_value *v;
            snprintf(key, sizeof key, j % 3 ? "key:%d" : "{tag%d}key", j);
            slot = rlk__keyslot(key, strlen(key));
            snprintf(slot_s, sizeof slot_s, "%u", slot);
            if (!k[0] || !CHECK_MSG(CMD_INT(k[0], "CLUSTER", "KEYSLOT", key) == slot,
                                    "\"%s\": slot %u", key, slot))
                continue;
            o = owner_index(&ref, slot);
            if (o < 0 || !k[o]) continue;
            v = CMD(k[o], "SET", key, "v");
            CHECK_MSG(v && v->type == RLK_RESP_SIMPLE, "\"%s\" (slot %u) refused by node %d", key,
                      slot, o);
            for (int i = 0; i < TC_NODES; i++)
                if (k[i] && primary[i] == 1)
                    CHECK_MSG((CMD_INT(k[i], "CLUSTER", "COUNTKEYSINSLOT", slot_s) > 0) == (i == o),
                              "\"%s\" (slot %u): counted on node %d, owner %d", key, slot, i, o);
        }
        /* Keys of two slots in one command. */
        if (k[0]) {
            rlk_resp_value *v = CMD(k[0], "MSET", "a", "1", "b", "2");
            CHECK_EQ_INT(rlk__reply_class(v), RLK_EC_CROSSSLOT);
        }
        for (int i = 0; i < TC_NODES; i++) rlk_conn_free(k[i]);
    }
out:
    rlk__slots_free(&ref);
    rlk__slots_free(&t);
}

/* A slot migrated: ASK (read by rlk__parse_redirect) for a key already
 * moved, TRYAGAIN for both keys at once; once closed, the MOVED from the
 * old owner patches the old table into the cluster's new one. */
static void test_migration_redirects(void)
{
    rlk__slots t, fresh;
    rlk__redirect r;
    unsigned slot = rlk__keyslot("mv", 2);
    int from, to = -1, asked = 0;
    rlk_conn *src = NULL;
    rlk_resp_value *v;
    rlk__slots_init(&t);
    rlk__slots_init(&fresh);
    if (!TABLE_OF(0, 3, 1, &t)) goto out;
    from = owner_index(&t, slot);
    for (size_t j = 0; j < t.nnodes && to < 0; j++)
        if (t.nodes[j].role == RLK__ROLE_PRIMARY && node_index(&t.nodes[j]) != from)
            to = node_index(&t.nodes[j]);
    if (!CHECK(from >= 0 && to >= 0) || !(src = node_conn(from, 3, __LINE__))) goto out;
    CMD(src, "SET", "{mv}a", "1");
    CMD(src, "SET", "{mv}b", "2");
    if (!CHECK(tc_migrate_begin(cl, slot, to) == 0)) goto out;
    CHECK_EQ_INT(tc_migrate_keys(cl, slot, 1), 1);
    for (int j = 0; j < 2; j++) {
        v = CMD(src, "GET", j ? "{mv}b" : "{mv}a");
        if (rlk__reply_class(v) != RLK_EC_ASK) continue;
        asked++;
        CHECK_EQ_INT(rlk__parse_redirect(v->str, v->len, "127.0.0.1", &r), 0);
        CHECK_EQ_INT(r.ask, 1);
        CHECK_EQ_INT(r.slot, slot);
        CHECK_EQ_STR(r.host, "127.0.0.1");
        CHECK_EQ_INT(r.port, tc_port(cl, to));
    }
    CHECK_EQ_INT(asked, 1);
    v = CMD(src, "MGET", "{mv}a", "{mv}b");
    CHECK_EQ_INT(rlk__reply_class(v), RLK_EC_TRYAGAIN);
    if (!CHECK(tc_migrate_end(cl, slot) == 0)) goto out;

    v = CMD(src, "GET", "{mv}a");
    CHECK_EQ_INT(rlk__reply_class(v), RLK_EC_MOVED);
    if (v && CHECK(rlk__parse_redirect(v->str, v->len, "127.0.0.1", &r) == 0)) {
        CHECK_EQ_INT(r.ask, 0);
        CHECK_EQ_INT(r.slot, slot);
        CHECK_EQ_INT(tc_node_of_port(cl, r.port), to);
        CHECK_EQ_INT(node_index(&t.nodes[rlk__slots_moved(&t, r.slot, r.host, r.port, 0)]), to);
    }
    CHECK_EQ_INT(owner_index(&t, slot), to);
    CHECK_EQ_INT(t.nnodes, TC_NODES);
    for (int i = 0; i < TC_NODES; i++)
        if (TABLE_OF(i, 2, 1, &fresh)) same_owners(__LINE__, "patched and fresh", &t, &fresh);
out:
    rlk_conn_free(src);
    rlk__slots_free(&t);
    rlk__slots_free(&fresh);
}

/* kill -9 of a primary: the tables of the live nodes give its slots to
 * its promoted replica; SHARDS shows the dead node failed, SLOTS leaves
 * it out. */
static void test_failover_tables(void)
{
    rlk__slots before, t;
    unsigned slot = rlk__keyslot("fo", 2);
    int p, r, moved_slots, had;
    rlk__slots_init(&before);
    rlk__slots_init(&t);
    if (!TABLE_OF(0, 3, 1, &before)) goto out;
    p = owner_index(&before, slot);
    r = p >= 0 ? tc_replica_of(cl, p) : -1;
    if (!CHECK(p >= 0 && r >= 0) || !CHECK(tc_kill(cl, p) == 0)) goto out;
    if (!CHECK_MSG(tc_wait_primary(cl, r, TC_READY_MS) >= 0, "node %d not promoted", r)) goto out;
    for (int i = 0; i < TC_NODES; i++) {
        if (!tc_alive(cl, i)) continue;
        if (TABLE_OF(i, 3, 1, &t)) {
            const rlk__node *dead = NULL;
            for (size_t j = 0; j < t.nnodes; j++)
                if (node_index(&t.nodes[j]) == p) dead = &t.nodes[j];
            CHECK_MSG(dead && dead->health == RLK__HEALTH_FAILED, "node %d: the dead node %s", i,
                      dead ? "not failed" : "not listed");
            moved_slots = had = 0;
            for (unsigned s = 0; s < RLK__NSLOTS; s++) {
                int was = owner_index(&before, s), now = owner_index(&t, s);
                had += was == p;
                if (was == p) moved_slots += now == r;
                else if (now != was) {
                    CHECK_MSG(0, "node %d: slot %u moved from %d to %d", i, s, was, now);
                    break;
                }
            }
            CHECK_MSG(had > 0 && moved_slots == had, "node %d: %d of the %d slots moved to the "
                      "replica", i, moved_slots, had);
        }
        if (TABLE_OF(i, 2, 0, &t)) {
            CHECK_EQ_INT(t.nnodes, TC_NODES - 1);
            CHECK_EQ_INT(owner_index(&t, slot), r);
        }
    }
out:
    rlk__slots_free(&before);
    rlk__slots_free(&t);
}

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    cl = tc_start(0);
    if (!CHECK_MSG(cl != NULL, "the cluster did not start")) return tl_finish();
    printf("# cluster of %d nodes ready in %lld ms\n", TC_NODES, (long long)(ts_now_ms() - t0));
    RUN_TEST(test_tables_agree);
    RUN_TEST(test_migration_redirects);
    RUN_TEST(test_failover_tables);
    tc_stop(cl);
    return tl_finish();
}
