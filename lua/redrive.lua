-- redrive.lua: an operator returns finished jobs to execution.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9] mode, 'ids' or 'select'.
--
-- 'ids': ARGV[10] what to do: 'redrive' (archived or cancelled jobs) or
--   'release' (quarantined jobs); ARGV[11] n; then n job IDs; then, or
--   not, three for each ID in turn: the job must have been created at
--   or after the first and before the second (ms), the third the time its
--   generated ID carries, or '' '' '': any job of the ID (lib_admin.lua
--   other_job); then, or not (given these), two for each ID in turn: the
--   job must have that fence and that count of redrives, each '': any
--   (lib_admin.lua moved_on).
--   Returns one status per ID: 'ok' (moved), 'missing', 'malformed' (its
--   key holds another type than a hash, its state field names no
--   state, or, given its creation range, its created-time field is no
--   whole number of ms), 'conflict ' .. created (the job was created, ms,
--   out of its range: another job), 'changed ' .. field .. ' ' .. state
--   (its fence or count of redrives, field 'fence' or 'redrives', is not
--   the one named: it ran again or was redriven since), or the job's
--   state when it is not one the action takes (nothing written for it).
--
-- 'select': one bounded step of a scan of one terminal zset, oldest
--   first, moving (or, in a dry run, only counting) the jobs that match.
--   ARGV[10] state scanned: archived, cancelled or quarantined (released)
--   ARGV[11] cursor score, ARGV[12] cursor member: the last entry the
--            previous step examined ('' and '': start at the beginning)
--   ARGV[13] as-of time (ms) the scan started; '' on the first step
--   ARGV[14] the most entries to examine in this step
--   ARGV[15] '1': dry run (count, move nothing)
--   ARGV[16] kind ('' any), ARGV[17] reason ('' any),
--   ARGV[18] finished at or after (ms, 0 none), ARGV[19] finished before
--            (ms, 0 none)
--   A job matches when it is in the scanned state, has the kind and
--   reason asked, and finished in the range and not after the as-of time
--   (so jobs that fail again during the scan are not taken twice).
--   An entry whose key is not a job hash matches nothing: it is left as
--   it is and named in the reply.
--   Returns { as-of, examined, matched, cursor score, cursor member,
--   done (1 when the scan reached the end), zset size,
--   { IDs left unreadable } }.
--
-- Transitions: archived|cancelled -> available (action redrive),
--   quarantined -> available (action release), at the back of the job's
--   priority list. Counters (attempt, crash_attempt), errors, steps and
--   orphan provenance are kept; 'dn' counts the job's redrives, 'dt' is
--   the time of the last one, 'df' what it was redriven from
--   (state:reason). Releasing a quarantined job resets crash_attempt to 0.
--   The finish time and terminal reason are cleared. A job with a unique
--   key takes it again (held while it is active) unless another job holds
--   it (one that has not finished, or any for the key's TTL); its pending
--   death report, if any, is dropped. A spawned job's parent is told
--   to withdraw its end (lib_lifecycle.lua withdraw_from_parent): at
--   once in this partition, else through the outbox.
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local TAKES = {
  redrive = { archived = true, cancelled = true },
  release = { quarantined = true },
}

local function revive(jk, id, state, reason)
  zrem_later(TERMINAL[state], id)
  zrem_later(DEATHS, id) -- alive again: no death to report
  local uk = redis.call('HGET', jk, F.unique)
  if uk then
    -- active again, it holds its unique key again, while it is active,
    -- unless another job holds the key meanwhile, as an enqueue would find
    -- it held (unique_holder: a job that has not finished, or any for the
    -- key's TTL); a key that holds no string (corrupt data) is taken
    local holder, corrupt = unique_holder(uk)
    if corrupt or not holder then redis.call('SET', unique_key(uk), id) end
  end
  -- held by no one (a held job cancelled before this change kept F.held_by)
  redis.call('HDEL', jk, F.finished, F.reason, F.held_by)
  if not bump(jk, F.redrives) then redis.call('HSET', jk, F.redrives, 1) end -- a corrupt count starts anew
  redis.call('HSET', jk, F.redriven_at, NOW, F.redriven_from, state .. ':' .. (reason or ''))
  if state == 'quarantined' then
    redis.call('HSET', jk, F.crash_attempt, 0)
    local qf = redis.call('HGET', jk, F.hold_fingerprint)
    if qf then free_held(qf, id) end -- its twins held behind it run too
  end
  make_available(jk, id, state, false)
  -- a spawned job runs again: its parent no longer counts its end (a
  -- join that waits collects the new run's)
  withdraw_from_parent(jk, id)
end

if ARGV[9] == 'ids' then
  local takes = TAKES[ARGV[10]]
  if not takes then return redis.error_reply('ERR sluice: unknown redrive action ' .. tostring(ARGV[10])) end
  local out = {}
  local n = tonumber(ARGV[11])
  for i = 1, n do
    local id = ARGV[11 + i]
    local jk = job_key(id)
    local h, bad = fields(jk, F.state, F.reason)
    h[1] = state_of(h[1])
    local other, wrong, changed = nil, nil, nil
    if not bad and h[1] then
      -- the job a tool showed, not one given its ID since; one whose
      -- created-time field tells no job is malformed, as a corrupt state
      -- (the others of the call are moved all the same)
      other, wrong = other_job(jk, id, 12 + n + 3 * (i - 1))
      -- nor one that ran again or was redriven since the tool looked
      if not other and not wrong then changed = moved_on(jk, 12 + 4 * n + 2 * (i - 1)) end
    end
    if bad or wrong then
      out[i] = STATUS.malformed -- its key holds another type: not missing
    elseif not h[1] then
      out[i] = STATUS.missing
    elseif other then
      out[i] = STATUS.conflict .. ' ' .. string.format('%d', other)
    elseif not SCODE[h[1]] then
      out[i] = STATUS.malformed -- a state no release writes: corrupt data
    elseif changed then
      out[i] = STATUS.changed .. changed .. ' ' .. h[1]
    elseif takes[h[1]] then
      revive(jk, id, h[1], h[2])
      out[i] = STATUS.ok
    else
      out[i] = h[1]
    end
  end
  flush()
  return remember(out)
end

if ARGV[9] ~= 'select' then return redis.error_reply('ERR sluice: unknown redrive mode ' .. tostring(ARGV[9])) end
local state = ARGV[10]
local zk = TERMINAL[state]
if not zk or state == 'completed' then return redis.error_reply('ERR sluice: cannot redrive ' .. tostring(state)) end
local cscore, cmember = ARGV[11], ARGV[12]
local asof = tonumber(ARGV[13]) or NOW
local limit = tonumber(ARGV[14])
local dry = ARGV[15] == '1'
local kind, reason = ARGV[16], ARGV[17]
local after, before = tonumber(ARGV[18]), tonumber(ARGV[19])

local start = scan_start(zk, cscore, cmember)

local batch = redis.call('ZRANGE', zk, start, start + limit - 1, 'WITHSCORES')
local examined, matched, unreadable = 0, 0, {}
for i = 1, #batch, 2 do
  local id = batch[i]
  local jk = job_key(id)
  local h, bad = fields(jk, F.state, F.kind, F.reason, F.finished) -- corrupt: {}, matches nothing
  if bad then unreadable[#unreadable + 1] = id end
  local ft = tonumber(h[4]) or 0
  if state_of(h[1]) == state and (kind == '' or h[2] == kind) and (reason == '' or h[3] == reason)
    and ft <= asof and (after == 0 or ft >= after) and (before == 0 or ft < before) then
    matched = matched + 1
    if not dry then revive(jk, id, state, h[3]) end
  end
  examined = examined + 1
  cscore, cmember = batch[i + 1], id
end
flush()
local done = 0
if examined < limit then done = 1 end
return remember({ asof, examined, matched, cscore, cmember, done, redis.call('ZCARD', zk), unreadable })
