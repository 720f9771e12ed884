/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The slot table (src/route/slots.h) with no server: built from CLUSTER SHARDS
 * and CLUSTER SLOTS replies a real Redis 7.0 cluster sent (RESP2 and
 * RESP3; endpoints as IPs, host names, "?" and unknown; a failed node),
 * parsed by the library's own reader from the captured bytes
 * (cluster_replies.h); hostile variants of them (a slot out of range or
 * served twice, a node without its port, wrong types, too many nodes,
 * allocations that fail) refused as a whole, the table left as it was;
 * a MOVED patching one slot; the texts of MOVED and ASK (IPv4, IPv6,
 * bracketed, a host name, an empty host) and the cluster's error codes.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "cluster_replies.h"
#include "keys.h"
#include "reply.h"
#include "resp.h"
#include "slots.h"

#include <stdlib.h>
#include <string.h>

/* The captured cluster (see cluster_replies.h). */
enum { P0 = 36427, R0 = 55686, P1 = 34249, R1 = 46515, P2 = 29860, R2 = 36805 };
#define ID_P0 "f89713817252595fa80404af6843778817ff0bc2"
#define ID_R0 "c98a6c348700167b5495c4fef1804a7f569b73d8"
#define ID_P1 "f48e9676fc50493eb1802663647cd220406cb44e"
#define ID_R1 "f013d2e1c7fb2aed93591f8e5eeeeee128665e29"
#define ID_P2 "a064d7f4a863034004cd810a41f28882f211800c"
#define ID_R2 "b4ac406b2776032c0f272ba39434faed1831400e"

static rlk_resp_arena arena;
static char *copies[512];
static int ncopies;

/* One whole reply from bytes[0..n), through the library's reader; the
 * bytes are copied (the tree points into them) and kept to the end. */
static const rlk_resp_value *parse_n(const char *bytes, size_t n, int line)
{
    rlk_resp_reader r;
    rlk_resp_value *v = NULL;
    size_t used = 0;
    char *copy = malloc(n ? n : 1);
    int rc;
    if (!copy || ncopies == 512) {
        free(copy);
        tl_fail(__FILE__, line, "out of room for replies");
        return NULL;
    }
    memcpy(copy, bytes, n);
    copies[ncopies++] = copy;
    rlk_resp_reader_init(&r, &arena, NULL);
    rc = rlk_resp_read(&r, copy, n, &used, &v);
    rlk_resp_reader_free(&r);
    if (!tl_ok(rc == 1 && used == n && v, __FILE__, line, "not one whole reply: %d, %zu of %zu",
               rc, used, n))
        return NULL;
    return v;
}
#define PARSE(s) parse_n(s, strlen(s), __LINE__)

/* s with the first `from` replaced by `to`, in a buffer kept to the end
 * (for the hostile variants of real replies). */
static const char *edit(const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    size_t n = strlen(s), fn = strlen(from), tn = strlen(to);
    char *out;
    if (!at || ncopies == 512 || !(out = malloc(n - fn + tn + 1))) {
        tl_fail(__FILE__, __LINE__, "cannot edit \"%s\"", from);
        return "";
    }
    memcpy(out, s, (size_t)(at - s));
    memcpy(out + (at - s), to, tn);
    strcpy(out + (at - s) + tn, at + fn);
    copies[ncopies++] = out;
    return out;
}

static const rlk__node *node_of_port(const rlk__slots *t, int port)
{
    for (size_t i = 0; i < t->nnodes; i++)
        if (t->nodes[i].port == port || t->nodes[i].tls_port == port) return &t->nodes[i];
    return NULL;
}

static int port_of(const rlk__node *n)
{
    return n ? (n->port ? n->port : n->tls_port) : -1;
}

static int port_of_owner(const rlk__slots *t, unsigned slot)
{
    return port_of(rlk__slots_owner(t, slot));
}

/* t is the captured cluster: three shards, each slot served by its
 * primary, each replica pointing at its primary. */
static int check_topology(int line, const rlk__slots *t, const char *host, int with_ids)
{
    static const struct { int port; const char *id; int primary; } want[6] = {
        {P0, ID_P0, P0}, {R0, ID_R0, P0}, {P1, ID_P1, P1},
        {R1, ID_R1, P1}, {P2, ID_P2, P2}, {R2, ID_R2, P2}};
    int ok = tl_ok(t->nnodes == 6, __FILE__, line, "%zu nodes", t->nnodes);
    for (int i = 0; i < 6 && ok; i++) {
        const rlk__node *n = node_of_port(t, want[i].port);
        ok = tl_ok(n != NULL, __FILE__, line, "no node on port %d", want[i].port);
        if (!ok) break;
        ok &= tl_ok(strcmp(n->host, host) == 0, __FILE__, line, "port %d: host \"%s\", want \"%s\"",
                    want[i].port, n->host, host);
        ok &= tl_ok(!with_ids || strcmp(n->id, want[i].id) == 0, __FILE__, line,
                    "port %d: id \"%s\"", want[i].port, n->id);
        ok &= tl_ok(n->role == (want[i].port == want[i].primary ? RLK__ROLE_PRIMARY
                                                                  : RLK__ROLE_REPLICA),
                    __FILE__, line, "port %d: role %d", want[i].port, n->role);
        ok &= tl_ok(n->primary < t->nnodes &&
                        port_of(&t->nodes[n->primary]) == want[i].primary,
                    __FILE__, line, "port %d: primary %u", want[i].port, n->primary);
    }
    for (unsigned s = 0; s < RLK__NSLOTS && ok; s++) {
        int want_port = s <= 5460 ? P0 : s <= 10922 ? P1 : P2;
        ok = tl_ok(port_of_owner(t, s) == want_port, __FILE__, line, "slot %u: port %d, want %d",
                   s, port_of_owner(t, s), want_port);
    }
    return ok;
}
#define CHECK_TOPOLOGY(t, host, ids) check_topology(__LINE__, t, host, ids)

/* ------------------------------------------------------------------ */
/* Real replies                                                         */

static void test_shards_resp2_and_resp3(void)
{
    rlk__slots a, b;
    rlk__slots_init(&a);
    rlk__slots_init(&b);
    CHECK_EQ_INT(rlk__slots_from_shards(&a, PARSE(SHARDS_RESP2), "127.0.0.1"), RLK_OK);
    CHECK_EQ_STR(a.err, "");
    CHECK_TOPOLOGY(&a, "127.0.0.1", 1);
    CHECK_EQ_INT(rlk__slots_from_shards(&b, PARSE(SHARDS_RESP3), "127.0.0.1"), RLK_OK);
    CHECK_TOPOLOGY(&b, "127.0.0.1", 1);
    for (size_t i = 0; i < a.nnodes && i < b.nnodes; i++) {
        CHECK_EQ_STR(a.nodes[i].ip, "127.0.0.1");
        CHECK_EQ_INT(a.nodes[i].health, RLK__HEALTH_ONLINE);
        CHECK_EQ_INT(a.nodes[i].tls_port, 0);
        CHECK_MSG(a.nodes[i].repl_offset > 0, "offset %lld", (long long)a.nodes[i].repl_offset);
        CHECK_EQ_STR(a.nodes[i].id, b.nodes[i].id);
    }
    CHECK(memcmp(a.owner, b.owner, sizeof a.owner) == 0);
    /* The library's slot of a key, looked up. */
    CHECK_EQ_INT(port_of_owner(&a, rlk__keyslot("a", 1)), P2); /* the captured MOVED 15495 */
    rlk__slots_free(&a);
    rlk__slots_free(&b);
}

static void test_slots_resp2_and_resp3(void)
{
    rlk__slots a, b, c;
    rlk__slots_init(&a);
    rlk__slots_init(&b);
    rlk__slots_init(&c);
    CHECK_EQ_INT(rlk__slots_from_slots(&a, PARSE(SLOTS_RESP2), "127.0.0.1", 0), RLK_OK);
    CHECK_TOPOLOGY(&a, "127.0.0.1", 1);
    CHECK_EQ_INT(rlk__slots_from_slots(&b, PARSE(SLOTS_RESP3), "127.0.0.1", 0), RLK_OK);
    CHECK_TOPOLOGY(&b, "127.0.0.1", 1);
    CHECK(memcmp(a.owner, b.owner, sizeof a.owner) == 0);
    CHECK_EQ_INT(a.nodes[0].health, RLK__HEALTH_UNKNOWN);
    CHECK_EQ_INT(a.nodes[0].repl_offset, -1);
    /* Over TLS the one port given is the TLS port. */
    CHECK_EQ_INT(rlk__slots_from_slots(&c, PARSE(SLOTS_RESP2), "127.0.0.1", 1), RLK_OK);
    CHECK_TOPOLOGY(&c, "127.0.0.1", 1);
    CHECK(c.nnodes > 0 && c.nodes[0].port == 0 && c.nodes[0].tls_port > 0);
    /* SHARDS and SLOTS of the same cluster agree. */
    rlk__slots_free(&c);
    CHECK_EQ_INT(rlk__slots_from_shards(&c, PARSE(SHARDS_RESP3), "127.0.0.1"), RLK_OK);
    for (unsigned s = 0; s < RLK__NSLOTS; s++)
        if (strcmp(rlk__slots_owner(&a, s)->id, rlk__slots_owner(&c, s)->id) != 0) {
            CHECK_MSG(0, "slot %u: SLOTS says %s, SHARDS %s", s, rlk__slots_owner(&a, s)->id,
                      rlk__slots_owner(&c, s)->id);
            break;
        }
    rlk__slots_free(&a);
    rlk__slots_free(&b);
    rlk__slots_free(&c);
}

/* cluster-preferred-endpoint-type hostname: the node that announced one
 * is reached by it; "?" (none announced) falls back to the IP. */
static void test_endpoint_hostname(void)
{
    rlk__slots t;
    rlk__slots_init(&t);
    CHECK_EQ_INT(rlk__slots_from_shards(&t, PARSE(HOSTNAME_SHARDS_RESP3), "seed.example"),
                 RLK_OK);
    CHECK_EQ_STR(node_of_port(&t, P1)->host, "node1.example");
    CHECK_EQ_STR(node_of_port(&t, P1)->ip, "127.0.0.1");
    CHECK_EQ_STR(node_of_port(&t, P0)->host, "127.0.0.1");
    CHECK_EQ_STR(node_of_port(&t, R2)->host, "127.0.0.1");
    CHECK_EQ_INT(port_of_owner(&t, 5461), P1);
    rlk__slots_free(&t);
    CHECK_EQ_INT(rlk__slots_from_slots(&t, PARSE(HOSTNAME_SLOTS_RESP2), "seed.example", 0),
                 RLK_OK);
    CHECK_EQ_STR(node_of_port(&t, P1)->host, "node1.example");
    CHECK_EQ_STR(node_of_port(&t, P0)->host, "127.0.0.1");
    CHECK_EQ_STR(node_of_port(&t, P0)->ip, "127.0.0.1");
    CHECK_EQ_INT(t.nnodes, 6);
    rlk__slots_free(&t);
}

/* unknown-endpoint: SHARDS says "", SLOTS null; both mean the host the
 * command was sent to (or the IP when that is not known). */
static void test_endpoint_unknown(void)
{
    rlk__slots t;
    rlk__slots_init(&t);
    CHECK_EQ_INT(rlk__slots_from_shards(&t, PARSE(UNKNOWN_SHARDS_RESP2), "lb.example"), RLK_OK);
    CHECK_TOPOLOGY(&t, "lb.example", 1);
    CHECK_EQ_STR(t.nodes[0].ip, "127.0.0.1");
    CHECK_EQ_INT(rlk__slots_from_shards(&t, PARSE(UNKNOWN_SHARDS_RESP2), NULL), RLK_OK);
    CHECK_TOPOLOGY(&t, "127.0.0.1", 1);
    CHECK_EQ_INT(rlk__slots_from_slots(&t, PARSE(UNKNOWN_SLOTS_RESP3), "lb.example", 0), RLK_OK);
    CHECK_TOPOLOGY(&t, "lb.example", 1);
    CHECK_EQ_INT(rlk__slots_from_slots(&t, PARSE(UNKNOWN_SLOTS_RESP3), NULL, 0), RLK_OK);
    CHECK_TOPOLOGY(&t, "127.0.0.1", 1);
    rlk__slots_free(&t);
}

/* After kill -9 of a primary and its replica's promotion: the dead node
 * a primary of no slot, "fail"; its slots with the promoted replica. */
static void test_failed_node(void)
{
    rlk__slots t;
    const rlk__node *dead;
    rlk__slots_init(&t);
    CHECK_EQ_INT(rlk__slots_from_shards(&t, PARSE(KILLED_SHARDS_RESP3), "127.0.0.1"), RLK_OK);
    CHECK_EQ_INT(t.nnodes, 6);
    dead = node_of_port(&t, P1);
    if (CHECK(dead != NULL)) {
        CHECK_EQ_INT(dead->health, RLK__HEALTH_FAILED);
        CHECK_EQ_INT(dead->role, RLK__ROLE_PRIMARY);
    }
    CHECK_EQ_INT(port_of_owner(&t, 5461), R1);
    CHECK_EQ_INT(port_of_owner(&t, 10922), R1);
    CHECK_EQ_INT(node_of_port(&t, R1)->role, RLK__ROLE_PRIMARY);
    for (unsigned s = 0; s < RLK__NSLOTS; s++)
        if (rlk__slots_owner(&t, s) == dead) {
            CHECK_MSG(0, "slot %u served by the dead node", s);
            break;
        }
    CHECK_EQ_INT(rlk__slots_from_slots(&t, PARSE(KILLED_SLOTS_RESP2), "127.0.0.1", 0), RLK_OK);
    CHECK_EQ_INT(t.nnodes, 5);
    CHECK(node_of_port(&t, P1) == NULL);
    CHECK_EQ_INT(port_of_owner(&t, 5461), R1);
    rlk__slots_free(&t);
}

/* ------------------------------------------------------------------ */
/* Hostile replies                                                      */

/* Building from v fails with status and a reason containing why; the
 * table it was given (built from SHARDS_RESP2) is left as it was. */
static void refused(int line, int shards, const rlk_resp_value *v, int status, const char *why)
{
    rlk__slots t;
    uint16_t before[RLK__NSLOTS];
    int rc;
    rlk__slots_init(&t);
    if (!tl_ok(rlk__slots_from_shards(&t, PARSE(SHARDS_RESP2), "h") == RLK_OK, __FILE__, line,
               "the base table"))
        return;
    memcpy(before, t.owner, sizeof before);
    rc = shards ? rlk__slots_from_shards(&t, v, "h") : rlk__slots_from_slots(&t, v, "h", 0);
    tl_ok(rc == status, __FILE__, line, "status %d, want %d (%s)", rc, status, t.err);
    tl_ok(strstr(t.err, why) != NULL, __FILE__, line, "reason \"%s\", want \"%s\"", t.err, why);
    tl_ok(t.nnodes == 6 && memcmp(before, t.owner, sizeof before) == 0 &&
              strcmp(t.nodes[0].host, "127.0.0.1") == 0,
          __FILE__, line, "the table changed (%zu nodes)", t.nnodes);
    rlk__slots_free(&t);
}
#define REFUSED_SHARDS(bytes, status, why) refused(__LINE__, 1, PARSE(bytes), status, why)
#define REFUSED_SLOTS(bytes, status, why) refused(__LINE__, 0, PARSE(bytes), status, why)

static void test_hostile_shards(void)
{
    /* The real reply, one thing changed. */
    REFUSED_SHARDS(edit(SHARDS_RESP2, ":16383\r\n", ":16384\r\n"), RLK_ERR_PROTO,
                   "10923-16384 out of bounds");
    REFUSED_SHARDS(edit(SHARDS_RESP2, ":10923\r\n:16383\r\n", ":16383\r\n:10923\r\n"),
                   RLK_ERR_PROTO, "out of bounds");
    REFUSED_SHARDS(edit(SHARDS_RESP2, ":0\r\n:5460\r\n", ":-1\r\n:5460\r\n"), RLK_ERR_PROTO,
                   "-1-5460 out of bounds");
    REFUSED_SHARDS(edit(SHARDS_RESP2, ":5461\r\n", ":5460\r\n"), RLK_ERR_PROTO,
                   "slot 5460 served twice");
    REFUSED_SHARDS(edit(SHARDS_RESP2, "*2\r\n:10923\r\n:16383\r\n",
                        "*4\r\n:10923\r\n:16383\r\n:100\r\n:100\r\n"),
                   RLK_ERR_PROTO, "slot 100 served twice");
    /* The first node loses its port: its map has 6 fields, not 7. */
    REFUSED_SHARDS(edit(edit(SHARDS_RESP2, "*14\r\n", "*12\r\n"), "$4\r\nport\r\n:29860\r\n", ""),
                   RLK_ERR_PROTO, "has no port");
    REFUSED_SHARDS(edit(edit(SHARDS_RESP3, "%7\r\n", "%6\r\n"), "$4\r\nport\r\n:29860\r\n", ""),
                   RLK_ERR_PROTO, "shard 0: node \"a064d7f4a863034004cd810a41f28882f211800c\" has no port");
    REFUSED_SHARDS(edit(SHARDS_RESP2, ":29860\r\n", ":0\r\n"), RLK_ERR_PROTO, "\"port\" is malformed");
    REFUSED_SHARDS(edit(SHARDS_RESP2, ":29860\r\n", ":65536\r\n"), RLK_ERR_PROTO, "malformed");
    REFUSED_SHARDS(edit(SHARDS_RESP2, ":29860\r\n", "$5\r\n29860\r\n"), RLK_ERR_PROTO,
                   "\"port\" is malformed");
    REFUSED_SHARDS(edit(SHARDS_RESP2, "$6\r\nmaster\r\n", "$5\r\nchief\r\n"), RLK_ERR_PROTO,
                   "\"role\" is malformed");
    REFUSED_SHARDS(edit(SHARDS_RESP2, "$4\r\nrole\r\n", "$4\r\nrule\r\n"), RLK_ERR_PROTO,
                   "without a role");
    REFUSED_SHARDS(edit(SHARDS_RESP2, "$40\r\na064d7f4a863034004cd810a41f28882f211800c",
                        "$41\r\na064d7f4a863034004cd810a41f28882f211800cX"),
                   RLK_ERR_PROTO, "\"id\" is malformed");
    REFUSED_SHARDS(edit(SHARDS_RESP2, "b4ac406b2776032c0f272ba39434faed1831400e",
                        "a064d7f4a863034004cd810a41f28882f211800c"),
                   RLK_ERR_PROTO, "listed twice");
    REFUSED_SHARDS(edit(SHARDS_RESP2, ":10923\r\n", "$5\r\n10923\r\n"), RLK_ERR_PROTO,
                   "pairs of integers");
    REFUSED_SHARDS(edit(SHARDS_RESP2, "*2\r\n:10923\r\n:16383\r\n", "*1\r\n:10923\r\n"),
                   RLK_ERR_PROTO, "pairs of integers");
    REFUSED_SHARDS(edit(SHARDS_RESP2, "$6\r\nmaster\r\n", "$7\r\nreplica\r\n"), RLK_ERR_PROTO,
                   "shard 0 serves slots but has no primary");
    REFUSED_SHARDS(edit(SHARDS_RESP2, "$5\r\nnodes\r\n", "$5\r\nnotes\r\n"), RLK_ERR_PROTO,
                   "no array of slots and of nodes");
    REFUSED_SHARDS(edit(SHARDS_RESP2, "$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n",
                        "$8\r\nendpoint\r\n*1\r\n:1\r\n"),
                   RLK_ERR_PROTO, "malformed endpoint");
    REFUSED_SHARDS("-ERR unknown subcommand 'SHARDS'\r\n", RLK_ERR_PROTO, "not an array");
    REFUSED_SHARDS("*1\r\n:1\r\n", RLK_ERR_PROTO, "shard 0 is not a map");
    REFUSED_SHARDS("*1\r\n*3\r\n$5\r\nslots\r\n*0\r\n$5\r\nnodes\r\n", RLK_ERR_PROTO,
                   "not a map");
    REFUSED_SHARDS("*1\r\n*4\r\n$5\r\nslots\r\n*0\r\n$5\r\nnodes\r\n*1\r\n:7\r\n",
                   RLK_ERR_PROTO, "a node is not a map");
    {
        /* A host name too long for any DNS name. */
        char big[600], bytes[1200];
        memset(big, 'h', 300);
        big[300] = '\0';
        snprintf(bytes, sizeof bytes,
                 "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n"
                 "*6\r\n$4\r\nport\r\n:7000\r\n$4\r\nrole\r\n$6\r\nmaster\r\n"
                 "$8\r\nendpoint\r\n$300\r\n%s\r\n",
                 big);
        REFUSED_SHARDS(bytes, RLK_ERR_PROTO, "malformed endpoint");
    }
}

static void test_hostile_slots(void)
{
    REFUSED_SLOTS(edit(SLOTS_RESP2, ":16383\r\n", ":16384\r\n"), RLK_ERR_PROTO,
                  "10923-16384 out of bounds");
    REFUSED_SLOTS(edit(SLOTS_RESP2, ":5461\r\n", ":5000\r\n"), RLK_ERR_PROTO,
                  "slot 5000 served twice");
    REFUSED_SLOTS(edit(SLOTS_RESP2, ":36427\r\n", ":0\r\n"), RLK_ERR_PROTO, "valid port");
    REFUSED_SLOTS(edit(SLOTS_RESP2, ":36427\r\n", "$5\r\n36427\r\n"), RLK_ERR_PROTO,
                  "valid port");
    /* A primary's entry cut to its endpoint: no port. */
    REFUSED_SLOTS("*1\r\n*3\r\n:0\r\n:16383\r\n*1\r\n$9\r\n127.0.0.1\r\n", RLK_ERR_PROTO,
                  "not [endpoint, port");
    REFUSED_SLOTS("*1\r\n*2\r\n:0\r\n:16383\r\n", RLK_ERR_PROTO, "is not [start, end, primary");
    REFUSED_SLOTS("*1\r\n*3\r\n:0\r\n$5\r\n16383\r\n*2\r\n$1\r\nh\r\n:1\r\n", RLK_ERR_PROTO,
                  "is not [start, end, primary");
    REFUSED_SLOTS("*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n:1\r\n:1\r\n", RLK_ERR_PROTO,
                  "malformed endpoint");
    REFUSED_SLOTS("*1\r\n*3\r\n:0\r\n:1\r\n*4\r\n$1\r\nh\r\n:1\r\n$1\r\nx\r\n*1\r\n$2\r\nip\r\n",
                  RLK_ERR_PROTO, "metadata is not a map");
    /* The same node a primary in one range and a replica in another. */
    REFUSED_SLOTS("*2\r\n*3\r\n:0\r\n:1\r\n*3\r\n$1\r\nh\r\n:1\r\n$1\r\nA\r\n"
                  "*4\r\n:2\r\n:3\r\n*3\r\n$1\r\nh\r\n:2\r\n$1\r\nB\r\n"
                  "*3\r\n$1\r\nh\r\n:1\r\n$1\r\nA\r\n",
                  RLK_ERR_PROTO, "a primary and a replica");
    REFUSED_SLOTS("+OK\r\n", RLK_ERR_PROTO, "not an array");
    REFUSED_SLOTS("*1\r\n$3\r\nabc\r\n", RLK_ERR_PROTO, "is not [start, end, primary");
}

/* A CLUSTER SLOTS reply of n one-slot ranges, each served by a node of
 * its own, into b. */
static void many_nodes(rlk_buf *b, int n)
{
    char host[32];
    rlk_buf_init(b);
    rlk_resp_put_header(b, RLK_RESP_ARRAY, n);
    for (int i = 0; i < n; i++) {
        int len = snprintf(host, sizeof host, "10.0.%d.%d", i / 256, i % 256);
        rlk_resp_put_header(b, RLK_RESP_ARRAY, 3);
        rlk_resp_put_integer(b, i);
        rlk_resp_put_integer(b, i);
        rlk_resp_put_header(b, RLK_RESP_ARRAY, 2);
        rlk_resp_put_blob(b, RLK_RESP_BULK, NULL, host, (size_t)len);
        rlk_resp_put_integer(b, 7000);
    }
}

/* Nodes up to the bound are taken; one more is refused. */
static void test_too_many_nodes(void)
{
    rlk_buf b;
    rlk__slots t;
    rlk__slots_init(&t);
    many_nodes(&b, RLK__SLOTS_MAX_NODES);
    CHECK_EQ_INT(rlk__slots_from_slots(&t, parse_n(b.data, b.len, __LINE__), NULL, 0), RLK_OK);
    CHECK_EQ_INT(t.nnodes, RLK__SLOTS_MAX_NODES);
    CHECK_EQ_STR(rlk__slots_owner(&t, RLK__SLOTS_MAX_NODES - 1)->host, "10.0.3.255");
    CHECK(rlk__slots_owner(&t, RLK__SLOTS_MAX_NODES) == NULL);
    /* A MOVED to yet another node: over the bound too. */
    CHECK_EQ_INT(rlk__slots_moved(&t, 5000, "10.9.9.9", 7000, 0), RLK_ERR_LIMIT);
    CHECK(rlk__slots_owner(&t, 5000) == NULL);
    rlk_buf_free(&b);
    many_nodes(&b, RLK__SLOTS_MAX_NODES + 1);
    CHECK_EQ_INT(rlk__slots_from_slots(&t, parse_n(b.data, b.len, __LINE__), NULL, 0),
                 RLK_ERR_LIMIT);
    CHECK_EQ_STR(t.err, "more than 1024 nodes");
    CHECK_EQ_INT(t.nnodes, RLK__SLOTS_MAX_NODES);
    rlk__slots_free(&t);
    rlk_buf_free(&b);
}

/* Every allocation of a build fails in turn: a clear status, the table
 * left as it was, nothing leaked (valgrind and ASan look). */
static int fail_after = -1, allocs;
static void *t_malloc(void *ctx, size_t n)
{
    (void)ctx;
    if (fail_after >= 0 && allocs++ >= fail_after) return NULL;
    return malloc(n);
}
static void *t_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    if (fail_after >= 0 && allocs++ >= fail_after) return NULL;
    return realloc(p, n);
}
static void t_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static void test_allocation_failures(void)
{
    const rlk_resp_value *v = PARSE(SHARDS_RESP3), *w = PARSE(SLOTS_RESP2);
    rlk_allocator a = {t_malloc, t_realloc, t_free, NULL};
    rlk__slots t;
    int k, rc = RLK_ERR_NOMEM;
    rlk__slots_init(&t);
    rlk_set_allocator(&a);
    for (k = 0; k < 100 && rc == RLK_ERR_NOMEM; k++) {
        fail_after = k;
        allocs = 0;
        rc = rlk__slots_from_shards(&t, v, "127.0.0.1");
        if (rc == RLK_ERR_NOMEM) {
            CHECK_EQ_INT(t.nnodes, 0);
            CHECK_EQ_STR(t.err, "out of memory");
        }
    }
    CHECK_MSG(rc == RLK_OK && k > 2, "built after %d failures: %d", k, rc);
    /* A table in place stays in place. */
    fail_after = 0;
    allocs = 0;
    CHECK_EQ_INT(rlk__slots_from_slots(&t, w, "127.0.0.1", 0), RLK_ERR_NOMEM);
    CHECK_TOPOLOGY(&t, "127.0.0.1", 1);
    /* A MOVED to new nodes: within the room the table has, then not. */
    CHECK_EQ_INT(t.cap, 8);
    CHECK_EQ_INT(rlk__slots_moved(&t, 1, "10.9.9.9", 7000, 0), 6);
    CHECK_EQ_INT(rlk__slots_moved(&t, 2, "10.9.9.9", 7001, 0), 7);
    CHECK_EQ_INT(rlk__slots_moved(&t, 3, "10.9.9.9", 7002, 0), RLK_ERR_NOMEM);
    CHECK_EQ_INT(t.nnodes, 8);
    CHECK_EQ_INT(port_of_owner(&t, 3), P0);
    fail_after = -1;
    rlk_set_allocator(NULL);
    rlk__slots_free(&t);
}

/* ------------------------------------------------------------------ */
/* MOVED patches, redirects, error codes                                */

static void test_moved_patch(void)
{
    rlk__slots t;
    int r;
    rlk__slots_init(&t);
    CHECK_EQ_INT(rlk__slots_from_shards(&t, PARSE(SHARDS_RESP2), "127.0.0.1"), RLK_OK);
    /* To a known primary: one slot changes, nothing else. */
    r = rlk__slots_moved(&t, 0, "127.0.0.1", P1, 0);
    CHECK(r >= 0 && t.nodes[r].port == P1);
    CHECK_EQ_INT(port_of_owner(&t, 0), P1);
    CHECK_EQ_INT(port_of_owner(&t, 1), P0);
    CHECK_EQ_INT(t.nnodes, 6);
    /* To a replica: promoted meanwhile. */
    r = rlk__slots_moved(&t, 1, "127.0.0.1", R0, 0);
    CHECK(r >= 0 && t.nodes[r].role == RLK__ROLE_PRIMARY && t.nodes[r].primary == r);
    CHECK_EQ_INT(port_of_owner(&t, 1), R0);
    /* To a node not in the table: added, a primary of unknown health. */
    r = rlk__slots_moved(&t, 16383, "2001:db8::7", 7000, 0);
    CHECK_EQ_INT(r, 6);
    CHECK_EQ_INT(t.nnodes, 7);
    CHECK_EQ_STR(rlk__slots_owner(&t, 16383)->host, "2001:db8::7");
    CHECK_EQ_INT(rlk__slots_owner(&t, 16383)->health, RLK__HEALTH_UNKNOWN);
    CHECK_EQ_INT(rlk__slots_moved(&t, 16382, "2001:db8::7", 7000, 0), 6);
    /* Over TLS, a node is known by its TLS port. */
    CHECK_EQ_INT(rlk__slots_moved(&t, 2, "2001:db8::7", 7000, 1), 7);
    /* Out of range: refused, nothing changed. */
    CHECK_EQ_INT(rlk__slots_moved(&t, RLK__NSLOTS, "h", 1, 0), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk__slots_moved(&t, 3, "h", 0, 0), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk__slots_moved(&t, 3, "h", 65536, 0), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk__slots_moved(&t, 3, "", 7000, 0), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk__slots_moved(&t, 3, NULL, 7000, 0), RLK_ERR_INVALID);
    CHECK_EQ_INT(port_of_owner(&t, 3), P0);
    CHECK_EQ_INT(t.nnodes, 8);
    rlk__slots_free(&t);
}

static void redirect(int line, const char *msg, const char *origin, int ok, int ask,
                     unsigned slot, const char *host, int port)
{
    rlk__redirect r;
    int rc = rlk__parse_redirect(msg, strlen(msg), origin, &r);
    if (!ok) {
        tl_ok(rc == -1, __FILE__, line, "\"%s\" taken: slot %u host \"%s\" port %d", msg, r.slot,
              r.host, r.port);
        return;
    }
    tl_ok(rc == 0 && r.ask == ask && r.slot == slot && strcmp(r.host, host) == 0 &&
              r.port == port,
          __FILE__, line, "\"%s\": %d ask %d slot %u host \"%s\" port %d", msg, rc, r.ask, r.slot,
          r.host, r.port);
}
#define REDIRECT(msg, origin, ask, slot, host, port) \
    redirect(__LINE__, msg, origin, 1, ask, slot, host, port)
#define NOT_REDIRECT(msg) redirect(__LINE__, msg, "o", 0, 0, 0, NULL, 0)

static void test_parse_redirect(void)
{
    /* As redis 7.0 sent them (the captured cluster). */
    REDIRECT("MOVED 15495 127.0.0.1:29860", "x", 0, 15495, "127.0.0.1", 29860);
    REDIRECT("ASK 13513 127.0.0.1:36427", "x", 1, 13513, "127.0.0.1", 36427);
    /* unknown-endpoint: the host of the node that answered. */
    REDIRECT("MOVED 15495 :29860", "10.0.0.1", 0, 15495, "10.0.0.1", 29860);
    REDIRECT("ASK 0 :1", "node.example", 1, 0, "node.example", 1);
    REDIRECT("MOVED 15495 :29860", NULL, 0, 15495, "", 29860);
    /* IPv6: the port after the last colon; brackets taken off. */
    REDIRECT("MOVED 3999 2001:db8::1:6381", NULL, 0, 3999, "2001:db8::1", 6381);
    REDIRECT("ASK 16383 ::1:65535", NULL, 1, 16383, "::1", 65535);
    REDIRECT("MOVED 1 [::1]:7000", NULL, 0, 1, "::1", 7000);
    REDIRECT("MOVED 1 fe80::1%eth0:7000", NULL, 0, 1, "fe80::1%eth0", 7000);
    REDIRECT("MOVED 7 node-1.cache.example:6379", NULL, 0, 7, "node-1.cache.example", 6379);
    NOT_REDIRECT("MOVED");
    NOT_REDIRECT("MOVED ");
    NOT_REDIRECT("MOVED 1");
    NOT_REDIRECT("MOVED 1 ");
    NOT_REDIRECT("MOVED 16384 h:1");
    NOT_REDIRECT("MOVED 123456 h:1");
    NOT_REDIRECT("MOVED -1 h:1");
    NOT_REDIRECT("MOVED x h:1");
    NOT_REDIRECT("MOVED  1 h:1");
    NOT_REDIRECT("MOVED 1 h");
    NOT_REDIRECT("MOVED 1 h:");
    NOT_REDIRECT("MOVED 1 h:0");
    NOT_REDIRECT("MOVED 1 h:65536");
    NOT_REDIRECT("MOVED 1 h:123456");
    NOT_REDIRECT("MOVED 1 h:1 ");
    NOT_REDIRECT("MOVED 1 h:1x");
    NOT_REDIRECT("MOVED 1 h h:1");
    NOT_REDIRECT("MOVED 1 h\x01:1");
    NOT_REDIRECT("MOVE 1 h:1");
    NOT_REDIRECT("moved 1 h:1");
    NOT_REDIRECT("ASKING 1 h:1");
    NOT_REDIRECT("TRYAGAIN Multiple keys request during rehashing of slot");
    {
        /* A host longer than any DNS name. */
        char msg[400];
        rlk__redirect r;
        memset(msg, 'h', sizeof msg);
        memcpy(msg, "MOVED 1 ", 8);
        memcpy(msg + sizeof msg - 5, ":700", 4);
        msg[sizeof msg - 1] = '0';
        CHECK_EQ_INT(rlk__parse_redirect(msg, sizeof msg, NULL, &r), -1);
        CHECK_EQ_INT(rlk__parse_redirect(msg, 8 + 255 + 5, NULL, &r), -1);
        memcpy(msg + 8 + 255, ":7000", 5);
        CHECK_EQ_INT(rlk__parse_redirect(msg, 8 + 255 + 5, NULL, &r), 0);
        CHECK_EQ_INT(strlen(r.host), 255);
        CHECK_EQ_INT(r.port, 7000);
        /* Bytes after the length given are not read. */
        CHECK_EQ_INT(rlk__parse_redirect("MOVED 1 h:12345", 12, NULL, &r), 0);
        CHECK_EQ_INT(r.port, 12);
    }
}

/* The cluster's errors as the one classifier (reply.h) reads them, by
 * their code alone. */
static void test_error_classes(void)
{
    static const struct { const char *bytes; rlk_error_class e; } t[] = {
        {"-MOVED 15495 127.0.0.1:29860\r\n", RLK_EC_MOVED},
        {"-ASK 13513 127.0.0.1:36427\r\n", RLK_EC_ASK},
        {"-TRYAGAIN Multiple keys request during rehashing of slot\r\n", RLK_EC_TRYAGAIN},
        {"-CLUSTERDOWN The cluster is down\r\n", RLK_EC_CLUSTERDOWN},
        {"-CLUSTERDOWN Hash slot not served\r\n", RLK_EC_CLUSTERDOWN},
        {"-CROSSSLOT Keys in request don't hash to the same slot\r\n", RLK_EC_CROSSSLOT},
        {"!26\r\nMOVED 15495 127.0.0.1:2986\r\n", RLK_EC_MOVED},
        {"-MOVED\r\n", RLK_EC_MOVED},
        {"-MOVEDX 1 h:1\r\n", RLK_EC_OTHER},
        {"-ASKING\r\n", RLK_EC_OTHER},
        {"-ERR This instance has cluster support disabled\r\n", RLK_EC_OTHER},
        {"-LOADING Redis is loading the dataset in memory\r\n", RLK_EC_LOADING},
        {"+MOVED 1 h:1\r\n", RLK_EC_NONE},
        {"$12\r\nMOVED 1 h:12\r\n", RLK_EC_NONE},
        {":1\r\n", RLK_EC_NONE},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const rlk_resp_value *v = PARSE(t[i].bytes);
        CHECK_MSG(rlk__reply_class(v) == t[i].e, "\"%s\": %d, want %d", t[i].bytes,
                  rlk__reply_class(v), t[i].e);
    }
    CHECK_EQ_INT(rlk__reply_class(NULL), RLK_EC_NONE);
}

int main(int argc, char **argv)
{
    tl_init(argc, argv);
    rlk_resp_arena_init(&arena, NULL, 0, 0);
    RUN_TEST(test_shards_resp2_and_resp3);
    RUN_TEST(test_slots_resp2_and_resp3);
    RUN_TEST(test_endpoint_hostname);
    RUN_TEST(test_endpoint_unknown);
    RUN_TEST(test_failed_node);
    RUN_TEST(test_hostile_shards);
    RUN_TEST(test_hostile_slots);
    RUN_TEST(test_too_many_nodes);
    RUN_TEST(test_allocation_failures);
    RUN_TEST(test_moved_patch);
    RUN_TEST(test_parse_redirect);
    RUN_TEST(test_error_classes);
    rlk_resp_arena_free(&arena);
    for (int i = 0; i < ncopies; i++) free(copies[i]);
    return tl_finish();
}
