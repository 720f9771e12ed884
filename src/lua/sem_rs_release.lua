-- SPDX-License-Identifier: BSD-3-Clause
-- Gives a holder's permits back, or sets how long they last, in
-- redis-semaphore's layout (see sem_rs_acquire.lua).
--
-- KEYS: the sorted set.
-- ARGV: token, k, lockTimeout (ms), mode: 'r' give the permits back
--       (ZREM, as redis-semaphore's release), 'e' have them expire ms
--       from the server's now (then ms, 1..lockTimeout: the score
--       becomes now + ms - lockTimeout, which every acquire prunes at
--       now + ms).
-- Returns 1 (given back, set), 0 (not held: pruned, or its score
-- lockTimeout old), -1 (no semaphore there).
--
-- Function flags: allow-oom
-- (It deletes, or rewrites a score in place: a release must work at
-- maxmemory, and so must the end of a run's --hold-min.)
--
-- Try it:  redis-cli --eval sem_rs_release.lua 'semaphore:db' , tok1 1 10000 r
local key = KEYS[1]
local tok, k, lt, mode = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]

if redis.call('type', key)['ok'] ~= 'zset' then return -1 end
local first = k == 1 and tok or tok .. '_0'
local tm = redis.call('time')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local sc = tonumber(redis.call('zscore', key, first))
local live = sc ~= nil and sc > now - lt
local members = {}
for i = 0, k - 1 do members[#members + 1] = k == 1 and tok or tok .. '_' .. i end
if mode == 'e' then
  local ms = tonumber(ARGV[5])
  if not (ms and ms >= 1 and ms <= lt and ms == math.floor(ms)) then
    return redis.error_reply('ERR resplock sem: ms must be an integer 1..lockTimeout')
  end
  -- A holder already expired may have been counted out: not given more.
  if not live then return 0 end
  local args = {}
  for _, m in ipairs(members) do
    args[#args + 1] = now + ms - lt
    args[#args + 1] = m
  end
  redis.call('zadd', key, unpack(args))
  if redis.call('pttl', key) < ms then redis.call('pexpire', key, ms) end
  return 1
end
redis.call('zrem', key, unpack(members))
return live and 1 or 0
