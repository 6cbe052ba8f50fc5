-- lib_replay.lua: the prelude's call records, which make a mutating
-- script safe to receive twice.
--
-- go-redis sends a command again when its reply was lost (a cut
-- connection, a read timeout) although Redis may have run it, and Sluice
-- retries some calls itself. So a mutating script ends its ARGV with a
-- call ID, fresh for each logical call and the same in every re-send of
-- it (store's callID). Its first run records its reply under the ID, in
-- the partition's slot, for CALL_KEEP ms (remember: as long as the
-- client may re-send, which the ID says); a second delivery
-- finds the record and answers it without running again (replayed).
-- Past CALL_KEEP, most scripts' own checks still keep a late second run
-- from applying anything twice (the fence moved on, the checkpoint is
-- there), but not all (an enqueue with a generated ID, a signal without
-- a key): so a record is kept for as long as the client may re-send.
-- Mirrored by Go's store.CallKeep and keys.Partition.Call.
local CALL_ID = ARGV[#ARGV]
-- the ID ends with '~' and how long its client may re-send it (store's
-- callKeep); 60 s, the least, for an ID without
-- (kept a string, for SET's PX: Lua's tonumber, strtod, and a pattern not
-- anchored at the start cost a one-job call about 2%)
local CALL_KEEP = string.match(CALL_ID, '^[^~]*~(%d+)$') or '60000'
-- CALL_KEY holds the call's record
local CALL_KEY = PFX .. 'rc:' .. CALL_ID

-- A record is the reply packed by cmsgpack (pack_record), which a
-- redis-server always has: in C, it packs the record of an ack of 50
-- jobs in about 4 µs, where the Lua codec below takes 18-31 µs; enqueue,
-- claim and ack each write one per call, so it saves about 1 µs of Redis
-- time per job. A script reply is nested lists of strings, integers and
-- false, which cmsgpack gives back exactly as they were. The Lua codec
-- serves an embedded Redis without cmsgpack (miniredis). A record is read
-- only by the code that wrote it: a function's name is the hash of its
-- code (lua/script.go).
--
-- encode_reply appends to parts a script reply (nested lists of strings,
-- integers and false) in a form decode_reply reads back exactly:
-- 't' count ':' items, 's' length ':' bytes, 'n' integer ':', 'f'.
local function encode_reply(v, parts)
  local t = type(v)
  if t == 'table' then
    parts[#parts + 1] = 't' .. #v .. ':'
    for i = 1, #v do encode_reply(v[i], parts) end
  elseif t == 'string' then
    parts[#parts + 1] = 's' .. #v .. ':'
    parts[#parts + 1] = v
  elseif t == 'number' then
    parts[#parts + 1] = 'n' .. string.format('%d', v) .. ':'
  else
    parts[#parts + 1] = 'f'
  end
end

-- decode_reply reads the value encode_reply wrote at position i of s and
-- returns it with the position after it.
local function decode_reply(s, i)
  local tag = string.sub(s, i, i)
  if tag == 'f' then return false, i + 1 end
  local colon = string.find(s, ':', i, true)
  local num = tonumber(string.sub(s, i + 1, colon - 1))
  if tag == 'n' then return num, colon + 1 end
  if tag == 's' then return string.sub(s, colon + 1, colon + num), colon + 1 + num end
  local out, p = {}, colon + 1
  for k = 1, num do out[k], p = decode_reply(s, p) end
  return out, p
end

-- pack_record is reply as a record; unpack_record reads one back.
local function pack_record(reply)
  if MSGPACK then return MSGPACK.pack(reply) end
  local parts = {}
  encode_reply(reply, parts)
  return join(parts)
end
local function unpack_record(v)
  if MSGPACK then return MSGPACK.unpack(v) end
  return (decode_reply(v, 1))
end

-- replayed is the reply this call's first run recorded, or nil when this
-- is its first run.
local function replayed()
  local v = redis.call('GET', CALL_KEY)
  if not v then return nil end
  return unpack_record(v)
end

-- remember records reply as this call's answer and returns it, for
-- CALL_KEEP ms, or keep (a whole number of ms, as a string) when given.
local function remember(reply, keep)
  redis.call('SET', CALL_KEY, pack_record(reply), 'PX', keep or CALL_KEEP)
  return reply
end
