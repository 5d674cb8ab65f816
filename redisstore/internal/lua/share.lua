-- share.lua (module "share") mirrors internal/algo/share.go: shareCount,
-- shareCost, ShareStep, shareReport and ShareUndo, in that order and line
-- for line. A ShareBudget is a table {At, Frac, Win, Cur, Prev, New}, a
-- ShareTenant {At, Frac, Seen} (their GCRA fields as gcra.lua's), a
-- ShareParams {P, LendN, Window}. The stored forms (shareDecode,
-- shareEncode) follow.

L.import('lib')
L.import('params')
L.import('gcra')
local add, sub, mul, lt, eq, divmod, ceil63, div63, parse, fmt = L.add, L.sub, L.mul, L.lt, L.eq, L.divmod, L.ceil63, L.div63, L.parse, L.fmt
local gcraDebt, gcraAt, gcraGive, GCRAUndo = L.gcraDebt, L.gcraAt, L.gcraGive, L.GCRAUndo
local Never, farFuture = L.Never, L.farFuture
local sfind = string.find

local shareMaxSum = 4503599627370496 -- 1 << 52

local function copy(s)
  local c = {}
  for k, v in pairs(s) do c[k] = v end
  return c
end

local function max(a, b)
  if lt(a, b) then return b end
  return a
end

local function min(a, b)
  if lt(b, a) then return b end
  return a
end

-- shareCount moves budget b to window win and counts tenant t of weight w
-- in it, and returns them with the active weight W (at least w). (The
-- sums of weights stay below 2^52: plain numbers.)
local function shareCount(b, t, win, w)
  b, t = copy(b), copy(t)
  if eq(win, add(b.Win, 1)) then
    b.Win, b.Prev, b.Cur, b.New = win, b.Cur, 0, 0
  elseif lt(b.Win, win) then
    b.Win, b.Prev, b.Cur, b.New = win, 0, 0, 0
  end
  win = b.Win
  if not eq(t.Seen, win) then
    b.Cur = math.min(b.Cur + w, shareMaxSum)
    if not eq(t.Seen, sub(win, 1)) then
      b.New = math.min(b.New + w, shareMaxSum)
    end
    t.Seen = win
  end
  return b, t, math.max(b.Prev + b.New, w)
end

-- shareCost returns the cost of n <= Burst events to a tenant of weight w
-- among an active weight W: ceil(n×Tn×W/w) units, saturated at Never.
local function shareCost(p, n, bigW, w)
  return ceil63(mul(mul(n, p.Tn), bigW), w)
end

local shareReport

-- window returns the index plus one of the window of now.
local function window(sp, now)
  return add((divmod(now, sp.Window)), 1)
end

-- ShareStep decides n events of a tenant of weight w at now and returns
-- the new states and the decision.
local function ShareStep(b, t, sp, now, n, w)
  local p = sp.P
  local b1, t1, bigW = shareCount(b, t, window(sp, now), w)
  local d0 = gcraDebt(b1, p, now)
  local td = gcraDebt(t1, p, now)
  if n == 0 then
    return b, t, shareReport(sp, d0, td, bigW, w, true, 0)
  end
  if lt(p.Burst, n) then
    return b, t, shareReport(sp, d0, td, bigW, w, false, Never)
  end
  local capN = p.CapN
  local need = add(d0, mul(n, p.Tn))
  local cost = shareCost(p, n, bigW, w)
  local within = not lt(capN, cost)
  local tneed = add(td, cost)
  if within and not lt(capN, need) and not lt(capN, tneed) then
    local g, h = gcraAt(p, now, need), gcraAt(p, now, tneed)
    b1.At, b1.Frac, t1.At, t1.Frac = g.At, g.Frac, h.At, h.Frac
    return b1, t1, shareReport(sp, need, tneed, bigW, w, true, 0)
  end
  local lendN = sp.LendN
  if not lt(lendN, need) then
    local g = gcraAt(p, now, need)
    b1.At, b1.Frac = g.At, g.Frac
    return b1, t1, shareReport(sp, need, td, bigW, w, true, 0)
  end
  local wait = Never
  if within then
    wait = 0
    if lt(capN, need) then
      wait = ceil63(sub(need, capN), p.Td)
    end
    if lt(capN, tneed) then
      wait = max(wait, ceil63(sub(tneed, capN), p.Td))
    end
  end
  if not lt(lendN, mul(n, p.Tn)) then
    wait = min(wait, ceil63(sub(need, lendN), p.Td))
  end
  return b1, t1, shareReport(sp, d0, td, bigW, w, false, wait)
end

-- shareReport fills a Result from the budget's debt d and the tenant's td
-- (units) after the decision.
shareReport = function(sp, d, td, bigW, w, allowed, retry)
  local p = sp.P
  local r = {Allowed = allowed, Remaining = 0, RetryAfter = retry, ResetAfter = 0}
  local own, share, lend = 0, 0, 0
  if lt(d, p.CapN) then
    own = divmod(sub(p.CapN, d), p.Tn)
  end
  if lt(td, p.CapN) then
    share = div63(mul((divmod(sub(p.CapN, td), p.Tn)), w), bigW)
  end
  if lt(d, sp.LendN) then
    lend = divmod(sub(sp.LendN, d), p.Tn)
  end
  r.Remaining = max(min(own, share), lend)
  r.ResetAfter = max(ceil63(d, p.Td), ceil63(td, p.Td))
  return r
end

-- ShareUndo gives back n events a tenant of weight w was admitted at now.
local function ShareUndo(b, t, sp, now, n, w)
  local p = sp.P
  if n == 0 or lt(p.Burst, n) then
    return b, t
  end
  b, t = copy(b), copy(t)
  local g = GCRAUndo(b, p, now, n)
  b.At, b.Frac = g.At, g.Frac
  local _, _, bigW = shareCount(b, t, window(sp, now), w)
  local h = gcraGive(t, p, now, shareCost(p, n, bigW, w))
  t.At, t.Frac = h.At, h.Frac
  return b, t
end

-- Not in Go: the stored forms, "w<At>:<Frac>:<Win>:<Cur>:<Prev>:<New>" for
-- a budget and "t<At>:<Frac>:<Seen>" for a tenant (decimal int64s, At at
-- most farFuture, the sums at most 2^52). A missing key (false) is the
-- zero state; nil means a malformed value.
local function fields(v, tag, k)
  if not v then
    local z = {}
    for i = 1, k do z[i] = 0 end
    return z
  end
  if string.sub(v, 1, 1) ~= tag then return nil end
  local out, pos = {}, 2
  for i = 1, k do
    local s, e = sfind(v, '^%d+', pos)
    if s == nil then return nil end
    out[i] = parse(string.sub(v, s, e))
    if out[i] == nil then return nil end
    pos = e + 1
    if i < k then
      if string.sub(v, pos, pos) ~= ':' then return nil end
      pos = pos + 1
    end
  end
  if pos <= #v or lt(farFuture, out[1]) then return nil end
  return out
end

local function shareDecodeBudget(v)
  local f = fields(v, 'w', 6)
  if f == nil or lt(shareMaxSum, f[4]) or lt(shareMaxSum, f[5]) or lt(shareMaxSum, f[6]) then return nil end
  return {At = f[1], Frac = f[2], Win = f[3], Cur = f[4], Prev = f[5], New = f[6]}
end

local function shareDecodeTenant(v)
  local f = fields(v, 't', 3)
  if f == nil then return nil end
  return {At = f[1], Frac = f[2], Seen = f[3]}
end

local function shareEncodeBudget(b)
  return 'w' .. fmt(b.At) .. ':' .. fmt(b.Frac) .. ':' .. fmt(b.Win) .. ':' .. fmt(b.Cur) .. ':' .. fmt(b.Prev) .. ':' .. fmt(b.New)
end

local function shareEncodeTenant(t)
  return 't' .. fmt(t.At) .. ':' .. fmt(t.Frac) .. ':' .. fmt(t.Seen)
end

L.ShareStep, L.ShareUndo, L.shareWindow = ShareStep, ShareUndo, window
L.shareDecodeBudget, L.shareDecodeTenant = shareDecodeBudget, shareDecodeTenant
L.shareEncodeBudget, L.shareEncodeTenant = shareEncodeBudget, shareEncodeTenant
