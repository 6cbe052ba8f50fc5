-- pause.lua: an operator pauses or resumes one partition of a queue.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9] '1' to pause, '0' to resume, 'r' to retire, 'u' to take back,
--   'b' to bring back (take back only if retired)
-- Returns: 1 when the partition was paused (or retired) before the call,
-- else 0; 2 when a pause or resume left it retired; for 'b', 1 when it
-- was retired and is now paused, else 0 (left as it was).
-- Transitions: none. Pausing sets the partition's paused flag
-- (keys.Partition.Paused) to '1', which makes claim.lua claim nothing
-- there; running jobs go on, and reaping, promotion and retention sweeps
-- go on. Resuming deletes the flag and wakes idle workers.
-- Retiring sets the flag to 'r' when a shrink of the queue takes the
-- partition away (store.Retire): it claims nothing, as if paused, and
-- enqueue.lua refuses every job (STATUS.retired). A pause or a resume
-- leaves a retired partition as it is (answering 2): a shrink under way
-- may still record a layout without it, and a partition it brought back
-- would take jobs no worker claims. Only a holder of the queue's resize
-- lock takes one back ('u': paused, '1'): a refused shrink, a growth of
-- the queue that takes the partition again, or a resume that took the
-- lock from an unfinished shrink (admin.Client.ResumeQueue). Bringing
-- back ('b') is the undoing of a shrink's retire: it pauses the partition
-- only while the flag is still 'r', so that a resume or resize that came
-- between (and brought it back, resumed it, or retired it in a shrink of
-- its own that then took the lock) is not undone.
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local pk = PAUSED
local mode = ARGV[9]
local was = redis.call('EXISTS', pk)
if mode == 'b' then
  local retired = was == 1 and redis.call('TYPE', pk)['ok'] == 'string' and redis.call('GET', pk) == 'r'
  if retired then redis.call('SET', pk, '1') end
  return remember(retired and 1 or 0)
end
if (mode == '1' or mode == '0') and was == 1 and redis.call('TYPE', pk)['ok'] == 'string'
    and redis.call('GET', pk) == 'r' then
  return remember(2)
end
if mode == '1' or mode == 'r' or mode == 'u' then
  if mode == 'u' then mode = '1' end
  redis.call('SET', pk, mode)
else
  redis.call('DEL', pk)
  if was == 1 then wake() end
end
return remember(was)
