/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Redis Cluster's slot table (slots.c): which node serves each of the
 * 16384 hash slots, and the nodes with their addresses, roles and health;
 * built from a CLUSTER SHARDS reply (Redis 7+, RESP2 arrays or RESP3
 * maps) or a CLUSTER SLOTS reply (older servers; Valkey keeps it), patched
 * one slot at a time by a MOVED; and the reading of a redirect's text
 * (MOVED, ASK; an error's class is the core's one classifier's,
 * rlk__reply_class in reply.h).
 *
 * Pure: no I/O, no clock, no thread.  Memory comes from the library's
 * allocator and grows with the nodes a reply actually lists (never from
 * a count it declares), up to RLK__SLOTS_MAX_NODES.  A reply that is not
 * what a server sends (a slot out of range or served twice, a node
 * without a port, a field of the wrong type) is refused as a whole with
 * a reason; the table is then left as it was.
 *
 * A key's slot (CRC16 of its hash tag, or of the whole key, mod 16384)
 * is its primitive's to compute, from the key it names.
 */
#ifndef RESPLOCK_SLOTS_H
#define RESPLOCK_SLOTS_H

#include <stddef.h>
#include <stdint.h>

#include "resp.h"

#define RLK__NSLOTS 16384
#define RLK__SLOTS_NONE 0xffffu       /* owner[] of a slot nobody serves */
/* Redis Cluster is designed for up to 1000 nodes. */
#define RLK__SLOTS_MAX_NODES 1024
#define RLK__SLOTS_HOST_MAX 255       /* a DNS name's limit, and then some */
#define RLK__SLOTS_ID_MAX 40

typedef enum rlk__role { RLK__ROLE_PRIMARY, RLK__ROLE_REPLICA } rlk__role;

typedef enum rlk__health {
    RLK__HEALTH_UNKNOWN, /* not said (CLUSTER SLOTS, a MOVED) or unknown */
    RLK__HEALTH_ONLINE,
    RLK__HEALTH_LOADING, /* a replica still syncing                     */
    RLK__HEALTH_FAILED
} rlk__health;

typedef struct rlk__node {
    /* Where to connect: the endpoint the server prefers (an IP address
     * or a host name).  An endpoint the server does not know (NULL or
     * "") is the host the reply came from; "?" (hostnames preferred but
     * none announced) falls back to the node's IP.  "" when nothing is
     * known: the node cannot be reached. */
    char host[RLK__SLOTS_HOST_MAX + 1];
    char ip[64];                  /* its IP as announced, "" if not said */
    char id[RLK__SLOTS_ID_MAX + 1]; /* "" when the reply gives none      */
    int port;                     /* plain TCP, 0 when none              */
    int tls_port;                 /* TLS, 0 when none                    */
    rlk__role role;
    rlk__health health;
    int64_t repl_offset;          /* -1 when not said                    */
    uint16_t primary;             /* its shard's primary (itself for a
                                     primary); RLK__SLOTS_NONE if none   */
} rlk__node;

typedef struct rlk__slots {
    uint16_t owner[RLK__NSLOTS];  /* node index, or RLK__SLOTS_NONE      */
    rlk__node *nodes;
    size_t nnodes, cap;
    char err[160];                /* why the last build or patch failed  */
} rlk__slots;

/* An empty table (no node, no slot served).  Cannot fail. */
void rlk__slots_init(rlk__slots *t);
/* Frees the nodes; t is then empty and may be used again. */
void rlk__slots_free(rlk__slots *t);

/*
 * Builds the table from a reply to CLUSTER SHARDS or CLUSTER SLOTS,
 * replacing what t held.  origin is the host the command was sent to
 * (for endpoints the server leaves to the client; NULL: none known).
 * CLUSTER SLOTS gives one port per node, the one for the connection it
 * came over: tls says whether that was TLS (the port is then tls_port).
 * Each slot's owner is its shard's primary (SHARDS: the node of role
 * "master", a failed one only when there is no other; SLOTS: the first
 * node of its range).  Returns RLK_OK; RLK_ERR_PROTO (not the form of
 * the reply, or a slot out of range or served twice, a node without a
 * port or listed twice, a host or id too long), RLK_ERR_LIMIT (over
 * RLK__SLOTS_MAX_NODES nodes), RLK_ERR_NOMEM; on error t is unchanged
 * but for t->err.
 */
int rlk__slots_from_shards(rlk__slots *t, const rlk_resp_value *reply, const char *origin);
int rlk__slots_from_slots(rlk__slots *t, const rlk_resp_value *reply, const char *origin,
                          int tls);

/* The node serving slot, or NULL. */
const rlk__node *rlk__slots_owner(const rlk__slots *t, unsigned slot);

/* The node a MOVED names (host and port as rlk__parse_redirect gives
 * them; the port of a TLS connection when tls) now serves slot: found
 * by host and port among the nodes (and made a primary, it was promoted)
 * or added.  Its index, or RLK_ERR_INVALID (a slot, host or port out of
 * range), RLK_ERR_LIMIT, RLK_ERR_NOMEM. */
int rlk__slots_moved(rlk__slots *t, unsigned slot, const char *host, int port, int tls);

typedef struct rlk__redirect {
    int ask;             /* 1 for ASK, 0 for MOVED                      */
    unsigned slot;
    char host[RLK__SLOTS_HOST_MAX + 1];
    int port;
} rlk__redirect;

/* Reads the text of a redirect error, "MOVED <slot> <host>:<port>" or
 * "ASK <slot> <host>:<port>" (the port after the last colon, so that an
 * IPv6 address may stand bare; "[addr]" is taken too).  An empty host is
 * origin's (the node that answered; "" when origin is NULL).  0, or -1
 * when msg is not one. */
int rlk__parse_redirect(const char *msg, size_t len, const char *origin, rlk__redirect *r);

#endif
