/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A real Redis Sentinel setup for tests: a primary and one replica
 * (--replicaof), and three sentinels monitoring them as "rlkmaster" with
 * quorum 2, each a redis-server of tests/server.c (free loopback port,
 * own temporary directory, persistence off, stopped at exit; a sentinel
 * with its own writable sentinel.conf there).
 *
 * "Ready" (tsn_wait_ready) means: every running, unpaused sentinel
 * answers SENTINEL GET-MASTER-ADDR-BY-NAME with the same address, that
 * of a data node whose ROLE says master; each of them counts 2 other
 * sentinels and 1 replica in SENTINEL MASTER; and the other data node,
 * when it runs, says by ROLE that it is a replica of that primary, with
 * master_link_status:up in INFO replication.  Everything is polled under
 * a deadline.
 *
 * The helper talks to the servers through rlk_conn (RESP2 connections
 * opened per call).  Failures are explained on stderr and return -1 (or
 * NULL).  The server is $RLK_REDIS_SERVER or redis-server on $PATH (see
 * server.h).
 */
#ifndef RESPLOCK_TEST_SENTINEL_H
#define RESPLOCK_TEST_SENTINEL_H

#include "resplock.h"
#include "server.h"

#include <stddef.h>

#define TSN_DATA 2
#define TSN_SENTINELS 3
#define TSN_NAME "rlkmaster"
#define TSN_READY_MS 30000 /* generous: CI machines are slow and shared */

typedef struct tsn_env {
    ts_server *data[TSN_DATA];     /* srv->pid is -1 while killed       */
    ts_server *sent[TSN_SENTINELS];
    int data_paused[TSN_DATA], sent_paused[TSN_SENTINELS];
    int down_after_ms, failover_timeout_ms;
    char replicaof_port[16];
    const char *replica_extra[10], *primary_extra[8], *sentinel_extra[4];
    int tls;                       /* tsn_start_tls                     */
    char conf[512];
} tsn_env;

/* Starts the two data nodes and the three sentinels, with
 * down-after-milliseconds down_after_ms (0: 1000), and waits until ready.
 * NULL on failure (explained on stderr); then nothing is left running. */
tsn_env *tsn_start(int down_after_ms);

/* The same over TLS only (a build with OpenSSL): every process listens
 * with TLS alone (tls-port, port 0; tests/gen-certs.sh's server.crt, the
 * test CA, no client certificate asked for), the replica replicates and
 * the sentinels talk to the data nodes and to one another over TLS
 * (tls-replication yes), and the helper's own connections are rediss://
 * trusting ts_cert("ca.crt").  tsn_url gives rediss+sentinel://. */
tsn_env *tsn_start_tls(int down_after_ms);

/* Kills every process, removes their directories, frees e.  NULL is
 * allowed. */
void tsn_stop(tsn_env *e);

/* Waits until ready (above), up to timeout_ms.  0, or -1 with the last
 * reason it was not on stderr. */
int tsn_wait_ready(tsn_env *e, int timeout_ms);

/* One look, quietly: 1 ready, 0 not (yet). */
int tsn_ready(tsn_env *e);

/* The data node every live sentinel names primary (-1: they do not
 * agree, or none answered), and the other one. */
int tsn_primary(tsn_env *e);
int tsn_replica(tsn_env *e);

/* The primary sentinel s names (-1: it did not answer, or names an
 * address that is not one of ours). */
int tsn_primary_by(tsn_env *e, int s);

/* Data node i's ROLE: 1 master, 0 slave, -1 no answer. */
int tsn_is_master(tsn_env *e, int i);

/* SENTINEL FAILOVER sent to a live sentinel, then waits until the
 * sentinels name the other node and the setup is ready again (the old
 * primary replicating from the new one).  The milliseconds it took, or
 * -1. */
int tsn_failover(tsn_env *e, int timeout_ms);

/* Waits until every live sentinel names data node i primary, and the
 * setup is ready.  The milliseconds it took, or -1 at timeout. */
int tsn_wait_primary(tsn_env *e, int i, int timeout_ms);

/* kill -9 of data node i, reaped; tsn_restart starts it again on its
 * port, as an empty primary (no --replicaof: the sentinels are to make
 * it a replica), and waits until it answers PING.  0 or -1. */
int tsn_kill(tsn_env *e, int i);
int tsn_restart(tsn_env *e, int i);

/* SIGSTOP / SIGCONT of data node i (tsn_pause_data) or sentinel i,
 * returning once the kernel reports the process stopped / continued.
 * 0 or -1. */
int tsn_pause_data(tsn_env *e, int i);
int tsn_resume_data(tsn_env *e, int i);
int tsn_pause_sentinel(tsn_env *e, int i);
int tsn_resume_sentinel(tsn_env *e, int i);

/* Ports of data node i and sentinel i (-1 when there is none). */
int tsn_data_port(const tsn_env *e, int i);
int tsn_sentinel_port(const tsn_env *e, int i);

/* A RESP2 connection to data node i (rediss:// with the test CA in a
 * TLS setup), never reconnecting; NULL (why on stderr). */
rlk_conn *tsn_connect_data(const tsn_env *e, int i);

/* Acquires name through cl (ttl 30 s, waiting up to 10 s), checks that
 * data node at holds it with the lock's token, releases it and checks
 * that the key is gone there.  0, or -1 (why on stderr). */
int tsn_lock_lands_on(const tsn_env *e, rlk_client *cl, const char *name, int at);

/* "redis+sentinel://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3/rlkmaster"
 * (rediss+sentinel:// of a TLS setup). */
void tsn_url(const tsn_env *e, char *out, size_t n);

#endif
