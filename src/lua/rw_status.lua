-- SPDX-License-Identifier: BSD-3-Clause
-- What a read-write lock looks like now (see rw_acquire.lua for the
-- layout): its holds whose EXPIRY has not passed, its waiters whose
-- place has not lapsed.
--
-- KEYS: state, line.
-- Returns {kind (0 none, 1 a read-write lock, 2 something else), fence,
-- waiters, waiting writers, holds...}, each hold as five values: TOKEN:N,
-- mode (1 read, 2 write), ms left, fence, facts.
--
-- Function flags: no-writes
-- (It writes nothing: it runs at maxmemory and on a read-only replica.)
--
-- Try it:  redis-cli --eval rw_status.lua 'resplock:rw:{db}' 'resplock:rw:{db}:line'
local state, line = KEYS[1], KEYS[2]
local ts, tl = redis.call('type', state)['ok'], redis.call('type', line)['ok']
if (ts ~= 'none' and ts ~= 'hash') or (tl ~= 'none' and tl ~= 'zset') then return {2, 0, 0, 0} end
if ts == 'none' then return {0, 0, 0, 0} end
local tm = redis.call('time')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local out = {1, tonumber(redis.call('hget', state, 'fence')) or 0, 0, 0}
local all = redis.call('hgetall', state)
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  local p, id = string.sub(f, 1, 2), string.sub(f, 3)
  if p == 'h:' then
    local hm, hf, he = string.match(v, '^(%d) (%d+) (%d+)$')
    if he and tonumber(he) > now then
      out[#out + 1] = id
      out[#out + 1] = tonumber(hm)
      out[#out + 1] = tonumber(he) - now
      out[#out + 1] = tonumber(hf)
      out[#out + 1] = redis.call('hget', state, 'f:' .. id) or ''
    end
  elseif p == 'q:' then
    local wm, wl = string.match(v, '^(%d) (%d+)$')
    if wl and tonumber(wl) > now then
      out[3] = out[3] + 1
      if wm == '2' then out[4] = out[4] + 1 end
    end
  end
end
return out
