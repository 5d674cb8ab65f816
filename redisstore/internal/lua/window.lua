-- window.lua (module "window") mirrors internal/algo/window.go: windowOf
-- and untilWindow, line for line.

L.import('lib')
local sub, mul, lt, udivmod, ceil63 = L.sub, L.mul, L.lt, L.udivmod, L.ceil63

-- windowOf returns the index k of the window holding now and the time
-- elapsed in it, in units of 1/Td ns: now×Td = k×CapN + elapsed. Windows are
-- aligned on the Unix epoch. It requires CheckWindow to have passed and
-- now >= 0.
local function windowOf(p, now)
  local q, r, ok = udivmod(mul(now, p.Td), p.CapN)
  if not ok then -- impossible when CapN >= Td; stay safe
    return now, 0
  end
  return q, r
end

-- untilWindow returns the ns from now until window k starts, rounded up, or
-- 0 if it has started.
local function untilWindow(p, now, k)
  local start = mul(k, p.CapN)
  local at = mul(now, p.Td)
  if not lt(at, start) then
    return 0
  end
  return ceil63(sub(start, at), p.Td)
end

L.windowOf, L.untilWindow = windowOf, untilWindow
