/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the script layer (script.c) keeps with each connection: the
 * server's facts, and whether the library of the embedded scripts runs
 * there as FUNCTIONs.
 */
#ifndef RESPLOCK_SCRIPT_H
#define RESPLOCK_SCRIPT_H

#include <stdint.h>

#include "resplock.h"
#include "serverinfo.h"

typedef struct rlk__script_state {
    rlk__server server;     /* rlk__server_detect's cache */
    /* FCALL refused on this connection generation (unknown command,
     * ACL, FUNCTION LOAD refused): EVALSHA until a reconnect. */
    uint64_t refused_generation;
    int refused;
} rlk__script_state;

/* c's state, zero when c was made (conn.c keeps it). */
rlk__script_state *rlk__conn_script_state(rlk_conn *c);

/*
 * The facts of the server c is connected to, connecting first if it is
 * not (as rlk_conn_command does).  *s is the caller's cache for c, zeroed
 * before the first call: while c stays on the same connection
 * (generation), it is returned as it is, without a round trip; after a
 * reconnect, which may have reached another server (a failover), the
 * facts are gathered again: from what HELLO told, or else with one INFO
 * server command, which ends the validity of the replies of c's previous
 * call.  On failure *s is unknown with no capability (and not cached).
 * Returns RLK_OK, or a status of rlk_conn_command (RLK_ERR_INVALID on a
 * RESP2 connection that subscribed).  The owner's thread.
 */
int rlk__server_detect(rlk_conn *c, rlk__server *s);

/* How a call of a script goes. */
enum { RLK__CALL_EVALSHA, RLK__CALL_EVAL, RLK__CALL_FCALL };

/* Added to how where the server reads script flags (RLK_CAP_SCRIPT_FLAGS):
 * EVAL and EVALSHA of an embedded script with flags send (or name) its
 * text with them, so that the server admits the call where it admits
 * the script's function (allow-oom: at maxmemory). */
#define RLK__CALL_FLAGS 0x10

/*
 * The three head words of a call of script s with nkeys keys, into w and
 * wl: how RLK__CALL_FCALL, FCALL of its function when s is one of the
 * embedded scripts (lua.h), else EVALSHA; RLK__CALL_EVALSHA; or
 * RLK__CALL_EVAL of its text; either plus RLK__CALL_FLAGS.  digits (12
 * bytes) holds the key count and must live as long as the words.
 * Returns how the call goes (without RLK__CALL_FLAGS).  For the
 * script layer here and the session (session.c), which has no rlk_conn.
 */
int rlk__script_head(const rlk_script *s, int how, int nkeys, const char **w, size_t *wl,
                     char *digits);

/* What an FCALL answered with error v calls for: 0, nothing (the error
 * is the call's result); RLK__FCALL_MISSING, the library is not loaded
 * ("Function not found"); RLK__FCALL_UNUSABLE, FCALL is refused to this
 * connection (an unknown command, an ACL without it): EVALSHA from now;
 * RLK__FCALL_REFUSED, refused before it ran (an ACL on a key, or writes
 * stopped: maxmemory, a replica), which EVAL meets only at its first
 * write, if it makes one. */
enum { RLK__FCALL_MISSING = 1, RLK__FCALL_UNUSABLE, RLK__FCALL_REFUSED };
int rlk__fcall_error(const rlk_resp_value *v);

/* Whether FUNCTION LOAD's reply v leaves the library loaded (loaded, or
 * there already). */
int rlk__library_loaded(const rlk_resp_value *v);

/* Whether error v refuses a write for a state the server is in (OOM,
 * MISCONF, NOREPLICAS, READONLY, MASTERDOWN): it may pass later. */
int rlk__state_refused(const rlk_resp_value *v);

#endif
