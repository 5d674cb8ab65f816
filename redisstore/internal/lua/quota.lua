-- quota.lua: one key's count in one calendar period (redisstore.Quota).
--
-- KEYS[1] is the count of events admitted for the key in the period, a
-- string holding an integer; its name holds the period's start. The
-- calendar (which period holds an instant) is computed by the caller, who
-- passes the period's bounds.
--
-- ARGV[1] is the operation: "a" allow, "p" partial allow, "r" refund.
-- ARGV[2] is "" when Redis's clock decides: the period [ARGV[3], ARGV[4])
--   (in µs since the Unix epoch) is the caller's guess, and if TIME is not
--   in it the reply is {-1, now} and nothing is changed (the caller names
--   the key of the right period and calls again). Otherwise ARGV[2] is the
--   caller's instant and the period is taken as given.
-- ARGV[5] is n, ARGV[6] the quota's size (allow and partial allow only).
-- ARGV[7] is the instant the key should expire at (ms on Redis's clock:
--   the period's end and a grace), ARGV[8] a minimum TTL (ms).
--
-- Allow mirrors quota's step: admitted iff n = 0 or n <= limit - used
-- (so never if n > limit); admitted events are counted. Partial allow
-- mirrors quota's grant: m = min(n, limit - used), 0 at least, is counted.
-- Refund takes min(n, used) back, never below 0. The reply is {allowed,
-- used, now} ({m, used, now} for a partial allow) with now in µs on
-- Redis's clock.

local key = KEYS[1]
local op = ARGV[1]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

if ARGV[2] == '' and (now < tonumber(ARGV[3]) or now >= tonumber(ARGV[4])) then
  return {-1, 0, now}
end

local used = 0
local v = redis.call('GET', key)
if v then
  used = tonumber(v)
  if used == nil or used < 0 or used ~= math.floor(used) then
    return redis.error_reply('ERR admit: corrupt quota count')
  end
end

local n = tonumber(ARGV[5])

if op == 'a' then
  local limit = tonumber(ARGV[6])
  if n > limit or (n > 0 and n > limit - used) then
    return {0, used, now}
  end
  if n > 0 then
    used = redis.call('INCRBY', key, ARGV[5])
    local at = math.max(tonumber(ARGV[7]), math.floor(now / 1000) + tonumber(ARGV[8]))
    redis.call('PEXPIREAT', key, string.format('%.0f', at))
  end
  return {1, used, now}
end

if op == 'p' then
  local m = tonumber(ARGV[6]) - used
  if m > n then m = n end
  if m <= 0 then
    return {0, used, now}
  end
  used = redis.call('INCRBY', key, string.format('%d', m))
  local at = math.max(tonumber(ARGV[7]), math.floor(now / 1000) + tonumber(ARGV[8]))
  redis.call('PEXPIREAT', key, string.format('%.0f', at))
  return {m, used, now}
end

if op == 'r' then
  if used > 0 then
    if n >= used then
      redis.call('DEL', key)
      used = 0
    else
      used = redis.call('DECRBY', key, ARGV[5])
    end
  end
  return {1, used, now}
end

return redis.error_reply('ERR admit: unknown quota operation')
