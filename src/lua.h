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

extern const char rlk__lua_acquire[];
extern const char rlk__lua_release[];
extern const char rlk__lua_extend[];
extern const char rlk__lua_renew[];
extern const char rlk__lua_status[];

#endif
