-- concurrency.lua: leases of a concurrency limit (ConcurrencyLimiter).
--
-- KEYS[1] is a sorted set of lease ids scored by their deadlines (ms on
-- Redis's clock); KEYS[2] a hash of lease id -> weight (slots held), with
-- the key's in-flight total under the field "n" (ids never equal "n").
-- Both keys are in one slot (one hash tag) and expire together when the
-- last lease does.
--
-- ARGV[1] is the operation:
--   "a" acquire: ARGV[2] id, ARGV[3] n, ARGV[4] max, ARGV[5] lease ms.
--       Reply {allowed, now, remaining, resetAfter, retryAfter} (ms).
--   "r" release: ARGV[2] id. Reply {released, now}.
--   "e" extend:  ARGV[2] id, ARGV[5] lease ms; the deadline becomes the
--       later of the old one and now + lease, or exactly now + lease when
--       ARGV[3] is "set". Reply {extended, now, deadline}.
--   "h" held:    ARGV[2] id. Reply {held, now, deadline or 0}.
--   "i" in flight. Reply {total, now}.
-- Every operation but "h" first reclaims the leases whose deadline has
-- passed (deadline <= now). A request of n slots is admitted iff
-- in-flight + n <= max; n = 0 is a peek, admitted, holding nothing.

local zkey, hkey = KEYS[1], KEYS[2]
local op = ARGV[1]

-- f formats an integer for a command: Redis would print a Lua number
-- with an exponent beyond 14 digits.
local function f(x)
  return string.format('%.0f', x)
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function num(v, what)
  local x = tonumber(v)
  if x == nil or x < 0 or x ~= math.floor(x) then
    return redis.error_reply('ERR admit: corrupt concurrency state (' .. what .. ')')
  end
  return x
end

-- total returns the key's in-flight count (0 without leases).
local function total()
  if redis.call('ZCARD', zkey) == 0 then
    return 0
  end
  local v = redis.call('HGET', hkey, 'n')
  if not v then
    return 0
  end
  return num(v, 'total')
end

-- reclaim frees the expired leases, a chunk at a time (unpack is bounded).
local function reclaim()
  local freed = 0
  while true do
    local ids = redis.call('ZRANGEBYSCORE', zkey, '-inf', f(now), 'LIMIT', 0, 256)
    if #ids == 0 then
      break
    end
    local ws = redis.call('HMGET', hkey, unpack(ids))
    for i = 1, #ids do
      local w = tonumber(ws[i])
      if w then
        freed = freed + w
      end
    end
    redis.call('ZREM', zkey, unpack(ids))
    redis.call('HDEL', hkey, unpack(ids))
    if #ids < 256 then
      break
    end
  end
  if freed == 0 then
    return nil
  end
  if redis.call('ZCARD', zkey) == 0 then
    redis.call('DEL', zkey, hkey)
    return nil
  end
  local n = num(redis.call('HGET', hkey, 'n') or 0, 'total')
  if type(n) == 'table' then
    return n
  end
  redis.call('HSET', hkey, 'n', f(math.max(n - freed, 0)))
  return nil
end

-- last returns the latest deadline held, or nil.
local function last()
  local r = redis.call('ZRANGE', zkey, -1, -1, 'WITHSCORES')
  if #r == 0 then
    return nil
  end
  return tonumber(r[2])
end

-- expire makes both keys vanish with the last lease.
local function expire()
  local d = last()
  if d then
    local ttl = math.max(d - now, 1)
    redis.call('PEXPIRE', zkey, f(ttl))
    redis.call('PEXPIRE', hkey, f(ttl))
  end
end

if op == 'h' then
  local s = redis.call('ZSCORE', zkey, ARGV[2])
  if s and tonumber(s) > now then
    return {1, now, tonumber(s)}
  end
  return {0, now, 0}
end

local err = reclaim()
if err then
  return err
end

if op == 'a' then
  local id, n, max, lease = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
  local inflight = total()
  if type(inflight) == 'table' then
    return inflight
  end
  local allowed = 0
  if n == 0 then
    allowed = 1
  elseif n <= max - inflight then
    allowed = 1
    inflight = inflight + n
    redis.call('ZADD', zkey, f(now + lease), id)
    redis.call('HSET', hkey, id, f(n), 'n', f(inflight))
    expire()
  end
  local reset = 0
  local d = last()
  if d then
    reset = math.max(d - now, 1)
  end
  local retry = 0
  if allowed == 0 and n <= max then
    -- The time until enough of the slots held now reach their deadlines
    -- for n to fit: an upper bound on when they come back.
    local free = max - inflight
    local from = 0
    while free < n do
      local r = redis.call('ZRANGE', zkey, from, from + 127, 'WITHSCORES')
      if #r == 0 then
        break
      end
      local ids = {}
      for i = 1, #r, 2 do
        ids[#ids + 1] = r[i]
      end
      local ws = redis.call('HMGET', hkey, unpack(ids))
      for i = 1, #ids do
        free = free + (tonumber(ws[i]) or 0)
        retry = math.max(tonumber(r[2 * i]) - now, 1)
        if free >= n then
          break
        end
      end
      from = from + 128
    end
  end
  return {allowed, now, math.max(max - inflight, 0), reset, retry}
end

if op == 'r' then
  local id = ARGV[2]
  local w = redis.call('HGET', hkey, id)
  if redis.call('ZREM', zkey, id) == 0 then
    return {0, now}
  end
  redis.call('HDEL', hkey, id)
  if redis.call('ZCARD', zkey) == 0 then
    redis.call('DEL', zkey, hkey)
    return {1, now}
  end
  local n = num(redis.call('HGET', hkey, 'n') or 0, 'total')
  if type(n) == 'table' then
    return n
  end
  redis.call('HSET', hkey, 'n', f(math.max(n - (tonumber(w) or 0), 0)))
  return {1, now}
end

if op == 'e' then
  local id, lease = ARGV[2], tonumber(ARGV[5])
  local s = redis.call('ZSCORE', zkey, id)
  if not s then
    return {0, now, 0}
  end
  local d = now + lease
  if ARGV[3] ~= 'set' then
    d = math.max(tonumber(s), d)
  end
  redis.call('ZADD', zkey, f(d), id)
  expire()
  return {1, now, d}
end

if op == 'i' then
  local inflight = total()
  if type(inflight) == 'table' then
    return inflight
  end
  return {inflight, now}
end

return redis.error_reply('ERR admit: unknown concurrency operation')
