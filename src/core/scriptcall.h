/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Script calls' words and replies, with no connection (scriptcall.c):
 * below the request core, which sends every script call with them, and
 * the blocking script layer (script.h).
 */
#ifndef RESPLOCK_SCRIPTCALL_H
#define RESPLOCK_SCRIPTCALL_H

#include <stddef.h>

#include "resplock.h"
#include "scriptlib.h"

/* The word FCALL as rlk__script_head writes it (a head that points here
 * is an FCALL). */
extern const char rlk__FCALL[];

/* How a call of a script goes. */
enum { RLK__CALL_EVALSHA, RLK__CALL_EVAL, RLK__CALL_FCALL };

/* Added to how where the server reads script flags (RLK_CAP_SCRIPT_FLAGS):
 * EVAL and EVALSHA of an embedded script with flags send (or name) its
 * text with them, so that the server admits the call where it admits
 * the script's function (allow-oom: at maxmemory). */
#define RLK__CALL_FLAGS 0x10

/*
 * The three head words of a call of script s with nkeys keys, into w and
 * wl: how RLK__CALL_FCALL, FCALL of its function when s is one of lib's
 * scripts (lib may be NULL: none), else EVALSHA; RLK__CALL_EVALSHA; or
 * RLK__CALL_EVAL of its text; either plus RLK__CALL_FLAGS (a script of
 * lib with flags then goes with its flagged text).  digits (12
 * bytes) holds the key count and must live as long as the words.
 * Returns how the call goes (without RLK__CALL_FLAGS).  For the
 * blocking script layer (script.c) and the request core (core.c).
 */
int rlk__script_head(const rlk__script_library *lib, const rlk_script *s, int how, int nkeys,
                     const char **w, size_t *wl, char *digits);

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
