/* SPDX-License-Identifier: BSD-3-Clause */
/* What the layers above the connection may use of its insides. */
#ifndef RESPLOCK_CONN_INTERNAL_H
#define RESPLOCK_CONN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "resplock.h"
#include "reply.h"
#include "scriptlib.h"
#include "serverinfo.h"

/* What the script layer (script.c) keeps with each connection: the
 * server's facts, the script library it was given, and whether that
 * library runs there as FUNCTIONs. */
typedef struct rlk__script_state {
    rlk__server server;     /* rlk__server_detect's cache */
    const rlk__script_library *library; /* NULL: every script as EVALSHA */
    /* FCALL refused on this connection generation (unknown command,
     * ACL, FUNCTION LOAD refused): EVALSHA until a reconnect. */
    uint64_t refused_generation;
    int refused;
} rlk__script_state;

/* c's state, zero when c was made. */
rlk__script_state *rlk__conn_script_state(rlk_conn *c);

/* Gives c a script library (scriptlib.h; it outlives c): a call of one of
 * its scripts by rlk_conn_eval or rlk_conn_pipeline goes as FCALL of its
 * function where the server has FUNCTIONs, loading the library when it
 * is missing.  NULL (as made): every script goes as EVALSHA. */
void rlk__conn_set_library(rlk_conn *c, const rlk__script_library *lib);

/* Records a failure message on the connection and returns status. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int rlk__conn_fail(rlk_conn *c, int status, const char *fmt, ...);

/* A command whose words are head[0..nhead) (nhead 0..3), then
 * argv[0..argc) (argvlen NULL: strlen): a layer above puts its own words
 * in front of its caller's arguments without copying them. */
typedef struct rlk__cmd {
    int nhead;
    const char *head[3];
    size_t headlen[3];
    int argc;
    const char *const *argv;
    const size_t *argvlen;
} rlk__cmd;

/* rlk_conn_command for a command given as an rlk__cmd. */
int rlk__conn_command(rlk_conn *c, rlk_resp_value **reply, const rlk__cmd *cmd);

/* Sends n commands in one pipeline and reads their n replies into
 * replies[0..n), writing and reading overlapped, within one command
 * timeout for the whole pipeline (and the cap).  The replies are copies,
 * valid until the next call on c.  With more set, the pipeline goes on
 * from the one just run on c, as part of the same call: no reconnect, and
 * the earlier replies stay valid (RLK_ERR_CLOSED when there is none to go
 * on with).  Statuses of rlk_conn_pipeline, without RLK_ERR_SERVER;
 * RLK_ERR_INVALID for an empty or refused command (nothing was sent). */
int rlk__conn_pipeline(rlk_conn *c, size_t n, const rlk__cmd *cmds, rlk_resp_value **replies,
                       int more);

/* Makes sure c is connected, as a command would before sending: a
 * closed connection is re-established unless reconnecting is off.
 * RLK_OK, or a status of rlk_conn_command's reconnect. */
int rlk__conn_ensure(rlk_conn *c);

/* Every call on c ends by this absolute CLOCK_MONOTONIC deadline (ms) as
 * well as by its own timeout: connect and handshake, reconnect (no
 * backoff pause past it), command, pipeline, subscribe/unsubscribe,
 * wait_push (which returns 0 at the cap without closing).  -1 removes
 * the cap.  A call that reaches it fails as a timeout does:
 * RLK_ERR_TIMEOUT, connection closed. */
void rlk__conn_cap(rlk_conn *c, int64_t deadline);

/* Caps c at one command timeout from start (rlk__now_ms()), unless its
 * cap comes sooner, and returns the cap it had, for rlk__conn_cap to put
 * back: several commands that make one call share one deadline. */
int64_t rlk__conn_narrow(rlk_conn *c, int64_t start);

#endif
