/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The server-side scripts, from src/lua/NAME.lua, embedded at build time
 * (scripts/embed-lua).  Every script names its keys and arguments in
 * locals at its top, the lock's keys in one order that all share: the lock,
 * its queue, its waiters, a tombstone (rate.lua has one key, its
 * limiter's).  Each runs alone with
 * `redis-cli --eval src/lua/NAME.lua KEYS , ARGV` (see its header).
 */
#ifndef RESPLOCK_LUA_H
#define RESPLOCK_LUA_H

#include <stddef.h>

#include "scriptlib.h"

extern const char *const rlk__lua_acquire;
extern const char *const rlk__lua_release;
extern const char *const rlk__lua_extend;
extern const char *const rlk__lua_renew;
extern const char *const rlk__lua_status;
extern const char *const rlk__lua_rate;     /* the rate limiter's decision */
extern const char *const rlk__lua_sem_acquire; /* the semaphore's (sem.c) */
extern const char *const rlk__lua_sem_release;
extern const char *const rlk__lua_sem_status;
extern const char *const rlk__lua_sem_rs_acquire; /* redis-semaphore's layout */
extern const char *const rlk__lua_sem_rs_release;
extern const char *const rlk__lua_sem_rs_status;
extern const char *const rlk__lua_rw_acquire; /* the read-write lock's (rw.c) */
extern const char *const rlk__lua_rw_release;
extern const char *const rlk__lua_rw_status;

/*
 * The same scripts as one FUNCTION library for Redis 7+ (the core runs
 * them with FCALL there when given it: rlk__core_config.library,
 * rlk__conn_set_library): "#!lua name=resplock_H", and for each script a
 * function resplock_H_NAME with the script's code as its body.  H is the
 * first 12 hex digits of the SHA1 of the library written with an empty
 * H, so that clients whose scripts differ never call each other's code.
 * Its parts hold the scripts by reference, so that the binary holds each
 * script once (a static build stays small).
 */
extern const rlk__script_library rlk__lua_library;

#endif
