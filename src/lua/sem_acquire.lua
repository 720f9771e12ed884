-- SPDX-License-Identifier: BSD-3-Clause
-- One try of a semaphore's acquire: k permits for a holder, first come,
-- first served, on the server's clock.
--
-- The layout (every key of semaphore NAME in NAME's hash slot):
--   resplock:sem:{NAME}       hash: "size" (the size last set), "fence"
--       (the last fence given), "seq" (the line's last number), and per
--       holder "h:TOKEN" = "K FENCE EXPIRY" and "f:TOKEN" = its facts
--       (see lock.c, "h=HOST;p=PID;t=MS;c=CMD"), per waiter
--       "w:TOKEN" = "K LAPSE"; EXPIRY and LAPSE are the server's ms.
--   resplock:sem:{NAME}:line  sorted set: waiter TOKEN, scored by its
--       number in line (its arrival).
--   resplock:sem:{NAME}:wake  the channel a change is published on
--       (SPUBLISH on a cluster), message "1".
-- Holders whose EXPIRY passed and waiters whose LAPSE passed are pruned
-- here (and by the release), so the only clock read is TIME: no
-- holder's clock matters.  Both keys expire with the last holder's
-- EXPIRY or the last waiter's LAPSE, so an idle semaphore vanishes; its
-- fence then starts again from the server's clock in microseconds, above
-- every fence given before (one more each acquire while it lives).
--
-- KEYS: state, line.
-- ARGV: size, k, ttl (ms), token, lease (ms a place in line lasts; 0:
--       try once, do not join the line), channel, 's' to SPUBLISH (else
--       PUBLISH), facts.
-- Returns {1, fence, used, size} when the holder has its k permits
-- (also when it had them already: a try sent again), else {0, waiters
-- ahead, used, size}.  An error when the arguments are not numbers or
-- the keys hold something else.
--
-- Head of line: a try is granted only when no live waiter is ahead of it
-- in line (a try not in line is behind them all) and used + k <= size;
-- so a waiter for k > 1 is never passed by waiters for fewer.  A grant
-- that leaves permits and waiters publishes, so the next one looks.
--
-- No function flags: an acquire may grow the data.
--
-- Try it:  redis-cli --eval sem_acquire.lua 'resplock:sem:{db}' 'resplock:sem:{db}:line' , 3 1 30000 tok1 0 'resplock:sem:{db}:wake' p ''
local state, line = KEYS[1], KEYS[2]
local size, k, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tok, lease, ch, pub, facts = ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[7], ARGV[8]

local function whole(x, least)
  return x and x == math.floor(x) and x >= least and x < 2^53
end
if not (whole(size, 1) and whole(k, 1) and whole(ttl, 1) and whole(lease, 0)) or k > size then
  return redis.error_reply('ERR resplock sem: size, k, ttl must be positive integers, k <= size')
end
local ts, tl = redis.call('type', state)['ok'], redis.call('type', line)['ok']
if (ts ~= 'none' and ts ~= 'hash') or (tl ~= 'none' and tl ~= 'zset') then
  return redis.error_reply('WRONGTYPE resplock sem: the keys hold no semaphore')
end
local tm = redis.call('time')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)

-- Pruned: expired holders, lapsed waiters.  keep: how long the keys
-- must live for what is left.
local used, keep, changed, mine = 0, 0, false, nil
local all = redis.call('hgetall', state)
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  local p, id = string.sub(f, 1, 2), string.sub(f, 3)
  if p == 'h:' then
    local hk, hf, he = string.match(v, '^(%d+) (%d+) (%d+)$')
    if not he or tonumber(he) <= now then
      redis.call('hdel', state, f, 'f:' .. id)
      changed = true
    else
      used = used + tonumber(hk)
      if tonumber(he) - now > keep then keep = tonumber(he) - now end
      if id == tok then mine = hf end
    end
  elseif p == 'w:' then
    local wl = tonumber(string.match(v, '^%d+ (%d+)$'))
    if not wl or wl <= now then
      redis.call('hdel', state, f)
      redis.call('zrem', line, id)
      changed = true
    elseif wl - now > keep then
      keep = wl - now
    end
  end
end

local function publish()
  if redis.call('zcard', line) > 0 then
    redis.call(pub == 's' and 'spublish' or 'publish', ch, '1')
  end
end
local function expire()
  redis.call('pexpire', state, keep)
  if redis.call('exists', line) == 1 then redis.call('pexpire', line, keep) end
end

if mine then
  if changed then publish() end
  return {1, tonumber(mine), used, size}
end
redis.call('hset', state, 'size', size)

-- Live waiters ahead of this one (one not in line is behind them all);
-- a member without its place (a key expired alone) is dropped.
local ahead, inline = 0, false
for _, id in ipairs(redis.call('zrange', line, 0, -1)) do
  if id == tok then
    inline = true
    break
  end
  if redis.call('hexists', state, 'w:' .. id) == 1 then
    ahead = ahead + 1
  else
    redis.call('zrem', line, id)
  end
end

if ahead == 0 and used + k <= size then
  local fence
  if redis.call('hexists', state, 'fence') == 1 then
    fence = redis.call('hincrby', state, 'fence', 1)
  else
    fence = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
    redis.call('hset', state, 'fence', string.format('%d', fence))
  end
  redis.call('hset', state, 'h:' .. tok, string.format('%d %d %d', k, fence, now + ttl),
             'f:' .. tok, facts)
  if inline then
    redis.call('zrem', line, tok)
    redis.call('hdel', state, 'w:' .. tok)
  end
  if ttl > keep then keep = ttl end
  used = used + k
  if used < size or changed then publish() end
  expire()
  return {1, fence, used, size}
end

if lease > 0 then
  if not inline then
    redis.call('zadd', line, redis.call('hincrby', state, 'seq', 1), tok)
  end
  redis.call('hset', state, 'w:' .. tok, string.format('%d %d', k, now + lease))
  if lease > keep then keep = lease end
end
if changed then publish() end
if keep > 0 then expire() end
return {0, ahead, used, size}
