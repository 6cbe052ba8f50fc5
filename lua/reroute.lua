-- reroute.lua: an operator changes the worker a job prefers (sticky
-- routing), e.g. after a worker was renamed, or unpins it.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  job ID in the partition
-- ARGV[10] the new preferred worker, or '' to unpin the job
-- ARGV[11] fallback for the new worker ('w', 'a', 'f'), ARGV[12] its delay (ms)
-- Returns: the job's state, or '' when there is no such job. A completed
--   job never runs again: it is refused (its state returned, nothing
--   written). An archived, quarantined or cancelled one may be redriven,
--   and then goes to its new worker.
-- Transitions: none. An available job moves to its new list at once; the
-- entry left on the old worker's list is skipped by that worker's claims
-- (claim.lua checks that a pinned job still prefers the claiming worker).
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local id = ARGV[9]
local jk = job_key(id)
local s = state_of(redis.call('HGET', jk, F.state))
if not s then return STATUS.none end
if s == 'completed' then return remember(s) end
if ARGV[10] == '' then
  redis.call('HDEL', jk, F.sticky_worker, F.sticky_mode, F.sticky_delay)
else
  redis.call('HSET', jk, F.sticky_worker, ARGV[10], F.sticky_mode, ARGV[11], F.sticky_delay, ARGV[12])
end
if s == 'available' then
  local h = redis.call('HMGET', jk, F.priority, F.sticky_worker, F.sticky_mode, F.sticky_delay)
  push_ready(id, true, h[1], h[2], h[3], h[4])
  wake()
end
flush() -- the priority mask learns of the push (lib.lua)
return remember(s)
