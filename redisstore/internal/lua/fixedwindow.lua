-- fixedwindow.lua (module "fixedwindow") mirrors
-- internal/algo/fixedwindow.go: FixedWindow (a table {Win, Count}),
-- FixedWindowStep and FixedWindowUndo, line for line. Where Go computes p.Burst-s.Count (which
-- cannot overflow: both are in [0, MaxInt64]) the Lua compares the
-- equivalent sums, since its values are never negative. The stored form
-- (fixedDecode, fixedEncode) follows.

L.import('lib')
local add, sub, lt, digits, fmt = L.add, L.sub, L.lt, L.digits, L.fmt
local sfind = string.find
L.import('params')
L.import('window')
local MaxTime, Never, Normal, Unlimited, Closed, unlimited, closed = L.MaxTime, L.Never, L.Normal, L.Unlimited, L.Closed, L.unlimited, L.closed
local windowOf, untilWindow = L.windowOf, L.untilWindow

-- FixedWindow is the state of a fixed-window counter: Count events admitted
-- in window Win. The zero value is an empty window.
local fixedZero = {Win = 0, Count = 0}

-- FixedWindowStep admits n events at now if they fit in the current window.
-- An instant before the window the state is in counts in that window. Only
-- an admission (n > 0) changes the state.
local function FixedWindowStep(s, p, now, n)
  local saved = s
  local mode = p.Mode
  if mode == Unlimited then
    return s, unlimited()
  elseif mode == Closed then
    return s, closed(n)
  end
  local k = windowOf(p, now)
  if lt(s.Win, k) then
    s = {Win = k, Count = 0}
  end
  local r = {Allowed = true, Remaining = 0, RetryAfter = 0, ResetAfter = 0}
  if lt(p.Burst, n) then -- n > p.Burst
    r = {Allowed = false, Remaining = 0, RetryAfter = Never, ResetAfter = 0}
  elseif lt(p.Burst, add(n, s.Count)) then -- n > p.Burst-s.Count
    r = {Allowed = false, Remaining = 0, RetryAfter = untilWindow(p, now, add(s.Win, 1)), ResetAfter = 0}
  elseif n ~= 0 then
    s = {Win = s.Win, Count = add(s.Count, n)}
    saved = s
  end
  -- r.Remaining = max(p.Burst-s.Count, 0)
  if lt(s.Count, p.Burst) then
    r.Remaining = sub(p.Burst, s.Count)
  end
  if s.Count ~= 0 then
    r.ResetAfter = untilWindow(p, now, add(s.Win, 1))
  end
  return saved, r
end

-- FixedWindowUndo gives back n events admitted at now: it takes them off
-- the count of the state's window, never below zero, unless now is in a
-- later window. (A count of 0 is returned as it is, so that a missing key
-- is not written; Go's value is the same.)
local function FixedWindowUndo(s, p, now, n)
  if p.Mode ~= Normal or n == 0 then
    return s
  end
  local k = windowOf(p, now)
  if lt(s.Win, k) then
    return s
  end
  -- s.Count -= min(n, s.Count)
  if s.Count == 0 then
    return s
  elseif lt(n, s.Count) then
    return {Win = s.Win, Count = sub(s.Count, n)}
  end
  return {Win = s.Win, Count = 0}
end

-- Not in Go: the stored form "f<Win>:<Count>", Win <= MaxTime. A missing
-- key (false) is the zero state; nil means a malformed value.
local function fixedDecode(v)
  if not v then return fixedZero end
  local _, e, c = sfind(v, '^f%d+():%d+$')
  if e == nil or c > 21 or e - c > 19 then return nil end
  local win, count = digits(v, 2, c - 1), digits(v, c + 1, e)
  if win == nil or count == nil or lt(MaxTime, win) then return nil end
  return {Win = win, Count = count}
end

local function fixedEncode(s)
  return 'f' .. fmt(s.Win) .. ':' .. fmt(s.Count)
end

return {tag = 'f', name = 'fixed window', window = true, step = FixedWindowStep, undo = FixedWindowUndo, decode = fixedDecode, encode = fixedEncode}
