/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lease registry (lease.c): what a client holds with a TTL that its
 * watchdog renews (locks, semaphore permits; read holds later).
 * Bookkeeping only, no I/O: the validity of each lease, which are due,
 * the renewal requests of a round grouped per hash slot, the results of
 * a round's replies, and the on_lost calls due.  The renewer
 * (renewer.c), which owns the registry, drives the rounds, per core,
 * through the primitive host; the primitives add their leases to it.
 *
 * Locking: the registry's mutex guards its list, the on_lost queue and
 * every lease's fields but key, token, kind and slot.  The functions
 * below say when they take it themselves; the others are called with it
 * held (or before the lease is added).  A round holds a reference on
 * each of its leases; one removed meanwhile is marked dead and the
 * round's end destroys it, so a round's I/O runs with the mutex
 * released.
 */
#ifndef RESPLOCK_LEASE_H
#define RESPLOCK_LEASE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "resplock.h"

#define RLK__DEFAULT_DRIFT_MS 2

typedef struct rlk__lease rlk__lease;

struct rlk__lease {
    rlk__lease *prev, *next; /* the registry's leases */
    const char *key;         /* the owner's strings: live as long as it */
    const char *token;
    char kind;               /* the renew script's letter: 's' string, 'r' hash
                                field, 'p' a semaphore's holder (renew.lua) */
    unsigned slot;           /* the key's Cluster hash slot */
    const void *group;       /* the owner's: which rounds it joins (its
                                server's connection); NULL: any */
    int64_t ttl;             /* what a renewal sets */
    int64_t valid_until;     /* monotonic ms (read by any thread: atomic) */
    int64_t renew_at;
    int64_t lost_at;         /* report lost by then, before valid_until */
    int64_t margin;          /* lost_at this long before valid_until; 0: default */
    int watchdog;
    int lost;                /* atomic, as valid_until */
    int inflight;            /* in an asynchronous round whose reply is owed */
    /* Renewed, extended and released by the scripts only: a native
     * compare-and-set found its value not exactly its token (waiters'
     * mark, see src/lua/acquire.lua), or refused. */
    int scripted;
    /* Replicas that must have each write of it (acquire, renewal) before
     * it counts: WAIT acks ms, or with acks_aof WAITAOF 1 acks ms (the
     * primary's AOF and the replicas'); 0: none asked.  A renewal they
     * did not acknowledge in time counts as failed. */
    int acks;
    int acks_aof;
    int64_t acks_ms;
    void (*on_lost)(void *ctx, void *owner);
    void *ctx;
    void *owner;             /* what on_lost and destroy are given */
    void (*destroy)(void *owner); /* frees the owner, for a round that outlives it */
    rlk__lease *lost_next;   /* on the registry's queue of on_lost calls due */
    int lost_pending;
    int refs;                /* rounds holding it */
    int dead;                /* removed while held: the last round destroys it */
};

typedef struct rlk__leases {
    pthread_mutex_t mu;
    rlk__lease *head;
    rlk__lease *lost_head;   /* on_lost calls due (see rlk__leases_notify_lost) */
    const rlk_client_config *cfg; /* the timing's (rlk_plan_*) */
    /* A reconnect happened: every lease is checked at the next round
     * (atomic: set from whichever thread reconnected). */
    int recheck_all;
    /* A cluster-enabled server refused a round's keys of several slots
     * (CROSSSLOT): renewals go one script call per slot from then on. */
    int per_slot;
    /* The sans-I/O session's clock: the time its caller gave last
     * (clock_now) stands for rlk__now_ms() when manual_clock is set. */
    int manual_clock;
    int64_t clock_now;
    /* One more at every change of a lease's times or of the list (add,
     * unlink, validity, loss): a cache of the next time due is stale
     * when it moved. */
    unsigned gen;
} rlk__leases;

/* 0, or -1 when the mutex cannot be made. */
int rlk__leases_init(rlk__leases *reg, const rlk_client_config *cfg);
void rlk__leases_destroy(rlk__leases *reg);

/* The registry's time: rlk__now_ms(), or the session's clock. */
int64_t rlk__leases_now(const rlk__leases *reg);
/* The session's clock is now (a time before the last is taken as the
 * last). */
void rlk__leases_clock(rlk__leases *reg, int64_t now);

/* The default lost margin of a TTL: a tenth, at least 5 ms. */
int64_t rlk__lease_margin(int64_t ttl);

/* Valid for ttl from start (monotonic ms): sets valid_until, lost_at and
 * renew_at. */
void rlk__lease_set_validity(rlk__leases *reg, rlk__lease *l, int64_t start, int64_t ttl);

/* Marks l lost and queues its on_lost call. */
void rlk__lease_mark_lost(rlk__leases *reg, rlk__lease *l);

/* Adds l (takes the mutex). */
void rlk__lease_add(rlk__leases *reg, rlk__lease *l);

/* Takes l off the registry.  1 when the caller may free its owner now;
 * 0 when a round holds it: the round's end destroys it. */
int rlk__lease_unlink(rlk__leases *reg, rlk__lease *l);

/*
 * Makes the queued on_lost calls, once each.  Called with the mutex
 * released (locked = 0): the callback may call into the client, remove
 * leases among others.  With locked = 1 the caller holds it throughout:
 * another thread could free an owner the moment it is released, so
 * there the callback must not call the client's functions.
 */
void rlk__leases_notify_lost(rlk__leases *reg, int locked);

/* Marks lost the watchdog leases whose lost_at has passed. */
void rlk__leases_expire(rlk__leases *reg, int64_t now);

/* One lease of a round: held by a reference, with the TTL sent. */
typedef struct rlk__renewal {
    rlk__lease *l;
    int64_t ttl;
    char ttls[24];
    size_t ttls_len;
} rlk__renewal;

/* A renewal round: its leases, and its requests of the renew script
 * (at most RLK__RENEW_BATCH keys each, one slot each when per_slot). */
typedef struct rlk__round {
    size_t n;                /* leases in e */
    rlk__renewal *e;
    size_t nreq;
    rlk_request *reqs;
    const char **argv;       /* the requests' arguments */
    size_t *lens;
    char *kinds;
    int per_slot;
    /* Set before rlk__round_requests where the server has SET IFEQ: each
     * simple lease not scripted goes alone, as SET key token IFEQ token
     * PX ttl (its request's script NULL, its argv as a one-key call's). */
    int native;
    int all;                 /* a re-check of every lease */
    int async;               /* replies applied one by one as they come */
    int failed;              /* ... and one did not come */
    size_t applied;          /* ... the requests whose reply was applied */
    unsigned char *got;      /* ... which requests' (by index) */
    const void *group;       /* the leases it took (NULL: all) */
    int64_t start;           /* validity counts from here */
    int64_t end;             /* the first lost_at of its leases */
    /* While a request's reply is applied: the replicas its WAIT and its
     * WAITAOF counted (see rlk__wait_count; RLK__ACKED_ALL: not sent). */
    long acked, acked_aof;
} rlk__round;

#define RLK__ACKED_ALL 0x7fffffffL

/* The replicas a WAIT's reply (aof: WAITAOF 1 n's, [local, replicas])
 * counted: -1 for none (an error, no reply, the primary's own AOF not
 * written).  v NULL: -1. */
long rlk__wait_count(const rlk_resp_value *v, int aof);

/* The leases of round request i: e[*first..*first + return). */
size_t rlk__round_leases(const rlk__round *rd, size_t i, size_t *first);

#define RLK__RENEW_BATCH 1000

/*
 * Plans a round at now (takes the mutex): marks lost the leases whose
 * lost_at has passed; when one is due (all after a reconnect), every
 * watchdog lease not lost joins (one round trip now saves the next
 * ones), held by a reference.  async: the replies will be applied one
 * by one (rlk__round_apply_one), and the leases count as inflight until
 * then.  1 planned, 0 nothing due, RLK_ERR_NOMEM (nothing held).
 */
int rlk__round_plan(rlk__leases *reg, int64_t now, int async, rlk__round *rd);

/* rlk__round_plan over the leases of group alone (their server's
 * connection), all set when every one of them is to be re-checked (its
 * connection is new): the registry's recheck_all is neither read nor
 * cleared; the caller keeps its own. */
int rlk__round_plan_for(rlk__leases *reg, int64_t now, int async, const void *group, int all,
                        rlk__round *rd);

/* Builds the round's requests of the renew script s: at most
 * RLK__RENEW_BATCH keys per call, each within one hash slot when
 * per_slot (then also rd->per_slot); with rd->native, the simple leases
 * not scripted one per request, after them.  Returns their number
 * (rd->nreq). */
size_t rlk__round_requests(rlk__round *rd, const rlk_script *s, int per_slot);

/* Whether v is a cluster's refusal of keys of several slots. */
int rlk__round_crossslot(const rlk_resp_value *v);

/*
 * The reply of an async round's next request (the first not applied), applied as
 * rlk__round_finish would (takes the mutex); v NULL: it will not come
 * (the connection closed), and its leases are tried again soon, until
 * their lost_at.  A CROSSSLOT refusal makes the registry go per slot
 * and its leases due at once.  After the last request's, the round ends
 * as rlk__round_finish ends it: 1 then, else 0.
 */
int rlk__round_apply_one(rlk__leases *reg, rlk__round *rd, const rlk_resp_value *v);
/* The same for request i, whose reply may come before an earlier one's
 * (an earlier request sent again after a cluster's redirect); a request
 * applied already is not again (0). */
int rlk__round_apply_at(rlk__leases *reg, rlk__round *rd, size_t i, const rlk_resp_value *v);

/* Whether a round's request i goes as SET IFEQ (see rlk__round.native). */
int rlk__round_native(const rlk__round *rd, size_t i);

/*
 * A connection's renewal rounds (one at a time): the round, its number
 * (a late reply of an earlier one, sent again after a redirect, is
 * dropped), and what the next one is sent as.  The owner keeps one per
 * connection and sends the requests; this plans them and applies their
 * replies.
 */
typedef struct rlk__conn_round {
    rlk__round round;
    uint32_t gen;
    int on;                  /* a round is in flight */
    int eval;                /* the next goes as EVAL (the script was missing) */
    int all, failed;         /* it re-checks all; a reply of it was lost */
} rlk__conn_round;

/* Plans cr's next round of group's leases at now (all: re-check every
 * one) and builds its requests of s (per_slot: one slot each): their
 * number in *nreq, and whether they go as EVAL in *eval.  1 planned
 * (cr->on), 0 nothing due, RLK_ERR_NOMEM. */
int rlk__conn_round_plan(rlk__leases *reg, rlk__conn_round *cr, int64_t now, const void *group,
                         int all, const rlk_script *s, int native, int per_slot, size_t *nreq,
                         int *eval);

/* The argument that names request i of cr's round. */
int64_t rlk__conn_round_arg(const rlk__conn_round *cr, size_t i);

/* The request of cr's round that arg names (its index in *i), or NULL:
 * of an earlier round. */
const rlk_request *rlk__conn_round_req(const rlk__conn_round *cr, int64_t arg, size_t *i);

/* The reply of request i applied (v NULL: it will not come).  1 when
 * this ended a round that re-checked every lease with every reply
 * read, else 0. */
int rlk__conn_round_reply(rlk__leases *reg, rlk__conn_round *cr, size_t i,
                          const rlk_resp_value *v);

/* Every reply of cr's round not applied yet will not come. */
void rlk__conn_round_abandon(rlk__leases *reg, rlk__conn_round *cr);

#endif
