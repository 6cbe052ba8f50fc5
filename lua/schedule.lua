-- schedule.lua: the state of one periodic schedule, changed atomically so
-- that any number of schedulers agree on which ticks are enqueued. Its
-- keys are not in a queue partition: of the prelude it uses only what
-- needs none of a partition's keys (NOW, STATUS, the call records of
-- lib_replay.lua, which live under the schedules' prefix).
--
-- State (KEYS[1] fields): last = the latest tick decided (enqueued, or
-- dropped by the missed-run policy or a pause), in unix ms; ran = the
-- latest tick enqueued (set by the ack that confirms it); paused = '1'
-- while paused; paused_at = when it was paused, while ticks due before
-- then may still be undecided (they fell while the schedule ran: a pause
-- stops the ticks after it, not those a scheduler had yet to enqueue);
-- resumed = when it was resumed, while those ticks are still undecided
-- (the ticks in (paused_at, resumed] are then dropped, last jumping to
-- resumed, by the first sync that finds last at paused_at or later).
-- Definition fields are written by the schedulers with HSET and never
-- read here.
--
-- KEYS[1] the schedule's hash
-- KEYS[2] the schedule's pending ticks: tick ms -> claim time ms
-- ARGV[1] now ms, or '' to use the store's TIME
-- ARGV[2] the schedules' key prefix ("{tag}:"), under which call records
--         are kept (lib_replay.lua)
-- ARGV[3] op, one of:
--   'sync'   ARGV[4] ms after which a pending tick counts as abandoned.
--            Starts the state at last = now when there is none.
--            Returns {'ok', now, last, paused (0|1), upto, abandoned
--            ticks...}: upto is the end of the window a scheduler may
--            decide now, (last, upto]: now; while paused (or resumed
--            with ticks before the pause undecided) the pause's time, or
--            last when none is left before it;
--            each abandoned tick is handed to this caller (its claim time
--            is reset, to the time recorded in field hand_at, and the
--            sync's call ID in field hand) to enqueue again; the same
--            sync sent again (its reply lost) is handed the same ticks,
--            those still pending with that claim time; or {'missing', now}.
--   'claim'  ARGV[4] the last tick the caller saw, ARGV[5] the new last
--            tick, ARGV[6...] the ticks the caller will enqueue.
--            Returns 'ok' (last moved, the ticks are pending), 'moved'
--            (another scheduler moved last first: nothing written),
--            'paused' (the new last tick is past the pause's time:
--            nothing written) or 'missing'. The same claim sent
--            again (its reply lost) is answered what its first run
--            answered (its call record; past the record, its call ID in
--            field claim while last is still its tick), even when another
--            scheduler has claimed later ticks in between: a twin claim
--            of another scheduler, with another call ID, is 'moved' (its
--            tick jobs would run again once the first ones are done and
--            deleted).
--   'ack'    ARGV[4] the latest tick whose job was added ('' for none),
--            ARGV[5...] ticks now confirmed (their jobs added, or found
--            impossible to add). Returns 'ok'.
--   'pause'  Records when, unless paused already. Returns 'ok' or
--            'missing'.
--   'resume' Restarts a paused schedule from now: the ticks that fell
--            while it was paused are not run; those due before the pause
--            that no scheduler decided yet still are. Returns 'ok' or
--            'missing'.
-- ARGV[#ARGV] the call ID (lib_replay.lua)
-- Transitions: none (no job changes state here).
local K, KP = KEYS[1], KEYS[2]
local op = ARGV[3]
if op == 'ack' then
  -- safe to run twice (a re-send): the deletes and the greater 'ran' are
  -- the same the second time
  for i = 5, #ARGV - 1 do redis.call('HDEL', KP, ARGV[i]) end
  local tick = count_of(ARGV[4])
  if tick and redis.call('EXISTS', K) == 1 and tick > (tonumber(redis.call('HGET', K, 'ran')) or 0) then
    redis.call('HSET', K, 'ran', tick)
  end
  return STATUS.ok
end
if op == 'claim' then
  local again = replayed()
  if again then return again end
end
if redis.call('EXISTS', K) == 0 then
  if op == 'sync' then return { STATUS.missing, NOW } end
  if op == 'claim' then return remember(STATUS.missing) end
  return STATUS.missing
end

-- pause_of(v) is a pause's or resume's time as the fields hold it: a
-- whole number of ms, or nil (absent: an older release paused it, or
-- written by hand)
local function pause_of(v) return v and count_of(v) end

if op == 'sync' then
  local st = redis.call('HMGET', K, 'last', 'paused', 'hand', 'hand_at', 'paused_at', 'resumed')
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
  local paused, pa, resumed = 0, pause_of(st[5]), pause_of(st[6])
  if st[2] == '1' then paused = 1 end
  if paused == 0 and (not pa or not resumed or last >= pa) and (st[5] or st[6]) then
    -- every tick before the pause decided: the ones while it are dropped
    if resumed and resumed > last then
      last = resumed
      redis.call('HSET', K, 'last', last)
    end
    redis.call('HDEL', K, 'paused_at', 'resumed')
    pa = nil
  end
  local upto = NOW
  if paused == 1 or pa then upto = math.max(last, pa or last) end
  local out = { STATUS.ok, NOW, last, paused, upto }
  local stale, token = tonumber(ARGV[4]), CALL_ID
  local pend = redis.call('HGETALL', KP)
  if st[3] == token then
    -- this very sync, sent again: its first run handed these over
    for i = 1, #pend, 2 do
      if pend[i + 1] == st[4] then out[#out + 1] = tonumber(pend[i]) end
    end
    return out
  end
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
  local st = redis.call('HMGET', K, 'last', 'paused', 'paused_at', 'claim')
  if st[4] == CALL_ID and tonumber(st[1]) == tonumber(ARGV[5]) then
    -- this very claim, sent again after its record expired: it moved last
    return remember(STATUS.ok)
  end
  if tonumber(st[1]) ~= tonumber(ARGV[4]) then return remember(STATUS.moved) end
  -- paused: only ticks due before the pause may still be decided
  local pa = pause_of(st[3])
  if st[2] == '1' and not (pa and tonumber(ARGV[5]) <= pa) then return remember(STATUS.paused) end
  for i = 6, #ARGV - 1 do redis.call('HSET', KP, ARGV[i], NOW) end
  redis.call('HSET', K, 'last', ARGV[5], 'claim', CALL_ID)
  return remember(STATUS.ok)
elseif op == 'pause' then
  if redis.call('HGET', K, 'paused') ~= '1' then
    -- a pause while the ticks before an earlier one are still undecided
    -- keeps that one's time: the ticks between them are then dropped
    if not redis.call('HGET', K, 'resumed') then redis.call('HSET', K, 'paused_at', NOW) end
    redis.call('HSET', K, 'paused', '1')
  end
  return STATUS.ok
elseif op == 'resume' then
  local st = redis.call('HMGET', K, 'paused', 'last', 'paused_at')
  if st[1] == '1' then
    local pa = pause_of(st[3])
    if pa and (tonumber(st[2]) or 0) < pa then
      redis.call('HSET', K, 'paused', '0', 'resumed', NOW) -- the ticks before the pause still to decide
    else
      redis.call('HSET', K, 'paused', '0', 'last', NOW)
      redis.call('HDEL', K, 'paused_at', 'resumed')
    end
  end
  return STATUS.ok
end
return redis.error_reply('schedule.lua: unknown op ' .. tostring(op))
