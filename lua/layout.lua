-- layout.lua: register a queue's layout on its first use, or resize it.
-- It runs alone: its key is the namespace's registry of queues
-- (keys.Queues), not a partition's.
--
-- A layout is the string 'partitions:version:registered:changed' (counts,
-- then unix ms), store.Layout's encoding.
--
-- KEYS[1] the registry hash (keys.Queues): queue name -> layout
-- KEYS[2] lock, unlock and resize: the queue's resize lock
--         (keys.ResizeLock), in the registry's slot: a resize, or a resume
--         that finds partitions a resize retired, holds it
-- ARGV[1] 'register', 'resize', 'lock' or 'unlock'
-- ARGV[2] now ms, or '' to use the store's TIME
-- ARGV[3] the queue
-- ARGV[4] register: the partition count to record if the queue has none;
--         resize: the new partition count
-- ARGV[5] resize only: the version the caller read (compare and set)
-- ARGV[6] resize only: the token of the lock the caller holds
-- lock: ARGV[3] the token, ARGV[4] its time to live (ms), ARGV[5] '1' to
--   take the lock from whoever holds it (a resume ending a resize), else
--   '0'. Returns 1 when taken, 0 when another token holds it.
-- unlock: ARGV[3] the token. Deletes the lock if that token holds it;
--   returns 1 then, else 0.
-- Returns {code, layout}:
--   register: {1, the new layout} when this call recorded it, {0, the
--     layout found} when the queue had one (a re-sent call finds its own).
--   resize: {1, the new layout} when the layout was at version ARGV[5]
--     and is now at the next with ARGV[4] partitions (a re-sent call
--     finds it so and answers the same); {0, the layout found} when it is
--     at another version; {-3, the layout found} when the caller's token
--     no longer holds the lock (it expired, or a resume took it): nothing
--     is written; {-1, ''} when the queue has none.
--   {-2, the value found} when the value found is not a layout: nothing
--   is written.
-- Transitions: none.

-- LAYOUT_MAX is a layout's greatest length: four numbers of 20 digits and
-- their colons; a longer value is not one, and is not matched (a pattern
-- that repeats an item must not meet a value of any length:
-- lua/patterns_test.go).
local LAYOUT_MAX = 83
local function parse(v)
  if #v > LAYOUT_MAX then return nil end
  local p, ver, reg, ch = string.match(v, '^(%d+):(%d+):(%d+):(%d+)$')
  if not p then return nil end
  return { p = tonumber(p), v = tonumber(ver), reg = reg, ch = ch }
end
if ARGV[1] == 'lock' then
  if ARGV[5] ~= '1' and redis.call('EXISTS', KEYS[2]) == 1 and redis.call('GET', KEYS[2]) ~= ARGV[3] then
    return 0
  end
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
  return 1
elseif ARGV[1] == 'unlock' then
  if redis.call('GET', KEYS[2]) ~= ARGV[3] then return 0 end
  redis.call('DEL', KEYS[2])
  return 1
end
local now = ARGV[2]
if now == '' then
  local t = redis.call('TIME')
  now = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
local n = tonumber(ARGV[4])
if not n or n < 1 or n > 1024 or n ~= math.floor(n) then
  return redis.error_reply('layout.lua: partition count ' .. tostring(ARGV[4]))
end
local cur = redis.call('HGET', KEYS[1], ARGV[3])
if ARGV[1] == 'register' then
  if cur then
    if not parse(cur) then return { -2, cur } end
    return { 0, cur }
  end
  local rec = n .. ':1:' .. now .. ':' .. now
  redis.call('HSET', KEYS[1], ARGV[3], rec)
  return { 1, rec }
end
if ARGV[1] ~= 'resize' then
  return redis.error_reply('layout.lua: mode ' .. tostring(ARGV[1]))
end
local want = tonumber(ARGV[5])
if not want then return redis.error_reply('layout.lua: version ' .. tostring(ARGV[5])) end
if not cur then return { -1, '' } end
local l = parse(cur)
if not l then return { -2, cur } end
if l.v == want + 1 and l.p == n then return { 1, cur } end
if l.v ~= want then return { 0, cur } end
if redis.call('GET', KEYS[2]) ~= ARGV[6] then return { -3, cur } end
local rec = n .. ':' .. (want + 1) .. ':' .. l.reg .. ':' .. now
redis.call('HSET', KEYS[1], ARGV[3], rec)
return { 1, rec }
