-- SPDX-License-Identifier: BSD-3-Clause
-- What a semaphore in redis-semaphore's layout looks like now (see
-- sem_rs_acquire.lua): its members whose score is less than lockTimeout
-- old, on the server's clock, a holder's members TOKEN_0 .. TOKEN_n
-- counted as one holder of n + 1 permits.
--
-- KEYS: the sorted set.
-- ARGV: lockTimeout (ms).
-- Returns {kind (0 none, 1 a semaphore, 2 something else), 0, 0, 0,
-- holders...}, each holder as five values: its identifier, k, ms left
-- (until an acquire prunes it), age (ms since its last acquire or
-- refresh), '' (the shape of sem_status.lua's reply: no size, fence,
-- line or facts are kept in this layout).
--
-- Function flags: no-writes
-- (It writes nothing: it runs at maxmemory and on a read-only replica.)
--
-- Try it:  redis-cli --eval sem_rs_status.lua 'semaphore:db' , 10000
local key, lt = KEYS[1], tonumber(ARGV[1])
if not (lt and lt >= 1) then
  return redis.error_reply('ERR resplock sem: lockTimeout must be a positive integer')
end
local t = redis.call('type', key)['ok']
if t == 'none' then return {0, 0, 0, 0} end
if t ~= 'zset' then return {2, 0, 0, 0} end
local tm = redis.call('time')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local all = redis.call('zrangebyscore', key, '(' .. (now - lt), '+inf', 'withscores')
local out, at = {1, 0, 0, 0}, {}
for i = 1, #all, 2 do
  local m, sc = all[i], tonumber(all[i + 1])
  local id = string.match(m, '^(.*)_%d+$') or m
  local left, age = math.floor(sc + lt - now), math.floor(now - sc)
  local j = at[id]
  if not j then
    j = #out + 1
    at[id] = j
    out[j], out[j + 1], out[j + 2], out[j + 3], out[j + 4] = id, 0, left, age, ''
  end
  out[j + 1] = out[j + 1] + 1
  if left < out[j + 2] then out[j + 2] = left end
  if age > out[j + 3] then out[j + 3] = age end
end
return out
