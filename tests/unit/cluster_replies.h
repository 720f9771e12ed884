/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Replies of a real Redis 7.0.15 cluster (3 primaries, 3 replicas made by
 * tests/cluster-lib.sh on ports 36427 34249 29860 55686 46515 36805, asked
 * from node 0 on port 36427), byte for byte, for tests/unit/test_slots.c.
 * The node ids:
 *   f89713817252595fa80404af6843778817ff0bc2  36427  primary of 0-5460
 *   c98a6c348700167b5495c4fef1804a7f569b73d8  55686  its replica
 *   f48e9676fc50493eb1802663647cd220406cb44e  34249  primary of 5461-10922
 *   f013d2e1c7fb2aed93591f8e5eeeeee128665e29  46515  its replica
 *   a064d7f4a863034004cd810a41f28882f211800c  29860  primary of 10923-16383
 *   b4ac406b2776032c0f272ba39434faed1831400e  36805  its replica
 */
#ifndef RESPLOCK_TEST_CLUSTER_REPLIES_H
#define RESPLOCK_TEST_CLUSTER_REPLIES_H

/* CLUSTER SHARDS over RESP2 (cluster-preferred-endpoint-type ip, the default). */
static const char SHARDS_RESP2[] =
    "*3\r\n*4\r\n$5\r\nslots\r\n*2\r\n:10923\r\n:16383\r\n$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\n"
    "id\r\n$40\r\na064d7f4a863034004cd810a41f28882f211800c\r\n$4\r\nport\r\n:29860\r\n$2\r\n"
    "ip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\n"
    "master\r\n$18\r\nreplication-offset\r\n:14\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n"
    "$2\r\nid\r\n$40\r\nb4ac406b2776032c0f272ba39434faed1831400e\r\n$4\r\nport\r\n:36805\r\n"
    "$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$7\r\n"
    "replica\r\n$18\r\nreplication-offset\r\n:14\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*4\r\n"
    "$5\r\nslots\r\n*2\r\n:5461\r\n:10922\r\n$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\n"
    "f48e9676fc50493eb1802663647cd220406cb44e\r\n$4\r\nport\r\n:34249\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\n"
    "replication-offset\r\n:14\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\n"
    "f013d2e1c7fb2aed93591f8e5eeeeee128665e29\r\n$4\r\nport\r\n:46515\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\n"
    "replication-offset\r\n:14\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*2\r\n"
    ":0\r\n:5460\r\n$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\n"
    "f89713817252595fa80404af6843778817ff0bc2\r\n$4\r\nport\r\n:36427\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\n"
    "replication-offset\r\n:28\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\n"
    "c98a6c348700167b5495c4fef1804a7f569b73d8\r\n$4\r\nport\r\n:55686\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\n"
    "replication-offset\r\n:14\r\n$6\r\nhealth\r\n$6\r\nonline\r\n";

/* the same over RESP3: maps. */
static const char SHARDS_RESP3[] =
    "*3\r\n%2\r\n$5\r\nslots\r\n*2\r\n:10923\r\n:16383\r\n$5\r\nnodes\r\n*2\r\n%7\r\n$2\r\n"
    "id\r\n$40\r\na064d7f4a863034004cd810a41f28882f211800c\r\n$4\r\nport\r\n:29860\r\n$2\r\n"
    "ip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\n"
    "master\r\n$18\r\nreplication-offset\r\n:28\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%7\r\n"
    "$2\r\nid\r\n$40\r\nb4ac406b2776032c0f272ba39434faed1831400e\r\n$4\r\nport\r\n:36805\r\n"
    "$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$7\r\n"
    "replica\r\n$18\r\nreplication-offset\r\n:28\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%2\r\n"
    "$5\r\nslots\r\n*2\r\n:5461\r\n:10922\r\n$5\r\nnodes\r\n*2\r\n%7\r\n$2\r\nid\r\n$40\r\n"
    "f48e9676fc50493eb1802663647cd220406cb44e\r\n$4\r\nport\r\n:34249\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\n"
    "replication-offset\r\n:28\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%7\r\n$2\r\nid\r\n$40\r\n"
    "f013d2e1c7fb2aed93591f8e5eeeeee128665e29\r\n$4\r\nport\r\n:46515\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\n"
    "replication-offset\r\n:28\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%2\r\n$5\r\nslots\r\n*2\r\n"
    ":0\r\n:5460\r\n$5\r\nnodes\r\n*2\r\n%7\r\n$2\r\nid\r\n$40\r\n"
    "f89713817252595fa80404af6843778817ff0bc2\r\n$4\r\nport\r\n:36427\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\n"
    "replication-offset\r\n:28\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%7\r\n$2\r\nid\r\n$40\r\n"
    "c98a6c348700167b5495c4fef1804a7f569b73d8\r\n$4\r\nport\r\n:55686\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\n"
    "replication-offset\r\n:28\r\n$6\r\nhealth\r\n$6\r\nonline\r\n";

/* CLUSTER SLOTS over RESP2. */
static const char SLOTS_RESP2[] =
    "*3\r\n*4\r\n:0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:36427\r\n$40\r\n"
    "f89713817252595fa80404af6843778817ff0bc2\r\n*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:55686\r\n"
    "$40\r\nc98a6c348700167b5495c4fef1804a7f569b73d8\r\n*0\r\n*4\r\n:5461\r\n:10922\r\n*4\r\n"
    "$9\r\n127.0.0.1\r\n:34249\r\n$40\r\nf48e9676fc50493eb1802663647cd220406cb44e\r\n*0\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:46515\r\n$40\r\nf013d2e1c7fb2aed93591f8e5eeeeee128665e29\r\n"
    "*0\r\n*4\r\n:10923\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:29860\r\n$40\r\n"
    "a064d7f4a863034004cd810a41f28882f211800c\r\n*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:36805\r\n"
    "$40\r\nb4ac406b2776032c0f272ba39434faed1831400e\r\n*0\r\n";

/* the same over RESP3 (the metadata an empty map). */
static const char SLOTS_RESP3[] =
    "*3\r\n*4\r\n:0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:36427\r\n$40\r\n"
    "f89713817252595fa80404af6843778817ff0bc2\r\n%0\r\n*4\r\n$9\r\n127.0.0.1\r\n:55686\r\n"
    "$40\r\nc98a6c348700167b5495c4fef1804a7f569b73d8\r\n%0\r\n*4\r\n:5461\r\n:10922\r\n*4\r\n"
    "$9\r\n127.0.0.1\r\n:34249\r\n$40\r\nf48e9676fc50493eb1802663647cd220406cb44e\r\n%0\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:46515\r\n$40\r\nf013d2e1c7fb2aed93591f8e5eeeeee128665e29\r\n"
    "%0\r\n*4\r\n:10923\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:29860\r\n$40\r\n"
    "a064d7f4a863034004cd810a41f28882f211800c\r\n%0\r\n*4\r\n$9\r\n127.0.0.1\r\n:36805\r\n"
    "$40\r\nb4ac406b2776032c0f272ba39434faed1831400e\r\n%0\r\n";

/* CLUSTER SHARDS over RESP3 with cluster-preferred-endpoint-type hostname, node 1 announcing node1.example, the others none ("?"). */
static const char HOSTNAME_SHARDS_RESP3[] =
    "*3\r\n%2\r\n$5\r\nslots\r\n*2\r\n:10923\r\n:16383\r\n$5\r\nnodes\r\n*2\r\n%7\r\n$2\r\n"
    "id\r\n$40\r\na064d7f4a863034004cd810a41f28882f211800c\r\n$4\r\nport\r\n:29860\r\n$2\r\n"
    "ip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$1\r\n?\r\n$4\r\nrole\r\n$6\r\nmaster\r\n"
    "$18\r\nreplication-offset\r\n:112\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%7\r\n$2\r\nid\r\n"
    "$40\r\nb4ac406b2776032c0f272ba39434faed1831400e\r\n$4\r\nport\r\n:36805\r\n$2\r\nip\r\n"
    "$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$1\r\n?\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\n"
    "replication-offset\r\n:112\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%2\r\n$5\r\nslots\r\n"
    "*2\r\n:5461\r\n:10922\r\n$5\r\nnodes\r\n*2\r\n%8\r\n$2\r\nid\r\n$40\r\n"
    "f48e9676fc50493eb1802663647cd220406cb44e\r\n$4\r\nport\r\n:34249\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$13\r\nnode1.example\r\n$8\r\nhostname\r\n$13\r\n"
    "node1.example\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:112\r\n"
    "$6\r\nhealth\r\n$6\r\nonline\r\n%7\r\n$2\r\nid\r\n$40\r\n"
    "f013d2e1c7fb2aed93591f8e5eeeeee128665e29\r\n$4\r\nport\r\n:46515\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$1\r\n?\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\n"
    "replication-offset\r\n:112\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%2\r\n$5\r\nslots\r\n"
    "*2\r\n:0\r\n:5460\r\n$5\r\nnodes\r\n*2\r\n%7\r\n$2\r\nid\r\n$40\r\n"
    "f89713817252595fa80404af6843778817ff0bc2\r\n$4\r\nport\r\n:36427\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$1\r\n?\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\n"
    "replication-offset\r\n:126\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%7\r\n$2\r\nid\r\n$40\r\n"
    "c98a6c348700167b5495c4fef1804a7f569b73d8\r\n$4\r\nport\r\n:55686\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$1\r\n?\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\n"
    "replication-offset\r\n:112\r\n$6\r\nhealth\r\n$6\r\nonline\r\n";

/* CLUSTER SLOTS over RESP2, the same settings (the metadata holds the ip). */
static const char HOSTNAME_SLOTS_RESP2[] =
    "*3\r\n*4\r\n:0\r\n:5460\r\n*4\r\n$1\r\n?\r\n:36427\r\n$40\r\n"
    "f89713817252595fa80404af6843778817ff0bc2\r\n*2\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n*4\r\n"
    "$1\r\n?\r\n:55686\r\n$40\r\nc98a6c348700167b5495c4fef1804a7f569b73d8\r\n*2\r\n$2\r\n"
    "ip\r\n$9\r\n127.0.0.1\r\n*4\r\n:5461\r\n:10922\r\n*4\r\n$13\r\nnode1.example\r\n"
    ":34249\r\n$40\r\nf48e9676fc50493eb1802663647cd220406cb44e\r\n*2\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n*4\r\n$1\r\n?\r\n:46515\r\n$40\r\n"
    "f013d2e1c7fb2aed93591f8e5eeeeee128665e29\r\n*2\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n*4\r\n"
    ":10923\r\n:16383\r\n*4\r\n$1\r\n?\r\n:29860\r\n$40\r\n"
    "a064d7f4a863034004cd810a41f28882f211800c\r\n*2\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n*4\r\n"
    "$1\r\n?\r\n:36805\r\n$40\r\nb4ac406b2776032c0f272ba39434faed1831400e\r\n*2\r\n$2\r\n"
    "ip\r\n$9\r\n127.0.0.1\r\n";

/* CLUSTER SHARDS over RESP2 with cluster-preferred-endpoint-type unknown-endpoint (endpoint ""). */
static const char UNKNOWN_SHARDS_RESP2[] =
    "*3\r\n*4\r\n$5\r\nslots\r\n*2\r\n:10923\r\n:16383\r\n$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\n"
    "id\r\n$40\r\na064d7f4a863034004cd810a41f28882f211800c\r\n$4\r\nport\r\n:29860\r\n$2\r\n"
    "ip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$0\r\n\r\n$4\r\nrole\r\n$6\r\nmaster\r\n"
    "$18\r\nreplication-offset\r\n:56\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n"
    "$40\r\nb4ac406b2776032c0f272ba39434faed1831400e\r\n$4\r\nport\r\n:36805\r\n$2\r\nip\r\n"
    "$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$0\r\n\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\n"
    "replication-offset\r\n:56\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*2\r\n"
    ":5461\r\n:10922\r\n$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\n"
    "f48e9676fc50493eb1802663647cd220406cb44e\r\n$4\r\nport\r\n:34249\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$0\r\n\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\n"
    "replication-offset\r\n:56\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\n"
    "f013d2e1c7fb2aed93591f8e5eeeeee128665e29\r\n$4\r\nport\r\n:46515\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$0\r\n\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\n"
    "replication-offset\r\n:56\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*4\r\n$5\r\nslots\r\n*2\r\n"
    ":0\r\n:5460\r\n$5\r\nnodes\r\n*2\r\n*14\r\n$2\r\nid\r\n$40\r\n"
    "f89713817252595fa80404af6843778817ff0bc2\r\n$4\r\nport\r\n:36427\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$0\r\n\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\n"
    "replication-offset\r\n:70\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\n"
    "c98a6c348700167b5495c4fef1804a7f569b73d8\r\n$4\r\nport\r\n:55686\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$0\r\n\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\n"
    "replication-offset\r\n:56\r\n$6\r\nhealth\r\n$6\r\nonline\r\n";

/* CLUSTER SLOTS over RESP3, the same (endpoint null, the ip in the metadata). */
static const char UNKNOWN_SLOTS_RESP3[] =
    "*3\r\n*4\r\n:0\r\n:5460\r\n*4\r\n_\r\n:36427\r\n$40\r\n"
    "f89713817252595fa80404af6843778817ff0bc2\r\n%1\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n*4\r\n"
    "_\r\n:55686\r\n$40\r\nc98a6c348700167b5495c4fef1804a7f569b73d8\r\n%1\r\n$2\r\nip\r\n"
    "$9\r\n127.0.0.1\r\n*4\r\n:5461\r\n:10922\r\n*4\r\n_\r\n:34249\r\n$40\r\n"
    "f48e9676fc50493eb1802663647cd220406cb44e\r\n%1\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n*4\r\n"
    "_\r\n:46515\r\n$40\r\nf013d2e1c7fb2aed93591f8e5eeeeee128665e29\r\n%1\r\n$2\r\nip\r\n"
    "$9\r\n127.0.0.1\r\n*4\r\n:10923\r\n:16383\r\n*4\r\n_\r\n:29860\r\n$40\r\n"
    "a064d7f4a863034004cd810a41f28882f211800c\r\n%1\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n*4\r\n"
    "_\r\n:36805\r\n$40\r\nb4ac406b2776032c0f272ba39434faed1831400e\r\n%1\r\n$2\r\nip\r\n"
    "$9\r\n127.0.0.1\r\n";

/* CLUSTER SHARDS over RESP3 after kill -9 of node 1 (port 34249) and its replica's promotion: the dead node a shard of its own without slots, health "fail". */
static const char KILLED_SHARDS_RESP3[] =
    "*4\r\n%2\r\n$5\r\nslots\r\n*2\r\n:10923\r\n:16383\r\n$5\r\nnodes\r\n*2\r\n%7\r\n$2\r\n"
    "id\r\n$40\r\na064d7f4a863034004cd810a41f28882f211800c\r\n$4\r\nport\r\n:29860\r\n$2\r\n"
    "ip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\n"
    "master\r\n$18\r\nreplication-offset\r\n:196\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%7\r\n"
    "$2\r\nid\r\n$40\r\nb4ac406b2776032c0f272ba39434faed1831400e\r\n$4\r\nport\r\n:36805\r\n"
    "$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$7\r\n"
    "replica\r\n$18\r\nreplication-offset\r\n:196\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%2\r\n"
    "$5\r\nslots\r\n*2\r\n:5461\r\n:10922\r\n$5\r\nnodes\r\n*1\r\n%7\r\n$2\r\nid\r\n$40\r\n"
    "f013d2e1c7fb2aed93591f8e5eeeeee128665e29\r\n$4\r\nport\r\n:46515\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\n"
    "replication-offset\r\n:126\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%2\r\n$5\r\nslots\r\n"
    "*0\r\n$5\r\nnodes\r\n*1\r\n%8\r\n$2\r\nid\r\n$40\r\n"
    "f48e9676fc50493eb1802663647cd220406cb44e\r\n$4\r\nport\r\n:34249\r\n$2\r\nip\r\n$9\r\n"
    "127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$8\r\nhostname\r\n$13\r\n"
    "node1.example\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:126\r\n"
    "$6\r\nhealth\r\n$4\r\nfail\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:5460\r\n$5\r\nnodes\r\n"
    "*2\r\n%7\r\n$2\r\nid\r\n$40\r\nf89713817252595fa80404af6843778817ff0bc2\r\n$4\r\n"
    "port\r\n:36427\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n"
    "$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:196\r\n$6\r\nhealth\r\n"
    "$6\r\nonline\r\n%7\r\n$2\r\nid\r\n$40\r\nc98a6c348700167b5495c4fef1804a7f569b73d8\r\n"
    "$4\r\nport\r\n:55686\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n"
    "127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n:196\r\n$6\r\n"
    "health\r\n$6\r\nonline\r\n";

/* CLUSTER SLOTS over RESP2, the same moment. */
static const char KILLED_SLOTS_RESP2[] =
    "*3\r\n*4\r\n:0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:36427\r\n$40\r\n"
    "f89713817252595fa80404af6843778817ff0bc2\r\n*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:55686\r\n"
    "$40\r\nc98a6c348700167b5495c4fef1804a7f569b73d8\r\n*0\r\n*3\r\n:5461\r\n:10922\r\n*4\r\n"
    "$9\r\n127.0.0.1\r\n:46515\r\n$40\r\nf013d2e1c7fb2aed93591f8e5eeeeee128665e29\r\n*0\r\n"
    "*4\r\n:10923\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:29860\r\n$40\r\n"
    "a064d7f4a863034004cd810a41f28882f211800c\r\n*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:36805\r\n"
    "$40\r\nb4ac406b2776032c0f272ba39434faed1831400e\r\n*0\r\n";

#endif
