-- SPDX-License-Identifier: BSD-3-Clause
-- What a semaphore looks like now (see sem_acquire.lua for the layout):
-- its holders whose EXPIRY has not passed, its waiters whose place has
-- not lapsed.
--
-- KEYS: state, line.
-- Returns {kind (0 none, 1 a semaphore, 2 something else), size, fence,
-- waiters, holders...}, each holder as five values: token, k, ms left,
-- fence, facts.
--
-- Function flags: no-writes
-- (It writes nothing: it runs at maxmemory and on a read-only replica.)
--
-- Try it:  redis-cli --eval sem_status.lua 'resplock:sem:{db}' 'resplock:sem:{db}:line'
local state, line = KEYS[1], KEYS[2]
local ts, tl = redis.call('type', state)['ok'], redis.call('type', line)['ok']
if (ts ~= 'none' and ts ~= 'hash') or (tl ~= 'none' and tl ~= 'zset') then return {2, 0, 0, 0} end
if ts == 'none' then return {0, 0, 0, 0} end
local tm = redis.call('time')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local out = {1, tonumber(redis.call('hget', state, 'size')) or 0,
             tonumber(redis.call('hget', state, 'fence')) or 0, 0}
local all = redis.call('hgetall', state)
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  local p, id = string.sub(f, 1, 2), string.sub(f, 3)
  if p == 'h:' then
    local hk, hf, he = string.match(v, '^(%d+) (%d+) (%d+)$')
    if he and tonumber(he) > now then
      out[#out + 1] = id
      out[#out + 1] = tonumber(hk)
      out[#out + 1] = tonumber(he) - now
      out[#out + 1] = tonumber(hf)
      out[#out + 1] = redis.call('hget', state, 'f:' .. id) or ''
    end
  elseif p == 'w:' then
    local wl = tonumber(string.match(v, '^%d+ (%d+)$'))
    if wl and wl > now then out[4] = out[4] + 1 end
  end
end
return out
