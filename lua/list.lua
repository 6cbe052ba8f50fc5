-- list.lua: one bounded page of a partition's jobs in one state, for
-- operators.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  state
-- ARGV[10] cursor: where the previous page of this partition stopped ('':
--          the start). For a zset state, the rank of the next entry from
--          the highest score; for available, 'priority.offset', the offset
--          counted from the tail of that priority's list.
-- ARGV[11] the most jobs to return
-- ARGV[12] the most entries to examine (stale entries are examined but
--          not returned)
-- ARGV[13] kind ('' any)
-- Order: running by lease expiry, scheduled and retryable by due time,
--   finished states by deletion time (finish time plus retention), each
--   highest first; available by priority (highest first) then newest
--   first within a priority.
-- Returns: { next, entry... }: next is the cursor after the last entry
--   examined, '' when the partition has no more; each entry is
--   { cursor after it, sort key, id, FIELDS values... }. The sort key is
--   the zset score, or for available priority * 1e14 + creation time, so
--   callers can merge partitions.
-- Transitions: none.
local FIELDS = {
  F.state, F.kind, F.priority, F.attempt, F.crash_attempt, F.max_attempts, F.created, F.run_at, F.finished,
  F.reason, F.last_error, F.worker, F.lease_start, F.redrives, F.parent, F.timeout, F.deadline, F.redriven_at,
  F.fence, F.awaits,
}
local state, cursor = ARGV[9], ARGV[10]
local n, budget, kind = tonumber(ARGV[11]), tonumber(ARGV[12]), ARGV[13]
local ZSETS = { running = K_RUN, scheduled = K_SCHED, retryable = K_SCHED }
for s, k in pairs(TERMINAL) do ZSETS[s] = k end

local out = { '' }
local seen = {}
local function consider(id, key, after)
  if seen[id] then return end
  seen[id] = true
  local h = redis.pcall('HMGET', job_key(id), unpack(FIELDS))
  if h.err then return end
  h[1] = state_of(h[1])
  if h[1] ~= state or (kind ~= '' and h[2] ~= kind) then return end
  if state == 'available' then key = string.format('%.0f', priority_of(h[3]) * 1e14 + (tonumber(h[7]) or 0)) end
  local e = { after, key, id }
  for i = 1, #FIELDS do e[3 + i] = h[i] or false end
  out[#out + 1] = e
end

local zk = ZSETS[state]
local examined = 0
if zk then
  local rank = tonumber(cursor) or 0
  while #out - 1 < n and examined < budget do
    local want = math.min(n - (#out - 1), budget - examined)
    local batch = redis.call('ZREVRANGE', zk, rank, rank + want - 1, 'WITHSCORES')
    if #batch == 0 then return out end
    for i = 1, #batch, 2 do
      rank = rank + 1
      examined = examined + 1
      consider(batch[i], batch[i + 1], tostring(rank))
    end
    if #batch < 2 * want then return out end
  end
  out[1] = tostring(rank)
  return out
end

if state ~= 'available' then return redis.error_reply('ERR sluice: unknown state ' .. tostring(state)) end
local prio, off = MAX_PRIORITY, 0
if cursor ~= '' then
  local p, o = string.match(cursor, '^(%d+)%.(%d+)$')
  prio, off = tonumber(p), tonumber(o)
end
while prio >= 0 do
  while #out - 1 < n and examined < budget do
    local want = math.min(n - (#out - 1), budget - examined)
    -- entries from the tail: offset off counts from the last one
    local batch = redis.call('LRANGE', avail_key(prio), -(off + want), -(off + 1))
    for i = #batch, 1, -1 do
      off = off + 1
      examined = examined + 1
      consider(batch[i], '0', prio .. '.' .. off)
    end
    if #batch < want then break end
  end
  if #out - 1 >= n or examined >= budget then
    out[1] = prio .. '.' .. off
    return out
  end
  prio, off = prio - 1, 0
end
return out
