/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A real Redis Cluster for tests: 3 primaries and 3 replicas, each a
 * redis-server of tests/server.c (free loopback port, own temporary
 * directory, persistence off, stopped at exit), made one cluster by
 * `redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes`.
 *
 * "Ready" (tc_wait_ready) means, for every node still running and not
 * paused: CLUSTER INFO says cluster_state:ok with all 16384 slots
 * assigned and ok; its CLUSTER NODES view gives every slot an owner that
 * runs, is a primary and is not flagged as failing, and agrees with every
 * other node's view on each slot's owner and each replica's primary;
 * each replica's link to its primary is up (INFO replication); and
 * its CLUSTER SLOTS lists every live node (no replica left out as
 * failing or still loading).
 * Everything is polled under a deadline.
 *
 * The helper talks to the nodes through rlk_conn (RESP2 connections
 * opened per call).  Failures are explained on stderr and return -1
 * (or NULL); the test turns them into checks.  The server is
 * $RLK_REDIS_SERVER or redis-server on $PATH (see server.h); redis-cli is
 * $RLK_REDIS_CLI, else the one beside $RLK_REDIS_SERVER when that is a
 * path, else redis-cli on $PATH.
 */
#ifndef RESPLOCK_TEST_CLUSTER_H
#define RESPLOCK_TEST_CLUSTER_H

#include "server.h"

#define TC_NODES 6
#define TC_SLOTS 16384
#define TC_READY_MS 30000 /* generous: CI machines are slow and shared */

typedef struct tc_node {
    ts_server *srv;          /* srv->pid is -1 while killed             */
    char id[41];             /* CLUSTER MYID                            */
    int bus_port;            /* the cluster bus (cluster-port)          */
    int paused;              /* stopped with SIGSTOP                    */
    /* The extra redis-server arguments, kept for a restart. */
    char bus_arg[16], timeout_arg[16];
    const char *extra[24];
} tc_node;

typedef struct tc_cluster {
    tc_node node[TC_NODES];
    int node_timeout_ms;
    /* The slot being migrated step by step, from and to: -1 when none. */
    int mig_slot, mig_from, mig_to;
} tc_cluster;

/* Starts six nodes with cluster-node-timeout node_timeout_ms (0: 2000),
 * creates the cluster and waits until it is ready (and each primary has
 * exactly one replica).  NULL on failure (explained on stderr); then
 * nothing is left running. */
tc_cluster *tc_start(int node_timeout_ms);

/* Kills every node (SIGKILL: the data is throwaway), removes their
 * directories, frees c.  NULL is allowed. */
void tc_stop(tc_cluster *c);

/* Node i's port, and its URL "redis://127.0.0.1:PORT". */
int tc_port(const tc_cluster *c, int i);
void tc_url(const tc_cluster *c, int i, char *out, size_t n);

/* The node listening on port, or -1. */
int tc_node_of_port(const tc_cluster *c, int port);

/* Running and not paused. */
int tc_alive(const tc_cluster *c, int i);

/* Waits until the cluster is ready (above), up to timeout_ms.  0, or -1
 * with the last reason it was not on stderr. */
int tc_wait_ready(tc_cluster *c, int timeout_ms);

/* The primary serving slot, and the (first) replica of primary p, as a
 * live node's CLUSTER NODES says; -1 when there is none (or no live node
 * answered). */
int tc_owner(tc_cluster *c, unsigned slot);
int tc_replica_of(tc_cluster *c, int p);

/* Node i is a primary by its own INFO replication: 1 yes, 0 no, -1 it
 * did not answer. */
int tc_is_primary(tc_cluster *c, int i);

/* kill -9 of node i (its process group), reaped.  0 or -1. */
int tc_kill(tc_cluster *c, int i);

/* Starts a killed node again, on its port with its nodes.conf (it
 * rejoins as what the cluster made of it), and waits until it answers
 * PING.  0 or -1. */
int tc_restart(tc_cluster *c, int i);

/* SIGSTOP / SIGCONT of node i, returning once the kernel reports the
 * process stopped / continued.  0 or -1. */
int tc_pause(tc_cluster *c, int i);
int tc_resume(tc_cluster *c, int i);

/* Node i writes an AOF from now on (appendfsync always) and keeps it
 * across tc_restart: CONFIG SET, its first rewrite waited for, the same
 * arguments added to its next starts.  0 or -1. */
int tc_aof_on(tc_cluster *c, int i);

/* Sends CLUSTER FAILOVER [mode] ("TAKEOVER", "FORCE" or NULL for the
 * coordinated one) to replica r.  0 when it was accepted, else -1. */
int tc_failover(tc_cluster *c, int r, const char *mode);

/* Waits until node i is a primary serving at least one slot and the
 * cluster is ready again.  The milliseconds it took, or -1 at timeout. */
int tc_wait_primary(tc_cluster *c, int i, int timeout_ms);

/*
 * Moving one slot from its owner to primary `to`, step by step, as
 * redis-cli --cluster reshard does:
 *   tc_migrate_begin   CLUSTER SETSLOT slot IMPORTING on the target, then
 *                      MIGRATING on the source (ASK from here on for keys
 *                      already moved);
 *   tc_migrate_keys    moves up to max keys of the slot (GETKEYSINSLOT,
 *                      then MIGRATE host port "" 0 timeout KEYS k...);
 *                      returns how many moved (0: none left), or -1;
 *   tc_migrate_end     moves the keys left, then CLUSTER SETSLOT slot
 *                      NODE target on the target, the source and every
 *                      other primary, and waits until every live node
 *                      agrees; 0 or -1.
 * One migration at a time.  tc_migrate does all three.
 */
int tc_migrate_begin(tc_cluster *c, unsigned slot, int to);
int tc_migrate_keys(tc_cluster *c, unsigned slot, int max);
int tc_migrate_end(tc_cluster *c, unsigned slot);
int tc_migrate(tc_cluster *c, unsigned slot, int to);

#endif
