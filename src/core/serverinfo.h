/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which server a connection talks to, and which native commands it has.
 *
 * The one place that decides what a server can do (pure readings of
 * replies; script.c's rlk__server_detect asks a connection for them): newer servers have
 * commands that do in one call what older ones need a script for, and
 * the layers above choose a path by the capability bits here, never by
 * comparing versions themselves.  Every server keeps a path without any
 * of them (Redis 5 and 6), so a capability that is missed (an unknown
 * fork, a server that hides its version) costs speed, never correctness.
 *
 *   RLK_CAP_SET_IFEQ      SET key value IFEQ old ...   Redis 8.4+, Valkey 8.1+
 *   RLK_CAP_DELIFEQ       DELIFEQ key value            Valkey 9.0+
 *   RLK_CAP_DELEX_IFEQ    DELEX key IFEQ value         Redis 8.4+, Valkey 9.2+
 *   RLK_CAP_SCRIPT_FLAGS  "#!lua flags=..." shebang    Redis 7.0+, Valkey (7.2+)
 *   RLK_CAP_FUNCTIONS     FUNCTION LOAD / FCALL        Redis 7.0+, Valkey (7.2+)
 *   RLK_CAP_NO_EVICT      CLIENT NO-EVICT on           Redis 7.0+, Valkey (7.2+)
 *
 * The facts come from the handshake's HELLO reply (server and version),
 * and from one INFO server command when HELLO told nothing (RESP2 without
 * HELLO, Redis 5) or may have told the Redis version a Valkey claims for
 * compatibility ("redis" 7.2.4: Valkey 7.2, or a later Valkey with
 * extended-redis-compatibility on).
 */
#ifndef RESPLOCK_SERVERINFO_H
#define RESPLOCK_SERVERINFO_H

#include <stddef.h>
#include <stdint.h>

#include "resplock.h"

#define RLK_CAP_SET_IFEQ     0x01u
#define RLK_CAP_DELIFEQ      0x02u
#define RLK_CAP_DELEX_IFEQ   0x04u
#define RLK_CAP_SCRIPT_FLAGS 0x08u
#define RLK_CAP_FUNCTIONS    0x10u
#define RLK_CAP_NO_EVICT     0x20u

typedef enum {
    RLK__FLAVOR_UNKNOWN = 0,
    RLK__FLAVOR_REDIS,
    RLK__FLAVOR_VALKEY
} rlk__flavor;

typedef struct rlk__server {
    rlk__flavor flavor;
    int major, minor, patch;   /* 0.0.0 when unknown */
    unsigned caps;             /* RLK_CAP_* */
    /* Whose facts these are: the connection and its generation. */
    const rlk_conn *conn;
    uint64_t generation;
} rlk__server;

/*
 * The facts of a server named name ("redis", "valkey", any case; other
 * names and NULL: unknown) at version ("8.4.0", "9.0"; a "-suffix" is
 * ignored) into *out: its flavor, version and capabilities.  A version
 * that does not parse is 0.0.0, and an unknown server or version has no
 * capability.  A pure function; cannot fail; any thread.
 */
void rlk__server_facts(rlk__server *out, const char *name, const char *version);

/*
 * What HELLO's reply m (a map, or under RESP2 a flat array) tells of the
 * connection, into *info: the server's name and version, the client id
 * ("id"), and the protocol ("proto", into *proto when not NULL).  Fields
 * m does not name are left as they are.
 */
void rlk__hello_info(rlk_conn_info *info, int *proto, const rlk_resp_value *m);

/*
 * The facts HELLO's reply m (a map, or under RESP2 a flat array) gives:
 * its "server" and "version" as rlk__server_facts reads them; unknown,
 * with no capability, when it has neither.  Without INFO server, "redis"
 * 7.2.4 stays Redis 7.2 (what a Valkey claiming it can do too).  For the
 * request core (core.c), which reads HELLO's reply itself.
 */
void rlk__server_from_hello(rlk__server *out, const rlk_resp_value *m);

/*
 * The facts INFO server's text[0..len) gives: "valkey" where it has
 * valkey_version or server_name valkey (Valkey 7.2.5 on), else "redis",
 * at that version (valkey_version, else redis_version), as
 * rlk__server_facts reads them.
 */
void rlk__server_from_info(rlk__server *out, const char *text, size_t len);

#endif
