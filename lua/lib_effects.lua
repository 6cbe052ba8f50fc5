-- lib_effects.lua: the prelude's effects, Redis writes that commit with a
-- step checkpoint or a completion in the script that checks the fence.
--
-- Redis does not roll a script back, so every effect of a commit is
-- validated against the keys as the effects before it would leave them
-- (check_effects) before the first is written (apply_effects): a commit
-- applies whole or not at all, and a script never raises after a write.
-- Go validates what it can without Redis first (store.validateEffect); the
-- rules here are the same, plus those that need the keys' contents.

-- Effects arrive in ARGV from index i as a count, then per effect either
--   'd', op, key, nargs, arg...   a write to a key in this slot, or
--   'o', blob                     an entry for the outbox (a key elsewhere),
-- The whitelist maps each op to the type its key must hold (or be absent).
local EFFECT_TYPES = {
  INCRBY = 'string', SET = 'string', HINCRBY = 'hash', HSET = 'hash',
  SADD = 'set', ZADD = 'zset', XADD = 'stream', RPUSH = 'list', PEXPIRE = 'any',
}
-- MAX_EFFECT_ARGS bounds one effect's arguments (store.MaxEffectArgs);
-- apply_effects writes the variadic ones in chunks that unpack can take.
local MAX_EFFECT_ARGS = 100000
-- MAX_XADD_ARGS bounds an XADD, which cannot be split: Lua's unpack takes
-- about 8,000 values (store.MaxXAddArgs).
local MAX_XADD_ARGS = 1001
-- MAX_TTL_MS bounds a TTL (SET PX, PEXPIRE): far beyond any use, and far
-- from the 64-bit overflow Redis refuses (store.MaxTTLMillis).
local MAX_TTL_MS = 1e15

local function read_effects(i)
  local n = tonumber(ARGV[i])
  i = i + 1
  local fx = {}
  for _ = 1, n do
    if ARGV[i] == 'd' then
      local nargs = tonumber(ARGV[i + 3])
      local args = {}
      for k = 1, nargs do args[k] = ARGV[i + 3 + k] end
      fx[#fx + 1] = { op = ARGV[i + 1], key = ARGV[i + 2], args = args }
      i = i + 4 + nargs
    else
      fx[#fx + 1] = { blob = ARGV[i + 1] }
      i = i + 2
    end
  end
  return fx, i
end

-- int64 reports whether v is an integer as Redis reads one (string2ll: no
-- sign but '-', no leading zero, no space) within 64 bits.
local I64_MAX, I64_MIN = '9223372036854775807', '9223372036854775808'
local function int64(v)
  if type(v) ~= 'string' then return false end
  if v == '0' then return true end
  local neg = string.sub(v, 1, 1) == '-'
  local d = neg and string.sub(v, 2) or v
  if #d > 19 or not string.match(d, '^[1-9]%d*$') then return false end
  if #d < 19 then return true end
  return d <= (neg and I64_MIN or I64_MAX)
end

-- add_int64 is the sum of integers a and b (int64 strings) as a string, or
-- nil when it overflows 64 bits, as INCRBY and HINCRBY refuse. Doubles
-- hold only 53 bits, so each number is split at 10^9 and added in parts.
local function split_int(s)
  local neg = string.sub(s, 1, 1) == '-'
  local d = neg and string.sub(s, 2) or s
  local hi = tonumber(string.sub(d, 1, #d - 9)) or 0
  local lo = tonumber(string.sub(d, math.max(#d - 8, 1)))
  if neg then return -hi, -lo end
  return hi, lo
end
local function add_int64(a, b)
  local h1, l1 = split_int(a)
  local h2, l2 = split_int(b)
  local h, l = h1 + h2, l1 + l2
  if l >= 1e9 then h, l = h + 1, l - 1e9 elseif l <= -1e9 then h, l = h - 1, l + 1e9 end
  if h > 0 and l < 0 then h, l = h - 1, l + 1e9 elseif h < 0 and l > 0 then h, l = h + 1, l - 1e9 end
  if h > 9223372036 or (h == 9223372036 and l > 854775807) then return nil end
  if h < -9223372036 or (h == -9223372036 and l < -854775808) then return nil end
  if h == 0 then return string.format('%d', l) end
  local sign = ''
  if h < 0 then sign = '-' end
  return sign .. string.format('%d', math.abs(h)) .. string.format('%09d', math.abs(l))
end

-- ttl_ok reports whether v is a TTL in ms that Redis takes and that
-- expires nothing at once: 1 to MAX_TTL_MS.
local function ttl_ok(v)
  return int64(v) and string.sub(v, 1, 1) ~= '-' and v ~= '0' and tonumber(v) <= MAX_TTL_MS
end

-- score_ok reports whether v is a sorted-set score Redis takes: a number
-- with no space around it, not NaN, and not out of range: Redis refuses a
-- value that overflows to infinity (only inf written as such is taken) or
-- underflows to 0 (a mantissa with a digit other than 0 that reads as 0).
-- v may be as long as a caller likes, so no pattern here repeats an item:
-- gopher-lua's matcher (miniredis) recurses once per character a
-- repeated item takes, and a few megabytes of it overflow the Go stack,
-- which ends the process (lua/patterns_test.go). tonumber reads a score
-- as Redis's Lua does on every engine, but for forms such as 'inf' or
-- '1e309', which this refuses either way (lua/gopher.go).
local function score_ok(v)
  local lv = string.lower(v)
  if lv == 'inf' or lv == '+inf' or lv == '-inf' or lv == 'infinity' or lv == '+infinity' or lv == '-infinity' then
    return true -- as Redis reads them (not every Lua's tonumber does)
  end
  -- miniredis (the Lua without cmsgpack) reads hex scores in its ZADD
  -- apart from Redis, and refused some this took ('0x10'), raising after
  -- the effects before it applied: a hex score is refused there (Go's
  -- check takes it, and a real Redis)
  if string.find(lv, '^[+-]?0x') and rawget(_G, 'cmsgpack') == nil then return false end
  local x = tonumber(v)
  if x == nil or x ~= x or string.find(v, '^%s') or string.find(v, '%s$') then return false end
  if x * 0 ~= 0 then return false end -- an overflow to infinity (inf * 0 is NaN)
  if x == 0 then
    -- the mantissa: after a sign, before the exponent (p for hex, e else)
    local mant = string.gsub(lv, '^[+-]', '')
    local stop = 'e'
    if string.sub(mant, 1, 2) == '0x' then mant, stop = string.sub(mant, 3), 'p' end
    mant = string.sub(mant, 1, (string.find(mant, stop, 1, true) or #mant + 1) - 1)
    return not string.find(mant, '[1-9a-f]')
  end
  return true
end

-- effect_shape checks an effect's arguments alone; it returns an error
-- message, or nil.
local function effect_shape(e)
  local op, a = e.op, e.args
  local n = #a
  if not EFFECT_TYPES[op] then return 'unsupported effect ' .. tostring(op) end
  if n > MAX_EFFECT_ARGS then return op .. ' ' .. e.key .. ': more than ' .. MAX_EFFECT_ARGS .. ' arguments' end
  if op == 'INCRBY' then
    if n ~= 1 or not int64(a[1]) then return 'INCRBY ' .. e.key .. ': the increment is not a 64-bit integer' end
  elseif op == 'HINCRBY' then
    if n ~= 2 or not int64(a[2]) then return 'HINCRBY ' .. e.key .. ': the increment is not a 64-bit integer' end
  elseif op == 'SET' then
    if not (n == 1 or (n == 3 and a[2] == 'PX')) then return 'SET ' .. e.key .. ': want a value and an optional PX ttl' end
    if n == 3 and not ttl_ok(a[3]) then return 'SET ' .. e.key .. ': the TTL must be 1 ms to ' .. string.format('%d', MAX_TTL_MS) .. ' ms' end
  elseif op == 'PEXPIRE' then
    if n ~= 1 or not ttl_ok(a[1]) then return 'PEXPIRE ' .. e.key .. ': the TTL must be 1 ms to ' .. string.format('%d', MAX_TTL_MS) .. ' ms' end
  elseif op == 'HSET' then
    if n < 2 or n % 2 ~= 0 then return 'HSET ' .. e.key .. ': want field, value pairs' end
  elseif op == 'ZADD' then
    if n < 2 or n % 2 ~= 0 then return 'ZADD ' .. e.key .. ': want score, member pairs' end
    for k = 1, n, 2 do
      if not score_ok(a[k]) then return 'ZADD ' .. e.key .. ': score ' .. a[k] .. ' is not a number' end
    end
  elseif op == 'XADD' then
    if a[1] ~= '*' or n < 3 or n % 2 ~= 1 then return 'XADD ' .. e.key .. ': want *, then field, value pairs' end
    if n > MAX_XADD_ARGS then return 'XADD ' .. e.key .. ': more than ' .. MAX_XADD_ARGS .. ' arguments' end
  elseif n < 1 then
    return op .. ' ' .. e.key .. ': no values'
  end
  return nil
end

-- check_effects validates every direct effect without writing anything:
-- its arguments (effect_shape), and its key's type and value as Redis
-- holds them after the effects before it in the list (a SET then an
-- INCRBY of the same key is checked against the SET's value). It returns
-- an error message, or nil.
local function check_effects(fx)
  if #fx == 0 then return nil end -- most commits: no tables, no closures
  local types, vals, fields = {}, {}, {}
  local streams -- per stream written: { last generated ID, XADDs so far }
  local function type_of(key)
    local t = types[key]
    if not t then
      t = redis.call('TYPE', key)['ok']
      types[key] = t
    end
    return t
  end
  local function value_of(key)
    if vals[key] == nil then vals[key] = redis.call('GET', key) or false end
    return vals[key] or '0'
  end
  local function field_of(key, f)
    local m = fields[key]
    if not m then
      m = {}
      fields[key] = m
    end
    if m[f] == nil then m[f] = redis.call('HGET', key, f) or false end
    return m[f] or '0'
  end
  for _, e in ipairs(fx) do
    if e.op then
      local bad = effect_shape(e)
      if bad then return bad end
      local want = EFFECT_TYPES[e.op]
      local t = type_of(e.key)
      if t ~= 'none' and want ~= 'any' and t ~= want then
        return e.op .. ' ' .. e.key .. ': the key holds a ' .. t
      end
      if want ~= 'any' then types[e.key] = want end
      if e.op == 'INCRBY' then
        local v = value_of(e.key)
        if not int64(v) then return 'INCRBY ' .. e.key .. ': the value is not an integer' end
        local sum = add_int64(v, e.args[1])
        if not sum then return 'INCRBY ' .. e.key .. ': the result overflows 64 bits' end
        vals[e.key] = sum
      elseif e.op == 'SET' then
        vals[e.key] = e.args[1]
      elseif e.op == 'HINCRBY' then
        local f = e.args[1]
        local v = field_of(e.key, f)
        if not int64(v) then return 'HINCRBY ' .. e.key .. ' ' .. f .. ': the field is not an integer' end
        local sum = add_int64(v, e.args[2])
        if not sum then return 'HINCRBY ' .. e.key .. ' ' .. f .. ': the result overflows 64 bits' end
        fields[e.key][f] = sum
      elseif e.op == 'HSET' then
        if not fields[e.key] then fields[e.key] = {} end
        for k = 1, #e.args, 2 do fields[e.key][e.args[k]] = e.args[k + 1] end
      elseif e.op == 'XADD' then
        -- Redis refuses an entry once a stream's IDs are used up, which
        -- would raise after the effects before this one were written: its
        -- last generated ID (as XINFO STREAM answers it: not the last
        -- entry's, which may have been deleted since) is the greatest
        -- there is, 18446744073709551615 in both parts; within that last
        -- millisecond there is room for as many as its sequence has left
        -- (compared split at 10^9: doubles hold only 53 bits). At the
        -- key's first XADD here, t is its type in Redis: a stream this
        -- commit creates starts from no ID, and costs nothing.
        streams = streams or {}
        local st = streams[e.key]
        if not st then
          st = { false, 0 }
          if t == 'stream' then
            local info = redis.call('XINFO', 'STREAM', e.key)
            for k = 1, #info, 2 do
              if info[k] == 'last-generated-id' then st[1] = info[k + 1] end
            end
          end
          streams[e.key] = st
        end
        st[2] = st[2] + 1
        local ms, seq = string.match(st[1] or '', '^(%d+)%-(%d+)$')
        if ms == '18446744073709551615' and #seq == 20 then
          local hi = tonumber(string.sub(seq, 1, 11))
          local lo = tonumber(string.sub(seq, 12)) + st[2]
          hi, lo = hi + math.floor(lo / 1e9), lo % 1e9
          if hi > 18446744073 or (hi == 18446744073 and lo > 709551615) then
            return 'XADD ' .. e.key .. ': the stream has used up its entry IDs (its last ID is the greatest there is)'
          end
        end
      end
    end
  end
  return nil
end

-- CHUNKED: the variadic effects, written in chunks of whole units (a
-- value, or a pair) so that no unpack is too long; a chunked write is as
-- atomic as one, inside the script.
local CHUNKED = { SADD = 1, RPUSH = 1, HSET = 2, ZADD = 2 }

-- apply_effects writes checked effects of the job whose hash is jk (nil
-- for none: a relayed effect); it returns how many went to the outbox.
-- An outbox entry carries the job's creation time ('c', '' when it has no
-- such field), so that one dead-lettered later is charged to that job
-- alone, not to a job enqueued under its ID after it was deleted
-- (deadfx.lua).
local function apply_effects(fx, jk)
  local outboxed, born = 0, nil
  for _, e in ipairs(fx) do
    if e.op then
      local unit = CHUNKED[e.op]
      if unit then
        call_chunked(e.op, e.key, e.args, unit)
      else
        redis.call(e.op, e.key, unpack(e.args))
      end
    else
      -- an outbox of another type is set aside (call_aside), not raised
      -- on after the effects written above
      if not born then born = jk and redis.pcall('HGET', jk, F.created) or '' end
      if type(born) ~= 'string' then born = '' end -- none, or a key of another type
      if type(redis.pcall('XADD', K_OUTBOX, '*', 't', 'fx', 'b', e.blob, 'c', born)) == 'table' then
        call_aside('XADD', K_OUTBOX, nil, '*', 't', 'fx', 'b', e.blob, 'c', born)
      end
      outboxed = outboxed + 1
    end
  end
  return outboxed
end
