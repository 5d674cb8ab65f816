-- partial.lua (module "partial"): the partial mode of main.lua (ARGV[1]
-- "3"), not a mirror of Go code. It grants a key the largest m <= n events
-- that fit, as keyed.Limiter.AllowAtMost does: main.lua decides the key
-- up to three times, with the n that grantStart and then grantNext give:
-- a peek (n = 0), whose Remaining is exactly the largest n a step admits;
-- then m = min(n, Remaining) if m > 0, an admission; then, if m < n, one
-- more event, whose denial tells how long until it fits. The key's result
-- is the last decision's, allowed if m > 0 (for n = 0, the peek's). The
-- script fails rather than reply if the admission were denied or the one
-- more admitted, which the step functions never do.

L.import('lib')
local fail, arg, lt, eq, fmt, MAXI64 = L.fail, L.arg, L.lt, L.eq, L.fmt, L.MAXI64
local sfmt = string.format

-- grantStart returns the grant of key i, whose n is the argument nArg, and
-- the n of its first decision: a peek.
function L.grantStart(i, nArg)
  local n = arg(nArg)
  if n == nil then
    fail(sfmt('key %d: n must be a decimal integer in [0, 2^63)', i))
  end
  return {i = i, n = n, stage = 0, m = 0}, 0
end

-- grantNext takes the result of grant g's latest decision (allowed, and
-- what remains) and returns the n of the next decision, or nil when the
-- grant is complete; and the key's allowed.
function L.grantNext(g, ok, rem)
  local stage, n = g.stage, g.n
  if stage == 0 then -- the peek: rem fit
    if rem == '9223372036854775807' then rem = MAXI64 end -- unlimited
    local m = n
    if lt(rem, n) then m = rem end
    g.m = m
    if eq(n, 0) then
      return nil, ok
    end
    if eq(m, 0) then
      g.stage = 2
      return 1, false
    end
    g.stage = 1
    if type(m) == 'number' then return m, ok end
    return fmt(m), ok
  elseif stage == 1 then -- m admitted
    if not ok then
      fail(sfmt('internal error: key %d: what remains does not fit', g.i))
    end
    if eq(g.m, n) then
      return nil, true
    end
    g.stage = 2
    return 1, true
  end
  if ok then -- one more
    fail(sfmt('internal error: key %d: one more event fits when none remains', g.i))
  end
  return nil, not eq(g.m, 0)
end

-- grantReply returns the events grant g granted, as the script replies
-- numbers.
function L.grantReply(g)
  local m = g.m
  if type(m) == 'number' then return m end
  return fmt(m)
end
