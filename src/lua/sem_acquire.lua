-- SPDX-License-Identifier: BSD-3-Clause
-- One try of a semaphore's acquire: k permits for a holder, first come,
-- first served, on the server's clock.
--
-- The layout (every key of semaphore NAME in NAME's hash slot):
--   resplock:sem:{NAME}       hash: "size" (the size last set), "fence"
--       (the last fence given), "seq" (the line's last number), "used"
--       (the permits of the holders' fields), "next" (no later than the
--       earliest holder's EXPIRY), and per holder "h:TOKEN" =
--       "K FENCE EXPIRY" and "f:TOKEN" = its facts (see lock.c,
--       "h=HOST;p=PID;t=MS;c=CMD"), per waiter "w:TOKEN" = "K LAPSE";
--       EXPIRY, LAPSE and next are the server's ms.
--   resplock:sem:{NAME}:line  sorted set: waiter TOKEN, scored by its
--       number in line (its arrival).
--   resplock:sem:{NAME}:wake  the channel a change is published on
--       (SPUBLISH on a cluster), message "1".
-- Holders whose EXPIRY passed are pruned here, when the server's now
-- reaches "next" (one read of the hash then, which also drops lapsed
-- waiters and sets "used" and "next" again), and waiters whose LAPSE
-- passed when they come to the head of the line; so the only clock
-- read is TIME: no holder's clock matters.  A try in the common case
-- reads three fields and the line's head, and writes one HSET.  The
-- state's key lives as long as its longest holder or waiter (its expiry
-- only grows), the line's as long as its longest waiter, so an idle
-- semaphore vanishes; its fence then starts again from the server's
-- clock in microseconds, above every fence given before (one more each
-- acquire while it lives).
--
-- KEYS: state, line.
-- ARGV: size, k, ttl (ms), token, lease (ms a place in line lasts; 0:
--       try once, do not join the line), channel, 's' to SPUBLISH (else
--       PUBLISH), facts.
-- Returns {1, fence, used, size} when the holder has its k permits
-- (also when it had them already: a try sent again), else {0, waiters
-- ahead, used, size}.  An error when the arguments are not numbers or
-- the keys hold something else (the server's WRONGTYPE, before any
-- write).
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
local NONE = 2^52 -- "next" with no holder
local tm = redis.call('time')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local hf = 'h:' .. tok
local v = redis.call('hmget', state, 'used', 'next', hf, 'fence', 'size')
local function first()
  -- (ZCARD first: an empty line, the common case, reads no array.)
  return redis.call('zcard', line) > 0 and redis.call('zrange', line, 0, 0)[1] or nil
end
local head = first()
local used, nxt, mine = tonumber(v[1]), tonumber(v[2]), v[3]
local changed = false

-- The holders' prune and count, when one may have expired (or the
-- count is missing).
if not used or not nxt or nxt <= now then
  used, nxt = 0, NONE
  local all, dead = redis.call('hgetall', state), {}
  for i = 1, #all, 2 do
    local f, x = all[i], all[i + 1]
    local p, id = string.sub(f, 1, 2), string.sub(f, 3)
    if p == 'h:' then
      local hk, _, he = string.match(x, '^(%d+) (%d+) (%d+)$')
      if not he or tonumber(he) <= now then
        dead[#dead + 1] = f
        dead[#dead + 1] = 'f:' .. id
        if f == hf then mine = nil end
      else
        used = used + tonumber(hk)
        if tonumber(he) < nxt then nxt = tonumber(he) end
      end
    elseif p == 'w:' then
      local wl = tonumber(string.match(x, '^%d+ (%d+)$'))
      if not wl or wl <= now then
        dead[#dead + 1] = f
        redis.call('zrem', line, id)
        if id == head then head = false end
      end
    end
  end
  if #dead > 0 then
    redis.call('hdel', state, unpack(dead))
    changed = true
  end
  if head == false then head = first() end
  -- (Not on a key that is not there: a try refused would leave it
  -- without an expiry.)
  if #all > 0 then redis.call('hset', state, 'used', used, 'next', string.format('%d', nxt)) end
end

local function publish()
  if redis.call('zcard', line) > 0 then
    redis.call(pub == 's' and 'spublish' or 'publish', ch, '1')
  end
end

if mine then
  local _, f, e = string.match(mine, '^(%d+) (%d+) (%d+)$')
  if e and tonumber(e) > now then
    if changed then publish() end
    return {1, tonumber(f), used, size}
  end
end

-- The line's head: a member whose place lapsed (or went with an
-- expired state) is dropped.
local inline = false
while head do
  if head == tok then
    inline = true
    break
  end
  local w = redis.call('hget', state, 'w:' .. head)
  local wl = w and tonumber(string.match(w, '^%d+ (%d+)$'))
  if wl and wl > now then break end
  redis.call('zrem', line, head)
  if w then redis.call('hdel', state, 'w:' .. head) end
  changed = true
  head = first()
end

local function expire(key, ms)
  if redis.call('pttl', key) < ms then redis.call('pexpire', key, ms) end
end

if (not head or inline) and used + k <= size then
  local fence = tonumber(v[4])
  if fence then fence = fence + 1 else fence = tonumber(tm[1]) * 1000000 + tonumber(tm[2]) end
  used = used + k
  if now + ttl < nxt then nxt = now + ttl end
  redis.call('hset', state, 'size', size, 'used', used, 'next', string.format('%d', nxt),
             'fence', string.format('%d', fence),
             hf, string.format('%d %d %d', k, fence, now + ttl), 'f:' .. tok, facts)
  expire(state, ttl)
  -- (Not in line, this try found the line empty: no one to wake.)
  if inline then
    redis.call('zrem', line, tok)
    redis.call('hdel', state, 'w:' .. tok)
    if used < size or changed then publish() end
  end
  return {1, fence, used, size}
end

-- Waiters ahead: its rank in line, or all of them.
local ahead = 0
if head and not inline then
  ahead = redis.call('zrank', line, tok) -- false: not in line
  inline = ahead and true or false
  ahead = ahead or redis.call('zcard', line)
end
if lease > 0 then
  if not inline then
    redis.call('zadd', line, redis.call('hincrby', state, 'seq', 1), tok)
  end
  redis.call('hset', state, 'w:' .. tok, string.format('%d %d', k, now + lease), 'size', size)
  expire(state, lease)
  expire(line, lease)
elseif tonumber(v[5]) ~= size and redis.call('exists', state) == 1 then
  redis.call('hset', state, 'size', size)
end
if changed then publish() end
return {0, ahead, used, size}
