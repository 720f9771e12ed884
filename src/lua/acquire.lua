-- SPDX-License-Identifier: BSD-3-Clause
-- One try to take a lock, for a holder that may be waiting in line.
-- (The first try of a simple lock is a plain SET NX PX, without this;
-- when that SET took the lock in the window below, a try in mode 'q'
-- gives it back.)
--
-- KEYS: lock, queue, waiters.
-- ARGV: token (a simple lock's token, a reentrant lock's hash field),
--       ttl (ms), kind ('s' simple, 'r' reentrant, 'f' fair: a string
--       lock like the simple one, taken only by the first in line),
--       mode ('0' try; 'w' try, else join the line or renew the place in
--       it; 'q' try, else leave the line),
--       lease (ms the place in line lasts unless renewed),
--       channel (the waiter's handoff channel),
--       claim (ms a handoff holds the lock for the waiter until it
--       confirms),
--       facts (a reentrant lock's holder facts, "h=HOST;p=PID;t=MS;c=CMD",
--       kept in its hash's field rlk:holder; a simple lock's are in its
--       token, after "rlk:", 32 hex digits and ';').
-- Returns {1, fence, holds, found} when the lock is this holder's: taken
-- now (found 0), or found holding this token (found 1: handed over since
-- the last try, or taken by a try whose reply was lost), and then
-- extended to the full ttl.  {-1, why} when the key is not a lock (an
-- application's key: 1 neither a string nor a hash, 2 a string or hash
-- without a TTL, 3 a hash whose values are not hold counts, rlk:holder
-- aside); looked at only when the lock is not taken, and no place in
-- line is kept for it.  {0, ms} when someone else holds it: its
-- PTTL, or while resplock's clients keep away from a lock a release
-- freed (see release.lua) the time until they may come back.  They keep
-- away in every mode but a reentrant lock's '0' on a lock held by its
-- holder (another hold).
--
-- No function flags: a try may grow the data, so at maxmemory it is
-- refused, as a function before it runs, as EVAL at its first write that
-- may grow the data.
--
-- The fence is the server's clock in microseconds: every acquisition
-- comes after the last holder's ended, so fences grow while the clock
-- does not step back.  Lua numbers are exact to 2^53, microseconds since
-- 1970 stay below that until the year 2255.
--
-- Try it:  redis-cli --eval acquire.lua job {job}:queue {job}:waiters , \
--            tok1 30000 s w 2200 resplock:handoff:x 2000
local lock, queue, waiters = KEYS[1], KEYS[2], KEYS[3]
local token, ttl, kind, mode = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local lease, channel, claim, facts = tonumber(ARGV[5] or '0'), ARGV[6], ARGV[7], ARGV[8]

local tm = redis.call('time')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local fence = tonumber(tm[1]) * 1000000 + tonumber(tm[2])

-- The holder's value with the waiters' mark: a simple lock of
-- resplock's ("rlk:" tokens) whose value has "+w" appended has waiters
-- in line.  Its holder's DELIFEQ or SET IFEQ, which compare exactly,
-- then do not match, and it falls back to the scripts, which hand the
-- lock over (release.lua).  Others' tokens are never marked.
local marked = token .. '+w'

-- The waiter's registration: the list queue holds tokens in arrival
-- order, the hash waiters maps each to "expiry ttl claim kind channel"
-- (expiry in server ms).  Both go when no waiter renewed its place for
-- two leases (at least 5 s).
local function leave()
  if redis.call('hdel', waiters, token) == 1 then
    redis.call('lrem', queue, 1, token)
  end
end

-- Best effort: at maxmemory the waiter is not in line, and still wakes
-- when the lock is freed or at its next try.  Each join also drops up to
-- two lapsed places (waiters that died) from the head of the line: when
-- the holders use other clients, no release of ours prunes the line.
local function join()
  for _ = 1, 2 do
    local head = redis.call('lindex', queue, 0)
    if not head or head == token then break end
    local e = redis.call('hget', waiters, head)
    local exp = e and tonumber(string.match(e, '^(%d+) '))
    if exp and exp > now then break end
    redis.call('lpop', queue)
    redis.call('hdel', waiters, head)
  end
  local entry = string.format('%.0f %s %s %s %s', now + lease, ttl, claim, kind, channel)
  if redis.pcall('hset', waiters, token, entry) == 1 then
    redis.pcall('rpush', queue, token)
  end
  local keep = math.max(2 * lease, 5000)
  redis.call('pexpire', queue, keep)
  -- The mark (APPEND keeps the TTL); pcall: a value of another type,
  -- or maxmemory, leaves it unmarked (its release then frees the lock
  -- without a handoff, and waiters take it at their next look).
  local v = redis.pcall('get', lock)
  if type(v) == 'string' and string.sub(v, 1, 4) == 'rlk:' and string.sub(v, -2) ~= '+w' then
    redis.pcall('append', lock, '+w')
  end
  if redis.call('pttl', waiters) < keep then redis.call('pexpire', waiters, keep) end
end

-- A fair try takes a free lock only when no earlier waiter is in line:
-- the head's place, unless it lapsed (its waiter died or stopped
-- renewing it: dropped here, so a dead waiter holds the line up no
-- longer than its lease).  A newcomer (mode '0', not in line) is never
-- first while anyone waits.
local function first_in_line()
  for _ = 1, 100 do
    local head = redis.call('lindex', queue, 0)
    if not head then return true end
    if head == token then return true end
    local e = redis.call('hget', waiters, head)
    local exp = e and tonumber(string.match(e, '^(%d+) '))
    if exp and exp > now then return false end
    redis.call('lpop', queue)
    redis.call('hdel', waiters, head)
  end
  return false
end

local function not_now(ms)
  if mode == 'w' then join() elseif mode == 'q' then leave() end
  return {0, ms}
end

-- The ms left of the window in which resplock keeps away, or nil.
local function window()
  local y = redis.call('hget', waiters, '~yield')
  if y then
    local left = (tonumber(string.sub(y, 3)) or 0) - now
    if left > 0 then return left end
    redis.call('hdel', waiters, '~yield')
  end
end

-- A fair newcomer keeps away from the window too: the window is the
-- others' turn, not a newcomer's.
if mode ~= '0' or kind == 'f' then
  local left = window()
  if left then
    -- Holding this token now, a simple lock was taken by this acquire's
    -- SET NX (nothing else gives it this token in the window): given back.
    if kind == 's' then
      local v = redis.pcall('get', lock)
      if v == token or v == marked then redis.call('del', lock) end
    end
    return not_now(left)
  end
end

if kind == 'f' then
  local v = redis.pcall('get', lock)
  if v == token or v == marked then
    redis.call('pexpire', lock, ttl)
    return {1, fence, 1, 1}
  end
  if v == false then
    -- Free and nobody in line before it: its own place goes, and the
    -- value is marked while others wait, so that its release hands
    -- the lock on rather than freeing it (release.lua's fast path).
    if not first_in_line() then return not_now(lease) end
    leave()
    local val = token
    if string.sub(token, 1, 4) == 'rlk:' and redis.call('llen', queue) > 0 then val = marked end
    redis.call('set', lock, val, 'px', ttl)
    return {1, fence, 1, 0}
  end
elseif kind == 's' then
  if redis.call('set', lock, token, 'nx', 'px', ttl) then
    if mode ~= '0' then leave() end
    return {1, fence, 1, 0}
  end
  -- pcall: a key of another type answers an error table.
  local v = redis.pcall('get', lock)
  if v == token or v == marked then
    redis.call('pexpire', lock, ttl)
    return {1, fence, 1, 1}
  end
else
  local t = redis.call('type', lock)['ok']
  local left = t == 'none' and mode == '0' and window()
  if left then return not_now(left) end
  if t == 'none' then
    redis.call('hincrby', lock, token, 1)
    if facts then redis.call('hset', lock, 'rlk:holder', facts) end
    redis.call('pexpire', lock, ttl)
    if mode ~= '0' then leave() end
    return {1, fence, 1, 0}
  end
  if t == 'hash' then
    local n = redis.call('hget', lock, token)
    if n then
      -- Taken again by the same holder, or found after a handoff.  The
      -- expiry never shortens: other holds may rely on a longer one.
      if mode == '0' then n = redis.call('hincrby', lock, token, 1)
      elseif facts then redis.call('hsetnx', lock, 'rlk:holder', facts) end
      if redis.call('pttl', lock) < tonumber(ttl) then
        redis.call('pexpire', lock, ttl)
      end
      return {1, fence, tonumber(n), mode == '0' and 0 or 1}
    end
  end
end
local pt = redis.call('pttl', lock)
local t = redis.call('type', lock)['ok']
local why = 0
if t == 'hash' then
  -- A lock's hash holds one holder's count (and rlk:holder).
  if redis.call('hlen', lock) > 16 then why = 3 else
    local kv = redis.call('hgetall', lock)
    for i = 2, #kv, 2 do
      if kv[i - 1] ~= 'rlk:holder' and not string.match(kv[i], '^%d+$') then why = 3 end
    end
  end
elseif t ~= 'string' and t ~= 'none' then
  why = 1
end
if why == 0 and pt == -1 then why = 2 end
if why > 0 then
  if mode == 'q' then leave() end
  return {-1, why}
end
return not_now(pt)
