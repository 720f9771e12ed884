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

#endif
