-- main.lua (module "main"): the script's entry point, not a mirror of Go
-- code. It reads the arguments, decides every key in order against the
-- states pending from the earlier keys of the same call, then writes the
-- changed states. The calling convention is documented in the Go package
-- lua (doc.go).

local add, lt, eq, mul, divmod, arg, fmt, fromTime = L.add, L.lt, L.eq, L.mul, L.divmod, L.arg, L.fmt, L.fromTime
local import = L.import
local sfmt, ssub, sbyte = string.format, string.sub, string.byte
import('params')
local MaxSpan, Normal, Unlimited, Closed, Clamp, ceilDiv = L.MaxSpan, L.Normal, L.Unlimited, L.Closed, L.Clamp, L.ceilDiv

local function fail(msg)
  error('admit: ' .. msg, 0)
end

-- The module of each algorithm code; the token bucket and the leaky bucket
-- meter share one state. byTag names the module of each state's first byte.
local byCode = {gcra = 'gcra', tb = 'bucket', lb = 'bucket', fw = 'fixedwindow', sw = 'slidingwindow', sl = 'slidinglog'}
local byTag = {g = 'gcra', b = 'bucket', f = 'fixedwindow', s = 'slidingwindow', l = 'slidinglog'}

-- readParams returns the compiled limit of key i from ARGV[b..b+4] after
-- checking that algo.Compile (and CheckWindow for a window algorithm) could
-- have produced it: the exact arithmetic of the scripts then agrees with
-- Go's 64-bit arithmetic, which cannot overflow for such limits.
local function readParams(i, b, window)
  local m = ARGV[b]
  local burst, tn, td, capN = arg(ARGV[b + 1]), arg(ARGV[b + 2]), arg(ARGV[b + 3]), arg(ARGV[b + 4])
  if burst == nil or tn == nil or td == nil or capN == nil then
    fail(sfmt('key %d: Burst, Tn, Td and CapN must be decimal integers in [0, 2^63)', i))
  end
  local mode
  if m == '0' then
    mode = Normal
    if burst == 0 or tn == 0 or td == 0 or not eq(mul(burst, tn), capN)
      or lt(MaxSpan, (divmod(capN, td))) or (window and lt(capN, td)) then
      fail(sfmt('key %d: not a compiled limit', i))
    end
  elseif m == '1' then
    mode = Unlimited
  elseif m == '2' then
    mode = Closed
  else
    fail(sfmt('key %d: Mode must be 0, 1 or 2', i))
  end
  return {Mode = mode, Burst = burst, Tn = tn, Td = td, CapN = capN}
end

-- readNow returns the instant of ARGV[2], or Redis TIME, clamped.
local function readNow()
  local s = ARGV[2]
  local now
  if s == '' then
    local t = redis.call('TIME')
    now = fromTime(tonumber(t[1]), tonumber(t[2]))
  elseif sbyte(s, 1) == 45 then -- '-': before the epoch
    local abs = ssub(s, 2)
    if arg(abs) == nil and abs ~= '9223372036854775808' then
      fail('ARGV[2] must be "" or a decimal int64 instant (ns)')
    end
    now = 0
  else
    now = arg(s)
    if now == nil then
      fail('ARGV[2] must be "" or a decimal int64 instant (ns)')
    end
  end
  return Clamp(now)
end

-- decodeState returns the state stored as v (false if missing) for key i of
-- algorithm alg.
local function decodeState(i, alg, v)
  local st = alg.decode(v)
  if st ~= nil then
    return st
  end
  local name = byTag[ssub(v, 1, 1)]
  if name ~= nil then
    local other = import(name)
    if other ~= alg and other.decode(v) ~= nil then
      fail(sfmt('key %d holds a %s state, not a %s state', i, other.name, alg.name))
    end
  end
  fail(sfmt('key %d holds a malformed %s state (a value this script did not write)', i, alg.name))
end

local function run()
  local nkeys = #KEYS
  if #ARGV ~= 3 + 7 * nkeys then
    fail(sfmt('%d keys need %d arguments, got %d', nkeys, 3 + 7 * nkeys, #ARGV))
  end
  local all = ARGV[1]
  if all ~= '0' and all ~= '1' then
    fail('ARGV[1] must be "0" (independent) or "1" (all-or-nothing)')
  end
  all = all == '1'
  local now = readNow()
  local minTTL = arg(ARGV[3])
  if minTTL == nil then
    fail('ARGV[3] must be a decimal minimum TTL (ms)')
  end

  local reply = {fmt(now)}
  local pending, order = {}, {}
  local allowed = true
  for i = 1, nkeys do
    local b = 4 + 7 * (i - 1)
    local name = byCode[ARGV[b]]
    if name == nil then
      fail(sfmt('key %d: unknown algorithm code %q', i, ARGV[b]))
    end
    local alg = import(name)
    local n = arg(ARGV[b + 1])
    if n == nil then
      fail(sfmt('key %d: n must be a decimal integer in [0, 2^63)', i))
    end
    local p = readParams(i, b + 2, alg.window)
    local ent, st
    if p.Mode == Normal then
      local key = KEYS[i]
      ent = pending[key]
      if ent == nil then
        local v = redis.pcall('GET', key)
        if type(v) == 'table' then
          fail(sfmt('key %d: %s', i, tostring(v.err)))
        end
        ent = {key = key, alg = alg, st = decodeState(i, alg, v)}
        pending[key] = ent
        order[#order + 1] = ent
      elseif ent.alg.tag ~= alg.tag then
        fail(sfmt('key %d holds a %s state, not a %s state', i, ent.alg.name, alg.name))
      end
      st = ent.st
    end
    local st2, r = alg.step(st, p, now, n)
    if st2 ~= st or (st2 and st2.dirty) then
      if st2.dirty then st2.dirty = false end
      ent.st, ent.changed, ent.reset = st2, true, r.ResetAfter
    end
    if r.Allowed then
      reply[#reply + 1] = 1
    else
      reply[#reply + 1] = 0
      allowed = false
    end
    reply[#reply + 1] = fmt(r.Remaining)
    reply[#reply + 1] = fmt(r.RetryAfter)
    reply[#reply + 1] = fmt(r.ResetAfter)
  end

  if all and not allowed then
    return reply
  end
  for j = 1, #order do
    local ent = order[j]
    if ent.changed then
      if ent.st.size == 0 then -- an empty sliding log
        redis.call('DEL', ent.key)
      else
        -- PX = max(ceil(ResetAfter / 1ms) + 1, minTTL)
        local ttl = add(ceilDiv(ent.reset, 1000000), 1)
        if lt(ttl, minTTL) then ttl = minTTL end
        redis.call('SET', ent.key, ent.alg.encode(ent.st), 'PX', fmt(ttl))
      end
    end
  end
  return reply
end

if redis.replicate_commands then
  redis.replicate_commands() -- Redis < 5: replicate effects, since TIME is read
end
local ok, res = pcall(run)
if ok then
  return res
end
if type(res) == 'table' then
  return res -- an error of redis.call, as Redis gave it
end
res = tostring(res)
if ssub(res, 1, 7) ~= 'admit: ' then
  res = 'admit: internal error: ' .. res
end
return redis.error_reply(res)
