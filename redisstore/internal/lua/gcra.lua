-- gcra.lua (module "gcra") mirrors internal/algo/gcra.go: GCRA (a table
-- {At, Frac}), its debt method (gcraDebt), gcraAt, GCRAStep, gcraReport,
-- GCRAUndo and gcraGive, in that order and line for line, and GCRADelay
-- (delay.go). The stored form (gcraDecode,
-- gcraEncode) follows.

L.import('lib')
local add, sub, mul, cmp, lt, divmod, udivmod, ceil63 = L.add, L.sub, L.mul, L.cmp, L.lt, L.divmod, L.udivmod, L.ceil63
local digits, fmt, TWO64 = L.digits, L.fmt, L.TWO64
local sfind = string.find
L.import('params')
local MaxTime, farFuture, Never = L.MaxTime, L.farFuture, L.Never
local Normal, Unlimited, Closed, unlimited, closed = L.Normal, L.Unlimited, L.Closed, L.unlimited, L.closed

-- GCRA is the state of the generic cell rate algorithm: TAT = At + Frac/Td.
-- The zero value is a full limit.
local gcraZero = {At = 0, Frac = 0}

-- debt returns D×Td, the debt in units of 1/Td ns. A TAT in the future of
-- now counts in full, including when now went backwards.
local function gcraDebt(s, p, now)
  local c = cmp(s.At, now)
  if c < 0 or (c == 0 and s.Frac == 0) then
    return 0
  end
  return add(mul(sub(s.At, now), p.Td), s.Frac)
end

-- at returns the state whose TAT lies debt units after now.
local function gcraAt(p, now, debt)
  if p.Td == 1 and lt(debt, TWO64) then
    return {At = add(now, debt), Frac = 0}
  end
  local q, r, ok = udivmod(debt, p.Td)
  if not ok or lt(MaxTime, q) then
    return {At = farFuture, Frac = 0}
  end
  return {At = add(now, q), Frac = r}
end

local gcraReport, gcraGive

-- GCRAStep admits n events at now if they fit and returns the new state and
-- the decision. n must be >= 0.
local function GCRAStep(s, p, now, n)
  local mode = p.Mode
  if mode == Unlimited then
    return s, unlimited()
  elseif mode == Closed then
    return s, closed(n)
  end
  local d0 = gcraDebt(s, p, now)
  if n == 0 then
    return s, gcraReport(p, d0, true, 0)
  end
  if lt(p.Burst, n) then
    return s, gcraReport(p, d0, false, Never)
  end
  local need = add(d0, mul(n, p.Tn))
  local capN = p.CapN
  if lt(capN, need) then
    return s, gcraReport(p, d0, false, ceil63(sub(need, capN), p.Td))
  end
  return gcraAt(p, now, need), gcraReport(p, need, true, 0)
end

-- gcraReport fills a Result from the debt d (units) after the decision.
gcraReport = function(p, d, allowed, retry)
  local r = {Allowed = allowed, Remaining = 0, RetryAfter = retry, ResetAfter = 0}
  if lt(d, p.CapN) then
    r.Remaining = divmod(sub(p.CapN, d), p.Tn)
  end
  r.ResetAfter = ceil63(d, p.Td)
  return r
end

-- GCRAUndo gives back n events admitted at now: the TAT moves back by n×T,
-- but never before now; a state that owes nothing at now, or more than its
-- capacity (a later delayed admission relies on the events), is returned
-- as it is. (Lua values are never negative: Go's n <= 0 is n = 0.)
local function GCRAUndo(s, p, now, n)
  if p.Mode ~= Normal or n == 0 or lt(p.CapN, gcraDebt(s, p, now)) then
    return s
  end
  return gcraGive(s, p, now, mul(n, p.Tn))
end

-- gcraGive moves the TAT of s back by refund units, never before now; a
-- state that owes nothing at now is returned as it is.
gcraGive = function(s, p, now, refund)
  local d = gcraDebt(s, p, now)
  if d == 0 then
    return s
  end
  if not lt(refund, d) then
    return {At = now, Frac = 0}
  end
  local rest = sub(d, refund)
  if not lt(rest, mul(sub(farFuture, now), p.Td)) then
    return s -- still owing past farFuture, which no step makes: left as it is
  end
  return gcraAt(p, now, rest)
end

-- GCRADelay (delay.go) decides n events at now as GCRAStep does, except
-- that a request that would be admitted within maxDelay ns is admitted now,
-- with RetryAfter the wait, and the TAT moves ahead by n×T.
local function GCRADelay(s, p, now, n, maxDelay)
  local next, r = GCRAStep(s, p, now, n)
  if r.Allowed or lt(maxDelay, r.RetryAfter) or lt(L.MaxSpan, r.RetryAfter) then
    return next, r
  end
  local need = add(gcraDebt(s, p, now), mul(n, p.Tn))
  return gcraAt(p, now, need), gcraReport(p, need, true, r.RetryAfter)
end

-- Not in Go: the stored form. "g<At>" when Frac is 0 (always when Td = 1),
-- else "g<At>:<Frac>"; At <= farFuture. A missing key (false) is the zero
-- state; nil means a malformed value.
local function gcraDecode(v)
  if not v then return gcraZero end
  local _, e, c = sfind(v, '^g%d+()')
  if e == nil or e > 20 then return nil end
  local at, frac = digits(v, 2, e), 0
  if c <= #v then
    local _, f = sfind(v, '^:%d+$', c)
    if f == nil or f - c > 19 then return nil end
    frac = digits(v, c + 1, f)
  end
  if at == nil or frac == nil or lt(farFuture, at) then return nil end
  return {At = at, Frac = frac}
end

local function gcraEncode(s)
  if s.Frac == 0 then return 'g' .. fmt(s.At) end
  return 'g' .. fmt(s.At) .. ':' .. fmt(s.Frac)
end

L.GCRAStep, L.GCRAUndo, L.GCRADelay, L.gcraDebt, L.gcraZero = GCRAStep, GCRAUndo, GCRADelay, gcraDebt, gcraZero
L.gcraAt, L.gcraGive = gcraAt, gcraGive
return {tag = 'g', name = 'gcra', window = false, step = GCRAStep, undo = GCRAUndo, delay = GCRADelay, decode = gcraDecode, encode = gcraEncode}
