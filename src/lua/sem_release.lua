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
-- pruned; not in line), -1 (no semaphore there).
--
-- Function flags: allow-oom
-- (It deletes, or rewrites a field in place: a release must work at
-- maxmemory, and so must the end of a run's --hold-min.)
--
-- Try it:  redis-cli --eval sem_release.lua 'resplock:sem:{db}' 'resplock:sem:{db}:line' , tok1 'resplock:sem:{db}:wake' p r
local state, line = KEYS[1], KEYS[2]
local tok, ch, pub, mode = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

if redis.call('type', state)['ok'] ~= 'hash' then return -1 end
local out = 0
if mode == 'e' then
  -- Nothing is freed: no one is woken.  A holder whose EXPIRY passed may
  -- have been pruned and its permits taken: it is not given more time.
  local ms = tonumber(ARGV[5])
  if not (ms and ms >= 1 and ms == math.floor(ms) and ms < 2^53) then
    return redis.error_reply('ERR resplock sem: ms must be a positive integer')
  end
  local v = redis.call('hget', state, 'h:' .. tok)
  local hk, hf, he = string.match(v or '', '^(%d+) (%d+) (%d+)$')
  local tm = redis.call('time')
  local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
  if not he or tonumber(he) <= now then return 0 end
  redis.call('hset', state, 'h:' .. tok, string.format('%s %s %d', hk, hf, now + ms))
  if redis.call('pttl', state) < ms then redis.call('pexpire', state, ms) end
  return 1
elseif mode == 'l' then
  out = redis.call('hdel', state, 'w:' .. tok)
  redis.call('zrem', line, tok)
else
  local v = redis.call('hget', state, 'h:' .. tok)
  if v then
    local tm = redis.call('time')
    local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
    local he = tonumber(string.match(v, '^%d+ %d+ (%d+)$'))
    if he and he > now then out = 1 end
    redis.call('hdel', state, 'h:' .. tok, 'f:' .. tok)
  end
end
if redis.call('zcard', line) > 0 then
  redis.call(pub == 's' and 'spublish' or 'publish', ch, '1')
end
return out
