-- SPDX-License-Identifier: BSD-3-Clause
-- Gives a holder's permits back, or takes a waiter out of the line, and
-- wakes the line (see sem_acquire.lua for the layout).
--
-- KEYS: state, line.
-- ARGV: token, channel, 's' to SPUBLISH (else PUBLISH), mode: 'r' give
--       the permits back, 'l' leave the line.
-- Returns 1 (given back, or left), 0 (not held: its EXPIRY passed, or
-- pruned; not in line), -1 (no semaphore there).
--
-- Function flags: allow-oom
-- (It only deletes: a release must work at maxmemory.)
--
-- Try it:  redis-cli --eval sem_release.lua 'resplock:sem:{db}' 'resplock:sem:{db}:line' , tok1 'resplock:sem:{db}:wake' p r
local state, line = KEYS[1], KEYS[2]
local tok, ch, pub, mode = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

if redis.call('type', state)['ok'] ~= 'hash' then return -1 end
local out = 0
if mode == 'l' then
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
