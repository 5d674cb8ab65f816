-- params.lua (module "params") mirrors internal/algo/params.go: the
-- constants, Mode, Result with shift, Clamp, ceilDiv, Params.Window and the
-- results of the two degenerate modes. (addSat, from slidingwindow.go, comes
-- first because shift uses it.) A Params is a table {Mode, Burst, Tn, Td,
-- CapN} and a Result a table {Allowed, Remaining, RetryAfter, ResetAfter},
-- all values in lib.lua's normal form.

L.import('lib')
local add, lt, divmod, MAXI64 = L.add, L.lt, L.divmod, L.MAXI64

local MaxTime = {7387904, 8601842, 46116} -- 1 << 62
local MaxSpan = {6846976, 2150460, 11529} -- 1 << 60
local Never = MAXI64
local farFuture = {1081856, 2902764, 69175} -- MaxTime + 2*MaxSpan

local Normal, Unlimited, Closed = 0, 1, 2

-- addSat returns a+b saturated at Never.
local function addSat(a, b)
  local s = add(a, b)
  if lt(Never, s) then return Never end
  return s
end

-- shift adds gap ns to a result's durations: the result was computed at an
-- instant gap ns after the caller's (time went backwards and was clamped).
local function shift(r, gap)
  if gap == 0 then return r end
  if r.RetryAfter ~= 0 then r.RetryAfter = addSat(r.RetryAfter, gap) end
  if r.ResetAfter ~= 0 then r.ResetAfter = addSat(r.ResetAfter, gap) end
  return r
end

-- Clamp maps an instant to the step functions' domain [0, MaxTime]. (Lua
-- values are never negative: main.lua maps a negative instant to 0.)
local function Clamp(now)
  if lt(MaxTime, now) then return MaxTime end
  return now
end

-- ceilDiv returns ceil(a/b) for a >= 0, b > 0.
local function ceilDiv(a, b)
  local q, r = divmod(a, b)
  if r ~= 0 then q = add(q, 1) end
  return q
end

-- Window returns the window length B×T rounded up to whole nanoseconds.
local function Window(p)
  if p.Mode ~= Normal then return 0 end
  return ceilDiv(p.CapN, p.Td)
end

-- unlimited and closed are the results of the two degenerate modes.
local function unlimited()
  return {Allowed = true, Remaining = MAXI64, RetryAfter = 0, ResetAfter = 0}
end

local function closed(n)
  if n == 0 then
    return {Allowed = true, Remaining = 0, RetryAfter = 0, ResetAfter = 0}
  end
  return {Allowed = false, Remaining = 0, RetryAfter = Never, ResetAfter = 0}
end

L.MaxTime, L.MaxSpan, L.Never, L.farFuture = MaxTime, MaxSpan, Never, farFuture
L.Normal, L.Unlimited, L.Closed = Normal, Unlimited, Closed
L.addSat, L.shift, L.Clamp, L.ceilDiv, L.Window = addSat, shift, Clamp, ceilDiv, Window
L.unlimited, L.closed = unlimited, closed
