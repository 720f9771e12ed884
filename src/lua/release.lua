-- SPDX-License-Identifier: BSD-3-Clause
-- Releases a lock if this holder still holds it, and hands it over to
-- the first live waiter in line.
--
-- KEYS: lock, queue, waiters, and for a reentrant lock its tombstone
--       ("{NAME}:released:ID", one per release): a release that names a
--       tombstone is a reentrant lock's.
-- ARGV: token (or a reentrant lock's hash field); resent, only in a
--       re-send ('1': this release was sent before and its reply lost,
--       and the lock's validity is not over: a simple lock gone, or held
--       by another, was released by that earlier attempt, since nothing
--       else ends it before then but a flush, an eviction or a failover;
--       a reentrant release sends '0' here); and for a reentrant lock
--       the tombstone's life in ms, and in a re-send the server time (ms)
--       from which the first attempt's tombstone may be gone ('0' in the
--       first sending): a re-send that runs from then on cannot tell
--       whether the first one ran, and does nothing.
-- ARGV[5] 's' (a Redis Cluster; ARGV[2] to ARGV[4] are then given,
--       '0' or '' where unused): what is published goes by SPUBLISH,
--       in the lock's slot (waiters' channels there too), never by a
--       PUBLISH broadcast to every node.
-- Returns 1 released (now, or by an earlier attempt), 2 one hold fewer
-- (reentrant, still held), 0 not held, -1 held by someone else, -3 a
-- re-send too late to tell (nothing done).
--
-- An uncontended simple lock costs GET and DEL here (GET, EXISTS and
-- DEL for another's token form): nothing is written, nothing
-- published, nothing left behind.  (Where the server
-- has DELIFEQ or DELEX IFEQ, resplock releases an unmarked simple lock
-- with that instead, and sends this script when it answers 0.)  With waiters in line
-- the release hands the lock over: the lock gets the waiter's token for
-- the waiter's claim (a short TTL), "FENCE TOKEN" is published on the
-- waiter's channel, and the waiter confirms by extending the lock to its
-- TTL.  Waiters whose place lapsed (they died) or whose channel has no
-- listener are skipped (a fair waiter's live place is not: the lock is
-- freed for it alone, see acquire.lua).  After CHAIN ms of handing the lock from waiter
-- to waiter (with gaps under GAP ms), a release frees it once instead
-- and resplock's waiters keep away for YIELD ms: clients that poll or
-- that wait for the "0" message on redisson_lock__channel:{NAME} (NAME
-- as it is when it has braces already, as Redisson names it) get
-- their turn.  A release whose user may not PUBLISH (an ACL) still frees
-- the lock, publishing nothing and handing nothing over: waiters find
-- it free at their next look (their re-check).
--
-- Function flags: allow-oom
-- (A release frees memory: on Redis 7+ it runs at maxmemory, as a
-- function and as EVAL, with all its writes: a hold taken away, a
-- tombstone, a handoff.  Older servers refuse EVAL there at its first
-- write that may grow the data (HINCRBY, SET, HSET; not LPOP or DEL):
-- there taking one of several holds away fails, and the writes that may
-- be refused are made with pcall on the way to freeing the lock.)
--
-- Try it:  redis-cli --eval release.lua job {job}:queue {job}:waiters , tok1
local lock, queue, waiters, tomb = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, resent, tombstone, not_after = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local publish = ARGV[5] == 's' and 'spublish' or 'publish'

-- The common case first, before a function is made (that costs at every
-- run): a simple lock, held by this token, nobody in line.
local v, mine
if not tomb then
  -- pcall: a key of another type answers an error table.  The value is
  -- the token, or the token with the waiters' mark "+w" (acquire.lua).
  v = redis.pcall('get', lock)
  -- Resplock's token unmarked: no waiter joined the line while it held
  -- (each marks it), so none is handed it: GET and DEL alone, as
  -- DELIFEQ does.  (One that joined before a holder took the lock
  -- by SET NX marks it at its next look, within a slice.)
  if v == token and string.sub(token, 1, 4) == 'rlk:' then
    redis.call('del', lock)
    return 1
  end
  mine = v == token or v == token .. '+w'
  if mine and redis.call('exists', queue) == 0 then
    redis.call('del', lock)
    return 1
  end
end

local CHAIN, GAP, YIELD = 2000, 1000, 200

local function pass_on()
  local now, fence, chain
  for _ = 1, 100 do
    -- The first in line leaves the line only once it is passed over or
    -- handed the lock: a yield leaves the line as it is, with its TTL
    -- (the list goes with its last waiter, and one made again has none).
    local w = redis.call('lindex', queue, 0)
    if not w then break end
    if not now then
      local tm = redis.call('time')
      now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
      fence = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
      local c0, c1 = string.match(redis.call('hget', waiters, '~chain') or '',
                                  '^c (%d+) (%d+)$')
      chain = now
      if c0 and now - tonumber(c1) < GAP then chain = tonumber(c0) end
      if now - chain >= CHAIN then
        -- ~yield first: the hash, never emptied, keeps its TTL.
        redis.pcall('hset', waiters, '~yield', string.format('y %.0f', now + YIELD))
        redis.call('hdel', waiters, '~chain')
        break
      end
    end
    local e = redis.call('hget', waiters, w)
    local exp, _, claim, wkind, ch = string.match(e or '', '^(%d+) (%d+) (%d+) ([srf]) (.+)$')
    local heard = 0
    if exp and tonumber(exp) > now then
      -- pcall: a releaser whose user may not PUBLISH (an ACL) cannot tell
      -- the waiter.  The lock is freed then, the line left as it is, and
      -- the waiter takes the lock at its next look.
      heard = redis.pcall(publish, ch, string.format('%.0f ', fence) .. w)
      if type(heard) ~= 'number' then break end
      -- A fair waiter unheard but alive (it polls, or its subscription
      -- is being made again) keeps its place: the lock is freed and
      -- only it may take it (acquire.lua), at its next look or once its
      -- place lapses.
      if heard == 0 and wkind == 'f' then break end
    end
    redis.call('lpop', queue)
    if e then redis.call('hdel', waiters, w) end
    if heard > 0 then
      local ok
      if wkind ~= 'r' then
        -- Marked when others are still in line (see acquire.lua).
        local val = w
        if string.sub(w, 1, 4) == 'rlk:' and redis.call('llen', queue) > 0 then val = w .. '+w' end
        ok = redis.pcall('set', lock, val, 'px', claim)
      else
        redis.call('del', lock)
        ok = redis.pcall('hset', lock, w, 1)
        redis.call('pexpire', lock, claim)
      end
      if type(ok) == 'table' and ok.err then break end
      -- The chain outlives its last waiter (who may come back to the
      -- line right after its release) by the hash's TTL, at least 5 s.
      redis.pcall('hset', waiters, '~chain', string.format('c %.0f %.0f', chain, now))
      if redis.call('pttl', waiters) < 5000 then redis.call('pexpire', waiters, 5000) end
      return
    end
  end
  redis.call('del', lock)
  -- Redisson's channel name: braces around the name, unless it has some.
  local ch = 'redisson_lock__channel:{' .. lock .. '}'
  if string.find(lock, '{', 1, true) then ch = 'redisson_lock__channel:' .. lock end
  redis.pcall(publish, ch, '0')
end

if not tomb then
  if mine then
    pass_on()
    return 1
  end
  if resent == '1' then return 1 end
  if not v then return 0 end
  return -1
end

-- A reentrant lock (Redisson's layout: a hash of holds, "0" published on
-- its channel when freed).  Taking one hold away is not idempotent, so
-- each release has its own tombstone holding its result.  The expiry is
-- left as it is: the holds left rely on it.
local done = redis.call('get', tomb)
if done then return tonumber(done) end
if not_after and not_after ~= '0' then
  local tm = redis.call('time')
  if tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000) >= tonumber(not_after) then
    return -3
  end
end
local t = redis.call('type', lock)['ok']
local n = t == 'hash' and tonumber(redis.call('hget', lock, token))
if n and n > 1 then
  redis.call('hincrby', lock, token, -1)
  redis.pcall('set', tomb, '2', 'px', tombstone)
  return 2
end
if n then
  pass_on()
  redis.pcall('set', tomb, '1', 'px', tombstone)
  return 1
end
if t == 'none' then return 0 end
return -1
