-- SPDX-License-Identifier: BSD-3-Clause
-- Ends a hold of a read-write lock, or takes a waiter out of the line,
-- and wakes the line; or sets a hold's TTL (see rw_acquire.lua for the
-- layout).
--
-- KEYS: state, line.
-- ARGV: token, hold (N), channel, 's' to SPUBLISH (else PUBLISH), mode:
--       'r' end the hold TOKEN:N, 'l' leave the line, 'e' set the hold's
--       EXPIRY to the server's now + ms (then ms, a positive integer).
-- Returns 1 (ended, left, set), 0 (not held: its EXPIRY passed, or
-- pruned; not in line), -1 (no read-write lock there).
--
-- Function flags: allow-oom
-- (It deletes, or rewrites a field in place: a release must work at
-- maxmemory, and so must the end of a run's --hold-min.)
--
-- Try it:  redis-cli --eval rw_release.lua 'resplock:rw:{db}' 'resplock:rw:{db}:line' , tok1 1 'resplock:rw:{db}:wake' p r
local state, line = KEYS[1], KEYS[2]
local tok, n, ch, pub, mode = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local me = tok .. ':' .. n

if redis.call('type', state)['ok'] ~= 'hash' then return -1 end
local tm = redis.call('time')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local v = redis.call('hget', state, 'h:' .. me)
local hm, hf, he = string.match(v or '', '^(%d) (%d+) (%d+)$')
local out = 0
if mode == 'e' then
  -- Nothing is freed: no one is woken.  A hold whose EXPIRY passed may
  -- have been pruned and the lock taken: it is not given more time.
  local ms = tonumber(ARGV[6])
  if not (ms and ms >= 1 and ms == math.floor(ms) and ms < 2^53) then
    return redis.error_reply('ERR resplock rw: ms must be a positive integer')
  end
  if not he or tonumber(he) <= now then return 0 end
  redis.call('hset', state, 'h:' .. me, string.format('%s %s %d', hm, hf, now + ms))
  if redis.call('pttl', state) < ms then redis.call('pexpire', state, ms) end
  return 1
elseif mode == 'l' then
  out = redis.call('hdel', state, 'q:' .. tok)
  redis.call('zrem', line, tok)
elseif v then
  if he and tonumber(he) > now then out = 1 end
  redis.call('hdel', state, 'h:' .. me, 'f:' .. me)
end
if redis.call('zcard', line) > 0 then
  redis.call(pub == 's' and 'spublish' or 'publish', ch, '1')
end
return out
