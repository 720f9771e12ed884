/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The session's calls that need no handle (session.c), for the blocking
 * API's wrappers: a lock's status, and a release or an extend by token.
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

/* The checks of rlk_session_acquire's arguments (name, kind, holder, a
 * TTL with validity left after the drift allowance): RLK_OK, or
 * RLK_ERR_INVALID with the reason in the session's message. */
int rlk__session_check_acquire(rlk_session *s, const char *name, const rlk_lock_options *o);

/* Lets a held lock go without releasing it (rlk_lock_forget): no event,
 * no renewal any more; it runs out on the server by its TTL.  A handle
 * with a request under way goes on to its end unheard instead (its
 * events are not given: the callback sees user NULL). */
void rlk__session_forget(rlk_session_lock *l, int64_t now);

/* What the handshake of the current connection learned: the protocol
 * (0 before it is done), the server, its version, the client id, the
 * user and db.  peer and the TLS fields are left empty: the driver
 * knows them. */
const rlk_conn_info *rlk__session_info(const rlk_session *s);

/*
 * RESP2 waiting with a listener: one RESP2 connection cannot both
 * subscribe and send, so a caller that wants waiters woken by releases
 * and handed locks (as under RESP3) subscribes a connection of its own
 * to the session's handoff channel and to the release channels of the
 * locks waited for, turns the listener on, and relays each message it
 * gets by rlk__session_message (which may queue requests, and give
 * events as rlk_session_feed does: RLK_OK, or a failure of the session).
 * While it is on, a simple lock's wait starts in line.  Off: RESP2
 * waiters poll.  Under RESP3 it changes nothing.
 */
const char *rlk__session_handoff_channel(const rlk_session *s);
void rlk__session_set_listener(rlk_session *s, int on);
int rlk__session_message(rlk_session *s, const rlk_resp_value *msg, int64_t now);

/* Bytes fed and not read yet (the start of a reply still incomplete):
 * the fuzz harness's. */
size_t rlk__session_buffered(const rlk_session *s);

#endif
