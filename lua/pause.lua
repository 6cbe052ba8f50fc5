-- pause.lua: an operator pauses or resumes one partition of a queue.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9] '1' to pause, '0' to resume, 'r' to retire
-- Returns: 1 when the partition was paused (or retired) before the call,
-- else 0.
-- Transitions: none. Pausing sets the partition's paused flag
-- (keys.Partition.Paused) to '1', which makes claim.lua claim nothing
-- there; running jobs go on, and reaping, promotion and retention sweeps
-- go on. Resuming deletes the flag and wakes idle workers.
-- Retiring sets the flag to 'r' when a shrink of the queue takes the
-- partition away (store.Retire): it claims nothing, as if paused, and
-- enqueue.lua refuses every job (STATUS.retired). Pausing ('1') or
-- resuming brings it back: a refused shrink, a growth of the queue that
-- takes it again, or an operator resuming the queue after a shrink whose
-- outcome was not known (operators resume the partitions the registry
-- lists, never one a recorded shrink took away).
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local pk = PAUSED
local was = redis.call('EXISTS', pk)
if ARGV[9] == '1' or ARGV[9] == 'r' then
  redis.call('SET', pk, ARGV[9])
else
  redis.call('DEL', pk)
  if was == 1 then wake() end
end
return remember(was)
