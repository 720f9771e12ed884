/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lock, the first primitive over the request core (lock.c): simple
 * and reentrant locks, their waits (in line, woken by releases, handed
 * over), their leases (which the renewer, renewer.h, renews in its
 * rounds), and the calls without a handle
 * (status, release and extend by token), all as requests with callbacks
 * that it submits to the primitive host (host.h) for their slot: the
 * host holds them until the slot's connection is up and follows a
 * cluster's redirects, so that the lock sees only final replies.  The
 * sans-I/O session (session.c) is one core, a host over it and one
 * rlk__locks; the semantics are rlk_session's (resplock.h).
 *
 * It joins the host, which fans out to it the connections' events, its
 * own times (waits, renewals, losses: rlk__core_deadline and
 * rlk__core_tick count them in), and enter and leave around every core
 * call that may call back, so that handles finished meanwhile are freed
 * at the end and losses are reported.  Whoever turns the cores (a
 * driver, a session's caller) knows nothing of the lock.  Internal
 * (rlk__ prefix, not installed).
 */
#ifndef RESPLOCK_LOCK_H
#define RESPLOCK_LOCK_H

#include <stdint.h>

#include "core.h"
#include "host.h"
#include "renewer.h"
#include "resplock.h"

typedef struct rlk__locks rlk__locks;

/* A lock's holder facts ("h=HOST;p=PID;t=MS;c=CMD", percent-encoded,
 * after "k=f;" for a fair lock):
 * their longest, with the NUL; and a simple lock's token with them
 * ("rlk:", 32 hex digits, ';', the facts). */
#define RLK__FACTS_MAX 188
#define RLK__TOKEN_MAX (37 + RLK__FACTS_MAX)

/* Reads the facts f (len bytes, a "+w" mark at the end ignored) into
 * st's host, pid, since_ms and cmd; has_facts set when one was found. */
void rlk__facts_read(rlk_lock_status *st, const char *f, size_t len);

/* The result of a call without a handle (status, release or extend by
 * token), given to its callback once. */
typedef struct rlk__session_result {
    /* rlk_lock_get_status's, rlk_release_token's or rlk_extend_token's
     * statuses: RLK_OK, RLK_LOCK_NOT_HELD, RLK_LOCK_NOT_OWNER,
     * RLK_ERR_SERVER, RLK_ERR_PROTO, RLK_ERR_CLOSED, RLK_ERR_NOMEM (a
     * NOSCRIPT's EVAL could not be queued: the session is broken); the
     * message in rlk_session_errmsg. */
    int status;
    rlk_lock_status lock;    /* rlk__session_status's, on RLK_OK */
    int64_t ttl_ms_after;    /* rlk__session_extend_token's, on RLK_OK */
} rlk__session_result;

typedef void (*rlk__session_call_cb)(void *ctx, rlk_session *s, const rlk__session_result *res);


/* Locks over host's connections (they join it: its cores' events, its
 * routed requests), their leases renewed by renewer's rounds (joined to
 * the same host; renewer.h), with cfg's timing and callback (its
 * connection fields are the cores' and not read); owner is what the
 * callbacks get as their rlk_session.  NULL when out of memory or random
 * bytes. */
rlk__locks *rlk__locks_new(rlk__host *host, rlk__renewer *renewer, const rlk_session_config *cfg,
                           void *owner);
/* Locks over one core that serves every slot, with a host and a renewer
 * of their own over it (freed with them): for a caller that turns one
 * core and has no other primitive on it. */
rlk__locks *rlk__locks_new_on(rlk__core *core, const rlk_session_config *cfg, void *owner);
/* Frees the handles and calls (no event), parting from the host; the
 * host and the cores stay. */
void rlk__locks_free(rlk__locks *s);

/* msg becomes rlk__locks_errmsg's (a core failure before any hook). */
void rlk__locks_note(rlk__locks *s, const char *msg);

const char *rlk__locks_errmsg(const rlk__locks *s);
/* The class of the server error behind the last failure recorded in
 * errmsg, when it was RLK_ERR_SERVER from an error reply (LOADING,
 * BUSY, OOM, NOPERM...); RLK_EC_NONE for any other failure. */
rlk_error_class rlk__locks_errclass(const rlk__locks *s);
const char *rlk__locks_wait_note(const rlk__locks *s);

rlk_session_lock *rlk__locks_acquire(rlk__locks *s, const char *name, const rlk_lock_options *o,
                                     void *user, int64_t now);
/* As rlk__locks_acquire, a simple lock's token given (NULL, or one of
 * RLK__TOKEN_MAX bytes or more: drawn as usual): Redlock's, the same on
 * every server. */
rlk_session_lock *rlk__locks_acquire_as(rlk__locks *s, const char *name, const rlk_lock_options *o,
                                        const char *token, void *user, int64_t now);
int rlk__locks_check_acquire(rlk__locks *s, const char *name, const rlk_lock_options *o);
/* How long each WAIT of a lock acquired with o waits: its
 * replicas_timeout_ms, or a tenth of its TTL, at most 1000 ms, at least 1
 * (WAIT's 0 waits for ever); 0 when it asks for no replicas. */
int64_t rlk__locks_acks_ms(const rlk_lock_options *o);
void rlk__locks_forget(rlk_session_lock *l, int64_t now);
int rlk__locks_status(rlk__locks *s, const char *name, rlk__session_call_cb cb, void *ctx,
                      int64_t now);
int rlk__locks_release_token(rlk__locks *s, const char *name, const char *token,
                             rlk__session_call_cb cb, void *ctx, int64_t now);
int rlk__locks_extend_token(rlk__locks *s, const char *name, const char *token, int64_t ms,
                            int how, rlk__session_call_cb cb, void *ctx, int64_t now);
const char *rlk__locks_handoff_channel(const rlk__locks *s);
void rlk__locks_set_listener(rlk__locks *s, int on);
int rlk__locks_message(rlk__locks *s, const rlk_resp_value *msg, int64_t now);

#endif
