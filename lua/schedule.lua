-- schedule.lua: the state of one periodic schedule, changed atomically so
-- that any number of schedulers agree on which ticks are enqueued. Its
-- keys are not in a queue partition: of the prelude it uses only what
-- needs none of a partition's keys (NOW, STATUS, the call records of
-- lib_replay.lua, which live under the schedules' prefix).
--
-- State (KEYS[1] fields): last = the latest tick decided (enqueued, or
-- dropped by the missed-run policy or a pause), in unix ms; ran = the
-- latest tick enqueued (set by the ack that confirms it); paused = '1'
-- while paused; paused_at = when, while paused: the ticks due before it
-- fell while the schedule ran, and are still decided (a pause stops the
-- ticks after it, not those no scheduler had claimed yet); owed = the
-- windows of ticks due before a pause and undecided when it was resumed,
-- oldest first, as 'from:to' (the ticks in (from, to]) separated by
-- spaces, OWED_MAX at most: a scheduler decides them apart, the resume
-- having moved last to its own time (as every release's resume does, so
-- that a scheduler of a release before these fields runs no tick of the
-- pause); seen = the store time of the latest sync (a scheduler of
-- this release looks at each of its schedules at least once a minute),
-- which 'delete' reads to refuse deleting a schedule a scheduler still
-- runs. Definition fields are written by the schedulers with
-- HSET and never read here.
--
-- KEYS[1] the schedule's hash
-- KEYS[2] the schedule's pending ticks: tick ms -> claim time ms
-- KEYS[3] ('delete' only) the set of the schedules' names
-- Either key holding another type than a hash (written by hand) is refused
-- with a WRONGTYPE error naming it, before anything is written (the
-- pending ticks only by the ops that read them: sync, claim, ack,
-- delete; the names set, of another type than a set, by delete).
-- ARGV[1] now ms, or '' to use the store's TIME
-- ARGV[2] the schedules' key prefix ("{tag}:"), under which call records
--         are kept (lib_replay.lua)
-- ARGV[3] op, one of:
--   'sync'   ARGV[4] ms after which a pending tick counts as abandoned.
--            Starts the state at last = now when there is none.
--            Returns {'ok', now, from, paused (0|1), upto, {later},
--            abandoned ticks...}: (from, upto] is the window a scheduler
--            decides now: (last, now]; while paused, (last, the pause's
--            time] (empty once last is there); when ticks are owed, their
--            oldest window first; upto is never past now; later are the
--            windows to decide after it, oldest first, as from, upto
--            pairs (the other owed ones, then last's), for a missed-run
--            policy to count the ticks of all of them together;
--            each abandoned tick is handed to this caller (its claim time
--            is reset, to the time recorded in field hand_at, and the
--            sync's call ID in field hand) to enqueue again; the same
--            sync sent again (its reply lost) is handed the same ticks,
--            those still pending with that claim time; or {'missing', now}.
--   'claim'  ARGV[4] the start of the window the caller saw (last, or
--            the oldest owed window's), ARGV[5] the new last tick (the
--            window's end),
--            ARGV[6...] the ticks the caller will enqueue.
--            Returns 'ok' (last moved, or the owed window decided up to it; the
--            ticks are pending), 'moved' (another scheduler moved first:
--            nothing written), 'paused' (the new last tick is past the
--            pause's time: nothing written) or 'missing'. The same claim
--            sent again (its reply lost) is answered what its first run
--            answered (its call record; past the record, its call ID in
--            field claim, which every claim overwrites), even when
--            another scheduler has claimed later ticks in between: a
--            twin claim of another scheduler, with another call ID, is
--            'moved' (its tick jobs would run again once the first ones
--            are done and deleted).
--   'ack'    ARGV[4] the latest tick whose job was added ('' for none),
--            ARGV[5...] ticks now confirmed (their jobs added, or found
--            impossible to add). Returns 'ok'.
--   'pause'  Records when, unless paused already. Returns 'ok' or
--            'missing'.
--   'resume' Restarts a paused schedule from now: the ticks that fell
--            while it was paused are not run; those due before the pause
--            that no scheduler decided yet are owed, after those of
--            earlier pauses still owed. Returns 'ok' or 'missing'.
--   'delete' ARGV[4] '1' to delete even while a scheduler runs it (force),
--            ARGV[5] how long after its latest sync (seen) a scheduler
--            still counts as running it, in ms, ARGV[6] the name.
--            Deletes the record and the pending ticks, and the name from
--            the names set (KEYS[3]); the jobs the ticks enqueued are not
--            touched. Unless forced, a schedule synced less than ARGV[5]
--            ago, or never synced by a scheduler that records seen (a
--            scheduler of an older release may run it: nothing tells), is
--            refused: {'running', seen ms, or '', or seen as it is when
--            it is no time (written by hand)}, nothing written. Returns
--            'ok', that, or 'missing'. The same delete sent again (its
--            reply lost) is answered what its first run answered.
-- ARGV[#ARGV] the call ID (lib_replay.lua)
-- Transitions: none (no job changes state here).
local K, KP = KEYS[1], KEYS[2]
local op = ARGV[3]
if op == 'claim' or op == 'pause' or op == 'resume' or op == 'delete' then
  -- a pause or resume sent again after a resume or pause that came
  -- between must not undo it: it answers its first run (a delete sent
  -- again is answered 'ok', not 'missing', by its own record)
  local again = replayed()
  if again then return again end
end
-- validated before the first write (Redis rolls none back): a key of
-- another type than a hash (written by hand) is refused, WRONGTYPE naming
-- it, before any op writes the other (a sync would start last anew, drop
-- paused_at and owed, then raise at the pending ticks; an ack would
-- delete its ticks, then raise at the record). A pause or resume, which
-- never reads the pending ticks, still runs over them.
for i, k in ipairs({ K, KP }) do
  if i == 1 or op == 'sync' or op == 'claim' or op == 'ack' or op == 'delete' then
    local t = redis.call('TYPE', k)['ok']
    if t ~= 'hash' and t ~= 'none' then
      return redis.error_reply('WRONGTYPE sluice: schedule key ' .. k .. ' is a ' .. tostring(t) .. ', not a hash: nothing written')
    end
  end
end
if op == 'delete' then
  local t = redis.call('TYPE', KEYS[3])['ok']
  if t ~= 'set' and t ~= 'none' then
    return redis.error_reply('WRONGTYPE sluice: schedule key ' .. KEYS[3] .. ' is a ' .. tostring(t) .. ', not a set: nothing written')
  end
end
if op == 'ack' then
  -- safe to run twice (a re-send): the deletes and the greater 'ran' are
  -- the same the second time
  for i = 5, #ARGV - 1 do redis.call('HDEL', KP, ARGV[i]) end
  local tick = count_of(ARGV[4])
  -- count_of: a 'ran' written by hand that tonumber takes but is no
  -- whole number of ms ('nan', 'inf', '1e300') no tick would pass, and
  -- the record would stay malformed for ever: it is replaced, as any other
  if tick and redis.call('EXISTS', K) == 1 and tick > (count_of(redis.call('HGET', K, 'ran')) or 0) then
    redis.call('HSET', K, 'ran', tick)
  end
  return STATUS.ok
end
if redis.call('EXISTS', K) == 0 then
  if op == 'sync' then return { STATUS.missing, NOW } end
  if op == 'claim' or op == 'delete' then return remember(STATUS.missing) end
  return STATUS.missing
end

-- time_of(v) is a time a state field holds: a whole number of ms, or
-- nil (absent, or written by hand)
local function time_of(v) return v and count_of(v) end

-- OWED_MAX is the most owed windows a schedule keeps: a resume past it
-- drops its window (pauses and resumes by the dozen with no scheduler
-- running between them). Go's store.OwedMax is the same number.
local OWED_MAX = 32
-- owed_of(v) is the owed windows field v parsed, a list of {from, to}:
-- nil when there are none, or false when v is malformed (written by
-- hand; the caller deletes it)
local function owed_of(v)
  if not v or v == '' then return nil end
  local out, prev = {}, -1
  if #v > 48 * OWED_MAX then return false end
  for f, t in string.gmatch(v, '(%d+):(%d+)') do
    local from, to = count_of(f), count_of(t)
    if not (from and to and prev <= from and from < to) then return false end
    out[#out + 1] = { from, to }
    prev = to
  end
  if #out == 0 then return false end
  return out
end
-- owed_text(w) is owed windows w as the field holds them
local function owed_text(w)
  local parts = {}
  for i, x in ipairs(w) do parts[i] = string.format('%d:%d', x[1], x[2]) end
  return join(parts, ' ')
end

if op == 'sync' then
  -- validated before the first write (Redis rolls none back)
  local stale = tonumber(ARGV[4])
  if not stale then return redis.error_reply('ERR sluice: schedule sync: the abandon delay is no number') end
  local st = redis.call('HMGET', K, 'last', 'paused', 'hand', 'hand_at', 'paused_at', 'owed')
  -- count_of: a whole number of ms; any other (written by hand: 'nan',
  -- '1.5', '1e300') would be answered as another integer (Redis turns a
  -- Lua number into one), which the claim would then never find equal
  -- to the field, answering 'moved' for ever
  local last = st[1] and count_of(st[1])
  if not last then
    -- absent (a schedule's first sync), or written by hand: it starts
    -- from now, where a nil in the reply would cut it short after the
    -- writes below, on every sync
    last = NOW
    redis.call('HSET', K, 'last', NOW)
  end
  local paused, pa, owed = 0, time_of(st[5]), owed_of(st[6])
  if st[2] == '1' then paused = 1 end
  if paused == 0 and st[5] then
    redis.call('HDEL', K, 'paused_at') -- resumed by a release before it
  end
  if owed == false then
    redis.call('HDEL', K, 'owed') -- written by hand
    owed = nil
  end
  local from, upto, later = last, NOW, {}
  if paused == 1 then
    upto = math.max(last, pa or last) -- an older release's pause: none
  end
  if owed then
    for i = 2, #owed do
      later[#later + 1], later[#later + 2] = owed[i][1], math.min(owed[i][2], NOW)
    end
    later[#later + 1], later[#later + 2] = from, math.min(upto, NOW)
    from, upto = owed[1][1], owed[1][2]
  end
  local out = { STATUS.ok, NOW, from, paused, math.min(upto, NOW), later }
  local token = CALL_ID
  local pend = redis.call('HGETALL', KP)
  if st[3] == token then
    -- this very sync, sent again: its first run handed these over
    for i = 1, #pend, 2 do
      if pend[i + 1] == st[4] then out[#out + 1] = tonumber(pend[i]) end
    end
    return out
  end
  -- a scheduler runs it: delete refuses it for a while (the same sync
  -- sent again, above, leaves the time its first run wrote)
  redis.call('HSET', K, 'seen', NOW)
  local handed = false
  for i = 1, #pend, 2 do
    -- an entry written by hand: one that names no tick is dropped, one
    -- whose claim time is not a number is abandoned
    local tick, at = count_of(pend[i]), tonumber(pend[i + 1])
    if not (at and at > -math.huge and at < math.huge) then at = 0 end -- nan, inf: not a time
    if not tick then -- no whole number of ms (its ack could never delete it)
      redis.call('HDEL', KP, pend[i])
    elseif NOW - at >= stale then
      redis.call('HSET', KP, pend[i], NOW)
      out[#out + 1] = tick
      handed = true
    end
  end
  if handed then redis.call('HSET', K, 'hand', token, 'hand_at', NOW) end
  return out
elseif op == 'claim' then
  local st = redis.call('HMGET', K, 'last', 'paused', 'paused_at', 'claim', 'owed')
  if st[4] == CALL_ID then
    -- this very claim, sent again after its record expired
    return remember(STATUS.ok)
  end
  local seen, to = tonumber(ARGV[4]), tonumber(ARGV[5])
  local owed = owed_of(st[5])
  if owed and seen == owed[1][1] then
    -- the oldest owed window: decided apart from last, up to to (a claim
    -- planned before the resume, from the last tick it saw then, decides
    -- only its start: the rest stays owed)
    if to > owed[1][2] then return remember(STATUS.moved) end
    for i = 6, #ARGV - 1 do redis.call('HSET', KP, ARGV[i], NOW) end
    if to < owed[1][2] then
      owed[1][1] = to
    else
      table.remove(owed, 1)
    end
    if #owed > 0 then
      redis.call('HSET', K, 'owed', owed_text(owed), 'claim', CALL_ID)
    else
      redis.call('HDEL', K, 'owed')
      redis.call('HSET', K, 'claim', CALL_ID)
    end
    return remember(STATUS.ok)
  end
  if tonumber(st[1]) ~= seen then return remember(STATUS.moved) end
  -- paused: only ticks due before the pause may still be decided
  local pa = time_of(st[3])
  if st[2] == '1' and not (pa and to <= pa) then return remember(STATUS.paused) end
  for i = 6, #ARGV - 1 do redis.call('HSET', KP, ARGV[i], NOW) end
  redis.call('HSET', K, 'last', ARGV[5], 'claim', CALL_ID)
  return remember(STATUS.ok)
elseif op == 'pause' then
  if redis.call('HGET', K, 'paused') ~= '1' then
    redis.call('HSET', K, 'paused', '1', 'paused_at', NOW)
  end
  return remember(STATUS.ok)
elseif op == 'resume' then
  local st = redis.call('HMGET', K, 'paused', 'last', 'paused_at', 'owed')
  if st[1] == '1' then
    local last, pa = time_of(st[2]), time_of(st[3])
    pa = pa and math.min(pa, NOW) -- a time ahead (written by hand, a clock gone back): now
    if last and pa and last < pa then
      -- due before the pause, undecided: owed after the windows owed
      -- already (a malformed field, written by hand, is replaced)
      local owed = owed_of(st[4]) or {}
      local prev = owed[#owed]
      if #owed < OWED_MAX and not (prev and prev[2] > last) then
        owed[#owed + 1] = { last, pa }
        redis.call('HSET', K, 'owed', owed_text(owed))
      end
    end
    redis.call('HSET', K, 'paused', '0', 'last', NOW)
    redis.call('HDEL', K, 'paused_at')
  end
  return remember(STATUS.ok)
elseif op == 'delete' then
  -- validated before the first write (Redis rolls none back)
  local within = tonumber(ARGV[5])
  if not within then return redis.error_reply('ERR sluice: schedule delete: the running window is no number') end
  if ARGV[4] ~= '1' then
    local raw = redis.call('HGET', K, 'seen')
    local seen = time_of(raw)
    -- no seen: no scheduler of this release synced it, and one of an
    -- older release, which does not record it, may still run it; a seen
    -- ahead of now (a clock gone back) is recent; a seen that is no
    -- time (written by hand) tells nothing either, and is answered as
    -- it is, for the error to say so
    if not seen or NOW - seen < within then
      return remember({ STATUS.running, seen or raw or '' })
    end
  end
  redis.call('DEL', K, KP)
  redis.call('SREM', KEYS[3], ARGV[6])
  return remember(STATUS.ok)
end
return redis.error_reply('schedule.lua: unknown op ' .. tostring(op))
