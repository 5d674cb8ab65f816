-- main.lua (chunk level): the script's entry point, not a mirror of Go code.
-- It reads the arguments, decides every key in order against the states
-- pending from the earlier keys of the same call (by the fast paths of
-- fast.lua when they apply, else by the step function of the algorithm's
-- module), then
-- writes the changed states. The calling convention is documented in the Go
-- package lua (doc.go). Pending states are kept in their stored form; the
-- general path lives in the module "slow".

local MAXSTR = '9223372036854775807' -- math.MaxInt64: algo.Never, and Remaining when unlimited

function L.fail(msg)
  error('admit: ' .. msg, 0)
end
local fail = L.fail

-- small returns s as a number if Lua reads it as an integer in [0, 4e15)
-- (so "1e3" is 1000), else nil.
local function small(s)
  local v = tonumber(s)
  if v ~= nil and v >= 0 and v < 4e15 and v == floor(v) then return v end
  return nil
end

-- readNow returns the instant of ARGV[2], or Redis TIME, clamped to
-- [0, MaxTime], as hi, lo with instant = hi×1e7 + lo.
local function readNow()
  local s = ARGV[2]
  local hi, lo
  if s == '' then
    local t = redis.call('TIME')
    local sec, usec = tonumber(t[1]), tonumber(t[2])
    -- sec×1e9 + usec×1e3, with usec×1e3 = floor(usec/1e4)×1e7 + (usec mod 1e4)×1e3
    lo = fmod(usec, 1e4)
    hi, lo = sec * 100 + (usec - lo) / 1e4, lo * 1000
  else
    local neg = sbyte(s, 1) == 45 -- '-': before the epoch
    if neg then s = ssub(s, 2) end
    local v = tonumber(s)
    if v ~= nil and v >= 0 and v < 9e15 and v == floor(v) then
      lo = fmod(v, 1e7)
      hi = (v - lo) / 1e7
    elseif #s >= 16 and #s <= 19 and sfind(s, '^%d+$') then
      hi, lo = tonumber(ssub(s, 1, -8)), tonumber(ssub(s, -7))
      if hi > 922337203685 or (hi == 922337203685 and lo > 4775807 + (neg and 1 or 0)) then hi = nil end
    end
    if hi == nil then
      fail('ARGV[2] must be "" or a decimal int64 instant (ns)')
    end
    if neg then hi, lo = 0, 0 end
  end
  if hi > 461168601842 or (hi == 461168601842 and lo > 7387904) then
    hi, lo = 461168601842, 7387904 -- MaxTime
  end
  return hi, lo
end

local nowHi, nowLo -- the instant of the call: nowHi×1e7 + nowLo

local function run()
  local nkeys = #KEYS
  local nsets = small(ARGV[4])
  if nsets == nil then
    fail('ARGV[4] must be the number of limits')
  end
  if #ARGV ~= 4 + 6 * nsets + 2 * nkeys then
    fail(sfmt('%d limits and %d keys need %d arguments, got %d', nsets, nkeys, 4 + 6 * nsets + 2 * nkeys, #ARGV))
  end
  local mode = ARGV[1]
  if mode ~= '0' and mode ~= '1' and mode ~= '2' and mode ~= '3' then
    fail('ARGV[1] must be "0" (independent), "1" (all-or-nothing), "2" (refund) or "3" (partial)')
  end
  -- A refund gives each key's n events back (slow.lua), each key on its
  -- own, and replies a peek's result. A partial call grants each key, on
  -- its own, what fits of its n (partial.lua), and replies how many after
  -- the key's result.
  local all, refund, partial = mode == '1', mode == '2', mode == '3'
  if partial then
    import('partial')
  end
  nowHi, nowLo = readNow()
  local minTTL = small(ARGV[3])
  if minTTL == nil then
    import('lib')
    minTTL = L.arg(ARGV[3])
    if minTTL == nil then
      fail('ARGV[3] must be a decimal minimum TTL (ms)')
    end
  end

  -- The limits, each read once: its code, the ARGV index of its Mode, the
  -- tag of its stored states, and its fields when the fast paths can use
  -- them (see fast.lua; the window algorithms' need Td = 1).
  local sets = {}
  for j = 1, nsets do
    local b = 5 + 6 * (j - 1)
    local code = ARGV[b]
    local tag -- the first byte of the code's stored states
    if code == 'gcra' then
      tag = 'g'
    elseif code == 'tb' or code == 'lb' then
      tag = 'b'
    elseif code == 'fw' then
      tag = 'f'
    elseif code == 'sw' or code == 'swa' then
      tag = 's'
    elseif code == 'sl' then
      tag = 'l'
    else
      fail(sfmt('limit %d: unknown algorithm code %q', j, code))
    end
    local set = {code = code, tag = tag, pb = b + 1, mode = ARGV[b + 1]}
    local burst, tn, td, capN = small(ARGV[b + 2]), small(ARGV[b + 3]), small(ARGV[b + 4]), small(ARGV[b + 5])
    if burst and tn and td and capN then
      set.small = true
      if set.mode == '0' and burst >= 1 and tn >= 1 and td >= 1 and burst * tn == capN then
        set.burst, set.tn, set.td, set.capN = burst, tn, td, capN
      end
    end
    sets[j] = set
  end
  local kb0 = 5 + 6 * nsets -- ARGV index of the first key's limit

  local reply = {nowHi > 0 and sfmt('%d%07d', nowHi, nowLo) or sfmt('%d', nowLo)}
  local nr = 1
  local width = 4 -- the reply's elements per key
  if partial then
    width = 5 -- and the events granted
  end
  local pending, order = {}, {}
  local allowed = true
  for i = 1, nkeys do
    local kb = kb0 + 2 * (i - 1)
    local set = sets[tonumber(ARGV[kb])]
    if set == nil then
      fail(sfmt('key %d: ARGV[%d] must be the index of one of the %d limits', i, kb, nsets))
    end
    local code, tag, nArg = set.code, set.tag, ARGV[kb + 1]
    local ok, rem, retry, reset, v2, g
    -- "n:maxDelay" asks for the delay mode (GCRADelay, BucketDelay) of GCRA
    -- and the buckets, in independent and all-or-nothing calls.
    local dArg, dly -- maxDelay as its argument, and as a small number (nil: the general path)
    local colon = sfind(nArg, ':', 1, true)
    if colon then
      dArg, nArg = ssub(nArg, colon + 1), ssub(nArg, 1, colon - 1)
      if refund or partial or (tag ~= 'g' and tag ~= 'b') then
        fail(sfmt('key %d: a delay (n:maxDelay) is for gcra, tb and lb in modes 0 and 1', i))
      end
      dly = small(dArg)
    end
    -- A partial grant g decides the key up to three times (partial.lua): a
    -- peek, an admission of what fits, and a request of one more.
    if partial then
      g, nArg = L.grantStart(i, nArg)
    end
    while true do
      if set.mode == '0' then
        local key = KEYS[i]
        local ent = pending[key]
        if ent == nil then
          local v = redis.pcall('GET', key)
          if type(v) == 'table' then
            fail(sfmt('key %d: %s', i, tostring(v.err)))
          end
          ent = {key = key, tag = tag, v = v}
          pending[key] = ent
          order[#order + 1] = ent
        elseif ent.tag ~= tag then
          import('slow')
          fail(sfmt('key %d holds a %s state, not a %s state', i, L.stateName(nil, ent.tag), L.stateName(code)))
        end
        do
          -- The fast paths, for small values (see fast.lua); the window
          -- algorithms' need Td = 1. A refund gives the events back (the
          -- undo fast paths of GCRA, the buckets and the fixed window; the
          -- others take the general path) and replies a peek's result.
          local n, burst, tn, td, capN = small(nArg), set.burst, set.tn, set.td, set.capN
          if n and burst and nowHi >= 1 and (dArg == nil or dly ~= nil) then -- (set.burst is there only for limits checked above)
            local m = n -- the step's n
            if refund then
              m = 0
            end
            if tag == 'g' then
              -- A key met again in this call keeps its state decoded, and
              -- is encoded once, when written (ent.stale).
              if ent.hi == nil then
                ent.hi, ent.lo, ent.frac = gcraDecodeFast(ent.v)
              end
              if ent.hi ~= nil then
                local hi, lo, frac = ent.hi, ent.lo, ent.frac
                if refund then
                  hi, lo, frac = gcraUndoFast(hi, lo, frac, nowHi, nowLo, n, tn, td, capN)
                end
                if hi ~= nil then
                  hi, lo, frac, ok, rem, retry, reset = gcraStepFast(hi, lo, frac, nowHi, nowLo, m, burst, tn, td, capN, dly)
                end
                if hi ~= nil then
                  v2 = ent.v
                  if hi ~= ent.hi or lo ~= ent.lo or frac ~= ent.frac then
                    ent.hi, ent.lo, ent.frac = hi, lo, frac
                    ent.stale, ent.changed, ent.reset = true, true, reset
                  end
                end
              end
            elseif tag == 'b' then
              local v = ent.v
              if refund then
                v = bucketUndoFast(v, nowHi, nowLo, n, tn, td, capN)
              end
              if v ~= nil then
                v2, ok, rem, retry, reset = bucketFast(v, nowHi, nowLo, m, burst, tn, td, capN, dly)
              end
            elseif td ~= 1 then
              -- the general path
            elseif tag == 'f' then
              local v = ent.v
              if refund then
                v = fixedUndoFast(v, nowHi, nowLo, n, capN)
              end
              if v ~= nil then
                v2, ok, rem, retry, reset = fixedFast(v, nowHi, nowLo, m, burst, capN)
              end
            elseif refund then
              -- the general path
            elseif tag == 's' then
              v2, ok, rem, retry, reset = slidingFast(ent.v, nowHi, nowLo, n, burst, capN, code == 'swa')
            else
              v2, ok, rem, retry, reset = logFast(ent.v, nowHi, nowLo, n, burst, capN)
            end
          end
        end
        if v2 == nil then
          import('slow')
          if ent.stale then
            ent.v, ent.stale = gcraEncodeFast(ent.hi, ent.lo, ent.frac), false
          end
          ent.hi = nil -- the general path may change the stored form
          v2, ok, rem, retry, reset = L.decide(i, nArg, set.pb, code, ent.v, nowHi, nowLo, refund, dArg)
        end
        if v2 ~= ent.v then
          ent.v, ent.changed, ent.reset = v2, true, reset
        end
      else
        -- Unlimited and Closed decide without the state: unlimited() and
        -- closed(n) of params.lua, whatever the algorithm.
        local mode, n = set.mode, small(nArg)
        if (mode == '1' or mode == '2') and n and set.small then
          if refund then
            n = 0 -- a peek's result
          end
          if mode == '1' then
            ok, rem, retry, reset = true, MAXSTR, 0, 0
          elseif n == 0 then
            ok, rem, retry, reset = true, 0, 0, 0
          else
            ok, rem, retry, reset = false, 0, -1, 0
          end
        else
          import('slow')
          v2, ok, rem, retry, reset = L.decide(i, nArg, set.pb, code, false, nowHi, nowLo, refund)
        end
      end
      if not partial then
        break
      end
      nArg, ok = L.grantNext(g, ok, rem)
      if nArg == nil then
        reply[nr + 5] = L.grantReply(g)
        break
      end
      v2 = nil
    end
    reply[nr + 1] = ok and 1 or 0
    allowed = allowed and ok
    -- Integers below 2^53 as integer replies, others as decimal strings.
    if type(rem) ~= 'number' and rem ~= MAXSTR then rem = L.reply(rem) end
    if type(retry) ~= 'number' then retry = L.reply(retry) elseif retry == -1 then retry = MAXSTR end
    if type(reset) ~= 'number' then reset = L.reply(reset) end
    reply[nr + 2], reply[nr + 3], reply[nr + 4] = rem, retry, reset
    nr = nr + width
  end

  if all and not allowed then
    return reply
  end
  for j = 1, #order do
    local ent = order[j]
    if ent.changed then
      if ent.stale then
        ent.v = gcraEncodeFast(ent.hi, ent.lo, ent.frac)
      end
      if ent.v == false then -- an empty sliding log
        redis.call('DEL', ent.key)
      else
        -- PX = max(ceil(ResetAfter / 1ms) + 1, minTTL)
        local reset, px = ent.reset, nil
        if type(reset) == 'number' and type(minTTL) == 'number' then
          local r = fmod(reset, 1e6)
          px = (reset - r) / 1e6 + 1
          if r > 0 then px = px + 1 end
          if px < minTTL then px = minTTL end
          -- (Redis prints a number argument as its shortest decimal form,
          -- which is exact for integers below 1e14.)
          if px >= 1e14 then px = sfmt('%d', px) end
        else
          import('slow')
          px = L.px(reset, minTTL)
        end
        redis.call('SET', ent.key, ent.v, 'PX', px)
      end
    end
  end
  return reply
end
