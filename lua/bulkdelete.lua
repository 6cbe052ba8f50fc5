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
-- seen: a bucket of later jobs may list a job twice (a job given the ID
-- of a deleted one whose entry is still there, a job that left more
-- buckets than LEFT_NOTES: lib_ready.lua), the second entry read as
-- stale; a dry run, which deletes nothing, would count the job at each
-- (as a delete, which finds it gone at the second, does not), so an
-- entry of a job the step examined already is read but not examined. A
-- stale entry marks nothing: the job's own entry, read after it in the
-- step (the job given the ID due in a later slice), is still examined
local seen = {}
local function visit(id, indexed)
  read = read + 1
  if seen[id] then return end
  local jk = job_key(id)
  -- pcall: a key that is not a job hash must not raise after a write
  local h = redis.pcall('HMGET', jk, fs, fk, fr, ff, fu, frt)
  if h.err then
    seen[id] = true
    unreadable[#unreadable + 1] = id
    examined = examined + 1
    return
  end
  local s, at = state_of(h[1]), tonumber(h[6])
  if at and not (at > -math.huge and at < math.huge) then at = nil end
  if finished and s ~= state then return end
  if not finished and not ((s == 'scheduled' or s == 'retryable') and indexed(at)) then return end
  seen[id] = true
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

-- The scheduled index is read in slices of SCHED_BUCKET ms of due time,
-- soonest first: slice b is bucket b of later jobs (lib_ready.lua
-- sched_add), from its tail, then the entries of sched due in it. A job
-- moves only forward in this order while the scan runs: a bucket coming
-- due moves into sched at each job's due time, in the same slice, after
-- its list; a debounce puts a job off to a later time. So no job
-- scheduled when the scan began is missed (one a debounce brings
-- forward past the scan's place excepted), and an offset counted from a
-- bucket's tail stays right as its head is popped. Cursors:
-- 'later:' .. slice and the entries of its bucket read; 'near:' ..
-- slice .. ':' .. the last sched entry's score ('' none yet), and its
-- member.
local ended = false
if zk == K_SCHED then
  local B = SCHED_BUCKET
  -- T bounds the slices: a due time at or past T (a FAR wake included
  -- below it), or at or before -T, is no time Sluice writes (corrupt
  -- data), and falls in one slice at each end, -inf and inf, where slice
  -- arithmetic would lose its precision
  local T = B * 1099511627776 -- 2^40 slices, about 174,000 years
  -- num is x as a score argument
  local function num(x) return string.format('%.17g', x) end
  -- slice_of is the slice of due time x
  local function slice_of(x)
    if x >= T then return math.huge elseif x < -T then return -math.huge end
    return math.floor(x / B)
  end
  -- slice_text is slice b in a cursor, slice_in reads it back
  local function slice_text(b)
    if b == math.huge then return 'inf' elseif b == -math.huge then return '-inf' end
    return string.format('%d', b)
  end
  local function slice_in(v)
    if v == 'inf' then return math.huge elseif v == '-inf' then return -math.huge end
    return tonumber(v)
  end
  -- range is slice b's scores as ZRANGEBYSCORE's bounds
  local function range(b)
    if b == math.huge then return num(T), '+inf' elseif b == -math.huge then return '-inf', '(' .. num(-T) end
    return num(b * B), '(' .. num((b + 1) * B)
  end
  -- after is the first slice after slice prev (nil: the first) that has
  -- a bucket or an entry of sched, or nil when none has
  local function after(prev)
    if prev == math.huge then return nil end
    local lo = '-inf'
    if prev then lo = num(-T) end
    if prev and prev > -math.huge then lo = num((prev + 1) * B) end
    -- scores: a bucket's member need not be a number (corrupt data)
    local l = call_aside('ZRANGEBYSCORE', K_LATER, nil, lo, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    local z = call_aside('ZRANGEBYSCORE', zk, nil, lo, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    local nb = l[2] and slice_of(score_num(l[2]))
    if z[2] and (not nb or slice_of(score_num(z[2])) < nb) then nb = slice_of(score_num(z[2])) end
    return nb
  end
  local b, phase, off, zs, zm
  if cscore == '' then
    b, phase, off = after(nil), 'l', 0
  elseif cscore:sub(1, 6) == 'later:' then
    b, phase, off = slice_in(cscore:sub(7)), 'l', tonumber(cmember) or 0
  elseif cscore:sub(1, 5) == 'near:' then
    local at = string.find(cscore, ':', 6, true)
    if at then b, phase, zs, zm = slice_in(cscore:sub(6, at - 1)), 'n', cscore:sub(at + 1), cmember end
  end
  if cscore ~= '' and not b then return redis.error_reply('ERR sluice: bad scan cursor ' .. cscore) end
  while b and read < limit do
    local want = limit - read
    if phase == 'l' then
      local lo, hi = range(b)
      local m = call_aside('ZRANGEBYSCORE', K_LATER, nil, lo, hi, 'LIMIT', 0, 1)
      -- pcall: a bucket whose key holds no list (corrupt data) has no
      -- jobs to read; raising would keep the jobs this step deleted
      -- counted, answer no cursor, and fail every later step here. It is
      -- passed over (sched_near sets it aside when it comes due)
      local ids = m[1] and redis.pcall('LRANGE', later_key(m[1]), -(off + want), -(off + 1)) or {}
      if ids.err then ids = {} end
      for i = #ids, 1, -1 do
        visit(ids[i], function(at) return not at or slice_of(at) == b end)
      end
      off = off + #ids
      if #ids < want then phase, zs, zm = 'n', '', '' end
    else
      local start
      if zs == '' then
        start = 0
        if b > -math.huge then start = redis.call('ZCOUNT', zk, '-inf', '(' .. (range(b))) end
      else
        start = scan_start(zk, zs, zm)
      end
      local batch = redis.call('ZRANGE', zk, start, start + want - 1, 'WITHSCORES')
      local rest = #batch == 2 * want -- a full batch: the slice may go on
      for i = 1, #batch, 2 do
        local score = score_num(batch[i + 1])
        if slice_of(score) ~= b then
          rest = false
          break
        end
        visit(batch[i], function(at) return not at or at == score end)
        zs, zm = batch[i + 1], batch[i]
      end
      if not rest then b, phase, off = after(b), 'l', 0 end
    end
  end
  ended = not b
  if phase == 'l' then
    cscore, cmember = 'later:' .. slice_text(b or 0), tostring(off)
  else
    cscore, cmember = 'near:' .. slice_text(b or 0) .. ':' .. zs, zm
  end
else
  local start = scan_start(zk, cscore, cmember)
  local batch = redis.call('ZRANGE', zk, start, start + limit - 1, 'WITHSCORES')
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
if zk == K_SCHED then -- scheduled and retryable jobs, which the index holds
  local n = call_aside('HMGET', K_STATS, nil, 'scheduled', 'retryable')
  size = (tonumber(n[1]) or 0) + (tonumber(n[2]) or 0)
else
  size = redis.call('ZCARD', zk)
end
return remember({ asof, examined, matched, cscore, cmember, done, size, unreadable })
