-- sharemain.lua (chunk level): the entry point of the Share script, not a
-- mirror of Go code. It reads the arguments and the two states, decides
-- by share.lua (or gives events back), writes the states that changed and
-- replies. The calling convention is documented in the Go package lua
-- (share.go).

local import, fail = L.import, function(msg) error('admit: ' .. msg, 0) end
import('lib')
import('params')
import('share')
local arg, add, sub, mul, lt, divmod, ceil63, fmt = L.arg, L.add, L.sub, L.mul, L.lt, L.divmod, L.ceil63, L.fmt
local sfmt = string.format

local function run()
  if #KEYS ~= 2 or #ARGV ~= 12 then
    fail(sfmt('the share script takes 2 keys and 12 arguments, got %d and %d', #KEYS, #ARGV))
  end
  local mode = ARGV[1]
  if mode ~= 'a' and mode ~= 'r' then
    fail('ARGV[1] must be "a" (allow) or "r" (refund)')
  end
  local now
  if ARGV[2] == '' then
    local t = redis.call('TIME')
    now = add(mul(tonumber(t[1]), 1e9), tonumber(t[2]) * 1000)
  else
    now = arg(ARGV[2])
    if now == nil then
      fail('ARGV[2] must be "" or a decimal instant (ns) >= 0')
    end
  end
  now = L.Clamp(now)
  local minTTL = arg(ARGV[3])
  local burst, tn, td, capN = arg(ARGV[5]), arg(ARGV[6]), arg(ARGV[7]), arg(ARGV[8])
  local lendN, win, n, w = arg(ARGV[9]), arg(ARGV[10]), arg(ARGV[11]), arg(ARGV[12])
  if minTTL == nil or burst == nil or tn == nil or td == nil or capN == nil or lendN == nil or win == nil or n == nil or w == nil then
    fail('ARGV[3] and ARGV[5] to ARGV[12] must be decimal integers in [0, 2^63)')
  end
  if ARGV[4] ~= '0' or burst == 0 or tn == 0 or td == 0 or not L.eq(mul(burst, tn), capN)
    or lt(L.MaxSpan, (divmod(capN, td))) or lt(capN, lendN) then
    fail('not a compiled limit of a share')
  end
  if win == 0 or type(w) ~= 'number' or w < 1 or w > 1048576 then
    fail('the window must be at least 1 ns, the weight from 1 to 2^20')
  end
  local sp = {P = {Mode = L.Normal, Burst = burst, Tn = tn, Td = td, CapN = capN}, LendN = lendN, Window = win}

  local bv, tv = redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2])
  local b, t = L.shareDecodeBudget(bv), L.shareDecodeTenant(tv)
  if b == nil or t == nil then
    fail('a key of the share holds a value this script did not write')
  end
  local b2, t2, r
  if mode == 'r' then
    b2, t2 = L.ShareUndo(b, t, sp, now, n, w)
    local _b, _t
    _b, _t, r = L.ShareStep(b2, t2, sp, now, 0, w)
  else
    b2, t2, r = L.ShareStep(b, t, sp, now, n, w)
  end

  -- A state is written with PX = max(ceil(ttl / 1ms) + 1, minTTL), ttl
  -- being the time until it decides as a missing key does: until its GCRA
  -- is full and the window it was last counted in is neither the current
  -- nor the previous one (the window of index+1 k ends at k×Window).
  local function write(key, old, new, encoded, zero, seen)
    if encoded == old or (not old and encoded == zero) then
      return
    end
    local ttl = ceil63(L.gcraDebt(new, sp.P, now), td)
    local upto = mul(add(seen, 1), win)
    if lt(now, upto) and lt(ttl, sub(upto, now)) then
      ttl = sub(upto, now)
    end
    local q, rem = divmod(ttl, 1e6)
    q = add(q, 1)
    if rem ~= 0 then q = add(q, 1) end
    if lt(q, minTTL) then q = minTTL end
    redis.call('SET', key, encoded, 'PX', fmt(q))
  end
  write(KEYS[1], bv, b2, L.shareEncodeBudget(b2), 'w0:0:0:0:0:0', b2.Win)
  write(KEYS[2], tv, t2, L.shareEncodeTenant(t2), 't0:0:0', t2.Seen)

  local function out(x)
    if type(x) == 'number' then return x end
    return fmt(x)
  end
  return {fmt(now), r.Allowed and 1 or 0, out(r.Remaining), out(r.RetryAfter), out(r.ResetAfter)}
end
