-- SPDX-License-Identifier: BSD-3-Clause
-- Renews many locks in one call: the watchdog's round.
--
-- KEYS: the locks, all in one hash slot.
-- ARGV: the kinds, one letter per key ('s' or 'r'), then for each key
--       its token (or hash field) and its ttl.
-- Returns per key 1 renewed, -1 not held, -2 held by someone else.
--
-- The simple locks' values come in one MGET (a key of another type
-- reads as nil there), so that a renewed simple lock costs one more
-- call, its PEXPIRE; EXISTS only tells a vanished lock from a taken one.
-- A reentrant lock's expiry never shortens: another hold of the same
-- holder may rely on a longer one.
--
-- Function flags: allow-oom
-- (It only sets expiries: the watchdog keeps its locks at maxmemory.)
--
-- Try it:  redis-cli --eval renew.lua job , s tok1 30000
local vals = redis.call('mget', unpack(KEYS))
local kinds, out = ARGV[1], {}
for i = 1, #KEYS do
  local k, tok, ttl = KEYS[i], ARGV[2 * i], ARGV[2 * i + 1]
  if string.byte(kinds, i) == 115 then -- 's'
    if vals[i] == tok or vals[i] == tok .. '+w' then -- '+w': waiters' mark
      redis.call('pexpire', k, ttl)
      out[i] = 1
    end
  elseif redis.pcall('hexists', k, tok) == 1 then
    if redis.call('pttl', k) < tonumber(ttl) then redis.call('pexpire', k, ttl) end
    out[i] = 1
  end
  if not out[i] then
    out[i] = redis.call('exists', k) == 0 and -1 or -2
  end
end
return out
