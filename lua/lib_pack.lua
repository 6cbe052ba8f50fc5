-- lib_pack.lua: msgpack, in which a claim answers the jobs it leased, an
-- ack receives its outcomes, and call records are kept (lib_replay.lua).
--
-- A claim's reply element per job field cost both sides: Redis turns each
-- into a reply element, and go-redis allocates a string and an interface
-- for each (about ten per no-op job). Packed, a claim's jobs are one
-- string, which the worker reads in place (store's unpacker). The same
-- holds for arguments the other way (store's argList, unpack_args).
--
-- MSGPACK is cmsgpack, which every redis-server has, or false where the
-- Redis has none (naming an unknown global is an error, hence rawget). It
-- is looked up per call: a library's load sees no globals
-- (lua/function.go).
local MSGPACK = rawget(_G, 'cmsgpack') or false

-- be_bytes is integer n (0 <= n < 256^k) as k big-endian bytes.
local function be_bytes(n, k)
  local b = {}
  for i = k, 1, -1 do
    b[i] = string.char(n % 256)
    n = math.floor(n / 256)
  end
  return table.concat(b)
end

-- mp_append appends v to parts in msgpack, as cmsgpack packs it: lists,
-- strings, integers and false (a Redis without cmsgpack, i.e. miniredis;
-- speed does not matter there).
local function mp_append(v, parts)
  local t, n = type(v), #parts
  if t == 'table' then
    local m = #v
    if m < 16 then
      parts[n + 1] = string.char(144 + m) -- fixarray
    elseif m < 65536 then
      parts[n + 1] = string.char(220) .. be_bytes(m, 2) -- array 16
    else
      parts[n + 1] = string.char(221) .. be_bytes(m, 4) -- array 32
    end
    for i = 1, m do mp_append(v[i], parts) end
  elseif t == 'string' then
    local m = #v
    if m < 32 then
      parts[n + 1] = string.char(160 + m) -- fixstr
    elseif m < 256 then
      parts[n + 1] = string.char(217, m) -- str 8
    elseif m < 65536 then
      parts[n + 1] = string.char(218) .. be_bytes(m, 2) -- str 16
    else
      parts[n + 1] = string.char(219) .. be_bytes(m, 4) -- str 32
    end
    parts[n + 2] = v
  elseif t == 'number' and v == math.floor(v) and v >= -2147483648 then
    if v >= 0 and v < 128 then
      parts[n + 1] = string.char(v) -- positive fixint
    elseif v >= 0 then
      parts[n + 1] = string.char(207) .. be_bytes(v, 8) -- uint 64
    else
      parts[n + 1] = string.char(210) .. be_bytes(v + 4294967296, 4) -- int 32
    end
  elseif v == false or v == nil then
    parts[n + 1] = string.char(194)
  else
    error('msgpack: cannot encode ' .. tostring(v))
  end
end

-- pack_value is v in msgpack.
local function pack_value(v)
  if MSGPACK then return MSGPACK.pack(v) end
  local parts = {}
  mp_append(v, parts)
  return join(parts)
end

-- unpack_args is the list of strings store's argList packed into s.
local function unpack_args(s)
  if MSGPACK then return MSGPACK.unpack(s) end
  local i = 1
  local function uint(k) -- a k-byte big-endian integer at i
    local v = 0
    for j = i, i + k - 1 do v = v * 256 + string.byte(s, j) end
    i = i + k
    return v
  end
  local t = string.byte(s, i)
  i = i + 1
  local n = t == 221 and uint(4) or t == 220 and uint(2) or t - 144 -- array 32, 16, fixarray
  local out = {}
  for k = 1, n do
    t = string.byte(s, i)
    i = i + 1
    local m
    if t >= 160 and t < 192 then
      m = t - 160 -- fixstr
    else
      m = uint(2 ^ (t - 217)) -- str 8, 16, 32
    end
    out[k] = string.sub(s, i, i + m - 1)
    i = i + m
  end
  return out
end
