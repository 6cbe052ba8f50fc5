-- bulkdelete.lua: one bounded step of an operator's delete by selector
-- (admin.Client.DeleteSelected): a scan of one state's sorted set, in
-- zset order, deleting (or, in a dry run, only counting) the jobs that
-- match, each with every key it owns, as delete.lua does.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  state scanned: completed, archived, quarantined, cancelled (its
--          terminal set, oldest first), scheduled or retryable (the
--          scheduled set, soonest due first)
-- ARGV[10] cursor score, ARGV[11] cursor member: the last entry the
--          previous step examined ('' and '': start at the beginning)
-- ARGV[12] as-of time (ms) the scan started; '' on the first step
-- ARGV[13] the most entries to examine in this step
-- ARGV[14] '1': dry run (count, delete nothing)
-- ARGV[15] kind ('' any), ARGV[16] reason ('' any),
-- ARGV[17] finished at or after (ms, 0 none), ARGV[18] finished before
--          (ms, 0 none)
-- A job matches when it is in the scanned state and has the kind asked;
-- a finished one also has the reason asked and finished in the range and
-- not after the as-of time (so jobs that finish during the scan are not
-- taken). A running job is never in a scanned set's state, so never
-- deleted. A job whose key is not a job hash is left as it is and named
-- in the reply; the others of the step go on.
-- Returns { as-of, examined, matched, cursor score, cursor member, done
-- (1 when the scan reached the end), zset size, { IDs left unreadable } }.
-- Transitions: scheduled|retryable|completed|archived|quarantined|
--   cancelled -> (deleted), as delete.lua deletes them.
-- A re-sent call answers what its first run did (lib_replay.lua); a late
-- one finds the deleted jobs gone and deletes nothing twice.
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

local start = scan_start(zk, cscore, cmember)
local batch = redis.call('ZRANGE', zk, start, start + limit - 1, 'WITHSCORES')
local examined, matched, unreadable = 0, 0, {}
local fs, fk, fr, ff, fu = F.state, F.kind, F.reason, F.finished, F.unique
for i = 1, #batch, 2 do
  local id = batch[i]
  local jk = job_key(id)
  -- pcall: a key that is not a job hash must not raise after a write
  local h = redis.pcall('HMGET', jk, fs, fk, fr, ff, fu)
  if h.err then
    unreadable[#unreadable + 1] = id
  else
    local ok = state_of(h[1]) == state and (kind == '' or h[2] == kind)
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
  examined = examined + 1
  cscore, cmember = batch[i + 1], id
end
flush()
local done = 0
if examined < limit then done = 1 end
return remember({ asof, examined, matched, cscore, cmember, done, redis.call('ZCARD', zk), unreadable })
