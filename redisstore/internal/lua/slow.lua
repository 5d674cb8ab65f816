-- slow.lua (module "slow"): the general path of main.lua, not a mirror of Go
-- code: it decides with the step function of the algorithm's module, on the
-- values of lib.lua, whatever the limit, state and instant.

L.import('lib')
L.import('params')
local import, fail, arg, eq, lt, mul, add, divmod, fmt = L.import, L.fail, L.arg, L.eq, L.lt, L.mul, L.add, L.divmod, L.fmt
local sfmt, ssub, fmod = string.format, string.sub, math.fmod

-- The module of each algorithm code, and of each stored state's tag (its
-- first byte); the token bucket and the leaky bucket meter share a state.
local byCode = {gcra = 'gcra', tb = 'bucket', lb = 'bucket', fw = 'fixedwindow', sw = 'slidingwindow', sl = 'slidinglog', swa = 'slidingwindow'}
local byTag = {g = 'gcra', b = 'bucket', f = 'fixedwindow', s = 'slidingwindow', l = 'slidinglog'}

local nowV -- the instant of the call, once known

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
    mode = L.Normal
    if burst == 0 or tn == 0 or td == 0 or not eq(mul(burst, tn), capN)
      or lt(L.MaxSpan, (divmod(capN, td))) or (window and lt(capN, td)) then
      fail(sfmt('key %d: not a compiled limit', i))
    end
  elseif m == '1' then
    mode = L.Unlimited
  elseif m == '2' then
    mode = L.Closed
  else
    fail(sfmt('key %d: Mode must be 0, 1 or 2', i))
  end
  return {Mode = mode, Burst = burst, Tn = tn, Td = td, CapN = capN}
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

-- decide runs the step function of algorithm code for key i (n given as the
-- argument nArg, the limit's fields from ARGV[pb]) at now = nowHi×1e7 +
-- nowLo on the state stored as v, and returns the new stored form (v itself
-- if unchanged, false for an empty sliding log) and the result's fields.
-- With refund set it gives the n events back instead (the algorithm's undo
-- function), and the result is a peek's at now on the state it leaves.
-- With dArg (a maxDelay in ns, as its argument) it runs the algorithm's
-- delay form (GCRADelay, BucketDelay) instead of its step.
function L.decide(i, nArg, pb, code, v, nowHi, nowLo, refund, dArg)
  if nowV == nil then
    if nowHi < 9e8 then
      nowV = nowHi * 1e7 + nowLo
    else
      local l1 = fmod(nowHi, 1e7)
      nowV = {nowLo, l1, (nowHi - l1) / 1e7}
    end
  end
  local alg = import(byCode[code])
  if code == 'swa' then
    alg = alg.approx -- the sliding window's module, approximate form
  end
  local n = arg(nArg)
  if n == nil then
    fail(sfmt('key %d: n must be a decimal integer in [0, 2^63)', i))
  end
  local p = readParams(i, pb, alg.window)
  local st = nil
  if p.Mode == L.Normal then
    st = decodeState(i, alg, v)
  end
  local st2, r
  if refund then
    st2, r = alg.step(alg.undo(st, p, nowV, n), p, nowV, 0)
  elseif dArg ~= nil and p.Mode == L.Normal then
    local maxDelay = arg(dArg)
    if maxDelay == nil or lt(L.MaxSpan, maxDelay) then
      fail(sfmt('key %d: maxDelay must be a decimal integer in [0, 2^60]', i))
    end
    st2, r = alg.delay(st, p, nowV, n, maxDelay)
  else
    st2, r = alg.step(st, p, nowV, n)
  end
  if st2 ~= st or (st2 ~= nil and st2.dirty) then
    if st2.size == 0 then -- an empty sliding log
      v = false
    else
      v = alg.encode(st2)
    end
  end
  return v, r.Allowed, r.Remaining, r.RetryAfter, r.ResetAfter
end

-- stateName returns the name of the state of algorithm code, or of tag.
function L.stateName(code, tag)
  return import(code and byCode[code] or byTag[tag]).name
end

-- reply returns a value of a result as the script replies it: an integer
-- below SMALL, else a decimal string.
function L.reply(x)
  if type(x) == 'number' then return x end
  return fmt(x)
end

-- px returns max(ceil(reset / 1ms) + 1, minTTL) in decimal.
function L.px(reset, minTTL)
  local q, r = divmod(reset, 1e6)
  q = add(q, 1)
  if r ~= 0 then q = add(q, 1) end
  if lt(q, minTTL) then q = minTTL end
  return fmt(q)
end
