/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The server-side scripts, from src/lua/NAME.lua, embedded at build time
 * (scripts/embed-lua).  Every script names its keys and arguments in
 * locals at its top, keys in one order that all share: the lock, its
 * queue, its waiters, a tombstone.  Each runs alone with
 * `redis-cli --eval src/lua/NAME.lua KEYS , ARGV` (see its header).
 */
#ifndef RESPLOCK_LUA_H
#define RESPLOCK_LUA_H

#include <stddef.h>

extern const char *const rlk__lua_acquire;
extern const char *const rlk__lua_release;
extern const char *const rlk__lua_extend;
extern const char *const rlk__lua_renew;
extern const char *const rlk__lua_status;

/*
 * The same scripts as one FUNCTION library for Redis 7+ (script.c runs
 * them with FCALL there): "#!lua name=resplock_H", and for each script a
 * function resplock_H_NAME with the script's code as its body.  H is the
 * first 12 hex digits of the SHA1 of the library written with an empty
 * H, so that clients whose scripts differ never call each other's code.
 */
extern const char rlk__lua_library_name[];   /* "resplock_H" */
/* Its text in parts, the scripts by reference, so that the binary holds
 * each script once (a static build stays small). */
extern const char *const rlk__lua_library_parts[];
extern const size_t rlk__lua_library_nparts;

/* The library's text, assembled from its parts into memory the caller
 * frees (rlk__free), *len its length; NULL when out of memory. */
char *rlk__lua_library_text(size_t *len);

typedef struct rlk__lua_function {
    const char *text;   /* one of the scripts above */
    size_t len;
    const char *name;   /* its function: "resplock_H_NAME" */
    /* A script whose header gives flags ("-- Function flags: ..."): its
     * text for EVAL where the server reads them (RLK_CAP_SCRIPT_FLAGS),
     * the line "#!lua flags=..." and then text, and that text's SHA1.
     * Older servers fail on that line.  NULL for a script without. */
    const char *flagged;
    size_t flagged_len;
    const char *flagged_sha1;
} rlk__lua_function;

extern const rlk__lua_function rlk__lua_functions[];
extern const size_t rlk__lua_nfunctions;

#endif
