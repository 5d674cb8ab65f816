-- slidingwindow.lua (module "slidingwindow") mirrors
-- internal/algo/slidingwindow.go: SlidingWindow (a table {Win, Cur, Prev}),
-- SlidingWindowStep, SlidingWindowApproxStep, slidingStep,
-- SlidingWindowUndo, untilUnits and slidingRetry, line for line (addSat is in
-- params.lua). Where Go computes p.Burst-s.Cur-n and tests it against 0 the
-- Lua compares the equivalent sums, since its values are never negative.
-- Like Go, slidingRetry takes a quotient that does not fit in 64 bits as 0
-- (which cannot happen there). The stored form (slidingDecode,
-- slidingEncode) follows.

L.import('lib')
local add, sub, mul, cmp, lt, eq, udivmod, div63, ceil63, digits, fmt = L.add, L.sub, L.mul, L.cmp, L.lt, L.eq, L.udivmod, L.div63, L.ceil63, L.digits, L.fmt
local sfind = string.find
L.import('params')
L.import('window')
local MaxTime, Never, Normal, Unlimited, Closed, unlimited, closed = L.MaxTime, L.Never, L.Normal, L.Unlimited, L.Closed, L.unlimited, L.closed
local windowOf = L.windowOf

-- SlidingWindow is the state of a sliding-window counter: Cur events
-- admitted in window Win and Prev in the window before. The zero value is
-- empty.
local slidingZero = {Win = 0, Cur = 0, Prev = 0}

local untilUnits, slidingRetry, slidingStep

-- SlidingWindowStep admits n events at now if the estimate plus n is at
-- most B. An instant before the current window counts at the window's
-- start. Only an admission (n > 0) changes the state.
local function SlidingWindowStep(s, p, now, n)
  return slidingStep(s, p, now, n, false)
end

-- SlidingWindowApproxStep admits n events at now if
-- floor(Prev×(W-e)/W) + Cur + n <= B, that is if the estimate plus n is
-- below B+1. An admission where Prev no longer weighs forgets it.
local function SlidingWindowApproxStep(s, p, now, n)
  return slidingStep(s, p, now, n, true)
end

-- slidingStep admits n iff (estimate + n)×W <= B×W + slack, in units:
-- slack 0 is the strict form, W-1 the approximate one.
slidingStep = function(s, p, now, n, approx)
  local saved = s
  local mode = p.Mode
  if mode == Unlimited then
    return s, unlimited()
  elseif mode == Closed then
    return s, closed(n)
  end
  local slack = 0
  if approx then
    slack = sub(p.CapN, 1)
  end
  local k, e = windowOf(p, now)
  local c = cmp(k, s.Win)
  if c > 0 and eq(k, add(s.Win, 1)) then
    s = {Win = k, Cur = 0, Prev = s.Cur}
  elseif c > 0 then
    s = {Win = k, Cur = 0, Prev = 0}
  elseif c < 0 then
    e = 0
  end
  local capN = p.CapN
  -- weighted = Prev×(W-e), in units; the estimate×W is weighted + Cur×W.
  local weighted = mul(s.Prev, sub(capN, e))
  local limit = add(mul(p.Burst, capN), slack)
  local est = add(weighted, mul(s.Cur, capN))
  local r = {Allowed = true, Remaining = 0, RetryAfter = 0, ResetAfter = 0}
  if lt(p.Burst, n) then
    r = {Allowed = false, Remaining = 0, RetryAfter = Never, ResetAfter = 0}
  elseif n ~= 0 then
    if lt(limit, add(est, mul(n, capN))) then
      r = {Allowed = false, Remaining = 0, RetryAfter = untilUnits(p, now, s.Win, slidingRetry(s, p, e, n, slack)), ResetAfter = 0}
    else
      s = {Win = s.Win, Cur = add(s.Cur, n), Prev = s.Prev}
      if not lt(slack, weighted) then
        s.Prev = 0 -- it weighs nothing from now to the window's end
      end
      est = add(est, mul(n, capN))
      saved = s
    end
  end
  if lt(est, limit) then
    -- Remaining = floor((B×W + slack - est)/W).
    r.Remaining = div63(sub(limit, est), capN)
  end
  -- Full again (B fits) once the counts weigh at most slack.
  if s.Cur ~= 0 then
    r.ResetAfter = untilUnits(p, now, s.Win, sub(mul(2, capN), (udivmod(slack, s.Cur))))
  elseif s.Prev ~= 0 then
    r.ResetAfter = untilUnits(p, now, s.Win, sub(capN, (udivmod(slack, s.Prev))))
  end
  return saved, r
end

-- SlidingWindowUndo gives back n events admitted at now: it takes them off
-- the current count, never below zero, unless now is in a later window than
-- the state's. (A count of 0 is returned as it is, as in fixedwindow.lua.)
local function SlidingWindowUndo(s, p, now, n)
  if p.Mode ~= Normal or n == 0 then
    return s
  end
  local k = windowOf(p, now)
  if lt(s.Win, k) then
    return s
  end
  -- s.Cur -= min(n, s.Cur)
  if s.Cur == 0 then
    return s
  elseif lt(n, s.Cur) then
    return {Win = s.Win, Cur = sub(s.Cur, n), Prev = s.Prev}
  end
  return {Win = s.Win, Cur = 0, Prev = s.Prev}
end

-- untilUnits returns the ns from now until off units after the start of
-- window k, rounded up.
untilUnits = function(p, now, k, off)
  local at = add(mul(k, p.CapN), off)
  local nowU = mul(now, p.Td)
  if not lt(nowU, at) then
    return 0
  end
  return ceil63(sub(at, nowU), p.Td)
end

-- slidingRetry returns the offset, in units from the start of the current
-- window, of the first instant at which n events (n <= B) fit, given that
-- they do not fit at elapsed e, for slidingStep's slack.
slidingRetry = function(s, p, e, n, slack)
  local capN = p.CapN
  -- In this window: the first e' with Prev×(W-e') <= (B-Cur-n)×W + slack.
  if not lt(p.Burst, add(s.Cur, n)) and s.Prev ~= 0 then -- room >= 0
    local room = sub(p.Burst, add(s.Cur, n))
    local q = udivmod(add(mul(room, capN), slack), s.Prev)
    -- q < W - e because the request was denied at e.
    if q ~= 0 then
      return sub(capN, q)
    end
  end
  -- In the next window Prev' = Cur and Cur' = 0: the first e' with
  -- Cur×(W-e') <= (B-n)×W + slack, else the window after.
  local at = 0
  if s.Cur ~= 0 then
    local q = udivmod(add(mul(sub(p.Burst, n), capN), slack), s.Cur)
    if lt(q, capN) then
      at = sub(capN, q)
    end
  end
  return add(capN, at)
end

-- Not in Go: the stored form "s<Win>:<Cur>:<Prev>", Win <= MaxTime. A
-- missing key (false) is the zero state; nil means a malformed value.
local function slidingDecode(v)
  if not v then return slidingZero end
  local _, e, c, d = sfind(v, '^s%d+():%d+():%d+$')
  if e == nil or c > 21 or d - c > 20 or e - d > 19 then return nil end
  local win, cur, prev = digits(v, 2, c - 1), digits(v, c + 1, d - 1), digits(v, d + 1, e)
  if win == nil or cur == nil or prev == nil or lt(MaxTime, win) then return nil end
  return {Win = win, Cur = cur, Prev = prev}
end

local function slidingEncode(s)
  return 's' .. fmt(s.Win) .. ':' .. fmt(s.Cur) .. ':' .. fmt(s.Prev)
end

-- The approximate form shares the state, its stored form and the undo.
local approx = {tag = 's', name = 'sliding window', window = true, step = SlidingWindowApproxStep, undo = SlidingWindowUndo, decode = slidingDecode, encode = slidingEncode}
return {tag = 's', name = 'sliding window', window = true, step = SlidingWindowStep, undo = SlidingWindowUndo, decode = slidingDecode, encode = slidingEncode, approx = approx}
