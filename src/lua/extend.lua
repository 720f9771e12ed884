-- SPDX-License-Identifier: BSD-3-Clause
-- Extends a lock if this holder still holds it.
--
-- KEYS: lock.
-- ARGV: token (or a reentrant lock's hash field), ms, how ('set': the
--       TTL becomes ms; 'add': ms more than is left), kind ('s' or 'r'),
--       and in a reentrant lock's handoff confirmation its holder facts,
--       written to the field rlk:holder (the handoff could not carry
--       them) when it has none.
-- Returns the new TTL, or -1 not held, -2 held by someone else.  A
-- reentrant lock's expiry never shortens: other holds may rely on it.
--
-- Function flags: allow-oom
-- (It only sets an expiry: it runs at maxmemory, where a lock held must
-- still be kept, and a handoff's confirmation made.)
--
-- Try it:  redis-cli --eval extend.lua job , tok1 30000 set s
local lock = KEYS[1]
local token, ms, how, kind, facts = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]

local t = redis.call('type', lock)['ok']
if t == 'none' then return -1 end
local mine
if kind == 's' then
  -- The value, or with the waiters' mark (see acquire.lua).
  local v = t == 'string' and redis.call('get', lock)
  mine = v == token or v == token .. '+w'
else
  mine = t == 'hash' and redis.call('hexists', lock, token) == 1
end
if not mine then return -2 end
if facts and kind == 'r' then redis.call('hsetnx', lock, 'rlk:holder', facts) end
local left = redis.call('pttl', lock)
if how == 'add' then
  if left > 0 then ms = ms + left end
elseif kind == 'r' and left > ms then
  ms = left
end
redis.call('pexpire', lock, ms)
return ms
