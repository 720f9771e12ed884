-- SPDX-License-Identifier: BSD-3-Clause
-- What a lock looks like now.
--
-- KEYS: lock, queue, waiters.
-- Returns {held, type, pttl, holds, waiters in line (places not lapsed)}.
--
-- Function flags: no-writes
-- (It writes nothing: it runs at maxmemory and on a read-only replica
-- too, as a function and as EVAL.)
--
-- Try it:  redis-cli --eval status.lua job {job}:queue {job}:waiters
local lock, queue, waiters = KEYS[1], KEYS[2], KEYS[3]

local t = redis.call('type', lock)['ok']
local w = 0
if redis.call('exists', waiters) == 1 then
  local tm = redis.call('time')
  local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
  for _, e in ipairs(redis.call('hvals', waiters)) do
    local exp = tonumber(string.match(e, '^(%d+) '))
    if exp and exp > now then w = w + 1 end
  end
end
if t == 'none' then return {0, t, -2, 0, w} end
local holds = 0
if t == 'hash' then
  for _, v in ipairs(redis.call('hvals', lock)) do holds = holds + (tonumber(v) or 0) end
end
return {1, t, redis.call('pttl', lock), holds, w}
