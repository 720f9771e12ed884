-- SPDX-License-Identifier: BSD-3-Clause
-- Renews many locks in one call: the watchdog's round.
--
-- KEYS: the locks (and semaphores' hashes), all in one hash slot.
-- ARGV: the kinds, one letter per key ('s', 'r', 'p', 'z' or 'w'), then for each
--       key its token (or hash field) and its ttl.
-- Returns per key 1 renewed, -1 not held, -2 held by someone else.
--
-- The simple locks' values come in one MGET (a key of another type
-- reads as nil there), so that a renewed simple lock costs one more
-- call, its PEXPIRE; EXISTS only tells a vanished lock from a taken one.
-- A reentrant lock's expiry never shortens: another hold of the same
-- holder may rely on a longer one.
-- 'p': a semaphore's holder (sem_acquire.lua): its "h:TOKEN" field's
-- EXPIRY becomes the server's now + ttl, if it has not passed (a holder
-- past it may have been pruned, its permits taken: it lost them), and
-- its "next" no later than that.
-- 'z': a semaphore's holder in redis-semaphore's layout
-- (sem_rs_acquire.lua), its token "K:LOCKTIMEOUT:TOKEN": while its
-- first member's score is less than LOCKTIMEOUT old, its members' scores
-- become the server's now + ttl - LOCKTIMEOUT (expired ttl from now).
--
-- Function flags: allow-oom
-- (It only sets expiries: the watchdog keeps its locks at maxmemory.)
--
-- Try it:  redis-cli --eval renew.lua job , s tok1 30000
local vals = redis.call('mget', unpack(KEYS))
local kinds, out, now = ARGV[1], {}, nil
-- The server's now in ms, read once per call (by the kinds that need it).
local function server_now()
  if not now then
    local tm = redis.call('time')
    now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
  end
  return now
end
-- 'w': a read-write lock's hold (rw_acquire.lua): its "h:TOKEN:N"
-- field's EXPIRY becomes the server's now + ttl, if it has not passed.
local function rw_renew(k, id, ttl)
  local now = server_now()
  local v = redis.pcall('hget', k, 'h:' .. id)
  local hm, hf, he = string.match(type(v) == 'string' and v or '', '^(%d) (%d+) (%d+)$')
  if not he or tonumber(he) <= now then return nil end
  redis.call('hset', k, 'h:' .. id, string.format('%s %s %d', hm, hf, now + tonumber(ttl)))
  if redis.call('pttl', k) < tonumber(ttl) then redis.call('pexpire', k, ttl) end
  return 1
end
for i = 1, #KEYS do
  local k, tok, ttl = KEYS[i], ARGV[2 * i], ARGV[2 * i + 1]
  local kind = string.byte(kinds, i)
  if kind == 112 then -- 'p'
    server_now()
    local v = redis.pcall('hmget', k, 'h:' .. tok, 'next')
    local hk, hf, he = string.match(type(v) == 'table' and v[1] or '', '^(%d+) (%d+) (%d+)$')
    if he and tonumber(he) > now then
      local e = now + tonumber(ttl)
      redis.call('hset', k, 'h:' .. tok, string.format('%s %s %d', hk, hf, e))
      -- "next" stays no later than the earliest EXPIRY (a shorter TTL).
      if tonumber(v[2]) and e < tonumber(v[2]) then
        redis.call('hset', k, 'next', string.format('%d', e))
      end
      if redis.call('pttl', k) < tonumber(ttl) then redis.call('pexpire', k, ttl) end
      out[i] = 1
    end
  elseif kind == 122 then -- 'z'
    server_now()
    local zk, zl, zt = string.match(tok, '^(%d+):(%d+):(.*)$')
    zk, zl = tonumber(zk), tonumber(zl)
    local sc = zk and tonumber(redis.pcall('zscore', k, zk == 1 and zt or zt .. '_0'))
    if sc and sc > now - zl then
      local args = {}
      for j = 0, zk - 1 do
        args[#args + 1] = now + tonumber(ttl) - zl
        args[#args + 1] = zk == 1 and zt or zt .. '_' .. j
      end
      redis.call('zadd', k, unpack(args))
      if redis.call('pttl', k) < tonumber(ttl) then redis.call('pexpire', k, ttl) end
      out[i] = 1
    end
  elseif kind == 119 then -- 'w'
    out[i] = rw_renew(k, tok, ttl)
  elseif kind == 115 then -- 's'
    if vals[i] == tok or vals[i] == tok .. '+w' then -- '+w': waiters' mark
      redis.call('pexpire', k, ttl)
      out[i] = 1
    end
  elseif redis.pcall('hexists', k, tok) == 1 then
    if redis.call('pttl', k) < tonumber(ttl) then redis.call('pexpire', k, ttl) end
    out[i] = 1
  end
  if not out[i] then
    out[i] = redis.call('exists', k) == 0 and -1 or -2
  end
end
return out
