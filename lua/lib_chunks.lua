-- lib_chunks.lua: the prelude's payload and header storage: chunks that
-- keep a job hash compact, and a key of its own for a long payload.

-- A job's headers, and its payload up to BODY_MIN bytes, are stored in
-- chunks of CHUNK bytes (fields F.headers ('h'), 'h1', 'h2', ... and
-- F.payload ('p'), '1', '2', ...: a name that reads as a small integer
-- takes 2 bytes in the hash, not 4; chunk_name) so that the job hash
-- keeps Redis's compact encoding, which only holds values up to
-- hash-max-listpack-value (64 bytes by default): one value longer than
-- that turns the whole hash into a hash table, several hundred bytes more
-- per pending job. Values longer than CHUNK_MAX chunks are stored whole:
-- the hash would outgrow the compact encoding's entry count anyway, and
-- they dwarf the difference.
local CHUNK, CHUNK_MAX = 64, 96

-- chunk_name is the name of chunk i >= 1 of field: the number alone for
-- the payload, as its chunks are most of a job's; field .. i for headers,
-- and for payloads written before numbers (chunk_fields reads both).
local function chunk_name(field, i)
  if field == F.payload then return num_s(i) end
  return field .. i
end

-- put_chunked appends field v (chunked) to the flat field list f.
local function put_chunked(f, field, v)
  local n = #v
  f[#f + 1] = field
  if n <= CHUNK or n > CHUNK * CHUNK_MAX then
    f[#f + 1] = v
    return
  end
  f[#f + 1] = string.sub(v, 1, CHUNK)
  local i = 1
  for off = CHUNK + 1, n, CHUNK do
    f[#f + 1] = chunk_name(field, i)
    f[#f + 1] = string.sub(v, off, off + CHUNK - 1)
    i = i + 1
  end
end

-- chunk_fields lists the extra chunk fields of field in h (a field map),
-- under either name of each (chunk_name).
local function chunk_fields(h, field)
  local out, i = {}, 1
  while true do
    local name = chunk_name(field, i)
    if not h[name] and field == F.payload then name = F.payload .. i end -- written before numbers
    if not h[name] then return out end
    out[i] = name
    i = i + 1
  end
end

-- A payload longer than BODY_MIN bytes is a string key of its own
-- (body_key), marked by the field F.payload_body in place of F.payload. In chunks, each
-- 64 bytes cost about 8 more (field name and headers), and once the hash
-- passes 1 KiB the allocator rounds it up by 128 bytes on average; a key
-- of its own costs about 90 bytes. Measured (bench -scenario memory):
-- chunked, a job costs 156-160 bytes more than its payload held as a
-- plain string up to 824 payload bytes, then 270 at 909; in a key of its
-- own, 168-198 from 839 to 6,209 bytes. (Measured before chunks were
-- numbered, which makes them 2 bytes cheaper each: chunks gain a little
-- below the threshold, and above it the hash still passes 1 KiB.)
local BODY_MIN = 832

-- put_payload stores job id's payload v: appends its fields to the flat
-- field list f, or writes its body key.
local function put_payload(f, id, v)
  if #v > BODY_MIN then
    redis.call('SET', body_key(id), v)
    f[#f + 1] = F.payload_body
    f[#f + 1] = '1'
  else
    put_chunked(f, F.payload, v)
  end
end

-- joined is field's whole value in h (a field map), or nil.
local function joined(h, field)
  local v = h[field]
  if not v then return nil end
  local parts = { v }
  for _, name in ipairs(chunk_fields(h, field)) do parts[#parts + 1] = h[name] end
  return join(parts)
end

-- payload_of is the payload of job id whose hash is h (a field map), or
-- nil: none, or a body key of another type (corrupt data; pcall: a raise
-- would leave the call's earlier writes done, its jobs unlisted).
local function payload_of(h, id)
  if h[F.payload_body] then
    local v = redis.pcall('GET', body_key(id))
    if type(v) == 'string' then return v end
    return nil
  end
  return joined(h, F.payload)
end

-- field_map reads a hash into a map of field -> value, or answers nil when
-- the key holds something else (corrupt data, or a key that is no job):
-- raising would fail every job of the call, after the writes made for
-- those before it.
local function field_map(key)
  local flat = redis.pcall('HGETALL', key)
  if flat.err then return nil end
  local h = {}
  for i = 1, #flat, 2 do h[flat[i]] = flat[i + 1] end
  return h
end
