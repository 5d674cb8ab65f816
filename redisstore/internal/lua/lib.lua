-- lib.lua (module "lib"): exact non-negative integer arithmetic, the Lua
-- side of internal/algo/u128.go (u128, mul64, divmod, div63, ceil63, fits63)
-- plus the int64 operations the step functions use.
--
-- Redis runs Lua 5.1, whose numbers are IEEE doubles, exact for integers
-- below 2^53 only. A value v in [0, 2^128) is therefore held in one of two
-- normal forms:
--
--   * a Lua number when v < SMALL = 9e15 (< 2^53, so every such integer
--     and every sum, difference or product below SMALL is exact), or
--   * a table of base-1e7 limbs, least significant first, whose top limb is
--     not zero, when v >= SMALL.
--
-- Every function takes and returns normal forms, so a number never stands for
-- the same value as a table, equality of numbers is ==, and any table is
-- larger than any number. Each operation first tries plain arithmetic on
-- numbers, which is exact whenever its result is below SMALL (rounding is
-- monotonic and SMALL is a double, so a rounded result below SMALL is exact);
-- otherwise it redoes the operation exactly on limbs. Base 1e7 keeps a limb
-- product below 1e14, so a column of products and carries stays exact, and
-- makes decimal parsing and formatting a matter of slicing strings.

-- The constants are written as literals below (a local captured by every
-- function would cost each call of the script a longer closure setup):
--   SMALL = 9e15, BASE = 1e7, and SHORT = 9e8, the bound under which a
--   divisor divides a limb array one limb at a time.
local floor, fmod = math.floor, math.fmod
local sfmt, ssub, sbyte, sfind = string.format, string.sub, string.byte, string.find
local type, tonumber, tconcat = type, tonumber, table.concat

-- tobig returns the limbs of a number (top limb non-zero, or {0}).
local function tobig(x)
  if x < 1e7 then return {x} end
  local l0 = fmod(x, 1e7)
  x = (x - l0) / 1e7
  if x < 1e7 then return {l0, x} end
  local l1 = fmod(x, 1e7)
  return {l0, l1, (x - l1) / 1e7}
end

-- norm trims zero top limbs of t and returns a number if the value is below
-- SMALL. (For at most three limbs, l0 + l1*1e7 + l2*1e14 is exact when the
-- value is below SMALL and rounds to at least SMALL otherwise.)
local function norm(t)
  local n = #t
  while n > 1 and t[n] == 0 do
    t[n] = nil
    n = n - 1
  end
  if n <= 3 then
    local v = t[1] + (t[2] or 0) * 1e7 + (t[3] or 0) * 1e14
    if v < 9e15 then return v end
  end
  return t
end

-- cmp returns -1, 0 or 1 as a <, ==, > b.
local function cmp(a, b)
  if type(a) == 'number' then
    if type(b) == 'number' then
      if a < b then return -1 elseif a > b then return 1 end
      return 0
    end
    return -1
  elseif type(b) == 'number' then
    return 1
  end
  local na, nb = #a, #b
  if na ~= nb then
    if na < nb then return -1 end
    return 1
  end
  for i = na, 1, -1 do
    local x, y = a[i], b[i]
    if x ~= y then
      if x < y then return -1 end
      return 1
    end
  end
  return 0
end

-- lt reports a < b.
local function lt(a, b)
  if type(a) == 'number' and type(b) == 'number' then return a < b end
  return cmp(a, b) < 0
end

-- eq reports a == b.
local function eq(a, b)
  if type(a) == 'number' or type(b) == 'number' then return a == b end
  return cmp(a, b) == 0
end

-- add returns a+b.
local function add(a, b)
  if type(a) == 'number' then
    if type(b) == 'number' then
      local s = a + b
      if s < 9e15 then return s end
      b = tobig(b)
    end
    a = tobig(a)
  elseif type(b) == 'number' then
    b = tobig(b)
  end
  local na, nb = #a, #b
  if na < nb then a, b, na, nb = b, a, nb, na end
  local r, c = {}, 0
  for i = 1, na do
    local s = a[i] + (b[i] or 0) + c
    if s >= 1e7 then
      r[i] = s - 1e7
      c = 1
    else
      r[i] = s
      c = 0
    end
  end
  if c > 0 then r[na + 1] = c end
  return norm(r)
end

-- sub returns a-b; it raises an error if a < b (the callers never let that
-- happen, as Go's callers of u128.sub do not).
local function sub(a, b)
  if type(a) == 'number' then
    if type(b) == 'number' and a >= b then return a - b end
    error('admit: internal error: negative difference', 0)
  end
  if type(b) == 'number' then b = tobig(b) end
  local r, c = {}, 0
  for i = 1, #a do
    local s = a[i] - (b[i] or 0) - c
    if s < 0 then
      r[i] = s + 1e7
      c = 1
    else
      r[i] = s
      c = 0
    end
  end
  if c ~= 0 or #b > #a then error('admit: internal error: negative difference', 0) end
  return norm(r)
end

-- mul returns a*b.
local function mul(a, b)
  if type(a) == 'number' then
    if type(b) == 'number' then
      local p = a * b
      if p < 9e15 then return p end
      b = tobig(b)
    elseif a == 0 then
      return 0
    end
    a = tobig(a)
  elseif type(b) == 'number' then
    if b == 0 then return 0 end
    b = tobig(b)
  end
  local na, nb = #a, #b
  local r = {}
  for i = 1, na + nb do r[i] = 0 end
  for i = 1, na do
    local ai, c = a[i], 0
    if ai ~= 0 then
      for j = 1, nb do
        local k = i + j - 1
        local t = ai * b[j] + r[k] + c
        local lo = fmod(t, 1e7)
        r[k] = lo
        c = (t - lo) / 1e7
      end
    end
    r[i + nb] = c
  end
  return norm(r)
end

-- divlimbs returns u/v and u%v for limb arrays with #v >= 2 and a non-zero
-- top limb in v, by Knuth's algorithm D (TAOCP vol. 2, 4.3.1) in base 1e7.
local function divlimbs(u, v)
  local n = #v
  local m = #u - n
  if m < 0 or cmp(u, v) < 0 then return 0, norm(u) end
  -- D1: normalize so that the divisor's top limb is at least BASE/2.
  local d = floor(1e7 / (v[n] + 1))
  local vn, un, c = {}, {}, 0
  for i = 1, n do
    local t = v[i] * d + c
    local lo = fmod(t, 1e7)
    vn[i] = lo
    c = (t - lo) / 1e7
  end
  c = 0
  for i = 1, m + n do
    local t = u[i] * d + c
    local lo = fmod(t, 1e7)
    un[i] = lo
    c = (t - lo) / 1e7
  end
  un[m + n + 1] = c
  local vt, vs = vn[n], vn[n - 1]
  local q = {}
  for j = m, 0, -1 do
    -- D3: estimate the quotient limb from the top two limbs.
    local num = un[j + n + 1] * 1e7 + un[j + n]
    local rhat = fmod(num, vt)
    local qhat = (num - rhat) / vt
    while qhat >= 1e7 or qhat * vs > rhat * 1e7 + un[j + n - 1] do
      qhat = qhat - 1
      rhat = rhat + vt
      if rhat >= 1e7 then break end
    end
    -- D4: subtract qhat*v from the current window of u.
    local borrow, carry = 0, 0
    for i = 1, n do
      local p = qhat * vn[i] + carry
      local plo = fmod(p, 1e7)
      carry = (p - plo) / 1e7
      local t = un[i + j] - plo - borrow
      if t < 0 then
        un[i + j] = t + 1e7
        borrow = 1
      else
        un[i + j] = t
        borrow = 0
      end
    end
    local t = un[j + n + 1] - carry - borrow
    if t < 0 then
      -- D6: qhat was one too large; add v back.
      qhat = qhat - 1
      local c2 = 0
      for i = 1, n do
        local s = un[i + j] + vn[i] + c2
        if s >= 1e7 then
          un[i + j] = s - 1e7
          c2 = 1
        else
          un[i + j] = s
          c2 = 0
        end
      end
      t = t + c2
    end
    un[j + n + 1] = t
    q[j + 1] = qhat
  end
  -- D8: the remainder is un[1..n] / d.
  local r, rem = {}, 0
  for i = n, 1, -1 do
    local t = rem * 1e7 + un[i]
    local x = fmod(t, d)
    r[i] = (t - x) / d
    rem = x
  end
  return norm(q), norm(r)
end

-- divmod returns a/b and a%b (b > 0), exactly.
local function divmod(a, b)
  if type(b) == 'number' then
    if type(a) == 'number' then
      local r = fmod(a, b)
      return (a - r) / b, r
    end
    if b == 1 then return a, 0 end
    if b < 9e8 then
      local q, r = {}, 0
      for i = #a, 1, -1 do
        local t = r * 1e7 + a[i]
        r = fmod(t, b)
        q[i] = (t - r) / b
      end
      return norm(q), r
    end
    b = tobig(b)
  elseif type(a) == 'number' then
    return 0, a
  end
  return divlimbs(a, b)
end

-- dec returns the value of a string of decimal digits of any length (for
-- the tests; the script's constants are written as limbs).
local function dec(s)
  local t, i, n = {}, 1, #s
  while n > 0 do
    local lo = n - 6
    if lo < 1 then lo = 1 end
    t[i] = tonumber(ssub(s, lo, n))
    i = i + 1
    n = lo - 1
  end
  return norm(t)
end

local MAXI64 = {4775807, 7203685, 92233} -- 9223372036854775807, math.MaxInt64
local TWO64 = {9551616, 4407370, 184467} -- 18446744073709551616

-- digits returns the value of s[i..j], 1 to 19 decimal digits (the caller
-- has checked them), or nil if it exceeds MaxInt64.
local function digits(s, i, j)
  if j - i < 15 then return tonumber(ssub(s, i, j)) end
  local hi, lo = tonumber(ssub(s, i, j - 7)), tonumber(ssub(s, j - 6, j))
  local v = hi * 1e7 + lo -- exact if below SMALL, else at least SMALL
  if v < 9e15 then return v end
  local l1 = fmod(hi, 1e7)
  v = {lo, l1, (hi - l1) / 1e7}
  if cmp(v, MAXI64) > 0 then return nil end
  return v
end

-- parse returns the value of s if it is a decimal int64 >= 0 (digits only,
-- leading zeros allowed), or nil.
local function parse(s)
  local n = #s
  if n == 0 or n > 19 or not sfind(s, '^%d+$') then return nil end
  return digits(s, 1, n)
end

-- arg returns the value of an argument, a decimal int64 >= 0, or nil. Below
-- SMALL it takes the exact integer Lua's tonumber reads (so "1e3" is 1000).
local function arg(s)
  local v = tonumber(s)
  if v ~= nil and v >= 0 and v < 9e15 and v == floor(v) then return v end
  if type(s) ~= 'string' then return nil end
  return parse(s)
end

-- fmt returns the decimal form of v.
local function fmt(v)
  if type(v) == 'number' then return sfmt('%d', v) end
  local n = #v
  if n == 3 then return sfmt('%d%07d%07d', v[3], v[2], v[1]) end
  local parts = {sfmt('%d', v[n])}
  for i = n - 1, 1, -1 do parts[#parts + 1] = sfmt('%07d', v[i]) end
  return tconcat(parts)
end

-- udivmod mirrors u128.divmod: x/d and x%d, or 0, 0, false when the
-- quotient does not fit in 64 bits (x.hi >= d) or d is zero.
local function udivmod(x, d)
  if d == 0 then return 0, 0, false end
  local q, r = divmod(x, d)
  if type(q) ~= 'number' and not lt(q, TWO64) then return 0, 0, false end
  return q, r, true
end

-- div63 mirrors u128.div63: floor(x/d) saturated to [0, MaxInt64].
local function div63(x, d)
  local q, _, ok = udivmod(x, d)
  if not ok or lt(MAXI64, q) then return MAXI64 end
  return q
end

-- ceil63 mirrors u128.ceil63: ceil(x/d) saturated to [0, MaxInt64].
local function ceil63(x, d)
  local q, r, ok = udivmod(x, d)
  if not ok or lt(MAXI64, q) then return MAXI64 end
  if r ~= 0 then
    if eq(q, MAXI64) then return q end
    q = add(q, 1)
  end
  return q
end

-- fits63 mirrors u128.fits63: x <= MaxInt64.
local function fits63(x)
  return type(x) == 'number' or not lt(MAXI64, x)
end

-- Exports, for the modules that import "lib".
L.add, L.sub, L.mul, L.cmp, L.lt, L.eq, L.divmod = add, sub, mul, cmp, lt, eq, divmod
L.udivmod, L.div63, L.ceil63, L.fits63, L.dec, L.digits = udivmod, div63, ceil63, fits63, dec, digits
L.parse, L.arg, L.fmt, L.MAXI64, L.TWO64 = parse, arg, fmt, MAXI64, TWO64
