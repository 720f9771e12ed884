/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The renewer (renewer.c): the watchdog's renewal rounds for every
 * primitive's leases, over the primitive host.  It joins the host as a
 * member of its own and owns the lease registry (lease.h) that the
 * primitives add their leases to: it places each lease on the core that
 * serves its slot, plans a round per core when one of that core's leases
 * is due (every lease there after a new connection, or after one moved
 * there), sends it through the host (which follows the redirects),
 * applies the replies, and makes the on_lost calls due.  A primitive
 * keeps its leases' fields (key, token, kind, TTL, callbacks) and sets
 * their validity when its own commands renew them (acquire, extend);
 * it sends no round.  Internal (rlk__ prefix).
 *
 * Kinds: a lease's kind is the renew script's letter (src/lua/renew.lua:
 * 's' a string whose value is the token, 'r' a hash whose field is the
 * token, 'p' a semaphore's holder: the field "h:" token of a hash, whose
 * expiry on the server's clock a renewal moves); a simple one ('s', not scripted) goes alone as SET IFEQ where
 * the server has it.  A new kind of lease is a letter there.
 *
 * Time: the host's members' clock (its enter and tick); one thread at a
 * time, as the host.
 */
#ifndef RESPLOCK_RENEWER_H
#define RESPLOCK_RENEWER_H

#include "core.h"
#include "host.h"
#include "lease.h"

typedef struct rlk__renewer rlk__renewer;

/* A renewer joined to host, its timing timing's (copied; NULL: the
 * defaults).  NULL when out of memory. */
rlk__renewer *rlk__renewer_new(rlk__host *host, const rlk_client_config *timing);
/* Parts from the host and frees it: after every primitive whose leases
 * it holds (they unlink them first), before the host. */
void rlk__renewer_free(rlk__renewer *rn);

/* The registry the primitives' leases join (valid as long as rn). */
rlk__leases *rlk__renewer_leases(rlk__renewer *rn);

/* l (its fields set, validity too) joins the rounds of the core that
 * serves its slot now (or of the first one known later). */
void rlk__renewer_add(rlk__renewer *rn, rlk__lease *l);
/* Takes l out, as rlk__lease_unlink (1: its owner may be freed now). */
int rlk__renewer_remove(rlk__renewer *rn, rlk__lease *l);

/* Every reply of a round in flight will not come: for an owner that goes
 * before its rounds end (a client's or session's end). */
void rlk__renewer_abandon(rlk__renewer *rn);

/* Whether v refuses SET IFEQ (an ACL without it, a server that lacks
 * it): the scripts then, on that connection. */
int rlk__set_ifeq_refused(const rlk_resp_value *v);
/* SET key token IFEQ token PX ms, put on c (within a build). */
int rlk__put_set_ifeq(rlk__core *c, const char *key, const char *token, const char *ms);

/* WAIT n ms (aof: WAITAOF 1 n ms) put on c within q's build, its hold
 * told to the core (rlk__core_hold). */
int rlk__put_wait(rlk__core *c, rlk__req *q, int n, int aof, int64_t ms);

#endif
