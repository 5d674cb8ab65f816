-- slidinglog.lua (module "slidinglog") mirrors
-- internal/algo/slidinglog.go: SlidingLog, its at, expire and push methods
-- (logAt, logExpire, logPush), SlidingLogStep and SlidingLogUndo, line for
-- line. Go keeps the entries in a ring buffer; here they are two
-- arrays (instants and counts) indexed from head, which is the same deque.
-- Like Go, a step changes the log in place: it drops the expired entries
-- even when it denies or peeks (which matters when a later instant falls
-- back before them), so main.lua stores the log whenever dirty is set. The
-- stored form (logDecode, logEncode) follows.

L.import('lib')
local add, sub, lt, eq, digits, fmt, MAXI64 = L.add, L.sub, L.lt, L.eq, L.digits, L.fmt, L.MAXI64
local sfind, sbyte, tconcat = string.find, string.byte, table.concat
L.import('params')
local MaxTime, Never, Normal, Unlimited, Closed, unlimited, closed = L.MaxTime, L.Never, L.Normal, L.Unlimited, L.Closed, L.unlimited, L.closed
local shift, Window = L.shift, L.Window

-- SlidingLog is the state of a sliding log: {at = {...}, n = {...}, head,
-- size, sum}: entry i (0-based) is n[head+i] events admitted at instant
-- at[head+i]; sum counts the events of all entries.
local function logZero()
  return {at = {}, n = {}, head = 1, size = 0, sum = 0, dirty = false}
end

-- at returns the index of entry i (0-based).
local function logAt(l, i)
  return l.head + i
end

-- expire drops the entries that are W or more before now.
local function logExpire(l, w, now)
  while l.size > 0 do
    local e = logAt(l, 0)
    if lt(sub(now, l.at[e]), w) then
      return
    end
    l.sum = sub(l.sum, l.n[e])
    l.at[e], l.n[e] = nil, nil
    l.head = l.head + 1
    l.size = l.size - 1
    l.dirty = true
  end
  l.head = 1
end

local function logPush(l, now, n)
  if l.size > 0 then
    local last = logAt(l, l.size - 1)
    if eq(l.at[last], now) then
      l.n[last] = add(l.n[last], n)
      l.sum = add(l.sum, n)
      l.dirty = true
      return
    end
  end
  -- (Go grows its ring buffer here, never beyond p.Burst entries.)
  local e = logAt(l, l.size)
  l.at[e], l.n[e] = now, n
  l.size = l.size + 1
  l.sum = add(l.sum, n)
  l.dirty = true
end

-- SlidingLogStep admits n events at now if they fit. An instant before the
-- latest logged event counts as that event's instant.
local function SlidingLogStep(l, p, now, n)
  local mode = p.Mode
  if mode == Unlimited then
    return unlimited()
  elseif mode == Closed then
    return closed(n)
  end
  if l.size > 0 then
    local newest = l.at[logAt(l, l.size - 1)]
    if lt(now, newest) then
      return shift(SlidingLogStep(l, p, newest, n), sub(newest, now))
    end
  end
  local w = Window(p)
  logExpire(l, w, now)
  local r = {Allowed = true, Remaining = 0, RetryAfter = 0, ResetAfter = 0}
  if lt(p.Burst, n) then
    r = {Allowed = false, Remaining = 0, RetryAfter = Never, ResetAfter = 0}
  elseif lt(p.Burst, add(l.sum, n)) then -- n > p.Burst-l.sum
    -- Wait until the oldest events holding sum+n-B leave the window.
    local excess, acc = sub(add(l.sum, n), p.Burst), 0
    for i = 0, l.size - 1 do
      local e = logAt(l, i)
      acc = add(acc, l.n[e])
      if not lt(acc, excess) then
        r = {Allowed = false, Remaining = 0, RetryAfter = sub(add(l.at[e], w), now), ResetAfter = 0}
        break
      end
    end
  elseif n ~= 0 then
    logPush(l, now, n)
  end
  -- r.Remaining = max(p.Burst-l.sum, 0)
  if lt(l.sum, p.Burst) then
    r.Remaining = sub(p.Burst, l.sum)
  end
  if l.size > 0 then
    r.ResetAfter = sub(add(l.at[logAt(l, l.size - 1)], w), now)
  end
  return r
end

-- SlidingLogUndo gives back n events admitted at now: it removes them from
-- the newest entries, those SlidingLogStep logs at (now, or the newest
-- instant if later), newest first, dropping the entries it empties, and
-- leaves alone the entries W or more before that instant.
local function SlidingLogUndo(l, p, now, n)
  if p.Mode ~= Normal or n == 0 or l.size == 0 then
    return
  end
  local t = l.at[logAt(l, l.size - 1)]
  if lt(t, now) then -- t := max(now, newest)
    t = now
  end
  local w = Window(p)
  while n ~= 0 and l.size > 0 do
    local e = logAt(l, l.size - 1)
    if not lt(sub(t, l.at[e]), w) then
      return
    end
    local take = l.n[e] -- min(n, e.N)
    if lt(n, take) then
      take = n
    end
    l.n[e] = sub(l.n[e], take)
    l.sum = sub(l.sum, take)
    n = sub(n, take)
    l.dirty = true
    if l.n[e] == 0 then
      l.at[e], l.n[e] = nil, nil
      l.size = l.size - 1
    end
  end
  if l.size == 0 then
    l.head = 1
  end
end

-- Not in Go: the stored form "l<At>:<N>" for the oldest entry followed by
-- ",<At-previous At>:<N>" for each later one: instants strictly increase and
-- are at most MaxTime, counts are at least 1 and sum to at most MaxInt64.
-- An empty log is not stored (the key is deleted). A missing key (false) is
-- an empty log; nil means a malformed value.
local function logDecode(v)
  local l = logZero()
  if not v then return l end
  if sbyte(v, 1) ~= 108 then return nil end -- 'l'
  local pos, len, prev = 2, #v, nil
  local ats, ns, size, sum = l.at, l.n, 0, 0
  while true do
    local _, e, c = sfind(v, '^%d+():%d+', pos)
    if e == nil or c - pos > 19 or e - c > 19 then return nil end
    local at, cnt = digits(v, pos, c - 1), digits(v, c + 1, e)
    if at == nil or cnt == nil or cnt == 0 then return nil end
    if prev ~= nil then
      if at == 0 then return nil end
      at = add(prev, at)
    end
    if lt(MaxTime, at) then return nil end
    sum = add(sum, cnt)
    if lt(MAXI64, sum) then return nil end
    size = size + 1
    ats[size], ns[size] = at, cnt
    prev = at
    if e == len then break end
    if sbyte(v, e + 1) ~= 44 then return nil end -- ','
    pos = e + 2
  end
  l.size, l.sum = size, sum
  return l
end

local function logEncode(l)
  local parts, prev = {}, nil
  for i = 0, l.size - 1 do
    local e = logAt(l, i)
    local at = l.at[e]
    if prev == nil then
      parts[i + 1] = 'l' .. fmt(at) .. ':' .. fmt(l.n[e])
    else
      parts[i + 1] = fmt(sub(at, prev)) .. ':' .. fmt(l.n[e])
    end
    prev = at
  end
  return tconcat(parts, ',')
end

-- The log changes in place; main.lua stores it when dirty is set.
local function logStep(l, p, now, n)
  return l, SlidingLogStep(l, p, now, n)
end

local function logUndo(l, p, now, n)
  SlidingLogUndo(l, p, now, n)
  return l
end

return {tag = 'l', name = 'sliding log', window = true, step = logStep, undo = logUndo, decode = logDecode, encode = logEncode}
