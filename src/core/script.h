/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The blocking script layer (script.c), over rlk_conn: the server's
 * facts over a connection.  What it keeps with each connection is
 * rlk__script_state (conn_internal.h).
 */
#ifndef RESPLOCK_SCRIPT_H
#define RESPLOCK_SCRIPT_H

#include <stdint.h>

#include "conn_internal.h"
#include "resplock.h"
#include "scriptcall.h"
#include "serverinfo.h"

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

#endif
