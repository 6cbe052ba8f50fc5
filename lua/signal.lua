-- signal.lua: send a signal to a job (flow.Client.Signal).
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  the job's ID in the partition
-- ARGV[10] the signal's name
-- ARGV[11] its payload (opaque bytes)
-- ARGV[12] its idempotency key, '' for none: a signal with the key of one
--          sent to the job before is not kept again (its marker, '!i:' ..
--          key in the steps hash, lasts as long as the job)
-- ARGV[13], ARGV[14], ARGV[15] (optional: the call ID is the last ARGV)
--          the job must have been created at or after ARGV[13] and before
--          ARGV[14] (ms), ARGV[15] the time its generated ID carries or ''
--          (lib_admin.lua other_job); '' and '': any job of the ID.
--          Checked in this call, so that a job given the ID since the
--          sender learnt of it (deleted and enqueued again) is not sent
--          another job's signal
-- Returns: { status, state } (and created, for 'conflict')
--   'ok', state          the signal is kept for the job (lib_waits.lua)
--                        until a step of it takes it (or an operator
--                        discards it, unsignal.lua); state is the job's
--                        state now ('available' when the signal woke it)
--   'exists', state      a signal with this key was sent before: nothing
--                        kept (also once the job has finished, while its
--                        checkpoints are kept)
--   'missing', ''        no such job: nothing kept
--   'final', state       the job has finished: nothing kept
--   'past_deadline ' .. deadline, state  its deadline (ms) has passed by
--                        store time: nothing kept (a keyed retry of one
--                        kept before: 'exists')
--   'conflict', state, created  another job has the ID, created (ms) out
--                        of ARGV[13]..ARGV[14]: nothing kept
--   an error (WRONGTYPE) its job's data is corrupt (its key, its state,
--                        its signal counter or checkpoints, or given
--                        ARGV[13], its created-time field): nothing kept
-- Transitions: scheduled -> available (a job suspended waiting for this
-- signal).
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local id, name, payload, key = ARGV[9], ARGV[10], ARGV[11], ARGV[12]
local jk = job_key(id)
local h = redis.call('HMGET', jk, F.state, F.fence, F.awaits, F.signal_seq, F.deadline)
local s = state_of(h[1])
if not s then return remember({ STATUS.missing, STATUS.none }) end
-- a state no release writes (corrupt data): refused as malformed, nothing
-- kept, as for a key of another type (not 'ok' for a job no wait reads)
if not SCODE[s] then return redis.error_reply('WRONGTYPE sluice: job ' .. id .. ': its state field names no state') end
do
  local other, bad = other_job(jk, id, 13)
  if bad then return bad end
  if other then return remember({ STATUS.conflict, s, string.format('%d', other) }) end
end
local sk = steps_key(id)
if TERMINAL[s] then
  -- a keyed signal sent before it finished is a caller's retry of one
  -- delivered: answered as such, not as refused (a key holding no hash
  -- is no marker)
  if key ~= '' and redis.pcall('HEXISTS', sk, SIGNAL_KEY_PREFIX .. key) == 1 then
    return remember({ STATUS.exists, s })
  end
  return remember({ STATUS.final, s })
end
-- a job whose deadline has passed by store time is archived
-- (deadline_exceeded) by the claim that meets it, as claim.lua reads the
-- deadline, instead of running (its running attempt is stopped): no wait
-- of it takes a signal now. Kept and answered 'ok', the signal was lost;
-- refused as for a finished job, nothing kept (a keyed retry of one kept
-- before is answered as such)
do
  local dl = tonumber(h[5])
  if dl and dl <= NOW then
    if key ~= '' and redis.pcall('HEXISTS', sk, SIGNAL_KEY_PREFIX .. key) == 1 then
      return remember({ STATUS.exists, s })
    end
    return remember({ STATUS.past_deadline .. string.format('%d', dl), s })
  end
end
-- what the writes below need, checked before the first (Redis keeps the
-- writes of a script that raises): a signal counter HINCRBY takes (as
-- Redis reads an integer, int64: not '1.0', '01', '+1' or ' 1', which
-- tonumber takes) that the signal leaves within SEQ_MAX (signal_field
-- writes ten digits, and a longer number is a field no wait or discard
-- reads as a signal: kept and answered 'ok', it would be lost), and a
-- checkpoints key that holds a hash
local SEQ_MAX = 9999999999
if (h[4] and not (int64(h[4]) and (count_of(h[4]) or SEQ_MAX) < SEQ_MAX))
    or type(redis.pcall('HLEN', sk)) ~= 'number' then
  return redis.error_reply('WRONGTYPE sluice: job ' .. id .. ' has corrupt signal data (its signal counter or checkpoints)')
end
if key ~= '' then
  if redis.call('HSETNX', sk, SIGNAL_KEY_PREFIX .. key, 1) == 0 then
    return remember({ STATUS.exists, s })
  end
end
local seq = redis.call('HINCRBY', jk, F.signal_seq, 1)
redis.call('HSET', sk, signal_field(seq, name), payload)
redis.call('HSET', jk, F.has_steps, 1)
if s == 'scheduled' and awaited(h[3], h[2] or '0', name) then
  call_aside('ZREM', K_SCHED, nil, id)
  make_available(jk, id, 'scheduled', false)
  s = 'available'
end
flush()
return remember({ STATUS.ok, s })
