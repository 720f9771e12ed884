-- SPDX-License-Identifier: BSD-3-Clause
-- One try of a semaphore's acquire in redis-semaphore's layout (npm
-- redis-semaphore 5.x), so that resplock and its Semaphore and
-- MultiSemaphore share a name:
--   semaphore:NAME  sorted set: one member per permit held, scored by
--       the ms time of its holder's last acquire or refresh; a holder of
--       one permit is the member TOKEN, a holder of k > 1 the members
--       TOKEN_0 .. TOKEN_(k-1).  The key's expiry is lockTimeout from
--       the last write.
-- A member whose score is lockTimeout old or more is expired: every
-- acquire prunes those first.  redis-semaphore scores with its client's
-- clock (Date.now()); resplock with the server's (TIME here), so the
-- layout is only as safe as those clocks agree.  No size is kept (each
-- holder's limit is its own), no line, no channel: waiters poll.
--
-- KEYS: the sorted set.
-- ARGV: limit (the semaphore's size), k, lockTimeout (ms), token.
-- Returns {1, 0, used, limit} when the holder has its k permits (also
-- when it had them already: a try sent again), else {0, 0, used, limit}
-- (the shape of sem_acquire.lua's reply; fence 0: this layout has none).
-- An error when the arguments are not numbers or the key holds something
-- else.
--
-- No function flags: an acquire may grow the data.
--
-- Try it:  redis-cli --eval sem_rs_acquire.lua 'semaphore:db' , 3 1 10000 tok1
local key = KEYS[1]
local limit, k, lt, tok = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]

local function whole(x)
  return x and x == math.floor(x) and x >= 1 and x < 2^53
end
if not (whole(limit) and whole(k) and whole(lt)) or k > limit then
  return redis.error_reply('ERR resplock sem: limit, k, lockTimeout must be positive integers, k <= limit')
end
local t = redis.call('type', key)['ok']
if t ~= 'none' and t ~= 'zset' then
  return redis.error_reply('WRONGTYPE resplock sem: the key holds no semaphore')
end
local tm = redis.call('time')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
redis.call('zremrangebyscore', key, '-inf', now - lt)

local first = k == 1 and tok or tok .. '_0'
local used = redis.call('zcard', key)
if redis.call('zscore', key, first) then return {1, 0, used, limit} end
if used + k > limit then return {0, 0, used, limit} end
local args = {}
for i = 0, k - 1 do
  args[#args + 1] = now
  args[#args + 1] = k == 1 and tok or tok .. '_' .. i
end
redis.call('zadd', key, unpack(args))
redis.call('pexpire', key, lt)
return {1, 0, used + k, limit}
