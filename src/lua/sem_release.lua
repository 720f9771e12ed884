-- SPDX-License-Identifier: BSD-3-Clause
-- Gives a holder's permits back, or takes a waiter out of the line, and
-- wakes the line; or sets a holder's TTL (see sem_acquire.lua for the
-- layout).
--
-- KEYS: state, line.
-- ARGV: token, channel, 's' to SPUBLISH (else PUBLISH), mode: 'r' give
--       the permits back, 'l' leave the line, 'e' set the holder's EXPIRY
--       to the server's now + ms (then ms, a positive integer).
-- Returns 1 (given back, left, set), 0 (not held: its EXPIRY passed, or
-- pruned; not in line), -1 (no semaphore there).  The server's WRONGTYPE
-- when the keys hold something else.
--
-- Function flags: allow-oom
-- (It deletes, or rewrites a field in place: a release must work at
-- maxmemory, and so must the end of a run's --hold-min.)
--
-- Try it:  redis-cli --eval sem_release.lua 'resplock:sem:{db}' 'resplock:sem:{db}:line' , tok1 'resplock:sem:{db}:wake' p r
local state, line = KEYS[1], KEYS[2]
local tok, ch, pub, mode = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local hf = 'h:' .. tok

local function now_ms()
  local tm = redis.call('time')
  return tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
end
local function absent()
  return redis.call('exists', state) == 1 and 0 or -1
end

if mode == 'e' then
  -- Nothing is freed: no one is woken.  A holder whose EXPIRY passed may
  -- have been pruned and its permits taken: it is not given more time.
  local ms = tonumber(ARGV[5])
  if not (ms and ms >= 1 and ms == math.floor(ms) and ms < 2^53) then
    return redis.error_reply('ERR resplock sem: ms must be a positive integer')
  end
  local v = redis.call('hmget', state, hf, 'next')
  local hk, f, he = string.match(v[1] or '', '^(%d+) (%d+) (%d+)$')
  if not he then return absent() end
  local now = now_ms()
  if tonumber(he) <= now then return 0 end
  -- "next" stays no later than the earliest EXPIRY.
  if tonumber(v[2]) and now + ms < tonumber(v[2]) then
    redis.call('hset', state, hf, string.format('%s %s %d', hk, f, now + ms),
               'next', string.format('%d', now + ms))
  else
    redis.call('hset', state, hf, string.format('%s %s %d', hk, f, now + ms))
  end
  if redis.call('pttl', state) < ms then redis.call('pexpire', state, ms) end
  return 1
end

local out
if mode == 'l' then
  out = redis.call('hdel', state, 'w:' .. tok)
  redis.call('zrem', line, tok)
else
  local v = redis.call('hmget', state, hf, 'used')
  local hk, _, he = string.match(v[1] or '', '^(%d+) (%d+) (%d+)$')
  if not v[1] then return absent() end
  out = he and tonumber(he) > now_ms() and 1 or 0
  redis.call('hdel', state, hf, 'f:' .. tok)
  -- "used" counts the holders' fields: one fewer (a state without it
  -- is counted again by the next acquire).
  local used = tonumber(v[2])
  if used and hk then
    used = used - tonumber(hk)
    redis.call('hset', state, 'used', used > 0 and used or 0)
  end
end
if redis.call('zcard', line) > 0 then
  redis.call(pub == 's' and 'spublish' or 'publish', ch, '1')
end
return out
