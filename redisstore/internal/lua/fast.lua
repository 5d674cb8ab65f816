-- fast.lua (chunk level): exact fast paths for the common decisions, not
-- mirrors: each is a step function of the mirrors specialized to limits and
-- states whose values, in the units the step function uses, stay below 4e15
-- (sums of two stay below 2^53), with instants of at least 1e7 ns. Every
-- value is then a Lua number, instants are handled as pairs hi×1e7 + lo (or
-- as offsets from now), and nothing is allocated but the stored form.
-- Outside its case each returns nil and the caller runs the general path.
-- The differential test and the edge tests check both against Go.

local sfind, ssub, sbyte, sfmt, gmatch = string.find, string.sub, string.byte, string.format, string.gmatch
local fmod, floor, tonumber, type, tostring = math.fmod, math.floor, tonumber, type, tostring

-- ceilDiv returns ceil(x/d) for 0 <= x < 2^53 and d >= 1.
local function ceilDiv(x, d)
  local r = fmod(x, d)
  if r == 0 then return x / d end
  return (x - r) / d + 1
end

-- gcraDecodeFast reads a GCRA state stored as v (false: missing) as the
-- numbers hi, lo, frac with At = hi×1e7 + lo, or returns nil if it is too
-- large for gcraStepFast (an At of more than 19 digits, a Frac of more
-- than 15). A missing state is At = 0.
local function gcraDecodeFast(v)
  if not v then return 0, 0, 0 end
  local _, e, c = sfind(v, '^g%d+()')
  if e == nil or e > 20 then return nil end
  local frac = 0
  if c <= #v then
    local _, f = sfind(v, '^:%d+$', c)
    if f == nil or f - c > 15 then return nil end
    frac = tonumber(ssub(v, c + 1))
  end
  if e > 8 then -- At has 8 digits or more
    return tonumber(ssub(v, 2, e - 7)), tonumber(ssub(v, e - 6, e)), frac
  end
  return 0, tonumber(ssub(v, 2, e)), frac
end

-- gcraEncodeFast is the stored form of At = hi×1e7 + lo (hi >= 1) and
-- frac.
local function gcraEncodeFast(hi, lo, frac)
  if frac == 0 then
    return sfmt('g%d%07d', hi, lo)
  end
  return sfmt('g%d%07d:%d', hi, lo, frac)
end

-- gcraStepFast is GCRAStep (gcra.lua) for debts, capacities and n×Tn
-- below 4e15 units of 1/Td ns. It decides n events at now = nowHi×1e7 +
-- nowLo (nowHi >= 1) for the state hi, lo, frac (see gcraDecodeFast) under
-- the limit burst, tn, td, capN = burst×tn, and returns the new state's
-- hi, lo, frac (the same values if unchanged), allowed, remaining,
-- retryAfter (-1 for Never) and resetAfter; or nil outside its case. If
-- dly is not nil, it is GCRADelay (delay.go) with maxDelay dly: a request
-- that fits within dly ns is admitted with retryAfter its wait. (Any dly
-- of 4e15 or more stands for all: the waits here are shorter.)
local function gcraStepFast(hi, lo, frac, nowHi, nowLo, n, burst, tn, td, capN, dly)
  -- d0 = debt(s, now): 0 if the TAT is at or before now, else
  -- (At-now)×Td + Frac.
  local d0 = 0
  if hi > nowHi or (hi == nowHi and (lo > nowLo or (lo == nowLo and frac > 0))) then
    -- A debt of 4e15 units or more (including any At past farFuture,
    -- since now <= MaxTime) takes the general path.
    if hi - nowHi >= 4e8 then return nil end
    d0 = ((hi - nowHi) * 1e7 + (lo - nowLo)) * td + frac
    if d0 >= 4e15 then return nil end
  end
  -- gcraReport: Remaining = floor((CapN-d)/Tn) if d < CapN; ResetAfter =
  -- ceil(d/Td).
  local rem = 0
  if d0 < capN then rem = capN - d0; rem = (rem - fmod(rem, tn)) / tn end
  if n == 0 then
    return hi, lo, frac, true, rem, 0, ceilDiv(d0, td)
  end
  if n > burst then
    return hi, lo, frac, false, rem, -1, ceilDiv(d0, td)
  end
  local need = d0 + n * tn -- n×tn <= capN < 4e15
  local wait = 0
  if need > capN then
    wait = ceilDiv(need - capN, td)
    if dly == nil or wait > dly then
      return hi, lo, frac, false, rem, wait, ceilDiv(d0, td)
    end
  end
  -- gcraAt: At = now + floor(need/Td), Frac = need mod Td.
  local f = fmod(need, td)
  local l = nowLo + (need - f) / td
  local l7 = fmod(l, 1e7)
  rem = 0
  if need < capN then rem = capN - need; rem = (rem - fmod(rem, tn)) / tn end
  return nowHi + (l - l7) / 1e7, l7, f, true, rem, wait, ceilDiv(need, td)
end

-- gcraUndoFast is GCRAUndo (gcra.lua) specialized like gcraStepFast: it
-- gives n events back at now from the state hi, lo, frac (debts below 4e15
-- units) and returns the new state's hi, lo, frac (the same values if
-- unchanged), or nil outside its case. The TAT moves back by n×Tn units,
-- to now at the earliest, unless the debt passes capN (a later delayed
-- admission relies on the events); the bound on what is left (below
-- farFuture) always holds here.
local function gcraUndoFast(hi, lo, frac, nowHi, nowLo, n, tn, td, capN)
  local d0 = 0
  if hi > nowHi or (hi == nowHi and (lo > nowLo or (lo == nowLo and frac > 0))) then
    if hi - nowHi >= 4e8 then return nil end
    d0 = ((hi - nowHi) * 1e7 + (lo - nowLo)) * td + frac
    if d0 >= 4e15 then return nil end
  end
  if n == 0 or d0 == 0 or d0 > capN then
    return hi, lo, frac
  end
  -- n×Tn is exact below 2^53, and a double of at least 4e15 (> d0)
  -- otherwise.
  local refund = n * tn
  if refund >= d0 then
    return nowHi, nowLo, 0
  end
  -- gcraAt(now, d0 - refund).
  local rest = d0 - refund
  local f = fmod(rest, td)
  local l = nowLo + (rest - f) / td
  local l7 = fmod(l, 1e7)
  return nowHi + (l - l7) / 1e7, l7, f
end

-- gcraFast is gcraStepFast on a stored form v (false: missing): it returns
-- the new stored form (v itself if unchanged), allowed, remaining,
-- retryAfter and resetAfter, or nil.
local function gcraFast(v, nowHi, nowLo, n, burst, tn, td, capN)
  local hi, lo, frac = gcraDecodeFast(v)
  if hi == nil then return nil end
  local h2, l2, f2, ok, rem, retry, reset = gcraStepFast(hi, lo, frac, nowHi, nowLo, n, burst, tn, td, capN, nil)
  if h2 == nil then return nil end
  if h2 ~= hi or l2 ~= lo or f2 ~= frac then
    v = gcraEncodeFast(h2, l2, f2)
  end
  return v, ok, rem, retry, reset
end

-- bucketFast is BucketStep (bucket.lua) specialized like gcraFast, for a
-- stored level below 4e15 units and an instant Last of at least 1e7 ns and
-- within 4e15 ns of now when now is earlier. The bucket's TAT is Last +
-- Level/Td (no saturation: both are small enough), so at t = max(now, Last)
-- the debt is max(Level - (t-Last)×Td, 0); an admission stores Bucket{Last:
-- t, Level: need}, and every non-zero duration of the result is shifted by
-- t - now. It returns what gcraFast returns, or nil. If dly is not nil, it
-- is BucketDelay (delay.go), as gcraStepFast is GCRADelay.
local function bucketFast(v, nowHi, nowLo, n, burst, tn, td, capN, dly)
  local tHi, tLo, gap, d0 = nowHi, nowLo, 0, 0
  if v then
    local _, e, c = sfind(v, '^b%d+():%d+$')
    if e == nil or c < 10 or c > 21 or e - c > 16 then return nil end
    local hi, lo, level = tonumber(ssub(v, 2, c - 8)), tonumber(ssub(v, c - 7, c - 1)), tonumber(ssub(v, c + 1))
    if level >= 4e15 or hi > 461168601842 or (hi == 461168601842 and lo > 7387904) then return nil end
    -- elapsed = t - Last, with t = max(now, Last) (bucketClamp).
    local elapsed
    if hi > nowHi or (hi == nowHi and lo > nowLo) then
      if hi - nowHi >= 4e8 then return nil end
      gap = (hi - nowHi) * 1e7 + (lo - nowLo)
      tHi, tLo, elapsed = hi, lo, 0
    elseif nowHi - hi >= 9e8 then
      elapsed = 9e15 -- at least 9e15 - 1e7, more than level: drained
    else
      elapsed = (nowHi - hi) * 1e7 + (nowLo - lo)
    end
    local drained = elapsed * td -- exact when below level (< 4e15)
    if level > drained then d0 = level - drained end
  end
  -- GCRAStep at t, then shift(r, gap): non-zero durations grow by gap.
  local rem = 0
  if d0 < capN then rem = capN - d0; rem = (rem - fmod(rem, tn)) / tn end
  local reset = ceilDiv(d0, td)
  if reset ~= 0 then reset = reset + gap end
  if n == 0 then
    return v, true, rem, 0, reset
  end
  if n > burst then
    return v, false, rem, -1, reset -- addSat(Never, gap) = Never
  end
  local need = d0 + n * tn
  local wait = 0
  if need > capN then
    wait = ceilDiv(need - capN, td) + gap
    if dly == nil or wait > dly then
      return v, false, rem, wait, reset
    end
  end
  -- bucketAt: Bucket{Last: t, Level: need}.
  rem = 0
  if need < capN then rem = capN - need; rem = (rem - fmod(rem, tn)) / tn end
  return sfmt('b%d%07d:%d', tHi, tLo, need), true, rem, wait, ceilDiv(need, td) + gap
end

-- bucketUndoFast is BucketUndo (bucket.lua) specialized like bucketFast,
-- on a stored form v (false: missing): GCRAUndo on the level at t =
-- max(now, Last), which is max(Level - (t-Last)×Td, 0) units. It returns
-- the new stored form (v itself if unchanged), or nil outside
-- bucketFast's case. A debt above capN is left alone, and a bucket holding
-- a delayed admission (a level above capN) keeps its Last, as BucketUndo
-- does.
local function bucketUndoFast(v, nowHi, nowLo, n, tn, td, capN)
  if not v or n == 0 then return v end
  local _, e, c = sfind(v, '^b%d+():%d+$')
  if e == nil or c < 10 or c > 21 or e - c > 16 then return nil end
  local hi, lo, level = tonumber(ssub(v, 2, c - 8)), tonumber(ssub(v, c - 7, c - 1)), tonumber(ssub(v, c + 1))
  if level >= 4e15 or hi > 461168601842 or (hi == 461168601842 and lo > 7387904) then return nil end
  local tHi, tLo, elapsed = nowHi, nowLo, 0
  if hi > nowHi or (hi == nowHi and lo > nowLo) then
    if hi - nowHi >= 4e8 then return nil end
    tHi, tLo = hi, lo
  elseif nowHi - hi >= 9e8 then
    return v -- drained long ago: no debt
  else
    elapsed = (nowHi - hi) * 1e7 + (nowLo - lo)
  end
  local drained = elapsed * td -- exact when below level (< 4e15)
  if level <= drained then
    return v -- no debt at t: unchanged
  end
  local d0 = level - drained
  if d0 > capN then
    return v
  end
  local refund = n * tn -- as in gcraUndoFast
  if level > capN then
    -- bucketAt(u, p, Last): the TAT less Last, which is level - refund,
    -- or the drained units if the TAT went back to t.
    if refund >= d0 then
      return sfmt('b%d%07d:%d', hi, lo, drained)
    end
    return sfmt('b%d%07d:%d', hi, lo, level - refund)
  end
  if refund >= d0 then
    return sfmt('b%d%07d:0', tHi, tLo)
  end
  return sfmt('b%d%07d:%d', tHi, tLo, d0 - refund)
end

-- windowFast is windowOf (window.lua) for Td = 1 and a window W = capN in
-- [1e6, 4e15): the index k and the elapsed time e of now = hi×1e7 + lo,
-- now = k×W + e. The quotient of the doubles is within 1 of k (k < 5e12);
-- k×W is computed exactly from 7-digit halves (every partial product stays
-- below 2^53 because k×W is about now), and e corrects k.
local function windowFast(hi, lo, w)
  local k = floor((hi * 1e7 + lo) / w)
  local kl, wl = fmod(k, 1e7), fmod(w, 1e7)
  local kh, wh = (k - kl) / 1e7, (w - wl) / 1e7
  local c = kl * wl
  local cl = fmod(c, 1e7)
  local e = (hi - (kh * wh * 1e7 + kh * wl + kl * wh + (c - cl) / 1e7)) * 1e7 + (lo - cl)
  if e < 0 then
    k, e = k - 1, e + w
  elseif e >= w then
    k, e = k + 1, e - w
  end
  return k, e
end

-- fixedFast is FixedWindowStep (fixedwindow.lua) specialized to Td = 1, a
-- window W = capN in [1e6, 4e15), a stored state whose Win and Count have at
-- most 15 digits and whose window is at most the next one. untilWindow(p,
-- now, w) is then (w-k)×W - e. It returns what gcraFast returns, or nil.
local function fixedFast(v, nowHi, nowLo, n, burst, capN)
  if capN < 1e6 then return nil end
  local k, e = windowFast(nowHi, nowLo, capN)
  local win, count = 0, 0
  if v then
    local _, en, c = sfind(v, '^f%d+():%d+$')
    if en == nil or c > 17 or en - c > 15 then return nil end
    win, count = tonumber(ssub(v, 2, c - 1)), tonumber(ssub(v, c + 1))
  end
  if k > win then
    win, count = k, 0
  elseif win - k > 1 then
    return nil
  end
  local untilNext = (win - k + 1) * capN - e -- untilWindow(p, now, s.Win+1)
  local ok, retry = true, 0
  if n > burst then
    ok, retry = false, -1
  elseif n > burst - count then
    ok, retry = false, untilNext
  elseif n > 0 then
    count = count + n
    v = sfmt('f%d:%d', win, count)
  end
  local rem, reset = 0, 0
  if count < burst then rem = burst - count end
  if count > 0 then reset = untilNext end
  return v, ok, rem, retry, reset
end

-- fixedUndoFast is FixedWindowUndo (fixedwindow.lua) specialized like
-- fixedFast, on a stored form v (false: missing): the count of the
-- state's window goes down by n, to 0 at least, unless now is in a later
-- window. It returns the new stored form (v itself if unchanged), or nil
-- outside fixedFast's case.
local function fixedUndoFast(v, nowHi, nowLo, n, capN)
  if capN < 1e6 then return nil end
  if not v or n == 0 then return v end
  local k = windowFast(nowHi, nowLo, capN)
  local _, en, c = sfind(v, '^f%d+():%d+$')
  if en == nil or c > 17 or en - c > 15 then return nil end
  local win, count = tonumber(ssub(v, 2, c - 1)), tonumber(ssub(v, c + 1))
  if k > win or count == 0 then
    return v
  end
  if n >= count then
    return sfmt('f%d:0', win)
  end
  return sfmt('f%d:%d', win, count - n)
end

-- slidingFast is SlidingWindowStep with untilUnits and slidingRetry
-- (slidingwindow.lua) specialized to Td = 1, a window W = capN >= 1e6 with
-- Burst×W below 3e15, a stored state whose fields have at most 15 digits,
-- whose window is at most the next one and whose counts times W are below
-- 3e15: every product and sum is then below 9e15, and untilUnits(p, now, w,
-- off) is max((w-k)×W + off - e, 0) for now = k×W + e. With approx set it
-- is SlidingWindowApproxStep (slidingStep's slack W-1, else 0). It returns
-- what gcraFast returns, or nil.
local function slidingFast(v, nowHi, nowLo, n, burst, capN, approx)
  local w = capN
  local slack = 0
  if approx then slack = w - 1 end
  if w < 1e6 or burst * w >= 3e15 then return nil end
  local k, eNow = windowFast(nowHi, nowLo, w)
  local win, cur, prev = 0, 0, 0
  if v then
    local _, en, c, d = sfind(v, '^s%d+():%d+():%d+$')
    if en == nil or c > 17 or d - c > 16 or en - d > 15 then return nil end
    win, cur, prev = tonumber(ssub(v, 2, c - 1)), tonumber(ssub(v, c + 1, d - 1)), tonumber(ssub(v, d + 1))
  end
  local e = eNow
  if k == win + 1 then
    win, cur, prev = k, 0, cur
  elseif k > win then
    win, cur, prev = k, 0, 0
  elseif k < win then
    if win - k > 1 then return nil end
    e = 0
  end
  if cur * w >= 3e15 or prev * w >= 3e15 then return nil end
  -- The estimate×W is Prev×(W-e) + Cur×W, the limit B×W + slack.
  local limit = burst * w + slack
  local est = prev * (w - e) + cur * w
  local ok, retry = true, 0
  if n > burst then
    ok, retry = false, -1
  elseif n > 0 then
    if est + n * w > limit then
      -- slidingRetry: the offset from the window's start at which n fit.
      local off
      if burst - cur - n >= 0 and prev > 0 then
        local x = (burst - cur - n) * w + slack
        local q = (x - fmod(x, prev)) / prev
        if q > 0 then off = w - q end
      end
      if off == nil then
        local at = 0
        if cur > 0 then
          local x = (burst - n) * w + slack
          local q = (x - fmod(x, cur)) / cur
          if q < w then at = w - q end
        end
        off = w + at
      end
      ok, retry = false, (win - k) * w + off - eNow
      if retry < 0 then retry = 0 end
    else
      cur = cur + n
      if prev * (w - e) <= slack then
        prev = 0 -- it weighs nothing from now to the window's end
      end
      est = est + n * w
      v = sfmt('s%d:%d:%d', win, cur, prev)
    end
  end
  local rem, reset = 0, 0
  if est < limit then
    rem = limit - est
    rem = (rem - fmod(rem, w)) / w
  end
  if cur > 0 then
    reset = (win - k) * w + 2 * w - (slack - fmod(slack, cur)) / cur - eNow
  elseif prev > 0 then
    reset = (win - k) * w + w - (slack - fmod(slack, prev)) / prev - eNow
  end
  if reset < 0 then reset = 0 end
  return v, ok, rem, retry, reset
end

-- instant returns the decimal form of the instant hi×1e7 + lo + off, for an
-- offset |off| < 9e15 and a result >= 0.
local function instant(hi, lo, off)
  lo = lo + off
  local l = lo - floor(lo / 1e7) * 1e7
  hi = hi + (lo - l) / 1e7
  if hi > 0 then return sfmt('%d%07d', hi, l) end
  return sfmt('%d', l)
end

-- logFast is SlidingLogStep with its expire and push (slidinglog.lua)
-- specialized to Td = 1 (the window W is capN), W and Burst below 4e15, a
-- stored log whose instants lie within 4e15 ns of now, whose gaps and counts
-- have at most 15 digits and whose sum is below 4e15. Instants are kept as
-- offsets from the instant t the log is judged at (t = max(now, newest),
-- the log's own clamp), and the stored form is rewritten around its
-- unchanged middle. It returns what gcraFast returns, or nil.
local function logFast(v, nowHi, nowLo, n, burst, w)
  local off, cnt, seg, size, sum = {}, {}, {}, 0, 0
  if v then
    local _, e, a, c = sfind(v, '^l(%d+):(%d+)')
    if e == nil or #a > 19 or #a < 8 or #c > 15 then return nil end
    local hi, lo = tonumber(ssub(a, 1, -8)), tonumber(ssub(a, -7))
    if hi - nowHi >= 4e8 or nowHi - hi >= 4e8 then return nil end
    local at = (hi - nowHi) * 1e7 + (lo - nowLo) -- At - now
    size, sum = 1, tonumber(c)
    off[1], cnt[1], seg[1] = at, sum, e + 1
    local pos = e + 1
    for p, d, c in gmatch(v, '(),(%d+):(%d+)') do
      if p ~= pos or #d > 15 or #c > 15 then return nil end
      pos = p + 2 + #d + #c
      d, c = tonumber(d), tonumber(c)
      at = at + d
      if d == 0 or c == 0 or at >= 4e15 then return nil end
      size, sum = size + 1, sum + c
      off[size], cnt[size], seg[size] = at, c, p
    end
    if pos ~= #v + 1 or cnt[1] == 0 or sum >= 4e15 then return nil end
    -- Instants past MaxTime are malformed: the general path says so.
    if 461168601842 - nowHi < 4e8 and at > (461168601842 - nowHi) * 1e7 + (7387904 - nowLo) then return nil end
  end
  -- The log's clamp: judged at t = max(now, newest), durations shifted by
  -- gap = t - now.
  local gap = 0
  if size > 0 and off[size] > 0 then
    gap = off[size]
  end
  -- expire: drop the entries W or more before t.
  local first = 1
  while first <= size and gap - off[first] >= w do
    sum = sum - cnt[first]
    first = first + 1
  end
  local ok, retry, pushed = true, 0, false
  if n > burst then
    ok, retry = false, -1
  elseif n > burst - sum then
    -- Wait until the oldest events holding sum+n-B leave the window.
    local excess, acc = sum + n - burst, 0
    for i = first, size do
      acc = acc + cnt[i]
      if acc >= excess then
        ok, retry = false, off[i] - gap + w + gap -- At+w-t, shifted by gap
        break
      end
    end
  elseif n > 0 then
    pushed = true
    sum = sum + n
  end
  local rem, reset = 0, 0
  if sum < burst then rem = burst - sum end
  local last = size
  if pushed then
    if first <= size and off[size] == gap then
      cnt[size] = cnt[size] + n -- an event at t joins the newest entry
    else
      last = size + 1
      off[last], cnt[last] = gap, n
    end
  end
  if first <= last then
    reset = off[last] - gap + w
    if gap > 0 then reset = reset + gap end
  end
  if first == 1 and not pushed then
    return v, ok, rem, retry, reset -- unchanged
  end
  if first > last then
    return false, ok, rem, retry, reset -- empty: the key is deleted
  end
  -- The new stored form: the first entry as an instant, the unchanged
  -- entries between as they were, then the newest entry if it changed or
  -- is new.
  local parts = {'l', instant(nowHi, nowLo, off[first]), ':', sfmt('%d', cnt[first])}
  local upto = last -- entries first+1..upto are copied
  if pushed then upto = size - (last == size and 1 or 0) end
  if upto > first then
    local stop = #v
    if upto < size then stop = seg[upto + 1] - 1 end
    parts[5] = ssub(v, seg[first + 1], stop)
  end
  if pushed and last > first then
    parts[#parts + 1] = sfmt(',%d:%d', off[last] - off[last - 1], cnt[last])
  end
  return table.concat(parts), ok, rem, retry, reset
end
