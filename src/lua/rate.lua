-- SPDX-License-Identifier: BSD-3-Clause
-- One decision of a rate limiter: GCRA (the generic cell rate
-- algorithm) on the server's clock.
--
-- KEYS: limiter (its theoretical arrival time, TAT: the server's clock
--       in microseconds at which the limiter is idle again).
-- ARGV: count, period (ms): the rate, count decisions per period;
--       burst (up to burst decisions at once from idle);
--       n (the tokens this decision takes; 0: only look).
-- Returns {allowed (1 or 0), wait (ms until n would be allowed: 0 when
-- allowed), left (tokens that could be taken now, after this decision),
-- reset (ms until the limiter is idle again, its whole burst back)}.
-- An error when the arguments are not positive integers (n may be 0),
-- the rate is above one decision a microsecond (count > period * 1000),
-- n > burst (never allowed), or the key is not a limiter's.
--
-- One emission interval is T = period / count; a decision of n is
-- allowed when max(TAT, now) + n*T - now <= burst*T, and then TAT
-- becomes max(TAT, now) + n*T.  So from idle, burst decisions pass at
-- once, then one every T: over any span t no more than burst + t/T pass,
-- whatever the clients' clocks, since the only clock read is TIME here.
-- The key expires when the limiter is idle again (PX reset): a limiter
-- nobody uses holds no memory, and its absence reads as idle.
--
-- TIME before a write: the servers this runs on (Redis 7+, Valkey)
-- replicate a script's effects, not the script, so the replicas get a
-- plain SET of the value computed here.  Microseconds since 1970 are
-- exact in a Lua number (below 2^53 until the year 2255); the TAT is
-- stored with 17 digits, so it reads back as the same number.
--
-- No function flags: a decision may grow the data, so at maxmemory it is
-- refused before it runs.
--
-- Try it:  redis-cli --eval rate.lua resplock:rate:api , 10 1000 5 1
local limiter = KEYS[1]
local count, period = tonumber(ARGV[1]), tonumber(ARGV[2])
local burst, n = tonumber(ARGV[3]), tonumber(ARGV[4])

local function whole(x, least)
  return x and x == math.floor(x) and x >= least and x < 2^53
end
if not (whole(count, 1) and whole(period, 1) and whole(burst, 1) and whole(n, 0)) then
  return redis.error_reply('ERR resplock rate: count, period, burst must be positive integers, n >= 0')
end
-- The TAT counts the server's microseconds: an emission interval below
-- one would not move it.
if count > period * 1000 then
  return redis.error_reply('ERR resplock rate: over one decision a microsecond')
end
if n > burst then
  return redis.error_reply('ERR resplock rate: n > burst is never allowed')
end

local tm = redis.call('time')
local now = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
local t = period * 1000 / count
local tau = burst * t

local tat = now
local v = redis.call('get', limiter)
if v then
  tat = tonumber(v)
  if not tat then
    return redis.error_reply('ERR resplock rate: the key holds no limiter\'s value')
  end
  if tat < now then tat = now end
end

-- Microseconds up to whole milliseconds (a wait rounded down would ask
-- again too soon and be refused).
local function ms(us)
  if us <= 0 then return 0 end
  return math.ceil(us / 1000)
end

local after = tat + n * t
if after - now <= tau then
  if n > 0 then
    redis.call('set', limiter, string.format('%.17g', after), 'px', ms(after - now))
  end
  return {1, 0, math.floor((tau - (after - now)) / t + 1e-9), ms(after - now)}
end
-- (Fewer than none left only when the burst was made smaller since.)
local left = math.floor((tau - (tat - now)) / t + 1e-9)
if left < 0 then left = 0 end
return {0, ms(after - now - tau), left, ms(tat - now)}
