-- sweep.lua: delete finished jobs whose retention has passed.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]: the most jobs to delete in this call (per terminal state).
-- Returns: the number of jobs deleted.
-- Transitions: completed|archived|quarantined|cancelled -> (deleted, with
--   the job hash, its error list and its step checkpoints).
local limit = tonumber(ARGV[9])
local deleted = 0
for state, zk in pairs(TERMINAL) do
  local ids = redis.call('ZRANGEBYSCORE', zk, '-inf', NOW, 'LIMIT', 0, limit)
  for _, id in ipairs(ids) do
    zrem_later(zk, id)
    local s = state_of(redis.call('HGET', job_key(id), 's'))
    if s == state then
      delete_job(id)
      count(state, nil)
      deleted = deleted + 1
    end
  end
end
flush()
return deleted
