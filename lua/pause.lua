-- pause.lua: an operator pauses or resumes one partition of a queue.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9] '1' to pause, '0' to resume
-- Returns: 1 when the partition was paused before the call, else 0.
-- Transitions: none. Pausing sets the partition's paused flag
-- (keys.Partition.Paused), which makes claim.lua claim nothing there;
-- running jobs go on, and reaping, promotion and retention sweeps go on.
-- Resuming deletes the flag and wakes idle workers.
-- A re-sent call answers what its first run did (lib_replay.lua).
local again = replayed()
if again then return again end
local pk = PAUSED
local was = redis.call('EXISTS', pk)
if ARGV[9] == '1' then
  redis.call('SET', pk, '1')
else
  redis.call('DEL', pk)
  if was == 1 then wake() end
end
return remember(was)
