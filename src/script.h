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

struct rlk__cmd;

/*
 * The head words of a call of script s with nkeys keys that is sent now
 * and answered later (a deferred reply, rlk__conn_send_deferred_cmds):
 * FCALL of its function where this connection is already known to run
 * the library, else EVALSHA; with whole, EVAL of its text, for a call
 * after one that found the script missing, since a reply read later
 * cannot be retried.  Never waits for the server.  digits (12 bytes)
 * holds the key count and must live as long as q.
 */
void rlk__script_deferred_head(rlk_conn *c, const rlk_script *s, int nkeys, int whole,
                               struct rlk__cmd *q, char *digits);

/* Whether a script call's reply says the script or the library was not
 * there (NOSCRIPT, "Function not found"). */
int rlk__script_missing(const rlk_resp_value *v);

#endif
