-- SPDX-License-Identifier: BSD-3-Clause
-- What a lock looks like now.
--
-- KEYS: lock, queue, waiters.
-- Returns {held, type, pttl, holds, waiters in line (places not lapsed),
-- the holder's facts ('' when none: see acquire.lua), not a lock (0, or
-- 1 neither a string nor a hash, 2 no TTL, 3 a hash of other than hold
-- counts, as acquire.lua tells)}.
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
if t == 'none' then return {0, t, -2, 0, w, '', 0} end
local pt = redis.call('pttl', lock)
local holds, facts, bad = 0, '', 0
if t == 'hash' then
  -- A lock's hash holds one holder's count (and its facts): more
  -- fields are another layout, not read.
  if redis.call('hlen', lock) > 16 then bad = 3 else
    local kv = redis.call('hgetall', lock)
    for i = 1, #kv, 2 do
      if kv[i] == 'rlk:holder' then facts = kv[i + 1]
      elseif string.match(kv[i + 1], '^%d+$') then holds = holds + tonumber(kv[i + 1])
      else bad = 3 end
    end
  end
elseif t == 'string' then
  -- The facts after resplock's token: "rlk:", 32 hex digits, ';'.
  facts = string.match(redis.call('getrange', lock, 0, 299), '^rlk:%x+;(.*)$') or ''
else
  bad = 1
end
if bad == 0 and pt == -1 then bad = 2 end
return {1, t, pt, holds, w, facts, bad}
