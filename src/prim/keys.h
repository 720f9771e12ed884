/* SPDX-License-Identifier: BSD-3-Clause */
/* A lock's derived keys and slot, reply readings (keys.c). */
#ifndef RESPLOCK_KEYS_H
#define RESPLOCK_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "resplock.h"
#include "random.h"
#include "reply.h"

#define RLK__RELEASE_CHANNEL_PREFIX "redisson_lock__channel:{"

/* The Cluster hash slot of key k[0..n). */
unsigned rlk__keyslot(const char *k, size_t n);

/* The lock's keys and channel in RLK__NKEYS slots of cap bytes at buf, in the
 * scripts' order: name, queue, waiters, the tombstones' prefix, release
 * channel. */
enum { RLK__K_LOCK, RLK__K_QUEUE, RLK__K_WAITERS, RLK__K_TOMB, RLK__K_CHANNEL, RLK__NKEYS };

/* The room of one slot of rlk__make_keys for name. */
size_t rlk__key_cap(const char *name);
void rlk__make_keys(const char *name, char *buf, size_t cap);

/* The fence of a TIME reply: the server's clock in microseconds (0 when
 * the reply is not one). */
uint64_t rlk__fence_of_time(const rlk_resp_value *v);

/* The end, in the server's ms, of the window in which resplock's clients
 * keep away from a freed lock (release.lua's "~yield": "y END"), from
 * the reply to an HGET of it; 0 when there is none (a null, or anything
 * but that form). */
uint64_t rlk__window_end(const rlk_resp_value *v);

/* A holder's facts ("h=HOST;p=PID;t=MS;c=CMD", percent-encoded, after
 * "k=f;" for a fair lock): their longest, with the NUL. */
#define RLK__FACTS_MAX 188

/* Holder facts, as every primitive records them ("h=HOST;p=PID;t=MS"
 * and ";c=CMD" when cmd is given, %XX-encoded, at most RLK__FACTS_MAX
 * bytes): this host's name, encoded, into out
 * (RLK_HOLDER_HOST_MAX + 1 bytes), read once by a primitive when made;
 * and the facts of host (so encoded) with this process's id and this
 * host's wall clock now, into out; their length. */
void rlk__facts_host(char *out);
size_t rlk__facts_make(const char *host, char *out, const char *cmd);
/* Reads the facts f (len bytes, a "+w" mark at the end ignored) into
 * st's host, pid, since_ms and cmd; has_facts set when one was found. */
void rlk__facts_read(rlk_lock_status *st, const char *f, size_t len);

#endif
