-- bulkdelete.lua: one bounded step of an operator's delete by selector
-- (admin.Client.DeleteSelected): a scan of one state's sorted set, in
-- zset order, deleting (or, in a dry run, only counting) the jobs that
-- match, each with every key it owns, as delete.lua does.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  state scanned: completed, archived, quarantined, cancelled (its
--          terminal set, oldest first), scheduled or retryable (the
--          scheduled index: its buckets of later jobs, then its zset)
-- ARGV[10] cursor score, ARGV[11] cursor member: the last entry the
--          previous step read ('' and '': start at the beginning); a
--          scan of the scheduled index reads the buckets of later jobs
--          before its zset, and has the cursors named below
-- ARGV[12] as-of time (ms) the scan started; '' on the first step
-- ARGV[13] the most entries to read in this step
-- ARGV[14] '1': dry run (count, delete nothing)
-- ARGV[15] kind ('' any), ARGV[16] reason ('' any),
-- ARGV[17] finished at or after (ms, 0 none), ARGV[18] finished before
--          (ms, 0 none)
-- A job matches when it is in the scanned state and has the kind asked;
-- a finished one also has the reason asked and finished in the range and
-- not after the as-of time (so jobs that finish during the scan are not
-- taken). A running job is never in a scanned set's state, so never
-- deleted. A job whose key is not a job hash is left as it is and named
-- in the reply; the others of the step go on. A bucket of later jobs
-- whose key holds no list has no jobs to read: it is passed over.
-- Returns { as-of, examined (the entries read whose job the set holds,
-- or unreadable: a stale entry, whose job has moved on, is skipped
-- uncounted), matched, cursor score, cursor member, done
-- (1 when the scan reached the end), size (the zset's; scheduled and
-- retryable jobs for their index), { IDs left unreadable } }.
-- Transitions: scheduled|retryable|completed|archived|quarantined|
--   cancelled -> (deleted), as delete.lua deletes them.
-- A re-sent call answers what its first run did (lib_replay.lua); a late
-- one finds the deleted jobs gone and deletes nothing twice.
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local state = ARGV[9]
local zk = TERMINAL[state]
if state == 'scheduled' or state == 'retryable' then zk = K_SCHED end
if not zk then return redis.error_reply('ERR sluice: cannot delete by selector in state ' .. tostring(state)) end
local finished = TERMINAL[state] ~= nil
local cscore, cmember = ARGV[10], ARGV[11]
local asof = tonumber(ARGV[12]) or NOW
local limit = tonumber(ARGV[13])
if not limit or limit < 1 then return redis.error_reply('ERR sluice: bad scan limit ' .. tostring(ARGV[13])) end
local dry = ARGV[14] == '1'
local kind, reason = ARGV[15], ARGV[16]
local after, before = tonumber(ARGV[17]), tonumber(ARGV[18])

local read, examined, matched, unreadable = 0, 0, 0, {}
local fs, fk, fr, ff, fu, frt = F.state, F.kind, F.reason, F.finished, F.unique, F.run_at
-- visit examines job id, found in the scanned set; for the scheduled index,
-- indexed says whether its due time (F.run_at; nil when it is no finite
-- number, and the entry is the job's: lib_ready.lua) is still the
-- entry's: an entry a job has left is stale (the job is counted where it
-- is now, or is gone), and is read but not examined.
local function visit(id, indexed)
  read = read + 1
  local jk = job_key(id)
  -- pcall: a key that is not a job hash must not raise after a write
  local h = redis.pcall('HMGET', jk, fs, fk, fr, ff, fu, frt)
  if h.err then
    unreadable[#unreadable + 1] = id
    examined = examined + 1
    return
  end
  local s, at = state_of(h[1]), tonumber(h[6])
  if at and not (at > -math.huge and at < math.huge) then at = nil end
  if finished and s ~= state then return end
  if not finished and not ((s == 'scheduled' or s == 'retryable') and indexed(at)) then return end
  examined = examined + 1 -- in the scanned set (the scheduled index holds both scheduled and retryable jobs)
  local ok = s == state and (kind == '' or h[2] == kind)
  if ok and finished then
    local ft = tonumber(h[4]) or 0
    ok = (reason == '' or h[3] == reason) and ft <= asof and (after == 0 or ft >= after)
      and (before == 0 or ft < before)
  end
  if ok then
    matched = matched + 1
    if not dry then remove_job(jk, id, state, h[5]) end
  end
end

-- The scheduled index is read buckets first, then the sched zset: the
-- buckets of later jobs (lib_ready.lua sched_add) from the last, each
-- from its tail, then sched soonest due first. Jobs move only from the
-- first bucket's head into sched as their time nears (sched_near), so a
-- job moved during the scan is read in sched, which comes after; and a
-- bucket's head popped under the scan does not move an offset counted
-- from its tail. Cursors: 'later:' .. bucket and the entries of that
-- bucket read from its tail ('later:' alone: from the last bucket); then
-- 'near:' (sched from its start), then sched's score and member.
local sched = zk == K_SCHED
if sched and cscore == '' then cscore, cmember = 'later:', '0' end
local ended = false
if sched and cscore:sub(1, 6) == 'later:' then
  local b, off = tonumber(cscore:sub(7)), tonumber(cmember) or 0
  while read < limit do
    local hi = '+inf'
    if b then hi = b * SCHED_BUCKET end
    local nxt = call_aside('ZREVRANGEBYSCORE', K_LATER, nil, hi, '-inf', 'LIMIT', 0, 1)
    if #nxt == 0 then
      b = nil
      break
    end
    local nb = tonumber(nxt[1])
    if nb ~= b then b, off = nb, 0 end
    local want = limit - read
    -- pcall: a bucket whose key holds no list (corrupt data) has no jobs
    -- to read; raising would keep the jobs this step deleted counted,
    -- answer no cursor, and fail every later step here. It is passed
    -- over (sched_near sets it aside when it comes due)
    local ids = redis.pcall('LRANGE', later_key(nxt[1]), -(off + want), -(off + 1))
    if ids.err then ids = {} end
    for i = #ids, 1, -1 do
      visit(ids[i], function(at) return not at or math.floor(at / SCHED_BUCKET) == b end)
    end
    off = off + #ids
    if #ids < want then
      b, off = b - 1, 0
      if b < 0 then
        b = nil
        break
      end
    end
  end
  if b then
    cscore, cmember = 'later:' .. string.format('%d', b), tostring(off)
  else
    cscore, cmember = 'near:', ''
  end
end
if read < limit then
  local start = 0
  if cscore ~= 'near:' then start = scan_start(zk, cscore, cmember) end
  local batch = redis.call('ZRANGE', zk, start, start + limit - read - 1, 'WITHSCORES')
  for i = 1, #batch, 2 do
    local score = tonumber(batch[i + 1])
    visit(batch[i], function(at) return not at or at == score end)
    cscore, cmember = batch[i + 1], batch[i]
  end
  ended = read < limit
end
flush()
local done = 0
if ended then done = 1 end
local size
if sched then -- scheduled and retryable jobs, which the index holds
  local n = call_aside('HMGET', K_STATS, nil, 'scheduled', 'retryable')
  size = (tonumber(n[1]) or 0) + (tonumber(n[2]) or 0)
else
  size = redis.call('ZCARD', zk)
end
return remember({ asof, examined, matched, cscore, cmember, done, size, unreadable })
