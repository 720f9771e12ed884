-- SPDX-License-Identifier: BSD-3-Clause
-- One try of a read-write lock's acquire: a read or a write hold for a
-- holder, first come, first served, on the server's clock.
--
-- The layout (every key of read-write lock NAME in NAME's hash slot):
--   resplock:rw:{NAME}        hash: "fence" (the last fence given), "seq"
--       (the line's last number), and per hold "h:TOKEN:N" =
--       "MODE FENCE EXPIRY" (MODE 1 read, 2 write) and "f:TOKEN:N" = its
--       facts (see lock.c), per waiter "q:TOKEN" = "MODE LAPSE"; EXPIRY
--       and LAPSE are the server's ms.  TOKEN is the holder's; N names
--       one of its holds (a holder may hold many: reentrance, downgrade).
--   resplock:rw:{NAME}:line   sorted set: waiter TOKEN, scored by its
--       number in line (its arrival).
--   resplock:rw:{NAME}:wake   the channel a release or a prune is
--       published on (SPUBLISH on a cluster), message "1".
-- Holds whose EXPIRY passed and waiters whose LAPSE passed are pruned
-- here (and by the release): the only clock read is TIME.  The keys
-- expire with the last hold's EXPIRY or the last waiter's LAPSE; the
-- fence then starts again from the server's clock in microseconds.
--
-- KEYS: state, line.
-- ARGV: mode ('r' or 'w'), ttl (ms), token, hold (N), lease (ms a place
--       in line lasts; 0: try once), channel, 's' to SPUBLISH (else
--       PUBLISH), facts.
-- Returns {1, fence, readers, writers} when the hold is granted (also
-- when it was already: a try sent again), else {0, waiters ahead,
-- readers, writers} (holds by others, not expired).
--
-- The rules: a holder with a live write hold is granted any hold, and one
-- with a live read hold another read hold (reentrance; downgrade is a
-- read taken under the write, then the write released).  Otherwise a read
-- is granted when no other holder writes and no live writer waits ahead
-- of it in line (a try not in line is behind them all): a waiting writer
-- stops the readers that come after it.  A write is granted when no other
-- holder holds anything and no live waiter is ahead of it.
--
-- No function flags: an acquire may grow the data.
--
-- Try it:  redis-cli --eval rw_acquire.lua 'resplock:rw:{db}' 'resplock:rw:{db}:line' , r 30000 tok1 1 0 'resplock:rw:{db}:wake' p ''
local state, line = KEYS[1], KEYS[2]
local mode, ttl, tok, n = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local lease, ch, pub, facts = tonumber(ARGV[5]), ARGV[6], ARGV[7], ARGV[8]

local function whole(x, least)
  return x and x == math.floor(x) and x >= least and x < 2^53
end
if not (whole(ttl, 1) and whole(lease, 0)) or (mode ~= 'r' and mode ~= 'w') then
  return redis.error_reply('ERR resplock rw: mode must be r or w, ttl a positive integer')
end
local ts, tl = redis.call('type', state)['ok'], redis.call('type', line)['ok']
if (ts ~= 'none' and ts ~= 'hash') or (tl ~= 'none' and tl ~= 'zset') then
  return redis.error_reply('WRONGTYPE resplock rw: the keys hold no read-write lock')
end
local tm = redis.call('time')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local me = tok .. ':' .. n
local pre = tok .. ':'

-- Pruned: expired holds, lapsed waiters.  keep: how long the keys must
-- live for what is left.
local readers, writers, keep, changed, mine = 0, 0, 0, false, nil
local myr, myw = false, false
local all = redis.call('hgetall', state)
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  local p, id = string.sub(f, 1, 2), string.sub(f, 3)
  if p == 'h:' then
    local hm, hf, he = string.match(v, '^(%d) (%d+) (%d+)$')
    if not he or tonumber(he) <= now then
      redis.call('hdel', state, f, 'f:' .. id)
      changed = true
    else
      if tonumber(he) - now > keep then keep = tonumber(he) - now end
      if id == me then mine = hf end
      if string.sub(id, 1, #pre) == pre then
        if hm == '2' then myw = true else myr = true end
      elseif hm == '2' then
        writers = writers + 1
      else
        readers = readers + 1
      end
    end
  elseif p == 'q:' then
    local wl = tonumber(string.match(v, '^%d (%d+)$'))
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
  return {1, tonumber(mine), readers, writers}
end

-- Live waiters ahead of this one, and writers among them (one not in
-- line is behind them all); a member without its place is dropped.
local ahead, wahead, inline = 0, 0, false
for _, id in ipairs(redis.call('zrange', line, 0, -1)) do
  if id == tok then
    inline = true
    break
  end
  local q = redis.call('hget', state, 'q:' .. id)
  if q then
    ahead = ahead + 1
    if string.sub(q, 1, 1) == '2' then wahead = wahead + 1 end
  else
    redis.call('zrem', line, id)
  end
end

local ok
if myw or (mode == 'r' and myr) then
  ok = true
elseif mode == 'r' then
  ok = writers == 0 and wahead == 0
else
  ok = writers == 0 and readers == 0 and ahead == 0
end

if ok then
  local fence
  if redis.call('hexists', state, 'fence') == 1 then
    fence = redis.call('hincrby', state, 'fence', 1)
  else
    fence = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
    redis.call('hset', state, 'fence', string.format('%d', fence))
  end
  redis.call('hset', state, 'h:' .. me,
             string.format('%d %d %d', mode == 'w' and 2 or 1, fence, now + ttl),
             'f:' .. me, facts)
  if inline then
    redis.call('zrem', line, tok)
    redis.call('hdel', state, 'q:' .. tok)
  end
  if ttl > keep then keep = ttl end
  -- No one behind a grant may pass now who could not before (a read
  -- is stopped by waiting writers only): a prune alone wakes the line.
  if changed then publish() end
  expire()
  if mode == 'r' then readers = readers + 1 else writers = writers + 1 end
  return {1, fence, readers, writers}
end

if lease > 0 then
  if not inline then
    redis.call('zadd', line, redis.call('hincrby', state, 'seq', 1), tok)
  end
  redis.call('hset', state, 'q:' .. tok, string.format('%d %d', mode == 'w' and 2 or 1, now + lease))
  if lease > keep then keep = lease end
end
if changed then publish() end
if keep > 0 then expire() end
return {0, ahead, readers, writers}
