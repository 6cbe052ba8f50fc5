-- runnow.lua: an operator makes a scheduled or retryable job available now
-- (admin.Client.RunNow), instead of at its due time.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9] the job's ID in the partition
-- ARGV[10], ARGV[11], ARGV[12] the job must have been created at or after
--         ARGV[10] and before ARGV[11] (ms), ARGV[12] the time its
--         generated ID carries, or '' '' '': any job of the ID
--         (lib_admin.lua other_job)
-- ARGV[13], ARGV[14] the job must have its fence ARGV[13] and its count
--         of redrives ARGV[14] (each '': any), as a tool showed it, or
--         not given: any (lib_admin.lua moved_on)
-- Returns: { status, state }
--   'ok', previous state        the job is available: at the back of its
--                               priority's list, or of its preferred
--                               worker's (sticky routing)
--   'missing', ''               no such job
--   'suspended', 'scheduled'    refused: a workflow suspended on its waits
--                               (timers keep their wake times; a signal
--                               it waits for wakes it)
--   'held ' .. id, 'scheduled'  refused: held behind the quarantined job id
--                               (WithQuarantineHold)
--   state, state                refused: the job is available, running or
--                               finished
--   'changed ' .. field, state  refused: the job's fence or count of
--                               redrives is not ARGV[13] or ARGV[14]
--                               (field 'fence' or 'redrives')
--   'conflict', created         refused: the job was created (ms) out of
--                               ARGV[10]..ARGV[11], another job
--   an error (WRONGTYPE)        its job's key or state is corrupt, or (given
--                               ARGV[10]) its created-time field is no
--                               whole number of ms
-- Nothing is written for a refusal.
-- Transitions: scheduled|retryable -> available, as when its due time
--   comes (lib_lifecycle.lua promote): its priority, attempts, unique key,
--   sticky routing, deadline and history are kept, its due time is
--   cleared. A parent waiting for its children stops waiting and runs
--   (its Join checks them again, as after flow.JoinRecheck).
-- A re-sent call answers what its first run did (lib_replay.lua); a late
-- one finds the job available and refuses.
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local id = ARGV[9]
local jk = job_key(id)
local h = redis.call('HMGET', jk, F.state, F.fence, F.awaits, F.held_by)
local s = state_of(h[1])
if not s then return { STATUS.missing, STATUS.none } end
-- a state no release writes (corrupt data): malformed, not a state the
-- call refuses, as for a key of another type; nothing written
if not SCODE[s] then return redis.error_reply('WRONGTYPE sluice: job ' .. id .. ': its state field names no state') end
do -- another job than the tool showed, or one that ran or was redriven since
  local refusal, keep = not_as_shown(jk, id, s, 10, 13)
  if refusal then return keep and remember(refusal) or refusal end
end
if s ~= 'scheduled' and s ~= 'retryable' then return { s, s } end
if s == 'scheduled' then
  -- F.awaits names the fence of the attempt that suspended the job: the
  -- suspension is current when no attempt ran since (lib_waits.lua)
  if h[3] and string.find(h[3], '^%S') and words(h[3])() == (h[2] or '0') then return { STATUS.suspended, s } end
  if h[4] then return { STATUS.held .. h[4], s } end
  redis.call('HDEL', jk, F.wait_step, F.wait_count, F.wait_policy, F.wait_members)
end
call_aside('ZREM', K_SCHED, nil, id)
make_available(jk, id, s, false)
flush()
return remember({ STATUS.ok, s })
