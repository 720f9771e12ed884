/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The session's calls that need no handle (session.c), for the tests and
 * the fuzz harness, which drive a session alone (the client calls the
 * lock's own, lock.h): a lock's status, and a release or an extend by
 * token.
 * Each queues one script call (FCALL or EVALSHA as the session's others,
 * EVAL once after NOSCRIPT, "Function not found" or a refused FCALL) with
 * the command timeout for its reply, and reports its result once, by
 * cb, from rlk_session_feed (the reply) or rlk_session_closed
 * (RLK_ERR_CLOSED: the reply will not come), never from the call
 * itself; rlk_session_free drops the calls under way without a word.
 * cb may call the session as an event callback may.  Each returns
 * RLK_OK (the call is queued), RLK_ERR_INVALID (an empty name or token,
 * ms < 1, an unknown how), RLK_ERR_CLOSED (the session is not ready), or
 * RLK_ERR_NOMEM (when the request could not be queued the session is
 * broken, as after a failed feed).
 */
#ifndef RESPLOCK_SESSION_INTERNAL_H
#define RESPLOCK_SESSION_INTERNAL_H

#include <stdint.h>

#include "lock.h"
#include "resplock.h"

/* What the server holds at NAME (as rlk_lock_get_status). */
int rlk__session_status(rlk_session *s, const char *name, rlk__session_call_cb cb, void *ctx,
                        int64_t now);

/* Releases the simple lock NAME if it holds token (as rlk_release_token:
 * a release that knows no validity). */
int rlk__session_release_token(rlk_session *s, const char *name, const char *token,
                               rlk__session_call_cb cb, void *ctx, int64_t now);

/* Extends the simple lock NAME if it holds token (as rlk_extend_token,
 * how RLK_EXTEND_ADD or RLK_EXTEND_SET). */
int rlk__session_extend_token(rlk_session *s, const char *name, const char *token, int64_t ms,
                              int how, rlk__session_call_cb cb, void *ctx, int64_t now);

/* What the handshake of the current connection learned: the protocol
 * (0 before it is done), the server, its version, the client id, the
 * user and db.  peer and the TLS fields are left empty: the driver
 * knows them. */
const rlk_conn_info *rlk__session_info(const rlk_session *s);

/* The channel the session's handoffs are published on (a RESP2 listener
 * of the caller's own subscribes to it: the tests' view of it). */
const char *rlk__session_handoff_channel(const rlk_session *s);

/* A session whose host follows MOVED, ASK, TRYAGAIN and CLUSTERDOWN as
 * over a cluster, every node a redirect names being its one server: the
 * fuzz harness's, so that it reaches the host's redirect paths. */
rlk_session *rlk__session_new_routed(const rlk_session_config *cfg);

/* Bytes fed and not read yet (the start of a reply still incomplete):
 * the fuzz harness's. */
size_t rlk__session_buffered(const rlk_session *s);

#endif
