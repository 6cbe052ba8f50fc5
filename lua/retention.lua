-- retention.lua: record a worker's retention as that of the queues it
-- serves, queue by queue, unless the record there is of a worker that
-- started later. It runs alone: its key is the namespace's hash of
-- retention records (keys.Retention), beside the queue registry, not a
-- partition's.
--
-- A record is 'completed:archived:cancelled:started:worker'
-- (store.Retention's encoding; store.DecodeRetention reads it as
-- parse_record does here): three durations in ms, each -1 or more, the
-- worker's start in unix ms of the store's time, and the worker's ID (not
-- empty; it may hold ':'). Each number is written without leading zeros
-- and is at most MAX_MS.
--
-- KEYS[1] the hash of records (keys.Retention): queue -> record
-- ARGV[1] now ms, or '' to use the store's TIME
-- ARGV[2] the record to write
-- ARGV[3..] the queues
-- Returns: the queues whose record was left as it was because its worker
--   started after ARGV[2]'s (a start equal to the writer's is replaced:
--   the writer's record is as new). A record that cannot be read, or
--   whose start is more than AHEAD_MS after now (no start in the store's
--   time can be: an older build wrote it from a worker's clock that ran
--   ahead, or someone by hand), is replaced. A call received twice finds
--   its own record the second time, of the same start, and writes it
--   again: nothing changes; a newer record written in between stays.
-- Errors, before anything is written: KEYS[1] holds another type than a
--   hash (WRONGTYPE); ARGV[2] is not a record, or starts more than
--   AHEAD_MS after now; no queue is given.
-- Transitions: none.
local MAX_MS = 9223372036854 -- the longest time.Duration, in ms
local AHEAD_MS = 60000

-- whole reads s as a number written as Go writes it (no sign but '-1's,
-- no leading zero, at most MAX_MS), at least least (-1 or 0); nil if not.
local function whole(s, least)
  if s == '-1' then
    if least <= -1 then return -1 end
    return nil
  end
  if #s > 13 or (s ~= '0' and not string.match(s, '^[1-9]%d*$')) then return nil end
  local n = tonumber(s)
  if n > MAX_MS then return nil end
  return n
end

-- parse_record returns the start of record v, nil if v is not a record.
-- Its four numbers and their colons take 56 characters at most: only
-- those and the one after are matched, as a record may be as long as a
-- worker's ID (lua/patterns_test.go).
local function parse_record(v)
  local c, a, x, s = string.match(string.sub(v, 1, 57), '^([^:]*):([^:]*):([^:]*):([^:]*):.')
  if not c or not whole(c, -1) or not whole(a, -1) or not whole(x, -1) then return nil end
  return whole(s, 0)
end

local now = ARGV[1]
if now == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(now)
  if not now then return redis.error_reply('retention.lua: now ' .. tostring(ARGV[1])) end
end
local rec = ARGV[2]
local started = parse_record(rec)
if not started then
  return redis.error_reply('retention.lua: not a retention record: ' .. tostring(rec))
end
if started > now + AHEAD_MS then
  return redis.error_reply('retention.lua: the record starts at ' .. started ..
    ', after the store time ' .. now .. ': a start is read from the store')
end
if #ARGV < 3 then return redis.error_reply('retention.lua: no queue') end
local kind = redis.call('TYPE', KEYS[1])
if type(kind) == 'table' then kind = kind['ok'] end
if kind ~= 'hash' and kind ~= 'none' then
  return redis.error_reply('WRONGTYPE sluice: ' .. KEYS[1] .. ' holds a ' .. tostring(kind) ..
    ', not the hash of retention records')
end
local left = {}
for i = 3, #ARGV do
  local q = ARGV[i]
  local cur = redis.call('HGET', KEYS[1], q)
  local at = cur and parse_record(cur)
  if at and at > started and at <= now + AHEAD_MS then
    left[#left + 1] = q
  else
    redis.call('HSET', KEYS[1], q, rec)
  end
end
return left
