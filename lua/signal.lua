-- signal.lua: send a signal to a job (flow.Client.Signal).
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  the job's ID in the partition
-- ARGV[10] the signal's name
-- ARGV[11] its payload (opaque bytes)
-- Returns: { status, state }
--   'ok', state          the signal is kept for the job (lib_waits.lua)
--                        until a step of it takes it; state is the job's
--                        state now ('available' when the signal woke it)
--   'missing', ''        no such job: nothing kept
--   'final', state       the job has finished: nothing kept
-- Transitions: scheduled -> available (a job suspended waiting for this
-- signal).
-- A re-sent call answers what its first run did (lib_replay.lua).
local again = replayed()
if again then return again end
local id, name, payload = ARGV[9], ARGV[10], ARGV[11]
local jk = job_key(id)
local h = redis.call('HMGET', jk, F.state, F.fence, F.awaits)
local s = state_of(h[1])
if not s then return remember({ STATUS.missing, STATUS.none }) end
if TERMINAL[s] then return remember({ STATUS.final, s }) end
local seq = redis.call('HINCRBY', jk, F.signal_seq, 1)
redis.call('HSET', steps_key(id), signal_field(seq, name), payload)
redis.call('HSET', jk, F.has_steps, 1)
if s == 'scheduled' and awaited(h[3], h[2] or '0', name) then
  redis.call('ZREM', K_SCHED, id)
  make_available(jk, id, 'scheduled', false)
  s = 'available'
end
flush()
return remember({ STATUS.ok, s })
