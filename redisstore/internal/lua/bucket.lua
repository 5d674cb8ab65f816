-- bucket.lua (module "bucket") mirrors internal/algo/bucket.go: Bucket (a
-- table {Last, Level}), its tat method (bucketTat), bucketAt, sat, its clamp
-- method (bucketClamp), BucketStep and BucketUndo, in that order and line
-- for line. The
-- token bucket and the leaky bucket used as a meter both decide with
-- BucketStep. The stored form (bucketDecode, bucketEncode) follows.

L.import('lib')
local add, sub, lt, eq, divmod, fits63, digits, fmt, MAXI64 = L.add, L.sub, L.lt, L.eq, L.divmod, L.fits63, L.digits, L.fmt, L.MAXI64
local sfind = string.find
L.import('params')
L.import('gcra')
local MaxTime, farFuture, Normal, shift = L.MaxTime, L.farFuture, L.Normal, L.shift
local GCRAStep, GCRAUndo, GCRADelay, gcraDebt, gcraZero = L.GCRAStep, L.GCRAUndo, L.GCRADelay, L.gcraDebt, L.gcraZero

-- Bucket is the state of a token bucket / leaky bucket meter. The zero
-- value is an empty leaky bucket, that is a full token bucket.
local bucketZero = {Last = 0, Level = 0}

local sat

-- tat converts the bucket to its GCRA state. It requires p.Mode == Normal.
local function bucketTat(b, p)
  if b.Level == 0 then
    return {At = b.Last, Frac = 0}
  end
  if p.Td == 1 then
    return {At = sat(b.Last, b.Level), Frac = 0}
  end
  local q, r = divmod(b.Level, p.Td)
  return {At = sat(b.Last, q), Frac = r}
end

-- bucketAt converts a GCRA state back to a bucket observed at now.
local function bucketAt(g, p, now)
  local d = gcraDebt(g, p, now)
  if not fits63(d) then
    return {Last = now, Level = MAXI64}
  end
  return {Last = now, Level = d}
end

-- sat returns a+b capped at farFuture (a, b >= 0). (Go tests b >
-- farFuture-a, which is a+b > farFuture without overflow.)
sat = function(a, b)
  local s = add(a, b)
  if lt(farFuture, s) then
    return farFuture
  end
  return s
end

local function bucketClamp(b, now)
  if lt(now, b.Last) then
    return b.Last
  end
  return now
end

-- BucketStep admits n events at now if they fit. n must be >= 0.
local function BucketStep(b, p, now, n)
  if p.Mode ~= Normal then
    local _, r = GCRAStep(gcraZero, p, now, n)
    return b, r
  end
  local t = bucketClamp(b, now)
  local g, r = GCRAStep(bucketTat(b, p), p, t, n)
  if r.Allowed and n ~= 0 then
    b = bucketAt(g, p, t)
  end
  return b, shift(r, sub(t, now))
end

-- BucketUndo gives back n events admitted at now: GCRAUndo on the bucket's
-- level, at now or at the later instant the bucket has seen. A bucket with
-- nothing to give back is returned as it is.
local function BucketUndo(b, p, now, n)
  if p.Mode ~= Normal or n == 0 then
    return b
  end
  local t = bucketClamp(b, now)
  local g = bucketTat(b, p)
  local u = GCRAUndo(g, p, t, n)
  if eq(u.At, g.At) and eq(u.Frac, g.Frac) then
    return b
  end
  if lt(p.CapN, b.Level) then
    -- A delayed admission, given back at its time to act: the bucket
    -- keeps its Last.
    return bucketAt(u, p, b.Last)
  end
  return bucketAt(u, p, t)
end

-- BucketDelay (delay.go) is GCRADelay for a bucket: decided at max(now,
-- Last), with the wait counted from now.
local function BucketDelay(b, p, now, n, maxDelay)
  if p.Mode ~= Normal then
    return BucketStep(b, p, now, n)
  end
  local t = bucketClamp(b, now)
  local gap = sub(t, now)
  local bound = -1 -- maxDelay - gap, or -1 if negative
  if not lt(maxDelay, gap) then
    bound = sub(maxDelay, gap)
  end
  local g, r
  if bound == -1 then
    g, r = GCRAStep(bucketTat(b, p), p, t, n)
  else
    g, r = GCRADelay(bucketTat(b, p), p, t, n, bound)
  end
  if r.Allowed and n ~= 0 then
    b = bucketAt(g, p, t)
  end
  return b, shift(r, gap)
end

-- Not in Go: the stored form "b<Last>:<Level>", Last <= MaxTime. A missing
-- key (false) is the zero state; nil means a malformed value.
local function bucketDecode(v)
  if not v then return bucketZero end
  local _, e, c = sfind(v, '^b%d+():%d+$')
  if e == nil or c > 21 or e - c > 19 then return nil end
  local last, level = digits(v, 2, c - 1), digits(v, c + 1, e)
  if last == nil or level == nil or lt(MaxTime, last) then return nil end
  return {Last = last, Level = level}
end

local function bucketEncode(b)
  return 'b' .. fmt(b.Last) .. ':' .. fmt(b.Level)
end

return {tag = 'b', name = 'bucket (tb/lb)', window = false, step = BucketStep, undo = BucketUndo, delay = BucketDelay, decode = bucketDecode, encode = bucketEncode}
